// Starts a test Worker in real workerd through Miniflare, with the local model server it calls
// (not a test file).
//
//   const env = useWorker('websocket-worker.js', (server) => ({ MODEL_URL: server.url, … }));
//   env.server, env.baseUrl  (after `before`); both stop in `after`.

import { after, before } from 'node:test';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { startModelServer } from '../server/model-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const PKG = path.join(ROOT, 'pkg');
const TIMEOUT = 30_000;

/** A model server and `script` (in tests/workerd/) in workerd, for the file; `bindings(server)` is its env. */
export function useWorker(script, bindings) {
  const env = { server: null, mf: null, baseUrl: null };
  before(
    async () => {
      for (const file of ['index.workerd.js', 'api.js', 'processors.js', 'guard-processors.js', 'scorers.js', 'tracing.js', 'serve-agents.js', 'wire.js', 'wasm_agent.js', 'wasm_agent_bg.wasm']) {
        if (!existsSync(path.join(PKG, file))) throw new Error(`pkg/${file} is missing: build the package first (./x build)`);
      }
      // The model server listens before anything fetches from it.
      env.server = await startModelServer({ host: '127.0.0.1' });
      // Real workerd. The Worker's imports are collected by Miniflare; module names are paths
      // relative to modulesRoot, so '../../pkg/index.workerd.js' resolves. Without the rules
      // Miniflare treats .js as CommonJS; the .wasm must be a CompiledWasm module because workerd
      // refuses to compile wasm from bytes.
      env.mf = new Miniflare({
        log: new Log(LogLevel.WARN),
        host: '127.0.0.1',
        port: 0,
        modules: true,
        scriptPath: path.join(HERE, script),
        modulesRoot: ROOT,
        modulesRules: [
          { type: 'ESModule', include: ['**/*.js'] },
          { type: 'CompiledWasm', include: ['**/*.wasm'] },
        ],
        compatibilityDate: '2025-01-01',
        // No Request.cf lookup: Miniflare would otherwise fetch it from workers.cloudflare.com.
        cf: false,
        bindings: bindings(env.server),
        // Plain workerd only lets a Worker's global fetch reach public addresses; these tests
        // need loopback, so the Worker's fetch and connect() go to a network service that allows
        // local (127.0.0.0/8) addresses. (With allow: ['public'] only, the model call fails inside
        // the Worker: "Could not reach the model API at http://127.0.0.1:…: internal error".)
        outboundService: { network: { allow: ['public', 'local'], deny: [] } },
      });
      env.baseUrl = await env.mf.ready;
    },
    { timeout: TIMEOUT },
  );
  after(
    async () => {
      await env.mf?.dispose();
      await env.server?.close();
    },
    { timeout: TIMEOUT },
  );
  return env;
}
