// toAISdkV5Messages / toAISdkMessages (§21.4, seed 003): any messages the package accepts as AI
// SDK v5 UI messages, checked by the real `ai` package's validateUIMessages (what useChat's
// server side runs); the same conversion as memory.listMessages({ format: 'ui' }); also from the
// `wasm-agent/ui` entry.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { validateUIMessages } from 'ai';
import { createTool, Memory, InMemoryStore, toAISdkMessages, toAISdkV5Messages } from '../../pkg/index.node.js';
import { Agent, T, modelFor, uid, useModelServer } from './helpers.mjs';
import { weatherDef } from './tools-helpers.mjs';

const server = useModelServer();

test("the seed's example: [{ role: 'user', content: 'Hello' }] is one valid user UI message", T, async () => {
  const messages = toAISdkV5Messages([{ role: 'user', content: 'Hello' }]);
  assert.equal(messages.length, 1);
  assert.equal(messages[0].role, 'user');
  assert.deepEqual(messages[0].parts, [{ type: 'text', text: 'Hello' }]);
  assert.match(messages[0].id, /^[0-9a-f-]{36}$/);
  // ai keeps what UIMessage declares (createdAt, which memory's UI messages carry too, is extra).
  const { createdAt, ...declared } = messages[0];
  assert.match(createdAt, /^\d{4}-\d\d-\d\dT/);
  assert.deepEqual(await validateUIMessages({ messages }), [declared]);
  assert.equal(toAISdkMessages('Hi')[0].parts[0].text, 'Hi', 'the name without the version, and a bare string');
});

test('model messages with a tool round trip: the result completes its call; system messages stay; all valid for ai', T, async () => {
  const messages = toAISdkV5Messages([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }, { type: 'image', image: 'aGVsbG8=', mediaType: 'image/png' }] },
    { role: 'assistant', content: [{ type: 'reasoning', text: 'Look it up.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'weather', input: { city: 'Paris' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'weather', output: { type: 'json', value: { tempC: 21 } } }] },
    { role: 'assistant', content: 'Sunny, 21 °C.' },
  ]);
  assert.deepEqual(messages.map((m) => m.role), ['system', 'user', 'assistant', 'assistant']);
  assert.deepEqual(messages[1].parts[1], { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,aGVsbG8=' });
  assert.deepEqual(messages[2].parts, [
    { type: 'reasoning', text: 'Look it up.' },
    { type: 'tool-weather', toolCallId: 'c1', state: 'output-available', input: { city: 'Paris' }, output: { tempC: 21 } },
  ]);
  assert.equal(new Set(messages.map((m) => m.id)).size, 4, 'each message its own id');
  assert.ok(messages.every((m, i) => i === 0 || m.createdAt > messages[i - 1].createdAt), 'times in the order given');
  await validateUIMessages({ messages });
});

test("a stored conversation (memory.listMessages) converts to exactly what listMessages({ format: 'ui' }) gives, and ai accepts it", T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const id = uid('ui-messages');
  const agent = new Agent({
    id: 'ui-agent',
    model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }),
    tools: { weather: createTool(weatherDef()) },
    memory,
  });
  const out = await agent.stream('Weather in Paris?', { memory: { thread: 't-ui', resource: 'u1' } });
  await out.consumeStream();
  await out.text;
  const stored = await memory.listMessages({ threadId: 't-ui' });
  const ui = await memory.listMessages({ threadId: 't-ui', format: 'ui' });
  assert.ok(stored.length >= 2);
  const converted = toAISdkV5Messages(stored);
  assert.deepEqual(converted, ui);
  assert.deepEqual(converted.map((m) => m.id), stored.map((m) => m.id), 'stored ids are kept');
  assert.ok(converted[1].parts.some((p) => p.type === 'tool-weather' && p.state === 'output-available'), JSON.stringify(converted[1].parts));
  await validateUIMessages({ messages: converted });
  // UI messages (as useChat sends them back) pass through unchanged.
  assert.deepEqual(toAISdkV5Messages(ui), ui);
});

test('bad input is a TypeError naming the function and the path; nothing else is thrown', T, () => {
  for (const [bad, path] of [
    [42, /toAISdkV5Messages\(messages\)/],
    [['ok', { role: 'robot', content: 'x' }], /toAISdkV5Messages\(messages\)\[1\]/],
    [[{ role: 'user', parts: [{ type: 'text' }] }], /toAISdkV5Messages\(messages\)\[0\]/],
    [[() => 1], /toAISdkV5Messages\(messages\)/],
  ]) {
    assert.throws(() => toAISdkV5Messages(bad), (e) => e instanceof TypeError && path.test(e.message), String(bad));
  }
  assert.deepEqual(toAISdkV5Messages([]), []);
});

test("the `wasm-agent/ui` entry resolves, in every runtime's condition, to a module that exports the helpers", T, async () => {
  const pkg = JSON.parse(readFileSync(new URL('../../pkg/package.json', import.meta.url)));
  const ui = pkg.exports['./ui'];
  for (const condition of ['types', 'workerd', 'browser', 'node', 'default']) assert.ok(ui[condition], condition);
  const mod = await import(new URL(`../../pkg/${ui.node}`, import.meta.url));
  assert.equal(mod.toAISdkV5Messages, toAISdkV5Messages);
  assert.equal(typeof mod.toAISdkStream, 'function');
  assert.ok(pkg.files.includes('ui.d.ts'));
  assert.match(readFileSync(new URL(`../../pkg/${ui.types}`, import.meta.url), 'utf8'), /toAISdkV5Messages/);
});
