// wasm-agent/client: the page side of an agent that runs in a Worker (SPEC §21.1). Loads no
// wasm: `connectAgent(worker, 'chat', { tools })` talks to `serveAgents({ chat: agent })` there.
//
// Protocol (every message has `wa: 1`). Page → worker: hello (until the worker answers hi,
// with the name of a Web Lock it holds while it lives), run { id, agent, method, args,
// callbacks, tools, aborted? }, call { id, agent, method, args }, abort { id, reason },
// cancel { id }, tool-ret { id, call, ok, value | error }, unwatch { id }. Worker → page: one
// batch { items } per burst, items being hi, ret { id, ok, value | error }, chunk { id, chunk },
// end { id, error? }, done { id, values, full }, cb { id, name, arg }, tool { id, call, name,
// input, toolCallId }, tool-abort { id, call }, event { id, event }.
import { TAG, toWire, fromWire, post } from './wire.js';

const CALLBACKS = ['onChunk', 'onFinish', 'onStepFinish', 'onError', 'onAbort'];
const FIELDS = ['text', 'reasoningText', 'finishReason', 'usage', 'totalUsage', 'toolCalls', 'toolResults', 'steps', 'object', 'warnings', 'response'];
const S = Symbol('run');
const links = new WeakMap();

function stopped() {
  const err = new Error('the agent worker stopped');
  err.name = 'AbortError';
  return err;
}

/** The connection to one worker or port, shared by every connectAgent on it. */
function link(target) {
  let l = links.get(target);
  if (l) return l;
  const port = typeof target.port?.postMessage === 'function' ? target.port : target;
  const waiting = new Map(); // request id → { resolve, reject } or a run's state
  let queue = [];
  let dead = null;
  let ids = 0;
  const send = (msg) => {
    msg.wa = TAG;
    if (dead) return;
    if (queue) queue.push(msg);
    else post(port, msg);
  };
  const die = () => {
    if (dead) return;
    dead = stopped();
    clearInterval(hello);
    for (const w of waiting.values()) w.die(dead);
    waiting.clear();
  };
  const onItem = (m) => {
    if (m.t === 'hi') {
      if (!queue) return;
      clearInterval(hello);
      const q = queue;
      queue = null;
      for (const msg of q) post(port, msg);
      if (m.lock) globalThis.navigator?.locks?.request(m.lock, () => die());
      return;
    }
    const w = waiting.get(m.id);
    if (w) w.on(m);
  };
  port.addEventListener('message', (e) => {
    const d = e.data;
    if (d?.wa === TAG && d.t === 'batch') for (const m of d.items) onItem(m);
  });
  port.addEventListener('close', die);
  port.start?.();
  // A dedicated Worker that fails to load or crashes before it answers.
  if (port === target && typeof target.terminate === 'function') target.addEventListener('error', () => queue && die());
  const hi = () => post(port, { wa: TAG, t: 'hello' });
  const hello = setInterval(hi, 100);
  hi();
  l = {
    dead: () => dead,
    id: () => `${++ids}`,
    send,
    add: (id, w) => (dead ? w.die(dead) : waiting.set(id, w)),
    drop: (id) => waiting.delete(id),
    call(agent, method, args) {
      return new Promise((resolve, reject) => {
        const id = l.id();
        l.add(id, { on: (m) => (waiting.delete(id), m.ok ? resolve(fromWire(m.value)) : reject(fromWire(m.error))), die: reject });
        send({ t: 'call', id, agent, method, args: toWire(args) });
      });
    },
  };
  links.set(target, l);
  return l;
}

/** Throws a TypeError naming the first function inside `v` (functions cannot cross). */
function noFunctions(v, path, depth = 0) {
  if (typeof v === 'function') {
    throw new TypeError(
      `${path} is a function, which cannot cross to the agent's worker: define it with the agent there (new Agent({ defaultOptions })); only ${CALLBACKS.join(', ')} run on the page`,
    );
  }
  if (v === null || typeof v !== 'object' || depth > 20) return;
  const proto = Object.getPrototypeOf(v);
  if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return;
  for (const k of Object.keys(v)) noFunctions(v[k], `${path}.${k}`, depth + 1);
}

/** A readable once, fed by `s` (chunks, or text deltas when `text`). */
function take(s, text) {
  const slot = text ? s.text : s.full;
  if (slot.created) throw new Error(`${text ? 'textStream' : 'fullStream'} can be read once: keep the stream you got from the first access`);
  slot.created = true;
  return new ReadableStream({
    start(c) {
      for (const x of slot.buf) c.enqueue(x);
      slot.buf = null;
      if (s.ended) s.endError ? c.error(s.endError) : c.close();
      else slot.ctrl = c;
    },
    cancel() {
      slot.ctrl = null;
      slot.cancelled = true;
      const live = [s.full, s.text].filter((x) => x.created && !x.cancelled);
      if (!live.length && !s.ended) s.link.send({ t: 'cancel', id: s.id });
    },
  });
}

/** The output of a run in the worker: the surface of the in-page AgentStreamOutput. */
export class WorkerStreamOutput {
  get runId() {
    return this[S].runId;
  }
  get traceId() {
    return undefined;
  }
  get fullStream() {
    return take(this[S], false);
  }
  get textStream() {
    return take(this[S], true);
  }
  [Symbol.asyncIterator]() {
    const reader = this.fullStream.getReader();
    return {
      next: () => reader.read(),
      return: async () => (reader.cancel(), { done: true, value: undefined }),
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }
  getFullOutput() {
    return settled(this[S], 'full');
  }
  async consumeStream() {
    const s = this[S];
    if (s.full.created) return void (await settled(s, 'full').catch(() => {}));
    const reader = this.fullStream.getReader();
    while (!(await reader.read()).done);
  }
}
for (const f of FIELDS) {
  Object.defineProperty(WorkerStreamOutput.prototype, f, {
    get() {
      return settled(this[S], f);
    },
  });
}

function settled(s, field) {
  return new Promise((resolve, reject) => {
    const go = () => {
      const r = field === 'full' ? s.results.full : s.results.values[field];
      r.ok ? resolve(fromWire(r.value)) : reject(fromWire(r.error));
    };
    s.results ? go() : s.waiters.push(go);
  });
}

/** Starts `method` in the worker; resolves to its output once the worker has started it. */
function startRun(l, agent, tools, method, args, at) {
  return new Promise((resolve, reject) => {
    const given = args[at];
    if (given !== undefined && given !== null && typeof given !== 'object') throw new TypeError('options: expected an object or undefined');
    const data = {};
    const callbacks = {};
    for (const [k, v] of Object.entries(given ?? {})) {
      if (k === 'abortSignal' || v === undefined) continue;
      if (CALLBACKS.includes(k)) {
        if (typeof v !== 'function') throw new TypeError(`options.${k}: expected a function`);
        callbacks[k] = v;
      } else {
        noFunctions(v, `options.${k}`);
        data[k] = v;
      }
    }
    const signal = given?.abortSignal;
    const id = l.id();
    const acs = new Map();
    const s = {
      id,
      link: l,
      runId: undefined,
      full: { buf: [] },
      text: { buf: [] },
      ended: false,
      results: null,
      waiters: [],
    };
    const onAbort = () => l.send({ t: 'abort', id, reason: toWire(signal.reason) });
    const finish = (err) => {
      if (s.ended) return;
      s.ended = true;
      s.endError = err;
      for (const slot of [s.full, s.text]) {
        slot.ctrl && (err ? slot.ctrl.error(err) : slot.ctrl.close());
        slot.ctrl = null;
      }
      for (const ac of acs.values()) ac.abort(err ?? new Error('the run ended'));
      signal?.removeEventListener?.('abort', onAbort);
    };
    const push = (chunk) => {
      for (const [slot, x] of [[s.full, chunk], [s.text, chunk.type === 'text-delta' ? chunk.payload?.text : undefined]]) {
        if (x === undefined || slot.cancelled) continue;
        slot.ctrl ? slot.ctrl.enqueue(x) : slot.buf?.push(x);
      }
    };
    const results = (r) => {
      s.results = r;
      for (const go of s.waiters.splice(0)) go();
    };
    const out = new WorkerStreamOutput();
    Object.defineProperty(out, S, { value: s });
    l.add(id, {
      on(m) {
        switch (m.t) {
          case 'ret':
            if (!m.ok) return l.drop(id), reject(fromWire(m.error));
            s.runId = m.value.runId;
            return resolve(out);
          case 'chunk':
            // (The worker sends text deltas as they are: they hold no error.)
            return push(m.chunk.type === 'text-delta' ? m.chunk : fromWire(m.chunk));
          case 'end':
            finish(m.error && fromWire(m.error));
            return s.results && l.drop(id);
          case 'done':
            results(m);
            return s.ended && l.drop(id);
          case 'cb':
            try {
              const r = callbacks[m.name]?.(fromWire(m.arg));
              r?.catch?.((e) => console.error(e));
            } catch (e) {
              console.error(e);
            }
            return;
          case 'tool': {
            const ac = new AbortController();
            acs.set(m.call, ac);
            const reply = (r) => (acs.delete(m.call), l.send({ t: 'tool-ret', id, call: m.call, ...r }));
            Promise.resolve()
              .then(() => tools[m.name].execute(fromWire(m.input), { toolCallId: m.toolCallId, runId: s.runId, abortSignal: ac.signal }))
              .then(
                (value) => reply({ ok: true, value: toWire(value) }),
                (error) => reply({ ok: false, error: toWire(error) }),
              );
            return;
          }
          case 'tool-abort':
            return acs.get(m.call)?.abort(new Error('the tool call was aborted'));
        }
      },
      die(err) {
        if (s.runId === undefined) return reject(err);
        push({ type: 'error', runId: s.runId, from: 'AGENT', payload: { error: { name: err.name, message: err.message } } });
        finish();
        const r = { ok: false, error: toWire(err) };
        results({ values: Object.fromEntries(FIELDS.map((f) => [f, r])), full: r });
      },
    });
    const msg = { t: 'run', id, agent, method, args: toWire(args.map((a, i) => (i === at ? data : a))), callbacks: Object.keys(callbacks), tools: Object.keys(tools) };
    if (signal?.aborted) msg.aborted = toWire(signal.reason);
    else signal?.addEventListener?.('abort', onAbort, { once: true });
    l.send(msg);
  });
}

/**
 * The agent `name` served by `serveAgents` in `workerOrPort` (a Worker, a SharedWorker or a
 * MessagePort). `tools`: page tools ({ name: { execute } }) for the agent's clientTools.
 */
export function connectAgent(workerOrPort, name, options) {
  if (typeof workerOrPort?.postMessage !== 'function' && typeof workerOrPort?.port?.postMessage !== 'function') {
    throw new TypeError('connectAgent(workerOrPort): expected a Worker, a SharedWorker or a MessagePort');
  }
  if (typeof name !== 'string') throw new TypeError("connectAgent(workerOrPort, name): name must be the agent's name given to serveAgents, a string");
  const tools = options?.tools ?? {};
  for (const [k, t] of Object.entries(tools)) {
    if (typeof t?.execute !== 'function') throw new TypeError(`connectAgent(…, { tools }).tools.${k}.execute: expected a function (input, context) => result`);
  }
  const l = link(workerOrPort);
  const run = (method, at) => (...args) => startRun(l, name, tools, method, args, at);
  const call = (method) => (...args) => l.call(name, method, args);
  const memory = {};
  for (const m of ['listThreads', 'getThreadById', 'listMessages', 'updateThread', 'deleteThread']) memory[m] = call(`memory.${m}`);
  /** Resolves to `unwatch()` once the worker's memory watches (SPEC §21.2). */
  memory.watch = (filter, listener) =>
    new Promise((resolve, reject) => {
      if (typeof listener !== 'function') throw new TypeError('memory.watch(filter, listener): listener must be a function');
      const id = l.id();
      const unwatch = () => (l.drop(id), l.send({ t: 'unwatch', id }));
      l.add(id, { on: (m) => (m.t === 'event' ? listener(fromWire(m.event)) : m.ok ? resolve(unwatch) : (l.drop(id), reject(fromWire(m.error)))), die: reject });
      l.send({ t: 'call', id, agent: name, method: 'memory.watch', args: toWire([filter]) });
    });
  return {
    name,
    stream: run('stream', 1),
    approveToolCall: run('approveToolCall', 0),
    declineToolCall: run('declineToolCall', 0),
    resumeStream: run('resumeStream', 1),
    cancelBackgroundTask: call('cancelBackgroundTask'),
    listBackgroundTasks: call('listBackgroundTasks'),
    memory,
  };
}
