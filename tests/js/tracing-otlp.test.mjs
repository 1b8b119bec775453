// OtlpExporter (SPEC §16.5), secrets (§16.6) and telemetry (§17), against the local model server
// and a local OTLP/HTTP collector on 127.0.0.1. Every posted body is decoded with the OTLP
// protobuf definitions (PyPI opentelemetry-proto in .venv/, installed by ./x setup), unknown
// fields refused, so a misspelled field fails here.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, T, collect, modelFor, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';
import { memoryExporter } from './tracing-helpers.mjs';
import { OtlpExporter, RequestContext, createScorer, createTool } from '../../pkg/index.node.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PYTHON = path.resolve(HERE, '../../.venv/bin/python');
const srv = useModelServer();

/** A collector: records each POST; `mode` 'ok' | 'fail' (503) | 'hang' (never answers). */
function collector() {
  const c = { posts: [], mode: 'ok', url: '' };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      c.posts.push({ url: req.url, headers: req.headers, body });
      if (c.mode === 'hang') return;
      res.writeHead(c.mode === 'fail' ? 503 : 200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  c.start = () => new Promise((r) => server.listen(0, '127.0.0.1', () => { c.url = `http://127.0.0.1:${server.address().port}/v1/traces`; r(); }));
  c.close = () => { server.closeAllConnections(); return new Promise((r) => server.close(r)); };
  return c;
}

const col = collector();
before(() => col.start());
after(() => col.close());

/** The bodies decoded by protobuf's JSON parser (fails on any unknown or misspelled field). */
function decode(bodies) {
  assert.ok(existsSync(PYTHON), `${PYTHON} is missing: ./x setup installs opentelemetry-proto into .venv/`);
  const r = spawnSync(PYTHON, [path.join(HERE, 'otlp_decode.py')], { input: JSON.stringify(bodies), timeout: 60_000, encoding: 'utf8' });
  assert.equal(r.status, 0, `the OTLP bodies do not decode: ${r.stderr || r.error}`);
  return JSON.parse(r.stdout);
}

const spansOf = (decoded) => decoded.flatMap((d) => d.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
const attrsOf = (span) => Object.fromEntries((span.attributes ?? []).map((a) => [a.key, a.value]));
const clock = createTool({ id: 'clock', description: 'Tells the time', inputSchema: { type: 'object', properties: { zone: { type: 'string' } } }, execute: async () => ({ time: '12:00' }) });
const model = (script, extra = {}) => modelFor(srv.current, script, { headers: { 'x-test-id': uid('otlp') }, ...extra });

/** Runs `fn` with console.error / console.warn lines recorded. */
async function withConsole(fn) {
  const lines = [];
  const [e, w] = [console.error, console.warn];
  console.error = (...a) => lines.push(a.map(String).join(' '));
  console.warn = (...a) => lines.push(a.map(String).join(' '));
  try {
    await fn(lines);
  } finally {
    console.error = e;
    console.warn = w;
  }
  return lines;
}

test('OtlpExporter posts each trace when its root ends, as OTLP/HTTP JSON that the protobuf definitions decode', T, async () => {
  col.posts.length = 0;
  const otlp = new OtlpExporter({ url: col.url, headers: { 'x-team': 'docs' } });
  const agent = new Agent({ id: 'otlp-agent', name: 'Clock Agent', instructions: 'Be brief.', model: model('tool-call'), tools: { clock }, observability: { serviceName: 'svc-test', exporters: [otlp] } });
  const out = await agent.stream('What time is it?', { modelSettings: { temperature: 0.5, maxOutputTokens: 100 }, tracingOptions: { tags: ['docs'], metadata: { feature: 'chat', nested: { a: 1 } } } });
  const text = await out.text;
  const failing = new Agent({ id: 'otlp-fails', model: model('in-stream-error'), observability: { exporters: [otlp] } });
  const failed = await failing.stream('Hi', { tracingOptions: { traceId: 'f00d' } });
  await collect(failed.fullStream);
  await otlp.flush();
  assert.equal(col.posts.length, 2, 'one post per trace');
  for (const p of col.posts) {
    assert.equal(p.url, '/v1/traces');
    assert.equal(p.headers['content-type'], 'application/json');
    assert.equal(p.headers['x-team'], 'docs');
  }
  const decoded = decode(col.posts.map((p) => p.body));
  const resource = Object.fromEntries(decoded[0].resourceSpans[0].resource.attributes.map((a) => [a.key, a.value.stringValue]));
  assert.deepEqual(resource, { 'service.name': 'svc-test', 'telemetry.sdk.name': 'wasm-agent', 'telemetry.sdk.version': resource['telemetry.sdk.version'], 'telemetry.sdk.language': 'webjs' });
  assert.equal(decoded[0].resourceSpans[0].scopeSpans[0].scope.name, 'wasm-agent');
  const spans = spansOf([decoded[0]]);
  assert.deepEqual(spans.map((s) => s.name).sort(), ['agent_step Clock Agent', 'agent_step Clock Agent', 'chat tool-call', 'execute_tool clock', 'invoke_agent Clock Agent']);
  const by = (name) => spans.find((s) => s.name === name);
  const [root, chat, tool] = [by('invoke_agent Clock Agent'), by('chat tool-call'), by('execute_tool clock')];
  for (const s of spans) {
    assert.equal(s.traceId, out.traceId);
    assert.equal(s.status.code, 'STATUS_CODE_OK');
    assert.ok(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano));
  }
  assert.equal(root.spanId, out.spanId);
  assert.equal(root.parentSpanId, undefined);
  assert.equal(chat.parentSpanId, root.spanId);
  assert.equal(chat.kind, 'SPAN_KIND_CLIENT');
  assert.equal(root.kind, 'SPAN_KIND_INTERNAL');
  const ra = attrsOf(root);
  assert.deepEqual(ra['gen_ai.operation.name'], { stringValue: 'invoke_agent' });
  assert.deepEqual(ra['gen_ai.agent.id'], { stringValue: 'otlp-agent' });
  assert.deepEqual(ra['mastra.tags'], { stringValue: '["docs"]' });
  assert.deepEqual(ra['mastra.metadata.feature'], { stringValue: 'chat' });
  assert.deepEqual(ra['mastra.metadata.nested'], { stringValue: '{"a":1}' });
  assert.deepEqual(JSON.parse(ra['gen_ai.output.messages'].stringValue), { text });
  const ca = attrsOf(chat);
  assert.deepEqual(ca['gen_ai.request.model'], { stringValue: 'tool-call' });
  assert.deepEqual(ca['gen_ai.provider.name'], { stringValue: 'openai' });
  assert.deepEqual(ca['gen_ai.request.temperature'], { doubleValue: 0.5 });
  assert.deepEqual(ca['gen_ai.request.max_tokens'], { intValue: '100' });
  assert.deepEqual(ca['gen_ai.response.finish_reasons'], { arrayValue: { values: [{ stringValue: 'stop' }] } });
  assert.ok(Number(ca['gen_ai.usage.input_tokens'].intValue) > 0);
  const ta = attrsOf(tool);
  assert.deepEqual(ta['gen_ai.tool.name'], { stringValue: 'clock' });
  assert.deepEqual(JSON.parse(ta['gen_ai.tool.call.result'].stringValue), { time: '12:00' });
  assert.ok(ta['gen_ai.tool.call.id'].stringValue.startsWith('call_'));
  // The failed run: error status and an exception event on its spans.
  const bad = spansOf([decoded[1]]);
  assert.ok(bad.every((s) => s.traceId === '0000000000000000000000000000f00d'));
  const badRoot = bad.find((s) => s.name.startsWith('invoke_agent'));
  assert.equal(badRoot.status.code, 'STATUS_CODE_ERROR');
  assert.equal(badRoot.events[0].name, 'exception');
  assert.deepEqual(attrsOf(badRoot.events[0])['exception.type'], { stringValue: 'APICallError' });
});

test('maxBatchSize splits a trace into several posts; serviceName of the exporter wins', T, async () => {
  col.posts.length = 0;
  const otlp = new OtlpExporter({ url: col.url, maxBatchSize: 2, serviceName: 'mine' });
  const agent = new Agent({ id: 'batched', model: model('tool-call'), tools: { clock }, observability: { serviceName: 'theirs', exporters: [otlp] } });
  await (await agent.stream('What time is it?')).text;
  await otlp.shutdown();
  assert.equal(col.posts.length, 3, '5 spans in posts of 2');
  const decoded = decode(col.posts.map((p) => p.body));
  assert.equal(spansOf(decoded).length, 5);
  assert.ok(decoded.every((d) => d.resourceSpans[0].resource.attributes[0].value.stringValue === 'mine'));
});

test('a collector that is down, failing or silent never fails a run; told once per exporter; flush settles', T, async () => {
  const lines = await withConsole(async () => {
    const down = new OtlpExporter({ url: 'http://127.0.0.1:9/v1/traces' });
    const agent = new Agent({ id: 'down', model: model('echo'), observability: { exporters: [down] } });
    for (let i = 0; i < 2; i++) assert.match(await (await agent.stream('Hi')).text, /You said/);
    await down.flush();
    col.mode = 'fail';
    const failing = new OtlpExporter({ url: col.url });
    const a2 = new Agent({ id: 'failing', model: model('echo'), observability: { exporters: [failing] } });
    assert.match(await (await a2.stream('Hi')).text, /You said/);
    await failing.flush();
    col.mode = 'hang';
    const silent = new OtlpExporter({ url: col.url, timeoutMs: 100 });
    const a3 = new Agent({ id: 'silent', model: model('echo'), observability: { exporters: [silent] } });
    assert.match(await (await a3.stream('Hi')).text, /You said/);
    await silent.flush();
  });
  col.mode = 'ok';
  const told = lines.filter((l) => l.includes('OtlpExporter could not post'));
  assert.equal(told.length, 3, lines.join('\n'));
  assert.match(told[1], /503/);
  assert.match(told[2], /no answer in 100 ms/);
  assert.throws(() => new OtlpExporter({ url: 'localhost:4318' }), /OtlpExporter\(config\)\.url/);
  assert.throws(() => new OtlpExporter({ url: col.url, maxBatchSize: 0 }), /maxBatchSize/);
});

test('secrets: the API key, key headers and unlisted request context never leave the run, failed runs included', T, async () => {
  col.posts.length = 0;
  const KEY = 'sk-live-SECRETKEY123456';
  const HEADER = 'hdr-SECRET-987654';
  const events = memoryExporter();
  const otlp = new OtlpExporter({ url: col.url });
  const observability = { exporters: [events, otlp] };
  const requestContext = new RequestContext([['user', { id: 'u-1', token: 'tok-SECRET-1' }], ['internal', 'ctx-SECRET-2']]);
  const options = { requestContext, modelSettings: { headers: { 'x-api-key': HEADER } }, tracingOptions: { requestContextKeys: ['user'], metadata: { apiKey: 'meta-SECRET-3' } } };
  const tool = createTool({ id: 'login', description: 'Logs in', inputSchema: { type: 'object', properties: { zone: { type: 'string' } } }, execute: async () => ({ password: 'pw-SECRET-4', body: '{"authorization":"Bearer bearer-SECRET-5"}' }) });
  const runs = [
    [model('tool-call', { apiKey: KEY, headers: { 'x-api-key': HEADER } }), { login: tool }],
    [model('in-stream-error', { apiKey: KEY }), {}],
    [{ id: 'openai/echo', url: 'http://127.0.0.1:9/v1', apiKey: KEY, api: 'chat' }, {}],
  ];
  for (const [m, tools] of runs) {
    const agent = new Agent({ id: uid('secret'), model: m, tools, observability, defaultOptions: { maxRetries: 0 } });
    const out = await agent.stream('What time is it?', options);
    await collect(out.fullStream);
  }
  await otlp.flush();
  const everything = JSON.stringify(events.events) + col.posts.map((p) => p.body).join('\n');
  assert.ok(events.ended().length >= 7);
  assert.equal(col.posts.length, 3);
  for (const secret of [KEY, HEADER, 'tok-SECRET-1', 'ctx-SECRET-2', 'meta-SECRET-3']) {
    assert.ok(!everything.includes(secret), `${secret} leaked`);
  }
  // A tool result's sensitive keys are redacted in its span (also inside a JSON string); the
  // model's own text may quote it, which is the model's output, not a span field.
  const login = events.byName("tool: 'login'");
  assert.deepEqual(login.output, { password: '[REDACTED]', body: '{"authorization":"[REDACTED]"}' });
  assert.ok(everything.includes('[REDACTED]'));
  assert.ok(everything.includes('u-1'), 'the listed request context key is kept');
  decode(col.posts.map((p) => p.body));
});

test('telemetry: isEnabled adds the AI SDK attributes; recordInputs / recordOutputs false drop the content; warnings', T, async () => {
  col.posts.length = 0;
  const otlp = new OtlpExporter({ url: col.url });
  const events = memoryExporter();
  const agent = new Agent({ id: 'tele', model: model('tool-call'), tools: { clock }, observability: { exporters: [events, otlp] } });
  await (await agent.stream('What time is it?', { telemetry: { isEnabled: true, functionId: 'chat-fn', metadata: { plan: 'pro' } } })).text;
  await (await agent.stream('What time is it?', { telemetry: { isEnabled: true, recordInputs: false, recordOutputs: false } })).text;
  await otlp.flush();
  const root = events.ended().find((s) => s.type === 'agent_run');
  assert.equal(root.metadata.functionId, 'chat-fn');
  assert.deepEqual(root.metadata.telemetry, { plan: 'pro' });
  const [first, second] = decode(col.posts.map((p) => p.body)).map((d) => spansOf([d]));
  const by = (spans, prefix) => attrsOf(spans.find((s) => s.name.startsWith(prefix)));
  const r = by(first, 'invoke_agent');
  assert.deepEqual(r['ai.telemetry.functionId'], { stringValue: 'chat-fn' });
  assert.deepEqual(r['resource.name'], { stringValue: 'chat-fn' });
  assert.deepEqual(r['ai.telemetry.metadata.plan'], { stringValue: 'pro' });
  assert.deepEqual(r['ai.operationId'], { stringValue: 'ai.streamText' });
  assert.ok(r['ai.response.text']);
  const c = by(first, 'chat');
  assert.deepEqual(c['ai.operationId'], { stringValue: 'ai.streamText.doStream' });
  assert.deepEqual(c['ai.model.id'], { stringValue: 'tool-call' });
  assert.ok(c['ai.usage.promptTokens'] && c['ai.prompt.messages']);
  assert.deepEqual(by(first, 'execute_tool')['ai.operationId'], { stringValue: 'ai.toolCall' });
  assert.ok(by(first, 'execute_tool')['ai.toolCall.args']);
  for (const s of second) {
    const a = attrsOf(s);
    for (const k of ['ai.prompt.messages', 'ai.response.text', 'ai.toolCall.args', 'ai.toolCall.result', 'gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.call.arguments']) {
      assert.equal(a[k], undefined, `${s.name}: ${k}`);
    }
  }
  const lines = await withConsole(async () => {
    const plain = new Agent({ id: 'tele-none', model: model('echo') });
    for (let i = 0; i < 2; i++) {
      await (await plain.stream('Hi', { telemetry: { isEnabled: true, tracer: {} } })).text;
    }
  });
  assert.equal(lines.filter((l) => l.includes('telemetry needs an observability exporter')).length, 1, lines.join('\n'));
  assert.equal(lines.filter((l) => l.includes('telemetry.tracer')).length, 1, lines.join('\n'));
});

test('processor spans go with their run; a scorer\'s spans are posted as a trace of their own', T, async () => {
  col.posts.length = 0;
  const otlp = new OtlpExporter({ url: col.url });
  const one = createScorer({ id: 'one', name: 'One', description: 'd' }).generateScore(() => 1);
  const shout = { id: 'shout', processOutputStream: ({ part }) => part };
  const agent = new Agent({ id: 'otlp-scored', model: model('echo'), outputProcessors: [shout], scorers: { one: { scorer: one } }, observability: { exporters: [otlp] } });
  const out = await agent.stream('Hi');
  assert.equal((await out.scores).length, 1);
  await otlp.flush();
  assert.equal(col.posts.length, 2, 'the run, then the scorer run');
  const [run, scorer] = col.posts.map((p) => spansOf(decode([p.body])));
  const proc = run.find((s) => s.name === 'output processor: shout');
  assert.deepEqual(attrsOf(proc)['mastra.span.type'], { stringValue: 'processor_run' });
  assert.equal(proc.traceId, out.traceId);
  assert.deepEqual(scorer.map((s) => s.name), ["scorer step: 'generateScore'", "scorer run: 'one'"]);
  const [step, root] = scorer;
  assert.notEqual(root.traceId, out.traceId);
  assert.equal(step.traceId, root.traceId);
  assert.equal(step.parentSpanId, root.spanId);
  assert.equal(root.parentSpanId, undefined);
  assert.deepEqual(attrsOf(root)['mastra.span.type'], { stringValue: 'scorer_run' });
  assert.deepEqual(attrsOf(root)['mastra.metadata.targetTraceId'], { stringValue: out.traceId });
});

noUnhandledRejections();
