// One benchmark measurement in a fresh process: `node bench/worker.mjs <mode> <serverUrl> <N> [--mem]`.
//
//   mode       baseline | textStream | fullStream | baseline-tool | tool | plain-json | structured | untraced | traced
//   serverUrl  the model server's base URL, http://127.0.0.1:PORT/v1 (started by bench/run.mjs)
//   N          deltas the server streams (model `deltas:N`, or `tool-then-deltas:N` for the tool modes:
//              one tool call, then N deltas once the tool result is sent; `json-deltas:N` for the
//              structured-output pair, whose line adds `objects`, the object chunks read)
//
// Runs the workload once to warm up, then once measured, checks both against the text the server
// sends, and prints one JSON line on stdout:
//   { mode, n, totalMs, firstChunkMs, chunks, textLength, maxRssKB, warmup: { totalMs, firstChunkMs } }
// The tool modes add toolCallMs (when the whole tool call was in hand); their firstChunkMs is the
// first text delta of the second step, so it includes the tool round trip.
// With --mem (the memory benchmark, `bench/run.mjs --mem`): one measured run, no warm-up, so the
// peaks are those of one reply; memory is sampled every MEM_SAMPLE_EVERY chunks and at the end,
// and the line adds `memory: { peakRssMB, peakWasmMB, peakHeapUsedMB, peakExternalMB,
// peakArrayBuffersMB }` (wasm linear memory: the instance's memory.buffer.byteLength; a baseline
// has none).
// A wrong text, chunk count or tool call exits with status 1 and the reason on stderr.
// BENCH_PKG=dir loads the package from dir instead of pkg/.

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { JSON_DELTAS_SCHEMA, jsonDeltaPieces } from '../tests/server/json-scripts.mjs';

const MODES = ['baseline', 'textStream', 'fullStream', 'baseline-tool', 'tool', 'plain-json', 'structured', 'untraced', 'traced'];

const [mode, serverUrl, nArg, memArg] = process.argv.slice(2);
const n = Number.parseInt(nArg, 10);
const MEM = memArg === '--mem';
if (!MODES.includes(mode) || !serverUrl || !Number.isInteger(n) || n < 1 || (memArg !== undefined && !MEM)) {
  process.stderr.write(`usage: node bench/worker.mjs <${MODES.join('|')}> <serverUrl> <N> [--mem]\n`);
  process.exit(2);
}
const host = new URL(serverUrl).hostname;
if (host !== '127.0.0.1') {
  process.stderr.write(`worker: refusing to talk to ${host}; the benchmark only uses 127.0.0.1\n`);
  process.exit(2);
}

const MEM_SAMPLE_EVERY = 2048;
const MB = 1024 * 1024;
/** The package's wasm memory, once it is loaded (wasm-bindgen's initSync hands back the instance's exports). */
let wasmMemory = null;
/** Peaks of the --mem run, sampled every MEM_SAMPLE_EVERY chunks (`sample(count)`) and at the end. */
const peaks = { wasm: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
function sampleNow() {
  const m = process.memoryUsage();
  peaks.heapUsed = Math.max(peaks.heapUsed, m.heapUsed);
  peaks.external = Math.max(peaks.external, m.external);
  peaks.arrayBuffers = Math.max(peaks.arrayBuffers, m.arrayBuffers);
  if (wasmMemory) peaks.wasm = Math.max(peaks.wasm, wasmMemory.buffer.byteLength);
}
function sample(count) {
  if (MEM && count % MEM_SAMPLE_EVERY === 0) sampleNow();
}

/** What the `deltas:N` script sends: "w0 ", "w1 ", … */
function expectedText(count) {
  const parts = new Array(count);
  for (let i = 0; i < count; i++) parts[i] = 'w' + i + ' ';
  return parts.join('');
}
const JSON_MODES = ['plain-json', 'structured'];
const EXPECTED = JSON_MODES.includes(mode) ? jsonDeltaPieces(n).join('') : expectedText(n);

/**
 * Reads a Chat Completions stream of text deltas by hand: decode, split lines, JSON.parse each
 * `data: ` line. `t0` is when the workload started (for firstChunkMs).
 */
async function readTextDeltas(res, t0, label) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder('utf-8');
  let firstChunkMs = -1;
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
        sample(chunks);
      }
    }
  }
  if (!done) throw new Error(`${label}: the stream ended without [DONE]`);
  return { firstChunkMs, chunks, text };
}

/** (a) Raw JavaScript: fetch, decode, split lines, JSON.parse each `data: ` line. */
async function baseline() {
  const body = JSON.stringify({ model: `deltas:${n}`, stream: true, messages: [{ role: 'user', content: 'go' }] });
  const t0 = performance.now();
  const res = await fetch(serverUrl + '/chat/completions', { method: 'POST', body });
  if (!res.ok) throw new Error(`baseline: HTTP ${res.status}`);
  const { firstChunkMs, chunks, text } = await readTextDeltas(res, t0, 'baseline');
  const totalMs = performance.now() - t0;
  return { totalMs, firstChunkMs, chunks, text };
}

// The one tool of the tool modes, and what the server's `tool-then-deltas` calls it with.
const LOOKUP = {
  id: 'lookup',
  description: 'Looks something up',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
};
const LOOKUP_ARGS = { q: 'example' };
let toolCalls = []; // inputs `execute` got in the current run

async function lookupExecute(input) {
  toolCalls.push(input);
  return { ok: true };
}

/** The tool calls of a Chat Completions stream, assembled by index; also its finish_reason and any text. */
async function readToolCalls(res, label) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder('utf-8');
  let pending = '';
  let text = '';
  let finish;
  let done = false;
  const calls = [];
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
      const choice = JSON.parse(data).choices?.[0];
      if (!choice) continue;
      if (typeof choice.delta?.content === 'string') text += choice.delta.content;
      for (const piece of choice.delta?.tool_calls ?? []) {
        const call = (calls[piece.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
        if (piece.id) call.id = piece.id;
        if (piece.function?.name) call.function.name += piece.function.name;
        if (piece.function?.arguments) call.function.arguments += piece.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  if (!done) throw new Error(`${label}: the tool-call stream ended without [DONE]`);
  return { calls: calls.filter(Boolean), finish, text };
}

/**
 * (a') Raw JavaScript doing one tool step by hand: request with the tool declared, assemble the
 * streamed call, run the tool, send the assistant tool_calls message and the tool result, then
 * read N deltas like the baseline.
 */
async function baselineTool() {
  toolCalls = [];
  const model = `tool-then-deltas:${n}`;
  const tools = [{ type: 'function', function: { name: LOOKUP.id, description: LOOKUP.description, parameters: LOOKUP.inputSchema } }];
  const messages = [{ role: 'user', content: 'go' }];
  const t0 = performance.now();
  const first = await fetch(serverUrl + '/chat/completions', {
    method: 'POST',
    body: JSON.stringify({ model, stream: true, messages, tools }),
  });
  if (!first.ok) throw new Error(`baseline-tool: first request: HTTP ${first.status}`);
  const step = await readToolCalls(first, 'baseline-tool');
  const toolCallMs = performance.now() - t0;
  if (step.finish !== 'tool_calls' || step.calls.length !== 1 || step.calls[0].function.name !== LOOKUP.id || step.text !== '') {
    throw new Error(`baseline-tool: expected one ${LOOKUP.id} call, got ${JSON.stringify(step)}`);
  }
  const results = [];
  for (const call of step.calls) {
    const output = await lookupExecute(JSON.parse(call.function.arguments));
    results.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(output) });
  }
  messages.push({ role: 'assistant', content: null, tool_calls: step.calls }, ...results);
  const second = await fetch(serverUrl + '/chat/completions', {
    method: 'POST',
    body: JSON.stringify({ model, stream: true, messages, tools }),
  });
  if (!second.ok) throw new Error(`baseline-tool: second request: HTTP ${second.status}`);
  const { firstChunkMs, chunks, text } = await readTextDeltas(second, t0, 'baseline-tool');
  const totalMs = performance.now() - t0;
  return { totalMs, firstChunkMs, toolCallMs, chunks, text };
}

let Agent, createTool;
async function loadPackage() {
  // BENCH_PKG points at another build of the package (e.g. one that kept wasm names, for profiling).
  const dir = process.env.BENCH_PKG ? pathToFileURL(path.resolve(process.env.BENCH_PKG) + '/') : new URL('../pkg/', import.meta.url);
  ({ Agent, createTool } = await import(new URL('index.node.js', dir).href));
  // The entry initialised the wasm already; a second initSync returns that instance's exports.
  const { initSync } = await import(new URL('wasm_agent.js', dir).href);
  wasmMemory = initSync(undefined).memory;
}

function newAgent() {
  // api: 'chat': the same wire protocol as the hand-written baseline reads.
  return new Agent({ id: 'bench', model: { id: `openai/deltas:${n}`, url: serverUrl, apiKey: 'bench', api: 'chat' } });
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
    sample(chunks);
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
      sample(chunks);
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

/** (d) One tool step, then N deltas: an Agent with the `lookup` tool, fullStream counting text-deltas. */
async function tool() {
  toolCalls = [];
  const lookup = createTool({ ...LOOKUP, execute: lookupExecute });
  const agent = new Agent({
    id: 'bench',
    model: { id: `openai/tool-then-deltas:${n}`, url: serverUrl, apiKey: 'bench', api: 'chat' },
    tools: { lookup },
  });
  const t0 = performance.now();
  let firstChunkMs = -1;
  let toolCallMs = -1;
  const out = await agent.stream('go');
  let text = '';
  let chunks = 0;
  let toolCallChunks = 0;
  let toolResultChunks = 0;
  let finished = false;
  let error;
  for await (const chunk of out.fullStream) {
    if (chunk.type === 'text-delta') {
      if (firstChunkMs < 0) firstChunkMs = performance.now() - t0;
      text += chunk.payload.text;
      chunks++;
    } else if (chunk.type === 'tool-call') {
      if (toolCallMs < 0) toolCallMs = performance.now() - t0;
      toolCallChunks++;
    } else if (chunk.type === 'tool-result') {
      toolResultChunks++;
    } else if (chunk.type === 'finish') {
      finished = true;
    } else if (chunk.type === 'error') {
      error = chunk.payload.error;
    }
  }
  const totalMs = performance.now() - t0;
  if (error) throw new Error(`tool: error chunk: ${JSON.stringify(error)}`);
  if (!finished) throw new Error('tool: no finish chunk');
  if (toolCallChunks !== 1 || toolResultChunks !== 1) {
    throw new Error(`tool: ${toolCallChunks} tool-call and ${toolResultChunks} tool-result chunks, expected 1 each`);
  }
  if (!(toolCallMs >= 0 && toolCallMs <= firstChunkMs)) throw new Error('tool: the tool call did not come before the text');
  return { totalMs, firstChunkMs, toolCallMs, chunks, text };
}

/**
 * (e) The structured-output pair, on the same `json-deltas:N` reply: `plain-json` reads fullStream
 * with no structuredOutput; `structured` asks for it (JSON Schema, checked in Rust) and reads
 * fullStream with its `object` chunks, then awaits `object`. firstChunkMs is the first text delta.
 */
async function jsonReply() {
  const structured = mode === 'structured';
  const agent = new Agent({ id: 'bench', model: { id: `openai/json-deltas:${n}`, url: serverUrl, apiKey: 'bench', api: 'chat' } });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let firstChunkMs = -1;
  const out = await agent.stream('go', structured ? { structuredOutput: { schema: JSON_DELTAS_SCHEMA } } : {});
  let text = '';
  let chunks = 0;
  let objects = 0;
  let last;
  let finished = false;
  let error;
  for await (const chunk of out.fullStream) {
    if (chunk.type === 'text-delta') {
      if (firstChunkMs < 0) firstChunkMs = performance.now() - t0;
      text += chunk.payload.text;
      chunks++;
      sample(chunks);
    } else if (chunk.type === 'object') {
      objects++;
      last = chunk.object;
    } else if (chunk.type === 'finish') {
      finished = true;
    } else if (chunk.type === 'error') {
      error = chunk.payload.error;
    }
  }
  const object = structured ? await out.object : undefined;
  const totalMs = performance.now() - t0;
  // This process's CPU time (the server runs elsewhere): less sensitive to a loaded machine than wall time.
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  if (error) throw new Error(`${mode}: error chunk: ${JSON.stringify(error)}`);
  if (!finished) throw new Error(`${mode}: no finish chunk`);
  if (structured) {
    const want = JSON.stringify(JSON.parse(EXPECTED));
    if (JSON.stringify(object) !== want || JSON.stringify(last) !== want) throw new Error('structured: the object is not the reply');
    if (objects < (n - 1) / 2) throw new Error(`structured: only ${objects} object chunks`);
  } else if (objects !== 0) {
    throw new Error(`plain-json: ${objects} object chunks`);
  }
  return { totalMs, cpuMs, firstChunkMs, chunks, text, objects };
}

/**
 * (f) The tracing pair, on the same `deltas:N` reply read through fullStream: `untraced` has no
 * exporter; `traced` has one in-process exporter (counting events) on `observability`, so the run
 * builds and exports its spans.
 */
async function tracedReply() {
  const traced = mode === 'traced';
  let events = 0;
  const observability = traced ? { exporters: [{ exportTracingEvent: () => void events++ }] } : undefined;
  const agent = new Agent({ id: 'bench', model: { id: `openai/deltas:${n}`, url: serverUrl, apiKey: 'bench', api: 'chat' }, observability });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let firstChunkMs = -1;
  const out = await agent.stream('go');
  let text = '';
  let chunks = 0;
  let finished = false;
  for await (const chunk of out.fullStream) {
    if (chunk.type === 'text-delta') {
      if (firstChunkMs < 0) firstChunkMs = performance.now() - t0;
      text += chunk.payload.text;
      chunks++;
      sample(chunks);
    } else if (chunk.type === 'finish') {
      finished = true;
    }
  }
  const totalMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (!finished) throw new Error(`${mode}: no finish chunk`);
  // agent_run, model_generation, model_step: started and ended.
  if (traced ? events !== 6 : out.traceId !== undefined) throw new Error(`${mode}: ${events} span events, traceId ${out.traceId}`);
  return { totalMs, cpuMs: (cpu.user + cpu.system) / 1000, firstChunkMs, chunks, text, spanEvents: events };
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
  if (mode === 'tool' || mode === 'baseline-tool') {
    if (toolCalls.length !== 1) problems.push(`the tool ran ${toolCalls.length} times, expected once`);
    else if (JSON.stringify(toolCalls[0]) !== JSON.stringify(LOOKUP_ARGS)) problems.push(`the tool got ${JSON.stringify(toolCalls[0])}`);
  }
  if (problems.length) throw new Error(`${mode} ${label} run is wrong: ${problems.join('; ')}`);
}

const workloads = { baseline, textStream, fullStream, 'baseline-tool': baselineTool, tool, 'plain-json': jsonReply, structured: jsonReply, untraced: tracedReply, traced: tracedReply };

try {
  if (mode !== 'baseline' && mode !== 'baseline-tool') await loadPackage();
  const run = workloads[mode];
  const warm = MEM ? null : await run();
  if (warm) check('warm-up', warm);
  sampleNow();
  const measured = await run();
  sampleNow();
  check('measured', measured);
  const result = {
    mode,
    n,
    totalMs: measured.totalMs,
    firstChunkMs: measured.firstChunkMs,
    ...(measured.toolCallMs === undefined ? {} : { toolCallMs: measured.toolCallMs }),
    chunks: measured.chunks,
    ...(measured.objects === undefined ? {} : { objects: measured.objects }),
    ...(measured.cpuMs === undefined ? {} : { cpuMs: measured.cpuMs }),
    ...(measured.spanEvents === undefined ? {} : { spanEvents: measured.spanEvents }),
    textLength: measured.text.length,
    maxRssKB: process.resourceUsage().maxRSS,
    ...(warm ? { warmup: { totalMs: warm.totalMs, firstChunkMs: warm.firstChunkMs } } : {}),
    ...(MEM
      ? {
          memory: {
            peakRssMB: process.resourceUsage().maxRSS / 1024,
            peakWasmMB: wasmMemory ? peaks.wasm / MB : null,
            peakHeapUsedMB: peaks.heapUsed / MB,
            peakExternalMB: peaks.external / MB,
            peakArrayBuffersMB: peaks.arrayBuffers / MB,
          },
        }
      : {}),
  };
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
  process.stderr.write(`worker ${mode}: ${err?.stack ?? err}\n`);
  process.exitCode = 1;
}
