//! The tool side of suspension (SPEC §19.1): `suspendSchema` / `resumeSchema` on a tool, and
//! `suspend(payload, { resumeSchema? })`, `resumeData`, `suspendPayload` in its execute context.

use std::cell::RefCell;
use std::rc::Rc;
use std::task::Waker;

use js_sys::{Array, Function, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;

use super::convert::{from_json, to_json_strict};
use super::tools::{input_schema, issue_list};
use crate::core::schema;
use crate::core::tools::Suspension;

/// A schema as a tool gives it: the JSON Schema, and the Standard Schema object when it has one.
pub type ToolSchema = (Value, Option<JsValue>);

/// Reads `suspendSchema` or `resumeSchema` (absent: `None`).
pub fn optional_schema(v: &JsValue, path: &str) -> Result<Option<ToolSchema>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    input_schema(v, path, "draft-2020-12").map(Some)
}

/// Problems of `value` against `schema`, as (path, message); none when it matches. A Standard
/// Schema validates itself (a synchronous `validate`; an asynchronous one is not waited for).
pub fn problems(schema: &ToolSchema, value: &Value) -> Vec<(String, String)> {
    if let Some(standard) = &schema.1 {
        let Ok(validate) = Reflect::get(standard, &"validate".into()).and_then(|f| f.dyn_into::<Function>()) else { return Vec::new() };
        let Ok(result) = validate.call1(standard, &from_json(value)) else { return vec![("$".into(), "the schema's validate() threw".into())] };
        let issues = Reflect::get(&result, &"issues".into()).unwrap_or(JsValue::UNDEFINED);
        return match issues.dyn_into::<Array>() {
            Ok(list) => issue_list(&list),
            Err(_) => Vec::new(),
        };
    }
    schema::validate(&schema.0, value).into_iter().map(|e| (e.path, e.message)).collect()
}

/// "path: message; …" for an error message.
pub fn listed(problems: &[(String, String)]) -> String {
    problems.iter().map(|(p, m)| format!("{p}: {m}")).collect::<Vec<_>>().join("; ")
}

/// What one execution's `suspend()` did.
#[derive(Default)]
pub struct SuspendState {
    called: bool,
    /// The accepted suspension, or why the payload was refused.
    pub outcome: Option<Result<Suspension, String>>,
    /// Resolves `suspend()`'s promise once the suspension is stored.
    pub resolve: Option<Function>,
    pub waker: Option<Waker>,
}

pub type SuspendSlot = Rc<RefCell<SuspendState>>;

/// `suspend(payload, { resumeSchema? })` for one execution of a tool.
pub fn suspend_fn(slot: &SuspendSlot, tool_name: &str, suspend_schema: Option<ToolSchema>, resume_schema: Option<ToolSchema>) -> JsValue {
    let (slot, name) = (slot.clone(), tool_name.to_string());
    let f = Closure::<dyn FnMut(JsValue, JsValue) -> Promise>::new(move |payload: JsValue, opts: JsValue| {
        if slot.borrow().called {
            // A second suspend() in the same execution is ignored.
            return Promise::resolve(&JsValue::UNDEFINED);
        }
        let outcome = accept(&name, &payload, &opts, suspend_schema.as_ref(), resume_schema.as_ref());
        let mut resolve_fn = None;
        let promise = Promise::new(&mut |resolve, _reject| resolve_fn = Some(resolve));
        let waker = {
            let mut s = slot.borrow_mut();
            s.called = true;
            let refused = outcome.is_err();
            s.outcome = Some(outcome);
            // A refused payload fails the call; its promise never needs to resolve.
            s.resolve = if refused { None } else { resolve_fn };
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        promise
    });
    f.into_js_value()
}

fn accept(name: &str, payload: &JsValue, opts: &JsValue, suspend_schema: Option<&ToolSchema>, resume_schema: Option<&ToolSchema>) -> Result<Suspension, String> {
    let payload = if payload.is_undefined() { Value::Null } else { to_json_strict(payload, "suspend(payload)").map_err(|e| e.to_string())? };
    if let Some(s) = suspend_schema {
        let p = problems(s, &payload);
        if !p.is_empty() {
            return Err(format!("The suspend payload of tool '{name}' does not match its suspendSchema: {}", listed(&p)));
        }
    }
    let own = if opts.is_object() { Reflect::get(opts, &"resumeSchema".into()).unwrap_or(JsValue::UNDEFINED) } else { JsValue::UNDEFINED };
    let resume = match optional_schema(&own, "suspend(payload, options).resumeSchema") {
        Ok(Some(s)) => Some(s.0),
        Ok(None) => resume_schema.map(|s| s.0.clone()),
        Err(e) => return Err(super::tools::thrown_message(&e)),
    };
    Ok(Suspension { payload, resume_schema: resume })
}

/// Sets `suspend`, `resumeData` and `suspendPayload` on a context object.
pub fn set_on(context: &Object, suspend: &JsValue, resumed: Option<&crate::core::tools::Resumed>) {
    let set = |k: &str, v: &JsValue| {
        let _ = Reflect::set(context, &JsValue::from_str(k), v);
    };
    set("suspend", suspend);
    match resumed {
        Some(r) => {
            set("resumeData", &from_json(&r.resume_data));
            set("suspendPayload", &from_json(&r.suspend_payload));
        }
        None => {
            set("resumeData", &JsValue::UNDEFINED);
            set("suspendPayload", &JsValue::UNDEFINED);
        }
    }
}
