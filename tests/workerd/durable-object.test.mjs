// examples/worker (a chat Worker whose threads live in Durable Objects) in real workerd through
// Miniflare, with real Durable Object storage: the package's DurableObjectStore under Memory, the
// Worker's global fetch reaching the local model server. Nothing is stubbed.
//
//   ./x build && node --test tests/workerd/durable-object.test.mjs
//
// The example imports 'wasm-agent' and 'wasm-agent/durable-object-store' as a user's Worker
// does. Without a bundler, this test resolves the two names the way wrangler would: through
// pkg/package.json's `exports` (the `workerd` condition), rewriting them to paths into pkg/.
// The uploaded modules are listed explicitly, so the size printed is exactly what runs.
//
// The main module is a small entry written here: it re-exports the example's Worker and extends
// its Conversation class only to (1) count the records its storage's get/list return and the
// largest get/put/delete (Cloudflare allows 128 keys; local workerd does not check) and (2) add
// /debug routes (the adapter called directly, the raw keys of the object). Every route of the
// example itself is unchanged. Everything runs twice: on key-value and on SQLite-backed objects.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { DefaultChatTransport, readUIMessageStream } from 'ai';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { startModelServer } from '../server/model-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const PKG = path.join(ROOT, 'pkg');
const EXAMPLE = path.join(ROOT, 'examples/worker');
const API_KEY = 'sk-durable-object-test-key';
const FREE_PLAN_LIMIT = 3 * 1024 * 1024; // Workers Free: 3 MB after compression
const TEST_TIMEOUT = 30_000;
const CLOCK_TICKS = 100; // USER_HZ on Linux: /proc times are in 1/100 s

let server;
let mf;
let baseUrl;
/** Module name → its bytes, for every module the example uploads (the size figure). */
const uploaded = new Map();

/** The file a package specifier resolves to under the `workerd` condition, as a bundler does. */
function resolvePackage(specifier, pkgJson) {
  const sub = specifier === 'wasm-agent' ? '.' : `.${specifier.slice('wasm-agent'.length)}`;
  let target = pkgJson.exports?.[sub];
  if (target === undefined) throw new Error(`pkg/package.json has no export "${sub}" (for '${specifier}')`);
  while (typeof target === 'object') {
    const condition = ['workerd', 'worker', 'import', 'default'].find((c) => c in target);
    if (!condition) throw new Error(`no workerd/import/default condition for '${specifier}'`);
    target = target[condition];
  }
  return path.join(PKG, target);
}

/** The test's main module: the example's Worker, its Conversation counted and given /debug routes. */
const ENTRY = `
import worker, { Conversation as ExampleConversation } from './worker.js';
import { DurableObjectStore } from 'wasm-agent/durable-object-store';
import { Mastra, createStep, createWorkflow } from 'wasm-agent';

/** An approval workflow whose runs live in \`storage\`; a new Mastra each call, as after an eviction. */
function approvals(storage) {
  const obj = (properties) => ({ type: 'object', properties, required: Object.keys(properties) });
  const approve = createStep({
    id: 'approve',
    inputSchema: obj({ amount: { type: 'number' } }),
    resumeSchema: obj({ ok: { type: 'boolean' } }),
    execute: async ({ inputData, resumeData, suspend }) => (resumeData ? { paid: resumeData.ok ? inputData.amount : 0 } : suspend({ ask: 'pay?' })),
  });
  const workflow = createWorkflow({ id: 'do-approval', inputSchema: obj({ amount: { type: 'number' } }) }).then(approve).commit();
  return new Mastra({ workflows: { approval: workflow }, storage: new DurableObjectStore(storage) }).getWorkflow('approval');
}

export default worker;

/** Calls through to the real storage, counting the records get and list return. */
function counted(storage, reads) {
  return new Proxy(storage, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== 'function') return value;
      if (key === 'list') {
        return async (options) => {
          const found = await value.call(target, options);
          reads.list += found.size;
          reads.listCalls.push({ options: options ?? null, size: found.size });
          return found;
        };
      }
      if (key === 'get') {
        return async (keys, ...rest) => {
          reads.maxKeys.get = Math.max(reads.maxKeys.get, Array.isArray(keys) ? keys.length : 1);
          const found = await value.call(target, keys, ...rest);
          reads.get += Array.isArray(keys) ? found.size : found === undefined ? 0 : 1;
          return found;
        };
      }
      // Writes are passed on untouched (no await added: write coalescing still applies).
      if (key === 'put' || key === 'delete') {
        return (keys, ...rest) => {
          const n = Array.isArray(keys) ? keys.length : typeof keys === 'object' ? Object.keys(keys).length : 1;
          reads.maxKeys[key] = Math.max(reads.maxKeys[key], n);
          return value.call(target, keys, ...rest);
        };
      }
      return value.bind(target);
    },
  });
}

export class Conversation extends ExampleConversation {
  constructor(state, env) {
    const reads = { list: 0, get: 0, listCalls: [], maxKeys: { get: 0, put: 0, delete: 0 } };
    const storage = counted(state.storage, reads);
    super(new Proxy(state, { get: (t, k) => (k === 'storage' ? storage : Reflect.get(t, k)) }), env);
    this.raw = state.storage;
    this.reads = reads;
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (!url.pathname.startsWith('/debug/')) return super.fetch(request);
    const json = (v) => Response.json(v);
    try {
      switch (url.pathname) {
        // Every key in this object's storage.
        case '/debug/keys':
          return json([...(await this.raw.list()).keys()]);
        // What the counted storage returned so far; ?reset=1 starts again.
        case '/debug/reads': {
          const out = structuredClone(this.reads);
          if (url.searchParams.get('reset')) Object.assign(this.reads, { list: 0, get: 0, listCalls: [], maxKeys: { get: 0, put: 0, delete: 0 } });
          return json(out);
        }
        // memory.listMessages({ threadId, last }) through Memory (the wasm) and the adapter.
        case '/debug/last': {
          Object.assign(this.reads, { list: 0, get: 0, listCalls: [] });
          const last = url.searchParams.get('last');
          const messages = await this.memory.listMessages({
            threadId: url.searchParams.get('thread'),
            ...(last ? { last: Number(last) } : {}),
          });
          return json({ messages, reads: this.reads });
        }
        // A workflow run in this object's storage: ?do=start&amount=N, ?do=resume&run=ID, ?do=get&run=ID.
        case '/debug/workflow': {
          const wf = approvals(this.state.storage);
          const runId = url.searchParams.get('run') ?? undefined;
          const what = url.searchParams.get('do');
          if (what === 'start') {
            const run = await wf.createRun();
            const result = await run.start({ inputData: { amount: Number(url.searchParams.get('amount')) } });
            return json({ runId: run.runId, status: result.status, suspendPayload: result.suspendPayload });
          }
          if (what === 'resume') {
            const result = await (await wf.createRun({ runId })).resume({ step: 'approve', resumeData: { ok: true } });
            return json({ status: result.status, result: result.result });
          }
          const stored = await wf.getWorkflowRunById(runId);
          return json({ status: stored?.status ?? null, result: stored?.result ?? null, keys: [...(await this.raw.list({ prefix: 'wf' })).keys()] });
        }
        // The adapter called directly: POST { calls: [[method, args], ...] } → each result.
        case '/debug/adapter': {
          const store = new DurableObjectStore(this.state.storage);
          const results = [];
          for (const [method, args] of (await request.json()).calls) results.push((await store[method](args)) ?? null);
          return json(results);
        }
      }
    } catch (err) {
      return Response.json({ error: { name: err?.name, message: String(err?.message ?? err) } }, { status: 500 });
    }
    return new Response('no such debug route', { status: 404 });
  }
}
`;

function workerModules() {
  const pkgJson = JSON.parse(readFileSync(path.join(PKG, 'package.json'), 'utf8'));
  const rewrite = (source, from) =>
    source.replace(/(from\s+)(['"])(wasm-agent(?:\/[\w-]+)?)\2/g, (_, kw, q, spec) => {
      let rel = path.relative(from, resolvePackage(spec, pkgJson)).split(path.sep).join('/');
      if (!rel.startsWith('.')) rel = `./${rel}`;
      return `${kw}${q}${rel}${q}`;
    });
  const modules = [
    { type: 'ESModule', path: path.join(EXAMPLE, '__test_entry.js'), contents: rewrite(ENTRY, EXAMPLE) },
    { type: 'ESModule', path: path.join(EXAMPLE, 'worker.js'), contents: rewrite(readFileSync(path.join(EXAMPLE, 'worker.js'), 'utf8'), EXAMPLE) },
  ];
  // The package files the example pulls in (the workerd entry imports the rest).
  for (const file of ['index.workerd.js', 'api.js', 'processors.js', 'guard-processors.js', 'scorers.js', 'tracing.js', 'serve-agents.js', 'wire.js', 'wasm_agent.js', 'durable-object-store.js', 'wasm_agent_bg.wasm']) {
    const full = path.join(PKG, file);
    const type = file.endsWith('.wasm') ? 'CompiledWasm' : 'ESModule';
    modules.push({ type, path: full, contents: readFileSync(full) });
  }
  for (const m of modules.slice(1)) uploaded.set(path.relative(ROOT, m.path), Buffer.from(m.contents));
  return modules;
}

before(
  async () => {
    for (const file of ['package.json', 'index.workerd.js', 'api.js', 'processors.js', 'guard-processors.js', 'scorers.js', 'tracing.js', 'serve-agents.js', 'wire.js', 'wasm_agent.js', 'wasm_agent_bg.wasm', 'durable-object-store.js']) {
      if (!existsSync(path.join(PKG, file))) throw new Error(`pkg/${file} is missing: build the package first (./x build)`);
    }
    // The model server listens before anything fetches from it.
    server = await startModelServer({ host: '127.0.0.1' });
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

/** Real workerd running the example, its Durable Objects on the given storage backend. */
async function startWorker(useSQLite) {
  await mf?.dispose();
  mf = new Miniflare({
    log: new Log(LogLevel.WARN),
    host: '127.0.0.1',
    port: 0,
    modules: workerModules(),
    modulesRoot: ROOT,
    compatibilityDate: '2025-01-01',
    cf: false,
    bindings: { MODEL_ID: 'openai/echo', MODEL_URL: server.url, MODEL_API_KEY: API_KEY },
    // In memory (not persisted); a fresh Miniflare starts empty.
    durableObjects: { CONVERSATION: { className: 'Conversation', useSQLite } },
    // Loopback access for the Worker's global fetch (see worker.test.mjs).
    outboundService: { network: { allow: ['public', 'local'], deny: [] } },
    // An inspector, for a CPU profile of one reply.
    inspectorPort: 0,
    unsafeInspectorProxy: true,
  });
  baseUrl = await mf.ready;
}

const signal = () => AbortSignal.timeout(TEST_TIMEOUT - 5_000);

/** POST /chat; reads the SSE body to the end. Returns the chunks and the reply text. */
async function chat(thread, message) {
  const res = await fetch(new URL('/chat', baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ thread, message }),
    signal: signal(),
  });
  assert.equal(res.status, 200, `POST /chat answered ${res.status}: ${res.status === 200 ? '' : await res.text()}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const body = await res.text();
  const events = body.split('\n\n').filter((b) => b.startsWith('data: ')).map((b) => b.slice(6));
  assert.equal(events.at(-1), '[DONE]', 'the SSE body ends with data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
  const errors = chunks.filter((c) => c.type === 'error');
  assert.deepEqual(errors, [], 'no error chunk');
  const text = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  return { chunks, text };
}

async function getJson(pathAndQuery, init = {}) {
  const res = await fetch(new URL(pathAndQuery, baseUrl), { ...init, signal: signal() });
  const text = await res.text();
  assert.equal(res.status, 200, `${init.method ?? 'GET'} ${pathAndQuery} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

const adapter = (thread, calls) =>
  getJson(`/debug/adapter?thread=${encodeURIComponent(thread)}`, { method: 'POST', body: JSON.stringify({ calls }) });

/** The text of a UI message or a model-request message. */
const uiText = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const wireText = (m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text ?? '').join(''));

// Every test runs on both storage backends: the key-value one (`durableObjects: { CONVERSATION:
// 'Conversation' }`) and the SQLite one (`useSQLite`, the only kind the Workers free plan allows).
for (const [backend, useSQLite] of [['key-value storage', false], ['SQLite storage', true]]) {
  describe(backend, () => {
    before(() => startWorker(useSQLite), { timeout: TEST_TIMEOUT });
    after(
      async () => {
        await mf?.dispose();
        mf = undefined;
      },
      { timeout: TEST_TIMEOUT },
    );

    test('a workflow run suspended in a Durable Object is resumed by a later request from its storage (SPEC §20.5)', { timeout: TEST_TIMEOUT }, async () => {
      const T = 'wf-approvals';
      const started = await getJson(`/debug/workflow?thread=${T}&do=start&amount=7`);
      assert.equal(started.status, 'suspended');
      assert.deepEqual(started.suspendPayload, { approve: { ask: 'pay?' } });
      const stored = await getJson(`/debug/workflow?thread=${T}&do=get&run=${started.runId}`);
      assert.equal(stored.status, 'suspended');
      assert.ok(stored.keys.some((k) => k.includes(started.runId)), stored.keys.join());
      const resumed = await getJson(`/debug/workflow?thread=${T}&do=resume&run=${started.runId}`);
      assert.deepEqual(resumed, { status: 'success', result: { paid: 7 } });
      const after = await getJson(`/debug/workflow?thread=${T}&do=get&run=${started.runId}`);
      assert.deepEqual([after.status, after.result], ['success', { paid: 7 }]);
      // A second resume finds nothing suspended.
      const res = await fetch(new URL(`/debug/workflow?thread=${T}&do=resume&run=${started.runId}`, baseUrl), { signal: signal() });
      assert.equal(res.status, 500);
      assert.match((await res.json()).error.message, /suspended|not/i);
    });

    test('semantic recall vectors: saveVectors, queryVectors by resource and thread, deleteVectors (SPEC §21.3)', { timeout: TEST_TIMEOUT }, async () => {
      const thread = (id) => ({ id, resourceId: 'u-vec', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' });
      const rec = (id, threadId, vector) => ({ id, threadId, resourceId: 'u-vec', vector });
      const results = await adapter('t-vec', [
        ['saveThread', { thread: thread('tv1') }],
        ['saveThread', { thread: thread('tv2') }],
        ['saveVectors', { records: [rec('va', 'tv1', [1, 0]), rec('vb', 'tv1', [0.6, 0.8]), rec('vc', 'tv2', [0, 1])] }],
        ['queryVectors', { vector: [2, 0], topK: 2, resourceId: 'u-vec' }],
        ['queryVectors', { vector: [0, 1], topK: 5, threadId: 'tv2' }],
        ['queryVectors', { vector: [1, 0], topK: 5, resourceId: 'u-vec', threshold: 0.5 }],
        ['deleteVectors', { threadId: 'tv1' }],
        ['queryVectors', { vector: [1, 0], topK: 5, resourceId: 'u-vec' }],
        ['deleteVectors', { ids: ['vc'] }],
        ['queryVectors', { vector: [1, 0], topK: 5, resourceId: 'u-vec' }],
      ]);
      const ids = (hits) => hits.map((h) => h.id);
      assert.deepEqual(ids(results[3]), ['va', 'vb']);
      assert.ok(Math.abs(results[3][0].score - 1) < 1e-6 && Math.abs(results[3][1].score - 0.6) < 1e-6, JSON.stringify(results[3]));
      assert.deepEqual(ids(results[4]), ['vc']);
      assert.deepEqual(ids(results[5]), ['va', 'vb']);
      assert.deepEqual(ids(results[7]), ['vc']);
      assert.deepEqual(results[9], []);
    });

    test('two requests on one thread: the second model request carries the first exchange', { timeout: TEST_TIMEOUT }, async () => {
      const first = server.requests.length;
      const a = await chat('t-ann', 'My name is Ann.');
      assert.equal(a.text, 'You said: My name is Ann.');
      const b = await chat('t-ann', 'What is my name?');
      assert.equal(b.text, 'You said: What is my name?');
      const sent = JSON.stringify(b.chunks);
      assert.ok(!sent.includes('helpful assistant') && !sent.includes('My name is Ann'), 'no model request body (instructions, history) reaches the client');

      assert.equal(server.requests.length, first + 2, 'two model requests');
      const [r1, r2] = server.requests.slice(first);
      assert.equal(r2.headers.authorization, `Bearer ${API_KEY}`);
      // openai/ speaks the Responses API: the conversation is the request's `input` items.
      assert.ok(r1.path.endsWith('/responses') && r2.path.endsWith('/responses'));
      const convo = (r) => r.body.input.filter((m) => m.role !== 'system').map((m) => [m.role, wireText(m)]);
      assert.deepEqual(convo(r1), [['user', 'My name is Ann.']]);
      assert.deepEqual(convo(r2), [
        ['user', 'My name is Ann.'],
        ['assistant', 'You said: My name is Ann.'],
        ['user', 'What is my name?'],
      ]);
    });

    test('GET /history returns the 4 messages in order as UI messages', { timeout: TEST_TIMEOUT }, async () => {
      const history = await getJson('/history?thread=t-ann');
      assert.deepEqual(
        history.map((m) => [m.role, uiText(m)]),
        [
          ['user', 'My name is Ann.'],
          ['assistant', 'You said: My name is Ann.'],
          ['user', 'What is my name?'],
          ['assistant', 'You said: What is my name?'],
        ],
      );
      assert.equal(new Set(history.map((m) => m.id)).size, 4, 'four distinct ids');
    });

    test('a different thread is a different object with its own messages', { timeout: TEST_TIMEOUT }, async () => {
      const first = server.requests.length;
      const { text } = await chat('t-bob', 'I am Bob.');
      assert.equal(text, 'You said: I am Bob.');
      const sent = server.requests[first].body.input.filter((m) => m.role !== 'system');
      assert.deepEqual(sent.map((m) => [m.role, wireText(m)]), [['user', 'I am Bob.']], 'nothing of t-ann reaches t-bob');
      assert.deepEqual((await getJson('/history?thread=t-bob')).map(uiText), ['I am Bob.', 'You said: I am Bob.']);
      assert.equal((await getJson('/history?thread=t-ann')).length, 4, 't-ann unchanged');
      const bobKeys = await getJson('/debug/keys?thread=t-bob');
      assert.ok(!bobKeys.some((k) => k.includes('t-ann')), `t-bob's object holds only t-bob: ${bobKeys.join(', ')}`);
    });

    test('POST /api/chat speaks useChat: the ai package\'s transport and reader, two turns on one thread', { timeout: TEST_TIMEOUT }, async () => {
      // What useChat does, without React: DefaultChatTransport posts { id, messages, trigger, … }
      // and validates each part of the answer against the UI message stream schema;
      // readUIMessageStream assembles the assistant message.
      const transport = new DefaultChatTransport({ api: new URL('/api/chat', baseUrl).href });
      const turn = async (messages) => {
        const stream = await transport.sendMessages({
          chatId: 't-ui', messages, trigger: 'submit-message', messageId: undefined, abortSignal: signal(),
        });
        let message;
        for await (const m of readUIMessageStream({ stream })) message = m;
        return message;
      };
      const user = (id, text) => ({ id, role: 'user', parts: [{ type: 'text', text }] });
      const first = server.requests.length;
      const a = await turn([user('u1', 'Hello from useChat.')]);
      assert.equal(a.role, 'assistant');
      assert.equal(uiText(a), 'You said: Hello from useChat.');
      const b = await turn([user('u1', 'Hello from useChat.'), a, user('u2', 'Again.')]);
      assert.equal(uiText(b), 'You said: Again.');
      const sent = server.requests[first + 1].body.input.filter((m) => m.role !== 'system');
      assert.deepEqual(sent.map((m) => [m.role, wireText(m)]), [
        ['user', 'Hello from useChat.'],
        ['assistant', 'You said: Hello from useChat.'],
        ['user', 'Again.'],
      ], 'the history came from the Durable Object');
      const history = await getJson('/history?thread=t-ui');
      assert.deepEqual(history.map(uiText), ['Hello from useChat.', 'You said: Hello from useChat.', 'Again.', 'You said: Again.']);
      assert.equal(history[1].id, a.id, 'the stored reply has the id the stream announced');
    });

    test('listMessages({ last: 2 }) reads 2 records; a run loads its history with one bounded list', { timeout: TEST_TIMEOUT }, async () => {
      const last2 = await getJson('/debug/last?thread=t-ann&last=2');
      assert.deepEqual(last2.messages.map((m) => [m.role, m.content.parts.find((p) => p.type === 'text')?.text]), [
        ['user', 'What is my name?'],
        ['assistant', 'You said: What is my name?'],
      ]);
      assert.equal(last2.reads.list, 2, `records listed: ${JSON.stringify(last2.reads.listCalls)}`);
      assert.equal(last2.reads.get, 0, 'no other reads');
      assert.equal(last2.reads.listCalls.length, 1);
      assert.deepEqual(last2.reads.listCalls[0].options, { prefix: 'msg:t-ann:', reverse: true, limit: 2 });

      const all = await getJson('/debug/last?thread=t-ann');
      assert.equal(all.messages.length, 4);
      assert.equal(all.reads.list, 4);

      // A run on a thread: the earlier messages come from one list bounded by lastMessages (10).
      await getJson('/debug/reads?thread=t-ann&reset=1');
      await chat('t-ann', 'Third.');
      const reads = await getJson('/debug/reads?thread=t-ann');
      const messageLists = reads.listCalls.filter((c) => c.options?.prefix?.startsWith('msg:'));
      assert.deepEqual(messageLists.map((c) => c.options), [{ prefix: 'msg:t-ann:', reverse: true, limit: 10 }], JSON.stringify(reads.listCalls));
      assert.equal(messageLists[0].size, 4);
      assert.equal((await getJson('/history?thread=t-ann')).length, 6);
    });

    test('the adapter directly: upsert moves a re-dated message, before, deleteMessages, threads, resources', { timeout: TEST_TIMEOUT }, async () => {
      const T = 'adapter';
      const msg = (id, createdAt, text, threadId = T) => ({
        id, threadId, resourceId: 'r1', role: 'user', createdAt, type: 'v2', content: { format: 2, parts: [{ type: 'text', text }] },
      });
      const thread = (id, resourceId, updatedAt) => ({ id, resourceId, createdAt: '2025-01-01T00:00:00.000Z', updatedAt });
      const [, , listed, before, , afterUpsert, , afterDelete, keys] = await adapter(T, [
        ['saveThread', { thread: thread(T, 'r1', '2025-01-01T00:00:01.000Z') }],
        [
          'saveMessages',
          {
            messages: [
              msg('m1', '2025-01-01T00:00:01.000Z', 'one'),
              msg('m2', '2025-01-01T00:00:02.000Z', 'two'),
              msg('m3', '2025-01-01T00:00:03.000Z', 'three'),
            ],
          },
        ],
        ['listMessages', { threadId: T }],
        ['listMessages', { threadId: T, before: '2025-01-01T00:00:03.000Z', last: 1 }],
        // m1 re-dated to the end: the old key must go.
        ['saveMessages', { messages: [msg('m1', '2025-01-01T00:00:04.000Z', 'one, edited')] }],
        ['listMessages', { threadId: T }],
        ['deleteMessages', { messageIds: ['m2', 'nope'] }],
        ['listMessages', { threadId: T }],
      ]).then(async (r) => [...r, await getJson(`/debug/keys?thread=${T}`)]);
      const texts = (list) => list.map((m) => m.content.parts[0].text);
      assert.deepEqual(texts(listed), ['one', 'two', 'three']);
      assert.deepEqual(texts(before), ['two'], 'before is exclusive; last applies below it');
      assert.deepEqual(texts(afterUpsert), ['two', 'three', 'one, edited']);
      assert.deepEqual(texts(afterDelete), ['three', 'one, edited']);
      assert.deepEqual(keys.filter((k) => k.startsWith('msg')).sort(), [
        'msg:adapter:2025-01-01T00:00:03.000Z:m3',
        'msg:adapter:2025-01-01T00:00:04.000Z:m1',
        'msgid:m1',
        'msgid:m3',
      ]);

      // Threads: per-resource, most recently updated first; moving a thread to another resource
      // moves its index entry. Resources: get/save, null when missing. ':' in ids stays apart.
      const [, , , r1, r2, , r1After, r2After, none, , res, colon, plain] = await adapter(T, [
        ['saveThread', { thread: thread('x', 'r1', '2025-01-02T00:00:00.000Z') }],
        ['saveThread', { thread: thread('y', 'r2', '2025-01-03T00:00:00.000Z') }],
        ['saveThread', { thread: thread('a:b', 'r1', '2025-01-04T00:00:00.000Z') }],
        ['listThreads', { resourceId: 'r1' }],
        ['listThreads', { resourceId: 'r2' }],
        ['saveThread', { thread: thread('x', 'r2', '2025-01-05T00:00:00.000Z') }],
        ['listThreads', { resourceId: 'r1' }],
        ['listThreads', { resourceId: 'r2' }],
        ['getResource', { resourceId: 'r1' }],
        ['saveResource', { resource: { id: 'r1', workingMemory: '# Notes\nlikes tea' } }],
        ['getResource', { resourceId: 'r1' }],
        ['saveMessages', { messages: [msg('c1', '2025-01-01T00:00:05.000Z', 'in a:b', 'a:b')] }],
        ['listMessages', { threadId: 'a' }],
      ]);
      const ids = (list) => list.map((t) => t.id);
      assert.deepEqual(ids(r1), ['a:b', 'x', T]);
      assert.deepEqual(ids(r2), ['y']);
      assert.deepEqual(ids(r1After), ['a:b', T]);
      assert.deepEqual(ids(r2After), ['x', 'y']);
      assert.equal(none, null);
      assert.deepEqual(res, { id: 'r1', workingMemory: '# Notes\nlikes tea' });
      assert.equal(colon, null); // saveMessages returns nothing
      assert.deepEqual(plain, [], "thread 'a' does not see thread 'a:b'");
    });

    test('300 messages: saved, listed and deleted (deleteThread) in calls of at most 128 keys', { timeout: TEST_TIMEOUT }, async () => {
      // Cloudflare refuses a get/put/delete of more than 128 keys; local workerd does not enforce
      // it (a 200-key delete succeeds here), so the counted storage records the largest call.
      const T = 'big';
      const messages = Array.from({ length: 300 }, (_, i) => ({
        id: `m${String(i).padStart(3, '0')}`, threadId: T, resourceId: 'r', role: i % 2 ? 'assistant' : 'user',
        createdAt: new Date(Date.UTC(2025, 0, 1) + i * 1000).toISOString(), type: 'v2',
        content: { format: 2, parts: [{ type: 'text', text: `#${i}` }] },
      }));
      const [, , count, last3] = await adapter(T, [
        ['saveThread', { thread: { id: T, resourceId: 'r', createdAt: messages[0].createdAt, updatedAt: messages[0].createdAt } }],
        ['saveMessages', { messages }],
        ['listMessages', { threadId: T }],
        ['listMessages', { threadId: T, last: 3 }],
      ]);
      assert.equal(count.length, 300);
      assert.deepEqual(last3.map((m) => m.id), ['m297', 'm298', 'm299']);
      assert.equal((await getJson(`/debug/keys?thread=${T}`)).length, 602, '300 messages + 300 id entries + thread + index');
      await adapter(T, [['deleteThread', { threadId: T }]]);
      assert.deepEqual(await getJson(`/debug/keys?thread=${T}`), []);
      const { maxKeys } = await getJson(`/debug/reads?thread=${T}`);
      for (const [op, n] of Object.entries(maxKeys)) assert.ok(n <= 128, `a ${op} of ${n} keys`);
      assert.equal(maxKeys.put, 128, 'saveMessages filled its puts');
      assert.equal(maxKeys.delete, 128, 'deleteThread filled its deletes');
    });

    test('run records (SPEC §19.4): saveRun/getRun, updateRun as a compare-and-set, listRuns filters, deleteRun', { timeout: TEST_TIMEOUT }, async () => {
      const T = `t-runs-${useSQLite}`;
      const run = (runId, status, agentId = 'payer') => ({
        runId, agentId, threadId: T, resourceId: 'u1', status, createdAt: 1, updatedAt: 1, waiting: [], snapshot: { v: 1 }, lastSeq: 0,
      });
      const [, , got, refused, claimed, again, byStatus, byAgent, , gone, keys] = await adapter(T, [
        ['saveRun', { run: run('r:1', 'suspended') }],
        ['saveRun', { run: run('r2', 'completed', 'other') }],
        ['getRun', { runId: 'r:1' }],
        ['updateRun', { runId: 'r:1', patch: { status: 'resuming' }, expectedStatus: 'resuming' }],
        ['updateRun', { runId: 'r:1', patch: { status: 'resuming', heartbeatAt: 5, runId: 'nope' }, expectedStatus: 'suspended' }],
        ['updateRun', { runId: 'r:1', patch: { status: 'resuming' }, expectedStatus: 'suspended' }],
        ['listRuns', { status: ['suspended', 'resuming'] }],
        ['listRuns', { agentId: 'other', threadId: T }],
        ['deleteRun', { runId: 'r:1' }],
        ['getRun', { runId: 'r:1' }],
        ['listRuns', {}],
      ]);
      assert.equal(got.status, 'suspended');
      assert.equal(refused, null, 'wrong expected status');
      assert.deepEqual([claimed.runId, claimed.status, claimed.heartbeatAt], ['r:1', 'resuming', 5]);
      assert.equal(again, null, 'the second claim loses');
      assert.deepEqual(byStatus.map((r) => r.runId), ['r:1']);
      assert.deepEqual(byAgent.map((r) => r.runId), ['r2']);
      assert.equal(gone, null);
      assert.deepEqual(keys.map((r) => r.runId), ['r2']);
      const stored = await getJson(`/debug/keys?thread=${encodeURIComponent(T)}`);
      assert.ok(stored.includes('run:r2') && !stored.includes('run:r%3A1'), stored.join(' '));
    });

    test('DELETE /history (memory.deleteThread) removes everything of the thread', { timeout: TEST_TIMEOUT }, async () => {
      const before = await getJson('/debug/keys?thread=t-ann');
      assert.ok(before.length > 0);
      const res = await fetch(new URL('/history?thread=t-ann', baseUrl), { method: 'DELETE', signal: signal() });
      assert.equal(res.status, 204, await res.text());
      assert.deepEqual(await getJson('/debug/keys?thread=t-ann'), [], 'no key left');
      assert.deepEqual(await getJson('/history?thread=t-ann'), []);
      assert.equal((await getJson('/history?thread=t-bob')).length, 2, 't-bob untouched');
    });

    test('figures: upload size against the free plan, and the cost of one streamed reply', { timeout: TEST_TIMEOUT }, async (t) => {
      // Size (printed once): each uploaded module gzipped; Cloudflare limits the compressed upload.
      if (!useSQLite) {
        let raw = 0;
        let gz = 0;
        const rows = [];
        for (const [name, bytes] of uploaded) {
          const z = gzipSync(bytes, { level: 9 }).length;
          raw += bytes.length;
          gz += z;
          rows.push(`${name} ${bytes.length} B → ${z} B gzip`);
        }
        const all = gzipSync(Buffer.concat([...uploaded.values()]), { level: 9 }).length;
        const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
        t.diagnostic(`upload: ${rows.join('; ')}`);
        t.diagnostic(
          `upload total: ${kb(raw)} raw, ${kb(gz)} gzip (files gzipped one by one; ${kb(all)} as one stream) = ` +
            `${((gz / FREE_PLAN_LIMIT) * 100).toFixed(1)}% of the Workers free-plan 3 MB limit`,
        );
      }

      // Time. Miniflare reports no per-request CPU time. Two estimates instead:
      // - the workerd process's CPU time (utime + stime from /proc) over N replies: an upper
      //   bound, since it also counts Miniflare's own routing workers, HTTP and storage;
      // - the inspector's V8 sampling profiler over N more replies: the non-idle sample time of
      //   the isolate the Worker and its objects share (coarse: ~1 ms samples, and the profiler
      //   slows what it measures).
      const N = 20;
      await chat('t-warm', 'warm up'); // the object's first use is not the figure
      const pid = workerdPid();
      const cpu0 = pid && processCpuMs(pid);
      const wall = [];
      for (let i = 0; i < N; i++) {
        const t0 = performance.now();
        await chat('t-warm', `reply ${i}`);
        wall.push(performance.now() - t0);
      }
      const processCpu = pid ? (processCpuMs(pid) - cpu0) / N : null;
      wall.sort((a, b) => a - b);
      let profile = null;
      try {
        profile = await profileCpu(async () => {
          for (let i = 0; i < N; i++) await chat('t-warm', `profiled ${i}`);
        });
      } catch (err) {
        t.diagnostic(`inspector profile unavailable: ${err.message}`);
      }
      const parts = profile ? Object.entries(profile.byKind).map(([k, ms]) => `${k} ${(ms / N).toFixed(1)}`).join(', ') : '';
      t.diagnostic(
        `${backend}: one streamed reply (echo model, history of 10), over ${N} replies: wall median ${wall[N >> 1].toFixed(0)} ms ` +
          `(min ${wall[0].toFixed(0)}, max ${wall[N - 1].toFixed(0)}); workerd process CPU ` +
          (processCpu === null ? 'not found' : `${processCpu.toFixed(1)} ms per reply`) +
          (profile ? `; isolate CPU by profiler ≈ ${(profile.busy / N).toFixed(1)} ms per reply (${parts})` : ''),
      );
    });
  });
}

/** The workerd process Miniflare started (a child of this process), or null. */
function workerdPid() {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [, comm, rest] = /^\d+ \((.*)\) (.*)$/s.exec(stat);
      if (comm === 'workerd' && Number(rest.split(' ')[1]) === process.pid) return Number(entry);
    } catch {
      // gone, or not readable
    }
  }
  return null;
}

/** utime + stime of a process, in ms. */
function processCpuMs(pid) {
  const fields = /\) (.*)$/s.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))[1].split(' ');
  // After "(comm)": state is field 3, so utime (14) and stime (15) are at 11 and 12.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** Runs `fn` under the inspector's CPU profiler; the time of its non-idle samples (ms), by kind. */
async function profileCpu(fn) {
  const base = await mf.getInspectorURL();
  const list = await (await fetch(new URL('/json/list', base.href.replace(/^ws/, 'http')), { signal: signal() })).json();
  const target = list.find((t) => t.webSocketDebuggerUrl) ?? list[0];
  // Node 20 has no WebSocket global; `ws` comes with Miniflare (pinned), so it is there.
  const { WebSocket } = await import('ws');
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let id = 0;
  const pending = new Map();
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString());
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(`${msg.error.message}`));
      else resolve(msg.result);
    }
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const n = ++id;
      pending.set(n, { resolve, reject });
      ws.send(JSON.stringify({ id: n, method, params }));
      setTimeout(() => pending.has(n) && (pending.delete(n), reject(new Error(`${method}: no answer`))), 5_000).unref();
    });
  try {
    await send('Profiler.enable');
    await send('Profiler.setSamplingInterval', { interval: 100 });
    await send('Profiler.start');
    await fn();
    const { profile } = await send('Profiler.stop');
    // Each sample's time is the delta to the next one; a node is JS, wasm, or a V8 pseudo-frame.
    const kindOf = new Map(
      profile.nodes.map((n) => {
        const { functionName, url } = n.callFrame;
        const kind = /^\(.*\)$/.test(functionName) ? functionName : url.endsWith('.wasm') || url.startsWith('wasm://') ? 'wasm' : 'js';
        return [n.id, kind];
      }),
    );
    const byKind = {};
    let busy = 0;
    profile.samples.forEach((node, i) => {
      const kind = kindOf.get(node);
      const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
      if (kind === '(idle)') return;
      byKind[kind] = (byKind[kind] ?? 0) + ms;
      busy += ms;
    });
    return { busy, byKind, samples: profile.samples.length };
  } finally {
    ws.close();
  }
}
