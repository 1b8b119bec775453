// wasm-agent/lite in Node ≥ 20: read the lite wasm from disk.
import { readFileSync } from 'node:fs';
import { initSync } from './wasm_agent.js';

initSync({ module: readFileSync(new URL('./wasm_agent_bg.wasm', import.meta.url)) });

export * from './api.js';
