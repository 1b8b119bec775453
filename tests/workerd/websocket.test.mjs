// The Responses WebSocket transport in real workerd (through Miniflare): the Worker
// (websocket-worker.js) opens the socket with fetch and `Upgrade: websocket`, the Workers way,
// so the handshake carries the API key; the local model server answers `response.create`
// messages on /v1/responses.
//
//   ./x build && node --test tests/workerd/websocket.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { useWorker } from './miniflare.mjs';

const API_KEY = 'sk-websocket-worker-key';
const TEST_TIMEOUT = 30_000;

const worker = useWorker('websocket-worker.js', (server) => ({ MODEL_URL: server.url, MODEL_API_KEY: API_KEY }));

async function call(body) {
  const res = await fetch(worker.baseUrl, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(TEST_TIMEOUT - 5_000) });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

async function until(check, what, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}

test('a reply streams over a WebSocket whose handshake carries the key; the socket closes after the run', { timeout: TEST_TIMEOUT }, async () => {
  const [r, c] = [worker.server.requests.length, worker.server.connections.length];
  const out = await call({ script: 'text:Hello from a socket in workerd' });
  assert.equal(out.error, null);
  assert.equal(out.text, 'Hello from a socket in workerd');
  assert.equal(out.types.at(-1), 'finish');
  assert.equal(out.transport, 'websocket');
  const [conn, ...more] = worker.server.connections.slice(c);
  assert.equal(more.length, 0);
  assert.equal(conn.headers.authorization, `Bearer ${API_KEY}`, 'the key went with the handshake');
  const [record] = worker.server.requests.slice(r);
  assert.equal(record.transport, 'websocket');
  assert.equal(record.body.stream, undefined);
  await until(() => conn.closed, 'the socket to close');
});

test('a two-step tool loop in workerd uses one socket for both responses', { timeout: TEST_TIMEOUT }, async () => {
  const c = worker.server.connections.length;
  const out = await call({ script: 'tool-call', prompt: 'Weather in Paris?', tool: true });
  assert.equal(out.error, null);
  assert.deepEqual(out.types.filter((t) => ['tool-call', 'tool-result', 'finish'].includes(t)), ['tool-call', 'tool-result', 'finish']);
  assert.match(out.text, /The tool said/);
  const conns = worker.server.connections.slice(c);
  assert.equal(conns.length, 1);
  assert.equal(conns[0].requests.length, 2);
});

test('closeOnFinish: false, then output.transport.close() closes the socket', { timeout: TEST_TIMEOUT }, async () => {
  const c = worker.server.connections.length;
  const out = await call({ script: 'echo', closeOnFinish: false });
  assert.equal(out.text, 'You said: hi');
  const [conn] = worker.server.connections.slice(c);
  await until(() => conn.closed, 'transport.close() to close the socket');
});

test('an API error over the socket is an error chunk with the API message', { timeout: TEST_TIMEOUT }, async () => {
  const out = await call({ script: 'in-stream-error' });
  assert.equal(out.types.at(-1), 'error');
  assert.match(out.error, /The server had an error while processing your request/);
});

test('a refused handshake: websocket reports the status, auto streams over HTTP instead', { timeout: TEST_TIMEOUT }, async () => {
  const nowhere = `${worker.server.url.replace('http', 'ws')}/not-a-socket`;
  const refused = await call({ script: 'echo', url: nowhere });
  assert.equal(refused.types.at(-1), 'error');
  assert.match(refused.error, /refused the WebSocket at ws:\/\/127\.0\.0\.1:\d+\/v1\/not-a-socket with status 404/);
  const before = worker.server.requests.length;
  const fallback = await call({ script: 'echo', url: nowhere, transport: 'auto' });
  assert.equal(fallback.text, 'You said: hi');
  const [http] = worker.server.requests.slice(before);
  assert.equal(http.transport, undefined, 'a plain POST');
  assert.equal(http.path, '/v1/responses');
});

test('a handshake that never gets an answer: auto goes over HTTP after 10 s', { timeout: TEST_TIMEOUT }, async () => {
  const sockets = new Set();
  const silent = net.createServer((socket) => sockets.add(socket));
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const before = worker.server.requests.length;
    const started = Date.now();
    const out = await call({ script: 'echo', url: `ws://127.0.0.1:${silent.address().port}/v1/responses`, transport: 'auto' });
    assert.equal(out.text, 'You said: hi');
    const waited = Date.now() - started;
    assert.ok(waited >= 9_500 && waited < 20_000, `waited ${waited} ms`);
    assert.equal(worker.server.requests.length, before + 1);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test('azure/ over a WebSocket: providerOptions.azure sets the transport, the key goes in api-key', { timeout: TEST_TIMEOUT }, async () => {
  const c = worker.server.connections.length;
  const out = await call({ script: 'text:Hello from Azure', provider: 'azure' });
  assert.equal(out.error, null);
  assert.equal(out.text, 'Hello from Azure');
  const [conn] = worker.server.connections.slice(c);
  assert.equal(conn.headers['api-key'], API_KEY);
  assert.equal(conn.headers.authorization, undefined);
});
