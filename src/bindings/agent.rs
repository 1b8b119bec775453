//! `new Agent(config)` and `agent.stream(messages, options)`.

use std::rc::Rc;

use std::cell::RefCell;

use js_sys::{Function, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::background::JsRuntime;
use super::convert::{error_to_js, js_kind, read, to_json, type_error, Data};
use super::host::{JsHost, JsModel};
use super::memory::{lookup_memory, MemoryInner};
use super::options::{self, AgentDefaults, CallSetup};
use super::output::{AgentStreamOutput, Shared};
use super::run::{spawn_run, IdleSetup, Turn};
use super::tools::{parse_tools, JsTool, ToolEnv};
use super::processors::{self, ProcessorEnv, ProcessorLists};
use crate::core::abort::AbortFlag;
use crate::core::background::{parse_background_config, Manager, Scope, TaskStatus};
use crate::core::input::parse_messages_with_ids;
use crate::core::model::ModelMessage;
use crate::core::model_api::ModelApi;
use crate::core::options::{build_prompt, build_request, parse_agent_config, AgentConfig};
use crate::core::run::{delegation, BackgroundRun, RunConfig};
use crate::core::run::delegation::{SubRun, SubRunSpec};
use super::delegation::{parse_agents, AgentsConfig, JsDelegator};
use crate::core::tools::Approvals;
use crate::core::transport::Transport;
use crate::core::until_idle::IdleWatch;
use crate::core::error::AgentError;
use crate::core::wire::{Api, Endpoint};
use crate::providers::http_model;

/// The data keys of `new Agent(config)` besides `model` and `defaultOptions`; functions and objects
/// such as tools are read apart.
const CONFIG_KEYS: &[&str] = &["id", "name", "description", "instructions", "maxRetries"];
/// Every key of the config this version reads, and the reference's (agents, workflows,
/// processors, …) that it ignores: a key near one of them is a likely misspelling.
const KNOWN_CONFIG_KEYS: &[&str] = &[
    "id", "name", "description", "instructions", "maxRetries", "model", "defaultOptions", "tools", "memory",
    "backgroundTasks", "agents", "workflows", "scorers", "evals", "voice", "inputProcessors", "outputProcessors",
    "maxProcessorRetries", "defaultGenerateOptions", "defaultStreamOptions", "requestContextSchema", "workspace",
    "mastra", "observability",
];
/// The keys of a `{ id, url, apiKey, headers, api }` model.
const MODEL_KEYS: &[&str] = &["id", "url", "apiKey", "headers", "api"];
pub(super) struct Inner {
    pub(super) config: AgentConfig,
    model: AgentModel,
    /// The provider prefix (`openai`), which names its `providerOptions`.
    pub(super) provider: String,
    pub(super) model_name: String,
    /// `defaultOptions` as given, for its callbacks and `abortSignal`.
    pub(super) default_options: JsValue,
    pub(super) tools: Vec<JsTool>,
    pub(super) memory: Option<Rc<MemoryInner>>,
    /// `memory` as given (the `Memory` object), for `serveAgents` (`__memory`).
    memory_js: JsValue,
    /// Runs background tasks when `backgroundTasks` is enabled.
    pub(super) manager: RefCell<Option<Rc<Manager>>>,
    /// Whether the agent's own config set `backgroundTasks` (a container's then does not apply).
    pub(super) own_background: bool,
    /// Open untilIdle wrappers by (thread, resource), with the flag that closes each.
    pub(super) idle_wrappers: RefCell<Vec<((String, String), AbortFlag)>>,
    /// Runs in progress, for `approveToolCall` / `declineToolCall`.
    pub(super) runs: RefCell<Vec<(String, Rc<super::resume::LiveRun>)>>,
    /// Where this agent's run records go (SPEC §19.4).
    /// Where run records go (SPEC §19.4); a `Mastra`'s storage replaces the default for an
    /// agent without memory.
    pub(super) runs_store: RefCell<Option<Rc<dyn crate::core::memory::Store>>>,
    /// `inputProcessors`, `outputProcessors`, `maxProcessorRetries` of the config.
    pub(super) processors: ProcessorLists,
    /// `agents`: the sub-agents offered as `agent-<key>` tools (SPEC §18).
    agents: Option<AgentsConfig>,
    /// This agent's number in `AGENTS` (`__agentRef`).
    ref_id: u32,
    /// `scorers` of the config, checked (SPEC §14.2).
    scorers: Option<JsValue>,
    /// The scorers registered with the `Mastra` the agent is in, and its storage.
    mastra: RefCell<(JsValue, JsValue)>,
    /// `observability` of the config, else the container's (SPEC §16.1).
    #[cfg(feature = "tracing")]
    observability: RefCell<super::tracing::ObservabilityPair>,
}

thread_local! {
    /// Every live agent by number, so `agents: { key: agent }` finds the Rust agent behind a
    /// JavaScript one.
    static AGENTS: super::registry::Registry<Inner> = const { super::registry::Registry::new() };
}

/// The agent behind a JavaScript `Agent` object.
pub(crate) fn lookup_agent(obj: &JsValue) -> Option<Agent> {
    AGENTS.with(|a| a.lookup(obj, "__agentRef")).map(|inner| Agent { inner })
}

/// What `model` resolved to.
enum AgentModel {
    /// A model API reached over HTTP.
    Http(Endpoint),
    /// An AI SDK model object: the runs stream through its `doStream`.
    Object(JsValue),
}

/// An AI SDK model object's `provider` and `modelId` (both needed besides `doStream`).
pub(crate) fn model_object_names(m: &JsValue, path: &str) -> Result<(String, String), JsValue> {
    let s = |k: &str| Reflect::get(m, &k.into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
    if s("modelId").is_empty() || s("provider").is_empty() {
        return Err(type_error(
            path,
            "a model object needs provider and modelId strings besides doStream() (an AI SDK LanguageModelV2, e.g. openai('gpt-4o-mini'))",
        ));
    }
    Ok((s("provider"), s("modelId")))
}

/// A `model` that is not an AI SDK object, as data: of `{ id, url, apiKey, headers, api }` only
/// those keys (others are ignored, as in the reference).
pub(crate) fn model_data(m: &JsValue, path: &str) -> Result<Data, AgentError> {
    if m.is_object() && !js_sys::Array::is_array(m) {
        Data::pick(m, MODEL_KEYS, path)
    } else {
        Data::of(m, path)
    }
}

/// Whether `m` is an AI SDK model object (a `doStream` function); refused in a build without them.
pub(crate) fn is_model_object(m: &JsValue, path: &str) -> Result<bool, JsValue> {
    let is = m.is_object() && read(m, "doStream", path)?.is_function();
    if is && !cfg!(feature = "ai-sdk-model") {
        return Err(error_to_js(&crate::core::features::not_built(path, "an AI SDK model object", "ai-sdk-model")));
    }
    Ok(is)
}

/// A `model` as `new Agent({ model })` takes it (`'provider/model'`, `{ id, url, apiKey, headers,
/// api }` or an AI SDK model object, which streams with `abort_signal`): the model, its name and
/// its provider.
pub(crate) fn any_model(m: &JsValue, path: &str, abort_signal: &JsValue) -> Result<(Rc<dyn ModelApi>, String, String), JsValue> {
    if is_model_object(m, path)? {
        let (provider, name) = model_object_names(m, path)?;
        let api = Rc::new(JsModel { object: m.clone(), abort_signal: abort_signal.clone() });
        return Ok((api, name, provider));
    }
    let config = model_data(m, path).and_then(Data::strict).map_err(|e| error_to_js(&e))?;
    options::resolve_model(&config, path)
}

/// An agent: instructions, a model, and options for its runs.
#[wasm_bindgen]
#[derive(Clone)]
pub struct Agent {
    pub(super) inner: Rc<Inner>,
}

#[wasm_bindgen]
impl Agent {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "AgentConfig")] config: JsValue) -> Result<Agent, JsValue> {
        if !config.is_object() {
            return Err(type_error("config", "expected an object like { id, instructions, model }"));
        }
        let js = |e: AgentError| error_to_js(&e);
        let stream_keys = options::stream_keys();
        super::unsupported::warn_unknown_keys(&config, KNOWN_CONFIG_KEYS, "new Agent(config)", Some(&stream_keys));
        let model_js = read(&config, "model", "config")?;
        let model_object = is_model_object(&model_js, "config.model")?.then(|| model_js.clone());
        let mut data = Data::pick(&config, CONFIG_KEYS, "config").map_err(js)?;
        if let Some(m) = &model_object {
            // An AI SDK model: the agent streams through its doStream.
            let (provider, name) = model_object_names(m, "config.model")?;
            data.tree["model"] = Value::String(format!("{provider}/{name}"));
        } else if !model_js.is_undefined() {
            data.insert("model", model_data(&model_js, "config.model").map_err(js)?);
        }
        let default_options = read(&config, "defaultOptions", "config")?;
        super::unsupported::warn_unknown_keys(&default_options, &stream_keys, "new Agent(config).defaultOptions", None);
        if default_options.is_object() {
            // Only the data options: callbacks, tools and signals are read apart at each call.
            let picked = Data::pick(&default_options, options::OPTION_KEYS, "config.defaultOptions").map_err(js)?;
            data.insert("defaultOptions", picked);
        } else if !default_options.is_undefined() {
            data.insert("defaultOptions", Data::of(&default_options, "config.defaultOptions").map_err(js)?);
        }
        let parsed = data.parse(parse_agent_config).map_err(js)?;
        options::check_functions(&default_options, "config.defaultOptions")?;
        let m = &parsed.model;
        let (model, provider, model_name) = match model_object {
            Some(obj) => {
                let (provider, name) = model_object_names(&obj, "config.model")?;
                (AgentModel::Object(obj), provider, name)
            }
            None => {
                let (endpoint, name) = options::resolve_endpoint(m, "config.model")?;
                let provider = endpoint.provider.clone();
                (AgentModel::Http(endpoint), provider, name)
            }
        };
        #[allow(unused_mut)]
        let mut tools = parse_tools(&read(&config, "tools", "config")?, "config.tools", false)?;
        let workflows = read(&config, "workflows", "config")?;
        #[cfg(feature = "workflows")]
        for tool in super::workflow_tools::parse_workflow_tools(&workflows, "config.workflows")? {
            if tools.iter().any(|t| t.def.name == tool.def.name) {
                return Err(type_error("config.workflows", &format!("offers the tool '{}', which config.tools already has", tool.def.name)));
            }
            tools.push(tool);
        }
        #[cfg(not(feature = "workflows"))]
        if !(workflows.is_undefined() || workflows.is_null()) {
            return Err(js(crate::core::features::not_built("config.workflows", "workflows", "workflows")));
        }
        let processors = ProcessorLists {
            input: processors::parse_list(&read(&config, "inputProcessors", "config")?, "config.inputProcessors", true)?,
            output: processors::parse_list(&read(&config, "outputProcessors", "config")?, "config.outputProcessors", false)?,
            max_retries: processors::parse_max_retries(&read(&config, "maxProcessorRetries", "config")?, "config.maxProcessorRetries")?,
        };
        let scorers = super::scorers::check_scorers(&read(&config, "scorers", "config")?, "config.scorers")?;
        let memory_js = read(&config, "memory", "config")?;
        let memory = if memory_js.is_undefined() || memory_js.is_null() {
            None
        } else {
            Some(lookup_memory(&memory_js).ok_or_else(|| type_error("config.memory", &format!("expected a Memory (new Memory({{ storage }})), got {}", js_kind(&memory_js))))?)
        };
        let bg_js = read(&config, "backgroundTasks", "config")?;
        const BG: &str = "config.backgroundTasks";
        let bg = Data::of(&bg_js, BG).and_then(|d| d.parse(|t| parse_background_config(t, BG))).map_err(js)?;
        let own_background = !(bg_js.is_undefined() || bg_js.is_null());
        let manager = bg.enabled.then(|| Manager::new(bg, Rc::new(JsRuntime)));
        if let Some(m) = &manager {
            recover_tasks(m, memory.as_ref(), &parsed.id);
        }
        let manager = RefCell::new(manager);
        let runs = RefCell::new(Vec::new());
        let runs_store = super::resume::runs_store(memory.as_ref());
        let idle_wrappers = RefCell::new(Vec::new());
        let agents = parse_agents(&read(&config, "agents", "config")?, "config.agents")?;
        let observability = read(&config, "observability", "config")?;
        #[cfg(feature = "tracing")]
        let observability = RefCell::new((super::tracing::parse_observability(&observability, "config.observability")?, None));
        #[cfg(not(feature = "tracing"))]
        super::unsupported::not_in_build(&observability, "config.observability", "tracing");
        let ref_id = AGENTS.with(|a| a.reserve());
        let agent = Agent {
            inner: Rc::new(Inner {
                config: parsed,
                model,
                provider,
                model_name,
                default_options,
                tools,
                memory,
                memory_js,
                manager,
                own_background,
                idle_wrappers,
                runs,
                runs_store: RefCell::new(runs_store),
                processors,
                agents,
                ref_id,
                scorers,
                mastra: RefCell::new((JsValue::UNDEFINED, JsValue::UNDEFINED)),
                #[cfg(feature = "tracing")]
                observability,
            }),
        };
        AGENTS.with(|a| a.insert(ref_id, &agent.inner));
        Ok(agent)
    }

    #[doc(hidden)]
    #[wasm_bindgen(js_name = __agentRef, skip_typescript)]
    pub fn agent_ref(&self) -> u32 {
        self.inner.ref_id
    }

    /// The `Memory` of the config (or `undefined`), for `serveAgents` in a worker.
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __memory, skip_typescript)]
    pub fn memory_object(&self) -> JsValue {
        self.inner.memory_js.clone()
    }

    /// `defaultOptions.clientTools` as given (or `undefined`), for `serveAgents`: the page
    /// answers those it offers.
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __clientTools, skip_typescript)]
    pub fn client_tools(&self) -> JsValue {
        if !self.inner.default_options.is_object() {
            return JsValue::UNDEFINED;
        }
        Reflect::get(&self.inner.default_options, &"clientTools".into()).unwrap_or(JsValue::UNDEFINED)
    }

    /// Joins a container's scorers and storage (`new Mastra({ agents, scorers, storage })`).
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __joinMastra, skip_typescript)]
    pub fn join_mastra(&self, scorers: JsValue, storage: JsValue) {
        // An agent without memory keeps its run records in the container's storage, when that
        // storage has the run methods (SPEC §19.4: the agent's memory, else the Mastra's).
        if self.inner.memory.is_none() && storage.is_object() {
            if let Ok(store) = super::memory::store_from(&storage, "new Mastra(config).storage") {
                if store.runs().is_some() {
                    *self.inner.runs_store.borrow_mut() = Some(store);
                }
            }
        }
        *self.inner.mastra.borrow_mut() = (scorers, storage);
    }

    /// Joins a container's `observability` (used when the agent has none of its own).
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __joinObservability, skip_typescript)]
    pub fn join_observability(&self, observability: JsValue) -> Result<(), JsValue> {
        #[cfg(feature = "tracing")]
        {
            self.inner.observability.borrow_mut().1 = super::tracing::parse_observability(&observability, "new Mastra(config).observability")?;
        }
        #[cfg(not(feature = "tracing"))]
        super::unsupported::not_in_build(&observability, "new Mastra(config).observability", "tracing");
        Ok(())
    }

    /// Joins a container's background task manager (`new Mastra({ agents, backgroundTasks })`),
    /// unless the agent configured its own.
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __joinManager, skip_typescript)]
    pub fn join_manager(&self, id: JsValue) {
        let whole = id.as_f64().filter(|n| n.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(n));
        let Some(id) = whole.map(|n| n as u32) else { return };
        if self.inner.own_background {
            return;
        }
        if let Some(m) = super::mastra::lookup_manager(id) {
            recover_tasks(&m, self.inner.memory.as_ref(), &self.inner.config.id);
            *self.inner.manager.borrow_mut() = Some(m);
        }
        // Its sub-agents share the container's tasks too (a record has no cycles).
        if let Some(AgentsConfig::Record(agents)) = &self.inner.agents {
            for (_, a) in agents {
                a.join_manager(JsValue::from(id));
            }
        }
    }

    /// The same as `stream(messages, { ...options, untilIdle: { maxIdleMs } })`.
    /// @deprecated Use `agent.stream(messages, { untilIdle: true })` (or `untilIdle: { maxIdleMs }`) instead.
    #[wasm_bindgen(js_name = streamUntilIdle, unchecked_return_type = "Promise<AgentStreamOutput>")]
    pub fn stream_until_idle(
        &self,
        #[wasm_bindgen(unchecked_param_type = "MessageInput")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "StreamOptions & { maxIdleMs?: number }")] options: Option<JsValue>,
    ) -> Promise {
        warn_once_until_idle();
        let options = options.unwrap_or(JsValue::UNDEFINED);
        if !(options.is_undefined() || options.is_null() || options.is_object()) {
            return Promise::reject(&type_error("options", "expected an object or undefined"));
        }
        let read_all = || {
            let max = read(&options, "maxIdleMs", "options")?;
            Ok::<_, JsValue>((max, super::convert::copy_object(&options, "options")?))
        };
        let (max, copy) = match read_all() {
            Ok(read) => read,
            Err(e) => return Promise::reject(&e),
        };
        let idle: JsValue = if max.is_undefined() {
            JsValue::TRUE
        } else {
            let o = js_sys::Object::new();
            let _ = Reflect::set(&o, &"maxIdleMs".into(), &max);
            o.into()
        };
        let _ = Reflect::set(&copy, &"untilIdle".into(), &idle);
        self.stream(messages, Some(copy.into()))
    }

    /// Cancels a background task of this agent. Returns whether it was still going.
    #[wasm_bindgen(js_name = cancelBackgroundTask)]
    pub fn cancel_background_task(
        &self,
        #[wasm_bindgen(js_name = taskId, unchecked_param_type = "string")] task_id: JsValue,
    ) -> Result<bool, JsValue> {
        let id = task_id.as_string().ok_or_else(|| type_error("cancelBackgroundTask(taskId)", &format!("expected a task id string, got {}", js_kind(&task_id))))?;
        // Cancelled outside the borrow: the tool's abort listeners run user JavaScript.
        let manager = self.inner.manager.borrow().clone();
        Ok(manager.is_some_and(|m| m.cancel(&id)))
    }

    /// This agent's background tasks, oldest first: `{ threadId?, status? }` narrows the list.
    #[wasm_bindgen(js_name = listBackgroundTasks, unchecked_return_type = "BackgroundTask[]")]
    pub fn list_background_tasks(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ threadId?: string; status?: BackgroundTaskStatus }")] filter: Option<JsValue>,
    ) -> Result<JsValue, JsValue> {
        let filter = filter.unwrap_or(JsValue::UNDEFINED);
        let f = to_json(&filter, "listBackgroundTasks(filter)").map_err(|e| error_to_js(&e))?;
        const F: &str = "listBackgroundTasks(filter)";
        let thread = crate::core::input::opt_str(&f, "threadId", F).map_err(|e| error_to_js(&e))?;
        let status = match crate::core::input::opt_str(&f, "status", F).map_err(|e| error_to_js(&e))? {
            None => None,
            Some(s) => Some(
                [TaskStatus::Pending, TaskStatus::Running, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled, TaskStatus::TimedOut]
                    .into_iter()
                    .find(|t| t.as_str() == s)
                    .ok_or_else(|| type_error("listBackgroundTasks(filter).status", &format!("expected pending, running, completed, failed, cancelled or timed_out, got '{s}'")))?,
            ),
        };
        let Some(m) = self.inner.manager.borrow().clone() else { return Ok(js_sys::Array::new().into()) };
        let tasks: Vec<Value> = m.list(thread, status).into_iter().filter(|t| t.agent_id == self.inner.config.id).map(|t| t.to_json()).collect();
        Ok(super::convert::from_json(&Value::Array(tasks)))
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
        #[wasm_bindgen(unchecked_optional_param_type = "StreamOptions")] options: Option<JsValue>,
    ) -> Promise {
        match self.start(messages, options.unwrap_or(JsValue::UNDEFINED)) {
            Ok(out) => Promise::resolve(&JsValue::from(out)),
            Err(e) => Promise::reject(&e),
        }
    }

    /// Runs the agent to the end of its reply and resolves to what `getFullOutput()` gives
    /// (`text`, `toolCalls`, `usage`, `steps`, …). Takes the options of `stream()`, whose
    /// callbacks fire as they do there; rejects with the run's error, or with a `TypeError`
    /// for bad messages or options. With `untilIdle`, resolves with the first turn.
    #[wasm_bindgen(unchecked_return_type = "Promise<FullOutput>")]
    pub fn generate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "MessageInput")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "StreamOptions")] options: Option<JsValue>,
    ) -> Promise {
        self.generate_output(messages, options.unwrap_or(JsValue::UNDEFINED)).unwrap_or_else(|e| Promise::reject(&e))
    }
}

impl Agent {
    /// Whether one of its own tools runs in the background (its delegations then do too).
    pub(crate) fn has_background_tool(&self) -> bool {
        self.inner.tools.iter().any(|t| t.def.background.as_ref().and_then(|b| b.enabled) == Some(true))
    }

    pub(crate) fn description(&self) -> Option<String> {
        self.inner.config.description.clone()
    }

    /// A delegated run of this agent (SPEC §18.3): parsed as a call with only the copied
    /// `requestContext`, then given the supervisor's conversation as context, the call's
    /// instructions after its own, and the step limit. Memory is the core's to decide.
    pub(crate) fn sub_run(&self, spec: &SubRunSpec, request_context: JsValue, parent: Option<(Rc<crate::core::tracing::Tracer>, String)>) -> Result<SubRun, JsValue> {
        let inner = &self.inner;
        let options = js_sys::Object::new();
        let _ = Reflect::set(&options, &"requestContext".into(), &request_context);
        let mut call = options::parse(&options.into(), &self.defaults())?;
        #[cfg(feature = "tracing")]
        if let Some((t, id)) = parent {
            call.trace.parent = Some(super::tracing::Parent::Ours(t, id));
        }
        #[cfg(not(feature = "tracing"))]
        drop(parent);
        call.opts.context = spec.context.clone();
        call.opts.instructions = Some(delegation::with_instructions(&inner.config.instructions, spec.instructions.as_deref()));
        let own_max = inner.config.default_options.get("maxSteps").and_then(Value::as_u64).map(|n| n.min(u32::MAX as u64) as u32);
        if let Some(n) = delegation::max_steps(spec.max_steps, spec.max_steps_from_hook, own_max) {
            call.max_steps = n.max(1);
        }
        let turn = self.turn(vec![delegation::prompt_message(&spec.prompt)], &call, None)?;
        Ok(SubRun {
            cfg: turn.cfg,
            hooks: Box::new(turn.host),
            approvals: turn.approvals,
            abort: turn.abort,
            own_memory: inner.memory.as_ref().map(|m| (m.store.clone(), m.options.clone())),
            done: turn.done,
        })
    }

    /// `generate()`: the call `stream()` makes, with no stream handed out (so no chunk is kept
    /// for a reader), resolving to what `getFullOutput()` gives.
    fn generate_output(&self, messages: JsValue, options: JsValue) -> Result<Promise, JsValue> {
        let out = self.start(messages, options)?;
        out.unread();
        Ok(out.get_full_output())
    }

    fn start(&self, messages: JsValue, options: JsValue) -> Result<AgentStreamOutput, JsValue> {
        if messages.is_undefined() || messages.is_function() {
            let got = js_kind(&messages);
            return Err(type_error("messages", &format!("expected a string, an array of strings, or an array of messages, got {got}")));
        }
        let (input, input_ids) = Data::of(&messages, "messages")
            .and_then(|d| d.parse(|t| parse_messages_with_ids(t, "messages")))
            .map_err(|e| error_to_js(&e))?;
        let call = self.parse_call(&options)?;
        let mut turn = self.turn(input, &call, None)?;
        turn.cfg.input_ids = input_ids;
        let idle = self.idle_setup(&call, &turn);
        let shared = Shared::new(turn.run_id.clone(), turn.abort.clone());
        shared.set_trace(turn.trace.clone());
        if turn.cfg.transport != Transport::Fetch {
            shared.use_sockets();
        }
        spawn_run(turn, shared.clone(), call, idle);
        Ok(AgentStreamOutput::new(shared))
    }

    /// A call's options over the agent's defaults.
    pub(super) fn parse_call(&self, options: &JsValue) -> Result<Rc<CallSetup>, JsValue> {
        Ok(Rc::new(options::parse(options, &self.defaults())?))
    }

    /// What a call's options are read over: the agent's `defaultOptions`, tools, memory, model.
    fn defaults(&self) -> AgentDefaults<'_> {
        let inner = &self.inner;
        let api = match &inner.model {
            AgentModel::Http(endpoint) => Some(endpoint.api),
            AgentModel::Object(_) => None,
        };
        AgentDefaults {
            options: &inner.default_options,
            data: &inner.config.default_options,
            tools: &inner.tools,
            memory: inner.memory.as_deref(),
            max_retries: inner.config.max_retries,
            provider: &inner.provider,
            api,
        }
    }

    /// The `untilIdle` wrapper of a call, when it applies: a memory thread and background tasks.
    /// (Without them `untilIdle` is a plain stream.) A newer wrapper on the same thread and
    /// resource closes the older one. Continuation turns reuse the call's parsed options and are
    /// built without this wrapper, so a default never makes them wrap themselves again.
    pub(super) fn idle_setup(&self, call: &Rc<CallSetup>, first: &Turn) -> Option<IdleSetup> {
        let inner = &self.inner;
        let max_idle_ms = call.until_idle?;
        let (Some(bg), Some(mem)) = (&first.cfg.background, &first.cfg.memory) else { return None };
        let key = (mem.thread_id.clone(), mem.resource_id.clone());
        let outer = first.abort.clone();
        let older = {
            let mut wrappers = inner.idle_wrappers.borrow_mut();
            let older = wrappers.iter().position(|(k, _)| *k == key).map(|pos| wrappers.remove(pos).1);
            wrappers.push((key.clone(), outer.clone()));
            older
        };
        // Aborted after the borrow is released: aborting runs the old run's tools' abort
        // listeners, which may start another untilIdle stream on this agent.
        if let Some(older) = older {
            older.abort(Some("a newer untilIdle stream on this thread took over".into()));
        }
        let scope = Scope { agent_id: inner.config.id.clone(), thread_id: Some(key.0.clone()), resource_id: Some(key.1.clone()) };
        let subscription = bg.manager.subscribe(scope.clone());
        let me = self.inner.clone();
        let parsed = call.clone();
        let next_turn = Box::new(move |directive: String| Agent { inner: me.clone() }.turn(Vec::new(), &parsed, Some(&directive)));
        let weak = Rc::downgrade(&self.inner);
        let flag = outer.clone();
        let on_close = Box::new(move || {
            if let Some(inner) = weak.upgrade() {
                inner.idle_wrappers.borrow_mut().retain(|(k, f)| !(k == &key && f.same(&flag)));
            }
        });
        let watch = IdleWatch { manager: bg.manager.clone(), subscription, scope, max_idle_ms };
        Some(IdleSetup { watch, next_turn, on_close })
    }

    /// One turn of a call: its run config, tool host and abort flag, from the call's parsed
    /// options. `directive` (for untilIdle continuations) is added to the context, sent to the
    /// model and never stored.
    pub(super) fn turn(&self, input: Vec<ModelMessage>, call: &CallSetup, directive: Option<&str>) -> Result<Turn, JsValue> {
        let inner = &self.inner;
        let mut opts = call.opts.clone();
        if let Some(d) = directive {
            opts.context.push(ModelMessage::System(d.to_string()));
            opts.run_id = None;
        }
        let run_id = opts.run_id.clone().unwrap_or_else(crate::platform::random_uuid);
        let abort = AbortFlag::new();
        let tool_abort = web_sys::AbortController::new()?;
        let tool_signal: JsValue = tool_abort.signal().into();
        abort.on_abort(Box::new(move || tool_abort.abort()));
        let model: Rc<dyn ModelApi> = match &inner.model {
            AgentModel::Http(endpoint) => http_model(endpoint.clone()),
            AgentModel::Object(object) => Rc::new(JsModel { object: object.clone(), abort_signal: tool_signal.clone() }),
        };
        let memory = call.memory.clone();
        let title = call.title.as_ref().map(|t| t.job(&model, &inner.model_name, call.max_retries));
        #[cfg(feature = "tracing")]
        let tracer = self.tracer(call, &run_id, &input);
        let input_len = input.len();
        let prompt = build_prompt(&inner.config.instructions, &opts, input);
        let input_start = prompt.len() - input_len;
        let request = build_request(&inner.model_name, prompt, &opts, &inner.provider);
        let env = ToolEnv {
            run_id: run_id.clone(),
            agent_id: inner.config.id.clone(),
            thread_id: memory.as_ref().map(|m| m.thread_id.clone()),
            resource_id: memory.as_ref().map(|m| m.resource_id.clone()),
            abort_signal: tool_signal,
            request_context: call.request_context.clone(),
            #[cfg(feature = "tracing")]
            tracing_context: super::tracing::tool_context(tracer.as_ref()),
            #[cfg(not(feature = "tracing"))]
            tracing_context: None,
        };
        #[cfg(feature = "tracing")]
        let tracing_context = super::tracing::root_context(tracer.as_ref());
        #[cfg(not(feature = "tracing"))]
        let tracing_context = js_sys::Object::new().into();
        let step = super::input_step::StepEnv { tools: env.clone(), provider: inner.provider.clone(), max_steps: call.max_steps as usize };
        let penv = ProcessorEnv {
            run_id: run_id.clone(),
            request_context: call.request_context.clone(),
            abort_signal: env.abort_signal.clone(),
            tracing_context,
            #[cfg(all(feature = "tracing", feature = "processors"))]
            tracer: tracer.clone(),
            step,
        };
        let (own, agent) = (&call.processors, &inner.processors);
        let run_processors = crate::core::run::processors::Processors {
            input: own.input.as_ref().or(agent.input.as_ref()).map(|l| processors::instantiate(l, &penv)).unwrap_or_default(),
            output: own.output.as_ref().or(agent.output.as_ref()).map(|l| processors::instantiate(l, &penv)).unwrap_or_default(),
            max_retries: own.max_retries.or(agent.max_retries).unwrap_or(0),
            provider: inner.provider.clone(),
            provider_options: opts.provider_options.clone(),
        };
        let host = JsHost::new(call.tools.clone(), env, &call.js, call.max_steps as usize, call.base_settings.clone());
        let background = inner.manager.borrow().clone().map(|manager| BackgroundRun { manager, agent_id: inner.config.id.clone() });
        // Continuation turns (untilIdle) are not scored: the call's run is its first turn.
        let scoring = directive.is_none().then(|| self.score_job(call)).flatten();
        #[cfg(feature = "tracing")]
        let scoring = scoring.map(|job| super::scorers::ScoreJob { tracer: tracer.clone(), ..job });
        let cfg = RunConfig {
            run_id: run_id.clone(),
            model,
            request,
            max_retries: call.max_retries,
            include_raw: opts.include_raw_chunks,
            max_steps: call.max_steps,
            tools: call.tools.iter().map(|t| t.def.clone()).collect(),
            active_tools: opts.active_tools.clone(),
            tool_choice: opts.tool_choice.clone(),
            require_tool_approval: opts.require_tool_approval,
            tool_call_concurrency: opts.tool_call_concurrency.unwrap_or(10),
            stop_when: call.stop_when.clone(),
            input_start,
            input_ids: Vec::new(),
            memory,
            title,
            background,
            transport: call.transport.clone(),
            // A continuation turn (untilIdle) has the first turn's options, which told them.
            setting_warnings: if directive.is_none() { call.setting_warnings.clone() } else { Vec::new() },
            structured: call.structured.clone(),
            processors: run_processors,
            #[cfg(feature = "tracing")]
            delegation: JsDelegator::delegation(inner.agents.as_ref(), &call.delegation, &call.request_context, (&inner.config.id, &inner.config.name), tracer.clone()),
            #[cfg(not(feature = "tracing"))]
            delegation: JsDelegator::delegation(inner.agents.as_ref(), &call.delegation, &call.request_context, (&inner.config.id, &inner.config.name), None),
            scoring: scoring.is_some(),
            #[cfg(feature = "scorers")]
            completion: call.completion.as_ref().map(|c| {
                let run = super::completion::RunOf { run_id: &run_id, agent_id: &inner.config.id, agent_name: &inner.config.name, request_context: &call.request_context };
                c.check(run)
            }),
            #[cfg(not(feature = "scorers"))]
            completion: None,
            runs: Some(super::resume::runs_cfg(inner, call, &opts)),
            resume: None,
            #[cfg(feature = "tracing")]
            tracing: tracer.clone(),
            #[cfg(not(feature = "tracing"))]
            tracing: None,
        };
        let approvals = Rc::new(Approvals::default());
        let live = super::resume::LiveRun::new(approvals.clone(), abort.clone());
        let views = live.views.clone();
        inner.runs.borrow_mut().push((run_id.clone(), Rc::new(live)));
        let me = Rc::downgrade(&self.inner);
        let id = run_id.clone();
        let done = Box::new(move || {
            if let Some(inner) = me.upgrade() {
                inner.runs.borrow_mut().retain(|(r, _)| *r != id);
            }
        });
        #[cfg(feature = "tracing")]
        let trace = tracer.map(|t| (t.trace_id().to_string(), t.root_id().to_string()));
        #[cfg(not(feature = "tracing"))]
        let trace = None;
        #[cfg(feature = "watch")]
        let tap = match (&inner.memory, &call.memory) {
            (Some(m), Some(run)) => Some(super::watch::ChunkTap {
                hub: m.hub.clone(),
                key: crate::core::memory::watch::EventKey::new(Some(&run.thread_id), Some(&run.resource_id)),
            }),
            _ => None,
        };
        Ok(Turn {
            cfg,
            host,
            approvals,
            views,
            run_id,
            abort,
            done,
            scoring,
            trace,
            #[cfg(feature = "watch")]
            tap,
        })
    }

    /// The tracer of a turn, when the call is traced (SPEC §16).
    #[cfg(feature = "tracing")]
    fn tracer(&self, call: &CallSetup, run_id: &str, input: &[ModelMessage]) -> Option<Rc<crate::core::tracing::Tracer>> {
        let inner = &self.inner;
        let obs = {
            let o = inner.observability.borrow();
            o.0.clone().or_else(|| o.1.clone())
        };
        let mut secrets = Vec::new();
        if let AgentModel::Http(e) = &inner.model {
            secrets.extend(e.api_key.clone());
            secrets.extend(e.headers.iter().filter(|(k, _)| crate::core::tracing::redact::is_key_header(k)).map(|(_, v)| v.clone()));
        }
        let instructions = Some(inner.config.instructions.join("\n")).filter(|s| !s.is_empty());
        super::tracing::tracer_for(super::tracing::TurnTrace {
            observability: obs.as_ref(),
            options: &call.trace,
            run_id,
            agent_id: &inner.config.id,
            agent_name: &inner.config.name,
            instructions,
            model_id: &inner.model_name,
            provider: &inner.provider,
            request_context: &call.request_context,
            input: crate::core::step::messages_json(input),
            secrets,
        })
    }

    /// What scoring a call's run needs, when it has scorers (its own, else the agent's) or
    /// `returnScorerData`.
    fn score_job(&self, call: &CallSetup) -> Option<super::scorers::ScoreJob> {
        // Without the feature no call has scorers (refused when the options are read).
        #[cfg(not(feature = "scorers"))]
        return None;
        let inner = &self.inner;
        let scorers = call.scorers.clone().or_else(|| inner.scorers.clone());
        if scorers.is_none() && !call.return_scorer_data {
            return None;
        }
        let (registered, mastra_storage) = inner.mastra.borrow().clone();
        let mut storages = Vec::new();
        if let Some(m) = &inner.memory {
            storages.push(m.storage.clone());
        }
        storages.push(mastra_storage);
        let saves = |s: &JsValue| s.is_object() && Reflect::get(s, &"saveScore".into()).map(|f| f.is_function()).unwrap_or(false);
        let mut kept: Vec<JsValue> = Vec::new();
        for s in storages.into_iter().filter(saves) {
            if !kept.iter().any(|k| js_sys::Object::is(k, &s)) {
                kept.push(s);
            }
        }
        Some(super::scorers::ScoreJob {
            scorers,
            registered,
            storages: kept,
            agent_id: inner.config.id.clone(),
            agent_name: inner.config.name.clone(),
            request_context: call.request_context.clone(),
            thread_id: call.memory.as_ref().map(|m| m.thread_id.clone()),
            resource_id: call.memory.as_ref().map(|m| m.resource_id.clone()),
            structured_output: call.structured.is_some(),
            return_data: call.return_scorer_data,
            #[cfg(feature = "tracing")]
            tracer: None,
        })
    }
}

thread_local! {
    static WARNED_UNTIL_IDLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `streamUntilIdle()` is deprecated: one warning per process.
fn warn_once_until_idle() {
    if WARNED_UNTIL_IDLE.with(|w| w.replace(true)) {
        return;
    }
    let console = Reflect::get(&js_sys::global(), &"console".into()).unwrap_or(JsValue::UNDEFINED);
    if let Ok(warn) = Reflect::get(&console, &"warn".into()).and_then(|w| w.dyn_into::<Function>()) {
        let _ = warn.call1(&console, &"wasm-agent: agent.streamUntilIdle() is deprecated; use agent.stream(messages, { untilIdle: true }) instead".into());
    }
}

/// Marks the tasks a stopped page or isolate left running as interrupted (in the background).
fn recover_tasks(m: &Rc<Manager>, memory: Option<&Rc<MemoryInner>>, agent_id: &str) {
    let Some(mem) = memory else { return };
    // With `memory.watch` built in, the agent also follows the tasks other tabs on the same
    // memory run (SPEC §21.2); that starts with this same recovery.
    #[cfg(feature = "watch")]
    super::tabs::follow_other_tabs(m, mem, agent_id);
    #[cfg(not(feature = "watch"))]
    {
        let (m, store, agent_id) = (m.clone(), mem.store.clone(), agent_id.to_string());
        wasm_bindgen_futures::spawn_local(async move {
            let _ = m.recover(store, &agent_id).await;
        });
    }
}

/// `api: 'chat' | 'responses'` picks the wire protocol of an OpenAI-compatible provider.
pub(crate) fn choose_api(default: Api, asked: Option<&str>, field: &str) -> Result<Api, JsValue> {
    match (default, asked) {
        (d, None) => Ok(d),
        (Api::Chat | Api::Responses, Some("chat")) => Ok(Api::Chat),
        (Api::Chat | Api::Responses, Some("responses")) => Ok(Api::Responses),
        (_, Some(a)) => Err(type_error(field, &format!("'{a}' applies to OpenAI-compatible providers only; this provider has its own API"))),
    }
}
