// The chat demo end to end: `node --test www/` (needs pkg/ from `./x build` and Chromium).
// Starts www/serve.mjs as a child process on a free port and drives the page in headless
// Chromium with playwright-core. Screenshots go to test-results/ (git-ignored).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startModelServer } from '../tests/server/model-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const RESULTS = path.join(ROOT, 'test-results');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const T = { timeout: 45_000 };
const WAIT = 15_000; // any single wait in the page
const KEY_VARS = ['OPENAI', 'GROQ', 'DEEPSEEK', 'MISTRAL', 'XAI', 'OPENROUTER', 'TOGETHERAI'].flatMap((p) => [
  `${p}_API_KEY`,
  `${p}_BASE_URL`,
]);
const SECRET = 'sk-demo-test-secret-0123456789';

/** The environment of a child: no provider keys of the developer's, plus `extra`. */
function childEnv(extra = {}) {
  const env = { ...process.env };
  for (const name of [...KEY_VARS, 'PORT', 'WASM_AGENT_DEMO_MODEL']) delete env[name];
  return { ...env, ...extra };
}

/** Starts `node www/serve.mjs --port 0`; resolves once it printed its URL line. */
function startServe(env) {
  const child = spawn(process.execPath, [path.join(HERE, 'serve.mjs'), '--port', '0'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', (d) => (output += d));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve.mjs printed no URL within 15 s:\n${output}`)), 15_000);
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      output += `${line}\n`;
      const match = /^wasm-agent demo: open (http:\/\/127\.0\.0\.1:(\d+)\/)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1], line });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve.mjs exited (${code}) before printing its URL:\n${output}`));
    });
  });
  return { child, ready };
}

/** SIGTERM, then SIGKILL if it has not exited within 3 s. */
async function stopChild(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
  await exited;
  clearTimeout(timer);
}

let browser;
const children = [];

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/index.browser.js')), 'pkg/ is not built: run ./x build');
  await mkdir(RESULTS, { recursive: true });
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
  await Promise.all(children.map(stopChild));
  await browser?.close();
});

async function serve(env) {
  const started = startServe(env);
  children.push(started.child);
  return started.ready;
}

/** A fresh page on `url`, ready to chat; collects page errors. */
async function openPage(url) {
  const context = await browser.newContext({ viewport: { width: 900, height: 720 } });
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  await page.goto(url, { timeout: WAIT });
  await page.waitForSelector('body[data-ready="1"]', { timeout: WAIT });
  return page;
}

/** Records every change of the newest reply's text (with the time), so a test can tell streaming from one write. */
async function recordReplyText(page) {
  await page.evaluate(() => {
    window.__snapshots = [];
    new MutationObserver(() => {
      const replies = document.querySelectorAll('.msg.assistant .text');
      const text = replies[replies.length - 1]?.textContent ?? '';
      if (text !== '' && text !== window.__snapshots.at(-1)?.text) window.__snapshots.push({ at: performance.now(), text });
    }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
  });
}

/** Asserts the reply's text grew in several steps spread over time (not delivered in one burst). */
async function assertStreamed(page, finalText, what) {
  const snapshots = await page.evaluate(() => window.__snapshots);
  assert.ok(snapshots.length >= 5, `${what}: the text arrived in ${snapshots.length} update(s)`);
  for (const { text } of snapshots) assert.ok(finalText.startsWith(text), `${what}: ${JSON.stringify(text)} is not a prefix`);
  const span = snapshots.at(-1).at - snapshots[0].at;
  assert.ok(span >= 200, `${what}: all text arrived within ${Math.round(span)} ms (buffered?)`);
}

async function sendAndWait(page, text, { via = 'enter' } = {}) {
  const before = await page.locator('.msg.assistant[data-done="1"]').count();
  await page.fill('#input', text);
  if (via === 'enter') await page.press('#input', 'Enter');
  else await page.click('#send');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-done="1"]').length > n, before, {
    timeout: WAIT,
  });
  return page.locator('.msg.assistant').last();
}

describe('demo page, offline model', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('serves config, page and package with the right types, and nothing outside them', T, async () => {
    const config = await (await fetch(`${url}config.json`)).json();
    assert.equal(config.mode, 'offline');
    assert.equal(config.model.id, 'openai/demo');
    assert.match(config.model.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const echo = await (await fetch(`${url}config.json?model=echo`)).json();
    assert.equal(echo.model.id, 'openai/echo');

    const types = {
      '': 'text/html',
      'app.js': 'text/javascript',
      'style.css': 'text/css',
      'pkg/index.browser.js': 'text/javascript',
      'pkg/wasm_agent_bg.wasm': 'application/wasm',
      'pkg/package.json': 'application/json',
    };
    for (const [file, type] of Object.entries(types)) {
      const res = await fetch(`${url}${file}`);
      assert.equal(res.status, 200, file);
      assert.ok(res.headers.get('content-type').startsWith(type), `${file}: ${res.headers.get('content-type')}`);
      await res.arrayBuffer();
    }
    for (const bad of ['pkg/%2e%2e/package.json', 'pkg/..%2f..%2fpackage.json', '..%2fpackage.json', '%2e%2e/x', 'serve.mjs', 'pkg/.gitignore']) {
      const res = await fetch(`${url}${bad}`);
      assert.equal(res.status, 404, bad);
      await res.arrayBuffer();
    }
    // Offline mode has no proxy.
    const proxied = await fetch(`${url}proxy/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(proxied.status, 404);
    await proxied.arrayBuffer();
  });

  it('streams a reply with reasoning and usage', T, async () => {
    const page = await openPage(url);
    assert.equal(await page.textContent('#mode'), 'offline demo');
    await recordReplyText(page);
    const reply = await sendAndWait(page, 'hello');
    const text = await reply.locator('.text').textContent();
    assert.match(text, /offline demo model for wasm-agent/);
    await assertStreamed(page, text, 'offline');
    assert.match(await reply.locator('.thinking-text').textContent(), /greeting/);
    assert.match(await reply.locator('.meta').textContent(), /\d+ in · \d+ out .*tokens/);
    assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('.msg')].map((m) => m.dataset.role)), [
      'user',
      'assistant',
    ]);
    await page.screenshot({ path: path.join(RESULTS, 'demo-offline.png') });

    // The next turn sends the whole conversation.
    const second = await sendAndWait(page, 'thanks', { via: 'click' });
    assert.match(await second.locator('.text').textContent(), /welcome/i);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Stop aborts a slow reply and marks it stopped', T, async () => {
    const page = await openPage(`${url}?model=demo:150`);
    await page.fill('#input', 'Tell me something long');
    await page.click('#send');
    await page.waitForFunction(
      () => (document.querySelector('.msg.assistant .text')?.textContent.length ?? 0) > 0,
      null,
      { timeout: WAIT },
    );
    assert.equal(await page.isEnabled('#stop'), true);
    await page.click('#stop');
    const reply = page.locator('.msg.assistant[data-done="1"]');
    await reply.waitFor({ timeout: WAIT });
    assert.equal(await reply.locator('.meta').textContent(), 'stopped');
    const partial = await reply.locator('.text').textContent();
    assert.ok(partial.length > 0 && !partial.includes('same code will answer properly'), `not cut short: ${partial}`);
    // The page is usable again.
    assert.equal(await page.isEnabled('#send'), true);
    assert.equal(await page.isEnabled('#stop'), false);
    await page.screenshot({ path: path.join(RESULTS, 'demo-stopped.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('shows model text literally, never as HTML', T, async () => {
    const payload = '<img src=x onerror="window.__xss=1">';
    for (const model of ['echo', 'demo']) {
      const page = await openPage(`${url}?model=${model}`);
      const reply = await sendAndWait(page, `Please repeat ${payload} back`);
      assert.ok((await reply.locator('.text').textContent()).includes(payload), `${model}: the payload is not shown as text`);
      await page.waitForTimeout(300); // an error handler would have run by now
      assert.equal(await page.evaluate(() => window.__xss), undefined);
      assert.equal(await page.locator('#messages img').count(), 0);
      if (model === 'echo') await page.screenshot({ path: path.join(RESULTS, 'demo-xss.png') });
      await page.context().close();
    }
  });

  it('shows a model error as an error line', T, async () => {
    const page = await openPage(`${url}?model=error-401`);
    const reply = await sendAndWait(page, 'hi');
    assert.match(await reply.locator('.error').textContent(), /Incorrect API key/);
    await page.context().close();
  });
});

describe('demo page, provider through the proxy', () => {
  let url;
  let upstream;
  before(async () => {
    // The "provider" is a local model server; the proxy must add the key on the way.
    upstream = await startModelServer({ demoDelayMs: 20 });
    ({ url } = await serve(
      childEnv({ OPENAI_API_KEY: SECRET, OPENAI_BASE_URL: upstream.url, WASM_AGENT_DEMO_MODEL: 'demo' }),
    ));
  });
  after(() => upstream?.close());

  it('keeps the key on the server and streams through the proxy', T, async () => {
    const configText = await (await fetch(`${url}config.json`)).text();
    assert.ok(!configText.includes(SECRET), 'the key reached /config.json');
    const config = JSON.parse(configText);
    assert.equal(config.mode, 'provider');
    assert.deepEqual(config.model, { id: 'openai/demo', url: `${url}proxy/v1`, apiKey: 'proxied' });

    const page = await openPage(url);
    const sent = [];
    page.on('request', (req) => sent.push(JSON.stringify(req.headers()) + (req.postData() ?? '')));
    assert.equal(await page.textContent('#mode'), 'provider');
    await recordReplyText(page);
    const reply = await sendAndWait(page, 'hello');
    const text = await reply.locator('.text').textContent();
    assert.match(text, /offline demo model for wasm-agent/);
    await assertStreamed(page, text, 'proxied');

    const [request] = upstream.requests.filter((r) => r.path.endsWith('/chat/completions'));
    assert.equal(request.headers.authorization, `Bearer ${SECRET}`);
    assert.equal(request.body.model, 'demo');
    assert.equal(request.headers.origin, undefined);
    assert.ok(sent.length > 0 && sent.every((s) => !s.includes(SECRET)), 'the page sent the key');
    assert.ok(!(await page.content()).includes(SECRET));
    await page.screenshot({ path: path.join(RESULTS, 'demo-provider.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Stop closes the upstream request too', T, async () => {
    const page = await openPage(url);
    const index = upstream.requests.length;
    await page.fill('#input', 'Tell me something long');
    await page.click('#send');
    await page.waitForFunction(
      () => (document.querySelector('.msg.assistant .text')?.textContent.length ?? 0) > 0,
      null,
      { timeout: WAIT },
    );
    await page.click('#stop');
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.equal(await page.locator('.msg.assistant .meta').textContent(), 'stopped');
    const record = await upstream.waitForClose(index, WAIT);
    assert.equal(record.finished, false);
    await page.context().close();
  });

  it('refuses other sites and non-JSON posts', T, async () => {
    const before = upstream.requests.length;
    const foreign = await fetch(`${url}proxy/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: '{"model":"echo","messages":[]}',
    });
    assert.equal(foreign.status, 403);
    await foreign.arrayBuffer();
    const plain = await fetch(`${url}proxy/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"model":"echo","messages":[]}',
    });
    assert.equal(plain.status, 415);
    await plain.arrayBuffer();
    assert.equal(upstream.requests.length, before, 'a refused request reached the provider');
  });
});
