// Tests of the tool-loop scripts of the model server (call, call-always, parallel,
// tools-then-text, sequence): `node --test tests/server/`.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer } from './model-server.mjs';

const T = { timeout: 10_000 };

let server;
before(async () => {
  server = await startModelServer({ demoDelayMs: 0 });
});
after(() => server?.close());

const WEATHER = {
  type: 'function',
  function: {
    name: 'weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const CLOCK = {
  type: 'function',
  function: { name: 'clock', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] } },
};

/** Posts a streaming chat request; returns the decoded events: { text, calls, finish }. */
async function chat(model, messages = [{ role: 'user', content: 'hi' }], tools = [WEATHER]) {
  const res = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages, tools }),
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(res.status, 200);
  const body = await res.text();
  assert.ok(body.trimEnd().endsWith('data: [DONE]'), 'ends with [DONE]');
  let text = '';
  let finish;
  const calls = [];
  let toolChunks = 0;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const event = JSON.parse(line.slice(6));
    const choice = event.choices?.[0];
    if (!choice) continue;
    if (typeof choice.delta?.content === 'string') text += choice.delta.content;
    for (const piece of choice.delta?.tool_calls ?? []) {
      toolChunks += 1;
      const call = (calls[piece.index] ??= { id: '', name: '', arguments: '' });
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.name += piece.function.name;
      if (piece.function?.arguments) call.arguments += piece.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, calls, finish, toolChunks };
}

/** The conversation after `n` tool turns (assistant tool_calls + tool result each). */
function afterTurns(n) {
  const messages = [{ role: 'user', content: 'hi' }];
  for (let i = 0; i < n; i++) {
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'weather', arguments: '{}' } }] });
    messages.push({ role: 'tool', tool_call_id: `c${i}`, content: `"r${i}"` });
  }
  return messages;
}

describe('call:<tool>:<json args>', () => {
  it('calls the named tool with exactly those arguments, split over several chunks', T, async () => {
    const r = await chat('call:lookup:{"q":"rust wasm","limit":3}');
    assert.equal(r.finish, 'tool_calls');
    assert.equal(r.calls.length, 1);
    assert.equal(r.calls[0].name, 'lookup');
    assert.match(r.calls[0].id, /^call_/);
    assert.deepEqual(JSON.parse(r.calls[0].arguments), { q: 'rust wasm', limit: 3 });
    assert.ok(r.toolChunks > 2, 'arguments arrive in pieces');
  });

  it('sends `{}` without arguments and keeps non-JSON arguments as they are', T, async () => {
    assert.equal((await chat('call:ping')).calls[0].arguments, '{}');
    assert.equal((await chat('call:ping:{not json')).calls[0].arguments, '{not json');
  });

  it('answers "The tool said: …" once the conversation ends with tool results', T, async () => {
    const r = await chat('call:weather:{}', afterTurns(1));
    assert.equal(r.finish, 'stop');
    assert.equal(r.text, 'The tool said: "r0"');
  });
});

describe('call-always', () => {
  it('calls again even after tool results', T, async () => {
    const r = await chat('call-always:weather:{"city":"Oslo"}', afterTurns(3));
    assert.equal(r.finish, 'tool_calls');
    assert.deepEqual(r.calls.map((c) => [c.name, JSON.parse(c.arguments)]), [['weather', { city: 'Oslo' }]]);
  });
});

describe('parallel:<n>', () => {
  it('makes n calls of the first tool with distinct ids and schema-fitting arguments', T, async () => {
    const r = await chat('parallel:4');
    assert.equal(r.finish, 'tool_calls');
    assert.deepEqual(r.calls.map((c) => c.name), ['weather', 'weather', 'weather', 'weather']);
    assert.equal(new Set(r.calls.map((c) => c.id)).size, 4);
    assert.deepEqual(r.calls.map((c) => JSON.parse(c.arguments).city), ['Paris', 'London', 'Tokyo', 'Berlin']);
  });

  it('defaults to 3 calls and answers text after tool results', T, async () => {
    assert.equal((await chat('parallel')).calls.length, 3);
    assert.equal((await chat('parallel:3', afterTurns(1))).finish, 'stop');
  });
});

describe('tools-then-text:<n>', () => {
  it('calls the first tool until the conversation holds n tool turns, then answers', T, async () => {
    for (const turns of [0, 1]) {
      const r = await chat('tools-then-text:2', afterTurns(turns));
      assert.equal(r.finish, 'tool_calls', `after ${turns} turn(s)`);
      assert.equal(r.calls.length, 1);
      assert.equal(r.calls[0].name, 'weather');
    }
    const done = await chat('tools-then-text:2', afterTurns(2));
    assert.equal(done.finish, 'stop');
    assert.equal(done.text, 'Done after 2 tool steps.');
  });

  it('tools-then-text:0 answers at once', T, async () => {
    const r = await chat('tools-then-text:0');
    assert.equal(r.finish, 'stop');
    assert.equal(r.calls.length, 0);
  });
});

describe('sequence:<a>,<b>,…', () => {
  it('calls the listed tools one per step (args fit each schema), then answers', T, async () => {
    const first = await chat('sequence:weather,clock', afterTurns(0), [WEATHER, CLOCK]);
    assert.deepEqual(first.calls.map((c) => [c.name, JSON.parse(c.arguments)]), [['weather', { city: 'Paris' }]]);
    const second = await chat('sequence:weather,clock', afterTurns(1), [WEATHER, CLOCK]);
    assert.equal(second.calls[0].name, 'clock');
    assert.ok(['UTC', 'CET'].includes(JSON.parse(second.calls[0].arguments).zone));
    const third = await chat('sequence:weather,clock', afterTurns(2), [WEATHER, CLOCK]);
    assert.equal(third.finish, 'stop');
    assert.equal(third.text, 'Done after 2 tool steps.');
  });
});

describe('the catalogue', () => {
  it('lists the new scripts on GET /v1/models', T, async () => {
    const res = await fetch(`${server.url}/models`, { signal: AbortSignal.timeout(5_000) });
    const ids = (await res.json()).data.map((m) => m.id);
    for (const name of ['call', 'call-always', 'parallel', 'tools-then-text', 'sequence']) assert.ok(ids.includes(name), name);
  });
});

// ---------------------------------------------------------------------------------------------
// Anthropic Messages and Google Gemini wire scripts (anthropic-*, gemini-*): the events, bodies
// and error shapes of each API, and the requests they refuse the way the real API does.

import { wirePromptTokens } from './scripts.mjs';

/** SSE text → [{ event, data }] (data parsed as JSON); separators may be LF or CR LF. */
function sseEvents(text) {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event;
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      return { event, data: JSON.parse(data.join('\n')) };
    });
}

const A_HEADERS = { 'content-type': 'application/json', 'x-api-key': 'test-key', 'anthropic-version': '2023-06-01' };
const A_WEATHER = {
  name: 'weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** POSTs an Anthropic Messages request running `script`; `body` fields override the defaults. */
async function anthropicPost(script, body = {}, headers = A_HEADERS) {
  const request = { model: 'claude-test', max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'hi' }], ...body };
  const res = await fetch(`${server.url}/messages`, {
    method: 'POST',
    headers: { ...headers, 'x-script': script },
    body: JSON.stringify(request),
    signal: AbortSignal.timeout(5_000),
  });
  return { res, request, text: await res.text() };
}

/** What a Messages event stream says: text, thinking, tool calls, stop reason, usage, event names. */
function readAnthropic(text) {
  const events = sseEvents(text);
  const out = { events, names: events.map((e) => e.event), text: '', thinking: '', signatures: 0, calls: [], stop: null, start: null, delta: null, error: null, blocks: [] };
  for (const { data } of events) {
    if (data.type === 'message_start') out.start = data.message;
    if (data.type === 'content_block_start') {
      out.blocks.push(data.content_block.type);
      if (data.content_block.type === 'tool_use') out.calls[data.index] = { ...data.content_block, json: '', pieces: [] };
    }
    if (data.type === 'content_block_delta') {
      const d = data.delta;
      if (d.type === 'text_delta') out.text += d.text;
      if (d.type === 'thinking_delta') out.thinking += d.thinking;
      if (d.type === 'signature_delta') out.signatures++;
      if (d.type === 'input_json_delta') {
        out.calls[data.index].json += d.partial_json;
        out.calls[data.index].pieces.push(d.partial_json);
      }
    }
    if (data.type === 'message_delta') {
      out.stop = data.delta.stop_reason;
      out.delta = data;
    }
    if (data.type === 'error') out.error = data;
  }
  out.calls = out.calls.filter(Boolean);
  return out;
}

/** The conversation after one weather call `id` and its result `content`. */
function anthropicAfterCall(id, content) {
  return [
    { role: 'user', content: 'What is the weather in Paris?' },
    { role: 'assistant', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id, name: 'weather', input: { city: 'Paris' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content }] },
  ];
}

describe('anthropic-text / anthropic-thinking', () => {
  it('streams Messages events (event names = data types) with "You said: …", usage and end_turn', T, async () => {
    const { res, request, text } = await anthropicPost('anthropic-text', { messages: [{ role: 'user', content: 'hello there' }] });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    assert.match(res.headers.get('request-id'), /^req_/);
    const r = readAnthropic(text);
    for (const e of r.events) assert.equal(e.event, e.data.type, 'the SSE name is the data type');
    const deltas = r.names.filter((n) => n === 'content_block_delta').length;
    assert.deepEqual(r.names, [
      'message_start',
      'ping',
      'content_block_start',
      ...Array(deltas).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    assert.ok(deltas > 1, 'word-sized deltas');
    assert.equal(r.text, 'You said: hello there');
    assert.match(r.start.id, /^msg_/);
    assert.equal(r.start.model, 'claude-test');
    assert.equal(r.start.role, 'assistant');
    assert.equal(r.start.usage.input_tokens, wirePromptTokens(request));
    assert.equal(r.stop, 'end_turn');
    assert.equal(r.delta.usage.output_tokens, deltas);
  });

  it('anthropic-text:<text> streams that text; without stream: true the answer is one Message', T, async () => {
    assert.equal(readAnthropic((await anthropicPost('anthropic-text:Hi from the test')).text).text, 'Hi from the test');
    const { res, text } = await anthropicPost('anthropic-text', { stream: false, messages: [{ role: 'user', content: [{ type: 'text', text: 'plain' }] }] });
    assert.match(res.headers.get('content-type'), /^application\/json/);
    const message = JSON.parse(text);
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: 'You said: plain' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
  });

  it('anthropic-thinking: a thinking block (thinking_deltas, one signature_delta), then the text block', T, async () => {
    const r = readAnthropic((await anthropicPost('anthropic-thinking')).text);
    assert.deepEqual(r.blocks, ['thinking', 'text']);
    assert.equal(r.thinking, 'The user wants an answer. I will give a short one.');
    assert.equal(r.signatures, 1);
    assert.equal(r.text, 'You said: hi');
    assert.equal(r.stop, 'end_turn');
  });
});

describe('anthropic-tool-loop', () => {
  it('first: a text block, then a tool_use block for the first tool with input_json_delta at odd places; stop_reason tool_use', T, async () => {
    const r = readAnthropic((await anthropicPost('anthropic-tool-loop', { tools: [A_WEATHER] })).text);
    assert.deepEqual(r.blocks, ['text', 'tool_use']);
    assert.equal(r.text, 'Let me check that for you.');
    assert.equal(r.calls.length, 1);
    const [call] = r.calls;
    assert.match(call.id, /^toolu_/);
    assert.equal(call.name, 'weather');
    assert.deepEqual(call.input, {}, 'content_block_start carries an empty input');
    assert.equal(call.pieces[0], '', 'the first input_json_delta is empty, as the API sends it');
    assert.ok(call.pieces.length > 3, 'the input arrives in pieces');
    assert.deepEqual(JSON.parse(call.json), { city: 'Paris' });
    assert.equal(r.stop, 'tool_use');
    assert.ok(r.start.usage.input_tokens > 0);
    assert.equal(r.delta.usage.output_tokens, r.names.filter((n) => n === 'content_block_delta').length - 1);
  });

  it('then: answers the tool_result blocks with "The tool said: …" and end_turn (string or text-block content)', T, async () => {
    const asString = await anthropicPost('anthropic-tool-loop', { tools: [A_WEATHER], messages: anthropicAfterCall('toolu_1', '{"temp":18}') });
    const r = readAnthropic(asString.text);
    assert.equal(r.text, 'The tool said: {"temp":18}');
    assert.equal(r.stop, 'end_turn');
    assert.equal(r.calls.length, 0);
    const asBlocks = await anthropicPost('anthropic-tool-loop', {
      tools: [A_WEATHER],
      messages: anthropicAfterCall('toolu_2', [{ type: 'text', text: 'sunny' }]),
    });
    assert.equal(readAnthropic(asBlocks.text).text, 'The tool said: sunny');
  });
});

describe('anthropic-error / anthropic-http-error', () => {
  it("anthropic-error: after message_start and a text delta, `event: error` with { type: 'error', error: { type: 'overloaded_error', message } }", T, async () => {
    const { res, text } = await anthropicPost('anthropic-error');
    assert.equal(res.status, 200);
    const r = readAnthropic(text);
    assert.deepEqual(r.names, ['message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_stop', 'error']);
    assert.deepEqual(r.error, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    assert.equal(readAnthropic((await anthropicPost('anthropic-error:api_error')).text).error.error.type, 'api_error');
  });

  it("anthropic-http-error[:<status>]: HTTP 529 by default, the body { type: 'error', error: { type, message }, request_id }", T, async () => {
    const { res, text } = await anthropicPost('anthropic-http-error');
    assert.equal(res.status, 529);
    const body = JSON.parse(text);
    assert.deepEqual(body.error, { type: 'overloaded_error', message: 'Overloaded' });
    assert.equal(body.type, 'error');
    assert.match(body.request_id, /^req_/);
    assert.equal(res.headers.get('request-id'), body.request_id);
    const limited = await anthropicPost('anthropic-http-error:429');
    assert.equal(limited.res.status, 429);
    assert.equal(limited.res.headers.get('retry-after'), '1');
    assert.equal(JSON.parse(limited.text).error.type, 'rate_limit_error');
    assert.equal(JSON.parse((await anthropicPost('anthropic-http-error:401')).text).error.type, 'authentication_error');
  });
});

describe('Anthropic scripts refuse what the real API refuses', () => {
  const cases = [
    ['no x-api-key', {}, { ...A_HEADERS, 'x-api-key': '' }, 401, 'authentication_error', /x-api-key header is required/],
    ['no anthropic-version', {}, { 'content-type': 'application/json', 'x-api-key': 'k' }, 400, 'invalid_request_error', /anthropic-version/],
    ['no max_tokens', { max_tokens: undefined }, A_HEADERS, 400, 'invalid_request_error', /max_tokens/],
    ['no messages', { messages: [] }, A_HEADERS, 400, 'invalid_request_error', /messages/],
    ['role system in messages', { messages: [{ role: 'system', content: 'x' }] }, A_HEADERS, 400, 'invalid_request_error', /messages\.0\.role/],
    ['an empty text block', { messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] }, A_HEADERS, 400, 'invalid_request_error', /text content blocks must be non-empty/],
    ['an empty user message', { messages: [{ role: 'user', content: [] }] }, A_HEADERS, 400, 'invalid_request_error', /non-empty content/],
    [
      'a tool_result without its tool_use',
      { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] }] },
      A_HEADERS,
      400,
      'invalid_request_error',
      /unexpected `tool_use_id`.*toolu_x/,
    ],
    [
      'a tool_use without its tool_result',
      { messages: [...anthropicAfterCall('toolu_y', 'r').slice(0, 2), { role: 'user', content: 'and?' }] },
      A_HEADERS,
      400,
      'invalid_request_error',
      /`tool_use` ids were found without `tool_result` blocks immediately after: toolu_y/,
    ],
    [
      'text before the tool_result',
      {
        messages: [
          ...anthropicAfterCall('toolu_z', 'r').slice(0, 2),
          { role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'tool_result', tool_use_id: 'toolu_z', content: 'r' }] },
        ],
      },
      A_HEADERS,
      400,
      'invalid_request_error',
      /must come before any other content/,
    ],
    ['a tool schema that is not an object', { tools: [{ name: 'w', input_schema: { type: 'string' } }] }, A_HEADERS, 400, 'invalid_request_error', /input_schema\.type/],
  ];
  for (const [what, body, headers, status, type, message] of cases) {
    it(`${what}: HTTP ${status} ${type}`, T, async () => {
      const { res, text } = await anthropicPost('anthropic-text', body, headers);
      assert.equal(res.status, status);
      const error = JSON.parse(text);
      assert.equal(error.type, 'error');
      assert.equal(error.error.type, type);
      assert.match(error.error.message, message);
    });
  }

  it('a well-formed tool loop conversation passes', T, async () => {
    const { res } = await anthropicPost('anthropic-tool-loop', { tools: [A_WEATHER], messages: anthropicAfterCall('toolu_ok', 'r') });
    assert.equal(res.status, 200);
  });
});

const G_WEATHER = {
  functionDeclarations: [
    { name: 'weather', description: 'Current weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  ],
};

/** POSTs a Gemini request running `script` to models/gemini-test:<method>. */
async function geminiPost(script, body = {}, { method = 'streamGenerateContent', sse = method === 'streamGenerateContent', headers = { 'x-goog-api-key': 'test-key' } } = {}) {
  const request = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...body };
  const res = await fetch(`${server.url}/models/gemini-test:${method}${sse ? '?alt=sse' : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers, 'x-script': script },
    body: JSON.stringify(request),
    signal: AbortSignal.timeout(5_000),
  });
  return { res, request, text: await res.text() };
}

/** What GenerateContentResponses say: text, thoughts, calls, the last finishReason and usage. */
function readGemini(responses) {
  const out = { responses, text: '', thoughts: '', calls: [], finish: null, usage: null, roles: new Set(), models: new Set(), ids: new Set() };
  for (const r of responses) {
    const candidate = r.candidates?.[0];
    if (candidate?.content?.role) out.roles.add(candidate.content.role);
    for (const p of candidate?.content?.parts ?? []) {
      if (typeof p.text === 'string') {
        if (p.thought) out.thoughts += p.text;
        else out.text += p.text;
      }
      if (p.functionCall) out.calls.push(p.functionCall);
    }
    if (candidate?.finishReason) out.finish = candidate.finishReason;
    if (r.usageMetadata) out.usage = r.usageMetadata;
    out.models.add(r.modelVersion);
    out.ids.add(r.responseId);
  }
  return out;
}

const geminiStream = (text) => readGemini(sseEvents(text).map((e) => e.data));

/** The conversation after one weather call and its `response`. */
function geminiAfterCall(response) {
  return [
    { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] },
    { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city: 'Paris' } } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'weather', response } }] },
  ];
}

describe('gemini-text / gemini-thinking', () => {
  it('streams `data:` GenerateContentResponses separated by CR LF CR LF, the last with finishReason STOP and full usage', T, async () => {
    const { res, request, text } = await geminiPost('gemini-text', { contents: [{ role: 'user', parts: [{ text: 'hello there, model' }] }] });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    assert.ok(text.includes('\r\n\r\n') && !/[^\r]\n\n/.test(text), 'events end with CR LF CR LF');
    const r = geminiStream(text);
    assert.ok(r.responses.length > 1, 'several events');
    assert.equal(r.text, 'You said: hello there, model');
    assert.deepEqual([...r.roles], ['model']);
    assert.deepEqual([...r.models], ['gemini-test'], 'modelVersion is the model of the path');
    assert.equal(r.ids.size, 1, 'one responseId');
    assert.deepEqual(r.responses.map((x) => x.candidates[0].finishReason ?? null).slice(0, -1), Array(r.responses.length - 1).fill(null));
    assert.equal(r.finish, 'STOP');
    const prompt = wirePromptTokens(request);
    assert.equal(r.usage.promptTokenCount, prompt);
    assert.equal(r.usage.candidatesTokenCount, r.responses.length);
    assert.equal(r.usage.totalTokenCount, prompt + r.responses.length);
  });

  it('gemini-text:<text>; a JSON array without alt=sse; one merged response for :generateContent', T, async () => {
    assert.equal(geminiStream((await geminiPost('gemini-text:Hi from the test')).text).text, 'Hi from the test');
    const array = await geminiPost('gemini-text', {}, { sse: false });
    assert.match(array.res.headers.get('content-type'), /^application\/json/);
    const responses = JSON.parse(array.text);
    assert.ok(Array.isArray(responses));
    assert.equal(readGemini(responses).text, 'You said: hi');
    const single = JSON.parse((await geminiPost('gemini-text', {}, { method: 'generateContent' })).text);
    assert.deepEqual(single.candidates[0].content, { parts: [{ text: 'You said: hi' }], role: 'model' });
    assert.equal(single.candidates[0].finishReason, 'STOP');
  });

  it('gemini-thinking: thought parts (thought: true) first, then the text; thoughtsTokenCount in usage', T, async () => {
    const r = geminiStream((await geminiPost('gemini-thinking')).text);
    assert.equal(r.thoughts, 'The user wants an answer. I will give a short one.');
    assert.equal(r.text, 'You said: hi');
    const firstText = r.responses.findIndex((x) => x.candidates[0].content.parts.some((p) => !p.thought));
    assert.ok(r.responses.slice(firstText).every((x) => x.candidates[0].content.parts.every((p) => !p.thought)), 'thoughts come first');
    assert.ok(r.usage.thoughtsTokenCount > 0);
  });
});

describe('gemini-tool-loop', () => {
  it('first: one functionCall part for the first declared function, args fitting its schema, finishReason STOP', T, async () => {
    const r = geminiStream((await geminiPost('gemini-tool-loop', { tools: [G_WEATHER] })).text);
    assert.deepEqual(r.calls, [{ name: 'weather', args: { city: 'Paris' } }]);
    assert.equal(r.text, '');
    assert.equal(r.finish, 'STOP');
    const clock = { functionDeclarations: [{ name: 'clock', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] } }] };
    const other = geminiStream((await geminiPost('gemini-tool-loop', { tools: [clock, G_WEATHER] })).text);
    assert.deepEqual(other.calls, [{ name: 'clock', args: { zone: 'UTC' } }]);
  });

  it('then: answers the functionResponse parts with "The tool said: <JSON>" and finishReason STOP', T, async () => {
    const r = geminiStream((await geminiPost('gemini-tool-loop', { tools: [G_WEATHER], contents: geminiAfterCall({ temp: 18 }) })).text);
    assert.equal(r.text, 'The tool said: {"temp":18}');
    assert.equal(r.calls.length, 0);
    assert.equal(r.finish, 'STOP');
  });
});

describe('gemini-error / gemini-stream-error', () => {
  it('gemini-error[:<status>]: HTTP 400 by default with { error: { code, message, status } }', T, async () => {
    const { res, text } = await geminiPost('gemini-error');
    assert.equal(res.status, 400);
    assert.deepEqual(JSON.parse(text), { error: { code: 400, message: 'Request contains an invalid argument.', status: 'INVALID_ARGUMENT' } });
    for (const [code, status] of [[429, 'RESOURCE_EXHAUSTED'], [503, 'UNAVAILABLE'], [403, 'PERMISSION_DENIED']]) {
      const r = await geminiPost(`gemini-error:${code}`);
      assert.equal(r.res.status, code);
      const body = JSON.parse(r.text);
      assert.equal(body.error.code, code);
      assert.equal(body.error.status, status);
      assert.ok(body.error.message.length > 0);
    }
  });

  it('gemini-stream-error: one text event, then `data: { error: { code: 500, message, status: INTERNAL } }` (HTTP 200)', T, async () => {
    const { res, text } = await geminiPost('gemini-stream-error');
    assert.equal(res.status, 200);
    const events = sseEvents(text).map((e) => e.data);
    assert.equal(events.length, 2);
    assert.equal(events[0].candidates[0].content.parts[0].text, 'Partial');
    assert.equal(events[0].candidates[0].finishReason, undefined);
    assert.equal(events[1].error.code, 500);
    assert.equal(events[1].error.status, 'INTERNAL');
    assert.match(events[1].error.message, /internal error/);
  });
});

describe('Gemini scripts refuse what the real API refuses', () => {
  const schemaOf = (properties) => ({ tools: [{ functionDeclarations: [{ name: 'weather', parameters: { type: 'object', properties, required: ['city'] } }] }] });
  const cases = [
    ['no API key', {}, { headers: {} }, 403, 'PERMISSION_DENIED', /unregistered callers/],
    ['an unknown body field', { messages: [] }, {}, 400, 'INVALID_ARGUMENT', /Unknown name "messages"/],
    ['no contents', { contents: [] }, {}, 400, 'INVALID_ARGUMENT', /contents is not specified/],
    ['role assistant', { contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] }, {}, 400, 'INVALID_ARGUMENT', /valid role: user, model/],
    ['a content without parts', { contents: [{ role: 'user', parts: [] }] }, {}, 400, 'INVALID_ARGUMENT', /parts must not be empty/],
    ['an empty text part', { contents: [{ role: 'user', parts: [{ text: '' }] }] }, {}, 400, 'INVALID_ARGUMENT', /empty text parameter/],
    [
      'function responses that do not match the calls',
      { contents: [...geminiAfterCall({ a: 1 }), { role: 'user', parts: [{ functionResponse: { name: 'weather', response: { b: 2 } } }] }] },
      {},
      400,
      'INVALID_ARGUMENT',
      /number of function response parts is equal to the number of function call parts/,
    ],
    [
      'a function call right after a model turn',
      { contents: [{ role: 'user', parts: [{ text: 'q' }] }, { role: 'model', parts: [{ text: 'a' }] }, { role: 'model', parts: [{ functionCall: { name: 'w', args: {} } }] }] },
      {},
      400,
      'INVALID_ARGUMENT',
      /function call turn comes immediately after a user turn/,
    ],
    ['additionalProperties in a schema', { tools: [{ functionDeclarations: [{ name: 'weather', parameters: { ...schemaOf({ city: { type: 'string' } }).tools[0].functionDeclarations[0].parameters, additionalProperties: false } }] }] }, {}, 400, 'INVALID_ARGUMENT', /Unknown name "additionalProperties"/],
    ['format email', schemaOf({ city: { type: 'string', format: 'email' } }), {}, 400, 'INVALID_ARGUMENT', /format: only 'enum' and 'date-time'/],
    ['a numeric enum', schemaOf({ city: { type: 'string' }, days: { type: 'integer', enum: [1, 3] } }), {}, 400, 'INVALID_ARGUMENT', /enum\[0\]' \(TYPE_STRING\)/],
    ['an enum without type', schemaOf({ city: { enum: ['Paris'] } }), {}, 400, 'INVALID_ARGUMENT', /enum: only allowed for STRING type/],
    ['an object without properties', schemaOf({ city: { type: 'string' }, meta: { type: 'object' } }), {}, 400, 'INVALID_ARGUMENT', /properties\[meta\]\.properties: should be non-empty for OBJECT type/],
    ['an array without items', schemaOf({ city: { type: 'string' }, tags: { type: 'array' } }), {}, 400, 'INVALID_ARGUMENT', /properties\[tags\]\.items: missing field/],
    ['required naming an undeclared property', schemaOf({ town: { type: 'string' } }), {}, 400, 'INVALID_ARGUMENT', /required\[0\]: property is not defined/],
  ];
  for (const [what, body, opts, code, status, message] of cases) {
    it(`${what}: HTTP ${code} ${status}`, T, async () => {
      const { res, text } = await geminiPost('gemini-text', body, opts);
      assert.equal(res.status, code);
      const { error } = JSON.parse(text);
      assert.equal(error.code, code);
      assert.equal(error.status, status);
      assert.match(error.message, message);
    });
  }

  it('the key may come as ?key=; a well-formed tool loop conversation passes', T, async () => {
    const res = await fetch(`${server.url}/models/gemini-test:streamGenerateContent?alt=sse&key=k`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-script': 'gemini-tool-loop' },
      body: JSON.stringify({ contents: geminiAfterCall({ ok: true }), tools: [G_WEATHER] }),
      signal: AbortSignal.timeout(5_000),
    });
    assert.equal(res.status, 200);
    assert.equal(geminiStream(await res.text()).text, 'The tool said: {"ok":true}');
  });
});

describe('the catalogue (provider wire scripts)', () => {
  it('lists the anthropic-* and gemini-* scripts on GET /v1/models', T, async () => {
    const res = await fetch(`${server.url}/models`, { signal: AbortSignal.timeout(5_000) });
    const ids = (await res.json()).data.map((m) => m.id);
    const names = ['anthropic-text', 'anthropic-thinking', 'anthropic-tool-loop', 'anthropic-error', 'anthropic-http-error'];
    names.push('gemini-text', 'gemini-thinking', 'gemini-tool-loop', 'gemini-error', 'gemini-stream-error');
    for (const name of names) assert.ok(ids.includes(name), name);
  });
});

describe('Gemini 3 thought signatures', () => {
  /** POSTs to models/<model>:streamGenerateContent?alt=sse. */
  async function post(model, body) {
    const res = await fetch(`${server.url}/models/${model}:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'k', 'x-script': 'gemini-tool-loop' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5_000),
    });
    return { res, text: await res.text() };
  }

  it('gemini-tool-loop signs its functionCall part on gemini-3 models only', T, async () => {
    const three = sseEvents((await post('gemini-3-pro-preview', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], tools: [G_WEATHER] })).text);
    const [part] = three[0].data.candidates[0].content.parts;
    assert.equal(part.functionCall.name, 'weather');
    assert.match(part.thoughtSignature, /^[A-Za-z0-9+/]+=*$/, 'base64');
    const two = sseEvents((await post('gemini-2.5-flash', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], tools: [G_WEATHER] })).text);
    assert.equal(two[0].data.candidates[0].content.parts[0].thoughtSignature, undefined);
  });

  it("refuses a current-turn functionCall without its thoughtSignature on gemini-3, as the API does; earlier turns and gemini-2 don't need one", T, async () => {
    const unsigned = { contents: geminiAfterCall({ ok: true }), tools: [G_WEATHER] };
    const refused = await post('gemini-3-pro-preview', unsigned);
    assert.equal(refused.res.status, 400);
    assert.match(JSON.parse(refused.text).error.message, /Function call is missing a thought_signature in functionCall parts/);
    assert.equal((await post('gemini-2.5-flash', unsigned)).res.status, 200);
    const signed = structuredClone(unsigned);
    signed.contents[1].parts[0].thoughtSignature = 'skip_thought_signature_validator';
    assert.equal((await post('gemini-3-pro-preview', signed)).res.status, 200);
    const earlier = { contents: [...geminiAfterCall({ ok: true }), { role: 'model', parts: [{ text: 'ok' }] }, { role: 'user', parts: [{ text: 'next' }] }], tools: [G_WEATHER] };
    assert.equal((await post('gemini-3-pro-preview', earlier)).res.status, 200);
  });
});
