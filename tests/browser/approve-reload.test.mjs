// An approval across a page reload, in headless Chromium: `node --test tests/browser/`
// (needs pkg/ from `./x build` and /usr/bin/chromium, or CHROMIUM_PATH).
//
// SPEC §19.4: an agent without memory keeps its run records in the default storage, IndexedDB in
// a page, written before the tool-call-approval chunk goes out; so a reload right after the
// chunk loses nothing, and approving in the reloaded page runs the tool and finishes the reply.
// The page is approve-page.html + approve-page.mjs, served with pkg/ by static-server.mjs.

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

async function openPage(context) {
  const page = await context.newPage();
  await page.goto(`${files.origin}/approve-page.html?${new URLSearchParams({ model: models.url })}`);
  await page.waitForSelector('body[data-ready="1"]');
  return page;
}

test('two tabs approving the same call: exactly one wins, the tool runs once', T, async () => {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  const [a, b] = [await openPage(context), await openPage(context)];
  const first = await a.evaluate(() => window.start());
  assert.equal(first.finishReason, 'suspended');
  const results = await Promise.all([a, b].map((p) => p.evaluate((runId) => window.tryApprove(runId), first.runId)));
  const won = results.filter((r) => r.done);
  const lost = results.filter((r) => r.error);
  assert.equal(won.length, 1, JSON.stringify(results));
  assert.equal(won[0].done.types[0], 'tool-result');
  assert.equal(lost[0].error.name, 'ResumeError');
  assert.ok(['in-progress', 'not-found'].includes(lost[0].error.code), lost[0].error.code);
  const paid = (await a.evaluate(() => window.paid.length)) + (await b.evaluate(() => window.paid.length));
  assert.equal(paid, 1, 'the tool ran once over both tabs');
  await context.close();
});

test('approve after a reload: the suspended run is in IndexedDB and the approval finishes the reply', T, async () => {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${files.origin}/approve-page.html?${new URLSearchParams({ model: models.url })}`);
  await page.waitForSelector('body[data-ready="1"]');

  const first = await page.evaluate(() => window.start());
  assert.deepEqual(first.types.slice(-2), ['tool-call-approval', 'finish']);
  assert.equal(first.finishReason, 'suspended');

  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  assert.deepEqual(await page.evaluate(() => window.suspended()), [first.runId], 'the reloaded page lists the waiting run');
  const done = await page.evaluate((runId) => window.approve(runId), first.runId);
  assert.equal(done.types[0], 'tool-result', 'the approved call runs first');
  assert.equal(done.finishReason, 'stop');
  assert.match(done.text, /The tool said/);
  assert.equal(await page.evaluate(() => window.paid.length), 1, 'the tool ran once, in the reloaded page');
  assert.deepEqual(await page.evaluate(() => window.suspended()), []);
  assert.deepEqual(await page.evaluate((runId) => window.approveError(runId), first.runId), { name: 'ResumeError', code: 'not-found' });
  assert.deepEqual(errors, []);
  await context.close();
});
