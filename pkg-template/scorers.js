// Scorers (SPEC §14), in JavaScript: a scorer is a chain of the user's functions and judge-model
// calls made through this package's own `Agent` (structured output), so none of it needs to be
// in the wasm. `runAgentScorers` is what the wasm calls after a run that ended well (each entry
// registers it with `connectScorers()` once the wasm is initialised): it samples, runs and
// stores the agent's scorers, and its promise is `out.scores`.

// @ts-ignore: `__setScoreRunner` is a hidden export (not in wasm_agent.d.ts)
import { Agent, __setScoreRunner } from './wasm_agent.js';

/** Registers `runAgentScorers` with the wasm (the entries call it after initialising it). */
export function connectScorers() {
  __setScoreRunner(runAgentScorers);
}

const STEPS = ['preprocess', 'analyze', 'generateScore', 'generateReason'];
/** The `results` key each earlier step's value goes under. */
const RESULT_KEY = { preprocess: 'preprocessStepResult', analyze: 'analyzeStepResult' };
const PROMPT_KEY = {
  preprocess: 'preprocessPrompt',
  analyze: 'analyzePrompt',
  generateScore: 'generateScorePrompt',
  generateReason: 'generateReasonPrompt',
};
const SCORE_SCHEMA = { type: 'object', properties: { score: { type: 'number' } }, required: ['score'], additionalProperties: false };
const REASON_SCHEMA = { type: 'object', properties: { reason: { type: 'string' } }, required: ['reason'], additionalProperties: false };

/** A scorer's pipeline failed: no `generateScore` step, a step that threw, or a score that is no finite number. */
export class ScorerError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'ScorerError';
    if (options?.scorerId !== undefined) this.scorerId = options.scorerId;
    if (options?.step !== undefined) this.step = options.step;
  }
}

/** A v4 UUID (crypto.randomUUID is missing in pages served over plain http). */
function newId() {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const kind = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

function checkJudge(judge, field) {
  if (judge === undefined) return undefined;
  if (judge === null || typeof judge !== 'object') throw new TypeError(`${field}: expected { model, instructions }, got ${kind(judge)}`);
  if (judge.model === undefined || judge.model === null) throw new TypeError(`${field}.model: expected a model (an id string, a model config or an AI SDK model), got ${kind(judge.model)}`);
  if (typeof judge.instructions !== 'string') throw new TypeError(`${field}.instructions: expected a string, got ${kind(judge.instructions)}`);
  return judge;
}

/** A step as given: a function, or a prompt object checked for what calling the judge needs. */
function checkStep(step, name, scorerJudge, id) {
  const field = `createScorer('${id}').${name}(step)`;
  if (typeof step === 'function') return { fn: step };
  if (step === null || typeof step !== 'object') throw new TypeError(`${field}: expected a function or a prompt object { description, outputSchema, createPrompt, judge? }, got ${kind(step)}`);
  if (typeof step.createPrompt !== 'function') throw new TypeError(`${field}.createPrompt: expected a function, got ${kind(step.createPrompt)}`);
  if (step.description !== undefined && typeof step.description !== 'string') throw new TypeError(`${field}.description: expected a string, got ${kind(step.description)}`);
  const judge = checkJudge(step.judge, `${field}.judge`) ?? scorerJudge;
  if (!judge) throw new TypeError(`${field}: a prompt step needs a judge model: pass judge: { model, instructions } to the step or to createScorer()`);
  const fixed = name === 'generateScore' ? SCORE_SCHEMA : name === 'generateReason' ? REASON_SCHEMA : undefined;
  const outputSchema = step.outputSchema ?? fixed;
  if (outputSchema === undefined || outputSchema === null || typeof outputSchema !== 'object') {
    throw new TypeError(`${field}.outputSchema: expected a schema (JSON Schema or a zod schema), got ${kind(step.outputSchema)}`);
  }
  if (step.calculateScore !== undefined && (name !== 'generateScore' || typeof step.calculateScore !== 'function')) {
    throw new TypeError(`${field}.calculateScore: ${name === 'generateScore' ? `expected a function, got ${kind(step.calculateScore)}` : 'only a generateScore step may have one'}`);
  }
  return { prompt: step, judge, outputSchema, calculateScore: step.calculateScore };
}

/** The judge agent of a judge config, made once per scorer and judge. */
function judgeAgent(cache, judge, id) {
  let agent = cache.get(judge);
  if (!agent) {
    agent = new Agent({ id: `${id}-judge`, name: `${id} judge`, model: judge.model, instructions: judge.instructions });
    cache.set(judge, agent);
  }
  return agent;
}

/** Runs a `MastraScorer` with its steps traced as child spans of `span` (set by the class). */
let runTraced;

/** Calls `f` on a span handle; tracing never fails a scorer (a value that is not plain data, say). */
function traced(f) {
  try {
    return f();
  } catch (err) {
    warn(`a scorer span could not be recorded: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}

/** A scorer: `run()` executes its steps in order; each chain method returns a new scorer. */
export class MastraScorer {
  #steps;
  #judges = new Map();

  constructor(config, steps = {}) {
    this.id = config.id;
    this.name = config.name;
    this.description = config.description;
    if (config.judge !== undefined) this.judge = config.judge;
    this.#steps = steps;
  }

  #then(name, step) {
    const at = STEPS.indexOf(name);
    const later = STEPS.slice(at).find((s) => this.#steps[s]);
    if (later) {
      const why = later === name ? 'each step can be given once' : `it comes before ${later}()`;
      throw new TypeError(`createScorer('${this.id}').${name}(): ${why} (the order is preprocess, analyze, generateScore, generateReason)`);
    }
    const checked = checkStep(step, name, this.judge, this.id);
    return new MastraScorer(this, { ...this.#steps, [name]: checked });
  }

  /** Prepares the run's data; its value is `results.preprocessStepResult` for the later steps. */
  preprocess(step) {
    return this.#then('preprocess', step);
  }

  /** Analyses the run; its value is `results.analyzeStepResult`. */
  analyze(step) {
    return this.#then('analyze', step);
  }

  /** Computes the score (required): a finite number. */
  generateScore(step) {
    return this.#then('generateScore', step);
  }

  /** Explains the score: gets `score` besides `run` and `results`. */
  generateReason(step) {
    return this.#then('generateReason', step);
  }

  static {
    runTraced = (scorer, input, span) => scorer.#pipeline(input, span);
  }

  /** Scores one run: `{ input?, output, runId?, groundTruth?, requestContext? }`. */
  run(input) {
    return this.#pipeline(input, undefined);
  }

  /** The steps in order; with `span` (a `scorer_run` span handle) each step is a `scorer_step` span. */
  async #pipeline(input, span) {
    if (input === null || typeof input !== 'object') throw new TypeError(`scorer.run(input): expected an object like { input, output }, got ${kind(input)}`);
    if (!this.#steps.generateScore) {
      throw new ScorerError('Cannot execute pipeline without generateScore() step', { scorerId: this.id });
    }
    const run = { ...input, runId: typeof input.runId === 'string' && input.runId !== '' ? input.runId : newId() };
    const results = {};
    const out = { runId: run.runId, input: run.input, output: run.output };
    let score;
    for (const name of STEPS) {
      const step = this.#steps[name];
      if (!step) continue;
      const ctx = { run, results: { ...results } };
      if (name === 'generateReason') ctx.score = score;
      let value;
      const stepSpan = span && traced(() => span.createChildSpan({ type: 'scorer_step', name: `scorer step: '${name}'`, input: ctx.results }));
      try {
        value = await this.#runStep(name, step, ctx, out);
        if (stepSpan) traced(() => stepSpan.end(value === undefined ? {} : { output: value }));
      } catch (err) {
        if (stepSpan) traced(() => stepSpan.error({ error: err }));
        const message = err instanceof Error ? err.message : String(err);
        throw new ScorerError(`Scorer '${this.id}' failed in its ${name} step: ${message}`, { cause: err, scorerId: this.id, step: name });
      }
      if (name === 'generateScore') {
        if (typeof value !== 'number' || !Number.isFinite(value)) {
          const got = typeof value === 'number' ? String(value) : kind(value);
          throw new ScorerError(`Scorer '${this.id}' failed in its generateScore step: the score must be a finite number, got ${got}`, { scorerId: this.id, step: name });
        }
        score = value;
        out.score = value;
      } else if (name === 'generateReason') {
        if (value !== undefined && value !== null) out.reason = typeof value === 'string' ? value : JSON.stringify(value);
      } else {
        results[RESULT_KEY[name]] = value;
        out[RESULT_KEY[name]] = value;
      }
    }
    return out;
  }

  async #runStep(name, step, ctx, out) {
    if (step.fn) return step.fn(ctx);
    const prompt = await step.prompt.createPrompt(ctx);
    if (typeof prompt !== 'string') throw new TypeError(`createPrompt() returned ${kind(prompt)}, expected a string`);
    out[PROMPT_KEY[name]] = prompt;
    const agent = judgeAgent(this.#judges, step.judge, this.id);
    const reply = await agent.generate(prompt, { structuredOutput: { schema: step.outputSchema } });
    const object = reply.object;
    if (name === 'generateScore') {
      if (step.calculateScore) return step.calculateScore({ run: ctx.run, results: ctx.results, analyzeStepResult: object });
      return object?.score;
    }
    if (name === 'generateReason' && step.outputSchema === REASON_SCHEMA) return object?.reason;
    return object;
  }
}

/** A scorer from `{ id, name?, description, judge? }`, to chain its steps onto. */
export function createScorer(config) {
  if (config === null || typeof config !== 'object') throw new TypeError(`createScorer(config): expected an object like { id, description }, got ${kind(config)}`);
  if (typeof config.id !== 'string' || config.id === '') throw new TypeError(`createScorer(config).id: expected a non-empty string, got ${kind(config.id)}`);
  if (typeof config.description !== 'string') throw new TypeError(`createScorer(config).description: expected a string, got ${kind(config.description)}`);
  if (config.name !== undefined && typeof config.name !== 'string') throw new TypeError(`createScorer(config).name: expected a string, got ${kind(config.name)}`);
  const judge = checkJudge(config.judge, 'createScorer(config).judge');
  return new MastraScorer({ id: config.id, name: config.name ?? config.id, description: config.description, judge });
}

// ---------------------------------------------------------------------------------------------
// Scorers on an agent run (SPEC §14.2)

const warn = (line) => globalThis.console?.warn?.(`wasm-agent: ${line}`);

/** `hash(key)` of the sampling rule: the first 48 bits of SHA-256(key) / 2^48, in [0, 1). */
export async function sampleHash(key) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key)));
  let n = 0;
  for (let i = 0; i < 6; i += 1) n = n * 256 + digest[i];
  return n / 2 ** 48;
}

/** Whether the run is scored under `sampling` (undefined when its type is unknown). */
async function sampled(sampling, key) {
  if (sampling === undefined || sampling === null || sampling.type === 'none') return true;
  if (sampling.type === 'ratio') return (await sampleHash(key)) < sampling.rate;
  return undefined;
}

/** The scorer an entry names: its own object, or a registered one by id. */
function resolve(entry, registered) {
  const s = entry.scorer;
  if (typeof s !== 'string') return s;
  if (registered && typeof registered === 'object') {
    if (registered[s] && typeof registered[s].run === 'function') return registered[s];
    for (const r of Object.values(registered)) if (r && r.id === s && typeof r.run === 'function') return r;
  }
  return undefined;
}

/** The storage row of one score. The request context stays out: it may hold the caller's
 * secrets, and only the keys a user lists may leave a run (SPEC §16.6). */
function scoreRow(result, scorer, run, traceId, spanId) {
  const row = {
    scorerId: scorer.id,
    entityId: run.entity.id,
    entityType: run.entityType,
    entity: run.entity,
    scorer: { id: scorer.id, name: scorer.name ?? scorer.id, description: scorer.description ?? '' },
    source: run.source,
    runId: run.runId,
    input: run.input,
    output: run.output,
    score: result.score,
    structuredOutput: run.structuredOutput,
  };
  for (const k of ['reason', 'preprocessStepResult', 'analyzeStepResult', 'preprocessPrompt', 'analyzePrompt', 'generateScorePrompt', 'generateReasonPrompt']) {
    if (result[k] !== undefined) row[k] = result[k];
  }
  if (traceId !== undefined) row.traceId = traceId;
  if (spanId !== undefined) row.spanId = spanId;
  if (run.threadId !== undefined) row.threadId = run.threadId;
  if (run.resourceId !== undefined) row.resourceId = run.resourceId;
  return row;
}

/**
 * Runs the sampled scorers of a finished run (called by the wasm, never by users): `scorers` the
 * record `name → { scorer, sampling? }` that applies, `registered` the Mastra's scorers, `storage`
 * the storage objects whose `saveScore` is called. Resolves with the scores; never rejects.
 */
export async function runAgentScorers(args) {
  try {
    return await scoreRun(args);
  } catch (err) {
    warn(`the run's scorers could not run: ${err instanceof Error ? err.message : String(err)}`);
    return [];
  }
}

/**
 * Runs one scorer; with `tracing` (the run is traced) in a `scorer_run` span of its own trace,
 * whose id the score event's `scoreTraceId` is.
 */
async function runScorer(scorer, scorerName, run, tracing) {
  const span = tracing && traced(() => tracing.start(scorer.id, scorerName, { input: run.input, output: run.output }));
  try {
    const result = await (span && scorer instanceof MastraScorer ? runTraced(scorer, run, span) : scorer.run(run));
    if (span) traced(() => span.end({ output: { score: result?.score, reason: result?.reason } }));
    return { result, scoreTraceId: span?.traceId };
  } catch (err) {
    if (span) traced(() => span.error({ error: err }));
    throw err;
  }
}

async function scoreRun({ run, scorers, registered, storages, traceId, spanId, tracing }) {
  const jobs = [];
  for (const [name, entry] of Object.entries(scorers ?? {})) {
    const scorer = resolve(entry, registered);
    if (!scorer) {
      warn(`scorer '${entry.scorer}' (scorers.${name}) is not registered with new Mastra({ scorers }); it was skipped`);
      continue;
    }
    jobs.push(
      (async () => {
        const take = await sampled(entry.sampling, traceId ?? run.runId);
        if (take === undefined) {
          warn(`scorer '${scorer.id}' (scorers.${name}) has sampling type '${entry.sampling.type}', which is neither 'none' nor 'ratio'; it was not run`);
          return undefined;
        }
        if (!take) return undefined;
        const scorerName = scorer.name ?? scorer.id;
        const { result, scoreTraceId } = await runScorer(scorer, scorerName, run, tracing);
        const score = { scorerId: scorer.id, scorerName, score: result.score, runId: run.runId, source: 'LIVE' };
        if (result.reason !== undefined) score.reason = result.reason;
        if (traceId !== undefined) score.traceId = traceId;
        if (spanId !== undefined) score.spanId = spanId;
        if (tracing) {
          const event = { scoreId: newId(), timestamp: Date.now(), scorerId: scorer.id, scorerName, scoreSource: 'live', score: result.score, targetEntityType: 'agent' };
          if (result.reason !== undefined) event.reason = result.reason;
          if (scoreTraceId !== undefined) event.scoreTraceId = scoreTraceId;
          traced(() => tracing.score(event));
        }
        for (const storage of storages ?? []) {
          try {
            await storage.saveScore(scoreRow(result, scorer, run, traceId, spanId));
          } catch (err) {
            warn(`storage.saveScore failed for scorer '${scorer.id}': ${err instanceof Error ? err.message : String(err)}`);
          }
        }
        return score;
      })().catch((err) => {
        warn(`scorer '${scorer.id}' failed: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }),
    );
  }
  const done = await Promise.all(jobs);
  return done.filter((s) => s !== undefined);
}
