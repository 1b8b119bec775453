// Misspelled option keys: a key of stream() options, new Agent(config) or its defaultOptions
// that is a small edit away from a known name is told on the console once per process, with the
// name it likely meant. Other unknown keys stay silently ignored, as in the reference.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, modelFor, noUnhandledRejections, requestsOf, uid, useModelServer } from './helpers.mjs';

const server = useModelServer();

/** Runs `fn` with console.warn recorded; returns the lines that are about unknown options. */
async function warnings(fn) {
  const lines = [];
  const original = console.warn;
  console.warn = (...args) => lines.push(args.join(' '));
  try {
    await fn();
  } finally {
    console.warn = original;
  }
  return lines.filter((l) => l.includes('unknown option'));
}

function model(id) {
  return modelFor(server.current, 'echo', { headers: { 'x-test-id': id } });
}

test("stream({ maxStep }) warns once: unknown option 'maxStep' — did you mean 'maxSteps'?", T, async () => {
  const id = uid('names');
  const agent = new Agent({ id: 'names', model: model(id) });
  const first = await warnings(async () => (await agent.stream('Hello', { maxStep: 2 })).text);
  assert.deepEqual(first, [
    "wasm-agent: unknown option 'maxStep' — did you mean 'maxSteps'? (agent.stream() options; 'maxStep' is ignored)",
  ]);
  const again = await warnings(async () => (await agent.stream('Hello', { maxStep: 2 })).text);
  assert.deepEqual(again, [], 'told once per process');
  // The key is ignored, as in the reference: the run goes on with the defaults.
  assert.equal(requestsOf(server.current, id).length, 2);
});

test('generate() options and other near misses name what they likely meant', T, async () => {
  const agent = new Agent({ id: 'names', model: model(uid('names')) });
  const lines = await warnings(() => agent.generate('Hello', { onFinsih: () => {}, runID: 'r1', modelSetting: {} }));
  assert.deepEqual(lines, [
    "wasm-agent: unknown option 'onFinsih' — did you mean 'onFinish'? (agent.stream() options; 'onFinsih' is ignored)",
    "wasm-agent: unknown option 'runID' — did you mean 'runId'? (agent.stream() options; 'runID' is ignored)",
    "wasm-agent: unknown option 'modelSetting' — did you mean 'modelSettings'? (agent.stream() options; 'modelSetting' is ignored)",
  ]);
});

test('new Agent: a stream() option is told to go into defaultOptions; a misspelled config key names the right one', T, async () => {
  const lines = await warnings(() => {
    new Agent({ id: 'names', model: model(uid('names')), maxSteps: 3, maxRetires: 2, defaultOptions: { toolChoise: 'auto' } });
  });
  assert.deepEqual(lines, [
    "wasm-agent: unknown option 'maxSteps' in new Agent(config) — it is an agent.stream() option: put it in defaultOptions ('maxSteps' is ignored)",
    "wasm-agent: unknown option 'maxRetires' — did you mean 'maxRetries'? (new Agent(config); 'maxRetires' is ignored)",
    "wasm-agent: unknown option 'toolChoise' — did you mean 'toolChoice'? (new Agent(config).defaultOptions; 'toolChoise' is ignored)",
  ]);
});

test('known options, the reference options this version does not honour, and far unknown keys say nothing', T, async () => {
  const lines = await warnings(async () => {
    const agent = new Agent({ id: 'names', model: model(uid('names')), instructions: 'Be brief.', workflows: {}, scorers: {} });
    const options = {
      maxSteps: 2,
      modelSettings: { temperature: 0 },
      memory: undefined,
      onFinish: () => {},
      savePerStep: false,
      untilIdle: false,
      requestContext: new Map(),
      telemetry: { isEnabled: false },
      threadId: 't1',
      somethingElse: true,
    };
    await agent.generate('Hello', options);
  });
  assert.deepEqual(lines, []);
});

noUnhandledRejections();
