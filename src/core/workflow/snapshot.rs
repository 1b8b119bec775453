//! Snapshots of runs (SPEC §20.5, the reference's `WorkflowRunState`), the package instance's
//! in-memory store of them with the compare-and-set claim a resume makes, and resuming a run
//! from its snapshot (§20.2): finished steps give their recorded outputs, the suspended step
//! runs again with `resumeData` and its `suspendData`.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::context::{ResumePlan, RunCore, Scope, Snapshot};
use super::text::Obj;
use super::exec;
use super::graph::{Body, StepDef, WorkflowDef};
use super::result::{self, WorkflowResult};
use crate::core::error::AgentError;

/// The snapshot of a run that ended (or stopped) with `result`, as text.
pub fn of(run: &RunCore, result: &WorkflowResult) -> Snapshot {
    let suspended_paths: Map<String, Value> = result.suspended.iter().map(|p| (p.join("."), json!(p))).collect();
    let mut o = Obj::new();
    o.val("runId", &run.run_id)
        .val("status", result.status.as_str())
        .raw("value", "{}")
        // `steps` is the snapshot's context as it is: `input`, then each step's record.
        .val("context", &result.steps)
        .val("nestedContext", &result.nested)
        .raw("activePaths", "[]")
        .raw("activeStepsPath", "{}")
        .val("suspendedPaths", &suspended_paths)
        .val("suspended", &result.suspended)
        .raw("resumeLabels", "{}")
        .raw("waitingPaths", "{}")
        .raw("serializedStepGraph", "[]")
        .val("stepExecutionPath", &result.step_execution_path)
        .val("result", &result.result)
        .val("error", &result.error.as_ref().map(|e| e.to_json()))
        .val("tripwire", &result.tripwire)
        .val("requestContext", &*run.request_context.borrow())
        .val("state", &result.state)
        .val("timestamp", &run.now());
    Snapshot::Text { status: result.status.as_str(), text: o.done() }
}

/// The snapshot of a run going on at `scope` (the top level) after a node finished: `running`,
/// with every step's record so far, so `restart` can go on from the last finished step.
pub fn running(scope: &Scope) -> Snapshot {
    let run = &scope.run;
    let mut context = Obj::new();
    context.val("input", &scope.init);
    for (id, rec) in scope.steps.borrow().iter() {
        context.field(id, rec);
    }
    let mut o = Obj::new();
    o.val("runId", &run.run_id)
        .val("status", "running")
        .raw("value", "{}")
        .raw("context", &context.done())
        .val("nestedContext", &*scope.nested.borrow())
        .raw("activePaths", "[]")
        .raw("activeStepsPath", "{}")
        .raw("suspendedPaths", "{}")
        .raw("suspended", "[]")
        .raw("resumeLabels", "{}")
        .raw("waitingPaths", "{}")
        .raw("serializedStepGraph", "[]")
        .val("stepExecutionPath", &*run.path.borrow())
        .raw("result", "null")
        .raw("error", "null")
        .val("requestContext", &*run.request_context.borrow())
        .val("state", &*run.state.borrow())
        .val("timestamp", &run.now());
    Snapshot::Text { status: "running", text: o.done() }
}

/// The snapshot written at `createRun` (`pending`) and when the run starts (`running`).
pub fn initial(run: &RunCore, status: &str, input: &Value) -> Value {
    json!({ "runId": run.run_id, "status": status, "value": {}, "context": { "input": input }, "nestedContext": {}, "activePaths": [],
        "suspendedPaths": {}, "suspended": [], "serializedStepGraph": [], "stepExecutionPath": [], "result": null, "error": null,
        "requestContext": *run.request_context.borrow(), "state": *run.state.borrow(), "timestamp": run.now() })
}

/// The step at `path` (`['inner', 'ask']`) of `def`, looking inside nested workflows.
pub fn find_step(def: &WorkflowDef, path: &[String]) -> Option<Rc<StepDef>> {
    let (first, rest) = path.split_first()?;
    let step = def.nodes.borrow().iter().flat_map(|n| n.steps().into_iter().cloned()).find(|s| &s.id == first)?;
    match (&step.body, rest.is_empty()) {
        (_, true) => Some(step),
        (Body::Workflow(inner), false) => find_step(inner, rest),
        _ => None,
    }
}

/// The paths of a snapshot's suspended steps.
pub fn suspended_paths(snapshot: &Value) -> Vec<Vec<String>> {
    serde_json::from_value(snapshot.get("suspended").cloned().unwrap_or_default()).unwrap_or_default()
}

/// Checks `data` against the resumed step's `resumeSchema` (before the run is claimed, so a bad
/// resume leaves it suspended).
pub async fn check_resume(
    run: Rc<RunCore>,
    def: Rc<WorkflowDef>,
    path: &[String],
    data: &Value,
) -> Result<(), AgentError> {
    let step = find_step(&def, path).ok_or_else(|| {
        AgentError::invalid("resume(options).step", format!("no step '{}' in workflow '{}'", path.join("."), def.id))
    })?;
    if let Some(schema) = &step.resume_schema {
        let scope = Scope::new(run, def.clone(), String::new(), Value::Null);
        exec::check(&scope, schema, data, "resumeData").await?;
    }
    Ok(())
}

/// Resumes a suspended run from its snapshot: `workflow-start` names the resumed step and has
/// `args` = `resumeData`; then the nodes run again, finished steps giving their outputs.
pub async fn resume(
    run: Rc<RunCore>,
    def: Rc<WorkflowDef>,
    snapshot: &Value,
    path: Vec<String>,
    data: Value,
) -> WorkflowResult {
    let first = path.join(".");
    go_on(run, def, snapshot, path, data.clone(), &first, data).await
}

/// Restarts a run left `running` (its page or isolate died) from its snapshot: finished steps
/// give their recorded outputs, the step that was running and every later one run again.
/// `workflow-start` names the first step to run and has `args` = the run's input.
pub async fn restart(run: Rc<RunCore>, def: Rc<WorkflowDef>, snapshot: &Value) -> WorkflowResult {
    let context = snapshot.get("context").cloned().unwrap_or_default();
    let done = |id: &str| context.get(id).and_then(|r| r.get("status")).and_then(Value::as_str) == Some("success");
    let ids: Vec<String> =
        def.nodes.borrow().iter().flat_map(|n| n.steps().into_iter().map(|s| s.id.clone())).collect();
    let first = ids.iter().find(|id| !done(id)).or(ids.first()).cloned().unwrap_or_default();
    let input = context.get("input").cloned().unwrap_or(Value::Null);
    go_on(run, def, snapshot, Vec::new(), Value::Null, &first, input).await
}

/// Runs the nodes again over a snapshot's records: `workflow-start` (`first`, `args`), the
/// state, request context and path restored, then every node with the plan (`path` resumes).
async fn go_on(
    run: Rc<RunCore>,
    def: Rc<WorkflowDef>,
    snapshot: &Value,
    path: Vec<String>,
    data: Value,
    first: &str,
    args: Value,
) -> WorkflowResult {
    run.started.set(true);
    let call_id = run.env.new_id();
    *run.first_call.borrow_mut() = Some(call_id.clone());
    run.emit(
        "workflow-start",
        json!({ "workflowId": def.id, "stepName": first, "args": args, "stepCallId": call_id, "startedAt": run.now(), "status": "running" }),
    );
    *run.state.borrow_mut() = snapshot.get("state").cloned().unwrap_or_else(|| json!({}));
    if let Some(rc) = snapshot.get("requestContext").filter(|v| v.is_object()) {
        *run.request_context.borrow_mut() = rc.clone();
    }
    *run.path.borrow_mut() = serde_json::from_value(snapshot["stepExecutionPath"].clone()).unwrap_or_default();
    let context = snapshot.get("context").and_then(Value::as_object).cloned().unwrap_or_default();
    let input = context.get("input").cloned().unwrap_or(Value::Null);
    let steps: Map<String, Value> = context.into_iter().filter(|(k, _)| k != "input").collect();
    let level =
        json!({ "steps": steps, "nested": snapshot.get("nestedContext").cloned().unwrap_or_else(|| json!({})) });
    let scope = Scope::new(run.clone(), def, String::new(), input);
    *scope.resume.borrow_mut() = Some(Rc::new(ResumePlan::from_context(&level, path, data)));
    let outcome = exec::exec_nodes(scope.clone()).await;
    result::end(&scope, outcome).await
}

/// One stored run.
#[derive(Clone, Debug)]
pub struct StoredRun {
    pub workflow_name: String,
    pub run_id: String,
    pub resource_id: Option<String>,
    pub snapshot: Value,
    pub created_at: f64,
    pub updated_at: f64,
}

impl StoredRun {
    pub fn status(&self) -> &str {
        status_in(&self.snapshot)
    }

    /// `getWorkflowRunById`'s answer.
    pub fn to_json(&self) -> Value {
        let s = &self.snapshot;
        let steps: Map<String, Value> = s["context"]
            .as_object()
            .map(|c| c.iter().filter(|(k, _)| *k != "input").map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        json!({
            "runId": self.run_id, "workflowName": self.workflow_name, "resourceId": self.resource_id, "status": self.status(),
            "createdAt": self.created_at, "updatedAt": self.updated_at, "result": s["result"], "error": s["error"],
            "payload": s["context"]["input"], "steps": steps, "suspendedPaths": s["suspendedPaths"], "snapshot": s,
        })
    }
}

/// Which runs `listWorkflowRuns` gives.
#[derive(Default, Debug)]
pub struct RunFilter {
    pub workflow_name: Option<String>,
    pub status: Option<String>,
    pub resource_id: Option<String>,
    pub from_date: Option<f64>,
    pub to_date: Option<f64>,
    pub per_page: Option<usize>,
    pub page: usize,
}

/// The package instance's runs, in memory. A snapshot is kept as its JSON text: a finished
/// 100-step run's snapshot as a `Value` tree is ~1,500 allocations that stayed for the life of
/// the page and made each later run slower (the heap grew with every run); as text it is one.
#[derive(Default)]
pub struct RunStore {
    runs: RefCell<Vec<Kept>>,
}

struct Kept {
    workflow_name: String,
    run_id: String,
    resource_id: Option<String>,
    status: String,
    snapshot: String,
    created_at: f64,
    updated_at: f64,
}

impl Kept {
    fn to_run(&self) -> StoredRun {
        StoredRun {
            workflow_name: self.workflow_name.clone(),
            run_id: self.run_id.clone(),
            resource_id: self.resource_id.clone(),
            snapshot: serde_json::from_str(&self.snapshot).unwrap_or(Value::Null),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A snapshot's `status` (`pending` before it has one).
fn status_in(snapshot: &Value) -> &str {
    snapshot.get("status").and_then(Value::as_str).unwrap_or("pending")
}

impl RunStore {
    fn find(&self, workflow_name: &str, run_id: &str) -> Option<usize> {
        self.runs.borrow().iter().position(|r| r.run_id == run_id && r.workflow_name == workflow_name)
    }

    pub fn persist(&self, workflow_name: &str, run_id: &str, resource_id: Option<String>, snapshot: &Value, now: f64) {
        self.persist_text(workflow_name, run_id, resource_id, status_in(snapshot).to_owned(), snapshot.to_string(), now);
    }

    /// `persist` of a snapshot already written as text, with its status.
    pub fn persist_text(
        &self,
        workflow_name: &str,
        run_id: &str,
        resource_id: Option<String>,
        status: String,
        text: String,
        now: f64,
    ) {
        let found = self.find(workflow_name, run_id);
        let mut runs = self.runs.borrow_mut();
        match found {
            Some(i) => {
                let r = &mut runs[i];
                (r.status, r.snapshot, r.updated_at) = (status, text, now);
                if resource_id.is_some() {
                    r.resource_id = resource_id;
                }
            }
            None => {
                runs.push(Kept {
                    workflow_name: workflow_name.into(),
                    run_id: run_id.into(),
                    resource_id,
                    status,
                    snapshot: text,
                    created_at: now,
                    updated_at: now,
                });
            }
        }
    }

    pub fn load(&self, workflow_name: &str, run_id: &str) -> Option<StoredRun> {
        let i = self.find(workflow_name, run_id)?;
        Some(self.runs.borrow()[i].to_run())
    }

    /// Compare-and-set: sets the status when the run exists and its status is `expected` (any
    /// status without one); the updated snapshot, else `None`.
    pub fn update_status(
        &self,
        workflow_name: &str,
        run_id: &str,
        status: &str,
        expected: Option<&str>,
        now: f64,
    ) -> Option<Value> {
        let i = self.find(workflow_name, run_id)?;
        let mut runs = self.runs.borrow_mut();
        let r = &mut runs[i];
        if expected.is_some_and(|e| r.status != e) {
            return None;
        }
        let mut snapshot: Value = serde_json::from_str(&r.snapshot).unwrap_or_else(|_| json!({}));
        snapshot["status"] = json!(status);
        (r.status, r.snapshot, r.updated_at) = (status.to_owned(), snapshot.to_string(), now);
        Some(snapshot)
    }

    /// Matching runs, newest first, and how many match in all.
    pub fn list(&self, f: &RunFilter) -> (Vec<StoredRun>, usize) {
        let runs = self.runs.borrow();
        let matching: Vec<&Kept> = runs
            .iter()
            .rev()
            .filter(|r| f.admits(&r.workflow_name, &r.status, r.resource_id.as_deref(), r.created_at))
            .collect();
        let total = matching.len();
        let (skip, take) = f.per_page.map_or((0, usize::MAX), |per| (per * f.page, per));
        (matching.into_iter().skip(skip).take(take).map(Kept::to_run).collect(), total)
    }

    pub fn delete(&self, workflow_name: &str, run_id: &str) -> bool {
        let Some(i) = self.find(workflow_name, run_id) else { return false };
        self.runs.borrow_mut().remove(i);
        true
    }
}
