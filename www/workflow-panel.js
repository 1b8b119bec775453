// The demo page's refund panel (the header's "Refunds" button opens it): a form that starts a run
// of the refund workflow (refund-workflow.js), one card per run with its steps drawn live from
// `run.stream()`, Approve / Decline on a run that waits at the approval step, and the refunds
// paid so far.
//
// The workflow runs in this page in both of the demo's modes: the page loads the package anyway
// (for the conversations' Memory), the approval is a decision made here, and the runs' snapshots
// are in the package's default store (IndexedDB), which every tab of the page shares. So on load
// the panel lists the runs that wait for approval, a reload keeps them, and any tab can decide
// one: `createRun({ runId })`, then `resumeStream`. Of two decisions on one run (two tabs), the
// package lets one run; the other is refused, and its card says why and shows what is stored now.
// A run a page left running when it closed (a reload mid-step) is listed too, with Continue:
// `run.restart()` runs it again from its last finished step.
//
// Everything shown is set as text (textContent), never parsed as HTML: the reason is user input.

import { announce } from './a11y.js';
import { REFUND_STEPS, buildRefundWorkflow } from './refund-workflow.js';

/** localStorage key of the demo's ledger of paid refunds (newest first). */
export const LEDGER_KEY = 'wasm-agent-demo:refunds';
/** The most ledger entries kept. */
const LEDGER_SIZE = 50;
/** The most waiting runs listed on load. */
const LISTED = 20;

const euros = new Intl.NumberFormat('en-IE', { style: 'currency', currency: 'EUR' });
/** `12.5` → `€12.50` (anything else as it is). */
const money = (value) => (typeof value === 'number' && Number.isFinite(value) ? euros.format(value) : String(value ?? '?'));

const STEP_STATUS = {
  pending: 'not started',
  running: 'running…',
  success: 'done',
  suspended: 'waiting for approval',
  failed: 'failed',
  bailed: 'stopped',
};

const RUN_STATUS = {
  running: 'running',
  stale: 'interrupted, or running in another tab',
  resuming: 'resuming…',
  suspended: 'waits for your approval',
  success: 'finished',
  failed: 'failed',
  canceled: 'canceled',
  tripwire: 'stopped',
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * The demo's stand-in for a payment provider: each `pay` appends an entry to a list in
 * localStorage and resolves to its reference. It pays whatever it is asked to, on purpose (a real
 * API would take the run id as an idempotency key): the ledger shows that an approved run pays once.
 */
export function localLedger(storage = globalThis.localStorage) {
  const entries = () => {
    try {
      const list = JSON.parse(storage?.getItem(LEDGER_KEY) ?? '[]');
      return Array.isArray(list) ? list : [];
    } catch {
      return [];
    }
  };
  return {
    entries,
    async pay({ runId, refund, reason }) {
      const reference = `RF-${String(runId).slice(0, 8).toUpperCase()}`;
      const entry = { reference, runId, refund, reason, paidAt: new Date().toISOString() };
      // (Throws when storage is refused: the issue step fails and its card says so.)
      storage.setItem(LEDGER_KEY, JSON.stringify([entry, ...entries()].slice(0, LEDGER_SIZE)));
      return reference;
    },
  };
}

/** The input of a request (`{ amount, reason }`) as the card's title says it. */
function titleOf(input) {
  const reason = typeof input?.reason === 'string' ? input.reason.trim() : '';
  return reason ? `${money(input?.amount)} · ${reason}` : money(input?.amount);
}

/** What a finished run's result says, in words. */
function outcomeText(result) {
  const note = result?.note ? ` Note: ${result.note}` : '';
  if (result?.outcome === 'refunded') return `Refunded ${money(result.refund)} (reference ${result.reference}).${note}`;
  if (result?.outcome === 'declined') return `Declined: nothing was paid.${note}`;
  return 'Finished without an outcome.';
}

/**
 * One run's card. `onDecide(card, approved)` is called by Approve / Decline, `onContinue(card)` by
 * Continue (a run stored as running that this page does not run). The card keeps what the run is
 * known to be (`status`) and redraws from events (`apply`) or a stored run (`fromStored`).
 */
function runCard(runId, input, onDecide, onContinue) {
  const item = el('li', 'refund-run');
  item.dataset.runId = runId;
  const card = el('article', 'refund-card');
  const titleId = `refund-run-${runId}`;
  card.setAttribute('aria-labelledby', titleId);
  const head = el('div', 'refund-run-head');
  const title = el('h4', 'refund-run-title', titleOf(input));
  title.id = titleId;
  const status = el('span', 'refund-run-status');
  head.append(title, status);

  const steps = el('ol', 'refund-steps');
  const stepRows = new Map();
  for (const { id, label } of REFUND_STEPS) {
    const row = el('li', 'refund-step');
    row.dataset.step = id;
    const icon = el('span', 'refund-step-icon');
    icon.setAttribute('aria-hidden', 'true');
    const state = el('span', 'refund-step-status');
    row.append(icon, el('span', 'refund-step-name', label), state);
    steps.append(row);
    stepRows.set(id, { row, state });
  }

  const quote = el('p', 'refund-quote');
  quote.hidden = true;
  const decision = el('div', 'refund-decision');
  decision.hidden = true;
  const noteField = el('label', 'field refund-note-field');
  const noteInput = el('input', 'refund-note');
  noteInput.type = 'text';
  noteInput.autocomplete = 'off';
  noteField.append(el('span', '', 'Note '), noteInput);
  noteField.firstChild.append(el('small', '', '(optional)'));
  const actions = el('div', 'tool-actions refund-actions');
  const approve = el('button', 'approve', 'Approve');
  const decline = el('button', 'decline', 'Decline');
  for (const button of [approve, decline]) {
    button.type = 'button';
    button.setAttribute('aria-describedby', titleId);
  }
  approve.addEventListener('click', () => onDecide(api, true));
  decline.addEventListener('click', () => onDecide(api, false));
  actions.append(approve, decline);
  decision.append(noteField, actions);
  const restart = el('div', 'tool-actions refund-continue');
  restart.hidden = true;
  const continueButton = el('button', 'continue', 'Continue');
  continueButton.type = 'button';
  continueButton.setAttribute('aria-describedby', titleId);
  continueButton.addEventListener('click', () => onContinue(api));
  restart.append(continueButton);
  const outcome = el('p', 'refund-outcome');
  outcome.hidden = true;
  const error = el('p', 'refund-error');
  error.setAttribute('role', 'alert');
  error.hidden = true;
  card.append(head, steps, quote, decision, restart, outcome, error);
  item.append(card);

  function setStep(id, state, detail) {
    const step = stepRows.get(id);
    if (!step) return;
    step.row.dataset.state = state;
    step.state.textContent = detail ? `${STEP_STATUS[state] ?? state}: ${detail}` : (STEP_STATUS[state] ?? state);
  }

  function setStatus(next) {
    api.status = next;
    item.dataset.status = next;
    status.textContent = RUN_STATUS[next] ?? next;
    decision.hidden = next !== 'suspended';
    restart.hidden = next !== 'stale';
  }

  function showQuote(q) {
    if (!q || typeof q.refund !== 'number') return;
    quote.textContent = `${q.policy}: ${money(q.refund)} back${q.fee ? ` (fee ${money(q.fee)})` : ''}.`;
    quote.hidden = false;
  }

  function finish(runStatus, result, message) {
    setStatus(runStatus);
    if (runStatus === 'success') {
      item.dataset.outcome = result?.outcome ?? '';
      outcome.textContent = outcomeText(result);
      outcome.hidden = false;
    } else if (runStatus === 'failed') {
      api.fail(`The run failed: ${message || 'no reason given'}`);
    }
  }

  const api = {
    runId,
    item,
    status: 'running',
    /** Draws one event of the run's stream. */
    apply(event) {
      const p = event.payload ?? {};
      switch (event.type) {
        case 'workflow-step-start':
          setStep(p.id, 'running');
          setStatus('running');
          break;
        case 'workflow-step-result':
          setStep(p.id, p.status, p.error?.message);
          if (p.id === 'check' && p.status === 'success') showQuote(p.output);
          break;
        case 'workflow-step-suspended':
          setStep(p.id, 'suspended');
          showQuote(p.suspendPayload);
          break;
        case 'workflow-finish':
          finish(p.workflowStatus, p.finalWorkflowResult?.result, p.metadata?.errorMessage);
          break;
        default:
          break;
      }
    },
    /** Draws the run as storage has it (`workflow.getWorkflowRunById`), or says it is gone. */
    fromStored(record) {
      if (!record) {
        setStatus('gone');
        status.textContent = 'no longer stored';
        return;
      }
      for (const { id } of REFUND_STEPS) {
        const step = record.steps?.[id];
        setStep(id, step?.status ?? 'pending', step?.error?.message);
      }
      showQuote(record.steps?.check?.output ?? record.steps?.approval?.suspendPayload);
      if (record.status === 'running') {
        // Left running by a page that closed mid-step (or still running in another tab).
        setStatus('stale');
      } else {
        finish(record.status, record.result, record.error?.message);
      }
    },
    setStatus,
    /** Approve / Decline and the note, while a decision is on its way. */
    setBusy(busy) {
      for (const control of [approve, decline, noteInput, continueButton]) control.disabled = busy;
      if (busy) setStatus('resuming');
    },
    note: () => noteInput.value.trim(),
    fail(message) {
      error.textContent = message;
      error.hidden = false;
    },
    clearError() {
      error.hidden = true;
      error.textContent = '';
    },
  };
  setStatus('running');
  for (const { id } of REFUND_STEPS) setStep(id, 'pending');
  return api;
}

/**
 * Wires the panel. `pkg`: the wasm-agent module; `button`: the header button that opens
 * `dialog`; `resourceId`: whose runs these are; `checkDelayMs`: how long the check step takes
 * (`?refund=<ms>`). Resolves once the runs waiting for approval are listed (`button.dataset.ready`).
 */
export async function initRefundPanel({ pkg, button, dialog, resourceId, checkDelayMs = 0 }) {
  const $ = (id) => dialog.querySelector(`#${id}`);
  const form = $('refund-form');
  const amountInput = $('refund-amount');
  const reasonInput = $('refund-reason');
  const startButton = $('refund-start');
  const formError = $('refund-error');
  const runsList = $('refund-runs');
  const runsEmpty = $('refund-empty');
  const ledgerList = $('refund-ledger');
  const ledgerEmpty = $('refund-ledger-empty');
  const announcer = $('refund-announcer');
  const count = button.querySelector('.refunds-count');

  const ledger = localLedger();
  const workflow = buildRefundWorkflow(pkg, { ledger, checkDelayMs });
  const cards = new Map(); // run id → card, newest first

  /** Says `text` to a screen reader: from the dialog while it is open (the page behind is inert). */
  function say(text) {
    if (!dialog.open) return announce(text);
    const line = el('p', '', text);
    announcer.replaceChildren(line);
  }

  function refreshCount() {
    const waiting = [...cards.values()].filter((c) => c.status === 'suspended').length;
    button.dataset.pending = String(waiting);
    count.hidden = waiting === 0;
    count.replaceChildren(String(waiting), el('span', 'visually-hidden', ' waiting for approval'));
    runsEmpty.hidden = cards.size > 0;
  }

  function drawLedger() {
    const entries = ledger.entries();
    ledgerList.replaceChildren(
      ...entries.map((e) => {
        const li = el('li', 'refund-paid');
        li.append(el('span', 'refund-paid-amount', money(e.refund)), el('span', 'refund-paid-reason', e.reason ?? ''), el('span', 'refund-paid-ref', e.reference ?? ''));
        return li;
      }),
    );
    ledgerEmpty.hidden = entries.length > 0;
  }

  function addCard(runId, input, { atEnd = false } = {}) {
    const card = runCard(runId, input, decide, continueRun);
    cards.set(runId, card);
    if (atEnd) runsList.append(card.item);
    else runsList.prepend(card.item);
    refreshCount();
    return card;
  }

  /** What the finished or suspended `card` tells a screen reader. */
  function tell(card, result) {
    if (card.status === 'suspended') say(`The refund ${card.item.querySelector('.refund-run-title').textContent} waits for your approval.`);
    else if (card.status === 'success') say(outcomeText(result));
    else if (card.status === 'failed') say('The refund run failed.');
  }

  /** Reads `out` (a WorkflowRunOutput) into `cardFor()`'s card; resolves to the run's result. */
  async function follow(out, cardFor) {
    for await (const event of out) {
      const card = cardFor(event);
      if (card) card.apply(event);
    }
    return out.result;
  }

  async function start() {
    formError.hidden = true;
    const raw = amountInput.value.trim();
    // Checked by the workflow's inputSchema, not here: its ValidationError names the field.
    const inputData = { reason: reasonInput.value };
    if (raw !== '') inputData.amount = Number(raw);
    startButton.disabled = true;
    let card = null;
    try {
      const run = await workflow.createRun({ resourceId });
      const out = run.stream({ inputData });
      // The card appears with the first step; a request the schema refuses never starts one.
      const result = await follow(out, (event) => (card ??= event.type.startsWith('workflow-step-') ? addCard(run.runId, inputData) : null));
      if (result.status !== 'failed') form.reset(); // (a failed check keeps what was typed, to correct)
      if (card) tell(card, result.result);
    } catch (err) {
      formError.textContent = `The workflow refused the request: ${err?.message ?? err}`;
      formError.hidden = false;
    } finally {
      startButton.disabled = false;
      refreshCount();
      drawLedger();
    }
  }

  async function decide(card, approved) {
    if (card.status !== 'suspended') return; // (a second click while the first is on its way)
    card.clearError();
    const note = card.note();
    const resumeData = note ? { approved, note } : { approved };
    card.setBusy(true);
    let resumed = false;
    try {
      const run = await workflow.createRun({ runId: card.runId });
      const out = await run.resumeStream({ resumeData });
      const result = await follow(out, (event) => {
        resumed ||= event.type.startsWith('workflow-step-');
        return card;
      });
      tell(card, result.result);
    } catch (err) {
      // Refused: another tab (or click) decided it first, or the decision failed the step's
      // resumeSchema (the run still waits). The card then shows what is stored now.
      const why = err?.message ?? String(err);
      let record;
      try {
        record = await workflow.getWorkflowRunById(card.runId);
      } catch (readErr) {
        card.fail(`Not resumed: ${why} (and the stored run could not be read: ${readErr?.message ?? readErr})`);
        card.setStatus('suspended');
        return;
      }
      let message = `Not resumed: ${why}`;
      if (resumed) message = `The run stopped: ${why}`;
      else if (record && record.status !== 'suspended') message = `Not resumed: another tab or click decided this run first (${why})`;
      card.fromStored(record);
      card.fail(message);
      say(message);
    } finally {
      card.setBusy(false);
      refreshCount();
      drawLedger();
    }
  }

  /**
   * Continue: `run.restart()` of a run stored as running, from its last finished step. The package
   * refuses while another page still runs it (its Web Lock is held; a closed page's is freed soon
   * after it closes, not at once), and the card says so.
   */
  async function continueRun(card) {
    if (card.status !== 'stale') return;
    card.clearError();
    card.setBusy(true);
    let unwatch = () => {};
    try {
      const run = await workflow.createRun({ runId: card.runId });
      unwatch = run.watch((event) => card.apply(event));
      const result = await run.restart();
      card.fromStored(await workflow.getWorkflowRunById(card.runId));
      tell(card, result.result);
    } catch (err) {
      const message =
        err?.code === 'in-progress'
          ? 'Not continued: another tab or page still runs it (after a reload, the closed page lets go of it within moments: try again).'
          : `Not continued: ${err?.message ?? err}`;
      try {
        card.fromStored(await workflow.getWorkflowRunById(card.runId));
      } catch {
        card.setStatus('stale');
      }
      card.fail(message);
      say(message);
    } finally {
      unwatch();
      card.setBusy(false);
      refreshCount();
      drawLedger();
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!startButton.disabled) start();
  });
  button.addEventListener('click', () => {
    drawLedger();
    dialog.showModal();
  });
  $('refunds-close').addEventListener('click', () => dialog.close());
  // Another tab paid a refund.
  globalThis.addEventListener('storage', (event) => {
    if (event.key === LEDGER_KEY) drawLedger();
  });

  button.disabled = false;
  drawLedger();
  refreshCount();
  try {
    // Those waiting for approval, and those a closed page left running (to continue).
    const lists = await Promise.all(['suspended', 'running'].map((status) => workflow.listWorkflowRuns({ status, resourceId, perPage: LISTED })));
    const ids = lists.flatMap((l) => l.runs.map((r) => r.runId));
    const records = await Promise.all(ids.map((id) => workflow.getWorkflowRunById(id)));
    for (const record of records) {
      if (!record || cards.has(record.runId)) continue;
      addCard(record.runId, record.payload, { atEnd: true }).fromStored(record);
    }
  } catch (err) {
    runsEmpty.textContent = `The stored runs could not be read: ${err?.message ?? err}`;
  }
  refreshCount();
  button.dataset.ready = '1';
  return { workflow };
}
