// Helpers of the tracing tests (SPEC §16–17): an in-test exporter and span tree checks. Not a
// test file itself.

import assert from 'node:assert/strict';

/** An exporter that keeps every event it gets. */
export function memoryExporter(name = 'mem') {
  const events = [];
  return {
    name,
    events,
    exportTracingEvent(event) {
      events.push(event);
    },
    /** The ended spans, in the order they ended. */
    ended: () => events.filter((e) => e.type === 'span_ended').map((e) => e.exportedSpan),
    /** The last version of each span, by name. */
    byName(spanName) {
      const found = events.filter((e) => e.exportedSpan.name === spanName).at(-1);
      assert.ok(found, `a span named ${spanName}: ${events.map((e) => e.exportedSpan.name).join(', ')}`);
      return found.exportedSpan;
    },
  };
}

/**
 * The §16.1 rules every run's events keep: each span starts once and ends once (event spans only
 * end), a child ends before its parent, ids are 16/32 lowercase hex, times are Dates in order.
 */
export function checkEvents(events) {
  const started = new Map();
  const ended = new Map();
  for (const [i, e] of events.entries()) {
    const s = e.exportedSpan;
    assert.match(s.id, /^[0-9a-f]{16}$/);
    assert.match(s.traceId, /^[0-9a-f]{32}$/);
    assert.ok(s.startTime instanceof Date, 'startTime is a Date');
    if (e.type === 'span_started') {
      assert.ok(!started.has(s.id), `${s.name} started twice`);
      assert.equal(s.isEvent, false);
      started.set(s.id, i);
    } else if (e.type === 'span_ended') {
      assert.ok(!ended.has(s.id), `${s.name} ended twice`);
      assert.ok(s.isEvent || started.has(s.id), `${s.name} ended without starting`);
      assert.ok(s.endTime instanceof Date && s.endTime >= s.startTime, `${s.name}: endTime`);
      ended.set(s.id, i);
    }
  }
  for (const id of started.keys()) assert.ok(ended.has(id), `span ${id} never ended`);
  for (const e of events.filter((e) => e.type === 'span_ended')) {
    const p = e.exportedSpan.parentSpanId;
    if (p && ended.has(p)) assert.ok(ended.get(e.exportedSpan.id) < ended.get(p), `${e.exportedSpan.name} ends before its parent`);
  }
}

/** `[name, parent name]` of each ended span. */
export function tree(spans) {
  const byId = new Map(spans.map((s) => [s.id, s]));
  return spans.map((s) => [s.name, s.parentSpanId ? (byId.get(s.parentSpanId)?.name ?? 'outside') : null]);
}

/** Runs `fn(lines)` with console.error lines recorded in `lines`. */
export async function withConsoleErrors(fn) {
  const lines = [];
  const real = console.error;
  console.error = (...args) => lines.push(args.map(String).join(' '));
  try {
    await fn(lines);
  } finally {
    console.error = real;
  }
}
