//! `new Agent({ workflows })`: each committed workflow offered to the model as the tool
//! `workflow-<key>`. The tool's input is `{ inputData, initialState? }` (the workflow's input and
//! state schemas), a call runs a new run of the workflow through its public API (`createRun`,
//! `run.stream`), every workflow event reaches the agent's stream as a `tool-output` wrapping it
//! (as a sub-agent's chunks do, SPEC §18.4), and the model reads `{ result, runId }` or
//! `{ error, runId }`.

use js_sys::{Function, Object, Promise, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::convert::{from_json, is_array, js_kind, object_keys, read, to_json, type_error};
use super::tools::{call_async, input_schema, parse_tool, thrown_message, JsTool};
use super::workflow::{lookup_workflow, WfInner, Workflow};
use crate::core::run::delegation::valid_key;

const KEY_RULE: &str = "a key must match /^[A-Za-z0-9_-]{1,58}$/ (it becomes part of the tool name workflow-<key>)";

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

/// Reads `config.workflows` (a record of committed workflows) into one tool per workflow.
pub(crate) fn parse_workflow_tools(v: &JsValue, path: &str) -> Result<Vec<JsTool>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    if v.is_function() {
        return Err(type_error(path, "a function of the request context is not supported by this version: pass a record of workflows by key"));
    }
    if !v.is_object() || is_array(v).unwrap_or(true) {
        return Err(type_error(path, &format!("expected an object of workflows by key, got {}", js_kind(v))));
    }
    let keys = object_keys(v).map_err(|_| type_error(path, "could not be read"))?;
    let mut tools = Vec::new();
    for k in keys.iter() {
        let key = k.as_string().unwrap_or_default();
        let field = format!("{path}.{key}");
        if !valid_key(&key) {
            return Err(type_error(&field, &format!("is not a valid workflow key: {KEY_RULE}")));
        }
        let value = read(v, &key, path)?;
        let wf = lookup_workflow(&value)
            .ok_or_else(|| type_error(&field, &format!("expected a workflow made by createWorkflow(…), got {}", js_kind(&value))))?;
        if !wf.def.committed.get() {
            return Err(type_error(&field, &format!("the workflow '{}' is not committed; call .commit() on it first", wf.def.id)));
        }
        tools.push(tool_of(&key, wf, &field)?);
    }
    Ok(tools)
}

/// The tool for one workflow.
fn tool_of(key: &str, wf: std::rc::Rc<WfInner>, field: &str) -> Result<JsTool, JsValue> {
    let name = format!("workflow-{key}");
    let (input, _) = input_schema(&get(&wf.config, "inputSchema"), &format!("{field}.inputSchema"), "draft-2020-12")?;
    let mut properties = json!({ "inputData": input });
    let state = get(&wf.config, "stateSchema");
    if !(state.is_undefined() || state.is_null()) {
        let (state, _) = input_schema(&state, &format!("{field}.stateSchema"), "draft-2020-12")?;
        properties["initialState"] = state;
    }
    let schema = json!({ "type": "object", "properties": properties, "required": ["inputData"] });
    let description = wf.def.description.clone().unwrap_or_else(|| format!("Runs the workflow '{}'", wf.def.id));
    let tool = Object::new();
    let set = |k: &str, v: &JsValue| {
        let _ = Reflect::set(&tool, &JsValue::from_str(k), v);
    };
    set("id", &JsValue::from_str(&name));
    set("description", &JsValue::from_str(&description));
    set("inputSchema", &from_json(&schema));
    let execute = Closure::<dyn FnMut(JsValue, JsValue) -> Promise>::new(move |input: JsValue, context: JsValue| {
        let wf = wf.clone();
        future_to_promise(async move { run_as_tool(wf, input, context).await })
    });
    set("execute", &execute.into_js_value());
    parse_tool(&name, &tool, field, false)
}

/// `obj[name]` as a function.
fn method(obj: &JsValue, name: &str) -> Result<Function, JsValue> {
    get(obj, name).dyn_into().map_err(|_| JsValue::from(js_sys::Error::new(&format!("{name} is not a function"))))
}

/// Calls `obj[name](...args)`, waiting for the promise it returns.
async fn call(obj: &JsValue, name: &str, args: &[&JsValue]) -> Result<JsValue, JsValue> {
    call_async(&method(obj, name)?, obj, args).await
}

/// One call of a workflow tool: a new run, its events written as they come, its result.
async fn run_as_tool(wf: std::rc::Rc<WfInner>, input: JsValue, context: JsValue) -> Result<JsValue, JsValue> {
    let workflow: JsValue = Workflow { inner: wf }.into();
    let run = call(&workflow, "createRun", &[]).await?;
    let run_id = get(&run, "runId");
    let options = Object::new();
    let _ = Reflect::set(&options, &"inputData".into(), &get(&input, "inputData"));
    let initial = get(&input, "initialState");
    if !initial.is_undefined() {
        let _ = Reflect::set(&options, &"initialState".into(), &initial);
    }
    let request_context = get(&context, "requestContext");
    if !request_context.is_undefined() {
        let _ = Reflect::set(&options, &"requestContext".into(), &request_context);
    }
    let output = call(&run, "stream", &[&options]).await?;
    // The agent's abort cancels the run (a closure JavaScript owns: the listener may outlive
    // this call, whose future the agent drops when it stops).
    let signal = get(&context, "abortSignal");
    let on_abort = signal.is_object().then(|| {
        let r = run.clone();
        let cancel = move || method(&r, "cancel").and_then(|c| c.call0(&r));
        if get(&signal, "aborted").is_truthy() {
            let _ = cancel();
        }
        let f = Closure::<dyn FnMut()>::new(move || {
            let _ = cancel();
        })
        .into_js_value();
        let _ = method(&signal, "addEventListener").and_then(|add| add.call2(&signal, &"abort".into(), &f));
        f
    });
    let writer = get(&context, "writer");
    let reader = call(&get(&output, "fullStream"), "getReader", &[]).await?;
    loop {
        let next = call(&reader, "read", &[]).await?;
        if get(&next, "done").is_truthy() {
            break;
        }
        if writer.is_object() {
            call(&writer, "write", &[&get(&next, "value")]).await?;
        }
    }
    if let Some(f) = &on_abort {
        let _ = method(&signal, "removeEventListener").and_then(|remove| remove.call2(&signal, &"abort".into(), f));
    }
    let result = JsFuture::from(Promise::resolve(&get(&output, "result"))).await?;
    let field = |k: &str| to_json(&get(&result, k), "result").unwrap_or(Value::Null);
    let summary = json!({
        "status": get(&result, "status").as_string(), "result": field("result"), "suspended": field("suspended"),
        "suspendPayload": field("suspendPayload"), "tripwire": field("tripwire"),
    });
    let run_id = run_id.as_string().unwrap_or_default();
    Ok(from_json(&answer(&summary, &run_id, &thrown_message(&get(&result, "error")))))
}

/// What the model reads of a finished run (`error`: the message of `result.error`).
pub(crate) fn answer(result: &Value, run_id: &str, error: &str) -> Value {
    match result["status"].as_str().unwrap_or_default() {
        "success" => json!({ "result": result["result"], "runId": run_id }),
        "suspended" => json!({ "status": "suspended", "suspended": result["suspended"], "suspendPayload": result["suspendPayload"], "runId": run_id }),
        "tripwire" => json!({ "error": result["tripwire"]["reason"], "runId": run_id }),
        "canceled" => json!({ "error": "the workflow run was canceled", "runId": run_id }),
        _ => json!({ "error": error, "runId": run_id }),
    }
}
