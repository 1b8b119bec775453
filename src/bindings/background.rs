//! Background tasks from JavaScript: the runtime the manager spawns and times tasks with, and
//! the runner that calls a tool's `execute` for a task, outside of the run that started it.

use std::rc::Rc;

use serde_json::Value;
use wasm_bindgen::JsValue;

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
            execute(&tool, input, &env, ToolCtx { call: &call, messages: &messages, emit: &forward }).await
        })
    }
}
