//! The recorded provider streams (`/work/shared/fixtures/provider-streams`, see its README) as
//! each API sends them, and the decode helper, shared by the provider tests: one loader, so every
//! test reads the same bytes a server would send.

use serde_json::Value;

use crate::core::error::AgentError;
use crate::core::model::ModelEvent;
use crate::providers::StreamDecoder;

pub(crate) const FIXTURE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/provider-streams/");

/// Chat Completions recordings (OpenAI and the providers that speak it).
pub(crate) const CHAT: &[&str] = &[
    "openai--openai-text",
    "deepseek--deepseek-reasoning",
    "deepseek--deepseek-text",
    "deepseek--deepseek-tool-call",
    "groq--groq-reasoning",
    "groq--groq-text",
    "groq--groq-tool-call",
    "mistral--mistral-incremental-tool-call",
    "mistral--mistral-text",
    "mistral--mistral-tool-call",
];

pub(crate) const ANTHROPIC: &[&str] = &[
    "anthropic--anthropic-json-tool.1",
    "anthropic--anthropic-refusal",
    "anthropic--anthropic-text",
    "anthropic--anthropic-tool-no-args",
];

pub(crate) const GOOGLE: &[&str] = &[
    "google--google-reasoning",
    "google--google-stream-tool-call-arguments",
    "google--google-text",
    "google--google-tool-call",
];

/// The Responses API recordings. Two lines of `openai--parallel-tool-call-wrapper.1` are JSON cut
/// short in the recording (`tests/json.rs` pins that).
pub(crate) const RESPONSES: &[&str] = &[OPENAI_ERROR, PARALLEL_WRAPPER, REASONING_ENCRYPTED, XAI_TEXT];
/// An `error` event (quota exceeded), then `response.failed`.
pub(crate) const OPENAI_ERROR: &str = "openai--openai-error.1";
pub(crate) const PARALLEL_WRAPPER: &str = "openai--parallel-tool-call-wrapper.1";
/// Four responses, one per step of a tool loop.
pub(crate) const REASONING_ENCRYPTED: &str = "openai--openai-reasoning-encrypted-content.1";
pub(crate) const XAI_TEXT: &str = "xai--xai-text-streaming.1";

/// The recorded `data:` payloads of one fixture, every line as it was recorded.
pub(crate) fn fixture_lines(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(format!("{FIXTURE_DIR}{name}.chunks.txt")).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect()
}

/// The payloads of one fixture that are JSON, without the lines cut short in the recording.
pub(crate) fn json_lines(name: &str) -> Vec<String> {
    fixture_lines(name).into_iter().filter(|l| serde_json::from_str::<Value>(l).is_ok()).collect()
}

/// Each payload as one unnamed SSE event: the Gemini body (Chat adds `[DONE]`, see
/// [`chat_stream`]).
pub(crate) fn data_stream(lines: &[String]) -> Vec<u8> {
    lines.iter().map(|line| format!("data: {line}\n\n")).collect::<String>().into_bytes()
}

/// The Chat Completions body: each payload as one SSE event, then `[DONE]`.
pub(crate) fn chat_stream(lines: &[String]) -> Vec<u8> {
    let mut body = data_stream(lines);
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

/// The Anthropic and Responses body: each payload as one SSE event named by its `type`. A line
/// cut short in the recording is sent without a name, as it has no readable `type`.
pub(crate) fn typed_stream(lines: &[String]) -> Vec<u8> {
    let mut body = String::new();
    for line in lines {
        if let Some(kind) =
            serde_json::from_str::<Value>(line).ok().and_then(|v| v["type"].as_str().map(str::to_string))
        {
            body.push_str(&format!("event: {kind}\n"));
        }
        body.push_str(&format!("data: {line}\n\n"));
    }
    body.into_bytes()
}

/// The Responses API payloads of a recording cut into responses, each from `response.created` on.
pub(crate) fn responses(lines: Vec<String>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in lines {
        if line.contains("\"type\":\"response.created\"") || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().unwrap().push(line);
    }
    out
}

/// Every response body of the Responses API recordings, without the lines cut short (so the
/// parallel wrapper's has no end), named `<fixture> #<response>`.
pub(crate) fn response_bodies() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for name in RESPONSES {
        for (i, lines) in responses(json_lines(name)).iter().enumerate() {
            out.push((format!("{name} #{i}"), typed_stream(lines)));
        }
    }
    out
}

/// Feeds `decoder` the pieces in order, then ends the body: the events, or the first error.
pub(crate) fn decode_pieces(decoder: impl StreamDecoder, pieces: &[&[u8]]) -> Result<Vec<ModelEvent>, AgentError> {
    let (out, end) = decode_until_error(decoder, pieces);
    end.map(|()| out)
}

/// Like [`decode_pieces`], but keeps the events that came before an error, as a caller
/// streaming them would have seen them.
pub(crate) fn decode_until_error(
    mut decoder: impl StreamDecoder,
    pieces: &[&[u8]],
) -> (Vec<ModelEvent>, Result<(), AgentError>) {
    let mut out = Vec::new();
    let end = pieces.iter().try_for_each(|piece| decoder.push(piece, &mut out)).and_then(|()| decoder.end(&mut out));
    (out, end)
}

/// A body that stops before the reply ends is a retryable error that says so.
pub(crate) fn assert_cut_short(result: Result<Vec<ModelEvent>, AgentError>, body: &str) {
    match result {
        Err(AgentError::ApiCall { message, retryable, .. }) => {
            assert_eq!(message, "The connection closed before the model finished its response");
            assert!(retryable);
        }
        other => panic!("{body:?} gave {other:?}"),
    }
}

/// An event that is not JSON is an error, not retryable, quoting the event's first 200 characters.
pub(crate) fn assert_not_json(err: AgentError, data: &str) {
    let expected: String = data.chars().take(200).collect();
    match err {
        AgentError::ApiCall { message, retryable, .. } => {
            assert_eq!(message, format!("The model's stream sent an event that is not valid JSON: {expected}"));
            assert!(!retryable);
        }
        other => panic!("{other:?}"),
    }
}

/// Header pairs as the request builders write them.
pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// An endpoint of `provider` at `base_url`, with `key`. (The builders are called directly: the
/// API the dispatch would look at does not matter here.)
pub(crate) fn endpoint_at(provider: &str, base_url: &str, key: Option<&str>) -> crate::providers::Endpoint {
    crate::providers::Endpoint {
        provider: provider.into(),
        api: crate::providers::Api::Chat,
        base_url: base_url.into(),
        api_key: key.map(Into::into),
        headers: vec![],
    }
}
