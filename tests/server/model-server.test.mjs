// Tests of the local model server: `node --test tests/server/`.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startModelServer } from './model-server.mjs';
import { parseEvents, readAll } from './sse-read.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const FIXTURES = path.resolve(HERE, '../../../shared/fixtures/provider-streams');
const T = { timeout: 10_000 };

let server;
before(async () => {
  server = await startModelServer({ demoDelayMs: 0 });
});
after(() => server?.close());

function post(body, { headers = {}, signal = AbortSignal.timeout(5_000), base = server.url } = {}) {
  return fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
}

/** POSTs a streaming request and reads everything: events, parsed chunks, [DONE]. */
async function streamOf(body, opts) {
  const res = await post({ messages: [{ role: 'user', content: 'hi' }], stream: true, ...body }, opts);
  const { text, error } = await readAll(res);
  const events = parseEvents(text);
  const data = events.map((e) => e.data);
  const chunks = data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d));
  return { res, text, error, events, data, chunks, done: data.at(-1) === '[DONE]' };
}

const deltasOf = (chunks) => chunks.filter((c) => c.choices.length).map((c) => c.choices[0].delta);
const contentOf = (chunks) => deltasOf(chunks).map((d) => d.content ?? '').join('');
const finishOf = (chunks) => chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean);

/** Reassembles streamed tool calls by index; also returns the order of indices seen. */
function toolCallsOf(chunks) {
  const calls = [];
  const order = [];
  for (const delta of deltasOf(chunks)) {
    for (const piece of delta.tool_calls ?? []) {
      order.push(piece.index);
      const call = (calls[piece.index] ??= { id: undefined, name: '', args: '', pieces: 0 });
      call.pieces++;
      if (piece.id) {
        assert.equal(piece.type, 'function');
        call.id = piece.id;
      }
      call.name += piece.function?.name ?? '';
      call.args += piece.function?.arguments ?? '';
    }
  }
  return { calls, order };
}

describe('model server: text streams', () => {
  it('text:<words> streams word deltas in OpenAI chunk shape, then finish and [DONE]', T, async () => {
    const { res, chunks, done, data } = await streamOf({ model: 'text:Hello there world' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.ok(done, 'ends with [DONE]');
    assert.equal(data.filter((d) => d === '[DONE]').length, 1);
    const [first] = chunks;
    assert.match(first.id, /^chatcmpl-/);
    for (const chunk of chunks) {
      assert.equal(chunk.id, first.id);
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.ok(Number.isInteger(chunk.created));
      assert.equal(chunk.model, 'text:Hello there world');
      assert.equal(chunk.choices.length, 1, 'no usage chunk without include_usage');
      assert.equal(chunk.choices[0].index, 0);
      assert.ok(!('usage' in chunk));
    }
    assert.deepEqual(first.choices[0], { index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null });
    assert.deepEqual(deltasOf(chunks).slice(1, -1), [{ content: 'Hello' }, { content: ' there' }, { content: ' world' }]);
    assert.deepEqual(chunks.at(-1).choices[0], { index: 0, delta: {}, finish_reason: 'stop' });
  });

  it('echo repeats the last user message (string or text parts); x-script beats model', T, async () => {
    const asString = await streamOf({
      model: 'echo',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'what is 2+2?' },
      ],
    });
    assert.equal(contentOf(asString.chunks), 'You said: what is 2+2?');
    assert.ok(deltasOf(asString.chunks).length >= 5, 'word-sized deltas');

    const asParts = await streamOf({ model: 'echo', messages: [{ role: 'user', content: [{ type: 'text', text: 'from parts' }] }] });
    assert.equal(contentOf(asParts.chunks), 'You said: from parts');

    const header = await streamOf({ model: 'text:not this' }, { headers: { 'x-script': 'echo' } });
    assert.equal(contentOf(header.chunks), 'You said: hi');
    assert.equal(header.chunks[0].model, 'text:not this', 'chunks carry the requested model');
    assert.equal(server.requests.at(-1).script, 'echo');
  });

  it('unknown model names answer like echo; provider prefixes are ignored', T, async () => {
    assert.equal(contentOf((await streamOf({ model: 'gpt-4.1-mini' })).chunks), 'You said: hi');
    assert.equal(contentOf((await streamOf({ model: 'openai/text:Hi there' })).chunks), 'Hi there');
  });

  it('include_usage adds one usage chunk with choices [] before [DONE], and usage: null elsewhere', T, async () => {
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me about the weather please.' }];
    const { chunks, done } = await streamOf({ model: 'text:One two three four', messages, stream_options: { include_usage: true } });
    assert.ok(done);
    const usageChunks = chunks.filter((c) => c.choices.length === 0);
    assert.equal(usageChunks.length, 1);
    assert.equal(chunks.at(-1), usageChunks[0], 'the usage chunk is last before [DONE]');
    for (const chunk of chunks.slice(0, -1)) assert.equal(chunk.usage, null);
    const { usage } = usageChunks[0];
    const chars = messages.reduce((n, m) => n + m.content.length, 0);
    assert.equal(usage.prompt_tokens, Math.ceil(chars / 4));
    assert.equal(usage.completion_tokens, 4);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    assert.deepEqual(usage.prompt_tokens_details, { cached_tokens: 0 });
    assert.deepEqual(usage.completion_tokens_details, { reasoning_tokens: 0 });
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
  });

  it('reasoning streams reasoning_content deltas before the text', T, async () => {
    const { chunks } = await streamOf({ model: 'reasoning', stream_options: { include_usage: true } });
    const deltas = deltasOf(chunks).slice(1, -1);
    const firstText = deltas.findIndex((d) => 'content' in d);
    const reasoning = deltas.filter((d) => 'reasoning_content' in d);
    assert.ok(reasoning.length >= 3);
    assert.ok(firstText > 0 && deltas.slice(0, firstText).every((d) => 'reasoning_content' in d));
    assert.ok(deltas.slice(firstText).every((d) => 'content' in d));
    assert.ok(contentOf(chunks).length > 0);
    assert.equal(chunks.at(-1).usage.completion_tokens_details.reasoning_tokens, reasoning.length);
  });

  it('length and content-filter finish with their reasons', T, async () => {
    const length = await streamOf({ model: 'length' });
    assert.ok(contentOf(length.chunks).length > 0);
    assert.deepEqual(finishOf(length.chunks), ['length']);
    const filtered = await streamOf({ model: 'content-filter' });
    assert.deepEqual(finishOf(filtered.chunks), ['content_filter']);
    assert.ok(filtered.done);
  });

  it('deltas:<N> streams exactly N deltas', T, async () => {
    const { chunks, done } = await streamOf({ model: 'deltas:20000' });
    assert.ok(done);
    const deltas = deltasOf(chunks).slice(1, -1);
    assert.equal(deltas.length, 20000);
    assert.equal(deltas[0].content, 'w0 ');
    assert.equal(deltas[19999].content, 'w19999 ');
  });

  it('slow:<ms> paces the deltas', T, async () => {
    const started = Date.now();
    const { chunks } = await streamOf({ model: 'slow:40', messages: [{ role: 'user', content: 'a b c' }] });
    assert.equal(contentOf(chunks), 'You said: a b c');
    assert.ok(Date.now() - started >= 4 * 40 * 0.8, 'five deltas 40 ms apart');
  });

  it('demo greets, and restates other questions, with reasoning first', T, async () => {
    const hello = await streamOf({ model: 'demo', messages: [{ role: 'user', content: 'hello!' }] });
    assert.match(contentOf(hello.chunks), /^Hello! I'm the offline demo model/);
    assert.ok(deltasOf(hello.chunks).some((d) => d.reasoning_content));
    const question = await streamOf({ model: 'demo', messages: [{ role: 'user', content: 'What is WebAssembly?' }] });
    assert.match(contentOf(question.chunks), /^You asked: “What is WebAssembly\?” I'm the offline demo model/);
    assert.deepEqual(finishOf(question.chunks), ['stop']);
  });

  it('non-streaming requests get one chat.completion object', T, async () => {
    const res = await post({ model: 'echo', messages: [{ role: 'user', content: 'plain' }] });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^application\/json/);
    const body = await res.json();
    assert.equal(body.object, 'chat.completion');
    assert.deepEqual(body.choices[0].message, { role: 'assistant', content: 'You said: plain', refusal: null });
    assert.equal(body.choices[0].finish_reason, 'stop');
    assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);
  });
});

describe('model server: tool calls', () => {
  const tools = [
    {
      type: 'function',
      function: {
        name: 'lookup',
        parameters: {
          type: 'object',
          properties: { location: { type: 'string' }, days: { type: 'integer', minimum: 2 }, units: { enum: ['c', 'f'] } },
          required: ['location', 'days', 'units'],
        },
      },
    },
  ];

  it('tool-call streams one call whose arguments, split oddly, reassemble to JSON', T, async () => {
    const { chunks, done } = await streamOf({ model: 'tool-call' });
    assert.ok(done);
    const { calls } = toolCallsOf(chunks);
    assert.equal(calls.length, 1);
    assert.match(calls[0].id, /^call_/);
    assert.equal(calls[0].name, 'weather');
    assert.deepEqual(JSON.parse(calls[0].args), { city: 'Paris' });
    assert.ok(calls[0].pieces >= 4, 'arguments come in several fragments');
    const first = deltasOf(chunks).find((d) => d.tool_calls)?.tool_calls[0];
    assert.deepEqual(first.function, { name: 'weather', arguments: '' });
    assert.deepEqual(finishOf(chunks), ['tool_calls']);
  });

  it('tool calls are named after the first request tool, with arguments fitting its schema', T, async () => {
    const { chunks } = await streamOf({ model: 'tool-call', tools });
    const { calls } = toolCallsOf(chunks);
    assert.equal(calls[0].name, 'lookup');
    assert.deepEqual(JSON.parse(calls[0].args), { location: 'Paris', days: 3, units: 'c' });
  });

  it('tool-calls-parallel: two calls, one after the other', T, async () => {
    const { chunks } = await streamOf({ model: 'tool-calls-parallel' });
    const { calls, order } = toolCallsOf(chunks);
    assert.equal(calls.length, 2);
    assert.notEqual(calls[0].id, calls[1].id);
    assert.deepEqual(calls.map((c) => JSON.parse(c.args)), [{ city: 'Paris' }, { city: 'London' }]);
    assert.deepEqual(order, [...order].sort((a, b) => a - b), 'sequential by index');
    assert.deepEqual(finishOf(chunks), ['tool_calls']);
  });

  it('tool-calls-interleaved: fragments alternate between the calls and still reassemble', T, async () => {
    const { chunks } = await streamOf({ model: 'tool-calls-interleaved', tools });
    const { calls, order } = toolCallsOf(chunks);
    assert.equal(calls.length, 2);
    assert.ok(order.some((index, i) => i > 0 && index < order[i - 1]), 'indices go back and forth');
    for (const call of calls) {
      assert.equal(call.name, 'lookup');
      assert.equal(typeof JSON.parse(call.args).location, 'string');
    }
  });

  it('tool-call-one-chunk carries id, name and all arguments in one chunk', T, async () => {
    const { chunks } = await streamOf({ model: 'tool-call-one-chunk' });
    const { calls } = toolCallsOf(chunks);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].pieces, 1);
    assert.deepEqual(JSON.parse(calls[0].args), { city: 'Paris' });
  });

  it('tool-call-empty-array sends a chunk with tool_calls: [] and a normal call', T, async () => {
    const { chunks } = await streamOf({ model: 'tool-call-empty-array' });
    assert.ok(deltasOf(chunks).some((d) => Array.isArray(d.tool_calls) && d.tool_calls.length === 0));
    const { calls } = toolCallsOf(chunks);
    assert.equal(calls.length, 1);
    assert.deepEqual(JSON.parse(calls[0].args), { city: 'Paris' });
    assert.deepEqual(finishOf(chunks), ['tool_calls']);
  });

  it('tool-call-bad-json streams arguments that are not JSON', T, async () => {
    const { chunks } = await streamOf({ model: 'tool-call-bad-json' });
    const { calls } = toolCallsOf(chunks);
    assert.equal(calls.length, 1);
    assert.ok(calls[0].args.length > 5);
    assert.throws(() => JSON.parse(calls[0].args), SyntaxError);
    assert.deepEqual(finishOf(chunks), ['tool_calls']);
  });

  it('after a tool result every tool script answers with text quoting it', T, async () => {
    for (const model of ['tool-call', 'tool-calls-parallel', 'tool-call-bad-json']) {
      const messages = [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18°C and sunny' },
      ];
      const { chunks } = await streamOf({ model, messages });
      assert.equal(contentOf(chunks), 'The tool said: 18°C and sunny', model);
      assert.deepEqual(finishOf(chunks), ['stop']);
      assert.equal(toolCallsOf(chunks).calls.length, 0);
    }
  });
});

describe('model server: errors and misbehaviour', () => {
  it('error-<status> answers with the status and an OpenAI-style JSON error', T, async () => {
    for (const status of [400, 401, 429, 500, 503]) {
      const res = await post({ model: `error-${status}`, stream: true, messages: [] });
      assert.equal(res.status, status);
      assert.match(res.headers.get('content-type'), /^application\/json/);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      const body = await res.json();
      assert.equal(typeof body.error.message, 'string');
      assert.equal(typeof body.error.type, 'string');
      assert.ok('code' in body.error);
      if (status === 401) {
        assert.deepEqual(body, {
          error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' },
        });
      }
      assert.equal(res.headers.get('retry-after'), status === 429 ? '1' : null);
    }
  });

  it('error-429:<secs> sets Retry-After', T, async () => {
    const res = await post({ model: 'error-429:2', messages: [] });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '2');
    assert.equal((await res.json()).error.code, 'rate_limit_exceeded');
  });

  it('flaky:429:2 fails twice per x-test-id with Retry-After 0, then works', T, async () => {
    const send = (testId) => post({ model: 'flaky:429:2', stream: true, messages: [{ role: 'user', content: 'again' }] }, { headers: { 'x-test-id': testId } });
    for (let i = 0; i < 2; i++) {
      const res = await send('flaky-a');
      assert.equal(res.status, 429);
      assert.equal(res.headers.get('retry-after'), '0');
      await res.body.cancel();
    }
    const ok = await send('flaky-a');
    assert.equal(ok.status, 200);
    assert.equal(contentOf(parseEvents((await readAll(ok)).text).filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data))), 'You said: again');
    const other = await send('flaky-b');
    assert.equal(other.status, 429, 'another test id starts its own count');
    await other.body.cancel();
  });

  it('flaky:500:1 and flaky:reset:1 fail once, then work', T, async () => {
    const first = await post({ model: 'flaky:500:1', stream: true, messages: [] }, { headers: { 'x-test-id': 'flaky-500' } });
    assert.equal(first.status, 500);
    await first.body.cancel();
    assert.equal((await post({ model: 'flaky:500:1', stream: true, messages: [] }, { headers: { 'x-test-id': 'flaky-500' } })).status, 200);

    await assert.rejects(post({ model: 'flaky:reset:1', stream: true, messages: [] }, { headers: { 'x-test-id': 'flaky-reset' } }), TypeError);
    const after = await streamOf({ model: 'flaky:reset:1' }, { headers: { 'x-test-id': 'flaky-reset' } });
    assert.equal(after.res.status, 200);
    assert.ok(after.done);
  });

  it('malformed-json sends a `data: {not json` line between good ones', T, async () => {
    const res = await post({ model: 'malformed-json', stream: true, messages: [] });
    const { text } = await readAll(res);
    assert.ok(text.includes('\n\ndata: {not json\n\n'));
    const data = parseEvents(text).map((e) => e.data);
    const bad = data.indexOf('{not json');
    assert.ok(bad > 1, 'good deltas before it');
    const good = data.filter((d) => d !== '{not json' && d !== '[DONE]').map((d) => JSON.parse(d));
    assert.equal(contentOf(good), 'Good start and more');
    assert.ok(data.slice(bad + 1).some((d) => d.includes('"content"')), 'deltas after it');
    assert.equal(data.at(-1), '[DONE]');
  });

  it('cut ends the stream without a finish chunk or [DONE]', T, async () => {
    const index = server.requests.length;
    const { text, error, data, chunks } = await streamOf({ model: 'cut' });
    assert.ok(contentOf(chunks).length > 0, 'some deltas arrived first');
    assert.ok(!text.includes('[DONE]'));
    assert.deepEqual(finishOf(chunks), []);
    assert.ok(error, `the body read fails (${data.length} events)`);
    const record = server.requests[index];
    assert.equal(record.finished, false);
    assert.equal(record.closedByClient, false);
  });

  it('in-stream-error sends an error event, then [DONE], with status 200', T, async () => {
    const { res, data } = await streamOf({ model: 'in-stream-error' });
    assert.equal(res.status, 200);
    const errorEvent = data.map((d) => (d === '[DONE]' ? null : JSON.parse(d))).find((d) => d?.error);
    assert.deepEqual(errorEvent, { error: { message: 'The server had an error while processing your request', type: 'server_error' } });
    assert.equal(data.at(-1), '[DONE]');
  });

  it('stall: aborting the client sets closedByClient and waitForClose resolves', T, async () => {
    const index = server.requests.length;
    const controller = new AbortController();
    const res = await post({ model: 'stall', stream: true, messages: [] }, { signal: controller.signal });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    let text = '';
    while (!text.includes('Thinking')) text += new TextDecoder().decode((await reader.read()).value);
    assert.equal(server.requests[index].closedByClient, false);
    controller.abort();
    const record = await server.waitForClose(index, 3_000);
    assert.equal(record.closedByClient, true);
    assert.equal(record.finished, false);
    assert.equal(record.script, 'stall');
  });

  it('stall-headers: no headers arrive; aborting the fetch is seen as a client close', T, async () => {
    const index = server.requests.length;
    const controller = new AbortController();
    const pending = post({ model: 'stall-headers', stream: true, messages: [] }, { signal: controller.signal });
    await server.waitForRequests(index + 1, 3_000);
    const race = await Promise.race([pending.then(() => 'headers'), new Promise((r) => setTimeout(r, 100, 'nothing'))]);
    assert.equal(race, 'nothing');
    controller.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    await server.waitForClose(index, 3_000);
  });

  it('close() ends stalled streams at once and is not a client close', T, async () => {
    const own = await startModelServer();
    const res = await post({ model: 'stall', stream: true, messages: [] }, { base: own.url });
    const reader = res.body.getReader();
    await reader.read();
    const started = Date.now();
    await own.close();
    assert.ok(Date.now() - started < 1_000);
    const outcome = await (async () => {
      try {
        for (;;) if ((await reader.read()).done) return 'ended cleanly';
      } catch {
        return 'broken';
      }
    })();
    assert.equal(outcome, 'broken', 'the client sees the stream break, not a normal end');
    assert.equal(own.requests[0].closedByClient, false);
    assert.equal(own.requests[0].finished, false);
  });

  it('waitForRequests and waitForClose reject on timeout', T, async () => {
    await assert.rejects(server.waitForRequests(10_000, 50), /timed out/);
    await assert.rejects(server.waitForClose(10_000, 50), /timed out/);
  });
});

describe('model server: replay', () => {
  it('replay:openai--openai-text reproduces the fixture lines, then [DONE]', T, async () => {
    const lines = (await readFile(path.join(FIXTURES, 'openai--openai-text.chunks.txt'), 'utf8')).split('\n').filter((l) => l.trim());
    const { res, events, data } = await streamOf({ model: 'replay:openai--openai-text' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.deepEqual(data.slice(0, -1), lines);
    assert.equal(data.at(-1), '[DONE]');
    assert.ok(events.every((e) => e.event === undefined));
  });

  it('anthropic fixtures get `event: <type>` lines and no [DONE]', T, async () => {
    const lines = (await readFile(path.join(FIXTURES, 'anthropic--anthropic-text.chunks.txt'), 'utf8')).split('\n').filter((l) => l.trim());
    const { events } = await streamOf({ model: 'replay:anthropic--anthropic-text' });
    assert.deepEqual(events.map((e) => e.data), lines);
    assert.deepEqual(events.map((e) => e.event), lines.map((l) => JSON.parse(l).type));
  });

  it('other formats are plain data lines without [DONE]; unknown fixtures are 404', T, async () => {
    const { data, events } = await streamOf({ model: 'replay:openai--openai-error.1' });
    assert.ok(data.length > 0 && !data.includes('[DONE]'));
    assert.ok(events.every((e) => e.event === undefined));
    const missing = await post({ model: 'replay:no-such-fixture', stream: true });
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'fixture_not_found');
  });
});

describe('model server: HTTP surface', () => {
  it('answers CORS preflights', T, async () => {
    const before = server.requests.length;
    const res = await fetch(`${server.url}/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:5173',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-script',
      },
      signal: AbortSignal.timeout(5_000),
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('access-control-allow-methods'), /POST/);
    assert.match(res.headers.get('access-control-allow-headers'), /\*/);
    assert.match(res.headers.get('access-control-allow-headers'), /authorization/i);
    assert.equal(server.requests.length, before, 'preflights are not recorded');
  });

  it('GET /v1/models lists the scripts and replayable fixtures', T, async () => {
    const res = await fetch(`${server.url}/models`, { signal: AbortSignal.timeout(5_000) });
    const { object, data } = await res.json();
    assert.equal(object, 'list');
    const ids = data.map((m) => m.id);
    for (const id of ['echo', 'text', 'deltas', 'demo', 'tool-call', 'flaky', 'stall', 'replay', 'replay:openai--openai-text']) {
      assert.ok(ids.includes(id), id);
    }
  });

  it('records requests, serves them at /__requests and clears them with /__reset', T, async () => {
    server.reset();
    const body = { model: 'text:recorded', stream: true, messages: [{ role: 'user', content: 'hi' }] };
    const { done } = await streamOf(body, { headers: { Authorization: 'Bearer sk-test', 'X-Test-Id': 'rec' } });
    assert.ok(done);
    await server.waitForRequests(1, 1_000);
    const local = server.requests[0];
    assert.equal(local.method, 'POST');
    assert.equal(local.path, '/v1/chat/completions');
    assert.equal(local.headers.authorization, 'Bearer sk-test');
    assert.equal(local.headers['x-test-id'], 'rec');
    assert.deepEqual(local.body, body);
    assert.equal(local.script, 'text:recorded');
    assert.equal(local.finished, true);
    assert.equal(local.closedByClient, false);
    assert.equal(typeof local.startedAt, 'number');

    const remote = await (await fetch(`${server.origin}/__requests`, { signal: AbortSignal.timeout(5_000) })).json();
    assert.deepEqual(remote, JSON.parse(JSON.stringify(server.requests)));

    const reset = await fetch(`${server.origin}/__reset`, { method: 'POST', signal: AbortSignal.timeout(5_000) });
    assert.equal(reset.status, 200);
    assert.equal(server.requests.length, 0);
    assert.deepEqual(await (await fetch(`${server.origin}/__requests`, { signal: AbortSignal.timeout(5_000) })).json(), []);
  });

  it('unknown routes are 404 with a JSON error', T, async () => {
    const res = await fetch(`${server.url}/nope`, { signal: AbortSignal.timeout(5_000) });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.code, 'unknown_url');
  });

  it('runs as a CLI: prints its URL, serves, and exits on SIGTERM', T, async () => {
    const child = spawn(process.execPath, [path.join(HERE, 'model-server.mjs'), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      const line = await new Promise((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk) => {
          out += chunk;
          if (out.includes('\n')) resolve(out.split('\n')[0]);
        });
        child.on('exit', () => reject(new Error(`exited early: ${out}`)));
      });
      const match = /^model server listening on (http:\/\/127\.0\.0\.1:(\d+)) - base URL (\S+)$/.exec(line);
      assert.ok(match, line);
      assert.equal(match[3], `${match[1]}/v1`);
      const res = await post({ model: 'text:from the cli', stream: true, messages: [] }, { base: match[3] });
      assert.equal(contentOf(parseEvents((await readAll(res)).text).filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data))), 'from the cli');
      child.kill('SIGTERM');
      assert.deepEqual(await exited, { code: 0, signal: null });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
