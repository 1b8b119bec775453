// The script catalogue of the local model server. A script is `{ description, run(exchange) }`;
// `run` gets an Exchange (chat-stream.mjs) with `body`, `headers`, `arg` (the text after the first
// ':' of the script name), `record`, and helpers: `chat()` (the responder), `json()`, `error()`,
// `write()`, `end()`, `sleep()`, `hold()`, `destroy()`.
//
// The OpenAI scripts are written once, against Chat Completions: `body` is the request in Chat form
// and `chat()` takes Chat-shaped calls, also when the request came to …/responses (then `body` is
// translated and `chat()` writes the Responses API's events; see responses-stream.mjs). The
// Anthropic and Gemini scripts read and write their own APIs' formats.

import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { FLUSH_AT, randomId, textOf, words } from './chat-stream.mjs';
import { jsonScripts } from './json-scripts.mjs';
import { subagentScripts } from './subagent-scripts.mjs';
import { judgeScripts } from './judge-scripts.mjs';
import { guardScripts } from './guard-scripts.mjs';
import { completionScripts } from './completion-scripts.mjs';

// ---------------------------------------------------------------------------------------------
// Reading the request

function messagesOf(body) {
  return Array.isArray(body?.messages) ? body.messages : [];
}

/** Text of the last user message ('' when there is none). */
export function lastUserText(body) {
  const messages = messagesOf(body);
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user') return textOf(messages[i].content);
  }
  return '';
}

/** Contents of the `role: "tool"` messages that end the conversation (empty when it doesn't). */
export function trailingToolResults(body) {
  const messages = messagesOf(body);
  const results = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]?.role === 'tool'; i--) {
    results.unshift(textOf(messages[i].content));
  }
  return results;
}

/** `{ name, parameters }` of each tool in the request (Chat `{type, function}` or flat form). */
function requestTools(body) {
  const tools = Array.isArray(body?.tools) ? body.tools : [];
  return tools
    .map((tool) => ({
      name: tool?.function?.name ?? tool?.name,
      parameters: tool?.function?.parameters ?? tool?.parameters ?? tool?.input_schema,
    }))
    .filter((tool) => typeof tool.name === 'string' && tool.name !== '');
}

// ---------------------------------------------------------------------------------------------
// Tool call arguments

const CITIES = ['Paris', 'London', 'Tokyo', 'Berlin'];

/** A value that satisfies the common parts of a JSON Schema (so agents' argument checks pass). */
export function sampleValue(key, schema, variant, depth) {
  if (!schema || typeof schema !== 'object' || depth > 4) return 'example';
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[variant % schema.enum.length];
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options) && options.length) {
    const option = options.find((o) => o?.type !== 'null') ?? options[0];
    return sampleValue(key, option, variant, depth + 1);
  }
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? type[0];
  if (!type && schema.properties) type = 'object';
  switch (type) {
    case 'string':
      if (/city|location|place|town/i.test(key)) return CITIES[variant % CITIES.length];
      if (schema.format === 'email') return 'someone@example.com';
      if (schema.format === 'date') return '2025-01-01';
      if (schema.format === 'date-time') return '2025-01-01T00:00:00Z';
      return variant ? `example ${variant + 1}` : 'example';
    case 'integer':
    case 'number': {
      let n = type === 'integer' ? 3 + variant : 21.5 + variant;
      if (typeof schema.minimum === 'number') n = Math.max(n, schema.minimum);
      if (typeof schema.maximum === 'number') n = Math.min(n, schema.maximum);
      return n;
    }
    case 'boolean':
      return true;
    case 'array':
      return schema.items ? [sampleValue(key, schema.items, variant, depth + 1)] : [];
    case 'object':
      return sampleObject(schema, variant, depth + 1);
    case 'null':
      return null;
    default:
      return 'example';
  }
}

function sampleObject(schema, variant, depth = 0) {
  const properties = schema?.properties && typeof schema.properties === 'object' ? schema.properties : {};
  const required = Array.isArray(schema?.required) && schema.required.length ? schema.required : Object.keys(properties);
  const out = {};
  for (const key of required) out[key] = sampleValue(key, properties[key], variant, depth);
  return out;
}

/**
 * The calls a tool script makes: named after the request's first tool (arguments made to fit its
 * schema), else `weather` with `{ city }`.
 */
function plannedCalls(body, count) {
  const [tool] = requestTools(body);
  const calls = [];
  for (let i = 0; i < count; i++) {
    const args = tool ? sampleObject(tool.parameters, i) : { city: CITIES[i % CITIES.length] };
    calls.push({ id: 'call_' + randomId(24), name: tool ? tool.name : 'weather', arguments: JSON.stringify(args) });
  }
  return calls;
}

const ODD_SIZES = [1, 4, 2, 7, 3, 5];

/** Splits `text` at odd places (1, 4, 2, 7, 3, 5, … characters). */
function splitOddly(text) {
  const pieces = [];
  for (let at = 0, i = 0; at < text.length; i++) {
    const size = ODD_SIZES[i % ODD_SIZES.length];
    pieces.push(text.slice(at, at + size));
    at += size;
  }
  return pieces;
}

/** The streamed pieces of one call: the opening piece (id, name, empty arguments), then fragments. */
function callPieces(call, index, fragments = splitOddly(call.arguments)) {
  return [
    { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
    ...fragments.map((fragment) => ({ index, function: { arguments: fragment } })),
  ];
}

/** Replies to a tool result with text quoting it, so tool loops end. Returns false when not applicable. */
async function answerToolResults(ex) {
  const results = trailingToolResults(ex.body);
  if (!results.length) return false;
  await streamText(ex, `The tool said: ${results.join('; ')}`);
  return true;
}

function toolScript(description, plan) {
  return {
    description,
    async run(ex) {
      if (await answerToolResults(ex)) return;
      const chat = ex.chat();
      chat.role();
      for (const piece of plan(ex.body, chat)) chat.toolCall(piece);
      await chat.complete('tool_calls');
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Text

/** Streams `text` in word-sized deltas (optionally paced), then finishes. */
async function streamText(ex, text, { finish = 'stop', delayMs = 0, reasoning = '' } = {}) {
  const chat = ex.chat();
  chat.role();
  for (const piece of words(reasoning)) {
    chat.reasoning(piece);
    if (delayMs) await chat.pause(delayMs);
  }
  for (const piece of words(text)) {
    chat.content(piece);
    if (delayMs) await chat.pause(delayMs);
    else await chat.maybeFlush();
  }
  await chat.complete(finish);
}

/** Streams `pieces` as content deltas, as they are (JSON replies: no word splitting). */
export async function streamPieces(ex, pieces, { finish = 'stop' } = {}) {
  const chat = ex.chat();
  chat.role();
  for (const piece of pieces) {
    chat.content(piece);
    await chat.maybeFlush();
  }
  await chat.complete(finish);
}

/**
 * Streams n short deltas ("w0 ", "w1 ", …) as fast as it can (the benchmarks' hot path): one socket
 * write per 64 KiB of events, and a turn of the event loop after each so that a client in the same
 * process reads while we write.
 */
async function streamNumbered(ex, n) {
  const chat = ex.chat();
  chat.role();
  await chat.flush();
  for (let i = 0; i < n; i++) {
    chat.content('w' + i + ' ');
    if (chat.buf.length >= FLUSH_AT) {
      await chat.flush();
      await new Promise(setImmediate);
    }
  }
  await chat.complete('stop');
}

function echoText(body) {
  return `You said: ${lastUserText(body)}`;
}

function demoReply(body) {
  const toolResults = trailingToolResults(body);
  if (toolResults.length) {
    return {
      reasoning: 'A tool just returned its result. I will pass it on.',
      text: `The tool returned: ${toolResults.join('; ')}. I'm the offline demo model, so I simply report what the tool said.`,
    };
  }
  const said = lastUserText(body).replace(/\s+/g, ' ').trim();
  if (said === '') {
    return {
      reasoning: 'There is no message yet. I will invite one.',
      text: "Hi! I'm the offline demo model. Send me a message and I'll stream a reply back, word by word.",
    };
  }
  if (/^(hi|hello|hey|hiya|howdy|greetings|good (morning|afternoon|evening))\b/i.test(said)) {
    return {
      reasoning: 'The user is greeting me. I will say hello and explain what I am.',
      text:
        "Hello! I'm the offline demo model for wasm-agent. I run on your own machine, so no API key is " +
        'needed. Ask me something and watch the reply stream in, one word at a time.',
    };
  }
  if (/^(thanks|thank you|thx|cheers)\b/i.test(said)) {
    return {
      reasoning: 'The user is thanking me. A short reply will do.',
      text: "You're welcome! Happy to help, even as a humble offline demo model.",
    };
  }
  const question = /\?$/.test(said);
  const shown = said.length > 160 ? said.slice(0, 157).trimEnd() + '…' : said;
  const quoted = /[.!?…]$/.test(shown) ? `“${shown}”` : `“${shown}”.`;
  return {
    reasoning: `The user ${question ? 'asked a question' : 'sent a message'}. I am the offline demo model, so I will restate it and say what I am.`,
    text:
      `${question ? 'You asked' : 'You said'}: ${quoted} I'm the offline demo model for wasm-agent, so I can't ` +
      'give you a real answer, but this reply is streamed word by word from a local server that speaks the ' +
      'OpenAI Chat Completions protocol, just as a hosted model would. Give the agent a real model (for ' +
      'example openai/gpt-4.1-mini with OPENAI_API_KEY set) and the same code will answer properly.',
  };
}

// ---------------------------------------------------------------------------------------------
// Errors

const ERROR_BODIES = {
  400: () => ({
    message: "Invalid value for 'messages': expected a non-empty array of message objects.",
    type: 'invalid_request_error',
    code: 'invalid_value',
  }),
  401: () => ({ message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' }),
  403: () => ({ message: 'You are not allowed to use this model.', type: 'invalid_request_error', code: 'model_not_allowed' }),
  404: () => ({ message: 'The model does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' }),
  429: (secs) => ({
    message: `Rate limit reached for requests. Please try again in ${secs}s.`,
    type: 'requests',
    code: 'rate_limit_exceeded',
  }),
  500: () => ({ message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null }),
  503: () => ({ message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null }),
};

/** Sends the error response of `status`; 429 (and any status given `retryAfter`) carries Retry-After. */
function sendError(ex, status, retryAfter) {
  const secs = retryAfter ?? (status === 429 ? 1 : undefined);
  const make =
    ERROR_BODIES[status] ??
    (() => ({ message: `Simulated error ${status}`, type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null }));
  ex.error(status, make(secs ?? 1), secs === undefined ? {} : { 'retry-after': String(secs) });
}

function errorScript(status) {
  return {
    description:
      status === 429
        ? 'HTTP 429 with Retry-After (seconds from the suffix, default 1: error-429:2)'
        : `HTTP ${status} with an OpenAI-style JSON error body`,
    async run(ex) {
      const secs = ex.arg === '' ? undefined : Math.max(0, Number.parseInt(ex.arg, 10) || 0);
      sendError(ex, status, secs);
    },
  };
}

/** `error-<status>` for any status 400–599 (the named ones are listed in the catalogue). */
export function dynamicScript(name) {
  const match = /^error-([45]\d\d)$/.exec(name);
  return match ? errorScript(Number(match[1])) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Replay of recorded provider streams

const fixtureCache = new Map();

function fixturesDir(ex) {
  return ex.serverOptions.fixturesDir;
}

/** Lines of a recorded stream, or undefined when there is no such fixture. */
async function fixtureLines(dir, name) {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) return undefined;
  const file = path.join(dir, `${name}.chunks.txt`);
  if (!fixtureCache.has(file)) {
    let text;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      return undefined;
    }
    fixtureCache.set(file, text.split(/\r?\n/).filter((line) => line.trim() !== ''));
  }
  return fixtureCache.get(file);
}

/** Names of the recorded streams available for `replay:` (for GET /v1/models). */
export async function fixtureNames(dir) {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith('.chunks.txt')).map((f) => f.slice(0, -'.chunks.txt'.length)).sort();
  } catch {
    return [];
  }
}

function isChatChunkLine(line) {
  try {
    return JSON.parse(line)?.object === 'chat.completion.chunk';
  } catch {
    return false;
  }
}

const replayScript = {
  description:
    'replay:<fixture>[:<ms>] streams a recorded provider stream line by line (Chat fixtures end with [DONE]; ' +
    'anthropic-- fixtures get `event: <type>` lines)',
  async run(ex) {
    const [name, pace] = ex.arg.split(':');
    const lines = await fixtureLines(fixturesDir(ex), name);
    if (!lines) {
      ex.error(404, { message: `No recorded stream named '${name}'`, type: 'invalid_request_error', code: 'fixture_not_found' });
      return;
    }
    const delayMs = Math.max(0, Number.parseInt(pace ?? '0', 10) || 0);
    const anthropic = name.startsWith('anthropic--');
    const chat = !anthropic && lines.length > 0 && isChatChunkLine(lines[0]);
    let buf = '';
    for (const line of lines) {
      if (anthropic) {
        let type = 'message';
        try {
          type = JSON.parse(line)?.type ?? type;
        } catch {}
        buf += `event: ${type}\ndata: ${line}\n\n`;
      } else {
        buf += `data: ${line}\n\n`;
      }
      if (delayMs) {
        await ex.write(buf);
        buf = '';
        await ex.sleep(delayMs);
      }
    }
    if (chat) buf += 'data: [DONE]\n\n';
    ex.end(buf);
  },
};

// ---------------------------------------------------------------------------------------------
// The catalogue

const FLAKY_COUNTS = Symbol('flaky counts');
const THINKING_SIGNATURES = Symbol('thinking signatures');

/**
 * Per-server state scripts keep between requests (flaky counters; the thinking signatures the
 * Anthropic scripts handed out, which are the only ones they take back); cleared by reset().
 */
export function scriptState() {
  return { [FLAKY_COUNTS]: new Map(), [THINKING_SIGNATURES]: new Set() };
}

export function resetScriptState(state) {
  state[FLAKY_COUNTS].clear();
  state[THINKING_SIGNATURES].clear();
  state.responseItems?.clear();
}

export function builtinScripts() {
  const scripts = new Map();
  const add = (name, script) => scripts.set(name, script);

  add('echo', {
    description: 'replies "You said: <last user message>" in word-sized deltas (also the fallback for unknown names)',
    run: (ex) => streamText(ex, echoText(ex.body)),
  });
  add('text', {
    description: 'text:<words> streams the words after the colon: "Hello", " there", " world"',
    run: (ex) => streamText(ex, ex.arg),
  });
  add('deltas', {
    description: 'deltas:<N> streams N short deltas ("w0 ", "w1 ", …) as fast as possible (benchmarks)',
    async run(ex) {
      await streamNumbered(ex, Math.max(0, Number.parseInt(ex.arg, 10) || 10));
    },
  });
  add('reasoning', {
    description: 'reasoning[:<answer>] streams reasoning_content deltas, then text deltas',
    run: (ex) =>
      streamText(ex, ex.arg || 'Here is a short answer.', {
        reasoning: 'Let me think about this. The user wants a short answer, so I will keep it brief.',
      }),
  });
  add('demo', {
    description: 'demo[:<ms>] the friendly offline model of `./x demo`: a little reasoning, then a natural reply, ~15 ms per delta',
    async run(ex) {
      const reply = demoReply(ex.body);
      const delayMs = ex.arg === '' ? (ex.serverOptions.demoDelayMs ?? 15) : Math.max(0, Number.parseInt(ex.arg, 10) || 0);
      await streamText(ex, reply.text, { reasoning: reply.reasoning, delayMs });
    },
  });

  const oneCall = (body) => callPieces(plannedCalls(body, 1)[0], 0);
  add('tool-call', toolScript('one tool call, arguments split across chunks at odd places', oneCall));
  add('reasoning-tool-call', toolScript('reasoning, then one tool call like tool-call; then "The tool said: …"', (body, chat) => {
    for (const piece of words('The user wants facts a tool has. I will call it.')) chat.reasoning(piece);
    return oneCall(body);
  }));
  add('tool-calls-parallel', toolScript('two tool calls in one response, one after the other (index 0, then 1)', (body) =>
    plannedCalls(body, 2).flatMap((call, index) => callPieces(call, index)),
  ));
  add('tool-calls-interleaved', toolScript('two tool calls whose argument fragments alternate between index 0 and 1', (body) => {
    const [first, second] = plannedCalls(body, 2).map((call, index) => callPieces(call, index));
    const pieces = [first.shift(), first.shift(), second.shift()];
    while (first.length || second.length) {
      if (first.length) pieces.push(first.shift());
      if (second.length) pieces.push(second.shift());
    }
    return pieces.filter(Boolean);
  }));
  add('tool-call-one-chunk', toolScript('one tool call with id, name and all arguments in a single chunk', (body) => {
    const [call] = plannedCalls(body, 1);
    return [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }];
  }));
  add('tool-call-empty-array', toolScript('a chunk with `tool_calls: []`, then one normal tool call', (body, chat) => {
    chat.delta({ tool_calls: [] }, false);
    const [call] = plannedCalls(body, 1);
    return callPieces(call, 0);
  }));
  add('tool-call-bad-json', toolScript('one tool call whose arguments are not valid JSON', (body) => {
    const [call] = plannedCalls(body, 1);
    // A bare word where a value should be: `{"city":"Paris", "unit": celsius}`.
    return callPieces({ ...call, arguments: call.arguments.replace(/}$/, ', "unit": celsius}') }, 0);
  }));

  add('length', {
    description: 'a few deltas, then finish_reason "length"',
    run: (ex) => streamText(ex, 'This answer is cut short because it ran into the', { finish: 'length' }),
  });
  add('content-filter', {
    description: 'a few deltas, then finish_reason "content_filter"',
    run: (ex) => streamText(ex, "Sorry, I can't", { finish: 'content_filter' }),
  });

  for (const status of [400, 401, 429, 500, 503]) add(`error-${status}`, errorScript(status));

  add('flaky', {
    description:
      'flaky:<kind>:<n> fails the first n requests with the same x-test-id (or model) with <kind> (429, 500, 503, reset), then echoes',
    async run(ex) {
      const [kind = '500', count = '1'] = ex.arg.split(':');
      const failures = Math.max(0, Number.parseInt(count, 10) || 0);
      const counts = ex.serverOptions.scriptState[FLAKY_COUNTS];
      const key = `${ex.headers['x-test-id'] ?? ''}\n${ex.selector}`;
      const seen = counts.get(key) ?? 0;
      counts.set(key, seen + 1);
      if (seen >= failures) return streamText(ex, echoText(ex.body));
      if (kind === 'reset') return ex.destroy({ reset: true });
      const status = /^[45]\d\d$/.test(kind) ? Number(kind) : 500;
      sendError(ex, status, status === 429 ? 0 : undefined);
    },
  });

  add('malformed-json', {
    description: 'two good deltas, then a `data: {not json` line, then more deltas and the normal end',
    async run(ex) {
      const chat = ex.chat();
      chat.content('Good');
      chat.content(' start');
      chat.raw('data: {not json\n\n');
      chat.content(' and');
      chat.content(' more');
      await chat.complete('stop');
    },
  });
  add('cut', {
    description: 'a few deltas, then the connection is destroyed (no finish chunk, no [DONE])',
    async run(ex) {
      const chat = ex.chat();
      for (const piece of words('This reply will be cut')) chat.content(piece);
      await chat.flush({ flushed: true });
      ex.destroy();
    },
  });
  add('stall', {
    description: 'a few deltas, then nothing until the client disconnects or the server closes',
    async run(ex) {
      const chat = ex.chat();
      for (const piece of words('Thinking about it')) chat.content(piece);
      await chat.flush({ flushed: true });
      await ex.hold();
    },
  });
  add('stall-headers', {
    description: 'never sends headers; holds the connection until the client gives up',
    run: (ex) => ex.hold(),
  });
  add('slow', {
    description: 'slow:<ms> like echo, one delta every <ms> ms (default 100)',
    run: (ex) => streamText(ex, echoText(ex.body), { delayMs: ex.arg === '' ? 100 : Math.max(0, Number.parseInt(ex.arg, 10) || 0) }),
  });
  add('in-stream-error', {
    description:
      'two deltas, then an error mid-stream, HTTP status 200 (Chat: `data: {"error": …}` and [DONE]; ' +
      'Responses: an `error` event and response.failed)',
    async run(ex) {
      const error = { message: 'The server had an error while processing your request', type: 'server_error' };
      const chat = ex.chat();
      if (!chat.streaming) return ex.error(500, error);
      chat.content('Partial');
      chat.content(' answer');
      chat.fail(error);
    },
  });
  add('replay', replayScript);
  for (const [name, script] of extraToolScripts()) add(name, script);
  for (const [name, script] of providerWireScripts()) add(name, script);
  for (const [name, script] of jsonScripts()) add(name, script);
  for (const [name, script] of judgeScripts()) add(name, script);
  for (const [name, script] of guardScripts()) add(name, script);
  for (const [name, script] of backgroundScripts()) add(name, script);
  for (const [name, script] of subagentScripts()) add(name, script);
  for (const [name, script] of completionScripts()) add(name, script);
  return scripts;
}

// ---------------------------------------------------------------------------------------------
// Tool loops: scripts that call a named tool with given arguments, or keep calling tools, for
// tests of maxSteps, stopWhen, hasToolCall and argument validation.

/** Assistant turns with tool calls in the conversation so far (= tool steps already taken). */
function toolTurns(body) {
  return messagesOf(body).filter((m) => m?.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0).length;
}

/** `<toolName>[:<json args>]` → a call (args `{}` when absent; a non-JSON rest is sent as is). */
function namedCall(arg) {
  const colon = arg.indexOf(':');
  const name = (colon === -1 ? arg : arg.slice(0, colon)).trim() || 'weather';
  const rest = colon === -1 ? '' : arg.slice(colon + 1);
  let args = '{}';
  if (rest !== '') {
    try {
      args = JSON.stringify(JSON.parse(rest));
    } catch {
      args = rest;
    }
  }
  return { id: 'call_' + randomId(24), name, arguments: args };
}

/** A call of the request's tool `name`, its arguments made to fit that tool's schema. */
function sampledCall(body, name, variant = 0) {
  const tool = requestTools(body).find((t) => t.name === name);
  const args = tool ? sampleObject(tool.parameters, variant) : {};
  return { id: 'call_' + randomId(24), name, arguments: JSON.stringify(args) };
}

async function streamCalls(ex, calls) {
  const chat = ex.chat();
  chat.role();
  calls.forEach((call, index) => {
    for (const piece of callPieces(call, index)) chat.toolCall(piece);
  });
  await chat.complete('tool_calls');
}

function extraToolScripts() {
  return [
    [
      'call',
      {
        description:
          'call:<tool>[:<json args>] one call of <tool> with exactly those arguments (split at odd places); ' +
          'answers "The tool said: …" once the conversation ends with tool results',
        async run(ex) {
          if (await answerToolResults(ex)) return;
          await streamCalls(ex, [namedCall(ex.arg)]);
        },
      },
    ],
    [
      'call-always',
      {
        description: 'call-always:<tool>[:<json args>] like call, but calls again on every request (never answers with text)',
        run: (ex) => streamCalls(ex, [namedCall(ex.arg)]),
      },
    ],
    [
      'parallel',
      {
        description:
          'parallel:<n> n calls (default 3) of the request\'s first tool in one response (args fit its schema, ' +
          'one variant each); answers "The tool said: …" once the conversation ends with tool results',
        async run(ex) {
          if (await answerToolResults(ex)) return;
          const n = Math.max(1, Math.min(50, Number.parseInt(ex.arg, 10) || 3));
          await streamCalls(ex, plannedCalls(ex.body, n));
        },
      },
    ],
    [
      'tools-then-text',
      {
        description:
          'tools-then-text:<n> calls the request\'s first tool (one call per response) until the conversation ' +
          'holds n tool-call turns (default 2), then answers "Done after <n> tool steps."',
        async run(ex) {
          const n = Math.max(0, Number.parseInt(ex.arg, 10) || (ex.arg.trim() === '0' ? 0 : 2));
          const turns = toolTurns(ex.body);
          if (turns >= n) return streamText(ex, `Done after ${turns} tool steps.`);
          const [tool] = requestTools(ex.body);
          await streamCalls(ex, [sampledCall(ex.body, tool ? tool.name : 'weather', turns)]);
        },
      },
    ],
    [
      'sequence',
      {
        description:
          'sequence:<a>,<b>,… step i calls tool i of the list (args fit that tool\'s schema); ' +
          'after the list answers "Done after <n> tool steps."',
        async run(ex) {
          const names = ex.arg.split(',').map((s) => s.trim()).filter(Boolean);
          const turns = toolTurns(ex.body);
          if (turns >= names.length) return streamText(ex, `Done after ${turns} tool steps.`);
          await streamCalls(ex, [sampledCall(ex.body, names[turns], turns)]);
        },
      },
    ],
    [
      'tool-then-deltas',
      {
        description:
          'tool-then-deltas:<N> one call of the request\'s first tool (args fit its schema, finish_reason tool_calls); ' +
          'once the conversation ends with tool results, N short deltas like deltas:<N> (benchmarks)',
        async run(ex) {
          if (!trailingToolResults(ex.body).length) return streamCalls(ex, plannedCalls(ex.body, 1));
          await streamNumbered(ex, Math.max(0, Number.parseInt(ex.arg, 10) || 10));
        },
      },
    ],
  ];
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages and Google Gemini on their own wire formats, for tests of the package's
// anthropic/… and google/… providers (chosen with the x-script header). Each script first checks
// the request the way the real API does (its headers, required fields, turn structure, tool-call
// pairing, Gemini's schema subset) and answers a broken one with that API's own 400 error body,
// so a request the real API would refuse fails the test that sent it.

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Prompt "tokens" of an Anthropic or Gemini request: characters of its system prompt, turns and
 * tools / 4 (at least 1). Tests recompute it from the recorded body to check usage exactly.
 */
export function wirePromptTokens(body) {
  const text = JSON.stringify([
    body?.system ?? body?.systemInstruction ?? null,
    body?.messages ?? body?.contents ?? null,
    body?.tools ?? null,
  ]);
  return Math.max(1, Math.ceil(text.length / 4));
}

/** Text pieces of about `n` words each: "a b c d e" (n = 2) → ["a b", " c d", " e"]. */
function wordGroups(text, n) {
  const pieces = words(text);
  const out = [];
  for (let i = 0; i < pieces.length; i += n) out.push(pieces.slice(i, i + n).join(''));
  return out;
}

// --- Anthropic: reading the request

/** A message's content as blocks (a string is one text block, as the API reads it). */
function anthropicBlocks(content) {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content : [];
}

/** Text of the text blocks of the last user message ('' when there is none). */
export function anthropicLastUserText(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role !== 'user') continue;
    return anthropicBlocks(messages[i].content)
      .filter((b) => b?.type === 'text')
      .map((b) => b.text)
      .join('\n');
  }
  return '';
}

/** The `tool_result` blocks of the last message when it is a user turn (else []). */
export function anthropicToolResults(body) {
  const last = Array.isArray(body?.messages) ? body.messages.at(-1) : undefined;
  if (last?.role !== 'user') return [];
  return anthropicBlocks(last.content).filter((b) => b?.type === 'tool_result');
}

/** The text of a `tool_result` block: its string content, or its text blocks joined. */
function toolResultText(block) {
  if (typeof block.content === 'string') return block.content;
  if (Array.isArray(block.content)) return block.content.filter((b) => b?.type === 'text').map((b) => b.text).join('\n');
  return '';
}

const ANTHROPIC_ERRORS = {
  400: ['invalid_request_error', 'There was an issue with the format or content of your request.'],
  401: ['authentication_error', 'invalid x-api-key'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'The requested resource could not be found.'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit.'],
  500: ['api_error', 'Internal server error'],
  529: ['overloaded_error', 'Overloaded'],
};

/** Anthropic's error response: `{ type: 'error', error: { type, message }, request_id }`. */
function anthropicHttpError(ex, status, type, message, headers = {}) {
  ex.json(status, { type: 'error', error: { type, message }, request_id: ex.requestId }, { 'request-id': ex.requestId, ...headers });
}

/** What the real API would refuse in this request: [status, error type, message], or null. */
function anthropicProblem(ex) {
  const { body, headers } = ex;
  const invalid = (message) => [400, 'invalid_request_error', message];
  if (!headers['x-api-key'] && !headers.authorization) return [401, 'authentication_error', 'x-api-key header is required'];
  if (!headers['anthropic-version']) return invalid('anthropic-version: header is required');
  if (!isObject(body)) return invalid('There was an issue with your request body: it is not a JSON object');
  if (typeof body.model !== 'string' || body.model === '') return invalid('model: Field required');
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return invalid('max_tokens: Field required (an integer >= 1)');
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system)) {
    return invalid('system: Input should be a valid string or a list of text blocks');
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) return invalid('messages: at least one message is required');
  const tools = body.tools ?? [];
  if (!Array.isArray(tools)) return invalid('tools: Input should be a valid list');
  for (const [i, tool] of tools.entries()) {
    if (typeof tool?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) {
      return invalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
    }
    if (!isObject(tool.input_schema) || tool.input_schema.type !== 'object') {
      return invalid(`tools.${i}.custom.input_schema.type: Input should be 'object'`);
    }
  }
  let pending = []; // ids of the tool_use blocks of the previous assistant message
  for (const [i, message] of body.messages.entries()) {
    if (message?.role !== 'user' && message?.role !== 'assistant') return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    const blocks = anthropicBlocks(message.content);
    const finalAssistant = i === body.messages.length - 1 && message.role === 'assistant';
    if (blocks.length === 0 && !finalAssistant) {
      return invalid(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    }
    const answered = new Set();
    let seenOther = false;
    for (const [j, block] of blocks.entries()) {
      const at = `messages.${i}.content.${j}`;
      if (!isObject(block) || typeof block.type !== 'string') return invalid(`${at}: Input should be a valid content block`);
      if (block.type === 'text') {
        if (typeof block.text !== 'string' || block.text === '') return invalid('messages: text content blocks must be non-empty');
      } else if (block.type === 'tool_use') {
        if (message.role !== 'assistant') return invalid(`${at}: tool_use blocks are only allowed in assistant messages`);
        if (typeof block.id !== 'string' || block.id === '') return invalid(`${at}.tool_use.id: Field required`);
        if (typeof block.name !== 'string' || block.name === '') return invalid(`${at}.tool_use.name: Field required`);
        if (!isObject(block.input)) return invalid(`${at}.tool_use.input: Input should be a valid dictionary`);
      } else if (block.type === 'tool_result') {
        if (message.role !== 'user') return invalid(`${at}: tool_result blocks are only allowed in user messages`);
        if (!pending.includes(block.tool_use_id)) {
          return invalid(
            `${at}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. ` +
              'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
          );
        }
        if (seenOther) return invalid(`${at}: \`tool_result\` blocks must come before any other content in the user message`);
        if (block.content !== undefined && typeof block.content !== 'string' && !Array.isArray(block.content)) {
          return invalid(`${at}.tool_result.content: Input should be a valid string or list`);
        }
        answered.add(block.tool_use_id);
      }
      if (block.type !== 'tool_result') seenOther = true;
    }
    const missing = pending.filter((id) => !answered.has(id));
    if (missing.length) {
      return invalid(
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
          'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
      );
    }
    pending = message.role === 'assistant' ? blocks.filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
  }
  const thinking = anthropicThinkingProblem(ex, body.messages);
  return thinking ? invalid(thinking) : null;
}

/** Runs `reply(ex)` if the request passes anthropicProblem, else sends the API's error. */
export function anthropicScript(description, reply) {
  return {
    description,
    async run(ex) {
      const problem = anthropicProblem(ex);
      if (problem) return anthropicHttpError(ex, ...problem);
      await reply(ex);
    },
  };
}

// --- Anthropic: writing the reply

const anthropicEvent = (type, data = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/**
 * Answers with `blocks` ({ type: 'text', text } | { type: 'thinking', thinking } |
 * { type: 'tool_use', id, name, input }) and `stopReason`: as Messages SSE events when the
 * request streams (text in word-sized text_deltas, tool input in input_json_deltas split at odd
 * places after an empty first one, usage in message_start and message_delta), else as one Message.
 */
export async function anthropicReply(ex, blocks, stopReason, { beforeStop } = {}) {
  const id = 'msg_01' + randomId(22);
  const model = ex.body.model;
  const inputTokens = wirePromptTokens(ex.body);
  if (ex.body.stream !== true) {
    const outputTokens = blocks.reduce((n, b) => n + words(b.text ?? b.thinking ?? '').length + (b.type === 'tool_use' ? 1 : 0), 0);
    const content = blocks.map((b) => (b.type === 'thinking' ? { ...b, signature: thinkingSignature(ex) } : b));
    ex.json(
      200,
      { id, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: outputTokens } },
      { 'request-id': ex.requestId },
    );
    return;
  }
  ex.startEventStream({ 'request-id': ex.requestId });
  const usage = { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 };
  await ex.write(
    anthropicEvent('message_start', {
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage },
    }) + anthropicEvent('ping'),
  );
  let outputTokens = 0;
  for (const [index, block] of blocks.entries()) {
    let buf = '';
    const delta = (d) => {
      outputTokens++;
      buf += anthropicEvent('content_block_delta', { index, delta: d });
    };
    if (block.type === 'text') {
      buf += anthropicEvent('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of words(block.text)) delta({ type: 'text_delta', text: piece });
    } else if (block.type === 'thinking') {
      buf += anthropicEvent('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } });
      for (const piece of words(block.thinking)) delta({ type: 'thinking_delta', thinking: piece });
      buf += anthropicEvent('content_block_delta', { index, delta: { type: 'signature_delta', signature: thinkingSignature(ex) } });
    } else if (block.type === 'tool_use') {
      buf += anthropicEvent('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      buf += anthropicEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const piece of splitOddly(JSON.stringify(block.input))) delta({ type: 'input_json_delta', partial_json: piece });
    }
    buf += anthropicEvent('content_block_stop', { index });
    await ex.write(buf);
  }
  if (beforeStop) return beforeStop(ex);
  ex.end(
    anthropicEvent('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } }) +
      anthropicEvent('message_stop'),
  );
}

/** A new signature for a thinking block, remembered so that only it is taken back. */
function thinkingSignature(ex) {
  const signature = 'sig_' + randomId(40);
  ex.serverOptions.scriptState[THINKING_SIGNATURES].add(signature);
  return signature;
}

/**
 * With `thinking` enabled, a request that answers tool calls must hand back the thinking that
 * came before them, first in that assistant turn, with the signature it came with (the API's
 * rule for tool loops with extended thinking).
 */
function anthropicThinkingProblem(ex, messages) {
  if (ex.body.thinking?.type !== 'enabled') return null;
  const last = messages.length - 1;
  const answersCalls = anthropicBlocks(messages[last]?.content).some((b) => b?.type === 'tool_result');
  const i = last - 1;
  if (!answersCalls || messages[i]?.role !== 'assistant') return null;
  const blocks = anthropicBlocks(messages[i].content);
  for (const [j, block] of blocks.entries()) {
    if (block.type === 'thinking' && !ex.serverOptions.scriptState[THINKING_SIGNATURES].has(block.signature)) {
      return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  const first = blocks[0]?.type;
  if (first === 'thinking' || first === 'redacted_thinking') return null;
  return (
    `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first}\`. ` +
    'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of ' +
    '`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this ' +
    'requirement, disable `thinking`.'
  );
}

function anthropicEchoText(ex) {
  return ex.arg !== '' ? ex.arg : `You said: ${anthropicLastUserText(ex.body)}`;
}

// --- Gemini: reading the request

/** `{ name, parameters }` of each function declaration of a Gemini request. */
function geminiFunctions(body) {
  const tools = Array.isArray(body?.tools) ? body.tools : [];
  return tools
    .flatMap((tool) => tool?.functionDeclarations ?? tool?.function_declarations ?? [])
    .filter((d) => typeof d?.name === 'string' && d.name !== '')
    .map((d) => ({ name: d.name, parameters: d.parameters ?? d.parametersJsonSchema ?? {} }));
}

const geminiContents = (body) => (Array.isArray(body?.contents) ? body.contents : []);
const geminiParts = (content) => (Array.isArray(content?.parts) ? content.parts : []);

/** Text of the text parts of the last user content ('' when there is none). */
export function geminiLastUserText(body) {
  const contents = geminiContents(body);
  for (let i = contents.length - 1; i >= 0; i--) {
    if ((contents[i]?.role ?? 'user') !== 'user') continue;
    return geminiParts(contents[i])
      .filter((p) => typeof p?.text === 'string')
      .map((p) => p.text)
      .join('\n');
  }
  return '';
}

/** The `functionResponse`s of the last content when it is a user turn (else []). */
export function geminiFunctionResponses(body) {
  const last = geminiContents(body).at(-1);
  if ((last?.role ?? 'user') !== 'user') return [];
  return geminiParts(last).map((p) => p?.functionResponse ?? p?.function_response).filter(Boolean);
}

const GEMINI_ERRORS = {
  400: ['INVALID_ARGUMENT', 'Request contains an invalid argument.'],
  401: ['UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.'],
  403: ['PERMISSION_DENIED', 'The caller does not have permission'],
  404: ['NOT_FOUND', 'models/unknown is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.'],
  429: ['RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.'],
  500: ['INTERNAL', 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'],
  503: ['UNAVAILABLE', 'The model is overloaded. Please try again later.'],
  504: ['DEADLINE_EXCEEDED', 'The request timed out. Please try again.'],
};

/** Google's error response: `{ error: { code, message, status } }`. */
function geminiHttpError(ex, code, message, status) {
  ex.json(code, { error: { code, message, status } });
}

const GEMINI_BODY_KEYS = new Set(
  ['contents', 'tools', 'toolConfig', 'safetySettings', 'systemInstruction', 'generationConfig', 'cachedContent']
    .flatMap((k) => [k, k.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())]),
);

/** The fields of Gemini's `Schema`; any other key in a function's `parameters` is refused. */
const GEMINI_SCHEMA_KEYS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'default', 'example', 'properties', 'required',
  'propertyOrdering', 'minProperties', 'maxProperties', 'items', 'minItems', 'maxItems', 'minLength', 'maxLength',
  'pattern', 'minimum', 'maximum', 'anyOf',
]);

/** The first key of `schema` (recursively) that Gemini's Schema lacks: [key, path], or null. */
function unknownSchemaKey(schema, at) {
  if (!isObject(schema)) return null;
  for (const [key, value] of Object.entries(schema)) {
    if (!GEMINI_SCHEMA_KEYS.has(key)) return [key, at];
    if (key === 'properties' && isObject(value)) {
      for (const [name, sub] of Object.entries(value)) {
        const found = unknownSchemaKey(sub, `${at}.properties[${JSON.stringify(name)}].value`);
        if (found) return found;
      }
    } else if (key === 'items') {
      const found = unknownSchemaKey(value, `${at}.items`);
      if (found) return found;
    } else if (key === 'anyOf' && Array.isArray(value)) {
      for (const [i, sub] of value.entries()) {
        const found = unknownSchemaKey(sub, `${at}.any_of[${i}]`);
        if (found) return found;
      }
    }
  }
  return null;
}

/**
 * The first rule of Gemini's Schema that `schema` breaks (recursively), worded as the API words
 * its 400s, or null. The rules are the ones the API is known to enforce: string-only `enum` with
 * string values, `format` on strings only `enum` or `date-time`, `items` on every ARRAY,
 * `properties` (non-empty) and `required` (naming declared properties) only on OBJECT types.
 */
function geminiSchemaProblem(schema, at) {
  if (!isObject(schema)) return null;
  const semantic = (rest) => `* GenerateContentRequest.${at}${rest}\n`;
  if (Array.isArray(schema.type)) {
    return `Invalid value at '${at}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), ${JSON.stringify(schema.type)}`;
  }
  const type = typeof schema.type === 'string' ? schema.type.toLowerCase() : undefined;
  if (schema.enum !== undefined) {
    const values = Array.isArray(schema.enum) ? schema.enum : [];
    const bad = values.findIndex((v) => typeof v !== 'string');
    if (bad !== -1) return `Invalid value at '${at}.enum[${bad}]' (TYPE_STRING), ${JSON.stringify(values[bad])}`;
    if (type !== 'string') return semantic('.enum: only allowed for STRING type');
  }
  if (type === 'string' && schema.format !== undefined && !['enum', 'date-time'].includes(schema.format)) {
    return semantic(".format: only 'enum' and 'date-time' are supported for STRING type");
  }
  if (type !== undefined && type !== 'object') {
    if (schema.properties !== undefined) return semantic('.properties: only allowed for OBJECT type');
    if (schema.required !== undefined) return semantic('.required: only allowed for OBJECT type');
  }
  if (type === 'array' && schema.items === undefined) return semantic('.items: missing field.');
  const properties = isObject(schema.properties) ? schema.properties : {};
  if (type === 'object' && Object.keys(properties).length === 0) return semantic('.properties: should be non-empty for OBJECT type');
  for (const [i, name] of (Array.isArray(schema.required) ? schema.required : []).entries()) {
    if (!(name in properties)) return semantic(`.required[${i}]: property is not defined`);
  }
  const nested = [
    ...Object.entries(properties).map(([name, sub]) => [`.properties[${name}]`, sub]),
    ['.items', schema.items],
    ...(Array.isArray(schema.anyOf) ? schema.anyOf.map((sub, i) => [`.any_of[${i}]`, sub]) : []),
  ];
  for (const [key, sub] of nested) {
    const found = geminiSchemaProblem(sub, at + key);
    if (found) return found;
  }
  return null;
}

const GEMINI_PART_KEYS = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult'];

/** What the real API would refuse in this request: [code, message, status], or null. */
function geminiProblem(ex) {
  const { body, headers } = ex;
  const invalid = (message) => [400, message, 'INVALID_ARGUMENT'];
  const query = new URL(ex.req.url ?? '/', 'http://model-server.invalid').searchParams;
  if (!headers['x-goog-api-key'] && !query.get('key') && !headers.authorization) {
    return [
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      'PERMISSION_DENIED',
    ];
  }
  if (!isObject(body)) return invalid('Invalid JSON payload received. Expected an object.');
  for (const key of Object.keys(body)) {
    if (!GEMINI_BODY_KEYS.has(key)) return invalid(`Invalid JSON payload received. Unknown name "${key}": Cannot find field.`);
  }
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) return invalid('* GenerateContentRequest.contents: contents is not specified\n');
  const tools = body.tools ?? [];
  if (!Array.isArray(tools)) return invalid('Invalid JSON payload received. Unknown name "tools": Proto field is not repeating, cannot start list.');
  for (const [i, tool] of tools.entries()) {
    for (const [j, declaration] of (tool?.functionDeclarations ?? tool?.function_declarations ?? []).entries()) {
      const at = `tools[${i}].function_declarations[${j}]`;
      if (typeof declaration?.name !== 'string' || !/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/.test(declaration.name)) {
        return invalid(`* GenerateContentRequest.${at}.name: Invalid function name.`);
      }
      const found = unknownSchemaKey(declaration.parameters, `${at}.parameters`);
      if (found) return invalid(`Invalid JSON payload received. Unknown name "${found[0]}" at '${found[1]}': Cannot find field.`);
      const problem = geminiSchemaProblem(declaration.parameters, `${at}.parameters`);
      if (problem) return invalid(problem);
    }
  }
  let previous = null; // { role, calls, responses } of the previous content
  for (const [i, content] of contents.entries()) {
    const role = content?.role ?? 'user';
    if (role !== 'user' && role !== 'model') return invalid('Please use a valid role: user, model.');
    const parts = geminiParts(content);
    if (parts.length === 0) return invalid(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    let calls = 0;
    let responses = 0;
    for (const [j, part] of parts.entries()) {
      const at = `contents[${i}].parts[${j}]`;
      const data = GEMINI_PART_KEYS.filter((k) => part?.[k] !== undefined);
      if (data.length !== 1) return invalid(`* GenerateContentRequest.${at}.data: required oneof field 'data' must have one initialized field\n`);
      if (part.text !== undefined && (typeof part.text !== 'string' || part.text === '')) {
        return invalid('Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.');
      }
      if (part.functionCall !== undefined) {
        if (typeof part.functionCall?.name !== 'string' || part.functionCall.name === '') {
          return invalid(`* GenerateContentRequest.${at}.function_call.name: Name cannot be empty.\n`);
        }
        if (part.functionCall.args !== undefined && !isObject(part.functionCall.args)) {
          return invalid(`Invalid value at '${at}.function_call.args' (type.googleapis.com/google.protobuf.Struct): not an object`);
        }
        calls++;
      }
      if (part.functionResponse !== undefined) {
        if (typeof part.functionResponse?.name !== 'string' || part.functionResponse.name === '') {
          return invalid(`* GenerateContentRequest.${at}.function_response.name: Name cannot be empty.\n`);
        }
        if (!isObject(part.functionResponse.response)) {
          return invalid(`Invalid value at '${at}.function_response.response' (type.googleapis.com/google.protobuf.Struct): not an object`);
        }
        responses++;
      }
    }
    if (calls && role !== 'model') return invalid(`* GenerateContentRequest.contents[${i}]: function calls are only allowed in model turns\n`);
    if (responses && role !== 'user') return invalid(`* GenerateContentRequest.contents[${i}]: function responses are only allowed in user turns\n`);
    if (calls && previous && previous.role !== 'user') {
      return invalid('Please ensure that function call turn comes immediately after a user turn or after a function response turn.');
    }
    if (responses && responses !== (previous?.calls ?? 0)) {
      return invalid(
        'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
      );
    }
    previous = { role, calls, responses };
  }
  // Gemini 3 and later want each function call of the current turn (since the last user text) back
  // with the thoughtSignature it came with.
  if (geminiWantsSignatures(modelFromGeminiPath(ex.record.path))) {
    const userText = contents.findLastIndex((c) => (c?.role ?? 'user') === 'user' && geminiParts(c).some((p) => typeof p?.text === 'string'));
    for (let i = userText + 1; i < contents.length; i++) {
      for (const [j, part] of geminiParts(contents[i]).entries()) {
        if (part?.functionCall && (typeof part.thoughtSignature !== 'string' || part.thoughtSignature === '')) {
          return invalid(
            'Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, ' +
              `and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${part.functionCall.name}\` , ` +
              `position ${j + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`,
          );
        }
      }
    }
  }
  return null;
}

/** Gemini 3 and later (`gemini-3-pro-preview`, `gemini-3.5-flash`, …) sign their function calls. */
function geminiWantsSignatures(model) {
  const match = /(?:^|\/)gemini-(\d+)/i.exec(model ?? '');
  return match !== null && Number(match[1]) >= 3;
}

/** Runs `reply(ex, model)` if the request passes geminiProblem, else sends the API's error. */
export function geminiScript(description, reply) {
  return {
    description,
    async run(ex) {
      const problem = geminiProblem(ex);
      if (problem) return geminiHttpError(ex, ...problem);
      await reply(ex, modelFromGeminiPath(ex.record.path) ?? 'gemini-test');
    },
  };
}

function modelFromGeminiPath(pathname) {
  const match = /\/models\/(.+):(stream)?generateContent$/i.exec(pathname ?? '');
  return match ? decodeURIComponent(match[1]) : undefined;
}

// --- Gemini: writing the reply

/**
 * Answers with `events` (each the `parts` of one GenerateContentResponse), the last carrying
 * `finishReason` and the full usageMetadata: as `data:` events ending in CR LF CR LF (as Google
 * sends them) for `:streamGenerateContent?alt=sse`, as a JSON array without `alt=sse`, and as one
 * merged response for `:generateContent`.
 */
export async function geminiReply(ex, model, events, { finishReason = 'STOP', after } = {}) {
  const prompt = wirePromptTokens(ex.body);
  const responseId = randomId(22);
  let answer = 0;
  let thoughts = 0;
  const responses = events.map((parts, i) => {
    for (const part of parts) {
      if (part.thought) thoughts++;
      else answer++;
    }
    const last = i === events.length - 1;
    const candidate = { content: { parts, role: 'model' }, index: 0 };
    if (last) candidate.finishReason = finishReason;
    const usageMetadata = last
      ? {
          promptTokenCount: prompt,
          candidatesTokenCount: answer,
          totalTokenCount: prompt + answer + thoughts,
          promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
          ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
        }
      : { promptTokenCount: prompt, totalTokenCount: prompt };
    return { candidates: [candidate], usageMetadata, modelVersion: model, responseId };
  });
  const path = ex.record.path ?? '';
  if (/:generateContent$/i.test(path)) {
    const parts = [];
    for (const part of responses.flatMap((r) => r.candidates[0].content.parts)) {
      const prev = parts.at(-1);
      if (prev && typeof prev.text === 'string' && typeof part.text === 'string' && !prev.thought === !part.thought) {
        parts[parts.length - 1] = { ...prev, text: prev.text + part.text };
      } else parts.push(part);
    }
    const merged = responses.at(-1);
    return ex.json(200, { ...merged, candidates: [{ ...merged.candidates[0], content: { parts, role: 'model' } }] });
  }
  const sse = new URL(ex.req.url ?? '/', 'http://model-server.invalid').searchParams.get('alt') === 'sse';
  if (!sse) return ex.json(200, responses);
  for (const response of after ? responses.slice(0, -1) : responses) await ex.write(`data: ${JSON.stringify(response)}\r\n\r\n`);
  if (after) return after(ex);
  ex.end();
}

function geminiEchoText(ex) {
  return ex.arg !== '' ? ex.arg : `You said: ${geminiLastUserText(ex.body)}`;
}

const textEvents = (text) => wordGroups(text, 3).map((piece) => [{ text: piece }]);

// --- The catalogue entries

function providerWireScripts() {
  return [
    [
      'anthropic-text',
      anthropicScript(
        'Anthropic Messages: anthropic-text[:<text>] streams <text> (default "You said: <last user text>") as text_deltas, stop_reason end_turn',
        (ex) => anthropicReply(ex, [{ type: 'text', text: anthropicEchoText(ex) }], 'end_turn'),
      ),
    ],
    [
      'anthropic-thinking',
      anthropicScript(
        'Anthropic Messages: a thinking block (thinking_deltas, signature_delta), then anthropic-thinking[:<text>] like anthropic-text',
        (ex) =>
          anthropicReply(
            ex,
            [
              { type: 'thinking', thinking: 'The user wants an answer. I will give a short one.' },
              { type: 'text', text: anthropicEchoText(ex) },
            ],
            'end_turn',
          ),
      ),
    ],
    [
      'anthropic-tool-loop',
      anthropicScript(
        'Anthropic Messages: a text block and a tool_use block for the first tool (input fits its schema, input_json_delta ' +
          'split at odd places), stop_reason tool_use, led by a signed thinking block when the request enables `thinking` ' +
          '(which the next request must then hand back); once the last user turn holds tool_result blocks, ' +
          '"The tool said: <results>" with stop_reason end_turn',
        async (ex) => {
          const results = anthropicToolResults(ex.body);
          if (results.length) {
            return anthropicReply(ex, [{ type: 'text', text: `The tool said: ${results.map(toolResultText).join('; ')}` }], 'end_turn');
          }
          const [tool] = requestTools(ex.body);
          const call = {
            type: 'tool_use',
            id: 'toolu_01' + randomId(22),
            name: tool ? tool.name : 'weather',
            input: tool ? sampleObject(tool.parameters, 0) : { city: CITIES[0] },
          };
          const thinking = ex.body.thinking?.type === 'enabled' ? [{ type: 'thinking', thinking: 'A tool knows this; I will call it.' }] : [];
          await anthropicReply(ex, [...thinking, { type: 'text', text: 'Let me check that for you.' }, call], 'tool_use');
        },
      ),
    ],
    [
      'anthropic-error',
      anthropicScript(
        'Anthropic Messages: message_start and one text_delta, then `event: error` with ' +
          "{ type: 'error', error: { type: <arg, default overloaded_error>, message } } and the end of the stream",
        async (ex) => {
          const type = ex.arg || 'overloaded_error';
          const message = Object.values(ANTHROPIC_ERRORS).find(([t]) => t === type)?.[1] ?? `Simulated ${type}`;
          await anthropicReply(ex, [{ type: 'text', text: 'Partial' }], 'end_turn', {
            beforeStop: (ex) => ex.end(anthropicEvent('error', { error: { type, message } })),
          });
        },
      ),
    ],
    [
      'anthropic-http-error',
      anthropicScript(
        "Anthropic Messages: anthropic-http-error[:<status>] answers HTTP <status> (default 529) with { type: 'error', error: { type, message } }",
        (ex) => {
          const status = /^[45]\d\d$/.test(ex.arg) ? Number(ex.arg) : 529;
          const [type, message] = ANTHROPIC_ERRORS[status] ?? [status >= 500 ? 'api_error' : 'invalid_request_error', `Simulated error ${status}`];
          anthropicHttpError(ex, status, type, message, status === 429 ? { 'retry-after': '1' } : {});
        },
      ),
    ],
    [
      'gemini-text',
      geminiScript(
        'Gemini: gemini-text[:<text>] streams <text> (default "You said: <last user text>") in text parts of a few words, finishReason STOP',
        (ex, model) => geminiReply(ex, model, textEvents(geminiEchoText(ex))),
      ),
    ],
    [
      'gemini-thinking',
      geminiScript(
        'Gemini: thought parts ({ text, thought: true }), then gemini-thinking[:<text>] like gemini-text',
        (ex, model) =>
          geminiReply(ex, model, [
            ...wordGroups('The user wants an answer. I will give a short one.', 4).map((text) => [{ text, thought: true }]),
            ...textEvents(geminiEchoText(ex)),
          ]),
      ),
    ],
    [
      'gemini-tool-loop',
      geminiScript(
        'Gemini: a functionCall part for the first declared function (args fit its schema; with a thoughtSignature for ' +
          'gemini-3 and later), finishReason STOP; once the last ' +
          'content holds functionResponse parts, "The tool said: <JSON of each response>" with finishReason STOP',
        (ex, model) => {
          const responses = geminiFunctionResponses(ex.body);
          if (responses.length) {
            return geminiReply(ex, model, textEvents(`The tool said: ${responses.map((r) => JSON.stringify(r.response)).join('; ')}`));
          }
          const [fn] = geminiFunctions(ex.body);
          const call = { name: fn ? fn.name : 'weather', args: fn ? sampleObject(fn.parameters, 0) : { city: CITIES[0] } };
          const part = { functionCall: call };
          if (geminiWantsSignatures(model)) part.thoughtSignature = Buffer.from('sig:' + randomId(24)).toString('base64');
          return geminiReply(ex, model, [[part]]);
        },
      ),
    ],
    [
      'gemini-error',
      geminiScript(
        'Gemini: gemini-error[:<status>] answers HTTP <status> (default 400) with { error: { code, message, status } }',
        (ex) => {
          const code = /^[45]\d\d$/.test(ex.arg) ? Number(ex.arg) : 400;
          const [status, message] = GEMINI_ERRORS[code] ?? [code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION', `Simulated error ${code}`];
          geminiHttpError(ex, code, message, status);
        },
      ),
    ],
    [
      'gemini-stream-error',
      geminiScript(
        'Gemini: one text event, then `data: { error: { code: 500, message, status: INTERNAL } }` and the end of the stream (HTTP 200)',
        (ex, model) =>
          geminiReply(ex, model, [[{ text: 'Partial' }], []], {
            after: (ex) => {
              const [status, message] = GEMINI_ERRORS[500];
              ex.end(`data: ${JSON.stringify({ error: { code: 500, message, status } })}\r\n\r\n`);
            },
          }),
      ),
    ],
  ];
}

// ---------------------------------------------------------------------------------------------
// Background tasks: a script that knows the three requests of an untilIdle run (the user's turn,
// the step after a background tool's placeholder result, and the continuation turn that carries
// the package's directive), for the chat demo's background `research` tool.

/** The first words of the continuation directive (src/core/until_idle.rs). */
const BACKGROUND_DIRECTIVE = 'Background tasks you started earlier have finished';

/** Whether a tool message's content is the placeholder a background call returns at once. */
function isBackgroundPlaceholder(content) {
  try {
    const value = JSON.parse(content);
    return value?.status === 'running' && typeof value?.backgroundTaskId === 'string';
  } catch {
    return false;
  }
}

/** Tool call id → tool name, from the assistant messages of the request. */
function toolCallNames(body) {
  const names = new Map();
  for (const m of messagesOf(body)) {
    for (const call of Array.isArray(m?.tool_calls) ? m.tool_calls : []) names.set(call?.id, call?.function?.name ?? call?.name);
  }
  return names;
}

/** A tool result for a sentence: a JSON string as its text, anything else as compact JSON. */
function resultSentence(content) {
  try {
    const value = JSON.parse(content);
    return typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    return content;
  }
}

/** What a continuation says about each task of its directive (completed, failed, cancelled). */
function backgroundOutcomes(body, directive) {
  const names = toolCallNames(body);
  const results = new Map();
  for (const m of messagesOf(body)) if (m?.role === 'tool') results.set(m.tool_call_id, textOf(m.content));
  const sentences = [];
  for (const line of directive.split('\n')) {
    for (const match of line.matchAll(/([\w.-]+) \(tool call ([^)]+)\)/g)) {
      const [, name, id] = match;
      if (line.startsWith('Completed:')) {
        const result = results.get(id);
        sentences.push(`The background task ${name} finished: ${result === undefined ? 'its result is missing' : resultSentence(result)}`);
      } else if (line.startsWith('Failed:')) {
        // "Failed: x (tool call id): <message>. Do not retry …" or "Failed: x (tool call id) timed out. …"
        const rest = line.slice(line.indexOf(match[0]) + match[0].length).replace(/\.? Do not retry.*$/, '');
        const reason = rest.replace(/^:/, '').trim();
        sentences.push(`The background task ${name} failed${!reason ? '' : rest.startsWith(':') ? `: ${reason}` : ` (${reason})`}.`);
      } else if (line.startsWith('Cancelled:')) {
        sentences.push(`The background task ${name} was cancelled, so it has no result.`);
      }
      if (!names.has(id)) names.set(id, name);
    }
  }
  return sentences.length ? sentences.join(' ') : 'Background tasks finished, but the directive named none of them.';
}

function backgroundScripts() {
  return [
    [
      'background',
      {
        description:
          'background:<tool>[:<json args>] one call of <tool> with exactly those arguments; after placeholder results of ' +
          'background calls "I started <tool> in the background. …" (real results: "The tool said: …"); on the ' +
          'continuation (a system message with the untilIdle directive) "The background task <tool> finished: <result>" ' +
          '(or failed / was cancelled) for each task the directive names',
        async run(ex) {
          const directive = messagesOf(ex.body)
            .filter((m) => m?.role === 'system')
            .map((m) => textOf(m.content))
            .find((text) => text.includes(BACKGROUND_DIRECTIVE));
          if (directive !== undefined) return streamText(ex, backgroundOutcomes(ex.body, directive));
          const messages = messagesOf(ex.body);
          const trailing = [];
          for (let i = messages.length - 1; i >= 0 && messages[i]?.role === 'tool'; i--) trailing.unshift(messages[i]);
          if (!trailing.length) return streamCalls(ex, [namedCall(ex.arg)]);
          const names = toolCallNames(ex.body);
          const started = trailing.filter((m) => isBackgroundPlaceholder(textOf(m.content)));
          const real = trailing.filter((m) => !isBackgroundPlaceholder(textOf(m.content)));
          const sentences = [];
          if (real.length) sentences.push(`The tool said: ${real.map((m) => textOf(m.content)).join('; ')}.`);
          if (started.length) {
            const list = [...new Set(started.map((m) => names.get(m.tool_call_id) ?? 'the tool'))].join(' and ');
            sentences.push(`I started ${list} in the background. I'll report back here when it finishes.`);
          }
          await streamText(ex, sentences.join(' '));
        },
      },
    ],
  ];
}
