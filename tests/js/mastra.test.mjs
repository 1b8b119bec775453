// new Mastra({ agents, backgroundTasks }): the agents share one background task manager, so one
// global concurrency limit; getAgent finds them by key or id.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, T, noUnhandledRejections, uid, useModelServer, errorOf } from './helpers.mjs';
import { Mastra, Memory, InMemoryStore, createTool } from '../../pkg/index.node.js';

const server = useModelServer();

const slow = createTool({
  id: 'slow',
  description: 'slow work',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
  background: { enabled: true },
  execute: async () => {
    await delay(300);
    return { ok: true };
  },
});

function agent(id) {
  return new Agent({ id, model: { id: 'openai/tool-call', url: server.current.url, apiKey: 'k' }, tools: { slow }, memory: new Memory({ storage: new InMemoryStore() }) });
}

test('agents of one Mastra share its background limit: with globalConcurrency 1 and reject, the second agent is refused', T, async () => {
  const a = agent(uid('a'));
  const b = agent(uid('b'));
  const mastra = new Mastra({ agents: { a, b }, backgroundTasks: { enabled: true, globalConcurrency: 1, backpressure: 'reject' } });
  assert.equal(mastra.getAgent('a'), a);
  assert.equal(mastra.getAgent(b.id), b, 'by the agent id too');
  const first = await a.stream('go', { memory: { thread: uid('t'), resource: 'u' }, maxSteps: 1 });
  await first.consumeStream();
  assert.equal(a.listBackgroundTasks({ status: 'running' }).length, 1);
  const second = await b.stream('go', { memory: { thread: uid('t'), resource: 'u' }, maxSteps: 1 });
  const errors = [];
  for await (const c of second.fullStream) if (c.type === 'tool-error') errors.push(c.payload.error.message);
  assert.equal(errors.length, 1);
  assert.match(errors[0], /could not start.*1 tasks are already running/);
});

test('getAgent names the known agents when asked for another; bad agents are TypeErrors', T, async () => {
  const a = agent(uid('a'));
  const mastra = new Mastra({ agents: { a } });
  assert.throws(() => mastra.getAgent('nope'), (e) => e instanceof TypeError && /no agent 'nope'; known agents: a/.test(e.message));
  const err = await errorOf(() => new Mastra({ agents: { x: { id: 'x' } } }));
  assert.ok(err instanceof TypeError && /agents\.x: expected an Agent/.test(err.message), err?.message);
});

noUnhandledRejections();
