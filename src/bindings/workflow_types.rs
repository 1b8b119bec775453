//! The TypeScript declarations of the workflow API (SPEC §20), beside wasm-bindgen's classes.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const WORKFLOW_TYPES: &'static str = r#"
/** A JSON Schema object or a Standard Schema value (zod and others). */
export type WorkflowSchema = Record<string, unknown> | { '~standard': { validate(value: unknown): unknown } };

export interface AgentConfig {
  /**
   * Committed workflows, each offered to the model as the tool `workflow-<key>` with the input
   * `{ inputData, initialState? }`; the model reads `{ result, runId }` or `{ error, runId }`, and
   * the run's events stream inside the agent's `fullStream` as `tool-output` chunks.
   *
   * A run that suspends suspends the call: `tool-call-suspended` carries a
   * {@link WorkflowToolSuspendPayload} and the step's `resumeSchema`, and
   * `agent.resumeStream(resumeData, { runId, toolCallId })` resumes that workflow run.
   * @example
   * const out = await agent.stream('Refund order 42', { closeOnSuspend: true })
   * // … tool-call-suspended: { suspendPayload: { workflow: 'refund', runId, suspended: [['approve']], payload } }
   * const resumed = await agent.resumeStream({ approved: true }, { runId: out.runId })
   */
  workflows?: Record<string, Workflow>;
}

/** The `suspendPayload` of a `workflow-<key>` call whose workflow run suspended. */
export interface WorkflowToolSuspendPayload {
  /** The key of the workflow in `config.workflows`. */
  workflow: string;
  /** The workflow run (resume it through the agent, or through `workflow.createRun({ runId })`). */
  runId: string;
  /** The suspended steps' paths; a resume goes to the first. */
  suspended: string[][];
  /** What the first suspended step passed to `suspend()`. */
  payload: unknown;
  /** Why the last `resumeData` was refused, when the workflow's own check refused it. */
  error?: string;
}

/** What a step's `execute`, a condition, a `map` function and a sleep function get. */
export interface StepContext<I = any, S = any> {
  inputData: I;
  state: S;
  setState(next: S): Promise<void>;
  resumeData?: unknown;
  suspendData?: unknown;
  suspend(payload?: unknown): Promise<void>;
  bail(result: unknown): Promise<void>;
  getStepResult(step: Step | string): any;
  getInitData(): any;
  writer: { write(output: unknown): Promise<void>; custom(chunk: { type: `data-${string}`; data: unknown; id?: string; transient?: boolean }): Promise<void> };
  abortSignal: AbortSignal;
  runId: string;
  workflowId: string;
  resourceId?: string;
  retryCount: number;
  /** Loop conditions: the iteration, from 1. */
  iterationCount?: number;
  requestContext?: unknown;
  mastra?: unknown;
}

export interface StepDefinition {
  id: string;
  description?: string;
  inputSchema?: WorkflowSchema;
  outputSchema?: WorkflowSchema;
  stateSchema?: WorkflowSchema;
  suspendSchema?: WorkflowSchema;
  resumeSchema?: WorkflowSchema;
  retries?: number;
  metadata?: Record<string, unknown>;
  execute(ctx: StepContext): unknown;
}

/** `createStep(agent, options)`: the options go to `agent.stream`. */
export type AgentStepOptions = StreamOptions;

export type StepCondition = (ctx: StepContext) => unknown;

export type MapSource =
  | { step: Step | Step[] | string; path?: string }
  | { value: unknown; schema?: WorkflowSchema }
  | { initData: unknown; path?: string }
  | { requestContextPath: string }
  | { fn: StepCondition };

export interface WorkflowConfig {
  id: string;
  description?: string;
  inputSchema?: WorkflowSchema;
  outputSchema?: WorkflowSchema;
  stateSchema?: WorkflowSchema;
  retryConfig?: { attempts?: number; delay?: number };
  options?: { validateInputs?: boolean; /** Check each step's output against its outputSchema (default false, as the reference). */ validateOutputs?: boolean; onFinish?: (result: WorkflowResult) => void; onError?: (info: { error: Error; result: WorkflowResult }) => void };
}

export interface WorkflowResumeOptions {
  /** The step to resume: a step, its id, `'inner.step'` or `['inner', 'step']`; omitted: the only suspended one. */
  step?: Step | string | (Step | string)[];
  resumeData?: unknown;
  outputOptions?: { includeState?: boolean };
}

export interface WorkflowRunQuery {
  status?: WorkflowRunStatus | 'pending';
  resourceId?: string;
  fromDate?: Date;
  toDate?: Date;
  perPage?: number;
  page?: number;
}

export interface WorkflowRunListEntry {
  workflowName: string;
  runId: string;
  resourceId?: string;
  snapshot: Record<string, any>;
  createdAt: Date;
  updatedAt: Date;
}

export interface WorkflowRunRecord {
  runId: string;
  workflowName: string;
  resourceId?: string;
  status: WorkflowRunStatus | 'pending';
  createdAt: Date;
  updatedAt: Date;
  result?: unknown;
  error?: { name: string; message: string } | null;
  payload: unknown;
  steps: Record<string, WorkflowStepRecord>;
  suspendedPaths: Record<string, string[]>;
  snapshot: Record<string, any>;
}

export interface WorkflowRunOptions {
  inputData?: unknown;
  initialState?: unknown;
  requestContext?: unknown;
  outputOptions?: { includeState?: boolean };
}

export type WorkflowRunStatus = 'running' | 'success' | 'failed' | 'suspended' | 'canceled' | 'tripwire';

export interface WorkflowStepRecord {
  status: 'running' | 'success' | 'failed' | 'suspended' | 'bailed';
  payload?: unknown;
  output?: unknown;
  error?: { name: string; message: string };
  suspendPayload?: unknown;
  resumePayload?: unknown;
  startedAt: number;
  endedAt?: number;
  suspendedAt?: number;
  resumedAt?: number;
  metadata?: Record<string, unknown>;
}

export interface WorkflowResult {
  status: Exclude<WorkflowRunStatus, 'running'>;
  input: unknown;
  steps: Record<string, WorkflowStepRecord>;
  runId: string;
  stepExecutionPath: string[];
  result?: any;
  error?: Error;
  /** Status `tripwire`: what the agent step's processor said when it stopped the run. */
  tripwire?: TripwirePayload;
  suspended?: string[][];
  suspendPayload?: Record<string, unknown>;
  state?: unknown;
}

/** One event of `run.stream()` (SPEC §20.4). */
export type WorkflowStreamEvent =
  | { type: `workflow-${string}`; runId: string; from: 'WORKFLOW' | 'USER'; payload: Record<string, any> }
  | { type: `data-${string}`; runId: string; from: 'WORKFLOW'; data: unknown; id?: string; transient?: boolean };
"#;
