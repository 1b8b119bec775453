// The package in an app bundled by Vite (examples/vite-app/): `vite build` into a temporary
// folder, the output served by a static server on 127.0.0.1 (and nothing else), the local model
// server for the model, and the built page in headless Chromium, which must stream the reply.
// `node --test tests/vite/` (needs pkg/ from `./x build`, the `vite` dev dependency and Chromium).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { build } from 'vite';
import { startStaticServer } from '../browser/static-server.mjs';
import { startModelServer } from '../server/model-server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const APP = path.join(ROOT, 'examples/vite-app');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WAIT = 15_000;

let outDir;
let files = [];
let site;
let models;
let browser;

/** Rejects when `promise` takes longer than `ms`. */
function within(ms, what, promise) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/index.browser.js')), 'pkg/ is not built: run ./x build');
  outDir = await mkdtemp(path.join(tmpdir(), 'wasm-agent-vite-'));
  await within(
    90_000,
    'vite build',
    build({
      configFile: path.join(APP, 'vite.config.js'),
      logLevel: 'warn',
      build: { outDir, emptyOutDir: true },
    }),
  );
  files = await readdir(outDir, { recursive: true });
  site = await startStaticServer({ '/': outDir });
  models = await startModelServer({ demoDelayMs: 0 });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    timeout: 30_000,
  });
});

after(async () => {
  await browser?.close();
  await site?.close();
  await models?.close();
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

test('vite build emits the page, one bundle and the wasm as an asset', { timeout: 10_000 }, () => {
  const names = files.map((f) => f.split(path.sep).join('/'));
  assert.ok(names.includes('index.html'), names.join(', '));
  assert.equal(names.filter((f) => /^assets\/wasm_agent_bg-[\w-]+\.wasm$/.test(f)).length, 1, `one hashed .wasm asset: ${names.join(', ')}`);
  assert.ok(names.some((f) => /^assets\/.+\.js$/.test(f)), `a JS bundle: ${names.join(', ')}`);
});

test('the built page streams the reply of the local model server', { timeout: 45_000 }, async () => {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    const wasm = page.waitForResponse((res) => res.url().endsWith('.wasm'), { timeout: WAIT });
    await page.goto(`${site.origin}/index.html?url=${encodeURIComponent(models.url)}`, { timeout: WAIT });
    const wasmResponse = await wasm;
    assert.equal(wasmResponse.status(), 200);
    assert.equal(wasmResponse.headers()['content-type'], 'application/wasm');
    await page.waitForSelector('body[data-state="done"], body[data-state="failed"]', { timeout: WAIT });
    assert.equal(await page.textContent('#status'), 'Done.');
    assert.equal(await page.textContent('#reply'), 'You said: hello');
    assert.deepEqual(errors, []);

    // The page loaded only what the build emitted, and the model request went to the model server.
    const requested = site.requests.map((r) => r.replace(/^GET /, '')).filter((p) => p !== '/favicon.ico');
    for (const pathname of requested) {
      assert.ok(files.map((f) => `/${f.split(path.sep).join('/')}`).includes(pathname), `${pathname} is not in the build`);
    }
    // openai/ speaks the Responses API.
    const calls = models.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/responses'));
    assert.equal(calls.length, 1);
    assert.equal(calls[0].body.model, 'echo');
    assert.deepEqual(calls[0].body.input.at(-1), { role: 'user', content: [{ type: 'input_text', text: 'hello' }] });
  } finally {
    await context.close();
  }
});
