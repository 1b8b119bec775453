//! The JavaScript face of the package: classes, option parsing and stream bridging. wasm32 only.

pub mod agent;
pub mod background;
#[cfg(feature = "processors")]
pub mod builtin_processors;
pub mod ai_sdk;
pub mod chunk_js;
pub mod convert;
pub mod delegation;
#[cfg(feature = "recall")]
pub mod embedders;
pub mod host;
pub mod input_step;
pub mod mastra;
pub mod options;
pub mod memory;
pub mod object_streams;
pub mod output;
pub mod processors;
pub mod registry;
pub mod report;
pub mod run;
pub mod scorers;
#[cfg(feature = "scorers")]
pub mod completion;
pub mod share;
#[cfg(feature = "tracing")]
pub mod span_handle;
pub mod stop;
pub mod structured;
pub mod suspend;
#[cfg(feature = "reconnect")]
pub mod reconnect;
pub mod resume;
pub mod tool_types;
pub mod tools;
#[cfg(feature = "tracing")]
pub mod tracing;
pub mod ui_messages;
pub mod unsupported;
#[cfg(feature = "watch")]
pub mod tabs;
#[cfg(feature = "watch")]
pub mod watch;
#[cfg(feature = "workflows")]
pub mod workflow;
#[cfg(feature = "workflows")]
mod workflow_ctx;
#[cfg(feature = "workflows")]
pub mod workflow_host;
#[cfg(feature = "workflows")]
mod workflow_live;
#[cfg(feature = "workflows")]
pub mod workflow_resume;
#[cfg(feature = "workflows")]
pub mod workflow_run;
#[cfg(feature = "workflows")]
pub mod workflow_storage;
#[cfg(feature = "workflows")]
mod workflow_tools;
#[cfg(feature = "workflows")]
mod workflow_types;

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** `'provider/model'`, e.g. `'openai/gpt-4o-mini'`, or an endpoint description. */
/** An AI SDK provider model (LanguageModelV2): the agent streams through its `doStream`. */
export interface LanguageModelLike {
  specificationVersion: string;
  provider: string;
  modelId: string;
  doStream(options: unknown): PromiseLike<{ stream: ReadableStream<unknown> }>;
}

export type ModelConfig =
  | LanguageModelLike
  | string
  | { id: string; url?: string; apiKey?: string; headers?: Record<string, string>; api?: 'chat' | 'responses' };

export type SystemInstructions = string | string[] | { role: 'system'; content: string } | { role: 'system'; content: string }[];

export interface AgentConfig {
  id: string;
  name?: string;
  description?: string;
  instructions?: SystemInstructions;
  model: ModelConfig;
  /** Model-call retries (default 0). */
  maxRetries?: number;
  defaultOptions?: StreamOptions;
  tools?: Record<string, Tool>;
  memory?: Memory;
  backgroundTasks?: BackgroundTasksConfig;
}

export type TextPart = { type: 'text'; text: string };
export type ImagePart = { type: 'image'; image: string | Uint8Array | ArrayBuffer; mediaType?: string };
export type FilePart = { type: 'file'; data: string | Uint8Array | ArrayBuffer; mediaType: string; filename?: string };
export type ToolCallPart = { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };
export type ToolResultPart = { type: 'tool-result'; toolCallId: string; toolName: string; output: unknown };
export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | (TextPart | ImagePart | FilePart)[] }
  | { role: 'assistant'; content: string | (TextPart | { type: 'reasoning'; text: string } | ToolCallPart)[] }
  | { role: 'tool'; content: ToolResultPart[] };
export type UIMessage = { id?: string; role: 'user' | 'assistant' | 'system'; parts: { type: string; [k: string]: unknown }[] };
export type MessageInput = string | string[] | ModelMessage | (ModelMessage | UIMessage)[];

export interface ModelSettings {
  temperature?: number;
  maxOutputTokens?: number;
  maxRetries?: number;
  topP?: number;
  topK?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  stopSequences?: string[];
  seed?: number;
  headers?: Record<string, string>;
}

/** `code` of a `StorageError` (on the error and on its `error` chunk): what kind of storage failure it is. */
export type StorageErrorCode = 'quota' | 'version' | 'blocked' | 'invalid-state' | 'not-found' | 'data' | 'aborted' | 'unknown';
export type FinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'abort' | 'tripwire' | 'suspended' | 'other';

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
}

export interface Warning { type: 'unsupported-setting' | 'other'; setting?: string; details?: string }

/** A JSON Schema object, or a Standard Schema value (zod 4 and others expose `~standard`). */
export type ToolInputSchema = Record<string, unknown> | { '~standard': { validate(value: unknown): unknown } };

export interface ToolWriter {
  /** Emits a `tool-output` chunk. */
  write(value: unknown): Promise<void>;
  /** Emits a `data-*` chunk as given; kept on the step's message unless `transient`. */
  custom(chunk: { type: `data-${string}`; data: unknown; id?: string; transient?: boolean }): Promise<void>;
}

export interface ToolExecutionContext {
  toolCallId: string;
  runId: string;
  agentId: string;
  threadId?: string;
  resourceId?: string;
  messages: ModelMessage[];
  /** Aborts when the run is aborted or its stream cancelled. */
  abortSignal: AbortSignal;
  requestContext?: unknown;
  writer: ToolWriter;
  /**
   * Suspends the call until `agent.resumeStream(resumeData, { runId, toolCallId })`: resolves
   * once the wait is stored. What `execute` returns or throws afterwards is ignored; a resume
   * runs `execute` again from the start with `resumeData` and `suspendPayload` set.
   */
  suspend: (payload: unknown, options?: { resumeSchema?: ToolInputSchema }) => Promise<void>;
  /** On a resume: the checked resume data (else undefined). */
  resumeData?: unknown;
  /** On a resume: the payload the call suspended with. */
  suspendPayload?: unknown;
  agent: {
    agentId: string; toolCallId: string; threadId?: string; resourceId?: string; messages: ModelMessage[];
    suspend: (payload: unknown, options?: { resumeSchema?: ToolInputSchema }) => Promise<void>;
    resumeData?: unknown; suspendPayload?: unknown;
  };
}

/** A run waiting for a decision, from `agent.listSuspendedRuns()`. */
export interface SuspendedRun {
  runId: string;
  status: 'suspended';
  threadId: string | null;
  resourceId: string | null;
  suspendedAt: string;
  toolCalls: Array<{ toolCallId: string; toolName: string; args: unknown; requiresApproval: boolean; suspendPayload?: unknown; resumeSchema?: string }>;
}

export interface Tool<Input = any, Output = unknown> {
  id?: string;
  description?: string;
  inputSchema?: ToolInputSchema;
  outputSchema?: ToolInputSchema;
  /** Absent only for client tools (`clientTools`), whose calls the page answers. */
  execute?: (input: Input, context: ToolExecutionContext) => Output | Promise<Output>;
  requireApproval?: boolean | ((input: Input) => boolean | Promise<boolean>);
  /** Run calls of this tool as background tasks (the agent needs `backgroundTasks`). */
  background?: { enabled?: boolean; timeoutMs?: number; maxRetries?: number };
  /** What `context.suspend(payload)` must pass (a mismatch fails the call). */
  suspendSchema?: ToolInputSchema;
  /** What the resume data must match (`ValidationError` from `resumeStream` otherwise). */
  resumeSchema?: ToolInputSchema;
}

export interface MemoryOptions {
  /** Earlier messages loaded into the prompt (default 10; false for none). */
  lastMessages?: number | false;
  /** Read the thread, never write it. */
  readOnly?: boolean;
  /** Leave tool calls without results out of the prompt (default true). */
  filterIncompleteToolCalls?: boolean;
  /** Working memory: notes shown in the system prompt, replaced by the agent's `updateWorkingMemory` tool. */
  workingMemory?: { enabled: boolean; template?: string; scope?: 'resource' | 'thread' };
  /** Title a new thread after its first exchange (the agent's model, or another). */
  generateTitle?: boolean | { model?: ModelConfig; instructions?: string };
}

export interface StorageThread {
  id: string;
  resourceId: string;
  title?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface StorageMessage {
  id: string;
  threadId: string;
  resourceId: string;
  role: 'user' | 'assistant' | 'system' | 'tool';
  createdAt: string;
  type: 'v2';
  content: { format: 2; parts: { type: string; [k: string]: unknown }[]; metadata?: { interrupted?: boolean; [k: string]: unknown } };
}

/** What `memory.watch` hands its listener (SPEC §21.2). */
export type MemoryEvent =
  | { type: 'messages-saved'; threadId: string; messages: StorageMessage[] }
  | { type: 'thread-updated'; thread: StorageThread }
  | { type: 'thread-deleted'; threadId: string }
  | { type: 'task-updated'; task: BackgroundTask }
  /** A chunk of a run streaming on the thread, in any tab (transient ones included; never stored). */
  | { type: 'chunk'; threadId: string; runId: string; chunk: ChunkType };

export interface StorageResource { id: string; workingMemory?: string; metadata?: Record<string, unknown> }

/**
 * What a storage object passed as `new Memory({ storage })` must do: each method takes one
 * object and may return a promise. Messages come back in time order (createdAt, then id).
 */
export interface StorageAdapter {
  getThreadById(args: { threadId: string }): Promise<StorageThread | null> | StorageThread | null;
  saveThread(args: { thread: StorageThread }): Promise<unknown> | unknown;
  /** Deletes the thread and its messages. */
  deleteThread(args: { threadId: string }): Promise<unknown> | unknown;
  listThreads(args: { resourceId: string }): Promise<StorageThread[]> | StorageThread[];
  /** `last`: only the newest n; `before`: only messages created before that ISO time. */
  listMessages(args: { threadId: string; last?: number; before?: string }): Promise<StorageMessage[]> | StorageMessage[];
  /** Creates or replaces each message by id. */
  saveMessages(args: { messages: StorageMessage[] }): Promise<unknown> | unknown;
  deleteMessages(args: { messageIds: string[] }): Promise<unknown> | unknown;
  getResource(args: { resourceId: string }): Promise<StorageResource | null> | StorageResource | null;
  saveResource(args: { resource: StorageResource }): Promise<unknown> | unknown;
  /** Optional: keep background tasks (without these three they live only in the page or isolate). */
  createTask?(args: { task: BackgroundTask }): Promise<unknown> | unknown;
  updateTask?(args: { id: string; patch: Omit<BackgroundTask, 'id'>; expectedStatus: BackgroundTaskStatus }): Promise<unknown> | unknown;
  listTasks?(args: { agentId?: string; threadId?: string; status?: BackgroundTaskStatus[] }): Promise<BackgroundTask[]> | BackgroundTask[];
  /**
   * Optional: keep suspended runs (SPEC §19.4), so a decision works after a reload or in another
   * process. Without all five they live only in the page or isolate (one console.warn says so).
   * `updateRun` must be an atomic compare-and-set on `expectedStatus`: `null` when the run is
   * absent or its status differs.
   */
  saveRun?(args: { run: RunRecord }): Promise<unknown> | unknown;
  getRun?(args: { runId: string }): Promise<RunRecord | null> | RunRecord | null;
  updateRun?(args: { runId: string; patch: Partial<RunRecord>; expectedStatus?: RunStatus }): Promise<RunRecord | null> | RunRecord | null;
  listRuns?(args: { agentId?: string; threadId?: string; resourceId?: string; status?: RunStatus | RunStatus[] }): Promise<RunRecord[]> | RunRecord[];
  deleteRun?(args: { runId: string }): Promise<unknown> | unknown;
  /**
   * Optional: the chunk log of reconnectable runs (SPEC §19.8). `appendRunChunks` gets one call
   * per batch (chunks with their `seq`; a `seq` written again replaces its chunk);
   * `listRunChunks` returns the chunks with `seq > after`, ascending, at most `limit`.
   */
  appendRunChunks?(args: { runId: string; chunks: ChunkType[] }): Promise<unknown> | unknown;
  listRunChunks?(args: { runId: string; after?: number; limit?: number }): Promise<ChunkType[]> | ChunkType[];
  deleteRunChunks?(args: { runId: string }): Promise<unknown> | unknown;
  /**
   * Optional: keep workflow snapshots (SPEC §20.5), so a suspended workflow run resumes after a
   * reload or in another process. Without the first five runs live only in the page or isolate
   * (one console.warn says so). `updateWorkflowState` must be an atomic compare-and-set on
   * `opts.expectedStatus`: `undefined` when the run is absent or its status differs.
   * `getWorkflowRunById` is optional (a loaded run's resourceId and times).
   */
  persistWorkflowSnapshot?(args: { workflowName: string; runId: string; resourceId?: string; snapshot: Record<string, any> }): Promise<unknown> | unknown;
  loadWorkflowSnapshot?(args: { workflowName: string; runId: string }): Promise<Record<string, any> | null> | Record<string, any> | null;
  updateWorkflowState?(args: { workflowName: string; runId: string; opts: { status: string; expectedStatus?: string } }): Promise<Record<string, any> | undefined> | Record<string, any> | undefined;
  listWorkflowRuns?(args: WorkflowRunsQuery): Promise<{ runs: StoredWorkflowRun[]; total: number }> | { runs: StoredWorkflowRun[]; total: number };
  getWorkflowRunById?(args: { runId: string; workflowName?: string }): Promise<StoredWorkflowRun | null> | StoredWorkflowRun | null;
  deleteWorkflowRunById?(args: { workflowName: string; runId: string }): Promise<unknown> | unknown;
  /**
   * Optional: semantic recall's vectors (SPEC §21.3). Records arrive normalised (length 1), so
   * cosine similarity is the dot product; `queryVectors` answers best first.
   */
  saveVectors?(args: { records: VectorRecord[] }): Promise<unknown> | unknown;
  queryVectors?(args: { vector: number[]; topK: number; resourceId?: string; threadId?: string; threshold?: number }): Promise<{ id: string; score: number }[]> | { id: string; score: number }[];
  /** Called by deleteThread too. */
  deleteVectors?(args: { threadId: string } | { ids: string[] }): Promise<unknown> | unknown;
}

/** A workflow run as a storage object keeps it (times in ms since the epoch). */
export interface StoredWorkflowRun {
  workflowName: string;
  runId: string;
  resourceId?: string;
  snapshot: Record<string, any>;
  createdAt: number;
  updatedAt: number;
}

/** `listWorkflowRuns`' argument to a storage object (`page` counts from 0). */
export interface WorkflowRunsQuery {
  workflowName?: string;
  resourceId?: string;
  status?: string;
  fromDate?: number;
  toDate?: number;
  perPage?: number;
  page?: number;
}

/** One message's vector (its id is the message id). */
export interface VectorRecord {
  id: string;
  threadId: string;
  resourceId: string;
  vector: number[];
}

/**
 * What embeds texts for semantic recall: a `'provider/model'` string with an embeddings endpoint
 * (OpenAI and compatible, Google, Mistral), the object form with `dimensions`, an AI SDK
 * `EmbeddingModel` (`doEmbed({ values })`), or a function.
 */
export type Embedder =
  | string
  | { id: string; url?: string; apiKey?: string; headers?: Record<string, string>; dimensions?: number }
  | { doEmbed(args: { values: string[] }): PromiseLike<{ embeddings: ArrayLike<number>[] }>; maxEmbeddingsPerCall?: number; [k: string]: unknown }
  | ((texts: string[]) => PromiseLike<ArrayLike<number>[]>);

export type RunStatus = 'running' | 'suspended' | 'resuming' | 'completed' | 'failed' | 'aborted';

/** A run as storage keeps it; `snapshot` is opaque JSON (versioned by `snapshot.v`). */
export interface RunRecord {
  runId: string;
  agentId: string;
  threadId: string | null;
  resourceId: string | null;
  status: RunStatus;
  createdAt: number;
  updatedAt: number;
  heartbeatAt?: number;
  waiting: Array<{ toolCallId: string; toolName: string; args: unknown; kind: 'approval' | 'suspension'; suspendPayload?: unknown; resumeSchema?: unknown }>;
  snapshot: unknown;
  /** The `seq` the run's chunks reached (SPEC §19.8): a resumed run numbers on from it. */
  lastSeq: number;
  /** A finished reconnectable run: when its chunk log and record go. */
  retainUntil?: number;
  /** A reconnectable run's `retainMs`: the run keeps a chunk log. */
  retainMs?: number;
}

export interface ListMessagesArgs {
  threadId: string;
  /** Only the newest n messages. */
  last?: number;
  /** Only messages created before this ISO time. */
  before?: string;
  /** 'ui': AI SDK v5 UI messages ready to render; default: the stored messages. */
  format?: 'ui' | 'v2';
}

export interface MemoryInit {
  /** Default: an IndexedDBStore where `indexedDB` exists, else an InMemoryStore. */
  storage?: InMemoryStore | IndexedDBStore | StorageAdapter;
  /** Embeds messages for `semanticRecall` (required with it); what is saved is indexed after each reply. */
  embedder?: Embedder;
  options?: MemoryOptions;
}

export type BackgroundTaskStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled' | 'timed_out';

/** `backgroundTasks` of an agent: which tool calls run in the background, and how many at once. */
export interface BackgroundTasksConfig {
  enabled?: boolean;
  globalConcurrency?: number;
  perAgentConcurrency?: number;
  /** When full: wait ('queue'), refuse ('reject'), or run in the foreground ('fallback-sync'). */
  backpressure?: 'queue' | 'reject' | 'fallback-sync';
  defaultTimeoutMs?: number;
  defaultRetries?: number;
  tools?: 'all' | Record<string, boolean | { enabled?: boolean; timeoutMs?: number }>;
}

export interface BackgroundTask {
  id: string;
  toolName: string;
  toolCallId: string;
  args: unknown;
  agentId: string;
  runId: string;
  threadId: string | null;
  resourceId: string | null;
  status: BackgroundTaskStatus;
  result: unknown;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  attempts: number;
}

export interface MastraConfig {
  agents?: Record<string, Agent>;
  /** Shared by the agents that do not configure their own `backgroundTasks`. */
  backgroundTasks?: BackgroundTasksConfig;
}

export type StopCondition = (options: { steps: StepResult[] }) => boolean | Promise<boolean>;
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'tool'; toolName: string };

export interface StreamOptions {
  /** Model calls per run (default 5). */
  maxSteps?: number;
  stopWhen?: StopCondition | StopCondition[];
  /** Tools added for this call, by set name. */
  toolsets?: Record<string, Record<string, Tool>>;
  /** Tools without execute: the run stops at their call with finish reason 'tool-calls'. */
  clientTools?: Record<string, Tool>;
  activeTools?: string[];
  toolChoice?: ToolChoice;
  /** Parallel tool calls of one step (default 10). */
  toolCallConcurrency?: number;
  /** Every call waits for `agent.approveToolCall` / `agent.declineToolCall`. */
  requireToolApproval?: boolean;
  prepareStep?: (options: { stepNumber: number; steps: StepResult[]; runId: string }) =>
    | { toolChoice?: ToolChoice; activeTools?: string[]; system?: SystemInstructions; modelSettings?: ModelSettings }
    | undefined
    | Promise<{ toolChoice?: ToolChoice; activeTools?: string[]; system?: SystemInstructions; modelSettings?: ModelSettings } | undefined>;
  onIterationComplete?: (context: {
    iteration: number; maxIterations: number; text: string; toolCalls: ToolCallPayload[]; toolResults: ToolResultPayload[];
    finishReason: FinishReason; isFinal: boolean; runId: string; agentId: string;
  }) => { continue?: boolean; feedback?: string } | void | Promise<{ continue?: boolean; feedback?: string } | void>;
  hooks?: {
    beforeToolCall?: (call: { toolCallId: string; toolName: string; args: unknown; input: unknown }) =>
      { proceed?: boolean; output?: unknown } | void | Promise<{ proceed?: boolean; output?: unknown } | void>;
    afterToolCall?: (call: { toolCallId: string; toolName: string; args: unknown; input: unknown; result?: unknown; error?: Error }) => void | Promise<void>;
  };
  /** Passed to every tool's `context.requestContext`. */
  requestContext?: unknown;
  /** The conversation this run belongs to (the agent needs a `memory`). */
  memory?: {
    thread: string | { id: string; title?: string; metadata?: Record<string, unknown> };
    resource: string;
    options?: MemoryOptions;
    onTitleGenerated?: (event: { threadId: string; title: string }) => void | Promise<void>;
  };
  /** Save the reply after each step instead of at the end. */
  savePerStep?: boolean;
  /**
   * Keep `fullStream` open until every background task of the thread ended and the agent
   * answered each result (needs `memory` and `backgroundTasks`; otherwise a plain stream).
   */
  untilIdle?: boolean | { maxIdleMs?: number };
  /**
   * End `fullStream` when the run suspends (a call waits for approval or resume data), with
   * finish reason 'suspended'; decide later with `approveToolCall` / `resumeStream`. Default
   * false: the stream stays open and a decision here continues it in place.
   */
  closeOnSuspend?: boolean;
  /**
   * Keep the run's chunks in a chunk log in storage (SPEC §19.8), for `agent.reconnectStream()`:
   * written in batches; cancelling `fullStream` then only detaches the reader (stop the run with
   * `abortSignal`). `retainMs` (default 1 hour): how long the log and the run record stay after
   * the run ended.
   */
  reconnectable?: boolean | { retainMs?: number };
  /**
   * With memory: the model may resume a suspended call of this agent on the thread by calling
   * the same tool with `resumeData` and `suspendedToolCallId` (listed in the system prompt);
   * the earlier run then ends completed. Approvals are never resumed this way.
   */
  autoResumeSuspendedTools?: boolean;
  instructions?: SystemInstructions;
  system?: SystemInstructions;
  /** Messages sent to the model before the input, never stored. */
  context?: ModelMessage[];
  modelSettings?: ModelSettings;
  /** Passed through to the provider, keyed by provider prefix (`openai`, `groq`, ...). */
  providerOptions?: Record<string, Record<string, unknown>>;
  runId?: string;
  includeRawChunks?: boolean;
  abortSignal?: AbortSignal;
  onChunk?: (chunk: ChunkType) => void;
  onStepFinish?: (step: StepResult) => void | Promise<void>;
  onFinish?: (output: FullOutput) => void | Promise<void>;
  onError?: (event: { error: Error }) => void | Promise<void>;
  onAbort?: (output: FullOutput) => void | Promise<void>;
}

export interface ToolCallPayload { toolCallId: string; toolName: string; args: unknown }
export interface ToolResultPayload { toolCallId: string; toolName: string; args: unknown; result: unknown; isError?: boolean }

export interface ResponseInfo { id?: string; modelId?: string; timestamp?: number; messages: ModelMessage[] }

export interface StepResult {
  text: string;
  reasoningText?: string;
  toolCalls: ToolCallPayload[];
  toolResults: ToolResultPayload[];
  finishReason: FinishReason;
  usage: Usage;
  warnings: Warning[];
  request: { body?: string };
  response: ResponseInfo;
}

export interface FullOutput {
  /** With `semanticRecall`: the older messages recalled into the prompt, in time order. */
  rememberedMessages?: StorageMessage[];
  runId: string;
  text: string;
  reasoningText?: string;
  finishReason: FinishReason;
  usage: Usage;
  totalUsage: Usage;
  steps: StepResult[];
  toolCalls: ToolCallPayload[];
  toolResults: ToolResultPayload[];
  warnings: Warning[];
  response: ResponseInfo;
  messages: ModelMessage[];
  error?: { name: string; message: string; status?: number; body?: string; code?: StorageErrorCode };
  /** `structuredOutput`: the validated value (absent with `errorStrategy: 'warn'` after a failure). */
  object?: any;
  /** `structuredOutput`: whether `object` is the `fallbackValue`. */
  usedFallbackValue?: boolean;
}

/**
 * `seq`: the chunk's number in its stream (SPEC §19.8), 1 for the run's first chunk, +1 for each
 * next one; set on every `fullStream` / `onChunk` chunk (a resumed run numbers on), absent on a
 * processor's `part` (not numbered yet). A delta joined for a reader that lagged carries its last part's.
 */
type Envelope<T extends string, P> = { type: T; seq?: number; runId: string; from: 'AGENT' | 'USER' | 'SYSTEM' | 'WORKFLOW'; payload: P };

export type ChunkType =
  | Envelope<'start', { messageId?: string }>
  | Envelope<'step-start', { messageId: string; request: { body?: string }; warnings: Warning[] }>
  | Envelope<'text-start' | 'text-end' | 'reasoning-start' | 'reasoning-end', { id: string }>
  | Envelope<'text-delta' | 'reasoning-delta', { id: string; text: string }>
  | Envelope<'tool-call-input-streaming-start', { toolCallId: string; toolName: string }>
  | Envelope<'tool-call-delta', { toolCallId: string; toolName: string; argsTextDelta: string }>
  | Envelope<'tool-call-input-streaming-end', { toolCallId: string }>
  | Envelope<'tool-call', ToolCallPayload>
  | Envelope<'tool-result', ToolResultPayload>
  | Envelope<'tool-error', ToolCallPayload & { error: { name: 'ToolError'; message: string } }>
  | Envelope<'tool-output', { toolCallId: string; toolName: string; output: unknown }>
  | Envelope<'tool-call-approval', ToolCallPayload & { resumeSchema: string; subAgent?: { agentId: string; toolName: string; runId: string; toolCallId: string } }>
  | Envelope<'tool-call-suspended', ToolCallPayload & { suspendPayload: unknown; resumeSchema?: string }>
  | Envelope<'tool-output-denied', ToolCallPayload & { approval: { id: string; approved: false; reason?: string } }>
  | { type: `data-${string}`; seq?: number; data: unknown; id?: string; transient?: boolean }
  | Envelope<'background-task-started', { taskId: string; toolName: string; toolCallId: string }>
  | Envelope<'background-task-running', { taskId: string; toolName: string; toolCallId: string; runId: string; agentId: string; startedAt: string; args: unknown }>
  | Envelope<'background-task-output', { taskId: string; toolName: string; toolCallId: string; payload: { type: 'tool-output'; runId: string; from: 'USER'; payload: { toolCallId: string; toolName: string; output: unknown } } }>
  | Envelope<'background-task-completed', { taskId: string; toolName: string; toolCallId: string; result: unknown; completedAt: string }>
  | Envelope<'background-task-failed', { taskId: string; toolName: string; toolCallId: string; error: { message: string }; completedAt: string }>
  | Envelope<'background-task-cancelled', { taskId: string; toolName: string; toolCallId: string; completedAt: string }>
  | Envelope<'background-task-progress', { taskIds: string[]; runningCount: number; elapsedMs: number }>
  | Envelope<'step-finish', {
      messageId: string;
      stepResult: { reason: FinishReason; isContinued: boolean; warnings: Warning[] };
      output: { text: string; toolCalls: ToolCallPayload[]; usage: Usage };
      metadata: { request: { body?: string }; id?: string; modelId?: string; timestamp?: number };
      totalUsage: Usage;
    }>
  | Envelope<'finish', { stepResult: { reason: FinishReason }; output: { usage: Usage }; totalUsage: Usage; metadata: { modelId?: string } }>
  | { type: 'object'; seq?: number; runId: string; from: 'AGENT'; object: any }
  | { type: 'object-result'; seq?: number; runId: string; from: 'AGENT'; object: any; metadata?: { fallback?: boolean } }
  | Envelope<'error', { error: { name: string; message: string; status?: number; body?: string; code?: StorageErrorCode | StructuredOutputErrorCode; id?: StructuredOutputErrorCode; details?: { value: string } } }>
  | Envelope<'abort', { reason?: string }>
  | Envelope<'tripwire', TripwirePayload>
  | Envelope<'raw', unknown>;
"#;
