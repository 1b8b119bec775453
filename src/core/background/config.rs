//! `backgroundTasks` and a tool's own `background`: which calls run in the background, with
//! which limits, and what a full manager does.

use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backpressure {
    /// Wait for a free slot.
    Queue,
    /// Tell the model the task could not start.
    Reject,
    /// Run the call in the foreground instead.
    FallbackSync,
}

/// A tool's own `background: { enabled, timeoutMs, maxRetries }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolBackground {
    pub enabled: Option<bool>,
    pub timeout_ms: Option<u64>,
    pub max_retries: Option<u32>,
}

/// `backgroundTasks` of the container or the agent.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundConfig {
    pub enabled: bool,
    pub global_concurrency: usize,
    pub per_agent_concurrency: usize,
    pub backpressure: Backpressure,
    pub default_timeout_ms: u64,
    pub default_retries: u32,
    /// `tools: 'all'`.
    pub all_tools: bool,
    /// `tools: { name: boolean | { enabled, timeoutMs } }`: (name, enabled, timeout).
    pub tools: Vec<(String, bool, Option<u64>)>,
}

impl Default for BackgroundConfig {
    fn default() -> Self {
        BackgroundConfig {
            enabled: false,
            global_concurrency: 10,
            per_agent_concurrency: 5,
            backpressure: Backpressure::Queue,
            default_timeout_ms: 300_000,
            default_retries: 0,
            all_tools: false,
            tools: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    pub timeout_ms: u64,
    pub max_retries: u32,
}

impl BackgroundConfig {
    /// Whether a call of `tool` runs in the background, and within which limits. The tool's own
    /// `enabled: false` wins over the configuration; a timeout named for the tool in the
    /// configuration wins over the tool's own.
    pub fn limits_for(&self, tool: &str, own: Option<&ToolBackground>) -> Option<TaskLimits> {
        if !self.enabled {
            return None;
        }
        let listed = self.tools.iter().find(|(name, _, _)| name == tool);
        let own_enabled = own.and_then(|b| b.enabled);
        let eligible = match own_enabled {
            Some(false) => false,
            Some(true) => true,
            None => self.all_tools || listed.is_some_and(|(_, on, _)| *on),
        };
        eligible.then(|| TaskLimits {
            timeout_ms: listed.and_then(|(_, _, t)| *t).or(own.and_then(|b| b.timeout_ms)).unwrap_or(self.default_timeout_ms),
            max_retries: own.and_then(|b| b.max_retries).unwrap_or(self.default_retries),
        })
    }
}

/// Reads `backgroundTasks` (`{ enabled, globalConcurrency, perAgentConcurrency, backpressure,
/// defaultTimeoutMs, defaultRetries, tools }`) with errors that name the field.
pub fn parse_background_config(v: &Value, field: &str) -> Result<BackgroundConfig, crate::core::error::AgentError> {
    use crate::core::error::AgentError;
    use crate::core::input::{join, kind, opt_bool, opt_str, opt_u64};
    let mut c = BackgroundConfig::default();
    if v.is_null() {
        return Ok(c);
    }
    if !v.is_object() {
        return Err(AgentError::invalid(field, format!("expected an object like {{ enabled: true }}, got {}", kind(v))));
    }
    c.enabled = opt_bool(v, "enabled", field)?.unwrap_or(true);
    let positive = |key: &str, default: usize| -> Result<usize, AgentError> {
        match opt_u64(v, key, field)? {
            Some(0) => Err(AgentError::invalid(join(field, key), "expected an integer of at least 1, got 0")),
            Some(n) => Ok(n.min(1000) as usize),
            None => Ok(default),
        }
    };
    c.global_concurrency = positive("globalConcurrency", c.global_concurrency)?;
    c.per_agent_concurrency = positive("perAgentConcurrency", c.per_agent_concurrency)?;
    c.backpressure = match opt_str(v, "backpressure", field)? {
        None | Some("queue") => Backpressure::Queue,
        Some("reject") => Backpressure::Reject,
        Some("fallback-sync") => Backpressure::FallbackSync,
        Some(other) => {
            return Err(AgentError::invalid(join(field, "backpressure"), format!("expected 'queue', 'reject' or 'fallback-sync', got '{other}'")))
        }
    };
    c.default_timeout_ms = opt_u64(v, "defaultTimeoutMs", field)?.unwrap_or(c.default_timeout_ms);
    c.default_retries = opt_u64(v, "defaultRetries", field)?.unwrap_or(0).min(100) as u32;
    match v.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "all" => c.all_tools = true,
        Some(Value::Object(map)) => {
            for (name, setting) in map {
                let path = join(&join(field, "tools"), name.as_str());
                let entry = match setting {
                    Value::Bool(b) => (name.clone(), *b, None),
                    Value::Object(_) => (name.clone(), opt_bool(setting, "enabled", &path)?.unwrap_or(true), opt_u64(setting, "timeoutMs", &path)?),
                    other => return Err(AgentError::invalid(path, format!("expected true, false or {{ enabled, timeoutMs }}, got {}", kind(other)))),
                };
                c.tools.push(entry);
            }
        }
        Some(other) => return Err(AgentError::invalid(join(field, "tools"), format!("expected 'all' or an object of tool names, got {}", kind(other)))),
    }
    Ok(c)
}

/// Reads a tool's own `background: { enabled, timeoutMs, maxRetries }`.
pub fn parse_tool_background(v: &Value, field: &str) -> Result<Option<ToolBackground>, crate::core::error::AgentError> {
    use crate::core::input::{kind, opt_bool, opt_u64};
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(ToolBackground { enabled: Some(*b), ..Default::default() })),
        Value::Object(_) => Ok(Some(ToolBackground {
            enabled: Some(opt_bool(v, "enabled", field)?.unwrap_or(true)),
            timeout_ms: opt_u64(v, "timeoutMs", field)?,
            max_retries: opt_u64(v, "maxRetries", field)?.map(|n| n.min(100) as u32),
        })),
        other => Err(crate::core::error::AgentError::invalid(field, format!("expected {{ enabled, timeoutMs, maxRetries }}, got {}", kind(other)))),
    }
}
