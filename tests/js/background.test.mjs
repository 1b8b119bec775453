// Background tasks and untilIdle through the package, against the local model server: the
// first turn gets a placeholder and the stream stays open; when the task ends, a continuation
// turn answers with the real result from memory; the stream then closes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, T, collect, noUnhandledRejections, types, uid, useModelServer } from './helpers.mjs';
import { Memory, InMemoryStore, createTool } from '../../pkg/index.node.js';

const server = useModelServer();
const DIRECTIVE = 'Background tasks you started earlier have finished';

/** A model that starts research, acknowledges the placeholder, and answers once told. */
function useResearchScript() {
  server.current.scripts.set('bg-research', {
    description: 'calls the first tool, acknowledges its placeholder, answers the continuation',
    async run(ex) {
      const messages = ex.body.messages ?? [];
      const chat = ex.chat();
      chat.role();
      const told = messages.some((m) => m.role === 'system' && String(m.content).includes(DIRECTIVE));
      const last = messages.at(-1);
      if (told) {
        const results = messages.filter((m) => m.role === 'tool' && !String(m.content).includes('"status":"running"')).map((m) => m.content);
        chat.content(`Results are in: ${results.join(' | ')}`);
        await chat.complete('stop');
      } else if (last?.role === 'tool') {
        chat.content('I started the research in the background.');
        await chat.complete('stop');
      } else {
        const tools = (ex.body.tools ?? []).map((t) => t.function.name);
        tools.forEach((name, index) => {
          chat.toolCall({ index, id: `call_${name}_${index}`, type: 'function', function: { name, arguments: '{"topic":"solana"}' } });
        });
        await chat.complete('tool_calls');
      }
    },
  });
}

function researchTool(ms, { fail = false, name = 'research' } = {}) {
  return createTool({
    id: name,
    description: 'Long research',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
    background: { enabled: true },
    execute: async ({ topic }, { writer, abortSignal }) => {
      await writer.write({ progress: 'started' });
      await delay(ms, undefined, { signal: abortSignal }).catch(() => {});
      if (abortSignal.aborted) throw new Error('aborted');
      if (fail) throw new Error('the archive was unreachable');
      return { topic, findings: `${name} found 3 facts about ${topic}` };
    },
  });
}

function agentWith(tools, backgroundTasks = {}) {
  const srv = server.current;
  const memory = new Memory({ storage: new InMemoryStore() });
  const agent = new Agent({
    id: uid('bg'),
    model: { id: 'openai/bg-research', url: srv.url, apiKey: 'k', api: 'chat' },
    tools,
    memory,
    backgroundTasks: { enabled: true, ...backgroundTasks },
  });
  return { agent, memory };
}

test('untilIdle: the first turn acknowledges, the task completes, a continuation answers, the stream closes', T, async () => {
  useResearchScript();
  const { agent, memory } = agentWith({ research: researchTool(200) });
  const thread = uid('t');
  const out = await agent.stream('Research solana for me', { untilIdle: true, memory: { thread, resource: 'u1' } });
  const chunks = await collect(out.fullStream);
  const t = types(chunks);
  const at = (name, from = 0) => t.indexOf(name, from);
  assert.ok(at('background-task-started') > at('tool-call'), t.join(','));
  const firstFinish = at('finish');
  assert.ok(at('background-task-completed') > firstFinish, 'the task ends after the first turn');
  assert.ok(at('finish', firstFinish + 1) > at('background-task-completed'), 'a second turn finishes after it');
  assert.ok(t.includes('background-task-running') && t.includes('background-task-output'), t.join(','));
  const text = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.match(text, /I started the research in the background\./);
  assert.match(text, /Results are in: .*research found 3 facts about solana/);
  // Aggregates come from the first turn.
  assert.equal(await out.text, 'I started the research in the background.');
  // The continuation has its own run id; the directive reached the model and was never stored.
  const runIds = new Set(chunks.filter((c) => c.runId).map((c) => c.runId));
  assert.ok(runIds.size >= 2, 'fresh run ids for the continuation');
  const continuation = server.current.requests.at(-1).body;
  assert.ok(continuation.messages.some((m) => m.role === 'system' && m.content.includes(DIRECTIVE)));
  const stored = await memory.listMessages({ threadId: thread });
  assert.ok(!JSON.stringify(stored).includes(DIRECTIVE), 'the directive is never stored');
  assert.ok(JSON.stringify(stored).includes('research found 3 facts'), 'the real result is in memory');
  assert.ok(!JSON.stringify(stored).includes('"status":"running"'), 'no placeholder left');
  assert.equal(agent.listBackgroundTasks({ threadId: thread, status: 'completed' }).length, 1);
});

noUnhandledRejections();
