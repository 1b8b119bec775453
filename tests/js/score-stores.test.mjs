// Scores in the built-in stores (SPEC §14.2): an agent's scorers save their rows through
// `saveScore` of the memory's storage; InMemoryStore and DurableObjectStore keep them and list
// them with `listScores(filter)` (the Durable Object store over a Map standing in for
// `state.storage`; tests/workerd runs it in workerd).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, uid, useModelServer } from './helpers.mjs';
import { createScorer, InMemoryStore, Memory } from '../../pkg/index.node.js';
import { DurableObjectStore } from '../../pkg/durable-object-store.js';
import { fakeDurableStorage as fakeStorage } from './durable-storage-helpers.mjs';

const srv = useModelServer();

const lengthScorer = createScorer({ id: 'length', description: 'words in the answer' })
  .generateScore(({ run }) => run.output[0].content.parts.filter((p) => p.type === 'text').map((p) => p.text).join(' ').split(' ').length / 10)
  .generateReason(({ score }) => `score ${score}`);

for (const [name, make] of [
  ['InMemoryStore', () => new InMemoryStore()],
  ['DurableObjectStore', () => new DurableObjectStore(fakeStorage())],
]) {
  test(`${name}: an agent's scores are saved in its memory's store and listed by run and scorer`, T, async () => {
    const store = make();
    const id = uid('scores');
    const agent = new Agent({
      id,
      model: modelFor(srv.current, 'text:one two three', { headers: { 'x-test-id': id } }),
      memory: new Memory({ storage: store }),
      scorers: { length: { scorer: lengthScorer } },
    });
    const thread = uid('th');
    const requestContext = new Map([['apiKey', 'sk-never-stored']]);
    for (const runId of ['run-a', 'run-b']) {
      const out = await agent.stream('Count', { memory: { thread, resource: 'u1' }, runId, requestContext });
      await collect(out.fullStream);
      assert.deepEqual((await out.scores).map((s) => s.score), [0.3]);
    }
    const all = await store.listScores();
    assert.deepEqual(all.map((r) => r.runId), ['run-a', 'run-b'], 'oldest first');
    const [row] = await store.listScores({ runId: 'run-b' });
    assert.equal(row.scorerId, 'length');
    assert.equal(row.entityId, id);
    assert.equal(row.entityType, 'AGENT');
    assert.equal(row.score, 0.3);
    assert.equal(row.reason, 'score 0.3');
    assert.equal(row.threadId, thread);
    assert.equal(typeof row.id, 'string');
    assert.match(row.createdAt, /^\d{4}-\d\d-\d\dT/);
    assert.notEqual(all[0].id, all[1].id);
    assert.equal(JSON.stringify(all).includes('sk-never-stored'), false, 'the request context is never stored');
    assert.deepEqual(await store.listScores({ scorerId: 'other' }), []);
    assert.equal((await store.listScores({ scorerId: 'length', entityId: id })).length, 2);
  });

  test(`${name}: saveScore keeps a given id and returns the stored row`, T, async () => {
    const store = make();
    const { score } = await store.saveScore({ id: 'mine', scorerId: 's', runId: 'r', score: 1, source: 'TEST' });
    assert.equal(score.id, 'mine');
    assert.equal(typeof score.createdAt, 'string');
    assert.deepEqual((await store.listScores({ source: 'TEST' })).map((r) => r.id), ['mine']);
  });
}

test('DurableObjectStore keeps scores under their own keys, apart from runs and messages', T, async () => {
  const storage = fakeStorage();
  const store = new DurableObjectStore(storage);
  await store.saveScore({ scorerId: 's', runId: 'r1', score: 1 });
  await store.saveRun({ run: { runId: 'r1', status: 'suspended' } });
  assert.ok(storage.keys().some((k) => k.startsWith('score:')));
  assert.deepEqual((await store.listRuns()).map((r) => r.runId), ['r1'], 'a score is not a run');
  assert.equal((await store.listScores()).length, 1);
});

test('InMemoryStore.saveScore refuses a row that is not an object', T, async () => {
  await assert.rejects(new InMemoryStore().saveScore('x'), (e) => e instanceof TypeError && e.message.startsWith('saveScore(row)'));
});
