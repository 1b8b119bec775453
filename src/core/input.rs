//! Validation and normalisation of what users hand us from JavaScript: the `messages` of
//! `agent.stream()` (and `context`), `instructions`, `modelSettings` and `toolChoice`.
//!
//! The bindings first turn a JavaScript value into a `serde_json::Value` (functions and
//! `undefined` dropped, bytes already base64) and then call in here. Every failure is an
//! [`AgentError::InvalidArgument`] whose field is the path the user wrote
//! (`messages[2].content[0].type`) and whose message reads "expected …, got …", so the
//! JavaScript `TypeError` points at the exact spot.
//!
//! This module must never panic, whatever the input, and never learns about JavaScript types.
//! UI messages (AI SDK `parts` and Mastra's stored form) live in the `ui` submodule.

use serde_json::{Map, Value};

use super::error::AgentError;
use super::model::{AssistantPart, ModelMessage, ModelSettings, PartMeta, ToolChoice, ToolResultPart, UserPart};

mod fields;
mod ui;

pub use fields::{
    check_header, check_header_value, join, kind, not_json, opt_array, opt_bool, opt_f64, opt_i64, opt_object, opt_str,
    opt_u64, req_str, PathKey, NOT_JSON,
};
use fields::{one_of, opt_integer, present, type_error, unknown_part, value_error};

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

const MODEL_ROLES: &[&str] = &["system", "user", "assistant", "tool"];

/// Normalises every message form `agent.stream(messages)` accepts into model messages:
///
/// ```ts
/// agent.stream('Hi')                                    // one user message
/// agent.stream(['Hi', 'Also this'])                     // one user message each
/// agent.stream([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }])   // model messages
/// agent.stream([{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Hi' }] }]) // UI messages
/// agent.stream({ role: 'user', content: 'Hi' })         // a single message
/// ```
///
/// Strings and message objects may be mixed in one array. `field` is the path used in errors
/// (`"messages"`, `"options.context"`).
pub fn parse_messages(v: &Value, field: &str) -> Result<Vec<ModelMessage>, AgentError> {
    parse_messages_with_ids(v, field).map(|(messages, _)| messages)
}

/// `parse_messages`, with the id each message keeps in memory, one per message: the `id` of a
/// user UI message (`{ id, role: 'user', parts }`, as `useChat` sends it), so the stored message
/// is the one the page holds. Other messages get new ids when they are saved.
pub fn parse_messages_with_ids(v: &Value, field: &str) -> Result<(Vec<ModelMessage>, Vec<Option<String>>), AgentError> {
    let mut out = Vec::new();
    let mut ids = Vec::new();
    match v {
        Value::String(text) => out.push(user_text(text)),
        Value::Object(_) => push_with_id(v, field, &mut out, &mut ids)?,
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let path = join(field, i);
                match item {
                    Value::String(text) => out.push(user_text(text)),
                    Value::Object(_) => push_with_id(item, &path, &mut out, &mut ids)?,
                    other => return Err(type_error(&path, "a string or a message object", Some(other))),
                }
                ids.resize(out.len(), None);
            }
        }
        other => {
            let what = "a string, an array of strings, or an array of messages";
            return Err(type_error(field, what, Some(other)));
        }
    }
    ids.resize(out.len(), None);
    Ok((out, ids))
}

/// `push_message`, and the ids of the messages it added (`ids` is as long as `out` after it).
fn push_with_id(msg: &Value, path: &str, out: &mut Vec<ModelMessage>, ids: &mut Vec<Option<String>>) -> Result<(), AgentError> {
    ids.resize(out.len(), None);
    push_message(msg, path, out)?;
    let is_user_ui = present(msg, "parts").is_some() && msg.get("role").and_then(Value::as_str) == Some("user");
    let id = msg.get("id").and_then(Value::as_str).filter(|id| is_user_ui && !id.is_empty());
    if let (Some(id), Some(ModelMessage::User(_))) = (id, out.get(ids.len())) {
        ids.push(Some(id.to_owned()));
    }
    ids.resize(out.len(), None);
    Ok(())
}

fn user_text(text: &str) -> ModelMessage {
    ModelMessage::User(vec![UserPart::Text(text.to_owned())])
}

/// Appends the model messages of one message object (a UI message may become several).
fn push_message(msg: &Value, path: &str, out: &mut Vec<ModelMessage>) -> Result<(), AgentError> {
    if present(msg, "parts").is_some() {
        return ui::push_ui_message(msg, path, out);
    }
    if let Some(Value::Object(content)) = msg.get("content") {
        if content.contains_key("parts") {
            return ui::push_stored_message(msg, path, out);
        }
    }
    out.push(model_message(msg, path)?);
    Ok(())
}

/// The `role` of a message, checked against `allowed`.
fn role_of<'a>(msg: &'a Value, path: &str, allowed: &[&str]) -> Result<&'a str, AgentError> {
    match msg.get("role") {
        Some(Value::String(role)) if allowed.contains(&role.as_str()) => Ok(role),
        found => Err(value_error(&join(path, "role"), &one_of(allowed), found)),
    }
}

/// The `type` of a content part, which must be an object.
fn part_type<'a>(part: &'a Value, path: &str) -> Result<&'a str, AgentError> {
    if !part.is_object() {
        return Err(type_error(path, "a part object with a \"type\"", Some(part)));
    }
    req_str(part, "type", path)
}

/// The parts of a `content` array, each with its path.
fn content_parts<'a>(
    content: Option<&'a Value>,
    path: &str,
    what: &str,
) -> Result<impl Iterator<Item = (String, &'a Value)>, AgentError> {
    match content {
        Some(Value::Array(parts)) => {
            let path = path.to_owned();
            Ok(parts.iter().enumerate().map(move |(i, p)| (join(&path, i), p)))
        }
        found => Err(type_error(path, what, found)),
    }
}

fn model_message(msg: &Value, path: &str) -> Result<ModelMessage, AgentError> {
    let role = role_of(msg, path, MODEL_ROLES)?;
    let content = msg.get("content");
    let content_path = join(path, "content");
    let content_path = content_path.as_str();
    Ok(match role {
        "system" => ModelMessage::System(system_text(content, content_path)?),
        "user" => ModelMessage::User(match content {
            Some(Value::String(text)) => vec![UserPart::Text(text.clone())],
            _ => content_parts(content, content_path, "a string or an array of parts")?
                .map(|(p, part)| user_part(part, &p))
                .collect::<Result<_, _>>()?,
        }),
        "assistant" => ModelMessage::Assistant(match content {
            Some(Value::String(text)) => vec![AssistantPart::Text(text.clone(), None)],
            _ => content_parts(content, content_path, "a string or an array of parts")?
                .map(|(p, part)| assistant_part(part, &p))
                .collect::<Result<_, _>>()?,
        }),
        _ => ModelMessage::Tool(
            content_parts(content, content_path, "an array of tool-result parts")?
                .map(|(p, part)| match part_type(part, &p)? {
                    "tool-result" => tool_result_part(part, &p),
                    other => Err(unknown_part(&p, other, &["tool-result"], "a tool message")),
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// System content: a string, or text parts joined with newlines.
fn system_text(content: Option<&Value>, path: &str) -> Result<String, AgentError> {
    if let Some(Value::String(text)) = content {
        return Ok(text.clone());
    }
    let mut texts = Vec::new();
    for (p, part) in content_parts(content, path, "a string or an array of text parts")? {
        match part_type(part, &p)? {
            "text" => texts.push(req_str(part, "text", &p)?),
            other => return Err(unknown_part(&p, other, &["text"], "a system message")),
        }
    }
    Ok(texts.join("\n"))
}

fn user_part(part: &Value, path: &str) -> Result<UserPart, AgentError> {
    match part_type(part, path)? {
        "text" => Ok(UserPart::Text(req_str(part, "text", path)?.to_owned())),
        "image" => {
            let data = match part.get("image") {
                Some(Value::String(data)) => data,
                found => return Err(type_error(&join(path, "image"), "a URL or base64 string", found)),
            };
            let media_type = match media_type_field(part, path)? {
                Some(t) => t.to_owned(),
                None => sniff_image_type(data),
            };
            Ok(UserPart::File {
                data: data.clone(),
                media_type,
                filename: opt_str(part, "filename", path)?.map(str::to_owned),
            })
        }
        "file" => file_part(part, "data", path),
        other => Err(unknown_part(path, other, &["text", "image", "file"], "a user message")),
    }
}

/// `mediaType` (AI SDK v5) or its older name `mimeType`.
fn media_type_field<'a>(part: &'a Value, path: &str) -> Result<Option<&'a str>, AgentError> {
    match opt_str(part, "mediaType", path)? {
        Some(t) => Ok(Some(t)),
        None => opt_str(part, "mimeType", path),
    }
}

/// A file part whose content is a URL or base64 string under `data_key` (`data`, or `url` in UI
/// messages). The media type may be left out only when the data is a `data:` URL that names it.
fn file_part(part: &Value, data_key: &str, path: &str) -> Result<UserPart, AgentError> {
    let data = req_str(part, data_key, path)?;
    let media_type = match media_type_field(part, path)?.or_else(|| data_url_media_type(data)) {
        Some(t) => t.to_owned(),
        None => {
            return Err(type_error(&join(path, "mediaType"), "a media type string such as \"application/pdf\"", None))
        }
    };
    let filename = opt_str(part, "filename", path)?.map(str::to_owned);
    Ok(UserPart::File { data: data.to_owned(), media_type, filename })
}

/// `image/png` from `data:image/png;base64,…`.
fn data_url_media_type(data: &str) -> Option<&str> {
    let rest = data.strip_prefix("data:")?;
    let end = rest.find([';', ','])?;
    Some(&rest[..end]).filter(|t| t.contains('/'))
}

/// The media type of an image part given without one: from a data URL, from the first bytes of
/// base64 data, or `image/*` (a URL; the provider or server decides).
fn sniff_image_type(data: &str) -> String {
    if let Some(t) = data_url_media_type(data) {
        return t.to_owned();
    }
    const SIGNATURES: &[(&str, &str)] =
        &[("iVBORw0KGgo", "image/png"), ("/9j/", "image/jpeg"), ("R0lGOD", "image/gif"), ("UklGR", "image/webp")];
    SIGNATURES.iter().find(|(prefix, _)| data.starts_with(prefix)).map_or("image/*", |(_, t)| t).to_owned()
}

fn assistant_part(part: &Value, path: &str) -> Result<AssistantPart, AgentError> {
    match part_type(part, path)? {
        "text" => Ok(AssistantPart::Text(req_str(part, "text", path)?.to_owned(), part_meta(part, "providerOptions"))),
        "reasoning" => Ok(AssistantPart::Reasoning(req_str(part, "text", path)?.to_owned(), part_meta(part, "providerOptions"))),
        "tool-call" => Ok(AssistantPart::ToolCall {
            tool_call_id: req_str(part, "toolCallId", path)?.to_owned(),
            tool_name: req_str(part, "toolName", path)?.to_owned(),
            args: call_args(part, "input", "args"),
            meta: part_meta(part, "providerOptions"),
        }),
        other => Err(unknown_part(path, other, &["text", "reasoning", "tool-call"], "an assistant message")),
    }
}

/// The provider data a caller's part carries back (signatures, item ids): an object under `key`
/// (`providerOptions` in model messages, as the AI SDK writes them) or under `providerMetadata`
/// (as the model reported it, and as memory stores it). Anything else is ignored.
pub(crate) fn part_meta(part: &Value, key: &str) -> PartMeta {
    [key, "providerMetadata"].iter().find_map(|k| part.get(*k).filter(|m| m.is_object()).cloned())
}

/// Tool-call arguments under `key` or its older name `legacy_key`; a call without any gets `{}`.
fn call_args(part: &Value, key: &str, legacy_key: &str) -> Value {
    present(part, key).or_else(|| present(part, legacy_key)).cloned().unwrap_or_else(|| Value::Object(Map::new()))
}

/// `{ type: 'tool-result', toolCallId, toolName, output | result, isError? }`.
///
/// `output` (AI SDK v5) is a typed wrapper, `{ type: 'json', value }` etc., which is unwrapped;
/// `result` (v4) is the raw tool result and kept as it is.
fn tool_result_part(part: &Value, path: &str) -> Result<ToolResultPart, AgentError> {
    let tool_call_id = req_str(part, "toolCallId", path)?.to_owned();
    let tool_name = req_str(part, "toolName", path)?.to_owned();
    let flagged = opt_bool(part, "isError", path)?.unwrap_or(false);
    let (result, wrapped_error) = match present(part, "output") {
        Some(output) => unwrap_output(output),
        None => (present(part, "result").cloned().unwrap_or(Value::Null), false),
    };
    Ok(ToolResultPart { tool_call_id, tool_name, result, is_error: flagged || wrapped_error })
}

/// The value inside an AI SDK v5 tool output wrapper and whether it reports an error. A value
/// that is not a wrapper (a plain object, a string) is kept whole.
fn unwrap_output(output: &Value) -> (Value, bool) {
    let Value::Object(obj) = output else {
        return (output.clone(), false);
    };
    let only_wrapper_keys = obj.keys().all(|k| matches!(k.as_str(), "type" | "value" | "reason" | "providerOptions"));
    let ty = obj.get("type").and_then(Value::as_str);
    let value = || obj.get("value").cloned().unwrap_or(Value::Null);
    match ty {
        _ if !only_wrapper_keys => (output.clone(), false),
        Some("text" | "json" | "content") if obj.contains_key("value") => (value(), false),
        Some("error-text" | "error-json") if obj.contains_key("value") => (value(), true),
        Some("execution-denied") => {
            let reason = obj.get("reason").and_then(Value::as_str).unwrap_or("Tool execution denied.");
            (Value::String(reason.to_owned()), true)
        }
        _ => (output.clone(), false),
    }
}

// ---------------------------------------------------------------------------------------------
// Instructions, model settings, tool choice
// ---------------------------------------------------------------------------------------------

/// `instructions` (and `system`): a string, an array of strings, a system message
/// `{ role: 'system', content }`, or an array mixing them. Returns the non-empty texts in order.
///
/// ```ts
/// new Agent({ id: 'a', model, instructions: ['You are terse.', { role: 'system', content: 'Cite sources.' }] })
/// ```
pub fn parse_instructions(v: &Value, field: &str) -> Result<Vec<String>, AgentError> {
    fn one(item: &Value, path: &str) -> Result<String, AgentError> {
        match item {
            Value::String(text) => Ok(text.clone()),
            Value::Object(_) => {
                role_of(item, path, &["system"])?;
                system_text(item.get("content"), &join(path, "content"))
            }
            other => Err(type_error(path, "a string or a system message", Some(other))),
        }
    }
    let texts = match v {
        Value::Array(items) => {
            items.iter().enumerate().map(|(i, item)| one(item, &join(field, i))).collect::<Result<Vec<_>, _>>()?
        }
        Value::String(_) | Value::Object(_) => vec![one(v, field)?],
        other => {
            let what = "a string, an array of strings, or system messages";
            return Err(type_error(field, what, Some(other)));
        }
    };
    Ok(texts.into_iter().filter(|t| !t.is_empty()).collect())
}

/// `options.modelSettings`. `null` gives the defaults; unknown keys are ignored.
///
/// ```ts
/// agent.stream('Hi', { modelSettings: { temperature: 0.2, maxOutputTokens: 500, headers: { 'x-team': 'a' } } })
/// ```
pub fn parse_model_settings(v: &Value, field: &str) -> Result<ModelSettings, AgentError> {
    match v {
        Value::Null => return Ok(ModelSettings::default()),
        Value::Object(_) => {}
        other => return Err(type_error(field, "an object", Some(other))),
    }
    let mut settings = ModelSettings {
        temperature: opt_f64(v, "temperature", field)?,
        max_output_tokens: opt_u64(v, "maxOutputTokens", field)?,
        top_p: opt_f64(v, "topP", field)?,
        top_k: opt_f64(v, "topK", field)?,
        presence_penalty: opt_f64(v, "presencePenalty", field)?,
        frequency_penalty: opt_f64(v, "frequencyPenalty", field)?,
        seed: opt_i64(v, "seed", field)?,
        max_retries: opt_integer(v, "maxRetries", field, 0, 100, "an integer from 0 to 100")?.map(|n| n as u32),
        ..ModelSettings::default()
    };
    if let Some(stops) = opt_array(v, "stopSequences", field)? {
        let path = join(field, "stopSequences");
        for (i, stop) in stops.iter().enumerate() {
            match stop {
                Value::String(s) => settings.stop_sequences.push(s.clone()),
                other => return Err(type_error(&join(&path, i), "a string", Some(other))),
            }
        }
    }
    if let Some(headers) = opt_object(v, "headers", field)? {
        let path = join(field, "headers");
        for (name, value) in headers {
            match value {
                Value::String(s) => {
                    check_header(name, s, &join(&path, name.as_str()))?;
                    settings.headers.push((name.clone(), s.clone()))
                }
                // `{ 'x-key': undefined }` arrives without the key; `null` means the same.
                Value::Null => {}
                other => return Err(type_error(&join(&path, name.as_str()), "a string", Some(other))),
            }
        }
    }
    Ok(settings)
}

/// `toolChoice`: `'auto' | 'none' | 'required' | { type: 'tool', toolName }`. The caller handles
/// an absent option; `null` here is an error.
pub fn parse_tool_choice(v: &Value, field: &str) -> Result<ToolChoice, AgentError> {
    const WHAT: &str = "\"auto\", \"none\", \"required\" or { type: \"tool\", toolName }";
    match v {
        Value::String(s) => match s.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            _ => Err(value_error(field, WHAT, Some(v))),
        },
        Value::Object(_) => match v.get("type") {
            Some(Value::String(t)) if t == "tool" => Ok(ToolChoice::Tool(req_str(v, "toolName", field)?.to_owned())),
            found => Err(value_error(&join(field, "type"), "\"tool\"", found)),
        },
        other => Err(type_error(field, WHAT, Some(other))),
    }
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
