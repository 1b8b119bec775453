// The agent behind a MessagePort (SPEC §21.1): serveAgents on one end of an in-process
// MessageChannel, connectAgent (wasm-agent/client, which loads no wasm) on the other. The same
// protocol runs between a page and a Worker; tests/browser/worker.test.mjs runs it in Chromium.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { Agent, T, collect, modelFor, noUnhandledRejections, rejectionOf, types, uid, useModelServer, waitForRequestsOf } from './helpers.mjs';
import { Memory, InMemoryStore } from './memory-helpers.mjs';
import { readRest, readUntil } from './tools-helpers.mjs';
import { createTool, serveAgents } from '../../pkg/index.node.js';
import { connectAgent } from '../../pkg/client.js';

const server = useModelServer();

const pickColour = {
  id: 'pickColour',
  description: 'Ask the user to pick a colour',
  inputSchema: { type: 'object', properties: { hint: { type: 'string' } }, required: ['hint'] },
};

/** An agent on `script`, served on a fresh channel; returns { agent, remote, id, close }. */
function served(script, config = {}, tools) {
  const id = uid('wc');
  const agent = new Agent({ id: 'served', model: modelFor(server.current, script, { headers: { 'x-test-id': id } }), ...config });
  const { port1, port2 } = new MessageChannel();
  const serving = serveAgents({ chat: agent }, port1);
  const remote = connectAgent(port2, 'chat', { tools });
  const close = () => {
    serving.close();
    port1.close();
    port2.close();
  };
  return { agent, remote, id, port1, port2, close };
}

/** A chunk without what differs between two runs (ids and times). */
function shape(chunk) {
  return JSON.parse(
    JSON.stringify(chunk, (k, v) => (['runId', 'messageId', 'id', 'timestamp', 'toolCallId', 'createdAt', 'request', 'response'].includes(k) ? undefined : v)),
  );
}

test('stream(): the chunks, text and promises of the in-page run, in order', T, async () => {
  const { agent, remote, close } = served('echo');
  try {
    const local = await agent.stream('hello over the port');
    const want = await collect(local.fullStream);
    const out = await remote.stream('hello over the port');
    assert.match(out.runId, /\S/);
    const got = await collect(out.fullStream);
    assert.deepEqual(got.map(shape), want.map(shape));
    assert.ok(got.every((c) => c.runId === out.runId || c.type.startsWith('data-')));
    assert.equal(await out.text, 'You said: hello over the port');
    assert.equal(await out.finishReason, 'stop');
    assert.deepEqual(await out.totalUsage, await local.totalUsage);
    assert.deepEqual(await out.toolCalls, []);
    assert.equal((await out.steps).length, 1);
    assert.equal((await out.getFullOutput()).text, 'You said: hello over the port');
    assert.throws(() => out.fullStream, /fullStream can be read once/);
  } finally {
    close();
  }
});

test('textStream and async iteration; callbacks run on this side', T, async () => {
  const { remote, close } = served('echo');
  try {
    const seen = { chunks: [], finish: [], steps: 0 };
    const out = await remote.stream('two readers', {
      onChunk: (c) => seen.chunks.push(c.type),
      onFinish: (r) => seen.finish.push(r.text),
      onStepFinish: () => seen.steps++,
    });
    const text = out.textStream;
    const chunks = [];
    for await (const c of out) chunks.push(c.type);
    assert.equal((await collect(text)).join(''), 'You said: two readers');
    assert.equal(chunks.at(-1), 'finish');
    await out.text;
    assert.deepEqual(seen.finish, ['You said: two readers']);
    assert.equal(seen.steps, 1);
    assert.ok(seen.chunks.includes('text-delta'));
  } finally {
    close();
  }
});

test('function options that belong to the worker are a TypeError that says so; bad options reject as TypeError', T, async () => {
  const { remote, close } = served('echo');
  try {
    let err = await rejectionOf(remote.stream('hi', { prepareStep: () => ({}) }));
    assert.ok(err instanceof TypeError);
    assert.match(err.message, /options\.prepareStep is a function.*worker/);
    err = await rejectionOf(remote.stream('hi', { stopWhen: [() => true] }));
    assert.match(err.message, /options\.stopWhen\.0 is a function/);
    err = await rejectionOf(remote.stream('hi', { maxSteps: 0 }));
    assert.ok(err instanceof TypeError, `${err}`);
    assert.match(err.message, /maxSteps/);
    err = await rejectionOf(remote.stream('hi', { onFinish: 3 }));
    assert.match(err.message, /options\.onFinish/);
  } finally {
    close();
  }
});

test('a model error arrives as the error chunk and rejected promises, with its name and fields', T, async () => {
  const { agent, remote, close } = served('error-500', { maxRetries: 0 });
  try {
    const localChunks = await collect((await agent.stream('hi')).fullStream);
    const out = await remote.stream('hi');
    const chunks = await collect(out.fullStream);
    const [want, got] = [localChunks, chunks].map((cs) => cs.find((c) => c.type === 'error').payload.error);
    assert.deepEqual(got, want);
    const [here, there] = [await rejectionOf(agent.stream('hi').then((o) => o.text)), await rejectionOf(out.text)];
    assert.ok(there instanceof Error);
    assert.deepEqual([there.name, there.message, there.status, there.isRetryable], [here.name, here.message, here.status, here.isRetryable]);
  } finally {
    close();
  }
});

test('abortSignal on this side aborts the run in the worker; a cancelled reader cancels it', T, async () => {
  const { remote, id, close } = served('slow:50');
  try {
    const ac = new AbortController();
    const out = await remote.stream('one two three four five six seven eight nine ten', { abortSignal: ac.signal });
    const reader = out.fullStream.getReader();
    for (;;) {
      const { value } = await reader.read();
      if (value.type === 'text-delta') break;
    }
    ac.abort('user left');
    const rest = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest.push(r.value);
    assert.equal(rest.at(-1).type, 'abort');
    assert.equal(rest.at(-1).payload.reason, 'user left');
    assert.equal(await out.finishReason, 'abort');

    const second = await remote.stream('one two three four five six seven eight');
    const r2 = second.fullStream.getReader();
    while ((await r2.read()).value.type !== 'text-delta');
    await r2.cancel();
    const reqs = await waitForRequestsOf(server.current, id, 2, 3000);
    const rec = await server.current.waitForClose(reqs[1].index, 3000);
    assert.equal(rec.closedByClient, true);
    assert.equal(await second.finishReason, 'abort');
  } finally {
    close();
  }
});

test('a clientTools tool offered by the page runs here and its result goes back to the run', T, async () => {
  const calls = [];
  const tools = {
    pickColour: {
      execute: (input, ctx) => {
        calls.push({ input, signal: ctx.abortSignal instanceof AbortSignal, toolCallId: ctx.toolCallId });
        return { colour: 'teal' };
      },
    },
  };
  const { remote, close } = served('tool-call', { defaultOptions: { clientTools: { pickColour } } }, tools);
  try {
    const out = await remote.stream('Pick a colour for me');
    const chunks = await collect(out.fullStream);
    assert.deepEqual(calls.map((c) => [c.input, c.signal]), [[{ hint: 'example' }, true]]);
    const result = chunks.find((c) => c.type === 'tool-result').payload;
    assert.deepEqual([result.toolName, result.result, result.toolCallId], ['pickColour', { colour: 'teal' }, calls[0].toolCallId]);
    assert.equal(await out.text, 'The tool said: {"colour":"teal"}');
    assert.equal(await out.finishReason, 'stop');
  } finally {
    close();
  }
});

test('a page tool\'s abortSignal follows the run: aborting the run aborts the call on this side', T, async () => {
  let called;
  const aborted = new Promise((resolve) => {
    called = (signal) => signal.addEventListener('abort', () => resolve(true), { once: true });
  });
  const tools = {
    pickColour: {
      execute: (input, ctx) =>
        new Promise((resolve, reject) => {
          called(ctx.abortSignal);
          ctx.abortSignal.addEventListener('abort', () => reject(new Error('gave up')), { once: true });
        }),
    },
  };
  const { remote, close } = served('tool-call', { defaultOptions: { clientTools: { pickColour } } }, tools);
  try {
    const ac = new AbortController();
    const out = await remote.stream('Pick a colour for me', { abortSignal: ac.signal });
    const chunks = [];
    for await (const c of out) {
      chunks.push(c);
      if (c.type === 'tool-call') ac.abort('changed my mind');
    }
    assert.equal(await aborted, true);
    assert.equal(chunks.at(-1).type, 'abort');
    assert.equal(await out.finishReason, 'abort');
  } finally {
    close();
  }
});

test('the worker going away ends a running stream with an AbortError chunk that says so', T, async () => {
  const { remote, port1, close } = served('slow:50');
  try {
    const out = await remote.stream('one two three four five six seven eight nine ten');
    const reader = out.fullStream.getReader();
    const seen = [];
    for (;;) {
      const { value } = await reader.read();
      seen.push(value);
      if (value.type === 'text-delta') break;
    }
    port1.close();
    for (let r = await reader.read(); !r.done; r = await reader.read()) seen.push(r.value);
    const last = seen.at(-1);
    assert.equal(last.type, 'error');
    assert.deepEqual([last.payload.error.name, last.payload.error.message], ['AbortError', 'the agent worker stopped']);
    assert.equal((await rejectionOf(out.text)).message, 'the agent worker stopped');
    assert.equal((await rejectionOf(remote.stream('again'))).name, 'AbortError');
  } finally {
    close();
  }
});

test('memory reads and writes go to the worker agent\'s memory; watch says when it is missing', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { remote, close } = served('echo', { memory });
  try {
    const out = await remote.stream('remember me', { memory: { thread: 'th-1', resource: 'u-1' } });
    await out.consumeStream();
    await out.text;
    const threads = await remote.memory.listThreads({ resourceId: 'u-1' });
    assert.deepEqual(threads.map((t) => t.id), ['th-1']);
    const stored = await remote.memory.listMessages({ threadId: 'th-1' });
    assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant']);
    const ui = await remote.memory.listMessages({ threadId: 'th-1', format: 'ui' });
    assert.deepEqual(ui.map((m) => m.parts.find((p) => p.type === 'text').text), ['remember me', 'You said: remember me']);
    const renamed = await remote.memory.updateThread({ id: 'th-1', title: 'Renamed' });
    assert.equal(renamed.title, 'Renamed');
    assert.equal((await remote.memory.getThreadById({ threadId: 'th-1' })).title, 'Renamed');
    await remote.memory.deleteThread({ threadId: 'th-1' });
    assert.equal(await remote.memory.getThreadById({ threadId: 'th-1' }), null);
    const err = await rejectionOf(remote.memory.listThreads({}));
    assert.ok(err instanceof TypeError, `${err}`);
    if (typeof memory.watch !== 'function') {
      assert.match((await rejectionOf(remote.memory.watch({ threadId: 'th-1' }, () => {}))).message, /memory\.watch is not available/);
    }
    assert.deepEqual(await remote.listBackgroundTasks(), []);
    assert.equal(await remote.cancelBackgroundTask('nope'), false);
  } finally {
    close();
  }
});

test('chunks cross in batches: fewer messages than chunks, none lost', T, async () => {
  const { remote, port2, close } = served('deltas:2000');
  try {
    let batches = 0;
    port2.addEventListener('message', () => batches++);
    const out = await remote.stream('go');
    const chunks = await collect(out.fullStream);
    const deltas = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text);
    assert.equal(deltas.length, 2000);
    assert.equal(deltas[1999], 'w1999 ');
    assert.ok(batches < chunks.length, `${batches} messages for ${chunks.length} chunks`);
    assert.deepEqual(types(chunks).slice(-2), ['step-finish', 'finish']);
  } finally {
    close();
  }
});

/** An approval-gated `pay` (calls recorded), and a `pin` tool that suspends for a PIN. */
function decisionTools(calls) {
  const amount = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };
  return {
    pay: createTool({ id: 'pay', description: 'Pays', inputSchema: amount, requireApproval: true, execute: async (input) => (calls.push(input), { paid: input.amount }) }),
    pin: createTool({
      id: 'pin',
      description: 'Asks for a PIN',
      inputSchema: amount,
      resumeSchema: { type: 'object', properties: { pin: { type: 'string', minLength: 4 } }, required: ['pin'] },
      execute: async (input, ctx) => {
        if (ctx.resumeData === undefined) return ctx.suspend({ ask: 'pin' });
        calls.push(ctx.resumeData);
        return { ok: ctx.resumeData.pin };
      },
    }),
  };
}

test('approveToolCall through the client: the run the worker suspended goes on there and its rest streams here', T, async () => {
  const calls = [];
  const { pay } = decisionTools(calls);
  const { remote, close } = served('tool-call', { tools: { pay } });
  try {
    const out = await remote.stream('Pay 5', { closeOnSuspend: true });
    const chunks = await collect(out.fullStream);
    assert.equal(await out.finishReason, 'suspended');
    const asked = chunks.find((c) => c.type === 'tool-call-approval').payload;
    const resumed = await remote.approveToolCall({ runId: out.runId });
    assert.equal(resumed.runId, out.runId);
    const rest = await collect(resumed.fullStream);
    assert.equal(rest[0].type, 'tool-result', 'the resolved call comes first');
    assert.deepEqual(rest[0].payload.result, { paid: asked.args.amount });
    assert.equal(await resumed.finishReason, 'stop');
    assert.match(await resumed.text, /The tool said/);
    assert.deepEqual(calls, [asked.args], 'the tool ran once, in the worker');
    const again = await rejectionOf(remote.approveToolCall({ runId: out.runId }));
    assert.deepEqual([again.name, again.code], ['ResumeError', 'not-found'], 'the error keeps its name and code across the port');
  } finally {
    close();
  }
});

test('declineToolCall through the client while the stream waits: the call is declined and the same stream ends', T, async () => {
  const calls = [];
  const { pay } = decisionTools(calls);
  const { remote, close } = served('tool-call', { tools: { pay } });
  try {
    const out = await remote.stream('Pay 5');
    const reader = out.fullStream.getReader();
    const seen = await readUntil(reader, (c) => c.type === 'tool-call-approval');
    const view = await remote.declineToolCall({ runId: out.runId, toolCallId: seen.at(-1).payload.toolCallId });
    await readRest(reader, seen);
    const viewTypes = types(await collect(view.fullStream));
    assert.equal(viewTypes.at(-1), 'finish');
    assert.deepEqual(calls, [], 'a declined call never runs');
    assert.ok(types(seen).indexOf('tool-call-approval') < types(seen).lastIndexOf('finish'));
    assert.equal(await out.finishReason, 'stop');
  } finally {
    close();
  }
});

test('resumeStream through the client: resumeData is checked in the worker, then the suspended tool runs with it', T, async () => {
  const calls = [];
  const { pin } = decisionTools(calls);
  const { remote, close } = served('tool-call', { tools: { pin } });
  try {
    const out = await remote.stream('Ask me', { closeOnSuspend: true });
    const chunks = await collect(out.fullStream);
    assert.equal(chunks.find((c) => c.type === 'tool-call-suspended').payload.suspendPayload.ask, 'pin');
    const bad = await rejectionOf(remote.resumeStream({ pin: '1' }, { runId: out.runId }));
    assert.equal(bad.name, 'ValidationError');
    assert.deepEqual(calls, [], 'bad resume data leaves the call waiting');
    const resumed = await remote.resumeStream({ pin: '1234' }, { runId: out.runId });
    const rest = await collect(resumed.fullStream);
    assert.deepEqual(rest.find((c) => c.type === 'tool-result').payload.result, { ok: '1234' });
    assert.equal(await resumed.finishReason, 'stop');
    assert.deepEqual(calls, [{ pin: '1234' }]);
  } finally {
    close();
  }
});

noUnhandledRejections();
