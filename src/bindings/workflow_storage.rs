//! Workflow snapshots in a user storage object (SPEC §20.5): `persistWorkflowSnapshot`,
//! `loadWorkflowSnapshot`, `updateWorkflowState`, `listWorkflowRuns`, `deleteWorkflowRunById`
//! (`getWorkflowRunById` optional, for a loaded run's resourceId and times). Without them runs
//! live only in the page or isolate, in the package instance's store. Also which store a
//! workflow's runs use.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{json, Value};

use super::memory::JsStore;
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::memory::Store;
use crate::core::workflow::snapshot::{RunFilter, StoredRun};
use crate::core::workflow::text::Obj;
use crate::core::workflow::store::WorkflowStore;

/// The workflow methods a storage object needs, all or none.
const WORKFLOW_METHODS: &[&str] =
    &["persistWorkflowSnapshot", "loadWorkflowSnapshot", "updateWorkflowState", "listWorkflowRuns", "deleteWorkflowRunById"];

thread_local! {
    static WARNED: Cell<bool> = const { Cell::new(false) };
    /// The package instance's store where no storage is configured: IndexedDB where the
    /// runtime has it, else memory.
    static DEFAULT: Rc<dyn Store> = default_workflow_store();
}

fn default_workflow_store() -> Rc<dyn Store> {
    let store = super::memory::default_store();
    match store.workflows().is_some() {
        true => store,
        false => Rc::new(crate::core::memory::InMemoryStore::new()),
    }
}

/// The store a workflow's runs use: `storage` when it keeps workflow snapshots, else the
/// package instance's.
pub(crate) fn store_for(storage: Option<&Rc<dyn Store>>) -> Rc<dyn Store> {
    match storage {
        Some(s) if s.workflows().is_some() => s.clone(),
        _ => DEFAULT.with(Rc::clone),
    }
}

/// The object's workflow methods when it has them all; else one `console.warn` per process.
pub(super) fn js_workflows(store: &JsStore) -> Option<&dyn WorkflowStore> {
    if WORKFLOW_METHODS.iter().all(|m| store.has(m)) {
        return Some(store);
    }
    if !WARNED.with(|w| w.replace(true)) {
        super::report::warn(&format!(
            "wasm-agent: the storage object has no {}: workflow runs are kept only in this page or process, so a resume after a reload or in another process finds nothing",
            WORKFLOW_METHODS.join("/")
        ));
    }
    None
}

/// A `loadWorkflowSnapshot` answer (a snapshot, or `null`) as a stored run.
fn run_of_snapshot(v: Value, name: &str, id: &str) -> Result<Option<StoredRun>, AgentError> {
    let v = match v {
        Value::Null => return Ok(None),
        Value::String(text) => serde_json::from_str(&text).map_err(|_| AgentError::storage("storage.loadWorkflowSnapshot returned a string that is not JSON"))?,
        v => v,
    };
    if !v.is_object() {
        return Err(AgentError::storage("storage.loadWorkflowSnapshot returned something that is not a snapshot object"));
    }
    let stamp = v.get("timestamp").and_then(Value::as_f64).unwrap_or_default();
    let resource_id = v.get("resourceId").and_then(Value::as_str).map(str::to_owned);
    Ok(Some(StoredRun { workflow_name: name.into(), run_id: id.into(), resource_id, snapshot: v, created_at: stamp, updated_at: stamp }))
}

impl WorkflowStore for JsStore {
    fn persist_snapshot<'a>(&'a self, run: &'a StoredRun) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let mut arg = json!({ "workflowName": run.workflow_name, "runId": run.run_id, "snapshot": run.snapshot });
            if let Some(r) = &run.resource_id {
                arg["resourceId"] = r.as_str().into();
            }
            self.call("persistWorkflowSnapshot", arg).await.map(drop)
        })
    }
    /// The argument written around the snapshot's text and parsed once in JavaScript (a run
    /// writes a whole snapshot after every step to a store like this one).
    fn persist_text<'a>(&'a self, run: StoredRun, _status: &'a str, text: String) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let mut arg = Obj::new();
            arg.val("workflowName", &run.workflow_name).val("runId", &run.run_id).raw("snapshot", &text);
            if let Some(r) = &run.resource_id {
                arg.val("resourceId", r);
            }
            let arg = js_sys::JSON::parse(&arg.done()).map_err(|_| AgentError::storage("a snapshot could not be read back"))?;
            self.call_with("persistWorkflowSnapshot", &arg).await.map(drop)
        })
    }
    fn load_run<'a>(&'a self, name: &'a str, id: &'a str) -> LocalFuture<'a, Result<Option<StoredRun>, AgentError>> {
        Box::pin(async move {
            let v = self.call_json("loadWorkflowSnapshot", json!({ "workflowName": name, "runId": id })).await?;
            let mut run = run_of_snapshot(v, name, id)?;
            // The record's resourceId and times, where the object has getWorkflowRunById.
            if let (Some(r), true) = (run.as_mut(), self.has("getWorkflowRunById")) {
                let rec = self.call_json("getWorkflowRunById", json!({ "workflowName": name, "runId": id })).await?;
                if let Ok(full) = StoredRun::from_record(&rec, "storage.getWorkflowRunById") {
                    r.resource_id = full.resource_id.or(r.resource_id.take());
                    r.created_at = full.created_at;
                    r.updated_at = full.updated_at;
                }
            }
            Ok(run)
        })
    }
    fn update_status<'a>(
        &'a self,
        name: &'a str,
        id: &'a str,
        status: &'a str,
        expected: Option<&'a str>,
        _now: f64,
    ) -> LocalFuture<'a, Result<Option<Value>, AgentError>> {
        Box::pin(async move {
            let mut opts = json!({ "status": status });
            if let Some(e) = expected {
                opts["expectedStatus"] = e.into();
            }
            let v = self.call_json("updateWorkflowState", json!({ "workflowName": name, "runId": id, "opts": opts })).await?;
            Ok(Some(v).filter(|v| !v.is_null()))
        })
    }
    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<(Vec<StoredRun>, usize), AgentError>> {
        Box::pin(async move {
            let v = self.call_json("listWorkflowRuns", filter.to_json()).await?;
            let (items, total) = match &v {
                Value::Array(items) => (items.clone(), None),
                Value::Object(o) => match o.get("runs") {
                    Some(Value::Array(items)) => (items.clone(), o.get("total").and_then(Value::as_u64)),
                    _ => return Err(AgentError::storage("storage.listWorkflowRuns returned an object without a runs array")),
                },
                Value::Null => (Vec::new(), None),
                _ => return Err(AgentError::storage("storage.listWorkflowRuns returned something that is not { runs, total }")),
            };
            let runs: Vec<StoredRun> = items
                .iter()
                .map(|r| StoredRun::from_record(r, "storage.listWorkflowRuns"))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .filter(|r| filter.matches(r))
                .collect();
            let total = total.map(|t| t as usize).unwrap_or(runs.len());
            Ok((runs, total))
        })
    }
    fn delete_run<'a>(&'a self, name: &'a str, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.call("deleteWorkflowRunById", json!({ "workflowName": name, "runId": id })).await.map(drop) })
    }
}
