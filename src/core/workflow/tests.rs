//! The engine with a test host (Rust closures as the user's functions) and a fake clock: every
//! control-flow form, event order and payloads, state, retries, bail, failure, cancel, suspend.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde_json::{json, Value};

use super::context::RunCore;
use super::graph::{Body, Handle, MapSource, Mapping, Node, RetryConfig, Schema, StepDef, When, WorkflowDef};
use super::host::{Failure, StepCall, WorkflowHost};
use super::result::{Status, WorkflowResult};
use crate::core::env::{Env, HttpResponse, LocalFuture};
use crate::core::error::AgentError;
use crate::core::wire::HttpRequest;

type Func = Rc<dyn Fn(StepCall) -> LocalFuture<'static, Result<Value, Failure>>>;

#[derive(Default)]
struct Host {
    fns: RefCell<Vec<Func>>,
}

impl Host {
    fn add(&self, f: impl Fn(StepCall) -> LocalFuture<'static, Result<Value, Failure>> + 'static) -> Handle {
        self.fns.borrow_mut().push(Rc::new(f));
        (self.fns.borrow().len() - 1) as Handle
    }
    /// A synchronous function.
    fn sync(&self, f: impl Fn(&StepCall) -> Result<Value, Failure> + 'static) -> Handle {
        self.add(move |c| {
            let r = f(&c);
            Box::pin(async move { r })
        })
    }
}

impl WorkflowHost for Host {
    fn execute(&self, handle: Handle, call: StepCall) -> LocalFuture<'static, Result<Value, Failure>> {
        let f = self.fns.borrow()[handle as usize].clone();
        f(call)
    }
    fn call(&self, handle: Handle, call: StepCall) -> LocalFuture<'static, Result<Value, Failure>> {
        self.execute(handle, call)
    }
    fn validate(&self, _handle: Handle, value: Value) -> LocalFuture<'static, Result<Value, String>> {
        Box::pin(async move {
            if value.is_string() {
                Ok(value)
            } else {
                Err("$.value: expected a string".into())
            }
        })
    }
}

/// A clock that moves only when something sleeps (by exactly that long), and counting ids.
#[derive(Default)]
struct Clock {
    now: Cell<f64>,
    ids: Cell<u32>,
    sleeps: RefCell<Vec<u64>>,
}

struct FakeEnv(Rc<Clock>);

impl Env for FakeEnv {
    fn fetch(&self, _req: HttpRequest) -> LocalFuture<'static, Result<HttpResponse, AgentError>> {
        Box::pin(async { Err(AgentError::api("no network in this test", false)) })
    }
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        let c = self.0.clone();
        c.sleeps.borrow_mut().push(ms);
        c.now.set(c.now.get() + ms as f64);
        Box::pin(async {})
    }
    fn now_ms(&self) -> f64 {
        self.0.now.get()
    }
    fn new_id(&self) -> String {
        self.0.ids.set(self.0.ids.get() + 1);
        format!("id-{}", self.0.ids.get())
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..10_000 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("the run did not finish");
}

/// Pending `n` times, then ready (to make steps end in a chosen order).
async fn yield_times(n: u32) {
    let mut left = n;
    poll_fn(|cx| {
        if left == 0 {
            return Poll::Ready(());
        }
        left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

struct T {
    host: Rc<Host>,
    clock: Rc<Clock>,
}

impl T {
    fn new() -> Self {
        T { host: Rc::default(), clock: Rc::default() }
    }
    fn run_core(&self) -> Rc<RunCore> {
        RunCore::new("run-1".into(), None, Rc::new(FakeEnv(self.clock.clone())), self.host.clone())
    }
    /// A step that returns `f(input)`.
    fn step(&self, id: &str, f: impl Fn(&StepCall) -> Result<Value, Failure> + 'static) -> Rc<StepDef> {
        Rc::new(StepDef::new(id, Body::Host(self.host.sync(f))))
    }
    fn go(&self, wf: &Rc<WorkflowDef>, input: Value) -> (WorkflowResult, Vec<Value>) {
        let run = self.run_core();
        let r = block_on(super::start(run.clone(), wf.clone(), input, None)).expect("the run starts");
        (r, run.log.snapshot())
    }
}

fn wf(id: &str, nodes: Vec<Node>) -> Rc<WorkflowDef> {
    let w = WorkflowDef::new(id);
    for n in nodes {
        w.push(n).unwrap();
    }
    w.commit();
    Rc::new(w)
}

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{} {}", e["type"].as_str().unwrap(), e["payload"]["stepName"].as_str().unwrap_or("")))
        .map(|s| s.trim().to_string())
        .collect()
}

fn add(n: i64) -> impl Fn(&StepCall) -> Result<Value, Failure> {
    move |c| Ok(json!({ "n": c.input["n"].as_i64().unwrap() + n }))
}

#[test]
fn a_linear_run_emits_start_each_steps_start_and_result_then_finish_with_the_seeds_fields() {
    let t = T::new();
    let w = wf("test-workflow", vec![Node::Step(t.step("step-1", add(1))), Node::Step(t.step("step-2", add(10)))]);
    let (r, ev) = t.go(&w, json!({ "n": 1 }));
    assert_eq!(
        types(&ev),
        [
            "workflow-start step-1",
            "workflow-step-start step-1",
            "workflow-step-result step-1",
            "workflow-step-start step-2",
            "workflow-step-result step-2",
            "workflow-finish"
        ]
    );
    assert!(ev.iter().all(|e| e["runId"] == "run-1" && e["from"] == "WORKFLOW"));
    let start = &ev[0]["payload"];
    assert_eq!(
        start,
        &json!({ "workflowId": "test-workflow", "stepName": "step-1", "args": { "n": 1 }, "stepCallId": start["stepCallId"], "startedAt": 0.0, "status": "running" })
    );
    assert_eq!(
        ev[1]["payload"]["stepCallId"], start["stepCallId"],
        "the first step's call id is the one workflow-start announced"
    );
    assert_eq!(ev[2]["payload"]["stepCallId"], start["stepCallId"]);
    assert_ne!(ev[3]["payload"]["stepCallId"], start["stepCallId"]);
    assert_eq!(ev[4]["payload"]["stepCallId"], ev[3]["payload"]["stepCallId"]);
    assert_eq!(ev[2]["payload"]["output"], json!({ "n": 2 }));
    assert_eq!(ev[2]["payload"]["payload"], json!({ "n": 1 }));
    assert_eq!(ev[2]["payload"]["status"], "success");
    assert_eq!(r.status, Status::Success);
    let j = r.to_json(false);
    assert_eq!(j["result"], json!({ "n": 12 }));
    assert_eq!(j["steps"]["input"], json!({ "n": 1 }));
    assert_eq!(j["steps"]["step-2"]["output"], json!({ "n": 12 }));
    assert_eq!(j["stepExecutionPath"], json!(["step-1", "step-2"]));
    let fin = &ev[5]["payload"];
    assert_eq!(fin["workflowStatus"], "success");
    assert_eq!(fin["metadata"], json!({}));
    assert_eq!(fin["output"]["usage"]["totalTokens"], 0);
    assert_eq!(fin["finalWorkflowResult"]["result"], json!({ "n": 12 }));
}

#[test]
fn parallel_steps_all_start_first_interleave_as_they_end_and_give_outputs_by_id() {
    let t = T::new();
    let slow = Rc::new(StepDef::new(
        "slow",
        Body::Host(t.host.add(|c| {
            Box::pin(async move {
                yield_times(3).await;
                Ok(json!(c.input["n"].as_i64().unwrap() * 2))
            })
        })),
    ));
    let fast = t.step("fast", |c| Ok(json!(c.input["n"].as_i64().unwrap() + 1)));
    let w = wf("p", vec![Node::Parallel(vec![slow, fast]), Node::Step(t.step("after", |c| Ok(c.input.clone())))]);
    let (r, ev) = t.go(&w, json!({ "n": 5 }));
    assert_eq!(
        types(&ev)[1..5],
        [
            "workflow-step-start slow",
            "workflow-step-start fast",
            "workflow-step-result fast",
            "workflow-step-result slow"
        ]
    );
    assert_eq!(r.result, Some(json!({ "slow": 10, "fast": 6 })));
}

#[test]
fn branch_runs_every_step_whose_condition_holds_and_none_gives_an_empty_object() {
    let t = T::new();
    let yes = t.host.sync(|_| Ok(json!(true)));
    let no = t.host.sync(|_| Ok(json!(0)));
    let w = wf(
        "b",
        vec![Node::Branch(vec![(yes, t.step("a", add(1))), (no, t.step("b", add(2))), (yes, t.step("c", add(3)))])],
    );
    let (r, ev) = t.go(&w, json!({ "n": 0 }));
    assert_eq!(r.result, Some(json!({ "a": { "n": 1 }, "c": { "n": 3 } })));
    assert!(!types(&ev).iter().any(|e| e.ends_with(" b")));
    let w = wf("b2", vec![Node::Branch(vec![(no, t.step("b", add(2)))])]);
    assert_eq!(t.go(&w, json!({ "n": 0 })).0.result, Some(json!({})));
}

#[test]
fn dowhile_and_dountil_count_iterations_from_one_and_feed_each_output_back() {
    let t = T::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s2 = seen.clone();
    let below_3 = t.host.sync(move |c| {
        s2.borrow_mut().push(c.iteration_count.unwrap());
        Ok(json!(c.input["n"].as_i64().unwrap() < 3))
    });
    let w = wf("w", vec![Node::Loop { step: t.step("inc", add(1)), cond: below_3, until: false }]);
    let (r, ev) = t.go(&w, json!({ "n": 0 }));
    assert_eq!(r.result, Some(json!({ "n": 3 })));
    assert_eq!(*seen.borrow(), [1, 2, 3]);
    let results: Vec<_> = ev
        .iter()
        .filter(|e| e["type"] == "workflow-step-result")
        .map(|e| e["payload"]["metadata"]["iterationCount"].clone())
        .collect();
    assert_eq!(results, [json!(1), json!(2), json!(3)]);
    let at_least_5 = t.host.sync(|c| Ok(json!(c.input["n"].as_i64().unwrap() >= 5)));
    let w = wf("u", vec![Node::Loop { step: t.step("inc", add(2)), cond: at_least_5, until: true }]);
    assert_eq!(t.go(&w, json!({ "n": 0 })).0.result, Some(json!({ "n": 6 })));
}

#[test]
fn foreach_keeps_input_order_under_concurrency_and_never_runs_more_than_the_limit() {
    let t = T::new();
    let (now, max) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    let (n2, m2) = (now.clone(), max.clone());
    let body = t.host.add(move |c| {
        let (now, max) = (n2.clone(), m2.clone());
        Box::pin(async move {
            now.set(now.get() + 1);
            max.set(max.get().max(now.get()));
            let v = c.input.as_u64().unwrap();
            yield_times(10 - v as u32).await; // later items end first
            now.set(now.get() - 1);
            Ok(json!(v * 10))
        })
    });
    let w = wf("f", vec![Node::Foreach { step: Rc::new(StepDef::new("each", Body::Host(body))), concurrency: 2 }]);
    let (r, ev) = t.go(&w, json!([1, 2, 3, 4, 5]));
    assert_eq!(r.result, Some(json!([10, 20, 30, 40, 50])));
    assert_eq!(max.get(), 2);
    let progress: Vec<_> =
        ev.iter().filter(|e| e["type"] == "workflow-step-progress").map(|e| e["payload"].clone()).collect();
    assert_eq!(progress.len(), 5);
    assert_eq!(progress[0]["currentIndex"], 1, "item 2 ends before item 1");
    assert_eq!(progress[4]["completedCount"], 5);
    assert_eq!(progress[4]["totalCount"], 5);
    assert_eq!(types(&ev).iter().filter(|e| e.starts_with("workflow-step-start")).count(), 1);
    let w = wf("g", vec![Node::Foreach { step: t.step("x", add(1)), concurrency: 1 }]);
    let (r, _) = t.go(&w, json!({ "n": 1 }));
    assert_eq!(r.error.unwrap().message, "foreach: the step 'x' needs an array as input, got an object");
}

#[test]
fn map_builds_its_output_from_steps_init_data_values_and_functions_as_a_step_of_its_own() {
    let t = T::new();
    let w = WorkflowDef::new("m");
    w.push(Node::Step(t.step("first", add(1)))).unwrap();
    let f = t.host.sync(|c| Ok(json!(c.input["n"].as_i64().unwrap() * 100)));
    let id = w.next_map_id();
    assert_eq!(id, "mapping_m_1");
    w.push(Node::Map {
        id,
        mapping: Mapping::Fields(vec![
            ("a".into(), MapSource::Step { step: "first".into(), path: "n".into() }),
            ("b".into(), MapSource::InitData { path: ".".into() }),
            ("c".into(), MapSource::Value(json!("v"))),
            ("d".into(), MapSource::Fn(f)),
        ]),
    })
    .unwrap();
    w.commit();
    let (r, ev) = t.go(&Rc::new(w), json!({ "n": 1 }));
    assert_eq!(r.result, Some(json!({ "a": 2, "b": { "n": 1 }, "c": "v", "d": 200 })));
    assert!(types(&ev).contains(&"workflow-step-result mapping_m_1".to_string()));
}

#[test]
fn sleep_and_sleep_until_wait_on_the_clock_and_pass_the_input_on() {
    let t = T::new();
    let ms = t.host.sync(|_| Ok(json!(250)));
    let at = t.host.sync(|_| Ok(json!(10_000)));
    let w = wf(
        "s",
        vec![
            Node::Sleep { id: "sleep_a".into(), ms: When::Fixed(1000.0) },
            Node::Sleep { id: "sleep_b".into(), ms: When::Host(ms) },
            Node::SleepUntil { id: "sleep_c".into(), at: When::Host(at) },
            Node::SleepUntil { id: "sleep_d".into(), at: When::Fixed(5.0) },
        ],
    );
    let (r, ev) = t.go(&w, json!({ "k": 1 }));
    assert_eq!(*t.clock.sleeps.borrow(), [1000, 250, 8750], "a moment already past does not wait");
    assert_eq!(r.result, Some(json!({ "k": 1 })));
    assert_eq!(ev[1]["type"], "workflow-step-waiting");
    assert_eq!(
        ev[1]["payload"],
        json!({ "stepName": "sleep_a", "id": "sleep_a", "payload": { "k": 1 }, "startedAt": 0.0, "status": "waiting" })
    );
    assert_eq!(ev[2]["payload"]["endedAt"], 1000.0);
}

#[test]
fn a_nested_workflow_runs_as_a_step_with_prefixed_ids_and_its_result_as_the_output() {
    let t = T::new();
    let inner = wf("inner", vec![Node::Step(t.step("a", add(1))), Node::Step(t.step("b", add(2)))]);
    let w = wf(
        "outer",
        vec![Node::Step(Rc::new(StepDef::new("inner", Body::Workflow(inner)))), Node::Step(t.step("c", add(3)))],
    );
    let (r, ev) = t.go(&w, json!({ "n": 0 }));
    assert_eq!(
        types(&ev),
        [
            "workflow-start inner",
            "workflow-step-start inner",
            "workflow-step-start inner.a",
            "workflow-step-result inner.a",
            "workflow-step-start inner.b",
            "workflow-step-result inner.b",
            "workflow-step-result inner",
            "workflow-step-start c",
            "workflow-step-result c",
            "workflow-finish"
        ]
    );
    assert_eq!(r.result, Some(json!({ "n": 6 })));
    assert_eq!(r.steps["inner"]["output"], json!({ "n": 3 }));
}

#[test]
fn set_state_is_seen_by_later_steps_not_by_the_running_one_and_is_checked_against_the_schema() {
    let t = T::new();
    let mut w = WorkflowDef::new("st");
    w.state_schema = Some(Schema::Json(json!({ "type": "object", "properties": { "count": { "type": "number" } } })));
    let one = t.step("one", |c| {
        c.ctx.set_state(json!({ "count": 1 })).unwrap();
        Ok(json!({ "sawDuring": c.state.clone(), "sawAfter": c.ctx.step_result("one") }))
    });
    w.push(Node::Step(one)).unwrap();
    w.push(Node::Step(t.step("two", |c| {
        Ok(json!({ "state": c.state, "one": c.ctx.step_result("one").is_some(), "init": c.ctx.init_data() }))
    })))
    .unwrap();
    w.push(Node::Step(
        t.step("bad", |c| c.ctx.set_state(json!({ "count": "x" })).map(|_| json!(null)).map_err(Failure::from)),
    ))
    .unwrap();
    w.commit();
    let (r, _) = t.go(&Rc::new(w), json!({ "i": 1 }));
    assert_eq!(r.steps["one"]["output"], json!({ "sawDuring": {}, "sawAfter": null }));
    assert_eq!(r.steps["two"]["output"], json!({ "state": { "count": 1 }, "one": true, "init": { "i": 1 } }));
    let e = r.error.unwrap();
    assert_eq!(
        (e.name.as_str(), e.message.as_str()),
        ("ValidationError", "state.count: expected a number, got a string")
    );
    assert_eq!(r.state, json!({ "count": 1 }));
}

#[test]
fn a_throwing_step_is_retried_with_one_step_start_and_the_workflows_retry_config_as_fallback() {
    let t = T::new();
    let tries = Rc::new(RefCell::new(Vec::new()));
    let t2 = tries.clone();
    let flaky = t.host.sync(move |c| {
        t2.borrow_mut().push(c.retry_count);
        if c.retry_count < 2 {
            Err(Failure::new("Error", "boom"))
        } else {
            Ok(json!("ok"))
        }
    });
    let mut w = WorkflowDef::new("r");
    w.retry = RetryConfig { attempts: 2, delay_ms: 50.0 };
    w.push(Node::Step(Rc::new(StepDef::new("flaky", Body::Host(flaky))))).unwrap();
    w.commit();
    let (r, ev) = t.go(&Rc::new(w), json!(null));
    assert_eq!(r.status, Status::Success);
    assert_eq!(*tries.borrow(), [0, 1, 2]);
    assert_eq!(*t.clock.sleeps.borrow(), [50, 50]);
    assert_eq!(
        types(&ev),
        ["workflow-start flaky", "workflow-step-start flaky", "workflow-step-result flaky", "workflow-finish"]
    );
    tries.borrow_mut().clear();
    let mut s = StepDef::new("flaky", Body::Host(flaky));
    s.retries = Some(1);
    let w = wf("r1", vec![Node::Step(Rc::new(s))]);
    let (r, _) = t.go(&w, json!(null));
    assert_eq!(r.status, Status::Failed, "the step's own retries win over retryConfig");
    assert_eq!(*tries.borrow(), [0, 1]);
}

#[test]
fn a_failed_step_fails_the_run_stops_later_steps_and_finish_carries_the_message() {
    let t = T::new();
    let w = wf(
        "f",
        vec![
            Node::Step(t.step("bad", |_| Err(Failure::new("RangeError", "too big")))),
            Node::Step(t.step("never", add(1))),
        ],
    );
    let (r, ev) = t.go(&w, json!({ "n": 1 }));
    assert_eq!(r.status, Status::Failed);
    let j = r.to_json(false);
    assert_eq!(j["error"], json!({ "name": "RangeError", "message": "too big" }));
    assert_eq!(j["steps"]["bad"]["status"], "failed");
    assert!(j.get("result").is_none());
    assert_eq!(
        types(&ev),
        ["workflow-start bad", "workflow-step-start bad", "workflow-step-result bad", "workflow-finish"]
    );
    assert_eq!(ev[2]["payload"]["error"], json!({ "name": "RangeError", "message": "too big" }));
    assert_eq!(ev[3]["payload"]["metadata"], json!({ "errorMessage": "too big" }));
    assert!(ev[3]["payload"].get("finalWorkflowResult").is_none());
}

#[test]
fn bail_ends_the_run_successfully_with_its_value() {
    let t = T::new();
    let w = wf(
        "b",
        vec![
            Node::Step(t.step("stop", |c| {
                c.ctx.bail(json!({ "early": true }));
                Ok(json!(null))
            })),
            Node::Step(t.step("never", add(1))),
        ],
    );
    let (r, ev) = t.go(&w, json!({ "n": 1 }));
    assert_eq!(r.status, Status::Success);
    assert_eq!(r.result, Some(json!({ "early": true })));
    assert_eq!(ev[2]["payload"]["status"], "bailed");
    assert!(!types(&ev).iter().any(|e| e.contains("never")));
}

#[test]
fn cancel_lets_the_running_step_finish_starts_no_later_step_and_ends_canceled() {
    let t = T::new();
    let w = wf(
        "c",
        vec![
            Node::Step(t.step("first", |c| {
                c.ctx.abort().abort(None);
                Ok(json!("done anyway"))
            })),
            Node::Step(t.step("second", add(1))),
        ],
    );
    let (r, ev) = t.go(&w, json!({ "n": 1 }));
    assert_eq!(r.status, Status::Canceled);
    assert_eq!(r.steps["first"]["output"], "done anyway");
    assert_eq!(
        types(&ev),
        [
            "workflow-start first",
            "workflow-step-start first",
            "workflow-step-result first",
            "workflow-canceled",
            "workflow-finish"
        ]
    );
    assert_eq!(ev[4]["payload"]["workflowStatus"], "canceled");
    let w = wf(
        "c2",
        vec![
            Node::Step(t.step("first", |c| {
                c.ctx.abort().abort(None);
                Ok(json!(1))
            })),
            Node::Sleep { id: "sleep_x".into(), ms: When::Fixed(100.0) },
        ],
    );
    assert_eq!(t.go(&w, json!(null)).0.status, Status::Canceled);
    // Canceled while the last step runs: still canceled, with that step's output kept.
    let w = wf("c3", vec![Node::Step(t.step("only", |c| {
        c.ctx.abort().abort(None);
        Ok(json!(7))
    }))]);
    let (r, ev) = t.go(&w, json!(null));
    assert_eq!((r.status, r.result.clone(), r.steps["only"]["output"].clone()), (Status::Canceled, None, json!(7)));
    assert_eq!(types(&ev)[3..], ["workflow-canceled", "workflow-finish"]);
}

#[test]
fn bad_input_ends_the_run_before_any_step_with_a_validation_error_naming_the_field() {
    let t = T::new();
    let mut w = WorkflowDef::new("v");
    w.input_schema = Some(Schema::Json(
        json!({ "type": "object", "properties": { "value": { "type": "string" } }, "required": ["value"] }),
    ));
    w.push(Node::Step(t.step("s", add(1)))).unwrap();
    w.commit();
    let run = t.run_core();
    let e = block_on(super::start(run.clone(), Rc::new(w), json!({ "value": 3 }), None)).unwrap_err();
    assert_eq!(
        (e.name(), e.to_string().as_str()),
        ("ValidationError", "inputData.value: expected a string, got a number")
    );
    assert_eq!(types(&run.log.snapshot()), ["workflow-start s", "workflow-finish"]);
    assert_eq!(run.log.snapshot()[1]["payload"]["workflowStatus"], "failed");
    let mut s = StepDef::new("s", Body::Host(t.host.sync(|_| Ok(json!(1)))));
    s.input_schema = Some(Schema::Host(0));
    let w = wf("h", vec![Node::Step(Rc::new(s))]);
    let (r, _) = t.go(&w, json!(5));
    assert_eq!(r.error.unwrap().message, "inputData.value: expected a string", "a host schema checks step input too");
}

#[test]
fn a_suspending_step_suspends_the_run_with_its_path_and_payload_also_inside_a_nested_workflow() {
    let t = T::new();
    let ask = || {
        t.step("ask", |c| {
            c.ctx.suspend(json!({ "question": "ok?" }));
            Ok(json!(null))
        })
    };
    let w = wf("s", vec![Node::Step(ask()), Node::Step(t.step("never", add(1)))]);
    let (r, ev) = t.go(&w, json!({ "n": 1 }));
    assert_eq!(r.status, Status::Suspended);
    let j = r.to_json(false);
    assert_eq!(j["suspended"], json!([["ask"]]));
    assert_eq!(j["suspendPayload"], json!({ "ask": { "question": "ok?" } }));
    assert_eq!(ev[2]["type"], "workflow-step-suspended");
    assert_eq!(ev[2]["payload"]["suspendPayload"], json!({ "question": "ok?" }));
    assert_eq!(ev[2]["payload"]["stepCallId"], ev[1]["payload"]["stepCallId"]);
    assert_eq!(ev.last().unwrap()["payload"]["workflowStatus"], "suspended");
    let inner = wf("in", vec![Node::Step(ask())]);
    let w = wf("o", vec![Node::Step(Rc::new(StepDef::new("inner", Body::Workflow(inner))))]);
    assert_eq!(t.go(&w, json!({})).0.to_json(false)["suspended"], json!([["inner", "ask"]]));
}

#[test]
fn writer_output_and_custom_data_chunks_are_events_of_the_run() {
    let t = T::new();
    let w = wf("w", vec![Node::Step(t.step("s", |c| {
        c.ctx.write(json!({ "type": "custom-event", "status": "pending" }));
        c.ctx.custom(json!({ "type": "data-progress", "data": { "pct": 50 }, "transient": true })).unwrap();
        assert!(c.ctx.custom(json!({ "type": "progress" })).is_err());
        c.ctx.forward(json!({ "type": "finish", "payload": { "output": { "usage": { "inputTokens": 3, "outputTokens": 4, "totalTokens": 7 } } } }));
        Ok(json!(1))
    }))]);
    let (_, ev) = t.go(&w, json!(null));
    assert_eq!(
        ev[2],
        json!({ "type": "workflow-step-output", "runId": "run-1", "from": "USER", "payload": { "stepName": "s", "runId": "run-1", "output": { "type": "custom-event", "status": "pending" } } })
    );
    assert_eq!(
        ev[3],
        json!({ "type": "data-progress", "runId": "run-1", "from": "WORKFLOW", "data": { "pct": 50 }, "transient": true })
    );
    assert_eq!(ev.last().unwrap()["payload"]["output"]["usage"]["totalTokens"], 7);
}

#[test]
fn a_results_text_is_its_json_and_a_successful_finish_carries_it() {
    let t = T::new();
    let ok = wf("ok", vec![Node::Step(t.step("a", add(1)))]);
    let failing = wf("bad", vec![Node::Step(t.step("a", |_| Err(Failure::new("Error", "no \"way\"\n"))))]);
    let pausing = wf(
        "pause",
        vec![Node::Step(t.step("a", |c: &StepCall| {
            c.ctx.suspend(json!({ "why": "ask é" }));
            Ok(Value::Null)
        }))],
    );
    for (w, status) in [(ok, Status::Success), (failing, Status::Failed), (pausing, Status::Suspended)] {
        let (r, ev) = t.go(&w, json!({ "n": 1, "f": -2.5e-7, "s": "x\u{1}" }));
        assert_eq!(r.status, status);
        for state in [false, true] {
            assert_eq!(r.to_text(state), r.to_json(state).to_string());
        }
        let finish = &ev.last().unwrap()["payload"];
        assert_eq!(finish["workflowStatus"], status.as_str());
        match status {
            Status::Success => assert_eq!(finish["finalWorkflowResult"], r.to_json(false)),
            _ => assert!(finish.get("finalWorkflowResult").is_none()),
        }
    }
}

#[test]
fn every_reader_replays_then_follows_and_ends_after_finish() {
    let t = T::new();
    let w = wf("l", vec![Node::Step(t.step("s", add(1)))]);
    let run = t.run_core();
    let mut early = run.log.reader();
    block_on(super::start(run.clone(), w, json!({ "n": 1 }), None)).unwrap();
    let mut late = run.log.reader();
    let read = |r: &mut super::log::LogReader| {
        let mut out = vec![];
        while let Some(e) = block_on(r.next()) {
            out.push(e["type"].as_str().unwrap().to_string());
        }
        out
    };
    let a = read(&mut early);
    assert_eq!(a, read(&mut late));
    assert_eq!(a.last().map(String::as_str), Some("workflow-finish"));
}

#[test]
fn create_run_needs_a_committed_workflow_with_steps_and_a_committed_one_is_closed() {
    let w = WorkflowDef::new("x");
    assert_eq!(w.check_runnable().unwrap_err(), "Workflow 'x' is not committed: call .commit() before .createRun()");
    w.commit();
    assert_eq!(w.check_runnable().unwrap_err(), "Workflow 'x' has no steps: add one with .then(step) before .commit()");
    let t = T::new();
    assert!(w.push(Node::Step(t.step("a", add(1)))).unwrap_err().to_string().contains("is committed"));
}

#[path = "resume_tests.rs"]
mod resume;

#[path = "checks_tests.rs"]
mod checks;
