//! The `generateContent` stream: response bytes → `ModelEvent`s.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::object;
use crate::core::error::AgentError;
use crate::core::model::{FinishReason, MetaTarget, ModelEvent, Usage};
use crate::providers::json::{self, Reader};
use crate::providers::sse::{SseDecoder, SseEvent};
use crate::providers::{cut_short, push_sse, unreadable, SseEvents, StreamDecoder};

/// Decodes a streamed `generateContent` body into `ModelEvent`s.
///
/// Each SSE event is one `GenerateContentResponse`; of its candidates only the first is read (the
/// agent never asks for more). Per event, in order: `ResponseMetadata` (once, from the first
/// event with a response id or model version), then per part a `ReasoningDelta` (`thought: true`),
/// a `TextDelta`, or a `ToolCallDelta`. Gemini sends a function call whole, so each call is one
/// `ToolCallDelta` with the next index, no id (the core assigns one) and all of its arguments.
/// Vertex AI can stream a call's arguments (`partialArgs`, `willContinue`): those pieces are
/// gathered and the arguments sent as one delta when the call ends.
///
/// Gemini has no `[DONE]`: one `Finish` closes the reply when the body ends, with the last finish
/// reason and usage seen, `stop` turned into `tool-calls` when the model called a function. A body
/// that ends before any finish reason (or a blocked prompt) was cut. An `{"error": …}` event
/// becomes one `Error` event.
#[derive(Clone, Debug, PartialEq)]
pub struct GoogleDecoder {
    sse: SseDecoder,
    /// Scratch list of SSE events, kept to reuse its allocation.
    events: Vec<SseEvent>,
    include_raw: bool,
    metadata_sent: bool,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    saw_error: bool,
    /// Function calls begun so far: the next call's index.
    calls: u32,
    /// The call whose arguments are still arriving in pieces: its index and its arguments so far.
    open_call: Option<(u32, Value)>,
    /// `Finish` was emitted; whatever follows is ignored.
    finished: bool,
}

impl GoogleDecoder {
    pub fn new(include_raw: bool) -> Self {
        GoogleDecoder {
            sse: SseDecoder::new(),
            events: Vec::new(),
            include_raw,
            metadata_sent: false,
            finish_reason: None,
            usage: None,
            saw_error: false,
            calls: 0,
            open_call: None,
            finished: false,
        }
    }

    fn event(&mut self, mut data: String, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        if data.trim().is_empty() {
            return Ok(()); // an empty `data:` line, which some proxies send to keep the line open
        }
        let raw_at = out.len();
        let result = match parse_response(&data) {
            Ok(Response { error: Some(error), .. }) => {
                let message = error_message(error);
                self.saw_error = true;
                // The raw event is wanted twice only when raw events are on.
                let body = if self.include_raw { data.clone() } else { std::mem::take(&mut data) };
                out.push(ModelEvent::Error { message, body: Some(body) });
                Ok(())
            }
            Ok(response) => {
                self.response(response, out);
                Ok(())
            }
            Err(e) => Err(unreadable(e, &data)),
        };
        if self.include_raw {
            // Raw goes before the events it produced.
            out.insert(raw_at, ModelEvent::Raw(data));
        }
        result
    }

    fn response(&mut self, response: Response<'_>, out: &mut Vec<ModelEvent>) {
        if !self.metadata_sent && (response.id.is_some() || response.model.is_some()) {
            self.metadata_sent = true;
            out.push(ModelEvent::ResponseMetadata {
                id: response.id.map(Cow::into_owned),
                model_id: response.model.map(Cow::into_owned),
                created: None,
            });
        }
        for part in response.parts {
            match part {
                Part { call: Some(call), signature, .. } => {
                    let first = self.calls;
                    self.function_call(call, out);
                    // The signature comes on the part that starts the call.
                    if let Some(signature) = signature.filter(|s| !s.is_empty() && self.calls > first) {
                        out.push(ModelEvent::PartMeta {
                            target: MetaTarget::ToolCall(first),
                            meta: object(vec![("google", object(vec![("thoughtSignature", signature.into_owned().into())]))]),
                        });
                    }
                }
                // Empty text comes with a bare thought signature: nothing to show.
                Part { text: Some(text), thought, .. } if !text.is_empty() => out.push(if thought {
                    ModelEvent::ReasoningDelta(text.into_owned())
                } else {
                    ModelEvent::TextDelta(text.into_owned())
                }),
                _ => {}
            }
        }
        if let Some(reason) = response.finish_reason {
            self.finish_reason = Some(finish_reason(&reason));
        }
        // A blocked prompt gets no candidates at all, only the reason.
        if response.block_reason.is_some_and(|r| r != "BLOCK_REASON_UNSPECIFIED") {
            self.finish_reason = Some(FinishReason::ContentFilter);
        }
        if let Some(usage) = response.usage {
            self.usage = Some(usage);
        }
    }

    fn function_call(&mut self, call: Call<'_>, out: &mut Vec<ModelEvent>) {
        let name = call.name.filter(|n| !n.is_empty());
        let bare = name.is_none() && call.args.is_none() && call.partial_args.is_none() && call.will_continue.is_none();
        if let Some(name) = name {
            self.close_call(out);
            let index = self.calls;
            self.calls += 1;
            let streamed = call.partial_args.is_some() || call.will_continue == Some(true);
            // A whole call carries its arguments; a call without any takes none.
            let args = if streamed { String::new() } else { call.args.unwrap_or("{}").to_string() };
            out.push(ModelEvent::ToolCallDelta { index, id: None, name: Some(name.into_owned()), args_delta: args });
            if !streamed {
                return;
            }
            self.open_call = Some((index, Value::Object(Map::new())));
        }
        if let Some(pieces) = call.partial_args {
            if let Some((_, args)) = &mut self.open_call {
                for piece in &pieces {
                    set_partial_arg(args, piece);
                }
            }
            if call.will_continue != Some(true) && pieces.iter().all(|p| !p.will_continue) {
                self.close_call(out);
            }
        } else if bare {
            self.close_call(out); // `"functionCall": {}` ends a streamed call
        }
    }

    /// Sends the arguments of the call still arriving in pieces, if there is one.
    fn close_call(&mut self, out: &mut Vec<ModelEvent>) {
        if let Some((index, args)) = self.open_call.take() {
            out.push(ModelEvent::ToolCallDelta { index, id: None, name: None, args_delta: args.to_string() });
        }
    }
}

impl SseEvents for GoogleDecoder {
    fn framing(&mut self) -> (&mut SseDecoder, &mut Vec<SseEvent>) {
        (&mut self.sse, &mut self.events)
    }
    fn ended(&self) -> bool {
        self.finished // set at the end of the body only: every event counts
    }
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        self.event(event.data, out)
    }
}

impl StreamDecoder for GoogleDecoder {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        push_sse(self, bytes, out)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        if self.finished {
            return Ok(());
        }
        self.sse.finish(&mut self.events);
        // The last event carries the finish reason: without one (or an error report) the reply
        // is incomplete, and so is a body that stops inside an event.
        if self.sse.has_partial() || (self.finish_reason.is_none() && !self.saw_error) {
            return Err(cut_short());
        }
        self.close_call(out);
        self.finished = true;
        let reason = match self.finish_reason {
            Some(FinishReason::Stop) if self.calls > 0 => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Error,
        };
        out.push(ModelEvent::Finish { reason, usage: self.usage });
        Ok(())
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

/// The `message` of an error object (Google's `{code, message, status}`), or the error as it is.
fn error_message(error: &str) -> String {
    let mut message = None;
    let _ = Reader::new(error).object(&mut |r, key| {
        if key == "message" {
            message = r.opt_string()?.map(Cow::into_owned);
        }
        Ok(())
    });
    message.or_else(|| Reader::new(error).string().ok().map(Cow::into_owned)).unwrap_or_else(|| error.to_string())
}



/// Puts one streamed argument piece into `args`. The path is `$.key`, `$.list[0].key`, …; a string
/// for a path that already holds one continues it, anything else sets it. An index past the end of
/// a list appends (the pieces arrive in order), so a bad index cannot make a huge list.
fn set_partial_arg(args: &mut Value, piece: &PartialArg<'_>) {
    let Some(value) = &piece.value else { return };
    let mut slot = args;
    let mut rest = match piece.path.strip_prefix('$') {
        Some(rest) if !rest.is_empty() => rest,
        _ => return,
    };
    while !rest.is_empty() {
        // Scanned by hand: `str::find` with a char set, `trim_matches` and `parse` cost more wasm.
        let bytes = rest.as_bytes();
        let (key, index, tail) = match bytes[0] {
            b'.' => {
                let end = 1 + bytes[1..].iter().position(|&b| b == b'.' || b == b'[').unwrap_or(bytes.len() - 1);
                (Some(&rest[1..end]), None, &rest[end..])
            }
            b'[' => {
                let Some(close) = bytes.iter().position(|&b| b == b']') else { return };
                let inner = &rest[1..close];
                let digits = inner.bytes().try_fold(0usize, |n, b| {
                    if b.is_ascii_digit() {
                        n.checked_mul(10)?.checked_add(usize::from(b - b'0'))
                    } else {
                        None
                    }
                });
                match digits {
                    Some(index) if !inner.is_empty() => (None, Some(index), &rest[close + 1..]),
                    // `['key']` or `["key"]`
                    _ => (inner.get(1..inner.len().saturating_sub(1)), None, &rest[close + 1..]),
                }
            }
            _ => return,
        };
        slot = match (key, index) {
            (Some(key), _) => {
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                let Value::Object(map) = slot else { return };
                map.entry(key).or_insert(Value::Null)
            }
            (None, Some(index)) => {
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                let Value::Array(list) = slot else { return };
                if index >= list.len() {
                    list.push(Value::Null);
                }
                let last = list.len() - 1;
                &mut list[index.min(last)]
            }
            (None, None) => return,
        };
        rest = tail;
    }
    match (slot, value) {
        (Value::String(so_far), ArgValue::String(more)) => so_far.push_str(more),
        (slot, ArgValue::String(text)) => *slot = Value::String(text.to_string()),
        // Only a number beyond f64 fails here; it stays `null`.
        (slot, ArgValue::Json(text)) => *slot = serde_json::from_str(text).unwrap_or(Value::Null),
    }
}

// One `GenerateContentResponse`, as far as the decoder reads it. Unknown fields are skipped (and
// checked); strings borrow from the event text unless they contain escapes.

#[derive(Default)]
struct Response<'a> {
    /// `responseId`
    id: Option<Cow<'a, str>>,
    /// `modelVersion`
    model: Option<Cow<'a, str>>,
    /// `candidates[0].content.parts`
    parts: Vec<Part<'a>>,
    /// `candidates[0].finishReason`
    finish_reason: Option<Cow<'a, str>>,
    /// `promptFeedback.blockReason`
    block_reason: Option<Cow<'a, str>>,
    usage: Option<Usage>,
    /// The text of a non-null `error`.
    error: Option<&'a str>,
}

#[derive(Default)]
struct Part<'a> {
    text: Option<Cow<'a, str>>,
    thought: bool,
    call: Option<Call<'a>>,
    /// `thoughtSignature`: Gemini 3 wants it back with the function call it came on.
    signature: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct Call<'a> {
    name: Option<Cow<'a, str>>,
    /// The exact text of `args`.
    args: Option<&'a str>,
    partial_args: Option<Vec<PartialArg<'a>>>,
    will_continue: Option<bool>,
}

#[derive(Default)]
struct PartialArg<'a> {
    path: Cow<'a, str>,
    value: Option<ArgValue<'a>>,
    will_continue: bool,
}

enum ArgValue<'a> {
    String(Cow<'a, str>),
    /// A number, `true`, `false` or `null`, as JSON text.
    Json(&'a str),
}

fn parse_response(text: &str) -> json::Result<Response<'_>> {
    let mut response = Response::default();
    let mut r = Reader::new(text);
    r.object(&mut |r, key| {
        match key {
            "candidates" if !r.is_null() => {
                r.array(&mut |r, i| if i == 0 { candidate(r, &mut response) } else { Ok(()) })?
            }
            "promptFeedback" if !r.is_null() => r.object(&mut |r, key| {
                if key == "blockReason" {
                    response.block_reason = r.opt_string()?;
                }
                Ok(())
            })?,
            "usageMetadata" => response.usage = usage(r)?,
            "responseId" => response.id = r.opt_string()?,
            "modelVersion" => response.model = r.opt_string()?,
            "error" if !r.is_null() => response.error = Some(r.raw()?),
            _ => {}
        }
        Ok(())
    })?;
    r.end()?;
    Ok(response)
}

fn candidate<'a>(r: &mut Reader<'a>, response: &mut Response<'a>) -> json::Result<()> {
    r.object(&mut |r, key| {
        match key {
            "content" if !r.is_null() => r.object(&mut |r, key| {
                if key == "parts" && !r.is_null() {
                    r.array(&mut |r, _| {
                        let part = part(r)?;
                        response.parts.push(part);
                        Ok(())
                    })?;
                }
                Ok(())
            })?,
            "finishReason" => response.finish_reason = r.opt_string()?,
            _ => {}
        }
        Ok(())
    })
}

fn part<'a>(r: &mut Reader<'a>) -> json::Result<Part<'a>> {
    let mut part = Part::default();
    r.object(&mut |r, key| {
        match key {
            "text" => part.text = r.opt_string()?,
            "thought" if !r.is_null() => part.thought = r.bool()?,
            "functionCall" if !r.is_null() => part.call = Some(function_call(r)?),
            "thoughtSignature" => part.signature = r.opt_string()?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(part)
}

fn function_call<'a>(r: &mut Reader<'a>) -> json::Result<Call<'a>> {
    let mut call = Call::default();
    r.object(&mut |r, key| {
        match key {
            "name" => call.name = r.opt_string()?,
            // Arguments too deep to read or with a lone surrogate are the call's error (see
            // `raw_unchecked`), as they are in the APIs that send them as a string.
            "args" if !r.is_null() => call.args = Some(r.raw_unchecked()?),
            "partialArgs" if !r.is_null() => {
                let mut pieces = Vec::new();
                r.array(&mut |r, _| {
                    pieces.push(partial_arg(r)?);
                    Ok(())
                })?;
                call.partial_args = Some(pieces);
            }
            "willContinue" if !r.is_null() => call.will_continue = Some(r.bool()?),
            _ => {}
        }
        Ok(())
    })?;
    Ok(call)
}

fn partial_arg<'a>(r: &mut Reader<'a>) -> json::Result<PartialArg<'a>> {
    let mut piece = PartialArg::default();
    r.object(&mut |r, key| {
        match key {
            "jsonPath" => piece.path = r.opt_string()?.unwrap_or_default(),
            "stringValue" if !r.is_null() => piece.value = Some(ArgValue::String(r.string()?)),
            "numberValue" | "boolValue" if !r.is_null() => piece.value = Some(ArgValue::Json(r.raw()?)),
            "nullValue" => piece.value = Some(ArgValue::Json("null")),
            "willContinue" if !r.is_null() => piece.will_continue = r.bool()?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(piece)
}

/// `usageMetadata`, or `None` for `null`. Gemini counts thinking apart from the answer
/// (`thoughtsTokenCount` beside `candidatesTokenCount`); here output includes it, as in the other
/// APIs, so input + output = total and `reasoning_tokens` is the part of output spent thinking.
fn usage(r: &mut Reader<'_>) -> json::Result<Option<Usage>> {
    if r.is_null() {
        return Ok(None);
    }
    let mut usage = Usage::default();
    let mut answer = None;
    r.object(&mut |r, key| {
        match key {
            "promptTokenCount" => usage.input_tokens = r.opt_count()?,
            "candidatesTokenCount" => answer = r.opt_count()?,
            "totalTokenCount" => usage.total_tokens = r.opt_count()?,
            "thoughtsTokenCount" => usage.reasoning_tokens = r.opt_count()?,
            "cachedContentTokenCount" => usage.cached_input_tokens = r.opt_count()?,
            _ => {}
        }
        Ok(())
    })?;
    usage.output_tokens = match (answer, usage.reasoning_tokens) {
        (None, None) => None,
        (a, t) => Some(a.unwrap_or(0).saturating_add(t.unwrap_or(0))),
    };
    Ok(Some(usage))
}
