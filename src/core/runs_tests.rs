//! The run-record state machine with a scripted store and a fake clock: claims, races, stale
//! claims, what each refusal says.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde_json::{json, Value};

use super::*;

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("did not finish");
}

/// A store over `MemoryRuns` that logs each call, so a test sees what was asked and in which order.
#[derive(Default)]
struct Scripted {
    inner: MemoryRuns,
    log: RefCell<Vec<String>>,
}

impl RunStore for Scripted {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> LocalFuture<'a, Result<(), AgentError>> {
        self.log.borrow_mut().push(format!("save {}", run.status.as_str()));
        self.inner.save_run(run)
    }
    fn get_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        self.log.borrow_mut().push("get".into());
        self.inner.get_run(run_id)
    }
    fn update_run<'a>(&'a self, run_id: &'a str, patch: &'a Value, expected: Option<RunStatus>) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        self.log.borrow_mut().push(format!("update {} if {}", patch["status"].as_str().unwrap_or("?"), expected.map_or("any", RunStatus::as_str)));
        self.inner.update_run(run_id, patch, expected)
    }
    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<Vec<RunRecord>, AgentError>> {
        self.inner.list_runs(filter)
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.log.borrow_mut().push("delete".into());
        self.inner.delete_run(run_id)
    }
    fn append_run_chunks<'a>(&'a self, run_id: &'a str, chunks: &'a [Value]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.append_run_chunks(run_id, chunks)
    }
    fn list_run_chunks<'a>(&'a self, run_id: &'a str, after: u64, limit: Option<usize>) -> LocalFuture<'a, Result<Vec<Value>, AgentError>> {
        self.inner.list_run_chunks(run_id, after, limit)
    }
    fn delete_run_chunks<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.delete_run_chunks(run_id)
    }
}

const T0: f64 = 1_700_000_000_000.0;

fn waiting(id: &str, kind: WaitKind) -> WaitingCall {
    WaitingCall {
        call: ToolCall { tool_call_id: id.into(), tool_name: "pay".into(), args: json!({ "amount": 5 }) },
        kind,
        suspend_payload: (kind == WaitKind::Suspension).then(|| json!({ "ask": "pin" })),
        resume_schema: (kind == WaitKind::Suspension).then(|| json!({ "type": "object" })),
        resumed_by: None,
    }
}

fn record(status: RunStatus, waits: Vec<WaitingCall>) -> RunRecord {
    RunRecord {
        run_id: "r1".into(),
        agent_id: "shop".into(),
        thread_id: Some("t1".into()),
        resource_id: Some("u1".into()),
        status,
        created_at: T0,
        updated_at: T0,
        heartbeat_at: None,
        waiting: waits,
        snapshot: Some(json!({ "v": SNAPSHOT_V })),
        last_seq: 0,
        retain_until: None,
        retain_ms: None,
    }
}

fn code(e: &AgentError) -> &'static str {
    match e {
        AgentError::Resume { code, .. } => code,
        other => panic!("expected a ResumeError, got {other:?}"),
    }
}

#[test]
fn a_record_round_trips_through_its_json() {
    let resumed = WaitingCall { resumed_by: Some("call_2".into()), ..waiting("c", WaitKind::Suspension) };
    let mut rec = record(RunStatus::Suspended, vec![waiting("a", WaitKind::Approval), waiting("b", WaitKind::Suspension), resumed]);
    rec.heartbeat_at = Some(T0 + 5.0);
    let back = RunRecord::from_json(&rec.to_json(), "test").unwrap();
    assert_eq!(back, rec);
    assert_eq!(rec.to_json()["waiting"][1]["kind"], "suspension");
    assert_eq!(rec.to_json()["waiting"][2]["resumedBy"], "call_2", "a call closed by autoResume keeps who resumed it");
    let bad = RunRecord::from_json(&json!({ "runId": "x", "status": "sleeping" }), "storage.getRun").unwrap_err();
    assert!(bad.to_string().contains("storage.getRun returned run 'x' without a known status"), "{bad}");
}

#[test]
fn every_status_has_its_name() {
    let names: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(names, ["running", "suspended", "resuming", "completed", "failed", "aborted"]);
    for s in RunStatus::ALL {
        assert_eq!(RunStatus::parse(s.as_str()), Some(s));
    }
}

#[test]
fn update_is_a_compare_and_set_and_keeps_the_run_id() {
    let store = MemoryRuns::default();
    block_on(store.save_run(&record(RunStatus::Suspended, vec![]))).unwrap();
    let patch = json!({ "status": "resuming", "runId": "other" });
    assert!(block_on(store.update_run("r1", &patch, Some(RunStatus::Resuming))).unwrap().is_none(), "wrong expected status");
    let got = block_on(store.update_run("r1", &patch, Some(RunStatus::Suspended))).unwrap().unwrap();
    assert_eq!((got.run_id.as_str(), got.status), ("r1", RunStatus::Resuming));
    assert!(block_on(store.update_run("nope", &patch, None)).unwrap().is_none(), "absent");
    block_on(store.delete_run("r1")).unwrap();
    assert!(block_on(store.get_run("r1")).unwrap().is_none());
}

#[test]
fn of_two_racing_claims_exactly_one_wins() {
    let store = Scripted::default();
    block_on(store.save_run(&record(RunStatus::Suspended, vec![waiting("a", WaitKind::Approval)]))).unwrap();
    // Both read the record as suspended before either claims it (two tabs, a double click).
    let first = block_on(load_suspended(&store, "r1", "shop", T0)).unwrap();
    let second = block_on(load_suspended(&store, "r1", "shop", T0)).unwrap();
    assert_eq!((first.status, second.status), (RunStatus::Suspended, RunStatus::Suspended));
    let won = block_on(claim(&store, "r1", T0 + 1.0)).unwrap();
    assert_eq!((won.status, won.heartbeat_at), (RunStatus::Resuming, Some(T0 + 1.0)));
    let lost = block_on(claim(&store, "r1", T0 + 2.0)).unwrap_err();
    assert_eq!(code(&lost), "in-progress");
    assert!(lost.to_string().contains("run 'r1' is already being resumed"), "{lost}");
    // And a third caller arriving now is refused at once.
    let third = block_on(load_suspended(&store, "r1", "shop", T0 + 3.0)).unwrap_err();
    assert_eq!(code(&third), "in-progress");
    assert_eq!(store.log.borrow().iter().filter(|l| l.starts_with("update resuming if suspended")).count(), 2);
}

#[test]
fn a_claim_whose_heartbeat_went_stale_goes_back_to_suspended() {
    let store = Scripted::default();
    let mut rec = record(RunStatus::Resuming, vec![waiting("a", WaitKind::Approval)]);
    rec.heartbeat_at = Some(T0);
    block_on(store.save_run(&rec)).unwrap();
    assert_eq!(code(&block_on(load_suspended(&store, "r1", "shop", T0 + STALE_RESUMING_MS)).unwrap_err()), "in-progress");
    let back = block_on(load_suspended(&store, "r1", "shop", T0 + STALE_RESUMING_MS + 1.0)).unwrap();
    assert_eq!(back.status, RunStatus::Suspended);
    assert!(store.log.borrow().contains(&"update suspended if resuming".to_string()));
    assert_eq!(block_on(claim(&store, "r1", T0 + STALE_RESUMING_MS + 2.0)).unwrap().status, RunStatus::Resuming);
    block_on(release(&store, "r1", T0 + STALE_RESUMING_MS + 3.0)).unwrap();
    assert_eq!(block_on(store.get_run("r1")).unwrap().unwrap().status, RunStatus::Suspended);
}

#[test]
fn only_a_suspended_run_of_this_agent_is_found() {
    let store = MemoryRuns::default();
    let e = block_on(load_suspended(&store, "r1", "shop", T0)).unwrap_err();
    assert_eq!(code(&e), "not-found");
    assert!(e.to_string().contains("could not find a suspended run for runId 'r1'") && e.to_string().contains("listSuspendedRuns"), "{e}");
    block_on(store.save_run(&record(RunStatus::Suspended, vec![]))).unwrap();
    assert_eq!(code(&block_on(load_suspended(&store, "r1", "other-agent", T0)).unwrap_err()), "not-found");
    for done in [RunStatus::Completed, RunStatus::Failed, RunStatus::Aborted, RunStatus::Running] {
        block_on(store.save_run(&record(done, vec![]))).unwrap();
        assert_eq!(code(&block_on(load_suspended(&store, "r1", "shop", T0)).unwrap_err()), "not-found", "{done:?}");
    }
    let mut newer = record(RunStatus::Suspended, vec![]);
    newer.snapshot = Some(json!({ "v": SNAPSHOT_V + 1 }));
    block_on(store.save_run(&newer)).unwrap();
    let e = block_on(load_suspended(&store, "r1", "shop", T0)).unwrap_err();
    assert_eq!(code(&e), "not-found");
    assert!(e.to_string().contains("newer version of wasm-agent"), "{e}");
}

#[test]
fn a_decision_must_name_a_call_that_waits() {
    let one = vec![waiting("a", WaitKind::Approval)];
    assert_eq!(pick_call(&one, "r1", None, Some(WaitKind::Approval)).unwrap().call.tool_call_id, "a");
    let e = pick_call(&one, "r1", Some("zzz"), None).unwrap_err();
    assert_eq!(code(&e), "not-waiting");
    assert!(e.to_string().contains("tool call 'zzz' is not waiting in run 'r1'; waiting: 'a'"), "{e}");
    let two = vec![waiting("a", WaitKind::Approval), waiting("b", WaitKind::Suspension)];
    let e = pick_call(&two, "r1", None, None).unwrap_err();
    assert!(e.to_string().contains("several calls waiting ('a', 'b')"), "{e}");
    let e = pick_call(&two, "r1", Some("b"), Some(WaitKind::Approval)).unwrap_err();
    assert_eq!(code(&e), "not-waiting");
    assert!(e.to_string().contains("is suspended, not waiting for approval"), "{e}");
    assert_eq!(pick_call(&two, "r1", Some("b"), None).unwrap().kind, WaitKind::Suspension);
}

#[test]
fn list_filters_by_agent_thread_and_status() {
    let store = MemoryRuns::default();
    let mut a = record(RunStatus::Suspended, vec![]);
    let mut b = record(RunStatus::Resuming, vec![]);
    b.run_id = "r2".into();
    b.thread_id = Some("t2".into());
    a.agent_id = "shop".into();
    block_on(store.save_run(&a)).unwrap();
    block_on(store.save_run(&b)).unwrap();
    let ids = |f: RunFilter| block_on(store.list_runs(&f)).unwrap().into_iter().map(|r| r.run_id).collect::<Vec<_>>();
    assert_eq!(ids(RunFilter { statuses: vec![RunStatus::Suspended], ..Default::default() }), ["r1"]);
    assert_eq!(ids(RunFilter { thread_id: Some("t2".into()), ..Default::default() }), ["r2"]);
    assert_eq!(ids(RunFilter { agent_id: Some("x".into()), ..Default::default() }), Vec::<String>::new());
    assert_eq!(ids(RunFilter::default()).len(), 2);
    let f = RunFilter { agent_id: Some("shop".into()), statuses: vec![RunStatus::Suspended, RunStatus::Resuming], ..Default::default() };
    assert_eq!(f.to_json(), json!({ "agentId": "shop", "status": ["suspended", "resuming"] }));
}
