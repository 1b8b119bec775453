// What crosses between serveAgents (worker) and connectAgent (page), shared by both sides: the
// message tag and errors as plain data. Structured clone keeps only the standard error names
// and drops own fields (status, body, code, isRetryable), so errors go as { name, message, … }
// and come back as an Error (TypeError, RangeError, …) with those fields.

/** Every message of the protocol carries `wa: 1`, so other messages on the same port pass by. */
export const TAG = 1;

const MARK = '__waError';

/** `v` with every Error in it (at any depth) replaced by its data. */
export function toWire(v, depth = 0) {
  if (v === null || typeof v !== 'object' || depth > 40) return v;
  if (v instanceof Error || (typeof DOMException !== 'undefined' && v instanceof DOMException)) {
    const data = { name: v.name, message: v.message };
    for (const k of Object.keys(v)) data[k] = toWire(v[k], depth + 1);
    if (v.cause !== undefined) data.cause = toWire(v.cause, depth + 1);
    return { [MARK]: data };
  }
  if (Array.isArray(v)) return v.map((x) => toWire(x, depth + 1));
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return v;
  const out = {};
  for (const k of Object.keys(v)) out[k] = toWire(v[k], depth + 1);
  return out;
}

const KINDS = { TypeError, RangeError, SyntaxError, ReferenceError };

/** The value `toWire` made, with its errors rebuilt. */
export function fromWire(v, depth = 0) {
  if (v === null || typeof v !== 'object' || depth > 40) return v;
  if (Array.isArray(v)) return v.map((x) => fromWire(x, depth + 1));
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return v;
  const data = v[MARK];
  if (data) {
    const err = new (KINDS[data.name] ?? Error)(data.message);
    for (const k of Object.keys(data)) if (k !== 'message') err[k] = fromWire(data[k], depth + 1);
    if (!KINDS[data.name]) Object.defineProperty(err, 'name', { value: data.name, writable: true, configurable: true });
    return err;
  }
  const out = {};
  for (const k of Object.keys(v)) out[k] = fromWire(v[k], depth + 1);
  return out;
}

/** Posts `msg`, turning what cannot be cloned (a function in a value) into JSON data. */
export function post(port, msg) {
  try {
    port.postMessage(msg);
  } catch {
    port.postMessage(JSON.parse(JSON.stringify(msg)));
  }
}
