//! The methods of a step's `ctx` (`writer.write`, `writer.custom`, `setState`, `suspend`, `bail`,
//! `getStepResult`, `getInitData`): one `StepControls` object per call, which api.js's `ctx`
//! maker wraps; a tool step's `context` gets its methods bound to it here. Either costs nothing
//! at the boundary, where a `Closure` per method is a wasm allocation and a finalizer each (most
//! of a trivial step's engine time).

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Function, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, from_json, to_json, to_json_strict};
use crate::core::workflow::host::StepCtx;

/// One step call's controls; JavaScript sees only its bound methods. It holds the call weakly:
/// JavaScript frees it only when a finalizer runs, and a strong hold kept each finished run's
/// whole scope (every step's output) alive until then, so the heap grew with every run.
#[wasm_bindgen(js_name = __StepControls, skip_typescript)]
pub struct StepControls {
    ctx: Weak<StepCtx>,
}

impl StepControls {
    fn ctx(&self) -> Result<Rc<StepCtx>, JsValue> {
        self.ctx.upgrade().ok_or_else(|| js_sys::Error::new("this step has ended: its ctx methods work only while its execute runs").into())
    }
}

fn resolved() -> JsValue {
    Promise::resolve(&JsValue::UNDEFINED).into()
}

#[wasm_bindgen(js_class = __StepControls)]
impl StepControls {
    /// `writer.write(output)`: a `workflow-step-output` event.
    pub fn write(&self, v: JsValue) -> Result<JsValue, JsValue> {
        let v = to_json(&v, "writer.write(output)").map_err(|e| error_to_js(&e))?;
        self.ctx()?.write(v);
        Ok(resolved())
    }

    /// `writer.custom({ type: 'data-…' })`.
    pub fn custom(&self, v: JsValue) -> Result<JsValue, JsValue> {
        let v = to_json_strict(&v, "writer.custom(chunk)").map_err(|e| error_to_js(&e))?;
        self.ctx()?.custom(v).map_err(|e| error_to_js(&e))?;
        Ok(resolved())
    }

    #[wasm_bindgen(js_name = setState)]
    pub fn set_state(&self, v: JsValue) -> Result<JsValue, JsValue> {
        let v = to_json(&v, "setState(state)").map_err(|e| error_to_js(&e))?;
        self.ctx()?.set_state(v).map_err(|e| error_to_js(&e))?;
        Ok(resolved())
    }

    pub fn suspend(&self, v: JsValue) -> Result<JsValue, JsValue> {
        let v = if v.is_undefined() {
            Value::Object(Default::default())
        } else {
            to_json(&v, "suspend(payload)").map_err(|e| error_to_js(&e))?
        };
        self.ctx()?.suspend(v);
        Ok(resolved())
    }

    pub fn bail(&self, v: JsValue) -> Result<JsValue, JsValue> {
        let v = to_json(&v, "bail(result)").map_err(|e| error_to_js(&e))?;
        self.ctx()?.bail(v);
        Ok(resolved())
    }

    /// `getStepResult(step | id)`: its output, `null` when it has none.
    #[wasm_bindgen(js_name = getStepResult)]
    pub fn step_result(&self, s: JsValue) -> Result<JsValue, JsValue> {
        let id = s
            .as_string()
            .or_else(|| Reflect::get(&s, &JsValue::from_str("id")).ok().and_then(|v| v.as_string()))
            .unwrap_or_default();
        Ok(self.ctx()?.step_result(&id).map(|v| from_json(&v)).unwrap_or(JsValue::NULL))
    }

    #[wasm_bindgen(js_name = getInitData)]
    pub fn init_data(&self) -> Result<JsValue, JsValue> {
        Ok(from_json(&self.ctx()?.init_data()))
    }
}

/// The methods a tool step's `context` gets bound (api.js wraps all of them for a step's `ctx`).
const NAMES: [&str; 5] = ["write", "custom", "setState", "suspend", "bail"];

thread_local! {
    /// The prototype's methods in `NAMES` order, read once.
    static METHODS: RefCell<Vec<Function>> = const { RefCell::new(Vec::new()) };
}

/// One call's controls as JavaScript holds them (api.js's `ctx` maker wraps their methods).
pub fn controls(ctx: &Rc<StepCtx>) -> JsValue {
    JsValue::from(StepControls { ctx: Rc::downgrade(ctx) })
}

/// The methods of one call's controls, bound, in `NAMES` order.
pub struct Bound(Vec<Function>);

impl Bound {
    pub fn new(ctx: &Rc<StepCtx>) -> Bound {
        let this = JsValue::from(StepControls { ctx: Rc::downgrade(ctx) });
        let methods = METHODS.with(|m| m.borrow().clone());
        let methods = if methods.is_empty() {
            let found: Vec<Function> = NAMES
                .iter()
                .map(|n| Reflect::get(&this, &JsValue::from_str(n)).unwrap_or(JsValue::UNDEFINED).unchecked_into())
                .collect();
            METHODS.with(|m| *m.borrow_mut() = found.clone());
            found
        } else {
            methods
        };
        Bound(methods.iter().map(|f| f.bind0(&this)).collect())
    }

    fn get(&self, name: &str) -> &JsValue {
        &self.0[NAMES.iter().position(|n| *n == name).unwrap_or(0)]
    }

    /// `writer`: `write` and `custom`.
    pub fn writer(&self) -> Object {
        let w = Object::new();
        set(&w, "write", self.get("write"));
        set(&w, "custom", self.get("custom"));
        w
    }

    /// `setState`, `suspend`, `bail` on `o` (a step's ctx, or a tool context's `workflow`).
    pub fn controls(&self, o: &Object) {
        for n in ["setState", "suspend", "bail"] {
            set(o, n, self.get(n));
        }
    }

}

fn set(o: &Object, k: &'static str, v: &JsValue) {
    let _ = Reflect::set(o, &super::convert::key(k), v);
}
