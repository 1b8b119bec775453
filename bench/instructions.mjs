// Instruction counts per chunk (`node bench/instructions.mjs`): the same worker runs as the
// timed benchmarks (bench/worker.mjs), each under valgrind's callgrind, which counts the
// instructions the process executed instead of timing it. A count does not change when another
// process loads the machine, so two modes can be compared on a shared, noisy machine where wall
// and CPU times overlap.
//
//   node bench/instructions.mjs [--modes untraced,traced] [--sizes 2000,20000] [--json path]
//
// The first mode is the baseline. Each (mode, size) runs once: the worker does one warm-up and
// one measured run of N deltas, so a process reads 2N chunks. Per-chunk cost is the marginal
// count between the two sizes, (I(big) − I(small)) / (2 × (big − small)), which leaves out what
// every process pays once (starting Node, compiling the wasm module). The fixed part is reported
// too: I(small) − 2 × small × per-chunk. V8 compiles on background threads, so counts vary by
// about a percent from run to run; differences below that are noise.
// BENCH_PKG=dir measures another build (passed to the worker). Needs valgrind (`valgrind --version`).

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { table } from './report.mjs';
import { startModelServer } from '../tests/server/model-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const WORKER = path.join(HERE, 'worker.mjs');
const TIMEOUT_MS = 30 * 60_000;

function parseArgs(argv) {
  const opts = { modes: ['untraced', 'traced'], sizes: [2_000, 20_000], json: path.join(HERE, 'results', 'instructions.json') };
  for (let i = 0; i < argv.length; i++) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (key === '--modes') opts.modes = value.split(',');
    else if (key === '--sizes') opts.sizes = value.split(',').map(Number);
    else if (key === '--json') opts.json = value;
    else throw new Error(`unknown argument ${key}\nusage: node bench/instructions.mjs [--modes a,b,…] [--sizes small,big] [--json path]`);
    i++;
  }
  if (opts.modes.length < 2) throw new Error('--modes needs a baseline and at least one mode to compare');
  if (opts.sizes.length !== 2 || !opts.sizes.every((n) => Number.isInteger(n) && n > 0) || opts.sizes[0] >= opts.sizes[1]) {
    throw new Error('--sizes needs two sizes, the smaller first');
  }
  return opts;
}

/** Instructions one worker process executed, from callgrind's summary line. */
function count(mode, url, n) {
  return new Promise((resolve, reject) => {
    const args = ['--tool=callgrind', '--smc-check=all', '--callgrind-out-file=/dev/null', process.execPath, WORKER, mode, url, String(n)];
    const child = spawn('valgrind', args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.on('error', (err) => reject(new Error(`could not start valgrind: ${err.message}`)));
    child.on('close', (code) => {
      clearTimeout(timer);
      const collected = /Collected : (\d+)/.exec(stderr);
      if (code !== 0 || !collected) return reject(new Error(`${mode} N=${n}: exited with ${code}\n${stderr.split('\n').slice(-15).join('\n')}`));
      const result = JSON.parse(stdout.trim().split('\n').pop());
      resolve({ mode, n, instructions: Number(collected[1]), chunks: result.chunks });
    });
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed (Debian package valgrind)');
  const [small, big] = opts.sizes;
  console.log(`instruction benchmark: modes ${opts.modes.join(', ')} (baseline ${opts.modes[0]}), N = ${small} and ${big}, node ${process.version}${process.env.BENCH_PKG ? `, package ${process.env.BENCH_PKG}` : ''}`);
  const server = await startModelServer({ host: '127.0.0.1' });
  const results = [];
  try {
    for (const n of opts.sizes) {
      for (const mode of opts.modes) {
        const r = await count(mode, server.url, n);
        results.push(r);
        console.log(`  ${mode.padEnd(12)} N=${String(n).padEnd(6)} ${r.instructions.toLocaleString('en')} instructions`);
      }
    }
  } finally {
    await server.close();
  }
  const at = (mode, n) => results.find((r) => r.mode === mode && r.n === n).instructions;
  const rows = [['mode', 'instructions/chunk', '× baseline', 'fixed (M instructions)', `whole process N=${big} × baseline`]];
  const summary = [];
  const base = opts.modes[0];
  const perChunk = (mode) => (at(mode, big) - at(mode, small)) / (2 * (big - small));
  for (const mode of opts.modes) {
    const c = perChunk(mode);
    const fixed = at(mode, small) - 2 * small * c;
    const s = { mode, perChunk: c, ratio: c / perChunk(base), fixed, wholeRatio: at(mode, big) / at(base, big) };
    summary.push(s);
    rows.push([mode, Math.round(c).toLocaleString('en'), s.ratio.toFixed(3), (fixed / 1e6).toFixed(1), s.wholeRatio.toFixed(3)]);
  }
  console.log();
  console.log(table(rows, 1));
  mkdirSync(path.dirname(opts.json), { recursive: true });
  writeFileSync(opts.json, JSON.stringify({ date: new Date().toISOString(), node: process.version, pkg: process.env.BENCH_PKG ?? 'pkg', sizes: opts.sizes, summary, results }, null, 2) + '\n');
  console.log(`\nresults: ${path.relative(process.cwd(), opts.json)}`);
}

main().catch((err) => {
  console.error(err.message);
  process.exitCode = 1;
});
