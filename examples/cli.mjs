#!/usr/bin/env node
// Ask an agent from the command line; its reply streams to stdout as it arrives.
//
//   node examples/cli.mjs "What is Rust?"
//   echo "What is Rust?" | node examples/cli.mjs
//
// Environment:
//   WASM_AGENT_MODEL    'provider/model' (default 'openai/gpt-4o-mini'). The key comes from the
//                       provider's variable (OPENAI_API_KEY, GROQ_API_KEY, …), see the README.
//   WASM_AGENT_URL      an OpenAI-compatible base URL to talk to instead of the provider's (optional),
//                       e.g. http://127.0.0.1:11434/v1 for Ollama or the local test model server.
//   WASM_AGENT_API_KEY  the key sent to WASM_AGENT_URL (default 'none', for servers that need none).
//   NO_COLOR / FORCE_COLOR  turn the dimmed reasoning off / on.
//
// stdout carries the reply only, so it can be piped. stderr carries the model's reasoning (dimmed),
// a one-line progress indicator while tools or background tasks run, and errors.
// Exit status: 0 done, 1 the run failed, 2 usage, 130 interrupted with Ctrl-C (143 on SIGTERM).

// In your own project this is `import { Agent, createTool } from 'wasm-agent'`; the example uses
// the package built into pkg/ by `./x build`.
import { Agent, createTool } from '../pkg/index.node.js';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const USAGE = 'usage: node examples/cli.mjs "your question"   (or pipe the question on stdin)\n';

/** The model from the environment: a 'provider/model' string, or that id sent to WASM_AGENT_URL. */
function modelFromEnv(env = process.env) {
  const id = env.WASM_AGENT_MODEL || 'openai/gpt-4o-mini';
  if (!env.WASM_AGENT_URL) return id;
  return { id, url: env.WASM_AGENT_URL, apiKey: env.WASM_AGENT_API_KEY ?? 'none' };
}

/** One small tool, so the agent can show what a tool call looks like. Add your own next to it. */
const currentTime = createTool({
  id: 'current-time',
  description: "The current date and time (ISO 8601, UTC) and this machine's time zone",
  inputSchema: { type: 'object', properties: {} },
  execute: async () => ({
    now: new Date().toISOString(),
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  }),
});

// ---------------------------------------------------------------------------------------------
// The terminal: stdout for the reply, stderr for everything else.

const ESC = '\x1b[';

function colorWanted(err, env = process.env) {
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  if (env.NO_COLOR) return false;
  return Boolean(err.isTTY) && err.hasColors?.() !== false;
}

/**
 * Writes the reply, the reasoning and a status line. On a terminal the status line is redrawn in
 * place and erased when nothing is running; on a pipe or file each new status is one plain line,
 * with no control characters.
 */
export class Screen {
  /** `out`, `err`: where the reply and everything else go; `color`: dim the reasoning and status. */
  constructor({ out = process.stdout, err = process.stderr, color = colorWanted(err) } = {}) {
    this.out = out;
    this.err = err;
    this.live = Boolean(err.isTTY);
    this.color = color;
    // stdout and stderr on one terminal: a line started on one is the cursor's line for both.
    this.shared = Boolean(out.isTTY && err.isTTY);
    this.outAtLineStart = true;
    this.errAtLineStart = true;
    this.status = ''; // what the status line shows now ('' for nothing)
    this.statusKey = ''; // plain mode: a new line only when this changes
  }

  get cursorAtLineStart() {
    return this.shared ? this.outAtLineStart && this.errAtLineStart : this.errAtLineStart;
  }

  #track(stream, text) {
    if (text === '') return;
    const atStart = text.endsWith('\n');
    if (stream === 'out') this.outAtLineStart = atStart;
    else this.errAtLineStart = atStart;
    if (this.shared) this.outAtLineStart = this.errAtLineStart = atStart;
  }

  /** Reply text (stdout). */
  text(text) {
    this.clearStatus();
    this.out.write(text);
    this.#track('out', text);
  }

  /** Reasoning (stderr, dimmed). */
  reasoning(text) {
    this.clearStatus();
    this.err.write(this.color ? `${ESC}2m${text}${ESC}22m` : text);
    this.#track('err', text);
  }

  /** A finished line on stderr (a note or an error), on a line of its own. */
  note(line) {
    this.clearStatus();
    this.endErrLine();
    this.err.write(`${line}\n`);
    this.#track('err', '\n');
  }

  /** Ends the current stderr line (after reasoning), so what follows starts on a new one. */
  endErrLine() {
    if (!this.cursorAtLineStart) {
      this.err.write('\n');
      this.#track('err', '\n');
    }
  }

  /** Ends the reply's last line. */
  endOutLine() {
    this.clearStatus();
    if (!this.outAtLineStart) {
      this.out.write('\n');
      this.#track('out', '\n');
    }
  }

  /** Shows `line` as the status; in plain mode prints it when `key` changed since the last one. */
  setStatus(line, key = line) {
    if (line === '') return this.clearStatus();
    if (this.live) {
      if (line === this.status) return;
      // Never draw over a half-written line of the reply or of the reasoning.
      if (this.status === '') this.endErrLine();
      const width = Math.max(10, (this.err.columns || 80) - 1);
      const shown = line.length > width ? `${line.slice(0, width - 1)}…` : line;
      this.err.write(`\r${ESC}2K${this.color ? `${ESC}2m${shown}${ESC}22m` : shown}`);
      this.status = line;
      return;
    }
    this.status = line;
    if (key === this.statusKey) return;
    this.statusKey = key;
    this.endErrLine();
    this.err.write(`${line}\n`);
    this.#track('err', '\n');
  }

  clearStatus() {
    if (this.live && this.status !== '') this.err.write(`\r${ESC}2K`);
    this.status = '';
    this.statusKey = '';
  }
}

// ---------------------------------------------------------------------------------------------
// Progress: tool calls waiting for their result, background tasks still running.

const TASK_DONE = /-(completed|failed|cancelled)$/;

export class Progress {
  constructor(screen) {
    this.screen = screen;
    this.calls = new Map(); // toolCallId → toolName
    this.tasks = new Map(); // taskId → toolName
    this.tasksSince = 0; // when the first of the running tasks started (local clock)
    this.reportedElapsedMs = 0;
    this.ticker = undefined;
  }

  /** Takes every chunk; returns whether it was about progress. */
  update(chunk) {
    const { type } = chunk;
    const payload = chunk.payload ?? {};
    if (type === 'tool-call') {
      this.calls.set(payload.toolCallId, payload.toolName);
    } else if (type === 'tool-result' || type === 'tool-error' || type === 'tool-output-denied') {
      this.calls.delete(payload.toolCallId);
    } else if (type.startsWith('background-task-')) {
      this.#task(type, payload);
    } else {
      return false;
    }
    this.render();
    return true;
  }

  // Background-task chunks are handled by shape, so kinds added later still count: a payload with
  // `taskIds` lists the running tasks; one with a `taskId` starts a task, or ends it when its type
  // ends in -completed/-failed/-cancelled or it carries `completedAt`.
  #task(type, payload) {
    if (Array.isArray(payload.taskIds)) {
      const running = new Map(payload.taskIds.map((id) => [id, this.tasks.get(id) ?? '']));
      this.tasks = running;
      if (typeof payload.elapsedMs === 'number') this.reportedElapsedMs = payload.elapsedMs;
    } else if (payload.taskId !== undefined) {
      if (TASK_DONE.test(type) || payload.completedAt !== undefined) this.tasks.delete(payload.taskId);
      else this.tasks.set(payload.taskId, payload.toolName ?? '');
      if (type === 'background-task-failed') {
        this.screen.note(`background task ${payload.toolName ?? payload.taskId} failed: ${payload.error?.message ?? 'unknown error'}`);
      }
    }
    if (this.tasks.size === 0) {
      this.tasksSince = 0;
      this.reportedElapsedMs = 0;
    } else if (this.tasksSince === 0) {
      this.tasksSince = Date.now() - this.reportedElapsedMs;
    }
  }

  render() {
    const parts = [];
    if (this.calls.size > 0) parts.push(`calling ${[...new Set(this.calls.values())].join(', ')}`);
    const n = this.tasks.size;
    if (n > 0) {
      const elapsedMs = Math.max(this.reportedElapsedMs, Date.now() - this.tasksSince);
      parts.push(`${n} background task${n === 1 ? '' : 's'} running (${Math.floor(elapsedMs / 1000)}s)`);
    }
    const line = parts.length ? `⋯ ${parts.join(' · ')}` : '';
    // In plain mode a line is printed when what runs changes, not every second.
    const key = `${[...this.calls.keys()].join()}|${[...this.tasks.keys()].join()}`;
    this.screen.setStatus(line, key);
    // A live status line keeps counting while tasks run, between progress chunks.
    if (n > 0 && this.screen.live && !this.ticker) {
      this.ticker = setInterval(() => this.render(), 1000);
      this.ticker.unref();
    } else if (n === 0 && this.ticker) {
      this.stop();
    }
  }

  stop() {
    clearInterval(this.ticker);
    this.ticker = undefined;
  }
}

// ---------------------------------------------------------------------------------------------

async function readPrompt(argv) {
  if (argv.length > 0) return argv.join(' ').trim();
  if (process.stdin.isTTY) return '';
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const piece of process.stdin) text += piece;
  return text.trim();
}

/** Runs the CLI; resolves to the exit status. */
export async function main(argv) {
  if (argv[0] === '-h' || argv[0] === '--help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const prompt = await readPrompt(argv);
  if (prompt === '') {
    process.stderr.write(USAGE);
    return 2;
  }

  const screen = new Screen();
  const progress = new Progress(screen);
  const controller = new AbortController();
  let interrupted = 0; // the exit status a signal asked for
  let failure; // the message of the run's error
  let pipeClosed = false;

  // Ctrl-C (or SIGTERM) aborts the run: the HTTP request closes and the stream ends with `abort`.
  // A second one, or a run that does not end within 3 s, exits at once.
  const onSignal = (signal) => {
    const status = signal === 'SIGINT' ? 130 : 143;
    if (interrupted) process.exit(status);
    interrupted = status;
    controller.abort(new Error(`interrupted (${signal})`));
    setTimeout(() => process.exit(status), 3000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A reader that went away (`… | head -1`) ends the run quietly.
  const onStdoutError = (err) => {
    if (err.code !== 'EPIPE') throw err;
    pipeClosed = true;
    controller.abort(new Error('stdout closed'));
  };
  process.stdout.on('error', onStdoutError);

  try {
    const agent = new Agent({
      id: 'cli',
      instructions: 'You are a helpful assistant in a terminal. Answer concisely, in plain text.',
      model: modelFromEnv(),
      tools: { currentTime },
    });
    const output = await agent.stream(prompt, { abortSignal: controller.signal });
    // The output iterates its fullStream: every chunk of the run, in order.
    for await (const chunk of output) {
      if (pipeClosed) continue;
      if (progress.update(chunk)) continue;
      switch (chunk.type) {
        case 'text-delta':
          screen.text(chunk.payload.text);
          break;
        case 'reasoning-delta':
          screen.reasoning(chunk.payload.text);
          break;
        case 'reasoning-end':
          screen.endErrLine();
          break;
        case 'error':
          failure = chunk.payload.error.message;
          break;
        default:
          break; // start, step-*, text-start/-end, finish, abort, …
      }
    }
  } catch (err) {
    // Bad configuration (a TypeError naming the field), or a stream that broke off.
    if (!interrupted && !pipeClosed) failure = err instanceof Error ? err.message : String(err);
  } finally {
    progress.stop();
    screen.clearStatus();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  if (pipeClosed) return 0;
  screen.endOutLine();
  if (interrupted) return interrupted;
  if (failure !== undefined) {
    screen.note(`error: ${failure}`);
    return 1;
  }
  return 0;
}

// Run when executed (`node examples/cli.mjs`), not when imported (the tests import Screen and Progress).
const realPath = (file) => {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
};
if (process.argv[1] && realPath(process.argv[1]) === realPath(fileURLToPath(import.meta.url))) {
  process.exitCode = await main(process.argv.slice(2));
}
