// serveAgents: the worker side of `wasm-agent/client` (SPEC §21.1). Runs the agents of this
// worker for pages that connect with connectAgent(); the protocol is in client.js.
import { RequestContext } from './api.js';
import { TAG, toWire, fromWire, post } from './wire.js';

// The methods whose result is a run (their options are at `at`), and the plain calls.
const RUNS = { stream: 1, approveToolCall: 0, declineToolCall: 0, resumeStream: 1 };
const CALLS = ['cancelBackgroundTask', 'listBackgroundTasks'];
const MEMORY_CALLS = ['listThreads', 'getThreadById', 'listMessages', 'updateThread', 'deleteThread', 'watch'];
const BATCH = 200;
const FIELDS = ['text', 'reasoningText', 'finishReason', 'usage', 'totalUsage', 'toolCalls', 'toolResults', 'steps', 'object', 'warnings', 'response'];

// In a SharedWorker, pages connect while the entry module still awaits the wasm (before the
// worker script can call serveAgents): their ports wait here, from this module's first run.
const g = globalThis;
const inShared = typeof g.SharedWorkerGlobalScope === 'function' && g instanceof g.SharedWorkerGlobalScope;
const waitingPorts = [];
const portServers = new Set();
if (inShared) {
  g.addEventListener('connect', (e) => {
    for (const p of /** @type {MessageEvent} */ (e).ports) portServers.size ? portServers.forEach((serve) => serve(p)) : waitingPorts.push(p);
  });
}

/**
 * Serves `agents` ({ name: agent }) on `target`: a MessagePort, or by default this worker's
 * global scope (a dedicated Worker's `self`, or each port a SharedWorker is connected by).
 */
export function serveAgents(agents, target) {
  if (agents === null || typeof agents !== 'object') throw new TypeError('serveAgents(agents): expected an object of agents by name, like { chat: agent }');
  const sessions = new Set();
  const shared = target === undefined && inShared;
  const onPort = (p) => sessions.add(session(agents, p, true));
  if (shared) {
    portServers.add(onPort);
    waitingPorts.splice(0).forEach(onPort);
  } else {
    const port = target ?? g;
    if (typeof port?.postMessage !== 'function' || typeof port.addEventListener !== 'function') {
      throw new TypeError('serveAgents(agents, target): target must be a MessagePort or a worker scope (with postMessage and addEventListener)');
    }
    sessions.add(session(agents, port, port !== g));
  }
  return {
    close() {
      portServers.delete(onPort);
      for (const s of sessions) s.close();
      sessions.clear();
    },
  };
}

/** One connected page: its runs by request id. */
function session(agents, port, start) {
  const runs = new Map();
  const watches = new Map();
  let outbox = null;
  // One postMessage per burst: the batch goes when a few microtasks pass with nothing new (a
  // reader gets each buffered chunk a microtask or two after the last), or at BATCH items.
  let seen = 0;
  let idle = 0;
  const flush = () => {
    if (outbox.length !== seen) [seen, idle] = [outbox.length, 0];
    if (++idle < 4 && seen < BATCH) return queueMicrotask(flush);
    const items = outbox;
    [outbox, seen, idle] = [null, 0, 0];
    post(port, { wa: TAG, t: 'batch', items });
  };
  const send = (msg) => {
    if (!outbox) {
      outbox = [];
      queueMicrotask(flush);
    }
    outbox.push(msg);
  };
  const reply = (id, p) =>
    Promise.resolve()
      .then(p)
      .then(
        (value) => send({ t: 'ret', id, ok: true, value: toWire(value) }),
        (error) => send({ t: 'ret', id, ok: false, error: toWire(error) }),
      );
  const agentOf = (name) => {
    const agent = Object.prototype.hasOwnProperty.call(agents, name) ? agents[name] : undefined;
    if (!agent) throw new Error(`serveAgents: no agent named '${name}' (this worker serves ${Object.keys(agents).join(', ') || 'none'})`);
    return agent;
  };
  const onMessage = (e) => {
    const m = e.data;
    if (!m || m.wa !== TAG) return;
    if (m.t === 'hello') return hello();
    const run = runs.get(m.id);
    switch (m.t) {
      case 'run':
        return startRun(m);
      case 'call':
        return reply(m.id, () => call(m));
      case 'abort':
        return run?.ac.abort(fromWire(m.reason));
      case 'cancel':
        return run?.reader?.cancel().catch(() => {});
      case 'tool-ret':
        return run?.tools.get(m.call)?.(m);
      case 'unwatch':
        watches.get(m.id)?.();
        return watches.delete(m.id);
    }
  };
  // A Web Lock held while this session lives tells the page when the worker is gone; every
  // hello is answered once it is held.
  let hi;
  const hello = () => {
    hi ??= new Promise((resolve) => {
      const locks = globalThis.navigator?.locks;
      if (!locks) return resolve({ t: 'hi' });
      const lock = `wasm-agent-worker-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
      locks
        .request(lock, () => {
          resolve({ t: 'hi', lock });
          return new Promise((r) => (release = r));
        })
        .catch(() => resolve({ t: 'hi' }));
    });
    hi.then(send);
  };
  /** @type {(value?: unknown) => void} */
  let release = () => {};
  const call = (m) => {
    const agent = agentOf(m.agent);
    const [scope, name] = m.method.split('.');
    if (scope === 'memory') {
      if (!MEMORY_CALLS.includes(name)) throw new TypeError(`memory.${name} is not served to the page`);
      const memory = agent.__memory?.();
      if (!memory) throw new Error(`agent '${m.agent}' has no memory (new Agent({ memory: new Memory(…) }))`);
      if (name === 'watch') {
        // memory.watch (SPEC §21.2) where this build's Memory has it: events go to the page.
        if (typeof memory.watch !== 'function') throw new Error("memory.watch is not available: this worker's wasm-agent Memory has no watch()");
        const [filter] = fromWire(m.args);
        watches.set(m.id, memory.watch(filter, (event) => send({ t: 'event', id: m.id, event: toWire(event) })));
        return;
      }
      if (typeof memory[name] !== 'function') throw new TypeError(`memory.${name} is not available on this agent's memory`);
      return memory[name](...fromWire(m.args));
    }
    if (!CALLS.includes(scope)) throw new TypeError(`${scope} is not served to the page`);
    return agent[scope](...fromWire(m.args));
  };
  const startRun = async (m) => {
    const ac = new AbortController();
    const run = { ac, tools: new Map(), reader: null };
    runs.set(m.id, run);
    let out;
    try {
      const agent = agentOf(m.agent);
      const args = fromWire(m.args);
      const at = RUNS[m.method];
      if (at === undefined) throw new TypeError(`${m.method} is not served to the page`);
      args[at] = runOptions(agent, m, args[at], run, send);
      if (m.aborted) ac.abort(fromWire(m.aborted));
      out = await agent[m.method](...args);
    } catch (error) {
      runs.delete(m.id);
      return send({ t: 'ret', id: m.id, ok: false, error: toWire(error) });
    }
    send({ t: 'ret', id: m.id, ok: true, value: { runId: out.runId } });
    // The promises settle apart from the stream (with untilIdle they follow the first turn).
    const results = Promise.allSettled([...FIELDS.map((f) => out[f]), out.getFullOutput()]).then((all) => {
      const wire = (r) => (r.status === 'fulfilled' ? { ok: true, value: toWire(r.value) } : { ok: false, error: toWire(r.reason) });
      send({ t: 'done', id: m.id, values: Object.fromEntries(FIELDS.map((f, i) => [f, wire(all[i])])), full: wire(all[FIELDS.length]) });
    });
    const reader = (run.reader = out.fullStream.getReader());
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        send({ t: 'chunk', id: m.id, chunk: value.type === 'text-delta' ? value : toWire(value) });
      }
      send({ t: 'end', id: m.id });
    } catch (error) {
      send({ t: 'end', id: m.id, error: toWire(error) });
    }
    await results;
    runs.delete(m.id);
  };
  port.addEventListener('message', onMessage);
  if (start) port.start?.();
  return {
    close() {
      port.removeEventListener('message', onMessage);
      for (const run of runs.values()) run.ac.abort(new Error('serveAgents was closed'));
      runs.clear();
      for (const unwatch of watches.values()) unwatch?.();
      watches.clear();
      release();
    },
  };
}

/** The run's options in the worker: the page's data, with its callbacks, signal and tools wired back. */
function runOptions(agent, m, given, run, send) {
  const options = given && typeof given === 'object' ? { ...given } : {};
  for (const name of m.callbacks ?? []) {
    options[name] = (arg) => send({ t: 'cb', id: m.id, name, arg: toWire(arg) });
  }
  options.abortSignal = run.ac.signal;
  if (options.requestContext instanceof Map && !(options.requestContext instanceof RequestContext)) {
    options.requestContext = new RequestContext(options.requestContext);
  }
  const offered = m.tools ?? [];
  if (offered.length) {
    const declared = options.clientTools ?? agent.__clientTools?.() ?? {};
    const rest = { ...declared };
    const page = {};
    let calls = 0;
    for (const name of offered) {
      if (!declared[name]) continue;
      delete rest[name];
      page[name] = {
        ...declared[name],
        execute: (input, ctx) =>
          new Promise((resolve, reject) => {
            const call = ++calls;
            const signal = ctx?.abortSignal;
            const stop = () => send({ t: 'tool-abort', id: m.id, call });
            signal?.addEventListener('abort', stop, { once: true });
            run.tools.set(call, (r) => {
              run.tools.delete(call);
              signal?.removeEventListener('abort', stop);
              if (r.ok) resolve(fromWire(r.value));
              else reject(fromWire(r.error));
            });
            send({ t: 'tool', id: m.id, call, name, input: toWire(input), toolCallId: ctx?.toolCallId });
          }),
      };
    }
    options.clientTools = rest;
    options.toolsets = { ...options.toolsets, page };
  }
  return options;
}
