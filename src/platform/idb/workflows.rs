//! Workflow snapshots in the `workflowRuns` object store (schema version 5, SPEC §20.5): one
//! record per run, `{ workflowName, runId, resourceId, snapshot, createdAt, updatedAt }` keyed by
//! `[workflowName, runId]` — the record a storage object's `listWorkflowRuns` gives — so a run
//! suspended in one page resumes after a reload or in another tab.
//!
//! Writes that depend on the stored record (keeping `createdAt`, the status compare-and-set) read
//! and write inside one readwrite transaction, so two tabs resuming one run are serialized by
//! IndexedDB and exactly one sees the status it expects.

use js_sys::{Array, Reflect};
use serde_json::Value;
use wasm_bindgen::JsValue;
use web_sys::IdbTransactionMode::Readwrite;

use super::conn::WORKFLOW_RUNS;
use super::{to_js, IdbStore, SOURCE};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::workflow::snapshot::{RunFilter, StoredRun};
use crate::core::workflow::store::WorkflowStore;
use crate::core::workflow::text::Obj;

fn key(workflow_name: &str, run_id: &str) -> JsValue {
    Array::of2(&workflow_name.into(), &run_id.into()).into()
}

fn present(v: &JsValue) -> bool {
    !v.is_undefined() && !v.is_null()
}

impl IdbStore {
    /// Puts `record` (the record of `run`), keeping a stored one's `createdAt` and resource.
    async fn put_run(&self, what: &str, run: &StoredRun, record: JsValue) -> Result<(), AgentError> {
        self.transact(what, &[WORKFLOW_RUNS], Readwrite, &mut |tx| {
            let store = tx.store(WORKFLOW_RUNS)?;
            let req = store.get(&key(&run.workflow_name, &run.run_id))?;
            let record = record.clone();
            tx.on_success(req, move |req| {
                // A run saved before keeps when it was created, and its resource when this
                // snapshot names none.
                let old = req.result()?;
                if present(&old) {
                    Reflect::set(&record, &"createdAt".into(), &Reflect::get(&old, &"createdAt".into())?)?;
                    if !present(&Reflect::get(&record, &"resourceId".into())?) {
                        Reflect::set(&record, &"resourceId".into(), &Reflect::get(&old, &"resourceId".into())?)?;
                    }
                }
                store.put(&record)?;
                Ok(())
            });
            Ok(JsValue::UNDEFINED)
        })
        .await
        .map(drop)
    }
}

fn saving(run: &StoredRun) -> String {
    format!("saving the snapshot of workflow run '{}'", run.run_id)
}

impl WorkflowStore for IdbStore {
    fn persist_snapshot<'a>(&'a self, run: &'a StoredRun) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let what = saving(run);
            let record = to_js(&run.to_record()).map_err(|e| self.error(&what, &e))?;
            self.put_run(&what, run, record).await
        })
    }

    /// The record written around the snapshot's text and parsed once (a run writes a whole
    /// snapshot after every step here).
    fn persist_text<'a>(&'a self, run: StoredRun, _status: &'a str, text: String) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let what = saving(&run);
            let mut o = Obj::new();
            o.val("workflowName", &run.workflow_name)
                .val("runId", &run.run_id)
                .val("resourceId", &run.resource_id)
                .raw("snapshot", &text)
                .val("createdAt", &run.created_at)
                .val("updatedAt", &run.updated_at);
            let record = js_sys::JSON::parse(&o.done()).map_err(|e| self.error(&what, &e))?;
            self.put_run(&what, &run, record).await
        })
    }

    fn load_run<'a>(&'a self, workflow_name: &'a str, run_id: &'a str) -> LocalFuture<'a, Result<Option<StoredRun>, AgentError>> {
        Box::pin(async move {
            let record = self.get(WORKFLOW_RUNS, &key(workflow_name, run_id), &format!("reading workflow run '{run_id}'")).await?;
            record.map(|v| StoredRun::from_record(&v, SOURCE)).transpose()
        })
    }

    fn update_status<'a>(
        &'a self,
        workflow_name: &'a str,
        run_id: &'a str,
        status: &'a str,
        expected: Option<&'a str>,
        now: f64,
    ) -> LocalFuture<'a, Result<Option<Value>, AgentError>> {
        Box::pin(async move {
            let what = format!("updating the status of workflow run '{run_id}'");
            let k = key(workflow_name, run_id);
            let found = self
                .transact(&what, &[WORKFLOW_RUNS], Readwrite, &mut |tx| {
                    let store = tx.store(WORKFLOW_RUNS)?;
                    let req = store.get(&k)?;
                    let out = Array::new();
                    let (into, status, expected) = (out.clone(), status.to_owned(), expected.map(str::to_owned));
                    tx.on_success(req, move |req| {
                        let record = req.result()?;
                        if !present(&record) {
                            return Ok(());
                        }
                        let snapshot = Reflect::get(&record, &"snapshot".into())?;
                        if !snapshot.is_object() {
                            return Ok(());
                        }
                        let current = Reflect::get(&snapshot, &"status".into())?.as_string();
                        if expected.as_ref().is_some_and(|e| current.as_deref().unwrap_or("pending") != e) {
                            return Ok(());
                        }
                        Reflect::set(&snapshot, &"status".into(), &status.as_str().into())?;
                        Reflect::set(&record, &"updatedAt".into(), &now.into())?;
                        store.put(&record)?;
                        into.push(&snapshot);
                        Ok(())
                    });
                    Ok(out.into())
                })
                .await?;
            let mut snapshots = self.read_array(Ok(found), &what)?;
            Ok(snapshots.pop())
        })
    }

    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<(Vec<StoredRun>, usize), AgentError>> {
        Box::pin(async move {
            // One read of the store, filtered and ordered here, as `listWorkflowRuns` of the
            // other stores does.
            let records = self.all(WORKFLOW_RUNS, "listing workflow runs").await?;
            let mut runs = Vec::new();
            for r in &records {
                let run = StoredRun::from_record(r, SOURCE)?;
                if filter.matches(&run) {
                    runs.push(run);
                }
            }
            // Newest first; runs created in one millisecond, the later-updated first.
            runs.sort_by(|a, b| b.created_at.total_cmp(&a.created_at).then(b.updated_at.total_cmp(&a.updated_at)));
            let total = runs.len();
            if let Some(per) = filter.per_page {
                runs = runs.into_iter().skip(per * filter.page).take(per).collect();
            }
            Ok((runs, total))
        })
    }

    fn delete_run<'a>(&'a self, workflow_name: &'a str, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let what = format!("deleting workflow run '{run_id}'");
            let k = key(workflow_name, run_id);
            self.transact(&what, &[WORKFLOW_RUNS], Readwrite, &mut |tx| tx.store(WORKFLOW_RUNS)?.delete(&k).map(JsValue::from)).await.map(drop)
        })
    }
}
