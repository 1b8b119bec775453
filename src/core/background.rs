//! Background tasks (SPEC §8): which tool calls run in the background, the manager that runs
//! them within its concurrency limits (queueing, refusing or falling back to the foreground when
//! full), their timeouts, retries and cancellation, and the lifecycle chunks it publishes to
//! listeners of an agent + thread + resource. Runtime-free: tasks are spawned and timed through
//! `TaskRuntime`, so native tests drive the manager with a fake clock.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};

use serde_json::{json, Value};

use super::abort::AbortFlag;
use super::chunk::Chunk;
use super::env::LocalFuture;
use super::memory::{iso_time, MessageQuery, Store};
use super::step::ToolCall;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backpressure {
    /// Wait for a free slot.
    Queue,
    /// Tell the model the task could not start.
    Reject,
    /// Run the call in the foreground instead.
    FallbackSync,
}

/// A tool's own `background: { enabled, timeoutMs, maxRetries }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolBackground {
    pub enabled: Option<bool>,
    pub timeout_ms: Option<u64>,
    pub max_retries: Option<u32>,
}

/// `backgroundTasks` of the container or the agent.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundConfig {
    pub enabled: bool,
    pub global_concurrency: usize,
    pub per_agent_concurrency: usize,
    pub backpressure: Backpressure,
    pub default_timeout_ms: u64,
    pub default_retries: u32,
    /// `tools: 'all'`.
    pub all_tools: bool,
    /// `tools: { name: boolean | { enabled, timeoutMs } }`: (name, enabled, timeout).
    pub tools: Vec<(String, bool, Option<u64>)>,
}

impl Default for BackgroundConfig {
    fn default() -> Self {
        BackgroundConfig {
            enabled: false,
            global_concurrency: 10,
            per_agent_concurrency: 5,
            backpressure: Backpressure::Queue,
            default_timeout_ms: 300_000,
            default_retries: 0,
            all_tools: false,
            tools: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    pub timeout_ms: u64,
    pub max_retries: u32,
}

impl BackgroundConfig {
    /// Whether a call of `tool` runs in the background, and within which limits. The tool's own
    /// `enabled: false` wins over the configuration; a timeout named for the tool in the
    /// configuration wins over the tool's own.
    pub fn limits_for(&self, tool: &str, own: Option<&ToolBackground>) -> Option<TaskLimits> {
        if !self.enabled {
            return None;
        }
        let listed = self.tools.iter().find(|(name, _, _)| name == tool);
        let own_enabled = own.and_then(|b| b.enabled);
        let eligible = match own_enabled {
            Some(false) => false,
            Some(true) => true,
            None => self.all_tools || listed.is_some_and(|(_, on, _)| *on),
        };
        eligible.then(|| TaskLimits {
            timeout_ms: listed.and_then(|(_, _, t)| *t).or(own.and_then(|b| b.timeout_ms)).unwrap_or(self.default_timeout_ms),
            max_retries: own.and_then(|b| b.max_retries).unwrap_or(self.default_retries),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
    TimedOut,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::TimedOut => "timed_out",
        }
    }

    pub fn is_terminal(self) -> bool {
        !matches!(self, TaskStatus::Pending | TaskStatus::Running)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    pub id: String,
    pub tool_name: String,
    pub tool_call_id: String,
    pub args: Value,
    pub agent_id: String,
    pub run_id: String,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    pub status: TaskStatus,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub attempts: u32,
}

impl TaskRecord {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id, "toolName": self.tool_name, "toolCallId": self.tool_call_id, "args": self.args,
            "agentId": self.agent_id, "runId": self.run_id, "threadId": self.thread_id, "resourceId": self.resource_id,
            "status": self.status.as_str(), "result": self.result, "error": self.error, "createdAt": self.created_at,
            "startedAt": self.started_at, "completedAt": self.completed_at, "attempts": self.attempts,
        })
    }
}

impl TaskRecord {
    /// Reads a task as a storage object returned it.
    pub fn from_json(v: &Value, what: &str) -> Result<TaskRecord, super::error::AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let bad = |m: &str| super::error::AgentError::storage(format!("{what} returned a task {m}"));
        let status = s("status").ok_or_else(|| bad("without a status"))?;
        let status = [TaskStatus::Pending, TaskStatus::Running, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled, TaskStatus::TimedOut]
            .into_iter()
            .find(|t| t.as_str() == status)
            .ok_or_else(|| bad(&format!("with an unknown status '{status}'")))?;
        Ok(TaskRecord {
            id: s("id").ok_or_else(|| bad("without a string id"))?,
            tool_name: s("toolName").unwrap_or_default(),
            tool_call_id: s("toolCallId").unwrap_or_default(),
            args: v.get("args").cloned().unwrap_or(Value::Null),
            agent_id: s("agentId").unwrap_or_default(),
            run_id: s("runId").unwrap_or_default(),
            thread_id: s("threadId"),
            resource_id: s("resourceId"),
            status,
            result: v.get("result").filter(|r| !r.is_null()).cloned(),
            error: s("error"),
            created_at: s("createdAt").unwrap_or_default(),
            started_at: s("startedAt"),
            completed_at: s("completedAt"),
            attempts: v.get("attempts").and_then(Value::as_u64).unwrap_or(0) as u32,
        })
    }
}

/// Which stored tasks to list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFilter {
    pub agent_id: Option<String>,
    pub thread_id: Option<String>,
    /// Any of these (all when empty).
    pub statuses: Vec<TaskStatus>,
}

impl TaskFilter {
    pub fn matches(&self, t: &TaskRecord) -> bool {
        self.agent_id.as_ref().is_none_or(|a| *a == t.agent_id)
            && self.thread_id.as_ref().is_none_or(|th| t.thread_id.as_ref() == Some(th))
            && (self.statuses.is_empty() || self.statuses.contains(&t.status))
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({});
        if let Some(a) = &self.agent_id {
            v["agentId"] = a.as_str().into();
        }
        if let Some(t) = &self.thread_id {
            v["threadId"] = t.as_str().into();
        }
        if !self.statuses.is_empty() {
            v["status"] = self.statuses.iter().map(|s| Value::from(s.as_str())).collect();
        }
        v
    }
}

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
    /// Which of `task_ids` another live page holds; where a runtime cannot tell, none.
    fn alive_elsewhere<'a>(&'a self, _task_ids: &'a [String]) -> LocalFuture<'a, Vec<String>> {
        Box::pin(async { Vec::new() })
    }
}

/// Runs a tool for a background task. `Err` is what it threw.
pub trait TaskRunner {
    fn execute(&self, task: TaskRecord, abort: AbortFlag, emit: Rc<dyn Fn(Value)>) -> LocalFuture<'static, Result<Value, String>>;
}

/// The conversation a task's result goes back into.
#[derive(Clone)]
pub struct MemoryTarget {
    pub store: Rc<dyn Store>,
    pub thread_id: String,
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

/// A listener's queue of chunks.
#[derive(Default)]
pub struct Subscription {
    scope: Option<Scope>,
    queue: RefCell<VecDeque<Chunk>>,
    waker: RefCell<Option<Waker>>,
}

impl Subscription {
    /// The next chunk for this listener.
    pub async fn next(&self) -> Chunk {
        poll_fn(|cx| match self.queue.borrow_mut().pop_front() {
            Some(c) => Poll::Ready(c),
            None => {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    pub fn try_next(&self) -> Option<Chunk> {
        self.queue.borrow_mut().pop_front()
    }
}

struct Entry {
    record: TaskRecord,
    dispatch: Option<Dispatch>,
    abort: AbortFlag,
}

#[derive(Default)]
struct State {
    tasks: Vec<Entry>,
    queue: VecDeque<String>,
    subscribers: Vec<Weak<Subscription>>,
}

/// Runs background tasks for one container (or one agent used alone).
pub struct Manager {
    pub config: BackgroundConfig,
    runtime: Rc<dyn TaskRuntime>,
    state: RefCell<State>,
}

/// The text the model gets at once for a call that went to the background.
pub fn placeholder(task_id: &str, tool_name: &str) -> Value {
    json!({
        "status": "running",
        "backgroundTaskId": task_id,
        "message": format!("Background task {task_id} started for {tool_name}. It keeps running after this reply; you will be told when it ends. Do not call {tool_name} again for it."),
    })
}

fn chunk(kind: &'static str, payload: Value) -> Chunk {
    Chunk::Background { kind, payload }
}

impl Manager {
    pub fn new(config: BackgroundConfig, runtime: Rc<dyn TaskRuntime>) -> Rc<Manager> {
        Rc::new(Manager { config, runtime, state: RefCell::new(State::default()) })
    }

    /// Listens to the chunks of tasks in `scope` from now on.
    pub fn subscribe(&self, scope: Scope) -> Rc<Subscription> {
        let sub = Rc::new(Subscription { scope: Some(scope), ..Default::default() });
        let mut st = self.state.borrow_mut();
        st.subscribers.retain(|w| w.strong_count() > 0);
        st.subscribers.push(Rc::downgrade(&sub));
        sub
    }

    fn publish(&self, task: &TaskRecord, c: Chunk) {
        let subs: Vec<Rc<Subscription>> = self.state.borrow().subscribers.iter().filter_map(Weak::upgrade).collect();
        for sub in subs {
            let Some(scope) = &sub.scope else { continue };
            if scope.agent_id == task.agent_id && scope.thread_id == task.thread_id && scope.resource_id == task.resource_id {
                sub.queue.borrow_mut().push_back(c.clone());
                if let Some(w) = sub.waker.borrow_mut().take() {
                    w.wake();
                }
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
        let r = &record;
        self.publish(
            r,
            chunk(
                "background-task-running",
                json!({ "taskId": r.id, "toolName": r.tool_name, "toolCallId": r.tool_call_id, "runId": r.run_id, "agentId": r.agent_id, "startedAt": now, "args": r.args }),
            ),
        );
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
                        let inner = json!({ "type": "tool-output", "runId": task.run_id, "from": "USER",
                            "payload": { "toolCallId": task.tool_call_id, "toolName": task.tool_name, "output": output } });
                        let payload = json!({ "taskId": task.id, "toolName": task.tool_name, "toolCallId": task.tool_call_id, "payload": inner });
                        me.publish(&task, chunk("background-task-output", payload));
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
        let base = json!({ "taskId": task.id, "toolName": task.tool_name, "toolCallId": task.tool_call_id, "completedAt": now });
        let c = match status {
            TaskStatus::Completed => {
                let mut p = base;
                p["result"] = result.unwrap_or(Value::Null);
                chunk("background-task-completed", p)
            }
            TaskStatus::Cancelled => chunk("background-task-cancelled", base),
            _ => {
                let mut p = base;
                p["error"] = json!({ "message": error.unwrap_or_default() });
                chunk("background-task-failed", p)
            }
        };
        self.publish(task, c);
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
    pub async fn recover(&self, store: Rc<dyn Store>, agent_id: &str) -> Result<usize, super::error::AgentError> {
        let filter = TaskFilter { agent_id: Some(agent_id.to_string()), thread_id: None, statuses: vec![TaskStatus::Pending, TaskStatus::Running] };
        let stale = store.list_tasks(&filter).await?;
        let ids: Vec<String> = stale.iter().map(|t| t.id.clone()).collect();
        let alive = self.runtime.alive_elsewhere(&ids).await;
        let mut n = 0;
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
            n += 1;
        }
        Ok(n)
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
    let (mut run, mut timeout) = (run, timeout);
    poll_fn(|cx| {
        if let Poll::Ready(v) = run.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if timeout.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// Puts a task's real result where its placeholder is in the thread's stored messages.
pub async fn replace_placeholder(m: &MemoryTarget, tool_call_id: &str, result: Value, is_error: bool) -> Result<bool, super::error::AgentError> {
    let q = MessageQuery { thread_id: m.thread_id.clone(), last: Some(100), before: None };
    let mut msgs = m.store.list_messages(&q).await?;
    for msg in msgs.iter_mut().rev() {
        let Some(part) = msg.parts.iter_mut().find(|p| p["toolInvocation"]["toolCallId"] == tool_call_id) else { continue };
        let inv = &mut part["toolInvocation"];
        inv["state"] = if is_error { "output-error".into() } else { "result".into() };
        inv["result"] = result;
        if is_error {
            inv["isError"] = Value::Bool(true);
        } else if let Some(o) = inv.as_object_mut() {
            o.remove("isError");
        }
        m.store.save_messages(std::slice::from_ref(msg)).await?;
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
#[path = "background_tests.rs"]
mod tests;

/// Reads `backgroundTasks` (`{ enabled, globalConcurrency, perAgentConcurrency, backpressure,
/// defaultTimeoutMs, defaultRetries, tools }`) with errors that name the field.
pub fn parse_background_config(v: &Value, field: &str) -> Result<BackgroundConfig, super::error::AgentError> {
    use super::error::AgentError;
    use super::input::{join, kind, opt_bool, opt_str, opt_u64};
    let mut c = BackgroundConfig::default();
    if v.is_null() {
        return Ok(c);
    }
    if !v.is_object() {
        return Err(AgentError::invalid(field, format!("expected an object like {{ enabled: true }}, got {}", kind(v))));
    }
    c.enabled = opt_bool(v, "enabled", field)?.unwrap_or(true);
    let positive = |key: &str, default: usize| -> Result<usize, AgentError> {
        match opt_u64(v, key, field)? {
            Some(0) => Err(AgentError::invalid(join(field, key), "expected an integer of at least 1, got 0")),
            Some(n) => Ok(n.min(1000) as usize),
            None => Ok(default),
        }
    };
    c.global_concurrency = positive("globalConcurrency", c.global_concurrency)?;
    c.per_agent_concurrency = positive("perAgentConcurrency", c.per_agent_concurrency)?;
    c.backpressure = match opt_str(v, "backpressure", field)? {
        None | Some("queue") => Backpressure::Queue,
        Some("reject") => Backpressure::Reject,
        Some("fallback-sync") => Backpressure::FallbackSync,
        Some(other) => {
            return Err(AgentError::invalid(join(field, "backpressure"), format!("expected 'queue', 'reject' or 'fallback-sync', got '{other}'")))
        }
    };
    c.default_timeout_ms = opt_u64(v, "defaultTimeoutMs", field)?.unwrap_or(c.default_timeout_ms);
    c.default_retries = opt_u64(v, "defaultRetries", field)?.unwrap_or(0).min(100) as u32;
    match v.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "all" => c.all_tools = true,
        Some(Value::Object(map)) => {
            for (name, setting) in map {
                let path = join(&join(field, "tools"), name.as_str());
                let entry = match setting {
                    Value::Bool(b) => (name.clone(), *b, None),
                    Value::Object(_) => (name.clone(), opt_bool(setting, "enabled", &path)?.unwrap_or(true), opt_u64(setting, "timeoutMs", &path)?),
                    other => return Err(AgentError::invalid(path, format!("expected true, false or {{ enabled, timeoutMs }}, got {}", kind(other)))),
                };
                c.tools.push(entry);
            }
        }
        Some(other) => return Err(AgentError::invalid(join(field, "tools"), format!("expected 'all' or an object of tool names, got {}", kind(other)))),
    }
    Ok(c)
}

/// Reads a tool's own `background: { enabled, timeoutMs, maxRetries }`.
pub fn parse_tool_background(v: &Value, field: &str) -> Result<Option<ToolBackground>, super::error::AgentError> {
    use super::input::{kind, opt_bool, opt_u64};
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(ToolBackground { enabled: Some(*b), ..Default::default() })),
        Value::Object(_) => Ok(Some(ToolBackground {
            enabled: Some(opt_bool(v, "enabled", field)?.unwrap_or(true)),
            timeout_ms: opt_u64(v, "timeoutMs", field)?,
            max_retries: opt_u64(v, "maxRetries", field)?.map(|n| n.min(100) as u32),
        })),
        other => Err(super::error::AgentError::invalid(field, format!("expected {{ enabled, timeoutMs, maxRetries }}, got {}", kind(other)))),
    }
}
