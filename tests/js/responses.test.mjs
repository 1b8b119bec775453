// The OpenAI Responses API (`openai/…` by default, `{ api: 'responses' }` for the others):
// recorded xAI and OpenAI streams replayed through the package, and the model server's scripts
// over that API (a tool loop, reasoning); the request goes to /responses in that API's shape.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, FIXTURES, T, collect, errorOf, noUnhandledRejections, types, uid, useModelServer } from './helpers.mjs';
import { createTool, weatherDef } from './tools-helpers.mjs';
import { InMemoryStore, Memory } from '../../pkg/index.node.js';

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

test("openai/ speaks the Responses API unless the model says api: 'chat'; other prefixes speak Chat", T, async () => {
  const url = server.current.url;
  const sent = async (model) => {
    const before = server.current.requests.length;
    const out = await new Agent({ id: uid('default'), model: { url, apiKey: 'k', ...model } }).stream('hi');
    assert.equal(await out.text, 'You said: hi');
    return server.current.requests.slice(before)[0];
  };
  const byDefault = await sent({ id: 'openai/echo' });
  assert.equal(byDefault.path, '/v1/responses');
  assert.deepEqual(byDefault.body.input, [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }]);
  assert.equal(byDefault.body.store, false, 'stateless: the history travels with each request');
  assert.equal((await sent({ id: 'openai/echo', api: 'chat' })).path, '/v1/chat/completions');
  assert.equal((await sent({ id: 'groq/echo' })).path, '/v1/chat/completions');
  assert.equal((await sent({ id: 'xai/echo', api: 'responses' })).path, '/v1/responses');
});

test('azure/<deployment> speaks the Responses API with its key in api-key; providerOptions.azure sets its transport', T, async () => {
  const before = server.current.requests.length;
  const agent = new Agent({ id: uid('azure'), model: { id: 'azure/echo', url: server.current.url, apiKey: 'az-key' } });
  const out = await agent.stream('hi', { providerOptions: { azure: { transport: 'auto', store: false } } });
  assert.equal(await out.text, 'You said: hi');
  assert.equal(out.transport?.type, 'websocket', "'auto' asked for a socket (Node 20 has none: HTTP)");
  const [req] = server.current.requests.slice(before);
  assert.equal(req.path, '/v1/responses');
  assert.equal(req.headers['api-key'], 'az-key');
  assert.equal(req.headers.authorization, undefined);
  assert.equal(req.body.model, 'echo', 'the deployment name');
  assert.equal(req.body.transport, undefined);
});

test('a two-step tool loop over the Responses API: the call goes back as function_call, its result as function_call_output', T, async () => {
  const weather = createTool(weatherDef());
  const before = server.current.requests.length;
  const agent = new Agent({ id: uid('loop'), model: { id: 'openai/tool-call', url: server.current.url, apiKey: 'k' }, tools: { weather } });
  const out = await agent.stream('Weather in Paris?');
  const chunks = await collect(out.fullStream);
  assert.deepEqual(types(chunks).filter((t) => ['tool-call', 'tool-result', 'step-finish', 'finish'].includes(t)), ['tool-call', 'tool-result', 'step-finish', 'step-finish', 'finish']);
  const call = chunks.find((c) => c.type === 'tool-call').payload;
  assert.deepEqual(call.args, { city: 'Paris' });
  const [first, second] = server.current.requests.slice(before).map((r) => r.body);
  assert.deepEqual(first.tools.map((t) => [t.type, t.name]), [['function', 'weather']]);
  assert.deepEqual(second.input.slice(1), [
    { type: 'function_call', call_id: call.toolCallId, name: 'weather', arguments: JSON.stringify(call.args) },
    { type: 'function_call_output', call_id: call.toolCallId, output: JSON.stringify(await chunks.find((c) => c.type === 'tool-result').payload.result) },
  ]);
  assert.match(await out.text, /^The tool said: /);
});

test('reasoning in a tool loop goes back with its encrypted content and the call with its item id; the server takes it', T, async () => {
  const weather = createTool(weatherDef());
  const before = server.current.requests.length;
  const memory = new Memory({ storage: new InMemoryStore() });
  const agent = new Agent({ id: uid('rs-loop'), model: { id: 'openai/reasoning-tool-call', url: server.current.url, apiKey: 'k' }, tools: { weather }, memory });
  const options = { providerOptions: { openai: { reasoningEffort: 'low' } }, memory: { thread: 'rs-thread', resource: 'u1' } };
  const out = await agent.stream('Weather in Paris?', options);
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.at(-1).type, 'finish', JSON.stringify(chunks.at(-1).payload?.error));
  assert.match(await out.text, /^The tool said: /);
  assert.equal(await out.reasoningText, 'The user wants facts a tool has. I will call it.');
  const [first, second] = server.current.requests.slice(before).map((r) => r.body);
  assert.equal(first.store, false);
  assert.deepEqual(first.include, ['reasoning.encrypted_content']);
  const [reasoning, call, result] = second.input.slice(1);
  assert.equal(reasoning.type, 'reasoning');
  assert.match(reasoning.id, /^rs_/);
  assert.match(reasoning.encrypted_content, /^gAAAAA/);
  assert.deepEqual(reasoning.summary, [{ type: 'summary_text', text: 'The user wants facts a tool has. I will call it.' }]);
  assert.equal(call.type, 'function_call');
  assert.match(call.id, /^fc_/, 'the call keeps the item id its reasoning is paired with');
  assert.equal(result.type, 'function_call_output');

  // The next turn sends the same items again from memory, and the server takes them again.
  const next = await agent.stream('And in Rome?', options);
  const more = await collect(next.fullStream);
  assert.equal(more.at(-1).type, 'finish', JSON.stringify(more.at(-1).payload?.error));
  const again = server.current.requests.at(-2).body.input;
  assert.deepEqual(again.slice(1, 4), [reasoning, call, result]);
});

test('reasoning summaries stream as reasoning chunks over the Responses API', T, async () => {
  const agent = new Agent({ id: uid('reasoning'), model: { id: 'openai/reasoning:Short answer.', url: server.current.url, apiKey: 'k' } });
  const out = await agent.stream('Think first', { providerOptions: { openai: { reasoningEffort: 'low', reasoningSummary: 'auto' } } });
  const chunks = await collect(out.fullStream);
  const order = types(chunks).filter((t) => t.startsWith('reasoning-') || t.startsWith('text-'));
  assert.equal(order[0], 'reasoning-start');
  assert.ok(order.indexOf('reasoning-end') < order.indexOf('text-start'));
  assert.match(await out.reasoningText, /^Let me think about this\./);
  assert.equal(await out.text, 'Short answer.');
  const body = server.current.requests.at(-1).body;
  assert.deepEqual(body.reasoning, { effort: 'low', summary: 'auto' });
  assert.deepEqual(body.include, ['reasoning.encrypted_content']);
});

noUnhandledRejections();
