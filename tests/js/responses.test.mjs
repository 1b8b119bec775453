// The OpenAI Responses API (`{ api: 'responses' }`): recorded xAI and OpenAI streams replayed
// through the package; the request goes to /responses in that API's shape.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, FIXTURES, T, collect, errorOf, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';

const server = useModelServer();

const lines = (name) => readFileSync(path.join(FIXTURES, `${name}.chunks.txt`), 'utf8').split(/\r?\n/).filter((l) => l.trim());

function agentFor(provider, fixture) {
  return new Agent({
    id: uid('resp'),
    instructions: 'Be brief.',
    model: { id: `${provider}/replay-model`, url: server.current.url, apiKey: 'k', api: 'responses', headers: { 'x-script': `replay:${fixture}` } },
  });
}

test('xai over the Responses API: the recorded text, usage and finish', T, async () => {
  const fixture = 'xai--xai-text-streaming.1';
  const events = lines(fixture).map((l) => JSON.parse(l));
  const want = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  const done = events.find((e) => e.type === 'response.completed').response;
  const out = await agentFor('xai', fixture).stream('hello', { maxSteps: 1 });
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(await out.text, want);
  assert.equal(await out.finishReason, 'stop');
  assert.equal((await out.usage).inputTokens, done.usage.input_tokens);
  const req = server.current.requests.at(-1);
  assert.match(req.path, /\/responses$/);
  assert.equal(req.body.stream, true);
  assert.deepEqual(req.body.input[0], { role: 'system', content: 'Be brief.' });
  assert.equal(req.body.input[1].role, 'user');
});

test('the recorded Responses error stream ends in an error chunk with its message', T, async () => {
  const fixture = 'openai--openai-error.1';
  const out = await agentFor('openai', fixture).stream('hello', { maxSteps: 1 });
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.at(-1).type, 'error');
  assert.ok(chunks.at(-1).payload.error.message.length > 0);
  await assert.rejects(out.text);
});

test("api: 'responses' only applies to OpenAI-compatible providers", T, async () => {
  const err = await errorOf(() => new Agent({ id: 'x', model: { id: 'anthropic/claude', apiKey: 'k', api: 'responses' } }));
  assert.ok(err instanceof TypeError && /config\.model\.api/.test(err.message), err?.message);
});

noUnhandledRejections();
