//! One step: the decoded events of one model response turned into chunks, and the step's result.
//!
//! `StepBuilder` is fed `ModelEvent`s in arrival order and hands back the chunks they produce,
//! opening and closing text and reasoning blocks and assembling streamed tool calls.

use serde_json::{json, Value};

use super::chunk::Chunk;
use super::error::AgentError;
use super::model::{with_meta, AssistantPart, FinishReason, MetaTarget, ModelEvent, ModelMessage, PartMeta, ToolResultPart, Usage, Warning};
use super::tools::ToolResult;

#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub tool_name: String,
    /// Parsed arguments; the raw text when it was not valid JSON.
    pub args: Value,
}

impl ToolCall {
    pub fn to_json(&self) -> Value {
        json!({ "toolCallId": self.tool_call_id, "toolName": self.tool_name, "args": self.args })
    }
}

/// `response` of a step: what the provider said about itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResponseInfo {
    pub id: Option<String>,
    pub model_id: Option<String>,
    pub timestamp_ms: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StepResult {
    pub message_id: String,
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
    pub usage: Usage,
    pub warnings: Vec<Warning>,
    pub request_body: String,
    pub response: ResponseInfo,
    /// The parts of the assistant message, in the order they streamed.
    pub parts: Vec<AssistantPart>,
    /// The calls' outcomes, in call order.
    pub tool_results: Vec<ToolResult>,
    /// Non-transient `data-*` chunks the tools wrote: `{ type, data, id? }`, kept on the
    /// step's assistant message.
    pub data_parts: Vec<Value>,
}

impl StepResult {
    /// The messages this step adds to the conversation.
    pub fn response_messages(&self) -> Vec<ModelMessage> {
        if self.parts.is_empty() {
            return Vec::new();
        }
        let mut out = vec![ModelMessage::Assistant(self.parts.clone())];
        let results: Vec<ToolResultPart> = self
            .tool_results
            .iter()
            .filter_map(|r| {
                let (result, is_error) = r.model_result()?;
                Some(ToolResultPart { tool_call_id: r.call.tool_call_id.clone(), tool_name: r.call.tool_name.clone(), result, is_error })
            })
            .collect();
        if !results.is_empty() {
            out.push(ModelMessage::Tool(results));
        }
        out
    }

    /// The step as `steps[i]` of the output.
    pub fn to_json(&self) -> Value {
        json!({
            "text": self.text,
            "reasoningText": if self.reasoning.is_empty() { Value::Null } else { self.reasoning.clone().into() },
            "toolCalls": self.tool_calls.iter().map(ToolCall::to_json).collect::<Vec<_>>(),
            "toolResults": self.tool_results.iter().filter_map(ToolResult::to_json).collect::<Vec<_>>(),
            "finishReason": self.finish_reason.as_str(),
            "usage": super::chunk::usage_json(&self.usage),
            "warnings": super::chunk::warnings_json(&self.warnings),
            "request": { "body": self.request_body },
            "response": {
                "id": self.response.id,
                "modelId": self.response.model_id,
                "timestamp": self.response.timestamp_ms,
                "messages": messages_json(&self.response_messages()),
            },
        })
    }
}

/// Model messages in the AI SDK's JSON shape (`{ role, content: [parts] }`).
pub fn messages_json(msgs: &[ModelMessage]) -> Value {
    Value::Array(
        msgs.iter()
            .map(|m| match m {
                ModelMessage::System(t) => json!({ "role": "system", "content": t }),
                ModelMessage::User(parts) => json!({ "role": "user", "content": parts.iter().map(|p| match p {
                    super::model::UserPart::Text(t) => json!({ "type": "text", "text": t }),
                    super::model::UserPart::File { data, media_type, filename } =>
                        json!({ "type": "file", "data": data, "mediaType": media_type, "filename": filename }),
                }).collect::<Vec<_>>() }),
                ModelMessage::Assistant(parts) => {
                    json!({ "role": "assistant", "content": parts.iter().map(assistant_part_json).collect::<Vec<_>>() })
                }
                ModelMessage::Tool(results) => json!({ "role": "tool", "content": results.iter().map(|r| json!({
                    "type": "tool-result", "toolCallId": r.tool_call_id, "toolName": r.tool_name,
                    "output": if r.is_error { json!({ "type": "error-json", "value": r.result }) }
                              else { json!({ "type": "json", "value": r.result }) },
                })).collect::<Vec<_>>() }),
            })
            .collect(),
    )
}

/// An assistant part in the AI SDK's prompt shape, its provider data as `providerOptions`.
pub(crate) fn assistant_part_json(p: &AssistantPart) -> Value {
    let json = match p {
        AssistantPart::Text(t, _) => json!({ "type": "text", "text": t }),
        AssistantPart::Reasoning(t, _) => json!({ "type": "reasoning", "text": t }),
        AssistantPart::ToolCall { tool_call_id, tool_name, args, .. } => {
            json!({ "type": "tool-call", "toolCallId": tool_call_id, "toolName": tool_name, "input": args })
        }
    };
    with_meta(json, "providerOptions", p.meta())
}

/// Merges provider data into a part's: provider by provider, field by field.
pub fn merge_meta(into: &mut PartMeta, meta: Value) {
    match (into.as_mut().and_then(Value::as_object_mut), meta) {
        (Some(have), Value::Object(new)) => {
            for (provider, fields) in new {
                match (have.get_mut(&provider).and_then(Value::as_object_mut), fields) {
                    (Some(old), Value::Object(fields)) => old.extend(fields),
                    (_, fields) => {
                        have.insert(provider, fields);
                    }
                }
            }
        }
        (_, meta) => *into = Some(meta),
    }
}

struct PendingCall {
    index: u32,
    id: String,
    name: String,
    args: String,
    meta: PartMeta,
}

/// Turns one response's events into chunks and accumulates the step.
pub struct StepBuilder {
    ids: IdSource,
    open_text: Option<String>,
    open_reasoning: Option<String>,
    calls: Vec<PendingCall>,
    /// The part each text and reasoning block streams into, by block id (for processors that
    /// change what streamed: `block_text`).
    blocks: Vec<(String, usize)>,
    pub result: StepResult,
    finished: bool,
}

/// Block ids (`text-start.id`), unique within a run.
pub struct IdSource {
    prefix: String,
    next: u32,
}

impl IdSource {
    pub fn new(prefix: String) -> Self {
        IdSource { prefix, next: 0 }
    }
    fn next(&mut self) -> String {
        self.next += 1;
        format!("{}-{}", self.prefix, self.next)
    }
}

impl StepBuilder {
    pub fn new(ids: IdSource, message_id: String, request_body: String, warnings: Vec<Warning>, now_ms: f64) -> Self {
        StepBuilder {
            ids,
            open_text: None,
            open_reasoning: None,
            calls: Vec::new(),
            blocks: Vec::new(),
            result: StepResult {
                message_id,
                text: String::new(),
                reasoning: String::new(),
                tool_calls: Vec::new(),
                finish_reason: FinishReason::Other,
                usage: Usage::default(),
                warnings,
                request_body,
                response: ResponseInfo { timestamp_ms: now_ms, ..Default::default() },
                parts: Vec::new(),
                tool_results: Vec::new(),
                data_parts: Vec::new(),
            },
            finished: false,
        }
    }

    /// Hands back the id source so block ids stay unique across the steps of a run.
    /// The step's `text` and `reasoning` are joined from its parts here: while it streams, a
    /// long reply is held once, in its parts (issue 18).
    pub fn into_parts(mut self) -> (IdSource, StepResult) {
        let r = &mut self.result;
        r.text = r.parts.iter().filter_map(|p| if let AssistantPart::Text(t, _) = p { Some(t.as_str()) } else { None }).collect();
        r.reasoning = r.parts.iter().filter_map(|p| if let AssistantPart::Reasoning(t, _) = p { Some(t.as_str()) } else { None }).collect();
        (self.ids, self.result)
    }

    /// Applies one event; the chunks it produces are appended to `out`. A provider error event
    /// is returned as `Err`.
    pub fn apply(&mut self, ev: ModelEvent, out: &mut Vec<Chunk>) -> Result<(), AgentError> {
        match ev {
            ModelEvent::ResponseMetadata { id, model_id, created } => {
                let r = &mut self.result.response;
                if r.id.is_none() {
                    r.id = id;
                }
                if r.model_id.is_none() {
                    r.model_id = model_id;
                }
                if let Some(secs) = created {
                    r.timestamp_ms = secs as f64 * 1000.0;
                }
            }
            ModelEvent::TextDelta(text) => {
                self.close_reasoning(out);
                let id = match &self.open_text {
                    Some(id) => id.clone(),
                    None => {
                        let id = self.ids.next();
                        out.push(Chunk::TextStart { id: id.clone() });
                        self.open_text = Some(id.clone());
                        self.blocks.push((id.clone(), self.result.parts.len()));
                        self.result.parts.push(AssistantPart::Text(String::new(), None));
                        id
                    }
                };
                if let Some(AssistantPart::Text(t, _)) = self.result.parts.last_mut() {
                    t.push_str(&text);
                }
                out.push(Chunk::TextDelta { id, text });
            }
            ModelEvent::ReasoningDelta(text) => {
                self.close_text(out);
                let id = match &self.open_reasoning {
                    Some(id) => id.clone(),
                    None => {
                        let id = self.ids.next();
                        out.push(Chunk::ReasoningStart { id: id.clone() });
                        self.open_reasoning = Some(id.clone());
                        self.blocks.push((id.clone(), self.result.parts.len()));
                        self.result.parts.push(AssistantPart::Reasoning(String::new(), None));
                        id
                    }
                };
                if let Some(AssistantPart::Reasoning(t, _)) = self.result.parts.last_mut() {
                    t.push_str(&text);
                }
                out.push(Chunk::ReasoningDelta { id, text });
            }
            ModelEvent::ToolCallDelta { index, id, name, args_delta } => {
                self.close_text(out);
                self.close_reasoning(out);
                let pos = match self.calls.iter().position(|c| c.index == index) {
                    Some(p) => p,
                    None => {
                        let call = PendingCall {
                            index,
                            id: id.unwrap_or_else(|| self.ids.next()),
                            name: name.unwrap_or_default(),
                            args: String::new(),
                            meta: None,
                        };
                        out.push(Chunk::ToolCallInputStreamingStart {
                            tool_call_id: call.id.clone(),
                            tool_name: call.name.clone(),
                        });
                        self.calls.push(call);
                        self.calls.len() - 1
                    }
                };
                if !args_delta.is_empty() {
                    let call = &mut self.calls[pos];
                    call.args.push_str(&args_delta);
                    out.push(Chunk::ToolCallDelta {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        args_text_delta: args_delta,
                    });
                }
            }
            ModelEvent::PartMeta { target, meta } => self.apply_meta(target, meta, out),
            ModelEvent::Finish { reason, usage } => {
                self.result.finish_reason = reason;
                if let Some(u) = usage {
                    self.result.usage = u;
                }
                self.finished = true;
            }
            ModelEvent::Usage(u) => self.result.usage = u,
            ModelEvent::Restart => self.restart(out),
            ModelEvent::Error { message, body } => {
                return Err(AgentError::ApiCall { message, status: None, body, retryable: false, retry_after_ms: None });
            }
            ModelEvent::Raw(text) => out.push(Chunk::Raw(text)),
        }
        Ok(())
    }

    /// Attaches provider data to the part it names. Providers send it as a block ends (Anthropic's
    /// signature, the Responses API's `output_item.done`), so the block is closed: the next
    /// delta starts a new one. Reasoning that streamed no text (encrypted or redacted) still gets
    /// a part, so it goes back to the model; it shows no chunks.
    fn apply_meta(&mut self, target: MetaTarget, meta: Value, out: &mut Vec<Chunk>) {
        let slot = match target {
            MetaTarget::ToolCall(index) => self.calls.iter_mut().find(|c| c.index == index).map(|c| &mut c.meta),
            MetaTarget::Text => {
                self.close_text(out);
                match self.result.parts.last_mut() {
                    Some(AssistantPart::Text(_, slot)) if slot.is_none() => Some(slot),
                    _ => None,
                }
            }
            MetaTarget::Reasoning => {
                self.close_reasoning(out);
                if !matches!(self.result.parts.last(), Some(AssistantPart::Reasoning(_, None))) {
                    self.result.parts.push(AssistantPart::Reasoning(String::new(), None));
                }
                match self.result.parts.last_mut() {
                    Some(AssistantPart::Reasoning(_, slot)) => Some(slot),
                    _ => None,
                }
            }
        };
        if let Some(slot) = slot {
            merge_meta(slot, meta);
        }
    }

    /// Forgets the message streamed so far: its chunks went out, but the step's text, reasoning,
    /// parts and calls are the next message's only. Open blocks and calls are ended, so every start
    /// chunk has its end; an abandoned call never becomes a `tool-call`.
    fn restart(&mut self, out: &mut Vec<Chunk>) {
        self.close_text(out);
        self.close_reasoning(out);
        for call in self.calls.drain(..) {
            out.push(Chunk::ToolCallInputStreamingEnd { tool_call_id: call.id });
        }
        self.blocks.clear();
        let r = &mut self.result;
        r.text.clear();
        r.reasoning.clear();
        r.parts.clear();
        r.usage = Usage::default();
        r.response.id = None;
        r.response.model_id = None;
    }

    fn close_text(&mut self, out: &mut Vec<Chunk>) {
        if let Some(id) = self.open_text.take() {
            out.push(Chunk::TextEnd { id });
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Chunk>) {
        if let Some(id) = self.open_reasoning.take() {
            out.push(Chunk::ReasoningEnd { id });
        }
    }

    /// Closes open text and reasoning blocks. With `complete`, the streamed tool calls are
    /// finished into `tool-call` chunks; a step cut short drops them, since a call whose
    /// arguments never finished cannot be run or answered.
    pub fn close(&mut self, out: &mut Vec<Chunk>, complete: bool) {
        self.close_text(out);
        self.close_reasoning(out);
        if !complete {
            self.calls.clear();
            return;
        }
        for call in self.calls.drain(..) {
            out.push(Chunk::ToolCallInputStreamingEnd { tool_call_id: call.id.clone() });
            let args = if call.args.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.args).unwrap_or(Value::String(call.args))
            };
            let tc = ToolCall { tool_call_id: call.id, tool_name: call.name, args };
            self.result.parts.push(AssistantPart::ToolCall {
                tool_call_id: tc.tool_call_id.clone(),
                tool_name: tc.tool_name.clone(),
                args: tc.args.clone(),
                meta: call.meta,
            });
            out.push(Chunk::ToolCall(tc.clone()));
            self.result.tool_calls.push(tc);
        }
    }

    /// The text of block `id`'s part and the step's text (or reasoning) it adds to.
    pub fn block_text(&mut self, id: &str) -> Option<(&mut String, &mut String)> {
        let at = self.blocks.iter().find(|(b, _)| b == id)?.1;
        match self.result.parts.get_mut(at)? {
            AssistantPart::Text(t, _) => Some((t, &mut self.result.text)),
            AssistantPart::Reasoning(t, _) => Some((t, &mut self.result.reasoning)),
            AssistantPart::ToolCall { .. } => None,
        }
    }

    /// Whether the provider sent its finish event.
    pub fn saw_finish(&self) -> bool {
        self.finished
    }
}
