// The demo page's refund workflow (issue 15: a workflow suspended in the demo page at an approval
// step, the page reloaded, the run resumed and finished): `node --test www/workflow.test.mjs`
// (needs pkg/ and Chromium; WASM_AGENT_DEMO_WORKER=0 runs it with the chat agent in the page, the
// workflow runs in the page either way). Each test reads what the panel shows, and what the
// package stored through the workflow's own getWorkflowRunById / listWorkflowRuns in the page.

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { RESULTS, T, WAIT, childEnv, newContext, openPage, reload, serve, useBrowser } from './page-harness.mjs';

useBrowser();

/** Opens the refund panel once it has listed the stored runs. */
async function openRefunds(page) {
  await page.locator('#refunds-button[data-ready="1"]').waitFor({ timeout: WAIT });
  await page.click('#refunds-button');
  await page.locator('#refunds[open]').waitFor({ timeout: WAIT });
}

/** Fills the form and submits it. */
async function requestRefund(page, amount, reason) {
  await page.fill('#refund-amount', amount);
  await page.fill('#refund-reason', reason);
  await page.click('#refund-start');
}

/** The card of run `runId` (a locator). */
const cardOf = (page, runId) => page.locator(`.refund-run[data-run-id="${runId}"]`);

/** Waits for the one new card that waits for approval; resolves to its run id. */
async function waitForWaiting(page, known = []) {
  const handle = await page.waitForFunction(
    (seen) => [...document.querySelectorAll('.refund-run[data-status="suspended"]')].map((c) => c.dataset.runId).find((id) => !seen.includes(id)),
    known,
    { timeout: WAIT },
  );
  return handle.jsonValue();
}

/** What the card of `runId` shows: `{ status, title, quote, steps: { id: text }, states: { id: state }, outcome, error, buttons }`. */
function shownCard(page, runId) {
  return page.evaluate((id) => {
    const card = document.querySelector(`.refund-run[data-run-id="${id}"]`);
    if (!card) return null;
    const visible = (sel) => {
      const node = card.querySelector(sel);
      return node && !node.hidden ? node.textContent : null;
    };
    const rows = [...card.querySelectorAll('.refund-step')];
    return {
      status: card.querySelector('.refund-run-status').textContent,
      title: card.querySelector('.refund-run-title').textContent,
      quote: visible('.refund-quote'),
      steps: Object.fromEntries(rows.map((r) => [r.dataset.step, r.querySelector('.refund-step-status').textContent])),
      states: Object.fromEntries(rows.map((r) => [r.dataset.step, r.dataset.state])),
      outcome: visible('.refund-outcome'),
      error: visible('.refund-error'),
      buttons: card.querySelector('.refund-decision').hidden ? [] : [...card.querySelectorAll('.refund-decision button')].map((b) => b.textContent),
    };
  }, runId);
}

/** The panel's list of paid refunds, as text per line. */
function shownLedger(page) {
  return page.locator('#refund-ledger li').evaluateAll((items) => items.map((li) => [...li.children].map((c) => c.textContent).join(' | ')));
}

/** The ledger the issue step pays into (localStorage). */
function storedLedger(page) {
  return page.evaluate(() => JSON.parse(localStorage.getItem('wasm-agent-demo:refunds') ?? '[]'));
}

/** The run as the package stored it, read through the refund workflow's getWorkflowRunById. */
function storedRun(page, runId) {
  return page.evaluate(async (id) => {
    const pkg = await import('/pkg/index.browser.js');
    const { buildRefundWorkflow } = await import('/refund-workflow.js');
    const wf = buildRefundWorkflow(pkg, { ledger: { pay: () => Promise.reject(new Error('not used')) } });
    const run = await wf.getWorkflowRunById(id);
    if (!run) return null;
    const steps = Object.fromEntries(Object.entries(run.steps).map(([step, r]) => [step, r.status]));
    return { status: run.status, result: run.result ?? null, steps, suspendPayload: run.steps.approval?.suspendPayload ?? null };
  }, runId);
}

/** How many stored runs of the refund workflow have `status`. */
function storedCount(page, status) {
  return page.evaluate(async (s) => {
    const pkg = await import('/pkg/index.browser.js');
    const { buildRefundWorkflow } = await import('/refund-workflow.js');
    const wf = buildRefundWorkflow(pkg, { ledger: { pay: () => Promise.reject(new Error('not used')) } });
    return (await wf.listWorkflowRuns({ status: s })).total;
  }, status);
}

/**
 * Records every change of a step's state in the runs list (from attribute mutations with their
 * old values), so a test can tell live drawing from a redraw at the end. `stateHistory` reads them.
 */
function recordStepStates(page) {
  return page.evaluate(() => {
    window.__steps = [];
    window.__stepObserver?.disconnect();
    window.__stepObserver = new MutationObserver((records) => {
      for (const r of records) window.__steps.push({ run: r.target.closest('.refund-run')?.dataset.runId, step: r.target.dataset.step, old: r.oldValue });
    });
    window.__stepObserver.observe(document.getElementById('refund-runs'), { subtree: true, attributes: true, attributeFilter: ['data-state'], attributeOldValue: true });
  });
}

/** Each step's states of run `runId` in order since recordStepStates (repeats folded), ending with its state now. */
function stateHistory(page, runId) {
  return page.evaluate((id) => {
    const card = document.querySelector(`.refund-run[data-run-id="${id}"]`);
    const out = {};
    for (const row of card.querySelectorAll('.refund-step')) {
      const seen = window.__steps.filter((r) => r.run === id && r.step === row.dataset.step).map((r) => r.old);
      const all = [...seen, row.dataset.state].filter((s) => s !== null);
      out[row.dataset.step] = all.filter((s, i) => s !== all[i - 1]);
    }
    return out;
  }, runId);
}

describe('demo page: the refund workflow panel', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('a refund waits for approval, survives a reload, is approved there and pays once', T, async () => {
    const page = await openPage(`${url}?model=echo`);
    await openRefunds(page);
    assert.equal(await page.isVisible('#refund-empty'), true, 'an empty panel says nothing waits');
    await recordStepStates(page);
    await requestRefund(page, '19.99', 'changed my mind');
    const runId = await waitForWaiting(page);

    // The steps were drawn as they ran: the check ran and finished, the approval suspended.
    assert.deepEqual(await stateHistory(page, runId), {
      check: ['pending', 'running', 'success'],
      approval: ['pending', 'running', 'suspended'],
      issue: ['pending'],
    });
    assert.deepEqual(await shownCard(page, runId), {
      status: 'waits for your approval',
      title: '€19.99 · changed my mind',
      quote: 'Not faulty: less a 10 % restocking fee: €17.99 back (fee €2.00).',
      steps: { check: 'done', approval: 'waiting for approval', issue: 'not started' },
      states: { check: 'success', approval: 'suspended', issue: 'pending' },
      outcome: null,
      error: null,
      buttons: ['Approve', 'Decline'],
    });
    assert.equal(await page.isVisible('#refund-empty'), false);
    const waiting = await storedRun(page, runId);
    assert.equal(waiting.status, 'suspended');
    assert.deepEqual(waiting.steps, { check: 'success', approval: 'suspended' });
    assert.deepEqual(waiting.suspendPayload, { amount: 19.99, reason: 'changed my mind', fee: 2, refund: 17.99, policy: 'Not faulty: less a 10 % restocking fee' });
    await page.click('#refunds-close');
    assert.equal((await page.textContent('#refunds-button .refunds-count')).trim(), '1 waiting for approval');

    // After a reload the header counts it and the panel lists it, drawn from storage.
    await reload(page);
    await page.locator('#refunds-button[data-ready="1"]').waitFor({ timeout: WAIT });
    assert.equal(await page.getAttribute('#refunds-button', 'data-pending'), '1');
    assert.equal(await page.isVisible('#refunds-button .refunds-count'), true);
    await openRefunds(page);
    assert.deepEqual(await page.locator('.refund-run').evaluateAll((cards) => cards.map((c) => c.dataset.runId)), [runId]);
    const listed = await shownCard(page, runId);
    assert.equal(listed.status, 'waits for your approval');
    assert.equal(listed.title, '€19.99 · changed my mind');
    assert.equal(listed.quote, 'Not faulty: less a 10 % restocking fee: €17.99 back (fee €2.00).');
    assert.deepEqual(listed.steps, { check: 'done', approval: 'waiting for approval', issue: 'not started' });
    assert.deepEqual(listed.buttons, ['Approve', 'Decline']);
    assert.deepEqual(await shownLedger(page), []);

    await recordStepStates(page);
    await cardOf(page, runId).locator('.refund-note').fill('ok by me');
    await cardOf(page, runId).locator('.approve').click();
    await cardOf(page, runId).locator('.refund-outcome:not([hidden])').waitFor({ timeout: WAIT });
    const done = await shownCard(page, runId);
    const reference = `RF-${runId.slice(0, 8).toUpperCase()}`;
    assert.equal(done.outcome, `Refunded €17.99 (reference ${reference}). Note: ok by me`);
    assert.equal(done.status, 'finished');
    assert.deepEqual(done.steps, { check: 'done', approval: 'done', issue: 'done' });
    assert.deepEqual(done.buttons, []);
    assert.equal(done.error, null);
    // The resumed steps were drawn live too; the check did not run again.
    assert.deepEqual(await stateHistory(page, runId), { check: ['success'], approval: ['suspended', 'running', 'success'], issue: ['pending', 'running', 'success'] });
    assert.deepEqual(await shownLedger(page), [`€17.99 | changed my mind | ${reference}`]);
    assert.equal(await page.isVisible('#refunds-button .refunds-count'), false, 'nothing waits any more');

    const stored = await storedRun(page, runId);
    assert.equal(stored.status, 'success');
    assert.deepEqual(stored.steps, { check: 'success', approval: 'success', issue: 'success' });
    assert.deepEqual(stored.result, { outcome: 'refunded', amount: 19.99, refund: 17.99, reference, note: 'ok by me' });
    assert.deepEqual((await storedLedger(page)).map((e) => [e.runId, e.refund]), [[runId, 17.99]]);
    assert.equal(await storedCount(page, 'suspended'), 0);

    // A finished run is not listed after the next reload.
    await reload(page);
    await openRefunds(page);
    assert.equal(await page.locator('.refund-run').count(), 0);
    assert.deepEqual(await shownLedger(page), [`€17.99 | changed my mind | ${reference}`]);
    await page.screenshot({ path: path.join(RESULTS, 'workflow-approved.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Decline ends the run as success with the outcome declined, and pays nothing', T, async () => {
    const page = await openPage(`${url}?model=echo`);
    await openRefunds(page);
    await requestRefund(page, '80', 'arrived broken');
    const runId = await waitForWaiting(page);
    assert.equal((await shownCard(page, runId)).quote, 'Faulty goods: the full amount: €80.00 back.');
    await cardOf(page, runId).locator('.refund-note').fill('no proof of damage');
    await cardOf(page, runId).locator('.decline').click();
    await page.locator(`.refund-run[data-run-id="${runId}"][data-outcome="declined"]`).waitFor({ timeout: WAIT });
    const card = await shownCard(page, runId);
    assert.equal(card.outcome, 'Declined: nothing was paid. Note: no proof of damage');
    assert.deepEqual(card.steps, { check: 'done', approval: 'done', issue: 'done' });
    assert.deepEqual(card.buttons, []);
    assert.deepEqual(await shownLedger(page), []);
    assert.equal(await page.isVisible('#refund-ledger-empty'), true);
    const stored = await storedRun(page, runId);
    assert.equal(stored.status, 'success');
    assert.deepEqual(stored.result, { outcome: 'declined', amount: 80, note: 'no proof of damage' });
    assert.deepEqual(await storedLedger(page), []);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('two tabs approving one run: it pays once, and the tab that lost says it was refused; a double click sends one decision', T, async () => {
    const context = await newContext();
    const a = await openPage(`${url}?model=echo`, context);
    await openRefunds(a);
    await requestRefund(a, '42', 'wrong size');
    const runId = await waitForWaiting(a);
    // Tab b is opened now, so it lists the waiting run too.
    const b = await openPage(`${url}?model=echo`, context);
    await openRefunds(b);
    await cardOf(b, runId).locator('.approve').waitFor({ timeout: WAIT });

    await Promise.all([cardOf(a, runId).locator('.approve').click(), cardOf(b, runId).locator('.approve').click()]);
    const settled = (page) =>
      page.waitForFunction(
        (id) => {
          const card = document.querySelector(`.refund-run[data-run-id="${id}"]`);
          if (!card || card.dataset.status === 'resuming' || card.dataset.status === 'suspended') return false;
          return !card.querySelector('.refund-error').hidden || card.dataset.outcome === 'refunded';
        },
        runId,
        { timeout: WAIT },
      );
    await Promise.all([settled(a), settled(b)]);
    const cards = [await shownCard(a, runId), await shownCard(b, runId)];
    const won = cards.filter((c) => c.error === null);
    const lost = cards.filter((c) => c.error !== null);
    assert.equal(won.length, 1, JSON.stringify(cards));
    assert.match(won[0].outcome, /^Refunded €37\.80 \(reference RF-/);
    assert.deepEqual(won[0].steps, { check: 'done', approval: 'done', issue: 'done' });
    // The loser either lost the claim while the winner ran, or came after it finished.
    assert.match(
      lost[0].error,
      /^Not resumed: another tab or click decided this run first \(.*(already running \(another resume of it won\)|is not suspended \(status: success\)).*\)$/,
    );
    assert.deepEqual(lost[0].buttons, [], 'the refused tab no longer offers the decision');
    assert.deepEqual((await storedLedger(a)).map((e) => e.runId), [runId], 'paid once over both tabs');
    assert.equal((await storedRun(b, runId)).status, 'success');

    // One tab, a double click on Approve: one decision, one payment, no refusal.
    await requestRefund(a, '10', 'not needed');
    const second = await waitForWaiting(a, [runId]);
    await cardOf(a, second).locator('.approve').dblclick();
    await cardOf(a, second).locator('.refund-outcome:not([hidden])').waitFor({ timeout: WAIT });
    const card = await shownCard(a, second);
    assert.equal(card.error, null);
    assert.match(card.outcome, /^Refunded €9\.00 /);
    assert.deepEqual((await storedLedger(a)).map((e) => e.runId), [second, runId]);
    assert.deepEqual(await shownLedger(a), [
      `€9.00 | not needed | RF-${second.slice(0, 8).toUpperCase()}`,
      `€37.80 | wrong size | RF-${runId.slice(0, 8).toUpperCase()}`,
    ]);
    assert.deepEqual([...a.errors, ...b.errors], []);
    await context.close();
  });

  it('a reload while the check step runs (?refund=<ms>): the run is listed as interrupted, Continue runs it from there', T, async () => {
    const page = await openPage(`${url}?model=echo&refund=1500`);
    await openRefunds(page);
    await requestRefund(page, '30', 'arrived damaged');
    await page.locator('.refund-run .refund-step[data-step="check"][data-state="running"]').waitFor({ timeout: WAIT });
    const runId = await page.getAttribute('.refund-run', 'data-run-id');
    assert.equal((await shownCard(page, runId)).steps.check, 'running…');
    // The first snapshot is written when the run starts: storage has it as running.
    assert.equal((await storedRun(page, runId)).status, 'running');

    await reload(page);
    await openRefunds(page);
    const listed = await shownCard(page, runId);
    assert.equal(listed.status, 'interrupted, or running in another tab');
    assert.deepEqual(listed.steps, { check: 'not started', approval: 'not started', issue: 'not started' });
    assert.deepEqual(listed.buttons, [], 'nothing to approve yet');
    // The closed page's Web Lock is freed soon after the reload, not at once: until then the
    // package refuses (the card says why) and Continue is offered again.
    const card = cardOf(page, runId);
    for (let tries = 0; ; tries++) {
      assert.ok(tries < 50, 'Continue was refused 50 times');
      await card.locator('.continue').click();
      const settled = await page.waitForFunction(
        (id) => {
          const c = document.querySelector(`.refund-run[data-run-id="${id}"]`);
          if (c.dataset.status === 'suspended') return 'suspended';
          return c.dataset.status === 'stale' && !c.querySelector('.refund-error').hidden && c.querySelector('.refund-error').textContent;
        },
        runId,
        { timeout: WAIT },
      );
      const outcome = await settled.jsonValue();
      if (outcome === 'suspended') break;
      assert.match(outcome, /^Not continued: another tab or page still runs it/);
      await page.waitForTimeout(100);
    }
    const waiting = await shownCard(page, runId);
    assert.deepEqual(waiting.steps, { check: 'done', approval: 'waiting for approval', issue: 'not started' });
    assert.equal(waiting.error, null);
    assert.equal(waiting.quote, 'Faulty goods: the full amount: €30.00 back.');
    assert.equal(await page.getAttribute('#refunds-button', 'data-pending'), '1');
    await card.locator('.approve').click();
    await card.locator('.refund-outcome:not([hidden])').waitFor({ timeout: WAIT });
    assert.match((await shownCard(page, runId)).outcome, /^Refunded €30\.00 /);
    assert.equal((await storedRun(page, runId)).status, 'success');
    assert.deepEqual((await storedLedger(page)).map((e) => e.runId), [runId]);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Continue on a run another tab still runs is refused; once that tab has it waiting, the card offers the approval', T, async () => {
    const context = await newContext();
    const a = await openPage(`${url}?model=echo&refund=6000`, context);
    await openRefunds(a);
    await requestRefund(a, '15', 'too small');
    await a.locator('.refund-run .refund-step[data-step="check"][data-state="running"]').waitFor({ timeout: WAIT });
    const runId = await a.getAttribute('.refund-run', 'data-run-id');
    const b = await openPage(`${url}?model=echo`, context);
    await openRefunds(b);
    const card = cardOf(b, runId);
    assert.equal((await shownCard(b, runId)).status, 'interrupted, or running in another tab');
    await card.locator('.continue').click();
    await card.locator('.refund-error:not([hidden])').waitFor({ timeout: WAIT });
    const refused = await shownCard(b, runId);
    assert.match(refused.error, /^Not continued: another tab or page still runs it/);
    assert.equal(refused.status, 'interrupted, or running in another tab', 'offered again');

    // Tab a's check ends and its run waits; b's Continue now finds it waiting and shows the approval.
    await a.locator(`.refund-run[data-run-id="${runId}"][data-status="suspended"]`).waitFor({ timeout: WAIT });
    await card.locator('.continue').click();
    await b.locator(`.refund-run[data-run-id="${runId}"][data-status="suspended"]`).waitFor({ timeout: WAIT });
    const offered = await shownCard(b, runId);
    assert.match(offered.error, /^Not continued: .*not running/i);
    assert.deepEqual(offered.steps, { check: 'done', approval: 'waiting for approval', issue: 'not started' });
    assert.deepEqual(offered.buttons, ['Approve', 'Decline']);
    assert.equal((await storedRun(b, runId)).status, 'suspended');
    assert.deepEqual([...a.errors, ...b.errors], []);
    await context.close();
  });

  it("a request the workflow's inputSchema refuses shows the ValidationError naming the field, and starts nothing", T, async () => {
    const page = await openPage(`${url}?model=echo`);
    await openRefunds(page);
    let shown = '';
    /** Submits; resolves to the next error shown (each case has another message). */
    const refused = async (amount, reason) => {
      await requestRefund(page, amount, reason);
      const next = await page.waitForFunction(
        (before) => {
          const box = document.getElementById('refund-error');
          return !box.hidden && box.textContent !== before && box.textContent;
        },
        shown,
        { timeout: WAIT },
      );
      shown = await next.jsonValue();
      return shown;
    };
    assert.equal(await refused('-5', 'arrived broken'), 'The workflow refused the request: inputData.amount: must be > 0');
    assert.match(await refused('', 'arrived broken'), /^The workflow refused the request: inputData: missing required property 'amount'/);
    assert.match(await refused('6000', 'arrived broken'), /^The workflow refused the request: inputData\.amount: must be ≤ 5000/);
    assert.match(await refused('12', 'no'), /^The workflow refused the request: inputData\.reason: must have at least 3 characters/);
    assert.equal(await page.locator('.refund-run').count(), 0, 'a refused request shows no run');
    assert.equal(await storedCount(page, 'suspended'), 0);
    assert.equal(await storedCount(page, 'success'), 0);
    // The entered values stay, to be corrected; then the request goes through.
    assert.equal(await page.inputValue('#refund-reason'), 'no');
    await requestRefund(page, '12', 'arrived damaged');
    const runId = await waitForWaiting(page);
    assert.equal(await page.isVisible('#refund-error'), false, 'the error went with the corrected request');
    assert.equal((await storedRun(page, runId)).status, 'suspended');
    assert.equal(await page.inputValue('#refund-amount'), '', 'the form is cleared for the next request');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
