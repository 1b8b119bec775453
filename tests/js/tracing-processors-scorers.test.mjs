// Processor and scorer spans (SPEC §16.2) and score events (§14.2), against the local model
// server with an in-test exporter: where each processor_run span goes and what it holds, one
// processOutputStream span per processor and step, tripwires and throws, a scorer's own trace
// (scorer_run → scorer_step), the onScoreEvent payload, and exporters whose onScoreEvent fails.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, modelFor, noUnhandledRejections, uid, useModelServer } from './helpers.mjs';
import { checkEvents, memoryExporter, tree, withConsoleErrors } from './tracing-helpers.mjs';
import { createScorer } from '../../pkg/index.node.js';

const srv = useModelServer();
const KEY = 'sk-processor-span-secret-42';
const model = (script) => modelFor(srv.current, script, { apiKey: KEY, headers: { 'x-test-id': uid('pspan'), 'x-api-key': KEY } });

/** An exporter that keeps span events and score events. */
function scoringExporter(name) {
  const exp = memoryExporter(name);
  exp.scores = [];
  exp.onScoreEvent = (event) => {
    exp.scores.push(event);
  };
  return exp;
}

test('every processor call has a processor_run span under the run or its step; a stream has one per step', T, async () => {
  const exp = memoryExporter();
  const current = {};
  const intake = {
    id: 'intake',
    processInput({ messages, tracingContext }) {
      current.input = tracingContext.currentSpan;
      tracingContext.currentSpan.createEventSpan({ name: 'looked', output: { n: messages.length } });
      return messages;
    },
  };
  const steps = {
    id: 'steps',
    processInputStep({ tracingContext }) {
      current.inputStep = tracingContext.currentSpan.id;
    },
    processOutputStep({ tracingContext }) {
      current.outputStep = tracingContext.currentSpan.id;
    },
  };
  const streamSpans = new Set();
  const shout = {
    id: 'shout',
    processOutputStream({ part, tracingContext }) {
      streamSpans.add(tracingContext.currentSpan.id);
      return part.type === 'text-delta' ? { ...part, payload: { ...part.payload, text: part.payload.text.toUpperCase() } } : part;
    },
  };
  const last = { id: 'final', processOutputResult: ({ messages }) => messages };
  const agent = new Agent({
    id: 'procs',
    model: model('echo'),
    inputProcessors: [intake, steps],
    outputProcessors: [steps, shout, last],
    observability: { exporters: [exp] },
  });
  const out = await agent.stream('hello there');
  const text = await out.text;
  assert.equal(text, text.toUpperCase());
  assert.match(text, /HELLO THERE/);
  checkEvents(exp.events);
  const ended = exp.ended();
  assert.deepEqual(tree(ended), [
    ['looked', 'input processor: intake'],
    ['input processor: intake', "agent run: 'procs'"],
    ['input processor: steps', 'step: 0'],
    ['output processor: steps', 'step: 0'],
    ['output processor: shout', 'step: 0'],
    ['step: 0', "llm: 'echo'"],
    ['output processor: final', "agent run: 'procs'"],
    ["llm: 'echo'", "agent run: 'procs'"],
    ["agent run: 'procs'", null],
  ]);
  const phase = (name) => exp.byName(name).attributes.processorPhase;
  assert.deepEqual(
    ['input processor: intake', 'input processor: steps', 'output processor: steps', 'output processor: shout', 'output processor: final'].map(phase),
    ['input', 'inputStep', 'outputStep', 'outputStream', 'outputResult'],
  );
  const intakeSpan = exp.byName('input processor: intake');
  assert.deepEqual([intakeSpan.type, intakeSpan.entityType, intakeSpan.entityId], ['processor_run', 'processor', 'intake']);
  assert.equal(intakeSpan.input.messages[0].role, 'user');
  assert.equal(intakeSpan.output.length, intakeSpan.input.messages.length, 'what it returned');
  assert.equal(intakeSpan.traceId, out.traceId);
  // Inside a processor, currentSpan is its own span.
  assert.equal(current.input.id, intakeSpan.id);
  assert.equal(current.input.type, 'processor_run');
  assert.equal(current.input.name, 'input processor: intake');
  assert.equal(current.inputStep, exp.byName('input processor: steps').id);
  assert.equal(current.outputStep, exp.byName('output processor: steps').id);
  const stream = exp.byName('output processor: shout');
  assert.deepEqual([...streamSpans], [stream.id], 'every chunk of the step shares one span');
  assert.equal(stream.input.text.toUpperCase(), stream.output.text);
  assert.equal(stream.output.text, text);
  assert.equal(stream.input.chunks, stream.output.chunks);
  assert.equal(exp.byName('input processor: steps').input.stepNumber, 0);
  assert.ok(!JSON.stringify(exp.events).includes(KEY), 'no API key in any span');
});

test('a processor that aborts ends its span with the tripwire; one that throws with errorInfo', T, async () => {
  const exp = memoryExporter();
  const guard = { id: 'guard', processOutputStep: ({ abort }) => abort('too chatty', { metadata: { words: 3 } }) };
  const agent = new Agent({ id: 'guarded', model: model('echo'), outputProcessors: [guard], observability: { exporters: [exp] } });
  const full = await agent.generate('hi');
  assert.equal(full.tripwire.reason, 'too chatty');
  checkEvents(exp.events);
  const span = exp.byName('output processor: guard');
  assert.deepEqual(span.attributes.tripwireAbort, { reason: 'too chatty', retry: false, metadata: { words: 3 } });
  assert.equal(span.errorInfo, undefined, 'a tripwire is the processor doing its job');
  assert.equal(exp.byName("agent run: 'guarded'").attributes.tripwireAbort.reason, 'too chatty');

  const e2 = memoryExporter();
  const broken = { id: 'broken', processInput: () => { throw new Error('cannot read the input'); } };
  const failing = new Agent({ id: 'failing', model: model('echo'), inputProcessors: [broken], observability: { exporters: [e2] } });
  const out = await failing.stream('hi');
  await out.consumeStream();
  checkEvents(e2.events);
  const bad = e2.byName('input processor: broken');
  assert.equal(bad.errorInfo.name, 'ProcessorError');
  assert.match(bad.errorInfo.message, /cannot read the input/);
  assert.equal(bad.parentSpanId, out.spanId);
});

test('a scorer runs in a trace of its own: scorer_run with scorer_step children, and onScoreEvent gets the score', T, async () => {
  const exp = scoringExporter('scores');
  const relevance = createScorer({ id: 'relevance', name: 'Relevance', description: 'd' })
    .preprocess(({ run }) => ({ words: JSON.stringify(run.output).length }))
    .generateScore(({ results }) => (results.preprocessStepResult.words > 0 ? 1 : 0))
    .generateReason(({ score }) => `score ${score}`);
  // A scorer-like object (not createScorer's): its run is traced, without steps.
  const plain = { id: 'plain', run: async () => ({ score: 0.5 }) };
  const agent = new Agent({
    id: 'scored',
    model: model('echo'),
    scorers: { relevance: { scorer: relevance }, plain: { scorer: plain } },
    observability: { exporters: [exp] },
  });
  const out = await agent.stream('Judge me', { tracingOptions: { metadata: { team: 'docs' } } });
  const scores = await out.scores;
  assert.deepEqual(scores.map((s) => [s.scorerId, s.score, s.traceId, s.spanId]), [
    ['relevance', 1, out.traceId, out.spanId],
    ['plain', 0.5, out.traceId, out.spanId],
  ]);
  checkEvents(exp.events);
  const run = exp.byName("scorer run: 'relevance'");
  assert.equal(run.type, 'scorer_run');
  assert.equal(run.isRootSpan, true);
  assert.equal(run.parentSpanId, undefined);
  assert.notEqual(run.traceId, out.traceId, 'its own trace');
  assert.deepEqual([run.entityType, run.entityId, run.entityName], ['scorer', 'relevance', 'Relevance']);
  assert.deepEqual(run.attributes, { scorerId: 'relevance', scorerName: 'Relevance' });
  assert.equal(run.input.output[0].role, 'assistant');
  assert.equal(run.input.input.inputMessages[0].role, 'user');
  assert.deepEqual(run.output, { score: 1, reason: 'score 1' });
  assert.equal(run.metadata.team, 'docs');
  assert.equal(run.metadata.targetTraceId, out.traceId);
  assert.equal(run.metadata.targetSpanId, out.spanId);
  const own = exp.ended().filter((s) => s.traceId === run.traceId);
  assert.deepEqual(tree(own), [
    ["scorer step: 'preprocess'", "scorer run: 'relevance'"],
    ["scorer step: 'generateScore'", "scorer run: 'relevance'"],
    ["scorer step: 'generateReason'", "scorer run: 'relevance'"],
    ["scorer run: 'relevance'", null],
  ]);
  for (const s of own.slice(0, 3)) {
    assert.equal(s.type, 'scorer_step');
    assert.deepEqual(s.attributes, { scorerId: 'relevance', scorerName: 'Relevance' });
    assert.equal(s.entityId, 'relevance');
  }
  assert.equal(exp.byName("scorer step: 'generateScore'").output, 1);
  assert.deepEqual(exp.byName("scorer step: 'generateScore'").input, { preprocessStepResult: exp.byName("scorer step: 'preprocess'").output });
  const plainRun = exp.byName("scorer run: 'plain'");
  assert.equal(exp.ended().filter((s) => s.traceId === plainRun.traceId).length, 1);

  assert.equal(exp.scores.length, 2);
  const event = exp.scores.find((e) => e.score.scorerId === 'relevance');
  assert.equal(event.type, 'score');
  const s = event.score;
  assert.match(s.scoreId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.ok(s.timestamp instanceof Date);
  assert.deepEqual(
    { ...s, scoreId: undefined, timestamp: undefined },
    {
      scoreId: undefined,
      timestamp: undefined,
      traceId: out.traceId,
      spanId: out.spanId,
      scorerId: 'relevance',
      scorerName: 'Relevance',
      scoreSource: 'live',
      score: 1,
      reason: 'score 1',
      scoreTraceId: run.traceId,
      targetEntityType: 'agent',
      metadata: { runId: (await out.getFullOutput()).runId, team: 'docs' },
    },
  );
  assert.equal(exp.scores.find((e) => e.score.scorerId === 'plain').score.scoreTraceId, plainRun.traceId);
  assert.ok(!JSON.stringify([exp.events, exp.scores]).includes(KEY), 'no API key in scorer spans or score events');
});

test('a failing scorer ends its span with the error; without tracing there are no scorer spans or score events', T, async () => {
  const exp = scoringExporter('fails');
  const broken = createScorer({ id: 'broken', description: 'd' }).analyze(() => { throw new Error('no idea'); }).generateScore(() => 1);
  const agent = new Agent({ id: 'scored-fail', model: model('echo'), scorers: { broken: { scorer: broken } }, observability: { exporters: [exp] } });
  const warn = console.warn;
  console.warn = () => {};
  let scores;
  try {
    scores = await (await agent.stream('hi')).scores;
  } finally {
    console.warn = warn;
  }
  assert.deepEqual(scores, []);
  checkEvents(exp.events);
  assert.equal(exp.byName("scorer step: 'analyze'").errorInfo.message, 'no idea');
  assert.match(exp.byName("scorer run: 'broken'").errorInfo.message, /failed in its analyze step: no idea/);
  assert.equal(exp.scores.length, 0, 'no score, no score event');

  const sampledOut = scoringExporter('never');
  const one = createScorer({ id: 'one', description: 'd' }).generateScore(() => 1);
  const quiet = new Agent({ id: 'quiet', model: model('echo'), scorers: { one: { scorer: one } }, observability: { exporters: [sampledOut], sampling: { type: 'never' } } });
  const out = await quiet.stream('hi');
  const s = await out.scores;
  assert.deepEqual(s.map((x) => [x.scorerId, x.traceId]), [['one', undefined]]);
  assert.deepEqual([sampledOut.events.length, sampledOut.scores.length], [0, 0]);
});

test('an onScoreEvent that throws or rejects is told once per exporter and fails nothing', T, () =>
  withConsoleErrors(async (errors) => {
    const good = scoringExporter('good');
    const throws = { name: 'thrower', exportTracingEvent() {}, onScoreEvent() { throw new Error('boom'); } };
    const rejects = { name: 'rejecter', exportTracingEvent() {}, onScoreEvent: async () => { throw new Error('later'); } };
    const one = createScorer({ id: 'one', description: 'd' }).generateScore(() => 1);
    const agent = new Agent({ id: 'bad-score-exp', model: model('echo'), scorers: { one: { scorer: one } }, observability: { exporters: [throws, rejects, good] } });
    for (let i = 0; i < 2; i++) {
      const out = await agent.stream('Hi');
      assert.match(await out.text, /You said/);
      assert.deepEqual((await out.scores).map((s) => s.score), [1]);
    }
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(good.scores.length, 2, 'the other exporters still get every score');
    assert.equal(errors.filter((l) => l.includes("'thrower' onScoreEvent")).length, 1, errors.join('\n'));
    assert.equal(errors.filter((l) => l.includes("'rejecter' onScoreEvent")).length, 1, errors.join('\n'));
  }));

noUnhandledRejections();
