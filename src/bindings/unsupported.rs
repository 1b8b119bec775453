//! Which options of `core::unsupported` a call sets (its own, else the agent's `defaultOptions`),
//! and the `console.warn` owed for them, once per process per name.

use std::cell::RefCell;

use js_sys::{Array, Function, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{object_keys, type_error};
use crate::core::model::Warning;
use crate::core::option_names::{nearest, stream_option_on_agent_line, unknown_option_line};
use crate::core::unsupported::{console_lines, setting_warnings};

// The reference's options of `core::unsupported::UNSUPPORTED`, so code written for it compiles;
// merged into `StreamOptions` / `MemoryOptions` (declared in `bindings/mod.rs`).
#[wasm_bindgen(typescript_custom_section)]
const TS_UNSUPPORTED: &'static str = r#"
export interface StreamOptions {
  /**
   * The reply as JSON matching `schema`, validated: `object`, `objectStream`, `object` chunks
   * while it streams and `object-result` at the end. With `model`, a separate structuring call
   * turns the agent's answer into the object (`useAgent`: that call also gets the memory
   * thread's history).
   */
  structuredOutput?: {
    schema: ToolInputSchema;
    errorStrategy?: 'strict' | 'warn' | 'fallback';
    fallbackValue?: unknown;
    instructions?: string;
    jsonPromptInjection?: boolean | 'system' | 'inline' | 'auto';
    model?: ModelConfig;
    providerOptions?: Record<string, Record<string, unknown>>;
    useAgent?: boolean;
  };
  /** @deprecated Use `structuredOutput: { schema }`, which this means. */
  output?: ToolInputSchema;
  /** Not honoured (adds an `unsupported-setting` warning): there is no version store; the agents in code run. */
  versions?: {
    agents?: Record<string, { versionId: string } | { status: 'draft' | 'published' }>;
    defaultStatus?: 'draft' | 'published';
  };
  /**
   * How this run is traced (SPEC §16.3; wasm-agent/lite has no tracing and warns): join a trace
   * (`traceId`, `parentSpanId` as the external parent), root-only `tags`, `metadata` on every
   * span, `requestContextKeys` (dot paths) copied into metadata.
   */
  tracingOptions?: {
    metadata?: Record<string, unknown>;
    requestContextKeys?: string[];
    traceId?: string;
    parentSpanId?: string;
    tags?: string[];
    rootSpanName?: string;
    hideInput?: boolean;
    hideOutput?: boolean;
  };
  /** Nests this run's `agent_run` span under `currentSpan` (a tool's or processor's `tracingContext`). */
  tracingContext?: { currentSpan?: SpanHandle | { traceId: string; id: string } };
  /** The AI SDK's telemetry settings, mapped onto the run's spans (SPEC §17). */
  telemetry?: {
    isEnabled?: boolean;
    recordInputs?: boolean;
    recordOutputs?: boolean;
    functionId?: string;
    metadata?: Record<string, unknown>;
    /** Not used: spans go to the `observability` exporters (a warning says so). */
    tracer?: unknown;
  };
}

/** `error.code` (and `error.id`) of a `StructuredOutputError`. */
export type StructuredOutputErrorCode =
  | 'STRUCTURED_OUTPUT_PARSE_FAILED'
  | 'STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED'
  | 'STRUCTURED_OUTPUT_TRUNCATED';

export interface MemoryOptions {
  /**
   * Recall older messages by meaning (needs the Memory's `embedder`): the `topK` most similar
   * (cosine, at least `threshold`) with `messageRange` neighbours go before the recent messages.
   * Defaults: `topK: 4`, `messageRange: 1`, `scope: 'resource'`. wasm-agent/lite leaves it out
   * (an `unsupported-setting` warning).
   */
  semanticRecall?:
    | boolean
    | { topK?: number; messageRange?: number | { before: number; after: number }; scope?: 'resource' | 'thread'; threshold?: number };
}
"#;

thread_local! {
    /// The setting names already told to the console by this process.
    static TOLD: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// The unknown-option lines already told.
    static TOLD_KEYS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// `console.warn`s, once per process each, the keys of `obj` (the options of `place`) that are
/// not in `known` but look like a misspelling of a name in it. With `stream_keys` (the agent's
/// config), a `stream()` option there is told to go into `defaultOptions`. Other unknown keys
/// stay silently ignored, as in the reference.
pub fn warn_unknown_keys(obj: &JsValue, known: &[&str], place: &str, stream_keys: Option<&[&str]>) {
    let Some(keys) = obj.is_object().then(|| object_keys(obj).ok()).flatten() else { return };
    let mut lines = Vec::new();
    for key in keys.iter().filter_map(|k| k.as_string()) {
        if known.contains(&key.as_str()) {
            continue;
        }
        if stream_keys.is_some_and(|s| s.contains(&key.as_str())) {
            lines.push(stream_option_on_agent_line(&key));
        } else if let Some(near) = nearest(&key, known) {
            lines.push(unknown_option_line(&key, near, place));
        }
    }
    let lines: Vec<String> = TOLD_KEYS.with(|told| {
        let mut told = told.borrow_mut();
        let mut fresh = Vec::new();
        for line in lines {
            if !told.contains(&line) {
                told.push(line.clone());
                fresh.push(line);
            }
        }
        fresh
    });
    console_warn(lines);
}

/// `console.warn(line)` for each line; nothing where there is no console.
fn console_warn(lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let console = Reflect::get(&js_sys::global(), &"console".into()).unwrap_or(JsValue::UNDEFINED);
    if let Ok(warn) = Reflect::get(&console, &"warn".into()).and_then(|w| w.dyn_into::<Function>()) {
        for line in lines {
            let _ = warn.call1(&console, &line.into());
        }
    }
}

/// The call's `unsupported-setting` warnings; the first time a name comes up, `console.warn`s it.
/// `memory_options`: the `Memory`'s own options when the run uses it (a call's `memory.options`
/// key wins over them).
pub fn warnings_of(
    options: &JsValue,
    defaults: &JsValue,
    memory_options: Option<&Value>,
) -> Result<Vec<Warning>, JsValue> {
    let mut failed = None;
    let warnings = setting_warnings(&mut |name| match asks(options, defaults, memory_options, name) {
        Ok(b) => b,
        Err(e) => {
            failed.get_or_insert(e);
            false
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    // The borrow ends before console.warn, which may be the user's own function.
    let lines = TOLD.with(|told| console_lines(&warnings, &mut told.borrow_mut()));
    console_warn(lines);
    Ok(warnings)
}

/// Whether the dotted option `name` is set to something that asks for behaviour: `undefined`,
/// `null`, `false` and `[]` ask for nothing this version does not already do.
fn asks(options: &JsValue, defaults: &JsValue, memory_options: Option<&Value>, name: &str) -> Result<bool, JsValue> {
    let mut parts = name.split('.');
    let first = parts.next().unwrap_or_default();
    let mut v = read(options, first, "options", name)?;
    let mut path = "options";
    if v.is_undefined() {
        path = "config.defaultOptions";
        v = read(defaults, first, path, name)?;
    }
    for part in parts {
        v = read(&v, part, path, name)?;
    }
    if let (true, Some(key), Some(mem)) = (v.is_undefined(), name.strip_prefix("memory.options."), memory_options) {
        return Ok(match mem.get(key) {
            None | Some(Value::Null | Value::Bool(false)) => false,
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        });
    }
    let empty = Array::is_array(&v) && Array::from(&v).length() == 0;
    Ok(!(v.is_undefined() || v.is_null() || v.as_bool() == Some(false) || empty))
}

/// `obj[key]` (`undefined` when `obj` is no object); a getter that throws is a TypeError naming
/// `path.name`, the option the caller wrote.
fn read(obj: &JsValue, key: &str, path: &str, name: &str) -> Result<JsValue, JsValue> {
    if !obj.is_object() && !obj.is_function() {
        return Ok(JsValue::UNDEFINED);
    }
    Reflect::get(obj, &key.into()).map_err(|e| {
        let msg = Reflect::get(&e, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default();
        type_error(&format!("{path}.{name}"), &format!("could not be read (reading it threw: {msg})"))
    })
}

/// A value given for an option whose feature this build left out: one `console.warn` per name.
#[allow(dead_code)]
pub(crate) fn not_in_build(v: &JsValue, field: &str, feature: &str) {
    if v.is_undefined() || v.is_null() {
        return;
    }
    thread_local! {
        static TOLD: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }
    let first = TOLD.with(|t| {
        let mut t = t.borrow_mut();
        let new = !t.iter().any(|n| n == field);
        if new {
            t.push(field.to_string());
        }
        new
    });
    if first {
        super::report::warn(&format!("wasm-agent: {field} is not supported in this build (it has no '{feature}' feature, e.g. wasm-agent/lite): it is ignored."));
    }
}
