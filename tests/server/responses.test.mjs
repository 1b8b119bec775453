// Tests of the model server on the OpenAI Responses API (POST …/responses): the same scripts as on
// Chat Completions, read from a Responses request and answered with Responses events.
// `node --test tests/server/`.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer } from './model-server.mjs';
import { chatView } from './responses-stream.mjs';
import { parseEvents, readAll } from './sse-read.mjs';

const T = { timeout: 10_000 };

let server;
before(async () => {
  server = await startModelServer({
    demoDelayMs: 0,
    // Shows what a script reads: the request's Chat view, as JSON text.
    scripts: { view: (ex) => streamWhole(ex, JSON.stringify(ex.body)) },
  });
});
after(() => server?.close());

async function streamWhole(ex, text) {
  const chat = ex.chat();
  chat.content(text);
  await chat.complete('stop');
}

const PARAMETERS = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const WEATHER = { type: 'function', name: 'weather', description: 'Weather in a city', parameters: PARAMETERS };
const WEATHER_CHAT = { type: 'function', function: { name: 'weather', description: 'Weather in a city', parameters: PARAMETERS } };
const QUESTION = 'What is the weather in Paris?';

function post(path, body, headers = {}) {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
  });
}

/** A Responses request for `model`: instructions, one user turn in input_text parts, the weather tool. */
function responsesBody(model, extra = {}) {
  return {
    model,
    stream: true,
    instructions: 'Be brief.',
    input: [{ role: 'user', content: [{ type: 'input_text', text: QUESTION }] }],
    tools: [WEATHER],
    ...extra,
  };
}

/**
 * Checks a Responses event stream against the protocol and returns what it says. Checked: each
 * SSE name is its data's `type`; sequence numbers count up from 0; response.created and
 * response.in_progress come first; each output item is added once, at the next output index, and
 * done once, every event about it in between and naming its id; its deltas add up to the `.done`
 * text or arguments and to the finished item; the final response lists the finished items.
 */
function readResponses(text) {
  const events = parseEvents(text).map(({ event, data }) => {
    const parsed = JSON.parse(data);
    assert.equal(event, parsed.type, 'the SSE event name is the data type');
    return parsed;
  });
  events.forEach((e, i) => assert.equal(e.sequence_number, i, `sequence number of ${e.type}`));
  assert.deepEqual(events.slice(0, 2).map((e) => e.type), ['response.created', 'response.in_progress']);
  const created = events[0].response;
  assert.match(created.id, /^resp_/);
  assert.equal(created.object, 'response');
  assert.equal(created.status, 'in_progress');
  assert.deepEqual(created.output, []);
  assert.equal(created.usage, null);
  assert.deepEqual(events[1].response, created);

  const last = events.at(-1);
  const slots = []; // per output index: { added, done, events }
  for (const e of events.slice(2, -1)) {
    if (e.type === 'error') continue;
    if (e.type === 'response.output_item.added') {
      assert.equal(e.output_index, slots.length, 'items are added in output order');
      slots.push({ added: e.item, done: null, events: [] });
      continue;
    }
    const slot = slots[e.output_index];
    assert.ok(slot && !slot.done, `${e.type} (output ${e.output_index}) is about an open item`);
    if (e.type === 'response.output_item.done') {
      assert.equal(e.item.id, slot.added.id);
      slot.done = e.item;
    } else {
      assert.equal(e.item_id, slot.added.id, `${e.type} names its item`);
      slot.events.push(e);
    }
  }
  const items = slots.map((slot) => checkItem(slot, last.type === 'response.failed'));
  assert.match(last.type, /^response\.(completed|incomplete|failed)$/);
  assert.equal(last.response.id, created.id);
  if (last.type !== 'response.failed') assert.deepEqual(last.response.output, slots.map((s) => s.done));
  const of = (type) => items.filter((i) => i.type === type);
  return {
    events,
    types: events.map((e) => e.type),
    items,
    text: of('message').map((i) => i.text).join(''),
    reasoning: of('reasoning').map((i) => i.text).join(''),
    calls: of('function_call'),
    last,
    response: last.response,
    usage: last.response.usage,
  };
}

const EVENTS = {
  message: ['response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done'],
  reasoning: [
    'response.reasoning_summary_part.added',
    'response.reasoning_summary_text.delta',
    'response.reasoning_summary_text.done',
    'response.reasoning_summary_part.done',
  ],
  function_call: ['response.function_call_arguments.delta', 'response.function_call_arguments.done'],
};
const ID_PREFIX = { message: /^msg_/, reasoning: /^rs_/, function_call: /^fc_/ };

/** One item's events in order, deltas adding up; returns `{ type, id, text | arguments, … }`. */
function checkItem({ added, done, events }, failed) {
  const { type, id } = added;
  assert.ok(type in EVENTS, `item type ${type}`);
  assert.match(id, ID_PREFIX[type]);
  const kinds = EVENTS[type];
  const order = events.map((e) => kinds.indexOf(e.type));
  assert.ok(order.every((k, i) => k !== -1 && (i === 0 || k >= order[i - 1])), `${type} events in order: ${events.map((e) => e.type)}`);
  const deltas = events.filter((e) => e.type.endsWith('.delta')).map((e) => e.delta);
  assert.ok(deltas.every((d) => typeof d === 'string' && d !== ''), 'deltas are non-empty text');
  const whole = deltas.join('');
  if (!done) {
    assert.ok(failed, `${type} ${id} is done before the response ends`);
    return { type, id, text: whole, arguments: whole, open: true };
  }
  assert.equal(events.at(-1).type, kinds.at(-1), `${type} ends with ${kinds.at(-1)}`);
  const finished = events.find((e) => /_(text|arguments)\.done$/.test(e.type));
  if (type === 'message') {
    assert.deepEqual(added, { id, type, status: 'in_progress', content: [], role: 'assistant' });
    assert.deepEqual(events[0].part, { type: 'output_text', annotations: [], logprobs: [], text: '' });
    assert.ok(events.every((e) => e.content_index === 0));
    assert.equal(finished.text, whole);
    const part = { type: 'output_text', annotations: [], logprobs: [], text: whole };
    assert.deepEqual(events.at(-1).part, part);
    assert.deepEqual(done, { id, type, status: done.status, content: [part], role: 'assistant' });
    return { type, id, text: whole, status: done.status };
  }
  if (type === 'reasoning') {
    assert.deepEqual(added.summary, []);
    assert.ok(events.every((e) => e.summary_index === 0));
    assert.equal(finished.text, whole);
    assert.deepEqual(done.summary, [{ type: 'summary_text', text: whole }]);
    return { type, id, text: whole };
  }
  assert.deepEqual(added, { id, type, status: 'in_progress', arguments: '', call_id: added.call_id, name: added.name });
  assert.equal(finished.arguments, whole);
  assert.deepEqual(done, { ...added, status: 'completed', arguments: whole });
  return { type, id, call_id: added.call_id, name: added.name, arguments: whole, deltas: deltas.length };
}

/** Streams a Responses request; returns the checked stream (`readResponses`) and the HTTP response. */
async function responsesOf(model, extra, headers) {
  const res = await post('/responses', responsesBody(model, extra), headers);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  const { text, error } = await readAll(res);
  assert.equal(error, null);
  return { res, raw: text, ...readResponses(text) };
}

/** The same request on Chat Completions: text, reasoning, calls and usage. */
async function chatOf(model, messages) {
  const res = await post('/chat/completions', {
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: messages ?? [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: QUESTION }] },
    ],
    tools: [WEATHER_CHAT],
  });
  const out = { text: '', reasoning: '', calls: [], usage: null, finish: null };
  for (const { data } of parseEvents(await res.text())) {
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data);
    if (chunk.usage) out.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    out.text += choice.delta.content ?? '';
    out.reasoning += choice.delta.reasoning_content ?? '';
    for (const piece of choice.delta.tool_calls ?? []) {
      const call = (out.calls[piece.index] ??= { name: '', arguments: '' });
      call.name += piece.function?.name ?? '';
      call.arguments += piece.function?.arguments ?? '';
    }
    out.finish = choice.finish_reason ?? out.finish;
  }
  return out;
}

/** The Responses reply says what the Chat reply says, with the same usage. */
function assertSameAsChat(r, chat) {
  assert.equal(r.text, chat.text);
  assert.equal(r.reasoning, chat.reasoning);
  assert.deepEqual(r.calls.map((c) => ({ name: c.name, arguments: c.arguments })), chat.calls);
  assert.deepEqual(r.usage, {
    input_tokens: chat.usage.prompt_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: chat.usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: chat.usage.completion_tokens_details.reasoning_tokens },
    total_tokens: chat.usage.total_tokens,
  });
}

describe('Responses API: text', () => {
  it('text:<words> is one message item: the whole event sequence, numbered from 0', T, async () => {
    const r = await responsesOf('text:Hello there world');
    assert.deepEqual(r.types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.deepEqual(r.events.filter((e) => e.type.endsWith('.delta')).map((e) => e.delta), ['Hello', ' there', ' world']);
    const delta = r.events[4];
    assert.deepEqual(Object.keys(delta), ['type', 'sequence_number', 'item_id', 'output_index', 'content_index', 'delta', 'logprobs']);
    assert.equal(r.response.status, 'completed');
    assert.equal(r.response.model, 'text:Hello there world');
    assert.equal(r.response.instructions, 'Be brief.');
    assert.equal(r.response.incomplete_details, null);
    assert.equal(r.items[0].status, 'completed');
    assert.ok(!r.raw.includes('[DONE]'));
    // "Be brief." and the question: 38 characters, 10 "tokens"; one per delta out.
    assert.deepEqual(r.usage, {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 13,
    });
  });

  it('echo reads the last user text from input (a string, or parts) and says what Chat says', T, async () => {
    const r = await responsesOf('echo');
    assert.equal(r.text, `You said: ${QUESTION}`);
    assertSameAsChat(r, await chatOf('echo'));
    const plain = await responsesOf('echo', { input: 'just a string', instructions: undefined });
    assert.equal(plain.text, 'You said: just a string');
  });

  it('the request record keeps the Responses body as sent', T, async () => {
    const body = responsesBody('echo', { max_output_tokens: 50, store: false });
    await readAll(await post('/responses', body));
    const record = server.requests.at(-1);
    assert.match(record.path, /\/responses$/);
    assert.deepEqual(record.body, body);
    assert.equal(record.scriptName, 'echo');
  });

  it('reasoning is a reasoning item of summary deltas before the message, counted as reasoning tokens', T, async () => {
    const r = await responsesOf('reasoning');
    assert.deepEqual(r.items.map((i) => i.type), ['reasoning', 'message']);
    assert.ok(r.events.filter((e) => e.type === 'response.reasoning_summary_text.delta').length >= 3);
    assert.ok(!('encrypted_content' in r.response.output[0]), 'only when include asks for it');
    const chat = await chatOf('reasoning');
    assertSameAsChat(r, chat);
    assert.ok(r.usage.output_tokens_details.reasoning_tokens > 0);

    const encrypted = await responsesOf('reasoning', { include: ['reasoning.encrypted_content'] });
    assert.match(encrypted.response.output[0].encrypted_content, /^gAAAA/);
  });

  it('length and content-filter end in response.incomplete with their reason', T, async () => {
    for (const [model, reason] of [['length', 'max_output_tokens'], ['content-filter', 'content_filter']]) {
      const r = await responsesOf(model);
      assert.equal(r.last.type, 'response.incomplete', model);
      assert.equal(r.response.status, 'incomplete');
      assert.deepEqual(r.response.incomplete_details, { reason });
      assert.equal(r.items[0].status, 'incomplete');
      assertSameAsChat(r, await chatOf(model));
    }
  });

  it('deltas:<N> streams N text deltas with unbroken sequence numbers', T, async () => {
    const r = await responsesOf('deltas:20000');
    const deltas = r.events.filter((e) => e.type === 'response.output_text.delta');
    assert.equal(deltas.length, 20000);
    assert.equal(deltas[0].delta, 'w0 ');
    assert.equal(deltas[19999].delta, 'w19999 ');
    assert.equal(r.usage.output_tokens, 20000);
  });

  it('demo answers with reasoning first, as on Chat', T, async () => {
    const r = await responsesOf('demo', { input: 'hello!' });
    assert.deepEqual(r.items.map((i) => i.type), ['reasoning', 'message']);
    assert.match(r.text, /^Hello! I'm the offline demo model/);
  });
});

describe('Responses API: tool calls', () => {
  it('tool-call is one function_call item: call_id, name, arguments split across deltas', T, async () => {
    const r = await responsesOf('tool-call');
    assert.equal(r.calls.length, 1);
    const [call] = r.calls;
    assert.match(call.call_id, /^call_/);
    assert.equal(call.name, 'weather');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
    assert.ok(call.deltas >= 4, 'arguments come in several deltas');
    assert.equal(r.last.type, 'response.completed');
    assert.deepEqual(r.items.map((i) => i.type), ['function_call']);
    assertSameAsChat(r, await chatOf('tool-call'));
  });

  it('tool-calls-parallel: two items, the first done before the second is added', T, async () => {
    const r = await responsesOf('tool-calls-parallel');
    assert.deepEqual(r.calls.map((c) => JSON.parse(c.arguments)), [{ city: 'Paris' }, { city: 'London' }]);
    assert.notEqual(r.calls[0].call_id, r.calls[1].call_id);
    const firstDone = r.types.indexOf('response.output_item.done');
    const secondAdded = r.types.lastIndexOf('response.output_item.added');
    assert.ok(firstDone < secondAdded, 'one item after the other');
    assertSameAsChat(r, await chatOf('tool-calls-parallel'));
  });

  it('tool-calls-interleaved: argument deltas alternate between the two items and still add up', T, async () => {
    const r = await responsesOf('tool-calls-interleaved');
    const order = r.events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.output_index);
    assert.ok(order.some((index, i) => i > 0 && index < order[i - 1]), 'output indexes go back and forth');
    assertSameAsChat(r, await chatOf('tool-calls-interleaved'));
  });

  it('the other tool scripts say on Responses what they say on Chat', T, async () => {
    for (const model of ['tool-call-one-chunk', 'tool-call-empty-array', 'tool-call-bad-json', 'parallel:3', 'call:lookup:{"q":1}']) {
      const r = await responsesOf(model);
      assert.ok(r.calls.length > 0, model);
      assertSameAsChat(r, await chatOf(model));
    }
  });

  it('after function_call_output items, tool scripts quote the outputs, as on Chat', T, async () => {
    const input = [
      { role: 'user', content: [{ type: 'input_text', text: QUESTION }] },
      { role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'call_2', name: 'weather', arguments: '{"city":"Rome"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '18°C and sunny' },
      { type: 'function_call_output', call_id: 'call_2', output: '25°C' },
    ];
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: QUESTION }] },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Checking.' }],
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18°C and sunny' },
      { role: 'tool', tool_call_id: 'call_2', content: '25°C' },
    ];
    for (const model of ['tool-call', 'parallel', 'call:weather']) {
      const r = await responsesOf(model, { input });
      assert.equal(r.text, 'The tool said: 18°C and sunny; 25°C', model);
      assert.equal(r.calls.length, 0);
      assertSameAsChat(r, await chatOf(model, messages));
    }
    // Both calls are one assistant turn, so one tool step was taken.
    const turns = await responsesOf('tools-then-text:1', { input });
    assert.equal(turns.text, 'Done after 1 tool steps.');
  });
});

describe('Responses API: items that refer to earlier responses', () => {
  /** A first turn of reasoning-tool-call (store: false, encrypted reasoning asked for): its output items. */
  async function firstTurn() {
    const r = await responsesOf('reasoning-tool-call', { store: false, include: ['reasoning.encrypted_content'] });
    const [reasoning, call] = r.response.output;
    assert.deepEqual([reasoning.type, call.type], ['reasoning', 'function_call']);
    assert.match(reasoning.encrypted_content, /^gAAAAA/);
    return { reasoning, call };
  }
  const user = { role: 'user', content: [{ type: 'input_text', text: QUESTION }] };
  const output = (call) => ({ type: 'function_call_output', call_id: call.call_id, output: '18°C' });
  const fc = (call, withId = true) => ({ type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments, ...(withId ? { id: call.id } : {}) });
  const rs = (reasoning, extra = {}) => ({ type: 'reasoning', id: reasoning.id, summary: reasoning.summary, encrypted_content: reasoning.encrypted_content, ...extra });

  async function refusal(input, store = false) {
    const res = await post('/responses', responsesBody('reasoning-tool-call', { store, input }));
    return { status: res.status, message: (await res.json()).error?.message };
  }

  it('the reasoning and the call it led to, with their ids and encrypted content, are taken back', T, async () => {
    const { reasoning, call } = await firstTurn();
    const r = await responsesOf('reasoning-tool-call', { store: false, input: [user, rs(reasoning), fc(call), output(call)] });
    assert.equal(r.text, 'The tool said: 18°C');
    // Without ids at all (no reasoning sent back) is fine too.
    const plain = await responsesOf('reasoning-tool-call', { input: [user, fc(call, false), output(call)] });
    assert.equal(plain.text, 'The tool said: 18°C');
  });

  it('what the API refuses is refused with its words', T, async () => {
    const { reasoning, call } = await firstTurn();
    assert.deepEqual(await refusal([user, rs(reasoning), fc(call, false), output(call)]), {
      status: 400,
      message: `Item '${reasoning.id}' of type 'reasoning' was provided without its required following item.`,
    });
    assert.deepEqual(await refusal([user, fc(call), output(call)]), {
      status: 400,
      message: `Item '${call.id}' of type 'function_call' was provided without its required 'reasoning' item: '${reasoning.id}'.`,
    });
    const { status, message } = await refusal([user, rs(reasoning, { encrypted_content: undefined }), fc(call), output(call)]);
    assert.equal(status, 404);
    assert.match(message, /not found\. Items are not persisted when `store` is set to false/);
    assert.equal((await refusal([user, rs(reasoning, { summary: undefined }), fc(call), output(call)])).status, 400);
    assert.deepEqual(await refusal([user, rs({ ...reasoning, id: 'rs_made_up' }), fc(call), output(call)]), {
      status: 404,
      message: "Item with id 'rs_made_up' not found.",
    });
    // Stored (store not false): the id alone is enough.
    const stored = await responsesOf('reasoning-tool-call', { input: [user, rs(reasoning, { encrypted_content: undefined }), fc(call), output(call)] });
    assert.equal(stored.text, 'The tool said: 18°C');
  });
});

describe('Responses API: not streaming', () => {
  it('a request without stream gets one response object with the output items and usage', T, async () => {
    for (const model of ['reasoning', 'tool-calls-parallel']) {
      const res = await post('/responses', responsesBody(model, { stream: undefined }));
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type'), /^application\/json/);
      const body = await res.json();
      const streamed = await responsesOf(model);
      assert.equal(body.object, 'response');
      assert.equal(body.status, 'completed');
      // Ids are fresh each time; the rest is what the stream's response.completed holds.
      const idless = (output) => output.map(({ id, call_id, encrypted_content, ...rest }) => rest);
      assert.deepEqual(idless(body.output), idless(streamed.response.output), model);
      assert.deepEqual(body.usage, streamed.usage);
    }
  });

  it('length without stream is an incomplete response', T, async () => {
    const body = await (await post('/responses', responsesBody('length', { stream: false }))).json();
    assert.equal(body.status, 'incomplete');
    assert.deepEqual(body.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(body.output[0].content[0].text, 'This answer is cut short because it ran into the');
  });
});

describe('Responses API: errors and raw output', () => {
  it('error-<status> answers with the same OpenAI JSON error as on Chat', T, async () => {
    const res = await post('/responses', responsesBody('error-429:2'));
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '2');
    const chat = await post('/chat/completions', { model: 'error-429:2', messages: [] });
    assert.deepEqual(await res.json(), await chat.json());
  });

  it('in-stream-error: the partial message, an error event, then response.failed', T, async () => {
    const r = await responsesOf('in-stream-error');
    assert.deepEqual(r.types.slice(-2), ['error', 'response.failed']);
    assert.equal(r.text, 'Partial answer');
    const message = 'The server had an error while processing your request';
    assert.deepEqual(r.events.at(-2).error, { type: 'server_error', code: 'server_error', message, param: null });
    assert.equal(r.response.status, 'failed');
    assert.deepEqual(r.response.error, { code: 'server_error', message });
  });

  it('malformed-json writes its bad line as is, between good events', T, async () => {
    const res = await post('/responses', responsesBody('malformed-json'));
    const { text } = await readAll(res);
    const data = parseEvents(text).map((e) => e.data);
    const bad = data.indexOf('{not json');
    assert.ok(bad > 2, 'good events before it');
    const good = data.filter((d) => d !== '{not json').map((d) => JSON.parse(d));
    assert.equal(good.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''), 'Good start and more');
    assert.equal(good.at(-1).type, 'response.completed');
  });

  it('replays of recorded Responses streams still pass through as they are', T, async () => {
    const res = await post('/responses', responsesBody('gpt-5'), { 'x-script': 'replay:openai--openai-error.1' });
    const data = parseEvents((await readAll(res)).text).map((e) => JSON.parse(e.data));
    assert.deepEqual(data.map((e) => e.type), ['response.created', 'response.in_progress', 'error', 'response.failed']);
  });
});

describe('Responses API: the Chat view scripts read', () => {
  it('instructions, input items and tools become messages and Chat tools', () => {
    const body = {
      model: 'm',
      stream: true,
      store: false,
      instructions: 'Be brief.',
      max_output_tokens: 99,
      tool_choice: { type: 'function', name: 'weather' },
      tools: [{ ...WEATHER, strict: false }, { type: 'web_search' }],
      input: [
        { role: 'system', content: 'Also this.' },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look:' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA' },
            { type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,BBBB' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
        { role: 'assistant', content: [{ type: 'output_text', text: 'It is sunny.' }] },
        { role: 'user', content: 'thanks' },
      ],
    };
    assert.deepEqual(chatView(body), {
      model: 'm',
      stream: true,
      store: false,
      max_tokens: 99,
      tool_choice: { type: 'function', function: { name: 'weather' } },
      tools: [{ type: 'function', function: { name: 'weather', description: 'Weather in a city', parameters: PARAMETERS, strict: false } }, { type: 'web_search' }],
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'Also this.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look:' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,BBBB' } },
          ],
        },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        { role: 'assistant', content: [{ type: 'text', text: 'It is sunny.' }] },
        { role: 'user', content: 'thanks' },
      ],
    });
    assert.equal(chatView('not json'), 'not json');
    assert.deepEqual(chatView({ input: 'hi' }).messages, [{ role: 'user', content: 'hi' }]);
  });

  it('scripts (custom ones too) read that view; Chat requests reach them unchanged', T, async () => {
    const body = responsesBody('view');
    const r = await responsesOf('view');
    assert.deepEqual(JSON.parse(r.text), chatView(body));
    const messages = [{ role: 'user', content: 'as is' }];
    const chat = await chatOf('view', messages);
    assert.deepEqual(JSON.parse(chat.text).messages, messages);
  });
});
