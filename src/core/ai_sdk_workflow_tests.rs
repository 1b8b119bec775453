use serde_json::{json, Value};

use super::*;

fn ev(kind: &str, payload: Value) -> Value {
    json!({ "type": kind, "runId": "r1", "from": "WORKFLOW", "payload": payload })
}

fn run(events: &[Value], include_text: bool) -> Vec<Value> {
    let mut state = WorkflowUiState::new(include_text);
    events.iter().flat_map(|e| workflow_ui_parts(e, &mut state)).collect()
}

fn types(parts: &[Value]) -> Vec<&str> {
    parts.iter().map(|p| p["type"].as_str().unwrap()).collect()
}

fn linear() -> Vec<Value> {
    vec![
        ev("workflow-start", json!({ "workflowId": "wf", "stepName": "a", "args": { "x": 1 }, "status": "running" })),
        ev("workflow-step-start", json!({ "stepName": "a", "id": "a", "payload": { "x": 1 }, "status": "running" })),
        ev("workflow-step-result", json!({ "stepName": "a", "id": "a", "payload": { "x": 1 }, "status": "success", "output": { "y": 2 } })),
        ev("workflow-step-start", json!({ "stepName": "b", "id": "b", "payload": { "y": 2 }, "status": "running" })),
        ev("workflow-step-result", json!({ "stepName": "b", "id": "b", "payload": { "y": 2 }, "status": "success", "output": { "z": 3 } })),
        ev("workflow-finish", json!({ "workflowStatus": "success", "output": { "usage": { "inputTokens": 0, "outputTokens": 0, "totalTokens": 0 } }, "metadata": {} })),
    ]
}

#[test]
fn a_linear_run_is_start_snapshots_step_parts_and_finish() {
    let parts = run(&linear(), true);
    assert_eq!(
        types(&parts),
        [
            "start",
            "data-workflow",
            "data-workflow",
            "data-workflow",
            "data-workflow-step",
            "data-workflow",
            "data-workflow",
            "data-workflow-step",
            "data-workflow",
            "finish"
        ]
    );
    assert_eq!(parts[1], json!({ "type": "data-workflow", "id": "r1", "data": { "name": "wf", "status": "running", "steps": {}, "output": null } }));
    // A finished step's output is held back in the run snapshot, shown in its step part.
    assert_eq!(parts[3]["data"]["steps"]["a"]["status"], "success");
    assert_eq!(parts[3]["data"]["steps"]["a"]["output"], Value::Null);
    assert_eq!(
        parts[4],
        json!({ "type": "data-workflow-step", "id": "r1:a", "data": { "name": "a", "status": "success", "stepId": "a",
            "step": { "name": "a", "status": "success", "input": { "x": 1 }, "output": { "y": 2 }, "suspendPayload": null, "resumePayload": null } } })
    );
    let last = &parts[8]["data"];
    assert_eq!(last["status"], "success");
    assert_eq!(last["steps"]["a"]["output"], json!({ "y": 2 }));
    assert_eq!(last["steps"]["b"]["output"], json!({ "z": 3 }));
    assert_eq!(last["output"]["usage"]["totalTokens"], 0);
    let keys: Vec<&String> = last["steps"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["a", "b"], "steps in the order they started");
}

#[test]
fn a_suspended_step_shows_its_payload_and_the_run_ends_suspended() {
    let parts = run(
        &[
            ev("workflow-start", json!({ "workflowId": "wf" })),
            ev("workflow-step-start", json!({ "stepName": "ok", "id": "ok", "payload": {} })),
            ev("workflow-step-suspended", json!({ "stepName": "ok", "id": "ok", "payload": {}, "status": "suspended", "suspendPayload": { "ask": "approve?" } })),
            ev("workflow-finish", json!({ "workflowStatus": "suspended", "output": { "usage": {} }, "metadata": {} })),
        ],
        true,
    );
    let step = parts.iter().find(|p| p["type"] == "data-workflow-step").unwrap();
    assert_eq!(step["data"]["status"], "suspended");
    assert_eq!(step["data"]["step"]["suspendPayload"], json!({ "ask": "approve?" }));
    assert_eq!(parts[parts.len() - 2]["data"]["status"], "suspended");
}

#[test]
fn an_agent_step_s_chunks_become_its_parts_without_its_own_start_and_finish() {
    let agent = |kind: &str, payload: Value| {
        ev("workflow-step-output", json!({ "stepName": "write", "runId": "r1", "output": { "type": kind, "runId": "a1", "from": "AGENT", "payload": payload } }))
    };
    let events = vec![
        ev("workflow-start", json!({ "workflowId": "wf" })),
        ev("workflow-step-start", json!({ "stepName": "write", "id": "write", "payload": {} })),
        agent("start", json!({})),
        agent("step-start", json!({})),
        agent("text-start", json!({ "id": "t" })),
        agent("text-delta", json!({ "id": "t", "text": "Hi" })),
        agent("text-end", json!({ "id": "t" })),
        agent("step-finish", json!({})),
        agent("finish", json!({ "finishReason": "stop" })),
        ev("workflow-step-result", json!({ "stepName": "write", "id": "write", "status": "success", "output": { "text": "Hi" } })),
    ];
    let with = run(&events, true);
    assert_eq!(
        types(&with),
        ["start", "data-workflow", "data-workflow", "text-start", "text-delta", "text-end", "data-workflow", "data-workflow-step"]
    );
    assert_eq!(with[4], json!({ "type": "text-delta", "id": "t", "delta": "Hi" }));
    let without = run(&events, false);
    assert_eq!(types(&without), ["start", "data-workflow", "data-workflow", "data-workflow", "data-workflow-step"]);
}

#[test]
fn custom_data_passes_as_it_is_and_plain_writer_output_gives_no_part() {
    let parts = run(
        &[
            ev("workflow-start", json!({ "workflowId": "wf" })),
            json!({ "type": "data-progress", "runId": "r1", "from": "WORKFLOW", "data": { "pct": 50 }, "id": "p", "transient": true }),
            ev("workflow-step-output", json!({ "stepName": "s", "output": { "type": "custom-event", "status": "pending" } })),
            ev("workflow-step-output", json!({ "stepName": "s", "output": { "type": "data-note", "data": "n" } })),
        ],
        true,
    );
    assert_eq!(parts[2], json!({ "type": "data-progress", "id": "p", "data": { "pct": 50 }, "transient": true }));
    assert_eq!(parts[3], json!({ "type": "data-note", "data": "n" }));
    assert_eq!(parts.len(), 4);
}

#[test]
fn a_failed_step_and_a_cancelled_run_are_shown() {
    let parts = run(
        &[
            ev("workflow-start", json!({ "workflowId": "wf" })),
            ev("workflow-step-start", json!({ "stepName": "s", "id": "s", "payload": 1 })),
            ev("workflow-step-result", json!({ "stepName": "s", "id": "s", "status": "failed", "error": { "name": "Error", "message": "boom" } })),
            ev("workflow-canceled", json!({})),
        ],
        true,
    );
    assert_eq!(parts[4]["data"]["status"], "failed");
    assert_eq!(parts[5]["data"]["status"], "canceled");
}

#[test]
fn a_stored_run_gives_the_parts_of_its_live_run_down_to_the_final_snapshot() {
    let stored = json!({ "runId": "r1", "workflowName": "wf", "status": "success", "steps": {
        "a": { "status": "success", "payload": { "x": 1 }, "output": { "y": 2 }, "startedAt": 1, "endedAt": 2 },
        "b": { "status": "success", "payload": { "y": 2 }, "output": { "z": 3 }, "startedAt": 2, "endedAt": 3 },
    } });
    let (live, again) = (run(&linear(), true), run(&stored_run_events(&stored), true));
    assert_eq!(types(&again), types(&live));
    let last = |parts: &[Value]| parts.iter().rev().find(|p| p["type"] == "data-workflow").unwrap()["data"].clone();
    let (l, a) = (last(&live), last(&again));
    assert_eq!(a["steps"], l["steps"]);
    assert_eq!((a["status"].clone(), a["name"].clone()), (json!("success"), json!("wf")));
    assert_eq!(a["output"], json!({}), "usage is not stored");

    // Suspended: the step shows with its payload, the stream still ends.
    let waiting = json!({ "runId": "r2", "workflowName": "wf", "status": "suspended", "steps": {
        "ask": { "status": "suspended", "payload": {}, "suspendPayload": { "q": "ok?" } },
    } });
    let parts = run(&stored_run_events(&waiting), true);
    assert_eq!(types(&parts).last(), Some(&"finish"));
    let data = last(&parts);
    assert_eq!(data["status"], "suspended");
    assert_eq!(data["steps"]["ask"]["suspendPayload"], json!({ "q": "ok?" }));
}
