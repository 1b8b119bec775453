// Tools end to end (SPEC §5): a JSON-Schema tool over two steps, a zod-typed tool, every shape of
// streamed tool call the server can send, failing tools, results that cannot be serialised, bad
// tool definitions — and the same agent streaming normally afterwards.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { Agent, T, keys, modelFor, noUnhandledRejections, requestsOf, types, uid, useModelServer } from './helpers.mjs';
import {
  WEATHER_SCHEMA,
  argsText,
  assistantToolCalls,
  createTool,
  forecast,
  ofType,
  only,
  runAgent,
  toolMessages,
  toolNames,
  weatherDef,
} from './tools-helpers.mjs';

const server = useModelServer();

// ---------------------------------------------------------------------------------------------
// A weather tool with a JSON Schema, end to end

test('weather tool: the exact chunk order over two steps (tool step, then the answer)', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const { chunks } = await runAgent(server.current, 'tool-call', { tools: { weather }, messages: 'What is the weather in Paris?' });
  assert.deepEqual(types(chunks), [
    'start',
    // step 1: the model streams one call, its arguments in five pieces; the tool runs
    'step-start',
    'tool-call-input-streaming-start',
    'tool-call-delta',
    'tool-call-delta',
    'tool-call-delta',
    'tool-call-delta',
    'tool-call-delta',
    'tool-call-input-streaming-end',
    'tool-call',
    'tool-result',
    'step-finish',
    // step 2: the model answers with the result
    'step-start',
    'text-start',
    'text-delta',
    'text-delta',
    'text-delta',
    'text-delta',
    'text-end',
    'step-finish',
    'finish',
  ]);
  assert.equal(calls.length, 1, 'execute ran once');
  assert.deepEqual(calls[0].input, { city: 'Paris' });

  const call = only(chunks, 'tool-call');
  const { toolCallId } = call.payload;
  assert.match(toolCallId, /^call_/);
  assert.deepEqual(call.payload, { toolCallId, toolName: 'weather', args: { city: 'Paris' } });
  assert.deepEqual(only(chunks, 'tool-call-input-streaming-start').payload, { toolCallId, toolName: 'weather' });
  assert.deepEqual(only(chunks, 'tool-call-input-streaming-end').payload, { toolCallId });
  for (const d of ofType(chunks, 'tool-call-delta')) assert.deepEqual(keys(d.payload), ['argsTextDelta', 'toolCallId', 'toolName']);
  assert.equal(argsText(chunks, toolCallId), '{"city":"Paris"}');
  const result = only(chunks, 'tool-result');
  assert.deepEqual(result.payload, { toolCallId, toolName: 'weather', args: { city: 'Paris' }, result: forecast('Paris') });
  assert.equal(result.from, 'AGENT');

  const [first, second] = ofType(chunks, 'step-finish');
  assert.equal(first.payload.stepResult.reason, 'tool-calls');
  assert.equal(first.payload.stepResult.isContinued, true);
  assert.deepEqual(first.payload.output.toolCalls, [call.payload]);
  assert.equal(second.payload.stepResult.reason, 'stop');
  assert.equal(second.payload.stepResult.isContinued, false);
  assert.equal(chunks.at(-1).payload.stepResult.reason, 'stop');
});

test('weather tool: the first request describes the tool; the second carries the call and its result', T, async () => {
  const weather = createTool(weatherDef());
  const { requests, chunks } = await runAgent(server.current, 'tool-call', { tools: { weather }, messages: 'What is the weather in Paris?' });
  assert.equal(requests.length, 2, 'two model requests');
  const [one, two] = requests.map((r) => r.body);
  assert.deepEqual(one.tools, [
    { type: 'function', function: { name: 'weather', description: 'Current weather for a city', parameters: WEATHER_SCHEMA } },
  ]);
  assert.deepEqual(one.messages, [{ role: 'user', content: 'What is the weather in Paris?' }]);

  const { toolCallId } = only(chunks, 'tool-call').payload;
  assert.equal(two.messages.length, 3);
  assert.deepEqual(two.messages[0], one.messages[0]);
  const assistant = two.messages[1];
  assert.equal(assistant.role, 'assistant');
  assert.ok(assistant.content == null || assistant.content === '', 'no text in the tool-call message');
  assert.deepEqual(assistant.tool_calls, [{ id: toolCallId, type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }]);
  assert.deepEqual(keys(two.messages[2]), ['content', 'role', 'tool_call_id']);
  assert.equal(two.messages[2].role, 'tool');
  assert.equal(two.messages[2].tool_call_id, toolCallId);
  assert.equal(typeof two.messages[2].content, 'string', 'content is a JSON string');
  assert.deepEqual(JSON.parse(two.messages[2].content), forecast('Paris'));
  assert.deepEqual(two.tools, one.tools, 'the tools are offered again');
});

test('weather tool: the final text and the toolCalls / toolResults / steps / totalUsage aggregates', T, async () => {
  const weather = createTool(weatherDef());
  const { out, chunks } = await runAgent(server.current, 'tool-call', { tools: { weather } });
  const text = await out.text;
  assert.match(text, /^The tool said: \{/);
  assert.deepEqual(JSON.parse(text.slice('The tool said: '.length)), forecast('Paris'), 'the model quoted the result');
  assert.equal(ofType(chunks, 'text-delta').map((c) => c.payload.text).join(''), text);
  assert.equal(await out.finishReason, 'stop');

  const { toolCallId } = only(chunks, 'tool-call').payload;
  const call = { toolCallId, toolName: 'weather', args: { city: 'Paris' } };
  const result = { ...call, result: forecast('Paris') };
  assert.deepEqual(await out.toolCalls, [call]);
  assert.deepEqual(await out.toolResults, [result]);

  const steps = await out.steps;
  assert.equal(steps.length, 2);
  assert.deepEqual(steps[0].toolCalls, [call]);
  assert.deepEqual(steps[0].toolResults, [result]);
  assert.equal(steps[0].finishReason, 'tool-calls');
  assert.equal(steps[0].text, '');
  assert.deepEqual(steps[1].toolCalls, []);
  assert.deepEqual(steps[1].toolResults, []);
  assert.equal(steps[1].finishReason, 'stop');
  assert.equal(steps[1].text, text);

  const total = await out.totalUsage;
  for (const k of ['inputTokens', 'outputTokens', 'totalTokens']) {
    assert.equal(total[k], steps[0].usage[k] + steps[1].usage[k], `totalUsage.${k} is the sum of the steps`);
  }
  assert.deepEqual(await out.usage, steps[1].usage, 'usage is the last step');
  assert.deepEqual(chunks.at(-1).payload.totalUsage, total);

  const full = await out.getFullOutput();
  assert.deepEqual(full.toolCalls, [call]);
  assert.deepEqual(full.toolResults, [result]);
});

test(
  'results and echoed arguments keep their key order (JSON.stringify of the result, the model\'s own arguments text)',
  { ...T },
  async () => {
    const saver = createTool({
      id: 'saver',
      description: 'saves',
      inputSchema: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } } },
      execute: async () => forecast('Paris'),
    });
    const { requests } = await runAgent(server.current, 'call:saver:{"name":"Ann","age":30}', { tools: { saver } });
    const body = requests[1].body;
    assert.equal(toolMessages(body)[0].content, JSON.stringify(forecast('Paris')));
    assert.equal(assistantToolCalls(body).tool_calls[0].function.arguments, '{"name":"Ann","age":30}');
  },
);

test('createTool returns the definition, so execute stays callable directly', T, async () => {
  const def = weatherDef();
  const tool = createTool(def);
  assert.equal(tool.id, 'weather');
  assert.equal(typeof tool.execute, 'function');
  assert.deepEqual(await tool.execute({ city: 'Oslo' }, {}), forecast('Oslo'));
});

test('the tool is named by its key in `tools`, not by its id', T, async () => {
  const lookup = createTool(weatherDef([], { id: 'internal-weather-id' }));
  const { requests, out } = await runAgent(server.current, 'tool-call', { tools: { lookup } });
  assert.deepEqual(toolNames(requests[0].body), ['lookup']);
  assert.equal((await out.toolCalls)[0].toolName, 'lookup');
  assert.deepEqual((await out.toolResults)[0].result, forecast('Paris'));
});

// ---------------------------------------------------------------------------------------------
// JSON Schema argument checks

test('JSON Schema: arguments that break the schema never reach execute; the model is told what was wrong', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const cases = [
    ['{"city":"Paris","unit":"kelvin"}', /\$\.unit/],
    ['{"unit":"celsius"}', /city/],
    ['{"city":42}', /\$\.city/],
    ['{"city":"Paris","wind":true}', /wind/],
  ];
  for (const [args, names] of cases) {
    const { chunks, requests, out } = await runAgent(server.current, `call:weather:${args}`, { tools: { weather } });
    const err = only(chunks, 'tool-error');
    assert.deepEqual(keys(err.payload), ['args', 'error', 'toolCallId', 'toolName']);
    assert.deepEqual(err.payload.args, JSON.parse(args));
    assert.equal(err.payload.error.name, 'ToolError');
    assert.match(err.payload.error.message, /weather/, `${args}: names the tool`);
    assert.match(err.payload.error.message, names, `${args}: names the offending field`);
    assert.equal(ofType(chunks, 'tool-result').length, 0);
    assert.deepEqual(toolMessages(requests[1].body), [
      { role: 'tool', tool_call_id: err.payload.toolCallId, content: err.payload.error.message },
    ]);
    assert.equal(await out.finishReason, 'stop', 'the run goes on');
  }
  assert.equal(calls.length, 0, 'execute never ran');
});

// ---------------------------------------------------------------------------------------------
// A zod-typed tool

const Person = z.object({
  name: z.string().min(1).describe('Full name'),
  age: z.number().int().nonnegative(),
  tags: z.array(z.string()).optional(),
  unit: z.enum(['metric', 'imperial']).default('metric'),
});

function personTool(calls) {
  return createTool({
    id: 'save-person',
    description: 'Save a person to the address book',
    inputSchema: Person,
    execute: async (input) => {
      calls.push(input);
      return { saved: input.name, age: input.age, unit: input.unit };
    },
  });
}

test('zod tool: the model sees the schema zod describes; a valid call reaches execute parsed by zod', T, async () => {
  const calls = [];
  const savePerson = personTool(calls);
  const { requests, chunks, out } = await runAgent(server.current, 'call:savePerson:{"name":"Ann Lee","age":34}', {
    tools: { savePerson },
  });
  const parameters = requests[0].body.tools[0].function.parameters;
  const zodJson = Person['~standard'].jsonSchema.input({ target: 'draft-2020-12' });
  assert.deepEqual(parameters.properties, zodJson.properties);
  assert.deepEqual(parameters.required, ['name', 'age']);
  assert.equal(parameters.properties.name.description, 'Full name');

  assert.deepEqual(calls, [{ name: 'Ann Lee', age: 34, unit: 'metric' }], 'zod applied the default');
  const result = only(chunks, 'tool-result');
  assert.deepEqual(result.payload.args, { name: 'Ann Lee', age: 34 }, 'args are what the model sent');
  assert.deepEqual(result.payload.result, { saved: 'Ann Lee', age: 34, unit: 'metric' });
  assert.deepEqual(JSON.parse((await out.text).slice('The tool said: '.length)), { saved: 'Ann Lee', age: 34, unit: 'metric' });
});

test('zod tool: invalid arguments → tool-error naming the path, execute not called, the model told', T, async () => {
  const calls = [];
  const savePerson = personTool(calls);
  const cases = [
    ['{"name":"Ann","age":"old"}', '$.age'],
    ['{"name":"Ann","age":3.5}', '$.age'],
    ['{"age":30}', '$.name'],
    ['{"name":"Ann","age":30,"tags":["ok",7]}', '$.tags[1]'],
  ];
  for (const [args, path] of cases) {
    const { chunks, requests, out } = await runAgent(server.current, `call:savePerson:${args}`, { tools: { savePerson } });
    const err = only(chunks, 'tool-error');
    assert.equal(err.payload.toolName, 'savePerson');
    assert.deepEqual(err.payload.args, JSON.parse(args));
    assert.equal(err.payload.error.name, 'ToolError');
    assert.ok(err.payload.error.message.includes(path), `${args}: "${err.payload.error.message}" names ${path}`);
    const [toolMessage] = toolMessages(requests[1].body);
    assert.equal(toolMessage.tool_call_id, err.payload.toolCallId);
    assert.ok(toolMessage.content.includes(path), 'the model is told the path');
    assert.equal(await out.finishReason, 'stop');
    const [result] = await out.toolResults;
    assert.equal(result.isError, true);
  }
  assert.deepEqual(calls, [], 'execute never ran');
});

test('zod tool: an async refinement is awaited before execute', T, async () => {
  const calls = [];
  const visit = createTool({
    id: 'visit',
    description: 'Plan a visit',
    inputSchema: z.object({
      city: z.string().refine(async (city) => {
        await delay(5);
        return city !== 'Atlantis';
      }, 'no such city'),
    }),
    execute: async (input) => {
      calls.push(input);
      return { planned: input.city };
    },
  });
  const bad = await runAgent(server.current, 'call:visit:{"city":"Atlantis"}', { tools: { visit } });
  assert.match(only(bad.chunks, 'tool-error').payload.error.message, /\$\.city: no such city/);
  const good = await runAgent(server.current, 'call:visit:{"city":"Rome"}', { tools: { visit } });
  assert.deepEqual(only(good.chunks, 'tool-result').payload.result, { planned: 'Rome' });
  assert.deepEqual(calls, [{ city: 'Rome' }]);
});

test('any Standard Schema works: its validate() decides, its value reaches execute, its jsonSchema is sent', T, async () => {
  const calls = [];
  const Doubler = {
    '~standard': {
      version: 1,
      vendor: 'hand-made',
      validate: (v) => (typeof v?.n === 'number' ? { value: { n: v.n * 2 } } : { issues: [{ message: 'n must be a number', path: ['n'] }] }),
      jsonSchema: { input: () => ({ type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }) },
    },
  };
  const double = createTool({ id: 'double', description: 'doubles', inputSchema: Doubler, execute: async (input) => (calls.push(input), input) });
  const ok = await runAgent(server.current, 'call:double:{"n":2}', { tools: { double } });
  assert.deepEqual(ok.requests[0].body.tools[0].function.parameters, { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] });
  assert.deepEqual(calls, [{ n: 4 }]);
  const bad = await runAgent(server.current, 'call:double:{"n":"two"}', { tools: { double } });
  assert.match(only(bad.chunks, 'tool-error').payload.error.message, /\$\.n: n must be a number/);
  assert.equal(calls.length, 1);
  // One that cannot describe itself to the model is refused up front.
  const blind = { '~standard': { version: 1, vendor: 'blind', validate: (v) => ({ value: v }) } };
  assert.throws(
    () => createTool({ id: 'blind', description: 'd', inputSchema: blind, execute: () => 1 }),
    (err) => err instanceof TypeError && /inputSchema/.test(err.message) && /JSON Schema/.test(err.message),
  );
});

// ---------------------------------------------------------------------------------------------
// Every shape of streamed tool call

test('arguments split at odd places are joined exactly once', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const { chunks } = await runAgent(server.current, 'tool-call', { tools: { weather } });
  const deltas = ofType(chunks, 'tool-call-delta').map((c) => c.payload.argsTextDelta);
  assert.deepEqual(deltas, ['{', '"cit', 'y"', ':"Paris', '"}']);
  assert.deepEqual(calls.map((c) => c.input), [{ city: 'Paris' }]);
});

test('interleaved parallel calls: each call gets its own pieces; results go back in call order', T, async () => {
  const finished = [];
  const weather = createTool(
    weatherDef([], {
      execute: async ({ city }) => {
        await delay(city === 'Paris' ? 60 : 0); // the first call finishes last
        finished.push(city);
        return forecast(city);
      },
    }),
  );
  const { chunks, requests, out } = await runAgent(server.current, 'tool-calls-interleaved', { tools: { weather } });
  const callChunks = ofType(chunks, 'tool-call');
  assert.equal(callChunks.length, 2);
  const [paris, london] = callChunks.map((c) => c.payload);
  assert.deepEqual([paris.args, london.args], [{ city: 'Paris' }, { city: 'London' }]);
  assert.notEqual(paris.toolCallId, london.toolCallId);
  assert.equal(argsText(chunks, paris.toolCallId), '{"city":"Paris"}');
  assert.equal(argsText(chunks, london.toolCallId), '{"city":"London"}');
  assert.deepEqual(finished, ['London', 'Paris']);

  const body = requests[1].body;
  assert.deepEqual(
    assistantToolCalls(body).tool_calls.map((c) => [c.id, c.function.arguments]),
    [
      [paris.toolCallId, '{"city":"Paris"}'],
      [london.toolCallId, '{"city":"London"}'],
    ],
  );
  assert.deepEqual(
    toolMessages(body).map((m) => [m.tool_call_id, JSON.parse(m.content)]),
    [
      [paris.toolCallId, forecast('Paris')],
      [london.toolCallId, forecast('London')],
    ],
    'one tool message per call, in call order',
  );
  assert.equal(body.messages.at(-1).role, 'tool', 'the tool messages end the conversation');
  assert.deepEqual((await out.toolResults).map((r) => r.toolCallId), [paris.toolCallId, london.toolCallId], 'toolResults in call order');
});

test('parallel calls where one throws: the other still runs, both go back in call order', T, async () => {
  const weather = createTool(
    weatherDef([], {
      execute: async ({ city }) => {
        if (city === 'Paris') throw new Error('no data for Paris');
        return forecast(city);
      },
    }),
  );
  const { chunks, requests, out } = await runAgent(server.current, 'tool-calls-parallel', { tools: { weather } });
  const [paris, london] = ofType(chunks, 'tool-call').map((c) => c.payload);
  assert.equal(only(chunks, 'tool-error').payload.toolCallId, paris.toolCallId);
  assert.equal(only(chunks, 'tool-result').payload.toolCallId, london.toolCallId);
  const messages = toolMessages(requests[1].body);
  assert.deepEqual(messages.map((m) => m.tool_call_id), [paris.toolCallId, london.toolCallId]);
  assert.equal(messages[0].content, 'no data for Paris');
  assert.deepEqual(JSON.parse(messages[1].content), forecast('London'));
  assert.deepEqual((await out.toolResults).map((r) => [r.toolCallId, r.isError === true]), [
    [paris.toolCallId, true],
    [london.toolCallId, false],
  ]);
});

test('one-chunk arguments: one delta, one call, one result', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const { chunks, out } = await runAgent(server.current, 'tool-call-one-chunk', { tools: { weather } });
  assert.deepEqual(ofType(chunks, 'tool-call-delta').map((c) => c.payload.argsTextDelta), ['{"city":"Paris"}']);
  assert.equal(ofType(chunks, 'tool-call').length, 1);
  assert.equal(ofType(chunks, 'tool-result').length, 1);
  assert.equal(calls.length, 1);
  assert.equal(await out.finishReason, 'stop');
});

test('an empty tool_calls array is ignored; the real call that follows runs', T, async () => {
  const calls = [];
  const weather = createTool(weatherDef(calls));
  const { chunks, out } = await runAgent(server.current, 'tool-call-empty-array', { tools: { weather } });
  assert.equal(ofType(chunks, 'tool-call-input-streaming-start').length, 1);
  assert.equal(ofType(chunks, 'tool-call').length, 1);
  assert.deepEqual(calls.map((c) => c.input), [{ city: 'Paris' }]);
  assert.equal(ofType(chunks, 'error').length, 0);
  assert.equal(await out.finishReason, 'stop');
});

// ---------------------------------------------------------------------------------------------
// Failures inside a run, all on one agent — which then still streams normally

/** One agent for the failure tests; each stream picks its script with the x-script header. */
let shared;
const sharedCalls = [];
const cyclic = { name: 'loop' };
cyclic.self = cyclic;

function sharedAgent() {
  if (shared) return shared;
  const tool = (id, execute) => createTool({ id, description: `the ${id} tool`, inputSchema: { type: 'object', properties: {} }, execute });
  shared = new Agent({
    id: 'survivor',
    model: modelFor(server.current, 'echo'),
    tools: {
      weather: createTool(weatherDef(sharedCalls)),
      thrower: tool('thrower', () => {
        throw new Error('Weather service is down');
      }),
      rejecter: tool('rejecter', async () => Promise.reject(new RangeError('quota exceeded'))),
      throwsString: tool('throwsString', () => {
        throw 'plain string failure';
      }),
      withFunction: tool('withFunction', () => ({ ok: true, nested: [{ callback: () => 1 }] })),
      withBigInt: tool('withBigInt', () => ({ total: 12n })),
      withCycle: tool('withCycle', () => cyclic),
      withDate: tool('withDate', () => ({ at: new Date(0) })),
    },
  });
  return shared;
}

/** Streams on the shared agent with `script`; returns { out, chunks, requests }. */
async function onShared(script, messages = 'Go') {
  const id = uid('shared');
  const out = await sharedAgent().stream(messages, { modelSettings: { headers: { 'x-script': script, 'x-test-id': id } } });
  const chunks = [];
  for await (const chunk of out.fullStream) chunks.push(chunk);
  return { out, chunks, requests: requestsOf(server.current, id) };
}

test('bad JSON arguments → tool-error quoting them, execute not called, the run goes on', T, async () => {
  const before = sharedCalls.length;
  const { chunks, requests, out } = await onShared('tool-call-bad-json');
  const err = only(chunks, 'tool-error');
  assert.equal(err.payload.toolName, 'weather');
  assert.equal(err.payload.error.name, 'ToolError');
  assert.match(err.payload.error.message, /JSON/);
  assert.ok(err.payload.error.message.includes('celsius'), 'quotes what the model sent');
  assert.equal(sharedCalls.length, before, 'execute never ran');
  assert.equal(ofType(chunks, 'error').length, 0, 'no run error');
  assert.equal(requests.length, 2);
  assert.deepEqual(toolMessages(requests[1].body), [{ role: 'tool', tool_call_id: err.payload.toolCallId, content: err.payload.error.message }]);
  assert.equal(await out.finishReason, 'stop');
  assert.match(await out.text, /^The tool said: .*JSON/);
});

test('a throwing tool → tool-error with its message; the model is told and the run goes on', T, async () => {
  for (const [name, message] of [
    ['thrower', 'Weather service is down'],
    ['rejecter', 'quota exceeded'],
    ['throwsString', 'plain string failure'],
  ]) {
    const { chunks, requests, out } = await onShared(`call:${name}`);
    const err = only(chunks, 'tool-error');
    assert.deepEqual(err.payload, { toolCallId: err.payload.toolCallId, toolName: name, args: {}, error: { name: 'ToolError', message } });
    assert.equal(ofType(chunks, 'tool-result').length, 0);
    assert.ok(toolMessages(requests[1].body)[0].content.includes(message), `${name}: the model is told`);
    assert.equal(await out.finishReason, 'stop');
    assert.equal(await out.text, `The tool said: ${message}`);
    const [result] = await out.toolResults;
    assert.equal(result.isError, true);
  }
});

test('results that cannot be serialised (a function anywhere, a BigInt, a cycle) → a clear tool-error', T, async () => {
  for (const [name, pattern] of [
    ['withFunction', /withFunction[\s\S]*nested\[0\]\.callback[\s\S]*function/],
    ['withBigInt', /withBigInt[\s\S]*total[\s\S]*BigInt/],
    ['withCycle', /withCycle[\s\S]*cycle/],
  ]) {
    const { chunks, requests, out } = await onShared(`call:${name}`);
    const err = only(chunks, 'tool-error');
    assert.equal(err.payload.error.name, 'ToolError');
    assert.match(err.payload.error.message, pattern);
    assert.ok(err.payload.error.message.length < 2000, `${name}: the message stays readable (${err.payload.error.message.length} chars)`);
    assert.equal(toolMessages(requests[1].body)[0].content, err.payload.error.message);
    assert.equal(ofType(chunks, 'error').length, 0);
    assert.equal(await out.finishReason, 'stop');
  }
});

test('a Date in a result is sent as JSON would send it', T, async () => {
  const { chunks, requests } = await onShared('call:withDate');
  assert.deepEqual(only(chunks, 'tool-result').payload.result, { at: '1970-01-01T00:00:00.000Z' });
  assert.equal(toolMessages(requests[1].body)[0].content, '{"at":"1970-01-01T00:00:00.000Z"}');
});

test('a call of a tool that does not exist → tool-error, the model told which tools exist', T, async () => {
  const { chunks, out } = await onShared('call:teleport:{"to":"Mars"}');
  const err = only(chunks, 'tool-error');
  assert.equal(err.payload.toolName, 'teleport');
  assert.match(err.payload.error.message, /teleport/);
  assert.equal(await out.finishReason, 'stop');
});

// ---------------------------------------------------------------------------------------------
// Bad definitions: TypeErrors that name the field

test('createTool rejects bad definitions with a TypeError naming the field', T, () => {
  const good = weatherDef();
  const cases = [
    [{ ...good, id: undefined }, /\bid\b/],
    [{ ...good, id: '' }, /\bid\b/],
    [{ ...good, id: 7 }, /\bid\b/],
    [{ ...good, execute: 'not a function' }, /execute/],
    [{ ...good, execute: 42 }, /execute/],
    [{ ...good, inputSchema: 42 }, /inputSchema/],
    [{ ...good, inputSchema: 'object' }, /inputSchema/],
    [{ ...good, inputSchema: { type: 'banana' } }, /inputSchema/],
    [{ ...good, description: 5 }, /description/],
    [{ ...good, requireApproval: 'yes' }, /requireApproval/],
  ];
  for (const [def, field] of cases) {
    assert.throws(
      () => createTool(def),
      (err) => err instanceof TypeError && field.test(err.message),
      `createTool(${JSON.stringify(def, (k, v) => (typeof v === 'function' ? 'fn' : v))})`,
    );
  }
  assert.throws(() => createTool(), TypeError);
  assert.throws(() => createTool('weather'), TypeError);
});

test('new Agent rejects tools that are not an object of tools, naming the field', T, () => {
  const model = modelFor(server.current, 'echo');
  for (const tools of ['weather', 42, [createTool(weatherDef())]]) {
    assert.throws(
      () => new Agent({ id: 'bad', model, tools }),
      (err) => err instanceof TypeError && /tools/.test(err.message),
      `tools: ${JSON.stringify(tools)}`,
    );
  }
  assert.throws(
    () => new Agent({ id: 'bad', model, tools: { weather: { ...weatherDef(), execute: 5 } } }),
    (err) => err instanceof TypeError && /tools\.weather\.execute/.test(err.message),
  );
  assert.throws(
    () => new Agent({ id: 'bad', model, tools: { weather: { ...weatherDef(), inputSchema: 3 } } }),
    (err) => err instanceof TypeError && /tools\.weather\.inputSchema/.test(err.message),
  );
  // A tool without execute belongs in clientTools.
  assert.throws(
    () => new Agent({ id: 'bad', model, tools: { weather: { ...weatherDef(), execute: undefined } } }),
    (err) => err instanceof TypeError && /tools\.weather\.execute/.test(err.message) && /clientTools/.test(err.message),
  );
});

test('stream() rejects bad tool options with a TypeError naming the option', T, async () => {
  const weather = createTool(weatherDef());
  const agent = new Agent({ id: 'opts', model: modelFor(server.current, 'echo'), tools: { weather } });
  const cases = [
    [{ toolsets: 'x' }, /toolsets/],
    [{ toolsets: { extra: { t: { ...weatherDef(), inputSchema: 4 } } } }, /toolsets\.extra\.t\.inputSchema/],
    [{ clientTools: 5 }, /clientTools/],
    [{ activeTools: 'weather' }, /activeTools/],
    [{ toolChoice: 'sometimes' }, /toolChoice/],
    [{ toolChoice: { type: 'tool' } }, /toolChoice\.toolName/],
    [{ toolCallConcurrency: 0 }, /toolCallConcurrency/],
    [{ toolCallConcurrency: 'many' }, /toolCallConcurrency/],
    [{ maxSteps: 0 }, /maxSteps/],
    [{ stopWhen: 5 }, /stopWhen/],
    [{ prepareStep: 'x' }, /prepareStep/],
    [{ onIterationComplete: 3 }, /onIterationComplete/],
    [{ hooks: 5 }, /hooks/],
    [{ requireToolApproval: 'yes' }, /requireToolApproval/],
  ];
  for (const [options, field] of cases) {
    let err;
    try {
      const out = await agent.stream('hi', options);
      await out.consumeStream();
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof TypeError, `${JSON.stringify(options)} → TypeError (got ${err})`);
    assert.match(err.message, field, JSON.stringify(options));
  }
  const out = await agent.stream('still here?');
  assert.equal(await out.text, 'You said: still here?');
});

test('after all of that, the same agent still streams a plain reply (and still runs its tools)', T, async () => {
  const plain = await onShared('echo', 'Hello again');
  assert.deepEqual(types(plain.chunks), [
    'start',
    'step-start',
    'text-start',
    'text-delta',
    'text-delta',
    'text-delta',
    'text-delta',
    'text-end',
    'step-finish',
    'finish',
  ]);
  assert.equal(await plain.out.text, 'You said: Hello again');
  assert.equal(await plain.out.finishReason, 'stop');

  const before = sharedCalls.length;
  const tooled = await onShared('call:weather:{"city":"Lima"}');
  assert.deepEqual(only(tooled.chunks, 'tool-result').payload.result, forecast('Lima'));
  assert.equal(sharedCalls.length, before + 1);
  assert.equal(await tooled.out.finishReason, 'stop');
});

noUnhandledRejections();
