//! `autoResumeSuspendedTools` (SPEC §19.7): a new message on a thread with suspended calls lets
//! the model resume one by calling the same tool again with `resumeData` and
//! `suspendedToolCallId`. The system prompt lists the suspended calls, their tools gain the two
//! optional input properties, and a call that names a waiting one runs it with the resume data
//! and closes the earlier wait (its run ends `completed`, its stored entry goes).
//! Approvals are never resumed this way: consent goes through `approveToolCall` only.

use serde_json::{json, Value};

use crate::core::error::AgentError;
use crate::core::memory::{StoredMessage, Store};
use crate::core::model::ModelMessage;
use crate::core::runs::{RunFilter, RunStatus, WaitKind, WaitingCall};
use crate::core::schema;
use crate::core::step::ToolCall;
use crate::core::tools::{Decision, ToolDef};

/// A suspended call of an earlier run on the thread.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoWait {
    pub run_id: String,
    pub wait: WaitingCall,
}

const EXTRA: [&str; 3] = ["resumeData", "suspendedToolCallId", "suspendedToolRunId"];

/// The suspension waits of this agent's suspended runs on the thread, oldest run first.
pub async fn suspended_on_thread(store: &dyn Store, agent_id: &str, thread_id: &str) -> Result<Vec<AutoWait>, AgentError> {
    let Some(runs) = store.runs() else { return Ok(Vec::new()) };
    let filter = RunFilter { agent_id: Some(agent_id.into()), thread_id: Some(thread_id.into()), statuses: vec![RunStatus::Suspended], ..Default::default() };
    let mut found = runs.list_runs(&filter).await?;
    crate::core::memory::sort_stable(&mut found, &|a, b| a.created_at.total_cmp(&b.created_at));
    Ok(found
        .into_iter()
        .flat_map(|r| {
            let run_id = r.run_id;
            r.waiting.into_iter().filter(|w| w.kind == WaitKind::Suspension).map(move |wait| AutoWait { run_id: run_id.clone(), wait })
        })
        .collect())
}

/// The system note that tells the model which calls it may resume, and how.
pub fn system_note(waits: &[AutoWait]) -> ModelMessage {
    let listed: Vec<Value> = waits
        .iter()
        .map(|a| {
            let c = &a.wait.call;
            json!({
                "toolCallId": c.tool_call_id, "toolName": c.tool_name, "args": c.args,
                "suspendPayload": a.wait.suspend_payload, "resumeSchema": a.wait.resume_schema,
            })
        })
        .collect();
    ModelMessage::System(format!(
        "These tool calls are suspended, waiting for input from the user: {}. When the user's message gives what one of them waits for, \
         resume it by calling the same tool with its original arguments plus `resumeData` (matching its resumeSchema) and \
         `suspendedToolCallId` (its toolCallId). Do not resume a call the user has not answered.",
        Value::Array(listed)
    ))
}

/// Gives the tools of the waiting calls the optional inputs `resumeData` and
/// `suspendedToolCallId` (and `suspendedToolRunId`, accepted and ignored).
pub fn add_inputs(tools: &mut [ToolDef], waits: &[AutoWait]) {
    for t in tools.iter_mut().filter(|t| waits.iter().any(|a| a.wait.call.tool_name == t.name)) {
        let Some(params) = t.parameters.as_object_mut() else { continue };
        let props = params.entry("properties").or_insert_with(|| json!({}));
        let Some(props) = props.as_object_mut() else { continue };
        let data = waits.iter().find(|a| a.wait.call.tool_name == t.name).and_then(|a| a.wait.resume_schema.clone()).unwrap_or_else(|| json!({}));
        props.insert("resumeData".into(), data);
        props.insert("suspendedToolCallId".into(), json!({ "type": "string", "description": "The toolCallId of the suspended call this call resumes" }));
        props.insert("suspendedToolRunId".into(), json!({ "type": "string" }));
    }
}

/// What a call of an auto-resuming run is.
#[derive(Debug, PartialEq)]
pub enum AutoCall {
    /// An ordinary call (without the extra inputs).
    Plain(ToolCall),
    /// It resumes the suspended call `of`: run it as `call` with `decided`.
    Resume { call: ToolCall, of: Box<AutoWait>, decided: (Decision, Option<Value>) },
    /// It names nothing waiting, or its resume data does not match: a `tool-error` to the model.
    Refused(String),
}

/// Reads a call of an auto-resuming run against the suspended calls.
pub fn classify(call: &ToolCall, waits: &[AutoWait]) -> AutoCall {
    let mut stripped = call.clone();
    let (resume_data, named) = match stripped.args.as_object_mut() {
        Some(args) => {
            let data = args.remove("resumeData");
            let named = args.remove("suspendedToolCallId");
            args.remove("suspendedToolRunId");
            (data, named)
        }
        None => (None, None),
    };
    let Some(named) = named.filter(|n| !n.is_null()) else { return AutoCall::Plain(stripped) };
    let id = named.as_str().map(str::to_owned).unwrap_or_else(|| named.to_string());
    let Some(of) = waits.iter().find(|a| a.wait.call.tool_call_id == id && a.wait.call.tool_name == call.tool_name) else {
        return AutoCall::Refused(format!("no suspended call {id} of tool {}: resume only a call listed as suspended", call.tool_name));
    };
    let Some(data) = resume_data else {
        return AutoCall::Refused(format!("resuming suspended call {id} needs resumeData"));
    };
    if let Some(s) = &of.wait.resume_schema {
        let errors = schema::validate(s, &data);
        if !errors.is_empty() {
            let listed: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.path, e.message)).collect();
            return AutoCall::Refused(format!("resumeData for suspended call {id} does not match its resumeSchema: {}", listed.join("; ")));
        }
    }
    let decided = (Decision::Resume(data), of.wait.suspend_payload.clone());
    AutoCall::Resume { call: stripped, of: Box::new(of.clone()), decided }
}

/// Whether `call` carries any of the extra inputs (so it must go through `classify`).
pub fn has_extra(call: &ToolCall) -> bool {
    call.args.as_object().is_some_and(|a| EXTRA.iter().any(|k| a.contains_key(*k)))
}

/// Claims the earlier run for this resume (`suspended` → `resuming`): of two runs resuming the
/// same call, one wins.
pub async fn claim(store: &dyn Store, of: &AutoWait, now: f64) -> Result<(), String> {
    let Some(runs) = store.runs() else { return Ok(()) };
    match crate::core::runs::claim(runs, &of.run_id, now).await {
        Ok(_) => Ok(()),
        Err(_) => Err(format!("suspended call {} is already being resumed", of.wait.call.tool_call_id)),
    }
}

/// Ends the claim: with `resumed_by`, the earlier wait is closed (its run ends `completed`, the
/// call marked `resumedBy`); without (the resume was cut), the run goes back to `suspended`.
pub async fn end(store: &dyn Store, of: &AutoWait, resumed_by: Option<&str>, now: f64) -> Result<(), AgentError> {
    let Some(runs) = store.runs() else { return Ok(()) };
    let Some(resumed_by) = resumed_by else { return crate::core::runs::release(runs, &of.run_id, now).await };
    let w = WaitingCall { resumed_by: Some(resumed_by.to_owned()), ..of.wait.clone() };
    let patch = json!({ "status": "completed", "snapshot": null, "waiting": [w.to_json()], "updatedAt": now, "heartbeatAt": now });
    runs.update_run(&of.run_id, &patch, Some(RunStatus::Resuming)).await.map(drop)
}

/// The stored message that holds the wait `of`, with its entry removed and its part resolved
/// as resumed by `resumed_by`; `None` when it is not among `history`.
pub fn resolve_stored(history: &mut [StoredMessage], of: &AutoWait, resumed_by: &str) -> Option<StoredMessage> {
    let id = of.wait.call.tool_call_id.as_str();
    let m = history.iter_mut().rev().find(|m| m.metadata.as_ref().and_then(|md| md.get("suspendedTools")).and_then(|s| s.get(id)).is_some())?;
    if let Some(Value::Object(md)) = m.metadata.as_mut() {
        if let Some(Value::Object(list)) = md.get_mut("suspendedTools") {
            list.remove(id);
            if list.is_empty() {
                md.remove("suspendedTools");
            }
        }
        if md.is_empty() {
            m.metadata = None;
        }
    }
    for p in m.parts.iter_mut() {
        let Some(inv) = p.get_mut("toolInvocation") else { continue };
        if inv["toolCallId"] == id && inv["state"] == "suspended" {
            inv["state"] = "result".into();
            inv["result"] = json!({ "resumedBy": resumed_by });
        }
    }
    Some(m.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(id: &str) -> AutoWait {
        AutoWait {
            run_id: "old".into(),
            wait: WaitingCall {
                call: ToolCall { tool_call_id: id.into(), tool_name: "pay".into(), args: json!({ "amount": 5 }) },
                kind: WaitKind::Suspension,
                suspend_payload: Some(json!({ "ask": "pin" })),
                resume_schema: Some(json!({ "type": "object", "properties": { "pin": { "type": "string" } }, "required": ["pin"] })),
                resumed_by: None,
            },
        }
    }

    fn call(args: Value) -> ToolCall {
        ToolCall { tool_call_id: "new".into(), tool_name: "pay".into(), args }
    }

    #[test]
    fn a_call_naming_a_suspended_one_resumes_it_with_the_extra_inputs_removed() {
        let waits = [wait("c1")];
        let got = classify(&call(json!({ "amount": 5, "resumeData": { "pin": "1" }, "suspendedToolCallId": "c1", "suspendedToolRunId": "x" })), &waits);
        let AutoCall::Resume { call: c, of, decided } = got else { panic!("{got:?}") };
        assert_eq!(c.args, json!({ "amount": 5 }));
        assert_eq!(of.run_id, "old");
        assert_eq!(decided, (Decision::Resume(json!({ "pin": "1" })), Some(json!({ "ask": "pin" }))));
    }

    #[test]
    fn unknown_ids_and_bad_resume_data_are_refused_and_plain_calls_pass() {
        let waits = [wait("c1")];
        let refused = |args: Value| match classify(&call(args), &waits) {
            AutoCall::Refused(m) => m,
            other => panic!("{other:?}"),
        };
        assert!(refused(json!({ "resumeData": { "pin": "1" }, "suspendedToolCallId": "zz" })).starts_with("no suspended call zz"));
        assert!(refused(json!({ "resumeData": { "pin": 1 }, "suspendedToolCallId": "c1" })).contains("does not match its resumeSchema"));
        assert!(refused(json!({ "suspendedToolCallId": "c1" })).contains("needs resumeData"));
        let mut other_tool = call(json!({ "resumeData": { "pin": "1" }, "suspendedToolCallId": "c1" }));
        other_tool.tool_name = "weather".into();
        assert!(matches!(classify(&other_tool, &waits), AutoCall::Refused(_)), "only the same tool resumes a call");
        assert_eq!(classify(&call(json!({ "amount": 1 })), &waits), AutoCall::Plain(call(json!({ "amount": 1 }))));
    }

    #[test]
    fn the_note_lists_the_calls_and_the_tools_gain_the_inputs() {
        let waits = [wait("c1")];
        let ModelMessage::System(note) = system_note(&waits) else { panic!() };
        assert!(note.contains("\"toolCallId\":\"c1\"") && note.contains("suspendedToolCallId") && note.contains("\"ask\":\"pin\""), "{note}");
        let mut tools = vec![ToolDef {
            name: "pay".into(),
            description: None,
            parameters: json!({ "type": "object", "properties": { "amount": { "type": "number" } } }),
            validation: crate::core::tools::Validation::JsonSchema,
            approval: crate::core::tools::Approval::Never,
            client: false,
            background: None,
        }];
        let mut weather = tools[0].clone();
        weather.name = "weather".into();
        tools.push(weather);
        add_inputs(&mut tools, &waits);
        assert_eq!(tools[0].parameters["properties"]["resumeData"]["required"], json!(["pin"]));
        assert_eq!(tools[0].parameters["properties"]["suspendedToolCallId"]["type"], "string");
        assert!(tools[1].parameters["properties"].get("resumeData").is_none());
    }
}
