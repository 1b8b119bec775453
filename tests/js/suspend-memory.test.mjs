// Memory while a run waits (SPEC §19.5): the thread holds the user message and the assistant
// message with the waiting call (`approval-requested` / `suspended`, listed under
// content.metadata.pendingToolApprovals / suspendedTools) as soon as the wait is announced; a
// decision turns it into the result; a new run on the thread leaves it out of its prompt.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, modelFor, requestsOf, uid, useModelServer } from './helpers.mjs';
import { Agent, Memory, InMemoryStore } from '../../pkg/index.node.js';
import { createTool, ofType } from './tools-helpers.mjs';

const server = useModelServer();

const PIN_SCHEMA = { type: 'object', properties: { pin: { type: 'string' } }, required: ['pin'] };

function tools(calls) {
  return {
    pay: createTool({
      id: 'pay',
      description: 'Pays an amount',
      inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
      resumeSchema: PIN_SCHEMA,
      execute: async (input, context) => {
        calls.push(context.resumeData);
        if (context.resumeData === undefined) return void (await context.suspend({ ask: 'pin' }));
        return { paid: input.amount };
      },
    }),
  };
}

const invocations = (m) => m.content.parts.filter((p) => p.type === 'tool-invocation').map((p) => p.toolInvocation.state);

test('a suspended call is in the thread when its chunk arrives, and its resume turns it into the result', T, async () => {
  const calls = [];
  const memory = new Memory({ storage: new InMemoryStore() });
  const id = uid('susmem');
  const agent = new Agent({ id: 'payer', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), tools: tools(calls), memory });
  const thread = { thread: uid('t'), resource: 'u1' };
  const out = await agent.stream('Pay 5', { closeOnSuspend: true, memory: thread });
  let atChunk = null;
  const chunks = [];
  for await (const c of out.fullStream) {
    chunks.push(c);
    if (c.type === 'tool-call-suspended') atChunk = await memory.listMessages({ threadId: thread.thread });
  }
  assert.equal(await out.finishReason, 'suspended');
  const suspended = ofType(chunks, 'tool-call-suspended')[0].payload;
  assert.deepEqual(atChunk.map((m) => m.role), ['user', 'assistant'], 'stored before the chunk went out');
  const waiting = atChunk[1];
  assert.deepEqual(invocations(waiting), ['suspended']);
  const entry = waiting.content.metadata.suspendedTools[suspended.toolCallId];
  assert.deepEqual(
    { ...entry, resumeSchema: JSON.parse(entry.resumeSchema) },
    { toolCallId: suspended.toolCallId, toolName: 'pay', args: suspended.args, type: 'suspension', runId: out.runId, suspendPayload: { ask: 'pin' }, resumeSchema: PIN_SCHEMA },
  );
  const ui = await memory.listMessages({ threadId: thread.thread, format: 'ui' });
  assert.equal(ui[1].parts.find((p) => p.type === 'tool-pay').toolCallId, suspended.toolCallId, 'a reloaded screen can draw the waiting call');

  // A new run on the thread: the waiting call stays out of its prompt; the run stays resumable.
  const echo = new Agent({ id: 'payer', model: modelFor(server.current, 'echo', { headers: { 'x-test-id': id } }), tools: tools([]), memory });
  const other = await echo.generate('Something else', { memory: thread });
  assert.match(other.text, /Something else/);
  const prompt = requestsOf(server.current, id).at(-1).body.messages;
  assert.ok(!JSON.stringify(prompt).includes(suspended.toolCallId), JSON.stringify(prompt));
  assert.equal((await agent.listSuspendedRuns({ threadId: thread.thread })).total, 1);

  const resumed = await agent.resumeStream({ pin: '1234' }, { runId: out.runId, memory: thread });
  for await (const _ of resumed.fullStream);
  assert.equal(await resumed.finishReason, 'stop');
  const after = await memory.listMessages({ threadId: thread.thread });
  const same = after.find((m) => m.id === waiting.id);
  assert.deepEqual(invocations(same), ['result']);
  assert.equal(same.content.metadata, undefined, 'the waiting entry is gone');
  assert.equal(after.indexOf(same), 1, 'it keeps its place before the later exchange');
  assert.deepEqual(calls, [undefined, { pin: '1234' }]);
});

test('an approval waits in pendingToolApprovals; declining it stores output-denied', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const id = uid('susmem');
  const guarded = createTool({ id: 'pay', description: 'Pays', inputSchema: { type: 'object', properties: { amount: { type: 'number' } } }, requireApproval: true, execute: async () => 'paid' });
  const agent = new Agent({ id: 'payer', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), tools: { pay: guarded }, memory });
  const thread = { thread: uid('t'), resource: 'u1' };
  const out = await agent.stream('Pay 5', { closeOnSuspend: true, memory: thread });
  for await (const _ of out.fullStream);
  const [, waiting] = await memory.listMessages({ threadId: thread.thread });
  assert.deepEqual(invocations(waiting), ['approval-requested']);
  const [callId] = Object.keys(waiting.content.metadata.pendingToolApprovals);
  assert.equal(waiting.content.metadata.pendingToolApprovals[callId].type, 'approval');
  assert.equal(waiting.content.metadata.pendingToolApprovals[callId].runId, out.runId);
  const declined = await agent.declineToolCall({ runId: out.runId, reason: 'no', memory: thread });
  for await (const _ of declined.fullStream);
  const [, done] = await memory.listMessages({ threadId: thread.thread });
  assert.deepEqual(invocations(done), ['output-denied']);
  assert.equal(done.content.metadata, undefined);
});
