// Options of the reference's agent.stream() that this version does not honour yet (SPEC §3,
// src/core/unsupported.rs): each one given adds an `unsupported-setting` warning to `warnings`,
// getFullOutput().warnings and the first step-start's payload, and is told to console.warn once
// per process per name. Honoured options, unknown keys and options set to "nothing" stay quiet.
//
// console.warn is counted per process: the first test is the first to give each name.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, modelFor, noUnhandledRejections, types, uid, useModelServer } from './helpers.mjs';
import { InMemoryStore, Memory } from '../../pkg/index.node.js';
import { TB, bgAgent, bgScript, indexesOf, read, scope, slowTool } from './background-helpers.mjs';

const server = useModelServer();

/** console.warn lines of this file's stream options, recorded while the file runs. */
const told = [];
const realWarn = console.warn;
before(() => {
  console.warn = (...args) => {
    const line = args.map(String).join(' ');
    if (line.startsWith('wasm-agent: the stream option')) told.push(line);
    else realWarn(...args);
  };
});
after(() => {
  console.warn = realWarn;
});

/** The console lines that named `name`. */
const toldAbout = (name) => told.filter((l) => l.includes(`'${name}'`));

/** Each unsupported option with a value a Mastra user would write. */
const SENTIMENT = { type: 'object', properties: { sentiment: { type: 'string' } } };
const UNSUPPORTED = {
  versions: { agents: { helper: { status: 'published' } } },
};

/** A fresh agent on the echo script, with memory (for `memory.options`). */
function agentOn(extra = {}) {
  const model = modelFor(server.current, 'echo', { headers: { 'x-test-id': uid('unsup') } });
  return new Agent({ id: uid('unsupported'), model, memory: new Memory({ storage: new InMemoryStore() }), ...extra });
}

/** Runs one call; returns its warnings, getFullOutput().warnings and the step-start warnings. */
async function warningsOf(agent, options) {
  const out = await agent.stream('Hello', options);
  const chunks = [];
  for await (const c of out.fullStream) chunks.push(c);
  const stepStarts = chunks.filter((c) => c.type === 'step-start');
  assert.ok(stepStarts.length >= 1, types(chunks).join(','));
  const full = await out.getFullOutput();
  return { warnings: await out.warnings, full: full.warnings, stepStart: stepStarts[0].payload.warnings, chunks };
}

const settingsOf = (ws) => ws.map((w) => w.setting);

test('each unsupported option warns into warnings, getFullOutput() and the first step-start; console.warn once per name', T, async () => {
  const cases = Object.entries(UNSUPPORTED).map(([name, value]) => [name, { [name]: value }]);
  for (const [name, options] of cases) {
    const { warnings, full, stepStart } = await warningsOf(agentOn(), options);
    assert.equal(warnings.length, 1, `${name}: ${JSON.stringify(warnings)}`);
    const [w] = warnings;
    assert.equal(w.type, 'unsupported-setting');
    assert.equal(w.setting, name);
    assert.equal(typeof w.details, 'string');
    assert.ok(w.details.length > 20 && w.details.endsWith('.'), `${name}: ${w.details}`);
    assert.deepEqual(full, warnings, `${name}: getFullOutput().warnings`);
    assert.deepEqual(stepStart, warnings, `${name}: step-start warnings`);
    assert.equal(toldAbout(name).length, 1, `${name}: ${JSON.stringify(told)}`);
    assert.ok(toldAbout(name)[0].includes(w.details), toldAbout(name)[0]);
  }
  assert.equal(told.length, cases.length);
  // The same options again (another agent too): still in the output, not on the console again.
  for (const [name, options] of cases) {
    const { warnings } = await warningsOf(agentOn(), options);
    assert.deepEqual(settingsOf(warnings), [name]);
  }
  assert.equal(told.length, cases.length, JSON.stringify(told));
});

test('an unsupported option in the call and in defaultOptions: one warning, listed once', T, async () => {
  const agent = agentOn({ defaultOptions: { versions: UNSUPPORTED.versions } });
  const { warnings, stepStart, chunks } = await warningsOf(agent, { versions: UNSUPPORTED.versions, reconnectable: { retainMs: 1000 } });
  assert.deepEqual(settingsOf(warnings), ['versions'], 'reconnectable is honoured (SPEC §19.8): no warning');
  assert.deepEqual(stepStart, warnings);
  assert.equal(chunks.filter((c) => c.type === 'step-start').length, 1);
});

test('versions is always reported: the reference resolves it with its editor package, which this package has not', T, async () => {
  const { warnings } = await warningsOf(agentOn(), { versions: { agents: { other: { versionId: 'v7' } } } });
  assert.deepEqual(settingsOf(warnings), ['versions']);
  assert.match(warnings[0].details, /editor package/);
  assert.match(warnings[0].details, /agents defined in code run/);
});

test('an unsupported option given only in the agent\'s defaultOptions warns too; the call\'s own value wins', T, async () => {
  const agent = agentOn({ defaultOptions: { versions: UNSUPPORTED.versions, maxSteps: 2 } });
  const { warnings, stepStart } = await warningsOf(agent, {});
  assert.deepEqual(settingsOf(warnings), ['versions']);
  assert.deepEqual(stepStart, warnings);
  // The call turns it off: nothing to warn about.
  const off = await warningsOf(agent, { versions: null });
  assert.deepEqual(off.warnings, []);
});

test('semanticRecall is honoured (SPEC §21.3): in the Memory\'s own options or the call\'s, it does not warn', T, async () => {
  const embedder = async (texts) => texts.map(() => [1, 0]);
  const memory = new Memory({ storage: new InMemoryStore(), embedder, options: { semanticRecall: { topK: 2 }, lastMessages: 4 } });
  const agent = agentOn({ memory });
  const withThread = await warningsOf(agent, { memory: { thread: uid('th'), resource: 'u1' } });
  assert.deepEqual(withThread.warnings, []);
  const call = await warningsOf(agent, { memory: { thread: uid('th'), resource: 'u1', options: { semanticRecall: { topK: 1, scope: 'thread' } } } });
  assert.deepEqual(call.warnings, []);
});

test('honoured options do not warn', T, async () => {
  const before = told.length;
  const { warnings, stepStart } = await warningsOf(agentOn(), {
    maxSteps: 3,
    structuredOutput: { schema: SENTIMENT, errorStrategy: 'fallback', fallbackValue: {}, instructions: 'x', jsonPromptInjection: 'auto', useAgent: true },
    stopWhen: () => false,
    toolChoice: 'auto',
    activeTools: [],
    toolCallConcurrency: 2,
    requireToolApproval: false,
    hooks: { beforeToolCall: () => undefined },
    prepareStep: () => undefined,
    onIterationComplete: () => undefined,
    instructions: 'Be brief.',
    system: 'Answer in English.',
    context: [{ role: 'user', content: 'Background.' }],
    modelSettings: { temperature: 0.3, maxOutputTokens: 50, seed: 1 },
    providerOptions: { openai: { user: 'u1' } },
    includeRawChunks: false,
    memory: {
      thread: { id: uid('th'), title: 'T' },
      resource: 'u1',
      options: { lastMessages: 5, readOnly: false, semanticRecall: false, workingMemory: { enabled: false } },
    },
    savePerStep: true,
    runId: uid('run'),
    requestContext: { userId: 'u1' },
    untilIdle: false,
    inputProcessors: [{ id: 'trim', processInput: ({ messages }) => messages }],
    outputProcessors: [{ id: 'pass', processOutputStream: ({ part }) => part }],
    maxProcessorRetries: 2,
    onChunk: () => {},
    onStepFinish: () => {},
    onFinish: () => {},
    onError: () => {},
    onAbort: () => {},
    abortSignal: new AbortController().signal,
  });
  assert.deepEqual(warnings, []);
  assert.deepEqual(stepStart, []);
  assert.equal(told.length, before);
});

test('keys the reference does not have, and unsupported options set to nothing, stay silent', T, async () => {
  const before = told.length;
  const { warnings, stepStart } = await warningsOf(agentOn(), {
    noSuchOption: true,
    structuredOutputs: { schema: {} },
    maxIdleMs: 10,
    modelSettings: { noSuchSetting: 1 },
    returnScorerData: false,
    closeOnSuspend: false,
    autoResumeSuspendedTools: false,
    inputProcessors: [],
    outputProcessors: [],
    scorers: null,
    versions: undefined,
  });
  assert.deepEqual(warnings, []);
  assert.deepEqual(stepStart, []);
  assert.equal(told.length, before);
});

test('an unsupported option whose getter throws is a TypeError naming it', T, async () => {
  const options = {
    get telemetry() {
      throw new Error('no telemetry here');
    },
  };
  await assert.rejects(agentOn().stream('Hello', options), (e) => {
    assert.equal(e.name, 'TypeError');
    assert.match(e.message, /options\.telemetry/);
    assert.match(e.message, /no telemetry here/);
    return true;
  });
});

test('untilIdle: the warnings come with the first turn; a continuation turn does not repeat them', TB, async () => {
  const s = bgScript(server.current);
  const { agent } = bgAgent(s.model, { tools: { research: slowTool({ ms: 200 }) } });
  const out = await agent.stream('Research solana', { untilIdle: true, memory: scope(), versions: UNSUPPORTED.versions });
  const { chunks } = await read(out.fullStream);
  assert.deepEqual(s.log.map((e) => e.kind), ['user', 'ack', 'continuation']);
  const starts = indexesOf(chunks, 'start');
  assert.equal(starts.length, 2, 'two turns');
  const stepStarts = chunks.flatMap((c, i) => (c.type === 'step-start' ? [{ i, warnings: c.payload.warnings }] : []));
  const firstTurn = stepStarts.filter((s) => s.i < starts[1]);
  const continuation = stepStarts.filter((s) => s.i > starts[1]);
  assert.deepEqual(settingsOf(firstTurn[0].warnings), ['versions']);
  assert.deepEqual(firstTurn.slice(1).map((s) => s.warnings), [[]], 'the first turn\'s second step: none');
  assert.ok(continuation.length >= 1);
  assert.deepEqual(continuation.map((s) => s.warnings), continuation.map(() => []));
  assert.deepEqual(settingsOf(await out.warnings), ['versions'], 'the aggregates are the first turn\'s');
});

noUnhandledRejections();
