// wasm-agent/lite in workerd: the lite wasm arrives as a compiled module import.
import wasmModule from './wasm_agent_bg.wasm';
import { __inWorkerd, initSync } from './wasm_agent.js';

initSync({ module: wasmModule });
__inWorkerd();

export * from './api.js';
