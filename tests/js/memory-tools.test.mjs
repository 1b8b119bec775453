// Memory and the tool loop (SPEC §7, §5): tool runs stored with their results and replayed to
// the model on the next turn; format 'ui'; savePerStep seen from inside the next model request;
// runs aborted (during step 1 text, while a slow tool runs, during step 2 text) or failed, whose
// next turn carries the text already shown and never a tool call without its result.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, noUnhandledRejections, rejectionOf } from './helpers.mjs';
import { WEATHER_SCHEMA, createTool, deferred, forecast, ofType, readUntil } from './tools-helpers.mjs';
import {
  BACKENDS,
  assertNoDanglingToolCalls,
  assertStoredMessage,
  drain,
  errorsOf,
  memoryAgent,
  replyText,
  replyTextThenHold,
  replyToolCalls,
  sentMessages,
  textOfChunks,
  turn,
  types,
  useHookServer,
} from './memory-helpers.mjs';

const hook = useHookServer();

const user = (content) => ({ role: 'user', content });
const assistant = (content) => ({ role: 'assistant', content });
const CALL = { id: 'call_weather_1', name: 'weather', args: { city: 'Paris' } };
const PARIS = forecast('Paris');

/** The weather tool; `execute` may be replaced. */
function weatherTool(execute = async ({ city }) => forecast(city)) {
  return createTool({ id: 'weather', description: 'Current weather for a city', inputSchema: WEATHER_SCHEMA, execute });
}

/** The assistant's tool-call message as Chat Completions carries it (content as the package sends it). */
function toolCallMessage(content, call = CALL) {
  return { role: 'assistant', content, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } }] };
}

const toolMessage = (result, id = CALL.id) => ({ role: 'tool', tool_call_id: id, content: typeof result === 'string' ? result : JSON.stringify(result) });

/** Messages with tool contents parsed (the key order of a JSON tool result is not part of the contract). */
const norm = (messages) =>
  messages.map((m) => {
    if (m.role !== 'tool' || typeof m.content !== 'string') return m;
    try {
      return { ...m, content: JSON.parse(m.content) };
    } catch {
      return m;
    }
  });

/** The text parts of stored messages, per message. */
const textsOf = (stored) => stored.map((m) => m.content.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''));

/** Every tool-invocation part the storage object was ever asked to save has its result. */
function assertEverySavedCallAnswered(adapter) {
  for (const c of adapter.calls.filter((x) => x.method === 'saveMessages')) {
    for (const m of c.args[0].messages) {
      for (const p of m.content.parts.filter((x) => x.type === 'tool-invocation')) {
        assert.notEqual(p.toolInvocation.state, 'call', `a saved tool call has its result (${JSON.stringify(p)})`);
        assert.ok('result' in p.toolInvocation, `a saved tool invocation carries its result (${JSON.stringify(p)})`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Tool runs in memory

for (const backend of BACKENDS) {
  test(`a tool run (${backend.name}) is stored with its result; the next turn replays exactly what the model saw`, T, async () => {
    const srv = hook.current;
    const { memory, adapter } = backend.make();
    const { agent, id } = memoryAgent(srv, memory, { tools: { weather: weatherTool() } });
    hook.on(id, async (ex, n) => {
      if (n === 0) return replyToolCalls(ex, [CALL], { text: 'Let me check.' });
      if (n === 1) return replyText(ex, 'It is sunny in Paris.');
      return replyText(ex, 'You are welcome.');
    });
    const mem = { thread: 'tools', resource: 'u1' };
    const first = await turn(agent, 'Weather in Paris?', { memory: mem });
    assert.equal(await first.out.finishReason, 'stop');
    assert.deepEqual(errorsOf(first.chunks), []);

    const stored = await memory.listMessages({ threadId: 'tools' });
    assert.equal(stored.length, 2, 'the user message and one assistant message for the whole run');
    assertStoredMessage(stored[0], { role: 'user', threadId: 'tools', resourceId: 'u1' });
    const parts = assertStoredMessage(stored[1], { role: 'assistant', threadId: 'tools', resourceId: 'u1' });
    assert.deepEqual(parts, [
      { type: 'step-start' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool-invocation', toolInvocation: { state: 'result', toolCallId: CALL.id, toolName: 'weather', args: { city: 'Paris' }, result: PARIS } },
      { type: 'step-start' },
      { type: 'text', text: 'It is sunny in Paris.' },
    ]);
    assert.equal(stored[1].content.metadata, undefined);

    const second = await turn(agent, 'Thanks!', { memory: mem });
    assert.equal(second.text, 'You are welcome.');
    const sent = sentMessages(srv, id);
    assert.equal(sent.length, 3);
    assert.deepEqual(norm(sent[2]), norm([
      user('Weather in Paris?'),
      toolCallMessage('Let me check.'),
      toolMessage(PARIS),
      assistant('It is sunny in Paris.'),
      user('Thanks!'),
    ]));
    assert.deepEqual(sent[2].slice(0, 3), sent[1], "the history is the same as the model's own second request");
    assertNoDanglingToolCalls(sent[2]);

    const ui = await memory.listMessages({ threadId: 'tools', format: 'ui' });
    assert.equal(ui.length, 4);
    assert.deepEqual(ui[1].parts, [
      { type: 'step-start' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool-weather', toolCallId: CALL.id, state: 'output-available', input: { city: 'Paris' }, output: PARIS },
      { type: 'step-start' },
      { type: 'text', text: 'It is sunny in Paris.' },
    ]);
    assert.equal(ui[1].role, 'assistant');
    assert.equal(ui[1].id, stored[1].id);
    if (adapter) assertEverySavedCallAnswered(adapter);
  });
}

test('a tool that throws is stored as output-error with its message; the next turn tells the model the same', T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const broken = weatherTool(async () => {
    throw new Error('weather service is down');
  });
  const { agent, id } = memoryAgent(srv, memory, { tools: { weather: broken } });
  hook.on(id, async (ex, n) => (n === 0 ? replyToolCalls(ex, [CALL]) : replyText(ex, n === 1 ? 'Sorry, no weather today.' : 'OK.')));
  const mem = { thread: 'broken', resource: 'u1' };
  const first = await turn(agent, 'Weather in Paris?', { memory: mem });
  assert.equal(first.text, 'Sorry, no weather today.');
  const [, reply] = await memory.listMessages({ threadId: 'broken' });
  const inv = reply.content.parts.find((p) => p.type === 'tool-invocation').toolInvocation;
  assert.equal(inv.state, 'output-error');
  assert.equal(inv.toolCallId, CALL.id);
  assert.deepEqual(inv.args, { city: 'Paris' });
  assert.match(JSON.stringify(inv.result), /weather service is down/);

  await turn(agent, 'Try later', { memory: mem });
  const sent = sentMessages(srv, id);
  assert.deepEqual(sent[2].slice(0, 3), sent[1], 'the stored error reaches the model as it did in the run');
  assert.match(sent[2][2].content, /weather service is down/);

  const ui = await memory.listMessages({ threadId: 'broken', format: 'ui' });
  const part = ui[1].parts.find((p) => p.type === 'tool-weather');
  assert.equal(part.state, 'output-error');
  assert.match(part.errorText, /weather service is down/);
  assert.equal(part.output, undefined);
});

test("writer.custom and writer.write data parts are stored on the assistant message (not transient ones), shown by format 'ui', not sent to the model", T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const tool = weatherTool(async ({ city }, { writer }) => {
    await writer.custom({ type: 'data-progress', data: { percent: 100 }, id: 'p1' });
    await writer.custom({ type: 'data-status', data: 'fetching', transient: true });
    // writer.write of a data-* value is a data part on the live UI stream: stored the same way.
    await writer.write({ type: 'data-source', data: { name: 'met office' } });
    await writer.write({ type: 'data-tick', data: 1, transient: true });
    await writer.write({ status: 'not a data part' });
    return forecast(city);
  });
  const { agent, id } = memoryAgent(srv, memory, { tools: { weather: tool } });
  hook.on(id, async (ex, n) => (n === 0 ? replyToolCalls(ex, [CALL]) : replyText(ex, n === 1 ? 'Sunny.' : 'Bye.')));
  await turn(agent, 'Weather?', { memory: { thread: 'data', resource: 'u1' } });
  const [, reply] = await memory.listMessages({ threadId: 'data' });
  const data = reply.content.parts.filter((p) => p.type.startsWith('data-'));
  assert.deepEqual(data.map((p) => [p.type, p.data]), [['data-progress', { percent: 100 }], ['data-source', { name: 'met office' }]], JSON.stringify(reply.content.parts));
  assert.equal(data[0].id, 'p1');
  assert.ok(!JSON.stringify(reply.content.parts).includes('not a data part'), 'other written values are not stored');
  const ui = await memory.listMessages({ threadId: 'data', format: 'ui' });
  assert.deepEqual(ui[1].parts.filter((p) => p.type.startsWith('data-')), data);

  await turn(agent, 'Thanks', { memory: { thread: 'data', resource: 'u1' } });
  const sent = sentMessages(srv, id)[2];
  assert.ok(!JSON.stringify(sent).includes('percent') && !JSON.stringify(sent).includes('met office'), 'data parts are not sent to the model');
  assertNoDanglingToolCalls(sent);
});

// ---------------------------------------------------------------------------------------------
// savePerStep

for (const backend of BACKENDS) {
  for (const savePerStep of [true, false]) {
    test(`savePerStep: ${savePerStep} (${backend.name}): what the store holds while the model answers step 2`, T, async () => {
      const srv = hook.current;
      const { memory, adapter } = backend.make();
      const { agent, id } = memoryAgent(srv, memory, { tools: { weather: weatherTool() } });
      const seen = {};
      hook.on(id, async (ex, n) => {
        if (n === 0) return replyToolCalls(ex, [CALL]);
        seen.atRequest2 = await memory.listMessages({ threadId: 'per-step' });
        return replyText(ex, 'Sunny in Paris.');
      });
      const prepareStep = async ({ stepNumber }) => {
        if (stepNumber === 1) seen.atPrepareStep1 = await memory.listMessages({ threadId: 'per-step' });
      };
      const r = await turn(agent, 'Weather in Paris?', { memory: { thread: 'per-step', resource: 'u1' }, savePerStep, prepareStep });
      assert.equal(r.text, 'Sunny in Paris.');
      assert.deepEqual(errorsOf(r.chunks), []);

      const final = await memory.listMessages({ threadId: 'per-step' });
      assert.equal(final.length, 2);
      const step1Parts = [
        { type: 'step-start' },
        { type: 'tool-invocation', toolInvocation: { state: 'result', toolCallId: CALL.id, toolName: 'weather', args: { city: 'Paris' }, result: PARIS } },
      ];
      assert.deepEqual(final[1].content.parts, [...step1Parts, { type: 'step-start' }, { type: 'text', text: 'Sunny in Paris.' }]);

      for (const [when, list] of [['in prepareStep for step 1', seen.atPrepareStep1], ['when the model got request 2', seen.atRequest2]]) {
        assert.ok(list, `recorded ${when}`);
        if (savePerStep) {
          assert.equal(list.length, 2, `${when}: user message and step 1 are stored`);
          assert.deepEqual(list[1].content.parts, step1Parts, `${when}: step 1 with its tool result`);
          assert.equal(list[1].id, final[1].id, `${when}: the same assistant message is completed at the end, not duplicated`);
          assert.equal(list[1].createdAt, final[1].createdAt);
        } else {
          assert.deepEqual(textsOf(list), ['Weather in Paris?'], `${when}: only the user message (the reply is saved at the end)`);
        }
      }
      if (adapter) {
        assertEverySavedCallAnswered(adapter);
        const assistantSaves = adapter.calls
          .filter((c) => c.method === 'saveMessages')
          .flatMap((c) => c.args[0].messages)
          .filter((m) => m.role === 'assistant');
        assert.equal(assistantSaves.length, savePerStep ? 2 : 1, 'assistant saves: after step 1 (savePerStep) and at the end');
        assert.equal(new Set(assistantSaves.map((m) => m.id)).size, 1, 'always the same message id');
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Aborted runs

/**
 * The three places a two-step tool run ("Let me check." + weather call, then "It is sunny in
 * Paris.") can be aborted: `arm(ctx)` sets the model replies and the tool; `waitFor(ctx, reader,
 * seen)` reads until the moment to abort. `stored` is the assistant message's parts after the
 * abort; `replay` what the next turn sends before its input.
 */
const ABORT_POINTS = [
  {
    name: 'during step 1 text',
    reply: (ex, n) => (n === 0 ? replyTextThenHold(ex, 'Let me check') : replyText(ex, 'Go on then.')),
    waitFor: (ctx, reader, seen) => readUntil(reader, () => textOfChunks(seen) === 'Let me check', seen),
    stored: [{ type: 'step-start' }, { type: 'text', text: 'Let me check' }],
    replay: [user('Weather in Paris?'), assistant('Let me check')],
  },
  {
    name: 'while a slow tool runs',
    reply: (ex, n) => (n === 0 ? replyToolCalls(ex, [CALL], { text: 'Let me check.' }) : replyText(ex, 'Go on then.')),
    slowTool: true,
    waitFor: (ctx, reader, seen) => readUntil(reader, (c) => c.type === 'tool-call', seen).then(() => ctx.toolStarted.promise),
    stored: [{ type: 'step-start' }, { type: 'text', text: 'Let me check.' }],
    replay: [user('Weather in Paris?'), assistant('Let me check.')],
  },
  {
    name: 'during step 2 text',
    reply: (ex, n) =>
      n === 0 ? replyToolCalls(ex, [CALL], { text: 'Let me check.' }) : n === 1 ? replyTextThenHold(ex, 'It is sunny') : replyText(ex, 'Go on then.'),
    waitFor: (ctx, reader, seen) =>
      readUntil(reader, () => {
        const afterTool = seen.slice(seen.findIndex((c) => c.type === 'tool-result') + 1);
        return seen.some((c) => c.type === 'tool-result') && textOfChunks(afterTool) === 'It is sunny';
      }, seen),
    stored: [
      { type: 'step-start' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool-invocation', toolInvocation: { state: 'result', toolCallId: CALL.id, toolName: 'weather', args: { city: 'Paris' }, result: PARIS } },
      { type: 'step-start' },
      { type: 'text', text: 'It is sunny' },
    ],
    replay: [user('Weather in Paris?'), toolCallMessage('Let me check.'), toolMessage(PARIS), assistant('It is sunny')],
  },
];

for (const point of ABORT_POINTS) {
  for (const backend of BACKENDS) {
    for (const savePerStep of [false, true]) {
      test(`abort ${point.name} (${backend.name}, savePerStep ${savePerStep}): the shown text is kept as interrupted; the next turn has no dangling tool call`, T, async () => {
        const srv = hook.current;
        const { memory, adapter } = backend.make();
        const ctx = { toolStarted: deferred(), toolSignal: null };
        const tool = weatherTool(async ({ city }, { abortSignal }) => {
          if (!point.slowTool) return forecast(city);
          ctx.toolSignal = abortSignal;
          ctx.toolStarted.resolve();
          await new Promise((resolve, reject) => {
            const timer = setTimeout(resolve, 5000);
            abortSignal.addEventListener('abort', () => {
              clearTimeout(timer);
              reject(new Error('weather lookup aborted'));
            });
          });
          return forecast(city);
        });
        const { agent, id } = memoryAgent(srv, memory, { tools: { weather: tool } });
        hook.on(id, point.reply);
        const mem = { thread: 'aborted', resource: 'u1' };
        const ac = new AbortController();
        const out = await agent.stream('Weather in Paris?', { memory: mem, abortSignal: ac.signal, savePerStep });
        const reader = out.fullStream.getReader();
        const seen = [];
        await point.waitFor(ctx, reader, seen);
        ac.abort();
        await drain(reader, seen);
        assert.equal(seen.at(-1).type, 'abort', `the stream ends with abort (${types(seen)})`);
        assert.deepEqual(errorsOf(seen), [], 'no storage error');
        assert.equal(await out.finishReason, 'abort');
        if (point.slowTool) assert.equal(ctx.toolSignal.aborted, true, "the tool's abortSignal fired");

        const stored = await memory.listMessages({ threadId: 'aborted' });
        assert.equal(stored.length, 2, `the user message and the interrupted reply (${JSON.stringify(textsOf(stored))})`);
        assert.deepEqual(stored[0].content.parts, [{ type: 'text', text: 'Weather in Paris?' }], 'the user message is kept');
        assertStoredMessage(stored[1], { role: 'assistant', threadId: 'aborted', resourceId: 'u1' });
        assert.deepEqual(stored[1].content.parts, point.stored);
        assert.deepEqual(stored[1].content.metadata, { interrupted: true });
        const ui = await memory.listMessages({ threadId: 'aborted', format: 'ui' });
        assert.deepEqual(ui[1].metadata, { interrupted: true }, "format 'ui' keeps the interrupted mark");
        assert.equal(ui[1].parts.filter((p) => p.type === 'tool-weather' && p.state !== 'output-available').length, 0, 'no tool part without output');

        const next = await turn(agent, 'Go on', { memory: mem });
        assert.equal(next.text, 'Go on then.');
        const sent = sentMessages(srv, id).at(-1);
        assertNoDanglingToolCalls(sent);
        assert.deepEqual(norm(sent), norm([...point.replay, user('Go on')]));
        if (adapter) assertEverySavedCallAnswered(adapter);
      });
    }
  }
}

test('a declined tool call is stored as output-denied; the next turn tells the model it was not approved, paired with the call', T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const { agent, id } = memoryAgent(srv, memory, { tools: { weather: weatherTool() } });
  hook.on(id, async (ex, n) => (n === 0 ? replyToolCalls(ex, [CALL]) : replyText(ex, n === 1 ? 'As you wish.' : 'OK.')));
  const mem = { thread: 'denied', resource: 'u1' };
  const out = await agent.stream('Weather in Paris?', { memory: mem, requireToolApproval: true });
  const reader = out.fullStream.getReader();
  const seen = await readUntil(reader, (c) => c.type === 'tool-call-approval');
  assert.equal((await agent.declineToolCall({ runId: out.runId, toolCallId: CALL.id, reason: 'Not now' })).runId, out.runId);
  await drain(reader, seen);
  assert.equal(seen.at(-1).type, 'finish');
  const [, reply] = await memory.listMessages({ threadId: 'denied' });
  const inv = reply.content.parts.find((p) => p.type === 'tool-invocation').toolInvocation;
  assert.equal(inv.state, 'output-denied');
  assert.equal(inv.toolCallId, CALL.id);
  assert.ok('result' in inv, 'the denial carries what the model was told');
  const ui = await memory.listMessages({ threadId: 'denied', format: 'ui' });
  assert.equal(ui[1].parts.find((p) => p.type === 'tool-weather').state, 'output-denied');

  await turn(agent, 'Fine, now?', { memory: mem });
  const sent = sentMessages(srv, id);
  assertNoDanglingToolCalls(sent[2]);
  assert.deepEqual(sent[2].slice(0, 3), sent[1], 'the denial reaches the model as it did in the run');
});

test('abort while a tool call waits for approval: the call is stored denied, reason aborted (SPEC §19.2); the next turn has no dangling tool call', T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const { agent, id } = memoryAgent(srv, memory, { tools: { weather: weatherTool() } });
  hook.on(id, async (ex, n) => (n === 0 ? replyToolCalls(ex, [CALL], { text: 'I need your OK.' }) : replyText(ex, 'Never mind.')));
  const mem = { thread: 'pending', resource: 'u1' };
  const ac = new AbortController();
  const out = await agent.stream('Weather in Paris?', { memory: mem, requireToolApproval: true, abortSignal: ac.signal });
  const reader = out.fullStream.getReader();
  const seen = await readUntil(reader, (c) => c.type === 'tool-call-approval');
  ac.abort();
  await drain(reader, seen);
  assert.equal(seen.at(-1).type, 'abort');
  const stored = await memory.listMessages({ threadId: 'pending' });
  assert.deepEqual(textsOf(stored), ['Weather in Paris?', 'I need your OK.']);
  const [, , denied] = stored[1].content.parts;
  assert.deepEqual(stored[1].content.parts.slice(0, 2), [{ type: 'step-start' }, { type: 'text', text: 'I need your OK.' }]);
  assert.equal(denied.toolInvocation.state, 'output-denied');
  assert.equal(denied.toolInvocation.result, 'The user declined this tool call: aborted');
  assert.equal(stored[1].content.metadata, undefined, 'nothing waits any more');
  await turn(agent, 'Skip it', { memory: mem });
  const sent = sentMessages(srv, id).at(-1);
  assertNoDanglingToolCalls(sent);
  assert.equal(sent.length, 4, JSON.stringify(sent));
  assert.deepEqual([sent[0], sent[3]], [user('Weather in Paris?'), user('Skip it')]);
  assert.match(JSON.stringify(sent[2]), /declined this tool call: aborted/);
});

test('abort before the model sends anything: the user message is kept, no assistant message', T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const { agent, id } = memoryAgent(srv, memory);
  const arrived = deferred();
  hook.on(id, async (ex, n) => {
    if (n > 0) return replyText(ex, 'Hello again.');
    arrived.resolve();
    await ex.hold();
  });
  const ac = new AbortController();
  const out = await agent.stream('Are you there?', { memory: { thread: 'early', resource: 'u1' }, abortSignal: ac.signal });
  const reading = drain(out.fullStream.getReader());
  await arrived.promise;
  ac.abort();
  const chunks = await reading;
  assert.equal(chunks.at(-1).type, 'abort');
  const stored = await memory.listMessages({ threadId: 'early' });
  assert.deepEqual(textsOf(stored), ['Are you there?']);
  assert.equal(stored[0].role, 'user');
  await turn(agent, 'Hello?', { memory: { thread: 'early', resource: 'u1' } });
  assert.deepEqual(sentMessages(srv, id).at(-1), [user('Are you there?'), user('Hello?')]);
});

// ---------------------------------------------------------------------------------------------
// Failed runs

test('a model stream cut mid-reply: error chunk; the user message and the text shown so far are kept (interrupted)', T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const { agent, id } = memoryAgent(srv, memory);
  hook.on(id, async (ex, n) => {
    if (n > 0) return replyText(ex, 'Second try.');
    const chat = ex.chat();
    chat.role();
    for (const w of ['This', ' reply', ' will', ' be', ' cut']) chat.content(w);
    await chat.flush({ flushed: true });
    ex.destroy();
  });
  const mem = { thread: 'cut', resource: 'u1' };
  const r = await turn(agent, 'Tell me a story', { memory: mem });
  assert.equal(r.chunks.at(-1).type, 'error');
  assert.ok(r.textError, 'text rejects');
  const stored = await memory.listMessages({ threadId: 'cut' });
  assert.deepEqual(textsOf(stored), ['Tell me a story', 'This reply will be cut']);
  assert.deepEqual(stored[1].content.metadata, { interrupted: true });
  await turn(agent, 'Go on', { memory: mem });
  assert.deepEqual(sentMessages(srv, id).at(-1), [user('Tell me a story'), assistant('This reply will be cut'), user('Go on')]);
});

test('a model error on step 2 keeps the complete tool step; the next turn pairs the call with its result', T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const { agent, id } = memoryAgent(srv, memory, { tools: { weather: weatherTool() } });
  hook.on(id, async (ex, n) => {
    if (n === 0) return replyToolCalls(ex, [CALL]);
    if (n === 1) return ex.error(400, { message: 'Invalid request', type: 'invalid_request_error', code: null });
    return replyText(ex, 'Recovered.');
  });
  const mem = { thread: 'fail2', resource: 'u1' };
  const r = await turn(agent, 'Weather in Paris?', { memory: mem });
  assert.equal(r.chunks.at(-1).type, 'error');
  assert.equal(errorsOf(r.chunks).at(-1).name, 'APICallError');
  const err = await rejectionOf(r.out.text);
  assert.equal(err.name, 'APICallError');
  const stored = await memory.listMessages({ threadId: 'fail2' });
  assert.equal(stored.length, 2);
  assert.deepEqual(stored[1].content.parts, [
    { type: 'step-start' },
    { type: 'tool-invocation', toolInvocation: { state: 'result', toolCallId: CALL.id, toolName: 'weather', args: { city: 'Paris' }, result: PARIS } },
  ]);
  await turn(agent, 'Again please', { memory: mem });
  const sent = sentMessages(srv, id).at(-1);
  assertNoDanglingToolCalls(sent);
  assert.deepEqual(norm(sent), norm([user('Weather in Paris?'), toolCallMessage(sent[1].content), toolMessage(PARIS), user('Again please')]));
});

test('a model error before any text (HTTP 400): the user message is kept; the run fails with APICallError', T, async () => {
  const srv = hook.current;
  const { memory } = BACKENDS[0].make();
  const { agent, id } = memoryAgent(srv, memory);
  hook.on(id, async (ex, n) =>
    n === 0 ? ex.error(400, { message: 'Invalid request', type: 'invalid_request_error', code: null }) : replyText(ex, 'Fine now.'),
  );
  const r = await turn(agent, 'First try', { memory: { thread: 'f400', resource: 'u1' } });
  assert.equal(r.textError?.name, 'APICallError');
  assert.deepEqual(textsOf(await memory.listMessages({ threadId: 'f400' })), ['First try']);
  await turn(agent, 'Second try', { memory: { thread: 'f400', resource: 'u1' } });
  assert.deepEqual(sentMessages(srv, id).at(-1), [user('First try'), user('Second try')]);
  assert.equal(ofType(r.chunks, 'text-delta').length, 0);
});

noUnhandledRejections();
