//! Tool arguments the model got wrong, the same way over the four model APIs: arguments nested
//! too deeply to read, or holding a lone surrogate, never fail the reply; the call keeps its
//! arguments as text, which the tool loop answers with a `tool-error` for that call ("not valid
//! JSON"), and the model can try again.

use serde_json::{json, Value};

use super::fixtures::decode_pieces;
use crate::core::error::AgentError;
use crate::core::model::{FinishReason, ModelEvent};
use crate::providers::anthropic::AnthropicDecoder;
use crate::providers::google::GoogleDecoder;
use crate::providers::openai_chat::ChatDecoder;
use crate::providers::openai_responses::ResponsesDecoder;
use crate::providers::{step_of, StreamDecoder};

/// One reply calling `echo` with `args` (the arguments' JSON text), as each API streams it.
fn replies(args: &str) -> Vec<(&'static str, Box<dyn StreamDecoder>, String)> {
    let data = |v: Value| format!("data: {v}\n\n");
    let named = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    let function = json!({ "name": "echo", "arguments": args });
    let call = json!({ "index": 0, "id": "call_1", "type": "function", "function": function });
    let chat = data(json!({ "id": "c1", "choices": [{ "index": 0, "delta": { "tool_calls": [call] } }] }))
        + &data(json!({ "id": "c1", "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }))
        + "data: [DONE]\n\n";
    let item = |arguments: &str| {
        json!({ "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "echo", "arguments": arguments })
    };
    let responses = named(json!({ "type": "response.output_item.added", "output_index": 0, "item": item("") }))
        + &named(json!({ "type": "response.function_call_arguments.delta", "output_index": 0, "delta": args }))
        + &named(json!({ "type": "response.output_item.done", "output_index": 0, "item": item(args) }))
        + &named(json!({ "type": "response.completed", "response": { "id": "r1", "status": "completed" } }));
    let block = json!({ "type": "tool_use", "id": "call_1", "name": "echo", "input": {} });
    let delta = json!({ "type": "input_json_delta", "partial_json": args });
    let anthropic = named(json!({ "type": "message_start", "message": { "id": "m1", "model": "claude" } }))
        + &named(json!({ "type": "content_block_start", "index": 0, "content_block": block }))
        + &named(json!({ "type": "content_block_delta", "index": 0, "delta": delta }))
        + &named(json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" } }))
        + &named(json!({ "type": "message_stop" }));
    // Gemini sends the arguments as JSON inside the event, not as a string of JSON.
    let part = format!(r#"{{"functionCall":{{"name":"echo","args":{args}}}}}"#);
    let candidate = format!(r#"{{"content":{{"parts":[{part}]}},"finishReason":"STOP"}}"#);
    let google = format!("data: {{\"candidates\":[{candidate}]}}\n\n");
    vec![
        ("chat", Box::new(ChatDecoder::new(false)), chat),
        ("responses", Box::new(ResponsesDecoder::new(false)), responses),
        ("anthropic", Box::new(AnthropicDecoder::new(false)), anthropic),
        ("google", Box::new(GoogleDecoder::new(false)), google),
    ]
}

impl StreamDecoder for Box<dyn StreamDecoder> {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        (**self).push(bytes, out)
    }
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        (**self).end(out)
    }
}

#[test]
fn unreadable_tool_arguments_are_that_call_s_error_in_every_api() {
    let deep = format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    let cases = [
        (r#"{"city":"Paris"}"#, json!({ "city": "Paris" })),
        (deep.as_str(), Value::String(deep.clone())),
        (r#"{"s":"\ud800"}"#, Value::String(r#"{"s":"\ud800"}"#.into())),
        (r#"{"s":"\udc00 and \ud800\ud800"}"#, Value::String(r#"{"s":"\udc00 and \ud800\ud800"}"#.into())),
    ];
    for (args, want) in &cases {
        for (api, decoder, body) in replies(args) {
            let case = format!("{api}, arguments {}", &args[..args.len().min(40)]);
            let events = decode_pieces(decoder, &[body.as_bytes()]).unwrap_or_else(|e| panic!("{case}: {e}"));
            let step = step_of(events);
            assert_eq!(step.finish_reason, FinishReason::ToolCalls, "{case}");
            assert_eq!(step.tool_calls.len(), 1, "{case}");
            assert_eq!((step.tool_calls[0].tool_name.as_str(), &step.tool_calls[0].args), ("echo", want), "{case}");
        }
    }
}
