//! The manager: runs background tasks within their concurrency limits (queueing, refusing or
//! falling back to the foreground when full), with timeouts, retries and cancellation, and
//! publishes their events to the listeners of an agent + thread + resource.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures_util::future::{select, Either};
use futures_util::StreamExt;

use serde_json::{json, Value};

use super::config::{Backpressure, BackgroundConfig, TaskLimits};
use super::placeholder::{replace_placeholder, MemoryTarget};
use super::task::{chunk, TaskEvent, TaskEventKind, TaskFilter, TaskRecord, TaskStatus};
use crate::core::abort::AbortFlag;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::memory::{iso_time, Store};
use crate::core::step::ToolCall;

/// What a background task needs from its runtime.
pub trait TaskRuntime {
    fn spawn(&self, fut: LocalFuture<'static, ()>);
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()>;
    fn now_ms(&self) -> f64;
    fn new_id(&self) -> String;
    /// Marks `task_id` as alive in this page or isolate until the returned release runs, so
    /// another page's start-up does not take it for interrupted (a browser's Web Locks).
    fn hold(&self, _task_id: &str) -> Box<dyn FnOnce()> {
        Box::new(|| {})
    }
    /// Claims the answer to `task_id`'s end for this page (SPEC §21.2: one continuation per
    /// task across the tabs of a database); `false` when another page claimed it first.
    fn claim(&self, _task_id: &str) -> LocalFuture<'static, bool> {
        Box::pin(async { true })
    }
    /// Which of `task_ids` another live page holds; where a runtime cannot tell, none.
    fn alive_elsewhere<'a>(&'a self, _task_ids: &'a [String]) -> LocalFuture<'a, Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

/// Runs a tool for a background task. `Err` is what it threw.
pub trait TaskRunner {
    fn execute(&self, task: TaskRecord, abort: AbortFlag, emit: Rc<dyn Fn(Value)>) -> LocalFuture<'static, Result<Value, String>>;
}

/// A call handed to the manager.
pub struct Dispatch {
    pub call: ToolCall,
    pub agent_id: String,
    pub run_id: String,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    pub limits: TaskLimits,
    pub runner: Rc<dyn TaskRunner>,
    pub memory: Option<MemoryTarget>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Dispatched {
    /// Started now, or queued for a free slot; the model gets a placeholder either way.
    Accepted { task_id: String },
    /// The manager is full and refuses (`backpressure: 'reject'`).
    Rejected { message: String },
    /// Full, and the call should run in the foreground (`'fallback-sync'`).
    RunInForeground,
}

/// Who hears a task's chunks: the listeners of that agent + thread + resource.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    pub agent_id: String,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
}

impl Scope {
    fn covers(&self, task: &TaskRecord) -> bool {
        self.agent_id == task.agent_id && self.thread_id == task.thread_id && self.resource_id == task.resource_id
    }
}

/// A listener's end of a channel of task events; dropping it ends the subscription.
pub struct Subscription {
    events: RefCell<UnboundedReceiver<TaskEvent>>,
}

impl Subscription {
    /// The next event for this listener.
    pub async fn next(&self) -> TaskEvent {
        // The receiver is borrowed only while polled, never across an await. The manager never
        // closes the channel before the listener drops it, so `None` does not come.
        poll_fn(|cx| match self.events.borrow_mut().poll_next_unpin(cx) {
            Poll::Ready(Some(e)) => Poll::Ready(e),
            _ => Poll::Pending,
        })
        .await
    }

    pub fn try_next(&self) -> Option<TaskEvent> {
        self.events.borrow_mut().try_recv().ok()
    }
}

pub(super) struct Entry {
    pub(super) record: TaskRecord,
    dispatch: Option<Dispatch>,
    abort: AbortFlag,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) tasks: Vec<Entry>,
    queue: VecDeque<String>,
    /// Who listens to which tasks.
    subscribers: Vec<(Scope, UnboundedSender<TaskEvent>)>,
    /// Tasks of this manager's agents that other pages run (SPEC §21.2), still going.
    pub(super) foreign: Vec<TaskRecord>,
}

/// Runs background tasks for one container (or one agent used alone).
pub struct Manager {
    pub config: BackgroundConfig,
    pub(super) runtime: Rc<dyn TaskRuntime>,
    pub(super) state: RefCell<State>,
}

impl Manager {
    pub fn new(config: BackgroundConfig, runtime: Rc<dyn TaskRuntime>) -> Rc<Manager> {
        Rc::new(Manager { config, runtime, state: RefCell::new(State::default()) })
    }

    /// Listens to the chunks of tasks in `scope` from now on.
    pub fn subscribe(&self, scope: Scope) -> Rc<Subscription> {
        let (tx, rx) = unbounded();
        let mut st = self.state.borrow_mut();
        st.subscribers.retain(|(_, tx)| !tx.is_closed());
        st.subscribers.push((scope, tx));
        Rc::new(Subscription { events: RefCell::new(rx) })
    }

    fn publish(&self, task: &TaskRecord, kind: TaskEventKind) {
        self.publish_event(task, TaskEvent::of(task, kind));
    }

    /// Whether a listener here (an `untilIdle` stream) follows the task's agent, thread and resource.
    pub fn has_listener(&self, task: &TaskRecord) -> bool {
        self.state.borrow().subscribers.iter().any(|(scope, tx)| !tx.is_closed() && scope.covers(task))
    }

    pub(super) fn publish_event(&self, task: &TaskRecord, event: TaskEvent) {
        for (scope, tx) in &self.state.borrow().subscribers {
            if scope.covers(task) {
                // Sending only queues and wakes the listener's task: no user code runs here.
                let _ = tx.unbounded_send(event.clone());
            }
        }
    }

    fn running_counts(&self, agent_id: &str) -> (usize, usize) {
        let st = self.state.borrow();
        let running = st.tasks.iter().filter(|e| e.record.status == TaskStatus::Running);
        let (mut all, mut agent) = (0, 0);
        for e in running {
            all += 1;
            if e.record.agent_id == agent_id {
                agent += 1;
            }
        }
        (all, agent)
    }

    fn has_room(&self, agent_id: &str) -> bool {
        let (all, agent) = self.running_counts(agent_id);
        all < self.config.global_concurrency.max(1) && agent < self.config.per_agent_concurrency.max(1)
    }

    /// Takes a call: starts it, queues it, refuses it, or sends it back to the foreground.
    pub fn dispatch(self: &Rc<Self>, d: Dispatch) -> Dispatched {
        let room = self.has_room(&d.agent_id);
        if !room {
            match self.config.backpressure {
                Backpressure::Reject => {
                    return Dispatched::Rejected {
                        message: format!(
                            "The background task for {} could not start: {} tasks are already running. Tell the user to try again later.",
                            d.call.tool_name,
                            self.running_counts(&d.agent_id).0
                        ),
                    }
                }
                Backpressure::FallbackSync => return Dispatched::RunInForeground,
                Backpressure::Queue => {}
            }
        }
        let id = format!("task_{}", self.runtime.new_id());
        let record = TaskRecord {
            id: id.clone(),
            tool_name: d.call.tool_name.clone(),
            tool_call_id: d.call.tool_call_id.clone(),
            args: d.call.args.clone(),
            agent_id: d.agent_id.clone(),
            run_id: d.run_id.clone(),
            thread_id: d.thread_id.clone(),
            resource_id: d.resource_id.clone(),
            status: TaskStatus::Pending,
            result: None,
            error: None,
            created_at: iso_time(self.runtime.now_ms()),
            started_at: None,
            completed_at: None,
            attempts: 0,
        };
        self.persist(&record, None, d.memory.as_ref());
        self.state.borrow_mut().tasks.push(Entry { record, dispatch: Some(d), abort: AbortFlag::new() });
        if room {
            self.start(&id);
        } else {
            self.state.borrow_mut().queue.push_back(id.clone());
        }
        Dispatched::Accepted { task_id: id }
    }

    /// The chunk that tells the stream a task started (emitted by the loop, in the run).
    pub fn started_chunk(task_id: &str, call: &ToolCall) -> Chunk {
        chunk("background-task-started", json!({ "taskId": task_id, "toolName": call.tool_name, "toolCallId": call.tool_call_id }))
    }

    fn start(self: &Rc<Self>, id: &str) {
        let now = iso_time(self.runtime.now_ms());
        let (record, dispatch, abort) = {
            let mut st = self.state.borrow_mut();
            let Some(e) = st.tasks.iter_mut().find(|e| e.record.id == id) else { return };
            e.record.status = TaskStatus::Running;
            e.record.started_at = Some(now.clone());
            let Some(d) = e.dispatch.take() else { return };
            (e.record.clone(), d, e.abort.clone())
        };
        self.persist(&record, Some(TaskStatus::Pending), dispatch.memory.as_ref());
        let kind = TaskEventKind::Running { run_id: record.run_id.clone(), agent_id: record.agent_id.clone(), started_at: now, args: record.args.clone() };
        self.publish(&record, kind);
        let me = self.clone();
        let release = self.runtime.hold(&record.id);
        self.runtime.spawn(Box::pin(async move {
            me.drive(record, dispatch, abort).await;
            release();
        }));
    }

    /// Runs a task to its end: attempts up to `1 + max_retries`, each raced with the timeout and
    /// with cancellation; then the result goes into memory and the terminal chunk out.
    async fn drive(self: Rc<Self>, record: TaskRecord, d: Dispatch, cancel: AbortFlag) {
        let mut outcome: Result<Value, (TaskStatus, String)> = Err((TaskStatus::Failed, "did not run".into()));
        for attempt in 0..=d.limits.max_retries {
            self.update(&record.id, |r| r.attempts = attempt + 1);
            let attempt_abort = AbortFlag::new();
            let emit: Rc<dyn Fn(Value)> = {
                let (me, task) = (Rc::downgrade(&self), record.clone());
                Rc::new(move |output: Value| {
                    if let Some(me) = me.upgrade() {
                        me.publish(&task, TaskEventKind::Output { run_id: task.run_id.clone(), output });
                    }
                })
            };
            let run = d.runner.execute(record.clone(), attempt_abort.clone(), emit);
            let timeout = self.runtime.sleep(d.limits.timeout_ms);
            let raced = cancel.race(first_of(run, timeout)).await;
            outcome = match raced {
                None => {
                    attempt_abort.abort(Some("the task was cancelled".into()));
                    Err((TaskStatus::Cancelled, "cancelled".into()))
                }
                Some(None) => {
                    attempt_abort.abort(Some("the task timed out".into()));
                    Err((TaskStatus::TimedOut, format!("timed out after {} ms", d.limits.timeout_ms)))
                }
                Some(Some(Ok(v))) => Ok(v),
                Some(Some(Err(message))) => Err((TaskStatus::Failed, message)),
            };
            if !matches!(outcome, Err((TaskStatus::Failed | TaskStatus::TimedOut, _))) {
                break;
            }
        }
        self.finish(&record, d.memory, outcome).await;
    }

    async fn finish(self: &Rc<Self>, task: &TaskRecord, memory: Option<MemoryTarget>, outcome: Result<Value, (TaskStatus, String)>) {
        let now = iso_time(self.runtime.now_ms());
        let (status, result, error) = match outcome {
            Ok(v) => (TaskStatus::Completed, Some(v), None),
            Err((status, message)) => (status, None, Some(message)),
        };
        self.update(&task.id, |r| {
            r.status = status;
            r.result = result.clone();
            r.error = error.clone();
            r.completed_at = Some(now.clone());
        });
        // The slot is free: the next queued task starts while this one reports.
        self.start_queued();
        // Claimed before anything is written, so a tab that hears of the end never wins it
        // from a live one.
        // Only claimed when a stream here would answer it, so a tab with no such stream leaves
        // the answer to one that has.
        let answered_elsewhere = self.has_listener(task) && !self.runtime.claim(&task.id).await;
        let ended = self.state.borrow().tasks.iter().find(|e| e.record.id == task.id).map(|e| e.record.clone());
        if let (Some(m), Some(record)) = (&memory, ended) {
            let _ = m.store.save_task(&record, Some(TaskStatus::Running)).await;
        }
        if let Some(m) = memory {
            let (value, is_error) = match (&result, &error) {
                (Some(v), _) => (v.clone(), false),
                (None, Some(e)) => (Value::String(format!("The background task {} {}: {e}", task.id, status_words(status))), true),
                _ => (Value::Null, true),
            };
            // A failed write leaves the placeholder; the terminal chunk still goes out.
            let _ = replace_placeholder(&m, &task.tool_call_id, value, is_error).await;
        }
        let mut event = TaskEvent::of(task, TaskEventKind::Ended { status, completed_at: now, result, error });
        event.answered_elsewhere = answered_elsewhere;
        self.publish_event(task, event);
    }

    /// Writes the task to the conversation's storage, in the background of the caller; a
    /// failed write loses nothing the run needs (the manager keeps the task in memory).
    fn persist(&self, record: &TaskRecord, previous: Option<TaskStatus>, memory: Option<&MemoryTarget>) {
        let Some(m) = memory else { return };
        let (store, record) = (m.store.clone(), record.clone());
        self.runtime.spawn(Box::pin(async move {
            let _ = store.save_task(&record, previous).await;
        }));
    }

    /// Marks the tasks of `agent_id` that storage still shows pending or running — left so by a
    /// page or isolate that stopped — as failed ("interrupted"), and puts that failure where
    /// their placeholders are, so no conversation waits for them. Returns how many there were.
    pub async fn recover(&self, store: Rc<dyn Store>, agent_id: &str) -> Result<usize, crate::core::error::AgentError> {
        self.recover_tasks(store, agent_id).await.map(|t| t.len())
    }

    /// [`Manager::recover`], answering the tasks it marked failed.
    pub async fn recover_tasks(&self, store: Rc<dyn Store>, agent_id: &str) -> Result<Vec<TaskRecord>, crate::core::error::AgentError> {
        let filter = TaskFilter { agent_id: Some(agent_id.to_string()), thread_id: None, statuses: vec![TaskStatus::Pending, TaskStatus::Running] };
        let stale = store.list_tasks(&filter).await?;
        let ids: Vec<String> = stale.iter().map(|t| t.id.clone()).collect();
        let alive = self.runtime.alive_elsewhere(&ids).await;
        let mut recovered = Vec::new();
        for mut t in stale {
            if alive.contains(&t.id) || self.state.borrow().tasks.iter().any(|e| e.record.id == t.id) {
                continue;
            }
            let previous = t.status;
            t.status = TaskStatus::Failed;
            t.error = Some("interrupted: the page or worker running it stopped".into());
            t.completed_at = Some(iso_time(self.runtime.now_ms()));
            store.save_task(&t, Some(previous)).await?;
            if let Some(thread) = &t.thread_id {
                let m = MemoryTarget { store: store.clone(), thread_id: thread.clone() };
                let message = format!("The background task {} was interrupted before it finished (the page or worker running it stopped).", t.id);
                replace_placeholder(&m, &t.tool_call_id, Value::String(message), true).await?;
            }
            recovered.push(t);
        }
        Ok(recovered)
    }

    fn start_queued(self: &Rc<Self>) {
        loop {
            let next = {
                let st = self.state.borrow();
                st.queue.iter().position(|id| {
                    st.tasks.iter().find(|e| &e.record.id == id).is_some_and(|e| self.has_room(&e.record.agent_id))
                })
            };
            let Some(pos) = next else { return };
            let id = self.state.borrow_mut().queue.remove(pos);
            if let Some(id) = id {
                self.start(&id);
            }
        }
    }

    fn update(&self, id: &str, f: impl FnOnce(&mut TaskRecord)) {
        if let Some(e) = self.state.borrow_mut().tasks.iter_mut().find(|e| e.record.id == id) {
            f(&mut e.record);
        }
    }

    /// Cancels a pending or running task. Returns whether it was still going.
    pub fn cancel(self: &Rc<Self>, task_id: &str) -> bool {
        let found = {
            let st = self.state.borrow();
            st.tasks.iter().find(|e| e.record.id == task_id).map(|e| (e.record.clone(), e.abort.clone()))
        };
        let Some((record, abort)) = found else { return false };
        match record.status {
            TaskStatus::Running => abort.abort(Some("cancelled".into())),
            TaskStatus::Pending => {
                let memory = {
                    let mut st = self.state.borrow_mut();
                    st.queue.retain(|q| q != task_id);
                    st.tasks.iter_mut().find(|e| e.record.id == task_id).and_then(|e| e.dispatch.take()).and_then(|d| d.memory)
                };
                let me = self.clone();
                self.runtime.spawn(Box::pin(async move {
                    me.finish(&record, memory, Err((TaskStatus::Cancelled, "cancelled".into()))).await;
                }));
                true
            }
            _ => false,
        }
    }

    /// Tasks, optionally of one thread and in one status, oldest first.
    pub fn list(&self, thread_id: Option<&str>, status: Option<TaskStatus>) -> Vec<TaskRecord> {
        self.state
            .borrow()
            .tasks
            .iter()
            .map(|e| &e.record)
            .filter(|r| thread_id.is_none_or(|t| r.thread_id.as_deref() == Some(t)))
            .filter(|r| status.is_none_or(|s| r.status == s))
            .cloned()
            .collect()
    }

    /// The real result of the task of `tool_call_id`, once it ended: what the stored message
    /// should hold instead of the placeholder.
    pub fn result_of(&self, tool_call_id: &str) -> Option<(Value, bool)> {
        let st = self.state.borrow();
        let r = &st.tasks.iter().find(|e| e.record.tool_call_id == tool_call_id)?.record;
        if !r.status.is_terminal() {
            return None;
        }
        Some(match (&r.result, &r.error) {
            (Some(v), _) => (v.clone(), false),
            (None, e) => (Value::String(format!("The background task {} {}: {}", r.id, status_words(r.status), e.clone().unwrap_or_default())), true),
        })
    }
}

fn status_words(s: TaskStatus) -> &'static str {
    match s {
        TaskStatus::Cancelled => "was cancelled",
        TaskStatus::TimedOut => "timed out",
        _ => "failed",
    }
}

/// `Some(result)` when `run` finishes first, `None` when `timeout` does.
async fn first_of(run: LocalFuture<'static, Result<Value, String>>, timeout: LocalFuture<'static, ()>) -> Option<Result<Value, String>> {
    match select(run, timeout).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}
