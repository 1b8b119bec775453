// Malformed values at every entry point (SPEC §2, §3, §11): each is a TypeError whose message
// names the field — thrown by the constructor, or a rejected stream() promise — and none of them
// panics the wasm instance: the same agent streams normally afterwards.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, errorOf, modelFor, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';
import { Mastra, Memory, InMemoryStore, createTool, hasToolCall, stepCountIs } from '../../pkg/index.node.js';

const server = useModelServer();

/** Runs `fn` with the given environment variables removed, restoring them after. */
function withoutEnv(names, fn) {
  const saved = names.map((n) => [n, process.env[n]]);
  for (const n of names) delete process.env[n];
  try {
    return fn();
  } finally {
    for (const [n, v] of saved) if (v !== undefined) process.env[n] = v;
  }
}

const goodModel = () => modelFor(server.current, 'echo');

// ---------------------------------------------------------------------------------------------
// The constructor

/** [label, () => config, field the message must name, optional extra pattern]. */
const CONSTRUCTOR_CASES = [
  ['no config', () => undefined, 'config'],
  ['null config', () => null, 'config'],
  ['string config', () => 'agent', 'config'],
  ['number config', () => 5, 'config'],
  ['array config', () => [], 'config'],
  ['id missing', () => ({ model: goodModel() }), 'config.id'],
  ['id null', () => ({ id: null, model: goodModel() }), 'config.id'],
  ['id number', () => ({ id: 5, model: goodModel() }), 'config.id', /string/],
  ['id boolean', () => ({ id: true, model: goodModel() }), 'config.id', /string/],
  ['id object', () => ({ id: {}, model: goodModel() }), 'config.id', /string/],
  ['id array', () => ({ id: ['a'], model: goodModel() }), 'config.id', /string/],
  ['id empty string', () => ({ id: '', model: goodModel() }), 'config.id'],
  ['id BigInt', () => ({ id: 5n, model: goodModel() }), 'config.id'],
  ['id Symbol', () => ({ id: Symbol('a'), model: goodModel() }), 'config.id'],
  ['id function', () => ({ id: () => 'a', model: goodModel() }), 'config.id'],
  ['name number', () => ({ id: 'a', name: 5, model: goodModel() }), 'config.name'],
  ['instructions number', () => ({ id: 'a', instructions: 5, model: goodModel() }), 'config.instructions'],
  ['instructions user message', () => ({ id: 'a', instructions: { role: 'user', content: 'x' }, model: goodModel() }), 'config.instructions'],
  ['model missing', () => ({ id: 'a' }), 'config.model', /provider\/model/],
  ['model 5', () => ({ id: 'a', model: 5 }), 'config.model'],
  ['model true', () => ({ id: 'a', model: true }), 'config.model'],
  ['model without slash', () => ({ id: 'a', model: 'gpt-4o' }), 'config.model', /provider\/model/],
  ['unknown provider foo/x', () => ({ id: 'a', model: 'foo/x' }), 'config.model', /'foo'.*openai.*groq.*openrouter.*deepseek.*mistral.*xai.*togetherai.*ollama/],
  ['azure/gpt-4o without a key', () => ({ id: 'a', model: 'azure/gpt-4o' }), 'config.model', /no API key for 'azure'.*AZURE_API_KEY/],
  ['azure/gpt-4o without its resource', () => ({ id: 'a', model: { id: 'azure/gpt-4o', apiKey: 'k' } }), 'config.model', /no URL for 'azure'.*AZURE_RESOURCE_NAME.*url/],
  ['anthropic/claude without a key', () => ({ id: 'a', model: 'anthropic/claude' }), 'config.model', /no API key for 'anthropic'.*ANTHROPIC_API_KEY/],
  ['google/gemini without a key', () => ({ id: 'a', model: 'google/gemini-2.0-flash' }), 'config.model', /no API key for 'google'.*GOOGLE_GENERATIVE_AI_API_KEY/],
  ['model object without id', () => ({ id: 'a', model: { url: 'http://x', apiKey: 'k' } }), 'config.model.id'],
  ['model.id number', () => ({ id: 'a', model: { id: 5, url: 'http://x' } }), 'config.model.id'],
  ['model.url number', () => ({ id: 'a', model: { ...goodModel(), url: 5 } }), 'config.model.url'],
  ['model.apiKey number', () => ({ id: 'a', model: { ...goodModel(), apiKey: 5 } }), 'config.model.apiKey'],
  ['model.api unknown', () => ({ id: 'a', model: { ...goodModel(), api: 'grpc' } }), 'config.model.api'],
  ['model.headers number', () => ({ id: 'a', model: { ...goodModel(), headers: 5 } }), 'config.model.headers'],
  ['model.headers string', () => ({ id: 'a', model: { ...goodModel(), headers: 'x-a: b' } }), 'config.model.headers'],
  ['model.headers value number', () => ({ id: 'a', model: { ...goodModel(), headers: { 'x-a': 5 } } }), 'config.model.headers'],
  ['model with doStream()', () => ({ id: 'a', model: { doStream() {} } }), 'config.model'],
  ['maxRetries string', () => ({ id: 'a', model: goodModel(), maxRetries: '3' }), 'config.maxRetries'],
  ['maxRetries negative', () => ({ id: 'a', model: goodModel(), maxRetries: -1 }), 'config.maxRetries'],
  ['maxRetries fraction', () => ({ id: 'a', model: goodModel(), maxRetries: 1.5 }), 'config.maxRetries'],
  ['maxRetries NaN', () => ({ id: 'a', model: goodModel(), maxRetries: NaN }), 'config.maxRetries'],
  ['maxRetries huge', () => ({ id: 'a', model: goodModel(), maxRetries: 1e9 }), 'config.maxRetries'],
  ['defaultOptions string', () => ({ id: 'a', model: goodModel(), defaultOptions: 'x' }), 'config.defaultOptions'],
  ['defaultOptions bad setting', () => ({ id: 'a', model: goodModel(), defaultOptions: { modelSettings: { temperature: 'hot' } } }), 'config.defaultOptions.modelSettings.temperature'],
  ['defaultOptions onChunk 5', () => ({ id: 'a', model: goodModel(), defaultOptions: { onChunk: 5 } }), 'config.defaultOptions.onChunk'],
  // Functions and other values JSON cannot hold, where data is expected (issue 11, item 3 and 6).
  ['id NaN', () => ({ id: NaN, model: goodModel() }), 'config.id', /^config\.id: expected a string, got NaN$/],
  ['id Infinity', () => ({ id: Infinity, model: goodModel() }), 'config.id', /expected a string, got Infinity/],
  ['name NaN', () => ({ id: 'a', name: NaN, model: goodModel() }), 'config.name', /expected a string, got NaN/],
  ['maxRetries Infinity', () => ({ id: 'a', model: goodModel(), maxRetries: Infinity }), 'config.maxRetries', /Infinity/],
  ['model a function', () => ({ id: 'a', model: () => 'openai/x' }), 'config.model', /got a function/],
  ['model.url a function', () => ({ id: 'a', model: { ...goodModel(), url: () => 'http://127.0.0.1:1' } }), 'config.model.url', /expected a string, got a function/],
  ['model.url a Symbol', () => ({ id: 'a', model: { ...goodModel(), url: Symbol('u') } }), 'config.model.url', /got a Symbol/],
  ['model.apiKey a function', () => ({ id: 'a', model: { ...goodModel(), apiKey: () => 'k' } }), 'config.model.apiKey', /got a function/],
  ['model.apiKey a BigInt', () => ({ id: 'a', model: { ...goodModel(), apiKey: 5n } }), 'config.model.apiKey', /got a BigInt/],
  ['model.headers a function', () => ({ id: 'a', model: { ...goodModel(), headers: () => ({}) } }), 'config.model.headers', /got a function/],
  ['model.headers value a function', () => ({ id: 'a', model: { ...goodModel(), headers: { 'x-a': () => 'b' } } }), 'config.model.headers["x-a"]', /got a function/],
  ['model.id a function', () => ({ id: 'a', model: { ...goodModel(), id: () => 'openai/x' } }), 'config.model.id', /got a function/],
  ['instructions a function', () => ({ id: 'a', model: goodModel(), instructions: () => 'be nice' }), 'config.instructions', /function/],
  ['instructions [a function]', () => ({ id: 'a', model: goodModel(), instructions: ['ok', () => 'x'] }), 'config.instructions[1]', /function/],
  ['defaultOptions a function', () => ({ id: 'a', model: goodModel(), defaultOptions: () => ({}) }), 'config.defaultOptions', /function/],
  ['defaultOptions.modelSettings.headers value a function', () => ({ id: 'a', model: goodModel(), defaultOptions: { modelSettings: { headers: { 'x-a': () => 'b' } } } }), 'config.defaultOptions.modelSettings.headers["x-a"]', /function/],
  ['backgroundTasks.globalConcurrency a function', () => ({ id: 'a', model: goodModel(), backgroundTasks: { enabled: true, globalConcurrency: () => 2 } }), 'config.backgroundTasks.globalConcurrency', /function/],
  // A getter that throws is an error naming the field, never "absent" (item 4).
  ['a throwing tools getter', () => ({ id: 'a', model: goodModel(), get tools() { throw new Error('tools boom'); } }), 'config.tools', /could not be read.*tools boom/],
  ['a throwing memory getter', () => ({ id: 'a', model: goodModel(), get memory() { throw new Error('memory boom'); } }), 'config.memory', /could not be read.*memory boom/],
  ['a throwing backgroundTasks getter', () => ({ id: 'a', model: goodModel(), get backgroundTasks() { throw new Error('bg boom'); } }), 'config.backgroundTasks', /could not be read.*bg boom/],
  ['a throwing defaultOptions getter', () => ({ id: 'a', model: goodModel(), get defaultOptions() { throw new Error('d boom'); } }), 'config.defaultOptions', /could not be read.*d boom/],
  ['a throwing model.doStream getter', () => ({ id: 'a', model: { ...goodModel(), get doStream() { throw new Error('ds boom'); } } }), 'config.model.doStream', /could not be read.*ds boom/],
  ['a throwing tool field getter', () => ({ id: 'a', model: goodModel(), tools: { t: { get execute() { throw new Error('x boom'); } } } }), 'config.tools.t.execute', /could not be read.*x boom/],
];

for (const [label, make, field, pattern] of CONSTRUCTOR_CASES) {
  test(`new Agent: ${label} → TypeError naming ${field}`, T, () => {
    const config = make();
    assert.throws(
      () => new Agent(config),
      (err) => {
        assert.ok(err instanceof TypeError, `a TypeError, got ${err?.constructor?.name}: ${err?.message}`);
        assert.equal(err.name, 'TypeError');
        assert.ok(err.message.startsWith(field), `message names ${field}: ${err.message}`);
        if (pattern) assert.match(err.message, pattern);
        return true;
      },
    );
  });
}

test('new Agent: openai model string without OPENAI_API_KEY → TypeError naming config.model and the variable', T, () => {
  withoutEnv(['OPENAI_API_KEY', 'OPENAI_BASE_URL'], () => {
    assert.throws(
      () => new Agent({ id: 'a', model: 'openai/gpt-4o-mini' }),
      (err) => err instanceof TypeError && /config\.model/.test(err.message) && /OPENAI_API_KEY/.test(err.message) && /apiKey/.test(err.message),
    );
    // The object form with only an id has no key either.
    assert.throws(() => new Agent({ id: 'a', model: { id: 'openai/gpt-4o-mini' } }), (err) => err instanceof TypeError && /OPENAI_API_KEY/.test(err.message));
  });
});

test('new Agent: groq model without GROQ_API_KEY names GROQ_API_KEY; ollama needs no key', T, () => {
  withoutEnv(['GROQ_API_KEY', 'GROQ_BASE_URL', 'OLLAMA_BASE_URL'], () => {
    assert.throws(() => new Agent({ id: 'a', model: 'groq/llama-3.3-70b' }), (err) => err instanceof TypeError && /GROQ_API_KEY/.test(err.message));
    assert.doesNotThrow(() => new Agent({ id: 'a', model: 'ollama/llama3.2' }));
  });
});

test('new Agent: a good config works, and name defaults to id', T, () => {
  const agent = new Agent({ id: 'good', model: goodModel() });
  assert.equal(agent.id, 'good');
  assert.equal(agent.name, 'good');
  assert.equal(new Agent({ id: 'x', name: 'Named', model: goodModel() }).name, 'Named');
});

// ---------------------------------------------------------------------------------------------
// stream(messages, options) on one agent

let shared; // the agent every stream() case runs on
const cyclic = { role: 'user', content: 'x' };
cyclic.self = cyclic;
const cyclicArray = [];
cyclicArray.push(cyclicArray);

/** [label, () => [messages, options], field the message must name]. */
const STREAM_CASES = [
  ['messages 5', () => [5], 'messages'],
  ['messages null', () => [null], 'messages'],
  ['messages undefined', () => [undefined], 'messages'],
  ['messages true', () => [true], 'messages'],
  ['messages NaN', () => [NaN], 'messages'],
  ['messages BigInt', () => [5n], 'messages'],
  ['messages Symbol', () => [Symbol('m')], 'messages'],
  ['messages [5]', () => [[5]], 'messages[0]'],
  ['messages [null]', () => [[null]], 'messages[0]'],
  ['messages [{ role: "robot" }]', () => [[{ role: 'robot' }]], 'messages[0].role'],
  ['messages [{ content: "x" }] (no role)', () => [[{ content: 'x' }]], 'messages[0].role'],
  ['messages [{ role: "user", content: 5 }]', () => [[{ role: 'user', content: 5 }]], 'messages[0].content'],
  ['messages [{ role: "user", content: [{ type: "nope" }] }]', () => [[{ role: 'user', content: [{ type: 'nope' }] }]], 'messages[0].content[0]'],
  ['messages [{ role: "user", content: [{ type: "text", text: 5 }] }]', () => [[{ role: 'user', content: [{ type: 'text', text: 5 }] }]], 'messages[0].content[0].text'],
  ['messages ["ok", { role: "user", content: 5n }]', () => [['ok', { role: 'user', content: 5n }]], 'messages[1].content'],
  ['messages UI parts 5', () => [[{ role: 'user', parts: 5 }]], 'messages[0].parts'],
  ['messages cyclic object', () => [[cyclic]], 'messages[0]'],
  ['messages cyclic array', () => [cyclicArray], 'messages[0]'],
  ['options "x"', () => ['hi', 'x'], 'options'],
  ['options 5', () => ['hi', 5], 'options'],
  ['options true', () => ['hi', true], 'options'],
  ['modelSettings 5', () => ['hi', { modelSettings: 5 }], 'options.modelSettings'],
  ['modelSettings.temperature "hot"', () => ['hi', { modelSettings: { temperature: 'hot' } }], 'options.modelSettings.temperature'],
  ['modelSettings.temperature Infinity', () => ['hi', { modelSettings: { temperature: Infinity } }], 'options.modelSettings.temperature'],
  ['modelSettings.maxOutputTokens -1', () => ['hi', { modelSettings: { maxOutputTokens: -1 } }], 'options.modelSettings.maxOutputTokens'],
  ['modelSettings.maxOutputTokens 1.5', () => ['hi', { modelSettings: { maxOutputTokens: 1.5 } }], 'options.modelSettings.maxOutputTokens'],
  ['modelSettings.topP "x"', () => ['hi', { modelSettings: { topP: 'x' } }], 'options.modelSettings.topP'],
  ['modelSettings.stopSequences "END"', () => ['hi', { modelSettings: { stopSequences: 'END' } }], 'options.modelSettings.stopSequences'],
  ['modelSettings.stopSequences [1]', () => ['hi', { modelSettings: { stopSequences: [1] } }], 'options.modelSettings.stopSequences[0]'],
  ['modelSettings.seed BigInt', () => ['hi', { modelSettings: { seed: 5n } }], 'options.modelSettings.seed'],
  ['modelSettings.maxRetries -1', () => ['hi', { modelSettings: { maxRetries: -1 } }], 'options.modelSettings.maxRetries'],
  ['modelSettings.headers 5', () => ['hi', { modelSettings: { headers: 5 } }], 'options.modelSettings.headers'],
  ['modelSettings.headers value 1', () => ['hi', { modelSettings: { headers: { 'x-a': 1 } } }], 'options.modelSettings.headers'],
  ['modelSettings cyclic', () => ['hi', { modelSettings: cyclic }], 'options.modelSettings'],
  ['onChunk 5', () => ['hi', { onChunk: 5 }], 'options.onChunk'],
  ['onFinish {}', () => ['hi', { onFinish: {} }], 'options.onFinish'],
  ['onError "x"', () => ['hi', { onError: 'x' }], 'options.onError'],
  ['onAbort 1', () => ['hi', { onAbort: 1 }], 'options.onAbort'],
  ['onStepFinish []', () => ['hi', { onStepFinish: [] }], 'options.onStepFinish'],
  ['abortSignal {}', () => ['hi', { abortSignal: {} }], 'options.abortSignal'],
  ['abortSignal "x"', () => ['hi', { abortSignal: 'x' }], 'options.abortSignal'],
  ['abortSignal AbortController', () => ['hi', { abortSignal: new AbortController() }], 'options.abortSignal'],
  ['maxSteps 0', () => ['hi', { maxSteps: 0 }], 'options.maxSteps'],
  ['maxSteps -1', () => ['hi', { maxSteps: -1 }], 'options.maxSteps'],
  ['maxSteps "5"', () => ['hi', { maxSteps: '5' }], 'options.maxSteps'],
  ['providerOptions "x"', () => ['hi', { providerOptions: 'x' }], 'options.providerOptions'],
  ['providerOptions { openai: 5 }', () => ['hi', { providerOptions: { openai: 5 } }], 'options.providerOptions.openai'],
  ['runId 5', () => ['hi', { runId: 5 }], 'options.runId'],
  ['includeRawChunks "yes"', () => ['hi', { includeRawChunks: 'yes' }], 'options.includeRawChunks'],
  ['instructions 5', () => ['hi', { instructions: 5 }], 'options.instructions'],
  ['system 5', () => ['hi', { system: 5 }], 'options.system'],
  ['system user message', () => ['hi', { system: { role: 'user', content: 'x' } }], 'options.system'],
  ['context 5', () => ['hi', { context: 5 }], 'options.context'],
  ['context [{ role: "robot" }]', () => ['hi', { context: [{ role: 'robot' }] }], 'options.context[0].role'],
  // Functions where data is expected (item 3).
  ['modelSettings.headers a function', () => ['hi', { modelSettings: { headers: () => ({}) } }], 'options.modelSettings.headers'],
  ['modelSettings.headers value a function', () => ['hi', { modelSettings: { headers: { 'x-a': () => 'b' } } }], 'options.modelSettings.headers["x-a"]'],
  ['modelSettings.temperature a function', () => ['hi', { modelSettings: { temperature: () => 1 } }], 'options.modelSettings.temperature'],
  ['providerOptions.openai.user a function', () => ['hi', { providerOptions: { openai: { user: () => 'u' } } }], 'options.providerOptions.openai.user'],
  ['runId NaN', () => ['hi', { runId: NaN }], 'options.runId'],
  ['messages [{ role: "user", content: a function }]', () => [[{ role: 'user', content: () => 'x' }]], 'messages[0].content'],
  ['messages [a function]', () => [['ok', () => 'x']], 'messages[1]'],
  ['file part: a detached ArrayBuffer', () => [[{ role: 'user', content: [{ type: 'file', data: detachedBuffer(), mediaType: 'application/pdf' }] }]], 'messages[0].content[0].data'],
  ['image part: a view of a detached ArrayBuffer', () => [[{ role: 'user', content: [{ type: 'image', image: detachedView() }] }]], 'messages[0].content[0].image'],
  // A getter that throws (item 4).
  ['a throwing abortSignal getter', () => ['hi', throwing('abortSignal')], 'options.abortSignal'],
  ['a throwing onChunk getter', () => ['hi', throwing('onChunk')], 'options.onChunk'],
  ['a throwing onFinish getter', () => ['hi', throwing('onFinish')], 'options.onFinish'],
  ['a throwing memory getter', () => ['hi', throwing('memory')], 'options.memory'],
  ['a throwing stopWhen getter', () => ['hi', throwing('stopWhen')], 'options.stopWhen'],
  ['a throwing hooks getter', () => ['hi', throwing('hooks')], 'options.hooks'],
  ['a throwing hooks.beforeToolCall getter', () => ['hi', { hooks: throwing('beforeToolCall') }], 'options.hooks.beforeToolCall'],
  ['a throwing toolsets getter', () => ['hi', throwing('toolsets')], 'options.toolsets'],
  ['a throwing clientTools getter', () => ['hi', throwing('clientTools')], 'options.clientTools'],
  ['a throwing savePerStep getter', () => ['hi', throwing('savePerStep')], 'options.savePerStep'],
  ['a throwing untilIdle getter', () => ['hi', throwing('untilIdle')], 'options.untilIdle'],
  ['a throwing requestContext getter', () => ['hi', throwing('requestContext')], 'options.requestContext'],
  ['a throwing modelSettings getter', () => ['hi', throwing('modelSettings')], 'options.modelSettings'],
  // Wrong types that were accepted silently (item 5).
  ['savePerStep "yes" (no memory)', () => ['hi', { savePerStep: 'yes' }], 'options.savePerStep'],
  ['hooks.beforeToolCall 42', () => ['hi', { hooks: { beforeToolCall: 42 } }], 'options.hooks.beforeToolCall'],
  ['hooks.afterToolCall "x"', () => ['hi', { hooks: { afterToolCall: 'x' } }], 'options.hooks.afterToolCall'],
  ['untilIdle [1]', () => ['hi', { untilIdle: [1] }], 'options.untilIdle'],
];

/** An ArrayBuffer whose memory was transferred away. */
function detachedBuffer() {
  const buf = new ArrayBuffer(8);
  structuredClone(buf, { transfer: [buf] });
  return buf;
}

/** A Uint8Array whose buffer was transferred away after the view was made. */
function detachedView() {
  const buf = new ArrayBuffer(8);
  const view = new Uint8Array(buf);
  structuredClone(buf, { transfer: [buf] });
  return view;
}

/** An options object whose `key` getter throws. */
function throwing(key) {
  return Object.defineProperty({}, key, {
    enumerable: true,
    get() {
      throw new Error(`${key} getter boom`);
    },
  });
}

test('stream() bad input table: every case rejects with a TypeError naming the field', T, async (t) => {
  shared = new Agent({ id: 'shared', model: modelFor(server.current, 'echo', { headers: { 'x-test-id': uid('bad') } }) });
  const before = server.current.requests.length;
  for (const [label, make, field] of STREAM_CASES) {
    await t.test(`${label} → TypeError naming ${field}`, async () => {
      const [messages, options] = make();
      let promise;
      assert.doesNotThrow(() => {
        promise = shared.stream(messages, options);
      }, 'stream() does not throw synchronously');
      assert.ok(promise instanceof Promise, 'stream() returns a promise');
      const err = await errorOf(() => promise);
      assert.ok(err instanceof TypeError, `a TypeError, got ${err?.constructor?.name}: ${err?.message}`);
      assert.ok(err.message.startsWith(field), `message names ${field}: ${err.message}`);
      if (/throwing .* getter/.test(label)) assert.match(err.message, /could not be read .*getter boom/);
    });
  }
  assert.equal(server.current.requests.length, before, 'no bad call reached the model');
});

test('after the whole table, the SAME agent instance still streams normally (no wasm panic)', T, async () => {
  assert.ok(shared, 'the table ran first');
  const out = await shared.stream('still alive?');
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(await out.text, 'You said: still alive?');
  // And a new agent can still be made.
  const other = new Agent({ id: 'fresh', model: goodModel() });
  assert.equal(await (await other.stream('fresh')).text, 'You said: fresh');
});

test('unknown options are ignored without error', T, async () => {
  // Even a function under a key the model object does not have.
  const withFetch = new Agent({ id: 'lenient-model', model: { ...goodModel(), fetch: () => {}, extra: NaN } });
  assert.equal(await (await withFetch.stream('hi')).text, 'You said: hi');
  const agent = new Agent({ id: 'lenient', model: goodModel(), someFutureOption: { a: 1 } });
  const out = await agent.stream('hi', { someFutureOption: true, memory: undefined });
  assert.equal(await out.text, 'You said: hi');
});

// ---------------------------------------------------------------------------------------------
// Wording and hostile values: what the error says about what was given.

test('a TypeError for a BigInt says what was expected for that field', { ...T }, async () => {
  const idErr = await errorOf(() => new Agent({ id: 5n, model: goodModel() }));
  assert.match(idErr.message, /^config\.id: /);
  assert.match(idErr.message, /BigInt/);
  assert.doesNotMatch(idErr.message, /expected a number/, `config.id expects a string: ${idErr.message}`);
  const agent = new Agent({ id: 'big', model: goodModel() });
  const msgErr = await errorOf(() => agent.stream(5n));
  assert.doesNotMatch(msgErr.message, /expected a number/, `messages are not numbers: ${msgErr.message}`);
});

test('a TypeError says what was given, in JavaScript terms', { ...T }, async () => {
  const agent = new Agent({ id: 'given', model: goodModel() });
  const undef = await errorOf(() => agent.stream(undefined));
  assert.match(undef.message, /^messages: .*undefined/, undef.message);
  const fn = await errorOf(() => new Agent({ id: () => 'a', model: goodModel() }));
  assert.match(fn.message, /^config\.id: .*function/, fn.message);
  const inf = await errorOf(() => agent.stream('hi', { modelSettings: { temperature: Infinity } }));
  assert.match(inf.message, /Infinity/, inf.message);
});

test('an invalid header name or value is a TypeError naming the field, not a retried network error', { ...T }, async () => {
  assert.throws(
    () => new Agent({ id: 'h', model: { ...goodModel(), headers: { 'bad header': 'x' } } }),
    (err) => err instanceof TypeError && /config\.model\.headers/.test(err.message),
  );
  assert.throws(
    () => new Agent({ id: 'u', model: { id: 'openai/echo', url: 'not a url', apiKey: 'k' } }),
    (err) => err instanceof TypeError && /config\.model\.url/.test(err.message),
  );
  const agent = new Agent({ id: 'h2', model: goodModel() });
  const err = await errorOf(() => agent.stream('hi', { modelSettings: { headers: { 'x-a': 'line\nbreak' } } }));
  assert.ok(err instanceof TypeError, `a TypeError, got ${err?.name}: ${err?.message}`);
  assert.match(err.message, /options\.modelSettings\.headers/);
});

test('stream() never throws synchronously, even for an object whose keys cannot be read', { ...T }, async () => {
  const agent = new Agent({ id: 'proxy', model: goodModel() });
  const hostile = new Proxy({}, {
    ownKeys() {
      throw new Error('ownKeys trap');
    },
  });
  let promise;
  assert.doesNotThrow(() => {
    promise = agent.stream(hostile);
  });
  await errorOf(() => promise);
  assert.equal(await (await agent.stream('after')).text, 'You said: after');
});


// ---------------------------------------------------------------------------------------------
// Exported functions given what wasm-bindgen would not check: no trap, a TypeError naming the
// parameter, and the instance goes on working (issue 11, items 1 and 5).

/** Asserts `fn()` throws a TypeError whose message starts with `field` (and matches `pattern`). */
function throwsNaming(fn, field, pattern) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof TypeError, `a TypeError, got ${err?.constructor?.name}: ${err?.message}`);
    assert.ok(err.message.startsWith(field), `message names ${field}: ${err.message}`);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

const NOT_A_STRING = [42, {}, null, undefined, [1], true, 5n, Symbol('s'), () => 'x'];

test('hasToolCall(name) with a non-string → TypeError naming name, not a wasm trap', T, async () => {
  for (const value of NOT_A_STRING) {
    throwsNaming(() => hasToolCall(value), 'hasToolCall(name): expected a tool name string');
  }
  throwsNaming(() => hasToolCall(42), 'hasToolCall(name)', /got a number/);
  throwsNaming(() => hasToolCall({}), 'hasToolCall(name)', /got an object/);
  assert.equal(typeof hasToolCall('weather'), 'function');
  assert.equal(await (await shared.stream('after hasToolCall')).text, 'You said: after hasToolCall');
});

test('stepCountIs(count) with anything but a whole number of steps → TypeError naming count', T, async () => {
  for (const value of ['bogus', '3', -1, NaN, Infinity, 1.5, null, undefined, {}, [2], 5n, Symbol('n'), () => 1]) {
    throwsNaming(() => stepCountIs(value), 'stepCountIs(count): expected a non-negative whole number of steps');
  }
  throwsNaming(() => stepCountIs(-1), 'stepCountIs(count)', /got -1$/);
  throwsNaming(() => stepCountIs(NaN), 'stepCountIs(count)', /got NaN$/);
  throwsNaming(() => stepCountIs(Symbol('n')), 'stepCountIs(count)', /got a Symbol$/);
  throwsNaming(() => stepCountIs('bogus'), 'stepCountIs(count)', /got a string$/);
  const out = await shared.stream('after stepCountIs', { stopWhen: stepCountIs(1) });
  assert.equal(await out.text, 'You said: after stepCountIs');
});

test('mastra.getAgent(id) with a non-string → TypeError naming id, not a wasm trap', T, async () => {
  const mastra = new Mastra({ agents: { shared } });
  for (const value of NOT_A_STRING) {
    throwsNaming(() => mastra.getAgent(value), 'mastra.getAgent(id): expected an agent id string');
  }
  assert.equal(mastra.getAgent('shared'), shared);
  throwsNaming(() => new Mastra({ get agents() { throw new Error('agents boom'); } }), 'new Mastra(config).agents', /could not be read.*agents boom/);
  throwsNaming(() => new Mastra({ backgroundTasks: { enabled: true, globalConcurrency: NaN } }), 'new Mastra(config).backgroundTasks.globalConcurrency', /NaN/);
  assert.equal(await (await shared.stream('after getAgent')).text, 'You said: after getAgent');
});

test('createTool: an outputSchema that is no schema, or a throwing getter → TypeError naming the field', T, () => {
  const base = { id: 't', description: 'd', execute: () => 1 };
  for (const value of [42, 'x', true, 5n]) {
    throwsNaming(() => createTool({ ...base, outputSchema: value }), 'createTool(tool).outputSchema');
  }
  createTool({ ...base, outputSchema: { type: 'object' } });
  throwsNaming(() => createTool({ ...base, get inputSchema() { throw new Error('schema boom'); } }), 'createTool(tool).inputSchema', /could not be read.*schema boom/);
  throwsNaming(() => createTool(5), 'createTool(tool)', /got a number/);
  throwsNaming(() => createTool({ ...base, background: { enabled: () => true } }), 'createTool(tool).background.enabled', /function/);
});

test('memory.updateThread({ metadata: 42 }) and functions in stored data → TypeError naming the field', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const agent = new Agent({ id: 'mem-bad', model: goodModel(), memory });
  await (await agent.stream('hi', { memory: { thread: 't-bad', resource: 'r' } })).consumeStream();
  for (const value of [42, 'x', true, [1]]) {
    const err = await errorOf(() => memory.updateThread({ id: 't-bad', metadata: value }));
    assert.ok(err instanceof TypeError, `a TypeError, got ${err?.name}: ${err?.message}`);
    assert.ok(err.message.startsWith('memory.updateThread(…).metadata'), err.message);
  }
  const fnErr = await errorOf(() => memory.updateThread({ id: 't-bad', metadata: { note: () => 'x' } }));
  assert.ok(fnErr.message.startsWith('memory.updateThread(…).metadata.note'), fnErr.message);
  const thread = await memory.updateThread({ id: 't-bad', metadata: { ok: 1 } });
  assert.deepEqual(thread.metadata, { ok: 1 });
  const titleErr = await errorOf(() => agent.stream('hi', { memory: { thread: 't-bad', resource: 'r', onTitleGenerated: 5 } }));
  assert.ok(titleErr.message.startsWith('options.memory.onTitleGenerated'), titleErr.message);
  const metaErr = await errorOf(() => agent.stream('hi', { memory: { thread: { id: 't-bad', metadata: { f: () => 1 } }, resource: 'r' } }));
  assert.ok(metaErr.message.startsWith('options.memory.thread.metadata.f'), metaErr.message);
  throwsNaming(() => new Memory({ options: { lastMessages: NaN } }), 'new Memory(config).options.lastMessages', /NaN/);
  throwsNaming(() => new Memory({ get storage() { throw new Error('st boom'); } }), 'new Memory(config).storage', /could not be read.*st boom/);
});

test('declineToolCall({ reason: {} }) and approveToolCall with bad ids → TypeError naming the field', T, async () => {
  throwsNaming(() => shared.declineToolCall({ runId: 'r', toolCallId: 'c', reason: {} }), 'declineToolCall(args).reason', /got an object/);
  throwsNaming(() => shared.declineToolCall({ runId: 'r', toolCallId: 'c', reason: 5 }), 'declineToolCall(args).reason', /got a number/);
  // Good input that names no waiting run: a ResumeError (SPEC §19.3), not a TypeError.
  await assert.rejects(shared.declineToolCall({ runId: 'r', toolCallId: 'c', reason: 'no' }), { name: 'ResumeError', code: 'not-found' });
  throwsNaming(() => shared.approveToolCall({ runId: 'r', toolCallId: 5 }), 'approveToolCall(args).toolCallId');
  throwsNaming(() => shared.approveToolCall({ runId: 5, toolCallId: 'c' }), 'approveToolCall(args).runId');
  throwsNaming(
    () => shared.approveToolCall({ toolCallId: 'c', get runId() { throw new Error('id boom'); } }),
    'approveToolCall(args).runId',
    /could not be read.*id boom/,
  );
});

test('a prepareStep that returns what is no step settings fails the run with a ValidationError naming prepareStep', T, async () => {
  for (const value of [5n, 42, 'x', { modelSettings: { temperature: 5n } }, { toolChoice: () => 'auto' }]) {
    const out = await shared.stream('hi', { prepareStep: () => value });
    const chunks = await collect(out.fullStream);
    const error = chunks.find((c) => c.type === 'error');
    assert.ok(error, `an error chunk for ${String(value)}`);
    assert.equal(error.payload.error.name, 'ValidationError');
    assert.match(error.payload.error.message, /prepareStep/);
    const err = await errorOf(() => out.text);
    assert.equal(err.name, 'ValidationError');
  }
  const bigint = await errorOf(async () => (await shared.stream('hi', { prepareStep: () => 5n })).getFullOutput());
  assert.match(bigint.message, /prepareStep.*BigInt/);
  assert.equal(await (await shared.stream('after prepareStep')).text, 'You said: after prepareStep');
});

test('writer.custom with a function in its data rejects with a TypeError naming it (nothing silently dropped)', T, async () => {
  const seen = [];
  const tool = createTool({
    id: 'weather',
    description: 'd',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    execute: async (_input, { writer }) => {
      const err = await writer.custom({ type: 'data-x', data: { ok: 1, f: () => 1 } }).then(() => null, (e) => e);
      seen.push(err);
      return 'done';
    },
  });
  const agent = new Agent({ id: 'custom-bad', model: modelFor(server.current, 'tool-call'), tools: { weather: tool } });
  const chunks = await collect((await agent.stream('weather?')).fullStream);
  assert.equal(seen.length, 1);
  assert.ok(seen[0] instanceof TypeError, `a TypeError, got ${seen[0]}`);
  assert.ok(seen[0].message.startsWith('writer.custom(chunk).data.f'), seen[0].message);
  assert.equal(chunks.filter((c) => c.type === 'data-x').length, 0, 'no half-written data chunk');
});

test('streamUntilIdle: options that are no object, or a throwing maxIdleMs getter → a rejected TypeError', T, async () => {
  const warn = console.warn;
  console.warn = () => {};
  try {
    const bad = await errorOf(() => shared.streamUntilIdle('hi', 5));
    assert.ok(bad instanceof TypeError && bad.message.startsWith('options'), bad.message);
    const err = await errorOf(() => shared.streamUntilIdle('hi', throwing('maxIdleMs')));
    assert.ok(err instanceof TypeError && err.message.startsWith('options.maxIdleMs'), err.message);
    const other = await errorOf(() => shared.streamUntilIdle('hi', throwing('onChunk')));
    assert.ok(other instanceof TypeError && other.message.startsWith('options'), other.message);
    assert.match(other.message, /could not be read .*onChunk getter boom/);
  } finally {
    console.warn = warn;
  }
});

noUnhandledRejections();
