// The package's whole public surface, written as a TypeScript user would write it. Type-checked
// only (`node tests/types/run.mjs`), never run. Each `// @ts-expect-error` line is wrong usage that
// the types must reject; an unused one is an error too, so a type that got too loose shows up.

import {
  Agent,
  AgentStreamOutput,
  createTool,
  hasToolCall,
  IndexedDBStore,
  InMemoryStore,
  Memory,
  stepCountIs,
  toAISdkStream,
  toAISdkV5Stream,
  createStep,
  createWorkflow,
  BatchPartsProcessor,
  TokenLimiter,
  TokenLimiterProcessor,
  UnicodeNormalizer,
  createScorer,
  Mastra,
  ScorerError,
  type MastraScorer,
  type ScoreResult,
  type Processor,
  type TripwirePayload,
  type AISdkUIMessageChunk,
  type AgentConfig,
  type ChunkType,
  type FinishReason,
  type FromJSONSchema,
  type InferToolInput,
  type FullOutput,
  type MemoryOptions,
  type MessageInput,
  type ModelConfig,
  type ModelMessage,
  type StepResult,
  type StorageAdapter,
  type StorageMessage,
  type StorageResource,
  type StorageThread,
  type StreamOptions,
  type StructuredOutputErrorCode,
  type Tool,
  type ToolExecutionContext,
  type UIMessage,
  type Usage,
} from 'wasm-agent';
import { DurableObjectStore, type DurableObjectStorageLike } from 'wasm-agent/durable-object-store';
import { z } from 'zod';
// @ts-expect-error wasm-bindgen's loader types are internal: the entries initialise the wasm themselves
import type { InitOutput } from 'wasm-agent';

/** `true` when A and B are the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only for `true`: `check<Equal<X, Y>>()`. */
function check<T extends true>(): void {}

// ---------------------------------------------------------------------------------------------
// Models and agents

const modelString: ModelConfig = 'openai/gpt-4o-mini';
const modelEndpoint: ModelConfig = {
  id: 'openai/gpt-4o-mini',
  url: 'http://127.0.0.1:11434/v1',
  apiKey: 'none',
  headers: { 'x-team': 'docs' },
  api: 'chat',
};

const config: AgentConfig = {
  id: 'helper',
  name: 'Helper',
  description: 'Answers questions',
  instructions: ['Be concise.', 'Answer in English.'],
  model: modelEndpoint,
  maxRetries: 2,
  defaultOptions: { maxSteps: 3, modelSettings: { temperature: 0.2 } },
};
const agent = new Agent(config);
new Agent({ id: 'a', model: modelString, instructions: { role: 'system', content: 'Be brief.' } });
new Agent({ id: 'b', model: 'groq/llama-3.3-70b-versatile', instructions: [{ role: 'system', content: 'Be brief.' }] });
check<Equal<typeof agent.id, string>>();
check<Equal<typeof agent.name, string>>();

// @ts-expect-error a model is a string or an endpoint object, not a number
new Agent({ id: 'x', model: 5 });
// @ts-expect-error `id` is required
new Agent({ model: 'openai/gpt-4o-mini' });
// @ts-expect-error an endpoint needs its `id`
new Agent({ id: 'x', model: { url: 'http://127.0.0.1/v1' } });
// @ts-expect-error `api` is 'chat' or 'responses'
new Agent({ id: 'x', model: { id: 'openai/x', api: 'completions' } });
// @ts-expect-error the agent's id is read-only
agent.id = 'other';
// @ts-expect-error internal: how a Mastra container shares its background task manager
agent.__joinManager(1);
// @ts-expect-error internal: how an Agent finds its Memory
new Memory().__memoryId();
// @ts-expect-error internal: how a Memory finds its store
new InMemoryStore().__storeId();
const cancelled: boolean = agent.cancelBackgroundTask('task-1');
// @ts-expect-error a task id is a string
agent.cancelBackgroundTask(42);

// ---------------------------------------------------------------------------------------------
// Messages

const asString: MessageInput = 'Hello';
const asStrings: MessageInput = ['Hello', 'How are you?'];
const asModelMessages: MessageInput = [
  { role: 'system', content: 'Be brief.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'What is in this picture?' },
      { type: 'image', image: 'https://example.com/cat.png', mediaType: 'image/png' },
      { type: 'file', data: new Uint8Array([1, 2, 3]), mediaType: 'application/pdf', filename: 'a.pdf' },
    ],
  },
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'weather', input: { city: 'Paris' } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'weather', output: { temperatureC: 18 } }] },
];
const asUiMessages: MessageInput = [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Hi' }] }];
void [asString, asStrings, asModelMessages, asUiMessages];

// @ts-expect-error a role the model does not know
const badRole: MessageInput = [{ role: 'robot', content: 'beep' }];

// ---------------------------------------------------------------------------------------------
// Tools

const weather = createTool({
  id: 'weather',
  description: 'Current weather for a city',
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name' } },
    required: ['city'],
  },
  outputSchema: { type: 'object', properties: { temperatureC: { type: 'number' } } },
  execute: async ({ city }: { city: string }, context) => {
    check<Equal<typeof context, ToolExecutionContext>>();
    const signal: AbortSignal = context.abortSignal;
    const ids: string[] = [context.toolCallId, context.runId, context.agentId, context.agent.agentId];
    const thread: string | undefined = context.threadId ?? context.agent.threadId;
    const history: ModelMessage[] = context.messages;
    await context.writer.write({ status: 'looking up', city });
    await context.writer.custom({ type: 'data-weather-progress', data: { percent: 50 }, transient: true });
    void [signal, ids, thread, history];
    return { city, temperatureC: 18 };
  },
  requireApproval: (input: { city: string }) => input.city === 'Atlantis',
});
const weatherTool: Tool = weather;

const addTask = createTool({
  id: 'add-task',
  description: 'Add a task to the to-do list',
  inputSchema: z.object({
    title: z.string().min(1).describe('What to do'),
    due: z.iso.date().describe('Due date, YYYY-MM-DD'),
    priority: z.enum(['low', 'normal', 'high']).default('normal'),
  }),
  execute: async (task: { title: string; due: string; priority: 'low' | 'normal' | 'high' }) => ({ added: task.title }),
  requireApproval: true,
});

// `execute`'s input is inferred from `inputSchema`: a Standard Schema's output type (zod's z.infer,
// what its validate() hands over), or the type a JSON Schema literal describes.
createTool({
  id: 'forecast',
  description: 'Forecast for a city',
  inputSchema: z.object({ city: z.string(), days: z.number().int().optional(), unit: z.enum(['c', 'f']).default('c') }),
  execute: async (input) => {
    const city: string = input.city;
    const days: number | undefined = input.days;
    check<Equal<typeof input.unit, 'c' | 'f'>>();
    // @ts-expect-error city is a string
    const wrongCity: number = input.city;
    // @ts-expect-error no such field in the schema
    void input.town;
    return { city, days, wrongCity };
  },
  requireApproval: (input) => input.city === 'Atlantis',
});
createTool({
  id: 'forecast-json',
  description: 'Forecast for a city',
  inputSchema: {
    type: 'object',
    properties: {
      city: { type: 'string' },
      days: { type: 'integer' },
      unit: { enum: ['c', 'f'] },
      hours: { type: 'array', items: { type: 'number' } },
      detailed: { type: 'boolean' },
      where: { type: 'object', properties: { lat: { type: 'number' }, lon: { type: 'number' } }, required: ['lat', 'lon'] },
      note: { type: ['string', 'null'] },
    },
    required: ['city', 'unit'],
  },
  execute: async (input) => {
    check<
      Equal<
        typeof input,
        {
          city: string;
          unit: 'c' | 'f';
          days?: number;
          hours?: number[];
          detailed?: boolean;
          where?: { lat: number; lon: number };
          note?: string | null;
        }
      >
    >();
    return input.city;
  },
});
const citySchema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } as const;
const cityTool = createTool({
  id: 'city',
  description: 'x',
  inputSchema: citySchema,
  execute: async ({ city }) => city.toUpperCase(),
});
check<Equal<typeof cityTool, Tool<{ city: string }, string>>>();
createTool({
  id: 'city-wrong',
  description: 'x',
  inputSchema: citySchema,
  // @ts-expect-error the schema says city is a string
  execute: async (input: { city: number }) => input.city,
});
createTool({
  id: 'city-missing',
  description: 'x',
  inputSchema: z.object({ city: z.string() }),
  // @ts-expect-error the schema has no `town`
  execute: async ({ town }) => town,
});
// A schema whose shape is not known at compile time gives `any`, as before.
const looseSchema: Record<string, unknown> = { type: 'object' };
createTool({ id: 'loose', description: 'x', inputSchema: looseSchema, execute: async (input) => input.anything });
check<Equal<InferToolInput<Record<string, unknown>>, any>>();
check<Equal<FromJSONSchema<{ type: 'string'; enum: readonly ['a', 'b'] }>, 'a' | 'b'>>();
check<Equal<FromJSONSchema<{ type: 'array'; items: { type: 'integer' } }>, number[]>>();
check<Equal<InferToolInput<typeof citySchema>, { city: string }>>();

/** A client tool: no execute, the page answers its calls. */
const pickColor: Tool = { description: 'Ask the user to pick a colour', inputSchema: { type: 'object', properties: {} } };

// @ts-expect-error an input schema is an object (JSON Schema or Standard Schema), not a number
createTool({ id: 'bad', description: 'x', inputSchema: 5, execute: async () => 1 });
createTool({
  id: 'bad-writer',
  description: 'x',
  inputSchema: { type: 'object' },
  execute: async (_input: unknown, { writer }) => {
    // @ts-expect-error custom chunks are typed `data-…`
    await writer.custom({ type: 'progress', data: 1 });
  },
});

const agentWithTools = new Agent({ id: 'tools', model: modelString, tools: { weather, addTask } });

// ---------------------------------------------------------------------------------------------
// Memory and storage

/** A storage object of the kind a Worker builds over KV or D1: here, plain maps. */
class MapStorage implements StorageAdapter {
  threads = new Map<string, StorageThread>();
  messages = new Map<string, StorageMessage>();
  resources = new Map<string, StorageResource>();

  async getThreadById({ threadId }: { threadId: string }) {
    return this.threads.get(threadId) ?? null;
  }
  async saveThread({ thread }: { thread: StorageThread }) {
    this.threads.set(thread.id, thread);
    return thread;
  }
  async deleteThread({ threadId }: { threadId: string }) {
    this.threads.delete(threadId);
    for (const [id, m] of this.messages) if (m.threadId === threadId) this.messages.delete(id);
  }
  async listThreads({ resourceId }: { resourceId: string }) {
    return [...this.threads.values()].filter((t) => t.resourceId === resourceId);
  }
  async listMessages({ threadId, last, before }: { threadId: string; last?: number; before?: string }) {
    const all = [...this.messages.values()]
      .filter((m) => m.threadId === threadId && (before === undefined || m.createdAt < before))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    return last === undefined ? all : all.slice(-last);
  }
  async saveMessages({ messages }: { messages: StorageMessage[] }) {
    for (const m of messages) this.messages.set(m.id, m);
  }
  async deleteMessages({ messageIds }: { messageIds: string[] }) {
    for (const id of messageIds) this.messages.delete(id);
  }
  async getResource({ resourceId }: { resourceId: string }) {
    return this.resources.get(resourceId) ?? null;
  }
  async saveResource({ resource }: { resource: StorageResource }) {
    this.resources.set(resource.id, resource);
  }
}

/** Synchronous methods are allowed too. */
const syncStorage: StorageAdapter = {
  getThreadById: () => null,
  saveThread: () => undefined,
  deleteThread: () => undefined,
  listThreads: () => [],
  listMessages: () => [],
  saveMessages: () => undefined,
  deleteMessages: () => undefined,
  getResource: () => null,
  saveResource: () => undefined,
};

// @ts-expect-error a storage object needs every method (saveResource is missing)
const incompleteStorage: StorageAdapter = {
  getThreadById: () => null,
  saveThread: () => undefined,
  deleteThread: () => undefined,
  listThreads: () => [],
  listMessages: () => [],
  saveMessages: () => undefined,
  deleteMessages: () => undefined,
  getResource: () => null,
};

const memoryOptions: MemoryOptions = {
  lastMessages: 20,
  readOnly: false,
  filterIncompleteToolCalls: true,
  workingMemory: { enabled: true, template: '# Notes\n', scope: 'resource' },
  generateTitle: { model: 'openai/gpt-4o-mini', instructions: 'A short title' },
};
const memory = new Memory({ options: memoryOptions });
new Memory({ storage: new InMemoryStore() });
new Memory({ storage: new IndexedDBStore({ name: 'my-app' }) });
new Memory({ storage: new MapStorage(), options: { lastMessages: false } });
new Memory({ storage: syncStorage });
// The defaults: `new Memory()` (IndexedDB in a browser, else in memory) and `new IndexedDBStore()`
// (database "wasm-agent").
new Memory();
new IndexedDBStore();
// @ts-expect-error lastMessages is a number or false
new Memory({ options: { lastMessages: true } });
// @ts-expect-error storage is a store or a storage object
new Memory({ storage: 'indexeddb' });
void incompleteStorage;

async function memoryCalls() {
  const threads: StorageThread[] = await memory.listThreads({ resourceId: 'user-42' });
  const thread: StorageThread | null = await memory.getThreadById({ threadId: 't1' });
  const renamed: StorageThread = await memory.updateThread({ id: 't1', title: 'Taxes' });
  await memory.deleteThread('t1');
  const stored = await memory.listMessages({ threadId: 't1', last: 10 });
  // `format: 'ui'`: UI messages, ready to render.
  const ui = await memory.listMessages({ threadId: 't1', format: 'ui' });
  const partTypes: string[] = ui.flatMap((m) => m.parts.map((p) => p.type));
  void [threads, thread, renamed, stored, partTypes];
  // @ts-expect-error listThreads takes { resourceId }
  await memory.listThreads({ resource: 'user-42' });
}

const agentWithMemory = new Agent({ id: 'chat', model: modelString, memory, tools: { weather } });

// ---------------------------------------------------------------------------------------------
// Stream options

const controller = new AbortController();
const options: StreamOptions = {
  maxSteps: 4,
  stopWhen: [stepCountIs(3), hasToolCall('weather'), ({ steps }) => steps.some((s) => s.text.includes('done'))],
  toolsets: { extra: { weather } },
  clientTools: { pickColor },
  activeTools: ['weather'],
  toolChoice: { type: 'tool', toolName: 'weather' },
  toolCallConcurrency: 2,
  requireToolApproval: false,
  prepareStep: ({ stepNumber, steps, runId }) => {
    void [steps, runId];
    return stepNumber === 0 ? { toolChoice: 'required', activeTools: ['weather'] } : undefined;
  },
  onIterationComplete: ({ isFinal, finishReason }) => (isFinal || finishReason === 'stop' ? undefined : { continue: true, feedback: 'Go on.' }),
  hooks: {
    beforeToolCall: ({ toolName }) => (toolName === 'forbidden' ? { proceed: false, output: 'not allowed' } : undefined),
    afterToolCall: async ({ toolName, result, error }) => {
      void [toolName, result, error?.message];
    },
  },
  requestContext: { userId: 'user-42' },
  memory: {
    thread: { id: 't1', title: 'Taxes', metadata: { pinned: true } },
    resource: 'user-42',
    options: { lastMessages: 5 },
    onTitleGenerated: ({ threadId, title }) => void [threadId, title],
  },
  savePerStep: true,
  instructions: 'Replace the agent instructions.',
  system: ['Also this.'],
  context: [{ role: 'user', content: 'Background the model sees but memory never stores.' }],
  modelSettings: {
    temperature: 0.7,
    maxOutputTokens: 200,
    maxRetries: 1,
    topP: 0.9,
    topK: 40,
    presencePenalty: 0,
    frequencyPenalty: 0,
    stopSequences: ['END'],
    seed: 7,
    headers: { 'x-trace': '1' },
  },
  providerOptions: { openai: { reasoningEffort: 'low' } },
  runId: 'run-1',
  includeRawChunks: true,
  abortSignal: controller.signal,
  onChunk: (chunk) => {
    check<Equal<typeof chunk, ChunkType>>();
  },
  onStepFinish: (step) => {
    check<Equal<typeof step, StepResult>>();
  },
  onFinish: async (output) => {
    check<Equal<typeof output, FullOutput>>();
  },
  onError: ({ error }) => {
    const e: Error = error;
    void e;
  },
  onAbort: (output) => void output.steps.length,
};

// @ts-expect-error temperature is a number
const badSettings: StreamOptions = { modelSettings: { temperature: 'hot' } };
// @ts-expect-error toolChoice is 'auto' | 'none' | 'required' | { type: 'tool', toolName }
const badChoice: StreamOptions = { toolChoice: 'sometimes' };
// @ts-expect-error a run's memory needs its resource
const badMemory: StreamOptions = { memory: { thread: 't1' } };
const structured: StreamOptions = {
  structuredOutput: { schema: { type: 'array', items: { type: 'string' } }, errorStrategy: 'fallback', fallbackValue: [], jsonPromptInjection: 'inline', instructions: 'A list.' },
  output: { type: 'object' },
};
void structured;
// Options of the reference this version does not honour yet compile; each one given adds an
// `unsupported-setting` warning to the output's `warnings` (and the first step-start).
const referenceOptions: StreamOptions = {
  structuredOutput: { schema: z.object({ sentiment: z.enum(['positive', 'negative']) }), errorStrategy: 'warn' },
  versions: { agents: { helper: { status: 'published' } } },
  tracingOptions: { metadata: { userId: 'u1' }, tags: ['docs'] },
  telemetry: { isEnabled: true },
  closeOnSuspend: true,
  memory: { thread: 't1', resource: 'u1', options: { semanticRecall: { topK: 3, messageRange: 1 } } },
};
// @ts-expect-error errorStrategy is 'strict' | 'warn' | 'fallback'
const badStrategy: StreamOptions = { structuredOutput: { schema: { type: 'object' }, errorStrategy: 'loud' } };
void [badRole, badSettings, badChoice, badMemory, agentWithTools, referenceOptions, badStrategy];

// ---------------------------------------------------------------------------------------------
// The output

async function outputs() {
  // One argument is enough: the options are optional.
  const quick = await agent.stream('What is WebAssembly?');
  check<Equal<typeof quick, AgentStreamOutput>>();

  const out = await agentWithMemory.stream(['What is the weather in Paris?'], options);
  const runId: string = out.runId;

  const text: string = await out.text;
  // The WebSocket transport's handle, when the call asked for one.
  const socket = (await agent.stream('hi', { providerOptions: { openai: { transport: 'websocket', websocket: { closeOnFinish: false } } } })).transport;
  if (socket) {
    const kind: 'websocket' = socket.type;
    socket.close();
  }
  // @ts-expect-error over HTTP there is no transport: it may be undefined
  out.transport.close();
  const reasoning: string | undefined = await out.reasoningText;
  const reason: FinishReason = await out.finishReason;
  const usage: Usage = await out.usage;
  const total: number | undefined = (await out.totalUsage).totalTokens;
  const steps: StepResult[] = await out.steps;
  const calls = await out.toolCalls;
  const results = await out.toolResults;
  const response = await out.response;
  const warnings = await out.warnings;
  const object: unknown = await out.object;
  void [runId, text, reasoning, reason, usage, total, steps, object, warnings];
  // Structured output: the partials and elements as streams, the fallback flag, the chunks.
  for await (const partial of out.objectStream) void partial;
  for await (const element of out.elementStream) void element;
  const fellBack: boolean = out.usedFallbackValue;
  const fullObject: unknown = (await out.getFullOutput()).object;
  const code: StructuredOutputErrorCode = 'STRUCTURED_OUTPUT_TRUNCATED';
  void [fellBack, fullObject, code];
  void [calls[0]?.toolName, results[0]?.result, response.messages.length];

  // generate(): the same options, the getFullOutput() shape.
  const generated = await agent.generate('What is WebAssembly?', { maxSteps: 2, onFinish: (o) => void o.text });
  check<Equal<typeof generated, FullOutput>>();
  // @ts-expect-error generate() resolves to the output's data, not to streams
  void generated.fullStream;

  const full: FullOutput = await out.getFullOutput();
  const failed: string | undefined = full.error?.message;
  void failed;
  await out.consumeStream();

  // @ts-expect-error the promises are read-only
  out.text = Promise.resolve('');
  // @ts-expect-error outputs come from agent.stream(), not a constructor
  new AgentStreamOutput();
  // @ts-expect-error usage is an object, not a number
  const wrong: number = await out.usage;
  void wrong;
}

function describe(chunk: ChunkType): string {
  // Narrowing on `type` gives each chunk its payload.
  switch (chunk.type) {
    case 'start':
      return chunk.payload.messageId ?? '';
    case 'step-start':
      return chunk.payload.request.body ?? '';
    case 'text-delta':
    case 'reasoning-delta':
      return chunk.payload.text;
    case 'text-start':
    case 'text-end':
      return chunk.payload.id;
    case 'tool-call-input-streaming-start':
      return chunk.payload.toolName;
    case 'tool-call-delta':
      return chunk.payload.argsTextDelta;
    case 'tool-call':
      return `${chunk.payload.toolName}(${JSON.stringify(chunk.payload.args)})`;
    case 'tool-result':
      return `${chunk.payload.toolCallId}: ${String(chunk.payload.result)} ${chunk.payload.isError ? '(error)' : ''}`;
    case 'tool-error':
      return chunk.payload.error.message;
    case 'tool-output':
      return String(chunk.payload.output);
    case 'tool-call-approval':
      return chunk.payload.resumeSchema;
    case 'tool-output-denied':
      return chunk.payload.approval.reason ?? 'declined';
    case 'step-finish': {
      const reason: FinishReason = chunk.payload.stepResult.reason;
      const cont: boolean = chunk.payload.stepResult.isContinued;
      return `${reason} ${cont} ${chunk.payload.output.text} ${chunk.payload.totalUsage.totalTokens ?? 0}`;
    }
    case 'finish':
      return `${chunk.payload.stepResult.reason} ${chunk.payload.totalUsage.inputTokens ?? 0}`;
    case 'error':
      return `${chunk.payload.error.name}: ${chunk.payload.error.message} ${chunk.payload.error.status ?? ''}`;
    case 'abort':
      return chunk.payload.reason ?? 'aborted';
    case 'raw':
      return JSON.stringify(chunk.payload);
    default:
      break;
  }
  // Custom `data-…` chunks carry `data` at the top level.
  if ('data' in chunk) {
    const type: `data-${string}` = chunk.type;
    return `${type} ${JSON.stringify(chunk.data)} ${chunk.transient ?? false}`;
  }
  return chunk.type;
}

function wrongNarrowing(chunk: ChunkType) {
  if (chunk.type === 'text-delta') {
    // @ts-expect-error a text delta has no tool name
    void chunk.payload.toolName;
  }
  if (chunk.type === 'tool-call') {
    // @ts-expect-error a tool call's payload has no text
    void chunk.payload.text;
  }
  // @ts-expect-error no chunk has this type
  if (chunk.type === 'no-such-chunk') return;
}

async function reading(out: AgentStreamOutput) {
  // The output iterates its fullStream.
  for await (const chunk of out) describe(chunk);
  // The streams, read as async iterables or with a reader.
  for await (const chunk of out.fullStream) describe(chunk);
  // Every chunk's number in its stream (SPEC §19.8), data-* chunks included.
  let lastSeen = 0;
  for await (const chunk of out.fullStream) lastSeen = chunk.seq ?? lastSeen;
  // @ts-expect-error seq is a number
  const notText: string | undefined = (undefined as unknown as ChunkType).seq;
  void notText;
  void lastSeen;
  for await (const piece of out.textStream) render(piece);
  const reader = out.textStream.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    const piece: string = r.value;
    render(piece);
  }
  // A Worker's response: chunks as server-sent events.
  const encoder = new TextEncoder();
  const sse = out.fullStream.pipeThrough(
    new TransformStream<ChunkType, Uint8Array>({
      transform(chunk, c) {
        c.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
      },
    }),
  );
  return new Response(sse, { headers: { 'content-type': 'text/event-stream' } });
}

// ---------------------------------------------------------------------------------------------
// Reconnect (SPEC §19.8)

async function reconnecting() {
  const out = await agentWithTools.stream('Write a long story', { reconnectable: { retainMs: 60_000 } });
  await agentWithTools.stream('Again', { reconnectable: true });
  let lastSeen = 0;
  for await (const chunk of out.fullStream) {
    lastSeen = chunk.seq ?? lastSeen;
    break;
  }
  const again: AgentStreamOutput = await agentWithTools.reconnectStream({ runId: out.runId, after: lastSeen });
  const rest: string = await again.text;
  void rest;
  await agentWithTools.reconnectStream({ runId: out.runId });
  // @ts-expect-error retainMs is a number
  await agentWithTools.stream('x', { reconnectable: { retainMs: '1h' } });
  // @ts-expect-error a reconnect names its run
  await agentWithTools.reconnectStream({ after: 3 });
}
void reconnecting;

// ---------------------------------------------------------------------------------------------
// Approval

async function approval() {
  const out = await agentWithTools.stream('Add "file taxes" for 2025-04-15', { requireToolApproval: true });
  for await (const chunk of out.fullStream) {
    if (chunk.type !== 'tool-call-approval') continue;
    const { toolCallId } = chunk.payload;
    const decided: AgentStreamOutput =
      toolCallId.length > 3
        ? await agentWithTools.approveToolCall({ runId: out.runId, toolCallId })
        : await agentWithTools.declineToolCall({ runId: out.runId, toolCallId, reason: 'not now' });
    void decided;
  }
  // The only waiting call may go unnamed; a suspended one resumes with its data.
  await agentWithTools.approveToolCall({ runId: out.runId });
  const resumed = await agentWithTools.resumeStream({ pin: '1234' }, { runId: out.runId, toolCallId: 'call_1', closeOnSuspend: true });
  const payload: unknown = await resumed.suspendPayload;
  void payload;
  const { runs, total } = await agentWithTools.listSuspendedRuns({ threadId: 't1' });
  const n: number = total + runs.length + runs[0].toolCalls.length;
  void n;
  // @ts-expect-error a decision names its run
  agentWithTools.approveToolCall({ toolCallId: 'call_1' });
}

// ---------------------------------------------------------------------------------------------
// The AI SDK UI message stream, and memory in a Durable Object

async function aiSdk() {
  const out = await agent.stream('Hello');
  const ui: ReadableStream<AISdkUIMessageChunk> = toAISdkStream(out, { from: 'agent' });
  const reader = ui.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    if (r.value.type === 'text-delta') render(r.value.delta);
    if (r.value.type === 'tool-output-error') render(r.value.errorText);
    if (r.value.type === 'tool-input-error') render(`${r.value.toolName}: ${r.value.errorText}`);
    if (r.value.type === 'finish' && r.value.finishReason === 'length') render('(cut short)');
  }
  toAISdkStream(await agent.stream('Hi'), { sendFinishReason: false });
  // @ts-expect-error sendFinishReason is a boolean
  toAISdkStream(out, { sendFinishReason: 'no' });
  // Options are optional; a fullStream works as well.
  toAISdkStream(await agent.stream('Hi'));
  toAISdkV5Stream((await agent.stream('Hi')).fullStream);
  // @ts-expect-error 'agent' and 'workflow' are the sources
  toAISdkStream(out, { from: 'network' });
  // @ts-expect-error includeTextStreamParts is a boolean
  toAISdkStream(out, { from: 'workflow', includeTextStreamParts: 'yes' });
}

async function workflowToUi() {
  const step = createStep({ id: 'one', execute: async ({ inputData, suspend }) => (inputData ? inputData : suspend({ why: 'no input' })) });
  const wf = createWorkflow({ id: 'wf' }).then(step).commit();
  const run = await wf.createRun();
  const ui: ReadableStream<AISdkUIMessageChunk> = toAISdkStream(run.stream({ inputData: {} }), { from: 'workflow', includeTextStreamParts: false });
  toAISdkStream(run.observeStream().fullStream, { from: 'workflow' });
  const restarted = await (await wf.createRun({ runId: run.runId })).restart();
  void (restarted.status satisfies 'success' | 'failed' | 'suspended' | 'canceled' | 'tripwire');
  return ui;
}

function durableObject(storage: DurableObjectStorageLike) {
  const store = new DurableObjectStore(storage);
  const adapter: StorageAdapter = store;
  return new Agent({ id: 'do', model: modelString, memory: new Memory({ storage: adapter }) });
}

async function processors() {
  const redact: Processor = {
    id: 'redact',
    processInput: ({ messages, state }) => {
      state.seen = messages.length;
      return messages;
    },
  };
  const guard: Processor = {
    id: 'guard',
    async processOutputStream({ part, abort, writer }) {
      if (part.type === 'text-delta' && part.payload.text.includes('x')) abort('no x', { retry: false, metadata: { at: part.payload.id } });
      if (part.type === 'text-start') await writer.custom({ type: 'data-note', data: 1 });
      return part.type === 'reasoning-delta' ? null : part;
    },
    processOutputStep: ({ text, retryCount, abort }) => {
      if (text === '' && retryCount < 2) abort('empty', { retry: true });
    },
  };
  const agent = new Agent({
    id: 'guarded',
    model: modelString,
    inputProcessors: [redact, new UnicodeNormalizer({ trim: false }), new TokenLimiterProcessor(1000)],
    outputProcessors: [guard, new BatchPartsProcessor({ batchSize: 3 }), new TokenLimiter({ limit: 50, strategy: 'abort' })],
    maxProcessorRetries: 2,
  });
  const out = await agent.stream('Hi', { outputProcessors: [] });
  const trip: TripwirePayload | undefined = out.tripwire;
  const reason: FinishReason = 'tripwire';
  for await (const c of out.fullStream) if (c.type === 'tripwire') void (c.payload.processorId satisfies string);
  const full = await out.getFullOutput();
  void [trip, reason, full.tripwire?.reason];
  // @ts-expect-error a processor needs an id
  const noId: Processor = { processInput: () => undefined };
  // @ts-expect-error strategy is 'truncate' or 'abort'
  new TokenLimiterProcessor({ limit: 5, strategy: 'drop' });
  void noId;
}

async function scorers() {
  const judge = { model: modelString, instructions: 'You grade answers.' };
  const relevance: MastraScorer = createScorer({ id: 'relevance', description: 'Is the answer on topic?', judge })
    .preprocess(({ run }) => String(run.output))
    .analyze({ description: 'claims', outputSchema: { type: 'object', properties: { claims: { type: 'array' } } }, createPrompt: ({ results }) => `Claims of ${results.preprocessStepResult}` })
    .generateScore({ description: 'score', createPrompt: () => 'Score it', calculateScore: ({ analyzeStepResult }) => (analyzeStepResult.score as number) * 2 })
    .generateReason(({ score }) => `score ${score}`);
  const result = await relevance.run({ input: 'q', output: 'a' });
  void (result.score satisfies number);
  const agent = new Agent({ id: 'scored', model: modelString, scorers: { relevance: { scorer: relevance, sampling: { type: 'ratio', rate: 0.25 } } } });
  new Mastra({ agents: { agent }, scorers: { relevance }, storage: { saveScore: async (row) => void row } });
  const out = await agent.stream('Hi', { scorers: { byId: { scorer: 'relevance' } }, returnScorerData: true });
  const scores: ScoreResult[] = await out.scores;
  const full = await out.getFullOutput();
  void [scores, full.scoringData?.input.inputMessages, new ScorerError('x') instanceof Error];
  // @ts-expect-error rate is a number
  await agent.stream('Hi', { scorers: { a: { scorer: relevance, sampling: { type: 'ratio', rate: 'half' } } } });
  // @ts-expect-error a scorer needs its description
  createScorer({ id: 'x' });
  // isTaskComplete (SPEC §15) and scores in InMemoryStore.
  await agent.stream('Hi', {
    isTaskComplete: {
      scorers: [relevance],
      strategy: 'any',
      parallel: false,
      timeout: 5000,
      suppressFeedback: true,
      onComplete: (r) => void [r.complete, r.scorers[0]?.passed, r.totalDuration satisfies number],
    },
  });
  // @ts-expect-error strategy is 'all' or 'any'
  await agent.stream('Hi', { isTaskComplete: { scorers: [relevance], strategy: 'most' } });
  const store = new InMemoryStore();
  const rows = await store.listScores({ runId: 'r1' });
  void [rows[0]?.score satisfies number | undefined, (await store.saveScore({ scorerId: 's' })).score.id];
  const idb = new IndexedDBStore({ name: 'scores' });
  void [(await idb.listScores({ scorerId: 's' }))[0]?.createdAt satisfies string | undefined, (await idb.saveScore({ scorerId: 's', score: 1 })).score.id];
  // @ts-expect-error a row is an object
  await idb.saveScore('row');
}

void [cancelled, weatherTool, memoryCalls, outputs, wrongNarrowing, reading, approval, aiSdk, durableObject, processors, scorers, workflowToUi];
