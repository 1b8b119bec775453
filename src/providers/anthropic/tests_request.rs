//! Tests of the Anthropic Messages request builder, and of thinking going back from one response
//! to the next request.

use serde_json::{json, Map, Value};

use super::build_request;
use super::tests_stream::{block_delta, block_start, decode, sse, start, stop_with};
use crate::core::error::AgentError;
use crate::core::model::{
    AssistantPart, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart, ToolSpec, UserPart, Warning,
};
use crate::providers::tests::fixtures::{endpoint_at, pairs};
use crate::providers::{step_of, Endpoint, HttpRequest};

fn endpoint(key: Option<&str>) -> Endpoint {
    endpoint_at("anthropic", "https://api.anthropic.com/v1", key)
}

fn request(messages: Vec<ModelMessage>) -> ModelRequest {
    ModelRequest { model_id: "claude-sonnet-4-5".into(), messages, ..ModelRequest::default() }
}

fn hello() -> ModelRequest {
    request(vec![ModelMessage::User(vec![UserPart::Text("Hello".into())])])
}

fn build(req: &ModelRequest) -> (HttpRequest, Value, Vec<Warning>) {
    let (http, warnings) = build_request(&endpoint(Some("sk-ant-test")), req, false).unwrap();
    let body = serde_json::from_str(&http.body).unwrap();
    (http, body, warnings)
}

fn body_of(req: &ModelRequest) -> Value {
    build(req).1
}

fn messages_of(messages: Vec<ModelMessage>) -> Value {
    body_of(&request(messages))["messages"].clone()
}

fn text(t: &str) -> Value {
    json!({ "type": "text", "text": t })
}

#[test]
fn minimal_request() {
    let (http, body, warnings) = build(&hello());
    assert_eq!(http.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(
        http.headers,
        pairs(&[
            ("content-type", "application/json"),
            ("x-api-key", "sk-ant-test"),
            ("anthropic-version", "2023-06-01"),
        ])
    );
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": true,
            "messages": [{ "role": "user", "content": [text("Hello")] }],
        })
    );
    assert!(warnings.is_empty());
    assert!(
        http.body.starts_with("{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,\"stream\":true,"),
        "{}",
        http.body
    );
}

#[test]
fn the_browser_header_only_in_a_page_and_no_key_no_key_header() {
    let (http, _) = build_request(&endpoint(None), &hello(), true).unwrap();
    assert_eq!(
        http.headers,
        pairs(&[
            ("content-type", "application/json"),
            ("anthropic-version", "2023-06-01"),
            ("anthropic-dangerous-direct-browser-access", "true"),
        ])
    );
    let (http, _) = build_request(&endpoint(None), &hello(), false).unwrap();
    assert!(!http.headers.iter().any(|(n, _)| n.starts_with("anthropic-dangerous")));
}

#[test]
fn later_headers_win_case_insensitively() {
    let mut ep = endpoint(Some("sk-ant-test"));
    ep.headers = pairs(&[("X-Api-Key", "from-model"), ("Anthropic-Beta", "a"), ("x-only-model", "1")]);
    let mut req = hello();
    req.settings.headers = pairs(&[("anthropic-beta", "b"), ("anthropic-version", "2099-01-01")]);
    let (http, _) = build_request(&ep, &req, true).unwrap();
    assert_eq!(
        http.headers,
        pairs(&[
            ("content-type", "application/json"),
            ("X-Api-Key", "from-model"),
            ("anthropic-version", "2099-01-01"),
            ("anthropic-dangerous-direct-browser-access", "true"),
            ("anthropic-beta", "b"),
            ("x-only-model", "1"),
        ])
    );
}

#[test]
fn trailing_slash_on_the_base_url_is_not_doubled() {
    let mut ep = endpoint(None);
    ep.base_url = "https://proxy.example/anthropic/v1/".into();
    assert_eq!(build_request(&ep, &hello(), false).unwrap().0.url, "https://proxy.example/anthropic/v1/messages");
}

#[test]
fn settings_have_their_fields_and_the_unsupported_ones_warn() {
    let mut req = hello();
    req.settings = ModelSettings {
        temperature: Some(0.25),
        max_output_tokens: Some(512),
        top_p: Some(0.9),
        top_k: Some(40.0),
        presence_penalty: Some(0.5),
        frequency_penalty: Some(-0.5),
        stop_sequences: vec!["END".into(), "\n\nHuman:".into()],
        seed: Some(42),
        max_retries: Some(3),
        ..ModelSettings::default()
    };
    let (http, body, warnings) = build(&req);
    assert_eq!(body["max_tokens"], json!(512));
    assert_eq!(body["temperature"], json!(0.25));
    assert_eq!(body["top_p"], json!(0.9));
    assert!(http.body.contains("\"top_k\":40,"), "top_k is an integer: {}", http.body);
    assert_eq!(body["stop_sequences"], json!(["END", "\n\nHuman:"]));
    // model, max_tokens, stream, messages and the four above: nothing else.
    assert_eq!(body.as_object().unwrap().len(), 8, "{body}");
    let warned: Vec<_> = warnings.iter().map(|w| (w.kind, w.setting.as_deref().unwrap())).collect();
    assert_eq!(
        warned,
        [
            ("unsupported-setting", "presencePenalty"),
            ("unsupported-setting", "frequencyPenalty"),
            ("unsupported-setting", "seed")
        ]
    );
    assert!(warnings.iter().all(|w| w.message.as_deref().unwrap().contains(w.setting.as_deref().unwrap())));
    // A top_k that is no integer is passed on for the API to judge.
    req.settings.top_k = Some(2.5);
    assert_eq!(body_of(&req)["top_k"], json!(2.5));
}

#[test]
fn unset_settings_are_left_out() {
    let body = body_of(&hello());
    for key in ["temperature", "top_p", "top_k", "stop_sequences", "system", "tools", "tool_choice", "seed"] {
        assert!(body.get(key).is_none(), "{key}");
    }
}

#[test]
fn system_messages_are_joined_and_taken_out_of_the_turns() {
    let body = body_of(&request(vec![
        ModelMessage::System("Be brief.".into()),
        ModelMessage::User(vec![UserPart::Text("one".into())]),
        ModelMessage::System("".into()),
        ModelMessage::System("Answer in French.".into()),
        ModelMessage::User(vec![UserPart::Text("two".into())]),
    ]));
    assert_eq!(body["system"], json!("Be brief.\n\nAnswer in French."));
    assert_eq!(body["messages"], json!([{ "role": "user", "content": [text("one"), text("two")] }]));
}

fn file(data: &str, media_type: &str, filename: Option<&str>) -> UserPart {
    UserPart::File { data: data.into(), media_type: media_type.into(), filename: filename.map(Into::into) }
}

#[test]
fn user_images_and_pdfs() {
    let got = messages_of(vec![ModelMessage::User(vec![
        UserPart::Text("What is this?".into()),
        UserPart::Text("".into()),
        file("https://example.com/cat.png", "image/png", Some("cat.png")),
        file("iVBORw0KGgo=", "image/png", None),
        file("iVBORw0KGgoAAA", "image/*", None),
        file("R0lGODlh", "image/*", None),
        file("AAAA", "image/*", None),
        file("data:image/webp;base64,UklGR", "image/*", None),
        file("DATA:image/gif;BASE64,R0lGODlh", "image/png", None),
        file("data:;base64,/9j/4AAQ", "image/jpeg", None),
        file("JVBERi0xLjQ=", "application/pdf", Some("report.pdf")),
        file("data:application/pdf;base64,JVBERi0xLjQ=", "application/pdf", None),
        file("HTTPS://example.com/a.pdf", "application/pdf", None),
    ])]);
    let image = |media_type: &str, data: &str| json!({ "type": "image", "source": { "type": "base64", "media_type": media_type, "data": data } });
    let pdf = json!({ "type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ=" });
    assert_eq!(
        got,
        json!([{ "role": "user", "content": [
            text("What is this?"),
            { "type": "image", "source": { "type": "url", "url": "https://example.com/cat.png" } },
            image("image/png", "iVBORw0KGgo="),
            image("image/png", "iVBORw0KGgoAAA"),
            image("image/gif", "R0lGODlh"),
            image("image/jpeg", "AAAA"),
            image("image/webp", "UklGR"),
            image("image/gif", "R0lGODlh"),
            image("image/jpeg", "/9j/4AAQ"),
            { "type": "document", "source": pdf, "title": "report.pdf" },
            { "type": "document", "source": pdf },
            { "type": "document", "source": { "type": "url", "url": "HTTPS://example.com/a.pdf" } },
        ] }])
    );
}

#[test]
fn other_files_and_non_base64_data_urls_are_refused() {
    let cases = [
        (file("aGk=", "text/plain", None), "text/plain"),
        (file("data:image/svg+xml,<svg/>", "image/svg+xml", None), "base64"),
        (file("data:image/png;base64", "image/png", None), "base64"),
    ];
    for (part, says) in cases {
        let req = request(vec![ModelMessage::User(vec![part])]);
        match build_request(&endpoint(None), &req, false).unwrap_err() {
            AgentError::InvalidArgument { field, message } => {
                assert_eq!(field, "messages");
                assert!(message.contains(says), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}

fn call(id: &str, args: Value) -> AssistantPart {
    AssistantPart::ToolCall { tool_call_id: id.into(), tool_name: "weather".into(), args, meta: None }
}

fn tool_use(id: &str, input: Value) -> Value {
    json!({ "type": "tool_use", "id": id, "name": "weather", "input": input })
}

fn result(id: &str, result: Value, is_error: bool) -> ToolResultPart {
    ToolResultPart { tool_call_id: id.into(), tool_name: "weather".into(), result, is_error }
}

#[test]
fn assistant_messages() {
    let got = messages_of(vec![
        ModelMessage::User(vec![UserPart::Text("Weather?".into())]),
        ModelMessage::Assistant(vec![
            AssistantPart::Reasoning("private thoughts".into(), None),
            AssistantPart::Text("Let me ".into(), None),
            AssistantPart::Text("".into(), None),
            AssistantPart::Text("check.".into(), None),
            call("toolu_1", json!({ "city": "Paris" })),
            call("toolu_2", json!({})),
            call("toolu_3", json!("{\"city\": \"Par")),
        ]),
    ]);
    assert_eq!(
        got[1],
        json!({ "role": "assistant", "content": [
            text("Let me "),
            text("check."),
            tool_use("toolu_1", json!({ "city": "Paris" })),
            tool_use("toolu_2", json!({})),
            // Arguments that never parsed cannot go back as they are: the API wants an object.
            tool_use("toolu_3", json!({})),
        ] })
    );
    assert!(!serde_json::to_string(&got).unwrap().contains("thought"), "reasoning is never sent back");
}

#[test]
fn tool_results_go_in_a_user_turn() {
    let got = messages_of(vec![
        ModelMessage::User(vec![UserPart::Text("Weather in Paris and Oslo?".into())]),
        ModelMessage::Assistant(vec![
            call("toolu_1", json!({ "city": "Paris" })),
            call("toolu_2", json!({ "city": "Oslo" })),
        ]),
        ModelMessage::Tool(vec![
            result("toolu_1", json!({ "temp": 21, "unit": "C" }), false),
            result("toolu_2", json!("city not found"), true),
        ]),
        ModelMessage::Tool(vec![
            result("toolu_3", json!("Sunny, 21 °C"), false),
            result("toolu_4", json!(null), false),
        ]),
        ModelMessage::User(vec![UserPart::Text("Thanks".into())]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "user", "content": [text("Weather in Paris and Oslo?")] },
            { "role": "assistant", "content": [
                tool_use("toolu_1", json!({ "city": "Paris" })), tool_use("toolu_2", json!({ "city": "Oslo" })),
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"temp\":21,\"unit\":\"C\"}" },
                { "type": "tool_result", "tool_use_id": "toolu_2", "content": "city not found", "is_error": true },
                { "type": "tool_result", "tool_use_id": "toolu_3", "content": "Sunny, 21 °C" },
                { "type": "tool_result", "tool_use_id": "toolu_4", "content": "null" },
                text("Thanks"),
            ] },
        ])
    );
}

#[test]
fn turns_of_one_role_are_merged_and_empty_ones_dropped() {
    let got = messages_of(vec![
        ModelMessage::User(vec![UserPart::Text("a".into())]),
        ModelMessage::User(vec![]),
        ModelMessage::User(vec![UserPart::Text("b".into())]),
        ModelMessage::Assistant(vec![AssistantPart::Text("c".into(), None)]),
        ModelMessage::Assistant(vec![AssistantPart::Reasoning("only thinking".into(), None)]),
        ModelMessage::Assistant(vec![AssistantPart::Text("d".into(), None)]),
        // Tool results after user text still come first in their turn, as the API wants.
        ModelMessage::User(vec![UserPart::Text("e".into())]),
        ModelMessage::Tool(vec![result("toolu_9", json!("ok"), false)]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "user", "content": [text("a"), text("b")] },
            { "role": "assistant", "content": [text("c"), text("d")] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_9", "content": "ok" }, text("e"),
            ] },
        ])
    );
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
            { "name": "weather", "description": "Current weather",
              "input_schema": { "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] } },
            { "name": "now", "input_schema": { "type": "object" } },
        ])
    );
    assert!(body.get("tool_choice").is_none());
    let choices = [
        (ToolChoice::Auto, json!({ "type": "auto" })),
        (ToolChoice::Required, json!({ "type": "any" })),
        (ToolChoice::Tool("weather".into()), json!({ "type": "tool", "name": "weather" })),
    ];
    for (choice, wire) in choices {
        req.tool_choice = Some(choice);
        let body = body_of(&req);
        assert_eq!(body["tool_choice"], wire);
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
    }
    // `none` sends no tools at all.
    req.tool_choice = Some(ToolChoice::None);
    let body = body_of(&req);
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none(), "{body}");
    // Nor does a choice without tools.
    let mut req = hello();
    req.tool_choice = Some(ToolChoice::Required);
    assert!(body_of(&req).get("tool_choice").is_none());
}

#[test]
fn provider_options_are_merged_in_snake_case_all_the_way_down() {
    let mut req = hello();
    req.settings.max_output_tokens = Some(100);
    let options = json!({
        "thinking": { "type": "enabled", "budgetTokens": 1024 },
        "maxTokens": 2048,
        "metadata": { "userId": "u-1" },
        "mcpServers": [{ "type": "url", "authorizationToken": "t" }],
        "stream": true,
    });
    let Value::Object(options) = options else { unreachable!() };
    req.provider_options = Some(options);
    let body = body_of(&req);
    assert_eq!(body["thinking"], json!({ "type": "enabled", "budget_tokens": 1024 }));
    assert_eq!(body["metadata"], json!({ "user_id": "u-1" }));
    assert_eq!(body["mcp_servers"], json!([{ "type": "url", "authorization_token": "t" }]));
    // Options override what the builder wrote.
    assert_eq!(body["max_tokens"], json!(2048));
    assert!(body.get("maxTokens").is_none() && body.get("mcpServers").is_none());
}

#[test]
fn empty_provider_options_change_nothing() {
    let mut req = hello();
    req.provider_options = Some(Map::new());
    assert_eq!(build(&req).0, build(&hello()).0);
}

// ---------------------------------------------------------------------------------------------
// Thinking, from one response to the next request

#[test]
fn thinking_goes_back_signed_and_redacted_thinking_as_its_data() {
    let body = start(json!({ "input_tokens": 5 }))
        + &block_start(0, json!({ "type": "thinking", "thinking": "", "signature": "" }))
        + &block_delta(0, json!({ "type": "thinking_delta", "thinking": "Weather first." }))
        + &block_delta(0, json!({ "type": "signature_delta", "signature": "EqQBsig" }))
        + &sse("content_block_stop", json!({ "type": "content_block_stop", "index": 0 }))
        + &block_start(1, json!({ "type": "redacted_thinking", "data": "EmwKredacted" }))
        + &sse("content_block_stop", json!({ "type": "content_block_stop", "index": 1 }))
        + &block_start(2, json!({ "type": "thinking", "thinking": "" }))
        + &block_delta(2, json!({ "type": "thinking_delta", "thinking": "Then Oslo." }))
        + &block_delta(2, json!({ "type": "signature_delta", "signature": "EqQBsig2" }))
        + &block_start(3, json!({ "type": "tool_use", "id": "toolu_1", "name": "weather", "input": {} }))
        + &block_delta(3, json!({ "type": "input_json_delta", "partial_json": "{\"city\":\"Paris\"}" }))
        + &stop_with(json!("tool_use"), json!({ "output_tokens": 30 }));
    let step = step_of(decode(&body).unwrap());
    assert_eq!(step.reasoning, "Weather first.Then Oslo.", "what the user reads is unchanged");
    let messages = messages_of(vec![
        ModelMessage::User(vec![UserPart::Text("Weather in Paris?".into())]),
        ModelMessage::Assistant(step.parts),
        ModelMessage::Tool(vec![ToolResultPart {
            tool_call_id: "toolu_1".into(),
            tool_name: "weather".into(),
            result: json!("21 °C"),
            is_error: false,
        }]),
    ]);
    assert_eq!(
        messages[1]["content"],
        json!([
            { "type": "thinking", "thinking": "Weather first.", "signature": "EqQBsig" },
            { "type": "redacted_thinking", "data": "EmwKredacted" },
            { "type": "thinking", "thinking": "Then Oslo.", "signature": "EqQBsig2" },
            { "type": "tool_use", "id": "toolu_1", "name": "weather", "input": { "city": "Paris" } },
        ])
    );
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
}
