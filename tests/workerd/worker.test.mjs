// The package in real workerd (through Miniflare): a module Worker (worker.js) imports the built
// package's workerd entry (pkg/index.workerd.js, which imports the .wasm as a compiled module and
// initSyncs it), builds an Agent from env and streams its fullStream back as SSE. The Worker's own
// global fetch (inside the wasm) calls the local model server for real — nothing is stubbed.
//
//   ./x build && node --test tests/workerd/

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useWorker } from './miniflare.mjs';

const API_KEY = 'sk-workerd-test-key';

const TEST_TIMEOUT = 30_000;

const worker = useWorker('worker.js', (server) => ({ MODEL_URL: worker.server.url, MODEL_API_KEY: API_KEY }));

/**
 * POSTs to the Worker over real HTTP and reads its SSE body incrementally. Returns every event
 * with its arrival time (ms since the request was sent) and the read in which it arrived.
 */
async function streamFromWorker(body, { signal } = {}) {
  const t0 = performance.now();
  const res = await fetch(worker.baseUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  const headersAt = performance.now() - t0;
  assert.equal(res.status, 200, `worker answered ${res.status}: ${res.status === 200 ? '' : await res.text()}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);

  const events = [];
  let done = false;
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  let buffer = '';
  let reads = 0;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    reads++;
    const at = performance.now() - t0;
    buffer += decoder.decode(value, { stream: true });
    let sep;
    while ((sep = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, sep);
      buffer = buffer.slice(sep + 2);
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data === '') continue;
      assert.equal(done, false, 'an event after [DONE]');
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      events.push({ chunk: JSON.parse(data), at, read: reads });
    }
  }
  const endAt = performance.now() - t0;
  assert.equal(buffer.trim(), '', 'the SSE body ends with a complete event');
  assert.ok(done, 'the SSE body ends with data: [DONE]');
  return { events, headersAt, endAt, reads };
}

/** Collapses runs of text-delta into one entry: start, step-start, text-start, text-delta…, … */
function collapsedTypes(events) {
  const types = [];
  for (const { chunk } of events) {
    if (chunk.type === 'text-delta' && types.at(-1) === 'text-delta…') continue;
    types.push(chunk.type === 'text-delta' ? 'text-delta…' : chunk.type);
  }
  return types;
}

test(
  'slow script: chunks stream out of the Worker incrementally, in order, with the right text',
  { timeout: TEST_TIMEOUT },
  async (t) => {
    const INTERVAL = 150;
    const prompt = 'one two three four five six'; // echo → "You said: one two three four five six" = 8 word deltas
    const expected = `You said: ${prompt}`;
    const firstRequest = worker.server.requests.length;

    const { events, headersAt, endAt, reads } = await streamFromWorker(
      { prompt, script: `slow:${INTERVAL}` },
      { signal: AbortSignal.timeout(TEST_TIMEOUT - 2_000) },
    );

    // The wasm's global fetch really reached the model server, with the key from env.
    assert.equal(worker.server.requests.length, firstRequest + 1, 'one model request');
    const request = worker.server.requests[firstRequest];
    assert.equal(request.path, '/v1/chat/completions');
    assert.equal(request.scriptName, 'slow');
    assert.equal(request.headers.authorization, `Bearer ${API_KEY}`);
    assert.equal(request.body.stream, true);

    // Order: start, step-start, text-start, text-delta…, text-end, step-finish, finish.
    assert.deepEqual(collapsedTypes(events), [
      'start',
      'step-start',
      'text-start',
      'text-delta…',
      'text-end',
      'step-finish',
      'finish',
    ]);
    const chunks = events.map((e) => e.chunk);
    const runId = chunks[0].runId;
    assert.equal(typeof runId, 'string');
    assert.ok(runId.length > 0);
    for (const chunk of chunks) {
      assert.equal(chunk.runId, runId, `${chunk.type} carries the run id`);
      assert.equal(chunk.from, 'AGENT', `${chunk.type} comes from AGENT`);
      assert.equal(typeof chunk.payload, 'object');
    }

    // Text: exactly what the script sent, delta by delta.
    const deltas = events.filter((e) => e.chunk.type === 'text-delta');
    assert.equal(deltas.length, 8, 'one text-delta per word');
    assert.deepEqual(
      deltas.map((e) => e.chunk.payload.text),
      ['You', ' said:', ' one', ' two', ' three', ' four', ' five', ' six'],
    );
    assert.equal(deltas.map((e) => e.chunk.payload.text).join(''), expected);
    const textId = chunks.find((c) => c.type === 'text-start').payload.id;
    for (const d of deltas) assert.equal(d.chunk.payload.id, textId);
    assert.equal(chunks.find((c) => c.type === 'text-end').payload.id, textId);
    const finish = chunks.at(-1);
    assert.equal(finish.payload.stepResult.reason, 'stop');
    const stepFinish = chunks.find((c) => c.type === 'step-finish');
    assert.equal(stepFinish.payload.output.text, expected);

    // Incremental delivery. The server sends a delta every INTERVAL ms (and pauses once more
    // before finishing), so a body that streams shows the first delta ≈ 8 × INTERVAL before the
    // finish chunk; a buffered body would deliver them together. Lower bounds only: scheduling
    // delays can only shrink the gap by delaying the first delta, never widen it.
    const firstDelta = deltas[0].at;
    const lastDelta = deltas.at(-1).at;
    const finishAt = events.at(-1).at;
    assert.ok(
      finishAt - firstDelta >= 4 * INTERVAL,
      `first text-delta at ${firstDelta.toFixed(0)} ms, finish at ${finishAt.toFixed(0)} ms: not streamed`,
    );
    assert.ok(
      lastDelta - firstDelta >= 3 * INTERVAL,
      `first text-delta at ${firstDelta.toFixed(0)} ms, last at ${lastDelta.toFixed(0)} ms: not streamed`,
    );
    // And the deltas came in separate reads, not one big buffer at the end.
    const deltaReads = new Set(deltas.map((e) => e.read));
    assert.ok(deltaReads.size >= 3, `text-deltas arrived in only ${deltaReads.size} read(s)`);

    const startAt = events[0].at;
    t.diagnostic(
      `headers ${headersAt.toFixed(0)} ms, start chunk ${startAt.toFixed(0)} ms, first text-delta ` +
        `${firstDelta.toFixed(0)} ms, last text-delta ${lastDelta.toFixed(0)} ms, finish ` +
        `${finishAt.toFixed(0)} ms, body end ${endAt.toFixed(0)} ms; ${events.length} chunks in ${reads} reads; ` +
        `delta gaps ${deltas
          .slice(1)
          .map((d, i) => (d.at - deltas[i].at).toFixed(0))
          .join('/')} ms`,
    );
  },
);

test('a model without its key in a Worker: the error says to pass env.GROQ_API_KEY as apiKey', { timeout: TEST_TIMEOUT }, async () => {
  const res = await fetch(worker.baseUrl, { method: 'POST', body: JSON.stringify({ modelId: 'groq/llama-3.3-70b-versatile' }) });
  assert.equal(res.status, 500);
  const { error } = await res.json();
  assert.equal(error.name, 'TypeError');
  assert.equal(
    error.message,
    "config.model: no API key for 'groq': a Worker has no environment variables; pass the binding as `apiKey` with the model: { id: 'groq/llama-3.3-70b-versatile', apiKey: env.GROQ_API_KEY }",
  );
});

test('error-401: the Worker streams an error chunk (APICallError, status 401)', { timeout: TEST_TIMEOUT }, async () => {
  const firstRequest = worker.server.requests.length;
  const { events } = await streamFromWorker(
    { prompt: 'Hello', script: 'error-401' },
    { signal: AbortSignal.timeout(TEST_TIMEOUT - 2_000) },
  );

  assert.equal(worker.server.requests.length, firstRequest + 1, 'one model request (401 is not retried)');
  assert.equal(worker.server.requests[firstRequest].scriptName, 'error-401');

  const chunks = events.map((e) => e.chunk);
  assert.equal(chunks[0].type, 'start');
  assert.equal(chunks.at(-1).type, 'error', `the error ends the stream: ${chunks.map((c) => c.type).join(', ')}`);
  const errors = chunks.filter((c) => c.type === 'error');
  assert.equal(errors.length, 1, `one error chunk, got types ${chunks.map((c) => c.type).join(', ')}`);
  const { error } = errors[0].payload;
  assert.equal(error.name, 'APICallError');
  assert.equal(error.status, 401);
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  assert.equal(errors[0].from, 'AGENT');
  assert.ok(!chunks.some((c) => c.type === 'text-delta'), 'no text from a failed call');
  // The key never leaks into chunks.
  assert.ok(!JSON.stringify(chunks).includes(API_KEY), 'the API key does not appear in any chunk');
});
