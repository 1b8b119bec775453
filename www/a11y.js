// What assistive technology hears and sees of the chat page. The message list is not a live
// region (a reply redrawn per streamed word would be read out again and again): each finished
// reply is announced once, from a visually hidden status region (#announcer). Messages are
// articles named by who said them; a reply that is still streaming, and the list while it
// does, carry aria-busy.

const announcer = document.getElementById('announcer');

/** The longest announcement (the whole reply stays in the conversation to read). */
const MAX_ANNOUNCED = 1000;

/** Names a message article by who said it. */
export function labelMessage(item, role) {
  item.setAttribute('aria-label', role === 'user' ? 'You said' : 'Assistant said');
}

/** Marks `node` busy (its content still changes) or done. */
export function setBusy(node, busy) {
  if (!node) return;
  if (busy) node.setAttribute('aria-busy', 'true');
  else node.removeAttribute('aria-busy');
}

/** Says `text` once through the status region: a new node each time, so a repeat is read too. */
export function announce(text) {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim();
  if (!announcer || !flat) return;
  const line = document.createElement('p');
  line.textContent = flat.length > MAX_ANNOUNCED ? `${flat.slice(0, MAX_ANNOUNCED - 1)}…` : flat;
  announcer.replaceChildren(line);
}

/**
 * The announcement of a finished reply: its text, or what went wrong. `outcome`: 'done',
 * 'stopped' or 'failed'; `error`: the error shown when it failed.
 */
export function announceReply(text, outcome, error = '') {
  const said = String(text ?? '').trim();
  if (outcome === 'failed') announce(`The reply failed: ${error}${said ? ` It had said: ${said}` : ''}`);
  else if (outcome === 'stopped') announce(said ? `Reply stopped. The assistant had said: ${said}` : 'Reply stopped.');
  else announce(said ? `Assistant said: ${said}` : 'The assistant finished without text.');
}
