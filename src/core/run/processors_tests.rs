//! Processors in the loop, natively (SPEC §13): the order of chunks around a tripwire from each
//! phase, what the model is sent, retries, failures, rewrites that reach the aggregates and
//! memory, and the built-in batching and token limit.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Value};

use super::tools::{calls_reply, simple, text_reply, tool, with_tools, TestHost};
use super::*;
use crate::core::memory::{InMemoryStore, MemoryConfig, MemoryRun, MessageQuery, Store};
use crate::core::run::builtin_processors::{BatchOptions, BatchParts, TokenLimitOptions, TokenLimiter};
use crate::core::run::processors::{Halt, Phase, Processor, ProcessorCx, Processors, Reply};

type OnCall = Box<dyn Fn(Phase, &Value, u32) -> Result<Option<Value>, Halt>>;
type OnChunk = Box<dyn Fn(Chunk) -> Result<Vec<Chunk>, Halt>>;

/// A processor scripted by closures; records the phases it was called in.
struct Scripted {
    id: &'static str,
    phases: Vec<Phase>,
    on_call: OnCall,
    on_chunk: OnChunk,
    custom: Vec<Chunk>,
    calls: RefCell<Vec<(Phase, Value)>>,
    /// The span each call was given (`ProcessorCx::span`).
    spans: RefCell<Vec<Option<String>>>,
}

impl Scripted {
    fn new(id: &'static str, phases: &[Phase]) -> Self {
        Scripted {
            id,
            phases: phases.to_vec(),
            on_call: Box::new(|_, _, _| Ok(None)),
            on_chunk: Box::new(|c| Ok(vec![c])),
            custom: Vec::new(),
            calls: RefCell::new(Vec::new()),
            spans: RefCell::new(Vec::new()),
        }
    }
    fn calls(mut self, f: impl Fn(Phase, &Value, u32) -> Result<Option<Value>, Halt> + 'static) -> Self {
        self.on_call = Box::new(f);
        self
    }
    fn chunks(mut self, f: impl Fn(Chunk) -> Result<Vec<Chunk>, Halt> + 'static) -> Self {
        self.on_chunk = Box::new(f);
        self
    }
}

impl Processor for Scripted {
    fn id(&self) -> &str {
        self.id
    }
    fn has(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }
    fn call<'a>(&'a self, phase: Phase, args: Value, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Reply, Halt>> {
        let r = (self.on_call)(phase, &args, cx.retry_count);
        self.calls.borrow_mut().push((phase, args));
        self.spans.borrow_mut().push(cx.span.map(str::to_owned));
        let custom = self.custom.clone();
        Box::pin(async move { r.map(|value| Reply { value, custom, step: Default::default() }) })
    }
    fn stream<'a>(&'a self, chunk: Chunk, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Vec<Chunk>, Halt>> {
        let r = (self.on_chunk)(chunk);
        self.spans.borrow_mut().push(cx.span.map(str::to_owned));
        Box::pin(async move { r })
    }
}

fn abort_with(reason: &str, retry: bool) -> Halt {
    Halt::Abort { reason: reason.into(), retry, metadata: Some(json!({ "why": "test" })) }
}

fn with(cfg: RunConfig, input: Vec<Rc<dyn Processor>>, output: Vec<Rc<dyn Processor>>, max_retries: u32) -> RunConfig {
    RunConfig { processors: Processors { input, output, max_retries, ..Default::default() }, ..cfg }
}

fn tripwire_of(sink: &Collect) -> Value {
    sink.chunks.borrow().iter().find(|c| c.type_name() == "tripwire").map(Chunk::payload).expect("a tripwire chunk")
}

#[test]
fn an_output_stream_abort_ends_the_step_with_tripwire_step_finish_finish_and_keeps_the_text_before_it() {
    let guard = Scripted::new("guard", &[Phase::OutputStream]).chunks(|c| match &c {
        Chunk::TextDelta { text, .. } if text.contains("bad") => Err(abort_with("no bad words", false)),
        _ => Ok(vec![c]),
    });
    let cfg = with(config(0, false), vec![], vec![Rc::new(guard)], 0);
    let (script, sink, out) = run_script(
        vec![ok_stream(&[
            delta("content", "fine "),
            delta("content", "bad"),
            delta("content", " more"),
            finish("stop"),
        ])],
        cfg,
    );
    assert_eq!(sink.types(), ["start", "step-start", "text-start", "text-delta", "tripwire", "step-finish", "finish"]);
    assert_eq!(
        tripwire_of(&sink),
        json!({ "reason": "no bad words", "metadata": { "why": "test" }, "processorId": "guard" })
    );
    assert_eq!(out.text(), "fine ", "the text streamed before the tripwire, nothing of the chunk that tripped");
    assert_eq!(out.steps.len(), 1);
    assert_eq!(out.steps[0].text, "fine ");
    assert_eq!(out.finish_reason(), FinishReason::Tripwire);
    assert!(out.error.is_none());
    assert_eq!(out.output_json("run1")["tripwire"]["processorId"], "guard");
    let last = sink.chunks.borrow().last().unwrap().payload();
    assert_eq!(last["stepResult"]["reason"], "tripwire");
    assert_eq!(script.requests.borrow().len(), 1);
}

#[test]
fn a_process_input_abort_never_calls_the_model() {
    let gate = Scripted::new("gate", &[Phase::Input]).calls(|_, _, _| Err(abort_with("blocked", true)));
    let cfg = with(config(0, false), vec![Rc::new(gate)], vec![], 3);
    let (script, sink, out) = run_script(vec![], cfg);
    assert_eq!(sink.types(), ["start", "tripwire", "finish"]);
    assert_eq!(tripwire_of(&sink)["retry"], Value::Null, "retry from an input phase is a plain tripwire");
    assert_eq!(script.requests.borrow().len(), 0);
    assert_eq!(out.finish_reason(), FinishReason::Tripwire);
}

#[test]
fn process_input_rewrites_what_the_model_is_sent_and_sees_stored_message_shapes() {
    let seen = Rc::new(RefCell::new(Value::Null));
    let s = seen.clone();
    let redact = Scripted::new("redact", &[Phase::Input]).calls(move |_, args, _| {
        *s.borrow_mut() = args.clone();
        let mut messages = args["messages"].clone();
        let text = messages[0]["content"]["parts"][0]["text"].as_str().unwrap().replace("1234", "****");
        messages[0]["content"]["parts"][0]["text"] = text.into();
        Ok(Some(json!({ "messages": messages, "systemMessages": [{ "role": "system", "content": "Be safe." }] })))
    });
    let mut cfg = config(0, false);
    cfg.request.messages = vec![
        ModelMessage::System("Be brief.".into()),
        ModelMessage::User(vec![UserPart::Text("my pin is 1234".into())]),
    ];
    cfg.input_start = 1;
    let (script, _, out) = run_script(vec![text_reply("ok")], with(cfg, vec![Rc::new(redact)], vec![], 0));
    assert!(out.error.is_none(), "{:?}", out.error);
    let args = seen.borrow().clone();
    assert_eq!(args["systemMessages"], json!([{ "role": "system", "content": "Be brief." }]));
    assert_eq!(args["messages"][0]["role"], "user");
    assert_eq!(args["messages"][0]["content"]["format"], 2);
    assert!(args["messages"][0]["id"].is_string());
    let body: Value = serde_json::from_str(&script.requests.borrow()[0].body).unwrap();
    assert_eq!(
        body["messages"],
        json!([{ "role": "system", "content": "Be safe." }, { "role": "user", "content": "my pin is ****" }])
    );
}

#[test]
fn what_process_input_rewrites_is_what_memory_stores_metadata_too() {
    let store = Rc::new(InMemoryStore::new());
    let memory = MemoryRun {
        store: store.clone(),
        thread_id: "t1".into(),
        resource_id: "u1".into(),
        title: None,
        metadata: None,
        config: MemoryConfig::default(),
        save_per_step: false,
        indexer: None,
    };
    let redact = Scripted::new("redact", &[Phase::Input]).calls(|_, args, _| {
        let mut messages = args["messages"].clone();
        for m in messages.as_array_mut().unwrap() {
            let t = m["content"]["parts"][0]["text"].as_str().unwrap().replace("secret", "[redacted]");
            m["content"]["parts"][0]["text"] = t.into();
            m["content"]["metadata"] = json!({ "redacted": 1 });
        }
        Ok(Some(messages))
    });
    let mut cfg = config(0, false);
    cfg.memory = Some(memory);
    let cfg = with(cfg, vec![Rc::new(redact)], vec![], 0);
    let mut cfg = cfg;
    cfg.request.messages = vec![ModelMessage::User(vec![UserPart::Text("the secret word".into())])];
    let (_, _, out) = run_script(vec![text_reply("noted")], cfg);
    assert!(out.error.is_none(), "{:?}", out.error);
    let stored =
        block_on(store.list_messages(&MessageQuery { thread_id: "t1".into(), last: None, before: None })).unwrap();
    let texts: Vec<&str> = stored.iter().map(text_of).collect();
    assert_eq!(texts, ["the [redacted] word", "noted"]);
    // What it set on the message's metadata is stored with it.
    assert_eq!(stored[0].metadata, Some(json!({ "redacted": 1 })));
    assert_eq!(stored[1].metadata, None);
}

#[test]
fn a_process_input_step_abort_ends_before_the_step_starts() {
    let gate = Scripted::new("step-gate", &[Phase::InputStep]).calls(|_, args, _| {
        if args["stepNumber"] == 1 {
            Err(abort_with("enough", false))
        } else {
            Ok(None)
        }
    });
    let host = TestHost::default();
    let cfg = with(with_tools(vec![tool("weather")]), vec![Rc::new(gate)], vec![], 0);
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)])], cfg, &host);
    let types = r.sink.types();
    assert_eq!(&types[types.len() - 3..], ["step-finish", "tripwire", "finish"]);
    assert_eq!(r.requests(), 1);
    assert_eq!(r.out.steps.len(), 1, "the complete tool step stays");
}

#[test]
fn process_input_step_changes_apply_to_that_request_only() {
    let narrow = Scripted::new("narrow", &[Phase::InputStep]).calls(|_, args, _| {
        Ok((args["stepNumber"] == 0).then(|| json!({ "systemMessages": [{ "role": "system", "content": "Step zero." }], "toolChoice": "required", "modelSettings": { "temperature": 0 } })))
    });
    let host = TestHost::default();
    let mut cfg = with(with_tools(vec![tool("weather")]), vec![Rc::new(narrow)], vec![], 0);
    cfg.request.messages.insert(0, ModelMessage::System("Agent.".into()));
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("Sunny.")], cfg, &host);
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    let (first, second) = (r.body(0), r.body(1));
    assert_eq!(first["messages"][0]["content"], "Step zero.");
    assert_eq!(first["tool_choice"], "required");
    assert_eq!(first["temperature"], json!(0.0));
    assert_eq!(second["messages"][0]["content"], "Agent.");
    assert!(second.get("tool_choice").is_none_or(|c| c != "required"));
    assert!(second.get("temperature").is_none());
}

#[test]
fn an_output_step_abort_stops_before_the_tools_run() {
    let check = Scripted::new("check", &[Phase::OutputStep]).calls(|_, args, _| {
        assert_eq!(args["toolCalls"][0]["toolName"], "weather");
        let messages = args["messages"].as_array().unwrap();
        assert_eq!(messages.iter().map(|m| m["role"].as_str().unwrap()).collect::<Vec<_>>(), ["user", "assistant"], "the step's response last");
        Err(abort_with("no tools today", true))
    });
    let host = TestHost::default();
    let cfg = with(with_tools(vec![tool("weather")]), vec![], vec![Rc::new(check)], 0);
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)])], cfg, &host);
    let types = r.sink.types();
    assert!(!types.contains(&"tool-result"), "{types:?}");
    assert_eq!(&types[types.len() - 4..], ["tool-call", "tripwire", "step-finish", "finish"]);
    assert_eq!(r.requests(), 1, "no tool ran, no second step");
    assert_eq!(tripwire_of(&r.sink).get("retry"), None, "no budget: a plain tripwire");
}

#[test]
fn a_retry_runs_the_step_again_with_the_feedback_and_keeps_only_the_accepted_attempt() {
    let judge = Scripted::new("judge", &[Phase::OutputStep]).calls(|_, args, retry_count| {
        if args["text"] == "rude" {
            assert_eq!(retry_count, 0);
            Err(abort_with("be polite", true))
        } else {
            assert_eq!(retry_count, 1, "retryCount is one higher on the retried step");
            Ok(None)
        }
    });
    let cfg = with(config(0, false), vec![], vec![Rc::new(judge)], 2);
    let (script, sink, out) = run_script(vec![text_reply("rude"), text_reply("polite")], cfg);
    assert_eq!(
        sink.types(),
        [
            "start",
            "step-start",
            "text-start",
            "text-delta",
            "text-end",
            "tripwire",
            "step-finish",
            "step-start",
            "text-start",
            "text-delta",
            "text-end",
            "step-finish",
            "finish"
        ]
    );
    assert_eq!(tripwire_of(&sink)["retry"], true);
    assert_eq!(out.text(), "polite");
    assert_eq!(out.steps.len(), 1);
    assert!(out.tripwire.is_none());
    assert_eq!(out.finish_reason(), FinishReason::Stop);
    let body: Value = serde_json::from_str(&script.requests.borrow()[1].body).unwrap();
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert!(msgs[0]["content"].as_str().unwrap().contains("not accepted: be polite"), "{msgs:?}");
    assert_eq!(msgs.last().unwrap()["content"], "hi", "the rejected reply is not in the conversation");
}

#[test]
fn with_the_retry_budget_spent_a_retry_is_a_plain_tripwire() {
    let judge = Scripted::new("judge", &[Phase::OutputStep]).calls(|_, _, _| Err(abort_with("never good", true)));
    let cfg = with(config(0, false), vec![], vec![Rc::new(judge)], 1);
    let (script, sink, out) = run_script(vec![text_reply("one"), text_reply("two")], cfg);
    assert_eq!(script.requests.borrow().len(), 2);
    let trips: Vec<Value> =
        sink.chunks.borrow().iter().filter(|c| c.type_name() == "tripwire").map(Chunk::payload).collect();
    assert_eq!(trips.len(), 2);
    assert_eq!(trips[0]["retry"], true);
    assert_eq!(trips[1].get("retry"), None);
    assert_eq!(out.text(), "two");
    assert_eq!(out.finish_reason(), FinishReason::Tripwire);
    assert_eq!(sink.types().last(), Some(&"finish"));
}

#[test]
fn a_throwing_processor_fails_the_run_with_a_processor_error() {
    let broken = Scripted::new("broken", &[Phase::OutputStream]).chunks(|c| match c {
        Chunk::TextDelta { .. } => Err(Halt::Threw("boom".into())),
        c => Ok(vec![c]),
    });
    let cfg = with(config(0, false), vec![], vec![Rc::new(broken)], 0);
    let (_, sink, out) = run_script(vec![text_reply("hello")], cfg);
    assert_eq!(sink.types().last(), Some(&"error"));
    let e = out.error.expect("the run failed");
    assert_eq!(e.name(), "ProcessorError");
    assert_eq!(e.to_string(), "broken: boom");
}

#[test]
fn stream_rewrites_reach_the_text_the_steps_and_memory() {
    let upper = Scripted::new("upper", &[Phase::OutputStream]).chunks(|c| match c {
        Chunk::TextDelta { id, text } => Ok(vec![Chunk::TextDelta { id, text: text.to_uppercase() }]),
        c => Ok(vec![c]),
    });
    let drop_x = Scripted::new("drop-x", &[Phase::OutputStream]).chunks(|c| match &c {
        Chunk::TextDelta { text, .. } if text == "X" => Ok(vec![]),
        _ => Ok(vec![c]),
    });
    let cfg = with(config(0, false), vec![], vec![Rc::new(upper), Rc::new(drop_x)], 0);
    let (_, sink, out) = run_script(
        vec![ok_stream(&[delta("content", "ab"), delta("content", "x"), delta("content", "cd"), finish("stop")])],
        cfg,
    );
    let deltas: Vec<String> = sink
        .chunks
        .borrow()
        .iter()
        .filter_map(|c| if let Chunk::TextDelta { text, .. } = c { Some(text.clone()) } else { None })
        .collect();
    assert_eq!(deltas, ["AB", "CD"], "each processor gets the previous one's result");
    assert_eq!(out.text(), "ABCD");
    assert_eq!(out.steps[0].to_json()["response"]["messages"][0]["content"][0]["text"], "ABCD");
}

#[test]
fn a_custom_chunk_passes_only_the_later_processors() {
    let seen_first = Rc::new(RefCell::new(0));
    let seen_later = Rc::new(RefCell::new(0));
    let (a, b) = (seen_first.clone(), seen_later.clone());
    let mut first = Scripted::new("first", &[Phase::OutputStream, Phase::OutputStep]).chunks(move |c| {
        if matches!(c, Chunk::Data { .. }) {
            *a.borrow_mut() += 1;
        }
        Ok(vec![c])
    });
    first.custom = vec![Chunk::Data { kind: "data-note".into(), data: json!({ "n": 1 }), id: None, transient: false }];
    let later = Scripted::new("later", &[Phase::OutputStream]).chunks(move |c| {
        if matches!(c, Chunk::Data { .. }) {
            *b.borrow_mut() += 1;
        }
        Ok(vec![c])
    });
    struct SeesData(Scripted);
    impl Processor for SeesData {
        fn id(&self) -> &str {
            self.0.id()
        }
        fn has(&self, p: Phase) -> bool {
            self.0.has(p)
        }
        fn sees_data(&self) -> bool {
            true
        }
        fn call<'a>(&'a self, phase: Phase, args: Value, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Reply, Halt>> {
            self.0.call(phase, args, cx)
        }
        fn stream<'a>(&'a self, chunk: Chunk, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Vec<Chunk>, Halt>> {
            self.0.stream(chunk, cx)
        }
    }
    let cfg = with(config(0, false), vec![], vec![Rc::new(SeesData(first)), Rc::new(SeesData(later))], 0);
    let (_, sink, _) = run_script(vec![text_reply("hi")], cfg);
    assert!(sink.types().contains(&"data"));
    assert_eq!(*seen_first.borrow(), 0, "the writer's own processor does not see it");
    assert_eq!(*seen_later.borrow(), 1);
}

#[test]
fn an_output_result_replaces_what_memory_stores_and_can_ask_for_a_retry() {
    let store = Rc::new(InMemoryStore::new());
    let memory = MemoryRun {
        store: store.clone(),
        thread_id: "t2".into(),
        resource_id: "u1".into(),
        title: None,
        metadata: None,
        config: MemoryConfig::default(),
        save_per_step: false,
        indexer: None,
    };
    let result = Scripted::new("final", &[Phase::OutputResult]).calls(|_, args, retry| {
        if retry == 0 {
            return Err(abort_with("too short", true));
        }
        assert_eq!(args["result"]["text"], "second");
        Ok(Some(json!([{ "role": "assistant", "content": "[summary]" }])))
    });
    let mut cfg = config(0, false);
    cfg.memory = Some(memory);
    let (script, sink, out) =
        run_script(vec![text_reply("first"), text_reply("second")], with(cfg, vec![], vec![Rc::new(result)], 1));
    assert_eq!(script.requests.borrow().len(), 2);
    assert_eq!(out.text(), "second");
    assert!(out.tripwire.is_none());
    assert_eq!(sink.types().last(), Some(&"finish"));
    let stored =
        block_on(store.list_messages(&MessageQuery { thread_id: "t2".into(), last: None, before: None })).unwrap();
    let texts: Vec<&str> = stored.iter().map(text_of).collect();
    assert_eq!(texts, ["hi", "[summary]"]);
}

#[test]
fn a_tripwire_keeps_the_user_message_in_memory_but_not_the_aborted_step() {
    let store = Rc::new(InMemoryStore::new());
    let memory = MemoryRun {
        store: store.clone(),
        thread_id: "t3".into(),
        resource_id: "u1".into(),
        title: None,
        metadata: None,
        config: MemoryConfig::default(),
        save_per_step: false,
        indexer: None,
    };
    let guard = Scripted::new("guard", &[Phase::OutputStep]).calls(|_, _, _| Err(abort_with("no", false)));
    let mut cfg = config(0, false);
    cfg.memory = Some(memory);
    let (_, _, out) = run_script(vec![text_reply("forbidden")], with(cfg, vec![], vec![Rc::new(guard)], 0));
    assert_eq!(out.text(), "forbidden");
    let stored =
        block_on(store.list_messages(&MessageQuery { thread_id: "t3".into(), last: None, before: None })).unwrap();
    assert_eq!(stored.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(), ["user"]);
}

/// The text parts of a stored message, joined.
fn text_of(m: &crate::core::memory::StoredMessage) -> &str {
    m.parts.iter().find_map(|p| p["text"].as_str()).unwrap_or("")
}

/// Runs the batcher over `chunks`, as the loop would, flushing at the step's end.
fn batched(opts: BatchOptions, chunks: Vec<Chunk>) -> Vec<Chunk> {
    let b = BatchParts::new(opts, Rc::new(|| 0.0));
    let cx = ProcessorCx { run_id: "r", retry_count: 0, span: None };
    chunks.into_iter().flat_map(|c| block_on(b.stream(c, cx)).unwrap()).collect()
}

fn text_chunks(parts: &[&str]) -> Vec<Chunk> {
    let mut v = vec![Chunk::TextStart { id: "t1".into() }];
    v.extend(parts.iter().map(|p| Chunk::TextDelta { id: "t1".into(), text: (*p).into() }));
    v.push(Chunk::TextEnd { id: "t1".into() });
    v.push(Chunk::StepFinish {
        step: Box::new(
            StepBuilder::new(IdSource::new("m".into()), "m".into(), String::new(), vec![], 0.0).into_parts().1,
        ),
        is_continued: false,
        total_usage: Default::default(),
    });
    v
}

#[test]
fn batch_parts_joins_deltas_and_never_loses_or_reorders_a_chunk() {
    let parts = ["a", "b", "c", "d", "e", "f", "g"];
    let out = batched(BatchOptions { batch_size: 3, ..Default::default() }, text_chunks(&parts));
    let shown: Vec<String> = out
        .iter()
        .map(|c| match c {
            Chunk::TextDelta { text, .. } => format!("delta:{text}"),
            c => c.type_name().to_string(),
        })
        .collect();
    assert_eq!(shown, ["text-start", "delta:abc", "delta:def", "delta:g", "text-end", "step-finish"]);
    // Without flushing on other chunks, they wait behind the text, in order, until the step ends.
    let held =
        batched(BatchOptions { batch_size: 100, emit_on_non_text: false, ..Default::default() }, text_chunks(&parts));
    let shown: Vec<&str> = held.iter().map(Chunk::type_name).collect();
    assert_eq!(shown, ["text-start", "text-delta", "text-end", "step-finish"]);
    for size in 1..9 {
        for flush in [true, false] {
            let out = batched(
                BatchOptions { batch_size: size, emit_on_non_text: flush, max_wait_ms: None },
                text_chunks(&parts),
            );
            let text: String = out
                .iter()
                .filter_map(|c| if let Chunk::TextDelta { text, .. } = c { Some(text.as_str()) } else { None })
                .collect();
            assert_eq!(text, "abcdefg", "size {size}");
            assert_eq!(out.first().map(Chunk::type_name), Some("text-start"));
            assert_eq!(out.last().map(Chunk::type_name), Some("step-finish"));
        }
    }
}

#[test]
fn batch_parts_in_the_loop_keeps_the_full_text() {
    let cfg = with(
        config(0, false),
        vec![],
        vec![Rc::new(BatchParts::new(BatchOptions { batch_size: 2, ..Default::default() }, Rc::new(|| 0.0)))],
        0,
    );
    let (_, sink, out) = run_script(
        vec![ok_stream(&[delta("content", "a"), delta("content", "b"), delta("content", "c"), finish("stop")])],
        cfg,
    );
    assert_eq!(
        sink.types(),
        ["start", "step-start", "text-start", "text-delta", "text-delta", "text-end", "step-finish", "finish"]
    );
    assert_eq!(out.text(), "abc");
}

#[test]
fn token_limiter_truncates_or_aborts_the_reply_and_trims_the_oldest_input() {
    let cfg = with(
        config(0, false),
        vec![],
        vec![Rc::new(TokenLimiter::new(TokenLimitOptions { limit: 2, abort: false, per_part: false }))],
        0,
    );
    let (_, _, out) = run_script(
        vec![ok_stream(&[
            delta("content", "abcd"),
            delta("content", "efghij"),
            delta("content", "klm"),
            finish("stop"),
        ])],
        cfg,
    );
    assert_eq!(out.text(), "abcdefgh", "two tokens of about four characters");
    let cfg = with(
        config(0, false),
        vec![],
        vec![Rc::new(TokenLimiter::new(TokenLimitOptions { limit: 2, abort: true, per_part: false }))],
        0,
    );
    let (_, sink, out) =
        run_script(vec![ok_stream(&[delta("content", "abcd"), delta("content", "efghij"), finish("stop")])], cfg);
    assert_eq!(tripwire_of(&sink)["processorId"], "token-limiter");
    assert_eq!(out.text(), "abcd");
    let limiter = TokenLimiter::new(TokenLimitOptions { limit: 12, abort: false, per_part: false });
    let messages = json!([
        { "role": "user", "content": { "format": 2, "parts": [{ "type": "text", "text": "x".repeat(40) }] } },
        { "role": "assistant", "content": { "format": 2, "parts": [{ "type": "text", "text": "y".repeat(20) }] } },
        { "role": "user", "content": { "format": 2, "parts": [{ "type": "text", "text": "newest" }] } },
    ]);
    let reply = block_on(limiter.call(
        Phase::Input,
        json!({ "messages": messages }),
        ProcessorCx { run_id: "r", retry_count: 0, span: None },
    ))
    .unwrap();
    let kept = reply.value.unwrap();
    assert_eq!(kept.as_array().unwrap().len(), 1, "{kept}");
    assert_eq!(kept[0]["content"]["parts"][0]["text"], "newest");
}

#[test]
fn batch_parts_flushes_a_batch_that_waited_max_wait_time_when_the_next_part_comes() {
    let now = Rc::new(std::cell::Cell::new(0.0));
    let clock = now.clone();
    let b = BatchParts::new(
        BatchOptions { batch_size: 100, max_wait_ms: Some(50.0), emit_on_non_text: true },
        Rc::new(move || clock.get()),
    );
    let cx = ProcessorCx { run_id: "r", retry_count: 0, span: None };
    let feed = |text: &str, at: f64| {
        now.set(at);
        block_on(b.stream(Chunk::TextDelta { id: "t".into(), text: text.into() }, cx)).unwrap()
    };
    assert!(feed("a", 0.0).is_empty());
    assert!(feed("b", 20.0).is_empty());
    assert_eq!(
        feed("c", 60.0),
        [Chunk::TextDelta { id: "t".into(), text: "abc".into() }],
        "the first part waited 60 ms"
    );
    assert!(feed("d", 70.0).is_empty(), "a new batch starts its own wait");
}

#[test]
fn tool_chunks_pass_the_output_processors_in_order_and_can_trip_the_run() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    let watch = Scripted::new("watch", &[Phase::OutputStream]).chunks(move |c| {
        s.borrow_mut().push(c.type_name());
        Ok(vec![c])
    });
    let mut host = TestHost::default();
    host.write_output = true;
    let cfg = with(with_tools(vec![tool("weather")]), vec![], vec![Rc::new(watch)], 0);
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("Sunny.")], cfg, &host);
    let plain = simple(
        vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("Sunny.")],
        with_tools(vec![tool("weather")]),
        &host,
    );
    assert_eq!(r.sink.types(), plain.sink.types(), "the same chunks in the same order");
    let seen = seen.borrow();
    assert!(seen.contains(&"tool-result") && seen.contains(&"tool-output"), "{seen:?}");
    assert!(!seen.contains(&"data"), "data chunks only with processDataParts");

    let stop = Scripted::new("stop-results", &[Phase::OutputStream]).chunks(|c| match c {
        Chunk::ToolResult { .. } => Err(abort_with("no results shown", false)),
        c => Ok(vec![c]),
    });
    let cfg = with(with_tools(vec![tool("weather")]), vec![], vec![Rc::new(stop)], 0);
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)])], cfg, &TestHost::default());
    let types = r.sink.types();
    assert_eq!(&types[types.len() - 4..], ["tool-call", "tripwire", "step-finish", "finish"]);
    assert_eq!(r.requests(), 1, "no step after the tripwire");
    assert_eq!(r.out.finish_reason(), FinishReason::Tripwire);
}

#[cfg(all(feature = "tracing", feature = "processors"))]
#[path = "processor_spans_tests.rs"]
mod spans;
