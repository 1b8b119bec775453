// The public surface of wasm-agent/lite, shared by its runtime entries (which initialise the
// lite wasm first): the complete package's, without what the lite build leaves out
// (structured output, processors, the WebSocket transport, AI SDK model objects, Anthropic and
// Gemini; the options that need them are refused with a TypeError that says so).
import { AgentStreamOutput } from './wasm_agent.js';

// `for await (const chunk of output)` reads fullStream (as in ../api.js).
Object.defineProperty(AgentStreamOutput.prototype, Symbol.asyncIterator, {
  value: function () {
    return this.fullStream[Symbol.asyncIterator]();
  },
  configurable: true,
  writable: true,
});

export { Agent, AgentStreamOutput, createTool, stepCountIs, hasToolCall, Memory, InMemoryStore, IndexedDBStore, toAISdkStream, toAISdkV5Stream, Mastra } from './wasm_agent.js';

// The lite build leaves workflows out (the cargo feature `workflows`): these say so.
const noWorkflows = (name) => () => {
  throw new Error(`${name}: this build of wasm-agent leaves out workflows (wasm-agent/lite); import 'wasm-agent' for them`);
};
export const createStep = noWorkflows('createStep');
export const createWorkflow = noWorkflows('createWorkflow');
