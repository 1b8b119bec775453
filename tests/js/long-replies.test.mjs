// Long replies (issue 18): what an output stream owes and has not handed over waits with the
// deltas of one block joined, so an unread branch costs the text once; nothing is lost or
// reordered, and a reader that keeps up still gets every delta as it came.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, noUnhandledRejections, useModelServer } from './helpers.mjs';

const server = useModelServer();
const N = 3000;
const EXPECTED = Array.from({ length: N }, (_, i) => `w${i} `).join('');

const agent = () => new Agent({ id: 'long', model: modelFor(server.current, `deltas:${N}`) });

test('a reader that keeps up gets one text-delta per provider delta', T, async () => {
  const chunks = await collect((await agent().stream('go')).fullStream);
  const deltas = chunks.filter((c) => c.type === 'text-delta');
  assert.equal(deltas.length, N);
  assert.equal(deltas.map((c) => c.payload.text).join(''), EXPECTED);
});

test('fullStream taken after textStream was read to its end replays everything, the deltas of the block joined', T, async () => {
  const out = await agent().stream('go');
  assert.equal((await collect(out.textStream)).join(''), EXPECTED);
  const chunks = await collect(out.fullStream);
  assert.deepEqual(
    chunks.map((c) => c.type),
    ['start', 'step-start', 'text-start', 'text-delta', 'text-end', 'step-finish', 'finish'],
  );
  const delta = chunks[3];
  assert.equal(delta.payload.text, EXPECTED);
  assert.equal(delta.payload.id, chunks[2].payload.id);
  assert.equal(delta.runId, out.runId);
  assert.equal(chunks[5].payload.output.text, EXPECTED);
});

test('both streams taken, one read first: the other gets the whole text in order afterwards', T, async () => {
  const out = await agent().stream('go');
  const text = out.textStream;
  const full = await collect(out.fullStream);
  assert.equal(full.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join(''), EXPECTED);
  assert.equal((await collect(text)).join(''), EXPECTED);
});

test('a taken but unread textStream stops queueing a string per delta once far behind, and loses nothing', T, async () => {
  const n = 40_000;
  const expected = Array.from({ length: n }, (_, i) => `w${i} `).join('');
  const out = await new Agent({ id: 'long', model: modelFor(server.current, `deltas:${n}`) }).stream('go');
  const text = out.textStream;
  const deltas = (await collect(out.fullStream)).filter((c) => c.type === 'text-delta');
  assert.equal(deltas.length, n, 'the stream being read gets every delta');
  const pieces = await collect(text);
  assert.equal(pieces.join(''), expected);
  // At most 16,384 queued plus what waited joined (one piece per network read at most).
  assert.ok(pieces.length < n, `${pieces.length} pieces for ${n} deltas`);
});

test('a long reply: text, steps and messages of the full output hold the same text', T, async () => {
  const out = await agent().stream('go');
  await out.consumeStream();
  const full = await out.getFullOutput();
  assert.equal(full.text, EXPECTED);
  assert.equal(full.steps[0].text, EXPECTED);
  assert.deepEqual(full.response.messages, [{ role: 'assistant', content: [{ type: 'text', text: EXPECTED }] }]);
  assert.deepEqual(full.messages, full.response.messages);
  assert.equal(full.steps[0].response.messages[0].content[0].text, EXPECTED);
});

noUnhandledRejections();
