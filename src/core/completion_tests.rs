//! The completion check on a fake clock: verdicts, the deadline, parallel against in order, the
//! payloads and the feedback text.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use super::*;
use crate::core::env::HttpResponse;
use crate::core::error::AgentError;
use crate::core::wire::HttpRequest;

/// A clock that moves 1 ms each time the test polls and nothing is ready.
#[derive(Default)]
struct Clock(Rc<Cell<f64>>);

impl Env for Clock {
    fn fetch(&self, _req: HttpRequest) -> LocalFuture<'static, Result<HttpResponse, AgentError>> {
        Box::pin(async { Err(AgentError::api("no network here", false)) })
    }
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        let now = self.0.clone();
        let until = now.get() + ms as f64;
        Box::pin(poll_fn(move |_| if now.get() >= until { Poll::Ready(()) } else { Poll::Pending }))
    }
    fn now_ms(&self) -> f64 {
        self.0.get()
    }
    fn new_id(&self) -> String {
        "id".into()
    }
}

/// Scorer `i` answers `replies[i]` (score, or the error it throws) after its delay in ms.
struct Scripted {
    now: Rc<Cell<f64>>,
    replies: Vec<(u64, Result<f64, &'static str>)>,
    started: RefCell<Vec<usize>>,
    completed: RefCell<Vec<Value>>,
}

impl CompletionScorers for Scripted {
    fn score<'a>(&'a self, index: usize, ctx: &'a Value) -> LocalFuture<'a, Result<(f64, Option<String>), String>> {
        self.started.borrow_mut().push(index);
        let (delay, reply) = self.replies[index];
        let until = self.now.get() + delay as f64;
        let now = self.now.clone();
        let text = ctx["currentText"].as_str().unwrap_or_default().to_string();
        Box::pin(poll_fn(move |_| {
            if now.get() < until {
                return Poll::Pending;
            }
            Poll::Ready(reply.map(|s| (s, Some(format!("judged '{text}' {s}")))).map_err(str::to_string))
        }))
    }
    fn completed<'a>(&'a self, result: &'a Value) -> LocalFuture<'a, ()> {
        self.completed.borrow_mut().push(result.clone());
        Box::pin(async {})
    }
}

fn check(replies: Vec<(u64, Result<f64, &'static str>)>, strategy: Strategy, parallel: bool, timeout_ms: u64) -> (CheckResult, Rc<Scripted>) {
    let clock = Clock::default();
    let host = Rc::new(Scripted { now: clock.0.clone(), replies, started: RefCell::default(), completed: RefCell::default() });
    let scorers = (0..host.replies.len()).map(|i| ScorerInfo { id: format!("s{i}"), name: format!("Scorer {i}") }).collect();
    let c = CompletionCheck { scorers, strategy, parallel, timeout_ms, suppress_feedback: false, host: host.clone() };
    let ctx = json!({ "currentText": "draft" });
    let mut fut = pin!(run_check(&c, &ctx, &clock));
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..100_000 {
        if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
            return (r, host);
        }
        clock.0.set(clock.0.get() + 1.0);
    }
    panic!("the check did not end");
}

fn ids(r: &CheckResult) -> Vec<(&str, bool)> {
    r.results.iter().map(|s| (s.id.as_str(), s.passed)).collect()
}

#[test]
fn only_a_score_of_exactly_one_passes_and_all_needs_every_scorer() {
    let (r, _) = check(vec![(1, Ok(1.0)), (2, Ok(0.99))], Strategy::All, true, 1000);
    assert!(!r.passed);
    assert_eq!(ids(&r), [("s0", true), ("s1", false)]);
    let (r, _) = check(vec![(1, Ok(1.0)), (2, Ok(1.0))], Strategy::All, true, 1000);
    assert!(r.passed && !r.timed_out);
    let (r, _) = check(vec![(1, Ok(0.0)), (2, Ok(1.0))], Strategy::Any, true, 1000);
    assert!(r.passed, "any: one pass is enough");
    let (r, _) = check(vec![(1, Ok(0.5)), (2, Err("boom"))], Strategy::Any, true, 1000);
    assert!(!r.passed);
    assert_eq!(r.results[1].reason.as_deref(), Some("boom"));
    assert!(r.results[1].errored && r.results[1].score == 0.0 && !r.results[0].errored);
}

#[test]
fn parallel_starts_every_scorer_and_keeps_their_order_while_in_order_stops_at_the_verdict() {
    let (r, host) = check(vec![(30, Ok(1.0)), (5, Ok(0.0)), (1, Ok(1.0))], Strategy::All, true, 1000);
    assert_eq!(*host.started.borrow(), [0, 1, 2]);
    assert_eq!(ids(&r), [("s0", true), ("s1", false), ("s2", true)], "results in the given order, not the finishing order");
    assert!(r.duration_ms >= 30.0 && r.duration_ms < 40.0, "{}", r.duration_ms);
    let (r, host) = check(vec![(3, Ok(1.0)), (5, Ok(0.0)), (1, Ok(1.0))], Strategy::All, false, 1000);
    assert_eq!(*host.started.borrow(), [0, 1], "all: the first failure decides");
    assert_eq!(ids(&r), [("s0", true), ("s1", false)]);
    assert!(r.results[1].duration_ms >= 5.0 && r.results[1].duration_ms < 8.0);
    let (r, host) = check(vec![(3, Ok(0.0)), (5, Ok(1.0)), (1, Ok(1.0))], Strategy::Any, false, 1000);
    assert_eq!(*host.started.borrow(), [0, 1], "any: the first pass decides");
    assert!(r.passed);
}

#[test]
fn a_scorer_still_running_at_the_deadline_counts_as_errored_and_the_check_as_timed_out() {
    let (r, _) = check(vec![(5, Ok(1.0)), (500, Ok(1.0))], Strategy::All, true, 50);
    assert!(r.timed_out && !r.passed);
    assert_eq!(r.results[0].reason.as_deref(), Some("judged 'draft' 1"));
    let late = &r.results[1];
    assert_eq!((late.score, late.passed, late.errored, late.reason.as_deref()), (0.0, false, true, Some(TIMED_OUT)));
    assert!(r.duration_ms >= 50.0 && r.duration_ms < 55.0, "one deadline for the whole check: {}", r.duration_ms);
    // In order, the deadline is shared by the scorers one after another.
    let (r, host) = check(vec![(30, Ok(1.0)), (30, Ok(1.0)), (1, Ok(1.0))], Strategy::All, false, 50);
    assert_eq!(*host.started.borrow(), [0, 1], "nothing starts after the deadline");
    assert!(r.timed_out);
    assert_eq!(ids(&r), [("s0", true), ("s1", false)]);
    assert_eq!(r.results[1].reason.as_deref(), Some(TIMED_OUT));
}

#[test]
fn the_payloads_name_every_field_and_the_reason_is_the_first_passing_scorers() {
    let (r, _) = check(vec![(1, Ok(0.0)), (2, Ok(1.0))], Strategy::Any, true, 1000);
    let p = r.chunk_payload(2, false, true);
    assert_eq!(p["iteration"], 2);
    assert_eq!(p["passed"], true);
    assert_eq!(p["reason"], "judged 'draft' 1");
    assert_eq!((p["timedOut"].clone(), p["maxIterationReached"].clone(), p["suppressFeedback"].clone()), (json!(false), json!(false), json!(true)));
    let first = &p["results"][0];
    assert_eq!((first["scorerId"].as_str(), first["scorerName"].as_str(), first["score"].as_f64()), (Some("s0"), Some("Scorer 0"), Some(0.0)));
    assert_eq!(first["passed"], false);
    assert!(first.get("errored").is_none() && first["duration"].is_number());
    assert!(p["duration"].is_number());
    let c = r.on_complete_json();
    assert_eq!(c["complete"], true);
    assert_eq!(c["completionReason"], "judged 'draft' 1");
    assert_eq!(c["scorers"], p["results"]);
    assert_eq!(c["totalDuration"], p["duration"]);
    assert_eq!(c["timedOut"], false);
    // None passed: the first result's reason.
    let (r, _) = check(vec![(1, Err("no")), (2, Ok(0.0))], Strategy::All, true, 1000);
    assert_eq!(r.chunk_payload(1, true, false)["reason"], "no");
    assert_eq!(r.chunk_payload(1, true, false)["results"][0]["errored"], true);
}

#[test]
fn the_feedback_lists_each_scorer_and_says_to_continue() {
    let (r, _) = check(vec![(1, Ok(1.0)), (2, Ok(0.25))], Strategy::All, true, 1000);
    let text = r.feedback();
    assert!(text.starts_with("#### Completion Check Results\n"), "{text}");
    assert!(text.contains("Overall: NOT COMPLETE"));
    assert!(text.contains("###### Scorer 0 (s0)\nScore: 1 (passed)\nReason: judged 'draft' 1"), "{text}");
    assert!(text.contains("###### Scorer 1 (s1)\nScore: 0.25 (failed)\nReason: judged 'draft' 0.25"), "{text}");
    assert!(text.ends_with("The task is not complete yet. Continue working on it, using the feedback above."));
    assert!(!text.contains("timed out"));
    let (r, _) = check(vec![(90, Ok(1.0))], Strategy::All, true, 10);
    assert!(r.feedback().contains("The check timed out"));
}

#[test]
fn the_context_has_the_runs_text_calls_and_ids() {
    use crate::core::model::{FinishReason, Usage};
    use crate::core::step::{ResponseInfo, ToolCall};
    use crate::core::tools::{Outcome, ToolResult};
    let call = ToolCall { tool_call_id: "c1".into(), tool_name: "weather".into(), args: json!({ "city": "Paris" }) };
    let step = |text: &str, calls: Vec<ToolCall>| StepResult {
        message_id: "m".into(),
        text: text.into(),
        reasoning: String::new(),
        tool_results: calls.iter().map(|c| ToolResult { call: c.clone(), outcome: Outcome::Result { result: json!("sunny"), is_error: false } }).collect(),
        tool_calls: calls,
        finish_reason: FinishReason::Stop,
        usage: Usage::default(),
        warnings: Vec::new(),
        request_body: String::new(),
        response: ResponseInfo::default(),
        parts: Vec::new(),
        data_parts: Vec::new(),
    };
    let steps = [step("", vec![call]), step("It is sunny.", vec![])];
    let v = context(ContextOf {
        run_id: "r1",
        iteration: 2,
        max_steps: 5,
        original_task: "Weather?",
        steps: &steps,
        messages: json!([]),
        thread_id: Some("t1"),
        resource_id: None,
    });
    assert_eq!(v["iteration"], 2);
    assert_eq!(v["maxIterations"], 5);
    assert_eq!(v["originalTask"], "Weather?");
    assert_eq!(v["currentText"], "It is sunny.");
    assert_eq!(v["primitiveResult"], "It is sunny.");
    assert_eq!(v["toolCalls"], json!([{ "name": "weather", "args": { "city": "Paris" } }]));
    assert_eq!(v["toolResults"], json!([{ "name": "weather", "result": "sunny" }]));
    assert_eq!((v["runId"].as_str(), v["threadId"].as_str()), (Some("r1"), Some("t1")));
    assert!(v.get("resourceId").is_none());
}
