// `wasm-agent/client`: the page side of an agent served by `serveAgents` in a Worker, a
// SharedWorker or on a MessagePort (SPEC §21.1). Loads no wasm; the types come from the package.
import type {
  AgentStreamOutput, BackgroundTask, BackgroundTaskStatus, ListMessagesArgs, MessageInput, StorageMessage, StorageThread, StreamOptions, UIMessage,
} from './index.js';

/** A tool that the worker's agent declares in `clientTools`, executed on the page. */
export interface PageTool {
  execute(input: any, context: { toolCallId?: string; runId?: string; abortSignal: AbortSignal }): unknown;
}

/** The output of a run in the worker: the streams, promises and ids of `AgentStreamOutput`. */
export type WorkerStreamOutput = Pick<
  AgentStreamOutput,
  'fullStream' | 'textStream' | 'runId' | 'traceId' | 'text' | 'reasoningText' | 'finishReason' | 'usage' | 'totalUsage' | 'toolCalls' | 'toolResults' | 'steps' | 'object' | 'warnings' | 'response' | 'getFullOutput' | 'consumeStream'
> & AsyncIterable<any>;

/** Options of a run from the page: data options cross by structured clone; only these functions run on the page. */
export type ClientStreamOptions = Omit<StreamOptions, 'prepareStep' | 'stopWhen' | 'hooks' | 'inputProcessors' | 'outputProcessors'>;

export interface ConnectedAgent {
  readonly name: string;
  stream(messages: MessageInput, options?: ClientStreamOptions): Promise<WorkerStreamOutput>;
  approveToolCall(args: { runId: string; toolCallId?: string } & ClientStreamOptions): Promise<WorkerStreamOutput>;
  declineToolCall(args: { runId: string; toolCallId?: string; reason?: string } & ClientStreamOptions): Promise<WorkerStreamOutput>;
  resumeStream(resumeData: unknown, options: { runId: string; toolCallId?: string } & ClientStreamOptions): Promise<WorkerStreamOutput>;
  /** As on the Agent, but a promise (the answer comes from the worker). */
  cancelBackgroundTask(taskId: string): Promise<boolean>;
  listBackgroundTasks(filter?: { threadId?: string; status?: BackgroundTaskStatus }): Promise<BackgroundTask[]>;
  memory: {
    listThreads(args: { resourceId: string }): Promise<StorageThread[]>;
    getThreadById(args: { threadId: string }): Promise<StorageThread | null>;
    listMessages(args: ListMessagesArgs): Promise<StorageMessage[] | UIMessage[]>;
    updateThread(args: { id: string; title?: string; metadata?: Record<string, unknown> }): Promise<StorageThread>;
    deleteThread(args: { threadId: string }): Promise<void>;
    /** Resolves to `unwatch()` once the worker's memory watches; rejects when its Memory has no `watch` (SPEC §21.2). */
    watch(filter: { threadId: string } | { resourceId: string }, listener: (event: any) => void): Promise<() => void>;
  };
}

/** The agent `name` of `serveAgents({ [name]: agent })` in `workerOrPort`. A worker that stops ends running streams with an `error` chunk (AbortError 'the agent worker stopped'). */
export declare function connectAgent(workerOrPort: Worker | SharedWorker | MessagePort, name: string, options?: { tools?: Record<string, PageTool> }): ConnectedAgent;
