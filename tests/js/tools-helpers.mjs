// Shared helpers of the tool tests (tests/js/tools*.test.mjs). Not a test file itself.
// Builds on helpers.mjs (server, uid, collect); adds the tool-specific readers.

import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, modelFor, requestsOf, types, uid } from './helpers.mjs';

export { createTool, stepCountIs, hasToolCall } from '../../pkg/index.node.js';

/** The weather tool's JSON Schema (the server's tool scripts call it with `{ city: 'Paris' }`). */
export const WEATHER_SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City name, e.g. Paris' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city'],
  additionalProperties: false,
};

/** What the fake weather service answers for `city`. */
export const forecast = (city) => ({ city, temperatureC: 18, conditions: 'sunny' });

/**
 * A weather-style tool definition (not yet passed through createTool) that records its calls in
 * `calls` ({ input, context }).
 */
export function weatherDef(calls = [], overrides = {}) {
  return {
    id: 'weather',
    description: 'Current weather for a city',
    inputSchema: WEATHER_SCHEMA,
    execute: async (input, context) => {
      calls.push({ input, context });
      return forecast(input.city);
    },
    ...overrides,
  };
}

/**
 * Runs one stream on a fresh agent whose model runs `script` and reads it to the end.
 * Returns { agent, out, chunks, requests, id } where `requests` are this run's model requests.
 */
export async function runAgent(srv, script, { tools, options = {}, agent: agentConfig = {}, messages = 'Hello' } = {}) {
  const id = uid('tools');
  const agent = new Agent({
    id: 'tool-agent',
    model: modelFor(srv, script, { headers: { 'x-test-id': id } }),
    ...(tools ? { tools } : {}),
    ...agentConfig,
  });
  const out = await agent.stream(messages, options);
  const chunks = [];
  for await (const chunk of out.fullStream) chunks.push(chunk);
  return { agent, out, chunks, requests: requestsOf(srv, id), id };
}

/** A fresh agent on `script` with the x-test-id header set; returns { agent, id }. */
export function agentOn(srv, script, config = {}) {
  const id = uid('tools');
  const agent = new Agent({ id: 'tool-agent', model: modelFor(srv, script, { headers: { 'x-test-id': id } }), ...config });
  return { agent, id };
}

/** Chunks of one type. */
export const ofType = (chunks, type) => chunks.filter((c) => c.type === type);

/** The one chunk of `type` (fails when there are none or several). */
export function only(chunks, type) {
  const found = ofType(chunks, type);
  assert.equal(found.length, 1, `exactly one ${type} chunk (types: ${types(chunks).join(',')})`);
  return found[0];
}

/** Concatenated `argsTextDelta`s of one call. */
export const argsText = (chunks, toolCallId) =>
  ofType(chunks, 'tool-call-delta')
    .filter((c) => c.payload.toolCallId === toolCallId)
    .map((c) => c.payload.argsTextDelta)
    .join('');

/** The `tools[].function.name`s of a request body. */
export const toolNames = (body) => (body.tools ?? []).map((t) => t.function.name);

/** The messages of a request body that come after the first `n`. */
export const messagesAfter = (body, n) => body.messages.slice(n);

/** The `role: 'tool'` messages of a request body. */
export const toolMessages = (body) => body.messages.filter((m) => m.role === 'tool');

/** The assistant message with `tool_calls` of a request body (the last one). */
export const assistantToolCalls = (body) => body.messages.filter((m) => m.role === 'assistant' && m.tool_calls).at(-1);

/** Reads `reader` until `pred(chunk)`; returns the chunks read (fails if the stream ends first). */
export async function readUntil(reader, pred, seen = []) {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`stream ended before the awaited chunk (${types(seen).join(',')})`);
    seen.push(value);
    if (pred(value)) return seen;
  }
}

/** Reads what is left of `reader` into `seen`. */
export async function readRest(reader, seen = []) {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return seen;
    seen.push(value);
  }
}

/** A promise with its resolve function outside. */
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Counts how many calls of an async function run at the same time. */
export function concurrencyMeter() {
  const meter = { current: 0, max: 0, started: [] };
  meter.run = async (label, ms) => {
    meter.current += 1;
    meter.max = Math.max(meter.max, meter.current);
    meter.started.push(label);
    try {
      await delay(ms);
    } finally {
      meter.current -= 1;
    }
  };
  return meter;
}

/** Resolves once `pred()` is true (polling), failing after `timeoutMs`. */
export async function until(pred, what, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(5);
  }
}
