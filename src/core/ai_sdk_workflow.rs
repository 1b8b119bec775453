//! A workflow run's events as AI SDK UI-message-stream parts (SPEC §20.6):
//! `toAISdkStream(run.stream(…), { from: 'workflow' })`.
//!
//! The reader sees one `start`, then a `data-workflow` part (id = the run id) each time a step
//! changes, carrying the whole run so far: `{ name, status, steps: { [stepId]: { name, status,
//! input, output, suspendPayload, resumePayload } }, output }`. A step's `output` stays `null` in it
//! until the run's final snapshot at `workflow-finish`; the output goes out at once in the
//! `data-workflow-step` part (id `<runId>:<stepId>`) sent when the step ends or suspends. An agent
//! step's chunks become that agent's own parts (text, reasoning, tools) when
//! `includeTextStreamParts` is on; `data-*` chunks from `writer.custom` pass as they are; `finish`
//! ends the stream.
//!
//! Pure mapping over the event JSON (§20.4), like `ai_sdk` for agents. Must never emit a part
//! outside the UI message stream schema: `useChat` fails on one it does not know.

use serde_json::{Map, Value};

use super::ai_sdk::{data_part, to_ui_parts, UiState};

/// What the reader has been told about one run. One per converted stream.
#[derive(Debug, Default)]
pub struct WorkflowUiState {
    started: bool,
    run_id: String,
    name: String,
    status: String,
    /// In the order the steps first started; a step that runs again (a loop) keeps its place.
    steps: Vec<(String, Map<String, Value>)>,
    /// Each step's output, shown in `steps` only in the final snapshot.
    outputs: Vec<(String, Value)>,
    include_text: bool,
    /// The agent steps' chunks go through the agent mapping.
    agent: UiState,
}

impl WorkflowUiState {
    /// `include_text`: an agent step's text, reasoning and tool chunks become parts too.
    pub fn new(include_text: bool) -> Self {
        WorkflowUiState { include_text, agent: UiState::new(false), ..Default::default() }
    }

    fn step(&mut self, id: &str) -> &mut Map<String, Value> {
        let at = match self.steps.iter().position(|(k, _)| k == id) {
            Some(i) => i,
            None => {
                let mut m = Map::new();
                for key in ["name", "status", "input", "output", "suspendPayload", "resumePayload"] {
                    m.insert(key.into(), Value::Null);
                }
                m["name"] = id.into();
                self.steps.push((id.to_string(), m));
                self.steps.len() - 1
            }
        };
        &mut self.steps[at].1
    }

    /// The `data-workflow` part for the run as it stands; `output` is the run's (final only).
    fn snapshot(&self, final_output: Option<&Value>) -> Value {
        let mut steps = Map::new();
        for (id, s) in &self.steps {
            let mut s = s.clone();
            if final_output.is_some() {
                if let Some((_, out)) = self.outputs.iter().find(|(k, _)| k == id) {
                    s["output"] = out.clone();
                }
            }
            steps.insert(id.clone(), Value::Object(s));
        }
        let mut data = Map::new();
        data.insert("name".into(), self.name.clone().into());
        data.insert("status".into(), self.status.clone().into());
        data.insert("steps".into(), Value::Object(steps));
        data.insert("output".into(), final_output.cloned().unwrap_or(Value::Null));
        part(vec![("type", "data-workflow".into()), ("id", self.run_id.clone().into()), ("data", Value::Object(data))])
    }

    /// The `data-workflow-step` part for a step that ended or suspended, with its output.
    fn step_part(&self, id: &str) -> Value {
        let mut step = self.steps.iter().find(|(k, _)| k == id).map(|(_, s)| s.clone()).unwrap_or_default();
        if let Some((_, out)) = self.outputs.iter().find(|(k, _)| k == id) {
            step.insert("output".into(), out.clone());
        }
        let status = step.get("status").cloned().unwrap_or(Value::Null);
        let data = part(vec![("name", id.into()), ("status", status), ("stepId", id.into()), ("step", Value::Object(step))]);
        part(vec![("type", "data-workflow-step".into()), ("id", format!("{}:{id}", self.run_id).into()), ("data", data)])
    }
}

/// The parts for one workflow event, in order (none for events the reader has no use for:
/// `workflow-step-progress`, a `writer.write` value that is not an agent chunk).
pub fn workflow_ui_parts(event: &Value, state: &mut WorkflowUiState) -> Vec<Value> {
    let mut out = Vec::new();
    let Some(kind) = event.get("type").and_then(Value::as_str) else { return out };
    if !state.started {
        state.started = true;
        state.status = "running".into();
        if let Some(id) = event.get("runId").and_then(Value::as_str) {
            state.run_id = id.to_string();
        }
        out.push(part(vec![("type", "start".into())]));
    }
    let p = event.get("payload").unwrap_or(&Value::Null);
    let step_id = p.get("id").or_else(|| p.get("stepName")).and_then(Value::as_str).unwrap_or_default().to_string();
    match kind {
        "workflow-start" => {
            if let Some(name) = p.get("workflowId").and_then(Value::as_str) {
                state.name = name.to_string();
            }
            out.push(state.snapshot(None));
        }
        "workflow-step-start" | "workflow-step-waiting" => {
            let status = if kind == "workflow-step-start" { "running" } else { "waiting" };
            let s = state.step(&step_id);
            s["status"] = status.into();
            s["input"] = p.get("payload").cloned().unwrap_or(Value::Null);
            if let Some(r) = p.get("resumePayload") {
                s["resumePayload"] = r.clone();
            }
            out.push(state.snapshot(None));
        }
        "workflow-step-result" | "workflow-step-suspended" => {
            let status = p.get("status").cloned().unwrap_or(Value::Null);
            let s = state.step(&step_id);
            s["status"] = status;
            if let Some(v) = p.get("suspendPayload") {
                s["suspendPayload"] = v.clone();
            }
            if let Some(v) = p.get("resumePayload") {
                s["resumePayload"] = v.clone();
            }
            if let Some(output) = p.get("output") {
                state.outputs.retain(|(k, _)| *k != step_id);
                state.outputs.push((step_id.clone(), output.clone()));
            }
            out.push(state.snapshot(None));
            out.push(state.step_part(&step_id));
        }
        "workflow-step-output" => {
            let chunk = p.get("output").unwrap_or(&Value::Null);
            if let Some(d) = data_part(chunk) {
                out.push(d);
            } else if state.include_text && chunk.get("from").and_then(Value::as_str) == Some("AGENT") {
                // The agent step's own start/finish would open and close the reader's message
                // inside the workflow's: only its content goes through.
                out.extend(to_ui_parts(chunk, &mut state.agent).into_iter().filter(|part| {
                    !matches!(part.get("type").and_then(Value::as_str), Some("start" | "finish" | "start-step" | "finish-step" | "abort"))
                }));
            }
        }
        "workflow-canceled" => {
            state.status = "canceled".into();
            out.push(state.snapshot(None));
        }
        "workflow-finish" => {
            if let Some(s) = p.get("workflowStatus").and_then(Value::as_str) {
                state.status = s.to_string();
            }
            let output = p.get("output").cloned().unwrap_or(Value::Null);
            out.push(state.snapshot(Some(&output)));
            out.push(part(vec![("type", "finish".into())]));
        }
        k if k.starts_with("data-") => out.extend(data_part(event)),
        _ => {}
    }
    out
}

/// The events a stored run (`workflow.getWorkflowRunById(…)`) stands for (SPEC §20.6 ✚): its
/// start, each top-level step's start and end as its record has them, and `workflow-finish`
/// with the stored status; so `toAISdkStream` over it ends with the same parts as over the live
/// run. Usage is not stored, so the final `output` has none; a nested workflow shows as its step.
pub fn stored_run_events(run: &Value) -> Vec<Value> {
    let run_id = run.get("runId").cloned().unwrap_or(Value::Null);
    let event = |kind: &str, payload: Value| {
        part(vec![("type", kind.into()), ("runId", run_id.clone()), ("from", "WORKFLOW".into()), ("payload", payload)])
    };
    let mut out = vec![event(
        "workflow-start",
        part(vec![("workflowId", run.get("workflowName").cloned().unwrap_or(Value::Null)), ("status", "running".into())]),
    )];
    let no_steps = Map::new();
    let steps = run.get("steps").and_then(Value::as_object).unwrap_or(&no_steps);
    for (id, rec) in steps {
        let field = |k: &str| rec.get(k).cloned();
        let mut start = vec![("id", Value::from(id.as_str())), ("stepName", id.as_str().into())];
        start.push(("payload", field("payload").unwrap_or(Value::Null)));
        if let Some(r) = field("resumePayload") {
            start.push(("resumePayload", r));
        }
        out.push(event("workflow-step-start", part(start.clone())));
        let status = rec.get("status").and_then(Value::as_str).unwrap_or_default();
        let (kind, extra) = match status {
            "suspended" => ("workflow-step-suspended", "suspendPayload"),
            "success" | "failed" | "bailed" => ("workflow-step-result", "output"),
            _ => continue,
        };
        let mut end = start;
        end.push(("status", status.into()));
        if let Some(v) = field(extra) {
            end.push((if extra == "output" { "output" } else { "suspendPayload" }, v));
        }
        out.push(event(kind, part(end)));
    }
    let status = run.get("status").cloned().unwrap_or_else(|| "pending".into());
    out.push(event("workflow-finish", part(vec![("workflowStatus", status), ("output", Value::Object(Map::new()))])));
    out
}

fn part(fields: Vec<(&'static str, Value)>) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

#[cfg(test)]
#[path = "ai_sdk_workflow_tests.rs"]
mod tests;
