//! Tests of the OpenAI Responses API request builder, and of reasoning and item ids going back from
//! one response to the next request.

use serde_json::{json, Map, Value};

use super::build_request;
use super::tests_stream::decode_pieces;
use crate::core::model::{
    AssistantPart, ModelMessage, ModelRequest, ModelSettings, ToolChoice, ToolResultPart, ToolSpec, UserPart, Warning,
};
use crate::providers::tests::fixtures::{
    endpoint_at, pairs, json_lines, responses, typed_stream, REASONING_ENCRYPTED as REASONING,
};
use crate::providers::{step_of, Endpoint, HttpRequest};

fn endpoint(key: Option<&str>) -> Endpoint {
    endpoint_at("openai", "https://api.openai.com/v1", key)
}

fn request(messages: Vec<ModelMessage>) -> ModelRequest {
    ModelRequest { model_id: "gpt-4.1-mini".into(), messages, ..ModelRequest::default() }
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

fn input_of(messages: Vec<ModelMessage>) -> Value {
    body_of(&request(messages))["input"].clone()
}

fn input_text(t: &str) -> Value {
    json!({ "type": "input_text", "text": t })
}

fn options(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        _ => unreachable!(),
    }
}

#[test]
fn minimal_request() {
    let (http, body, warnings) = build(&hello());
    assert_eq!(http.url, "https://api.openai.com/v1/responses");
    assert_eq!(http.headers, pairs(&[("content-type", "application/json"), ("authorization", "Bearer sk-test")]));
    assert_eq!(
        body,
        json!({
            "model": "gpt-4.1-mini",
            "input": [{ "role": "user", "content": [input_text("Hello")] }],
            "stream": true,
            "store": false,
        })
    );
    assert!(warnings.is_empty());
    assert!(http.body.starts_with("{\"model\":\"gpt-4.1-mini\",\"input\":["), "{}", http.body);
}

#[test]
fn headers_without_a_key_and_later_headers_winning() {
    let (http, _) = build_request(&endpoint(None), &hello()).unwrap();
    assert_eq!(http.headers, pairs(&[("content-type", "application/json")]));
    let mut ep = endpoint(Some("sk-test"));
    ep.headers = pairs(&[("Authorization", "Bearer from-model"), ("OpenAI-Organization", "org-1"), ("x-a", "1")]);
    let mut req = hello();
    req.settings.headers = pairs(&[("openai-organization", "org-2"), ("Content-Type", "application/json; x=1")]);
    let (http, _) = build_request(&ep, &req).unwrap();
    assert_eq!(
        http.headers,
        pairs(&[
            ("Content-Type", "application/json; x=1"),
            ("Authorization", "Bearer from-model"),
            ("openai-organization", "org-2"),
            ("x-a", "1"),
        ])
    );
}

#[test]
fn trailing_slash_on_the_base_url_is_not_doubled() {
    let mut ep = endpoint(None);
    ep.base_url = "https://api.x.ai/v1/".into();
    assert_eq!(build_request(&ep, &hello()).unwrap().0.url, "https://api.x.ai/v1/responses");
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
        stop_sequences: vec!["END".into()],
        seed: Some(42),
        max_retries: Some(3),
        ..ModelSettings::default()
    };
    let (_, body, warnings) = build(&req);
    assert_eq!(body["max_output_tokens"], json!(512));
    assert_eq!(body["temperature"], json!(0.25));
    assert_eq!(body["top_p"], json!(0.9));
    // model, input, stream, store and the three above: nothing else.
    assert_eq!(body.as_object().unwrap().len(), 7, "{body}");
    let warned: Vec<_> = warnings.iter().map(|w| (w.kind, w.setting.as_deref().unwrap())).collect();
    assert_eq!(
        warned,
        [
            ("unsupported-setting", "topK"),
            ("unsupported-setting", "presencePenalty"),
            ("unsupported-setting", "frequencyPenalty"),
            ("unsupported-setting", "stopSequences"),
            ("unsupported-setting", "seed"),
        ]
    );
    assert!(warnings.iter().all(|w| w.message.as_deref().unwrap().contains(w.setting.as_deref().unwrap())));
}

#[test]
fn unset_settings_are_left_out() {
    let body = body_of(&hello());
    for key in
        ["temperature", "top_p", "max_output_tokens", "tools", "tool_choice", "instructions", "reasoning", "include"]
    {
        assert!(body.get(key).is_none(), "{key}");
    }
}

#[test]
fn system_messages_stay_where_they_are() {
    let got = input_of(vec![
        ModelMessage::System("Be brief.".into()),
        ModelMessage::User(vec![UserPart::Text("one".into())]),
        ModelMessage::System("".into()),
        ModelMessage::System("Answer in French.".into()),
        ModelMessage::User(vec![]),
        ModelMessage::User(vec![UserPart::Text("two".into())]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "system", "content": "Be brief." },
            { "role": "user", "content": [input_text("one")] },
            { "role": "system", "content": "Answer in French." },
            { "role": "user", "content": [input_text("two")] },
        ])
    );
}

fn file(data: &str, media_type: &str, filename: Option<&str>) -> UserPart {
    UserPart::File { data: data.into(), media_type: media_type.into(), filename: filename.map(Into::into) }
}

#[test]
fn user_text_images_and_files() {
    let got = input_of(vec![ModelMessage::User(vec![
        UserPart::Text("What is this?".into()),
        file("https://example.com/cat.png", "image/png", Some("cat.png")),
        file("iVBORw0KGgo=", "image/png", None),
        file("AAAA", "image/*", None),
        file("data:image/webp;base64,UklGR", "image/*", None),
        file("JVBERi0xLjQ=", "application/pdf", Some("report.pdf")),
        file("JVBERi0xLjQ=", "application/pdf", None),
        file("data:application/pdf;base64,JVBERi0xLjQ=", "application/pdf", None),
        file("aGk=", "text/plain", None),
        file("HTTPS://example.com/a.pdf", "application/pdf", Some("a.pdf")),
    ])]);
    let pdf = "data:application/pdf;base64,JVBERi0xLjQ=";
    assert_eq!(
        got,
        json!([{ "role": "user", "content": [
            input_text("What is this?"),
            { "type": "input_image", "image_url": "https://example.com/cat.png" },
            { "type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=" },
            { "type": "input_image", "image_url": "data:image/jpeg;base64,AAAA" },
            { "type": "input_image", "image_url": "data:image/webp;base64,UklGR" },
            { "type": "input_file", "filename": "report.pdf", "file_data": pdf },
            { "type": "input_file", "filename": "part-6.pdf", "file_data": pdf },
            { "type": "input_file", "filename": "part-7.pdf", "file_data": pdf },
            { "type": "input_file", "filename": "part-8", "file_data": "data:text/plain;base64,aGk=" },
            { "type": "input_file", "file_url": "HTTPS://example.com/a.pdf" },
        ] }])
    );
}

fn tool_call(id: &str, args: Value) -> AssistantPart {
    AssistantPart::ToolCall { tool_call_id: id.into(), tool_name: "weather".into(), args, meta: None }
}

fn function_call(id: &str, arguments: &str) -> Value {
    json!({ "type": "function_call", "call_id": id, "name": "weather", "arguments": arguments })
}

fn output_text(t: &str) -> Value {
    json!({ "role": "assistant", "content": [{ "type": "output_text", "text": t }] })
}

fn result(id: &str, result: Value, is_error: bool) -> ToolResultPart {
    ToolResultPart { tool_call_id: id.into(), tool_name: "weather".into(), result, is_error }
}

#[test]
fn assistant_messages_become_text_and_function_call_items_in_order() {
    let got = input_of(vec![
        ModelMessage::User(vec![UserPart::Text("Weather?".into())]),
        ModelMessage::Assistant(vec![
            AssistantPart::Reasoning("private thoughts".into(), None),
            AssistantPart::Text("Let me ".into(), None),
            AssistantPart::Text("".into(), None),
            AssistantPart::Text("check.".into(), None),
            tool_call("call_1", json!({ "city": "Paris" })),
            tool_call("call_2", json!({})),
            AssistantPart::Text("And".into(), None),
            tool_call("call_3", json!("{\"city\": \"Par")),
        ]),
        ModelMessage::Assistant(vec![AssistantPart::Reasoning("only thinking".into(), None)]),
    ]);
    assert_eq!(
        got,
        json!([
            { "role": "user", "content": [input_text("Weather?")] },
            output_text("Let me check."),
            function_call("call_1", "{\"city\":\"Paris\"}"),
            function_call("call_2", "{}"),
            output_text("And"),
            // Arguments that never parsed go back as the JSON string they are, as on Chat.
            function_call("call_3", "\"{\\\"city\\\": \\\"Par\""),
        ])
    );
    assert!(!serde_json::to_string(&got).unwrap().contains("thinking"), "reasoning is not sent back");
}

#[test]
fn tool_results_are_function_call_outputs() {
    let got = input_of(vec![ModelMessage::Tool(vec![
        result("call_1", json!({ "temp": 21, "unit": "C" }), false),
        result("call_2", json!("city not found"), true),
        result("call_3", json!(null), false),
    ])]);
    assert_eq!(
        got,
        json!([
            { "type": "function_call_output", "call_id": "call_1", "output": "{\"temp\":21,\"unit\":\"C\"}" },
            { "type": "function_call_output", "call_id": "call_2", "output": "city not found" },
            { "type": "function_call_output", "call_id": "call_3", "output": "null" },
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
            { "type": "function", "name": "weather", "description": "Current weather",
              "parameters": { "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] },
              "strict": false },
            { "type": "function", "name": "now", "parameters": { "type": "object" }, "strict": false },
        ])
    );
    assert!(body.get("tool_choice").is_none());
    let choices = [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
        (ToolChoice::Tool("weather".into()), json!({ "type": "function", "name": "weather" })),
    ];
    for (choice, wire) in choices {
        req.tool_choice = Some(choice);
        let body = body_of(&req);
        assert_eq!(body["tool_choice"], wire);
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
    }
    // A choice without tools is not sent: the API refuses it.
    let mut req = hello();
    req.tool_choice = Some(ToolChoice::Required);
    assert!(body_of(&req).get("tool_choice").is_none());
}

#[test]
fn provider_options_are_merged_in_snake_case() {
    let mut req = hello();
    req.settings.max_output_tokens = Some(100);
    req.provider_options = options(json!({
        "parallelToolCalls": false,
        "previousResponseId": "resp_1",
        "maxOutputTokens": 2048,
        "metadata": { "userId": "u-1" },
        "store": true,
    }));
    let body = body_of(&req);
    assert_eq!(body["parallel_tool_calls"], json!(false));
    assert_eq!(body["previous_response_id"], json!("resp_1"));
    // Options override what the builder wrote; nested keys are left as they are.
    assert_eq!(body["max_output_tokens"], json!(2048));
    assert_eq!(body["store"], json!(true));
    assert_eq!(body["metadata"], json!({ "userId": "u-1" }));
    assert!(body.get("parallelToolCalls").is_none() && body.get("reasoning").is_none());
    assert!(body.get("include").is_none(), "no reasoning asked for, no encrypted reasoning");
}

#[test]
fn reasoning_options_nest_and_ask_for_the_encrypted_reasoning() {
    let mut req = hello();
    req.provider_options =
        options(json!({ "reasoningEffort": "high", "reasoningSummary": "auto", "textVerbosity": "low" }));
    let body = body_of(&req);
    assert_eq!(body["reasoning"], json!({ "effort": "high", "summary": "auto" }));
    assert_eq!(body["text"], json!({ "verbosity": "low" }));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert!(body.get("reasoning_effort").is_none() && body.get("text_verbosity").is_none());

    // A `reasoning` object and a flat key combine in either order; an `include` of the
    // caller's keeps its entries and gains the encrypted reasoning once.
    for order in [false, true] {
        let mut map = Map::new();
        let entries = [
            ("reasoning", json!({ "effort": "low", "summary": "detailed" })),
            ("reasoningEffort", json!("minimal")),
            ("include", json!(["file_search_call.results", "reasoning.encrypted_content"])),
        ];
        for (key, value) in if order { entries.into_iter().rev().collect::<Vec<_>>() } else { entries.to_vec() } {
            map.insert(key.into(), value);
        }
        req.provider_options = Some(map);
        let body = body_of(&req);
        assert_eq!(body["reasoning"], json!({ "effort": "minimal", "summary": "detailed" }), "{order}");
        assert_eq!(body["include"], json!(["file_search_call.results", "reasoning.encrypted_content"]));
    }
    req.provider_options = options(json!({ "reasoning_summary": "concise", "include": ["x"] }));
    let body = body_of(&req);
    assert_eq!(body["reasoning"], json!({ "summary": "concise" }));
    assert_eq!(body["include"], json!(["x", "reasoning.encrypted_content"]));
    // `reasoning: null` asks for nothing.
    req.provider_options = options(json!({ "reasoning": null }));
    assert!(body_of(&req).get("include").is_none());
}

#[test]
fn empty_provider_options_change_nothing() {
    let mut req = hello();
    req.provider_options = Some(Map::new());
    assert_eq!(build(&req).0, build(&hello()).0);
}

// ---------------------------------------------------------------------------------------------
// Reasoning and item ids, from one response to the next request

/// The assistant parts a step keeps from a recorded response, as the loop builds them.
fn step_parts(lines: &[String]) -> Vec<AssistantPart> {
    step_of(decode_pieces(&[&typed_stream(lines)], false).unwrap()).parts
}

#[test]
fn recorded_reasoning_goes_back_with_its_encrypted_content_and_the_call_with_its_item_id() {
    let recorded = responses(json_lines(REASONING));
    let parts = step_parts(&recorded[0]);
    let [AssistantPart::Reasoning(summary, Some(reasoning_meta)), AssistantPart::ToolCall { tool_call_id, meta: Some(call_meta), .. }] =
        &parts[..]
    else {
        panic!("one reasoning part and one call, with their provider data: {parts:#?}")
    };
    let reasoning_id = reasoning_meta["openai"]["itemId"].as_str().unwrap();
    let encrypted = reasoning_meta["openai"]["reasoningEncryptedContent"].as_str().unwrap();
    assert!(reasoning_id.starts_with("rs_") && encrypted.starts_with("gAAAAA"), "{reasoning_meta}");
    assert!(recorded[0].iter().any(|l| l.contains(encrypted)), "the recorded encrypted content, whole");
    let call_id = call_meta["openai"]["itemId"].as_str().unwrap();
    assert!(call_id.starts_with("fc_"));

    let input = input_of(vec![
        ModelMessage::User(vec![UserPart::Text("12+7, times 3, times 10".into())]),
        ModelMessage::Assistant(parts.clone()),
        ModelMessage::Tool(vec![result(tool_call_id, json!(19), false)]),
    ]);
    assert_eq!(
        input[1],
        json!({ "type": "reasoning", "id": reasoning_id, "encrypted_content": encrypted,
                "summary": [{ "type": "summary_text", "text": summary }] })
    );
    assert_eq!(input[2]["id"], call_id, "the call keeps the item id its reasoning is paired with");
    assert_eq!(input[2]["call_id"], tool_call_id.as_str());
    assert_eq!(input[3]["type"], "function_call_output");
}

#[test]
fn a_recorded_text_reply_keeps_its_message_id_and_sends_it_only_behind_reasoning() {
    let recorded = responses(json_lines(REASONING));
    // The last response is a message alone; the first one starts with reasoning.
    let last = step_parts(recorded.last().unwrap());
    let [AssistantPart::Text(_, Some(text_meta))] = &last[..] else { panic!("one text part with its item id: {last:#?}") };
    let message_id = text_meta["openai"]["itemId"].as_str().unwrap();
    assert!(message_id.starts_with("msg_"));

    // Alone, the id would point at reasoning the request does not carry: it is left out.
    let input = input_of(vec![ModelMessage::Assistant(last.clone())]);
    assert_eq!(input.as_array().unwrap().len(), 1);
    assert!(input[0].get("id").is_none(), "{input:#}");

    // Behind a reasoning item it goes.
    let reasoning = step_parts(&recorded[0]).into_iter().find(|p| matches!(p, AssistantPart::Reasoning(..))).unwrap();
    let input = input_of(vec![ModelMessage::Assistant(vec![reasoning, last[0].clone()])]);
    assert_eq!(input[0]["type"], "reasoning");
    assert_eq!(input[1]["id"], message_id);
}

#[test]
fn reasoning_without_what_identifies_it_is_left_out_and_so_are_the_item_ids_after_it() {
    let meta = |v: Value| Some(json!({ "openai": v }));
    let parts = vec![
        AssistantPart::Reasoning("thought".into(), meta(json!({ "itemId": "rs_1" }))),
        AssistantPart::Text("Checking.".into(), meta(json!({ "itemId": "msg_1" }))),
        AssistantPart::ToolCall { tool_call_id: "call_1".into(), tool_name: "weather".into(), args: json!({}), meta: meta(json!({ "itemId": "fc_1" })) },
    ];
    // Stateless (the default): an id alone points at nothing the server kept.
    let input = input_of(vec![ModelMessage::Assistant(parts.clone())]);
    assert_eq!(input, json!([output_text("Checking."), function_call("call_1", "{}")]));

    // `store: true`: the server has the item, so the id is enough, and the ids after it go too.
    let mut req = request(vec![ModelMessage::Assistant(parts)]);
    req.provider_options = Some(json!({ "store": true }).as_object().unwrap().clone());
    let body = build(&req).1;
    assert_eq!(
        body["input"],
        json!([
            { "type": "reasoning", "id": "rs_1", "summary": [{ "type": "summary_text", "text": "thought" }] },
            { "role": "assistant", "content": [{ "type": "output_text", "text": "Checking." }], "id": "msg_1" },
            { "type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{}", "id": "fc_1" },
        ])
    );
}

#[test]
fn a_reasoning_model_asks_for_its_encrypted_reasoning_unless_the_server_keeps_it() {
    let include_of = |model: &str, store: Option<bool>| {
        let mut req = hello();
        req.model_id = model.into();
        req.provider_options = store.map(|s| options(json!({ "store": s })).unwrap());
        body_of(&req).get("include").cloned()
    };
    let asked = Some(json!(["reasoning.encrypted_content"]));
    for model in ["gpt-5-mini", "gpt-5.1-codex-max", "o4-mini", "o3", "o1-pro", "codex-mini-latest", "GPT-5"] {
        assert_eq!(include_of(model, None), asked, "{model}");
        assert_eq!(include_of(model, Some(false)), asked, "{model}");
        assert_eq!(include_of(model, Some(true)), None, "{model}: stored, the id is enough");
    }
    // Models that do not reason refuse the `include`.
    for model in ["gpt-4.1-mini", "gpt-4o", "gpt-5-chat-latest", "grok-4"] {
        assert_eq!(include_of(model, None), None, "{model}");
    }
}
