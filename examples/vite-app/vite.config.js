// Vite configuration of the example. `wasm-agent` resolves to the package built into pkg/ (as
// `npm install wasm-agent` would provide it): the alias points at the package folder, so Vite
// reads its package.json `exports` and picks the `browser` entry, index.browser.js. That entry
// loads the wasm with `new URL('./wasm_agent_bg.wasm', import.meta.url)`, which Vite emits as
// an asset of the build; it initialises the wasm with a top-level await, hence `es2022`.
// An app that installed the package needs neither the alias nor `server.fs.allow`.

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const PKG = fileURLToPath(new URL('../../pkg', import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  resolve: { alias: { 'wasm-agent': PKG } },
  build: { target: 'es2022' },
  optimizeDeps: { esbuildOptions: { target: 'es2022' } },
  server: { fs: { allow: ['.', PKG] } },
});
