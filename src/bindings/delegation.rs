//! `new Agent({ agents })` (SPEC §18): the record (or function of `requestContext`) of
//! sub-agents, read into the core's `Delegator`: it resolves the agents at the start of a run
//! and builds each delegated run through the sub-agent's own option parser.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Function, Object, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;

use super::agent::{lookup_agent, Agent};
use super::convert::{from_json, js_kind, keyed_record, read, to_json, type_error};
use super::options::optional_function;
use super::tools::{call_async, thrown_message};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::run::delegation::{
    CompleteCtx, CompleteDecision, Delegation, Delegator, HookError, HookErrorStrategy, StartCtx, StartDecision, SubAgent, SubRun,
    SubRunSpec,
};

#[wasm_bindgen(typescript_custom_section)]
const TS_DELEGATION: &'static str = r#"
export interface AgentConfig {
  /**
   * Sub-agents, each offered to the model as the tool `agent-<key>` (key: /^[A-Za-z0-9_-]{1,58}$/);
   * or a function of the request context, resolved at the start of each run.
   */
  agents?: Record<string, Agent> | ((args: { requestContext: unknown }) => Record<string, Agent> | Promise<Record<string, Agent>>);
}
export interface DelegationStartContext {
  primitiveId: string; primitiveType: 'agent'; prompt: string; params: { instructions?: string; maxSteps?: number };
  iteration: number; runId: string; threadId?: string; resourceId?: string; parentAgentId: string; parentAgentName: string;
  toolCallId: string; messages: ModelMessage[]; requestContext: Map<string, unknown>;
}
export interface DelegationCompleteContext {
  primitiveId: string; primitiveType: 'agent'; prompt: string;
  result: { text: string; finishReason?: FinishReason; usage?: Usage; subAgentThreadId?: string; subAgentResourceId?: string; subAgentToolResults?: { toolName: string; toolCallId: string; args: unknown; result: unknown; isError?: boolean }[] };
  duration: number; success: boolean; error?: Error; iteration: number; runId: string; toolCallId: string;
  parentAgentId: string; parentAgentName: string; messages: ModelMessage[]; bail(): void;
}
export interface StreamOptions {
  /** Hooks around each delegation to a sub-agent (SPEC §18.5). */
  delegation?: {
    onDelegationStart?(ctx: DelegationStartContext): MaybePromise<void | { proceed?: boolean; rejectionReason?: string; modifiedPrompt?: string; modifiedInstructions?: string; modifiedMaxSteps?: number }>;
    messageFilter?(ctx: Omit<DelegationStartContext, 'params' | 'requestContext'>): MaybePromise<ModelMessage[]>;
    onDelegationComplete?(ctx: DelegationCompleteContext): MaybePromise<void | { feedback?: string; resultText?: string }>;
    /** 'warn' (default): a hook error is logged and ignored; 'throw': it fails the delegation. */
    hookErrorStrategy?: 'warn' | 'throw';
    /** The model reads the whole delegation result as JSON instead of its text. */
    includeSubAgentToolResultsInModelContext?: boolean;
    enableResultReferences?: boolean;
  };
}
export interface FullOutput {
  /** The delegation hooks that threw in this run (runs of agents with `agents`). */
  delegationHookErrors?: { hook: string; primitiveId: string; toolCallId: string; runId: string; name: string; message: string }[];
}
"#;

/// `agents` as configured.
#[derive(Clone)]
pub(crate) enum AgentsConfig {
    Record(Vec<(String, Agent)>),
    /// `({ requestContext }) => Record | Promise<Record>`, called at the start of each run.
    Function(Function),
}

const KEY_RULE: &str = "a key must match /^[A-Za-z0-9_-]{1,58}$/ (it becomes part of the tool name agent-<key>)";

/// Reads `config.agents`: `undefined`/`null`, a record of agents, or a function.
pub(crate) fn parse_agents(v: &JsValue, path: &str) -> Result<Option<AgentsConfig>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    #[cfg(not(feature = "subagents"))]
    return Err(super::convert::error_to_js(&crate::core::features::not_built(path, "sub-agents", "subagents")));
    if let Some(f) = v.dyn_ref::<Function>() {
        return Ok(Some(AgentsConfig::Function(f.clone())));
    }
    record(v, path).map(|r| Some(AgentsConfig::Record(r))).map_err(|e| super::convert::error_to_js(&e))
}

/// A record of agents; a bad key or a value that is not an `Agent` names the key.
fn record(v: &JsValue, path: &str) -> Result<Vec<(String, Agent)>, AgentError> {
    let expected = "expected an object of agents by key (or a function returning one)";
    let mut out = Vec::new();
    keyed_record(v, path, expected, ("agent", KEY_RULE), &mut |key, field, value| {
        let agent = lookup_agent(&value).ok_or_else(|| AgentError::invalid(field, format!("expected an Agent (new Agent({{ … }})), got {}", js_kind(&value))))?;
        out.push((key, agent));
        Ok(())
    })?;
    Ok(out)
}

/// `RequestContext` (a `Map` subclass api.js defines and leaves under a registered symbol).
fn request_context_class() -> Option<Function> {
    let key = js_sys::Symbol::for_("wasm-agent.RequestContext");
    Reflect::get(&js_sys::global(), &key).ok().and_then(|c| c.dyn_into::<Function>().ok())
}

/// The memory keys of a request context, which a delegated run does not inherit.
const RESERVED_KEYS: &[&str] = &["mastra__threadId", "mastra__resourceId"];

/// A delegated run's own `RequestContext`: the caller's entries (a `Map` or `RequestContext`,
/// else a plain object's own properties) copied, less the reserved memory keys.
fn copy_request_context(v: &JsValue) -> JsValue {
    let class = request_context_class().or_else(|| Reflect::get(&js_sys::global(), &"Map".into()).ok().and_then(|m| m.dyn_into::<Function>().ok()));
    let Some(class) = class else { return v.clone() };
    let args = Array::new();
    if v.dyn_ref::<js_sys::Map>().is_some() {
        args.push(v);
    } else if v.is_object() {
        args.push(&Object::entries(v.unchecked_ref()));
    }
    let copy = Reflect::construct(&class, &args).unwrap_or_else(|_| v.clone());
    if let Some(m) = copy.dyn_ref::<js_sys::Map>() {
        for k in RESERVED_KEYS {
            m.delete(&JsValue::from_str(k));
        }
    }
    copy
}

/// `delegation` of a call (over `defaultOptions.delegation`, key by key).
#[derive(Clone, Default)]
pub(crate) struct DelegationSetup {
    on_start: Option<Function>,
    message_filter: Option<Function>,
    on_complete: Option<Function>,
    strategy: HookErrorStrategy,
    include_tool_results: bool,
}

/// Reads `options.delegation` over `config.defaultOptions.delegation`.
pub(crate) fn parse_setup(call: &JsValue, defaults: &JsValue) -> Result<DelegationSetup, JsValue> {
    for (v, path) in [(call, "options.delegation"), (defaults, "config.defaultOptions.delegation")] {
        if !(v.is_undefined() || v.is_null() || (v.is_object() && !v.is_function())) {
            return Err(type_error(path, &format!("expected an object like {{ onDelegationStart, onDelegationComplete }}, got {}", js_kind(v))));
        }
    }
    let pick = |key: &str| -> Result<(JsValue, String), JsValue> {
        let v = read(call, key, "options.delegation")?;
        if v.is_undefined() {
            return Ok((read(defaults, key, "config.defaultOptions.delegation")?, format!("config.defaultOptions.delegation.{key}")));
        }
        Ok((v, format!("options.delegation.{key}")))
    };
    let function = |key: &str| -> Result<Option<Function>, JsValue> {
        let (v, path) = pick(key)?;
        optional_function(&v, &path)
    };
    let (strategy_js, path) = pick("hookErrorStrategy")?;
    let strategy = match strategy_js.as_string().as_deref() {
        _ if strategy_js.is_undefined() || strategy_js.is_null() => HookErrorStrategy::Warn,
        Some("warn") => HookErrorStrategy::Warn,
        Some("throw") => HookErrorStrategy::Throw,
        _ => return Err(type_error(&path, &format!("expected 'warn' or 'throw', got {}", js_kind(&strategy_js)))),
    };
    let (include, path) = pick("includeSubAgentToolResultsInModelContext")?;
    let include_tool_results = match include.as_bool() {
        Some(b) => b,
        None if include.is_undefined() || include.is_null() => false,
        None => return Err(type_error(&path, &format!("expected a boolean, got {}", js_kind(&include)))),
    };
    Ok(DelegationSetup {
        on_start: function("onDelegationStart")?,
        message_filter: function("messageFilter")?,
        on_complete: function("onDelegationComplete")?,
        strategy,
        include_tool_results,
    })
}

/// `versions`: `{ agents?: Record<id, { versionId } | { status: 'draft' | 'published' }>, defaultStatus? }`.
pub(crate) fn check_versions(v: &JsValue) -> Result<(), JsValue> {
    const F: &str = "options.versions";
    if v.is_undefined() || v.is_null() {
        return Ok(());
    }
    let tree = to_json(v, F).map_err(|e| super::convert::error_to_js(&e))?;
    crate::core::run::delegation::check_versions(&tree, F).map_err(|e| super::convert::error_to_js(&e))
}

/// The delegation side of one run of a supervisor.
pub(crate) struct JsDelegator {
    config: AgentsConfig,
    setup: DelegationSetup,
    request_context: JsValue,
    resolved: RefCell<Vec<(String, Agent)>>,
    /// Each delegation's own request context, made for `onDelegationStart`, by tool call id.
    contexts: RefCell<Vec<(String, JsValue)>>,
    /// The supervisor's tracer: a sub-agent's run nests under its tool call's span (SPEC §16.2).
    tracer: Option<Rc<crate::core::tracing::Tracer>>,
}

impl JsDelegator {
    /// The run's delegation, when the agent has `agents`.
    pub(crate) fn delegation(
        config: Option<&AgentsConfig>,
        setup: &DelegationSetup,
        request_context: &JsValue,
        parent: (&str, &str),
        tracer: Option<Rc<crate::core::tracing::Tracer>>,
    ) -> Option<Delegation> {
        // Without the feature no agent has `agents` (refused at `new Agent`): nothing to wire.
        #[cfg(not(feature = "subagents"))]
        return None;
        let config = config?.clone();
        let host = JsDelegator { config, setup: setup.clone(), request_context: request_context.clone(), resolved: Default::default(), contexts: Default::default(), tracer };
        let mut d = Delegation::new(Rc::new(host));
        d.include_tool_results = setup.include_tool_results;
        d.hook_error_strategy = setup.strategy;
        d.parent_id = parent.0.to_string();
        d.parent_name = parent.1.to_string();
        d.env = Some(Rc::new(crate::platform::JsEnv));
        Some(d)
    }

    fn context_for(&self, tool_call_id: &str) -> JsValue {
        let found = self.contexts.borrow().iter().find(|(id, _)| id == tool_call_id).map(|(_, c)| c.clone());
        found.unwrap_or_else(|| {
            let copy = copy_request_context(&self.request_context);
            self.contexts.borrow_mut().push((tool_call_id.to_string(), copy.clone()));
            copy
        })
    }
}

fn set(o: &Object, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

fn opt_str(v: &Option<String>) -> JsValue {
    v.as_deref().map(JsValue::from_str).unwrap_or(JsValue::UNDEFINED)
}

/// The fields `onDelegationStart` and `messageFilter` share.
fn start_object(ctx: &StartCtx) -> Object {
    let o = Object::new();
    set(&o, "primitiveId", &ctx.primitive_id.as_str().into());
    set(&o, "primitiveType", &"agent".into());
    set(&o, "prompt", &ctx.prompt.as_str().into());
    set(&o, "iteration", &(ctx.iteration as f64).into());
    set(&o, "runId", &ctx.run_id.as_str().into());
    set(&o, "threadId", &opt_str(&ctx.thread_id));
    set(&o, "resourceId", &opt_str(&ctx.resource_id));
    set(&o, "parentAgentId", &ctx.parent_agent_id.as_str().into());
    set(&o, "parentAgentName", &ctx.parent_agent_name.as_str().into());
    set(&o, "toolCallId", &ctx.tool_call_id.as_str().into());
    set(&o, "messages", &from_json(&ctx.messages));
    o
}

fn hook_error(e: &JsValue) -> HookError {
    let name = Reflect::get(e, &"name".into()).ok().and_then(|n| n.as_string()).unwrap_or_else(|| "Error".into());
    HookError { name, message: thrown_message(e) }
}

fn field<T>(ret: &JsValue, key: &str, f: impl Fn(&JsValue) -> Option<T>) -> Option<T> {
    Reflect::get(ret, &key.into()).ok().and_then(|v| f(&v))
}

impl Delegator for JsDelegator {
    fn agents(&self) -> LocalFuture<'_, Result<Vec<SubAgent>, AgentError>> {
        Box::pin(async move {
            let list = match &self.config {
                AgentsConfig::Record(r) => r.clone(),
                AgentsConfig::Function(f) => {
                    let arg = Object::new();
                    let _ = Reflect::set(&arg, &"requestContext".into(), &self.request_context);
                    let got = call_async(f, &JsValue::UNDEFINED, &[&arg.into()]).await;
                    let got = got.map_err(|e| AgentError::invalid("config.agents", format!("the function threw: {}", thrown_message(&e))))?;
                    record(&got, "config.agents(…)")?
                }
            };
            let agents = list.iter().map(|(key, a)| SubAgent { key: key.clone(), id: a.id(), description: a.description(), background: a.has_background_tool() }).collect();
            *self.resolved.borrow_mut() = list;
            Ok(agents)
        })
    }

    fn sub_run(&self, spec: &SubRunSpec) -> Result<SubRun, String> {
        let agent = self.resolved.borrow().iter().find(|(k, _)| *k == spec.key).map(|(_, a)| a.clone());
        let agent = agent.ok_or_else(|| format!("no agent '{}'", spec.key))?;
        let context = self.context_for(&spec.tool_call_id);
        self.contexts.borrow_mut().retain(|(id, _)| *id != spec.tool_call_id);
        let parent = self.tracer.as_ref().map(|t| (t.clone(), t.span_of_tool(&spec.tool_call_id)));
        agent.sub_run(spec, context, parent).map_err(|e| thrown_message(&e))
    }

    fn on_start<'a>(&'a self, ctx: &'a StartCtx) -> LocalFuture<'a, Result<Option<StartDecision>, HookError>> {
        Box::pin(async move {
            let context = self.context_for(&ctx.tool_call_id);
            let Some(f) = &self.setup.on_start else { return Ok(None) };
            let o = start_object(ctx);
            let params = Object::new();
            set(&params, "instructions", &opt_str(&ctx.instructions));
            set(&params, "maxSteps", &ctx.max_steps.map(|n| JsValue::from_f64(n as f64)).unwrap_or(JsValue::UNDEFINED));
            set(&o, "params", &params);
            set(&o, "requestContext", &context);
            let ret = call_async(f, &JsValue::UNDEFINED, &[&o.into()]).await.map_err(|e| hook_error(&e))?;
            if !ret.is_object() {
                return Ok(None);
            }
            let string = |v: &JsValue| v.as_string();
            Ok(Some(StartDecision {
                proceed: field(&ret, "proceed", |v| v.as_bool()),
                rejection_reason: field(&ret, "rejectionReason", string),
                modified_prompt: field(&ret, "modifiedPrompt", string),
                modified_instructions: field(&ret, "modifiedInstructions", string),
                modified_max_steps: field(&ret, "modifiedMaxSteps", |v| v.as_f64().filter(|n| n.is_finite() && *n >= 1.0).map(|n| n.min(u32::MAX as f64) as u32)),
            }))
        })
    }

    fn message_filter<'a>(&'a self, ctx: &'a StartCtx) -> LocalFuture<'a, Result<Option<Vec<crate::core::model::ModelMessage>>, HookError>> {
        Box::pin(async move {
            let Some(f) = &self.setup.message_filter else { return Ok(None) };
            let ret = call_async(f, &JsValue::UNDEFINED, &[&start_object(ctx).into()]).await.map_err(|e| hook_error(&e))?;
            const P: &str = "messageFilter(…)";
            let invalid = |e: AgentError| HookError { name: "TypeError".into(), message: e.to_string() };
            let tree = to_json(&ret, P).map_err(invalid)?;
            if !tree.is_array() {
                return Err(HookError { name: "TypeError".into(), message: format!("{P}: expected an array of messages, got {}", js_kind(&ret)) });
            }
            crate::core::input::parse_messages(&tree, P).map(Some).map_err(invalid)
        })
    }

    fn on_complete<'a>(&'a self, ctx: &'a CompleteCtx) -> LocalFuture<'a, Result<Option<CompleteDecision>, HookError>> {
        Box::pin(async move {
            let Some(f) = &self.setup.on_complete else { return Ok(None) };
            let o = Object::new();
            set(&o, "primitiveId", &ctx.primitive_id.as_str().into());
            set(&o, "primitiveType", &"agent".into());
            set(&o, "prompt", &ctx.prompt.as_str().into());
            set(&o, "result", &from_json(&ctx.result));
            set(&o, "duration", &ctx.duration_ms.into());
            set(&o, "success", &ctx.success.into());
            if let Some(e) = &ctx.error {
                set(&o, "error", &js_sys::Error::new(e).into());
            }
            set(&o, "iteration", &(ctx.iteration as f64).into());
            set(&o, "runId", &ctx.run_id.as_str().into());
            set(&o, "toolCallId", &ctx.tool_call_id.as_str().into());
            set(&o, "parentAgentId", &ctx.parent_agent_id.as_str().into());
            set(&o, "parentAgentName", &ctx.parent_agent_name.as_str().into());
            set(&o, "messages", &from_json(&ctx.messages));
            let bailed = Rc::new(Cell::new(false));
            let flag = bailed.clone();
            let bail = Closure::<dyn FnMut()>::new(move || flag.set(true)).into_js_value();
            set(&o, "bail", &bail);
            let ret = call_async(f, &JsValue::UNDEFINED, &[&o.into()]).await.map_err(|e| hook_error(&e))?;
            let string = |v: &JsValue| v.as_string();
            let (feedback, result_text) = match ret.is_object() {
                true => (field(&ret, "feedback", string), field(&ret, "resultText", string)),
                false => (None, None),
            };
            Ok(Some(CompleteDecision { feedback, result_text, bail: bailed.get() }))
        })
    }

    fn hook_failed(&self, error: &Value, warn: bool) {
        if warn {
            let hook = error["hook"].as_str().unwrap_or_default();
            let message = error["message"].as_str().unwrap_or_default();
            super::report::warn(&format!("wasm-agent: delegation.{hook} threw ({message}); the delegation went on unchanged"));
        }
        // As the reference: the list in the caller's request context too, when it is a Map.
        if let Some(m) = self.request_context.dyn_ref::<js_sys::Map>() {
            const KEY: &str = "__mastra_delegationHookErrors";
            let list = m.get(&KEY.into());
            let list = list.dyn_into::<Array>().unwrap_or_else(|_| {
                let a = Array::new();
                m.set(&KEY.into(), &a);
                a
            });
            list.push(&from_json(error));
        }
    }
}
