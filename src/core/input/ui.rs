//! UI messages → model messages: AI SDK v5 `{ id?, role, parts }` (and v4's, whose tool parts are
//! `tool-invocation`), and Mastra's stored form `{ role, content: { format: 2, parts } }`.
//!
//! A UI message is what a chat screen shows, so it holds things a prompt cannot: tool calls still
//! running, data parts, sources, files the model produced. Those are dropped; everything a model
//! can read is kept, in order. An assistant message is cut at each `step-start` into
//! `Assistant([text, reasoning, tool calls])` followed by `Tool([results])`, one pair per step,
//! which is how the model saw the conversation when it happened.

use serde_json::Value;

use super::{
    call_args, file_part, join, one_of, opt_array, opt_str, part_meta, part_type, present, req_str, role_of, type_error,
    unknown_part, value_error, AgentError, AssistantPart, ModelMessage, PartMeta, ToolResultPart, UserPart,
};

const UI_ROLES: &[&str] = &["system", "user", "assistant"];

/// Part types each role may hold; `tool-<name>` and `data-<name>` stand for their families.
const SYSTEM_PARTS: &[&str] = &["text", "step-start", "data-<name>"];
const USER_PARTS: &[&str] = &["text", "file", "step-start", "data-<name>"];
const ASSISTANT_PARTS: &[&str] = &[
    "text",
    "reasoning",
    "file",
    "tool-<name>",
    "dynamic-tool",
    "tool-invocation",
    "step-start",
    "source-url",
    "source-document",
    "source",
    "data-<name>",
];

/// States of an AI SDK v5 tool part. Only the last three carry something the model must see.
const TOOL_STATES: &[&str] = &[
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
];

/// States of an AI SDK v4 / Mastra `toolInvocation`.
const INVOCATION_STATES: &[&str] = &["partial-call", "call", "result"];

/// One UI message, whichever envelope it came in.
struct UiMessage<'a> {
    role: &'a str,
    parts: &'a [Value],
    parts_path: String,
    /// AI SDK v4 `experimental_attachments` of a user message.
    attachments: Option<&'a [Value]>,
    attachments_path: String,
    /// Mastra's `content.content`, used when `parts` is empty.
    fallback_text: Option<&'a str>,
}

/// `{ id?, role, parts, experimental_attachments? }`.
pub(super) fn push_ui_message(msg: &Value, path: &str, out: &mut Vec<ModelMessage>) -> Result<(), AgentError> {
    let attachments_path = join(path, "experimental_attachments");
    let message = UiMessage {
        role: role_of(msg, path, UI_ROLES)?,
        parts: parts_of(msg, path)?,
        parts_path: join(path, "parts"),
        attachments: opt_array(msg, "experimental_attachments", path)?,
        attachments_path,
        fallback_text: None,
    };
    convert(&message, out)
}

/// Mastra's stored message `{ role, content: { format: 2, parts, content?, experimental_attachments? } }`.
pub(super) fn push_stored_message(msg: &Value, path: &str, out: &mut Vec<ModelMessage>) -> Result<(), AgentError> {
    let content_path = join(path, "content");
    let content = &msg["content"];
    let message = UiMessage {
        role: role_of(msg, path, UI_ROLES)?,
        parts: parts_of(content, &content_path)?,
        parts_path: join(&content_path, "parts"),
        attachments: opt_array(content, "experimental_attachments", &content_path)?,
        attachments_path: join(&content_path, "experimental_attachments"),
        fallback_text: opt_str(content, "content", &content_path)?,
    };
    convert(&message, out)
}

fn parts_of<'a>(holder: &'a Value, path: &str) -> Result<&'a [Value], AgentError> {
    match holder.get("parts") {
        Some(Value::Array(parts)) => Ok(parts),
        found => Err(type_error(&join(path, "parts"), "an array of parts", found)),
    }
}

/// A UI part reduced to what the prompt needs.
enum UiPart<'a> {
    /// Text and reasoning, with the provider data they came with (`providerMetadata`).
    Text(&'a str, PartMeta),
    Reasoning(String, PartMeta),
    /// Converted only where it is kept (user messages), so a dropped file cannot fail the call.
    File(&'a Value),
    /// A finished tool call and its result; `None` for a call that has no result yet.
    Tool(Option<Box<(AssistantPart, ToolResultPart)>>),
    StepStart,
    Ignored,
}

fn convert(message: &UiMessage<'_>, out: &mut Vec<ModelMessage>) -> Result<(), AgentError> {
    let (allowed, place) = match message.role {
        "system" => (SYSTEM_PARTS, "a system UI message"),
        "user" => (USER_PARTS, "a user UI message"),
        _ => (ASSISTANT_PARTS, "an assistant UI message"),
    };
    let mut parts = Vec::with_capacity(message.parts.len());
    for (i, part) in message.parts.iter().enumerate() {
        let path = join(&message.parts_path, i);
        let parsed = ui_part(part, &path, allowed, place)?;
        parts.push((path, parsed));
    }
    let fallback = message.fallback_text.filter(|_| message.parts.is_empty());

    match message.role {
        "system" => {
            let mut texts: Vec<&str> =
                parts.iter().filter_map(|(_, p)| if let UiPart::Text(t, _) = p { Some(*t) } else { None }).collect();
            texts.extend(fallback);
            if !texts.is_empty() {
                out.push(ModelMessage::System(texts.join("\n")));
            }
        }
        "user" => {
            let mut content = Vec::new();
            for (path, part) in &parts {
                match part {
                    UiPart::Text(t, _) => content.push(UserPart::Text((*t).to_owned())),
                    // v5 file parts carry `url`; v4 ones (Mastra's stored form) `data`.
                    UiPart::File(raw) => {
                        let key = if present(raw, "data").is_some() { "data" } else { "url" };
                        content.push(file_part(raw, key, path)?);
                    }
                    _ => {}
                }
            }
            content.extend(fallback.map(|t| UserPart::Text(t.to_owned())));
            for (i, attachment) in message.attachments.unwrap_or_default().iter().enumerate() {
                content.push(attachment_part(attachment, &join(&message.attachments_path, i))?);
            }
            if !content.is_empty() {
                out.push(ModelMessage::User(content));
            }
        }
        _ => {
            let mut content = Vec::new();
            let mut results = Vec::new();
            for (_, part) in parts {
                match part {
                    UiPart::Text(t, meta) => content.push(AssistantPart::Text(t.to_owned(), meta)),
                    UiPart::Reasoning(r, meta) => content.push(AssistantPart::Reasoning(r, meta)),
                    UiPart::Tool(Some(round)) => {
                        let (call, result) = *round;
                        content.push(call);
                        results.push(result);
                    }
                    UiPart::StepStart => flush_step(&mut content, &mut results, out),
                    // The model API has no place for files an assistant produced.
                    UiPart::File(_) | UiPart::Tool(None) | UiPart::Ignored => {}
                }
            }
            content.extend(fallback.map(|t| AssistantPart::Text(t.to_owned(), None)));
            flush_step(&mut content, &mut results, out);
        }
    }
    Ok(())
}

/// Ends one step of an assistant message: its content, then the results of its tool calls.
fn flush_step(content: &mut Vec<AssistantPart>, results: &mut Vec<ToolResultPart>, out: &mut Vec<ModelMessage>) {
    if !content.is_empty() {
        out.push(ModelMessage::Assistant(std::mem::take(content)));
    }
    if !results.is_empty() {
        out.push(ModelMessage::Tool(std::mem::take(results)));
    }
}

fn ui_part<'a>(part: &'a Value, path: &str, allowed: &[&str], place: &str) -> Result<UiPart<'a>, AgentError> {
    let ty = part_type(part, path)?;
    let family = match ty {
        "tool-invocation" => ty,
        t if t.len() > "data-".len() && t.starts_with("data-") => "data-<name>",
        t if t.len() > "tool-".len() && t.starts_with("tool-") => "tool-<name>",
        t => t,
    };
    if !allowed.contains(&family) {
        return Err(unknown_part(path, ty, allowed, place));
    }
    Ok(match family {
        "text" => UiPart::Text(req_str(part, "text", path)?, part_meta(part, "providerMetadata")),
        "reasoning" => UiPart::Reasoning(reasoning_text(part, path)?, part_meta(part, "providerMetadata")),
        "file" => UiPart::File(part),
        "step-start" => UiPart::StepStart,
        "tool-invocation" => UiPart::Tool(invocation(part, path)?.map(Box::new)),
        "tool-<name>" => UiPart::Tool(tool_part(part, &ty["tool-".len()..], path)?.map(Box::new)),
        "dynamic-tool" => UiPart::Tool(tool_part(part, "", path)?.map(Box::new)),
        _ => UiPart::Ignored,
    })
}

/// v5 keeps reasoning in `text`, v4 (and Mastra) in `reasoning`, or only in `details`.
fn reasoning_text(part: &Value, path: &str) -> Result<String, AgentError> {
    if let Some(text) = opt_str(part, "text", path)?.or(opt_str(part, "reasoning", path)?) {
        return Ok(text.to_owned());
    }
    let details = opt_array(part, "details", path)?.unwrap_or_default();
    let texts: Vec<&str> = details.iter().filter_map(|d| d.get("text").and_then(Value::as_str)).collect();
    if texts.is_empty() {
        return Err(type_error(&join(path, "text"), "a string", None));
    }
    Ok(texts.concat())
}

/// An AI SDK v5 tool part (`tool-<name>`, or `dynamic-tool` with `toolName` when `name` is empty).
fn tool_part(part: &Value, name: &str, path: &str) -> Result<Option<(AssistantPart, ToolResultPart)>, AgentError> {
    let state = match part.get("state") {
        Some(Value::String(s)) if TOOL_STATES.contains(&s.as_str()) => s.as_str(),
        found => return Err(value_error(&join(path, "state"), &one_of(TOOL_STATES), found)),
    };
    let (result, is_error) = match state {
        "output-available" => (present(part, "output").cloned().unwrap_or(Value::Null), false),
        "output-error" => (Value::String(opt_str(part, "errorText", path)?.unwrap_or_default().to_owned()), true),
        "output-denied" => {
            let reason = part.get("approval").and_then(|a| a.get("reason")).and_then(Value::as_str);
            (Value::String(reason.unwrap_or("Tool execution denied.").to_owned()), true)
        }
        _ => return Ok(None),
    };
    let name = if name.is_empty() { req_str(part, "toolName", path)? } else { name };
    let id = req_str(part, "toolCallId", path)?;
    let (mut call, result) = round(id, name, call_args(part, "input", "args"), result, is_error);
    if let AssistantPart::ToolCall { meta, .. } = &mut call {
        *meta = part_meta(part, "callProviderMetadata");
    }
    Ok(Some((call, result)))
}

/// An AI SDK v4 / Mastra `{ type: 'tool-invocation', toolInvocation: { state, toolCallId, toolName, args, result? } }`.
fn invocation(part: &Value, path: &str) -> Result<Option<(AssistantPart, ToolResultPart)>, AgentError> {
    let path = join(path, "toolInvocation");
    let inv = match part.get("toolInvocation") {
        Some(inv @ Value::Object(_)) => inv,
        found => return Err(type_error(&path, "an object", found)),
    };
    match inv.get("state") {
        Some(Value::String(s)) if s == "result" => {}
        Some(Value::String(s)) if INVOCATION_STATES.contains(&s.as_str()) => return Ok(None),
        found => return Err(value_error(&join(&path, "state"), &one_of(INVOCATION_STATES), found)),
    }
    let id = req_str(inv, "toolCallId", &path)?;
    let name = req_str(inv, "toolName", &path)?;
    let result = present(inv, "result").cloned().unwrap_or(Value::Null);
    Ok(Some(round(id, name, call_args(inv, "args", "input"), result, false)))
}

fn round(id: &str, name: &str, args: Value, result: Value, is_error: bool) -> (AssistantPart, ToolResultPart) {
    let call = AssistantPart::ToolCall { tool_call_id: id.to_owned(), tool_name: name.to_owned(), args, meta: None };
    let result = ToolResultPart { tool_call_id: id.to_owned(), tool_name: name.to_owned(), result, is_error };
    (call, result)
}

/// A v4 attachment `{ url, contentType?, name? }` as a file part.
fn attachment_part(attachment: &Value, path: &str) -> Result<UserPart, AgentError> {
    if !attachment.is_object() {
        return Err(type_error(path, "an attachment object", Some(attachment)));
    }
    let url = req_str(attachment, "url", path)?;
    let media_type = match opt_str(attachment, "contentType", path)?.or_else(|| super::data_url_media_type(url)) {
        Some(t) => t.to_owned(),
        None => return Err(type_error(&join(path, "contentType"), "a media type string", None)),
    };
    let filename = opt_str(attachment, "name", path)?.map(str::to_owned);
    Ok(UserPart::File { data: url.to_owned(), media_type, filename })
}
