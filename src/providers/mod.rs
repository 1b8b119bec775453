//! Model APIs: for each, a request builder (`ModelRequest` → HTTP request) and an incremental
//! stream decoder (response bytes → `ModelEvent`s). Pure Rust, bytes in and events out: no I/O,
//! no JavaScript. The provider table (`registry`) maps `'provider/model'` strings to an API, a
//! base URL and the environment variables that hold its key and URL.
//!
//! Each API is a cargo feature (`chat`, `responses`, `anthropic`, `google`; all on by default).
// A build that leaves some APIs out leaves some shared helpers unused.
#![cfg_attr(not(all(feature = "chat", feature = "responses", feature = "anthropic", feature = "google")), allow(dead_code, unused_imports))]

#[cfg(feature = "ai-sdk-model")]
pub mod ai_sdk_model;
#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "google")]
pub mod google;
#[cfg(feature = "chat")]
pub mod openai_chat;
#[cfg(feature = "responses")]
pub mod openai_responses;
#[cfg(feature = "recall")]
pub mod embeddings;
pub mod registry;
pub mod sse;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

/// The step a response's events make, as the loop builds it (for the providers' tests).
#[cfg(test)]
pub(crate) fn step_of(events: Vec<ModelEvent>) -> crate::core::step::StepResult {
    use crate::core::step::{IdSource, StepBuilder};
    let mut step = StepBuilder::new(IdSource::new("t".into()), "m".into(), String::new(), Vec::new(), 0.0);
    let mut chunks = Vec::new();
    for event in events {
        step.apply(event, &mut chunks).unwrap();
    }
    step.close(&mut chunks, true);
    step.into_parts().1
}

use crate::core::error::AgentError;
pub use crate::core::json;
use crate::core::model::{ModelEvent, ModelRequest, Usage, Warning};
pub use crate::core::wire::{Api, Endpoint, HttpRequest, Protocol, StreamDecoder};

/// The header that carries the key on the OpenAI APIs: the provider's own (Azure's `api-key`),
/// else a bearer token.
pub(crate) fn key_header(endpoint: &Endpoint) -> Option<(String, String)> {
    let key = endpoint.api_key.as_ref()?;
    Some(match registry::key_header(&endpoint.provider) {
        Some(header) => (header.into(), key.clone()),
        None => ("authorization".into(), format!("Bearer {key}")),
    })
}

/// A structured-output schema as both OpenAI APIs name it: `{ name, schema, strict, description? }`
/// (with `type: 'json_schema'` first for the Responses API's `text.format`).
pub(crate) fn json_schema(format: &crate::core::model::ResponseFormat, typed: bool) -> serde_json::Value {
    use serde_json::{Map, Value};
    let mut o = Map::new();
    if typed {
        o.insert("type".into(), "json_schema".into());
    }
    o.insert("name".into(), format.name.clone().into());
    if let Some(d) = &format.description {
        o.insert("description".into(), d.clone().into());
    }
    o.insert("schema".into(), format.schema.clone());
    o.insert("strict".into(), format.strict.into());
    Value::Object(o)
}

/// The wire protocol of `api`, for the core's `HttpModel`.
pub fn protocol(api: Api) -> &'static dyn Protocol {
    match api {
        #[cfg(feature = "chat")]
        Api::Chat => &Chat,
        #[cfg(feature = "responses")]
        Api::Responses => &Responses,
        #[cfg(feature = "anthropic")]
        Api::Anthropic => &Anthropic,
        #[cfg(feature = "google")]
        Api::Google => &Google,
        #[allow(unreachable_patterns)]
        _ => &Missing,
    }
}

/// The model at `endpoint`, spoken with its API's protocol (what the bindings and the core's
/// native tests hand a run).
pub fn http_model(endpoint: Endpoint) -> std::rc::Rc<dyn crate::core::model_api::ModelApi> {
    std::rc::Rc::new(crate::core::model_api::HttpModel { protocol: protocol(endpoint.api), endpoint })
}

/// Whether this build speaks `api`: a build that left it out says which cargo feature to turn on
/// (`field` names the model in the error).
pub fn check_available(api: Api, field: &str) -> Result<(), AgentError> {
    let (name, feature, built) = match api {
        Api::Chat => ("OpenAI Chat Completions", "chat", cfg!(feature = "chat")),
        Api::Responses => ("the OpenAI Responses API", "responses", cfg!(feature = "responses")),
        Api::Anthropic => ("Anthropic Messages", "anthropic", cfg!(feature = "anthropic")),
        Api::Google => ("Google Gemini", "google", cfg!(feature = "google")),
    };
    if built {
        return Ok(());
    }
    Err(crate::core::features::not_built(field, name, feature))
}

#[cfg(feature = "chat")]
struct Chat;
#[cfg(feature = "responses")]
struct Responses;
#[cfg(feature = "anthropic")]
struct Anthropic;
#[cfg(feature = "google")]
struct Google;

/// An API this build left out; `check_available` refuses its models before a call is built.
struct Missing;

impl Protocol for Missing {
    fn build_request(&self, endpoint: &Endpoint, _req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
        Err(check_available(endpoint.api, "model").err().unwrap_or_else(|| AgentError::api("this API is not built in", false)))
    }
    fn decoder(&self, _include_raw: bool) -> Box<dyn StreamDecoder> {
        Box::new(Refuses)
    }
}

/// The decoder of a left-out API: never reached, since its requests are never built.
struct Refuses;

impl StreamDecoder for Refuses {
    fn push(&mut self, _bytes: &[u8], _out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        Err(AgentError::api("this build of wasm-agent cannot read this API's stream", false))
    }
    fn end(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        Err(AgentError::api("this build of wasm-agent cannot read this API's stream", false))
    }
}

#[cfg(feature = "chat")]
impl Protocol for Chat {
    fn build_request(&self, endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
        openai_chat::build_request(endpoint, req)
    }
    fn decoder(&self, include_raw: bool) -> Box<dyn StreamDecoder> {
        Box::new(openai_chat::ChatDecoder::new(include_raw))
    }
}

#[cfg(feature = "responses")]
impl Protocol for Responses {
    fn build_request(&self, endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
        openai_responses::build_request(endpoint, req)
    }
    fn decoder(&self, include_raw: bool) -> Box<dyn StreamDecoder> {
        Box::new(openai_responses::ResponsesDecoder::new(include_raw))
    }
}

#[cfg(feature = "anthropic")]
impl Protocol for Anthropic {
    fn build_request(&self, endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
        // The browser-access header is part of `endpoint.headers` when the agent runs in a page.
        anthropic::build_request(endpoint, req, false)
    }
    fn decoder(&self, include_raw: bool) -> Box<dyn StreamDecoder> {
        Box::new(anthropic::AnthropicDecoder::new(include_raw))
    }
}

#[cfg(feature = "google")]
impl Protocol for Google {
    fn build_request(&self, endpoint: &Endpoint, req: &ModelRequest) -> Result<(HttpRequest, Vec<Warning>), AgentError> {
        google::build_request(endpoint, req)
    }
    fn decoder(&self, include_raw: bool) -> Box<dyn StreamDecoder> {
        Box::new(google::GoogleDecoder::new(include_raw))
    }
}

// Small helpers every provider's builder and decoder share.

/// Replaces a header of the same name (names are case-insensitive), or adds it.
pub(crate) fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    match headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        Some(slot) => *slot = (name.to_string(), value.to_string()),
        None => headers.push((name.to_string(), value.to_string())),
    }
}

/// `reasoningEffort` → `reasoning_effort`; keys without capitals are returned as they are.
pub(crate) fn snake_case(key: &str) -> Cow<'_, str> {
    if !key.bytes().any(|b| b.is_ascii_uppercase()) {
        return Cow::Borrowed(key);
    }
    let mut out = String::with_capacity(key.len() + 4);
    for (i, c) in key.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

pub(crate) fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len() && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

pub(crate) fn not_json(data: &str) -> AgentError {
    AgentError::api(format!("The model's stream sent an event that is not valid JSON: {}", head(data)), false)
}

/// Adds `text` to `to` as a paragraph of its own (the APIs that take one system text get every
/// system message so). Empty text adds nothing.
pub(crate) fn append_paragraph(to: &mut String, text: &str) {
    if !text.is_empty() {
        if !to.is_empty() {
            to.push_str("\n\n");
        }
        to.push_str(text);
    }
}

/// An event the decoder could not read: not JSON, or JSON of a shape it does not know. A shape
/// error is only reported as such for an event that is JSON all through.
pub(crate) fn unreadable(e: json::Error, data: &str) -> AgentError {
    if e.syntax || json::validate(data).is_err() {
        return not_json(data);
    }
    AgentError::api(format!("The model's stream sent an event this client does not understand ({e}): {}", head(data)), false)
}

/// The body ended before the reply did.
pub(crate) fn cut_short() -> AgentError {
    AgentError::api("The connection closed before the model finished its response", true)
}

/// What `push_sse` needs of a decoder of an SSE-framed API.
pub(crate) trait SseEvents {
    /// The framing decoder, and a scratch list of events kept to reuse its allocation.
    fn framing(&mut self) -> (&mut sse::SseDecoder, &mut Vec<sse::SseEvent>);
    /// The reply ended: whatever follows is ignored.
    fn ended(&self) -> bool;
    /// One complete event.
    fn on_event(&mut self, event: sse::SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), AgentError>;
}

/// `StreamDecoder::push` of an SSE-framed API: the complete events in order, until one fails or
/// the reply ends.
pub(crate) fn push_sse<D: SseEvents>(d: &mut D, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
    if d.ended() {
        return Ok(());
    }
    let (framing, scratch) = d.framing();
    let mut events = std::mem::take(scratch);
    framing.push(bytes, &mut events);
    let mut result = Ok(());
    for event in events.drain(..) {
        if d.ended() {
            break;
        }
        result = d.on_event(event, out);
        if result.is_err() {
            break;
        }
    }
    events.clear();
    *d.framing().1 = events;
    result
}

pub(crate) use crate::core::error::head;

pub(crate) fn is_url(data: &str) -> bool {
    ["http://", "https://", "data:"].iter().any(|p| starts_with_ignore_case(data, p))
}

/// A URL as it is, bare base64 as a `data:` URL.
pub(crate) fn file_url(data: &str, media_type: &str) -> String {
    if is_url(data) {
        data.to_string()
    } else {
        format!("data:{media_type};base64,{data}")
    }
}

/// The `message` of an error object (or the error itself when it is a string), else its text.
pub(crate) fn error_message(error: &str) -> String {
    let mut r = json::Reader::new(error);
    let message = if error.starts_with('"') {
        r.string().ok()
    } else {
        let mut message = None;
        let read = r.object(&mut |r, key| {
            if key == "message" {
                message = r.opt_string()?;
            }
            Ok(())
        });
        read.ok().and(message)
    };
    message.map_or_else(|| error.to_string(), Cow::into_owned)
}

/// An OpenAI-style `usage` object, or `None` for `null`: `keys` names its input, output and total
/// counts, the details objects and the cached and reasoning counts in them. Counts written as
/// floats (`12.0`) are read as whole numbers.
pub(crate) fn openai_usage(r: &mut json::Reader<'_>, keys: &UsageKeys) -> json::Result<Option<Usage>> {
    if r.is_null() {
        return Ok(None);
    }
    let mut usage = Usage::default();
    r.object(&mut |r, key| {
        if key == keys.input {
            usage.input_tokens = r.opt_count()?;
        } else if key == keys.output {
            usage.output_tokens = r.opt_count()?;
        } else if key == "total_tokens" {
            usage.total_tokens = r.opt_count()?;
        } else if key == keys.input_details && !r.is_null() {
            r.object(&mut |r, key| {
                if key == "cached_tokens" {
                    usage.cached_input_tokens = r.opt_count()?;
                }
                Ok(())
            })?;
        } else if key == keys.output_details && !r.is_null() {
            r.object(&mut |r, key| {
                if key == "reasoning_tokens" {
                    usage.reasoning_tokens = r.opt_count()?;
                }
                Ok(())
            })?;
        }
        Ok(())
    })?;
    Ok(Some(usage))
}

/// The key names of `openai_usage`: Chat Completions and the Responses API name them apart.
pub(crate) struct UsageKeys {
    pub input: &'static str,
    pub output: &'static str,
    pub input_details: &'static str,
    pub output_details: &'static str,
}

#[cfg(test)]
mod available {
    use super::*;

    #[test]
    fn an_api_left_out_of_the_build_is_refused_naming_its_feature() {
        let apis = [
            (Api::Chat, cfg!(feature = "chat"), "`chat`"),
            (Api::Responses, cfg!(feature = "responses"), "`responses`"),
            (Api::Anthropic, cfg!(feature = "anthropic"), "`anthropic`"),
            (Api::Google, cfg!(feature = "google"), "`google`"),
        ];
        for (api, built, feature) in apis {
            match check_available(api, "config.model") {
                Ok(()) => assert!(built, "{api:?} is not built in"),
                Err(e) => {
                    assert!(!built, "{api:?} is built in");
                    let text = e.to_string();
                    assert!(text.starts_with("config.model: this build of wasm-agent leaves out") && text.contains(feature), "{text}");
                    let endpoint = Endpoint { provider: "p".into(), api, base_url: String::new(), api_key: None, headers: vec![] };
                    let built = protocol(api).build_request(&endpoint, &ModelRequest::default());
                    assert!(built.is_err_and(|e| e.to_string().contains(feature)), "a call is never built for it");
                }
            }
        }
    }
}
