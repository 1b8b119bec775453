// Workflows (SPEC §20.1, §20.2): `options.validateOutputs` checks each step's output against its
// outputSchema (JSON Schema or zod), off by default as in the reference; an agent step whose
// processor aborts ends the run with status 'tripwire' and the processor's reason, not 'failed'.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Agent, T, collect, modelFor, uid, useModelServer } from './helpers.mjs';
import { createStep, createWorkflow } from '../../pkg/index.node.js';

const server = useModelServer();

const names = (events) => events.map((e) => `${e.type}${e.payload?.stepName ? ` ${e.payload.stepName}` : ''}`);

/** A workflow whose first step returns `{ n: 'twelve' }` against an outputSchema saying a number. */
function wrongOutput(id, schema, options) {
  let after = 0;
  const wf = createWorkflow({ id, inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, ...(options && { options }) })
    .then(createStep({ id: 'count', inputSchema: { type: 'object' }, outputSchema: schema, execute: async () => ({ n: 'twelve' }) }))
    .then(createStep({ id: 'after', inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, execute: async () => { after++; return {}; } }))
    .commit();
  return { wf, ran: () => after };
}

const jsonN = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };

test('without validateOutputs a mismatching output passes, as in the reference', T, async () => {
  const { wf, ran } = wrongOutput('vo-off', jsonN);
  const r = await (await wf.createRun()).start({ inputData: {} });
  assert.equal(r.status, 'success');
  assert.deepEqual(r.steps.count.output, { n: 'twelve' });
  assert.equal(ran(), 1);
});

test('validateOutputs: a JSON Schema mismatch fails the step with a ValidationError naming the path; no later step runs', T, async () => {
  const { wf, ran } = wrongOutput('vo-json', jsonN, { validateOutputs: true });
  const out = (await wf.createRun()).stream({ inputData: {} });
  const events = await collect(out.fullStream);
  const r = await out.result;
  assert.equal(r.status, 'failed');
  assert.ok(r.error instanceof Error);
  assert.equal(r.error.name, 'ValidationError');
  assert.equal(r.error.message, 'output.n: expected a number, got a string');
  assert.equal(r.steps.count.status, 'failed');
  assert.equal(ran(), 0);
  assert.deepEqual(names(events), ['workflow-start count', 'workflow-step-start count', 'workflow-step-result count', 'workflow-finish']);
  assert.deepEqual(events.at(-1).payload.metadata, { errorMessage: 'output.n: expected a number, got a string' });
});

test('validateOutputs with a zod schema; a matching output passes', T, async () => {
  const { wf } = wrongOutput('vo-zod', z.object({ n: z.number() }), { validateOutputs: true });
  const r = await (await wf.createRun()).start({ inputData: {} });
  assert.equal(r.status, 'failed');
  assert.match(r.error.message, /^output\.n: /);
  const ok = createWorkflow({ id: 'vo-ok', options: { validateOutputs: true } })
    .then(createStep({ id: 'good', outputSchema: z.object({ n: z.number() }), execute: async () => ({ n: 12 }) }))
    .commit();
  const r2 = await (await ok.createRun()).start({ inputData: {} });
  assert.equal(r2.status, 'success', r2.error?.message);
  assert.deepEqual(r2.result, { n: 12 });
});

test('options.validateInputs / validateOutputs of the wrong type are TypeErrors naming the field', () => {
  assert.throws(() => createWorkflow({ id: 'bad', options: { validateOutputs: 'yes' } }), {
    name: 'TypeError', message: "createWorkflow(config).options.validateOutputs: expected a boolean, got a string",
  });
  assert.throws(() => createWorkflow({ id: 'bad', options: { validateInputs: 1 } }), {
    name: 'TypeError', message: "createWorkflow(config).options.validateInputs: expected a boolean, got a number",
  });
});

test("an agent step whose processor aborts ends the run 'tripwire' with the processor's reason; later steps never run", T, async () => {
  const guard = {
    id: 'guard',
    processOutputStream: ({ part, abort }) => {
      if (part.type === 'text-delta' && part.payload.text.includes('secret')) abort('No secrets', { metadata: { word: 'secret' } });
      return part;
    },
  };
  const agent = new Agent({ id: 'talker', instructions: 'Echo.', model: modelFor(server.current, 'echo', { headers: { 'x-test-id': uid('trip') } }), outputProcessors: [guard] });
  let later = 0;
  let finished;
  const wf = createWorkflow({ id: 'trip', options: { onFinish: (r) => { finished = r; } } })
    .then(createStep(agent))
    .then(createStep({ id: 'later', execute: async () => { later++; return {}; } }))
    .commit();
  const out = (await wf.createRun()).stream({ inputData: { prompt: 'tell me the secret' } });
  const events = await collect(out.fullStream);
  const r = await out.result;
  assert.equal(r.status, 'tripwire', r.error?.message);
  assert.deepEqual(r.tripwire, { reason: 'No secrets', metadata: { word: 'secret' }, processorId: 'guard' });
  assert.equal(r.error, undefined, 'a tripwire is not an error');
  assert.equal(r.steps.talker.status, 'failed');
  assert.deepEqual(r.steps.talker.error, { name: 'TripWire', message: 'No secrets' });
  assert.equal(later, 0);
  assert.equal(out.status, 'tripwire');
  const fin = events.at(-1);
  assert.equal(fin.type, 'workflow-finish');
  assert.equal(fin.payload.workflowStatus, 'tripwire');
  assert.equal(fin.payload.metadata.tripwire.reason, 'No secrets');
  const forwarded = events.filter((e) => e.type === 'workflow-step-output').map((e) => e.payload.output.type);
  assert.ok(forwarded.includes('tripwire'), forwarded.join());
  assert.equal(finished?.status, 'tripwire', 'onFinish sees the tripwire result');
});

test("a step's ctx methods called after its execute returned throw that the step has ended; the run and its events are as before", T, async () => {
  let kept;
  const step = createStep({ id: 'keeps', execute: async ({ writer, setState, getInitData }) => { kept = { writer, setState, getInitData }; return { ok: 1 }; } });
  const wf = createWorkflow({ id: uid('late') }).then(step).commit();
  const run = await wf.createRun();
  const out = run.stream({ inputData: { n: 1 } });
  const events = await collect(out.fullStream);
  assert.equal((await out.result).status, 'success');
  for (const call of [() => kept.writer.write({ late: true }), () => kept.setState({}), () => kept.getInitData()]) {
    assert.throws(call, /this step has ended: its ctx methods work only while its execute runs/);
  }
  const again = await collect(run.observeStream().fullStream);
  assert.deepEqual(again, events, 'a late reader replays the same events');
});
