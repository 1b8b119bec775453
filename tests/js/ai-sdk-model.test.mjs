// An AI SDK model object as `model`: the loop drives its doStream exactly as a built-in provider,
// with the real @ai-sdk/openai-compatible pointed at the local model server, and with a
// hand-written model object.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Agent, T, collect, noUnhandledRejections, types, uid, useModelServer } from './helpers.mjs';
import { createTool } from '../../pkg/index.node.js';

const server = useModelServer();

function compatible(script) {
  return createOpenAICompatible({ name: 'local', baseURL: server.current.url, apiKey: 'k' }).chatModel(script);
}

test('the real @ai-sdk/openai-compatible model streams text through the agent', T, async () => {
  const agent = new Agent({ id: uid('sdk'), instructions: 'Be brief.', model: compatible('echo') });
  const out = await agent.stream('hello from the sdk');
  const chunks = await collect(out.fullStream);
  assert.deepEqual(types(chunks).filter((t) => !t.startsWith('text-delta')).slice(0, 3), ['start', 'step-start', 'text-start']);
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(await out.text, 'You said: hello from the sdk');
  assert.equal(await out.finishReason, 'stop');
  const sent = server.current.requests.at(-1).body;
  assert.equal(sent.messages[0].content, 'Be brief.');
  assert.equal(sent.model, 'echo');
});

test('a two-step tool loop through the real AI SDK model: the second request carries the result', T, async () => {
  const weather = createTool({
    id: 'weather',
    description: 'Weather for a city',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execute: async ({ city }) => ({ city, temperatureC: 18 }),
  });
  const agent = new Agent({ id: uid('sdk'), model: compatible('tool-call'), tools: { weather } });
  const out = await agent.stream('weather in Paris?');
  const chunks = await collect(out.fullStream);
  const t = types(chunks);
  assert.ok(t.indexOf('tool-call') < t.indexOf('tool-result') && t.indexOf('tool-result') < t.lastIndexOf('text-delta'), t.join(','));
  assert.match(await out.text, /The tool said: .*temperatureC/);
  const second = server.current.requests.at(-1).body.messages;
  assert.equal(second.at(-1).role, 'tool');
  assert.match(second.at(-1).content, /"temperatureC":18/);
  assert.equal(second.at(-2).tool_calls[0].function.name, 'weather');
});

test('a hand-written model object: parts in, chunks out; its errors are error chunks', T, async () => {
  const parts = (list) => new ReadableStream({ start(c) { for (const p of list) c.enqueue(p); c.close(); } });
  let seen;
  const model = {
    specificationVersion: 'v2',
    provider: 'fake',
    modelId: 'fake-1',
    async doStream(options) {
      seen = options;
      return {
        stream: parts([
          { type: 'stream-start', warnings: [] },
          { type: 'response-metadata', id: 'resp_1', modelId: 'fake-1' },
          { type: 'reasoning-start', id: 'r' },
          { type: 'reasoning-delta', id: 'r', delta: 'thinking' },
          { type: 'reasoning-end', id: 'r' },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'Hi ' },
          { type: 'text-delta', id: 't', delta: 'there' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: 'stop', usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 } },
        ]),
      };
    },
  };
  const agent = new Agent({ id: uid('fake'), instructions: 'sys', model, defaultOptions: { modelSettings: { temperature: 0.3 } } });
  const out = await agent.stream('hello');
  assert.equal(await out.text, 'Hi there');
  assert.equal(await out.reasoningText, 'thinking');
  assert.deepEqual(await out.usage, { inputTokens: 5, outputTokens: 2, totalTokens: 7 });
  assert.equal((await out.response).modelId, 'fake-1');
  assert.equal(seen.temperature, 0.3);
  assert.deepEqual(seen.prompt[0], { role: 'system', content: 'sys' });
  assert.deepEqual(seen.prompt[1], { role: 'user', content: [{ type: 'text', text: 'hello' }] });
  assert.ok(seen.abortSignal instanceof AbortSignal);

  const failing = { ...model, async doStream() { return { stream: parts([{ type: 'error', error: { message: 'model overloaded' } }]) }; } };
  const bad = await new Agent({ id: uid('fake'), model: failing }).stream('x');
  const chunks = await collect(bad.fullStream);
  assert.equal(chunks.at(-1).type, 'error');
  assert.match(chunks.at(-1).payload.error.message, /model overloaded/);
  await assert.rejects(bad.text, /model overloaded/);
});

noUnhandledRejections();
