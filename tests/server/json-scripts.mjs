// Scripts that answer in JSON, for structured output (SPEC §12): on Chat Completions and the
// Responses API (`json`), Anthropic Messages (`anthropic-json`) and Gemini (`gemini-json`).
//
// `<name>:<text>` streams <text> as given, in pieces of a few characters (so partial objects show).
// Without a text the script answers with a value made to fit the schema the request carried: the
// native one (Chat `response_format.json_schema.schema`, Responses `text.format.schema`, Gemini
// `generationConfig.responseJsonSchema`) or the one injected in words (the JSON after "matches this
// JSON Schema:" in a system or user message). A request that carried no schema gets the prose
// "No JSON schema was sent.", which no structured-output test accepts.

import { textOf } from './chat-stream.mjs';
import { anthropicReply, anthropicScript, geminiReply, geminiScript, sampleValue, streamPieces, trailingToolResults } from './scripts.mjs';

const MARK = 'matches this JSON Schema:\n';
const NO_SCHEMA = 'No JSON schema was sent.';

/** The schema injected in words into any of `texts`, or undefined. */
function injectedSchema(texts) {
  for (const text of texts) {
    const at = text.lastIndexOf(MARK);
    if (at < 0) continue;
    const line = text.slice(at + MARK.length).split('\n')[0];
    try {
      return JSON.parse(line);
    } catch {
      // Instructions stood in place of the schema: there is no schema to fit.
      return { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    }
  }
  return undefined;
}

/** The texts of Chat-shaped messages (system and user). */
const chatTexts = (body) => (Array.isArray(body?.messages) ? body.messages : []).map((m) => textOf(m?.content));

/** The reply text: the script's argument, else a value fitting `schema`, else prose. */
function replyText(arg, schema) {
  if (arg !== '') return arg;
  if (!schema) return NO_SCHEMA;
  return JSON.stringify(sampleValue('root', schema, 0, 0));
}

/** Pieces of about `n` characters. */
export function pieces(text, n = 6) {
  const out = [];
  for (let i = 0; i < text.length; i += n) out.push(text.slice(i, i + n));
  return out;
}

/** The `json` reply to a Chat-shaped request. */
function chatJson(ex) {
  const b = ex.body;
  const schema = b?.response_format?.json_schema?.schema ?? b?.text?.format?.schema ?? injectedSchema(chatTexts(b));
  return streamPieces(ex, pieces(replyText(ex.arg, schema)));
}

/**
 * The `count` deltas of `json-deltas:<count>` (the structured-output benchmark): `{"items":[`, then
 * each element `{"n":i,"w":"wi"}` in two deltas, and `]}` with the last one.
 */
export function jsonDeltaPieces(count) {
  if (count < 2) return ['{"items":[]}'];
  const out = ['{"items":['];
  let i = 0;
  let half = 0;
  while (out.length < count - 1) {
    out.push(half === 0 ? `${i ? ',' : ''}{"n":${i},` : `"w":"w${i}"}`);
    if (half === 1) i++;
    half ^= 1;
  }
  out.push(half === 1 ? `"w":"w${i}"}]}` : ']}');
  return out;
}

/** The schema the `json-deltas` reply fits. */
export const JSON_DELTAS_SCHEMA = {
  type: 'object',
  properties: {
    items: { type: 'array', items: { type: 'object', properties: { n: { type: 'integer' }, w: { type: 'string' } }, required: ['n', 'w'] } },
  },
  required: ['items'],
};

export function jsonScripts() {
  return [
    [
      'json-deltas',
      {
        description: 'json-deltas:<N> streams N deltas of {"items":[{"n":0,"w":"w0"},…]}, two per element (benchmarks)',
        run: (ex) => streamPieces(ex, jsonDeltaPieces(Math.max(1, Number.parseInt(ex.arg, 10) || 100))),
      },
    ],
    [
      'json',
      {
        description:
          'json[:<text>] streams <text> (default: a value fitting the request\'s response_format / text.format schema, or the one injected in words) in 6-character deltas',
        run: chatJson,
      },
    ],
    [
      'json-tool',
      {
        description:
          'json-tool[:<text>] "Let me check." and a call of the request\'s first tool with {"city":"Paris"}; once its result came back, answers like json[:<text>]',
        async run(ex) {
          if (trailingToolResults(ex.body).length) return chatJson(ex);
          const tool = (Array.isArray(ex.body?.tools) ? ex.body.tools : [])[0];
          const name = tool?.function?.name ?? tool?.name ?? 'weather';
          const chat = ex.chat();
          chat.role();
          chat.content('Let me check.');
          chat.toolCall({ index: 0, id: 'call_json1', type: 'function', function: { name, arguments: '{"city":"Paris"}' } });
          await chat.complete('tool_calls');
        },
      },
    ],
    [
      'anthropic-json',
      anthropicScript(
        'Anthropic Messages: anthropic-json[:<text>] streams <text> (default: a value fitting the schema injected in words into the request)',
        (ex) => {
          const texts = (Array.isArray(ex.body.messages) ? ex.body.messages : []).map((m) => textOf(m?.content));
          const system = typeof ex.body.system === 'string' ? [ex.body.system] : [];
          const text = replyText(ex.arg, injectedSchema([...system, ...texts]));
          return anthropicReply(ex, [{ type: 'text', text }], 'end_turn');
        },
      ),
    ],
    [
      'gemini-json',
      geminiScript(
        'Gemini: gemini-json[:<text>] streams <text> (default: a value fitting generationConfig.responseJsonSchema, or the schema injected in words)',
        (ex, model) => {
          const b = ex.body;
          const texts = [b?.systemInstruction, ...(Array.isArray(b?.contents) ? b.contents : [])].flatMap((c) =>
            (Array.isArray(c?.parts) ? c.parts : []).map((p) => p?.text ?? ''),
          );
          const schema = b?.generationConfig?.responseJsonSchema ?? injectedSchema(texts);
          return geminiReply(ex, model, pieces(replyText(ex.arg, schema)).map((text) => [{ text }]));
        },
      ),
    ],
  ];
}
