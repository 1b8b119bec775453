//! The agent's chunks as AI SDK UI-message-stream parts (SPEC §10): what `toAISdkStream` hands
//! to the `ai` package's `readUIMessageStream` and `useChat`.
//!
//! Pure mapping over the chunk JSON (`{ type, runId, from, payload }`, or a bare `data-*`
//! chunk); the bindings only move values between the two streams. The target is the AI SDK 5
//! UI message stream protocol (`uiMessageChunkSchema`), which `useChat` validates part by part
//! and fails on a part type it does not know, so nothing outside that schema is ever emitted:
//! a declined call becomes `tool-output-error`, an approval request a `data-tool-call-approval`
//! part. The reader also throws on a delta or an output whose start it never saw, so
//! [`UiState`] remembers what it sent and supplies a missing start from the chunk itself
//! (a stream handed over part-read, or filtered by the caller, still reads).
//!
//! Must never: emit a field the schema does not list, or drop a `data-*` chunk's `transient`.

use serde_json::{Map, Value};

/// What the reader on the other side has been told so far: the open text and reasoning parts
/// and the tool calls it knows, by id. One per converted stream.
#[derive(Debug, Default)]
pub struct UiState {
    open_text: Ids,
    open_reasoning: Ids,
    /// Calls whose `tool-input-start` was sent and whose input is not complete yet.
    streaming_calls: Ids,
    /// Calls whose `tool-input-available` was sent: outputs for them can follow.
    known_calls: Ids,
    /// Calls whose arguments were not JSON: their `tool-input-error` waits for the run's
    /// `tool-error`, which says what was wrong.
    invalid_calls: Ids,
    /// A step began and its `start-step` is not sent yet: it goes out with the step's first
    /// part, so a model call that fails before any content ends `start`, `error` as `ai` ends it
    /// (a lone `step-start` part would stay in the message `useChat` posts back).
    step_pending: bool,
    /// Leave `finishReason` out of `finish` (`toAISdkStream(out, { sendFinishReason: false })`),
    /// for readers older than the field.
    omit_finish_reason: bool,
    /// The sub-agent cards (`data-tool-agent`), and the time the bindings set before each chunk.
    agents: super::ai_sdk_agents::Cards,
    /// The workflows run as tools (`workflow-<key>`), by run id: their cards (`data-tool-workflow`).
    #[cfg(feature = "workflows")]
    workflows: Vec<(String, super::ai_sdk_workflow::WorkflowUiState)>,
    pub now_ms: f64,
}

impl UiState {
    /// The state of a new stream; `omit_finish_reason` leaves `finishReason` out of `finish`.
    pub fn new(omit_finish_reason: bool) -> Self {
        UiState { omit_finish_reason, ..Default::default() }
    }
}

/// A small set of ids. A run has a handful open at a time, so a list searched in order beats a
/// hash set, and spares the package the hasher's code.
#[derive(Debug, Default)]
struct Ids(Vec<String>);

impl Ids {
    fn contains(&self, id: &str) -> bool {
        self.0.iter().any(|x| x == id)
    }

    /// `false` when it was there already.
    fn insert(&mut self, id: &str) -> bool {
        if self.contains(id) {
            return false;
        }
        self.0.push(id.to_string());
        true
    }

    /// `false` when it was not there.
    fn remove(&mut self, id: &str) -> bool {
        let before = self.0.len();
        self.0.retain(|x| x != id);
        self.0.len() != before
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The UI-message-stream parts for one chunk, in order (often one, none for chunks the protocol
/// has no part for: `raw`, `tool-call-input-streaming-end`, structured output, sources).
///
/// ```text
/// { type: 'text-delta', runId, from: 'AGENT', payload: { id: 't1', text: 'Hi' } }
///   → [{ type: 'text-delta', id: 't1', delta: 'Hi' }]
/// ```
pub fn to_ui_parts(chunk: &Value, state: &mut UiState) -> Vec<Value> {
    let mut out = parts_of(chunk, state);
    if state.step_pending {
        match out.first().and_then(|p| str_at(p, "type")) {
            None => {}
            // The step ended before it had anything to show: no step at all.
            Some("error" | "abort" | "finish") => state.step_pending = false,
            Some(_) => {
                state.step_pending = false;
                out.insert(0, part("start-step", vec![]));
            }
        }
    }
    out
}

fn parts_of(chunk: &Value, state: &mut UiState) -> Vec<Value> {
    let mut out = Vec::new();
    let Some(kind) = str_at(chunk, "type") else { return out };
    let p = chunk.get("payload").unwrap_or(&Value::Null);
    match kind {
        "start" => match str_at(p, "messageId").filter(|id| !id.is_empty()) {
            Some(id) => out.push(part("start", vec![("messageId", id.into())])),
            None => out.push(part("start", vec![])),
        },
        "step-start" => state.step_pending = true,
        "step-finish" => {
            // The reader forgets a step's open text and reasoning parts at `finish-step`.
            state.open_text.clear();
            state.open_reasoning.clear();
            out.push(part("finish-step", vec![]));
        }
        "text-start" | "reasoning-start" => {
            if let Some(id) = str_at(p, "id") {
                open_set(state, kind).insert(id);
                out.push(part(kind, vec![("id", id.into())]));
            }
        }
        "text-delta" | "reasoning-delta" => {
            if let (Some(id), Some(text)) = (str_at(p, "id"), str_at(p, "text")) {
                let start = if kind == "text-delta" { "text-start" } else { "reasoning-start" };
                if open_set(state, kind).insert(id) {
                    out.push(part(start, vec![("id", id.into())]));
                }
                out.push(part(kind, vec![("id", id.into()), ("delta", text.into())]));
            }
        }
        "text-end" | "reasoning-end" => {
            // An end for a part the reader does not hold would make it throw.
            if let Some(id) = str_at(p, "id") {
                if open_set(state, kind).remove(id) {
                    out.push(part(kind, vec![("id", id.into())]));
                }
            }
        }
        "tool-call-input-streaming-start" => {
            if let (Some(id), Some(name)) = (str_at(p, "toolCallId"), str_at(p, "toolName")) {
                state.streaming_calls.insert(id);
                out.push(part("tool-input-start", vec![("toolCallId", id.into()), ("toolName", name.into())]));
            }
        }
        "tool-call-delta" => {
            let Some(id) = str_at(p, "toolCallId") else { return out };
            // Input that is already complete is not streamed again.
            if state.known_calls.contains(id) {
                return out;
            }
            if !state.streaming_calls.contains(id) {
                let Some(name) = str_at(p, "toolName") else { return out };
                state.streaming_calls.insert(id);
                out.push(part("tool-input-start", vec![("toolCallId", id.into()), ("toolName", name.into())]));
            }
            let delta = str_at(p, "argsTextDelta").unwrap_or("");
            out.push(part("tool-input-delta", vec![("toolCallId", id.into()), ("inputTextDelta", delta.into())]));
        }
        "tool-call" => {
            if let (Some(id), Some(name)) = (str_at(p, "toolCallId"), str_at(p, "toolName")) {
                state.streaming_calls.remove(id);
                // The run hands on arguments that are not JSON as their raw text.
                if p.get("args").is_some_and(Value::is_string) {
                    state.invalid_calls.insert(id);
                    return out;
                }
                state.known_calls.insert(id);
                out.push(input_available(id, name, p));
            }
        }
        "tool-result" => {
            let Some(id) = known_call(p, state, &mut out) else { return out };
            let result = p.get("result").cloned().unwrap_or(Value::Null);
            if p.get("isError").and_then(Value::as_bool) == Some(true) {
                out.push(output_error(&id, text_of(&result)));
            } else {
                out.push(part("tool-output-available", vec![("toolCallId", id.into()), ("output", result)]));
            }
        }
        "tool-error" => {
            let error = p.get("error").unwrap_or(&Value::Null);
            let text = match str_at(error, "message") {
                Some(m) => m.to_string(),
                None if error.is_null() => "The tool failed".to_string(),
                None => text_of(error),
            };
            // As `ai` does for input it could not parse: `tool-input-error`, then the output error.
            if let (Some(id), Some(name)) = (str_at(p, "toolCallId"), str_at(p, "toolName")) {
                if state.invalid_calls.remove(id) {
                    state.known_calls.insert(id);
                    let input = p.get("args").cloned().unwrap_or(Value::Null);
                    let fields = vec![("toolCallId", id.into()), ("toolName", name.into()), ("input", input), ("errorText", text.as_str().into())];
                    out.push(part("tool-input-error", fields));
                }
            }
            let Some(id) = known_call(p, state, &mut out) else { return out };
            out.push(output_error(&id, text));
        }
        "tool-output-denied" => {
            // AI SDK 5 has no denied state: the call shows as failed, with the words the model
            // was given.
            let Some(id) = known_call(p, state, &mut out) else { return out };
            let text = match p.get("approval").and_then(|a| str_at(a, "reason")) {
                Some(r) => format!("The user declined this tool call: {r}"),
                None => "The user declined this tool call.".to_string(),
            };
            out.push(output_error(&id, text));
        }
        "tool-call-approval" => {
            // The reference's approval part, so UIs written for it can offer approve/decline.
            let Some(id) = known_call(p, state, &mut out) else { return out };
            let mut data = Map::new();
            data.insert("state".into(), "data-tool-call-approval".into());
            if let Some(run_id) = str_at(chunk, "runId") {
                data.insert("runId".into(), run_id.into());
            }
            data.insert("toolCallId".into(), id.as_str().into());
            for key in ["toolName", "args", "resumeSchema"] {
                if let Some(v) = p.get(key) {
                    data.insert(key.into(), v.clone());
                }
            }
            out.push(part("data-tool-call-approval", vec![("id", id.into()), ("data", Value::Object(data))]));
        }
        // `writer.write(value)`: a value that is itself a `data-*` chunk becomes that data part
        // (as in the reference); other values have no UI part and are left out.
        "tool-output" => {
            let output = p.get("output").unwrap_or(&Value::Null);
            if let Some(part) = data_part(output) {
                out.push(part);
            } else if let Some(card) = state.agents.update(str_at(p, "toolName").unwrap_or_default(), output, state.now_ms) {
                out.push(card);
            } else {
                #[cfg(feature = "workflows")]
                out.extend(workflow_card(state, output));
            }
        }
        "error" => {
            let error = p.get("error").unwrap_or(&Value::Null);
            let text = str_at(error, "message").map(str::to_string).unwrap_or_else(|| match error {
                Value::Null => "An error occurred.".to_string(),
                other => text_of(other),
            });
            out.push(part("error", vec![("errorText", text.into())]));
        }
        "abort" => out.push(part("abort", vec![])),
        // A processor's tripwire: the UI sees why the reply stopped; `finish` follows.
        "tripwire" => out.push(part("data-tripwire", vec![("data", p.clone())])),
        // Structured output: partial `object` chunks have no part; the final value is a data part.
        "object-result" => out.push(part("data-object", vec![("data", chunk.get("object").cloned().unwrap_or(Value::Null))])),
        // `finishReason` as `ai` sends it (useChat hands it to `onFinish`); one of its values.
        "finish" => {
            let reason = p.get("stepResult").and_then(|r| str_at(r, "reason"));
            match reason.filter(|_| !state.omit_finish_reason) {
                Some(r) => {
                    const KNOWN: &[&str] = &["stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"];
                    let r = if KNOWN.contains(&r) { r } else { "other" };
                    out.push(part("finish", vec![("finishReason", r.into())]));
                }
                None => out.push(part("finish", vec![])),
            }
        }
        _ if kind.starts_with("data-") => {
            if let Some(part) = data_part(chunk) {
                out.push(part);
            }
        }
        _ if kind.starts_with("background-task-") => {
            // One part per task and kind (the reader replaces a data part of the same type and
            // id); progress, which names no single task, is a transient notice.
            let key = match str_at(p, "taskId") {
                Some(task) => ("id", task.into()),
                None => ("transient", true.into()),
            };
            out.push(part(&format!("data-{kind}"), vec![key, ("data", p.clone())]));
        }
        _ => {}
    }
    out
}

/// `{ type: kind, ...fields }`. Every part is built here: one shared function instead of a
/// `json!` map inlined per part type keeps the mapping a few kilobytes smaller in the package.
fn part(kind: &str, fields: Vec<(&'static str, Value)>) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), kind.into());
    for (k, v) in fields {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn open_set<'a>(state: &'a mut UiState, kind: &str) -> &'a mut Ids {
    if kind.starts_with("text-") {
        &mut state.open_text
    } else {
        &mut state.open_reasoning
    }
}

fn input_available(id: &str, name: &str, p: &Value) -> Value {
    let input = p.get("args").cloned().unwrap_or(Value::Null);
    part("tool-input-available", vec![("toolCallId", id.into()), ("toolName", name.into()), ("input", input)])
}

fn output_error(id: &str, text: String) -> Value {
    part("tool-output-error", vec![("toolCallId", id.into()), ("errorText", text.into())])
}

/// The call id of a chunk about a call's outcome; a call the reader never saw is introduced
/// first with `tool-input-available` from the chunk's own `toolName` and `args`.
fn known_call(p: &Value, state: &mut UiState, out: &mut Vec<Value>) -> Option<String> {
    let id = str_at(p, "toolCallId")?;
    if !state.known_calls.contains(id) {
        let name = str_at(p, "toolName")?;
        state.streaming_calls.remove(id);
        state.known_calls.insert(id);
        out.push(input_available(id, name, p));
    }
    Some(id.to_string())
}

/// `{ type: 'data-…', data, id?, transient? }` from a chunk of that shape, other fields dropped.
pub(crate) fn data_part(v: &Value) -> Option<Value> {
    let kind = str_at(v, "type").filter(|t| t.starts_with("data-"))?;
    let mut part = Map::new();
    part.insert("type".into(), kind.into());
    if let Some(id) = str_at(v, "id") {
        part.insert("id".into(), id.into());
    }
    part.insert("data".into(), v.get("data").cloned().unwrap_or(Value::Null));
    if v.get("transient").and_then(Value::as_bool) == Some(true) {
        part.insert("transient".into(), true.into());
    }
    Some(Value::Object(part))
}

/// A string as itself, anything else as JSON text.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "ai_sdk_tests.rs"]
mod tests;

/// A workflow event forwarded by a `workflow-<key>` tool: the run's card, a `data-tool-workflow`
/// part (`id` = the run id, `data` = `{ name, status, steps, output }` as `data-workflow` has it)
/// on every step change, and the `data-*` parts its steps write; nothing for other values.
#[cfg(feature = "workflows")]
fn workflow_card(state: &mut UiState, event: &Value) -> Vec<Value> {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
    let (Some(run_id), true) = (event.get("runId").and_then(Value::as_str), kind.starts_with("workflow-")) else { return Vec::new() };
    let at = match state.workflows.iter().position(|(id, _)| id == run_id) {
        Some(at) => at,
        None => {
            state.workflows.push((run_id.to_string(), super::ai_sdk_workflow::WorkflowUiState::new(false)));
            state.workflows.len() - 1
        }
    };
    let parts = super::ai_sdk_workflow::workflow_ui_parts(event, &mut state.workflows[at].1);
    if kind == "workflow-finish" {
        state.workflows.remove(at);
    }
    parts
        .into_iter()
        .filter_map(|mut part| match part.get("type").and_then(Value::as_str) {
            Some("data-workflow") => {
                part["type"] = "data-tool-workflow".into();
                Some(part)
            }
            Some("start" | "finish" | "data-workflow-step") => None,
            _ => Some(part),
        })
        .collect()
}
