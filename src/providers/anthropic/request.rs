//! The Messages request: `ModelRequest` → the HTTP request.

use serde_json::{json, Map, Value};

use crate::core::error::AgentError;
use crate::core::model::{AssistantPart, ModelMessage, ModelRequest, ToolChoice, ToolResultPart, UserPart, Warning};
use crate::providers::{append_paragraph, set_header, snake_case, starts_with_ignore_case, Endpoint, HttpRequest};

/// The `anthropic-version` header: the version of the wire format this module speaks.
const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the caller set no `maxOutputTokens`: the API requires the field.
const DEFAULT_MAX_TOKENS: u64 = 4096;

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
    // No native JSON-schema output on this API: the schema goes in words (SPEC §12.2).
    let inlined = req.response_format.as_ref().map(|f| f.inline_into(&req.messages));
    let (system, messages) = messages(inlined.as_deref().unwrap_or(&req.messages))?;
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
