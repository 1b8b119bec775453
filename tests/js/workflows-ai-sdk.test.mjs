// toAISdkStream(run.stream(…), { from: 'workflow' }) (SPEC §20.6): a workflow run as the AI SDK 5
// UI message stream, read through the real `ai` package the way useChat reads it
// (DefaultChatTransport validates every part against its schema; readUIMessageStream rebuilds the
// message a page renders).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createUIMessageStreamResponse, DefaultChatTransport, readUIMessageStream } from 'ai';
import { createStep, createWorkflow, toAISdkStream } from '../../pkg/index.node.js';
import { Agent, T, collect, modelFor, uid, useModelServer } from './helpers.mjs';

const server = useModelServer();

const obj = (properties) => ({ type: 'object', properties, required: Object.keys(properties) });
const num = { type: 'number' };
const add = (id, n) => createStep({ id, inputSchema: obj({ n: num }), outputSchema: obj({ n: num }), execute: async ({ inputData }) => ({ n: inputData.n + n }) });

/** Every part as sent, and the last message the reader rebuilt from the validated parts. */
async function readAsUseChat(uiStream) {
  const [forParts, forReader] = uiStream.tee();
  const partsDone = collect(forParts);
  const validated = new DefaultChatTransport().processResponseStream(createUIMessageStreamResponse({ stream: forReader }).body);
  let message;
  for await (const m of readUIMessageStream({ stream: validated, terminateOnError: true })) message = m;
  return { parts: await partsDone, message };
}

test("from: 'workflow': start, a data-workflow snapshot per step change, data-workflow-step per finished step, the final snapshot with outputs, finish", T, async () => {
  const wf = createWorkflow({ id: 'adder', inputSchema: obj({ n: num }), outputSchema: obj({ n: num }) }).then(add('one', 1)).then(add('two', 2)).commit();
  const run = await wf.createRun();
  const { parts, message } = await readAsUseChat(toAISdkStream(run.stream({ inputData: { n: 1 } }), { from: 'workflow' }));
  assert.deepEqual(parts.map((p) => p.type), [
    'start',
    'data-workflow',
    'data-workflow', 'data-workflow', 'data-workflow-step',
    'data-workflow', 'data-workflow', 'data-workflow-step',
    'data-workflow', 'finish',
  ]);
  assert.ok(parts.filter((p) => p.type === 'data-workflow').every((p) => p.id === run.runId));
  // While the run goes on, a finished step's output is not in the run snapshot; its step part has it.
  assert.deepEqual(parts[3].data.steps.one, { name: 'one', status: 'success', input: { n: 1 }, output: null, suspendPayload: null, resumePayload: null });
  assert.deepEqual(parts[4], { type: 'data-workflow-step', id: `${run.runId}:one`, data: { name: 'one', status: 'success', stepId: 'one', step: { name: 'one', status: 'success', input: { n: 1 }, output: { n: 2 }, suspendPayload: null, resumePayload: null } } });
  const last = parts[8].data;
  assert.equal(last.name, 'adder');
  assert.equal(last.status, 'success');
  assert.deepEqual(Object.keys(last.steps), ['one', 'two']);
  assert.deepEqual(last.steps.two.output, { n: 4 });
  assert.ok(last.output.usage, JSON.stringify(last.output));
  // useChat keeps one data-workflow part per id (the latest) and one per step.
  const data = message.parts.filter((p) => p.type === 'data-workflow');
  assert.equal(data.length, 1);
  assert.equal(data[0].data.status, 'success');
  assert.deepEqual(message.parts.filter((p) => p.type === 'data-workflow-step').map((p) => p.id), [`${run.runId}:one`, `${run.runId}:two`]);
});

test("from: 'workflow' over a stored run (getWorkflowRunById): the live run's parts, down to the final snapshot", T, async () => {
  const wf = createWorkflow({ id: 'adder-stored', inputSchema: obj({ n: num }), outputSchema: obj({ n: num }) }).then(add('one', 1)).then(add('two', 2)).commit();
  const run = await wf.createRun();
  const live = await readAsUseChat(toAISdkStream(run.stream({ inputData: { n: 1 } }), { from: 'workflow' }));
  const record = await wf.getWorkflowRunById(run.runId);
  const stored = await readAsUseChat(toAISdkStream(record, { from: 'workflow' }));
  assert.deepEqual(stored.parts.map((p) => p.type), live.parts.map((p) => p.type));
  const final = (m) => m.parts.find((p) => p.type === 'data-workflow');
  assert.equal(final(stored.message).id, run.runId);
  const { output: liveOutput, ...liveData } = final(live.message).data;
  const { output: storedOutput, ...storedData } = final(stored.message).data;
  assert.deepEqual(storedData, liveData);
  assert.ok(liveOutput.usage);
  assert.deepEqual(storedOutput, {}, 'usage is not stored');
  assert.deepEqual(stored.message.parts.filter((p) => p.type === 'data-workflow-step'), live.message.parts.filter((p) => p.type === 'data-workflow-step'));
  // A stored run is only read as a workflow's.
  assert.throws(() => toAISdkStream(record), { name: 'TypeError' });
});

test("from: 'workflow': an agent step's reply becomes text parts (not with includeTextStreamParts: false); writer.custom data passes through", T, async () => {
  const agent = new Agent({ id: 'echo-agent', instructions: 'Echo.', model: modelFor(server.current, 'echo', { headers: { 'x-test-id': uid('wf-ui') } }) });
  const note = createStep({ id: 'note', execute: async ({ inputData, writer }) => {
    await writer.custom({ type: 'data-note', data: { said: inputData.prompt } });
    return inputData;
  } });
  const wf = createWorkflow({ id: 'talk' }).then(note).then(createStep(agent)).commit();
  const run1 = await wf.createRun();
  const { parts, message } = await readAsUseChat(toAISdkStream(run1.stream({ inputData: { prompt: 'hello' } }), { from: 'workflow' }));
  assert.deepEqual(parts.filter((p) => p.type === 'data-note'), [{ type: 'data-note', data: { said: 'hello' } }]);
  const text = message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.equal(text, 'You said: hello');
  assert.equal(parts.filter((p) => p.type === 'start').length, 1, 'the agent step does not open a second message');
  assert.equal(parts.filter((p) => p.type === 'finish').length, 1);

  const run2 = await wf.createRun();
  const plain = await collect(toAISdkStream(run2.stream({ inputData: { prompt: 'hello' } }), { from: 'workflow', includeTextStreamParts: false }));
  assert.equal(plain.filter((p) => p.type.startsWith('text-')).length, 0);
  assert.equal(plain.at(-2).data.status, 'success');
});

test("from: 'workflow': a suspended step is shown with its payload and the run ends suspended", T, async () => {
  const ask = createStep({ id: 'ask', resumeSchema: obj({ ok: { type: 'boolean' } }), execute: async ({ resumeData, suspend }) => {
    if (!resumeData) return suspend({ question: 'Pay 5 €?' });
    return { paid: resumeData.ok };
  } });
  const wf = createWorkflow({ id: 'pay' }).then(ask).commit();
  const run = await wf.createRun();
  const parts = await collect(toAISdkStream(run.stream({ inputData: {} }), { from: 'workflow' }));
  const step = parts.find((p) => p.type === 'data-workflow-step');
  assert.equal(step.data.status, 'suspended');
  assert.deepEqual(step.data.step.suspendPayload, { question: 'Pay 5 €?' });
  assert.equal(parts.at(-2).data.status, 'suspended');
});

test("toAISdkStream options: a bad from or includeTextStreamParts is a TypeError naming the field", T, async () => {
  const wf = createWorkflow({ id: 'x', inputSchema: obj({ n: num }) }).then(add('a', 1)).commit();
  const out = (await wf.createRun()).stream({ inputData: { n: 1 } });
  // A workflow run read as an agent's output (the default from) is refused before its stream is taken.
  assert.throws(() => toAISdkStream(out), { name: 'TypeError', message: /^options\.from: 'agent' \(the default\), but output is a workflow run's; pass \{ from: 'workflow' \}/ });
  assert.equal((await collect(toAISdkStream(out, { from: 'workflow' }))).at(-1).type, 'finish');
  assert.throws(() => toAISdkStream({}, { from: 'network' }), { name: 'TypeError', message: /options\.from: expected 'agent' or 'workflow', got 'network'/ });
  assert.throws(() => toAISdkStream({}, { from: 'workflow', includeTextStreamParts: 'yes' }), { name: 'TypeError', message: /options\.includeTextStreamParts: expected a boolean, got/ });
  assert.throws(() => toAISdkStream(42, { from: 'workflow' }), { name: 'TypeError', message: /output: expected the output of a workflow run's stream\(\)/ });
});
