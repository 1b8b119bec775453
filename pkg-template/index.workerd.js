// workerd (Cloudflare Workers and compatible): the wasm arrives as a compiled module import,
// since workerd refuses to compile wasm from bytes at run time.
import wasmModule from './wasm_agent_bg.wasm';
import { __inWorkerd, initSync } from './wasm_agent.js';
import { connectScorers } from './scorers.js';

initSync({ module: wasmModule });
// Agents' scorers run in JavaScript (scorers.js), called by the wasm.
connectScorers();
// A missing key's error then says to pass the Worker's env binding as apiKey.
__inWorkerd();

export * from './api.js';
