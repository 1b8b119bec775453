// Shared helpers of the background-task tests (tests/js/background*.test.mjs). Not a test file.
//
// Builds on helpers.mjs: a model script per test that tells apart the three kinds of request an
// untilIdle run makes (the user's turn, the step that follows the tool results, the continuation
// that carries the directive) and records each request's start and end, tools that take a given
// time (and can fail, write output, or watch their abortSignal), agents with memory and
// background tasks, and a stream reader that stamps every chunk with its arrival time.

import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, types, uid } from './helpers.mjs';
import { Memory, InMemoryStore, createTool } from '../../pkg/index.node.js';

export { Memory, InMemoryStore, createTool };

/** The first words of the continuation directive (src/core/until_idle.rs). */
export const DIRECTIVE = 'Background tasks you started earlier have finished';

/** Default options of every background test: bounded in time. */
export const TB = { timeout: 20_000 };

const PLACEHOLDER_MARK = '"status":"running"';

/** Text of a message's content (string or parts). */
export function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : p?.text ?? JSON.stringify(p))).join('\n');
  return content == null ? '' : JSON.stringify(content);
}

/** The directive of a request body (its system message that starts with DIRECTIVE), or undefined. */
export function directiveOf(body) {
  const m = (body?.messages ?? []).find((x) => x.role === 'system' && contentText(x.content).includes(DIRECTIVE));
  return m ? contentText(m.content) : undefined;
}

/** 'continuation' (the directive is there), 'ack' (the last message is a tool result) or 'user'. */
export function kindOf(body) {
  const messages = body?.messages ?? [];
  if (directiveOf(body) !== undefined) return 'continuation';
  if (messages.at(-1)?.role === 'tool') return 'ack';
  return 'user';
}

/** The tool messages of a request body: [{ toolCallId, content }]. */
export const toolMessages = (body) =>
  (body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => ({ toolCallId: m.tool_call_id, content: contentText(m.content) }));

/** Whether a tool message still holds a placeholder. */
export const isPlaceholder = (content) => String(content).includes(PLACEHOLDER_MARK);

/**
 * Registers a model script with a unique name on `srv` and returns
 * `{ name, model, log }`; `log` holds one entry per request:
 * `{ kind, n, body, directive, start, end, halted }` (times from Date.now(); `end` is when the
 * server finished or the exchange was halted).
 *
 * `handlers` answers each kind of request: `{ user, ack, continuation }`, each an async
 * `(ctx) => void` where `ctx = { ex, chat, body, kind, n, entry, say, callTools, fail }`. The
 * defaults: `user` calls `calls` (default: every offered tool once, `call_<name>_<i>`) when the
 * conversation has no tool result yet, else says "Noted."; `ack` says "Started in the
 * background."; `continuation` says "Results are in: " and the tool results that are not
 * placeholders.
 */
export function bgScript(srv, { calls, user, ack, continuation } = {}) {
  const name = uid('bgs').replace(/[^A-Za-z0-9_-]/g, '_');
  const log = [];
  const defaults = {
    async user(ctx) {
      const hasTool = (ctx.body.messages ?? []).some((m) => m.role === 'tool');
      if (hasTool) return ctx.say('Noted.');
      const list = typeof calls === 'function' ? calls(ctx) : calls ?? (ctx.body.tools ?? []).map((t, i) => ({ name: t.function.name, id: `call_${t.function.name}_${i}` }));
      if (list.length === 0) return ctx.say('Nothing to do.');
      return ctx.callTools(list);
    },
    async ack(ctx) {
      return ctx.say('Started in the background.');
    },
    async continuation(ctx) {
      const real = toolMessages(ctx.body).filter((m) => !isPlaceholder(m.content)).map((m) => m.content);
      return ctx.say(`Results are in: ${real.join(' | ')}`);
    },
  };
  const handlers = { user: user ?? defaults.user, ack: ack ?? defaults.ack, continuation: continuation ?? defaults.continuation };
  srv.scripts.set(name, {
    description: 'background-task test script',
    async run(ex) {
      const body = ex.body ?? {};
      const kind = kindOf(body);
      const entry = { kind, n: log.length, body, directive: directiveOf(body), start: Date.now(), end: undefined, halted: false };
      log.push(entry);
      const chat = ex.chat();
      const ctx = {
        ex,
        chat,
        body,
        kind,
        n: entry.n,
        entry,
        defaults,
        /** Streams `text` in word pieces, `delayMs` apart (after an optional `firstByteMs` of silence). */
        async say(text, { delayMs = 0, firstByteMs = 0, finish = 'stop' } = {}) {
          if (firstByteMs > 0) await ex.sleep(firstByteMs);
          chat.role();
          const pieces = String(text).match(/\s*\S+/g) ?? [String(text)];
          for (const piece of pieces) {
            chat.content(piece);
            if (delayMs > 0) await chat.pause(delayMs);
          }
          await chat.complete(finish);
        },
        /** Calls tools: `[{ name, id?, args? }]`. */
        async callTools(list, { firstByteMs = 0 } = {}) {
          if (firstByteMs > 0) await ex.sleep(firstByteMs);
          chat.role();
          list.forEach((c, index) => {
            chat.toolCall({
              index,
              id: c.id ?? `call_${c.name}_${index}`,
              type: 'function',
              function: { name: c.name, arguments: JSON.stringify(c.args ?? { topic: 'solana' }) },
            });
          });
          await chat.complete('tool_calls');
        },
        /** Answers with an HTTP error (500 by default) in OpenAI's error shape. */
        fail(status = 500, message = 'The server had an error while processing your request.') {
          ex.error(status, { message, type: 'server_error', code: null });
        },
      };
      try {
        await handlers[kind](ctx);
      } catch (err) {
        entry.halted = true;
        throw err;
      } finally {
        entry.end = Date.now();
      }
    },
  });
  return { name, log, model: { id: `openai/${name}`, url: srv.url, apiKey: 'k', api: 'chat' } };
}

/** Fails when two recorded requests of `log` were in flight at the same time. */
export function assertNoOverlap(log) {
  const sorted = [...log].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1];
    const cur = sorted[i];
    assert.ok(prev.end !== undefined, `request ${prev.n} (${prev.kind}) never ended`);
    assert.ok(
      cur.start >= prev.end,
      `request ${cur.n} (${cur.kind}) started at +${cur.start - sorted[0].start} ms while request ${prev.n} (${prev.kind}) ran until +${prev.end - sorted[0].start} ms`,
    );
  }
}

/**
 * A tool that takes `ms` (a number, or a function of the input; it watches its abortSignal), writes `{ progress: i }` every `writeEvery`
 * ms when asked, then returns `{ name, topic, findings }` or throws `fail` (a message).
 * `record` collects `{ start, end, aborted, signalAborted, outputs }` per execution.
 */
export function slowTool({ name = 'research', ms: duration = 100, fail, writeEvery, background = { enabled: true }, record = [] } = {}) {
  return createTool({
    id: name,
    description: `Long ${name}`,
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
    ...(background ? { background } : {}),
    execute: async (input, { writer, abortSignal }) => {
      const { topic } = input;
      const ms = typeof duration === 'function' ? duration(input) : duration;
      const rec = { topic, start: Date.now(), end: undefined, aborted: false, signalAborted: false, outputs: 0 };
      record.push(rec);
      abortSignal?.addEventListener('abort', () => {
        rec.signalAborted = true;
      });
      try {
        const until = Date.now() + ms;
        if (writeEvery) {
          let i = 0;
          while (Date.now() < until && !abortSignal?.aborted) {
            await writer.write({ progress: i++ });
            rec.outputs++;
            await delay(Math.min(writeEvery, Math.max(0, until - Date.now())), undefined, { signal: abortSignal }).catch(() => {});
          }
        } else {
          await delay(ms, undefined, { signal: abortSignal }).catch(() => {});
        }
        if (abortSignal?.aborted) {
          rec.aborted = true;
          throw new Error(`${name} was aborted`);
        }
        if (fail) throw new Error(fail);
        return { name, topic, findings: `${name} found 3 facts about ${topic}` };
      } finally {
        rec.end = Date.now();
      }
    },
  });
}

/** A fresh agent on `model` with memory and background tasks: returns { agent, memory }. */
export function bgAgent(model, { tools = {}, backgroundTasks = { enabled: true }, memory = true, ...rest } = {}) {
  const mem = memory ? new Memory({ storage: new InMemoryStore() }) : undefined;
  const agent = new Agent({
    id: uid('bg-agent'),
    model,
    maxRetries: 0,
    tools,
    ...(mem ? { memory: mem } : {}),
    ...(backgroundTasks ? { backgroundTasks } : {}),
    ...rest,
  });
  return { agent, memory: mem };
}

/** A fresh thread + resource for `options.memory`. */
export const scope = () => ({ thread: uid('thread'), resource: uid('user') });

/**
 * Reads a fullStream (or output) to its end; `onChunk(chunk, i, chunks)` may act mid-stream
 * (awaited). Returns { chunks, at, closedAt, t0 } where `at[i]` is the arrival time of chunk i.
 */
export async function read(stream, onChunk) {
  const chunks = [];
  const at = [];
  const t0 = Date.now();
  for await (const chunk of stream) {
    chunks.push(chunk);
    at.push(Date.now());
    if (onChunk) await onChunk(chunk, chunks.length - 1, chunks);
  }
  return { chunks, at, closedAt: Date.now(), t0 };
}

/** Polls `fn` until it returns a truthy value (returned); fails after `timeoutMs`. */
export async function waitFor(fn, what = 'a condition', timeoutMs = 8000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(10);
  }
}

/** Chunks of one type. */
export const ofType = (chunks, type) => chunks.filter((c) => c.type === type);

/** Index of the first chunk at or after `from` matching `pred`, or -1. */
export function indexWhere(chunks, pred, from = 0) {
  for (let i = from; i < chunks.length; i++) if (pred(chunks[i])) return i;
  return -1;
}

/** Indexes of chunks of `type`. */
export const indexesOf = (chunks, type) => chunks.flatMap((c, i) => (c.type === type ? [i] : []));

/** Background chunks of one task, in stream order, as their short names (started, running, ...). */
export const taskEvents = (chunks, taskId) =>
  chunks.filter((c) => c.type.startsWith('background-task-') && c.payload?.taskId === taskId).map((c) => c.type.slice('background-task-'.length));

/** Text of the text-delta chunks. */
export const textOf = (chunks) => ofType(chunks, 'text-delta').map((c) => c.payload.text).join('');

/** The stored messages of a thread as JSON text. */
export async function storedText(memory, threadId) {
  return JSON.stringify(await memory.listMessages({ threadId }));
}

/** A compact description of the chunk types, for failure messages. */
export const describe = (chunks) => types(chunks).join(',');

/** Waits until the agent's task `taskId` reached a terminal status; returns its record. */
export function waitForTask(agent, taskId, timeoutMs = 8000) {
  return waitFor(
    () => agent.listBackgroundTasks().find((t) => t.id === taskId && !['pending', 'running'].includes(t.status)),
    `task ${taskId} to end`,
    timeoutMs,
  );
}

/** Cancels the tasks of `agent` that still run (cleanup at the end of a test). */
export function cancelAll(agent) {
  for (const t of agent.listBackgroundTasks()) if (t.status === 'running' || t.status === 'pending') agent.cancelBackgroundTask(t.id);
}
