// examples/cli.mjs, run as a user runs it: a child process pointed at the local model server
// through WASM_AGENT_URL, its stdout, stderr and exit status checked.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { T, noUnhandledRejections, useModelServer } from './helpers.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.resolve(HERE, '../../examples/cli.mjs');
/** A child that outlives this is killed and the test fails. */
const CHILD_LIMIT_MS = 10_000;

const server = useModelServer();

/** The environment of a run: the user's, less colour switches, plus the model settings. */
function cliEnv(extra) {
  const env = { ...process.env };
  for (const name of ['FORCE_COLOR', 'NO_COLOR', 'WASM_AGENT_MODEL', 'WASM_AGENT_URL', 'WASM_AGENT_API_KEY', 'OPENAI_API_KEY']) {
    delete env[name];
  }
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) env[name] = value;
  return env;
}

/** The env that points the CLI at the test server with `script` as the model. */
function serverEnv(script, extra = {}) {
  return cliEnv({ WASM_AGENT_URL: server.current.url, WASM_AGENT_MODEL: `openai/${script}`, WASM_AGENT_API_KEY: 'test-key', ...extra });
}

/**
 * Runs the CLI (or `command argv`). `input`: written to stdin (stdin is /dev/null when absent).
 * `onStdout(stdoutSoFar, child)` is called as output arrives. Resolves to { code, signal, stdout, stderr, ms }.
 */
function runCli(args, { env, input, onStdout, command = process.execPath, argv } = {}) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(command, argv ?? [CLI, ...args], {
      env,
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (text) => {
      stdout += text;
      onStdout?.(stdout, child);
    });
    child.stderr.on('data', (text) => {
      stderr += text;
    });
    if (input !== undefined) child.stdin.end(input);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the CLI did not exit within ${CHILD_LIMIT_MS} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, CHILD_LIMIT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

const show = (run) => `exit ${run.code}${run.signal ? ` (${run.signal})` : ''}\nstdout: ${JSON.stringify(run.stdout)}\nstderr: ${JSON.stringify(run.stderr)}`;

test('cli: streams the reply to stdout, ends it with a newline and exits 0', T, async () => {
  const srv = server.current;
  const before = srv.requests.length;
  const run = await runCli(['What', 'is', 'Rust?'], { env: serverEnv('text:Hello there world') });
  assert.equal(run.code, 0, show(run));
  assert.equal(run.stdout, 'Hello there world\n');
  assert.equal(run.stderr, '', 'nothing on stderr for a plain reply');

  const [request] = srv.requests.slice(before);
  assert.equal(request.body.model, 'text:Hello there world', 'the model id after the provider prefix');
  assert.equal(request.headers.authorization, 'Bearer test-key', 'WASM_AGENT_API_KEY is the key');
  assert.equal(request.path, '/v1/responses', 'openai/ speaks the Responses API');
  const user = request.body.input.filter((m) => m.role === 'user');
  assert.deepEqual(user, [{ role: 'user', content: [{ type: 'input_text', text: 'What is Rust?' }] }], 'the arguments are the prompt');
});

test('cli: the prompt can come on stdin; the key defaults to "none" with WASM_AGENT_URL', T, async () => {
  const srv = server.current;
  const before = srv.requests.length;
  const run = await runCli([], { env: serverEnv('echo', { WASM_AGENT_API_KEY: undefined }), input: 'What is Rust?\n' });
  assert.equal(run.code, 0, show(run));
  assert.equal(run.stdout, 'You said: What is Rust?\n');
  const [request] = srv.requests.slice(before);
  assert.equal(request.headers.authorization, 'Bearer none');
});

test('cli: no prompt prints the usage and exits 2', T, async () => {
  const run = await runCli([], { env: serverEnv('echo') });
  assert.equal(run.code, 2, show(run));
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /^usage: /);
});

test('cli: a failed model call prints "error: <message>" on stderr and exits 1', T, async () => {
  const run = await runCli(['hello'], { env: serverEnv('error-401') });
  assert.equal(run.code, 1, show(run));
  assert.equal(run.stdout, '');
  const lines = run.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, show(run));
  assert.match(lines[0], /^error: .*Incorrect API key provided/, 'the server message is shown');
  assert.doesNotMatch(run.stderr, /test-key/, 'the key is never shown');
});

test('cli: bad configuration (a constructor TypeError) is an error too', T, async () => {
  // No WASM_AGENT_URL: the model string is checked against the provider table; nothing is sent.
  const run = await runCli(['hello'], { env: cliEnv({ WASM_AGENT_MODEL: 'nosuch/model' }) });
  assert.equal(run.code, 1, show(run));
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /^error: config\.model: unknown provider 'nosuch'/);
});

test('cli: a tool call shows "⋯ calling <name>" on stderr (plain lines when stderr is not a terminal)', T, async () => {
  const run = await runCli(['What time is it?'], { env: serverEnv('tool-call') });
  assert.equal(run.code, 0, show(run));
  assert.equal(run.stderr, '⋯ calling currentTime\n', 'one progress line, no control characters');
  assert.match(run.stdout, /^The tool said: \{"now":"\d{4}-\d\d-\d\dT[^"]+Z","timeZone":"[^"]+"\}\n$/);
});

test('cli: reasoning goes to stderr, the answer to stdout', T, async () => {
  const run = await runCli(['hi'], { env: serverEnv('reasoning:The answer') });
  assert.equal(run.code, 0, show(run));
  assert.equal(run.stdout, 'The answer\n');
  assert.ok(run.stderr.length > 0 && run.stderr.endsWith('\n'), show(run));
  assert.doesNotMatch(run.stderr, /\x1b/, 'not dimmed when stderr is not a terminal');
});

test('cli: Ctrl-C (SIGINT) aborts the run, closes the request and exits 130 promptly', T, async () => {
  const srv = server.current;
  const index = srv.requests.length;
  let sentAt = 0;
  const run = await runCli(['one two three four five six seven eight nine ten'], {
    env: serverEnv('slow:300'),
    onStdout: (stdout, child) => {
      // Interrupt once the reply has started, i.e. in the middle of the stream.
      if (sentAt === 0 && stdout.length > 0) {
        sentAt = Date.now();
        child.kill('SIGINT');
      }
    },
  });
  assert.ok(sentAt > 0, `the reply never started\n${show(run)}`);
  assert.equal(run.code, 130, show(run));
  assert.ok(Date.now() - sentAt < 2000, `exited ${Date.now() - sentAt} ms after SIGINT`);
  assert.ok(run.stdout.startsWith('You') && run.stdout.endsWith('\n'), show(run));
  assert.ok(!run.stdout.includes('ten'), 'the reply was cut short');
  assert.equal(run.stderr, '', 'an interrupt is not an error');
  const record = await srv.waitForClose(index, 2000);
  assert.equal(record.finished, false, 'the server had not finished the reply');
});

// `script` (util-linux) runs the CLI on a pseudo-terminal: the live status line, drawn and erased.
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

test('cli: on a terminal the progress line is drawn in place and erased', { ...T, skip: !hasScript && 'no `script` command' }, async () => {
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} 'What time is it?'`;
  const run = await runCli([], {
    env: serverEnv('tool-call'),
    command: 'script',
    argv: ['-qec', command, '/dev/null'],
    input: '',
  });
  assert.equal(run.code, 0, show(run));
  // stdout and stderr share the terminal: the line is drawn, then cleared before the reply.
  const drawn = run.stdout.indexOf('\r\x1b[2K');
  const label = run.stdout.indexOf('⋯ calling currentTime');
  const cleared = run.stdout.indexOf('\r\x1b[2K', label);
  const reply = run.stdout.indexOf('The tool said:');
  assert.ok(drawn !== -1 && drawn < label && label < cleared && cleared < reply, JSON.stringify(run.stdout));
});

// Background tasks: the package emits their chunks in a later version, so no run can show them
// yet. The CLI's progress line is fed the chunks of SPEC §4 directly.

/** A stand-in for process.stdout / process.stderr that keeps what is written. */
function fakeStream(isTTY) {
  return { isTTY, columns: 80, text: '', write(s) { this.text += s; return true; } };
}

const envelope = (type, payload) => ({ type, runId: 'r1', from: 'AGENT', payload });
const BACKGROUND_RUN = [
  envelope('tool-call', { toolCallId: 'c1', toolName: 'research', args: {} }),
  envelope('background-task-started', { taskId: 't1', toolName: 'research', toolCallId: 'c1' }),
  envelope('tool-result', { toolCallId: 'c1', toolName: 'research', args: {}, result: { taskId: 't1' } }),
  envelope('background-task-started', { taskId: 't2', toolName: 'crawl', toolCallId: 'c2' }),
  envelope('background-task-progress', { taskIds: ['t1', 't2'], runningCount: 2, elapsedMs: 1200 }),
  envelope('background-task-progress', { taskIds: ['t1', 't2'], runningCount: 2, elapsedMs: 2400 }),
  envelope('background-task-completed', { taskId: 't1', toolName: 'research', toolCallId: 'c1', result: 'ok', completedAt: '2025-01-01T00:00:03Z' }),
  envelope('background-task-progress', { taskIds: ['t2'], runningCount: 1, elapsedMs: 3600 }),
  // A kind this CLI has never heard of that ends a task: handled by its shape.
  envelope('background-task-archived', { taskId: 't2', toolName: 'crawl', toolCallId: 'c2', completedAt: '2025-01-01T00:00:04Z' }),
  envelope('background-task-started', { taskId: 't3', toolName: 'fetch', toolCallId: 'c3' }),
  envelope('background-task-failed', { taskId: 't3', toolName: 'fetch', toolCallId: 'c3', error: { message: 'timed out' }, completedAt: '2025-01-01T00:00:05Z' }),
];

test('cli: background tasks, plain stderr: one line per change, none for the elapsed time alone', T, async () => {
  const { Screen, Progress } = await import(CLI);
  const out = fakeStream(false);
  const err = fakeStream(false);
  const progress = new Progress(new Screen({ out, err, color: false }));
  for (const chunk of BACKGROUND_RUN) assert.equal(progress.update(chunk), true, chunk.type);
  assert.equal(progress.update(envelope('text-delta', { id: 'x', text: 'Hi' })), false);
  progress.stop();
  assert.equal(out.text, '');
  assert.equal(
    err.text,
    [
      '⋯ calling research',
      '⋯ calling research · 1 background task running (0s)',
      '⋯ 1 background task running (0s)',
      '⋯ 2 background tasks running (0s)',
      '⋯ 1 background task running (2s)',
      '⋯ 1 background task running (0s)',
      'background task fetch failed: timed out',
      '',
    ].join('\n'),
  );
});

test('cli: background tasks on a terminal: one status line, updated in place, erased at the end', T, async () => {
  const { Screen, Progress } = await import(CLI);
  const out = fakeStream(true);
  const err = fakeStream(true);
  const screen = new Screen({ out, err, color: false });
  const progress = new Progress(screen);
  screen.text('Working on it.');
  for (const chunk of BACKGROUND_RUN) progress.update(chunk);
  progress.stop();
  screen.text(' Done.');
  screen.endOutLine();
  const draws = err.text.split('\r\x1b[2K').slice(1);
  assert.deepEqual(draws, [
    '⋯ calling research',
    '⋯ calling research · 1 background task running (0s)',
    '⋯ 1 background task running (0s)',
    '⋯ 2 background tasks running (0s)',
    '⋯ 2 background tasks running (1s)',
    '⋯ 2 background tasks running (2s)',
    '⋯ 1 background task running (2s)',
    '⋯ 1 background task running (3s)',
    '', // erased when the last task ended
    '⋯ 1 background task running (0s)',
    'background task fetch failed: timed out\n', // a failure is noted on a line of its own
  ]);
  assert.ok(err.text.startsWith('\n'), 'the status line starts below the half-written reply');
  assert.equal(out.text, 'Working on it. Done.\n');
  assert.equal(screen.status, '');
});

noUnhandledRejections();
