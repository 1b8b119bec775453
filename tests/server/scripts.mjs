// The script catalogue of the local model server. A script is `{ description, run(exchange) }`;
// `run` gets an Exchange (chat-stream.mjs) with `body`, `headers`, `arg` (the text after the first
// ':' of the script name), `record`, and helpers: `chat()` (Chat Completions responder), `json()`,
// `error()`, `write()`, `end()`, `sleep()`, `hold()`, `destroy()`.

import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { randomId, textOf, words } from './chat-stream.mjs';

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
function sampleValue(key, schema, variant, depth) {
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

/** Per-server state scripts keep between requests (flaky counters); cleared by reset(). */
export function scriptState() {
  return { [FLAKY_COUNTS]: new Map() };
}

export function resetScriptState(state) {
  state[FLAKY_COUNTS].clear();
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
      const n = Math.max(0, Number.parseInt(ex.arg, 10) || 10);
      const chat = ex.chat();
      chat.role();
      if (chat.streaming) {
        // Hot path: no JSON.stringify per event; one socket write per 64 KiB of events, and a turn
        // of the event loop after each so a client in the same process reads while we write.
        await chat.flush();
        for (let i = 0; i < n; i++) {
          chat.rawDelta('{"content":"w' + i + ' "}');
          if (chat.buf.length >= 65536) {
            await chat.flush();
            await new Promise(setImmediate);
          }
        }
      } else {
        for (let i = 0; i < n; i++) chat.content(`w${i} `);
      }
      await chat.complete('stop');
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

  add('tool-call', toolScript('one tool call, arguments split across chunks at odd places', (body) => {
    const [call] = plannedCalls(body, 1);
    return callPieces(call, 0);
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
    description: 'two good deltas, then a `data: {not json` line, then more deltas and [DONE]',
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
    description: 'two deltas, then `data: {"error": …}` and [DONE] (HTTP status stays 200)',
    async run(ex) {
      const error = { message: 'The server had an error while processing your request', type: 'server_error' };
      const chat = ex.chat();
      if (!chat.streaming) return ex.error(500, error);
      chat.content('Partial');
      chat.content(' answer');
      chat.raw(`data: ${JSON.stringify({ error })}\n\n`);
      chat.raw('data: [DONE]\n\n');
      await chat.flush();
      ex.end();
    },
  });
  add('replay', replayScript);
  for (const [name, script] of extraToolScripts()) add(name, script);
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
          const n = Math.max(0, Number.parseInt(ex.arg, 10) || 10);
          const chat = ex.chat();
          chat.role();
          if (!chat.streaming) {
            for (let i = 0; i < n; i++) chat.content(`w${i} `);
            return chat.complete('stop');
          }
          // The hot path of deltas:<N>: one socket write per 64 KiB, a turn of the event loop after each.
          await chat.flush();
          for (let i = 0; i < n; i++) {
            chat.rawDelta('{"content":"w' + i + ' "}');
            if (chat.buf.length >= 65536) {
              await chat.flush();
              await new Promise(setImmediate);
            }
          }
          await chat.complete('stop');
        },
      },
    ],
  ];
}
