#!/usr/bin/env node
// Runs examples/worker locally in real workerd (Miniflare), without wrangler:
//
//   ./x build && node examples/worker/dev.mjs          # offline: the repository's local model server
//   MODEL_ID=openai/gpt-4o-mini MODEL_API_KEY=sk-… node examples/worker/dev.mjs
//
// then  curl -N localhost:8787/chat -d '{"thread":"t1","message":"Hi, I am Ann."}'
//       curl 'localhost:8787/history?thread=t1'
//
// 'wasm-agent' and 'wasm-agent/durable-object-store' are resolved from ../../pkg through its
// package.json `exports` (the `workerd` condition), as a bundler would. Durable Object storage
// is kept in memory: it is gone when this stops (PERSIST=dir keeps it on disk). PORT picks the
// port (default 8787); when it is taken, a free one is used instead, as ./x demo does.

import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const PKG = path.join(ROOT, 'pkg');
const PORT = Number(process.env.PORT ?? 8787);

/** `wanted` when it is free on 127.0.0.1, else a free port the system picks. */
async function freePort(wanted) {
  const probe = (port) =>
    new Promise((resolve, reject) => {
      const server = net.createServer();
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const { port: got } = server.address();
        server.close(() => resolve(got));
      });
    });
  try {
    return await probe(wanted);
  } catch (err) {
    if (err.code !== 'EADDRINUSE' || wanted === 0) throw err;
    console.log(`port ${wanted} is busy, using a free port instead`);
    return probe(0);
  }
}

/** The file a 'wasm-agent…' specifier resolves to under the `workerd` condition. */
function resolvePackage(specifier) {
  const { exports } = JSON.parse(readFileSync(path.join(PKG, 'package.json'), 'utf8'));
  let target = exports[specifier === 'wasm-agent' ? '.' : `.${specifier.slice('wasm-agent'.length)}`];
  while (target && typeof target === 'object') target = target.workerd ?? target.import ?? target.default;
  if (typeof target !== 'string') throw new Error(`pkg/package.json does not export '${specifier}': run ./x build`);
  return path.join(PKG, target);
}

const source = readFileSync(path.join(HERE, 'worker.js'), 'utf8').replace(
  /(from\s+)(['"])(wasm-agent(?:\/[\w-]+)?)\2/g,
  (_, kw, q, spec) => `${kw}${q}${path.relative(HERE, resolvePackage(spec)).split(path.sep).join('/')}${q}`,
);
const modules = [{ type: 'ESModule', path: path.join(HERE, 'worker.js'), contents: source }];
for (const file of ['index.workerd.js', 'api.js', 'processors.js', 'guard-processors.js', 'scorers.js', 'tracing.js', 'serve-agents.js', 'wire.js', 'wasm_agent.js', 'durable-object-store.js', 'wasm_agent_bg.wasm']) {
  modules.push({ type: file.endsWith('.wasm') ? 'CompiledWasm' : 'ESModule', path: path.join(PKG, file), contents: readFileSync(path.join(PKG, file)) });
}

let modelServer = null;
let env = { MODEL_ID: process.env.MODEL_ID, MODEL_URL: process.env.MODEL_URL ?? '', MODEL_API_KEY: process.env.MODEL_API_KEY ?? '' };
if (!env.MODEL_ID) {
  const { startModelServer } = await import('../../tests/server/model-server.mjs');
  modelServer = await startModelServer({ host: '127.0.0.1' });
  env = { MODEL_ID: 'openai/demo', MODEL_URL: modelServer.url, MODEL_API_KEY: 'offline' };
}

const mf = new Miniflare({
  host: '127.0.0.1',
  port: await freePort(PORT),
  modules,
  modulesRoot: ROOT,
  compatibilityDate: '2025-01-01',
  cf: false,
  bindings: env,
  durableObjects: { CONVERSATION: { className: 'Conversation', useSQLite: true } },
  ...(process.env.PERSIST ? { durableObjectsPersist: process.env.PERSIST } : {}),
  // Let the Worker's fetch reach a model server on this machine too.
  outboundService: { network: { allow: ['public', 'local'], deny: [] } },
});
const url = await mf.ready;
console.log(`examples/worker on ${url} (model ${env.MODEL_ID}${modelServer ? ', offline model server' : ''}); Ctrl-C stops`);

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await mf.dispose();
    await modelServer?.close();
    process.exit(0);
  });
}
