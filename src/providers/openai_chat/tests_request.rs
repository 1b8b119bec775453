//! Tests of the Chat Completions request builder: URL, headers, body fields, messages.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::build_request;
use crate::core::error::AgentError;
use crate::core::model::{
    AssistantPart, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart, ToolSpec, UserPart, Warning,
};
use crate::providers::tests::fixtures::{endpoint_at, pairs};
use crate::providers::{snake_case, Endpoint, HttpRequest};

fn endpoint(key: Option<&str>) -> Endpoint {
    endpoint_at("openai", "https://api.openai.com/v1", key)
}

fn request(messages: Vec<ModelMessage>) -> ModelRequest {
    ModelRequest { model_id: "gpt-4o-mini".into(), messages, ..ModelRequest::default() }
}

fn hello() -> ModelRequest {
    request(vec![ModelMessage::User(vec![UserPart::Text("Hello".into())])])
}

fn build(req: &ModelRequest) -> (HttpRequest, Value, Vec<Warning>) {
    let (http, warnings) = build_request(&endpoint(Some("sk-test")), req).unwrap();
    let body = serde_json::from_str(&http.body).unwrap();
    (http, body, warnings)
}

fn body_of(req: &ModelRequest) -> Value {
    build(req).1
}

fn messages_of(messages: Vec<ModelMessage>) -> Value {
    body_of(&request(messages))["messages"].clone()
}

#[test]
fn minimal_request() {
    let (http, body, warnings) = build(&hello());
    assert_eq!(http.url, "https://api.openai.com/v1/chat/completions");
    assert_eq!(http.headers, pairs(&[("content-type", "application/json"), ("authorization", "Bearer sk-test")]));
    assert_eq!(
        body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [{ "role": "user", "content": "Hello" }],
            "stream": true,
            "stream_options": { "include_usage": true },
        })
    );
    assert!(warnings.is_empty());
}

#[test]
fn no_key_no_authorization_header() {
    let (http, _) = build_request(&endpoint(None), &hello()).unwrap();
    assert_eq!(http.headers, pairs(&[("content-type", "application/json")]));
}

#[test]
fn later_headers_win_case_insensitively() {
    let mut ep = endpoint(Some("sk-test"));
    ep.headers = pairs(&[("Authorization", "Basic abc"), ("X-Team", "model"), ("x-only-model", "1")]);
    let mut req = hello();
    req.settings.headers = pairs(&[("x-team", "call"), ("X-Call", "2")]);
    let (http, _) = build_request(&ep, &req).unwrap();
    assert_eq!(
        http.headers,
        pairs(&[
            ("content-type", "application/json"),
            ("Authorization", "Basic abc"),
            ("x-team", "call"),
            ("x-only-model", "1"),
            ("X-Call", "2"),
        ])
    );
}

#[test]
fn trailing_slash_on_the_base_url_is_not_doubled() {
    let mut ep = endpoint(None);
    ep.base_url = "http://127.0.0.1:11434/v1/".into();
    assert_eq!(build_request(&ep, &hello()).unwrap().0.url, "http://127.0.0.1:11434/v1/chat/completions");
}

#[test]
fn every_setting_has_its_field() {
    let mut req = hello();
    req.settings = ModelSettings {
        temperature: Some(0.25),
        max_output_tokens: Some(512),
        top_p: Some(0.9),
        presence_penalty: Some(0.5),
        frequency_penalty: Some(-0.5),
        stop_sequences: vec!["END".into(), "\n\n".into()],
        seed: Some(-42),
        max_retries: Some(3),
        ..ModelSettings::default()
    };
    let (_, body, warnings) = build(&req);
    assert_eq!(body["temperature"], json!(0.25));
    assert_eq!(body["max_tokens"], json!(512));
    assert_eq!(body["top_p"], json!(0.9));
    assert_eq!(body["presence_penalty"], json!(0.5));
    assert_eq!(body["frequency_penalty"], json!(-0.5));
    assert_eq!(body["stop"], json!(["END", "\n\n"]));
    assert_eq!(body["seed"], json!(-42));
    // Retries are the client's business, not the API's.
    assert_eq!(body.as_object().unwrap().len(), 11);
    assert!(warnings.is_empty());
}

#[test]
fn unset_settings_and_empty_stop_are_left_out() {
    let mut req = hello();
    req.settings.stop_sequences = vec![];
    let body = body_of(&req);
    for key in [
        "temperature",
        "max_tokens",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
        "stop",
        "seed",
        "tools",
        "tool_choice",
    ] {
        assert!(body.get(key).is_none(), "{key}");
    }
}

#[test]
fn top_k_is_left_out_with_a_warning() {
    let mut req = hello();
    req.settings.top_k = Some(40.0);
    let (http, body, warnings) = build(&req);
    assert!(body.get("top_k").is_none() && !http.body.contains("40"));
    assert_eq!(warnings.len(), 1);
    assert_eq!((warnings[0].kind, warnings[0].setting.as_deref()), ("unsupported-setting", Some("topK")));
    assert!(warnings[0].message.as_deref().unwrap().contains("topK"));
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "weather".into(),
        description: Some("Current weather".into()),
        parameters: json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] }),
    }
}

#[test]
fn tools_and_tool_choice() {
    let mut req = hello();
    req.tools = vec![
        weather_tool(),
        ToolSpec { name: "now".into(), description: None, parameters: json!({ "type": "object" }) },
    ];
    let body = body_of(&req);
    assert_eq!(
        body["tools"],
        json!([
            { "type": "function", "function": { "name": "weather", "description": "Current weather",
              "parameters": { "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] } } },
            { "type": "function", "function": { "name": "now", "parameters": { "type": "object" } } },
        ])
    );
    assert!(body.get("tool_choice").is_none());
    let choices = [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
        (ToolChoice::Tool("weather".into()), json!({ "type": "function", "function": { "name": "weather" } })),
    ];
    for (choice, wire) in choices {
        req.tool_choice = Some(choice);
        assert_eq!(body_of(&req)["tool_choice"], wire);
    }
}

#[test]
fn tool_choice_without_tools_is_not_sent() {
    let mut req = hello();
    req.tool_choice = Some(ToolChoice::Required);
    assert!(body_of(&req).get("tool_choice").is_none());
}

#[test]
fn system_and_user_text() {
    let got = messages_of(vec![
        ModelMessage::System("Be brief.".into()),
        ModelMessage::User(vec![UserPart::Text("one".into())]),
        ModelMessage::User(vec![UserPart::Text("a".into()), UserPart::Text("b".into())]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "system", "content": "Be brief." },
            { "role": "user", "content": "one" },
            { "role": "user", "content": [{ "type": "text", "text": "a" }, { "type": "text", "text": "b" }] },
        ])
    );
}

fn file(data: &str, media_type: &str, filename: Option<&str>) -> UserPart {
    UserPart::File { data: data.into(), media_type: media_type.into(), filename: filename.map(Into::into) }
}

#[test]
fn user_images_and_files() {
    let got = messages_of(vec![ModelMessage::User(vec![
        UserPart::Text("What is this?".into()),
        file("https://example.com/cat.png", "image/png", Some("cat.png")),
        file("iVBORw0KGgo=", "image/png", None),
        file("/9j/4AAQ", "image/*", None),
        file("data:image/webp;base64,UklGR", "image/webp", None),
        file("JVBERi0xLjQ=", "application/pdf", Some("report.pdf")),
        file("JVBERi0xLjQ=", "application/pdf", None),
        file("data:text/plain;base64,aGk=", "text/plain", None),
    ])]);
    assert_eq!(
        got[0]["content"],
        json!([
            { "type": "text", "text": "What is this?" },
            { "type": "image_url", "image_url": { "url": "https://example.com/cat.png" } },
            { "type": "image_url", "image_url": { "url": "data:image/png;base64,iVBORw0KGgo=" } },
            { "type": "image_url", "image_url": { "url": "data:image/jpeg;base64,/9j/4AAQ" } },
            { "type": "image_url", "image_url": { "url": "data:image/webp;base64,UklGR" } },
            { "type": "file", "file": { "file_data": "data:application/pdf;base64,JVBERi0xLjQ=", "filename": "report.pdf" } },
            { "type": "file", "file": { "file_data": "data:application/pdf;base64,JVBERi0xLjQ=", "filename": "part-6.pdf" } },
            { "type": "file", "file": { "file_data": "data:text/plain;base64,aGk=", "filename": "part-7" } },
        ])
    );
    // A single image still needs the array form.
    let single = messages_of(vec![ModelMessage::User(vec![file("https://x/y.jpg", "image/jpeg", None)])]);
    assert!(single[0]["content"].is_array());
}

#[test]
fn a_non_image_file_url_is_refused() {
    let req = request(vec![ModelMessage::User(vec![file("https://example.com/a.pdf", "application/pdf", None)])]);
    match build_request(&endpoint(None), &req).unwrap_err() {
        AgentError::InvalidArgument { field, message } => {
            assert_eq!(field, "messages");
            assert!(message.contains("application/pdf") && message.contains("base64"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn assistant_messages() {
    let call =
        |id: &str, args: Value| AssistantPart::ToolCall { tool_call_id: id.into(), tool_name: "weather".into(), args, meta: None };
    let got = messages_of(vec![
        ModelMessage::Assistant(vec![
            AssistantPart::Reasoning("private thoughts".into(), None),
            AssistantPart::Text("Let me ".into(), None),
            AssistantPart::Text("check.".into(), None),
            call("call_1", json!({ "city": "Paris" })),
            call("call_2", json!({})),
        ]),
        ModelMessage::Assistant(vec![call("call_3", json!({ "city": "Oslo" }))]),
        ModelMessage::Assistant(vec![AssistantPart::Text("Plain answer.".into(), None)]),
        ModelMessage::Assistant(vec![AssistantPart::Reasoning("only thinking".into(), None)]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "assistant", "content": "Let me check.", "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":\"Paris\"}" } },
                { "id": "call_2", "type": "function", "function": { "name": "weather", "arguments": "{}" } },
            ] },
            { "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_3", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":\"Oslo\"}" } },
            ] },
            { "role": "assistant", "content": "Plain answer." },
            { "role": "assistant", "content": "" },
        ])
    );
    assert!(!serde_json::to_string(&got).unwrap().contains("thought"), "reasoning is never sent back");
}

#[test]
fn tool_results_one_message_each() {
    let result = |id: &str, result: Value, is_error| ToolResultPart {
        tool_call_id: id.into(),
        tool_name: "weather".into(),
        result,
        is_error,
    };
    let got = messages_of(vec![ModelMessage::Tool(vec![
        result("call_1", json!({ "temp": 21, "unit": "C" }), false),
        result("call_2", json!("Sunny, 21 °C"), false),
        result("call_3", json!("city not found"), true),
        result("call_4", json!(null), false),
    ])]);
    assert_eq!(
        got,
        json!([
            { "role": "tool", "tool_call_id": "call_1", "content": "{\"temp\":21,\"unit\":\"C\"}" },
            { "role": "tool", "tool_call_id": "call_2", "content": "Sunny, 21 °C" },
            { "role": "tool", "tool_call_id": "call_3", "content": "city not found" },
            { "role": "tool", "tool_call_id": "call_4", "content": "null" },
        ])
    );
}

#[test]
fn provider_options_are_merged_in_snake_case() {
    let mut req = hello();
    req.settings.max_output_tokens = Some(100);
    let options = json!({
        "reasoningEffort": "low",
        "parallelToolCalls": false,
        "maxTokens": 7,
        "stream_options": { "include_usage": false },
        "user": "u-1",
        "logitBias": { "50256": -100 },
    });
    let Value::Object(options) = options else { unreachable!() };
    req.provider_options = Some(options);
    let body = body_of(&req);
    assert_eq!(body["reasoning_effort"], json!("low"));
    assert_eq!(body["parallel_tool_calls"], json!(false));
    assert_eq!(body["user"], json!("u-1"));
    // Only top-level keys are renamed; nested ones are the provider's own.
    assert_eq!(body["logit_bias"], json!({ "50256": -100 }));
    // Options override what the builder wrote.
    assert_eq!(body["max_tokens"], json!(7));
    assert_eq!(body["stream_options"], json!({ "include_usage": false }));
    assert!(body.get("reasoningEffort").is_none() && body.get("maxTokens").is_none());
}

#[test]
fn empty_provider_options_change_nothing() {
    let mut req = hello();
    req.provider_options = Some(Map::new());
    assert_eq!(build(&req).0, build(&hello()).0);
}

#[test]
fn the_body_is_byte_for_byte_stable() {
    let mut req = hello();
    req.tools = vec![weather_tool()];
    req.settings.temperature = Some(0.0);
    let first = build(&req).0.body;
    assert_eq!(first, build(&req).0.body);
    // serde_json keeps insertion order (preserve_order): the body reads in a natural order.
    assert!(first.starts_with("{\"model\":\"gpt-4o-mini\",\"messages\":"), "key order: {first}");
}

#[test]
fn snake_case_keys() {
    assert_eq!(snake_case("reasoningEffort"), "reasoning_effort");
    assert_eq!(snake_case("maxCompletionTokens"), "max_completion_tokens");
    assert!(matches!(snake_case("already_snake"), Cow::Borrowed("already_snake")));
    assert_eq!(snake_case("User"), "user");
}

