// Workflow runs and scores across a page reload, in headless Chromium: `node --test tests/browser/`
// (needs pkg/ from `./x build` and /usr/bin/chromium, or CHROMIUM_PATH).
//
// SPEC §20.5: a workflow outside any Mastra keeps its snapshots in the default storage, IndexedDB
// in a page; so a run suspended before a reload is listed and resumed after it, from where it
// stopped, and two tabs resuming it are serialized by IndexedDB (exactly one runs). SPEC §20.2: a
// run whose page was closed mid-step is found `running` and `restart()` goes on from its last
// finished step, while a run another page still executes (its Web Lock held) is refused. SPEC §14.2:
// an IndexedDBStore keeps the scores its agent's scorers save. The page is workflow-page.html +
// workflow-page.mjs, served with pkg/ by static-server.mjs.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startModelServer } from '../server/model-server.mjs';
import { startStaticServer } from './static-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const T = { timeout: 60_000 };
const WAIT = 15_000;

let browser;
let models;
let files;

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/index.browser.js')), 'pkg/ is not built: run ./x build');
  models = await startModelServer({ demoDelayMs: 0 });
  files = await startStaticServer({ '/pkg/': path.join(ROOT, 'pkg'), '/': HERE });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000,
  });
});

after(async () => {
  await browser?.close().catch(() => {});
  await models?.close();
  await files?.close();
});

async function openPage(context, errors = []) {
  const page = await context.newPage();
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${files.origin}/workflow-page.html?${new URLSearchParams({ model: models.url })}`);
  await page.waitForSelector('body[data-ready="1"]');
  return page;
}

test('a workflow run suspended before a reload is listed after it and resumes from the suspended step', T, async () => {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  const errors = [];
  const page = await openPage(context, errors);
  const first = await page.evaluate(() => window.start('laptop'));
  assert.equal(first.status, 'suspended');
  await page.evaluate(() => window.start('desk'));

  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  const listed = await page.evaluate(() => window.list());
  assert.equal(listed.total, 2);
  assert.deepEqual(listed.runs.map((r) => r.status), ['suspended', 'suspended']);
  assert.equal(listed.runs[1].runId, first.runId, 'newest first');
  assert.equal(listed.runs[1].resourceId, 'user-1');
  assert.deepEqual((await page.evaluate(() => window.list({ status: 'success' }))).runs, []);

  const resumed = await page.evaluate((id) => window.resume(id, true), first.runId);
  assert.deepEqual(resumed, { status: 'success', result: { item: 'LAPTOP', approved: true, done: true } });
  assert.equal(await page.evaluate(() => window.prepared), 0, 'the reloaded page did not run prepare again');
  assert.deepEqual(await page.evaluate((id) => window.stored(id), first.runId), { status: 'success', result: { item: 'LAPTOP', approved: true, done: true }, resourceId: 'user-1' });
  assert.equal((await page.evaluate(() => window.list({ status: 'suspended' }))).total, 1);
  // Resuming a finished run says so.
  const again = await page.evaluate((id) => window.resume(id, false), first.runId);
  assert.match(again.error?.message ?? '', /is not suspended \(status: success\)/, JSON.stringify(again));
  assert.deepEqual(errors, []);
  await context.close();
});

test('two tabs resuming one stored run: IndexedDB lets exactly one run it', T, async () => {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  const [a, b] = [await openPage(context), await openPage(context)];
  const { runId } = await a.evaluate(() => window.start('chair'));
  const results = await Promise.all([a.evaluate((id) => window.resume(id, true), runId), b.evaluate((id) => window.resume(id, false), runId)]);
  const won = results.filter((r) => r.status);
  const lost = results.filter((r) => r.error);
  assert.equal(won.length, 1, JSON.stringify(results));
  assert.equal(won[0].status, 'success');
  // The loser either lost the claim while the winner ran, or came after the winner finished.
  assert.match(lost[0].error.message, /already running \(another resume of it won\)|is not suspended \(status: success\)/, JSON.stringify(lost[0]));
  assert.equal((await a.evaluate(() => window.finished)) + (await b.evaluate(() => window.finished)), 1, 'the last step ran once over both tabs');
  assert.deepEqual((await b.evaluate((id) => window.stored(id), runId)).result, won[0].result);
  await context.close();
});

test("an IndexedDBStore keeps its agent's scores across a reload", T, async () => {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  const page = await openPage(context);
  const run = await page.evaluate(() => window.scoredRun('one two three'));
  const words = (text) => text.split(' ').length;
  assert.deepEqual(run.scores, [words(run.text)]);
  const second = await page.evaluate(() => window.scoredRun('four five'));
  assert.notEqual(words(second.text), words(run.text));
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  const rows = await page.evaluate(() => window.scores());
  assert.equal(rows.length, 2);
  assert.deepEqual(rows.map((r) => r.score), [words(run.text), words(second.text)], 'oldest first');
  assert.deepEqual(await page.evaluate((id) => window.scores({ runId: id }), run.runId), [{ runId: run.runId, scorerId: 'length', score: words(run.text) }]);
  await context.close();
});

test('a run whose page closed mid-step is restarted from its last finished step by another page; a live one is refused', T, async () => {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  const [a, b] = [await openPage(context), await openPage(context)];
  const runId = await a.evaluate(() => window.startSlow());
  assert.deepEqual(await b.evaluate(() => window.slowRuns()), [runId]);
  // Page a still runs it: its Web Lock says so.
  const refused = await b.evaluate((id) => window.restart(id), runId);
  assert.equal(refused.error?.code, 'in-progress', JSON.stringify(refused));
  assert.match(refused.error.message, /is running in another page or worker of this origin/);
  await a.close();
  // The browser frees a closed page's locks soon after, not at once: until then restart refuses.
  let restarted;
  for (const until = Date.now() + WAIT; ; await new Promise((r) => setTimeout(r, 50))) {
    restarted = await b.evaluate((id) => window.restart(id), runId);
    if (restarted.error?.code !== 'in-progress' || Date.now() > until) break;
  }
  assert.deepEqual(restarted, { status: 'success', result: { saved: 11 }, fetch: { n: 10 } });
  assert.deepEqual(await b.evaluate(() => window.ran), ['slow', 'save'], 'fetch ran once, in the page that closed');
  assert.deepEqual(await b.evaluate(() => window.slowRuns()), []);
  await context.close();
});
