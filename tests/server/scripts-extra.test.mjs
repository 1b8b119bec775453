// Tests of the tool-loop scripts of the model server (call, call-always, parallel,
// tools-then-text, sequence): `node --test tests/server/`.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer } from './model-server.mjs';

const T = { timeout: 10_000 };

let server;
before(async () => {
  server = await startModelServer({ demoDelayMs: 0 });
});
after(() => server?.close());

const WEATHER = {
  type: 'function',
  function: {
    name: 'weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const CLOCK = {
  type: 'function',
  function: { name: 'clock', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] } },
};

/** Posts a streaming chat request; returns the decoded events: { text, calls, finish }. */
async function chat(model, messages = [{ role: 'user', content: 'hi' }], tools = [WEATHER]) {
  const res = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages, tools }),
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(res.status, 200);
  const body = await res.text();
  assert.ok(body.trimEnd().endsWith('data: [DONE]'), 'ends with [DONE]');
  let text = '';
  let finish;
  const calls = [];
  let toolChunks = 0;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const event = JSON.parse(line.slice(6));
    const choice = event.choices?.[0];
    if (!choice) continue;
    if (typeof choice.delta?.content === 'string') text += choice.delta.content;
    for (const piece of choice.delta?.tool_calls ?? []) {
      toolChunks += 1;
      const call = (calls[piece.index] ??= { id: '', name: '', arguments: '' });
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.name += piece.function.name;
      if (piece.function?.arguments) call.arguments += piece.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, calls, finish, toolChunks };
}

/** The conversation after `n` tool turns (assistant tool_calls + tool result each). */
function afterTurns(n) {
  const messages = [{ role: 'user', content: 'hi' }];
  for (let i = 0; i < n; i++) {
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'weather', arguments: '{}' } }] });
    messages.push({ role: 'tool', tool_call_id: `c${i}`, content: `"r${i}"` });
  }
  return messages;
}

describe('call:<tool>:<json args>', () => {
  it('calls the named tool with exactly those arguments, split over several chunks', T, async () => {
    const r = await chat('call:lookup:{"q":"rust wasm","limit":3}');
    assert.equal(r.finish, 'tool_calls');
    assert.equal(r.calls.length, 1);
    assert.equal(r.calls[0].name, 'lookup');
    assert.match(r.calls[0].id, /^call_/);
    assert.deepEqual(JSON.parse(r.calls[0].arguments), { q: 'rust wasm', limit: 3 });
    assert.ok(r.toolChunks > 2, 'arguments arrive in pieces');
  });

  it('sends `{}` without arguments and keeps non-JSON arguments as they are', T, async () => {
    assert.equal((await chat('call:ping')).calls[0].arguments, '{}');
    assert.equal((await chat('call:ping:{not json')).calls[0].arguments, '{not json');
  });

  it('answers "The tool said: …" once the conversation ends with tool results', T, async () => {
    const r = await chat('call:weather:{}', afterTurns(1));
    assert.equal(r.finish, 'stop');
    assert.equal(r.text, 'The tool said: "r0"');
  });
});

describe('call-always', () => {
  it('calls again even after tool results', T, async () => {
    const r = await chat('call-always:weather:{"city":"Oslo"}', afterTurns(3));
    assert.equal(r.finish, 'tool_calls');
    assert.deepEqual(r.calls.map((c) => [c.name, JSON.parse(c.arguments)]), [['weather', { city: 'Oslo' }]]);
  });
});

describe('parallel:<n>', () => {
  it('makes n calls of the first tool with distinct ids and schema-fitting arguments', T, async () => {
    const r = await chat('parallel:4');
    assert.equal(r.finish, 'tool_calls');
    assert.deepEqual(r.calls.map((c) => c.name), ['weather', 'weather', 'weather', 'weather']);
    assert.equal(new Set(r.calls.map((c) => c.id)).size, 4);
    assert.deepEqual(r.calls.map((c) => JSON.parse(c.arguments).city), ['Paris', 'London', 'Tokyo', 'Berlin']);
  });

  it('defaults to 3 calls and answers text after tool results', T, async () => {
    assert.equal((await chat('parallel')).calls.length, 3);
    assert.equal((await chat('parallel:3', afterTurns(1))).finish, 'stop');
  });
});

describe('tools-then-text:<n>', () => {
  it('calls the first tool until the conversation holds n tool turns, then answers', T, async () => {
    for (const turns of [0, 1]) {
      const r = await chat('tools-then-text:2', afterTurns(turns));
      assert.equal(r.finish, 'tool_calls', `after ${turns} turn(s)`);
      assert.equal(r.calls.length, 1);
      assert.equal(r.calls[0].name, 'weather');
    }
    const done = await chat('tools-then-text:2', afterTurns(2));
    assert.equal(done.finish, 'stop');
    assert.equal(done.text, 'Done after 2 tool steps.');
  });

  it('tools-then-text:0 answers at once', T, async () => {
    const r = await chat('tools-then-text:0');
    assert.equal(r.finish, 'stop');
    assert.equal(r.calls.length, 0);
  });
});

describe('sequence:<a>,<b>,…', () => {
  it('calls the listed tools one per step (args fit each schema), then answers', T, async () => {
    const first = await chat('sequence:weather,clock', afterTurns(0), [WEATHER, CLOCK]);
    assert.deepEqual(first.calls.map((c) => [c.name, JSON.parse(c.arguments)]), [['weather', { city: 'Paris' }]]);
    const second = await chat('sequence:weather,clock', afterTurns(1), [WEATHER, CLOCK]);
    assert.equal(second.calls[0].name, 'clock');
    assert.ok(['UTC', 'CET'].includes(JSON.parse(second.calls[0].arguments).zone));
    const third = await chat('sequence:weather,clock', afterTurns(2), [WEATHER, CLOCK]);
    assert.equal(third.finish, 'stop');
    assert.equal(third.text, 'Done after 2 tool steps.');
  });
});

describe('the catalogue', () => {
  it('lists the new scripts on GET /v1/models', T, async () => {
    const res = await fetch(`${server.url}/models`, { signal: AbortSignal.timeout(5_000) });
    const ids = (await res.json()).data.map((m) => m.id);
    for (const name of ['call', 'call-always', 'parallel', 'tools-then-text', 'sequence']) assert.ok(ids.includes(name), name);
  });
});
