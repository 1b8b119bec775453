//! Tests of the Gemini stream decoder against the recorded `google--*` streams
//! (`/work/shared/fixtures/provider-streams`, see its README) and hand-written events.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::GoogleDecoder;
use crate::core::error::AgentError;
use crate::core::model::{FinishReason, MetaTarget, ModelEvent, Usage};
use crate::providers::tests::fixtures::{
    self, assert_cut_short, assert_not_json, data_stream, fixture_lines, GOOGLE as FIXTURES,
};
use crate::providers::StreamDecoder;

pub(super) fn fixture_stream(name: &str) -> Vec<u8> {
    data_stream(&fixture_lines(name))
}

pub(super) fn decode_pieces(pieces: &[&[u8]], include_raw: bool) -> Result<Vec<ModelEvent>, AgentError> {
    fixtures::decode_pieces(GoogleDecoder::new(include_raw), pieces)
}

fn decode(body: &str) -> Result<Vec<ModelEvent>, AgentError> {
    decode_pieces(&[body.as_bytes()], false)
}

/// The SSE body of these events (given as JSON values).
fn events(values: &[Value]) -> String {
    values.iter().map(|v| format!("data: {v}\n\n")).collect()
}

/// What a user would read off a reply.
#[derive(Debug, Default)]
struct Reply {
    metadata: Option<(Option<String>, Option<String>, Option<u64>)>,
    text: String,
    reasoning: String,
    /// index → (name, arguments text)
    tools: BTreeMap<u32, (Option<String>, String)>,
    /// Provider data for the parts, in order.
    metas: Vec<(MetaTarget, Value)>,
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
                    assert!(id.is_none(), "Gemini sends no call ids; the core assigns them");
                    let entry = reply.tools.entry(*index).or_default();
                    if name.is_some() {
                        assert!(entry.0.is_none(), "tool call name twice");
                        entry.0 = name.clone();
                    }
                    assert!(entry.0.is_some(), "the name comes with the first piece of a call");
                    entry.1.push_str(args_delta);
                }
                ModelEvent::PartMeta { target, meta } => reply.metas.push((*target, meta.clone())),
                ModelEvent::Finish { reason, usage } => reply.finish = Some((*reason, *usage)),
                other => panic!("unexpected event {other:?}"),
            }
        }
        reply
    }

    fn decoded(name: &str) -> Reply {
        Reply::of(&decode_pieces(&[&fixture_stream(name)], false).unwrap())
    }

    /// The name and parsed arguments of call `index`.
    fn tool(&self, index: u32) -> (&str, Value) {
        let (name, args) = &self.tools[&index];
        (name.as_deref().unwrap(), serde_json::from_str(args).unwrap())
    }

    fn reason(&self) -> FinishReason {
        self.finish.unwrap().0
    }

    fn usage(&self) -> Usage {
        self.finish.unwrap().1.expect("usage")
    }
}

fn usage(input: u64, output: u64, total: u64, reasoning: Option<u64>) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        total_tokens: Some(total),
        reasoning_tokens: reasoning,
        cached_input_tokens: None,
    }
}

fn metadata(id: &str, model: &str) -> Option<(Option<String>, Option<String>, Option<u64>)> {
    Some((Some(id.into()), Some(model.into()), None))
}

#[test]
fn google_text() {
    let r = Reply::decoded("google--google-text");
    assert_eq!(r.metadata, metadata("bH6LaZW8Fp_3nsEPqtaSwQ4", "gemini-3-pro-preview"));
    assert_eq!(r.text, "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y");
    assert_eq!(r.reasoning, "");
    assert!(r.tools.is_empty());
    assert_eq!(r.reason(), FinishReason::Stop);
    // Output counts the 185 thinking tokens too: 9 + (23 + 185) = 217.
    assert_eq!(r.usage(), usage(9, 208, 217, Some(185)));
}

#[test]
fn google_reasoning_reports_thinking_tokens_without_thought_text() {
    // Thought summaries were not asked for (`includeThoughts`), so only their token count shows.
    let r = Reply::decoded("google--google-reasoning");
    assert_eq!(r.metadata, metadata("dX6LadKVC7SZ28oPr9yJoQs", "gemini-3-pro-preview"));
    assert_eq!(r.text, "There are **3** \"r\"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.");
    assert_eq!(r.reasoning, "");
    assert_eq!(r.reason(), FinishReason::Stop);
    assert_eq!(r.usage(), usage(9, 285, 294, Some(256)));
}

#[test]
fn google_tool_call() {
    let r = Reply::decoded("google--google-tool-call");
    assert_eq!(r.metadata, metadata("b36LacjwM668nsEP2tbsgQQ", "gemini-3-pro-preview"));
    assert_eq!(r.text, "");
    assert_eq!(r.tools.len(), 1);
    assert_eq!(r.tool(0), ("weather", json!({ "location": "San Francisco" })));
    // Gemini says STOP after a function call; the agent needs to know it must run the tool.
    assert_eq!(r.reason(), FinishReason::ToolCalls);
    assert_eq!(r.usage(), usage(29, 60, 89, Some(45)));
}

#[test]
fn google_streamed_tool_call_arguments() {
    let events = decode_pieces(&[&fixture_stream("google--google-stream-tool-call-arguments")], false).unwrap();
    let r = Reply::of(&events);
    assert_eq!(r.metadata, metadata("dqHOab6xGLzWodAPkPuViA4", "gemini-3.1-pro-preview"));
    assert_eq!(r.tools.len(), 2);
    assert_eq!(r.tool(0), ("getWeather", json!({ "location": "Boston" })));
    assert_eq!(r.tool(1), ("getWeather", json!({ "location": "San Francisco" })));
    assert_eq!(r.text, "");
    assert_eq!(r.reason(), FinishReason::ToolCalls);
    assert_eq!(r.usage(), usage(26, 155, 181, Some(132)));
    // The first call's arguments are complete before the second call starts.
    let call = |index, name: Option<&str>, args: &str| ModelEvent::ToolCallDelta {
        index,
        id: None,
        name: name.map(Into::into),
        args_delta: args.into(),
    };
    let calls: Vec<&ModelEvent> = events.iter().filter(|e| matches!(e, ModelEvent::ToolCallDelta { .. })).collect();
    assert_eq!(
        calls,
        [
            &call(0, Some("getWeather"), ""),
            &call(0, None, "{\"location\":\"Boston\"}"),
            &call(1, Some("getWeather"), ""),
            &call(1, None, "{\"location\":\"San Francisco\"}"),
        ]
    );
}

/// Text, reasoning and whole function calls read from each fixture with a generic JSON parser
/// must match what the decoder reports.
#[test]
fn every_fixture_matches_a_plain_reading_of_its_json() {
    for name in FIXTURES {
        let (mut text, mut reasoning, mut calls) = (String::new(), String::new(), Vec::new());
        let mut partial = false;
        for line in fixture_lines(name) {
            let event: Value = serde_json::from_str(&line).unwrap();
            for part in event.pointer("/candidates/0/content/parts").and_then(Value::as_array).into_iter().flatten() {
                if let Some(t) = part["text"].as_str() {
                    if part["thought"] == json!(true) {
                        reasoning += t
                    } else {
                        text += t
                    }
                }
                let call = &part["functionCall"];
                partial |= call.get("partialArgs").is_some();
                if let (Some(name), Some(args)) = (call["name"].as_str(), call.get("args")) {
                    calls.push((name.to_string(), args.clone()));
                }
            }
        }
        let r = Reply::decoded(name);
        assert_eq!(r.text, text, "{name}");
        assert_eq!(r.reasoning, reasoning, "{name}");
        if !partial {
            let decoded: Vec<(String, Value)> =
                (0..r.tools.len() as u32).map(|i| r.tool(i)).map(|(n, a)| (n.to_string(), a)).collect();
            assert_eq!(decoded, calls, "{name}");
        }
        assert!(r.metadata.is_some() && r.finish.is_some(), "{name}");
    }
}

#[test]
fn raw_events_come_before_the_events_of_their_response() {
    let lines = fixture_lines("google--google-text");
    let events = decode_pieces(&[&data_stream(&lines)], true).unwrap();
    let raws: Vec<&str> =
        events.iter().filter_map(|e| if let ModelEvent::Raw(r) = e { Some(r.as_str()) } else { None }).collect();
    assert_eq!(raws, lines, "one raw event per response");
    assert!(matches!(events[0], ModelEvent::Raw(_)));
    assert!(matches!(events[1], ModelEvent::ResponseMetadata { .. }));
    assert_eq!(events[2], ModelEvent::TextDelta("There are **3**".into()));
    assert!(matches!(events[3], ModelEvent::Raw(_)));
    assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
    assert!(!decode_pieces(&[&data_stream(&lines)], false).unwrap().iter().any(|e| matches!(e, ModelEvent::Raw(_))));
}

/// A candidate with the given parts and finish reason.
fn candidate(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({ "content": { "role": "model", "parts": parts }, "index": 0 });
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({ "candidates": [candidate] })
}

#[test]
fn thought_parts_are_reasoning() {
    let body = events(&[
        candidate(json!([{ "text": "**Counting** letters", "thought": true }]), None),
        candidate(
            json!([{ "text": "", "thoughtSignature": "c2ln" }, { "thought": true, "text": " one by one" }]),
            None,
        ),
        candidate(json!([{ "text": "Three.", "thought": false }]), Some("STOP")),
    ]);
    assert_eq!(
        decode(&body).unwrap(),
        vec![
            ModelEvent::ReasoningDelta("**Counting** letters".into()),
            ModelEvent::ReasoningDelta(" one by one".into()),
            ModelEvent::TextDelta("Three.".into()),
            ModelEvent::Finish { reason: FinishReason::Stop, usage: None },
        ]
    );
}

#[test]
fn function_calls_with_and_without_arguments() {
    let body = events(&[candidate(
        json!([
            { "text": "Checking." },
            { "functionCall": { "name": "now" } },
            { "functionCall": { "name": "add", "args": { "numbers": [1, 2.5, -3], "tags": ["a", "b"], "deep": [[{ "x": null }]] } } },
            { "functionCall": { "name": "echo", "args": {} } },
        ]),
        Some("STOP"),
    )]);
    let r = Reply::of(&decode(&body).unwrap());
    assert_eq!(r.text, "Checking.");
    assert_eq!(r.tool(0), ("now", json!({})));
    assert_eq!(r.tool(1), ("add", json!({ "numbers": [1, 2.5, -3], "tags": ["a", "b"], "deep": [[{ "x": null }]] })));
    assert_eq!(r.tool(2), ("echo", json!({})));
    assert_eq!(r.reason(), FinishReason::ToolCalls);
}

#[test]
fn calls_across_events_keep_counting() {
    let body = events(&[
        candidate(json!([{ "functionCall": { "name": "a", "args": { "n": 1 } } }]), None),
        candidate(json!([{ "functionCall": { "name": "b", "args": { "n": 2 } } }]), Some("STOP")),
    ]);
    let r = Reply::of(&decode(&body).unwrap());
    assert_eq!((r.tool(0), r.tool(1)), (("a", json!({ "n": 1 })), ("b", json!({ "n": 2 }))));
}

#[test]
fn streamed_arguments_of_every_kind() {
    let piece = |path: &str, value: Value| {
        let mut p = json!({ "jsonPath": path });
        p.as_object_mut().unwrap().extend(value.as_object().unwrap().clone());
        p
    };
    let body = events(&[
        candidate(json!([{ "functionCall": { "name": "plan", "willContinue": true } }]), None),
        candidate(
            json!([{ "functionCall": { "willContinue": true, "partialArgs": [
                piece("$.title", json!({ "stringValue": "Lasa", "willContinue": true })),
            ] } }]),
            None,
        ),
        candidate(
            json!([{ "functionCall": { "willContinue": true, "partialArgs": [
                piece("$.title", json!({ "stringValue": "gna \"al forno\"" })),
                piece("$.servings", json!({ "numberValue": 4 })),
                piece("$.vegetarian", json!({ "boolValue": false })),
                piece("$.note", json!({ "nullValue": null })),
                piece("$.steps[0].text", json!({ "stringValue": "Boil" })),
                piece("$.steps[0].minutes", json!({ "numberValue": 10.5 })),
                piece("$.steps[1].text", json!({ "stringValue": "Bake" })),
                piece("$.tags[0]", json!({ "stringValue": "pasta" })),
                piece("$['odd key']", json!({ "stringValue": "x" })),
                piece("not a path", json!({ "stringValue": "ignored" })),
            ] } }]),
            None,
        ),
        candidate(json!([{ "functionCall": {} }]), Some("STOP")),
    ]);
    let r = Reply::of(&decode(&body).unwrap());
    assert_eq!(
        r.tool(0),
        (
            "plan",
            json!({
                "title": "Lasagna \"al forno\"", "servings": 4, "vegetarian": false, "note": null,
                "steps": [{ "text": "Boil", "minutes": 10.5 }, { "text": "Bake" }],
                "tags": ["pasta"], "odd key": "x",
            })
        )
    );
    assert_eq!(r.reason(), FinishReason::ToolCalls);
}

#[test]
fn a_streamed_call_ends_without_a_closing_part() {
    // The arguments end with a piece that will not continue, or with the end of the reply.
    let closed_by_piece = events(&[
        candidate(
            json!([{ "functionCall": { "name": "f", "partialArgs": [{ "jsonPath": "$.a", "numberValue": 1 }] } }]),
            None,
        ),
        candidate(json!([{ "functionCall": { "name": "g", "args": { "b": 2 } } }]), Some("STOP")),
    ]);
    let r = Reply::of(&decode(&closed_by_piece).unwrap());
    assert_eq!((r.tool(0), r.tool(1)), (("f", json!({ "a": 1 })), ("g", json!({ "b": 2 }))));
    let cut_at_finish = events(&[
        candidate(json!([{ "functionCall": { "name": "f", "willContinue": true } }]), None),
        candidate(
            json!([{ "functionCall": { "willContinue": true, "partialArgs": [{ "jsonPath": "$.list[0]", "stringValue": "x" }] } }]),
            Some("STOP"),
        ),
    ]);
    let r = Reply::of(&decode(&cut_at_finish).unwrap());
    assert_eq!(r.tool(0), ("f", json!({ "list": ["x"] })));
    // A streamed call that never got arguments has none.
    let empty = events(&[
        candidate(json!([{ "functionCall": { "name": "f", "willContinue": true } }]), None),
        candidate(json!([{ "functionCall": {} }]), Some("STOP")),
    ]);
    assert_eq!(Reply::of(&decode(&empty).unwrap()).tool(0), ("f", json!({})));
}

#[test]
fn the_closing_part_sends_the_arguments_at_once() {
    // The arguments are out as soon as `"functionCall": {}` ends the call, not at the end of the reply.
    let body = events(&[
        candidate(json!([{ "functionCall": { "name": "f", "willContinue": true } }]), None),
        candidate(
            json!([{ "functionCall": { "willContinue": true, "partialArgs": [{ "jsonPath": "$.q", "stringValue": "x" }] } }]),
            None,
        ),
        candidate(json!([{ "functionCall": {} }, { "text": "Calling f." }]), Some("STOP")),
    ]);
    assert_eq!(
        decode(&body).unwrap(),
        vec![
            ModelEvent::ToolCallDelta { index: 0, id: None, name: Some("f".into()), args_delta: String::new() },
            ModelEvent::ToolCallDelta { index: 0, id: None, name: None, args_delta: "{\"q\":\"x\"}".into() },
            ModelEvent::TextDelta("Calling f.".into()),
            ModelEvent::Finish { reason: FinishReason::ToolCalls, usage: None },
        ]
    );
}

#[test]
fn finish_reasons_map_to_ours() {
    let cases = [
        ("STOP", FinishReason::Stop),
        ("MAX_TOKENS", FinishReason::Length),
        ("SAFETY", FinishReason::ContentFilter),
        ("RECITATION", FinishReason::ContentFilter),
        ("BLOCKLIST", FinishReason::ContentFilter),
        ("PROHIBITED_CONTENT", FinishReason::ContentFilter),
        ("SPII", FinishReason::ContentFilter),
        ("IMAGE_SAFETY", FinishReason::ContentFilter),
        ("LANGUAGE", FinishReason::Other),
        ("MALFORMED_FUNCTION_CALL", FinishReason::Other),
        ("OTHER", FinishReason::Other),
        ("FINISH_REASON_UNSPECIFIED", FinishReason::Other),
    ];
    for (wire, ours) in cases {
        let events = decode(&events(&[candidate(json!([]), Some(wire))])).unwrap();
        assert_eq!(events, vec![ModelEvent::Finish { reason: ours, usage: None }], "{wire}");
    }
    // Only STOP turns into tool-calls when a function was called.
    let cut =
        events(&[candidate(json!([{ "functionCall": { "name": "f", "args": { "a": "b" } } }]), Some("MAX_TOKENS"))]);
    assert_eq!(Reply::of(&decode(&cut).unwrap()).reason(), FinishReason::Length);
}

/// SYNTHETIC: no recorded safety block is among the fixtures. These events are written by hand
/// after the documented `GenerateContentResponse` shape (`candidates[].finishReason`,
/// `candidates[].safetyRatings`, `promptFeedback.blockReason`, `usageMetadata`).
#[test]
fn safety_blocks_are_content_filter_finishes() {
    let mut first = candidate(json!([{ "text": "Here is how to" }]), None);
    first["modelVersion"] = json!("gemini-2.5-flash");
    first["responseId"] = json!("synthetic-1");
    let answer_blocked = events(&[
        first,
        json!({
            "candidates": [{
                "finishReason": "SAFETY",
                "index": 0,
                "safetyRatings": [
                    { "category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true },
                    { "category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE" },
                ],
            }],
            "usageMetadata": { "promptTokenCount": 12, "candidatesTokenCount": 4, "totalTokenCount": 16 },
            "modelVersion": "gemini-2.5-flash",
            "responseId": "synthetic-1",
        }),
    ]);
    let r = Reply::of(&decode(&answer_blocked).unwrap());
    assert_eq!(r.text, "Here is how to");
    assert_eq!(r.finish, Some((FinishReason::ContentFilter, Some(usage(12, 4, 16, None)))));

    let prompt_blocked = events(&[json!({
        "promptFeedback": {
            "blockReason": "SAFETY",
            "safetyRatings": [{ "category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true }],
        },
        "usageMetadata": { "promptTokenCount": 9, "totalTokenCount": 9 },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "synthetic-2",
    })]);
    assert_eq!(
        decode(&prompt_blocked).unwrap(),
        vec![
            ModelEvent::ResponseMetadata {
                id: Some("synthetic-2".into()),
                model_id: Some("gemini-2.5-flash".into()),
                created: None
            },
            ModelEvent::Finish {
                reason: FinishReason::ContentFilter,
                usage: Some(Usage { input_tokens: Some(9), total_tokens: Some(9), ..Usage::default() }),
            },
        ]
    );
    // An unspecified block reason blocks nothing: the reply still needs its finish reason.
    let unspecified = events(&[json!({ "promptFeedback": { "blockReason": "BLOCK_REASON_UNSPECIFIED" } })]);
    assert!(decode(&unspecified).is_err());
}

#[test]
fn a_cut_stream_is_a_retryable_error() {
    let cut_bodies = [
        events(&[candidate(json!([{ "text": "hi" }]), None)]), // no finish reason
        events(&[candidate(json!([]), Some("STOP"))]) + "data: {\"candidates\":[]}", // an event cut in half
        events(&[candidate(json!([]), Some("STOP"))]) + ": keep-alive\ndata: {}", // one without its blank line
        String::new(),                                         // nothing at all
    ];
    for body in cut_bodies {
        assert_cut_short(decode(&body), &body);
    }
}

#[test]
fn usage_comes_from_the_last_event_that_has_it() {
    let mut first = candidate(json!([{ "text": "a" }]), None);
    first["usageMetadata"] = json!({ "promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2 });
    let mut last = candidate(json!([{ "text": "b" }]), Some("STOP"));
    last["usageMetadata"] = json!({
        "promptTokenCount": 100, "candidatesTokenCount": 7, "totalTokenCount": 130, "thoughtsTokenCount": 23,
        "cachedContentTokenCount": 64, "promptTokensDetails": [{ "modality": "TEXT", "tokenCount": 100 }],
    });
    let r = Reply::of(&decode(&events(&[first, last, json!({ "usageMetadata": null })])).unwrap());
    assert_eq!(
        r.usage(),
        Usage {
            input_tokens: Some(100),
            output_tokens: Some(30),
            total_tokens: Some(130),
            reasoning_tokens: Some(23),
            cached_input_tokens: Some(64),
        }
    );
}

#[test]
fn metadata_is_sent_once() {
    let mut event = candidate(json!([{ "text": "t" }]), None);
    event["responseId"] = json!("r1");
    event["modelVersion"] = json!("m1");
    let mut last = candidate(json!([]), Some("STOP"));
    last["responseId"] = json!("r2");
    let events = decode(&events(&[event.clone(), event, last])).unwrap();
    assert_eq!(
        events[0],
        ModelEvent::ResponseMetadata { id: Some("r1".into()), model_id: Some("m1".into()), created: None }
    );
    let metadata = events.iter().filter(|e| matches!(e, ModelEvent::ResponseMetadata { .. })).count();
    assert_eq!((metadata, events.len()), (1, 4));
}

#[test]
fn only_the_first_candidate_counts() {
    let body = events(&[json!({ "candidates": [
        { "content": { "parts": [{ "text": "one" }] }, "finishReason": "STOP" },
        { "content": { "parts": [{ "text": "two" }] }, "finishReason": "MAX_TOKENS" },
    ] })]);
    let r = Reply::of(&decode(&body).unwrap());
    assert_eq!((r.text.as_str(), r.reason()), ("one", FinishReason::Stop));
}

#[test]
fn an_error_event_becomes_an_error_event() {
    let data =
        r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#;
    let body = format!("data: {data}\n\n");
    assert_eq!(
        decode(&body).unwrap(),
        vec![
            ModelEvent::Error {
                message: "The model is overloaded. Please try again later.".into(),
                body: Some(data.into())
            },
            // The reply is over; it ended in an error.
            ModelEvent::Finish { reason: FinishReason::Error, usage: None },
        ]
    );
    let raw = decode_pieces(&[body.as_bytes()], true).unwrap();
    assert_eq!(raw[0], ModelEvent::Raw(data.into()));
    assert!(matches!(&raw[1], ModelEvent::Error { body: Some(b), .. } if b == data));
    let plain = decode("data: {\"error\":\"overloaded\"}\n\n").unwrap();
    assert!(matches!(&plain[0], ModelEvent::Error { message, .. } if message == "overloaded"));
    let odd = decode("data: {\"error\":{\"code\":500}}\n\n").unwrap();
    assert!(matches!(&odd[0], ModelEvent::Error { message, .. } if message == "{\"code\":500}"));
}

#[test]
fn invalid_json_is_an_error_quoting_the_event() {
    let data = format!("{{\"candidates\": [{}", "é".repeat(300));
    let err = decode(&format!("data: {data}\n\n")).unwrap_err();
    assert_not_json(err, &data);
}

#[test]
fn valid_json_of_the_wrong_shape_is_an_error() {
    for data in ["{\"candidates\": 5}", "{\"candidates\":[{\"content\":{\"parts\":[{\"thought\":\"yes\"}]}}]}", "[1]"] {
        let err = decode(&format!("data: {data}\n\n")).unwrap_err();
        assert!(err.to_string().contains("does not understand"), "{err}");
        assert!(err.to_string().ends_with(data), "{err}");
    }
}

#[test]
fn events_before_a_bad_one_are_kept() {
    let body = events(&[candidate(json!([{ "text": "ok" }]), None)]) + "data: nope\n\n";
    let mut decoder = GoogleDecoder::new(true);
    let mut out = Vec::new();
    assert!(decoder.push(body.as_bytes(), &mut out).is_err());
    assert_eq!(out[1], ModelEvent::TextDelta("ok".into()));
    assert_eq!(out.last(), Some(&ModelEvent::Raw("nope".into())));
}

#[test]
fn keep_alives_and_empty_events_produce_nothing() {
    let body =
        format!(": keep-alive\n\ndata:\n\n{}", events(&[json!({}), candidate(json!([{ "text": "" }]), Some("STOP"))]));
    assert_eq!(decode(&body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]);
}

#[test]
fn nothing_after_the_end_counts() {
    let mut decoder = GoogleDecoder::new(false);
    let mut out = Vec::new();
    decoder.push(events(&[candidate(json!([{ "text": "a" }]), Some("STOP"))]).as_bytes(), &mut out).unwrap();
    decoder.end(&mut out).unwrap();
    decoder.push(b"data: {oops\n\n", &mut out).unwrap();
    decoder.end(&mut out).unwrap();
    assert_eq!(
        out,
        vec![ModelEvent::TextDelta("a".into()), ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]
    );
}
