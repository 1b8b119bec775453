// Anthropic and Google through the package: each recorded stream is replayed by the local model
// server as that provider's SSE stream, and what the agent makes of it must match what the
// recording contains (text, reasoning, tool calls with parsed arguments, usage, finish reason).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, FIXTURES, T, collect, noUnhandledRejections, types, uid, useModelServer } from './helpers.mjs';

const server = useModelServer();

/** Each line of a fixture, parsed. */
const events = (name) =>
  readFileSync(path.join(FIXTURES, `${name}.chunks.txt`), 'utf8')
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));

function agentFor(provider, fixture) {
  const srv = server.current;
  return new Agent({
    id: uid('prov'),
    model: { id: `${provider}/replay-model`, url: srv.url, apiKey: 'test-key', headers: { 'x-script': `replay:${fixture}` } },
  });
}

/** What an Anthropic recording says: text, thinking, tool calls, stop reason, usage. */
function anthropicExpected(fixture) {
  const out = { text: '', reasoning: '', calls: new Map(), stop: null, input: 0, output: 0 };
  for (const e of events(fixture)) {
    if (e.type === 'message_start') {
      out.input = e.message.usage.input_tokens;
      out.output = e.message.usage.output_tokens;
    }
    if (e.type === 'content_block_start' && e.content_block.type === 'tool_use') {
      out.calls.set(e.index, { name: e.content_block.name, json: '' });
    }
    if (e.type === 'content_block_delta') {
      if (e.delta.type === 'text_delta') out.text += e.delta.text;
      if (e.delta.type === 'thinking_delta') out.reasoning += e.delta.thinking;
      if (e.delta.type === 'input_json_delta') out.calls.get(e.index).json += e.delta.partial_json;
    }
    if (e.type === 'message_delta') {
      out.stop = e.delta.stop_reason;
      if (e.usage?.output_tokens != null) out.output = e.usage.output_tokens;
    }
  }
  out.toolCalls = [...out.calls.values()].map((c) => ({ toolName: c.name, args: c.json ? JSON.parse(c.json) : {} }));
  return out;
}

const ANTHROPIC_REASONS = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', tool_use: 'tool-calls', refusal: 'content-filter' };

for (const fixture of ['anthropic--anthropic-text', 'anthropic--anthropic-json-tool.1', 'anthropic--anthropic-tool-no-args', 'anthropic--anthropic-refusal']) {
  test(`anthropic: ${fixture} replayed through the package`, T, async () => {
    const want = anthropicExpected(fixture);
    const out = await agentFor('anthropic', fixture).stream('replay', { maxSteps: 1 });
    const chunks = await collect(out.fullStream);
    assert.equal(chunks.at(-1).type, 'finish', JSON.stringify(chunks.at(-1)));
    assert.equal(await out.text, want.text);
    assert.equal((await out.reasoningText) ?? '', want.reasoning);
    const calls = (await out.toolCalls).map((c) => ({ toolName: c.toolName, args: c.args }));
    assert.deepEqual(calls, want.toolCalls);
    assert.equal(await out.finishReason, ANTHROPIC_REASONS[want.stop] ?? 'other');
    const usage = await out.usage;
    assert.equal(usage.inputTokens, want.input);
    assert.equal(usage.outputTokens, want.output);
    const req = server.current.requests.at(-1);
    assert.match(req.path, /\/messages$/);
    assert.equal(req.headers['x-api-key'], 'test-key');
    assert.equal(req.headers['anthropic-version'], '2023-06-01');
    assert.equal(req.headers['anthropic-dangerous-direct-browser-access'], undefined, 'only in a page');
    if (want.text) assert.ok(types(chunks).includes('text-delta'));
  });
}

/** What a Gemini recording says. */
function googleExpected(fixture) {
  const out = { text: '', reasoning: '', toolNames: [], finish: null, usage: null };
  for (const e of events(fixture)) {
    for (const p of e.candidates?.[0]?.content?.parts ?? []) {
      if (typeof p.text === 'string') {
        if (p.thought) out.reasoning += p.text;
        else out.text += p.text;
      }
      if (p.functionCall?.name) out.toolNames.push(p.functionCall.name);
    }
    if (e.candidates?.[0]?.finishReason) out.finish = e.candidates[0].finishReason;
    if (e.usageMetadata) out.usage = e.usageMetadata;
  }
  return out;
}

for (const fixture of ['google--google-text', 'google--google-reasoning', 'google--google-tool-call', 'google--google-stream-tool-call-arguments']) {
  test(`google: ${fixture} replayed through the package`, T, async () => {
    const want = googleExpected(fixture);
    const out = await agentFor('google', fixture).stream('replay', { maxSteps: 1 });
    const chunks = await collect(out.fullStream);
    assert.equal(chunks.at(-1).type, 'finish', JSON.stringify(chunks.at(-1)));
    assert.equal(await out.text, want.text);
    assert.equal((await out.reasoningText) ?? '', want.reasoning);
    const calls = await out.toolCalls;
    for (const c of calls) assert.equal(typeof c.args, 'object', 'arguments are parsed');
    assert.deepEqual([...new Set(calls.map((c) => c.toolName))], [...new Set(want.toolNames)]);
    assert.equal(await out.finishReason, calls.length ? 'tool-calls' : want.finish === 'STOP' ? 'stop' : (await out.finishReason));
    const usage = await out.usage;
    assert.equal(usage.inputTokens, want.usage.promptTokenCount);
    assert.equal(usage.totalTokens, want.usage.totalTokenCount);
    const req = server.current.requests.at(-1);
    assert.match(req.path, /models\/replay-model:streamGenerateContent$/);
    assert.equal(req.headers['x-goog-api-key'], 'test-key');
    assert.equal(req.body.contents[0].role, 'user');
  });
}

noUnhandledRejections();
