// Workflow engine overhead per step (SPEC §20.7: ≤ 50 µs in Node, snapshots in memory):
// `node bench/workflows.mjs [--runs 30] [--steps 100]` after `./x build`.
//
// - baseline: the same 100 trivial async step functions called in a plain loop, each getting a
//   fresh context object and its input, the output passed on (what any engine must do at least);
// - start: `run.start()` of a committed 100-step `.then` chain of the same functions;
// - stream: `run.stream()` read to its end through `fullStream` (every event reaches JavaScript);
// - storage: `run.start()` with a storage object (a DurableObjectStore over a Map, as in a
//   Durable Object): a snapshot after every step, each a whole `WorkflowRunState` (§20.5), as the
//   reference writes them; not counted against the target, which is for snapshots in memory.
// - reference-start, reference-stream: the same two over the reference framework (@mastra/core,
//   pinned in bench/reference/, installed there by `./x bench-workflows`; the rows are left out,
//   with a line saying so, when it is not installed), the same 100 functions, no schemas.
// Per-step figures are (median run time) / steps; the overhead is the difference to the baseline.
// Each run checks the result (and a stream its 202 events), so a wrong run fails the benchmark.

import { createStep, createWorkflow, Mastra } from '../pkg/index.node.js';
import { DurableObjectStore } from '../pkg/durable-object-store.js';
import { fakeDurableStorage } from '../tests/js/durable-storage-helpers.mjs';
import { createRequire } from 'node:module';
import { median, table } from './report.mjs';

const arg = (name, dflt) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : dflt;
};
const RUNS = arg('runs', 30);
const STEPS = arg('steps', 100);

const fns = Array.from({ length: STEPS }, () => async ({ inputData }) => ({ n: inputData.n + 1 }));
const chain = (id) => {
  let w = createWorkflow({ id });
  fns.forEach((execute, i) => (w = w.then(createStep({ id: `s${i}`, execute }))));
  return w.commit();
};
const wf = chain('bench-chain');
// Its own workflow (a Mastra gives its workflows its storage) and a fresh Map per run, so the
// storage does not grow over the runs.
const stored = () => new Mastra({ workflows: { w: chain('bench-stored') }, storage: new DurableObjectStore(fakeDurableStorage()) }).getWorkflow('w');

function check(n) {
  if (n !== STEPS) throw new Error(`wrong result: ${n}, expected ${STEPS}`);
}

// The reference's workflows, if bench/reference/ has them installed.
let reference = null;
try {
  const where = createRequire(new URL('./reference/package.json', import.meta.url)).resolve('@mastra/core/workflows');
  reference = await import(where);
} catch {
  process.stdout.write('(reference rows left out: `./x bench-workflows` installs @mastra/core into bench/reference/)\n');
}
const referenceChain = (id) => {
  let w = reference.createWorkflow({ id });
  fns.forEach((execute, i) => (w = w.then(reference.createStep({ id: `s${i}`, execute }))));
  return [w.commit()];
};
const [refWf] = reference ? referenceChain('bench-reference') : [null];

async function readStream(out) {
  let events = 0;
  for await (const _ of out.fullStream) events++;
  if (events !== 2 * STEPS + 2) throw new Error(`wrong event count ${events}`);
  check((await out.result).result.n);
}

const modes = {
  async baseline() {
    let input = { n: 0 };
    for (const f of fns) input = await f({ inputData: input, state: {}, runId: 'r', retryCount: 0 });
    check(input.n);
  },
  async start() {
    const r = await (await wf.createRun()).start({ inputData: { n: 0 } });
    check(r.result.n);
  },
  async storage() {
    const r = await (await stored().createRun()).start({ inputData: { n: 0 } });
    check(r.result.n);
  },
  async stream() {
    await readStream((await wf.createRun()).stream({ inputData: { n: 0 } }));
  },
};
if (reference) {
  modes['reference-start'] = async () => {
    const r = await (await refWf.createRun()).start({ inputData: { n: 0 } });
    check(r.result.n);
  };
  modes['reference-stream'] = async () => {
    await readStream((await refWf.createRun()).stream({ inputData: { n: 0 } }));
  };
}

const times = Object.fromEntries(Object.keys(modes).map((m) => [m, []]));
for (let i = 0; i < 5; i++) for (const f of Object.values(modes)) await f(); // warm-up
for (let i = 0; i < RUNS; i++) {
  for (const [name, f] of Object.entries(modes)) {
    const t0 = performance.now();
    await f();
    times[name].push(performance.now() - t0);
  }
}
const perStep = (m) => (median(times[m]) * 1000) / STEPS;
const base = perStep('baseline');
const rows = [['mode', 'median run ms', 'µs / step', 'overhead µs / step']];
for (const m of Object.keys(modes)) {
  rows.push([m, median(times[m]).toFixed(2), perStep(m).toFixed(1), m === 'baseline' ? '—' : (perStep(m) - base).toFixed(1)]);
}
process.stdout.write(`${STEPS}-step .then chain, ${RUNS} runs each (alternated), Node ${process.version}\n${table(rows)}\n`);
process.stdout.write(`target: ≤ 50 µs engine overhead per step (SPEC §20.7)\n`);
