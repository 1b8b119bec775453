//! `new Agent({ agents })` (SPEC §18): the record (or function of `requestContext`) of
//! sub-agents, read into the core's `Delegator`: it resolves the agents at the start of a run
//! and builds each delegated run through the sub-agent's own option parser.

use std::rc::Rc;

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::agent::{lookup_agent, Agent};
use super::convert::{is_array, js_kind, object_keys, read};
use super::tools::{call_async, thrown_message};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::run::delegation::{valid_key, Delegation, Delegator, SubAgent, SubRun, SubRunSpec};

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
    if let Some(f) = v.dyn_ref::<Function>() {
        return Ok(Some(AgentsConfig::Function(f.clone())));
    }
    record(v, path).map(|r| Some(AgentsConfig::Record(r))).map_err(|e| super::convert::error_to_js(&e))
}

/// A record of agents; a bad key or a value that is not an `Agent` names the key.
fn record(v: &JsValue, path: &str) -> Result<Vec<(String, Agent)>, AgentError> {
    if !v.is_object() || is_array(v).unwrap_or(true) {
        return Err(AgentError::invalid(path, format!("expected an object of agents by key (or a function returning one), got {}", js_kind(v))));
    }
    let keys = object_keys(v).map_err(|_| AgentError::invalid(path, "could not be read"))?;
    let mut out = Vec::new();
    for k in keys.iter() {
        let key = k.as_string().unwrap_or_default();
        let field = format!("{path}.{key}");
        if !valid_key(&key) {
            return Err(AgentError::invalid(field, format!("is not a valid agent key: {KEY_RULE}")));
        }
        let value = read(v, &key, path).map_err(|e| AgentError::invalid(&field, thrown_message(&e)))?;
        let agent = lookup_agent(&value).ok_or_else(|| AgentError::invalid(&field, format!("expected an Agent (new Agent({{ … }})), got {}", js_kind(&value))))?;
        out.push((key, agent));
    }
    Ok(out)
}

/// A copy of the caller's `requestContext` for a delegated run: a `Map` (or `RequestContext`)
/// copied as a `Map`, a plain object's own properties copied, nothing: an empty `Map`.
fn copy_request_context(v: &JsValue) -> JsValue {
    let global = js_sys::global();
    let map_ctor = Reflect::get(&global, &"Map".into()).ok().and_then(|m| m.dyn_into::<Function>().ok());
    let Some(map_ctor) = map_ctor else { return v.clone() };
    let is_map = v.is_object() && v.dyn_ref::<js_sys::Map>().is_some();
    let args = js_sys::Array::new();
    if is_map {
        args.push(v);
    } else if v.is_object() {
        args.push(&Object::entries(v.unchecked_ref()));
    }
    Reflect::construct(&map_ctor, &args).unwrap_or_else(|_| v.clone())
}

/// The delegation side of one run of a supervisor.
pub(crate) struct JsDelegator {
    config: AgentsConfig,
    request_context: JsValue,
    resolved: std::cell::RefCell<Vec<(String, Agent)>>,
}

impl JsDelegator {
    /// The run's delegation, when the agent has `agents`.
    pub(crate) fn delegation(config: Option<&AgentsConfig>, request_context: &JsValue) -> Option<Delegation> {
        let config = config?.clone();
        let host = JsDelegator { config, request_context: request_context.clone(), resolved: Default::default() };
        Some(Delegation::new(Rc::new(host)))
    }
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
            let agents = list.iter().map(|(key, a)| SubAgent { key: key.clone(), id: a.id(), description: a.description() }).collect();
            *self.resolved.borrow_mut() = list;
            Ok(agents)
        })
    }

    fn sub_run(&self, spec: &SubRunSpec) -> Result<SubRun, String> {
        let agent = self.resolved.borrow().iter().find(|(k, _)| *k == spec.key).map(|(_, a)| a.clone());
        let agent = agent.ok_or_else(|| format!("no agent '{}'", spec.key))?;
        let context = copy_request_context(&self.request_context);
        agent.sub_run(spec, context).map_err(|e| thrown_message(&e))
    }
}
