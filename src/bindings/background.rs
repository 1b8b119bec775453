//! Background tasks from JavaScript: the runtime the manager spawns and times tasks with, and
//! the runner that calls a tool's `execute` for a task, outside of the run that started it.

use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::convert::from_json;
use super::tools::{execute, JsTool, ToolEnv};
use crate::core::abort::AbortFlag;
use crate::core::background::{TaskRecord, TaskRunner, TaskRuntime};
use crate::core::chunk::Chunk;
use crate::core::env::{Env, LocalFuture};
use crate::core::step::ToolCall;
use crate::core::tools::ToolCtx;
use crate::platform::JsEnv;

/// Tasks on the JavaScript event loop, timed with gloo.
pub struct JsRuntime;

impl TaskRuntime for JsRuntime {
    fn spawn(&self, fut: LocalFuture<'static, ()>) {
        wasm_bindgen_futures::spawn_local(fut);
    }
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        JsEnv.sleep(ms)
    }
    fn now_ms(&self) -> f64 {
        JsEnv.now_ms()
    }
    fn new_id(&self) -> String {
        JsEnv.new_id()
    }
    #[cfg(feature = "watch")]
    fn claim(&self, task_id: &str) -> LocalFuture<'static, bool> {
        super::tabs::claim(task_id)
    }

    fn hold(&self, task_id: &str) -> Box<dyn FnOnce()> {
        let Some(locks) = web_locks() else { return Box::new(|| {}) };
        let Ok(request) = Reflect::get(&locks, &"request".into()).and_then(|f| f.dyn_into::<Function>()) else { return Box::new(|| {}) };
        // The lock is held while the promise the callback returns is pending; releasing resolves
        // it. The browser drops it by itself when the page goes away.
        let mut resolve_fn = None;
        let held = Promise::new(&mut |resolve, _reject| resolve_fn = Some(resolve));
        let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue { held.into() });
        let name = JsValue::from_str(&format!("{LOCK_PREFIX}{task_id}"));
        if request.call2(&locks, &name, &callback).is_err() {
            return Box::new(|| {});
        }
        Box::new(move || {
            if let Some(r) = resolve_fn {
                let _ = r.call0(&JsValue::UNDEFINED);
            }
        })
    }

    fn alive_elsewhere<'a>(&'a self, task_ids: &'a [String]) -> LocalFuture<'a, Vec<String>> {
        Box::pin(async move {
            let Some(locks) = web_locks() else { return Vec::new() };
            let Ok(query) = Reflect::get(&locks, &"query".into()).and_then(|f| f.dyn_into::<Function>()) else { return Vec::new() };
            let Ok(p) = query.call0(&locks) else { return Vec::new() };
            let Ok(snapshot) = JsFuture::from(Promise::resolve(&p)).await else { return Vec::new() };
            let held = Reflect::get(&snapshot, &"held".into()).unwrap_or(JsValue::UNDEFINED);
            let names: Vec<String> = js_sys::Array::from(&held)
                .iter()
                .filter_map(|l| Reflect::get(&l, &"name".into()).ok().and_then(|n| n.as_string()))
                .collect();
            task_ids.iter().filter(|id| names.iter().any(|n| n.strip_prefix(LOCK_PREFIX) == Some(id.as_str()))).cloned().collect()
        })
    }
}

pub(super) const LOCK_PREFIX: &str = "wasm-agent-task:";

/// `navigator.locks` where the runtime has Web Locks (browsers, workers).
pub(super) fn web_locks() -> Option<JsValue> {
    let nav = Reflect::get(&js_sys::global(), &"navigator".into()).ok().filter(|n| n.is_object())?;
    Reflect::get(&nav, &"locks".into()).ok().filter(|l| l.is_object())
}

/// Runs one tool for background tasks, with the facts of the run that started them.
pub struct JsTaskRunner {
    pub tool: JsTool,
    pub env: ToolEnv,
}

impl TaskRunner for JsTaskRunner {
    fn execute(&self, task: TaskRecord, abort: AbortFlag, emit: Rc<dyn Fn(Value)>) -> LocalFuture<'static, Result<Value, String>> {
        let tool = self.tool.clone();
        let mut env = self.env.clone();
        Box::pin(async move {
            // The task's own signal: aborted on timeout or cancellation, not with the run.
            let controller = web_sys::AbortController::new().map_err(|_| "AbortController is not available".to_string())?;
            env.abort_signal = controller.signal().into();
            abort.on_abort(Box::new(move || controller.abort()));
            let call = ToolCall { tool_call_id: task.tool_call_id.clone(), tool_name: task.tool_name.clone(), args: task.args.clone() };
            let messages = Value::Array(Vec::new());
            let forward = move |c: Chunk| {
                if let Chunk::ToolOutput { output, .. } = c {
                    emit(output);
                }
            };
            let input: JsValue = from_json(&task.args);
            execute(&tool, input, &env, ToolCtx { call: &call, messages: &messages, emit: &forward, resume: None }, None).await
        })
    }
}
