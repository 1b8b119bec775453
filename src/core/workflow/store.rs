//! Where run snapshots live (SPEC §20.5): the storage methods a backend implements, and the
//! package instance's in-memory store implementing them. A backend keeps snapshots opaque; the
//! status it compares is the snapshot's `status`.

use serde_json::{json, Value};

use super::snapshot::{RunFilter, RunStore, StoredRun};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;

/// The workflow methods of a storage (`persistWorkflowSnapshot` …).
pub trait WorkflowStore {
    /// Creates or replaces the snapshot of the run (`createdAt` kept when it exists).
    fn persist_snapshot<'a>(&'a self, run: &'a StoredRun) -> LocalFuture<'a, Result<(), AgentError>>;
    fn load_run<'a>(&'a self, workflow_name: &'a str, run_id: &'a str) -> LocalFuture<'a, Result<Option<StoredRun>, AgentError>>;
    /// Compare-and-set on the status: the updated snapshot, or `None` when the run is missing
    /// or its status is not `expected`.
    fn update_status<'a>(
        &'a self,
        workflow_name: &'a str,
        run_id: &'a str,
        status: &'a str,
        expected: Option<&'a str>,
        now: f64,
    ) -> LocalFuture<'a, Result<Option<Value>, AgentError>>;
    /// Matching runs, newest first, and how many match in all.
    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<(Vec<StoredRun>, usize), AgentError>>;
    fn delete_run<'a>(&'a self, workflow_name: &'a str, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>>;
    /// Whether what it keeps outlives this process (IndexedDB, a storage object). A run writes
    /// its after-each-step snapshots only to such a store: they are there for `restart` after
    /// the process died, and memory dies with it (in memory they cost 3× the engine's time).
    fn outlives_process(&self) -> bool {
        true
    }
    /// `persist_snapshot` of `run` with the snapshot `text` (a store that keeps text takes it
    /// as it is; the others get it parsed).
    fn persist_text<'a>(&'a self, mut run: StoredRun, _status: &'a str, text: String) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            run.snapshot = serde_json::from_str(&text).unwrap_or(Value::Null);
            self.persist_snapshot(&run).await
        })
    }
}

fn ready<'a, T: 'a>(v: T) -> LocalFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

impl WorkflowStore for RunStore {
    fn persist_snapshot<'a>(&'a self, run: &'a StoredRun) -> LocalFuture<'a, Result<(), AgentError>> {
        self.persist(&run.workflow_name, &run.run_id, run.resource_id.clone(), &run.snapshot, run.updated_at);
        ready(Ok(()))
    }
    fn load_run<'a>(&'a self, workflow_name: &'a str, run_id: &'a str) -> LocalFuture<'a, Result<Option<StoredRun>, AgentError>> {
        ready(Ok(self.load(workflow_name, run_id)))
    }
    fn update_status<'a>(
        &'a self,
        workflow_name: &'a str,
        run_id: &'a str,
        status: &'a str,
        expected: Option<&'a str>,
        now: f64,
    ) -> LocalFuture<'a, Result<Option<Value>, AgentError>> {
        ready(Ok(RunStore::update_status(self, workflow_name, run_id, status, expected, now)))
    }
    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<(Vec<StoredRun>, usize), AgentError>> {
        ready(Ok(self.list(filter)))
    }
    fn delete_run<'a>(&'a self, workflow_name: &'a str, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.delete(workflow_name, run_id);
        ready(Ok(()))
    }
    fn outlives_process(&self) -> bool {
        false
    }
    fn persist_text<'a>(&'a self, run: StoredRun, status: &'a str, text: String) -> LocalFuture<'a, Result<(), AgentError>> {
        self.persist_text(&run.workflow_name, &run.run_id, run.resource_id, status.to_owned(), text, run.updated_at);
        ready(Ok(()))
    }
}

impl StoredRun {
    /// The record a storage object keeps: `{ workflowName, runId, resourceId?, snapshot, createdAt, updatedAt }`.
    pub fn to_record(&self) -> Value {
        json!({ "workflowName": self.workflow_name, "runId": self.run_id, "resourceId": self.resource_id,
            "snapshot": self.snapshot, "createdAt": self.created_at, "updatedAt": self.updated_at })
    }

    /// A run as a storage object returned it; `what` names the method for errors. Times may be
    /// numbers or missing (then the snapshot's `timestamp`).
    pub fn from_record(v: &Value, what: &str) -> Result<StoredRun, AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let workflow_name = s("workflowName").ok_or_else(|| AgentError::storage(format!("{what} returned a run without a string workflowName")))?;
        let run_id = s("runId").ok_or_else(|| AgentError::storage(format!("{what} returned a run without a string runId")))?;
        let snapshot = match v.get("snapshot") {
            Some(Value::String(text)) => serde_json::from_str(text).ok(),
            Some(o @ Value::Object(_)) => Some(o.clone()),
            _ => None,
        }
        .ok_or_else(|| AgentError::storage(format!("{what} returned run '{run_id}' without a snapshot object")))?;
        let stamp = snapshot.get("timestamp").and_then(Value::as_f64).unwrap_or_default();
        let time = |k: &str| v.get(k).and_then(time_of).unwrap_or(stamp);
        Ok(StoredRun { resource_id: s("resourceId"), created_at: time("createdAt"), updated_at: time("updatedAt"), workflow_name, run_id, snapshot })
    }
}

/// Milliseconds from a number (a `Date` arrives as one from the bindings).
fn time_of(v: &Value) -> Option<f64> {
    v.as_f64()
}

impl RunFilter {
    /// `listWorkflowRuns`'s argument.
    pub fn to_json(&self) -> Value {
        let mut v = json!({});
        let mut set = |k: &str, x: Value| {
            if !x.is_null() {
                v[k] = x;
            }
        };
        set("workflowName", json!(self.workflow_name));
        set("resourceId", json!(self.resource_id));
        set("status", json!(self.status));
        set("fromDate", json!(self.from_date));
        set("toDate", json!(self.to_date));
        set("perPage", json!(self.per_page));
        if self.per_page.is_some() {
            set("page", json!(self.page));
        }
        v
    }

    /// Whether `run` is one this filter gives (to hold adapters to it).
    pub fn matches(&self, r: &StoredRun) -> bool {
        self.admits(&r.workflow_name, r.status(), r.resource_id.as_deref(), r.created_at)
    }

    /// Whether a run with these fields is one this filter gives.
    pub(crate) fn admits(&self, workflow_name: &str, status: &str, resource_id: Option<&str>, created_at: f64) -> bool {
        self.workflow_name.as_ref().is_none_or(|n| n == workflow_name)
            && self.status.as_ref().is_none_or(|s| s == status)
            && (self.resource_id.is_none() || self.resource_id.as_deref() == resource_id)
            && self.from_date.is_none_or(|d| created_at >= d)
            && self.to_date.is_none_or(|d| created_at <= d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_from_a_storage_object_reads_back_and_bad_ones_name_the_field() {
        let run = StoredRun {
            workflow_name: "w".into(),
            run_id: "r1".into(),
            resource_id: Some("u".into()),
            snapshot: json!({ "status": "suspended", "timestamp": 5.0 }),
            created_at: 1.0,
            updated_at: 2.0,
        };
        let back = StoredRun::from_record(&run.to_record(), "storage.listWorkflowRuns").unwrap();
        assert_eq!((back.run_id.as_str(), back.resource_id.as_deref(), back.created_at, back.updated_at), ("r1", Some("u"), 1.0, 2.0));
        assert_eq!(back.status(), "suspended");
        let text = json!({ "workflowName": "w", "runId": "r2", "snapshot": "{\"status\":\"success\",\"timestamp\":9}" });
        let parsed = StoredRun::from_record(&text, "x").unwrap();
        assert_eq!((parsed.status(), parsed.created_at), ("success", 9.0));
        let err = StoredRun::from_record(&json!({ "workflowName": "w", "runId": "r3" }), "storage.getWorkflowRunById").unwrap_err();
        assert!(err.to_string().contains("storage.getWorkflowRunById returned run 'r3' without a snapshot object"), "{err}");
        let f = RunFilter { resource_id: Some("u".into()), status: Some("suspended".into()), from_date: Some(1.0), ..Default::default() };
        assert!(f.matches(&run));
        assert!(!RunFilter { from_date: Some(1.5), ..Default::default() }.matches(&run));
        assert_eq!(RunFilter { per_page: Some(2), page: 1, ..Default::default() }.to_json(), json!({ "perPage": 2, "page": 1 }));
    }
}
