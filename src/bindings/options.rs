//! The one parser of `stream()` options. The call's options over the agent's `defaultOptions`
//! are read once, here, into the core's typed `CallOptions` and the JavaScript parts beside them
//! (`JsCallbacks`, tools, memory, the abort signal); every field gets its type check here, and a
//! getter that throws is a TypeError naming it. An untilIdle continuation reuses the result: it
//! reads nothing from JavaScript again.

use std::rc::Rc;

use js_sys::{Function, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, js_kind, object_keys, read, type_error, Data};
use super::memory::MemoryInner;
use super::stop::read_stop_when;
use super::tools::{parse_tools, JsTool};
use crate::core::memory::{parse_memory_options, MemoryRun};
use crate::core::model::Warning;
use crate::core::model_api::ModelApi;
use crate::core::options::{merge_options, parse_call_options, CallOptions};
use crate::core::run::StopCondition;
use crate::core::run::memory::{TitleJob, DEFAULT_TITLE_INSTRUCTIONS};
use crate::core::transport::{self, Transport};
use crate::core::until_idle::DEFAULT_MAX_IDLE_MS;
use crate::core::wire::{Api, Endpoint};
use crate::providers::{http_model, registry};

/// The data keys of `stream()` options read into `CallOptions`.
pub(crate) const OPTION_KEYS: &[&str] = &[
    "instructions",
    "system",
    "context",
    "modelSettings",
    "providerOptions",
    "runId",
    "includeRawChunks",
    "maxSteps",
    "activeTools",
    "toolChoice",
    "requireToolApproval",
    "toolCallConcurrency",
];

/// The callbacks of `stream()` options (and of `defaultOptions`).
const CALLBACKS: &[&str] =
    &["onChunk", "onStepFinish", "onFinish", "onError", "onAbort", "prepareStep", "onIterationComplete"];

/// The other keys `parse` reads (JavaScript values: tools, functions, the signal), and the
/// reference's structured output options.
const OTHER_KEYS: &[&str] = &[
    "toolsets",
    "clientTools",
    "stopWhen",
    "hooks",
    "memory",
    "savePerStep",
    "requestContext",
    "abortSignal",
    "untilIdle",
    "closeOnSuspend",
    "reconnectable",
    "autoResumeSuspendedTools",
    "structuredOutput",
    "output",
    "delegation",
    "scorers",
    "returnScorerData",
    #[cfg(feature = "tracing")]
    "tracingOptions",
    #[cfg(feature = "tracing")]
    "tracingContext",
    #[cfg(feature = "tracing")]
    "telemetry",
    "isTaskComplete",
];

/// Every key of `stream()` options this version knows: the ones it reads and the reference's
/// that it warns about (`core::unsupported`). A key near one of them is reported as a likely
/// misspelling (`bindings::unsupported::warn_unknown_keys`).
pub(crate) fn stream_keys() -> Vec<&'static str> {
    let unsupported = crate::core::unsupported::UNSUPPORTED.iter().map(|(name, _)| name.split('.').next().unwrap_or(name));
    OPTION_KEYS.iter().chain(CALLBACKS).chain(OTHER_KEYS).copied().chain(unsupported).collect()
}

/// What of the agent the parser reads.
pub(crate) struct AgentDefaults<'a> {
    /// `defaultOptions` as given (its functions), and its data as read at construction.
    pub options: &'a JsValue,
    pub data: &'a Value,
    pub tools: &'a [JsTool],
    pub memory: Option<&'a MemoryInner>,
    pub max_retries: u32,
    /// The provider prefix, which names its `providerOptions`, and the wire API (`None` for a
    /// model object).
    pub provider: &'a str,
    pub api: Option<Api>,
}

/// The user's functions of one call (the call's, else `defaultOptions`').
#[derive(Clone, Default)]
pub(crate) struct JsCallbacks {
    pub on_chunk: Option<Function>,
    pub on_step_finish: Option<Function>,
    pub on_finish: Option<Function>,
    pub on_error: Option<Function>,
    pub on_abort: Option<Function>,
    pub prepare_step: Option<Function>,
    pub on_iteration_complete: Option<Function>,
    /// `hooks.beforeToolCall` and `hooks.afterToolCall`.
    pub before_tool_call: Option<Function>,
    pub after_tool_call: Option<Function>,
    /// `memory.onTitleGenerated`.
    pub on_title_generated: Option<Function>,
    /// The custom predicates of `stopWhen`, by index (`StopCondition::Custom`).
    pub stop_fns: Vec<Function>,
}

/// One `stream()` call, read and checked.
pub(crate) struct CallSetup {
    pub opts: CallOptions,
    /// The call's `modelSettings` as JSON, under which `prepareStep` settings merge.
    pub base_settings: Value,
    /// The agent's tools, then the toolsets', then the client tools.
    pub tools: Vec<JsTool>,
    pub stop_when: Vec<StopCondition>,
    pub js: JsCallbacks,
    pub memory: Option<MemoryRun>,
    pub title: Option<TitleSetting>,
    pub request_context: JsValue,
    pub signal: JsValue,
    /// `untilIdle`: the idle timeout, when asked for.
    pub until_idle: Option<u64>,
    /// Options of the reference this version does not honour yet (`unsupported-setting`).
    pub setting_warnings: Vec<Warning>,
    pub transport: Transport,
    pub max_retries: u32,
    pub max_steps: u32,
    /// `closeOnSuspend` (SPEC §19.2): the stream ends when the run suspends.
    pub close_on_suspend: bool,
    /// `autoResumeSuspendedTools` (SPEC §19.7).
    pub auto_resume: bool,
    /// `reconnectable` (SPEC §19.8): the `retainMs` of a run that keeps a chunk log.
    pub reconnect: Option<f64>,
    /// `structuredOutput` (or the deprecated `output`).
    pub structured: Option<Rc<crate::core::run::structured::StructuredOutput>>,
    /// The call's `inputProcessors` / `outputProcessors` / `maxProcessorRetries` (each replaces the agent's).
    pub processors: super::processors::ProcessorLists,
    /// `delegation` (SPEC §18.5).
    pub delegation: super::delegation::DelegationSetup,
    /// The call's `scorers` record (replaces the agent's), checked; `returnScorerData`.
    pub scorers: Option<JsValue>,
    pub return_scorer_data: bool,
    /// `tracingOptions`, `tracingContext`, `telemetry` (SPEC §16–17).
    #[cfg(feature = "tracing")]
    pub trace: super::tracing::TraceOptions,
    /// `isTaskComplete` (SPEC §15).
    #[cfg(feature = "scorers")]
    pub completion: Option<Rc<super::completion::CompletionSetup>>,
}

/// `generateTitle`: with which model (the run's when `None`) and instructions.
pub(crate) struct TitleSetting {
    model: Option<(Rc<dyn ModelApi>, String)>,
    instructions: String,
}

impl TitleSetting {
    /// The title job of a turn whose model is `run_model` (named `model_name`).
    pub fn job(&self, run_model: &Rc<dyn ModelApi>, model_name: &str, max_retries: u32) -> TitleJob {
        let (model, model_id) = match &self.model {
            Some((m, id)) => (m.clone(), id.clone()),
            None => (run_model.clone(), model_name.to_string()),
        };
        TitleJob { model, model_id, instructions: self.instructions.clone(), max_retries }
    }
}

/// Reads `options` (an object or undefined) over the agent's defaults.
pub(crate) fn parse(options: &JsValue, agent: &AgentDefaults<'_>) -> Result<CallSetup, JsValue> {
    let js_err = |e: crate::core::error::AgentError| error_to_js(&e);
    if !(options.is_undefined() || options.is_null() || options.is_object()) {
        return Err(type_error("options", "expected an object or undefined"));
    }
    check_functions(options, "options")?;
    super::unsupported::warn_unknown_keys(options, &stream_keys(), "agent.stream() options", None);
    let call = Data::pick(options, OPTION_KEYS, "options").map_err(js_err)?;
    let structured = super::structured::parse(options, agent.options, agent.provider == "openai")?;
    let mut merged = merge_options(agent.data, &call.tree);
    // `structuredOutput.providerOptions` go over the call's on every step (without a
    // structuring model, whose call they are then).
    if let Some(po) = structured.as_ref().filter(|s| s.model.is_none()).and_then(|s| s.options.provider_options.clone()) {
        merged = merge_options(&merged, &serde_json::json!({ "providerOptions": po }));
    }
    let opts = call.parse(|_| parse_call_options(&merged, "options")).map_err(js_err)?;
    let opt = |k: &str| option_or_default(options, agent.options, k);
    let mut tools = agent.tools.to_vec();
    let toolsets = opt("toolsets")?;
    if toolsets.is_object() {
        for set in object_keys(&toolsets).map_err(|_| type_error("options.toolsets", "could not be read"))?.iter() {
            let name = set.as_string().unwrap_or_default();
            let path = crate::core::input::join("options.toolsets", name.as_str());
            tools.extend(parse_tools(&read(&toolsets, &name, "options.toolsets")?, &path, false)?);
        }
    } else if !toolsets.is_undefined() && !toolsets.is_null() {
        return Err(type_error("options.toolsets", &format!("expected an object of toolsets by name, got {}", js_kind(&toolsets))));
    }
    tools.extend(parse_tools(&opt("clientTools")?, "options.clientTools", true)?);
    let (stop_when, stop_fns) = read_stop_when(&opt("stopWhen")?)?;
    let hooks = opt("hooks")?;
    if !(hooks.is_undefined() || hooks.is_null() || hooks.is_object()) {
        return Err(type_error("options.hooks", "expected an object like { beforeToolCall, afterToolCall }"));
    }
    let hook = |name: &str| optional_function(&read(&hooks, name, "options.hooks")?, &format!("options.hooks.{name}"));
    let memory_js = opt("memory")?;
    let memory = memory_run(&memory_js, &opt("savePerStep")?, agent.memory)?;
    let max_retries = opts.model_settings.max_retries.unwrap_or(agent.max_retries);
    let title = match (&memory, agent.memory) {
        (Some(_), Some(mem)) => title_setting(&memory_js, mem)?,
        _ => None,
    };
    let on_title = read(&memory_js, "onTitleGenerated", "options.memory")?;
    let callback = |name: &str| -> Result<Option<Function>, JsValue> { Ok(opt(name)?.dyn_into::<Function>().ok()) };
    let js = JsCallbacks {
        on_chunk: callback("onChunk")?,
        on_step_finish: callback("onStepFinish")?,
        on_finish: callback("onFinish")?,
        on_error: callback("onError")?,
        on_abort: callback("onAbort")?,
        prepare_step: callback("prepareStep")?,
        on_iteration_complete: callback("onIterationComplete")?,
        before_tool_call: hook("beforeToolCall")?,
        after_tool_call: hook("afterToolCall")?,
        on_title_generated: optional_function(&on_title, "options.memory.onTitleGenerated")?,
        stop_fns,
    };
    let request_context = opt("requestContext")?;
    let signal = opt("abortSignal")?;
    if !signal.is_undefined() && !signal.is_null() && !is_abort_signal(&signal) {
        return Err(type_error("options.abortSignal", "expected an AbortSignal"));
    }
    let until_idle = parse_until_idle(&opt("untilIdle")?)?;
    let delegation = super::delegation::parse_setup(&read(options, "delegation", "options")?, &read(agent.options, "delegation", "config.defaultOptions")?)?;
    super::delegation::check_versions(&opt("versions")?)?;
    let close_js = opt("closeOnSuspend")?;
    let close_on_suspend = match close_js.as_bool() {
        Some(b) => b,
        None if close_js.is_undefined() || close_js.is_null() => false,
        None => return Err(type_error("options.closeOnSuspend", &format!("expected a boolean, got {}", js_kind(&close_js)))),
    };
    #[cfg(feature = "reconnect")]
    let reconnect = super::reconnect::parse_reconnectable(&opt("reconnectable")?)?;
    #[cfg(not(feature = "reconnect"))]
    let reconnect = match opt("reconnectable")? {
        v if v.is_undefined() || v.is_null() || v.as_bool() == Some(false) => None,
        _ => return Err(js_err(crate::core::features::not_built("options.reconnectable", "reconnectable runs", "reconnect"))),
    };
    let auto_js = opt("autoResumeSuspendedTools")?;
    let auto_resume = match auto_js.as_bool() {
        Some(b) => b,
        None if auto_js.is_undefined() || auto_js.is_null() => false,
        None => return Err(type_error("options.autoResumeSuspendedTools", &format!("expected a boolean, got {}", js_kind(&auto_js)))),
    };
    let memory_options = memory.as_ref().and(agent.memory).map(|m| &m.options_json);
    let setting_warnings = super::unsupported::warnings_of(options, agent.options, memory_options)?;
    let provider = agent.provider;
    let provider_options = opts.provider_options.as_ref().and_then(|p| p.get(provider)).and_then(Value::as_object);
    let transport = transport::parse(provider_options, agent.api, &format!("options.providerOptions.{provider}")).map_err(js_err)?;
    let max_steps = opts.max_steps.unwrap_or(5);
    let processors = super::processors::ProcessorLists {
        input: super::processors::parse_list(&opt("inputProcessors")?, "options.inputProcessors", true)?,
        output: super::processors::parse_list(&opt("outputProcessors")?, "options.outputProcessors", false)?,
        max_retries: super::processors::parse_max_retries(&opt("maxProcessorRetries")?, "options.maxProcessorRetries")?,
    };
    let scorers = super::scorers::check_scorers(&opt("scorers")?, "options.scorers")?;
    let return_scorer_data = match opt("returnScorerData")? {
        v if v.is_undefined() || v.is_null() => false,
        v => v.as_bool().ok_or_else(|| type_error("options.returnScorerData", &format!("expected a boolean, got {}", js_kind(&v))))?,
    };
    #[cfg(not(feature = "scorers"))]
    if return_scorer_data {
        return Err(error_to_js(&crate::core::features::not_built("options.returnScorerData", "scorers", "scorers")));
    }
    #[cfg(feature = "tracing")]
    let trace = super::tracing::parse_trace_options(&opt)?;
    #[cfg(feature = "scorers")]
    let completion = super::completion::parse(&opt("isTaskComplete")?, "options.isTaskComplete")?;
    Ok(CallSetup {
        #[cfg(feature = "tracing")]
        trace,
        #[cfg(feature = "scorers")]
        completion,
        scorers,
        return_scorer_data,
        processors,
        base_settings: merged.get("modelSettings").cloned().unwrap_or(Value::Null),
        opts,
        tools,
        stop_when,
        js,
        memory,
        title,
        request_context,
        signal,
        until_idle,
        setting_warnings,
        transport,
        max_retries,
        max_steps,
        close_on_suspend,
        auto_resume,
        reconnect,
        structured: structured.map(Rc::new),
        delegation,
    })
}

/// `memory: { thread, resource, options? }` of a call, over the agent's `Memory`.
fn memory_run(v: &JsValue, save_per_step: &JsValue, mem: Option<&MemoryInner>) -> Result<Option<MemoryRun>, JsValue> {
    const F: &str = "options.memory";
    // Checked with or without memory: a wrong type is never silently ignored.
    let save_per_step = match save_per_step.as_bool() {
        Some(b) => b,
        None if save_per_step.is_undefined() || save_per_step.is_null() => false,
        None => {
            let got = js_kind(save_per_step);
            return Err(type_error("options.savePerStep", &format!("expected a boolean, got {got}")));
        }
    };
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if !v.is_object() {
        return Err(type_error(F, &format!("expected {{ thread, resource }}, got {}", js_kind(v))));
    }
    let data = Data::pick(v, &["thread", "resource", "options"], F).and_then(Data::strict).map_err(|e| error_to_js(&e))?;
    let Some(mem) = mem else {
        return Err(type_error(F, "this agent has no memory: create it with new Agent({ memory: new Memory() })"));
    };
    let kind = |v: Option<&Value>| v.map_or("undefined", crate::core::input::kind);
    let (thread_id, title, metadata) = match data.get("thread") {
        Some(Value::String(s)) if !s.is_empty() => (s.clone(), None, None),
        Some(t @ Value::Object(_)) => match t.get("id") {
            Some(Value::String(id)) if !id.is_empty() => {
                const T: &str = "options.memory.thread";
                let title = crate::core::input::opt_str(t, "title", T).map_err(|e| error_to_js(&e))?.map(str::to_owned);
                let metadata = crate::core::input::opt_object(t, "metadata", T).map_err(|e| error_to_js(&e))?.map(|m| Value::Object(m.clone()));
                (id.clone(), title, metadata)
            }
            other => return Err(type_error("options.memory.thread.id", &format!("expected a non-empty string, got {}", kind(other)))),
        },
        other => {
            let message = format!("expected a thread id (a non-empty string) or {{ id, title?, metadata? }}, got {}", kind(other));
            return Err(type_error("options.memory.thread", &message));
        }
    };
    let resource_id = match data.get("resource") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        other => {
            let message = format!("expected a resource id (a non-empty string, e.g. the user's id), got {}", kind(other));
            return Err(type_error("options.memory.resource", &message));
        }
    };
    let config = parse_memory_options(data.get("options").unwrap_or(&Value::Null), &mem.options, "options.memory.options")
        .map_err(|e| error_to_js(&e))?;
    if config.semantic_recall.is_some() && mem.indexer.is_none() {
        return Err(type_error("options.memory.options.semanticRecall", "needs an embedder: create the memory with new Memory({ embedder: 'openai/text-embedding-3-small' }) (or an AI SDK EmbeddingModel, or a function)"));
    }
    Ok(Some(MemoryRun { store: mem.store.clone(), thread_id, resource_id, title, metadata, config, save_per_step, indexer: mem.indexer.clone() }))
}

/// `generateTitle` (the call's memory options over the Memory's): `true` uses the run's model,
/// `{ model?, instructions? }` another.
fn title_setting(memory_opt: &JsValue, mem: &MemoryInner) -> Result<Option<TitleSetting>, JsValue> {
    let call = read(&read(memory_opt, "options", "options.memory")?, "generateTitle", "options.memory.options")?;
    let (setting, field) = match Some(call).filter(|v| !v.is_undefined()) {
        Some(v) => {
            const G: &str = "options.memory.options.generateTitle";
            (Data::of(&v, G).and_then(Data::strict).map_err(|e| error_to_js(&e))?, G)
        }
        None => (mem.options_json.get("generateTitle").cloned().unwrap_or(Value::Null), "new Memory(config).options.generateTitle"),
    };
    let (model, instructions) = match &setting {
        Value::Null | Value::Bool(false) => return Ok(None),
        Value::Bool(true) => (None, None),
        Value::Object(o) => (o.get("model").filter(|m| !m.is_null()).cloned(), o.get("instructions").and_then(Value::as_str).map(str::to_owned)),
        other => {
            let message = format!("expected true, false or {{ model?, instructions? }}, got {}", crate::core::input::kind(other));
            return Err(type_error(field, &message));
        }
    };
    let model = match model {
        None => None,
        Some(m) => {
            let (api, model, _) = resolve_model(&m, &format!("{field}.model"))?;
            Some((api, model))
        }
    };
    let instructions = instructions.unwrap_or_else(|| DEFAULT_TITLE_INSTRUCTIONS.to_string());
    Ok(Some(TitleSetting { model, instructions }))
}

/// A model given in options (`'provider/model'` or `{ id, url, apiKey, headers }`) at `path`:
/// the model, its name, and its provider prefix.
pub(crate) fn resolve_model(m: &Value, path: &str) -> Result<(Rc<dyn ModelApi>, String, String), JsValue> {
    let mc = crate::core::options::parse_model_config(m, path).map_err(|e| error_to_js(&e))?;
    let (endpoint, model) = resolve_endpoint(&mc, path)?;
    let provider = endpoint.provider.clone();
    Ok((http_model(endpoint), model, provider))
}

/// Where a model config (at `path`) is reached, and the model's name: the registry's provider,
/// the chosen API (available in this build), and a page's headers.
pub(crate) fn resolve_endpoint(mc: &crate::core::options::ModelConfig, path: &str) -> Result<(Endpoint, String), JsValue> {
    let (mut endpoint, model) = registry::resolve_in(&mc.id, mc.url.clone(), mc.api_key.clone(), mc.headers.clone(), &crate::platform::env_var, path, crate::platform::in_workerd())
        .map_err(|e| error_to_js(&e))?;
    endpoint.api = super::agent::choose_api(endpoint.api, mc.api.as_deref(), &format!("{path}.api"))?;
    crate::providers::check_available(endpoint.api, path).map_err(|e| error_to_js(&e))?;
    browser_headers(&mut endpoint);
    Ok((endpoint, model))
}

/// `untilIdle: true | { maxIdleMs }`: the idle timeout, or `None` when not asked for.
fn parse_until_idle(v: &JsValue) -> Result<Option<u64>, JsValue> {
    if v.is_undefined() || v.is_null() || v.as_bool() == Some(false) {
        return Ok(None);
    }
    if v.as_bool() == Some(true) {
        return Ok(Some(DEFAULT_MAX_IDLE_MS));
    }
    if v.is_object() && !js_sys::Array::is_array(v) {
        let ms = read(v, "maxIdleMs", "options.untilIdle")?;
        if ms.is_undefined() {
            return Ok(Some(DEFAULT_MAX_IDLE_MS));
        }
        return match ms.as_f64() {
            Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n as u64)),
            _ => Err(type_error("options.untilIdle.maxIdleMs", &format!("expected a non-negative number of milliseconds, got {}", js_kind(&ms)))),
        };
    }
    Err(type_error("options.untilIdle", &format!("expected true or {{ maxIdleMs }}, got {}", js_kind(v))))
}

/// The call's option `key`, else `defaultOptions`'; a getter that throws is a TypeError naming it.
fn option_or_default(options: &JsValue, defaults: &JsValue, key: &str) -> Result<JsValue, JsValue> {
    let v = read(options, key, "options")?;
    if v.is_undefined() {
        read(defaults, key, "config.defaultOptions")
    } else {
        Ok(v)
    }
}

fn is_abort_signal(v: &JsValue) -> bool {
    v.is_object()
        && Reflect::has(v, &"aborted".into()).unwrap_or(false)
        && Reflect::get(v, &"addEventListener".into()).map(|f| f.is_function()).unwrap_or(false)
}

/// Callbacks must be functions when given (`path` names the options object).
pub(crate) fn check_functions(options: &JsValue, path: &str) -> Result<(), JsValue> {
    if !options.is_object() {
        return Ok(());
    }
    for name in CALLBACKS {
        let v = read(options, name, path)?;
        if !v.is_undefined() && !v.is_null() && !v.is_function() {
            let got = js_kind(&v);
            return Err(type_error(&format!("{path}.{name}"), &format!("expected a function, got {got}")));
        }
    }
    Ok(())
}

/// A function or nothing (`undefined`, `null`); anything else is a TypeError naming `path`.
pub(crate) fn optional_function(v: &JsValue, path: &str) -> Result<Option<Function>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let got = js_kind(v);
    v.clone().dyn_into::<Function>().map(Some).map_err(|_| type_error(path, &format!("expected a function, got {got}")))
}

/// In a page, Anthropic answers a direct call only with its browser-access header (the key is
/// then visible to the page's user, which is the page author's choice to make).
pub(crate) fn browser_headers(endpoint: &mut Endpoint) {
    let global = js_sys::global();
    let in_page = ["window", "document"].iter().all(|k| Reflect::get(&global, &(*k).into()).map(|v| v.is_object()).unwrap_or(false));
    if in_page && endpoint.api == Api::Anthropic {
        endpoint.headers.insert(0, ("anthropic-dangerous-direct-browser-access".into(), "true".into()));
    }
}

