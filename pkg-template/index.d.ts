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
  StreamOptions, StructuredOutputErrorCode, SystemInstructions, TextPart, Tool, ToolCallPart, ToolCallPayload, ToolChoice, ToolDefinition,
  ToolExecutionContext, ToolInputSchema, ToolResultPart, ToolResultPayload, ToolWriter, UIMessage, Usage, Warning,
  Processor, ProcessorArgs, ProcessorOutputArgs, SystemMessage, TripwirePayload,
  DelegationStartContext, DelegationCompleteContext,
  ScorerLike, ScoringSampling, ScorerEntry, ScoreResult, ScoringData,
} from './wasm_agent.js';
export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, toAISdkMessages, toAISdkV5Messages, Mastra, BatchPartsProcessor, TokenLimiterProcessor } from './wasm_agent.js';
export { TokenLimiterProcessor as TokenLimiter } from './wasm_agent.js';
/** A request context (a `Map`, as the reference's `RequestContext`); each delegated run gets its own copy. */
export declare class RequestContext extends Map<string, unknown> {}
/** Normalises the text of the input messages (SPEC §13.6): NFKC first, then the options. */
export declare class UnicodeNormalizer implements Processor {
  constructor(options?: { stripControlChars?: boolean; preserveEmojis?: boolean; collapseWhitespace?: boolean; trim?: boolean });
  readonly id: 'unicode-normalizer';
  readonly name: string;
  /** One text, normalised as the options say. */
  normalize(text: string): string;
  processInput(args: { messages: StorageMessage[] }): StorageMessage[];
}
/** The judge model of a scorer or of one of its prompt steps: what `new Agent({ model, instructions })` takes. */
export interface ScorerJudge {
  model: ModelConfig | string | object;
  instructions: string;
}
/** What `scorer.run()` takes: on an agent run, `input` is `{ inputMessages, rememberedMessages, systemMessages, taggedSystemMessages }` and `output` the response messages. */
export interface ScorerRunInput {
  input?: any;
  output: any;
  runId?: string;
  groundTruth?: any;
  requestContext?: any;
  [key: string]: any;
}
/** What a step function gets: the run, the earlier steps' values, and (generateReason) the score. */
export interface ScorerStepContext {
  run: ScorerRunInput & { runId: string };
  results: { preprocessStepResult?: any; analyzeStepResult?: any };
  score?: number;
}
/** A step that asks the judge model: `createPrompt` writes the prompt, the reply is an object of `outputSchema`. */
export interface ScorerPromptStep {
  description?: string;
  outputSchema?: ToolInputSchema;
  createPrompt(ctx: ScorerStepContext): string | Promise<string>;
  judge?: ScorerJudge;
  /** generateScore only: the score from the judged `{ score }` object. */
  calculateScore?(ctx: { run: ScorerStepContext['run']; results: ScorerStepContext['results']; analyzeStepResult: any }): number;
}
export type ScorerStep = ((ctx: ScorerStepContext) => any) | ScorerPromptStep;
/** What `scorer.run()` resolves to. */
export interface ScorerResult {
  runId: string;
  input?: any;
  output: any;
  score: number;
  reason?: string;
  preprocessStepResult?: any;
  analyzeStepResult?: any;
  preprocessPrompt?: string;
  analyzePrompt?: string;
  generateScorePrompt?: string;
  generateReasonPrompt?: string;
}
/** A scorer (SPEC §14.1): chain its steps in order, each once, then `run()` it or give it to an agent's `scorers`. */
export declare class MastraScorer {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly judge?: ScorerJudge;
  /** Prepares the run's data (`results.preprocessStepResult` for the later steps). */
  preprocess(step: ScorerStep): MastraScorer;
  /** Analyses the run (`results.analyzeStepResult`). */
  analyze(step: ScorerStep): MastraScorer;
  /** Computes the score, a finite number (required). */
  generateScore(step: ScorerStep): MastraScorer;
  /** Explains the score. */
  generateReason(step: ScorerStep): MastraScorer;
  /** Runs the steps; rejects with a `ScorerError` when one fails or `generateScore` is missing. */
  run(input: ScorerRunInput): Promise<ScorerResult>;
}
/** A scorer from its id and description; a `judge` serves its prompt steps. */
export declare function createScorer(config: { id: string; name?: string; description: string; judge?: ScorerJudge }): MastraScorer;
/** A scorer pipeline failed: `step` names the step that threw. */
export declare class ScorerError extends Error {
  readonly name: 'ScorerError';
  readonly scorerId?: string;
  readonly step?: 'preprocess' | 'analyze' | 'generateScore' | 'generateReason';
}

import type { ChunkType, ModelConfig, Processor, StorageMessage, ToolInputSchema, UIMessage } from './wasm_agent.js';

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
