// wasm-agent/lite (pkg/lite/, the chat-widget build, `./x build` builds it beside the complete
// one): it streams over Chat Completions and the Responses API, runs tools and keeps memory,
// and an option that needs a feature it left out is a TypeError that says so and where to get it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as lite from '../../pkg/lite/index.node.js';
import * as full from '../../pkg/index.node.js';
import { T, collect, errorOf, modelFor, noUnhandledRejections, requestsOf, types, uid, useModelServer } from './helpers.mjs';

const { Agent, createTool, Memory, InMemoryStore } = lite;
const server = useModelServer();

const WEATHER = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
};

test('the package exports wasm-agent/lite with its own wasm, a subset of the complete exports', T, () => {
  const pkg = JSON.parse(readFileSync(new URL('../../pkg/package.json', import.meta.url), 'utf8'));
  const entry = pkg.exports['./lite'];
  assert.equal(entry.node, './lite/index.node.js');
  assert.equal(entry.types, './lite/index.d.ts');
  for (const file of Object.values(entry)) assert.ok(pkg.files.includes(file.slice(2)), `files lists ${file}`);
  assert.ok(pkg.files.includes('lite/wasm_agent_bg.wasm'));
  const names = Object.keys(lite).sort();
  for (const name of ['Agent', 'createTool', 'Memory', 'InMemoryStore', 'IndexedDBStore', 'stepCountIs', 'hasToolCall', 'toAISdkStream']) {
    assert.ok(names.includes(name), `lite exports ${name}`);
  }
  for (const name of names) assert.ok(name in full, `${name} is a complete export too`);
  assert.ok(!('BatchPartsProcessor' in lite) && !('UnicodeNormalizer' in lite), 'no processor classes in lite');
  assert.notEqual(lite.Agent, full.Agent, 'a second wasm instance');
  const wasm = (dir) => readFileSync(new URL(`../../pkg/${dir}wasm_agent_bg.wasm`, import.meta.url)).length;
  assert.ok(wasm('lite/') < wasm(''), 'the lite wasm is the smaller one');
});

for (const api of ['chat', 'responses']) {
  test(`lite streams a reply over ${api === 'chat' ? 'Chat Completions' : 'the Responses API'}`, T, async () => {
    const id = uid('lite');
    const agent = new Agent({ id: 'lite', model: modelFor(server.current, 'echo', { api, headers: { 'x-test-id': id } }) });
    const out = await agent.stream('Hello from the widget');
    const chunks = await collect(out.fullStream);
    const kinds = types(chunks);
    assert.deepEqual([kinds[0], kinds[1], kinds.at(-2), kinds.at(-1)], ['start', 'step-start', 'step-finish', 'finish']);
    const text = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
    assert.equal(text, 'You said: Hello from the widget');
    assert.equal(await out.text, text);
    assert.equal(requestsOf(server.current, id)[0].path, api === 'chat' ? '/v1/chat/completions' : '/v1/responses');
  });
}

test('lite runs a tool and sends its result back to the model', T, async () => {
  const calls = [];
  const weather = createTool({
    id: 'weather',
    description: 'Current weather for a city',
    inputSchema: WEATHER,
    execute: async ({ city }) => {
      calls.push(city);
      return { city, temperatureC: 18 };
    },
  });
  const agent = new Agent({ id: 'lite-tools', model: modelFor(server.current, 'tool-call'), tools: { weather } });
  const out = await agent.stream('Weather?');
  const chunks = await collect(out.fullStream);
  assert.equal(calls.length, 1);
  const result = chunks.find((c) => c.type === 'tool-result');
  assert.deepEqual(result.payload.result, { city: calls[0], temperatureC: 18 });
  assert.equal(await out.text, `The tool said: ${JSON.stringify({ city: calls[0], temperatureC: 18 })}`);
  assert.equal((await out.steps).length, 2);
});

test('lite keeps memory: the second turn of a thread sends the first one back', T, async () => {
  const id = uid('lite-memory');
  const memory = new Memory({ storage: new InMemoryStore() });
  const agent = new Agent({ id: 'lite-memory', model: modelFor(server.current, 'echo', { headers: { 'x-test-id': id } }), memory });
  const thread = { thread: 'widget-thread', resource: 'visitor' };
  await (await agent.stream('first', { memory: thread })).consumeStream();
  const out = await agent.stream('second', { memory: thread });
  assert.equal(await out.text, 'You said: second');
  const sent = requestsOf(server.current, id)[1].body.messages.map((m) => [m.role, m.content]);
  assert.deepEqual(sent, [['user', 'first'], ['assistant', 'You said: first'], ['user', 'second']]);
  const stored = await memory.listMessages({ threadId: 'widget-thread' });
  assert.equal(stored.length, 4);
});

// Each option that needs a left-out feature, and the field its TypeError names.
const LEFT_OUT = [
  ['structuredOutput', 'options.structuredOutput', 'structured output', 'structured', (a) => a.stream('x', { structuredOutput: { schema: { type: 'object' } } })],
  ['output (deprecated)', 'options.output', 'structured output', 'structured', (a) => a.stream('x', { output: { type: 'object' } })],
  ['outputProcessors', 'options.outputProcessors', 'processors', 'processors', (a) => a.stream('x', { outputProcessors: [{ id: 'p', processOutputStream: ({ part }) => part }] })],
  ['a WebSocket transport', 'options.providerOptions.openai.transport', 'the WebSocket transport', 'websocket', (a) => a.stream('x', { providerOptions: { openai: { transport: 'websocket' } } })],
  ['scorers', 'options.scorers', 'scorers', 'scorers', (a) => a.stream('x', { scorers: { s: { scorer: 'some-id' } } })],
  ['returnScorerData', 'options.returnScorerData', 'scorers', 'scorers', (a) => a.stream('x', { returnScorerData: true })],
  ['reconnectable', 'options.reconnectable', 'reconnectable runs', 'reconnect', (a) => a.stream('x', { reconnectable: true })],
];

for (const [what, field, named, feature, call] of LEFT_OUT) {
  test(`lite refuses ${what} with a TypeError naming ${field} and the feature`, T, async () => {
    const agent = new Agent({ id: 'lite-refuses', model: modelFor(server.current, 'echo', { api: 'responses' }) });
    const err = await errorOf(() => call(agent));
    assert.equal(err.name, 'TypeError');
    assert.equal(
      err.message,
      `${field}: this build of wasm-agent leaves out ${named} (wasm-agent/lite, or a build without the cargo feature \`${feature}\`); import 'wasm-agent' for it`,
    );
  });
}

test('lite refuses config.workflows (agents calling workflows) with a TypeError naming it and the feature', () => {
  assert.throws(
    () => new Agent({ id: 'lite-refuses', model: { id: 'openai/gpt-4o-mini', apiKey: 'k' }, workflows: { w: {} } }),
    (e) => e instanceof TypeError && e.message === "config.workflows: this build of wasm-agent leaves out workflows (wasm-agent/lite, or a build without the cargo feature `workflows`); import 'wasm-agent' for it",
  );
});

test('lite refuses memory.watch with a TypeError naming it and the feature', T, async () => {
  const memory = new lite.Memory({ storage: new lite.InMemoryStore() });
  const err = await errorOf(() => memory.watch({ threadId: 't1' }, () => {}));
  assert.equal(err.name, 'TypeError');
  assert.equal(
    err.message,
    "memory.watch: this build of wasm-agent leaves out memory.watch (wasm-agent/lite, or a build without the cargo feature `watch`); import 'wasm-agent' for it",
  );
});

test('lite refuses inputProcessors, agents (sub-agents), anthropic/ and google/ models and AI SDK model objects at new Agent', T, () => {
  const refused = (config, field) => {
    const err = errorOf(() => new Agent({ id: 'a', ...config }));
    return err.then((e) => {
      assert.equal(e.name, 'TypeError');
      assert.match(e.message, new RegExp(`^${field.replace('.', '\\.')}: this build of wasm-agent leaves out .*; import 'wasm-agent' for it$`));
      return e.message;
    });
  };
  const model = modelFor(server.current, 'echo');
  return Promise.all([
    refused({ model, inputProcessors: [{ id: 'p', processInput: ({ messages }) => messages }] }, 'config.inputProcessors'),
    refused({ model, agents: { helper: new Agent({ id: 'helper', model }) } }, 'config.agents').then((m) => assert.match(m, /sub-agents.*`subagents`/)),
    refused({ model: { id: 'anthropic/claude-sonnet-4-5', apiKey: 'k' } }, 'config.model').then((m) => assert.match(m, /Anthropic Messages.*`anthropic`/)),
    refused({ model: { id: 'google/gemini-2.5-flash', apiKey: 'k' } }, 'config.model').then((m) => assert.match(m, /Google Gemini.*`google`/)),
    refused({ model: { specificationVersion: 'v2', provider: 'p', modelId: 'm', doStream: async () => ({}) } }, 'config.model').then((m) =>
      assert.match(m, /an AI SDK model object.*`ai-sdk-model`/),
    ),
  ]);
});

test('lite leaves out semantic recall: semanticRecall is an unsupported-setting warning and the run keeps its last messages', T, async () => {
  const id = uid('lite-recall');
  const memory = new Memory({ storage: new InMemoryStore(), embedder: async () => [[1]], options: { semanticRecall: { topK: 2 } } });
  const agent = new Agent({ id: 'lite-recall', model: modelFor(server.current, 'gpt-4o-mini', { headers: { 'x-test-id': id } }), memory });
  const out = await agent.stream('hi', { memory: { thread: uid('th'), resource: 'u1' } });
  await collect(out.fullStream);
  const warnings = await out.warnings;
  assert.deepEqual(warnings.map((w) => [w.type, w.setting]), [['unsupported-setting', 'memory.options.semanticRecall']]);
  assert.match(warnings[0].details, /leaves out semantic recall/);
  assert.equal((await out.getFullOutput()).rememberedMessages, undefined);
});

test("lite treats transport 'auto' as HTTP streaming, as the complete build does when no socket opens", T, async () => {
  const id = uid('lite-auto');
  const agent = new Agent({ id: 'lite-auto', model: modelFor(server.current, 'echo', { api: 'responses', headers: { 'x-test-id': id } }) });
  const out = await agent.stream('over http', { providerOptions: { openai: { transport: 'auto' } } });
  assert.equal(await out.text, 'You said: over http');
  assert.equal(out.transport, undefined);
  assert.equal(requestsOf(server.current, id)[0].path, '/v1/responses');
});

noUnhandledRejections();

test('lite runs no completion check: isTaskComplete is an unsupported-setting warning and the run ends as without it', T, async () => {
  const id = uid('lite-itc');
  const agent = new Agent({ id: 'lite-itc', model: modelFor(server.current, 'echo', { headers: { 'x-test-id': id } }) });
  const never = { id: 'never', run: async () => ({ score: 0 }) };
  const out = await agent.stream('Hello', { isTaskComplete: { scorers: [never] } });
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.some((c) => c.type === 'is-task-complete'), false);
  assert.equal(requestsOf(server.current, id).length, 1);
  const warnings = await out.warnings;
  assert.deepEqual(warnings.map((w) => [w.type, w.setting]), [['unsupported-setting', 'isTaskComplete']]);
  assert.match(warnings[0].details, /leaves out scorers/);
});
