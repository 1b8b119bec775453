// What the examples (examples/cli.mjs, examples/worker/*.js, examples/vite-app/main.js) use from
// their runtimes that TypeScript's es2022 + dom libs do not declare. Neither @types/node nor
// @cloudflare/workers-types is installed, so the few pieces they touch are declared here (used
// only by tsconfig.examples.json; tests/types/ambient.d.ts is the README's smaller `process`).

// ---- Node (examples/cli.mjs) -----------------------------------------------------------------

interface NodeWriteStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  hasColors?(): boolean;
  write(text: string): boolean;
  on(event: 'error', listener: (err: Error & { code?: string }) => void): this;
}

interface NodeReadStream extends AsyncIterable<string> {
  readonly isTTY?: boolean;
  setEncoding(encoding: string): this;
}

declare const process: {
  readonly env: Record<string, string | undefined>;
  readonly argv: string[];
  exitCode: number | undefined;
  readonly stdin: NodeReadStream;
  readonly stdout: NodeWriteStream;
  readonly stderr: NodeWriteStream;
  exit(code?: number): never;
  on(event: 'SIGINT' | 'SIGTERM', listener: (signal: 'SIGINT' | 'SIGTERM') => void): unknown;
  off(event: 'SIGINT' | 'SIGTERM', listener: (signal: 'SIGINT' | 'SIGTERM') => void): unknown;
};

/** Node's timers return an object (`unref()` lets the process exit while it is pending). */
interface NodeTimeout {
  unref(): this;
  ref(): this;
  [Symbol.toPrimitive](): number;
}
declare function setTimeout(callback: () => void, ms?: number): NodeTimeout;
declare function setInterval(callback: () => void, ms?: number): NodeTimeout;
declare function clearInterval(timer: NodeTimeout | number | undefined): void;

// readFileSync: pkg/index.node.js (which examples/cli.mjs imports by path) reads the wasm with it.
declare module 'node:fs' {
  export function realpathSync(path: string): string;
  export function readFileSync(path: string | URL): Uint8Array;
}

declare module 'node:url' {
  export function fileURLToPath(url: string | URL): string;
}

// ---- Cloudflare Workers (examples/worker/worker.js) ------------------------------------------

interface DurableObjectId {
  toString(): string;
  readonly name?: string;
}

interface DurableObjectStub {
  readonly id: DurableObjectId;
  fetch(input: Request | string | URL, init?: RequestInit): Promise<Response>;
}

interface DurableObjectNamespace {
  idFromName(name: string): DurableObjectId;
  idFromString(id: string): DurableObjectId;
  newUniqueId(): DurableObjectId;
  get(id: DurableObjectId): DurableObjectStub;
}

/** The part of `state.storage` the package's DurableObjectStore uses (and a little more). */
interface DurableObjectStorage {
  get(key: string): Promise<unknown>;
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(key: string, value: unknown): Promise<void>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  list(options?: { prefix?: string; start?: string; end?: string; reverse?: boolean; limit?: number }): Promise<Map<string, unknown>>;
  deleteAll(): Promise<void>;
}

interface DurableObjectState {
  readonly id: DurableObjectId;
  readonly storage: DurableObjectStorage;
  waitUntil(promise: Promise<unknown>): void;
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T>;
}

interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
  passThroughOnException(): void;
}
