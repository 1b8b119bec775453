//! How a Responses API call travels: HTTP streaming (`fetch`), or a `response.create` message
//! on a WebSocket whose events come back as messages (`providerOptions.<provider>.transport`).
//!
//! The choice, its options and the message are worked out here, without I/O; the platform opens
//! and pools the sockets behind `Env::socket`.

use serde_json::{Map, Value};

use super::error::AgentError;
use super::wire::{Api, HttpRequest};

/// `transport` and `websocket` of a provider's options.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Transport {
    #[default]
    Fetch,
    Socket(SocketOptions),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SocketOptions {
    /// `websocket.url`; by default the base URL's `/responses` with `ws(s)://`.
    pub url: Option<String>,
    /// `websocket.closeOnFinish` (default true): close the socket when the run ends.
    pub close_on_finish: bool,
    /// `'auto'`: use HTTP streaming when no WebSocket can be had.
    pub fallback: bool,
}

/// The provider-option keys that configure the transport; they never go into a request body.
pub const TRANSPORT_KEYS: [&str; 2] = ["transport", "websocket"];

/// Reads the transport from one provider's options (`field` names them in errors). `'websocket'`
/// needs the Responses API (`api`); `'auto'` quietly means `fetch` on any other API, and on a
/// model object (`api` is `None`), which does its own transport.
pub fn parse(options: Option<&Map<String, Value>>, api: Option<Api>, field: &str) -> Result<Transport, AgentError> {
    let Some(options) = options else { return Ok(Transport::Fetch) };
    let fallback = match options.get("transport") {
        None | Some(Value::Null) => return Ok(Transport::Fetch),
        Some(Value::String(s)) if s == "fetch" => return Ok(Transport::Fetch),
        Some(Value::String(s)) if s == "auto" => true,
        Some(Value::String(s)) if s == "websocket" => false,
        Some(other) => {
            return Err(AgentError::invalid(
                format!("{field}.transport"),
                format!("expected 'websocket', 'fetch' or 'auto', got {}", describe(other)),
            ))
        }
    };
    let mut socket = SocketOptions { url: None, close_on_finish: true, fallback };
    match options.get("websocket") {
        None | Some(Value::Null) => {}
        Some(Value::Object(ws)) => {
            match ws.get("url") {
                None | Some(Value::Null) => {}
                Some(Value::String(url)) if is_socket_url(url) => socket.url = Some(url.trim_end_matches('/').to_owned()),
                Some(other) => {
                    return Err(AgentError::invalid(
                        format!("{field}.websocket.url"),
                        format!("expected a ws://, wss://, http:// or https:// URL, got {}", describe(other)),
                    ))
                }
            }
            match ws.get("closeOnFinish") {
                None | Some(Value::Null) => {}
                Some(Value::Bool(b)) => socket.close_on_finish = *b,
                Some(other) => {
                    return Err(AgentError::invalid(
                        format!("{field}.websocket.closeOnFinish"),
                        format!("expected true or false, got {}", describe(other)),
                    ))
                }
            }
        }
        Some(other) => {
            return Err(AgentError::invalid(
                format!("{field}.websocket"),
                format!("expected an object such as {{ url, closeOnFinish }}, got {}", describe(other)),
            ))
        }
    }
    if api != Some(Api::Responses) {
        if fallback {
            return Ok(Transport::Fetch);
        }
        return Err(AgentError::invalid(
            format!("{field}.transport"),
            "'websocket' streams the OpenAI Responses API only; this model uses another API \
             (use { api: 'responses' } in the model config, or transport 'fetch')",
        ));
    }
    if !cfg!(feature = "websocket") {
        // 'auto' means HTTP streaming when no WebSocket can be had, and this build has none.
        if fallback {
            return Ok(Transport::Fetch);
        }
        return Err(super::features::not_built(format!("{field}.transport"), "the WebSocket transport", "websocket"));
    }
    Ok(Transport::Socket(socket))
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => super::input::kind(other).to_string(),
    }
}

fn is_socket_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    ["ws://", "wss://", "http://", "https://"].iter().any(|s| lower.starts_with(s)) && !url.chars().any(char::is_whitespace)
}

/// One Responses call to send on a socket.
#[derive(Clone, Debug, PartialEq)]
pub struct SocketRequest {
    /// The run it belongs to: its sockets close when it ends (`close_on_finish`), or on
    /// `output.transport.close()`.
    pub run_id: String,
    /// `ws://` or `wss://`.
    pub url: String,
    /// The request's headers (authorization), sent with the handshake where the runtime can.
    pub headers: Vec<(String, String)>,
    /// The `response.create` message.
    pub message: String,
    /// The request continues a response (`previous_response_id`): it may not wait for, or skip
    /// past, a response still streaming on the same socket.
    pub follow_up: bool,
    pub close_on_finish: bool,
}

/// Why a socket could not carry the call.
#[derive(Debug)]
pub enum SocketError {
    /// No WebSocket here, or none that can carry the request (no way to send its key), or the
    /// connection could not be opened: `'auto'` falls back to HTTP streaming.
    Unavailable(AgentError),
    /// The socket is there but the call failed.
    Failed(AgentError),
}

/// The socket form of a Responses HTTP request: the same body as a `response.create` message
/// (without `stream`, which a socket implies, and `background`, which it does not support), to
/// `options.url` or the request URL with `ws(s)://`.
pub fn socket_request(run_id: &str, http: &HttpRequest, options: &SocketOptions) -> Result<SocketRequest, AgentError> {
    let body: Value = serde_json::from_str(&http.body).map_err(|e| AgentError::api(e.to_string(), false))?;
    let Value::Object(mut body) = body else { return Err(AgentError::api("the request body is not a JSON object", false)) };
    body.remove("stream");
    body.remove("background");
    let follow_up = body.get("previous_response_id").is_some_and(|v| !v.is_null());
    let mut message = Map::new();
    message.insert("type".into(), "response.create".into());
    message.extend(body);
    let url = options.url.as_deref().unwrap_or(&http.url);
    let url = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => format!("wss://{rest}"),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => format!("ws://{rest}"),
        _ => url.to_owned(),
    };
    Ok(SocketRequest {
        run_id: run_id.to_owned(),
        url,
        headers: http.headers.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("content-type")).cloned().collect(),
        message: Value::Object(message).to_string(),
        follow_up,
        close_on_finish: options.close_on_finish,
    })
}

/// Whether a socket message is the last of its response: `response.completed`, `.incomplete`,
/// `.failed`, or an `error`.
pub fn ends_response(message: &str) -> bool {
    let mut kind = None;
    let mut r = super::json::Reader::new(message);
    let _ = r.object(&mut |r, key| {
        if key == "type" {
            kind = r.opt_string()?.map(|k| k.into_owned());
        }
        Ok(())
    });
    matches!(kind.as_deref(), Some("response.completed" | "response.incomplete" | "response.failed" | "error"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_websocket_left_out_of_the_build_is_refused_and_auto_streams_over_http() {
        let parse_r = |v: Value| parse(Some(&opts(v)), Some(Api::Responses), "options.providerOptions.openai");
        let auto = parse_r(json!({ "transport": "auto" })).unwrap();
        let socket = parse_r(json!({ "transport": "websocket" }));
        if cfg!(feature = "websocket") {
            assert!(matches!(auto, Transport::Socket(_)) && matches!(socket, Ok(Transport::Socket(_))));
        } else {
            assert_eq!(auto, Transport::Fetch);
            let text = socket.unwrap_err().to_string();
            assert!(text.starts_with("options.providerOptions.openai.transport: this build of wasm-agent leaves out the WebSocket transport"), "{text}");
            assert!(text.contains("`websocket`"), "{text}");
        }
    }

    #[test]
    #[cfg(feature = "websocket")]
    fn the_transport_options_and_their_errors() {
        let parse_r = |v: Value| parse(Some(&opts(v)), Some(Api::Responses), "options.providerOptions.openai");
        assert_eq!(parse(None, Some(Api::Responses), "f").unwrap(), Transport::Fetch);
        assert_eq!(parse_r(json!({})).unwrap(), Transport::Fetch);
        assert_eq!(parse_r(json!({ "transport": "fetch" })).unwrap(), Transport::Fetch);
        assert_eq!(
            parse_r(json!({ "transport": "websocket" })).unwrap(),
            Transport::Socket(SocketOptions { url: None, close_on_finish: true, fallback: false })
        );
        assert_eq!(
            parse_r(json!({ "transport": "auto", "websocket": { "url": "wss://x.test/v1/responses/", "closeOnFinish": false } }))
                .unwrap(),
            Transport::Socket(SocketOptions { url: Some("wss://x.test/v1/responses".into()), close_on_finish: false, fallback: true })
        );
        let err = |v: Value| parse_r(v).unwrap_err().to_string();
        assert!(err(json!({ "transport": "sse" })).contains("options.providerOptions.openai.transport: expected 'websocket', 'fetch' or 'auto', got 'sse'"));
        assert!(err(json!({ "transport": "websocket", "websocket": true })).contains("openai.websocket: expected an object"));
        assert!(err(json!({ "transport": "websocket", "websocket": { "url": "ftp://x" } })).contains("openai.websocket.url: expected a ws://"));
        assert!(err(json!({ "transport": "websocket", "websocket": { "closeOnFinish": "no" } })).contains("closeOnFinish: expected true or false, got 'no'"));
        // Other APIs: 'auto' is fetch, 'websocket' is an error that says why.
        let chat = |v: Value| parse(Some(&opts(v)), Some(Api::Chat), "o");
        assert_eq!(chat(json!({ "transport": "auto" })).unwrap(), Transport::Fetch);
        assert!(chat(json!({ "transport": "websocket" })).unwrap_err().to_string().contains("Responses API only"));
    }

    #[test]
    fn a_request_becomes_a_response_create_message_on_the_socket_url() {
        let http = HttpRequest {
            url: "https://api.openai.com/v1/responses".into(),
            headers: vec![("content-type".into(), "application/json".into()), ("authorization".into(), "Bearer k".into())],
            body: json!({ "model": "gpt-5", "input": [], "stream": true, "store": false }).to_string(),
        };
        let options = SocketOptions { url: None, close_on_finish: true, fallback: false };
        let req = socket_request("run1", &http, &options).unwrap();
        assert_eq!(req.url, "wss://api.openai.com/v1/responses");
        assert_eq!(req.headers, vec![("authorization".to_string(), "Bearer k".to_string())]);
        let message: Value = serde_json::from_str(&req.message).unwrap();
        assert_eq!(message, json!({ "type": "response.create", "model": "gpt-5", "input": [], "store": false }));
        assert!(req.message.starts_with(r#"{"type":"response.create""#), "the type comes first");
        assert!(!req.follow_up);

        let local = HttpRequest { url: "http://127.0.0.1:9/v1/responses".into(), ..http.clone() };
        assert_eq!(socket_request("r", &local, &options).unwrap().url, "ws://127.0.0.1:9/v1/responses");
        let own = SocketOptions { url: Some("wss://proxy.test/ws".into()), ..options.clone() };
        assert_eq!(socket_request("r", &http, &own).unwrap().url, "wss://proxy.test/ws");
        let follow = HttpRequest { body: json!({ "previous_response_id": "resp_1" }).to_string(), ..http };
        assert!(socket_request("r", &follow, &options).unwrap().follow_up);
    }

    #[test]
    fn the_last_message_of_a_response_is_recognised() {
        for last in ["response.completed", "response.incomplete", "response.failed", "error"] {
            assert!(ends_response(&json!({ "type": last, "response": { "output": [{ "type": "x" }] } }).to_string()), "{last}");
        }
        for other in [json!({ "type": "response.output_text.delta", "delta": "response.completed" }), json!({}), json!("text")] {
            assert!(!ends_response(&other.to_string()), "{other}");
        }
        assert!(!ends_response("not json"));
    }
}
