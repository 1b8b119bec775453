// Tracing (SPEC §16): the spans of a run as an exporter gets them, against the local model
// server: the tree, ids on the output, tracingOptions, tracingContext handles and nesting,
// failures and aborts, sampling, Observability / Mastra configs, and exporters that fail.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, modelFor, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';
import { checkEvents, memoryExporter, tree } from './tracing-helpers.mjs';
import { Mastra, Observability, RequestContext, createTool } from '../../pkg/index.node.js';

const srv = useModelServer();
const model = (script) => modelFor(srv.current, script, { headers: { 'x-test-id': uid('trace') } });
const clockTool = (execute) =>
  createTool({
    id: 'clock',
    description: 'Tells the time',
    inputSchema: { type: 'object', properties: { zone: { type: 'string' } } },
    execute: execute ?? (async () => ({ time: '12:00' })),
  });

test('a run with a tool: agent_run → model_generation → model_step → tool_call, ids on the output', T, async () => {
  const exp = memoryExporter();
  const agent = new Agent({ id: 'timer', name: 'Timer', instructions: 'Be brief.', model: model('tool-call'), tools: { clock: clockTool() }, observability: { exporters: [exp] } });
  const out = await agent.stream('What time is it?');
  assert.match(out.traceId, /^[0-9a-f]{32}$/, 'traceId is there as soon as stream() resolved');
  assert.match(out.spanId, /^[0-9a-f]{16}$/);
  const full = await out.getFullOutput();
  assert.equal(full.traceId, out.traceId);
  assert.equal(full.spanId, out.spanId);
  checkEvents(exp.events);
  assert.deepEqual(tree(exp.ended()), [
    ["tool: 'clock'", 'step: 0'],
    ['step: 0', "llm: 'tool-call'"],
    ['step: 1', "llm: 'tool-call'"],
    ["llm: 'tool-call'", "agent run: 'timer'"],
    ["agent run: 'timer'", null],
  ]);
  const root = exp.byName("agent run: 'timer'");
  assert.equal(root.id, out.spanId);
  assert.equal(root.type, 'agent_run');
  assert.deepEqual([root.entityType, root.entityId, root.entityName], ['agent', 'timer', 'Timer']);
  assert.equal(root.isRootSpan, true);
  assert.deepEqual(root.attributes, { instructions: 'Be brief.', availableTools: ['clock'], maxSteps: 5 });
  assert.equal(root.metadata.runId, full.runId);
  assert.deepEqual(root.output, { text: full.text });
  assert.equal(root.input[0].role, 'user');
  const gen = exp.byName("llm: 'tool-call'");
  assert.equal(gen.type, 'model_generation');
  assert.equal(gen.attributes.model, 'tool-call');
  assert.equal(gen.attributes.provider, 'openai');
  assert.equal(gen.attributes.streaming, true);
  assert.equal(gen.attributes.finishReason, 'stop');
  assert.equal(gen.attributes.usage.inputTokens, full.totalUsage.inputTokens);
  assert.equal(gen.attributes.usage.outputTokens, full.totalUsage.outputTokens);
  assert.equal(gen.output.text, full.text);
  assert.equal(gen.output.toolCalls.length, 1);
  const step0 = exp.byName('step: 0');
  assert.deepEqual([step0.attributes.stepIndex, step0.attributes.finishReason, step0.attributes.isContinued], [0, 'tool-calls', true]);
  assert.equal(exp.byName('step: 1').attributes.isContinued, false);
  const tool = exp.byName("tool: 'clock'");
  assert.deepEqual([tool.type, tool.entityType, tool.entityId], ['tool_call', 'tool', 'clock']);
  assert.deepEqual(tool.attributes, { toolType: 'tool', toolDescription: 'Tells the time', toolCallId: gen.output.toolCalls[0].toolCallId, success: true });
  assert.deepEqual(tool.output, { time: '12:00' });
  for (const s of exp.ended()) {
    assert.equal(s.traceId, out.traceId);
    assert.equal(s.tags, undefined, 'no tags were given');
  }
});

test('without an exporter, or sampled out, nothing is traced and the ids are undefined', T, async () => {
  const plain = new Agent({ id: 'plain', model: model('echo') });
  const out = await plain.stream('Hi');
  await out.text;
  assert.equal(out.traceId, undefined);
  assert.equal(out.spanId, undefined);
  assert.equal((await out.getFullOutput()).traceId, undefined);
  const exp = memoryExporter();
  const never = new Agent({ id: 'never', model: model('echo'), observability: { exporters: [exp], sampling: { type: 'never' } } });
  const o2 = await never.stream('Hi');
  await o2.text;
  assert.equal(o2.traceId, undefined);
  const none = new Agent({ id: 'zero', model: model('echo'), observability: { exporters: [exp], sampling: { type: 'ratio', probability: 0 } } });
  await (await none.stream('Hi')).text;
  assert.equal(exp.events.length, 0);
  const all = new Agent({ id: 'one', model: model('echo'), observability: { exporters: [exp], sampling: { type: 'ratio', probability: 1 } } });
  const o3 = await all.stream('Hi');
  await o3.text;
  assert.match(o3.traceId, /^[0-9a-f]{32}$/);
  assert.throws(() => new Agent({ id: 'bad', model: model('echo'), observability: { exporters: [exp], sampling: { type: 'ratio', probability: 3 } } }), /config\.observability\.sampling/);
  assert.throws(() => new Agent({ id: 'bad', model: model('echo'), observability: { exporters: [{}] } }), /config\.observability\.exporters\[0\]/);
});

test('Observability({ configs }) and new Mastra({ observability }); the agent\'s own config wins', T, async () => {
  const a = memoryExporter('a');
  const b = memoryExporter('b');
  const obs = new Observability({ configs: { default: { serviceName: 'svc', exporters: [a] } } });
  const inMastra = new Agent({ id: 'in-mastra', model: model('echo') });
  const own = new Agent({ id: 'own', model: model('echo'), observability: { exporters: [b] } });
  new Mastra({ agents: { inMastra, own }, observability: obs });
  await (await inMastra.stream('Hi')).text;
  await (await own.stream('Hi')).text;
  assert.deepEqual([...new Set(a.ended().map((s) => s.entityId))].filter(Boolean), ['in-mastra']);
  assert.deepEqual([...new Set(b.ended().map((s) => s.entityId))].filter(Boolean), ['own']);
});

test('tracingOptions: traceId and parentSpanId padded, tags on the root, metadata and requestContextKeys everywhere', T, async () => {
  const exp = memoryExporter();
  const agent = new Agent({ id: 'opts', model: model('tool-call'), tools: { clock: clockTool() }, observability: { exporters: [exp] } });
  const requestContext = new RequestContext([['user', { id: 'u-7', password: 'hunter2' }], ['tenant', 'acme'], ['secretNote', 'never out']]);
  const out = await agent.stream('What time is it?', {
    requestContext,
    tracingOptions: { traceId: 'ABC123', parentSpanId: 'f1', tags: ['docs', 'beta'], metadata: { feature: 'chat' }, requestContextKeys: ['user.id', 'tenant', 'missing.key'], rootSpanName: 'chat turn' },
  });
  await out.text;
  assert.equal(out.traceId, '00000000000000000000000000abc123');
  checkEvents(exp.events);
  const spans = exp.ended();
  const root = exp.byName('chat turn');
  assert.equal(root.externalParentSpanId, '00000000000000f1');
  assert.equal(root.parentSpanId, undefined);
  assert.deepEqual(root.tags, ['docs', 'beta']);
  assert.deepEqual(root.requestContext, { user: { id: 'u-7' }, tenant: 'acme' });
  for (const s of spans) {
    assert.equal(s.traceId, out.traceId);
    assert.equal(s.metadata.feature, 'chat');
    assert.deepEqual(s.metadata.user, { id: 'u-7' });
    assert.equal(s.metadata.tenant, 'acme');
    if (s !== root) assert.equal(s.tags, undefined, `${s.name} has no tags`);
  }
  assert.ok(!JSON.stringify(exp.events).includes('never out'));
  assert.ok(!JSON.stringify(exp.events).includes('hunter2'));
  // hideInput / hideOutput drop them from every span.
  const hidden = memoryExporter();
  const h = new Agent({ id: 'hide', model: model('tool-call'), tools: { clock: clockTool() }, observability: { exporters: [hidden] } });
  await (await h.stream('What time is it?', { tracingOptions: { hideInput: true, hideOutput: true } })).text;
  assert.ok(hidden.events.length >= 8);
  assert.ok(hidden.events.every((e) => e.exportedSpan.input === undefined && e.exportedSpan.output === undefined));
});

test('bad tracingOptions and tracingContext are TypeErrors naming the field', T, async () => {
  const agent = new Agent({ id: 'bad-opts', model: model('echo'), observability: { exporters: [memoryExporter()] } });
  const cases = [
    [{ tracingOptions: { traceId: 'xyz' } }, /options\.tracingOptions\.traceId/],
    [{ tracingOptions: { traceId: 'a'.repeat(33) } }, /options\.tracingOptions\.traceId/],
    [{ tracingOptions: { parentSpanId: 'a'.repeat(17) } }, /options\.tracingOptions\.parentSpanId/],
    [{ tracingOptions: { tags: 'docs' } }, /options\.tracingOptions\.tags/],
    [{ tracingOptions: { metadata: 5 } }, /options\.tracingOptions\.metadata/],
    [{ tracingOptions: 'yes' }, /options\.tracingOptions/],
    [{ tracingContext: { currentSpan: { id: 'nothex', traceId: 'zz' } } }, /options\.tracingContext\.currentSpan/],
    [{ telemetry: { isEnabled: 'yes' } }, /options\.telemetry\.isEnabled/],
  ];
  for (const [options, re] of cases) {
    await assert.rejects(agent.stream('Hi', options), (e) => e.name === 'TypeError' && re.test(e.message), JSON.stringify(options));
  }
});

test('tracingContext in a tool: child and event spans nest under its tool_call; an agent called in the tool nests too', T, async () => {
  const exp = memoryExporter();
  const inner = new Agent({ id: 'inner', model: model('echo') });
  let handle;
  const tool = clockTool(async (args, ctx) => {
    handle = ctx.tracingContext.currentSpan;
    assert.equal(handle.type, 'tool_call');
    assert.equal(handle.isValid, true);
    const child = handle.createChildSpan({ name: 'lookup', input: { zone: 'UTC' }, attributes: { cache: 'miss' } });
    child.createEventSpan({ name: 'cache miss' });
    child.update({ metadata: { tries: 1 } });
    child.end({ output: { found: true } });
    const failing = handle.createChildSpan({ type: 'generic', name: 'flaky' });
    failing.error({ error: new RangeError('out of range') });
    const sub = await inner.stream('inside', { tracingContext: ctx.tracingContext });
    assert.equal(sub.traceId, handle.traceId, 'the inner run joins the trace');
    return { time: await sub.text };
  });
  const outer = new Agent({ id: 'outer', model: model('tool-call'), tools: { clock: tool }, observability: { exporters: [exp] } });
  const out = await outer.stream('What time is it?');
  await out.text;
  assert.equal(handle.isValid, false, 'the tool span ended with the call');
  checkEvents(exp.events);
  const t = tree(exp.ended());
  for (const pair of [
    ['cache miss', 'lookup'],
    ['lookup', "tool: 'clock'"],
    ['flaky', "tool: 'clock'"],
    ["agent run: 'inner'", "tool: 'clock'"],
    ["llm: 'echo'", "agent run: 'inner'"],
  ]) {
    assert.ok(t.some((p) => p[0] === pair[0] && p[1] === pair[1]), `${pair.join(' under ')} in ${JSON.stringify(t)}`);
  }
  const lookup = exp.byName('lookup');
  assert.deepEqual([lookup.type, lookup.attributes.cache, lookup.metadata.tries], ['generic', 'miss', 1]);
  assert.deepEqual(lookup.output, { found: true });
  assert.equal(exp.byName('cache miss').isEvent, true);
  assert.deepEqual(exp.byName('flaky').errorInfo, { name: 'RangeError', message: 'out of range' });
  const innerRoot = exp.byName("agent run: 'inner'");
  assert.equal(innerRoot.isRootSpan, false);
  assert.equal(innerRoot.traceId, out.traceId);
  // A foreign span (hex ids) is an external parent.
  const e2 = memoryExporter();
  const agent = new Agent({ id: 'foreign', model: model('echo'), observability: { exporters: [e2] } });
  const o2 = await agent.stream('Hi', { tracingContext: { currentSpan: { traceId: 'beef', id: 'cafe' } } });
  await o2.text;
  assert.equal(o2.traceId, '0000000000000000000000000000beef');
  assert.equal(e2.byName("agent run: 'foreign'").externalParentSpanId, '000000000000cafe');
});

test('a sub-agent (agents) runs nested under its tool_call, in the supervisor\'s trace', T, async () => {
  const exp = memoryExporter();
  const helper = new Agent({ id: 'helper', description: 'Helps with anything', instructions: 'Help.', model: model('echo') });
  const sup = new Agent({ id: 'sup', instructions: 'Delegate.', model: model('tool-call'), agents: { helper }, observability: { exporters: [exp] } });
  const out = await sup.stream('Ask the helper');
  await out.text;
  checkEvents(exp.events);
  const t = tree(exp.ended());
  assert.ok(t.some(([n, p]) => n === "agent run: 'helper'" && p === "tool: 'agent-helper'"), JSON.stringify(t));
  assert.ok(exp.ended().every((s) => s.traceId === out.traceId));
  assert.equal(exp.ended().filter((s) => s.isRootSpan).length, 1);
});

test('wasm-agent/lite has no tracing: the options warn and observability is ignored with a console line', T, async () => {
  const lite = await import('../../pkg/lite/index.node.js');
  const lines = [];
  const real = console.warn;
  console.warn = (...a) => lines.push(a.join(' '));
  try {
    const exp = memoryExporter();
    const agent = new lite.Agent({ id: 'lite-trace', model: model('echo'), observability: { exporters: [exp] } });
    const out = await agent.stream('Hi', { tracingOptions: { tags: ['x'] }, telemetry: { isEnabled: true } });
    await out.text;
    assert.deepEqual((await out.warnings).map((w) => w.setting), ['tracingOptions', 'telemetry']);
    assert.equal(out.traceId, undefined);
    assert.equal(exp.events.length, 0);
    assert.ok(lines.some((l) => l.includes('config.observability') && l.includes("'tracing'")), lines.join('\n'));
  } finally {
    console.warn = real;
  }
});

test('processors get tracingContext with their processor_run span, under the run\'s span', T, async () => {
  const exp = memoryExporter();
  let seen;
  const proc = {
    id: 'peek',
    processInput({ messages, tracingContext }) {
      seen = tracingContext.currentSpan;
      seen.createEventSpan({ name: 'peeked', output: { n: messages.length } });
      return messages;
    },
  };
  const agent = new Agent({ id: 'proc', model: model('echo'), inputProcessors: [proc], observability: { exporters: [exp] } });
  const out = await agent.stream('Hi');
  await out.text;
  const span = exp.byName('input processor: peek');
  assert.equal(seen.id, span.id);
  assert.equal(span.parentSpanId, out.spanId);
  assert.equal(exp.byName('peeked').parentSpanId, span.id);
});

test('a failed run ends its open spans with the error; an aborted one with AbortError', T, async () => {
  const exp = memoryExporter();
  const agent = new Agent({ id: 'fails', model: model('in-stream-error'), observability: { exporters: [exp] } });
  const out = await agent.stream('Hi');
  await collect(out.fullStream);
  checkEvents(exp.events);
  const ended = exp.ended();
  assert.deepEqual(ended.map((s) => s.type), ['model_step', 'model_generation', 'agent_run']);
  for (const s of ended) {
    assert.equal(s.errorInfo?.name, 'APICallError', s.name);
    assert.equal(typeof s.errorInfo.message, 'string');
  }
  const e2 = memoryExporter();
  const slow = new Agent({ id: 'aborted', model: model('demo:200'), observability: { exporters: [e2] } });
  const controller = new AbortController();
  const o2 = await slow.stream('Hi', { abortSignal: controller.signal });
  const chunks = [];
  for await (const c of o2.fullStream) {
    chunks.push(c);
    if (c.type === 'text-delta') controller.abort();
  }
  checkEvents(e2.events);
  assert.deepEqual(e2.ended().map((s) => s.errorInfo?.name), ['AbortError', 'AbortError', 'AbortError']);
});

test('an exporter that throws or rejects is told once on the console and never fails the run; the others still get every event', T, async () => {
  const errors = [];
  const real = console.error;
  console.error = (...args) => errors.push(args.map(String).join(' '));
  try {
    const good = memoryExporter('good');
    const throws = { name: 'thrower', exportTracingEvent() { throw new Error('boom'); } };
    const rejects = { name: 'rejecter', exportTracingEvent: async () => { throw new Error('later'); } };
    const agent = new Agent({ id: 'bad-exp', model: model('echo'), observability: { exporters: [throws, rejects, good] } });
    for (let i = 0; i < 2; i++) {
      const out = await agent.stream('Hi');
      assert.match(await out.text, /You said/);
    }
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(good.ended().length, 6);
    assert.equal(errors.filter((l) => l.includes("'thrower'")).length, 1, errors.join('\n'));
    assert.equal(errors.filter((l) => l.includes("'rejecter'")).length, 1, errors.join('\n'));
  } finally {
    console.error = real;
  }
});

noUnhandledRejections();
