//! The chunk log with a fake clock and a store that records each append: batches, not one write
//! per chunk; a batch at the latest 100 ms after its first chunk; an explicit flush at once;
//! writes in order; `drained` after the last; expiry.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde_json::{json, Value};

use super::*;
use crate::core::memory::InMemoryStore;
use crate::core::runs::{RunRecord, RunStatus, RunStore};

/// Tasks run by hand; `sleep` resolves once the clock passed its deadline.
#[derive(Default)]
struct FakeRt {
    now: Rc<Cell<u64>>,
    tasks: RefCell<Vec<LocalFuture<'static, ()>>>,
}

struct Sleep {
    until: u64,
    now: Rc<Cell<u64>>,
}

impl Future for Sleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.now.get() >= self.until { Poll::Ready(()) } else { Poll::Pending }
    }
}

impl LogRuntime for FakeRt {
    fn spawn(&self, task: LocalFuture<'static, ()>) {
        self.tasks.borrow_mut().push(task);
    }
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        Box::pin(Sleep { until: self.now.get() + ms, now: self.now.clone() })
    }
}

impl FakeRt {
    /// Polls every task until none makes progress.
    fn run(&self) {
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            let mut tasks = std::mem::take(&mut *self.tasks.borrow_mut());
            let before = tasks.len();
            tasks.retain_mut(|t| t.as_mut().poll(&mut cx).is_pending());
            let done = before - tasks.len();
            let spawned = std::mem::take(&mut *self.tasks.borrow_mut());
            let more = !spawned.is_empty();
            tasks.extend(spawned);
            *self.tasks.borrow_mut() = tasks;
            if done == 0 && !more {
                break;
            }
        }
    }
    fn advance(&self, ms: u64) {
        self.now.set(self.now.get() + ms);
        self.run();
    }
}

/// An `InMemoryStore` whose appends are recorded (the seqs of each batch).
struct Recording {
    inner: InMemoryStore,
    batches: RefCell<Vec<Vec<u64>>>,
}

impl crate::core::memory::Store for Recording {
    fn get_thread_by_id<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<crate::core::memory::Thread>, AgentError>> {
        self.inner.get_thread_by_id(id)
    }
    fn save_thread<'a>(&'a self, t: &'a crate::core::memory::Thread) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_thread(t)
    }
    fn delete_thread<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.delete_thread(id)
    }
    fn list_threads<'a>(&'a self, r: &'a str) -> LocalFuture<'a, Result<Vec<crate::core::memory::Thread>, AgentError>> {
        self.inner.list_threads(r)
    }
    fn list_messages<'a>(&'a self, q: &'a crate::core::memory::MessageQuery) -> LocalFuture<'a, Result<Vec<crate::core::memory::StoredMessage>, AgentError>> {
        self.inner.list_messages(q)
    }
    fn save_messages<'a>(&'a self, m: &'a [crate::core::memory::StoredMessage]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_messages(m)
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.delete_messages(ids)
    }
    fn get_resource<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<crate::core::memory::Resource>, AgentError>> {
        self.inner.get_resource(id)
    }
    fn save_resource<'a>(&'a self, r: &'a crate::core::memory::Resource) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_resource(r)
    }
    fn save_task<'a>(&'a self, t: &'a crate::core::background::TaskRecord, p: Option<crate::core::background::TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_task(t, p)
    }
    fn list_tasks<'a>(&'a self, f: &'a crate::core::background::TaskFilter) -> LocalFuture<'a, Result<Vec<crate::core::background::TaskRecord>, AgentError>> {
        self.inner.list_tasks(f)
    }
    fn runs(&self) -> Option<&dyn RunStore> {
        Some(self)
    }
}

impl RunStore for Recording {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.runs().unwrap().save_run(run)
    }
    fn get_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        self.inner.runs().unwrap().get_run(run_id)
    }
    fn update_run<'a>(&'a self, run_id: &'a str, patch: &'a Value, e: Option<RunStatus>) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        self.inner.runs().unwrap().update_run(run_id, patch, e)
    }
    fn list_runs<'a>(&'a self, f: &'a crate::core::runs::RunFilter) -> LocalFuture<'a, Result<Vec<RunRecord>, AgentError>> {
        self.inner.runs().unwrap().list_runs(f)
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.runs().unwrap().delete_run(run_id)
    }
    fn append_run_chunks<'a>(&'a self, run_id: &'a str, chunks: &'a [Value]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.batches.borrow_mut().push(chunks.iter().map(seq_of).collect());
        self.inner.runs().unwrap().append_run_chunks(run_id, chunks)
    }
    fn list_run_chunks<'a>(&'a self, run_id: &'a str, after: u64, limit: Option<usize>) -> LocalFuture<'a, Result<Vec<Value>, AgentError>> {
        self.inner.runs().unwrap().list_run_chunks(run_id, after, limit)
    }
    fn delete_run_chunks<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.runs().unwrap().delete_run_chunks(run_id)
    }
}

fn setup() -> (Rc<FakeRt>, Rc<Recording>, ChunkLog) {
    let rt = Rc::new(FakeRt::default());
    let store = Rc::new(Recording { inner: InMemoryStore::new(), batches: RefCell::default() });
    let log = ChunkLog::new("r1", store.clone(), rt.clone());
    (rt, store, log)
}

fn chunk(seq: u64) -> Value {
    json!({ "type": "text-delta", "seq": seq, "runId": "r1", "from": "AGENT", "payload": { "id": "t", "text": "x" } })
}

fn block_on<F: Future>(rt: &FakeRt, f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..100 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        rt.run();
    }
    panic!("did not finish");
}

#[test]
fn chunks_are_written_in_batches_at_the_latest_100_ms_after_the_first() {
    let (rt, store, log) = setup();
    for s in 1..=50 {
        log.push(chunk(s));
    }
    rt.advance(99);
    assert!(store.batches.borrow().is_empty(), "nothing before 100 ms");
    rt.advance(1);
    assert_eq!(*store.batches.borrow(), vec![(1..=50).collect::<Vec<_>>()], "one write for 50 chunks");
    // The next chunk starts the next batch's timer.
    rt.advance(500);
    log.push(chunk(51));
    rt.advance(60);
    log.push(chunk(52));
    rt.advance(40);
    assert_eq!(store.batches.borrow().last().unwrap(), &vec![51, 52]);
    assert_eq!(store.batches.borrow().len(), 2);
}

#[test]
fn a_flush_writes_at_once_and_writes_stay_in_order_and_drained_waits_for_the_last() {
    let (rt, store, log) = setup();
    log.push(chunk(1));
    log.push(chunk(2));
    log.flush();
    log.push(chunk(3));
    assert_eq!(log.unwritten_after(1).iter().map(seq_of).collect::<Vec<_>>(), vec![2, 3], "queued and pending, after 1");
    block_on(&rt, log.drained()).unwrap();
    assert_eq!(*store.batches.borrow(), vec![vec![1, 2], vec![3]]);
    assert!(log.unwritten_after(0).is_empty());
    let logged = block_on(&rt, store.list_run_chunks("r1", 1, None)).unwrap();
    assert_eq!(logged.iter().map(seq_of).collect::<Vec<_>>(), vec![2, 3], "read after seq 1, ascending");
    // A flush with nothing pending writes nothing; the timer of the first chunk finds nothing left.
    log.flush();
    rt.advance(200);
    assert_eq!(store.batches.borrow().len(), 2);
}

#[test]
fn appends_are_idempotent_by_seq_and_listing_honours_after_and_limit() {
    let (rt, store, _) = setup();
    block_on(&rt, store.append_run_chunks("r1", &[chunk(1), chunk(2), chunk(3)])).unwrap();
    let mut again = chunk(2);
    again["payload"]["text"] = "y".into();
    block_on(&rt, store.append_run_chunks("r1", &[again])).unwrap();
    let all = block_on(&rt, store.list_run_chunks("r1", 0, None)).unwrap();
    assert_eq!(all.iter().map(seq_of).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(all[1]["payload"]["text"], "y");
    let two = block_on(&rt, store.list_run_chunks("r1", 0, Some(2))).unwrap();
    assert_eq!(two.len(), 2);
    block_on(&rt, store.delete_run_chunks("r1")).unwrap();
    assert!(block_on(&rt, store.list_run_chunks("r1", 0, None)).unwrap().is_empty());
    // What a storage object returned is put in order.
    let shuffled = vec![chunk(3), chunk(1), chunk(2), chunk(2)];
    assert_eq!(crate::core::runs::chunks_in_order(shuffled, 1, None).iter().map(seq_of).collect::<Vec<_>>(), vec![2, 3]);
}

#[test]
fn finished_runs_past_retain_until_are_pruned_with_their_logs() {
    let (rt, store, _) = setup();
    let rec = |id: &str, status, until| RunRecord {
        run_id: id.into(),
        agent_id: "a".into(),
        thread_id: None,
        resource_id: None,
        status,
        created_at: 0.0,
        updated_at: 0.0,
        heartbeat_at: None,
        waiting: Vec::new(),
        snapshot: None,
        last_seq: 3,
        retain_until: until,
        retain_ms: Some(10.0),
    };
    for (id, status, until) in [("old", RunStatus::Completed, Some(100.0)), ("fresh", RunStatus::Completed, Some(300.0)), ("live", RunStatus::Running, None)] {
        block_on(&rt, store.save_run(&rec(id, status, until))).unwrap();
        block_on(&rt, store.append_run_chunks(id, &[chunk(1)])).unwrap();
    }
    assert_eq!(block_on(&rt, prune(&*store, 200.0)).unwrap(), 1);
    assert!(block_on(&rt, store.get_run("old")).unwrap().is_none());
    assert!(block_on(&rt, store.list_run_chunks("old", 0, None)).unwrap().is_empty());
    for id in ["fresh", "live"] {
        assert!(block_on(&rt, store.get_run(id)).unwrap().is_some(), "{id} stays");
        assert_eq!(block_on(&rt, store.list_run_chunks(id, 0, None)).unwrap().len(), 1);
    }
    let back = RunRecord::from_json(&rec("x", RunStatus::Completed, Some(5.0)).to_json(), "test").unwrap();
    assert_eq!((back.retain_until, back.retain_ms), (Some(5.0), Some(10.0)), "retainUntil and retainMs round-trip");
}

#[test]
fn a_reconnect_output_covers_the_chunks_it_carried() {
    let c = |t: &str, payload: Value| json!({ "type": t, "seq": 1, "runId": "r1", "from": "AGENT", "payload": payload });
    let chunks = vec![
        c("text-delta", json!({ "id": "t", "text": "lo " })),
        c("tool-call", json!({ "toolCallId": "c1", "toolName": "f", "args": {} })),
        c("tool-result", json!({ "toolCallId": "c1", "toolName": "f", "result": 1 })),
        c("text-delta", json!({ "id": "t", "text": "there" })),
        c("finish", json!({ "stepResult": { "reason": "stop" }, "output": { "usage": { "inputTokens": 3 } }, "totalUsage": { "inputTokens": 5 } })),
    ];
    let out = output_of(&chunks, "r1");
    assert_eq!(out["text"], "lo there");
    assert_eq!(out["finishReason"], "stop");
    assert_eq!(out["usage"]["inputTokens"], 3);
    assert_eq!(out["totalUsage"]["inputTokens"], 5);
    assert_eq!(out["toolCalls"].as_array().unwrap().len(), 1);
    assert_eq!(out["toolResults"][0]["result"], 1);
    assert_eq!(out["reasoningText"], Value::Null);
    let aborted = output_of(&[c("abort", json!({}))], "r1");
    assert_eq!(aborted["finishReason"], "abort");
}
