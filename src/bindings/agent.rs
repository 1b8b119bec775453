//! `new Agent(config)` and `agent.stream(messages, options)`.

use std::rc::Rc;

use std::cell::RefCell;

use js_sys::{Function, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, js_kind, read, to_json, type_error, Data};
use super::background::JsRuntime;
use super::host::JsHost;
use super::run::{IdleSetup, Turn};
use crate::core::abort::AbortFlag;
use crate::core::background::{parse_background_config, Manager, Scope, TaskStatus};
use crate::core::transport::{self, Transport};
use crate::core::run::BackgroundRun;
use crate::core::until_idle::{IdleWatch, DEFAULT_MAX_IDLE_MS};
use super::memory::{lookup_memory, MemoryInner};
use crate::core::memory::{parse_memory_options, MemoryRun};
use crate::core::run_memory::{TitleJob, DEFAULT_TITLE_INSTRUCTIONS};
use super::output::{AgentStreamOutput, Shared};
use super::run::{spawn_run, Callbacks};
use super::tools::{parse_tools, JsTool, ToolEnv};
use crate::core::run::StopCondition;
use crate::core::tools::{Approvals, Decision};
use crate::core::error::AgentError;
use crate::core::input::parse_messages;
use crate::core::options::{build_prompt, build_request, merge_options, parse_agent_config, parse_stream_options, AgentConfig};
use crate::core::run::RunConfig;
use crate::core::model_api::{HttpModel, ModelApi};
use crate::core::wire::{Api, Endpoint};
use crate::providers::registry;
use super::host::JsModel;

/// The data keys of `new Agent(config)` besides `model` and `defaultOptions`; functions and objects
/// such as tools are read apart.
const CONFIG_KEYS: &[&str] = &["id", "name", "description", "instructions", "maxRetries"];
/// The keys of a `{ id, url, apiKey, headers, api }` model.
const MODEL_KEYS: &[&str] = &["id", "url", "apiKey", "headers", "api"];
/// The data keys of `stream()` options read by this version.
const OPTION_KEYS: &[&str] = &[
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
const CALLBACKS: &[&str] =
    &["onChunk", "onStepFinish", "onFinish", "onError", "onAbort", "prepareStep", "onIterationComplete"];

struct Inner {
    config: AgentConfig,
    model: AgentModel,
    /// The provider prefix (`openai`), which names its `providerOptions`.
    provider: String,
    model_name: String,
    /// `defaultOptions` as given, for its callbacks and `abortSignal`.
    default_options: JsValue,
    tools: Vec<JsTool>,
    memory: Option<Rc<MemoryInner>>,
    /// Runs background tasks when `backgroundTasks` is enabled.
    manager: RefCell<Option<Rc<Manager>>>,
    /// Whether the agent's own config set `backgroundTasks` (a container's then does not apply).
    own_background: bool,
    /// Open untilIdle wrappers by (thread, resource), with the flag that closes each.
    idle_wrappers: RefCell<Vec<((String, String), AbortFlag)>>,
    /// Runs in progress, for `approveToolCall` / `declineToolCall`.
    runs: RefCell<Vec<(String, Rc<Approvals>)>>,
}

/// What `model` resolved to.
enum AgentModel {
    /// A model API reached over HTTP.
    Http(Endpoint),
    /// An AI SDK model object: the runs stream through its `doStream`.
    Object(JsValue),
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
        let js = |e: AgentError| error_to_js(&e);
        let model_js = read(&config, "model", "config")?;
        let is_model_object = model_js.is_object() && read(&model_js, "doStream", "config.model")?.is_function();
        let model_object = is_model_object.then(|| model_js.clone());
        let mut data = Data::pick(&config, CONFIG_KEYS, "config").map_err(js)?;
        if let Some(m) = &model_object {
            // An AI SDK model: the agent streams through its doStream.
            let s = |k: &str| Reflect::get(m, &k.into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
            if s("modelId").is_empty() || s("provider").is_empty() {
                return Err(type_error(
                    "config.model",
                    "a model object needs provider and modelId strings besides doStream() (an AI SDK LanguageModelV2, e.g. openai('gpt-4o-mini'))",
                ));
            }
            data.tree["model"] = Value::String(format!("{}/{}", s("provider"), s("modelId")));
        } else if model_js.is_object() && !js_sys::Array::is_array(&model_js) {
            // Only the keys of `{ id, url, apiKey, headers, api }`: others are ignored, as in the reference.
            data.insert("model", Data::pick(&model_js, MODEL_KEYS, "config.model").map_err(js)?);
        } else if !model_js.is_undefined() {
            data.insert("model", Data::of(&model_js, "config.model").map_err(js)?);
        }
        let default_options = read(&config, "defaultOptions", "config")?;
        if default_options.is_object() {
            // Only the data options: callbacks, tools and signals are read apart at each call.
            let picked = Data::pick(&default_options, OPTION_KEYS, "config.defaultOptions").map_err(js)?;
            data.insert("defaultOptions", picked);
        } else if !default_options.is_undefined() {
            data.insert("defaultOptions", Data::of(&default_options, "config.defaultOptions").map_err(js)?);
        }
        let parsed = data.parse(parse_agent_config).map_err(js)?;
        check_functions(&default_options, "config.defaultOptions")?;
        let m = &parsed.model;
        let (model, provider, model_name) = match model_object {
            Some(obj) => {
                let s = |k: &str| Reflect::get(&obj, &k.into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
                let (provider, name) = (s("provider"), s("modelId"));
                (AgentModel::Object(obj), provider, name)
            }
            None => {
                let (mut endpoint, name) = registry::resolve(&m.id, m.url.clone(), m.api_key.clone(), m.headers.clone(), &crate::platform::env_var, "config.model")
                    .map_err(|e| error_to_js(&e))?;
                endpoint.api = choose_api(endpoint.api, m.api.as_deref())?;
                browser_headers(&mut endpoint);
                let provider = endpoint.provider.clone();
                (AgentModel::Http(endpoint), provider, name)
            }
        };
        let tools = parse_tools(&read(&config, "tools", "config")?, "config.tools", false)?;
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
        let idle_wrappers = RefCell::new(Vec::new());
        Ok(Agent {
            inner: Rc::new(Inner {
                config: parsed,
                model,
                provider,
                model_name,
                default_options,
                tools,
                memory,
                manager,
                own_background,
                idle_wrappers,
                runs,
            }),
        })
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

    /// Runs a call that waits for approval. Returns whether such a call was waiting.
    #[wasm_bindgen(js_name = approveToolCall)]
    pub fn approve_tool_call(&self, #[wasm_bindgen(unchecked_param_type = "{ runId: string; toolCallId: string }")] args: JsValue) -> Result<bool, JsValue> {
        self.decide(&args, "approveToolCall", Decision::Approve)
    }

    /// Declines a call that waits for approval: the stream shows `tool-output-denied` and the
    /// model is told, with the reason. Returns whether such a call was waiting.
    #[wasm_bindgen(js_name = declineToolCall)]
    pub fn decline_tool_call(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ runId: string; toolCallId: string; reason?: string }")] args: JsValue,
    ) -> Result<bool, JsValue> {
        let reason = read(&args, "reason", "declineToolCall(args)")?;
        if !(reason.is_undefined() || reason.is_null() || reason.is_string()) {
            let got = js_kind(&reason);
            return Err(type_error("declineToolCall(args).reason", &format!("expected a string, got {got}")));
        }
        self.decide(&args, "declineToolCall", Decision::Decline { reason: reason.as_string() })
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
}

impl Agent {
    /// `memory: { thread, resource, options? }` of a call.
    fn memory_run(&self, v: &JsValue, save_per_step: &JsValue) -> Result<Option<MemoryRun>, JsValue> {
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
        let data =
            Data::pick(v, &["thread", "resource", "options"], F).and_then(Data::strict).map_err(|e| error_to_js(&e))?;
        let Some(mem) = &self.inner.memory else {
            return Err(type_error(F, "this agent has no memory: create it with new Agent({ memory: new Memory() })"));
        };
        let (thread_id, title, metadata) = match data.get("thread") {
            Some(Value::String(s)) if !s.is_empty() => (s.clone(), None, None),
            Some(t @ Value::Object(_)) => match t.get("id") {
                Some(Value::String(id)) if !id.is_empty() => {
                    let title = crate::core::input::opt_str(t, "title", "options.memory.thread").map_err(|e| error_to_js(&e))?.map(str::to_owned);
                    let metadata = crate::core::input::opt_object(t, "metadata", "options.memory.thread").map_err(|e| error_to_js(&e))?.map(|m| Value::Object(m.clone()));
                    (id.clone(), title, metadata)
                }
                other => return Err(type_error("options.memory.thread.id", &format!("expected a non-empty string, got {}", other.map_or("undefined", crate::core::input::kind)))),
            },
            other => return Err(type_error("options.memory.thread", &format!("expected a thread id (a non-empty string) or {{ id, title?, metadata? }}, got {}", other.map_or("undefined", crate::core::input::kind)))),
        };
        let resource_id = match data.get("resource") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            other => return Err(type_error("options.memory.resource", &format!("expected a resource id (a non-empty string, e.g. the user's id), got {}", other.map_or("undefined", crate::core::input::kind)))),
        };
        let config = parse_memory_options(data.get("options").unwrap_or(&Value::Null), &mem.options, "options.memory.options").map_err(|e| error_to_js(&e))?;
        Ok(Some(MemoryRun { store: mem.store.clone(), thread_id, resource_id, title, metadata, config, save_per_step }))
    }

    /// `generateTitle` (the call's memory options over the Memory's): `true` uses the agent's
    /// model, `{ model?, instructions? }` another.
    fn title_job(&self, memory_opt: &JsValue, max_retries: u32, run_model: &Rc<dyn ModelApi>) -> Result<Option<TitleJob>, JsValue> {
        let Some(mem) = &self.inner.memory else { return Ok(None) };
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
            other => return Err(type_error(field, &format!("expected true, false or {{ model?, instructions? }}, got {}", crate::core::input::kind(other)))),
        };
        let (model, model_id) = match model {
            None => (run_model.clone(), self.inner.model_name.clone()),
            Some(m) => {
                let path = format!("{field}.model");
                let mc = crate::core::options::parse_model_config(&m, &path).map_err(|e| error_to_js(&e))?;
                let (mut endpoint, model) =
                    registry::resolve(&mc.id, mc.url, mc.api_key, mc.headers, &crate::platform::env_var, &path).map_err(|e| error_to_js(&e))?;
                browser_headers(&mut endpoint);
                (http_model(endpoint), model)
            }
        };
        let instructions = instructions.unwrap_or_else(|| DEFAULT_TITLE_INSTRUCTIONS.to_string());
        Ok(Some(TitleJob { model, model_id, instructions, max_retries }))
    }

    fn decide(&self, args: &JsValue, method: &str, decision: Decision) -> Result<bool, JsValue> {
        let path = format!("{method}(args)");
        let string = |k: &str| {
            let v = read(args, k, &path)?;
            let got = js_kind(&v);
            v.as_string().ok_or_else(|| type_error(&format!("{path}.{k}"), &format!("expected a string, got {got}")))
        };
        let (run_id, call_id) = (string("runId")?, string("toolCallId")?);
        let approvals = self.inner.runs.borrow().iter().find(|(r, _)| *r == run_id).map(|(_, a)| a.clone());
        Ok(approvals.is_some_and(|a| a.decide(&call_id, decision)))
    }

    fn start(&self, messages: JsValue, options: JsValue) -> Result<AgentStreamOutput, JsValue> {
        let inner = &self.inner;
        if !(options.is_undefined() || options.is_null() || options.is_object()) {
            return Err(type_error("options", "expected an object or undefined"));
        }
        check_functions(&options, "options")?;
        let turn = self.prepare(messages, &options, None)?;
        let callbacks = Callbacks::read(&options, &inner.default_options)?;
        let signal = option_or_default(&options, &inner.default_options, "abortSignal")?;
        if !signal.is_undefined() && !signal.is_null() && !is_abort_signal(&signal) {
            return Err(type_error("options.abortSignal", "expected an AbortSignal"));
        }
        let idle = self.until_idle_setup(&options, &turn)?;
        let shared = Shared::new(turn.run_id.clone(), turn.abort.clone());
        if turn.cfg.transport != Transport::Fetch {
            shared.use_sockets();
        }
        spawn_run(turn, shared.clone(), callbacks, signal, idle);
        Ok(AgentStreamOutput::new(shared))
    }

    /// The `untilIdle` wrapper of a call, when it applies: a memory thread and background tasks.
    /// (Without them `untilIdle` is a plain stream.) A newer wrapper on the same thread and
    /// resource closes the older one.
    fn until_idle_setup(&self, options: &JsValue, first: &Turn) -> Result<Option<IdleSetup>, JsValue> {
        let inner = &self.inner;
        // The call's option, else defaultOptions'. Continuation turns are built by `prepare`
        // without this wrapper, so a default never makes them wrap themselves again.
        let v = option_or_default(options, &inner.default_options, "untilIdle")?;
        let max_idle_ms = match parse_until_idle(&v)? {
            Some(ms) => ms,
            None => return Ok(None),
        };
        let (Some(bg), Some(mem)) = (&first.cfg.background, &first.cfg.memory) else { return Ok(None) };
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
        let opts = options.clone();
        let next_turn = Box::new(move |directive: String| Agent { inner: me.clone() }.prepare(JsValue::from(js_sys::Array::new()), &opts, Some(&directive)));
        let weak = Rc::downgrade(&self.inner);
        let flag = outer.clone();
        let on_close = Box::new(move || {
            if let Some(inner) = weak.upgrade() {
                inner.idle_wrappers.borrow_mut().retain(|(k, f)| !(k == &key && f.same(&flag)));
            }
        });
        let watch = IdleWatch { manager: bg.manager.clone(), subscription, scope, max_idle_ms };
        Ok(Some(IdleSetup { watch, next_turn, on_close }))
    }

    /// One turn of a call: its run config, tool host and abort flag. `directive` (for untilIdle
    /// continuations) is added to the context, sent to the model and never stored.
    fn prepare(&self, messages: JsValue, options: &JsValue, directive: Option<&str>) -> Result<Turn, JsValue> {
        let inner = &self.inner;
        let js = |e: AgentError| error_to_js(&e);
        if messages.is_undefined() || messages.is_function() {
            return Err(type_error(
                "messages",
                &format!("expected a string, an array of strings, or an array of messages, got {}", super::convert::js_kind(&messages)),
            ));
        }
        let input =
            Data::of(&messages, "messages").and_then(|d| d.parse(|t| parse_messages(t, "messages"))).map_err(js)?;
        let call = Data::pick(options, OPTION_KEYS, "options").map_err(js)?;
        let merged = merge_options(&inner.config.default_options, &call.tree);
        let mut opts = call.parse(|_| parse_stream_options(&merged, "options")).map_err(js)?;
        if let Some(d) = directive {
            opts.context.push(crate::core::model::ModelMessage::System(d.to_string()));
            opts.run_id = None;
        }
        let run_id = opts.run_id.clone().unwrap_or_else(crate::platform::random_uuid);
        let opt = |k: &str| option_or_default(options, &inner.default_options, k);
        let mut tools = inner.tools.clone();
        let toolsets = opt("toolsets")?;
        if toolsets.is_object() {
            for set in super::convert::object_keys(&toolsets).map_err(|_| type_error("options.toolsets", "could not be read"))?.iter() {
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
        let abort = crate::core::abort::AbortFlag::new();
        let tool_abort = web_sys::AbortController::new()?;
        let tool_signal: JsValue = tool_abort.signal().into();
        abort.on_abort(Box::new(move || tool_abort.abort()));
        let model: Rc<dyn ModelApi> = match &inner.model {
            AgentModel::Http(endpoint) => http_model(endpoint.clone()),
            AgentModel::Object(object) => Rc::new(JsModel { object: object.clone(), abort_signal: tool_signal.clone() }),
        };
        let memory_js = opt("memory")?;
        let memory = self.memory_run(&memory_js, &opt("savePerStep")?)?;
        let title = match &memory {
            Some(_) => self.title_job(&memory_js, max_retries_of(&opts, &inner.config), &model)?,
            None => None,
        };
        let on_title = read(&memory_js, "onTitleGenerated", "options.memory")?;
        let on_title = optional_function(&on_title, "options.memory.onTitleGenerated")?;
        let input_len = input.len();
        let prompt = build_prompt(&inner.config.instructions, &opts, input);
        let input_start = prompt.len() - input_len;
        let provider = &inner.provider;
        let provider_options = opts.provider_options.as_ref().and_then(|p| p.get(provider)).and_then(Value::as_object);
        let api = match &inner.model {
            AgentModel::Http(endpoint) => Some(endpoint.api),
            AgentModel::Object(_) => None,
        };
        let transport = transport::parse(provider_options, api, &format!("options.providerOptions.{provider}"))
            .map_err(|e| error_to_js(&e))?;
        let request = build_request(&inner.model_name, prompt, &opts, provider);
        let max_retries = opts.model_settings.max_retries.unwrap_or(inner.config.max_retries);
        let max_steps = opts.max_steps.unwrap_or(5);
        let mut host = JsHost::new(
            tools.clone(),
            ToolEnv {
                run_id: run_id.clone(),
                agent_id: inner.config.id.clone(),
                thread_id: memory.as_ref().map(|m| m.thread_id.clone()),
                resource_id: memory.as_ref().map(|m| m.resource_id.clone()),
                abort_signal: tool_signal,
                request_context: opt("requestContext")?,
            },
            &hooks,
            callback(options, &inner.default_options, "prepareStep")?,
            stop_fns,
            callback(options, &inner.default_options, "onIterationComplete")?,
            max_steps as usize,
            merged.get("modelSettings").cloned().unwrap_or(Value::Null),
        )?;
        host.on_title_generated = on_title;
        let background = inner.manager.borrow().clone().map(|manager| BackgroundRun { manager, agent_id: inner.config.id.clone() });
        let memory_options = memory.as_ref().and(inner.memory.as_ref()).map(|m| &m.options_json);
        let setting_warnings = match directive {
            None => super::unsupported::warnings_of(options, &inner.default_options, memory_options)?,
            // A continuation turn (untilIdle) has the first turn's options, which told them.
            Some(_) => Vec::new(),
        };
        let cfg = RunConfig {
            run_id: run_id.clone(),
            model,
            request,
            max_retries,
            include_raw: opts.include_raw_chunks,
            max_steps,
            tools: tools.into_iter().map(|t| t.def).collect(),
            active_tools: opts.active_tools.clone(),
            tool_choice: opts.tool_choice.clone(),
            require_tool_approval: opts.require_tool_approval,
            tool_call_concurrency: opts.tool_call_concurrency.unwrap_or(10),
            stop_when,
            input_start,
            memory,
            title,
            background,
            transport,
            setting_warnings,
        };
        let approvals = Rc::new(Approvals::default());
        inner.runs.borrow_mut().push((run_id.clone(), approvals.clone()));
        let me = Rc::downgrade(&self.inner);
        let id = run_id.clone();
        let done = Box::new(move || {
            if let Some(inner) = me.upgrade() {
                inner.runs.borrow_mut().retain(|(r, _)| *r != id);
            }
        });
        Ok(Turn { cfg, host, approvals, run_id, abort, done })
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
    let (m, store, agent_id) = (m.clone(), mem.store.clone(), agent_id.to_string());
    wasm_bindgen_futures::spawn_local(async move {
        let _ = m.recover(store, &agent_id).await;
    });
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

/// Callbacks must be functions when given.
fn check_functions(options: &JsValue, path: &str) -> Result<(), JsValue> {
    if !options.is_object() {
        return Ok(());
    }
    for name in CALLBACKS {
        let v = read(options, name, path)?;
        if !v.is_undefined() && !v.is_null() && !v.is_function() {
            let got = super::convert::js_kind(&v);
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

pub(crate) fn callback(options: &JsValue, defaults: &JsValue, name: &str) -> Result<Option<Function>, JsValue> {
    Ok(option_or_default(options, defaults, name)?.dyn_into::<Function>().ok())
}

/// `api: 'chat' | 'responses'` picks the wire protocol of an OpenAI-compatible provider.
fn choose_api(default: Api, asked: Option<&str>) -> Result<Api, JsValue> {
    match (default, asked) {
        (d, None) => Ok(d),
        (Api::Chat | Api::Responses, Some("chat")) => Ok(Api::Chat),
        (Api::Chat | Api::Responses, Some("responses")) => Ok(Api::Responses),
        (_, Some(a)) => Err(type_error("config.model.api", &format!("'{a}' applies to OpenAI-compatible providers only; this provider has its own API"))),
    }
}

/// In a page, Anthropic answers a direct call only with its browser-access header (the key is
/// then visible to the page's user, which is the page author's choice to make).
fn browser_headers(endpoint: &mut Endpoint) {
    let global = js_sys::global();
    let in_page = ["window", "document"].iter().all(|k| Reflect::get(&global, &(*k).into()).map(|v| v.is_object()).unwrap_or(false));
    if in_page && endpoint.api == Api::Anthropic {
        endpoint.headers.insert(0, ("anthropic-dangerous-direct-browser-access".into(), "true".into()));
    }
}

/// The model at `endpoint`, spoken with its API's protocol.
fn http_model(endpoint: Endpoint) -> Rc<dyn ModelApi> {
    Rc::new(HttpModel { protocol: crate::providers::protocol(endpoint.api), endpoint })
}

fn max_retries_of(opts: &crate::core::options::StreamOptions, config: &AgentConfig) -> u32 {
    opts.model_settings.max_retries.unwrap_or(config.max_retries)
}

pub(crate) fn json_value(v: &Value) -> JsValue {
    super::convert::from_json(v)
}

/// The marker `stepCountIs` and `hasToolCall` leave on the functions they make, so the loop
/// checks them natively.
const STOP_MARK: &str = "__wasmAgentStop";

/// `stopWhen`: a predicate or an array of them.
fn read_stop_when(v: &JsValue) -> Result<(Vec<StopCondition>, Vec<Function>), JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok((Vec::new(), Vec::new()));
    }
    let items: Vec<JsValue> = if js_sys::Array::is_array(v) { js_sys::Array::from(v).iter().collect() } else { vec![v.clone()] };
    let (mut conds, mut fns) = (Vec::new(), Vec::new());
    for (i, f) in items.into_iter().enumerate() {
        let f: Function = f.dyn_into().map_err(|f| {
            type_error("options.stopWhen", &format!("expected a function ({{ steps }}) => boolean or an array of them; item {i} is {}", js_kind(&f)))
        })?;
        let mark = Reflect::get(&f, &STOP_MARK.into()).unwrap_or(JsValue::UNDEFINED);
        let kind = Reflect::get(&mark, &"kind".into()).ok().and_then(|k| k.as_string());
        let value = Reflect::get(&mark, &"value".into()).unwrap_or(JsValue::UNDEFINED);
        match (kind.as_deref(), value.as_f64(), value.as_string()) {
            (Some("stepCount"), Some(n), _) => conds.push(StopCondition::StepCount(n as usize)),
            (Some("hasToolCall"), _, Some(name)) => conds.push(StopCondition::HasToolCall(name)),
            _ => {
                conds.push(StopCondition::Custom(fns.len()));
                fns.push(f);
            }
        }
    }
    Ok((conds, fns))
}

fn marked(f: JsValue, kind: &str, value: JsValue) -> Function {
    let mark = js_sys::Object::new();
    let _ = Reflect::set(&mark, &"kind".into(), &kind.into());
    let _ = Reflect::set(&mark, &"value".into(), &value);
    let _ = Reflect::set(&f, &STOP_MARK.into(), &mark);
    f.unchecked_into()
}

fn steps_len(arg: &JsValue) -> u32 {
    Reflect::get(arg, &"steps".into()).ok().and_then(|s| Reflect::get(&s, &"length".into()).ok()).and_then(|l| l.as_f64()).unwrap_or(0.0) as u32
}

/// `stopWhen: stepCountIs(count)`: stop once `count` steps ran.
#[wasm_bindgen(js_name = stepCountIs, unchecked_return_type = "(options: { steps: StepResult[] }) => boolean")]
pub fn step_count_is(#[wasm_bindgen(unchecked_param_type = "number")] count: JsValue) -> Result<Function, JsValue> {
    let n = match count.as_f64() {
        Some(n) if n.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&n) => n as u32,
        _ => {
            let got = match count.as_f64() {
                Some(n) => super::convert::number_text(n),
                None => js_kind(&count).to_string(),
            };
            let message = format!("expected a non-negative whole number of steps, got {got}");
            return Err(type_error("stepCountIs(count)", &message));
        }
    };
    let f = Closure::<dyn Fn(JsValue) -> bool>::new(move |arg: JsValue| steps_len(&arg) >= n).into_js_value();
    Ok(marked(f, "stepCount", JsValue::from(n)))
}

/// `stopWhen: hasToolCall(name)`: stop after a step that called the tool `name`.
#[wasm_bindgen(js_name = hasToolCall, unchecked_return_type = "(options: { steps: StepResult[] }) => boolean")]
pub fn has_tool_call(#[wasm_bindgen(unchecked_param_type = "string")] name: JsValue) -> Result<Function, JsValue> {
    let Some(name) = name.as_string() else {
        return Err(type_error("hasToolCall(name)", &format!("expected a tool name string, got {}", js_kind(&name))));
    };
    let n = name.clone();
    let f = Closure::<dyn Fn(JsValue) -> bool>::new(move |arg: JsValue| {
        let steps = Reflect::get(&arg, &"steps".into()).unwrap_or(JsValue::UNDEFINED);
        let last = Reflect::get_u32(&steps, steps_len(&arg).saturating_sub(1)).unwrap_or(JsValue::UNDEFINED);
        let calls = Reflect::get(&last, &"toolCalls".into()).unwrap_or(JsValue::UNDEFINED);
        js_sys::Array::is_array(&calls)
            && js_sys::Array::from(&calls).iter().any(|c| Reflect::get(&c, &"toolName".into()).ok().and_then(|t| t.as_string()).as_deref() == Some(n.as_str()))
    })
    .into_js_value();
    Ok(marked(f, "hasToolCall", JsValue::from_str(&name)))
}
