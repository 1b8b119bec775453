//! The Responses request: `ModelRequest` → the HTTP request.

use serde_json::{json, Map, Value};

use crate::core::error::AgentError;
use crate::core::model::{AssistantPart, ModelMessage, ModelRequest, PartMeta, ToolChoice, UserPart, Warning};
use crate::providers::{
    file_url, is_url, key_header, set_header, snake_case, starts_with_ignore_case, Endpoint, HttpRequest,
};

/// What `include` asks for when reasoning is requested: the reasoning itself, encrypted, which a
/// stateless (`store: false`) conversation needs to hand the model its reasoning back.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// Builds the streaming Responses request for `req`.
///
/// The conversation goes in `input` as items, system messages among them where they stand (not
/// in `instructions`, which holds one text and would lose their place between the turns).
/// `store: false`: the history travels with every request, so nothing is kept on the server.
///
/// Settings the API lacks (`topK`, `presencePenalty`, `frequencyPenalty`, `stopSequences`,
/// `seed`) are left out with a warning. `providerOptions` are merged into the body last, keys
/// renamed from camelCase to snake_case, so they can set or override any body field; the flat
/// options other providers take become this API's nested fields (`reasoningEffort` and
/// `reasoningSummary` → `reasoning: { effort, summary }`, `textVerbosity` → `text: { verbosity }`).
/// When reasoning is requested, `include` asks for the encrypted reasoning as well.
pub fn build_request(endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
    let s = &req.settings;
    let mut warnings = Vec::new();
    let mut body = Map::new();
    body.insert("model".into(), req.model_id.clone().into());
    // `store: true` (a provider option) keeps the items on the server, so reasoning can go back
    // by id alone; otherwise only with its encrypted content.
    let stateful = req.provider_options.as_ref().and_then(|o| o.get("store")).and_then(Value::as_bool) == Some(true);
    body.insert("input".into(), input(&req.messages, stateful)?.into());
    body.insert("stream".into(), true.into());
    body.insert("store".into(), false.into());

    if let Some(max) = s.max_output_tokens {
        body.insert("max_output_tokens".into(), max.into());
    }
    if let Some(temperature) = s.temperature {
        body.insert("temperature".into(), temperature.into());
    }
    if let Some(top_p) = s.top_p {
        body.insert("top_p".into(), top_p.into());
    }
    let unsupported = [
        ("topK", s.top_k.is_some()),
        ("presencePenalty", s.presence_penalty.is_some()),
        ("frequencyPenalty", s.frequency_penalty.is_some()),
        ("stopSequences", !s.stop_sequences.is_empty()),
        ("seed", s.seed.is_some()),
    ];
    for (setting, set) in unsupported {
        if set {
            warnings.push(Warning {
                kind: "unsupported-setting",
                setting: Some(setting.into()),
                message: Some(format!("{setting} is not part of the OpenAI Responses API and was not sent")),
            });
        }
    }

    // The API rejects `tool_choice` without `tools`, so both go or neither does.
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(|tool| {
            let mut spec = Map::new();
            spec.insert("type".into(), "function".into());
            spec.insert("name".into(), tool.name.clone().into());
            if let Some(description) = &tool.description {
                spec.insert("description".into(), description.clone().into());
            }
            spec.insert("parameters".into(), tool.parameters.clone());
            // Strict mode wants every property required and no extra ones: not every schema is so.
            spec.insert("strict".into(), false.into());
            Value::Object(spec)
        });
        body.insert("tools".into(), tools.collect());
        if let Some(choice) = &req.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => "auto".into(),
                ToolChoice::None => "none".into(),
                ToolChoice::Required => "required".into(),
                ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
            };
            body.insert("tool_choice".into(), choice);
        }
    }

    if let Some(format) = &req.response_format {
        body.insert("text".into(), json!({ "format": crate::providers::json_schema(format, true) }));
    }

    if let Some(options) = &req.provider_options {
        // Flat keys first, nested ones after, so `reasoning: {…}` and `reasoningEffort` combine
        // in either order.
        for (key, value) in options {
            if nested_option(key).is_none() {
                body.insert(snake_case(key).into_owned(), value.clone());
            }
        }
        for (key, value) in options {
            if let Some((parent, field)) = nested_option(key) {
                let slot = body.entry(parent).or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                slot[field] = value.clone();
            }
        }
    }
    // Reasoning goes back to the model in a tool loop only with its encrypted content when the
    // server keeps nothing: ask for it whenever reasoning was asked for, or the model reasons
    // anyway. (Other models refuse the `include`.)
    let asked = body.get("reasoning").is_some_and(|r| !r.is_null());
    if asked || !stateful && reasons_by_default(&req.model_id) {
        if let Value::Array(include) = body.entry("include").or_insert_with(|| Value::Array(Vec::new())) {
            if !include.iter().any(|v| v == ENCRYPTED_REASONING) {
                include.push(ENCRYPTED_REASONING.into());
            }
        }
    }

    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    headers.extend(key_header(endpoint));
    for (name, value) in endpoint.headers.iter().chain(&s.headers) {
        set_header(&mut headers, name, value);
    }

    let body = serde_json::to_string(&Value::Object(body)).map_err(|e| AgentError::api(e.to_string(), false))?;
    let url = format!("{}/responses", endpoint.base_url.trim_end_matches('/'));
    Ok((HttpRequest { url, headers, body }, warnings))
}

/// OpenAI's reasoning models, which reason whether asked to or not: the o-series, GPT-5 (but not
/// its chat models) and Codex.
fn reasons_by_default(model_id: &str) -> bool {
    let m = model_id.rsplit('/').next().unwrap_or(model_id).to_ascii_lowercase();
    let o_series = ["o1", "o3", "o4"].iter().any(|p| m.starts_with(p));
    o_series || m.starts_with("codex") || m.starts_with("gpt-5") && !m.starts_with("gpt-5-chat")
}

/// The body field a flat provider option sets on this API, as (object, field).
fn nested_option(key: &str) -> Option<(&'static str, &'static str)> {
    match key {
        "reasoningEffort" | "reasoning_effort" => Some(("reasoning", "effort")),
        "reasoningSummary" | "reasoning_summary" => Some(("reasoning", "summary")),
        "textVerbosity" | "text_verbosity" => Some(("text", "verbosity")),
        _ => None,
    }
}

/// The conversation as input items. Messages with nothing in them are left out.
fn input(messages: &[ModelMessage], stateful: bool) -> Result<Vec<Value>, AgentError> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            ModelMessage::System(text) if text.is_empty() => {}
            ModelMessage::System(text) => out.push(json!({ "role": "system", "content": text })),
            ModelMessage::User(parts) if parts.is_empty() => {}
            ModelMessage::User(parts) => out.push(json!({ "role": "user", "content": user_content(parts)? })),
            ModelMessage::Assistant(parts) => assistant_items(parts, stateful, &mut out),
            ModelMessage::Tool(results) => {
                // The output is text; an error result says so in its own words (no flag exists).
                for part in results {
                    let output = match &part.result {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    out.push(json!({ "type": "function_call_output", "call_id": part.tool_call_id, "output": output }));
                }
            }
        }
    }
    Ok(out)
}

fn user_content(parts: &[UserPart]) -> Result<Vec<Value>, AgentError> {
    let mut out = Vec::with_capacity(parts.len());
    for (index, part) in parts.iter().enumerate() {
        out.push(match part {
            UserPart::Text(text) => json!({ "type": "input_text", "text": text }),
            UserPart::File { data, media_type, .. } if media_type.starts_with("image/") => {
                // `image/*` means "some image": the data URL needs a concrete type.
                let media_type = if media_type == "image/*" { "image/jpeg" } else { media_type };
                json!({ "type": "input_image", "image_url": file_url(data, media_type) })
            }
            UserPart::File { data, .. } if is_url(data) && !starts_with_ignore_case(data, "data:") => {
                json!({ "type": "input_file", "file_url": data })
            }
            UserPart::File { data, media_type, filename } => {
                // Inline data needs a file name next to it; make one up when none was given.
                let filename = match filename {
                    Some(name) => name.clone(),
                    None if media_type == "application/pdf" => format!("part-{index}.pdf"),
                    None => format!("part-{index}"),
                };
                json!({ "type": "input_file", "filename": filename, "file_data": file_url(data, media_type) })
            }
        });
    }
    Ok(out)
}

/// An assistant message as items, in its own order: each run of text one message, each tool call
/// one `function_call` item, reasoning a `reasoning` item when it can go back.
///
/// The API pairs a reasoning item with the items that followed it in its response, by item id:
/// it refuses a reasoning item whose following item is missing and an item id whose reasoning
/// is. So item ids are sent only after a reasoning item went out, and reasoning goes out only
/// with what identifies it: its id and encrypted content, or its id alone when the server keeps
/// the items (`stateful`).
fn assistant_items(parts: &[AssistantPart], stateful: bool, out: &mut Vec<Value>) {
    let mut text = String::new();
    let mut text_id = None;
    let mut paired = false;
    for part in parts {
        let id = if paired { meta_str(part.meta(), "itemId") } else { None };
        match part {
            AssistantPart::Text(t, _) => {
                if id != text_id {
                    flush_text(&mut text, text_id, out);
                    text_id = id;
                }
                text.push_str(t);
            }
            AssistantPart::Reasoning(t, meta) => {
                flush_text(&mut text, text_id.take(), out);
                let (id, content) = (meta_str(meta, "itemId"), meta_str(meta, "reasoningEncryptedContent"));
                let Some(id) = id.filter(|_| content.is_some() || stateful) else { continue };
                let summary: Vec<Value> =
                    if t.is_empty() { Vec::new() } else { vec![json!({ "type": "summary_text", "text": t })] };
                let mut item = json!({ "type": "reasoning", "id": id, "summary": summary });
                if let Some(content) = content {
                    item["encrypted_content"] = content.into();
                }
                out.push(item);
                paired = true;
            }
            AssistantPart::ToolCall { tool_call_id, tool_name, args, .. } => {
                flush_text(&mut text, text_id.take(), out);
                let mut call = json!({
                    "type": "function_call",
                    "call_id": tool_call_id,
                    "name": tool_name,
                    "arguments": args.to_string(),
                });
                if let Some(id) = id {
                    call["id"] = id.into();
                }
                out.push(call);
            }
        }
    }
    flush_text(&mut text, text_id, out);
}

/// A string this API left on a part (`providerMetadata.openai.<key>`).
fn meta_str<'a>(meta: &'a PartMeta, key: &str) -> Option<&'a str> {
    meta.as_ref()?.get("openai")?.get(key)?.as_str()
}

fn flush_text(text: &mut String, id: Option<&str>, out: &mut Vec<Value>) {
    if !text.is_empty() {
        let text = std::mem::take(text);
        let mut message = json!({ "role": "assistant", "content": [{ "type": "output_text", "text": text }] });
        if let Some(id) = id {
            message["id"] = id.into();
        }
        out.push(message);
    }
}
