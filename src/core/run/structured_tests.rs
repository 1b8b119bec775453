//! Structured output in the loop, natively: the schema on every step, `object-result` between the
//! final step's `text-end` and `step-finish`, and each error strategy.

use serde_json::{json, Value};

use super::tools::{calls_reply, text_reply, tool};
use super::*;
use crate::core::run::structured::{
    parse_options, ErrorStrategy, Injection, StructuredOptions, StructuredOutput, StructuringModel, PARSE_FAILED,
    TRUNCATED, VALIDATION_FAILED,
};

fn title_schema() -> Value {
    json!({ "type": "object", "properties": { "title": { "type": "string" }, "pages": { "type": "integer" } }, "required": ["title"] })
}

fn opts(strategy: ErrorStrategy, injection: Injection) -> StructuredOptions {
    StructuredOptions { strategy, instructions: None, injection, provider_options: None }
}

fn cfg_with(schema: Value, strategy: ErrorStrategy, strict_target: bool) -> RunConfig {
    let mut cfg = config(0, false);
    cfg.structured =
        Some(Rc::new(StructuredOutput::new(schema, strict_target, opts(strategy, Injection::Native), None)));
    cfg
}

fn body(script: &Script, i: usize) -> Value {
    serde_json::from_str(&script.requests.borrow()[i].body).unwrap()
}

fn structured(out: &RunOutcome) -> &crate::core::run::structured::StructuredResult {
    out.structured.as_ref().expect("structured output settled")
}

#[test]
fn the_final_text_becomes_object_result_between_text_end_and_step_finish() {
    let (script, sink, out) = run_script(
        vec![text_reply(r#"{"title":"Dune","pages":412}"#)],
        cfg_with(title_schema(), ErrorStrategy::Strict, false),
    );
    assert_eq!(
        sink.types(),
        [
            "start",
            "step-start",
            "text-start",
            "object",
            "text-delta",
            "text-end",
            "object-result",
            "step-finish",
            "finish"
        ]
    );
    let chunks = sink.chunks.borrow();
    assert_eq!(chunks[6], Chunk::ObjectResult { object: json!({ "title": "Dune", "pages": 412 }), metadata: None });
    assert_eq!(structured(&out).object, Some(json!({ "title": "Dune", "pages": 412 })));
    let full = out.output_json("run1");
    assert_eq!(full["object"], json!({ "title": "Dune", "pages": 412 }));
    assert_eq!(full["usedFallbackValue"], false);
    assert_eq!(full["text"], r#"{"title":"Dune","pages":412}"#, "text stays the raw JSON");
    let format = &body(&script, 0)["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["schema"], title_schema());
    assert_eq!(format["json_schema"]["strict"], false, "not strict-compatible, and not an openai/ model");
}

#[test]
fn prose_in_a_tool_step_never_fails_the_run_and_the_schema_rides_on_every_step() {
    let mut cfg = cfg_with(title_schema(), ErrorStrategy::Strict, false);
    cfg.tools = vec![tool("weather")];
    let first = {
        let events = vec![
            super::delta("content", "Let me look that up."),
            super::tools::tool_call_event(0, "c1", "weather", r#"{"city":"Paris"}"#),
            super::finish("tool_calls"),
        ];
        ok_stream(&events)
    };
    let (script, sink, out) = run_script(vec![first, text_reply(r#"{"title":"Paris"}"#)], cfg);
    assert_eq!(sink.types().iter().filter(|t| **t == "object-result").count(), 1);
    assert!(!sink.types().contains(&"error"), "{:?}", sink.types());
    assert_eq!(structured(&out).object, Some(json!({ "title": "Paris" })));
    for i in 0..2 {
        let b = body(&script, i);
        assert!(b["response_format"].is_object(), "step {i}");
        assert_eq!(b["tools"][0]["function"]["name"], "weather", "step {i}");
    }
}

#[test]
fn strict_failures_are_an_error_chunk_in_place_of_object_result_and_the_run_finishes() {
    let (_, sink, out) =
        run_script(vec![text_reply("Sure! Here you go.")], cfg_with(title_schema(), ErrorStrategy::Strict, false));
    assert_eq!(
        sink.types(),
        ["start", "step-start", "text-start", "text-delta", "text-end", "error", "step-finish", "finish"]
    );
    let err = structured(&out).error.clone().unwrap();
    let json = crate::core::chunk::error_json(&err);
    assert_eq!(json["name"], "StructuredOutputError");
    assert_eq!(json["code"], PARSE_FAILED);
    assert_eq!(json["id"], PARSE_FAILED);
    assert_eq!(json["details"], json!({ "value": "Sure! Here you go." }));
    assert!(out.error.is_none(), "the run itself did not fail");
    assert_eq!(out.finish_reason(), FinishReason::Stop);
}

#[test]
fn schema_violations_list_one_line_per_issue() {
    let (_, _, out) =
        run_script(vec![text_reply(r#"{"pages":"many"}"#)], cfg_with(title_schema(), ErrorStrategy::Strict, false));
    let err = structured(&out).error.clone().unwrap();
    let AgentError::StructuredOutput { code, message, value } = &err else { panic!("{err:?}") };
    assert_eq!(*code, VALIDATION_FAILED);
    assert_eq!(value, r#"{"pages":"many"}"#);
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines[0], "Structured output validation failed:");
    assert!(lines.contains(&"- pages: expected an integer, got a string"), "{message}");
    assert!(lines.iter().any(|l| l.starts_with("- root: ") && l.contains("title")), "{message}");
}

#[test]
fn warn_tells_the_logger_and_sends_no_object_result() {
    let (_, sink, out) = run_script(vec![text_reply("not json")], cfg_with(title_schema(), ErrorStrategy::Warn, false));
    assert!(!sink.types().contains(&"object-result") && !sink.types().contains(&"error"));
    let s = structured(&out);
    assert!(s.object.is_none() && s.error.is_none());
    assert!(s.warning.as_deref().unwrap().starts_with("Structured output could not be parsed"), "{s:?}");
    assert!(out.output_json("r").get("object").is_none());
}

#[test]
fn fallback_delivers_the_fallback_value_marked_as_such() {
    let (_, sink, out) = run_script(
        vec![text_reply("{\"title\": 3}")],
        cfg_with(title_schema(), ErrorStrategy::Fallback(json!({ "title": "?" })), false),
    );
    let chunks = sink.chunks.borrow();
    let result = chunks.iter().find(|c| c.type_name() == "object-result").unwrap();
    assert_eq!(
        *result,
        Chunk::ObjectResult { object: json!({ "title": "?" }), metadata: Some(json!({ "fallback": true })) }
    );
    assert_eq!(out.output_json("r")["usedFallbackValue"], true);
}

#[test]
fn a_truncated_reply_and_a_run_ending_on_a_tool_step_fail_by_the_strategy() {
    let cut = ok_stream(&[super::delta("content", "{\"title\":\"Du"), super::finish("length")]);
    let (_, _, out) = run_script(vec![cut], cfg_with(title_schema(), ErrorStrategy::Strict, false));
    assert!(matches!(structured(&out).error, Some(AgentError::StructuredOutput { code: TRUNCATED, .. })));
    let mut cfg = cfg_with(title_schema(), ErrorStrategy::Strict, false);
    cfg.tools = vec![tool("weather")];
    cfg.max_steps = 1;
    let (_, sink, out) = run_script(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)])], cfg);
    assert!(matches!(structured(&out).error, Some(AgentError::StructuredOutput { code: PARSE_FAILED, .. })));
    let types = sink.types();
    let error_at = types.iter().position(|t| *t == "error").unwrap();
    assert_eq!(types[error_at + 1], "step-finish");
}

#[test]
fn arrays_and_enums_are_unwrapped_for_the_caller() {
    let list = json!({ "type": "array", "items": { "type": "string" } });
    let (script, _, out) =
        run_script(vec![text_reply(r#"{"elements":["a","b"]}"#)], cfg_with(list, ErrorStrategy::Strict, false));
    assert_eq!(structured(&out).object, Some(json!(["a", "b"])));
    assert_eq!(body(&script, 0)["response_format"]["json_schema"]["schema"]["properties"]["elements"]["type"], "array");
    let mood = json!({ "type": "string", "enum": ["happy", "sad"] });
    let (_, _, out) = run_script(
        vec![text_reply("```json\n{\"result\":\"sad\"}\n```")],
        cfg_with(mood, ErrorStrategy::Strict, false),
    );
    assert_eq!(structured(&out).object, Some(json!("sad")));
}

#[test]
fn openai_models_get_a_strict_schema_and_its_nulls_are_removed_before_validation() {
    let (script, _, out) = run_script(
        vec![text_reply(r#"{"title":"Dune","pages":null}"#)],
        cfg_with(title_schema(), ErrorStrategy::Strict, true),
    );
    let sent = &body(&script, 0)["response_format"]["json_schema"];
    assert_eq!(sent["strict"], true);
    assert_eq!(sent["schema"]["required"], json!(["title", "pages"]));
    assert_eq!(sent["schema"]["properties"]["pages"], json!({ "anyOf": [{ "type": "integer" }, { "type": "null" }] }));
    assert_eq!(structured(&out).object, Some(json!({ "title": "Dune" })));
}

#[test]
fn prompt_injection_goes_to_the_system_message_or_the_latest_user_message() {
    let schema = title_schema();
    let mut cfg = config(0, false);
    cfg.request.messages.insert(0, ModelMessage::System("Be brief.".into()));
    cfg.structured = Some(Rc::new(StructuredOutput::new(
        schema.clone(),
        false,
        opts(ErrorStrategy::Strict, Injection::System),
        None,
    )));
    let (script, _, _) = run_script(vec![text_reply(r#"{"title":"x"}"#)], cfg);
    let b = body(&script, 0);
    assert!(b.get("response_format").is_none());
    let system = b["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("Be brief.\n\n") && system.contains(&schema.to_string()), "{system}");
    let mut cfg = config(0, false);
    let mut o = opts(ErrorStrategy::Strict, Injection::Inline);
    o.instructions = Some("Give the book's title.".into());
    cfg.structured = Some(Rc::new(StructuredOutput::new(schema, false, o, None)));
    let (script, _, _) = run_script(vec![text_reply(r#"{"title":"x"}"#)], cfg);
    let b = body(&script, 0);
    let user = &b["messages"][0]["content"];
    assert_eq!(user[0], json!({ "type": "text", "text": "hi" }));
    let injected = user[1]["text"].as_str().unwrap();
    assert!(injected.contains("Give the book's title.") && !injected.contains("\"properties\""), "{injected}");
}

#[test]
fn options_are_checked_with_errors_naming_the_field() {
    let f = "options.structuredOutput";
    let err = |v: Value| parse_options(&v, f).unwrap_err().to_string();
    assert_eq!(
        err(json!({ "errorStrategy": "loud" })),
        "options.structuredOutput.errorStrategy: expected 'strict', 'warn' or 'fallback', got 'loud'"
    );
    assert!(
        err(json!({ "errorStrategy": "fallback" })).starts_with("options.structuredOutput.fallbackValue: is required")
    );
    assert!(err(json!({ "jsonPromptInjection": "everywhere" }))
        .starts_with("options.structuredOutput.jsonPromptInjection: expected a boolean"));
    assert!(err(json!({ "instructions": 3 })).starts_with("options.structuredOutput.instructions:"));
    assert!(err(json!({ "providerOptions": { "openai": 1 } }))
        .starts_with("options.structuredOutput.providerOptions.openai:"));
    let ok =
        parse_options(&json!({ "errorStrategy": "fallback", "fallbackValue": null, "jsonPromptInjection": true }), f)
            .unwrap();
    assert_eq!(ok.strategy, ErrorStrategy::Fallback(Value::Null));
    assert_eq!(ok.injection, Injection::System);
    assert_eq!(parse_options(&json!({ "jsonPromptInjection": "auto" }), f).unwrap().injection, Injection::Native);
}

/// The chunks after `text-start` as (type, object or text).
fn stream_of(sink: &Collect) -> Vec<(String, Value)> {
    sink.chunks
        .borrow()
        .iter()
        .filter_map(|c| match c {
            Chunk::Object { object } => Some(("object".into(), Value::clone(object))),
            Chunk::TextDelta { text, .. } => Some(("text".into(), Value::from(text.as_str()))),
            _ => None,
        })
        .collect()
}

fn deltas(pieces: &[&str], finish_reason: &str) -> Reply {
    let mut events: Vec<String> = pieces.iter().map(|p| super::delta("content", p)).collect();
    events.push(super::finish(finish_reason));
    ok_stream(&events)
}

#[test]
fn an_object_chunk_comes_just_before_the_delta_that_changed_the_partial_value() {
    let reply = deltas(&["{\"ti", "tle\":\"Du", "ne\",\"pa", "ges\":41", "2}"], "stop");
    let (_, sink, out) = run_script(vec![reply], cfg_with(title_schema(), ErrorStrategy::Strict, false));
    let o = |v: Value| ("object".to_string(), v);
    let t = |s: &str| ("text".to_string(), Value::from(s));
    assert_eq!(
        stream_of(&sink),
        [
            o(json!({})),
            t("{\"ti"),
            o(json!({ "title": "Du" })),
            t("tle\":\"Du"),
            o(json!({ "title": "Dune" })),
            t("ne\",\"pa"),
            t("ges\":41"),
            o(json!({ "title": "Dune", "pages": 412 })),
            t("2}"),
        ]
    );
    assert_eq!(structured(&out).object, Some(json!({ "title": "Dune", "pages": 412 })));
}

#[test]
fn partials_are_unwrapped_enums_match_one_value_and_strict_nulls_are_hidden() {
    let mood = json!({ "type": "string", "enum": ["happy", "hopeful", "sad"] });
    let (_, sink, _) = run_script(
        vec![deltas(&["{\"result\":\"h", "o", "pef", "ul\"}"], "stop")],
        cfg_with(mood, ErrorStrategy::Strict, false),
    );
    let objects: Vec<Value> = stream_of(&sink).into_iter().filter(|(k, _)| k == "object").map(|(_, v)| v).collect();
    assert_eq!(
        objects,
        [json!("h"), json!("hopeful")],
        "\"ho\" matches one value only; later prefixes show it unchanged"
    );
    let list = json!({ "type": "array", "items": { "type": "object", "properties": { "n": { "type": "integer" } } } });
    let (_, sink, out) = run_script(
        vec![deltas(&["{\"elements\":[{\"n\":1},", "{\"n\":null", "}]}"], "stop")],
        cfg_with(list, ErrorStrategy::Strict, true),
    );
    let objects: Vec<Value> = stream_of(&sink).into_iter().filter(|(k, _)| k == "object").map(|(_, v)| v).collect();
    assert_eq!(objects, [json!([{ "n": 1 }]), json!([{ "n": 1 }, {}])]);
    assert_eq!(structured(&out).object, Some(json!([{ "n": 1 }, {}])));
}

#[test]
fn each_step_starts_a_fresh_parser() {
    let mut cfg = cfg_with(title_schema(), ErrorStrategy::Strict, false);
    cfg.tools = vec![tool("weather")];
    let first = ok_stream(&[
        super::delta("content", "{\"title\":\"draft"),
        super::tools::tool_call_event(0, "c1", "weather", r#"{"city":"Paris"}"#),
        super::finish("tool_calls"),
    ]);
    let (_, sink, out) = run_script(vec![first, deltas(&["{\"title\":\"Final\"}"], "stop")], cfg);
    let objects: Vec<Value> = stream_of(&sink).into_iter().filter(|(k, _)| k == "object").map(|(_, v)| v).collect();
    assert_eq!(objects, [json!({ "title": "draft" }), json!({ "title": "Final" })]);
    assert_eq!(structured(&out).object, Some(json!({ "title": "Final" })));
}

fn with_model(strategy: ErrorStrategy) -> RunConfig {
    let mut cfg = config(0, false);
    cfg.request.messages.insert(0, ModelMessage::System("Be brief.".into()));
    let so = StructuredOutput::new(title_schema(), false, opts(strategy, Injection::Native), None);
    let model = StructuringModel {
        model: http_model(endpoint(Api::Chat)),
        model_id: "structurer".into(),
        provider_options: None,
        use_agent: false,
    };
    cfg.structured = Some(Rc::new(so.with_model(model, true)));
    cfg
}

#[test]
fn a_structuring_model_turns_the_prose_answer_into_the_object_after_the_final_text_end() {
    let main = ok_stream(&[
        super::delta("content", "Dune, by Frank Herbert, 412 pages."),
        super::finish("stop"),
        USAGE.into(),
    ]);
    let structuring = ok_stream(&[
        super::delta("content", "{\"title\":\"Du"),
        super::delta("content", "ne\",\"pages\":412}"),
        super::finish("stop"),
        USAGE.into(),
    ]);
    let (script, sink, out) = run_script(vec![main, structuring], with_model(ErrorStrategy::Strict));
    assert_eq!(
        sink.types(),
        [
            "start",
            "step-start",
            "text-start",
            "text-delta",
            "text-end",
            "object",
            "object",
            "object-result",
            "step-finish",
            "finish"
        ]
    );
    let chunks = sink.chunks.borrow();
    assert_eq!(
        chunks[7],
        Chunk::ObjectResult {
            object: json!({ "title": "Dune", "pages": 412 }),
            metadata: Some(json!({ "from": "structured-output" }))
        }
    );
    assert_eq!(out.text(), "Dune, by Frank Herbert, 412 pages.", "the structuring call's text is not the run's");
    assert_eq!(out.total_usage.total_tokens, Some(20), "its usage is in totalUsage");
    assert_eq!(out.steps[0].usage.total_tokens, Some(10), "not in the step's");
    let main_body = body(&script, 0);
    assert!(main_body.get("response_format").is_none());
    let system = main_body["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("Be brief.\n\nAnother model will extract the fields"), "{system}");
    let s = body(&script, 1);
    assert_eq!(s["model"], "structurer");
    assert_eq!(
        s["response_format"]["json_schema"]["strict"], true,
        "the structuring model's own rules (an openai/ model here)"
    );
    assert!(s["messages"][0]["content"].as_str().unwrap().starts_with("You are a data structuring assistant."));
    assert_eq!(s["messages"][1]["content"], "## Final answer\nDune, by Frank Herbert, 412 pages.");
}

#[test]
fn a_structuring_model_sees_the_tool_calls_and_its_failures_follow_the_strategy() {
    let mut cfg = with_model(ErrorStrategy::Fallback(json!({ "title": "?" })));
    cfg.tools = vec![tool("weather")];
    let first = calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]);
    let (script, sink, out) = run_script(vec![first, text_reply("It is sunny."), text_reply("no json here")], cfg);
    let s = body(&script, 2);
    let transcript = s["messages"][1]["content"].as_str().unwrap();
    assert!(transcript.starts_with("## Tool calls\n- weather({\"city\":\"Paris\"}) → error: "), "{transcript}");
    assert!(transcript.ends_with("## Final answer\nIt is sunny."), "{transcript}");
    let chunks = sink.chunks.borrow();
    let result = chunks.iter().find(|c| c.type_name() == "object-result").unwrap();
    assert_eq!(
        *result,
        Chunk::ObjectResult { object: json!({ "title": "?" }), metadata: Some(json!({ "fallback": true })) }
    );
    assert!(structured(&out).used_fallback);
}

#[test]
fn use_agent_gives_the_structuring_call_the_threads_history() {
    use crate::core::memory::{InMemoryStore, MemoryConfig, MemoryRun};
    let store = Rc::new(InMemoryStore::new());
    let memory = || MemoryRun {
        store: store.clone(),
        thread_id: "t1".into(),
        resource_id: "u1".into(),
        title: None,
        metadata: None,
        config: MemoryConfig::default(),
        save_per_step: false,
        indexer: None,
    };
    let mut first = config(0, false);
    first.memory = Some(memory());
    run_script(vec![text_reply("Dune is by Frank Herbert.")], first);
    for use_agent in [true, false] {
        let mut cfg = config(0, false);
        cfg.memory = Some(memory());
        let so = StructuredOutput::new(title_schema(), false, opts(ErrorStrategy::Strict, Injection::Native), None);
        let model = StructuringModel {
            model: http_model(endpoint(Api::Chat)),
            model_id: "s".into(),
            provider_options: None,
            use_agent,
        };
        cfg.structured = Some(Rc::new(so.with_model(model, false)));
        let (script, _, out) =
            run_script(vec![text_reply("It has 412 pages."), text_reply(r#"{"title":"Dune"}"#)], cfg);
        assert_eq!(structured(&out).object, Some(json!({ "title": "Dune" })));
        let roles: Vec<String> = body(&script, 1)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_string())
            .collect();
        if use_agent {
            assert_eq!(roles, ["system", "user", "assistant", "user"], "the history goes before the transcript");
            assert_eq!(body(&script, 1)["messages"][2]["content"], "Dune is by Frank Herbert.");
        } else {
            assert_eq!(roles, ["system", "user"]);
        }
    }
}
