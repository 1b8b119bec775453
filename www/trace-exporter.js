// The demo's tracing exporter (SPEC §16.1), in the realm the agent runs in (the page, or the
// SharedWorker): it gathers the spans of each trace and, when the trace's root span ends, hands
// the whole run to `deliver` as plain data the page's trace view draws (trace-view.js). In the
// worker, `deliver` posts it on a BroadcastChannel (agent-worker.js); the package's worker protocol
// is left as it is.
//
// What crosses is only what the view shows (ids, name, type, times, the error, a few attributes),
// never a span's input or output: those hold the whole conversation.

/** The BroadcastChannel the SharedWorker posts finished traces on (agent-worker.js, app.js). */
export const TRACE_CHANNEL = 'wasm-agent-demo:traces';

/** Traces kept open at once; a trace whose root never ends (a broken run) is dropped past this. */
const OPEN_TRACES = 16;

/** A `Date` (or epoch ms) as epoch milliseconds, or null. */
function ms(value) {
  const t = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : NaN;
  return Number.isFinite(t) ? t : null;
}

/** The attributes the view shows of a span: token usage, finish reason, tool success. */
function shownAttributes(attributes) {
  const a = attributes && typeof attributes === 'object' ? attributes : {};
  const out = {};
  const usage = a.usage;
  if (usage && typeof usage === 'object') {
    out.usage = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens };
  }
  if (typeof a.finishReason === 'string') out.finishReason = a.finishReason;
  if (typeof a.success === 'boolean') out.success = a.success;
  return out;
}

/** One span as the view needs it (structured-cloneable). */
function viewSpan(s) {
  const error = s.errorInfo;
  return {
    id: String(s.id),
    parentSpanId: s.parentSpanId ?? null,
    name: String(s.name ?? ''),
    type: String(s.type ?? ''),
    startTime: ms(s.startTime),
    endTime: ms(s.endTime),
    isEvent: Boolean(s.isEvent),
    errorInfo: error ? { name: String(error.name ?? 'Error'), message: String(error.message ?? '') } : null,
    attributes: shownAttributes(s.attributes),
  };
}

/**
 * An exporter whose `deliver({ traceId, runId, spans })` gets each finished trace: `runId` is
 * the run's id (the root span's `metadata.runId`, the `runId` its `stream()` output has), `spans`
 * in the order they started.
 */
export function traceCollector(deliver) {
  const open = new Map(); // traceId → Map(spanId → view span)
  return {
    name: 'demo-trace-view',
    exportTracingEvent({ type, exportedSpan: s } = {}) {
      if (!s?.traceId || !s.id) return;
      let spans = open.get(s.traceId);
      if (!spans) {
        spans = new Map();
        open.set(s.traceId, spans);
        if (open.size > OPEN_TRACES) open.delete(open.keys().next().value);
      }
      // span_updated and span_ended carry the whole span: the newest copy wins (start order is kept).
      spans.set(s.id, viewSpan(s));
      if (type !== 'span_ended' || !s.isRootSpan) return;
      open.delete(s.traceId);
      const runId = typeof s.metadata?.runId === 'string' ? s.metadata.runId : null;
      deliver({ traceId: s.traceId, runId, spans: [...spans.values()] });
    },
  };
}
