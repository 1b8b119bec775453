// AgentStreamOutput: each promise, getFullOutput(), consumeStream(), the two streams read in
// every combination, async iteration, and the run callbacks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Agent,
  T,
  collect,
  estimatePromptTokens,
  modelFor,
  noUnhandledRejections,
  requestsOf,
  types,
  uid,
  useModelServer,
} from './helpers.mjs';

const server = useModelServer();

/** Starts one stream on a fresh agent; returns { out, id } (id = the request's x-test-id). */
async function start(script, messages = 'Hello there', options = {}) {
  const srv = server.current;
  const id = uid('out');
  const agent = new Agent({ id: 'outputs', model: modelFor(srv, script, { headers: { 'x-test-id': id } }) });
  const out = await agent.stream(messages, options);
  return { out, id };
}

const ECHO = 'You said: Hello there';

test('stream() resolves to an output whose aggregate properties are promises', T, async () => {
  const { out } = await start('echo');
  for (const name of ['text', 'reasoningText', 'finishReason', 'usage', 'totalUsage', 'toolCalls', 'toolResults', 'steps', 'response', 'warnings']) {
    assert.ok(out[name] instanceof Promise, `${name} is a promise`);
  }
  assert.equal(typeof out.runId, 'string');
  assert.equal(typeof out.consumeStream, 'function');
  assert.equal(typeof out.getFullOutput, 'function');
  await out.consumeStream();
});

test('text, finishReason, toolCalls, toolResults of a plain reply', T, async () => {
  const { out } = await start('echo');
  assert.equal(await out.text, ECHO);
  assert.equal(await out.finishReason, 'stop');
  assert.deepEqual(await out.toolCalls, []);
  assert.deepEqual(await out.toolResults, []);
  assert.ok(!(await out.reasoningText), 'no reasoning in a plain reply');
  // The same promise on every access.
  assert.equal(out.text, out.text);
});

test('finishReason is "length" and "content-filter" when the model says so; the text is kept', T, async () => {
  const length = await start('length');
  assert.equal(await length.out.finishReason, 'length');
  assert.equal(await length.out.text, 'This answer is cut short because it ran into the');
  const filtered = await start('content-filter');
  assert.equal(await filtered.out.finishReason, 'content-filter');
  assert.equal(await filtered.out.text, "Sorry, I can't");
});

test('reasoningText of a reasoning reply', T, async () => {
  const { out } = await start('reasoning');
  assert.equal(await out.reasoningText, 'Let me think about this. The user wants a short answer, so I will keep it brief.');
  assert.equal(await out.text, 'Here is a short answer.');
});

test('usage and totalUsage are the numbers the server reported', T, async () => {
  const srv = server.current;
  const { out, id } = await start('text:one two three four');
  const usage = await out.usage;
  const total = await out.totalUsage;
  const [req] = requestsOf(srv, id);
  const input = estimatePromptTokens(req.body);
  for (const u of [usage, total]) {
    assert.equal(u.inputTokens, input);
    assert.equal(u.outputTokens, 4);
    assert.equal(u.totalTokens, input + 4);
  }
});

test('steps: one step with the text, finish reason, usage and request', T, async () => {
  const srv = server.current;
  const { out, id } = await start('echo');
  const steps = await out.steps;
  assert.equal(steps.length, 1);
  const [step] = steps;
  assert.equal(step.text, ECHO);
  assert.equal(step.finishReason, 'stop');
  assert.deepEqual(step.toolCalls, []);
  assert.deepEqual(step.usage, await out.usage);
  const body = step.request.body;
  assert.deepEqual(typeof body === 'string' ? JSON.parse(body) : body, requestsOf(srv, id)[0].body);
  assert.equal(step.response.modelId, 'echo');
});

test('response: id, modelId, timestamp and the assistant message', T, async () => {
  const before = Date.now();
  const { out } = await start('echo');
  const response = await out.response;
  assert.match(response.id, /^chatcmpl-/);
  assert.equal(response.modelId, 'echo');
  // The server reports `created` in whole seconds.
  const ts = new Date(response.timestamp).getTime();
  assert.ok(Number.isFinite(ts));
  assert.ok(ts >= Math.floor(before / 1000) * 1000 && ts <= Date.now() + 1000, `timestamp ${ts} is about now`);
  assert.deepEqual(response.messages, [{ role: 'assistant', content: [{ type: 'text', text: ECHO }] }]);
});

test('warnings: topK is reported as an unsupported setting (and not sent)', T, async () => {
  const srv = server.current;
  const { out, id } = await start('echo', 'hi', { modelSettings: { topK: 5 } });
  const warnings = await out.warnings;
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0].type, 'unsupported-setting');
  assert.equal(warnings[0].setting, 'topK');
  const body = requestsOf(srv, id)[0].body;
  assert.ok(!('top_k' in body) && !('topK' in body), 'topK not sent');
  const full = await out.getFullOutput();
  assert.deepEqual(full.warnings, warnings);
});

test('warnings is [] when every setting is supported', T, async () => {
  const { out } = await start('echo', 'hi', { modelSettings: { temperature: 0.3 } });
  assert.deepEqual(await out.warnings, []);
});

test('getFullOutput() has every aggregate, equal to the single promises', T, async () => {
  const { out } = await start('echo');
  const full = await out.getFullOutput();
  assert.equal(full.text, ECHO);
  assert.equal(full.finishReason, 'stop');
  assert.equal(full.runId, out.runId);
  assert.deepEqual(full.usage, await out.usage);
  assert.deepEqual(full.totalUsage, await out.totalUsage);
  assert.deepEqual(full.steps, await out.steps);
  assert.deepEqual(full.response, await out.response);
  assert.deepEqual(full.toolCalls, []);
  assert.deepEqual(full.toolResults, []);
  assert.deepEqual(full.warnings, []);
  assert.deepEqual(full.messages, [{ role: 'assistant', content: [{ type: 'text', text: ECHO }] }]);
  assert.ok(!full.error, 'no error on success');
});

test('consumeStream() drains the run without reading it; the promises then resolve', T, async () => {
  const { out } = await start('echo');
  assert.equal(await out.consumeStream(), undefined);
  assert.equal(await out.text, ECHO);
  // fullStream can still be read after consumeStream(): it replays the run.
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.at(-1).type, 'finish');
});

test('only awaiting text, without touching any stream, completes the run', T, async () => {
  const { out } = await start('echo');
  assert.equal(await out.text, ECHO);
  assert.equal(await out.finishReason, 'stop');
});

test('reading fullStream and textStream together: both complete and agree', T, async () => {
  const { out } = await start('echo', 'one two three four five');
  const full = out.fullStream;
  const text = out.textStream;
  const [chunks, pieces] = await Promise.all([collect(full), collect(text)]);
  const deltas = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text);
  assert.deepEqual(pieces, deltas);
  assert.equal(pieces.join(''), 'You said: one two three four five');
  assert.equal(chunks.at(-1).type, 'finish');
});

test('reading only textStream gives the text deltas as strings', T, async () => {
  const { out } = await start('text:Hello there world');
  const pieces = await collect(out.textStream);
  assert.deepEqual(pieces, ['Hello', ' there', ' world']);
  assert.ok(pieces.every((p) => typeof p === 'string'));
  assert.equal(await out.text, 'Hello there world');
});

test('textStream has no reasoning in it', T, async () => {
  const { out } = await start('reasoning');
  assert.equal((await collect(out.textStream)).join(''), 'Here is a short answer.');
});

test('a stream first read after the run ended replays the whole run', T, async () => {
  const { out } = await start('echo');
  await out.text;
  const chunks = await collect(out.fullStream);
  assert.deepEqual(types(chunks).slice(0, 3), ['start', 'step-start', 'text-start']);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal((await collect(out.textStream)).join(''), ECHO);
});

test('reading fullStream a second time throws an Error that says it can be read once', T, async () => {
  const { out } = await start('echo');
  const first = out.fullStream;
  assert.throws(() => out.fullStream, (err) => err instanceof Error && /once/i.test(err.message));
  const firstText = out.textStream;
  assert.throws(() => out.textStream, (err) => err instanceof Error && /once/i.test(err.message));
  // The first streams still work.
  assert.equal((await collect(first)).at(-1).type, 'finish');
  assert.equal((await collect(firstText)).join(''), ECHO);
});

test('for await over the output iterates fullStream', T, async () => {
  const { out } = await start('text:a b c');
  const seen = [];
  for await (const chunk of out) seen.push(chunk.type);
  assert.deepEqual(seen, ['start', 'step-start', 'text-start', 'text-delta', 'text-delta', 'text-delta', 'text-end', 'step-finish', 'finish']);
});

test('onStepFinish once with the step, onFinish once with the full output, in that order', T, async () => {
  const calls = [];
  const { out } = await start('echo', 'Hello there', {
    onStepFinish: (step) => calls.push(['step', step]),
    onFinish: (full) => calls.push(['finish', full]),
    onError: () => calls.push(['error']),
    onAbort: () => calls.push(['abort']),
  });
  const full = await out.getFullOutput();
  assert.deepEqual(calls.map(([k]) => k), ['step', 'finish']);
  assert.equal(calls[0][1].text, ECHO);
  assert.equal(calls[0][1].finishReason, 'stop');
  assert.equal(calls[1][1].text, ECHO);
  assert.equal(calls[1][1].finishReason, 'stop');
  assert.deepEqual(calls[1][1].usage, full.usage);
});

test('an async onFinish is awaited before the promises resolve', T, async () => {
  let finished = false;
  const { out } = await start('echo', 'hi', {
    onFinish: async () => {
      await new Promise((r) => setTimeout(r, 50));
      finished = true;
    },
  });
  await out.text;
  assert.equal(finished, true);
});

test('callbacks from defaultOptions are used when the call gives none', T, async () => {
  const srv = server.current;
  const calls = [];
  const agent = new Agent({
    id: 'defaults',
    model: modelFor(srv, 'echo'),
    defaultOptions: { onFinish: () => calls.push('default-finish'), onChunk: () => calls.push('chunk') },
  });
  await (await agent.stream('hi')).consumeStream();
  assert.equal(calls.filter((c) => c === 'default-finish').length, 1);
  assert.ok(calls.includes('chunk'));
  calls.length = 0;
  await (await agent.stream('hi', { onFinish: () => calls.push('call-finish') })).consumeStream();
  assert.deepEqual(calls.filter((c) => c.endsWith('finish')), ['call-finish']);
});

test('a throwing onChunk or onFinish does not break the run', T, async () => {
  const { out } = await start('echo', 'Hello there', {
    onChunk: () => {
      throw new Error('onChunk boom');
    },
    onFinish: () => {
      throw new Error('onFinish boom');
    },
  });
  assert.equal(await out.text, ECHO);
  assert.equal((await collect(out.fullStream)).at(-1).type, 'finish');
});

test('one agent runs several streams at once; each gets its own reply', T, async () => {
  const srv = server.current;
  const agent = new Agent({ id: 'parallel', model: modelFor(srv, 'slow:20') });
  const outs = await Promise.all(['alpha', 'beta', 'gamma', 'delta'].map((w) => agent.stream(`${w} one two`)));
  const texts = await Promise.all(outs.map((o) => o.text));
  assert.deepEqual(texts, ['alpha', 'beta', 'gamma', 'delta'].map((w) => `You said: ${w} one two`));
  assert.equal(new Set(outs.map((o) => o.runId)).size, 4);
});

for (const which of ['fullStream', 'textStream']) {
  test(`${which} piped through a TransformStream whose transform() reads the output's promises: every chunk arrives`, T, async () => {
    const { out } = await start('echo');
    const asked = [];
    const piped = out[which].pipeThrough(
      new TransformStream({
        transform(chunk, ctrl) {
          // Runs inside the output's enqueue when the piped stream is being read.
          asked.push(out.text, out.finishReason);
          ctrl.enqueue(chunk);
        },
      }),
    );
    const chunks = await collect(piped);
    assert.ok(asked.length > 0);
    if (which === 'fullStream') assert.equal(chunks.at(-1).type, 'finish');
    else assert.equal(chunks.join(''), ECHO);
    for (const p of asked) await p;
    assert.equal(await out.text, ECHO);
  });
}

noUnhandledRejections();
