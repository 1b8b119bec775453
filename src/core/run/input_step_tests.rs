//! `processInputStep`'s `model`, `tools`, `providerOptions` and `structuredOutput`, natively
//! (SPEC §13.2): each applies to that step's request only, through the step's overrides.

use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::tools::{calls_reply, simple, text_reply, tool, with_tools, TestHost};
use super::*;
use crate::core::hooks::{Shared, StepModel, StepTools};
use crate::core::run::processors::{Halt, Phase, Processor, ProcessorCx, Processors, Reply};
use crate::core::run::structured::{Injection, StructuredOptions, StructuredOutput, ErrorStrategy};

type OnStep = Box<dyn Fn(&Value) -> (Option<Value>, StepOverrides)>;

/// A `processInputStep` that answers each step's arguments with a value and host-made overrides.
struct StepProc(OnStep);

impl Processor for StepProc {
    fn id(&self) -> &str {
        "step"
    }
    fn has(&self, phase: Phase) -> bool {
        phase == Phase::InputStep
    }
    fn call<'a>(&'a self, _phase: Phase, args: Value, _cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Reply, Halt>> {
        let (value, step) = (self.0)(&args);
        Box::pin(async move { Ok(Reply { value, custom: Vec::new(), step }) })
    }
    fn stream<'a>(&'a self, chunk: Chunk, _cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Vec<Chunk>, Halt>> {
        Box::pin(async move { Ok(vec![chunk]) })
    }
}

/// `cfg` with `f` as its one input processor, on step 0 only; the run's provider is `openai`
/// and its call's `providerOptions` are `call_options`.
fn on_first_step(cfg: RunConfig, call_options: Value, f: impl Fn(&Value) -> (Option<Value>, StepOverrides) + 'static) -> RunConfig {
    let p = StepProc(Box::new(move |args| if args["stepNumber"] == 0 { f(args) } else { (None, StepOverrides::default()) }));
    let provider_options: Option<Map<String, Value>> = call_options.as_object().cloned();
    let processors = Processors {
        input: vec![Rc::new(p) as Rc<dyn Processor>],
        provider: "openai".into(),
        provider_options,
        ..Default::default()
    };
    RunConfig { processors, ..cfg }
}

fn urls(r: &super::tools::Run) -> Vec<String> {
    r.script.requests.borrow().iter().map(|q| q.url.clone()).collect()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"].as_array().map(|a| a.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
}

#[test]
fn a_step_model_takes_that_step_and_the_next_goes_back_to_the_run_model() {
    let cfg = on_first_step(with_tools(vec![tool("weather")]), json!({}), |_| {
        let mut e = crate::testing::endpoint(crate::core::wire::Api::Chat);
        e.base_url = "http://127.0.0.1:2/other".into();
        e.provider = "groq".into();
        let model = StepModel { api: Shared(crate::testing::http_model(e)), name: "big-model".into(), provider: "groq".into() };
        (Some(json!({ "model": "big-model" })), StepOverrides { model: Some(model), ..Default::default() })
    });
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("Sunny.")], cfg, &TestHost::default());
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    assert_eq!(urls(&r), ["http://127.0.0.1:2/other/chat/completions", "http://127.0.0.1:1/v1/chat/completions"]);
    assert_eq!((r.body(0)["model"].as_str(), r.body(1)["model"].as_str()), (Some("big-model"), Some("m1")));
    // No unsupported-setting warning any more: the model was applied.
    let start = r.sink.chunks.borrow().iter().find(|c| c.type_name() == "step-start").map(Chunk::payload).unwrap();
    assert_eq!(start["warnings"], json!([]));
}

#[test]
fn step_tools_replace_the_runs_for_that_step_and_their_calls_run_on_their_host() {
    let step_host = Rc::new(TestHost::default());
    let h = step_host.clone();
    let cfg = on_first_step(with_tools(vec![tool("weather")]), json!({}), move |_| {
        let tools = StepTools { defs: vec![tool("lookup")], host: Shared(h.clone() as Rc<dyn crate::core::tools::ToolHost>) };
        (Some(json!({ "tools": ["lookup"] })), StepOverrides { tools: Some(tools), ..Default::default() })
    });
    let run_host = TestHost::default();
    let r = simple(vec![calls_reply(&[("c1", "lookup", r#"{"city":"Paris"}"#)]), text_reply("Found.")], cfg, &run_host);
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    assert_eq!(tool_names(&r.body(0)), ["lookup"]);
    assert_eq!(tool_names(&r.body(1)), ["weather"], "the next step has the run's tools");
    assert_eq!(*step_host.started_calls(), ["c1"], "the call ran on the step's host");
    assert!(run_host.started_calls().is_empty());
    let results = &r.out.steps[0].tool_results;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].call.tool_name, "lookup");
}

#[test]
fn step_provider_options_go_over_the_calls_in_that_request_only() {
    let call = json!({ "openai": { "user": "u0", "store": false }, "groq": { "user": "g" } });
    let cfg = on_first_step(with_tools(vec![]), call, |args| {
        assert_eq!(args["providerOptions"]["openai"]["user"], "u0", "the call's options are in the arguments");
        (Some(json!({ "providerOptions": { "openai": { "user": "u1", "transport": "websocket" } } })), StepOverrides::default())
    });
    let mut cfg = RunConfig { max_steps: 2, ..cfg };
    cfg.request.provider_options = json!({ "user": "u0", "store": false }).as_object().cloned();
    cfg.tools = vec![tool("weather")];
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("Sunny.")], cfg, &TestHost::default());
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    let (first, second) = (r.body(0), r.body(1));
    assert_eq!((first["user"].as_str(), first["store"].as_bool()), (Some("u1"), Some(false)));
    assert!(first.get("transport").is_none(), "the transport's keys stay out of the body");
    assert_eq!(second["user"], "u0");
}

#[test]
fn a_step_model_of_another_provider_gets_that_providers_call_options() {
    let call = json!({ "openai": { "user": "u0" }, "groq": { "user": "g" } });
    let cfg = on_first_step(with_tools(vec![]), call, |_| {
        let model = StepModel { api: Shared(crate::testing::http_model(crate::testing::endpoint(crate::core::wire::Api::Chat))), name: "llama".into(), provider: "groq".into() };
        (Some(json!({ "model": "llama" })), StepOverrides { model: Some(model), ..Default::default() })
    });
    let mut cfg = cfg;
    cfg.request.provider_options = json!({ "user": "u0" }).as_object().cloned();
    let r = simple(vec![text_reply("Hi.")], cfg, &TestHost::default());
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    assert_eq!(r.body(0)["user"], "g");
}

#[test]
fn a_step_structured_output_gives_that_request_the_response_format() {
    let cfg = on_first_step(with_tools(vec![tool("weather")]), json!({}), |_| {
        let opts = StructuredOptions { strategy: ErrorStrategy::Strict, instructions: None, injection: Injection::Native, provider_options: None };
        let schema = json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] });
        let so = StructuredOutput::new(schema.clone(), true, opts, None);
        (Some(json!({ "structuredOutput": { "schema": schema } })), StepOverrides { structured: Some(Shared(Rc::new(so))), ..Default::default() })
    });
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("Sunny.")], cfg, &TestHost::default());
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    assert_eq!(r.body(0)["response_format"]["type"], "json_schema");
    assert_eq!(r.body(0)["response_format"]["json_schema"]["schema"]["required"], json!(["city"]));
    assert!(r.body(1).get("response_format").is_none());
}

#[test]
fn step_provider_options_that_are_not_objects_fail_the_run_naming_the_key() {
    let cfg = on_first_step(with_tools(vec![]), json!({}), |_| (Some(json!({ "providerOptions": { "openai": 3 } })), StepOverrides::default()));
    let r = simple(vec![text_reply("Hi.")], cfg, &TestHost::default());
    let e = r.out.error.as_ref().expect("the run failed");
    assert!(e.to_string().contains("step: processInputStep.providerOptions.openai: expected an object of that provider's options, got a number"), "{e}");
    assert_eq!(r.requests(), 0, "the model was never called");
}
