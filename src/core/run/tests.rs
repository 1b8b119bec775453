//! The step loop driven by scripted responses and a fake clock: chunk order, aggregates,
//! retries and their waits, abort, broken streams.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::*;
use crate::core::error::AgentError;
use crate::core::env::{Body, Env, HttpResponse, LocalFuture};
use crate::core::model::{FinishReason, ModelMessage, UserPart};
use crate::core::tools::Approvals;
use crate::core::wire::Api;
use crate::testing::{endpoint, http_model};
use serde_json::{json, Value};
use crate::core::transport::{SocketError, SocketRequest};

/// Polls a future to completion. Scripted futures are ready at once (or wait on the abort flag,
/// which the script itself sets), so a bounded busy loop is enough.
fn block_on<F: Future>(f: F) -> F::Output {
    block_on_ticking(f, |_| {})
}

/// `block_on` that calls `tick` between polls, for tests that act while the run waits.
fn block_on_ticking<F: Future>(f: F, mut tick: impl FnMut(u32)) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..100_000 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        tick(i);
    }
    panic!("the run did not finish");
}

/// What one scripted body read does.
#[derive(Clone)]
enum Read {
    Bytes(Vec<u8>),
    /// Sets the abort flag, then never completes.
    AbortAndHang,
}

enum Reply {
    Http { status: u16, headers: Vec<(String, String)>, reads: Vec<Read> },
    NetworkError,
}

#[derive(Default)]
struct Script {
    replies: RefCell<VecDeque<Reply>>,
    requests: RefCell<Vec<crate::core::wire::HttpRequest>>,
    sleeps: RefCell<Vec<u64>>,
    ids: Cell<u32>,
    abort: AbortFlag,
    /// Called with the request number as each request is sent.
    on_fetch: RefCell<Option<OnFetch>>,
    /// Socket calls: what was sent, the scripted outcomes (none left: no WebSocket here), and
    /// the runs whose sockets were released.
    sockets: RefCell<Vec<SocketRequest>>,
    socket_replies: RefCell<VecDeque<Result<Reply, SocketError>>>,
    released: RefCell<Vec<String>>,
}

type OnFetch = Box<dyn Fn(usize)>;

struct ScriptBody {
    reads: VecDeque<Read>,
    abort: AbortFlag,
}

impl Body for ScriptBody {
    fn read(&mut self) -> LocalFuture<'_, Result<Option<Vec<u8>>, AgentError>> {
        match self.reads.pop_front() {
            None => Box::pin(async { Ok(None) }),
            Some(Read::Bytes(b)) => Box::pin(async move { Ok(Some(b)) }),
            Some(Read::AbortAndHang) => {
                self.abort.abort(Some("user stopped".into()));
                Box::pin(std::future::pending())
            }
        }
    }
}

impl Env for Rc<Script> {
    fn fetch(&self, req: crate::core::wire::HttpRequest) -> LocalFuture<'static, Result<HttpResponse, AgentError>> {
        self.requests.borrow_mut().push(req);
        if let Some(f) = self.on_fetch.borrow().as_ref() {
            f(self.requests.borrow().len() - 1);
        }
        let reply = self.replies.borrow_mut().pop_front().expect("a scripted reply for every request");
        let abort = self.abort.clone();
        Box::pin(async move {
            match reply {
                Reply::NetworkError => Err(AgentError::api("Could not reach the model API: connection refused", true)),
                Reply::Http { status, headers, reads } => Ok(HttpResponse {
                    status,
                    headers,
                    body: Box::new(ScriptBody { reads: reads.into(), abort }),
                }),
            }
        })
    }
    fn socket(&self, req: SocketRequest) -> LocalFuture<'static, Result<HttpResponse, SocketError>> {
        self.sockets.borrow_mut().push(req);
        let abort = self.abort.clone();
        let reply = self.socket_replies.borrow_mut().pop_front();
        Box::pin(async move {
            match reply {
                None => Err(SocketError::Unavailable(AgentError::api("This runtime has no WebSocket", false))),
                Some(Err(e)) => Err(e),
                Some(Ok(Reply::Http { status, headers, reads })) => {
                    Ok(HttpResponse { status, headers, body: Box::new(ScriptBody { reads: reads.into(), abort }) })
                }
                Some(Ok(Reply::NetworkError)) => Err(SocketError::Failed(AgentError::api("socket closed", true))),
            }
        })
    }
    fn release_sockets(&self, run_id: &str) {
        self.released.borrow_mut().push(run_id.to_owned());
    }
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        self.sleeps.borrow_mut().push(ms);
        Box::pin(async {})
    }
    fn now_ms(&self) -> f64 {
        1_700_000_000_000.0
    }
    fn new_id(&self) -> String {
        // Unique across runs too, as real ids are: memory tests store several runs' messages.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        self.ids.set(self.ids.get() + 1);
        format!("id{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

#[derive(Default)]
struct Collect {
    chunks: RefCell<Vec<Chunk>>,
    steps_seen: Cell<u32>,
}

impl Sink for Collect {
    fn emit(&self, chunk: Chunk) {
        self.chunks.borrow_mut().push(chunk);
    }
    fn step_finished<'a>(&'a self, _step: &'a StepResult) -> LocalFuture<'a, ()> {
        self.steps_seen.set(self.steps_seen.get() + 1);
        Box::pin(async {})
    }
}

impl Collect {
    fn types(&self) -> Vec<&'static str> {
        self.chunks.borrow().iter().map(Chunk::type_name).collect()
    }
}

fn sse(events: &[&str]) -> Vec<u8> {
    let mut s = String::new();
    for e in events {
        s.push_str("data: ");
        s.push_str(e);
        s.push_str("\n\n");
    }
    s.into_bytes()
}

fn delta(field: &str, text: &str) -> String {
    format!(r#"{{"id":"c1","model":"m1","created":1700000000,"choices":[{{"index":0,"delta":{{"{field}":{}}}}}]}}"#, serde_json::Value::from(text))
}

fn finish(reason: &str) -> String {
    format!(r#"{{"id":"c1","choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#)
}

const USAGE: &str = r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#;

fn ok_stream(events: &[String]) -> Reply {
    let mut all: Vec<&str> = events.iter().map(String::as_str).collect();
    all.push("[DONE]");
    Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(sse(&all))] }
}

fn status(code: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Http {
        status: code,
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        reads: vec![Read::Bytes(body.as_bytes().to_vec())],
    }
}

fn config(max_retries: u32, include_raw: bool) -> RunConfig {
    RunConfig {
        run_id: "run1".into(),
        model: http_model(endpoint(Api::Chat)),
        request: crate::core::model::ModelRequest {
            model_id: "m1".into(),
            messages: vec![ModelMessage::User(vec![UserPart::Text("hi".into())])],
            ..Default::default()
        },
        max_retries,
        include_raw,
        max_steps: 5,
        tools: vec![],
        active_tools: None,
        tool_choice: None,
        require_tool_approval: false,
        tool_call_concurrency: 10,
        stop_when: vec![],
        input_start: 0,
        input_ids: vec![],
        memory: None,
        transport: Transport::Fetch,
        title: None,
        background: None,
        setting_warnings: vec![],
        structured: None,
        processors: Default::default(),
        delegation: None,
        scoring: false,
        completion: None,
        runs: None,
        resume: None,
        tracing: None,
    }
}

fn run_script(replies: Vec<Reply>, cfg: RunConfig) -> (Rc<Script>, Collect, RunOutcome) {
    let script = Rc::new(Script { replies: RefCell::new(replies.into()), ..Default::default() });
    let sink = Collect::default();
    let abort = script.abort.clone();
    let outcome = block_on(run(cfg, &script, &sink, &NoHooks, &Approvals::default(), &abort));
    (script, sink, outcome)
}

#[test]
fn a_plain_reply_streams_in_the_specified_order() {
    let (script, sink, out) = run_script(
        vec![ok_stream(&[delta("content", "Hel"), delta("content", "lo"), finish("stop"), USAGE.into()])],
        config(0, false),
    );
    assert_eq!(
        sink.types(),
        ["start", "step-start", "text-start", "text-delta", "text-delta", "text-end", "step-finish", "finish"]
    );
    assert_eq!(out.text(), "Hello");
    assert_eq!(out.finish_reason(), FinishReason::Stop);
    assert_eq!(out.total_usage.total_tokens, Some(10));
    assert_eq!(out.steps.len(), 1);
    assert_eq!(sink.steps_seen.get(), 1);
    assert_eq!(script.requests.borrow().len(), 1);
    let chunks = sink.chunks.borrow();
    // Deltas carry the id of their text-start.
    let Chunk::TextStart { id } = &chunks[2] else { panic!() };
    assert!(matches!(&chunks[3], Chunk::TextDelta { id: d, text } if d == id && text == "Hel"));
    assert!(matches!(&chunks[5], Chunk::TextEnd { id: e } if e == id));
    let finish = chunks.last().unwrap().payload();
    assert_eq!(finish["stepResult"]["reason"], "stop");
    assert_eq!(finish["totalUsage"]["inputTokens"], 7);
    let step = chunks[6].payload();
    assert_eq!(step["output"]["text"], "Hello");
    assert_eq!(step["metadata"]["modelId"], "m1");
}

#[test]
fn reasoning_is_closed_before_text_starts() {
    let (_, sink, out) = run_script(
        vec![ok_stream(&[
            delta("reasoning_content", "think"),
            delta("reasoning_content", "ing"),
            delta("content", "answer"),
            finish("stop"),
        ])],
        config(0, false),
    );
    assert_eq!(
        sink.types(),
        [
            "start", "step-start", "reasoning-start", "reasoning-delta", "reasoning-delta", "reasoning-end",
            "text-start", "text-delta", "text-end", "step-finish", "finish"
        ]
    );
    assert_eq!(out.reasoning_text(), "thinking");
    assert_eq!(out.output_json("run1")["reasoningText"], "thinking");
}

#[test]
fn streamed_tool_calls_become_tool_call_chunks() {
    let call = |args: &str, head: bool| {
        let head = if head { r#""id":"call_1","type":"function","function":{"name":"weather","arguments":"#.to_string() } else { r#""function":{"arguments":"#.into() };
        format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,{head}{}}}}}]}}}}]}}"#, serde_json::Value::from(args))
    };
    let mut cfg = config(0, false);
    cfg.max_steps = 1;
    let (_, sink, out) = run_script(
        vec![ok_stream(&[call("", true), call("{\"ci", false), call("ty\":\"Paris\"}", false), finish("tool_calls")])],
        cfg,
    );
    // No tool of that name exists here: the call ends in a tool-error the model would be told.
    assert_eq!(
        sink.types(),
        [
            "start", "step-start", "tool-call-input-streaming-start", "tool-call-delta", "tool-call-delta",
            "tool-call-input-streaming-end", "tool-call", "tool-error", "step-finish", "finish"
        ]
    );
    assert_eq!(out.finish_reason(), FinishReason::ToolCalls);
    let tc = &out.steps[0].tool_calls[0];
    assert_eq!((tc.tool_call_id.as_str(), tc.tool_name.as_str()), ("call_1", "weather"));
    assert_eq!(tc.args, serde_json::json!({ "city": "Paris" }));
}

#[test]
fn raw_chunks_only_when_asked() {
    let events = [delta("content", "a"), finish("stop")];
    let (_, plain, _) = run_script(vec![ok_stream(&events)], config(0, false));
    assert!(!plain.types().contains(&"raw"));
    let (_, raw, _) = run_script(vec![ok_stream(&events)], config(0, true));
    assert_eq!(raw.types().iter().filter(|t| **t == "raw").count(), 2);
}

#[test]
fn every_split_of_the_body_gives_the_same_chunks() {
    let body = sse(&[&delta("content", "héllo 🌍"), &delta("content", " wörld"), &finish("stop"), "[DONE]"]);
    // Chunks as text with the run's message id taken out (each run gets a fresh one).
    let shown = |sink: &Collect, out: &RunOutcome| format!("{:?}", sink.chunks.borrow()).replace(&out.message_id, "ID");
    let whole = {
        let reply = Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(body.clone())] };
        let (_, sink, out) = run_script(vec![reply], config(0, false));
        shown(&sink, &out)
    };
    for cut in 1..body.len() {
        let reads = vec![Read::Bytes(body[..cut].to_vec()), Read::Bytes(body[cut..].to_vec())];
        let (_, sink, out) = run_script(vec![Reply::Http { status: 200, headers: vec![], reads }], config(0, false));
        assert_eq!(out.text(), "héllo 🌍 wörld", "split at {cut}");
        assert_eq!(shown(&sink, &out), whole, "split at {cut}");
    }
}

#[test]
fn retries_back_off_from_one_second_doubling() {
    let replies = vec![status(503, &[], "busy"), status(500, &[], "oops"), Reply::NetworkError, ok_stream(&[delta("content", "ok"), finish("stop")])];
    let (script, sink, out) = run_script(replies, config(3, false));
    assert_eq!(*script.sleeps.borrow(), [1000, 2000, 4000]);
    assert_eq!(script.requests.borrow().len(), 4);
    assert_eq!(out.text(), "ok");
    // Failed attempts before the response leave no trace in the stream.
    assert_eq!(sink.types().iter().filter(|t| **t == "step-start").count(), 1);
}

#[test]
fn retry_after_is_honoured_and_capped() {
    for (headers, want) in [
        (vec![("retry-after", "3")], 3000),
        (vec![("retry-after", "120")], 30_000),
        (vec![("retry-after-ms", "250"), ("retry-after", "9")], 250),
        // HTTP dates count from the clock (Tue, 14 Nov 2023 22:13:20 GMT); a date past means now.
        (vec![("retry-after", "Tue, 14 Nov 2023 22:13:27 GMT")], 7000),
        (vec![("retry-after", "Tuesday, 14-Nov-23 22:13:25 GMT")], 5000),
        (vec![("retry-after", "Tue Nov 14 22:13:24 2023")], 4000),
        (vec![("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT")], 30_000),
        (vec![("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")], 0),
        (vec![("retry-after", "Wed, 21 Oct 2015 07:28 GMT")], 1000),
    ] {
        let (script, _, out) =
            run_script(vec![status(429, &headers, "{}"), ok_stream(&[finish("stop")])], config(1, false));
        assert_eq!(*script.sleeps.borrow(), [want], "{headers:?}");
        assert!(out.error.is_none());
    }
}

#[test]
fn a_500_whose_body_is_an_event_stream_quotes_the_servers_message() {
    let body = "data: {\"error\": {\"message\": \"Error processing stream start\", \"type\": \"None\", \"code\": \"500\"}}\n\ndata: [DONE]\n\n";
    let (_, _, out) = run_script(vec![status(500, &[("content-type", "text/event-stream")], body)], config(0, false));
    let err = out.error.unwrap();
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.body(), Some(body));
    assert!(err.to_string().starts_with("The model API answered 500: Error processing stream start ("), "{err}");
    // A body that is neither JSON nor events with an error is not quoted.
    let (_, _, plain) = run_script(vec![status(500, &[], "data: [DONE]\n")], config(0, false));
    assert!(plain.error.unwrap().to_string().starts_with("The model API answered 500 (the provider failed"));
}

#[test]
fn client_errors_are_not_retried_and_say_what_the_server_said() {
    let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
    let (script, sink, out) = run_script(vec![status(401, &[], body)], config(5, false));
    assert_eq!(script.requests.borrow().len(), 1);
    assert!(script.sleeps.borrow().is_empty());
    assert_eq!(sink.types(), ["start", "step-start", "error"]);
    let err = out.error.clone().unwrap();
    assert_eq!(err.name(), "APICallError");
    assert_eq!(err.status(), Some(401));
    assert_eq!(err.body(), Some(body));
    assert!(err.to_string().contains("Incorrect API key provided"), "{err}");
    assert!(!err.to_string().contains("sk-secret"));
    assert_eq!(out.finish_reason(), FinishReason::Error);
}

#[test]
fn exhausted_retries_say_how_many_attempts_were_made() {
    let (script, _, out) = run_script(vec![status(503, &[], ""), status(503, &[], ""), status(503, &[], "")], config(2, false));
    assert_eq!(script.requests.borrow().len(), 3);
    let msg = out.error.unwrap().to_string();
    assert!(msg.contains("503") && msg.contains("failed after 3 attempts"), "{msg}");
}

#[test]
fn abort_mid_stream_ends_with_an_abort_chunk_and_keeps_what_was_seen() {
    let first = sse(&[&delta("content", "partial ")]);
    let reply = Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(first), Read::AbortAndHang] };
    let (_, sink, out) = run_script(vec![reply], config(0, false));
    assert_eq!(sink.types(), ["start", "step-start", "text-start", "text-delta", "text-end", "abort"]);
    assert_eq!(out.aborted, Some(Some("user stopped".into())));
    assert_eq!(out.finish_reason(), FinishReason::Abort);
    assert!(out.steps.is_empty());
    assert_eq!(out.partial.as_ref().unwrap().text, "partial ");
    assert_eq!(out.output_json("run1")["text"], "partial ");
}

/// A sink whose `step_finished` (onStepFinish) never settles.
#[derive(Default)]
struct StuckStepFinish(Collect);

impl Sink for StuckStepFinish {
    fn emit(&self, chunk: Chunk) {
        self.0.emit(chunk);
    }
    fn step_finished<'a>(&'a self, _step: &'a StepResult) -> LocalFuture<'a, ()> {
        Box::pin(std::future::pending())
    }
}

#[test]
fn abort_ends_a_run_that_waits_on_a_step_finish_that_never_settles() {
    let script = Rc::new(Script { replies: RefCell::new(vec![ok_stream(&[delta("content", "done"), finish("stop")])].into()), ..Default::default() });
    let sink = StuckStepFinish::default();
    let abort = script.abort.clone();
    let out = block_on_ticking(run(config(0, false), &script, &sink, &NoHooks, &Approvals::default(), &abort), |i| {
        if i == 10 {
            abort.abort(Some("user stopped".into()));
        }
    });
    assert_eq!(sink.0.types().last().copied(), Some("abort"));
    assert!(sink.0.types().contains(&"step-finish"));
    assert_eq!(out.finish_reason(), FinishReason::Abort);
    assert_eq!(out.text(), "done", "the complete step is kept");
}

#[test]
fn a_stream_cut_before_the_finish_is_an_error() {
    let reply = Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(sse(&[&delta("content", "half")]))] };
    let (_, sink, out) = run_script(vec![reply], config(3, false));
    assert_eq!(sink.types(), ["start", "step-start", "text-start", "text-delta", "text-end", "error"]);
    assert!(out.error.unwrap().to_string().contains("closed before the model finished"));
}

#[test]
fn an_error_event_inside_the_stream_fails_the_run() {
    let err = r#"{"error":{"message":"The server had an error","type":"server_error"}}"#;
    let (_, sink, out) = run_script(vec![ok_stream(&[delta("content", "a"), err.into()])], config(0, false));
    assert_eq!(*sink.types().last().unwrap(), "error");
    assert!(out.error.unwrap().to_string().contains("The server had an error"));
}

#[test]
fn invalid_json_in_the_stream_is_a_clear_error() {
    let reply = Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(b"data: {not json\n\n".to_vec())] };
    let (_, _, out) = run_script(vec![reply], config(0, false));
    assert!(out.error.unwrap().to_string().contains("not valid JSON"));
}

#[test]
fn retry_delays_grow_without_overflow() {
    let e = AgentError::api("x", true);
    assert_eq!(retry_delay_ms(0, &e), 1000);
    assert_eq!(retry_delay_ms(4, &e), 16_000);
    assert!(retry_delay_ms(63, &e) > 0);
}

#[test]
fn an_api_key_quoted_by_an_error_is_redacted() {
    let body = r#"{"error":{"message":"key sk-secret is not valid"}}"#;
    let (_, sink, out) = run_script(vec![status(401, &[], body)], config(0, false));
    let err = out.error.unwrap();
    assert!(!err.to_string().contains("sk-secret") && !err.body().unwrap().contains("sk-secret"), "{err}");
    assert!(!format!("{:?}", sink.chunks.borrow()).contains("sk-secret"));
}

/// A config whose headers carry secrets from the model config and from `modelSettings`, beside
/// one that carries none (`x-team`).
fn config_with_secret_headers() -> RunConfig {
    let mut cfg = config(0, false);
    let mut at = endpoint(Api::Chat);
    at.headers = vec![("X-Api-Key".into(), "model-key-1234".into()), ("x-team".into(), "team-alpha".into())];
    cfg.model = http_model(at);
    cfg.request.settings.headers = vec![
        ("Authorization".into(), "Bearer settings-token-5678".into()),
        ("cookie".into(), "session=cookie-value-9".into()),
        ("x-goog-api-key".into(), "goog-key-42".into()),
        ("x-client-secret".into(), "shh-secret-0".into()),
    ];
    cfg
}

const SECRETS: [&str; 6] = ["sk-secret", "model-key-1234", "settings-token-5678", "cookie-value-9", "goog-key-42", "shh-secret-0"];

/// The error and every chunk of a run hold none of `SECRETS`; the header without one is kept.
fn assert_no_secrets(sink: &Collect, out: &RunOutcome) {
    let err = out.error.clone().expect("the run failed");
    let shown = format!("{err} {} {:?}", err.body().unwrap_or_default(), sink.chunks.borrow());
    for secret in SECRETS {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(shown.contains("[redacted]"), "{shown}");
}

#[test]
fn secret_headers_echoed_by_an_error_response_are_redacted() {
    let echo = "x-api-key: model-key-1234, authorization: Bearer settings-token-5678 (token settings-token-5678), \
        cookie: session=cookie-value-9, x-goog-api-key: goog-key-42, x-client-secret: shh-secret-0, x-team: team-alpha";
    let body = json!({ "error": { "message": format!("bad headers {echo}") }, "headers": echo }).to_string();
    let (_, sink, out) = run_script(vec![status(400, &[], &body)], config_with_secret_headers());
    assert_no_secrets(&sink, &out);
    let err = out.error.unwrap();
    assert!(err.to_string().contains("x-team: team-alpha"), "{err}");
    assert!(err.body().unwrap().contains("authorization: [redacted] (token [redacted])"), "{:?}", err.body());
}

#[test]
fn secret_headers_echoed_inside_the_stream_are_redacted() {
    let event = json!({ "error": { "message": "you sent Bearer settings-token-5678 and model-key-1234" } }).to_string();
    let reply = Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(sse(&[&event]))] };
    let (_, sink, out) = run_script(vec![reply], config_with_secret_headers());
    assert_no_secrets(&sink, &out);
    // An event that is not JSON is quoted up to 200 characters: the quote ends inside a secret.
    let event = format!("{}goog-key-42", "x".repeat(196));
    let reply = Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(sse(&[&event]))] };
    let (_, sink, out) = run_script(vec![reply], config_with_secret_headers());
    assert_no_secrets(&sink, &out);
    assert!(out.error.unwrap().to_string().contains("not valid JSON"));
}

#[test]
fn a_successful_reply_that_is_not_an_event_stream_says_what_came_back() {
    let completion = json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Hello there" }, "finish_reason": "stop" }],
    })
    .to_string();
    let page = format!("<!DOCTYPE html><html><head><title>Sign in</title></head><body>{}</body></html>", "<p>Wi-Fi</p>".repeat(40));
    for (content_type, body) in [("application/json", completion.as_str()), ("text/html; charset=utf-8", page.as_str())] {
        let reply = status(200, &[("content-type", content_type)], body);
        let (script, sink, out) = run_script(vec![reply], config(2, false));
        let err = out.error.unwrap();
        let message = err.to_string();
        assert!(message.starts_with(&format!("The model API answered 200 with content type '{content_type}' instead of an event stream")), "{message}");
        assert!(message.ends_with(&body.chars().take(200).collect::<String>()), "{message}");
        assert!(!message.contains("connection closed"), "{message}");
        assert_eq!((err.status(), err.body()), (Some(200), Some(body)));
        // Asking again would get the same answer.
        assert_eq!(script.requests.borrow().len(), 1);
        assert_eq!(sink.types(), ["start", "step-start", "error"]);
    }
}

#[test]
fn a_reply_that_is_not_an_event_stream_is_quoted_without_secrets() {
    let body = format!("{{\"echo\":\"{}Bearer settings-token-5678\"}}", "x".repeat(180));
    let (_, sink, out) = run_script(vec![status(200, &[("content-type", "application/json")], &body)], config_with_secret_headers());
    assert_no_secrets(&sink, &out);
    // The head was cut after the secret was taken out, so no piece of it is left.
    assert!(!out.error.unwrap().to_string().contains("settin"));
}

#[test]
fn event_streams_are_read_whatever_the_parameters_of_their_content_type() {
    for content_type in ["text/event-stream", "Text/Event-Stream; charset=utf-8"] {
        let events = sse(&[&delta("content", "ok"), &finish("stop"), "[DONE]"]);
        let reply = Reply::Http { status: 200, headers: vec![("content-type".into(), content_type.into())], reads: vec![Read::Bytes(events)] };
        let (_, _, out) = run_script(vec![reply], config(0, false));
        assert!(out.error.is_none(), "{content_type}: {:?}", out.error);
        assert_eq!(out.text(), "ok");
    }
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tools;

#[cfg(all(test, feature = "processors"))]
#[path = "processors_tests.rs"]
mod processors_loop;

#[cfg(all(test, feature = "processors", feature = "structured"))]
#[path = "input_step_tests.rs"]
mod input_step_loop;

#[cfg(test)]
#[path = "memory_tests.rs"]
mod memory;

#[cfg(test)]
#[path = "warnings_tests.rs"]
mod warnings;

#[cfg(all(test, feature = "scorers"))]
#[path = "completion_tests.rs"]
mod completion_loop;

#[cfg(all(test, feature = "structured"))]
#[path = "structured_tests.rs"]
mod structured;

#[cfg(test)]
#[path = "suspend_tests.rs"]
mod suspend_loop;

#[test]
fn retry_after_values_are_read_without_float_parsing() {
    let now = 1_700_000_000_000.0; // Tue, 14 Nov 2023 22:13:20 GMT
    assert_eq!(parse_retry_after(None, Some("2"), now), Some(2000));
    assert_eq!(parse_retry_after(None, Some(" 1.5 "), now), Some(1500));
    assert_eq!(parse_retry_after(Some("250"), Some("9"), now), Some(250));
    assert_eq!(parse_retry_after(Some("12.7"), None, now), Some(12));
    assert_eq!(parse_retry_after(Some("x"), Some("3"), now), Some(3000));
    assert_eq!(parse_retry_after(None, Some("-1"), now), None);
    assert_eq!(parse_retry_after(None, Some("99999999999999999999"), now), None);
}

#[test]
fn retry_after_dates_in_every_http_form_count_from_now() {
    let now = 1_700_000_000_000.0; // Tue, 14 Nov 2023 22:13:20 GMT
    let wait = |date: &str| parse_retry_after(None, Some(date), now);
    assert_eq!(wait("Tue, 14 Nov 2023 22:13:21 GMT"), Some(1000));
    assert_eq!(wait("  Tue, 14 Nov 2023 22:14:00 GMT "), Some(40_000));
    assert_eq!(wait("Wednesday, 15-Nov-23 00:00:00 GMT"), Some(6_400_000));
    assert_eq!(wait("Tue Nov 14 22:13:30 2023"), Some(10_000));
    assert_eq!(wait("Fri Mar  1 00:00:00 2024"), Some(9_251_200_000));
    // Leap years: 29 Feb 2024 is a day before 1 Mar, and 2100 has no 29 Feb.
    assert_eq!(wait("Thu, 29 Feb 2024 00:00:00 GMT"), Some(9_251_200_000 - 86_400_000));
    assert_eq!(http_date("Mon, 01 Mar 2100 00:00:00 GMT") - http_date("Sun, 28 Feb 2100 00:00:00 GMT"), 86_400_000);
    assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784_111_777_000);
    assert_eq!(http_date("Sunday, 06-Nov-94 08:49:37 GMT"), 784_111_777_000);
    assert_eq!(http_date("Sun Nov  6 08:49:37 1994"), 784_111_777_000);
    // A date past: retry at once.
    assert_eq!(wait("Wed, 21 Oct 2015 07:28:00 GMT"), Some(0));
    assert_eq!(wait("Thu, 01 Jan 1960 00:00:00 GMT"), Some(0));
    for bad in [
        "Tue, 14 Nov 2023 22:13:21 UTC",
        "Tue, 14 Nov 2023 22:13 GMT",
        "Tue, 14 Nov 2023 24:00:00 GMT",
        "Tue, 32 Nov 2023 22:13:21 GMT",
        "Tue, 00 Nov 2023 22:13:21 GMT",
        "Tue, 14 November 2023 22:13:21 GMT",
        "Tue, 14 Nov 023 22:13:21 GMT",
        "Tue, 14 Nov 2023 22:13:21 GMT extra",
        "Tue Nov 14 22:13:30 2023 GMT",
        "Tue, 14 Nov +202 22:13:21 GMT",
        "Tue Nov 14 22:13:30 99999999999999999999999",
        "Tue, 14 Nov 2023 22:13:21 GMT GMT",
        "Tue, 14 Nov 2023 22:13:21:00 GMT",
        "Tue,",
        "",
    ] {
        assert_eq!(wait(bad), None, "{bad}");
    }
}

fn http_date(date: &str) -> i64 {
    parse_retry_after(None, Some(date), 0.0).unwrap() as i64
}

// --- the WebSocket transport ------------------------------------------------------------------

fn responses_reply(text: &str) -> Reply {
    let events = [
        json!({ "type": "response.created", "response": { "id": "resp_1", "model": "gpt-test", "created_at": 1 } }),
        json!({ "type": "response.output_text.delta", "output_index": 0, "delta": text }),
        json!({ "type": "response.completed", "response": { "usage": { "input_tokens": 3, "output_tokens": 1, "total_tokens": 4 } } }),
    ];
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(body.into_bytes())] }
}

fn socket_config(transport: &str) -> RunConfig {
    let mut cfg = config(0, false);
    cfg.model = http_model(endpoint(Api::Responses));
    let options = json!({ "transport": transport, "websocket": { "closeOnFinish": false } });
    cfg.transport = crate::core::transport::parse(options.as_object(), Some(Api::Responses), "o").unwrap();
    cfg
}

fn go_script(script: &Rc<Script>, cfg: RunConfig) -> (RunOutcome, Collect) {
    let sink = Collect::default();
    let abort = script.abort.clone();
    let out = block_on(run(cfg, script, &sink, &NoHooks, &Approvals::default(), &abort));
    (out, sink)
}

#[test]
fn websocket_calls_go_on_the_socket_as_response_create_and_the_run_releases_its_sockets() {
    let script = Rc::new(Script::default());
    script.socket_replies.borrow_mut().push_back(Ok(responses_reply("Hi from the socket")));
    let (out, sink) = go_script(&script, socket_config("websocket"));
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.text(), "Hi from the socket");
    assert_eq!(sink.types().last(), Some(&"finish"));
    assert!(script.requests.borrow().is_empty(), "nothing over HTTP");
    let sent = script.sockets.borrow();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].url, "ws://127.0.0.1:1/v1/responses");
    assert_eq!(sent[0].run_id, "run1");
    assert!(!sent[0].close_on_finish);
    let message: Value = serde_json::from_str(&sent[0].message).unwrap();
    assert_eq!(message["type"], "response.create");
    assert!(message.get("stream").is_none() && message.get("transport").is_none());
    assert_eq!(*script.released.borrow(), ["run1"]);
}

#[test]
fn auto_falls_back_to_http_when_no_socket_can_be_had_and_websocket_fails_saying_why() {
    let script = Rc::new(Script::default());
    script.replies.borrow_mut().push_back(responses_reply("Hi over HTTP"));
    let (out, _) = go_script(&script, socket_config("auto"));
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.text(), "Hi over HTTP");
    assert_eq!((script.sockets.borrow().len(), script.requests.borrow().len()), (1, 1), "tried the socket, then HTTP");

    let script = Rc::new(Script::default());
    let (out, sink) = go_script(&script, socket_config("websocket"));
    let err = out.error.expect("no socket, no fallback: the run fails").to_string();
    assert!(err.contains("This runtime has no WebSocket"), "{err}");
    assert_eq!(sink.types(), ["start", "step-start", "error"]);
    assert!(script.requests.borrow().is_empty());

    // A socket that is there but failed is not a reason to change transport.
    let script = Rc::new(Script::default());
    let busy = AgentError::api("A response is still streaming on this WebSocket", false);
    script.socket_replies.borrow_mut().push_back(Err(SocketError::Failed(busy)));
    let (out, _) = go_script(&script, socket_config("auto"));
    assert!(out.error.unwrap().to_string().contains("still streaming"));
    assert!(script.requests.borrow().is_empty());
}

#[test]
fn once_no_socket_can_be_had_the_rest_of_the_run_goes_over_http() {
    let call = [
        json!({ "type": "response.output_item.added", "output_index": 0,
                "item": { "type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{\"city\":\"Paris\"}" } }),
        json!({ "type": "response.completed", "response": {} }),
    ];
    let call: String = call.iter().map(|e| format!("data: {e}\n\n")).collect();
    let mut cfg = socket_config("auto");
    cfg.tools = vec![tools::tool("weather")];
    let run = tools::simple(
        vec![Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(call.into_bytes())] }, responses_reply("Sunny.")],
        cfg,
        &tools::TestHost::default(),
    );
    assert!(run.out.error.is_none(), "{:?}", run.out.error);
    assert_eq!(run.out.text(), "Sunny.");
    assert_eq!(run.requests(), 2, "both steps over HTTP");
    assert_eq!(run.script.sockets.borrow().len(), 1, "the socket was tried once, for the first step only");
}

#[test]
fn a_run_that_asks_for_scoring_data_keeps_its_input_and_response_and_a_failed_one_none() {
    let mut cfg = config(0, false);
    cfg.scoring = true;
    cfg.request.messages.insert(0, ModelMessage::System("Be brief.".into()));
    cfg.input_start = 1;
    let (_, _, out) = run_script(vec![ok_stream(&[delta("content", "Hello"), finish("stop")])], cfg);
    let data = out.scoring.expect("scoring data");
    assert_eq!(data["input"]["systemMessages"], serde_json::json!([{ "role": "system", "content": "Be brief." }]));
    assert_eq!(data["input"]["inputMessages"][0]["content"]["parts"], serde_json::json!([{ "type": "text", "text": "hi" }]));
    assert_eq!(data["output"][0]["id"], out.message_id.as_str());
    assert_eq!(data["output"][0]["content"]["parts"][1], serde_json::json!({ "type": "text", "text": "Hello" }));

    let (_, _, plain) = run_script(vec![ok_stream(&[delta("content", "Hello"), finish("stop")])], config(0, false));
    assert!(plain.scoring.is_none(), "not asked for");
    let mut cfg = config(0, false);
    cfg.scoring = true;
    let (_, _, failed) = run_script(vec![status(400, &[], r#"{"error":{"message":"bad"}}"#)], cfg);
    assert!(failed.error.is_some());
    assert!(failed.scoring.is_none(), "a failed run is not scored");
}

#[cfg(test)]
#[path = "delegation_tests.rs"]
mod delegation_loop;
