// Shared helpers of the memory tests (tests/js/memory*.test.mjs). Not a test file itself.
//
// - `mapStorage()`: a plain JavaScript storage object (the StorageAdapter contract of
//   src/bindings/mod.rs) backed by Maps, recording every call it gets, as a Worker's KV / D1
//   adapter would be written by a user.
// - `BACKENDS`: InMemoryStore and the Map adapter, so one test body runs against both.
// - `useHookServer()`: a model server with a `hook` script that hands each request to the
//   handler the test registered for its x-test-id, so a test decides every reply (and can look
//   into the store while the model "thinks").

import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { words } from '../server/chat-stream.mjs';
import { Agent, modelFor, requestsOf, types, uid, useModelServer } from './helpers.mjs';

export { Memory, InMemoryStore } from '../../pkg/index.node.js';
import { Memory, InMemoryStore } from '../../pkg/index.node.js';

// ---------------------------------------------------------------------------------------------
// A storage object written by a user

const WRITES = new Set(['saveThread', 'deleteThread', 'saveMessages', 'deleteMessages', 'saveResource']);

/** Time order of the contract: createdAt, then id. */
const byTime = (a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * A StorageAdapter backed by Maps. Every call is recorded in `calls` as
 * `{ method, args }` (args deep-copied when the call arrived). `sync: true` answers with plain
 * values, otherwise with promises. `fail: { saveMessages: 'throw' | 'reject' }` makes a method
 * fail. `onCall(method, arg)` runs first on every call.
 */
export function mapStorage({ sync = false, fail = {}, onCall } = {}) {
  const threads = new Map();
  const messages = new Map(); // id → message
  const resources = new Map();
  const calls = [];
  const clone = (v) => (v === undefined ? undefined : structuredClone(v));

  const impl = {
    getThreadById({ threadId }) {
      return clone(threads.get(threadId) ?? null);
    },
    saveThread({ thread }) {
      threads.set(thread.id, clone(thread));
      return clone(thread);
    },
    deleteThread({ threadId }) {
      threads.delete(threadId);
      for (const [id, m] of messages) if (m.threadId === threadId) messages.delete(id);
    },
    listThreads({ resourceId }) {
      return [...threads.values()]
        .filter((t) => t.resourceId === resourceId)
        .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0))
        .map(clone);
    },
    listMessages({ threadId, last, before }) {
      let list = [...messages.values()].filter((m) => m.threadId === threadId).sort(byTime);
      if (before !== undefined) list = list.filter((m) => m.createdAt < before);
      if (last !== undefined) list = list.slice(Math.max(0, list.length - last));
      return list.map(clone);
    },
    saveMessages({ messages: list }) {
      for (const m of list) messages.set(m.id, clone(m));
    },
    deleteMessages({ messageIds }) {
      for (const id of messageIds) messages.delete(id);
    },
    getResource({ resourceId }) {
      return clone(resources.get(resourceId) ?? null);
    },
    saveResource({ resource }) {
      resources.set(resource.id, clone(resource));
    },
  };

  const storage = {};
  for (const [method, fn] of Object.entries(impl)) {
    storage[method] = function (...args) {
      calls.push({ method, args: structuredClone(args), thisIsStorage: this === storage });
      onCall?.(method, args[0]);
      if (fail[method] === 'throw') throw new Error(`${method}: disk full`);
      if (fail[method] === 'reject') return Promise.reject(new Error(`${method}: disk full`));
      const value = fn(...args);
      return sync ? value : delay(1).then(() => value);
    };
  }

  return {
    storage,
    calls,
    threads,
    messages,
    resources,
    /** Names of the calls so far. */
    methods: () => calls.map((c) => c.method),
    /** Calls that write. */
    writes: () => calls.filter((c) => WRITES.has(c.method)),
    /** Everything stored, for before/after comparisons. */
    dump: () => ({
      threads: [...threads.values()].map(clone).sort((a, b) => (a.id < b.id ? -1 : 1)),
      messages: [...messages.values()].map(clone).sort(byTime),
      resources: [...resources.values()].map(clone),
    }),
  };
}

/**
 * The two storages every conversation test runs against. `make()` returns
 * `{ memory, adapter }` (`adapter` is the mapStorage record, or null for InMemoryStore).
 */
export const BACKENDS = [
  {
    name: 'InMemoryStore',
    make: (options) => ({ memory: new Memory({ storage: new InMemoryStore(), ...(options ? { options } : {}) }), adapter: null }),
  },
  {
    name: 'Map storage object',
    make: (options) => {
      const adapter = mapStorage();
      return { memory: new Memory({ storage: adapter.storage, ...(options ? { options } : {}) }), adapter };
    },
  },
];

/**
 * Everything a Memory holds for the given resources (through the public API): their threads,
 * and every message of those threads. For before/after comparisons.
 */
export async function snapshot(memory, resourceIds, extraThreadIds = []) {
  const threads = {};
  const messages = {};
  for (const r of resourceIds) threads[r] = await memory.listThreads({ resourceId: r });
  const ids = new Set(extraThreadIds);
  for (const list of Object.values(threads)) for (const t of list) ids.add(t.id);
  for (const id of [...ids].sort()) {
    messages[id] = { thread: await memory.getThreadById({ threadId: id }), messages: await memory.listMessages({ threadId: id }) };
  }
  return { threads, messages };
}

// ---------------------------------------------------------------------------------------------
// A model server whose replies each test writes

/**
 * Starts (per file) a model server with a `hook` script. `hook.on(id, handler)` registers the
 * handler of the requests with x-test-id `id`: `handler(ex, n)` where `n` counts that test's
 * requests from 0. Handlers reply with the `reply*` helpers below.
 */
export function useHookServer() {
  const handlers = new Map();
  const counts = new Map();
  const server = useModelServer({
    scripts: {
      hook: async (ex) => {
        const id = ex.headers['x-test-id'];
        const n = counts.get(id) ?? 0;
        counts.set(id, n + 1);
        const handler = handlers.get(id);
        if (!handler) return replyText(ex, `no handler for ${id}`);
        await handler(ex, n);
      },
    },
  });
  return {
    server,
    get current() {
      return server.current;
    },
    on(id, handler) {
      handlers.set(id, handler);
    },
  };
}

/** Streams `text` word by word and finishes with `stop`. */
export async function replyText(ex, text, { delayMs = 0 } = {}) {
  const chat = ex.chat();
  chat.role();
  for (const piece of words(text)) {
    chat.content(piece);
    if (delayMs) await chat.pause(delayMs);
  }
  await chat.complete('stop');
}

/** Streams the words of `text`, makes sure the client has them, then holds the reply open forever. */
export async function replyTextThenHold(ex, text) {
  const chat = ex.chat();
  chat.role();
  for (const piece of words(text)) chat.content(piece);
  await chat.flush({ flushed: true });
  await ex.hold();
}

/**
 * Streams optional `text`, then tool calls (`[{ id, name, args }]`), finishing with `tool_calls`.
 */
export async function replyToolCalls(ex, calls, { text = '' } = {}) {
  const chat = ex.chat();
  chat.role();
  for (const piece of words(text)) chat.content(piece);
  calls.forEach((call, index) => {
    chat.toolCall({ index, id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } });
  });
  await chat.complete('tool_calls');
}

// ---------------------------------------------------------------------------------------------
// Agents and runs

/** A fresh agent with `memory` whose model is the hook script of `srv` (or `script`). */
export function memoryAgent(srv, memory, { script = 'hook', ...config } = {}) {
  const id = uid('memory');
  const agent = new Agent({ id: 'memory-agent', model: modelFor(srv, script, { headers: { 'x-test-id': id } }), memory, ...config });
  return { agent, id };
}

/** Runs one stream to its end; returns { out, chunks, text (or the rejection), error }. */
export async function turn(agent, messages, options) {
  const out = await agent.stream(messages, options);
  const chunks = [];
  for await (const chunk of out.fullStream) chunks.push(chunk);
  let text;
  let textError;
  try {
    text = await out.text;
  } catch (err) {
    textError = err;
  }
  return { out, chunks, text, textError };
}

/** The request bodies' messages the server received for x-test-id `id`, in order. */
export const sentMessages = (srv, id) => requestsOf(srv, id).map((r) => r.body.messages);

/** The `error` chunks' errors. */
export const errorsOf = (chunks) => chunks.filter((c) => c.type === 'error').map((c) => c.payload.error);

/** Concatenated text deltas. */
export const textOfChunks = (chunks) =>
  chunks
    .filter((c) => c.type === 'text-delta')
    .map((c) => c.payload.text)
    .join('');

/** A string that is a UTC ISO 8601 time as Date#toISOString writes it. */
export function assertIso(value, what) {
  assert.equal(typeof value, 'string', `${what} is a string`);
  assert.equal(new Date(value).toISOString(), value, `${what} is an ISO time (${value})`);
}

/**
 * Checks the stored message shape of SPEC §7 and returns its parts. `expect` may give `role`,
 * `threadId`, `resourceId`.
 */
export function assertStoredMessage(m, expect = {}) {
  assert.deepEqual(Object.keys(m).sort(), ['content', 'createdAt', 'id', 'resourceId', 'role', 'threadId', 'type'], 'stored message fields');
  assert.equal(typeof m.id, 'string');
  assert.ok(m.id.length > 0, 'message id not empty');
  assertIso(m.createdAt, 'message createdAt');
  assert.equal(m.type, 'v2');
  assert.equal(m.content.format, 2);
  assert.ok(Array.isArray(m.content.parts), 'content.parts is an array');
  for (const [k, v] of Object.entries(expect)) assert.equal(m[k], v, `message ${k}`);
  return m.content.parts;
}

/**
 * In a Chat Completions message list: every assistant tool call is answered by a tool message
 * with its id, and every tool message answers a call made before it.
 */
export function assertNoDanglingToolCalls(messages) {
  const open = new Set();
  const answered = new Set();
  for (const m of messages) {
    for (const c of m.tool_calls ?? []) open.add(c.id);
    if (m.role === 'tool') {
      assert.ok(open.has(m.tool_call_id), `tool message ${m.tool_call_id} answers an earlier call`);
      answered.add(m.tool_call_id);
    }
  }
  for (const id of open) assert.ok(answered.has(id), `tool call ${id} has its result in the prompt`);
}

/** Waits until the run's last chunk (`finish`, `abort` or `error`) has been read; returns chunks. */
export async function drain(reader, seen = []) {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return seen;
    seen.push(value);
  }
}

export { types };
