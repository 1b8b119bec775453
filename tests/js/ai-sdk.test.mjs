// toAISdkStream (SPEC §10) against the real `ai` package (pinned in package.json): every part
// goes through the path useChat takes — createUIMessageStreamResponse (SSE), then
// DefaultChatTransport's parser, which validates each part against uiMessageChunkSchema — and
// readUIMessageStream rebuilds the assistant message the page would render.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createUIMessageStreamResponse, DefaultChatTransport, readUIMessageStream } from 'ai';
import { toAISdkStream, toAISdkV5Stream, createTool, Memory, InMemoryStore } from '../../pkg/index.node.js';
import { Agent, T, collect, errorOf, keys, modelFor, noUnhandledRejections, types, uid, useModelServer, waitForRequestsOf } from './helpers.mjs';
import { WEATHER_SCHEMA, forecast, weatherDef } from './tools-helpers.mjs';

const server = useModelServer();

function agentOn(script, config = {}) {
  const id = uid('ai-sdk');
  const agent = new Agent({ id: 'ai-sdk-agent', model: modelFor(server.current, script, { headers: { 'x-test-id': id } }), ...config });
  return { agent, id };
}

/**
 * Reads a UI message stream the way useChat does. Returns { parts, message, messages }: every
 * part as sent, the last reconstructed message and how many snapshots the reader yielded.
 * With `terminateOnError` an `error` part makes the iteration throw.
 */
async function readAsUseChat(uiStream, { terminateOnError = true, onError } = {}) {
  const [forParts, forReader] = uiStream.tee();
  const partsDone = collect(forParts);
  const response = createUIMessageStreamResponse({ stream: forReader });
  assert.equal(response.headers.get('content-type'), 'text/event-stream');
  // DefaultChatTransport turns the SSE body back into parts, throwing on any part the schema refuses.
  const validated = new DefaultChatTransport().processResponseStream(response.body);
  let message;
  let snapshots = 0;
  for await (const m of readUIMessageStream({ stream: validated, terminateOnError, onError })) {
    message = m;
    snapshots += 1;
  }
  return { parts: await partsDone, message, snapshots };
}

/** The parts of a message without step markers. */
const content = (message) => message.parts.filter((p) => p.type !== 'step-start');

/** The exact field names each part type may carry (AI SDK 5 UIMessageChunk). */
const FIELDS = {
  start: [['type'], ['messageId']],
  'start-step': [['type'], []],
  'finish-step': [['type'], []],
  finish: [['finishReason', 'type'], []],
  abort: [['type'], []],
  'text-start': [['id', 'type'], []],
  'text-end': [['id', 'type'], []],
  'text-delta': [['delta', 'id', 'type'], []],
  'reasoning-start': [['id', 'type'], []],
  'reasoning-end': [['id', 'type'], []],
  'reasoning-delta': [['delta', 'id', 'type'], []],
  'tool-input-start': [['toolCallId', 'toolName', 'type'], []],
  'tool-input-delta': [['inputTextDelta', 'toolCallId', 'type'], []],
  'tool-input-available': [['input', 'toolCallId', 'toolName', 'type'], []],
  'tool-output-available': [['output', 'toolCallId', 'type'], []],
  'tool-output-error': [['errorText', 'toolCallId', 'type'], []],
  'tool-input-error': [['errorText', 'input', 'toolCallId', 'toolName', 'type'], []],
  error: [['errorText', 'type'], []],
};

function assertExactFields(parts) {
  for (const part of parts) {
    const [required, optional] = part.type.startsWith('data-') ? [['data', 'type'], ['id', 'transient']] : FIELDS[part.type] ?? [];
    assert.ok(required, `unexpected part type ${part.type}`);
    const extra = keys(part).filter((k) => !required.includes(k) && !optional.includes(k));
    assert.deepEqual(extra, [], `${part.type} has only its own fields`);
    for (const k of required) assert.ok(k in part, `${part.type} has ${k}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Text, reasoning

test('echo: start, one step of text, finish; the reader rebuilds the reply with the run\'s message id', T, async () => {
  const { agent } = agentOn('echo');
  const out = await agent.stream('Hello there', {});
  const { parts, message } = await readAsUseChat(toAISdkStream(out, { from: 'agent' }));
  const deltas = parts.filter((p) => p.type === 'text-delta');
  assert.ok(deltas.length > 1, 'streamed in several deltas');
  assert.deepEqual(types(parts), ['start', 'start-step', 'text-start', ...deltas.map(() => 'text-delta'), 'text-end', 'finish-step', 'finish']);
  assertExactFields(parts);
  const textId = parts[2].id;
  assert.ok(parts.slice(2, -2).every((p) => p.id === textId), 'one text id from start to end');

  const text = await out.text;
  assert.equal(text, 'You said: Hello there');
  assert.equal(message.role, 'assistant');
  assert.equal(message.id, parts[0].messageId);
  assert.match(message.id, /\S/);
  assert.deepEqual(types(message.parts), ['step-start', 'text']);
  assert.equal(message.parts[1].text, text);
  assert.equal(message.parts[1].state, 'done');
});

test('reasoning: a reasoning part, then the text part, both done', T, async () => {
  const { agent } = agentOn('reasoning');
  const out = await agent.stream('Keep it short');
  const { parts, message } = await readAsUseChat(toAISdkStream(out, { from: 'agent' }));
  assertExactFields(parts);
  const [reasoning, text] = content(message);
  assert.equal(reasoning.type, 'reasoning');
  assert.equal(reasoning.state, 'done');
  assert.equal(reasoning.text, 'Let me think about this. The user wants a short answer, so I will keep it brief.');
  assert.equal(reasoning.text, await out.reasoningText);
  assert.equal(text.type, 'text');
  assert.equal(text.text, 'Here is a short answer.');
  assert.ok(types(parts).indexOf('reasoning-end') < types(parts).indexOf('text-start'));
});

// ---------------------------------------------------------------------------------------------
// Tools

test('a createTool tool over two steps: tool-weather part, output-available with input and output, then the answer', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const { agent } = agentOn('tool-call', { tools: { weather } });
  const out = await agent.stream('What is the weather in Paris?');
  const { parts, message } = await readAsUseChat(toAISdkStream(out, { from: 'agent' }));
  assertExactFields(parts);
  assert.deepEqual(
    types(parts).filter((t) => t !== 'tool-input-delta' && t !== 'text-delta'),
    [
      'start',
      'start-step', 'tool-input-start', 'tool-input-available', 'tool-output-available', 'finish-step',
      'start-step', 'text-start', 'text-end', 'finish-step',
      'finish',
    ],
  );
  const toolCallId = parts.find((p) => p.type === 'tool-input-start').toolCallId;
  assert.match(toolCallId, /^call_/);
  assert.ok(parts.filter((p) => 'toolCallId' in p).every((p) => p.toolCallId === toolCallId), 'one call id throughout');
  const streamedInput = parts.filter((p) => p.type === 'tool-input-delta').map((p) => p.inputTextDelta).join('');
  assert.deepEqual(JSON.parse(streamedInput), { city: 'Paris' });

  assert.equal(message.parts.filter((p) => p.type === 'step-start').length, 2);
  const [tool, text] = content(message);
  assert.equal(tool.type, 'tool-weather');
  assert.equal(tool.toolCallId, toolCallId);
  assert.equal(tool.state, 'output-available');
  assert.deepEqual(tool.input, { city: 'Paris' });
  assert.deepEqual(tool.output, forecast('Paris'));
  assert.equal(text.type, 'text');
  assert.equal(text.text, await out.text);
  assert.equal(calls.length, 1);
});

test('a tool that throws: output-error with the error text; the run goes on to answer', T, async () => {
  const explode = createTool({
    id: 'explode',
    description: 'Always fails',
    inputSchema: { type: 'object', properties: {} },
    execute: async () => {
      throw new Error('the fuse was short');
    },
  });
  const { agent } = agentOn('call:explode', { tools: { explode } });
  const out = await agent.stream('Light it');
  const { parts, message } = await readAsUseChat(toAISdkStream(out, { from: 'agent' }));
  assertExactFields(parts);
  const error = parts.find((p) => p.type === 'tool-output-error');
  assert.match(error.errorText, /the fuse was short/);
  const [tool, text] = content(message);
  assert.equal(tool.type, 'tool-explode');
  assert.equal(tool.state, 'output-error');
  assert.deepEqual(tool.input, {});
  assert.equal(tool.errorText, error.errorText);
  assert.equal(tool.output, undefined);
  assert.equal(text.type, 'text');
  assert.equal(types(parts).at(-1), 'finish');
});

test('writer.custom → data parts (same id updates one part, transient ones are sent but not kept); writer.write of a data chunk too', T, async () => {
  const weather = createTool({
    ...weatherDef(),
    execute: async ({ city }, { writer }) => {
      await writer.custom({ type: 'data-progress', data: { percent: 50 }, id: 'p1' });
      await writer.write({ stage: 'fetching', city }); // no UI part: left out
      await writer.custom({ type: 'data-status', data: 'almost there', transient: true });
      await writer.custom({ type: 'data-progress', data: { percent: 100 }, id: 'p1' });
      await writer.write({ type: 'data-source', data: { name: 'met office' } });
      return forecast(city);
    },
  });
  const { agent } = agentOn('tool-call', { tools: { weather } });
  const out = await agent.stream('Weather?');
  const { parts, message } = await readAsUseChat(toAISdkStream(out, { from: 'agent' }));
  assertExactFields(parts);
  assert.deepEqual(
    parts.filter((p) => p.type.startsWith('data-')),
    [
      { type: 'data-progress', id: 'p1', data: { percent: 50 } },
      { type: 'data-status', data: 'almost there', transient: true },
      { type: 'data-progress', id: 'p1', data: { percent: 100 } },
      { type: 'data-source', data: { name: 'met office' } },
    ],
  );
  assert.deepEqual(
    message.parts.filter((p) => p.type.startsWith('data-')),
    [
      { type: 'data-progress', id: 'p1', data: { percent: 100 } },
      { type: 'data-source', data: { name: 'met office' } },
    ],
  );
  assert.equal(content(message).find((p) => p.type === 'tool-weather').state, 'output-available');
});

test('approval: a data-tool-call-approval part to answer from the page; declining shows as output-error', T, async () => {
  const weather = createTool({ ...weatherDef(), requireApproval: true });
  const { agent } = agentOn('tool-call', { tools: { weather } });
  const out = await agent.stream('Weather?');
  const [forParts, forReader] = toAISdkStream(out, { from: 'agent' }).tee();
  const partsDone = collect(forParts);
  let message;
  let declined = false;
  for await (const m of readUIMessageStream({ stream: forReader, terminateOnError: true })) {
    message = m;
    const ask = m.parts.find((p) => p.type === 'data-tool-call-approval');
    if (ask && !declined) {
      declined = true;
      assert.deepEqual(keys(ask.data), ['args', 'resumeSchema', 'runId', 'state', 'toolCallId', 'toolName']);
      assert.equal(ask.id, ask.data.toolCallId);
      assert.equal(ask.data.runId, out.runId);
      assert.deepEqual(ask.data.args, { city: 'Paris' });
      assert.equal((await agent.declineToolCall({ runId: out.runId, toolCallId: ask.id, reason: 'not today' })).runId, out.runId);
    }
  }
  assertExactFields(await partsDone);
  assert.ok(declined, 'the approval part arrived');
  const tool = content(message).find((p) => p.type === 'tool-weather');
  assert.equal(tool.state, 'output-error');
  assert.equal(tool.errorText, 'The user declined this tool call: not today');
});

// ---------------------------------------------------------------------------------------------
// Failures, inputs, cancel

test('error-401: the stream ends with an error part and the reader surfaces it', T, async () => {
  const { agent } = agentOn('error-401');
  const out = await agent.stream('Hello');
  const failure = await errorOf(() => readAsUseChat(toAISdkStream(out, { from: 'agent' })));
  const runError = await errorOf(() => out.getFullOutput());
  assert.equal(runError.status, 401);
  assert.match(runError.message, /Incorrect API key provided/);
  assert.equal(failure.message, runError.message, 'the reader throws with the run error\'s message');

  // Without terminateOnError the reader reports it through onError and the message stays empty.
  const { agent: again } = agentOn('error-401');
  const seen = [];
  const { parts, message } = await readAsUseChat(toAISdkStream(await again.stream('Hello')), { terminateOnError: false, onError: (e) => seen.push(e.message) });
  // As ai's own toUIMessageStream: no start-step for a step that failed before any content, so
  // the message useChat keeps (and posts back next time) holds no lone step-start part.
  assert.deepEqual(types(parts), ['start', 'error']);
  assert.deepEqual(parts.at(-1), { type: 'error', errorText: runError.message });
  assert.deepEqual(seen, [runError.message]);
  assert.deepEqual(message?.parts ?? [], []);
});

test('finish carries finishReason (length shows); sendFinishReason: false leaves it out', T, async () => {
  const { agent } = agentOn('length');
  const { parts } = await readAsUseChat(toAISdkStream(await agent.stream('Tell me everything'), { from: 'agent' }));
  assertExactFields(parts);
  assert.deepEqual(parts.at(-1), { type: 'finish', finishReason: 'length' });
  const echo = await readAsUseChat(toAISdkStream(await agentOn('echo').agent.stream('Hi')));
  assert.deepEqual(echo.parts.at(-1), { type: 'finish', finishReason: 'stop' });
  const bare = await readAsUseChat(toAISdkStream(await agent.stream('Again'), { from: 'agent', sendFinishReason: false }));
  assert.deepEqual(bare.parts.at(-1), { type: 'finish' });
  const err = await errorOf(() => toAISdkStream(agent.stream('x'), { sendFinishReason: 'no' }));
  assert.equal(err.name, 'TypeError');
  assert.match(err.message, /^options\.sendFinishReason: expected a boolean, got a string/);
});

test('a 500 before any content: start, error; the kept message has no step-start part', T, async () => {
  const { agent } = agentOn('error-500');
  const { parts, message } = await readAsUseChat(toAISdkStream(await agent.stream('Hello')), { terminateOnError: false });
  assert.deepEqual(types(parts), ['start', 'error']);
  assert.match(parts[1].errorText, /server had an error/);
  assert.deepEqual(message?.parts ?? [], []);
});

test('arguments that are not JSON: tool-input-error (errorText, the raw input) then tool-output-error, as ai sends them', T, async () => {
  const calls = [];
  const { agent } = agentOn('tool-call-bad-json', { tools: { weather: createTool(weatherDef(calls)) } });
  const out = await agent.stream('Weather?');
  const { parts, message } = await readAsUseChat(toAISdkStream(out));
  assertExactFields(parts);
  const ofCall = parts.filter((p) => p.type.startsWith('tool-') && p.type !== 'tool-input-delta');
  assert.deepEqual(types(ofCall), ['tool-input-start', 'tool-input-error', 'tool-output-error']);
  const [, inputError, outputError] = ofCall;
  assert.equal(inputError.toolName, 'weather');
  assert.equal(typeof inputError.input, 'string');
  assert.match(inputError.input, /celsius/);
  assert.match(inputError.errorText, /not valid JSON/);
  assert.equal(outputError.errorText, inputError.errorText);
  const tool = content(message).find((p) => p.type === 'tool-weather');
  assert.equal(tool.state, 'output-error');
  assert.equal(tool.input, undefined);
  assert.equal(tool.rawInput, inputError.input);
  assert.equal(tool.errorText, inputError.errorText);
  assert.equal(calls.length, 0);
});

test('after a reload memory shows what the live stream showed: the user message id from the page, writer.write data parts', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const weather = createTool({
    ...weatherDef(),
    execute: async ({ city }, { writer }) => {
      await writer.write({ type: 'data-source', data: { name: 'met office' } });
      await writer.write({ type: 'data-tick', data: 1, transient: true });
      await writer.custom({ type: 'data-progress', data: { percent: 100 }, id: 'p1' });
      return forecast(city);
    },
  });
  const { agent } = agentOn('tool-call', { tools: { weather }, memory });
  const userMessage = { id: 'page-msg-1', role: 'user', parts: [{ type: 'text', text: 'Weather in Paris?' }] };
  const out = await agent.stream([userMessage], { memory: { thread: 'reload', resource: 'u1' } });
  const { message: live } = await readAsUseChat(toAISdkStream(out));
  const [user, assistant] = await memory.listMessages({ threadId: 'reload', format: 'ui' });
  assert.equal(user.id, 'page-msg-1');
  assert.deepEqual(user.parts.filter((p) => p.type === 'text'), userMessage.parts);
  assert.equal(assistant.id, live.id);
  const data = (m) => m.parts.filter((p) => p.type.startsWith('data-')).map(({ type, data, id }) => ({ type, data, id }));
  assert.deepEqual(data(assistant), data(live));
  assert.deepEqual(data(live).map((p) => p.type), ['data-source', 'data-progress']);
});

test('toAISdkV5Stream is the same conversion; fullStream itself and no options are accepted', T, async () => {
  const { agent } = agentOn('text:Hello there world');
  const viaOld = await readAsUseChat(toAISdkV5Stream(await agent.stream('x'), { from: 'agent' }));
  const viaStream = await readAsUseChat(toAISdkStream((await agent.stream('x')).fullStream));
  const withNull = await readAsUseChat(toAISdkStream(await agent.stream('x'), null));
  for (const { parts, message } of [viaOld, viaStream, withNull]) {
    assert.deepEqual(types(parts), types(viaOld.parts));
    assert.equal(content(message)[0].text, 'Hello there world');
  }
});

test('bad arguments are TypeErrors naming the field; a taken fullStream says so', T, async () => {
  const { agent } = agentOn('echo');
  const out = await agent.stream('Hello');
  for (const bad of [undefined, null, 42, 'stream', {}, { fullStream: 'nope' }, [], () => {}]) {
    const err = await errorOf(() => toAISdkStream(bad, { from: 'agent' }));
    assert.equal(err.name, 'TypeError', String(bad));
    assert.match(err.message, /^output: expected the output of agent\.stream\(\) or its fullStream/);
  }
  for (const [options, says] of [
    [{ from: 'workflow' }, /^options\.from: 'workflow', but output is the output of agent\.stream\(\); pass \{ from: 'agent' \}/],
    [{ from: 'network' }, /^options\.from: expected 'agent' or 'workflow', got 'network'/],
    [{ from: 42 }, /^options\.from: expected 'agent' or 'workflow', got a number/],
    ['agent', /^options: expected an object/],
  ]) {
    const err = await errorOf(() => toAISdkStream(out, options));
    assert.equal(err.name, 'TypeError');
    assert.match(err.message, says);
  }
  // The checks above left fullStream untouched: it converts now, and only once.
  const ui = toAISdkStream(out, { from: 'agent' });
  const taken = await errorOf(() => toAISdkStream(out));
  assert.match(taken.message, /fullStream can be read once/);
  assert.equal(types(await collect(ui)).at(-1), 'finish');
  const locked = new ReadableStream();
  locked.getReader();
  assert.equal((await errorOf(() => toAISdkStream(locked))).name, 'TypeError');
});

test('cancelling the UI stream cancels fullStream: the run aborts and the model request closes', T, async () => {
  const { agent, id } = agentOn('slow:100');
  const out = await agent.stream('one two three four five six seven eight nine ten');
  const reader = toAISdkStream(out, { from: 'agent' }).getReader();
  for (;;) {
    const { value } = await reader.read();
    if (value.type === 'text-delta') break;
  }
  await reader.cancel('closed the tab');
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
  assert.equal(await out.finishReason, 'abort');
  const [req] = await waitForRequestsOf(server.current, id);
  assert.equal((await server.current.waitForClose(req.index, 3000)).closedByClient, true);
});

test('a run aborted by its signal ends the UI stream with an abort part the reader accepts', T, async () => {
  const { agent } = agentOn('slow:50');
  const controller = new AbortController();
  const out = await agent.stream('one two three four five six seven eight', { abortSignal: controller.signal });
  const [forParts, forReader] = toAISdkStream(out, { from: 'agent' }).tee();
  const reader = forParts.getReader();
  const parts = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    if (value.type === 'text-delta' && !controller.signal.aborted) controller.abort();
  }
  const { message } = await readAsUseChat(forReader);
  assertExactFields(parts);
  assert.deepEqual(parts.at(-1), { type: 'abort' });
  assert.ok(!types(parts).includes('finish'));
  assert.equal(content(message)[0].type, 'text', 'the text so far is kept');
  assert.equal(await out.finishReason, 'abort');
});

test('a foreign chunk stream: background-task chunks become data parts keyed by task id; a failing source ends with an error part', T, async () => {
  const env = (type, payload) => ({ type, runId: 'r1', from: 'AGENT', payload });
  const task = { taskId: 'task-1', toolName: 'crawl', toolCallId: 'call_1' };
  const chunks = [
    env('start', { messageId: 'm1' }),
    env('background-task-started', task),
    env('background-task-progress', { taskIds: ['task-1'], runningCount: 1, elapsedMs: 10 }),
    env('background-task-completed', { ...task, result: 'ok', completedAt: '2026-01-01T00:00:00Z' }),
    env('raw', { anything: true }),
  ];
  // Hands out the chunks one pull at a time, then fails.
  const source = new ReadableStream(
    {
      pull(c) {
        if (chunks.length) c.enqueue(chunks.shift());
        else c.error(new Error('socket closed'));
      },
    },
    { highWaterMark: 0 },
  );
  const { parts, message } = await readAsUseChat(toAISdkStream(source), { terminateOnError: false });
  assertExactFields(parts);
  assert.deepEqual(parts, [
    { type: 'start', messageId: 'm1' },
    { type: 'data-background-task-started', id: 'task-1', data: task },
    { type: 'data-background-task-progress', transient: true, data: { taskIds: ['task-1'], runningCount: 1, elapsedMs: 10 } },
    { type: 'data-background-task-completed', id: 'task-1', data: { ...task, result: 'ok', completedAt: '2026-01-01T00:00:00Z' } },
    { type: 'error', errorText: 'socket closed' },
  ]);
  assert.equal(message.id, 'm1');
  assert.deepEqual(types(message.parts), ['data-background-task-started', 'data-background-task-completed']);
});

noUnhandledRejections();
