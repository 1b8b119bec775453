// Conversation memory in Durable Object storage:
//
//   import { Memory } from 'wasm-agent'
//   import { DurableObjectStore } from 'wasm-agent/durable-object-store'
//   const memory = new Memory({ storage: new DurableObjectStore(this.state.storage) })
//
// Plain JavaScript with no imports: it only calls the Durable Object storage API (get, put,
// delete, list), so it works with both the key-value and the SQLite-backed storage.
//
// Keys (ids are URI-encoded, so a ':' in an id cannot run into the next field):
//   thread:<threadId>                          → the thread
//   rthread:<resourceId>:<threadId>            → threadId (a resource's threads)
//   msg:<threadId>:<createdAt>:<messageId>     → the message (ISO times sort as text, so a
//                                                 thread's messages list in time order)
//   msgid:<messageId>                          → that message's msg: key
//   resource:<resourceId>                      → the resource
//   run:<runId>                                → a suspended run's record (SPEC §19.4)
//   runchunk:<runId>:<seq, 10 digits>          → a chunk of a reconnectable run's log (SPEC §19.8)
//   wfrun:<workflowName>:<runId>               → a workflow run's snapshot record (SPEC §20.5):
//                                                 { workflowName, runId, resourceId?, snapshot,
//                                                 createdAt, updatedAt } (times in ms)
//   score:<createdAt>:<scoreId>                → a scorer's row (SPEC §14.2), in time order
//   vec:<threadId>:<messageId>                 → a message's vector record (SPEC §21.3), its
//                                                 vector a Float32Array
//   vecid:<messageId>                          → that record's vec: key
// `listMessages({ last: n })` is one reverse `list` with `limit: n`: it reads n records, not
// the whole thread. Each message is one value: Cloudflare caps a value at 128 KiB on
// key-value-backed objects (2 MB on SQLite-backed ones), which a large inline file can exceed.

/** Keys per get/put/delete call: the Durable Object storage limit. */
const BATCH = 128;

const enc = encodeURIComponent;
const threadKey = (threadId) => `thread:${enc(threadId)}`;
const resourceThreadsPrefix = (resourceId) => `rthread:${enc(resourceId)}:`;
const messagesPrefix = (threadId) => `msg:${enc(threadId)}:`;
const messageKey = (m) => `${messagesPrefix(m.threadId)}${m.createdAt}:${enc(m.id)}`;
const messageIdKey = (id) => `msgid:${enc(id)}`;
const resourceKey = (resourceId) => `resource:${enc(resourceId)}`;
const runKey = (runId) => `run:${enc(runId)}`;
const runChunksPrefix = (runId) => `runchunk:${enc(runId)}:`;
const runChunkKey = (runId, seq) => `${runChunksPrefix(runId)}${String(seq).padStart(10, '0')}`;
const workflowPrefix = (workflowName) => `wfrun:${enc(workflowName)}:`;
const workflowRunKey = (workflowName, runId) => `${workflowPrefix(workflowName)}${enc(runId)}`;
const scoreKey = (row) => `score:${row.createdAt}:${enc(row.id)}`;

/** A v4 UUID (crypto.randomUUID is in every Workers runtime and in Node). */
const newId = () => crypto.randomUUID();
const vectorsPrefix = (threadId) => `vec:${enc(threadId)}:`;
const vectorKey = (r) => `${vectorsPrefix(r.threadId)}${enc(r.id)}`;
const vectorIdKey = (id) => `vecid:${enc(id)}`;

/** The dot product (records are stored normalised, so it is their cosine with a unit query). */
function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** Splits a list into runs of at most `BATCH`. */
function batches(items) {
  const out = [];
  for (let i = 0; i < items.length; i += BATCH) out.push(items.slice(i, i + BATCH));
  return out;
}

/**
 * A `StorageAdapter` (see the package's types) over a Durable Object's `state.storage`.
 * Every method takes one object argument and returns a promise.
 */
export class DurableObjectStore {
  /**
   * @param {{ get: Function, put: Function, delete: Function, list: Function }} storage
   *   a Durable Object's `state.storage` (or `ctx.storage`)
   */
  constructor(storage) {
    for (const method of ['get', 'put', 'delete', 'list']) {
      if (typeof storage?.[method] !== 'function') {
        throw new TypeError(`new DurableObjectStore(storage): expected a Durable Object's state.storage, which has ${method}()`);
      }
    }
    /** @readonly */
    this.storage = storage;
  }

  /** @param {{ threadId: string }} args */
  async getThreadById({ threadId }) {
    return (await this.storage.get(threadKey(threadId))) ?? null;
  }

  /** Creates or replaces the thread (and moves it in the per-resource index if its resource changed). */
  async saveThread({ thread }) {
    const old = await this.storage.get(threadKey(thread.id));
    // Writes with no await between them are committed together (write coalescing).
    const writes = [];
    if (old && old.resourceId !== thread.resourceId) {
      writes.push(this.storage.delete(resourceThreadsPrefix(old.resourceId) + enc(old.id)));
    }
    writes.push(
      this.storage.put({
        [threadKey(thread.id)]: thread,
        [resourceThreadsPrefix(thread.resourceId) + enc(thread.id)]: thread.id,
      }),
    );
    await Promise.all(writes);
  }

  /** Deletes the thread, its index entry and all its messages. */
  async deleteThread({ threadId }) {
    const prefix = messagesPrefix(threadId);
    // A page of messages is 2 keys each (the message and its id index): BATCH / 2 per page.
    for (;;) {
      const page = await this.storage.list({ prefix, limit: BATCH / 2 });
      if (page.size === 0) break;
      const keys = [];
      for (const [key, message] of page) keys.push(key, messageIdKey(message.id));
      await this.storage.delete(keys);
    }
    const thread = await this.storage.get(threadKey(threadId));
    const keys = [threadKey(threadId)];
    if (thread) keys.push(resourceThreadsPrefix(thread.resourceId) + enc(threadId));
    await this.storage.delete(keys);
  }

  /** The resource's threads, most recently updated first. */
  async listThreads({ resourceId }) {
    const index = await this.storage.list({ prefix: resourceThreadsPrefix(resourceId) });
    const threads = [];
    for (const ids of batches([...index.values()])) {
      const found = await this.storage.get(ids.map(threadKey));
      threads.push(...found.values());
    }
    return threads.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
  }

  /**
   * The thread's messages in time order. `last`: only the newest n (reads n records);
   * `before`: only those created before that ISO time.
   * @param {{ threadId: string, last?: number, before?: string }} args
   */
  async listMessages({ threadId, last, before }) {
    const prefix = messagesPrefix(threadId);
    /** @type {{ prefix: string, end?: string, reverse?: boolean, limit?: number }} */
    const options = { prefix };
    // `msg:<t>:<before>` sorts after every key with an earlier createdAt and before the keys
    // with createdAt == before (they continue with ':'), so `end` (exclusive) is "created before".
    if (before != null) options.end = prefix + before;
    if (last != null) {
      if (last <= 0) return [];
      options.reverse = true;
      options.limit = last;
    }
    const messages = [...(await this.storage.list(options)).values()];
    return last != null ? messages.reverse() : messages;
  }

  /** Creates or replaces each message by id (an old copy under another key is removed). */
  async saveMessages({ messages }) {
    // The last copy of an id wins, as with repeated puts.
    const byId = new Map(messages.map((m) => [m.id, m]));
    for (const chunk of batches([...byId.values()])) {
      const oldKeys = await this.storage.get(chunk.map((m) => messageIdKey(m.id)));
      const stale = [];
      const entries = {};
      for (const m of chunk) {
        const key = messageKey(m);
        const old = oldKeys.get(messageIdKey(m.id));
        if (old !== undefined && old !== key) stale.push(old);
        entries[key] = m;
        entries[messageIdKey(m.id)] = key;
      }
      // Two entries per message, put in runs of at most BATCH; no await between the writes,
      // so they are committed together (write coalescing).
      const writes = [];
      if (stale.length) writes.push(this.storage.delete(stale));
      for (const run of batches(Object.entries(entries))) writes.push(this.storage.put(Object.fromEntries(run)));
      await Promise.all(writes);
    }
  }

  /** @param {{ messageIds: string[] }} args */
  async deleteMessages({ messageIds }) {
    for (const ids of batches([...new Set(messageIds)])) {
      const indexKeys = ids.map(messageIdKey);
      const found = await this.storage.get(indexKeys);
      const keys = [...found.values(), ...found.keys()];
      // Their vectors go with them.
      const vectorIds = ids.map(vectorIdKey);
      const vectors = await this.storage.get(vectorIds);
      keys.push(...vectors.values(), ...vectors.keys());
      await Promise.all(batches(keys).map((run) => this.storage.delete(run)));
    }
  }

  /**
   * Creates or replaces each vector record by message id (semantic recall).
   * @param {{ records: { id: string, threadId: string, resourceId: string, vector: number[] }[] }} args
   */
  async saveVectors({ records }) {
    const byId = new Map(records.map((r) => [r.id, r]));
    for (const chunk of batches([...byId.values()])) {
      const oldKeys = await this.storage.get(chunk.map((r) => vectorIdKey(r.id)));
      const stale = [];
      const entries = {};
      for (const r of chunk) {
        const key = vectorKey(r);
        const old = oldKeys.get(vectorIdKey(r.id));
        if (old !== undefined && old !== key) stale.push(old);
        entries[key] = { id: r.id, threadId: r.threadId, resourceId: r.resourceId, vector: Float32Array.from(r.vector) };
        entries[vectorIdKey(r.id)] = key;
      }
      const writes = [];
      if (stale.length) writes.push(this.storage.delete(stale));
      for (const run of batches(Object.entries(entries))) writes.push(this.storage.put(Object.fromEntries(run)));
      await Promise.all(writes);
    }
  }

  /**
   * The `topK` records most similar to `vector` (cosine), best first, within the thread or the
   * resource's threads, at least `threshold` similar.
   * @param {{ vector: number[], topK: number, resourceId?: string, threadId?: string, threshold?: number }} args
   */
  async queryVectors({ vector, topK, resourceId, threadId, threshold }) {
    const norm = Math.sqrt(dot(vector, vector)) || 1;
    const query = Float32Array.from(vector, (x) => x / norm);
    const threadIds = threadId != null ? [threadId] : resourceId != null ? [...(await this.storage.list({ prefix: resourceThreadsPrefix(resourceId) })).values()] : null;
    const prefixes = threadIds === null ? ['vec:'] : threadIds.map(vectorsPrefix);
    const hits = [];
    for (const prefix of prefixes) {
      for (const r of (await this.storage.list({ prefix })).values()) {
        if (resourceId != null && r.resourceId !== resourceId) continue;
        if (r.vector.length !== query.length) continue;
        const score = dot(query, r.vector);
        if (threshold == null || score >= threshold) hits.push({ id: r.id, score });
      }
    }
    return hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1)).slice(0, topK);
  }

  /** Deletes a thread's vectors or the given ones. @param {{ threadId: string } | { ids: string[] }} args */
  async deleteVectors(args) {
    if (args.threadId != null) {
      for (;;) {
        const page = await this.storage.list({ prefix: vectorsPrefix(args.threadId), limit: BATCH / 2 });
        if (page.size === 0) break;
        const keys = [];
        for (const [key, r] of page) keys.push(key, vectorIdKey(r.id));
        await this.storage.delete(keys);
      }
      return;
    }
    for (const ids of batches([...new Set(args.ids ?? [])])) {
      const found = await this.storage.get(ids.map(vectorIdKey));
      const keys = [...found.values(), ...found.keys()];
      if (keys.length) await Promise.all(batches(keys).map((run) => this.storage.delete(run)));
    }
  }

  /** @param {{ resourceId: string }} args */
  async getResource({ resourceId }) {
    return (await this.storage.get(resourceKey(resourceId))) ?? null;
  }

  /** Creates or replaces the resource. */
  async saveResource({ resource }) {
    await this.storage.put(resourceKey(resource.id), resource);
  }

  /** Creates or replaces a run record. */
  async saveRun({ run }) {
    await this.storage.put(runKey(run.runId), run);
  }

  /** @param {{ runId: string }} args */
  async getRun({ runId }) {
    return (await this.storage.get(runKey(runId))) ?? null;
  }

  /**
   * A compare-and-set: the updated record, or null when it is absent or its status is not
   * `expectedStatus`. Atomic in a Durable Object: its input gate holds other events while the
   * read and the write run, with nothing else awaited in between.
   */
  async updateRun({ runId, patch, expectedStatus }) {
    const run = await this.storage.get(runKey(runId));
    if (!run || (expectedStatus !== undefined && run.status !== expectedStatus)) return null;
    const next = { ...run, ...patch, runId };
    await this.storage.put(runKey(runId), next);
    return next;
  }

  /** Runs matching every filter given (`status`: one or an array). */
  async listRuns({ agentId, threadId, resourceId, status } = {}) {
    const statuses = status === undefined ? null : [status].flat();
    const runs = [...(await this.storage.list({ prefix: 'run:' })).values()];
    return runs.filter(
      (r) =>
        (agentId === undefined || r.agentId === agentId) &&
        (threadId === undefined || r.threadId === threadId) &&
        (resourceId === undefined || r.resourceId === resourceId) &&
        (statuses === null || statuses.includes(r.status)),
    );
  }

  /** @param {{ runId: string }} args */
  async deleteRun({ runId }) {
    await this.storage.delete(runKey(runId));
  }

  /** Appends chunks (each with its `seq`) to a run's chunk log; a `seq` written again replaces its chunk. */
  async appendRunChunks({ runId, chunks }) {
    for (let i = 0; i < chunks.length; i += BATCH) {
      const entries = Object.fromEntries(chunks.slice(i, i + BATCH).map((c) => [runChunkKey(runId, c.seq), c]));
      await this.storage.put(entries);
    }
  }

  /** The logged chunks with `seq > after`, ascending, at most `limit`. */
  async listRunChunks({ runId, after = 0, limit }) {
    const start = runChunkKey(runId, after + 1);
    const found = await this.storage.list({ start, prefix: runChunksPrefix(runId), ...(limit === undefined ? {} : { limit }) });
    return [...found.values()];
  }

  /** @param {{ runId: string }} args */
  async deleteRunChunks({ runId }) {
    const keys = [...(await this.storage.list({ prefix: runChunksPrefix(runId) })).keys()];
    for (let i = 0; i < keys.length; i += BATCH) await this.storage.delete(keys.slice(i, i + BATCH));
  }

  /** Creates or replaces a workflow run's snapshot (its `createdAt` kept). */
  async persistWorkflowSnapshot({ workflowName, runId, resourceId, snapshot }) {
    const key = workflowRunKey(workflowName, runId);
    const old = await this.storage.get(key);
    const now = Date.now();
    const record = { workflowName, runId, resourceId: resourceId ?? old?.resourceId, snapshot, createdAt: old?.createdAt ?? now, updatedAt: now };
    await this.storage.put(key, record);
  }

  /** The run's snapshot, or null. */
  async loadWorkflowSnapshot({ workflowName, runId }) {
    return (await this.storage.get(workflowRunKey(workflowName, runId)))?.snapshot ?? null;
  }

  /**
   * Sets the snapshot's `status`: the updated snapshot, or undefined when the run is missing or
   * its status is not `expectedStatus` (a compare-and-set, atomic in a Durable Object: nothing
   * else is awaited between the read and the write).
   */
  async updateWorkflowState({ workflowName, runId, opts }) {
    const key = workflowRunKey(workflowName, runId);
    const record = await this.storage.get(key);
    if (!record || (opts.expectedStatus !== undefined && record.snapshot.status !== opts.expectedStatus)) return undefined;
    const snapshot = { ...record.snapshot, status: opts.status };
    await this.storage.put(key, { ...record, snapshot, updatedAt: Date.now() });
    return snapshot;
  }

  /** Runs matching every filter given, newest first, a page of them (`perPage`, `page` from 0). */
  async listWorkflowRuns({ workflowName, resourceId, status, fromDate, toDate, perPage, page } = {}) {
    const prefix = workflowName === undefined ? 'wfrun:' : workflowPrefix(workflowName);
    const ms = (d) => (d === undefined || d === null ? undefined : +d);
    const [from, to] = [ms(fromDate), ms(toDate)];
    const runs = [...(await this.storage.list({ prefix })).values()]
      .filter(
        (r) =>
          (resourceId === undefined || r.resourceId === resourceId) &&
          (status === undefined || r.snapshot?.status === status) &&
          (from === undefined || r.createdAt >= from) &&
          (to === undefined || r.createdAt <= to),
      )
      .sort((a, b) => b.createdAt - a.createdAt);
    const paged = perPage === undefined ? runs : runs.slice(perPage * (page ?? 0), perPage * ((page ?? 0) + 1));
    return { runs: paged, total: runs.length };
  }

  /** The run record `runId` (of `workflowName` when given), or null. */
  async getWorkflowRunById({ runId, workflowName }) {
    if (workflowName !== undefined) return (await this.storage.get(workflowRunKey(workflowName, runId))) ?? null;
    for (const r of (await this.storage.list({ prefix: 'wfrun:' })).values()) if (r.runId === runId) return r;
    return null;
  }

  /** Forgets the run. */
  async deleteWorkflowRunById({ workflowName, runId }) {
    await this.storage.delete(workflowRunKey(workflowName, runId));
  }

  /** Stores a scorer's row (the agent's scorers call it, SPEC §14.2): `id` and `createdAt` are added when absent. */
  async saveScore(row) {
    const now = new Date().toISOString();
    const score = { ...row, id: row?.id ?? newId(), createdAt: row?.createdAt ?? now, updatedAt: now };
    await this.storage.put(scoreKey(score), score);
    return { score };
  }

  /** Stored scores in time order, matching every filter given. */
  async listScores({ runId, scorerId, entityId, entityType, source } = {}) {
    const rows = [...(await this.storage.list({ prefix: 'score:' })).values()];
    return rows.filter(
      (r) =>
        (runId === undefined || r.runId === runId) &&
        (scorerId === undefined || r.scorerId === scorerId) &&
        (entityId === undefined || r.entityId === entityId) &&
        (entityType === undefined || r.entityType === entityType) &&
        (source === undefined || r.source === source),
    );
  }
}
