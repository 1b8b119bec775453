//! Structured output on every provider (SPEC §12.2): where each API takes the schema, and the
//! words that carry it where there is no native JSON-schema mode.

use serde_json::{json, Value};

use crate::core::model::{ModelMessage, ModelRequest, ResponseFormat, ToolSpec, UserPart};
use crate::providers::tests::fixtures::endpoint_at;
use crate::providers::{protocol, Api};

fn format() -> ResponseFormat {
    ResponseFormat {
        name: "response".into(),
        schema: json!({ "type": "object", "properties": { "title": { "type": "string" } }, "required": ["title"], "additionalProperties": false }),
        description: Some("A title".into()),
        strict: true,
        inline_text: "Answer in JSON: {title}".into(),
    }
}

fn request(model: &str, tools: bool) -> ModelRequest {
    ModelRequest {
        model_id: model.into(),
        messages: vec![
            ModelMessage::System("Be brief.".into()),
            ModelMessage::User(vec![UserPart::Text("first".into())]),
            ModelMessage::User(vec![UserPart::Text("Name this.".into())]),
        ],
        tools: if tools {
            vec![ToolSpec { name: "w".into(), description: None, parameters: json!({ "type": "object" }) }]
        } else {
            vec![]
        },
        response_format: Some(format()),
        ..Default::default()
    }
}

fn body(api: Api, req: &ModelRequest) -> Value {
    let mut at = endpoint_at("p", "http://127.0.0.1:1", Some("k"));
    at.api = api;
    let (http, _) = protocol(api).build_request(&at, req).unwrap();
    serde_json::from_str(&http.body).unwrap()
}

#[test]
fn chat_completions_get_response_format() {
    let b = body(Api::Chat, &request("gpt-4o-mini", true));
    assert_eq!(
        b["response_format"],
        json!({ "type": "json_schema", "json_schema": { "name": "response", "description": "A title", "schema": format().schema, "strict": true } })
    );
    assert_eq!(b["tools"][0]["function"]["name"], "w", "tools stay");
    assert_eq!(b["messages"][2]["content"], "Name this.", "nothing is injected");
}

#[test]
fn responses_get_text_format() {
    let mut req = request("gpt-4.1-mini", false);
    req.provider_options = Some(json!({ "textVerbosity": "low" }).as_object().unwrap().clone());
    let b = body(Api::Responses, &req);
    assert_eq!(
        b["text"],
        json!({ "format": { "type": "json_schema", "name": "response", "description": "A title", "schema": format().schema, "strict": true }, "verbosity": "low" })
    );
}

#[test]
fn gemini_gets_response_json_schema_and_words_before_3_with_tools() {
    let b = body(Api::Google, &request("gemini-2.5-flash", false));
    assert_eq!(b["generationConfig"]["responseMimeType"], "application/json");
    assert_eq!(b["generationConfig"]["responseJsonSchema"], format().schema);
    let b = body(Api::Google, &request("gemini-3-pro-preview", true));
    assert_eq!(b["generationConfig"]["responseJsonSchema"], format().schema, "Gemini 3 combines JSON mode with tools");
    let b = body(Api::Google, &request("gemini-2.5-flash", true));
    assert!(b.get("generationConfig").is_none(), "{b}");
    let last = b["contents"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["parts"].as_array().unwrap().last().unwrap()["text"], "Answer in JSON: {title}");
    assert!(b["tools"].is_array(), "tools stay");
}

#[test]
fn anthropic_gets_the_schema_in_words_on_the_latest_user_message() {
    let b = body(Api::Anthropic, &request("claude-sonnet-4-5", true));
    let last = b["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    let texts: Vec<&str> = last["content"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(texts.last().copied(), Some("Answer in JSON: {title}"));
    assert!(texts.contains(&"Name this."));
    assert_eq!(b["tools"][0]["name"], "w", "tools stay, no synthetic json tool");
    assert!(b.get("output_format").is_none() && b.get("response_format").is_none());
}
