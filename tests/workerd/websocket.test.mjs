// The Responses WebSocket transport in real workerd (through Miniflare): the Worker
// (websocket-worker.js) opens the socket with fetch and `Upgrade: websocket`, the Workers way,
// so the handshake carries the API key; the local model server answers `response.create`
// messages on /v1/responses.
//
//   ./x build && node --test tests/workerd/websocket.test.mjs

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { startModelServer } from '../server/model-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const PKG = path.join(ROOT, 'pkg');
const API_KEY = 'sk-websocket-worker-key';
const TEST_TIMEOUT = 30_000;

let server;
let mf;
let baseUrl;

before(
  async () => {
    for (const file of ['index.workerd.js', 'api.js', 'wasm_agent.js', 'wasm_agent_bg.wasm']) {
      if (!existsSync(path.join(PKG, file))) throw new Error(`pkg/${file} is missing: build the package first (./x build)`);
    }
    server = await startModelServer({ host: '127.0.0.1' });
    // The same setup as worker.test.mjs (see there for why each option is needed).
    mf = new Miniflare({
      log: new Log(LogLevel.WARN),
      host: '127.0.0.1',
      port: 0,
      modules: true,
      scriptPath: path.join(HERE, 'websocket-worker.js'),
      modulesRoot: ROOT,
      modulesRules: [
        { type: 'ESModule', include: ['**/*.js'] },
        { type: 'CompiledWasm', include: ['**/*.wasm'] },
      ],
      compatibilityDate: '2025-01-01',
      cf: false,
      bindings: { MODEL_URL: server.url, MODEL_API_KEY: API_KEY },
      outboundService: { network: { allow: ['public', 'local'], deny: [] } },
    });
    baseUrl = await mf.ready;
  },
  { timeout: TEST_TIMEOUT },
);

after(
  async () => {
    await mf?.dispose();
    await server?.close();
  },
  { timeout: TEST_TIMEOUT },
);

async function call(body) {
  const res = await fetch(baseUrl, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(TEST_TIMEOUT - 5_000) });
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
  const [r, c] = [server.requests.length, server.connections.length];
  const out = await call({ script: 'text:Hello from a socket in workerd' });
  assert.equal(out.error, null);
  assert.equal(out.text, 'Hello from a socket in workerd');
  assert.equal(out.types.at(-1), 'finish');
  assert.equal(out.transport, 'websocket');
  const [conn, ...more] = server.connections.slice(c);
  assert.equal(more.length, 0);
  assert.equal(conn.headers.authorization, `Bearer ${API_KEY}`, 'the key went with the handshake');
  const [record] = server.requests.slice(r);
  assert.equal(record.transport, 'websocket');
  assert.equal(record.body.stream, undefined);
  await until(() => conn.closed, 'the socket to close');
});

test('a two-step tool loop in workerd uses one socket for both responses', { timeout: TEST_TIMEOUT }, async () => {
  const c = server.connections.length;
  const out = await call({ script: 'tool-call', prompt: 'Weather in Paris?', tool: true });
  assert.equal(out.error, null);
  assert.deepEqual(out.types.filter((t) => ['tool-call', 'tool-result', 'finish'].includes(t)), ['tool-call', 'tool-result', 'finish']);
  assert.match(out.text, /The tool said/);
  const conns = server.connections.slice(c);
  assert.equal(conns.length, 1);
  assert.equal(conns[0].requests.length, 2);
});

test('closeOnFinish: false, then output.transport.close() closes the socket', { timeout: TEST_TIMEOUT }, async () => {
  const c = server.connections.length;
  const out = await call({ script: 'echo', closeOnFinish: false });
  assert.equal(out.text, 'You said: hi');
  const [conn] = server.connections.slice(c);
  await until(() => conn.closed, 'transport.close() to close the socket');
});

test('an API error over the socket is an error chunk with the API message', { timeout: TEST_TIMEOUT }, async () => {
  const out = await call({ script: 'in-stream-error' });
  assert.equal(out.types.at(-1), 'error');
  assert.match(out.error, /The server had an error while processing your request/);
});
