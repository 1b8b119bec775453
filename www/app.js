// The wasm-agent chat demo: one Agent in the page, streaming from the model /config.json names
// (or the provider the user picks in Settings), with its conversations kept in the package's
// Memory (IndexedDB in a browser).
// Model output is never parsed as HTML: replies are drawn by markdown.js, which builds DOM nodes
// with createElement and text nodes only; reasoning, tool cards and titles use textContent.

import { announce, announceReply, labelMessage, setBusy } from './a11y.js';
import { clearFailure, errorBox, explainError, failureOf, saveFailure } from './errors.js';
import { installJump } from './jump.js';
import { renderMarkdown } from './markdown.js';
import { PROVIDERS, SERVER, loadKey, loadSettings, providerInfo, saveSettings, storeKey } from './settings.js';
import { drawSuggestions, suggestionsFor } from './suggestions.js';
import { decorate, deleteFrom, forgetThreadMeta, initMessageActions, replyMeta, saveReplyMeta, thoughtLabel } from './message-actions.js';
import { initComposerAttachments, inputPartsOf, renderParts } from './attachments.js';
import { buildThreadList, createSearchIndex } from './threads.js';
import { summarise } from './summary.js';
import { initRefundPanel } from './workflow-panel.js';
import { buildDemoAgent, isOfflineDemoModel as isDemoModel, serverMemoryOptions } from './demo-agent.js';
import { TRACE_CHANNEL } from './trace-exporter.js';
import { initTraceView } from './trace-view.js';
import { connectAgent } from '/pkg/client.js';

const $ = (id) => document.getElementById(id);
const messagesEl = $('messages');
const emptyEl = $('empty');
const input = $('input');
const sendButton = $('send');
const stopButton = $('stop');
const form = $('composer');
const threadsEl = $('threads');
const newChatButton = $('new-chat');
const menuButton = $('menu');
const scrim = $('scrim');
const settingsButton = $('settings-button');
const settingsDialog = $('settings');
const settingsForm = $('settings-form');
const setProvider = $('set-provider');
const setModel = $('set-model');
const setModels = $('set-models');
const setUrl = $('set-url');
const setKey = $('set-key');
const setRemember = $('set-remember');
const setWorker = $('set-worker');
const setForget = $('set-forget');
const setHint = $('set-hint');
const setError = $('set-error');
const summariseButton = $('summarise');
const threadSearch = $('thread-search');

/** Every conversation of this page belongs to this resource. */
const RESOURCE = 'demo-user';
/** localStorage key of the thread shown on load. */
const THREAD_KEY = 'wasm-agent-demo:thread';
/** Earlier messages the agent loads into each prompt. */
const LAST_MESSAGES = 40;
/** What a declined call tells the model. */
const DECLINE_REASON = 'Declined in the demo';
/** localStorage key of the "Run the agent in a SharedWorker" setting ('1' / '0'). */
const WORKER_KEY = 'wasm-agent-demo:worker';

/** Whether the agent runs in a SharedWorker: `?worker=0|1`, else the setting, on by default where supported. */
function workerMode() {
  if (typeof SharedWorker !== 'function') return false;
  const forced = new URLSearchParams(location.search).get('worker');
  if (forced === '0' || forced === '1') return forced === '1';
  try {
    return globalThis.localStorage?.getItem(WORKER_KEY) !== '0';
  } catch {
    return true;
  }
}

/** The demo's SharedWorker, started on first use (its URL carries the page's switches). */
function agentWorker() {
  worker ??= new SharedWorker(`/agent-worker.js${location.search}`, { type: 'module', name: 'wasm-agent-demo' });
  return worker;
}

let agent = null;
let memory = null;
let pkg = null; // the wasm-agent package module
let config = null; // /config.json: the server's model
let settings = { provider: SERVER, model: '', baseUrl: '' }; // what the Agent was built from
let active = null; // the model in use: { kind: 'server' | 'direct', model, badge, label, title, memoryOptions }
let settingsNote = ''; // why saved settings could not be used (shown in the Settings dialog)
let worker = null; // the SharedWorker the agent runs in (agent-worker.js), when it does
let running = null; // { controller, threadId } while a reply streams
let threadId = null; // the conversation on screen
let threads = []; // the stored threads, most recently updated first
/** Thread id → the first words of its first user message (for threads without a title). */
const previews = new Map();
let renderSeq = 0; // a newer load or a new turn makes an older history load drop its result
let listSeq = 0;
let staleWhileRunning = false; // another tab changed the shown thread during our reply
let checkingRetry = false; // a Retry reads memory before it sends: no other send meanwhile
let attachments = null; // the composer's attachments (attachments.js)
let messageActions = null; // Copy / Regenerate / Edit (message-actions.js)
let searchIndex = null; // the thread search's message texts (threads.js)
let summaryRun = null; // { controller } while a summary streams
let highlighter = null; // highlight.js, loaded once a code block is shown
let highlighterLoading = null;
// Run ids of this tab's own replies: their chunks come back through memory.watch too (with the
// agent in a SharedWorker they may arrive after the reply's stream ended), and are not mirrored.
const ownRuns = new Set();
function noteOwnRun(runId) {
  if (!runId || ownRuns.has(runId)) return;
  ownRuns.add(runId);
  if (ownRuns.size > 64) ownRuns.delete(ownRuns.values().next().value);
}
let mirror = null; // { runId, view, turn } while another tab's reply on the shown thread streams

// The Trace view of the last reply (its Trace button): the spans come from the agent's exporter,
// directly when the agent runs in this page, over TRACE_CHANNEL from the SharedWorker.
const traceView = initTraceView({ list: messagesEl, dialog: $('trace') });
if (typeof BroadcastChannel === 'function') new BroadcastChannel(TRACE_CHANNEL).onmessage = (event) => traceView.receive(event.data);

// Other tabs of this page share the IndexedDB database: tell them when a thread changed.
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('wasm-agent-demo') : null;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function newThreadId() {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

function loadThreadId() {
  try {
    return localStorage.getItem(THREAD_KEY);
  } catch {
    return null;
  }
}

function storeThreadId(id) {
  try {
    localStorage.setItem(THREAD_KEY, id);
  } catch {
    // Storage disabled: the page still works, it just starts a new conversation on reload.
  }
}

function broadcast(message) {
  try {
    channel?.postMessage(message);
  } catch {
    // A closed channel (page unloading): nothing to tell.
  }
}

/** Whether the conversation is scrolled (nearly) to its end. */
function nearBottom() {
  return messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 120;
}

/** Scrolls to the bottom, unless the reader scrolled up to read. */
function follow(force = false) {
  if (force || nearBottom()) messagesEl.scrollTop = messagesEl.scrollHeight;
}

/** Runs `change` (which may add a lot at once), then keeps the end in view if it was in view before. */
function followAround(change) {
  const stick = nearBottom();
  change();
  if (stick) messagesEl.scrollTop = messagesEl.scrollHeight;
}

function clearMessages() {
  for (const node of [...messagesEl.children]) if (node !== emptyEl) node.remove();
  emptyEl.hidden = false;
}

function addMessage(role) {
  emptyEl.hidden = true;
  const item = el('article', `msg ${role}`);
  item.dataset.role = role;
  labelMessage(item, role);
  const bubble = el('div', 'bubble');
  item.append(bubble);
  messagesEl.append(item);
  return { item, bubble };
}

function addNotice(text, className) {
  emptyEl.hidden = true;
  const p = el('p', `notice ${className}`, text);
  messagesEl.append(p);
  follow(true);
}

function formatUsage(usage) {
  if (!usage) return '';
  const parts = [];
  if (usage.inputTokens != null) parts.push(`${usage.inputTokens} in`);
  if (usage.outputTokens != null) parts.push(`${usage.outputTokens} out`);
  if (usage.reasoningTokens) parts.push(`${usage.reasoningTokens} reasoning`);
  if (usage.totalTokens != null) parts.push(`${usage.totalTokens} total`);
  return parts.length ? `${parts.join(' · ')} tokens` : '';
}

/** `a` + `b`, field by field (either may be null). */
function addUsage(a, b) {
  if (!a || !b) return a ?? b ?? null;
  const sum = { ...a };
  for (const [key, value] of Object.entries(b)) {
    if (typeof value === 'number') sum[key] = (typeof a[key] === 'number' ? a[key] : 0) + value;
  }
  return sum;
}

function setRunning(on) {
  sendButton.disabled = on || !agent;
  if (summariseButton) summariseButton.disabled = on || !agent || Boolean(summaryRun);
  stopButton.disabled = !on;
  newChatButton.disabled = on || !agent;
  settingsButton.disabled = on || !pkg || !config;
  for (const button of threadsEl.querySelectorAll('button')) button.disabled = on;
  document.body.classList.toggle('streaming', on);
  setBusy(messagesEl, on);
}

/** Compact text of a value for a tool card: strings as they are, anything else as JSON. */
function preview(value, max) {
  let text;
  if (typeof value === 'string') text = value;
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

const TOOL_ICONS = {
  running: '⋯',
  approval: '?',
  done: '✓',
  failed: '✗',
  denied: '⊘',
  stopped: '■',
  cancelled: '⊘',
  detached: '↷',
};
const TOOL_LABELS = {
  running: 'running',
  approval: 'waits for your approval',
  done: 'done',
  failed: 'failed',
  denied: 'declined',
  stopped: 'stopped',
};
/** The labels of a call that runs as a background task (the card of its tool call). */
const TASK_LABELS = {
  running: 'running in the background',
  done: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  detached: 'goes on in the background',
  stopped: 'stopped',
};

/** Whether a tool result is the placeholder a background call returns at once. */
function isTaskPlaceholder(value) {
  return value !== null && typeof value === 'object' && value.status === 'running' && typeof value.backgroundTaskId === 'string';
}

/** "0.4 s", "3 s", "1 min 5 s". */
function formatElapsed(ms) {
  const secs = Math.max(0, ms) / 1000;
  if (secs < 10) return `${secs < 1 ? secs.toFixed(1) : Math.round(secs * 10) / 10} s`;
  if (secs < 60) return `${Math.round(secs)} s`;
  return `${Math.floor(secs / 60)} min ${Math.round(secs % 60)} s`;
}

/**
 * One tool call, as a card: "⋯ clock {…}" while it runs, ✓ with a preview of the result, ✗ with
 * the error, Approve / Decline while it waits for approval. `data-state` says which.
 */
function toolCard(name) {
  const root = el('div', 'tool-card');
  const head = el('div', 'tool-head');
  const icon = el('span', 'tool-icon');
  icon.setAttribute('aria-hidden', 'true');
  const nameEl = el('span', 'tool-name', name);
  const argsEl = el('code', 'tool-args');
  const status = el('span', 'tool-status');
  head.append(icon, nameEl, argsEl, status);
  const progress = el('div', 'tool-progress');
  const outcome = el('div', 'tool-outcome');
  const actions = el('div', 'tool-actions');
  root.append(head, progress, outcome, actions);
  let argsText = '';
  let task = null; // { id, startedAt (ms), elapsedMs } once the call runs as a background task
  let sub = null; // the nested run of a sub-agent (an `agent-<key>` call): { box, text, raw, tools }

  const card = {
    root,
    get state() {
      return root.dataset.state;
    },
    /** Whether this call runs as a background task. */
    get background() {
      return task !== null;
    },
    setState(state) {
      root.dataset.state = state;
      icon.textContent = TOOL_ICONS[state] ?? '';
      status.textContent = (task ? TASK_LABELS : TOOL_LABELS)[state] ?? state;
      if (state !== 'approval' && !(task && state === 'running')) actions.replaceChildren();
    },
    /**
     * The call became background task `taskId`: the card follows the task (running → completed ✓,
     * failed ✗ or cancelled ⊘) instead of the placeholder result. `onCancel` (returns whether the
     * task was still going) backs the Cancel button.
     */
    startTask(taskId, onCancel) {
      task = { id: taskId, startedAt: null, elapsedMs: null };
      root.classList.add('task-card');
      root.dataset.taskId = taskId;
      card.setState('running');
      if (onCancel) {
        const cancel = el('button', 'cancel-task', 'Cancel');
        cancel.type = 'button';
        cancel.title = 'Cancel this background task';
        cancel.addEventListener('click', async () => {
          cancel.disabled = true;
          let going = false;
          try {
            // (A promise when the agent runs in the worker.)
            going = await onCancel();
          } catch (err) {
            console.warn('wasm-agent demo: could not cancel the task', err);
          }
          actions.replaceChildren(el('span', 'tool-deciding', going ? 'Cancelling…' : 'This task is no longer running.'));
        });
        actions.replaceChildren(cancel);
      }
    },
    /** The task started running (it may have waited in a queue): the clock of its card starts. */
    taskRunning(startedAt) {
      if (!task) return;
      const at = Date.parse(startedAt ?? '');
      task.startedAt = Number.isNaN(at) ? Date.now() : at;
    },
    /** How long the task has been running (from a `background-task-progress` chunk). */
    elapsed(ms) {
      if (!task || card.state !== 'running') return;
      task.elapsedMs = ms;
      status.textContent = `${TASK_LABELS.running} · ${formatElapsed(ms)}`;
    },
    /** The task ended (`completed`, `failed` or `cancelled`); `completedAt` gives its duration. */
    taskEnded(outcomeState, { result, message, completedAt } = {}) {
      const end = Date.parse(completedAt ?? '');
      const took = task?.startedAt != null && !Number.isNaN(end) ? end - task.startedAt : task?.elapsedMs;
      if (outcomeState === 'done') card.result(result);
      else if (outcomeState === 'failed') card.error(message ?? 'The task failed.');
      else {
        card.setState('cancelled');
        progress.textContent = '';
        outcome.className = 'tool-outcome tool-error';
        outcome.textContent = 'Cancelled: it has no result.';
      }
      if (took != null) status.textContent += ` in ${formatElapsed(took)}`;
    },
    /** The reply ended while the task still ran: it goes on, and its result lands in memory. */
    detach() {
      card.setState('detached');
      progress.textContent = '';
      outcome.className = 'tool-outcome';
      outcome.textContent = 'The reply stopped following it: its result will be in this conversation when it finishes.';
    },
    /** A stored call whose result was still the placeholder when the conversation was loaded. */
    storedTask(value) {
      task = { id: value.backgroundTaskId, startedAt: null, elapsedMs: null };
      root.classList.add('task-card');
      root.dataset.taskId = value.backgroundTaskId;
      card.setState('detached');
      outcome.className = 'tool-outcome';
      outcome.textContent = 'It was still running in the background when this conversation was saved.';
    },
    /** Arguments as the model streams them (raw JSON text). */
    argsDelta(delta) {
      argsText += delta;
      argsEl.textContent = preview(argsText, 1000);
    },
    args(value) {
      if (value === undefined) return;
      argsEl.textContent = preview(value, 1000);
      argsEl.title = preview(value, 4000);
    },
    progress(value) {
      progress.textContent = preview(value, 200);
    },
    /**
     * One chunk of the sub-agent run this call is (a `tool-output` that wraps an agent chunk):
     * its text streams into a nested box, its own tool calls show as lines in it.
     */
    subAgentChunk(chunk) {
      if (!sub) {
        const box = el('div', 'sub-agent');
        box.setAttribute('role', 'group');
        box.setAttribute('aria-label', `${name.replace(/^agent-/, '')} (sub-agent)`);
        const label = el('div', 'sub-agent-label', `${name.replace(/^agent-/, '')} is working…`);
        const subTools = el('div', 'sub-agent-tools');
        const text = el('div', 'sub-agent-text markdown');
        box.append(label, subTools, text);
        root.insertBefore(box, outcome);
        sub = { box, label, text, raw: '', tools: subTools, drawn: 0 };
      }
      const payload = chunk.payload ?? {};
      if (chunk.type === 'text-delta') {
        sub.raw += payload.text ?? '';
        if (!sub.drawn) {
          sub.drawn = requestAnimationFrame(() => {
            sub.drawn = 0;
            sub.text.replaceChildren(renderMarkdown(sub.raw));
          });
        }
      } else if (chunk.type === 'tool-call') {
        sub.tools.append(el('div', 'sub-agent-tool', `${payload.toolName}(${preview(payload.args, 120)})`));
      } else if (chunk.type === 'finish' || chunk.type === 'error' || chunk.type === 'abort') {
        cancelAnimationFrame(sub.drawn);
        sub.drawn = 0;
        sub.text.replaceChildren(renderMarkdown(sub.raw));
        sub.label.textContent = `${name.replace(/^agent-/, '')} ${chunk.type === 'finish' ? 'answered' : chunk.type === 'abort' ? 'stopped' : 'failed'}`;
      }
    },
    /** Whether this call's card shows a sub-agent run. */
    get subAgent() {
      return sub !== null;
    },
    result(value) {
      card.setState('done');
      progress.textContent = '';
      if (name.startsWith('agent-') && typeof value?.text === 'string') {
        // A delegation's result: the sub-agent's reply, in its box (a reloaded card draws it here).
        if (!sub) card.subAgentChunk({ type: 'text-delta', payload: { text: value.text } });
        else if (!sub.raw) sub.raw = value.text;
        card.subAgentChunk({ type: 'finish', payload: {} });
        outcome.className = 'tool-outcome tool-result';
        outcome.textContent = '';
        return;
      }
      outcome.className = 'tool-outcome tool-result';
      outcome.textContent = `→ ${preview(value, 200)}`;
      outcome.title = preview(value, 4000);
    },
    error(message, state = 'failed') {
      card.setState(state);
      progress.textContent = '';
      outcome.className = 'tool-outcome tool-error';
      outcome.textContent = preview(message, 300);
      outcome.title = preview(message, 4000);
    },
    /**
     * Approve / Decline buttons; each handler returns the decision's promise, which rejects
     * (a ResumeError) when the call is no longer waiting.
     */
    askApproval(onApprove, onDecline) {
      card.setState('approval');
      const decide = async (handler, approved) => {
        for (const button of actions.querySelectorAll('button')) button.disabled = true;
        let waiting = false;
        try {
          await handler();
          waiting = true;
        } catch (err) {
          if (err?.name !== 'ResumeError') console.warn('wasm-agent demo: could not decide the tool call', err);
        }
        if (!waiting) {
          outcome.className = 'tool-outcome tool-error';
          outcome.textContent = 'This call is no longer waiting for a decision.';
          actions.replaceChildren();
        } else if (approved) {
          card.setState('running');
        } else {
          actions.replaceChildren(el('span', 'tool-deciding', 'Declining…'));
        }
      };
      const approve = el('button', 'approve', 'Approve');
      approve.type = 'button';
      approve.addEventListener('click', () => decide(onApprove, true));
      const decline = el('button', 'decline', 'Decline');
      decline.type = 'button';
      decline.addEventListener('click', () => decide(onDecline, false));
      actions.replaceChildren(approve, decline);
    },
  };
  card.setState('running');
  return card;
}

/**
 * One assistant reply: a collapsible thinking block, tool cards, the text (markdown, redrawn at
 * most once per animation frame while it streams) and a footer line. A reply drawn from memory
 * (`restored`) has no timing, so its thinking block is just "Reasoning".
 */
function replyView({ restored = false } = {}) {
  const { item, bubble } = addMessage('assistant');
  item.classList.add('pending');
  if (!restored) setBusy(item, true); // streaming: announced once, when done
  const tools = el('div', 'tools');
  const text = el('div', 'text');
  const footer = el('div', 'meta');
  let thinking = null;
  let thinkingText = null;
  let thinkingTouched = false;
  let thinkingStarted = 0;
  let thoughtMs = null; // how long the reasoning took (live replies)
  let stepBreak = false; // the next text starts a new step: a blank line first
  let reasoningBreak = false; // the later step's reasoning has had its blank line
  let raw = ''; // the reply's markdown so far
  let drawn = ''; // the markdown on screen
  let frame = 0;
  let timer = 0;
  const cards = new Map(); // toolCallId → card
  const tasks = new Map(); // background task id → toolCallId
  let errorEl = null; // the error box, once the reply failed
  let errorMessage = '';
  bubble.append(tools, text);
  item.append(footer);
  item.copyText = () => raw;

  function draw() {
    cancelAnimationFrame(frame);
    clearTimeout(timer);
    frame = 0;
    timer = 0;
    if (raw === drawn) return;
    drawn = raw;
    followAround(() => {
      text.replaceChildren(renderMarkdown(raw));
      highlightIn(text);
    });
  }

  function card(id, name) {
    let found = cards.get(id);
    if (!found) {
      found = toolCard(name || 'tool');
      found.root.dataset.toolCallId = id ?? '';
      cards.set(id, found);
      followAround(() => tools.append(found.root));
      item.classList.remove('pending');
    }
    return found;
  }

  /**
   * Calls still running or waiting for approval end as stopped (the run ended without them); a
   * background task goes on without the reply (its result lands in memory).
   */
  function stopCards() {
    for (const c of cards.values()) {
      if (c.background && c.state === 'running') c.detach();
      else if (c.state === 'running' || c.state === 'approval') c.setState('stopped');
    }
  }

  /** The card of background task `taskId` (its tool call's card). */
  function taskCard(taskId) {
    const id = tasks.get(taskId);
    return id === undefined ? undefined : cards.get(id);
  }

  return {
    item,
    reasoning(delta) {
      if (!thinking) {
        thinking = el('details', 'thinking');
        thinking.dataset.auto = '1'; // the toggle events of our own opening and closing
        thinking.open = true;
        const summary = el('summary', '', 'Thinking…');
        thinkingText = el('div', 'thinking-text');
        thinking.append(summary, thinkingText);
        thinking.addEventListener('toggle', () => {
          if (thinking.dataset.auto !== '1') thinkingTouched = true;
          thinking.dataset.auto = '';
        });
        bubble.insertBefore(thinking, tools);
        thinkingStarted = performance.now();
      } else if (thinking.classList.contains('done') && delta && !reasoningBreak) {
        // Reasoning of a later step goes on in the same block, after a blank line.
        reasoningBreak = true;
        if (thinkingText.textContent && !thinkingText.textContent.endsWith('\n')) thinkingText.textContent += '\n\n';
      }
      thinkingText.textContent += delta;
      follow();
    },
    text(delta) {
      if (thinking && !thinking.classList.contains('done')) this.endThinking();
      item.classList.remove('pending');
      if (stepBreak && delta) {
        stepBreak = false;
        if (raw && !raw.endsWith('\n')) raw += '\n\n';
      }
      raw += delta;
      if (restored) return; // drawn once, by done()
      // One redraw per frame; the timer covers a tab whose frames are paused (hidden).
      if (!frame) frame = requestAnimationFrame(draw);
      if (!timer) timer = setTimeout(draw, 100);
    },
    step() {
      if (raw) stepBreak = true;
    },
    toolStart(id, name) {
      card(id, name);
    },
    toolArgsDelta(id, name, delta) {
      card(id, name).argsDelta(delta ?? '');
    },
    toolCall(id, name, args) {
      card(id, name).args(args);
    },
    toolOutput(id, name, output) {
      // A sub-agent's chunks arrive wrapped, each with its own runId and from 'AGENT'.
      if (output?.from === 'AGENT' && typeof output.type === 'string') card(id, name).subAgentChunk(output);
      else card(id, name).progress(output);
    },
    toolResult(id, name, result) {
      const c = card(id, name);
      // A background call's placeholder: the card goes on following the task.
      if (c.background && isTaskPlaceholder(result)) c.progress('Started in the background');
      else c.result(result);
    },
    /** `background-task-*` chunks: the task of tool call `id` (`onCancel` backs its Cancel button). */
    taskStarted(id, name, taskId, onCancel) {
      tasks.set(taskId, id);
      card(id, name).startTask(taskId, onCancel);
    },
    taskRunning(id, name, payload) {
      const c = card(id, name);
      c.taskRunning(payload.startedAt);
      c.args(payload.args);
    },
    taskOutput(id, name, output) {
      const c = card(id, name);
      if (c.state === 'running') c.progress(output);
    },
    taskProgress(taskIds, elapsedMs) {
      for (const taskId of taskIds ?? []) taskCard(taskId)?.elapsed(elapsedMs);
    },
    taskEnded(id, name, state, details) {
      card(id, name).taskEnded(state, details);
    },
    toolError(id, name, message) {
      card(id, name).error(message);
    },
    toolApproval(id, name, args, onApprove, onDecline) {
      const c = card(id, name);
      c.args(args);
      c.askApproval(onApprove, onDecline);
    },
    toolDenied(id, name, reason) {
      // The words the model is told (and memory keeps, so a restored card reads the same).
      card(id, name).error(`The user declined this tool call${reason ? `: ${reason}` : '.'}`, 'denied');
    },
    /** A tool part of a stored message (`tool-<name>` UI part). */
    toolStored(part, name) {
      const c = card(part.toolCallId ?? `stored-${cards.size}`, name);
      c.args(part.input);
      if (part.state === 'output-available' && isTaskPlaceholder(part.output)) c.storedTask(part.output);
      else if (part.state === 'output-available') c.result(part.output);
      else if (part.state === 'output-error') c.error(part.errorText ?? 'The tool failed.');
      else if (part.state === 'output-denied') c.error(part.errorText ?? 'The user declined this tool call.', 'denied');
      else c.setState('stopped');
    },
    endThinking(label) {
      reasoningBreak = false;
      if (!thinking || thinking.classList.contains('done')) return;
      thinking.classList.add('done');
      if (!restored) thoughtMs = performance.now() - thinkingStarted;
      thinking.querySelector('summary').textContent = label ?? (restored ? 'Reasoning' : thoughtLabel(thoughtMs));
      if (!thinkingTouched && thinking.open) {
        thinking.dataset.auto = '1';
        thinking.open = false;
      }
    },
    footer(line, className = '') {
      followAround(() => {
        footer.textContent = line;
        footer.className = `meta ${className}`.trim();
      });
    },
    error(message, actions) {
      draw();
      this.endThinking();
      stopCards();
      item.classList.remove('pending');
      item.classList.add('failed');
      errorEl?.remove();
      errorMessage = message;
      errorEl = errorBox(message, actions);
      bubble.append(errorEl);
      follow(true);
    },
    /** Adds Retry / Open settings to the error shown (`{ onRetry, onSettings }`). */
    errorActions(actions) {
      if (!errorEl) return;
      const box = errorBox(errorMessage, actions);
      errorEl.replaceWith(box);
      errorEl = box;
    },
    get errorMessage() {
      return errorMessage;
    },
    stopped() {
      draw();
      this.endThinking();
      stopCards();
      item.classList.remove('pending');
      item.classList.add('stopped');
      this.footer('stopped', 'stopped-label');
    },
    done() {
      draw();
      stopCards();
      item.classList.remove('pending');
      setBusy(item, false);
      item.dataset.done = '1';
    },
    get textContent() {
      return raw;
    },
    /** How long the reasoning took, in ms (null: none, or drawn from memory). */
    get thoughtMs() {
      return thoughtMs;
    },
  };
}

/** Highlights the code blocks under `root`, loading highlight.js the first time there is one. */
function highlightIn(root) {
  if (!root.querySelector('pre > code[class*="language-"]')) return;
  if (highlighter) {
    highlighter.highlightAll(root);
    return;
  }
  highlighterLoading ??= import('./highlight.js').then(
    (module) => (highlighter = module),
    (err) => console.warn('wasm-agent demo: could not load the highlighter', err),
  );
  highlighterLoading.then(() => {
    if (root.isConnected) highlighter?.highlightAll(root);
  });
}

// ---------------------------------------------------------------------------------------------
// Stored conversations

/** The text parts of a UI message, joined. */
function textOf(message) {
  return (message.parts ?? [])
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text)
    .join('');
}

/** The first words of a message, for the thread list. */
function firstWords(text, max = 42) {
  const flat = String(text).replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s.,;:!?-]+$/, '')}…`;
}

/**
 * Draws one stored UI message the way it looked when it streamed. Returns the view of an
 * assistant message: `previous`, when given, is the view of the assistant message just before
 * it, which it continues (the follow-up turn that answered a background task streamed in the
 * same reply, and is stored as a message of its own).
 */
function renderStored(message, previous = null) {
  const when = message.createdAt ? new Date(message.createdAt) : null;
  const title = when && !Number.isNaN(when.getTime()) ? when.toLocaleString() : '';
  if (message.role === 'user') {
    const { item, bubble } = addMessage('user');
    const said = textOf(message);
    bubble.textContent = said;
    renderParts(item, message.parts, bubble);
    item.copyText = () => said;
    item.resendParts = inputPartsOf(message.parts);
    if (title) item.title = title;
    if (title) item.dataset.at = when.toISOString();
    item.dataset.messageId = message.id ?? '';
    decorate(item);
    return null;
  }
  if (message.role !== 'assistant') return previous;
  const view = previous ?? replyView({ restored: true });
  if (title && !previous) view.item.title = title;
  if (title && !previous) view.item.dataset.at = when.toISOString();
  if (!previous) view.item.dataset.messageId = message.id ?? '';
  // Token usage and the reasoning time, which this page keeps itself (memory does not).
  const meta = replyMeta(view.item.dataset.messageId);
  for (const part of message.parts ?? []) {
    const type = String(part.type ?? '');
    if (type === 'step-start') view.step();
    else if (type === 'reasoning') view.reasoning(String(part.text ?? ''));
    else if (type === 'text') view.text(String(part.text ?? ''));
    else if (type === 'dynamic-tool') view.toolStored(part, String(part.toolName ?? 'tool'));
    else if (type.startsWith('tool-')) view.toolStored(part, type.slice('tool-'.length));
    // `data-*`, `file` and `source-*` parts have nothing to show in this demo.
  }
  view.endThinking();
  const thought = view.item.querySelector('.thinking > summary');
  if (thought && typeof meta?.thoughtMs === 'number') thought.textContent = thoughtLabel(meta.thoughtMs);
  if (message.metadata?.interrupted) view.stopped();
  else if (meta?.usage) view.footer(formatUsage(meta.usage), 'usage');
  view.done();
  decorate(view.item);
  return view;
}

/** Shows thread `id` from memory. False when a newer load or a new turn overtook this one. */
async function showThread(id, { keepScroll = false } = {}) {
  const seq = ++renderSeq;
  let messages = [];
  let failure = null;
  try {
    messages = await memory.listMessages({ threadId: id, format: 'ui' });
  } catch (err) {
    failure = err;
  }
  if (seq !== renderSeq || running || id !== threadId) return false;
  const scrollTop = messagesEl.scrollTop;
  clearMessages();
  let previous = null;
  for (const message of messages) previous = renderStored(message, previous);
  if (!failure) drawFailure(id, messages, previous);
  // Another tab's reply still streaming: it stays below what is stored.
  if (mirror?.turn.threadId === id) messagesEl.append(mirror.view.item);
  const first = messages.find((m) => m.role === 'user');
  if (first && !previews.has(id)) previews.set(id, firstWords(textOf(first)));
  if (failure) addNotice(`Could not load this conversation: ${failure.message ?? failure}`, 'error');
  messagesEl.dataset.thread = id;
  if (keepScroll) messagesEl.scrollTop = scrollTop;
  else follow(true);
  return true;
}

function threadLabel(thread) {
  return thread.title || previews.get(thread.id) || 'New conversation';
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dateFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

function shortTime(iso) {
  const at = new Date(iso ?? '');
  if (Number.isNaN(at.getTime())) return '';
  return at.toDateString() === new Date().toDateString() ? timeFormat.format(at) : dateFormat.format(at);
}

/** Draws the thread list: the shown thread first if it is not stored yet, then the stored ones. */
function drawThreads() {
  const list = threads.some((t) => t.id === threadId) ? [...threads] : [{ id: threadId, unsaved: true }, ...threads];
  const query = threadSearch?.value.trim() ?? '';
  const items = buildThreadList({
    list,
    currentId: threadId,
    running,
    label: threadLabel,
    time: (thread) => shortTime(thread.updatedAt),
    matches: (thread, label) => !query || (!thread.unsaved && (searchIndex?.matches(thread.id, label, query) ?? true)),
    onOpen: switchThread,
    onDelete: deleteThread,
    onRename: renameThread,
  });
  if (query && !items.length) items.push(el('li', 'thread-none', `No conversation matches “${query}”.`));
  threadsEl.replaceChildren(...items);
}

/** Renames thread `id` (the ✎ of the thread list). */
async function renameThread(id, title) {
  await memory.updateThread({ id, title });
  const thread = threads.find((t) => t.id === id);
  if (thread) thread.title = title;
  broadcast({ type: 'changed', threadId: id });
  await refreshThreads();
}

/** The search box of the thread list: loads the messages' text of every thread, then filters. */
async function searchThreads() {
  const query = threadSearch.value.trim();
  if (query && searchIndex) await searchIndex.load(threads.map((t) => t.id));
  if (query === threadSearch.value.trim()) drawThreads();
}

/** Reads the thread list from memory (and the first words of untitled threads), then draws it. */
async function refreshThreads() {
  const seq = ++listSeq;
  let list;
  try {
    list = await memory.listThreads({ resourceId: RESOURCE });
  } catch (err) {
    console.warn('wasm-agent demo: could not list the conversations', err);
    return;
  }
  await Promise.all(
    list
      .filter((t) => !t.title && !previews.has(t.id))
      .map(async (t) => {
        try {
          const messages = await memory.listMessages({ threadId: t.id, format: 'ui' });
          const first = messages.find((m) => m.role === 'user');
          if (first) previews.set(t.id, firstWords(textOf(first)));
        } catch {
          // Shown as "New conversation".
        }
      }),
  );
  if (seq !== listSeq) return;
  threads = list;
  drawThreads();
  if (threadSearch.value.trim()) searchThreads(); // changed threads' text is read again
}

function closeSidebar() {
  document.body.classList.remove('sidebar-open');
  menuButton.setAttribute('aria-expanded', 'false');
  scrim.hidden = true;
}

async function switchThread(id) {
  closeSidebar();
  if (running || id === threadId) return;
  threadId = id;
  storeThreadId(id);
  staleWhileRunning = false;
  mirror = null;
  drawThreads();
  await showThread(id);
  input.focus();
}

function newChat() {
  closeSidebar();
  if (running) return;
  threadId = newThreadId();
  storeThreadId(threadId);
  renderSeq++; // a history load in flight is no longer wanted
  staleWhileRunning = false;
  mirror = null;
  clearMessages();
  messagesEl.dataset.thread = threadId;
  drawThreads();
  input.focus();
}

async function deleteThread(id) {
  if (running) return;
  const thread = threads.find((t) => t.id === id);
  if (!confirm(`Delete “${thread ? threadLabel(thread) : 'this conversation'}”? This cannot be undone.`)) return;
  try {
    await memory.deleteThread(id);
  } catch (err) {
    addNotice(`Could not delete the conversation: ${err?.message ?? err}`, 'error');
    return;
  }
  previews.delete(id);
  clearFailure(id);
  forgetThreadMeta(id);
  threads = threads.filter((t) => t.id !== id);
  if (id === threadId) newChat();
  else drawThreads();
  broadcast({ type: 'deleted', threadId: id });
  await refreshThreads();
}

// ---------------------------------------------------------------------------------------------
// A turn

/** Whether the newest stored message of thread `id` is the user message `content` (a failed run keeps it). */
async function storedLastUserMessage(id, content) {
  try {
    const [last] = await memory.listMessages({ threadId: id, last: 1, format: 'ui' });
    return last?.role === 'user' && textOf(last).trim() === content;
  } catch {
    return false;
  }
}

/** The buttons of a failed send's error: Retry (removes the failed reply, sends again) and Open settings. */
function failureActions(id, content, failedItem) {
  return {
    onRetry: async () => {
      if (running || checkingRetry || id !== threadId) return;
      // The failed reply, when it is the newest message, is replaced: one that broke off mid-way
      // is deleted from memory first (memory kept its text, marked interrupted), so the stored
      // user message is answered again rather than sent twice. A failed reply with later
      // messages stays, and the message is sent again as a new one.
      const again = failedItem === messagesEl.lastElementChild;
      if (again && failedItem.querySelector('.text')?.textContent) {
        checkingRetry = true;
        try {
          const [last] = await memory.listMessages({ threadId: id, last: 1, format: 'ui' });
          if (last?.role === 'assistant' && last.metadata?.interrupted) await memory.deleteMessages([last.id]);
        } catch (err) {
          addNotice(`Could not replace the reply that broke off: ${err?.message ?? err}`, 'error');
          return;
        } finally {
          checkingRetry = false;
        }
        if (running || id !== threadId) return;
      }
      if (again) failedItem.remove();
      else failedItem.querySelector('.error-actions')?.remove();
      send(content, { again, parts: [] });
    },
    onSettings: openSettings,
  };
}

/**
 * A failed send kept from before a reload: its reply is shown failed, with Retry. The failed run
 * stored the user message, and the text of a reply that broke off mid-way (marked interrupted:
 * `lastView` is its view, which then gets the error). When the conversation went on since
 * (another tab, a later send), the record is stale; when the run stored nothing, the message is
 * drawn from the record.
 */
function drawFailure(id, messages, lastView) {
  const failure = failureOf(id);
  if (!failure) return;
  const isFailed = (m) => m?.role === 'user' && textOf(m).trim() === failure.text;
  const last = messages.at(-1);
  const broken = last?.role === 'assistant' && last.metadata?.interrupted && isFailed(messages.at(-2)) && lastView;
  if (!isFailed(last) && !broken && messages.some(isFailed)) {
    clearFailure(id); // answered since
    return;
  }
  if (!isFailed(last) && !broken) addMessage('user').bubble.textContent = failure.text;
  const view = broken ? lastView : replyView({ restored: true });
  if (broken) {
    // It failed, rather than being stopped.
    view.item.classList.remove('stopped');
    view.footer('');
  }
  view.error(failure.error || 'The reply failed.', failureActions(id, failure.text, view.item));
  view.done();
}

/**
 * Sends `textValue` as the user's message and streams the reply. `parts`: the attachments to
 * send with it (from the composer when not given; Regenerate and Edit pass the message's own).
 * `again`: a Retry of a failed send, whose user message is already on screen (and, when the
 * failed run stored it, in memory: then the agent is run on the stored conversation, with no
 * second copy of the message).
 */
/**
 * Draws one chunk of a reply into its view. `turn` is the reply's state, updated here:
 * { agent (null for a reply mirrored from another tab), threadId, replyId, failed, aborted,
 * finished, usage }.
 */
function drawChunk(view, chunk, turn) {
  const payload = chunk.payload ?? {};
  const callId = payload.toolCallId;
  const toolName = payload.toolName;
  switch (chunk.type) {
    case 'start':
      if (!turn.replyId && payload.messageId) {
        turn.replyId = payload.messageId;
        view.item.dataset.messageId = turn.replyId;
      }
      break;
    case 'step-start':
      view.step();
      break;
    case 'reasoning-delta':
      view.reasoning(payload.text ?? '');
      break;
    case 'reasoning-end':
      view.endThinking();
      break;
    case 'text-delta':
      view.text(payload.text ?? '');
      break;
    case 'tool-call-input-streaming-start':
      view.toolStart(callId, toolName);
      break;
    case 'tool-call-delta':
      view.toolArgsDelta(callId, toolName, payload.argsTextDelta);
      break;
    case 'tool-call':
      view.toolCall(callId, toolName, payload.args);
      break;
    case 'tool-output':
      view.toolOutput(callId, toolName, payload.output);
      break;
    case 'tool-result':
      if (payload.isError) view.toolError(callId, toolName, payload.result);
      else view.toolResult(callId, toolName, payload.result);
      break;
    case 'tool-error':
      view.toolError(callId, toolName, payload.error?.message ?? payload.error ?? 'The tool failed.');
      break;
    case 'tool-call-approval': {
      const { runId } = chunk;
      const runAgent = turn.agent;
      // A reply mirrored from another tab is approved in that tab.
      if (!runAgent) {
        view.toolCall(callId, toolName, payload.args);
        break;
      }
      announce(`The ${toolName} tool waits for your approval.`);
      view.toolApproval(
        callId,
        toolName,
        payload.args,
        () => runAgent.approveToolCall({ runId, toolCallId: callId }),
        () => runAgent.declineToolCall({ runId, toolCallId: callId, reason: DECLINE_REASON }),
      );
      break;
    }
    case 'tool-output-denied':
      view.toolDenied(callId, toolName, payload.approval?.reason);
      break;
    case 'background-task-started': {
      const taskId = payload.taskId;
      view.taskStarted(callId, toolName, taskId, turn.agent ? () => turn.agent.cancelBackgroundTask(taskId) : null);
      break;
    }
    case 'background-task-running':
      view.taskRunning(callId, toolName, payload);
      break;
    case 'background-task-output':
      view.taskOutput(callId, toolName, payload.payload?.payload?.output);
      break;
    case 'background-task-progress':
      view.taskProgress(payload.taskIds, payload.elapsedMs);
      break;
    case 'background-task-completed':
      view.taskEnded(callId, toolName, 'done', { result: payload.result, completedAt: payload.completedAt });
      break;
    case 'background-task-failed':
      view.taskEnded(callId, toolName, 'failed', { message: payload.error?.message, completedAt: payload.completedAt });
      break;
    case 'background-task-cancelled':
      view.taskEnded(callId, toolName, 'cancelled', { completedAt: payload.completedAt });
      break;
    case 'data-thread-title': {
      const { threadId: titled, title } = chunk.data ?? {};
      if (titled && title) {
        const thread = threads.find((t) => t.id === titled);
        if (thread) thread.title = title;
        else threads.unshift({ id: titled, title, updatedAt: new Date().toISOString() });
        drawThreads();
      }
      break;
    }
    case 'error':
      turn.failed = true;
      view.error(explainError(payload.error?.message ?? 'The model call failed.'));
      break;
    case 'abort':
      turn.aborted = true;
      view.stopped();
      break;
    case 'finish': {
      // A run that fails ends with `error`; an `error` before `finish` did not stop the
      // reply (a title or storage failure): it stays shown, and so does the usage.
      // With untilIdle, each follow-up turn ends with a `finish` of its own: the footer
      // shows the usage of all turns of the reply.
      turn.finished = true;
      view.endThinking();
      turn.usage = addUsage(turn.usage, payload.totalUsage);
      if (!turn.aborted) view.footer(formatUsage(turn.usage), 'usage');
      if (turn.agent) saveReplyMeta(turn.replyId, { usage: turn.usage, thoughtMs: view.thoughtMs, threadId: turn.threadId });
      break;
    }
    default:
      break;
  }
}

async function send(textValue, { again = false, parts = null } = {}) {
  const content = textValue.trim();
  const fromComposer = parts === null && !again;
  if (running || checkingRetry || !agent || (!content && !(fromComposer ? attachments?.count : parts?.length))) return;
  const id = threadId;
  let prompt = null; // null: the new message; []: the stored conversation as it is
  if (again) {
    checkingRetry = true;
    try {
      if (await storedLastUserMessage(id, content)) prompt = [];
    } finally {
      checkingRetry = false;
    }
    if (running || id !== threadId) return;
  }
  const files = fromComposer ? (attachments?.take() ?? []) : (parts ?? []);
  if (fromComposer) {
    input.value = '';
    autosize();
  }
  clearFailure(id); // a new message, or this one again
  renderSeq++; // a history load in flight must not replace this turn
  searchIndex?.forget(id);

  if (!again) {
    const user = addMessage('user');
    user.bubble.textContent = content;
    renderParts(user.item, files, user.bubble);
    user.item.copyText = () => content;
    user.item.resendParts = files;
    user.item.dataset.at = new Date().toISOString();
    decorate(user.item);
  }
  follow(true);
  if (!previews.has(id)) {
    previews.set(id, firstWords(content || files.map((f) => f.filename).join(', ')));
    drawThreads();
  }

  const view = replyView();
  view.item.dataset.at = new Date().toISOString();
  const controller = new AbortController();
  const runAgent = agent; // the agent of this turn (Settings cannot rebuild it while it runs)
  running = { controller, threadId: id };
  setRunning(true);
  // Another tab's reply on this thread, if one was streaming, is drawn from memory afterwards.
  mirror?.view.done();
  mirror = null;
  // replyId: the id memory stores the reply under (its first `start` chunk's messageId);
  // usage: the token usage of every turn of this reply.
  const turn = { agent: runAgent, threadId: id, replyId: '', failed: false, aborted: false, finished: false, usage: null };

  try {
    // Only the new message: the agent loads the earlier ones from memory and saves both sides.
    // untilIdle: when a background task was started, the stream stays open until it ended and
    // the agent answered it in a follow-up turn, drawn in this same reply.
    const options = { memory: { thread: id, resource: RESOURCE }, abortSignal: controller.signal, untilIdle: true };
    if (active.memoryOptions) options.memory.options = active.memoryOptions;
    const script = offlineScriptFor(content);
    if (script) options.modelSettings = { headers: { 'x-script': script } };
    const message = files.length ? [{ role: 'user', content: [...(content ? [{ type: 'text', text: content }] : []), ...files] }] : content;
    traceView.startReply(content || files.map((f) => f.filename).join(', '), view.item);
    const out = await runAgent.stream(prompt ?? message, options);
    noteOwnRun(out.runId);
    traceView.noteRun(out.runId);
    for await (const chunk of out.fullStream) {
      noteOwnRun(chunk.runId);
      traceView.noteRun(chunk.runId);
      drawChunk(view, chunk, turn);
    }
  } catch (err) {
    if (controller.signal.aborted) {
      if (!turn.aborted) view.stopped();
      turn.aborted = true;
    } else {
      turn.failed = true;
      view.error(explainError(err?.message ?? String(err)));
    }
  } finally {
    running = null;
    setRunning(false);
    if (controller.signal.aborted && !turn.aborted) view.stopped();
    const { finished } = turn;
    if (!finished && !turn.failed && !controller.signal.aborted && !view.textContent) {
      turn.failed = true;
      view.error('The stream ended without a reply.');
    }
    view.done();
    const stopped = controller.signal.aborted;
    const { failed } = turn;
    if (failed && !finished && !stopped) {
      // The send failed: Retry sends it again; the failure is kept, so a reload shows it too.
      view.errorActions(failureActions(id, content, view.item));
      saveFailure(id, content, view.errorMessage);
    }
    announceReply(view.textContent, stopped ? 'stopped' : failed && !finished ? 'failed' : 'done', view.errorMessage);
    decorate(view.item);
    messageActions?.refresh();
    // The turn is stored now (a stopped reply too, marked interrupted): other tabs may show it.
    broadcast({ type: 'changed', threadId: id });
    if (staleWhileRunning && id === threadId) {
      staleWhileRunning = false;
      showThread(id, { keepScroll: true });
    }
    refreshThreads();
    input.focus();
  }
}

/**
 * Regenerate / Edit: the messages from position `index` on are deleted (on screen and in memory)
 * and `text` is sent again with the attachments of the message at `index`.
 */
async function resend(index, text, item) {
  if (running || !agent || !memory) return;
  const parts = item?.resendParts ?? [];
  const id = threadId;
  try {
    await deleteFrom(memory, id, item, index);
  } catch (err) {
    addNotice(`Could not replace the messages: ${err?.message ?? err}`, 'error');
    return;
  }
  if (id !== threadId || running) return;
  if (index === 0) previews.delete(id); // the thread list shows the new first words
  const shown = [...messagesEl.querySelectorAll(':scope > .msg')];
  const first = shown[index];
  if (first) {
    // That message and everything after it (later replies, notices).
    let node = first;
    while (node) {
      const next = node.nextElementSibling;
      if (node !== emptyEl) node.remove();
      node = next;
    }
  }
  await send(text, { parts });
}

/** "Summarise thread": the structured summary of the conversation on screen. */
async function summariseThread() {
  if (running || summaryRun || !agent) return;
  const controller = new AbortController();
  summaryRun = { controller };
  summariseButton.disabled = true;
  try {
    await summarise({
      agent,
      memory,
      threadId,
      container: messagesEl,
      textOf,
      controller,
      // The offline model answers with the `summary` script of www/offline-scripts.mjs.
      modelSettings: active?.kind === 'server' && config?.mode === 'offline' ? { headers: { 'x-script': 'summary' } } : undefined,
      follow: () => follow(),
    });
  } finally {
    summaryRun = null;
    summariseButton.disabled = Boolean(running) || !agent;
  }
}

function autosize() {
  input.style.height = 'auto';
  input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  send(input.value);
});
input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send(input.value);
  }
});
input.addEventListener('input', autosize);
stopButton.addEventListener('click', () => running?.controller.abort());
newChatButton.addEventListener('click', newChat);
menuButton.addEventListener('click', () => {
  const open = !document.body.classList.contains('sidebar-open');
  document.body.classList.toggle('sidebar-open', open);
  menuButton.setAttribute('aria-expanded', String(open));
  scrim.hidden = !open;
});
scrim.addEventListener('click', closeSidebar);
document.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape') return;
  if (document.body.classList.contains('sidebar-open')) return closeSidebar();
  // Esc stops a reply, like the Stop button (a dialog open over the page keeps its own Esc).
  if (running && !document.querySelector('dialog[open]') && !event.defaultPrevented) {
    event.preventDefault();
    running.controller.abort();
  }
});

// A reply streaming in another tab on the thread shown here streams here too (memory.watch,
// SPEC §21.2: the package carries the chunks and the saves between tabs on one database).

function endMirror() {
  if (!mirror) return;
  mirror.view.done();
  decorate(mirror.view.item);
  mirror = null;
  showThread(threadId, { keepScroll: true });
}

function onMemoryEvent(event) {
  const about = event.threadId ?? event.thread?.id;
  // This tab's own reply is drawn from its stream; other threads are not on screen.
  if (about !== threadId || running?.threadId === about) return;
  if (event.type === 'chunk') {
    if (ownRuns.has(event.runId)) return;
    if (mirror && mirror.runId !== event.runId) endMirror();
    if (!mirror) {
      const view = replyView();
      const turn = { agent: null, threadId: about, replyId: '', failed: false, aborted: false, finished: false, usage: null };
      mirror = { runId: event.runId, view, turn };
      follow();
    }
    drawChunk(mirror.view, event.chunk, mirror.turn);
    if (['finish', 'error', 'abort'].includes(event.chunk.type)) endMirror();
  } else if (event.type === 'messages-saved' && !(mirror && event.messages.every((m) => m.role !== 'user'))) {
    // Drawn from memory; a reply still streaming stays below (its own save is drawn when it ends).
    showThread(about, { keepScroll: true });
  }
}

channel?.addEventListener('message', (event) => {
  const { type, threadId: changed } = event.data ?? {};
  if (!memory || (type !== 'changed' && type !== 'deleted')) return;
  if (type === 'deleted') previews.delete(changed);
  refreshThreads();
  if (changed !== threadId) return;
  if (running) staleWhileRunning = true;
  else showThread(changed, { keepScroll: true });
});

// ---------------------------------------------------------------------------------------------
// The model, the demo tool and the Settings dialog

/** Whether the server's model is the offline demo model (the friendly `demo` script of the model server). */
function isOfflineDemoModel() {
  return isDemoModel(config);
}

/** Whether the offline demo model is in use. */
function offlineDemo() {
  return active?.kind === 'server' && isOfflineDemoModel();
}

/** JSON with every non-ASCII character escaped (an HTTP header value must be Latin-1). */
function asciiJson(value) {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** What a message asks to research ("research solana" → "solana"), or null when it does not. */
function researchTopic(content) {
  const match = /\bresearch(?:es|ed|ing)?\b(?:\s+(?:on|about|into|for))?\s*(.*)/is.exec(content);
  if (!match) return null;
  const topic = match[1].replace(/\s+/g, ' ').replace(/^[\s"'“‘]+|[\s"'”’.,;:!?]+$/g, '').replace(/\s+for me$/i, '').slice(0, 80).trim();
  return topic || 'your question';
}

/**
 * The offline model's script for this message, when it is not the page's model: the demo model
 * cannot decide to call a tool, so a message about the time asks the model server for the
 * `call:clock` script, which really calls the page's clock tool (and then reports its result),
 * and a message about research asks for the `background:research` script, which calls the
 * background research tool, says it started, and answers the follow-up turn with its result.
 */
function offlineScriptFor(content) {
  if (!offlineDemo()) return null;
  const topic = researchTopic(content);
  if (topic !== null) return `background:research:${asciiJson({ topic })}`;
  const writing = /\bask the writer\b(?:\s+(?:about|for|to))?\s*(.*)/is.exec(content);
  if (writing) return `supervisor:writer:${asciiJson(writing[1].trim() || 'something nice').slice(1, -1)}`;
  return /\btime\b/i.test(content) ? 'call:clock:{}' : null;
}

/**
 * What `choice` ({ provider, model, baseUrl }) means: the Agent's model config and its labels.
 * `key`: the API key to use (default: the stored one of that provider).
 */
function describe(choice, key = loadKey(choice.provider).key) {
  if (choice.provider === SERVER) {
    const offline = config.mode === 'offline';
    return {
      kind: 'server',
      model: config.model,
      badge: offline ? 'offline demo' : 'provider',
      badgeClass: offline ? 'offline' : 'provider',
      label: config.label ?? config.model?.id ?? '',
      title: config.model?.id ?? '',
      memoryOptions: null, // the Memory's own options (titles as /config.json says)
    };
  }
  const info = providerInfo(choice.provider);
  const id = `${info.id}/${choice.model.trim() || info.model}`;
  const model = { id };
  const baseUrl = choice.baseUrl.trim();
  if (baseUrl) model.url = baseUrl;
  if (key && !info.noKey) model.apiKey = key; // only here: never in memory, never in the page
  let host = '';
  try {
    host = new URL(baseUrl || info.baseUrl).host;
  } catch {
    host = baseUrl;
  }
  return {
    kind: 'direct',
    model,
    badge: 'provider',
    badgeClass: 'provider',
    label: `${id} · ${host}, from this browser`,
    title: id,
    // A real model titles each new conversation after its first exchange.
    memoryOptions: { lastMessages: LAST_MESSAGES, generateTitle: true },
  };
}

/** Builds the Agent for `choice`; throws (nothing changed) when the package refuses the config. */
function useSettings(choice, key) {
  const next = describe(choice, key);
  // The server's model runs in the SharedWorker when the setting is on; a provider picked here
  // runs in the page (its key stays in this tab).
  agent = next.kind === 'server' && workerMode() ? connectAgent(agentWorker(), 'demo') : buildDemoAgent(pkg, { model: next.model, demo: next.kind === 'server' && isOfflineDemoModel(), memory, onTrace: traceView.receive });
  active = next;
  settings = { ...choice };
  const mode = $('mode');
  mode.textContent = next.badge;
  mode.className = `badge ${next.badgeClass}`;
  $('label').textContent = next.label;
  $('label').title = next.title;
  $('empty-hint').textContent = offlineDemo()
    ? 'Ask “What time is it?” to see a tool call, “Research solana” for a background task, or “Ask the writer about the sea” for a sub-agent.'
    : '';
  drawSuggestions($('suggestions'), suggestionsFor(offlineDemo()), (text) => send(text));
}

function serverChoiceLabel() {
  return config.mode === 'offline' ? 'offline demo' : `server (${config.model?.id ?? 'its model'}, key on the server)`;
}

/** Fills the dialog's fields for the provider picked in it. `values`: the saved choice, if it is that provider. */
function fillSettingsFields(provider, values) {
  setError.hidden = true;
  const server = provider === SERVER;
  const info = providerInfo(provider);
  setModel.disabled = server;
  setUrl.disabled = server;
  setKey.disabled = server || Boolean(info?.noKey);
  setRemember.disabled = setKey.disabled;
  setModels.replaceChildren(...(info?.models ?? []).map((m) => Object.assign(document.createElement('option'), { value: m })));
  if (server) {
    setModel.value = config.model?.id ?? '';
    setUrl.value = config.model?.url ?? '';
    setKey.value = '';
    setKey.placeholder = config.mode === 'offline' ? 'not needed' : 'kept on the server';
    setRemember.checked = false;
    setHint.textContent =
      config.mode === 'offline'
        ? 'The offline demo model runs on the local model server: no key, and no real answers. Pick a provider to talk to a real model.'
        : 'The server adds its own key to each request: the page never sees it.';
    setForget.hidden = true;
    return;
  }
  setModel.value = values?.model ?? '';
  setModel.placeholder = info.model;
  setUrl.value = values?.baseUrl ?? '';
  setUrl.placeholder = info.baseUrl;
  const { key, remembered } = loadKey(provider);
  setKey.value = info.noKey ? '' : key;
  setKey.placeholder = info.noKey ? 'not needed' : `your ${info.name} API key`;
  setRemember.checked = remembered;
  setForget.hidden = info.noKey || !key;
  setHint.textContent = info.noKey
    ? 'Ollama must allow this page: start it with OLLAMA_ORIGINS set to this address.'
    : `The key goes only to ${info.name}'s API, straight from this browser, and is never stored with your conversations. ` +
      'It is kept for this tab only unless you tick "Remember on this device".';
}

function openSettings() {
  if (running || !pkg || !config) return;
  if (!setProvider.options.length) {
    const options = [[SERVER, serverChoiceLabel()], ...PROVIDERS.map((p) => [p.id, p.name])];
    setProvider.replaceChildren(...options.map(([value, label]) => Object.assign(document.createElement('option'), { value, textContent: label })));
  }
  setProvider.value = settings.provider;
  fillSettingsFields(settings.provider, settings);
  setWorker.disabled = typeof SharedWorker !== 'function';
  setWorker.checked = workerMode();
  if (settingsNote) {
    setError.textContent = settingsNote;
    setError.hidden = false;
  }
  settingsDialog.showModal();
}

setProvider.addEventListener('change', () => {
  const provider = setProvider.value;
  fillSettingsFields(provider, provider === settings.provider ? settings : null);
});

setForget.addEventListener('click', () => {
  storeKey(setProvider.value, '', false);
  setKey.value = '';
  setRemember.checked = false;
  setForget.hidden = true;
  setKey.focus();
});

$('set-cancel').addEventListener('click', () => settingsDialog.close());

settingsForm.addEventListener('submit', (event) => {
  event.preventDefault();
  if (running) return;
  const provider = setProvider.value;
  const choice =
    provider === SERVER ? { provider, model: '', baseUrl: '' } : { provider, model: setModel.value.trim(), baseUrl: setUrl.value.trim() };
  const info = providerInfo(provider);
  const key = setKey.value.trim();
  if (info && !info.noKey && !key && !choice.baseUrl) {
    // (The package would say to set an environment variable, which a page does not have.)
    setError.textContent = `Enter your ${info.name} API key, or the base URL of a proxy that adds it.`;
    setError.hidden = false;
    setKey.focus();
    return;
  }
  const workerBefore = workerMode();
  try {
    if (!setWorker.disabled) globalThis.localStorage?.setItem(WORKER_KEY, setWorker.checked ? '1' : '0');
  } catch {
    // (localStorage refused: the setting lasts until the next reload only through the agent built now.)
  }
  try {
    useSettings(choice, key);
  } catch (err) {
    try {
      globalThis.localStorage?.setItem(WORKER_KEY, workerBefore ? '1' : '0');
    } catch {
      // see above
    }
    // The package refused the config (e.g. no key): nothing changed.
    setError.textContent = err?.message ?? String(err);
    setError.hidden = false;
    return;
  }
  if (info && !info.noKey) storeKey(provider, key, setRemember.checked);
  saveSettings(choice);
  settingsNote = '';
  settingsButton.classList.remove('attention');
  settingsDialog.close();
  input.focus();
});

settingsButton.addEventListener('click', openSettings);

// Copy buttons of code blocks (drawn by markdown.js).
messagesEl.addEventListener('click', (event) => {
  const button = event.target.closest?.('.copy-code');
  if (!button) return;
  const code = button.parentElement?.querySelector('code')?.textContent ?? '';
  navigator.clipboard?.writeText(code).then(
    () => {
      button.classList.add('copied');
      setTimeout(() => button.classList.remove('copied'), 1500);
    },
    () => {},
  );
});

// ---------------------------------------------------------------------------------------------
// Start

async function start() {
  try {
    const res = await fetch(`/config.json${location.search}`, { cache: 'no-store' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    config = await res.json();
  } catch (err) {
    $('mode').textContent = 'error';
    addNotice(`Could not load /config.json (${err.message}). Is node www/serve.mjs running?`, 'error');
    return;
  }
  $('mode').textContent = config.mode === 'offline' ? 'offline demo' : 'provider';
  $('mode').classList.add(config.mode === 'offline' ? 'offline' : 'provider');
  $('label').textContent = config.label ?? config.model?.id ?? '';
  $('label').title = config.model?.id ?? '';

  try {
    pkg = await import('/pkg/index.browser.js');
  } catch (err) {
    addNotice(`Could not load the wasm-agent package from /pkg/ (${err.message}). Run ./x build.`, 'error');
    return;
  }
  const { Memory, InMemoryStore } = pkg;

  const options = serverMemoryOptions(config, LAST_MESSAGES);
  try {
    memory = new Memory({ options }); // IndexedDB, database "wasm-agent"
    await memory.listThreads({ resourceId: RESOURCE });
  } catch (err) {
    console.warn('wasm-agent demo: IndexedDB is not usable, conversations last until reload', err);
    try {
      memory = new Memory({ storage: new InMemoryStore(), options });
      $('storage-note').textContent = 'IndexedDB is not available here: conversations last until you reload.';
    } catch (err2) {
      addNotice(`Could not create the memory: ${err2.message}`, 'error');
      return;
    }
  }

  // The saved settings, unless the address picks an offline script (`?model=`) for this visit.
  const saved = loadSettings();
  const choice = new URLSearchParams(location.search).has('model') ? { provider: SERVER, model: '', baseUrl: '' } : saved;
  try {
    useSettings(choice);
  } catch (err) {
    if (choice.provider === SERVER) {
      addNotice(`Could not create the agent: ${err.message}`, 'error');
      return;
    }
    // E.g. a key kept for one tab only, and this is another tab: back to the server's model.
    settingsNote = `Could not use ${providerInfo(choice.provider)?.name ?? choice.provider}: ${err.message}`;
    settingsButton.classList.add('attention');
    try {
      useSettings({ provider: SERVER, model: '', baseUrl: '' });
      settings = { ...saved }; // the dialog opens on the saved choice, to add the key
    } catch (err2) {
      addNotice(`Could not create the agent: ${err2.message}`, 'error');
      return;
    }
  }

  installJump({
    list: messagesEl,
    button: $('jump'),
    atEnd: nearBottom,
    toEnd: () => follow(true),
    afterJump: () => input.focus(),
  });
  $('attach').disabled = false;
  attachments = initComposerAttachments({
    button: $('attach'),
    picker: $('attach-input'),
    input,
    dropZone: document.querySelector('.app') ?? form,
    tray: $('attachment-tray'),
    notice: (text) => addNotice(text, 'error'),
  });
  messageActions = initMessageActions(messagesEl, {
    busy: () => Boolean(running),
    canRewrite: () => Boolean(memory),
    resend,
  });
  searchIndex = createSearchIndex(memory, textOf);
  memory.watch?.({ resourceId: RESOURCE }, onMemoryEvent);
  threadSearch.addEventListener('input', searchThreads);
  summariseButton.addEventListener('click', summariseThread);
  // The refund workflow runs in this page in both modes (see workflow-panel.js); `?refund=<ms>`
  // makes its first step take that long.
  initRefundPanel({
    pkg,
    button: $('refunds-button'),
    dialog: $('refunds'),
    resourceId: RESOURCE,
    checkDelayMs: Math.max(0, Number(new URLSearchParams(location.search).get('refund')) || 0),
  }).catch((err) => addNotice(`Could not set up the refund workflow: ${err?.message ?? err}`, 'error'));

  threadId = loadThreadId() || newThreadId();
  storeThreadId(threadId);
  drawThreads();
  await Promise.all([showThread(threadId), refreshThreads()]);
  input.disabled = false;
  setRunning(false);
  document.body.dataset.ready = '1';
  input.focus();
}

start();
