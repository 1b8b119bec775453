use serde_json::json;

use super::*;
use crate::core::model::{
    AssistantPart, FinishReason, ModelEvent, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart,
    ToolSpec, UserPart,
};

#[test]
fn call_options_follow_the_v2_prompt_shape() {
    let req = ModelRequest {
        model_id: "m".into(),
        messages: vec![
            ModelMessage::System("Be brief.".into()),
            ModelMessage::User(vec![UserPart::Text("hi".into())]),
            ModelMessage::Assistant(vec![AssistantPart::ToolCall { tool_call_id: "c1".into(), tool_name: "w".into(), args: json!({ "city": "P" }), meta: None }]),
            ModelMessage::Tool(vec![ToolResultPart { tool_call_id: "c1".into(), tool_name: "w".into(), result: json!({ "t": 1 }), is_error: false }]),
        ],
        settings: ModelSettings { temperature: Some(0.5), max_output_tokens: Some(10), ..Default::default() },
        tools: vec![ToolSpec { name: "w".into(), description: Some("weather".into()), parameters: json!({ "type": "object" }) }],
        tool_choice: Some(ToolChoice::Required),
        provider_options: None,
        response_format: None,
    };
    let o = call_options(&req);
    assert_eq!(o["prompt"][0], json!({ "role": "system", "content": "Be brief." }));
    assert_eq!(o["prompt"][1]["content"][0], json!({ "type": "text", "text": "hi" }));
    assert_eq!(o["prompt"][2]["content"][0]["input"], json!({ "city": "P" }));
    assert_eq!(o["prompt"][3]["content"][0]["output"], json!({ "type": "json", "value": { "t": 1 } }));
    assert_eq!(o["temperature"], 0.5);
    assert_eq!(o["maxOutputTokens"], 10);
    assert_eq!(o["tools"][0]["inputSchema"], json!({ "type": "object" }));
    assert_eq!(o["toolChoice"], json!({ "type": "required" }));
}

#[test]
fn parts_become_events() {
    let mut d = PartDecoder::default();
    let mut out = Vec::new();
    for p in [
        json!({ "type": "stream-start", "warnings": [] }),
        json!({ "type": "response-metadata", "id": "r1", "modelId": "m1" }),
        json!({ "type": "text-start", "id": "0" }),
        json!({ "type": "text-delta", "id": "0", "delta": "Hel" }),
        json!({ "type": "text-delta", "id": "0", "delta": "lo" }),
        json!({ "type": "tool-input-start", "id": "c1", "toolName": "w" }),
        json!({ "type": "tool-input-delta", "id": "c1", "delta": "{\"a\":" }),
        json!({ "type": "tool-input-delta", "id": "c1", "delta": "1}" }),
        json!({ "type": "tool-call", "toolCallId": "c1", "toolName": "w", "input": "{\"a\":1}" }),
        json!({ "type": "tool-call", "toolCallId": "c2", "toolName": "v", "input": "{}" }),
        json!({ "type": "finish", "finishReason": "tool-calls", "usage": { "inputTokens": 3, "outputTokens": 4, "totalTokens": 7 } }),
    ] {
        d.part(&p, false, &mut out).unwrap();
    }
    assert!(d.finished());
    assert_eq!(out[1], ModelEvent::TextDelta("Hel".into()));
    let calls: Vec<&ModelEvent> = out.iter().filter(|e| matches!(e, ModelEvent::ToolCallDelta { .. })).collect();
    assert_eq!(calls.len(), 4, "start, two deltas, and the second call whole");
    assert!(matches!(calls[3], ModelEvent::ToolCallDelta { index: 1, args_delta, .. } if args_delta == "{}"));
    assert!(matches!(out.last(), Some(ModelEvent::Finish { reason: FinishReason::ToolCalls, usage: Some(u) }) if u.total_tokens == Some(7)));
    let mut err = Vec::new();
    d.part(&json!({ "type": "error", "error": { "message": "overloaded" } }), false, &mut err).unwrap();
    assert!(matches!(&err[0], ModelEvent::Error { message, .. } if message == "overloaded"));
}
