//! Tests of the OpenAI Responses API stream decoder against the recorded streams
//! (`/work/shared/fixtures/provider-streams`, see its README) and hand-written edge cases.
//!
//! Two lines of `openai--parallel-tool-call-wrapper.1` (its first, `response.created`, and its
//! last, `response.completed`) are JSON cut short in the recording (`tests/json.rs` pins that); the
//! fixture tests leave them out, so that stream has no end and decodes to its events followed by
//! the "connection closed" error.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::ResponsesDecoder;
use crate::core::error::AgentError;
use crate::core::model::{FinishReason, MetaTarget, ModelEvent, Usage};
use crate::providers::tests::fixtures::{
    self, assert_cut_short, assert_not_json, fixture_lines, json_lines, responses, typed_stream, OPENAI_ERROR as ERROR,
    PARALLEL_WRAPPER as PARALLEL, REASONING_ENCRYPTED as REASONING, RESPONSES, XAI_TEXT as XAI,
};
use crate::providers::{step_of, StreamDecoder};

pub(super) fn decode_pieces(pieces: &[&[u8]], include_raw: bool) -> Result<Vec<ModelEvent>, AgentError> {
    fixtures::decode_pieces(ResponsesDecoder::new(include_raw), pieces)
}

/// The events of a body, and how its end went (the parallel fixture has no end).
fn decode_all(pieces: &[&[u8]], include_raw: bool) -> (Vec<ModelEvent>, Result<(), String>) {
    let mut decoder = ResponsesDecoder::new(include_raw);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut out).unwrap();
    }
    let end = decoder.end(&mut out).map_err(|e| e.to_string());
    (out, end)
}

fn decode(body: &str) -> Result<Vec<ModelEvent>, AgentError> {
    decode_pieces(&[body.as_bytes()], false)
}

/// One SSE event carrying `data`, named by its `type`.
fn sse(data: Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap_or(""))
}

/// What a user would read off a reply.
#[derive(Debug, Default)]
struct Reply {
    metadata: Option<(Option<String>, Option<String>, Option<u64>)>,
    text: String,
    reasoning: String,
    /// index → (id, name, arguments text)
    tools: BTreeMap<u32, (Option<String>, Option<String>, String)>,
    /// Provider data for the parts, in order.
    metas: Vec<(MetaTarget, Value)>,
    errors: Vec<String>,
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
                    } else {
                        assert!(entry.0.is_some(), "the id comes with the first piece");
                    }
                    if name.is_some() {
                        assert!(entry.1.is_none(), "tool call name twice");
                        entry.1 = name.clone();
                    }
                    entry.2.push_str(args_delta);
                }
                ModelEvent::Error { message, .. } => reply.errors.push(message.clone()),
                ModelEvent::PartMeta { target, meta } => reply.metas.push((*target, meta.clone())),
                ModelEvent::Finish { reason, usage } => reply.finish = Some((*reason, *usage)),
                other => panic!("unexpected event {other:?}"),
            }
        }
        reply
    }

    fn tool(&self, index: u32) -> (&str, &str, Value) {
        let (id, name, args) = &self.tools[&index];
        (id.as_deref().unwrap(), name.as_deref().unwrap(), serde_json::from_str(args).unwrap())
    }

    fn metadata(&self) -> (&str, &str, u64) {
        let (id, model, created) = self.metadata.as_ref().unwrap();
        (id.as_deref().unwrap(), model.as_deref().unwrap(), created.unwrap())
    }
}

/// The replies of a fixture's responses.
fn replies(name: &str) -> Vec<Reply> {
    responses(json_lines(name))
        .iter()
        .map(|lines| Reply::of(&decode_pieces(&[&typed_stream(lines)], false).unwrap()))
        .collect()
}

fn usage(input: u64, output: u64, reasoning: u64, cached: u64) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        total_tokens: Some(input + output),
        reasoning_tokens: Some(reasoning),
        cached_input_tokens: Some(cached),
    }
}

/// The `text` of the first event of type `kind` in a fixture.
fn done_text(name: &str, kind: &str) -> String {
    let lines = json_lines(name);
    let line = lines.iter().find(|l| l.contains(&format!("\"type\":\"{kind}\""))).unwrap();
    serde_json::from_str::<Value>(line).unwrap()["text"].as_str().unwrap().to_string()
}

#[test]
fn the_truncated_lines_of_the_parallel_fixture_are_the_ones_left_out() {
    for &name in RESPONSES {
        let all = fixture_lines(name);
        let bad: Vec<usize> = (0..all.len()).filter(|i| serde_json::from_str::<Value>(&all[*i]).is_err()).collect();
        let expected: &[usize] = if name == PARALLEL { &[0, 5] } else { &[] };
        assert_eq!(bad, expected, "{name}");
    }
}

#[test]
fn openai_error() {
    let events = decode_pieces(&[&typed_stream(&json_lines(ERROR))], false).unwrap();
    let r = Reply::of(&events);
    assert_eq!(
        r.metadata(),
        ("resp_05500b38c2cd9bfc00691c7c9d222481a3b595421266dab424", "gpt-5-nano-2025-08-07", 1763474589)
    );
    // The `error` event tells; the `response.failed` after it repeats the message and ends the
    // reply, without a second error.
    assert_eq!(
        r.errors,
        ["You exceeded your current quota, please check your plan and billing details. For more information on \
          this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."]
    );
    assert_eq!(r.finish, Some((FinishReason::Error, None)));
    assert_eq!((r.text.as_str(), r.reasoning.as_str(), r.tools.len()), ("", "", 0));
    // The error's body is the event that carried it.
    let error_line = &json_lines(ERROR)[2];
    assert!(matches!(&events[1], ModelEvent::Error { body: Some(b), .. } if b == error_line));
}

#[test]
fn openai_reasoning_with_encrypted_content_in_a_tool_loop() {
    let r = replies(REASONING);
    assert_eq!(r.len(), 4, "four recorded responses");

    // Step 1: a reasoning summary, then a call (output item 1, after the reasoning item 0).
    assert_eq!(
        r[0].metadata(),
        ("resp_01830d662ab3856501693c321345c88190b0de00f3b9975691", "gpt-5.1-codex-max", 1765552659)
    );
    assert_eq!(
        r[0].reasoning,
        "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, \
         and finally multiply that by 10, reporting the final product."
    );
    assert_eq!(r[0].reasoning, done_text(REASONING, "response.reasoning_summary_text.done"));
    assert_eq!(r[0].text, "");
    assert_eq!(r[0].tools.len(), 1);
    assert_eq!(r[0].tool(1), ("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", json!({ "a": 12, "b": 7, "op": "add" })));
    assert_eq!(r[0].finish, Some((FinishReason::ToolCalls, Some(usage(134, 28, 0, 0)))));

    // Steps 2 and 3: one call each.
    assert_eq!(
        r[1].tool(0),
        ("call_Q6pW65MUgW9vF59BmItYGos3", "calculator", json!({ "a": 19, "b": 3, "op": "multiply" }))
    );
    assert_eq!(r[1].finish, Some((FinishReason::ToolCalls, Some(usage(221, 26, 0, 0)))));
    assert_eq!(
        r[2].tool(0),
        ("call_Zl5vIMnD7dVAjgU6FkhmiCZh", "calculator", json!({ "a": 57, "b": 10, "op": "multiply" }))
    );
    assert_eq!(r[2].finish, Some((FinishReason::ToolCalls, Some(usage(260, 26, 0, 0)))));
    assert_eq!((r[1].reasoning.as_str(), r[2].text.as_str()), ("", ""));

    // Step 4: the answer.
    assert_eq!(r[3].metadata().0, "resp_01830d662ab3856501693c3217ba4c8190a3ddf6c839d4f12a");
    assert_eq!(r[3].text, "The final result is **570**.");
    assert!(r[3].tools.is_empty());
    assert_eq!(r[3].finish, Some((FinishReason::Stop, Some(usage(299, 12, 0, 0)))));
}

#[test]
fn xai_text_streaming() {
    let r = replies(XAI);
    assert_eq!(r.len(), 1);
    let r = &r[0];
    assert_eq!(r.metadata(), ("769f3302-64f9-4c72-2b48-860c87fd9b2a", "grok-code-fast-1", 1763853500));
    assert!(r.reasoning.starts_with("First, the question is: \"What is specifically notable"), "{}", r.reasoning);
    assert_eq!(r.reasoning, done_text(XAI, "response.reasoning_summary_text.done"));
    assert!(r.text.starts_with("### Overview of Sonoran Cuisine\n"), "{}", r.text);
    assert_eq!(r.text, done_text(XAI, "response.output_text.done"));
    assert_eq!(r.text.chars().count(), 3068);
    assert!(r.tools.is_empty());
    assert_eq!(r.finish, Some((FinishReason::Stop, Some(usage(216, 863, 237, 192)))));
}

#[test]
fn parallel_tool_call_wrapper_is_reported_as_the_calls_it_wraps() {
    let (events, end) = decode_all(&[&typed_stream(&json_lines(PARALLEL))], false);
    // The recording's `response.completed` is one of its cut lines: the stream has no end.
    assert_eq!(end, Err("The connection closed before the model finished its response".into()));
    let r = Reply::of(&events);
    assert!(r.metadata.is_none(), "`response.created` is the other cut line");
    assert_eq!(r.tools.len(), 2);
    assert_eq!(r.tool(u32::MAX), ("call_parallel-1", "weather", json!({ "location": "San Francisco" })));
    assert_eq!(r.tool(u32::MAX - 1), ("call_parallel-2", "cityAttractions", json!({ "city": "Rome" })));
    assert!(r.finish.is_none());

    // With the recording's lines made whole, it is a complete tool-call reply, and the step
    // turns it into two calls as a user sees them.
    let repaired: Vec<String> = fixture_lines(PARALLEL)
        .into_iter()
        .map(|l| if serde_json::from_str::<Value>(&l).is_ok() { l } else { format!("{l}}}") })
        .collect();
    let events = decode_pieces(&[&typed_stream(&repaired)], false).unwrap();
    let r = Reply::of(&events);
    assert_eq!(r.metadata(), ("resp_parallel", "gpt-5.4", 1787162400));
    assert_eq!(r.finish, Some((FinishReason::ToolCalls, Some(usage(34, 28, 0, 0)))));
    let result = step_of(events);
    let calls: Vec<_> =
        result.tool_calls.iter().map(|c| (c.tool_call_id.as_str(), c.tool_name.as_str(), c.args.clone())).collect();
    assert_eq!(
        calls,
        [
            ("call_parallel-1", "weather", json!({ "location": "San Francisco" })),
            ("call_parallel-2", "cityAttractions", json!({ "city": "Rome" })),
        ]
    );
}

/// Text, reasoning and tool arguments read from the fixtures with a generic JSON parser must
/// match what the decoder reports, for every response.
#[test]
fn every_fixture_matches_a_plain_reading_of_its_json() {
    for name in [ERROR, REASONING, XAI] {
        for (lines, r) in responses(json_lines(name)).iter().zip(replies(name)) {
            let (mut text, mut reasoning, mut args) = (String::new(), String::new(), BTreeMap::<u32, String>::new());
            for line in lines {
                let event: Value = serde_json::from_str(line).unwrap();
                let delta = event["delta"].as_str().unwrap_or("");
                match event["type"].as_str().unwrap() {
                    "response.output_text.delta" => text += delta,
                    "response.reasoning_summary_text.delta" => reasoning += delta,
                    "response.function_call_arguments.delta" => {
                        *args.entry(event["output_index"].as_u64().unwrap() as u32).or_default() += delta
                    }
                    _ => {}
                }
            }
            assert_eq!(r.text, text, "{name}");
            assert_eq!(r.reasoning, reasoning, "{name}");
            let decoded: BTreeMap<u32, String> = r.tools.iter().map(|(i, t)| (*i, t.2.clone())).collect();
            assert_eq!(decoded, args, "{name}");
            assert!(r.metadata.is_some() && r.finish.is_some(), "{name}");
        }
    }
}

#[test]
fn raw_events_come_before_the_events_of_their_event() {
    let lines = &responses(json_lines(REASONING))[3];
    let events = decode_pieces(&[&typed_stream(lines)], true).unwrap();
    let raws: Vec<&str> =
        events.iter().filter_map(|e| if let ModelEvent::Raw(r) = e { Some(r.as_str()) } else { None }).collect();
    assert_eq!(&raws, lines, "one raw event per SSE event");
    assert!(matches!(events[0], ModelEvent::Raw(_)));
    assert!(matches!(events[1], ModelEvent::ResponseMetadata { .. }));
    let first_text = events.iter().position(|e| matches!(e, ModelEvent::TextDelta(_))).unwrap();
    assert!(matches!(&events[first_text - 1], ModelEvent::Raw(r) if r.contains("response.output_text.delta")));
    assert!(matches!(&events[events.len() - 2], ModelEvent::Raw(r) if r.contains("response.completed")));
    assert!(matches!(events.last(), Some(ModelEvent::Finish { .. })));
    // Without raw events asked for, there are none.
    let plain = decode_pieces(&[&typed_stream(lines)], false).unwrap();
    assert!(!plain.iter().any(|e| matches!(e, ModelEvent::Raw(_))));
}

// Hand-written streams.

fn created() -> String {
    sse(
        json!({ "type": "response.created", "response": { "id": "r1", "model": "gpt-x", "created_at": 7, "usage": null } }),
    )
}

fn text_delta(text: &str) -> String {
    sse(json!({ "type": "response.output_text.delta", "output_index": 0, "delta": text }))
}

fn completed(usage: Value) -> String {
    sse(json!({ "type": "response.completed", "response": { "id": "r1", "status": "completed", "usage": usage } }))
}

fn incomplete(reason: Value) -> String {
    sse(json!({ "type": "response.incomplete", "response": { "incomplete_details": { "reason": reason } } }))
}

fn call_added(index: u32, id: &str, name: &str, arguments: &str) -> String {
    sse(json!({ "type": "response.output_item.added", "output_index": index,
                "item": { "type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name,
                          "arguments": arguments, "status": "in_progress" } }))
}

/// The item id of a function call, as the decoder reports it.
fn fc_meta(index: u32, id: &str) -> ModelEvent {
    ModelEvent::PartMeta { target: MetaTarget::ToolCall(index), meta: json!({ "openai": { "itemId": id } }) }
}

fn call_done(index: u32, id: &str, name: &str, arguments: &str) -> String {
    sse(json!({ "type": "response.output_item.done", "output_index": index,
                "item": { "type": "function_call", "call_id": id, "name": name, "arguments": arguments } }))
}

fn args_delta(index: u32, delta: &str) -> String {
    sse(json!({ "type": "response.function_call_arguments.delta", "output_index": index, "delta": delta }))
}

fn call(index: u32, first: Option<(&str, &str)>, args: &str) -> ModelEvent {
    ModelEvent::ToolCallDelta {
        index,
        id: first.map(|f| f.0.into()),
        name: first.map(|f| f.1.into()),
        args_delta: args.into(),
    }
}

fn finish(events: &[ModelEvent]) -> (FinishReason, Option<Usage>) {
    match events.last() {
        Some(ModelEvent::Finish { reason, usage }) => (*reason, *usage),
        other => panic!("no finish: {other:?}"),
    }
}

#[test]
fn text_and_usage() {
    let body = created()
        + &text_delta("Hel")
        + &text_delta("")
        + &text_delta("lo \u{e9}\u{1F600}")
        + &completed(json!({ "input_tokens": 10, "input_tokens_details": { "cached_tokens": 4 },
                             "output_tokens": 5, "output_tokens_details": { "reasoning_tokens": 2 },
                             "total_tokens": 15 }));
    assert_eq!(
        decode(&body).unwrap(),
        vec![
            ModelEvent::ResponseMetadata { id: Some("r1".into()), model_id: Some("gpt-x".into()), created: Some(7) },
            ModelEvent::TextDelta("Hel".into()),
            ModelEvent::TextDelta("lo \u{e9}\u{1F600}".into()),
            ModelEvent::Finish {
                reason: FinishReason::Stop,
                usage: Some(Usage {
                    input_tokens: Some(10),
                    output_tokens: Some(5),
                    total_tokens: Some(15),
                    reasoning_tokens: Some(2),
                    cached_input_tokens: Some(4),
                }),
            },
        ]
    );
    // Details may be missing or null; a null usage is none.
    let events =
        decode(&completed(json!({ "input_tokens": 3, "output_tokens": 1, "input_tokens_details": null }))).unwrap();
    let only = Usage { input_tokens: Some(3), output_tokens: Some(1), ..Usage::default() };
    assert_eq!(events, vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: Some(only) }]);
    assert_eq!(finish(&decode(&completed(Value::Null)).unwrap()), (FinishReason::Stop, None));
}

#[test]
fn finish_reasons() {
    let stop = (FinishReason::Stop, None);
    assert_eq!(finish(&decode(&completed(Value::Null)).unwrap()), stop);
    let cases = [
        (json!("max_output_tokens"), FinishReason::Length),
        (json!("content_filter"), FinishReason::ContentFilter),
        (json!("something_new"), FinishReason::Other),
        (Value::Null, FinishReason::Other),
    ];
    for (wire, ours) in cases {
        assert_eq!(finish(&decode(&incomplete(wire.clone())).unwrap()), (ours, None), "{wire}");
    }
    let no_details = sse(json!({ "type": "response.incomplete", "response": { "incomplete_details": null } }));
    assert_eq!(finish(&decode(&no_details).unwrap()).0, FinishReason::Other);
    // A function call makes a completed reply a tool-call one; a refusal a filtered one.
    let calls = call_added(0, "c1", "f", "") + &completed(Value::Null);
    assert_eq!(finish(&decode(&calls).unwrap()).0, FinishReason::ToolCalls);
    let calls_cut = call_added(0, "c1", "f", "") + &incomplete(json!("max_output_tokens"));
    assert_eq!(finish(&decode(&calls_cut).unwrap()).0, FinishReason::Length);
    let refusal = sse(json!({ "type": "response.refusal.delta", "output_index": 0, "content_index": 0,
                              "delta": "I can't help with that." }))
        + &completed(Value::Null);
    assert_eq!(
        decode(&refusal).unwrap(),
        vec![
            ModelEvent::TextDelta("I can't help with that.".into()),
            ModelEvent::Finish { reason: FinishReason::ContentFilter, usage: None },
        ]
    );
}

#[test]
fn reasoning_summaries_and_reasoning_text() {
    let summary = |index: u32, summary: u32, delta: &str| {
        sse(json!({ "type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": index,
                    "summary_index": summary, "delta": delta }))
    };
    let body = sse(json!({ "type": "response.output_item.added", "output_index": 0,
                           "item": { "type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA", "summary": [] } }))
        + &summary(0, 0, "**Plan**")
        + &summary(0, 0, " first")
        + &summary(0, 1, "**Check**")
        + &summary(0, 1, "")
        + &text_delta("Answer")
        + &summary(2, 0, "More")
        + &sse(
            json!({ "type": "response.reasoning_text.delta", "output_index": 3, "content_index": 0, "delta": "raw" }),
        )
        + &completed(Value::Null);
    assert_eq!(
        decode(&body).unwrap(),
        vec![
            ModelEvent::ReasoningDelta("**Plan**".into()),
            ModelEvent::ReasoningDelta(" first".into()),
            // A new summary part is set off from the one before by a blank line.
            ModelEvent::ReasoningDelta("\n\n**Check**".into()),
            ModelEvent::TextDelta("Answer".into()),
            // Not after text: that starts a new reasoning block anyway.
            ModelEvent::ReasoningDelta("More".into()),
            ModelEvent::ReasoningDelta("\n\nraw".into()),
            ModelEvent::Finish { reason: FinishReason::Stop, usage: None },
        ]
    );
}

#[test]
fn parallel_function_calls_with_interleaved_arguments() {
    let body = created()
        + &text_delta("Checking.")
        + &call_added(1, "call_a", "weather", "")
        + &call_added(2, "call_b", "time", "")
        + &args_delta(1, "{\"city\":")
        + &args_delta(2, "{\"zone\":\"CET\"}")
        + &args_delta(1, "\"Paris\"}")
        + &args_delta(1, "")
        + &sse(json!({ "type": "response.function_call_arguments.done", "output_index": 1,
                       "arguments": "{\"city\":\"Paris\"}" }))
        + &call_done(1, "call_a", "weather", "{\"city\":\"Paris\"}")
        + &call_done(2, "call_b", "time", "{\"zone\":\"CET\"}")
        + &completed(Value::Null);
    let events = decode(&body).unwrap();
    assert_eq!(
        events[1..],
        [
            ModelEvent::TextDelta("Checking.".into()),
            call(1, Some(("call_a", "weather")), ""),
            fc_meta(1, "fc_call_a"),
            call(2, Some(("call_b", "time")), ""),
            fc_meta(2, "fc_call_b"),
            call(1, None, "{\"city\":"),
            call(2, None, "{\"zone\":\"CET\"}"),
            call(1, None, "\"Paris\"}"),
            ModelEvent::Finish { reason: FinishReason::ToolCalls, usage: None },
        ]
    );
}

#[test]
fn arguments_that_come_only_whole_are_reported_once() {
    // xAI sends a call whole: in the added item, or only in the done one.
    let body = call_added(0, "call_a", "weather", "{\"city\":\"Oslo\"}")
        + &call_done(0, "call_a", "weather", "{\"city\":\"Oslo\"}")
        + &call_done(1, "call_b", "time", "{}")
        + &call_added(2, "call_c", "now", "")
        + &call_done(2, "call_c", "now", "")
        + &completed(Value::Null);
    assert_eq!(
        decode(&body).unwrap(),
        vec![
            call(0, Some(("call_a", "weather")), ""),
            fc_meta(0, "fc_call_a"),
            call(0, None, "{\"city\":\"Oslo\"}"),
            call(1, Some(("call_b", "time")), ""),
            call(1, None, "{}"),
            call(2, Some(("call_c", "now")), ""),
            fc_meta(2, "fc_call_c"),
            ModelEvent::Finish { reason: FinishReason::ToolCalls, usage: None },
        ]
    );
}

#[test]
fn a_parallel_call_without_the_wrappers_shape_is_reported_as_it_is() {
    for args in ["{\"tool_uses\":[]}", "{\"x\":1}", "{\"tool_uses\":[{\"recipient_name\":\"functions.a\"}]}", "{"] {
        let body = call_added(0, "call_p", "parallel", "") + &args_delta(0, args) + &completed(Value::Null);
        assert_eq!(
            decode(&body).unwrap(),
            vec![
                call(0, Some(("call_p", "parallel")), args),
                ModelEvent::Finish { reason: FinishReason::ToolCalls, usage: None },
            ],
            "{args}"
        );
    }
    // The wrapper's other spelling, and names without the `functions.` prefix; its item's end
    // reports it even before the response ends.
    let args = r#"{"tool_uses":[{"recipient_name":"a","parameters":{}},{"recipient_name":"functions.b","parameters":{"n":1}}]}"#;
    let body = call_added(0, "call_p", "multi_tool_use.parallel", "") + &call_done(0, "call_p", "x", args);
    let mut decoder = ResponsesDecoder::new(false);
    let mut out = Vec::new();
    decoder.push(body.as_bytes(), &mut out).unwrap();
    assert_eq!(
        out,
        vec![call(u32::MAX, Some(("call_p-1", "a")), "{}"), call(u32::MAX - 1, Some(("call_p-2", "b")), "{\"n\":1}")]
    );
}

#[test]
fn arguments_of_unknown_calls_and_other_items_produce_nothing() {
    let body = sse(json!({ "type": "response.output_item.added", "output_index": 0,
                           "item": { "type": "web_search_call", "id": "ws_1", "status": "in_progress" } }))
        + &args_delta(0, "{\"q\":1}")
        + &sse(json!({ "type": "response.output_item.added", "output_index": 1,
                       "item": { "type": "message", "role": "assistant", "content": [] } }))
        + &completed(Value::Null);
    assert_eq!(decode(&body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]);
}

#[test]
fn the_event_name_is_used_when_the_data_has_no_type() {
    let body = "event: response.output_text.delta\ndata: {\"delta\":\"hi\"}\n\n\
                event: response.completed\ndata: {}\n\n";
    assert_eq!(
        decode(body).unwrap(),
        vec![ModelEvent::TextDelta("hi".into()), ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]
    );
    // The data's own `type` wins over the name; plain `data:` events (no name) work too.
    let body = "event: keepalive\ndata: {\"type\":\"response.completed\"}\n\n";
    assert_eq!(decode(body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]);
    let body = "data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\ndata: {\"type\":\"response.completed\"}\n\n";
    assert_eq!(decode(body).unwrap()[0], ModelEvent::TextDelta("a".into()));
}

#[test]
fn keep_alives_done_markers_and_unknown_events_produce_nothing() {
    let body = String::from(": keep-alive\n\ndata:\n\ndata: [DONE]\n\n")
        + &sse(json!({ "type": "response.in_progress", "response": { "id": "r1" } }))
        + &sse(json!({ "type": "response.future_event", "delta": { "some": "object" }, "item": 5, "message": [] }))
        + &sse(json!({ "type": "response.audio.delta", "delta": "AAAA" }))
        + &sse(
            json!({ "type": "response.content_part.added", "output_index": 0, "part": { "type": "output_text", "text": "" } }),
        )
        + &completed(Value::Null);
    assert_eq!(decode(&body).unwrap(), vec![ModelEvent::Finish { reason: FinishReason::Stop, usage: None }]);
}

#[test]
fn nothing_after_the_response_ends_counts() {
    let body = text_delta("a") + &completed(Value::Null) + &text_delta("b") + &created() + "data: {oops";
    let mut decoder = ResponsesDecoder::new(false);
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
fn response_failed_becomes_an_error_event() {
    let data = json!({ "type": "response.failed", "response": { "id": "r1", "status": "failed",
        "error": { "code": "server_error", "message": "The server had an error" },
        "usage": { "input_tokens": 3, "output_tokens": 0, "total_tokens": 3 } } });
    let body = created() + &text_delta("par") + &sse(data.clone());
    let events = decode(&body).unwrap();
    let usage = Usage { input_tokens: Some(3), output_tokens: Some(0), total_tokens: Some(3), ..Usage::default() };
    assert_eq!(
        events[1..],
        [
            ModelEvent::TextDelta("par".into()),
            ModelEvent::Error { message: "The server had an error".into(), body: Some(data.to_string()) },
            ModelEvent::Finish { reason: FinishReason::Error, usage: Some(usage) },
        ]
    );
    let raw = decode_pieces(&[sse(data.clone()).as_bytes()], true).unwrap();
    let text = data.to_string();
    assert_eq!(raw[0], ModelEvent::Raw(text.clone()));
    assert!(matches!(&raw[1], ModelEvent::Error { body: Some(b), .. } if *b == text));

    // Without a message: the error's text, or a sentence when there is no error at all.
    let message =
        |response: Value| match &decode(&sse(json!({ "type": "response.failed", "response": response }))).unwrap()[0] {
            ModelEvent::Error { message, .. } => message.clone(),
            other => panic!("{other:?}"),
        };
    assert_eq!(message(json!({ "error": { "code": "x" } })), r#"{"code":"x"}"#);
    assert_eq!(message(json!({ "error": null })), "The model's response failed");
    assert_eq!(message(json!({})), "The model's response failed");
}

#[test]
fn an_error_event_becomes_an_error_event() {
    // The documented shape has the message at the top; the recorded one nests it.
    let top = json!({ "type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null });
    let nested = json!({ "type": "error", "error": { "type": "server_error", "message": "Boom" } });
    let string = json!({ "type": "error", "error": "overloaded" });
    let bare = json!({ "type": "error", "code": "x" });
    let cases = [(top, "Slow down"), (nested, "Boom"), (string, "overloaded"), (bare.clone(), &*bare.to_string())];
    for (data, expected) in cases {
        let events = decode(&(text_delta("a") + &sse(data.clone()))).unwrap();
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("a".into()),
                ModelEvent::Error { message: expected.into(), body: Some(data.to_string()) },
                // The body ended after the error: the reply is over, in an error.
                ModelEvent::Finish { reason: FinishReason::Error, usage: None },
            ],
            "{data}"
        );
    }
}

#[test]
fn a_cut_stream_is_a_retryable_error() {
    let cut_bodies = [
        created() + &text_delta("hi"),
        // Argument deltas are not an end.
        call_added(0, "c", "f", "") + &args_delta(0, "{}"),
        // The completion must be whole, and so must an error after it was reported.
        String::from("event: response.completed\ndata: {\"type\":\"response.completed\"}"),
        sse(json!({ "type": "error", "message": "x" })) + "event: ping",
        String::new(),
    ];
    for body in cut_bodies {
        assert_cut_short(decode(&body), &body);
    }
}

#[test]
fn invalid_json_is_an_error_quoting_the_event() {
    let data = format!("{{\"type\": \"response.output_text.delta\", \"delta\": {}", "é".repeat(300));
    let err = decode(&format!("event: response.output_text.delta\ndata: {data}\n\n")).unwrap_err();
    assert_not_json(err, &data);
}

#[test]
fn valid_json_of_the_wrong_shape_is_an_error() {
    for data in [
        r#"{"type": "response.output_text.delta", "delta": 5}"#,
        r#"{"type": "response.output_item.added", "item": [1]}"#,
        r#"{"output_index": -1}"#,
        r#"{"type": "response.completed", "response": {"usage": {"input_tokens": "3"}}}"#,
        "[1]",
    ] {
        let err = decode(&format!("data: {data}\n\n")).unwrap_err();
        assert!(err.to_string().contains("does not understand"), "{err}");
        assert!(err.to_string().ends_with(data), "{err}");
    }
}

#[test]
fn events_before_a_bad_one_are_kept() {
    let body = text_delta("ok") + "data: nope\n\n";
    let mut decoder = ResponsesDecoder::new(true);
    let mut out = Vec::new();
    assert!(decoder.push(body.as_bytes(), &mut out).is_err());
    assert_eq!(out[1], ModelEvent::TextDelta("ok".into()));
    assert_eq!(out.last(), Some(&ModelEvent::Raw("nope".into())));
}
