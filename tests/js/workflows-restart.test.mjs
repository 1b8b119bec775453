// run.restart() (SPEC §20.2): a run left `running` by a process that died goes on from the last
// snapshot it wrote (one after every step, §20.5): finished steps keep their outputs and do not
// run again. The dead process is what it leaves behind: its storage holding the `running`
// snapshot written after a step, read by a fresh Mastra. A run still executing in this process,
// or one that is not running, is refused with a message that says why.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, collect } from './helpers.mjs';
import { createStep, createWorkflow, Mastra } from '../../pkg/index.node.js';
import { DurableObjectStore } from '../../pkg/durable-object-store.js';
import { fakeDurableStorage } from './durable-storage-helpers.mjs';

/** fetch → enrich → save; `calls` lists each execution; `gate` (when given) holds enrich. */
function flow(id, calls, gate) {
  const step = (sid, f) => createStep({ id: sid, execute: async (ctx) => { calls.push(sid); return f(ctx); } });
  return createWorkflow({ id })
    .then(step('fetch', ({ inputData }) => ({ items: inputData.items * 2 })))
    .then(step('enrich', async ({ inputData, setState, state }) => {
      if (gate) await gate;
      await setState({ ...state, enriched: true });
      return { items: inputData.items + 1 };
    }))
    .then(step('save', ({ inputData, state }) => ({ saved: inputData.items, state })))
    .commit();
}

test('a run that died after a step restarts there: the finished step keeps its output, the rest run, the stream says so', T, async () => {
  const backing = fakeDurableStorage();
  const calls = [];
  const first = new Mastra({ workflows: { w: flow('wf-restart-1', calls) }, storage: new DurableObjectStore(backing) }).getWorkflow('w');
  const run = await first.createRun({ resourceId: 'user-1' });
  // Keep the snapshot written after fetch: what storage held if the process died during enrich.
  const key = `wfrun:wf-restart-1:${run.runId}`;
  const written = [];
  const put = backing.put.bind(backing);
  backing.put = async (k, v) => {
    if (k === key) written.push(structuredClone(v));
    return put(k, v);
  };
  const done = await run.start({ inputData: { items: 5 } });
  assert.deepEqual(done.result, { saved: 11, state: { enriched: true } });
  const afterFetch = written.find((r) => r.snapshot.status === 'running' && r.snapshot.context.fetch && !r.snapshot.context.enrich);
  assert.ok(afterFetch, JSON.stringify(written.map((r) => Object.keys(r.snapshot.context))));
  backing.put = put;
  await put(key, afterFetch);

  calls.length = 0;
  const second = new Mastra({ workflows: { w: flow('wf-restart-1', calls) }, storage: new DurableObjectStore(backing) }).getWorkflow('w');
  const running = await second.listWorkflowRuns({ status: 'running' });
  assert.deepEqual(running.runs.map((r) => r.runId), [run.runId], 'the dead run is found');
  const again = await second.createRun({ runId: run.runId });
  const r = await again.restart();
  // The restarted execution's events, replayed.
  const events = await collect(again.observeStream().fullStream);
  assert.equal(r.status, 'success', JSON.stringify(r.error));
  assert.deepEqual(r.result, { saved: 11, state: { enriched: true } });
  assert.deepEqual(calls, ['enrich', 'save'], 'fetch did not run again');
  assert.deepEqual(r.steps.fetch.output, { items: 10 });
  assert.deepEqual(events.map((e) => e.type).filter((t) => t !== 'workflow-step-output'), [
    'workflow-start', 'workflow-step-start', 'workflow-step-result', 'workflow-step-start', 'workflow-step-result', 'workflow-finish',
  ]);
  assert.equal(events[0].payload.stepName, 'enrich');
  assert.deepEqual(events[0].payload.args, { items: 5 }, 'args are the run input');
  const stored = await second.getWorkflowRunById(run.runId);
  assert.equal(stored.status, 'success');
  assert.equal(stored.resourceId, 'user-1');
  // Done now: a second restart says it is not running.
  await assert.rejects((await second.createRun({ runId: run.runId })).restart(), { message: /is not running \(status: success\); restart\(\) re-runs a run left running/ });
});

test('restart() refuses a run executing in this process, and one never started', T, async () => {
  const calls = [];
  let open;
  const gate = new Promise((r) => (open = r));
  const storage = new DurableObjectStore(fakeDurableStorage());
  const wf = new Mastra({ workflows: { w: flow('wf-restart-2', calls, gate) }, storage }).getWorkflow('w');
  const run = await wf.createRun();
  const out = run.stream({ inputData: { items: 1 } });
  while (!calls.includes('enrich')) await new Promise((r) => setTimeout(r, 1));
  const same = await wf.createRun({ runId: run.runId });
  await assert.rejects(same.restart(), { name: 'ResumeError', code: 'in-progress', message: /is running in this page or process; restart\(\) only re-runs a run whose page or process died/ });
  open();
  assert.equal((await out.result).status, 'success');
  assert.deepEqual(calls, ['fetch', 'enrich', 'save'], 'the refused restart ran nothing');
  assert.equal((await collect(out.fullStream)).at(-1).type, 'workflow-finish');

  const fresh = await wf.createRun();
  await assert.rejects(fresh.restart(), { message: /is not running \(status: pending\)/ });
  const unknown = await createWorkflow({ id: 'wf-restart-3' }).then(createStep({ id: 'a', execute: async () => 1 })).commit().createRun({ runId: 'nope' });
  await assert.rejects(unknown.restart(), { message: /is not running \(status: pending\)/ });
});
