//! What a model call is, as the core sees it: the HTTP request a provider builds, where it goes
//! (`Endpoint`, `Api`), and the two traits the core drives a model through.
//!
//! - `Protocol`: one model API's wire format (request builder and stream decoder). Providers
//!   implement it; the bindings pick one per endpoint and inject it.
//! - `ModelApi`: the model a run talks to. `HttpModel` (below, in `model_api.rs`) sends a
//!   `Protocol`'s requests through `Env` with retries; a host model object (an AI SDK model)
//!   implements it directly and streams its own events.
//!
//! Nothing here knows a provider's format or JavaScript.

use super::error::AgentError;
use super::model::{ModelEvent, ModelRequest, Warning};

/// An HTTP request ready for the platform's `fetch`.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: String,
}

/// Where and how to reach a model: the resolved form of `'provider/model'` or `{ id, url, ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    /// The provider prefix, e.g. `openai`, `groq`.
    pub provider: String,
    /// The wire protocol.
    pub api: Api,
    /// Base URL without a trailing slash, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Headers from the model config, sent with every request.
    pub headers: Vec<(String, String)>,
}

/// The wire protocols this package speaks over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions and the providers that speak it.
    Chat,
    /// The OpenAI Responses API (`{ api: 'responses' }`).
    Responses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `streamGenerateContent`.
    Google,
}

/// Incremental decoder of one response body.
pub trait StreamDecoder {
    /// Feeds the next bytes of the body, in any split; appends every event they complete.
    fn push(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError>;
    /// The body ended; appends what the end completes, or fails when the stream stopped early.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), AgentError>;
}

/// One model API's wire format: providers implement it.
pub trait Protocol {
    /// The HTTP request of one model call, and what of the request the API cannot honour.
    fn build_request(&self, endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError>;
    /// A decoder for one response body. With `include_raw`, every provider event is also
    /// reported as `ModelEvent::Raw`.
    fn decoder(&self, include_raw: bool) -> Box<dyn StreamDecoder>;
}
