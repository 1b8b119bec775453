// The main thread while the demo widget streams a long reply (SPEC §21.1), the agent in the page
// against the agent in the demo's SharedWorker: `./x bench --main-thread [--n 20000] [--runs 3]`.
//
// Each run opens www/ (served by www/serve.mjs, offline model `deltas:N`) in a fresh Chromium
// context with `?worker=0` or `?worker=1`, sends one message and waits until the N-delta reply
// is drawn. Measured in the page: long tasks (> 50 ms, PerformanceObserver 'longtask'): how many,
// the longest, their sum; and the main thread's busy time over the reply (Chrome DevTools
// Protocol Performance.getMetrics TaskDuration, the renderer main thread's task time), with the
// wall time. Medians over the runs; one warm-up run of each mode first.

import { chromium } from 'playwright-core';
import { childEnv, startServe, stopChild } from '../www/page-harness.mjs';
import { median, table } from './report.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REPLY_TIMEOUT_MS = 300_000;

/** One reply of `n` deltas with the agent in the page (`worker` false) or the SharedWorker. */
async function oneRun(browser, url, n, worker) {
  const context = await browser.newContext({ viewport: { width: 900, height: 720 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}?model=deltas:${n}&worker=${worker ? 1 : 0}`, { timeout: 30_000 });
    await page.waitForSelector('body[data-ready="1"]', { timeout: 30_000 });
    await page.evaluate(() => {
      window.__long = [];
      new PerformanceObserver((list) => window.__long.push(...list.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
    });
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const busy = async () => (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration').value * 1000;
    const before = await busy();
    const started = Date.now();
    await page.fill('#input', 'stream a long reply');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done="1"]').length > 0, null, { timeout: REPLY_TIMEOUT_MS, polling: 250 });
    const wallMs = Date.now() - started;
    const busyMs = (await busy()) - before;
    const text = await page.locator('.msg.assistant .text').last().textContent();
    if (!text.trim().endsWith(`w${n - 1}`)) throw new Error(`the reply is incomplete (${text.length} characters, ends ${JSON.stringify(text.slice(-20))})`);
    const long = await page.evaluate(() => window.__long);
    return { longTasks: long.length, longestMs: Math.max(0, ...long), longSumMs: long.reduce((a, b) => a + b, 0), busyMs, wallMs };
  } finally {
    await context.close();
  }
}

/** Runs the benchmark; prints the table and writes `json`. Resolves to whether a run failed. */
export async function mainThreadBenchmark({ n, runs, json, writeReport }) {
  const served = startServe(childEnv());
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const results = { page: [], worker: [] };
  let failed = false;
  try {
    const { url } = await served.ready;
    for (let i = 0; i <= runs; i++) {
      for (const mode of ['page', 'worker']) {
        try {
          const r = await oneRun(browser, url, n, mode === 'worker');
          if (i > 0) results[mode].push(r); // run 0 warms up
          console.error(`bench: ${mode} run ${i}${i ? '' : ' (warm-up)'}: ${JSON.stringify(r)}`);
        } catch (err) {
          failed = true;
          console.error(`bench: ${mode} run ${i} failed: ${err.message}`);
        }
      }
    }
  } finally {
    await browser.close();
    await stopChild(served.child);
  }
  const med = (mode, k) => median(results[mode].map((r) => r[k]));
  const fmt = (v) => (Number.isFinite(v) ? String(Math.round(v)) : '–');
  const rows = [['agent in', 'long tasks', 'longest ms', 'long sum ms', 'main busy ms', 'wall ms']];
  for (const mode of ['page', 'worker']) {
    rows.push([mode === 'page' ? 'the page' : 'SharedWorker', ...['longTasks', 'longestMs', 'longSumMs', 'busyMs', 'wallMs'].map((k) => fmt(med(mode, k)))]);
  }
  console.log(`main thread while the demo widget streams ${n} deltas (medians of ${runs} runs, Chromium)\n`);
  console.log(table(rows));
  writeReport(json, { benchmark: 'main-thread', n, runs, date: new Date().toISOString(), results });
  return failed;
}
