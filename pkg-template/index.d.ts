// wasm-bindgen declares `[Symbol.dispose]()` on every class; `Symbol.dispose` is typed in this lib
// (TypeScript >= 5.2), which a project's `lib` (es2022, dom, ...) does not include by itself.
/// <reference lib="esnext.disposable" />
export * from './wasm_agent.js';
import type { ChunkType } from './wasm_agent.js';

declare module './wasm_agent.js' {
  interface AgentStreamOutput {
    /** Iterates `fullStream`. */
    [Symbol.asyncIterator](): AsyncIterator<ChunkType>;
  }
}
