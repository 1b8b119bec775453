//! Resuming from snapshots: the suspended step runs again with resumeData and suspendData,
//! finished steps do not; nested paths; resumeSchema; the store's compare-and-set claim.

use super::*;
use crate::core::workflow::context::Snapshot;
use crate::core::workflow::snapshot::{self, RunFilter, RunStore};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;

/// A step that suspends with `{ ask: true }` unless resumed, then returns what it was given.
fn ask(t: &T, calls: Rc<Cell<u32>>) -> Rc<StepDef> {
    t.step("ask", move |c| {
        calls.set(calls.get() + 1);
        match &c.resume_data {
            None => {
                c.ctx.suspend(json!({ "ask": true }));
                Ok(json!(null))
            }
            Some(d) => Ok(json!({ "resumed": d, "suspendData": c.suspend_data, "n": c.input["n"] })),
        }
    })
}

fn resume(t: &T, w: &Rc<WorkflowDef>, snap: &Value, path: &[&str], data: Value) -> (WorkflowResult, Vec<Value>) {
    let run = t.run_core();
    let r =
        block_on(snapshot::resume(run.clone(), w.clone(), snap, path.iter().map(|s| s.to_string()).collect(), data));
    (r, run.log.snapshot())
}

#[test]
fn a_resumed_step_runs_again_with_resume_and_suspend_data_and_finished_steps_do_not() {
    let t = T::new();
    let (first_calls, ask_calls) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    let fc = first_calls.clone();
    let first = t.step("first", move |c| {
        fc.set(fc.get() + 1);
        Ok(json!({ "n": c.input["n"].as_i64().unwrap() + 1 }))
    });
    let w = wf(
        "s",
        vec![
            Node::Step(first),
            Node::Step(ask(&t, ask_calls.clone())),
            Node::Step(t.step("last", |c| Ok(c.input.clone()))),
        ],
    );
    let run = t.run_core();
    let r = block_on(super::super::start(run.clone(), w.clone(), json!({ "n": 1 }), None)).unwrap();
    assert_eq!(r.status, Status::Suspended);
    let snap = snapshot::of(&run, &r).into_value();
    assert_eq!(snap["status"], "suspended");
    assert_eq!(snap["context"]["first"]["output"], json!({ "n": 2 }));
    assert_eq!(snapshot::suspended_paths(&snap), [vec!["ask".to_string()]]);
    let (r, ev) = resume(&t, &w, &snap, &["ask"], json!({ "ok": true }));
    assert_eq!(r.status, Status::Success);
    assert_eq!(r.result, Some(json!({ "resumed": { "ok": true }, "suspendData": { "ask": true }, "n": 2 })));
    assert_eq!((first_calls.get(), ask_calls.get()), (1, 2), "the finished step did not run again");
    assert_eq!(
        types(&ev),
        [
            "workflow-start ask",
            "workflow-step-start ask",
            "workflow-step-result ask",
            "workflow-step-start last",
            "workflow-step-result last",
            "workflow-finish"
        ]
    );
    assert_eq!(ev[0]["payload"]["args"], json!({ "ok": true }));
    assert_eq!(ev[1]["payload"]["stepCallId"], ev[0]["payload"]["stepCallId"]);
    assert_eq!(ev[1]["payload"]["resumePayload"], json!({ "ok": true }));
    assert_eq!(r.steps["ask"]["resumePayload"], json!({ "ok": true }));
    assert_eq!(r.steps["first"]["output"], json!({ "n": 2 }), "the result has the earlier steps too");
    assert_eq!(r.to_json(false)["stepExecutionPath"], json!(["first", "ask", "ask", "last"]));
}

#[test]
fn a_step_suspended_inside_a_nested_workflow_resumes_by_its_path() {
    let t = T::new();
    let calls = Rc::new(Cell::new(0));
    let inner = wf("in", vec![Node::Step(t.step("before", add(1))), Node::Step(ask(&t, calls.clone()))]);
    let w = wf("o", vec![Node::Step(Rc::new(StepDef::new("inner", Body::Workflow(inner))))]);
    let run = t.run_core();
    let r = block_on(super::super::start(run.clone(), w.clone(), json!({ "n": 0 }), None)).unwrap();
    let snap = snapshot::of(&run, &r).into_value();
    assert_eq!(snapshot::suspended_paths(&snap), [vec!["inner".to_string(), "ask".to_string()]]);
    let (r, ev) = resume(&t, &w, &snap, &["inner", "ask"], json!("yes"));
    assert_eq!(r.status, Status::Success, "{:?}", r.error);
    assert_eq!(r.result.unwrap()["resumed"], "yes");
    assert!(!types(&ev).contains(&"workflow-step-start inner.before".to_string()), "{:?}", types(&ev));
    assert!(snapshot::find_step(&w, &["inner".into(), "ask".into()]).is_some());
    assert!(snapshot::find_step(&w, &["inner".into(), "nope".into()]).is_none());
}

#[test]
fn resume_data_is_checked_against_the_steps_resume_schema() {
    let t = T::new();
    let mut s = StepDef::new("ask", Body::Host(t.host.sync(|_| Ok(json!(1)))));
    s.resume_schema = Some(Schema::Json(
        json!({ "type": "object", "properties": { "approved": { "type": "boolean" } }, "required": ["approved"] }),
    ));
    let w = wf("r", vec![Node::Step(Rc::new(s))]);
    let path = vec!["ask".to_string()];
    let e =
        block_on(snapshot::check_resume(t.run_core(), w.clone(), &path, &json!({ "approved": "yes" }))).unwrap_err();
    assert_eq!(
        (e.name(), e.to_string().as_str()),
        ("ValidationError", "resumeData.approved: expected a boolean, got a string")
    );
    assert!(block_on(snapshot::check_resume(t.run_core(), w.clone(), &path, &json!({ "approved": true }))).is_ok());
    let e = block_on(snapshot::check_resume(t.run_core(), w, &["x".to_string()], &json!({}))).unwrap_err();
    assert_eq!(e.to_string(), "resume(options).step: no step 'x' in workflow 'r'");
}

#[test]
fn the_store_claims_a_suspended_run_once_and_lists_filters_and_deletes() {
    let store = RunStore::default();
    store.persist("wf", "a", Some("user-1".into()), &json!({ "status": "suspended", "context": { "input": 1 } }), 10.0);
    store.persist("wf", "b", None, &json!({ "status": "success", "context": { "input": 2 } }), 20.0);
    store.persist("other", "c", None, &json!({ "status": "suspended" }), 30.0);
    assert!(store.update_status("wf", "a", "running", Some("suspended"), 40.0).is_some());
    assert!(store.update_status("wf", "a", "running", Some("suspended"), 41.0).is_none(), "the second claim loses");
    assert!(store.update_status("wf", "missing", "running", None, 41.0).is_none());
    assert_eq!(store.load("wf", "a").unwrap().status(), "running");
    let ids = |f: RunFilter| store.list(&f).0.into_iter().map(|r| r.run_id).collect::<Vec<_>>();
    assert_eq!(ids(RunFilter { workflow_name: Some("wf".into()), ..Default::default() }), ["b", "a"], "newest first");
    assert_eq!(ids(RunFilter { status: Some("suspended".into()), ..Default::default() }), ["c"]);
    assert_eq!(ids(RunFilter { resource_id: Some("user-1".into()), ..Default::default() }), ["a"]);
    assert_eq!(ids(RunFilter { from_date: Some(15.0), to_date: Some(25.0), ..Default::default() }), ["b"]);
    let (page, total) = store.list(&RunFilter { per_page: Some(1), page: 1, ..Default::default() });
    assert_eq!((page[0].run_id.as_str(), total), ("b", 3));
    let json = store.load("wf", "b").unwrap().to_json();
    assert_eq!(
        (json["payload"].clone(), json["status"].clone(), json["workflowName"].clone()),
        (json!(2), json!("success"), json!("wf"))
    );
    assert!(store.delete("wf", "b"));
    assert!(!store.delete("wf", "b"));
    assert!(store.load("wf", "b").is_none());
    assert_eq!(store.load("other", "c").unwrap().status(), "suspended", "the runs after a deleted one are still found");
    store.persist("other", "c", None, &json!({ "status": "success" }), 50.0);
    assert_eq!((store.load("other", "c").unwrap().status(), store.list(&RunFilter::default()).1), ("success", 2));
}

#[test]
fn a_run_writes_a_running_snapshot_after_each_node_and_restarts_from_the_last_finished_one() {
    let t = T::new();
    let calls = Rc::new(RefCell::new(Vec::<String>::new()));
    let step = |id: &'static str, n: i64| {
        let calls = calls.clone();
        t.step(id, move |c| {
            calls.borrow_mut().push(id.to_string());
            Ok(json!({ "n": c.input["n"].as_i64().unwrap() + n }))
        })
    };
    let w = wf("r", vec![Node::Step(step("one", 1)), Node::Step(step("two", 10)), Node::Step(step("three", 100))]);
    let run = t.run_core();
    let written = Rc::new(RefCell::new(Vec::<Value>::new()));
    let into = written.clone();
    *run.persist.borrow_mut() = Some(Rc::new(move |snap: Snapshot| -> LocalFuture<'static, Result<(), AgentError>> {
        let snap = snap.into_value();
        into.borrow_mut().push(snap);
        Box::pin(std::future::ready(Ok(())))
    }));
    run.per_step.set(true);
    *run.state.borrow_mut() = json!({ "kept": true });
    let r = block_on(super::super::start(run.clone(), w.clone(), json!({ "n": 0 }), None)).unwrap();
    assert_eq!(r.result, Some(json!({ "n": 111 })));
    let all = written.borrow();
    let statuses: Vec<&str> = all.iter().map(|s| s["status"].as_str().unwrap()).collect();
    // At the start, after one, after two (not after the last: the end writes its own), the end.
    assert_eq!(statuses, ["running", "running", "running", "success"]);
    let written = &all[1..3];
    assert_eq!(written[0]["context"]["one"]["output"], json!({ "n": 1 }));
    assert!(written[0]["context"].get("two").is_none());
    assert_eq!(written[0]["context"]["input"], json!({ "n": 0 }));
    assert_eq!(written[0]["stepExecutionPath"], json!(["one"]));
    assert_eq!(written[0]["state"], json!({ "kept": true }));

    // The page died while two ran: the last snapshot it wrote is the one after one.
    calls.borrow_mut().clear();
    let again = t.run_core();
    let r = block_on(snapshot::restart(again.clone(), w.clone(), &written[0]));
    assert_eq!(r.status, Status::Success, "{:?}", r.error);
    assert_eq!(r.result, Some(json!({ "n": 111 })));
    assert_eq!(*calls.borrow(), ["two", "three"], "the finished step did not run again");
    let ev = again.log.snapshot();
    assert_eq!(
        types(&ev),
        ["workflow-start two", "workflow-step-start two", "workflow-step-result two", "workflow-step-start three", "workflow-step-result three", "workflow-finish"]
    );
    assert_eq!(ev[0]["payload"]["args"], json!({ "n": 0 }), "a restart's args are the run's input");
    assert_eq!(r.steps["one"]["output"], json!({ "n": 1 }));
    assert_eq!(r.to_json(false)["stepExecutionPath"], json!(["one", "two", "three"]));
    assert_eq!(*again.state.borrow(), json!({ "kept": true }));
}

/// A run whose store refuses write number `fail_at` (counting from 0); the statuses it was asked to write.
fn failing_store(t: &T, fail_at: usize) -> (Rc<RunCore>, Rc<RefCell<Vec<String>>>) {
    let run = t.run_core();
    let asked = Rc::new(RefCell::new(Vec::<String>::new()));
    let into = asked.clone();
    *run.persist.borrow_mut() = Some(Rc::new(move |snap: Snapshot| -> LocalFuture<'static, Result<(), AgentError>> {
        let snap = snap.into_value();
        let n = into.borrow().len();
        into.borrow_mut().push(snap["status"].as_str().unwrap_or_default().to_string());
        Box::pin(std::future::ready(if n == fail_at { Err(AgentError::storage("disk full")) } else { Ok(()) }))
    }));
    run.per_step.set(true);
    (run, asked)
}

#[test]
fn a_snapshot_that_cannot_be_written_fails_the_run_with_a_storage_error_and_the_stream_still_finishes() {
    let t = T::new();
    let ran = Rc::new(RefCell::new(Vec::<&str>::new()));
    let step = |id: &'static str| {
        let ran = ran.clone();
        t.step(id, move |_| {
            ran.borrow_mut().push(id);
            Ok(json!({}))
        })
    };
    let w = wf("s", vec![Node::Step(step("one")), Node::Step(step("two"))]);

    // The write at the start: the run does not start.
    let (run, asked) = failing_store(&t, 0);
    let e = block_on(super::super::start(run.clone(), w.clone(), json!({}), None)).unwrap_err();
    assert_eq!(e.name(), "StorageError");
    assert!(ran.borrow().is_empty());
    assert_eq!(types(&run.log.snapshot()), ["workflow-start one", "workflow-finish"]);
    assert_eq!(*asked.borrow(), ["running"]);

    // The write after step one: step two never starts.
    let (run, asked) = failing_store(&t, 1);
    let r = block_on(super::super::start(run.clone(), w.clone(), json!({}), None)).unwrap();
    assert_eq!(r.status, Status::Failed);
    let e = r.error.clone().unwrap();
    assert_eq!(e.name, "StorageError");
    assert!(e.message.contains("disk full"), "{}", e.message);
    assert_eq!(*ran.borrow(), ["one"]);
    assert_eq!(*asked.borrow(), ["running", "running", "failed"], "the failed end is written after the refused write");
    let ev = run.log.snapshot();
    assert_eq!(ev.last().unwrap()["type"], "workflow-finish");
    assert_eq!(ev.last().unwrap()["payload"]["workflowStatus"], "failed");

    // The write at the end: the steps ran, but the run is not stored as done, so it is failed.
    ran.borrow_mut().clear();
    let (run, asked) = failing_store(&t, 2);
    let r = block_on(super::super::start(run.clone(), w.clone(), json!({}), None)).unwrap();
    assert_eq!(*ran.borrow(), ["one", "two"]);
    assert_eq!(r.status, Status::Failed);
    assert_eq!(r.error.unwrap().name, "StorageError");
    assert_eq!(*asked.borrow(), ["running", "running", "success", "failed"]);
    assert_eq!(run.log.snapshot().last().unwrap()["payload"]["workflowStatus"], "failed");
}
