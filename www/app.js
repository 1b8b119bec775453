// The wasm-agent chat demo: one Agent in the page, streaming from the model /config.json names,
// with its conversations kept in the package's Memory (IndexedDB in a browser).
// Model output (replies, reasoning, titles) is only ever inserted with textContent, so it can
// never run as HTML.

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

/** Every conversation of this page belongs to this resource. */
const RESOURCE = 'demo-user';
/** localStorage key of the thread shown on load. */
const THREAD_KEY = 'wasm-agent-demo:thread';
/** Earlier messages the agent loads into each prompt. */
const LAST_MESSAGES = 40;

let agent = null;
let memory = null;
let running = null; // { controller, threadId } while a reply streams
let threadId = null; // the conversation on screen
let threads = []; // the stored threads, most recently updated first
/** Thread id → the first words of its first user message (for threads without a title). */
const previews = new Map();
let renderSeq = 0; // a newer load or a new turn makes an older history load drop its result
let listSeq = 0;
let staleWhileRunning = false; // another tab changed the shown thread during our reply

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

/** Scrolls to the bottom, unless the reader scrolled up to read. */
function follow(force = false) {
  const gap = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight;
  if (force || gap < 120) messagesEl.scrollTop = messagesEl.scrollHeight;
}

function clearMessages() {
  for (const node of [...messagesEl.children]) if (node !== emptyEl) node.remove();
  emptyEl.hidden = false;
}

function addMessage(role) {
  emptyEl.hidden = true;
  const item = el('article', `msg ${role}`);
  item.dataset.role = role;
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

function setRunning(on) {
  sendButton.disabled = on || !agent;
  stopButton.disabled = !on;
  newChatButton.disabled = on || !agent;
  for (const button of threadsEl.querySelectorAll('button')) button.disabled = on;
  document.body.classList.toggle('streaming', on);
}

/**
 * One assistant reply: a collapsible thinking block, the text, and a footer line. A reply
 * drawn from memory (`restored`) has no timing, so its thinking block is just "Reasoning".
 */
function replyView({ restored = false } = {}) {
  const { item, bubble } = addMessage('assistant');
  item.classList.add('pending');
  const text = el('div', 'text');
  const footer = el('div', 'meta');
  let thinking = null;
  let thinkingText = null;
  let thinkingTouched = false;
  let thinkingStarted = 0;
  let stepBreak = false; // the next text starts a new step: a blank line first
  let reasoningBreak = false; // the later step's reasoning has had its blank line
  bubble.append(text);
  item.append(footer);

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
        bubble.insertBefore(thinking, text);
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
        if (text.textContent && !text.textContent.endsWith('\n')) text.textContent += '\n\n';
      }
      text.textContent += delta;
      follow();
    },
    step() {
      if (text.textContent) stepBreak = true;
    },
    tool(name, state) {
      item.classList.remove('pending');
      const line = el('div', 'tool', `Tool ${name}${state ? ` · ${state}` : ''}`);
      bubble.insertBefore(line, text);
    },
    endThinking(label) {
      reasoningBreak = false;
      if (!thinking || thinking.classList.contains('done')) return;
      thinking.classList.add('done');
      const secs = (performance.now() - thinkingStarted) / 1000;
      thinking.querySelector('summary').textContent =
        label ?? (restored ? 'Reasoning' : `Thought for ${secs < 1 ? 'under a second' : `${secs.toFixed(1)} s`}`);
      if (!thinkingTouched && thinking.open) {
        thinking.dataset.auto = '1';
        thinking.open = false;
      }
    },
    footer(line, className = '') {
      footer.textContent = line;
      footer.className = `meta ${className}`.trim();
    },
    error(message) {
      this.endThinking();
      item.classList.remove('pending');
      item.classList.add('failed');
      bubble.append(el('div', 'error', message));
      follow(true);
    },
    stopped() {
      this.endThinking();
      item.classList.remove('pending');
      item.classList.add('stopped');
      this.footer('stopped', 'stopped-label');
    },
    done() {
      item.classList.remove('pending');
      item.dataset.done = '1';
    },
    get textContent() {
      return text.textContent;
    },
  };
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

const TOOL_STATES = {
  'input-streaming': 'called',
  'input-available': 'called',
  'output-available': 'done',
  'output-error': 'failed',
  'output-denied': 'denied',
  'approval-requested': 'waiting for approval',
};

/** Draws one stored UI message the way it looked when it streamed. */
function renderStored(message) {
  const when = message.createdAt ? new Date(message.createdAt) : null;
  const title = when && !Number.isNaN(when.getTime()) ? when.toLocaleString() : '';
  if (message.role === 'user') {
    const { item, bubble } = addMessage('user');
    bubble.textContent = textOf(message);
    if (title) item.title = title;
    return;
  }
  if (message.role !== 'assistant') return;
  const view = replyView({ restored: true });
  if (title) view.item.title = title;
  for (const part of message.parts ?? []) {
    const type = String(part.type ?? '');
    if (type === 'step-start') view.step();
    else if (type === 'reasoning') view.reasoning(String(part.text ?? ''));
    else if (type === 'text') view.text(String(part.text ?? ''));
    else if (type.startsWith('tool-')) view.tool(type.slice('tool-'.length), TOOL_STATES[part.state] ?? '');
    // `data-*`, `file` and `source-*` parts have nothing to show in this demo.
  }
  view.endThinking();
  if (message.metadata?.interrupted) view.stopped();
  view.done();
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
  for (const message of messages) renderStored(message);
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
  const items = list.map((thread) => {
    const li = el('li', 'thread-item');
    li.dataset.threadId = thread.id;
    const open = el('button', 'thread');
    open.type = 'button';
    open.disabled = Boolean(running);
    const label = threadLabel(thread);
    open.append(el('span', 'thread-title', label), el('span', 'thread-time', thread.unsaved ? '' : shortTime(thread.updatedAt)));
    open.title = label;
    if (thread.id === threadId) {
      li.classList.add('current');
      open.setAttribute('aria-current', 'page');
    }
    open.addEventListener('click', () => switchThread(thread.id));
    li.append(open);
    if (!thread.unsaved) {
      const remove = el('button', 'thread-delete', '×');
      remove.type = 'button';
      remove.disabled = Boolean(running);
      remove.title = 'Delete this conversation';
      remove.setAttribute('aria-label', `Delete “${label}”`);
      remove.addEventListener('click', () => deleteThread(thread.id));
      li.append(remove);
    }
    return li;
  });
  threadsEl.replaceChildren(...items);
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
  threads = threads.filter((t) => t.id !== id);
  if (id === threadId) newChat();
  else drawThreads();
  broadcast({ type: 'deleted', threadId: id });
  await refreshThreads();
}

// ---------------------------------------------------------------------------------------------
// A turn

async function send(textValue) {
  const content = textValue.trim();
  if (!content || running || !agent) return;
  input.value = '';
  autosize();
  renderSeq++; // a history load in flight must not replace this turn
  const id = threadId;

  const user = addMessage('user');
  user.bubble.textContent = content;
  follow(true);
  if (!previews.has(id)) {
    previews.set(id, firstWords(content));
    drawThreads();
  }

  const view = replyView();
  const controller = new AbortController();
  running = { controller, threadId: id };
  setRunning(true);
  let failed = false;
  let aborted = false;
  let finished = false;

  try {
    // Only the new message: the agent loads the earlier ones from memory and saves both sides.
    const out = await agent.stream(content, {
      memory: { thread: id, resource: RESOURCE },
      abortSignal: controller.signal,
    });
    for await (const chunk of out.fullStream) {
      const payload = chunk.payload ?? {};
      switch (chunk.type) {
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
        case 'tool-call':
          view.tool(payload.toolName ?? 'tool', 'called');
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
          failed = true;
          view.error(payload.error?.message ?? 'The model call failed.');
          break;
        case 'abort':
          aborted = true;
          view.stopped();
          break;
        case 'finish': {
          // A run that fails ends with `error`; an `error` before `finish` did not stop the
          // reply (a title or storage failure): it stays shown, and so does the usage.
          finished = true;
          view.endThinking();
          if (!aborted) view.footer(formatUsage(payload.totalUsage), 'usage');
          break;
        }
        default:
          break;
      }
    }
  } catch (err) {
    if (controller.signal.aborted) {
      if (!aborted) view.stopped();
      aborted = true;
    } else {
      failed = true;
      view.error(err?.message ?? String(err));
    }
  } finally {
    running = null;
    setRunning(false);
    if (controller.signal.aborted && !aborted) view.stopped();
    if (!finished && !failed && !controller.signal.aborted && !view.textContent) view.error('The stream ended without a reply.');
    view.done();
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
  if (event.key === 'Escape') closeSidebar();
});

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
// Start

async function start() {
  let config;
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

  let pkg;
  try {
    pkg = await import('/pkg/index.browser.js');
  } catch (err) {
    addNotice(`Could not load the wasm-agent package from /pkg/ (${err.message}). Run ./x build.`, 'error');
    return;
  }
  const { Agent, Memory, InMemoryStore } = pkg;

  // Titles: the provider's model writes them; the offline model only when /?title=<script>
  // names a script for it (else the list shows each thread's first words).
  const titles = config.titles;
  const generateTitle = titles === true ? true : titles?.model ? { model: titles.model } : false;
  const options = { lastMessages: LAST_MESSAGES, generateTitle };
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
  try {
    agent = new Agent({
      id: 'demo',
      name: 'Demo',
      instructions: 'You are a helpful, concise assistant.',
      model: config.model,
      memory,
    });
  } catch (err) {
    addNotice(`Could not create the agent: ${err.message}`, 'error');
    return;
  }

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
