// Sub-agents (SPEC §18) against the local model server: `new Agent({ agents })`, the agent-<key>
// tool, the sub-agent's chunks live inside the supervisor's stream, what the sub-agent is sent,
// the result the model reads, failure, abort, depth, memory beside the supervisor's thread.
// Scripts: tests/server/subagent-scripts.mjs (`supervisor`, `supervisor-all`, `seen`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, errorOf, modelFor, requestsOf, types, uid, useModelServer, waitForRequestsOf } from './helpers.mjs';
import { InMemoryStore, Mastra, Memory, RequestContext, toAISdkStream } from '../../pkg/index.node.js';
import { createUIMessageStreamResponse, DefaultChatTransport, readUIMessageStream } from 'ai';

const server = useModelServer();

/** An agent on `script`, tagged with `id` so its requests can be found. */
function agent(config, script, id) {
  return new Agent({ model: modelFor(server.current, script, { headers: { 'x-test-id': id } }), ...config });
}

/** A researcher sub-agent that says what it was sent, and a supervisor that delegates to it. */
function pair({ sup = 'supervisor:researcher:Research solana', sub = 'seen', supConfig = {}, subConfig = {} } = {}) {
  const id = uid('sub');
  const subId = uid('subagent');
  const researcher = agent({ id: 'research-agent', instructions: 'You research.', description: 'Researches a topic', ...subConfig }, sub, subId);
  const supervisor = agent({ id: 'boss', instructions: 'You supervise. SECRET-INSTRUCTIONS', agents: { researcher }, ...supConfig }, sup, id);
  return { id, subId, researcher, supervisor };
}

const wrapped = (chunks) => chunks.filter((c) => c.type === 'tool-output' && c.payload.toolName?.startsWith('agent-'));

test('a bad key or a value that is not an Agent is a TypeError naming the key', () => {
  const M = { id: 'openai/gpt-4o-mini', apiKey: 'k' };
  const researcher = new Agent({ id: 'r', model: M });
  for (const [agents, field] of [
    [{ 'bad key!': researcher }, 'config.agents.bad key!'],
    [{ ['x'.repeat(59)]: researcher }, `config.agents.${'x'.repeat(59)}`],
    [{ helper: { id: 'not-an-agent', stream() {} } }, 'config.agents.helper'],
    [{ helper: 'r' }, 'config.agents.helper'],
  ]) {
    assert.throws(
      () => new Agent({ id: 's', model: M, agents }),
      (e) => e instanceof TypeError && e.message.includes(field),
      field,
    );
  }
  assert.throws(() => new Agent({ id: 's', model: M, agents: [researcher] }), TypeError);
  // Good keys pass.
  new Agent({ id: 's', model: M, agents: { 'Research_agent-2': researcher } });
});

test('each agent is offered as agent-<key> with its description and the delegation schema', T, async () => {
  const { id, supervisor } = pair({ sup: 'echo' });
  await (await supervisor.stream('hi')).text;
  const [req] = requestsOf(server.current, id);
  const tool = req.body.tools.find((t) => t.function.name === 'agent-researcher');
  assert.equal(tool.function.description, 'Researches a topic');
  assert.deepEqual(tool.function.parameters.required, ['prompt']);
  assert.deepEqual(Object.keys(tool.function.parameters.properties).sort(), ['instructions', 'maxSteps', 'prompt']);
});

test('the sub-agent streams inside the delegation call and the supervisor reads its text', T, async () => {
  const { id, subId, supervisor } = pair();
  const out = await supervisor.stream('Tell me about solana');
  const chunks = await collect(out.fullStream);
  const t = types(chunks);
  const call = t.indexOf('tool-call');
  const result = t.indexOf('tool-result');
  assert.ok(call >= 0 && result > call, t.join(','));
  const between = chunks.slice(call + 1, result);
  assert.ok(between.every((c) => c.type === 'tool-output'), 'only the sub-agent chunks between call and result');
  const inner = between.map((c) => c.payload.output);
  assert.deepEqual(
    [...new Set(inner.map((o) => o.type))],
    ['start', 'step-start', 'text-start', 'text-delta', 'text-end', 'step-finish', 'finish'],
  );
  const runId = chunks[0].runId;
  for (const c of between) {
    assert.equal(c.runId, runId);
    assert.equal(c.from, 'USER');
    assert.equal(c.payload.toolName, 'agent-researcher');
    assert.equal(c.payload.toolCallId, chunks[call].payload.toolCallId);
  }
  assert.ok(inner.every((o) => o.runId === inner[0].runId && o.runId !== runId && o.from === 'AGENT'), 'the sub-run has its own runId');
  const subText = inner.filter((o) => o.type === 'text-delta').map((o) => o.payload.text).join('');
  const res = chunks[result].payload.result;
  assert.equal(res.text, subText);
  assert.equal(res.finishReason, 'stop');
  assert.deepEqual(res.subAgentToolResults, []);
  assert.equal(typeof res.usage, 'object');
  // What the sub-agent was sent: its own instructions, the user's conversation, the prompt.
  assert.equal(subText, 'system: You research. | user: Tell me about solana | user: Research solana');
  // The supervisor's model read the text only, and its text is its own.
  const reqs = requestsOf(server.current, id);
  assert.equal(reqs.length, 2);
  const toolMsg = reqs[1].body.messages.find((m) => m.role === 'tool');
  assert.equal(toolMsg.content, subText);
  assert.equal(await out.text, `researcher said: ${subText}`);
  assert.equal(requestsOf(server.current, subId).length, 1);
});

test('the call instructions go after the sub-agent own, after a blank line', T, async () => {
  const { subId, supervisor } = pair({ sup: 'background:agent-researcher:{"prompt":"Go","instructions":"Cite sources."}' });
  await (await supervisor.stream('hi')).text;
  const [req] = await waitForRequestsOf(server.current, subId, 1);
  assert.equal(req.body.messages[0].content, 'You research.\n\nCite sources.');
});

test('tool calls, tool results and system messages of the supervisor are not forwarded', T, async () => {
  const id = uid('ctx');
  const researcher = agent({ id: 'research-agent' }, 'seen', uid('sub'));
  const weather = { id: 'weather', description: 'weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } } }, execute: () => 'SUNNY-RESULT' };
  const supervisor = agent({ id: 'boss', instructions: 'SECRET', agents: { researcher }, tools: { weather } }, 'supervisor:researcher:Go', id);
  const out = await supervisor.stream([
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: [{ type: 'text', text: 'an answer' }, { type: 'tool-call', toolCallId: 'w1', toolName: 'weather', args: { city: 'Paris' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'w1', toolName: 'weather', result: 'SUNNY-RESULT' }] },
    { role: 'user', content: 'second question' },
  ], { system: 'ANOTHER-SYSTEM' });
  const chunks = await collect(out.fullStream);
  const res = chunks.find((c) => c.type === 'tool-result').payload.result;
  assert.equal(res.text, 'user: first question | assistant: an answer | user: second question | user: Go');
});

test('a failing sub-agent is a tool-error naming it and its cause; the supervisor goes on', T, async () => {
  const { supervisor } = pair({ sub: 'error-400' });
  const out = await supervisor.stream('hi');
  const chunks = await collect(out.fullStream);
  const err = chunks.find((c) => c.type === 'tool-error');
  assert.equal(err.payload.toolName, 'agent-researcher');
  assert.equal(err.payload.error.name, 'ToolError');
  assert.match(err.payload.error.message, /^Sub-agent research-agent failed: /);
  assert.ok(wrapped(chunks).some((c) => c.payload.output.type === 'error'), 'the sub-agent error chunk is forwarded');
  assert.equal(types(chunks).at(-1), 'finish');
  assert.equal(await out.text, `researcher said: ${err.payload.error.message}`);
});

test('aborting the supervisor closes the sub-agent model request and forwards its abort', T, async () => {
  const { subId, supervisor } = pair({ sub: 'stall' });
  const controller = new AbortController();
  const out = await supervisor.stream('hi', { abortSignal: controller.signal });
  const reader = out.fullStream.getReader();
  const seen = [];
  for (;;) {
    const { done, value } = await reader.read();
    assert.ok(!done, 'the stream ended before the sub-agent streamed');
    seen.push(value);
    if (value.type === 'tool-output' && value.payload.output.type === 'text-delta') break;
  }
  controller.abort();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    seen.push(value);
  }
  const [req] = requestsOf(server.current, subId);
  const rec = await server.current.waitForClose(req.index, 3000);
  assert.equal(rec.closedByClient, true);
  assert.equal(seen.at(-1).type, 'abort');
  assert.equal(wrapped(seen).at(-1).payload.output.type, 'abort');
  assert.equal(await out.finishReason, 'abort');
});

test('with a supervisor thread the exchange is stored in <thread>-<toolCallId>; the sub-agent stays as it was', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { supervisor, researcher } = pair({ supConfig: { memory } });
  const out = await supervisor.stream('Tell me about solana', { memory: { thread: 't1', resource: 'u1' } });
  const chunks = await collect(out.fullStream);
  const call = chunks.find((c) => c.type === 'tool-call');
  const res = chunks.find((c) => c.type === 'tool-result').payload.result;
  assert.equal(res.subAgentThreadId, `t1-${call.payload.toolCallId}`);
  assert.equal(res.subAgentResourceId, 'u1-researcher');
  const stored = await memory.listMessages({ threadId: res.subAgentThreadId });
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant']);
  assert.equal(stored[0].content.parts.find((p) => p.type === "text").text, 'Research solana');
  assert.equal(stored[1].content.parts.find((p) => p.type === "text").text, res.text);
  const thread = await memory.getThreadById(res.subAgentThreadId);
  assert.equal(thread.resourceId, 'u1-researcher');
  assert.ok(!thread.title, 'never titled');
  // Used directly, the sub-agent has no memory of its own.
  const err = await errorOf(() => researcher.stream('x', { memory: { thread: 't9', resource: 'u9' } }));
  assert.ok(err instanceof TypeError);
});

test('agents may be a function of the request context, resolved at each run', T, async () => {
  const id = uid('fn');
  const researcher = agent({ id: 'research-agent' }, 'seen', uid('sub'));
  const seenContexts = [];
  const supervisor = agent(
    {
      id: 'boss',
      agents: async ({ requestContext }) => {
        seenContexts.push(requestContext.get('tier'));
        return { researcher };
      },
    },
    'supervisor:researcher:Go',
    id,
  );
  const out = await supervisor.stream('hi', { requestContext: new Map([['tier', 'gold']]) });
  const chunks = await collect(out.fullStream);
  assert.ok(chunks.some((c) => c.type === 'tool-result'));
  assert.deepEqual(seenContexts, ['gold']);
  const bad = agent({ id: 'boss2', agents: () => ({ 'no good': researcher }) }, 'echo', uid('bad'));
  const failed = await bad.stream('hi');
  const all = await collect(failed.fullStream);
  assert.equal(all.at(-1).type, 'error');
  assert.match(all.at(-1).payload.error.message, /no good/);
});

test('a delegation chain deeper than 8 fails with the depth error and unwinds', T, async () => {
  const id = uid('deep');
  let self;
  self = agent({ id: 'looper', agents: () => ({ self }) }, 'supervisor:self:again', id);
  const out = await self.stream('go');
  const text = await out.text;
  assert.match(text, /delegation depth 8 exceeded/);
  assert.equal(requestsOf(server.current, id).length, 18, 'nine runs, two requests each');
});

test('onDelegationStart may reject: the model reads why, the sub-agent never runs', T, async () => {
  const calls = [];
  const { id, subId, supervisor } = pair();
  const out = await supervisor.stream('hi', {
    delegation: {
      onDelegationStart: (ctx) => {
        calls.push(['start', ctx.primitiveId, ctx.primitiveType, ctx.prompt, ctx.iteration, ctx.parentAgentId, ctx.toolCallId.length > 0]);
        return { proceed: false, rejectionReason: 'budget exhausted' };
      },
      onDelegationComplete: () => calls.push(['complete']),
    },
  });
  const chunks = await collect(out.fullStream);
  assert.deepEqual(calls, [['start', 'research-agent', 'agent', 'Research solana', 1, 'boss', true]]);
  const outputs = wrapped(chunks);
  assert.equal(outputs.length, 1);
  assert.equal(outputs[0].payload.output.type, 'text-delta');
  assert.equal(outputs[0].payload.output.payload.text, '[Delegation Rejected] budget exhausted');
  assert.deepEqual(chunks.find((c) => c.type === 'tool-result').payload.result, { text: '[Delegation Rejected] budget exhausted' });
  assert.equal(await out.text, 'researcher said: [Delegation Rejected] budget exhausted');
  assert.equal(requestsOf(server.current, subId).length, 0);
  assert.equal(requestsOf(server.current, id).length, 2);
});

test('modified prompt and instructions, messageFilter, then onDelegationComplete with resultText and feedback', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const order = [];
  const { id, supervisor } = pair({ supConfig: { memory } });
  const out = await supervisor.stream('Tell me about solana', {
    memory: { thread: 'th-fb', resource: 'u1' },
    requestContext: new Map([['tier', 'gold']]),
    delegation: {
      onDelegationStart: (ctx) => {
        order.push('start');
        assert.equal(ctx.requestContext.get('tier'), 'gold');
        ctx.requestContext.set('seenBy', 'hook');
        assert.ok(ctx.messages.some((m) => m.role === 'user'));
        assert.ok(!JSON.stringify(ctx.messages).includes('SECRET-INSTRUCTIONS'));
        return { modifiedPrompt: 'Research solana fees', modifiedInstructions: 'Be brief.' };
      },
      messageFilter: (ctx) => {
        order.push(`filter:${ctx.prompt}`);
        return [];
      },
      onDelegationComplete: async (ctx) => {
        order.push(`complete:${ctx.success}`);
        assert.equal(typeof ctx.duration, 'number');
        assert.equal(typeof ctx.bail, 'function');
        return { resultText: 'SUMMARY', feedback: 'Ask for sources.' };
      },
    },
  });
  const chunks = await collect(out.fullStream);
  assert.deepEqual(order, ['start', 'filter:Research solana fees', 'complete:true']);
  const res = chunks.find((c) => c.type === 'tool-result').payload.result;
  assert.equal(res.text, 'system: You research.\n\nBe brief. | user: Research solana fees', 'the filter gave [] : the prompt alone');
  assert.equal(await out.text, 'researcher said: SUMMARY', 'the model read resultText');
  const [, second] = requestsOf(server.current, id);
  assert.equal(second.body.messages.find((m) => m.role === 'tool').content, 'SUMMARY');
  const stored = await memory.listMessages({ threadId: 'th-fb' });
  const last = stored.at(-1);
  assert.equal(last.role, 'assistant');
  assert.equal(last.content.parts[0].text, 'Ask for sources.');
  assert.deepEqual(last.content.metadata.delegationFeedback, { toolCallId: chunks.find((c) => c.type === 'tool-call').payload.toolCallId, primitiveId: 'research-agent' });
});

test('the hook set() reaches the sub-agent tools, never the caller request context', T, async () => {
  const seen = [];
  const probe = { id: 'probe', description: 'probe', inputSchema: { type: 'object', properties: {} }, execute: (_input, ctx) => { seen.push(ctx.requestContext.get('seenBy'), ctx.requestContext.get('tier')); return 'ok'; } };
  const { supervisor } = pair({ sub: 'tool-call', subConfig: { tools: { probe } } });
  const callerContext = new Map([['tier', 'gold']]);
  const out = await supervisor.stream('hi', {
    requestContext: callerContext,
    delegation: { onDelegationStart: ({ requestContext }) => { requestContext.set('seenBy', 'hook'); } },
  });
  await collect(out.fullStream);
  assert.deepEqual(seen, ['hook', 'gold']);
  assert.equal(callerContext.has('seenBy'), false);
});

test('bail() ends the supervisor run after the step; hook errors warn or fail the call and are listed', T, async () => {
  const { id, supervisor } = pair();
  const out = await supervisor.stream('hi', { delegation: { onDelegationComplete: ({ bail }) => bail() } });
  const chunks = await collect(out.fullStream);
  assert.equal(requestsOf(server.current, id).length, 1, 'no further model step');
  assert.equal(await out.finishReason, 'tool-calls');
  assert.ok(chunks.some((c) => c.type === 'tool-result'));

  const warnings = [];
  const realWarn = console.warn;
  console.warn = (line) => warnings.push(String(line));
  try {
    const p = pair();
    const ctx = new Map();
    const warned = await p.supervisor.stream('hi', { requestContext: ctx, delegation: { onDelegationStart: () => { throw new Error('start broke'); } } });
    const full = await warned.getFullOutput();
    assert.match(full.text, /^researcher said: system: You research/, 'warn: the delegation went on unchanged');
    assert.equal(full.delegationHookErrors.length, 1);
    assert.deepEqual({ ...full.delegationHookErrors[0], toolCallId: 'x', runId: 'y' }, { hook: 'onDelegationStart', primitiveId: 'research-agent', toolCallId: 'x', runId: 'y', name: 'Error', message: 'start broke' });
    assert.equal(ctx.get('__mastra_delegationHookErrors').length, 1);
    assert.ok(warnings.some((l) => l.includes('start broke')));

    const q = pair();
    const thrown = await q.supervisor.stream('hi', { delegation: { hookErrorStrategy: 'throw', onDelegationStart: () => { throw new Error('start broke'); } } });
    const chunks2 = await collect(thrown.fullStream);
    const err = chunks2.find((c) => c.type === 'tool-error');
    assert.equal(err.payload.error.message, 'Sub-agent research-agent failed: onDelegationStart threw: start broke');
    assert.equal(requestsOf(server.current, q.subId).length, 0, 'throw: the sub-agent never ran');
  } finally {
    console.warn = realWarn;
  }
});

test('delegation options are checked and merge over defaultOptions key by key; versions is checked and warns', T, async () => {
  const researcher = new Agent({ id: 'r', model: { id: 'openai/x', apiKey: 'k' } });
  const sup = new Agent({ id: 's', model: { id: 'openai/x', apiKey: 'k' }, agents: { researcher } });
  for (const [options, field] of [
    [{ delegation: 5 }, 'options.delegation'],
    [{ delegation: { onDelegationStart: 'x' } }, 'options.delegation.onDelegationStart'],
    [{ delegation: { hookErrorStrategy: 'loud' } }, 'options.delegation.hookErrorStrategy'],
    [{ delegation: { includeSubAgentToolResultsInModelContext: 'yes' } }, 'options.delegation.includeSubAgentToolResultsInModelContext'],
    [{ versions: { agents: { r: { status: 'old' } } } }, 'options.versions.agents.r.status'],
    [{ versions: 'v1' }, 'options.versions'],
  ]) {
    const err = await errorOf(() => sup.stream('hi', options));
    assert.ok(err instanceof TypeError && err.message.includes(field), `${field}: ${err?.message}`);
  }
  const order = [];
  const { supervisor } = pair({
    supConfig: { defaultOptions: { delegation: { onDelegationStart: () => { order.push('default-start'); }, onDelegationComplete: () => { order.push('default-complete'); } } } },
  });
  const out = await supervisor.stream('hi', { versions: { agents: { 'research-agent': { versionId: 'v7' } } }, delegation: { onDelegationComplete: () => { order.push('call-complete'); } } });
  const full = await out.getFullOutput();
  assert.deepEqual(order, ['default-start', 'call-complete']);
  assert.deepEqual(full.warnings.map((w) => w.setting), ['versions']);
});

test('with includeSubAgentToolResultsInModelContext the model reads the whole result', T, async () => {
  const { supervisor } = pair();
  const out = await supervisor.stream('hi', { delegation: { includeSubAgentToolResultsInModelContext: true } });
  const text = await out.text;
  const read = JSON.parse(text.slice('researcher said: '.length));
  assert.equal(read.finishReason, 'stop');
  assert.ok(Array.isArray(read.subAgentToolResults));
});

test('toAISdkStream shows the sub-agent as a data-tool-agent card, replaced in place, finished at the end', T, async () => {
  const { supervisor } = pair();
  const out = await supervisor.stream('Tell me about solana');
  const [forParts, forReader] = toAISdkStream(out).tee();
  const partsDone = collect(forParts);
  const response = createUIMessageStreamResponse({ stream: forReader });
  const validated = new DefaultChatTransport().processResponseStream(response.body);
  let message;
  for await (const m of readUIMessageStream({ stream: validated })) message = m;
  const parts = await partsDone;
  const cards = parts.filter((p) => p.type === 'data-tool-agent');
  assert.ok(cards.length >= 2, JSON.stringify(cards));
  assert.ok(cards.every((c) => c.id === cards[0].id));
  assert.equal(cards[0].data.status, 'running');
  const last = cards.at(-1);
  assert.equal(last.data.status, 'finished');
  assert.equal(last.data.id, 'researcher');
  assert.equal(last.data.text, 'system: You research. | user: Tell me about solana | user: Research solana');
  assert.deepEqual(Object.keys(last.data).sort(), ['id', 'reasoning', 'status', 'text', 'toolCalls', 'toolResults']);
  const inMessage = message.parts.filter((p) => p.type === 'data-tool-agent');
  assert.equal(inMessage.length, 1, 'the reader keeps one card, replaced in place');
  assert.equal(inMessage[0].data.status, 'finished');
  const tool = message.parts.find((p) => p.type === 'tool-agent-researcher');
  assert.equal(tool.state, 'output-available');
});

test('new Mastra({ agents }): the supervisor from getAgent delegates to the registered sub-agent; RequestContext is a Map', T, async () => {
  const { supervisor, researcher } = pair();
  const mastra = new Mastra({ agents: { supervisor, researcher }, backgroundTasks: { enabled: true } });
  assert.equal(mastra.getAgent('research-agent'), researcher);
  const out = await mastra.getAgent('boss').stream('hi', { requestContext: new RequestContext([['a', 1]]) });
  const chunks = await collect(out.fullStream);
  assert.ok(chunks.some((c) => c.type === 'tool-result' && c.payload.toolName === 'agent-researcher'));
  assert.ok(new RequestContext() instanceof Map);
});

test('a background delegation with untilIdle: "research solana" handed to the researcher, chunks once, then the continuation', { timeout: 20_000 }, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const { id, subId, supervisor } = pair({
    sup: 'background:agent-researcher:{"prompt":"Research solana"}',
    supConfig: { memory, backgroundTasks: { enabled: true, tools: { researcher: true } } },
  });
  const out = await supervisor.stream('research solana', { untilIdle: true, memory: { thread: 'th-bg', resource: 'u1' } });
  const chunks = await collect(out.fullStream);
  const t = types(chunks);
  assert.ok(t.includes('background-task-started'), t.join(','));
  assert.equal(wrapped(chunks).length, 0, 'no tool-output outside the task');
  const outputs = chunks.filter((c) => c.type === 'background-task-output');
  assert.ok(outputs.length > 3, t.join(','));
  for (const o of outputs) {
    assert.equal(o.payload.payload.type, 'tool-output');
    assert.equal(o.payload.payload.payload.toolName, 'agent-researcher');
  }
  const innerTypes = outputs.map((o) => o.payload.payload.payload.output.type);
  assert.equal(innerTypes.filter((x) => x === 'finish').length, 1, 'each sub-agent chunk once');
  const done = chunks.find((c) => c.type === 'background-task-completed');
  assert.equal(done.payload.result.text, 'system: You research. | user: research solana | user: Research solana');
  assert.equal(done.payload.toolName, 'agent-researcher');
  const text = chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');
  assert.match(text, /I started agent-researcher in the background/);
  assert.match(text, /The background task agent-researcher finished/);
  assert.equal(requestsOf(server.current, subId).length, 1);
  assert.equal(requestsOf(server.current, id).length, 3, 'the call, its placeholder answer, the continuation');
});

test('an approval inside the sub-agent surfaces on the supervisor and is decided through it', T, async () => {
  const ran = [];
  const lookup = { id: 'lookup', description: 'lookup', requireApproval: true, inputSchema: { type: 'object', properties: { q: { type: 'string' } } }, execute: (input) => { ran.push(input); return 'found it'; } };
  const { supervisor } = pair({ sub: 'tool-call', subConfig: { tools: { lookup } } });
  const out = await supervisor.stream('hi');
  const chunks = [];
  let decided;
  for await (const c of out.fullStream) {
    chunks.push(c);
    if (c.type === 'tool-call-approval') decided = supervisor.approveToolCall({ runId: c.runId, toolCallId: c.payload.toolCallId });
  }
  // The decision resolves to a second view of the run from the decision on (SPEC §19.3).
  const view = await decided;
  assert.equal(view.runId, out.runId);
  const asked = chunks.find((c) => c.type === 'tool-call-approval');
  const delegation = chunks.find((c) => c.type === 'tool-call');
  assert.equal(asked.payload.toolCallId, delegation.payload.toolCallId, 'asked as the delegation call');
  assert.equal(asked.payload.toolName, 'lookup', 'with the inner tool');
  const innerCall = wrapped(chunks).find((c) => c.payload.output.type === 'tool-call');
  assert.deepEqual(asked.payload.subAgent, {
    agentId: 'research-agent',
    toolName: delegation.payload.toolName,
    runId: innerCall.payload.output.runId,
    toolCallId: innerCall.payload.output.payload.toolCallId,
  }, 'subAgent names the sub-agent, its run and the inner call');
  const inner = wrapped(chunks).find((c) => c.payload.output.type === 'tool-call-approval');
  assert.ok(inner && chunks.indexOf(inner) < chunks.indexOf(asked), 'the inner chunk is forwarded first');
  assert.equal(ran.length, 1);
  const res = chunks.find((c) => c.type === 'tool-result').payload.result;
  assert.equal(res.subAgentToolResults[0].toolName, 'lookup');
  assert.equal(res.subAgentToolResults[0].result, 'found it');
});

test('several delegations of one step run at once, each with its own sub-run; the model reads them in call order', T, async () => {
  const researcher = agent({ id: 'research-agent', instructions: 'R.' }, 'slow:20', uid('r'));
  const writer = agent({ id: 'writer-agent', instructions: 'W.' }, 'seen', uid('w'));
  const supervisor = agent({ id: 'boss', agents: { researcher, writer } }, 'supervisor-all:do it', uid('all'));
  const out = await supervisor.stream('hi');
  const chunks = await collect(out.fullStream);
  const calls = chunks.filter((c) => c.type === 'tool-call').map((c) => c.payload.toolName);
  assert.deepEqual(calls, ['agent-researcher', 'agent-writer']);
  const runIds = new Set(wrapped(chunks).map((c) => `${c.payload.toolName}:${c.payload.output.runId}`));
  assert.equal(runIds.size, 2);
  const results = chunks.filter((c) => c.type === 'tool-result');
  assert.equal(results.length, 2);
  assert.equal(await out.text, 'Results: You said: do it | system: W. | user: hi | user: do it');
});
