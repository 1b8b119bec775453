//! The Responses stream: response bytes → `ModelEvent`s.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::core::error::AgentError;
use crate::core::model::{FinishReason, MetaTarget, ModelEvent, Usage};
use crate::providers::json::{self, Reader};
use crate::providers::sse::{SseDecoder, SseEvent};
use crate::providers::{
    cut_short, error_message, head, openai_usage, push_sse, unreadable, SseEvents, StreamDecoder, UsageKeys,
};

/// Decodes a streamed Responses body into `ModelEvent`s.
///
/// Events are told apart by the data's `type` (the SSE `event:` name when it has none):
/// `response.created` gives `ResponseMetadata`; text and refusal deltas give `TextDelta`;
/// reasoning summary and reasoning text deltas give `ReasoningDelta` (a new summary part is set
/// off by a blank line); a `function_call` output item gives a first `ToolCallDelta` with its call
/// id and name, its argument deltas the rest (the output index is the call's index). Arguments
/// that arrive only whole, in the item (xAI), are reported once from it. One `Finish` closes the
/// reply at `response.completed` or `response.incomplete`, with the response's usage;
/// `response.failed` and `error` events become one `Error` event. Other events produce nothing.
///
/// A call to `parallel` whose arguments are `{ "tool_uses": [{ "recipient_name":
/// "functions.<tool>", "parameters": {…} }] }` is the model wrapping several calls in one (it
/// does so now and then); it is reported as those calls, once its arguments are complete.
#[derive(Clone, Debug, PartialEq)]
pub struct ResponsesDecoder {
    sse: SseDecoder,
    /// Scratch list of SSE events, kept to reuse its allocation.
    events: Vec<SseEvent>,
    include_raw: bool,
    metadata_sent: bool,
    /// The function calls of the response, by output index.
    calls: Vec<Call>,
    /// (output index, summary index) of the last reasoning delta, while nothing else followed it.
    reasoning_part: Option<(u32, u32)>,
    /// The index the next call unwrapped from a `parallel` call gets.
    next_wrapped: u32,
    refused: bool,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    saw_error: bool,
    /// `Finish` was emitted; whatever follows is ignored.
    finished: bool,
}

#[derive(Clone, Debug, PartialEq)]
struct Call {
    index: u32,
    /// Some arguments were reported for it.
    streamed: bool,
    /// A possible `parallel` wrapper, held back until its arguments are complete.
    wrapper: Option<Wrapper>,
}

#[derive(Clone, Debug, PartialEq)]
struct Wrapper {
    id: Option<String>,
    name: Option<String>,
    args: String,
}

impl ResponsesDecoder {
    pub fn new(include_raw: bool) -> Self {
        ResponsesDecoder {
            sse: SseDecoder::new(),
            events: Vec::new(),
            include_raw,
            metadata_sent: false,
            calls: Vec::new(),
            reasoning_part: None,
            next_wrapped: u32::MAX,
            refused: false,
            finish_reason: None,
            usage: None,
            saw_error: false,
            finished: false,
        }
    }

    fn event(&mut self, name: Option<String>, mut data: String, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        let payload = data.trim();
        // An empty `data:` line keeps the connection open; `[DONE]` is a Chat Completions habit
        // some servers keep: the reply is complete only at `response.completed`.
        if payload.is_empty() || payload == "[DONE]" {
            return Ok(());
        }
        let raw_at = out.len();
        let result = parse_event(&data).and_then(|mut event| {
            // The data's `type` is the event's own word; the SSE name is its copy.
            let own = event.kind.take();
            let kind = own.as_deref().or(name.as_deref()).unwrap_or_default();
            self.apply(kind, event, out)
        });
        let result = match result {
            Ok(error) => {
                if let Some(message) = error {
                    self.saw_error = true;
                    // The raw event is wanted twice only when raw events are on.
                    let body = if self.include_raw { data.clone() } else { std::mem::take(&mut data) };
                    out.push(ModelEvent::Error { message, body: Some(body) });
                }
                if self.finish_reason == Some(FinishReason::Error) {
                    self.emit_finish(out); // `response.failed`, after its error
                }
                Ok(())
            }
            Err(e) => Err(unreadable(e, &data)),
        };
        if self.include_raw {
            // Raw goes before the events it produced; the insert shifts a few events at most.
            out.insert(raw_at, ModelEvent::Raw(data));
        }
        result
    }

    /// Applies one event; returns the message of an error it reports.
    fn apply(&mut self, kind: &str, event: Event<'_>, out: &mut Vec<ModelEvent>) -> json::Result<Option<String>> {
        if !self.metadata_sent && kind == "response.created" {
            self.metadata_sent = true;
            out.push(ModelEvent::ResponseMetadata {
                id: event.id.map(Cow::into_owned),
                model_id: event.model.map(Cow::into_owned),
                created: event.created,
            });
        }
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.refused |= kind == "response.refusal.delta";
                if let Some(text) = string(event.delta)?.filter(|t| !t.is_empty()) {
                    self.reasoning_part = None;
                    out.push(ModelEvent::TextDelta(text.into_owned()));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(text) = string(event.delta)?.filter(|t| !t.is_empty()) {
                    let part = (event.output_index.unwrap_or_default(), event.summary_index.unwrap_or_default());
                    let next_part = self.reasoning_part.is_some_and(|last| last != part);
                    self.reasoning_part = Some(part);
                    let text = if next_part { format!("\n\n{text}") } else { text.into_owned() };
                    out.push(ModelEvent::ReasoningDelta(text));
                }
            }
            "response.output_item.added" | "response.output_item.done" => {
                let item = parse_item(event.item)?;
                let done = kind == "response.output_item.done";
                match item.kind.as_deref() {
                    Some("function_call") => self.function_call(event.output_index.unwrap_or_default(), item, done, out),
                    // A finished reasoning or message item: its id (and the encrypted reasoning)
                    // go back with the next call, so the API can pair the items of this turn.
                    Some("reasoning") if done => {
                        self.reasoning_part = None;
                        let mut meta = Map::new();
                        if let Some(id) = item.id {
                            meta.insert("itemId".into(), id.into_owned().into());
                        }
                        if let Some(content) = item.encrypted_content {
                            meta.insert("reasoningEncryptedContent".into(), content.into_owned().into());
                        }
                        out.push(openai_meta(MetaTarget::Reasoning, meta));
                    }
                    Some("message") if done => {
                        if let Some(id) = item.id {
                            out.push(openai_meta(MetaTarget::Text, item_id(id)));
                        }
                    }
                    _ => {}
                }
            }
            "response.function_call_arguments.delta" => {
                let last = self.calls.last().map(|c| c.index);
                let index = event.output_index.or(last).unwrap_or_default();
                let delta = string(event.delta)?.filter(|t| !t.is_empty());
                if let (Some(call), Some(delta)) = (self.calls.iter_mut().find(|c| c.index == index), delta) {
                    call.streamed = true;
                    match &mut call.wrapper {
                        Some(wrapper) => wrapper.args.push_str(&delta),
                        None => {
                            self.reasoning_part = None;
                            out.push(ModelEvent::ToolCallDelta {
                                index,
                                id: None,
                                name: None,
                                args_delta: delta.into_owned(),
                            });
                        }
                    }
                }
            }
            "response.completed" | "response.incomplete" => {
                self.flush_wrappers(out);
                self.usage = event.usage;
                let reason = match (kind, event.incomplete_reason.as_deref()) {
                    ("response.completed", _) if !self.calls.is_empty() => FinishReason::ToolCalls,
                    ("response.completed", _) if self.refused => FinishReason::ContentFilter,
                    ("response.completed", _) => FinishReason::Stop,
                    (_, Some("max_output_tokens")) => FinishReason::Length,
                    (_, Some("content_filter")) => FinishReason::ContentFilter,
                    _ => FinishReason::Other,
                };
                self.finish_reason = Some(reason);
                self.emit_finish(out);
            }
            "response.failed" => {
                self.usage = event.usage;
                self.finish_reason = Some(FinishReason::Error);
                // An `error` event before it already told what went wrong.
                if !self.saw_error {
                    let message = event.response_error.map(error_message);
                    return Ok(Some(message.unwrap_or_else(|| "The model's response failed".into())));
                }
            }
            "error" => {
                let message = match (string(event.message)?, event.error) {
                    (Some(message), _) => message.into_owned(),
                    (None, Some(error)) => error_message(error),
                    (None, None) => head(event.text).to_string(),
                };
                return Ok(Some(message));
            }
            _ => {}
        }
        Ok(None)
    }

    /// A `function_call` output item, when it starts (`done` false) or is complete.
    fn function_call(&mut self, index: u32, item: Item<'_>, done: bool, out: &mut Vec<ModelEvent>) {
        let at = match self.calls.iter().position(|c| c.index == index) {
            Some(at) => at,
            None => {
                let id = item.call_id.map(Cow::into_owned);
                let name = item.name.map(Cow::into_owned);
                let wrapper = match name.as_deref() {
                    Some("parallel" | "multi_tool_use.parallel") => Some(Wrapper { id, name, args: String::new() }),
                    _ => {
                        self.reasoning_part = None;
                        out.push(ModelEvent::ToolCallDelta { index, id, name, args_delta: String::new() });
                        if let Some(item_id) = item.id.clone() {
                            out.push(openai_meta(MetaTarget::ToolCall(index), self::item_id(item_id)));
                        }
                        None
                    }
                };
                self.calls.push(Call { index, streamed: false, wrapper });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        // Arguments that were not streamed come whole with the item.
        if let Some(args) = item.arguments.filter(|a| !a.is_empty() && !call.streamed) {
            call.streamed = true;
            match &mut call.wrapper {
                Some(wrapper) => wrapper.args.push_str(&args),
                None => {
                    out.push(ModelEvent::ToolCallDelta { index, id: None, name: None, args_delta: args.into_owned() })
                }
            }
        }
        if let Some(wrapper) = call.wrapper.take_if(|_| done) {
            self.unwrap_parallel(index, wrapper, out);
        }
    }

    /// Reports the `parallel` wrappers whose item never said it was done.
    fn flush_wrappers(&mut self, out: &mut Vec<ModelEvent>) {
        for at in 0..self.calls.len() {
            if let Some(wrapper) = self.calls[at].wrapper.take() {
                self.unwrap_parallel(self.calls[at].index, wrapper, out);
            }
        }
    }

    /// Reports a held-back `parallel` call: as the calls it wraps when its arguments have the
    /// wrapper's shape, else as the call it is. The wrapped calls get ids `<wrapper id>-<n>` and
    /// indexes no output item has, counting down from `u32::MAX`.
    fn unwrap_parallel(&mut self, index: u32, wrapper: Wrapper, out: &mut Vec<ModelEvent>) {
        self.reasoning_part = None;
        let wrapped = serde_json::from_str::<Value>(&wrapper.args).ok().and_then(|value| {
            let uses = value.get("tool_uses")?.as_array()?;
            let calls: Option<Vec<(String, String)>> = uses
                .iter()
                .map(|u| {
                    let name = u.get("recipient_name")?.as_str()?;
                    let name = name.strip_prefix("functions.").unwrap_or(name);
                    let params = u.get("parameters").filter(|p| p.is_object())?;
                    (!name.is_empty()).then(|| (name.to_string(), params.to_string()))
                })
                .collect();
            calls.filter(|c| !c.is_empty())
        });
        let Some(calls) = wrapped else {
            out.push(ModelEvent::ToolCallDelta { index, id: wrapper.id, name: wrapper.name, args_delta: wrapper.args });
            return;
        };
        let id = wrapper.id.unwrap_or_default();
        for (n, (name, args)) in calls.into_iter().enumerate() {
            let index = self.next_wrapped;
            self.next_wrapped -= 1;
            out.push(ModelEvent::ToolCallDelta {
                index,
                id: Some(format!("{id}-{}", n + 1)),
                name: Some(name),
                args_delta: args,
            });
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

impl SseEvents for ResponsesDecoder {
    fn framing(&mut self) -> (&mut SseDecoder, &mut Vec<SseEvent>) {
        (&mut self.sse, &mut self.events)
    }
    fn ended(&self) -> bool {
        self.finished // nothing after the response's end counts
    }
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        self.event(event.event, event.data, out)
    }
}

impl StreamDecoder for ResponsesDecoder {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        push_sse(self, bytes, out)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        if self.finished {
            return Ok(());
        }
        self.sse.finish(&mut self.events);
        // Only `response.completed` / `.incomplete` / `.failed` say the reply is over; after an
        // `error` event nothing more may come, so that one ends it too, unless the body stopped
        // inside an event.
        if self.sse.has_partial() || !self.saw_error {
            return Err(cut_short());
        }
        self.emit_finish(out);
        Ok(())
    }
}


// One event, as far as the decoder reads it: the fields of every event type side by side, since
// `type` may come after them (xAI writes it second). Unknown fields are skipped (and checked);
// strings borrow from the event text unless they contain escapes. `delta`, `item`, `message` and
// `error` are kept as written and read only by the events that have them, so an event type this
// client ignores may give them any shape.

#[derive(Default)]
struct Event<'a> {
    /// The whole event text.
    text: &'a str,
    kind: Option<Cow<'a, str>>,
    output_index: Option<u32>,
    summary_index: Option<u32>,
    delta: Option<&'a str>,
    item: Option<&'a str>,
    /// `message` and `error` of an `error` event.
    message: Option<&'a str>,
    error: Option<&'a str>,
    /// `response.id`, `.model`, `.created_at`, `.usage`
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    created: Option<u64>,
    usage: Option<Usage>,
    /// `response.incomplete_details.reason`
    incomplete_reason: Option<Cow<'a, str>>,
    /// The text of a non-null `response.error`.
    response_error: Option<&'a str>,
}

#[derive(Default)]
struct Item<'a> {
    kind: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    arguments: Option<Cow<'a, str>>,
    encrypted_content: Option<Cow<'a, str>>,
}

fn parse_event(text: &str) -> json::Result<Event<'_>> {
    let mut event = Event { text, ..Event::default() };
    let mut r = Reader::new(text);
    r.object(&mut |r, key| {
        match key {
            "type" => event.kind = r.opt_string()?,
            "output_index" => event.output_index = index(r)?,
            "summary_index" => event.summary_index = index(r)?,
            "delta" => event.delta = Some(r.raw()?),
            "item" => event.item = Some(r.raw()?),
            "message" => event.message = Some(r.raw()?),
            "error" if !r.is_null() => event.error = Some(r.raw()?),
            "response" if !r.is_null() => r.object(&mut |r, key| {
                match key {
                    "id" => event.id = r.opt_string()?,
                    "model" => event.model = r.opt_string()?,
                    "created_at" => event.created = r.opt_count()?,
                    "usage" => event.usage = usage(r)?,
                    "incomplete_details" if !r.is_null() => r.object(&mut |r, key| {
                        if key == "reason" {
                            event.incomplete_reason = r.opt_string()?;
                        }
                        Ok(())
                    })?,
                    "error" if !r.is_null() => event.response_error = Some(r.raw()?),
                    _ => {}
                }
                Ok(())
            })?,
            _ => {}
        }
        Ok(())
    })?;
    r.end()?;
    Ok(event)
}

/// `{ "openai": { … } }` for a part of this response.
fn openai_meta(target: MetaTarget, fields: Map<String, Value>) -> ModelEvent {
    let mut meta = Map::new();
    meta.insert("openai".into(), Value::Object(fields));
    ModelEvent::PartMeta { target, meta: Value::Object(meta) }
}

fn item_id(id: Cow<'_, str>) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("itemId".into(), id.into_owned().into());
    fields
}

fn parse_item(text: Option<&str>) -> json::Result<Item<'_>> {
    let mut item = Item::default();
    let Some(text) = text else { return Ok(item) };
    let mut r = Reader::new(text);
    if r.is_null() {
        return Ok(item);
    }
    r.object(&mut |r, key| {
        match key {
            "type" => item.kind = r.opt_string()?,
            "id" => item.id = r.opt_string()?,
            "call_id" => item.call_id = r.opt_string()?,
            "encrypted_content" => item.encrypted_content = r.opt_string()?,
            "name" => item.name = r.opt_string()?,
            "arguments" => item.arguments = r.opt_string()?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(item)
}

/// A field kept as written, read as a string (`null` and absence are `None`).
fn string(text: Option<&str>) -> json::Result<Option<Cow<'_, str>>> {
    match text {
        Some(text) => Reader::new(text).opt_string(),
        None => Ok(None),
    }
}

fn index(r: &mut Reader<'_>) -> json::Result<Option<u32>> {
    match r.opt_u64()? {
        Some(n) => Ok(Some(u32::try_from(n).map_err(|_| r.error("index out of range"))?)),
        None => Ok(None),
    }
}

/// `usage`, or `None` for `null`.
fn usage(r: &mut Reader<'_>) -> json::Result<Option<Usage>> {
    openai_usage(r, &UsageKeys { input: "input_tokens", output: "output_tokens", input_details: "input_tokens_details", output_details: "output_tokens_details" })
}
