// Node ≥ 20: read the wasm from disk (init() cannot fetch a file: URL in Node).
import { readFileSync } from 'node:fs';
import { initSync } from './wasm_agent.js';

initSync({ module: readFileSync(new URL('./wasm_agent_bg.wasm', import.meta.url)) });

export * from './api.js';
