//! Drives one run on the JavaScript event loop: the core loop's chunks become JavaScript
//! objects pushed into the output, the user's callbacks are called at their points, and the
//! caller's `AbortSignal` is wired to the run's abort flag.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;

use super::agent::{callback, json_value};
use super::convert::error_to_js;
use super::output::Shared;
use super::host::JsHost;
use crate::core::abort::AbortFlag;
use crate::core::tools::Approvals;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::background::{Manager, Scope, Subscription};
use crate::core::env::Env;
use crate::core::run::{run, RunConfig, RunOutcome, Sink};
use crate::core::until_idle::{Action, Event, Finished, IdleLoop, TaskOutcome};
use crate::core::step::StepResult;
use crate::platform::JsEnv;

/// The user's callbacks for one run (the call's, else `defaultOptions`').
pub struct Callbacks {
    on_chunk: Option<Function>,
    on_step_finish: Option<Function>,
    on_finish: Option<Function>,
    on_error: Option<Function>,
    on_abort: Option<Function>,
}

impl Callbacks {
    pub fn read(options: &JsValue, defaults: &JsValue) -> Result<Self, JsValue> {
        let get = |name| callback(options, defaults, name);
        Ok(Callbacks {
            on_chunk: get("onChunk")?,
            on_step_finish: get("onStepFinish")?,
            on_finish: get("onFinish")?,
            on_error: get("onError")?,
            on_abort: get("onAbort")?,
        })
    }
}

struct JsSink {
    pub(crate) shared: Rc<Shared>,
    on_chunk: Option<Function>,
    on_step_finish: Option<Function>,
}

impl Sink for JsSink {
    fn emit(&self, chunk: Chunk) {
        let js = self.on_chunk.as_ref().map(|f| {
            let js = self.shared.chunk_js(&chunk);
            // A throwing onChunk must not break the run; its result is not awaited.
            super::report::call_observer("onChunk", f, &js);
            js
        });
        self.shared.deliver(chunk, js);
    }

    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()> {
        Box::pin(async move {
            if let Some(f) = &self.on_step_finish {
                call_and_wait("onStepFinish", f, &json_value(&step.to_json())).await;
            }
        })
    }
}

/// Calls a user callback and waits for it when it returns a promise. A callback cannot fail the
/// run it observes: its throw or rejection is reported on the console, once.
async fn call_and_wait(name: &str, f: &Function, arg: &JsValue) {
    if let Err(e) = super::tools::call_async(f, &JsValue::UNDEFINED, &[arg]).await {
        super::report::callback_failed(name, &e);
    }
}

/// One turn, ready to run.
pub struct Turn {
    pub cfg: RunConfig,
    pub host: JsHost,
    pub approvals: Rc<Approvals>,
    pub run_id: String,
    pub abort: AbortFlag,
    /// Unregisters the turn's approvals when it ended.
    pub done: Box<dyn FnOnce()>,
}

/// What an `untilIdle` stream needs besides its first turn.
pub struct IdleSetup {
    pub manager: Rc<Manager>,
    /// Subscribed before the first turn, so no task chunk is missed.
    pub subscription: Rc<Subscription>,
    pub scope: Scope,
    pub max_idle_ms: u64,
    /// Builds a continuation turn with this directive in its context.
    pub next_turn: Box<dyn Fn(String) -> Result<Turn, JsValue>>,
    /// Runs when the wrapper closed.
    pub on_close: Box<dyn FnOnce()>,
}

/// Starts the call on the event loop: its first turn, and with `idle` the continuation turns
/// until nothing is left to answer.
pub fn spawn_run(first: Turn, shared: Rc<Shared>, cb: Callbacks, signal: JsValue, idle: Option<IdleSetup>) {
    let outer = first.abort.clone();
    let listener = listen_abort(&signal, &outer);
    wasm_bindgen_futures::spawn_local(async move {
        let sink = JsSink { shared: shared.clone(), on_chunk: cb.on_chunk.clone(), on_step_finish: cb.on_step_finish.clone() };
        let run_id = first.run_id.clone();
        let first_failed;
        // With untilIdle the loop's state starts with the first turn: a task that ends while it
        // streams is queued and answered after it.
        let mut idle_loop = idle.as_ref().map(|s| IdleLoop::new(s.max_idle_ms));
        let result = {
            let fut = run(first.cfg, &JsEnv, &sink, &first.host, &first.approvals, &first.abort);
            let outcome = match &idle {
                Some(setup) => with_task_chunks(fut, &setup.subscription, &sink, idle_loop.as_mut()).await,
                None => fut.await,
            };
            (first.done)();
            first_failed = outcome.error.is_some();
            settle_first(&outcome, &run_id, &cb).await
        };
        match idle {
            None => shared.finish(result),
            Some(setup) => {
                // The aggregates come from the first turn; the stream goes on.
                shared.settle_all(result);
                let l = idle_loop.unwrap_or_else(|| IdleLoop::new(setup.max_idle_ms));
                drive_idle(setup, l, &sink, &outer, first_failed).await;
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

/// The first turn's output for the promises, after its callbacks ran.
async fn settle_first(outcome: &RunOutcome, run_id: &str, cb: &Callbacks) -> Result<JsValue, JsValue> {
    let full = json_value(&outcome.output_json(run_id));
    match &outcome.error {
        Some(e) => {
            let err = error_to_js(e);
            if let Some(f) = &cb.on_error {
                let arg = Object::new();
                let _ = Reflect::set(&arg, &"error".into(), &err);
                call_and_wait("onError", f, &arg).await;
            }
            Err(err)
        }
        None => {
            if outcome.aborted.is_some() {
                if let Some(f) = &cb.on_abort {
                    call_and_wait("onAbort", f, &full).await;
                }
            } else if let Some(f) = &cb.on_finish {
                call_and_wait("onFinish", f, &full).await;
            }
            Ok(full)
        }
    }
}

/// Runs a turn while forwarding the chunks of background tasks as they come; with `idle`,
/// the tasks that end meanwhile are told to the loop (it answers them after the turn).
async fn with_task_chunks<F: std::future::Future<Output = RunOutcome>>(
    turn: F,
    sub: &Subscription,
    sink: &JsSink,
    mut idle: Option<&mut IdleLoop>,
) -> RunOutcome {
    let mut turn = std::pin::pin!(turn);
    std::future::poll_fn(|cx| {
        while let Some(c) = sub.try_next() {
            if let (Some(l), Some(f)) = (idle.as_deref_mut(), finished_of(&c)) {
                l.on(Event::TaskEnded(f), js_sys::Date::now());
            }
            sink.emit(c);
        }
        if let std::task::Poll::Ready(o) = turn.as_mut().poll(cx) {
            return std::task::Poll::Ready(o);
        }
        // Woken by the next task chunk too.
        let mut next = std::pin::pin!(sub.next());
        if let std::task::Poll::Ready(c) = next.as_mut().poll(cx) {
            if let (Some(l), Some(f)) = (idle.as_deref_mut(), finished_of(&c)) {
                l.on(Event::TaskEnded(f), js_sys::Date::now());
            }
            sink.emit(c);
            cx.waker().wake_by_ref();
        }
        std::task::Poll::Pending
    })
    .await
}

/// A terminal task chunk as the loop names it.
fn finished_of(c: &Chunk) -> Option<Finished> {
    let Chunk::Background { kind, payload } = c else { return None };
    let s = |k: &str| payload.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let outcome = match *kind {
        "background-task-completed" => TaskOutcome::Completed,
        "background-task-cancelled" => TaskOutcome::Cancelled,
        "background-task-failed" => {
            let message = payload["error"]["message"].as_str().unwrap_or_default().to_string();
            if message.starts_with("timed out") {
                TaskOutcome::TimedOut
            } else {
                TaskOutcome::Failed { message }
            }
        }
        _ => return None,
    };
    Some(Finished { task_id: s("taskId"), tool_call_id: s("toolCallId"), tool_name: s("toolName"), outcome })
}

/// Tells the loop about the scope's tasks that are still going.
fn note_running(l: &mut IdleLoop, setup: &IdleSetup) {
    let thread = setup.scope.thread_id.as_deref();
    for t in setup.manager.list(thread, None) {
        let mine = t.agent_id == setup.scope.agent_id && t.resource_id == setup.scope.resource_id;
        if mine && !t.status.is_terminal() {
            l.on(Event::TaskStarted { task_id: t.id }, js_sys::Date::now());
        }
    }
}

/// What woke the idle wait.
enum Woke {
    Task(Chunk),
    Timer,
    /// Time for a `background-task-progress` chunk.
    Progress,
    Aborted,
}

/// How often a waiting untilIdle stream reports the tasks it waits for.
const PROGRESS_EVERY_MS: f64 = 2_000.0;

/// SPEC §9: after the first turn, continue once per batch of finished tasks, one turn at a
/// time, until nothing runs, nothing is queued and no turn streams — or the idle timer fires,
/// the caller aborts, or a continuation fails.
async fn drive_idle(setup: IdleSetup, mut l: IdleLoop, sink: &JsSink, outer: &AbortFlag, first_failed: bool) {
    if outer.is_aborted() {
        l.on(Event::Abort, js_sys::Date::now());
    }
    note_running(&mut l, &setup);
    let started = js_sys::Date::now();
    let mut actions = l.on(Event::TurnEnded { failed: first_failed }, js_sys::Date::now());
    let mut deadline: Option<f64> = None;
    let mut next_progress = js_sys::Date::now() + PROGRESS_EVERY_MS;
    while !l.is_closed() {
        for action in std::mem::take(&mut actions) {
            match action {
                Action::ArmIdleTimer { deadline_ms } => deadline = Some(deadline_ms),
                Action::Close(_) => {}
                Action::Continue { directive, .. } => {
                    deadline = None;
                    let turn = match (setup.next_turn)(directive) {
                        Ok(t) => t,
                        Err(e) => {
                            let message = js_sys::Reflect::get(&e, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default();
                            sink.emit(Chunk::Error(crate::core::error::AgentError::Validation { message }));
                            actions = l.on(Event::TurnEnded { failed: true }, js_sys::Date::now());
                            continue;
                        }
                    };
                    sink.shared.begin_turn(&turn.run_id);
                    let turn_abort = turn.abort.clone();
                    outer.on_abort(Box::new(move || {
                        turn_abort.abort(Some("the untilIdle stream was closed".into()));
                    }));
                    let fut = run(turn.cfg, &JsEnv, sink, &turn.host, &turn.approvals, &turn.abort);
                    let outcome = with_task_chunks(fut, &setup.subscription, sink, Some(&mut l)).await;
                    (turn.done)();
                    note_running(&mut l, &setup);
                    let event = if outer.is_aborted() { Event::Abort } else { Event::TurnEnded { failed: outcome.error.is_some() } };
                    actions = l.on(event, js_sys::Date::now());
                }
            }
        }
        if l.is_closed() || !actions.is_empty() {
            continue;
        }
        let progress_at = (!l.running().is_empty()).then_some(next_progress);
        let woke = wait(&setup.subscription, deadline, progress_at, outer).await;
        let now = js_sys::Date::now();
        actions = match woke {
            Woke::Aborted => l.on(Event::Abort, now),
            Woke::Timer => l.on(Event::Tick, now),
            Woke::Progress => {
                // Progress is the wrapper's own report: it does not count as activity.
                next_progress = now + PROGRESS_EVERY_MS;
                let payload = serde_json::json!({
                    "taskIds": l.running(), "runningCount": l.running().len(), "elapsedMs": (now - started).round(),
                });
                sink.emit(Chunk::Background { kind: "background-task-progress", payload });
                Vec::new()
            }
            Woke::Task(c) => {
                let finished = finished_of(&c);
                sink.emit(c);
                match finished {
                    Some(f) => l.on(Event::TaskEnded(f), now),
                    None => l.on(Event::Chunk, now),
                }
            }
        };
    }
    (setup.on_close)();
}

/// Waits for the next task chunk, the idle deadline, the next progress report, or the caller's
/// abort.
async fn wait(sub: &Subscription, deadline: Option<f64>, progress_at: Option<f64>, outer: &AbortFlag) -> Woke {
    let until = |at: f64| JsEnv.sleep((at - js_sys::Date::now()).max(0.0) as u64);
    let mut timer = deadline.map(until);
    let mut progress = progress_at.map(until);
    let mut next = std::pin::pin!(sub.next());
    let raced = outer
        .race(std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(c) = next.as_mut().poll(cx) {
                return std::task::Poll::Ready(Woke::Task(c));
            }
            if let Some(t) = timer.as_mut() {
                if t.as_mut().poll(cx).is_ready() {
                    return std::task::Poll::Ready(Woke::Timer);
                }
            }
            if let Some(p) = progress.as_mut() {
                if p.as_mut().poll(cx).is_ready() {
                    return std::task::Poll::Ready(Woke::Progress);
                }
            }
            std::task::Poll::Pending
        }))
        .await;
    raced.unwrap_or(Woke::Aborted)
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
