// `wasm-agent/ui`: the AI SDK UI helpers (the reference ships them in `@mastra/ai-sdk/ui`). The
// same functions as the main entry, from the same module instance.
export { toAISdkMessages, toAISdkV5Messages, toAISdkStream, toAISdkV5Stream } from './index.js';
