//! Tests of input normalisation: every message form, the option parsers, and the exact paths
//! and wording of the errors users see.

use serde_json::{json, Value};

use super::*;

fn msgs(v: Value) -> Vec<ModelMessage> {
    match parse_messages(&v, "messages") {
        Ok(m) => m,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// The error as the JavaScript `TypeError` message reads: "field: message".
fn err(v: Value) -> String {
    parse_messages(&v, "messages").expect_err("expected an error").to_string()
}

fn field_of(e: AgentError) -> String {
    match e {
        AgentError::InvalidArgument { field, .. } => field,
        other => panic!("not an InvalidArgument: {other:?}"),
    }
}

fn user(text: &str) -> ModelMessage {
    ModelMessage::User(vec![UserPart::Text(text.into())])
}

fn file(data: &str, media_type: &str, filename: Option<&str>) -> UserPart {
    UserPart::File { data: data.into(), media_type: media_type.into(), filename: filename.map(Into::into) }
}

fn call(id: &str, name: &str, args: Value) -> AssistantPart {
    AssistantPart::ToolCall { tool_call_id: id.into(), tool_name: name.into(), args, meta: None }
}

fn result(id: &str, name: &str, result: Value, is_error: bool) -> ToolResultPart {
    ToolResultPart { tool_call_id: id.into(), tool_name: name.into(), result, is_error }
}

fn atext(t: &str) -> AssistantPart {
    AssistantPart::Text(t.into(), None)
}

// --- paths, kinds, getters -----------------------------------------------------------------

#[test]
fn join_writes_keys_indexes_and_quoted_keys() {
    assert_eq!(join("a", "b"), "a.b");
    assert_eq!(join("a", 3), "a[3]");
    assert_eq!(join(&join("messages", 2), "content"), "messages[2].content");
    assert_eq!(join("", "config"), "config");
    assert_eq!(join("h", "x-api-key"), "h[\"x-api-key\"]");
    assert_eq!(join("h", &String::from("$ok_1")), "h.$ok_1");
    assert_eq!(join("h", "1a"), "h[\"1a\"]");
}

#[test]
fn kind_names_types_as_javascript_users_do() {
    assert_eq!(kind(&json!("x")), "a string");
    assert_eq!(kind(&json!(1.5)), "a number");
    assert_eq!(kind(&json!(null)), "null");
    assert_eq!(kind(&json!([])), "an array");
    assert_eq!(kind(&json!({})), "an object");
    assert_eq!(kind(&json!(false)), "a boolean");
}

#[test]
fn a_stand_in_for_what_json_cannot_hold_is_named_for_the_javascript_value() {
    for what in NOT_JSON {
        assert_eq!(kind(&not_json(what)), *what);
    }
    let o = json!({ "id": not_json("NaN"), "n": not_json("a function") });
    assert_eq!(opt_str(&o, "id", "config").unwrap_err().to_string(), "config.id: expected a string, got NaN");
    let err = opt_u64(&o, "n", "config").unwrap_err();
    assert_eq!(err.to_string(), "config.n: expected a non-negative integer, got a function");
    // An object that merely has the key among others is an object.
    let mut merged = not_json("a function");
    merged["temperature"] = json!(1);
    assert_eq!(kind(&merged), "an object");
    assert_eq!(kind(&json!({ "\u{0}not-json": "made up" })), "an object");
}

#[test]
fn optional_getters_treat_null_and_absent_as_none() {
    let o = json!({ "n": null });
    assert_eq!(opt_str(&o, "n", "o").unwrap(), None);
    assert_eq!(opt_str(&o, "missing", "o").unwrap(), None);
    assert_eq!(opt_f64(&o, "n", "o").unwrap(), None);
    assert_eq!(opt_u64(&o, "n", "o").unwrap(), None);
    assert_eq!(opt_i64(&o, "n", "o").unwrap(), None);
    assert_eq!(opt_bool(&o, "n", "o").unwrap(), None);
    assert_eq!(opt_object(&o, "n", "o").unwrap(), None);
    assert_eq!(opt_array(&o, "n", "o").unwrap(), None);
}

#[test]
fn getters_return_values_and_name_the_field_on_wrong_types() {
    let o = json!({ "s": "x", "f": 0.5, "u": 3, "b": true, "o": { "k": 1 }, "a": [1] });
    assert_eq!(opt_str(&o, "s", "opts").unwrap(), Some("x"));
    assert_eq!(req_str(&o, "s", "opts").unwrap(), "x");
    assert_eq!(opt_f64(&o, "f", "opts").unwrap(), Some(0.5));
    assert_eq!(opt_f64(&o, "u", "opts").unwrap(), Some(3.0));
    assert_eq!(opt_u64(&o, "u", "opts").unwrap(), Some(3));
    assert_eq!(opt_bool(&o, "b", "opts").unwrap(), Some(true));
    assert_eq!(opt_object(&o, "o", "opts").unwrap().map(|m| m.len()), Some(1));
    assert_eq!(opt_array(&o, "a", "opts").unwrap().map(<[Value]>::len), Some(1));

    assert_eq!(opt_str(&o, "f", "opts").unwrap_err().to_string(), "opts.f: expected a string, got a number");
    assert_eq!(opt_f64(&o, "s", "opts").unwrap_err().to_string(), "opts.s: expected a number, got a string");
    assert_eq!(opt_bool(&o, "s", "opts").unwrap_err().to_string(), "opts.s: expected a boolean, got a string");
    assert_eq!(opt_object(&o, "a", "opts").unwrap_err().to_string(), "opts.a: expected an object, got an array");
    assert_eq!(opt_array(&o, "o", "opts").unwrap_err().to_string(), "opts.o: expected an array, got an object");
    assert_eq!(req_str(&o, "nope", "opts").unwrap_err().to_string(), "opts.nope: expected a string, got undefined");
    assert_eq!(req_str(&json!({ "k": null }), "k", "o").unwrap_err().to_string(), "o.k: expected a string, got null");
}

#[test]
fn integer_getters_accept_whole_doubles_and_reject_fractions_and_negatives() {
    let o = json!({ "whole": 3.0, "neg": -1, "frac": 1.5, "s": "3", "big": 1e300 });
    assert_eq!(opt_u64(&o, "whole", "o").unwrap(), Some(3));
    assert_eq!(opt_u64(&o, "neg", "o").unwrap_err().to_string(), "o.neg: expected a non-negative integer, got -1");
    assert_eq!(opt_u64(&o, "frac", "o").unwrap_err().to_string(), "o.frac: expected a non-negative integer, got 1.5");
    assert_eq!(opt_u64(&o, "s", "o").unwrap_err().to_string(), "o.s: expected a non-negative integer, got a string");
    assert!(opt_u64(&o, "big", "o").is_err());
    assert_eq!(opt_i64(&o, "neg", "o").unwrap(), Some(-1));
    assert_eq!(opt_i64(&json!({ "m": i64::MIN }), "m", "o").unwrap(), Some(i64::MIN));
    assert_eq!(opt_u64(&json!({ "m": u64::MAX }), "m", "o").unwrap(), Some(u64::MAX));
}

// --- plain forms ----------------------------------------------------------------------------

#[test]
fn a_string_is_one_user_message() {
    assert_eq!(msgs(json!("Research solana")), vec![user("Research solana")]);
}

#[test]
fn an_array_of_strings_is_one_user_message_each_and_empty_text_is_kept() {
    assert_eq!(msgs(json!(["a", "", "c"])), vec![user("a"), user(""), user("c")]);
    assert_eq!(msgs(json!([])), vec![]);
}

#[test]
fn a_single_message_object_is_accepted() {
    assert_eq!(msgs(json!({ "role": "user", "content": "hi" })), vec![user("hi")]);
    assert_eq!(msgs(json!({ "role": "user", "parts": [{ "type": "text", "text": "hi" }] })), vec![user("hi")]);
}

#[test]
fn strings_and_message_objects_mix_in_one_array() {
    let got = msgs(json!(["first", { "role": "assistant", "content": "ok" }, "second"]));
    assert_eq!(got, vec![user("first"), ModelMessage::Assistant(vec![atext("ok")]), user("second")]);
}

// --- model messages -------------------------------------------------------------------------

#[test]
fn system_messages_take_a_string_or_joined_text_parts() {
    let got = msgs(json!([
        { "role": "system", "content": "Be terse." },
        { "role": "system", "content": [{ "type": "text", "text": "One." }, { "type": "text", "text": "Two." }] },
    ]));
    assert_eq!(got, vec![ModelMessage::System("Be terse.".into()), ModelMessage::System("One.\nTwo.".into())]);
}

#[test]
fn user_parts_text_image_and_file() {
    let got = msgs(json!([{ "role": "user", "content": [
        { "type": "text", "text": "look" },
        { "type": "image", "image": "https://x.test/a.png" },
        { "type": "image", "image": "iVBORw0KGgoAAA" },
        { "type": "image", "image": "/9j/4AAQ", "mimeType": "image/jpeg" },
        { "type": "image", "image": "data:image/webp;base64,UklGR", "mediaType": "image/webp" },
        { "type": "image", "image": "data:image/gif;base64,R0lGOD" },
        { "type": "file", "data": "JVBERi0", "mediaType": "application/pdf", "filename": "a.pdf" },
        { "type": "file", "data": "aGk=", "mimeType": "text/plain" },
        { "type": "file", "data": "data:text/csv;base64,YSxi" },
    ]}]));
    assert_eq!(
        got,
        vec![ModelMessage::User(vec![
            UserPart::Text("look".into()),
            file("https://x.test/a.png", "image/*", None),
            file("iVBORw0KGgoAAA", "image/png", None),
            file("/9j/4AAQ", "image/jpeg", None),
            file("data:image/webp;base64,UklGR", "image/webp", None),
            file("data:image/gif;base64,R0lGOD", "image/gif", None),
            file("JVBERi0", "application/pdf", Some("a.pdf")),
            file("aGk=", "text/plain", None),
            file("data:text/csv;base64,YSxi", "text/csv", None),
        ])]
    );
}

#[test]
fn user_content_string_and_empty_text_part() {
    let got = msgs(
        json!([{ "role": "user", "content": "" }, { "role": "user", "content": [{ "type": "text", "text": "" }] }]),
    );
    assert_eq!(got, vec![user(""), user("")]);
}

#[test]
fn assistant_parts_text_reasoning_and_tool_calls_with_input_or_args() {
    let got = msgs(json!([{ "role": "assistant", "content": [
        { "type": "reasoning", "text": "thinking" },
        { "type": "text", "text": "calling" },
        { "type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": { "city": "Oslo" } },
        { "type": "tool-call", "toolCallId": "c2", "toolName": "weather", "args": { "city": "Rome" } },
        { "type": "tool-call", "toolCallId": "c3", "toolName": "now" },
    ]}]));
    assert_eq!(
        got,
        vec![ModelMessage::Assistant(vec![
            AssistantPart::Reasoning("thinking".into(), None),
            atext("calling"),
            call("c1", "weather", json!({ "city": "Oslo" })),
            call("c2", "weather", json!({ "city": "Rome" })),
            call("c3", "now", json!({})),
        ])]
    );
    assert_eq!(
        msgs(json!([{ "role": "assistant", "content": "plain" }])),
        vec![ModelMessage::Assistant(vec![atext("plain")])]
    );
}

#[test]
fn a_tool_round_trip_keeps_call_then_result_in_order() {
    let got = msgs(json!([
        { "role": "user", "content": "weather in Oslo?" },
        { "role": "assistant", "content": [{ "type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": { "city": "Oslo" } }] },
        { "role": "tool", "content": [{ "type": "tool-result", "toolCallId": "c1", "toolName": "weather", "output": { "type": "json", "value": { "c": 4 } } }] },
        { "role": "assistant", "content": "4 degrees" },
    ]));
    assert_eq!(
        got,
        vec![
            user("weather in Oslo?"),
            ModelMessage::Assistant(vec![call("c1", "weather", json!({ "city": "Oslo" }))]),
            ModelMessage::Tool(vec![result("c1", "weather", json!({ "c": 4 }), false)]),
            ModelMessage::Assistant(vec![atext("4 degrees")]),
        ]
    );
}

#[test]
fn v5_tool_output_wrappers_are_unwrapped_and_error_kinds_flag_errors() {
    let part = |output: Value| json!({ "type": "tool-result", "toolCallId": "c", "toolName": "t", "output": output });
    let got = msgs(json!([{ "role": "tool", "content": [
        part(json!({ "type": "text", "value": "sunny" })),
        part(json!({ "type": "json", "value": [1, 2] })),
        part(json!({ "type": "error-text", "value": "boom" })),
        part(json!({ "type": "error-json", "value": { "code": 7 } })),
        part(json!({ "type": "content", "value": [{ "type": "text", "text": "x" }] })),
        part(json!({ "type": "execution-denied", "reason": "not today" })),
        part(json!({ "type": "execution-denied" })),
        part(json!({ "type": "json", "value": null, "providerOptions": {} })),
    ]}]));
    assert_eq!(
        got,
        vec![ModelMessage::Tool(vec![
            result("c", "t", json!("sunny"), false),
            result("c", "t", json!([1, 2]), false),
            result("c", "t", json!("boom"), true),
            result("c", "t", json!({ "code": 7 }), true),
            result("c", "t", json!([{ "type": "text", "text": "x" }]), false),
            result("c", "t", json!("not today"), true),
            result("c", "t", json!("Tool execution denied."), true),
            result("c", "t", json!(null), false),
        ])]
    );
}

#[test]
fn plain_outputs_and_v4_results_are_kept_whole() {
    let got = msgs(json!([{ "role": "tool", "content": [
        { "type": "tool-result", "toolCallId": "a", "toolName": "t", "output": { "temp": 4 } },
        { "type": "tool-result", "toolCallId": "b", "toolName": "t", "output": "bare" },
        { "type": "tool-result", "toolCallId": "c", "toolName": "t", "output": { "type": "text", "value": "v", "extra": 1 } },
        // `result` is v4's raw value: never unwrapped, even when it looks like a wrapper.
        { "type": "tool-result", "toolCallId": "d", "toolName": "t", "result": { "type": "text", "value": "v" } },
        { "type": "tool-result", "toolCallId": "e", "toolName": "t", "result": "failed", "isError": true },
        { "type": "tool-result", "toolCallId": "f", "toolName": "t" },
    ]}]));
    assert_eq!(
        got,
        vec![ModelMessage::Tool(vec![
            result("a", "t", json!({ "temp": 4 }), false),
            result("b", "t", json!("bare"), false),
            result("c", "t", json!({ "type": "text", "value": "v", "extra": 1 }), false),
            result("d", "t", json!({ "type": "text", "value": "v" }), false),
            result("e", "t", json!("failed"), true),
            result("f", "t", Value::Null, false),
        ])]
    );
}

// --- errors on model messages ---------------------------------------------------------------

#[test]
fn wrong_top_level_types_are_named() {
    assert_eq!(
        err(json!(42)),
        "messages: expected a string, an array of strings, or an array of messages, got a number"
    );
    assert_eq!(err(json!(null)), "messages: expected a string, an array of strings, or an array of messages, got null");
    assert_eq!(
        err(json!(true)),
        "messages: expected a string, an array of strings, or an array of messages, got a boolean"
    );
    assert_eq!(err(json!(["ok", 7])), "messages[1]: expected a string or a message object, got a number");
    assert_eq!(err(json!([["nested"]])), "messages[0]: expected a string or a message object, got an array");
}

#[test]
fn unknown_or_missing_roles_list_the_allowed_ones() {
    assert_eq!(
        err(json!([{ "role": "user", "content": "a" }, { "role": "bot", "content": "b" }])),
        "messages[1].role: expected \"system\", \"user\", \"assistant\" or \"tool\", got \"bot\""
    );
    assert_eq!(
        err(json!([{ "content": "b" }])),
        "messages[0].role: expected \"system\", \"user\", \"assistant\" or \"tool\", got undefined"
    );
    assert_eq!(
        err(json!([{ "role": 3, "content": "b" }])),
        "messages[0].role: expected \"system\", \"user\", \"assistant\" or \"tool\", got 3"
    );
    assert_eq!(
        err(json!({ "role": "tool", "parts": [] })),
        "messages.role: expected \"system\", \"user\" or \"assistant\", got \"tool\""
    );
}

#[test]
fn long_strings_in_errors_are_shortened() {
    let role = "x".repeat(100);
    let e = err(json!([{ "role": role, "content": "b" }]));
    assert!(e.ends_with(&format!("got \"{}\"…", "x".repeat(40))), "{e}");
}

#[test]
fn content_of_the_wrong_type_is_named() {
    assert_eq!(
        err(json!([{ "role": "user", "content": 5 }])),
        "messages[0].content: expected a string or an array of parts, got a number"
    );
    assert_eq!(
        err(json!([{ "role": "user" }])),
        "messages[0].content: expected a string or an array of parts, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "content": { "text": "hi" } }])),
        "messages[0].content: expected a string or an array of parts, got an object"
    );
    assert_eq!(
        err(json!([{ "role": "tool", "content": "done" }])),
        "messages[0].content: expected an array of tool-result parts, got a string"
    );
    assert_eq!(
        err(json!([{ "role": "system", "content": null }])),
        "messages[0].content: expected a string or an array of text parts, got null"
    );
}

#[test]
fn unknown_part_types_are_named_with_the_allowed_ones() {
    assert_eq!(
        err(
            json!(["x", "y", { "role": "user", "content": [{ "type": "tool-call", "toolCallId": "c", "toolName": "t" }] }])
        ),
        "messages[2].content[0].type: expected \"text\", \"image\" or \"file\" in a user message, got \"tool-call\""
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "content": [{ "type": "text", "text": "a" }, { "type": "image", "image": "x" }] }])),
        "messages[0].content[1].type: expected \"text\", \"reasoning\" or \"tool-call\" in an assistant message, got \"image\""
    );
    assert_eq!(
        err(json!([{ "role": "tool", "content": [{ "type": "text", "text": "a" }] }])),
        "messages[0].content[0].type: expected \"tool-result\" in a tool message, got \"text\""
    );
    assert_eq!(
        err(json!([{ "role": "system", "content": [{ "type": "image", "image": "a" }] }])),
        "messages[0].content[0].type: expected \"text\" in a system message, got \"image\""
    );
}

#[test]
fn malformed_parts_and_missing_fields_name_their_path() {
    assert_eq!(
        err(json!([{ "role": "user", "content": ["hi"] }])),
        "messages[0].content[0]: expected a part object with a \"type\", got a string"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": [{ "text": "hi" }] }])),
        "messages[0].content[0].type: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": [{ "type": "text" }] }])),
        "messages[0].content[0].text: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "content": [{ "type": "tool-call", "toolName": "t" }] }])),
        "messages[0].content[0].toolCallId: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "content": [{ "type": "tool-call", "toolCallId": "c" }] }])),
        "messages[0].content[0].toolName: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "tool", "content": [{ "type": "tool-result", "toolName": "t" }] }])),
        "messages[0].content[0].toolCallId: expected a string, got undefined"
    );
    assert_eq!(
        err(
            json!([{ "role": "tool", "content": [{ "type": "tool-result", "toolCallId": "c", "toolName": "t", "isError": "yes" }] }])
        ),
        "messages[0].content[0].isError: expected a boolean, got a string"
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "content": [{ "type": "reasoning" }] }])),
        "messages[0].content[0].text: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": [{ "type": "image", "image": 1 }] }])),
        "messages[0].content[0].image: expected a URL or base64 string, got a number"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": [{ "type": "file", "data": "aGk=" }] }])),
        "messages[0].content[0].mediaType: expected a media type string such as \"application/pdf\", got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": [{ "type": "file", "mediaType": "a/b" }] }])),
        "messages[0].content[0].data: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": [{ "type": "file", "data": "x", "mediaType": 4 }] }])),
        "messages[0].content[0].mediaType: expected a string, got a number"
    );
}

#[test]
fn errors_use_the_field_name_the_caller_gives() {
    let e = parse_messages(&json!([{ "role": "nope" }]), "options.context").unwrap_err();
    assert_eq!(field_of(e), "options.context[0].role");
    let e = parse_messages(&json!({ "role": "user", "content": 1 }), "messages").unwrap_err();
    assert_eq!(field_of(e), "messages.content");
}

// --- AI SDK v5 UI messages ------------------------------------------------------------------

#[test]
fn ui_user_messages_keep_text_and_files() {
    let got = msgs(json!([{ "id": "m1", "role": "user", "parts": [
        { "type": "text", "text": "what is this?" },
        { "type": "file", "url": "data:image/png;base64,iVBOR", "mediaType": "image/png", "filename": "x.png" },
        { "type": "file", "url": "https://x.test/doc.pdf", "mediaType": "application/pdf" },
        { "type": "data-context", "data": { "page": 3 } },
        { "type": "step-start" },
    ]}]));
    assert_eq!(
        got,
        vec![ModelMessage::User(vec![
            UserPart::Text("what is this?".into()),
            file("data:image/png;base64,iVBOR", "image/png", Some("x.png")),
            file("https://x.test/doc.pdf", "application/pdf", None),
        ])]
    );
}

#[test]
fn ui_system_messages_join_their_text_parts() {
    let got = msgs(
        json!([{ "role": "system", "parts": [{ "type": "text", "text": "A" }, { "type": "text", "text": "B" }] }]),
    );
    assert_eq!(got, vec![ModelMessage::System("A\nB".into())]);
}

#[test]
fn ui_assistant_tool_parts_become_a_call_then_a_tool_message_per_step() {
    let got = msgs(json!([
        { "role": "user", "parts": [{ "type": "text", "text": "weather?" }] },
        { "id": "a1", "role": "assistant", "parts": [
            { "type": "step-start" },
            { "type": "reasoning", "text": "need weather" },
            { "type": "text", "text": "Checking." },
            { "type": "tool-weather", "toolCallId": "c1", "state": "output-available", "input": { "city": "Oslo" }, "output": { "c": 4 } },
            { "type": "dynamic-tool", "toolName": "lookup", "toolCallId": "c2", "state": "output-error", "input": { "q": 1 }, "errorText": "timeout" },
            { "type": "step-start" },
            { "type": "text", "text": "It is 4 degrees." },
        ]},
    ]));
    assert_eq!(
        got,
        vec![
            user("weather?"),
            ModelMessage::Assistant(vec![
                AssistantPart::Reasoning("need weather".into(), None),
                atext("Checking."),
                call("c1", "weather", json!({ "city": "Oslo" })),
                call("c2", "lookup", json!({ "q": 1 })),
            ]),
            ModelMessage::Tool(vec![
                result("c1", "weather", json!({ "c": 4 }), false),
                result("c2", "lookup", json!("timeout"), true)
            ]),
            ModelMessage::Assistant(vec![atext("It is 4 degrees.")]),
        ]
    );
}

#[test]
fn ui_assistant_without_step_start_is_one_assistant_and_one_tool_message() {
    let got = msgs(json!([{ "role": "assistant", "parts": [
        { "type": "tool-a", "toolCallId": "1", "state": "output-available", "input": {}, "output": 1 },
        { "type": "text", "text": "between" },
        { "type": "tool-b", "toolCallId": "2", "state": "output-available", "input": {}, "output": 2 },
    ]}]));
    assert_eq!(
        got,
        vec![
            ModelMessage::Assistant(vec![call("1", "a", json!({})), atext("between"), call("2", "b", json!({}))]),
            ModelMessage::Tool(vec![result("1", "a", json!(1), false), result("2", "b", json!(2), false)]),
        ]
    );
}

#[test]
fn ui_tool_parts_without_a_result_are_dropped() {
    let got = msgs(json!([{ "role": "assistant", "parts": [
        { "type": "text", "text": "working" },
        { "type": "tool-search", "toolCallId": "s1", "state": "input-streaming", "input": { "q": "so" } },
        { "type": "tool-search", "toolCallId": "s2", "state": "input-available", "input": { "q": "sol" } },
        { "type": "dynamic-tool", "toolName": "x", "toolCallId": "s3", "state": "approval-requested", "input": {} },
        { "type": "tool-search", "toolCallId": "s4", "state": "approval-responded", "input": {} },
    ]}]));
    assert_eq!(got, vec![ModelMessage::Assistant(vec![atext("working")])]);
    // A message left with nothing for the model disappears.
    let got = msgs(json!([{ "role": "assistant", "parts": [
        { "type": "step-start" },
        { "type": "tool-search", "toolCallId": "s1", "state": "input-available", "input": {} },
    ]}]));
    assert_eq!(got, vec![]);
}

#[test]
fn ui_denied_tool_calls_become_error_results() {
    let got = msgs(json!([{ "role": "assistant", "parts": [
        { "type": "tool-pay", "toolCallId": "p1", "state": "output-denied", "input": { "eur": 5 }, "approval": { "id": "x", "approved": false, "reason": "too much" } },
        { "type": "tool-pay", "toolCallId": "p2", "state": "output-denied", "input": {} },
    ]}]));
    assert_eq!(
        got,
        vec![
            ModelMessage::Assistant(vec![call("p1", "pay", json!({ "eur": 5 })), call("p2", "pay", json!({}))]),
            ModelMessage::Tool(vec![
                result("p1", "pay", json!("too much"), true),
                result("p2", "pay", json!("Tool execution denied."), true)
            ]),
        ]
    );
}

#[test]
fn ui_outputs_are_raw_values_not_wrappers() {
    let got = msgs(json!([{ "role": "assistant", "parts": [
        { "type": "tool-t", "toolCallId": "1", "state": "output-available", "input": {}, "output": { "type": "text", "value": "v" } },
    ]}]));
    assert_eq!(got[1], ModelMessage::Tool(vec![result("1", "t", json!({ "type": "text", "value": "v" }), false)]));
}

#[test]
fn ui_sources_data_and_assistant_files_are_ignored() {
    let got = msgs(json!([{ "role": "assistant", "parts": [
        { "type": "source-url", "sourceId": "s", "url": "https://x.test" },
        { "type": "source-document", "sourceId": "d", "mediaType": "application/pdf", "title": "t" },
        { "type": "file", "url": "data:image/png;base64,iVBOR", "mediaType": "image/png" },
        { "type": "file" },
        { "type": "data-weather", "data": {} },
        { "type": "text", "text": "done" },
    ]}]));
    assert_eq!(got, vec![ModelMessage::Assistant(vec![atext("done")])]);
}

#[test]
fn ui_errors_name_the_part_path() {
    assert_eq!(
        err(json!([{ "role": "user", "parts": [{ "type": "text", "text": "a" }, { "type": "tool-x", "toolCallId": "1", "state": "output-available" }] }])),
        "messages[0].parts[1].type: expected \"text\", \"file\", \"step-start\" or \"data-<name>\" in a user UI message, got \"tool-x\""
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "parts": [{ "type": "tool-x", "toolCallId": "1", "state": "done" }] }])),
        "messages[0].parts[0].state: expected \"input-streaming\", \"input-available\", \"approval-requested\", \"approval-responded\", \"output-available\", \"output-error\" or \"output-denied\", got \"done\""
    );
    assert_eq!(
        err(
            json!([{ "role": "assistant", "parts": [{ "type": "tool-x", "state": "output-available", "output": 1 }] }])
        ),
        "messages[0].parts[0].toolCallId: expected a string, got undefined"
    );
    assert_eq!(
        err(
            json!([{ "role": "assistant", "parts": [{ "type": "dynamic-tool", "toolCallId": "1", "state": "output-available" }] }])
        ),
        "messages[0].parts[0].toolName: expected a string, got undefined"
    );
    let e = err(json!([{ "role": "assistant", "parts": [{ "type": "mystery" }] }]));
    assert!(
        e.starts_with("messages[0].parts[0].type: expected \"text\", \"reasoning\", \"file\", \"tool-<name>\""),
        "{e}"
    );
    assert!(e.ends_with("in an assistant UI message, got \"mystery\""), "{e}");
    assert_eq!(
        err(json!([{ "role": "user", "parts": "hi" }])),
        "messages[0].parts: expected an array of parts, got a string"
    );
    assert_eq!(
        err(json!([{ "role": "user", "parts": [{ "type": "file", "mediaType": "image/png" }] }])),
        "messages[0].parts[0].url: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "system", "parts": [{ "type": "file", "url": "x" }] }])),
        "messages[0].parts[0].type: expected \"text\", \"step-start\" or \"data-<name>\" in a system UI message, got \"file\""
    );
}

#[test]
fn ui_v4_messages_with_attachments() {
    let got = msgs(json!([{ "role": "user", "content": "see", "parts": [{ "type": "text", "text": "see" }],
        "experimental_attachments": [{ "name": "a.png", "contentType": "image/png", "url": "https://x.test/a.png" }, { "url": "data:text/plain;base64,aGk=" }] }]));
    assert_eq!(
        got,
        vec![ModelMessage::User(vec![
            UserPart::Text("see".into()),
            file("https://x.test/a.png", "image/png", Some("a.png")),
            file("data:text/plain;base64,aGk=", "text/plain", None),
        ])]
    );
    assert_eq!(
        err(json!([{ "role": "user", "parts": [], "experimental_attachments": [{ "url": "https://x.test/a" }] }])),
        "messages[0].experimental_attachments[0].contentType: expected a media type string, got undefined"
    );
}

// --- Mastra stored messages (format 2) ------------------------------------------------------

#[test]
fn stored_messages_convert_text_reasoning_files_and_tool_invocations() {
    let got = msgs(json!([
        { "id": "u1", "role": "user", "createdAt": "2025-01-01T00:00:00Z", "content": { "format": 2, "parts": [
            { "type": "text", "text": "picture:" },
            { "type": "file", "mimeType": "image/jpeg", "data": "/9j/4AAQ" },
        ]}},
        { "id": "a1", "role": "assistant", "content": { "format": 2, "parts": [
            { "type": "step-start" },
            { "type": "reasoning", "reasoning": "hm", "details": [{ "type": "text", "text": "hm" }] },
            { "type": "tool-invocation", "toolInvocation": { "state": "result", "toolCallId": "c1", "toolName": "weather", "args": { "city": "Oslo" }, "result": { "c": 4 } } },
            { "type": "tool-invocation", "toolInvocation": { "state": "call", "toolCallId": "c2", "toolName": "weather", "args": {} } },
            { "type": "data-progress", "data": 1 },
            { "type": "step-start" },
            { "type": "reasoning", "text": "v5 style" },
            { "type": "reasoning", "details": [{ "type": "text", "text": "a" }, { "type": "redacted", "data": "x" }, { "type": "text", "text": "b" }] },
            { "type": "text", "text": "4 degrees" },
        ], "content": "4 degrees" }},
    ]));
    assert_eq!(
        got,
        vec![
            ModelMessage::User(vec![UserPart::Text("picture:".into()), file("/9j/4AAQ", "image/jpeg", None)]),
            ModelMessage::Assistant(vec![
                AssistantPart::Reasoning("hm".into(), None),
                call("c1", "weather", json!({ "city": "Oslo" }))
            ]),
            ModelMessage::Tool(vec![result("c1", "weather", json!({ "c": 4 }), false)]),
            ModelMessage::Assistant(vec![
                AssistantPart::Reasoning("v5 style".into(), None),
                AssistantPart::Reasoning("ab".into(), None),
                atext("4 degrees"),
            ]),
        ]
    );
}

#[test]
fn stored_messages_fall_back_to_content_text_and_read_attachments() {
    let got = msgs(json!([
        { "role": "user", "content": { "format": 2, "parts": [], "content": "hello",
            "experimental_attachments": [{ "url": "https://x.test/a.pdf", "contentType": "application/pdf" }] } },
        { "role": "assistant", "content": { "format": 2, "parts": [], "content": "hi" } },
        { "role": "assistant", "content": { "format": 2, "parts": [{ "type": "text", "text": "parts win" }], "content": "ignored" } },
    ]));
    assert_eq!(
        got,
        vec![
            ModelMessage::User(vec![
                UserPart::Text("hello".into()),
                file("https://x.test/a.pdf", "application/pdf", None)
            ]),
            ModelMessage::Assistant(vec![atext("hi")]),
            ModelMessage::Assistant(vec![atext("parts win")]),
        ]
    );
}

#[test]
fn stored_message_errors_name_the_content_path() {
    assert_eq!(
        err(json!([{ "role": "assistant", "content": { "format": 2, "parts": [{ "type": "tool-invocation", "toolInvocation": { "state": "done" } }] } }])),
        "messages[0].content.parts[0].toolInvocation.state: expected \"partial-call\", \"call\" or \"result\", got \"done\""
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "content": { "format": 2, "parts": [{ "type": "tool-invocation" }] } }])),
        "messages[0].content.parts[0].toolInvocation: expected an object, got undefined"
    );
    assert_eq!(
        err(
            json!([{ "role": "assistant", "content": { "format": 2, "parts": [{ "type": "tool-invocation", "toolInvocation": { "state": "result", "toolCallId": "c" } }] } }])
        ),
        "messages[0].content.parts[0].toolInvocation.toolName: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": { "format": 2, "parts": {} } }])),
        "messages[0].content.parts: expected an array of parts, got an object"
    );
    assert_eq!(
        err(json!([{ "role": "assistant", "content": { "format": 2, "parts": [{ "type": "reasoning" }] } }])),
        "messages[0].content.parts[0].text: expected a string, got undefined"
    );
    assert_eq!(
        err(json!([{ "role": "user", "content": { "format": 2, "parts": [], "content": 5 } }])),
        "messages[0].content.content: expected a string, got a number"
    );
}

#[test]
fn all_forms_mix_in_one_conversation() {
    let got = msgs(json!([
        "plain",
        { "role": "user", "content": [{ "type": "text", "text": "model" }] },
        { "role": "user", "parts": [{ "type": "text", "text": "ui" }] },
        { "role": "user", "content": { "format": 2, "parts": [{ "type": "text", "text": "stored" }] } },
    ]));
    assert_eq!(got, vec![user("plain"), user("model"), user("ui"), user("stored")]);
}

#[test]
fn odd_input_never_panics() {
    let odd = [
        json!(null),
        json!(1),
        json!(-1.5),
        json!("s"),
        json!([]),
        json!({}),
        json!(true),
        json!([null]),
        json!({ "type": 1 }),
        json!({ "role": 1 }),
        json!({ "parts": null }),
        json!({ "content": { "parts": null } }),
    ];
    for v in &odd {
        for role in ["system", "user", "assistant", "tool", "x"] {
            let shapes = [
                v.clone(),
                json!([v]),
                json!([{ "role": role, "content": v }]),
                json!([{ "role": role, "content": [v] }]),
                json!([{ "role": role, "content": [{ "type": "tool-result", "toolCallId": "c", "toolName": "t", "output": v }] }]),
                json!([{ "role": role, "parts": v }]),
                json!([{ "role": role, "parts": [v] }]),
                json!([{ "role": role, "parts": [{ "type": "tool-x", "state": v, "toolCallId": v }] }]),
                json!([{ "role": role, "parts": [{ "type": "tool-invocation", "toolInvocation": v }] }]),
                json!([{ "role": role, "content": { "format": 2, "parts": [v], "content": v } }]),
            ];
            for shape in &shapes {
                let _ = parse_messages(shape, "messages");
                let _ = parse_instructions(shape, "instructions");
                let _ = parse_model_settings(shape, "options.modelSettings");
                let _ = parse_tool_choice(shape, "options.toolChoice");
            }
        }
        let _ = parse_model_settings(&json!({ "temperature": v, "stopSequences": v, "headers": v, "seed": v }), "m");
    }
}

// --- instructions ---------------------------------------------------------------------------

#[test]
fn instructions_take_strings_and_system_messages() {
    let i = |v: Value| parse_instructions(&v, "config.instructions");
    assert_eq!(i(json!("Be terse.")).unwrap(), vec!["Be terse."]);
    assert_eq!(i(json!("")).unwrap(), Vec::<String>::new());
    assert_eq!(i(json!(["a", "", "b"])).unwrap(), vec!["a", "b"]);
    assert_eq!(i(json!({ "role": "system", "content": "sys" })).unwrap(), vec!["sys"]);
    assert_eq!(
        i(json!(["a", { "role": "system", "content": [{ "type": "text", "text": "x" }, { "type": "text", "text": "y" }] }, { "role": "system", "content": "" }])).unwrap(),
        vec!["a", "x\ny"]
    );
}

#[test]
fn instruction_errors_name_the_field() {
    let i = |v: Value| parse_instructions(&v, "config.instructions").unwrap_err().to_string();
    assert_eq!(
        i(json!(5)),
        "config.instructions: expected a string, an array of strings, or system messages, got a number"
    );
    assert_eq!(i(json!(["a", 5])), "config.instructions[1]: expected a string or a system message, got a number");
    assert_eq!(
        i(json!([{ "role": "user", "content": "x" }])),
        "config.instructions[0].role: expected \"system\", got \"user\""
    );
    assert_eq!(
        i(json!({ "role": "system", "content": 1 })),
        "config.instructions.content: expected a string or an array of text parts, got a number"
    );
}

// --- model settings -------------------------------------------------------------------------

const MS: &str = "options.modelSettings";

fn settings_err(v: Value) -> String {
    parse_model_settings(&v, MS).unwrap_err().to_string()
}

#[test]
fn model_settings_read_every_field() {
    let s = parse_model_settings(
        &json!({
            "temperature": 0.2, "maxOutputTokens": 500, "maxRetries": 3, "topP": 0.9, "topK": 40,
            "presencePenalty": 0.1, "frequencyPenalty": -0.5, "stopSequences": ["END", "STOP"], "seed": -7,
            "headers": { "x-team": "a", "Authorization": "Bearer k", "x-skip": null }, "somethingElse": [1],
        }),
        MS,
    )
    .unwrap();
    assert_eq!(
        s,
        ModelSettings {
            temperature: Some(0.2),
            max_output_tokens: Some(500),
            top_p: Some(0.9),
            top_k: Some(40.0),
            presence_penalty: Some(0.1),
            frequency_penalty: Some(-0.5),
            stop_sequences: vec!["END".into(), "STOP".into()],
            seed: Some(-7),
            max_retries: Some(3),
            headers: vec![("x-team".into(), "a".into()), ("Authorization".into(), "Bearer k".into())],
        }
    );
}

#[test]
fn model_settings_default_when_null_or_empty() {
    assert_eq!(parse_model_settings(&json!(null), MS).unwrap(), ModelSettings::default());
    assert_eq!(parse_model_settings(&json!({}), MS).unwrap(), ModelSettings::default());
    assert_eq!(
        parse_model_settings(&json!({ "temperature": null, "stopSequences": null }), MS).unwrap(),
        ModelSettings::default()
    );
    assert_eq!(parse_model_settings(&json!({ "maxRetries": 100.0 }), MS).unwrap().max_retries, Some(100));
}

#[test]
fn model_settings_errors_name_the_setting() {
    assert_eq!(settings_err(json!("hot")), "options.modelSettings: expected an object, got a string");
    assert_eq!(settings_err(json!([])), "options.modelSettings: expected an object, got an array");
    assert_eq!(
        settings_err(json!({ "temperature": "0.5" })),
        "options.modelSettings.temperature: expected a number, got a string"
    );
    assert_eq!(
        settings_err(json!({ "maxOutputTokens": -1 })),
        "options.modelSettings.maxOutputTokens: expected a non-negative integer, got -1"
    );
    assert_eq!(
        settings_err(json!({ "maxOutputTokens": 10.5 })),
        "options.modelSettings.maxOutputTokens: expected a non-negative integer, got 10.5"
    );
    assert_eq!(
        settings_err(json!({ "maxRetries": 101 })),
        "options.modelSettings.maxRetries: expected an integer from 0 to 100, got 101"
    );
    assert_eq!(
        settings_err(json!({ "maxRetries": true })),
        "options.modelSettings.maxRetries: expected an integer from 0 to 100, got a boolean"
    );
    assert_eq!(settings_err(json!({ "topK": [] })), "options.modelSettings.topK: expected a number, got an array");
    assert_eq!(settings_err(json!({ "seed": 1.5 })), "options.modelSettings.seed: expected an integer, got 1.5");
    assert_eq!(
        settings_err(json!({ "stopSequences": "END" })),
        "options.modelSettings.stopSequences: expected an array, got a string"
    );
    assert_eq!(
        settings_err(json!({ "stopSequences": ["a", 1] })),
        "options.modelSettings.stopSequences[1]: expected a string, got a number"
    );
    assert_eq!(
        settings_err(json!({ "headers": ["a"] })),
        "options.modelSettings.headers: expected an object, got an array"
    );
    assert_eq!(
        settings_err(json!({ "headers": { "x-api-key": 42 } })),
        "options.modelSettings.headers[\"x-api-key\"]: expected a string, got a number"
    );
    assert_eq!(
        settings_err(json!({ "headers": { "Accept": {} } })),
        "options.modelSettings.headers.Accept: expected a string, got an object"
    );
}

// --- tool choice ----------------------------------------------------------------------------

#[test]
fn tool_choice_forms() {
    let tc = |v: Value| parse_tool_choice(&v, "options.toolChoice");
    assert_eq!(tc(json!("auto")).unwrap(), ToolChoice::Auto);
    assert_eq!(tc(json!("none")).unwrap(), ToolChoice::None);
    assert_eq!(tc(json!("required")).unwrap(), ToolChoice::Required);
    assert_eq!(tc(json!({ "type": "tool", "toolName": "weather" })).unwrap(), ToolChoice::Tool("weather".into()));
}

#[test]
fn tool_choice_errors() {
    let tc = |v: Value| parse_tool_choice(&v, "options.toolChoice").unwrap_err().to_string();
    assert_eq!(
        tc(json!("any")),
        "options.toolChoice: expected \"auto\", \"none\", \"required\" or { type: \"tool\", toolName }, got \"any\""
    );
    assert_eq!(
        tc(json!(1)),
        "options.toolChoice: expected \"auto\", \"none\", \"required\" or { type: \"tool\", toolName }, got a number"
    );
    assert_eq!(
        tc(json!({ "type": "function", "toolName": "x" })),
        "options.toolChoice.type: expected \"tool\", got \"function\""
    );
    assert_eq!(tc(json!({ "toolName": "x" })), "options.toolChoice.type: expected \"tool\", got undefined");
    assert_eq!(tc(json!({ "type": "tool" })), "options.toolChoice.toolName: expected a string, got undefined");
}

#[test]
fn only_user_ui_messages_keep_their_ids() {
    let input = json!([
        { "id": "u1", "role": "user", "parts": [{ "type": "text", "text": "hi" }] },
        { "id": "a1", "role": "assistant", "parts": [{ "type": "text", "text": "hello" }] },
        { "id": "m1", "role": "user", "content": "model form" },
        "plain",
        { "id": "", "role": "user", "parts": [{ "type": "text", "text": "empty id" }] },
    ]);
    let (messages, ids) = parse_messages_with_ids(&input, "messages").unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(ids, vec![Some("u1".to_string()), None, None, None, None]);
    assert_eq!(parse_messages_with_ids(&json!("hi"), "messages").unwrap().1, vec![None]);
}
