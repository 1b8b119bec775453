// Starts a test Worker in real workerd through Miniflare, with the local model server it calls
// (not a test file). worker.test.mjs explains each Miniflare option.
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
      for (const file of ['index.workerd.js', 'api.js', 'wasm_agent.js', 'wasm_agent_bg.wasm']) {
        if (!existsSync(path.join(PKG, file))) throw new Error(`pkg/${file} is missing: build the package first (./x build)`);
      }
      env.server = await startModelServer({ host: '127.0.0.1' });
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
        cf: false,
        bindings: bindings(env.server),
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
