//! `toAISdkStream(output, { from: 'agent' | 'workflow' })` and its older name `toAISdkV5Stream`
//! (SPEC §10, §20.6): an agent run or a workflow run as the AI SDK 5 UI message stream, for the
//! `ai` package's `readUIMessageStream`, `createUIMessageStreamResponse` and `useChat`.
//!
//! The mappings are `core::ai_sdk` and `core::ai_sdk_workflow`; this file only moves values. The returned stream pulls: each
//! pull reads chunks from the source until one gives parts, so the source is read no faster than
//! the consumer reads. Cancelling the returned stream cancels the source (for an agent's
//! `fullStream` that aborts the run). Must never hold a `RefCell` borrow across an `.await`.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use serde_json::json;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{ReadableStream, ReadableStreamDefaultController, ReadableStreamDefaultReader};

use super::convert::{error_to_js, from_json, js_kind, to_json, type_error};
use super::tools::thrown_message;
use crate::core::ai_sdk::{to_ui_parts, UiState};
use crate::core::error::AgentError;

#[wasm_bindgen(typescript_custom_section)]
const TS_AI_SDK: &'static str = r#"
export interface AISdkStreamOptions {
  /**
   * What `output` is: `'agent'` (default), the output of `agent.stream()`, or `'workflow'`, the
   * output of `run.stream()` (parts `data-workflow` and `data-workflow-step`, SPEC §20.6).
   */
  from?: 'agent' | 'workflow';
  /** `from: 'workflow'`: an agent step's text, reasoning and tool chunks become parts too (default `true`). */
  includeTextStreamParts?: boolean;
  /**
   * Send the run's `finishReason` on the `finish` part, as `ai`'s own `toUIMessageStream()` does
   * (default `true`; `useChat` hands it to `onFinish`). `false` for a reader whose schema
   * predates the field and refuses it.
   */
  sendFinishReason?: boolean;
}

/** One part of the AI SDK 5 UI message stream (the `ai` package's `UIMessageChunk`). */
export type AISdkUIMessageChunk =
  | { type: 'start'; messageId?: string }
  | { type: 'start-step' | 'finish-step' | 'abort' }
  | { type: 'finish'; finishReason?: 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other' | 'unknown' }
  | { type: 'text-start' | 'text-end' | 'reasoning-start' | 'reasoning-end'; id: string }
  | { type: 'text-delta' | 'reasoning-delta'; id: string; delta: string }
  | { type: 'tool-input-start'; toolCallId: string; toolName: string }
  | { type: 'tool-input-delta'; toolCallId: string; inputTextDelta: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-input-error'; toolCallId: string; toolName: string; input: unknown; errorText: string }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'error'; errorText: string }
  | { type: `data-${string}`; id?: string; data: unknown; transient?: boolean };
"#;

/// What the consumer has been told, for the kind of run being converted.
enum Ui {
    Agent(UiState),
    #[cfg(feature = "workflows")]
    Workflow(crate::core::ai_sdk_workflow::WorkflowUiState),
}

/// The source's reader and what the consumer has been told.
struct Pump {
    reader: ReadableStreamDefaultReader,
    state: RefCell<Ui>,
}

/// The pump while the stream runs; emptied when it ends or is cancelled, so the closures the
/// stream keeps hold nothing of the run afterwards.
type Slot = Rc<RefCell<Option<Rc<Pump>>>>;

impl Pump {
    /// Reads until a chunk gives parts and enqueues them. `true` when the stream is over.
    async fn pull(&self, ctrl: &ReadableStreamDefaultController) -> bool {
        loop {
            let result = match JsFuture::from(self.reader.read()).await {
                Ok(r) => r,
                Err(e) => {
                    // As the AI SDK's own createUIMessageStream does: a failing source ends
                    // the UI stream with an error part, which readers and useChat report.
                    let part = json!({ "type": "error", "errorText": thrown_message(&e) });
                    let _ = ctrl.enqueue_with_chunk(&from_json(&part));
                    let _ = ctrl.close();
                    return true;
                }
            };
            if Reflect::get(&result, &"done".into()).map(|d| d.is_truthy()).unwrap_or(true) {
                // Fails harmlessly when the consumer cancelled meanwhile.
                let _ = ctrl.close();
                return true;
            }
            let value = Reflect::get(&result, &"value".into()).unwrap_or(JsValue::UNDEFINED);
            let chunk = match chunk_json(&value) {
                Ok(c) => c,
                Err(e) => {
                    let err = error_to_js(&e);
                    ctrl.error_with_e(&err);
                    let _ = self.reader.cancel_with_reason(&err);
                    return true;
                }
            };
            let parts = match &mut *self.state.borrow_mut() {
                Ui::Agent(state) => {
                    state.now_ms = js_sys::Date::now();
                    to_ui_parts(&chunk, state)
                }
                #[cfg(feature = "workflows")]
                Ui::Workflow(state) => crate::core::ai_sdk_workflow::workflow_ui_parts(&chunk, state),
            };
            if !parts.is_empty() {
                for part in &parts {
                    let _ = ctrl.enqueue_with_chunk(&from_json(part));
                }
                return false;
            }
        }
    }
}

/// Converts the output of `agent.stream()` (or its `fullStream`), or with `from: 'workflow'` the
/// output of a workflow run's `stream()`, into the AI SDK 5 UI message stream.
///
/// ```ts
/// import { readUIMessageStream } from 'ai';
/// const output = await agent.stream('Hello');
/// for await (const message of readUIMessageStream({ stream: toAISdkStream(output, { from: 'agent' }) })) {
///   render(message.parts);
/// }
/// // In a route handler: return createUIMessageStreamResponse({ stream: toAISdkStream(output) });
/// ```
///
/// With `from: 'workflow'` it also takes a stored run (`workflow.getWorkflowRunById(…)`): the
/// parts its live run ended with (SPEC §20.6).
///
/// Reads `fullStream` (an agent's is readable once: read the UI stream instead). Throws a
/// `TypeError` when `output` is neither, or `options.from` is neither `'agent'` nor `'workflow'`.
#[wasm_bindgen(js_name = toAISdkStream, unchecked_return_type = "ReadableStream<AISdkUIMessageChunk>")]
pub fn to_ai_sdk_stream(
    #[wasm_bindgen(unchecked_param_type = "AgentStreamOutput | ReadableStream<ChunkType> | WorkflowRunOutput | ReadableStream<WorkflowStreamEvent> | WorkflowRunRecord")] output: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "AISdkStreamOptions")] options: Option<JsValue>,
) -> Result<ReadableStream, JsValue> {
    let ui = check_options(&options.unwrap_or(JsValue::UNDEFINED))?;
    let source = source_stream(&output, matches!(ui, Ui::Agent(_)))?;
    let get_reader: Function = Reflect::get(&source, &"getReader".into())?.unchecked_into();
    // Throws for a stream that is locked (already being read).
    let reader: ReadableStreamDefaultReader = get_reader.call0(&source)?.unchecked_into();
    let slot: Slot = Rc::new(RefCell::new(Some(Rc::new(Pump { reader, state: RefCell::new(ui) }))));
    ui_stream(slot)
}

/// The same function under its older name.
#[wasm_bindgen(js_name = toAISdkV5Stream, unchecked_return_type = "ReadableStream<AISdkUIMessageChunk>")]
pub fn to_ai_sdk_v5_stream(
    #[wasm_bindgen(unchecked_param_type = "AgentStreamOutput | ReadableStream<ChunkType> | WorkflowRunOutput | ReadableStream<WorkflowStreamEvent> | WorkflowRunRecord")] output: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "AISdkStreamOptions")] options: Option<JsValue>,
) -> Result<ReadableStream, JsValue> {
    to_ai_sdk_stream(output, options)
}

/// The chunk as JSON. One `JSON.stringify` is the fast path: walking the object property by
/// property (`to_json`) took twice as long per text delta (20,000 deltas: ~0.8 s against ~0.4 s
/// end to end). The package's chunks are plain JSON, so both give the same tree; the walk stays
/// as the fallback for what `JSON.stringify` refuses (BigInt, cycles) and names the bad field.
fn chunk_json(value: &JsValue) -> Result<serde_json::Value, AgentError> {
    let text = js_sys::JSON::stringify(value).ok().and_then(|s| s.as_string());
    match text.and_then(|t| serde_json::from_str(&t).ok()) {
        Some(v) => Ok(v),
        None => to_json(value, "chunk"),
    }
}

/// Checks the options; returns the state of the conversion they ask for.
fn check_options(options: &JsValue) -> Result<Ui, JsValue> {
    if options.is_undefined() || options.is_null() {
        return Ok(Ui::Agent(UiState::new(false)));
    }
    if !options.is_object() {
        return Err(type_error(
            "options",
            &format!("expected an object like {{ from: 'agent' }}, got {}", js_kind(options)),
        ));
    }
    let omit = flag(options, "sendFinishReason")? == Some(false);
    let from = Reflect::get(options, &"from".into())
        .map_err(|e| type_error("options.from", &format!("could not be read ({})", thrown_message(&e))))?;
    match from.as_string() {
        _ if from.is_undefined() => Ok(Ui::Agent(UiState::new(omit))),
        Some(s) if s == "agent" => Ok(Ui::Agent(UiState::new(omit))),
        Some(s) if s == "workflow" => workflow_ui(flag(options, "includeTextStreamParts")?.unwrap_or(true)),
        Some(s) => Err(type_error("options.from", &format!("expected 'agent' or 'workflow', got '{s}'"))),
        None => Err(type_error("options.from", &format!("expected 'agent' or 'workflow', got {}", js_kind(&from)))),
    }
}

#[cfg(feature = "workflows")]
fn workflow_ui(include_text: bool) -> Result<Ui, JsValue> {
    Ok(Ui::Workflow(crate::core::ai_sdk_workflow::WorkflowUiState::new(include_text)))
}

#[cfg(not(feature = "workflows"))]
fn workflow_ui(_include_text: bool) -> Result<Ui, JsValue> {
    Err(error_to_js(&crate::core::features::not_built("options.from", "workflows", "workflows")))
}

/// An optional boolean option.
fn flag(options: &JsValue, key: &str) -> Result<Option<bool>, JsValue> {
    let field = format!("options.{key}");
    let v = Reflect::get(options, &key.into())
        .map_err(|e| type_error(&field, &format!("could not be read ({})", thrown_message(&e))))?;
    if !(v.is_undefined() || v.as_bool().is_some()) {
        return Err(type_error(&field, &format!("expected a boolean, got {}", js_kind(&v))));
    }
    Ok(v.as_bool())
}

fn is_stream(v: &JsValue) -> bool {
    v.is_object() && Reflect::get(v, &"getReader".into()).map(|f| f.is_function()).unwrap_or(false)
}

/// The stream to read: `output` itself, or its `fullStream`.
fn source_stream(output: &JsValue, agent: bool) -> Result<JsValue, JsValue> {
    if is_stream(output) {
        return Ok(output.clone());
    }
    // An output of the other kind is caught before its fullStream is taken, so the call can be
    // repeated with the right `from`. A bare stream cannot be told apart and is read as asked.
    let has = |key: &str| output.is_object() && Reflect::has(output, &key.into()).unwrap_or(false);
    if agent && has("workflowId") {
        return Err(type_error("options.from", "'agent' (the default), but output is a workflow run's; pass { from: 'workflow' }"));
    }
    if !agent && has("textStream") {
        return Err(type_error("options.from", "'workflow', but output is the output of agent.stream(); pass { from: 'agent' }"));
    }
    #[cfg(feature = "workflows")]
    if !agent && has("workflowName") && has("snapshot") {
        return stored_run_stream(output);
    }
    if output.is_object() && Reflect::has(output, &"fullStream".into()).unwrap_or(false) {
        // The getter throws when fullStream was already taken; that message says what to do.
        let full = Reflect::get(output, &"fullStream".into())?;
        if is_stream(&full) {
            return Ok(full);
        }
    }
    let what = if agent { "agent.stream()" } else { "a workflow run's stream()" };
    Err(type_error("output", &format!("expected the output of {what} or its fullStream (a ReadableStream), got {}", js_kind(output))))
}

/// A stored run (`workflow.getWorkflowRunById(…)`) as a stream of the events it stands for.
#[cfg(feature = "workflows")]
fn stored_run_stream(run: &JsValue) -> Result<JsValue, JsValue> {
    let run = to_json(run, "output").map_err(|e| super::convert::error_to_js(&e))?;
    let events = crate::core::ai_sdk_workflow::stored_run_events(&run);
    let start = Closure::once_into_js(move |ctrl: ReadableStreamDefaultController| {
        for e in &events {
            let _ = ctrl.enqueue_with_chunk(&from_json(e));
        }
        let _ = ctrl.close();
    });
    let source = Object::new();
    Reflect::set(&source, &"start".into(), &start)?;
    Ok(ReadableStream::new_with_underlying_source(&source)?.into())
}

fn ui_stream(slot: Slot) -> Result<ReadableStream, JsValue> {
    let pull_slot = slot.clone();
    // The stream keeps these two closures for its lifetime; they hold only `slot`, which is
    // emptied when the stream ends, so what stays behind per converted stream is a few bytes.
    let pull = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |ctrl: JsValue| {
        let pump = pull_slot.borrow().clone();
        let Some(pump) = pump else { return Promise::resolve(&JsValue::UNDEFINED) };
        let slot = pull_slot.clone();
        future_to_promise(async move {
            let ctrl: ReadableStreamDefaultController = ctrl.unchecked_into();
            if pump.pull(&ctrl).await {
                slot.borrow_mut().take();
            }
            Ok(JsValue::UNDEFINED)
        })
    })
    .into_js_value();
    let cancel = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |reason: JsValue| {
        // A pull waiting on the source sees `done` and ends; the source (an agent's fullStream)
        // aborts its run.
        let pump = slot.borrow_mut().take();
        match pump {
            Some(pump) => pump.reader.cancel_with_reason(&reason),
            None => Promise::resolve(&JsValue::UNDEFINED),
        }
    })
    .into_js_value();
    let source = Object::new();
    Reflect::set(&source, &"pull".into(), &pull)?;
    Reflect::set(&source, &"cancel".into(), &cancel)?;
    ReadableStream::new_with_underlying_source(&source)
}
