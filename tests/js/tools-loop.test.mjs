// The tool loop (SPEC §3, §5): toolCallConcurrency, maxSteps and stopWhen, activeTools, toolChoice
// and toolsets as sent to the model, prepareStep, onIterationComplete, and the before/after hooks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { T, noUnhandledRejections, types, useModelServer } from './helpers.mjs';
import {
  concurrencyMeter,
  createTool,
  forecast,
  hasToolCall,
  ofType,
  only,
  runAgent,
  stepCountIs,
  toolMessages,
  toolNames,
  weatherDef,
} from './tools-helpers.mjs';

const server = useModelServer();

/** A tool with a `{ city }` schema that records its calls by id. */
function cityTool(id, log = []) {
  return createTool({
    id,
    description: `the ${id} tool`,
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execute: async ({ city }) => {
      log.push(`${id}:${city}`);
      return { tool: id, city };
    },
  });
}

/** The parts of a request body the loop options change. */
function brief(body) {
  return {
    tools: toolNames(body),
    toolChoice: body.tool_choice,
    system: body.messages.filter((m) => m.role === 'system').map((m) => m.content),
    temperature: body.temperature,
    roles: body.messages.map((m) => m.role),
  };
}

// ---------------------------------------------------------------------------------------------
// toolCallConcurrency

/** Runs five parallel calls of a 40 ms tool; returns the meter and the run. */
async function fiveSlowCalls(toolCallConcurrency) {
  const meter = concurrencyMeter();
  const slow = createTool({
    id: 'slow',
    description: 'takes a while',
    inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    execute: async ({ n }) => {
      await meter.run(n, 40);
      return { n };
    },
  });
  const options = toolCallConcurrency === undefined ? {} : { toolCallConcurrency };
  const run = await runAgent(server.current, 'parallel:5', { tools: { slow }, options });
  return { meter, ...run };
}

for (const limit of [1, 2]) {
  test(`toolCallConcurrency: ${limit} → at most ${limit} execute(s) at a time; results still in call order`, T, async () => {
    const { meter, chunks, requests, out } = await fiveSlowCalls(limit);
    assert.equal(meter.started.length, 5, 'all five calls ran');
    assert.equal(meter.max, limit, `peak concurrency ${meter.max}`);
    assert.deepEqual(meter.started, [3, 4, 5, 6, 7], 'started in call order');
    const callIds = ofType(chunks, 'tool-call').map((c) => c.payload.toolCallId);
    assert.deepEqual(
      toolMessages(requests[1].body).map((m) => [m.tool_call_id, JSON.parse(m.content)]),
      callIds.map((id, i) => [id, { n: 3 + i }]),
    );
    assert.equal(await out.finishReason, 'stop');
  });
}

test('toolCallConcurrency: the default runs all five calls of a step together', T, async () => {
  const { meter } = await fiveSlowCalls(undefined);
  assert.equal(meter.max, 5);
});

// ---------------------------------------------------------------------------------------------
// maxSteps and stopWhen (the model calls a tool on every step)

const ALWAYS = 'call-always:ping:{"city":"Oslo"}';

/** Runs the always-calling model with `options`; returns the run plus step-finish summaries. */
async function loop(options, script = ALWAYS, log = []) {
  const tools = { ping: cityTool('ping', log), pong: cityTool('pong', log) };
  const run = await runAgent(server.current, script, { tools, options });
  const stepFinishes = ofType(run.chunks, 'step-finish').map((c) => `${c.payload.stepResult.reason}:${c.payload.stepResult.isContinued}`);
  return { ...run, stepFinishes, log };
}

test('maxSteps defaults to 5: a model that always calls a tool is stopped after 5 steps', T, async () => {
  const { requests, stepFinishes, out, chunks, log } = await loop({});
  assert.equal(requests.length, 5);
  assert.deepEqual(stepFinishes, ['tool-calls:true', 'tool-calls:true', 'tool-calls:true', 'tool-calls:true', 'tool-calls:false']);
  assert.equal((await out.steps).length, 5);
  assert.equal(await out.finishReason, 'tool-calls');
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(log.length, 5, "the last step's call still ran");
});

test('maxSteps: 3 → three model requests, the last step not continued', T, async () => {
  const { requests, stepFinishes, out } = await loop({ maxSteps: 3 });
  assert.equal(requests.length, 3);
  assert.deepEqual(stepFinishes, ['tool-calls:true', 'tool-calls:true', 'tool-calls:false']);
  const steps = await out.steps;
  assert.equal(steps.length, 3);
  assert.deepEqual(await out.toolCalls, steps.flatMap((s) => s.toolCalls), 'toolCalls gathers every step');
  assert.equal((await out.toolResults).length, 3);
});

test('maxSteps: 1 runs the tool but does not call the model again', T, async () => {
  const { requests, out, chunks, log } = await loop({ maxSteps: 1 });
  assert.equal(requests.length, 1);
  assert.deepEqual(log, ['ping:Oslo']);
  assert.equal(ofType(chunks, 'tool-result').length, 1);
  assert.equal(await out.finishReason, 'tool-calls');
});

test('stopWhen: stepCountIs(2) stops after two steps', T, async () => {
  const { requests, stepFinishes, out } = await loop({ stopWhen: stepCountIs(2) });
  assert.equal(requests.length, 2);
  assert.deepEqual(stepFinishes, ['tool-calls:true', 'tool-calls:false']);
  assert.equal(await out.finishReason, 'tool-calls');
});

test('stopWhen: hasToolCall(name) stops after the step that called it', T, async () => {
  const { requests, out, log } = await loop({ stopWhen: hasToolCall('pong') }, 'sequence:ping,pong,ping');
  assert.equal(requests.length, 2);
  assert.deepEqual(log.map((l) => l.split(':')[0]), ['ping', 'pong']);
  assert.deepEqual((await out.steps).map((s) => s.toolCalls.map((c) => c.toolName)), [['ping'], ['pong']]);
});

test('stopWhen: hasToolCall of a tool never called lets the loop finish on its own', T, async () => {
  const { requests, out } = await loop({ stopWhen: hasToolCall('weather') }, 'sequence:ping,pong');
  assert.equal(requests.length, 3);
  assert.equal(await out.finishReason, 'stop');
  assert.equal(await out.text, 'Done after 2 tool steps.');
});

test('stopWhen: a custom predicate sees the steps so far and stops when it returns true', T, async () => {
  const seen = [];
  const stopWhen = ({ steps }) => {
    seen.push(steps.map((s) => s.toolCalls.map((c) => c.toolName).join('+')));
    return steps.at(-1).toolResults.some((r) => r.result.tool === 'pong');
  };
  const { requests, out } = await loop({ stopWhen }, 'sequence:ping,ping,pong,ping');
  assert.equal(requests.length, 3);
  assert.deepEqual(seen, [['ping'], ['ping', 'ping'], ['ping', 'ping', 'pong']]);
  assert.equal((await out.steps).length, 3);
});

test('stopWhen: an array stops when any condition is met; maxSteps still caps', T, async () => {
  const any = await loop({ stopWhen: [stepCountIs(9), stepCountIs(3)] });
  assert.equal(any.requests.length, 3);
  const capped = await loop({ stopWhen: stepCountIs(9), maxSteps: 2 });
  assert.equal(capped.requests.length, 2);
});

test('tools-then-text: the loop runs tool steps until the model answers', T, async () => {
  const log = [];
  const { requests, out, chunks } = await runAgent(server.current, 'tools-then-text:3', { tools: { ping: cityTool('ping', log) } });
  assert.equal(requests.length, 4);
  assert.equal(log.length, 3);
  assert.equal(await out.text, 'Done after 3 tool steps.');
  assert.deepEqual(ofType(chunks, 'step-finish').map((c) => c.payload.stepResult.isContinued), [true, true, true, false]);
  // Each request carries every earlier call and result.
  assert.deepEqual(brief(requests[3].body).roles, ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool']);
});

// ---------------------------------------------------------------------------------------------
// activeTools, toolChoice, toolsets — as sent to the model

const tools = () => ({ alpha: cityTool('alpha'), beta: cityTool('beta') });

test('activeTools limits the tools sent to the model on every step', T, async () => {
  const { requests } = await runAgent(server.current, 'tool-call', { tools: tools(), options: { activeTools: ['beta'] } });
  assert.deepEqual(requests.map((r) => toolNames(r.body)), [['beta'], ['beta']]);
  const none = await runAgent(server.current, 'echo', { tools: tools(), options: { activeTools: [] } });
  assert.equal(none.requests[0].body.tools, undefined, 'no tools at all');
});

test('a call of a tool outside activeTools is refused, not run', T, async () => {
  const log = [];
  const { chunks, out } = await runAgent(server.current, 'call:alpha:{"city":"Oslo"}', {
    tools: { alpha: cityTool('alpha', log), beta: cityTool('beta', log) },
    options: { activeTools: ['beta'] },
  });
  const err = only(chunks, 'tool-error');
  assert.match(err.payload.error.message, /alpha/);
  assert.deepEqual(log, []);
  assert.equal(await out.finishReason, 'stop');
});

test('toolChoice is sent as the Chat Completions tool_choice', T, async () => {
  const cases = [
    [undefined, undefined],
    ['auto', 'auto'],
    ['none', 'none'],
    ['required', 'required'],
    [{ type: 'tool', toolName: 'beta' }, { type: 'function', function: { name: 'beta' } }],
  ];
  for (const [toolChoice, sent] of cases) {
    const options = toolChoice === undefined ? {} : { toolChoice };
    const { requests } = await runAgent(server.current, 'echo', { tools: tools(), options });
    assert.deepEqual(requests[0].body.tool_choice, sent, JSON.stringify(toolChoice));
    assert.deepEqual(toolNames(requests[0].body), ['alpha', 'beta']);
  }
});

test('toolsets add their tools to the agent\'s, and their tools run', T, async () => {
  const log = [];
  const { requests, chunks } = await runAgent(server.current, 'call:gamma:{"city":"Rome"}', {
    tools: tools(),
    options: { toolsets: { travel: { gamma: cityTool('gamma', log) }, more: { delta: cityTool('delta', log) } } },
  });
  assert.deepEqual(toolNames(requests[0].body).sort(), ['alpha', 'beta', 'delta', 'gamma']);
  assert.deepEqual(only(chunks, 'tool-result').payload.result, { tool: 'gamma', city: 'Rome' });
  assert.deepEqual(log, ['gamma:Rome']);
});

// ---------------------------------------------------------------------------------------------
// prepareStep

test('prepareStep: changes for step 1 show in the second request only', T, async () => {
  const calls = [];
  const prepareStep = ({ stepNumber, steps }) => {
    calls.push({ stepNumber, steps: steps.length });
    if (stepNumber === 1) {
      return { toolChoice: 'none', activeTools: ['alpha'], system: 'Answer in one sentence.', modelSettings: { temperature: 0.1 } };
    }
    return undefined;
  };
  const { requests } = await runAgent(server.current, 'tool-call', { tools: tools(), options: { prepareStep } });
  assert.deepEqual(calls, [
    { stepNumber: 0, steps: 0 },
    { stepNumber: 1, steps: 1 },
  ]);
  const [one, two] = requests.map((r) => brief(r.body));
  assert.deepEqual(one, { tools: ['alpha', 'beta'], toolChoice: undefined, system: [], temperature: undefined, roles: ['user'] });
  assert.deepEqual(two.tools, ['alpha']);
  assert.equal(two.toolChoice, 'none');
  assert.deepEqual(two.system, ['Answer in one sentence.']);
  assert.equal(two.temperature, 0.1);
  assert.deepEqual(two.roles.filter((r) => r !== 'system'), ['user', 'assistant', 'tool']);
});

test('prepareStep: step 0 changes apply to the first request; an async prepareStep is awaited', T, async () => {
  const prepareStep = async ({ stepNumber }) => {
    await delay(10);
    return stepNumber === 0 ? { toolChoice: { type: 'tool', toolName: 'beta' }, activeTools: ['beta'] } : {};
  };
  const { requests, out } = await runAgent(server.current, 'tool-call', { tools: tools(), options: { prepareStep } });
  assert.deepEqual(brief(requests[0].body).tools, ['beta']);
  assert.deepEqual(requests[0].body.tool_choice, { type: 'function', function: { name: 'beta' } });
  assert.deepEqual(brief(requests[1].body).tools, ['alpha', 'beta'], 'step 1 is back to the run options');
  assert.equal(requests[1].body.tool_choice, undefined);
  assert.equal((await out.steps)[0].toolCalls[0].toolName, 'beta', 'the model called the only tool it was offered');
});

// ---------------------------------------------------------------------------------------------
// onIterationComplete

test('onIterationComplete: called after every iteration with what it did', T, async () => {
  const seen = [];
  const { out } = await runAgent(server.current, 'tool-call', {
    tools: { weather: createTool(weatherDef()) },
    options: { onIterationComplete: (ctx) => void seen.push(ctx) },
  });
  assert.equal(seen.length, 2);
  const [first, last] = seen;
  assert.equal(first.iteration, 1);
  assert.equal(first.maxIterations, 5);
  assert.equal(first.isFinal, false);
  assert.equal(first.finishReason, 'tool-calls');
  assert.equal(first.text, '');
  assert.deepEqual(first.toolCalls.map((c) => [c.toolName, c.args]), [['weather', { city: 'Paris' }]]);
  assert.deepEqual(first.toolResults.map((r) => r.result), [forecast('Paris')]);
  assert.equal(last.iteration, 2);
  assert.equal(last.isFinal, true);
  assert.equal(last.finishReason, 'stop');
  assert.equal(last.text, await out.text);
  assert.deepEqual(last.toolCalls, []);
});

test('onIterationComplete: { continue: false } stops the run after that iteration', T, async () => {
  const log = [];
  const { requests, out, chunks } = await runAgent(server.current, ALWAYS, {
    tools: { ping: cityTool('ping', log) },
    options: { onIterationComplete: ({ iteration }) => (iteration === 2 ? { continue: false } : undefined) },
  });
  assert.equal(requests.length, 2);
  assert.equal(log.length, 2);
  assert.equal(await out.finishReason, 'tool-calls');
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(ofType(chunks, 'step-finish').at(-1).payload.stepResult.isContinued, false);
});

test('onIterationComplete: feedback reaches the model in the next request', T, async () => {
  const { requests } = await runAgent(server.current, 'tools-then-text:1', {
    tools: { ping: cityTool('ping') },
    options: { onIterationComplete: ({ iteration }) => (iteration === 1 ? { continue: true, feedback: 'Also check the wind.' } : undefined) },
  });
  assert.equal(requests.length, 2);
  const messages = requests[1].body.messages;
  const at = messages.findIndex((m) => m.content === 'Also check the wind.');
  assert.ok(at > 0, 'the feedback is in the next request');
  assert.ok(at > messages.findIndex((m) => m.role === 'tool'), 'after the tool result');
  assert.equal(requests[0].body.messages.some((m) => m.content === 'Also check the wind.'), false);
});

test('onIterationComplete: feedback with continue: true after a final answer runs one more iteration', T, async () => {
  let calls = 0;
  const { requests, out } = await runAgent(server.current, 'echo', {
    messages: 'Summarise',
    options: {
      onIterationComplete: ({ isFinal }) => {
        calls += 1;
        return calls === 1 && isFinal ? { continue: true, feedback: 'Add a title.' } : undefined;
      },
    },
  });
  assert.equal(requests.length, 2);
  assert.equal(requests[1].body.messages.at(-1).content, 'Add a title.');
  assert.equal((await out.steps).length, 2);
  assert.equal(await out.finishReason, 'stop');
});

// ---------------------------------------------------------------------------------------------
// hooks

test('hooks: beforeToolCall sees every call; { proceed: false, output } skips execute and uses output', T, async () => {
  const ran = [];
  const events = [];
  const weather = createTool(
    weatherDef([], {
      execute: async ({ city }) => {
        ran.push(city);
        return forecast(city);
      },
    }),
  );
  const { chunks, requests, out } = await runAgent(server.current, 'tool-calls-parallel', {
    tools: { weather },
    options: {
      hooks: {
        beforeToolCall: async ({ toolCallId, toolName, args, input }) => {
          events.push({ hook: 'before', toolCallId, toolName, args, input });
          await delay(5);
          if (args.city === 'London') return { proceed: false, output: { cached: true, city: 'London' } };
          return undefined;
        },
        afterToolCall: ({ toolCallId, toolName, args, result, error }) => {
          events.push({ hook: 'after', toolCallId, toolName, args, result, error });
        },
      },
    },
  });
  const [paris, london] = ofType(chunks, 'tool-call').map((c) => c.payload);
  assert.deepEqual(ran, ['Paris'], 'execute ran only for the call the hook let through');
  const before = events.filter((e) => e.hook === 'before');
  assert.deepEqual(
    before.map((e) => [e.toolCallId, e.toolName, e.args, e.input]),
    [
      [paris.toolCallId, 'weather', { city: 'Paris' }, { city: 'Paris' }],
      [london.toolCallId, 'weather', { city: 'London' }, { city: 'London' }],
    ],
  );
  const after = Object.fromEntries(events.filter((e) => e.hook === 'after').map((e) => [e.toolCallId, e]));
  assert.deepEqual(after[paris.toolCallId].result, forecast('Paris'));
  assert.deepEqual(after[london.toolCallId].result, { cached: true, city: 'London' });
  assert.equal(after[paris.toolCallId].error, undefined);

  const results = Object.fromEntries(ofType(chunks, 'tool-result').map((c) => [c.payload.toolCallId, c.payload.result]));
  assert.deepEqual(results[london.toolCallId], { cached: true, city: 'London' });
  assert.deepEqual(
    toolMessages(requests[1].body).map((m) => [m.tool_call_id, JSON.parse(m.content)]),
    [
      [paris.toolCallId, forecast('Paris')],
      [london.toolCallId, { cached: true, city: 'London' }],
    ],
  );
  assert.equal(await out.finishReason, 'stop');
});

test('hooks: afterToolCall gets the error of a throwing tool', T, async () => {
  const after = [];
  const broken = createTool({
    id: 'broken',
    description: 'always fails',
    inputSchema: { type: 'object', properties: {} },
    execute: () => {
      throw new Error('disk full');
    },
  });
  const { chunks } = await runAgent(server.current, 'call:broken', {
    tools: { broken },
    options: { hooks: { afterToolCall: (e) => void after.push(e) } },
  });
  assert.equal(only(chunks, 'tool-error').payload.error.message, 'disk full');
  assert.equal(after.length, 1);
  assert.equal(after[0].toolName, 'broken');
  assert.equal(after[0].result, undefined);
  assert.ok(after[0].error, 'error is set');
  assert.match(after[0].error.message ?? String(after[0].error), /disk full/);
});

test(
  'hooks: a beforeToolCall that throws blocks the call (tool-error with its message), it does not let it run',
  T,
  async () => {
    const ran = [];
    const weather = createTool(
      weatherDef([], {
        execute: async ({ city }) => {
          ran.push(city);
          return forecast(city);
        },
      }),
    );
    const { chunks, out } = await runAgent(server.current, 'tool-call', {
      tools: { weather },
      options: {
        hooks: {
          beforeToolCall: () => {
            throw new Error('not allowed for this user');
          },
        },
      },
    });
    assert.deepEqual(ran, [], 'execute did not run');
    assert.match(only(chunks, 'tool-error').payload.error.message, /not allowed for this user/);
    assert.equal(await out.finishReason, 'stop');
  },
);

test('hooks: a throwing afterToolCall does not break the run', T, async () => {
  const { chunks, out } = await runAgent(server.current, 'tool-call', {
    tools: { weather: createTool(weatherDef()) },
    options: {
      hooks: {
        afterToolCall: () => {
          throw new Error('logger down');
        },
      },
    },
  });
  assert.equal(ofType(chunks, 'error').length, 0);
  assert.equal(await out.finishReason, 'stop');
  assert.deepEqual(types(chunks).at(-1), 'finish');
});

noUnhandledRejections();
