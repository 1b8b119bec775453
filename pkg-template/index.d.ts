export * from './wasm_agent.js';
import type { ChunkType } from './wasm_agent.js';

declare module './wasm_agent.js' {
  interface AgentStreamOutput {
    /** Iterates `fullStream`. */
    [Symbol.asyncIterator](): AsyncIterator<ChunkType>;
  }
}
