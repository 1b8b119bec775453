// Malformed values at every entry point (SPEC §2, §3, §11): each is a TypeError whose message
// names the field — thrown by the constructor, or a rejected stream() promise — and none of them
// panics the wasm instance: the same agent streams normally afterwards.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, errorOf, modelFor, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';

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
];

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

noUnhandledRejections();
