//! Drives one run on the JavaScript event loop: the core loop's chunks become JavaScript
//! objects pushed into the output, the user's callbacks are called at their points, and the
//! caller's `AbortSignal` is wired to the run's abort flag.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::agent::{callback, json_value};
use super::convert::error_to_js;
use super::output::Shared;
use super::host::JsHost;
use crate::core::abort::AbortFlag;
use crate::core::tools::Approvals;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::run::{run, RunConfig, Sink};
use crate::core::step::StepResult;
use crate::platform::JsEnv;

/// The user's callbacks for one run (the call's, else `defaultOptions`').
pub struct Callbacks {
    on_chunk: Option<Function>,
    on_step_finish: Option<Function>,
    on_finish: Option<Function>,
    on_error: Option<Function>,
    on_abort: Option<Function>,
}

impl Callbacks {
    pub fn read(options: &JsValue, defaults: &JsValue) -> Self {
        let get = |name| callback(options, defaults, name);
        Callbacks {
            on_chunk: get("onChunk"),
            on_step_finish: get("onStepFinish"),
            on_finish: get("onFinish"),
            on_error: get("onError"),
            on_abort: get("onAbort"),
        }
    }
}

struct JsSink {
    shared: Rc<Shared>,
    on_chunk: Option<Function>,
    on_step_finish: Option<Function>,
}

impl Sink for JsSink {
    fn emit(&self, chunk: Chunk) {
        let js = self.on_chunk.as_ref().map(|f| {
            let js = self.shared.chunk_js(&chunk);
            // A throwing onChunk must not break the run; its result is not awaited.
            let _ = f.call1(&JsValue::UNDEFINED, &js);
            js
        });
        self.shared.deliver(chunk, js);
    }

    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()> {
        Box::pin(async move {
            if let Some(f) = &self.on_step_finish {
                call_and_wait(f, &json_value(&step.to_json())).await;
            }
        })
    }
}

/// Calls a user callback and waits for it when it returns a promise. Its failure is ignored:
/// a callback cannot fail the run it observes.
async fn call_and_wait(f: &Function, arg: &JsValue) {
    if let Ok(ret) = f.call1(&JsValue::UNDEFINED, arg) {
        if ret.has_type::<Promise>() {
            let _: Result<JsValue, JsValue> = JsFuture::from(Promise::unchecked_from_js(ret)).await;
        }
    }
}

/// Starts the run on the event loop. `done` runs when it ended.
#[allow(clippy::too_many_arguments)]
pub fn spawn_run(
    cfg: RunConfig,
    shared: Rc<Shared>,
    cb: Callbacks,
    abort: AbortFlag,
    signal: JsValue,
    host: JsHost,
    approvals: Rc<Approvals>,
    done: Box<dyn FnOnce()>,
) {
    let run_id = cfg.run_id.clone();
    let listener = listen_abort(&signal, &abort);
    wasm_bindgen_futures::spawn_local(async move {
        let sink = JsSink {
            shared: shared.clone(),
            on_chunk: cb.on_chunk.clone(),
            on_step_finish: cb.on_step_finish.clone(),
        };
        let outcome = run(cfg, &JsEnv, &sink, &host, &approvals, &abort).await;
        done();
        if let Some((signal, f)) = &listener {
            let _ = Reflect::get(signal, &"removeEventListener".into())
                .ok()
                .and_then(|r| r.dyn_into::<Function>().ok())
                .map(|r| r.call2(signal, &"abort".into(), f));
        }
        let full = json_value(&outcome.output_json(&run_id));
        let result = match &outcome.error {
            Some(e) => {
                let err = error_to_js(e);
                if let Some(f) = &cb.on_error {
                    let arg = Object::new();
                    let _ = Reflect::set(&arg, &"error".into(), &err);
                    call_and_wait(f, &arg).await;
                }
                Err(err)
            }
            None => {
                if outcome.aborted.is_some() {
                    if let Some(f) = &cb.on_abort {
                        call_and_wait(f, &full).await;
                    }
                } else if let Some(f) = &cb.on_finish {
                    call_and_wait(f, &full).await;
                }
                Ok(full)
            }
        };
        shared.finish(result);
    });
}

/// Wires `signal`'s abort event to the flag; returns the listener to remove when the run ends.
fn listen_abort(signal: &JsValue, abort: &AbortFlag) -> Option<(JsValue, JsValue)> {
    if !signal.is_object() {
        return None;
    }
    let reason_of = |s: &JsValue| -> Option<String> {
        let r = Reflect::get(s, &"reason".into()).ok()?;
        Reflect::get(&r, &"message".into()).ok().and_then(|m| m.as_string()).or_else(|| r.as_string())
    };
    if Reflect::get(signal, &"aborted".into()).map(|a| a.is_truthy()).unwrap_or(false) {
        abort.abort(reason_of(signal));
        return None;
    }
    let flag = abort.clone();
    let sig = signal.clone();
    let fired = Rc::new(Cell::new(false));
    let f = Closure::<dyn FnMut()>::new(move || {
        if !fired.replace(true) {
            flag.abort(reason_of(&sig));
        }
    })
    .into_js_value();
    let add = Reflect::get(signal, &"addEventListener".into()).ok()?.dyn_into::<Function>().ok()?;
    add.call2(signal, &"abort".into(), &f).ok()?;
    Some((signal.clone(), f))
}
