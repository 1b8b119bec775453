// The Trace view: the spans of this tab's last reply as a timeline, one row per span
// (indented by nesting: agent_run → model_generation → model_step → tool_call …), each with its
// name, type and duration and a bar placed by its start and end within the reply. An errored span
// is marked with its error. The reply's action bar gets a Trace button that opens it (drawn by
// message-actions.js's `decorate` for the reply marked `data-trace="shown"`). The spans come from the demo's exporter (trace-exporter.js) in the
// realm the agent runs in: handed over directly in the page, over a BroadcastChannel from the
// SharedWorker (every tab hears them; each keeps the runs it started).
//
// A reply is one run, or more when a background task's result is answered in a follow-up run
// (`untilIdle`): the view draws every run of the reply on one time axis. It shows the last reply
// whose spans arrived, so while a new reply runs it still shows the one before (and the Trace
// button moves to the new reply once its first run's spans are there). The spans are not kept:
// after a reload no reply has a Trace button until the next one.
//
// Everything is set as text (textContent), never parsed as HTML: span names carry tool names.

import { decorate } from './message-actions.js';

/** Traces kept for runs not (yet) known to be this tab's: the worker's may arrive first. */
const UNCLAIMED = 16;
/** The longest error text in a row (the whole one is its tooltip). */
const ERROR_CHARS = 160;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const clip = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** The spans of `traces` in tree order (a parent, then its children by start), with their depth. */
function treeOrder(traces) {
  const spans = traces.flatMap((t) => t.spans);
  const ids = new Set(spans.map((s) => s.id));
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    if (span.parentSpanId && ids.has(span.parentSpanId)) {
      if (!children.has(span.parentSpanId)) children.set(span.parentSpanId, []);
      children.get(span.parentSpanId).push(span);
    } else roots.push(span);
  }
  const byStart = (a, b) => (a.startTime ?? 0) - (b.startTime ?? 0);
  const out = [];
  const walk = (span, depth) => {
    out.push({ span, depth });
    for (const child of (children.get(span.id) ?? []).sort(byStart)) walk(child, depth + 1);
  };
  for (const root of roots.sort(byStart)) walk(root, 0);
  return out;
}

/** One span's row: name (and error), type, duration, and its bar on the reply's time axis. */
function spanRow({ span, depth }, t0, total, end) {
  const start = span.startTime ?? t0;
  const stop = span.endTime ?? end;
  const duration = Math.max(0, stop - start);
  const row = el('tr', 'trace-row');
  row.dataset.type = span.type;
  row.dataset.depth = String(depth);
  row.dataset.spanId = span.id;
  if (span.parentSpanId) row.dataset.parentSpanId = span.parentSpanId;

  const nameCell = el('th', 'trace-name-cell');
  nameCell.scope = 'row';
  nameCell.style.setProperty('--depth', String(depth));
  const name = el('span', 'trace-name', span.name);
  // The type again, under the name: shown instead of the Type column on a phone.
  const inlineType = el('code', 'trace-type-inline', span.type);
  nameCell.append(name, inlineType);
  if (span.errorInfo) {
    row.classList.add('errored');
    const error = el('span', 'trace-error');
    const icon = el('span', 'trace-error-icon', '✗');
    icon.setAttribute('aria-hidden', 'true');
    const text = `${span.errorInfo.name}: ${span.errorInfo.message}`;
    error.append(icon, ` failed: ${clip(text, ERROR_CHARS)}`);
    error.title = text;
    nameCell.append(error);
  }
  const typeCell = el('td', 'trace-type');
  typeCell.append(el('code', '', span.type));
  const durationCell = el('td', 'trace-duration', span.endTime == null ? 'open' : `${duration} ms`);
  durationCell.dataset.ms = String(duration);

  const timeline = el('td', 'trace-timeline');
  const track = el('div', 'trace-track');
  const bar = el('div', 'trace-bar');
  bar.setAttribute('aria-hidden', 'true');
  // Percentages of the reply's span of time; CSS gives a zero-length span a sliver.
  const left = total > 0 ? ((start - t0) / total) * 100 : 0;
  const width = total > 0 ? (duration / total) * 100 : 100;
  bar.style.left = `${Math.min(100, Math.max(0, left))}%`;
  bar.style.width = `${Math.min(100 - Math.min(100, Math.max(0, left)), Math.max(0, width))}%`;
  track.append(bar);
  // What the bar shows, for screen readers.
  timeline.append(track, el('span', 'visually-hidden', `from ${start - t0} to ${stop - t0} ms`));

  row.append(nameCell, typeCell, durationCell, timeline);
  return row;
}

/** Marks reply element `item` as the one traced (or not), redrawing its bar if it has one yet. */
function markTraced(item, on) {
  if (!item) return;
  if (on) item.dataset.trace = 'shown';
  else delete item.dataset.trace;
  // A reply still streaming has no bar yet: app.js decorates it when it ends.
  if (item.querySelector(':scope > .msg-bar')) decorate(item);
}

/**
 * Sets up the view: a Trace button in `list` (the messages) opens `dialog` (which holds
 * #trace-summary, #trace-rows and #trace-close). Returns what app.js tells it:
 * `startReply(prompt, item)` when a reply (drawn as `item`) is sent,
 * `noteRun(runId)` for each run id that reply's output and chunks carry, `receive(trace)` for each
 * finished trace from the exporter (`{ traceId, runId, spans }`).
 */
export function initTraceView({ list, dialog }) {
  const summary = dialog.querySelector('#trace-summary');
  const rows = dialog.querySelector('#trace-rows');
  let reply = null; // the latest reply sent: { prompt, at, item, runIds }
  let shown = null; // the reply drawn: { reply, traces }
  const unclaimed = new Map(); // runId → trace

  function draw() {
    if (!shown) return;
    const { traces } = shown;
    const spans = traces.flatMap((t) => t.spans);
    const t0 = Math.min(...spans.map((s) => s.startTime ?? Infinity));
    const end = Math.max(...spans.map((s) => s.endTime ?? s.startTime ?? -Infinity));
    const total = Math.max(0, end - t0);
    const runs = traces.length === 1 ? 'one run' : `${traces.length} runs (a follow-up answered a background task)`;
    const prompt = shown.reply.prompt ? `“${clip(shown.reply.prompt, 80)}”` : 'the last message';
    summary.textContent = `The reply to ${prompt}, sent at ${timeFormat.format(shown.reply.at)}: ${runs}, ${spans.length} spans, ${total} ms.`;
    rows.replaceChildren(...treeOrder(traces).map((entry) => spanRow(entry, t0, total, end)));
    dialog.dataset.traceIds = traces.map((t) => t.traceId).join(' ');
  }

  function claim(trace) {
    if (shown?.reply !== reply) {
      markTraced(shown?.reply.item, false);
      shown = { reply, traces: [] };
      markTraced(reply.item, true);
    }
    if (shown.traces.some((t) => t.traceId === trace.traceId)) return;
    shown.traces.push(trace);
    shown.traces.sort((a, b) => (a.spans[0]?.startTime ?? 0) - (b.spans[0]?.startTime ?? 0));
    if (dialog.open) draw();
  }

  // The conversation was drawn again (from memory: another tab changed it, or it was left and
  // opened again): the Trace button goes to the reply drawn under the same message id.
  new MutationObserver(() => {
    const item = shown?.reply.item;
    const id = item?.dataset.messageId;
    if (!id || item.isConnected) return;
    const again = [...list.querySelectorAll(':scope > .msg.assistant')].find((m) => m.dataset.messageId === id);
    if (!again) return;
    shown.reply.item = again;
    markTraced(again, true);
  }).observe(list, { childList: true });

  list.addEventListener('click', (event) => {
    const target = event.target.closest?.('.trace-reply');
    if (!target || !shown || target.closest('.msg') !== shown.reply.item) return;
    draw();
    dialog.showModal();
  });
  dialog.querySelector('#trace-close').addEventListener('click', () => dialog.close());

  return {
    startReply(prompt, item) {
      reply = { prompt, at: new Date(), item, runIds: new Set() };
    },
    noteRun(runId) {
      if (!reply || !runId || reply.runIds.has(runId)) return;
      reply.runIds.add(runId);
      const trace = unclaimed.get(runId);
      if (trace) {
        unclaimed.delete(runId);
        claim(trace);
      }
    },
    receive(trace) {
      if (!trace?.runId || !Array.isArray(trace.spans) || !trace.spans.length) return;
      if (reply?.runIds.has(trace.runId)) return claim(trace);
      unclaimed.set(trace.runId, trace);
      if (unclaimed.size > UNCLAIMED) unclaimed.delete(unclaimed.keys().next().value);
    },
  };
}
