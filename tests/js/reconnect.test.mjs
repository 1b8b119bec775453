// Chunk sequence numbers (SPEC §19.8): `seq` on every fullStream chunk, 1 for the run's first
// and +1 for each next one (data-* chunks included), the same numbers on onChunk and on the
// second view a decision returns, a resumed run numbering on from its record, untilIdle counting
// the outer stream.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, modelFor, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';
import { Agent, Memory, InMemoryStore } from '../../pkg/index.node.js';
import { createTool, readRest, readUntil } from './tools-helpers.mjs';

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

noUnhandledRejections();
