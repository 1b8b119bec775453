// A background task across a page reload, in headless Chromium: `node --test tests/browser/`
// (needs pkg/ from `./x build` and /usr/bin/chromium, or CHROMIUM_PATH).
//
// README, "Background tasks and untilIdle": tasks that a closed page left running are marked
// failed ("interrupted") the next time the agent is created, and their conversations say so.
// The page (task-page.html + task-page.mjs) creates an agent with IndexedDB memory and a
// background `research` tool on load; it is served with pkg/ by static-server.mjs, and the model
// is tests/server/model-server.mjs with a script that calls `research` and then acknowledges
// the placeholder. Screenshots go to test-results/ (git-ignored).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startModelServer } from '../server/model-server.mjs';
import { startStaticServer } from './static-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const RESULTS = path.join(ROOT, 'test-results');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const T = { timeout: 60_000 };
const WAIT = 15_000; // any single wait
const ACK = 'I started the research in the background.';
const PLACEHOLDER_WORDS = 'It keeps running after this reply';

let browser;
let models;
let files;
let context; // one context for the whole file: its IndexedDB is what survives the reloads
let calls = 0;

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/index.browser.js')), 'pkg/ is not built: run ./x build');
  await mkdir(RESULTS, { recursive: true });
  models = await startModelServer({ demoDelayMs: 0 });
  models.scripts.set('reload-research', {
    description: 'calls research once, then acknowledges the placeholder',
    async run(ex) {
      const last = (ex.body.messages ?? []).at(-1);
      const chat = ex.chat();
      chat.role();
      if (last?.role === 'tool') {
        chat.content(ACK);
        await chat.complete('stop');
      } else {
        calls += 1;
        chat.toolCall({ index: 0, id: `call_research_${calls}`, type: 'function', function: { name: 'research', arguments: '{"topic":"solana"}' } });
        await chat.complete('tool_calls');
      }
    },
  });
  files = await startStaticServer({ '/pkg/': path.join(ROOT, 'pkg'), '/': HERE });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000,
  });
  context = await browser.newContext({ viewport: { width: 900, height: 720 } });
  context.setDefaultTimeout(WAIT);
});

after(async () => {
  await context?.close().catch(() => {});
  await browser?.close().catch(() => {});
  await models?.close();
  await files?.close();
});

/** Rejects if `promise` has not settled within `ms`. */
async function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `probe` (async; truthy ends it) every 100 ms for at most `ms`; `describe()` explains a timeout. */
async function waitFor(probe, ms, describeLast) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await probe();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${describeLast()}`);
    await delay(100);
  }
}

/** A page of the shared context on the task page for `thread` (research takes `ms`), ready. */
async function openTaskPage({ thread, ms }) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(`console: ${m.text()}`);
  });
  const q = new URLSearchParams({ model: models.url, thread, ms: String(ms) });
  await page.goto(`${files.origin}/task-page.html?${q}`, { timeout: WAIT });
  await page.waitForSelector('body[data-ready="1"]', { timeout: WAIT });
  return page;
}

async function reload(page) {
  await page.reload({ timeout: WAIT });
  await page.waitForSelector('body[data-ready="1"]', { timeout: WAIT });
}

const messagesOf = (page, thread) => within(page.evaluate((t) => window.messages(t), thread), WAIT, `messages(${thread})`);
const storedTasksOf = (page) => within(page.evaluate(() => window.storedTasks()), WAIT, 'storedTasks()');
const toolParts = (messages) => messages.flatMap((m) => m.parts.filter((p) => p.type === 'tool-research'));
const texts = (messages) => messages.flatMap((m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text));

/** Runs start(thread) in the page; checks it went to the background and ended with the acknowledgement. */
async function startResearch(page, thread) {
  const turn = await within(page.evaluate((t) => window.start(t), thread), WAIT, `start(${thread})`);
  assert.ok(turn.types.includes('tool-call'), turn.types.join(','));
  assert.ok(turn.types.includes('background-task-started'), turn.types.join(','));
  assert.equal(turn.text, ACK);
  return turn;
}

/** Waits until `thread` stores the research call with its placeholder and its task is stored running. */
async function waitForPlaceholder(page, thread) {
  let part;
  let tasks = [];
  await waitFor(
    async () => {
      part = toolParts(await messagesOf(page, thread))[0];
      if (!(part?.state === 'output-available' && part.output?.status === 'running')) return false;
      tasks = await storedTasksOf(page);
      return tasks.some((t) => t.id === part.output.backgroundTaskId && t.status === 'running');
    },
    WAIT,
    () => `the placeholder in ${thread} and a running stored task (part: ${JSON.stringify(part)}; tasks: ${JSON.stringify(tasks)})`,
  );
  assert.match(part.output.message, new RegExp(PLACEHOLDER_WORDS));
  return { part, taskId: part.output.backgroundTaskId };
}

/** Waits until the research call of `thread` shows an error (the recovery's doing); returns the messages. */
async function waitForInterrupted(page, thread) {
  let messages = [];
  await waitFor(
    async () => {
      messages = await messagesOf(page, thread);
      return toolParts(messages)[0]?.state === 'output-error';
    },
    WAIT,
    () => `the research call in ${thread} to be output-error (now: ${JSON.stringify(toolParts(messages))})`,
  );
  return messages;
}

describe('a background task across a page reload (IndexedDB)', () => {
  it('a reload while the task runs: the next start marks it failed (interrupted) and the conversation shows it', T, async () => {
    const page = await openTaskPage({ thread: 't1', ms: 60_000 });
    await startResearch(page, 't1');
    const { part, taskId } = await waitForPlaceholder(page, 't1');
    const toolCallId = part.toolCallId;
    const live = await page.evaluate(() => window.tasks());
    assert.deepEqual(
      live.map((t) => [t.id, t.status, t.threadId]),
      [[taskId, 'running', 't1']],
    );
    await page.evaluate(() => window.render('before the reload: the task runs'));
    await page.screenshot({ path: path.join(RESULTS, 'reload-task-before.png'), fullPage: true });
    const modelCalls = models.requests.length;

    // The task dies with the page; creating the agent on load starts the recovery.
    const reloadedAt = Date.now();
    await reload(page);
    const messages = await waitForInterrupted(page, 't1');
    const recoveryMs = Date.now() - reloadedAt;

    const [tool] = toolParts(messages);
    assert.equal(tool.toolCallId, toolCallId);
    assert.deepEqual(tool.input, { topic: 'solana' });
    assert.match(tool.errorText, /interrupted/);
    assert.ok(tool.errorText.includes(taskId), tool.errorText);
    assert.equal(tool.output, undefined, 'an errored part has no output');
    const all = JSON.stringify(messages);
    assert.ok(!all.includes(PLACEHOLDER_WORDS), `the placeholder is still stored: ${all}`);
    assert.ok(!all.includes('"status":"running"'), all);
    assert.deepEqual(texts(messages), ['research solana', ACK], 'the user turn and the acknowledgement stay');
    assert.equal(toolParts(messages).length, 1, 'one research call, not a copy');

    const stored = (await storedTasksOf(page)).find((t) => t.id === taskId);
    assert.equal(stored?.status, 'failed', JSON.stringify(stored));
    assert.match(stored.error, /interrupted/);
    assert.ok(stored.completedAt, JSON.stringify(stored));
    const liveAfter = await page.evaluate(() => window.tasks());
    assert.ok(!liveAfter.some((t) => t.status === 'running' || t.status === 'pending'), JSON.stringify(liveAfter));
    assert.equal(models.requests.length, modelCalls, 'the recovery does not call the model');

    await page.evaluate((ms) => window.render(`after the reload: the task was marked interrupted (recovery seen ${ms} ms after the reload began)`), recoveryMs);
    await page.screenshot({ path: path.join(RESULTS, 'reload-task.png'), fullPage: true });
    assert.match(await page.textContent('#messages'), /state=output-error[\s\S]*interrupted/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('a task that completed before the reload keeps its real result (a fresh page in the same context)', T, async () => {
    const page = await openTaskPage({ thread: 't2', ms: 300 });
    await startResearch(page, 't2');
    let messages = [];
    let tasks = [];
    await waitFor(
      async () => {
        messages = await messagesOf(page, 't2');
        const part = toolParts(messages)[0];
        if (!(part?.state === 'output-available' && part.output?.summary)) return false;
        tasks = await storedTasksOf(page);
        return tasks.some((t) => t.threadId === 't2' && t.status === 'completed');
      },
      WAIT,
      () => `the real result in t2 and a completed stored task (parts: ${JSON.stringify(toolParts(messages))}; tasks: ${JSON.stringify(tasks)})`,
    );
    const done = toolParts(messages)[0];
    assert.deepEqual(done.output, { topic: 'solana', summary: 'research on solana took 300 ms' });
    const taskId = tasks.find((t) => t.threadId === 't2').id;

    // A canary: a long task in t3, so that seeing it interrupted after the reload proves the
    // start-up recovery ran (and had the chance to touch t2) before t2 is checked.
    await page.evaluate(() => window.setResearchMs(60_000));
    await startResearch(page, 't3');
    await waitForPlaceholder(page, 't3');

    await reload(page);
    await waitForInterrupted(page, 't3');

    const after = await messagesOf(page, 't2');
    assert.deepEqual(toolParts(after), [done], 'the completed call is unchanged');
    assert.deepEqual(texts(after), ['research solana', ACK]);
    const stored = (await storedTasksOf(page)).find((t) => t.id === taskId);
    assert.equal(stored?.status, 'completed', JSON.stringify(stored));
    assert.deepEqual(stored.result, done.output);
    assert.equal(stored.error ?? null, null, JSON.stringify(stored));
    // The first test's thread is not touched again either.
    const t1 = toolParts(await messagesOf(page, 't1'));
    assert.equal(t1.length, 1);
    assert.equal(t1[0].state, 'output-error');

    await page.evaluate(() => window.render('after the reload: the completed task kept its result', 't2'));
    await page.screenshot({ path: path.join(RESULTS, 'reload-task-completed.png'), fullPage: true });
    assert.match(await page.textContent('#messages'), /state=output-available[\s\S]*took 300 ms/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('a task still running in another open tab is not taken for interrupted when a second tab starts', { timeout: 60_000 }, async () => {
    const a = await openTaskPage({ thread: 't4', ms: 3000 });
    await startResearch(a, 't4');
    await waitForPlaceholder(a, 't4');
    // Tab B creates the same agent on the same database: its start-up recovery runs now.
    const b = await openTaskPage({ thread: 't5', ms: 60_000 });
    await new Promise((r) => setTimeout(r, 800));
    const midway = (await storedTasksOf(b)).find((t) => t.threadId === 't4');
    assert.equal(midway.status, 'running', `tab A's task while A is open: ${JSON.stringify(midway)}`);
    const part = (m) => m.flatMap((x) => x.parts).find((p) => p.type === 'tool-research');
    assert.equal(part(await messagesOf(b, 't4')).state, 'output-available', 'no "interrupted" in the conversation');
    // It finishes in tab A with its real result.
    await waitFor(async () => (await storedTasksOf(b)).find((t) => t.threadId === 't4')?.status === 'completed', 15_000, () => 'tab A task completed');
    assert.equal(part(await messagesOf(b, 't4')).output.topic, 'solana');
    await a.close();
    await b.close();
  });
});
