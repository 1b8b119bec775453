//! The chunk log of a `reconnectable` run (SPEC §19.8): its chunks, as the reader got them (with
//! `seq`), appended to storage in batches — never one write per chunk. A batch is written at the
//! latest `FLUSH_EVERY_MS` after its first chunk, and at once where the caller asks (a step's end,
//! before a suspension chunk or the run's last chunk). Batches are written one after another, in
//! order; `drained` waits for the last.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use serde_json::Value;

use super::env::LocalFuture;
use super::error::AgentError;
use super::memory::Store;

/// A batch is written at the latest this long after its first chunk.
pub const FLUSH_EVERY_MS: u64 = 100;
/// A live run's record gets a fresh `heartbeatAt` this often.
pub const HEARTBEAT_EVERY_MS: u64 = 2_000;
/// How long a finished run's log and record stay by default (`retainMs`).
pub const DEFAULT_RETAIN_MS: f64 = 3_600_000.0;

/// What the log needs from its runtime: run a task on the event loop, and wait.
pub trait LogRuntime {
    fn spawn(&self, task: LocalFuture<'static, ()>);
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()>;
}

#[derive(Default)]
struct State {
    /// Chunks not handed to a write yet.
    pending: Vec<Value>,
    /// Batches waiting for the write before them.
    queue: VecDeque<Vec<Value>>,
    /// The batch being written (not surely readable from storage yet).
    in_flight: Vec<Value>,
    writing: bool,
    timer: bool,
    /// The first failed write (the run goes on; the caller reports it once).
    error: Option<AgentError>,
    drained: Vec<futures_channel::oneshot::Sender<()>>,
}

struct Inner {
    run_id: String,
    store: Rc<dyn Store>,
    rt: Rc<dyn LogRuntime>,
    st: RefCell<State>,
}

/// One run's log. Cloning shares it.
#[derive(Clone)]
pub struct ChunkLog(Rc<Inner>);

impl ChunkLog {
    pub fn new(run_id: &str, store: Rc<dyn Store>, rt: Rc<dyn LogRuntime>) -> Self {
        ChunkLog(Rc::new(Inner { run_id: run_id.to_owned(), store, rt, st: RefCell::default() }))
    }

    pub fn run_id(&self) -> &str {
        &self.0.run_id
    }

    /// Adds a chunk (its object with `seq`); the first of a batch starts the batch's timer.
    pub fn push(&self, chunk: Value) {
        let start_timer = {
            let mut st = self.0.st.borrow_mut();
            st.pending.push(chunk);
            !std::mem::replace(&mut st.timer, true)
        };
        if start_timer {
            let me = self.clone();
            let sleep = self.0.rt.sleep(FLUSH_EVERY_MS);
            self.0.rt.spawn(Box::pin(async move {
                sleep.await;
                me.0.st.borrow_mut().timer = false;
                me.flush();
            }));
        }
    }

    /// Hands what is pending to a write now (after the writes before it).
    pub fn flush(&self) {
        let start = {
            let mut st = self.0.st.borrow_mut();
            if !st.pending.is_empty() {
                let batch = std::mem::take(&mut st.pending);
                st.queue.push_back(batch);
            }
            !st.queue.is_empty() && !std::mem::replace(&mut st.writing, true)
        };
        if start {
            let me = self.clone();
            self.0.rt.spawn(Box::pin(async move { me.write_all().await }));
        }
    }

    async fn write_all(&self) {
        loop {
            let batch = {
                let mut st = self.0.st.borrow_mut();
                let Some(batch) = st.queue.pop_front() else { break };
                st.in_flight = batch.clone();
                batch
            };
            let written = match self.0.store.runs() {
                Some(runs) => runs.append_run_chunks(&self.0.run_id, &batch).await,
                None => Err(AgentError::storage("this storage keeps no runs, so it keeps no chunk log")),
            };
            let mut st = self.0.st.borrow_mut();
            st.in_flight.clear();
            if let Err(e) = written {
                st.error.get_or_insert(e);
            }
        }
        let waiting = {
            let mut st = self.0.st.borrow_mut();
            st.writing = false;
            std::mem::take(&mut st.drained)
        };
        for tx in waiting {
            let _ = tx.send(());
        }
    }

    /// Writes what is pending and waits until every write is done; the first failed one, if any.
    pub async fn drained(&self) -> Result<(), AgentError> {
        self.flush();
        let rx = {
            let mut st = self.0.st.borrow_mut();
            if st.writing {
                let (tx, rx) = futures_channel::oneshot::channel();
                st.drained.push(tx);
                Some(rx)
            } else {
                None
            }
        };
        if let Some(rx) = rx {
            let _ = rx.await;
        }
        match self.0.st.borrow_mut().error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The chunks with `seq > after` not surely in storage yet (being written, queued or
    /// pending), in order: what a reconnect adds to what it reads from storage.
    pub fn unwritten_after(&self, after: u64) -> Vec<Value> {
        let st = self.0.st.borrow();
        st.in_flight.iter().chain(st.queue.iter().flatten()).chain(st.pending.iter()).filter(|c| seq_of(c) > after).cloned().collect()
    }
}

/// A logged chunk's `seq` (0 when it has none).
pub fn seq_of(chunk: &Value) -> u64 {
    chunk.get("seq").and_then(Value::as_u64).unwrap_or(0)
}

/// Whether a run's log and record are past their `retainUntil`.
pub fn expired(record: &super::runs::RunRecord, now: f64) -> bool {
    record.retain_until.is_some_and(|t| t <= now)
}

/// Deletes the logs and records of finished runs past their `retainUntil` (SPEC §19.8). The
/// number deleted.
pub async fn prune(store: &dyn super::runs::RunStore, now: f64) -> Result<usize, AgentError> {
    use super::runs::{RunFilter, RunStatus};
    let filter = RunFilter { statuses: vec![RunStatus::Completed, RunStatus::Failed, RunStatus::Aborted], ..Default::default() };
    let mut n = 0;
    for r in store.list_runs(&filter).await? {
        if expired(&r, now) {
            store.delete_run_chunks(&r.run_id).await?;
            store.delete_run(&r.run_id).await?;
            n += 1;
        }
    }
    Ok(n)
}

/// The output of a `reconnectStream` (SPEC §19.8) from the chunks it carried: `text`,
/// `reasoningText`, `finishReason`, `usage`, `totalUsage`, `toolCalls`, `toolResults`,
/// `suspendPayload`, `warnings`. Only what those chunks say (a reconnect `after` a point has
/// only the rest of the text).
pub fn output_of(chunks: &[Value], run_id: &str) -> Value {
    let (mut text, mut reasoning) = (String::new(), String::new());
    let (mut calls, mut results) = (Vec::new(), Vec::new());
    let mut out = serde_json::Map::new();
    out.insert("runId".into(), run_id.into());
    for c in chunks {
        let payload = c.get("payload").unwrap_or(&Value::Null);
        let s = |k: &str| payload.get(k).and_then(Value::as_str).unwrap_or_default();
        match c.get("type").and_then(Value::as_str).unwrap_or_default() {
            "text-delta" => text.push_str(s("text")),
            "reasoning-delta" => reasoning.push_str(s("text")),
            "tool-call" => calls.push(payload.clone()),
            "tool-result" => results.push(payload.clone()),
            "tool-call-suspended" if !out.contains_key("suspendPayload") => {
                out.insert("suspendPayload".into(), payload.get("suspendPayload").cloned().unwrap_or(Value::Null));
            }
            "finish" => {
                out.insert("finishReason".into(), payload.pointer("/stepResult/reason").cloned().unwrap_or(Value::Null));
                out.insert("usage".into(), payload.pointer("/output/usage").cloned().unwrap_or(Value::Null));
                out.insert("totalUsage".into(), payload.get("totalUsage").cloned().unwrap_or(Value::Null));
            }
            "abort" => {
                out.insert("finishReason".into(), "abort".into());
            }
            _ => {}
        }
    }
    out.insert("text".into(), text.into());
    out.insert("reasoningText".into(), if reasoning.is_empty() { Value::Null } else { reasoning.into() });
    out.insert("toolCalls".into(), calls.into());
    out.insert("toolResults".into(), results.into());
    out.insert("warnings".into(), Value::Array(Vec::new()));
    Value::Object(out)
}

#[cfg(test)]
#[path = "chunk_log_tests.rs"]
mod tests;
