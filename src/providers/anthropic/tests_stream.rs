//! Tests of the Anthropic Messages stream decoder against the recorded streams
//! (`/work/shared/fixtures/provider-streams`, see its README) and hand-written edge cases.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::AnthropicDecoder;
use crate::core::error::AgentError;
use crate::core::model::{AssistantPart, FinishReason, MetaTarget, ModelEvent, Usage};
use crate::providers::tests::fixtures::{
    self, assert_cut_short, assert_not_json, fixture_lines, typed_stream, ANTHROPIC as FIXTURES,
};
use crate::providers::{step_of, StreamDecoder};

fn fixture_stream(name: &str) -> Vec<u8> {
    typed_stream(&fixture_lines(name))
}

fn decode_pieces(pieces: &[&[u8]], include_raw: bool) -> Result<Vec<ModelEvent>, AgentError> {
    fixtures::decode_pieces(AnthropicDecoder::new(include_raw), pieces)
}

pub(super) fn decode(body: &str) -> Result<Vec<ModelEvent>, AgentError> {
    decode_pieces(&[body.as_bytes()], false)
}

/// One SSE event of type `kind` carrying `data`.
pub(super) fn sse(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

/// What a user would read off a reply.
#[derive(Debug, Default)]
struct Reply {
    metadata: Option<(Option<String>, Option<String>)>,
    text: String,
    reasoning: String,
    /// index → (id, name, arguments text)
    tools: BTreeMap<u32, (Option<String>, Option<String>, String)>,
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
                    assert_eq!(*created, None, "the API sends no creation time");
                    reply.metadata = Some((id.clone(), model_id.clone()));
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

    fn tool(&self, index: u32) -> (&str, &str, Value) {
        let (id, name, args) = &self.tools[&index];
        (id.as_deref().unwrap(), name.as_deref().unwrap(), serde_json::from_str(args).unwrap())
    }

    fn metadata(&self) -> (&str, &str) {
        let (id, model) = self.metadata.as_ref().unwrap();
        (id.as_deref().unwrap(), model.as_deref().unwrap())
    }
}

fn usage(input: u64, output: u64, cached: Option<u64>) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        total_tokens: Some(input + output),
        reasoning_tokens: None,
        cached_input_tokens: cached,
    }
}

#[test]
fn anthropic_text() {
    let r = Reply::decoded("anthropic--anthropic-text");
    assert_eq!(r.metadata(), ("msg_01QC4g3HwBThD4BaNtBckFDJ", "claude-sonnet-4-5-20250929"));
    assert_eq!(
        r.text,
        "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?"
    );
    assert_eq!(r.reasoning, "");
    assert!(r.tools.is_empty());
    // Input from `message_start`, output from `message_delta` (30, not the 1 of the start).
    assert_eq!(r.finish, Some((FinishReason::Stop, Some(usage(12, 30, Some(0))))));
}

#[test]
fn anthropic_json_tool() {
    let r = Reply::decoded("anthropic--anthropic-json-tool.1");
    assert_eq!(r.metadata(), ("msg_01K2JbSUMYhez5RHoK9ZCj9U", "claude-haiku-4-5-20251001"));
    assert_eq!(r.text, "");
    assert_eq!(r.tools.len(), 1);
    assert_eq!(
        r.tool(0),
        (
            "toolu_01KFbKqPYSuAKujiL6mTfzYA",
            "json",
            json!({ "elements": [{ "location": "San Francisco", "temperature": 58, "condition": "sunny" }] })
        )
    );
    assert_eq!(r.finish, Some((FinishReason::ToolCalls, Some(usage(849, 47, Some(0))))));
}

#[test]
fn anthropic_tool_no_args() {
    let events = decode_pieces(&[&fixture_stream("anthropic--anthropic-tool-no-args")], false).unwrap();
    let r = Reply::of(&events);
    assert_eq!(r.text, "I'll update the issue list for you.");
    // The call is block 1, after the text block 0.
    assert_eq!(r.tools.len(), 1);
    let (id, name, args) = &r.tools[&1];
    assert_eq!(
        (id.as_deref(), name.as_deref(), args.as_str()),
        (Some("toolu_01QE1WLsSVp5hy5Q3GmGTmjP"), Some("updateIssueList"), "")
    );
    assert_eq!(r.finish, Some((FinishReason::ToolCalls, Some(usage(565, 48, Some(0))))));

    // The step turns the empty arguments text into `{}`, as a user sees it.
    let result = step_of(events);
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(result.tool_calls[0].tool_name, "updateIssueList");
    assert_eq!(result.tool_calls[0].args, json!({}));
    assert_eq!(result.text, "I'll update the issue list for you.");
}

#[test]
fn anthropic_refusal_is_a_content_filter_finish() {
    let r = Reply::decoded("anthropic--anthropic-refusal");
    assert_eq!(r.metadata(), ("msg_01RefusalStreamAbcdefghijk", "claude-fable-5"));
    assert_eq!((r.text.as_str(), r.reasoning.as_str(), r.tools.len()), ("", "", 0));
    assert_eq!(r.finish, Some((FinishReason::ContentFilter, Some(usage(18, 5, Some(0))))));
}

/// Text, reasoning and tool arguments read from the fixture with a generic JSON parser must match
/// what the decoder reports, for every fixture.
#[test]
fn every_fixture_matches_a_plain_reading_of_its_json() {
    for name in FIXTURES {
        let (mut text, mut reasoning, mut args) = (String::new(), String::new(), BTreeMap::<u32, String>::new());
        for line in fixture_lines(name) {
            let event: Value = serde_json::from_str(&line).unwrap();
            let index = event["index"].as_u64().unwrap_or(0) as u32;
            if event["content_block"]["type"] == "tool_use" {
                args.insert(index, String::new());
            }
            let delta = &event["delta"];
            text += delta["text"].as_str().unwrap_or("");
            reasoning += delta["thinking"].as_str().unwrap_or("");
            if let Some(json) = delta["partial_json"].as_str() {
                *args.get_mut(&index).unwrap() += json;
            }
        }
        let r = Reply::decoded(name);
        assert_eq!(r.text, text, "{name}");
        assert_eq!(r.reasoning, reasoning, "{name}");
        let decoded: BTreeMap<u32, String> = r.tools.iter().map(|(i, t)| (*i, t.2.clone())).collect();
        assert_eq!(decoded, args, "{name}");
        assert!(r.metadata.is_some() && r.finish.is_some(), "{name}");
    }
}

#[test]
fn raw_events_come_before_the_events_of_their_event() {
    let name = "anthropic--anthropic-text";
    let events = decode_pieces(&[&fixture_stream(name)], true).unwrap();
    let raws: Vec<&str> =
        events.iter().filter_map(|e| if let ModelEvent::Raw(r) = e { Some(r.as_str()) } else { None }).collect();
    assert_eq!(raws, fixture_lines(name), "one raw event per SSE event, pings included");
    assert!(matches!(events[0], ModelEvent::Raw(_)));
    assert!(matches!(events[1], ModelEvent::ResponseMetadata { .. }));
    assert!(matches!(events[2], ModelEvent::Raw(_))); // content_block_start
    assert!(matches!(events[3], ModelEvent::Raw(_))); // ping
    assert!(matches!(events[4], ModelEvent::Raw(_)));
    assert_eq!(events[5], ModelEvent::TextDelta("Hello".into()));
    assert!(matches!(events[events.len() - 2], ModelEvent::Raw(ref r) if r == "{\"type\":\"message_stop\"}"));
    assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
    // Without raw events asked for, there are none.
    let plain = decode_pieces(&[&fixture_stream(name)], false).unwrap();
    assert!(!plain.iter().any(|e| matches!(e, ModelEvent::Raw(_))));
}

pub(super) fn start(usage: Value) -> String {
    sse(
        "message_start",
        json!({ "type": "message_start", "message": { "id": "m1", "model": "claude", "usage": usage } }),
    )
}

pub(super) fn stop_with(reason: Value, usage: Value) -> String {
    sse("message_delta", json!({ "type": "message_delta", "delta": { "stop_reason": reason }, "usage": usage }))
        + &sse("message_stop", json!({ "type": "message_stop" }))
}

pub(super) fn block_delta(index: u32, delta: Value) -> String {
    sse("content_block_delta", json!({ "type": "content_block_delta", "index": index, "delta": delta }))
}

pub(super) fn block_start(index: u32, block: Value) -> String {
    sse("content_block_start", json!({ "type": "content_block_start", "index": index, "content_block": block }))
}

fn finish(events: &[ModelEvent]) -> (FinishReason, Option<Usage>) {
    match events.last() {
        Some(ModelEvent::Finish { reason, usage }) => (*reason, *usage),
        other => panic!("no finish: {other:?}"),
    }
}

#[test]
fn stop_reasons_map_to_ours() {
    let cases = [
        (json!("end_turn"), FinishReason::Stop),
        (json!("stop_sequence"), FinishReason::Stop),
        (json!("max_tokens"), FinishReason::Length),
        (json!("tool_use"), FinishReason::ToolCalls),
        (json!("refusal"), FinishReason::ContentFilter),
        (json!("pause_turn"), FinishReason::Other),
        (json!("model_context_window_exceeded"), FinishReason::Other),
        (Value::Null, FinishReason::Other),
    ];
    for (wire, ours) in cases {
        let events = decode(&stop_with(wire.clone(), json!({ "output_tokens": 3 }))).unwrap();
        let usage = Usage { output_tokens: Some(3), total_tokens: Some(3), ..Usage::default() };
        assert_eq!(events, vec![ModelEvent::Finish { reason: ours, usage: Some(usage) }], "{wire}");
    }
    // `message_stop` alone still finishes, as `other`, without usage.
    let events = decode(&sse("message_stop", json!({ "type": "message_stop" }))).unwrap();
    assert_eq!(events, vec![ModelEvent::Finish { reason: FinishReason::Other, usage: None }]);
}

#[test]
fn usage_of_message_delta_overrides_message_start() {
    let body = start(json!({ "input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 4,
                             "cache_creation_input_tokens": 100 }))
        + &stop_with(json!("end_turn"), json!({ "output_tokens": 25, "input_tokens": null }));
    let events = decode(&body).unwrap();
    assert_eq!(
        events[0],
        ModelEvent::ResponseMetadata { id: Some("m1".into()), model_id: Some("claude".into()), created: None }
    );
    // Cache writes are not counted; a `null` in the delta keeps the start's count.
    assert_eq!(finish(&events), (FinishReason::Stop, Some(usage(10, 25, Some(4)))));
    let updated = start(json!({ "input_tokens": 10, "output_tokens": 1 }))
        + &stop_with(
            json!("end_turn"),
            json!({ "input_tokens": 12, "output_tokens": 2, "cache_read_input_tokens": 3 }),
        );
    assert_eq!(finish(&decode(&updated).unwrap()).1, Some(usage(12, 2, Some(3))));
}

#[test]
fn thinking_text_and_tool_blocks_in_order() {
    let body = start(json!({ "input_tokens": 5, "output_tokens": 1 }))
        + &block_start(0, json!({ "type": "thinking", "thinking": "" }))
        + &block_delta(0, json!({ "type": "thinking_delta", "thinking": "Let me think" }))
        + &block_delta(0, json!({ "type": "thinking_delta", "thinking": " about it." }))
        + &block_delta(0, json!({ "type": "signature_delta", "signature": "EqQBCkgIARABGAIiQL" }))
        + &sse("content_block_stop", json!({ "type": "content_block_stop", "index": 0 }))
        + &block_start(1, json!({ "type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix" }))
        + &block_start(2, json!({ "type": "text", "text": "" }))
        + &block_delta(2, json!({ "type": "text_delta", "text": "Checking \u{e9}\u{1F600}." }))
        + &block_delta(2, json!({ "type": "citations_delta", "citation": { "type": "char_location" } }))
        + &block_start(3, json!({ "type": "tool_use", "id": "toolu_1", "name": "weather", "input": {} }))
        + &block_delta(3, json!({ "type": "input_json_delta", "partial_json": "" }))
        + &block_delta(3, json!({ "type": "input_json_delta", "partial_json": "{\"city\": \"Pa" }))
        + &block_delta(3, json!({ "type": "input_json_delta", "partial_json": "ris\"}" }))
        + &stop_with(json!("tool_use"), json!({ "output_tokens": 40 }));
    let events = decode(&body).unwrap();
    let call = |args: &str, first: bool| ModelEvent::ToolCallDelta {
        index: 3,
        id: first.then(|| "toolu_1".into()),
        name: first.then(|| "weather".into()),
        args_delta: args.into(),
    };
    assert_eq!(
        events[1..],
        [
            ModelEvent::ReasoningDelta("Let me think".into()),
            ModelEvent::ReasoningDelta(" about it.".into()),
            ModelEvent::PartMeta { target: MetaTarget::Reasoning, meta: json!({ "anthropic": { "signature": "EqQBCkgIARABGAIiQL" } }) },
            ModelEvent::PartMeta { target: MetaTarget::Reasoning, meta: json!({ "anthropic": { "redactedData": "EmwKAhgBEgy3va3pzix" } }) },
            ModelEvent::TextDelta("Checking \u{e9}\u{1F600}.".into()),
            call("", true),
            call("{\"city\": \"Pa", false),
            call("ris\"}", false),
            ModelEvent::Finish { reason: FinishReason::ToolCalls, usage: Some(usage(5, 40, None)) },
        ]
    );
}

#[test]
fn a_second_message_start_drops_the_abandoned_message() {
    let restart = |id: &str, input: u64| {
        let message = json!({ "id": id, "model": "claude", "usage": { "input_tokens": input } });
        sse("message_start", json!({ "type": "message_start", "message": message }))
    };
    let weather = |id: &str| json!({ "type": "tool_use", "id": id, "name": "weather", "input": {} });
    let body = restart("msg_1", 5)
        + &block_start(0, json!({ "type": "text", "text": "" }))
        + &block_delta(0, json!({ "type": "text_delta", "text": "Let me check Par" }))
        + &block_start(1, weather("toolu_1"))
        + &block_delta(1, json!({ "type": "input_json_delta", "partial_json": "{\"city\": \"Par" }))
        + &restart("msg_2", 6)
        + &block_start(0, json!({ "type": "thinking", "thinking": "" }))
        + &block_delta(0, json!({ "type": "thinking_delta", "thinking": "Lyon, then." }))
        + &block_start(1, json!({ "type": "text", "text": "" }))
        + &block_delta(1, json!({ "type": "text_delta", "text": "Checking Lyon." }))
        + &block_start(2, weather("toolu_2"))
        + &block_delta(2, json!({ "type": "input_json_delta", "partial_json": "{\"city\": \"Lyon\"}" }))
        + &stop_with(json!("tool_use"), json!({ "output_tokens": 9 }));
    let events = decode(&body).unwrap();
    assert_eq!(events.iter().filter(|e| **e == ModelEvent::Restart).count(), 1);
    assert_eq!(finish(&events), (FinishReason::ToolCalls, Some(usage(6, 9, None))));

    // What the step keeps is the completed message only; what already streamed was closed.
    let mut step = crate::core::step::StepBuilder::new(
        crate::core::step::IdSource::new("t".into()), "m".into(), String::new(), Vec::new(), 0.0,
    );
    let mut chunks = Vec::new();
    for event in events {
        step.apply(event, &mut chunks).unwrap();
    }
    step.close(&mut chunks, true);
    let shown: Vec<String> = chunks.iter().map(|c| format!("{} {}", c.type_name(), c.payload())).collect();
    let types: Vec<&str> =
        chunks.iter().map(|c| c.type_name().trim_start_matches("tool-call-input-streaming-")).collect();
    assert_eq!(
        types,
        [
            "text-start", "text-delta", "text-end", "start", "tool-call-delta", "end", // the abandoned message
            "reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-delta", "text-end",
            "start", "tool-call-delta", "end", "tool-call",
        ],
        "{shown:#?}"
    );
    assert!(shown[5].contains("toolu_1"), "{shown:#?}");
    let result = step.into_parts().1;
    assert_eq!(result.text, "Checking Lyon.");
    assert_eq!(result.reasoning, "Lyon, then.");
    assert_eq!(result.response.id.as_deref(), Some("msg_2"));
    assert_eq!(result.usage, usage(6, 9, None));
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(
        (result.tool_calls[0].tool_call_id.as_str(), &result.tool_calls[0].args),
        ("toolu_2", &json!({ "city": "Lyon" }))
    );
    assert_eq!(
        result.parts,
        [
            AssistantPart::Reasoning("Lyon, then.".into(), None),
            AssistantPart::Text("Checking Lyon.".into(), None),
            AssistantPart::ToolCall {
                tool_call_id: "toolu_2".into(),
                tool_name: "weather".into(),
                args: json!({ "city": "Lyon" }),
                meta: None
            },
        ]
    );
}

#[test]
fn arguments_of_server_tools_are_not_tool_calls() {
    let body = block_start(0, json!({ "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search" }))
        + &block_delta(0, json!({ "type": "input_json_delta", "partial_json": "{\"query\":\"x\"}" }))
        + &stop_with(json!("end_turn"), Value::Null);
    assert_eq!(decode(&body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]);
}

#[test]
fn the_event_name_is_used_when_the_data_has_no_type() {
    let body =
        "event: content_block_delta\ndata: {\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n\
                event: message_stop\ndata: {}\n\n";
    assert_eq!(
        decode(body).unwrap(),
        vec![ModelEvent::TextDelta("hi".into()), ModelEvent::Finish { reason: FinishReason::Other, usage: None }]
    );
    // The data's own `type` wins over the name.
    let body = "event: ping\ndata: {\"type\":\"message_stop\"}\n\n";
    assert_eq!(decode(body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Other, usage: None }]);
}

#[test]
fn pings_keep_alives_and_unknown_events_produce_nothing() {
    let body = String::from(": keep-alive\n\ndata:\n\n")
        + &sse("ping", json!({ "type": "ping" }))
        + &sse("future_event", json!({ "type": "future_event", "delta": { "text": "no" } }))
        + &block_delta(0, json!({ "type": "future_delta", "text": "no" }))
        + &block_delta(0, json!({ "type": "text_delta", "text": "" }))
        + &stop_with(json!("end_turn"), Value::Null);
    assert_eq!(decode(&body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]);
}

#[test]
fn nothing_after_message_stop_counts() {
    let body = block_delta(0, json!({ "type": "text_delta", "text": "a" }))
        + &stop_with(json!("end_turn"), Value::Null)
        + &block_delta(0, json!({ "type": "text_delta", "text": "b" }))
        + "data: {oops";
    let mut decoder = AnthropicDecoder::new(false);
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
fn an_error_event_becomes_an_error_event() {
    let data = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let body = start(json!({ "input_tokens": 3 }))
        + &block_delta(0, json!({ "type": "text_delta", "text": "par" }))
        + &format!("event: error\ndata: {data}\n\n");
    let events = decode(&body).unwrap();
    assert_eq!(
        events[1..],
        [
            ModelEvent::TextDelta("par".into()),
            ModelEvent::Error { message: "Overloaded".into(), body: Some(data.into()) },
            // The reply is over; it ended in an error.
            ModelEvent::Finish {
                reason: FinishReason::Error,
                usage: Some(Usage { input_tokens: Some(3), total_tokens: Some(3), ..Usage::default() })
            },
        ]
    );
    let raw = decode_pieces(&[format!("event: error\ndata: {data}\n\n").as_bytes()], true).unwrap();
    assert_eq!(raw[0], ModelEvent::Raw(data.into()));
    assert!(matches!(&raw[1], ModelEvent::Error { body: Some(b), .. } if b == data));

    // Other spellings: a string error, an error without a message, an error event without `error`.
    let message = |data: &str| match &decode(&format!("event: error\ndata: {data}\n\n")).unwrap()[0] {
        ModelEvent::Error { message, .. } => message.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(message(r#"{"type":"error","error":"overloaded"}"#), "overloaded");
    assert_eq!(message(r#"{"type":"error","error":{"type":"api_error"}}"#), r#"{"type":"api_error"}"#);
    assert_eq!(message(r#"{"type":"error"}"#), r#"{"type":"error"}"#);
}

#[test]
fn a_cut_stream_is_a_retryable_error() {
    let cut_bodies = [
        start(json!({})) + &block_delta(0, json!({ "type": "text_delta", "text": "hi" })),
        // A stop reason without `message_stop` is not a complete reply.
        sse("message_delta", json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" } })),
        // `message_stop` must be whole, and so must an error after it was reported.
        String::from("event: message_stop\ndata: {\"type\":\"message_stop\"}"),
        sse("error", json!({ "type": "error", "error": { "message": "x" } })) + "event: ping",
        String::new(),
    ];
    for body in cut_bodies {
        assert_cut_short(decode(&body), &body);
    }
}

#[test]
fn invalid_json_is_an_error_quoting_the_event() {
    let data = format!("{{\"type\": \"content_block_delta\", \"delta\": {}", "é".repeat(300));
    let err = decode(&format!("event: content_block_delta\ndata: {data}\n\n")).unwrap_err();
    assert_not_json(err, &data);
}

#[test]
fn valid_json_of_the_wrong_shape_is_an_error() {
    for data in [r#"{"type": "content_block_delta", "delta": 5}"#, r#"{"index": -1}"#, "[1]"] {
        let err = decode(&format!("data: {data}\n\n")).unwrap_err();
        assert!(err.to_string().contains("does not understand"), "{err}");
        assert!(err.to_string().ends_with(data), "{err}");
    }
}

#[test]
fn events_before_a_bad_one_are_kept() {
    let body = block_delta(0, json!({ "type": "text_delta", "text": "ok" })) + "data: nope\n\n";
    let mut decoder = AnthropicDecoder::new(true);
    let mut out = Vec::new();
    assert!(decoder.push(body.as_bytes(), &mut out).is_err());
    assert_eq!(out[1], ModelEvent::TextDelta("ok".into()));
    assert_eq!(out.last(), Some(&ModelEvent::Raw("nope".into())));
}
