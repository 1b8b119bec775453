// The public surface, shared by every runtime entry. The entries initialise the wasm first.
import { AgentStreamOutput } from './wasm_agent.js';

// `for await (const chunk of output)` reads fullStream. A symbol-named method cannot be
// declared from Rust, so it is added here.
Object.defineProperty(AgentStreamOutput.prototype, Symbol.asyncIterator, {
  value: function () {
    return this.fullStream[Symbol.asyncIterator]();
  },
  configurable: true,
  writable: true,
});

export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, Mastra, BatchPartsProcessor, TokenLimiterProcessor } from './wasm_agent.js';
export { TokenLimiterProcessor as TokenLimiter } from './wasm_agent.js';
export { UnicodeNormalizer } from './processors.js';
export { LanguageDetector, ModerationProcessor, PIIDetector, PromptInjectionDetector, SystemPromptScrubber } from './guard-processors.js';
