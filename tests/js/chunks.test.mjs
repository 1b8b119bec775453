// fullStream chunks: order, envelope and payload field names (SPEC §4), reasoning, raw chunks,
// and recorded provider streams replayed through the agent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Agent,
  T,
  collect,
  estimatePromptTokens,
  keys,
  modelFor,
  noUnhandledRejections,
  readFixture,
  requestsOf,
  types,
  uid,
  useModelServer,
} from './helpers.mjs';

const server = useModelServer();

/** Runs one stream on a fresh agent whose model runs `script`; returns { out, chunks, request }. */
async function run(script, messages = 'Hello there', options = {}) {
  const srv = server.current;
  const id = uid('chunks');
  const agent = new Agent({ id: 'chunky', model: modelFor(srv, script) });
  const out = await agent.stream(messages, {
    ...options,
    modelSettings: { ...options.modelSettings, headers: { 'x-test-id': id } },
  });
  const chunks = await collect(out.fullStream);
  const [request] = requestsOf(srv, id);
  return { out, chunks, request };
}

/** Collapses runs of the same type: [a, b, b, c] → [a, b…, c]. */
function shape(chunks) {
  const out = [];
  for (const t of types(chunks)) {
    const last = out[out.length - 1];
    if (last === t || last === `${t}…`) out[out.length - 1] = `${t}…`;
    else out.push(t);
  }
  return out;
}

const USAGE_KEYS = ['inputTokens', 'outputTokens', 'totalTokens'];

function assertUsage(usage, expected) {
  for (const k of USAGE_KEYS) assert.equal(typeof usage[k], 'number', `usage.${k} is a number`);
  for (const [k, v] of Object.entries(expected)) assert.equal(usage[k], v, `usage.${k}`);
}

test('a plain reply streams start, step-start, text-start, text-delta…, text-end, step-finish, finish', T, async () => {
  const { chunks } = await run('text:Hello there world');
  assert.deepEqual(types(chunks), [
    'start',
    'step-start',
    'text-start',
    'text-delta',
    'text-delta',
    'text-delta',
    'text-end',
    'step-finish',
    'finish',
  ]);
  assert.deepEqual(
    chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text),
    ['Hello', ' there', ' world'],
  );
});

test('every chunk has the envelope { type, seq, runId, from: "AGENT", payload } and runId = output.runId', T, async () => {
  const { out, chunks } = await run('echo');
  assert.equal(typeof out.runId, 'string');
  assert.ok(out.runId.length > 0);
  for (const [i, c] of chunks.entries()) {
    assert.deepEqual(keys(c), ['from', 'payload', 'runId', 'seq', 'type'], `envelope of ${c.type}`);
    assert.equal(c.seq, i + 1, `seq of ${c.type}`);
    assert.equal(c.from, 'AGENT', `from of ${c.type}`);
    assert.equal(c.runId, out.runId, `runId of ${c.type}`);
    assert.equal(typeof c.payload, 'object', `payload of ${c.type}`);
  }
});

test('options.runId becomes output.runId and every chunk runId', T, async () => {
  const { out, chunks } = await run('echo', 'hi', { runId: 'my-run-42' });
  assert.equal(out.runId, 'my-run-42');
  assert.ok(chunks.every((c) => c.runId === 'my-run-42'));
});

test('two runs without runId get different generated run ids', T, async () => {
  const a = await run('echo');
  const b = await run('echo');
  assert.notEqual(a.out.runId, b.out.runId);
});

test('text-start, text-delta and text-end payloads have exactly their fields, with one id', T, async () => {
  const { chunks } = await run('text:one two three');
  const start = chunks.find((c) => c.type === 'text-start');
  const end = chunks.find((c) => c.type === 'text-end');
  const deltas = chunks.filter((c) => c.type === 'text-delta');
  assert.deepEqual(keys(start.payload), ['id']);
  assert.deepEqual(keys(end.payload), ['id']);
  assert.equal(typeof start.payload.id, 'string');
  assert.equal(end.payload.id, start.payload.id);
  for (const d of deltas) {
    assert.deepEqual(keys(d.payload), ['id', 'text']);
    assert.equal(d.payload.id, start.payload.id);
    assert.equal(typeof d.payload.text, 'string');
  }
});

test('start and step-start payloads: messageId, request.body (what was sent), warnings []', T, async () => {
  const { chunks, request } = await run('echo');
  const start = chunks[0];
  const stepStart = chunks[1];
  assert.equal(start.type, 'start');
  // `start` is `{}` and may carry the messageId.
  for (const k of keys(start.payload)) assert.ok(['messageId'].includes(k), `unexpected start field ${k}`);
  assert.equal(stepStart.type, 'step-start');
  assert.deepEqual(keys(stepStart.payload), ['messageId', 'request', 'warnings']);
  assert.equal(typeof stepStart.payload.messageId, 'string');
  if (start.payload.messageId !== undefined) assert.equal(start.payload.messageId, stepStart.payload.messageId);
  assert.deepEqual(keys(stepStart.payload.request), ['body']);
  const body = stepStart.payload.request.body;
  assert.deepEqual(typeof body === 'string' ? JSON.parse(body) : body, request.body, 'request.body is what the server got');
  assert.deepEqual(stepStart.payload.warnings, []);
});

test('step-finish payload: messageId, stepResult, output, metadata.request, totalUsage', T, async () => {
  const { chunks, request } = await run('text:alpha beta gamma');
  const stepStart = chunks.find((c) => c.type === 'step-start');
  const sf = chunks.find((c) => c.type === 'step-finish');
  assert.deepEqual(keys(sf.payload), ['messageId', 'metadata', 'output', 'stepResult', 'totalUsage']);
  assert.equal(sf.payload.messageId, stepStart.payload.messageId);
  assert.deepEqual(keys(sf.payload.stepResult), ['isContinued', 'reason', 'warnings']);
  assert.deepEqual(sf.payload.stepResult, { reason: 'stop', isContinued: false, warnings: [] });
  assert.deepEqual(keys(sf.payload.output), ['text', 'toolCalls', 'usage']);
  assert.equal(sf.payload.output.text, 'alpha beta gamma');
  assert.deepEqual(sf.payload.output.toolCalls, []);
  const input = estimatePromptTokens(request.body);
  assertUsage(sf.payload.output.usage, { inputTokens: input, outputTokens: 3, totalTokens: input + 3 });
  assert.ok('request' in sf.payload.metadata, 'metadata.request');
  assert.deepEqual(sf.payload.metadata.request, stepStart.payload.request);
  assertUsage(sf.payload.totalUsage, { inputTokens: input, outputTokens: 3, totalTokens: input + 3 });
});

test('finish payload: stepResult.reason, output.usage, totalUsage (and metadata)', T, async () => {
  const { chunks, request } = await run('text:alpha beta');
  const finish = chunks.at(-1);
  assert.equal(finish.type, 'finish');
  for (const k of ['output', 'stepResult', 'totalUsage']) assert.ok(k in finish.payload, `finish.payload.${k}`);
  for (const k of keys(finish.payload)) {
    assert.ok(['stepResult', 'output', 'totalUsage', 'metadata', 'messages'].includes(k), `unexpected finish field ${k}`);
  }
  assert.deepEqual(finish.payload.stepResult, { reason: 'stop' });
  assert.deepEqual(keys(finish.payload.output), ['usage']);
  const input = estimatePromptTokens(request.body);
  assertUsage(finish.payload.output.usage, { inputTokens: input, outputTokens: 2, totalTokens: input + 2 });
  assertUsage(finish.payload.totalUsage, { inputTokens: input, outputTokens: 2, totalTokens: input + 2 });
});

test('the concatenated text deltas equal `await text`', T, async () => {
  const { out, chunks } = await run('echo', 'The quick brown fox jumps over the lazy dog');
  const joined = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.equal(joined, 'You said: The quick brown fox jumps over the lazy dog');
  assert.equal(await out.text, joined);
});

test('many small deltas arrive whole and in order', T, async () => {
  const { out, chunks } = await run('deltas:500');
  const deltas = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text);
  assert.equal(deltas.join(''), Array.from({ length: 500 }, (_, i) => `w${i} `).join(''));
  assert.deepEqual(shape(chunks), ['start', 'step-start', 'text-start', 'text-delta…', 'text-end', 'step-finish', 'finish']);
  assert.equal(await out.text, deltas.join(''));
});

test('the reasoning script streams a reasoning block, then a text block', T, async () => {
  const { out, chunks } = await run('reasoning');
  assert.deepEqual(shape(chunks), [
    'start',
    'step-start',
    'reasoning-start',
    'reasoning-delta…',
    'reasoning-end',
    'text-start',
    'text-delta…',
    'text-end',
    'step-finish',
    'finish',
  ]);
  const rStart = chunks.find((c) => c.type === 'reasoning-start');
  const rEnd = chunks.find((c) => c.type === 'reasoning-end');
  const rDeltas = chunks.filter((c) => c.type === 'reasoning-delta');
  const tStart = chunks.find((c) => c.type === 'text-start');
  assert.deepEqual(keys(rStart.payload), ['id']);
  assert.deepEqual(keys(rEnd.payload), ['id']);
  assert.equal(rEnd.payload.id, rStart.payload.id);
  for (const d of rDeltas) {
    assert.deepEqual(keys(d.payload), ['id', 'text']);
    assert.equal(d.payload.id, rStart.payload.id);
  }
  assert.notEqual(tStart.payload.id, rStart.payload.id, 'blocks have different ids');
  const reasoning = 'Let me think about this. The user wants a short answer, so I will keep it brief.';
  assert.equal(rDeltas.map((c) => c.payload.text).join(''), reasoning);
  assert.equal(await out.reasoningText, reasoning);
  assert.equal(await out.text, 'Here is a short answer.');
  const usage = await out.usage;
  assert.equal(usage.outputTokens, rDeltas.length + chunks.filter((c) => c.type === 'text-delta').length);
});

test('no raw chunks without includeRawChunks', T, async () => {
  const { chunks } = await run('echo');
  assert.ok(!types(chunks).includes('raw'));
  const replay = await run('replay:openai--openai-text');
  assert.ok(!types(replay.chunks).includes('raw'));
});

test('includeRawChunks: one raw chunk per provider event, payload = the event, inside the step', T, async () => {
  const fx = readFixture('openai--openai-text');
  const { chunks, out } = await run('replay:openai--openai-text', 'hi', { includeRawChunks: true });
  const raw = chunks.filter((c) => c.type === 'raw');
  assert.deepEqual(
    raw.map((c) => c.payload),
    fx.events,
    'raw payloads are the recorded events in order',
  );
  for (const c of raw) assert.equal(c.runId, out.runId);
  const ts = types(chunks);
  const first = ts.indexOf('raw');
  assert.ok(first > ts.indexOf('step-start') && ts.lastIndexOf('raw') < ts.indexOf('step-finish'));
  // Raw chunks are extra: the rest of the stream is unchanged.
  assert.equal(await out.text, fx.text);
});

for (const [fixture, reasoningExpected] of [
  ['openai--openai-text', false],
  ['groq--groq-text', false],
  ['deepseek--deepseek-text', false],
  ['mistral--mistral-text', false],
  ['deepseek--deepseek-reasoning', true],
  ['groq--groq-reasoning', true],
]) {
  test(`replay ${fixture}: text, reasoning, finish reason, usage and response match the recording`, T, async () => {
    const fx = readFixture(fixture);
    const { out, chunks } = await run(`replay:${fixture}`);
    const deltas = (type) => chunks.filter((c) => c.type === type).map((c) => c.payload.text).join('');
    assert.ok(fx.text.length > 0);
    assert.equal(deltas('text-delta'), fx.text);
    assert.equal(await out.text, fx.text);
    if (reasoningExpected) {
      assert.ok(fx.reasoning.length > 0);
      assert.equal(deltas('reasoning-delta'), fx.reasoning);
      assert.equal(await out.reasoningText, fx.reasoning);
      const ts = types(chunks);
      assert.ok(ts.indexOf('reasoning-start') < ts.indexOf('reasoning-end'));
      assert.ok(ts.indexOf('reasoning-end') < ts.indexOf('text-start'), 'reasoning ends before the text starts');
    } else {
      assert.ok(!types(chunks).some((t) => t.startsWith('reasoning')));
      assert.ok(!(await out.reasoningText), 'no reasoning text');
    }
    const expectedReason = { stop: 'stop', length: 'length', content_filter: 'content-filter' }[fx.finishReason];
    assert.equal(await out.finishReason, expectedReason);
    assert.equal(chunks.at(-1).payload.stepResult.reason, expectedReason);
    const usage = await out.usage;
    assert.equal(usage.inputTokens, fx.usage.prompt_tokens);
    assert.equal(usage.outputTokens, fx.usage.completion_tokens);
    assert.equal(usage.totalTokens, fx.usage.total_tokens);
    const reasoningTokens = fx.usage.completion_tokens_details?.reasoning_tokens;
    if (reasoningTokens) assert.equal(usage.reasoningTokens, reasoningTokens);
    const response = await out.response;
    assert.equal(response.id, fx.id);
    assert.equal(response.modelId, fx.model);
    assert.equal(new Date(response.timestamp).getTime(), fx.created * 1000);
  });
}

test('length and content-filter finish reasons reach step-finish and finish', T, async () => {
  for (const [script, reason] of [
    ['length', 'length'],
    ['content-filter', 'content-filter'],
  ]) {
    const { chunks, out } = await run(script);
    assert.equal(chunks.find((c) => c.type === 'step-finish').payload.stepResult.reason, reason);
    assert.equal(chunks.at(-1).type, 'finish');
    assert.equal(chunks.at(-1).payload.stepResult.reason, reason);
    assert.equal(await out.finishReason, reason);
  }
});

test('onChunk sees exactly the chunks of fullStream, in order', T, async () => {
  const srv = server.current;
  const seen = [];
  const agent = new Agent({ id: 'cb', model: modelFor(srv, 'reasoning') });
  const out = await agent.stream('hi', { onChunk: (c) => seen.push(c) });
  const chunks = await collect(out.fullStream);
  assert.deepEqual(seen, chunks);
});

noUnhandledRejections();
