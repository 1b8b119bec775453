// Browsers and bundlers: fetch the wasm next to this file.
import init from './wasm_agent.js';
import { connectScorers } from './scorers.js';

await init({ module_or_path: new URL('./wasm_agent_bg.wasm', import.meta.url) });
// Agents' scorers run in JavaScript (scorers.js), called by the wasm.
connectScorers();

export * from './api.js';
