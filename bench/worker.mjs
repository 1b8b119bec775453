// One benchmark measurement in a fresh process: `node bench/worker.mjs <mode> <serverUrl> <N>`.
//
//   mode       baseline | textStream | fullStream
//   serverUrl  the model server's base URL, http://127.0.0.1:PORT/v1 (started by bench/run.mjs)
//   N          deltas the server streams (model `deltas:N`)
//
// Runs the workload once to warm up, then once measured, checks both against the text the server
// sends, and prints one JSON line on stdout:
//   { mode, n, totalMs, firstChunkMs, chunks, textLength, maxRssKB, warmup: { totalMs, firstChunkMs } }
// A wrong text or chunk count exits with status 1 and the reason on stderr.
// BENCH_PKG=dir loads the package from dir instead of pkg/.

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const MODES = ['baseline', 'textStream', 'fullStream'];

const [mode, serverUrl, nArg] = process.argv.slice(2);
const n = Number.parseInt(nArg, 10);
if (!MODES.includes(mode) || !serverUrl || !Number.isInteger(n) || n < 1) {
  process.stderr.write(`usage: node bench/worker.mjs <${MODES.join('|')}> <serverUrl> <N>\n`);
  process.exit(2);
}
const host = new URL(serverUrl).hostname;
if (host !== '127.0.0.1') {
  process.stderr.write(`worker: refusing to talk to ${host}; the benchmark only uses 127.0.0.1\n`);
  process.exit(2);
}

/** What the `deltas:N` script sends: "w0 ", "w1 ", … */
function expectedText(count) {
  const parts = new Array(count);
  for (let i = 0; i < count; i++) parts[i] = 'w' + i + ' ';
  return parts.join('');
}
const EXPECTED = expectedText(n);

/** (a) Raw JavaScript: fetch, decode, split lines, JSON.parse each `data: ` line. */
async function baseline() {
  const body = JSON.stringify({ model: `deltas:${n}`, stream: true, messages: [{ role: 'user', content: 'go' }] });
  const t0 = performance.now();
  let firstChunkMs = -1;
  const res = await fetch(serverUrl + '/chat/completions', { method: 'POST', body });
  if (!res.ok) throw new Error(`baseline: HTTP ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder('utf-8');
  let pending = '';
  let text = '';
  let chunks = 0;
  let done = false;
  for (;;) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    pending += decoder.decode(value, { stream: true });
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      if (!line.startsWith('data: ')) continue;
      const data = line.slice(6);
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const content = JSON.parse(data).choices?.[0]?.delta?.content;
      if (typeof content === 'string' && content !== '') {
        if (firstChunkMs < 0) firstChunkMs = performance.now() - t0;
        text += content;
        chunks++;
      }
    }
  }
  const totalMs = performance.now() - t0;
  if (!done) throw new Error('baseline: the stream ended without [DONE]');
  return { totalMs, firstChunkMs, chunks, text };
}

let Agent;
async function loadPackage() {
  // BENCH_PKG points at another build of the package (e.g. one that kept wasm names, for profiling).
  const entry = process.env.BENCH_PKG
    ? pathToFileURL(path.join(path.resolve(process.env.BENCH_PKG), 'index.node.js')).href
    : '../pkg/index.node.js';
  ({ Agent } = await import(entry));
}

function newAgent() {
  return new Agent({ id: 'bench', model: { id: `openai/deltas:${n}`, url: serverUrl, apiKey: 'bench' } });
}

/** (b) The package's textStream. */
async function textStream() {
  const agent = newAgent();
  const t0 = performance.now();
  let firstChunkMs = -1;
  const out = await agent.stream('go');
  let text = '';
  let chunks = 0;
  for await (const t of out.textStream) {
    if (firstChunkMs < 0) firstChunkMs = performance.now() - t0;
    text += t;
    chunks++;
  }
  const totalMs = performance.now() - t0;
  return { totalMs, firstChunkMs, chunks, text };
}

/** (c) The package's fullStream, counting text-delta chunks. */
async function fullStream() {
  const agent = newAgent();
  const t0 = performance.now();
  let firstChunkMs = -1;
  const out = await agent.stream('go');
  let text = '';
  let chunks = 0;
  let finished = false;
  let error;
  for await (const chunk of out.fullStream) {
    if (chunk.type === 'text-delta') {
      if (firstChunkMs < 0) firstChunkMs = performance.now() - t0;
      text += chunk.payload.text;
      chunks++;
    } else if (chunk.type === 'finish') {
      finished = true;
    } else if (chunk.type === 'error') {
      error = chunk.payload.error;
    }
  }
  const totalMs = performance.now() - t0;
  if (error) throw new Error(`fullStream: error chunk: ${JSON.stringify(error)}`);
  if (!finished) throw new Error('fullStream: no finish chunk');
  return { totalMs, firstChunkMs, chunks, text };
}

/** Fails loudly unless the run saw exactly what the server sent. */
function check(label, run) {
  const problems = [];
  if (run.chunks !== n) problems.push(`${run.chunks} text chunks, expected ${n}`);
  if (run.text.length !== EXPECTED.length) problems.push(`text length ${run.text.length}, expected ${EXPECTED.length}`);
  else if (run.text !== EXPECTED) {
    let i = 0;
    while (run.text[i] === EXPECTED[i]) i++;
    problems.push(`text differs at ${i}: ${JSON.stringify(run.text.slice(i, i + 20))} vs ${JSON.stringify(EXPECTED.slice(i, i + 20))}`);
  }
  if (!(run.firstChunkMs >= 0)) problems.push('no text chunk arrived');
  if (problems.length) throw new Error(`${mode} ${label} run is wrong: ${problems.join('; ')}`);
}

const workloads = { baseline, textStream, fullStream };

try {
  if (mode !== 'baseline') await loadPackage();
  const run = workloads[mode];
  const warm = await run();
  check('warm-up', warm);
  const measured = await run();
  check('measured', measured);
  const result = {
    mode,
    n,
    totalMs: measured.totalMs,
    firstChunkMs: measured.firstChunkMs,
    chunks: measured.chunks,
    textLength: measured.text.length,
    maxRssKB: process.resourceUsage().maxRSS,
    warmup: { totalMs: warm.totalMs, firstChunkMs: warm.firstChunkMs },
  };
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
  process.stderr.write(`worker ${mode}: ${err?.stack ?? err}\n`);
  process.exitCode = 1;
}
