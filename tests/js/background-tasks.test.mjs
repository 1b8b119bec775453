// Background tasks through the package (SPEC §8), outside of or around untilIdle: concurrency
// and backpressure ('reject', 'fallback-sync', 'queue'), retries and configured timeouts,
// listBackgroundTasks and cancelBackgroundTask, the deprecated streamUntilIdle(), and a plain
// stream whose task ends after the stream closed (the next turn sees the real result).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, noUnhandledRejections, useModelServer } from './helpers.mjs';
import {
  TB,
  bgAgent,
  bgScript,
  cancelAll,
  createTool,
  describe,
  indexWhere,
  isPlaceholder,
  ofType,
  read,
  scope,
  slowTool,
  storedText,
  textOf,
  toolMessages,
  waitFor,
  waitForTask,
} from './background-helpers.mjs';

const server = useModelServer();

const TWO_CALLS = [
  { name: 'research', id: 'call_a', args: { topic: 'a' } },
  { name: 'research', id: 'call_b', args: { topic: 'b' } },
];

// ---------------------------------------------------------------------------------------------
// Concurrency and backpressure

test("globalConcurrency 1 + backpressure 'reject': the second call's tool-error says it could not start", TB, async () => {
  const s = bgScript(server.current, { calls: TWO_CALLS });
  const { agent } = bgAgent(s.model, {
    tools: { research: slowTool({ ms: 300 }) },
    backgroundTasks: { enabled: true, globalConcurrency: 1, backpressure: 'reject' },
  });
  const out = await agent.stream('Research a and b', { untilIdle: true, memory: scope() });
  const { chunks } = await read(out.fullStream);
  const started = ofType(chunks, 'background-task-started');
  const errors = ofType(chunks, 'tool-error');
  assert.equal(started.length, 1, describe(chunks));
  assert.equal(errors.length, 1, describe(chunks));
  assert.notEqual(started[0].payload.toolCallId, errors[0].payload.toolCallId);
  assert.match(JSON.stringify(errors[0].payload.error), /could not start/);
  // The model was told in the same turn.
  const ack = s.log.find((e) => e.kind === 'ack');
  const msgs = toolMessages(ack.body);
  assert.equal(msgs.length, 2);
  assert.ok(msgs.some((m) => /could not start/.test(m.content)), JSON.stringify(msgs));
  assert.ok(msgs.some((m) => isPlaceholder(m.content)), JSON.stringify(msgs));
  // Only the accepted task was recorded; the continuation names it alone.
  assert.equal(agent.listBackgroundTasks().length, 1);
  const cont = s.log.find((e) => e.kind === 'continuation');
  assert.match(cont.directive, new RegExp(`tool call ${started[0].payload.toolCallId}`));
  assert.doesNotMatch(cont.directive, new RegExp(`tool call ${errors[0].payload.toolCallId}`));
});

test("globalConcurrency 1 + backpressure 'fallback-sync': the second call runs in the foreground, its real result in the first turn", TB, async () => {
  const s = bgScript(server.current, { calls: TWO_CALLS });
  const record = [];
  // Calls are dispatched in order: call_a takes the one slot (and 600 ms, so that it ends after
  // the first turn), call_b (100 ms) runs in the foreground within the first turn.
  const { agent } = bgAgent(s.model, {
    tools: { research: slowTool({ ms: ({ topic }) => (topic === 'a' ? 600 : 100), record }) },
    backgroundTasks: { enabled: true, globalConcurrency: 1, backpressure: 'fallback-sync' },
  });
  const out = await agent.stream('Research a and b', { untilIdle: true, memory: scope() });
  const { chunks } = await read(out.fullStream);
  const firstFinish = indexWhere(chunks, (c) => c.type === 'finish');
  const started = ofType(chunks, 'background-task-started');
  assert.equal(started.length, 1, describe(chunks));
  assert.equal(started[0].payload.toolCallId, 'call_a');
  const results = chunks.slice(0, firstFinish).filter((c) => c.type === 'tool-result');
  const foreground = results.find((c) => c.payload.toolCallId !== started[0].payload.toolCallId);
  assert.ok(foreground, describe(chunks));
  assert.match(foreground.payload.result.findings, /research found 3 facts/, 'the real result, not a placeholder');
  assert.equal(record.length, 2, 'both calls ran');
  assert.equal(agent.listBackgroundTasks().length, 1);
  // The model saw one placeholder and one real result in the first turn.
  const ack = s.log.find((e) => e.kind === 'ack');
  const msgs = toolMessages(ack.body);
  assert.equal(msgs.filter((m) => isPlaceholder(m.content)).length, 1, JSON.stringify(msgs));
  assert.equal(ofType(chunks, 'finish').length, 2, 'the background one still got its continuation');
});

test("globalConcurrency 1 + backpressure 'queue': the second task waits (pending), starts after the first ended, one continuation for both", TB, async () => {
  const s = bgScript(server.current, { calls: TWO_CALLS });
  const { agent } = bgAgent(s.model, {
    tools: { research: slowTool({ ms: 250 }) },
    backgroundTasks: { enabled: true, globalConcurrency: 1, backpressure: 'queue' },
  });
  const sc = scope();
  const out = await agent.stream('Research a and b', { untilIdle: true, memory: sc });
  let statusesAfterFirstTurn;
  const { chunks } = await read(out.fullStream, (c) => {
    if (c.type === 'finish' && !statusesAfterFirstTurn) {
      statusesAfterFirstTurn = agent.listBackgroundTasks({ threadId: sc.thread }).map((t) => t.status).sort();
    }
  });
  assert.deepEqual(statusesAfterFirstTurn, ['pending', 'running']);
  assert.equal(ofType(chunks, 'background-task-started').length, 2, 'both got a placeholder at once');
  const running = ofType(chunks, 'background-task-running');
  const completed = ofType(chunks, 'background-task-completed');
  assert.equal(running.length, 2, describe(chunks));
  assert.equal(completed.length, 2, describe(chunks));
  const firstDone = completed.find((c) => c.payload.taskId === running[0].payload.taskId);
  assert.ok(Date.parse(running[1].payload.startedAt) >= Date.parse(firstDone.payload.completedAt), 'started after the first ended');
  const tasks = agent.listBackgroundTasks({ threadId: sc.thread });
  assert.ok(tasks.every((t) => t.status === 'completed'));
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation']);
  assert.match(s.log[2].directive, /call_a/);
  assert.match(s.log[2].directive, /call_b/);
});

test("perAgentConcurrency 1 + 'reject' refuses the second call of the same agent", TB, async () => {
  const s = bgScript(server.current, { calls: TWO_CALLS });
  const { agent } = bgAgent(s.model, {
    tools: { research: slowTool({ ms: 300 }) },
    backgroundTasks: { enabled: true, perAgentConcurrency: 1, backpressure: 'reject' },
  });
  const out = await agent.stream('Research a and b', { memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.equal(ofType(chunks, 'background-task-started').length, 1, describe(chunks));
  assert.equal(ofType(chunks, 'tool-error').length, 1, describe(chunks));
  await waitFor(() => agent.listBackgroundTasks({ status: 'completed' }).length === 1, 'the task to end');
});

// ---------------------------------------------------------------------------------------------
// Retries and configured timeouts

test('a tool with background.maxRetries retries a failed attempt: attempts 2, completed', TB, async () => {
  const s = bgScript(server.current);
  let calls = 0;
  const flaky = createTool({
    id: 'flaky',
    description: 'fails once',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
    background: { enabled: true, maxRetries: 1 },
    execute: async () => {
      calls += 1;
      await delay(200);
      if (calls === 1) throw new Error('first attempt fails');
      return { ok: true, calls };
    },
  });
  const { agent } = bgAgent(s.model, { tools: { flaky } });
  const sc = scope();
  const out = await agent.stream('Go', { untilIdle: true, memory: sc });
  const { chunks } = await read(out.fullStream);
  const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
  assert.equal(task.status, 'completed', describe(chunks));
  assert.equal(task.attempts, 2);
  assert.deepEqual(task.result, { ok: true, calls: 2 });
  assert.equal(ofType(chunks, 'background-task-failed').length, 0);
  assert.match(s.log.at(-1).directive, /Completed: flaky/);
});

test("backgroundTasks.tools: { name: { timeoutMs } } applies and wins over the tool's own timeout", TB, async () => {
  const s = bgScript(server.current);
  const record = [];
  const { agent } = bgAgent(s.model, {
    tools: { research: slowTool({ ms: 2000, background: { enabled: true, timeoutMs: 60_000 }, record }) },
    backgroundTasks: { enabled: true, tools: { research: { enabled: true, timeoutMs: 300 } } },
  });
  const sc = scope();
  const out = await agent.stream('Go', { untilIdle: true, memory: sc });
  const { chunks } = await read(out.fullStream);
  const [failed] = ofType(chunks, 'background-task-failed');
  assert.match(failed.payload.error.message, /timed out after 300 ms/, describe(chunks));
  assert.equal(agent.listBackgroundTasks({ threadId: sc.thread })[0].status, 'timed_out');
  assert.equal(record[0].signalAborted, true);
  assert.match(s.log.at(-1).directive, /research \(tool call call_research_0\) timed out/);
});

test("backgroundTasks.tools: 'all' sends a tool without its own background setting to the background", TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, {
    tools: { research: slowTool({ ms: 300, background: null }) },
    backgroundTasks: { enabled: true, tools: 'all' },
  });
  const out = await agent.stream('Go', { untilIdle: true, memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.equal(ofType(chunks, 'background-task-started').length, 1, describe(chunks));
  assert.equal(ofType(chunks, 'background-task-completed').length, 1, describe(chunks));
});

// ---------------------------------------------------------------------------------------------
// listBackgroundTasks, cancelBackgroundTask

const TASK_KEYS = [
  'agentId', 'args', 'attempts', 'completedAt', 'createdAt', 'error', 'id', 'resourceId', 'result', 'runId', 'startedAt', 'status', 'threadId', 'toolCallId', 'toolName',
];

test('listBackgroundTasks: every field, filters by threadId and status, oldest first, only this agent', TB, async () => {
  const s = bgScript(server.current, {
    calls: (ctx) => {
      const text = ctx.body.messages.at(-1).content;
      return text === 'both' ? [{ name: 'quick', id: 'call_q' }, { name: 'long', id: 'call_l' }] : [{ name: 'quick', id: 'call_q2' }];
    },
  });
  const tools = { quick: slowTool({ name: 'quick', ms: 50 }), long: slowTool({ name: 'long', ms: 3000 }) };
  const { agent } = bgAgent(s.model, { tools });
  const { agent: other } = bgAgent(s.model, { tools });
  const a = scope();
  const b = { thread: `${a.thread}-b`, resource: a.resource };
  try {
    const outA = await agent.stream('both', { memory: a });
    await read(outA.fullStream);
    const outB = await agent.stream('one', { memory: b });
    await read(outB.fullStream);
    await waitFor(() => agent.listBackgroundTasks({ status: 'completed' }).length === 2, 'the quick tasks to end');

    const all = agent.listBackgroundTasks();
    assert.equal(all.length, 3);
    assert.deepEqual(all.map((t) => t.toolCallId), ['call_q', 'call_l', 'call_q2'], 'oldest first');
    assert.deepEqual(agent.listBackgroundTasks({}).length, 3);
    for (const t of all) assert.deepEqual(Object.keys(t).sort(), TASK_KEYS);

    const long = all[1];
    assert.match(long.id, /^task_/);
    assert.equal(long.toolName, 'long');
    assert.deepEqual(long.args, { topic: 'solana' });
    assert.equal(long.agentId, agent.id);
    assert.equal(long.runId, outA.runId);
    assert.equal(long.threadId, a.thread);
    assert.equal(long.resourceId, a.resource);
    assert.equal(long.status, 'running');
    assert.equal(long.result, null);
    assert.equal(long.error, null);
    assert.equal(long.completedAt, null);
    assert.ok(!Number.isNaN(Date.parse(long.createdAt)) && !Number.isNaN(Date.parse(long.startedAt)));
    assert.equal(long.attempts, 1);

    const quick = all[0];
    assert.equal(quick.status, 'completed');
    assert.deepEqual(quick.result, { name: 'quick', topic: 'solana', findings: 'quick found 3 facts about solana' });
    assert.ok(Date.parse(quick.completedAt) >= Date.parse(quick.startedAt));

    assert.deepEqual(agent.listBackgroundTasks({ threadId: a.thread }).map((t) => t.toolCallId), ['call_q', 'call_l']);
    assert.deepEqual(agent.listBackgroundTasks({ threadId: b.thread }).map((t) => t.toolCallId), ['call_q2']);
    assert.deepEqual(agent.listBackgroundTasks({ status: 'completed' }).map((t) => t.toolCallId), ['call_q', 'call_q2']);
    assert.deepEqual(agent.listBackgroundTasks({ threadId: a.thread, status: 'running' }).map((t) => t.toolCallId), ['call_l']);
    assert.deepEqual(agent.listBackgroundTasks({ threadId: b.thread, status: 'running' }), []);
    assert.deepEqual(agent.listBackgroundTasks({ threadId: 'no-such-thread' }), []);
    assert.deepEqual(other.listBackgroundTasks(), [], "another agent does not see this agent's tasks");

    assert.throws(() => agent.listBackgroundTasks({ status: 'done' }), (e) => e instanceof TypeError && /status/.test(e.message));
    assert.throws(() => agent.listBackgroundTasks({ threadId: 7 }), TypeError);

    // cancelBackgroundTask
    assert.equal(agent.cancelBackgroundTask('task_does-not-exist'), false);
    assert.equal(other.cancelBackgroundTask(long.id), false, "another agent cannot cancel this agent's task");
    assert.throws(() => agent.cancelBackgroundTask(42), TypeError);
    assert.equal(agent.cancelBackgroundTask(long.id), true);
    const cancelled = await waitForTask(agent, long.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(agent.cancelBackgroundTask(long.id), false, 'already ended');
    assert.equal(agent.cancelBackgroundTask(quick.id), false, 'a completed task');
  } finally {
    cancelAll(agent);
  }
});

test('listBackgroundTasks on an agent without background tasks is empty; cancelBackgroundTask is false', TB, async () => {
  const agent = new Agent({ id: 'plain', model: { id: 'openai/echo', url: server.current.url, apiKey: 'k' } });
  assert.deepEqual(agent.listBackgroundTasks(), []);
  assert.deepEqual(agent.listBackgroundTasks({ status: 'running' }), []);
  assert.equal(agent.cancelBackgroundTask('task_x'), false);
});

// ---------------------------------------------------------------------------------------------
// streamUntilIdle (deprecated)

test('streamUntilIdle() behaves like untilIdle (maxIdleMs included) and warns once via console.warn', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const warned = [];
  const original = console.warn;
  console.warn = (...args) => warned.push(args.join(' '));
  let second;
  try {
    const out = await agent.streamUntilIdle('Research', { memory: scope() });
    const { chunks } = await read(out.fullStream);
    assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
    assert.match(textOf(chunks), /Results are in/);

    // maxIdleMs is honoured: a 2 s task, 150 ms of quiet, the stream closes.
    const s2 = bgScript(server.current);
    ({ agent: second } = bgAgent(s2.model, { tools: { research: slowTool({ ms: 2000 }) } }));
    const out2 = await second.streamUntilIdle('Research', { memory: scope(), maxIdleMs: 150 });
    const r2 = await read(out2.fullStream);
    const finishAt = r2.at[indexWhere(r2.chunks, (c) => c.type === 'finish')];
    assert.ok(r2.closedAt - finishAt >= 140);
    assert.equal(second.listBackgroundTasks()[0].status, 'running', 'closed by the idle timer');
  } finally {
    console.warn = original;
    if (second) cancelAll(second);
  }
  const deprecations = warned.filter((w) => /streamUntilIdle/.test(w) && /deprecated/i.test(w));
  assert.equal(deprecations.length, 1, JSON.stringify(warned));
  assert.match(deprecations[0], /untilIdle/);
});

// ---------------------------------------------------------------------------------------------
// A plain stream whose task ends after it closed

test('a plain stream closes after its turn; the task ends later and the next user turn sees the real result', TB, async () => {
  const s = bgScript(server.current);
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const sc = scope();
  const out = await agent.stream('Research', { memory: sc });
  const { chunks } = await read(out.fullStream);
  assert.equal(ofType(chunks, 'background-task-started').length, 1, describe(chunks));
  assert.equal(chunks.at(-1).type, 'finish');
  const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
  assert.equal(task.status, 'running', 'the plain stream did not wait');
  await waitForTask(agent, task.id);
  await waitFor(async () => /research found 3 facts/.test(await storedText(memory, sc.thread)), 'the result in memory');

  const next = await agent.stream('What did you find?', { memory: sc });
  await read(next.fullStream);
  const last = s.log.at(-1);
  assert.equal(last.kind, 'user');
  const msgs = toolMessages(last.body);
  assert.equal(msgs.length, 1, JSON.stringify(last.body.messages));
  assert.equal(msgs[0].toolCallId, 'call_research_0');
  assert.ok(!isPlaceholder(msgs[0].content), msgs[0].content);
  assert.match(msgs[0].content, /research found 3 facts about solana/);
});

test('a plain stream whose task fails: the next user turn sees the error, not the placeholder', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 100, fail: 'the archive was unreachable' }) } });
  const sc = scope();
  const out = await agent.stream('Research', { memory: sc });
  await read(out.fullStream);
  const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
  const done = await waitForTask(agent, task.id);
  assert.equal(done.status, 'failed');
  assert.match(done.error, /the archive was unreachable/);
  const next = await agent.stream('And?', { memory: sc });
  await read(next.fullStream);
  const msgs = toolMessages(s.log.at(-1).body);
  assert.equal(msgs.length, 1);
  assert.ok(!isPlaceholder(msgs[0].content), msgs[0].content);
  assert.match(msgs[0].content, /the archive was unreachable/);
});

noUnhandledRejections();
