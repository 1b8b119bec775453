// The Trace view of the chat page (trace-view.js): a reply's Trace button opens its spans, from
// the demo's exporter (trace-exporter.js), as a timeline. Run in both of the demo's modes (the
// `demo` step: the agent in the SharedWorker, the spans crossing to the page over a
// BroadcastChannel; `demo-page`: the agent in the page). Accessibility (axe, light and dark) is
// checked with the others in accessibility.test.mjs.
// `node --test www/trace-view.test.mjs` (needs pkg/ and Chromium). Screenshots: test-results/trace-*.png.

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { IN_PAGE, RESULTS, T, WAIT, childEnv, newContext, openPage, sendAndWait, serve, useBrowser } from './page-harness.mjs';

useBrowser();

/** The open Trace view's rows: `{ type, name, depth, id, parent, ms, shownMs, error, bar, track }` (bar/track: x extents). */
function traceRows(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#trace[open] #trace-rows tr')].map((row) => {
      const box = (el) => {
        const r = el.getBoundingClientRect();
        return { left: r.left, right: r.right };
      };
      return {
        type: row.dataset.type,
        name: row.querySelector('.trace-name').textContent,
        depth: Number(row.dataset.depth),
        id: row.dataset.spanId,
        parent: row.dataset.parentSpanId ?? null,
        ms: Number(row.querySelector('td.trace-duration').dataset.ms),
        shownMs: row.querySelector('td.trace-duration').textContent,
        error: row.classList.contains('errored') ? row.querySelector('.trace-error').textContent : null,
        bar: box(row.querySelector('.trace-bar')),
        track: box(row.querySelector('.trace-track')),
      };
    }),
  );
}

/** A one-step run of the demo agent, as `[depth, type, name]` rows. */
const ONE_STEP = [
  [0, 'agent_run', "agent run: 'demo'"],
  [1, 'model_generation', "llm: 'demo'"],
  [2, 'model_step', 'step: 0'],
];
const shape = (rows) => rows.map((r) => [r.depth, r.type, r.name]);

/** Clicks the Trace button of the newest reply and waits for the view. */
async function openTrace(page) {
  const button = page.locator('.msg.assistant').last().locator('.trace-reply');
  await button.waitFor({ timeout: WAIT });
  await button.click();
  await page.locator('#trace[open]').waitFor({ timeout: WAIT });
}

/** Each row's parent is the row above it one level up; a child's bar is inside its parent's. */
function assertNested(rows) {
  for (const [i, row] of rows.entries()) {
    if (row.depth === 0) continue;
    const parent = rows.slice(0, i).findLast((r) => r.depth === row.depth - 1);
    assert.ok(parent, `${row.name} has no row above it one level up`);
    assert.equal(row.parent, parent.id, `${row.name} is drawn under ${parent.name}, which is not its parent span`);
    assert.ok(row.bar.left >= parent.bar.left - 1 && row.bar.right <= parent.bar.right + 1, `${row.name}'s bar is outside ${parent.name}'s`);
    assert.ok(row.ms <= parent.ms, `${row.name} (${row.ms} ms) outlasts ${parent.name} (${parent.ms} ms)`);
  }
  for (const row of rows) {
    assert.ok(Number.isInteger(row.ms) && row.ms >= 0, `${row.name}: duration ${row.ms}`);
    assert.equal(row.shownMs, `${row.ms} ms`);
    assert.ok(row.bar.left >= row.track.left - 0.5 && row.bar.right <= row.track.right + 0.5, `${row.name}'s bar leaves the timeline`);
    assert.ok(row.bar.right > row.bar.left, `${row.name}'s bar has no width`);
  }
}

/** The page's own requests to the model server (with the agent in the worker there are none). */
function modelCallsOf(page) {
  const calls = [];
  page.on('request', (req) => {
    if (/\/v1\//.test(new URL(req.url()).pathname)) calls.push(req.url());
  });
  return calls;
}

describe(`chat page: the Trace view (agent ${IN_PAGE ? 'in the page' : 'in the SharedWorker'})`, () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('after a reply that calls the clock tool, Trace shows agent_run → model_generation → model_step → tool_call, nested, with durations and bars; keyboard opens it, Esc closes it', T, async () => {
    const page = await openPage(url);
    const calls = modelCallsOf(page);
    const reply = await sendAndWait(page, 'What time is it?');
    assert.equal(await reply.locator('.tool-card[data-state="done"] .tool-name').textContent(), 'clock');
    const button = reply.locator('.trace-reply');
    await button.waitFor({ timeout: WAIT });
    assert.equal(await button.textContent(), 'Trace');
    assert.equal(await button.getAttribute('aria-haspopup'), 'dialog');
    // Tab from Regenerate reaches it; Enter opens the view, on its Close button.
    await reply.locator('.regenerate').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.classList.contains('trace-reply')), true, 'Tab after Regenerate is not Trace');
    await page.keyboard.press('Enter');
    await page.locator('#trace[open]').waitFor({ timeout: WAIT });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'trace-close');
    assert.equal(await page.getAttribute('#trace', 'aria-labelledby'), 'trace-title');
    assert.equal(await page.textContent('#trace-title'), 'Trace of the last reply');

    const rows = await traceRows(page);
    assert.deepEqual(shape(rows), [...ONE_STEP, [3, 'tool_call', "tool: 'clock'"], [2, 'model_step', 'step: 1']]);
    assertNested(rows);
    assert.deepEqual(rows.map((r) => r.error), [null, null, null, null, null]);
    // The run's own span fills the timeline; the tool ran after step 0 began and before step 1.
    const [run, , step0, tool, step1] = rows;
    assert.ok(Math.abs(run.bar.left - run.track.left) < 1 && Math.abs(run.bar.right - run.track.right) < 1, 'the run does not span the timeline');
    assert.ok(tool.bar.left >= step0.bar.left - 1 && tool.bar.right <= step1.bar.left + 1, 'the tool call is not between its step and the next');
    assert.match(await page.textContent('#trace-summary'), /^The reply to “What time is it\?”, sent at .+: one run, 5 spans, \d+ ms\.$/);
    assert.equal((await page.textContent('#trace-summary')).match(/(\d+) ms\.$/)[1], String(run.ms));
    assert.match(await page.getAttribute('#trace', 'data-trace-ids'), /^[0-9a-f]{32}$/);
    await page.screenshot({ path: path.join(RESULTS, `trace-clock${IN_PAGE ? '-page' : ''}.png`) });

    await page.keyboard.press('Escape');
    assert.equal(await page.evaluate(() => document.getElementById('trace').open), false, 'Esc closes the view');
    assert.equal(await page.evaluate(() => document.activeElement.classList.contains('trace-reply')), true, 'focus goes back to Trace');
    // Where the agent ran: the worker's spans crossed to the page, or the page called the model itself.
    if (IN_PAGE) assert.ok(calls.length >= 2, `the page made ${calls.length} model calls`);
    else assert.deepEqual(calls, [], 'the page itself called the model');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('a second message replaces the view with its run, and the Trace button moves to that reply', T, async () => {
    const page = await openPage(url);
    await sendAndWait(page, 'What time is it?');
    await openTrace(page);
    const firstTrace = await page.getAttribute('#trace', 'data-trace-ids');
    assert.equal((await traceRows(page)).filter((r) => r.type === 'tool_call').length, 1);
    await page.click('#trace-close');

    await sendAndWait(page, 'hello');
    await page.locator('.msg.assistant').last().locator('.trace-reply').waitFor({ timeout: WAIT });
    assert.equal(await page.locator('.trace-reply').count(), 1, 'the earlier reply still has a Trace button');
    await openTrace(page);
    const rows = await traceRows(page);
    assert.deepEqual(shape(rows), ONE_STEP);
    assertNested(rows);
    assert.match(await page.textContent('#trace-summary'), /^The reply to “hello”, .*: one run, 3 spans, \d+ ms\.$/);
    const secondTrace = await page.getAttribute('#trace', 'data-trace-ids');
    assert.match(secondTrace, /^[0-9a-f]{32}$/);
    assert.notEqual(secondTrace, firstTrace);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('an errored span is marked with its error: a failing tool call, and a model that answers 500', T, async () => {
    const context = await newContext();
    const page = await openPage(`${url}?model=tool-call`, context);
    await sendAndWait(page, 'call a tool');
    assert.equal(await page.locator('.tool-card[data-state="failed"]').count(), 1);
    await openTrace(page);
    let rows = await traceRows(page);
    const tool = rows.find((r) => r.type === 'tool_call');
    assert.ok(tool, JSON.stringify(rows.map((r) => r.type)));
    assert.match(tool.error, /failed: \w*Error: /);
    assert.deepEqual(
      rows.filter((r) => r.error).map((r) => r.type),
      ['tool_call'],
      'only the tool call failed (the model was told, and answered)',
    );
    assert.equal(await page.locator('#trace-rows tr.errored .trace-error-icon').getAttribute('aria-hidden'), 'true');
    await page.screenshot({ path: path.join(RESULTS, 'trace-tool-failed.png') });
    await page.close();

    const failing = await openPage(`${url}?model=error-500`, context);
    await sendAndWait(failing, 'hi');
    await openTrace(failing);
    rows = await traceRows(failing);
    assert.deepEqual(rows.map((r) => r.type), ['agent_run', 'model_generation', 'model_step']);
    for (const row of rows) assert.match(row.error ?? '', /failed: \w+: The model API answered 500/, `${row.type} is not marked`);
    assertNested(rows);
    assert.deepEqual([...page.errors, ...failing.errors], []);
    await context.close();
  });

  it('a background task answered in a follow-up run: both runs on one timeline', T, async () => {
    const page = await openPage(`${url}?research=50`);
    const reply = await sendAndWait(page, 'Research solana');
    await reply.locator('.tool-card[data-state="done"]').waitFor({ timeout: WAIT });
    // The follow-up run's spans come last: wait until the view has both runs.
    await openTrace(page);
    await page.waitForFunction(() => document.getElementById('trace').dataset.traceIds?.split(' ').length === 2, null, { timeout: WAIT });
    const rows = await traceRows(page);
    const roots = rows.filter((r) => r.depth === 0);
    assert.deepEqual(roots.map((r) => r.name), ["agent run: 'demo'", "agent run: 'demo'"]);
    assert.ok(roots[1].bar.left >= roots[0].bar.left, 'the follow-up run is drawn before the first');
    assert.deepEqual(
      rows.filter((r) => r.type === 'tool_call').map((r) => r.name),
      ["tool: 'research'"],
    );
    assertNested(rows);
    assert.match(await page.textContent('#trace-summary'), /: 2 runs \(a follow-up answered a background task\), \d+ spans, \d+ ms\.$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it("two tabs: each shows the trace of its own replies only (the worker's spans reach every tab)", T, async () => {
    const context = await newContext();
    const a = await openPage(url, context);
    const b = await openPage(url, context);
    await sendAndWait(a, 'What time is it?');
    await a.locator('.trace-reply').waitFor({ timeout: WAIT });
    await sendAndWait(b, 'hello from the second tab');
    await openTrace(b);
    assert.match(await b.textContent('#trace-summary'), /^The reply to “hello from the second tab”/);
    assert.deepEqual(shape(await traceRows(b)), ONE_STEP);
    // Tab a still shows its own reply's run (from its button on that reply, not on b's, which it
    // shows too: the two tabs share the conversation).
    await a.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 2);
    assert.equal(await a.locator('.msg.assistant').first().locator('.trace-reply').count(), 1);
    assert.equal(await a.locator('.trace-reply').count(), 1);
    await a.click('.trace-reply');
    await a.locator('#trace[open]').waitFor({ timeout: WAIT });
    assert.match(await a.textContent('#trace-summary'), /^The reply to “What time is it\?”/);
    assert.ok((await traceRows(a)).some((r) => r.name === "tool: 'clock'"));
    assert.notEqual(await a.getAttribute('#trace', 'data-trace-ids'), await b.getAttribute('#trace', 'data-trace-ids'));
    assert.deepEqual([...a.errors, ...b.errors], []);
    await context.close();
  });
});
