//! The Chat Completions request: `ModelRequest` → the HTTP request.

use serde_json::{json, Map, Value};

use crate::core::error::AgentError;
use crate::core::model::{AssistantPart, ModelMessage, ModelRequest, ToolChoice, UserPart, Warning};
use crate::providers::{file_url, is_url, set_header, snake_case, starts_with_ignore_case, Endpoint, HttpRequest};

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

    if let Some(format) = &req.response_format {
        body.insert("response_format".into(), json!({ "type": "json_schema", "json_schema": crate::providers::json_schema(format, false) }));
    }

    if let Some(options) = &req.provider_options {
        for (key, value) in options {
            body.insert(snake_case(key).into_owned(), value.clone());
        }
    }

    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    headers.extend(crate::providers::key_header(endpoint));
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
