// untilIdle with a background task in real workerd (through Miniflare): one POST to the Worker
// (until-idle-worker.js) streams the first turn (a `research` call, answered at once with a
// placeholder), the background task running inside the same request (a 300 ms setTimeout), and
// the continuation turn that answers its result — all in one SSE response. The Worker's global
// fetch calls the local model server (script `background:research`) for real.
//
//   ./x build && node --test tests/workerd/until-idle.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useWorker } from './miniflare.mjs';

const API_KEY = 'sk-until-idle-test-key';
const TEST_TIMEOUT = 30_000;
const DIRECTIVE = 'Background tasks you started earlier have finished';

const worker = useWorker('until-idle-worker.js', (server) => ({ MODEL_URL: server.url, MODEL_API_KEY: API_KEY }));

/** POSTs to the Worker and reads the whole SSE body: the chunks (before [DONE]). */
async function streamFromWorker(body) {
  const res = await fetch(worker.baseUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(TEST_TIMEOUT - 5_000),
  });
  assert.equal(res.status, 200, `worker answered ${res.status}: ${res.status === 200 ? '' : await res.text()}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const text = await res.text();
  const events = text.split('\n\n').filter((b) => b.startsWith('data: ')).map((b) => b.slice(6));
  assert.equal(events.at(-1), '[DONE]', 'the SSE body ends with data: [DONE]');
  return events.slice(0, -1).map((e) => JSON.parse(e));
}

const indexOf = (chunks, type, from = 0) => chunks.findIndex((c, i) => i >= from && c.type === type);
const wireText = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join(''));

test('untilIdle with a background task works inside one request', { timeout: TEST_TIMEOUT }, async () => {
  const first = worker.server.requests.length;
  const chunks = await streamFromWorker({ prompt: 'research solana', thread: 't-solana', resource: 'u1', ms: 300 });
  const types = chunks.map((c) => c.type);
  const summary = types.join(' ');

  assert.deepEqual(chunks.filter((c) => c.type === 'error'), [], `no error chunk: ${summary}`);
  assert.deepEqual(chunks.filter((c) => c.type === 'tool-error'), [], `no tool-error chunk: ${summary}`);

  // The first turn: the call, the task started, the placeholder acknowledged, a finish.
  const call = indexOf(chunks, 'tool-call');
  assert.notEqual(call, -1, `a tool-call: ${summary}`);
  assert.equal(chunks[call].payload?.toolName, 'research', JSON.stringify(chunks[call]));
  const started = indexOf(chunks, 'background-task-started', call);
  assert.notEqual(started, -1, `background-task-started after the tool-call: ${summary}`);
  const firstFinish = indexOf(chunks, 'finish', started);
  assert.notEqual(firstFinish, -1, `a first finish after background-task-started: ${summary}`);
  const firstText = chunks.slice(0, firstFinish).filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.match(firstText, /I started research in the background/, 'the first turn acknowledges the placeholder');

  // The task completes during the same request, then the continuation turn answers it.
  const completed = indexOf(chunks, 'background-task-completed', firstFinish);
  assert.notEqual(completed, -1, `background-task-completed after the first finish: ${summary}`);
  const delta = indexOf(chunks, 'text-delta', completed);
  assert.notEqual(delta, -1, `continuation text-deltas after background-task-completed: ${summary}`);
  const secondFinish = indexOf(chunks, 'finish', delta);
  assert.notEqual(secondFinish, -1, `a second finish after the continuation text: ${summary}`);
  assert.equal(types.filter((t) => t === 'finish').length, 2, `two finish chunks: ${summary}`);

  const continuation = chunks.slice(completed, secondFinish).filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.match(continuation, /The background task research finished/, continuation);
  assert.match(continuation, /solana is a fast blockchain \(researched in workerd\)/, 'the continuation mentions the result');

  // The model server saw three requests: the call, the step after the placeholder, the continuation.
  const requests = worker.server.requests.slice(first);
  assert.equal(requests.length, 3, `three model requests, got ${requests.length}`);
  const last = requests.at(-1).body.messages;
  assert.ok(
    last.some((m) => m.role === 'system' && wireText(m).includes(DIRECTIVE)),
    'the continuation request carries the untilIdle directive',
  );
  assert.ok(requests.every((r) => r.headers.authorization === `Bearer ${API_KEY}`));
});
