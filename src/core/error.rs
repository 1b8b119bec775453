//! The one error type of the core. Each variant maps to one JavaScript error `name` (SPEC §11);
//! the bindings turn it into a real `Error` with that name, `message`, and `status`/`body` when set.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum AgentError {
    /// Bad configuration or options: JavaScript `TypeError`. `field` is the path the user wrote,
    /// e.g. `options.modelSettings.temperature`.
    InvalidArgument { field: String, message: String },
    /// The model API failed: HTTP status, network failure, or a broken stream.
    ApiCall {
        message: String,
        status: Option<u16>,
        body: Option<String>,
        /// Whether trying again may help (network errors, 408, 409, 429, 5xx).
        retryable: bool,
        /// Seconds (or milliseconds, see `retry_after_ms`) the server asked us to wait.
        retry_after_ms: Option<u64>,
    },
    /// The run was aborted by the caller.
    Abort { reason: Option<String> },
    Tool { message: String },
    Storage { message: String },
    Validation { message: String },
}

impl AgentError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        AgentError::InvalidArgument { field: field.into(), message: message.into() }
    }

    /// An API error that is not tied to an HTTP status (network failure, bad stream data).
    pub fn api(message: impl Into<String>, retryable: bool) -> Self {
        AgentError::ApiCall { message: message.into(), status: None, body: None, retryable, retry_after_ms: None }
    }

    /// The JavaScript `name` of this error.
    pub fn name(&self) -> &'static str {
        match self {
            AgentError::InvalidArgument { .. } => "TypeError",
            AgentError::ApiCall { .. } => "APICallError",
            AgentError::Abort { .. } => "AbortError",
            AgentError::Tool { .. } => "ToolError",
            AgentError::Storage { .. } => "StorageError",
            AgentError::Validation { .. } => "ValidationError",
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            AgentError::ApiCall { status, .. } => *status,
            _ => None,
        }
    }

    pub fn body(&self) -> Option<&str> {
        match self {
            AgentError::ApiCall { body, .. } => body.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::InvalidArgument { field, message } => write!(f, "{field}: {message}"),
            AgentError::ApiCall { message, .. } => f.write_str(message),
            AgentError::Abort { reason: Some(r) } => write!(f, "The run was aborted: {r}"),
            AgentError::Abort { reason: None } => f.write_str("The run was aborted"),
            AgentError::Tool { message }
            | AgentError::Storage { message }
            | AgentError::Validation { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for AgentError {}
