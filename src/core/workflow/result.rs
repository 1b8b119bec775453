//! `WorkflowResult` (SPEC §20.2) and the run's end: `workflow-canceled` and `workflow-finish`.

use serde_json::{json, Map, Value};

use super::context::Scope;
use super::exec::Outcome;
use super::host::Failure;

#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Success,
    Failed,
    Suspended,
    Canceled,
    /// A processor of an agent step stopped the run on purpose (e.g. moderation).
    Tripwire,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Failed => "failed",
            Status::Suspended => "suspended",
            Status::Canceled => "canceled",
            Status::Tripwire => "tripwire",
        }
    }
}

#[derive(Clone, Debug)]
pub struct WorkflowResult {
    pub status: Status,
    pub input: Value,
    /// `steps.input` (the run input) then `steps[id]` in the order the steps started.
    pub steps: Map<String, Value>,
    pub run_id: String,
    pub step_execution_path: Vec<String>,
    pub result: Option<Value>,
    pub error: Option<Failure>,
    /// `{ reason, retry, metadata, processorId }` of a `tripwire` run.
    pub tripwire: Option<Value>,
    pub suspended: Vec<Vec<String>>,
    pub state: Value,
    /// `{ steps, nested }` of the top level, for the snapshot.
    pub context: Value,
}

impl WorkflowResult {
    pub fn from_outcome(scope: &Scope, outcome: Outcome) -> Self {
        let (status, result, error) = match outcome {
            Outcome::Success(v) | Outcome::Bailed(v) => (Status::Success, Some(v), None),
            Outcome::Failed(f) if f.tripwire.is_some() => (Status::Tripwire, None, Some(f)),
            Outcome::Failed(f) => (Status::Failed, None, Some(f)),
            Outcome::Suspended => (Status::Suspended, None, None),
            Outcome::Canceled => (Status::Canceled, None, None),
        };
        let mut steps = Map::new();
        steps.insert("input".into(), scope.init.clone());
        steps.extend(scope.steps.borrow().iter().map(|(k, v)| (k.clone(), v.clone())));
        WorkflowResult {
            status,
            input: scope.init.clone(),
            steps,
            run_id: scope.run.run_id.clone(),
            step_execution_path: scope.run.path.borrow().clone(),
            result,
            tripwire: error.as_ref().and_then(|f| f.tripwire.clone()),
            error: error.filter(|f| f.tripwire.is_none()),
            suspended: scope.suspended.borrow().clone(),
            state: scope.run.state.borrow().clone(),
            context: scope.context_json(),
        }
    }

    /// `{ [stepId]: payload }` of the suspended steps.
    pub fn suspend_payload(&self) -> Map<String, Value> {
        self.suspended
            .iter()
            .filter_map(|p| {
                let rec = self.steps.get(&p[0])?;
                Some((p[0].clone(), rec.get("suspendPayload").cloned().unwrap_or(Value::Null)))
            })
            .collect()
    }

    /// The result as JavaScript sees it; `error` stays `{ name, message }` (the bindings make it
    /// an `Error`).
    pub fn to_json(&self, include_state: bool) -> Value {
        let mut m = Map::new();
        m.insert("status".into(), json!(self.status.as_str()));
        m.insert("input".into(), self.input.clone());
        m.insert("steps".into(), Value::Object(self.steps.clone()));
        m.insert("runId".into(), json!(self.run_id));
        m.insert("stepExecutionPath".into(), json!(self.step_execution_path));
        if let Some(r) = &self.result {
            m.insert("result".into(), r.clone());
        }
        if let Some(e) = &self.error {
            m.insert("error".into(), e.to_json());
        }
        if let Some(t) = &self.tripwire {
            m.insert("tripwire".into(), t.clone());
        }
        if self.status == Status::Suspended {
            m.insert("suspended".into(), json!(self.suspended));
            m.insert("suspendPayload".into(), Value::Object(self.suspend_payload()));
        }
        if include_state {
            m.insert("state".into(), self.state.clone());
        }
        Value::Object(m)
    }
}

/// The run's end: its result, its snapshot written (a write that fails makes it a failed run
/// with the `StorageError`, whose snapshot is tried once more), then the closing events.
pub async fn end(scope: &Scope, outcome: Outcome) -> WorkflowResult {
    // A run canceled while its last step ran is canceled, though that step finished (§20.2).
    let outcome = match outcome {
        Outcome::Success(_) | Outcome::Bailed(_) if scope.run.abort.is_aborted() => Outcome::Canceled,
        o => o,
    };
    let mut result = WorkflowResult::from_outcome(scope, outcome);
    if let Err(e) = scope.run.save(super::snapshot::of(&scope.run, &result)).await {
        result = WorkflowResult::from_outcome(scope, Outcome::Failed(e.into()));
        let _ = scope.run.save(super::snapshot::of(&scope.run, &result)).await;
    }
    finish_events(scope, &result);
    result
}

/// `workflow-canceled` (when canceled) and `workflow-finish`, then the log closes.
pub fn finish_events(scope: &Scope, result: &WorkflowResult) {
    let run = &scope.run;
    if result.status == Status::Canceled {
        run.emit("workflow-canceled", json!({}));
    }
    let metadata = match (&result.error, &result.tripwire) {
        (Some(e), _) => json!({ "errorMessage": e.message }),
        (None, Some(t)) => json!({ "tripwire": t }),
        (None, None) => json!({}),
    };
    let mut payload =
        json!({ "workflowStatus": result.status.as_str(), "output": { "usage": run.usage() }, "metadata": metadata });
    if result.status == Status::Success {
        payload["finalWorkflowResult"] = result.to_json(false);
    }
    run.emit("workflow-finish", payload);
    run.log.close();
}
