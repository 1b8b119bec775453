//! Anthropic Messages (`POST {base}/messages`, streamed): the request builder and the stream
//! decoder.
//!
//! Pure translation between `core::model` and the wire format; it never does I/O and never sees
//! JavaScript. As in `openai_chat`, the decoder reads each event with the `json` pull reader into
//! a small struct that borrows from the event text, and allocates only the strings it hands out.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::json::{self, Reader};
use super::sse::{SseDecoder, SseEvent};
use super::{
    append_paragraph, cut_short, error_message, push_sse, set_header, snake_case, starts_with_ignore_case,
    unreadable, Endpoint, HttpRequest, SseEvents, StreamDecoder,
};
use crate::core::error::AgentError;
use crate::core::model::{
    AssistantPart, FinishReason, MetaTarget, ModelEvent, ModelMessage, ModelRequest, ToolChoice, ToolResultPart, Usage, UserPart,
    Warning,
};

/// The `anthropic-version` header: the version of the wire format this module speaks.
const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the caller set no `maxOutputTokens`: the API requires the field.
const DEFAULT_MAX_TOKENS: u64 = 4096;

// ---------------------------------------------------------------------------------------------
// Request

/// Builds the streaming Messages request for `req`.
///
/// `in_browser` says the request is sent from a web page: only then is the header that lets the
/// API answer a browser's CORS preflight sent (`anthropic-dangerous-direct-browser-access`).
///
/// Settings the API lacks (`presencePenalty`, `frequencyPenalty`, `seed`) are left out with a
/// warning. `providerOptions` are merged into the body last, every key renamed from camelCase to
/// snake_case, nested ones too (`thinking: { budgetTokens }` → `thinking: { budget_tokens }`), so
/// they can set or override any body field.
pub fn build_request(
    endpoint: &Endpoint,
    req: &ModelRequest,
    in_browser: bool,
) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
    let s = &req.settings;
    let mut warnings = Vec::new();
    let mut body = Map::new();
    body.insert("model".into(), req.model_id.clone().into());
    body.insert("max_tokens".into(), s.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into());
    body.insert("stream".into(), true.into());
    let (system, messages) = messages(&req.messages)?;
    if !system.is_empty() {
        body.insert("system".into(), system.into());
    }
    body.insert("messages".into(), messages.into());

    if let Some(temperature) = s.temperature {
        body.insert("temperature".into(), temperature.into());
    }
    if let Some(top_p) = s.top_p {
        body.insert("top_p".into(), top_p.into());
    }
    if let Some(top_k) = s.top_k {
        // The API wants an integer; `40.0` would be refused.
        let whole = top_k.fract() == 0.0 && (0.0..9.0e15).contains(&top_k);
        body.insert("top_k".into(), if whole { (top_k as u64).into() } else { top_k.into() });
    }
    if !s.stop_sequences.is_empty() {
        body.insert("stop_sequences".into(), s.stop_sequences.clone().into());
    }
    let unsupported = [
        ("presencePenalty", s.presence_penalty.is_some()),
        ("frequencyPenalty", s.frequency_penalty.is_some()),
        ("seed", s.seed.is_some()),
    ];
    for (setting, set) in unsupported {
        if set {
            warnings.push(Warning {
                kind: "unsupported-setting",
                setting: Some(setting.into()),
                message: Some(format!("{setting} is not part of the Anthropic Messages API and was not sent")),
            });
        }
    }

    // `tool_choice: none` exists on the API, but leaving the tools out says the same to every
    // model version and costs no tokens for their definitions.
    if !req.tools.is_empty() && req.tool_choice != Some(ToolChoice::None) {
        let tools = req.tools.iter().map(|tool| {
            let mut spec = Map::new();
            spec.insert("name".into(), tool.name.clone().into());
            if let Some(description) = &tool.description {
                spec.insert("description".into(), description.clone().into());
            }
            spec.insert("input_schema".into(), tool.parameters.clone());
            Value::Object(spec)
        });
        body.insert("tools".into(), tools.collect());
        let choice = match &req.tool_choice {
            Some(ToolChoice::Auto) => Some(json!({ "type": "auto" })),
            Some(ToolChoice::Required) => Some(json!({ "type": "any" })),
            Some(ToolChoice::Tool(name)) => Some(json!({ "type": "tool", "name": name })),
            Some(ToolChoice::None) | None => None,
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
    }

    if let Some(options) = &req.provider_options {
        for (key, value) in options {
            body.insert(snake_case(key).into_owned(), snake_keys(value));
        }
    }

    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(key) = &endpoint.api_key {
        headers.push(("x-api-key".into(), key.clone()));
    }
    headers.push(("anthropic-version".into(), API_VERSION.into()));
    if in_browser {
        headers.push(("anthropic-dangerous-direct-browser-access".into(), "true".into()));
    }
    for (name, value) in endpoint.headers.iter().chain(&s.headers) {
        set_header(&mut headers, name, value);
    }

    let body = serde_json::to_string(&Value::Object(body)).map_err(|e| AgentError::api(e.to_string(), false))?;
    let url = format!("{}/messages", endpoint.base_url.trim_end_matches('/'));
    Ok((HttpRequest { url, headers, body }, warnings))
}



/// `value` with the keys of every object in it in snake_case.
fn snake_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (snake_case(k).into_owned(), snake_keys(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

/// The system prompt and the turns. The API takes the system prompt apart from the turns and
/// wants user and assistant turns to alternate, so consecutive messages of one role (a tool
/// message is a user turn here) become one turn. Empty messages are left out: the API refuses a
/// turn without content.
fn messages(messages: &[ModelMessage]) -> Result<(String, Vec<Value>), AgentError> {
    let mut system = String::new();
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, blocks) = match message {
            ModelMessage::System(text) => {
                append_paragraph(&mut system, text);
                continue;
            }
            ModelMessage::User(parts) => ("user", user_blocks(parts)?),
            ModelMessage::Assistant(parts) => ("assistant", assistant_blocks(parts)),
            ModelMessage::Tool(results) => ("user", results.iter().map(tool_result).collect()),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            // The API wants a turn's tool results before anything else in it.
            Some((last, content)) if *last == role && matches!(message, ModelMessage::Tool(_)) => {
                let at = content.iter().position(|b| b["type"] != "tool_result").unwrap_or(content.len());
                // One insert per block: `splice` costs 300 bytes of gzipped wasm more.
                for (i, block) in blocks.into_iter().enumerate() {
                    content.insert(at + i, block);
                }
            }
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let turns = turns.into_iter().map(|(role, content)| json!({ "role": role, "content": content }));
    Ok((system, turns.collect()))
}

fn user_blocks(parts: &[UserPart]) -> Result<Vec<Value>, AgentError> {
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            // The API refuses empty text blocks.
            UserPart::Text(text) if text.is_empty() => {}
            UserPart::Text(text) => out.push(json!({ "type": "text", "text": text })),
            UserPart::File { data, media_type, filename } => {
                out.push(file_block(data, media_type, filename.as_deref())?)
            }
        }
    }
    Ok(out)
}

fn file_block(data: &str, media_type: &str, filename: Option<&str>) -> Result<Value, AgentError> {
    let pdf = media_type == "application/pdf";
    if !pdf && !media_type.starts_with("image/") {
        return Err(AgentError::invalid(
            "messages",
            format!("The Anthropic Messages API takes images and PDF files, not {media_type}"),
        ));
    }
    let source = if ["http://", "https://"].iter().any(|p| starts_with_ignore_case(data, p)) {
        json!({ "type": "url", "url": data })
    } else {
        let (declared, base64) = match starts_with_ignore_case(data, "data:") {
            true => data_url(data)?,
            false => ("", data),
        };
        let media_type = match (pdf, declared) {
            (true, _) => "application/pdf",
            (false, "" | "image/*") if media_type == "image/*" => sniff_image(base64),
            (false, "" | "image/*") => media_type,
            (false, declared) => declared,
        };
        json!({ "type": "base64", "media_type": media_type, "data": base64 })
    };
    if !pdf {
        return Ok(json!({ "type": "image", "source": source }));
    }
    let mut block = Map::new();
    block.insert("type".into(), "document".into());
    block.insert("source".into(), source);
    if let Some(name) = filename {
        block.insert("title".into(), name.into());
    }
    Ok(Value::Object(block))
}

/// The media type (possibly empty) and the base64 data of a `data:` URL.
fn data_url(url: &str) -> Result<(&str, &str), AgentError> {
    let head_end = url.find(',').unwrap_or(url.len());
    let head = &url[5..head_end];
    let (media_type, base64) = match head.len().checked_sub(7) {
        Some(at) if head[at..].eq_ignore_ascii_case(";base64") => (&head[..at], true),
        _ => (head, false),
    };
    if !base64 || head_end == url.len() {
        let start: String = url.chars().take(40).collect();
        return Err(AgentError::invalid(
            "messages",
            format!(
                "The Anthropic Messages API takes inline files only as base64 (a `data:…;base64,` URL), not {start}…"
            ),
        ));
    }
    // Parameters such as `;charset=…` are not part of the media type.
    let media_type = media_type.split(';').next().unwrap_or_default();
    Ok((media_type, &url[head_end + 1..]))
}

/// The type of an image from the first bytes of its base64, for `image/*` ("some image"): the
/// API checks the declared type against the data.
fn sniff_image(base64: &str) -> &'static str {
    let signatures =
        [("iVBORw0KGgo", "image/png"), ("/9j/", "image/jpeg"), ("R0lGOD", "image/gif"), ("UklGR", "image/webp")];
    signatures.iter().find(|(start, _)| base64.starts_with(start)).map_or("image/jpeg", |(_, media_type)| media_type)
}

fn assistant_blocks(parts: &[AssistantPart]) -> Vec<Value> {
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            AssistantPart::Text(text, _) if text.is_empty() => {}
            AssistantPart::Text(text, _) => out.push(json!({ "type": "text", "text": text })),
            // The API takes thinking back only with the `signature` that came with it (with
            // `thinking` enabled it requires it in a tool loop), and redacted thinking as its
            // opaque `data`; reasoning from elsewhere has neither and is not sent.
            AssistantPart::Reasoning(text, meta) => {
                let ours = meta.as_ref().and_then(|m| m.get("anthropic"));
                let field = |k: &str| ours.and_then(|m| m.get(k)).and_then(Value::as_str);
                if let Some(signature) = field("signature") {
                    out.push(json!({ "type": "thinking", "thinking": text, "signature": signature }));
                } else if let Some(data) = field("redactedData") {
                    out.push(json!({ "type": "redacted_thinking", "data": data }));
                }
            }
            AssistantPart::ToolCall { tool_call_id, tool_name, args, .. } => {
                // `input` must be an object; arguments that were not a JSON object (text the model
                // wrote that did not parse) cannot be sent back as they are.
                let input = if args.is_object() { args.clone() } else { json!({}) };
                out.push(json!({ "type": "tool_use", "id": tool_call_id, "name": tool_name, "input": input }));
            }
        }
    }
    out
}

fn tool_result(part: &ToolResultPart) -> Value {
    let content = match &part.result {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut block = Map::new();
    block.insert("type".into(), "tool_result".into());
    block.insert("tool_use_id".into(), part.tool_call_id.clone().into());
    block.insert("content".into(), content.into());
    if part.is_error {
        block.insert("is_error".into(), true.into());
    }
    Value::Object(block)
}


// ---------------------------------------------------------------------------------------------
// Stream

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
