// The page of tests/browser/workflow-reload.test.mjs: a workflow prepare → approve (suspends for
// resumeData) → done outside any Mastra, so its runs go to the package's default storage
// (IndexedDB in a page); and an agent whose scorer saves its rows in an IndexedDBStore.
//
// Query string: model (the model server's /v1 URL, required).

import { Agent, createScorer, createStep, createWorkflow, IndexedDBStore, Memory } from '/pkg/index.browser.js';

const url = new URLSearchParams(location.search).get('model');
if (!url) throw new Error('workflow-page: the ?model= query parameter (the model server URL) is missing');
window.prepared = 0;
window.finished = 0;

const prepare = createStep({ id: 'prepare', execute: async ({ inputData }) => { window.prepared++; return { item: inputData.item.toUpperCase() }; } });
const approve = createStep({
  id: 'approve',
  execute: async ({ inputData, resumeData, suspend }) => (resumeData ? { item: inputData.item, approved: resumeData.approved } : suspend({ ask: inputData.item })),
});
const done = createStep({ id: 'done', execute: async ({ inputData }) => { window.finished++; return { ...inputData, done: true }; } });
const wf = createWorkflow({ id: 'reload-approval' }).then(prepare).then(approve).then(done).commit();

window.start = async (item) => {
  const run = await wf.createRun({ resourceId: 'user-1' });
  const r = await run.start({ inputData: { item } });
  return { runId: run.runId, status: r.status, suspendPayload: r.suspendPayload ?? null };
};
window.list = async (filter) => {
  const { runs, total } = await wf.listWorkflowRuns(filter);
  return { total, runs: runs.map((r) => ({ runId: r.runId, status: r.snapshot?.status ?? r.status, resourceId: r.resourceId })) };
};
window.resume = async (runId, approved) => {
  try {
    const r = await (await wf.createRun({ runId })).resume({ resumeData: { approved } });
    return { status: r.status, result: r.result };
  } catch (e) {
    return { error: { name: e.name, message: e.message } };
  }
};
window.stored = async (runId) => {
  const r = await wf.getWorkflowRunById(runId);
  return r && { status: r.status, result: r.result ?? null, resourceId: r.resourceId ?? null };
};

// fetch → slow (waits for window.release(), so a page can be closed while it runs) → save.
let release;
window.release = () => release?.();
window.ran = [];
const tracked = (id, f) => createStep({ id, execute: async (ctx) => { window.ran.push(id); return f(ctx); } });
const slow = createWorkflow({ id: 'reload-slow' })
  .then(tracked('fetch', ({ inputData }) => ({ n: inputData.n * 2 })))
  .then(tracked('slow', async ({ inputData }) => { await new Promise((r) => (release = r)); return { n: inputData.n + 1 }; }))
  .then(tracked('save', ({ inputData }) => ({ saved: inputData.n })))
  .commit();
/** Starts a slow run and returns once it waits in its second step (after the snapshot of the first). */
window.startSlow = async () => {
  const run = await slow.createRun();
  window.slowResult = run.start({ inputData: { n: 5 } });
  while (!window.ran.includes('slow')) await new Promise((r) => setTimeout(r, 1));
  return run.runId;
};
window.slowRuns = async () => (await slow.listWorkflowRuns({ status: 'running' })).runs.map((r) => r.runId);
/** restart(), letting its slow step go on as soon as it waits. */
window.restart = async (runId) => {
  const letGo = setInterval(() => window.ran.includes('slow') && window.release(), 1);
  try {
    const r = await (await slow.createRun({ runId })).restart();
    return { status: r.status, result: r.result, fetch: r.steps.fetch?.output };
  } catch (e) {
    return { error: { name: e.name, code: e.code, message: e.message } };
  } finally {
    clearInterval(letGo);
  }
};

const storage = new IndexedDBStore({ name: 'wasm-agent-scores-page' });
const length = createScorer({ id: 'length', description: 'Words in the reply' })
  .generateScore(({ run }) => run.output[0].content.parts.filter((p) => p.type === 'text').map((p) => p.text).join(' ').split(' ').length);
const agent = new Agent({ id: 'scored', model: { id: 'openai/echo', url, apiKey: 'k' }, memory: new Memory({ storage }), scorers: { length: { scorer: length } } });
window.scoredRun = async (prompt) => {
  const out = await agent.stream(prompt, { memory: { thread: 'scored-thread', resource: 'user-1' } });
  await out.consumeStream();
  return { runId: out.runId, text: await out.text, scores: (await out.scores).map((s) => s.score) };
};
window.scores = async (filter) => (await storage.listScores(filter)).map((r) => ({ runId: r.runId, scorerId: r.scorerId, score: r.score }));

document.getElementById('status').textContent = 'ready';
document.body.dataset.ready = '1';
