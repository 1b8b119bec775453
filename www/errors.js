// Errors of the chat page as a user should read them: the error bubble of a reply (its words,
// a Retry button and a button that opens Settings), the browser's bare "Failed to fetch" put in
// words (a Content-Security-Policy or the network blocked the request to that host), and the
// failed sends kept in localStorage, so a reload shows the failed message with Retry again.

/** localStorage key of the failed sends: `{ [threadId]: { text, error, at } }`. */
const FAILED_KEY = 'wasm-agent-demo:failed-sends';

/** What browsers say when `fetch` is refused without a response (Chromium, Firefox, Safari). */
const BARE_FETCH_FAILURE = /^(Failed to fetch|NetworkError when attempting to fetch resource\.?|Load failed)/i;

/** Origins whose requests this page's Content-Security-Policy refused (connect-src). */
const blockedOrigins = new Set();

document.addEventListener('securitypolicyviolation', (event) => {
  if (!/^connect-src/.test(event.effectiveDirective ?? event.violatedDirective ?? '')) return;
  try {
    blockedOrigins.add(new URL(event.blockedURI).origin);
  } catch {
    // blockedURI is a keyword ('inline', 'eval'): not a request to a server.
  }
});

function hostOf(url) {
  try {
    return new URL(url).host || url;
  } catch {
    return url;
  }
}

function originOf(url) {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

/**
 * The words to show for a run's error message. The package says "Could not reach the model API
 * at <url>: Failed to fetch" when `fetch` itself rejected, which in a page means the page's
 * Content-Security-Policy refused the address, or the network did (no server there, a CORS
 * refusal, no connection): the browser does not tell which, except that a CSP refusal fires a
 * securitypolicyviolation event first.
 */
export function explainError(message) {
  const text = String(message ?? '');
  const match = /Could not reach the model API at (\S+?):? (.*)$/s.exec(text);
  if (!match || !BARE_FETCH_FAILURE.test(match[2].trim())) return text;
  const url = match[1];
  const host = hostOf(url);
  if (blockedOrigins.has(originOf(url))) {
    return (
      `The page's Content-Security-Policy blocked the request to ${host}: its connect-src does not allow ${originOf(url)}. ` +
      'Pick an address the page may reach in Settings, or serve the page with a policy that allows this one.'
    );
  }
  return (
    `The page's Content-Security-Policy or the network blocked the request to ${host} (the browser only says "${match[2].trim()}"). ` +
    'Check the base URL in Settings, that the server is running, and that it allows requests from this page (CORS).'
  );
}

/**
 * The error box of a reply: the message, then Retry (when `onRetry` is given) and Open settings
 * (when `onSettings` is given).
 */
export function errorBox(message, { onRetry, onSettings } = {}) {
  const box = document.createElement('div');
  box.className = 'error';
  const words = document.createElement('span');
  words.className = 'error-text';
  words.textContent = message;
  box.append(words);
  const actions = document.createElement('span');
  actions.className = 'error-actions';
  const button = (className, label, handler) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = className;
    b.textContent = label;
    b.addEventListener('click', handler);
    actions.append(b);
  };
  if (onRetry) button('retry', 'Retry', onRetry);
  if (onSettings) button('open-settings', 'Open settings', onSettings);
  if (actions.childElementCount) box.append(actions);
  return box;
}

function readFailures() {
  try {
    const all = JSON.parse(localStorage.getItem(FAILED_KEY) ?? '{}');
    return all && typeof all === 'object' ? all : {};
  } catch {
    return {};
  }
}

function writeFailures(all) {
  try {
    if (Object.keys(all).length) localStorage.setItem(FAILED_KEY, JSON.stringify(all));
    else localStorage.removeItem(FAILED_KEY);
  } catch {
    // Storage disabled or full: the failure lasts until reload.
  }
}

/** Remembers that sending `text` in thread `threadId` failed with `error`. */
export function saveFailure(threadId, text, error) {
  const all = readFailures();
  all[threadId] = { text, error, at: new Date().toISOString() };
  writeFailures(all);
}

/** The failed send of thread `threadId`: `{ text, error, at }`, or null. */
export function failureOf(threadId) {
  const found = readFailures()[threadId];
  return found && typeof found.text === 'string' ? { text: found.text, error: String(found.error ?? ''), at: found.at } : null;
}

/** Forgets the failed send of thread `threadId` (sent again, retried, or the thread deleted). */
export function clearFailure(threadId) {
  const all = readFailures();
  if (!(threadId in all)) return;
  delete all[threadId];
  writeFailures(all);
}
