// isTaskComplete (SPEC §15) against the local model server: a failed check feeds its report back
// for another step (the `attempts` script, tests/server/completion-scripts.mjs, says what report
// it saw), is-task-complete chunks before each step-finish, the maxSteps bound, timeouts, all/any,
// parallel against in order, onComplete, suppressFeedback and what memory keeps.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, T, collect, errorOf, modelFor, requestsOf, types, uid, useModelServer } from './helpers.mjs';
import { mapStorage } from './memory-helpers.mjs';
import { createScorer, Memory } from '../../pkg/index.node.js';

const srv = useModelServer();

function agentOn(script, extra = {}) {
  const id = uid('itc');
  const agent = new Agent({ id, name: 'Checker', model: modelFor(srv.current, script, { headers: { 'x-test-id': id } }), instructions: 'Do the task.', ...extra });
  return { agent, id };
}

/** A scorer that passes (score 1) when the output contains `word`. */
const contains = (word, id = `has-${word}`) =>
  createScorer({ id, name: `Has ${word}`, description: `the answer says ${word}` })
    .generateScore(({ run }) => (run.output.includes(word) ? 1 : 0))
    .generateReason(({ run, score }) => (score === 1 ? `found ${word}` : `no ${word} in '${run.output}'`));

/** A hand-written scorer whose run() waits for `gate` (never settles on its own). */
function hanging(id, started) {
  let release;
  const gate = new Promise((r) => (release = r));
  return {
    scorer: {
      id,
      name: id,
      async run() {
        started.push(id);
        await gate;
        return { score: 1 };
      },
    },
    release: () => release(),
  };
}

async function run(agent, options, prompt = 'Write the final answer.') {
  const out = await agent.stream(prompt, options);
  const chunks = await collect(out.fullStream);
  return { out, chunks, checks: chunks.filter((c) => c.type === 'is-task-complete') };
}

test('a failing check feeds its report back; the next step passes; chunks come before each step-finish', T, async () => {
  const { agent, id } = agentOn('attempts');
  const seen = [];
  const judged = createScorer({ id: 'second', name: 'Second try', description: 'd' })
    .generateScore(({ run }) => {
      seen.push(run);
      return run.output.startsWith('attempt 2') ? 1 : 0;
    })
    .generateReason(({ score }) => (score === 1 ? 'second attempt' : 'try again'));
  const completed = [];
  const requestContext = new Map([['tenant', 'acme']]);
  const { out, chunks, checks } = await run(agent, {
    isTaskComplete: { scorers: [judged], onComplete: (r) => completed.push(r) },
    requestContext,
    runId: 'itc-run-1',
  });
  assert.deepEqual(types(chunks), [
    'start', 'step-start', 'text-start', 'text-delta', 'text-delta', 'text-end', 'is-task-complete', 'step-finish',
    'step-start', 'text-start', 'text-delta', 'text-delta', 'text-end', 'is-task-complete', 'step-finish', 'finish',
  ]);
  assert.equal(checks[0].runId, 'itc-run-1');
  assert.equal(checks[0].from, 'AGENT');
  const [first, second] = checks.map((c) => c.payload);
  assert.deepEqual(Object.keys(first).sort(), ['duration', 'iteration', 'maxIterationReached', 'passed', 'reason', 'results', 'suppressFeedback', 'timedOut']);
  assert.equal(first.iteration, 1);
  assert.equal(first.passed, false);
  assert.equal(first.reason, 'try again');
  assert.equal(first.maxIterationReached, false);
  assert.equal(first.suppressFeedback, false);
  assert.equal(first.timedOut, false);
  assert.equal(first.results.length, 1);
  const r0 = first.results[0];
  assert.deepEqual([r0.scorerId, r0.scorerName, r0.score, r0.passed, r0.reason], ['second', 'Second try', 0, false, 'try again']);
  assert.equal(typeof r0.duration, 'number');
  assert.equal('errored' in r0, false);
  assert.deepEqual([second.iteration, second.passed, second.reason], [2, true, 'second attempt']);
  const finishes = chunks.filter((c) => c.type === 'step-finish');
  assert.deepEqual(finishes.map((c) => c.payload.stepResult.isContinued), [true, false]);
  // The model got the report (its "Reason:" line) in the second request, as an assistant message.
  const reqs = requestsOf(srv.current, id);
  assert.equal(reqs.length, 2);
  const msgs = reqs[1].body.messages;
  assert.equal(msgs.at(-1).role, 'assistant');
  assert.match(msgs.at(-1).content, /^#### Completion Check Results\n/);
  assert.match(msgs.at(-1).content, /###### Second try \(second\)\nScore: 0 \(failed\)\nReason: try again/);
  assert.equal(msgs.at(-2).content, 'attempt 1');
  const text = await out.text;
  assert.equal(text.includes('Completion Check'), false, 'not part of the text');
  assert.ok(text.endsWith('attempt 2 after try again'), text);
  assert.equal(chunks.some((c) => c.type === 'text-delta' && c.payload.text.includes('Completion')), false, 'not streamed');
  // What the scorer got: run({ runId, input: ctx, output: ctx.currentText, requestContext }).
  assert.equal(seen.length, 2);
  const ctx = seen[0].input;
  assert.equal(seen[0].runId, 'itc-run-1');
  assert.equal(seen[0].output, 'attempt 1');
  assert.equal(seen[0].requestContext, requestContext);
  assert.deepEqual([ctx.iteration, ctx.maxIterations, ctx.originalTask, ctx.currentText, ctx.primitiveResult], [1, 5, 'Write the final answer.', 'attempt 1', 'attempt 1']);
  assert.deepEqual([ctx.agentId, ctx.agentName, ctx.runId], [agent.id, 'Checker', 'itc-run-1']);
  assert.deepEqual(ctx.customContext, { tenant: 'acme' });
  assert.deepEqual([ctx.toolCalls, ctx.toolResults], [[], []]);
  assert.ok(Array.isArray(ctx.messages) && ctx.messages.some((m) => m.role === 'user'));
  // onComplete after each check, with the §15 shape.
  assert.equal(completed.length, 2);
  assert.deepEqual(Object.keys(completed[0]).sort(), ['complete', 'completionReason', 'scorers', 'timedOut', 'totalDuration']);
  assert.deepEqual([completed[0].complete, completed[1].complete], [false, true]);
  assert.deepEqual(completed[0].scorers, first.results);
  assert.equal(completed[1].completionReason, 'second attempt');
  assert.deepEqual(await out.warnings, [], 'isTaskComplete no longer warns');
});

test('a check that never passes is bounded by maxSteps: maxIterationReached, the run ends with the last text', T, async () => {
  const { agent, id } = agentOn('attempts');
  const never = { id: 'never', name: 'Never', run: async () => ({ score: 0.9, reason: 'not yet' }) };
  const { out, checks } = await run(agent, { maxSteps: 3, isTaskComplete: { scorers: [never] } });
  assert.equal(requestsOf(srv.current, id).length, 3);
  assert.deepEqual(checks.map((c) => [c.payload.iteration, c.payload.passed, c.payload.maxIterationReached]), [
    [1, false, false],
    [2, false, false],
    [3, false, true],
  ]);
  const full = await out.getFullOutput();
  assert.equal(full.finishReason, 'stop');
  assert.equal(full.steps.length, 3);
  assert.equal(full.steps.at(-1).text, 'attempt 3 after not yet');
  assert.equal(checks[2].payload.results[0].score, 0.9, 'only exactly 1 passes');
  assert.equal(full.error, undefined);
});

test("strategy 'any' passes on one scorer; 'all' needs every one", T, async () => {
  const any = await run(agentOn('attempts').agent, { isTaskComplete: { strategy: 'any', scorers: [contains('zzz'), contains('attempt')] } });
  assert.equal(any.checks.length, 1);
  assert.equal(any.checks[0].payload.passed, true);
  assert.equal(any.checks[0].payload.reason, 'found attempt', 'the first passing scorer\'s reason');
  assert.deepEqual(any.checks[0].payload.results.map((r) => [r.scorerId, r.passed]), [['has-zzz', false], ['has-attempt', true]]);
  const all = await run(agentOn('attempts').agent, { maxSteps: 2, isTaskComplete: { strategy: 'all', scorers: [contains('attempt'), contains('after')] } });
  assert.deepEqual(all.checks.map((c) => c.payload.passed), [false, true], 'the second attempt says "after"');
  assert.equal(all.checks[0].payload.reason, 'found attempt', 'the first passing scorer\'s reason even when the check fails');
});

test('in order (parallel: false) the scorers run one by one and stop once the verdict is known', T, async () => {
  const calls = [];
  const spy = (id, score) => ({ id, name: id, run: async (r) => (calls.push(id), { score, reason: `${id} on ${r.output}` }) });
  const all = await run(agentOn('attempts').agent, { maxSteps: 1, isTaskComplete: { parallel: false, scorers: [spy('a', 1), spy('b', 0), spy('c', 1)] } });
  assert.deepEqual(calls, ['a', 'b'], "'all': the first failure decides");
  assert.deepEqual(all.checks[0].payload.results.map((r) => r.scorerId), ['a', 'b']);
  calls.length = 0;
  const any = await run(agentOn('attempts').agent, { isTaskComplete: { parallel: false, strategy: 'any', scorers: [spy('a', 0.5), spy('b', 1), spy('c', 1)] } });
  assert.deepEqual(calls, ['a', 'b'], "'any': the first pass decides");
  assert.equal(any.checks[0].payload.passed, true);
  calls.length = 0;
  await run(agentOn('attempts').agent, { isTaskComplete: { scorers: [spy('a', 1), spy('b', 0.5), spy('c', 1)] }, maxSteps: 1 });
  assert.deepEqual(calls, ['a', 'b', 'c'], 'parallel (the default) starts every scorer');
});

test('the timeout is one deadline: a scorer still running counts as errored and the check as timed out', T, async () => {
  const started = [];
  const slow = hanging('slow', started);
  try {
    const { out, checks } = await run(agentOn('attempts').agent, { maxSteps: 1, isTaskComplete: { timeout: 60, scorers: [contains('attempt'), slow.scorer] } });
    const p = checks[0].payload;
    assert.equal(p.timedOut, true);
    assert.equal(p.passed, false);
    assert.deepEqual(p.results[1], { scorerId: 'slow', scorerName: 'slow', score: 0, passed: false, errored: true, reason: 'Scorer did not finish before the completion timeout', duration: p.results[1].duration });
    assert.ok(p.duration >= 55, `${p.duration}`);
    assert.equal(p.results[0].passed, true);
    assert.equal(p.maxIterationReached, true);
    assert.equal((await out.getFullOutput()).finishReason, 'stop');
    // 'any' with a scorer that passed in time: the check passes though it timed out.
    const any = await run(agentOn('attempts').agent, { isTaskComplete: { timeout: 40, strategy: 'any', scorers: [slow.scorer, contains('attempt')] } });
    assert.deepEqual([any.checks[0].payload.passed, any.checks[0].payload.timedOut], [true, true]);
    // In order, the scorers after the deadline never start.
    started.length = 0;
    const seq = await run(agentOn('attempts').agent, { maxSteps: 1, isTaskComplete: { timeout: 40, parallel: false, scorers: [slow.scorer, contains('attempt')] } });
    assert.deepEqual(seq.checks[0].payload.results.map((r) => r.scorerId), ['slow']);
    assert.deepEqual(started, ['slow']);
  } finally {
    slow.release();
  }
});

test('a scorer that throws counts as failed with errored and its message; a throwing onComplete is logged', T, async () => {
  const broken = createScorer({ id: 'broken', description: 'd' }).generateScore(() => {
    throw new Error('no judge today');
  });
  const logged = [];
  const realError = console.error;
  console.error = (...args) => logged.push(args.map(String).join(' '));
  try {
    const { checks, out } = await run(agentOn('attempts').agent, {
      maxSteps: 1,
      isTaskComplete: { scorers: [broken], onComplete: () => { throw new Error('callback broke'); } },
    });
    const r = checks[0].payload.results[0];
    assert.deepEqual([r.score, r.passed, r.errored], [0, false, true]);
    assert.match(r.reason, /no judge today/);
    assert.match(r.reason, /generateScore/);
    assert.equal((await out.getFullOutput()).finishReason, 'stop');
  } finally {
    console.error = realError;
  }
  assert.ok(logged.some((l) => l.includes('isTaskComplete.onComplete failed') && l.includes('callback broke')), JSON.stringify(logged));
});

test('memory keeps the report with metadata.completionResult; with suppressFeedback it is sent but never stored', T, async () => {
  for (const suppress of [false, true]) {
    const store = mapStorage();
    const { agent, id } = agentOn('attempts', { memory: new Memory({ storage: store.storage }) });
    const thread = uid('th');
    const { checks } = await run(agent, { memory: { thread, resource: 'u1' }, isTaskComplete: { suppressFeedback: suppress, scorers: [contains('after')] } });
    assert.deepEqual(checks.map((c) => [c.payload.passed, c.payload.suppressFeedback]), [[false, suppress], [true, suppress]]);
    assert.match(requestsOf(srv.current, id)[1].body.messages.at(-1).content, /^#### Completion Check Results/, 'sent either way');
    const rows = [...store.messages.values()].filter((m) => m.threadId === thread).sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1));
    const reports = rows.filter((m) => JSON.stringify(m.content).includes('Completion Check Results'));
    if (suppress) {
      assert.deepEqual(rows.map((m) => m.role), ['user', 'assistant']);
      assert.equal(reports.length, 0);
    } else {
      assert.deepEqual(rows.map((m) => m.role), ['user', 'assistant', 'assistant']);
      assert.equal(reports.length, 1);
      assert.deepEqual(reports[0].content.metadata?.completionResult ?? reports[0].metadata?.completionResult, { passed: false, suppressFeedback: false });
      assert.equal(JSON.stringify(rows[1].content).includes('Completion Check'), false, 'the reply itself has no report');
    }
    // The next turn's history: the report is there only when it was stored.
    await run(agent, { memory: { thread, resource: 'u1' } }, 'And now?');
    const next = requestsOf(srv.current, id).at(-1).body.messages;
    assert.equal(next.some((m) => m.role === 'assistant' && String(m.content).startsWith('#### Completion Check Results')), !suppress);
  }
});

test('bad isTaskComplete values are TypeErrors naming the field', T, async () => {
  const { agent } = agentOn('attempts');
  const cases = [
    ['options.isTaskComplete', 'yes'],
    ['options.isTaskComplete.scorers', {}],
    ['options.isTaskComplete.scorers[0]', { scorers: [{ id: 'x' }] }],
    ['options.isTaskComplete.scorers[0].id', { scorers: [{ run: () => ({ score: 1 }) }] }],
    ['options.isTaskComplete.strategy', { scorers: [], strategy: 'most' }],
    ['options.isTaskComplete.timeout', { scorers: [], timeout: -5 }],
    ['options.isTaskComplete.parallel', { scorers: [], parallel: 'yes' }],
    ['options.isTaskComplete.onComplete', { scorers: [], onComplete: 'log' }],
    ['options.isTaskComplete.suppressFeedback', { scorers: [], suppressFeedback: 1 }],
  ];
  for (const [field, value] of cases) {
    const e = await errorOf(() => agent.stream('Hi', { isTaskComplete: value.scorers || typeof value !== 'object' ? value : { scorers: value } }));
    assert.ok(e instanceof TypeError, `${field}: ${e}`);
    assert.ok(e.message.startsWith(field), `${field}: ${e.message}`);
  }
});

test('isTaskComplete in defaultOptions applies; no scorers means no check', T, async () => {
  const { agent } = agentOn('attempts', { defaultOptions: { isTaskComplete: { scorers: [contains('attempt')] } } });
  const { checks } = await run(agent, {});
  assert.deepEqual(checks.map((c) => c.payload.passed), [true]);
  const none = await run(agentOn('attempts').agent, { isTaskComplete: { scorers: [] } });
  assert.equal(none.checks.length, 0);
});
