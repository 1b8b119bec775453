//! The loop's host for one run: the tools' JavaScript functions and the loop callbacks
//! (`prepareStep`, `stopWhen`, `onIterationComplete`, `hooks`).

use std::cell::RefCell;

use js_sys::{Array, Function, Object, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::options::JsCallbacks;
use super::convert::{from_json, to_json, to_json_strict, Data};
use super::report::callback_failed;
use super::tools::{call_async, execute, needs_approval, standard_validate, thrown_message, JsTool, ToolEnv};
use crate::core::env::LocalFuture;
use crate::core::model::{ModelEvent, ModelRequest};
use crate::core::model_api::{Call, CallCx, EventSource, ModelApi};
use crate::core::error::AgentError;
use crate::core::input::{parse_instructions, parse_model_settings, parse_tool_choice};
use crate::core::options::merge_options;
use crate::core::run::{Hooks, IterationDecision, StepOverrides, Stop};
use crate::core::step::{StepResult, ToolCall};
use crate::core::tools::{Outcome, ToolCtx, ToolHost, ToolResult};

pub struct JsHost {
    pub tools: Vec<JsTool>,
    pub env: ToolEnv,
    pub before_tool_call: Option<Function>,
    pub after_tool_call: Option<Function>,
    pub prepare_step: Option<Function>,
    /// The custom predicates of `stopWhen`, by index.
    pub stop_fns: Vec<Function>,
    pub on_iteration_complete: Option<Function>,
    pub max_steps: usize,
    /// The call's `modelSettings` (JSON), under which `prepareStep` settings merge.
    pub base_settings: Value,
    /// `memory.onTitleGenerated`.
    pub on_title_generated: Option<Function>,
    /// Arguments as a Standard Schema parsed them (transforms applied), by tool call id.
    parsed: RefCell<Vec<(String, JsValue)>>,
    /// Each running call's `suspend()` state, by tool call id.
    suspends: RefCell<Vec<(String, super::suspend::SuspendSlot)>>,
    /// `suspend()` promises that resolve once their suspension is stored.
    stored: RefCell<Vec<(String, Function)>>,
}

impl JsHost {
    /// The host of one turn: its tools, the call's callbacks, and the settings `prepareStep`
    /// merges under.
    pub(crate) fn new(tools: Vec<JsTool>, env: ToolEnv, js: &JsCallbacks, max_steps: usize, base_settings: Value) -> Self {
        JsHost {
            tools,
            env,
            before_tool_call: js.before_tool_call.clone(),
            after_tool_call: js.after_tool_call.clone(),
            prepare_step: js.prepare_step.clone(),
            stop_fns: js.stop_fns.clone(),
            on_iteration_complete: js.on_iteration_complete.clone(),
            max_steps,
            base_settings,
            on_title_generated: js.on_title_generated.clone(),
            parsed: RefCell::new(Vec::new()),
            suspends: RefCell::new(Vec::new()),
            stored: RefCell::new(Vec::new()),
        }
    }

    fn tool(&self, name: &str) -> Option<&JsTool> {
        self.tools.iter().rev().find(|t| t.def.name == name)
    }
}

fn obj(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o.into()
}

fn steps_js(steps: &[StepResult]) -> JsValue {
    let arr = Array::new();
    for s in steps {
        arr.push(&from_json(&s.to_json()));
    }
    arr.into()
}

fn call_js(call: &ToolCall) -> [(&'static str, JsValue); 4] {
    let args = from_json(&call.args);
    [
        ("toolCallId", JsValue::from_str(&call.tool_call_id)),
        ("toolName", JsValue::from_str(&call.tool_name)),
        ("args", args.clone()),
        ("input", args),
    ]
}

impl ToolHost for JsHost {
    fn execute<'a>(&'a self, ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let Some(tool) = self.tool(&ctx.call.tool_name) else { return Err(format!("Tool '{}' is not available", ctx.call.tool_name)) };
            let parsed = {
                let mut p = self.parsed.borrow_mut();
                p.iter().position(|(id, _)| *id == ctx.call.tool_call_id).map(|i| p.remove(i).1)
            };
            let input = parsed.unwrap_or_else(|| from_json(&ctx.call.args));
            let slot = super::suspend::SuspendSlot::default();
            self.suspends.borrow_mut().push((ctx.call.tool_call_id.clone(), slot.clone()));
            execute(tool, input, &self.env, ctx, Some(&slot)).await
        })
    }

    fn take_suspension(&self, tool_call_id: &str) -> Option<crate::core::tools::Suspension> {
        let slot = {
            let mut s = self.suspends.borrow_mut();
            let at = s.iter().position(|(id, _)| id == tool_call_id)?;
            s.remove(at).1
        };
        let mut st = slot.borrow_mut();
        match st.outcome.take() {
            Some(Ok(suspension)) => {
                if let Some(resolve) = st.resolve.take() {
                    self.stored.borrow_mut().push((tool_call_id.to_string(), resolve));
                }
                Some(suspension)
            }
            _ => None,
        }
    }

    fn suspension_stored(&self, tool_call_id: &str) {
        let resolve = {
            let mut s = self.stored.borrow_mut();
            s.iter().position(|(id, _)| id == tool_call_id).map(|at| s.remove(at).1)
        };
        if let Some(f) = resolve {
            let _ = f.call0(&JsValue::UNDEFINED);
        }
    }

    fn validate<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let Some(tool) = self.tool(&call.tool_name) else { return Err(format!("Tool '{}' is not available", call.tool_name)) };
            let parsed = standard_validate(tool, &call.args).await?;
            // The arguments the stream reports stay JSON; `execute` gets the parsed value.
            let as_json = to_json(&parsed, "input").unwrap_or_else(|_| call.args.clone());
            self.parsed.borrow_mut().push((call.tool_call_id.clone(), parsed));
            Ok(as_json)
        })
    }

    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, bool> {
        Box::pin(async move {
            match self.tool(&call.tool_name) {
                Some(tool) => needs_approval(tool, &call.args).await,
                None => false,
            }
        })
    }

    fn before_tool_call<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Option<Value>, String>> {
        Box::pin(async move {
            let Some(f) = self.before_tool_call.as_ref() else { return Ok(None) };
            let ret = call_async(f, &JsValue::UNDEFINED, &[&obj(&call_js(call))]).await.map_err(|e| thrown_message(&e))?;
            if !ret.is_object() {
                return Ok(None);
            }
            let proceed = Reflect::get(&ret, &"proceed".into()).unwrap_or(JsValue::UNDEFINED);
            if proceed.as_bool() == Some(false) {
                let output = Reflect::get(&ret, &"output".into()).unwrap_or(JsValue::UNDEFINED);
                return to_json_strict(&output, "beforeToolCall(…).output").map(Some).map_err(|e| e.to_string());
            }
            Ok(None)
        })
    }

    fn task_runner(&self, tool: &str) -> Option<std::rc::Rc<dyn crate::core::background::TaskRunner>> {
        let tool = self.tool(tool)?.clone();
        Some(std::rc::Rc::new(super::background::JsTaskRunner { tool, env: self.env.clone() }))
    }

    fn after_tool_call<'a>(&'a self, result: &'a ToolResult) -> LocalFuture<'a, ()> {
        Box::pin(async move {
            let Some(f) = &self.after_tool_call else { return };
            let [a, b, c, d] = call_js(&result.call);
            let (res, err) = match &result.outcome {
                Outcome::Result { result, .. } => (from_json(result), JsValue::UNDEFINED),
                Outcome::Error(m) => (JsValue::UNDEFINED, js_sys::Error::new(m).into()),
                Outcome::Denied { .. } | Outcome::Client => (JsValue::UNDEFINED, JsValue::UNDEFINED),
            };
            let arg = obj(&[a, b, c, d, ("result", res), ("error", err)]);
            if let Err(e) = call_async(f, &JsValue::UNDEFINED, &[&arg]).await {
                callback_failed("hooks.afterToolCall", &e);
            }
        })
    }
}

/// An AI SDK model object given as `model` (`LanguageModelV2`): the run's calls go through its
/// `doStream`, with the run's abort signal.
pub(crate) struct JsModel {
    pub object: JsValue,
    pub abort_signal: JsValue,
}

/// A build without AI SDK model objects: `new Agent` refuses them, so no run gets here.
#[cfg(not(feature = "ai-sdk-model"))]
impl ModelApi for JsModel {
    fn prepare(&self, _req: &ModelRequest) -> Result<Call, AgentError> {
        Err(crate::core::features::not_built("config.model", "an AI SDK model object", "ai-sdk-model"))
    }

    fn open<'a>(&'a self, _call: &'a Call, _cx: &'a CallCx<'a>) -> LocalFuture<'a, Result<Box<dyn EventSource + 'a>, Stop>> {
        Box::pin(async move { Err(Stop::Failed(crate::core::features::not_built("config.model", "an AI SDK model object", "ai-sdk-model"))) })
    }
}

#[cfg(feature = "ai-sdk-model")]
impl ModelApi for JsModel {
    fn prepare(&self, req: &ModelRequest) -> Result<Call, AgentError> {
        Ok(Call::new(crate::providers::ai_sdk_model::call_options(req).to_string(), Vec::new()))
    }

    fn open<'a>(&'a self, call: &'a Call, _cx: &'a CallCx<'a>) -> LocalFuture<'a, Result<Box<dyn EventSource + 'a>, Stop>> {
        Box::pin(async move {
            let failed = |m: String| Stop::Failed(AgentError::api(m, false));
            let options = js_sys::JSON::parse(&call.body).map_err(|_| failed("could not build the model's call options".into()))?;
            let _ = Reflect::set(&options, &"abortSignal".into(), &self.abort_signal);
            let do_stream: Function = Reflect::get(&self.object, &"doStream".into())
                .ok()
                .and_then(|f| f.dyn_into().ok())
                .ok_or_else(|| failed("the model object has no doStream()".into()))?;
            let result = call_async(&do_stream, &self.object, &[&options])
                .await
                .map_err(|e| failed(format!("The model's doStream() failed: {}", thrown_message(&e))))?;
            let stream = Reflect::get(&result, &"stream".into()).unwrap_or(JsValue::UNDEFINED);
            let get_reader = Reflect::get(&stream, &"getReader".into()).ok().and_then(|f| f.dyn_into::<Function>().ok());
            let Some(get_reader) = get_reader else { return Err(failed("doStream() did not return { stream: ReadableStream }".into())) };
            let reader = get_reader.call0(&stream).map_err(|e| failed(thrown_message(&e)))?.unchecked_into::<web_sys::ReadableStreamDefaultReader>();
            Ok(Box::new(ModelParts { reader, decoder: Default::default(), finished: false }) as Box<dyn EventSource + 'a>)
        })
    }
}

/// The parts of a model object's `doStream` stream, read as events.
#[cfg(feature = "ai-sdk-model")]
struct ModelParts {
    reader: web_sys::ReadableStreamDefaultReader,
    decoder: crate::providers::ai_sdk_model::PartDecoder,
    /// A `finish` part came: the stream may end.
    finished: bool,
}

#[cfg(feature = "ai-sdk-model")]
impl EventSource for ModelParts {
    fn next<'a>(&'a mut self, out: &'a mut Vec<ModelEvent>) -> LocalFuture<'a, Result<bool, AgentError>> {
        Box::pin(async move {
            let step = wasm_bindgen_futures::JsFuture::from(self.reader.read())
                .await
                .map_err(|e| AgentError::api(format!("The model's stream failed: {}", thrown_message(&e)), false))?;
            if Reflect::get(&step, &"done".into()).map(|d| d.is_truthy()).unwrap_or(true) {
                if !self.finished {
                    return Err(AgentError::api("The model's stream ended without a finish part", false));
                }
                return Ok(false);
            }
            let part = Reflect::get(&step, &"value".into()).unwrap_or(JsValue::UNDEFINED);
            let part = to_json(&part, "model stream part").map_err(|e| AgentError::api(e.to_string(), false))?;
            let from = out.len();
            self.decoder.part(&part, true, out)?;
            self.finished |= out[from..].iter().any(|e| matches!(e, ModelEvent::Finish { .. }));
            Ok(true)
        })
    }
}

impl Hooks for JsHost {
    fn prepare_step<'a>(&'a self, step: usize, steps: &'a [StepResult]) -> LocalFuture<'a, Result<Option<StepOverrides>, AgentError>> {
        Box::pin(async move {
            let Some(f) = &self.prepare_step else { return Ok(None) };
            let arg = obj(&[("stepNumber", JsValue::from(step as u32)), ("steps", steps_js(steps)), ("runId", JsValue::from_str(&self.env.run_id))]);
            let ret = call_async(f, &JsValue::UNDEFINED, &[&arg])
                .await
                .map_err(|e| AgentError::Validation { message: format!("prepareStep threw: {}", thrown_message(&e)) })?;
            if ret.is_undefined() || ret.is_null() {
                return Ok(None);
            }
            // A bad return value fails the run, inside the stream: a runtime error (SPEC §11)
            // whose message still names the field.
            step_overrides(&ret, &self.base_settings)
                .map(Some)
                .map_err(|e| AgentError::Validation { message: format!("prepareStep returned an invalid value: {e}") })
        })
    }

    fn title_generated<'a>(&'a self, thread_id: &'a str, title: &'a str) -> LocalFuture<'a, ()> {
        Box::pin(async move {
            if let Some(f) = &self.on_title_generated {
                let arg = obj(&[("threadId", JsValue::from_str(thread_id)), ("title", JsValue::from_str(title))]);
                if let Err(e) = call_async(f, &JsValue::UNDEFINED, &[&arg]).await {
                    callback_failed("memory.onTitleGenerated", &e);
                }
            }
        })
    }

    fn stop_when<'a>(&'a self, n: usize, steps: &'a [StepResult]) -> LocalFuture<'a, bool> {
        Box::pin(async move {
            let Some(f) = self.stop_fns.get(n) else { return false };
            // A throwing predicate stops the loop rather than letting it run on unchecked.
            let arg = obj(&[("steps", steps_js(steps))]);
            call_async(f, &JsValue::UNDEFINED, &[&arg]).await.map(|v| v.is_truthy()).unwrap_or_else(|e| {
                callback_failed("stopWhen", &e);
                true
            })
        })
    }

    fn iteration_complete<'a>(&'a self, steps: &'a [StepResult], is_final: bool) -> LocalFuture<'a, IterationDecision> {
        Box::pin(async move {
            let Some(f) = &self.on_iteration_complete else { return IterationDecision::default() };
            let Some(last) = steps.last() else { return IterationDecision::default() };
            let j = last.to_json();
            let arg = obj(&[
                ("iteration", JsValue::from(steps.len() as u32)),
                ("maxIterations", JsValue::from(self.max_steps as u32)),
                ("text", JsValue::from_str(&last.text)),
                ("toolCalls", from_json(&j["toolCalls"])),
                ("toolResults", from_json(&j["toolResults"])),
                ("finishReason", JsValue::from_str(last.finish_reason.as_str())),
                ("isFinal", JsValue::from_bool(is_final)),
                ("runId", JsValue::from_str(&self.env.run_id)),
                ("agentId", JsValue::from_str(&self.env.agent_id)),
            ]);
            let ret = match call_async(f, &JsValue::UNDEFINED, &[&arg]).await {
                Ok(ret) => ret,
                Err(e) => {
                    // Like a callback that returned nothing: the loop goes on as it would have.
                    callback_failed("onIterationComplete", &e);
                    return IterationDecision::default();
                }
            };
            if !ret.is_object() {
                return IterationDecision::default();
            }
            let cont = Reflect::get(&ret, &"continue".into()).unwrap_or(JsValue::UNDEFINED);
            let feedback = Reflect::get(&ret, &"feedback".into()).ok().and_then(|f| f.as_string()).filter(|f| !f.is_empty());
            IterationDecision { stop: cont.as_bool() == Some(false), feedback }
        })
    }
}

/// What a `prepareStep` return value asks of the next step.
fn step_overrides(ret: &JsValue, base: &Value) -> Result<StepOverrides, AgentError> {
    const F: &str = "prepareStep()";
    let v = Data::of(ret, F)?;
    let mut o = StepOverrides::default();
    v.parse(|v| {
        let got = crate::core::input::kind(v);
        if got != "an object" {
            let expected = "expected { toolChoice?, activeTools?, system?, modelSettings? } or undefined";
            return Err(AgentError::invalid(F, format!("{expected}, got {got}")));
        }
        if let Some(ms) = v.get("modelSettings").filter(|m| !m.is_null()) {
            let (base, ms) = (serde_json::json!({ "modelSettings": base }), serde_json::json!({ "modelSettings": ms }));
            let merged = merge_options(&base, &ms);
            o.settings = Some(parse_model_settings(&merged["modelSettings"], &format!("{F}.modelSettings"))?);
        }
        if let Some(tc) = v.get("toolChoice").filter(|m| !m.is_null()) {
            o.tool_choice = Some(parse_tool_choice(tc, &format!("{F}.toolChoice"))?);
        }
        if let Some(s) = v.get("system").filter(|m| !m.is_null()) {
            o.system = Some(parse_instructions(s, &format!("{F}.system"))?);
        }
        if let Some(at) = v.get("activeTools").filter(|m| !m.is_null()) {
            let names = at
                .as_array()
                .ok_or_else(|| AgentError::invalid(format!("{F}.activeTools"), "expected an array of tool names"))?;
            o.active_tools = Some(names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect());
        }
        Ok(o)
    })
}
