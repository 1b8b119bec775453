use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::tracer::RunFacts;
use super::*;
use crate::core::chunk::Chunk;
use crate::core::env::{Env, HttpResponse, LocalFuture};
use crate::core::error::AgentError;
use crate::core::model::{FinishReason, Usage};
use crate::core::run::RunOutcome;
use crate::core::step::{StepResult, ToolCall};
use crate::core::wire::HttpRequest;

#[derive(Default)]
pub(crate) struct Clock {
    t: Cell<f64>,
    n: Cell<u32>,
}

impl Env for Clock {
    fn fetch(&self, _: HttpRequest) -> LocalFuture<'static, Result<HttpResponse, AgentError>> {
        unreachable!("no fetch in tracing tests")
    }
    fn sleep(&self, _: u64) -> LocalFuture<'static, ()> {
        Box::pin(async {})
    }
    fn now_ms(&self) -> f64 {
        self.t.set(self.t.get() + 1.0);
        1_700_000_000_000.0 + self.t.get()
    }
    fn new_id(&self) -> String {
        self.n.set(self.n.get() + 1);
        format!("id{}", self.n.get())
    }
}

/// The events an exporter got: spans, and score events.
#[derive(Default)]
pub(crate) struct Recorder(pub RefCell<Vec<(EventKind, Span)>>, pub RefCell<Vec<Value>>);

impl SpanExporter for Recorder {
    fn export(&self, kind: EventKind, span: &Span) {
        self.0.borrow_mut().push((kind, span.clone()));
    }
    fn score(&self, event: &Value) {
        self.1.borrow_mut().push(event.clone());
    }
}

pub(crate) fn run_with(rec: &Rc<Recorder>, edit: impl FnOnce(&mut TraceRun)) -> Rc<Tracer> {
    let mut run = TraceRun {
        exporter: rec.clone(),
        trace_id: "0123456789abcdef0123456789abcdef".into(),
        root_id: "00000000000000aa".into(),
        parent_span_id: None,
        external_parent_span_id: None,
        root_name: None,
        agent_id: "helper".into(),
        agent_name: "Helper".into(),
        instructions: Some("Be brief.".into()),
        model_id: "gpt-test".into(),
        provider: "openai".into(),
        tags: vec!["docs".into()],
        metadata: [("runId".to_string(), json!("run1"))].into_iter().collect(),
        root_metadata: Map::new(),
        request_context: None,
        hide_input: false,
        hide_output: false,
        input: json!([{ "role": "user", "content": "hi" }]),
        secrets: vec!["sk-very-secret".into()],
    };
    edit(&mut run);
    Tracer::new(run)
}

fn facts() -> RunFacts<'static> {
    RunFacts { tools: vec![("clock", Some("Tells the time"))], max_steps: 5, thread_id: Some("t1"), parameters: Map::new(), messages: json!([]) }
}

fn step(text: &str, calls: Vec<ToolCall>, reason: FinishReason) -> StepResult {
    StepResult {
        message_id: "m".into(),
        text: text.into(),
        reasoning: String::new(),
        tool_calls: calls,
        finish_reason: reason,
        usage: Usage { input_tokens: Some(3), output_tokens: Some(2), ..Default::default() },
        warnings: vec![],
        request_body: "{}".into(),
        response: Default::default(),
        parts: vec![],
        tool_results: vec![],
        data_parts: vec![],
    }
}

fn call() -> ToolCall {
    ToolCall { tool_call_id: "c1".into(), tool_name: "clock".into(), args: json!({ "zone": "UTC" }) }
}

fn step_start() -> Chunk {
    Chunk::StepStart { message_id: "m".into(), request_body: r#"{"messages":[]}"#.into(), warnings: vec![] }
}

/// A two-step run with one tool call.
fn traced_run(t: &Tracer, env: &Clock, outcome: &RunOutcome, fail_in_tool: bool) {
    t.start_run(facts(), env);
    t.observe(&step_start(), env);
    t.observe(&Chunk::ToolCall(call()), env);
    if fail_in_tool {
        return t.end_run(outcome, env);
    }
    t.observe(&Chunk::ToolResult { call: call(), result: json!("12:00"), is_error: false }, env);
    let s0 = step("", vec![call()], FinishReason::ToolCalls);
    t.observe(&Chunk::StepFinish { step: Box::new(s0), is_continued: true, total_usage: Usage::default() }, env);
    t.observe(&step_start(), env);
    t.observe(&Chunk::TextDelta { id: "x".into(), text: "noon".into() }, env);
    let s1 = step("noon", vec![], FinishReason::Stop);
    t.observe(&Chunk::StepFinish { step: Box::new(s1), is_continued: false, total_usage: Usage::default() }, env);
    t.end_run(outcome, env);
}

/// Checks that every span got one `span_started` before its one `span_ended`, and ended before
/// its parent (when the parent is in the recording); the spans as they ended.
pub(crate) fn well_formed(rec: &Recorder) -> Vec<Span> {
    let events = rec.0.borrow();
    let done = ended(rec);
    for s in &done {
        let count = |k: EventKind| events.iter().filter(|(e, x)| *e == k && x.id == s.id).count();
        assert_eq!((count(EventKind::Started), count(EventKind::Ended)), (1, 1), "{}", s.name);
        let at = |id: &str, k: EventKind| events.iter().position(|(e, x)| *e == k && x.id == id);
        assert!(at(&s.id, EventKind::Started) < at(&s.id, EventKind::Ended), "{} started first", s.name);
        if let Some(p) = s.parent_span_id.as_deref().and_then(|p| at(p, EventKind::Ended)) {
            assert!(at(&s.id, EventKind::Ended).unwrap() < p, "{} ends before its parent", s.name);
        }
    }
    done
}

pub(crate) fn ended(rec: &Recorder) -> Vec<Span> {
    rec.0.borrow().iter().filter(|(k, _)| *k == EventKind::Ended).map(|(_, s)| s.clone()).collect()
}

#[test]
fn a_run_with_a_tool_makes_the_span_tree_and_children_end_before_parents() {
    let rec = Rc::new(Recorder::default());
    let env = Clock::default();
    let t = run_with(&rec, |_| {});
    let outcome = RunOutcome { steps: vec![step("", vec![call()], FinishReason::ToolCalls), step("noon", vec![], FinishReason::Stop)], ..Default::default() };
    traced_run(&t, &env, &outcome, false);
    let events = rec.0.borrow().clone();
    let names: Vec<(&str, &str)> = events.iter().map(|(k, s)| (k.as_str(), s.name.as_str())).collect();
    assert_eq!(
        names,
        [
            ("span_started", "agent run: 'helper'"),
            ("span_started", "llm: 'gpt-test'"),
            ("span_started", "step: 0"),
            ("span_started", "tool: 'clock'"),
            ("span_ended", "tool: 'clock'"),
            ("span_ended", "step: 0"),
            ("span_started", "step: 1"),
            ("span_ended", "step: 1"),
            ("span_ended", "llm: 'gpt-test'"),
            ("span_ended", "agent run: 'helper'"),
        ]
    );
    let by = |name: &str| events.iter().rev().find(|(_, s)| s.name == name).map(|(_, s)| s.clone()).unwrap();
    let (root, gen, s0, tool) = (by("agent run: 'helper'"), by("llm: 'gpt-test'"), by("step: 0"), by("tool: 'clock'"));
    assert_eq!(root.id, "00000000000000aa");
    assert!(root.is_root && root.parent_span_id.is_none());
    assert_eq!(gen.parent_span_id.as_deref(), Some(root.id.as_str()));
    assert_eq!(s0.parent_span_id.as_deref(), Some(gen.id.as_str()));
    assert_eq!(tool.parent_span_id.as_deref(), Some(s0.id.as_str()));
    for s in [&root, &gen, &s0, &tool] {
        assert_eq!(s.trace_id, "0123456789abcdef0123456789abcdef");
        assert_eq!(s.id.len(), 16);
        assert!(s.end_ms.unwrap() >= s.start_ms);
        assert_eq!(s.metadata.get("runId"), Some(&json!("run1")));
        assert!(s.error_info.is_none());
    }
    assert_eq!(root.tags, Some(vec!["docs".to_string()]));
    assert_eq!(gen.tags, None);
    assert_eq!(root.output, Some(json!({ "text": "noon" })));
    assert_eq!(root.attributes.get("availableTools"), Some(&json!(["clock"])));
    assert_eq!(root.attributes.get("conversationId"), Some(&json!("t1")));
    assert_eq!(tool.output, Some(json!("12:00")));
    assert_eq!(tool.attributes.get("success"), Some(&json!(true)));
    assert_eq!(s0.attributes.get("finishReason"), Some(&json!("tool-calls")));
    assert_eq!(s0.attributes.get("isContinued"), Some(&json!(true)));
    assert_eq!(s0.attributes.get("usage"), Some(&json!({ "inputTokens": 3, "outputTokens": 2 })));
    assert_eq!(gen.attributes.get("finishReason"), Some(&json!("stop")));
}

#[test]
fn a_failed_run_ends_every_open_span_with_the_error_and_a_run_without_steps_has_no_generation() {
    let rec = Rc::new(Recorder::default());
    let env = Clock::default();
    let t = run_with(&rec, |_| {});
    let failed = RunOutcome { error: Some(AgentError::api("boom sk-very-secret", false)), ..Default::default() };
    traced_run(&t, &env, &failed, true);
    let done = ended(&rec);
    let names: Vec<&str> = done.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["tool: 'clock'", "step: 0", "llm: 'gpt-test'", "agent run: 'helper'"]);
    for s in &done {
        let e = s.error_info.as_ref().unwrap();
        assert_eq!(e.name, "APICallError");
        assert_eq!(e.message, "boom [REDACTED]");
    }
    // Aborted before the first step: only the root, with an AbortError.
    let rec = Rc::new(Recorder::default());
    let t = run_with(&rec, |_| {});
    t.start_run(facts(), &env);
    t.end_run(&RunOutcome { aborted: Some(Some("user left".into())), ..Default::default() }, &env);
    let done = ended(&rec);
    assert_eq!(done.len(), 1);
    assert_eq!(rec.0.borrow().len(), 2);
    assert_eq!(done[0].error_info.as_ref().map(|e| (e.name.as_str(), e.message.as_str())), Some(("AbortError", "user left")));
}

#[test]
fn handles_make_child_and_event_spans_that_end_with_their_parent() {
    let rec = Rc::new(Recorder::default());
    let env = Clock::default();
    let t = run_with(&rec, |r| r.hide_output = true);
    t.start_run(facts(), &env);
    t.observe(&step_start(), &env);
    t.observe(&Chunk::ToolCall(call()), &env);
    let tool = t.span_of_tool("c1");
    let child = t.child(&tool, SpanOpts { name: Some("lookup".into()), output: Some(json!(1)), ..Default::default() }, false, &env).unwrap();
    t.child(&child, SpanOpts { name: Some("hit".into()), ..Default::default() }, true, &env).unwrap();
    assert!(t.child("ffffffffffffffff", SpanOpts::default(), false, &env).is_none());
    t.observe(&Chunk::ToolResult { call: call(), result: json!(2), is_error: false }, &env);
    let done = ended(&rec);
    let names: Vec<(&str, bool)> = done.iter().map(|s| (s.name.as_str(), s.is_event)).collect();
    assert_eq!(names, [("hit", true), ("lookup", false), ("tool: 'clock'", false)]);
    assert_eq!(done[1].parent_span_id.as_deref(), Some(tool.as_str()));
    assert_eq!(done[1].kind, "generic");
    // hideOutput: no span has an output.
    assert!(rec.0.borrow().iter().all(|(_, s)| s.output.is_none()));
}

#[test]
fn sampling_and_given_ids() {
    assert!(Sampling::Always.keeps(0.99));
    assert!(!Sampling::Never.keeps(0.0));
    assert!(Sampling::Ratio(0.5).keeps(0.49) && !Sampling::Ratio(0.5).keeps(0.5));
    assert_eq!(Sampling::parse(&json!({ "type": "ratio", "probability": 0.25 }), "s"), Ok(Sampling::Ratio(0.25)));
    assert_eq!(Sampling::parse(&Value::Null, "s"), Ok(Sampling::Always));
    assert!(Sampling::parse(&json!({ "type": "ratio", "probability": 2 }), "s").unwrap_err().contains("s.probability"));
    assert!(Sampling::parse(&json!({ "type": "sometimes" }), "s").is_err());
    assert_eq!(padded_id("ABC", 32).unwrap(), format!("{}abc", "0".repeat(29)));
    assert_eq!(padded_id("1", 16).unwrap(), "0000000000000001");
    for bad in ["", "xyz", "00", &"a".repeat(17)] {
        assert_eq!(padded_id(bad, 16), None, "{bad}");
    }
    let mut zero = |b: &mut [u8]| b.fill(0);
    assert_eq!(new_id(8, &mut zero), "0000000000000001");
    let env = Clock::default();
    let a = new_id(16, &mut |b| env.random_bytes(b));
    let b = new_id(16, &mut |b| env.random_bytes(b));
    assert!(a.len() == 32 && a != b && a.bytes().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn redaction_covers_keys_json_strings_headers_secrets_and_key_queries() {
    let secrets = vec!["sk-live-123456".to_string()];
    let mut v = json!({
        "Api Key": "a", "api_key": "b", "password": "c", "token": 1, "name": "kept",
        "Authorization": "Bearer x", "x-goog-api-key": "g",
        "nested": [{ "refresh": "r", "note": "key sk-live-123456 here" }],
        "body": "{\"clientSecret\":\"s\",\"ok\":1}",
        "url": "https://g.example/v1/m?alt=sse&key=AIzaSECRET&x=1",
        "plain": "a monkey=1 is fine",
    });
    redact::redact(&mut v, &secrets);
    assert_eq!(
        v,
        json!({
            "Api Key": "[REDACTED]", "api_key": "[REDACTED]", "password": "[REDACTED]", "token": "[REDACTED]", "name": "kept",
            "Authorization": "[REDACTED]", "x-goog-api-key": "[REDACTED]",
            "nested": [{ "refresh": "[REDACTED]", "note": "key [REDACTED] here" }],
            "body": "{\"clientSecret\":\"[REDACTED]\",\"ok\":1}",
            "url": "https://g.example/v1/m?alt=sse&key=[REDACTED]&x=1",
            "plain": "a monkey=1 is fine",
        })
    );
}

#[test]
fn otlp_body_has_the_field_names_kinds_and_attribute_encodings() {
    let rec = Rc::new(Recorder::default());
    let env = Clock::default();
    let t = run_with(&rec, |r| {
        r.external_parent_span_id = Some("00000000000000ee".into());
        r.root_metadata.insert("functionId".into(), json!("chat-fn"));
        r.root_metadata.insert("telemetry".into(), json!({ "user": "u1" }));
    });
    let failed = RunOutcome { error: Some(AgentError::api("boom", false)), ..Default::default() };
    traced_run(&t, &env, &failed, true);
    let spans = ended(&rec);
    let body = otlp::body(&spans, "svc");
    let rs = &body["resourceSpans"][0];
    let res: Vec<(&str, &str)> = rs["resource"]["attributes"].as_array().unwrap().iter().map(|a| (a["key"].as_str().unwrap(), a["value"]["stringValue"].as_str().unwrap())).collect();
    assert_eq!(res[0], ("service.name", "svc"));
    assert_eq!(res[3], ("telemetry.sdk.language", "webjs"));
    assert_eq!(rs["scopeSpans"][0]["scope"]["name"], "wasm-agent");
    let out = rs["scopeSpans"][0]["spans"].as_array().unwrap();
    let find = |name: &str| out.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("{name} in {out:?}"));
    let root = find("invoke_agent Helper");
    let gen = find("chat gpt-test");
    let tool = find("execute_tool clock");
    find("agent_step Helper");
    assert_eq!(root["parentSpanId"], "00000000000000ee");
    assert_eq!(root["kind"], 1);
    assert_eq!(gen["kind"], 3);
    let start = root["startTimeUnixNano"].as_str().unwrap();
    assert!(start.len() == 19 && start.bytes().all(|b| b.is_ascii_digit()), "{start}");
    assert_eq!(root["status"], json!({ "code": 2, "message": "boom" }));
    assert_eq!(root["events"][0]["name"], "exception");
    assert_eq!(root["events"][0]["attributes"][0], json!({ "key": "exception.type", "value": { "stringValue": "APICallError" } }));
    let attr = |s: &Value, k: &str| s["attributes"].as_array().unwrap().iter().find(|a| a["key"] == k).map(|a| a["value"].clone());
    assert_eq!(attr(root, "gen_ai.agent.id"), Some(json!({ "stringValue": "helper" })));
    assert_eq!(attr(root, "mastra.tags"), Some(json!({ "stringValue": "[\"docs\"]" })));
    assert_eq!(attr(root, "ai.telemetry.functionId"), Some(json!({ "stringValue": "chat-fn" })));
    assert_eq!(attr(tool, "ai.telemetry.functionId"), Some(json!({ "stringValue": "chat-fn" })));
    assert_eq!(attr(root, "ai.telemetry.metadata.user"), Some(json!({ "stringValue": "u1" })));
    assert_eq!(attr(root, "ai.operationId"), Some(json!({ "stringValue": "ai.streamText" })));
    assert_eq!(attr(root, "mastra.metadata.runId"), Some(json!({ "stringValue": "run1" })));
    assert_eq!(attr(gen, "gen_ai.request.model"), Some(json!({ "stringValue": "gpt-test" })));
    assert_eq!(attr(gen, "gen_ai.usage.input_tokens"), Some(json!({ "intValue": "0" })));
    assert_eq!(attr(tool, "gen_ai.tool.call.arguments"), Some(json!({ "stringValue": "{\"zone\":\"UTC\"}" })));
    assert_eq!(otlp::any_value(&json!(["stop"])), json!({ "arrayValue": { "values": [{ "stringValue": "stop" }] } }));
    assert_eq!(otlp::any_value(&json!(0.5)), json!({ "doubleValue": 0.5 }));
    assert_eq!(otlp::any_value(&json!(true)), json!({ "boolValue": true }));
    // A span round-trips through its exported JSON (what OtlpExporter hands back).
    assert_eq!(Span::from_json(&spans[0].to_json()), spans[0]);
}

#[test]
fn sensitive_keys_are_judged_by_ascii_as_unicode_lower_casing_would() {
    for k in ["api-key", "Api Key", "API_KEY", "x-goog-api-key", "Bearer Token", "\u{212A}ey", "pass\u{b7}word"] {
        assert!(redact::is_sensitive(k), "{k}");
    }
    for k in ["apikeys", "tökén", "keys", "model", ""] {
        assert!(!redact::is_sensitive(k), "{k}");
    }
    // What the ASCII reading relies on: no other letter or digit lower-cases to ASCII only.
    let to_ascii: Vec<char> = (0..=0x10FFFFu32)
        .filter_map(char::from_u32)
        .filter(|c| !c.is_ascii() && c.is_alphanumeric() && c.to_lowercase().all(|l| l.is_ascii()))
        .collect();
    assert_eq!(to_ascii, vec!['\u{212A}']);
}

#[cfg(feature = "scorers")]
#[path = "scorer_span_tests.rs"]
mod scorer_spans;
