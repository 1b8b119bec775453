#!/usr/bin/env node
// The demo server of `./x demo`: serves the chat page (www/) and the built package (pkg/) on
// 127.0.0.1, plus the model the page talks to.
//
//   node www/serve.mjs [--port N]        (PORT env also works; default 8787; 0 = any free port)
//
// Without a provider key in the environment it starts the offline model server
// (tests/server/model-server.mjs) and the page streams from its friendly `demo` script; in that
// mode `/?model=<script>` picks another script (e.g. `echo`, `demo:200` for a slow reply) and
// `/?title=<script>` a script that titles new conversations (e.g. `text:Greetings`).
// The page keeps its conversations in IndexedDB (the package's Memory), so a reload shows them.
// With a key (OPENAI_API_KEY, GROQ_API_KEY, ...) the page talks to a same-origin proxy at
// /proxy/v1/* that adds the key server-side: the key never reaches the page.
// WASM_AGENT_DEMO_MODEL overrides the provider's default model.
// The page's Settings can also point its Agent at a provider directly, with a key the user types
// in: the key stays in that browser (sessionStorage, or localStorage when remembered).
// Offline, the page gives its Agent a `clock` tool; the demo model calls it when a message
// mentions the time (the page asks for the `call:clock` script), and `/?approve=1` makes the
// tool wait for the user's approval.

import http from 'node:http';
import { createReadStream, realpathSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const WWW_DIR = HERE;
const PKG_DIR = path.join(ROOT, 'pkg');
const HOST = '127.0.0.1';
const DEFAULT_PORT = 8787;
const MAX_PROXY_BODY = 32 * 1024 * 1024;

/** Providers in the order their keys are looked for. */
const PROVIDERS = [
  { prefix: 'openai', env: 'OPENAI', model: 'gpt-4o-mini', baseUrl: 'https://api.openai.com/v1' },
  { prefix: 'groq', env: 'GROQ', model: 'llama-3.3-70b-versatile', baseUrl: 'https://api.groq.com/openai/v1' },
  { prefix: 'deepseek', env: 'DEEPSEEK', model: 'deepseek-chat', baseUrl: 'https://api.deepseek.com/v1' },
  { prefix: 'mistral', env: 'MISTRAL', model: 'mistral-small-latest', baseUrl: 'https://api.mistral.ai/v1' },
  { prefix: 'xai', env: 'XAI', model: 'grok-3-mini', baseUrl: 'https://api.x.ai/v1' },
  { prefix: 'openrouter', env: 'OPENROUTER', model: 'openai/gpt-4o-mini', baseUrl: 'https://openrouter.ai/api/v1' },
  {
    prefix: 'togetherai',
    env: 'TOGETHERAI',
    model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    baseUrl: 'https://api.together.xyz/v1',
  },
];

const CONTENT_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
};

/** Offline script names the page may pick with `?model=` (offline mode only). */
const SCRIPT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(:[A-Za-z0-9 ._-]{0,200})?$/;

// ---------------------------------------------------------------------------------------------
// Arguments and environment

function parseArgs(argv) {
  const args = { port: undefined, help: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s);
    if (flag === '--port' || flag === '-p') {
      const raw = inline ?? argv[++i];
      args.port = Number(raw);
      if (raw === undefined || raw === '' || !Number.isInteger(args.port) || args.port < 0 || args.port > 65535) {
        throw new Error(`--port wants a number 0-65535, got ${JSON.stringify(raw ?? '')}`);
      }
    } else if (flag === '--help' || flag === '-h') {
      args.help = true;
    } else {
      throw new Error(`unknown argument: ${argv[i]}`);
    }
  }
  if (args.port === undefined) {
    const env = process.env.PORT;
    if (env !== undefined && env !== '') {
      const port = Number(env);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT wants a number 0-65535, got ${JSON.stringify(env)}`);
      args.port = port;
    } else {
      args.port = DEFAULT_PORT;
    }
  }
  return args;
}

/**
 * The provider to use, or null for the offline model. Reads `<PROVIDER>_API_KEY`,
 * `<PROVIDER>_BASE_URL` and WASM_AGENT_DEMO_MODEL.
 */
export function chooseProvider(env = process.env) {
  const keyOf = (p) => (env[`${p.env}_API_KEY`] ?? '').trim();
  const override = (env.WASM_AGENT_DEMO_MODEL ?? '').trim();
  let provider = PROVIDERS.find((p) => keyOf(p) !== '');
  let model;
  if (override !== '') {
    // `groq/llama-…` names its provider; a bare name is a model of the provider found first.
    // (`openai/gpt-4o` with only OPENROUTER_API_KEY set is an OpenRouter model name.)
    const named = PROVIDERS.find((p) => override.startsWith(`${p.prefix}/`));
    if (named && keyOf(named) !== '') {
      provider = named;
      model = override.slice(named.prefix.length + 1);
    } else if (provider) {
      model = override;
    }
  }
  if (!provider) return null;
  const baseUrl = ((env[`${provider.env}_BASE_URL`] ?? '').trim() || provider.baseUrl).replace(/\/+$/, '');
  new URL(baseUrl); // throws on a malformed <PROVIDER>_BASE_URL
  return { ...provider, key: keyOf(provider), baseUrl, model: model || provider.model };
}

// ---------------------------------------------------------------------------------------------
// Static files

/**
 * Where the page may connect besides itself: the offline model server, and, for a provider the
 * user picks in the page's Settings (the page then calls it directly with the user's key), any
 * https: origin and a model server on this computer (Ollama).
 */
function connectSources(modelServerOrigin) {
  return [modelServerOrigin, 'https:', 'http://127.0.0.1:*', 'http://localhost:*'].filter(Boolean).join(' ');
}

function securityHeaders(connectSrc) {
  return {
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    // Defence in depth: model text is only ever inserted as text, and even if it were parsed as
    // HTML, inline handlers and foreign scripts would not run.
    'content-security-policy': [
      "default-src 'self'",
      "script-src 'self' 'wasm-unsafe-eval'",
      "style-src 'self'",
      "img-src 'self' data:",
      `connect-src 'self'${connectSrc ? ` ${connectSrc}` : ''}`,
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join('; '),
  };
}

/**
 * Resolves `rel` (a URL path below a mount, still percent-encoded) inside `dir`; null when it
 * would leave `dir`, names a hidden file, or is malformed.
 */
async function resolveInside(dir, rel) {
  let decoded;
  try {
    decoded = decodeURIComponent(rel);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const segments = decoded.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '.' || s === '..' || s.startsWith('.'))) return null;
  const file = path.resolve(dir, ...segments);
  if (file !== dir && !file.startsWith(dir + path.sep)) return null;
  try {
    // Symlinks must not lead out either.
    const real = await realpath(file);
    const realDir = await realpath(dir);
    if (real !== realDir && !real.startsWith(realDir + path.sep)) return null;
    const info = await stat(real);
    return info.isFile() ? { file: real, size: info.size, mtime: info.mtime } : null;
  } catch {
    return null;
  }
}

async function serveFile(req, res, dir, rel, headers) {
  const found = await resolveInside(dir, rel);
  const type = found && CONTENT_TYPES[path.extname(found.file).toLowerCase()];
  if (!found || !type) return sendText(res, 404, 'not found\n', headers);
  res.writeHead(200, {
    ...headers,
    'content-type': type,
    'content-length': String(found.size),
    // A rebuilt package or an edited page is picked up on reload.
    'cache-control': 'no-store',
    'last-modified': found.mtime.toUTCString(),
  });
  if (req.method === 'HEAD') return res.end();
  const stream = createReadStream(found.file);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

function sendText(res, status, text, headers = {}) {
  res.writeHead(status, { ...headers, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

function sendJson(res, status, value, headers = {}) {
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(value));
}

// ---------------------------------------------------------------------------------------------
// The provider proxy

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/** Request headers forwarded upstream: the page's own, minus credentials and browser context. */
function upstreamHeaders(req, key) {
  const out = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower)) continue;
    if (['authorization', 'cookie', 'origin', 'referer', 'accept-encoding', 'api-key', 'x-api-key'].includes(lower)) continue;
    if (lower.startsWith('sec-') || lower.startsWith('x-forwarded-')) continue;
    out[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  out.authorization = `Bearer ${key}`;
  // Uncompressed, so every chunk can be passed on the moment it arrives.
  out['accept-encoding'] = 'identity';
  return out;
}

function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) {
        reject(Object.assign(new Error('request body too large'), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('request aborted')));
  });
}

/** A proxy error in the OpenAI shape, so the agent reports it like a provider error. */
function proxyError(res, status, message) {
  if (res.headersSent) return res.destroy();
  sendJson(res, status, { error: { message, type: 'proxy_error', code: null } });
}

async function proxy(req, res, provider, rest, search) {
  if (req.method !== 'POST' && req.method !== 'GET') return proxyError(res, 405, 'The demo proxy only forwards GET and POST.');
  // A page of another site could otherwise spend the key with a "simple" cross-origin POST.
  const ctype = String(req.headers['content-type'] ?? '');
  if (req.method === 'POST' && !/^application\/json\b/i.test(ctype)) {
    return proxyError(res, 415, 'The demo proxy only forwards application/json requests.');
  }
  const target = `${provider.baseUrl}/${rest}${search}`;
  const controller = new AbortController();
  // The page stopped (Stop button, closed tab): stop the upstream request too.
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  let body;
  try {
    body = req.method === 'POST' ? await readBody(req, MAX_PROXY_BODY) : undefined;
  } catch (err) {
    return proxyError(res, err.status ?? 400, err.message);
  }
  let upstream;
  try {
    upstream = await fetch(target, {
      method: req.method,
      headers: upstreamHeaders(req, provider.key),
      body,
      signal: controller.signal,
      redirect: 'manual',
    });
  } catch (err) {
    if (controller.signal.aborted) return res.destroy();
    const cause = err?.cause;
    const why = cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message ?? err?.message ?? String(err);
    return proxyError(res, 502, `The demo proxy could not reach ${provider.baseUrl}: ${why}`);
  }
  const headers = {};
  for (const [name, value] of upstream.headers) {
    if (HOP_BY_HOP.has(name) || name === 'content-encoding' || name === 'set-cookie') continue;
    if (name.startsWith('access-control-')) continue;
    headers[name] = value;
  }
  headers['cache-control'] = 'no-store';
  headers['x-accel-buffering'] = 'no';
  res.writeHead(upstream.status, headers);
  res.flushHeaders();
  if (!upstream.body || req.method === 'HEAD') return res.end();
  // Chunk by chunk, no buffering: each SSE event reaches the page as soon as the provider sends it.
  const reader = upstream.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
      if (res.destroyed) break;
    }
    res.end();
  } catch {
    res.destroy();
  } finally {
    reader.cancel().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// The server

function listen(server, port) {
  return new Promise((resolve, reject) => {
    const onError = (err) => {
      server.off('listening', onListening);
      reject(err);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, HOST);
  });
}

/**
 * Starts the demo. Resolves to `{ url, origin, port, mode, model, label, close() }`.
 * @param {{ port?: number, env?: Record<string, string | undefined>, log?: (line: string) => void }} [opts]
 */
export async function startDemo(opts = {}) {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((line) => process.stderr.write(`${line}\n`));
  const provider = chooseProvider(env);

  let modelServer = null;
  if (!provider) {
    const { startModelServer } = await import(path.join(ROOT, 'tests/server/model-server.mjs'));
    const { offlineScripts } = await import('./offline-scripts.mjs');
    modelServer = await startModelServer({ host: HOST, scripts: offlineScripts() });
  }

  const sockets = new Set();
  let origin = '';
  let allowedHosts = new Set();

  function config(url) {
    if (provider) {
      const id = `${provider.prefix}/${provider.model}`;
      return {
        model: { id, url: `${origin}/proxy/v1`, apiKey: 'proxied' },
        mode: 'provider',
        label: `${id} via ${new URL(provider.baseUrl).host}`,
        // A real model titles each new conversation after its first exchange.
        titles: true,
      };
    }
    const asked = url.searchParams.get('model');
    const script = asked && SCRIPT_NAME.test(asked) ? asked : 'demo';
    // The offline scripts only restate the message, which makes a poor title: the page lists
    // first words instead, unless `/?title=<script>` names a script to write titles.
    const titleScript = url.searchParams.get('title');
    const offlineModel = (name) => ({ id: `openai/${name}`, url: modelServer.url, apiKey: 'offline', api: 'chat' });
    return {
      // The model server speaks Chat Completions only.
      model: offlineModel(script),
      mode: 'offline',
      label: `openai/${script} · local model server, no API key`,
      titles: titleScript && SCRIPT_NAME.test(titleScript) ? { model: offlineModel(titleScript) } : false,
    };
  }

  async function handle(req, res) {
    req.on('error', () => {});
    res.on('error', () => {});
    const headers = securityHeaders(connectSources(modelServer ? modelServer.origin : ''));
    // Only answer requests addressed to this server by name (no DNS rebinding).
    if (!allowedHosts.has(String(req.headers.host ?? '').toLowerCase())) {
      req.resume();
      return sendText(res, 421, 'misdirected request\n', headers);
    }
    let url;
    try {
      url = new URL(req.url ?? '/', origin);
    } catch {
      req.resume();
      return sendText(res, 400, 'bad request\n', headers);
    }
    const pathname = url.pathname;

    if (pathname.startsWith('/proxy/')) {
      const fetchSite = req.headers['sec-fetch-site'];
      const reqOrigin = req.headers.origin;
      if ((reqOrigin && reqOrigin !== `http://${req.headers.host}`) || (fetchSite && fetchSite !== 'same-origin' && fetchSite !== 'none')) {
        req.resume();
        return proxyError(res, 403, 'The demo proxy only answers its own page.');
      }
      if (!provider) {
        req.resume();
        return proxyError(res, 404, 'No provider key is set: the demo runs the offline model, without a proxy.');
      }
      const match = /^\/proxy\/v1\/(.*)$/s.exec(pathname);
      if (!match || match[1].split('/').some((s) => s === '..' || s === '.')) {
        req.resume();
        return proxyError(res, 404, `Unknown proxy path ${pathname}`);
      }
      return proxy(req, res, provider, match[1], url.search);
    }

    if (req.method !== 'GET' && req.method !== 'HEAD') {
      req.resume();
      return sendText(res, 405, 'method not allowed\n', { ...headers, allow: 'GET, HEAD' });
    }
    req.resume();
    if (pathname === '/config.json') return sendJson(res, 200, config(url), headers);
    if (pathname === '/pkg' || pathname === '/pkg/') return sendText(res, 404, 'not found\n', headers);
    if (pathname.startsWith('/pkg/')) return serveFile(req, res, PKG_DIR, pathname.slice('/pkg/'.length), headers);
    if (pathname === '/' || pathname === '/index.html') return serveFile(req, res, WWW_DIR, 'index.html', headers);
    if (pathname.endsWith('.test.mjs') || pathname.endsWith('serve.mjs') || pathname.endsWith('page-harness.mjs') || pathname.endsWith('offline-scripts.mjs')) {
      return sendText(res, 404, 'not found\n', headers);
    }
    return serveFile(req, res, WWW_DIR, pathname.slice(1), headers);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      log(`wasm-agent demo: ${err?.stack ?? err}`);
      if (!res.headersSent) sendText(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_err, socket) => socket.destroy());

  const wanted = opts.port ?? DEFAULT_PORT;
  try {
    await listen(server, wanted);
  } catch (err) {
    if (err.code !== 'EADDRINUSE' || wanted === 0) {
      await modelServer?.close();
      throw err;
    }
    log(`wasm-agent demo: port ${wanted} is busy, using a free port instead`);
    await listen(server, 0);
  }
  const { port } = server.address();
  origin = `http://${HOST}:${port}`;
  allowedHosts = new Set([`${HOST}:${port}`, `localhost:${port}`]);

  let closed;
  return {
    url: `${origin}/`,
    origin,
    port,
    mode: provider ? 'provider' : 'offline',
    model: provider ? `${provider.prefix}/${provider.model}` : 'openai/demo',
    label: provider ? `${provider.prefix}/${provider.model} via ${new URL(provider.baseUrl).host}` : 'openai/demo · local model server',
    close() {
      closed ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
        for (const socket of sockets) socket.destroy();
      }).then(() => modelServer?.close());
      return closed;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// CLI

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`wasm-agent demo: ${err.message}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(
      'usage: node www/serve.mjs [--port N]   (or PORT=N; default 8787, 0 = any free port)\n' +
        'Serves the wasm-agent chat demo on 127.0.0.1. Without a provider key (OPENAI_API_KEY, GROQ_API_KEY,\n' +
        'DEEPSEEK_API_KEY, MISTRAL_API_KEY, XAI_API_KEY, OPENROUTER_API_KEY, TOGETHERAI_API_KEY) it uses a\n' +
        'local offline model; with one, a same-origin proxy keeps the key on the server.\n' +
        'WASM_AGENT_DEMO_MODEL overrides the default model; <PROVIDER>_BASE_URL the provider URL.\n',
    );
    return;
  }
  try {
    await stat(path.join(PKG_DIR, 'index.browser.js'));
    await stat(path.join(PKG_DIR, 'wasm_agent_bg.wasm'));
  } catch {
    process.stderr.write('wasm-agent demo: the package is not built (pkg/ is missing): run ./x build, or ./x demo\n');
    process.exit(1);
  }
  let demo;
  try {
    demo = await startDemo({ port: args.port });
  } catch (err) {
    process.stderr.write(`wasm-agent demo: cannot start: ${err.message}\n`);
    process.exit(1);
  }
  const how =
    demo.mode === 'offline'
      ? 'model: offline demo model (no API key set; set e.g. OPENAI_API_KEY to use a real one)'
      : `model: ${demo.label} (key kept on the server)`;
  process.stdout.write(`wasm-agent demo: open ${demo.url} - ${how}\n`);
  let stopping = false;
  const stop = () => {
    if (stopping) process.exit(1); // a second signal: stop waiting
    stopping = true;
    const timer = setTimeout(() => process.exit(0), 3000);
    timer.unref();
    demo.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

const isMain = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();

if (isMain) main();
