// What a conversation in memory keeps of the different inputs (SPEC §3, §7): images and files,
// several messages at once, system messages / instructions / context (sent, never stored), a
// follow-up carrying a tool call and its result, client tools, reasoning; memory from
// defaultOptions; storage objects that answer loosely (undefined, unsorted, wrapped lists).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, noUnhandledRejections } from './helpers.mjs';
import { createTool, WEATHER_SCHEMA, forecast } from './tools-helpers.mjs';
import {
  InMemoryStore,
  Memory,
  assertNoDanglingToolCalls,
  assertStoredMessage,
  errorsOf,
  mapStorage,
  memoryAgent,
  replyText,
  replyToolCalls,
  sentMessages,
  turn,
  useHookServer,
} from './memory-helpers.mjs';

const hook = useHookServer();

const user = (content) => ({ role: 'user', content });
const assistant = (content) => ({ role: 'assistant', content });
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const newMemory = () => new Memory({ storage: new InMemoryStore() });
const textsOf = (stored) => stored.map((m) => m.content.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''));

test('an image (base64 and URL) in a user message is stored as a file part and sent again, unchanged, on the next turn', T, async () => {
  const srv = hook.current;
  const memory = newMemory();
  const { agent, id } = memoryAgent(srv, memory, { script: 'echo' });
  const mem = { thread: 'img', resource: 'u1' };
  const first = await turn(
    agent,
    [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', image: PNG, mediaType: 'image/png' },
          { type: 'image', image: 'https://example.com/cat.jpg' },
        ],
      },
    ],
    { memory: mem },
  );
  assert.deepEqual(errorsOf(first.chunks), []);
  const [stored] = await memory.listMessages({ threadId: 'img' });
  const parts = assertStoredMessage(stored, { role: 'user' });
  assert.deepEqual(parts[0], { type: 'text', text: 'What is this?' });
  assert.equal(parts[1].type, 'file');
  assert.equal(parts[1].mediaType, 'image/png');
  assert.equal(parts[1].url, `data:image/png;base64,${PNG}`);
  assert.equal(parts[2].type, 'file');
  assert.equal(parts[2].url, 'https://example.com/cat.jpg');

  await turn(agent, 'And now?', { memory: mem });
  const [req1, req2] = sentMessages(srv, id);
  assert.deepEqual(req2[0], req1[0], 'the image message is sent as the model first saw it');
  assert.deepEqual(req2.at(-1), user('And now?'));
});

test('several input messages are stored in order; system messages, instructions, system and context are sent but never stored', T, async () => {
  const srv = hook.current;
  const memory = newMemory();
  const { agent, id } = memoryAgent(srv, memory, { script: 'echo', instructions: 'You are terse.' });
  const mem = { thread: 'many', resource: 'u1' };
  await turn(
    agent,
    [{ role: 'system', content: 'Input system message.' }, user('first'), { role: 'assistant', content: 'an answer given elsewhere' }, user('second')],
    { memory: mem, system: 'Added system.', context: [user('context question'), assistant('context answer')] },
  );
  const stored = await memory.listMessages({ threadId: 'many' });
  assert.deepEqual(
    stored.map((m) => m.role),
    ['user', 'assistant', 'user', 'assistant'],
  );
  assert.deepEqual(textsOf(stored), ['first', 'an answer given elsewhere', 'second', 'You said: second']);
  const all = JSON.stringify(stored);
  for (const s of ['You are terse.', 'Added system.', 'Input system message.', 'context question', 'context answer']) {
    assert.ok(!all.includes(s), `"${s}" is not stored`);
  }
  for (let i = 1; i < stored.length; i++) assert.ok(stored[i - 1].createdAt < stored[i].createdAt);

  await turn(agent, 'third', { memory: mem });
  const sent = sentMessages(srv, id)[1];
  assert.deepEqual(sent, [
    { role: 'system', content: 'You are terse.' },
    user('first'),
    assistant('an answer given elsewhere'),
    user('second'),
    assistant('You said: second'),
    user('third'),
  ]);
});

test('a follow-up that carries an assistant tool call and its result is stored as one answered call and replayed paired', T, async () => {
  const srv = hook.current;
  const memory = newMemory();
  const { agent, id } = memoryAgent(srv, memory, { script: 'echo' });
  const mem = { thread: 'carried', resource: 'u1' };
  await turn(
    agent,
    [
      user('Pick a colour'),
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_c1', toolName: 'pickColour', input: { hint: 'warm' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_c1', toolName: 'pickColour', output: { type: 'json', value: { colour: 'red' } } }] },
    ],
    { memory: mem },
  );
  const stored = await memory.listMessages({ threadId: 'carried' });
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant', 'assistant']);
  assert.deepEqual(stored[1].content.parts, [
    { type: 'tool-invocation', toolInvocation: { state: 'result', toolCallId: 'call_c1', toolName: 'pickColour', args: { hint: 'warm' }, result: { colour: 'red' } } },
  ]);
  await turn(agent, 'Thanks', { memory: mem });
  const [req1, req2] = sentMessages(srv, id);
  assertNoDanglingToolCalls(req2);
  assert.deepEqual(req2.slice(0, 3), req1, 'the history is what the model saw in the first turn');
});

const pickColour = {
  id: 'pickColour',
  description: 'Ask the user to pick a colour',
  inputSchema: { type: 'object', properties: { hint: { type: 'string' } }, required: ['hint'] },
};

test(
  'client tools with memory: the page sends only the tool result; the model gets the call before it',
  {
    ...T +
      "stored as a role 'tool' message (args null) and every later prompt carries a tool message answering no call: " +
      "[user, tool] (OpenAI rejects it: messages with role 'tool' must follow a message with 'tool_calls')",
  },
  async () => {
    const srv = hook.current;
    const memory = newMemory();
    const { agent, id } = memoryAgent(srv, memory);
    const CALL = { id: 'call_client_1', name: 'pickColour', args: { hint: 'warm' } };
    hook.on(id, async (ex, n) => (n === 0 ? replyToolCalls(ex, [CALL]) : replyText(ex, n === 1 ? 'Red it is.' : 'Bye.')));
    const mem = { thread: 'client', resource: 'u1' };
    const first = await turn(agent, 'Pick a colour for me', { memory: mem, clientTools: { pickColour } });
    assert.equal(await first.out.finishReason, 'tool-calls');
    // The page runs the tool and sends its result, as the reference's clients do with memory.
    await turn(
      agent,
      [{ role: 'tool', content: [{ type: 'tool-result', toolCallId: CALL.id, toolName: CALL.name, output: { type: 'json', value: { colour: 'red' } } }] }],
      { memory: mem, clientTools: { pickColour } },
    );
    await turn(agent, 'Thanks', { memory: mem, clientTools: { pickColour } });
    const [, req2, req3] = sentMessages(srv, id);
    for (const sent of [req2, req3]) {
      assertNoDanglingToolCalls(sent);
      const call = sent.find((m) => m.tool_calls)?.tool_calls?.[0];
      assert.deepEqual(call, { id: CALL.id, type: 'function', function: { name: 'pickColour', arguments: '{"hint":"warm"}' } });
    }
    const stored = await memory.listMessages({ threadId: 'client' });
    const invocations = stored.flatMap((m) => m.content.parts.filter((p) => p.type === 'tool-invocation'));
    assert.deepEqual(invocations.map((p) => [p.toolInvocation.state, p.toolInvocation.args]), [['result', { hint: 'warm' }]]);
  },
);

test("reasoning is stored as a reasoning part before the text and shown by format 'ui'", T, async () => {
  const srv = hook.current;
  const memory = newMemory();
  const { agent } = memoryAgent(srv, memory, { script: 'reasoning:Short answer.' });
  const r = await turn(agent, 'Think first', { memory: { thread: 'why', resource: 'u1' } });
  assert.equal(r.text, 'Short answer.');
  const [, reply] = await memory.listMessages({ threadId: 'why' });
  assert.deepEqual(
    reply.content.parts.map((p) => p.type),
    ['step-start', 'reasoning', 'text'],
  );
  assert.equal(reply.content.parts[1].text, 'Let me think about this. The user wants a short answer, so I will keep it brief.');
  const ui = await memory.listMessages({ threadId: 'why', format: 'ui' });
  assert.deepEqual(ui[1].parts, reply.content.parts);
});

test('memory given in defaultOptions applies to every stream() call; a call can point elsewhere', T, async () => {
  const srv = hook.current;
  const memory = newMemory();
  const { agent, id } = memoryAgent(srv, memory, { script: 'echo', defaultOptions: { memory: { thread: 'default-thread', resource: 'u1' } } });
  await turn(agent, 'one');
  await turn(agent, 'two');
  assert.deepEqual(sentMessages(srv, id)[1], [user('one'), assistant('You said: one'), user('two')]);
  await turn(agent, 'elsewhere', { memory: { thread: 'other', resource: 'u1' } });
  assert.deepEqual(sentMessages(srv, id)[2], [user('elsewhere')]);
  assert.equal((await memory.listMessages({ threadId: 'default-thread' })).length, 4);
  assert.equal((await memory.listMessages({ threadId: 'other' })).length, 2);
});

test("a call's memory.options apply over the Memory's options (readOnly with the Memory's lastMessages)", T, async () => {
  const srv = hook.current;
  const memory = new Memory({ storage: new InMemoryStore(), options: { lastMessages: 2 } });
  const { agent, id } = memoryAgent(srv, memory, { script: 'echo' });
  const mem = { thread: 'merge', resource: 'u1' };
  await turn(agent, 'one', { memory: mem });
  await turn(agent, 'two', { memory: mem });
  await turn(agent, 'peek', { memory: { ...mem, options: { readOnly: true } } });
  assert.deepEqual(sentMessages(srv, id)[2], [user('two'), assistant('You said: two'), user('peek')]);
  assert.equal((await memory.listMessages({ threadId: 'merge' })).length, 4);
});

// ---------------------------------------------------------------------------------------------
// Storage objects that answer loosely

test('a storage object that answers undefined for "none", ignores last, and returns messages unsorted or wrapped still works', T, async () => {
  const srv = hook.current;
  const base = mapStorage();
  const threads = new Map();
  const messages = [];
  let wrap = false;
  const storage = {
    ...base.storage,
    getThreadById: ({ threadId }) => threads.get(threadId), // undefined when missing
    saveThread: ({ thread }) => void threads.set(thread.id, structuredClone(thread)),
    listThreads: ({ resourceId }) => [...threads.values()].filter((t) => t.resourceId === resourceId),
    // Ignores last and before; newest first; sometimes wrapped as { messages }.
    listMessages: ({ threadId }) => {
      const list = messages.filter((m) => m.threadId === threadId).slice().reverse();
      return wrap ? { messages: list } : list;
    },
    saveMessages: ({ messages: list }) => {
      for (const m of list) {
        const at = messages.findIndex((x) => x.id === m.id);
        if (at >= 0) messages[at] = structuredClone(m);
        else messages.push(structuredClone(m));
      }
    },
    getResource: () => undefined,
  };
  const memory = new Memory({ storage, options: { lastMessages: 2 } });
  const { agent, id } = memoryAgent(srv, memory, { script: 'echo' });
  const mem = { thread: 'loose', resource: 'u1' };
  for (const [i, w] of [[1, false], [2, false], [3, true]]) {
    wrap = w;
    const r = await turn(agent, `turn ${i}`, { memory: mem });
    assert.deepEqual(errorsOf(r.chunks), [], `turn ${i}: no storage error`);
    assert.equal(r.text, `You said: turn ${i}`);
  }
  const sent = sentMessages(srv, id);
  assert.deepEqual(sent[1], [user('turn 1'), assistant('You said: turn 1'), user('turn 2')]);
  assert.deepEqual(sent[2], [user('turn 2'), assistant('You said: turn 2'), user('turn 3')], 'the last 2, in time order');
  assert.deepEqual(textsOf(await memory.listMessages({ threadId: 'loose' })), ['turn 1', 'You said: turn 1', 'turn 2', 'You said: turn 2', 'turn 3', 'You said: turn 3']);
});

test('a storage object whose answers are malformed: the run fails with a StorageError naming the method, before the model is called', T, async () => {
  const srv = hook.current;
  const base = mapStorage();
  for (const [method, value] of [
    ['getThreadById', { title: 'a thread without id' }],
    ['listMessages', 'not a list'],
    ['listMessages', [{ role: 'user' }]],
  ]) {
    const memory = new Memory({ storage: { ...base.storage, getThreadById: () => null, [method]: () => value } });
    const { agent, id } = memoryAgent(srv, memory, { script: 'echo' });
    const r = await turn(agent, 'hello', { memory: { thread: 'bad', resource: 'u1' } });
    const what = `${method} → ${JSON.stringify(value)}`;
    assert.deepEqual(r.chunks.map((c) => c.type), ['start', 'error'], what);
    const [error] = errorsOf(r.chunks);
    assert.equal(error.name, 'StorageError');
    assert.match(error.message, new RegExp(method));
    assert.equal(r.textError?.message, error.message, `${what}: text rejects with it`);
    assert.equal(sentMessages(srv, id).length, 0, `${what}: no reply from a history that could not be read`);
  }
});

test(
  'a tool sees the thread and resource of the run (context.threadId / resourceId, and under context.agent)',
  {
    ...T,
  },
  async () => {
  const srv = hook.current;
  const memory = newMemory();
  const seen = [];
  const weather = createTool({
    id: 'weather',
    description: 'weather',
    inputSchema: WEATHER_SCHEMA,
    execute: async ({ city }, ctx) => {
      seen.push({ threadId: ctx.threadId, resourceId: ctx.resourceId, agent: { threadId: ctx.agent?.threadId, resourceId: ctx.agent?.resourceId } });
      return forecast(city);
    },
  });
  const { agent, id } = memoryAgent(srv, memory, { tools: { weather } });
  hook.on(id, async (ex, n) => (n === 0 ? replyToolCalls(ex, [{ id: 'call_ctx', name: 'weather', args: { city: 'Paris' } }]) : replyText(ex, 'Done.')));
  await turn(agent, 'Weather?', { memory: { thread: { id: 'ctx-thread', title: 'T' }, resource: 'ctx-user' } });
  assert.deepEqual(seen, [{ threadId: 'ctx-thread', resourceId: 'ctx-user', agent: { threadId: 'ctx-thread', resourceId: 'ctx-user' } }]);
  },
);

noUnhandledRejections();
