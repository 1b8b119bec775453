//! The background task manager with a fake clock and a hand-driven executor: eligibility,
//! lifecycle chunks, concurrency and backpressure, timeouts, retries, cancellation, listeners,
//! and results put back into memory.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde_json::{json, Value};

use super::*;
use crate::core::abort::AbortFlag;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::step::ToolCall;
use crate::core::memory::{InMemoryStore, MessageQuery, Store, StoredMessage, Thread};

/// A clock that moves only when the test says so, and an executor polled by hand.
#[derive(Default)]
struct FakeRt {
    now: Cell<f64>,
    timers: RefCell<Vec<(f64, Rc<Cell<bool>>)>>,
    spawned: RefCell<Vec<LocalFuture<'static, ()>>>,
    ids: Cell<u32>,
    /// Another page claims every task's end (SPEC §21.2).
    claimed_elsewhere: Cell<bool>,
}

impl TaskRuntime for FakeRt {
    fn spawn(&self, fut: LocalFuture<'static, ()>) {
        self.spawned.borrow_mut().push(fut);
    }
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        let fired = Rc::new(Cell::new(false));
        self.timers.borrow_mut().push((self.now.get() + ms as f64, fired.clone()));
        Box::pin(std::future::poll_fn(move |_| if fired.get() { Poll::Ready(()) } else { Poll::Pending }))
    }
    fn now_ms(&self) -> f64 {
        self.now.get()
    }
    fn new_id(&self) -> String {
        self.ids.set(self.ids.get() + 1);
        self.ids.get().to_string()
    }
    fn claim(&self, _task_id: &str) -> LocalFuture<'static, bool> {
        let mine = !self.claimed_elsewhere.get();
        Box::pin(async move { mine })
    }
}

impl FakeRt {
    /// Polls every spawned future until none makes progress.
    fn settle(&self) {
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..50 {
            let mut futs: Vec<LocalFuture<'static, ()>> = std::mem::take(&mut *self.spawned.borrow_mut());
            futs.retain_mut(|f| f.as_mut().poll(&mut cx).is_pending());
            self.spawned.borrow_mut().extend(futs);
        }
    }

    /// Moves the clock to `t`, firing the timers due, and settles.
    fn advance_to(&self, t: f64) {
        self.now.set(t);
        for (at, fired) in self.timers.borrow().iter() {
            if *at <= t {
                fired.set(true);
            }
        }
        self.settle();
    }
}

/// A tool that ends after `ms` of fake time with `{ done: args }`, or fails when args say so,
/// recording how many attempts ran and whether its abort flag was set.
struct SlowTool {
    rt: Rc<FakeRt>,
    ms: u64,
    fail_first: Cell<u32>,
    attempts: Cell<u32>,
    aborted: Rc<Cell<bool>>,
    write: bool,
}

impl TaskRunner for SlowTool {
    fn execute(&self, task: TaskRecord, abort: AbortFlag, emit: Rc<dyn Fn(Value)>) -> LocalFuture<'static, Result<Value, String>> {
        self.attempts.set(self.attempts.get() + 1);
        let fail = self.fail_first.get() > 0;
        if fail {
            self.fail_first.set(self.fail_first.get() - 1);
        }
        let sleep = self.rt.sleep(self.ms);
        let aborted = self.aborted.clone();
        let write = self.write;
        let flag = abort.clone();
        abort.on_abort(Box::new(move || aborted.set(true)));
        Box::pin(async move {
            if write {
                emit(json!({ "progress": 50 }));
            }
            if flag.race(sleep).await.is_none() {
                return Err("aborted".into());
            }
            if fail {
                Err("the source was unreachable".into())
            } else {
                Ok(json!({ "done": task.args }))
            }
        })
    }
}

fn tool(rt: &Rc<FakeRt>, ms: u64) -> Rc<SlowTool> {
    Rc::new(SlowTool { rt: rt.clone(), ms, fail_first: Cell::new(0), attempts: Cell::new(0), aborted: Rc::new(Cell::new(false)), write: false })
}

fn config() -> BackgroundConfig {
    BackgroundConfig { enabled: true, ..Default::default() }
}

fn call(id: &str) -> ToolCall {
    ToolCall { tool_call_id: id.into(), tool_name: "research".into(), args: json!({ "q": id }) }
}

fn dispatch(m: &Rc<Manager>, id: &str, agent: &str, runner: Rc<SlowTool>, limits: TaskLimits) -> Dispatched {
    m.dispatch(Dispatch {
        call: call(id),
        agent_id: agent.into(),
        run_id: "run1".into(),
        thread_id: Some("t1".into()),
        resource_id: Some("u1".into()),
        limits,
        runner,
        memory: None,
    })
}

const LIMITS: TaskLimits = TaskLimits { timeout_ms: 10_000, max_retries: 0 };

fn kinds(sub: &Subscription) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(c) = sub.try_next() {
        out.push(c.chunk().type_name().to_string());
    }
    out
}

fn scope(agent: &str) -> Scope {
    Scope { agent_id: agent.into(), thread_id: Some("t1".into()), resource_id: Some("u1".into()) }
}

#[test]
fn which_calls_run_in_the_background() {
    let mut c = config();
    assert_eq!(c.limits_for("x", None), None, "only tools that are chosen");
    assert_eq!(c.limits_for("x", Some(&ToolBackground { enabled: Some(true), timeout_ms: Some(5), max_retries: Some(2) })), Some(TaskLimits { timeout_ms: 5, max_retries: 2 }));
    c.tools = vec![("research".into(), true, Some(60_000)), ("off".into(), false, None)];
    assert_eq!(c.limits_for("research", Some(&ToolBackground { enabled: None, timeout_ms: Some(5), max_retries: None })), Some(TaskLimits { timeout_ms: 60_000, max_retries: 0 }));
    assert_eq!(c.limits_for("off", None), None);
    assert_eq!(c.limits_for("research", Some(&ToolBackground { enabled: Some(false), ..Default::default() })), None, "the tool's own 'no' wins");
    c.all_tools = true;
    assert_eq!(c.limits_for("anything", None), Some(TaskLimits { timeout_ms: 300_000, max_retries: 0 }));
    c.enabled = false;
    assert_eq!(c.limits_for("anything", None), None);
}

#[test]
fn a_task_runs_and_its_listeners_hear_each_step() {
    let rt = Rc::new(FakeRt::default());
    let m = Manager::new(config(), rt.clone());
    let sub = m.subscribe(scope("a"));
    let other = m.subscribe(Scope { thread_id: Some("t2".into()), ..scope("a") });
    let t = Rc::new(SlowTool { write: true, ..Rc::try_unwrap(tool(&rt, 1000)).ok().unwrap() });
    let Dispatched::Accepted { task_id } = dispatch(&m, "c1", "a", t.clone(), LIMITS) else { panic!() };
    rt.settle();
    assert_eq!(m.list(None, Some(TaskStatus::Running)).len(), 1);
    rt.advance_to(1000.0);
    assert_eq!(kinds(&sub), ["background-task-running", "background-task-output", "background-task-completed"]);
    assert!(kinds(&other).is_empty(), "another thread's listener hears nothing");
    let done = &m.list(Some("t1"), None)[0];
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result, Some(json!({ "done": { "q": "c1" } })));
    assert_eq!(m.result_of("c1"), Some((json!({ "done": { "q": "c1" } }), false)));
    assert!(task_id.starts_with("task_"));
}

#[test]
fn concurrency_limits_queue_tasks_until_a_slot_frees() {
    let rt = Rc::new(FakeRt::default());
    let m = Manager::new(BackgroundConfig { global_concurrency: 2, per_agent_concurrency: 2, ..config() }, rt.clone());
    for (id, ms) in [("c1", 1000), ("c2", 5000), ("c3", 1000)] {
        assert!(matches!(dispatch(&m, id, "a", tool(&rt, ms), LIMITS), Dispatched::Accepted { .. }));
    }
    rt.settle();
    assert_eq!(m.list(None, Some(TaskStatus::Running)).len(), 2);
    assert_eq!(m.list(None, Some(TaskStatus::Pending)).len(), 1);
    rt.advance_to(1000.0);
    assert_eq!(m.list(None, Some(TaskStatus::Running)).iter().map(|t| t.tool_call_id.as_str()).collect::<Vec<_>>(), ["c2", "c3"], "c3 started when c1 ended");
    rt.advance_to(2000.0);
    rt.advance_to(5000.0);
    assert_eq!(m.list(None, Some(TaskStatus::Completed)).len(), 3);

    // Per agent: agent a is full at 1, agent b still starts.
    let m = Manager::new(BackgroundConfig { global_concurrency: 10, per_agent_concurrency: 1, ..config() }, rt.clone());
    dispatch(&m, "a1", "a", tool(&rt, 1000), LIMITS);
    dispatch(&m, "a2", "a", tool(&rt, 1000), LIMITS);
    dispatch(&m, "b1", "b", tool(&rt, 1000), LIMITS);
    assert_eq!(m.list(None, Some(TaskStatus::Running)).iter().map(|t| t.tool_call_id.as_str()).collect::<Vec<_>>(), ["a1", "b1"]);
}

#[test]
fn backpressure_reject_and_fallback() {
    let rt = Rc::new(FakeRt::default());
    let m = Manager::new(BackgroundConfig { global_concurrency: 1, backpressure: Backpressure::Reject, ..config() }, rt.clone());
    assert!(matches!(dispatch(&m, "c1", "a", tool(&rt, 1000), LIMITS), Dispatched::Accepted { .. }));
    let Dispatched::Rejected { message } = dispatch(&m, "c2", "a", tool(&rt, 1000), LIMITS) else { panic!() };
    assert!(message.contains("could not start") && message.contains("1 tasks are already running"), "{message}");
    let m = Manager::new(BackgroundConfig { global_concurrency: 1, backpressure: Backpressure::FallbackSync, ..config() }, rt.clone());
    dispatch(&m, "c1", "a", tool(&rt, 1000), LIMITS);
    assert_eq!(dispatch(&m, "c2", "a", tool(&rt, 1000), LIMITS), Dispatched::RunInForeground);
}

#[test]
fn a_timeout_aborts_the_tool_and_ends_as_failed_after_the_retries() {
    let rt = Rc::new(FakeRt::default());
    let m = Manager::new(config(), rt.clone());
    let sub = m.subscribe(scope("a"));
    let t = tool(&rt, 60_000);
    dispatch(&m, "c1", "a", t.clone(), TaskLimits { timeout_ms: 1000, max_retries: 1 });
    rt.settle();
    rt.advance_to(1000.0);
    rt.advance_to(2000.0);
    assert_eq!(t.attempts.get(), 2, "one retry");
    assert!(t.aborted.get(), "the tool's abort signal fired");
    let rec = &m.list(None, None)[0];
    assert_eq!(rec.status, TaskStatus::TimedOut);
    assert_eq!(kinds(&sub).last().map(String::as_str), Some("background-task-failed"));

    // A failing tool retried to success.
    let t = tool(&rt, 10);
    t.fail_first.set(2);
    dispatch(&m, "c2", "a", t.clone(), TaskLimits { timeout_ms: 1000, max_retries: 2 });
    rt.settle();
    for step in 1..=5 {
        rt.advance_to(2000.0 + 10.0 * step as f64);
    }
    assert_eq!(t.attempts.get(), 3);
    let rec = m.list(None, None).into_iter().find(|r| r.tool_call_id == "c2").unwrap();
    assert_eq!((rec.status, rec.attempts), (TaskStatus::Completed, 3));
}

#[test]
fn cancelling_a_running_or_queued_task() {
    let rt = Rc::new(FakeRt::default());
    let m = Manager::new(BackgroundConfig { global_concurrency: 1, ..config() }, rt.clone());
    let sub = m.subscribe(scope("a"));
    let running = tool(&rt, 60_000);
    let queued = tool(&rt, 1000);
    let Dispatched::Accepted { task_id: first } = dispatch(&m, "c1", "a", running.clone(), LIMITS) else { panic!() };
    let Dispatched::Accepted { task_id: second } = dispatch(&m, "c2", "a", queued.clone(), LIMITS) else { panic!() };
    rt.settle();
    assert!(m.cancel(&second));
    rt.settle();
    assert_eq!(queued.attempts.get(), 0, "a queued task that is cancelled never runs");
    assert!(m.cancel(&first));
    rt.settle();
    assert!(running.aborted.get());
    assert!(!m.cancel(&first), "an ended task cannot be cancelled");
    let statuses: Vec<TaskStatus> = m.list(None, None).iter().map(|r| r.status).collect();
    assert_eq!(statuses, [TaskStatus::Cancelled, TaskStatus::Cancelled]);
    let k = kinds(&sub);
    assert_eq!(k.iter().filter(|k| *k == "background-task-cancelled").count(), 2, "{k:?}");
    assert!(m.result_of("c1").unwrap().1);
}

#[test]
fn the_real_result_replaces_the_placeholder_in_memory() {
    let rt = Rc::new(FakeRt::default());
    let store = Rc::new(InMemoryStore::new());
    let thread = Thread { id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, created_at: String::new(), updated_at: String::new() };
    futures_ready(store.save_thread(&thread)).unwrap();
    let msg = StoredMessage {
        id: "m1".into(), thread_id: "t1".into(), resource_id: "u1".into(), role: "assistant".into(), created_at: "2026-01-01T00:00:00.000Z".into(),
        parts: vec![json!({ "type": "tool-invocation", "toolInvocation": { "state": "result", "toolCallId": "c1", "toolName": "research", "args": {}, "result": placeholder("task_x", "research") } })],
        metadata: None,
    };
    futures_ready(store.save_messages(std::slice::from_ref(&msg))).unwrap();
    let m = Manager::new(config(), rt.clone());
    let memory = Some(MemoryTarget { store: store.clone(), thread_id: "t1".into() });
    m.dispatch(Dispatch { call: call("c1"), agent_id: "a".into(), run_id: "r".into(), thread_id: Some("t1".into()), resource_id: Some("u1".into()), limits: LIMITS, runner: tool(&rt, 100), memory });
    rt.settle();
    rt.advance_to(100.0);
    let q = MessageQuery { thread_id: "t1".into(), last: None, before: None };
    let stored = futures_ready(store.list_messages(&q)).unwrap();
    assert_eq!(stored[0].parts[0]["toolInvocation"]["result"], json!({ "done": { "q": "c1" } }));
    assert_eq!(stored[0].parts[0]["toolInvocation"]["state"], "result");
}

/// Runs a future that completes without waiting (the in-memory store's).
fn futures_ready<T>(f: Pin<Box<dyn Future<Output = T> + '_>>) -> T {
    let mut f = f;
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the in-memory store never waits"),
    }
}

#[test]
fn tasks_are_stored_and_those_a_stopped_page_left_running_are_marked_interrupted() {
    let rt = Rc::new(FakeRt::default());
    let store = Rc::new(InMemoryStore::new());
    // A task this manager runs is written through each state.
    let m = Manager::new(config(), rt.clone());
    let memory = Some(MemoryTarget { store: store.clone(), thread_id: "t1".into() });
    m.dispatch(Dispatch { call: call("c1"), agent_id: "a".into(), run_id: "r".into(), thread_id: Some("t1".into()), resource_id: Some("u1".into()), limits: LIMITS, runner: tool(&rt, 100), memory });
    rt.settle();
    let all = crate::core::background::TaskFilter::default();
    assert_eq!(futures_ready(store.list_tasks(&all)).unwrap()[0].status, TaskStatus::Running);
    rt.advance_to(100.0);
    assert_eq!(futures_ready(store.list_tasks(&all)).unwrap()[0].status, TaskStatus::Completed);

    // A task another page left running, with its placeholder in the thread.
    let mut stale = m.list(None, None)[0].clone();
    stale.id = "task_dead".into();
    stale.tool_call_id = "c9".into();
    stale.status = TaskStatus::Running;
    futures_ready(store.save_task(&stale, None)).unwrap();
    let msg = StoredMessage {
        id: "m9".into(), thread_id: "t1".into(), resource_id: "u1".into(), role: "assistant".into(), created_at: "2026-01-01T00:00:00.000Z".into(),
        parts: vec![json!({ "type": "tool-invocation", "toolInvocation": { "state": "result", "toolCallId": "c9", "toolName": "research", "args": {}, "result": placeholder("task_dead", "research") } })],
        metadata: None,
    };
    futures_ready(store.save_messages(std::slice::from_ref(&msg))).unwrap();
    let fresh = Manager::new(config(), rt.clone());
    let n = futures_ready(Box::pin(fresh.recover(store.clone(), "a"))).unwrap();
    assert_eq!(n, 1, "only the stale task; the finished one is left alone");
    let tasks = futures_ready(store.list_tasks(&all)).unwrap();
    let dead = tasks.iter().find(|t| t.id == "task_dead").unwrap();
    assert_eq!(dead.status, TaskStatus::Failed);
    assert!(dead.error.as_deref().unwrap().starts_with("interrupted"));
    let q = MessageQuery { thread_id: "t1".into(), last: None, before: None };
    let inv = futures_ready(store.list_messages(&q)).unwrap()[0].parts[0]["toolInvocation"].clone();
    assert_eq!(inv["state"], "output-error");
    assert!(inv["result"].as_str().unwrap().contains("was interrupted"), "{inv}");
}

// The untilIdle driver over the same fake clock: it waits through `Env`, reports progress, and
// continues with typed task events.
mod driver {
    use super::*;
    use crate::core::env::{Env, HttpResponse};
    use crate::core::error::AgentError;
    use crate::core::run::Sink;
    use crate::core::step::StepResult;
    use crate::core::until_idle::{drive, Continuations, IdleLoop, IdleWatch};
    use crate::core::wire::HttpRequest;

    struct RtEnv(Rc<FakeRt>);

    impl Env for RtEnv {
        fn fetch(&self, _req: HttpRequest) -> LocalFuture<'static, Result<HttpResponse, AgentError>> {
            Box::pin(async { Err(AgentError::api("no network in this test", false)) })
        }
        fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
            self.0.sleep(ms)
        }
        fn now_ms(&self) -> f64 {
            self.0.now_ms()
        }
        fn new_id(&self) -> String {
            self.0.new_id()
        }
    }

    #[derive(Default)]
    struct Seen(RefCell<Vec<String>>);

    impl Sink for Seen {
        fn emit(&self, chunk: Chunk) {
            self.0.borrow_mut().push(chunk.type_name().to_string());
        }
        fn step_finished<'a>(&'a self, _step: &'a StepResult) -> LocalFuture<'a, ()> {
            Box::pin(async {})
        }
    }

    #[derive(Default)]
    struct Turns(RefCell<Vec<String>>);

    impl Continuations for Turns {
        fn start_turn(&self, directive: String) -> Result<LocalFuture<'_, bool>, AgentError> {
            self.0.borrow_mut().push(directive);
            Ok(Box::pin(async { false }))
        }
    }

    /// Runs the driver after a first turn, with one task of `ms` (limited to `limits`), moving
    /// the clock by 500 ms until it returns; gives the chunks, the directives and when it ended.
    fn go(ms: u64, limits: TaskLimits, max_idle_ms: u64) -> (Vec<String>, Vec<String>, f64) {
        let rt = Rc::new(FakeRt::default());
        let m = Manager::new(config(), rt.clone());
        let subscription = m.subscribe(scope("a"));
        dispatch(&m, "c1", "a", tool(&rt, ms), limits);
        rt.settle();
        let _running = subscription.try_next();
        let watch = IdleWatch { manager: m.clone(), subscription, scope: scope("a"), max_idle_ms };
        let (env, sink, turns, outer) = (RtEnv(rt.clone()), Seen::default(), Turns::default(), AbortFlag::new());
        let mut fut = std::pin::pin!(drive(&watch, IdleLoop::new(max_idle_ms), &env, &sink, &outer, false, &turns));
        let mut cx = Context::from_waker(Waker::noop());
        let mut t = 0.0;
        while fut.as_mut().poll(&mut cx).is_pending() {
            assert!(t < 60_000.0, "the driver never closed");
            t += 500.0;
            rt.advance_to(t);
        }
        (sink.0.take(), turns.0.take(), t)
    }

    #[test]
    fn it_reports_progress_while_a_task_runs_then_continues_once_it_ends() {
        let (chunks, directives, _) = go(5_000, LIMITS, 300_000);
        let progress = chunks.iter().filter(|c| *c == "background-task-progress").count();
        assert_eq!(progress, 2, "at 2 s and 4 s: {chunks:?}");
        assert_eq!(chunks.last().map(String::as_str), Some("background-task-completed"));
        assert_eq!(directives.len(), 1);
        assert!(directives[0].contains("Completed: research (tool call c1)"), "{}", directives[0]);
    }

    #[test]
    fn a_timed_out_task_is_told_as_timed_out() {
        let (chunks, directives, _) = go(5_000, TaskLimits { timeout_ms: 1_000, max_retries: 0 }, 300_000);
        assert!(chunks.contains(&"background-task-failed".to_string()), "{chunks:?}");
        assert!(directives[0].contains("research (tool call c1) timed out"), "{}", directives[0]);
    }

    #[test]
    fn the_idle_timer_closes_a_stream_whose_task_outlives_it_and_progress_does_not_restart_it() {
        let (chunks, directives, ended_at) = go(20_000, TaskLimits { timeout_ms: 60_000, max_retries: 0 }, 3_000);
        assert!(directives.is_empty());
        assert_eq!(ended_at, 3_000.0);
        assert!(chunks.iter().all(|c| c == "background-task-progress"), "{chunks:?}");
    }
}

fn foreign_task(id: &str, status: TaskStatus) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        tool_name: "research".into(),
        tool_call_id: format!("call_{id}"),
        args: json!({}),
        agent_id: "a".into(),
        run_id: "r0".into(),
        thread_id: Some("t1".into()),
        resource_id: Some("u1".into()),
        status,
        result: (status == TaskStatus::Completed).then(|| json!({ "found": 3 })),
        error: None,
        created_at: "2026-01-01T00:00:00.000Z".into(),
        started_at: None,
        completed_at: None,
        attempts: 1,
    }
}

#[test]
fn a_task_of_another_tab_is_waited_for_and_its_end_told_to_this_tabs_listeners() {
    let rt = Rc::new(FakeRt::default());
    let m = Manager::new(config(), rt.clone());
    let sub = m.subscribe(scope("a"));
    m.note_foreign(foreign_task("x", TaskStatus::Running), true);
    assert_eq!(m.foreign(Some("t1")).len(), 1);
    assert!(m.foreign(Some("t2")).is_empty());
    assert!(m.list(None, None).is_empty(), "listBackgroundTasks stays this page's");
    m.note_foreign(foreign_task("x", TaskStatus::Completed), true);
    assert!(m.foreign(None).is_empty());
    let e = sub.try_next().expect("the end is published");
    assert_eq!(e.chunk().type_name(), "background-task-completed");
    assert!(!e.answered_elsewhere);
    m.note_foreign(foreign_task("y", TaskStatus::Failed), false);
    assert!(sub.try_next().unwrap().answered_elsewhere, "another tab answers it: shown only");
}

#[test]
fn a_task_this_tab_runs_is_not_foreign_and_its_end_is_answered_by_whoever_claimed_it() {
    let rt = Rc::new(FakeRt::default());
    let m = Manager::new(config(), rt.clone());
    let sub = m.subscribe(scope("a"));
    let Dispatched::Accepted { task_id } = dispatch(&m, "c1", "a", tool(&rt, 100), LIMITS) else { panic!() };
    rt.settle();
    m.note_foreign(TaskRecord { id: task_id.clone(), ..foreign_task("z", TaskStatus::Running) }, true);
    assert!(m.foreign(None).is_empty(), "its own task is not another tab's");
    rt.claimed_elsewhere.set(true);
    rt.advance_to(100.0);
    let mut last = None;
    while let Some(e) = sub.try_next() {
        last = Some(e);
    }
    let last = last.unwrap();
    assert_eq!(last.chunk().type_name(), "background-task-completed");
    assert!(last.answered_elsewhere, "another tab claimed the answer first");
}
