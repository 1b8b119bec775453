// The request as the model server saw it: prompt assembly, every message form, model settings,
// headers, providerOptions, defaultOptions, keys from the environment, and that the API key
// never shows up anywhere the user (or a log) can see.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { Agent, T, collect, errorOf, modelFor, noUnhandledRejections, requestsOf, uid, useModelServer } from './helpers.mjs';

const server = useModelServer();

/**
 * Runs one stream to its end on `agent` (or a fresh echo agent built from `config`) and returns
 * the request record the server got.
 */
async function sent(messages, options = {}, config = {}) {
  const srv = server.current;
  const id = uid('req');
  const agent = new Agent({ id: 'req', model: modelFor(srv, 'echo'), ...config });
  const out = await agent.stream(messages, {
    ...options,
    modelSettings: { ...options.modelSettings, headers: { ...options.modelSettings?.headers, 'x-test-id': id } },
  });
  await out.consumeStream();
  const [request] = requestsOf(srv, id);
  assert.ok(request, 'the server got the request');
  return request;
}

const sys = (content) => ({ role: 'system', content });
const user = (content) => ({ role: 'user', content });

test('the request is a streaming Chat Completions POST with the model name after the provider prefix', T, async () => {
  const r = await sent('hi');
  assert.equal(r.method, 'POST');
  assert.equal(r.path, '/v1/chat/completions');
  assert.equal(r.body.model, 'echo');
  assert.equal(r.body.stream, true);
  assert.deepEqual(r.body.messages, [user('hi')]);
  assert.match(r.headers['content-type'], /^application\/json/);
});

test('agent instructions come first as system messages', T, async () => {
  const r = await sent('hi', {}, { instructions: ['Be brief.', sys('Cite sources.')] });
  assert.deepEqual(r.body.messages, [sys('Be brief.'), sys('Cite sources.'), user('hi')]);
});

test('options.instructions replace the agent instructions; options.system is added after them', T, async () => {
  const r = await sent('hi', { instructions: 'Call instructions.', system: ['Extra one.', 'Extra two.'] }, { instructions: 'Agent instructions.' });
  assert.deepEqual(r.body.messages, [sys('Call instructions.'), sys('Extra one.'), sys('Extra two.'), user('hi')]);
});

test('options.system without options.instructions keeps the agent instructions', T, async () => {
  const r = await sent('hi', { system: sys('Added.') }, { instructions: 'Agent.' });
  assert.deepEqual(r.body.messages, [sys('Agent.'), sys('Added.'), user('hi')]);
});

test('options.context goes after the system messages and before the input', T, async () => {
  const r = await sent('the question', {
    system: 'S.',
    context: [user('earlier question'), { role: 'assistant', content: 'earlier answer' }],
  }, { instructions: 'I.' });
  assert.deepEqual(r.body.messages, [
    sys('I.'),
    sys('S.'),
    user('earlier question'),
    { role: 'assistant', content: 'earlier answer' },
    user('the question'),
  ]);
});

test('messages as a string is one user message', T, async () => {
  assert.deepEqual((await sent('just this')).body.messages, [user('just this')]);
});

test('messages as string[] is one user message each', T, async () => {
  assert.deepEqual((await sent(['first', 'second'])).body.messages, [user('first'), user('second')]);
});

test('messages as one { role, content } object', T, async () => {
  assert.deepEqual((await sent(user('single'))).body.messages, [user('single')]);
});

test('messages as { role, content }[]: system, user parts, assistant, user', T, async () => {
  const r = await sent([
    sys('inline system'),
    { role: 'user', content: [{ type: 'text', text: 'part one' }, { type: 'text', text: 'part two' }] },
    { role: 'assistant', content: 'an answer' },
    user('follow-up'),
  ]);
  assert.deepEqual(r.body.messages, [
    sys('inline system'),
    { role: 'user', content: [{ type: 'text', text: 'part one' }, { type: 'text', text: 'part two' }] },
    { role: 'assistant', content: 'an answer' },
    user('follow-up'),
  ]);
});

test('messages as UI messages with parts', T, async () => {
  const r = await sent([
    { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Hi' }] },
    { id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'Hello!' }] },
    { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'How' }, { type: 'text', text: 'are you?' }] },
  ]);
  const msgs = r.body.messages;
  assert.equal(msgs.length, 3);
  assert.deepEqual(msgs.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.equal(textOf(msgs[0].content), 'Hi');
  assert.equal(textOf(msgs[1].content), 'Hello!');
  assert.deepEqual(textParts(msgs[2].content), ['How', 'are you?']);
});

test('an image part (base64 PNG) becomes an image_url data URL', T, async () => {
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const r = await sent([{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', image: png }] }]);
  assert.deepEqual(r.body.messages, [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
      ],
    },
  ]);
});

test('image bytes (Uint8Array) are sent as base64', T, async () => {
  const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
  const r = await sent([{ role: 'user', content: [{ type: 'image', image: bytes, mediaType: 'image/png' }] }]);
  const part = r.body.messages[0].content;
  const url = Array.isArray(part) ? part[0].image_url.url : undefined;
  assert.equal(url, `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`);
});

test('modelSettings are mapped to the Chat Completions fields', T, async () => {
  const r = await sent('hi', {
    modelSettings: {
      temperature: 0.7,
      maxOutputTokens: 123,
      topP: 0.9,
      presencePenalty: 0.25,
      frequencyPenalty: -0.5,
      stopSequences: ['END', 'STOP'],
      seed: 42,
    },
  });
  const b = r.body;
  assert.equal(b.temperature, 0.7);
  assert.equal(b.max_tokens, 123);
  assert.equal(b.top_p, 0.9);
  assert.equal(b.presence_penalty, 0.25);
  assert.equal(b.frequency_penalty, -0.5);
  assert.deepEqual(b.stop, ['END', 'STOP']);
  assert.equal(b.seed, 42);
  for (const camel of ['maxOutputTokens', 'topP', 'presencePenalty', 'frequencyPenalty', 'stopSequences', 'maxRetries', 'headers']) {
    assert.ok(!(camel in b), `${camel} is not sent as is`);
  }
});

test('no settings given: none of the sampling fields is sent', T, async () => {
  const b = (await sent('hi')).body;
  for (const k of ['temperature', 'max_tokens', 'top_p', 'presence_penalty', 'frequency_penalty', 'stop', 'seed']) {
    assert.ok(!(k in b), `${k} absent`);
  }
});

test('headers: Authorization Bearer <apiKey>, model.headers, modelSettings.headers (call wins)', T, async () => {
  const srv = server.current;
  const id = uid('hdr');
  const agent = new Agent({
    id: 'h',
    model: { id: 'openai/echo', url: srv.url, apiKey: 'sk-header-test', headers: { 'x-team': 'blue', 'x-both': 'model' } },
  });
  const out = await agent.stream('hi', { modelSettings: { headers: { 'x-test-id': id, 'x-call': 'yes', 'X-Both': 'call' } } });
  await out.consumeStream();
  const [r] = requestsOf(srv, id);
  assert.equal(r.headers.authorization, 'Bearer sk-header-test');
  assert.equal(r.headers['x-team'], 'blue');
  assert.equal(r.headers['x-call'], 'yes');
  assert.equal(r.headers['x-both'], 'call', 'a call header replaces the model header of the same name, whatever its case');
});

test('model.headers can pick the server script (x-script)', T, async () => {
  const srv = server.current;
  const agent = new Agent({ id: 'xs', model: { id: 'openai/whatever', url: srv.url, apiKey: 'k', headers: { 'x-script': 'text:picked by header' } } });
  assert.equal(await (await agent.stream('hi')).text, 'picked by header');
});

test('providerOptions.openai is passed through with camelCase keys as snake_case', T, async () => {
  const r = await sent('hi', {
    providerOptions: { openai: { reasoningEffort: 'low', parallelToolCalls: false, user: 'u-1', logitBias: { 50256: -100 } }, groq: { foo: 1 } },
  });
  assert.equal(r.body.reasoning_effort, 'low');
  assert.equal(r.body.parallel_tool_calls, false);
  assert.equal(r.body.user, 'u-1');
  assert.deepEqual(r.body.logit_bias, { 50256: -100 });
  assert.ok(!('foo' in r.body), "another provider's options are not sent");
  assert.ok(!('reasoningEffort' in r.body));
});

test('defaultOptions are merged under the call options', T, async () => {
  const config = {
    instructions: 'Agent.',
    defaultOptions: {
      system: 'Default system.',
      modelSettings: { temperature: 0.1, topP: 0.5, seed: 7 },
      providerOptions: { openai: { user: 'default-user' } },
    },
  };
  // Without call options, the defaults apply.
  const plain = await sent('hi', {}, config);
  assert.deepEqual(plain.body.messages, [sys('Agent.'), sys('Default system.'), user('hi')]);
  assert.equal(plain.body.temperature, 0.1);
  assert.equal(plain.body.top_p, 0.5);
  assert.equal(plain.body.seed, 7);
  assert.equal(plain.body.user, 'default-user');
  // A call setting wins; the other default settings stay.
  const over = await sent('hi', { system: 'Call system.', modelSettings: { temperature: 0.9, maxOutputTokens: 10 } }, config);
  assert.deepEqual(over.body.messages, [sys('Agent.'), sys('Call system.'), user('hi')]);
  assert.equal(over.body.temperature, 0.9);
  assert.equal(over.body.top_p, 0.5);
  assert.equal(over.body.seed, 7);
  assert.equal(over.body.max_tokens, 10);
  assert.equal(over.body.user, 'default-user');
});

test('defaultOptions.modelSettings.headers are sent, and call headers are added to them', T, async () => {
  const srv = server.current;
  const id = uid('dh');
  const agent = new Agent({ id: 'dh', model: modelFor(srv, 'echo'), defaultOptions: { modelSettings: { headers: { 'x-test-id': id, 'x-default': 'd' } } } });
  await (await agent.stream('hi', { modelSettings: { temperature: 0 } })).consumeStream();
  const [r] = requestsOf(srv, id);
  assert.ok(r, 'default headers were sent');
  assert.equal(r.headers['x-default'], 'd');
  assert.equal(r.body.temperature, 0);
});

test('the key and base URL come from OPENAI_API_KEY / OPENAI_BASE_URL when the model is a string', T, async (t) => {
  const srv = server.current;
  const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL };
  t.after(() => {
    for (const [name, value] of [['OPENAI_API_KEY', saved.key], ['OPENAI_BASE_URL', saved.url]]) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  process.env.OPENAI_API_KEY = 'sk-from-env';
  process.env.OPENAI_BASE_URL = srv.url;
  const id = uid('env');
  const agent = new Agent({ id: 'env', model: 'openai/text:from the environment' });
  const out = await agent.stream('hi', { modelSettings: { headers: { 'x-test-id': id } } });
  assert.equal(await out.text, 'from the environment');
  assert.equal(requestsOf(srv, id)[0].headers.authorization, 'Bearer sk-from-env');
});

test('the model object apiKey wins over OPENAI_API_KEY', T, async (t) => {
  const srv = server.current;
  const saved = process.env.OPENAI_API_KEY;
  t.after(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
  });
  process.env.OPENAI_API_KEY = 'sk-env-loses';
  const id = uid('win');
  const agent = new Agent({ id: 'win', model: { id: 'openai/echo', url: srv.url, apiKey: 'sk-object-wins' } });
  await (await agent.stream('hi', { modelSettings: { headers: { 'x-test-id': id } } })).consumeStream();
  assert.equal(requestsOf(srv, id)[0].headers.authorization, 'Bearer sk-object-wins');
});

// ---------------------------------------------------------------------------------------------
// The API key never leaks

const SECRET = 'sk-CANARY-9f8e7d6c5b4a39281706';

/** Everything observable about a run, as one string: chunks, callback arguments, output, errors. */
async function observe(agent, options = {}) {
  const seen = [];
  const record = (label) => (value) => seen.push([label, value]);
  const out = await agent.stream('hello', {
    onChunk: record('onChunk'),
    onStepFinish: record('onStepFinish'),
    onFinish: record('onFinish'),
    onError: record('onError'),
    onAbort: record('onAbort'),
    ...options,
  });
  seen.push(['chunks', await collect(out.fullStream)]);
  for (const name of ['text', 'reasoningText', 'finishReason', 'usage', 'totalUsage', 'steps', 'response', 'warnings', 'toolCalls']) {
    try {
      seen.push([name, await out[name]]);
    } catch (err) {
      seen.push([name, err]);
    }
  }
  try {
    seen.push(['full', await out.getFullOutput()]);
  } catch (err) {
    seen.push(['full', err]);
  }
  return dump(seen);
}

/** JSON with Errors spelled out (name, message, status, body, stack, own props). */
function dump(value) {
  return JSON.stringify(value, (_k, v) => {
    if (v instanceof Error) return { ...v, name: v.name, message: v.message, stack: v.stack, cause: v.cause };
    return v;
  });
}

test('the API key appears in no chunk, callback argument, output or error', T, async () => {
  const srv = server.current;
  const scripts = ['echo', 'reasoning', 'error-401', 'error-500', 'in-stream-error', 'malformed-json', 'cut'];
  for (const script of scripts) {
    const agent = new Agent({ id: 'secret', model: modelFor(srv, script, { apiKey: SECRET }) });
    const text = await observe(agent, { includeRawChunks: true });
    assert.ok(!text.includes(SECRET), `the key leaked with script ${script}`);
    assert.ok(!text.includes(SECRET.slice(3)), `part of the key leaked with script ${script}`);
    assert.ok(text.length > 100, 'something was observed');
  }
  // The server did get it.
  assert.ok(srv.requests.some((r) => r.headers.authorization === `Bearer ${SECRET}`));
});

test('the API key appears in no error when the model API cannot be reached', T, async () => {
  const agent = new Agent({ id: 'secret', model: { id: 'openai/echo', url: 'http://127.0.0.1:1/v1', apiKey: SECRET } });
  const text = await observe(agent);
  assert.match(text, /APICallError/);
  assert.ok(!text.includes(SECRET));
});

test('the API key appears in no option TypeError, and not in inspect(agent)', T, async () => {
  const srv = server.current;
  const agent = new Agent({ id: 'secret', model: modelFor(srv, 'echo', { apiKey: SECRET }) });
  const err = await errorOf(() => agent.stream('hi', { modelSettings: { temperature: 'hot' } }));
  assert.ok(err instanceof TypeError);
  assert.ok(!dump(err).includes(SECRET));
  assert.ok(!inspect(agent, { depth: 5, showHidden: true }).includes(SECRET));
  assert.ok(!JSON.stringify(agent ?? null)?.includes(SECRET));
});

test('a malformed API key (inner newline) is refused at construction without echoing it', T, async () => {
  const srv = server.current;
  const key = `${SECRET}\nsecond-line`;
  assert.throws(
    () => new Agent({ id: 'secret', model: modelFor(srv, 'echo', { apiKey: key }) }),
    (err) => err instanceof TypeError && /config\.model\.apiKey/.test(err.message) && !err.message.includes(SECRET),
  );
});

// ---------------------------------------------------------------------------------------------

function textOf(content) {
  return typeof content === 'string' ? content : textParts(content).join('\n');
}

function textParts(content) {
  return typeof content === 'string' ? [content] : content.filter((p) => p.type === 'text').map((p) => p.text);
}

noUnhandledRejections();
