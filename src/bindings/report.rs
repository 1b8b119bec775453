//! What the package tells the console on its own: a user callback that threw or rejected (the
//! run goes on; no rejection is left unhandled), and a panic, just before the instance traps.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// `console.error(...args)` of the global object; nothing where there is no console.
fn console_error(args: &js_sys::Array) {
    console_call("error", args);
}

/// `console[method](...args)`; a console method that throws is ignored.
fn console_call(method: &str, args: &js_sys::Array) {
    let console = Reflect::get(&js_sys::global(), &"console".into()).unwrap_or(JsValue::UNDEFINED);
    if !console.is_object() {
        return;
    }
    if let Ok(f) = Reflect::get(&console, &method.into()).and_then(|f| f.dyn_into::<Function>()) {
        let _ = f.apply(&console, args);
    }
}

/// `console.warn(line)`.
pub fn warn(line: &str) {
    console_call("warn", &js_sys::Array::of1(&line.into()));
}

/// A user callback threw or its promise rejected: said once, with the callback's name and the
/// error as thrown (so the console shows its stack).
pub fn callback_failed(name: &str, error: &JsValue) {
    console_error(&js_sys::Array::of2(&format!("wasm-agent: {name} failed:").into(), error));
}

/// What a callback returned, when its result is not awaited: a promise (or thenable) that
/// rejects is reported instead of going unhandled.
pub fn watch(name: &'static str, returned: &JsValue) {
    let thenable = returned.has_type::<Promise>()
        || (returned.is_object() && Reflect::get(returned, &"then".into()).map(|t| t.is_function()).unwrap_or(false));
    if thenable {
        let report = Closure::once_into_js(move |e: JsValue| callback_failed(name, &e));
        let promise = Promise::resolve(returned);
        if let Ok(catch) = Reflect::get(&promise, &"catch".into()).and_then(|c| c.dyn_into::<Function>()) {
            let _ = catch.call1(&promise, &report);
        }
    }
}

/// Calls an observing callback (its result is not awaited): a throw or a rejection is reported.
pub fn call_observer(name: &'static str, f: &Function, arg: &JsValue) {
    match f.call1(&JsValue::UNDEFINED, arg) {
        Ok(returned) => watch(name, &returned),
        Err(e) => callback_failed(name, &e),
    }
}

/// With `panic = "abort"` a panic traps with a bare `unreachable`: first say what and where.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        console_error(&js_sys::Array::of1(&crate::core::error::panic_report(info).into()));
    }));
}
