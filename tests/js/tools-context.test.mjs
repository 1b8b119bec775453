// What a tool sees and can do while it runs (SPEC §5): context fields, writer.write and
// writer.custom chunks, context.abortSignal; approval (approve and decline by id, abort while
// waiting); clientTools that stop the run and a follow-up stream that carries their result.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { T, keys, noUnhandledRejections, requestsOf, types, useModelServer, waitForRequestsOf } from './helpers.mjs';
import {
  agentOn,
  assistantToolCalls,
  createTool,
  deferred,
  forecast,
  ofType,
  only,
  readRest,
  readUntil,
  runAgent,
  toolMessages,
  toolNames,
  until,
  weatherDef,
} from './tools-helpers.mjs';

const server = useModelServer();

/** The `code` of the ResumeError a decision rejects with (null when it resolved). */
async function resumeCode(decision) {
  try {
    await decision;
    return null;
  } catch (e) {
    assert.equal(e.name, 'ResumeError');
    return e.code;
  }
}

// ---------------------------------------------------------------------------------------------
// context

test('execute(input, context): toolCallId, runId, agentId, messages, requestContext, abortSignal, writer, agent', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const requestContext = new Map([['userId', 'u-42']]);
  const { out, chunks } = await runAgent(server.current, 'tool-call', {
    tools: { weather },
    agent: { id: 'weather-bot' },
    messages: 'Weather in Paris?',
    options: { runId: 'run-ctx-1', requestContext },
  });
  assert.equal(calls.length, 1);
  const { context } = calls[0];
  const { toolCallId } = only(chunks, 'tool-call').payload;
  assert.equal(context.toolCallId, toolCallId);
  assert.equal(context.runId, 'run-ctx-1');
  assert.equal(out.runId, 'run-ctx-1');
  assert.equal(context.agentId, 'weather-bot');
  assert.equal(context.requestContext, requestContext, 'the same object the caller passed');
  assert.equal(context.requestContext.get('userId'), 'u-42');
  assert.ok(context.abortSignal instanceof AbortSignal);
  assert.equal(context.abortSignal.aborted, false);
  assert.equal(typeof context.writer.write, 'function');
  assert.equal(typeof context.writer.custom, 'function');
  assert.ok(Array.isArray(context.messages));
  assert.equal(context.messages[0].role, 'user');
  assert.match(JSON.stringify(context.messages[0].content), /Weather in Paris\?/);
  assert.equal(context.agent.agentId, 'weather-bot');
  assert.equal(context.agent.toolCallId, toolCallId);
  assert.deepEqual(context.agent.messages, context.messages);
});

test('context.messages of a later step include the earlier call and its result; a plain-object requestContext passes through', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const requestContext = { tenant: 'acme' };
  await runAgent(server.current, 'tools-then-text:2', { tools: { weather }, options: { requestContext } });
  assert.equal(calls.length, 2);
  assert.equal(calls[0].context.messages.length, 1);
  const later = calls[1].context.messages;
  assert.deepEqual(later.map((m) => m.role), ['user', 'assistant', 'tool']);
  assert.equal(later[1].content[0].type, 'tool-call');
  assert.equal(later[1].content[0].toolCallId, calls[0].context.toolCallId);
  assert.equal(later[2].content[0].type, 'tool-result');
  assert.deepEqual(later[2].content[0].output, { type: 'json', value: forecast('Paris') });
  assert.notEqual(calls[0].context.toolCallId, calls[1].context.toolCallId);
  assert.deepEqual(calls[1].context.requestContext, requestContext);
});

// ---------------------------------------------------------------------------------------------
// writer

test('writer.write → a tool-output chunk from USER; writer.custom → the data chunk as is (transient too)', T, async () => {
  const returned = [];
  const reporter = createTool({
    id: 'reporter',
    description: 'reports progress',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execute: async ({ city }, { writer }) => {
      returned.push(await writer.write({ stage: 'fetching', city }));
      returned.push(await writer.custom({ type: 'data-progress', data: { percent: 50 }, id: 'progress-1' }));
      returned.push(await writer.custom({ type: 'data-status', data: 'almost there', transient: true }));
      await writer.write('done');
      return forecast(city);
    },
  });
  const { chunks, requests } = await runAgent(server.current, 'tool-call', { tools: { reporter } });
  const { toolCallId } = only(chunks, 'tool-call').payload;
  const runId = chunks[0].runId;
  const between = types(chunks).slice(types(chunks).indexOf('tool-call') + 1, types(chunks).indexOf('tool-result'));
  assert.deepEqual(between, ['tool-output', 'data-progress', 'data-status', 'tool-output'], 'in the order written, before the result');

  const outputs = ofType(chunks, 'tool-output');
  const seqOf = (c) => chunks.indexOf(c) + 1;
  assert.deepEqual(outputs[0], {
    type: 'tool-output',
    seq: seqOf(outputs[0]),
    runId,
    from: 'USER',
    payload: { toolCallId, toolName: 'reporter', output: { stage: 'fetching', city: 'Paris' } },
  });
  assert.equal(outputs[1].payload.output, 'done');
  const progress = only(chunks, 'data-progress');
  const status = only(chunks, 'data-status');
  assert.deepEqual(progress, { type: 'data-progress', seq: seqOf(progress), data: { percent: 50 }, id: 'progress-1' });
  assert.deepEqual(status, { type: 'data-status', seq: seqOf(status), data: 'almost there', transient: true });
  assert.deepEqual(returned, [undefined, undefined, undefined], 'the promises resolve');
  // Progress is for the user, not the model.
  assert.deepEqual(toolMessages(requests[1].body).map((m) => JSON.parse(m.content)), [forecast('Paris')]);
});

test('writer.custom with a type that is not data-* rejects with a TypeError the tool can catch', T, async () => {
  const errors = [];
  const picky = createTool({
    id: 'picky',
    description: 'writes a bad chunk',
    inputSchema: { type: 'object', properties: {} },
    execute: async (_input, { writer }) => {
      for (const chunk of [{ type: 'progress', data: 1 }, { data: 1 }, 'data-x']) {
        try {
          await writer.custom(chunk);
        } catch (err) {
          errors.push(err);
        }
      }
      return 'ok';
    },
  });
  const { chunks, out } = await runAgent(server.current, 'call:picky', { tools: { picky } });
  assert.equal(errors.length, 3);
  for (const err of errors) {
    assert.ok(err instanceof TypeError);
    assert.match(err.message, /data-/);
  }
  assert.equal(only(chunks, 'tool-result').payload.result, 'ok');
  assert.equal(await out.finishReason, 'stop');
});

// ---------------------------------------------------------------------------------------------
// abortSignal

/** A tool that waits on its abortSignal (or 5 s) and records what it saw. */
function waitingTool(seen) {
  return createTool({
    id: 'wait',
    description: 'waits',
    inputSchema: { type: 'object', properties: {} },
    execute: (_input, { abortSignal }) =>
      new Promise((resolve) => {
        seen.signal = abortSignal;
        seen.started.resolve();
        const timer = setTimeout(() => resolve('finished'), 5000);
        abortSignal.addEventListener('abort', () => {
          seen.abortedAt = Date.now();
          clearTimeout(timer);
          resolve('stopped');
        });
      }),
  });
}

test('context.abortSignal aborts when the caller aborts mid-tool; the stream ends with abort', T, async () => {
  const seen = { started: deferred() };
  const { agent, id } = agentOn(server.current, 'call:wait', { tools: { wait: waitingTool(seen) } });
  const controller = new AbortController();
  const out = await agent.stream('go', { abortSignal: controller.signal });
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'tool-call');
  await seen.started.promise;
  const abortedAt = Date.now();
  controller.abort();
  await readRest(reader, chunks);
  assert.equal(seen.signal.aborted, true);
  assert.ok(seen.abortedAt - abortedAt < 1000, 'the tool heard it at once');
  assert.equal(chunks.at(-1).type, 'abort');
  assert.equal(ofType(chunks, 'tool-result').length, 0);
  assert.equal(await out.finishReason, 'abort');
  assert.equal(requestsOf(server.current, id).length, 1, 'the model was not called again');
});

test('context.abortSignal aborts when the reader cancels the stream mid-tool', T, async () => {
  const seen = { started: deferred() };
  const { agent } = agentOn(server.current, 'call:wait', { tools: { wait: waitingTool(seen) } });
  const out = await agent.stream('go');
  const reader = out.fullStream.getReader();
  await readUntil(reader, (c) => c.type === 'tool-call');
  await seen.started.promise;
  await reader.cancel('user closed the tab');
  await until(() => seen.signal.aborted, 'the tool signal to abort', 2000);
  assert.equal(await out.finishReason, 'abort');
});

test('a tool that ignores its abortSignal does not hold the stream open after an abort', T, async () => {
  const stubborn = createTool({
    id: 'stubborn',
    description: 'ignores aborts',
    inputSchema: { type: 'object', properties: {} },
    execute: () => delay(1500, 'late'),
  });
  const { agent } = agentOn(server.current, 'call:stubborn', { tools: { stubborn } });
  const controller = new AbortController();
  const out = await agent.stream('go', { abortSignal: controller.signal });
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'tool-call');
  const t0 = Date.now();
  controller.abort('changed my mind');
  await readRest(reader, chunks);
  assert.ok(Date.now() - t0 < 1000, `ended ${Date.now() - t0} ms after the abort`);
  assert.deepEqual(chunks.at(-1).payload, { reason: 'changed my mind' });
});

// ---------------------------------------------------------------------------------------------
// Approval

const APPROVAL_ARGS = { city: 'Paris' };

test('approval: two pending calls, each decided by its own id (decline one, approve the other)', T, async () => {
  const ran = [];
  const weather = createTool(
    weatherDef([], {
      execute: async ({ city }) => {
        ran.push(city);
        return forecast(city);
      },
    }),
  );
  const { agent, id } = agentOn(server.current, 'tool-calls-parallel', { tools: { weather } });
  const out = await agent.stream('Paris or London?', { requireToolApproval: true });
  const reader = out.fullStream.getReader();
  const chunks = [];
  await readUntil(reader, () => ofType(chunks, 'tool-call-approval').length === 2, chunks);
  const [paris, london] = ofType(chunks, 'tool-call-approval').map((c) => c.payload);
  assert.deepEqual(keys(paris), ['args', 'resumeSchema', 'toolCallId', 'toolName']);
  assert.deepEqual([paris.toolName, paris.args], ['weather', APPROVAL_ARGS]);
  assert.deepEqual([london.toolName, london.args], ['weather', { city: 'London' }]);
  assert.deepEqual(
    ofType(chunks, 'tool-call').map((c) => c.payload.toolCallId),
    [paris.toolCallId, london.toolCallId],
  );
  const resume = typeof paris.resumeSchema === 'string' ? JSON.parse(paris.resumeSchema) : paris.resumeSchema;
  assert.equal(resume.properties.approved.type, 'boolean');

  // Nothing runs, and the model is not called again, while both wait.
  await delay(50);
  assert.deepEqual(ran, []);
  assert.equal(requestsOf(server.current, id).length, 1);

  // Wrong ids decide nothing (SPEC §19.3: the decision methods return a promise of the run's
  // output, and reject with a ResumeError saying why nothing was decided).
  assert.equal(await resumeCode(agent.approveToolCall({ runId: out.runId, toolCallId: 'call_unknown' })), 'not-waiting');
  assert.equal(await resumeCode(agent.approveToolCall({ runId: 'another-run', toolCallId: paris.toolCallId })), 'not-found');
  assert.equal(await resumeCode(agent.declineToolCall({ runId: 'another-run', toolCallId: london.toolCallId, reason: 'x' })), 'not-found');

  // Decide the second call first: declining London must not touch Paris.
  assert.equal((await agent.declineToolCall({ runId: out.runId, toolCallId: london.toolCallId, reason: 'Only Paris, please' })).runId, out.runId);
  await delay(50);
  assert.deepEqual(ran, [], 'declining one call did not run the other');
  assert.equal(requestsOf(server.current, id).length, 1, 'the step still waits for Paris');

  assert.equal((await agent.approveToolCall({ runId: out.runId, toolCallId: paris.toolCallId })).runId, out.runId);
  assert.equal(await resumeCode(agent.approveToolCall({ runId: out.runId, toolCallId: paris.toolCallId })), 'not-waiting', 'already decided');
  assert.equal(await resumeCode(agent.declineToolCall({ runId: out.runId, toolCallId: london.toolCallId })), 'not-waiting', 'already decided');
  await readRest(reader, chunks);

  assert.deepEqual(ran, ['Paris']);
  const denied = only(chunks, 'tool-output-denied');
  assert.deepEqual(denied.payload, {
    toolCallId: london.toolCallId,
    toolName: 'weather',
    args: { city: 'London' },
    approval: { id: london.toolCallId, approved: false, reason: 'Only Paris, please' },
  });
  const result = only(chunks, 'tool-result');
  assert.equal(result.payload.toolCallId, paris.toolCallId);
  assert.deepEqual(result.payload.result, forecast('Paris'));

  const requests = await waitForRequestsOf(server.current, id, 2);
  const body = requests[1].body;
  assert.deepEqual(assistantToolCalls(body).tool_calls.map((c) => c.id), [paris.toolCallId, london.toolCallId]);
  const messages = toolMessages(body);
  assert.deepEqual(messages.map((m) => m.tool_call_id), [paris.toolCallId, london.toolCallId], 'call order');
  assert.deepEqual(JSON.parse(messages[0].content), forecast('Paris'));
  assert.equal(messages[1].content, 'The user declined this tool call: Only Paris, please');
  assert.equal(await out.finishReason, 'stop');
});

test('approval: a tool with requireApproval waits without requireToolApproval; approve runs it', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls, { requireApproval: true }));
  const other = createTool({ id: 'other', description: 'no approval', inputSchema: { type: 'object', properties: {} }, execute: () => 1 });
  const { agent } = agentOn(server.current, 'tool-call', { tools: { weather, other } });
  const out = await agent.stream('go');
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'tool-call-approval');
  assert.equal(calls.length, 0);
  const { toolCallId } = chunks.at(-1).payload;
  await agent.approveToolCall({ runId: out.runId, toolCallId });
  await readRest(reader, chunks);
  assert.equal(calls.length, 1);
  assert.equal(only(chunks, 'tool-result').payload.toolCallId, toolCallId);
  assert.equal(ofType(chunks, 'tool-output-denied').length, 0);
  assert.equal(await out.finishReason, 'stop');
});

test('approval: decline without a reason tells the model it was declined', T, async () => {
  const weather = createTool(weatherDef([], { requireApproval: true }));
  const { agent, id } = agentOn(server.current, 'tool-call', { tools: { weather } });
  const out = await agent.stream('go');
  const chunks = [];
  for await (const chunk of out.fullStream) {
    chunks.push(chunk);
    if (chunk.type === 'tool-call-approval') agent.declineToolCall({ runId: out.runId, toolCallId: chunk.payload.toolCallId });
  }
  const denied = only(chunks, 'tool-output-denied');
  assert.equal(denied.payload.approval.approved, false);
  assert.equal(denied.payload.approval.reason, undefined);
  const [message] = toolMessages(requestsOf(server.current, id)[1].body);
  assert.match(message.content, /^The user declined this tool call/);
});

for (const decide of ['approveToolCall', 'declineToolCall']) {
  test(`approval: ${decide} called synchronously from onChunk on the tool-call-approval chunk decides the call`, T, async () => {
    const calls = [];
    const weather = createTool(weatherDef(calls, { requireApproval: true }));
    const { agent, id } = agentOn(server.current, 'tool-call', { tools: { weather } });
    const answers = [];
    const onChunk = (chunk) => {
      if (chunk.type === 'tool-call-approval') {
        answers.push(agent[decide]({ runId: chunk.runId, toolCallId: chunk.payload.toolCallId, reason: 'not today' }));
      }
    };
    const out = await agent.stream('go', { onChunk });
    const chunks = [];
    for await (const chunk of out.fullStream) chunks.push(chunk);
    const decided = await Promise.all(answers);
    assert.deepEqual(decided.map((o) => o.runId), [out.runId], 'the call was waiting when its chunk arrived');
    assert.equal(await out.finishReason, 'stop');
    if (decide === 'approveToolCall') {
      assert.equal(calls.length, 1);
      assert.deepEqual(only(chunks, 'tool-result').payload.result, forecast('Paris'));
    } else {
      assert.equal(calls.length, 0);
      assert.equal(only(chunks, 'tool-output-denied').payload.approval.reason, 'not today');
      const [message] = toolMessages(requestsOf(server.current, id)[1].body);
      assert.equal(message.content, 'The user declined this tool call: not today');
    }
  });
}

test('approval: aborting while a call waits ends the stream with an abort chunk; nothing runs', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const { agent, id } = agentOn(server.current, 'tool-call', { tools: { weather } });
  const controller = new AbortController();
  const out = await agent.stream('go', { requireToolApproval: true, abortSignal: controller.signal });
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'tool-call-approval');
  const { toolCallId } = chunks.at(-1).payload;
  controller.abort();
  await readRest(reader, chunks);
  assert.equal(chunks.at(-1).type, 'abort');
  assert.equal(await out.finishReason, 'abort');
  assert.equal(await resumeCode(agent.approveToolCall({ runId: out.runId, toolCallId })), 'not-found', 'nothing waits any more');
  await delay(30);
  assert.equal(calls.length, 0);
  assert.equal(requestsOf(server.current, id).length, 1);
});

// ---------------------------------------------------------------------------------------------
// clientTools

const pickColour = {
  id: 'pickColour',
  description: 'Ask the user to pick a colour',
  inputSchema: { type: 'object', properties: { hint: { type: 'string' } }, required: ['hint'] },
};

test('clientTools: the call stops the run with finishReason tool-calls; a follow-up stream with the result continues', T, async () => {
  const { agent, id } = agentOn(server.current, 'tool-call');
  const first = await agent.stream('Pick a colour for me', { clientTools: { pickColour } });
  const chunks = [];
  for await (const chunk of first.fullStream) chunks.push(chunk);
  const requests = requestsOf(server.current, id);
  assert.equal(requests.length, 1, 'the model is not called again');
  assert.deepEqual(toolNames(requests[0].body), ['pickColour']);
  assert.equal(requests[0].body.tools[0].function.description, 'Ask the user to pick a colour');

  const call = only(chunks, 'tool-call').payload;
  assert.deepEqual([call.toolName, call.args], ['pickColour', { hint: 'example' }]);
  assert.equal(ofType(chunks, 'tool-result').length, 0);
  assert.equal(ofType(chunks, 'tool-error').length, 0);
  assert.equal(only(chunks, 'step-finish').payload.stepResult.isContinued, false);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(chunks.at(-1).payload.stepResult.reason, 'tool-calls');
  assert.equal(await first.finishReason, 'tool-calls');
  assert.deepEqual(await first.toolCalls, [call]);
  assert.deepEqual(await first.toolResults, []);

  // The app runs the tool in the client, then sends the conversation back with its result.
  const followUp = await agent.stream(
    [
      { role: 'user', content: 'Pick a colour for me' },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: call.args }] },
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'json', value: { colour: 'teal' } } }],
      },
    ],
    { clientTools: { pickColour } },
  );
  assert.equal(await followUp.text, 'The tool said: {"colour":"teal"}');
  assert.equal(await followUp.finishReason, 'stop');
  const body = requestsOf(server.current, id)[1].body;
  assert.deepEqual(body.messages[0], { role: 'user', content: 'Pick a colour for me' });
  assert.deepEqual(assistantToolCalls(body).tool_calls, [
    { id: call.toolCallId, type: 'function', function: { name: 'pickColour', arguments: '{"hint":"example"}' } },
  ]);
  assert.deepEqual(body.messages.at(-1), { role: 'tool', tool_call_id: call.toolCallId, content: '{"colour":"teal"}' });
});

test('clientTools: the run still ends when the client tool is one of several calls in the step', T, async () => {
  const { agent, id } = agentOn(server.current, 'tool-calls-parallel');
  const out = await agent.stream('Two colours', { clientTools: { pickColour } });
  const chunks = [];
  for await (const chunk of out.fullStream) chunks.push(chunk);
  assert.equal(ofType(chunks, 'tool-call').length, 2);
  assert.equal(await out.finishReason, 'tool-calls');
  assert.equal(requestsOf(server.current, id).length, 1);
});

noUnhandledRejections();
