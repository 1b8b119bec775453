// Chunk sequence numbers, chunk logs and reconnectStream (SPEC §19.8): `seq` on every
// fullStream chunk, 1 for the run's first and +1 for each next one (data-* chunks included), the
// same numbers on onChunk and on the second view a decision returns, a resumed run numbering on
// from its record; `reconnectable` runs logged in batches, a cancelled reader that leaves the run
// going, `reconnectStream({ runId, after })` replaying then following, not-found and expiry.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { T, modelFor, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';
import { Agent, Memory, InMemoryStore } from '../../pkg/index.node.js';
import { createTool, readRest, readUntil } from './tools-helpers.mjs';
import { fileStorage } from './suspend-helpers.mjs';

const server = useModelServer();

async function readAll(out) {
  const chunks = [];
  for await (const c of out.fullStream) chunks.push(c);
  return chunks;
}

const seqs = (chunks) => chunks.map((c) => c.seq);
const oneToN = (n, from = 1) => Array.from({ length: n }, (_, i) => from + i);

function approvalPay(calls = []) {
  return createTool({
    id: 'pay',
    description: 'Pays an amount',
    inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    requireApproval: true,
    execute: async (input, context) => {
      context.writer.custom({ type: 'data-paying', data: { amount: input.amount } });
      calls.push(input);
      return { paid: input.amount };
    },
  });
}

function payer(extra = {}) {
  const id = uid('seq');
  return new Agent({ id: 'payer', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), tools: { pay: approvalPay() }, ...extra });
}

test('seq: 1 for the first chunk, +1 for each next one, data-* chunks included; onChunk sees the same numbers', T, async () => {
  const seen = [];
  const agent = new Agent({ id: 'seq', model: modelFor(server.current, 'echo') });
  const out = await agent.stream('Count these words for me please', { onChunk: (c) => seen.push([c.type, c.seq]) });
  const chunks = await readAll(out);
  assert.ok(chunks.length > 5, `a few chunks (${chunks.length})`);
  assert.deepEqual(seqs(chunks), oneToN(chunks.length));
  assert.equal(chunks[0].type, 'start');
  assert.deepEqual(Object.keys(chunks[0]).slice(0, 2), ['type', 'seq'], 'a top-level field beside type');
  assert.deepEqual(seen, chunks.map((c) => [c.type, c.seq]));
});

test('seq: a data-* chunk a tool writes is numbered; the second view of a decision carries the live numbers', T, async () => {
  const agent = payer();
  const out = await agent.stream('Pay 5');
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'tool-call-approval');
  const view = await agent.approveToolCall({ runId: out.runId });
  await readRest(reader, chunks);
  assert.deepEqual(seqs(chunks), oneToN(chunks.length));
  const data = chunks.find((c) => c.type === 'data-paying');
  assert.ok(data && Number.isInteger(data.seq), 'the data chunk has its number');
  const viewChunks = await readAll(view);
  assert.deepEqual(viewChunks.slice(0, 2).map((c) => c.type), ['data-paying', 'tool-result'], 'from the decision on');
  // The view is read after the run ended, so its deltas were joined: each carries its last part's number.
  const bySeq = new Map(chunks.map((c) => [c.seq, c]));
  assert.equal(viewChunks[0].seq, data.seq);
  assert.equal(viewChunks.at(-1).seq, chunks.at(-1).seq);
  for (const c of viewChunks) assert.equal(bySeq.get(c.seq)?.type, c.type, `chunk ${c.seq}`);
  const text = (cs) => cs.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.equal(text(viewChunks), text(chunks.filter((c) => c.seq >= data.seq)));
});

test('seq: a run resumed from its record numbers on after the suspended stream (closeOnSuspend)', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const agent = payer({ memory });
  const out = await agent.stream('Pay 7', { closeOnSuspend: true, memory: { thread: uid('t'), resource: 'u1' } });
  const first = await readAll(out);
  assert.deepEqual(seqs(first), oneToN(first.length));
  assert.equal(first.at(-1).type, 'finish');
  const resumed = await agent.approveToolCall({ runId: out.runId });
  const rest = await readAll(resumed);
  assert.deepEqual(rest.slice(0, 2).map((c) => c.type), ['data-paying', 'tool-result']);
  assert.deepEqual(seqs(rest), oneToN(rest.length, first.length + 1), 'one sequence over the suspension');
});

/** Waits until the async `pred` holds. */
async function until(pred, what, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}

const textOf = (chunks) => chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
const LONG = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

const errorOf = async (promise) => {
  try {
    await promise;
  } catch (e) {
    return { name: e.name, code: e.code, message: e.message };
  }
  return null;
};

function slowAgent(memory, extra = {}) {
  return new Agent({ id: 'slow', model: modelFor(server.current, 'slow:15', { headers: { 'x-test-id': uid('rc') } }), memory, ...extra });
}

test('reconnectable: a reader that cancels mid-reply detaches; reconnectStream after its last seq gets the rest, no gap, no repeat', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const agent = slowAgent(memory);
  const thread = uid('th');
  const out = await agent.stream(LONG, { reconnectable: true, memory: { thread, resource: 'u1' } });
  const reader = out.fullStream.getReader();
  const seen = await readUntil(reader, (c) => c.type === 'text-delta' && c.payload.text.includes('word5'));
  await reader.cancel();
  const lastSeen = seen.at(-1).seq;
  const again = await agent.reconnectStream({ runId: out.runId, after: lastSeen });
  const rest = await readAll(again);
  assert.equal(rest[0].seq, lastSeen + 1, 'no gap');
  assert.equal(rest.at(-1).type, 'finish', 'the run went on to its end');
  const all = [...seen, ...rest];
  assert.deepEqual(seqs(all), oneToN(all.length), 'one sequence, nothing twice');
  const text = textOf(all);
  assert.match(text, /word39/);
  assert.equal(await again.text, textOf(rest), 'the aggregates cover the chunks carried');
  assert.equal(await again.finishReason, 'stop');
  await until(async () => (await memory.listMessages({ threadId: thread, format: 'ui' })).length === 2, 'the reply is stored');
  const ui = await memory.listMessages({ threadId: thread, format: 'ui' });
  const stored = ui.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.equal(stored, text, 'the whole reply is in memory');
});

test('reconnectStream after the run finished replays every chunk unchanged; after is respected', T, async () => {
  const agent = slowAgent(undefined, { model: modelFor(server.current, 'echo') });
  const out = await agent.stream('Replay me please', { reconnectable: { retainMs: 60_000 } });
  const chunks = await readAll(out);
  const replay = await readAll(await agent.reconnectStream({ runId: out.runId }));
  assert.deepEqual(replay, chunks);
  const tail = await agent.reconnectStream({ runId: out.runId, after: 5 });
  const tailChunks = await readAll(tail);
  assert.deepEqual(tailChunks, chunks.slice(5));
  assert.equal(await tail.text, textOf(chunks.slice(5)));
});

test('reconnectStream: unknown, not reconnectable or expired runs are ResumeError not-found; bad arguments are TypeErrors', T, async () => {
  const agent = slowAgent(undefined, { model: modelFor(server.current, 'echo') });
  const unknown = await errorOf(agent.reconnectStream({ runId: 'no-such-run' }));
  assert.equal(unknown.name, 'ResumeError');
  assert.equal(unknown.code, 'not-found');
  assert.match(unknown.message, /no-such-run/);
  const plain = await agent.stream('Hi');
  await readAll(plain);
  assert.equal((await errorOf(agent.reconnectStream({ runId: plain.runId }))).code, 'not-found', 'a run without reconnectable keeps no log');
  const short = await agent.stream('Hi', { reconnectable: { retainMs: 30 } });
  await readAll(short);
  await delay(60);
  const gone = await errorOf(agent.reconnectStream({ runId: short.runId }));
  assert.equal(gone.code, 'not-found');
  assert.match(gone.message, /retainMs/);
  assert.throws(() => agent.reconnectStream({ runId: 7 }), (e) => e instanceof TypeError && /runId/.test(e.message));
  assert.throws(() => agent.reconnectStream({ runId: 'r', after: -1 }), (e) => e instanceof TypeError && /after/.test(e.message));
  await assert.rejects(agent.stream('Hi', { reconnectable: 'yes' }), (e) => e instanceof TypeError && /options\.reconnectable/.test(e.message));
  await assert.rejects(agent.stream('Hi', { reconnectable: { retainMs: 'long' } }), (e) => e instanceof TypeError && /retainMs/.test(e.message));
});

test('a storage object gets the chunk log in batches (appendRunChunks), and the run record with its end', T, async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rc-')), 'db.json');
  const storage = fileStorage(file);
  const appends = [];
  const counted = { ...storage, appendRunChunks: (args) => (appends.push(args.chunks.length), storage.appendRunChunks(args)) };
  const agent = slowAgent(new Memory({ storage: counted }), { model: modelFor(server.current, 'echo') });
  const out = await agent.stream(LONG, { reconnectable: true, memory: { thread: uid('th'), resource: 'u1' } });
  const chunks = await readAll(out);
  assert.ok(chunks.length > 40, `${chunks.length} chunks`);
  assert.equal(appends.reduce((a, b) => a + b, 0), chunks.length, 'every chunk logged once');
  assert.ok(appends.length < chunks.length / 4, `batches, not one call per chunk: ${appends.join(',')}`);
  const logged = storage.listRunChunks({ runId: out.runId });
  assert.deepEqual(logged, chunks);
  const rec = storage.getRun({ runId: out.runId });
  assert.equal(rec.status, 'completed');
  assert.equal(rec.lastSeq, chunks.length);
  assert.ok(rec.retainUntil > Date.now() + 3_000_000, 'an hour by default');
  // Another Agent on the same storage replays it.
  const other = slowAgent(new Memory({ storage: fileStorage(file) }), { model: modelFor(server.current, 'echo') });
  assert.deepEqual(await readAll(await other.reconnectStream({ runId: out.runId })), chunks);
});

test('reconnectable from defaultOptions; a reconnect while the run is live follows it to its end', T, async () => {
  const agent = slowAgent(undefined, { defaultOptions: { reconnectable: true } });
  const out = await agent.stream(LONG);
  const reader = out.fullStream.getReader();
  const seen = await readUntil(reader, (c) => c.type === 'text-delta');
  const follow = await agent.reconnectStream({ runId: out.runId });
  await readRest(reader, seen);
  const followed = await readAll(follow);
  assert.deepEqual(followed, seen, 'the same chunks from seq 1, live ones included');
  await until(async () => (await errorOf(agent.reconnectStream({ runId: out.runId }))) === null, 'the log is there after the end');
});

noUnhandledRejections();
