//! `untilIdle` (SPEC §9). Its decisions are a state machine with no clock and no I/O
//! (`IdleLoop`): the driver feeds it what happened (a turn ended, a task started or ended, a
//! chunk went out, time passed, the caller aborted) and does what it answers (run a continuation
//! turn with a batch of finished tasks, arm the idle timer, close the outer stream). The driver
//! (`drive`, below) waits through `Env`, so native tests run both with a fake clock; the bindings
//! only build the continuation turns.

use std::future::{pending, Future};
use std::pin::pin;
use std::rc::Rc;

use futures_util::future::{select, Either};

use super::abort::AbortFlag;
use super::background::{Manager, Scope, Subscription, TaskEvent, TaskEventKind, TaskStatus};
use super::chunk::Chunk;
use super::env::{Env, LocalFuture};
use super::error::AgentError;
use super::run::Sink;

/// How a background task ended.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskOutcome {
    Completed,
    Failed { message: String },
    Cancelled,
    TimedOut,
}

/// A finished task, as the continuation directive names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    pub task_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub outcome: TaskOutcome,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The streaming turn ended; `failed` when it ended with an error.
    TurnEnded { failed: bool },
    TaskStarted { task_id: String },
    TaskEnded(Finished),
    /// A task ended that another tab answers (SPEC §21.2): no longer waited for, not answered.
    TaskAnsweredElsewhere { task_id: String },
    /// A chunk went into the outer stream (restarts the idle timer between turns).
    Chunk,
    /// Time passed (the idle timer's deadline may have come).
    Tick,
    /// The caller aborted or cancelled the outer stream.
    Abort,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Run one continuation turn for these tasks, with `directive` added to its context.
    Continue { batch: Vec<Finished>, directive: String },
    /// Close the outer stream after `deadline_ms` unless something happens first.
    ArmIdleTimer { deadline_ms: f64 },
    Close(CloseReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Nothing runs, nothing is queued, no turn streams.
    Idle,
    /// `maxIdleMs` passed between turns while tasks still ran.
    IdleTimeout,
    /// A continuation turn failed (its `error` chunk is already out).
    TurnFailed,
    Aborted,
}

pub const DEFAULT_MAX_IDLE_MS: u64 = 5 * 60 * 1000;

/// The wrapper's state for one outer stream.
#[derive(Debug)]
pub struct IdleLoop {
    max_idle_ms: u64,
    turn_streaming: bool,
    running: Vec<String>,
    queued: Vec<Finished>,
    /// Tasks whose end was already taken, so an end delivered twice is processed once.
    ended: Vec<String>,
    deadline_ms: Option<f64>,
    closed: bool,
}

impl IdleLoop {
    /// A loop whose first turn is streaming.
    pub fn new(max_idle_ms: u64) -> Self {
        IdleLoop { max_idle_ms, turn_streaming: true, running: Vec::new(), queued: Vec::new(), ended: Vec::new(), deadline_ms: None, closed: false }
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The tasks still running.
    pub fn running(&self) -> &[String] {
        &self.running
    }

    /// Takes in what happened at `now_ms`; answers what to do, in order.
    pub fn on(&mut self, event: Event, now_ms: f64) -> Vec<Action> {
        if self.closed {
            return Vec::new();
        }
        match event {
            Event::Abort => return self.close(CloseReason::Aborted),
            Event::TaskStarted { task_id } => {
                if !self.running.contains(&task_id) && !self.ended.contains(&task_id) {
                    self.running.push(task_id);
                }
            }
            Event::TaskAnsweredElsewhere { task_id } => {
                if !self.ended.contains(&task_id) {
                    self.running.retain(|t| *t != task_id);
                    self.ended.push(task_id);
                }
            }
            Event::TaskEnded(finished) => {
                if self.ended.contains(&finished.task_id) {
                    return Vec::new();
                }
                self.ended.push(finished.task_id.clone());
                self.running.retain(|t| *t != finished.task_id);
                self.queued.push(finished);
            }
            Event::TurnEnded { failed } => {
                self.turn_streaming = false;
                if failed {
                    return self.close(CloseReason::TurnFailed);
                }
            }
            Event::Chunk => {}
            Event::Tick => {
                if let Some(deadline) = self.deadline_ms {
                    if !self.turn_streaming && now_ms >= deadline {
                        return self.close(CloseReason::IdleTimeout);
                    }
                }
                return Vec::new();
            }
        }
        self.decide(now_ms)
    }

    fn decide(&mut self, now_ms: f64) -> Vec<Action> {
        if self.turn_streaming {
            // The timer never runs during a turn: a slow model is not idle.
            self.deadline_ms = None;
            return Vec::new();
        }
        if !self.running.is_empty() {
            // Waiting on tasks: every event restarts the idle timer.
            let deadline_ms = now_ms + self.max_idle_ms as f64;
            self.deadline_ms = Some(deadline_ms);
            return vec![Action::ArmIdleTimer { deadline_ms }];
        }
        if self.queued.is_empty() {
            return self.close(CloseReason::Idle);
        }
        let batch = std::mem::take(&mut self.queued);
        self.turn_streaming = true;
        self.deadline_ms = None;
        let directive = continuation_directive(&batch);
        vec![Action::Continue { batch, directive }]
    }

    fn close(&mut self, reason: CloseReason) -> Vec<Action> {
        self.closed = true;
        self.deadline_ms = None;
        vec![Action::Close(reason)]
    }
}

/// The system message of a continuation turn: which tasks ended and how, that their results are
/// in the conversation now, and what not to do about them. Sent to the model, never stored.
pub fn continuation_directive(batch: &[Finished]) -> String {
    let mut lines = vec!["Background tasks you started earlier have finished. Their results are now in the conversation \
        as the results of those tool calls: use them to answer, and do not call those tools again to fetch them."
        .to_string()];
    let name = |f: &Finished| format!("{} (tool call {})", f.tool_name, f.tool_call_id);
    let completed: Vec<String> = batch.iter().filter(|f| f.outcome == TaskOutcome::Completed).map(name).collect();
    if !completed.is_empty() {
        lines.push(format!("Completed: {}.", completed.join(", ")));
    }
    for f in batch {
        match &f.outcome {
            TaskOutcome::Completed => {}
            TaskOutcome::Failed { message } => {
                lines.push(format!("Failed: {}: {message}. Do not retry it unless the user asks.", name(f)))
            }
            TaskOutcome::TimedOut => lines.push(format!("Failed: {} timed out. Do not retry it unless the user asks.", name(f))),
            TaskOutcome::Cancelled => lines.push(format!("Cancelled: {}. It has no result.", name(f))),
        }
    }
    lines.join("\n")
}

impl Finished {
    /// The task an event says ended, as the directive names it; `None` for other events.
    pub fn of(event: &TaskEvent) -> Option<Finished> {
        let TaskEventKind::Ended { status, error, .. } = &event.kind else { return None };
        let outcome = match status {
            TaskStatus::Completed => TaskOutcome::Completed,
            TaskStatus::Cancelled => TaskOutcome::Cancelled,
            TaskStatus::TimedOut => TaskOutcome::TimedOut,
            _ => TaskOutcome::Failed { message: error.clone().unwrap_or_default() },
        };
        Some(Finished { task_id: event.task_id.clone(), tool_call_id: event.tool_call_id.clone(), tool_name: event.tool_name.clone(), outcome })
    }
}

/// The background tasks an `untilIdle` stream follows: those of one agent, thread and resource.
pub struct IdleWatch {
    pub manager: Rc<Manager>,
    /// Subscribed before the first turn, so no task event is missed.
    pub subscription: Rc<Subscription>,
    pub scope: Scope,
    pub max_idle_ms: u64,
}

/// The continuation turns, which the host builds (they run the host's callbacks and tools).
pub trait Continuations {
    /// Starts one continuation turn with `directive` in its context; its future runs it to the
    /// end and says whether it failed. `Err` when the turn could not be built.
    fn start_turn(&self, directive: String) -> Result<LocalFuture<'_, bool>, AgentError>;
}

/// How often a waiting untilIdle stream reports the tasks it waits for.
const PROGRESS_EVERY_MS: f64 = 2_000.0;

/// Runs a turn while the task events go into the stream as chunks; with `idle`, the tasks that
/// end meanwhile are told to the loop (it answers them after the turn).
pub async fn with_task_chunks<F: Future>(turn: F, sub: &Subscription, sink: &dyn Sink, env: &dyn Env, mut idle: Option<&mut IdleLoop>) -> F::Output {
    let mut turn = pin!(turn);
    loop {
        // Events first: a task that ended before the turn's next chunk is shown before it.
        match select(pin!(sub.next()), turn.as_mut()).await {
            Either::Left((e, _)) => {
                if let (Some(l), Some(ended)) = (idle.as_deref_mut(), ended_event(&e)) {
                    l.on(ended, env.now_ms());
                }
                sink.emit(e.chunk());
            }
            Either::Right((out, _)) => return out,
        }
    }
}

/// What a task event that says a task ended means to the loop; `None` for other events.
fn ended_event(e: &TaskEvent) -> Option<Event> {
    let f = Finished::of(e)?;
    Some(match e.answered_elsewhere {
        true => Event::TaskAnsweredElsewhere { task_id: f.task_id },
        false => Event::TaskEnded(f),
    })
}

/// Tells the loop about the watched tasks that are still going (here, or in other tabs).
fn note_running(l: &mut IdleLoop, watch: &IdleWatch, env: &dyn Env) {
    let scope = &watch.scope;
    let thread = scope.thread_id.as_deref();
    for t in watch.manager.list(thread, None).into_iter().chain(watch.manager.foreign(thread)) {
        let mine = t.agent_id == scope.agent_id && t.resource_id == scope.resource_id;
        if mine && !t.status.is_terminal() {
            l.on(Event::TaskStarted { task_id: t.id }, env.now_ms());
        }
    }
}

/// After the first turn: continue once per batch of finished tasks, one turn at a time, until
/// nothing runs, nothing is queued and no turn streams — or the idle timer fires, the caller
/// aborts (`outer`), or a continuation fails. While it waits for tasks it reports them every
/// two seconds (`background-task-progress`, which is not activity).
pub async fn drive(watch: &IdleWatch, mut l: IdleLoop, env: &dyn Env, sink: &dyn Sink, outer: &AbortFlag, first_failed: bool, turns: &dyn Continuations) {
    if outer.is_aborted() {
        l.on(Event::Abort, env.now_ms());
    }
    note_running(&mut l, watch, env);
    let started = env.now_ms();
    let mut actions = l.on(Event::TurnEnded { failed: first_failed }, env.now_ms());
    let mut deadline: Option<f64> = None;
    let mut next_progress = env.now_ms() + PROGRESS_EVERY_MS;
    while !l.is_closed() {
        for action in std::mem::take(&mut actions) {
            match action {
                Action::ArmIdleTimer { deadline_ms } => deadline = Some(deadline_ms),
                Action::Close(_) => {}
                Action::Continue { directive, .. } => {
                    deadline = None;
                    let turn = match turns.start_turn(directive) {
                        Ok(t) => t,
                        Err(e) => {
                            sink.emit(Chunk::Error(e));
                            actions = l.on(Event::TurnEnded { failed: true }, env.now_ms());
                            continue;
                        }
                    };
                    let failed = with_task_chunks(turn, &watch.subscription, sink, env, Some(&mut l)).await;
                    note_running(&mut l, watch, env);
                    let event = if outer.is_aborted() { Event::Abort } else { Event::TurnEnded { failed } };
                    actions = l.on(event, env.now_ms());
                }
            }
        }
        if l.is_closed() || !actions.is_empty() {
            continue;
        }
        let progress_at = (!l.running().is_empty()).then_some(next_progress);
        let woke = wait(&watch.subscription, deadline, progress_at, env, outer).await;
        let now = env.now_ms();
        actions = match woke {
            Woke::Aborted => l.on(Event::Abort, now),
            Woke::Timer => l.on(Event::Tick, now),
            Woke::Progress => {
                next_progress = now + PROGRESS_EVERY_MS;
                let payload = serde_json::json!({
                    "taskIds": l.running(), "runningCount": l.running().len(), "elapsedMs": (now - started).round(),
                });
                sink.emit(Chunk::Background { kind: "background-task-progress", payload });
                Vec::new()
            }
            Woke::Task(e) => {
                let ended = ended_event(&e);
                sink.emit(e.chunk());
                l.on(ended.unwrap_or(Event::Chunk), now)
            }
        };
    }
}

/// What woke the idle wait.
enum Woke {
    Task(Box<TaskEvent>),
    Timer,
    /// Time for a `background-task-progress` chunk.
    Progress,
    Aborted,
}

/// Waits for the next task event, the idle deadline, the next progress report, or the caller's
/// abort.
async fn wait(sub: &Subscription, deadline: Option<f64>, progress_at: Option<f64>, env: &dyn Env, outer: &AbortFlag) -> Woke {
    let at = |when: Option<f64>| -> LocalFuture<'_, ()> {
        match when {
            Some(at) => env.sleep((at - env.now_ms()).max(0.0) as u64),
            None => Box::pin(pending()),
        }
    };
    let timers = select(at(deadline), at(progress_at));
    match outer.race(select(pin!(sub.next()), timers)).await {
        None => Woke::Aborted,
        Some(Either::Left((e, _))) => Woke::Task(Box::new(e)),
        Some(Either::Right((Either::Left(_), _))) => Woke::Timer,
        Some(Either::Right((Either::Right(_), _))) => Woke::Progress,
    }
}

#[cfg(test)]
#[path = "until_idle_tests.rs"]
mod tests;
