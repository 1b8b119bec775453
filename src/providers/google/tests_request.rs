//! Tests of the Gemini request builder (schemas included), and of thought signatures going back
//! from one response to the next request.

use serde_json::{json, Map, Value};

use super::build_request;
use super::tests_stream::{decode_pieces, fixture_stream};
use crate::core::error::AgentError;
use crate::core::model::{
    AssistantPart, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart, ToolSpec, UserPart,
};
use crate::providers::tests::fixtures::{endpoint_at, pairs};
use crate::providers::{step_of, Endpoint, HttpRequest};

fn endpoint(key: Option<&str>) -> Endpoint {
    endpoint_at("google", "https://generativelanguage.googleapis.com/v1beta", key)
}

fn request(messages: Vec<ModelMessage>) -> ModelRequest {
    ModelRequest { model_id: "gemini-2.5-flash".into(), messages, ..ModelRequest::default() }
}

fn hello() -> ModelRequest {
    request(vec![ModelMessage::User(vec![UserPart::Text("Hello".into())])])
}

fn build(req: &ModelRequest) -> (HttpRequest, Value) {
    let (http, warnings) = build_request(&endpoint(Some("goog-test")), req).unwrap();
    assert!(warnings.is_empty());
    let body = serde_json::from_str(&http.body).unwrap();
    (http, body)
}

fn body_of(req: &ModelRequest) -> Value {
    build(req).1
}

fn contents_of(messages: Vec<ModelMessage>) -> Value {
    body_of(&request(messages))["contents"].clone()
}

fn object(value: Value) -> Map<String, Value> {
    let Value::Object(map) = value else { panic!("not an object") };
    map
}

#[test]
fn minimal_request() {
    let (http, body) = build(&hello());
    assert_eq!(
        http.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(http.headers, pairs(&[("content-type", "application/json"), ("x-goog-api-key", "goog-test")]));
    assert_eq!(body, json!({ "contents": [{ "role": "user", "parts": [{ "text": "Hello" }] }] }));
    assert!(!http.url.contains("goog-test") && !http.body.contains("goog-test"), "the key goes in a header only");
}

#[test]
fn model_resource_names_are_not_doubled() {
    for (model, path) in [
        ("models/gemini-2.5-pro", "models/gemini-2.5-pro"),
        ("tunedModels/my-model-123", "tunedModels/my-model-123"),
        ("gemini-3-pro-preview", "models/gemini-3-pro-preview"),
    ] {
        let mut req = hello();
        req.model_id = model.into();
        let mut ep = endpoint(None);
        ep.base_url = "https://proxy.example/v1beta/".into();
        let url = build_request(&ep, &req).unwrap().0.url;
        assert_eq!(url, format!("https://proxy.example/v1beta/{path}:streamGenerateContent?alt=sse"));
    }
}

#[test]
fn no_key_no_key_header() {
    let (http, _) = build_request(&endpoint(None), &hello()).unwrap();
    assert_eq!(http.headers, pairs(&[("content-type", "application/json")]));
}

#[test]
fn later_headers_win_case_insensitively() {
    let mut ep = endpoint(Some("goog-test"));
    ep.headers = pairs(&[("X-Goog-Api-Key", "from-model"), ("X-Team", "model"), ("x-only-model", "1")]);
    let mut req = hello();
    req.settings.headers = pairs(&[("x-team", "call"), ("X-Call", "2")]);
    let (http, _) = build_request(&ep, &req).unwrap();
    assert_eq!(
        http.headers,
        pairs(&[
            ("content-type", "application/json"),
            ("X-Goog-Api-Key", "from-model"),
            ("x-team", "call"),
            ("x-only-model", "1"),
            ("X-Call", "2"),
        ])
    );
}

#[test]
fn every_setting_has_its_field() {
    let mut req = hello();
    req.settings = ModelSettings {
        temperature: Some(0.25),
        max_output_tokens: Some(512),
        top_p: Some(0.9),
        top_k: Some(40.0),
        presence_penalty: Some(0.5),
        frequency_penalty: Some(-0.5),
        stop_sequences: vec!["END".into(), "\n\n".into()],
        seed: Some(-42),
        max_retries: Some(3),
        headers: vec![],
    };
    let (http, body) = build(&req);
    assert_eq!(
        body["generationConfig"],
        json!({
            "temperature": 0.25, "topP": 0.9, "topK": 40, "maxOutputTokens": 512, "stopSequences": ["END", "\n\n"],
            "presencePenalty": 0.5, "frequencyPenalty": -0.5, "seed": -42,
        })
    );
    // `topK` is an integer on the wire, and the keys keep this order.
    assert!(http.body.contains(
        "{\"temperature\":0.25,\"topP\":0.9,\"topK\":40,\"maxOutputTokens\":512,\"stopSequences\":[\"END\",\"\\n\\n\"],"
    ));
    // Retries are the client's business, not the API's.
    assert_eq!(object(body).len(), 2);
    req.settings.top_k = Some(2.5);
    assert_eq!(body_of(&req)["generationConfig"]["topK"], json!(2.5));
}

#[test]
fn no_settings_no_generation_config() {
    let body = object(body_of(&hello()));
    for key in ["generationConfig", "systemInstruction", "tools", "toolConfig"] {
        assert!(!body.contains_key(key), "{key}");
    }
}

#[test]
fn system_messages_become_one_instruction() {
    let body = body_of(&request(vec![
        ModelMessage::System("Be brief.".into()),
        ModelMessage::System(String::new()),
        ModelMessage::User(vec![UserPart::Text("one".into())]),
        ModelMessage::System("Answer in French.".into()),
    ]));
    assert_eq!(body["systemInstruction"], json!({ "parts": [{ "text": "Be brief.\n\nAnswer in French." }] }));
    assert_eq!(body["contents"], json!([{ "role": "user", "parts": [{ "text": "one" }] }]));
    // The instruction goes before the generation config, after the contents.
    let keys: Vec<String> = object(body).keys().cloned().collect();
    assert_eq!(keys, ["contents", "systemInstruction"]);
}

fn file(data: &str, media_type: &str) -> UserPart {
    UserPart::File { data: data.into(), media_type: media_type.into(), filename: Some("name.bin".into()) }
}

#[test]
fn user_text_and_files() {
    let got = contents_of(vec![ModelMessage::User(vec![
        UserPart::Text("What is this?".into()),
        UserPart::Text(String::new()),
        file("iVBORw0KGgo=", "image/png"),
        file("/9j/4AAQ", "image/*"),
        file("data:image/webp;base64,UklGR", "image/*"),
        file("DATA:application/pdf;name=a.pdf;BASE64,JVBERi0=", "application/pdf"),
        file("data:;base64,aGk=", "text/plain"),
        file("https://example.com/cat.png", "image/png"),
        file("gs://bucket/report.pdf", "application/pdf"),
        file("https://generativelanguage.googleapis.com/v1beta/files/abc-123", "video/mp4"),
    ])]);
    assert_eq!(
        got,
        json!([{ "role": "user", "parts": [
            { "text": "What is this?" },
            { "inlineData": { "mimeType": "image/png", "data": "iVBORw0KGgo=" } },
            { "inlineData": { "mimeType": "image/jpeg", "data": "/9j/4AAQ" } },
            { "inlineData": { "mimeType": "image/webp", "data": "UklGR" } },
            { "inlineData": { "mimeType": "application/pdf", "data": "JVBERi0=" } },
            { "inlineData": { "mimeType": "text/plain", "data": "aGk=" } },
            { "fileData": { "mimeType": "image/png", "fileUri": "https://example.com/cat.png" } },
            { "fileData": { "mimeType": "application/pdf", "fileUri": "gs://bucket/report.pdf" } },
            { "fileData": { "mimeType": "video/mp4",
                            "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc-123" } },
        ] }])
    );
}

#[test]
fn a_data_url_that_is_not_base64_is_refused() {
    let req = request(vec![ModelMessage::User(vec![file("data:text/plain,hello%20there", "text/plain")])]);
    match build_request(&endpoint(None), &req).unwrap_err() {
        AgentError::InvalidArgument { field, message } => {
            assert_eq!(field, "messages");
            assert!(message.contains("base64") && message.contains("text/plain"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

fn call(id: &str, name: &str, args: Value) -> AssistantPart {
    AssistantPart::ToolCall { tool_call_id: id.into(), tool_name: name.into(), args, meta: None }
}

fn result(id: &str, name: &str, result: Value, is_error: bool) -> ToolResultPart {
    ToolResultPart { tool_call_id: id.into(), tool_name: name.into(), result, is_error }
}

#[test]
fn a_tool_round_trip() {
    let got = contents_of(vec![
        ModelMessage::User(vec![UserPart::Text("Weather in Paris and Oslo?".into())]),
        ModelMessage::Assistant(vec![
            AssistantPart::Reasoning("private thoughts".into(), None),
            AssistantPart::Text("Let me check.".into(), None),
            call("call_1", "weather", json!({ "city": "Paris" })),
            call("call_2", "weather", json!({ "city": "Oslo" })),
            call("call_3", "now", Value::Null),
            call("call_4", "broken", json!("{\"city\": ")),
        ]),
        ModelMessage::Tool(vec![
            result("call_1", "weather", json!({ "temp": 21, "unit": "C" }), false),
            result("call_2", "weather", json!("Sunny, 21 °C"), false),
            result("call_3", "now", json!(null), false),
            result("call_4", "broken", json!("Invalid arguments: expected an object"), true),
        ]),
        ModelMessage::Assistant(vec![AssistantPart::Text("Paris 21 °C, Oslo sunny.".into(), None)]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "user", "parts": [{ "text": "Weather in Paris and Oslo?" }] },
            { "role": "model", "parts": [
                { "text": "Let me check." },
                { "functionCall": { "name": "weather", "args": { "city": "Paris" } } },
                { "functionCall": { "name": "weather", "args": { "city": "Oslo" } } },
                { "functionCall": { "name": "now", "args": {} } },
                { "functionCall": { "name": "broken", "args": {} } },
            ] },
            { "role": "user", "parts": [
                { "functionResponse": { "name": "weather",
                    "response": { "name": "weather", "content": { "temp": 21, "unit": "C" } } } },
                { "functionResponse": { "name": "weather",
                    "response": { "name": "weather", "content": "Sunny, 21 °C" } } },
                { "functionResponse": { "name": "now", "response": { "name": "now", "content": null } } },
                { "functionResponse": { "name": "broken",
                    "response": { "name": "broken", "error": "Invalid arguments: expected an object" } } },
            ] },
            { "role": "model", "parts": [{ "text": "Paris 21 °C, Oslo sunny." }] },
        ])
    );
    assert!(!serde_json::to_string(&got).unwrap().contains("thought"), "reasoning is not sent back");
    // An error that is not a string is sent as its JSON text.
    let errors = contents_of(vec![ModelMessage::Tool(vec![result("c", "f", json!({ "code": 7 }), true)])]);
    assert_eq!(errors[0]["parts"][0]["functionResponse"]["response"], json!({ "name": "f", "error": "{\"code\":7}" }));
}

#[test]
fn gemini_3_calls_carry_the_signature_stand_in() {
    let messages = vec![
        ModelMessage::User(vec![UserPart::Text("Weather?".into())]),
        ModelMessage::Assistant(vec![AssistantPart::Text("Checking.".into(), None), call("c1", "weather", json!({}))]),
        ModelMessage::Tool(vec![result("c1", "weather", json!("sunny"), false)]),
    ];
    for (model, signed) in [
        ("gemini-3-pro-preview", true),
        ("gemini-3.1-pro-preview", true),
        ("models/gemini-3-flash", true),
        ("gemini-flash-latest", true),
        ("gemini-2.5-flash", false),
        ("gemini-2.0-flash-001", false),
        ("gemini-1.5-pro", false),
        ("gemini-pro", false),
        ("gemma-3-27b-it", false),
    ] {
        let mut req = request(messages.clone());
        req.model_id = model.into();
        let parts = body_of(&req)["contents"][1]["parts"].clone();
        assert_eq!(parts[0], json!({ "text": "Checking." }), "{model}: text parts are never signed");
        let expected = if signed {
            json!({ "functionCall": { "name": "weather", "args": {} }, "thoughtSignature": "skip_thought_signature_validator" })
        } else {
            json!({ "functionCall": { "name": "weather", "args": {} } })
        };
        assert_eq!(parts[1], expected, "{model}");
    }
}

#[test]
fn consecutive_turns_of_one_role_are_merged() {
    let got = contents_of(vec![
        ModelMessage::User(vec![UserPart::Text("a".into())]),
        ModelMessage::User(vec![UserPart::Text("b".into())]),
        ModelMessage::Assistant(vec![call("1", "f", json!({ "x": 1 }))]),
        ModelMessage::Assistant(vec![AssistantPart::Reasoning("only thinking".into(), None)]),
        ModelMessage::Assistant(vec![call("2", "g", json!({}))]),
        ModelMessage::Tool(vec![result("1", "f", json!(1), false)]),
        ModelMessage::Tool(vec![result("2", "g", json!(2), false)]),
        ModelMessage::User(vec![UserPart::Text("and now?".into())]),
        ModelMessage::User(vec![]),
        ModelMessage::Assistant(vec![AssistantPart::Text(String::new(), None)]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "user", "parts": [{ "text": "a" }, { "text": "b" }] },
            { "role": "model", "parts": [
                { "functionCall": { "name": "f", "args": { "x": 1 } } },
                { "functionCall": { "name": "g", "args": {} } },
            ] },
            { "role": "user", "parts": [
                { "functionResponse": { "name": "f", "response": { "name": "f", "content": 1 } } },
                { "functionResponse": { "name": "g", "response": { "name": "g", "content": 2 } } },
                { "text": "and now?" },
            ] },
        ])
    );
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "weather".into(),
        description: Some("Current weather".into()),
        parameters: json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": { "city": { "type": "string", "minLength": 1 } },
            "required": ["city"],
            "additionalProperties": false,
        }),
    }
}

#[test]
fn tools_and_tool_choice() {
    let mut req = hello();
    req.tools = vec![
        weather_tool(),
        ToolSpec {
            name: "now".into(),
            description: None,
            parameters: json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false }),
        },
        ToolSpec { name: "ping".into(), description: Some("No schema".into()), parameters: json!({}) },
    ];
    let body = body_of(&req);
    assert_eq!(
        body["tools"],
        json!([{ "functionDeclarations": [
            { "name": "weather", "description": "Current weather", "parameters": {
                "type": "object", "properties": { "city": { "type": "string", "minLength": 1 } }, "required": ["city"] } },
            { "name": "now" },
            { "name": "ping", "description": "No schema" },
        ] }])
    );
    assert!(body.get("toolConfig").is_none());
    let choices = [
        (ToolChoice::Auto, json!({ "mode": "AUTO" })),
        (ToolChoice::None, json!({ "mode": "NONE" })),
        (ToolChoice::Required, json!({ "mode": "ANY" })),
        (ToolChoice::Tool("weather".into()), json!({ "mode": "ANY", "allowedFunctionNames": ["weather"] })),
    ];
    for (choice, wire) in choices {
        req.tool_choice = Some(choice);
        assert_eq!(body_of(&req)["toolConfig"], json!({ "functionCallingConfig": wire }));
    }
}

#[test]
fn tool_choice_without_tools_is_not_sent() {
    let mut req = hello();
    req.tool_choice = Some(ToolChoice::Required);
    assert!(body_of(&req).get("toolConfig").is_none());
}

fn parameters_of(schema: Value) -> Value {
    let mut req = hello();
    req.tools = vec![ToolSpec { name: "t".into(), description: None, parameters: schema }];
    body_of(&req)["tools"][0]["functionDeclarations"][0]["parameters"].clone()
}

#[test]
fn schemas_are_cleaned_recursively() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:t",
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": { "type": "string" },
                    "properties": {
                        "name": { "type": "string", "description": "What", "examples": ["x"], "$comment": "c" },
                        "qty": { "type": "integer", "exclusiveMinimum": 0, "minimum": 1, "default": 1 },
                        "properties": { "type": "string", "description": "a property named `properties`" },
                    },
                    "required": ["name"],
                },
            },
            "note": { "type": ["string", "null"], "maxLength": 200 },
            "id": { "type": ["string", "integer"] },
            "kind": { "const": "order" },
            "mode": { "enum": ["fast", "slow"], "format": "enum" },
            "opts": { "type": "object", "properties": {}, "required": [], "additionalProperties": true },
            "either": { "anyOf": [{ "type": "string" }, { "type": "number", "not": { "const": 0 } }] },
        },
        "required": ["items"],
        "additionalProperties": false,
    });
    assert_eq!(
        parameters_of(schema),
        json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string", "description": "What" },
                            "qty": { "type": "integer", "minimum": 1, "default": 1 },
                            "properties": { "type": "string", "description": "a property named `properties`" },
                        },
                        "required": ["name"],
                    },
                },
                "note": { "nullable": true, "type": "string", "maxLength": 200 },
                "id": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                // Gemini's enum is for strings only: a string enum gets its type.
                "kind": { "enum": ["order"], "type": "string" },
                "mode": { "enum": ["fast", "slow"], "format": "enum", "type": "string" },
                // An object without properties has no Gemini spelling: left out.
                "either": { "anyOf": [{ "type": "string" }, { "type": "number" }] },
            },
            "required": ["items"],
        })
    );
}

#[test]
fn references_are_inlined_once() {
    let schema = json!({
        "type": "object",
        "properties": {
            "home": { "$ref": "#/$defs/Address" },
            "work": { "$ref": "#/definitions/Address", "description": "Office address" },
            "boss": { "$ref": "#/$defs/Person" },
            "lost": { "$ref": "#/$defs/Missing", "description": "kept" },
            "remote": { "$ref": "https://example.com/schema.json" },
        },
        "$defs": {
            "Address": { "type": "object", "properties": { "city": { "type": "string" } }, "additionalProperties": false },
            "Person": {
                "type": "object",
                "properties": { "name": { "type": "string" }, "manager": { "$ref": "#/$defs/Person" } },
            },
        },
        "definitions": { "Address": { "type": "object", "properties": { "street": { "type": "string" } } } },
    });
    assert_eq!(
        parameters_of(schema),
        json!({
            "type": "object",
            "properties": {
                "home": { "type": "object", "properties": { "city": { "type": "string" } } },
                "work": { "type": "object", "properties": { "street": { "type": "string" } }, "description": "Office address" },
                // Inside its own expansion a recursive reference is dropped.
                "boss": { "type": "object", "properties": { "name": { "type": "string" }, "manager": {} } },
                "lost": { "description": "kept" },
                "remote": {},
            },
        })
    );
}

#[test]
fn a_schema_that_is_only_a_reference_is_inlined() {
    let schema = json!({
        "$ref": "#/definitions/Args",
        "definitions": { "Args": { "type": "object", "properties": { "q": { "type": "string" } } } },
    });
    assert_eq!(parameters_of(schema), json!({ "type": "object", "properties": { "q": { "type": "string" } } }));
    // A self-reference at the top is inlined once and then dropped, and terminates.
    let recursive = json!({ "type": "object", "properties": { "next": { "$ref": "#" } } });
    assert_eq!(
        parameters_of(recursive),
        json!({ "type": "object", "properties": { "next": { "type": "object", "properties": { "next": {} } } } })
    );
}

#[test]
fn provider_options_are_merged_as_given() {
    let mut req = hello();
    req.settings.temperature = Some(0.5);
    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Auto);
    req.provider_options = Some(object(json!({
        "generationConfig": { "thinkingConfig": { "includeThoughts": true, "thinkingBudget": 1024 }, "temperature": 1.0 },
        "safetySettings": [{ "category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE" }],
        "cachedContent": "cachedContents/abc",
        "toolConfig": { "functionCallingConfig": { "mode": "VALIDATED" } },
        "contents": "replaced",
    })));
    let body = body_of(&req);
    // An object option merges into the body's object; the option wins on the same key.
    assert_eq!(
        body["generationConfig"],
        json!({ "temperature": 1.0, "thinkingConfig": { "includeThoughts": true, "thinkingBudget": 1024 } })
    );
    assert_eq!(body["safetySettings"][0]["threshold"], json!("BLOCK_NONE"));
    assert_eq!(body["cachedContent"], json!("cachedContents/abc"));
    assert_eq!(body["toolConfig"], json!({ "functionCallingConfig": { "mode": "VALIDATED" } }));
    // Anything else replaces what the builder wrote; keys are never renamed.
    assert_eq!(body["contents"], json!("replaced"));
    assert!(body.get("safety_settings").is_none() && body.get("cached_content").is_none());
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
    req.messages.insert(0, ModelMessage::System("sys".into()));
    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Auto);
    req.settings.temperature = Some(0.0);
    let first = build(&req).0.body;
    assert_eq!(first, build(&req).0.body);
    let keys: Vec<String> = object(serde_json::from_str(&first).unwrap()).keys().cloned().collect();
    assert_eq!(keys, ["contents", "systemInstruction", "generationConfig", "tools", "toolConfig"]);
}

// ---------------------------------------------------------------------------------------------
// Thought signatures, from one response to the next request

#[test]
fn a_recorded_call_goes_back_with_its_own_thought_signature() {
    let recorded = fixture_stream("google--google-tool-call");
    let text = String::from_utf8(recorded.clone()).unwrap();
    let step = step_of(decode_pieces(&[&recorded], false).unwrap());
    let [.., AssistantPart::ToolCall { meta: Some(meta), tool_name, .. }] = &step.parts[..] else {
        panic!("the call keeps its signature: {:#?}", step.parts)
    };
    let signature = meta["google"]["thoughtSignature"].as_str().unwrap();
    assert!(signature.len() > 20 && text.contains(signature), "the recorded signature, whole");

    // Gemini 3 gets the call's own signature instead of the stand-in; 2.5 gets it too, as the
    // model sent it.
    for model in ["gemini-3-pro-preview", "gemini-2.5-flash"] {
        let mut req = request(vec![
            ModelMessage::User(vec![UserPart::Text("Weather?".into())]),
            ModelMessage::Assistant(step.parts.clone()),
        ]);
        req.model_id = model.into();
        let contents = body_of(&req)["contents"].clone();
        let call = contents[1]["parts"].as_array().unwrap().iter().find(|p| p.get("functionCall").is_some()).unwrap();
        assert_eq!(call["functionCall"]["name"], tool_name.as_str());
        assert_eq!(call["thoughtSignature"], signature, "{model}");
    }
}
