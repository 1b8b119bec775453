// The structured-output benchmark (`node bench/run.mjs --structured`): per-chunk cost of a
// structured reply against a plain one on the same deltas. For each N of `--sizes`, both modes
// read `json-deltas:N` (N deltas of `{"items":[{"n":0,"w":"w0"},…]}`, two per element) through
// fullStream, each run in a fresh `node bench/worker.mjs <mode> <url> <N>` (one warm-up, one
// measured): `plain-json` without structuredOutput, `structured` with a JSON Schema, counting
// its `object` chunks and awaiting `object`. Modes alternate; the table shows medians.
// The goal of issue 12 is printed, not asserted: structured ≤ 1.3× plain per chunk.

import os from 'node:os';
import { median, table, runAlternating } from './report.mjs';

const MODES = ['plain-json', 'structured'];
const GOAL = 1.3;


const fixed = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '-');


/** Runs the benchmark; returns true when a run failed. */
export async function structuredBenchmark({ sizes, runs, json, runChild, startModelServer, writeReport }) {
  console.log(`structured-output benchmark: N = ${sizes.join(', ')} deltas, ${runs} run(s) per mode, node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown'}`);
  const { results, failures } = await runAlternating({ modes: MODES, sizes, runs, runChild, startModelServer });

  const summary = [];
  for (const n of sizes) {
    const of = (mode, pick) => median(results.filter((x) => x.n === n && x.mode === mode).map(pick));
    const plainUs = (of('plain-json', (x) => x.totalMs) * 1000) / n;
    const plainCpuUs = (of('plain-json', (x) => x.cpuMs) * 1000) / n;
    for (const mode of MODES) {
      const perChunkUs = (of(mode, (x) => x.totalMs) * 1000) / n;
      const cpuPerChunkUs = (of(mode, (x) => x.cpuMs) * 1000) / n;
      summary.push({
        n,
        mode,
        medianTotalMs: of(mode, (x) => x.totalMs),
        perChunkUs,
        ratio: perChunkUs / plainUs,
        cpuPerChunkUs,
        cpuRatio: cpuPerChunkUs / plainCpuUs,
        objects: of(mode, (x) => x.objects ?? 0),
        medianFirstChunkMs: of(mode, (x) => x.firstChunkMs),
        medianMaxRssMB: of(mode, (x) => x.maxRssKB) / 1024,
      });
    }
  }
  const rows = [['N', 'mode', 'total ms', 'µs/chunk', '× plain', 'CPU µs/chunk', 'CPU × plain', 'object chunks', 'first chunk ms', 'peak RSS MB']];
  for (const s of summary) {
    rows.push([s.n, s.mode, fixed(s.medianTotalMs, 1), fixed(s.perChunkUs), fixed(s.ratio), fixed(s.cpuPerChunkUs), fixed(s.cpuRatio), s.objects, fixed(s.medianFirstChunkMs), fixed(s.medianMaxRssMB, 1)]);
  }
  console.log();
  console.log(table(rows, 2));
  console.log(`(medians of ${runs} run(s); each a fresh process after one warm-up run; CPU: the reading process's user + system time;`);
  console.log(` goal: structured ≤ ${GOAL}× plain per chunk)`);
  const goals = summary.filter((s) => s.mode === 'structured').map((s) => ({ n: s.n, ratio: s.ratio, cpuRatio: s.cpuRatio, met: s.ratio <= GOAL }));
  for (const g of goals) console.log(`  N=${g.n}: structured ${fixed(g.ratio)}× plain (CPU ${fixed(g.cpuRatio)}×) — ${g.met ? 'met' : 'not met'}`);
  writeReport(json, { date: new Date().toISOString(), node: process.version, cpu: os.cpus()[0]?.model, sizes, runs, goal: GOAL, summary, goals, failures, results });
  if (failures.length) console.error(`\nBENCHMARK FAILED: ${failures.length} failed run(s)`);
  return failures.length > 0;
}
