//! An AI SDK model object as `model` (`{ specificationVersion, provider, modelId, doStream }`):
//! the call options its `doStream` takes, built from a `ModelRequest`, and its stream parts
//! turned into `ModelEvent`s. Pure JSON in and out; the bindings call the object.

use serde_json::{json, Map, Value};

use crate::core::error::AgentError;
use crate::core::model::{
    FinishReason, MetaTarget, ModelEvent, ModelMessage, ModelRequest, PartMeta, ToolChoice, Usage, UserPart, Warning,
};
use crate::core::step::{assistant_part_json, merge_meta};

/// `LanguageModelV2CallOptions` (without `abortSignal`, which the bindings add).
pub fn call_options(req: &ModelRequest) -> Value {
    let prompt: Vec<Value> = req
        .messages
        .iter()
        .map(|m| match m {
            ModelMessage::System(t) => json!({ "role": "system", "content": t }),
            ModelMessage::User(parts) => json!({ "role": "user", "content": parts.iter().map(|p| match p {
                UserPart::Text(t) => json!({ "type": "text", "text": t }),
                UserPart::File { data, media_type, filename } => {
                    let mut f = json!({ "type": "file", "data": data, "mediaType": media_type });
                    if let Some(n) = filename {
                        f["filename"] = n.as_str().into();
                    }
                    f
                }
            }).collect::<Vec<_>>() }),
            ModelMessage::Assistant(parts) => {
                json!({ "role": "assistant", "content": parts.iter().map(assistant_part_json).collect::<Vec<_>>() })
            }
            ModelMessage::Tool(results) => json!({ "role": "tool", "content": results.iter().map(|r| {
                let output = match (&r.result, r.is_error) {
                    (Value::String(s), true) => json!({ "type": "error-text", "value": s }),
                    (v, true) => json!({ "type": "error-json", "value": v }),
                    (Value::String(s), false) => json!({ "type": "text", "value": s }),
                    (v, false) => json!({ "type": "json", "value": v }),
                };
                json!({ "type": "tool-result", "toolCallId": r.tool_call_id, "toolName": r.tool_name, "output": output })
            }).collect::<Vec<_>>() }),
        })
        .collect();
    let s = &req.settings;
    let mut o = Map::new();
    o.insert("prompt".into(), Value::Array(prompt));
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            o.insert(k.into(), v);
        }
    };
    put("maxOutputTokens", s.max_output_tokens.map(Value::from));
    put("temperature", s.temperature.map(Value::from));
    put("topP", s.top_p.map(Value::from));
    put("topK", s.top_k.map(Value::from));
    put("presencePenalty", s.presence_penalty.map(Value::from));
    put("frequencyPenalty", s.frequency_penalty.map(Value::from));
    put("seed", s.seed.map(Value::from));
    put("stopSequences", (!s.stop_sequences.is_empty()).then(|| json!(s.stop_sequences)));
    let headers: Map<String, Value> = s.headers.iter().map(|(k, v)| (k.clone(), v.as_str().into())).collect();
    put("headers", (!headers.is_empty()).then_some(Value::Object(headers)));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({ "type": "function", "name": t.name, "description": t.description, "inputSchema": t.parameters }))
            .collect();
        put("tools", Some(Value::Array(tools)));
        put(
            "toolChoice",
            req.tool_choice.as_ref().map(|c| match c {
                ToolChoice::Auto => json!({ "type": "auto" }),
                ToolChoice::None => json!({ "type": "none" }),
                ToolChoice::Required => json!({ "type": "required" }),
                ToolChoice::Tool(name) => json!({ "type": "tool", "toolName": name }),
            }),
        );
    }
    put("providerOptions", req.provider_options.clone().map(Value::Object));
    Value::Object(o)
}

/// Turns `doStream` parts into events, in order.
#[derive(Default)]
pub struct PartDecoder {
    /// Tool calls by their id, numbered as they start (the loop tells calls apart by index).
    calls: Vec<String>,
    /// `providerMetadata` of the text and reasoning blocks streaming now: a provider may put it
    /// on the start, a delta or the end part; it goes to the step at the end part.
    text_meta: PartMeta,
    reasoning_meta: PartMeta,
    finished: bool,
}

impl PartDecoder {
    pub fn finished(&self) -> bool {
        self.finished
    }

    fn index_of(&mut self, id: &str) -> (u32, bool) {
        match self.calls.iter().position(|c| c == id) {
            Some(i) => (i as u32, false),
            None => {
                self.calls.push(id.to_string());
                ((self.calls.len() - 1) as u32, true)
            }
        }
    }

    pub fn part(&mut self, part: &Value, include_raw: bool, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        let s = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some(meta) = part.get("providerMetadata").filter(|m| m.is_object()) {
            match kind {
                "text-start" | "text-delta" | "text-end" => merge_meta(&mut self.text_meta, meta.clone()),
                "reasoning-start" | "reasoning-delta" | "reasoning-end" => merge_meta(&mut self.reasoning_meta, meta.clone()),
                _ => {}
            }
        }
        match kind {
            "text-end" => {
                if let Some(meta) = self.text_meta.take() {
                    out.push(ModelEvent::PartMeta { target: MetaTarget::Text, meta });
                }
            }
            "reasoning-end" => {
                if let Some(meta) = self.reasoning_meta.take() {
                    out.push(ModelEvent::PartMeta { target: MetaTarget::Reasoning, meta });
                }
            }
            "response-metadata" => out.push(ModelEvent::ResponseMetadata {
                id: part.get("id").and_then(Value::as_str).map(str::to_owned),
                model_id: part.get("modelId").and_then(Value::as_str).map(str::to_owned),
                created: None,
            }),
            "text-delta" => out.push(ModelEvent::TextDelta(s("delta"))),
            "reasoning-delta" => out.push(ModelEvent::ReasoningDelta(s("delta"))),
            "tool-input-start" => {
                let (index, _) = self.index_of(&s("id"));
                out.push(ModelEvent::ToolCallDelta { index, id: Some(s("id")), name: Some(s("toolName")), args_delta: String::new() });
            }
            "tool-input-delta" => {
                let (index, _) = self.index_of(&s("id"));
                out.push(ModelEvent::ToolCallDelta { index, id: None, name: None, args_delta: s("delta") });
            }
            "tool-call" => {
                // A whole call; when its input already streamed, nothing is left to add.
                let id = s("toolCallId");
                let (index, new) = self.index_of(&id);
                if new {
                    let input = match part.get("input") {
                        Some(Value::String(text)) => text.clone(),
                        Some(v) => v.to_string(),
                        None => String::new(),
                    };
                    out.push(ModelEvent::ToolCallDelta { index, id: Some(id), name: Some(s("toolName")), args_delta: input });
                }
                if let Some(meta) = part.get("providerMetadata").filter(|m| m.is_object()) {
                    out.push(ModelEvent::PartMeta { target: MetaTarget::ToolCall(index), meta: meta.clone() });
                }
            }
            "finish" => {
                let reason = match part.get("finishReason").and_then(Value::as_str).unwrap_or_default() {
                    "stop" => FinishReason::Stop,
                    "length" => FinishReason::Length,
                    "tool-calls" => FinishReason::ToolCalls,
                    "content-filter" => FinishReason::ContentFilter,
                    "error" => FinishReason::Error,
                    _ => FinishReason::Other,
                };
                let u = part.get("usage").cloned().unwrap_or(Value::Null);
                let n = |k: &str| u.get(k).and_then(Value::as_f64).filter(|v| *v >= 0.0).map(|v| v as u64);
                let usage = Usage {
                    input_tokens: n("inputTokens"),
                    output_tokens: n("outputTokens"),
                    total_tokens: n("totalTokens"),
                    reasoning_tokens: n("reasoningTokens"),
                    cached_input_tokens: n("cachedInputTokens"),
                };
                self.finished = true;
                out.push(ModelEvent::Finish { reason, usage: Some(usage) });
            }
            "error" => {
                let e = part.get("error").cloned().unwrap_or(Value::Null);
                let message = e
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| e.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "the model reported an error".into());
                out.push(ModelEvent::Error { message, body: Some(e.to_string()) });
            }
            "raw" if include_raw => out.push(ModelEvent::Raw(part.get("rawValue").cloned().unwrap_or(Value::Null).to_string())),
            // stream-start, text/reasoning start and end, tool-input-end, source, file: the loop
            // opens and closes its blocks itself.
            _ => {}
        }
        Ok(())
    }
}

/// Warnings a model reported in its `stream-start` part.
pub fn warnings_of(part: &Value) -> Vec<Warning> {
    part.get("warnings")
        .and_then(Value::as_array)
        .map(|ws| {
            ws.iter()
                .map(|w| Warning {
                    kind: if w.get("type").and_then(Value::as_str) == Some("unsupported-setting") { "unsupported-setting" } else { "other" },
                    setting: w.get("setting").and_then(Value::as_str).map(str::to_owned),
                    message: w.get("details").or_else(|| w.get("message")).and_then(Value::as_str).map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{AssistantPart, ModelSettings, ToolResultPart, ToolSpec};

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
}
