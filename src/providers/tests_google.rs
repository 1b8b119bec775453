//! Tests of the Gemini provider: the stream decoder against the recorded `google--*` streams
//! (`/work/shared/fixtures/provider-streams`, see its README) and hand-written events, and the
//! request builder.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::google::{build_request, GoogleDecoder};
use super::tests_fixtures::{self, assert_cut_short, assert_not_json, endpoint_at, pairs, data_stream, fixture_lines, GOOGLE as FIXTURES};
use super::{step_of, Endpoint, HttpRequest, StreamDecoder};
use crate::core::error::AgentError;
use crate::core::model::{
    MetaTarget, AssistantPart, FinishReason, ModelEvent, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart,
    ToolSpec, Usage, UserPart,
};

// ---------------------------------------------------------------------------------------------
// Stream

fn fixture_stream(name: &str) -> Vec<u8> {
    data_stream(&fixture_lines(name))
}

fn decode_pieces(pieces: &[&[u8]], include_raw: bool) -> Result<Vec<ModelEvent>, AgentError> {
    tests_fixtures::decode_pieces(GoogleDecoder::new(include_raw), pieces)
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

// ---------------------------------------------------------------------------------------------
// Request

fn endpoint(key: Option<&str>) -> Endpoint {
    endpoint_at("google", "https://generativelanguage.googleapis.com/v1beta", key)
}

fn request(messages: Vec<ModelMessage>) -> ModelRequest {
    ModelRequest { model_id: "gemini-2.5-flash".into(), messages, ..ModelRequest::default() }
}

fn hello() -> ModelRequest {
    request(vec![ModelMessage::User(vec![UserPart::Text("Hello".into())])])
}

fn build(req: &ModelRequest) -> (HttpRequest, Value) {
    let (http, warnings) = build_request(&endpoint(Some("goog-test")), req).unwrap();
    assert!(warnings.is_empty());
    let body = serde_json::from_str(&http.body).unwrap();
    (http, body)
}

fn body_of(req: &ModelRequest) -> Value {
    build(req).1
}

fn contents_of(messages: Vec<ModelMessage>) -> Value {
    body_of(&request(messages))["contents"].clone()
}

fn object(value: Value) -> Map<String, Value> {
    let Value::Object(map) = value else { panic!("not an object") };
    map
}

#[test]
fn minimal_request() {
    let (http, body) = build(&hello());
    assert_eq!(
        http.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(http.headers, pairs(&[("content-type", "application/json"), ("x-goog-api-key", "goog-test")]));
    assert_eq!(body, json!({ "contents": [{ "role": "user", "parts": [{ "text": "Hello" }] }] }));
    assert!(!http.url.contains("goog-test") && !http.body.contains("goog-test"), "the key goes in a header only");
}

#[test]
fn model_resource_names_are_not_doubled() {
    for (model, path) in [
        ("models/gemini-2.5-pro", "models/gemini-2.5-pro"),
        ("tunedModels/my-model-123", "tunedModels/my-model-123"),
        ("gemini-3-pro-preview", "models/gemini-3-pro-preview"),
    ] {
        let mut req = hello();
        req.model_id = model.into();
        let mut ep = endpoint(None);
        ep.base_url = "https://proxy.example/v1beta/".into();
        let url = build_request(&ep, &req).unwrap().0.url;
        assert_eq!(url, format!("https://proxy.example/v1beta/{path}:streamGenerateContent?alt=sse"));
    }
}

#[test]
fn no_key_no_key_header() {
    let (http, _) = build_request(&endpoint(None), &hello()).unwrap();
    assert_eq!(http.headers, pairs(&[("content-type", "application/json")]));
}

#[test]
fn later_headers_win_case_insensitively() {
    let mut ep = endpoint(Some("goog-test"));
    ep.headers = pairs(&[("X-Goog-Api-Key", "from-model"), ("X-Team", "model"), ("x-only-model", "1")]);
    let mut req = hello();
    req.settings.headers = pairs(&[("x-team", "call"), ("X-Call", "2")]);
    let (http, _) = build_request(&ep, &req).unwrap();
    assert_eq!(
        http.headers,
        pairs(&[
            ("content-type", "application/json"),
            ("X-Goog-Api-Key", "from-model"),
            ("x-team", "call"),
            ("x-only-model", "1"),
            ("X-Call", "2"),
        ])
    );
}

#[test]
fn every_setting_has_its_field() {
    let mut req = hello();
    req.settings = ModelSettings {
        temperature: Some(0.25),
        max_output_tokens: Some(512),
        top_p: Some(0.9),
        top_k: Some(40.0),
        presence_penalty: Some(0.5),
        frequency_penalty: Some(-0.5),
        stop_sequences: vec!["END".into(), "\n\n".into()],
        seed: Some(-42),
        max_retries: Some(3),
        headers: vec![],
    };
    let (http, body) = build(&req);
    assert_eq!(
        body["generationConfig"],
        json!({
            "temperature": 0.25, "topP": 0.9, "topK": 40, "maxOutputTokens": 512, "stopSequences": ["END", "\n\n"],
            "presencePenalty": 0.5, "frequencyPenalty": -0.5, "seed": -42,
        })
    );
    // `topK` is an integer on the wire, and the keys keep this order.
    assert!(http.body.contains(
        "{\"temperature\":0.25,\"topP\":0.9,\"topK\":40,\"maxOutputTokens\":512,\"stopSequences\":[\"END\",\"\\n\\n\"],"
    ));
    // Retries are the client's business, not the API's.
    assert_eq!(object(body).len(), 2);
    req.settings.top_k = Some(2.5);
    assert_eq!(body_of(&req)["generationConfig"]["topK"], json!(2.5));
}

#[test]
fn no_settings_no_generation_config() {
    let body = object(body_of(&hello()));
    for key in ["generationConfig", "systemInstruction", "tools", "toolConfig"] {
        assert!(!body.contains_key(key), "{key}");
    }
}

#[test]
fn system_messages_become_one_instruction() {
    let body = body_of(&request(vec![
        ModelMessage::System("Be brief.".into()),
        ModelMessage::System(String::new()),
        ModelMessage::User(vec![UserPart::Text("one".into())]),
        ModelMessage::System("Answer in French.".into()),
    ]));
    assert_eq!(body["systemInstruction"], json!({ "parts": [{ "text": "Be brief.\n\nAnswer in French." }] }));
    assert_eq!(body["contents"], json!([{ "role": "user", "parts": [{ "text": "one" }] }]));
    // The instruction goes before the generation config, after the contents.
    let keys: Vec<String> = object(body).keys().cloned().collect();
    assert_eq!(keys, ["contents", "systemInstruction"]);
}

fn file(data: &str, media_type: &str) -> UserPart {
    UserPart::File { data: data.into(), media_type: media_type.into(), filename: Some("name.bin".into()) }
}

#[test]
fn user_text_and_files() {
    let got = contents_of(vec![ModelMessage::User(vec![
        UserPart::Text("What is this?".into()),
        UserPart::Text(String::new()),
        file("iVBORw0KGgo=", "image/png"),
        file("/9j/4AAQ", "image/*"),
        file("data:image/webp;base64,UklGR", "image/*"),
        file("DATA:application/pdf;name=a.pdf;BASE64,JVBERi0=", "application/pdf"),
        file("data:;base64,aGk=", "text/plain"),
        file("https://example.com/cat.png", "image/png"),
        file("gs://bucket/report.pdf", "application/pdf"),
        file("https://generativelanguage.googleapis.com/v1beta/files/abc-123", "video/mp4"),
    ])]);
    assert_eq!(
        got,
        json!([{ "role": "user", "parts": [
            { "text": "What is this?" },
            { "inlineData": { "mimeType": "image/png", "data": "iVBORw0KGgo=" } },
            { "inlineData": { "mimeType": "image/jpeg", "data": "/9j/4AAQ" } },
            { "inlineData": { "mimeType": "image/webp", "data": "UklGR" } },
            { "inlineData": { "mimeType": "application/pdf", "data": "JVBERi0=" } },
            { "inlineData": { "mimeType": "text/plain", "data": "aGk=" } },
            { "fileData": { "mimeType": "image/png", "fileUri": "https://example.com/cat.png" } },
            { "fileData": { "mimeType": "application/pdf", "fileUri": "gs://bucket/report.pdf" } },
            { "fileData": { "mimeType": "video/mp4",
                            "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc-123" } },
        ] }])
    );
}

#[test]
fn a_data_url_that_is_not_base64_is_refused() {
    let req = request(vec![ModelMessage::User(vec![file("data:text/plain,hello%20there", "text/plain")])]);
    match build_request(&endpoint(None), &req).unwrap_err() {
        AgentError::InvalidArgument { field, message } => {
            assert_eq!(field, "messages");
            assert!(message.contains("base64") && message.contains("text/plain"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

fn call(id: &str, name: &str, args: Value) -> AssistantPart {
    AssistantPart::ToolCall { tool_call_id: id.into(), tool_name: name.into(), args, meta: None }
}

fn result(id: &str, name: &str, result: Value, is_error: bool) -> ToolResultPart {
    ToolResultPart { tool_call_id: id.into(), tool_name: name.into(), result, is_error }
}

#[test]
fn a_tool_round_trip() {
    let got = contents_of(vec![
        ModelMessage::User(vec![UserPart::Text("Weather in Paris and Oslo?".into())]),
        ModelMessage::Assistant(vec![
            AssistantPart::Reasoning("private thoughts".into(), None),
            AssistantPart::Text("Let me check.".into(), None),
            call("call_1", "weather", json!({ "city": "Paris" })),
            call("call_2", "weather", json!({ "city": "Oslo" })),
            call("call_3", "now", Value::Null),
            call("call_4", "broken", json!("{\"city\": ")),
        ]),
        ModelMessage::Tool(vec![
            result("call_1", "weather", json!({ "temp": 21, "unit": "C" }), false),
            result("call_2", "weather", json!("Sunny, 21 °C"), false),
            result("call_3", "now", json!(null), false),
            result("call_4", "broken", json!("Invalid arguments: expected an object"), true),
        ]),
        ModelMessage::Assistant(vec![AssistantPart::Text("Paris 21 °C, Oslo sunny.".into(), None)]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "user", "parts": [{ "text": "Weather in Paris and Oslo?" }] },
            { "role": "model", "parts": [
                { "text": "Let me check." },
                { "functionCall": { "name": "weather", "args": { "city": "Paris" } } },
                { "functionCall": { "name": "weather", "args": { "city": "Oslo" } } },
                { "functionCall": { "name": "now", "args": {} } },
                { "functionCall": { "name": "broken", "args": {} } },
            ] },
            { "role": "user", "parts": [
                { "functionResponse": { "name": "weather",
                    "response": { "name": "weather", "content": { "temp": 21, "unit": "C" } } } },
                { "functionResponse": { "name": "weather",
                    "response": { "name": "weather", "content": "Sunny, 21 °C" } } },
                { "functionResponse": { "name": "now", "response": { "name": "now", "content": null } } },
                { "functionResponse": { "name": "broken",
                    "response": { "name": "broken", "error": "Invalid arguments: expected an object" } } },
            ] },
            { "role": "model", "parts": [{ "text": "Paris 21 °C, Oslo sunny." }] },
        ])
    );
    assert!(!serde_json::to_string(&got).unwrap().contains("thought"), "reasoning is not sent back");
    // An error that is not a string is sent as its JSON text.
    let errors = contents_of(vec![ModelMessage::Tool(vec![result("c", "f", json!({ "code": 7 }), true)])]);
    assert_eq!(errors[0]["parts"][0]["functionResponse"]["response"], json!({ "name": "f", "error": "{\"code\":7}" }));
}

#[test]
fn gemini_3_calls_carry_the_signature_stand_in() {
    let messages = vec![
        ModelMessage::User(vec![UserPart::Text("Weather?".into())]),
        ModelMessage::Assistant(vec![AssistantPart::Text("Checking.".into(), None), call("c1", "weather", json!({}))]),
        ModelMessage::Tool(vec![result("c1", "weather", json!("sunny"), false)]),
    ];
    for (model, signed) in [
        ("gemini-3-pro-preview", true),
        ("gemini-3.1-pro-preview", true),
        ("models/gemini-3-flash", true),
        ("gemini-flash-latest", true),
        ("gemini-2.5-flash", false),
        ("gemini-2.0-flash-001", false),
        ("gemini-1.5-pro", false),
        ("gemini-pro", false),
        ("gemma-3-27b-it", false),
    ] {
        let mut req = request(messages.clone());
        req.model_id = model.into();
        let parts = body_of(&req)["contents"][1]["parts"].clone();
        assert_eq!(parts[0], json!({ "text": "Checking." }), "{model}: text parts are never signed");
        let expected = if signed {
            json!({ "functionCall": { "name": "weather", "args": {} }, "thoughtSignature": "skip_thought_signature_validator" })
        } else {
            json!({ "functionCall": { "name": "weather", "args": {} } })
        };
        assert_eq!(parts[1], expected, "{model}");
    }
}

#[test]
fn consecutive_turns_of_one_role_are_merged() {
    let got = contents_of(vec![
        ModelMessage::User(vec![UserPart::Text("a".into())]),
        ModelMessage::User(vec![UserPart::Text("b".into())]),
        ModelMessage::Assistant(vec![call("1", "f", json!({ "x": 1 }))]),
        ModelMessage::Assistant(vec![AssistantPart::Reasoning("only thinking".into(), None)]),
        ModelMessage::Assistant(vec![call("2", "g", json!({}))]),
        ModelMessage::Tool(vec![result("1", "f", json!(1), false)]),
        ModelMessage::Tool(vec![result("2", "g", json!(2), false)]),
        ModelMessage::User(vec![UserPart::Text("and now?".into())]),
        ModelMessage::User(vec![]),
        ModelMessage::Assistant(vec![AssistantPart::Text(String::new(), None)]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "user", "parts": [{ "text": "a" }, { "text": "b" }] },
            { "role": "model", "parts": [
                { "functionCall": { "name": "f", "args": { "x": 1 } } },
                { "functionCall": { "name": "g", "args": {} } },
            ] },
            { "role": "user", "parts": [
                { "functionResponse": { "name": "f", "response": { "name": "f", "content": 1 } } },
                { "functionResponse": { "name": "g", "response": { "name": "g", "content": 2 } } },
                { "text": "and now?" },
            ] },
        ])
    );
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "weather".into(),
        description: Some("Current weather".into()),
        parameters: json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": { "city": { "type": "string", "minLength": 1 } },
            "required": ["city"],
            "additionalProperties": false,
        }),
    }
}

#[test]
fn tools_and_tool_choice() {
    let mut req = hello();
    req.tools = vec![
        weather_tool(),
        ToolSpec {
            name: "now".into(),
            description: None,
            parameters: json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false }),
        },
        ToolSpec { name: "ping".into(), description: Some("No schema".into()), parameters: json!({}) },
    ];
    let body = body_of(&req);
    assert_eq!(
        body["tools"],
        json!([{ "functionDeclarations": [
            { "name": "weather", "description": "Current weather", "parameters": {
                "type": "object", "properties": { "city": { "type": "string", "minLength": 1 } }, "required": ["city"] } },
            { "name": "now" },
            { "name": "ping", "description": "No schema" },
        ] }])
    );
    assert!(body.get("toolConfig").is_none());
    let choices = [
        (ToolChoice::Auto, json!({ "mode": "AUTO" })),
        (ToolChoice::None, json!({ "mode": "NONE" })),
        (ToolChoice::Required, json!({ "mode": "ANY" })),
        (ToolChoice::Tool("weather".into()), json!({ "mode": "ANY", "allowedFunctionNames": ["weather"] })),
    ];
    for (choice, wire) in choices {
        req.tool_choice = Some(choice);
        assert_eq!(body_of(&req)["toolConfig"], json!({ "functionCallingConfig": wire }));
    }
}

#[test]
fn tool_choice_without_tools_is_not_sent() {
    let mut req = hello();
    req.tool_choice = Some(ToolChoice::Required);
    assert!(body_of(&req).get("toolConfig").is_none());
}

fn parameters_of(schema: Value) -> Value {
    let mut req = hello();
    req.tools = vec![ToolSpec { name: "t".into(), description: None, parameters: schema }];
    body_of(&req)["tools"][0]["functionDeclarations"][0]["parameters"].clone()
}

#[test]
fn schemas_are_cleaned_recursively() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:t",
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": { "type": "string" },
                    "properties": {
                        "name": { "type": "string", "description": "What", "examples": ["x"], "$comment": "c" },
                        "qty": { "type": "integer", "exclusiveMinimum": 0, "minimum": 1, "default": 1 },
                        "properties": { "type": "string", "description": "a property named `properties`" },
                    },
                    "required": ["name"],
                },
            },
            "note": { "type": ["string", "null"], "maxLength": 200 },
            "id": { "type": ["string", "integer"] },
            "kind": { "const": "order" },
            "mode": { "enum": ["fast", "slow"], "format": "enum" },
            "opts": { "type": "object", "properties": {}, "required": [], "additionalProperties": true },
            "either": { "anyOf": [{ "type": "string" }, { "type": "number", "not": { "const": 0 } }] },
        },
        "required": ["items"],
        "additionalProperties": false,
    });
    assert_eq!(
        parameters_of(schema),
        json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string", "description": "What" },
                            "qty": { "type": "integer", "minimum": 1, "default": 1 },
                            "properties": { "type": "string", "description": "a property named `properties`" },
                        },
                        "required": ["name"],
                    },
                },
                "note": { "nullable": true, "type": "string", "maxLength": 200 },
                "id": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                // Gemini's enum is for strings only: a string enum gets its type.
                "kind": { "enum": ["order"], "type": "string" },
                "mode": { "enum": ["fast", "slow"], "format": "enum", "type": "string" },
                // An object without properties has no Gemini spelling: left out.
                "either": { "anyOf": [{ "type": "string" }, { "type": "number" }] },
            },
            "required": ["items"],
        })
    );
}

#[test]
fn references_are_inlined_once() {
    let schema = json!({
        "type": "object",
        "properties": {
            "home": { "$ref": "#/$defs/Address" },
            "work": { "$ref": "#/definitions/Address", "description": "Office address" },
            "boss": { "$ref": "#/$defs/Person" },
            "lost": { "$ref": "#/$defs/Missing", "description": "kept" },
            "remote": { "$ref": "https://example.com/schema.json" },
        },
        "$defs": {
            "Address": { "type": "object", "properties": { "city": { "type": "string" } }, "additionalProperties": false },
            "Person": {
                "type": "object",
                "properties": { "name": { "type": "string" }, "manager": { "$ref": "#/$defs/Person" } },
            },
        },
        "definitions": { "Address": { "type": "object", "properties": { "street": { "type": "string" } } } },
    });
    assert_eq!(
        parameters_of(schema),
        json!({
            "type": "object",
            "properties": {
                "home": { "type": "object", "properties": { "city": { "type": "string" } } },
                "work": { "type": "object", "properties": { "street": { "type": "string" } }, "description": "Office address" },
                // Inside its own expansion a recursive reference is dropped.
                "boss": { "type": "object", "properties": { "name": { "type": "string" }, "manager": {} } },
                "lost": { "description": "kept" },
                "remote": {},
            },
        })
    );
}

#[test]
fn a_schema_that_is_only_a_reference_is_inlined() {
    let schema = json!({
        "$ref": "#/definitions/Args",
        "definitions": { "Args": { "type": "object", "properties": { "q": { "type": "string" } } } },
    });
    assert_eq!(parameters_of(schema), json!({ "type": "object", "properties": { "q": { "type": "string" } } }));
    // A self-reference at the top is inlined once and then dropped, and terminates.
    let recursive = json!({ "type": "object", "properties": { "next": { "$ref": "#" } } });
    assert_eq!(
        parameters_of(recursive),
        json!({ "type": "object", "properties": { "next": { "type": "object", "properties": { "next": {} } } } })
    );
}

#[test]
fn provider_options_are_merged_as_given() {
    let mut req = hello();
    req.settings.temperature = Some(0.5);
    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Auto);
    req.provider_options = Some(object(json!({
        "generationConfig": { "thinkingConfig": { "includeThoughts": true, "thinkingBudget": 1024 }, "temperature": 1.0 },
        "safetySettings": [{ "category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE" }],
        "cachedContent": "cachedContents/abc",
        "toolConfig": { "functionCallingConfig": { "mode": "VALIDATED" } },
        "contents": "replaced",
    })));
    let body = body_of(&req);
    // An object option merges into the body's object; the option wins on the same key.
    assert_eq!(
        body["generationConfig"],
        json!({ "temperature": 1.0, "thinkingConfig": { "includeThoughts": true, "thinkingBudget": 1024 } })
    );
    assert_eq!(body["safetySettings"][0]["threshold"], json!("BLOCK_NONE"));
    assert_eq!(body["cachedContent"], json!("cachedContents/abc"));
    assert_eq!(body["toolConfig"], json!({ "functionCallingConfig": { "mode": "VALIDATED" } }));
    // Anything else replaces what the builder wrote; keys are never renamed.
    assert_eq!(body["contents"], json!("replaced"));
    assert!(body.get("safety_settings").is_none() && body.get("cached_content").is_none());
}

#[test]
fn empty_provider_options_change_nothing() {
    let mut req = hello();
    req.provider_options = Some(Map::new());
    assert_eq!(build(&req).0, build(&hello()).0);
}

#[test]
fn the_body_is_byte_for_byte_stable() {
    let mut req = hello();
    req.messages.insert(0, ModelMessage::System("sys".into()));
    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Auto);
    req.settings.temperature = Some(0.0);
    let first = build(&req).0.body;
    assert_eq!(first, build(&req).0.body);
    let keys: Vec<String> = object(serde_json::from_str(&first).unwrap()).keys().cloned().collect();
    assert_eq!(keys, ["contents", "systemInstruction", "generationConfig", "tools", "toolConfig"]);
}

// ---------------------------------------------------------------------------------------------
// Thought signatures, from one response to the next request

#[test]
fn a_recorded_call_goes_back_with_its_own_thought_signature() {
    let recorded = fixture_stream("google--google-tool-call");
    let text = String::from_utf8(recorded.clone()).unwrap();
    let step = step_of(decode_pieces(&[&recorded], false).unwrap());
    let [.., AssistantPart::ToolCall { meta: Some(meta), tool_name, .. }] = &step.parts[..] else {
        panic!("the call keeps its signature: {:#?}", step.parts)
    };
    let signature = meta["google"]["thoughtSignature"].as_str().unwrap();
    assert!(signature.len() > 20 && text.contains(signature), "the recorded signature, whole");

    // Gemini 3 gets the call's own signature instead of the stand-in; 2.5 gets it too, as the
    // model sent it.
    for model in ["gemini-3-pro-preview", "gemini-2.5-flash"] {
        let mut req = request(vec![
            ModelMessage::User(vec![UserPart::Text("Weather?".into())]),
            ModelMessage::Assistant(step.parts.clone()),
        ]);
        req.model_id = model.into();
        let contents = body_of(&req)["contents"].clone();
        let call = contents[1]["parts"].as_array().unwrap().iter().find(|p| p.get("functionCall").is_some()).unwrap();
        assert_eq!(call["functionCall"]["name"], tool_name.as_str());
        assert_eq!(call["thoughtSignature"], signature, "{model}");
    }
}
