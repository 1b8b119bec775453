// The page of tests/browser/worker.test.mjs: the same runs in the page (the package) and in a
// Worker or SharedWorker (wasm-agent/client), each returning what the page saw. Query: model.
import { connectAgent } from '/pkg/client.js';

const url = new URLSearchParams(location.search).get('model');
const workerUrl = `/worker-agent.mjs?${new URLSearchParams({ model: url })}`;
let dedicated;
let shared;

/** The worker of `kind` ('dedicated' | 'shared'), started on first use. */
function workerOf(kind) {
  if (kind === 'dedicated') return (dedicated ??= new Worker(workerUrl, { type: 'module' }));
  return (shared ??= new SharedWorker(workerUrl, { type: 'module', name: 'agents' }));
}

const plain = (v) => v === undefined ? undefined : JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Error ? { name: x.name, message: x.message } : x)));

/** Reads `out` to the end: its chunks, and its text (or the error it rejects with). */
async function read(out, { stopAfter } = {}) {
  const chunks = [];
  const reader = out.fullStream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    if (stopAfter?.(value, chunks)) stopAfter = null;
  }
  const text = await out.text.then((t) => t, (e) => ({ error: plain(e) }));
  return plain({ runId: out.runId, chunks, text, finishReason: await out.finishReason.catch(() => null) });
}

/** One run of `agent` in the page (kind 'page') or in a worker. */
window.run = async (kind, agent, message, opts = {}) => {
  let remote;
  if (kind === 'page') {
    const { Agent } = await import('/pkg/index.browser.js');
    remote = new Agent({ id: `p-${agent}`, model: { id: `openai/${agent === 'slow' ? 'slow:60' : agent}`, url, apiKey: 'offline' } });
  } else {
    remote = connectAgent(workerOf(kind), agent, opts.tools ? { tools: window.pageTools } : undefined);
  }
  const ac = new AbortController();
  const seen = { onChunk: 0, onFinish: 0 };
  const out = await remote.stream(message, {
    abortSignal: ac.signal,
    onChunk: () => seen.onChunk++,
    onFinish: () => seen.onFinish++,
    ...(opts.memory ? { memory: opts.memory } : {}),
  });
  const deltas = { n: 0 };
  const result = await read(out, {
    stopAfter: (c) => {
      if (c.type !== 'text-delta' || ++deltas.n !== 2) return false;
      if (opts.abortAfter2) ac.abort('stopped by the page');
      if (opts.terminateAfter2) kind === 'dedicated' ? (dedicated.terminate(), (dedicated = undefined)) : null;
      return true;
    },
  });
  return { ...result, seen };
};

/** Page tools for the worker agent's clientTools: pickColour reads the DOM. */
window.toolCalls = [];
window.pageTools = {
  pickColour: {
    execute: (input, ctx) => {
      window.toolCalls.push({ input, aborted: ctx.abortSignal.aborted });
      return { colour: document.querySelector('#status').dataset.colour };
    },
  },
};

/** A memory call on the worker agent. */
window.memoryCall = (kind, method, arg) => connectAgent(workerOf(kind), 'echo').memory[method](arg).then(plain);

document.querySelector('#status').dataset.colour = 'teal';
document.body.dataset.ready = '1';
document.querySelector('#status').textContent = 'ready';
