//! The call options of `doStream`, built from a `ModelRequest`.

use serde_json::{json, Map, Value};

use crate::core::model::{ModelMessage, ModelRequest, ToolChoice, UserPart};
use crate::core::step::assistant_part_json;

/// `LanguageModelV2CallOptions` (without `abortSignal`, which the bindings add).
pub fn call_options(req: &ModelRequest) -> Value {
    let prompt: Vec<Value> = req
        .messages
        .iter()
        .map(|m| match m {
            ModelMessage::System(t) => json!({ "role": "system", "content": t }),
            ModelMessage::User(parts) => json!({ "role": "user", "content": parts.iter().map(|p| match p {
                UserPart::Text(t) => json!({ "type": "text", "text": t }),
                UserPart::File { data, media_type, filename } => {
                    let mut f = json!({ "type": "file", "data": data, "mediaType": media_type });
                    if let Some(n) = filename {
                        f["filename"] = n.as_str().into();
                    }
                    f
                }
            }).collect::<Vec<_>>() }),
            ModelMessage::Assistant(parts) => {
                json!({ "role": "assistant", "content": parts.iter().map(assistant_part_json).collect::<Vec<_>>() })
            }
            ModelMessage::Tool(results) => json!({ "role": "tool", "content": results.iter().map(|r| {
                let output = match (&r.result, r.is_error) {
                    (Value::String(s), true) => json!({ "type": "error-text", "value": s }),
                    (v, true) => json!({ "type": "error-json", "value": v }),
                    (Value::String(s), false) => json!({ "type": "text", "value": s }),
                    (v, false) => json!({ "type": "json", "value": v }),
                };
                json!({ "type": "tool-result", "toolCallId": r.tool_call_id, "toolName": r.tool_name, "output": output })
            }).collect::<Vec<_>>() }),
        })
        .collect();
    let s = &req.settings;
    let mut o = Map::new();
    o.insert("prompt".into(), Value::Array(prompt));
    o.extend(s.sampling_json());
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            o.insert(k.into(), v);
        }
    };
    let headers: Map<String, Value> = s.headers.iter().map(|(k, v)| (k.clone(), v.as_str().into())).collect();
    put("headers", (!headers.is_empty()).then_some(Value::Object(headers)));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({ "type": "function", "name": t.name, "description": t.description, "inputSchema": t.parameters }))
            .collect();
        put("tools", Some(Value::Array(tools)));
        put(
            "toolChoice",
            req.tool_choice.as_ref().map(|c| match c {
                ToolChoice::Auto => json!({ "type": "auto" }),
                ToolChoice::None => json!({ "type": "none" }),
                ToolChoice::Required => json!({ "type": "required" }),
                ToolChoice::Tool(name) => json!({ "type": "tool", "toolName": name }),
            }),
        );
    }
    put("providerOptions", req.provider_options.clone().map(Value::Object));
    put(
        "responseFormat",
        req.response_format.as_ref().map(|f| json!({ "type": "json", "schema": f.schema, "name": f.name, "description": f.description })),
    );
    Value::Object(o)
}
