// An agent's workflow tool whose run suspends (SPEC §19.1–19.5 with §20): the tool call suspends
// with { workflow, runId, suspended, payload } and the step's resumeSchema, the wait is stored like
// any suspended call, and agent.resumeStream(resumeData, { runId }) resumes that workflow run
// inside the call: its events stream again as tool-output chunks and the model reads
// { result, runId }. Against the local model server's `tool-call` script (it calls the first tool
// with arguments made from its schema, then says what the tool said).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, noUnhandledRejections, requestsOf, types, uid, useModelServer } from './helpers.mjs';
import { createStep, createWorkflow, InMemoryStore, Memory } from '../../pkg/index.node.js';

const server = useModelServer();

const obj = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required });
const num = { type: 'number' };
const OK_SCHEMA = obj({ ok: { type: 'boolean' } });

/** `approve` suspends asking about `inputData.n`; resumed, it returns `{ approved, n }`. */
function approveStep(runs, resumeSchema = OK_SCHEMA, id = 'approve') {
  return createStep({
    id,
    inputSchema: obj({ n: num }),
    resumeSchema,
    execute: async ({ inputData, resumeData, suspendData, suspend }) => {
      runs.push({ step: id, resumeData, suspendData });
      if (!resumeData) return suspend({ ask: `approve ${inputData.n}?` });
      return { approved: resumeData.ok, n: inputData.n };
    },
  });
}

function approval(runs = [], resumeSchema) {
  return createWorkflow({ id: uid('approval'), inputSchema: obj({ n: num }) }).then(approveStep(runs, resumeSchema)).commit();
}

/** An agent offering `workflows`; `like` makes a second agent with the same id, model script and config. */
function agentWith(workflows, extra = {}) {
  const id = uid('wfsus');
  const agentId = uid('planner');
  const make = () => new Agent({ id: agentId, instructions: 'Use the workflow.', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), workflows, ...extra });
  return { id, agent: make(), like: make };
}

/** Streams 'Pay 3' until the call suspends (closeOnSuspend): the chunks and the suspension. */
async function suspendedCall(agent, options = {}) {
  const out = await agent.stream('Pay 3', { closeOnSuspend: true, ...options });
  const chunks = await collect(out.fullStream);
  const suspended = chunks.find((c) => c.type === 'tool-call-suspended')?.payload;
  assert.ok(suspended, types(chunks).join(','));
  return { out, chunks, suspended, wfRunId: suspended.suspendPayload.runId };
}

const invocations = (m) => m.content.parts.filter((p) => p.type === 'tool-invocation').map((p) => p.toolInvocation.state);

const rejection = async (promise) => {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected a rejection');
};

test('the workflow events come first, then tool-call-suspended and finish "suspended"; the wait is stored and listed', T, async () => {
  const runs = [];
  const wf = approval(runs);
  const { agent, id } = agentWith({ approval: wf });
  const { out, chunks, suspended, wfRunId } = await suspendedCall(agent);
  const t = types(chunks);
  const call = t.indexOf('tool-call');
  const at = t.indexOf('tool-call-suspended');
  assert.ok(call >= 0 && at > call, t.join(','));
  const between = chunks.slice(call + 1, at);
  assert.ok(between.every((c) => c.type === 'tool-output' && c.payload.toolName === 'workflow-approval'), t.join(','));
  const events = between.map((c) => c.payload.output);
  assert.deepEqual(events.map((e) => e.type), ['workflow-start', 'workflow-step-start', 'workflow-step-suspended', 'workflow-finish']);
  assert.ok(events.every((e) => e.runId === wfRunId));
  assert.deepEqual(t.slice(at), ['tool-call-suspended', 'finish']);
  assert.equal(chunks.at(-1).payload.stepResult.reason, 'suspended');
  assert.equal(await out.finishReason, 'suspended');
  assert.equal(t.includes('tool-result'), false);

  assert.equal(suspended.toolCallId, chunks[call].payload.toolCallId);
  assert.equal(suspended.toolName, 'workflow-approval');
  assert.deepEqual(suspended.args, { inputData: { n: 21.5 } });
  assert.deepEqual(suspended.suspendPayload, { workflow: 'approval', runId: wfRunId, suspended: [['approve']], payload: { ask: 'approve 21.5?' } });
  assert.deepEqual(JSON.parse(suspended.resumeSchema), OK_SCHEMA);
  assert.deepEqual(await out.suspendPayload, suspended.suspendPayload);

  const listed = await agent.listSuspendedRuns();
  assert.equal(listed.total, 1);
  assert.equal(listed.runs[0].runId, out.runId);
  const [waiting] = listed.runs[0].toolCalls;
  assert.deepEqual(
    [waiting.toolCallId, waiting.toolName, waiting.requiresApproval, waiting.suspendPayload, JSON.parse(waiting.resumeSchema)],
    [suspended.toolCallId, 'workflow-approval', false, suspended.suspendPayload, OK_SCHEMA],
  );
  assert.equal((await wf.getWorkflowRunById(wfRunId)).status, 'suspended');
  assert.equal(runs.length, 1);
  assert.equal(requestsOf(server.current, id).length, 1, 'the model has not been asked again');
});

test('agent.resumeStream resumes that workflow run inside the call: its events, then { result, runId } for the model', T, async () => {
  const runs = [];
  const wf = approval(runs);
  const { agent, id } = agentWith({ approval: wf });
  const { out, suspended, wfRunId } = await suspendedCall(agent);
  const resumed = await agent.resumeStream({ ok: true }, { runId: out.runId });
  assert.equal(resumed.runId, out.runId);
  const rest = await collect(resumed.fullStream);
  const t = types(rest);
  const at = t.indexOf('tool-result');
  assert.ok(at > 0, t.join(','));
  assert.ok(!t.includes('start'), 'no start chunk on a resume');
  const events = rest.slice(0, at).map((c) => {
    assert.equal(c.type, 'tool-output');
    assert.equal(c.payload.toolCallId, suspended.toolCallId);
    return c.payload.output;
  });
  assert.deepEqual(events.map((e) => e.type), ['workflow-start', 'workflow-step-start', 'workflow-step-result', 'workflow-finish']);
  assert.ok(events.every((e) => e.runId === wfRunId), 'the same workflow run, not a new one');
  assert.deepEqual(events[0].payload.args, { ok: true });
  const result = rest[at].payload;
  assert.equal(result.toolCallId, suspended.toolCallId);
  assert.deepEqual(result.result, { result: { approved: true, n: 21.5 }, runId: wfRunId });
  assert.equal(await resumed.finishReason, 'stop');
  assert.match(await resumed.text, /The tool said/);

  const second = requestsOf(server.current, id)[1].body.messages;
  const tool = second.filter((m) => m.role === 'tool');
  assert.equal(tool.length, 1);
  assert.deepEqual(JSON.parse(tool[0].content), { result: { approved: true, n: 21.5 }, runId: wfRunId });
  assert.deepEqual(runs[1], { step: 'approve', resumeData: { ok: true }, suspendData: { ask: 'approve 21.5?' } });
  assert.equal(runs.length, 2);
  const stored = await wf.getWorkflowRunById(wfRunId);
  assert.equal(stored.status, 'success');
  assert.deepEqual(stored.result, { approved: true, n: 21.5 });
  assert.equal((await wf.listWorkflowRuns()).total, 1, 'no second run was started');
  assert.equal((await agent.listSuspendedRuns()).total, 0);
  const again = await rejection(agent.resumeStream({ ok: true }, { runId: out.runId }));
  assert.deepEqual([again.name, again.code], ['ResumeError', 'not-found']);
});

test("resumeData that fails the step's resumeSchema is a ValidationError naming the field; both runs stay suspended", T, async () => {
  const runs = [];
  const wf = approval(runs);
  const { agent, id } = agentWith({ approval: wf });
  const { out, wfRunId } = await suspendedCall(agent);
  const bad = await rejection(agent.resumeStream({ ok: 'yes' }, { runId: out.runId }));
  assert.equal(bad.name, 'ValidationError');
  assert.match(bad.message, /\$\.ok/);
  assert.match(bad.message, /workflow-approval/);
  assert.equal(runs.length, 1, 'the step did not run again');
  assert.equal((await agent.listSuspendedRuns()).total, 1);
  assert.equal((await wf.getWorkflowRunById(wfRunId)).status, 'suspended');
  assert.equal(requestsOf(server.current, id).length, 1);

  const resumed = await agent.resumeStream({ ok: false }, { runId: out.runId });
  const rest = await collect(resumed.fullStream);
  assert.deepEqual(rest.find((c) => c.type === 'tool-result').payload.result, { result: { approved: false, n: 21.5 }, runId: wfRunId });
});

test("a resumeSchema the agent cannot check first (a Standard Schema without JSON Schema): the workflow refuses, the call suspends again saying why", T, async () => {
  const runs = [];
  const standard = {
    '~standard': {
      version: 1,
      vendor: 'hand-written',
      validate: (v) => (typeof v?.ok === 'boolean' ? { value: v } : { issues: [{ message: 'ok must be a boolean', path: ['ok'] }] }),
    },
  };
  const wf = approval(runs, standard);
  const { agent } = agentWith({ approval: wf });
  const { out, suspended, wfRunId } = await suspendedCall(agent);
  assert.equal(suspended.resumeSchema, undefined);
  const retry = await agent.resumeStream({ ok: 'yes' }, { runId: out.runId, closeOnSuspend: true });
  const rest = await collect(retry.fullStream);
  assert.deepEqual(types(rest).slice(-2), ['tool-call-suspended', 'finish']);
  assert.equal(types(rest).includes('tool-result'), false);
  const again = rest.find((c) => c.type === 'tool-call-suspended').payload;
  assert.equal(again.toolCallId, suspended.toolCallId);
  assert.match(again.suspendPayload.error, /ok must be a boolean/);
  assert.deepEqual({ ...again.suspendPayload, error: undefined }, { ...suspended.suspendPayload, error: undefined });
  assert.equal(await retry.finishReason, 'suspended');
  assert.equal(runs.length, 1, 'the step did not run with the refused data');
  assert.equal((await wf.getWorkflowRunById(wfRunId)).status, 'suspended');

  const done = await agent.resumeStream({ ok: true }, { runId: out.runId });
  const last = await collect(done.fullStream);
  assert.deepEqual(last.find((c) => c.type === 'tool-result').payload.result, { result: { approved: true, n: 21.5 }, runId: wfRunId });
});

test('a workflow that suspends at a later step (inside a nested workflow) suspends the call again; the next resume finishes it', T, async () => {
  const runs = [];
  const confirm = createStep({
    id: 'confirm',
    inputSchema: obj({ approved: { type: 'boolean' }, n: num }),
    resumeSchema: obj({ code: { type: 'string' } }),
    execute: async ({ inputData, resumeData, suspend }) => {
      runs.push({ step: 'confirm', resumeData });
      if (!resumeData) return suspend({ ask: 'the code' });
      return { ...inputData, code: resumeData.code };
    },
  });
  const inner = createWorkflow({ id: 'confirming', inputSchema: obj({ approved: { type: 'boolean' }, n: num }) }).then(confirm).commit();
  const wf = createWorkflow({ id: uid('two-asks'), inputSchema: obj({ n: num }) }).then(approveStep(runs)).then(inner).commit();
  const { agent } = agentWith({ pay: wf });
  const { out, suspended, wfRunId } = await suspendedCall(agent);
  assert.deepEqual(suspended.suspendPayload.suspended, [['approve']]);

  const second = await agent.resumeStream({ ok: true }, { runId: out.runId, closeOnSuspend: true });
  const mid = await collect(second.fullStream);
  const asked = mid.find((c) => c.type === 'tool-call-suspended').payload;
  assert.equal(asked.toolCallId, suspended.toolCallId);
  assert.deepEqual(asked.suspendPayload, { workflow: 'pay', runId: wfRunId, suspended: [['confirming', 'confirm']], payload: { ask: 'the code' } });
  assert.deepEqual(JSON.parse(asked.resumeSchema), obj({ code: { type: 'string' } }));
  assert.equal(await second.finishReason, 'suspended');
  const bad = await rejection(agent.resumeStream({ ok: true }, { runId: out.runId }));
  assert.equal(bad.name, 'ValidationError', "now the nested step's schema applies");
  assert.match(bad.message, /'code'/);

  const third = await agent.resumeStream({ code: '7' }, { runId: out.runId });
  const end = await collect(third.fullStream);
  assert.deepEqual(end.find((c) => c.type === 'tool-result').payload.result, { result: { approved: true, n: 21.5, code: '7' }, runId: wfRunId });
  assert.deepEqual(runs.map((r) => r.step), ['approve', 'approve', 'confirm', 'confirm']);
  assert.equal(await third.finishReason, 'stop');
});

test('parallel steps that both suspend are resumed one at a time, in the order of suspended', T, async () => {
  const runs = [];
  const wf = createWorkflow({ id: uid('both'), inputSchema: obj({ n: num }) }).parallel([approveStep(runs, OK_SCHEMA, 'a'), approveStep(runs, OK_SCHEMA, 'b')]).commit();
  const { agent } = agentWith({ both: wf });
  const { out, suspended, wfRunId } = await suspendedCall(agent);
  assert.deepEqual([suspended.suspendPayload.suspended, suspended.suspendPayload.payload], [[['a'], ['b']], { ask: 'approve 21.5?' }]);
  const first = await agent.resumeStream({ ok: true }, { runId: out.runId, closeOnSuspend: true });
  const mid = await collect(first.fullStream);
  assert.deepEqual(mid.find((c) => c.type === 'tool-call-suspended').payload.suspendPayload.suspended, [['b']]);
  const second = await agent.resumeStream({ ok: false }, { runId: out.runId });
  const end = await collect(second.fullStream);
  assert.deepEqual(end.find((c) => c.type === 'tool-result').payload.result, {
    result: { a: { approved: true, n: 21.5 }, b: { approved: false, n: 21.5 } },
    runId: wfRunId,
  });
  assert.deepEqual(runs.map((r) => [r.step, r.resumeData?.ok]), [['a', undefined], ['b', undefined], ['a', true], ['b', false]]);
});

test('two concurrent resumes of the suspended call: one runs the workflow, the other is a ResumeError in-progress', T, async () => {
  const runs = [];
  const wf = approval(runs);
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, like } = agentWith({ approval: wf }, { memory });
  const twin = like();
  const { out, wfRunId } = await suspendedCall(agent, { memory: { thread: 't-race', resource: 'u1' } });
  const settled = await Promise.allSettled([
    agent.resumeStream({ ok: true }, { runId: out.runId }),
    twin.resumeStream({ ok: false }, { runId: out.runId }),
  ]);
  const won = settled.filter((s) => s.status === 'fulfilled');
  const lost = settled.filter((s) => s.status === 'rejected');
  assert.deepEqual([won.length, lost.length], [1, 1]);
  assert.deepEqual([lost[0].reason.name, lost[0].reason.code], ['ResumeError', 'in-progress']);
  const rest = await collect(won[0].value.fullStream);
  assert.equal(rest.find((c) => c.type === 'tool-result').payload.result.runId, wfRunId);
  assert.equal(runs.length, 2, 'the step was resumed once');
  assert.equal((await wf.getWorkflowRunById(wfRunId)).status, 'success');
});

test('a new Agent over the same storage (a reload) resumes the call and its workflow run', T, async () => {
  const runs = [];
  const wf = approval(runs);
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, like, id } = agentWith({ approval: wf }, { memory });
  const { out, suspended, wfRunId } = await suspendedCall(agent, { memory: { thread: 't-reload', resource: 'u1' } });
  const [, waiting] = await memory.listMessages({ threadId: 't-reload' });
  assert.deepEqual(invocations(waiting), ['suspended']);
  assert.deepEqual(waiting.content.metadata.suspendedTools[suspended.toolCallId].suspendPayload, suspended.suspendPayload);
  const after = like();
  const listed = await after.listSuspendedRuns({ threadId: 't-reload' });
  assert.deepEqual(listed.runs.map((r) => r.runId), [out.runId]);
  assert.equal(listed.runs[0].toolCalls[0].suspendPayload.runId, wfRunId);
  const resumed = await after.resumeStream({ ok: true }, { runId: out.runId });
  const rest = await collect(resumed.fullStream);
  assert.deepEqual(rest.find((c) => c.type === 'tool-result').payload.result, { result: { approved: true, n: 21.5 }, runId: wfRunId });
  assert.equal(await resumed.finishReason, 'stop');
  const body = requestsOf(server.current, id)[1].body;
  assert.equal(body.messages.find((m) => m.role === 'user').content, 'Pay 3');
  assert.deepEqual(JSON.parse(body.messages.find((m) => m.role === 'tool').content), { result: { approved: true, n: 21.5 }, runId: wfRunId });
  assert.equal((await after.listSuspendedRuns()).total, 0);
  const done = (await memory.listMessages({ threadId: 't-reload' })).find((m) => m.id === waiting.id);
  assert.deepEqual(invocations(done), ['result']);
  assert.equal(done.content.metadata, undefined, 'the waiting entry is gone');
});

test('a workflow run resumed elsewhere first: the resumed call tells the model, the run is not resumed twice', T, async () => {
  const runs = [];
  const wf = approval(runs);
  const { agent } = agentWith({ approval: wf });
  const { out, wfRunId } = await suspendedCall(agent);
  const direct = await (await wf.createRun({ runId: wfRunId })).resume({ step: 'approve', resumeData: { ok: true } });
  assert.equal(direct.status, 'success');
  const resumed = await agent.resumeStream({ ok: false }, { runId: out.runId });
  const rest = await collect(resumed.fullStream);
  const { result } = rest.find((c) => c.type === 'tool-result').payload;
  assert.equal(result.runId, wfRunId);
  assert.match(result.error, /not suspended/);
  assert.equal(runs.length, 2);
  assert.deepEqual((await wf.getWorkflowRunById(wfRunId)).result, { approved: true, n: 21.5 });
});

noUnhandledRejections();
