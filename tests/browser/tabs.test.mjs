// One conversation in two tabs (SPEC §21.2), in headless Chromium: `node --test tests/browser/`
// (needs pkg/ from `./x build` and /usr/bin/chromium, or CHROMIUM_PATH).
//
// Two pages of one origin (one browser context, so one IndexedDB and one BroadcastChannel
// space) open tabs-page.html on the same thread. The model script holds its reply half-way
// until the test lets it go, so "while it streams" is a state the test waits for, not a time.

import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startModelServer } from '../server/model-server.mjs';
import { startStaticServer } from './static-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const T = { timeout: 60_000 };
const WAIT = 15_000;
const FIRST = ['The ', 'first ', 'half. '];
const SECOND = ['And ', 'the ', 'rest.'];

let browser;
let models;
let files;
let context;
let release; // lets the held reply go on
let requests = 0;

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/index.browser.js')), 'pkg/ is not built: run ./x build');
  models = await startModelServer({ demoDelayMs: 0 });
  models.scripts.set('tabs-gated', {
    description: 'writes half a reply, waits for the test, then writes the rest',
    async run(ex) {
      requests += 1;
      const gate = new Promise((resolve) => {
        release = resolve;
      });
      const chat = ex.chat();
      chat.role();
      for (const w of FIRST) chat.content(w);
      await chat.flush({ flushed: true });
      await gate;
      for (const w of SECOND) chat.content(w);
      await chat.complete('stop');
    },
  });
  files = await startStaticServer({ '/pkg/': path.join(ROOT, 'pkg'), '/': HERE });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000,
  });
  context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
});

after(async () => {
  await context?.close().catch(() => {});
  await browser?.close().catch(() => {});
  await models?.close();
  await files?.close();
});

async function openPage(thread) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  await page.goto(`${files.origin}/tabs-page.html?${new URLSearchParams({ model: models.url, thread })}`);
  await page.waitForSelector('body[data-ready="1"]');
  return page;
}

async function waitFor(probe, what) {
  const deadline = Date.now() + WAIT;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(50);
  }
}

const eventsOf = (page) => page.evaluate(() => window.events);
const liveText = (page) => page.evaluate(() => document.querySelector('#live').textContent);
const textOf = (m) => m.content.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

it('a reply streaming in tab A streams live in tab B, which joined mid-run: stored messages first, then the chunks', T, async () => {
  const a = await openPage('t1');
  const sending = a.evaluate(() => window.send('Hello from A'));
  await waitFor(() => requests === 1 && release, 'the model request');
  // B opens while the reply is held half-way: it reads what is stored, then watches.
  const b = await openPage('t1');
  const initial = await b.evaluate(() => window.initial);
  assert.deepEqual(initial.map((m) => [m.role, textOf(m)]), [['user', 'Hello from A']]);
  release();
  const sent = await sending;
  assert.equal(sent.text, FIRST.join('') + SECOND.join(''));
  await waitFor(async () => (await eventsOf(b)).some((e) => e.type === 'messages-saved' && e.messages.some((m) => m.role === 'assistant')), 'the reply saved, seen in B');
  const events = await eventsOf(b);
  const chunks = events.filter((e) => e.type === 'chunk');
  assert.ok(chunks.every((e) => e.threadId === 't1' && e.runId === sent.runId));
  // From the point B joined: the rest of the reply, in order, ending as A's stream ended.
  const deltas = chunks.filter((e) => e.chunk.type === 'text-delta').map((e) => e.chunk.payload.text).join('');
  assert.ok(SECOND.join('').endsWith(deltas) || deltas.endsWith(SECOND.join('')), `B's deltas: ${JSON.stringify(deltas)}`);
  assert.ok(deltas.includes('rest.'));
  const bTypes = chunks.map((e) => e.chunk.type);
  assert.deepEqual(bTypes, sent.types.slice(sent.types.length - bTypes.length), 'the same chunks as A’s stream, in order');
  assert.equal(bTypes.at(-1), 'finish');
  const reply = events.filter((e) => e.type === 'messages-saved').flatMap((e) => e.messages).find((m) => m.role === 'assistant');
  assert.equal(textOf(reply), sent.text);
  assert.deepEqual(a.errors, []);
  assert.deepEqual(b.errors, []);
  await a.close();
  await b.close();
});

it('both tabs open from the start: B shows A’s reply while it is still streaming; a deletion in A is seen in B', T, async () => {
  const a = await openPage('t2');
  const b = await openPage('t2');
  requests = 0;
  release = undefined;
  const sending = a.evaluate(() => window.send('Tell me'));
  await waitFor(async () => (await liveText(b)) === FIRST.join(''), 'the first half live in B');
  assert.equal(await liveText(a), FIRST.join(''), 'A’s own watcher shows the same');
  release();
  await sending;
  await waitFor(async () => (await liveText(b)) === FIRST.join('') + SECOND.join(''), 'the whole reply in B');
  await a.evaluate(() => window.deleteThread());
  await waitFor(async () => (await eventsOf(b)).some((e) => e.type === 'thread-deleted' && e.threadId === 't2'), 'thread-deleted in B');
  const aEvents = await eventsOf(a);
  assert.equal(aEvents.filter((e) => e.type === 'thread-deleted').length, 1, 'A hears its own deletion once');
  const bEvents = await eventsOf(b);
  assert.equal(bEvents.filter((e) => e.type === 'thread-deleted').length, 1, 'B once, not echoed back');
  assert.deepEqual(
    bEvents.filter((e) => e.type === 'chunk').map((e) => e.chunk.type),
    aEvents.filter((e) => e.type === 'chunk').map((e) => e.chunk.type),
    'both tabs saw the same chunks',
  );
  await a.close();
  await b.close();
});
