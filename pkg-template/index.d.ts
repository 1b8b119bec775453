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
  ListMessagesArgs, MastraConfig, MemoryEvent, MemoryInit, MemoryOptions, MessageInput, ModelConfig, ModelMessage, ModelSettings,
  ResponseInfo, StepResult, StopCondition, StorageAdapter, StorageErrorCode, StorageMessage, StorageResource, StorageThread,
  StreamOptions, StructuredOutputErrorCode, SuspendedRun, RunRecord, RunStatus, SystemInstructions, TextPart, Tool, ToolCallPart, ToolCallPayload, ToolChoice, ToolDefinition,
  ToolExecutionContext, ToolInputSchema, ToolResultPart, ToolResultPayload, ToolWriter, UIMessage, Usage, Warning,
  Processor, ProcessorArgs, ProcessorOutputArgs, SystemMessage, TripwirePayload,
  DelegationStartContext, DelegationCompleteContext,
  ScorerLike, ScoringSampling, ScorerEntry, ScoreResult, ScoringData, ScoreRow, ScoreFilter,
  CompletionScorerResult, CompletionRunResult, IsTaskCompleteConfig,
  WorkflowSchema, StepContext, StepDefinition, AgentStepOptions, StepCondition, MapSource, WorkflowConfig, WorkflowRunOptions,
  WorkflowRunStatus, WorkflowStepRecord, WorkflowResult, WorkflowStreamEvent, WorkflowResumeOptions, WorkflowRunQuery, WorkflowRunListEntry, WorkflowRunRecord, StoredWorkflowRun, WorkflowRunsQuery,
  WorkflowToolSuspendPayload,
  Embedder, VectorRecord,
  SpanOptions, ExportedSpan, TracingEvent, ScoreEvent, TracingExporter, ObservabilityConfig,
} from './wasm_agent.js';
export { SpanHandle } from './wasm_agent.js';
import type { ObservabilityConfig, TracingEvent, TracingExporter } from './wasm_agent.js';
export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, toAISdkMessages, toAISdkV5Messages, Mastra, BatchPartsProcessor, TokenLimiterProcessor, createWorkflow, Step, Workflow, Run, WorkflowRunOutput } from './wasm_agent.js';
import type { Agent, AgentStepOptions, Step, StepDefinition, Tool, Workflow } from './wasm_agent.js';
/**
 * A workflow step (SPEC §20.1): from a definition (`execute` gets a typed `StepContext`), or from
 * an agent, a tool or a workflow. Two signatures, so an inline `execute`'s argument is typed.
 */
export declare function createStep(def: StepDefinition): Step;
export declare function createStep(def: Agent | Tool | Workflow, options?: AgentStepOptions): Step;
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

import type { ChunkType, ModelConfig, ModelMessage, Processor, ProcessorArgs, ProcessorOutputArgs, StorageMessage, ToolInputSchema, UIMessage } from './wasm_agent.js';

/** Options every model-backed built-in processor takes (SPEC §13.6). */
export interface ModelGuardOptions {
  /** The model that classifies the content (any form `new Agent({ model })` takes). */
  model: ModelConfig;
  /** The classifying agent's system prompt, in place of the built-in one. */
  instructions?: string;
  /** When the classification call fails: 'warn' (default) logs and lets the content through; 'block' aborts the run. */
  errorStrategy?: 'warn' | 'block';
  /** Passed to the classification call's structured output (e.g. `jsonPromptInjection`). */
  structuredOutputOptions?: { jsonPromptInjection?: boolean | 'system' | 'inline' | 'auto' };
  /** The classification call's provider options. */
  providerOptions?: Record<string, Record<string, unknown>>;
}
type InputArgs = ProcessorArgs & { messages: StorageMessage[] };
type StreamArgs = ProcessorOutputArgs & { part: ChunkType; streamParts: ChunkType[] };
type ResultArgs = ProcessorOutputArgs & { messages: ModelMessage[] };

/** Scores text against moderation categories with a model; blocks (default), warns about or filters flagged content. Tripwire reason `Content flagged for moderation. Categories: …`. */
export declare class ModerationProcessor implements Processor {
  constructor(options: ModelGuardOptions & {
    /** Default: OpenAI's 11 moderation categories. */
    categories?: string[];
    /** A category scoring at least this is flagged (default 0.5). */
    threshold?: number;
    strategy?: 'block' | 'warn' | 'filter';
    /** Add every score to the reason (default false). */
    includeScores?: boolean;
    /** Output stream: how many of the last chunks are judged together (default 0: the current one). */
    chunkWindow?: number;
    /** Check only the last message (default false). */
    lastMessageOnly?: boolean;
  });
  readonly id: 'moderation';
  readonly name: string;
  processInput(args: InputArgs): Promise<StorageMessage[]>;
  processOutputStream(args: StreamArgs): Promise<ChunkType | null>;
  processOutputResult(args: ResultArgs): Promise<ModelMessage[]>;
}

/** Finds personal data with a model; redacts it (default) by the detections' positions, or blocks, warns or filters. */
export declare class PIIDetector implements Processor {
  constructor(options: ModelGuardOptions & {
    /** Default: email, phone, credit-card, ssn, api-key, ip-address, name, address, date-of-birth, url, uuid, crypto-wallet, iban. */
    detectionTypes?: string[];
    /** A detection at least this confident is flagged (default 0.6). */
    threshold?: number;
    strategy?: 'block' | 'warn' | 'filter' | 'redact';
    /** 'mask' (default, keeps the shape: `j******e@*******.com`), 'hash' (`[HASH:1a2b3c4d]`), 'remove', 'placeholder' (`[EMAIL]`). */
    redactionMethod?: 'mask' | 'hash' | 'remove' | 'placeholder';
    /** Mask keeping the value's format (default true). */
    preserveFormat?: boolean;
    /** Add the number of detections to the reason (default false). */
    includeDetections?: boolean;
    /** Check only the last message (default false). */
    lastMessageOnly?: boolean;
  });
  readonly id: 'pii-detector';
  readonly name: string;
  processInput(args: InputArgs): Promise<StorageMessage[]>;
  processOutputStream(args: StreamArgs): Promise<ChunkType | null>;
  processOutputResult(args: ResultArgs): Promise<ModelMessage[]>;
}

/** Finds prompt injection and jailbreak attempts in the input with a model; blocks (default), warns, filters or rewrites. */
export declare class PromptInjectionDetector implements Processor {
  constructor(options: ModelGuardOptions & {
    /** Default: injection, jailbreak, tool-exfiltration, data-exfiltration, system-override, role-manipulation. */
    detectionTypes?: string[];
    /** A type scoring at least this is flagged (default 0.7). */
    threshold?: number;
    strategy?: 'block' | 'warn' | 'filter' | 'rewrite';
    /** Add every score to the reason (default false). */
    includeScores?: boolean;
    /** Check only the last message (default false). */
    lastMessageOnly?: boolean;
  });
  readonly id: 'prompt-injection-detector';
  readonly name: string;
  processInput(args: InputArgs): Promise<StorageMessage[]>;
}

/** Finds system prompts or instructions leaking into the reply with a model; redacts (default), blocks, warns or filters. */
export declare class SystemPromptScrubber implements Processor {
  constructor(options: ModelGuardOptions & {
    strategy?: 'block' | 'warn' | 'filter' | 'redact';
    /** More things to flag, told to the model. */
    customPatterns?: string[];
    /** 'mask' (default: `*` per character), 'placeholder' (`placeholderText`), 'remove'. */
    redactionMethod?: 'mask' | 'placeholder' | 'remove';
    /** Default '[SYSTEM_PROMPT]'. */
    placeholderText?: string;
    /** Log the number of detections with a warning (default false). */
    includeDetections?: boolean;
  });
  readonly id: 'system-prompt-scrubber';
  readonly name: string;
  processOutputStream(args: StreamArgs): Promise<ChunkType | null>;
  processOutputResult(args: ResultArgs): Promise<ModelMessage[]>;
}

/** Detects the input's language with a model and records it in `content.metadata.language_detection`; translates, blocks or warns when it is not a target language. */
export declare class LanguageDetector implements Processor {
  constructor(options: ModelGuardOptions & {
    /** Names or ISO codes (default ['English', 'en']); the first is what 'translate' translates into. */
    targetLanguages?: string[];
    /** Detections less confident than this are ignored (default 0.7). */
    threshold?: number;
    strategy?: 'detect' | 'translate' | 'block' | 'warn';
    /** Shorter texts are not checked (default 10). */
    minTextLength?: number;
    /** Keep the original text in the metadata of a translated message (default true). */
    preserveOriginal?: boolean;
    /** Log target-language detections too (default false). */
    includeDetectionDetails?: boolean;
  });
  readonly id: 'language-detector';
  readonly name: string;
  processInput(args: InputArgs): Promise<StorageMessage[]>;
}

declare module './wasm_agent.js' {
  interface AgentStreamOutput {
    /** Iterates `fullStream`. */
    [Symbol.asyncIterator](): AsyncIterator<ChunkType>;
  }
  interface WorkflowRunOutput {
    /** Iterates `fullStream`. */
    [Symbol.asyncIterator](): AsyncIterator<WorkflowStreamEvent>;
  }
  interface Memory {
    /** The thread's messages as UI messages, ready to render. */
    listMessages(args: { threadId: string; last?: number; before?: string; format: 'ui' }): Promise<UIMessage[]>;
    /** The thread's stored messages, oldest first. */
    listMessages(args: { threadId: string; last?: number; before?: string; format?: 'v2' }): Promise<StorageMessage[]>;
  }
}

/** The reference's `new Observability({ configs: { default: { serviceName, exporters, sampling } } })`, accepted as `observability`. */
export declare class Observability {
  constructor(config: { configs: Record<string, ObservabilityConfig> });
  readonly configs: Record<string, ObservabilityConfig>;
  /** The config in use: `default`, else the first. */
  getDefaultInstance(): ObservabilityConfig | undefined;
}
/** Posts each finished trace to an OTLP/HTTP collector as JSON (SPEC §16.5); a failed post is logged once and dropped. */
export declare class OtlpExporter implements TracingExporter {
  constructor(config: { url: string; headers?: Record<string, string>; serviceName?: string; timeoutMs?: number; maxBatchSize?: number });
  readonly name: 'otlp';
  exportTracingEvent(event: TracingEvent): void;
  /** Posts what is buffered; settles once every post so far was answered. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}
/**
 * Serves `agents` to pages that `connectAgent` from `wasm-agent/client` (SPEC §21.1). `target`:
 * a `MessagePort`, or by default this worker's global scope (a dedicated Worker's `self`, or
 * every port a SharedWorker is connected by). `close()` stops serving and aborts running runs.
 */
export declare function serveAgents(agents: Record<string, import('./wasm_agent.js').Agent>, target?: MessagePort | { postMessage(message: unknown): void; addEventListener(type: 'message', listener: (e: MessageEvent) => void): void }): { close(): void };
