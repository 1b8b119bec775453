//! `WorkflowResult` (SPEC §20.2) and the run's end: `workflow-canceled` and `workflow-finish`.

use serde_json::{json, Map, Value};

use super::context::Scope;
use super::exec::Outcome;
use super::host::Failure;
use super::text::Obj;

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
    /// The contexts of the top level's nested workflow steps, for the snapshot.
    pub nested: Map<String, Value>,
    /// `to_text(false)`, once `workflow-finish` carried it (a successful run's end).
    pub text: Option<std::rc::Rc<str>>,
}

impl WorkflowResult {
    /// The result of the run that ended at `scope` (the top level), which it leaves without its
    /// step records: they move into the result (nothing reads a level after its end).
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
        steps.extend(std::mem::take(&mut *scope.steps.borrow_mut()));
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
            nested: std::mem::take(&mut *scope.nested.borrow_mut()),
            text: None,
        }
    }

    /// The run failed after all (its snapshot could not be stored).
    fn fail(&mut self, f: Failure) {
        self.status = Status::Failed;
        self.result = None;
        self.error = Some(f);
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

    /// The result as JavaScript sees it, as JSON text written from the result (no copy of its
    /// steps); `error` stays `{ name, message }` (the bindings make it an `Error`).
    pub fn to_text(&self, include_state: bool) -> String {
        let mut o = Obj::new();
        o.val("status", self.status.as_str())
            .val("input", &self.input)
            .val("steps", &self.steps)
            .val("runId", &self.run_id)
            .val("stepExecutionPath", &self.step_execution_path);
        if let Some(r) = &self.result {
            o.val("result", r);
        }
        if let Some(e) = &self.error {
            o.val("error", &e.to_json());
        }
        if let Some(t) = &self.tripwire {
            o.val("tripwire", t);
        }
        if self.status == Status::Suspended {
            o.val("suspended", &self.suspended).val("suspendPayload", &self.suspend_payload());
        }
        if include_state {
            o.val("state", &self.state);
        }
        o.done()
    }

    /// `to_text` as a value (the tests read results this way).
    #[cfg(test)]
    pub fn to_json(&self, include_state: bool) -> Value {
        serde_json::from_str(&self.to_text(include_state)).expect("to_text writes JSON")
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
        result.fail(e.into());
        let _ = scope.run.save(super::snapshot::of(&scope.run, &result)).await;
    }
    finish_events(scope, &mut result);
    result
}

/// `workflow-canceled` (when canceled) and `workflow-finish`, then the log closes.
fn finish_events(scope: &Scope, result: &mut WorkflowResult) {
    let run = &scope.run;
    if result.status == Status::Canceled {
        run.emit("workflow-canceled", json!({}));
    }
    let metadata = match (&result.error, &result.tripwire) {
        (Some(e), _) => json!({ "errorMessage": e.message }),
        (None, Some(t)) => json!({ "tripwire": t }),
        (None, None) => json!({}),
    };
    let mut payload = Obj::new();
    payload
        .val("workflowStatus", result.status.as_str())
        .val("output", &json!({ "usage": run.usage() }))
        .val("metadata", &metadata);
    if result.status == Status::Success {
        let text: std::rc::Rc<str> = result.to_text(false).into();
        payload.raw("finalWorkflowResult", &text);
        result.text = Some(text);
    }
    run.emit_text("workflow-finish", &payload.done());
    run.log.close();
}
