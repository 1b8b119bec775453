import type { ChunkType, RunRecord, RunStatus, StoredWorkflowRun, WorkflowRunsQuery, ScoreFilter, ScoreRow, StorageAdapter, StorageMessage, StorageResource, StorageThread, VectorRecord } from './wasm_agent.js';

/** The part of a Durable Object's `state.storage` (`DurableObjectStorage`) this store uses. */
export interface DurableObjectStorageLike {
  get(key: string): Promise<unknown>;
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(key: string, value: unknown): Promise<void>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  list(options?: { prefix?: string; start?: string; end?: string; reverse?: boolean; limit?: number }): Promise<Map<string, unknown>>;
}

/**
 * Conversation memory in Durable Object storage:
 * `new Memory({ storage: new DurableObjectStore(this.state.storage) })`.
 * `listMessages({ last: n })` reads only n records.
 */
export declare class DurableObjectStore implements StorageAdapter {
  constructor(storage: DurableObjectStorageLike);
  readonly storage: DurableObjectStorageLike;
  getThreadById(args: { threadId: string }): Promise<StorageThread | null>;
  saveThread(args: { thread: StorageThread }): Promise<void>;
  /** Deletes the thread, its index entry and all its messages. */
  deleteThread(args: { threadId: string }): Promise<void>;
  /** Most recently updated first. */
  listThreads(args: { resourceId: string }): Promise<StorageThread[]>;
  /** Time order. `last`: only the newest n; `before`: only messages created before that ISO time. */
  listMessages(args: { threadId: string; last?: number; before?: string }): Promise<StorageMessage[]>;
  /** Creates or replaces each message by id. */
  saveMessages(args: { messages: StorageMessage[] }): Promise<void>;
  deleteMessages(args: { messageIds: string[] }): Promise<void>;
  getResource(args: { resourceId: string }): Promise<StorageResource | null>;
  saveResource(args: { resource: StorageResource }): Promise<void>;
  /** Suspended runs (SPEC §19.4), under `run:<runId>`; `updateRun` is a compare-and-set. */
  saveRun(args: { run: RunRecord }): Promise<void>;
  getRun(args: { runId: string }): Promise<RunRecord | null>;
  updateRun(args: { runId: string; patch: Partial<RunRecord>; expectedStatus?: RunStatus }): Promise<RunRecord | null>;
  listRuns(args?: { agentId?: string; threadId?: string; resourceId?: string; status?: RunStatus | RunStatus[] }): Promise<RunRecord[]>;
  deleteRun(args: { runId: string }): Promise<void>;
  /** A reconnectable run's chunk log (SPEC §19.8): one call per batch; idempotent by `seq`. */
  appendRunChunks(args: { runId: string; chunks: ChunkType[] }): Promise<void>;
  /** The logged chunks with `seq > after`, ascending. */
  listRunChunks(args: { runId: string; after?: number; limit?: number }): Promise<ChunkType[]>;
  deleteRunChunks(args: { runId: string }): Promise<void>;
  /** Workflow snapshots (SPEC §20.5), under `wfrun:<workflowName>:<runId>`; `updateWorkflowState` is a compare-and-set. */
  persistWorkflowSnapshot(args: { workflowName: string; runId: string; resourceId?: string; snapshot: Record<string, any> }): Promise<void>;
  loadWorkflowSnapshot(args: { workflowName: string; runId: string }): Promise<Record<string, any> | null>;
  updateWorkflowState(args: { workflowName: string; runId: string; opts: { status: string; expectedStatus?: string } }): Promise<Record<string, any> | undefined>;
  listWorkflowRuns(args?: WorkflowRunsQuery): Promise<{ runs: StoredWorkflowRun[]; total: number }>;
  getWorkflowRunById(args: { runId: string; workflowName?: string }): Promise<StoredWorkflowRun | null>;
  deleteWorkflowRunById(args: { workflowName: string; runId: string }): Promise<void>;
  /** A scorer's row (SPEC §14.2) under `score:<createdAt>:<id>`; `id` and `createdAt` are added when absent. */
  saveScore(row: Record<string, unknown>): Promise<{ score: ScoreRow }>;
  /** Stored scores in time order, matching every filter given. */
  listScores(filter?: ScoreFilter): Promise<ScoreRow[]>;
  /** Semantic recall's vectors (SPEC §21.3), under `vec:<threadId>:<messageId>` as Float32Arrays. */
  saveVectors(args: { records: VectorRecord[] }): Promise<void>;
  /** Cosine top-K within the thread or the resource's threads, best first. */
  queryVectors(args: { vector: number[]; topK: number; resourceId?: string; threadId?: string; threshold?: number }): Promise<{ id: string; score: number }[]>;
  deleteVectors(args: { threadId: string } | { ids: string[] }): Promise<void>;
}
