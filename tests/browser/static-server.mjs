// A tiny static file server for the browser tests in tests/browser/ (not a test file).
//
//   const srv = await startStaticServer({ '/pkg/': '/abs/path/pkg', '/': '/abs/path/tests/browser' });
//   page.goto(`${srv.origin}/task-page.html`); … await srv.close();
//
// Listens on 127.0.0.1 on a free port. `mounts` maps a URL prefix (ending in '/') to a folder;
// the longest matching prefix wins. GET and HEAD only; no directory listings; paths that leave
// their folder are refused. .wasm is served as application/wasm and .js/.mjs as text/javascript
// (what native ESM and WebAssembly.instantiateStreaming need). Nothing is cached.

import http from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
};

/** Resolves `pathname` against `mounts`, or null when no mount takes it or it leaves its folder. */
function resolvePath(mounts, pathname) {
  const prefix = Object.keys(mounts)
    .filter((p) => pathname.startsWith(p))
    .sort((a, b) => b.length - a.length)[0];
  if (prefix === undefined) return null;
  const root = path.resolve(mounts[prefix]);
  const file = path.resolve(root, `.${path.posix.sep}${pathname.slice(prefix.length)}`);
  if (file !== root && !file.startsWith(root + path.sep)) return null;
  return file;
}

/**
 * @param {Record<string, string>} mounts URL prefix → folder
 * @returns {Promise<{ origin: string, port: number, requests: string[], close(): Promise<void> }>}
 */
export async function startStaticServer(mounts) {
  const requests = [];
  const sockets = new Set();
  const server = http.createServer(async (req, res) => {
    const send = (status, body, type = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    } catch {
      return send(400, 'bad path\n');
    }
    requests.push(`${req.method} ${pathname}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'GET only\n');
    if (pathname === '/favicon.ico') return send(204, '');
    const file = resolvePath(mounts, pathname);
    if (!file) return send(404, `not found: ${pathname}\n`);
    try {
      if (!(await stat(file)).isFile()) return send(404, `not a file: ${pathname}\n`);
      const body = await readFile(file);
      send(200, body, TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream');
    } catch {
      send(404, `not found: ${pathname}\n`);
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  let closed;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    close() {
      closed ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
        for (const socket of sockets) socket.destroy();
      });
      return closed;
    },
  };
}
