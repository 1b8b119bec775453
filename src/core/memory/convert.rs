//! Stored messages to and from what the loop and the screen use: the new input messages and a
//! run's steps become stored messages; stored messages become the prompt history, and UI
//! messages (AI SDK v5 shape) for a chat screen.

use serde_json::{json, Map, Value};

use super::{StoredMessage, Thread};
use crate::core::chunk::APPROVAL_RESUME_SCHEMA;
use crate::core::runs::{WaitKind, WaitingCall};
use crate::core::input::part_meta;
use crate::core::model::{with_meta, AssistantPart, ModelMessage, PartMeta, ToolResultPart, UserPart};
use crate::core::step::StepResult;
use crate::core::tools::Outcome;

fn stored(id: String, thread: &Thread, role: &str, created_at: String, parts: Vec<Value>) -> StoredMessage {
    StoredMessage {
        id,
        thread_id: thread.id.clone(),
        resource_id: thread.resource_id.clone(),
        role: role.into(),
        created_at,
        parts,
        metadata: None,
    }
}

fn file_part(data: &str, media_type: &str, filename: &Option<String>) -> Value {
    // Bare base64 is kept as a data URL so the stored part is self-describing.
    let url = if data.contains(':') { data.to_string() } else { format!("data:{media_type};base64,{data}") };
    let mut p = json!({ "type": "file", "mediaType": media_type, "url": url });
    if let Some(f) = filename {
        p["filename"] = Value::String(f.clone());
    }
    p
}

fn invocation(state: &str, id: &str, name: &str, args: &Value, result: Option<&Value>, is_error: bool) -> Value {
    let mut inv = json!({ "state": state, "toolCallId": id, "toolName": name, "args": args });
    if let Some(r) = result {
        inv["result"] = r.clone();
    }
    if is_error {
        inv["isError"] = Value::Bool(true);
    }
    json!({ "type": "tool-invocation", "toolInvocation": inv })
}

/// The caller's new messages as stored messages. Tool results are folded into the tool calls of
/// the assistant message before them (as the reference stores them); `next` gives each message
/// its id and creation time, in order; a user message with an id in `ids` (by position) keeps it.
pub fn input_messages(input: &[ModelMessage], ids: &[Option<String>], thread: &Thread, next: &mut dyn FnMut() -> (String, String)) -> Vec<StoredMessage> {
    input_messages_with(input, ids, &[], thread, next)
}

/// [`input_messages`], where a user or assistant message gets `content.metadata` from `meta`
/// (by position, as `ids`): what an input processor set on it.
pub fn input_messages_with(
    input: &[ModelMessage],
    ids: &[Option<String>],
    meta: &[Option<Value>],
    thread: &Thread,
    next: &mut dyn FnMut() -> (String, String),
) -> Vec<StoredMessage> {
    let mut out: Vec<StoredMessage> = Vec::new();
    for (i, m) in input.iter().enumerate() {
        match m {
            ModelMessage::System(_) => {}
            ModelMessage::User(parts) => {
                let parts = parts
                    .iter()
                    .map(|p| match p {
                        UserPart::Text(t) => json!({ "type": "text", "text": t }),
                        UserPart::File { data, media_type, filename } => file_part(data, media_type, filename),
                    })
                    .collect();
                let (new_id, at) = next();
                let id = ids.get(i).cloned().flatten().unwrap_or(new_id);
                out.push(stored(id, thread, "user", at, parts));
                out.last_mut().expect("just pushed").metadata = meta.get(i).cloned().flatten();
            }
            ModelMessage::Assistant(parts) => {
                let parts = parts
                    .iter()
                    .map(|p| match p {
                        AssistantPart::Text(t, meta) => stored_meta(json!({ "type": "text", "text": t }), meta),
                        AssistantPart::Reasoning(t, meta) => stored_meta(json!({ "type": "reasoning", "text": t }), meta),
                        AssistantPart::ToolCall { tool_call_id, tool_name, args, meta } =>
                            stored_meta(invocation("call", tool_call_id, tool_name, args, None, false), meta),
                    })
                    .collect();
                let (id, at) = next();
                out.push(stored(id, thread, "assistant", at, parts));
                out.last_mut().expect("just pushed").metadata = meta.get(i).cloned().flatten();
            }
            ModelMessage::Tool(results) => {
                for r in results {
                    if !answer_call(&mut out, r) {
                        let (id, at) = next();
                        let part = invocation("result", &r.tool_call_id, &r.tool_name, &Value::Null, Some(&r.result), r.is_error);
                        out.push(stored(id, thread, "tool", at, vec![part]));
                    }
                }
            }
        }
    }
    out
}

/// Completes the matching `call` invocation of an earlier assistant message in the batch.
fn answer_call(out: &mut [StoredMessage], r: &ToolResultPart) -> bool {
    for m in out.iter_mut().rev().filter(|m| m.role == "assistant") {
        for p in m.parts.iter_mut() {
            // `get_mut`, not `p["toolInvocation"]`: indexing would add a null one to every other part.
            let Some(inv) = p.get_mut("toolInvocation") else { continue };
            if inv["toolCallId"] == r.tool_call_id.as_str() && inv["state"] == "call" {
                inv["state"] = "result".into();
                inv["result"] = r.result.clone();
                if r.is_error {
                    inv["isError"] = Value::Bool(true);
                }
                return true;
            }
        }
    }
    false
}

/// The assistant message of a run: every complete step (each opened by a `step-start` part),
/// then, when the run was cut short, what the interrupted step had already shown — its text and
/// reasoning, never its tool calls — with `metadata.interrupted`.
pub fn assistant_message(id: String, thread: &Thread, created_at: String, steps: &[StepResult], partial: Option<&StepResult>) -> Option<StoredMessage> {
    let (parts, metadata) = assistant_parts(steps, partial);
    if parts.iter().all(|p| p["type"] == "step-start") {
        return None;
    }
    let mut m = stored(id, thread, "assistant", created_at, parts);
    m.metadata = metadata;
    Some(m)
}

/// The parts of `assistant_message`, and its metadata.
pub fn assistant_parts(steps: &[StepResult], partial: Option<&StepResult>) -> (Vec<Value>, Option<Value>) {
    let mut parts = Vec::new();
    for step in steps {
        parts.push(json!({ "type": "step-start" }));
        push_content(&mut parts, step);
        for r in &step.tool_results {
            let c = &r.call;
            let part = match &r.outcome {
                Outcome::Result { result, is_error } => invocation("result", &c.tool_call_id, &c.tool_name, &c.args, Some(result), *is_error),
                Outcome::Error(message) => invocation("output-error", &c.tool_call_id, &c.tool_name, &c.args, Some(&Value::String(message.clone())), true),
                Outcome::Denied { .. } => {
                    let (result, _) = r.model_result().unwrap_or_default();
                    invocation("output-denied", &c.tool_call_id, &c.tool_name, &c.args, Some(&result), true)
                }
                // A client tool's call waits for the page's next message, which completes it;
                // until then the prompt leaves it out (it has no result).
                Outcome::Client => invocation("call", &c.tool_call_id, &c.tool_name, &c.args, None, false),
            };
            let meta = step.parts.iter().find_map(|p| match p {
                AssistantPart::ToolCall { tool_call_id, meta, .. } if *tool_call_id == c.tool_call_id => meta.as_ref(),
                _ => None,
            });
            parts.push(stored_meta(part, &meta.cloned()));
        }
        parts.extend(step.data_parts.iter().cloned());
    }
    let mut metadata = None;
    if let Some(p) = partial.filter(|p| !p.text.is_empty() || !p.reasoning.is_empty()) {
        parts.push(json!({ "type": "step-start" }));
        push_content(&mut parts, p);
        metadata = Some(json!({ "interrupted": true }));
    }
    (parts, metadata)
}

/// The assistant message of a run that waits (SPEC §19.5): `parts` (its steps so far), then a
/// tool-invocation part per waiting call, in state `approval-requested` or `suspended`, each
/// listed under `content.metadata.pendingToolApprovals` / `suspendedTools` (the reference's
/// names, so a reloaded thread shows what waits and for which run).
pub fn waiting_message(id: String, thread: &Thread, created_at: String, mut parts: Vec<Value>, waits: &[WaitingCall], run_id: &str) -> StoredMessage {
    let (mut approvals, mut suspended) = (Map::new(), Map::new());
    for w in waits {
        let c = &w.call;
        let (state, kind, list) = match w.kind {
            WaitKind::Approval => ("approval-requested", "approval", &mut approvals),
            WaitKind::Suspension => ("suspended", "suspension", &mut suspended),
        };
        parts.push(invocation(state, &c.tool_call_id, &c.tool_name, &c.args, None, false));
        let mut entry = json!({ "toolCallId": c.tool_call_id, "toolName": c.tool_name, "args": c.args, "type": kind, "runId": run_id });
        if let Some(p) = &w.suspend_payload {
            entry["suspendPayload"] = p.clone();
        }
        entry["resumeSchema"] = match (w.kind, &w.resume_schema) {
            (WaitKind::Approval, _) => APPROVAL_RESUME_SCHEMA.into(),
            (WaitKind::Suspension, Some(s)) => s.to_string().into(),
            (WaitKind::Suspension, None) => Value::Null,
        };
        list.insert(c.tool_call_id.clone(), entry);
    }
    let mut metadata = Map::new();
    for (key, list) in [("pendingToolApprovals", approvals), ("suspendedTools", suspended)] {
        if !list.is_empty() {
            metadata.insert(key.into(), Value::Object(list));
        }
    }
    let mut m = stored(id, thread, "assistant", created_at, parts);
    m.metadata = Some(Value::Object(metadata));
    m
}

/// A part of a call still waiting for a decision (SPEC §19.5): never sent to a model.
fn is_waiting(state: &str) -> bool {
    matches!(state, "approval-requested" | "suspended")
}

/// Reasoning and text parts of a step, in the order they streamed. Reasoning with no readable
/// text is kept when it carries provider data (encrypted or redacted reasoning the model needs
/// back on the next call).
fn push_content(parts: &mut Vec<Value>, step: &StepResult) {
    for p in &step.parts {
        match p {
            AssistantPart::Text(t, meta) if !t.is_empty() => parts.push(stored_meta(json!({ "type": "text", "text": t }), meta)),
            AssistantPart::Reasoning(t, meta) if !t.is_empty() || meta.is_some() => {
                parts.push(stored_meta(json!({ "type": "reasoning", "text": t }), meta))
            }
            _ => {}
        }
    }
}

/// A stored part with the provider data of its model part, as `providerMetadata`.
fn stored_meta(part: Value, meta: &PartMeta) -> Value {
    with_meta(part, "providerMetadata", meta)
}

/// The provider data stored with a part.
fn meta_of(part: &Value) -> PartMeta {
    part_meta(part, "providerMetadata")
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// The prompt history from stored messages. Parts a model cannot read (data, unknown types)
/// are skipped, not lost: the store keeps them. With `filter_incomplete`, tool calls without a
/// result are left out so the prompt stays valid.
pub fn stored_to_model(messages: &[StoredMessage], filter_incomplete: bool) -> Vec<ModelMessage> {
    let mut out = Vec::new();
    for m in messages {
        match m.role.as_str() {
            "user" => {
                let parts: Vec<UserPart> = m
                    .parts
                    .iter()
                    .filter_map(|p| match str_of(p, "type") {
                        "text" => Some(UserPart::Text(str_of(p, "text").to_string())),
                        "file" => Some(UserPart::File {
                            data: p.get("url").or_else(|| p.get("data")).and_then(Value::as_str).unwrap_or_default().to_string(),
                            media_type: str_of(p, "mediaType").to_string(),
                            filename: p.get("filename").and_then(Value::as_str).map(str::to_owned),
                        }),
                        _ => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(ModelMessage::User(parts));
                }
            }
            "system" => {
                let text: Vec<&str> = m.parts.iter().filter(|p| str_of(p, "type") == "text").map(|p| str_of(p, "text")).collect();
                if !text.is_empty() {
                    out.push(ModelMessage::System(text.join("\n")));
                }
            }
            "assistant" | "tool" => push_assistant(&mut out, m, filter_incomplete),
            _ => {}
        }
    }
    if filter_incomplete {
        drop_unanswerable_results(&mut out);
    }
    out
}

/// Removes tool results whose call is not in an earlier assistant message: a model API
/// refuses a result that answers nothing.
fn drop_unanswerable_results(out: &mut Vec<ModelMessage>) {
    let mut calls: Vec<String> = Vec::new();
    for m in out.iter_mut() {
        match m {
            ModelMessage::Assistant(parts) => calls.extend(parts.iter().filter_map(|p| match p {
                AssistantPart::ToolCall { tool_call_id, .. } => Some(tool_call_id.clone()),
                _ => None,
            })),
            ModelMessage::Tool(results) => results.retain(|r| calls.contains(&r.tool_call_id)),
            _ => {}
        }
    }
    out.retain(|m| !matches!(m, ModelMessage::Tool(r) if r.is_empty()));
}

/// An assistant message, cut at each `step-start` into the assistant message and tool results
/// the model saw at that step.
fn push_assistant(out: &mut Vec<ModelMessage>, m: &StoredMessage, filter_incomplete: bool) {
    let mut content: Vec<AssistantPart> = Vec::new();
    let mut results: Vec<ToolResultPart> = Vec::new();
    let flush = |out: &mut Vec<ModelMessage>, content: &mut Vec<AssistantPart>, results: &mut Vec<ToolResultPart>| {
        if !content.is_empty() {
            out.push(ModelMessage::Assistant(std::mem::take(content)));
        }
        if !results.is_empty() {
            out.push(ModelMessage::Tool(std::mem::take(results)));
        }
    };
    for p in &m.parts {
        match str_of(p, "type") {
            "step-start" => flush(out, &mut content, &mut results),
            "text" => content.push(AssistantPart::Text(str_of(p, "text").to_string(), meta_of(p))),
            "reasoning" => content.push(AssistantPart::Reasoning(str_of(p, "text").to_string(), meta_of(p))),
            "tool-invocation" => {
                let inv = &p["toolInvocation"];
                let (id, name) = (str_of(inv, "toolCallId").to_string(), str_of(inv, "toolName").to_string());
                let has_result = inv.get("result").is_some() && str_of(inv, "state") != "call";
                // A call that waits is the suspended run's, resumable on its own: a new run's
                // prompt leaves it out whatever the filter says (a call without a result).
                if !has_result && (filter_incomplete || is_waiting(str_of(inv, "state"))) {
                    continue;
                }
                if m.role == "assistant" {
                    let args = inv.get("args").cloned().unwrap_or_else(|| json!({}));
                    content.push(AssistantPart::ToolCall { tool_call_id: id.clone(), tool_name: name.clone(), args, meta: meta_of(p) });
                }
                if has_result {
                    let is_error = inv["isError"] == true || matches!(str_of(inv, "state"), "output-error" | "output-denied");
                    results.push(ToolResultPart { tool_call_id: id, tool_name: name, result: inv["result"].clone(), is_error });
                }
            }
            _ => {}
        }
    }
    flush(out, &mut content, &mut results);
}

/// A stored message as an AI SDK v5 UI message, ready to render.
pub fn stored_to_ui(m: &StoredMessage) -> Value {
    let parts: Vec<Value> = m
        .parts
        .iter()
        .map(|p| {
            if str_of(p, "type") != "tool-invocation" {
                return p.clone();
            }
            let inv = &p["toolInvocation"];
            let state = match str_of(inv, "state") {
                "result" if inv["isError"] == true => "output-error",
                "result" => "output-available",
                "output-error" => "output-error",
                "output-denied" => "output-denied",
                "approval-requested" => "approval-requested",
                _ => "input-available",
            };
            let mut ui = json!({
                "type": format!("tool-{}", str_of(inv, "toolName")), "toolCallId": inv["toolCallId"], "state": state, "input": inv["args"],
            });
            match state {
                "output-available" => ui["output"] = inv["result"].clone(),
                "output-error" | "output-denied" => {
                    ui["errorText"] = match &inv["result"] {
                        Value::String(s) => Value::String(s.clone()),
                        other => Value::String(other.to_string()),
                    }
                }
                _ => {}
            }
            if let Some(meta) = meta_of(p) {
                ui["callProviderMetadata"] = meta;
            }
            ui
        })
        .collect();
    let mut v = json!({ "id": m.id, "role": if m.role == "tool" { "assistant" } else { m.role.as_str() }, "parts": parts, "createdAt": m.created_at });
    if let Some(meta) = &m.metadata {
        v["metadata"] = meta.clone();
    }
    v
}
