// The wasm-agent chat demo: one Agent in the page, streaming from the model /config.json names.
// Model output is only ever inserted with textContent, so it can never run as HTML.

const $ = (id) => document.getElementById(id);
const messagesEl = $('messages');
const emptyEl = $('empty');
const input = $('input');
const sendButton = $('send');
const stopButton = $('stop');
const form = $('composer');

/** The conversation so far, sent whole every turn. */
const history = [];
let agent = null;
let running = null; // { controller } while a reply streams

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Scrolls to the bottom, unless the reader scrolled up to read. */
function follow(force = false) {
  const gap = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight;
  if (force || gap < 120) messagesEl.scrollTop = messagesEl.scrollHeight;
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
  document.body.classList.toggle('streaming', on);
}

/** One assistant reply: a collapsible thinking block, the text, and a footer line. */
function replyView() {
  const { item, bubble } = addMessage('assistant');
  item.classList.add('pending');
  const text = el('div', 'text');
  const footer = el('div', 'meta');
  let thinking = null;
  let thinkingText = null;
  let thinkingTouched = false;
  let thinkingStarted = 0;
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
      }
      thinkingText.textContent += delta;
      follow();
    },
    text(delta) {
      if (thinking && !thinking.classList.contains('done')) this.endThinking();
      item.classList.remove('pending');
      text.textContent += delta;
      follow();
    },
    endThinking() {
      if (!thinking || thinking.classList.contains('done')) return;
      thinking.classList.add('done');
      const secs = (performance.now() - thinkingStarted) / 1000;
      thinking.querySelector('summary').textContent = `Thought for ${secs < 1 ? 'under a second' : `${secs.toFixed(1)} s`}`;
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
    get textContent() {
      return text.textContent;
    },
  };
}

async function send(textValue) {
  const content = textValue.trim();
  if (!content || running || !agent) return;
  input.value = '';
  autosize();

  const user = addMessage('user');
  user.bubble.textContent = content;
  history.push({ role: 'user', content });
  follow(true);

  const view = replyView();
  const controller = new AbortController();
  running = { controller };
  setRunning(true);
  let failed = false;
  let aborted = false;
  let finished = false;

  try {
    const out = await agent.stream(history.map(({ role, content }) => ({ role, content })), {
      abortSignal: controller.signal,
    });
    for await (const chunk of out.fullStream) {
      const payload = chunk.payload ?? {};
      switch (chunk.type) {
        case 'reasoning-delta':
          view.reasoning(payload.text ?? '');
          break;
        case 'reasoning-end':
          view.endThinking();
          break;
        case 'text-delta':
          view.text(payload.text ?? '');
          break;
        case 'error':
          failed = true;
          view.error(payload.error?.message ?? 'The model call failed.');
          break;
        case 'abort':
          aborted = true;
          view.stopped();
          break;
        case 'finish': {
          finished = true;
          view.endThinking();
          if (!aborted && !failed) view.footer(formatUsage(payload.totalUsage), 'usage');
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
    view.item.classList.remove('pending');
    if (controller.signal.aborted && !aborted) view.stopped();
    // Keep what the model said (even a stopped reply) so the next turn has the context.
    const said = view.textContent;
    if (said) history.push({ role: 'assistant', content: said });
    if (!finished && !failed && !controller.signal.aborted && !said) view.error('The stream ended without a reply.');
    view.item.dataset.done = '1';
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

  let Agent;
  try {
    ({ Agent } = await import('/pkg/index.browser.js'));
  } catch (err) {
    addNotice(`Could not load the wasm-agent package from /pkg/ (${err.message}). Run ./x build.`, 'error');
    return;
  }
  try {
    agent = new Agent({
      id: 'demo',
      name: 'Demo',
      instructions: 'You are a helpful, concise assistant.',
      model: config.model,
    });
  } catch (err) {
    addNotice(`Could not create the agent: ${err.message}`, 'error');
    return;
  }
  input.disabled = false;
  setRunning(false);
  document.body.dataset.ready = '1';
  input.focus();
}

start();
