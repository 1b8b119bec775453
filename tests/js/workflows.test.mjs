// Workflows (SPEC §20) through the package: createStep / createWorkflow, the builder's control
// flow, run.start / run.stream, the §20.4 events and their order, readers of fullStream, watch,
// cancel, validation, bad arguments; an agent step against the local model server, a tool step.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, noUnhandledRejections, types, uid, useModelServer } from './helpers.mjs';
import { Mastra, createStep, createTool, createWorkflow } from '../../pkg/index.node.js';

const server = useModelServer();

const obj = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required });
const num = { type: 'number' };
const str = { type: 'string' };

/** A step adding `n` to `inputData.n`. */
const add = (id, n) => createStep({ id, inputSchema: obj({ n: num }), outputSchema: obj({ n: num }), execute: async ({ inputData }) => ({ n: inputData.n + n }) });
const names = (events) => events.map((e) => `${e.type}${e.payload?.stepName ? ` ${e.payload.stepName}` : ''}`);

test("the seed's example: workflow-start carries stepName, args, stepCallId, startedAt, status; the writer's event streams", T, async () => {
  const inputSchema = obj({ value: str });
  const outputSchema = obj({ value: str });
  const step1 = createStep({
    id: 'step-1',
    inputSchema,
    outputSchema,
    execute: async ({ inputData, writer }) => {
      await writer.write({ type: 'custom-event', status: 'pending' });
      return { value: '' };
    },
  });
  const testWorkflow = createWorkflow({ id: 'test-workflow', inputSchema, outputSchema }).then(step1).commit();
  const run = await testWorkflow.createRun();
  const stream = await run.stream({ inputData: { value: 'initial data' } });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.deepEqual(names(chunks), ['workflow-start step-1', 'workflow-step-start step-1', 'workflow-step-output step-1', 'workflow-step-result step-1', 'workflow-finish']);
  const [start] = chunks;
  assert.equal(start.runId, run.runId);
  assert.equal(start.from, 'WORKFLOW');
  assert.deepEqual(Object.keys(start.payload).sort(), ['args', 'startedAt', 'status', 'stepCallId', 'stepName', 'workflowId']);
  assert.deepEqual(start.payload.args, { value: 'initial data' });
  assert.equal(start.payload.status, 'running');
  assert.equal(typeof start.payload.startedAt, 'number');
  assert.equal(chunks[1].payload.stepCallId, start.payload.stepCallId);
  assert.deepEqual(chunks[2], { type: 'workflow-step-output', runId: run.runId, from: 'USER', payload: { stepName: 'step-1', runId: run.runId, output: { type: 'custom-event', status: 'pending' } } });
  assert.equal(stream.status, 'success');
  const result = await stream.result;
  assert.equal(result.status, 'success');
  assert.deepEqual(result.result, { value: '' });
  assert.deepEqual(await stream.usage, { inputTokens: 0, outputTokens: 0, totalTokens: 0, reasoningTokens: 0, cachedInputTokens: 0, cacheCreationInputTokens: 0 });
});

test('then, parallel, branch, map and the result shape', T, async () => {
  const yes = () => true;
  const wf = createWorkflow({ id: 'flow', inputSchema: obj({ n: num }) })
    .then(add('a', 1))
    .parallel([add('p1', 10), add('p2', 20)])
    .map(async ({ inputData }) => ({ n: inputData.p1.n + inputData.p2.n }))
    .branch([[yes, add('yes', 1)], [() => false, add('no', 2)]])
    .map({ total: { step: 'yes', path: 'n' }, init: { initData: true, path: 'n' }, fixed: { value: 'v' } })
    .commit();
  const result = await (await wf.createRun()).start({ inputData: { n: 1 } });
  assert.equal(result.status, 'success');
  assert.deepEqual(result.result, { total: 35, init: 1, fixed: 'v' });
  assert.deepEqual(result.steps.input, { n: 1 });
  assert.deepEqual(result.steps.p2.output, { n: 22 });
  assert.equal(result.steps.no, undefined, 'a branch whose condition is false does not run');
  assert.deepEqual(result.stepExecutionPath, ['a', 'p1', 'p2', 'mapping_flow_1', 'yes', 'mapping_flow_2']);
});

test('parallel steps all start before any ends, and their events interleave as they happen', T, async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const slow = createStep({ id: 'slow', execute: async () => { await gate; return 'slow'; } });
  const fast = createStep({ id: 'fast', execute: async () => { release(); return 'fast'; } });
  const wf = createWorkflow({ id: 'par' }).parallel([slow, fast]).commit();
  const events = await collect((await wf.createRun()).stream({ inputData: {} }).fullStream);
  assert.deepEqual(names(events).slice(1, 5), ['workflow-step-start slow', 'workflow-step-start fast', 'workflow-step-result fast', 'workflow-step-result slow']);
});

test('dowhile / dountil count iterations from 1; foreach keeps input order under concurrency', T, async () => {
  const counts = [];
  const loop = createWorkflow({ id: 'loop' })
    .dowhile(add('inc', 1), async ({ inputData, iterationCount }) => { counts.push(iterationCount); return inputData.n < 3; })
    .dountil(add('big', 10), ({ inputData }) => inputData.n > 25)
    .commit();
  assert.deepEqual((await (await loop.createRun()).start({ inputData: { n: 0 } })).result, { n: 33 });
  assert.deepEqual(counts, [1, 2, 3]);
  let running = 0, most = 0;
  const each = createStep({ id: 'each', execute: async ({ inputData }) => {
    running++; most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, (5 - inputData) * 5));
    running--;
    return inputData * 2;
  } });
  const wf = createWorkflow({ id: 'each' }).foreach(each, { concurrency: 3 }).commit();
  const out = (await wf.createRun()).stream({ inputData: [1, 2, 3, 4, 5] });
  const events = await collect(out.fullStream);
  assert.deepEqual((await out.result).result, [2, 4, 6, 8, 10]);
  assert.equal(most, 3);
  const progress = events.filter((e) => e.type === 'workflow-step-progress').map((e) => e.payload);
  assert.equal(progress.length, 5);
  assert.deepEqual(progress.at(-1).completedCount, 5);
});

test('sleep waits and passes the input on; a workflow is a step of another with inner ids', T, async () => {
  const inner = createWorkflow({ id: 'inner' }).then(add('x', 1)).then(add('y', 2)).commit();
  const wf = createWorkflow({ id: 'outer' }).sleep(5).then(inner).sleepUntil(new Date(Date.now() - 1)).then(add('z', 3)).commit();
  const out = (await wf.createRun()).stream({ inputData: { n: 0 } });
  const events = await collect(out);
  assert.deepEqual((await out.result).result, { n: 6 });
  const seen = names(events);
  assert.match(seen[1], /^workflow-step-waiting sleep_[0-9a-f-]{36}$/);
  assert.ok(seen.includes('workflow-step-result inner.x') && seen.includes('workflow-step-result inner'), seen.join());
});

test('setState is for later steps; getStepResult / getInitData; bail ends the run successfully', T, async () => {
  const one = createStep({ id: 'one', execute: async ({ state, setState, getInitData }) => { await setState({ count: 1 }); return { before: state, init: getInitData() }; } });
  const two = createStep({ id: 'two', execute: async ({ state, getStepResult, bail }) => bail({ state, one: getStepResult(one), missing: getStepResult('nope') }) });
  const wf = createWorkflow({ id: 'st', stateSchema: obj({ count: num }) }).then(one).then(two).then(add('never', 1)).commit();
  const r = await (await wf.createRun()).start({ inputData: { n: 1 }, initialState: { count: 0 }, outputOptions: { includeState: true } });
  assert.equal(r.status, 'success');
  assert.deepEqual(r.steps.one.output, { before: { count: 0 }, init: { n: 1 } });
  assert.deepEqual(r.result, { state: { count: 1 }, one: { before: { count: 0 }, init: { n: 1 } }, missing: null });
  assert.equal(r.steps.never, undefined);
  assert.deepEqual(r.state, { count: 1 });
});

test('a throwing step is retried (one step-start), and a failing one resolves failed with an Error', T, async () => {
  let tries = 0;
  const flaky = createStep({ id: 'flaky', retries: 2, execute: async ({ retryCount }) => { tries++; if (retryCount < 2) throw new Error('not yet'); return 'ok'; } });
  const out = (await createWorkflow({ id: 'r' }).then(flaky).commit().createRun()).stream({ inputData: {} });
  assert.deepEqual(names(await collect(out)), ['workflow-start flaky', 'workflow-step-start flaky', 'workflow-step-result flaky', 'workflow-finish']);
  assert.equal(tries, 3);
  class Boom extends Error { name = 'BoomError'; }
  const bad = createStep({ id: 'bad', execute: () => { throw new Boom('it broke'); } });
  let finished;
  const wf = createWorkflow({ id: 'f', retryConfig: { attempts: 1, delay: 1 }, options: { onFinish: (r) => (finished = r.status) } }).then(bad).then(add('after', 1)).commit();
  const s = (await wf.createRun()).stream({ inputData: { n: 1 } });
  const events = await collect(s.fullStream);
  const r = await s.result;
  assert.equal(r.status, 'failed');
  assert.ok(r.error instanceof Error);
  assert.equal(r.error.name, 'BoomError');
  assert.equal(r.error.message, 'it broke');
  assert.equal(r.steps.after, undefined);
  assert.deepEqual(events.at(-2).payload.error, { name: 'BoomError', message: 'it broke' });
  assert.deepEqual(events.at(-1).payload.metadata, { errorMessage: 'it broke' });
  assert.equal(finished, 'failed');
});

test('bad input: start() rejects with a ValidationError naming the field; stream() ends with workflow-finish failed', T, async () => {
  const wf = createWorkflow({ id: 'v', inputSchema: obj({ value: str }) }).then(createStep({ id: 's', execute: () => 1 })).commit();
  await assert.rejects((await wf.createRun()).start({ inputData: { value: 3 } }), { name: 'ValidationError', message: 'inputData.value: expected a string, got a number' });
  const out = (await wf.createRun()).stream({ inputData: {} });
  assert.deepEqual(types(await collect(out.fullStream)), ['workflow-start', 'workflow-finish']);
  await assert.rejects(out.result, { name: 'ValidationError', message: "inputData: missing required property 'value'" });
  const stdSchema = { '~standard': { version: 1, vendor: 't', validate: (v) => (typeof v?.n === 'number' ? { value: v } : { issues: [{ message: 'expected a number', path: ['n'] }] }) } };
  const std = createWorkflow({ id: 'std' }).then(createStep({ id: 's', inputSchema: stdSchema, execute: () => 1 })).commit();
  const r = await (await std.createRun()).start({ inputData: { n: 'x' } });
  assert.equal(r.status, 'failed', 'a step whose input fails its schema fails');
  assert.equal(r.error.name, 'ValidationError');
  assert.equal(r.error.message, 'inputData.n: expected a number');
});

test('fullStream: any number of readers, each replaying then live, each ending with workflow-finish; watch and observeStream', T, async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const wf = createWorkflow({ id: 'readers' }).then(createStep({ id: 'wait', execute: async () => { await gate; return { n: 1 }; } })).then(add('a', 1)).commit();
  const run = await wf.createRun();
  const watched = [];
  const unwatch = run.watch((e) => watched.push(e.type));
  const out = run.stream({ inputData: { n: 0 } });
  assert.equal(out.status, 'running');
  const first = collect(out.fullStream);
  await new Promise((r) => setTimeout(r, 5));
  const second = collect(out.fullStream);
  release();
  const [a, b] = await Promise.all([first, second]);
  assert.deepEqual(names(a), names(b));
  const late = await collect(run.observeStream().fullStream);
  assert.deepEqual(names(late), names(a));
  assert.equal(late.at(-1).type, 'workflow-finish');
  assert.deepEqual(watched, types(a));
  unwatch();
  const again = run.stream({ inputData: { n: 5 } });
  assert.equal(again.runId, run.runId, 'stream() again gives the same run\'s output');
  assert.deepEqual((await again.result).result, { n: 2 });
  await assert.rejects(run.start({ inputData: {} }), /This run already started/);
});

test('cancel: the running step may finish, no later step starts, the run ends canceled', T, async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  let signalled = false;
  const first = createStep({ id: 'first', execute: async ({ abortSignal }) => { abortSignal.addEventListener('abort', () => (signalled = true)); await gate; return 1; } });
  const wf = createWorkflow({ id: 'c' }).then(first).then(add('second', 1)).commit();
  const run = await wf.createRun();
  const out = run.stream({ inputData: { n: 0 } });
  await new Promise((r) => setTimeout(r, 5));
  await run.cancel();
  release();
  const events = await collect(out.fullStream);
  assert.deepEqual(names(events), ['workflow-start first', 'workflow-step-start first', 'workflow-step-result first', 'workflow-canceled', 'workflow-finish']);
  assert.equal(events.at(-1).payload.workflowStatus, 'canceled');
  assert.equal((await out.result).status, 'canceled');
  assert.ok(signalled, 'the step saw its abortSignal');
});

test('a tool as a step: execute(inputData, context) with workflow and writer; an agent step forwards its chunks', T, async () => {
  const tool = createTool({ id: 'shout', description: 'Shouts', inputSchema: obj({ text: str }), execute: async (input, context) => {
    await context.writer.write({ progress: 'half' });
    return { text: input.text.toUpperCase(), runId: context.workflow.runId };
  } });
  const agent = new Agent({ id: 'echo-agent', instructions: 'Echo.', model: modelFor(server.current, 'echo', { headers: { 'x-test-id': uid('wf') } }) });
  const wf = createWorkflow({ id: 'ta' })
    .then(createStep(tool))
    .map(({ inputData }) => ({ prompt: inputData.text }))
    .then(createStep(agent))
    .commit();
  const run = await wf.createRun();
  const out = run.stream({ inputData: { text: 'hi' } });
  const events = await collect(out.fullStream);
  const r = await out.result;
  assert.equal(r.status, 'success', JSON.stringify(r.error?.message));
  assert.deepEqual(r.steps.shout.output, { text: 'HI', runId: run.runId });
  assert.deepEqual(r.result, { text: 'You said: HI' });
  const outputs = events.filter((e) => e.type === 'workflow-step-output');
  assert.deepEqual(outputs[0].payload.output, { progress: 'half' });
  const agentChunks = outputs.filter((e) => e.payload.stepName === 'echo-agent').map((e) => e.payload.output);
  assert.ok(agentChunks.some((c) => c.type === 'text-delta'), agentChunks.map((c) => c.type).join());
  assert.ok(agentChunks.every((c) => c.from === 'AGENT' && c.runId && c.runId !== run.runId));
  const usage = await out.usage;
  assert.ok(usage.totalTokens > 0, JSON.stringify(usage));
});

test('awaiting a workflow (its builder has .then) rejects with a TypeError that says why', T, async () => {
  const wf = createWorkflow({ id: uid('thenable') }).then(createStep({ id: 's', execute: async () => ({}) })).commit();
  const made = async () => wf;
  await assert.rejects(made(), { name: 'TypeError', message: /^then\(step\): expected a step made by createStep\(…\) or a committed workflow, got a function \(a workflow's builder has \.then, so awaiting a workflow/ });
  // Wrapped, it goes through.
  const wrapped = async () => ({ workflow: wf });
  assert.equal((await wrapped()).workflow, wf);
});

test('createRun before commit or on an empty workflow throws an Error; bad builder arguments are TypeErrors naming the field', () => {
  const open = createWorkflow({ id: 'open' }).then(add('a', 1));
  assert.throws(() => open.createRun(), { name: 'Error', message: "Workflow 'open' is not committed: call .commit() before .createRun()" });
  assert.throws(() => createWorkflow({ id: 'empty' }).commit().createRun(), { message: "Workflow 'empty' has no steps: add one with .then(step) before .commit()" });
  for (const [f, field] of [
    [() => createWorkflow({}), 'createWorkflow(config).id'],
    [() => createStep({ id: 's' }), 'createStep(step).execute'],
    [() => createStep({ id: 's', retries: -1, execute() {} }), 'createStep(step).retries'],
    [() => createWorkflow({ id: 'w' }).then({ id: 'x', execute() {} }), 'then(step)'],
    [() => createWorkflow({ id: 'w' }).parallel([]), 'parallel(steps)'],
    [() => createWorkflow({ id: 'w' }).branch([[1, add('a', 1)]]), 'branch(branches)[0][0]'],
    [() => createWorkflow({ id: 'w' }).foreach(add('a', 1), { concurrency: 0 }), 'foreach(step, options).concurrency'],
    [() => createWorkflow({ id: 'w' }).map({ a: { nothing: 1 } }), 'map(mapping).a'],
    [() => createWorkflow({ id: 'w' }).sleep('soon'), 'sleep(ms)'],
  ]) {
    assert.throws(f, (e) => e instanceof TypeError && e.message.startsWith(`${field}: `), field);
  }
});

test('new Mastra({ workflows }): getWorkflow by key, getWorkflowById by id; a value that is no workflow is a TypeError', async () => {
  const wf = createWorkflow({ id: 'registered-flow' }).then(add('a', 1)).commit();
  const mastra = new Mastra({ workflows: { myFlow: wf } });
  assert.equal(mastra.getWorkflow('myFlow').id, 'registered-flow');
  assert.equal(mastra.getWorkflowById('registered-flow').id, 'registered-flow');
  const r = await (await mastra.getWorkflow('myFlow').createRun()).start({ inputData: { n: 1 } });
  assert.deepEqual(r.result, { n: 2 });
  assert.throws(() => mastra.getWorkflow('registered-flow'), (e) => e instanceof TypeError && e.message === "mastra.getWorkflow(key): no workflow 'registered-flow'; registered workflows: myFlow");
  assert.throws(() => new Mastra({ workflows: { bad: { id: 'x' } } }), (e) => e instanceof TypeError && e.message.startsWith('new Mastra(config).workflows.bad: '));
});

test('wasm-agent/lite leaves workflows out: createStep / createWorkflow throw an Error that says so', async () => {
  const lite = await import('../../pkg/lite/index.node.js');
  assert.throws(() => lite.createWorkflow({ id: 'w' }), { name: 'Error', message: "createWorkflow: this build of wasm-agent leaves out workflows (wasm-agent/lite); import 'wasm-agent' for them" });
  assert.throws(() => lite.createStep({ id: 's', execute() {} }), /createStep: this build of wasm-agent leaves out workflows/);
});

noUnhandledRejections();
