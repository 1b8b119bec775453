// Per-message actions of the chat page: a bar under each message with its time and Copy, plus
// Regenerate (the last assistant reply) and Edit (a user message: edit its text, then resend;
// every later message is replaced), and Trace on the reply whose spans the Trace view shows. Also the reply details memory does not keep (token usage and
// how long the model thought), which this page stores itself, in localStorage, by message id.
//
// app.js marks each message element with `dataset.at` (ISO time) and gives it `copyText()`;
// `decorate()` draws the bar, and one click listener on the message list runs the buttons.

const META_KEY = 'wasm-agent-demo:reply-meta';
/** The reply details kept (the oldest are dropped beyond this). */
const META_LIMIT = 500;

function readMeta() {
  try {
    const value = JSON.parse(localStorage.getItem(META_KEY) ?? '{}');
    return value && typeof value === 'object' ? value : {};
  } catch {
    return {};
  }
}

/**
 * Keeps `meta` ({ usage, thoughtMs, threadId }) for the stored reply `messageId` (the `messageId` of the
 * reply's `start` chunk, which is the id memory stores the reply under).
 */
export function saveReplyMeta(messageId, meta) {
  // (meta.threadId lets forgetThreadMeta drop them with their conversation.)
  if (!messageId) return;
  const all = readMeta();
  all[messageId] = { ...meta, savedAt: Date.now() };
  const ids = Object.keys(all);
  if (ids.length > META_LIMIT) {
    ids.sort((a, b) => (all[a].savedAt ?? 0) - (all[b].savedAt ?? 0));
    for (const id of ids.slice(0, ids.length - META_LIMIT)) delete all[id];
  }
  try {
    localStorage.setItem(META_KEY, JSON.stringify(all));
  } catch {
    // Storage full or disabled: the details are shown until reload only.
  }
}

/** Drops what saveReplyMeta kept for the replies of thread `threadId` (it was deleted). */
export function forgetThreadMeta(threadId) {
  const all = readMeta();
  let changed = false;
  for (const [id, meta] of Object.entries(all)) {
    if (meta?.threadId === threadId) {
      delete all[id];
      changed = true;
    }
  }
  if (!changed) return;
  try {
    localStorage.setItem(META_KEY, JSON.stringify(all));
  } catch {
    // Disabled storage: nothing was kept either.
  }
}

/** What saveReplyMeta kept for `messageId`, or null. */
export function replyMeta(messageId) {
  return (messageId && readMeta()[messageId]) || null;
}

/** "Thought for 3.2 s" from milliseconds. */
export function thoughtLabel(ms) {
  const secs = ms / 1000;
  return `Thought for ${secs < 1 ? 'under a second' : `${secs.toFixed(1)} s`}`;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayTimeFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });

/** "14:05" today, "Mar 3, 14:05" another day. */
export function messageTime(date, now = new Date()) {
  return date.toDateString() === now.toDateString() ? timeFormat.format(date) : dayTimeFormat.format(date);
}

function button(className, label, title) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = `msg-action ${className}`;
  b.textContent = label;
  b.title = title;
  return b;
}

/**
 * Draws (or redraws) the action bar of message element `item` (`.msg`): its time, and the
 * buttons its role has. Call it when the message is drawn and again once a reply has ended.
 */
export function decorate(item) {
  let bar = item.querySelector(':scope > .msg-bar');
  if (!bar) {
    bar = document.createElement('div');
    bar.className = 'msg-bar';
    item.append(bar);
  }
  const at = new Date(item.dataset.at ?? '');
  const parts = [];
  if (!Number.isNaN(at.getTime())) {
    const time = document.createElement('time');
    time.className = 'msg-time';
    time.dateTime = at.toISOString();
    time.textContent = messageTime(at);
    time.title = at.toLocaleString();
    parts.push(time);
  }
  parts.push(button('copy-message', 'Copy', 'Copy this message'));
  if (item.dataset.role === 'user') parts.push(button('edit-message', 'Edit', 'Edit this message and send it again'));
  else parts.push(button('regenerate', 'Regenerate', 'Answer this message again'));
  // The reply the Trace view shows (trace-view.js, which runs the button).
  if (item.dataset.trace === 'shown') {
    const trace = button('trace-reply', 'Trace', "This reply's spans as a timeline");
    trace.setAttribute('aria-haspopup', 'dialog');
    trace.setAttribute('aria-controls', 'trace');
    parts.push(trace);
  }
  bar.replaceChildren(...parts);
}

/**
 * Runs the bars' buttons of the messages in `list`.
 * - `busy()`: whether a reply is streaming (the buttons that send wait for it to end);
 * - `canRewrite()`: whether stored messages can be replaced now;
 * - `resend(index, text, item)`: replace the conversation from message `index` (its position
 *   among `.msg` elements) with a new turn sending `text` (and the message's attachments).
 */
export function initMessageActions(list, { busy, canRewrite, resend }) {
  const messages = () => [...list.querySelectorAll(':scope > .msg')];

  list.addEventListener('click', (event) => {
    const target = event.target.closest?.('.msg-action');
    if (!target) return;
    const item = target.closest('.msg');
    if (!item || !list.contains(item)) return;
    if (target.classList.contains('copy-message')) copy(item, target);
    else if (target.classList.contains('regenerate')) regenerate(item);
    else if (target.classList.contains('edit-message')) edit(item);
    else if (target.classList.contains('edit-cancel')) closeEditor(item);
    else if (target.classList.contains('edit-send')) submitEdit(item);
  });

  function copy(item, target) {
    const text = typeof item.copyText === 'function' ? item.copyText() : item.textContent;
    const done = () => {
      target.textContent = 'Copied';
      target.classList.add('copied');
      setTimeout(() => {
        target.textContent = 'Copy';
        target.classList.remove('copied');
      }, 1500);
    };
    if (navigator.clipboard?.writeText) navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text) && done());
    else if (fallbackCopy(text)) done();
  }

  /** The user message a reply answers: the nearest `.msg.user` before it. */
  function regenerate(item) {
    if (busy()) return;
    const all = messages();
    const at = all.indexOf(item);
    let user = at - 1;
    while (user >= 0 && all[user].dataset.role !== 'user') user--;
    if (user < 0) return;
    resend(user, typeof all[user].copyText === 'function' ? all[user].copyText() : '', all[user]);
  }

  function edit(item) {
    if (busy() || item.classList.contains('editing')) return;
    const bubble = item.querySelector('.bubble');
    const editor = document.createElement('div');
    editor.className = 'msg-editor';
    const area = document.createElement('textarea');
    area.className = 'edit-input';
    area.setAttribute('aria-label', 'Edit the message');
    area.value = typeof item.copyText === 'function' ? item.copyText() : bubble.textContent;
    area.rows = Math.min(8, Math.max(2, area.value.split('\n').length));
    area.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        submitEdit(item);
      } else if (event.key === 'Escape') {
        event.stopPropagation();
        closeEditor(item);
      }
    });
    const actions = document.createElement('div');
    actions.className = 'edit-actions';
    actions.append(button('edit-cancel', 'Cancel', 'Keep the message as it was'), button('edit-send', 'Send', 'Send the edited message; later messages are replaced'));
    editor.append(area, actions);
    item.classList.add('editing');
    bubble.after(editor);
    area.focus();
  }

  function closeEditor(item) {
    item.querySelector('.msg-editor')?.remove();
    item.classList.remove('editing');
  }

  function submitEdit(item) {
    const text = item.querySelector('.edit-input')?.value ?? '';
    if (busy() || (!text.trim() && !item.querySelector('.attachments'))) return;
    const index = messages().indexOf(item);
    closeEditor(item);
    resend(index, text, item);
  }

  /** Hides Regenerate / Edit where they cannot work (no IndexedDB) and on all but the last reply. */
  function refresh() {
    const all = messages();
    const lastReply = all.findLast((m) => m.dataset.role === 'assistant');
    const rewrite = canRewrite();
    for (const m of all) {
      const regen = m.querySelector(':scope > .msg-bar .regenerate');
      if (regen) regen.hidden = !rewrite || m !== lastReply;
      const editButton = m.querySelector(':scope > .msg-bar .edit-message');
      if (editButton) editButton.hidden = !rewrite;
    }
  }
  new MutationObserver(refresh).observe(list, { childList: true });
  return { refresh };
}

function fallbackCopy(text) {
  const area = document.createElement('textarea');
  area.value = text;
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Replacing stored messages

/**
 * The stored messages of a thread grouped as the page draws them: a user message is one message
 * on screen, and an assistant message with the assistant messages right after it (the follow-up
 * turns of one reply) is one reply.
 */
export function screenGroups(messages) {
  const groups = [];
  for (const m of messages) {
    const role = m.role === 'user' ? 'user' : m.role === 'assistant' || m.role === 'tool' ? 'assistant' : null;
    if (!role) continue;
    const last = groups.at(-1);
    if (role === 'assistant' && last?.role === 'assistant') last.ids.push(m.id);
    else groups.push({ role, ids: [m.id] });
  }
  return groups;
}

/**
 * Where the message drawn as `item` (at position `index` among the `.msg` elements) is in the
 * stored `messages`: by its id (drawn from memory, or a reply's `start` chunk), else, for a user
 * message sent in this page, as the message stored just before its reply, else by position.
 */
export function storedIndex(messages, item, index) {
  const own = item?.dataset.messageId;
  if (own) {
    const at = messages.findIndex((m) => m.id === own);
    if (at >= 0) return at;
  }
  let next = item?.nextElementSibling;
  while (next && !next.classList.contains('msg')) next = next.nextElementSibling;
  const replyId = item?.dataset.role === 'user' && next?.dataset.role === 'assistant' ? next.dataset.messageId : '';
  if (replyId) {
    const reply = messages.findIndex((m) => m.id === replyId);
    if (reply > 0 && messages[reply - 1].role === 'user') return reply - 1;
  }
  const group = screenGroups(messages)[index];
  return group ? messages.findIndex((m) => m.id === group.ids[0]) : -1;
}

/**
 * Deletes the stored messages of thread `threadId` from the one drawn as `item` (position
 * `index`) on, with `memory.deleteMessages`. Returns how many were deleted.
 */
export async function deleteFrom(memory, threadId, item, index) {
  const messages = await memory.listMessages({ threadId, format: 'ui' });
  const at = storedIndex(messages, item, index);
  const ids = at < 0 ? [] : messages.slice(at).map((m) => m.id);
  if (ids.length) await memory.deleteMessages(ids);
  return ids.length;
}
