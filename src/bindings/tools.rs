//! Tools from JavaScript: `createTool`, tool records in the config and the options, and the
//! host that runs `execute`, Standard Schema validation and `requireApproval` functions for the
//! core's loop.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::pin;
use std::rc::Rc;
use std::future::Future;
use std::task::Waker;

use js_sys::{Array, Function, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::convert::{from_json, is_array, js_kind, object_keys, read, to_json, to_json_strict, type_error, Data};
use crate::core::chunk::Chunk;
use crate::core::input::join;
use crate::core::schema;
use crate::core::step::ToolCall;
use crate::core::tools::{Approval, ToolCtx, ToolDef, Validation};

/// A tool with its JavaScript functions.
#[derive(Clone)]
pub struct JsTool {
    pub def: ToolDef,
    /// The tool object, `this` for `execute`.
    object: JsValue,
    execute: Option<Function>,
    /// `inputSchema['~standard']` when the schema validates itself.
    standard: Option<JsValue>,
    approval_fn: Option<Function>,
    /// `suspendSchema` / `resumeSchema` (SPEC §19.1).
    pub suspend_schema: Option<super::suspend::ToolSchema>,
    pub resume_schema: Option<super::suspend::ToolSchema>,
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// Reads one tool. `client` tools (from `clientTools`) may have no `execute`.
pub fn parse_tool(name: &str, v: &JsValue, path: &str, client: bool) -> Result<JsTool, JsValue> {
    if !v.is_object() || v.is_function() {
        return Err(type_error(path, &format!("expected a tool object like createTool({{ id, description, inputSchema, execute }}), got {}", js_kind(v))));
    }
    let field = |k: &str| read(v, k, path);
    let description = match field("description")? {
        d if d.is_undefined() || d.is_null() => None,
        d => Some(d.as_string().ok_or_else(|| type_error(&join(path, "description"), &format!("expected a string, got {}", js_kind(&d))))?),
    };
    let execute = match field("execute")? {
        e if e.is_undefined() || e.is_null() => None,
        e => Some(e.dyn_into::<Function>().map_err(|e| type_error(&join(path, "execute"), &format!("expected a function, got {}", js_kind(&e))))?),
    };
    if execute.is_none() && !client {
        return Err(type_error(&join(path, "execute"), "is required: a function (input, context) => result (a tool without execute belongs in clientTools)"));
    }
    let (parameters, standard) = input_schema(&field("inputSchema")?, &join(path, "inputSchema"), "draft-2020-12")?;
    // Not used by this version, but a value that is no schema at all is a mistake worth naming.
    let output_schema = field("outputSchema")?;
    if !(output_schema.is_undefined() || output_schema.is_null() || output_schema.is_object()) {
        let got = js_kind(&output_schema);
        let message = format!("expected a JSON Schema object or a Standard Schema (such as a zod schema), got {got}");
        return Err(type_error(&join(path, "outputSchema"), &message));
    }
    let approval_js = field("requireApproval")?;
    let (approval, approval_fn) = if approval_js.is_function() {
        (Approval::Host, Some(approval_js.unchecked_into::<Function>()))
    } else if approval_js.is_undefined() || approval_js.is_null() {
        (Approval::Never, None)
    } else if let Some(b) = approval_js.as_bool() {
        (if b { Approval::Always } else { Approval::Never }, None)
    } else {
        return Err(type_error(&join(path, "requireApproval"), &format!("expected a boolean or a function, got {}", js_kind(&approval_js))));
    };
    let suspend_schema = super::suspend::optional_schema(&field("suspendSchema")?, &join(path, "suspendSchema"))?;
    let resume_schema = super::suspend::optional_schema(&field("resumeSchema")?, &join(path, "resumeSchema"))?;
    let validation = if standard.is_some() { Validation::Host } else { Validation::JsonSchema };
    let bg_path = join(path, "background");
    let background = Data::of(&field("background")?, &bg_path)
        .and_then(|d| d.parse(|t| crate::core::background::parse_tool_background(t, &bg_path)))
        .map_err(|e| super::convert::error_to_js(&e))?;
    Ok(JsTool {
        def: ToolDef { name: name.to_string(), description, parameters, validation, approval, client: execute.is_none(), background },
        object: v.clone(),
        execute,
        standard,
        approval_fn,
        suspend_schema,
        resume_schema,
    })
}

/// The JSON Schema for the model, and the Standard Schema object when there is one (`target`:
/// the JSON Schema draft a Standard JSON Schema is asked for).
pub(crate) fn input_schema(v: &JsValue, path: &str, target: &str) -> Result<(Value, Option<JsValue>), JsValue> {
    let empty = serde_json::json!({ "type": "object", "properties": {} });
    if v.is_undefined() || v.is_null() {
        return Ok((empty, None));
    }
    let standard = get(v, "~standard");
    if standard.is_object() {
        // Standard JSON Schema (zod ≥ 4.2 and others), else zod's own toJSONSchema().
        let json_schema = get(&standard, "jsonSchema");
        let from_standard = get(&json_schema, "input").dyn_into::<Function>().ok().and_then(|f| {
            let opts = Object::new();
            let _ = Reflect::set(&opts, &"target".into(), &target.into());
            f.call1(&json_schema, &opts).ok()
        });
        let js_schema = from_standard
            .or_else(|| get(v, "toJSONSchema").dyn_into::<Function>().ok().and_then(|f| f.call0(v).ok()))
            .ok_or_else(|| type_error(path, "is a Standard Schema that cannot describe itself as JSON Schema (no ~standard.jsonSchema or toJSONSchema()); pass a JSON Schema object instead"))?;
        let schema = to_json(&js_schema, path).map_err(|e| super::convert::error_to_js(&e))?;
        return Ok((schema, Some(standard)));
    }
    if v.is_function() {
        return Err(type_error(path, "expected a JSON Schema object or a Standard Schema (such as a zod schema), got a function"));
    }
    let schema = to_json(v, path).map_err(|e| super::convert::error_to_js(&e))?;
    schema::check_schema(&schema).map_err(|m| type_error(path, &m))?;
    Ok((schema, None))
}

/// `createTool({ id, description, inputSchema, outputSchema?, execute, requireApproval? })`:
/// checks the definition now (a bad tool is a `TypeError` here, not at the first call) and
/// returns it, so `tool.execute` stays callable directly.
#[wasm_bindgen(js_name = createTool, skip_typescript)]
pub fn create_tool(#[wasm_bindgen(unchecked_param_type = "Tool")] tool: JsValue) -> Result<JsValue, JsValue> {
    if !tool.is_object() {
        let got = js_kind(&tool);
        let message = format!("expected a tool object like {{ id, description, inputSchema, execute }}, got {got}");
        return Err(type_error("createTool(tool)", &message));
    }
    let id = read(&tool, "id", "createTool(tool)")?;
    let Some(name) = id.as_string().filter(|s| !s.is_empty()) else {
        return Err(type_error("createTool(tool).id", &format!("expected a non-empty string, got {}", js_kind(&id))));
    };
    parse_tool(&name, &tool, "createTool(tool)", true)?;
    MADE_TOOLS.with(|m| m.add(tool.unchecked_ref()));
    Ok(tool)
}

thread_local! {
    /// The objects `createTool` returned, so `createStep(tool)` tells a tool (`execute(input,
    /// context)`) from a step definition (`execute(ctx)`).
    static MADE_TOOLS: js_sys::WeakSet = js_sys::WeakSet::new();
}

/// Whether `v` came from `createTool`.
pub fn is_made_tool(v: &JsValue) -> bool {
    v.is_object() && MADE_TOOLS.with(|m| m.has(v.unchecked_ref()))
}

/// Reads a `Record<name, tool>`.
pub fn parse_tools(record: &JsValue, path: &str, client: bool) -> Result<Vec<JsTool>, JsValue> {
    if record.is_undefined() || record.is_null() {
        return Ok(Vec::new());
    }
    if !record.is_object() || is_array(record).unwrap_or(true) {
        return Err(type_error(path, &format!("expected an object of tools by name, got {}", js_kind(record))));
    }
    let keys = object_keys(record).map_err(|_| type_error(path, "could not be read"))?;
    let mut out = Vec::new();
    for k in keys.iter() {
        let name = k.as_string().unwrap_or_default();
        out.push(parse_tool(&name, &read(record, &name, path)?, &join(path, name.as_str()), client)?);
    }
    Ok(out)
}

/// Chunks written by a running tool, taken by its call's future as it runs.
#[derive(Default)]
struct WriterQueue {
    chunks: VecDeque<Chunk>,
    waker: Option<Waker>,
    /// The call finished: later writes are dropped.
    closed: bool,
}

/// `context.writer` for one call: `write(value)` → `tool-output`, `custom({ type: 'data-…', data })`.
fn writer(call: &ToolCall, queue: &Rc<RefCell<WriterQueue>>) -> Object {
    let push = |q: &Rc<RefCell<WriterQueue>>, chunk: Chunk| {
        let waker = {
            let mut q = q.borrow_mut();
            if q.closed {
                return;
            }
            q.chunks.push_back(chunk);
            q.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    };
    let (q, id, name) = (queue.clone(), call.tool_call_id.clone(), call.tool_name.clone());
    let write = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |value: JsValue| match to_json_strict(&value, "writer.write(value)") {
        Ok(output) => {
            push(&q, Chunk::ToolOutput { tool_call_id: id.clone(), tool_name: name.clone(), output });
            Promise::resolve(&JsValue::UNDEFINED)
        }
        Err(e) => Promise::reject(&super::convert::error_to_js(&e)),
    });
    let q = queue.clone();
    let custom = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |chunk: JsValue| match custom_chunk(&chunk) {
        Ok(c) => {
            push(&q, c);
            Promise::resolve(&JsValue::UNDEFINED)
        }
        Err(e) => Promise::reject(&e),
    });
    let w = Object::new();
    let _ = Reflect::set(&w, &"write".into(), &write.into_js_value());
    let _ = Reflect::set(&w, &"custom".into(), &custom.into_js_value());
    w
}

pub(crate) fn custom_chunk(v: &JsValue) -> Result<Chunk, JsValue> {
    let kind = get(v, "type").as_string().filter(|t| t.starts_with("data-") && t.len() > 5).ok_or_else(|| {
        type_error("writer.custom(chunk).type", "expected a string starting with 'data-', e.g. 'data-progress'")
    })?;
    // Sent on as written, and stored: a function in it would silently vanish.
    let data = to_json_strict(&get(v, "data"), "writer.custom(chunk).data");
    let data = data.map_err(|e| super::convert::error_to_js(&e))?;
    let id = get(v, "id").as_string();
    let transient = get(v, "transient").is_truthy();
    Ok(Chunk::Data { kind, data, id, transient })
}

/// The error text of a thrown value.
pub fn thrown_message(e: &JsValue) -> String {
    let m = get(e, "message");
    m.as_string().or_else(|| e.as_string()).unwrap_or_else(|| js_sys::JSON::stringify(e).ok().and_then(|s| s.as_string()).unwrap_or_else(|| "unknown error".into()))
}

/// Calls `f` and waits for its promise when it returns one.
pub async fn call_async(f: &Function, this: &JsValue, args: &[&JsValue]) -> Result<JsValue, JsValue> {
    let ret = match args {
        [] => f.call0(this),
        [a] => f.call1(this, a),
        [a, b] => f.call2(this, a, b),
        _ => f.call3(this, args[0], args[1], args[2]),
    }?;
    if ret.has_type::<Promise>() || Reflect::get(&ret, &"then".into()).map(|t| t.is_function()).unwrap_or(false) {
        JsFuture::from(Promise::resolve(&ret)).await
    } else {
        Ok(ret)
    }
}

/// Per-run facts a tool's `context` carries.
/// Makes a tool call's `tracingContext` from its tool call id.
pub type TracingContextFn = Rc<dyn Fn(&str) -> JsValue>;

#[derive(Clone)]
pub struct ToolEnv {
    pub run_id: String,
    pub agent_id: String,
    /// The run's memory thread and resource, when it has them.
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    pub abort_signal: JsValue,
    pub request_context: JsValue,
    /// `tracingContext` of a call (SPEC §16.4), by tool call id; `{}` when the run is not traced.
    pub tracing_context: Option<TracingContextFn>,
}

/// Validates with a Standard Schema: the parsed value, or a message for the model.
pub async fn standard_validate(tool: &JsTool, args: &Value) -> Result<JsValue, String> {
    let Some(standard) = &tool.standard else { return Ok(from_json(args)) };
    let validate = get(standard, "validate").dyn_into::<Function>().map_err(|_| "the tool's schema has no validate()".to_string())?;
    let result = call_async(&validate, standard, &[&from_json(args)]).await.map_err(|e| thrown_message(&e))?;
    let issues = get(&result, "issues");
    if !issues.is_object() {
        return Ok(get(&result, "value"));
    }
    let parts: Vec<String> = issue_list(&issues.unchecked_into()).into_iter().map(|(path, message)| format!("{path}: {message}")).collect();
    Err(format!("Invalid arguments for tool '{}': {}. Fix the arguments and call the tool again.", tool.def.name, parts.join("; ")))
}

/// A Standard Schema's `issues` (at most 20) as (path, message): the path in `$.items[2].city` form.
pub(crate) fn issue_list(issues: &Array) -> Vec<(String, String)> {
    let mut parts = Vec::new();
    for issue in issues.iter().take(20) {
        let mut path = String::from("$");
        if let Ok(segs) = get(&issue, "path").dyn_into::<Array>() {
            for seg in segs.iter() {
                let seg = if seg.is_object() { get(&seg, "key") } else { seg };
                match seg.as_f64() {
                    Some(n) => path.push_str(&format!("[{}]", n as u64)),
                    None => {
                        path.push('.');
                        path.push_str(&seg.as_string().unwrap_or_default());
                    }
                }
            }
        }
        parts.push((path, get(&issue, "message").as_string().unwrap_or_default()));
    }
    parts
}

/// Runs `execute(input, context)`, forwarding what the tool writes while it runs.
/// With `slot`, the context has `suspend()`: once it is called, the call stops waiting for
/// `execute` (whatever it returns later is ignored).
pub async fn execute(tool: &JsTool, input: JsValue, env: &ToolEnv, ctx: ToolCtx<'_>, slot: Option<&super::suspend::SuspendSlot>) -> Result<Value, String> {
    let Some(execute) = &tool.execute else { return Err(format!("Tool '{}' has no execute function", tool.def.name)) };
    let queue = Rc::new(RefCell::new(WriterQueue::default()));
    let context = Object::new();
    let messages = from_json(ctx.messages);
    let set = |o: &Object, k: &str, v: &JsValue| {
        let _ = Reflect::set(o, &JsValue::from_str(k), v);
    };
    let call_id = JsValue::from_str(&ctx.call.tool_call_id);
    let agent_id = JsValue::from_str(&env.agent_id);
    set(&context, "toolCallId", &call_id);
    set(&context, "runId", &JsValue::from_str(&env.run_id));
    set(&context, "agentId", &agent_id);
    set(&context, "messages", &messages);
    set(&context, "abortSignal", &env.abort_signal);
    set(&context, "requestContext", &env.request_context);
    let tracing = env.tracing_context.as_ref().map_or_else(|| Object::new().into(), |f| f(&ctx.call.tool_call_id));
    set(&context, "tracingContext", &tracing);
    set(&context, "writer", &writer(ctx.call, &queue));
    let agent = Object::new();
    set(&agent, "agentId", &agent_id);
    set(&agent, "toolCallId", &call_id);
    set(&agent, "messages", &messages);
    let opt_str = |v: &Option<String>| v.as_deref().map(JsValue::from_str).unwrap_or(JsValue::UNDEFINED);
    for o in [&context, &agent] {
        set(o, "threadId", &opt_str(&env.thread_id));
        set(o, "resourceId", &opt_str(&env.resource_id));
    }
    if let Some(slot) = slot {
        let f = super::suspend::suspend_fn(slot, &tool.def.name, tool.suspend_schema.clone(), tool.resume_schema.clone());
        super::suspend::set_on(&context, &f, ctx.resume);
        super::suspend::set_on(&agent, &f, ctx.resume);
    }
    set(&context, "agent", &agent);
    let context: JsValue = context.into();
    let args = [&input, &context];
    let mut running = pin!(call_async(execute, &tool.object, &args));
    let settled = poll_fn(|cx| {
        let suspended = slot.and_then(|slot| {
            let mut st = slot.borrow_mut();
            let out = match &st.outcome {
                Some(Ok(_)) => Ok(JsValue::UNDEFINED),
                Some(Err(message)) => Err(JsValue::from_str(message)),
                None => {
                    st.waker = Some(cx.waker().clone());
                    return None;
                }
            };
            Some(std::task::Poll::Ready(out))
        });
        let ready = suspended.unwrap_or_else(|| running.as_mut().poll(cx));
        // What the tool wrote before it suspended goes out too (before tool-call-suspended).
        let drained: Vec<Chunk> = {
            let mut q = queue.borrow_mut();
            q.waker = Some(cx.waker().clone());
            if ready.is_ready() {
                q.closed = true;
            }
            q.chunks.drain(..).collect()
        };
        for c in drained {
            (ctx.emit)(c);
        }
        ready
    })
    .await;
    let value = settled.map_err(|e| thrown_message(&e))?;
    if value.is_undefined() {
        return Ok(Value::Null);
    }
    to_json_strict(&value, "result").map_err(|e| format!("The result of tool '{}' cannot be sent to the model: {e}", tool.def.name))
}

/// `requireApproval(input)`; a throwing function asks for approval, to be safe.
pub async fn needs_approval(tool: &JsTool, args: &Value) -> bool {
    let Some(f) = &tool.approval_fn else { return !matches!(tool.def.approval, Approval::Never) };
    call_async(f, &tool.object, &[&from_json(args)]).await.map(|v| v.is_truthy()).unwrap_or(true)
}

