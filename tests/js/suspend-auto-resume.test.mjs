// autoResumeSuspendedTools (SPEC §19.7): the next user message lets the model resume a suspended
// call by calling the same tool with resumeData and suspendedToolCallId; the earlier wait closes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, requestsOf } from './helpers.mjs';
import { createTool, ofType } from './tools-helpers.mjs';
import { Memory, InMemoryStore, memoryAgent, replyText, replyToolCalls, turn, useHookServer } from './memory-helpers.mjs';

const hook = useHookServer();
const PIN_SCHEMA = { type: 'object', properties: { pin: { type: 'string' } }, required: ['pin'] };

function payTool(runs) {
  return createTool({
    id: 'pay',
    description: 'Pays an amount',
    inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    resumeSchema: PIN_SCHEMA,
    execute: async (input, context) => {
      runs.push({ input, resumeData: context.resumeData, suspendPayload: context.suspendPayload });
      if (context.resumeData === undefined) return void (await context.suspend({ ask: 'pin' }));
      return { paid: input.amount, pin: context.resumeData.pin };
    },
  });
}

async function suspendedThenAuto(resumeArgs) {
  const srv = hook.current;
  const runs = [];
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = memoryAgent(srv, memory, { tools: { pay: payTool(runs) } });
  const mem = { thread: 'auto', resource: 'u1' };
  let waitingId;
  hook.on(id, async (ex, n) => {
    if (n === 0) return replyToolCalls(ex, [{ id: 'call_1', name: 'pay', args: { amount: 5 } }]);
    if (n === 1) return replyToolCalls(ex, [{ id: 'call_2', name: 'pay', args: { amount: 5, ...resumeArgs(waitingId) } }]);
    return replyText(ex, 'Done.');
  });
  const first = await turn(agent, 'Pay 5', { memory: mem, closeOnSuspend: true });
  waitingId = ofType(first.chunks, 'tool-call-suspended')[0].payload.toolCallId;
  const second = await turn(agent, 'My PIN is 1234', { memory: mem, autoResumeSuspendedTools: true });
  return { agent, memory, runs, srv, id, first, second, waitingId };
}

test('a call naming the suspended one resumes it with resumeData and suspendPayload; the earlier run is closed', T, async () => {
  const { agent, memory, runs, srv, id, first, second, waitingId } = await suspendedThenAuto((w) => ({ resumeData: { pin: '1234' }, suspendedToolCallId: w }));
  assert.deepEqual((await second.out.warnings).filter((w) => w.type === 'unsupported-setting'), [], 'the option is honoured');
  const request = requestsOf(srv, id)[1].body;
  assert.match(request.messages[0].content, new RegExp(`"toolCallId":"${waitingId}"`));
  const pay = request.tools.find((t) => t.function.name === 'pay');
  assert.equal(pay.function.parameters.properties.suspendedToolCallId.type, 'string');
  assert.deepEqual(pay.function.parameters.properties.resumeData, PIN_SCHEMA);
  assert.deepEqual(runs.at(-1), { input: { amount: 5 }, resumeData: { pin: '1234' }, suspendPayload: { ask: 'pin' } });
  assert.deepEqual(ofType(second.chunks, 'tool-result')[0].payload.result, { paid: 5, pin: '1234' });
  assert.equal((await agent.listSuspendedRuns({ threadId: 'auto' })).total, 0, 'the earlier wait is closed');
  const err = await agent.resumeStream({ pin: '1' }, { runId: first.out.runId }).then(() => null, (e) => e);
  assert.equal(err?.code, 'not-found');
  const stored = await memory.listMessages({ threadId: 'auto' });
  const earlier = stored[1].content.parts.find((p) => p.toolInvocation?.toolCallId === waitingId).toolInvocation;
  assert.equal(earlier.state, 'result');
  assert.deepEqual(earlier.result, { resumedBy: 'call_2' });
  assert.equal(stored[1].content.metadata, undefined);
});

test('bad resumeData or an unknown suspendedToolCallId is a tool-error and the call stays suspended', T, async () => {
  for (const args of [(w) => ({ resumeData: { pin: 1234 }, suspendedToolCallId: w }), () => ({ resumeData: { pin: '1' }, suspendedToolCallId: 'nope' })]) {
    const { agent, runs, second } = await suspendedThenAuto(args);
    const error = ofType(second.chunks, 'tool-error')[0].payload.error.message;
    assert.match(error, /resumeSchema|no suspended call nope/);
    assert.equal(runs.length, 1, 'execute did not run again');
    assert.equal((await agent.listSuspendedRuns({ threadId: 'auto' })).total, 1);
  }
});
