//! `new Agent(config)` and `stream(messages, options)` options: validated, with errors that name
//! the field, and merged into the prompt and settings of a run.
//!
//! Input arrives as a JSON tree (the bindings convert the JavaScript values first and read the
//! functions — callbacks, `abortSignal` — themselves).

use serde_json::{Map, Value};

use super::error::AgentError;
use super::input::{
    check_header, join, kind, opt_array, opt_bool, opt_object, opt_str, opt_u64, parse_instructions, parse_messages,
    parse_model_settings, parse_tool_choice,
};
use super::model::{ModelMessage, ModelRequest, ModelSettings, ToolChoice};

/// The model part of the agent config: `'provider/model'` or `{ id, url, apiKey, headers, api }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelConfig {
    pub id: String,
    pub url: Option<String>,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub api: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub instructions: Vec<String>,
    pub model: ModelConfig,
    pub max_retries: u32,
    /// `defaultOptions`, merged under each call's options.
    pub default_options: Value,
}

pub fn parse_agent_config(v: &Value) -> Result<AgentConfig, AgentError> {
    const F: &str = "config";
    if !v.is_object() {
        return Err(AgentError::invalid(F, format!("expected an object like {{ id, instructions, model }}, got {}", kind(v))));
    }
    let id = match v.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(AgentError::invalid("config.id", "expected a non-empty string")),
        None | Some(Value::Null) => return Err(AgentError::invalid("config.id", "is required: a string that names the agent")),
        Some(other) => return Err(AgentError::invalid("config.id", format!("expected a string, got {}", kind(other)))),
    };
    let name = opt_str(v, "name", F)?.map(str::to_owned).unwrap_or_else(|| id.clone());
    let description = opt_str(v, "description", F)?.map(str::to_owned);
    let instructions = match v.get("instructions") {
        None | Some(Value::Null) => Vec::new(),
        Some(i) => parse_instructions(i, "config.instructions")?,
    };
    let model = match v.get("model") {
        None | Some(Value::Null) => {
            return Err(AgentError::invalid("config.model", "is required: 'provider/model' (e.g. 'openai/gpt-4o-mini') or { id, url, apiKey }"))
        }
        Some(m) => parse_model_config(m, "config.model")?,
    };
    let max_retries = opt_u64(v, "maxRetries", F)?.unwrap_or(0);
    if max_retries > 100 {
        return Err(AgentError::invalid("config.maxRetries", "expected an integer from 0 to 100"));
    }
    let default_options = match v.get("defaultOptions") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(d @ Value::Object(_)) => {
            parse_call_options(d, "config.defaultOptions")?;
            d.clone()
        }
        Some(d) => return Err(AgentError::invalid("config.defaultOptions", format!("expected an object, got {}", kind(d)))),
    };
    Ok(AgentConfig { id, name, description, instructions, model, max_retries: max_retries as u32, default_options })
}

pub fn parse_model_config(v: &Value, field: &str) -> Result<ModelConfig, AgentError> {
    match v {
        Value::String(s) => Ok(ModelConfig { id: s.clone(), ..Default::default() }),
        Value::Object(_) => {
            let id = match v.get("id") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => {
                    return Err(AgentError::invalid(join(field, "id"), "is required: 'provider/model', e.g. 'openai/gpt-4o-mini'"))
                }
                Some(o) => return Err(AgentError::invalid(join(field, "id"), format!("expected a string, got {}", kind(o)))),
            };
            let url = opt_str(v, "url", field)?.map(str::to_owned);
            let api_key = opt_str(v, "apiKey", field)?.map(str::to_owned);
            let api = opt_str(v, "api", field)?.map(str::to_owned);
            if let Some(a) = &api {
                if a != "chat" && a != "responses" {
                    return Err(AgentError::invalid(join(field, "api"), format!("expected 'chat' or 'responses', got '{a}'")));
                }
            }
            let headers = parse_headers(v.get("headers"), &join(field, "headers"))?;
            Ok(ModelConfig { id, url, api_key, headers, api })
        }
        other => Err(AgentError::invalid(field, format!("expected 'provider/model' or {{ id, url, apiKey }}, got {}", kind(other)))),
    }
}

pub fn parse_headers(v: Option<&Value>, field: &str) -> Result<Vec<(String, String)>, AgentError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => {
                    check_header(k, s, &join(field, k))?;
                    Ok((k.clone(), s.clone()))
                }
                o => Err(AgentError::invalid(join(field, k), format!("expected a string header value, got {}", kind(o)))),
            })
            .collect(),
        Some(o) => Err(AgentError::invalid(field, format!("expected an object of header names to strings, got {}", kind(o)))),
    }
}

/// The data options of one `stream()` call, typed: `defaultOptions` merged under the call's, read once
/// by the bindings' options parser (which reads the functions beside them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallOptions {
    /// Replaces the agent's instructions when set.
    pub instructions: Option<Vec<String>>,
    /// Added after the instructions.
    pub system: Vec<String>,
    /// Sent to the model before the input, never stored.
    pub context: Vec<ModelMessage>,
    pub model_settings: ModelSettings,
    pub provider_options: Option<Map<String, Value>>,
    pub run_id: Option<String>,
    pub include_raw_chunks: bool,
    pub max_steps: Option<u32>,
    pub active_tools: Option<Vec<String>>,
    pub tool_choice: Option<ToolChoice>,
    pub require_tool_approval: bool,
    /// `toolCallConcurrency` (default 10).
    pub tool_call_concurrency: Option<usize>,
}

pub fn parse_call_options(v: &Value, field: &str) -> Result<CallOptions, AgentError> {
    if v.is_null() {
        return Ok(CallOptions::default());
    }
    if !v.is_object() {
        return Err(AgentError::invalid(field, format!("expected an object, got {}", kind(v))));
    }
    let instructions = match v.get("instructions") {
        None | Some(Value::Null) => None,
        Some(i) => Some(parse_instructions(i, &join(field, "instructions"))?),
    };
    let system = match v.get("system") {
        None | Some(Value::Null) => Vec::new(),
        Some(s) => parse_instructions(s, &join(field, "system"))?,
    };
    let context = match v.get("context") {
        None | Some(Value::Null) => Vec::new(),
        Some(c) => parse_messages(c, &join(field, "context"))?,
    };
    let model_settings = match v.get("modelSettings") {
        None | Some(Value::Null) => ModelSettings::default(),
        Some(m) => parse_model_settings(m, &join(field, "modelSettings"))?,
    };
    let provider_options = opt_object(v, "providerOptions", field)?.cloned();
    if let Some(po) = &provider_options {
        for (k, val) in po {
            if !val.is_object() {
                return Err(AgentError::invalid(
                    format!("{}.{k}", join(field, "providerOptions")),
                    format!("expected an object of that provider's options, got {}", kind(val)),
                ));
            }
        }
    }
    let run_id = opt_str(v, "runId", field)?.map(str::to_owned);
    let include_raw_chunks = opt_bool(v, "includeRawChunks", field)?.unwrap_or(false);
    let max_steps = match opt_u64(v, "maxSteps", field)? {
        Some(0) => return Err(AgentError::invalid(join(field, "maxSteps"), "expected an integer of at least 1, got 0")),
        Some(n) => Some(n.min(u32::MAX as u64) as u32),
        None => None,
    };
    let active_tools = match opt_array(v, "activeTools", field)? {
        None => None,
        Some(items) => Some(
            items
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    t.as_str().map(str::to_owned).ok_or_else(|| {
                        AgentError::invalid(join(&join(field, "activeTools"), i), format!("expected a tool name, got {}", kind(t)))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let tool_choice = match v.get("toolChoice") {
        None | Some(Value::Null) => None,
        Some(c) => Some(parse_tool_choice(c, &join(field, "toolChoice"))?),
    };
    let require_tool_approval = opt_bool(v, "requireToolApproval", field)?.unwrap_or(false);
    let tool_call_concurrency = match opt_u64(v, "toolCallConcurrency", field)? {
        Some(0) => return Err(AgentError::invalid(join(field, "toolCallConcurrency"), "expected an integer of at least 1, got 0")),
        Some(n) => Some(n.min(1000) as usize),
        None => None,
    };
    Ok(CallOptions {
        instructions,
        system,
        context,
        model_settings,
        provider_options,
        run_id,
        include_raw_chunks,
        max_steps,
        active_tools,
        tool_choice,
        require_tool_approval,
        tool_call_concurrency,
    })
}

/// `defaultOptions` under `options`: a key of the call wins; `modelSettings` and
/// `providerOptions` merge one level deeper, so a call can change one setting and keep the rest.
pub fn merge_options(defaults: &Value, options: &Value) -> Value {
    let mut out = defaults.as_object().cloned().unwrap_or_default();
    if let Some(o) = options.as_object() {
        for (k, v) in o {
            let deep = matches!(k.as_str(), "modelSettings" | "providerOptions");
            match (deep, out.get_mut(k), v) {
                (true, Some(Value::Object(base)), Value::Object(over)) => {
                    for (k2, v2) in over {
                        // providerOptions merge per provider too: { openai: { user } } under
                        // { openai: { reasoningEffort } } keeps both.
                        match (k == "providerOptions", base.get_mut(k2), v2) {
                            (true, Some(Value::Object(b2)), Value::Object(o2)) => {
                                for (k3, v3) in o2 {
                                    b2.insert(k3.clone(), v3.clone());
                                }
                            }
                            _ => {
                                base.insert(k2.clone(), v2.clone());
                            }
                        }
                    }
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Value::Object(out)
}

/// The prompt of a run: instructions (the call's, else the agent's), then `system`, then
/// `context`, then the input messages.
pub fn build_prompt(agent_instructions: &[String], opts: &CallOptions, input: Vec<ModelMessage>) -> Vec<ModelMessage> {
    let instructions = opts.instructions.as_deref().unwrap_or(agent_instructions);
    let mut out: Vec<ModelMessage> = instructions.iter().chain(&opts.system).map(|s| ModelMessage::System(s.clone())).collect();
    out.extend(opts.context.iter().cloned());
    out.extend(input);
    out
}

/// The request of the first step.
pub fn build_request(model_name: &str, prompt: Vec<ModelMessage>, opts: &CallOptions, provider: &str) -> ModelRequest {
    ModelRequest {
        model_id: model_name.to_string(),
        messages: prompt,
        settings: opts.model_settings.clone(),
        tools: Vec::new(),
        tool_choice: None,
        response_format: None,
        // The transport's own keys configure the client, not the model.
        provider_options: opts.provider_options.as_ref().and_then(|p| p.get(provider)).and_then(|v| v.as_object()).map(|o| {
            let mut o = o.clone();
            for key in super::transport::TRANSPORT_KEYS {
                o.remove(key);
            }
            o
        }),
    }
}
