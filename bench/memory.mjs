// The memory benchmark (`node bench/run.mjs --mem`): for each N of `--sizes`, the raw loop, the
// package's textStream only and its fullStream only read `deltas:N`, each in its own
// `node bench/worker.mjs <mode> <url> <N> --mem` (one run, no warm-up, so a peak is one reply's),
// and the table puts their peaks side by side: RSS, wasm linear memory, JS heap, external.
// The goal of issue 18 is printed, not asserted: peak RSS ≤ the raw loop's + 3× the text size.

import os from 'node:os';
import { median, table } from './report.mjs';

const MODES = ['baseline', 'textStream', 'fullStream'];
/** A 2,000,000-delta reply takes a while on a loaded machine. */
const MEM_CHILD_TIMEOUT_MS = 600_000;
const MB = 1024 * 1024;

/** The size of the text `deltas:N` sends ("w0 ", "w1 ", …), in bytes (it is ASCII). */
export function deltasTextBytes(n) {
  let bytes = 0;
  for (let digits = 1, from = 0; from < n; digits++, from = 10 ** (digits - 1)) {
    const to = Math.min(n, 10 ** digits);
    bytes += (to - from) * (digits + 2);
  }
  return bytes;
}


const fixed = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '-');


/** Runs the benchmark; returns true when a run failed. */
export async function memoryBenchmark({ sizes, runs, json, runChild, startModelServer, writeReport }) {
  console.log(`memory benchmark: N = ${sizes.join(', ')} deltas, ${runs} run(s) per mode, node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown'}`);
  const results = [];
  const failures = [];
  const server = await startModelServer({ host: '127.0.0.1' });
  try {
    for (const n of sizes) {
      for (let r = 0; r < runs; r++) {
        for (const mode of MODES) {
          const result = await runChild(mode, server.url, n, ['--mem'], MEM_CHILD_TIMEOUT_MS);
          if (result.error) {
            failures.push({ n, run: r + 1, ...result });
            console.error(`\nFAILED: ${mode} N=${n} run ${r + 1}: ${result.error}${result.stderr ? `\n${result.stderr}` : ''}\n`);
            continue;
          }
          results.push({ n, run: r + 1, ...result });
          process.stdout.write(`  N=${n} run ${r + 1}/${runs} ${mode.padEnd(10)} peak RSS ${fixed(result.memory.peakRssMB)} MB\n`);
        }
      }
    }
  } finally {
    await server.close();
  }

  const summary = [];
  for (const n of sizes) {
    const textMB = deltasTextBytes(n) / MB;
    const of = (mode, key) => median(results.filter((x) => x.n === n && x.mode === mode).map((x) => x.memory[key]));
    const baseRss = of('baseline', 'peakRssMB');
    for (const mode of MODES) {
      const rss = of(mode, 'peakRssMB');
      const row = {
        n,
        textMB,
        mode,
        peakRssMB: rss,
        overBaselineMB: rss - baseRss,
        peakWasmMB: of(mode, 'peakWasmMB'),
        peakHeapUsedMB: of(mode, 'peakHeapUsedMB'),
        peakExternalMB: of(mode, 'peakExternalMB'),
        goalMB: baseRss + 3 * textMB,
      };
      row.met = mode === 'baseline' ? null : rss <= row.goalMB;
      summary.push(row);
    }
  }
  const rows = [['N', 'mode', 'text MB', 'peak RSS MB', '− raw MB', 'wasm MB', 'heap MB', 'external MB', 'goal ≤ MB', 'goal']];
  for (const s of summary) {
    const base = s.mode === 'baseline';
    rows.push([
      s.n,
      s.mode,
      fixed(s.textMB),
      fixed(s.peakRssMB),
      base ? '-' : (s.overBaselineMB >= 0 ? '+' : '') + fixed(s.overBaselineMB),
      fixed(s.peakWasmMB),
      fixed(s.peakHeapUsedMB),
      fixed(s.peakExternalMB),
      base ? '-' : fixed(s.goalMB),
      base ? '-' : s.met ? 'met' : 'not met',
    ]);
  }
  console.log();
  console.log(table(rows, 2));
  console.log(`(medians of ${runs} run(s); each a fresh process, one reply, no warm-up; RSS is the process's peak,`);
  console.log(' wasm the linear memory at its largest, heap and external sampled every 2,048 chunks and at the end;');
  console.log(' goal: peak RSS ≤ the raw loop\'s + 3× the text size)');
  writeReport(json, { date: new Date().toISOString(), node: process.version, sizes, runs, summary, failures, results });
  if (failures.length) console.error(`\nBENCHMARK FAILED: ${failures.length} failed run(s)`);
  return failures.length > 0;
}
