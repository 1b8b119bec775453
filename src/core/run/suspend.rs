//! The loop's side of suspension (SPEC §19.2–19.3): a step whose calls wait is written to
//! storage as a run record with its snapshot before the waiting chunks go out; a resume reads
//! the snapshot back into the step it interrupted.

use std::rc::Rc;

use serde_json::{json, Value};

use crate::core::chunk::{usage_json, Chunk};
use crate::core::error::AgentError;
use crate::core::input::parse_messages;
use crate::core::memory::{assistant_parts, Session, Store};
use crate::core::model::{AssistantPart, FinishReason, ModelMessage, Usage};
use crate::core::runs::{RunRecord, RunStatus, WaitKind, WaitingCall, SNAPSHOT_V};
use crate::core::step::{assistant_part_json, messages_json, ResponseInfo, StepResult, ToolCall};
use crate::core::tools::{Decision, Outcome, ToolResult};

/// Where a run's record goes, and how the stream ends when it suspends.
#[derive(Clone)]
pub struct RunsCfg {
    /// The storage of the run records (the agent's memory storage or the default one); `None`
    /// when it keeps none: the run can then be decided only while it is live here.
    pub store: Option<Rc<dyn Store>>,
    pub agent_id: String,
    /// `closeOnSuspend`: end the stream at the suspension with finish reason 'suspended'.
    pub close_on_suspend: bool,
    /// Facts restored on resume that the loop does not otherwise keep (model settings, tool
    /// choice, …), written into the snapshot as given.
    pub restore: Value,
    /// `autoResumeSuspendedTools` (SPEC §19.7).
    pub auto_resume: bool,
    /// The suspended calls on the thread the model may resume (filled in at run start).
    pub auto_waits: Vec<super::auto_resume::AutoWait>,
    /// `reconnectable`'s `retainMs` (SPEC §19.8): the run keeps a chunk log, and its record
    /// outlives it (the bindings write its end).
    pub retain_ms: Option<f64>,
}

/// A run resumed from its snapshot: the step it stopped in, and the decision that resumes it.
pub struct Resume {
    /// The conversation before the step.
    pub messages: Vec<ModelMessage>,
    pub step: StepResult,
    /// The calls of the step that had settled.
    pub settled: Vec<ToolResult>,
    pub waiting: Vec<WaitingCall>,
    pub decision: (String, Decision),
    /// Steps before this one, for `maxSteps`.
    pub step_count: usize,
    pub total_usage: Usage,
    pub message_id: String,
    pub created_at: f64,
    /// The stored parts of the steps before this one, and when the message was first stored
    /// (SPEC §19.5; absent when the run had no memory).
    pub stored_parts: Vec<Value>,
    pub stored_at: Option<String>,
    /// The `seq` the suspended run's chunks reached: the resumed run numbers on from it.
    pub last_seq: u64,
}

/// What memory needs to resume the run's stored message (SPEC §19.5), into the snapshot: the
/// stored parts of the steps before the waiting one, and the message's time.
pub fn snapshot_memory(snap: &mut Value, session: &mut Session, steps: &[StepResult], now: f64) {
    let mut parts = session.prior_parts.clone();
    parts.extend(assistant_parts(steps, None).0);
    snap["storedParts"] = Value::Array(parts);
    snap["storedAt"] = session.assistant_time(now).into();
}

/// The run's complete steps and the one that waits, with the calls settled so far.
pub fn steps_with(steps: &[StepResult], current: &StepResult, settled: &[ToolResult], data: &[Value], bg: Option<&super::BackgroundRun>) -> Vec<StepResult> {
    let mut current = current.clone();
    current.tool_results = settled.to_vec();
    current.data_parts = data.to_vec();
    let mut all = steps.to_vec();
    all.push(current);
    super::with_finished_tasks(&all, bg)
}

/// The chunk that announces a waiting call.
pub fn waiting_chunk(w: &WaitingCall) -> Chunk {
    match w.kind {
        WaitKind::Approval => Chunk::ToolCallApproval { call: w.call.clone(), sub_agent: None },
        WaitKind::Suspension => Chunk::ToolCallSuspended {
            call: w.call.clone(),
            suspend_payload: w.suspend_payload.clone().unwrap_or(Value::Null),
            resume_schema: w.resume_schema.clone(),
        },
    }
}

fn usage_of(v: &Value) -> Usage {
    let n = |k: &str| v.get(k).and_then(Value::as_u64);
    Usage {
        input_tokens: n("inputTokens"),
        output_tokens: n("outputTokens"),
        total_tokens: n("totalTokens"),
        reasoning_tokens: n("reasoningTokens"),
        cached_input_tokens: n("cachedInputTokens"),
    }
}

fn outcome_json(o: &Outcome) -> Value {
    match o {
        Outcome::Result { result, is_error } => json!({ "type": "result", "value": result, "isError": is_error }),
        Outcome::Error(message) => json!({ "type": "error", "message": message }),
        Outcome::Denied { reason } => json!({ "type": "denied", "reason": reason }),
        Outcome::Client => json!({ "type": "client" }),
    }
}

fn outcome_of(v: &Value) -> Outcome {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match s("type").as_deref() {
        Some("result") => Outcome::Result {
            result: v.get("value").cloned().unwrap_or(Value::Null),
            is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
        },
        Some("error") => Outcome::Error(s("message").unwrap_or_default()),
        Some("denied") => Outcome::Denied { reason: s("reason") },
        _ => Outcome::Client,
    }
}

/// Everything a resume needs, as JSON (`snapshot.v` = `SNAPSHOT_V`). No function and no API key
/// goes in: the model settings are the sampling ones, the headers stay out.
#[allow(clippy::too_many_arguments)]
pub fn snapshot(
    runs: &RunsCfg,
    messages: &[ModelMessage],
    step: &StepResult,
    settled: &[ToolResult],
    step_count: usize,
    total_usage: &Usage,
    created_at: f64,
) -> Value {
    json!({
        "v": SNAPSHOT_V,
        "messages": messages_json(messages),
        "step": {
            "messageId": step.message_id,
            "parts": step.parts.iter().map(assistant_part_json).collect::<Vec<_>>(),
            "finishReason": step.finish_reason.as_str(),
            "usage": usage_json(&step.usage),
            "requestBody": step.request_body,
            "response": { "id": step.response.id, "modelId": step.response.model_id, "timestamp": step.response.timestamp_ms },
            "dataParts": step.data_parts,
        },
        "settled": settled.iter().map(|r| json!({ "call": r.call.to_json(), "outcome": outcome_json(&r.outcome) })).collect::<Vec<_>>(),
        "stepCount": step_count,
        "totalUsage": usage_json(total_usage),
        "createdAt": created_at,
        "options": runs.restore,
    })
}

fn finish_reason(s: &str) -> FinishReason {
    [FinishReason::Stop, FinishReason::Length, FinishReason::ContentFilter, FinishReason::Error, FinishReason::Other]
        .into_iter()
        .find(|r| r.as_str() == s)
        .unwrap_or(FinishReason::ToolCalls)
}

/// Reads a record's snapshot back into the step it interrupted.
pub fn restore(rec: &RunRecord, decision: (String, Decision)) -> Result<Resume, AgentError> {
    let bad = |what: &str| crate::core::runs::resume_error("not-found", format!("run '{}' has a damaged snapshot ({what})", rec.run_id));
    let snap = rec.snapshot.as_ref().ok_or_else(|| bad("none"))?;
    let messages = parse_messages(snap.get("messages").unwrap_or(&Value::Null), "snapshot.messages").map_err(|_| bad("messages"))?;
    let st = snap.get("step").ok_or_else(|| bad("step"))?;
    let parts = parse_messages(&json!([{ "role": "assistant", "content": st.get("parts").cloned().unwrap_or(json!([])) }]), "snapshot.step")
        .map_err(|_| bad("step parts"))?;
    let parts = match parts.into_iter().next() {
        Some(ModelMessage::Assistant(p)) => p,
        _ => Vec::new(),
    };
    let tool_calls: Vec<ToolCall> = parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::ToolCall { tool_call_id, tool_name, args, .. } => {
                Some(ToolCall { tool_call_id: tool_call_id.clone(), tool_name: tool_name.clone(), args: args.clone() })
            }
            _ => None,
        })
        .collect();
    let text = parts.iter().filter_map(|p| if let AssistantPart::Text(t, _) = p { Some(t.as_str()) } else { None }).collect();
    let reasoning = parts.iter().filter_map(|p| if let AssistantPart::Reasoning(t, _) = p { Some(t.as_str()) } else { None }).collect();
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let response = st.get("response").cloned().unwrap_or(Value::Null);
    let message_id = s(st, "messageId").unwrap_or_default();
    let step = StepResult {
        message_id: message_id.clone(),
        text,
        reasoning,
        tool_calls,
        finish_reason: finish_reason(&s(st, "finishReason").unwrap_or_default()),
        usage: usage_of(st.get("usage").unwrap_or(&Value::Null)),
        warnings: Vec::new(),
        request_body: s(st, "requestBody").unwrap_or_default(),
        response: ResponseInfo {
            id: s(&response, "id"),
            model_id: s(&response, "modelId"),
            timestamp_ms: response.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0),
        },
        parts,
        tool_results: Vec::new(),
        data_parts: st.get("dataParts").and_then(Value::as_array).cloned().unwrap_or_default(),
    };
    let settled = match snap.get("settled") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                let c = i.get("call").cloned().unwrap_or(Value::Null);
                let call = ToolCall {
                    tool_call_id: s(&c, "toolCallId").unwrap_or_default(),
                    tool_name: s(&c, "toolName").unwrap_or_default(),
                    args: c.get("args").cloned().unwrap_or(Value::Null),
                };
                ToolResult { call, outcome: outcome_of(i.get("outcome").unwrap_or(&Value::Null)) }
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Resume {
        messages,
        step,
        settled,
        waiting: rec.waiting.clone(),
        decision,
        step_count: snap.get("stepCount").and_then(Value::as_u64).unwrap_or(0) as usize,
        total_usage: usage_of(snap.get("totalUsage").unwrap_or(&Value::Null)),
        message_id,
        created_at: snap.get("createdAt").and_then(Value::as_f64).unwrap_or(rec.created_at),
        stored_parts: snap.get("storedParts").and_then(Value::as_array).cloned().unwrap_or_default(),
        stored_at: snap.get("storedAt").and_then(Value::as_str).map(str::to_owned),
        last_seq: rec.last_seq,
    })
}

/// The record of a run that suspends now.
pub fn record(run_id: &str, runs: &RunsCfg, thread: Option<(&str, &str)>, waiting: &[WaitingCall], snapshot: Value, created_at: f64, now: f64) -> RunRecord {
    RunRecord {
        run_id: run_id.to_string(),
        agent_id: runs.agent_id.clone(),
        thread_id: thread.map(|t| t.0.to_string()),
        resource_id: thread.map(|t| t.1.to_string()),
        status: RunStatus::Suspended,
        created_at,
        updated_at: now,
        heartbeat_at: None,
        waiting: waiting.to_vec(),
        snapshot: Some(snapshot),
        last_seq: 0,
        retain_until: None,
        retain_ms: runs.retain_ms,
    }
}
