//! `doStream` parts → `ModelEvent`s, and the warnings of its `stream-start` part.

use serde_json::Value;

use crate::core::error::AgentError;
use crate::core::model::{FinishReason, MetaTarget, ModelEvent, PartMeta, Usage, Warning};
use crate::core::step::merge_meta;

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
