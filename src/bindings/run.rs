//! Drives one run on the JavaScript event loop: the core loop's chunks become JavaScript
//! objects pushed into the output, the user's callbacks are called at their points, and the
//! caller's `AbortSignal` is wired to the run's abort flag.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::options::{CallSetup, JsCallbacks};
use super::convert::error_to_js;
use super::share::from_json_shared;
use super::output::Shared;
use super::host::JsHost;
use super::scorers::ScoreJob;
use crate::core::abort::AbortFlag;
#[cfg(feature = "reconnect")]
use crate::core::runs::{RunRecord, RunStatus};
use crate::core::tools::Approvals;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::run::{run, RunConfig, RunOutcome, Sink};
use crate::core::until_idle::{drive, with_task_chunks, Continuations, IdleLoop, IdleWatch};
use crate::core::step::StepResult;
use crate::platform::JsEnv;

struct JsSink {
    pub(crate) shared: Rc<Shared>,
    /// Outputs of decisions made while the run is live here (SPEC §19.3): each gets every chunk
    /// from its decision on, and the run's result.
    views: super::resume::Views,
    on_chunk: Option<Function>,
    on_step_finish: Option<Function>,
    /// The last chunk's `seq` (SPEC §19.8): a resumed run starts from its record's `lastSeq`;
    /// with untilIdle every turn counts on (one sink for the outer stream).
    seq: Cell<u64>,
    /// A `reconnectable` run's chunk log and followers (SPEC §19.8).
    #[cfg(feature = "reconnect")]
    log: Option<Rc<super::reconnect::LiveLog>>,
    /// The memory's watchers of this run's thread (SPEC §21.2).
    #[cfg(feature = "watch")]
    tap: Option<super::watch::ChunkTap>,
}

impl Sink for JsSink {
    fn emit(&self, chunk: Chunk) {
        let seq = self.seq.get() + 1;
        self.seq.set(seq);
        let mut js = self.on_chunk.as_ref().map(|f| {
            let js = self.shared.chunk_js(&chunk, seq);
            // A throwing onChunk must not break the run; its result is not awaited.
            super::report::call_observer("onChunk", f, &js);
            js
        });
        #[cfg(feature = "watch")]
        if let Some(tap) = self.tap.as_ref().filter(|t| t.wants()) {
            let js = js.get_or_insert_with(|| self.shared.chunk_js(&chunk, seq));
            tap.chunk(js);
        }
        #[cfg(feature = "reconnect")]
        if let Some(log) = &self.log {
            log.chunk(&chunk, self.shared.chunk_value(&chunk, seq));
        }
        // Decisions' second views (SPEC §19.3), usually none: cloned out of the borrow, since
        // delivering may run a reader's code.
        if !self.views.borrow().is_empty() {
            let views = self.views.borrow().clone();
            for v in &views {
                v.deliver(chunk.clone(), seq, None);
            }
        }
        self.shared.deliver(chunk, seq, js);
    }

    fn seq(&self) -> u64 {
        self.seq.get()
    }

    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()> {
        Box::pin(async move {
            #[cfg(feature = "reconnect")]
            if let Some(log) = &self.log {
                log.step_end();
            }
            if let Some(f) = &self.on_step_finish {
                call_and_wait("onStepFinish", f, &from_json_shared(step.to_json())).await;
            }
        })
    }
}

#[cfg(feature = "reconnect")]
/// A reconnectable turn's storage and run record (SPEC §19.8): a new run's `running` record, or
/// (`true`) the record a resumed run already has.
fn reconnect_record(turn: &Turn) -> Option<(Rc<dyn crate::core::memory::Store>, RunRecord, bool)> {
    let rc = turn.cfg.runs.as_ref()?;
    let retain_ms = rc.retain_ms?;
    let store = rc.store.clone()?;
    let now = js_sys::Date::now();
    let thread = turn.cfg.memory.as_ref();
    let record = RunRecord {
        run_id: turn.run_id.clone(),
        agent_id: rc.agent_id.clone(),
        thread_id: thread.map(|m| m.thread_id.clone()),
        resource_id: thread.map(|m| m.resource_id.clone()),
        status: RunStatus::Running,
        created_at: now,
        updated_at: now,
        heartbeat_at: Some(now),
        waiting: Vec::new(),
        snapshot: None,
        last_seq: 0,
        retain_until: None,
        retain_ms: Some(retain_ms),
    };
    Some((store, record, turn.cfg.resume.is_some()))
}

/// Calls a user callback and waits for it when it returns a promise. A callback cannot fail the
/// run it observes: its throw or rejection is reported on the console, once.
async fn call_and_wait(name: &str, f: &Function, arg: &JsValue) {
    if let Err(e) = super::tools::call_async(f, &JsValue::UNDEFINED, &[arg]).await {
        super::report::callback_failed(name, &e);
    }
}

/// `call_and_wait` that stops waiting when the run is aborted (a promise that never settles
/// must not keep the stream open). Returns `false` when an abort cut the wait short.
async fn call_and_wait_abortable(name: &str, f: &Function, arg: &JsValue, abort: &AbortFlag) -> bool {
    let ret = match f.call1(&JsValue::UNDEFINED, arg) {
        Ok(ret) => ret,
        Err(e) => {
            super::report::callback_failed(name, &e);
            return true;
        }
    };
    let thenable = ret.has_type::<Promise>() || Reflect::get(&ret, &"then".into()).map(|t| t.is_function()).unwrap_or(false);
    if !thenable || abort.is_aborted() {
        return true;
    }
    match abort.race(JsFuture::from(Promise::resolve(&ret))).await {
        Some(Ok(_)) => true,
        Some(Err(e)) => {
            super::report::callback_failed(name, &e);
            true
        }
        None => false,
    }
}

/// One turn, ready to run.
pub struct Turn {
    pub cfg: RunConfig,
    pub host: JsHost,
    pub approvals: Rc<Approvals>,
    pub views: super::resume::Views,
    pub run_id: String,
    pub abort: AbortFlag,
    /// Unregisters the turn's approvals when it ended.
    pub done: Box<dyn FnOnce()>,
    /// Scorers and scoring data of the run (the first turn of a call only).
    pub scoring: Option<super::scorers::ScoreJob>,
    /// The run's trace id and root span id, when it is traced (SPEC §16.4).
    pub trace: Option<(String, String)>,
    /// Watchers of the run's memory thread (SPEC §21.2).
    #[cfg(feature = "watch")]
    pub tap: Option<super::watch::ChunkTap>,
}

/// What an `untilIdle` stream needs besides its first turn.
pub struct IdleSetup {
    pub watch: IdleWatch,
    /// Builds a continuation turn with this directive in its context.
    pub next_turn: Box<dyn Fn(String) -> Result<Turn, JsValue>>,
    /// Runs when the wrapper closed.
    pub on_close: Box<dyn FnOnce()>,
}

/// Starts the call on the event loop: its first turn, and with `idle` the continuation turns
/// until nothing is left to answer. `call` is the call's parsed options (callbacks, signal).
pub(crate) fn spawn_run(first: Turn, shared: Rc<Shared>, call: Rc<CallSetup>, idle: Option<IdleSetup>) {
    let outer = first.abort.clone();
    let listener = listen_abort(&call.signal, &outer);
    wasm_bindgen_futures::spawn_local(async move {
        let cb = &call.js;
        #[cfg(feature = "reconnect")]
        let log = match reconnect_record(&first) {
            Some((store, record, resumed)) => {
                shared.keep_run_on_cancel();
                super::reconnect::LiveLog::start(store, record, resumed).await
            }
            None => None,
        };
        let sink = JsSink {
            shared: shared.clone(),
            views: first.views.clone(),
            on_chunk: cb.on_chunk.clone(),
            on_step_finish: cb.on_step_finish.clone(),
            seq: Cell::new(first.cfg.resume.as_ref().map_or(0, |r| r.last_seq)),
            #[cfg(feature = "reconnect")]
            log,
            #[cfg(feature = "watch")]
            tap: first.tap,
        };
        let run_id = first.run_id.clone();
        let first_failed;
        #[cfg(feature = "reconnect")]
        let end_status;
        // With untilIdle the loop's state starts with the first turn: a task that ends while it
        // streams is queued and answered after it.
        let mut idle_loop = idle.as_ref().map(|s| IdleLoop::new(s.watch.max_idle_ms));
        let job = first.scoring;
        let (result, scoring) = {
            let fut = run(first.cfg, &JsEnv, &sink, &first.host, &first.approvals, &first.abort);
            let mut outcome = match &idle {
                Some(setup) => with_task_chunks(fut, &setup.watch.subscription, &sink, &JsEnv, idle_loop.as_mut()).await,
                None => fut.await,
            };
            (first.done)();
            first_failed = outcome.error.is_some();
            #[cfg(feature = "reconnect")]
            {
                end_status = super::reconnect::end_status(&outcome);
            }
            let scoring = outcome.scoring.take();
            let shown = scoring.as_ref().filter(|_| job.as_ref().is_some_and(|j| j.return_data));
            (settle_first(&outcome, &run_id, cb, &first.abort, &sink, shown).await, scoring)
        };
        // Scored once memory is written and the stream closed (or, with untilIdle, the first
        // turn's aggregates settled): a scorer never delays what the reader waits for.
        let score = |shared: &Shared| ScoreJob::start(job.as_ref(), scoring.as_ref(), &run_id, shared);
        let views = std::mem::take(&mut *sink.views.borrow_mut());
        for v in views {
            v.finish(result.clone());
        }
        match idle {
            None => {
                // The log is written out before the stream closes: a reconnect after the end
                // finds every chunk.
                #[cfg(feature = "reconnect")]
                if let Some(log) = &sink.log {
                    log.end(end_status, sink.seq.get()).await;
                }
                shared.finish(result);
                score(&shared);
            }
            Some(setup) => {
                // The aggregates come from the first turn; the stream goes on.
                shared.settle_all(result);
                score(&shared);
                let l = idle_loop.unwrap_or_else(|| IdleLoop::new(setup.watch.max_idle_ms));
                let turns = JsContinuations { setup: &setup, sink: &sink, outer: &outer };
                drive(&setup.watch, l, &JsEnv, &sink, &outer, first_failed, &turns).await;
                #[cfg(feature = "reconnect")]
                if let Some(log) = &sink.log {
                    log.end(end_status, sink.seq.get()).await;
                }
                (setup.on_close)();
                shared.close_streams();
            }
        }
        if let Some((signal, f)) = &listener {
            let _ = Reflect::get(signal, &"removeEventListener".into())
                .ok()
                .and_then(|r| r.dyn_into::<Function>().ok())
                .map(|r| r.call2(signal, &"abort".into(), f));
        }
    });
}

/// The first turn's output for the promises, after its callbacks ran. An abort while `onFinish`
/// or `onError` is awaited stops the wait and ends the stream with an `abort` chunk; the
/// promises still settle with the run's own result.
async fn settle_first(
    outcome: &RunOutcome,
    run_id: &str,
    cb: &JsCallbacks,
    abort: &AbortFlag,
    sink: &JsSink,
    scoring_data: Option<&serde_json::Value>,
) -> Result<JsValue, JsValue> {
    let full = from_json_shared(outcome.output_json(run_id));
    if let Some((trace, span)) = sink.shared.trace() {
        let _ = Reflect::set(&full, &"traceId".into(), &trace.into());
        let _ = Reflect::set(&full, &"spanId".into(), &span.into());
    }
    if let Some(data) = scoring_data {
        let _ = Reflect::set(&full, &"scoringData".into(), &super::convert::from_json(data));
    }
    let cut_short = |waited: bool| {
        if !waited {
            sink.emit(Chunk::Abort { reason: abort.reason() });
        }
    };
    match &outcome.error {
        Some(e) => {
            let err = error_to_js(e);
            if let Some(f) = &cb.on_error {
                let arg = Object::new();
                let _ = Reflect::set(&arg, &"error".into(), &err);
                cut_short(call_and_wait_abortable("onError", f, &arg, abort).await);
            }
            Err(err)
        }
        None => {
            let structured = outcome.structured.as_ref();
            if let Some(line) = structured.and_then(|s| s.warning.as_ref()) {
                super::report::warn(&format!("wasm-agent: {line}"));
            }
            if let Some(e) = structured.and_then(|s| s.error.as_ref()) {
                // `errorStrategy: 'strict'`: the run ends as usual, but its object failed.
                let err = error_to_js(e);
                sink.shared.fail_object(err.clone());
                if let Some(f) = &cb.on_error {
                    let arg = Object::new();
                    let _ = Reflect::set(&arg, &"error".into(), &err);
                    cut_short(call_and_wait_abortable("onError", f, &arg, abort).await);
                }
                return Ok(full);
            }
            if outcome.aborted.is_some() {
                if let Some(f) = &cb.on_abort {
                    call_and_wait("onAbort", f, &full).await;
                }
            } else if let Some(f) = &cb.on_finish {
                cut_short(call_and_wait_abortable("onFinish", f, &full, abort).await);
            }
            Ok(full)
        }
    }
}

/// The continuation turns of an untilIdle stream: built by the agent, streamed into the same
/// output, and closed with the stream.
struct JsContinuations<'a> {
    setup: &'a IdleSetup,
    sink: &'a JsSink,
    outer: &'a AbortFlag,
}

impl Continuations for JsContinuations<'_> {
    fn start_turn(&self, directive: String) -> Result<LocalFuture<'_, bool>, AgentError> {
        let turn = (self.setup.next_turn)(directive).map_err(|e| {
            let message = Reflect::get(&e, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default();
            AgentError::Validation { message }
        })?;
        self.sink.shared.begin_turn(&turn.run_id);
        let turn_abort = turn.abort.clone();
        self.outer.on_abort(Box::new(move || {
            turn_abort.abort(Some("the untilIdle stream was closed".into()));
        }));
        Ok(Box::pin(async move {
            let outcome = run(turn.cfg, &JsEnv, self.sink, &turn.host, &turn.approvals, &turn.abort).await;
            (turn.done)();
            outcome.error.is_some()
        }))
    }
}

/// Wires `signal`'s abort event to the flag; returns the listener to remove when the run ends.
fn listen_abort(signal: &JsValue, abort: &AbortFlag) -> Option<(JsValue, JsValue)> {
    if !signal.is_object() {
        return None;
    }
    let reason_of = |s: &JsValue| -> Option<String> {
        let r = Reflect::get(s, &"reason".into()).ok()?;
        Reflect::get(&r, &"message".into()).ok().and_then(|m| m.as_string()).or_else(|| r.as_string())
    };
    if Reflect::get(signal, &"aborted".into()).map(|a| a.is_truthy()).unwrap_or(false) {
        abort.abort(reason_of(signal));
        return None;
    }
    let flag = abort.clone();
    let sig = signal.clone();
    let fired = Rc::new(Cell::new(false));
    let f = Closure::<dyn FnMut()>::new(move || {
        if !fired.replace(true) {
            flag.abort(reason_of(&sig));
        }
    })
    .into_js_value();
    let add = Reflect::get(signal, &"addEventListener".into()).ok()?.dyn_into::<Function>().ok()?;
    add.call2(signal, &"abort".into(), &f).ok()?;
    Some((signal.clone(), f))
}
