// wasm-agent/lite in real workerd (through Miniflare): its workerd entry imports the lite wasm as
// a compiled module, and an agent answers over Chat Completions and the Responses API through the
// Worker's own fetch; a left-out option is the same TypeError as in Node.
//
//   ./x build && node --test tests/workerd/lite.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useWorker } from './miniflare.mjs';

const worker = useWorker('lite-worker.js', (server) => ({ MODEL_URL: server.url }));

async function ask(body) {
  const res = await fetch(worker.baseUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  return res.json();
}

for (const api of ['chat', 'responses']) {
  test(`lite in workerd answers over ${api}`, { timeout: 30_000 }, async () => {
    assert.deepEqual(await ask({ prompt: 'from the edge', api }), { text: 'You said: from the edge' });
  });
}

test('lite in workerd refuses structuredOutput with a TypeError that says where to get it', { timeout: 30_000 }, async () => {
  const { error } = await ask({ prompt: 'x', structured: true });
  assert.equal(error.name, 'TypeError');
  assert.match(error.message, /^options\.structuredOutput: this build of wasm-agent leaves out structured output .*import 'wasm-agent' for it$/);
});
