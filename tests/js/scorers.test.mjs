// Scorers (SPEC §14): createScorer's pipeline with function and judged steps, its errors, and
// scorers on an agent run (sampling, out.scores, saveScore rows, memory written first, skipped
// runs), against the local model server (the judge scripts are tests/server/judge-scripts.mjs).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Agent, T, errorOf, modelFor, noUnhandledRejections, requestsOf, uid, useModelServer } from './helpers.mjs';
import { createScorer, MastraScorer, ScorerError, Mastra, Memory, InMemoryStore } from '../../pkg/index.node.js';

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
