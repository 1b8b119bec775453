#!/usr/bin/env node
// IndexedDB memory benchmark: how long loading the last 10 messages of a thread and appending
// one message take in headless Chromium, for threads of 1,000, 10,000 and 100,000 messages.
//
//   node bench/idb/run.mjs [--sizes 1000,10000,100000] [--reps 21] [--no-build] [--json path]
//   node bench/idb/run.mjs --recall [--sizes 1000,10000,50000] [--dims 1536] [--reps 21] …
//
// `--recall` times semantic recall's vector search instead (SPEC §21.3): a fresh database with
// that many vectors in the `vectors` store, `queryVectors` over all of them (one resource, top 4),
// and the JS heap before the first and after the last query. Target: ≤ 20 ms at 10,000 × 1,536.
//
// Builds the crate with the `bench-idb` feature (which exports `__idb_bench`) into
// /tmp/idb-bench-pkg, serves it with index.html on 127.0.0.1, and calls `__idb_bench` once per
// size, each on a fresh database that it deletes afterwards. Timing is `performance.now()`
// around each Rust `Store` call inside the page, so it includes the wasm↔JS conversions.
// Targets (printed, not asserted): last-10 load ≤ 5 ms, and flat in thread size.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const PKG = '/tmp/idb-bench-pkg';
const WASM_OPT = path.join(ROOT, 'node_modules', '.bin', 'wasm-opt');
const WASM_OPT_FEATURES = ['--enable-bulk-memory', '--enable-nontrapping-float-to-int', '--enable-sign-ext',
  '--enable-mutable-globals', '--enable-multivalue', '--enable-reference-types'];
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--enable-precise-memory-info', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const TARGET_LOAD_MS = 5;
/** "Flat": the largest thread's median load within this factor of the smallest's. */
const FLAT_FACTOR = 2;

function parseArgs(argv) {
  const opts = { sizes: null, reps: 21, build: true, json: null, recall: false, dims: 1536 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--no-build') opts.build = false;
    else if (arg === '--sizes') opts.sizes = argv[++i].split(',').map(Number);
    else if (arg === '--reps') opts.reps = Number(argv[++i]);
    else if (arg === '--json') opts.json = path.resolve(argv[++i]);
    else if (arg === '--recall') opts.recall = true;
    else if (arg === '--dims') opts.dims = Number(argv[++i]);
    else {
      console.error('usage: node bench/idb/run.mjs [--sizes 1000,10000,100000] [--reps 21] [--no-build] [--json path]');
      process.exit(2);
    }
  }
  opts.sizes ??= opts.recall ? [1_000, 10_000, 50_000] : [1_000, 10_000, 100_000];
  opts.json ??= path.join(ROOT, 'bench', 'results', opts.recall ? 'recall.json' : 'idb.json');
  if (!opts.sizes.every((n) => Number.isInteger(n) && n > 0) || !(opts.reps >= 1) || !(opts.dims >= 1)) {
    console.error('--sizes takes positive integers, --reps a positive integer');
    process.exit(2);
  }
  return opts;
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

function build() {
  console.log('building with --features bench-idb into', PKG);
  run('wasm-pack', ['build', '--mode', 'no-install', '--target', 'web', '--release', '--out-dir', PKG,
    '--out-name', 'wasm_agent', '--no-pack', '--', '--features', 'bench-idb']);
  // Optimize as the package build does (./x build), so the timings are the shipped code's.
  if (existsSync(WASM_OPT)) {
    const wasm = path.join(PKG, 'wasm_agent_bg.wasm');
    run(WASM_OPT, ['-Oz', ...WASM_OPT_FEATURES, wasm, '-o', wasm]);
  }
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };

/** Serves index.html at / and the built package under /pkg/; resolves once listening. */
function serve() {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const file = url.pathname === '/' ? path.join(HERE, 'index.html')
      : url.pathname.startsWith('/pkg/') ? path.join(PKG, path.basename(url.pathname)) : null;
    if (!file || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const ms = (x) => `${x.toFixed(2)} ms`;

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.build) build();
  if (!existsSync(path.join(PKG, 'wasm_agent.js'))) throw new Error(`no build in ${PKG}; run without --no-build`);
  const server = await serve();
  const url = `http://127.0.0.1:${server.address().port}/`;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const results = [];
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error('page error:', e.message));
    await page.goto(url);
    await page.waitForFunction(() => window.ready || window.loadError, null, { timeout: 30_000 });
    const loadError = await page.evaluate(() => window.loadError);
    if (loadError) throw new Error(`the module did not load: ${loadError}`);
    if (opts.recall) return await recall(page, opts);
    // Warm-up: compiles the hot paths and opens IndexedDB once before anything is timed.
    await page.evaluate(() => window.bench(`warmup-${Date.now()}`, 200, 5));
    for (const size of opts.sizes) {
      const name = `idb-bench-${size}-${Date.now()}`;
      const started = Date.now();
      const r = await page.evaluate(([n, s, reps]) => window.bench(n, s, reps), [name, size, opts.reps]);
      results.push({ size, ...r, wallMs: Date.now() - started });
      console.log(`  ${size.toLocaleString('en')} messages: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  } finally {
    await browser.close();
    server.close();
  }

  const rows = results.map((r) => ({
    messages: r.size.toLocaleString('en'),
    'fill (1,000/tx)': `${(r.fillMs / 1000).toFixed(2)} s`,
    'last-10 median': ms(median(r.loadMs)),
    'last-10 p90': ms(quantile(r.loadMs, 0.9)),
    'records/load': r.readsPerLoad,
    'append median': ms(median(r.appendMs)),
    'append p90': ms(quantile(r.appendMs, 0.9)),
  }));
  console.log(`\nIndexedDB memory, headless Chromium, ${opts.reps} reps per size (medians of performance.now() deltas)`);
  console.table(rows);
  const loads = results.map((r) => median(r.loadMs));
  const worst = Math.max(...loads);
  const ratio = loads[loads.length - 1] / loads[0];
  console.log(`target last-10 load ≤ ${TARGET_LOAD_MS} ms: worst median ${ms(worst)} → ${worst <= TARGET_LOAD_MS ? 'met' : 'MISSED'}`);
  console.log(`target flat in thread size: largest/smallest median ${ratio.toFixed(2)}× (≤ ${FLAT_FACTOR}×) → ${ratio <= FLAT_FACTOR ? 'met' : 'MISSED'}`);
  mkdirSync(path.dirname(opts.json), { recursive: true });
  writeFileSync(opts.json, JSON.stringify({ date: new Date().toISOString(), reps: opts.reps, results }, null, 2));
  console.log(`raw numbers: ${path.relative(ROOT, opts.json)}`);
}

const TARGET_RECALL_MS = 20;

/** `--recall`: vector search over each size, printed as a table; raw numbers to `opts.json`. */
async function recall(page, opts) {
  await page.evaluate(([dims]) => window.recallBench(`warmup-${Date.now()}`, 200, dims, 3), [opts.dims]);
  const results = [];
  for (const size of opts.sizes) {
    const started = Date.now();
    const r = await page.evaluate(([n, s, d, reps]) => window.recallBench(n, s, d, reps), [`recall-bench-${size}-${Date.now()}`, size, opts.dims, opts.reps]);
    results.push({ size, dims: opts.dims, ...r });
    console.log(`  ${size.toLocaleString('en')} vectors: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  const mb = (b) => (b == null ? 'n/a' : `${(b / 1048576).toFixed(1)} MB`);
  console.log(`\nSemantic recall: queryVectors over ${opts.dims}-dimension vectors in IndexedDB, headless Chromium, ${opts.reps} reps`);
  console.table(results.map((r) => ({
    vectors: r.size.toLocaleString('en'),
    'fill (1,000/tx)': `${(r.fillMs / 1000).toFixed(2)} s`,
    'query median': ms(median(r.queryMs)),
    'query p90': ms(quantile(r.queryMs, 0.9)),
    'JS heap before': mb(r.heapBefore),
    'JS heap after': mb(r.heapAfter),
  })));
  const at10k = results.find((r) => r.size === 10_000);
  if (at10k) {
    const m = median(at10k.queryMs);
    console.log(`target ≤ ${TARGET_RECALL_MS} ms at 10,000: median ${ms(m)} → ${m <= TARGET_RECALL_MS ? 'met' : 'MISSED'}`);
  }
  mkdirSync(path.dirname(opts.json), { recursive: true });
  writeFileSync(opts.json, JSON.stringify({ date: new Date().toISOString(), reps: opts.reps, results }, null, 2));
  console.log(`raw numbers: ${path.relative(ROOT, opts.json)}`);
}

main().catch((e) => {
  console.error(e.message ?? e);
  process.exit(1);
});
