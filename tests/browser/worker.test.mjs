// The agent in a Worker (SPEC §21.1), in headless Chromium: `node --test tests/browser/`
// (needs pkg/ from `./x build`). worker-page.html runs the same replies in the page and through
// wasm-agent/client in a dedicated Worker and a SharedWorker (worker-agent.mjs, IndexedDB memory),
// against tests/server/model-server.mjs.

import { after, before, describe, it } from 'node:test';
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
const LONG = 'one two three four five six seven eight nine ten eleven twelve';

let browser;
let models;
let files;
let page;

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/client.js')), 'pkg/ is not built: run ./x build');
  models = await startModelServer({ demoDelayMs: 0 });
  files = await startStaticServer({ '/pkg/': path.join(ROOT, 'pkg'), '/': HERE });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000,
  });
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  await page.goto(`${files.origin}/worker-page.html?${new URLSearchParams({ model: models.url })}`);
  await page.waitForSelector('body[data-ready="1"]');
});

after(async () => {
  await browser?.close().catch(() => {});
  await models?.close();
  await files?.close();
});

const run = (kind, agent, message, opts) => page.evaluate(([k, a, m, o]) => window.run(k, a, m, o), [kind, agent, message, opts ?? {}]);

/** A chunk without what differs between two runs (ids, times, the request body's model id). */
const shape = (c) => JSON.parse(JSON.stringify(c, (k, v) => (['runId', 'messageId', 'id', 'timestamp', 'toolCallId', 'request', 'response'].includes(k) ? undefined : v)));

for (const kind of ['dedicated', 'shared']) {
  describe(`the agent in a ${kind === 'shared' ? 'SharedWorker' : 'dedicated Worker'}`, () => {
    it('streams the chunks an in-page agent streams, in order; the callbacks run in the page', T, async () => {
      const here = await run('page', 'echo', 'hello from the page');
      const there = await run(kind, 'echo', 'hello from the page');
      assert.deepEqual(there.chunks.map(shape), here.chunks.map(shape));
      assert.equal(there.text, 'You said: hello from the page');
      assert.equal(there.finishReason, 'stop');
      assert.ok(there.chunks.every((c) => c.runId === there.runId));
      assert.deepEqual(there.seen, here.seen);
      assert.deepEqual(page.errors, []);
    });

    it('the page\'s abortSignal aborts the run in the worker', T, async () => {
      const there = await run(kind, 'slow', LONG, { abortAfter2: true });
      assert.equal(there.chunks.at(-1).type, 'abort');
      assert.equal(there.chunks.at(-1).payload.reason, 'stopped by the page');
      assert.equal(there.finishReason, 'abort');
      assert.ok(there.chunks.filter((c) => c.type === 'text-delta').length < 12);
    });

    it('a clientTools tool runs in the page (reading the DOM) and the run continues with its result', T, async () => {
      await page.evaluate(() => (window.toolCalls = []));
      const there = await run(kind, 'tool', 'Pick a colour for me', { tools: true });
      assert.deepEqual(await page.evaluate(() => window.toolCalls), [{ input: { hint: 'example' }, aborted: false }]);
      const result = there.chunks.find((c) => c.type === 'tool-result').payload;
      assert.deepEqual(result.result, { colour: 'teal' });
      assert.equal(there.text, 'The tool said: {"colour":"teal"}');
    });

    it('memory: the worker stores in IndexedDB; the page lists threads and messages (also as UI messages), renames and deletes', T, async () => {
      const thread = `${kind}-thread`;
      const there = await run(kind, 'echo', 'keep this', { memory: { thread, resource: `${kind}-user` } });
      assert.equal(there.text, 'You said: keep this');
      const threads = await page.evaluate(([k, r]) => window.memoryCall(k, 'listThreads', { resourceId: r }), [kind, `${kind}-user`]);
      assert.deepEqual(threads.map((t) => t.id), [thread]);
      const ui = await page.evaluate(([k, t]) => window.memoryCall(k, 'listMessages', { threadId: t, format: 'ui' }), [kind, thread]);
      assert.deepEqual(ui.map((m) => [m.role, m.parts.find((p) => p.type === 'text').text]), [['user', 'keep this'], ['assistant', 'You said: keep this']]);
      const renamed = await page.evaluate(([k, t]) => window.memoryCall(k, 'updateThread', { id: t, title: 'Kept' }), [kind, thread]);
      assert.equal(renamed.title, 'Kept');
      // What the worker wrote is in the origin's IndexedDB, which the page can open too.
      const inPage = await page.evaluate(async (t) => {
        const pkg = await import('/pkg/index.browser.js');
        const memory = new pkg.Memory({ storage: new pkg.IndexedDBStore({ name: 'worker-test' }) });
        return (await memory.getThreadById({ threadId: t }))?.title;
      }, thread);
      assert.equal(inPage, 'Kept');
      await page.evaluate(([k, t]) => window.memoryCall(k, 'deleteThread', { threadId: t }), [kind, thread]);
      assert.equal(await page.evaluate(([k, t]) => window.memoryCall(k, 'getThreadById', { threadId: t }), [kind, thread]), null);
    });
  });
}

describe('a worker that stops', () => {
  it('terminated mid-run: the stream ends with an AbortError chunk "the agent worker stopped"', T, async () => {
    const there = await run('dedicated', 'slow', LONG, { terminateAfter2: true });
    const last = there.chunks.at(-1);
    assert.equal(last.type, 'error');
    assert.deepEqual(last.payload.error, { name: 'AbortError', message: 'the agent worker stopped' });
    assert.deepEqual(there.text, { error: { name: 'AbortError', message: 'the agent worker stopped' } });
    // A new worker serves the next run.
    assert.equal((await run('dedicated', 'echo', 'again')).text, 'You said: again');
  });
});
