// A user callback that throws or returns a rejecting promise (issue 11, item 7): reported once on
// the console with the callback's name and the error, never an unhandled rejection (which exits
// Node), and the run goes on as if the callback had returned nothing. (A throwing
// `beforeToolCall` or `prepareStep` is a decision, not an observation: it fails the call or the
// run, as tools-loop.test.mjs and bad-input.test.mjs check.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, T, collect, modelFor, noUnhandledRejections, types, useModelServer } from './helpers.mjs';
import { createTool, weatherDef } from './tools-helpers.mjs';

const server = useModelServer();

/** Runs `fn` with console.error recorded; returns the recorded calls (each an array of args). */
async function recordingConsoleErrors(fn) {
  const calls = [];
  const original = console.error;
  console.error = (...args) => calls.push(args);
  try {
    await fn();
    // A rejection is seen one microtask turn after the promise settles; give it a macrotask.
    await delay(20);
  } finally {
    console.error = original;
  }
  return calls;
}

/** The one console.error call about `name`; its error argument is the one thrown. */
function reportedOnce(calls, name, message) {
  const about = calls.filter((args) => String(args[0]).includes(name));
  assert.equal(about.length, 1, `one report about ${name}: ${JSON.stringify(calls.map((a) => a.map(String)))}`);
  const [label, error] = about[0];
  assert.match(label, new RegExp(`^wasm-agent: ${name.replace('.', '\\.')} failed`));
  assert.ok(error instanceof Error, `the error itself is passed (got ${error})`);
  assert.equal(error.message, message);
}

const agentOn = (script = 'echo') => new Agent({ id: 'cb', model: modelFor(server.current, script) });

const CASES = [
  ['onChunk rejects', 'onChunk', { onChunk: async () => { throw new Error('chunk x'); } }, 'chunk x'],
  ['onChunk throws', 'onChunk', { onChunk: () => { throw new Error('chunk y'); } }, 'chunk y'],
  ['onStepFinish rejects', 'onStepFinish', { onStepFinish: async () => { throw new Error('step x'); } }, 'step x'],
  ['onStepFinish throws', 'onStepFinish', { onStepFinish: () => { throw new Error('step y'); } }, 'step y'],
  ['onFinish rejects', 'onFinish', { onFinish: async () => { throw new Error('finish x'); } }, 'finish x'],
  ['onFinish throws', 'onFinish', { onFinish: () => { throw new Error('finish y'); } }, 'finish y'],
  ['onIterationComplete rejects', 'onIterationComplete', { onIterationComplete: async () => { throw new Error('iter x'); } }, 'iter x'],
];

for (const [label, name, options, message] of CASES) {
  test(`${label}: reported once on the console, the run finishes normally`, T, async () => {
    let out;
    let chunks;
    const calls = await recordingConsoleErrors(async () => {
      out = await agentOn().stream('hello', options);
      chunks = await collect(out.fullStream);
      await out.text;
    });
    // onChunk is called per chunk: each throw is one report; the text case has several chunks.
    if (name === 'onChunk') {
      const about = calls.filter((args) => String(args[0]).includes('onChunk'));
      assert.equal(about.length, chunks.length, 'one report per chunk the callback failed on');
      assert.ok(about.every(([, e]) => e instanceof Error && e.message === message));
    } else {
      reportedOnce(calls, name, message);
    }
    assert.equal(types(chunks).at(-1), 'finish');
    assert.equal(await out.text, 'You said: hello');
  });
}

test('onError rejects: reported once, the run still fails with its own error', T, async () => {
  let out;
  const calls = await recordingConsoleErrors(async () => {
    out = await agentOn('in-stream-error').stream('hello', { onError: async () => { throw new Error('error x'); } });
    await collect(out.fullStream);
  });
  reportedOnce(calls, 'onError', 'error x');
  await assert.rejects(out.text, (err) => err.name === 'APICallError');
});

test('onAbort rejects: reported once, the run still ends as aborted', T, async () => {
  let out;
  const calls = await recordingConsoleErrors(async () => {
    const ac = new AbortController();
    ac.abort();
    out = await agentOn().stream('hello', { abortSignal: ac.signal, onAbort: async () => { throw new Error('abort x'); } });
    await collect(out.fullStream);
  });
  reportedOnce(calls, 'onAbort', 'abort x');
  assert.equal(await out.finishReason, 'abort');
});

test('hooks.afterToolCall rejects: reported once, the run goes on to its answer', T, async () => {
  let out;
  let chunks;
  const calls = await recordingConsoleErrors(async () => {
    const agent = new Agent({ id: 'cb-tools', model: modelFor(server.current, 'tool-call'), tools: { weather: createTool(weatherDef()) } });
    out = await agent.stream('weather?', { hooks: { afterToolCall: async () => { throw new Error('after x'); } } });
    chunks = await collect(out.fullStream);
  });
  reportedOnce(calls, 'hooks.afterToolCall', 'after x');
  assert.ok(types(chunks).includes('tool-result'));
  assert.equal(types(chunks).at(-1), 'finish');
  assert.equal(await out.finishReason, 'stop');
});

test('stopWhen rejects: reported once, and the loop stops rather than running on unchecked', T, async () => {
  let out;
  let chunks;
  const calls = await recordingConsoleErrors(async () => {
    const agent = new Agent({ id: 'cb-stop', model: modelFor(server.current, 'tool-call'), tools: { weather: createTool(weatherDef()) } });
    out = await agent.stream('weather?', { stopWhen: async () => { throw new Error('stop x'); } });
    chunks = await collect(out.fullStream);
  });
  reportedOnce(calls, 'stopWhen', 'stop x');
  assert.equal(types(chunks).filter((t) => t === 'step-finish').length, 1, 'one step ran');
  assert.equal(types(chunks).at(-1), 'finish');
  assert.equal(await out.finishReason, 'tool-calls');
});

noUnhandledRejections();
