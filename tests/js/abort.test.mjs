// Stopping a run: the caller's AbortSignal (before, during, after), cancelling fullStream or
// textStream, breaking out of `for await`. In each case the model request is closed (the server
// sees the client go away) and the user gets an `abort` chunk / finishReason 'abort' / onAbort.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import {
  Agent,
  T,
  collect,
  keys,
  modelFor,
  noUnhandledRejections,
  requestsOf,
  types,
  uid,
  useModelServer,
  waitForRequestsOf,
} from './helpers.mjs';

const server = useModelServer();

const LONG = 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen';

/** A fresh agent on `script` and callbacks that count; returns { agent, id, calls, options }. */
function setup(script, agentConfig = {}) {
  const srv = server.current;
  const id = uid('abort');
  const agent = new Agent({ id: 'aborter', model: modelFor(srv, script, { headers: { 'x-test-id': id } }), ...agentConfig });
  const calls = { abort: [], finish: [], error: [] };
  const options = {
    onAbort: (x) => calls.abort.push(x),
    onFinish: (x) => calls.finish.push(x),
    onError: (x) => calls.error.push(x),
  };
  return { agent, id, calls, options };
}

/** Waits until the server saw request `id` closed by the client. */
async function serverSawClose(id) {
  const srv = server.current;
  const [req] = await waitForRequestsOf(srv, id, 1, 3000);
  const rec = await srv.waitForClose(req.index, 3000);
  assert.equal(rec.closedByClient, true);
  assert.equal(rec.finished, false, 'the server had not finished the reply');
}

/** Reads `reader` until `pred(chunk)` is true; returns the chunks read. */
async function readUntil(reader, pred) {
  const chunks = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`stream ended before the awaited chunk (${types(chunks).join(',')})`);
    chunks.push(value);
    if (pred(value)) return chunks;
  }
}

async function readRest(reader) {
  const chunks = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

function assertAbortedCalls(calls) {
  assert.equal(calls.abort.length, 1, 'onAbort called once');
  assert.equal(calls.finish.length, 0, 'onFinish not called');
  assert.equal(calls.error.length, 0, 'onError not called');
}

test('abortSignal mid-stream: abort is the last chunk, finishReason "abort", onAbort once, server sees the close', T, async () => {
  const { agent, id, calls, options } = setup('slow:100');
  const ac = new AbortController();
  const out = await agent.stream(LONG, { ...options, abortSignal: ac.signal });
  const reader = out.fullStream.getReader();
  let deltas = 0;
  const before = await readUntil(reader, (c) => c.type === 'text-delta' && ++deltas === 2);
  ac.abort();
  const rest = await readRest(reader);
  const chunks = [...before, ...rest];
  assert.equal(chunks.at(-1).type, 'abort', `last chunk is abort (${types(chunks).join(',')})`);
  assert.equal(types(chunks).filter((t) => t === 'abort').length, 1);
  assert.ok(!types(chunks).includes('finish') && !types(chunks).includes('error'));
  assert.equal(types(chunks).at(-2), 'text-end', 'the open text block is closed first');
  const abortChunk = chunks.at(-1);
  assert.equal(abortChunk.runId, out.runId);
  assert.equal(abortChunk.from, 'AGENT');
  for (const k of keys(abortChunk.payload)) assert.equal(k, 'reason');
  assert.equal(await out.finishReason, 'abort');
  const streamed = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.ok(streamed.startsWith('You said:'));
  assert.equal(await out.text, streamed, 'text holds what was streamed before the abort');
  await serverSawClose(id);
  assertAbortedCalls(calls);
  assert.equal(calls.abort[0].finishReason, 'abort');
});

test('the abort reason given to AbortController.abort() is the abort chunk reason', T, async () => {
  const { agent, id, options } = setup('stall');
  const ac = new AbortController();
  const out = await agent.stream('hi', { ...options, abortSignal: ac.signal });
  const reader = out.fullStream.getReader();
  await readUntil(reader, (c) => c.type === 'text-delta');
  ac.abort('user left the page');
  const rest = await readRest(reader);
  assert.equal(rest.at(-1).type, 'abort');
  assert.equal(rest.at(-1).payload.reason, 'user left the page');
  await serverSawClose(id);
});

test('an already-aborted signal: abort chunk, finishReason "abort", onAbort once, no model request', T, async () => {
  const { agent, id, calls, options } = setup('echo');
  const out = await agent.stream('hi', { ...options, abortSignal: AbortSignal.abort() });
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.at(-1).type, 'abort');
  assert.ok(!types(chunks).some((t) => t.startsWith('text') || t === 'finish'));
  assert.equal(await out.finishReason, 'abort');
  assert.equal(await out.text, '');
  assertAbortedCalls(calls);
  await delay(100);
  assert.equal(requestsOf(server.current, id).length, 0, 'the model was not called');
});

test('abort while waiting for response headers (stall-headers): abort chunk, server sees the close', T, async () => {
  const { agent, id, calls, options } = setup('stall-headers');
  const ac = new AbortController();
  const out = await agent.stream('hi', { ...options, abortSignal: ac.signal });
  const chunksP = collect(out.fullStream);
  await waitForRequestsOf(server.current, id);
  ac.abort();
  const chunks = await chunksP;
  assert.deepEqual(types(chunks), ['start', 'step-start', 'abort']);
  assert.equal(await out.finishReason, 'abort');
  await serverSawClose(id);
  assertAbortedCalls(calls);
});

test('abort a stalled body (stall): the streamed text is kept, server sees the close', T, async () => {
  const { agent, id, calls, options } = setup('stall');
  const ac = new AbortController();
  const out = await agent.stream('hi', { ...options, abortSignal: ac.signal });
  const reader = out.fullStream.getReader();
  let deltas = 0;
  // The stall script sends three deltas, then nothing.
  await readUntil(reader, (c) => c.type === 'text-delta' && ++deltas === 3);
  ac.abort();
  const rest = await readRest(reader);
  assert.equal(rest.at(-1).type, 'abort');
  assert.equal(await out.text, 'Thinking about it');
  await serverSawClose(id);
  assertAbortedCalls(calls);
});

test('AbortSignal.timeout() stops a stalled run', T, async () => {
  const { agent, id, calls, options } = setup('stall-headers');
  const started = Date.now();
  const out = await agent.stream('hi', { ...options, abortSignal: AbortSignal.timeout(300) });
  const chunks = await collect(out.fullStream);
  assert.ok(Date.now() - started >= 250, 'not before the timeout');
  assert.equal(chunks.at(-1).type, 'abort');
  assert.equal(await out.finishReason, 'abort');
  await serverSawClose(id);
  assertAbortedCalls(calls);
});

test('abort when only awaiting text (no stream read): text resolves with the partial text', T, async () => {
  const { agent, id, calls, options } = setup('stall');
  const ac = new AbortController();
  let deltas = 0;
  let allArrived;
  const arrived = new Promise((resolve) => (allArrived = resolve));
  const out = await agent.stream('hi', {
    ...options,
    abortSignal: ac.signal,
    // The stall script sends three deltas, then nothing.
    onChunk: (c) => c.type === 'text-delta' && ++deltas === 3 && allArrived(),
  });
  await arrived;
  ac.abort();
  assert.equal(await out.text, 'Thinking about it');
  const full = await out.getFullOutput();
  assert.equal(full.finishReason, 'abort');
  assert.ok(!full.error);
  await serverSawClose(id);
  assertAbortedCalls(calls);
});

test('fullStream reader.cancel() mid-stream: server sees the close, onAbort once', T, async () => {
  const { agent, id, calls, options } = setup('slow:100');
  const out = await agent.stream(LONG, options);
  const reader = out.fullStream.getReader();
  await readUntil(reader, (c) => c.type === 'text-delta');
  await reader.cancel();
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
  await serverSawClose(id);
  assert.equal(await out.finishReason, 'abort');
  assertAbortedCalls(calls);
});

test('fullStream.cancel() on the stream itself (not locked) aborts the run too', T, async () => {
  const { agent, id, calls, options } = setup('slow:100');
  const out = await agent.stream(LONG, options);
  const stream = out.fullStream;
  await waitForRequestsOf(server.current, id);
  await delay(150);
  await stream.cancel('not interested');
  await serverSawClose(id);
  assert.equal(await out.finishReason, 'abort');
  assertAbortedCalls(calls);
});

test('cancelling textStream when only it was read: server sees the close, onAbort once', T, async () => {
  const { agent, id, calls, options } = setup('slow:100');
  const out = await agent.stream(LONG, options);
  const reader = out.textStream.getReader();
  const first = await reader.read();
  assert.equal(first.done, false);
  assert.equal(typeof first.value, 'string');
  await reader.cancel();
  await serverSawClose(id);
  assert.equal(await out.finishReason, 'abort');
  assertAbortedCalls(calls);
});

test('break out of for await over the output: the run is aborted, server sees the close', T, async () => {
  const { agent, id, calls, options } = setup('slow:100');
  const out = await agent.stream(LONG, options);
  for await (const chunk of out) {
    if (chunk.type === 'text-delta') break;
  }
  await serverSawClose(id);
  assert.equal(await out.finishReason, 'abort');
  assertAbortedCalls(calls);
});

test('cancelling fullStream while textStream is still read keeps the run going', T, async () => {
  const { agent, calls, options } = setup('slow:20');
  const out = await agent.stream('one two three four', options);
  const full = out.fullStream.getReader();
  const textP = collect(out.textStream);
  await readUntil(full, (c) => c.type === 'text-delta');
  await full.cancel();
  assert.equal((await textP).join(''), 'You said: one two three four');
  assert.equal(await out.finishReason, 'stop');
  assert.equal(calls.abort.length, 0);
  assert.equal(calls.finish.length, 1);
});

test('aborting after the run finished changes nothing', T, async () => {
  const { agent, calls, options } = setup('echo');
  const ac = new AbortController();
  const out = await agent.stream('hi', { ...options, abortSignal: ac.signal });
  const chunks = await collect(out.fullStream);
  ac.abort();
  await delay(50);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(await out.finishReason, 'stop');
  assert.equal(calls.abort.length, 0);
  assert.equal(calls.finish.length, 1);
});

test('abort during the wait before a retry: abort chunk at once, no second request', T, async () => {
  const { agent, id, calls, options } = setup('error-429:20', { maxRetries: 2 });
  const ac = new AbortController();
  const out = await agent.stream('hi', { ...options, abortSignal: ac.signal });
  const chunksP = collect(out.fullStream);
  const [req] = await waitForRequestsOf(server.current, id);
  while (!req.finished) await delay(5);
  await delay(100);
  const abortedAt = Date.now();
  ac.abort();
  const chunks = await chunksP;
  assert.ok(Date.now() - abortedAt < 5000, 'did not sit out the 20 s Retry-After');
  assert.equal(chunks.at(-1).type, 'abort');
  assert.equal(await out.finishReason, 'abort');
  assert.equal(requestsOf(server.current, id).length, 1);
  assertAbortedCalls(calls);
});

test('an abortSignal in defaultOptions is used when the call has none', T, async () => {
  const ac = new AbortController();
  const id = uid('default-signal');
  let aborts = 0;
  const agent = new Agent({
    id: 'default-signal',
    model: modelFor(server.current, 'stall-headers', { headers: { 'x-test-id': id } }),
    defaultOptions: { abortSignal: ac.signal, onAbort: () => aborts++ },
  });
  const out = await agent.stream('hi');
  await waitForRequestsOf(server.current, id);
  ac.abort();
  assert.equal(await out.finishReason, 'abort');
  await serverSawClose(id);
  assert.equal(aborts, 1);
});

test('abort while a never-settling onStepFinish is awaited: the stream ends with abort, the promises settle', T, async () => {
  const { agent, calls, options } = setup('echo');
  const ac = new AbortController();
  let stepsSeen = 0;
  const onStepFinish = () => {
    stepsSeen++;
    return new Promise(() => {});
  };
  const out = await agent.stream('hi', { ...options, onStepFinish, abortSignal: ac.signal });
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'step-finish');
  await delay(30);
  assert.equal(stepsSeen, 1);
  ac.abort();
  chunks.push(...(await readRest(reader)));
  assert.equal(chunks.at(-1).type, 'abort');
  assert.equal(await out.finishReason, 'abort');
  assert.equal(await out.text, 'You said: hi', 'the complete step is kept');
  assertAbortedCalls(calls);
});

test('abort while a never-settling onFinish is awaited: the stream ends with abort, the promises settle', T, async () => {
  const ac = new AbortController();
  const agent = new Agent({ id: 'stuck-finish', model: modelFor(server.current, 'echo') });
  let finished = 0;
  const onFinish = () => {
    finished++;
    return new Promise(() => {});
  };
  const out = await agent.stream('hi', { onFinish, abortSignal: ac.signal });
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'finish');
  await delay(30);
  assert.equal(finished, 1);
  ac.abort();
  chunks.push(...(await readRest(reader)));
  assert.deepEqual(types(chunks).slice(-2), ['finish', 'abort']);
  assert.equal(await out.text, 'You said: hi');
  assert.equal(await out.finishReason, 'stop', 'the reply had finished; the abort only ended the wait for onFinish');
});

noUnhandledRejections();
