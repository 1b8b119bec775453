//! `new Agent({ workflows })`: each committed workflow offered to the model as the tool
//! `workflow-<key>`. The tool's input is `{ inputData, initialState? }` (the workflow's input and
//! state schemas), a call runs a new run of the workflow through its public API (`createRun`,
//! `run.stream`), every workflow event reaches the agent's stream as a `tool-output` wrapping it
//! (as a sub-agent's chunks do, SPEC §18.4), and the model reads `{ result, runId }` or
//! `{ error, runId }`. A run that suspends suspends the call (SPEC §19.1) with
//! `{ workflow, runId, suspended, payload }`; resuming the call resumes that run.

use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::convert::{error_to_js, from_json, js_kind, keyed_record, to_json, type_error};
use crate::core::error::AgentError;
use super::tools::{call_async, input_schema, parse_tool, thrown_message, JsTool};
use super::workflow::{lookup_workflow, WfInner, Workflow};
use super::workflow_host::standard_of;
use crate::core::workflow::graph::{Schema, WorkflowDef};
use crate::core::workflow::snapshot::find_step;

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
    let mut found = Vec::new();
    keyed_record(v, path, "expected an object of workflows by key", ("workflow", KEY_RULE), &mut |key, field, value| {
        let wf = lookup_workflow(&value)
            .ok_or_else(|| AgentError::invalid(field, format!("expected a workflow made by createWorkflow(…), got {}", js_kind(&value))))?;
        if !wf.def.committed.get() {
            return Err(AgentError::invalid(field, format!("the workflow '{}' is not committed; call .commit() on it first", wf.def.id)));
        }
        found.push((key, field.to_string(), wf));
        Ok(())
    })
    .map_err(|e| error_to_js(&e))?;
    found.into_iter().map(|(key, field, wf)| tool_of(&key, wf, &field)).collect()
}

/// The tool for one workflow.
fn tool_of(key: &str, wf: Rc<WfInner>, field: &str) -> Result<JsTool, JsValue> {
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
    let key = key.to_string();
    let execute = Closure::<dyn FnMut(JsValue, JsValue) -> Promise>::new(move |input: JsValue, context: JsValue| {
        let (wf, key) = (wf.clone(), key.clone());
        future_to_promise(async move { run_as_tool(&key, wf, input, context).await })
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

fn set(o: &Object, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

/// One execution of a workflow tool. The first starts a new run; a resume of the call (its
/// context carries the `suspendPayload` the call suspended with) resumes that run at its first
/// suspended step with `context.resumeData`. Either way the run's events are written as they
/// come, and a run that suspends suspends the call again.
async fn run_as_tool(key: &str, wf: Rc<WfInner>, input: JsValue, context: JsValue) -> Result<JsValue, JsValue> {
    let def = wf.def.clone();
    let workflow: JsValue = Workflow { inner: wf }.into();
    let prior = get(&context, "suspendPayload");
    let (run, output) = if prior.is_object() {
        match resume_run(&def, &workflow, &prior, &context).await? {
            Ok(resumed) => resumed,
            Err(settled) => return Ok(settled),
        }
    } else {
        start_run(&workflow, &input, &context).await?
    };
    let run_id = get(&run, "runId").as_string().unwrap_or_default();
    follow(&run, &output, &context).await?;
    let result = JsFuture::from(Promise::resolve(&get(&output, "result"))).await?;
    let field = |k: &str| to_json(&get(&result, k), "result").unwrap_or(Value::Null);
    let suspend = get(&context, "suspend");
    if let (Some("suspended"), Some(suspend)) = (get(&result, "status").as_string().as_deref(), suspend.dyn_ref::<Function>()) {
        let suspended = field("suspended");
        let first: Vec<String> = serde_json::from_value(suspended[0].clone()).unwrap_or_default();
        // `suspendPayload` is keyed by the top-level step (a nested workflow's id).
        let payload = first.first().map(|id| field("suspendPayload")[id].clone()).unwrap_or(Value::Null);
        let wait = json!({ "workflow": key, "runId": run_id, "suspended": suspended, "payload": payload });
        suspend_with(suspend, &wait, resume_schema(&def, &first))?;
        return Ok(JsValue::UNDEFINED);
    }
    let summary = json!({
        "status": get(&result, "status").as_string(), "result": field("result"), "suspended": field("suspended"),
        "suspendPayload": field("suspendPayload"), "tripwire": field("tripwire"),
    });
    Ok(from_json(&answer(&summary, &run_id, &thrown_message(&get(&result, "error")))))
}

/// A new run of the workflow with the call's input: the run and its output.
async fn start_run(workflow: &JsValue, input: &JsValue, context: &JsValue) -> Result<(JsValue, JsValue), JsValue> {
    let run = call(workflow, "createRun", &[]).await?;
    let options = Object::new();
    set(&options, "inputData", &get(input, "inputData"));
    let initial = get(input, "initialState");
    if !initial.is_undefined() {
        set(&options, "initialState", &initial);
    }
    let request_context = get(context, "requestContext");
    if !request_context.is_undefined() {
        set(&options, "requestContext", &request_context);
    }
    let output = call(&run, "stream", &[&options]).await?;
    Ok((run, output))
}

/// The run the call suspended with, resumed at its first suspended step: `Ok((run, output))`;
/// or the call settled without a run to follow, `Err(value)` (what the model reads, or
/// `undefined` when the call suspended again).
async fn resume_run(def: &WorkflowDef, workflow: &JsValue, prior: &JsValue, context: &JsValue) -> Result<Result<(JsValue, JsValue), JsValue>, JsValue> {
    let run_id = get(prior, "runId");
    if !run_id.is_string() {
        return Err(js_sys::Error::new("the suspendPayload of this call names no workflow run (runId)").into());
    }
    let at = Object::new();
    set(&at, "runId", &run_id);
    let run = call(workflow, "createRun", &[&at]).await?;
    let step = get(&get(prior, "suspended"), "0");
    let options = Object::new();
    set(&options, "step", &step);
    set(&options, "resumeData", &get(context, "resumeData"));
    // Returned at once; a refused resume errors its stream before any event. Each fullStream is
    // a new reader from the first event, so this one only looks.
    let output = call(&run, "resumeStream", &[&options]).await?;
    let probe = call(&get(&output, "fullStream"), "getReader", &[]).await?;
    let refused = match call(&probe, "read", &[]).await {
        Ok(_) => {
            let _ = call(&probe, "cancel", &[]).await;
            return Ok(Ok((run, output)));
        }
        Err(e) => e,
    };
    let suspend = get(context, "suspend");
    match (get(&refused, "name").as_string().as_deref(), suspend.dyn_ref::<Function>()) {
        // The workflow's own check refused the data (a schema the agent could not check before
        // it resumed the call): the run is still suspended, so the call waits again, saying why.
        (Some("ValidationError"), Some(suspend)) => {
            let mut wait = to_json(prior, "suspendPayload").unwrap_or_else(|_| json!({}));
            wait["error"] = thrown_message(&refused).into();
            let path: Vec<String> = serde_json::from_value(wait["suspended"][0].clone()).unwrap_or_default();
            suspend_with(suspend, &wait, resume_schema(def, &path))?;
            Ok(Err(JsValue::UNDEFINED))
        }
        // Not resumable from here (resumed elsewhere, finished, canceled, no snapshot).
        _ => Ok(Err(from_json(&json!({ "error": thrown_message(&refused), "runId": run_id.as_string() })))),
    }
}

/// Writes the run's events into the call's output as they come; the agent's abort cancels the
/// run meanwhile.
async fn follow(run: &JsValue, output: &JsValue, context: &JsValue) -> Result<(), JsValue> {
    // A closure JavaScript owns: the listener may outlive this call, whose future the agent
    // drops when it stops.
    let signal = get(context, "abortSignal");
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
    let writer = get(context, "writer");
    let reader = call(&get(output, "fullStream"), "getReader", &[]).await?;
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
    Ok(())
}

/// Suspends the call (SPEC §19.1). Not awaited: the agent stops waiting for `execute` once
/// `suspend()` is called, and its promise resolves only when the wait is stored.
fn suspend_with(suspend: &Function, payload: &Value, resume_schema: Option<Value>) -> Result<(), JsValue> {
    let options = Object::new();
    if let Some(s) = resume_schema {
        set(&options, "resumeSchema", &from_json(&s));
    }
    suspend.call2(&JsValue::UNDEFINED, &from_json(payload), &options).map(drop)
}

/// The resume data's JSON Schema of the step at `path`, when the agent can check it before it
/// resumes the call: a JSON Schema, or a Standard Schema that describes itself as one.
fn resume_schema(def: &WorkflowDef, path: &[String]) -> Option<Value> {
    match find_step(def, path)?.resume_schema.as_ref()? {
        Schema::Json(s) => Some(s.clone()),
        Schema::Host(h) => {
            let holder = Object::new();
            set(&holder, "~standard", &standard_of(*h)?);
            input_schema(&holder, "resumeSchema", "draft-2020-12").ok().map(|(s, _)| s)
        }
    }
}

/// What the model reads of a finished run (`error`: the message of `result.error`). A
/// suspended run reaches the model only where the call cannot suspend (a background task).
pub(crate) fn answer(result: &Value, run_id: &str, error: &str) -> Value {
    match result["status"].as_str().unwrap_or_default() {
        "success" => json!({ "result": result["result"], "runId": run_id }),
        "suspended" => json!({ "status": "suspended", "suspended": result["suspended"], "suspendPayload": result["suspendPayload"], "runId": run_id }),
        "tripwire" => json!({ "error": result["tripwire"]["reason"], "runId": run_id }),
        "canceled" => json!({ "error": "the workflow run was canceled", "runId": run_id }),
        _ => json!({ "error": error, "runId": run_id }),
    }
}
