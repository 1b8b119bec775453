// workerd (Cloudflare Workers and compatible): the wasm arrives as a compiled module import,
// since workerd refuses to compile wasm from bytes at run time.
import wasmModule from './wasm_agent_bg.wasm';
import { initSync } from './wasm_agent.js';

initSync({ module: wasmModule });

export * from './api.js';
