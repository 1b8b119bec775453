// Suspend and resume of workflows (SPEC §20.2, §20.5) with the package instance's in-memory
// store: resume with resumeData/suspendData, finished steps not re-run, a nested workflow's
// step by path, resumeSchema, the claim that lets only one of two concurrent resumes run,
// createRun({ runId }) continuing a stored run, cancel of a suspended run, the run queries.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, collect, noUnhandledRejections } from './helpers.mjs';
import { createStep, createWorkflow } from '../../pkg/index.node.js';

const approval = (calls) => createStep({
  id: 'approve',
  resumeSchema: { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] },
  execute: async ({ inputData, resumeData, suspendData, suspend }) => {
    calls.push(resumeData ?? null);
    if (!resumeData) return suspend({ question: `Approve ${inputData.item}?` });
    return { item: inputData.item, approved: resumeData.approved, asked: suspendData.question };
  },
});

function approvalFlow(id, calls, before = { n: 0 }) {
  const prepare = createStep({ id: 'prepare', execute: async ({ inputData }) => { before.n++; return { item: inputData.item.toUpperCase() }; } });
  return createWorkflow({ id }).then(prepare).then(approval(calls)).then(createStep({ id: 'done', execute: async ({ inputData }) => ({ ...inputData, done: true }) })).commit();
}

test('a suspended run resumes: the step runs again with resumeData and suspendData, finished steps do not', T, async () => {
  const calls = [];
  const before = { n: 0 };
  const wf = approvalFlow('approval-1', calls, before);
  const run = await wf.createRun();
  const first = await run.start({ inputData: { item: 'laptop' } });
  assert.equal(first.status, 'suspended');
  assert.deepEqual(first.suspended, [['approve']]);
  assert.deepEqual(first.suspendPayload, { approve: { question: 'Approve LAPTOP?' } });
  assert.equal(first.steps.approve.status, 'suspended');
  const stored = await wf.getWorkflowRunById(run.runId);
  assert.equal(stored.status, 'suspended');
  assert.ok(stored.createdAt instanceof Date);
  const out = await run.resumeStream({ resumeData: { approved: true } });
  const events = await collect(out.fullStream);
  const r = await out.result;
  assert.equal(r.status, 'success');
  assert.deepEqual(r.result, { item: 'LAPTOP', approved: true, asked: 'Approve LAPTOP?', done: true });
  assert.equal(before.n, 1, 'prepare ran once');
  assert.deepEqual(calls, [null, { approved: true }]);
  assert.equal(events[0].type, 'workflow-start');
  assert.equal(events[0].payload.stepName, 'approve');
  assert.deepEqual(events[0].payload.args, { approved: true });
  assert.deepEqual(events[1].payload.resumePayload, { approved: true });
  assert.equal(events.at(-1).type, 'workflow-finish');
  assert.equal((await wf.getWorkflowRunById(run.runId)).status, 'success');
  await assert.rejects(run.resume({ resumeData: { approved: true } }), { message: `Run '${run.runId}' of workflow 'approval-1' is not suspended (status: success)` });
});

test('resumeStream returns its output at once; a refused one errors its stream and rejects its result, before any event', T, async () => {
  const wf = approvalFlow('approval-at-once', []);
  const run = await wf.createRun();
  await run.start({ inputData: { item: 'pen' } });
  const out = run.resumeStream({ resumeData: { approved: true } });
  assert.equal(typeof out.then, 'undefined', 'not a promise');
  assert.equal(out.runId, run.runId);
  const types = [];
  for await (const e of out) types.push(e.type);
  assert.deepEqual(types, ['workflow-start', 'workflow-step-start', 'workflow-step-result', 'workflow-step-start', 'workflow-step-result', 'workflow-finish']);
  assert.equal((await out.result).status, 'success');
  assert.equal(out.status, 'success');

  // The run is finished now: a second resumeStream is refused, as resume() is.
  const again = run.resumeStream({ resumeData: { approved: true } });
  const why = `Run '${run.runId}' of workflow 'approval-at-once' is not suspended (status: success)`;
  await assert.rejects(again.result, { message: why });
  await assert.rejects(collect(again.fullStream), { message: why });
  assert.equal(again.status, 'failed');
  // The refused resume did not replace the run's output: observeStream still gives the resume that ran.
  assert.equal((await collect(run.observeStream().fullStream)).at(-1).payload.workflowStatus, 'success');

  // A bad resumeData on a suspended run: a ValidationError from the stream, the run still suspended.
  const other = await wf.createRun();
  await other.start({ inputData: { item: 'cup' } });
  const bad = other.resumeStream({ resumeData: { approved: 'yes' } });
  await assert.rejects(collect(bad.fullStream), { name: 'ValidationError', message: 'resumeData.approved: expected a boolean, got a string' });
  assert.equal((await wf.getWorkflowRunById(other.runId)).status, 'suspended');
});

test('bad resumeData rejects with a ValidationError and the run stays suspended; no snapshot rejects with an Error', T, async () => {
  const wf = approvalFlow('approval-2', []);
  const run = await wf.createRun();
  await run.start({ inputData: { item: 'x' } });
  await assert.rejects(run.resume({ resumeData: { approved: 'yes' } }), { name: 'ValidationError', message: 'resumeData.approved: expected a boolean, got a string' });
  assert.equal((await wf.getWorkflowRunById(run.runId)).status, 'suspended');
  await assert.rejects(run.resume({ step: 'prepare', resumeData: { approved: true } }), (e) => e instanceof TypeError && /resume\(options\)\.step: 'prepare' is not a suspended step/.test(e.message));
  assert.equal((await run.resume({ step: 'approve', resumeData: { approved: false } })).result.approved, false);
  const fresh = await wf.createRun();
  await wf.deleteWorkflowRunById(fresh.runId);
  await assert.rejects(fresh.resume({ resumeData: {} }), { name: 'Error', message: `No snapshot found for run '${fresh.runId}' of workflow 'approval-2'` });
});

test('of two concurrent resumes of one run (two tabs) exactly one runs the step', T, async () => {
  const calls = [];
  const wf = approvalFlow('approval-3', calls);
  const run = await wf.createRun();
  await run.start({ inputData: { item: 'x' } });
  const other = await wf.createRun({ runId: run.runId });
  const settled = await Promise.allSettled([run.resume({ resumeData: { approved: true } }), other.resume({ resumeData: { approved: false } })]);
  const ok = settled.filter((s) => s.status === 'fulfilled');
  const lost = settled.filter((s) => s.status === 'rejected');
  assert.equal(ok.length, 1);
  assert.equal(lost.length, 1);
  assert.equal(lost[0].reason.name, 'ResumeError');
  assert.match(lost[0].reason.message, /is already running \(another resume of it won\); this resume did not run/);
  assert.equal(lost[0].reason.code, 'in-progress');
  assert.equal(calls.filter((c) => c).length, 1, 'the step resumed once');
});

test('createRun({ runId }) continues a stored run; a step inside a nested workflow resumes by its path', T, async () => {
  const calls = [];
  const inner = createWorkflow({ id: 'inner-approval' }).then(approval(calls)).commit();
  const wf = createWorkflow({ id: 'outer-approval' }).then(inner).commit();
  const run = await wf.createRun({ resourceId: 'user-1' });
  const first = await run.start({ inputData: { item: 'car' } });
  assert.deepEqual(first.suspended, [['inner-approval', 'approve']]);
  const again = await wf.createRun({ runId: run.runId });
  assert.equal(again.resourceId, 'user-1');
  await assert.rejects(again.start({ inputData: {} }), /already started/);
  const r = await again.resume({ step: ['inner-approval', 'approve'], resumeData: { approved: true } });
  assert.equal(r.status, 'success');
  assert.deepEqual(r.result, { item: 'car', approved: true, asked: 'Approve car?' });
});

test('cancel of a suspended run makes it canceled; listWorkflowRuns filters and pages', T, async () => {
  const wf = approvalFlow('approval-4', []);
  const a = await wf.createRun({ resourceId: 'r1' });
  await a.start({ inputData: { item: 'a' } });
  const b = await wf.createRun({ resourceId: 'r2' });
  await b.start({ inputData: { item: 'b' } });
  await b.cancel();
  assert.equal((await wf.getWorkflowRunById(b.runId)).status, 'canceled');
  await assert.rejects(b.resume({ resumeData: { approved: true } }), /is not suspended \(status: canceled\)/);
  const all = await wf.listWorkflowRuns();
  assert.equal(all.total, 2);
  assert.deepEqual(all.runs.map((r) => r.runId), [b.runId, a.runId]);
  assert.deepEqual((await wf.listWorkflowRuns({ status: 'suspended' })).runs.map((r) => r.runId), [a.runId]);
  assert.deepEqual((await wf.listWorkflowRuns({ resourceId: 'r2' })).runs.map((r) => r.runId), [b.runId]);
  const page = await wf.listWorkflowRuns({ perPage: 1, page: 1 });
  assert.deepEqual([page.runs.map((r) => r.runId), page.total], [[a.runId], 2]);
  assert.equal(page.runs[0].snapshot.status, 'suspended');
  assert.equal(await wf.getWorkflowRunById('nope'), null);
  assert.throws(() => wf.listWorkflowRuns({ perPage: -1 }), (e) => e instanceof TypeError && e.message.startsWith('listWorkflowRuns(options).perPage: '));
});

noUnhandledRejections();

test('watch follows the run across its resume: attached before the start, and on a run made from a stored one', T, async () => {
  const wf = approvalFlow('approval-watch', []);
  const run = await wf.createRun();
  const seen = [];
  const unwatch = run.watch((e) => seen.push(`${e.type}${e.payload?.workflowStatus ? ` ${e.payload.workflowStatus}` : ''}`));
  assert.equal((await run.start({ inputData: { item: 'pen' } })).status, 'suspended');
  await run.resume({ resumeData: { approved: true } });
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(seen.filter((t) => t.startsWith('workflow-finish') || t === 'workflow-start'), [
    'workflow-start', 'workflow-finish suspended', 'workflow-start', 'workflow-finish success',
  ]);
  unwatch();

  // createRun({ runId }) of the suspended run of another Run object: watch, then resume.
  const second = await wf.createRun();
  await second.start({ inputData: { item: 'cup' } });
  const again = await wf.createRun({ runId: second.runId });
  const later = [];
  again.watch((e) => later.push(e.type));
  const r = await again.resume({ resumeData: { approved: false } });
  assert.equal(r.status, 'success');
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(later[0], 'workflow-start');
  assert.equal(later.at(-1), 'workflow-finish');
  assert.ok(later.includes('workflow-step-result'));
});
