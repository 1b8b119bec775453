// `wasm-agent/lite`'s types (pkg/lite/index.d.ts): the complete package's, for what it exports.
// Type-checked only, with api.ts (`node tests/types/run.mjs`).

import { Agent, createTool, Memory, InMemoryStore, toAISdkStream, type ChunkType, type StreamOptions } from 'wasm-agent/lite';
import { BatchPartsProcessor } from 'wasm-agent/lite';

const weather = createTool({
  id: 'weather',
  description: 'Current weather for a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } as const,
  execute: async ({ city }) => ({ city, temperatureC: 18 }),
});
const agent = new Agent({ id: 'widget', model: 'openai/gpt-4o-mini', tools: { weather }, memory: new Memory({ storage: new InMemoryStore() }) });
const options: StreamOptions = { maxSteps: 3, memory: { thread: 't', resource: 'r' } };

export async function lite(): Promise<string> {
  const out = await agent.stream('Weather in Paris?', options);
  for await (const chunk of out) {
    const typed: ChunkType = chunk;
    void typed;
  }
  void toAISdkStream(out);
  // @ts-expect-error lite has no processor classes: the name is a type there, not a value
  void BatchPartsProcessor;
  return out.text;
}
