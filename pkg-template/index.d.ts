// wasm-bindgen declares `[Symbol.dispose]()` on every class; `Symbol.dispose` is typed in this lib
// (TypeScript >= 5.2), which a project's `lib` (es2022, dom, ...) does not include by itself.
/// <reference lib="esnext.disposable" />
// The values are those api.js exports (every entry exports api.js); the rest of wasm_agent.d.ts
// (the types, and wasm-bindgen's initSync/init, which the entries call themselves) is type-only.
// tests/types checks this list against the runtime exports.
export type * from './wasm_agent.js';
export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, Mastra } from './wasm_agent.js';
import type { ChunkType, StorageMessage, UIMessage } from './wasm_agent.js';

declare module './wasm_agent.js' {
  interface AgentStreamOutput {
    /** Iterates `fullStream`. */
    [Symbol.asyncIterator](): AsyncIterator<ChunkType>;
  }
  interface Memory {
    /** The thread's messages as UI messages, ready to render. */
    listMessages(args: { threadId: string; last?: number; before?: string; format: 'ui' }): Promise<UIMessage[]>;
    /** The thread's stored messages, oldest first. */
    listMessages(args: { threadId: string; last?: number; before?: string; format?: 'v2' }): Promise<StorageMessage[]>;
  }
}
