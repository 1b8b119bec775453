//! `reconnectable` runs and `agent.reconnectStream()` (SPEC §19.8). A reconnectable run's sink
//! hands each chunk (its object with `seq`) to the run's `LiveLog`: the chunk log in storage
//! (`core::chunk_log`, batched) and the reconnected outputs following the run in this page or
//! process. The run record is written at start with status `running`, beaten every 2 s, and
//! closed at the end with `retainUntil`.
//!
//! A reconnect registers its follower before it reads the log, so the chunks it gets are the
//! log's, what was not written yet, and what came since — merged by `seq`, none missing, none
//! twice. Following a run live in ANOTHER page or process (polling the log) is not done yet: such
//! a reconnect replays the log, warns, and ends.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Promise, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::agent::Agent;
use super::convert::{error_to_js, from_json, js_kind, type_error};
use super::output::{AgentStreamOutput, Shared};
use crate::core::abort::AbortFlag;
use crate::core::chunk::Chunk;
use crate::core::chunk_log::{expired, output_of, prune, seq_of, ChunkLog, LogRuntime, DEFAULT_RETAIN_MS, HEARTBEAT_EVERY_MS};
use crate::core::env::{Env, LocalFuture};
use crate::core::memory::Store;
use crate::core::runs::{resume_error, RunRecord, RunStatus};
use crate::platform::JsEnv;

struct JsRuntime;

impl LogRuntime for JsRuntime {
    fn spawn(&self, task: LocalFuture<'static, ()>) {
        wasm_bindgen_futures::spawn_local(task);
    }
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        JsEnv.sleep(ms)
    }
}

/// A reconnected output following a live run: chunks wait in `held` until its replay is read.
struct Follower {
    held: RefCell<Vec<Value>>,
    out: RefCell<Option<Rc<Shared>>>,
    /// Every chunk the output carried, for its aggregates.
    carried: RefCell<Vec<Value>>,
}

impl Follower {
    fn take(&self, chunk: &Value) {
        let out = self.out.borrow().clone();
        match out {
            Some(out) => {
                self.carried.borrow_mut().push(chunk.clone());
                out.deliver(Chunk::Logged(Rc::new(chunk.clone())), seq_of(chunk), None);
            }
            None => self.held.borrow_mut().push(chunk.clone()),
        }
    }

    fn finish(&self, run_id: &str) {
        let out = self.out.borrow_mut().take();
        if let Some(out) = out {
            out.finish(Ok(from_json(&output_of(&self.carried.borrow(), run_id))));
        }
    }
}

/// A reconnectable run live here.
pub struct LiveLog {
    log: ChunkLog,
    store: Rc<dyn Store>,
    retain_ms: f64,
    followers: RefCell<Vec<Rc<Follower>>>,
    ended: Cell<bool>,
}

thread_local! {
    static LIVE: RefCell<Vec<Rc<LiveLog>>> = const { RefCell::new(Vec::new()) };
    static WARNED_ELSEWHERE: Cell<bool> = const { Cell::new(false) };
    static WARNED_NO_LOG: Cell<bool> = const { Cell::new(false) };
}

fn live(run_id: &str) -> Option<Rc<LiveLog>> {
    LIVE.with(|l| l.borrow().iter().find(|r| r.log.run_id() == run_id).cloned())
}

impl LiveLog {
    /// Starts the log of run `run_id` (a new run writes its record first; a resumed one has
    /// it). `None`, with one warning, when the storage keeps no chunk log.
    pub async fn start(store: Rc<dyn Store>, record: RunRecord, resumed: bool) -> Option<Rc<LiveLog>> {
        let Some(runs) = store.runs() else {
            if !WARNED_NO_LOG.with(|w| w.replace(true)) {
                super::report::warn("wasm-agent: reconnectable: the run's storage keeps no runs (a storage object without saveRun/getRun/updateRun/listRuns/deleteRun), so no chunk log is kept");
            }
            return None;
        };
        let now = js_sys::Date::now();
        if let Err(e) = prune(runs, now).await {
            super::report::warn(&format!("wasm-agent: reconnectable: pruning expired chunk logs failed: {e}"));
        }
        let saved = if resumed {
            runs.update_run(&record.run_id, &json!({ "heartbeatAt": now, "retainMs": record.retain_ms }), None).await.map(drop)
        } else {
            runs.save_run(&record).await
        };
        if let Err(e) = saved {
            super::report::warn(&format!("wasm-agent: reconnectable: the run record of '{}' could not be written ({e}); the run is not logged", record.run_id));
            return None;
        }
        let log = ChunkLog::new(&record.run_id, store.clone(), Rc::new(JsRuntime));
        let me = Rc::new(LiveLog { log, store, retain_ms: record.retain_ms.unwrap_or(DEFAULT_RETAIN_MS), followers: RefCell::default(), ended: Cell::new(false) });
        LIVE.with(|l| l.borrow_mut().push(me.clone()));
        wasm_bindgen_futures::spawn_local(heartbeat(me.clone()));
        Some(me)
    }

    /// A chunk the run's reader got. The batch before a suspension chunk or the run's last
    /// chunk is written at once.
    pub fn chunk(&self, chunk: &Chunk, value: Value) {
        if matches!(chunk, Chunk::ToolCallApproval { .. } | Chunk::ToolCallSuspended { .. } | Chunk::Finish { .. } | Chunk::Error(_) | Chunk::Abort { .. }) {
            self.log.flush();
        }
        let followers = self.followers.borrow().clone();
        for f in &followers {
            f.take(&value);
        }
        self.log.push(value);
    }

    /// A step ended: its chunks are written.
    pub fn step_end(&self) {
        self.log.flush();
    }

    /// The run ended (`status`; `None`: it suspended and its record stays as the suspension
    /// wrote it): the log is written out, the record closed, the followers finished.
    pub async fn end(&self, status: Option<RunStatus>, last_seq: u64) {
        if let Err(e) = self.log.drained().await {
            super::report::warn(&format!("wasm-agent: reconnectable: writing the chunk log of run '{}' failed: {e}", self.log.run_id()));
        }
        self.ended.set(true);
        if let (Some(status), Some(runs)) = (status, self.store.runs()) {
            let now = js_sys::Date::now();
            let patch = json!({
                "status": status.as_str(), "snapshot": null, "lastSeq": last_seq, "updatedAt": now, "heartbeatAt": now,
                "retainUntil": now + self.retain_ms,
            });
            if let Err(e) = runs.update_run(self.log.run_id(), &patch, None).await {
                super::report::warn(&format!("wasm-agent: reconnectable: closing the run record of '{}' failed: {e}", self.log.run_id()));
            }
        }
        LIVE.with(|l| l.borrow_mut().retain(|r| r.log.run_id() != self.log.run_id()));
        let followers = std::mem::take(&mut *self.followers.borrow_mut());
        for f in followers {
            f.finish(self.log.run_id());
        }
    }
}

async fn heartbeat(me: Rc<LiveLog>) {
    loop {
        JsEnv.sleep(HEARTBEAT_EVERY_MS).await;
        if me.ended.get() {
            return;
        }
        let Some(runs) = me.store.runs() else { return };
        let now = js_sys::Date::now();
        let _ = runs.update_run(me.log.run_id(), &json!({ "heartbeatAt": now, "updatedAt": now }), None).await;
    }
}

/// `reconnectable: boolean | { retainMs?: number }` (SPEC §19.8): the `retainMs` when on.
pub(super) fn parse_reconnectable(v: &JsValue) -> Result<Option<f64>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if let Some(on) = v.as_bool() {
        return Ok(on.then_some(DEFAULT_RETAIN_MS));
    }
    if !v.is_object() || v.is_function() || js_sys::Array::is_array(v) {
        return Err(type_error("options.reconnectable", &format!("expected a boolean or {{ retainMs?: number }}, got {}", js_kind(v))));
    }
    let ms = Reflect::get(v, &"retainMs".into()).unwrap_or(JsValue::UNDEFINED);
    if ms.is_undefined() {
        return Ok(Some(DEFAULT_RETAIN_MS));
    }
    match ms.as_f64() {
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
        _ => Err(type_error("options.reconnectable.retainMs", &format!("expected a number of milliseconds (0 or more), got {}", js_kind(&ms)))),
    }
}

/// How a run's record ends: `None` when it suspended (the suspension's record stands).
pub(super) fn end_status(outcome: &crate::core::run::RunOutcome) -> Option<RunStatus> {
    match () {
        _ if outcome.error.is_some() => Some(RunStatus::Failed),
        _ if outcome.aborted.is_some() => Some(RunStatus::Aborted),
        _ if outcome.suspended => None,
        _ => Some(RunStatus::Completed),
    }
}

fn not_found(run_id: &str, why: &str) -> JsValue {
    error_to_js(&resume_error("not-found", format!("could not find a chunk log for runId '{run_id}' ({why}); only runs streamed with reconnectable: true keep one, until their retainMs passed")))
}

#[wasm_bindgen]
impl Agent {
    /// The chunks of a `reconnectable` run with `seq > after` (default 0), then, while the run
    /// is live in this page or process, its live chunks until it ends (SPEC §19.8). Rejects
    /// with `ResumeError` 'not-found' when there is no log for `runId`.
    #[wasm_bindgen(js_name = reconnectStream, unchecked_return_type = "Promise<AgentStreamOutput>")]
    pub fn reconnect_stream(&self, #[wasm_bindgen(unchecked_param_type = "{ runId: string; after?: number }")] args: JsValue) -> Result<Promise, JsValue> {
        if !args.is_object() {
            return Err(type_error("reconnectStream(args)", &format!("expected {{ runId, after? }}, got {}", js_kind(&args))));
        }
        let run_id = Reflect::get(&args, &"runId".into()).unwrap_or(JsValue::UNDEFINED);
        let Some(run_id) = run_id.as_string().filter(|s| !s.is_empty()) else {
            return Err(type_error("reconnectStream(args).runId", &format!("expected a non-empty string, got {}", js_kind(&run_id))));
        };
        let after_js = Reflect::get(&args, &"after".into()).unwrap_or(JsValue::UNDEFINED);
        let after = match after_js.as_f64() {
            None if after_js.is_undefined() => 0,
            Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 * 1024.0 => n as u64,
            _ => return Err(type_error("reconnectStream(args).after", &format!("expected a whole number of 0 or more (the last seq seen), got {}", js_kind(&after_js)))),
        };
        let agent = Agent { inner: self.inner.clone() };
        Ok(future_to_promise(async move { agent.reconnect(run_id, after).await.map(JsValue::from) }))
    }
}

impl Agent {
    async fn reconnect(&self, run_id: String, after: u64) -> Result<AgentStreamOutput, JsValue> {
        let store = self.inner.runs_store.borrow().clone();
        let Some(store) = store else { return Err(not_found(&run_id, "this agent keeps no run records")) };
        let Some(runs) = store.runs() else { return Err(not_found(&run_id, "its storage keeps no runs")) };
        let err = |e| error_to_js(&e);
        let rec = runs.get_run(&run_id).await.map_err(err)?;
        let Some(rec) = rec.filter(|r| r.agent_id == self.inner.config.id && r.retain_ms.is_some()) else {
            return Err(not_found(&run_id, "unknown to this agent, or not reconnectable"));
        };
        if expired(&rec, js_sys::Date::now()) {
            let _ = runs.delete_run_chunks(&run_id).await;
            let _ = runs.delete_run(&run_id).await;
            return Err(not_found(&run_id, "its retainMs passed"));
        }
        // Registered before the read: what the run emits meanwhile waits in `held`.
        let running = live(&run_id);
        let follower = Rc::new(Follower { held: RefCell::default(), out: RefCell::default(), carried: RefCell::default() });
        let unwritten = match &running {
            Some(l) => {
                l.followers.borrow_mut().push(follower.clone());
                l.log.unwritten_after(after)
            }
            None => Vec::new(),
        };
        let logged = runs.list_run_chunks(&run_id, after, None).await;
        let logged = match logged {
            Ok(l) => l,
            Err(e) => {
                if let Some(l) = &running {
                    l.followers.borrow_mut().retain(|f| !Rc::ptr_eq(f, &follower));
                }
                return Err(err(e));
            }
        };
        let mut all = logged;
        all.extend(unwritten);
        all.extend(std::mem::take(&mut *follower.held.borrow_mut()));
        let all = crate::core::runs::chunks_in_order(all, after, None);
        let shared = Shared::new(run_id.clone(), AbortFlag::new());
        shared.keep_run_on_cancel();
        for c in &all {
            shared.deliver(Chunk::Logged(Rc::new(c.clone())), seq_of(c), None);
        }
        *follower.carried.borrow_mut() = all;
        let still_live = running.as_ref().is_some_and(|l| !l.ended.get() && l.followers.borrow().iter().any(|f| Rc::ptr_eq(f, &follower)));
        if still_live {
            *follower.out.borrow_mut() = Some(shared.clone());
        } else {
            if running.is_none() && matches!(rec.status, RunStatus::Running | RunStatus::Resuming) && !WARNED_ELSEWHERE.with(|w| w.replace(true)) {
                super::report::warn(&format!(
                    "wasm-agent: reconnectStream: run '{run_id}' is live in another page or process; following it there is not supported yet, so the stream ends after the chunks logged so far"
                ));
            }
            follower.out.borrow_mut().replace(shared.clone());
            follower.finish(&run_id);
        }
        Ok(AgentStreamOutput::new(shared))
    }
}
