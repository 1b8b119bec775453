// The public surface, shared by every runtime entry. The entries initialise the wasm first.
import { AgentStreamOutput, WorkflowRunOutput } from './wasm_agent.js';

// `for await (const chunk of output)` reads fullStream. A symbol-named method cannot be
// declared from Rust, so it is added here.
Object.defineProperty(AgentStreamOutput.prototype, Symbol.asyncIterator, {
  value: function () {
    return this.fullStream[Symbol.asyncIterator]();
  },
  configurable: true,
  writable: true,
});
// `for await (const event of run.stream(...))` reads the run's fullStream the same way.
Object.defineProperty(WorkflowRunOutput.prototype, Symbol.asyncIterator, {
  value: function () {
    return this.fullStream[Symbol.asyncIterator]();
  },
  configurable: true,
  writable: true,
});

/** A request context (a Map, as the reference's RequestContext); each delegated run gets a copy. */
export class RequestContext extends Map {}
// The wasm makes those copies; it finds the class here (this module runs before the wasm loads).
globalThis[Symbol.for('wasm-agent.RequestContext')] = RequestContext;

export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, toAISdkMessages, toAISdkV5Messages, Mastra, BatchPartsProcessor, TokenLimiterProcessor, createStep, createWorkflow, Step, Workflow, Run, WorkflowRunOutput } from './wasm_agent.js';
export { TokenLimiterProcessor as TokenLimiter } from './wasm_agent.js';
export { UnicodeNormalizer } from './processors.js';
export { createScorer, MastraScorer, ScorerError } from './scorers.js';
export { Observability, OtlpExporter } from './tracing.js';
export { SpanHandle } from './wasm_agent.js';
export { LanguageDetector, ModerationProcessor, PIIDetector, PromptInjectionDetector, SystemPromptScrubber } from './guard-processors.js';
export { serveAgents } from './serve-agents.js';
