//! Run records (SPEC §19.4): what a suspended run left in storage so that a decision made later,
//! in this page or another, can resume it. The record's state machine lives here: a resume is
//! claimed with a compare-and-set (`suspended` → `resuming`), so of two racing decisions exactly
//! one wins; a claim whose heartbeat went stale (its tab died) goes back to `suspended`.
//!
//! The snapshot is JSON the loop writes and reads (`run::resume`); storage keeps it opaque.

use serde_json::{json, Map, Value};

use super::env::LocalFuture;
use super::error::AgentError;
use super::step::ToolCall;

/// The snapshot version this package writes and reads.
pub const SNAPSHOT_V: u64 = 1;
/// A `resuming` record whose heartbeat is older than this went back to `suspended`.
pub const STALE_RESUMING_MS: f64 = 60_000.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Suspended,
    Resuming,
    Completed,
    Failed,
    Aborted,
}

impl RunStatus {
    pub const ALL: [RunStatus; 6] =
        [RunStatus::Running, RunStatus::Suspended, RunStatus::Resuming, RunStatus::Completed, RunStatus::Failed, RunStatus::Aborted];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Suspended => "suspended",
            RunStatus::Resuming => "resuming",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Aborted => "aborted",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// Why a call waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// For `approveToolCall` / `declineToolCall`.
    Approval,
    /// The tool called `suspend()`: for `resumeStream(resumeData)`.
    Suspension,
}

impl WaitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitKind::Approval => "approval",
            WaitKind::Suspension => "suspension",
        }
    }
}

/// A call waiting in a suspended run.
#[derive(Clone, Debug, PartialEq)]
pub struct WaitingCall {
    pub call: ToolCall,
    pub kind: WaitKind,
    pub suspend_payload: Option<Value>,
    /// The JSON Schema the resume data must match (a suspension's).
    pub resume_schema: Option<Value>,
    /// The call that resumed this one through `autoResumeSuspendedTools` (§19.7), once it has.
    pub resumed_by: Option<String>,
}

impl WaitingCall {
    pub fn to_json(&self) -> Value {
        let mut v = self.call.to_json();
        v["kind"] = self.kind.as_str().into();
        if let Some(p) = &self.suspend_payload {
            v["suspendPayload"] = p.clone();
        }
        if let Some(s) = &self.resume_schema {
            v["resumeSchema"] = s.clone();
        }
        if let Some(by) = &self.resumed_by {
            v["resumedBy"] = by.as_str().into();
        }
        v
    }

    pub fn from_json(v: &Value, what: &str) -> Result<WaitingCall, AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let bad = |k: &str| AgentError::storage(format!("{what} returned a waiting call without a string {k}"));
        let kind = match s("kind").as_deref() {
            Some("approval") => WaitKind::Approval,
            Some("suspension") => WaitKind::Suspension,
            _ => return Err(bad("kind ('approval' or 'suspension')")),
        };
        Ok(WaitingCall {
            call: ToolCall {
                tool_call_id: s("toolCallId").ok_or_else(|| bad("toolCallId"))?,
                tool_name: s("toolName").ok_or_else(|| bad("toolName"))?,
                args: v.get("args").cloned().unwrap_or(Value::Null),
            },
            kind,
            suspend_payload: v.get("suspendPayload").cloned(),
            resume_schema: v.get("resumeSchema").filter(|s| !s.is_null()).cloned(),
            resumed_by: s("resumedBy"),
        })
    }
}

/// One run as storage keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    pub run_id: String,
    pub agent_id: String,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    pub status: RunStatus,
    pub created_at: f64,
    pub updated_at: f64,
    pub heartbeat_at: Option<f64>,
    pub waiting: Vec<WaitingCall>,
    pub snapshot: Option<Value>,
    pub last_seq: u64,
    /// When a finished `reconnectable` run's log and record go (SPEC §19.8).
    pub retain_until: Option<f64>,
    /// A `reconnectable` run's `retainMs`: the run keeps a chunk log.
    pub retain_ms: Option<f64>,
}

impl RunRecord {
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "runId": self.run_id, "agentId": self.agent_id, "threadId": self.thread_id, "resourceId": self.resource_id,
            "status": self.status.as_str(), "createdAt": self.created_at, "updatedAt": self.updated_at,
            "waiting": self.waiting.iter().map(WaitingCall::to_json).collect::<Vec<_>>(),
            "snapshot": self.snapshot, "lastSeq": self.last_seq,
        });
        for (k, n) in [("heartbeatAt", self.heartbeat_at), ("retainUntil", self.retain_until), ("retainMs", self.retain_ms)] {
            if let Some(n) = n {
                v[k] = n.into();
            }
        }
        v
    }

    /// Reads a record as a storage object returned it. `what` names the caller for errors.
    pub fn from_json(v: &Value, what: &str) -> Result<RunRecord, AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let run_id = s("runId").ok_or_else(|| AgentError::storage(format!("{what} returned a run without a string runId")))?;
        let status = s("status")
            .as_deref()
            .and_then(RunStatus::parse)
            .ok_or_else(|| AgentError::storage(format!("{what} returned run '{run_id}' without a known status")))?;
        let waiting = match v.get("waiting") {
            Some(Value::Array(items)) => items.iter().map(|w| WaitingCall::from_json(w, what)).collect::<Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        };
        let num = |k: &str| v.get(k).and_then(Value::as_f64);
        Ok(RunRecord {
            agent_id: s("agentId").unwrap_or_default(),
            thread_id: s("threadId"),
            resource_id: s("resourceId"),
            status,
            created_at: num("createdAt").unwrap_or(0.0),
            updated_at: num("updatedAt").unwrap_or(0.0),
            heartbeat_at: num("heartbeatAt"),
            waiting,
            snapshot: v.get("snapshot").filter(|s| !s.is_null()).cloned(),
            last_seq: v.get("lastSeq").and_then(Value::as_u64).unwrap_or(0),
            retain_until: num("retainUntil"),
            retain_ms: num("retainMs"),
            run_id,
        })
    }
}

/// Applies an `updateRun` patch to a record's JSON: each key of `patch` replaces the record's.
/// `runId` never changes.
pub fn apply_patch(record: &mut Value, patch: &Value) {
    let (Some(rec), Some(p)) = (record.as_object_mut(), patch.as_object()) else { return };
    for (k, v) in p {
        if k != "runId" {
            rec.insert(k.clone(), v.clone());
        }
    }
}

/// `listRuns({ agentId?, threadId?, resourceId?, status? })`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFilter {
    pub agent_id: Option<String>,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    /// Any of these (all when empty).
    pub statuses: Vec<RunStatus>,
}

impl RunFilter {
    pub fn matches(&self, r: &RunRecord) -> bool {
        let eq = |want: &Option<String>, have: &Option<String>| want.as_ref().is_none_or(|w| have.as_ref() == Some(w));
        self.agent_id.as_ref().is_none_or(|a| *a == r.agent_id)
            && eq(&self.thread_id, &r.thread_id)
            && eq(&self.resource_id, &r.resource_id)
            && (self.statuses.is_empty() || self.statuses.contains(&r.status))
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (k, v) in [("agentId", &self.agent_id), ("threadId", &self.thread_id), ("resourceId", &self.resource_id)] {
            if let Some(v) = v {
                m.insert(k.into(), v.clone().into());
            }
        }
        match self.statuses.as_slice() {
            [] => {}
            [one] => {
                m.insert("status".into(), one.as_str().into());
            }
            many => {
                m.insert("status".into(), many.iter().map(|s| Value::from(s.as_str())).collect());
            }
        }
        Value::Object(m)
    }
}

/// The run methods of a storage (SPEC §19.4).
pub trait RunStore {
    /// Creates or replaces the record.
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> LocalFuture<'a, Result<(), AgentError>>;
    fn get_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>>;
    /// An atomic compare-and-set: the updated record, or `None` when absent or when its status
    /// is not `expected`.
    fn update_run<'a>(&'a self, run_id: &'a str, patch: &'a Value, expected: Option<RunStatus>) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>>;
    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<Vec<RunRecord>, AgentError>>;
    fn delete_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>>;
    /// Appends chunks (objects with `seq`) to the run's chunk log (SPEC §19.8); idempotent by
    /// `seq` (a chunk written again replaces itself).
    fn append_run_chunks<'a>(&'a self, run_id: &'a str, chunks: &'a [Value]) -> LocalFuture<'a, Result<(), AgentError>>;
    /// The logged chunks with `seq > after`, ascending, at most `limit`.
    fn list_run_chunks<'a>(&'a self, run_id: &'a str, after: u64, limit: Option<usize>) -> LocalFuture<'a, Result<Vec<Value>, AgentError>>;
    fn delete_run_chunks<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>>;
}

/// `listRunChunks`' contract on what a store returned: ascending `seq`, after `after`, one per
/// `seq`, at most `limit`.
pub fn chunks_in_order(mut chunks: Vec<Value>, after: u64, limit: Option<usize>) -> Vec<Value> {
    let seq = super::chunk_log::seq_of;
    chunks.retain(|c| seq(c) > after);
    chunks.sort_by_key(seq);
    chunks.dedup_by_key(|c| seq(c));
    if let Some(n) = limit {
        chunks.truncate(n);
    }
    chunks
}

/// Runs kept in memory, for `InMemoryStore` and tests.
#[derive(Default)]
pub struct MemoryRuns {
    runs: std::cell::RefCell<Vec<Value>>,
    /// Chunk logs by run id, by `seq`.
    chunks: std::cell::RefCell<std::collections::HashMap<String, std::collections::BTreeMap<u64, Value>>>,
}

fn ready<'a, T: 'a>(v: T) -> LocalFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

impl RunStore for MemoryRuns {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> LocalFuture<'a, Result<(), AgentError>> {
        let mut runs = self.runs.borrow_mut();
        runs.retain(|r| r["runId"] != run.run_id.as_str());
        runs.push(run.to_json());
        ready(Ok(()))
    }

    fn get_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        let found = self.runs.borrow().iter().find(|r| r["runId"] == run_id).cloned();
        ready(found.map(|r| RunRecord::from_json(&r, "InMemoryStore.getRun")).transpose())
    }

    fn update_run<'a>(&'a self, run_id: &'a str, patch: &'a Value, expected: Option<RunStatus>) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        let mut runs = self.runs.borrow_mut();
        let Some(r) = runs.iter_mut().find(|r| r["runId"] == run_id) else { return ready(Ok(None)) };
        if expected.is_some_and(|e| r["status"] != e.as_str()) {
            return ready(Ok(None));
        }
        apply_patch(r, patch);
        ready(RunRecord::from_json(r, "InMemoryStore.updateRun").map(Some))
    }

    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<Vec<RunRecord>, AgentError>> {
        let runs: Result<Vec<RunRecord>, AgentError> = self.runs.borrow().iter().map(|r| RunRecord::from_json(r, "InMemoryStore.listRuns")).collect();
        ready(runs.map(|rs| rs.into_iter().filter(|r| filter.matches(r)).collect()))
    }

    fn delete_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.runs.borrow_mut().retain(|r| r["runId"] != run_id);
        ready(Ok(()))
    }

    fn append_run_chunks<'a>(&'a self, run_id: &'a str, chunks: &'a [Value]) -> LocalFuture<'a, Result<(), AgentError>> {
        let mut logs = self.chunks.borrow_mut();
        let log = logs.entry(run_id.to_owned()).or_default();
        for c in chunks {
            log.insert(super::chunk_log::seq_of(c), c.clone());
        }
        ready(Ok(()))
    }

    fn list_run_chunks<'a>(&'a self, run_id: &'a str, after: u64, limit: Option<usize>) -> LocalFuture<'a, Result<Vec<Value>, AgentError>> {
        let logs = self.chunks.borrow();
        let found = logs.get(run_id).map(|log| log.range(after + 1..).map(|(_, c)| c.clone()).take(limit.unwrap_or(usize::MAX)).collect());
        ready(Ok(found.unwrap_or_default()))
    }

    fn delete_run_chunks<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.chunks.borrow_mut().remove(run_id);
        ready(Ok(()))
    }
}

/// A `ResumeError` with `code` and a message naming the ids.
pub fn resume_error(code: &'static str, message: impl Into<String>) -> AgentError {
    AgentError::Resume { code, message: message.into() }
}

fn not_found(run_id: &str, agent_id: &str) -> AgentError {
    resume_error(
        "not-found",
        format!("could not find a suspended run for runId '{run_id}' of agent '{agent_id}' in this agent's storage (agent.listSuspendedRuns() lists the runs waiting for a decision)"),
    )
}

/// The suspended run `run_id` of agent `agent_id`, ready to be claimed. A `resuming` record
/// whose heartbeat went stale goes back to `suspended` first (its tab died mid-resume).
pub async fn load_suspended(store: &dyn RunStore, run_id: &str, agent_id: &str, now: f64) -> Result<RunRecord, AgentError> {
    let Some(mut rec) = store.get_run(run_id).await? else { return Err(not_found(run_id, agent_id)) };
    if rec.agent_id != agent_id {
        return Err(not_found(run_id, agent_id));
    }
    if rec.status == RunStatus::Resuming {
        let beat = rec.heartbeat_at.unwrap_or(rec.updated_at);
        if now - beat <= STALE_RESUMING_MS {
            return Err(in_progress(run_id));
        }
        let patch = json!({ "status": "suspended", "updatedAt": now });
        match store.update_run(run_id, &patch, Some(RunStatus::Resuming)).await? {
            Some(r) => rec = r,
            None => return Err(in_progress(run_id)),
        }
    }
    if rec.status != RunStatus::Suspended {
        return Err(not_found(run_id, agent_id));
    }
    let v = rec.snapshot.as_ref().and_then(|s| s.get("v")).and_then(Value::as_u64).unwrap_or(0);
    if v > SNAPSHOT_V {
        return Err(resume_error(
            "not-found",
            format!("run '{run_id}' was suspended by a newer version of wasm-agent (snapshot version {v}; this one reads {SNAPSHOT_V})"),
        ));
    }
    if rec.snapshot.is_none() {
        return Err(not_found(run_id, agent_id));
    }
    Ok(rec)
}

fn in_progress(run_id: &str) -> AgentError {
    resume_error("in-progress", format!("run '{run_id}' is already being resumed (another decision on it is under way)"))
}

/// The waiting call a decision names: `tool_call_id`, or the only one waiting. `want` is the
/// kind the decision applies to (`None`: either, as `resumeStream` takes both).
pub fn pick_call<'r>(waiting: &'r [WaitingCall], run_id: &str, tool_call_id: Option<&str>, want: Option<WaitKind>) -> Result<&'r WaitingCall, AgentError> {
    let ids = || waiting.iter().map(|w| format!("'{}'", w.call.tool_call_id)).collect::<Vec<_>>().join(", ");
    let call = match tool_call_id {
        Some(id) => waiting.iter().find(|w| w.call.tool_call_id == id).ok_or_else(|| {
            resume_error("not-waiting", format!("tool call '{id}' is not waiting in run '{run_id}'; waiting: {}", if waiting.is_empty() { "none".into() } else { ids() }))
        })?,
        None => match waiting {
            [one] => one,
            _ => return Err(resume_error("not-waiting", format!("run '{run_id}' has several calls waiting ({}): pass toolCallId", ids()))),
        },
    };
    match want {
        Some(WaitKind::Approval) if call.kind == WaitKind::Suspension => Err(resume_error(
            "not-waiting",
            format!("tool call '{}' in run '{run_id}' is suspended, not waiting for approval: resume it with agent.resumeStream(resumeData, {{ runId, toolCallId }})", call.call.tool_call_id),
        )),
        _ => Ok(call),
    }
}

/// Claims the resume: `suspended` → `resuming`. Exactly one of racing claims wins.
pub async fn claim(store: &dyn RunStore, run_id: &str, now: f64) -> Result<RunRecord, AgentError> {
    let patch = json!({ "status": "resuming", "heartbeatAt": now, "updatedAt": now });
    store.update_run(run_id, &patch, Some(RunStatus::Suspended)).await?.ok_or_else(|| in_progress(run_id))
}

/// Gives a claimed resume back (it failed before anything ran): `resuming` → `suspended`.
pub async fn release(store: &dyn RunStore, run_id: &str, now: f64) -> Result<(), AgentError> {
    let patch = json!({ "status": "suspended", "updatedAt": now });
    store.update_run(run_id, &patch, Some(RunStatus::Resuming)).await.map(drop)
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
