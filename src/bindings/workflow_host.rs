//! The workflow engine's host: the user's functions by handle (`execute`, a tool's, an agent's,
//! conditions, `map` and sleep functions, Standard Schemas), and the `ctx` object each call gets.
//! The engine holds no borrow while these run; the `ctx` methods borrow the run only inside.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::convert::{from_json, to_json, to_json_strict};
use super::tools::{call_async, issue_list, thrown_message};
use super::workflow_ctx::Bound;
use crate::core::env::LocalFuture;
use crate::core::workflow::graph::Handle;
use crate::core::workflow::host::{Failure, StepCall, WorkflowHost};

/// One function (or schema) the engine calls by handle.
pub enum HostFn {
    /// `createStep({ execute })`: `execute(ctx)`.
    Execute(Function),
    /// `createStep(tool)`: `tool.execute(inputData, context)`.
    Tool { tool: JsValue, execute: Function },
    /// `createStep(agent, options)`: `agent.stream(prompt, options)`, its chunks forwarded.
    Agent { agent: JsValue, options: JsValue, structured: bool },
    /// A condition, `map` or sleep function: `f(ctx)`.
    Plain(Function),
    /// `schema['~standard']`.
    Standard(JsValue),
}

thread_local! {
    /// Every function handed to a step or a builder call. Steps and workflows live as long as the
    /// page in practice (module-level definitions), so the table only grows.
    static FNS: RefCell<Vec<Rc<HostFn>>> = const { RefCell::new(Vec::new()) };
}

pub fn register(f: HostFn) -> Handle {
    FNS.with(|t| {
        let mut t = t.borrow_mut();
        t.push(Rc::new(f));
        (t.len() - 1) as Handle
    })
}

fn lookup(h: Handle) -> Option<Rc<HostFn>> {
    FNS.with(|t| t.borrow().get(h as usize).cloned())
}

/// The Standard Schema (`schema['~standard']`) registered under `h`, if that is what `h` holds.
pub fn standard_of(h: Handle) -> Option<JsValue> {
    match &*lookup(h)? {
        HostFn::Standard(standard) => Some(standard.clone()),
        _ => None,
    }
}

/// One run's view for the user's functions: its signal, request context and `mastra`.
#[derive(Default)]
pub struct JsHost {
    pub signal: RefCell<JsValue>,
    pub request_context: RefCell<JsValue>,
    pub mastra: RefCell<JsValue>,
}

fn set(o: &Object, k: &'static str, v: &JsValue) {
    let _ = Reflect::set(o, &super::convert::key(k), v);
}

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn opt(v: &Option<Value>) -> JsValue {
    v.as_ref().map(from_json).unwrap_or(JsValue::UNDEFINED)
}

/// A thrown value as a step failure: its `name` (else `Error`) and message.
pub fn failure(e: &JsValue) -> Failure {
    let name = get(e, "name").as_string().filter(|n| !n.is_empty()).unwrap_or_else(|| "Error".into());
    Failure::new(name, thrown_message(e))
}

#[wasm_bindgen]
extern "C" {
    /// api.js's `ctx` maker (under a registered symbol): the whole object in one call.
    #[wasm_bindgen(js_name = Function)]
    type CtxMaker;
    #[wasm_bindgen(method, js_name = call)]
    #[allow(clippy::too_many_arguments)]
    fn make(
        this: &CtxMaker,
        this_arg: &JsValue,
        controls: JsValue,
        input: JsValue,
        state: JsValue,
        resume_data: JsValue,
        suspend_data: JsValue,
        retry_count: u32,
        iteration_count: JsValue,
        run_id: &str,
        workflow_id: &str,
        resource_id: JsValue,
        signal: &JsValue,
        request_context: &JsValue,
        mastra: &JsValue,
    ) -> Object;
}

thread_local! {
    /// The maker, looked up once (`None` where api.js did not run, e.g. the wasm loaded alone).
    static CTX_MAKER: Option<CtxMaker> = {
        let key = js_sys::Symbol::for_("wasm-agent.stepContext");
        Reflect::get(&js_sys::global(), &key).ok().filter(|f| f.is_function()).map(JsCast::unchecked_into)
    };
}

impl JsHost {
    /// The `ctx` of `execute(ctx)` and of conditions, `map` and sleep functions: made by api.js
    /// in one call (a boundary call per property was a fifth of a trivial step's time). Every
    /// entry of the package loads api.js; the wasm alone runs no workflow.
    fn context(&self, call: &StepCall) -> Result<Object, Failure> {
        let ctx = &call.ctx;
        // Copied out first: no borrow is held while JavaScript runs.
        let (signal, request_context, mastra) =
            (self.signal.borrow().clone(), self.request_context.borrow().clone(), self.mastra.borrow().clone());
        CTX_MAKER.with(|maker| {
            let maker = maker.as_ref().ok_or_else(|| {
                Failure::new("Error", "the step context maker is missing: import wasm-agent through its package entry")
            })?;
            Ok(maker.make(
                &JsValue::UNDEFINED,
                super::workflow_ctx::controls(ctx),
                from_json(&call.input),
                from_json(&call.state),
                opt(&call.resume_data),
                opt(&call.suspend_data),
                call.retry_count,
                call.iteration_count.map(JsValue::from).unwrap_or(JsValue::UNDEFINED),
                &ctx.run_id(),
                &ctx.workflow_id(),
                ctx.resource_id().map(JsValue::from).unwrap_or(JsValue::UNDEFINED),
                &signal,
                &request_context,
                &mastra,
            ))
        })
    }

    /// A tool's `context`: as the reference's, plus `writer`.
    fn tool_context(&self, call: &StepCall) -> Object {
        let o = Object::new();
        let ctx = &call.ctx;
        set(&o, "abortSignal", &self.signal.borrow());
        set(&o, "requestContext", &self.request_context.borrow());
        set(&o, "mastra", &self.mastra.borrow());
        set(&o, "resumeData", &opt(&call.resume_data));
        set(&o, "suspendPayload", &opt(&call.suspend_data));
        let bound = Bound::new(ctx);
        set(&o, "writer", &bound.writer());
        let wf = Object::new();
        set(&wf, "runId", &JsValue::from_str(&ctx.run_id()));
        set(&wf, "workflowId", &JsValue::from_str(&ctx.workflow_id()));
        set(&wf, "state", &from_json(&call.state));
        set(&wf, "resumeData", &opt(&call.resume_data));
        set(&wf, "suspendPayload", &opt(&call.suspend_data));
        bound.controls(&wf);
        set(&o, "workflow", &wf);
        o
    }
}

/// What a step returned, copied (a value JSON cannot hold fails the step).
fn output(v: &JsValue, step: &str) -> Result<Value, Failure> {
    if v.is_undefined() {
        return Ok(Value::Null);
    }
    to_json_strict(v, &format!("the output of step '{step}'")).map_err(Failure::from)
}

async fn run_agent(
    agent: JsValue,
    options: JsValue,
    structured: bool,
    call: StepCall,
    signal: JsValue,
) -> Result<Value, Failure> {
    let stream = get(&agent, "stream")
        .dyn_into::<Function>()
        .map_err(|_| Failure::new("TypeError", "the agent has no stream()"))?;
    let opts =
        Object::assign(&Object::new(), &if options.is_object() { options.unchecked_into() } else { Object::new() });
    if !signal.is_undefined() {
        set(&opts, "abortSignal", &signal);
    }
    let prompt = call.input.get("prompt").cloned().unwrap_or(Value::String(String::new()));
    let out = call_async(&stream, &agent, &[&from_json(&prompt), &opts]).await.map_err(|e| failure(&e))?;
    let full = get(&out, "fullStream");
    let reader: web_sys::ReadableStreamDefaultReader = get(&full, "getReader")
        .dyn_into::<Function>()
        .and_then(|f| f.call0(&full))
        .map_err(|e| failure(&e))?
        .unchecked_into();
    let mut tripwire = None;
    loop {
        let r = JsFuture::from(reader.read()).await.map_err(|e| failure(&e))?;
        if get(&r, "done").is_truthy() {
            break;
        }
        let chunk = to_json(&get(&r, "value"), "chunk").map_err(Failure::from)?;
        if chunk.get("type").and_then(Value::as_str) == Some("error") {
            let message = chunk
                .pointer("/payload/error/message")
                .and_then(Value::as_str)
                .unwrap_or("the agent failed")
                .to_string();
            call.ctx.forward(chunk);
            return Err(Failure::new("Error", message));
        }
        if chunk.get("type").and_then(Value::as_str) == Some("tripwire") {
            tripwire = chunk.get("payload").cloned();
        }
        call.ctx.forward(chunk);
    }
    if let Some(payload) = tripwire {
        return Err(Failure::tripwire(payload));
    }
    let key = if structured { "object" } else { "text" };
    let v = JsFuture::from(Promise::resolve(&get(&out, key))).await.map_err(|e| failure(&e))?;
    let v = to_json(&v, key).map_err(Failure::from)?;
    Ok(if structured { v } else { serde_json::json!({ "text": v }) })
}

impl WorkflowHost for JsHost {
    fn execute(&self, handle: Handle, call: StepCall) -> LocalFuture<'static, Result<Value, Failure>> {
        let Some(f) = lookup(handle) else {
            return Box::pin(async { Err(Failure::new("Error", "unknown step function")) });
        };
        let step = call.step_name.clone();
        match &*f {
            HostFn::Execute(g) | HostFn::Plain(g) => {
                let (g, ctx) = match self.context(&call) {
                    Ok(ctx) => (g.clone(), ctx),
                    Err(f) => return Box::pin(async move { Err(f) }),
                };
                Box::pin(async move {
                    output(&call_async(&g, &JsValue::UNDEFINED, &[&ctx]).await.map_err(|e| failure(&e))?, &step)
                })
            }
            HostFn::Tool { tool, execute } => {
                let (tool, execute, ctx) = (tool.clone(), execute.clone(), self.tool_context(&call));
                let input = from_json(&call.input);
                Box::pin(async move {
                    output(&call_async(&execute, &tool, &[&input, &ctx]).await.map_err(|e| failure(&e))?, &step)
                })
            }
            HostFn::Agent { agent, options, structured } => {
                Box::pin(run_agent(agent.clone(), options.clone(), *structured, call, self.signal.borrow().clone()))
            }
            HostFn::Standard(_) => Box::pin(async { Err(Failure::new("Error", "a schema is not a step")) }),
        }
    }

    fn call(&self, handle: Handle, call: StepCall) -> LocalFuture<'static, Result<Value, Failure>> {
        let Some(f) = lookup(handle) else { return Box::pin(async { Err(Failure::new("Error", "unknown function")) }) };
        let HostFn::Plain(g) = &*f else { return self.execute(handle, call) };
        let (g, ctx) = match self.context(&call) {
            Ok(ctx) => (g.clone(), ctx),
            Err(f) => return Box::pin(async move { Err(f) }),
        };
        Box::pin(async move {
            let v = call_async(&g, &JsValue::UNDEFINED, &[&ctx]).await.map_err(|e| failure(&e))?;
            // A sleepUntil function may return a Date.
            if let Some(d) = v.dyn_ref::<js_sys::Date>() {
                return Ok(serde_json::json!(d.get_time()));
            }
            if v.is_undefined() {
                return Ok(Value::Null);
            }
            to_json(&v, "the function's result").map_err(Failure::from)
        })
    }

    fn validate(&self, handle: Handle, value: Value) -> LocalFuture<'static, Result<Value, String>> {
        let Some(f) = lookup(handle) else { return Box::pin(async move { Ok(value) }) };
        let HostFn::Standard(standard) = &*f else { return Box::pin(async move { Ok(value) }) };
        let standard = standard.clone();
        Box::pin(async move {
            let validate = get(&standard, "validate")
                .dyn_into::<Function>()
                .map_err(|_| "$: the schema has no ~standard.validate()".to_string())?;
            let result = call_async(&validate, &standard, &[&from_json(&value)])
                .await
                .map_err(|e| format!("$: the schema's validate() threw: {}", thrown_message(&e)))?;
            let issues = get(&result, "issues");
            if !issues.is_object() {
                return to_json(&get(&result, "value"), "value").map_err(|e| format!("$: {e}"));
            }
            let parts: Vec<String> =
                issue_list(&issues.unchecked_into::<Array>()).into_iter().map(|(p, m)| format!("{p}: {m}")).collect();
            Err(parts.join("; "))
        })
    }
}
