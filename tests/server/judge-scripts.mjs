// Scripts that act as a scorer's judge model (SPEC §14), on Chat Completions (and the Responses
// API, which the server maps onto Chat): they answer with JSON that fits the schema the request
// carried (`response_format.json_schema.schema` / `text.format.schema`), so a judged step gets
// an object, and they take what they write from the prompt, so a test can see what reached it.
//
// `judge` fills the schema like `json` does, except:
//   - a number property named `score` is the number after "score=" in the last user message
//     (default 0.5), so a test's createPrompt picks the score;
//   - a string property named `reason` (or `explanation`) is "judged: <the last user message>";
//   - an array property named `claims` holds the words of the last user message.
// `judge-prose` answers with prose whatever the request, for a judged step that must fail.

import { lastUserText, sampleValue, streamPieces } from './scripts.mjs';
import { pieces } from './json-scripts.mjs';

/** The value `judge` answers with for `schema`, given the prompt's last user text. */
export function judgeValue(schema, prompt) {
  const value = sampleValue('root', schema ?? { type: 'object', properties: {} }, 0, 0);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const props = schema?.properties ?? {};
  const m = /score=(-?[0-9.]+)/.exec(prompt);
  for (const key of Object.keys(props)) {
    if (key === 'score') value.score = m ? Number(m[1]) : 0.5;
    if (key === 'reason' || key === 'explanation') value[key] = `judged: ${prompt}`;
    if (key === 'claims') value.claims = prompt.split(/\s+/).filter((w) => w !== '');
  }
  return value;
}

export function judgeScripts() {
  return [
    [
      'judge',
      {
        description:
          'judge: JSON fitting the request\'s schema; `score` = the number after "score=" in the last user message (default 0.5), `reason` = "judged: <that message>", `claims` = its words',
        run(ex) {
          const b = ex.body;
          const schema = b?.response_format?.json_schema?.schema ?? b?.text?.format?.schema;
          const text = schema ? JSON.stringify(judgeValue(schema, lastUserText(b) ?? '')) : 'No JSON schema was sent.';
          return streamPieces(ex, pieces(text));
        },
      },
    ],
    [
      'judge-prose',
      {
        description: 'judge-prose: "I cannot judge this." whatever the request (a judged step that gets no object)',
        run(ex) {
          return streamPieces(ex, ['I cannot ', 'judge this.']);
        },
      },
    ],
  ];
}
