// A waiting untilIdle stream reports the tasks it waits for every 2 s, and those reports do not
// keep an idle stream open.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, T, collect, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';
import { Memory, InMemoryStore, createTool } from '../../pkg/index.node.js';

const server = useModelServer();

/** Calls the first tool once; answers when told the tasks finished (the directive). */
function useOnceScript() {
  server.current.scripts.set('once', {
    description: 'one background call, then answers',
    async run(ex) {
      const messages = ex.body.messages ?? [];
      const chat = ex.chat();
      chat.role();
      const told = messages.some((m) => m.role === 'system' && String(m.content).includes('have finished'));
      if (told || messages.at(-1)?.role === 'tool') {
        chat.content(told ? 'Done.' : 'Started.');
        await chat.complete('stop');
      } else {
        const name = ex.body.tools[0].function.name;
        chat.toolCall({ index: 0, id: 'call_1', type: 'function', function: { name, arguments: '{}' } });
        await chat.complete('tool_calls');
      }
    },
  });
}

test('background-task-progress chunks while a task runs: task ids, running count, elapsed time', { timeout: 20_000 }, async () => {
  useOnceScript();
  const research = createTool({
    id: 'research',
    description: 'slow research',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    background: { enabled: true },
    execute: async () => {
      await delay(4500);
      return { done: true };
    },
  });
  const agent = new Agent({
    id: uid('p'),
    model: { id: 'openai/once', url: server.current.url, apiKey: 'k' },
    tools: { research },
    memory: new Memory({ storage: new InMemoryStore() }),
    backgroundTasks: { enabled: true },
  });
  const out = await agent.stream('go', { untilIdle: true, memory: { thread: uid('t'), resource: 'u' }, maxSteps: 2 });
  const chunks = await collect(out.fullStream);
  const progress = chunks.filter((c) => c.type === 'background-task-progress');
  const started = chunks.find((c) => c.type === 'background-task-started');
  assert.ok(progress.length >= 1, chunks.map((c) => c.type).join(','));
  assert.deepEqual(progress[0].payload.taskIds, [started.payload.taskId]);
  assert.equal(progress[0].payload.runningCount, 1);
  assert.ok(progress[0].payload.elapsedMs >= 1500, `elapsed ${progress[0].payload.elapsedMs}`);
  const doneAt = chunks.findIndex((c) => c.type === 'background-task-completed');
  assert.ok(doneAt > chunks.indexOf(progress[0]), 'progress comes while the task runs');
});

test('progress reports do not keep an idle stream open', { timeout: 20_000 }, async () => {
  useOnceScript();
  const forever = createTool({
    id: 'forever',
    description: 'never ends in time',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    background: { enabled: true },
    execute: async (_, { abortSignal }) => {
      await delay(8000, undefined, { signal: abortSignal }).catch(() => {});
      return { late: true };
    },
  });
  const agent = new Agent({
    id: uid('p'),
    model: { id: 'openai/once', url: server.current.url, apiKey: 'k' },
    tools: { forever },
    memory: new Memory({ storage: new InMemoryStore() }),
    backgroundTasks: { enabled: true },
  });
  const t0 = Date.now();
  const out = await agent.stream('go', { untilIdle: { maxIdleMs: 2500 }, memory: { thread: uid('t'), resource: 'u' }, maxSteps: 2 });
  const chunks = await collect(out.fullStream);
  assert.ok(Date.now() - t0 >= 2400, 'closed only after maxIdleMs of quiet');
  assert.ok(!chunks.some((c) => c.type === 'background-task-completed'), 'closed while the task still ran');
  assert.ok(chunks.some((c) => c.type === 'background-task-progress'), 'a progress report came before it closed');
});

noUnhandledRejections();
