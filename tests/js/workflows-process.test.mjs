// Workflow runs across processes (SPEC §20.2, §20.5), on a storage that outlives them (a
// DurableObjectStore over a JSON file, tests/js/workflows-child.mjs): a run suspended here is
// resumed by another process; a run whose process died in its second step is restarted here and
// goes on from there, the first step's output kept.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { noUnhandledRejections } from './helpers.mjs';
import { workflows } from './workflows-child.mjs';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'workflows-child.mjs');
const run = promisify(execFile);
const T2 = { timeout: 30_000 };

function tempFile(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wasm-agent-wf-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'storage.json');
}

test('a run suspended in this process is resumed by another one, which runs the step; the file holds the end', T2, async (t) => {
  const file = tempFile(t);
  const { approval } = workflows(file);
  const r = await approval.createRun();
  const first = await r.start({ inputData: { amount: 12 } });
  assert.equal(first.status, 'suspended');
  const { stdout } = await run(process.execPath, [CHILD, file, 'resume', r.runId], { timeout: 20_000 });
  const child = JSON.parse(stdout.trim().split('\n').at(-1));
  assert.equal(child.status, 'success');
  assert.equal(child.result.paid, 12);
  assert.notEqual(child.result.pid, process.pid, 'the step ran in the other process');
  // This process sees the end the other one wrote, and cannot resume the run again.
  const stored = await workflows(file).approval.getWorkflowRunById(r.runId);
  assert.equal(stored.status, 'success');
  const again = await (await workflows(file).approval.createRun({ runId: r.runId })).resume({ step: 'approve', resumeData: { ok: true } }).then(
    () => 'resumed',
    (e) => e.message,
  );
  assert.notEqual(again, 'resumed');
});

test('a run whose process died in a step is left running; restart() here goes on from the last finished step', T2, async (t) => {
  const file = tempFile(t);
  const runId = 'run-that-died';
  const died = await run(process.execPath, [CHILD, file, 'die', runId], { timeout: 20_000 }).then(
    () => 0,
    (e) => e.code,
  );
  assert.equal(died, 3, 'the child exited in step two');
  const { fragile } = workflows(file);
  assert.equal((await fragile.getWorkflowRunById(runId)).status, 'running');
  const r = await fragile.createRun({ runId });
  const out = await r.restart();
  assert.equal(out.status, 'success');
  const [one, two, three] = out.result.trail;
  assert.match(one, /^one@\d+$/);
  assert.notEqual(one, `one@${process.pid}`, 'step one ran once, in the process that died');
  assert.deepEqual([two, three], [`two@${process.pid}`, `three@${process.pid}`]);
  assert.equal((await fragile.getWorkflowRunById(runId)).status, 'success');
});

noUnhandledRejections();
