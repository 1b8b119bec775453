//! What the engine needs from whoever holds the user's functions (the bindings, or a test): run a
//! step's `execute`, call a condition / `map` / sleep function, check a host schema. Calls are
//! async and get a [`StepCtx`] for `setState`, `writer`, `getStepResult`, `suspend` and `bail`;
//! its methods borrow the run only inside themselves, so the host may call them from user code.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::context::Scope;
use super::graph::Handle;
use crate::core::abort::AbortFlag;
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;

/// A step's failure as events and results show it: `{ name, message }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub name: String,
    pub message: String,
    /// An agent step's processor stopped it (`{ reason, retry, metadata, processorId }`): the
    /// step is not retried and the run ends `tripwire`, not `failed`.
    pub tripwire: Option<Value>,
}

impl Failure {
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Self {
        Failure { name: name.into(), message: message.into(), tripwire: None }
    }

    /// A processor's abort inside an agent step, from its `tripwire` chunk's payload.
    pub fn tripwire(payload: Value) -> Self {
        let reason = payload.get("reason").and_then(Value::as_str).unwrap_or("a processor stopped the agent");
        Failure { name: "TripWire".into(), message: reason.to_string(), tripwire: Some(payload) }
    }

    pub fn to_json(&self) -> Value {
        json!({ "name": self.name, "message": self.message })
    }
}

impl From<AgentError> for Failure {
    fn from(e: AgentError) -> Self {
        Failure::new(e.name(), e.to_string())
    }
}

/// One call of a user function.
pub struct StepCall {
    /// The step's id as events show it (`inner.step` inside a nested workflow).
    pub step_name: String,
    pub input: Value,
    /// The run's state when the step started (`setState` does not change it).
    pub state: Value,
    pub resume_data: Option<Value>,
    pub suspend_data: Option<Value>,
    pub retry_count: u32,
    /// Loop conditions: the iteration, counting from 1.
    pub iteration_count: Option<u32>,
    pub ctx: Rc<StepCtx>,
}

pub trait WorkflowHost {
    /// Runs a step's `execute`; a throw is `Err`.
    fn execute(&self, handle: Handle, call: StepCall) -> LocalFuture<'static, Result<Value, Failure>>;
    /// Calls a condition, `map` function or sleep function; sleeps give milliseconds (a date as
    /// milliseconds since the epoch for `sleepUntil`), conditions anything truthy.
    fn call(&self, handle: Handle, call: StepCall) -> LocalFuture<'static, Result<Value, Failure>>;
    /// Checks `value` against a schema only the host can read; `Err` is the failure text with
    /// each path from `$`, e.g. `$.value: expected string` (the core puts the field's name for `$`).
    fn validate(&self, handle: Handle, value: Value) -> LocalFuture<'static, Result<Value, String>>;
}

/// What a running step may do to its run. Cheap to clone into closures.
pub struct StepCtx {
    pub(super) scope: Rc<Scope>,
    pub(super) step_name: String,
    pub(super) suspended: RefCell<Option<Value>>,
    pub(super) bailed: RefCell<Option<Value>>,
}

impl StepCtx {
    pub fn run_id(&self) -> String {
        self.scope.run.run_id.clone()
    }

    pub fn workflow_id(&self) -> String {
        self.scope.def.id.clone()
    }

    pub fn resource_id(&self) -> Option<String> {
        self.scope.run.resource_id.clone()
    }

    pub fn step_name(&self) -> &str {
        &self.step_name
    }

    pub fn abort(&self) -> AbortFlag {
        self.scope.run.abort.clone()
    }

    pub fn request_context(&self) -> Value {
        self.scope.run.request_context.borrow().clone()
    }

    /// Replaces the run's state for later steps, checked against the workflow's JSON
    /// `stateSchema` (a host-only schema is checked by the host before it calls this).
    pub fn set_state(&self, next: Value) -> Result<(), AgentError> {
        if let Some(super::graph::Schema::Json(schema)) = &self.scope.def.state_schema {
            super::exec::check_json(schema, &next, "state")?;
        }
        *self.scope.run.state.borrow_mut() = next;
        Ok(())
    }

    /// `writer.write(output)`: a `workflow-step-output` event from `'USER'`.
    pub fn write(&self, output: Value) {
        let run = &self.scope.run;
        run.log.push(json!({
            "type": "workflow-step-output",
            "runId": run.run_id,
            "from": "USER",
            "payload": { "stepName": self.step_name, "runId": run.run_id, "output": output },
        }));
    }

    /// `writer.custom(chunk)`: a `data-*` chunk, passed on with `runId` and `from` added.
    pub fn custom(&self, chunk: Value) -> Result<(), AgentError> {
        let Value::Object(mut m) = chunk else {
            return Err(AgentError::invalid("chunk", "expected an object { type: 'data-…', data }"));
        };
        if !m.get("type").and_then(Value::as_str).is_some_and(|t| t.starts_with("data-")) {
            return Err(AgentError::invalid("chunk.type", "expected a string starting with 'data-'"));
        }
        let mut out = Map::new();
        out.insert("type".into(), m.remove("type").unwrap_or_default());
        out.insert("runId".into(), Value::String(self.scope.run.run_id.clone()));
        out.insert("from".into(), Value::String("WORKFLOW".into()));
        out.extend(m);
        self.scope.run.log.push(Value::Object(out));
        Ok(())
    }

    /// An agent step's chunk, forwarded as `workflow-step-output`; its usage is summed into the run's.
    pub fn forward(&self, chunk: Value) {
        if chunk.get("type").and_then(Value::as_str) == Some("finish") {
            if let Some(u) = chunk.pointer("/payload/output/usage").or_else(|| chunk.pointer("/payload/totalUsage")) {
                self.scope.run.add_usage(u);
            }
        }
        self.write(chunk);
    }

    /// A successful step's output in this workflow, else `None`.
    pub fn step_result(&self, step_id: &str) -> Option<Value> {
        let steps = self.scope.steps.borrow();
        let r = steps.get(step_id)?;
        (r.get("status").and_then(Value::as_str) == Some("success"))
            .then(|| r.get("output").cloned().unwrap_or(Value::Null))
    }

    pub fn init_data(&self) -> Value {
        self.scope.init.clone()
    }

    pub fn suspend(&self, payload: Value) {
        *self.suspended.borrow_mut() = Some(payload);
    }

    pub fn bail(&self, result: Value) {
        *self.bailed.borrow_mut() = Some(result);
    }

    pub fn add_usage(&self, usage: &Value) {
        self.scope.run.add_usage(usage);
    }
}
