// Retries of model calls (SPEC §6): network errors, 408, 409, 429 and 5xx are retried up to
// maxRetries with backoff from 1 s (×2), honouring Retry-After / retry-after-ms; other 4xx never.
// Timings are checked as lower bounds only, from the request start times the server recorded.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, noUnhandledRejections, rejectionOf, requestsOf, types, uid, useModelServer } from './helpers.mjs';

// Clock granularity: a timer may fire a millisecond or two before Date.now() says it is due.
const SLACK_MS = 15;

const failures = new Map();
const busy = { message: 'busy', type: 'server_error', code: null };

/**
 * A script `<name>:<value>:<n>` that fails the first n requests of an x-test-id with
 * `fail(ex, value)`, then answers like text:ok.
 */
function failingFirst(description, fail) {
  return {
    description,
    run(ex) {
      const [value, n] = ex.arg.split(':').map(Number);
      const key = ex.headers['x-test-id'];
      const seen = failures.get(key) ?? 0;
      failures.set(key, seen + 1);
      if (seen < n) return fail(ex, value);
      const chat = ex.chat();
      chat.content('ok');
      return chat.complete('stop');
    },
  };
}

const server = useModelServer({
  scripts: {
    // retry-after-ms:<ms>:<n>: a 503 that asks for <ms> milliseconds (retry-after-ms only).
    'retry-after-ms': failingFirst('test: 503 with retry-after-ms', (ex, ms) =>
      ex.error(503, busy, { 'retry-after-ms': String(ms) }),
    ),
    // retry-after-date:<s>:<n>: a 503 whose Retry-After is the HTTP date <s> seconds from now.
    'retry-after-date': failingFirst('test: 503 with Retry-After as an HTTP date', (ex, s) =>
      ex.error(503, busy, { 'retry-after': new Date(Date.now() + s * 1000).toUTCString() }),
    ),
  },
});

/** One run of `script` under a fresh x-test-id; returns { out, chunks, requests, gaps }. */
async function run(script, { maxRetries, options = {} } = {}) {
  const srv = server.current;
  const id = uid('retry');
  const config = { id: 'retrier', model: modelFor(srv, script, { headers: { 'x-test-id': id } }) };
  if (maxRetries !== undefined) config.maxRetries = maxRetries;
  const agent = new Agent(config);
  const out = await agent.stream('Hello there', options);
  const chunks = await collect(out.fullStream);
  const requests = requestsOf(srv, id);
  const gaps = requests.slice(1).map((r, i) => r.startedAt - requests[i].startedAt);
  return { out, chunks, requests, gaps };
}

test('flaky:500:2 with maxRetries 2 succeeds on the third request, after 1 s then 2 s of backoff', T, async () => {
  const { out, chunks, requests, gaps } = await run('flaky:500:2', { maxRetries: 2 });
  assert.equal(requests.length, 3);
  assert.equal(await out.text, 'You said: Hello there');
  assert.equal(await out.finishReason, 'stop');
  assert.ok(!types(chunks).includes('error'), 'the retried failures are not reported as errors');
  assert.equal(types(chunks).filter((t) => t === 'step-start').length, 1, 'retries stay inside one step');
  assert.ok(gaps[0] >= 1000 - SLACK_MS, `first backoff ${gaps[0]} ms >= 1 s`);
  assert.ok(gaps[1] >= 2000 - SLACK_MS, `second backoff ${gaps[1]} ms >= 2 s`);
});

test('flaky:500:2 with maxRetries 1 fails, saying it failed after 2 attempts', T, async () => {
  const { out, chunks, requests } = await run('flaky:500:2', { maxRetries: 1 });
  assert.equal(requests.length, 2);
  const last = chunks.at(-1);
  assert.equal(last.type, 'error');
  assert.equal(last.payload.error.name, 'APICallError');
  assert.equal(last.payload.error.status, 500);
  assert.match(last.payload.error.message, /failed after 2 attempts/);
  const err = await rejectionOf(out.text);
  assert.match(err.message, /failed after 2 attempts/);
});

test('429 with Retry-After: 1 waits at least 1 s before the retry', T, async () => {
  const { out, requests, gaps } = await run('error-429:1', { maxRetries: 1 });
  assert.equal(requests.length, 2);
  assert.equal(requests[0].headers['x-test-id'], requests[1].headers['x-test-id']);
  assert.ok(gaps[0] >= 1000 - SLACK_MS, `waited ${gaps[0]} ms >= Retry-After 1 s`);
  const err = await rejectionOf(out.text);
  assert.equal(err.status, 429);
  assert.match(err.message, /failed after 2 attempts/);
});

test('429 without retries fails at once with status 429 and isRetryable', T, async () => {
  const { out, requests, chunks } = await run('error-429:1');
  assert.equal(requests.length, 1);
  assert.equal(chunks.at(-1).type, 'error');
  const err = await rejectionOf(out.text);
  assert.equal(err.status, 429);
  assert.equal(err.isRetryable, true);
  assert.ok(!/attempts/.test(err.message));
});

test('retry-after-ms is honoured (longer than the 1 s backoff would be)', T, async () => {
  const { out, requests, gaps } = await run('retry-after-ms:1500:1', { maxRetries: 1 });
  assert.equal(requests.length, 2);
  assert.equal(await out.text, 'ok');
  assert.ok(gaps[0] >= 1500 - SLACK_MS, `waited ${gaps[0]} ms >= retry-after-ms 1500`);
});

test('Retry-After as an HTTP date waits until that date (longer than the 1 s backoff would be)', T, async () => {
  // The date has whole seconds: 3 s from now is more than 2 s away when the client reads it.
  const { out, requests, gaps } = await run('retry-after-date:3:1', { maxRetries: 1 });
  assert.equal(requests.length, 2);
  assert.equal(await out.text, 'ok');
  assert.ok(gaps[0] >= 2000 - SLACK_MS, `waited ${gaps[0]} ms >= the 2 s or more until the date`);
  assert.ok(gaps[0] < 3500, `waited ${gaps[0]} ms < 3.5 s`);
});

test('flaky:429 (Retry-After: 0) retries and succeeds', T, async () => {
  const { out, requests } = await run('flaky:429:2', { maxRetries: 2 });
  assert.equal(requests.length, 3);
  assert.equal(await out.text, 'You said: Hello there');
});

test('408, 409 and 503 are retried', T, async () => {
  const results = await Promise.all(['flaky:408:1', 'flaky:409:1', 'flaky:503:1'].map((s) => run(s, { maxRetries: 1 })));
  for (const [i, { out, requests }] of results.entries()) {
    assert.equal(requests.length, 2, `request count for case ${i}`);
    assert.equal(await out.text, 'You said: Hello there');
  }
});

test('a network error (connection reset) is retried', T, async () => {
  const { out, requests } = await run('flaky:reset:1', { maxRetries: 1 });
  assert.equal(requests.length, 2);
  assert.equal(await out.text, 'You said: Hello there');
});

test('other 4xx are never retried (400, 401, 403, 404, 422)', T, async () => {
  const results = await Promise.all(['flaky:400:1', 'flaky:401:1', 'flaky:403:1', 'flaky:404:1', 'flaky:422:1'].map((s) => run(s, { maxRetries: 3 })));
  for (const [i, { out, requests, chunks }] of results.entries()) {
    assert.equal(requests.length, 1, `request count for case ${i}`);
    assert.equal(chunks.at(-1).type, 'error');
    const err = await rejectionOf(out.text);
    assert.equal(err.isRetryable, false);
  }
});

test('maxRetries defaults to 0', T, async () => {
  const { requests, chunks } = await run('flaky:500:1');
  assert.equal(requests.length, 1);
  assert.equal(chunks.at(-1).type, 'error');
});

test('modelSettings.maxRetries overrides the agent maxRetries (up)', T, async () => {
  const { out, requests } = await run('flaky:429:1', { maxRetries: 0, options: { modelSettings: { maxRetries: 1 } } });
  assert.equal(requests.length, 2);
  assert.equal(await out.text, 'You said: Hello there');
});

test('modelSettings.maxRetries overrides the agent maxRetries (down to 0)', T, async () => {
  const { out, requests } = await run('flaky:429:1', { maxRetries: 3, options: { modelSettings: { maxRetries: 0 } } });
  assert.equal(requests.length, 1);
  const err = await rejectionOf(out.text);
  assert.equal(err.status, 429);
});

test('defaultOptions.modelSettings.maxRetries applies, and the call can override it', T, async () => {
  const srv = server.current;
  const make = (id) =>
    new Agent({
      id: 'retry-defaults',
      model: modelFor(srv, 'flaky:429:1', { headers: { 'x-test-id': id } }),
      defaultOptions: { modelSettings: { maxRetries: 1 } },
    });
  const a = uid('rd');
  assert.equal(await (await make(a).stream('Hello there')).text, 'You said: Hello there');
  assert.equal(requestsOf(srv, a).length, 2);
  const b = uid('rd');
  const out = await make(b).stream('Hello there', { modelSettings: { maxRetries: 0 } });
  await rejectionOf(out.text);
  assert.equal(requestsOf(srv, b).length, 1);
});

noUnhandledRejections();
