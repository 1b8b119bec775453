// wasm-agent/lite in browsers and bundlers: fetch the lite wasm next to this file.
import init from './wasm_agent.js';

await init({ module_or_path: new URL('./wasm_agent_bg.wasm', import.meta.url) });

export * from './api.js';
