//! The Messages stream: response bytes → `ModelEvent`s.

use std::borrow::Cow;

use serde_json::json;

use crate::core::error::AgentError;
use crate::core::model::{FinishReason, MetaTarget, ModelEvent, Usage};
use crate::providers::json::{self, Reader};
use crate::providers::sse::{SseDecoder, SseEvent};
use crate::providers::{cut_short, error_message, push_sse, unreadable, SseEvents, StreamDecoder};

/// Decodes a streamed Messages body into `ModelEvent`s.
///
/// `message_start` gives `ResponseMetadata`; text, thinking and tool-argument deltas give
/// `TextDelta`, `ReasoningDelta` and `ToolCallDelta` (the content block's index is the call's
/// index; its id and name come with a first, empty piece at the block's start). One `Finish`
/// closes the reply at `message_stop`, with the stop reason of `message_delta` and the usage of
/// both. A second `message_start` (the API abandoned the message and started over) gives
/// `Restart`, and the new message's events follow. An `error` event becomes one `Error` event.
/// Other events (`ping`, block stops, types added to the API later) produce nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicDecoder {
    sse: SseDecoder,
    /// Scratch list of SSE events, kept to reuse its allocation.
    events: Vec<SseEvent>,
    include_raw: bool,
    /// Indexes of the `tool_use` blocks: only their `input_json_delta`s are tool arguments
    /// (server tools stream theirs too).
    tool_blocks: Vec<u32>,
    stop_reason: Option<FinishReason>,
    usage: Option<Usage>,
    saw_error: bool,
    /// A `message_start` came.
    started: bool,
    /// `Finish` was emitted; whatever follows is ignored.
    finished: bool,
}

impl AnthropicDecoder {
    pub fn new(include_raw: bool) -> Self {
        AnthropicDecoder {
            sse: SseDecoder::new(),
            events: Vec::new(),
            include_raw,
            tool_blocks: Vec::new(),
            stop_reason: None,
            usage: None,
            saw_error: false,
            started: false,
            finished: false,
        }
    }

    fn event(&mut self, name: Option<String>, mut data: String, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        if data.trim().is_empty() {
            return Ok(()); // an empty `data:` line, which some proxies send to keep the line open
        }
        let raw_at = out.len();
        let result = match parse_event(&data) {
            Ok(mut event) => {
                // The data's `type` is the event's own word; the SSE name is its copy.
                let own = event.kind.take();
                let kind = own.as_deref().or(name.as_deref()).unwrap_or_default();
                if kind == "error" {
                    Ok(Some(event.error.map_or_else(|| data.clone(), error_message)))
                } else {
                    self.apply(kind, event, out);
                    Ok(None)
                }
            }
            Err(e) => Err(unreadable(e, &data)),
        };
        let result = result.map(|error| {
            if let Some(message) = error {
                self.saw_error = true;
                // The raw event is wanted twice only when raw events are on.
                let body = if self.include_raw { data.clone() } else { std::mem::take(&mut data) };
                out.push(ModelEvent::Error { message, body: Some(body) });
            }
        });
        if self.include_raw {
            // Raw goes before the events it produced; the insert shifts one or two events at most.
            out.insert(raw_at, ModelEvent::Raw(data));
        }
        result
    }

    fn apply(&mut self, kind: &str, event: Event<'_>, out: &mut Vec<ModelEvent>) {
        match kind {
            "message_start" => {
                // A second start: the first message was abandoned, and nothing of it counts.
                if self.started {
                    out.push(ModelEvent::Restart);
                    self.tool_blocks.clear();
                    self.stop_reason = None;
                    self.usage = None;
                }
                self.started = true;
                out.push(ModelEvent::ResponseMetadata {
                    id: event.id.map(Cow::into_owned),
                    model_id: event.model.map(Cow::into_owned),
                    created: None,
                });
                self.merge_usage(event.usage);
            }
            "content_block_start" if event.block_type.as_deref() == Some("tool_use") => {
                let index = event.index.unwrap_or_default();
                self.tool_blocks.push(index);
                out.push(ModelEvent::ToolCallDelta {
                    index,
                    id: event.block_id.map(Cow::into_owned),
                    name: event.block_name.map(Cow::into_owned),
                    args_delta: String::new(),
                });
            }
            // Redacted thinking has no text to show; its data goes back with the next call.
            "content_block_start" if event.block_type.as_deref() == Some("redacted_thinking") => {
                if let Some(data) = event.data {
                    out.push(anthropic_meta("redactedData", data));
                }
            }
            // `citations_delta` and kinds added later carry nothing this client reports.
            "content_block_delta" => match event.delta_type.as_deref() {
                // The signature ends its thinking block; it goes back with the block.
                Some("signature_delta") => {
                    if let Some(signature) = event.signature.filter(|s| !s.is_empty()) {
                        out.push(anthropic_meta("signature", signature));
                    }
                }
                Some("text_delta") => {
                    if let Some(text) = event.text.filter(|t| !t.is_empty()) {
                        out.push(ModelEvent::TextDelta(text.into_owned()));
                    }
                }
                Some("thinking_delta") => {
                    if let Some(text) = event.thinking.filter(|t| !t.is_empty()) {
                        out.push(ModelEvent::ReasoningDelta(text.into_owned()));
                    }
                }
                Some("input_json_delta") => {
                    let index = event.index.unwrap_or_default();
                    let json = event.partial_json.filter(|t| !t.is_empty());
                    if let Some(json) = json.filter(|_| self.tool_blocks.contains(&index)) {
                        out.push(ModelEvent::ToolCallDelta {
                            index,
                            id: None,
                            name: None,
                            args_delta: json.into_owned(),
                        });
                    }
                }
                _ => {}
            },
            "message_delta" => {
                if let Some(reason) = event.stop_reason {
                    self.stop_reason = Some(finish_reason(&reason));
                }
                self.merge_usage(event.usage);
            }
            "message_stop" => self.emit_finish(out),
            _ => {}
        }
    }

    /// `message_delta` repeats the counts of `message_start`, updated: a count it has wins.
    fn merge_usage(&mut self, usage: Option<Usage>) {
        let Some(new) = usage else { return };
        let usage = self.usage.get_or_insert_with(Usage::default);
        usage.input_tokens = new.input_tokens.or(usage.input_tokens);
        usage.output_tokens = new.output_tokens.or(usage.output_tokens);
        usage.cached_input_tokens = new.cached_input_tokens.or(usage.cached_input_tokens);
    }

    fn emit_finish(&mut self, out: &mut Vec<ModelEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let fallback = if self.saw_error { FinishReason::Error } else { FinishReason::Other };
        // The API reports no total; the sum is what other providers report as one.
        let usage = self.usage.map(|mut u| {
            u.total_tokens = Some(u.input_tokens.unwrap_or(0) + u.output_tokens.unwrap_or(0));
            u
        });
        out.push(ModelEvent::Finish { reason: self.stop_reason.unwrap_or(fallback), usage });
    }
}

impl SseEvents for AnthropicDecoder {
    fn framing(&mut self) -> (&mut SseDecoder, &mut Vec<SseEvent>) {
        (&mut self.sse, &mut self.events)
    }
    fn ended(&self) -> bool {
        self.finished // nothing after `message_stop` counts
    }
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        self.event(event.event, event.data, out)
    }
}

impl StreamDecoder for AnthropicDecoder {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        push_sse(self, bytes, out)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        if self.finished {
            return Ok(());
        }
        self.sse.finish(&mut self.events);
        // Only `message_stop` says the reply is complete; after an error report nothing more
        // comes, so that one ends the reply too, unless the body stopped inside an event.
        if self.sse.has_partial() || !self.saw_error {
            return Err(cut_short());
        }
        self.emit_finish(out);
        Ok(())
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        // `pause_turn` (a server tool paused a long turn) and reasons added later.
        _ => FinishReason::Other,
    }
}




// One event, as far as the decoder reads it: the fields of every event type side by side, since
// `type` may come after them. Unknown fields are skipped (and checked); strings borrow from the
// event text unless they contain escapes.

#[derive(Default)]
struct Event<'a> {
    kind: Option<Cow<'a, str>>,
    index: Option<u32>,
    /// `message.id`, `message.model` (`message_start`)
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    /// `message.usage` (`message_start`) or `usage` (`message_delta`)
    usage: Option<Usage>,
    /// `content_block.type`, `.id`, `.name` (`content_block_start`)
    block_type: Option<Cow<'a, str>>,
    block_id: Option<Cow<'a, str>>,
    block_name: Option<Cow<'a, str>>,
    /// `delta.type`, `.text`, `.thinking`, `.partial_json` (`content_block_delta`)
    delta_type: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    thinking: Option<Cow<'a, str>>,
    partial_json: Option<Cow<'a, str>>,
    /// `delta.signature` (`signature_delta`) and `content_block.data` (`redacted_thinking`)
    signature: Option<Cow<'a, str>>,
    data: Option<Cow<'a, str>>,
    /// `delta.stop_reason` (`message_delta`)
    stop_reason: Option<Cow<'a, str>>,
    /// The text of a non-null `error`.
    error: Option<&'a str>,
}

/// Anthropic's data for the reasoning block that just ended.
fn anthropic_meta(key: &str, value: Cow<'_, str>) -> ModelEvent {
    ModelEvent::PartMeta { target: MetaTarget::Reasoning, meta: json!({ "anthropic": { key: value } }) }
}

fn parse_event(text: &str) -> json::Result<Event<'_>> {
    let mut event = Event::default();
    let mut r = Reader::new(text);
    r.object(&mut |r, key| {
        match key {
            "type" => event.kind = r.opt_string()?,
            "index" => {
                event.index = match r.opt_u64()? {
                    Some(n) => Some(u32::try_from(n).map_err(|_| r.error("content block index out of range"))?),
                    None => None,
                }
            }
            "message" if !r.is_null() => r.object(&mut |r, key| {
                match key {
                    "id" => event.id = r.opt_string()?,
                    "model" => event.model = r.opt_string()?,
                    "usage" => event.usage = usage(r)?,
                    _ => {}
                }
                Ok(())
            })?,
            "content_block" if !r.is_null() => r.object(&mut |r, key| {
                match key {
                    "type" => event.block_type = r.opt_string()?,
                    "id" => event.block_id = r.opt_string()?,
                    "name" => event.block_name = r.opt_string()?,
                    "data" => event.data = r.opt_string()?,
                    _ => {}
                }
                Ok(())
            })?,
            "delta" if !r.is_null() => r.object(&mut |r, key| {
                match key {
                    "type" => event.delta_type = r.opt_string()?,
                    "text" => event.text = r.opt_string()?,
                    "thinking" => event.thinking = r.opt_string()?,
                    "partial_json" => event.partial_json = r.opt_string()?,
                    "signature" => event.signature = r.opt_string()?,
                    "stop_reason" => event.stop_reason = r.opt_string()?,
                    _ => {}
                }
                Ok(())
            })?,
            "usage" => event.usage = usage(r)?,
            "error" if !r.is_null() => event.error = Some(r.raw()?),
            _ => {}
        }
        Ok(())
    })?;
    r.end()?;
    Ok(event)
}

/// `usage`, or `None` for `null`. Anthropic's `input_tokens` are the input not read from the
/// cache; cache writes (`cache_creation_input_tokens`) are not reported.
fn usage(r: &mut Reader<'_>) -> json::Result<Option<Usage>> {
    if r.is_null() {
        return Ok(None);
    }
    let mut usage = Usage::default();
    r.object(&mut |r, key| {
        match key {
            "input_tokens" => usage.input_tokens = r.opt_count()?,
            "output_tokens" => usage.output_tokens = r.opt_count()?,
            "cache_read_input_tokens" => usage.cached_input_tokens = r.opt_count()?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(Some(usage))
}
