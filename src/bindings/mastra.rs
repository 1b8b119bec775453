//! `new Mastra({ agents, backgroundTasks })`: the optional container of the reference, whose
//! agents share one background task manager (and so its global concurrency limit).

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;

use super::background::JsRuntime;
use super::convert::{error_to_js, js_kind, object_keys, read, type_error, Data};
use crate::core::background::{parse_background_config, Manager};

thread_local! {
    static MANAGERS: RefCell<Vec<(u32, Weak<Manager>)>> = const { RefCell::new(Vec::new()) };
    static NEXT: Cell<u32> = const { Cell::new(1) };
}

pub fn lookup_manager(id: u32) -> Option<Rc<Manager>> {
    MANAGERS.with(|m| m.borrow().iter().find(|(i, _)| *i == id).and_then(|(_, w)| w.upgrade()))
}

/// A container of agents that share one background task manager.
#[wasm_bindgen]
pub struct Mastra {
    agents: Vec<(String, JsValue)>,
    /// `scorers` as given (checked), or undefined.
    scorers: JsValue,
    /// `workflows` by key (SPEC §20.5).
    workflows: Vec<(String, JsValue)>,
    _manager: Option<Rc<Manager>>,
}

#[wasm_bindgen]
impl Mastra {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_optional_param_type = "MastraConfig")] config: Option<JsValue>) -> Result<Mastra, JsValue> {
        let config = config.unwrap_or(JsValue::UNDEFINED);
        if !(config.is_undefined() || config.is_null() || config.is_object()) {
            return Err(type_error("new Mastra(config)", "expected an object like { agents, backgroundTasks }"));
        }
        const F: &str = "new Mastra(config)";
        let get = |k: &str| read(&config, k, F);
        const BG: &str = "new Mastra(config).backgroundTasks";
        let bg = Data::of(&get("backgroundTasks")?, BG)
            .and_then(|d| d.parse(|t| parse_background_config(t, BG)))
            .map_err(|e| error_to_js(&e))?;
        let manager = bg.enabled.then(|| Manager::new(bg, Rc::new(JsRuntime)));
        let id = NEXT.with(|n| {
            let id = n.get();
            n.set(id + 1);
            id
        });
        if let Some(m) = &manager {
            MANAGERS.with(|r| {
                let mut r = r.borrow_mut();
                r.retain(|(_, w)| w.strong_count() > 0);
                r.push((id, Rc::downgrade(m)));
            });
        }
        let scorers = super::scorers::check_registered(&get("scorers")?, "new Mastra(config).scorers")?;
        let storage = get("storage")?;
        let observability = get("observability")?;
        let agents_js = get("agents")?;
        let mut agents = Vec::new();
        if !(agents_js.is_undefined() || agents_js.is_null()) {
            let keys = object_keys(&agents_js).map_err(|_| type_error("new Mastra(config).agents", "expected an object of agents by name"))?;
            for k in keys.iter() {
                let name = k.as_string().unwrap_or_default();
                let agent = read(&agents_js, &name, "new Mastra(config).agents")?;
                let join = match agent.is_object() {
                    true => Reflect::get(&agent, &"__joinManager".into()).ok(),
                    false => None,
                };
                let join = join.and_then(|f| f.dyn_into::<Function>().ok());
                let Some(join) = join else {
                    return Err(type_error(&format!("new Mastra(config).agents.{name}"), &format!("expected an Agent, got {}", js_kind(&agent))));
                };
                if manager.is_some() {
                    join.call1(&agent, &JsValue::from(id))?;
                }
                if !(scorers.is_undefined() && storage.is_undefined()) {
                    let join_mastra = Reflect::get(&agent, &"__joinMastra".into()).ok().and_then(|f| f.dyn_into::<Function>().ok());
                    if let Some(f) = join_mastra {
                        f.call2(&agent, &scorers, &storage)?;
                    }
                }
                if !(observability.is_undefined() || observability.is_null()) {
                    let join_obs = Reflect::get(&agent, &"__joinObservability".into()).ok().and_then(|f| f.dyn_into::<Function>().ok());
                    if let Some(f) = join_obs {
                        f.call1(&agent, &observability)?;
                    }
                }
                agents.push((name, agent));
            }
        }
        let workflows = read_workflows(&get("workflows")?)?;
        #[cfg(feature = "workflows")]
        if !(storage.is_undefined() || storage.is_null()) {
            // Its workflows keep their runs in `storage` (SPEC §20.5). A storage object for
            // other things only (scores, run records), with neither the memory nor the workflow
            // methods, leaves them in the package's store.
            let store = match super::memory::store_from(&storage, "new Mastra(config).storage") {
                Ok(store) => Some(store),
                Err(e) if has_workflow_methods(&storage) => return Err(e),
                Err(_) => None,
            };
            for (_, wf) in &workflows {
                if let (Some(inner), Some(store)) = (super::workflow::lookup_workflow(wf), &store) {
                    *inner.storage.borrow_mut() = Some(store.clone());
                }
            }
        }
        Ok(Mastra { agents, scorers, workflows, _manager: manager })
    }

    /// The scorer registered under `key` in `scorers`, or the one whose id is `key`.
    #[wasm_bindgen(js_name = getScorer, unchecked_return_type = "ScorerLike")]
    pub fn get_scorer(&self, #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue) -> Result<JsValue, JsValue> {
        let Some(key) = key.as_string() else {
            let got = js_kind(&key);
            return Err(type_error("mastra.getScorer(key)", &format!("expected a scorer key or id string, got {got}")));
        };
        let mut names = Vec::new();
        if self.scorers.is_object() {
            for k in object_keys(&self.scorers).map_err(|_| type_error("mastra.getScorer(key)", "the scorers could not be read"))?.iter() {
                let name = k.as_string().unwrap_or_default();
                let s = Reflect::get(&self.scorers, &name.as_str().into()).unwrap_or(JsValue::UNDEFINED);
                let id = Reflect::get(&s, &"id".into()).ok().and_then(|v| v.as_string());
                if name == key || id.as_deref() == Some(key.as_str()) {
                    return Ok(s);
                }
                names.push(name);
            }
        }
        Err(type_error("mastra.getScorer(key)", &format!("no scorer '{key}'; registered scorers: {}", names.join(", "))))
    }

    /// The workflow registered under `key` in `workflows`.
    #[wasm_bindgen(js_name = getWorkflow, unchecked_return_type = "Workflow")]
    pub fn get_workflow(&self, #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue) -> Result<JsValue, JsValue> {
        self.find_workflow(&key, "mastra.getWorkflow(key)", |name, _| name)
    }

    /// The registered workflow whose id is `id`.
    #[wasm_bindgen(js_name = getWorkflowById, unchecked_return_type = "Workflow")]
    pub fn get_workflow_by_id(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> Result<JsValue, JsValue> {
        self.find_workflow(&id, "mastra.getWorkflowById(id)", |_, id| id)
    }

    /// The agent registered under `id` (its key in `agents`, or its own id).
    #[wasm_bindgen(js_name = getAgent, unchecked_return_type = "Agent")]
    pub fn get_agent(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> Result<JsValue, JsValue> {
        let Some(id) = id.as_string() else {
            let got = js_kind(&id);
            return Err(type_error("mastra.getAgent(id)", &format!("expected an agent id string, got {got}")));
        };
        let id = id.as_str();
        let found = self.agents.iter().find(|(name, agent)| {
            name == id || Reflect::get(agent, &"id".into()).ok().and_then(|v| v.as_string()).as_deref() == Some(id)
        });
        match found {
            Some((_, a)) => Ok(a.clone()),
            None => {
                let known: Vec<&str> = self.agents.iter().map(|(n, _)| n.as_str()).collect();
                Err(type_error("mastra.getAgent(id)", &format!("no agent '{id}'; known agents: {}", known.join(", "))))
            }
        }
    }
}

impl Mastra {
    /// The workflow whose key (or id) `pick` gives equal to `want`; a `TypeError` naming `field` else.
    fn find_workflow(&self, want: &JsValue, field: &str, pick: impl Fn(String, String) -> String) -> Result<JsValue, JsValue> {
        let Some(want) = want.as_string() else {
            return Err(type_error(field, &format!("expected a string, got {}", js_kind(want))));
        };
        for (name, wf) in &self.workflows {
            let id = Reflect::get(wf, &"id".into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
            if pick(name.clone(), id) == want {
                return Ok(wf.clone());
            }
        }
        let known: Vec<&str> = self.workflows.iter().map(|(n, _)| n.as_str()).collect();
        Err(type_error(field, &format!("no workflow '{want}'; registered workflows: {}", known.join(", "))))
    }
}

/// `workflows`: an object of workflows made by `createWorkflow` (a build without workflows
/// refuses the field).
fn read_workflows(v: &JsValue) -> Result<Vec<(String, JsValue)>, JsValue> {
    const F: &str = "new Mastra(config).workflows";
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    #[cfg(not(feature = "workflows"))]
    return Err(error_to_js(&crate::core::features::not_built(F, "workflows", "workflows")));
    #[cfg(feature = "workflows")]
    {
        let keys = object_keys(v).map_err(|_| type_error(F, "expected an object of workflows by name"))?;
        let mut out = Vec::new();
        for k in keys.iter() {
            let name = k.as_string().unwrap_or_default();
            let wf = read(v, &name, F)?;
            if super::workflow::lookup_workflow(&wf).is_none() {
                return Err(type_error(&format!("{F}.{name}"), &format!("expected a workflow made by createWorkflow(…), got {}", js_kind(&wf))));
            }
            out.push((name, wf));
        }
        Ok(out)
    }
}

/// Whether `storage` has any of the workflow snapshot methods (SPEC §20.5).
#[cfg(feature = "workflows")]
fn has_workflow_methods(storage: &JsValue) -> bool {
    ["persistWorkflowSnapshot", "loadWorkflowSnapshot", "updateWorkflowState"]
        .iter()
        .any(|m| js_sys::Reflect::get(storage, &(*m).into()).map(|f| f.is_function()).unwrap_or(false))
}
