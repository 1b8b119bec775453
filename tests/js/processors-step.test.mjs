// processInputStep's `model`, `tools`, `providerOptions` and `structuredOutput` (SPEC §13.2:
// "changes apply to that request only") against the local model server: what each request was
// sent (path, model, tools, provider options, response format) and what the stream shows; their
// TypeErrors as ProcessorError; and what processInput sets on a message's metadata reaching memory.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, requestsOf, uid, useModelServer } from './helpers.mjs';
import { z } from 'zod';
import { createTool, InMemoryStore, LanguageDetector, Memory } from '../../pkg/index.node.js';

const server = useModelServer();

/** An agent on `script` with its own x-test-id; `requests()` are what its model was sent. */
function agentOn(script, extra = {}) {
  const id = uid('step');
  const agent = new Agent({ id: uid('agent'), model: modelFor(server.current, script, { headers: { 'x-test-id': id } }), ...extra });
  return { agent, id, requests: () => requestsOf(server.current, id) };
}

async function run(agent, input, options) {
  const out = await agent.stream(input, options);
  const chunks = await collect(out.fullStream);
  return { out, chunks };
}

/** A processor whose processInputStep returns `first(args)` on step 0 and nothing after. */
const onFirstStep = (first) => ({ id: 'swap', processInputStep: (args) => (args.stepNumber === 0 ? first(args) : undefined) });

const toolNames = (body) => (body.tools ?? []).map((t) => t.function?.name ?? t.name);
const stepStarts = (chunks) => chunks.filter((c) => c.type === 'step-start');

function weatherTool(calls) {
  return createTool({
    id: 'weather',
    description: 'The weather of a city',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execute: async ({ city }) => {
      calls.push(['weather', city]);
      return { forecast: 'sunny' };
    },
  });
}

test('a step model given as a string id resolves like new Agent({ model }) and takes that step only, with its provider\'s options', T, async () => {
  const saved = { url: process.env.GROQ_BASE_URL, key: process.env.GROQ_API_KEY };
  process.env.GROQ_BASE_URL = server.current.url;
  process.env.GROQ_API_KEY = 'groq-key';
  try {
    const calls = [];
    const marker = uid('ask');
    const { agent, requests } = agentOn('echo', { tools: { weather: weatherTool(calls) }, inputProcessors: [onFirstStep(() => ({ model: 'groq/tool-call' }))] });
    const { out, chunks } = await run(agent, `weather please ${marker}`, { providerOptions: { openai: { user: 'o-user' }, groq: { user: 'g-user' } } });
    assert.equal(out.error, undefined);
    const first = server.current.requests.filter((r) => JSON.stringify(r.body ?? {}).includes(marker) && r.body.model === 'tool-call');
    assert.equal(first.length, 1, 'step 0 went to groq/tool-call');
    assert.equal(first[0].headers.authorization, 'Bearer groq-key');
    assert.equal(first[0].body.user, 'g-user', "the step model's provider's options");
    assert.deepEqual(toolNames(first[0].body), ['weather']);
    // Step 1 is the agent's own model again, with its provider's options.
    const own = requests();
    assert.equal(own.length, 1);
    assert.equal(own[0].body.model, 'echo');
    assert.equal(own[0].body.user, 'o-user');
    assert.deepEqual(calls.map((c) => c[0]), ['weather'], 'the call of the step model ran');
    assert.equal((await out.steps).length, 2);
    assert.deepEqual(stepStarts(chunks).map((c) => c.payload.warnings ?? []), [[], []], 'no unsupported-setting warning');
  } finally {
    for (const [k, v] of [['GROQ_BASE_URL', saved.url], ['GROQ_API_KEY', saved.key]]) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});

test('a step model given as a config object reaches its own URL and API (Responses), then the next step goes back', T, async () => {
  const other = uid('other');
  const model = modelFor(server.current, 'tool-call', { headers: { 'x-test-id': other }, api: 'responses' });
  const seen = [];
  const watcher = { id: 'watch', processInputStep: ({ stepNumber, model: m }) => void seen.push([stepNumber, m]) };
  const calls = [];
  const { agent, requests } = agentOn('echo', { tools: { weather: weatherTool(calls) }, inputProcessors: [onFirstStep(() => ({ model })), watcher] });
  const { out } = await run(agent, 'weather in Paris');
  assert.equal(out.error, undefined);
  const step0 = requestsOf(server.current, other);
  assert.equal(step0.length, 1);
  assert.match(step0[0].path, /\/responses$/);
  assert.equal(step0[0].body.model, 'tool-call');
  assert.equal(requests().length, 1);
  assert.match(requests()[0].path, /\/chat\/completions$/);
  assert.equal(calls.length, 1);
  // The next processor of the list sees the step's model by name.
  assert.deepEqual(seen, [[0, 'tool-call'], [1, 'echo']]);
});

test('step tools replace the agent\'s for that step: the model is offered them, a call to one runs, the next step has the agent\'s again', T, async () => {
  const calls = [];
  const lookup = createTool({
    id: 'lookup',
    description: 'Looks a word up',
    inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    execute: async ({ word }) => {
      calls.push(['lookup', word]);
      return { meaning: 'a test' };
    },
  });
  let before = 0;
  const { agent, requests } = agentOn('tool-call', {
    tools: { weather: weatherTool(calls) },
    inputProcessors: [onFirstStep(() => ({ tools: { lookup } }))],
  });
  const { out, chunks } = await run(agent, 'what does it mean?', { hooks: { beforeToolCall: () => void (before += 1) } });
  assert.equal(out.error, undefined);
  const [first, second] = requests();
  assert.deepEqual(toolNames(first.body), ['lookup']);
  assert.deepEqual(toolNames(second.body), ['weather']);
  assert.deepEqual(calls.map((c) => c[0]), ['lookup']);
  const result = chunks.find((c) => c.type === 'tool-result');
  assert.equal(result.payload.toolName, 'lookup');
  assert.deepEqual(result.payload.result, { meaning: 'a test' });
  assert.equal(before, 1, 'the call\'s hooks still run');
  assert.match(await out.text, /The tool said/);
});

test('step providerOptions go over the call\'s in that request only', T, async () => {
  let given;
  const { agent, requests } = agentOn('tool-call', {
    tools: { weather: weatherTool([]) },
    inputProcessors: [onFirstStep((a) => {
      given = a.providerOptions;
      return { providerOptions: { openai: { user: 'step-user' } } };
    })],
  });
  const { out } = await run(agent, 'hi', { providerOptions: { openai: { user: 'call-user', serviceTier: 'flex' } } });
  assert.equal(out.error, undefined);
  assert.deepEqual(given, { openai: { user: 'call-user', serviceTier: 'flex' } });
  const [first, second] = requests();
  assert.equal(first.body.user, 'step-user');
  assert.equal(first.body.service_tier, 'flex', 'the call\'s other options stay');
  assert.equal(second.body.user, 'call-user');
});

test('a step structuredOutput gives that request the response format (JSON Schema or a zod schema)', T, async () => {
  const json = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
  for (const schema of [json, z.object({ city: z.string() })]) {
    const { agent, requests } = agentOn('tool-call', {
      tools: { weather: weatherTool([]) },
      inputProcessors: [onFirstStep(() => ({ structuredOutput: { schema } }))],
    });
    const { out } = await run(agent, 'hi');
    assert.equal(out.error, undefined);
    const [first, second] = requests();
    assert.equal(first.body.response_format.type, 'json_schema');
    assert.deepEqual(first.body.response_format.json_schema.schema.required, ['city']);
    assert.equal(first.body.response_format.json_schema.strict, true, 'strict for openai/');
    assert.equal(second.body.response_format, undefined, 'the next request has none');
  }
  // An unchanged spread of the arguments changes nothing.
  const spread = agentOn('echo', { inputProcessors: [{ id: 'spread', processInputStep: (a) => ({ ...a }) }], defaultOptions: {} });
  const s = await run(spread.agent, 'hello');
  assert.equal(await s.out.text, 'You said: hello');
  assert.equal(spread.requests()[0].body.response_format, undefined);
});

test('wrong types of model, tools and structuredOutput fail the run with a ProcessorError naming processInputStep.<key>', T, async () => {
  for (const [ret, pattern] of [
    [{ model: 42 }, /^swap: processInputStep\.model: /],
    [{ model: 'nowhere/thing' }, /^swap: processInputStep\.model/],
    [{ tools: 5 }, /^swap: processInputStep\.tools: expected an object of tools by name, got a number/],
    [{ structuredOutput: { instructions: 'x' } }, /^swap: processInputStep\.structuredOutput\.schema: is required/],
    [{ structuredOutput: { schema: { type: 'object' }, model: 'openai/gpt-4o' } }, /^swap: processInputStep\.structuredOutput\.model: /],
    [{ providerOptions: 'fast' }, /^swap: processInputStep\.providerOptions: expected an object of options by provider, got a string/],
  ]) {
    const { agent, requests } = agentOn('echo', { inputProcessors: [onFirstStep(() => ret)] });
    const { chunks } = await run(agent, 'hi');
    const error = chunks.at(-1);
    assert.equal(error.type, 'error', JSON.stringify(ret));
    assert.equal(error.payload.error.name, 'ProcessorError');
    assert.match(error.payload.error.message, pattern);
    assert.equal(requests().length, 0, 'the model was never called');
  }
});

test('what processInput sets on a message\'s metadata is stored with it: LanguageDetector\'s detection, a custom processor\'s tag', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const guardId = uid('lang');
  const detector = new LanguageDetector({ model: modelFor(server.current, 'guard', { headers: { 'x-test-id': guardId } }) });
  const tag = {
    id: 'tag',
    processInput: ({ messages }) => messages.map((m) => (m.role === 'user' ? { ...m, content: { ...m.content, metadata: { ...m.content.metadata, tagged: true } } } : m)),
  };
  const saved = console.info;
  console.info = () => {};
  try {
    const { agent } = agentOn('echo', { memory, inputProcessors: [detector, tag] });
    const french = 'Bonjour, où est la gare la plus proche ?';
    const { out } = await run(agent, french, { memory: { thread: 'th-lang', resource: 'u1' } });
    assert.equal(await out.text, `You said: ${french}`);
  } finally {
    console.info = saved;
  }
  const [user, assistant] = await memory.listMessages({ threadId: 'th-lang' });
  assert.equal(user.role, 'user');
  assert.deepEqual(user.content.metadata, {
    language_detection: { is_target_language: false, target_languages: ['English', 'en'], detected_language: 'French', iso_code: 'fr', confidence: 0.95 },
    tagged: true,
  });
  assert.equal(assistant.content.metadata, undefined);
});
