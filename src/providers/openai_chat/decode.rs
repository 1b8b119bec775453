//! The Chat Completions stream: response bytes → `ModelEvent`s.

use std::borrow::Cow;

use serde_json::Value;

use crate::core::error::AgentError;
use crate::core::model::{FinishReason, ModelEvent, Usage};
use crate::providers::json::{self, Reader};
use crate::providers::sse::{SseDecoder, SseEvent};
use crate::providers::{cut_short, not_json, openai_usage, push_sse, unreadable, SseEvents, StreamDecoder, UsageKeys};

/// Decodes a streamed Chat Completions body into `ModelEvent`s.
///
/// Per chunk, in order: `ResponseMetadata` (once, from the first chunk that has an id, model or
/// creation time), `ReasoningDelta`, `TextDelta` (or, for `content` as a list of typed parts, a
/// `ReasoningDelta` per thinking text and a `TextDelta` per text, in order), one `ToolCallDelta`
/// per tool call piece. One `Finish` closes the reply, at `[DONE]` or at the end of the body, with
/// the last finish reason and usage seen. A chunk `{"error": …}` becomes one `Error` event.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatDecoder {
    sse: SseDecoder,
    /// Scratch list of SSE events, kept to reuse its allocation.
    events: Vec<SseEvent>,
    include_raw: bool,
    metadata_sent: bool,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    saw_error: bool,
    /// `Finish` was emitted; whatever follows is ignored.
    finished: bool,
}

impl ChatDecoder {
    pub fn new(include_raw: bool) -> Self {
        ChatDecoder {
            sse: SseDecoder::new(),
            events: Vec::new(),
            include_raw,
            metadata_sent: false,
            finish_reason: None,
            usage: None,
            saw_error: false,
            finished: false,
        }
    }

    fn event(&mut self, mut data: String, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        let payload = data.trim();
        if payload.is_empty() {
            return Ok(()); // an empty `data:` line, which some proxies send to keep the line open
        }
        if payload == "[DONE]" {
            self.emit_finish(out);
            return Ok(());
        }
        let raw_at = out.len();
        let result = match parse_chunk(&data) {
            Ok(Chunk { error: Some(error), .. }) => match serde_json::from_str::<Value>(error) {
                Ok(error) => {
                    let message = error_message(Some(&error));
                    self.saw_error = true;
                    // The raw event is wanted twice only when raw events are on.
                    let body = if self.include_raw { data.clone() } else { std::mem::take(&mut data) };
                    out.push(ModelEvent::Error { message, body: Some(body) });
                    Ok(())
                }
                // Only a number beyond f64 gets here (see `json`); serde_json calls that malformed.
                Err(_) => Err(not_json(&data)),
            },
            Ok(chunk) => {
                self.chunk(chunk, out);
                Ok(())
            }
            Err(e) => Err(unreadable(e, &data)),
        };
        if self.include_raw {
            // Raw goes before the events it produced; the insert shifts one or two events at most.
            out.insert(raw_at, ModelEvent::Raw(data));
        }
        result
    }

    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Vec<ModelEvent>) {
        if !self.metadata_sent && (chunk.id.is_some() || chunk.model.is_some() || chunk.has_created) {
            self.metadata_sent = true;
            out.push(ModelEvent::ResponseMetadata {
                id: chunk.id.map(Cow::into_owned),
                model_id: chunk.model.map(Cow::into_owned),
                created: chunk.created,
            });
        }
        // Only the first choice: the agent never asks for `n > 1`.
        let delta = chunk.delta;
        let reasoning = [delta.reasoning_content, delta.reasoning].into_iter().flatten().find(|t| !t.is_empty());
        if let Some(reasoning) = reasoning {
            out.push(ModelEvent::ReasoningDelta(reasoning.into_owned()));
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            out.push(ModelEvent::TextDelta(text.into_owned()));
        }
        let mut parts = delta.content_parts;
        out.append(&mut parts);
        for (position, call) in delta.tool_calls.into_iter().enumerate() {
            out.push(ModelEvent::ToolCallDelta {
                index: call.index.unwrap_or(position as u32),
                // Some servers repeat `"name": ""` on later pieces; that is not a name.
                id: call.id.and_then(non_empty),
                name: call.name.and_then(non_empty),
                args_delta: call.arguments.map(Cow::into_owned).unwrap_or_default(),
            });
        }
        if let Some(reason) = chunk.finish_reason {
            self.finish_reason = Some(finish_reason(&reason));
        }
        if let Some(usage) = chunk.usage.or(chunk.groq_usage) {
            self.usage = Some(usage);
        }
    }

    fn emit_finish(&mut self, out: &mut Vec<ModelEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let fallback = if self.saw_error { FinishReason::Error } else { FinishReason::Other };
        out.push(ModelEvent::Finish { reason: self.finish_reason.unwrap_or(fallback), usage: self.usage });
    }
}

impl SseEvents for ChatDecoder {
    fn framing(&mut self) -> (&mut SseDecoder, &mut Vec<SseEvent>) {
        (&mut self.sse, &mut self.events)
    }
    fn ended(&self) -> bool {
        self.finished // nothing after `[DONE]` counts
    }
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        self.event(event.data, out)
    }
}

impl StreamDecoder for ChatDecoder {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        push_sse(self, bytes, out)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        if self.finished {
            return Ok(());
        }
        self.sse.finish(&mut self.events);
        // Some servers never send `[DONE]`: a finish reason (or an error report) is enough to
        // know the reply is complete, but a body that stops inside an event was cut.
        if self.sse.has_partial() || (self.finish_reason.is_none() && !self.saw_error) {
            return Err(cut_short());
        }
        self.emit_finish(out);
        Ok(())
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

fn error_message(error: Option<&Value>) -> String {
    match error {
        Some(Value::String(message)) => message.clone(),
        Some(Value::Object(o)) if o.get("message").is_some_and(Value::is_string) => {
            o["message"].as_str().unwrap_or_default().to_string()
        }
        Some(other) => other.to_string(),
        None => String::new(),
    }
}



fn non_empty(text: Cow<'_, str>) -> Option<String> {
    (!text.is_empty()).then(|| text.into_owned())
}

// One chunk, as far as the decoder reads it. Unknown fields are skipped (and checked); strings
// borrow from the event text unless they contain escapes. Of `choices`, only the first is read:
// the others are checked as JSON but not for their shape.

#[derive(Default)]
struct Chunk<'a> {
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    created: Option<u64>,
    /// `created` was there and not `null`, even if it was no usable time.
    has_created: bool,
    /// `choices[0].delta`
    delta: Delta<'a>,
    /// `choices[0].finish_reason`
    finish_reason: Option<Cow<'a, str>>,
    usage: Option<Usage>,
    /// `x_groq.usage`, where Groq used to put it.
    groq_usage: Option<Usage>,
    /// The text of a non-null `error`.
    error: Option<&'a str>,
}

#[derive(Default)]
struct Delta<'a> {
    content: Option<Cow<'a, str>>,
    /// `content` as a list of typed parts (Mistral's reasoning models): the reasoning and text
    /// deltas of their texts, in order.
    content_parts: Vec<ModelEvent>,
    reasoning_content: Option<Cow<'a, str>>,
    /// Groq and OpenRouter spell `reasoning_content` this way.
    reasoning: Option<Cow<'a, str>>,
    tool_calls: Vec<ToolCall<'a>>,
}

#[derive(Default)]
struct ToolCall<'a> {
    index: Option<u32>,
    id: Option<Cow<'a, str>>,
    /// `function.name`
    name: Option<Cow<'a, str>>,
    /// `function.arguments`
    arguments: Option<Cow<'a, str>>,
}

fn parse_chunk(text: &str) -> json::Result<Chunk<'_>> {
    let mut chunk = Chunk::default();
    let mut r = Reader::new(text);
    r.object(&mut |r, key| {
        match key {
            "id" => chunk.id = r.opt_string()?,
            "model" => chunk.model = r.opt_string()?,
            "created" => {
                chunk.has_created = !r.is_null();
                chunk.created = r.opt_count()?;
            }
            "choices" if !r.is_null() => r.array(&mut |r, i| if i == 0 { choice(r, &mut chunk) } else { Ok(()) })?,
            "usage" => chunk.usage = usage(r)?,
            "x_groq" if !r.is_null() => r.object(&mut |r, key| {
                if key == "usage" {
                    chunk.groq_usage = usage(r)?;
                }
                Ok(())
            })?,
            "error" if !r.is_null() => chunk.error = Some(r.raw()?),
            _ => {}
        }
        Ok(())
    })?;
    r.end()?;
    Ok(chunk)
}

fn choice<'a>(r: &mut Reader<'a>, chunk: &mut Chunk<'a>) -> json::Result<()> {
    r.object(&mut |r, key| {
        match key {
            "delta" if !r.is_null() => r.object(&mut |r, key| {
                let delta = &mut chunk.delta;
                match key {
                    "content" if r.is_array() => content_parts(r, false, &mut delta.content_parts)?,
                    "content" => delta.content = r.opt_string()?,
                    "reasoning_content" => delta.reasoning_content = r.opt_string()?,
                    "reasoning" => delta.reasoning = r.opt_string()?,
                    "tool_calls" if !r.is_null() => r.array(&mut |r, _| {
                        let call = tool_call(r)?;
                        delta.tool_calls.push(call);
                        Ok(())
                    })?,
                    _ => {}
                }
                Ok(())
            })?,
            "finish_reason" => chunk.finish_reason = r.opt_string()?,
            _ => {}
        }
        Ok(())
    })
}

/// `[{ "type": "text", "text": … }, { "type": "thinking", "thinking": [{ "type": "text", "text": … }] }]`:
/// a delta per text, in order, reasoning for the texts in thinking. Parts of other types are skipped.
fn content_parts(r: &mut Reader<'_>, thinking: bool, out: &mut Vec<ModelEvent>) -> json::Result<()> {
    r.array(&mut |r, _| {
        let (at, mut kind, mut text) = (out.len(), None, None);
        r.object(&mut |r, key| {
            match key {
                "type" => kind = r.opt_string()?,
                "text" => text = r.opt_string()?,
                "thinking" if r.is_array() => content_parts(r, true, out)?,
                _ => {}
            }
            Ok(())
        })?;
        // Only a thinking part keeps the texts of its `thinking`.
        if kind.as_deref() != Some("thinking") {
            out.truncate(at);
        }
        match text.filter(|t| !t.is_empty() && kind.as_deref() == Some("text")) {
            Some(t) if thinking => out.push(ModelEvent::ReasoningDelta(t.into_owned())),
            Some(t) => out.push(ModelEvent::TextDelta(t.into_owned())),
            None => {}
        }
        Ok(())
    })
}

fn tool_call<'a>(r: &mut Reader<'a>) -> json::Result<ToolCall<'a>> {
    let mut call = ToolCall::default();
    r.object(&mut |r, key| {
        match key {
            "index" => {
                call.index = match r.opt_u64()? {
                    Some(n) => Some(u32::try_from(n).map_err(|_| r.error("tool call index out of range"))?),
                    None => None,
                }
            }
            "id" => call.id = r.opt_string()?,
            "function" if !r.is_null() => r.object(&mut |r, key| {
                match key {
                    "name" => call.name = r.opt_string()?,
                    "arguments" => call.arguments = r.opt_string()?,
                    _ => {}
                }
                Ok(())
            })?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(call)
}

/// `usage`, or `None` for `null`.
fn usage(r: &mut Reader<'_>) -> json::Result<Option<Usage>> {
    openai_usage(r, &UsageKeys { input: "prompt_tokens", output: "completion_tokens", input_details: "prompt_tokens_details", output_details: "completion_tokens_details" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_without_escapes_are_borrowed_from_the_event() {
        let data = r#"{"id":"c1","choices":[{"delta":{"content":"plain","reasoning":"a\nb"},"finish_reason":null}]}"#;
        let chunk = parse_chunk(data).unwrap();
        assert!(matches!(chunk.id, Some(Cow::Borrowed("c1"))));
        assert!(matches!(chunk.delta.content, Some(Cow::Borrowed("plain"))));
        assert!(matches!(chunk.delta.reasoning, Some(Cow::Owned(ref s)) if s == "a\nb"));
        assert!(chunk.finish_reason.is_none());
    }
}
