// The tracing benchmark (`node bench/run.mjs --tracing`): per-chunk cost of a traced run against
// an untraced one on the same `deltas:N` reply read through fullStream, each run in a fresh
// `node bench/worker.mjs <mode> <url> <N>` (one warm-up, one measured): `untraced` without
// `observability`, `traced` with an in-process exporter. Modes alternate; the table shows
// medians side by side. The goal of issue 16 is printed, not asserted: traced ≤ 1.05× untraced.

import os from 'node:os';
import { median, table, runAlternating } from './report.mjs';

const MODES = ['untraced', 'traced'];
const GOAL = 1.05;
const fixed = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '-');

/** Runs the benchmark; returns true when a run failed. */
export async function tracingBenchmark({ sizes, runs, json, runChild, startModelServer, writeReport }) {
  console.log(`tracing benchmark: N = ${sizes.join(', ')} deltas, ${runs} run(s) per mode, node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown'}`);
  const { results, failures } = await runAlternating({ modes: MODES, sizes, runs, runChild, startModelServer });
  const rows = [['N', 'untraced µs/chunk', 'traced µs/chunk', 'traced × untraced', 'untraced CPU µs/chunk', 'traced CPU µs/chunk', 'CPU ×']];
  const goals = [];
  for (const n of sizes) {
    const of = (mode, pick) => (median(results.filter((x) => x.n === n && x.mode === mode).map(pick)) * 1000) / n;
    const [u, t] = MODES.map((m) => of(m, (x) => x.totalMs));
    const [uc, tc] = MODES.map((m) => of(m, (x) => x.cpuMs));
    rows.push([n, fixed(u), fixed(t), fixed(t / u), fixed(uc), fixed(tc), fixed(tc / uc)]);
    goals.push({ n, ratio: t / u, cpuRatio: tc / uc, met: t / u <= GOAL });
  }
  console.log();
  console.log(table(rows, 1));
  console.log(`(medians of ${runs} run(s); each a fresh process after one warm-up run; CPU: the reading process's user + system time;`);
  console.log(` goal: traced ≤ ${GOAL}× untraced per chunk)`);
  for (const g of goals) console.log(`  N=${g.n}: traced ${fixed(g.ratio)}× untraced (CPU ${fixed(g.cpuRatio)}×) — ${g.met ? 'met' : 'not met'}`);
  writeReport(json, { date: new Date().toISOString(), node: process.version, cpu: os.cpus()[0]?.model, sizes, runs, goal: GOAL, goals, failures, results });
  if (failures.length) console.error(`\nBENCHMARK FAILED: ${failures.length} failed run(s)`);
  return failures.length > 0;
}
