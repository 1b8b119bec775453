//! `tracingContext.currentSpan` (SPEC §16.4): a handle on a span of a live run, from which user
//! code makes child and event spans, and the OTLP body builder `OtlpExporter` calls.

use std::rc::Rc;

use js_sys::{Array, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{to_json, type_error};
use crate::core::tracing::{ErrorInfo, Span, SpanOpts, Tracer};
use crate::platform::JsEnv;

thread_local! {
    static TRACERS: super::registry::Registry<Tracer> = const { super::registry::Registry::new() };
}

/// A span of a run: `{ id, traceId, name, type, isValid, createChildSpan, createEventSpan,
/// update, end, error }`.
#[wasm_bindgen]
pub struct SpanHandle {
    tracer: Rc<Tracer>,
    id: String,
    name: String,
    kind: String,
    ref_id: u32,
}

impl SpanHandle {
    pub(crate) fn new(tracer: &Rc<Tracer>, id: String, name: String, kind: String) -> SpanHandle {
        let ref_id = TRACERS.with(|t| t.add(tracer));
        SpanHandle { tracer: tracer.clone(), id, name, kind, ref_id }
    }

    /// `{ currentSpan }` for span `id` of `tracer`.
    pub(crate) fn context(tracer: &Rc<Tracer>, id: String, name: &str, kind: &str) -> JsValue {
        let o = js_sys::Object::new();
        let _ = Reflect::set(&o, &"currentSpan".into(), &SpanHandle::new(tracer, id, name.into(), kind.into()).into());
        o.into()
    }
}

/// The run and span behind a handle made here.
pub(crate) fn lookup(v: &JsValue) -> Option<(Rc<Tracer>, String)> {
    let tracer = TRACERS.with(|t| t.lookup(v, "__spanRef"))?;
    let id = Reflect::get(v, &"id".into()).ok()?.as_string()?;
    Some((tracer, id))
}

fn opts_of(v: &JsValue, field: &str) -> Result<SpanOpts, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(SpanOpts::default());
    }
    let j = to_json(v, field).map_err(|e| super::convert::error_to_js(&e))?;
    if !j.is_object() {
        return Err(type_error(field, "expected an object like { name, input, attributes, metadata }"));
    }
    let s = |k: &str| j.get(k).and_then(Value::as_str).map(str::to_owned);
    let m = |k: &str| j.get(k).and_then(Value::as_object).cloned();
    Ok(SpanOpts { kind: s("type"), name: s("name"), input: j.get("input").cloned(), output: j.get("output").cloned(), attributes: m("attributes"), metadata: m("metadata") })
}

#[wasm_bindgen]
impl SpanHandle {
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    #[wasm_bindgen(getter = traceId)]
    pub fn trace_id(&self) -> String {
        self.tracer.trace_id().to_string()
    }

    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    #[wasm_bindgen(getter = type)]
    pub fn kind(&self) -> String {
        self.kind.clone()
    }

    /// Whether the span is still open (spans made from it are exported).
    #[wasm_bindgen(getter = isValid)]
    pub fn is_valid(&self) -> bool {
        self.tracer.is_open(&self.id)
    }

    #[doc(hidden)]
    #[wasm_bindgen(js_name = __spanRef, skip_typescript)]
    pub fn span_ref(&self) -> u32 {
        self.ref_id
    }

    /// A child span (`type` defaults to `'generic'`), open until its `end()`.
    #[wasm_bindgen(js_name = createChildSpan)]
    pub fn create_child_span(&self, #[wasm_bindgen(unchecked_param_type = "SpanOptions")] opts: JsValue) -> Result<SpanHandle, JsValue> {
        self.make(opts, false, "createChildSpan(options)")
    }

    /// An event span: exported once, already ended.
    #[wasm_bindgen(js_name = createEventSpan)]
    pub fn create_event_span(&self, #[wasm_bindgen(unchecked_param_type = "SpanOptions")] opts: JsValue) -> Result<SpanHandle, JsValue> {
        self.make(opts, true, "createEventSpan(options)")
    }

    pub fn update(&self, #[wasm_bindgen(unchecked_param_type = "SpanOptions")] opts: JsValue) -> Result<(), JsValue> {
        let o = opts_of(&opts, "span.update(options)")?;
        self.tracer.change(&self.id, o, false, None, &JsEnv);
        Ok(())
    }

    pub fn end(&self, #[wasm_bindgen(unchecked_optional_param_type = "SpanOptions")] opts: JsValue) -> Result<(), JsValue> {
        let o = opts_of(&opts, "span.end(options)")?;
        self.tracer.change(&self.id, o, true, None, &JsEnv);
        Ok(())
    }

    /// Records `error` on the span (`{ error, endSpan = true }`).
    pub fn error(&self, #[wasm_bindgen(unchecked_param_type = "{ error: unknown; endSpan?: boolean }")] opts: JsValue) -> Result<(), JsValue> {
        let error = Reflect::get(&opts, &"error".into()).unwrap_or(JsValue::UNDEFINED);
        let end = Reflect::get(&opts, &"endSpan".into()).ok().and_then(|v| v.as_bool()).unwrap_or(true);
        let text = |k: &str| Reflect::get(&error, &k.into()).ok().and_then(|v| v.as_string());
        let info = ErrorInfo {
            name: text("name").unwrap_or_else(|| "Error".into()),
            message: text("message").or_else(|| error.as_string()).unwrap_or_default(),
            code: text("code"),
        };
        self.tracer.change(&self.id, SpanOpts::default(), end, Some(info), &JsEnv);
        Ok(())
    }
}

impl SpanHandle {
    fn make(&self, opts: JsValue, event: bool, field: &str) -> Result<SpanHandle, JsValue> {
        let o = opts_of(&opts, field)?;
        let kind = o.kind.clone().unwrap_or_else(|| "generic".into());
        let name = o.name.clone().unwrap_or_else(|| kind.clone());
        // A handle on a span that ended makes nothing (its `isValid` is false).
        let id = self.tracer.child(&self.id, o, event, &JsEnv).unwrap_or_default();
        Ok(SpanHandle::new(&self.tracer, id, name, kind))
    }
}

/// The OTLP/HTTP JSON body for exported spans (`startTime` / `endTime` in milliseconds), as text.
#[doc(hidden)]
#[wasm_bindgen(js_name = __otlpBody, skip_typescript)]
pub fn otlp_body(spans: Array, service_name: String) -> Result<String, JsValue> {
    let mut list = Vec::new();
    for s in spans.iter() {
        let v = to_json(&s, "spans").map_err(|e| super::convert::error_to_js(&e))?;
        list.push(Span::from_json(&v));
    }
    Ok(crate::core::tracing::otlp::body(&list, &service_name).to_string())
}
