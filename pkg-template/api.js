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

// A workflow step's ctx, made in one call from the wasm (a boundary call per property was a
// fifth of a trivial step's engine time). `c` is the step's controls; its methods throw once the
// step has ended.
globalThis[Symbol.for('wasm-agent.stepContext')] = function (c, inputData, state, resumeData, suspendData, retryCount, iterationCount, runId, workflowId, resourceId, abortSignal, requestContext, mastra) {
  const ctx = { inputData, state, resumeData, suspendData, retryCount };
  if (iterationCount !== undefined) ctx.iterationCount = iterationCount;
  ctx.runId = runId;
  ctx.workflowId = workflowId;
  ctx.resourceId = resourceId;
  ctx.abortSignal = abortSignal;
  ctx.requestContext = requestContext;
  ctx.mastra = mastra;
  ctx.writer = { write: (output) => c.write(output), custom: (chunk) => c.custom(chunk) };
  ctx.setState = (next) => c.setState(next);
  ctx.suspend = (payload) => c.suspend(payload);
  ctx.bail = (result) => c.bail(result);
  ctx.getStepResult = (step) => c.getStepResult(step);
  ctx.getInitData = () => c.getInitData();
  return ctx;
};

export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, toAISdkMessages, toAISdkV5Messages, Mastra, BatchPartsProcessor, TokenLimiterProcessor, createStep, createWorkflow, Step, Workflow, Run, WorkflowRunOutput } from './wasm_agent.js';
export { TokenLimiterProcessor as TokenLimiter } from './wasm_agent.js';
export { UnicodeNormalizer } from './processors.js';
export { createScorer, MastraScorer, ScorerError } from './scorers.js';
export { Observability, OtlpExporter } from './tracing.js';
export { SpanHandle } from './wasm_agent.js';
export { LanguageDetector, ModerationProcessor, PIIDetector, PromptInjectionDetector, SystemPromptScrubber } from './guard-processors.js';
export { serveAgents } from './serve-agents.js';
