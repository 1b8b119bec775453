// Workflow runs across processes (tests/js/workflows-process.test.mjs): a DurableObjectStore over
// a JSON file stands for storage that outlives the process.
//   node workflows-child.mjs <file> resume <runId>   resumes the suspended run; prints its result
//   node workflows-child.mjs <file> die <runId>      starts a run that kills this process in step 'two'

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Mastra, createStep, createWorkflow } from '../../pkg/index.node.js';
import { DurableObjectStore } from '../../pkg/durable-object-store.js';

/** Durable Object storage's get/put/delete/list over a JSON file, written on every change. */
export function fileDurableStorage(file) {
  const load = () => new Map(fs.existsSync(file) ? Object.entries(JSON.parse(fs.readFileSync(file, 'utf8'))) : []);
  const save = (m) => fs.writeFileSync(file, JSON.stringify(Object.fromEntries(m)));
  const pick = (m, keys) => new Map(keys.filter((k) => m.has(k)).map((k) => [k, m.get(k)]));
  return {
    async get(k) {
      const m = load();
      return Array.isArray(k) ? pick(m, k) : m.get(k);
    },
    async put(k, v) {
      const m = load();
      if (typeof k === 'string') m.set(k, v);
      else for (const [key, val] of Object.entries(k)) m.set(key, val);
      save(m);
    },
    async delete(k) {
      const m = load();
      for (const key of [k].flat()) m.delete(key);
      save(m);
      return true;
    },
    async list({ prefix = '', reverse = false, limit } = {}) {
      const m = load();
      let keys = [...m.keys()].filter((k) => k.startsWith(prefix)).sort();
      if (reverse) keys.reverse();
      if (limit !== undefined) keys = keys.slice(0, limit);
      return pick(m, keys);
    },
  };
}

const obj = (properties) => ({ type: 'object', properties, required: Object.keys(properties) });

/** The workflows, the same in every process: `approval` (suspends for { ok }), `fragile` (one, two, three). */
export function workflows(file, { dieInTwo = false } = {}) {
  const approve = createStep({
    id: 'approve',
    inputSchema: obj({ amount: { type: 'number' } }),
    resumeSchema: obj({ ok: { type: 'boolean' } }),
    execute: async ({ inputData, resumeData, suspend }) => {
      if (!resumeData) return suspend({ ask: `pay ${inputData.amount}?` });
      return { paid: resumeData.ok ? inputData.amount : 0, pid: process.pid };
    },
  });
  const approval = createWorkflow({ id: 'wf-child-approval', inputSchema: obj({ amount: { type: 'number' } }) }).then(approve).commit();
  const step = (id, fn) => createStep({ id, execute: async ({ inputData }) => fn(inputData) });
  const fragile = createWorkflow({ id: 'wf-child-fragile' })
    .then(step('one', (i) => ({ trail: [...(i.trail ?? []), `one@${process.pid}`] })))
    .then(step('two', (i) => {
      if (dieInTwo) process.exit(3);
      return { trail: [...i.trail, `two@${process.pid}`] };
    }))
    .then(step('three', (i) => ({ trail: [...i.trail, `three@${process.pid}`] })))
    .commit();
  const mastra = new Mastra({ workflows: { approval, fragile }, storage: new DurableObjectStore(fileDurableStorage(file)) });
  return { approval: mastra.getWorkflow('approval'), fragile: mastra.getWorkflow('fragile') };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, mode, runId] = process.argv.slice(2);
  if (mode === 'resume') {
    const { approval } = workflows(file);
    const run = await approval.createRun({ runId });
    const result = await run.resume({ step: 'approve', resumeData: { ok: true } });
    console.log(JSON.stringify({ status: result.status, result: result.result }));
  } else if (mode === 'die') {
    const { fragile } = workflows(file, { dieInTwo: true });
    await (await fragile.createRun({ runId })).start({ inputData: {} });
    console.log('not reached');
  }
}
