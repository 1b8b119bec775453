// Node ≥ 20: read the wasm from disk (init() cannot fetch a file: URL in Node).
import { readFileSync } from 'node:fs';
import { initSync } from './wasm_agent.js';
import { connectScorers } from './scorers.js';

initSync({ module: readFileSync(new URL('./wasm_agent_bg.wasm', import.meta.url)) });
// Agents' scorers run in JavaScript (scorers.js), called by the wasm.
connectScorers();

export * from './api.js';
