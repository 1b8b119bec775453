//! Tests of the chunk → AI SDK UI-message-stream mapping: every chunk type, the exact fields of
//! each part (the AI SDK 5 schema), ids kept consistent, a full two-step tool run, and a reader
//! model that fails where the `ai` package's reader would throw, fed every run with each chunk
//! left out in turn.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::*;
use crate::core::chunk::Chunk;
use crate::core::error::AgentError;
use crate::core::model::{FinishReason, Usage};
use crate::core::step::ToolCall;

const RUN: &str = "run-1";

/// A chunk as `fullStream` carries it (chunk_js.rs writes the same shape).
fn js(c: Chunk) -> Value {
    if let Chunk::Data { kind, data, id, transient } = c {
        let mut v = json!({ "type": kind, "data": data });
        if let Some(id) = id {
            v["id"] = id.into();
        }
        if transient {
            v["transient"] = true.into();
        }
        return v;
    }
    json!({ "type": c.type_name(), "runId": RUN, "from": c.from(), "payload": c.payload() })
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall { tool_call_id: id.into(), tool_name: name.into(), args }
}

fn step_start() -> Value {
    js(Chunk::StepStart { message_id: "msg-1".into(), request_body: "{}".into(), warnings: vec![] })
}

/// `step-finish` as the run writes it (the mapping reads none of it).
fn step_finish(reason: &str) -> Value {
    json!({ "type": "step-finish", "runId": RUN, "from": "AGENT", "payload": {
        "messageId": "msg-1",
        "stepResult": { "reason": reason, "isContinued": reason == "tool-calls", "warnings": [] },
        "output": { "text": "", "toolCalls": [], "usage": {} },
        "metadata": { "request": { "body": "{}" } },
        "totalUsage": {},
    } })
}

fn finish() -> Value {
    js(Chunk::Finish {
        reason: FinishReason::Stop,
        usage: Usage::default(),
        total_usage: Usage::default(),
        model_id: None,
    })
}

/// Maps a whole sequence with one state.
fn map_all(chunks: &[Value]) -> Vec<Value> {
    let mut state = UiState::default();
    chunks.iter().flat_map(|c| to_ui_parts(c, &mut state)).collect()
}

/// Maps one chunk with a fresh state.
fn one(chunk: Value) -> Vec<Value> {
    map_all(&[chunk])
}

fn types(parts: &[Value]) -> Vec<&str> {
    parts.iter().map(|p| p["type"].as_str().unwrap()).collect()
}

/// The fields AI SDK 5's `uiMessageChunkSchema` allows for a part (required, optional); the
/// mapping must stay inside them.
fn check_fields(part: &Value) {
    let obj = part.as_object().expect("a part is an object");
    let kind = obj["type"].as_str().expect("type is a string");
    let (required, optional): (&[&str], &[&str]) = match kind {
        "start" => (&[], &["messageId", "messageMetadata"]),
        "start-step" | "finish-step" | "abort" => (&[], &[]),
        "finish" => (&[], &["finishReason", "messageMetadata"]),
        "text-start" | "text-end" | "reasoning-start" | "reasoning-end" => (&["id"], &[]),
        "text-delta" | "reasoning-delta" => (&["id", "delta"], &[]),
        "tool-input-start" => (&["toolCallId", "toolName"], &[]),
        "tool-input-delta" => (&["toolCallId", "inputTextDelta"], &[]),
        "tool-input-available" => (&["toolCallId", "toolName", "input"], &[]),
        "tool-output-available" => (&["toolCallId", "output"], &[]),
        "tool-output-error" => (&["toolCallId", "errorText"], &[]),
        "tool-input-error" => (&["toolCallId", "toolName", "input", "errorText"], &[]),
        "error" => (&["errorText"], &[]),
        k if k.starts_with("data-") => (&["data"], &["id", "transient"]),
        other => panic!("{other} is not a part type of the AI SDK 5 UI message stream"),
    };
    for key in required {
        assert!(obj.contains_key(*key), "{kind} lacks {key}: {part}");
    }
    for key in obj.keys().filter(|k| *k != "type") {
        assert!(required.contains(&key.as_str()) || optional.contains(&key.as_str()), "{kind} has field {key}: {part}");
    }
    for key in ["id", "toolCallId", "toolName", "delta", "inputTextDelta", "errorText", "messageId"] {
        if let Some(v) = obj.get(key) {
            assert!(v.is_string(), "{kind}.{key} must be a string: {part}");
        }
    }
    if let Some(t) = obj.get("transient") {
        assert!(t.is_boolean(), "{kind}.transient must be a boolean");
    }
}

/// A model of the `ai` package's reader (processUIMessageStream): it throws on a delta or end
/// of a text/reasoning part it does not hold, a tool-input-delta without tool-input-start, and a
/// tool output for a call it has no part for. Returns the tool parts' final states by call id.
fn read_like_ai(parts: &[Value]) -> Vec<(String, String)> {
    let mut text = HashSet::new();
    let mut reasoning = HashSet::new();
    let mut partial = HashSet::new();
    let mut tools: Vec<(String, String)> = Vec::new();
    let set_state =
        |tools: &mut Vec<(String, String)>, id: &str, state: &str| match tools.iter_mut().find(|(t, _)| t == id) {
            Some(t) => t.1 = state.into(),
            None => tools.push((id.into(), state.into())),
        };
    for p in parts {
        check_fields(p);
        let id = p["id"].as_str().unwrap_or("").to_string();
        let call = p["toolCallId"].as_str().unwrap_or("").to_string();
        match p["type"].as_str().unwrap() {
            "text-start" => drop(text.insert(id)),
            "text-delta" => assert!(text.contains(&id), "text-delta of unknown part {id}"),
            "text-end" => assert!(text.remove(&id), "text-end of unknown part {id}"),
            "reasoning-start" => drop(reasoning.insert(id)),
            "reasoning-delta" => assert!(reasoning.contains(&id), "reasoning-delta of unknown part {id}"),
            "reasoning-end" => assert!(reasoning.remove(&id), "reasoning-end of unknown part {id}"),
            "finish-step" => {
                text.clear();
                reasoning.clear();
            }
            "tool-input-start" => {
                partial.insert(call.clone());
                set_state(&mut tools, &call, "input-streaming");
            }
            "tool-input-delta" => assert!(partial.contains(&call), "tool-input-delta before tool-input-start ({call})"),
            "tool-input-available" => set_state(&mut tools, &call, "input-available"),
            "tool-input-error" => set_state(&mut tools, &call, "output-error"),
            "tool-output-available" | "tool-output-error" => {
                assert!(tools.iter().any(|(t, _)| *t == call), "tool output before tool-input-available ({call})");
                let state = if p["type"] == "tool-output-error" { "output-error" } else { "output-available" };
                set_state(&mut tools, &call, state);
            }
            _ => {}
        }
    }
    tools
}

/// A run as the package streams it: step 1 calls the weather tool (input streamed in pieces),
/// writes progress, gets the result; step 2 reasons and answers.
fn two_step_tool_run() -> Vec<Value> {
    let c = call("call_1", "weather", json!({ "city": "Paris" }));
    vec![
        js(Chunk::Start { message_id: "msg-1".into() }),
        step_start(),
        js(Chunk::ToolCallInputStreamingStart { tool_call_id: "call_1".into(), tool_name: "weather".into() }),
        js(Chunk::ToolCallDelta {
            tool_call_id: "call_1".into(),
            tool_name: "weather".into(),
            args_text_delta: "{\"ci".into(),
        }),
        js(Chunk::ToolCallDelta {
            tool_call_id: "call_1".into(),
            tool_name: "weather".into(),
            args_text_delta: "ty\":\"Paris\"}".into(),
        }),
        js(Chunk::ToolCallInputStreamingEnd { tool_call_id: "call_1".into() }),
        js(Chunk::ToolCall(c.clone())),
        js(Chunk::ToolOutput {
            tool_call_id: "call_1".into(),
            tool_name: "weather".into(),
            output: json!({ "stage": "fetching" }),
        }),
        js(Chunk::Data {
            kind: "data-progress".into(),
            data: json!({ "percent": 50 }),
            id: Some("p1".into()),
            transient: false,
        }),
        js(Chunk::ToolResult { call: c, result: json!({ "temperatureC": 18 }), is_error: false }),
        step_finish("tool-calls"),
        step_start(),
        js(Chunk::ReasoningStart { id: "r1".into() }),
        js(Chunk::ReasoningDelta { id: "r1".into(), text: "Warm.".into() }),
        js(Chunk::ReasoningEnd { id: "r1".into() }),
        js(Chunk::TextStart { id: "t1".into() }),
        js(Chunk::TextDelta { id: "t1".into(), text: "It is ".into() }),
        js(Chunk::TextDelta { id: "t1".into(), text: "18 °C.".into() }),
        js(Chunk::TextEnd { id: "t1".into() }),
        step_finish("stop"),
        finish(),
    ]
}

// ---------------------------------------------------------------------------------------------
// Each chunk type

#[test]
fn start_carries_the_message_id_when_there_is_one() {
    assert_eq!(
        one(js(Chunk::Start { message_id: "msg-9".into() })),
        vec![json!({ "type": "start", "messageId": "msg-9" })]
    );
    assert_eq!(one(js(Chunk::Start { message_id: String::new() })), vec![json!({ "type": "start" })]);
    assert_eq!(
        one(json!({ "type": "start", "runId": RUN, "from": "AGENT", "payload": {} })),
        vec![json!({ "type": "start" })]
    );
}

#[test]
fn steps_become_start_step_and_finish_step_without_payload() {
    // start-step waits for the step's first part.
    assert_eq!(one(step_start()), Vec::<Value>::new());
    let text = js(Chunk::TextStart { id: "t1".into() });
    assert_eq!(types(&map_all(&[step_start(), text])), vec!["start-step", "text-start"]);
    assert_eq!(one(step_finish("stop")), vec![json!({ "type": "finish-step" })]);
    // A step that showed nothing is still a step.
    assert_eq!(map_all(&[step_start(), step_finish("stop")]), vec![json!({ "type": "start-step" }), json!({ "type": "finish-step" })]);
}

#[test]
fn a_step_that_fails_or_is_aborted_before_any_content_sends_no_start_step() {
    let api = AgentError::ApiCall { message: "boom".into(), status: Some(500), body: None, retryable: true, retry_after_ms: None };
    let start = js(Chunk::Start { message_id: "m".into() });
    assert_eq!(types(&map_all(&[start.clone(), step_start(), js(Chunk::Error(api))])), vec!["start", "error"]);
    assert_eq!(types(&map_all(&[start, step_start(), js(Chunk::Abort { reason: None })])), vec!["start", "abort"]);
}

#[test]
fn text_chunks_become_text_parts_with_their_id_and_delta() {
    let parts = map_all(&[
        js(Chunk::TextStart { id: "t1".into() }),
        js(Chunk::TextDelta { id: "t1".into(), text: "Hi \"you\"\n".into() }),
        js(Chunk::TextEnd { id: "t1".into() }),
    ]);
    assert_eq!(
        parts,
        vec![
            json!({ "type": "text-start", "id": "t1" }),
            json!({ "type": "text-delta", "id": "t1", "delta": "Hi \"you\"\n" }),
            json!({ "type": "text-end", "id": "t1" }),
        ]
    );
}

#[test]
fn reasoning_chunks_become_reasoning_parts() {
    let parts = map_all(&[
        js(Chunk::ReasoningStart { id: "r1".into() }),
        js(Chunk::ReasoningDelta { id: "r1".into(), text: "Let me think.".into() }),
        js(Chunk::ReasoningEnd { id: "r1".into() }),
    ]);
    assert_eq!(
        parts,
        vec![
            json!({ "type": "reasoning-start", "id": "r1" }),
            json!({ "type": "reasoning-delta", "id": "r1", "delta": "Let me think." }),
            json!({ "type": "reasoning-end", "id": "r1" }),
        ]
    );
}

#[test]
fn streamed_tool_input_becomes_tool_input_start_and_deltas_and_its_end_is_dropped() {
    let parts = map_all(&[
        js(Chunk::ToolCallInputStreamingStart { tool_call_id: "call_1".into(), tool_name: "weather".into() }),
        js(Chunk::ToolCallDelta {
            tool_call_id: "call_1".into(),
            tool_name: "weather".into(),
            args_text_delta: "{\"city\":".into(),
        }),
        js(Chunk::ToolCallInputStreamingEnd { tool_call_id: "call_1".into() }),
    ]);
    assert_eq!(
        parts,
        vec![
            json!({ "type": "tool-input-start", "toolCallId": "call_1", "toolName": "weather" }),
            json!({ "type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": "{\"city\":" }),
        ]
    );
}

#[test]
fn tool_call_becomes_tool_input_available_with_args_as_input() {
    let parts = one(js(Chunk::ToolCall(call("call_1", "weather", json!({ "city": "Paris" })))));
    assert_eq!(
        parts,
        vec![
            json!({ "type": "tool-input-available", "toolCallId": "call_1", "toolName": "weather", "input": { "city": "Paris" } })
        ]
    );
}

#[test]
fn tool_result_becomes_tool_output_available_and_an_error_result_tool_output_error() {
    let c = call("call_1", "weather", json!({}));
    let mut state = UiState::default();
    to_ui_parts(&js(Chunk::ToolCall(c.clone())), &mut state);
    let ok = to_ui_parts(
        &js(Chunk::ToolResult { call: c.clone(), result: json!({ "t": 18 }), is_error: false }),
        &mut state,
    );
    assert_eq!(ok, vec![json!({ "type": "tool-output-available", "toolCallId": "call_1", "output": { "t": 18 } })]);
    let text = to_ui_parts(
        &js(Chunk::ToolResult { call: c.clone(), result: json!("quota exceeded"), is_error: true }),
        &mut state,
    );
    assert_eq!(
        text,
        vec![json!({ "type": "tool-output-error", "toolCallId": "call_1", "errorText": "quota exceeded" })]
    );
    let obj = to_ui_parts(&js(Chunk::ToolResult { call: c, result: json!({ "code": 7 }), is_error: true }), &mut state);
    assert_eq!(obj, vec![json!({ "type": "tool-output-error", "toolCallId": "call_1", "errorText": "{\"code\":7}" })]);
}

#[test]
fn tool_error_becomes_tool_output_error_with_the_message() {
    let c = call("call_1", "weather", json!({}));
    let parts = map_all(&[js(Chunk::ToolCall(c.clone())), js(Chunk::ToolError { call: c, message: "boom".into() })]);
    assert_eq!(parts[1], json!({ "type": "tool-output-error", "toolCallId": "call_1", "errorText": "boom" }));
}

#[test]
fn a_declined_call_becomes_tool_output_error_with_the_words_the_model_got() {
    let c = call("call_1", "weather", json!({}));
    let with = map_all(&[
        js(Chunk::ToolCall(c.clone())),
        js(Chunk::ToolOutputDenied { call: c.clone(), reason: Some("not now".into()) }),
    ]);
    assert_eq!(
        with[1],
        json!({ "type": "tool-output-error", "toolCallId": "call_1", "errorText": "The user declined this tool call: not now" })
    );
    let without = map_all(&[js(Chunk::ToolCall(c.clone())), js(Chunk::ToolOutputDenied { call: c, reason: None })]);
    assert_eq!(without[1]["errorText"], "The user declined this tool call.");
}

#[test]
fn an_approval_request_becomes_the_reference_data_tool_call_approval_part() {
    let c = call("call_1", "weather", json!({ "city": "Paris" }));
    let parts = map_all(&[js(Chunk::ToolCall(c.clone())), js(Chunk::ToolCallApproval { call: c, sub_agent: None })]);
    assert_eq!(
        parts[1],
        json!({ "type": "data-tool-call-approval", "id": "call_1", "data": {
            "state": "data-tool-call-approval", "runId": RUN, "toolCallId": "call_1", "toolName": "weather",
            "args": { "city": "Paris" }, "resumeSchema": crate::core::chunk::APPROVAL_RESUME_SCHEMA,
        } })
    );
}

#[test]
fn tool_output_that_is_a_data_chunk_becomes_that_data_part_and_other_values_are_left_out() {
    let out = |output: Value| one(js(Chunk::ToolOutput { tool_call_id: "c".into(), tool_name: "w".into(), output }));
    assert_eq!(out(json!({ "stage": "fetching" })), Vec::<Value>::new());
    assert_eq!(out(json!("done")), Vec::<Value>::new());
    assert_eq!(out(json!({ "type": "progress", "data": 1 })), Vec::<Value>::new());
    assert_eq!(
        out(json!({ "type": "data-step", "data": { "n": 1 }, "id": "s1", "extra": true })),
        vec![json!({ "type": "data-step", "id": "s1", "data": { "n": 1 } })]
    );
}

#[test]
fn data_chunks_pass_as_data_parts_with_id_and_transient_and_nothing_else() {
    let kept = one(js(Chunk::Data {
        kind: "data-progress".into(),
        data: json!({ "percent": 50 }),
        id: Some("p1".into()),
        transient: false,
    }));
    assert_eq!(kept, vec![json!({ "type": "data-progress", "id": "p1", "data": { "percent": 50 } })]);
    let transient =
        one(js(Chunk::Data { kind: "data-status".into(), data: json!("almost"), id: None, transient: true }));
    assert_eq!(transient, vec![json!({ "type": "data-status", "data": "almost", "transient": true })]);
    // A foreign data chunk: unknown fields and a non-string id are dropped, a missing data is null.
    let foreign = one(json!({ "type": "data-x", "id": 5, "runId": RUN, "transient": false }));
    assert_eq!(foreign, vec![json!({ "type": "data-x", "data": null })]);
}

#[test]
fn background_task_chunks_become_data_parts_keyed_by_task_id() {
    let chunk = |kind: &str, payload: Value| json!({ "type": kind, "runId": RUN, "from": "AGENT", "payload": payload });
    let started = json!({ "taskId": "task-1", "toolName": "crawl", "toolCallId": "call_1" });
    for kind in [
        "background-task-started",
        "background-task-running",
        "background-task-output",
        "background-task-completed",
        "background-task-failed",
        "background-task-cancelled",
    ] {
        assert_eq!(
            one(chunk(kind, started.clone())),
            vec![json!({ "type": format!("data-{kind}"), "id": "task-1", "data": started })],
            "{kind}"
        );
    }
    let progress = json!({ "taskIds": ["task-1"], "runningCount": 1, "elapsedMs": 250 });
    assert_eq!(
        one(chunk("background-task-progress", progress.clone())),
        vec![json!({ "type": "data-background-task-progress", "transient": true, "data": progress })]
    );
}

#[test]
fn error_becomes_an_error_part_with_the_message() {
    let api = AgentError::ApiCall {
        message: "Incorrect API key provided".into(),
        status: Some(401),
        body: None,
        retryable: false,
        retry_after_ms: None,
    };
    assert_eq!(one(js(Chunk::Error(api))), vec![json!({ "type": "error", "errorText": "Incorrect API key provided" })]);
    let bare = json!({ "type": "error", "runId": RUN, "from": "AGENT", "payload": {} });
    assert_eq!(one(bare), vec![json!({ "type": "error", "errorText": "An error occurred." })]);
    let text = json!({ "type": "error", "runId": RUN, "from": "AGENT", "payload": { "error": "plain" } });
    assert_eq!(one(text), vec![json!({ "type": "error", "errorText": "plain" })]);
}

#[test]
fn abort_and_finish_are_bare_parts() {
    assert_eq!(one(js(Chunk::Abort { reason: Some("user".into()) })), vec![json!({ "type": "abort" })]);
    assert_eq!(one(finish()), vec![json!({ "type": "finish", "finishReason": "stop" })]);
}

#[test]
fn finish_carries_the_reason_in_the_ai_sdk_values_unless_left_out() {
    let finish_with = |reason: FinishReason| js(Chunk::Finish { reason, usage: Usage::default(), total_usage: Usage::default(), model_id: None });
    assert_eq!(one(finish_with(FinishReason::Length)), vec![json!({ "type": "finish", "finishReason": "length" })]);
    assert_eq!(one(finish_with(FinishReason::ContentFilter)), vec![json!({ "type": "finish", "finishReason": "content-filter" })]);
    // 'abort' is not one of the AI SDK's reasons.
    assert_eq!(one(finish_with(FinishReason::Abort)), vec![json!({ "type": "finish", "finishReason": "other" })]);
    let mut state = UiState::new(true);
    assert_eq!(to_ui_parts(&finish_with(FinishReason::Length), &mut state), vec![json!({ "type": "finish" })]);
}

#[test]
fn arguments_that_are_not_json_become_tool_input_error_then_tool_output_error() {
    let raw = call("call_1", "weather", json!("{\"city\": celsius"));
    let message = "The arguments for tool 'weather' are not valid JSON ({\"city\": celsius). Call the tool again with a JSON object.";
    let error = json!({ "type": "tool-error", "runId": RUN, "from": "AGENT", "payload": {
        "toolCallId": "call_1", "toolName": "weather", "args": "{\"city\": celsius", "error": { "name": "ToolError", "message": message },
    } });
    let parts = map_all(&[
        js(Chunk::ToolCallInputStreamingStart { tool_call_id: "call_1".into(), tool_name: "weather".into() }),
        js(Chunk::ToolCall(raw)),
        error,
    ]);
    assert_eq!(
        parts,
        vec![
            json!({ "type": "tool-input-start", "toolCallId": "call_1", "toolName": "weather" }),
            json!({ "type": "tool-input-error", "toolCallId": "call_1", "toolName": "weather", "input": "{\"city\": celsius", "errorText": message }),
            json!({ "type": "tool-output-error", "toolCallId": "call_1", "errorText": message }),
        ]
    );
    assert_eq!(read_like_ai(&parts), vec![("call_1".to_string(), "output-error".to_string())]);
}

#[test]
fn raw_partial_objects_sources_and_unknown_chunks_have_no_part() {
    for chunk in [
        js(Chunk::Raw("{\"id\":1}".into())),
        json!({ "type": "object", "runId": RUN, "from": "AGENT", "object": { "a": 1 } }),
        json!({ "type": "source", "runId": RUN, "from": "AGENT", "payload": { "url": "https://example.com" } }),
        json!({ "type": "something-new", "payload": {} }),
        json!({ "no": "type" }),
        json!("text"),
        Value::Null,
    ] {
        assert_eq!(one(chunk.clone()), Vec::<Value>::new(), "{chunk}");
    }
}

#[test]
fn object_result_is_a_data_object_part() {
    let chunk = json!({ "type": "object-result", "runId": RUN, "from": "AGENT", "object": { "a": 1 }, "metadata": { "fallback": true } });
    assert_eq!(one(chunk), vec![json!({ "type": "data-object", "data": { "a": 1 } })]);
}

#[test]
fn every_chunk_type_maps_inside_the_ai_sdk_5_schema() {
    let c = call("call_1", "weather", json!({ "city": "Paris" }));
    let mut all = two_step_tool_run();
    all.extend([
        js(Chunk::ToolCall(c.clone())),
        js(Chunk::ToolCallApproval { call: c.clone(), sub_agent: None }),
        js(Chunk::ToolOutputDenied { call: c.clone(), reason: None }),
        js(Chunk::ToolError { call: c, message: "boom".into() }),
        js(Chunk::Error(AgentError::Tool { message: "x".into() })),
        js(Chunk::Abort { reason: None }),
        json!({ "type": "background-task-started", "payload": { "taskId": "t" } }),
    ]);
    for part in map_all(&all) {
        check_fields(&part);
    }
}

// ---------------------------------------------------------------------------------------------
// Whole runs and consistency

#[test]
fn a_two_step_tool_run_maps_to_the_exact_part_sequence() {
    let parts = map_all(&two_step_tool_run());
    assert_eq!(
        types(&parts),
        vec![
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-delta",
            "tool-input-available",
            "data-progress",
            "tool-output-available",
            "finish-step",
            "start-step",
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
        ]
    );
    // Every tool part names the one call; the text and reasoning parts keep their ids.
    for p in parts.iter().filter(|p| p.get("toolCallId").is_some()) {
        assert_eq!(p["toolCallId"], "call_1", "{p}");
    }
    for p in parts.iter().filter(|p| p["type"].as_str().unwrap().starts_with("text-")) {
        assert_eq!(p["id"], "t1");
    }
    for p in parts.iter().filter(|p| p["type"].as_str().unwrap().starts_with("reasoning-")) {
        assert_eq!(p["id"], "r1");
    }
    let input: String = parts
        .iter()
        .filter(|p| p["type"] == "tool-input-delta")
        .map(|p| p["inputTextDelta"].as_str().unwrap())
        .collect();
    assert_eq!(input, "{\"city\":\"Paris\"}");
    assert_eq!(parts[5]["input"], json!({ "city": "Paris" }));
    assert_eq!(parts[7]["output"], json!({ "temperatureC": 18 }));
    assert_eq!(read_like_ai(&parts), vec![("call_1".to_string(), "output-available".to_string())]);
}

#[test]
fn parallel_calls_keep_their_own_ids_and_outcomes() {
    let a = call("call_a", "weather", json!({ "city": "Paris" }));
    let b = call("call_b", "weather", json!({ "city": "Tokyo" }));
    let parts = map_all(&[
        js(Chunk::Start { message_id: "m".into() }),
        step_start(),
        js(Chunk::ToolCall(a.clone())),
        js(Chunk::ToolCall(b.clone())),
        js(Chunk::ToolError { call: b, message: "no data for Tokyo".into() }),
        js(Chunk::ToolResult { call: a, result: json!(18), is_error: false }),
        step_finish("tool-calls"),
        finish(),
    ]);
    assert_eq!(
        read_like_ai(&parts),
        vec![
            ("call_a".to_string(), "output-available".to_string()),
            ("call_b".to_string(), "output-error".to_string())
        ]
    );
}

#[test]
fn an_outcome_for_a_call_the_reader_never_saw_introduces_the_call_first() {
    let c = call("call_9", "lookup", json!({ "q": "x" }));
    let parts = one(js(Chunk::ToolResult { call: c, result: json!("found"), is_error: false }));
    assert_eq!(
        parts,
        vec![
            json!({ "type": "tool-input-available", "toolCallId": "call_9", "toolName": "lookup", "input": { "q": "x" } }),
            json!({ "type": "tool-output-available", "toolCallId": "call_9", "output": "found" }),
        ]
    );
}

#[test]
fn a_delta_whose_start_was_missed_gets_its_start_and_an_end_without_start_is_dropped() {
    let parts = map_all(&[
        js(Chunk::TextDelta { id: "t1".into(), text: "a".into() }),
        js(Chunk::TextDelta { id: "t1".into(), text: "b".into() }),
        js(Chunk::TextEnd { id: "t1".into() }),
        js(Chunk::TextEnd { id: "t1".into() }),
        js(Chunk::ReasoningEnd { id: "r0".into() }),
        js(Chunk::ToolCallDelta { tool_call_id: "c".into(), tool_name: "w".into(), args_text_delta: "{".into() }),
    ]);
    assert_eq!(
        types(&parts),
        vec!["text-start", "text-delta", "text-delta", "text-end", "tool-input-start", "tool-input-delta"]
    );
    read_like_ai(&parts);
}

#[test]
fn input_deltas_after_the_complete_input_are_dropped() {
    let parts = map_all(&[
        js(Chunk::ToolCall(call("c", "w", json!({})))),
        js(Chunk::ToolCallDelta { tool_call_id: "c".into(), tool_name: "w".into(), args_text_delta: "{}".into() }),
    ]);
    assert_eq!(types(&parts), vec!["tool-input-available"]);
}

#[test]
fn text_ids_are_forgotten_at_the_end_of_a_step_like_the_reader_does() {
    let parts = map_all(&[
        step_start(),
        js(Chunk::TextStart { id: "t1".into() }),
        step_finish("stop"),
        js(Chunk::TextEnd { id: "t1".into() }),
        js(Chunk::TextDelta { id: "t1".into(), text: "x".into() }),
    ]);
    assert_eq!(types(&parts), vec!["start-step", "text-start", "finish-step", "text-start", "text-delta"]);
    read_like_ai(&parts);
}

#[test]
fn a_failed_run_ends_with_the_error_part() {
    let api = AgentError::ApiCall {
        message: "Incorrect API key provided".into(),
        status: Some(401),
        body: None,
        retryable: false,
        retry_after_ms: None,
    };
    let parts = map_all(&[js(Chunk::Start { message_id: "m".into() }), step_start(), js(Chunk::Error(api))]);
    assert_eq!(types(&parts), vec!["start", "error"]);
}

#[test]
fn with_any_one_chunk_left_out_the_parts_still_read() {
    let c = call("call_2", "weather", json!({ "city": "Oslo" }));
    let mut run = two_step_tool_run();
    run.extend([
        step_start(),
        js(Chunk::ToolCallInputStreamingStart { tool_call_id: "call_2".into(), tool_name: "weather".into() }),
        js(Chunk::ToolCallDelta {
            tool_call_id: "call_2".into(),
            tool_name: "weather".into(),
            args_text_delta: "{}".into(),
        }),
        js(Chunk::ToolCall(c.clone())),
        js(Chunk::ToolCallApproval { call: c.clone(), sub_agent: None }),
        js(Chunk::ToolOutputDenied { call: c, reason: None }),
        step_finish("tool-calls"),
    ]);
    for skip in 0..run.len() {
        let partial: Vec<Value> = run.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, c)| c.clone()).collect();
        let tools = read_like_ai(&map_all(&partial));
        assert!(tools.iter().all(|(_, s)| s != "input-streaming"), "skipping {skip}: {tools:?}");
    }
}

#[cfg(feature = "workflows")]
#[test]
fn a_workflow_tool_s_events_become_one_data_tool_workflow_card_per_run() {
    let wrap = |event: Value| json!({ "type": "tool-output", "runId": RUN, "from": "USER", "payload": { "toolCallId": "c1", "toolName": "workflow-double", "output": event } });
    let ev = |kind: &str, payload: Value| json!({ "type": kind, "runId": "wf-run", "from": "WORKFLOW", "payload": payload });
    let parts = map_all(&[
        wrap(ev("workflow-start", json!({ "workflowId": "double" }))),
        wrap(ev("workflow-step-start", json!({ "id": "s", "stepName": "s", "payload": { "n": 1 } }))),
        wrap(json!({ "type": "workflow-step-output", "runId": "wf-run", "from": "USER", "payload": { "stepName": "s", "output": { "type": "data-note", "data": "half way" } } })),
        wrap(ev("workflow-step-output", json!({ "stepName": "s", "output": { "plain": true } }))),
        wrap(ev("workflow-step-result", json!({ "id": "s", "stepName": "s", "status": "success", "output": { "n": 2 } }))),
        wrap(ev("workflow-finish", json!({ "workflowStatus": "success", "output": { "n": 2 } }))),
    ]);
    assert_eq!(types(&parts), ["data-tool-workflow", "data-tool-workflow", "data-note", "data-tool-workflow", "data-tool-workflow"]);
    assert!(parts.iter().filter(|p| p["type"] == "data-tool-workflow").all(|p| p["id"] == "wf-run" && p["data"]["name"] == "double"));
    assert_eq!(parts[1]["data"]["steps"]["s"]["status"], "running");
    let last = parts.last().unwrap();
    assert_eq!((last["data"]["status"].clone(), last["data"]["output"].clone()), (json!("success"), json!({ "n": 2 })));
    assert_eq!(last["data"]["steps"]["s"]["output"], json!({ "n": 2 }));
    // A value that is no workflow event gives nothing, as before.
    assert!(map_all(&[wrap(json!({ "progress": 1 }))]).is_empty());
}
