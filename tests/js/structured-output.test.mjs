// Structured output (SPEC §12) against the local model server: what each provider is sent
// (Chat response_format, Responses text.format, Gemini responseJsonSchema, Anthropic and the
// injection modes in words), the `object` chunks while the reply streams, `object-result` between
// the final step's text-end and step-finish, the outputs, and each error strategy.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { toAISdkStream, createTool, InMemoryStore, Memory } from '../../pkg/index.node.js';
import { Agent, T, collect, modelFor, noUnhandledRejections, requestsOf, types, uid, useModelServer } from './helpers.mjs';

const server = useModelServer();

const BOOK = {
  type: 'object',
  properties: { title: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
  required: ['title'],
};
const DUNE = '{"title":"Dune","tags":["a","b"]}';

/** A fresh agent whose requests the server answers with `script` (on `provider`'s own API). */
function agentOn(script, { provider = 'openai', api = 'chat', config = {} } = {}) {
  const id = uid('so');
  const headers = { 'x-test-id': id, 'x-script': script };
  const model = provider === 'openai' ? modelFor(server.current, script, { headers, api }) : { id: `${provider}`, url: server.current.url, apiKey: 'k', headers };
  return { agent: new Agent({ id: 'so-agent', model, ...config }), id };
}

/** Streams and reads to the end: { out, chunks, requests }. */
async function run(script, options, setup = {}) {
  const { agent, id } = agentOn(script, setup);
  const out = await agent.stream(setup.messages ?? 'Describe Dune.', options);
  const chunks = await collect(out.fullStream);
  return { out, chunks, requests: requestsOf(server.current, id) };
}

/** console.warn lines while `fn` runs. */
async function warnings(fn) {
  const lines = [];
  const real = console.warn;
  console.warn = (...args) => lines.push(args.map(String).join(' '));
  try {
    await fn();
  } finally {
    console.warn = real;
  }
  return lines;
}

const objectsOf = (chunks) => chunks.filter((c) => c.type === 'object').map((c) => c.object);

test('chat: object chunks come just before the delta that changed the partial; object-result after text-end, before step-finish', T, async () => {
  let finished;
  const { out, chunks, requests } = await run(`json:${DUNE}`, { structuredOutput: { schema: BOOK }, onFinish: (r) => (finished = r) });
  const t = types(chunks);
  assert.deepEqual(t.slice(-4), ['text-end', 'object-result', 'step-finish', 'finish']);
  chunks.forEach((c, i) => {
    if (c.type === 'object') assert.equal(chunks[i + 1].type, 'text-delta', `chunk ${i}`);
  });
  assert.deepEqual(objectsOf(chunks), [
    {},
    { title: 'Du' },
    { title: 'Dune' },
    { title: 'Dune', tags: [] },
    { title: 'Dune', tags: ['a'] },
    { title: 'Dune', tags: ['a', 'b'] },
  ]);
  const obj = chunks.find((c) => c.type === 'object');
  assert.deepEqual(Object.keys(obj).sort(), ['from', 'object', 'runId', 'seq', 'type'], 'top level, no payload');
  assert.equal(obj.runId, out.runId);
  assert.equal(obj.from, 'AGENT');
  const result = chunks.find((c) => c.type === 'object-result');
  assert.deepEqual(result, { type: 'object-result', seq: chunks.indexOf(result) + 1, runId: out.runId, from: 'AGENT', object: { title: 'Dune', tags: ['a', 'b'] } });
  assert.deepEqual(await out.object, { title: 'Dune', tags: ['a', 'b'] });
  assert.equal(await out.text, DUNE, 'text is the raw JSON');
  const full = await out.getFullOutput();
  assert.deepEqual(full.object, { title: 'Dune', tags: ['a', 'b'] });
  assert.equal(full.usedFallbackValue, false);
  assert.equal(out.usedFallbackValue, false);
  assert.deepEqual(finished.object, { title: 'Dune', tags: ['a', 'b'] });
  // An openai/ model: the schema made strict-compatible, strict: true.
  const sent = requests[0].body.response_format;
  assert.equal(sent.type, 'json_schema');
  assert.equal(sent.json_schema.name, 'response');
  assert.equal(sent.json_schema.strict, true);
  assert.deepEqual(sent.json_schema.schema.required, ['title', 'tags']);
  assert.deepEqual(sent.json_schema.schema.properties.tags, { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] });
  assert.equal(sent.json_schema.schema.additionalProperties, false);
});

test('objectStream replays every partial; a strict-mode null of an optional field is removed before validation', T, async () => {
  const { agent } = agentOn('json:{"title":"Dune","tags":null}');
  const out = await agent.stream('Describe Dune.', { structuredOutput: { schema: BOOK } });
  await out.consumeStream();
  const partials = await collect(out.objectStream);
  assert.deepEqual(partials.at(-1), { title: 'Dune' });
  assert.deepEqual(await out.object, { title: 'Dune' });
  assert.throws(() => out.objectStream, /objectStream can be read once/);
});

test('objectStream created after a long reply replays at most 64 partials: from the whole reply, in order, ending with the final one', T, async () => {
  const { JSON_DELTAS_SCHEMA } = await import('../server/json-scripts.mjs');
  const { agent } = agentOn('json-deltas:600');
  const out = await agent.stream('Count.', { structuredOutput: { schema: JSON_DELTAS_SCHEMA } });
  const chunks = await collect(out.fullStream);
  const live = objectsOf(chunks);
  assert.ok(live.length > 250, `every partial went out live (${live.length})`);
  const replayed = await collect(out.objectStream);
  assert.ok(replayed.length <= 64 && replayed.length >= 32, `replayed ${replayed.length}`);
  const final = await out.object;
  assert.equal(final.items.length, 299);
  assert.deepEqual(replayed.at(-1), live.at(-1), 'the newest partial is kept');
  assert.ok(replayed[0].items.length < 20, `the replay starts early in the reply (${replayed[0].items.length} items)`);
  const sizes = replayed.map((p) => p.items.length);
  assert.deepEqual([...sizes].sort((a, b) => a - b), sizes, 'in order');
  for (const p of replayed) assert.ok(live.some((l) => JSON.stringify(l) === JSON.stringify(p)), 'each one a partial that went out');
});

test('responses: the schema goes in text.format; instructions become its description', T, async () => {
  const { out, requests } = await run('json', { structuredOutput: { schema: BOOK, instructions: 'The book and its tags.' } }, { api: 'responses' });
  const format = requests[0].body.text.format;
  assert.equal(format.type, 'json_schema');
  assert.equal(format.name, 'response');
  assert.equal(format.description, 'The book and its tags.');
  assert.equal(format.strict, true);
  assert.deepEqual(await out.object, { title: 'example', tags: ['example'] }, 'the script answered from the schema it was sent');
});

test('google: generationConfig.responseMimeType and responseJsonSchema, the schema as given', T, async () => {
  const { out, requests } = await run('gemini-json', { structuredOutput: { schema: BOOK } }, { provider: 'google/gemini-2.5-flash' });
  const config = requests[0].body.generationConfig;
  assert.equal(config.responseMimeType, 'application/json');
  assert.deepEqual(config.responseJsonSchema, BOOK);
  assert.deepEqual(await out.object, { title: 'example' });
});

test('anthropic: the schema in words as the last part of the latest user message; tools stay, no json tool', T, async () => {
  const weather = createTool({ id: 'weather', description: 'w', inputSchema: { type: 'object', properties: { city: { type: 'string' } } }, execute: async () => ({}) });
  const { out, requests } = await run('anthropic-json', { structuredOutput: { schema: BOOK } }, { provider: 'anthropic/claude-test', config: { tools: { weather } } });
  const body = requests[0].body;
  const last = body.messages.at(-1);
  assert.equal(last.role, 'user');
  const texts = (typeof last.content === 'string' ? [{ text: last.content }] : last.content).map((p) => p.text);
  assert.equal(texts[0], 'Describe Dune.');
  assert.match(texts.at(-1), /matches this JSON Schema:\n\{"type":"object"/);
  assert.match(texts.at(-1), /JSON only/);
  assert.deepEqual(body.tools.map((t) => t.name), ['weather']);
  assert.deepEqual(await out.object, { title: 'example' });
});

test("jsonPromptInjection 'system' / true / 'inline': no response_format, the schema in words where asked", T, async () => {
  for (const mode of ['system', true]) {
    const { out, requests } = await run('json', { instructions: 'Be brief.', structuredOutput: { schema: BOOK, jsonPromptInjection: mode } });
    const body = requests[0].body;
    assert.equal(body.response_format, undefined, String(mode));
    assert.equal(body.messages[0].role, 'system');
    assert.match(body.messages[0].content, /^Be brief\.\n\nYour response must be a single JSON value that matches this JSON Schema:\n\{/);
    assert.deepEqual(await out.object, { title: 'example', tags: ['example'] });
  }
  const { requests } = await run('json', { structuredOutput: { schema: BOOK, jsonPromptInjection: 'inline', instructions: 'Title and tags, please.' } });
  const body = requests[0].body;
  assert.equal(body.response_format, undefined);
  const user = body.messages.at(-1);
  assert.equal(user.role, 'user');
  assert.deepEqual(user.content[0], { type: 'text', text: 'Describe Dune.' });
  assert.match(user.content[1].text, /Title and tags, please\./);
  assert.doesNotMatch(user.content[1].text, /"properties"/, 'instructions replace the schema dump');
});

test('tools stay on every step; prose in the tool step never fails the run', T, async () => {
  const calls = [];
  const weather = createTool({ id: 'weather', description: 'w', inputSchema: { type: 'object', properties: { city: { type: 'string' } } }, execute: async (a) => (calls.push(a), { c: 18 }) });
  const { out, chunks, requests } = await run('json-tool:{"title":"Paris"}', { structuredOutput: { schema: BOOK } }, { config: { tools: { weather } } });
  assert.equal(calls.length, 1);
  assert.equal(requests.length, 2);
  for (const r of requests) {
    assert.equal(r.body.response_format.type, 'json_schema');
    assert.equal(r.body.tools[0].function.name, 'weather');
  }
  assert.ok(!types(chunks).includes('error'), types(chunks).join(','));
  assert.equal(types(chunks).filter((t) => t === 'object-result').length, 1);
  assert.deepEqual(await out.object, { title: 'Paris' });
});

test("strict: an error chunk in place of object-result; object and getFullOutput reject, text resolves, onError once", T, async () => {
  const errors = [];
  const { out, chunks } = await run('json:Sure, here it is.', { structuredOutput: { schema: BOOK }, onError: ({ error }) => errors.push(error) });
  assert.deepEqual(types(chunks).slice(-4), ['text-end', 'error', 'step-finish', 'finish']);
  const { error } = chunks.find((c) => c.type === 'error').payload;
  assert.equal(error.name, 'StructuredOutputError');
  assert.equal(error.code, 'STRUCTURED_OUTPUT_PARSE_FAILED');
  assert.equal(error.id, 'STRUCTURED_OUTPUT_PARSE_FAILED');
  assert.deepEqual(error.details, { value: 'Sure, here it is.' });
  assert.equal(chunks.at(-1).payload.stepResult.reason, 'stop');
  await assert.rejects(out.object, (e) => e instanceof Error && e.name === 'StructuredOutputError' && e.code === 'STRUCTURED_OUTPUT_PARSE_FAILED' && e.details.value === 'Sure, here it is.');
  await assert.rejects(out.getFullOutput(), { name: 'StructuredOutputError' });
  assert.equal(await out.text, 'Sure, here it is.');
  assert.equal((await out.steps).length, 1);
  assert.equal(errors.length, 1);
  assert.equal(errors[0].code, 'STRUCTURED_OUTPUT_PARSE_FAILED');
});

test('a value that breaks the schema: one line per issue; a truncated reply: STRUCTURED_OUTPUT_TRUNCATED', T, async () => {
  const { out } = await run('json:{"tags":[1]}', { structuredOutput: { schema: BOOK, jsonPromptInjection: true } });
  const e = await out.object.catch((x) => x);
  assert.equal(e.code, 'STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED');
  const lines = e.message.split('\n');
  assert.equal(lines[0], 'Structured output validation failed:');
  assert.ok(lines.includes('- tags[0]: expected a string, got a number'), e.message);
  assert.ok(lines.some((l) => l.startsWith('- root: ') && l.includes('title')), e.message);
  const cut = await run('length', { structuredOutput: { schema: BOOK } });
  await assert.rejects(cut.out.object, { code: 'STRUCTURED_OUTPUT_TRUNCATED' });
  assert.equal(await cut.out.finishReason, 'length');
});

test("warn: one console.warn with the message, no object-result, object undefined", T, async () => {
  let result;
  const lines = await warnings(async () => {
    result = await run('json:not json at all', { structuredOutput: { schema: BOOK, errorStrategy: 'warn' } });
  });
  const mine = lines.filter((l) => l.includes('Structured output'));
  assert.equal(mine.length, 1, lines.join('\n'));
  assert.match(mine[0], /could not be parsed/);
  assert.ok(!types(result.chunks).includes('object-result') && !types(result.chunks).includes('error'));
  assert.equal(await result.out.object, undefined);
  assert.equal(result.out.usedFallbackValue, false);
});

test('fallback: object-result with the fallback value and metadata.fallback; usedFallbackValue', T, async () => {
  const { out, chunks } = await run('json:{"title":7}', { structuredOutput: { schema: BOOK, errorStrategy: 'fallback', fallbackValue: { title: 'unknown' } } });
  const result = chunks.find((c) => c.type === 'object-result');
  assert.deepEqual(result.object, { title: 'unknown' });
  assert.deepEqual(result.metadata, { fallback: true });
  assert.deepEqual(await out.object, { title: 'unknown' });
  assert.equal(out.usedFallbackValue, true);
  assert.equal((await out.getFullOutput()).usedFallbackValue, true);
});

test('an array schema is sent wrapped in { elements } and unwrapped; elementStream gives each element once', T, async () => {
  const schema = { type: 'array', items: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } };
  const { agent, id } = agentOn('json:{"elements":[{"n":1},{"n":2},{"n":3}]}');
  const out = await agent.stream('Count.', { structuredOutput: { schema } });
  const [elements, chunks] = await Promise.all([collect(out.elementStream), collect(out.fullStream)]);
  assert.deepEqual(elements, [{ n: 1 }, { n: 2 }, { n: 3 }]);
  assert.deepEqual(await out.object, [{ n: 1 }, { n: 2 }, { n: 3 }]);
  assert.ok(objectsOf(chunks).every(Array.isArray), 'partials are unwrapped too');
  const sent = requestsOf(server.current, id)[0].body.response_format.json_schema.schema;
  assert.deepEqual(sent.required, ['elements']);
  assert.equal(sent.properties.elements.type, 'array');
});

test('a string enum is sent wrapped in { result }; partials show the one value the prefix matches', T, async () => {
  const schema = { type: 'string', enum: ['positive', 'negative', 'neutral'] };
  const { out, chunks, requests } = await run('json:{"result":"neutral"}', { structuredOutput: { schema } });
  assert.deepEqual(requests[0].body.response_format.json_schema.schema.properties.result, { type: 'string', enum: ['positive', 'negative', 'neutral'] });
  assert.equal(await out.object, 'neutral');
  // Deltas '{"resu', 'lt":"n', 'eutral', '"}': "n" could be negative or neutral, "neutral" is one.
  assert.deepEqual(objectsOf(chunks), ['n', 'neutral']);
});

test('a zod schema validates itself: its transforms and defaults shape the object', T, async () => {
  const schema = z.object({ title: z.string().transform((s) => s.toUpperCase()), pages: z.number().default(100) });
  const { out, requests } = await run('json:{"title":"Dune"}', { structuredOutput: { schema, errorStrategy: 'strict' } });
  assert.deepEqual(await out.object, { title: 'DUNE', pages: 100 });
  assert.equal(requests[0].body.response_format.json_schema.schema.type, 'object');
  const bad = await run('json:{"title":5}', { structuredOutput: { schema } });
  const e = await bad.out.object.catch((x) => x);
  assert.equal(e.code, 'STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED');
  assert.match(e.message, /^Structured output validation failed:\n- title: /);
});

test('the deprecated output means structuredOutput: { schema } and warns once per process; structuredOutput wins over it', T, async () => {
  let first;
  const lines = await warnings(async () => {
    first = await run('json:{"title":"Dune"}', { output: BOOK });
    await run('json:{"title":"Dune"}', { output: BOOK });
  });
  assert.deepEqual(await first.out.object, { title: 'Dune' });
  assert.equal(first.requests[0].body.response_format.type, 'json_schema');
  assert.equal(lines.filter((l) => l.includes('`output` is deprecated')).length, 1, lines.join('\n'));
  const both = await run('json:["x"]', { output: BOOK, structuredOutput: { schema: { type: 'array', items: { type: 'string' } } } });
  assert.deepEqual(await both.out.object, ['x']);
});

test('defaultOptions.structuredOutput applies to every call; structuredOutput.providerOptions merge over the call\'s', T, async () => {
  const { agent, id } = agentOn('json:{"title":"Dune"}', { config: { defaultOptions: { structuredOutput: { schema: BOOK } } } });
  const out = await agent.stream('x', { providerOptions: { openai: { user: 'u1' } } });
  assert.deepEqual(await out.object, { title: 'Dune' });
  const second = await agent.stream('x', { structuredOutput: { schema: BOOK, providerOptions: { openai: { seed: 7 } } }, providerOptions: { openai: { user: 'u2' } } });
  await second.consumeStream();
  const [a, b] = requestsOf(server.current, id);
  assert.equal(a.body.user, 'u1');
  assert.equal(a.body.response_format.type, 'json_schema');
  assert.equal(b.body.user, 'u2');
  assert.equal(b.body.seed, 7);
});

test('toAISdkStream drops object chunks and maps object-result to a data-object part', T, async () => {
  const { agent } = agentOn(`json:${DUNE}`);
  const out = await agent.stream('x', { structuredOutput: { schema: BOOK } });
  const parts = await collect(toAISdkStream(out, { from: 'agent' }));
  assert.ok(!parts.some((p) => p.type === 'object'));
  const data = parts.filter((p) => p.type === 'data-object');
  assert.deepEqual(data, [{ type: 'data-object', data: { title: 'Dune', tags: ['a', 'b'] } }]);
});

test('structuredOutput.model: the agent answers in prose, then the structuring model makes the object; its usage is in totalUsage', T, async () => {
  const sid = uid('structurer');
  const structurer = { id: 'openai/json', url: server.current.url, apiKey: 'k', api: 'chat', headers: { 'x-test-id': sid, 'x-script': 'json' } };
  const { out, chunks, requests } = await run('text:Dune is a novel by Frank Herbert.', { structuredOutput: { schema: BOOK, model: structurer } });
  const t = types(chunks);
  const end = t.indexOf('text-end');
  assert.deepEqual(t.slice(end + 1, -2).filter((x) => x !== 'object'), ['object-result'], t.join(','));
  assert.ok(t.slice(end + 1).includes('object'), 'its partial objects go into the main stream');
  assert.deepEqual(t.slice(-2), ['step-finish', 'finish']);
  assert.equal(t.filter((x) => x === 'text-start').length, 1, 'the structuring call\'s text is not streamed');
  const result = chunks.find((c) => c.type === 'object-result');
  assert.equal(result.runId, out.runId);
  assert.deepEqual(result.metadata, { from: 'structured-output' });
  assert.deepEqual(await out.object, { title: 'example', tags: ['example'] });
  assert.equal(await out.text, 'Dune is a novel by Frank Herbert.');
  // The main model: no response format, told another model extracts the fields.
  assert.equal(requests[0].body.response_format, undefined);
  assert.match(requests[0].body.messages[0].content, /^Another model will extract the fields of this JSON Schema/);
  // The structuring call: the schema natively (strict, an openai/ model), the run in sections.
  const [s] = requestsOf(server.current, sid);
  assert.equal(s.body.response_format.json_schema.strict, true);
  assert.match(s.body.messages[0].content, /^You are a data structuring assistant/);
  assert.equal(s.body.messages[1].content, '## Final answer\nDune is a novel by Frank Herbert.');
  const [usage, total] = [await out.usage, await out.totalUsage];
  assert.ok(total.totalTokens > usage.totalTokens, JSON.stringify({ usage, total }));
});

test('memory stores the assistant text as streamed (the JSON text), nothing else', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const thread = uid('thread');
  const { out } = await run('json:{"title":"Dune"}', { structuredOutput: { schema: BOOK }, memory: { thread, resource: 'u1' } }, { config: { memory } });
  assert.deepEqual(await out.object, { title: 'Dune' });
  const stored = await memory.listMessages({ threadId: thread, format: 'ui' });
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant']);
  const parts = stored[1].parts.filter((p) => p.type !== 'step-start');
  assert.deepEqual(parts.map((p) => [p.type, p.text]), [['text', '{"title":"Dune"}']]);
});

test('an AI SDK model object gets the schema as its responseFormat call option', T, async () => {
  const model = createOpenAICompatible({ name: 'local', baseURL: server.current.url, apiKey: 'k', supportsStructuredOutputs: true }).chatModel('json:{"title":"Dune"}');
  const agent = new Agent({ id: uid('sdk'), model });
  const out = await agent.stream('x', { structuredOutput: { schema: BOOK } });
  assert.deepEqual(await out.object, { title: 'Dune' });
  const sent = server.current.requests.at(-1).body.response_format;
  assert.equal(sent.type, 'json_schema');
  assert.deepEqual(sent.json_schema.schema, BOOK);
});

test('structuredOutput.useAgent: the structuring call also gets the memory thread\'s history', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const thread = uid('thread');
  const sid = uid('structurer');
  const structurer = { id: 'openai/json', url: server.current.url, apiKey: 'k', api: 'chat', headers: { 'x-test-id': sid, 'x-script': 'json' } };
  const { agent } = agentOn('text:Dune is by Frank Herbert.', { config: { memory } });
  await (await agent.stream('Who wrote Dune?', { memory: { thread, resource: 'u1' } })).consumeStream();
  const out = await agent.stream('Describe it.', { memory: { thread, resource: 'u1' }, structuredOutput: { schema: BOOK, model: structurer, useAgent: true } });
  assert.deepEqual(await out.object, { title: 'example', tags: ['example'] });
  assert.deepEqual((await out.warnings).map((w) => w.setting), [], 'useAgent is honoured');
  const [s] = requestsOf(server.current, sid);
  assert.deepEqual(s.body.messages.map((m) => m.role), ['system', 'user', 'assistant', 'user']);
  assert.equal(s.body.messages[1].content, 'Who wrote Dune?');
  assert.equal(s.body.messages[2].content, 'Dune is by Frank Herbert.');
});

test('bad structuredOutput options are TypeErrors naming the field', T, async () => {
  const { agent } = agentOn('json');
  const cases = [
    [{ structuredOutput: 'yes' }, /options\.structuredOutput: expected \{ schema/],
    [{ structuredOutput: {} }, /options\.structuredOutput\.schema: is required/],
    [{ structuredOutput: { schema: 5 } }, /options\.structuredOutput\.schema/],
    [{ structuredOutput: { schema: BOOK, errorStrategy: 'loud' } }, /options\.structuredOutput\.errorStrategy: expected 'strict', 'warn' or 'fallback'/],
    [{ structuredOutput: { schema: BOOK, errorStrategy: 'fallback' } }, /options\.structuredOutput\.fallbackValue: is required/],
    [{ structuredOutput: { schema: BOOK, jsonPromptInjection: 'everywhere' } }, /options\.structuredOutput\.jsonPromptInjection/],
    [{ structuredOutput: { schema: BOOK, instructions: 3 } }, /options\.structuredOutput\.instructions/],
    [{ structuredOutput: { schema: BOOK, useAgent: 'yes' } }, /options\.structuredOutput\.useAgent: expected a boolean/],
    [{ structuredOutput: { schema: BOOK, model: 5 } }, /options\.structuredOutput\.model: expected 'provider\/model'/],
    [{ structuredOutput: { schema: BOOK, model: 'nope/x' } }, /options\.structuredOutput\.model/],
    [{ output: 'schema' }, /options\.output/],
  ];
  for (const [options, message] of cases) {
    await assert.rejects(async () => agent.stream('x', options), (e) => e instanceof TypeError && message.test(e.message), JSON.stringify(options));
  }
  const withDefaults = agentOn('json', { config: { defaultOptions: { structuredOutput: { schema: BOOK, errorStrategy: 1 } } } }).agent;
  await assert.rejects(async () => withDefaults.stream('x'), (e) => e instanceof TypeError && /config\.defaultOptions\.structuredOutput\.errorStrategy/.test(e.message));
});

noUnhandledRejections();
