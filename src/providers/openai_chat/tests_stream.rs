//! Tests of the Chat Completions stream decoder against recorded provider streams
//! (`/work/shared/fixtures/provider-streams`, see its README) and hand-written edge cases.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::ChatDecoder;
use crate::core::error::AgentError;
use crate::core::model::{FinishReason, ModelEvent, Usage};
use crate::providers::tests::fixtures::{
    self, assert_cut_short, assert_not_json, chat_stream, fixture_lines, CHAT as FIXTURES,
};
use crate::providers::tests::sse::{random_pieces, Rng};
use crate::providers::StreamDecoder;

fn fixture_stream(name: &str) -> Vec<u8> {
    chat_stream(&fixture_lines(name))
}

fn decode_pieces(pieces: &[&[u8]], include_raw: bool) -> Result<Vec<ModelEvent>, AgentError> {
    fixtures::decode_pieces(ChatDecoder::new(include_raw), pieces)
}

fn decode(body: &str) -> Result<Vec<ModelEvent>, AgentError> {
    decode_pieces(&[body.as_bytes()], false)
}

/// What a user would read off a reply.
#[derive(Debug, Default)]
struct Reply {
    metadata: Option<(Option<String>, Option<String>, Option<u64>)>,
    text: String,
    reasoning: String,
    /// index → (id, name, arguments text)
    tools: BTreeMap<u32, (Option<String>, Option<String>, String)>,
    finish: Option<(FinishReason, Option<Usage>)>,
}

impl Reply {
    fn of(events: &[ModelEvent]) -> Reply {
        let mut reply = Reply::default();
        for (i, event) in events.iter().enumerate() {
            assert!(reply.finish.is_none(), "event after Finish: {event:?}");
            match event {
                ModelEvent::ResponseMetadata { id, model_id, created } => {
                    assert!(reply.metadata.is_none(), "metadata twice");
                    assert_eq!(i, 0, "metadata comes first");
                    reply.metadata = Some((id.clone(), model_id.clone(), *created));
                }
                ModelEvent::TextDelta(t) => reply.text.push_str(t),
                ModelEvent::ReasoningDelta(t) => reply.reasoning.push_str(t),
                ModelEvent::ToolCallDelta { index, id, name, args_delta } => {
                    let entry = reply.tools.entry(*index).or_default();
                    if id.is_some() {
                        assert!(entry.0.is_none(), "tool call id twice");
                        entry.0 = id.clone();
                    }
                    if name.is_some() {
                        assert!(entry.1.is_none(), "tool call name twice");
                        entry.1 = name.clone();
                    }
                    entry.2.push_str(args_delta);
                }
                ModelEvent::Finish { reason, usage } => reply.finish = Some((*reason, *usage)),
                other => panic!("unexpected event {other:?}"),
            }
        }
        reply
    }

    fn decoded(name: &str) -> Reply {
        Reply::of(&decode_pieces(&[&fixture_stream(name)], false).unwrap())
    }

    fn tool(&self, index: u32) -> (&str, &str, Value) {
        let (id, name, args) = &self.tools[&index];
        (id.as_deref().unwrap(), name.as_deref().unwrap(), serde_json::from_str(args).unwrap())
    }

    fn usage(&self) -> Usage {
        self.finish.unwrap().1.expect("usage")
    }
}

fn usage(input: u64, output: u64, total: u64, reasoning: Option<u64>, cached: Option<u64>) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        total_tokens: Some(total),
        reasoning_tokens: reasoning,
        cached_input_tokens: cached,
    }
}

#[test]
fn openai_text() {
    let r = Reply::decoded("openai--openai-text");
    let meta = r.metadata.clone().unwrap();
    assert_eq!(meta.0.as_deref(), Some("chatcmpl-D8Z5oo6uDh67AD85p73ksdT1KxhE0"));
    assert_eq!(meta.1.as_deref(), Some("gpt-4.1-nano-2025-04-14"));
    assert_eq!(meta.2, Some(1770933892));
    assert!(r.text.starts_with("**Holiday Name:** Harmony Day\n\n**Date:** Celebrated annually"), "{}", r.text);
    assert!(r.text.ends_with("shared human experiences and mutual respect."));
    assert_eq!(r.text.chars().count(), 1724);
    assert!(r.text.contains('—') && r.text.contains('’'));
    assert_eq!(r.reasoning, "");
    assert!(r.tools.is_empty());
    assert_eq!(r.finish.unwrap().0, FinishReason::Stop);
    assert_eq!(r.usage(), usage(16, 300, 316, Some(0), Some(0)));
}

#[test]
fn deepseek_reasoning() {
    let r = Reply::decoded("deepseek--deepseek-reasoning");
    assert_eq!(r.text, "The word \"strawberry\" contains three \"r\"s.");
    assert!(r.reasoning.starts_with("We need to count the number of the letter \"r\" in"));
    assert!(r.reasoning.ends_with("Thus, the answer is 3."));
    assert_eq!(r.reasoning.chars().count(), 606);
    assert_eq!(r.finish.unwrap().0, FinishReason::Stop);
    assert_eq!(r.usage(), usage(18, 219, 237, Some(205), Some(0)));
}

#[test]
fn deepseek_text_cut_by_length() {
    let r = Reply::decoded("deepseek--deepseek-text");
    assert!(r.text.starts_with("## **Holiday Name:** Starlight Remembrance\n\n"));
    assert!(r.text.ends_with(" observe 15 minutes of silent looking at"));
    assert_eq!(r.text.chars().count(), 1855);
    assert_eq!(r.finish.unwrap().0, FinishReason::Length);
    assert_eq!(r.usage(), usage(13, 400, 413, None, Some(0)));
}

#[test]
fn deepseek_tool_call_after_reasoning() {
    let r = Reply::decoded("deepseek--deepseek-tool-call");
    assert!(r.reasoning.starts_with("The user is asking for the weather in San Francisco"));
    assert_eq!(r.reasoning.chars().count(), 191);
    assert_eq!(r.text, "");
    assert_eq!(r.tools.len(), 1);
    assert_eq!(r.tool(0), ("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", json!({ "location": "San Francisco" })));
    assert_eq!(r.finish.unwrap().0, FinishReason::ToolCalls);
    assert_eq!(r.usage(), usage(339, 83, 422, Some(39), Some(320)));
}

#[test]
fn groq_reasoning_uses_the_reasoning_field() {
    let r = Reply::decoded("groq--groq-reasoning");
    assert!(r.reasoning.starts_with("Okay, let me try to figure out how many times the "));
    assert!(r.reasoning.ends_with("is three.\n"));
    assert_eq!(r.reasoning.chars().count(), 2952);
    assert!(r.text.starts_with("The word **\"strawberry\"** is spelled as **S-T-R-A-W-B-E-R-R-"));
    assert!(r.text.ends_with("**Final Answer**: $\\boxed{3}$"));
    assert_eq!(r.text.chars().count(), 347);
    assert_eq!(r.finish.unwrap().0, FinishReason::Stop);
    assert_eq!(r.usage(), usage(17, 1107, 1124, Some(963), None));
}

#[test]
fn groq_text() {
    let r = Reply::decoded("groq--groq-text");
    assert!(r.text.starts_with("Introducing \"Luminaria\" - a new holiday that celebrates the "));
    assert!(r.text.ends_with("per appreciation for the magic of light."));
    assert_eq!(r.text.chars().count(), 3189);
    assert_eq!(r.metadata.as_ref().unwrap().1.as_deref(), Some("llama-3.3-70b-versatile"));
    assert_eq!(r.usage(), usage(45, 662, 707, None, None));
}

#[test]
fn groq_tool_call_in_one_piece() {
    let r = Reply::decoded("groq--groq-tool-call");
    assert_eq!(r.tool(0), ("tk85n1k4m", "weather", json!({})));
    assert_eq!(r.finish.unwrap().0, FinishReason::ToolCalls);
    assert_eq!(r.usage(), usage(210, 15, 225, None, None));
}

#[test]
fn mistral_incremental_tool_call_ignores_the_repeated_empty_name() {
    let events = decode_pieces(&[&fixture_stream("mistral--mistral-incremental-tool-call")], false).unwrap();
    let named = events.iter().filter(|e| matches!(e, ModelEvent::ToolCallDelta { name: Some(_), .. })).count();
    assert_eq!(named, 1);
    let r = Reply::of(&events);
    assert_eq!(
        r.tool(0),
        ("chatcmpl-tool-9f149c74c42f265b", "webSearchTool", json!({ "query": "current Berlin weather" }))
    );
    assert_eq!(r.text, "");
    assert_eq!(r.usage(), usage(171, 14, 185, None, Some(128)));
}

#[test]
fn mistral_text() {
    let r = Reply::decoded("mistral--mistral-text");
    assert_eq!(r.text, "Hello, world! This is a test response.");
    assert_eq!(r.finish.unwrap(), (FinishReason::Stop, Some(usage(13, 8, 21, None, None))));
}

/// A Mistral reasoning model (Magistral) as it streams: `delta.content` is a list of typed parts,
/// thinking first (its text in a list of its own), then the answer; a plain string may follow.
const MAGISTRAL: &[&str] = &[
    r#"{"id":"e1","object":"chat.completion.chunk","created":1750000000,"model":"magistral-medium-2507","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
    r#"{"id":"e1","object":"chat.completion.chunk","created":1750000000,"model":"magistral-medium-2507","choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"The user greets"}]}]},"finish_reason":null}]}"#,
    r#"{"id":"e1","object":"chat.completion.chunk","created":1750000000,"model":"magistral-medium-2507","choices":[{"index":0,"delta":{"content":[{"thinking":[{"text":" me \u2014 ","type":"text"},{"type":"text","text":"answer kindly."}],"type":"thinking"}]},"finish_reason":null}]}"#,
    r#"{"id":"e1","object":"chat.completion.chunk","created":1750000000,"model":"magistral-medium-2507","choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Hello"},{"type":"reference","reference_ids":[1]},{"type":"text","text":" there"}]},"finish_reason":null}]}"#,
    r#"{"id":"e1","object":"chat.completion.chunk","created":1750000000,"model":"magistral-medium-2507","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}"#,
];

#[test]
fn mistral_reasoning_parts_become_reasoning_then_text() {
    let body = chat_stream(&MAGISTRAL.iter().map(|l| l.to_string()).collect::<Vec<_>>());
    let events = decode_pieces(&[&body], false).unwrap();
    let deltas: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(t) => Some(("reasoning", t.as_str())),
            ModelEvent::TextDelta(t) => Some(("text", t.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        [
            ("reasoning", "The user greets"),
            ("reasoning", " me \u{2014} "),
            ("reasoning", "answer kindly."),
            ("text", "Hello"),
            ("text", " there"),
            ("text", "!"),
        ]
    );
    let step = crate::providers::step_of(events.clone());
    assert_eq!(step.reasoning, "The user greets me \u{2014} answer kindly.");
    assert_eq!(step.text, "Hello there!");
    assert_eq!(step.finish_reason, FinishReason::Stop);
    for cut in 1..body.len() {
        assert_eq!(decode_pieces(&[&body[..cut], &body[cut..]], false).unwrap(), events, "split at {cut}");
    }
}

#[test]
fn content_parts_of_the_wrong_shape_are_reported() {
    let chunk = |content: &str| format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{content}}}}}]}}\n\n");
    let wrong = [r#"[{"type":"text","text":7}]"#, r#"["hi"]"#, r#"[{"type":"thinking","thinking":[{"text":[]}]}]"#];
    for content in wrong {
        let err = decode(&chunk(content)).unwrap_err();
        assert!(err.to_string().contains("does not understand"), "{content}: {err}");
    }
}

#[test]
fn mistral_tool_call_without_index() {
    let r = Reply::decoded("mistral--mistral-tool-call");
    assert_eq!(r.tool(0), ("gSIMJiOkT", "weather", json!({ "location": "San Francisco" })));
    assert_eq!(r.finish.unwrap(), (FinishReason::ToolCalls, Some(usage(124, 22, 146, None, None))));
}

/// Text, reasoning and tool arguments read from the fixture with a generic JSON parser must match
/// what the decoder reports, for every fixture.
#[test]
fn every_fixture_matches_a_plain_reading_of_its_json() {
    for name in FIXTURES {
        let (mut text, mut reasoning, mut args) = (String::new(), String::new(), BTreeMap::<u64, String>::new());
        for line in fixture_lines(name) {
            let chunk: Value = serde_json::from_str(&line).unwrap();
            let Some(delta) = chunk.pointer("/choices/0/delta") else { continue };
            text += delta["content"].as_str().unwrap_or("");
            let r = delta["reasoning_content"].as_str().filter(|s| !s.is_empty());
            reasoning += r.or(delta["reasoning"].as_str()).unwrap_or("");
            for (i, call) in delta["tool_calls"].as_array().into_iter().flatten().enumerate() {
                let index = call["index"].as_u64().unwrap_or(i as u64);
                *args.entry(index).or_default() += call["function"]["arguments"].as_str().unwrap_or("");
            }
        }
        let r = Reply::decoded(name);
        assert_eq!(r.text, text, "{name}");
        assert_eq!(r.reasoning, reasoning, "{name}");
        let decoded: BTreeMap<u64, String> = r.tools.iter().map(|(i, t)| (*i as u64, t.2.clone())).collect();
        assert_eq!(decoded, args, "{name}");
        assert!(r.metadata.is_some() && r.finish.is_some(), "{name}");
    }
}

#[test]
fn raw_events_come_before_the_events_of_their_chunk() {
    let body = fixture_stream("mistral--mistral-text");
    let lines = fixture_lines("mistral--mistral-text");
    let events = decode_pieces(&[&body], true).unwrap();
    let raws: Vec<&str> =
        events.iter().filter_map(|e| if let ModelEvent::Raw(r) = e { Some(r.as_str()) } else { None }).collect();
    assert_eq!(raws, lines, "one raw event per chunk, none for [DONE]");
    assert!(matches!(events[0], ModelEvent::Raw(_)));
    assert!(matches!(events[1], ModelEvent::ResponseMetadata { .. }));
    assert!(matches!(events[2], ModelEvent::Raw(_)));
    assert_eq!(events[3], ModelEvent::TextDelta("Hello".into()));
    assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
    // Without raw events asked for, there are none.
    assert!(!decode_pieces(&[&body], false).unwrap().iter().any(|e| matches!(e, ModelEvent::Raw(_))));
}

fn chunk(delta: Value, finish: Value) -> String {
    format!("data: {}\n\n", json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] }))
}

#[test]
fn finish_reasons_map_to_ours() {
    let cases = [
        ("stop", FinishReason::Stop),
        ("length", FinishReason::Length),
        ("tool_calls", FinishReason::ToolCalls),
        ("function_call", FinishReason::ToolCalls),
        ("content_filter", FinishReason::ContentFilter),
        ("eos", FinishReason::Other),
    ];
    for (wire, ours) in cases {
        let events = decode(&(chunk(json!({}), json!(wire)) + "data: [DONE]\n\n")).unwrap();
        assert_eq!(events, vec![ModelEvent::Finish { reason: ours, usage: None }], "{wire}");
    }
    // `[DONE]` without any finish reason still finishes, as `other`.
    let events = decode(&(chunk(json!({ "content": "hi" }), Value::Null) + "data: [DONE]\n\n")).unwrap();
    assert_eq!(events.last(), Some(&ModelEvent::Finish { reason: FinishReason::Other, usage: None }));
}

#[test]
fn a_finish_reason_without_done_is_a_complete_reply() {
    let events = decode(&(chunk(json!({ "content": "hi" }), json!("stop")))).unwrap();
    assert_eq!(
        events,
        vec![ModelEvent::TextDelta("hi".into()), ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]
    );
}

#[test]
fn a_cut_stream_is_a_retryable_error() {
    let cut_bodies = [
        chunk(json!({ "content": "hi" }), Value::Null), // neither [DONE] nor a reason
        chunk(json!({}), json!("stop")) + "data: {\"choices\":[]}", // an event cut in half
        chunk(json!({}), json!("stop")) + "data: [DONE]", // even [DONE] must be whole
        String::new(),                                  // nothing at all
    ];
    for body in cut_bodies {
        assert_cut_short(decode(&body), &body);
    }
}

#[test]
fn nothing_after_done_counts() {
    let body = chunk(json!({ "content": "a" }), json!("stop"))
        + "data: [DONE]\n\n"
        + &chunk(json!({ "content": "b" }), Value::Null)
        + "data: {oops";
    let mut decoder = ChatDecoder::new(false);
    let mut out = Vec::new();
    decoder.push(body.as_bytes(), &mut out).unwrap();
    decoder.push(b"more", &mut out).unwrap();
    decoder.end(&mut out).unwrap();
    assert_eq!(
        out,
        vec![ModelEvent::TextDelta("a".into()), ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]
    );
}

#[test]
fn usage_comes_from_the_last_chunk_that_has_it() {
    let body = format!(
        "{}data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(json!({}), json!("stop")),
        json!({ "choices": [], "x_groq": { "usage": { "prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3 } } }),
        json!({ "choices": [], "usage": { "prompt_tokens": 5, "completion_tokens": 6.0, "total_tokens": 11,
                "prompt_tokens_details": { "cached_tokens": 4 }, "completion_tokens_details": { "reasoning_tokens": 2 } } }),
    );
    let events = decode(&body).unwrap();
    assert_eq!(
        events,
        vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: Some(usage(5, 6, 11, Some(2), Some(4))) }]
    );
    let groq_only = chunk(json!({}), json!("stop")).replace("}]}", "}],\"x_groq\":{\"usage\":{\"prompt_tokens\":7}}}");
    assert_eq!(
        decode(&groq_only).unwrap(),
        vec![ModelEvent::Finish {
            reason: FinishReason::Stop,
            usage: Some(Usage { input_tokens: Some(7), ..Usage::default() })
        }]
    );
}

#[test]
fn deltas_in_order_within_one_chunk() {
    let delta = json!({
        "reasoning_content": "think", "reasoning": "think", "content": "say",
        "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "f", "arguments": "{\"x\":" } },
            { "id": "b", "function": { "name": "g" } },
            { "index": 5, "function": { "arguments": "1}" } },
        ]
    });
    let body = format!(
        "data: {}\n\n",
        json!({ "id": "r1", "model": "m", "created": 7, "choices": [{ "delta": delta, "finish_reason": "tool_calls" }] })
    );
    let events = decode(&body).unwrap();
    let call = |index, id: Option<&str>, name: Option<&str>, args: &str| ModelEvent::ToolCallDelta {
        index,
        id: id.map(Into::into),
        name: name.map(Into::into),
        args_delta: args.into(),
    };
    assert_eq!(
        events,
        vec![
            ModelEvent::ResponseMetadata { id: Some("r1".into()), model_id: Some("m".into()), created: Some(7) },
            // Providers that send both spellings of reasoning send the same text: report it once.
            ModelEvent::ReasoningDelta("think".into()),
            ModelEvent::TextDelta("say".into()),
            call(0, Some("a"), Some("f"), "{\"x\":"),
            call(1, Some("b"), Some("g"), ""),
            call(5, None, None, "1}"),
            ModelEvent::Finish { reason: FinishReason::ToolCalls, usage: None },
        ]
    );
}

#[test]
fn empty_deltas_and_keep_alives_produce_nothing() {
    let body = format!(
        ": keep-alive\n\ndata:\n\n{}{}data: [DONE]\n\n",
        chunk(json!({ "role": "assistant", "content": "", "reasoning_content": "", "refusal": null }), Value::Null),
        chunk(json!({ "content": null, "reasoning": null }), Value::Null),
    );
    assert_eq!(decode(&body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Other, usage: None }]);
}

#[test]
fn metadata_is_sent_once() {
    let line = "data: {\"id\":\"x\",\"model\":\"m\",\"created\":1,\"choices\":[{\"delta\":{\"content\":\"t\"}}]}\n\n";
    let events = decode(&(line.repeat(3) + "data: [DONE]\n\n")).unwrap();
    let metadata = events.iter().filter(|e| matches!(e, ModelEvent::ResponseMetadata { .. })).count();
    assert_eq!((metadata, events.len()), (1, 5));
}

#[test]
fn an_error_chunk_becomes_an_error_event() {
    let data = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let body = format!("data: {data}\n\n");
    let events = decode(&body).unwrap();
    assert_eq!(
        events,
        vec![
            ModelEvent::Error { message: "Rate limit reached".into(), body: Some(data.into()) },
            // The reply is over; it ended in an error.
            ModelEvent::Finish { reason: FinishReason::Error, usage: None },
        ]
    );
    let raw = decode_pieces(&[body.as_bytes()], true).unwrap();
    assert_eq!(raw[0], ModelEvent::Raw(data.into()));
    assert!(matches!(&raw[1], ModelEvent::Error { body: Some(b), .. } if b == data));
    let plain = decode("data: {\"error\":\"overloaded\"}\n\ndata: [DONE]\n\n").unwrap();
    assert!(matches!(&plain[0], ModelEvent::Error { message, .. } if message == "overloaded"));
}

#[test]
fn invalid_json_is_an_error_quoting_the_event() {
    let data = format!("{{\"choices\": [{}", "é".repeat(300));
    let err = decode(&format!("data: {data}\n\n")).unwrap_err();
    assert_not_json(err, &data);
}

#[test]
fn valid_json_of_the_wrong_shape_is_an_error() {
    let err = decode("data: {\"choices\": 5}\n\n").unwrap_err();
    assert!(err.to_string().contains("does not understand"), "{err}");
    assert!(err.to_string().ends_with("{\"choices\": 5}"), "{err}");
}

#[test]
fn events_before_a_bad_one_are_kept() {
    let body = chunk(json!({ "content": "ok" }), Value::Null) + "data: nope\n\n";
    let mut decoder = ChatDecoder::new(true);
    let mut out = Vec::new();
    assert!(decoder.push(body.as_bytes(), &mut out).is_err());
    assert_eq!(out[1], ModelEvent::TextDelta("ok".into()));
    assert_eq!(out.last(), Some(&ModelEvent::Raw("nope".into())));
}

/// Throughput check, not run by default: `cargo test --release --lib decode_throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn decode_throughput() {
    let bodies: Vec<Vec<u8>> = FIXTURES.iter().map(|n| fixture_stream(n)).collect();
    let events: usize = FIXTURES.iter().map(|n| fixture_lines(n).len()).sum();
    let rounds = 20_000 / events + 1;
    let start = std::time::Instant::now();
    let mut produced = 0;
    for _ in 0..rounds {
        for body in &bodies {
            let mut rng = Rng::new(body.len() as u64);
            produced += decode_pieces(&random_pieces(body, &mut rng, 4096), false).unwrap().len();
        }
    }
    let elapsed = start.elapsed();
    println!("{} SSE events ({produced} model events) in {elapsed:?}", events * rounds);
}
