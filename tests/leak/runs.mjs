// Sequential runs of one Agent for the leak test (tests/leak/) and `bench/run.mjs --leak`: after
// every `every` runs, a full GC, then the wasm linear memory and `process.memoryUsage().external`
// are sampled. Needs `gc` (node --expose-gc). Not a test file itself.
//
// Configurations: memory off/on (one Memory with an InMemoryStore; each run a thread of its own,
// deleted after the run, so the store itself does not grow) and tools off/on (one tool call, then
// the text quoting its result). Every run reads fullStream to its end and checks its text.

import { setImmediate as tick } from 'node:timers/promises';

export const CONFIGS = [
  { memory: false, tools: false },
  { memory: true, tools: false },
  { memory: false, tools: true },
  { memory: true, tools: true },
];

export const configName = (c) => `memory ${c.memory ? 'on' : 'off'}, tools ${c.tools ? 'on' : 'off'}`;

/** The package, as the tests and the bench load it, and its wasm memory. */
export async function loadPackage(dir = new URL('../../pkg/', import.meta.url)) {
  const pkg = await import(new URL('index.node.js', dir).href);
  // The entry initialised the wasm already; a second initSync returns that instance's exports.
  const { initSync } = await import(new URL('wasm_agent.js', dir).href);
  return { ...pkg, wasmMemory: initSync(undefined).memory };
}

/** Collects garbage until FinalizationRegistry callbacks (which free wasm-side objects) had their turn. */
export async function fullGc() {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await tick();
  }
}

/**
 * Runs `runs` streams in sequence with one Agent; returns `[{ run, wasmBytes, externalBytes }]`,
 * one sample every `every` runs (after a GC).
 */
export async function sequentialRuns(pkg, url, { memory, tools }, { runs, every, deltas = 2000 }) {
  if (typeof globalThis.gc !== 'function') throw new Error('run node with --expose-gc');
  const { Agent, Memory, InMemoryStore, createTool } = pkg;
  const mem = memory ? new Memory({ storage: new InMemoryStore() }) : undefined;
  let called = 0;
  const lookup = createTool({
    id: 'lookup',
    description: 'Looks something up',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    execute: async () => {
      called++;
      return { ok: true };
    },
  });
  const agent = new Agent({
    id: 'leak',
    model: { id: `openai/${tools ? 'tool-call' : `deltas:${deltas}`}`, url, apiKey: 'leak', api: 'chat' },
    ...(tools ? { tools: { lookup } } : {}),
    ...(mem ? { memory: mem } : {}),
  });
  const samples = [];
  for (let run = 1; run <= runs; run++) {
    const thread = `leak-${run}`;
    const out = await agent.stream('go', mem ? { memory: { thread, resource: 'leak' } } : {});
    let text = '';
    for await (const chunk of out.fullStream) {
      if (chunk.type === 'text-delta') text += chunk.payload.text;
      else if (chunk.type === 'error') throw new Error(`run ${run}: ${JSON.stringify(chunk.payload.error)}`);
    }
    if (text !== (await out.text) || text === '') throw new Error(`run ${run}: the text read (${text.length} chars) is not out.text`);
    if (tools && called !== run) throw new Error(`run ${run}: the tool ran ${called} times`);
    if (mem) await mem.deleteThread(thread);
    if (run % every === 0) {
      await fullGc();
      samples.push({ run, wasmBytes: pkg.wasmMemory.buffer.byteLength, externalBytes: process.memoryUsage().external });
    }
  }
  return samples;
}
