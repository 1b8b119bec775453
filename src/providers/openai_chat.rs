//! OpenAI Chat Completions (`POST {base}/chat/completions`, streamed) and the providers that speak
//! it: the request builder and the stream decoder.
//!
//! Pure translation between `core::model` and the wire format; it never does I/O and never sees
//! JavaScript. The decoder is on the hot path of every reply, so it reads each chunk with the
//! `json` pull reader into a small struct that borrows from the event text, and allocates only
//! the strings it hands out.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::json::{self, Reader};
use super::sse::{SseDecoder, SseEvent};
use super::{
    cut_short, file_url, is_url, not_json, openai_usage, push_sse, set_header, snake_case, starts_with_ignore_case,
    unreadable, Endpoint, HttpRequest, SseEvents, StreamDecoder, UsageKeys,
};
use crate::core::error::AgentError;
use crate::core::model::{
    AssistantPart, FinishReason, ModelEvent, ModelMessage, ModelRequest, ToolChoice, Usage, UserPart, Warning,
};

// ---------------------------------------------------------------------------------------------
// Request

/// Builds the streaming Chat Completions request for `req`.
///
/// Settings the API lacks (`topK`) are left out with a warning. `providerOptions` keys are merged
/// into the body last, camelCase keys renamed to snake_case (`reasoningEffort` →
/// `reasoning_effort`), so they can set or override any body field.
pub fn build_request(endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
    let mut warnings = Vec::new();
    let mut body = Map::new();
    body.insert("model".into(), req.model_id.clone().into());
    body.insert("messages".into(), Value::Array(messages(&req.messages)?));
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({ "include_usage": true }));

    let s = &req.settings;
    let numbers = [
        ("temperature", s.temperature),
        ("top_p", s.top_p),
        ("presence_penalty", s.presence_penalty),
        ("frequency_penalty", s.frequency_penalty),
    ];
    for (key, value) in numbers {
        if let Some(value) = value {
            body.insert(key.into(), value.into());
        }
    }
    if let Some(max) = s.max_output_tokens {
        body.insert("max_tokens".into(), max.into());
    }
    if !s.stop_sequences.is_empty() {
        body.insert("stop".into(), s.stop_sequences.clone().into());
    }
    if let Some(seed) = s.seed {
        body.insert("seed".into(), seed.into());
    }
    if s.top_k.is_some() {
        warnings.push(Warning {
            kind: "unsupported-setting",
            setting: Some("topK".into()),
            message: Some("topK is not part of the Chat Completions API and was not sent".into()),
        });
    }

    // The API rejects `tool_choice` without `tools`, so both go or neither does.
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(|tool| {
            let mut function = Map::new();
            function.insert("name".into(), tool.name.clone().into());
            if let Some(description) = &tool.description {
                function.insert("description".into(), description.clone().into());
            }
            function.insert("parameters".into(), tool.parameters.clone());
            json!({ "type": "function", "function": function })
        });
        body.insert("tools".into(), tools.collect());
        if let Some(choice) = &req.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => "auto".into(),
                ToolChoice::None => "none".into(),
                ToolChoice::Required => "required".into(),
                ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
            };
            body.insert("tool_choice".into(), choice);
        }
    }

    if let Some(options) = &req.provider_options {
        for (key, value) in options {
            body.insert(snake_case(key).into_owned(), value.clone());
        }
    }

    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    headers.extend(super::key_header(endpoint));
    for (name, value) in endpoint.headers.iter().chain(&s.headers) {
        set_header(&mut headers, name, value);
    }

    let body = serde_json::to_string(&Value::Object(body)).map_err(|e| AgentError::api(e.to_string(), false))?;
    let url = format!("{}/chat/completions", endpoint.base_url.trim_end_matches('/'));
    Ok((HttpRequest { url, headers, body }, warnings))
}



fn messages(messages: &[ModelMessage]) -> Result<Vec<Value>, AgentError> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            ModelMessage::System(text) => out.push(json!({ "role": "system", "content": text })),
            ModelMessage::User(parts) => out.push(json!({ "role": "user", "content": user_content(parts)? })),
            ModelMessage::Assistant(parts) => out.push(assistant_message(parts)),
            ModelMessage::Tool(results) => {
                for part in results {
                    let content = match &part.result {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    out.push(json!({ "role": "tool", "tool_call_id": part.tool_call_id, "content": content }));
                }
            }
        }
    }
    Ok(out)
}

fn user_content(parts: &[UserPart]) -> Result<Value, AgentError> {
    match parts {
        [] => return Ok("".into()),
        [UserPart::Text(text)] => return Ok(text.clone().into()),
        _ => {}
    }
    let mut out = Vec::with_capacity(parts.len());
    for (index, part) in parts.iter().enumerate() {
        out.push(match part {
            UserPart::Text(text) => json!({ "type": "text", "text": text }),
            // Image parts have no file name on this API.
            UserPart::File { data, media_type, .. } if media_type.starts_with("image/") => {
                // `image/*` means "some image": the data URL needs a concrete type.
                let media_type = if media_type == "image/*" { "image/jpeg" } else { media_type };
                json!({ "type": "image_url", "image_url": { "url": file_url(data, media_type) } })
            }
            UserPart::File { data, media_type, filename } => {
                if is_url(data) && !starts_with_ignore_case(data, "data:") {
                    return Err(AgentError::invalid(
                        "messages",
                        format!(
                            "Chat Completions takes files other than images only as inline data, not as a URL \
                             ({media_type} at {data}); pass the file's content as base64"
                        ),
                    ));
                }
                // The API wants a file name next to inline data; make one up when none was given.
                let filename = match filename {
                    Some(name) => name.clone(),
                    None if media_type == "application/pdf" => format!("part-{index}.pdf"),
                    None => format!("part-{index}"),
                };
                json!({ "type": "file", "file": { "file_data": file_url(data, media_type), "filename": filename } })
            }
        });
    }
    Ok(Value::Array(out))
}

fn assistant_message(parts: &[AssistantPart]) -> Value {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for part in parts {
        match part {
            AssistantPart::Text(t, _) => text.push_str(t),
            // The API has no field for reasoning sent back; it is the model's own scratch work.
            AssistantPart::Reasoning(..) => {}
            AssistantPart::ToolCall { tool_call_id, tool_name, args, .. } => tool_calls.push(json!({
                "id": tool_call_id,
                "type": "function",
                "function": { "name": tool_name, "arguments": args.to_string() },
            })),
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    // `null` is the API's own spelling for "only tool calls"; a message with neither text nor
    // calls still needs a string, or the API rejects it.
    let content = match (text.is_empty(), tool_calls.is_empty()) {
        (true, false) => Value::Null,
        _ => text.into(),
    };
    message.insert("content".into(), content);
    if !tool_calls.is_empty() {
        message.insert("tool_calls".into(), tool_calls.into());
    }
    Value::Object(message)
}




// ---------------------------------------------------------------------------------------------
// Stream

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

    #[test]
    fn snake_case_keys() {
        assert_eq!(snake_case("reasoningEffort"), "reasoning_effort");
        assert_eq!(snake_case("maxCompletionTokens"), "max_completion_tokens");
        assert!(matches!(snake_case("already_snake"), Cow::Borrowed("already_snake")));
        assert_eq!(snake_case("User"), "user");
    }
}
