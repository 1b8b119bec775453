//! The chunks of `fullStream` (SPEC §4), as Rust values, and their JSON payloads.
//!
//! The envelope fields `runId` and `from` are added where a chunk leaves for JavaScript; the core
//! only decides the order and the payloads. Field names follow the reference exactly.

use serde_json::{json, Map, Value};

use super::error::AgentError;
use super::model::{FinishReason, Usage, Warning};
use super::step::{StepResult, ToolCall};

#[derive(Clone, Debug, PartialEq)]
pub enum Chunk {
    Start { message_id: String },
    StepStart { message_id: String, request_body: String, warnings: Vec<Warning> },
    TextStart { id: String },
    TextDelta { id: String, text: String },
    TextEnd { id: String },
    ReasoningStart { id: String },
    ReasoningDelta { id: String, text: String },
    ReasoningEnd { id: String },
    ToolCallInputStreamingStart { tool_call_id: String, tool_name: String },
    ToolCallDelta { tool_call_id: String, tool_name: String, args_text_delta: String },
    ToolCallInputStreamingEnd { tool_call_id: String },
    ToolCall(ToolCall),
    ToolResult { call: ToolCall, result: Value, is_error: bool },
    ToolError { call: ToolCall, message: String },
    /// A value a running tool wrote with `writer.write` (`from: 'USER'`).
    ToolOutput { tool_call_id: String, tool_name: String, output: Value },
    /// `sub_agent`: asked on a supervisor for a sub-agent's call (SPEC §18.9): `{ agentId,
    /// toolName, runId, toolCallId }` of the inner call.
    ToolCallApproval { call: ToolCall, sub_agent: Option<Box<Value>> },
    /// A tool called `suspend(payload)` (SPEC §19.2); `resume_schema` is JSON Schema.
    ToolCallSuspended { call: ToolCall, suspend_payload: Value, resume_schema: Option<Value> },
    ToolOutputDenied { call: ToolCall, reason: Option<String> },
    /// A background task's lifecycle chunk (`background-task-*`, SPEC §4).
    Background { kind: &'static str, payload: Value },
    /// A custom `data-*` chunk from `writer.custom`, sent as given (no envelope).
    Data { kind: String, data: Value, id: Option<String>, transient: bool },
    /// The end of one step; carries that step and the usage of all steps so far.
    StepFinish { step: Box<StepResult>, is_continued: bool, total_usage: Usage },
    Finish { reason: FinishReason, usage: Usage, total_usage: Usage, model_id: Option<String> },
    Error(AgentError),
    Abort { reason: Option<String> },
    /// A processor's `abort()` (SPEC §13.3): its payload `{ reason, retry?, metadata?, processorId }`.
    Tripwire(super::run::processors::Tripwire),
    /// A provider event as the provider sent it (JSON text).
    Raw(String),
    /// Structured output's partial value changed (SPEC §12.3). Top level: no `payload`. Shared:
    /// the same partial also goes to `objectStream`.
    Object { object: std::rc::Rc<Value> },
    /// Structured output's final value (`metadata: { fallback: true }` for the fallback value).
    ObjectResult { object: Value, metadata: Option<Value> },
    /// A completion check's verdict (`isTaskComplete`, SPEC §15).
    IsTaskComplete { payload: Box<Value> },
    /// A chunk of a run's chunk log (SPEC §19.8), replayed or followed by `reconnectStream`: the
    /// whole object as the run's reader got it (`type`, `seq`, `runId`, …).
    Logged(std::rc::Rc<Value>),
}

/// What `tool-call-approval` says the resume data looks like (a JSON Schema, as text).
pub const APPROVAL_RESUME_SCHEMA: &str =
    r#"{"type":"object","properties":{"approved":{"type":"boolean"},"reason":{"type":"string"}},"required":["approved"]}"#;

impl Chunk {
    /// Who the chunk is from: tool output written by a tool is the user's code.
    pub fn from(&self) -> &'static str {
        match self {
            Chunk::ToolOutput { .. } => "USER",
            _ => "AGENT",
        }
    }

    /// The chunk's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Chunk::Start { .. } => "start",
            Chunk::StepStart { .. } => "step-start",
            Chunk::TextStart { .. } => "text-start",
            Chunk::TextDelta { .. } => "text-delta",
            Chunk::TextEnd { .. } => "text-end",
            Chunk::ReasoningStart { .. } => "reasoning-start",
            Chunk::ReasoningDelta { .. } => "reasoning-delta",
            Chunk::ReasoningEnd { .. } => "reasoning-end",
            Chunk::ToolCallInputStreamingStart { .. } => "tool-call-input-streaming-start",
            Chunk::ToolCallDelta { .. } => "tool-call-delta",
            Chunk::ToolCallInputStreamingEnd { .. } => "tool-call-input-streaming-end",
            Chunk::ToolCall(_) => "tool-call",
            Chunk::ToolResult { .. } => "tool-result",
            Chunk::ToolError { .. } => "tool-error",
            Chunk::ToolOutput { .. } => "tool-output",
            Chunk::ToolCallApproval { .. } => "tool-call-approval",
            Chunk::ToolCallSuspended { .. } => "tool-call-suspended",
            Chunk::ToolOutputDenied { .. } => "tool-output-denied",
            Chunk::Data { .. } => "data",
            Chunk::Background { kind, .. } => kind,
            Chunk::StepFinish { .. } => "step-finish",
            Chunk::Finish { .. } => "finish",
            Chunk::Error(_) => "error",
            Chunk::Abort { .. } => "abort",
            Chunk::Tripwire(_) => "tripwire",
            Chunk::Raw(_) => "raw",
            Chunk::Object { .. } => "object",
            Chunk::ObjectResult { .. } => "object-result",
            Chunk::IsTaskComplete { .. } => "is-task-complete",
            Chunk::Logged(_) => "logged",
        }
    }

    /// The chunk's `payload` as JSON. (`raw` carries the provider's event text, which is not
    /// re-parsed here: its payload is that text parsed, done where it leaves for JavaScript.)
    pub fn payload(&self) -> Value {
        match self {
            Chunk::Start { message_id } => json!({ "messageId": message_id }),
            Chunk::StepStart { message_id, request_body, warnings } => json!({
                "messageId": message_id,
                "request": { "body": request_body },
                "warnings": warnings_json(warnings),
            }),
            Chunk::TextStart { id }
            | Chunk::TextEnd { id }
            | Chunk::ReasoningStart { id }
            | Chunk::ReasoningEnd { id } => json!({ "id": id }),
            Chunk::TextDelta { id, text } | Chunk::ReasoningDelta { id, text } => json!({ "id": id, "text": text }),
            Chunk::ToolCallInputStreamingStart { tool_call_id, tool_name } => {
                json!({ "toolCallId": tool_call_id, "toolName": tool_name })
            }
            Chunk::ToolCallDelta { tool_call_id, tool_name, args_text_delta } => json!({
                "toolCallId": tool_call_id, "toolName": tool_name, "argsTextDelta": args_text_delta,
            }),
            Chunk::ToolCallInputStreamingEnd { tool_call_id } => json!({ "toolCallId": tool_call_id }),
            Chunk::ToolCall(call) => call.to_json(),
            Chunk::ToolResult { call, result, is_error } => {
                let mut v = call.to_json();
                v["result"] = result.clone();
                if *is_error {
                    v["isError"] = Value::Bool(true);
                }
                v
            }
            Chunk::ToolError { call, message } => {
                let mut v = call.to_json();
                v["error"] = json!({ "name": "ToolError", "message": message });
                v
            }
            Chunk::ToolOutput { tool_call_id, tool_name, output } => {
                json!({ "toolCallId": tool_call_id, "toolName": tool_name, "output": output })
            }
            Chunk::ToolCallApproval { call, sub_agent } => {
                let mut v = call.to_json();
                v["resumeSchema"] = Value::String(APPROVAL_RESUME_SCHEMA.into());
                if let Some(sub) = sub_agent {
                    v["subAgent"] = (**sub).clone();
                }
                v
            }
            Chunk::ToolCallSuspended { call, suspend_payload, resume_schema } => {
                let mut v = call.to_json();
                v["suspendPayload"] = suspend_payload.clone();
                if let Some(s) = resume_schema {
                    v["resumeSchema"] = Value::String(s.to_string());
                }
                v
            }
            Chunk::ToolOutputDenied { call, reason } => {
                let mut v = call.to_json();
                let mut approval = json!({ "id": call.tool_call_id, "approved": false });
                if let Some(r) = reason {
                    approval["reason"] = Value::String(r.clone());
                }
                v["approval"] = approval;
                v
            }
            Chunk::Data { data, .. } => data.clone(),
            Chunk::Background { payload, .. } => payload.clone(),
            Chunk::IsTaskComplete { payload } => (**payload).clone(),
            Chunk::StepFinish { step, is_continued, total_usage } => json!({
                "messageId": step.message_id,
                "stepResult": {
                    "reason": step.finish_reason.as_str(),
                    "isContinued": is_continued,
                    "warnings": warnings_json(&step.warnings),
                },
                "output": {
                    "text": step.text,
                    "toolCalls": step.tool_calls.iter().map(ToolCall::to_json).collect::<Vec<_>>(),
                    "usage": usage_json(&step.usage),
                },
                "metadata": {
                    "request": { "body": step.request_body },
                    "id": step.response.id,
                    "modelId": step.response.model_id,
                    "timestamp": step.response.timestamp_ms,
                },
                "totalUsage": usage_json(total_usage),
            }),
            Chunk::Finish { reason, usage, total_usage, model_id } => json!({
                "stepResult": { "reason": reason.as_str() },
                "output": { "usage": usage_json(usage) },
                "totalUsage": usage_json(total_usage),
                "metadata": { "modelId": model_id },
            }),
            Chunk::Error(e) => json!({ "error": error_json(e) }),
            Chunk::Abort { reason } => match reason {
                Some(r) => json!({ "reason": r }),
                None => json!({}),
            },
            Chunk::Tripwire(t) => t.to_json(),
            Chunk::Raw(text) => Value::String(text.clone()),
            Chunk::Logged(v) => v.get("payload").cloned().unwrap_or(Value::Null),
            Chunk::Object { .. } | Chunk::ObjectResult { .. } => Value::Object(self.top_level().unwrap_or_default()),
        }
    }

    /// The fields of a chunk that carries them beside `type`, `runId` and `from` instead of in
    /// a `payload` (structured output's, as in the reference).
    pub fn top_level(&self) -> Option<Map<String, Value>> {
        let mut m = Map::new();
        match self {
            Chunk::Object { object } => {
                m.insert("object".into(), Value::clone(object));
            }
            Chunk::ObjectResult { object, metadata } => {
                m.insert("object".into(), object.clone());
                if let Some(meta) = metadata {
                    m.insert("metadata".into(), meta.clone());
                }
            }
            _ => return None,
        }
        Some(m)
    }
}

/// `{ inputTokens, outputTokens, totalTokens, reasoningTokens?, cachedInputTokens? }`; counts the
/// provider did not report are left out. `totalTokens` is the provider's own total when it gave
/// one, else input + output.
pub fn usage_json(u: &Usage) -> Value {
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<u64>| {
        if let Some(v) = v {
            m.insert(k.into(), v.into());
        }
    };
    put("inputTokens", u.input_tokens);
    put("outputTokens", u.output_tokens);
    let total = u.total_tokens.or(match (u.input_tokens, u.output_tokens) {
        (Some(i), Some(o)) => Some(i + o),
        _ => None,
    });
    put("totalTokens", total);
    put("reasoningTokens", u.reasoning_tokens);
    put("cachedInputTokens", u.cached_input_tokens);
    Value::Object(m)
}

pub fn warnings_json(ws: &[Warning]) -> Value {
    Value::Array(
        ws.iter()
            .map(|w| {
                let mut m = Map::new();
                m.insert("type".into(), w.kind.into());
                if let Some(s) = &w.setting {
                    m.insert("setting".into(), s.as_str().into());
                }
                if let Some(s) = &w.message {
                    m.insert("details".into(), s.as_str().into());
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// `{ name, message, status?, body? }` as carried by `error` chunks.
pub fn error_json(e: &AgentError) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), e.name().into());
    m.insert("message".into(), e.to_string().into());
    if let Some(s) = e.status() {
        m.insert("status".into(), s.into());
    }
    if let Some(b) = e.body() {
        m.insert("body".into(), b.into());
    }
    if let Some(code) = e.storage_code() {
        m.insert("code".into(), code.into());
    }
    if let AgentError::StructuredOutput { code, value, .. } = e {
        m.insert("code".into(), (*code).into());
        m.insert("id".into(), (*code).into());
        m.insert("details".into(), json!({ "value": value }));
    }
    Value::Object(m)
}

/// Appends `s` as a JSON string literal.
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_strings_match_serde() {
        for s in ["", "plain", "quote \" and \\ slash", "line\nbreak\ttab\r", "\u{1}\u{1f}ctl", "héllo 🌍 \u{2028}"] {
            let mut out = String::new();
            super::push_json_str(&mut out, s);
            assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s);
            assert_eq!(out, serde_json::to_string(s).unwrap());
        }
    }
}
