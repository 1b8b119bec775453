// The Responses WebSocket transport through the package in Node (providerOptions.openai.transport).
// Node 20 has no global WebSocket: 'auto' streams over HTTP and 'websocket' fails saying why.
// The rest of the file installs the `ws` package's client as the global WebSocket: like a page's,
// it takes no headers, so those tests reach the local model server's socket (/v1/responses) with
// a key-less model, as a page reaches a proxy that adds the key. workerd (fetch upgrade, with
// headers) and Chromium have their own tests.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { WebSocket as WsClient } from 'ws';
import { Agent, T, collect, noUnhandledRejections, types, useModelServer } from './helpers.mjs';
import { createTool, weatherDef } from './tools-helpers.mjs';

const server = useModelServer();
const NATIVE_WEBSOCKET = globalThis.WebSocket;

/** An agent on the local server's Responses API; no key unless `apiKey` is given. */
function agent(script, { apiKey, ...config } = {}) {
  const model = { id: `openai/${script}`, url: server.current.url, api: 'responses' };
  if (apiKey) model.apiKey = apiKey;
  return new Agent({ id: 'ws-agent', model, maxRetries: 0, ...config });
}

const socketOptions = (transport, websocket) => ({ providerOptions: { openai: { transport, ...(websocket ? { websocket } : {}) } } });

async function until(check, what, ms = 3000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(5);
  }
}

/** Records and connections made from now on. */
function since() {
  const s = server.current;
  const [r, c] = [s.requests.length, s.connections.length];
  return { requests: () => s.requests.slice(r), connections: () => s.connections.slice(c) };
}

test('Node 20 has no WebSocket: auto streams over HTTP, websocket fails naming the way out', T, async () => {
  assert.equal(NATIVE_WEBSOCKET, undefined, 'this test is about a runtime without WebSocket');
  const seen = since();
  const out = await agent('text:Over HTTP').stream('hi', socketOptions('auto'));
  assert.equal(await out.text, 'Over HTTP');
  assert.equal(out.transport?.type, 'websocket', 'the transport the call asked for is there');
  const [http] = seen.requests();
  assert.equal(http.path, '/v1/responses');
  assert.equal(http.transport, undefined, 'a plain POST');
  assert.equal(http.body.transport, undefined, 'the transport options are not sent to the model');
  assert.equal(http.body.websocket, undefined);
  assert.equal(seen.connections().length, 0);

  const failed = await agent('text:never').stream('hi', socketOptions('websocket'));
  const chunks = await collect(failed.fullStream);
  assert.deepEqual(types(chunks), ['start', 'step-start', 'error']);
  assert.match(chunks.at(-1).payload.error.message, /This runtime has no WebSocket .*use transport 'auto'/);
  assert.equal(seen.requests().length, 1, 'nothing more was sent');
});

test('bad transport options are TypeErrors that name the field', T, async () => {
  const a = agent('echo');
  await assert.rejects(a.stream('hi', socketOptions('sse')), /options\.providerOptions\.openai\.transport: expected 'websocket', 'fetch' or 'auto', got 'sse'/);
  await assert.rejects(a.stream('hi', socketOptions('websocket', { closeOnFinish: 1 })), /openai\.websocket\.closeOnFinish: expected true or false/);
  const chat = new Agent({ id: 'chat', model: { id: 'openai/echo', url: server.current.url, api: 'chat' } });
  await assert.rejects(chat.stream('hi', socketOptions('websocket')), /Responses API only/);
  const plain = await chat.stream('hi', socketOptions('auto'));
  assert.equal(await plain.text, 'You said: hi', "'auto' on Chat Completions is plain HTTP");
  assert.equal(plain.transport, undefined);
});

test('with a WebSocket: the reply streams as response.create on one socket, closed when the run ends', T, async () => {
  globalThis.WebSocket = WsClient;
  const seen = since();
  const out = await agent('text:Hello over the socket').stream('hi', socketOptions('websocket'));
  const chunks = await collect(out.fullStream);
  assert.deepEqual(types(chunks).filter((t) => t.startsWith('text')), ['text-start', 'text-delta', 'text-delta', 'text-delta', 'text-delta', 'text-end']);
  assert.equal(await out.text, 'Hello over the socket');
  assert.equal(await out.finishReason, 'stop');
  assert.ok((await out.usage).totalTokens > 0);
  const [conn] = seen.connections();
  assert.equal(conn.path, '/v1/responses');
  const [record] = seen.requests();
  assert.equal(record.transport, 'websocket');
  assert.equal(record.connection, conn.index);
  assert.equal(record.body.model, 'text:Hello over the socket');
  assert.equal(record.body.stream, undefined, 'stream is implied on a socket and not sent');
  assert.deepEqual(record.body.input, [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }]);
  await until(() => conn.closed, 'the socket to close (closeOnFinish defaults to true)');
  assert.equal(conn.closedByClient, true);
});

test('a two-step tool loop goes on the same socket; the second response.create carries the result', T, async () => {
  globalThis.WebSocket = WsClient;
  const seen = since();
  const weather = createTool(weatherDef());
  const out = await agent('tool-call', { tools: { weather } }).stream('Weather in Paris?', socketOptions('websocket'));
  const chunks = await collect(out.fullStream);
  assert.deepEqual(types(chunks).filter((t) => t === 'tool-call' || t === 'tool-result' || t === 'finish'), ['tool-call', 'tool-result', 'finish']);
  const [conn, ...more] = seen.connections();
  assert.equal(more.length, 0, 'one socket for both steps');
  assert.equal(conn.requests.length, 2);
  const [, second] = seen.requests();
  const output = second.body.input.find((i) => i.type === 'function_call_output');
  assert.equal(output.call_id, chunks.find((c) => c.type === 'tool-call').payload.toolCallId);
  assert.match(await out.text, /The tool said/);
});

test('closeOnFinish: false keeps the socket for the next stream, until output.transport.close()', T, async () => {
  globalThis.WebSocket = WsClient;
  const seen = since();
  const a = agent('echo');
  const options = socketOptions('websocket', { closeOnFinish: false });
  const first = await a.stream('one', options);
  assert.equal(await first.text, 'You said: one');
  const second = await a.stream('two', options);
  assert.equal(await second.text, 'You said: two');
  const conns = seen.connections();
  assert.equal(conns.length, 1, 'the second call reused the open socket');
  assert.equal(conns[0].requests.length, 2);
  await delay(50);
  assert.equal(conns[0].closed, false, 'still open after both runs');
  second.transport.close();
  await until(() => conns[0].closed, 'transport.close() to close the socket');
});

test('a busy socket: a follow-up with previous_response_id is refused, any other call opens its own socket', T, async () => {
  globalThis.WebSocket = WsClient;
  const seen = since();
  const keep = { closeOnFinish: false };
  const slow = await agent('slow:60').stream('one two three four five', socketOptions('websocket', keep));
  await until(() => seen.requests().length === 1, 'the slow reply to start');
  const followUp = await agent('echo').stream('next', {
    providerOptions: { openai: { transport: 'websocket', websocket: keep, previousResponseId: 'resp_earlier' } },
  });
  const chunks = await collect(followUp.fullStream);
  assert.equal(chunks.at(-1).type, 'error');
  assert.match(chunks.at(-1).payload.error.message, /still streaming on this WebSocket.*previous_response_id/);
  const other = await agent('echo').stream('other', socketOptions('websocket', keep));
  assert.equal(await other.text, 'You said: other');
  assert.equal(await slow.text, 'You said: one two three four five');
  assert.equal(seen.connections().length, 2, 'the other call opened a second socket');
  slow.transport.close();
  other.transport.close();
  await until(() => seen.connections().every((c) => c.closed), 'both sockets to close');
});

test('stopping a run mid-response closes its socket (the server sees the close)', T, async () => {
  globalThis.WebSocket = WsClient;
  const seen = since();
  const controller = new AbortController();
  const out = await agent('stall').stream('hi', { ...socketOptions('websocket', { closeOnFinish: false }), abortSignal: controller.signal });
  const reader = out.fullStream.getReader();
  for (;;) {
    const { value } = await reader.read();
    if (value.type === 'text-delta') break;
  }
  controller.abort();
  for (;;) if ((await reader.read()).done) break;
  assert.equal(await out.finishReason, 'abort');
  const [conn] = seen.connections();
  await until(() => conn.closed, 'the stalled socket to close');
  assert.equal(conn.closedByClient, true);
});

test('a WebSocket that takes no headers cannot carry an API key: websocket says so, auto goes over HTTP', T, async () => {
  globalThis.WebSocket = WsClient;
  const seen = since();
  const refused = await agent('echo', { apiKey: 'sk-secret-key' }).stream('hi', socketOptions('websocket'));
  const chunks = await collect(refused.fullStream);
  const { message } = chunks.at(-1).payload.error;
  assert.match(message, /cannot send headers \(authorization\).*websocket\.url.*transport 'fetch'/);
  assert.ok(!message.includes('sk-secret-key'));
  const fallback = await agent('echo', { apiKey: 'sk-secret-key' }).stream('hi', socketOptions('auto'));
  assert.equal(await fallback.text, 'You said: hi');
  const [http] = seen.requests();
  assert.equal(http.transport, undefined);
  assert.equal(http.headers.authorization, 'Bearer sk-secret-key');
  assert.equal(seen.connections().length, 0);
});

test('a socket that cannot be opened: auto falls back to HTTP, websocket reports it', T, async () => {
  globalThis.WebSocket = WsClient;
  const nowhere = { url: 'ws://127.0.0.1:9/v1/responses' };
  const seen = since();
  const out = await agent('text:fallback').stream('hi', socketOptions('auto', nowhere));
  assert.equal(await out.text, 'fallback');
  assert.equal(seen.requests().length, 1);
  const failed = await agent('text:x').stream('hi', socketOptions('websocket', nowhere));
  const chunks = await collect(failed.fullStream);
  assert.match(chunks.at(-1).payload.error.message, /Could not open a WebSocket to ws:\/\/127\.0\.0\.1:9\/v1\/responses/);
});

test('a server that takes the connection and never answers the handshake: auto goes over HTTP after 10 s', { timeout: 30_000 }, async () => {
  globalThis.WebSocket = WsClient;
  const sockets = new Set();
  const silent = net.createServer((socket) => sockets.add(socket)); // reads the handshake, says nothing
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const url = `ws://127.0.0.1:${silent.address().port}/v1/responses`;
    const seen = since();
    const started = Date.now();
    const out = await agent('text:after the wait').stream('hi', socketOptions('auto', { url }));
    assert.equal(await out.text, 'after the wait');
    const waited = Date.now() - started;
    assert.ok(waited >= 9_500 && waited < 20_000, `waited ${waited} ms`);
    assert.equal(seen.requests().length, 1, 'then one HTTP request');
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

noUnhandledRejections();
