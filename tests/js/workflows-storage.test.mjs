// Workflow snapshots in storage (SPEC §20.5): new Mastra({ storage }) gives its workflows that
// storage; a user storage object's persistWorkflowSnapshot / loadWorkflowSnapshot /
// updateWorkflowState (the resume claim) / listWorkflowRuns / getWorkflowRunById /
// deleteWorkflowRunById are called; the Durable Object store keeps runs across a "restart"
// (fresh store object, fresh workflow, same storage); a storage object without the workflow
// methods warns once and runs stay in the package instance's store.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, collect } from './helpers.mjs';
import { createStep, createWorkflow, Mastra, InMemoryStore } from '../../pkg/index.node.js';
import { DurableObjectStore } from '../../pkg/durable-object-store.js';
import { fakeDurableStorage as fakeStorage } from './durable-storage-helpers.mjs';

/** A storage object (a DurableObjectStore) whose workflow calls are recorded. */
function recorded(store, calls) {
  return new Proxy(store, {
    get(target, key) {
      const v = target[key];
      if (typeof v !== 'function') return v;
      return (...args) => {
        if (/Workflow/.test(String(key))) calls.push([key, structuredClone(args[0])]);
        return v.apply(target, args);
      };
    },
  });
}

/**
 * A DurableObjectStore whose updateWorkflowState calls run one at a time, as a Durable Object's
 * input gate runs them (the Map fake has no gate); both "processes" share the gate.
 */
function gatedStores(backing) {
  let chain = Promise.resolve();
  return () => {
    const store = new DurableObjectStore(backing);
    const update = store.updateWorkflowState.bind(store);
    store.updateWorkflowState = (arg) => (chain = chain.then(() => update(arg)));
    return store;
  };
}

/** prepare → approve (suspends until resumeData) → done; `id` names the workflow. */
function flow(id, counts = { prepare: 0 }) {
  const prepare = createStep({ id: 'prepare', execute: async ({ inputData }) => { counts.prepare++; return { item: inputData.item.toUpperCase() }; } });
  const approve = createStep({
    id: 'approve',
    execute: async ({ inputData, resumeData, suspend }) => (resumeData ? { item: inputData.item, approved: resumeData.approved } : suspend({ ask: inputData.item })),
  });
  const done = createStep({ id: 'done', execute: async ({ inputData }) => ({ ...inputData, done: true }) });
  return createWorkflow({ id }).then(prepare).then(approve).then(done).commit();
}

test('a Mastra storage object gets the snapshots: pending, running, suspended, then the claim and success', T, async () => {
  const calls = [];
  const storage = recorded(new DurableObjectStore(fakeStorage()), calls);
  const mastra = new Mastra({ workflows: { approval: flow('wf-store-1') }, storage });
  const wf = mastra.getWorkflow('approval');
  const run = await wf.createRun({ resourceId: 'user-1' });
  const first = await run.start({ inputData: { item: 'laptop' } });
  assert.equal(first.status, 'suspended');
  const persisted = calls.filter(([m]) => m === 'persistWorkflowSnapshot').map(([, a]) => a.snapshot.status);
  // pending at createRun, running at the start and after prepare (every step but the last), then the end.
  assert.deepEqual(persisted, ['pending', 'running', 'running', 'suspended']);
  const afterPrepare = calls.filter(([m]) => m === 'persistWorkflowSnapshot')[2][1].snapshot;
  assert.deepEqual(afterPrepare.context.prepare.output, { item: 'LAPTOP' });
  assert.equal(afterPrepare.context.approve, undefined);
  const [, arg] = calls.find(([m]) => m === 'persistWorkflowSnapshot');
  assert.equal(arg.workflowName, 'wf-store-1');
  assert.equal(arg.runId, run.runId);
  assert.equal(arg.resourceId, 'user-1');
  calls.length = 0;
  const r = await run.resume({ resumeData: { approved: true } });
  assert.equal(r.status, 'success');
  assert.deepEqual(r.result, { item: 'LAPTOP', approved: true, done: true });
  const claim = calls.find(([m]) => m === 'updateWorkflowState');
  assert.deepEqual(claim[1], { workflowName: 'wf-store-1', runId: run.runId, opts: { status: 'running', expectedStatus: 'suspended' } });
  assert.equal(calls.at(-1)[0], 'persistWorkflowSnapshot');
  assert.equal(calls.at(-1)[1].snapshot.status, 'success');
  const stored = await wf.getWorkflowRunById(run.runId);
  assert.equal(stored.status, 'success');
  assert.equal(stored.resourceId, 'user-1');
  assert.deepEqual(stored.result, { item: 'LAPTOP', approved: true, done: true });
});

test('after a restart (fresh store object and workflow over the same storage) createRun({ runId }) resumes', T, async () => {
  const backing = fakeStorage();
  const counts = { prepare: 0 };
  const before = new Mastra({ workflows: { approval: flow('wf-store-2', counts) }, storage: new DurableObjectStore(backing) });
  const run = await before.getWorkflow('approval').createRun();
  assert.equal((await run.start({ inputData: { item: 'desk' } })).status, 'suspended');
  assert.ok(backing.keys().includes(`wfrun:wf-store-2:${run.runId}`), backing.keys().join(' '));

  const after = new Mastra({ workflows: { approval: flow('wf-store-2', counts) }, storage: new DurableObjectStore(backing) });
  const wf = after.getWorkflowById('wf-store-2');
  const again = await wf.createRun({ runId: run.runId });
  const r = await again.resume({ resumeData: { approved: false } });
  assert.equal(r.status, 'success');
  assert.deepEqual(r.result, { item: 'DESK', approved: false, done: true });
  assert.equal(counts.prepare, 1, 'prepare is not run again');
  assert.equal(backing.raw.get(`wfrun:wf-store-2:${run.runId}`).snapshot.status, 'success');
  // A workflow outside any Mastra uses the package instance's store: the run is not there.
  assert.equal(await flow('wf-store-2').getWorkflowRunById(run.runId), null);
});

test('two resumes of one stored run from two processes: updateWorkflowState lets exactly one run', T, async () => {
  const make = gatedStores(fakeStorage());
  const counts = { prepare: 0 };
  const a = new Mastra({ workflows: { w: flow('wf-store-3', counts) }, storage: make() }).getWorkflow('w');
  const run = await a.createRun();
  await run.start({ inputData: { item: 'x' } });
  const b = new Mastra({ workflows: { w: flow('wf-store-3', counts) }, storage: make() }).getWorkflow('w');
  const other = await b.createRun({ runId: run.runId });
  const settled = await Promise.allSettled([run.resume({ resumeData: { approved: true } }), other.resume({ resumeData: { approved: false } })]);
  assert.deepEqual(settled.map((s) => s.status).sort(), ['fulfilled', 'rejected']);
  const lost = settled.find((s) => s.status === 'rejected').reason;
  assert.equal(lost.name, 'ResumeError');
  assert.match(lost.message, /already running \(another resume of it won\)/);
});

test('the run queries go to the storage: list with filters and pages, get, delete; cancel marks it canceled', T, async () => {
  const backing = fakeStorage();
  const wf = new Mastra({ workflows: { w: flow('wf-store-4') }, storage: new DurableObjectStore(backing) }).getWorkflow('w');
  const ids = [];
  for (const resourceId of ['r1', 'r2', 'r1']) {
    const run = await wf.createRun({ resourceId });
    await run.start({ inputData: { item: resourceId } });
    ids.push(run.runId);
    await new Promise((r) => setTimeout(r, 2));
  }
  const all = await wf.listWorkflowRuns();
  assert.equal(all.total, 3);
  assert.deepEqual(all.runs.map((r) => r.runId), [...ids].reverse());
  assert.ok(all.runs[0].createdAt instanceof Date);
  const mine = await wf.listWorkflowRuns({ resourceId: 'r1' });
  assert.deepEqual(mine.runs.map((r) => r.runId), [ids[2], ids[0]]);
  const page = await wf.listWorkflowRuns({ perPage: 1, page: 1 });
  assert.deepEqual([page.runs.map((r) => r.runId), page.total], [[ids[1]], 3]);
  const run = await wf.createRun({ runId: ids[1] });
  await run.cancel();
  assert.equal((await wf.getWorkflowRunById(ids[1])).status, 'canceled');
  assert.equal((await wf.listWorkflowRuns({ status: 'suspended' })).total, 2);
  await wf.deleteWorkflowRunById(ids[0]);
  assert.equal(await wf.getWorkflowRunById(ids[0]), null);
  assert.ok(!backing.keys().includes(`wfrun:wf-store-4:${ids[0]}`));
});

test('InMemoryStore as Mastra storage keeps its own runs; a storage object without the methods warns once', T, async () => {
  const store = new InMemoryStore();
  const wf = new Mastra({ workflows: { w: flow('wf-store-5') }, storage: store }).getWorkflow('w');
  const run = await wf.createRun();
  await run.start({ inputData: { item: 'a' } });
  assert.equal((await wf.getWorkflowRunById(run.runId)).status, 'suspended');
  assert.equal(await flow('wf-store-5').getWorkflowRunById(run.runId), null, 'not in the package instance store');
  assert.equal((await run.resume({ resumeData: { approved: true } })).status, 'success');

  const bare = new DurableObjectStore(fakeStorage());
  const plain = Object.fromEntries(['getThreadById', 'saveThread', 'deleteThread', 'listThreads', 'listMessages', 'saveMessages', 'deleteMessages', 'getResource', 'saveResource'].map((m) => [m, bare[m].bind(bare)]));
  const warned = [];
  const original = console.warn;
  console.warn = (...args) => warned.push(args.join(' '));
  try {
    const w2 = new Mastra({ workflows: { w: flow('wf-store-6') }, storage: plain }).getWorkflow('w');
    const r2 = await w2.createRun();
    assert.equal((await r2.start({ inputData: { item: 'b' } })).status, 'suspended');
    assert.equal((await (await w2.createRun({ runId: r2.runId })).resume({ resumeData: { approved: true } })).status, 'success');
  } finally {
    console.warn = original;
  }
  const ours = warned.filter((w) => w.includes('persistWorkflowSnapshot'));
  assert.equal(ours.length, 1, warned.join('\n'));
  assert.match(ours[0], /workflow runs are kept only in this page or process/);
});

test('a snapshot the storage cannot write fails the run with a StorageError; the stream still ends with workflow-finish', T, async () => {
  /** A Durable Object store that refuses the `nth` write (from 0) of a snapshot of status `refuse`. */
  const refusing = (refuse, nth) => {
    const store = new DurableObjectStore(fakeStorage());
    const write = store.persistWorkflowSnapshot.bind(store);
    let seen = 0;
    store.persistWorkflowSnapshot = async (arg) => {
      if (arg.snapshot.status === refuse && seen++ === nth) throw new Error('disk full');
      return write(arg);
    };
    return store;
  };
  const refusedAt = async (status, nth = 0) => {
    const counts = { one: 0, two: 0 };
    const wf = createWorkflow({ id: `wf-refuse-${status}-${nth}` })
      .then(createStep({ id: 'one', execute: async () => { counts.one++; return { a: 1 }; } }))
      .then(createStep({ id: 'two', execute: async () => { counts.two++; return { b: 2 }; } }))
      .commit();
    const mastra = new Mastra({ workflows: { w: wf }, storage: refusing(status, nth) });
    const w = mastra.getWorkflow('w');
    return { counts, wf: w, run: await w.createRun().catch((e) => e) };
  };

  const pending = (await refusedAt('pending')).run;
  assert.ok(pending instanceof Error, 'createRun rejects when the run cannot be recorded');
  assert.equal(pending.name, 'StorageError');
  assert.match(pending.message, /persistWorkflowSnapshot failed: disk full/);

  // The running snapshot at the start: no step runs; the stream ends failed, result rejects.
  {
    const { counts, wf, run } = await refusedAt('running', 0);
    const out = run.stream({ inputData: {} });
    const events = await collect(out.fullStream);
    assert.deepEqual(events.map((e) => e.type), ['workflow-start', 'workflow-finish']);
    assert.equal(events.at(-1).payload.workflowStatus, 'failed');
    assert.match(events.at(-1).payload.metadata.errorMessage, /disk full/);
    await assert.rejects(out.result, { name: 'StorageError', message: /disk full/ });
    assert.deepEqual(counts, { one: 0, two: 0 });
    assert.equal((await wf.getWorkflowRunById(run.runId)).status, 'failed');
  }

  // The running snapshot after step one: step two never starts, the run is failed.
  {
    const { counts, wf, run } = await refusedAt('running', 1);
    const out = run.stream({ inputData: {} });
    const events = await collect(out.fullStream);
    assert.equal(events.at(-1).type, 'workflow-finish');
    assert.equal(events.at(-1).payload.workflowStatus, 'failed');
    const r = await out.result;
    assert.equal(r.status, 'failed');
    assert.equal(r.error.name, 'StorageError');
    assert.deepEqual(counts, { one: 1, two: 0 });
    assert.equal((await wf.getWorkflowRunById(run.runId)).status, 'failed');
  }

  // At the end: both steps ran, but the run could not be recorded as done, so it is failed.
  {
    const { counts, wf, run } = await refusedAt('success');
    const r = await run.start({ inputData: {} });
    assert.deepEqual(counts, { one: 1, two: 1 });
    assert.equal(r.status, 'failed');
    assert.equal(r.error.name, 'StorageError');
    assert.match(r.error.message, /disk full/);
    const stored = await wf.getWorkflowRunById(run.runId);
    assert.equal(stored.status, 'failed', 'the failed end was written after the refused one');
    assert.equal(stored.error.name, 'StorageError');
  }
});
