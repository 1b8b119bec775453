//! Workflows (SPEC §20): a graph of steps the user builds (`graph`), run by the engine (`exec`)
//! through a host that holds the user's functions (`host`), emitting events into a log every
//! reader replays (`log`), ending in a `WorkflowResult` (`result`).

pub mod context;
pub mod exec;
mod forms;
pub mod graph;
pub mod host;
pub mod log;
pub mod result;
pub mod snapshot;
pub mod store;
pub mod text;
#[cfg(test)]
mod tests;

use std::rc::Rc;

use serde_json::{json, Value};

use context::{RunCore, Scope};
use graph::WorkflowDef;
use result::WorkflowResult;

use crate::core::error::AgentError;

/// Starts a run: `workflow-start`, the input and initial state checked and the `running`
/// snapshot written (a failure of either ends the run at once with `workflow-finish` `failed`
/// and is returned as the error), then every node, then the end (`result::end`).
pub async fn start(
    run: Rc<RunCore>,
    def: Rc<WorkflowDef>,
    input: Value,
    initial_state: Option<Value>,
) -> Result<WorkflowResult, AgentError> {
    run.started.set(true);
    let call_id = run.env.new_id();
    *run.first_call.borrow_mut() = Some(call_id.clone());
    let first = def.first_step_id().unwrap_or_default();
    run.emit(
        "workflow-start",
        json!({ "workflowId": def.id, "stepName": first, "args": input, "stepCallId": call_id, "startedAt": run.now(), "status": "running" }),
    );
    let scope = Scope::new(run.clone(), def.clone(), String::new(), input.clone());
    let checked = match check_start(&scope, &def, &input, initial_state.as_ref()).await {
        Ok(()) => run.save(context::Snapshot::Value(snapshot::initial(&run, "running", &input))).await,
        Err(e) => Err(e),
    };
    if let Err(e) = checked {
        run.emit("workflow-finish", json!({ "workflowStatus": "failed", "output": { "usage": run.usage() }, "metadata": { "errorMessage": e.to_string() } }));
        run.log.close();
        return Err(e);
    }
    if let Some(s) = initial_state {
        *run.state.borrow_mut() = s;
    }
    let outcome = exec::exec_nodes(scope.clone()).await;
    Ok(result::end(&scope, outcome).await)
}

async fn check_start(scope: &Scope, def: &WorkflowDef, input: &Value, state: Option<&Value>) -> Result<(), AgentError> {
    if !def.validate_inputs {
        return Ok(());
    }
    if let Some(s) = &def.input_schema {
        exec::check(scope, s, input, "inputData").await?;
    }
    if let (Some(s), Some(v)) = (&def.state_schema, state) {
        exec::check(scope, s, v, "initialState").await?;
    }
    Ok(())
}
