//! `new Agent(config)` and `agent.stream(messages, options)`.

use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, pick_json, to_json, type_error};
use super::output::{AgentStreamOutput, Shared};
use super::run::{spawn_run, Callbacks};
use crate::core::error::AgentError;
use crate::core::input::parse_messages;
use crate::core::options::{build_prompt, build_request, merge_options, parse_agent_config, parse_stream_options, AgentConfig};
use crate::core::run::RunConfig;
use crate::providers::registry;
use crate::providers::Endpoint;

/// The data keys of `new Agent(config)`; functions and objects such as tools are read apart.
const CONFIG_KEYS: &[&str] = &["id", "name", "description", "instructions", "model", "maxRetries", "defaultOptions"];
/// The data keys of `stream()` options read by this version.
const OPTION_KEYS: &[&str] =
    &["instructions", "system", "context", "modelSettings", "providerOptions", "runId", "includeRawChunks", "maxSteps"];
const CALLBACKS: &[&str] = &["onChunk", "onStepFinish", "onFinish", "onError", "onAbort"];

struct Inner {
    config: AgentConfig,
    endpoint: Endpoint,
    model_name: String,
    /// `defaultOptions` as given, for its callbacks and `abortSignal`.
    default_options: JsValue,
}

/// An agent: instructions, a model, and options for its runs.
#[wasm_bindgen]
pub struct Agent {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl Agent {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "AgentConfig")] config: JsValue) -> Result<Agent, JsValue> {
        if !config.is_object() {
            return Err(type_error("config", "expected an object like { id, instructions, model }"));
        }
        let model_js = Reflect::get(&config, &"model".into()).unwrap_or(JsValue::UNDEFINED);
        if model_js.is_object() && Reflect::get(&model_js, &"doStream".into()).map(|f| f.is_function()).unwrap_or(false) {
            return Err(type_error(
                "config.model",
                "model objects with doStream() are not supported in this version; use 'provider/model' or { id, url, apiKey }",
            ));
        }
        let data = pick_json(&config, CONFIG_KEYS, "config").map_err(|e| error_to_js(&e))?;
        let parsed = parse_agent_config(&data).map_err(|e| error_to_js(&e))?;
        let default_options = Reflect::get(&config, &"defaultOptions".into()).unwrap_or(JsValue::UNDEFINED);
        check_functions(&default_options, "config.defaultOptions")?;
        let m = &parsed.model;
        let (endpoint, model_name) =
            registry::resolve(&m.id, m.url.clone(), m.api_key.clone(), m.headers.clone(), &crate::platform::env_var, "config.model")
                .map_err(|e| error_to_js(&e))?;
        Ok(Agent { inner: Rc::new(Inner { config: parsed, endpoint, model_name, default_options }) })
    }

    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.inner.config.id.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.inner.config.name.clone()
    }

    /// Streams the agent's reply. Resolves at once to the output object; its streams and
    /// promises follow the run. Bad messages or options reject with a `TypeError`.
    #[wasm_bindgen(unchecked_return_type = "Promise<AgentStreamOutput>")]
    pub fn stream(
        &self,
        #[wasm_bindgen(unchecked_param_type = "MessageInput")] messages: JsValue,
        #[wasm_bindgen(unchecked_param_type = "StreamOptions | undefined")] options: JsValue,
    ) -> Promise {
        match self.start(messages, options) {
            Ok(out) => Promise::resolve(&JsValue::from(out)),
            Err(e) => Promise::reject(&e),
        }
    }
}

impl Agent {
    fn start(&self, messages: JsValue, options: JsValue) -> Result<AgentStreamOutput, JsValue> {
        let inner = &self.inner;
        if !(options.is_undefined() || options.is_null() || options.is_object()) {
            return Err(type_error("options", "expected an object or undefined"));
        }
        check_functions(&options, "options")?;
        let js = |e: AgentError| error_to_js(&e);
        if messages.is_undefined() || messages.is_function() {
            return Err(type_error(
                "messages",
                &format!("expected a string, an array of strings, or an array of messages, got {}", super::convert::js_kind(&messages)),
            ));
        }
        let input = parse_messages(&to_json(&messages, "messages").map_err(js)?, "messages").map_err(js)?;
        let call = pick_json(&options, OPTION_KEYS, "options").map_err(js)?;
        let merged = merge_options(&inner.config.default_options, &call);
        let opts = parse_stream_options(&merged, "options").map_err(js)?;
        let callbacks = Callbacks::read(&options, &inner.default_options);
        let signal = option_or_default(&options, &inner.default_options, "abortSignal");
        if !signal.is_undefined() && !signal.is_null() && !is_abort_signal(&signal) {
            return Err(type_error("options.abortSignal", "expected an AbortSignal"));
        }
        let run_id = opts.run_id.clone().unwrap_or_else(crate::platform::random_uuid);
        let prompt = build_prompt(&inner.config.instructions, &opts, input);
        let request = build_request(&inner.model_name, prompt, &opts, &inner.endpoint.provider);
        let max_retries = opts.model_settings.max_retries.unwrap_or(inner.config.max_retries);
        let cfg = RunConfig {
            run_id: run_id.clone(),
            endpoint: inner.endpoint.clone(),
            request,
            max_retries,
            include_raw: opts.include_raw_chunks,
            max_steps: opts.max_steps.unwrap_or(5),
        };
        let abort = crate::core::abort::AbortFlag::new();
        let shared = Shared::new(run_id, abort.clone());
        spawn_run(cfg, shared.clone(), callbacks, abort, signal);
        Ok(AgentStreamOutput::new(shared))
    }
}

fn option_or_default(options: &JsValue, defaults: &JsValue, key: &str) -> JsValue {
    let get = |o: &JsValue| if o.is_object() { Reflect::get(o, &key.into()).unwrap_or(JsValue::UNDEFINED) } else { JsValue::UNDEFINED };
    let v = get(options);
    if v.is_undefined() {
        get(defaults)
    } else {
        v
    }
}

fn is_abort_signal(v: &JsValue) -> bool {
    v.is_object()
        && Reflect::has(v, &"aborted".into()).unwrap_or(false)
        && Reflect::get(v, &"addEventListener".into()).map(|f| f.is_function()).unwrap_or(false)
}

/// Callbacks must be functions when given.
fn check_functions(options: &JsValue, path: &str) -> Result<(), JsValue> {
    if !options.is_object() {
        return Ok(());
    }
    for name in CALLBACKS {
        let v = Reflect::get(options, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
        if !v.is_undefined() && !v.is_null() && !v.is_function() {
            let got = super::convert::js_kind(&v);
            return Err(type_error(&format!("{path}.{name}"), &format!("expected a function, got {got}")));
        }
    }
    Ok(())
}

pub(crate) fn callback(options: &JsValue, defaults: &JsValue, name: &str) -> Option<Function> {
    let v = option_or_default(options, defaults, name);
    v.dyn_into::<Function>().ok()
}

pub(crate) fn json_value(v: &Value) -> JsValue {
    super::convert::from_json(v)
}
