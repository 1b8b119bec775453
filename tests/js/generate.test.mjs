// agent.generate(messages, options): the non-streaming call. It runs the same loop as stream()
// and resolves to what getFullOutput() gives; errors reject it; stream()'s callbacks fire.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, errorOf, modelFor, noUnhandledRejections, rejectionOf, requestsOf, uid, useModelServer } from './helpers.mjs';
import { createTool, weatherDef } from './tools-helpers.mjs';

const server = useModelServer();

function agentFor(script, config = {}) {
  const id = uid('gen');
  const model = modelFor(server.current, script, { headers: { 'x-test-id': id } });
  return { agent: new Agent({ id: 'gen', model, ...config }), id };
}

test('generate() resolves to the getFullOutput() shape of the same reply', T, async () => {
  const { agent } = agentFor('echo');
  const full = await agent.generate('Hello there', { runId: 'gen-run-1' });
  const streamed = await (await agentFor('echo').agent.stream('Hello there', { runId: 'gen-run-1' })).getFullOutput();
  assert.equal(full.text, 'You said: Hello there');
  assert.equal(full.finishReason, 'stop');
  assert.equal(full.runId, 'gen-run-1');
  assert.deepEqual(Object.keys(full).sort(), Object.keys(streamed).sort());
  assert.deepEqual(full.usage, streamed.usage);
  assert.equal(full.steps.length, 1);
  assert.equal(full.steps[0].text, 'You said: Hello there');
  assert.deepEqual(full.toolCalls, []);
  assert.deepEqual(full.warnings, []);
  assert.deepEqual(full.response.messages, streamed.response.messages);
  assert.ok(full.totalUsage.totalTokens > 0, 'usage was counted');
});

test('generate() runs the tool loop: toolCalls, toolResults and both steps', T, async () => {
  const calls = [];
  const { agent, id } = agentFor('tool-call', { tools: { weather: createTool(weatherDef(calls)) } });
  const full = await agent.generate('What is the weather in Paris?');
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].input, { city: 'Paris' });
  assert.equal(full.steps.length, 2);
  assert.deepEqual(full.toolCalls.map((c) => [c.toolName, c.args]), [['weather', { city: 'Paris' }]]);
  assert.deepEqual(full.toolResults.map((r) => r.result), [{ city: 'Paris', temperatureC: 18, conditions: 'sunny' }]);
  assert.match(full.text, /Paris/);
  assert.equal(requestsOf(server.current, id).length, 2, 'two model calls');
});

test('generate() takes stream() options: instructions and modelSettings reach the model', T, async () => {
  const { agent, id } = agentFor('echo');
  await agent.generate([{ role: 'user', content: 'Hi' }], { instructions: 'Answer in French.', modelSettings: { temperature: 0.25 } });
  const [req] = requestsOf(server.current, id);
  assert.equal(req.body.temperature, 0.25);
  assert.deepEqual(req.body.messages[0], { role: 'system', content: 'Answer in French.' });
  assert.equal(req.body.messages.at(-1).content, 'Hi');
});

test('generate() calls onChunk, onStepFinish and onFinish as stream() does', T, async () => {
  const { agent } = agentFor('echo');
  const seen = [];
  let finished;
  const full = await agent.generate('Hello there', {
    onChunk: (c) => seen.push(c.type),
    onStepFinish: (s) => seen.push(`step:${s.finishReason}`),
    onFinish: (o) => {
      finished = o;
    },
  });
  assert.equal(seen[0], 'start');
  assert.ok(seen.includes('text-delta'));
  assert.ok(seen.includes('step:stop'));
  assert.equal(seen.at(-1), 'finish');
  assert.equal(finished.text, full.text);
});

test('generate() rejects with the run\'s APICallError and calls onError once', T, async () => {
  const { agent } = agentFor('error-401');
  const errors = [];
  const err = await rejectionOf(agent.generate('Hello', { onError: ({ error }) => errors.push(error) }));
  assert.equal(err.name, 'APICallError');
  assert.equal(err.status, 401);
  assert.equal(errors.length, 1);
  assert.equal(errors[0], err);
});

test('generate() rejects bad options and messages with a TypeError naming the field', T, async () => {
  const { agent } = agentFor('echo');
  const bad = await errorOf(() => agent.generate('Hello', { maxSteps: 'five' }));
  assert.ok(bad instanceof TypeError);
  assert.match(bad.message, /options\.maxSteps/);
  const none = await errorOf(() => agent.generate(undefined));
  assert.ok(none instanceof TypeError);
  assert.match(none.message, /^messages/);
});

test('generate() with an aborted signal resolves with finishReason "abort"', T, async () => {
  const { agent } = agentFor('slow');
  let aborted = 0;
  const full = await agent.generate('Hello', { abortSignal: AbortSignal.abort(), onAbort: () => (aborted += 1) });
  assert.equal(full.finishReason, 'abort');
  assert.equal(aborted, 1);
});

noUnhandledRejections();
