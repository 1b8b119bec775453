// Scorers (SPEC §14): createScorer's pipeline with function and judged steps, its errors, and
// scorers on an agent run (sampling, out.scores, saveScore rows, memory written first, skipped
// runs), against the local model server (the judge scripts are tests/server/judge-scripts.mjs).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before } from 'node:test';
import { Agent, T, collect, errorOf, modelFor, noUnhandledRejections, rejectionOf, requestsOf, uid, useModelServer } from './helpers.mjs';
import { mapStorage } from './memory-helpers.mjs';
import { createScorer, MastraScorer, ScorerError, Mastra, Memory } from '../../pkg/index.node.js';

const srv = useModelServer();
const judgeOf = (id, extra = {}) => ({ model: modelFor(srv.current, 'judge', { headers: { 'x-test-id': id } }), instructions: 'You grade answers.', ...extra });
const bodyOf = (r) => (typeof r.body === 'string' ? JSON.parse(r.body) : r.body);

describe('createScorer: function steps', () => {
  test('steps run in order, each seeing the earlier results; the result has the §14.1 shape', T, async () => {
    const seen = [];
    const scorer = createScorer({ id: 'length', description: 'How long the answer is' })
      .preprocess(({ run, results }) => {
        seen.push(['preprocess', results]);
        return { words: run.output.split(' ') };
      })
      .analyze(async ({ run, results }) => {
        seen.push(['analyze', results]);
        return { count: results.preprocessStepResult.words.length, asked: run.input };
      })
      .generateScore(({ results }) => {
        seen.push(['generateScore', results]);
        return results.analyzeStepResult.count / 10;
      })
      .generateReason(({ results, score }) => `${results.analyzeStepResult.count} words, score ${score}`);
    assert.ok(scorer instanceof MastraScorer);
    assert.equal(scorer.id, 'length');
    assert.equal(scorer.name, 'length', 'name defaults to the id');
    assert.equal(scorer.description, 'How long the answer is');
    const r = await scorer.run({ input: 'Say five words', output: 'one two three four five', runId: 'r-1' });
    assert.deepEqual(r, {
      runId: 'r-1',
      input: 'Say five words',
      output: 'one two three four five',
      preprocessStepResult: { words: ['one', 'two', 'three', 'four', 'five'] },
      analyzeStepResult: { count: 5, asked: 'Say five words' },
      score: 0.5,
      reason: '5 words, score 0.5',
    });
    assert.deepEqual(seen, [
      ['preprocess', {}],
      ['analyze', { preprocessStepResult: { words: ['one', 'two', 'three', 'four', 'five'] } }],
      ['generateScore', { preprocessStepResult: { words: ['one', 'two', 'three', 'four', 'five'] }, analyzeStepResult: { count: 5, asked: 'Say five words' } }],
    ]);
  });

  test('a run without runId gets a generated one; only generateScore is needed', T, async () => {
    const scorer = createScorer({ id: 'one', name: 'Always one', description: 'd' }).generateScore(() => 1);
    assert.equal(scorer.name, 'Always one');
    const a = await scorer.run({ output: 'x' });
    const b = await scorer.run({ output: 'x' });
    assert.match(a.runId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(a.runId, b.runId);
    assert.deepEqual(Object.keys(a).sort(), ['input', 'output', 'runId', 'score']);
    assert.equal(a.score, 1);
  });

  test('each chain call returns a new scorer: the base stays usable', T, async () => {
    const base = createScorer({ id: 'base', description: 'd' });
    const half = base.generateScore(() => 0.5);
    const full = base.generateScore(() => 1);
    assert.equal((await half.run({ output: '' })).score, 0.5);
    assert.equal((await full.run({ output: '' })).score, 1);
    const err = await errorOf(() => base.run({ output: '' }));
    assert.equal(err.name, 'ScorerError');
  });
});

describe('createScorer: errors', () => {
  test('no generateScore step: ScorerError "Cannot execute pipeline without generateScore() step"', T, async () => {
    const scorer = createScorer({ id: 'nothing', description: 'd' }).analyze(() => 1);
    const err = await errorOf(() => scorer.run({ output: 'x' }));
    assert.ok(err instanceof ScorerError);
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'ScorerError');
    assert.equal(err.message, 'Cannot execute pipeline without generateScore() step');
  });

  test('a step that throws rejects with a ScorerError naming the step, the cause kept', T, async () => {
    const boom = new Error('no data');
    const scorer = createScorer({ id: 'thrower', description: 'd' })
      .analyze(async () => {
        throw boom;
      })
      .generateScore(() => 1);
    const err = await errorOf(() => scorer.run({ output: 'x' }));
    assert.equal(err.name, 'ScorerError');
    assert.equal(err.message, "Scorer 'thrower' failed in its analyze step: no data");
    assert.equal(err.step, 'analyze');
    assert.equal(err.cause, boom);
  });

  test('a score that is not a finite number rejects', T, async () => {
    for (const [bad, shown] of [[NaN, 'NaN'], [Infinity, 'Infinity'], ['0.5', 'string'], [undefined, 'undefined']]) {
      const err = await errorOf(() => createScorer({ id: 's', description: 'd' }).generateScore(() => bad).run({ output: '' }));
      assert.equal(err.name, 'ScorerError');
      assert.equal(err.message, `Scorer 's' failed in its generateScore step: the score must be a finite number, got ${shown}`);
    }
  });

  test('bad configs and steps are TypeErrors at chain time, naming the field', T, () => {
    const cases = [
      [() => createScorer(), /^createScorer\(config\): expected an object/],
      [() => createScorer({ description: 'd' }), /^createScorer\(config\)\.id: expected a non-empty string, got undefined/],
      [() => createScorer({ id: 'x' }), /^createScorer\(config\)\.description: expected a string, got undefined/],
      [() => createScorer({ id: 'x', description: 'd', judge: { instructions: 'i' } }), /^createScorer\(config\)\.judge\.model: expected a model/],
      [() => createScorer({ id: 'x', description: 'd', judge: { model: 'openai/x' } }), /^createScorer\(config\)\.judge\.instructions: expected a string/],
      [() => createScorer({ id: 'x', description: 'd' }).analyze(42), /^createScorer\('x'\)\.analyze\(step\): expected a function or a prompt object/],
      [() => createScorer({ id: 'x', description: 'd' }).analyze({ description: 'p', outputSchema: {} }), /^createScorer\('x'\)\.analyze\(step\)\.createPrompt: expected a function/],
      [
        () => createScorer({ id: 'x', description: 'd' }).analyze({ description: 'p', outputSchema: { type: 'object' }, createPrompt: () => 'p' }),
        /^createScorer\('x'\)\.analyze\(step\): a prompt step needs a judge model/,
      ],
      [
        () => createScorer({ id: 'x', description: 'd', judge: { model: 'openai/x', instructions: 'i' } }).analyze({ description: 'p', createPrompt: () => 'p' }),
        /^createScorer\('x'\)\.analyze\(step\)\.outputSchema: expected a schema/,
      ],
      [() => createScorer({ id: 'x', description: 'd' }).generateScore(() => 1).analyze(() => 1), /^createScorer\('x'\)\.analyze\(\): it comes before generateScore\(\)/],
      [() => createScorer({ id: 'x', description: 'd' }).analyze(() => 1).analyze(() => 1), /^createScorer\('x'\)\.analyze\(\): each step can be given once/],
    ];
    for (const [fn, message] of cases) {
      assert.throws(fn, (e) => e instanceof TypeError && message.test(e.message), String(message));
    }
  });
});

describe('createScorer: judged (prompt) steps', () => {
  test('a prompt step calls the judge with structured output: its schema, the judge instructions, the prompt', T, async () => {
    const id = uid('judge');
    const claimsSchema = { type: 'object', properties: { claims: { type: 'array', items: { type: 'string' } } }, required: ['claims'], additionalProperties: false };
    const scorer = createScorer({ id: 'faithful', description: 'Claims backed by the context', judge: judgeOf(id) })
      .analyze({ description: 'List the claims', outputSchema: claimsSchema, createPrompt: ({ run }) => `List the claims of: ${run.output}` })
      .generateScore({ description: 'Score', createPrompt: ({ results }) => `score=${results.analyzeStepResult.claims.length / 10} for the claims` })
      .generateReason({ description: 'Why', createPrompt: ({ score }) => `Explain the score ${score}` });
    const r = await scorer.run({ input: 'q', output: 'Paris is big', runId: 'r-j' });
    assert.deepEqual(r.analyzeStepResult, { claims: ['List', 'the', 'claims', 'of:', 'Paris', 'is', 'big'] });
    assert.equal(r.score, 0.7);
    assert.equal(r.reason, 'judged: Explain the score 0.7');
    assert.equal(r.analyzePrompt, 'List the claims of: Paris is big');
    assert.equal(r.generateScorePrompt, 'score=0.7 for the claims');
    assert.equal(r.generateReasonPrompt, 'Explain the score 0.7');
    assert.equal(r.preprocessPrompt, undefined);
    const sent = requestsOf(srv.current, id).map(bodyOf);
    assert.equal(sent.length, 3);
    assert.deepEqual(sent[0].response_format.json_schema.schema, claimsSchema);
    assert.deepEqual(sent[1].response_format.json_schema.schema.properties, { score: { type: 'number' } });
    assert.deepEqual(sent[2].response_format.json_schema.schema.properties, { reason: { type: 'string' } });
    for (const b of sent) {
      assert.equal(b.model, 'judge');
      assert.deepEqual(b.messages[0], { role: 'system', content: 'You grade answers.' });
    }
    assert.deepEqual(sent.map((b) => b.messages.at(-1)), [
      { role: 'user', content: 'List the claims of: Paris is big' },
      { role: 'user', content: 'score=0.7 for the claims' },
      { role: 'user', content: 'Explain the score 0.7' },
    ]);
  });

  test('a step judge wins over the scorer judge; calculateScore turns the judged object into the score', T, async () => {
    const [scorerJudge, stepJudge] = [uid('sj'), uid('tj')];
    const scorer = createScorer({ id: 'calc', description: 'd', judge: judgeOf(scorerJudge) }).generateScore({
      description: 'Score',
      judge: judgeOf(stepJudge, { instructions: 'Step judge.' }),
      createPrompt: () => 'score=0.25',
      calculateScore: ({ run, analyzeStepResult }) => analyzeStepResult.score * 2 + run.output.length,
    });
    const r = await scorer.run({ output: 'abc' });
    assert.equal(r.score, 3.5);
    assert.equal(requestsOf(srv.current, scorerJudge).length, 0);
    const [sent] = requestsOf(srv.current, stepJudge).map(bodyOf);
    assert.deepEqual(sent.messages[0], { role: 'system', content: 'Step judge.' });
  });

  test('a judge that answers no valid object fails the step with a ScorerError', T, async () => {
    const id = uid('prose');
    const judge = { model: modelFor(srv.current, 'judge-prose', { headers: { 'x-test-id': id } }), instructions: 'i' };
    const scorer = createScorer({ id: 'bad-judge', description: 'd', judge }).generateScore({ description: 's', createPrompt: () => 'p' });
    const err = await errorOf(() => scorer.run({ output: 'x' }));
    assert.equal(err.name, 'ScorerError');
    assert.match(err.message, /^Scorer 'bad-judge' failed in its generateScore step: /);
    assert.equal(err.step, 'generateScore');
  });
});

// ---------------------------------------------------------------------------------------------
// Scorers on an agent run (SPEC §14.2)

let told = [];
const realWarn = console.warn;
before(() => {
  console.warn = (...args) => told.push(args.map(String).join(' '));
});
after(() => {
  console.warn = realWarn;
});

/** A scorer that records the `run` it got and scores the reply's text length / 100. */
function recordingScorer(id, seen = []) {
  const scorer = createScorer({ id, description: `records ${id}` })
    .generateScore(({ run }) => {
      seen.push(run);
      const text = run.output.flatMap((m) => m.content.parts).filter((p) => p.type === 'text').map((p) => p.text).join('');
      return text.length / 100;
    })
    .generateReason(({ score }) => `length score ${score}`);
  return { scorer, seen };
}

const agentOn = (script, extra = {}) => new Agent({ id: uid('scored'), name: 'Scored agent', instructions: 'Be brief.', model: modelFor(srv.current, script), ...extra });

async function streamed(agent, messages, options) {
  const out = await agent.stream(messages, options);
  const chunks = await collect(out.fullStream);
  return { out, chunks };
}

describe('scorers on an agent run', () => {
  test('an agent scorer gets the §14.2 run after the run; out.scores has its score', T, async () => {
    const { scorer, seen } = recordingScorer('length');
    const agent = agentOn('text:Hello there world', { scorers: { len: { scorer } } });
    const ctx = new Map([['user', 'u-7']]);
    const { out, chunks } = await streamed(agent, 'Greet me', { runId: 'run-scored-1', requestContext: ctx });
    assert.equal(chunks.at(-1).type, 'finish');
    const scores = await out.scores;
    assert.deepEqual(scores, [{ scorerId: 'length', scorerName: 'length', score: 0.17, reason: 'length score 0.17', runId: 'run-scored-1', source: 'LIVE' }]);
    assert.equal(seen.length, 1);
    const [run] = seen;
    assert.deepEqual(Object.keys(run).sort(), ['entity', 'entityType', 'input', 'output', 'requestContext', 'runId', 'source', 'structuredOutput']);
    assert.equal(run.runId, 'run-scored-1');
    assert.deepEqual(run.entity, { id: agent.id, name: 'Scored agent' });
    assert.equal(run.entityType, 'AGENT');
    assert.equal(run.source, 'LIVE');
    assert.equal(run.structuredOutput, false);
    assert.equal(run.requestContext, ctx);
    assert.deepEqual(Object.keys(run.input).sort(), ['inputMessages', 'rememberedMessages', 'systemMessages', 'taggedSystemMessages']);
    assert.deepEqual(run.input.systemMessages, [{ role: 'system', content: 'Be brief.' }]);
    assert.deepEqual(run.input.rememberedMessages, []);
    assert.deepEqual(run.input.taggedSystemMessages, {});
    assert.equal(run.input.inputMessages.length, 1);
    assert.equal(run.input.inputMessages[0].role, 'user');
    assert.deepEqual(run.input.inputMessages[0].content, { format: 2, parts: [{ type: 'text', text: 'Greet me' }] });
    assert.equal(run.output.length, 1);
    assert.equal(run.output[0].role, 'assistant');
    assert.deepEqual(run.output[0].content.parts, [{ type: 'step-start' }, { type: 'text', text: 'Hello there world' }]);
    const warnings = await out.warnings;
    assert.deepEqual(warnings.filter((w) => w.setting === 'scorers'), [], 'scorers is honoured: no unsupported-setting warning');
  });

  test('per-call scorers replace the agent\'s; a run without scorers has scores []', T, async () => {
    const agentOwn = recordingScorer('agent-own');
    const perCall = recordingScorer('per-call');
    const agent = agentOn('text:Hi', { scorers: { own: { scorer: agentOwn.scorer } } });
    const { out } = await streamed(agent, 'x', { scorers: { call: { scorer: perCall.scorer } } });
    assert.deepEqual((await out.scores).map((s) => s.scorerId), ['per-call']);
    assert.equal(agentOwn.seen.length, 0);
    const plain = await streamed(agentOn('text:Hi'), 'x');
    assert.deepEqual(await plain.out.scores, []);
  });

  test('the stream closes without waiting for a scorer; out.scores settles when it is done', T, async () => {
    let release;
    const gate = new Promise((resolve) => (release = resolve));
    let started = false;
    const slow = createScorer({ id: 'slow', description: 'waits' }).generateScore(async () => {
      started = true;
      await gate;
      return 1;
    });
    const agent = agentOn('text:Hi', { scorers: { slow: { scorer: slow } } });
    const out = await agent.stream('x');
    const chunks = await collect(out.fullStream);
    assert.equal(chunks.at(-1).type, 'finish');
    assert.equal(await out.text, 'Hi');
    let settled = false;
    const scores = out.scores.then((s) => {
      settled = true;
      return s;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(started, true, 'the scorer started after the stream closed');
    assert.equal(settled, false, 'out.scores waits for the scorer');
    release();
    assert.deepEqual((await scores).map((s) => s.score), [1]);
  });

  test('memory is written before the scorers run; scores go to saveScore of the memory\'s and the Mastra\'s storage', T, async () => {
    const store = mapStorage();
    const memRows = [];
    store.storage.saveScore = async (row) => {
      memRows.push(row);
    };
    const mastraRows = [];
    const mastraStorage = { saveScore: (row) => mastraRows.push(row) };
    const storedWhenScored = [];
    const scorer = createScorer({ id: 'sees-memory', description: 'd' })
      .analyze(() => [...store.messages.values()].map((m) => m.role))
      .generateScore(({ results }) => {
        storedWhenScored.push(results.analyzeStepResult);
        return 0.9;
      });
    const agent = agentOn('text:Stored reply', { memory: new Memory({ storage: store.storage }), scorers: { mem: { scorer } } });
    new Mastra({ agents: { agent }, storage: mastraStorage });
    const thread = uid('th');
    const requestContext = new Map([['apiToken', 'secret-token-1']]);
    const first = await streamed(agent, 'first', { memory: { thread, resource: 'u1' }, runId: 'mem-run-1', requestContext });
    await first.out.scores;
    const { out } = await streamed(agent, 'second', { memory: { thread, resource: 'u1' }, runId: 'mem-run-2', requestContext });
    const scores = await out.scores;
    assert.deepEqual(scores.map((s) => s.score), [0.9]);
    assert.deepEqual(storedWhenScored, [['user', 'assistant'], ['user', 'assistant', 'user', 'assistant']]);
    assert.equal(memRows.length, 2);
    assert.equal(mastraRows.length, 2);
    assert.deepEqual(mastraRows, memRows);
    const row = memRows[1];
    assert.equal(row.scorerId, 'sees-memory');
    assert.equal(row.entityId, agent.id);
    assert.equal(row.entityType, 'AGENT');
    assert.deepEqual(row.scorer, { id: 'sees-memory', name: 'sees-memory', description: 'd' });
    assert.equal(row.source, 'LIVE');
    assert.equal(row.runId, 'mem-run-2');
    assert.equal(row.score, 0.9);
    assert.deepEqual(row.analyzeStepResult, ['user', 'assistant', 'user', 'assistant']);
    assert.equal(row.threadId, thread);
    assert.equal(row.resourceId, 'u1');
    assert.deepEqual(row.input.rememberedMessages.map((m) => m.role), ['user', 'assistant']);
    assert.deepEqual(row.input.rememberedMessages.map((m) => m.threadId), [thread, thread]);
    assert.equal(row.output[0].threadId, thread);
    assert.equal(JSON.stringify(row).includes('test-key'), false, 'no API key in a score row');
    assert.equal('requestContext' in row, false, 'the request context (which may hold secrets) stays out of the row');
    assert.equal(JSON.stringify(memRows).includes('secret-token-1'), false);
  });

  test('scorers named by id resolve through new Mastra({ scorers }); an unknown id warns and is skipped', T, async () => {
    told = [];
    const registered = recordingScorer('quality-v2');
    const agent = agentOn('text:Fine', {
      scorers: { byKey: { scorer: 'quality' }, byId: { scorer: 'quality-v2' }, missing: { scorer: 'no-such-scorer' } },
    });
    const mastra = new Mastra({ agents: { agent }, scorers: { quality: registered.scorer } });
    assert.ok(mastra);
    const { out } = await streamed(agent, 'x');
    assert.deepEqual((await out.scores).map((s) => s.scorerId), ['quality-v2', 'quality-v2']);
    assert.deepEqual(told.filter((l) => l.includes('no-such-scorer')).length, 1, JSON.stringify(told));
    assert.match(told.find((l) => l.includes('no-such-scorer')), /scorers\.missing/);
  });

  test('mastra.getScorer finds a registered scorer by key or id; an unknown one is an error naming the registered', T, () => {
    const { scorer } = recordingScorer('tone-v1');
    const mastra = new Mastra({ scorers: { tone: scorer } });
    assert.equal(mastra.getScorer('tone'), scorer);
    assert.equal(mastra.getScorer('tone-v1'), scorer);
    assert.throws(() => mastra.getScorer('nope'), (e) => e instanceof TypeError && e.message === "mastra.getScorer(key): no scorer 'nope'; registered scorers: tone");
  });

  test('a per-call scorer object runs even when registered nowhere', T, async () => {
    const { scorer } = recordingScorer('unregistered');
    const agent = agentOn('text:Fine');
    new Mastra({ agents: { agent }, scorers: {} });
    const { out } = await streamed(agent, 'x', { scorers: { u: { scorer } } });
    assert.deepEqual((await out.scores).map((s) => s.scorerId), ['unregistered']);
  });

  test('a scorer that fails is logged and left out; the others still score', T, async () => {
    told = [];
    const bad = createScorer({ id: 'bad', description: 'd' }).generateScore(() => {
      throw new Error('judge unavailable');
    });
    const good = createScorer({ id: 'good', description: 'd' }).generateScore(() => 1);
    const { out } = await streamed(agentOn('text:Fine'), 'x', { scorers: { bad: { scorer: bad }, good: { scorer: good } } });
    assert.deepEqual((await out.scores).map((s) => s.scorerId), ['good']);
    assert.ok(told.some((l) => l.includes("scorer 'bad' failed") && l.includes('judge unavailable')), JSON.stringify(told));
  });

  test('a judged scorer on a run: the judge is sent the run\'s reply', T, async () => {
    const id = uid('live-judge');
    const scorer = createScorer({ id: 'relevance', description: 'd', judge: judgeOf(id) }).generateScore({
      description: 'score it',
      createPrompt: ({ run }) => `score=0.8 reply: ${run.output[0].content.parts.find((p) => p.type === 'text').text}`,
    });
    const { out } = await streamed(agentOn('text:Paris is the capital'), 'Capital of France?', { scorers: { r: { scorer } } });
    assert.deepEqual((await out.scores).map((s) => s.score), [0.8]);
    const [sent] = requestsOf(srv.current, id).map(bodyOf);
    assert.equal(sent.messages.at(-1).content, 'score=0.8 reply: Paris is the capital');
  });
});

describe('sampling', () => {
  /** The reference's rule: the first 48 bits of SHA-256(id) / 2^48 < rate. */
  const picked = (id, rate) => parseInt(createHash('sha256').update(id).digest('hex').slice(0, 12), 16) / 2 ** 48 < rate;

  test('ratio scores exactly the runs whose id hashes below the rate; every scorer at one rate picks the same runs', T, async () => {
    const a = recordingScorer('sample-a');
    const b = recordingScorer('sample-b');
    const agent = agentOn('text:ok', {
      scorers: { a: { scorer: a.scorer, sampling: { type: 'ratio', rate: 0.5 } }, b: { scorer: b.scorer, sampling: { type: 'ratio', rate: 0.5 } } },
    });
    const ids = Array.from({ length: 12 }, (_, i) => `sampled-run-${i}`);
    const expected = ids.filter((id) => picked(id, 0.5));
    assert.ok(expected.length > 0 && expected.length < ids.length, `a useful mix: ${expected}`);
    for (const runId of ids) {
      const { out } = await streamed(agent, 'x', { runId });
      const scores = await out.scores;
      assert.deepEqual(scores.map((s) => s.scorerId), picked(runId, 0.5) ? ['sample-a', 'sample-b'] : [], runId);
    }
    assert.deepEqual(a.seen.map((r) => r.runId), expected);
    assert.deepEqual(b.seen.map((r) => r.runId), expected);
  });

  test('rate 0 never scores, rate 1 and type none always do; an unknown type warns and does not run', T, async () => {
    told = [];
    const s = (id) => createScorer({ id, description: 'd' }).generateScore(() => 1);
    const { out } = await streamed(agentOn('text:ok'), 'x', {
      scorers: {
        never: { scorer: s('never'), sampling: { type: 'ratio', rate: 0 } },
        always: { scorer: s('always'), sampling: { type: 'ratio', rate: 1 } },
        none: { scorer: s('none'), sampling: { type: 'none' } },
        odd: { scorer: s('odd'), sampling: { type: 'sometimes' } },
      },
    });
    assert.deepEqual((await out.scores).map((x) => x.scorerId), ['always', 'none']);
    assert.ok(told.some((l) => l.includes("'odd'") && l.includes("'sometimes'")), JSON.stringify(told));
  });
});

describe('runs that are not scored', () => {
  const counting = () => {
    const calls = [];
    return { calls, scorers: { c: { scorer: createScorer({ id: 'counting', description: 'd' }).generateScore(({ run }) => calls.push(run.runId)) } } };
  };

  test('a failed run: no scorer runs, out.scores is []', T, async () => {
    const { calls, scorers } = counting();
    const out = await agentOn('in-stream-error').stream('x', { scorers });
    const chunks = await collect(out.fullStream);
    assert.equal(chunks.at(-1).type, 'error');
    await rejectionOf(out.text);
    assert.deepEqual(await out.scores, []);
    assert.deepEqual(calls, []);
  });

  test('an aborted run: no scorer runs, out.scores is []', T, async () => {
    const { calls, scorers } = counting();
    const ctrl = new AbortController();
    const out = await agentOn('stall').stream('x', { scorers, abortSignal: ctrl.signal });
    const chunks = [];
    for await (const c of out.fullStream) {
      chunks.push(c);
      if (c.type === 'text-delta') ctrl.abort();
    }
    assert.equal(chunks.at(-1).type, 'abort');
    assert.deepEqual(await out.scores, []);
    assert.deepEqual(calls, []);
  });

  test('a run a tripwire ended: no scorer runs, out.scores is []', T, async () => {
    const { calls, scorers } = counting();
    const block = { id: 'block', processInput: ({ abort }) => abort('not allowed') };
    const { out } = await streamed(agentOn('text:never'), 'x', { scorers, inputProcessors: [block] });
    assert.equal(out.tripwire?.reason, 'not allowed');
    assert.deepEqual(await out.scores, []);
    assert.deepEqual(calls, []);
  });
});

describe('returnScorerData and option errors', () => {
  test('returnScorerData puts what a scorer gets into getFullOutput(); absent otherwise', T, async () => {
    const { out } = await streamed(agentOn('text:Data here'), 'Show data', { returnScorerData: true });
    const full = await out.getFullOutput();
    assert.deepEqual(Object.keys(full.scoringData).sort(), ['input', 'output']);
    assert.deepEqual(full.scoringData.input.systemMessages, [{ role: 'system', content: 'Be brief.' }]);
    assert.deepEqual(full.scoringData.input.inputMessages[0].content.parts, [{ type: 'text', text: 'Show data' }]);
    assert.deepEqual(full.scoringData.output[0].content.parts.at(-1), { type: 'text', text: 'Data here' });
    assert.deepEqual(await out.scores, []);
    const generated = await agentOn('text:Data here').generate('Show data', { returnScorerData: true });
    assert.deepEqual(generated.scoringData.output[0].content.parts.at(-1), { type: 'text', text: 'Data here' });
    const plain = await agentOn('text:x').generate('y');
    assert.equal('scoringData' in plain, false);
  });

  test('bad scorers options are TypeErrors naming the field', T, async () => {
    const s = createScorer({ id: 's', description: 'd' }).generateScore(() => 1);
    const agent = agentOn('text:x');
    const cases = [
      [{ scorers: [s] }, /^options\.scorers: expected a record/],
      [{ scorers: { a: s } }, /^options\.scorers\.a\.scorer: expected a scorer/],
      [{ scorers: { a: { scorer: 42 } } }, /^options\.scorers\.a\.scorer: expected a scorer .*got a number/],
      [{ scorers: { a: { scorer: s, sampling: { type: 'ratio', rate: 2 } } } }, /^options\.scorers\.a\.sampling\.rate: expected a number from 0 to 1/],
      [{ scorers: { a: { scorer: s, sampling: { type: 'ratio' } } } }, /^options\.scorers\.a\.sampling\.rate: expected a number from 0 to 1, got undefined/],
      [{ scorers: { a: { scorer: s, sampling: 'all' } } }, /^options\.scorers\.a\.sampling: expected/],
      [{ returnScorerData: 'yes' }, /^options\.returnScorerData: expected a boolean, got a string/],
    ];
    for (const [options, message] of cases) {
      const err = await rejectionOf(agent.stream('x', options));
      assert.ok(err instanceof TypeError && message.test(err.message), `${message}: ${err.message}`);
    }
    assert.throws(() => agentOn('text:x', { scorers: { a: { scorer: '' } } }), (e) => e instanceof TypeError && /^config\.scorers\.a\.scorer: /.test(e.message));
    assert.throws(() => new Mastra({ scorers: { q: { id: 'q' } } }), (e) => e instanceof TypeError && /^new Mastra\(config\)\.scorers\.q: expected a scorer/.test(e.message));
  });
});

noUnhandledRejections();
