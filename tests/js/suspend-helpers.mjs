// Shared helpers of the suspend/resume tests (tests/js/suspend-resume.test.mjs and the child
// process it starts). Not a test file itself.

import fs from 'node:fs';

/**
 * A user storage object with every §7 and §19.4 method, kept in a JSON file: each call reads the
 * file and each write rewrites it, so another process on the same file sees what this one wrote.
 * `updateRun` is a compare-and-set on `expectedStatus`. The chunk log (SPEC §19.8) is kept by
 * run id and `seq`.
 */
export function fileStorage(file) {
  const load = () => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : { threads: {}, messages: {}, resources: {}, runs: {} });
  const write = (fn) => {
    const db = load();
    const out = fn(db);
    fs.writeFileSync(file, JSON.stringify(db));
    return out;
  };
  const byTime = (a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1);
  return {
    getThreadById: ({ threadId }) => load().threads[threadId] ?? null,
    saveThread: ({ thread }) => write((db) => ((db.threads[thread.id] = thread), thread)),
    deleteThread: ({ threadId }) =>
      write((db) => {
        delete db.threads[threadId];
        for (const [id, m] of Object.entries(db.messages)) if (m.threadId === threadId) delete db.messages[id];
      }),
    listThreads: ({ resourceId }) => Object.values(load().threads).filter((t) => t.resourceId === resourceId),
    listMessages: ({ threadId, last, before }) => {
      let list = Object.values(load().messages).filter((m) => m.threadId === threadId).sort(byTime);
      if (before !== undefined) list = list.filter((m) => m.createdAt < before);
      if (last !== undefined) list = list.slice(Math.max(0, list.length - last));
      return list;
    },
    saveMessages: ({ messages }) => write((db) => void messages.forEach((m) => (db.messages[m.id] = m))),
    deleteMessages: ({ messageIds }) => write((db) => void messageIds.forEach((id) => delete db.messages[id])),
    getResource: ({ resourceId }) => load().resources[resourceId] ?? null,
    saveResource: ({ resource }) => write((db) => void (db.resources[resource.id] = resource)),
    saveRun: ({ run }) => write((db) => void (db.runs[run.runId] = run)),
    getRun: ({ runId }) => load().runs[runId] ?? null,
    updateRun: ({ runId, patch, expectedStatus }) =>
      write((db) => {
        const run = db.runs[runId];
        if (!run || (expectedStatus !== undefined && run.status !== expectedStatus)) return null;
        Object.assign(run, patch, { runId });
        return run;
      }),
    listRuns: ({ agentId, threadId, status } = {}) =>
      Object.values(load().runs).filter(
        (r) =>
          (agentId === undefined || r.agentId === agentId) &&
          (threadId === undefined || r.threadId === threadId) &&
          (status === undefined || [status].flat().includes(r.status)),
      ),
    deleteRun: ({ runId }) => write((db) => void delete db.runs[runId]),
    appendRunChunks: ({ runId, chunks }) =>
      write((db) => {
        const log = ((db.runChunks ??= {})[runId] ??= {});
        for (const c of chunks) log[c.seq] = c;
      }),
    listRunChunks: ({ runId, after = 0, limit }) => {
      const list = Object.values(load().runChunks?.[runId] ?? {}).filter((c) => c.seq > after).sort((a, b) => a.seq - b.seq);
      return limit === undefined ? list : list.slice(0, limit);
    },
    deleteRunChunks: ({ runId }) => write((db) => void delete db.runChunks?.[runId]),
  };
}
