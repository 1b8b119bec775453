//! The `generateContent` request: `ModelRequest` → the HTTP request.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::object;
use super::schema::clean_schema;
use crate::core::error::AgentError;
use crate::core::model::{
    AssistantPart, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart, ToolSpec, UserPart, Warning,
};
use crate::providers::{append_paragraph, set_header, starts_with_ignore_case, Endpoint, HttpRequest};

/// Builds the streaming `generateContent` request for `req`.
///
/// System messages become one `systemInstruction`; the other messages become `contents`, with
/// consecutive turns of the same role merged. `providerOptions` keys are merged into the body last,
/// as they are (Gemini's keys are camelCase already): an object merges into the body's object of
/// the same key (`generationConfig: { thinkingConfig }` keeps the sampling settings), anything else
/// replaces it.
pub fn build_request(endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
    let mut body = Map::new();
    let gemini3 = needs_thought_signature(&req.model_id);
    // Before Gemini 3 the JSON mode cannot be combined with tools: then the schema goes in words.
    let (native, inlined) = match &req.response_format {
        Some(f) if gemini3 || req.tools.is_empty() => (Some(f), None),
        Some(f) => (None, Some(f.inline_into(&req.messages))),
        None => (None, None),
    };
    let (contents, system) = contents(inlined.as_deref().unwrap_or(&req.messages), gemini3)?;
    body.insert("contents".into(), contents);
    if !system.is_empty() {
        body.insert("systemInstruction".into(), object(vec![("parts", Value::Array(vec![text_part(&system)]))]));
    }
    let mut config = generation_config(&req.settings);
    if let Some(f) = native {
        config.insert("responseMimeType".into(), "application/json".into());
        config.insert("responseJsonSchema".into(), f.schema.clone());
    }
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
