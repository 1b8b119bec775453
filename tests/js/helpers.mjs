// Shared helpers of the package tests (`node --test tests/js/`). Not a test file itself.
//
// Every test file imports the package the way users do (the Node entry of the built pkg/),
// starts one local model server in before() and closes it in after(), and ends with
// `noUnhandledRejections()`, which fails the file if any promise rejection went unhandled.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { startModelServer } from '../server/model-server.mjs';

export { Agent } from '../../pkg/index.node.js';
export { estimatePromptTokens } from '../server/chat-stream.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const FIXTURES = process.env.WASM_AGENT_FIXTURES ?? path.resolve(HERE, '../../../shared/fixtures/provider-streams');

/** Options of every test: bounded in time. */
export const T = { timeout: 15_000 };

// ---------------------------------------------------------------------------------------------
// Unhandled rejections: recorded from the moment a test file imports this module.

const unhandled = [];
process.on('unhandledRejection', (reason) => {
  unhandled.push(reason);
});

/**
 * Registers the last test of a file: no promise rejection went unhandled while the file ran.
 * Call it after every other test of the file.
 */
export function noUnhandledRejections() {
  test('no unhandled promise rejections in this file', T, async () => {
    // Rejections surface one macrotask after the promise rejects; give them a moment.
    await delay(50);
    await new Promise((resolve) => setImmediate(resolve));
    const shown = unhandled.map((r) => (r instanceof Error ? `${r.name}: ${r.message}` : String(r)));
    assert.deepEqual(shown, [], 'unhandled rejections');
  });
}

// ---------------------------------------------------------------------------------------------
// The model server

/**
 * Starts a model server for the file (before) and closes it (after). Returns a getter object:
 * `srv.current` is the running server.
 */
export function useModelServer(opts = {}) {
  const holder = { current: null };
  before(async () => {
    holder.current = await startModelServer({ demoDelayMs: 0, ...opts });
  });
  after(async () => {
    await holder.current?.close();
  });
  return holder;
}

let counter = 0;
/** A unique x-test-id (flaky scripts count failures per id; tests find their requests by it). */
export function uid(label = 't') {
  counter += 1;
  return `${label}-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The requests the server recorded for one x-test-id, in arrival order. */
export function requestsOf(srv, id) {
  return srv.requests.filter((r) => r.headers['x-test-id'] === id);
}

/** Waits until the server recorded `n` requests with x-test-id `id`; returns them. */
export async function waitForRequestsOf(srv, id, n = 1, timeoutMs = 5000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = requestsOf(srv, id);
    if (found.length >= n) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${n} request(s) with x-test-id ${id} (have ${found.length})`);
    await delay(5);
  }
}

/**
 * A model config pointing at the test server; `script` is the model name the server runs. The
 * loop, memory and tool tests read Chat Completions request bodies, so they pin `api: 'chat'`
 * (`openai/` defaults to the Responses API; responses.test.mjs covers that path).
 */
export function modelFor(srv, script, { apiKey = 'test-key', headers, api = 'chat' } = {}) {
  const model = { id: `openai/${script}`, url: srv.url, apiKey, api };
  if (headers) model.headers = headers;
  return model;
}

// ---------------------------------------------------------------------------------------------
// Reading outputs

/** Every value of a ReadableStream (or async iterable), in order. */
export async function collect(stream) {
  const out = [];
  for await (const value of stream) out.push(value);
  return out;
}

/** Chunk types in order. */
export const types = (chunks) => chunks.map((c) => c.type);

/** Keys of an object, sorted, for exact field-name checks. */
export const keys = (obj) => Object.keys(obj).sort();

/** Resolves to the rejection reason of `promise`; fails when it resolves. */
export async function rejectionOf(promise) {
  try {
    const value = await promise;
    assert.fail(`expected a rejection, got ${JSON.stringify(value)?.slice(0, 200)}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    return err;
  }
}

/** Calls `fn`, returning the thrown error (sync throw or rejection); fails when it succeeds. */
export async function errorOf(fn) {
  let result;
  try {
    result = fn();
  } catch (err) {
    return err;
  }
  return rejectionOf(result);
}

// ---------------------------------------------------------------------------------------------
// Recorded provider streams

/**
 * A recorded Chat Completions stream and what an agent should make of it: the text (all
 * `delta.content`), the reasoning (`delta.reasoning_content` or `delta.reasoning`), the last
 * finish reason, the last usage (top-level or groq's `x_groq.usage`), and the first id/model/created.
 */
export function readFixture(name) {
  const lines = readFileSync(path.join(FIXTURES, `${name}.chunks.txt`), 'utf8')
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '');
  const events = lines.map((line) => JSON.parse(line));
  let text = '';
  let reasoning = '';
  let finishReason;
  let usage;
  for (const ev of events) {
    const choice = ev.choices?.[0];
    const delta = choice?.delta;
    if (delta) {
      if (typeof delta.content === 'string') text += delta.content;
      const r = typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '' ? delta.reasoning_content : delta.reasoning;
      if (typeof r === 'string') reasoning += r;
    }
    if (choice?.finish_reason) finishReason = choice.finish_reason;
    const u = ev.usage ?? ev.x_groq?.usage;
    if (u) usage = u;
  }
  const first = events.find((ev) => ev.id || ev.model || ev.created) ?? {};
  return { lines, events, text, reasoning, finishReason, usage, id: first.id, model: first.model, created: first.created };
}
