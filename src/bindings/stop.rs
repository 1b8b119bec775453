//! `stopWhen`: `stepCountIs(n)` and `hasToolCall(name)` (functions that carry a mark, so the loop
//! checks them natively), and the reading of a `stopWhen` option into the core's conditions
//! and the user's own predicates.

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;

use super::convert::{js_kind, type_error};
use crate::core::run::StopCondition;

/// The marker `stepCountIs` and `hasToolCall` leave on the functions they make, so the loop
/// checks them natively.
const STOP_MARK: &str = "__wasmAgentStop";

/// `stopWhen`: a predicate or an array of them.
pub(crate) fn read_stop_when(v: &JsValue) -> Result<(Vec<StopCondition>, Vec<Function>), JsValue> {
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
