// Semantic recall (SPEC §21.3) as a user meets it: older messages recalled by meaning into a new
// conversation, with the InMemoryStore and with a storage object of one's own; embedders by
// provider string (the model server's deterministic endpoint), AI SDK EmbeddingModel and
// function; indexing after the reply that never delays or fails it; bad embedders.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, T, errorOf, modelFor, requestsOf, uid, useModelServer } from './helpers.mjs';
import { InMemoryStore, Memory, mapStorage } from './memory-helpers.mjs';
import { embedText } from '../server/embeddings.mjs';

const srv = useModelServer();

/** A function embedder over the server's hashing, recording every text it embeds. */
function recordingEmbedder() {
  const texts = [];
  const embed = async (batch) => {
    texts.push(...batch);
    return batch.map((t) => embedText(t));
  };
  return { texts, embed };
}

/** Waits until `check()` is true (indexing runs after the reply, on the event loop). */
async function until(check, what) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await delay(5);
  }
  assert.fail(`timed out waiting for ${what}`);
}

function echoAgent(memory) {
  const id = uid('recall');
  const agent = new Agent({ id: 'recall-agent', model: modelFor(srv.current, 'gpt-4o-mini', { headers: { 'x-test-id': id } }), memory });
  return { agent, id };
}

async function say(agent, text, memory) {
  const out = await agent.stream(text, { memory });
  for await (const _ of out.fullStream);
  return out;
}

/** The text of a stored message. */
const textOf = (m) => m.content.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

const userTexts = (body) => body.messages.filter((m) => m.role !== 'system').map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`);

/** A user storage object (Maps) with the optional vector methods, recording their calls. */
function vectorStorage() {
  const base = mapStorage();
  const vectors = new Map();
  const calls = [];
  const storage = {
    ...base.storage,
    saveVectors({ records }) {
      calls.push(['saveVectors', records.map((r) => r.id)]);
      for (const r of records) vectors.set(r.id, r);
    },
    queryVectors({ vector, topK, resourceId, threadId, threshold }) {
      calls.push(['queryVectors', { topK, resourceId, threadId, threshold }]);
      const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
      return [...vectors.values()]
        .filter((r) => (!resourceId || r.resourceId === resourceId) && (!threadId || r.threadId === threadId))
        .map((r) => ({ id: r.id, score: dot(r.vector, vector) }))
        .filter((h) => threshold === undefined || h.score >= threshold)
        .sort((a, b) => b.score - a.score)
        .slice(0, topK);
    },
    deleteVectors(arg) {
      calls.push(['deleteVectors', arg]);
      for (const [id, r] of vectors) if (r.threadId === arg.threadId || arg.ids?.includes(id)) vectors.delete(id);
    },
  };
  return { storage, vectors, calls };
}

/** Two old conversations of one user (validators, then bread), indexed. */
async function history(agent, resource, waitIndexed) {
  await say(agent, 'Tell me about solana validators', { thread: 'old-1', resource });
  await say(agent, 'How long should I knead bread dough?', { thread: 'old-2', resource });
  await waitIndexed();
}

test('a question about validator nodes recalls the solana validators exchange from another thread, not the bread one', T, async () => {
  const e = recordingEmbedder();
  const memory = new Memory({ storage: new InMemoryStore(), embedder: e.embed, options: { lastMessages: 4, semanticRecall: { topK: 2, messageRange: 0 } } });
  const { agent, id } = echoAgent(memory);
  const resource = uid('u');
  await history(agent, resource, () => until(() => e.texts.includes('You said: How long should I knead bread dough?'), 'indexing'));
  // The first run's recall query (nothing stored yet), then its user and assistant text in one batch.
  assert.deepEqual(e.texts.slice(0, 3), ['Tell me about solana validators', 'Tell me about solana validators', 'You said: Tell me about solana validators']);

  const out = await say(agent, 'What do validator nodes do?', { thread: 'new', resource });
  const sent = requestsOf(srv.current, id).at(-1).body;
  assert.deepEqual(userTexts(sent), [
    'user: Tell me about solana validators',
    'assistant: You said: Tell me about solana validators',
    'user: What do validator nodes do?',
  ]);
  const full = await out.getFullOutput();
  assert.deepEqual(
    full.rememberedMessages.map((m) => [m.threadId, m.role, textOf(m)]),
    [
      ['old-1', 'user', 'Tell me about solana validators'],
      ['old-1', 'assistant', 'You said: Tell me about solana validators'],
    ],
  );
  // The query was embedded too; the new exchange is indexed after the reply.
  assert.ok(e.texts.includes('What do validator nodes do?'));
});

test("scope 'thread' recalls only the thread's own older messages, outside the lastMessages window, with their neighbours", T, async () => {
  const e = recordingEmbedder();
  const memory = new Memory({ embedder: e.embed, storage: new InMemoryStore() });
  const { agent, id } = echoAgent(memory);
  const resource = uid('u');
  await say(agent, 'Tell me about solana validators', { thread: 'other', resource });
  const mem = { thread: 'main', resource, options: { lastMessages: 2, semanticRecall: { topK: 1, messageRange: { before: 0, after: 1 }, scope: 'thread' } } };
  for (const text of ['Which validator client is fastest?', 'Bake bread', 'Knead dough']) await say(agent, text, mem);
  await until(() => e.texts.includes('You said: Knead dough'), 'indexing');
  const out = await say(agent, 'Remind me about validator clients', mem);
  const sent = userTexts(requestsOf(srv.current, id).at(-1).body);
  assert.deepEqual(sent, [
    'user: Which validator client is fastest?',
    'assistant: You said: Which validator client is fastest?',
    'user: Knead dough',
    'assistant: You said: Knead dough',
    'user: Remind me about validator clients',
  ]);
  const full = await out.getFullOutput();
  assert.equal(full.rememberedMessages.length, 2);
  assert.ok(full.rememberedMessages.every((m) => m.threadId === 'main'));
});

test("'openai/…' embedder strings call the embeddings endpoint of the provider's base URL", T, async () => {
  const url = srv.current.url;
  const { storage, vectors } = vectorStorage();
  const memory = new Memory({
    storage,
    embedder: { id: 'openai/text-embedding-3-small', url, apiKey: 'k', dimensions: 128 },
    options: { semanticRecall: { topK: 2, messageRange: 0, threshold: 0.2 } },
  });
  const { agent } = echoAgent(memory);
  const resource = uid('u');
  const embeddingCalls = () => srv.current.requests.filter((r) => r.path.endsWith('/embeddings') && r.headers.authorization === 'Bearer k');
  const before = embeddingCalls().length;
  await history(agent, resource, () => until(() => vectors.size === 4, 'indexing'));
  const call = embeddingCalls()[before];
  assert.equal(call.body.model, 'text-embedding-3-small');
  assert.equal(call.body.dimensions, 128);
  const out = await say(agent, 'What do validator nodes do?', { thread: 'new', resource });
  const full = await out.getFullOutput();
  assert.deepEqual(full.rememberedMessages.map((m) => textOf(m)), ['Tell me about solana validators', 'You said: Tell me about solana validators']);
});

test('an AI SDK EmbeddingModel is called with doEmbed({ values })', T, async () => {
  const values = [];
  const model = {
    specificationVersion: 'v2',
    provider: 'test',
    modelId: 'hash',
    maxEmbeddingsPerCall: 1,
    async doEmbed(arg) {
      values.push(arg.values);
      return { embeddings: arg.values.map((v) => embedText(v)) };
    },
  };
  const memory = new Memory({ storage: new InMemoryStore(), embedder: model, options: { semanticRecall: true } });
  const { agent } = echoAgent(memory);
  await say(agent, 'Tell me about solana validators', { thread: 't', resource: uid('u') });
  await until(() => values.length >= 3, 'indexing');
  // maxEmbeddingsPerCall: 1 → one text per call (the first call embedded the recall query).
  assert.ok(values.every((v) => v.length === 1));
  assert.deepEqual(values.slice(1).flat(), ['Tell me about solana validators', 'You said: Tell me about solana validators']);
});

test('a storage object with saveVectors / queryVectors / deleteVectors keeps and searches the vectors; deleting a thread deletes them', T, async () => {
  const { storage, vectors, calls } = vectorStorage();
  const e = recordingEmbedder();
  const memory = new Memory({ storage, embedder: e.embed, options: { semanticRecall: { topK: 2, messageRange: 0 } } });
  const { agent } = echoAgent(memory);
  const resource = uid('u');
  await history(agent, resource, () => until(() => vectors.size === 4, 'indexing'));
  const saved = [...vectors.values()][0];
  assert.deepEqual(Object.keys(saved).sort(), ['id', 'resourceId', 'threadId', 'vector']);
  assert.equal(saved.threadId, 'old-1');
  assert.equal(saved.resourceId, resource);
  assert.ok(Math.abs(saved.vector.reduce((s, x) => s + x * x, 0) - 1) < 1e-4, 'stored normalised');
  const out = await say(agent, 'What do validator nodes do?', { thread: 'new', resource });
  assert.deepEqual((await out.getFullOutput()).rememberedMessages.map((m) => m.threadId), ['old-1', 'old-1']);
  assert.deepEqual(calls.find((c) => c[0] === 'queryVectors')[1], { topK: 2, resourceId: resource, threadId: undefined, threshold: undefined });
  await memory.deleteThread('old-1');
  assert.deepEqual(calls.at(-1), ['deleteVectors', { threadId: 'old-1' }]);
  assert.ok(![...vectors.values()].some((r) => r.threadId === 'old-1'));
  const some = [...vectors.keys()][0];
  await memory.deleteMessages([some]);
  assert.deepEqual(calls.at(-1), ['deleteVectors', { ids: [some] }]);
  assert.ok(!vectors.has(some));
});

test('indexing never delays finish or fails the run; a failed embedding is retried at the next save', T, async () => {
  let mode = 'slow';
  let release;
  const seen = [];
  const warnings = [];
  const warn = console.warn;
  console.warn = (line) => warnings.push(String(line));
  try {
    const embed = (texts) => {
      seen.push([mode, ...texts]);
      if (mode === 'slow') return new Promise((resolve) => (release = () => resolve(texts.map((t) => embedText(t)))));
      if (mode === 'fail') return Promise.reject(new Error('embedding service down'));
      return Promise.resolve(texts.map((t) => embedText(t)));
    };
    // The Memory's options have no semanticRecall: what it saves is still indexed.
    const memory = new Memory({ storage: new InMemoryStore(), embedder: embed });
    const { agent } = echoAgent(memory);
    const mem = { thread: uid('t'), resource: 'u' };
    const first = await say(agent, 'first message', mem);
    // The stream ended and the promises settle while the embedding is still pending.
    assert.equal(await first.text, 'You said: first message');
    assert.equal((await first.getFullOutput()).finishReason, 'stop');
    await until(() => seen.length === 1, 'the first embedding call');
    assert.deepEqual(seen[0], ['slow', 'first message', 'You said: first message']);
    mode = 'fail';
    release();
    const second = await say(agent, 'second message', mem);
    assert.equal(await second.text, 'You said: second message');
    await until(() => warnings.some((w) => w.includes('embedding service down')), 'the warning');
    assert.match(warnings.find((w) => w.includes('embedding service down')), /^wasm-agent: semantic recall: .*embedder function threw: embedding service down/);
    mode = 'ok';
    const third = await say(agent, 'third message', mem);
    assert.equal((await third.getFullOutput()).error, undefined);
    await until(() => seen.length === 3, 'the retry');
    // The failed batch comes back first, with the new save.
    assert.deepEqual(seen[2], ['ok', 'second message', 'You said: second message', 'third message', 'You said: third message']);
  } finally {
    console.warn = warn;
  }
});

test('bad embedders and semanticRecall without one are TypeErrors naming the field', T, async () => {
  for (const bad of [42, true, { nope: 1 }, 'text-embedding-3-small', 'nosuch/model']) {
    const e = await errorOf(() => new Memory({ embedder: bad }));
    assert.equal(e.name, 'TypeError', String(bad));
    assert.match(e.message, /^new Memory\(config\)\.embedder/, e.message);
  }
  const e = await errorOf(() => new Memory({ embedder: { id: 'openai/x', url: 'http://127.0.0.1:1/v1', dimensions: -3 } }));
  assert.match(e.message, /^new Memory\(config\)\.embedder\.dimensions/);
  const none = await errorOf(() => new Memory({ options: { semanticRecall: true } }));
  assert.match(none.message, /^new Memory\(config\)\.embedder: is required with options\.semanticRecall/);
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent } = echoAgent(memory);
  const call = await errorOf(() => agent.stream('hi', { memory: { thread: 't', resource: 'u', options: { semanticRecall: { topK: 2 } } } }));
  assert.equal(call.name, 'TypeError');
  assert.match(call.message, /^options\.memory\.options\.semanticRecall: needs an embedder/);
  const range = await errorOf(() => new Memory({ embedder: async () => [], options: { semanticRecall: { messageRange: 'x' } } }));
  assert.match(range.message, /semanticRecall\.messageRange: expected a number or \{ before, after \}/);
});

/** A Map standing in for a Durable Object's `state.storage` (get, put, delete, list). */
function fakeDurableStorage() {
  const data = new Map();
  const sortedKeys = () => [...data.keys()].sort();
  return {
    data,
    async get(k) {
      if (Array.isArray(k)) return new Map(k.filter((x) => data.has(x)).map((x) => [x, structuredClone(data.get(x))]));
      return structuredClone(data.get(k));
    },
    async put(k, v) {
      if (typeof k === 'string') data.set(k, structuredClone(v));
      else for (const [key, value] of Object.entries(k)) data.set(key, structuredClone(value));
    },
    async delete(k) {
      for (const key of [k].flat()) data.delete(key);
    },
    async list({ prefix = '', end, reverse = false, limit = Infinity } = {}) {
      let keys = sortedKeys().filter((key) => key.startsWith(prefix) && (end === undefined || key < end));
      if (reverse) keys.reverse();
      keys = keys.slice(0, limit);
      return new Map(keys.map((key) => [key, structuredClone(data.get(key))]));
    },
  };
}

test('the Durable Object adapter keeps vectors as Float32Arrays, searches a resource or a thread and deletes them with their thread', T, async () => {
  const { DurableObjectStore } = await import('../../pkg/durable-object-store.js');
  const raw = fakeDurableStorage();
  const e = recordingEmbedder();
  const memory = new Memory({ storage: new DurableObjectStore(raw), embedder: e.embed, options: { semanticRecall: { topK: 2, messageRange: 0 } } });
  const { agent } = echoAgent(memory);
  const resource = uid('u');
  const vectorKeys = () => [...raw.data.keys()].filter((k) => k.startsWith('vec:'));
  await history(agent, resource, () => until(() => vectorKeys().length === 4, 'indexing'));
  const one = raw.data.get(vectorKeys()[0]);
  assert.ok(one.vector instanceof Float32Array);
  const out = await say(agent, 'What do validator nodes do?', { thread: 'new', resource });
  assert.deepEqual((await out.getFullOutput()).rememberedMessages.map(textOf), ['Tell me about solana validators', 'You said: Tell me about solana validators']);
  const store = new DurableObjectStore(raw);
  const inThread = await store.queryVectors({ vector: embedText('bread dough'), topK: 5, threadId: 'old-2' });
  assert.equal(inThread.length, 2);
  assert.ok(inThread[0].score > 0.3);
  assert.deepEqual(await store.queryVectors({ vector: embedText('bread dough'), topK: 5, threadId: 'old-1', threshold: 0.1 }), []);
  await memory.deleteThread('old-1');
  assert.ok(!vectorKeys().some((k) => k.startsWith('vec:old-1:')));
  assert.ok(![...raw.data.keys()].some((k) => k.startsWith('vecid:') && raw.data.get(k).startsWith('vec:old-1:')));
  const [, msg] = [...raw.data.entries()].find(([k]) => k.startsWith('msgid:'));
  const id = decodeURIComponent(msg.split(':').at(-1));
  await memory.deleteMessages([id]);
  assert.ok(!raw.data.has(`vecid:${encodeURIComponent(id)}`), 'a deleted message takes its vector along');
});
