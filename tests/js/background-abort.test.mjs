// Stopping an untilIdle stream (SPEC §9.6): the caller's AbortSignal or fullStream.cancel()
// closes the outer stream and the running model request (the server sees the client go away);
// background tasks are not the stream's: they keep running and their results still land in
// memory.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { noUnhandledRejections, useModelServer } from './helpers.mjs';
import {
  TB,
  bgAgent,
  bgScript,
  describe,
  indexWhere,
  ofType,
  read,
  scope,
  slowTool,
  storedText,
  waitFor,
  waitForTask,
} from './background-helpers.mjs';

const server = useModelServer();

/** A script whose continuation streams one word and then holds the request open. */
function holdingContinuation(srv) {
  return bgScript(srv, {
    async continuation(ctx) {
      ctx.chat.role();
      ctx.chat.content('Thinking');
      await ctx.chat.flush();
      await ctx.ex.hold();
    },
  });
}

/** The server's record of a logged request. */
const recordOf = (srv, entry) => srv.requests.find((r) => r.body === entry.body);

async function serverSawClose(srv, entry) {
  const rec = recordOf(srv, entry);
  assert.ok(rec, 'the request was recorded');
  const closed = await srv.waitForClose(rec.index, 5000);
  assert.equal(closed.closedByClient, true);
  assert.equal(closed.finished, false, 'the server had not finished the reply');
}

/** Whether chunk i is a text-delta of the continuation (after a task completed). */
const continuationText = (c, i, chunks) => c.type === 'text-delta' && indexWhere(chunks, (x) => x.type === 'background-task-completed') !== -1 && indexWhere(chunks, (x) => x.type === 'background-task-completed') < i;

test('caller abort during a slow continuation closes the outer stream and the model request', TB, async () => {
  const srv = server.current;
  const s = holdingContinuation(srv);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const controller = new AbortController();
  const out = await agent.stream('Research', { untilIdle: true, memory: scope(), abortSignal: controller.signal });
  const { chunks } = await read(out.fullStream, (c, i, all) => {
    if (continuationText(c, i, all)) controller.abort();
  });
  const cont = s.log.find((e) => e.kind === 'continuation');
  assert.ok(cont, describe(chunks));
  await serverSawClose(srv, cont);
  assert.equal(ofType(chunks, 'finish').length, 1, `the continuation did not finish: ${describe(chunks)}`);
  // The first turn's aggregates stay as they were.
  assert.equal(await out.text, 'Started in the background.');
  await delay(100);
  assert.equal(s.log.length, 3, 'nothing ran after the abort');
});

test('fullStream.cancel() during a slow continuation closes the model request', TB, async () => {
  const srv = server.current;
  const s = holdingContinuation(srv);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 300 }) } });
  const out = await agent.stream('Research', { untilIdle: true, memory: scope() });
  const reader = out.fullStream.getReader();
  const chunks = [];
  for (;;) {
    const { done, value } = await reader.read();
    assert.ok(!done, `the stream ended before the continuation spoke: ${describe(chunks)}`);
    chunks.push(value);
    if (continuationText(value, chunks.length - 1, chunks)) break;
  }
  await reader.cancel();
  const cont = s.log.find((e) => e.kind === 'continuation');
  await serverSawClose(srv, cont);
  await delay(100);
  assert.equal(s.log.length, 3);
});

test('caller abort while waiting for a task closes the stream; the task keeps running and lands in memory', TB, async () => {
  const s = bgScript(server.current);
  const record = [];
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 800, record }) } });
  const sc = scope();
  const controller = new AbortController();
  const out = await agent.stream('Research', { untilIdle: true, memory: sc, abortSignal: controller.signal });
  const { chunks } = await read(out.fullStream, (c) => {
    if (c.type === 'finish') controller.abort();
  });
  const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
  assert.equal(task.status, 'running', `the stream closed before the task ended: ${describe(chunks)}`);
  assert.equal(ofType(chunks, 'background-task-completed').length, 0);
  const done = await waitForTask(agent, task.id);
  assert.equal(done.status, 'completed', 'the task was not aborted with the stream');
  assert.equal(record[0].signalAborted, false, "the tool's abortSignal was not aborted");
  await waitFor(async () => /research found 3 facts/.test(await storedText(memory, sc.thread)), 'the result in memory');
  assert.doesNotMatch(await storedText(memory, sc.thread), /"status":"running"/);
  await delay(100);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack'], 'no continuation after the abort');
});

test('breaking out of for-await (fullStream cancel) while waiting for a task: the task still lands in memory', TB, async () => {
  const s = bgScript(server.current);
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 600 }) } });
  const sc = scope();
  const out = await agent.stream('Research', { untilIdle: true, memory: sc });
  const chunks = [];
  for await (const c of out.fullStream) {
    chunks.push(c);
    if (c.type === 'finish') break;
  }
  const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
  assert.equal(task.status, 'running');
  const done = await waitForTask(agent, task.id);
  assert.equal(done.status, 'completed');
  await waitFor(async () => /research found 3 facts/.test(await storedText(memory, sc.thread)), 'the result in memory');
  await delay(100);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack'], 'no continuation after the cancel');
});

test('caller abort during the first turn: the model request closes, the task keeps running and lands in memory', TB, async () => {
  const srv = server.current;
  const s = bgScript(srv, {
    async ack(ctx) {
      ctx.chat.role();
      ctx.chat.content('Working');
      await ctx.chat.flush();
      await ctx.ex.hold();
    },
  });
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 500 }) } });
  const sc = scope();
  const controller = new AbortController();
  const out = await agent.stream('Research', { untilIdle: true, memory: sc, abortSignal: controller.signal });
  const { chunks } = await read(out.fullStream, (c) => {
    if (c.type === 'text-delta') controller.abort();
  });
  await serverSawClose(srv, s.log[1]);
  assert.equal(ofType(chunks, 'finish').length, 0, describe(chunks));
  const [task] = agent.listBackgroundTasks({ threadId: sc.thread });
  const done = await waitForTask(agent, task.id);
  assert.equal(done.status, 'completed');
  await waitFor(async () => /research found 3 facts/.test(await storedText(memory, sc.thread)), 'the result in memory');
  assert.doesNotMatch(await storedText(memory, sc.thread), /"status":"running"/);
  assert.equal(s.log.length, 2);
});

noUnhandledRejections();
