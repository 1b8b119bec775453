// wasm-bindgen declares `[Symbol.dispose]()` on every class; `Symbol.dispose` is typed in this lib
// (TypeScript >= 5.2), which a project's `lib` (es2022, dom, ...) does not include by itself.
/// <reference lib="esnext.disposable" />
// The values are those api.js exports (every entry exports api.js), then the types by name.
// wasm-bindgen's loader (initSync, the default init, InitInput, InitOutput, SyncInitInput) stays
// out: the entries initialise the wasm themselves. tests/types checks the values against the
// runtime exports, and that every other declaration of wasm_agent.d.ts is listed here.
export type {
  AISdkStreamOptions, AISdkUIMessageChunk, AgentConfig, BackgroundTask, BackgroundTaskStatus, BackgroundTasksConfig,
  ChunkType, FilePart, FinishReason, FromJSONSchema, FullOutput, ImagePart, InferToolInput, LanguageModelLike,
  ListMessagesArgs, MastraConfig, MemoryInit, MemoryOptions, MessageInput, ModelConfig, ModelMessage, ModelSettings,
  ResponseInfo, StepResult, StopCondition, StorageAdapter, StorageErrorCode, StorageMessage, StorageResource, StorageThread,
  StreamOptions, StructuredOutputErrorCode, SuspendedRun, RunRecord, RunStatus, SystemInstructions, TextPart, Tool, ToolCallPart, ToolCallPayload, ToolChoice, ToolDefinition,
  ToolExecutionContext, ToolInputSchema, ToolResultPart, ToolResultPayload, ToolWriter, UIMessage, Usage, Warning,
  Processor, ProcessorArgs, ProcessorOutputArgs, SystemMessage, TripwirePayload,
} from './wasm_agent.js';
export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, Mastra, BatchPartsProcessor, TokenLimiterProcessor } from './wasm_agent.js';
export { TokenLimiterProcessor as TokenLimiter } from './wasm_agent.js';
/** Normalises the text of the input messages (SPEC §13.6): NFKC first, then the options. */
export declare class UnicodeNormalizer implements Processor {
  constructor(options?: { stripControlChars?: boolean; preserveEmojis?: boolean; collapseWhitespace?: boolean; trim?: boolean });
  readonly id: 'unicode-normalizer';
  readonly name: string;
  /** One text, normalised as the options say. */
  normalize(text: string): string;
  processInput(args: { messages: StorageMessage[] }): StorageMessage[];
}
import type { ChunkType, Processor, StorageMessage, UIMessage } from './wasm_agent.js';

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
