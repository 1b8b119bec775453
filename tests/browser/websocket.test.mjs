// The Responses WebSocket transport in headless Chromium: `node --test tests/browser/` (needs
// pkg/ from `./x build` and /usr/bin/chromium, or CHROMIUM_PATH).
//
// A page's WebSocket takes no headers, so the page reaches the local model server's socket with
// a key-less model (as it would reach a proxy that adds the key); with a key, 'websocket' says
// why it cannot and 'auto' streams over HTTP. ws-page.html is served with pkg/.

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

let browser;
let models;
let files;
let page;

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/index.browser.js')), 'pkg/ is not built: run ./x build');
  models = await startModelServer({ demoDelayMs: 0 });
  files = await startStaticServer({ '/pkg/': path.join(ROOT, 'pkg'), '/': HERE });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000,
  });
  page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${files.origin}/ws-page.html`);
  await page.waitForFunction(() => window.ready === true);
});

after(async () => {
  await browser?.close().catch(() => {});
  await models?.close();
  await files?.close();
});

const run = (args) => page.evaluate((a) => window.run(a), { url: models.url, ...args });

async function until(check, what, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}

it('a page streams a reply over the socket, then the socket closes', T, async () => {
  const [r, c] = [models.requests.length, models.connections.length];
  const out = await run({ script: 'text:Hello from a socket in Chromium', transport: 'websocket' });
  assert.equal(out.error, null);
  assert.equal(out.text, 'Hello from a socket in Chromium');
  assert.deepEqual(out.types.slice(0, 3), ['start', 'step-start', 'text-start']);
  assert.equal(out.types.at(-1), 'finish');
  const [conn] = models.connections.slice(c);
  assert.equal(conn.headers.origin, files.origin, 'the page opened it');
  const [record] = models.requests.slice(r);
  assert.equal(record.transport, 'websocket');
  assert.deepEqual(record.body.input, [{ role: 'user', content: [{ type: 'input_text', text: 'hi from the page' }] }]);
  await until(() => conn.closed, 'the socket to close');
});

it('closeOnFinish: false keeps the socket open until transport.close()', T, async () => {
  const c = models.connections.length;
  const out = await run({ script: 'echo', transport: 'websocket', closeOnFinish: false });
  assert.equal(out.text, 'You said: hi from the page');
  const [conn] = models.connections.slice(c);
  await delay(100);
  assert.equal(conn.closed, false);
  await page.evaluate(() => window.lastTransport.close());
  await until(() => conn.closed, 'transport.close() to close the socket');
});

it('with a key: websocket explains that a page cannot send it, auto streams over HTTP instead', T, async () => {
  const [r, c] = [models.requests.length, models.connections.length];
  const refused = await run({ script: 'echo', transport: 'websocket', apiKey: 'sk-page-key' });
  assert.equal(refused.types.at(-1), 'error');
  assert.match(refused.error, /cannot send headers \(authorization\)/);
  const fallback = await run({ script: 'echo', transport: 'auto', apiKey: 'sk-page-key' });
  assert.equal(fallback.text, 'You said: hi from the page');
  const records = models.requests.slice(r);
  assert.equal(records.length, 1, 'one HTTP request, from the fallback');
  assert.equal(records[0].transport, undefined);
  assert.equal(records[0].headers.authorization, 'Bearer sk-page-key');
  assert.equal(models.connections.length, c, 'no socket was opened');
});
