// The Playwright harness of the chat demo's tests (demo.test.mjs, widget.test.mjs): starts
// www/serve.mjs as a child process on a free port and drives the page in headless Chromium with
// playwright-core. `useBrowser()` registers the hooks that launch and close the browser and the
// servers. Screenshots go to test-results/ (git-ignored). serve.mjs does not serve this file.

import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '..');
export const RESULTS = path.join(ROOT, 'test-results');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const T = { timeout: 45_000 };
export const WAIT = 15_000; // any single wait in the page
const KEY_VARS = ['OPENAI', 'GROQ', 'DEEPSEEK', 'MISTRAL', 'XAI', 'OPENROUTER', 'TOGETHERAI'].flatMap((p) => [
  `${p}_API_KEY`,
  `${p}_BASE_URL`,
]);
export const SECRET = 'sk-demo-test-secret-0123456789';
/** WASM_AGENT_DEMO_WORKER=0: the demo's agent runs in the page in every test, not in its SharedWorker. */
export const IN_PAGE = process.env.WASM_AGENT_DEMO_WORKER === '0';

/** The environment of a child: no provider keys of the developer's, plus `extra`. */
export function childEnv(extra = {}) {
  const env = { ...process.env };
  for (const name of [...KEY_VARS, 'PORT', 'WASM_AGENT_DEMO_MODEL']) delete env[name];
  return { ...env, ...extra };
}

/** Starts `node www/serve.mjs --port 0`; resolves once it printed its URL line. */
export function startServe(env) {
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
export async function stopChild(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
  await exited;
  clearTimeout(timer);
}

let browser;
const children = [];

/** Registers the hooks that launch Chromium before the tests and close it and the servers after. */
export function useBrowser() {
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
}

export async function serve(env) {
  const started = startServe(env);
  children.push(started.child);
  return started.ready;
}

/**
 * A fresh browser context: its own IndexedDB and localStorage, so no conversation carries over.
 * `options`: more Playwright context options (e.g. another `viewport`, or `bypassCSP`).
 */
export async function newContext(options = {}) {
  const context = await browser.newContext({ viewport: { width: 900, height: 720 }, ...options });
  context.setDefaultTimeout(WAIT);
  // WASM_AGENT_DEMO_WORKER=0 runs every test with the agent in the page (Settings switch off).
  if (IN_PAGE) await context.addInitScript(() => localStorage.setItem('wasm-agent-demo:worker', '0'));
  return context;
}

/** A page on `url` (in a fresh context unless one is given), ready to chat; collects page errors. */
export async function openPage(url, context) {
  context ??= await newContext();
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  await page.goto(url, { timeout: WAIT });
  await page.waitForSelector('body[data-ready="1"]', { timeout: WAIT });
  return page;
}

/** Reloads `page` and waits until it is ready again (its conversation drawn from memory). */
export async function reload(page) {
  await page.reload({ timeout: WAIT });
  await page.waitForSelector('body[data-ready="1"]', { timeout: WAIT });
}

/** The messages on screen, in order: `{ role, text }` (an assistant's reply text, without reasoning). */
export function shownMessages(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#messages .msg')].map((m) => ({
      role: m.dataset.role,
      text: (m.dataset.role === 'assistant' ? m.querySelector('.text') : m.querySelector('.bubble'))?.textContent ?? '',
    })),
  );
}

/** Waits until `page` shows exactly `n` messages, none of them still streaming. */
export async function waitForMessages(page, n) {
  await page.waitForFunction(
    (count) =>
      document.querySelectorAll('#messages .msg').length === count &&
      document.querySelectorAll('#messages .msg.assistant:not([data-done="1"])').length === 0,
    n,
    { timeout: WAIT },
  );
}

/** The thread list: `{ label, current }` per entry, top to bottom. */
export function shownThreads(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#threads .thread-item')].map((li) => ({
      id: li.dataset.threadId,
      label: li.querySelector('.thread-title').textContent,
      current: li.classList.contains('current'),
    })),
  );
}

/** The Chat Completions requests the offline model server has answered so far. */
export async function modelRequests(url) {
  const config = await (await fetch(`${url}config.json`)).json();
  const res = await fetch(new URL('/__requests', config.model.url));
  assert.equal(res.status, 200);
  return (await res.json()).filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions'));
}

/** A request's messages as `{ role, text }`, system messages left out. */
export function promptOf(request) {
  const text = (content) =>
    typeof content === 'string' ? content : (content ?? []).map((p) => (typeof p === 'string' ? p : (p.text ?? ''))).join('');
  return request.body.messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, text: text(m.content) }));
}

/** The one model request whose last message is the user message `said`. */
export async function requestFor(url, said) {
  const found = (await modelRequests(url)).filter((r) => promptOf(r).at(-1)?.text === said);
  assert.equal(found.length, 1, `requests ending with ${JSON.stringify(said)}: ${found.length}`);
  return found[0];
}

/** Records every change of the newest reply's text (with the time), so a test can tell streaming from one write. */
export async function recordReplyText(page) {
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
export async function assertStreamed(page, finalText, what) {
  const snapshots = await page.evaluate(() => window.__snapshots);
  assert.ok(snapshots.length >= 5, `${what}: the text arrived in ${snapshots.length} update(s)`);
  for (const { text } of snapshots) assert.ok(finalText.startsWith(text), `${what}: ${JSON.stringify(text)} is not a prefix`);
  const span = snapshots.at(-1).at - snapshots[0].at;
  assert.ok(span >= 200, `${what}: all text arrived within ${Math.round(span)} ms (buffered?)`);
}

export async function sendAndWait(page, text, { via = 'enter' } = {}) {
  const before = await page.locator('.msg.assistant[data-done="1"]').count();
  await page.fill('#input', text);
  if (via === 'enter') await page.press('#input', 'Enter');
  else await page.click('#send');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-done="1"]').length > n, before, {
    timeout: WAIT,
  });
  return page.locator('.msg.assistant').last();
}
