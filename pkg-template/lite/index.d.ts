// wasm-agent/lite has the complete package's API (../index.d.ts) for what it contains; its
// options that need a left-out feature (structuredOutput, inputProcessors / outputProcessors,
// providerOptions.<provider>.transport 'websocket', an AI SDK model object, anthropic/ and
// google/ models) throw a TypeError saying so.
export type * from '../index.js';
export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, Mastra } from '../index.js';
/** Throws: wasm-agent/lite leaves out workflows; import 'wasm-agent' for them. */
export declare function createStep(...args: unknown[]): never;
/** Throws: wasm-agent/lite leaves out workflows; import 'wasm-agent' for them. */
export declare function createWorkflow(...args: unknown[]): never;
