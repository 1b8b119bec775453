// untilIdle end to end through the package (SPEC §9), against the local model server: when it
// falls through to a plain stream, when it closes, how finished tasks are batched into one
// continuation at a time, what the continuation's directive says, the idle timer, errors,
// a newer wrapper on the same thread, defaultOptions, aggregates and chunk order.
//
// Each test registers its own model script (background-helpers.mjs bgScript) which records when
// each request started and ended, so "one model request at a time" is checked on the server side.
// Time assertions are lower bounds only.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { noUnhandledRejections, useModelServer } from './helpers.mjs';
import {
  DIRECTIVE,
  TB,
  assertNoOverlap,
  bgAgent,
  bgScript,
  createTool,
  cancelAll,
  describe,
  indexWhere,
  indexesOf,
  isPlaceholder,
  ofType,
  read,
  scope,
  slowTool,
  storedText,
  taskEvents,
  textOf,
  toolMessages,
  waitFor,
  waitForTask,
} from './background-helpers.mjs';

const server = useModelServer();

// ---------------------------------------------------------------------------------------------
// 1. Falling through to a plain stream

test('untilIdle without a memory thread is a plain stream: it closes after the first turn while the task still runs', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 1500 }) } });
  const out = await agent.stream('Research solana', { untilIdle: true });
  const { chunks } = await read(out.fullStream);
  try {
    assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
    assert.equal(chunks.at(-1).type, 'finish', describe(chunks));
    assert.equal(ofType(chunks, 'background-task-started').length, 1, 'the task was dispatched');
    assert.equal(ofType(chunks, 'background-task-completed').length, 0, describe(chunks));
    const [task] = agent.listBackgroundTasks();
    assert.equal(task.status, 'running', 'the stream did not wait for the task');
    assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack']);
    assert.equal(await out.text, 'Started in the background.');
  } finally {
    cancelAll(agent);
  }
});

for (const [label, backgroundTasks] of [
  ['no backgroundTasks', null],
  ['backgroundTasks: { enabled: false }', { enabled: false }],
]) {
  test(`untilIdle with background tasks off (${label}) is a plain stream: the tool runs in the foreground`, TB, async () => {
    const s = bgScript(server.current);
    const record = [];
    const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 100, record }) }, backgroundTasks });
    const sc = scope();
    const out = await agent.stream('Research solana', { untilIdle: true, memory: sc });
    const { chunks } = await read(out.fullStream);
    assert.equal(chunks.filter((c) => c.type.startsWith('background-task-')).length, 0, describe(chunks));
    const [result] = ofType(chunks, 'tool-result');
    assert.deepEqual(result.payload.result, { name: 'research', topic: 'solana', findings: 'research found 3 facts about solana' });
    assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
    assert.equal(chunks.at(-1).type, 'finish');
    assert.equal(record.length, 1);
    assert.ok(record[0].end !== undefined, 'the tool ended inside the turn');
    assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack']);
    assert.ok(!isPlaceholder(toolMessages(s.log[1].body)[0].content), 'the model got the real result');
    assert.deepEqual(agent.listBackgroundTasks(), []);
    assert.match(await storedText(memory, sc.thread), /research found 3 facts/);
  });
}

// ---------------------------------------------------------------------------------------------
// 2. Nothing dispatched

test('untilIdle closes right after the first turn when the model calls no tool', TB, async () => {
  const s = bgScript(server.current, { calls: [] });
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 100 }) } });
  const out = await agent.stream('Hi', { untilIdle: true, memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(textOf(chunks), 'Nothing to do.');
  await delay(200);
  assert.deepEqual(s.log.map((e) => e.kind), ['user'], 'no continuation was requested');
});

test('untilIdle closes right after the first turn when the only tool call ran in the foreground', TB, async () => {
  const s = bgScript(server.current);
  // The tool's own `enabled: false` wins over `tools: 'all'`.
  const tool = slowTool({ ms: 50, background: { enabled: false } });
  const { agent } = bgAgent(s.model, { tools: { research: tool }, backgroundTasks: { enabled: true, tools: 'all' } });
  const out = await agent.stream('Research', { untilIdle: true, memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.equal(chunks.filter((c) => c.type.startsWith('background-task-')).length, 0, describe(chunks));
  assert.equal(ofType(chunks, 'tool-result')[0].payload.result.findings, 'research found 3 facts about solana');
  assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
  assert.equal(chunks.at(-1).type, 'finish');
  await delay(150);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack']);
});

// ---------------------------------------------------------------------------------------------
// 4. Batching

test('two tasks that end at different times get ONE continuation, after both, whose directive names both', TB, async () => {
  const s = bgScript(server.current);
  const quick = [];
  const slow = [];
  const { agent, memory } = bgAgent(s.model, {
    tools: { quick: slowTool({ name: 'quick', ms: 300, record: quick }), slow: slowTool({ name: 'slow', ms: 700, record: slow }) },
  });
  const sc = scope();
  const out = await agent.stream('Research both', { untilIdle: true, memory: sc });
  const { chunks } = await read(out.fullStream);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
  const cont = s.log[2];
  assert.ok(cont.start >= quick[0].end && cont.start >= slow[0].end, 'the continuation started after both tasks ended');
  assert.match(cont.directive, /quick \(tool call call_quick_0\)/);
  assert.match(cont.directive, /slow \(tool call call_slow_1\)/);
  assert.match(cont.directive, /^Completed: .*call_quick_0.*call_slow_1|Completed: .*call_slow_1.*call_quick_0/m);
  const results = toolMessages(cont.body);
  assert.equal(results.length, 2);
  assert.ok(results.every((m) => !isPlaceholder(m.content)), 'both real results are in the continuation request');
  // In the stream: both completions before the continuation's start.
  const starts = indexesOf(chunks, 'start');
  assert.equal(starts.length, 2, describe(chunks));
  for (const i of indexesOf(chunks, 'background-task-completed')) assert.ok(i < starts[1], describe(chunks));
  assert.equal(ofType(chunks, 'background-task-completed').length, 2);
  assert.equal(ofType(chunks, 'finish').length, 2);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.match(textOf(chunks), /Results are in: .*quick found 3 facts.*slow found 3 facts/);
  assert.doesNotMatch(await storedText(memory, sc.thread), /"status":"running"/);
  assertNoOverlap(s.log);
});

// ---------------------------------------------------------------------------------------------
// 5. A task that ends while a turn streams

test(
  'a task that ends while the first turn streams is answered by a continuation after that turn',
  TB,
  async () => {
    const s = bgScript(server.current, {
      // The step after the tool result streams for ~600 ms; the task ends after 100 ms.
      ack: (ctx) => ctx.say('one two three four five six seven', { delayMs: 100 }),
    });
    const record = [];
    const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 100, record }) } });
    const out = await agent.stream('Research', { untilIdle: true, memory: scope() });
    const { chunks } = await read(out.fullStream);
    assert.ok(record[0].end < s.log[1].end, 'the task ended while the first turn streamed');
    // Its completion is forwarded at once, inside the first turn...
    const completed = indexWhere(chunks, (c) => c.type === 'background-task-completed');
    const firstFinish = indexWhere(chunks, (c) => c.type === 'finish');
    assert.ok(completed > 0 && completed < firstFinish, describe(chunks));
    // ...and answered after it.
    assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
    assert.ok(s.log[2].start >= s.log[1].end);
    assert.match(s.log[2].directive, /research \(tool call call_research_0\)/);
    assert.equal(ofType(chunks, 'finish').length, 2, describe(chunks));
    assertNoOverlap(s.log);
  },
);

test('a task started by a continuation that ends while that continuation streams gets a second continuation after it; never two requests at once', TB, async () => {
  const s = bgScript(server.current, {
    async continuation(ctx) {
      const last = ctx.body.messages.at(-1);
      if (ctx.entry.directive.includes('call_again')) return ctx.say('Second results are in.');
      if (last.role === 'tool' && last.tool_call_id === 'call_again') {
        // The step after the new placeholder streams for ~600 ms; the new task ends after 100 ms (the first one took 300 ms).
        return ctx.say('I started another one for you now', { delayMs: 100 });
      }
      return ctx.callTools([{ name: 'research', id: 'call_again', args: { topic: 'more' } }]);
    },
  });
  const record = [];
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: ({ topic }) => (topic === 'more' ? 100 : 300), record }) } });
  const sc = scope();
  const out = await agent.stream('Research', { untilIdle: true, memory: sc });
  const { chunks } = await read(out.fullStream);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation', 'continuation', 'continuation'], describe(chunks));
  const [, , c1, c1ack, c2] = s.log;
  assert.match(c1.directive, /call_research_0/);
  assert.doesNotMatch(c1.directive, /call_again/);
  assert.equal(record.length, 2);
  assert.ok(record[1].end < c1ack.end, 'the second task ended while the continuation streamed');
  assert.ok(c2.start >= c1ack.end, 'the second continuation waited for the first one to end');
  assert.match(c2.directive, /research \(tool call call_again\)/);
  assert.doesNotMatch(c2.directive, /call_research_0/, 'each task is reported once');
  assert.equal(ofType(chunks, 'finish').length, 3, describe(chunks));
  assert.match(textOf(chunks), /Second results are in\.$/);
  assertNoOverlap(s.log);
  assert.doesNotMatch(await storedText(memory, sc.thread), /"status":"running"/);
});

// ---------------------------------------------------------------------------------------------
// 6. Failed, cancelled, timed out

test('failed, cancelled and timed-out tasks: one continuation whose directive says which and how', TB, async () => {
  const s = bgScript(server.current);
  const endless = [];
  const sluggish = [];
  const { agent, memory } = bgAgent(s.model, {
    tools: {
      broken: slowTool({ name: 'broken', ms: 300, fail: 'the archive was unreachable' }),
      endless: slowTool({ name: 'endless', ms: 5000, record: endless }),
      sluggish: slowTool({ name: 'sluggish', ms: 3000, background: { enabled: true, timeoutMs: 350 }, record: sluggish }),
    },
  });
  const sc = scope();
  const out = await agent.stream('Do all three', { untilIdle: true, memory: sc });
  // Cancelled once the first turn is over, while the wrapper waits for the tasks.
  const cancels = [];
  const { chunks } = await read(out.fullStream, (c) => {
    if (c.type === 'finish' && cancels.length === 0) {
      const endlessTask = agent.listBackgroundTasks().find((t) => t.toolName === 'endless');
      cancels.push(agent.cancelBackgroundTask(endlessTask.id));
    }
  });
  assert.deepEqual(cancels, [true], 'cancelBackgroundTask returned true for the running task');
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
  const d = s.log[2].directive;
  assert.match(d, /Failed: broken \(tool call call_broken_0\): .*the archive was unreachable/);
  assert.match(d, /Do not retry it unless the user asks/);
  assert.match(d, /Cancelled: endless \(tool call call_endless_1\)\. It has no result\./);
  assert.match(d, /Failed: sluggish \(tool call call_sluggish_2\) timed out/);
  assert.doesNotMatch(d, /Completed:/);
  // The chunks.
  const failed = ofType(chunks, 'background-task-failed');
  assert.match(failed.find((c) => c.payload.toolName === 'broken').payload.error.message, /the archive was unreachable/);
  assert.match(failed.find((c) => c.payload.toolName === 'sluggish').payload.error.message, /timed out/);
  assert.equal(ofType(chunks, 'background-task-cancelled').length, 1);
  assert.equal(ofType(chunks, 'background-task-cancelled')[0].payload.toolName, 'endless');
  // The tasks.
  const status = Object.fromEntries(agent.listBackgroundTasks({ threadId: sc.thread }).map((t) => [t.toolName, t.status]));
  assert.deepEqual(status, { broken: 'failed', endless: 'cancelled', sluggish: 'timed_out' });
  const endlessId = agent.listBackgroundTasks().find((t) => t.toolName === 'endless').id;
  assert.equal(agent.cancelBackgroundTask(endlessId), false, 'an ended task cannot be cancelled again');
  assert.equal(endless[0].signalAborted, true, "cancelling aborts the tool's abortSignal");
  assert.equal(sluggish[0].signalAborted, true, "the timeout aborts the tool's abortSignal");
  // The model got error results in place of the placeholders; memory holds them too.
  const results = toolMessages(s.log[2].body);
  assert.equal(results.length, 3);
  assert.ok(results.every((m) => !isPlaceholder(m.content)), JSON.stringify(results));
  const stored = await storedText(memory, sc.thread);
  assert.doesNotMatch(stored, /"status":"running"/);
  assert.match(stored, /the archive was unreachable/);
  assertNoOverlap(s.log);
});

test(
  'a task cancelled while the first turn still streams is reported as cancelled in the continuation',
  TB,
  async () => {
    const s = bgScript(server.current, { ack: (ctx) => ctx.say('Started it, still talking about it', { delayMs: 80 }) });
    const { agent } = bgAgent(s.model, { tools: { endless: slowTool({ name: 'endless', ms: 5000 }) } });
    const out = await agent.stream('Go', { untilIdle: true, memory: scope() });
    const cancels = [];
    const { chunks } = await read(out.fullStream, (c) => {
      if (c.type === 'background-task-running') cancels.push(agent.cancelBackgroundTask(c.payload.taskId));
    });
    assert.deepEqual(cancels, [true]);
    assert.equal(ofType(chunks, 'background-task-cancelled').length, 1, describe(chunks));
    assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
    assert.match(s.log[2].directive, /Cancelled: endless \(tool call call_endless_0\)\. It has no result\./);
  },
);

// ---------------------------------------------------------------------------------------------
// 7. The idle timer

test('maxIdleMs: with a 2 s task the stream closes after ~150 ms of quiet; the task completes later and lands in memory', TB, async () => {
  const s = bgScript(server.current);
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 2000 }) } });
  const sc = scope();
  const out = await agent.stream('Research', { untilIdle: { maxIdleMs: 150 }, memory: sc });
  const { chunks, at, closedAt } = await read(out.fullStream);
  const finishAt = at[indexWhere(chunks, (c) => c.type === 'finish')];
  assert.ok(closedAt - finishAt >= 140, `closed ${closedAt - finishAt} ms after the first turn`);
  const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
  assert.equal(task.status, 'running', 'closed before the task ended');
  assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
  const done = await waitForTask(agent, task.id);
  assert.equal(done.status, 'completed');
  const stored = await waitFor(async () => {
    const text = await storedText(memory, sc.thread);
    return /research found 3 facts/.test(text) && text;
  }, 'the result in memory');
  assert.doesNotMatch(stored, /"status":"running"/);
  await delay(100);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack'], 'no continuation after the stream closed');
});

test('maxIdleMs: a first turn slower than maxIdleMs, with a task running, is not cut; the timer starts after it', TB, async () => {
  const s = bgScript(server.current, {
    ack: (ctx) => ctx.say('Started in the background.', { firstByteMs: 700 }),
  });
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 2500 }) } });
  const out = await agent.stream('Research', { untilIdle: { maxIdleMs: 300 }, memory: scope() });
  try {
    const { chunks, at, closedAt } = await read(out.fullStream);
    assert.equal(textOf(chunks), 'Started in the background.', describe(chunks));
    assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
    const finishAt = at[indexWhere(chunks, (c) => c.type === 'finish')];
    assert.ok(closedAt - finishAt >= 290, `closed ${closedAt - finishAt} ms after the turn`);
    assert.equal(s.log[1].halted, false, 'the slow request was not cut');
  } finally {
    cancelAll(agent);
  }
});

test('maxIdleMs: a continuation slower than maxIdleMs, while a task it started runs, is not cut; the timer starts after it', TB, async () => {
  const s = bgScript(server.current, {
    calls: [{ name: 'research' }],
    async continuation(ctx) {
      const last = ctx.body.messages.at(-1);
      if (last.role === 'tool' && last.tool_call_id === 'call_again') {
        return ctx.say('Another one is running.', { firstByteMs: 700 });
      }
      return ctx.callTools([{ name: 'deep', id: 'call_again' }]);
    },
  });
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }), deep: slowTool({ name: 'deep', ms: 3000 }) } });
  const out = await agent.stream('Research', { untilIdle: { maxIdleMs: 400 }, memory: scope() });
  try {
    const { chunks, at, closedAt } = await read(out.fullStream);
    assert.ok(ofType(chunks, 'background-task-started').some((c) => c.payload.toolCallId === 'call_again'), describe(chunks));
    assert.match(textOf(chunks), /Another one is running\.$/, 'the slow step was streamed in full');
    const finishes = indexesOf(chunks, 'finish');
    assert.equal(finishes.length, 2, describe(chunks));
    assert.ok(closedAt - at[finishes[1]] >= 390, `closed ${closedAt - at[finishes[1]]} ms after the continuation`);
    assert.equal(agent.listBackgroundTasks({ status: 'running' }).length, 1, 'closed by the idle timer while the deep task ran');
    assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation', 'continuation']);
    assertNoOverlap(s.log);
  } finally {
    cancelAll(agent);
  }
});

test('maxIdleMs: output chunks of a running task keep the stream open (writes every 100 ms, maxIdleMs 250)', TB, async () => {
  const s = bgScript(server.current);
  const record = [];
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 1000, writeEvery: 100, record }) } });
  const out = await agent.stream('Research', { untilIdle: { maxIdleMs: 250 }, memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.ok(ofType(chunks, 'background-task-output').length >= 5, describe(chunks));
  assert.equal(ofType(chunks, 'background-task-completed').length, 1, describe(chunks));
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation']);
  assert.match(textOf(chunks), /Results are in: .*research found 3 facts/);
});

// ---------------------------------------------------------------------------------------------
// 9. An error in a continuation turn

test('an HTTP 500 in the continuation turn: an error chunk, then the stream closes', TB, async () => {
  const s = bgScript(server.current, { continuation: (ctx) => ctx.fail(500) });
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const out = await agent.stream('Research', { untilIdle: true, memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.equal(chunks.at(-1).type, 'error', describe(chunks));
  const completed = indexWhere(chunks, (c) => c.type === 'background-task-completed');
  assert.ok(completed > indexWhere(chunks, (c) => c.type === 'finish'), describe(chunks));
  assert.ok(indexWhere(chunks, (c) => c.type === 'error') > completed);
  assert.equal(ofType(chunks, 'finish').length, 1, 'the continuation did not finish');
  assert.match(JSON.stringify(chunks.at(-1).payload.error), /500|server had an error/i);
  // The aggregates are the first turn's, which went well.
  assert.equal(await out.text, 'Started in the background.');
  assert.equal(await out.finishReason, 'stop');
  await delay(150);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], 'no retry, no further turn');
});

// ---------------------------------------------------------------------------------------------
// 10. A newer wrapper on the same thread

test('a second untilIdle call on the same thread + resource closes the first wrapper', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 1500 }) } });
  const sc = scope();
  const first = await agent.stream('Research', { untilIdle: true, memory: sc });
  let sawFinish;
  const finished = new Promise((resolve) => (sawFinish = resolve));
  const firstDone = read(first.fullStream, (c) => {
    if (c.type === 'finish') sawFinish();
  });
  await finished;
  await delay(50);
  const second = await agent.stream('Anything new?', { untilIdle: { maxIdleMs: 100 }, memory: sc });
  const secondDone = read(second.fullStream);
  const { chunks } = await firstDone;
  try {
    const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
    assert.equal(task.status, 'running', 'the first stream closed without waiting for its task');
    assert.equal(ofType(chunks, 'background-task-completed').length, 0, describe(chunks));
    assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
  } finally {
    cancelAll(agent);
    await secondDone;
  }
});

test('a tool abort listener that starts another untilIdle stream when a newer wrapper closes the first: no trap, both streams run', TB, async () => {
  const s = bgScript(server.current);
  let agent;
  const nested = [];
  // A foreground tool whose abort listener starts a stream on another thread of the same agent.
  const watch = createTool({
    id: 'watch',
    description: 'Watches the run',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
    execute: async (_input, { abortSignal }) => {
      abortSignal.addEventListener('abort', () => {
        try {
          nested.push(agent.stream('Hello', { untilIdle: { maxIdleMs: 100 }, memory: scope() }));
        } catch (err) {
          nested.push(Promise.reject(err));
        }
      });
      return { watching: true };
    },
  });
  ({ agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 1500 }), watch } }));
  const sc = scope();
  const first = await agent.stream('Research', { untilIdle: true, memory: sc });
  let sawFinish;
  const finished = new Promise((resolve) => (sawFinish = resolve));
  const firstDone = read(first.fullStream, (c) => {
    if (c.type === 'finish') sawFinish();
  });
  await finished;
  await delay(50);
  try {
    const second = await agent.stream('Anything new?', { untilIdle: { maxIdleMs: 100 }, memory: sc });
    assert.equal(nested.length, 1, 'the abort listener ran');
    const inner = await nested[0];
    const [{ chunks }, secondRead, innerRead] = await Promise.all([firstDone, read(second.fullStream), read(inner.fullStream)]);
    assert.equal(ofType(chunks, 'finish').length, 1, describe(chunks));
    assert.equal(ofType(secondRead.chunks, 'error').length, 0, describe(secondRead.chunks));
    assert.ok(ofType(innerRead.chunks, 'finish').length >= 1, describe(innerRead.chunks));
  } finally {
    cancelAll(agent);
  }
});

test('an untilIdle call on another thread does not close the first wrapper', TB, async () => {
  // Calls the tool for 'Research' only.
  const s = bgScript(server.current, { calls: (ctx) => (ctx.body.messages.at(-1).content === 'Hello' ? [] : [{ name: 'research' }]) });
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 500 }) } });
  const sc = scope();
  const first = await agent.stream('Research', { untilIdle: true, memory: sc });
  let sawFinish;
  const finished = new Promise((resolve) => (sawFinish = resolve));
  const firstDone = read(first.fullStream, (c) => {
    if (c.type === 'finish') sawFinish();
  });
  await finished;
  // Same agent, another thread (same resource).
  const second = await agent.stream('Hello', { untilIdle: true, memory: { thread: `${sc.thread}-other`, resource: sc.resource } });
  await read(second.fullStream);
  const { chunks } = await firstDone;
  assert.equal(ofType(chunks, 'background-task-completed').length, 1, describe(chunks));
  assert.equal(ofType(chunks, 'finish').length, 2, describe(chunks));
  assert.match(textOf(chunks), /Results are in/);
});

// ---------------------------------------------------------------------------------------------
// 11. defaultOptions, run ids

test(
  'untilIdle in defaultOptions applies to a call: one continuation, then the stream ends',
  TB,
  async () => {
    const s = bgScript(server.current);
    const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) }, defaultOptions: { untilIdle: true } });
    const out = await agent.stream('Research', { memory: scope() });
    const { chunks } = await read(out.fullStream);
    assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
    assert.equal(ofType(chunks, 'finish').length, 2, describe(chunks));
    const contRunIds = new Set(chunks.slice(indexesOf(chunks, 'start')[1]).filter((c) => c.runId).map((c) => c.runId));
    assert.ok(!contRunIds.has(out.runId));
    await delay(200);
    assert.equal(s.log.length, 3, 'the continuation did not wrap itself again');
  },
);

test('untilIdle in the call and in defaultOptions never recurses; continuation chunks carry a fresh runId', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) }, defaultOptions: { untilIdle: true } });
  const out = await agent.stream('Research', { untilIdle: true, runId: 'my-run-id', memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
  // If the continuation had opened a wrapper of its own on the same thread, that would have
  // closed this one before its text: the text is here and the stream ended after it.
  assert.match(textOf(chunks), /Results are in: .*research found 3 facts/);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(out.runId, 'my-run-id');
  const secondStart = indexesOf(chunks, 'start')[1];
  const firstTurn = chunks.slice(0, indexWhere(chunks, (c) => c.type === 'finish') + 1);
  assert.ok(firstTurn.every((c) => c.runId === 'my-run-id'), 'first-turn chunks carry the call runId');
  const contIds = new Set(chunks.slice(secondStart).filter((c) => !c.type.startsWith('background-task-')).map((c) => c.runId));
  assert.equal(contIds.size, 1, [...contIds].join(','));
  const [contId] = contIds;
  assert.equal(typeof contId, 'string');
  assert.notEqual(contId, 'my-run-id');
  await delay(200);
  assert.equal(s.log.length, 3, 'nothing ran after the stream closed');
});

test('the options are read once: a continuation turn reads nothing from them again, and the same callbacks and tools serve it', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const reads = new Map();
  const seen = [];
  const given = { untilIdle: true, memory: scope(), onChunk: (c) => seen.push(c.type), maxSteps: 4 };
  // Every read of an option is counted, whether the key is set or not.
  const options = new Proxy(given, {
    get(target, key, receiver) {
      if (typeof key === 'string') reads.set(key, (reads.get(key) ?? 0) + 1);
      return Reflect.get(target, key, receiver);
    },
  });
  const out = await agent.stream('Research', options);
  const afterStart = new Map(reads);
  const { chunks } = await read(out.fullStream);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation'], describe(chunks));
  assert.deepEqual([...reads], [...afterStart], 'the continuation read no option again');
  for (const key of ['onChunk', 'memory', 'toolsets', 'stopWhen', 'hooks', 'untilIdle']) {
    assert.ok(afterStart.get(key) >= 1, `${key} was read when the call started`);
  }
  assert.equal(ofType(chunks, 'finish').length, 2, describe(chunks));
  assert.equal(seen.filter((t) => t === 'finish').length, 2, 'onChunk saw the continuation too');
});

// ---------------------------------------------------------------------------------------------
// 12. Aggregates

test('text, usage, toolCalls and finishReason resolve from the first turn (before the task ends); fullStream spans all turns', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 800 }) } });
  const sc = scope();
  const out = await agent.stream('Research', { untilIdle: true, memory: sc });
  const reading = read(out.fullStream);
  const text = await out.text;
  assert.equal(text, 'Started in the background.');
  assert.equal(agent.listBackgroundTasks({ threadId: sc.thread })[0].status, 'running', 'text resolved before the task ended');
  const { chunks } = await reading;
  const finishes = ofType(chunks, 'finish');
  assert.equal(finishes.length, 2, describe(chunks));
  assert.equal(await out.finishReason, 'stop');
  const toolCalls = await out.toolCalls;
  assert.equal(toolCalls.length, 1);
  assert.equal(toolCalls[0].payload?.toolName ?? toolCalls[0].toolName, 'research');
  assert.deepEqual(await out.usage, finishes[0].payload.output.usage);
  assert.deepEqual(await out.totalUsage, finishes[0].payload.totalUsage);
  assert.notDeepEqual(finishes[1].payload.totalUsage, finishes[0].payload.totalUsage, 'the continuation had its own usage');
  assert.match(textOf(chunks), /^Started in the background\.Results are in: .*research found 3 facts/);
  assert.equal((await out.steps).length, 2, 'the first turn had two steps');
});

test('onFinish runs once, for the first turn; onChunk sees the continuation too', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const finished = [];
  const seen = [];
  const out = await agent.stream('Research', {
    untilIdle: true,
    memory: scope(),
    onFinish: (x) => finished.push(x),
    onChunk: (c) => seen.push(c.type),
  });
  const { chunks } = await read(out.fullStream);
  assert.equal(ofType(chunks, 'finish').length, 2, describe(chunks));
  assert.equal(finished.length, 1, 'onFinish is not called for the continuation');
  assert.equal(finished[0].text, 'Started in the background.');
  assert.equal(seen.filter((t) => t === 'finish').length, 2, seen.join(','));
});

test('untilIdle: bad values are TypeErrors that name the option', TB, async () => {
  const s = bgScript(server.current, { calls: [] });
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  for (const untilIdle of ['yes', 5, { maxIdleMs: -1 }, { maxIdleMs: 'soon' }]) {
    await assert.rejects(agent.stream('Hi', { untilIdle, memory: scope() }), (e) => e instanceof TypeError && /untilIdle/.test(e.message), JSON.stringify(untilIdle));
  }
  // false is the same as leaving it out.
  const out = await agent.stream('Hi', { untilIdle: false, memory: scope() });
  const { chunks } = await read(out.fullStream);
  assert.equal(chunks.at(-1).type, 'finish');
});

// ---------------------------------------------------------------------------------------------
// 13. Order of background chunks

test('background chunks appear in order per task: started, running, outputs, completed', TB, async () => {
  const s = bgScript(server.current);
  const results = {};
  const { agent } = bgAgent(s.model, {
    tools: { alpha: slowTool({ name: 'alpha', ms: 500, writeEvery: 60 }), beta: slowTool({ name: 'beta', ms: 400, writeEvery: 60 }) },
  });
  const sc = scope();
  const out = await agent.stream('Research', { untilIdle: true, memory: sc });
  const { chunks } = await read(out.fullStream);
  const started = ofType(chunks, 'background-task-started');
  assert.equal(started.length, 2);
  const firstFinish = indexWhere(chunks, (c) => c.type === 'finish');
  for (const st of started) {
    const { taskId, toolName, toolCallId } = st.payload;
    const events = taskEvents(chunks, taskId);
    assert.equal(events[0], 'started', `${toolName}: ${events}`);
    assert.equal(events[1], 'running', `${toolName}: ${events}`);
    assert.equal(events.at(-1), 'completed', `${toolName}: ${events}`);
    const middle = events.slice(2, -1);
    assert.ok(middle.length >= 2 && middle.every((e) => e === 'output'), `${toolName}: ${events}`);
    assert.ok(chunks.indexOf(st) < firstFinish, 'started in the first turn');
    const mine = chunks.filter((c) => c.payload?.taskId === taskId);
    const running = mine.find((c) => c.type === 'background-task-running').payload;
    assert.equal(running.toolName, toolName);
    assert.equal(running.toolCallId, toolCallId);
    assert.equal(running.runId, out.runId);
    assert.equal(running.agentId, agent.id);
    assert.deepEqual(running.args, { topic: 'solana' });
    assert.ok(!Number.isNaN(Date.parse(running.startedAt)));
    const outputs = mine.filter((c) => c.type === 'background-task-output');
    assert.deepEqual(outputs.map((c) => c.payload.payload.payload.output.progress), outputs.map((_, i) => i));
    assert.equal(outputs[0].payload.payload.type, 'tool-output');
    assert.equal(outputs[0].payload.toolCallId, toolCallId);
    const completed = mine.at(-1).payload;
    assert.deepEqual(completed.result, { name: toolName, topic: 'solana', findings: `${toolName} found 3 facts about solana` });
    assert.ok(!Number.isNaN(Date.parse(completed.completedAt)));
    results[toolName] = completed.result;
  }
  assert.deepEqual(Object.keys(results).sort(), ['alpha', 'beta']);
});

// ---------------------------------------------------------------------------------------------
// 14. The directive

test('the continuation directive reaches the model and is never stored in memory', TB, async () => {
  const s = bgScript(server.current);
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const sc = scope();
  const out = await agent.stream('Research', { untilIdle: true, memory: sc });
  await read(out.fullStream);
  const cont = s.log.find((e) => e.kind === 'continuation');
  assert.ok(cont, 'a continuation request was made');
  assert.ok(cont.directive.startsWith(DIRECTIVE));
  assert.match(cont.directive, /do not call those tools again/);
  // The continuation adds no user message: the last user message is the original one.
  const users = cont.body.messages.filter((m) => m.role === 'user');
  assert.equal(users.length, 1);
  const stored = await memory.listMessages({ threadId: sc.thread });
  const text = JSON.stringify(stored);
  assert.ok(!text.includes(DIRECTIVE), 'the directive is not stored');
  assert.match(text, /Results are in/, 'the continuation reply is stored');
  assert.equal(stored.filter((m) => m.role === 'user').length, 1);
  assert.equal(stored.filter((m) => m.role === 'system').length, 0);
  // A later plain turn on the thread does not see it either.
  const next = await agent.stream('Thanks', { memory: sc });
  await read(next.fullStream);
  const last = s.log.at(-1);
  assert.equal(last.kind, 'user');
  assert.ok(!JSON.stringify(last.body).includes(DIRECTIVE));
});

noUnhandledRejections();
