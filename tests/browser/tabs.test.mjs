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
/** The requests of the research script, by kind: user, ack, continuation. */
const research = [];
const DIRECTIVE = 'Background tasks you started earlier have finished';

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
  models.scripts.set('tabs-research', {
    description: 'calls research for "research solana", acknowledges it, answers continuations',
    async run(ex) {
      const messages = ex.body.messages ?? [];
      const text = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join(''));
      const directive = messages.find((m) => m.role === 'system' && text(m).includes(DIRECTIVE));
      const last = messages.at(-1);
      const kind = directive ? 'continuation' : last?.role === 'tool' ? 'ack' : 'user';
      research.push({ kind, directive: directive && text(directive) });
      const chat = ex.chat();
      chat.role();
      if (kind === 'continuation') chat.content('The research is over.');
      else if (kind === 'ack') chat.content('Started.');
      else if (text(last) === 'research solana') {
        chat.toolCall({ index: 0, id: `call_research_${research.length}`, type: 'function', function: { name: 'research', arguments: '{"topic":"solana"}' } });
        return chat.complete('tool_calls');
      } else chat.content('Noted.');
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

it('chunks go to the other tabs only while one of them watches that thread: a reply no one else follows posts none', T, async () => {
  const a = await openPage('t4');
  // Another tab, watching another thread, also listens to the channel itself.
  const other = await openPage('t5');
  await other.evaluate(() => {
    window.heard = [];
    const ch = new BroadcastChannel('wasm-agent:tabs-test');
    ch.onmessage = (e) => {
      if (Array.isArray(e.data)) for (const [threadId, , event] of e.data) window.heard.push([threadId, event.type]);
    };
  });
  const heard = () => other.evaluate(() => window.heard);
  const reply = async (text) => {
    requests = 0;
    release = undefined;
    const sending = a.evaluate((t) => window.send(t), text);
    await waitFor(() => requests === 1 && release, 'the model request');
    release();
    return sending;
  };
  await reply('Nobody else is here');
  await waitFor(async () => (await heard()).filter(([t, type]) => t === 't4' && type === 'messages-saved').length >= 2, 'both messages saved, heard');
  assert.deepEqual((await heard()).filter(([, type]) => type === 'chunk'), [], 'no chunk was posted');
  // A third tab watches t4: from then on the chunks go out.
  const b = await openPage('t4');
  const sent = await reply('Now someone is');
  await waitFor(async () => (await eventsOf(b)).some((e) => e.type === 'chunk' && e.chunk.type === 'finish'), 'the finish chunk in B');
  const chunks = (await eventsOf(b)).filter((e) => e.type === 'chunk' && e.runId === sent.runId).map((e) => e.chunk.type);
  assert.deepEqual(chunks, sent.types, 'B saw the whole reply, chunk by chunk');
  assert.ok((await heard()).some(([t, type]) => t === 't4' && type === 'chunk'), 'and the chunks were on the channel');
  for (const p of [a, other, b]) assert.deepEqual(p.errors, []);
  await a.close();
  await other.close();
  await b.close();
});

async function openTaskPage(thread, ms = 60_000) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  await page.goto(`${files.origin}/tabs-task-page.html?${new URLSearchParams({ model: models.url, thread, ms: String(ms) })}`);
  await page.waitForSelector('body[data-ready="1"]');
  return page;
}

it('tab A closes while its task runs: B and C take over at once, and exactly one of them answers it', T, async () => {
  const b = await openTaskPage('t3');
  const c = await openTaskPage('t3');
  const a = await openTaskPage('t3');
  const started = await a.evaluate(() => window.start());
  assert.ok(started.types.includes('background-task-started'), started.types.join(','));
  // B and C wait on the thread with untilIdle streams: their first turns end, A's task runs on.
  await waitFor(async () => (await b.evaluate(() => window.events)).some((e) => e.type === 'task-updated' && e.task.status === 'running'), 'B hears of the task');
  await waitFor(async () => (await c.evaluate(() => window.events)).some((e) => e.type === 'task-updated' && e.task.status === 'running'), 'C hears of the task');
  const idleB = b.evaluate(() => window.idle('anything new?'));
  const idleC = c.evaluate(() => window.idle('and here?'));
  await waitFor(() => research.filter((r) => r.kind === 'user' && r.directive === undefined).length >= 3, 'both first turns');
  await a.close();
  const [fromB, fromC] = await Promise.all([idleB, idleC]);
  for (const [name, got] of [['B', fromB], ['C', fromC]]) {
    assert.ok(got.types.includes('background-task-failed'), `${name}: ${got.types.join(',')}`);
  }
  const continuations = research.filter((r) => r.kind === 'continuation');
  assert.equal(continuations.length, 1, 'one continuation across the tabs');
  assert.match(continuations[0].directive, /interrupted/);
  const answered = [fromB, fromC].filter((g) => g.text.includes('The research is over.'));
  assert.equal(answered.length, 1, 'the continuation streams in the tab that runs it');
  // Stored: the task failed as interrupted, and the placeholder says so.
  const parts = (await b.evaluate(() => window.messages())).flatMap((m) => m.parts.filter((p) => p.type === 'tool-research'));
  assert.equal(parts.length, 1);
  assert.equal(parts[0].state, 'output-error');
  assert.match(parts[0].errorText, /interrupted/);
  assert.deepEqual(b.errors, []);
  assert.deepEqual(c.errors, []);
  await b.close();
  await c.close();
});

it('a task started in tab A ends; the untilIdle stream in tab B answers it, once', T, async () => {
  research.length = 0;
  const b = await openTaskPage('t4', 1_500);
  const a = await openTaskPage('t4', 1_500);
  await a.evaluate(() => window.start());
  await waitFor(async () => (await b.evaluate(() => window.events)).some((e) => e.type === 'task-updated' && e.task.status === 'running'), 'B hears of the task');
  const got = await b.evaluate(() => window.idle('tell me when it is done'));
  assert.ok(got.types.includes('background-task-completed'), got.types.join(','));
  assert.ok(got.text.endsWith('The research is over.'), got.text);
  assert.equal(research.filter((r) => r.kind === 'continuation').length, 1);
  await a.close();
  await b.close();
});
