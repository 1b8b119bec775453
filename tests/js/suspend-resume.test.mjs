// Suspend and resume (SPEC §19.1–19.4): tools that suspend, the tool-call-suspended chunk,
// closeOnSuspend and finish reason 'suspended', deciding from the live stream, from another Agent
// instance on the same store and from a new process, resume data checked against resumeSchema,
// ResumeError codes, exactly one winner of two racing decisions, listSuspendedRuns.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { T, modelFor, requestsOf, uid, useModelServer } from './helpers.mjs';
import { Agent, Mastra, Memory, InMemoryStore } from '../../pkg/index.node.js';
import { createTool, ofType, only, readRest, readUntil } from './tools-helpers.mjs';
import { fileStorage } from './suspend-helpers.mjs';

const server = useModelServer();
const HERE = path.dirname(fileURLToPath(import.meta.url));

const PIN_SCHEMA = { type: 'object', properties: { pin: { type: 'string', minLength: 4 } }, required: ['pin'] };

/** `pay` suspends for a PIN on its first execution and pays on the resume. */
function payTool(runs = [], overrides = {}) {
  return createTool({
    id: 'pay',
    description: 'Pays an amount',
    inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    resumeSchema: PIN_SCHEMA,
    execute: async (input, context) => {
      runs.push({ input, resumeData: context.resumeData, suspendPayload: context.suspendPayload });
      if (context.resumeData === undefined) {
        assert.equal(typeof context.agent.suspend, 'function', 'suspend() is under context.agent too');
        await context.suspend({ ask: 'pin', amount: input.amount });
        return 'ignored: the call suspended';
      }
      return { paid: input.amount, pin: context.resumeData.pin, asked: context.suspendPayload.ask };
    },
    ...overrides,
  });
}

/** An approval-gated `pay` that records its executions. */
function approvalPay(calls = []) {
  return createTool({
    id: 'pay',
    description: 'Pays an amount',
    inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    requireApproval: true,
    execute: async (input) => {
      calls.push(input);
      return { paid: input.amount };
    },
  });
}

function payer(tools, extra = {}) {
  const id = uid('sus');
  const agent = new Agent({ id: 'payer', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), tools, ...extra });
  return { agent, id };
}

async function readAll(out) {
  const chunks = [];
  for await (const c of out.fullStream) chunks.push(c);
  return chunks;
}

const resumeCode = async (promise) => {
  try {
    await promise;
  } catch (e) {
    return { name: e.name, code: e.code, message: e.message };
  }
  return null;
};

test('suspend(): tool-call-suspended, resumeStream in place, resumeData checked against resumeSchema first', T, async () => {
  const runs = [];
  const { agent, id } = payer({ pay: payTool(runs) });
  const out = await agent.stream('Pay 5');
  const reader = out.fullStream.getReader();
  const chunks = await readUntil(reader, (c) => c.type === 'tool-call-suspended');
  const suspended = chunks.at(-1).payload;
  assert.deepEqual(Object.keys(suspended).sort(), ['args', 'resumeSchema', 'suspendPayload', 'toolCallId', 'toolName']);
  assert.deepEqual(suspended.suspendPayload, { ask: 'pin', amount: suspended.args.amount });
  assert.deepEqual(JSON.parse(suspended.resumeSchema), PIN_SCHEMA);
  assert.equal(ofType(chunks, 'tool-result').length, 0, 'what execute returned after suspend() is ignored');

  // Bad resume data: a ValidationError listing the problem; the call stays suspended.
  const bad = await resumeCode(agent.resumeStream({ pin: '12' }, { runId: out.runId }));
  assert.equal(bad.name, 'ValidationError');
  assert.match(bad.message, /\$\.pin/);
  assert.equal(runs.length, 1, 'the tool did not run again');

  const view = await agent.resumeStream({ pin: '1234' }, { runId: out.runId, toolCallId: suspended.toolCallId });
  await readRest(reader, chunks);
  const result = only(chunks, 'tool-result').payload;
  assert.deepEqual(result.result, { paid: suspended.args.amount, pin: '1234', asked: 'pin' });
  assert.deepEqual(runs[1].suspendPayload, suspended.suspendPayload, 'the resume runs execute again with suspendPayload');
  const viewChunks = await readAll(view);
  assert.equal(viewChunks[0].type, 'tool-result', 'the second view starts at the decision');
  assert.equal(viewChunks.at(-1).type, 'finish');
  assert.equal(await out.finishReason, 'stop');
  assert.deepEqual(await out.suspendPayload, suspended.suspendPayload);
  assert.equal(requestsOf(server.current, id).length, 2);
  const again = await resumeCode(agent.resumeStream({ pin: '1234' }, { runId: out.runId }));
  assert.equal(again.code, 'not-found', 'a finished run keeps no record');
});

test('what a tool writes right before suspend() reaches the stream ahead of tool-call-suspended', T, async () => {
  const pay = payTool([], {
    execute: async (input, context) => {
      await null; // past the call's first poll, which runs execute up to its first await
      // Neither awaited: both land before the call is polled again.
      context.writer.write({ step: 'asking for a pin' });
      return context.suspend({ ask: 'pin' });
    },
  });
  const { agent } = payer({ pay });
  const chunks = await readAll(await agent.stream('Pay 5', { closeOnSuspend: true }));
  const t = chunks.map((c) => c.type);
  const output = t.indexOf('tool-output');
  assert.ok(output >= 0 && output < t.indexOf('tool-call-suspended'), t.join(','));
  assert.deepEqual(chunks[output].payload.output, { step: 'asking for a pin' });
});

test('suspend() with a payload that does not match suspendSchema is a tool-error; nothing suspends', T, async () => {
  const pay = payTool([], { suspendSchema: { type: 'object', properties: { ask: { type: 'number' } } } });
  const { agent } = payer({ pay });
  const out = await agent.stream('Pay 5');
  const chunks = await readAll(out);
  assert.equal(ofType(chunks, 'tool-call-suspended').length, 0);
  assert.match(only(chunks, 'tool-error').payload.error.message, /does not match its suspendSchema: \$\.ask/);
  assert.equal(await out.finishReason, 'stop');
});

test('closeOnSuspend: the stream ends "suspended"; another Agent instance on the same store approves', T, async () => {
  const calls = [];
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = payer({ pay: approvalPay(calls) }, { memory });
  const out = await agent.stream('Pay 7', { closeOnSuspend: true, memory: { thread: 't-close', resource: 'u1' } });
  const chunks = await readAll(out);
  assert.deepEqual(chunks.slice(-2).map((c) => c.type), ['tool-call-approval', 'finish']);
  assert.equal(chunks.at(-1).payload.stepResult.reason, 'suspended');
  assert.equal(await out.finishReason, 'suspended');
  const approval = ofType(chunks, 'tool-call-approval')[0].payload;

  const listed = await agent.listSuspendedRuns({ threadId: 't-close' });
  assert.equal(listed.total, 1);
  assert.equal(listed.runs[0].runId, out.runId);
  assert.deepEqual(listed.runs[0].toolCalls.map((c) => [c.toolCallId, c.requiresApproval]), [[approval.toolCallId, true]]);

  const other = new Agent({ id: 'payer', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), tools: { pay: approvalPay(calls) }, memory });
  const resumed = await other.approveToolCall({ runId: out.runId });
  assert.equal(resumed.runId, out.runId);
  const rest = await readAll(resumed);
  assert.equal(rest[0].type, 'tool-result', 'no start chunk: the resolved call comes first');
  assert.ok(!rest.some((c) => c.type === 'start'));
  assert.deepEqual(calls, [approval.args]);
  assert.equal(await resumed.finishReason, 'stop');
  assert.match(await resumed.text, /The tool said/);
  const body = requestsOf(server.current, id)[1].body;
  assert.equal(body.messages.filter((m) => m.role === 'tool').length, 1, 'the resumed conversation has the tool result');
  assert.equal(body.messages.find((m) => m.role === 'user').content, 'Pay 7');
  assert.equal((await agent.listSuspendedRuns()).total, 0);
  assert.equal((await resumeCode(other.approveToolCall({ runId: out.runId }))).code, 'not-found');
});

test("agents without memory in a Mastra keep run records in the Mastra's storage: another container's agent decides", T, async () => {
  const calls = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wasm-agent-mastra-runs-'));
  try {
    const storage = fileStorage(path.join(dir, 'db.json'));
    const { agent, id } = payer({ pay: approvalPay(calls) });
    new Mastra({ agents: { payer: agent }, storage });
    const out = await agent.stream('Pay 9', { closeOnSuspend: true });
    const chunks = await readAll(out);
    assert.equal(await out.finishReason, 'suspended');
    const stored = JSON.parse(fs.readFileSync(path.join(dir, 'db.json'), 'utf8')).runs;
    assert.deepEqual(Object.keys(stored), [out.runId], "the record is in the Mastra's storage");

    const other = new Agent({ id: 'payer', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), tools: { pay: approvalPay(calls) } });
    const alone = await resumeCode(other.approveToolCall({ runId: out.runId }));
    assert.equal(alone.code, 'not-found', 'an agent outside the container looks in its own storage');
    new Mastra({ agents: { payer: other }, storage });
    const resumed = await other.approveToolCall({ runId: out.runId });
    await readAll(resumed);
    assert.equal(await resumed.finishReason, 'stop');
    assert.deepEqual(calls, [ofType(chunks, 'tool-call-approval')[0].payload.args]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('two racing decisions on one suspended run: exactly one wins, the tool runs once', T, async () => {
  const calls = [];
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent, id } = payer({ pay: approvalPay(calls) }, { memory });
  const out = await agent.stream('Pay 9', { closeOnSuspend: true, memory: { thread: 't-race', resource: 'u1' } });
  await readAll(out);
  const twin = new Agent({ id: 'payer', model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }), tools: { pay: approvalPay(calls) }, memory });
  const settled = await Promise.allSettled([agent.approveToolCall({ runId: out.runId }), twin.approveToolCall({ runId: out.runId })]);
  const won = settled.filter((s) => s.status === 'fulfilled');
  const lost = settled.filter((s) => s.status === 'rejected');
  assert.equal(won.length, 1);
  assert.equal(lost.length, 1);
  assert.equal(lost[0].reason.name, 'ResumeError');
  assert.equal(lost[0].reason.code, 'in-progress');
  await readAll(won[0].value);
  assert.equal(calls.length, 1);
});

test('ResumeError codes: not-found, not-waiting (stale id, approve on a suspension); failures change nothing', T, async () => {
  const { agent } = payer({ pay: payTool([]) });
  const nothing = await resumeCode(agent.approveToolCall({ runId: 'never-ran' }));
  assert.deepEqual([nothing.name, nothing.code], ['ResumeError', 'not-found']);
  assert.match(nothing.message, /could not find a suspended run for runId 'never-ran'.*listSuspendedRuns/);
  const out = await agent.stream('Pay 3', { closeOnSuspend: true });
  const chunks = await readAll(out);
  const { toolCallId } = only(chunks, 'tool-call-suspended').payload;
  const stale = await resumeCode(agent.resumeStream({ pin: '9999' }, { runId: out.runId, toolCallId: 'call_old' }));
  assert.equal(stale.code, 'not-waiting');
  assert.ok(stale.message.includes(toolCallId), 'the message lists the calls that wait');
  const approve = await resumeCode(agent.approveToolCall({ runId: out.runId, toolCallId }));
  assert.equal(approve.code, 'not-waiting');
  assert.match(approve.message, /suspended, not waiting for approval/);
  // Still resumable after the refusals (an agent without memory keeps its runs privately).
  const resumed = await agent.resumeStream({ pin: '9999' }, { runId: out.runId });
  const rest = await readAll(resumed);
  assert.equal(rest[0].type, 'tool-result');
  assert.equal(rest[0].payload.result.pin, '9999');
});

test('declineToolCall after the stream closed: tool-output-denied, execute never runs', T, async () => {
  const calls = [];
  const { agent, id } = payer({ pay: approvalPay(calls) });
  const out = await agent.stream('Pay 4', { closeOnSuspend: true });
  await readAll(out);
  const resumed = await agent.declineToolCall({ runId: out.runId, reason: 'not today' });
  const rest = await readAll(resumed);
  assert.equal(rest[0].type, 'tool-output-denied');
  assert.equal(rest[0].payload.approval.reason, 'not today');
  assert.deepEqual(calls, []);
  const tool = requestsOf(server.current, id)[1].body.messages.find((m) => m.role === 'tool');
  assert.match(tool.content, /declined this tool call: not today/);
});

test('survives a new process: a file storage object, and a child node process that approves', T, async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wasm-agent-sus-')), 'store.json');
  const id = uid('sus-proc');
  const calls = [];
  const agent = new Agent({
    id: 'payer',
    instructions: 'Pay when asked.',
    model: modelFor(server.current, 'tool-call', { headers: { 'x-test-id': id } }),
    tools: { pay: approvalPay(calls) },
    memory: new Memory({ storage: fileStorage(file) }),
  });
  const out = await agent.stream('Pay 12', { closeOnSuspend: true, memory: { thread: 't-proc', resource: 'u1' } });
  await readAll(out);
  assert.equal(await out.finishReason, 'suspended');
  const stored = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.equal(stored.runs[out.runId].status, 'suspended');
  assert.ok(Object.values(stored.messages).some((m) => m.role === 'user'), 'the user message is stored before the process ends');
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(HERE, 'suspend-child.mjs'), file, server.current.url, id, out.runId]);
  const child = JSON.parse(stdout.trim().split('\n').at(-1));
  assert.equal(child.types[0], 'tool-result');
  assert.equal(child.finishReason, 'stop');
  assert.match(child.text, /The tool said/);
  assert.equal(child.calls.length, 1);
  assert.deepEqual(calls, [], 'the tool ran in the child only');
  const after = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.equal(after.runs[out.runId], undefined, 'the finished run left no record');
});

test('cancelling the reader while a call waits leaves the run suspended in storage; a later decision resumes it', T, async () => {
  const calls = [];
  const memory = new Memory({ storage: new InMemoryStore() });
  const { agent } = payer({ pay: approvalPay(calls) }, { memory });
  const out = await agent.stream('Pay 6', { memory: { thread: 't-cancel', resource: 'u1' } });
  const reader = out.fullStream.getReader();
  await readUntil(reader, (c) => c.type === 'tool-call-approval');
  await reader.cancel();
  assert.equal(await out.finishReason, 'abort');
  const { runs } = await agent.listSuspendedRuns({ threadId: 't-cancel' });
  assert.deepEqual(runs.map((r) => r.runId), [out.runId]);
  const resumed = await agent.approveToolCall({ runId: out.runId });
  const rest = await readAll(resumed);
  assert.equal(rest[0].type, 'tool-result');
  assert.equal(calls.length, 1);
  assert.equal(await resumed.finishReason, 'stop');
});

test('an abortSignal while a call waits ends the run and its record: nothing is left to decide', T, async () => {
  const { agent } = payer({ pay: approvalPay([]) });
  const controller = new AbortController();
  const out = await agent.stream('Pay 2', { abortSignal: controller.signal });
  const reader = out.fullStream.getReader();
  await readUntil(reader, (c) => c.type === 'tool-call-approval');
  controller.abort();
  await readRest(reader);
  assert.equal(await out.finishReason, 'abort');
  assert.equal((await agent.listSuspendedRuns()).total, 0);
  assert.equal((await resumeCode(agent.approveToolCall({ runId: out.runId }))).code, 'not-found');
});

test('resumeStreamUntilIdle(resumeData, options) is the deprecated spelling of resumeStream, warned once', T, async () => {
  const warned = [];
  const warn = console.warn;
  console.warn = (...a) => warned.push(a.join(' '));
  try {
    const { agent } = payer({ pay: payTool([]) });
    for (let i = 0; i < 2; i++) {
      const out = await agent.stream('Pay 8', { closeOnSuspend: true });
      await readAll(out);
      const resumed = await agent.resumeStreamUntilIdle({ pin: '4321' }, { runId: out.runId, maxIdleMs: 1000 });
      const rest = await readAll(resumed);
      assert.equal(rest[0].payload.result.pin, '4321');
    }
  } finally {
    console.warn = warn;
  }
  assert.equal(warned.filter((l) => l.includes('resumeStreamUntilIdle() is deprecated')).length, 1);
});
