//! The JavaScript face of the package: classes, option parsing and stream bridging. wasm32 only.

pub mod agent;
pub mod chunk_js;
pub mod convert;
pub mod host;
pub mod output;
pub mod run;
pub mod tools;

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** `'provider/model'`, e.g. `'openai/gpt-4o-mini'`, or an endpoint description. */
export type ModelConfig =
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

export type FinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'abort' | 'other';

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
}

export interface Warning { type: 'unsupported-setting' | 'other'; setting?: string; details?: string }

export interface StreamOptions {
  instructions?: SystemInstructions;
  system?: SystemInstructions;
  /** Messages sent to the model before the input, never stored. */
  context?: ModelMessage[];
  modelSettings?: ModelSettings;
  /** Passed through to the provider, keyed by provider prefix (`openai`, `groq`, ...). */
  providerOptions?: Record<string, Record<string, unknown>>;
  maxSteps?: number;
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

export interface ResponseInfo { id?: string; modelId?: string; timestamp?: number; messages: ModelMessage[] }

export interface StepResult {
  text: string;
  reasoningText?: string;
  toolCalls: ToolCallPayload[];
  toolResults: unknown[];
  finishReason: FinishReason;
  usage: Usage;
  warnings: Warning[];
  request: { body?: string };
  response: ResponseInfo;
}

export interface FullOutput {
  runId: string;
  text: string;
  reasoningText?: string;
  finishReason: FinishReason;
  usage: Usage;
  totalUsage: Usage;
  steps: StepResult[];
  toolCalls: ToolCallPayload[];
  toolResults: unknown[];
  warnings: Warning[];
  response: ResponseInfo;
  messages: ModelMessage[];
  error?: { name: string; message: string; status?: number; body?: string };
}

type Envelope<T extends string, P> = { type: T; runId: string; from: 'AGENT' | 'USER' | 'SYSTEM' | 'WORKFLOW'; payload: P };

export type ChunkType =
  | Envelope<'start', { messageId?: string }>
  | Envelope<'step-start', { messageId: string; request: { body?: string }; warnings: Warning[] }>
  | Envelope<'text-start' | 'text-end' | 'reasoning-start' | 'reasoning-end', { id: string }>
  | Envelope<'text-delta' | 'reasoning-delta', { id: string; text: string }>
  | Envelope<'tool-call-input-streaming-start', { toolCallId: string; toolName: string }>
  | Envelope<'tool-call-delta', { toolCallId: string; toolName: string; argsTextDelta: string }>
  | Envelope<'tool-call-input-streaming-end', { toolCallId: string }>
  | Envelope<'tool-call', ToolCallPayload>
  | Envelope<'step-finish', {
      messageId: string;
      stepResult: { reason: FinishReason; isContinued: boolean; warnings: Warning[] };
      output: { text: string; toolCalls: ToolCallPayload[]; usage: Usage };
      metadata: { request: { body?: string }; id?: string; modelId?: string; timestamp?: number };
      totalUsage: Usage;
    }>
  | Envelope<'finish', { stepResult: { reason: FinishReason }; output: { usage: Usage }; totalUsage: Usage; metadata: { modelId?: string } }>
  | Envelope<'error', { error: { name: string; message: string; status?: number; body?: string } }>
  | Envelope<'abort', { reason?: string }>
  | Envelope<'raw', unknown>;
"#;
