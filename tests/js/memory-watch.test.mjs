// memory.watch (SPEC §21.2) within one instance, as a user meets it in Node: the events of a
// run on a watched thread (saved messages, the thread, live chunks in the stream's order,
// transient ones included and never stored), resource watchers, task updates, deletion,
// unwatch, a throwing listener, and bad arguments.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, T, errorOf, modelFor, uid, useModelServer } from './helpers.mjs';
import { InMemoryStore, Memory, replyText, turn, useHookServer } from './memory-helpers.mjs';
import { TB, bgAgent, bgScript, createTool, read, scope, slowTool, waitFor } from './background-helpers.mjs';

const hook = useHookServer();
const server = useModelServer();

/** A watcher that records events; `events` in arrival order. */
function recorder(memory, where) {
  const events = [];
  const unwatch = memory.watch(where, (e) => events.push(e));
  return { events, unwatch };
}

const settle = () => delay(20);
const text = (parts) => parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

function hookAgent(memory) {
  const id = uid('watch');
  const agent = new Agent({ id: 'watch-agent', model: modelFor(hook.current, 'hook', { headers: { 'x-test-id': id } }), memory });
  return { agent, id };
}

test('a run on a watched thread: the thread, the user message, every chunk in the stream’s order, then the reply', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = hookAgent(memory);
  hook.on(id, (ex) => replyText(ex, 'Hello there, Ada.'));
  const w = recorder(memory, { threadId: 't1' });
  const r = await turn(agent, 'My name is Ada.', { memory: { thread: 't1', resource: 'u1' } });
  await settle();

  const chunks = w.events.filter((e) => e.type === 'chunk');
  assert.deepEqual(chunks.map((e) => e.chunk.type), r.chunks.map((c) => c.type), 'every chunk, in order');
  assert.ok(chunks.every((e) => e.threadId === 't1' && e.runId === r.out.runId));
  const deltas = chunks.filter((e) => e.chunk.type === 'text-delta').map((e) => e.chunk.payload.text).join('');
  assert.equal(deltas, 'Hello there, Ada.');

  const saved = w.events.filter((e) => e.type === 'messages-saved');
  assert.ok(saved.length >= 2);
  assert.ok(saved.every((e) => e.threadId === 't1'));
  assert.deepEqual(saved[0].messages.map((m) => [m.role, text(m.content.parts)]), [['user', 'My name is Ada.']]);
  const last = saved.at(-1).messages.at(-1);
  assert.deepEqual([last.role, text(last.content.parts)], ['assistant', 'Hello there, Ada.']);
  const stored = await memory.listMessages({ threadId: 't1' });
  assert.deepEqual(last, stored.at(-1), 'the event carries the message as stored');

  const first = w.events.find((e) => e.type !== 'chunk');
  assert.equal(first.type, 'thread-updated', 'the thread is created first');
  assert.equal(first.thread.id, 't1');
  assert.equal(first.thread.resourceId, 'u1');
  const userSaved = w.events.indexOf(saved[0]);
  const lastSaved = w.events.indexOf(saved.at(-1));
  const firstDelta = w.events.findIndex((e) => e.type === 'chunk' && e.chunk.type === 'text-delta');
  assert.ok(userSaved < firstDelta && firstDelta < lastSaved, 'the user message is saved before the reply streams, the reply after');
  w.unwatch();
});

test('a resource watcher hears every thread of the resource; a thread watcher only its own', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = hookAgent(memory);
  hook.on(id, (ex) => replyText(ex, 'ok'));
  const res = recorder(memory, { resourceId: 'u1' });
  const t2 = recorder(memory, { threadId: 't2' });
  const other = recorder(memory, { resourceId: 'u2' });
  await turn(agent, 'one', { memory: { thread: 't1', resource: 'u1' } });
  await turn(agent, 'two', { memory: { thread: 't2', resource: 'u1' } });
  await settle();
  const threadsOf = (events) => [...new Set(events.map((e) => e.threadId ?? e.thread?.id))];
  assert.deepEqual(threadsOf(res.events), ['t1', 't2']);
  assert.deepEqual(threadsOf(t2.events), ['t2']);
  assert.deepEqual(other.events, []);
});

test('updateThread and deleteThread: thread-updated with the new title, then thread-deleted, to thread and resource watchers', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = hookAgent(memory);
  hook.on(id, (ex) => replyText(ex, 'ok'));
  await turn(agent, 'hi', { memory: { thread: 't1', resource: 'u1' } });
  const th = recorder(memory, { threadId: 't1' });
  const res = recorder(memory, { resourceId: 'u1' });
  await memory.updateThread({ id: 't1', title: 'Renamed' });
  await memory.deleteThread('t1');
  await settle();
  for (const w of [th, res]) {
    assert.deepEqual(w.events.map((e) => e.type), ['thread-updated', 'thread-deleted']);
    assert.equal(w.events[0].thread.title, 'Renamed');
    assert.deepEqual(w.events[1], { type: 'thread-deleted', threadId: 't1' });
  }
});

test('unwatch(): no event after it, even one already on its way; a second call does nothing', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = hookAgent(memory);
  hook.on(id, (ex) => replyText(ex, 'ok'));
  const w = recorder(memory, { threadId: 't1' });
  const saving = memory.updateThread({ id: 'nope', title: 'x' }).catch(() => {});
  await saving;
  await turn(agent, 'hi', { memory: { thread: 't1', resource: 'u1' } });
  const before = w.events.length;
  w.unwatch();
  w.unwatch();
  await turn(agent, 'again', { memory: { thread: 't1', resource: 'u1' } });
  await settle();
  assert.ok(before > 0);
  assert.equal(w.events.length, before);
});

test('a listener that throws: said once on the console; the run and the other listeners go on', T, async (t) => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = hookAgent(memory);
  hook.on(id, (ex) => replyText(ex, 'Still fine.'));
  const logged = [];
  t.mock.method(console, 'error', (...args) => logged.push(args));
  memory.watch({ threadId: 't1' }, () => {
    throw new Error('listener broke');
  });
  const w = recorder(memory, { threadId: 't1' });
  const r = await turn(agent, 'hi', { memory: { thread: 't1', resource: 'u1' } });
  await settle();
  assert.equal(r.text, 'Still fine.');
  assert.ok(w.events.some((e) => e.type === 'chunk' && e.chunk.type === 'finish'));
  assert.equal(logged.length, 1);
  assert.match(String(logged[0][0]), /memory\.watch listener failed/);
  assert.equal(logged[0][1].message, 'listener broke');
});

test('transient chunks come to watchers and are never stored', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const weather = createTool({
    id: 'weather',
    description: 'Weather of a city',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    execute: async (_input, { writer }) => {
      await writer.custom({ type: 'data-status', data: 'almost there', transient: true });
      return { sky: 'clear' };
    },
  });
  const agent = new Agent({ id: 'w', model: modelFor(server.current, 'tool-call'), memory, tools: { weather } });
  const w = recorder(memory, { threadId: 't1' });
  const r = await turn(agent, 'Weather?', { memory: { thread: 't1', resource: 'u1' } });
  await settle();
  assert.ok(r.chunks.some((c) => c.type === 'data-status'));
  const live = w.events.filter((e) => e.type === 'chunk' && e.chunk.type === 'data-status');
  assert.equal(live.length, 1);
  assert.equal(live[0].chunk.transient, true);
  const stored = JSON.stringify(await memory.listMessages({ threadId: 't1' }));
  assert.ok(!stored.includes('almost there'));
  assert.ok(!JSON.stringify(w.events.filter((e) => e.type === 'messages-saved')).includes('almost there'));
});

test('a background task: task-updated events from running to completed, and its terminal chunk live', TB, async () => {
  const s = bgScript(server.current, { calls: [{ name: 'research', id: 'call_a', args: { topic: 'a' } }] });
  const { agent, memory } = bgAgent(s.model, { tools: { research: slowTool({ ms: 100 }) } });
  const sc = scope();
  const w = recorder(memory, { threadId: sc.thread });
  const out = await agent.stream('Research a', { untilIdle: true, memory: sc });
  await read(out.fullStream);
  await waitFor(() => w.events.some((e) => e.type === 'task-updated' && e.task.status === 'completed'));
  const tasks = w.events.filter((e) => e.type === 'task-updated');
  assert.equal(tasks[0].task.toolName, 'research');
  assert.equal(tasks.at(-1).task.status, 'completed');
  assert.ok(tasks.map((e) => e.task.status).includes('running'));
  assert.ok(w.events.some((e) => e.type === 'chunk' && e.chunk.type === 'background-task-completed'));
});

test('bad arguments are TypeErrors naming the field', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const f = () => {};
  const cases = [
    [[undefined, f], /memory\.watch\(scope, listener\)\.scope: expected \{ threadId \} or \{ resourceId \}, got undefined/],
    [['t1', f], /\.scope: expected \{ threadId \} or \{ resourceId \}, got a string/],
    [[{}, f], /\.scope: expected \{ threadId \} or \{ resourceId \}, got neither/],
    [[{ threadId: 7 }, f], /\.scope\.threadId: expected a non-empty string, got a number/],
    [[{ resourceId: '' }, f], /\.scope\.resourceId: expected a non-empty string/],
    [[{ threadId: 't', resourceId: 'u' }, f], /\.scope: give threadId or resourceId, not both/],
    [[{ threadId: 't' }], /memory\.watch\(scope, listener\)\.listener: expected a function, got undefined/],
    [[{ threadId: 't' }, 'f'], /\.listener: expected a function, got a string/],
    [[{ get threadId() { throw new Error('getter'); } }, f], /scope/],
  ];
  for (const [args, re] of cases) {
    const err = await errorOf(() => memory.watch(...args));
    assert.equal(err.name, 'TypeError', String(err));
    assert.match(err.message, re);
  }
});
