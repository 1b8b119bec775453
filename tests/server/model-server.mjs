#!/usr/bin/env node
// Local OpenAI-compatible model server for tests, benchmarks and the offline demo.
//
//   import { startModelServer } from './tests/server/model-server.mjs';
//   const server = await startModelServer();           // 127.0.0.1, free port
//   fetch(`${server.url}/chat/completions`, { method: 'POST', body: JSON.stringify({
//     model: 'text:Hello there', stream: true, messages: [...] }) });
//   await server.close();
//
//   node tests/server/model-server.mjs [--port N] [--host 127.0.0.1] [--verbose]
//
// The same scripts answer POST …/responses in the OpenAI Responses API's format (input, events).
//
// The script that answers a request is the `x-script` header, else the request's `model`
// (`name:argument`, e.g. `text:Hello there`, `flaky:429:2`); unknown names answer like `echo`.
// GET /v1/models lists the scripts; the catalogue lives in scripts.mjs.
//
// Every request (except CORS preflights and the /__ control routes) is recorded in `requests` as
// { index, method, path, url, headers, body, script, scriptName, startedAt, closedByClient, finished };
// GET /__requests returns them as JSON and POST /__reset clears them, for tests in other processes.

import http from 'node:http';
import { EventEmitter } from 'node:events';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Exchange, Halt } from './chat-stream.mjs';
import { ResponsesResponder, chatView, isResponsesPath, responsesInputProblem } from './responses-stream.mjs';
import { SocketStream } from './responses-socket.mjs';
import { WebSocketServer } from 'ws';
import { embeddingsAnswer } from './embeddings.mjs';
import { builtinScripts, dynamicScript, fixtureNames, resetScriptState, scriptState } from './scripts.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_FIXTURES = path.resolve(HERE, '../../../shared/fixtures/provider-streams');
const MAX_BODY = 64 * 1024 * 1024;

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  // `*` does not cover Authorization in browsers, so it is named as well.
  'access-control-allow-headers': '*, authorization',
  'access-control-expose-headers': '*',
};

/**
 * Paths that take a model request: Chat Completions and Responses (every script answers both), and
 * Anthropic Messages and Gemini (their own scripts, and replays).
 */
function isModelPath(pathname) {
  return /\/chat\/completions$|\/responses$|\/messages$|:(stream)?generateContent$/i.test(pathname);
}

/** Gemini puts the model in the path: /v1beta/models/<model>:streamGenerateContent. */
function modelFromPath(pathname) {
  const match = /\/models\/(.+):(stream)?generateContent$/i.exec(pathname);
  return match ? decodeURIComponent(match[1]) : undefined;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('request aborted')));
  });
}

function parseBody(text) {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Starts the server; resolves once it is listening.
 * @param {{ port?: number, host?: string, fixturesDir?: string, demoDelayMs?: number,
 *           scripts?: Record<string, Function | { description?: string, run: Function }>,
 *           verbose?: boolean }} [opts]
 */
export async function startModelServer(opts = {}) {
  const host = opts.host ?? '127.0.0.1';
  const serverOptions = {
    fixturesDir: opts.fixturesDir ?? process.env.WASM_AGENT_FIXTURES ?? DEFAULT_FIXTURES,
    demoDelayMs: opts.demoDelayMs,
    scriptState: scriptState(),
  };
  const scripts = builtinScripts();
  for (const [name, script] of Object.entries(opts.scripts ?? {})) {
    scripts.set(name, typeof script === 'function' ? { description: 'custom script', run: script } : script);
  }

  const requests = [];
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const changed = () => events.emit('change');
  const active = new Set(); // exchanges in progress
  const sockets = new Set();
  let closing = false;
  const startedSecs = Math.floor(Date.now() / 1000);

  const log = (line) => {
    if (opts.verbose) process.stderr.write(`[model-server] ${line}\n`);
  };

  function newRecord(req, url, body, selector, scriptName) {
    const record = {
      index: requests.length,
      method: req.method,
      path: url.pathname,
      url: req.url,
      headers: { ...req.headers },
      body,
      script: selector,
      scriptName,
      startedAt: Date.now(),
      closedByClient: false,
      finished: false,
    };
    requests.push(record);
    changed();
    return record;
  }

  function lookup(name) {
    return scripts.get(name) ?? dynamicScript(name);
  }

  /** `name:arg` → the script to run; provider prefixes (`openai/echo`) are ignored; unknown → echo. */
  function resolveScript(selector) {
    const colon = selector.indexOf(':');
    let name = (colon === -1 ? selector : selector.slice(0, colon)).trim();
    const arg = colon === -1 ? '' : selector.slice(colon + 1);
    if (!lookup(name) && name.includes('/')) name = name.slice(name.lastIndexOf('/') + 1);
    const script = lookup(name);
    return script ? { name, arg, script } : { name: 'echo', arg: '', script: scripts.get('echo') };
  }

  function sendJson(res, status, value, record) {
    if (record) {
      record.finished = true;
      changed();
    }
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  }

  async function handleModelRequest(req, res, url) {
    let ex = null;
    res.on('close', () => {
      if (!ex) return;
      active.delete(ex);
      if (!ex.ended && !ex.destroyedByServer && !closing) {
        ex.record.closedByClient = true;
        changed();
      }
      ex.abort('connection closed');
    });

    let body;
    try {
      body = parseBody(await readBody(req));
    } catch {
      if (!res.destroyed) req.socket.destroy();
      return;
    }
    let script;
    ({ ex, script } = exchangeFor(req, res, url, body));
    if (res.destroyed || req.socket.destroyed) {
      // The client left while its body was still arriving.
      ex.record.closedByClient = !closing;
      changed();
      return;
    }
    await runExchange(ex, script);
  }

  /**
   * The exchange that answers one model request (`res` is an HTTP response, or a socket's stand-in
   * for one); its record is kept in `requests`, with `extra` fields.
   */
  function exchangeFor(req, res, url, body, extra = {}) {
    const headerScript = req.headers['x-script'];
    const selector = String(
      (typeof headerScript === 'string' && headerScript !== '' ? headerScript : undefined) ??
        (typeof body?.model === 'string' ? body.model : undefined) ??
        modelFromPath(url.pathname) ??
        '',
    );
    const { name, arg, script } = resolveScript(selector);
    const record = newRecord(req, url, body, selector, name);
    Object.assign(record, extra);
    log(`${req.method} ${url.pathname} script=${JSON.stringify(selector)} → ${name}`);
    // Scripts read Chat Completions requests and write through ex.chat(): a Responses request is
    // given to them in Chat form and answered in Responses form. The record keeps what was sent.
    const responses = isResponsesPath(url.pathname);
    const ex = new Exchange({
      req,
      res,
      body: responses ? chatView(body) : body,
      selector,
      name,
      arg,
      record,
      onChange: changed,
      serverOptions,
      Responder: responses ? ResponsesResponder : undefined,
    });
    ex.headerScript = typeof headerScript === 'string' && headerScript !== '';
    return { ex, script };
  }

  async function runExchange(ex, script) {
    active.add(ex);
    try {
      if (typeof ex.record.body === 'string' && !ex.headerScript) {
        ex.error(400, {
          message: 'We could not parse the JSON body of your request.',
          type: 'invalid_request_error',
          code: null,
        });
        return;
      }
      // Items that refer to earlier responses are checked as the API checks them.
      const problem = isResponsesPath(ex.record.path) && responsesInputProblem(ex.record.body, serverOptions.scriptState.responseItems);
      if (problem) {
        const [status, message] = problem;
        ex.error(status, { message, type: 'invalid_request_error', param: 'input', code: null });
        return;
      }
      await script.run(ex);
    } catch (err) {
      if (err instanceof Halt || ex.signal.aborted) return;
      process.stderr.write(`[model-server] script ${JSON.stringify(ex.selector)} failed: ${err?.stack ?? err}\n`);
      if (ex.res.headersSent) ex.destroy();
      else ex.error(500, { message: `model server script failed: ${err?.message ?? err}`, type: 'server_error', code: null });
    } finally {
      if (ex.ended || ex.destroyedByServer) active.delete(ex);
    }
  }

  // The Responses API over a WebSocket: each `response.create` message runs a script as a POST to
  // the socket's path would, its events sent as messages. One response at a time per socket.
  const connections = [];
  const socketServer = new WebSocketServer({ noServer: true });
  function onSocket(ws, req, url) {
    const conn = { index: connections.length, path: url.pathname, headers: { ...req.headers }, requests: [], closed: false, closedByClient: false };
    connections.push(conn);
    changed();
    let current = null;
    ws.on('close', () => {
      conn.closed = true;
      conn.closedByClient = !closing && !conn.closedByServer;
      current?.abort('socket closed');
      changed();
    });
    ws.on('message', (data, isBinary) => {
      const refuse = (message, code = null) => ws.send(JSON.stringify({ type: 'error', status: 400, error: { type: 'invalid_request_error', code, message } }));
      let event;
      try {
        event = isBinary ? null : JSON.parse(String(data));
      } catch {
        event = null;
      }
      if (event?.type !== 'response.create') return refuse('Expected a JSON text message with type "response.create".');
      if (current) {
        return refuse('Another response is in progress on this connection: wait for it to finish before sending response.create.', 'response_in_progress');
      }
      const { type: _, ...body } = event;
      const stream = new SocketStream(ws, () => {
        current = null;
      });
      const { ex, script } = exchangeFor(stream.req(req), stream, url, { ...body, stream: true }, { transport: 'websocket', connection: conn.index });
      ex.record.body = body; // what the client sent, without the stream flag the server implies
      conn.requests.push(ex.record.index);
      current = ex;
      runExchange(ex, script).finally(() => {
        if (current === ex && (ex.ended || ex.signal.aborted)) current = null;
      });
    });
  }
  async function listModels(req, res, url) {
    const record = newRecord(req, url, null, null, null);
    const names = [...scripts.keys()];
    for (const fixture of await fixtureNames(serverOptions.fixturesDir)) names.push(`replay:${fixture}`);
    sendJson(
      res,
      200,
      {
        object: 'list',
        data: names.map((id) => ({
          id,
          object: 'model',
          created: startedSecs,
          owned_by: 'wasm-agent-model-server',
          description: scripts.get(id)?.description ?? 'replays a recorded provider stream',
        })),
      },
      record,
    );
  }

  async function handle(req, res) {
    req.on('error', () => {});
    res.on('error', () => {});
    for (const [key, value] of Object.entries(CORS_HEADERS)) res.setHeader(key, value);
    const url = new URL(req.url ?? '/', 'http://model-server.invalid');
    const pathname = url.pathname;

    if (req.method === 'OPTIONS') {
      if (req.headers['access-control-request-private-network'] === 'true') {
        res.setHeader('access-control-allow-private-network', 'true');
      }
      res.setHeader('access-control-max-age', '600');
      res.writeHead(204);
      res.end();
      return;
    }
    if (pathname === '/__requests' && req.method === 'GET') return sendJson(res, 200, requests);
    if (pathname === '/__reset' && req.method === 'POST') {
      req.resume();
      reset();
      return sendJson(res, 200, { ok: true });
    }
    if (req.method === 'GET' && /^(\/v1)?\/models\/?$/.test(pathname)) return listModels(req, res, url);
    if (req.method === 'GET' && (pathname === '/' || pathname === '/health')) {
      return sendJson(res, 200, { ok: true, url: `${origin}/v1` });
    }
    if (req.method === 'POST' && isModelPath(pathname)) return handleModelRequest(req, res, url);
    if (req.method === 'POST' && /(^|\/)embeddings$|:batchEmbedContents$/.test(pathname)) {
      const body = parseBody(await readBody(req));
      const record = newRecord(req, url, body, body?.model ?? null, 'embeddings');
      const answer = embeddingsAnswer(pathname, body);
      return sendJson(res, answer.status, answer.body, record);
    }

    req.resume();
    const record = newRecord(req, url, null, null, null);
    sendJson(
      res,
      404,
      { error: { message: `Unknown request URL: ${req.method} ${pathname}`, type: 'invalid_request_error', code: 'unknown_url' } },
      record,
    );
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      process.stderr.write(`[model-server] ${err?.stack ?? err}\n`);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err?.message ?? err), type: 'server_error', code: null } }));
      } else {
        res.destroy();
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://model-server.invalid');
    if (!isResponsesPath(url.pathname)) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
      return;
    }
    socketServer.handleUpgrade(req, socket, head, (ws) => onSocket(ws, req, url));
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address();
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  function reset() {
    requests.length = 0;
    connections.length = 0;
    resetScriptState(serverOptions.scriptState);
    changed();
  }

  /** Resolves with `pick()`'s value once it is truthy; rejects after `timeoutMs`. */
  function waitUntil(pick, timeoutMs, what) {
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        const value = pick();
        if (!value) return;
        clearTimeout(timer);
        events.off('change', check);
        resolve(value);
      };
      timer = setTimeout(() => {
        events.off('change', check);
        reject(new Error(`model server: timed out after ${timeoutMs} ms waiting for ${what()}`));
      }, timeoutMs);
      events.on('change', check);
      check();
    });
  }

  let closed;
  function close() {
    closed ??= new Promise((resolve) => {
      closing = true;
      for (const ex of active) ex.abort('server closing');
      server.close(() => resolve());
      server.closeAllConnections?.();
      for (const socket of sockets) socket.destroy();
      for (const ws of socketServer.clients) ws.terminate();
    });
    return closed;
  }

  return {
    url: `${origin}/v1`,
    origin,
    port,
    requests,
    /** The WebSocket connections: { index, path, headers, requests (indexes into `requests`), closed, closedByClient }. */
    connections,
    scripts,
    close,
    reset,
    /** Resolves with `requests` once at least `n` requests were recorded. */
    waitForRequests(n, timeoutMs = 5000) {
      return waitUntil(
        () => requests.length >= n && requests,
        timeoutMs,
        () => `${n} request(s) (have ${requests.length})`,
      );
    },
    /** Resolves with request `index`'s record once the client closed it before the server finished. */
    waitForClose(index, timeoutMs = 5000) {
      return waitUntil(
        () => requests[index]?.closedByClient && requests[index],
        timeoutMs,
        () => `request ${index} to be closed by the client (${requests[index] ? JSON.stringify({ finished: requests[index].finished }) : 'not received yet'})`,
      );
    },
  };
}

// ---------------------------------------------------------------------------------------------
// CLI

function parseArgs(argv) {
  const args = { port: 0, host: '127.0.0.1', verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s);
    const value = () => inline ?? argv[++i];
    if (flag === '--port' || flag === '-p') args.port = Number(value());
    else if (flag === '--host') args.host = value();
    else if (flag === '--verbose' || flag === '-v') args.verbose = true;
    else if (flag === '--help' || flag === '-h') args.help = true;
    else throw new Error(`unknown argument: ${argv[i]}`);
  }
  if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) throw new Error('--port wants 0–65535');
  return args;
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`model-server: ${err.message}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(
      'usage: node tests/server/model-server.mjs [--port N] [--host 127.0.0.1] [--verbose]\n' +
        'An OpenAI-compatible model server for tests and the offline demo; GET /v1/models lists its scripts.\n',
    );
    return;
  }
  let server;
  try {
    server = await startModelServer(args);
  } catch (err) {
    process.stderr.write(`model-server: cannot listen on ${args.host}:${args.port}: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`model server listening on ${server.origin} - base URL ${server.url}\n`);
  let stopping = false;
  const stop = () => {
    if (stopping) process.exit(1); // second signal: give up waiting
    stopping = true;
    server.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

function isMain() {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) main();
