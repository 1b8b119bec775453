// Agents calling workflows (SPEC §20, issue 15): `new Agent({ workflows })` offers each as the
// tool `workflow-<key>` with the input { inputData, initialState? }; a call is a new run whose
// events stream inside the agent's fullStream as tool-output chunks, and the model reads
// { result, runId } or { error, runId }; a run that suspends suspends the call (its resumes:
// workflows-agent-suspend.test.mjs). Against the local model server's `tool-call` script (it
// calls the first tool with arguments made from its schema, then says what the tool said).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, noUnhandledRejections, requestsOf, types, uid, useModelServer } from './helpers.mjs';
import { createStep, createTool, createWorkflow, toAISdkStream } from '../../pkg/index.node.js';
import { createUIMessageStreamResponse, DefaultChatTransport, readUIMessageStream } from 'ai';

const server = useModelServer();

const obj = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required });
const num = { type: 'number' };

/** `double`: one step doubling `inputData.n`, writing a progress event on the way. */
function doubling(id = uid('double')) {
  const step = createStep({
    id: 'times-two',
    inputSchema: obj({ n: num }),
    outputSchema: obj({ n: num }),
    execute: async ({ inputData, writer }) => {
      await writer.write({ type: 'progress', at: inputData.n });
      return { n: inputData.n * 2 };
    },
  });
  return createWorkflow({ id, description: 'Doubles a number', inputSchema: obj({ n: num }), outputSchema: obj({ n: num }) }).then(step).commit();
}

function agentWith(config, script = 'tool-call') {
  const id = uid('wfagent');
  const agent = new Agent({ id: 'planner', instructions: 'Use the workflow.', model: modelFor(server.current, script, { headers: { 'x-test-id': id } }), ...config });
  return { id, agent };
}

test('a bad key, a value that is no workflow, an uncommitted workflow or a clash with a tool is a TypeError naming the field', () => {
  const M = { id: 'openai/gpt-4o-mini', apiKey: 'k' };
  const wf = doubling();
  const open = createWorkflow({ id: 'open', inputSchema: obj({ n: num }) }).then(createStep({ id: 's', execute: async () => 1 }));
  const clash = createTool({ id: 'workflow-double', description: 'x', inputSchema: obj({}), execute: async () => 1 });
  for (const [config, field, words] of [
    [{ workflows: { 'bad key!': wf } }, 'config.workflows.bad key!', 'workflow-<key>'],
    [{ workflows: { double: { id: 'x' } } }, 'config.workflows.double', 'createWorkflow'],
    [{ workflows: { double: open } }, 'config.workflows.double', 'commit()'],
    [{ workflows: [wf] }, 'config.workflows', 'an object of workflows'],
    [{ workflows: () => ({}) }, 'config.workflows', 'not supported'],
    [{ workflows: { double: wf }, tools: { 'workflow-double': clash } }, 'config.workflows', "'workflow-double'"],
  ]) {
    assert.throws(
      () => new Agent({ id: 'a', model: M, ...config }),
      (e) => e instanceof TypeError && e.message.includes(field) && e.message.includes(words),
      field,
    );
  }
});

test('each workflow is offered as workflow-<key> with its description and { inputData, initialState } from its schemas', T, async () => {
  const withState = createWorkflow({ id: uid('stateful'), inputSchema: obj({ q: { type: 'string' } }), stateSchema: obj({ seen: num }) })
    .then(createStep({ id: 's', execute: async () => ({}) }))
    .commit();
  const { id, agent } = agentWith({ workflows: { double: doubling(), stateful: withState } }, 'echo');
  await (await agent.stream('hi')).text;
  const [req] = requestsOf(server.current, id);
  const tools = Object.fromEntries(req.body.tools.map((t) => [t.function.name, t.function]));
  assert.equal(tools['workflow-double'].description, 'Doubles a number');
  assert.deepEqual(tools['workflow-double'].parameters.required, ['inputData']);
  assert.deepEqual(tools['workflow-double'].parameters.properties.inputData, obj({ n: num }));
  assert.equal(tools['workflow-double'].parameters.properties.initialState, undefined);
  assert.match(tools['workflow-stateful'].description, /Runs the workflow 'stateful/);
  assert.deepEqual(tools['workflow-stateful'].parameters.properties.initialState, obj({ seen: num }));
});

test("a call runs the workflow: its events stream between tool-call and tool-result, and the model reads { result, runId }", T, async () => {
  const wf = doubling();
  const { id, agent } = agentWith({ workflows: { double: wf } });
  const out = await agent.stream('Double 21.5');
  const chunks = await collect(out.fullStream);
  const t = types(chunks);
  const call = t.indexOf('tool-call');
  const result = t.indexOf('tool-result');
  assert.ok(call >= 0 && result > call, t.join(','));
  assert.equal(chunks[call].payload.toolName, 'workflow-double');
  assert.deepEqual(chunks[call].payload.args, { inputData: { n: 21.5 } });
  const between = chunks.slice(call + 1, result);
  assert.ok(between.every((c) => c.type === 'tool-output' && c.payload.toolName === 'workflow-double'));
  const events = between.map((c) => c.payload.output);
  assert.deepEqual(events.map((e) => e.type), ['workflow-start', 'workflow-step-start', 'workflow-step-output', 'workflow-step-result', 'workflow-finish']);
  assert.deepEqual(events[2].payload.output, { type: 'progress', at: 21.5 });
  const runId = events[0].runId;
  assert.ok(events.every((e) => e.runId === runId));
  assert.deepEqual(events.map((e) => e.from), ['WORKFLOW', 'WORKFLOW', 'USER', 'WORKFLOW', 'WORKFLOW']);
  assert.deepEqual(chunks[result].payload.result, { result: { n: 43 }, runId });
  // The model read the result; the run is stored like any other run of the workflow.
  const second = requestsOf(server.current, id)[1].body.messages.at(-1);
  assert.equal(second.role, 'tool');
  assert.deepEqual(JSON.parse(second.content), { result: { n: 43 }, runId });
  assert.match(await out.text, /43/);
  const stored = await wf.getWorkflowRunById(runId);
  assert.equal(stored.status, 'success');
  assert.deepEqual(stored.result, { n: 43 });
});

test('a failing workflow is a result with its error and runId, not a failed agent run', T, async () => {
  const broken = createWorkflow({ id: uid('broken'), inputSchema: obj({ n: num }) })
    .then(createStep({ id: 'boom', execute: async () => { throw new Error('the ledger is locked'); } }))
    .commit();
  const { agent } = agentWith({ workflows: { broken } });
  const out = await agent.stream('Go');
  const chunks = await collect(out.fullStream);
  const res = chunks.find((c) => c.type === 'tool-result');
  assert.match(res.payload.result.error, /the ledger is locked/);
  assert.equal(typeof res.payload.result.runId, 'string');
  const finish = chunks.filter((c) => c.type === 'tool-output').at(-1).payload.output;
  assert.equal(finish.type, 'workflow-finish');
  assert.equal(finish.payload.workflowStatus, 'failed');
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(await broken.getWorkflowRunById(res.payload.result.runId).then((r) => r.status), 'failed');
});

test('a workflow that suspends suspends the tool call: tool-call-suspended names the run and the step, the run ends "suspended"', T, async () => {
  const approve = createStep({
    id: 'approve',
    inputSchema: obj({ n: num }),
    resumeSchema: obj({ ok: { type: 'boolean' } }),
    execute: async ({ inputData, resumeData, suspend }) => {
      if (!resumeData) return suspend({ ask: `approve ${inputData.n}?` });
      return { approved: resumeData.ok };
    },
  });
  const wf = createWorkflow({ id: uid('approval'), inputSchema: obj({ n: num }) }).then(approve).commit();
  const { id, agent } = agentWith({ workflows: { approval: wf } });
  const out = await agent.stream('Pay 3', { closeOnSuspend: true });
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.filter((c) => c.type === 'tool-result').length, 0, 'the model is not told anything yet');
  const suspended = chunks.find((c) => c.type === 'tool-call-suspended').payload;
  const runId = chunks.find((c) => c.type === 'tool-output').payload.output.runId;
  assert.deepEqual(suspended.suspendPayload, { workflow: 'approval', runId, suspended: [['approve']], payload: { ask: 'approve 21.5?' } });
  assert.deepEqual(JSON.parse(suspended.resumeSchema), obj({ ok: { type: 'boolean' } }));
  assert.equal(await out.finishReason, 'suspended');
  assert.equal(requestsOf(server.current, id).length, 1);
  assert.equal((await wf.getWorkflowRunById(runId)).status, 'suspended');
});

test("aborting the agent cancels the workflow run it started", T, async () => {
  let started;
  const began = new Promise((r) => (started = r));
  const slow = createStep({
    id: 'slow',
    execute: ({ abortSignal }) => new Promise((resolve) => {
      started();
      abortSignal.addEventListener('abort', () => resolve({ stopped: true }));
    }),
  });
  const wf = createWorkflow({ id: uid('slow'), inputSchema: obj({ n: num }) }).then(slow).commit();
  const { agent } = agentWith({ workflows: { slow: wf } });
  const controller = new AbortController();
  const out = await agent.stream('Go', { abortSignal: controller.signal });
  const reading = collect(out.fullStream);
  await began;
  controller.abort();
  const chunks = await reading;
  assert.equal(chunks.at(-1).type, 'abort');
  const { runs } = await wf.listWorkflowRuns();
  assert.equal(runs.length, 1);
  let status;
  for (let i = 0; i < 100 && status !== 'canceled'; i++) {
    status = (await wf.getWorkflowRunById(runs[0].runId)).status;
    if (status !== 'canceled') await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(status, 'canceled');
});

test('toAISdkStream shows the workflow run as a data-tool-workflow card, replaced in place, with the step outputs at the end', T, async () => {
  const { agent } = agentWith({ workflows: { double: doubling('double-card') } });
  const [forParts, forReader] = toAISdkStream(await agent.stream('Double 21.5')).tee();
  const partsDone = collect(forParts);
  const validated = new DefaultChatTransport().processResponseStream(createUIMessageStreamResponse({ stream: forReader }).body);
  let message;
  for await (const m of readUIMessageStream({ stream: validated })) message = m;
  const cards = (await partsDone).filter((p) => p.type === 'data-tool-workflow');
  assert.ok(cards.length >= 3, JSON.stringify(cards));
  assert.ok(cards.every((c) => c.id === cards[0].id && c.data.name === 'double-card'));
  assert.equal(cards[0].data.status, 'running');
  const last = cards.at(-1).data;
  assert.deepEqual([last.status, last.steps['times-two'].status, last.steps['times-two'].output], ['success', 'success', { n: 43 }]);
  const inMessage = message.parts.filter((p) => p.type === 'data-tool-workflow');
  assert.equal(inMessage.length, 1, 'the reader keeps one card');
  assert.equal(inMessage[0].data.status, 'success');
  assert.equal(message.parts.find((p) => p.type === 'tool-workflow-double').state, 'output-available');
});

noUnhandledRejections();
