//! The multi-step loop with tools, natively: calls run and are answered in the provider's
//! format, in call order; concurrency, stop conditions, approval, hooks, client tools, abort.

use std::cell::{Cell, RefCell};

use serde_json::{json, Value};

use super::*;
use crate::core::run::{Hooks, IterationDecision, StepOverrides};
use crate::core::tools::{Approval, Approvals, Decision, ToolCtx, ToolDef, ToolHost, Validation};

/// A tool call event in Chat Completions form (the whole call in one chunk).
pub(super) fn tool_call_event(index: u32, id: &str, name: &str, args: &str) -> String {
    format!(
        r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{index},"id":"{id}","type":"function","function":{{"name":"{name}","arguments":{}}}}}]}}}}]}}"#,
        Value::from(args)
    )
}

pub(super) fn calls_reply(calls: &[(&str, &str, &str)]) -> Reply {
    let mut events: Vec<String> =
        calls.iter().enumerate().map(|(i, (id, name, args))| tool_call_event(i as u32, id, name, args)).collect();
    events.push(finish("tool_calls"));
    ok_stream(&events)
}

pub(super) fn text_reply(text: &str) -> Reply {
    ok_stream(&[delta("content", text), finish("stop")])
}

pub(super) fn tool(name: &str) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: Some(format!("the {name} tool")),
        parameters: json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] }),
        validation: Validation::JsonSchema,
        approval: Approval::Never,
        client: false,
        background: None,
    }
}

/// Tools that answer `{ tool, args }` after `delay` polls each (a call whose args carry
/// `"fail": true` throws), recording how many ran at once.
#[derive(Default)]
pub(super) struct TestHost {
    delay: Vec<u32>,
    started: RefCell<Vec<String>>,
    in_flight: Cell<usize>,
    max_in_flight: Cell<usize>,
    prepare: Option<Box<dyn Fn(usize) -> Option<StepOverrides>>>,
    iteration: Option<Box<dyn Fn(usize) -> IterationDecision>>,
    skip_with: Option<Value>,
    after: RefCell<Vec<String>>,
    pub(super) write_output: bool,
    runner: Option<Rc<dyn crate::core::background::TaskRunner>>,
}

impl TestHost {
    /// The ids of the calls it ran, in order.
    pub(super) fn started_calls(&self) -> std::cell::Ref<'_, Vec<String>> {
        self.started.borrow()
    }
}

impl ToolHost for TestHost {
    fn execute<'a>(&'a self, ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let n = self.started.borrow().len();
            self.started.borrow_mut().push(ctx.call.tool_call_id.clone());
            self.in_flight.set(self.in_flight.get() + 1);
            self.max_in_flight.set(self.max_in_flight.get().max(self.in_flight.get()));
            if self.write_output {
                (ctx.emit)(Chunk::ToolOutput { tool_call_id: ctx.call.tool_call_id.clone(), tool_name: ctx.call.tool_name.clone(), output: json!({ "progress": 50 }) });
                (ctx.emit)(Chunk::Data { kind: "data-progress".into(), data: json!({ "pct": 50 }), id: None, transient: false });
                (ctx.emit)(Chunk::Data { kind: "data-ping".into(), data: json!(1), id: None, transient: true });
                // writer.write of data-* values: kept like writer.custom's, unless transient.
                let written = |output: Value| Chunk::ToolOutput { tool_call_id: ctx.call.tool_call_id.clone(), tool_name: ctx.call.tool_name.clone(), output };
                (ctx.emit)(written(json!({ "type": "data-source", "data": { "name": "met" }, "id": "s1" })));
                (ctx.emit)(written(json!({ "type": "data-tick", "data": 1, "transient": true })));
            }
            let mut left = self.delay.get(n).copied().unwrap_or(0);
            // A yield: pending now, and asks to be polled again (as a real timer's wake would).
            std::future::poll_fn(|cx| {
                if left == 0 {
                    Poll::Ready(())
                } else {
                    left -= 1;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
            .await;
            self.in_flight.set(self.in_flight.get() - 1);
            if ctx.call.args.get("fail").is_some() {
                return Err("the weather service is down".into());
            }
            Ok(json!({ "tool": ctx.call.tool_name, "args": ctx.call.args }))
        })
    }

    fn before_tool_call<'a>(&'a self, _call: &'a ToolCall) -> LocalFuture<'a, Result<Option<Value>, String>> {
        Box::pin(async move {
            match &self.skip_with {
                Some(Value::String(s)) if s == "throw" => Err("not allowed for this user".into()),
                other => Ok(other.clone()),
            }
        })
    }

    fn after_tool_call<'a>(&'a self, result: &'a crate::core::tools::ToolResult) -> LocalFuture<'a, ()> {
        Box::pin(async move { self.after.borrow_mut().push(result.call.tool_call_id.clone()) })
    }

    fn task_runner(&self, _tool: &str) -> Option<Rc<dyn crate::core::background::TaskRunner>> {
        self.runner.clone()
    }
}

impl Hooks for TestHost {
    fn prepare_step<'a>(&'a self, step: usize, _steps: &'a [StepResult]) -> LocalFuture<'a, Result<Option<StepOverrides>, AgentError>> {
        Box::pin(async move { Ok(self.prepare.as_ref().and_then(|p| p(step))) })
    }
    fn iteration_complete<'a>(&'a self, steps: &'a [StepResult], _is_final: bool) -> LocalFuture<'a, IterationDecision> {
        Box::pin(async move { self.iteration.as_ref().map(|f| f(steps.len())).unwrap_or_default() })
    }
}

use crate::core::step::ToolCall;

pub(super) fn with_tools(tools: Vec<ToolDef>) -> RunConfig {
    let mut cfg = config(0, false);
    cfg.tools = tools;
    cfg
}

pub(super) struct Run {
    pub(super) script: Rc<Script>,
    pub(super) sink: Collect,
    pub(super) out: RunOutcome,
}

impl Run {
    pub(super) fn body(&self, i: usize) -> Value {
        serde_json::from_str(&self.script.requests.borrow()[i].body).unwrap()
    }
    pub(super) fn requests(&self) -> usize {
        self.script.requests.borrow().len()
    }
}

pub(super) fn run_with(replies: Vec<Reply>, cfg: RunConfig, host: &TestHost, approvals: &Approvals, tick: impl FnMut(u32, &Collect)) -> Run {
    let script = Rc::new(Script { replies: RefCell::new(replies.into()), ..Default::default() });
    let sink = Collect::default();
    let abort = script.abort.clone();
    let mut tick = tick;
    let out = block_on_ticking(run(cfg, &script, &sink, host, approvals, &abort), |i| tick(i, &sink));
    Run { script, sink, out }
}

pub(super) fn simple(replies: Vec<Reply>, cfg: RunConfig, host: &TestHost) -> Run {
    run_with(replies, cfg, host, &Approvals::default(), |_, _| {})
}

#[test]
fn a_tool_call_runs_and_its_result_goes_back_to_the_model() {
    let host = TestHost::default();
    let r = simple(
        vec![calls_reply(&[("call_1", "weather", r#"{"city":"Paris"}"#)]), text_reply("It is sunny.")],
        with_tools(vec![tool("weather")]),
        &host,
    );
    assert_eq!(
        r.sink.types(),
        [
            "start", "step-start", "tool-call-input-streaming-start", "tool-call-delta", "tool-call-input-streaming-end",
            "tool-call", "tool-result", "step-finish", "step-start", "text-start", "text-delta", "text-end", "step-finish",
            "finish"
        ]
    );
    assert_eq!(r.requests(), 2);
    let msgs = &r.body(1)["messages"];
    let n = msgs.as_array().unwrap().len();
    assert_eq!(msgs[n - 2]["role"], "assistant");
    assert_eq!(msgs[n - 2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(msgs[n - 1]["role"], "tool");
    assert_eq!(msgs[n - 1]["tool_call_id"], "call_1");
    let content: Value = serde_json::from_str(msgs[n - 1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({ "tool": "weather", "args": { "city": "Paris" } }));
    // The tools were offered to the model.
    assert_eq!(r.body(0)["tools"][0]["function"]["name"], "weather");
    assert_eq!(r.out.steps.len(), 2);
    assert_eq!(r.out.text(), "It is sunny.");
    let chunks = r.sink.chunks.borrow();
    let first_finish = chunks.iter().find(|c| c.type_name() == "step-finish").unwrap().payload();
    assert_eq!(first_finish["stepResult"]["isContinued"], true);
    assert_eq!(first_finish["stepResult"]["reason"], "tool-calls");
    let out = r.out.output_json("run1");
    assert_eq!(out["toolResults"][0]["result"]["args"]["city"], "Paris");
    assert_eq!(out["toolCalls"][0]["toolName"], "weather");
    assert_eq!(out["totalUsage"], json!({}), "the scripted replies report no usage");
    assert_eq!(host.after.borrow().as_slice(), ["call_1"]);
}

#[test]
fn parallel_calls_are_answered_in_call_order_whatever_finishes_first() {
    let host = TestHost { delay: vec![30, 5, 10], ..Default::default() };
    let r = simple(
        vec![
            calls_reply(&[("a", "weather", r#"{"city":"A"}"#), ("b", "weather", r#"{"city":"B"}"#), ("c", "weather", r#"{"city":"C"}"#)]),
            text_reply("done"),
        ],
        with_tools(vec![tool("weather")]),
        &host,
    );
    let chunks = r.sink.chunks.borrow();
    let finished: Vec<String> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolResult { call, .. } => Some(call.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["b", "c", "a"], "tool-result chunks come as calls finish");
    let msgs = r.body(1)["messages"].as_array().unwrap().clone();
    let ids: Vec<&str> = msgs.iter().filter(|m| m["role"] == "tool").map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "c"], "the model gets them in call order");
    assert_eq!(host.max_in_flight.get(), 3);
}

#[test]
fn the_concurrency_limit_is_honoured() {
    let host = TestHost { delay: vec![5; 6], ..Default::default() };
    let mut cfg = with_tools(vec![tool("weather")]);
    cfg.tool_call_concurrency = 2;
    let calls: Vec<(String, String)> = (0..6).map(|i| (format!("c{i}"), format!(r#"{{"city":"{i}"}}"#))).collect();
    let refs: Vec<(&str, &str, &str)> = calls.iter().map(|(id, a)| (id.as_str(), "weather", a.as_str())).collect();
    let r = simple(vec![calls_reply(&refs), text_reply("ok")], cfg, &host);
    assert_eq!(host.max_in_flight.get(), 2);
    assert_eq!(host.started.borrow().len(), 6);
    assert_eq!(r.out.steps[0].tool_results.len(), 6);
}

#[test]
fn max_steps_cuts_the_loop_after_that_steps_tools() {
    let host = TestHost::default();
    let mut cfg = with_tools(vec![tool("weather")]);
    cfg.max_steps = 2;
    let call = || calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]);
    let r = simple(vec![call(), call(), call()], cfg, &host);
    assert_eq!(r.requests(), 2);
    assert_eq!(host.started.borrow().len(), 2);
    assert_eq!(r.out.finish_reason(), FinishReason::ToolCalls);
    let last_finish = r.sink.chunks.borrow().iter().rev().find(|c| c.type_name() == "step-finish").unwrap().payload();
    assert_eq!(last_finish["stepResult"]["isContinued"], false);
}

#[test]
fn stop_conditions_end_the_loop() {
    for cond in [StopCondition::StepCount(1), StopCondition::HasToolCall("weather".into())] {
        let host = TestHost::default();
        let mut cfg = with_tools(vec![tool("weather")]);
        cfg.stop_when = vec![cond.clone()];
        let r = simple(vec![calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]), text_reply("never")], cfg, &host);
        assert_eq!(r.requests(), 1, "{cond:?}");
        assert_eq!(r.out.steps[0].tool_results.len(), 1, "the step's tools still ran");
    }
    let host = TestHost::default();
    let mut cfg = with_tools(vec![tool("weather")]);
    cfg.stop_when = vec![StopCondition::HasToolCall("other".into())];
    let r = simple(vec![calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]), text_reply("went on")], cfg, &host);
    assert_eq!(r.requests(), 2);
}

#[test]
fn failures_are_told_to_the_model_and_the_run_goes_on() {
    let host = TestHost::default();
    let r = simple(
        vec![
            calls_reply(&[
                ("u", "nosuch", "{}"),
                ("j", "weather", "{\"city\": \"Par"),
                ("t", "weather", r#"{"city":"P","fail":true}"#),
            ]),
            text_reply("sorry"),
        ],
        with_tools(vec![tool("weather")]),
        &host,
    );
    let chunks = r.sink.chunks.borrow();
    let errors: Vec<(String, String)> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolError { call, message } => Some((call.tool_call_id.clone(), message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 3);
    assert!(errors.iter().any(|(id, m)| id == "u" && m.contains("'nosuch' does not exist")));
    assert!(errors.iter().any(|(id, m)| id == "j" && m.contains("not valid JSON")));
    assert!(errors.iter().any(|(id, m)| id == "t" && m.contains("the weather service is down")));
    assert_eq!(host.started.borrow().as_slice(), ["t"], "bad arguments never reach execute");
    let msgs = r.body(1)["messages"].as_array().unwrap().clone();
    let told: Vec<String> = msgs.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].to_string()).collect();
    assert_eq!(told.len(), 3);
    assert!(told[2].contains("the weather service is down"));
    assert_eq!(r.out.text(), "sorry");
}

#[test]
fn a_client_tool_stops_the_run_at_its_call() {
    let host = TestHost::default();
    let mut ask = tool("askUser");
    ask.client = true;
    let r = simple(vec![calls_reply(&[("q", "askUser", r#"{"city":"?"}"#)]), text_reply("never")], with_tools(vec![ask]), &host);
    assert_eq!(r.requests(), 1);
    assert_eq!(r.out.finish_reason(), FinishReason::ToolCalls);
    assert!(!r.sink.types().contains(&"tool-result") && !r.sink.types().contains(&"tool-error"));
    assert!(host.started.borrow().is_empty());
    assert_eq!(r.out.steps[0].response_messages().len(), 1, "no tool message without a result");
}

#[test]
fn approval_waits_and_each_decision_applies_to_its_own_call() {
    let host = TestHost::default();
    let mut guarded = tool("weather");
    guarded.approval = Approval::Always;
    let approvals = Approvals::default();
    let r = run_with(
        vec![calls_reply(&[("a", "weather", r#"{"city":"A"}"#), ("b", "weather", r#"{"city":"B"}"#)]), text_reply("ok")],
        with_tools(vec![guarded]),
        &host,
        &approvals,
        |i, sink| {
            // Decide some polls after both approval requests were shown: decline b first.
            let asked = sink.types().iter().filter(|t| **t == "tool-call-approval").count();
            if asked == 2 && i == 50 {
                assert!(host.started.borrow().is_empty(), "nothing runs before approval");
                assert!(approvals.decide("b", Decision::Decline { reason: Some("too far".into()) }));
                assert!(!approvals.decide("zzz", Decision::Approve), "unknown ids are refused");
            }
            if asked == 2 && i == 80 {
                assert!(approvals.decide("a", Decision::Approve));
            }
        },
    );
    assert_eq!(host.started.borrow().as_slice(), ["a"]);
    let types = r.sink.types();
    assert!(types.contains(&"tool-output-denied"));
    let denied = r.sink.chunks.borrow().iter().find(|c| c.type_name() == "tool-output-denied").unwrap().payload();
    assert_eq!(denied["toolCallId"], "b");
    assert_eq!(denied["approval"], json!({ "id": "b", "approved": false, "reason": "too far" }));
    let msgs = r.body(1)["messages"].as_array().unwrap().clone();
    let b = msgs.iter().find(|m| m["tool_call_id"] == "b").unwrap();
    assert!(b["content"].as_str().unwrap().contains("declined this tool call: too far"));
}

/// A sink that decides a call the moment its `tool-call-approval` chunk arrives, as a user's
/// `onChunk` does (synchronously, before the loop's next line runs).
struct DecideOnChunk<'a> {
    chunks: Collect,
    approvals: &'a Approvals,
    decision: Decision,
    accepted: Cell<Option<bool>>,
}

impl Sink for DecideOnChunk<'_> {
    fn emit(&self, chunk: Chunk) {
        if let Chunk::ToolCallApproval { call, .. } = &chunk {
            self.accepted.set(Some(self.approvals.decide(&call.tool_call_id, self.decision.clone())));
        }
        self.chunks.emit(chunk);
    }
    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()> {
        self.chunks.step_finished(step)
    }
}

#[test]
fn a_decision_made_while_the_approval_chunk_is_emitted_is_kept() {
    for decision in [Decision::Approve, Decision::Decline { reason: Some("not now".into()) }] {
        let host = TestHost::default();
        let mut guarded = tool("weather");
        guarded.approval = Approval::Always;
        let script = Rc::new(Script {
            replies: RefCell::new(vec![calls_reply(&[("a", "weather", r#"{"city":"A"}"#)]), text_reply("ok")].into()),
            ..Default::default()
        });
        let approvals = Approvals::default();
        let sink = DecideOnChunk { chunks: Collect::default(), approvals: &approvals, decision: decision.clone(), accepted: Cell::new(None) };
        let abort = script.abort.clone();
        let out = block_on(run(with_tools(vec![guarded]), &script, &sink, &host, &approvals, &abort));
        assert_eq!(sink.accepted.get(), Some(true), "{decision:?} is accepted while the chunk is emitted");
        assert!(out.error.is_none() && out.aborted.is_none());
        assert_eq!(out.text(), "ok");
        let types = sink.chunks.types();
        match decision {
            Decision::Approve => {
                assert_eq!(host.started.borrow().as_slice(), ["a"]);
                assert!(types.contains(&"tool-result"));
            }
            Decision::Decline { .. } => {
                assert!(host.started.borrow().is_empty());
                assert!(types.contains(&"tool-output-denied"));
            }
            Decision::Resume(_) => unreachable!(),
        }
        assert!(!approvals.is_waiting("a"));
    }
}

#[test]
fn a_wait_given_up_by_an_abort_refuses_a_late_decision() {
    let host = TestHost::default();
    let mut guarded = tool("weather");
    guarded.approval = Approval::Always;
    let script = Rc::new(Script { replies: RefCell::new(vec![calls_reply(&[("a", "weather", r#"{"city":"A"}"#)])].into()), ..Default::default() });
    let sink = Collect::default();
    let abort = script.abort.clone();
    let approvals = Approvals::default();
    block_on_ticking(run(with_tools(vec![guarded]), &script, &sink, &host, &approvals, &abort), |i| {
        if i == 20 {
            assert!(approvals.is_waiting("a"));
            abort.abort(None);
        }
    });
    assert!(!approvals.is_waiting("a"));
    assert!(!approvals.decide("a", Decision::Approve), "nobody waits for it any more");
}

#[test]
fn abort_while_waiting_for_approval_ends_cleanly() {
    let host = TestHost::default();
    let mut guarded = tool("weather");
    guarded.approval = Approval::Always;
    let script = Rc::new(Script {
        replies: RefCell::new(vec![calls_reply(&[("a", "weather", r#"{"city":"A"}"#)])].into()),
        ..Default::default()
    });
    let sink = Collect::default();
    let abort = script.abort.clone();
    let approvals = Approvals::default();
    let out = block_on_ticking(run(with_tools(vec![guarded]), &script, &sink, &host, &approvals, &abort), |i| {
        if i == 20 {
            abort.abort(Some("stop".into()));
        }
    });
    assert_eq!(*sink.types().last().unwrap(), "abort");
    assert!(out.steps.is_empty());
    assert!(host.started.borrow().is_empty());
    let partial = out.partial.unwrap();
    assert!(partial.tool_results.is_empty(), "a call without its result is never kept");
}

#[test]
fn prepare_step_changes_show_in_that_steps_request() {
    let host = TestHost {
        prepare: Some(Box::new(|step| {
            (step == 1).then(|| StepOverrides {
                settings: Some(crate::core::model::ModelSettings { temperature: Some(0.0), ..Default::default() }),
                active_tools: Some(vec![]),
                tool_choice: Some(crate::core::model::ToolChoice::None),
                system: Some(vec!["Answer in French.".into()]),
                ..Default::default()
            })
        })),
        ..Default::default()
    };
    let mut cfg = with_tools(vec![tool("weather")]);
    cfg.request.messages.insert(0, ModelMessage::System("Be brief.".into()));
    let r = simple(vec![calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]), text_reply("Il fait beau.")], cfg, &host);
    let (first, second) = (r.body(0), r.body(1));
    assert_eq!(first["messages"][0]["content"], "Be brief.");
    assert!(first.get("temperature").is_none());
    assert_eq!(second["messages"][0]["content"], "Answer in French.");
    assert_eq!(second["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "system").count(), 1);
    assert_eq!(second["temperature"], 0.0);
    assert!(second.get("tools").is_none(), "no active tools: none offered");
}

#[test]
fn before_hook_can_skip_execute_and_iteration_hook_can_stop_or_add_feedback() {
    let host = TestHost { skip_with: Some(json!({ "cached": true })), ..Default::default() };
    let r = simple(vec![calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]), text_reply("ok")], with_tools(vec![tool("weather")]), &host);
    assert!(host.started.borrow().is_empty());
    assert_eq!(r.out.steps[0].tool_results[0].model_result().unwrap().0, json!({ "cached": true }));

    let stop = TestHost { iteration: Some(Box::new(|_| IterationDecision { stop: true, feedback: None })), ..Default::default() };
    let r = simple(vec![calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]), text_reply("never")], with_tools(vec![tool("weather")]), &stop);
    assert_eq!(r.requests(), 1);

    let feedback = TestHost {
        iteration: Some(Box::new(|n| IterationDecision { stop: false, feedback: (n == 1).then(|| "Be more specific.".into()) })),
        ..Default::default()
    };
    let r = simple(vec![text_reply("vague"), text_reply("specific")], config(0, false), &feedback);
    assert_eq!(r.requests(), 2, "feedback runs another iteration");
    let msgs = r.body(1)["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.last().unwrap()["content"], "Be more specific.");
    assert_eq!(r.out.text(), "vaguespecific");
}

#[test]
fn tool_output_and_data_chunks_stream_and_non_transient_data_is_kept() {
    let host = TestHost { write_output: true, ..Default::default() };
    let r = simple(vec![calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]), text_reply("ok")], with_tools(vec![tool("weather")]), &host);
    let types = r.sink.types();
    let pos = |t: &str| types.iter().position(|x| *x == t).unwrap();
    assert!(pos("tool-output") < pos("tool-result"));
    let out = r.sink.chunks.borrow().iter().find(|c| c.type_name() == "tool-output").unwrap().clone();
    assert_eq!(out.from(), "USER");
    assert_eq!(out.payload(), json!({ "toolCallId": "x", "toolName": "weather", "output": { "progress": 50 } }));
    assert_eq!(types.iter().filter(|t| **t == "data").count(), 2);
    assert_eq!(
        r.out.steps[0].data_parts,
        vec![json!({ "type": "data-progress", "data": { "pct": 50 } }), json!({ "type": "data-source", "data": { "name": "met" }, "id": "s1" })]
    );
}

#[test]
fn require_tool_approval_applies_to_every_call() {
    let host = TestHost::default();
    let approvals = Approvals::default();
    let mut cfg = with_tools(vec![tool("weather")]);
    cfg.require_tool_approval = true;
    let r = run_with(vec![calls_reply(&[("a", "weather", r#"{"city":"A"}"#)]), text_reply("ok")], cfg, &host, &approvals, |i, _| {
        if i == 10 {
            assert!(approvals.is_waiting("a"));
            approvals.decide("a", Decision::Approve);
        }
    });
    assert_eq!(host.started.borrow().as_slice(), ["a"]);
    assert!(r.sink.types().contains(&"tool-call-approval"));
}

#[test]
fn a_throwing_before_hook_fails_the_call_instead_of_letting_it_through() {
    let host = TestHost { skip_with: Some(json!("throw")), ..Default::default() };
    let r = simple(vec![calls_reply(&[("x", "weather", r#"{"city":"P"}"#)]), text_reply("ok")], with_tools(vec![tool("weather")]), &host);
    assert!(host.started.borrow().is_empty());
    assert!(matches!(&r.out.steps[0].tool_results[0].outcome, crate::core::tools::Outcome::Error(m) if m == "not allowed for this user"));
}

mod background {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use serde_json::{json, Value};

    use super::*;
    use crate::core::background::{BackgroundConfig, Manager, TaskRecord, TaskRunner, TaskRuntime, TaskStatus};
    use crate::core::memory::{InMemoryStore, MemoryRun, MessageQuery, Store};
    use crate::core::run::BackgroundRun;

    /// Spawned futures polled by the test, and timers it fires.
    #[derive(Default)]
    struct Rt {
        spawned: RefCell<Vec<LocalFuture<'static, ()>>>,
        release: Rc<Cell<bool>>,
    }

    impl TaskRuntime for Rt {
        fn spawn(&self, fut: LocalFuture<'static, ()>) {
            self.spawned.borrow_mut().push(fut);
        }
        fn sleep(&self, _ms: u64) -> LocalFuture<'static, ()> {
            Box::pin(std::future::pending())
        }
        fn now_ms(&self) -> f64 {
            0.0
        }
        fn new_id(&self) -> String {
            "bg1".into()
        }
    }

    impl Rt {
        fn poll_all(&self) {
            let mut cx = Context::from_waker(Waker::noop());
            let mut futs: Vec<LocalFuture<'static, ()>> = std::mem::take(&mut *self.spawned.borrow_mut());
            futs.retain_mut(|f| f.as_mut().poll(&mut cx).is_pending());
            self.spawned.borrow_mut().extend(futs);
        }
    }

    /// A research tool that finishes when the test releases it.
    struct Research(Rc<Cell<bool>>);

    impl TaskRunner for Research {
        fn execute(&self, task: TaskRecord, _abort: AbortFlag, _emit: Rc<dyn Fn(Value)>) -> LocalFuture<'static, Result<Value, String>> {
            let release = self.0.clone();
            Box::pin(async move {
                std::future::poll_fn(|_| if release.get() { Poll::Ready(()) } else { Poll::Pending }).await;
                Ok(json!({ "report": format!("all about {}", task.args["city"].as_str().unwrap_or("?")) }))
            })
        }
    }

    #[test]
    fn an_eligible_call_goes_to_the_background_and_its_result_lands_in_memory() {
        let rt = Rc::new(Rt::default());
        let manager = Manager::new(BackgroundConfig { enabled: true, all_tools: true, ..Default::default() }, rt.clone());
        let store = Rc::new(InMemoryStore::new());
        let host = TestHost { runner: Some(Rc::new(Research(rt.release.clone()))), ..Default::default() };
        let mut cfg = with_tools(vec![tool("research")]);
        cfg.background = Some(BackgroundRun { manager: manager.clone(), agent_id: "agent".into() });
        cfg.memory = Some(MemoryRun {
            store: store.clone(),
            thread_id: "t1".into(),
            resource_id: "u1".into(),
            title: None,
            metadata: None,
            config: Default::default(),
            save_per_step: false,
            indexer: None,
        });
        let r = simple(vec![calls_reply(&[("c1", "research", r#"{"city":"Lima"}"#)]), text_reply("I started the research.")], cfg, &host);
        let types = r.sink.types();
        let at = |t: &str| types.iter().position(|x| *x == t).unwrap_or_else(|| panic!("no {t} in {types:?}"));
        assert!(at("tool-call") < at("background-task-started") && at("background-task-started") < at("tool-result"));
        assert!(host.started.borrow().is_empty(), "the tool did not run in the foreground");
        let told = r.body(1)["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string();
        assert!(told.contains("\"status\":\"running\"") && told.contains("backgroundTaskId"), "{told}");
        assert_eq!(manager.list(Some("t1"), Some(TaskStatus::Running)).len(), 1, "the task outlives the run");
        let q = MessageQuery { thread_id: "t1".into(), last: None, before: None };
        let inv = |s: &InMemoryStore| {
            let msgs = block_on(s.list_messages(&q)).unwrap();
            msgs[1].parts.iter().find(|p| p["type"] == "tool-invocation").unwrap()["toolInvocation"]["result"].clone()
        };
        assert_eq!(inv(&store)["status"], "running", "the placeholder is stored while the task runs");
        rt.release.set(true);
        rt.poll_all();
        rt.poll_all();
        assert_eq!(inv(&store), json!({ "report": "all about Lima" }), "the real result replaced the placeholder");
        assert_eq!(manager.list(None, Some(TaskStatus::Completed)).len(), 1);
    }
}
