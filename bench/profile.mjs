#!/usr/bin/env node
// CPU-profiles one benchmark child and lists the functions with the most self time.
//
//   node bench/profile.mjs [--mode textStream] [--n 20000] [--top 25] [--interval 100]
//   node bench/profile.mjs --summarize file.cpuprofile [--top 25]
//
// Starts the model server, runs `node --cpu-prof bench/worker.mjs <mode> <url> <N>` (warm-up and
// measured run both land in the profile), writes the profile under bench/results/prof/ and prints
// self time per function, JS and wasm separately. The shipped wasm has no name section, so wasm
// functions show as indices; to see names, point the worker at a build that kept them with
// BENCH_PKG=/path/to/pkg (see bench/README.md).

import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startModelServer } from '../tests/server/model-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const TIMEOUT_MS = 60_000;

/** A bad command line: reported without a stack. */
class UsageError extends Error {}

function parseArgs(argv) {
  const opts = { mode: 'textStream', n: 20_000, top: 25, interval: 100, summarize: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    let [key, value] = arg.split(/=(.*)/s, 2);
    if (value === undefined) value = argv[++i];
    const name = key.replace(/^--/, '');
    if (!key.startsWith('--') || !(name in opts) || value === undefined) {
      throw new UsageError(`bad option ${arg}; usage: node bench/profile.mjs [--mode M] [--n N] [--top K] [--interval µs] [--summarize file]`);
    }
    opts[name] = ['n', 'top', 'interval'].includes(name) ? Number(value) : value;
  }
  return opts;
}

/** Self time per function (µs), from a .cpuprofile's samples and timeDeltas. */
export function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0; // a sample's time runs until the next one
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + dt);
  }
  const totals = new Map();
  let all = 0;
  for (const [id, us] of selfUs) {
    const { callFrame: f } = byId.get(id);
    const wasm = f.url.startsWith('wasm://');
    const where = wasm ? 'wasm' : f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : '';
    const key = `${f.functionName || '(anonymous)'}\t${where}`;
    const entry = totals.get(key) ?? { name: f.functionName || '(anonymous)', where, wasm, us: 0 };
    entry.us += us;
    totals.set(key, entry);
    all += us;
  }
  return { all, entries: [...totals.values()].sort((a, b) => b.us - a.us) };
}

function print({ all, entries }, top) {
  const line = (e) => `  ${(e.us / 1000).toFixed(1).padStart(8)} ms ${((100 * e.us) / all).toFixed(1).padStart(5)}%  ${e.name}${e.where && !e.wasm ? `  (${e.where})` : ''}`;
  const wasmUs = entries.filter((e) => e.wasm).reduce((s, e) => s + e.us, 0);
  console.log(`total sampled ${(all / 1000).toFixed(1)} ms; in wasm ${(wasmUs / 1000).toFixed(1)} ms (${((100 * wasmUs) / all).toFixed(1)}%)`);
  console.log(`\ntop self time, all:`);
  entries.slice(0, top).forEach((e) => console.log(line(e) + (e.wasm ? '  [wasm]' : '')));
  console.log(`\ntop self time, wasm:`);
  entries.filter((e) => e.wasm).slice(0, top).forEach((e) => console.log(line(e)));
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.summarize) {
    print(selfTimes(JSON.parse(readFileSync(opts.summarize, 'utf8'))), opts.top);
    return;
  }
  const dir = path.join(HERE, 'results', 'prof');
  mkdirSync(dir, { recursive: true });
  const before = new Set(readdirSync(dir));
  const server = await startModelServer({ host: '127.0.0.1' });
  try {
    const args = ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', String(opts.interval),
      path.join(HERE, 'worker.mjs'), opts.mode, server.url, String(opts.n)];
    const out = await new Promise((resolve, reject) => {
      const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve(stdout.trim());
        else reject(new Error(`worker exited with ${signal ?? `status ${code}`}`));
      });
    });
    console.log(`worker: ${out}`);
  } finally {
    await server.close();
  }
  const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
  if (!file) throw new Error('the worker wrote no profile');
  console.log(`profile: ${path.relative(process.cwd(), path.join(dir, file))} (${opts.mode}, N = ${opts.n}, warm-up + measured run)`);
  print(selfTimes(JSON.parse(readFileSync(path.join(dir, file), 'utf8'))), opts.top);
}

main().catch((err) => {
  console.error(`profile: ${err instanceof UsageError ? err.message : (err?.stack ?? err)}`);
  process.exitCode = 1;
});
