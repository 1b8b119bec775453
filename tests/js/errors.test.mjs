// Model failures as the user sees them: the `error` chunk, rejected promises, onError, and the
// APICallError fields, for every way the local server can misbehave.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Agent,
  T,
  collect,
  keys,
  modelFor,
  noUnhandledRejections,
  rejectionOf,
  requestsOf,
  types,
  uid,
  useModelServer,
} from './helpers.mjs';

const server = useModelServer({
  scripts: {
    // not-a-stream:json answers 200 with a whole chat.completion (a server that does not stream);
    // not-a-stream:html with a proxy's sign-in page.
    'not-a-stream': {
      description: 'test: a 200 reply that is not an event stream',
      run(ex) {
        if (ex.arg === 'json') {
          const message = { role: 'assistant', content: 'Hello there' };
          const choices = [{ index: 0, message, finish_reason: 'stop' }];
          return ex.json(200, { id: 'chatcmpl-1', object: 'chat.completion', choices });
        }
        ex.markEnded();
        ex.res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        const body = '<p>Wi-Fi</p>'.repeat(50);
        ex.res.end(`<!DOCTYPE html><html><head><title>Sign in to the network</title></head><body>${body}</body></html>`);
      },
    },
    // sse-500 answers 500 with an event-stream body carrying the error, as LiteLLM's proxy does
    // when the upstream stream fails to start.
    'sse-500': {
      description: 'test: a 500 whose body is an event stream with an error event',
      run(ex) {
        ex.markEnded();
        ex.res.writeHead(500, { 'content-type': 'text/event-stream' });
        const error = { message: 'Error processing stream start', type: 'None', param: 'None', code: '500' };
        ex.res.end(`data: ${JSON.stringify({ error })}\n\ndata: [DONE]\n\n`);
      },
    },
    // echo-headers answers 401 quoting every request header back, as some gateways do.
    'echo-headers': {
      description: 'test: 401 that echoes the request headers',
      run(ex) {
        const message = `rejected headers ${JSON.stringify(ex.headers)}`;
        ex.error(401, { message, type: 'invalid_request_error', headers: ex.headers });
      },
    },
  },
});

/**
 * Runs `script` to its end, reading fullStream chunk by chunk, and collects what the user sees:
 * { out, chunks, onError calls, onFinish calls, requests, afterEnd (a read after `done`) }.
 */
async function failRun(script, { agentConfig = {}, options = {} } = {}) {
  const srv = server.current;
  const id = uid('err');
  const onError = [];
  const onFinish = [];
  const agent = new Agent({ id: 'failing', model: modelFor(srv, script, { headers: { 'x-test-id': id } }), ...agentConfig });
  const out = await agent.stream('Hello there', {
    onError: (...args) => onError.push(args),
    onFinish: (...args) => onFinish.push(args),
    ...options,
  });
  const reader = out.fullStream.getReader();
  const chunks = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  const afterEnd = await reader.read();
  return { out, chunks, onError, onFinish, requests: requestsOf(srv, id), afterEnd };
}

/** The checks every failed run must pass; returns the rejection error of `text`. */
async function assertFailedRun(run, { name = 'APICallError' } = {}) {
  const { out, chunks, onError, onFinish, afterEnd } = run;
  // The error chunk is the last chunk, then the stream closes.
  const last = chunks.at(-1);
  assert.equal(last.type, 'error', `last chunk is error (got ${types(chunks).join(',')})`);
  assert.equal(types(chunks).filter((t) => t === 'error').length, 1, 'exactly one error chunk');
  assert.ok(!types(chunks).includes('finish'), 'no finish chunk after a failure');
  assert.ok(!types(chunks).includes('step-finish'), 'no step-finish for the failed step');
  assert.deepEqual(afterEnd, { done: true, value: undefined }, 'the stream is closed');
  assert.equal(last.from, 'AGENT');
  assert.equal(last.runId, out.runId);
  assert.deepEqual(keys(last.payload), ['error']);
  const e = last.payload.error;
  for (const k of keys(e)) assert.ok(['name', 'message', 'status', 'body'].includes(k), `unexpected error field ${k}`);
  assert.equal(e.name, name);
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 10, 'a message that says something');

  // `text` and getFullOutput() reject with the same error.
  const err = await rejectionOf(out.text);
  assert.ok(err instanceof Error, 'an Error');
  assert.equal(err.name, name);
  assert.equal(err.message, e.message);
  assert.equal(err.status, e.status);
  assert.equal(err.body, e.body);
  const fullErr = await rejectionOf(out.getFullOutput());
  assert.equal(fullErr, err, 'getFullOutput rejects with the same error as text');

  // onError once with { error }, the same error; onFinish never.
  assert.equal(onError.length, 1, 'onError called exactly once');
  assert.equal(onError[0].length, 1);
  assert.deepEqual(keys(onError[0][0]), ['error']);
  assert.equal(onError[0][0].error, err, 'onError gets the same error');
  assert.equal(onFinish.length, 0, 'onFinish is not called for a failed run');

  // consumeStream() still resolves: draining is not reading the result.
  assert.equal(await out.consumeStream(), undefined);
  return err;
}

const HTTP_ERRORS = [
  { script: 'error-400', status: 400, says: "Invalid value for 'messages'", retryable: false },
  { script: 'error-401', status: 401, says: 'Incorrect API key provided', retryable: false, hint: /api key/i },
  { script: 'error-403', status: 403, says: 'You are not allowed to use this model.', retryable: false, hint: /api key/i },
  { script: 'error-404', status: 404, says: 'The model does not exist', retryable: false, hint: /model name/i },
  { script: 'error-422', status: 422, says: 'Simulated error 422', retryable: false },
  { script: 'error-429', status: 429, says: 'Rate limit reached', retryable: true, hint: /maxRetries/ },
  { script: 'error-500', status: 500, says: 'The server had an error', retryable: true },
  { script: 'error-503', status: 503, says: 'The engine is currently overloaded', retryable: true },
];

for (const { script, status, says, retryable, hint } of HTTP_ERRORS) {
  test(`HTTP ${status}: error chunk { name: APICallError, status, body, message with the server's words }`, T, async () => {
    const run = await failRun(script);
    assert.deepEqual(types(run.chunks), ['start', 'step-start', 'error']);
    const err = await assertFailedRun(run);
    const e = run.chunks.at(-1).payload.error;
    assert.equal(e.status, status);
    assert.equal(err.status, status);
    assert.ok(e.message.includes(says), `message "${e.message}" includes "${says}"`);
    assert.ok(e.message.includes(String(status)), 'message names the status');
    if (hint) assert.match(e.message, hint, 'message says what to do');
    assert.equal(typeof e.body, 'string');
    assert.ok(JSON.parse(e.body).error.message.includes(says), 'body is the server response body');
    assert.equal(err.isRetryable, retryable);
    assert.equal(run.requests.length, 1, 'not retried (maxRetries defaults to 0)');
  });
}

test('401 is not retried even with maxRetries', T, async () => {
  const run = await failRun('error-401', { agentConfig: { maxRetries: 3 } });
  await assertFailedRun(run);
  assert.equal(run.requests.length, 1);
  assert.ok(!/attempts/.test(run.chunks.at(-1).payload.error.message), 'no retry was made');
});

test('400 is not retried even with modelSettings.maxRetries', T, async () => {
  const run = await failRun('error-400', { options: { modelSettings: { maxRetries: 2 } } });
  await assertFailedRun(run);
  assert.equal(run.requests.length, 1);
});

test('malformed JSON in the stream: the text before it arrives, then an error chunk that says so', T, async () => {
  const run = await failRun('malformed-json');
  await assertFailedRun(run);
  assert.deepEqual(types(run.chunks), ['start', 'step-start', 'text-start', 'text-delta', 'text-delta', 'text-end', 'error']);
  assert.equal(run.chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join(''), 'Good start');
  const e = run.chunks.at(-1).payload.error;
  assert.match(e.message, /not valid JSON/i);
  assert.match(e.message, /\{not json/, 'quotes the bad event');
});

test('connection cut mid-response: error chunk that says the connection broke', T, async () => {
  const run = await failRun('cut');
  await assertFailedRun(run);
  const ts = types(run.chunks);
  assert.deepEqual(ts.slice(0, 3), ['start', 'step-start', 'text-start']);
  assert.equal(ts.at(-2), 'text-end', 'the open text block is closed before the error');
  const e = run.chunks.at(-1).payload.error;
  // The model was reached and had begun to answer: not "could not reach".
  assert.match(e.message, /^The connection to the model API at http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions broke mid-reply, after it had begun to answer: /);
  assert.ok(!/could not reach/i.test(e.message), e.message);
  assert.equal(e.status, undefined, 'no HTTP status: the response had started');
});

test('a 500 whose body is an event stream: the message quotes the server\'s error', T, async () => {
  const run = await failRun('sse-500');
  const err = await assertFailedRun(run);
  assert.equal(err.status, 500);
  assert.match(err.message, /^The model API answered 500: Error processing stream start \(the provider failed/);
  assert.match(err.body, /^data: \{"error"/);
});

test('an error event inside a 200 stream: error chunk with the provider message and body', T, async () => {
  const run = await failRun('in-stream-error');
  await assertFailedRun(run);
  assert.deepEqual(types(run.chunks), ['start', 'step-start', 'text-start', 'text-delta', 'text-delta', 'text-end', 'error']);
  const e = run.chunks.at(-1).payload.error;
  assert.match(e.message, /The server had an error while processing your request/);
  assert.equal(typeof e.body, 'string');
  assert.equal(JSON.parse(e.body).error.type, 'server_error');
});

test('a 200 reply that is not an event stream: error chunk with its status, content type and head of body', T, async () => {
  const cases = [
    ['json', 'application/json', '{"id":"chatcmpl-1","object":"chat.completion"'],
    ['html', 'text/html; charset=utf-8', '<!DOCTYPE html><html><head><title>Sign in'],
  ];
  for (const [arg, type, head] of cases) {
    const run = await failRun(`not-a-stream:${arg}`, { agentConfig: { maxRetries: 2 } });
    assert.deepEqual(types(run.chunks), ['start', 'step-start', 'error']);
    const err = await assertFailedRun(run);
    assert.equal(err.status, 200);
    assert.ok(err.message.includes(`answered 200 with content type '${type}' instead of an event stream`), err.message);
    assert.ok(err.message.includes(head), err.message);
    assert.ok(!/connection closed/.test(err.message), err.message);
    assert.ok(err.body.startsWith(head), 'the body is what came back');
    assert.equal(run.requests.length, 1, 'not retried');
  }
});

test('secret headers of the model config and modelSettings never show in errors, even when echoed', T, async () => {
  const srv = server.current;
  const id = uid('echo');
  const headers = { 'x-test-id': id, 'x-api-key': 'model-header-key-2', 'x-team': 'team-alpha' };
  const model = modelFor(srv, 'echo-headers', { apiKey: 'sk-config-key-1', headers });
  const agent = new Agent({ id: 'echoed', model });
  const settings = { headers: { 'x-goog-api-key': 'settings-key-3', cookie: 'session=cookie-value-4' } };
  const out = await agent.stream('Hello there', { modelSettings: settings });
  const chunks = await collect(out.fullStream);
  const err = await rejectionOf(out.text);
  assert.equal(err.status, 401);
  const shown = JSON.stringify(chunks) + err.message + err.body;
  for (const secret of ['sk-config-key-1', 'model-header-key-2', 'settings-key-3', 'cookie-value-4']) {
    assert.ok(!shown.includes(secret), `${secret} is not shown: ${err.message}`);
  }
  // What is no secret stays, so the echo is still useful.
  assert.ok(err.message.includes('team-alpha') && err.message.includes(id), err.message);
  assert.ok(err.message.includes('[redacted]'), err.message);
  assert.equal(requestsOf(srv, id)[0].headers['x-api-key'], 'model-header-key-2', 'the header was sent');
});

test('model API unreachable: error chunk naming the URL, isRetryable', T, async () => {
  const onError = [];
  const agent = new Agent({ id: 'offline', model: { id: 'openai/echo', url: 'http://127.0.0.1:1/v1', apiKey: 'k' } });
  const out = await agent.stream('hi', { onError: (e) => onError.push(e) });
  const chunks = await collect(out.fullStream);
  assert.deepEqual(types(chunks), ['start', 'step-start', 'error']);
  const e = chunks.at(-1).payload.error;
  assert.equal(e.name, 'APICallError');
  assert.match(e.message, /127\.0\.0\.1:1/);
  const err = await rejectionOf(out.text);
  assert.equal(err.isRetryable, true);
  assert.equal(onError.length, 1);
  assert.equal(onError[0].error, err);
});

test('a failure when only awaiting text (no stream read): text rejects, onError once', T, async () => {
  const srv = server.current;
  let calls = 0;
  const agent = new Agent({ id: 'quiet', model: modelFor(srv, 'error-500') });
  const out = await agent.stream('hi', { onError: () => calls++ });
  const err = await rejectionOf(out.text);
  assert.equal(err.name, 'APICallError');
  assert.equal(err.status, 500);
  assert.equal(calls, 1);
});

test('a failed run nobody asks about leaves no unhandled rejection behind', T, async () => {
  const srv = server.current;
  const id = uid('ignored');
  const agent = new Agent({ id: 'ignored', model: modelFor(srv, 'error-500', { headers: { 'x-test-id': id } }) });
  await agent.stream('hi');
  // Nothing is read or awaited; the run fails in the background. The file's final test checks
  // that no rejection went unhandled.
  const until = Date.now() + 3000;
  while (!requestsOf(srv, id)[0]?.finished && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  assert.ok(requestsOf(srv, id)[0]?.finished);
  await new Promise((r) => setTimeout(r, 50));
});

test('an async onError is awaited before text rejects', T, async () => {
  const srv = server.current;
  let done = false;
  const agent = new Agent({ id: 'slow-handler', model: modelFor(srv, 'error-503') });
  const out = await agent.stream('hi', {
    onError: async () => {
      await new Promise((r) => setTimeout(r, 50));
      done = true;
    },
  });
  await rejectionOf(out.text);
  assert.equal(done, true);
});

test('a throwing onError does not change the error the run reports', T, async () => {
  const srv = server.current;
  const agent = new Agent({ id: 'bad-handler', model: modelFor(srv, 'error-401') });
  const out = await agent.stream('hi', {
    onError: () => {
      throw new Error('handler failed');
    },
  });
  const err = await rejectionOf(out.text);
  assert.equal(err.status, 401);
});

test('after a failed run the same agent streams normally', T, async () => {
  const srv = server.current;
  const agent = new Agent({ id: 'recovers', model: { ...modelFor(srv, 'echo') } });
  const bad = await agent.stream('x', { modelSettings: { headers: { 'x-script': 'error-500' } } });
  await rejectionOf(bad.text);
  const good = await agent.stream('again');
  assert.equal(await good.text, 'You said: again');
});

noUnhandledRejections();
