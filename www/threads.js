// The chat page's thread list: conversations grouped by when they were last updated (Today,
// Yesterday, Previous 7 days, Older), a search box that filters by title and by the text of the
// messages, and renaming in place (✎, then Enter to save through memory.updateThread, Esc to
// cancel). app.js owns the list of threads; `buildThreadList` draws it.

export const GROUPS = ['Today', 'Yesterday', 'Previous 7 days', 'Older'];

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Which group a thread updated at `iso` is in, seen at `now` (local calendar days). */
export function dateGroup(iso, now = new Date()) {
  const at = new Date(iso ?? '');
  if (Number.isNaN(at.getTime())) return GROUPS[0];
  const day = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((day(now) - day(at)) / 86_400_000);
  if (days <= 0) return GROUPS[0];
  if (days === 1) return GROUPS[1];
  if (days <= 7) return GROUPS[2];
  return GROUPS[3];
}

/**
 * The words the search looks in, per thread: its messages' text, read from memory once and
 * forgotten when the thread changes.
 */
export function createSearchIndex(memory, textOf) {
  const texts = new Map(); // thread id → lower-case text of its messages
  const loading = new Map();
  return {
    /** Loads the text of each thread in `ids` not loaded yet. */
    async load(ids) {
      await Promise.all(
        ids.map((id) => {
          if (texts.has(id)) return undefined;
          if (!loading.has(id)) {
            loading.set(
              id,
              memory
                .listMessages({ threadId: id, format: 'ui' })
                .then((messages) => texts.set(id, messages.map(textOf).join('\n').toLowerCase()))
                .catch(() => texts.set(id, ''))
                .finally(() => loading.delete(id)),
            );
          }
          return loading.get(id);
        }),
      );
    },
    forget(id) {
      texts.delete(id);
    },
    /** Whether thread `id` titled `label` matches `query` (every word, in the title or the messages). */
    matches(id, label, query) {
      const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
      if (!terms.length) return true;
      const hay = `${label.toLowerCase()}\n${texts.get(id) ?? ''}`;
      return terms.every((t) => hay.includes(t));
    },
  };
}

/**
 * The list items of the thread list: a heading per date group, then its threads.
 * `list`: threads (`{ id, title?, updatedAt?, unsaved? }`, most recent first); `label(thread)`,
 * `time(thread)`: their texts; `matches(thread, label)`: whether the search keeps it;
 * `onOpen(id)`, `onDelete(id)`, `onRename(id, title)` (returns a promise).
 */
export function buildThreadList({ list, currentId, running, label, time, matches, onOpen, onDelete, onRename }) {
  const items = [];
  let group = null;
  const now = new Date();
  for (const thread of list) {
    const text = label(thread);
    if (!matches(thread, text)) continue;
    const g = thread.unsaved ? GROUPS[0] : dateGroup(thread.updatedAt, now);
    if (g !== group) {
      group = g;
      items.push(el('li', 'thread-group', g));
    }
    const li = el('li', 'thread-item');
    li.dataset.threadId = thread.id;
    li.dataset.group = g;
    const open = el('button', 'thread');
    open.type = 'button';
    open.disabled = Boolean(running);
    open.append(el('span', 'thread-title', text), el('span', 'thread-time', thread.unsaved ? '' : time(thread)));
    open.title = text;
    if (thread.id === currentId) {
      li.classList.add('current');
      open.setAttribute('aria-current', 'page');
    }
    open.addEventListener('click', () => onOpen(thread.id));
    li.append(open);
    if (!thread.unsaved) {
      const rename = el('button', 'thread-rename', '✎');
      rename.type = 'button';
      rename.disabled = Boolean(running);
      rename.title = 'Rename this conversation';
      rename.setAttribute('aria-label', `Rename “${text}”`);
      rename.addEventListener('click', () => startRename(li, thread, text, onRename));
      const remove = el('button', 'thread-delete', '×');
      remove.type = 'button';
      remove.disabled = Boolean(running);
      remove.title = 'Delete this conversation';
      remove.setAttribute('aria-label', `Delete “${text}”`);
      remove.addEventListener('click', () => onDelete(thread.id));
      li.append(rename, remove);
    }
    items.push(li);
  }
  return items;
}

/** Replaces the thread's button with a text field: Enter (or leaving it) saves, Esc cancels. */
function startRename(li, thread, current, onRename) {
  if (li.classList.contains('renaming')) return;
  li.classList.add('renaming');
  const field = el('input', 'thread-rename-input');
  field.type = 'text';
  field.value = thread.title || current;
  field.maxLength = 200;
  field.setAttribute('aria-label', 'New name of the conversation');
  const hidden = [...li.children];
  for (const child of hidden) child.hidden = true;
  li.prepend(field);
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = field.value.replace(/\s+/g, ' ').trim();
    if (save && title && title !== thread.title) {
      field.disabled = true;
      try {
        await onRename(thread.id, title);
      } catch (err) {
        field.disabled = false;
        done = false;
        field.setCustomValidity(err?.message ?? String(err));
        field.reportValidity();
        return;
      }
    }
    field.remove();
    for (const child of hidden) child.hidden = false;
    li.classList.remove('renaming');
  };
  field.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      finish(true);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation();
      finish(false);
    }
  });
  field.addEventListener('blur', () => finish(true));
  field.focus();
  field.select();
}
