//! The TypeScript face of `createTool`: its declaration infers what `execute` receives from the
//! tool's `inputSchema` (a Standard Schema such as zod, or a JSON Schema literal), which the
//! signature wasm-bindgen would write (`createTool(tool: Tool): Tool`) cannot. Types only: the
//! function itself is `tools::create_tool`, declared with `skip_typescript`.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_CREATE_TOOL: &'static str = r#"
/**
 * The TypeScript type a JSON Schema literal describes (written inline, or `as const`): `object`
 * (with `properties` and `required`), `string`, `number`, `integer`, `boolean`, `null`, `array`
 * (with `items`), `enum`, `const`, `anyOf` / `oneOf` and a list of types. A schema whose `type`
 * is only known as `string` at compile time gives `any`.
 */
export type FromJSONSchema<S> =
  S extends { readonly enum: readonly (infer E)[] } ? E
  : S extends { readonly const: infer C } ? C
  : S extends { readonly anyOf: readonly (infer A)[] } ? FromJSONSchema<A>
  : S extends { readonly oneOf: readonly (infer A)[] } ? FromJSONSchema<A>
  : S extends { readonly type: infer T } ? (string extends T ? any : JSONSchemaTypeOf<S, T>)
  : any;

type JSONSchemaTypeOf<S, T> =
  T extends readonly (infer U)[] ? JSONSchemaTypeOf<S, U>
  : T extends 'string' ? string
  : T extends 'number' | 'integer' ? number
  : T extends 'boolean' ? boolean
  : T extends 'null' ? null
  : T extends 'array' ? (S extends { readonly items: infer I } ? FromJSONSchema<I>[] : unknown[])
  : T extends 'object'
    ? S extends { readonly properties: infer P }
      ? JSONSchemaObject<P, S extends { readonly required: readonly (infer R)[] } ? R : never>
      : Record<string, unknown>
  : unknown;

type JSONSchemaObject<P, R> = JSONSchemaFlat<
  { -readonly [K in keyof P as K extends R ? K : never]: FromJSONSchema<P[K]> } &
  { -readonly [K in keyof P as K extends R ? never : K]?: FromJSONSchema<P[K]> }
>;
type JSONSchemaFlat<T> = { [K in keyof T]: T[K] };

/**
 * What a tool's `execute` (and `requireApproval`) receives for its `inputSchema`: a Standard
 * Schema's output type (what its `validate()` returns: zod's `z.infer`, defaults applied), or the
 * type of a JSON Schema literal (`FromJSONSchema`).
 */
export type InferToolInput<S> =
  S extends { readonly '~standard': { readonly types?: infer T } }
    ? NonNullable<T> extends { readonly output: infer O } ? O : any
    : FromJSONSchema<S>;

/** What `createTool` takes: a tool whose `execute` input is typed by its `inputSchema`. */
export interface ToolDefinition<S extends ToolInputSchema, Output = unknown> {
  /** The tool's name as the model sees it (unless the key of `tools` names it). */
  id: string;
  description?: string;
  /** A JSON Schema object or a Standard Schema (zod 4 …); arguments are checked before `execute`. */
  inputSchema?: S;
  outputSchema?: ToolInputSchema;
  /** Absent only for client tools (`clientTools`), whose calls the page answers. */
  execute?: (input: InferToolInput<S>, context: ToolExecutionContext) => Output | Promise<Output>;
  requireApproval?: boolean | ((input: InferToolInput<S>) => boolean | Promise<boolean>);
  /** Run calls of this tool as background tasks (the agent needs `backgroundTasks`). */
  background?: { enabled?: boolean; timeoutMs?: number; maxRetries?: number };
  /** What `context.suspend(payload)` must pass (a mismatch fails the call). */
  suspendSchema?: ToolInputSchema;
  /** What the resume data must match (`ValidationError` from `resumeStream` otherwise). */
  resumeSchema?: ToolInputSchema;
}

/**
 * Checks a tool definition now (a bad one is a `TypeError` here, not at the model's first call)
 * and returns it, so `tool.execute` stays callable directly. `execute`'s input is typed from
 * `inputSchema`:
 *
 * ```ts
 * const weather = createTool({
 *   id: 'weather',
 *   description: 'Current weather for a city',
 *   inputSchema: z.object({ city: z.string() }), // or { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
 *   execute: async ({ city }) => ({ city, temperatureC: 18 }), // city: string
 * });
 * ```
 */
export function createTool<const S extends ToolInputSchema = { type: 'object'; properties: {} }, Output = unknown>(
  tool: ToolDefinition<S, Output>,
): Tool<InferToolInput<S>, Output>;
"#;
