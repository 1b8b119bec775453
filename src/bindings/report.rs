//! What the package tells the console on its own: a panic, just before the instance traps.

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// `console.error(...args)` of the global object; nothing where there is no console.
fn console_error(args: &js_sys::Array) {
    let console = Reflect::get(&js_sys::global(), &"console".into()).unwrap_or(JsValue::UNDEFINED);
    if !console.is_object() {
        return;
    }
    if let Ok(error) = Reflect::get(&console, &"error".into()).and_then(|f| f.dyn_into::<Function>()) {
        let _ = error.apply(&console, args);
    }
}

/// With `panic = "abort"` a panic traps with a bare `unreachable`: first say what and where.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        console_error(&js_sys::Array::of1(&crate::core::error::panic_report(info).into()));
    }));
}
