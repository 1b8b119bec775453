//! Google Gemini (`POST {base}/models/{model}:streamGenerateContent?alt=sse`): the request builder
//! and the stream decoder.
//!
//! Pure translation between `core::model` and the wire format; it never does I/O and never sees
//! JavaScript. As in the Chat decoder, each event is read with the `json` pull reader into a small
//! struct that borrows from the event text, and only the strings handed out are allocated.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::json::{self, Reader};
use super::sse::{SseDecoder, SseEvent};
use super::{
    append_paragraph, cut_short, push_sse, set_header, starts_with_ignore_case, unreadable, Endpoint, HttpRequest,
    SseEvents, StreamDecoder,
};
use crate::core::error::AgentError;
use crate::core::model::{
    AssistantPart, FinishReason, MetaTarget, ModelEvent, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart,
    ToolSpec, Usage, UserPart, Warning,
};

// ---------------------------------------------------------------------------------------------
// Request

/// Builds the streaming `generateContent` request for `req`.
///
/// System messages become one `systemInstruction`; the other messages become `contents`, with
/// consecutive turns of the same role merged. `providerOptions` keys are merged into the body last,
/// as they are (Gemini's keys are camelCase already): an object merges into the body's object of
/// the same key (`generationConfig: { thinkingConfig }` keeps the sampling settings), anything else
/// replaces it.
pub fn build_request(endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
    let mut body = Map::new();
    let (contents, system) = contents(&req.messages, needs_thought_signature(&req.model_id))?;
    body.insert("contents".into(), contents);
    if !system.is_empty() {
        body.insert("systemInstruction".into(), object(vec![("parts", Value::Array(vec![text_part(&system)]))]));
    }
    let config = generation_config(&req.settings);
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }

    // As with Chat Completions, a tool config without tools is not sent.
    if !req.tools.is_empty() {
        let declarations: Vec<Value> = req.tools.iter().map(declaration).collect();
        body.insert("tools".into(), Value::Array(vec![object(vec![("functionDeclarations", declarations.into())])]));
        if let Some(choice) = &req.tool_choice {
            let (mode, only) = match choice {
                ToolChoice::Auto => ("AUTO", None),
                ToolChoice::None => ("NONE", None),
                ToolChoice::Required => ("ANY", None),
                ToolChoice::Tool(name) => ("ANY", Some(name)),
            };
            let mut calling = Map::new();
            calling.insert("mode".into(), mode.into());
            if let Some(name) = only {
                calling.insert("allowedFunctionNames".into(), Value::Array(vec![name.as_str().into()]));
            }
            body.insert("toolConfig".into(), object(vec![("functionCallingConfig", Value::Object(calling))]));
        }
    }

    if let Some(options) = &req.provider_options {
        for (key, value) in options {
            match (body.get_mut(key), value) {
                (Some(Value::Object(ours)), Value::Object(theirs)) => {
                    ours.extend(theirs.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                _ => {
                    body.insert(key.clone(), value.clone());
                }
            }
        }
    }

    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(key) = &endpoint.api_key {
        headers.push(("x-goog-api-key".into(), key.clone()));
    }
    for (name, value) in endpoint.headers.iter().chain(&req.settings.headers) {
        set_header(&mut headers, name, value);
    }

    let body = serde_json::to_string(&Value::Object(body)).map_err(|e| AgentError::api(e.to_string(), false))?;
    // `tunedModels/…` and `models/…` are resource names already.
    let model = &req.model_id;
    let path = if model.contains('/') { Cow::Borrowed(model.as_str()) } else { Cow::Owned(format!("models/{model}")) };
    let url = format!("{}/{path}:streamGenerateContent?alt=sse", endpoint.base_url.trim_end_matches('/'));
    Ok((HttpRequest { url, headers, body }, Vec::new()))
}

/// `{ key: value, … }`. One out-of-line function builds every object of the body: `json!` expands
/// inline at each use, which cost 1.2 KB more wasm (after wasm-opt) in this module.
fn object(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(key, value)| (key.to_string(), value)).collect())
}

fn text_part(text: &str) -> Value {
    object(vec![("text", text.into())])
}

fn inline_data(mime: &str, data: &str) -> Value {
    object(vec![("inlineData", object(vec![("mimeType", mime.into()), ("data", data.into())]))])
}


fn generation_config(s: &ModelSettings) -> Map<String, Value> {
    let mut config = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            config.insert(key.into(), value);
        }
    };
    put("temperature", s.temperature.map(Value::from));
    put("topP", s.top_p.map(Value::from));
    // `topK` is an integer field: send `40`, not `40.0`.
    put(
        "topK",
        s.top_k.map(|k| if k.fract() == 0.0 && k.abs() < 1e15 { Value::from(k as i64) } else { Value::from(k) }),
    );
    put("maxOutputTokens", s.max_output_tokens.map(Value::from));
    put("stopSequences", (!s.stop_sequences.is_empty()).then(|| s.stop_sequences.clone().into()));
    put("presencePenalty", s.presence_penalty.map(Value::from));
    put("frequencyPenalty", s.frequency_penalty.map(Value::from));
    put("seed", s.seed.map(Value::from));
    config
}

/// `contents` and the system instruction text. Empty text parts and turns without parts are left
/// out: the API rejects both.
fn contents(messages: &[ModelMessage], signature: bool) -> Result<(Value, String), AgentError> {
    let mut system = String::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, parts) = match message {
            ModelMessage::System(text) => {
                append_paragraph(&mut system, text);
                continue;
            }
            ModelMessage::User(parts) => ("user", user_parts(parts)?),
            ModelMessage::Assistant(parts) => ("model", model_parts(parts, signature)),
            ModelMessage::Tool(results) => ("user", results.iter().map(function_response).collect()),
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    let contents =
        turns.into_iter().map(|(role, parts)| object(vec![("role", role.into()), ("parts", parts.into())])).collect();
    Ok((Value::Array(contents), system))
}

fn user_parts(parts: &[UserPart]) -> Result<Vec<Value>, AgentError> {
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            UserPart::Text(text) if text.is_empty() => {}
            UserPart::Text(text) => out.push(text_part(text)),
            UserPart::File { data, media_type, .. } => out.push(file_part(data, media_type)?),
        }
    }
    Ok(out)
}

/// Inline base64 (bare or as a `data:` URL) as `inlineData`, any other URL as `fileData`.
fn file_part(data: &str, media_type: &str) -> Result<Value, AgentError> {
    // `image/*` means "some image": the API wants a concrete type.
    let media_type = if media_type == "image/*" { "image/jpeg" } else { media_type };
    if starts_with_ignore_case(data, "data:") {
        let (meta, payload) = data[5..].split_once(',').unwrap_or((&data[5..], ""));
        let base64 = meta.len() >= 7 && meta.as_bytes()[meta.len() - 7..].eq_ignore_ascii_case(b";base64");
        if !base64 {
            return Err(AgentError::invalid(
                "messages",
                format!("Gemini takes inline files only as base64, and this data URL ({media_type}) is not base64"),
            ));
        }
        let own_type = meta.split(';').next().unwrap_or_default();
        let mime = if own_type.is_empty() { media_type } else { own_type };
        return Ok(inline_data(mime, payload));
    }
    // Base64 has no colon, so a colon means a URL (`https:`, `gs:`, an uploaded file's URI).
    if data.contains(':') {
        let file = object(vec![("mimeType", media_type.into()), ("fileUri", data.into())]);
        return Ok(object(vec![("fileData", file)]));
    }
    Ok(inline_data(media_type, data))
}

/// Google's documented stand-in for a thought signature the client no longer has.
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Gemini 3 and later reject a replayed `functionCall` part without the thought signature the
/// model attached to it. A call the model made carries its own (kept with the call); one that
/// has none (written by the caller, or from another provider) gets the stand-in. Gemini 1.x and
/// 2.x never ask for one and do not get the stand-in.
fn needs_thought_signature(model_id: &str) -> bool {
    // Byte work on purpose: `rsplit` (with `memrchr`) cost 0.7 KB of wasm for this one check.
    let id = model_id.as_bytes();
    let name = &id[id.iter().rposition(|&b| b == b'/').map_or(0, |slash| slash + 1)..];
    match name.split_at_checked(7) {
        Some((prefix, version)) if prefix.eq_ignore_ascii_case(b"gemini-") => {
            !(matches!(version.first(), Some(b'1' | b'2'))
                || version.eq_ignore_ascii_case(b"pro")
                || version.eq_ignore_ascii_case(b"pro-vision"))
        }
        _ => false,
    }
}

fn model_parts(parts: &[AssistantPart], signature: bool) -> Vec<Value> {
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            AssistantPart::Text(text, _) if !text.is_empty() => out.push(text_part(text)),
            AssistantPart::ToolCall { tool_name, args, meta, .. } => {
                // `args` must be an object; arguments that never parsed (kept as their text) or
                // `null` go as `{}`: the call's result already told the model what went wrong.
                let args = if args.is_object() { args.clone() } else { Value::Object(Map::new()) };
                let mut part = Map::new();
                part.insert("functionCall".into(), object(vec![("name", tool_name.as_str().into()), ("args", args)]));
                let own = meta.as_ref().and_then(|m| m.pointer("/google/thoughtSignature")).and_then(Value::as_str);
                if let Some(own) = own.or(signature.then_some(SKIP_SIGNATURE)) {
                    part.insert("thoughtSignature".into(), own.into());
                }
                out.push(Value::Object(part));
            }
            // Reasoning is the model's own scratch work; without its signature it is not sent back.
            _ => {}
        }
    }
    out
}

/// The API wants an object as the response: the result goes under `content`, an error's message
/// under `error` (the key Google's documentation names for failures).
fn function_response(part: &ToolResultPart) -> Value {
    let name = part.tool_name.as_str();
    let response = if part.is_error {
        let message = match &part.result {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        object(vec![("name", name.into()), ("error", message.into())])
    } else {
        object(vec![("name", name.into()), ("content", part.result.clone())])
    };
    object(vec![("functionResponse", object(vec![("name", name.into()), ("response", response)]))])
}

fn declaration(tool: &ToolSpec) -> Value {
    let mut declaration = Map::new();
    declaration.insert("name".into(), tool.name.clone().into());
    if let Some(description) = &tool.description {
        declaration.insert("description".into(), description.clone().into());
    }
    let parameters = clean_schema(&tool.parameters, &tool.parameters, &mut Vec::new());
    // A tool without arguments sends no `parameters`: the API rejects an object without properties.
    let no_arguments = match &parameters {
        Value::Object(schema) => {
            schema.get("type").is_none_or(|t| t.as_str() == Some("object"))
                && !schema.contains_key("properties")
                && !schema.contains_key("anyOf")
        }
        _ => true,
    };
    if !no_arguments {
        declaration.insert("parameters".into(), parameters);
    }
    Value::Object(declaration)
}

/// The fields of Gemini's `Schema` (a subset of OpenAPI 3.0). The API rejects a request with any
/// other key (`$schema`, `additionalProperties`, `$defs`, `exclusiveMinimum`, …), so the rest are
/// dropped: the model sees a looser schema, which is better than a refused request.
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "default",
    "example",
    "properties",
    "required",
    "propertyOrdering",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
];

/// A JSON Schema in the form Gemini accepts. Besides dropping unknown keys: a local `$ref`
/// (`#/$defs/…`, `#/definitions/…`) is replaced by the schema it points to, its sibling keys
/// winning, except inside its own expansion (a recursive type), where it is dropped; a string
/// `const` becomes a one-value `enum`; a type list with `"null"` becomes `nullable`, and one with
/// several types an `anyOf`; an empty `properties` or `required` is left out.
fn clean_schema(schema: &Value, root: &Value, expanding: &mut Vec<String>) -> Value {
    let Value::Object(schema) = schema else {
        // `true` ("anything") has no Gemini spelling but the empty schema.
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference.strip_prefix('#').and_then(|pointer| root.pointer(pointer));
        if let Some(target) = target.filter(|_| !expanding.iter().any(|r| r == reference)) {
            expanding.push(reference.to_string());
            if let Value::Object(inlined) = clean_schema(target, root, expanding) {
                out = inlined;
            }
            expanding.pop();
        }
    }
    for (key, value) in schema {
        let value = match (key.as_str(), value) {
            ("properties", Value::Object(properties)) if !properties.is_empty() => Value::Object(
                properties.iter().map(|(name, s)| (name.clone(), clean_schema(s, root, expanding))).collect(),
            ),
            ("items", items) => clean_schema(items, root, expanding),
            ("anyOf", Value::Array(list)) => list.iter().map(|s| clean_schema(s, root, expanding)).collect(),
            ("type", Value::Array(types)) => {
                let named: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
                if named.len() < types.len() {
                    out.insert("nullable".into(), true.into());
                }
                match named[..] {
                    [] => continue,
                    [one] => one.clone(),
                    _ => {
                        out.insert(
                            "anyOf".into(),
                            named.iter().map(|t| object(vec![("type", (*t).clone())])).collect(),
                        );
                        continue;
                    }
                }
            }
            ("const", Value::String(_)) => {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
                continue;
            }
            ("properties" | "anyOf", _) => continue,
            ("required", Value::Array(names)) if names.is_empty() => continue,
            (key, value) if SCHEMA_KEYS.contains(&key) => value.clone(),
            _ => continue,
        };
        out.insert(key.clone(), value);
    }
    fit_gemini(&mut out);
    Value::Object(out)
}

/// What Gemini's `Schema` refuses even with only its own keys: string formats other than
/// `enum` and `date-time`, `enum` on non-strings or holding `null`, arrays without `items`, and
/// objects without properties (those properties are left out: the model cannot be told their
/// shape, and the package's own validation still checks what it sends).
fn fit_gemini(out: &mut Map<String, Value>) {
    let ty = out.get("type").and_then(Value::as_str).map(str::to_owned);
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        let before = values.len();
        values.retain(|v| !v.is_null());
        if values.len() < before {
            out.insert("nullable".into(), true.into());
        }
    }
    let enum_of_strings = out.get("enum").and_then(Value::as_array).is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string));
    match ty.as_deref() {
        None if enum_of_strings => {
            out.insert("type".into(), "string".into());
        }
        Some("string") if enum_of_strings => {}
        _ => {
            out.remove("enum");
        }
    }
    let ty = out.get("type").and_then(Value::as_str).map(str::to_owned);
    if ty.as_deref() != Some("string") || out.get("format").and_then(Value::as_str).is_some_and(|f| f != "enum" && f != "date-time") {
        out.remove("format");
    }
    if ty.as_deref() == Some("array") && !out.contains_key("items") {
        out.insert("items".into(), object(vec![("type", "string".into())]));
    }
    // Properties that are objects without properties of their own cannot be described.
    let empty_object = |v: &Value| v.get("type").and_then(Value::as_str) == Some("object") && v.get("properties").is_none();
    if let Some(Value::Object(props)) = out.get_mut("properties") {
        let dropped: Vec<String> = props.iter().filter(|(_, v)| empty_object(v)).map(|(k, _)| k.clone()).collect();
        for k in &dropped {
            props.remove(k);
        }
        if let Some(Value::Array(required)) = out.get_mut("required") {
            required.retain(|r| r.as_str().is_none_or(|r| !dropped.iter().any(|d| d == r)));
        }
    }
    if matches!(out.get("properties"), Some(Value::Object(p)) if p.is_empty()) {
        out.remove("properties");
        out.remove("required");
    }
}


// ---------------------------------------------------------------------------------------------
// Stream

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
