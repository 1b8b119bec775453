//! `toAISdkV5Messages` (§21.4): messages in any shape this package accepts — strings, model
//! messages, AI SDK UI messages, stored messages — as AI SDK v5 UI messages, through the same
//! conversion `listMessages({ format: 'ui' })` uses.

use serde_json::{json, Value};

use super::{input_messages, stored_to_ui, StoredMessage, Thread};
use crate::core::error::AgentError;
use crate::core::input::{join, parse_messages};
use crate::core::model::ModelMessage;

/// What one message given to [`to_ui_messages`] is.
enum Shape {
    /// `{ id?, role, content: { parts, metadata? } }`: kept as stored, with its id and time.
    Stored,
    /// `{ id?, role, parts }`: already a UI message.
    Ui,
    /// A string or a model message.
    Model,
}

fn shape(v: &Value) -> Shape {
    match v {
        Value::Object(o) if o.get("parts").is_some_and(|p| !p.is_null()) => Shape::Ui,
        Value::Object(o) if o.get("content").and_then(|c| c.get("parts")).is_some_and(Value::is_array) => Shape::Stored,
        _ => Shape::Model,
    }
}

/// The UI messages of `v` (one message or an array of them), in order. `next` gives a new
/// message's id and creation time; a message that has an `id` keeps it. Tool results in model
/// messages complete the calls before them, as memory stores them; system messages become
/// `role: 'system'` text messages.
pub fn to_ui_messages(v: &Value, field: &str, next: &mut dyn FnMut() -> (String, String)) -> Result<Vec<Value>, AgentError> {
    let items: Vec<(String, &Value)> = match v {
        Value::Array(list) => list.iter().enumerate().map(|(i, m)| (join(field, i), m)).collect(),
        other => vec![(field.to_owned(), other)],
    };
    let mut out = Vec::new();
    let mut batch: Vec<ModelMessage> = Vec::new();
    for (path, item) in items {
        match shape(item) {
            Shape::Model => {
                for m in parse_messages(item, &path)? {
                    if let ModelMessage::System(text) = m {
                        flush(&mut batch, &mut out, next);
                        let (id, at) = next();
                        out.push(json!({ "id": id, "role": "system", "parts": [{ "type": "text", "text": text }], "createdAt": at }));
                    } else {
                        batch.push(m);
                    }
                }
            }
            Shape::Ui => {
                flush(&mut batch, &mut out, next);
                // Checked as stream() would check it, then passed on as given.
                parse_messages(item, &path)?;
                out.push(with_id(item.clone(), next));
            }
            Shape::Stored => {
                flush(&mut batch, &mut out, next);
                parse_messages(item, &path)?;
                let mut item = with_id(item.clone(), next);
                if item.get("createdAt").and_then(Value::as_str).is_none() {
                    item["createdAt"] = Value::String(next().1);
                }
                let stored = StoredMessage::from_json(&item, &path)?;
                out.push(stored_to_ui(&stored));
            }
        }
    }
    flush(&mut batch, &mut out, next);
    Ok(out)
}

fn with_id(mut item: Value, next: &mut dyn FnMut() -> (String, String)) -> Value {
    if item.get("id").and_then(Value::as_str).is_none_or(str::is_empty) {
        item["id"] = Value::String(next().0);
    }
    item
}

fn flush(batch: &mut Vec<ModelMessage>, out: &mut Vec<Value>, next: &mut dyn FnMut() -> (String, String)) {
    if batch.is_empty() {
        return;
    }
    let nowhere = Thread { id: String::new(), resource_id: String::new(), title: None, metadata: None, created_at: String::new(), updated_at: String::new() };
    out.extend(input_messages(batch, &[], &nowhere, next).iter().map(stored_to_ui));
    batch.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ui(v: Value) -> Vec<Value> {
        let mut n = 0;
        let mut next = || {
            n += 1;
            (format!("m{n}"), format!("2026-12-02T00:00:00.{n:03}Z"))
        };
        to_ui_messages(&v, "messages", &mut next).unwrap()
    }

    #[test]
    fn a_string_and_model_messages_become_ui_messages_with_tool_results_folded_into_their_calls() {
        assert_eq!(ui(json!("Hello")), [json!({ "id": "m1", "role": "user", "parts": [{ "type": "text", "text": "Hello" }], "createdAt": "2026-12-02T00:00:00.001Z" })]);
        let got = ui(json!([
            { "role": "system", "content": "Be brief." },
            { "role": "user", "content": "Weather?" },
            { "role": "assistant", "content": [
                { "type": "text", "text": "Checking." },
                { "type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": { "city": "Paris" } },
            ] },
            { "role": "tool", "content": [{ "type": "tool-result", "toolCallId": "c1", "toolName": "weather", "output": { "type": "json", "value": { "temp": 21 } } }] },
        ]));
        assert_eq!(got.iter().map(|m| m["role"].as_str().unwrap()).collect::<Vec<_>>(), ["system", "user", "assistant"]);
        assert_eq!(got[0]["parts"], json!([{ "type": "text", "text": "Be brief." }]));
        let call = &got[2]["parts"][1];
        assert_eq!(call["type"], "tool-weather");
        assert_eq!(call["state"], "output-available");
        assert_eq!(call["input"], json!({ "city": "Paris" }));
        assert_eq!(call["output"], json!({ "temp": 21 }));
    }

    #[test]
    fn stored_and_ui_messages_keep_their_ids_parts_and_metadata() {
        let got = ui(json!([
            { "id": "s1", "role": "assistant", "createdAt": "2026-01-01T00:00:00.000Z", "content": { "format": 2, "metadata": { "interrupted": true }, "parts": [
                { "type": "step-start" }, { "type": "text", "text": "Hi" }, { "type": "data-weather", "data": { "temp": 3 } },
                { "type": "tool-invocation", "toolInvocation": { "state": "result", "toolCallId": "c9", "toolName": "t", "args": {}, "result": "boom", "isError": true } },
            ] } },
            { "id": "u7", "role": "user", "parts": [{ "type": "text", "text": "From useChat" }] },
            { "role": "user", "parts": [{ "type": "text", "text": "No id" }] },
        ]));
        assert_eq!(got[0]["id"], "s1");
        assert_eq!(got[0]["metadata"], json!({ "interrupted": true }));
        assert_eq!(got[0]["parts"][2], json!({ "type": "data-weather", "data": { "temp": 3 } }));
        assert_eq!(got[0]["parts"][3]["state"], "output-error");
        assert_eq!(got[0]["parts"][3]["errorText"], "boom");
        assert_eq!(got[1], json!({ "id": "u7", "role": "user", "parts": [{ "type": "text", "text": "From useChat" }] }));
        assert_eq!(got[2]["id"], "m1", "a message without an id gets one");
    }

    #[test]
    fn a_bad_message_names_its_path() {
        let mut next = || (String::from("x"), String::from("t"));
        let err = to_ui_messages(&json!(["ok", { "role": "robot", "content": "?" }]), "toAISdkV5Messages(messages)", &mut next).unwrap_err();
        assert!(err.to_string().contains("toAISdkV5Messages(messages)[1]"), "{err}");
        let err = to_ui_messages(&json!(42), "toAISdkV5Messages(messages)", &mut next).unwrap_err();
        assert!(err.to_string().contains("toAISdkV5Messages(messages)"), "{err}");
    }
}
