//! What a `processInputStep` returns that is not plain data (SPEC §13.2): a `model` (anything
//! `new Agent({ model })` takes), a `tools` record and a `structuredOutput` (whose schema may be a
//! Standard Schema). They are made here into the step's typed overrides; the JSON the core and
//! the next processor see names them instead (the model's name, the tools' names, the schema).
//! A value equal to what the processor was given is no change (a processor that spreads its
//! arguments changes nothing by it).

use std::rc::Rc;

use js_sys::{Array, Object, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;

use super::convert::{to_json, type_error};
use super::host::JsHost;
use super::options::JsCallbacks;
use super::tools::{parse_tools, thrown_message, ToolEnv};
use crate::core::hooks::{Shared, StepModel, StepOverrides, StepTools};
use crate::core::model_api::ModelApi;
use crate::core::tools::ToolHost;

/// What a step's own model and tools need of the run.
#[derive(Clone)]
pub(crate) struct StepEnv {
    /// What the step's tools get, as the run's do.
    pub tools: ToolEnv,
    /// The run model's provider (a step's structured output is strict for `openai`).
    pub provider: String,
    pub max_steps: usize,
}

/// Reads `model`, `tools` and `structuredOutput` of `ret` (an object a `processInputStep`
/// returned, given `args`): a copy of `ret` with each one named as plain data, and what they
/// change for the step. The error names the key (`processInputStep.model: …`).
pub(crate) fn read_step_return(ret: &JsValue, args: &Value, env: &StepEnv) -> Result<(JsValue, StepOverrides), String> {
    let copy: JsValue = Object::assign(&Object::new(), ret.unchecked_ref()).into();
    let mut swaps = StepOverrides::default();
    let given = |key: &str| -> Result<Option<JsValue>, String> {
        let v = Reflect::get(ret, &key.into()).map_err(|e| format!("processInputStep.{key} could not be read: {}", thrown_message(&e)))?;
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        // The value it was given (a spread of the arguments) is no change.
        let same = args.get(key).is_some_and(|a| to_json(&v, key).ok().as_ref() == Some(a));
        Ok((!same).then_some(v))
    };
    let failed = |e: JsValue| thrown_message(&e);
    let set = |key: &str, v: &Value| {
        let _ = Reflect::set(&copy, &key.into(), &super::convert::from_json(v));
    };
    if let Some(m) = given("model")? {
        let (api, name, provider) =
            super::agent::any_model(&m, "processInputStep.model", &env.tools.abort_signal).map_err(failed)?;
        set("model", &Value::String(name.clone()));
        swaps.model = Some(StepModel { api: Shared(api as Rc<dyn ModelApi>), name, provider });
    }
    if let Some(t) = given("tools")? {
        let tools = parse_tools(&t, "processInputStep.tools", false).map_err(failed)?;
        let names: Vec<Value> = tools.iter().map(|t| Value::String(t.def.name.clone())).collect();
        set("tools", &Value::Array(names));
        let defs = tools.iter().map(|t| t.def.clone()).collect();
        let host = JsHost::new(tools, env.tools.clone(), &JsCallbacks::default(), env.max_steps, Value::Null);
        swaps.tools = Some(StepTools { defs, host: Shared(Rc::new(host) as Rc<dyn ToolHost>) });
    }
    if let Some(so) = given("structuredOutput")? {
        const FIELD: &str = "processInputStep.structuredOutput";
        if so.is_object() && !Array::is_array(&so) {
            let model = Reflect::get(&so, &"model".into()).unwrap_or(JsValue::UNDEFINED);
            if !(model.is_undefined() || model.is_null()) {
                let message = "is a separate structuring pass of a whole run: a step's structured output is asked of the step's own model";
                return Err(thrown_message(&type_error(&format!("{FIELD}.model"), message)));
            }
        }
        let provider = swaps.model.as_ref().map_or(env.provider.as_str(), |m| m.provider.as_str());
        let built = super::structured::parse_value(&so, FIELD, provider == "openai").map_err(failed)?;
        set("structuredOutput", &json!({ "schema": built.schema }));
        swaps.structured = Some(Shared(Rc::new(built)));
    }
    Ok((copy, swaps))
}
