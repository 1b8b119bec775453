#!/usr/bin/env node
// The streaming benchmark (`./x bench`): the package's textStream and fullStream against a raw
// fetch + JSON.parse baseline, all reading `deltas:N` from the local model server; and the package
// running one tool step before N deltas (`tool`, model `tool-then-deltas:N`) against the same
// protocol done by hand (`baseline-tool`).
//
//   node bench/run.mjs [--n 20000] [--runs 7] [--json bench/results/latest.json]
//   node bench/run.mjs --mem [--sizes 200000,2000000] [--runs 1] [--json bench/results/memory.json]
//
// --mem is the memory benchmark (bench/memory.mjs): long replies read through textStream only and
// fullStream only, peak RSS, wasm memory and JS heap beside the raw loop's.
//   node bench/run.mjs --structured [--sizes 100,400] [--runs 3] [--json bench/results/structured.json]
// --structured is the structured-output benchmark (bench/structured.mjs): the same JSON deltas read
// with and without structuredOutput, µs per chunk and the ratio.
//   node bench/run.mjs --tracing [--sizes 2000,20000] [--runs 5] [--json bench/results/tracing.json]
// --tracing is the tracing benchmark (bench/tracing.mjs): the same deltas read with and without an
// observability exporter, µs per chunk side by side.
//
// The server runs here; every measurement runs in a fresh `node bench/worker.mjs` so JIT warm-up
// and GC state are comparable. Modes alternate round-robin, R runs each; the table shows medians.
// Exits 1 when a run is wrong, fails or times out (60 s). Targets are printed, not asserted.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync, constants as zlib } from 'node:zlib';
import { startModelServer } from '../tests/server/model-server.mjs';
import { memoryBenchmark } from './memory.mjs';
import { structuredBenchmark } from './structured.mjs';
import { tracingBenchmark } from './tracing.mjs';
import { mainThreadBenchmark } from './main-thread.mjs';
import { median, table } from './report.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const PKG = path.join(ROOT, 'pkg');
const WORKER = path.join(HERE, 'worker.mjs');
const MODES = ['baseline', 'textStream', 'fullStream', 'baseline-tool', 'tool'];
/** What each package mode is compared with (a baseline mode is compared with itself). */
const BASELINE_OF = { baseline: 'baseline', textStream: 'baseline', fullStream: 'baseline', 'baseline-tool': 'baseline-tool', tool: 'baseline-tool' };
const TEXT_MODES = ['textStream', 'fullStream'];
const CHILD_TIMEOUT_MS = 60_000;
const PKG_JS = ['wasm_agent.js', 'api.js', 'index.node.js'];
const TARGETS = { perChunkRatio: 3, firstChunkOverheadMs: 1, packageGzipKB: 150 };

/** A bad command line: reported without a stack. */
class UsageError extends Error {}

function parseArgs(argv) {
  const opts = { n: 20_000, runs: undefined, json: undefined, mem: false, structured: false, tracing: false, sizes: undefined };
  for (let i = 0; i < argv.length; i++) {
    let [key, value] = argv[i].split(/=(.*)/s, 2);
    if (key === '--help' || key === '-h') {
      process.stdout.write('usage: node bench/run.mjs [--n N] [--runs R] [--json path]\n       node bench/run.mjs --mem [--sizes N,N…] [--runs R] [--json path]\n       node bench/run.mjs --structured [--sizes N,N…] [--runs R] [--json path]\n       node bench/run.mjs --tracing [--sizes N,N…] [--runs R] [--json path]\n       node bench/run.mjs --main-thread [--n N] [--runs R] [--json path]\n');
      process.exit(0);
    }
    if (key === '--mem') {
      opts.mem = true;
      continue;
    }
    if (key === '--structured') {
      opts.structured = true;
      continue;
    }
    if (key === '--tracing') {
      opts.tracing = true;
      continue;
    }
    if (key === '--main-thread') {
      opts.mainThread = true;
      continue;
    }
    if (!['--n', '--runs', '--json', '--sizes'].includes(key)) throw new UsageError(`unknown option ${argv[i]}`);
    if (value === undefined) value = argv[++i];
    if (value === undefined) throw new UsageError(`${key} needs a value`);
    if (key === '--json') opts.json = path.resolve(value);
    else if (key === '--sizes') {
      opts.sizes = value.split(',').map(Number);
      if (!opts.sizes.every((x) => Number.isInteger(x) && x > 0)) throw new UsageError('--sizes must be positive integers, comma-separated');
    } else {
      const number = Number(value);
      if (!Number.isInteger(number) || number < 1) throw new UsageError(`${key} must be a positive integer`);
      opts[key.slice(2)] = number;
    }
  }
  if (Number(opts.mem) + Number(opts.structured) + Number(opts.tracing) + Number(opts.mainThread) > 1) throw new UsageError('--mem, --structured, --tracing and --main-thread are separate benchmarks');
  opts.sizes ??= opts.structured ? [100, 400] : opts.tracing ? [2_000, 20_000] : [200_000, 2_000_000];
  opts.runs ??= opts.mem ? 1 : opts.structured || opts.mainThread ? 3 : opts.tracing ? 5 : 7;
  opts.json ??= path.join(HERE, 'results', opts.mem ? 'memory.json' : opts.structured ? 'structured.json' : opts.tracing ? 'tracing.json' : opts.mainThread ? 'main-thread.json' : 'latest.json');
  return opts;
}

/** Runs one worker; resolves to its result or to { error } (never rejects). */
function runChild(mode, url, n, extra = [], timeoutMs = CHILD_TIMEOUT_MS) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, [WORKER, mode, url, String(n), ...extra], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ mode, error: `could not start the worker: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const wallMs = Date.now() - started;
      if (timedOut) {
        resolve({ mode, error: `timed out after ${timeoutMs / 1000} s and was killed`, stderr, wallMs });
      } else if (code !== 0) {
        resolve({ mode, error: `exited with ${signal ?? `status ${code}`}`, stderr: stderr.trim(), wallMs });
      } else {
        try {
          resolve({ ...JSON.parse(stdout.trim().split('\n').pop()), wallMs });
        } catch {
          resolve({ mode, error: 'printed no result', stdout, stderr: stderr.trim(), wallMs });
        }
      }
    });
  });
}


function packageSize() {
  const gz = (buf) => gzipSync(buf, { level: zlib.Z_BEST_COMPRESSION }).length;
  const wasm = readFileSync(path.join(PKG, 'wasm_agent_bg.wasm'));
  const js = Buffer.concat(PKG_JS.map((f) => readFileSync(path.join(PKG, f))));
  const size = {
    wasmRawBytes: wasm.length,
    wasmGzipBytes: gz(wasm),
    jsFiles: PKG_JS,
    jsRawBytes: js.length,
    jsGzipBytes: gz(js),
  };
  size.totalGzipBytes = size.wasmGzipBytes + size.jsGzipBytes;
  return size;
}


const kb = (bytes) => (bytes / 1024).toFixed(1);
const fixed = (v, d) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!existsSync(path.join(PKG, 'index.node.js')) || !existsSync(path.join(PKG, 'wasm_agent_bg.wasm'))) {
    throw new Error('pkg/ is missing or incomplete: run `./x build` first (or use `./x bench`)');
  }

  if (opts.mainThread) {
    if (await mainThreadBenchmark({ ...opts, writeReport })) process.exitCode = 1;
    return;
  }
  if (opts.mem || opts.structured || opts.tracing) {
    const bench = opts.mem ? memoryBenchmark : opts.structured ? structuredBenchmark : tracingBenchmark;
    const failed = await bench({ ...opts, runChild, startModelServer, writeReport });
    if (failed) process.exitCode = 1;
    return;
  }
  const size = packageSize();
  const cpu = os.cpus()[0]?.model ?? 'unknown';
  console.log(`streaming benchmark: N = ${opts.n} deltas, ${opts.runs} runs per mode, node ${process.version}, ${cpu}`);
  console.log(`package built ${statSync(path.join(PKG, 'wasm_agent_bg.wasm')).mtime.toISOString()}`);

  const runs = Object.fromEntries(MODES.map((m) => [m, []]));
  const failures = [];
  const server = await startModelServer({ host: '127.0.0.1' });
  try {
    if (new URL(server.url).hostname !== '127.0.0.1') throw new Error(`server is not on 127.0.0.1: ${server.url}`);
    for (let r = 0; r < opts.runs; r++) {
      // Rotate the starting mode so no mode always runs first (or last) in a round.
      for (let k = 0; k < MODES.length; k++) {
        const mode = MODES[(r + k) % MODES.length];
        if (failures.some((f) => f.mode === mode)) continue; // one loud failure per mode is enough
        const result = await runChild(mode, server.url, opts.n);
        if (result.error) {
          failures.push({ run: r + 1, ...result });
          console.error(`\nFAILED: ${mode} run ${r + 1}: ${result.error}${result.stderr ? `\n${result.stderr}` : ''}\n`);
          continue;
        }
        runs[mode].push({ run: r + 1, ...result });
        process.stdout.write(`  run ${r + 1}/${opts.runs} ${mode.padEnd(13)} ${result.totalMs.toFixed(1)} ms\n`);
      }
    }
  } finally {
    await server.close();
  }

  const summary = {};
  for (const mode of MODES) {
    const list = runs[mode];
    const totalMs = median(list.map((x) => x.totalMs));
    summary[mode] = {
      runs: list.length,
      medianTotalMs: totalMs,
      perChunkUs: (totalMs * 1000) / opts.n,
      medianFirstChunkMs: median(list.map((x) => x.firstChunkMs)),
      medianMaxRssMB: median(list.map((x) => x.maxRssKB)) / 1024,
    };
    if (BASELINE_OF[mode] === 'baseline-tool') summary[mode].medianToolCallMs = median(list.map((x) => x.toolCallMs));
  }
  for (const mode of MODES) {
    const base = summary[BASELINE_OF[mode]];
    summary[mode].comparedWith = BASELINE_OF[mode];
    summary[mode].ratioPerChunk = summary[mode].perChunkUs / base.perChunkUs;
    summary[mode].firstChunkOverheadMs = summary[mode].medianFirstChunkMs - base.medianFirstChunkMs;
  }
  // The tool modes' first chunk is the first text delta of step 2: first request start → tool call
  // streamed and assembled → tool run → second request → its first delta.
  const toolRoundTrip = {
    packageMs: summary.tool.medianFirstChunkMs,
    baselineMs: summary['baseline-tool'].medianFirstChunkMs,
  };
  toolRoundTrip.addedMs = toolRoundTrip.packageMs - toolRoundTrip.baselineMs;

  console.log();
  const rows = [['mode', 'total ms', 'µs/chunk', '× baseline', 'first chunk ms', 'overhead ms', 'peak RSS MB']];
  for (const mode of MODES) {
    const s = summary[mode];
    rows.push([
      mode,
      fixed(s.medianTotalMs, 1),
      fixed(s.perChunkUs, 2),
      fixed(s.ratioPerChunk, 2),
      fixed(s.medianFirstChunkMs, 2),
      BASELINE_OF[mode] === mode ? '-' : (s.firstChunkOverheadMs >= 0 ? '+' : '') + fixed(s.firstChunkOverheadMs, 2),
      fixed(s.medianMaxRssMB, 1),
    ]);
  }
  console.log(table(rows));
  console.log(`(medians of ${opts.runs} runs; each a fresh process after one warm-up run; RSS is the child's peak)`);
  console.log('(tool rows: one tool step, then N deltas; × and overhead against baseline-tool; first chunk = first text delta of step 2)');
  console.log();
  console.log(
    `tool round trip (first request start → first text delta of step 2): tool ${fixed(toolRoundTrip.packageMs, 2)} ms, ` +
      `baseline-tool ${fixed(toolRoundTrip.baselineMs, 2)} ms, added ${toolRoundTrip.addedMs >= 0 ? '+' : ''}${fixed(toolRoundTrip.addedMs, 2)} ms`,
  );

  console.log();
  console.log(
    `package: wasm_agent_bg.wasm ${kb(size.wasmRawBytes)} KB raw, ${kb(size.wasmGzipBytes)} KB gzip; ` +
      `${PKG_JS.join(' + ')} ${kb(size.jsRawBytes)} KB raw, ${kb(size.jsGzipBytes)} KB gzip; ` +
      `total ${kb(size.totalGzipBytes)} KB gzip -9 (1 KB = 1024 B)`,
  );

  // Per chunk: every package mode against its own baseline. First-chunk overhead: the text modes
  // (the tool mode's is the round trip, printed above).
  const pkgModes = MODES.filter((m) => BASELINE_OF[m] !== m);
  const worstRatio = Math.max(...pkgModes.map((m) => summary[m].ratioPerChunk));
  const worstOverhead = Math.max(...TEXT_MODES.map((m) => summary[m].firstChunkOverheadMs));
  const targets = [
    {
      target: `per chunk ≤ ${TARGETS.perChunkRatio}× baseline`,
      actual: `${pkgModes.map((m) => `${m} ${fixed(summary[m].ratioPerChunk, 2)}×`).join(', ')}`,
      met: worstRatio <= TARGETS.perChunkRatio,
    },
    {
      target: `first-chunk overhead ≤ ${TARGETS.firstChunkOverheadMs} ms`,
      actual: `${TEXT_MODES.map((m) => `${m} ${fixed(summary[m].firstChunkOverheadMs, 2)} ms`).join(', ')}`,
      met: worstOverhead <= TARGETS.firstChunkOverheadMs,
    },
    {
      target: `package ≤ ${TARGETS.packageGzipKB} KB gzip`,
      actual: `${kb(size.totalGzipBytes)} KB`,
      met: size.totalGzipBytes <= TARGETS.packageGzipKB * 1024,
    },
  ];
  console.log();
  console.log('targets (for comparison, not asserted):');
  const actualWidth = Math.max(40, ...targets.map((t) => t.actual.length));
  for (const t of targets) console.log(`  ${t.target.padEnd(32)} ${t.actual.padEnd(actualWidth)} ${t.met ? 'met' : 'not met'}`);

  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpu,
    cpus: os.cpus().length,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    n: opts.n,
    runsPerMode: opts.runs,
    packageBuiltAt: statSync(path.join(PKG, 'wasm_agent_bg.wasm')).mtime.toISOString(),
    size,
    summary,
    toolRoundTrip,
    targets,
    failures,
    runs,
  };
  writeReport(opts.json, report);

  if (failures.length) {
    console.error(`\nBENCHMARK FAILED: ${failures.length} failed run(s): ${failures.map((f) => `${f.mode} (${f.error})`).join('; ')}`);
    process.exitCode = 1;
  }
}

function writeReport(file, report) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  const shown = path.relative(process.cwd(), file);
  console.log(`\nresults: ${shown.startsWith('..') ? file : shown}`);
}

main().catch((err) => {
  console.error(`bench: ${err instanceof UsageError ? err.message : (err?.stack ?? err)}`);
  process.exitCode = 1;
});
