// Processors (SPEC §13) against the local model server: the lists and their TypeErrors, each
// phase's arguments and what its result changes (what the model is sent, what streams, what
// memory stores), tripwires from each phase with their chunk order, retries, ProcessorError,
// the AI SDK mapping, and the built-in processors that need no model.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, errorOf, modelFor, noUnhandledRejections, rejectionOf, requestsOf, types, uid, useModelServer } from './helpers.mjs';
import {
  BatchPartsProcessor, createTool, InMemoryStore, Memory, TokenLimiter, TokenLimiterProcessor, UnicodeNormalizer, toAISdkStream,
} from '../../pkg/index.node.js';

const server = useModelServer();

/** An agent on `script` with its own x-test-id; `requests()` are what the model was sent. */
function agentOn(script, extra = {}) {
  const id = uid('proc');
  const agent = new Agent({ id: uid('agent'), model: modelFor(server.current, script, { headers: { 'x-test-id': id } }), ...extra });
  return { agent, requests: () => requestsOf(server.current, id) };
}

async function run(agent, input, options) {
  const out = await agent.stream(input, options);
  const chunks = await collect(out.fullStream);
  return { out, chunks };
}

const deltas = (chunks) => chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text);
const userText = (body) => body.messages.filter((m) => m.role === 'user').map((m) => m.content).join('|');
const storedTexts = (msgs) => msgs.map((m) => `${m.role}:${m.content.parts.filter((p) => p.type === 'text').map((p) => p.text).join('')}`);

test('bad processor lists are TypeErrors naming the list, the index and the id, at new Agent and at the call', T, async () => {
  const model = modelFor(server.current, 'echo');
  const cases = [
    [{ inputProcessors: {} }, /config\.inputProcessors: expected an array/],
    [{ inputProcessors: [{ processInput: () => {} }] }, /config\.inputProcessors\.0\.id: is required/],
    [{ inputProcessors: [{ id: 'a', processOutputStream: () => {} }] }, /config\.inputProcessors\.0: \('a'\) is not an input processor: it needs processInput or processInputStep/],
    [{ outputProcessors: [{ id: 'ok', processOutputStep() {} }, { id: 'b' }] }, /config\.outputProcessors\.1: \('b'\) is not an output processor/],
    [{ outputProcessors: [{ id: 'x', processOutputStep() {} }, { id: 'x', processOutputResult() {} }] }, /config\.outputProcessors\.1\.id: 'x' is used by another processor/],
    [{ outputProcessors: [{ id: 'f', processOutputStream: 'nope' }] }, /config\.outputProcessors\.0\.processOutputStream: \('f'\) expected a function/],
    [{ maxProcessorRetries: -1 }, /config\.maxProcessorRetries: expected a whole number/],
  ];
  for (const [extra, message] of cases) {
    assert.throws(() => new Agent({ id: 'a', model, ...extra }), (e) => e.name === 'TypeError' && message.test(e.message), JSON.stringify(Object.keys(extra)));
  }
  const { agent } = agentOn('echo');
  const e = await rejectionOf(agent.stream('hi', { outputProcessors: [{ id: 'dup', processOutputStep() {} }, { id: 'dup', processOutputStep() {} }] }));
  assert.equal(e.name, 'TypeError');
  assert.match(e.message, /options\.outputProcessors\.1\.id: 'dup'/);
  const e2 = await rejectionOf(agent.stream('hi', { maxProcessorRetries: 1.5 }));
  assert.match(e2.message, /options\.maxProcessorRetries/);
});

test('processInput sees stored-shape messages and system messages; its rewrite is what the model is sent and memory stores', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  let seen;
  const redact = {
    id: 'redact',
    processInput({ messages, systemMessages, runId, retryCount, state }) {
      seen = { messages, systemMessages, runId, retryCount, state };
      return {
        messages: messages.map((m) => ({ ...m, content: { ...m.content, parts: m.content.parts.map((p) => ({ ...p, text: p.text.replace(/\d{4}/g, '****') })) } })),
        systemMessages: [...systemMessages, { role: 'system', content: 'Never repeat card numbers.' }],
      };
    },
  };
  const { agent, requests } = agentOn('echo', { instructions: 'Be brief.', memory, inputProcessors: [redact] });
  const { out } = await run(agent, 'my card is 4242', { memory: { thread: 'th-redact', resource: 'u1' } });
  assert.equal(await out.text, 'You said: my card is ****');
  assert.equal(seen.messages.length, 1);
  assert.equal(seen.messages[0].role, 'user');
  assert.equal(seen.messages[0].content.format, 2);
  assert.equal(typeof seen.messages[0].id, 'string');
  assert.deepEqual(seen.systemMessages, [{ role: 'system', content: 'Be brief.' }]);
  assert.equal(seen.runId, out.runId);
  assert.equal(seen.retryCount, 0);
  assert.deepEqual(seen.state, {});
  const body = requests()[0].body;
  assert.deepEqual(body.messages.filter((m) => m.role === 'system').map((m) => m.content), ['Be brief.', 'Never repeat card numbers.']);
  assert.equal(userText(body), 'my card is ****');
  const stored = await memory.listMessages({ threadId: 'th-redact' });
  assert.deepEqual(storedTexts(stored), ['user:my card is ****', 'assistant:You said: my card is ****']);
  // The next turn: processInput sees the recalled history too (with its stored ids).
  let recalled;
  await run(agent, 'again', { memory: { thread: 'th-redact', resource: 'u1' }, inputProcessors: [{ id: 'look', processInput: ({ messages }) => { recalled = messages; } }] });
  assert.deepEqual(recalled.map((m) => m.id).slice(0, 2), stored.map((m) => m.id));
  assert.equal(recalled.length, 3);
});

test('processInputStep: its arguments, and what it returns applies to that request only', T, async () => {
  let args;
  const step = {
    id: 'step',
    processInputStep(a) {
      args = a;
      return { systemMessages: [{ role: 'system', content: 'Step rules.' }], modelSettings: { ...a.modelSettings, temperature: 0 } };
    },
  };
  const { agent, requests } = agentOn('echo', { instructions: 'Agent rules.', inputProcessors: [step] });
  const { out } = await run(agent, 'hello', { modelSettings: { maxOutputTokens: 50 } });
  assert.equal(await out.text, 'You said: hello');
  assert.equal(args.stepNumber, 0);
  assert.deepEqual(args.steps, []);
  assert.deepEqual(args.systemMessages, [{ role: 'system', content: 'Agent rules.' }]);
  assert.deepEqual(args.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }]);
  assert.equal(args.model, 'echo');
  assert.deepEqual(args.modelSettings, { maxOutputTokens: 50 });
  assert.equal(args.toolChoice, 'auto');
  const body = requests()[0].body;
  assert.deepEqual(body.messages[0], { role: 'system', content: 'Step rules.' });
  assert.equal(body.temperature, 0);
  assert.equal(body.max_tokens ?? body.max_completion_tokens, 50);
});

test('processOutputStream: the changed text is what streams and what text, steps and memory hold; null drops a chunk; state and streamParts last the run', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const counts = [];
  const upper = {
    id: 'upper',
    async processOutputStream({ part, state, streamParts }) {
      state.n = (state.n ?? 0) + 1;
      counts.push([state.n, streamParts.length, streamParts[streamParts.length - 1] === part]);
      if (part.type !== 'text-delta') return part;
      if (part.payload.text === ' said:') return null;
      return { ...part, payload: { ...part.payload, text: part.payload.text.toUpperCase() } };
    },
  };
  const { agent } = agentOn('echo', { memory, outputProcessors: [upper] });
  const { out, chunks } = await run(agent, 'quiet please', { memory: { thread: 'th-up', resource: 'u1' } });
  assert.deepEqual(deltas(chunks), ['YOU', ' QUIET', ' PLEASE']);
  assert.deepEqual(types(chunks), ['start', 'step-start', 'text-start', 'text-delta', 'text-delta', 'text-delta', 'text-end', 'step-finish', 'finish']);
  const full = await out.getFullOutput();
  assert.equal(await out.text, 'YOU QUIET PLEASE');
  assert.equal(full.text, 'YOU QUIET PLEASE');
  assert.equal(full.steps[0].text, 'YOU QUIET PLEASE');
  assert.equal(chunks.find((c) => c.type === 'step-finish').payload.output.text, 'YOU QUIET PLEASE');
  assert.deepEqual(counts.map(([n]) => n), counts.map((_, i) => i + 1), 'one state object for the run');
  assert.ok(counts.every(([n, len, last]) => len === n && last), 'streamParts: the parts so far, the current one last');
  const stored = await memory.listMessages({ threadId: 'th-up' });
  assert.deepEqual(storedTexts(stored), ['user:quiet please', 'assistant:YOU QUIET PLEASE']);
});

test('writer.custom: a data chunk streams and passes only the later processors (with processDataParts)', T, async () => {
  const seenBy = { first: 0, second: 0 };
  const first = {
    id: 'first',
    processDataParts: true,
    async processOutputStream({ part, writer }) {
      if (part.type.startsWith('data-')) seenBy.first += 1;
      if (part.type === 'text-start') await writer.custom({ type: 'data-note', data: { at: 'start' } });
      return part;
    },
  };
  const second = { id: 'second', processDataParts: true, processOutputStream: ({ part }) => { if (part.type.startsWith('data-')) seenBy.second += 1; return part; } };
  const blind = { id: 'blind', processOutputStream: ({ part }) => { assert.ok(!part.type.startsWith('data-')); return part; } };
  const { agent } = agentOn('echo', { outputProcessors: [first, second, blind] });
  const { chunks } = await run(agent, 'hi');
  const at = types(chunks).indexOf('data-note');
  assert.ok(at > 0 && types(chunks)[at + 1] === 'text-start', types(chunks).join(','));
  assert.deepEqual(chunks[at], { type: 'data-note', seq: at + 1, data: { at: 'start' } });
  assert.deepEqual(seenBy, { first: 0, second: 1 });
});

test('a tripwire in the output stream: tripwire with the envelope, then step-finish and finish; text is what streamed before it everywhere', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const calls = { onError: 0, onFinish: [] };
  const guard = {
    id: 'guard',
    processOutputStream({ part, abort }) {
      if (part.type === 'text-delta' && part.payload.text.includes('forbidden')) abort('Forbidden word', { metadata: { word: 'forbidden' } });
      return part;
    },
  };
  const { agent, requests } = agentOn('echo', { memory, outputProcessors: [guard] });
  const { out, chunks } = await run(agent, 'say forbidden things', {
    memory: { thread: 'th-trip', resource: 'u1' },
    onError: () => { calls.onError += 1; },
    onFinish: (r) => { calls.onFinish.push(r); },
  });
  assert.deepEqual(types(chunks), ['start', 'step-start', 'text-start', 'text-delta', 'text-delta', 'text-delta', 'tripwire', 'step-finish', 'finish']);
  const trip = chunks.find((c) => c.type === 'tripwire');
  assert.deepEqual(trip, { type: 'tripwire', seq: chunks.indexOf(trip) + 1, runId: out.runId, from: 'AGENT', payload: { reason: 'Forbidden word', metadata: { word: 'forbidden' }, processorId: 'guard' } });
  assert.equal(chunks.at(-1).payload.stepResult.reason, 'tripwire');
  assert.equal(chunks.at(-2).payload.stepResult.reason, 'tripwire');
  assert.equal(await out.finishReason, 'tripwire');
  const full = await out.getFullOutput();
  assert.equal(await out.text, 'You said: say');
  assert.equal(full.text, 'You said: say');
  assert.equal(full.steps.map((s) => s.text).join(''), 'You said: say');
  assert.deepEqual(out.tripwire, trip.payload);
  assert.deepEqual(full.tripwire, trip.payload);
  assert.equal(calls.onError, 0);
  assert.equal(calls.onFinish.length, 1);
  assert.deepEqual(calls.onFinish[0].tripwire, trip.payload);
  assert.equal(requests().length, 1);
  const stored = await memory.listMessages({ threadId: 'th-trip' });
  assert.deepEqual(storedTexts(stored), ['user:say forbidden things'], 'the user message, not the aborted response');
});

test('a tripwire in processInput: start, tripwire, finish; the model is never called; retry there is a plain tripwire', T, async () => {
  const { agent, requests } = agentOn('echo', { maxProcessorRetries: 3, inputProcessors: [{ id: 'gate', processInput: ({ abort }) => abort('Not allowed', { retry: true }) }] });
  const { out, chunks } = await run(agent, 'hello');
  assert.deepEqual(types(chunks), ['start', 'tripwire', 'finish']);
  assert.deepEqual(chunks[1].payload, { reason: 'Not allowed', processorId: 'gate' });
  assert.equal(await out.finishReason, 'tripwire');
  assert.equal(await out.text, '');
  assert.equal(requests().length, 0);
});

test('a retry from processOutputStep runs the step again with the feedback; only the accepted attempt remains', T, async () => {
  const memory = new Memory({ storage: new InMemoryStore() });
  const retryCounts = [];
  const judge = {
    id: 'judge',
    processOutputStep({ text, retryCount, abort }) {
      retryCounts.push(retryCount);
      if (retryCount === 0) abort(`"${text}" is too plain`, { retry: true });
    },
  };
  const { agent, requests } = agentOn('echo', { memory, outputProcessors: [judge], maxProcessorRetries: 2 });
  const { out, chunks } = await run(agent, 'hello', { memory: { thread: 'th-retry', resource: 'u1' } });
  assert.deepEqual(retryCounts, [0, 1]);
  const t = types(chunks);
  assert.deepEqual(t.filter((x) => ['tripwire', 'step-start', 'step-finish', 'finish'].includes(x)), ['step-start', 'tripwire', 'step-finish', 'step-start', 'step-finish', 'finish']);
  assert.deepEqual(chunks.find((c) => c.type === 'tripwire').payload, { reason: '"You said: hello" is too plain', retry: true, processorId: 'judge' });
  assert.equal(requests().length, 2);
  const second = requests()[1].body.messages;
  assert.equal(second[0].role, 'system');
  assert.match(second[0].content, /not accepted: "You said: hello" is too plain/);
  assert.deepEqual(second.slice(1).map((m) => m.role), ['user'], 'the rejected reply is not sent back');
  assert.equal(out.tripwire, undefined);
  assert.equal(await out.finishReason, 'stop');
  assert.equal((await out.steps).length, 1);
  assert.equal(await out.text, 'You said: hello');
  assert.deepEqual(storedTexts(await memory.listMessages({ threadId: 'th-retry' })), ['user:hello', 'assistant:You said: hello']);
});

test('a processor that throws fails the run with a ProcessorError naming it; onError once, text rejects', T, async () => {
  let onError = 0;
  const { agent } = agentOn('echo', { outputProcessors: [{ id: 'broken', processOutputStream: ({ part }) => { if (part.type === 'text-delta') throw new Error('boom'); return part; } }] });
  const out = await agent.stream('hi', { onError: () => { onError += 1; } });
  const chunks = await collect(out.fullStream);
  assert.equal(chunks.at(-1).type, 'error');
  assert.deepEqual(chunks.at(-1).payload.error, { name: 'ProcessorError', message: 'broken: boom' });
  const e = await rejectionOf(out.text);
  assert.equal(e.name, 'ProcessorError');
  assert.equal(e.message, 'broken: boom');
  assert.equal(onError, 1);
  // An input processor's throw too, before any model call.
  const { agent: a2, requests } = agentOn('echo', { inputProcessors: [{ id: 'in', processInput: async () => { throw new Error('no input'); } }] });
  const out2 = await a2.stream('hi');
  const c2 = await collect(out2.fullStream);
  assert.deepEqual(types(c2), ['start', 'error']);
  assert.equal(c2[1].payload.error.message, 'in: no input');
  assert.equal(requests().length, 0);
  await rejectionOf(out2.text);
  // A result that is not messages fails the same way, naming the processor and the field.
  const { agent: a3 } = agentOn('echo', { inputProcessors: [{ id: 'bad-shape', processInput: () => [{ role: 'robot', content: 'beep' }] }] });
  const e3 = await rejectionOf((await a3.stream('hi')).text);
  assert.equal(e3.name, 'ProcessorError');
  assert.match(e3.message, /^bad-shape: processInput returned a message that is not valid: messages\[0\]\.role: expected "system", "user", "assistant" or "tool", got "robot"$/);
});

test('a processor that never settles is bounded by the run\'s abortSignal', T, async () => {
  const controller = new AbortController();
  const { agent } = agentOn('echo', { outputProcessors: [{ id: 'stuck', processOutputStep: () => new Promise(() => {}) }] });
  const out = await agent.stream('hi', { abortSignal: controller.signal });
  const reading = collect(out.fullStream);
  setTimeout(() => controller.abort(new Error('user stopped')), 50);
  const chunks = await reading;
  assert.equal(chunks.at(-1).type, 'abort');
  assert.equal(await out.finishReason, 'abort');
});

test('per-call lists replace the agent\'s; toAISdkStream maps a tripwire to data-tripwire then finish', T, async () => {
  const agentLevel = { id: 'agent-level', processOutputStream: ({ abort }) => abort('agent list ran') };
  const { agent } = agentOn('echo', { outputProcessors: [agentLevel] });
  const plain = await run(agent, 'hi', { outputProcessors: [] });
  assert.equal(await plain.out.text, 'You said: hi', 'an empty call list replaces the agent\'s');
  const out = await agent.stream('hi');
  const parts = await collect(toAISdkStream(out, { from: 'agent' }));
  const t = types(parts);
  assert.deepEqual(t.slice(-2), ['data-tripwire', 'finish'], t.join(','));
  assert.deepEqual(parts.at(-2).data, { reason: 'agent list ran', processorId: 'agent-level' });
});

test('processOutputStream sees the chunks of tool calls too; a tripwire on a tool result stops before the next step', T, async () => {
  const lookup = createTool({ id: 'lookup', description: 'Looks up', inputSchema: { type: 'object', properties: { q: { type: 'string' } } }, execute: async () => ({ found: 'yes' }) });
  const seen = [];
  const watch = { id: 'watch', processOutputStream: ({ part }) => { seen.push(part.type); return part; } };
  const { agent, requests } = agentOn('tool-call', { tools: { lookup }, outputProcessors: [watch] });
  const { chunks } = await run(agent, 'find it');
  assert.deepEqual(seen, types(chunks).filter((t) => !['start', 'finish'].includes(t)), 'every chunk of the steps, in order');
  assert.ok(seen.includes('tool-result'));
  assert.equal(requests().length, 2);
  const stop = { id: 'no-results', processOutputStream: ({ part, abort }) => (part.type === 'tool-result' ? abort('results are private') : part) };
  const second = agentOn('tool-call', { tools: { lookup }, outputProcessors: [stop] });
  const { out, chunks: c2 } = await run(second.agent, 'find it');
  assert.deepEqual(types(c2).slice(-4), ['tool-call', 'tripwire', 'step-finish', 'finish']);
  assert.equal(second.requests().length, 1);
  assert.equal(await out.finishReason, 'tripwire');
});

test('BatchPartsProcessor joins text deltas without losing or reordering any; maxBatchSize is an alias; bad options are TypeErrors', T, async () => {
  const plain = await run(agentOn('deltas:12').agent, 'go');
  const batched = await run(agentOn('deltas:12', { outputProcessors: [new BatchPartsProcessor({ batchSize: 5 })] }).agent, 'go');
  assert.equal(deltas(plain.chunks).length, 12);
  assert.deepEqual(deltas(batched.chunks).map((d) => d.split(' ').length - 1), [5, 5, 2]);
  assert.equal(deltas(batched.chunks).join(''), deltas(plain.chunks).join(''));
  assert.equal(await batched.out.text, await plain.out.text);
  const rest = (cs) => types(cs).filter((x) => x !== 'text-delta');
  assert.deepEqual(rest(batched.chunks), rest(plain.chunks));
  const alias = await run(agentOn('deltas:12', { outputProcessors: [new BatchPartsProcessor({ maxBatchSize: 4 })] }).agent, 'go');
  assert.equal(deltas(alias.chunks).length, 3);
  const byDefault = new BatchPartsProcessor();
  assert.equal(byDefault.id, 'batch-parts');
  assert.throws(() => new BatchPartsProcessor({ batchSize: 0 }), /new BatchPartsProcessor\(options\)\.batchSize: expected a whole number of at least 1/);
  assert.throws(() => new BatchPartsProcessor({ emitOnNonText: 'yes' }), /emitOnNonText: expected a boolean/);
});

test('TokenLimiterProcessor (alias TokenLimiter) cuts the reply at the limit, or aborts with a tripwire', T, async () => {
  assert.equal(TokenLimiter, TokenLimiterProcessor);
  const cut = await run(agentOn('text:one two three four five six seven eight').agent, 'x', { outputProcessors: [new TokenLimiterProcessor(3)] });
  assert.equal(await cut.out.text, 'one two thr', 'the delta that passes three tokens is cut to what is left (about four characters a token)');
  assert.equal(await cut.out.finishReason, 'stop');
  const stop = await run(agentOn('text:one two three four five six seven eight').agent, 'x', { outputProcessors: [new TokenLimiter({ limit: 3, strategy: 'abort' })] });
  assert.deepEqual(stop.chunks.find((c) => c.type === 'tripwire').payload, { reason: 'Token limit of 3 exceeded', processorId: 'token-limiter' });
  assert.equal(await stop.out.finishReason, 'tripwire');
  assert.throws(() => new TokenLimiterProcessor({ strategy: 'abort' }), /limit: is required/);
  assert.throws(() => new TokenLimiterProcessor({ limit: 5, countMode: 'words' }), /countMode: expected 'cumulative' or 'part'/);
});

test('TokenLimiterProcessor as an input processor keeps the newest messages that fit', T, async () => {
  const { agent, requests } = agentOn('echo', { inputProcessors: [new TokenLimiterProcessor({ limit: 16 })] });
  await run(agent, ['x'.repeat(200), 'y'.repeat(16), 'latest question']);
  assert.deepEqual(requests()[0].body.messages.map((m) => m.content), ['y'.repeat(16), 'latest question']);
});

test('UnicodeNormalizer: NFKC, whitespace collapsed and trimmed by default; options change it', T, async () => {
  const { agent, requests } = agentOn('echo', { inputProcessors: [new UnicodeNormalizer()] });
  await run(agent, '  ｈｅｌｌｏ   ﬁne\u0007 world 😀  ');
  assert.equal(userText(requests()[0].body), 'hello fine\u0007 world 😀');
  const strict = new UnicodeNormalizer({ stripControlChars: true, preserveEmojis: false, trim: false });
  assert.equal(strict.normalize(' a\u0007b 😀 '), ' ab ');
  assert.equal(new UnicodeNormalizer().id, 'unicode-normalizer');
  const e = await errorOf(() => new UnicodeNormalizer({ trim: 'yes' }));
  assert.equal(e.name, 'TypeError');
});

noUnhandledRejections();
