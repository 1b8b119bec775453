//! `observability`, `tracingOptions`, `tracingContext` and `telemetry` (SPEC §16–17): read once,
//! then each traced turn gets a core `Tracer` whose events go to the user's exporters here.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Array, Date, Function, Object, Promise, Reflect};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::env::Env as _;
use super::convert::{error_to_js, from_json, js_kind, read, to_json, type_error};
use crate::core::tracing::{padded_id, set_path, at_path, EventKind, Sampling, Span, SpanExporter, TraceRun, Tracer};

#[wasm_bindgen(typescript_custom_section)]
const TS_TRACING: &'static str = r#"
/** What a span handle makes or changes (SPEC §16.4). */
export interface SpanOptions {
  type?: string;
  name?: string;
  input?: unknown;
  output?: unknown;
  attributes?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

/** A span as an exporter gets it (SPEC §16.1). */
export interface ExportedSpan {
  id: string;
  traceId: string;
  parentSpanId?: string;
  externalParentSpanId?: string;
  name: string;
  type: 'agent_run' | 'model_generation' | 'model_step' | 'tool_call' | 'processor_run' | 'scorer_run' | 'scorer_step' | 'generic' | (string & {});
  entityType?: string;
  entityId?: string;
  entityName?: string;
  startTime: Date;
  endTime?: Date;
  attributes: Record<string, unknown>;
  metadata: Record<string, unknown>;
  tags?: string[];
  input?: unknown;
  output?: unknown;
  errorInfo?: { name: string; message: string; code?: string };
  requestContext?: Record<string, unknown>;
  isEvent: boolean;
  isRootSpan: boolean;
}

export interface TracingEvent {
  type: 'span_started' | 'span_updated' | 'span_ended';
  exportedSpan: ExportedSpan;
}

/** A score of a traced run, as `onScoreEvent` gets it (SPEC §14.2). */
export interface ScoreEvent {
  type: 'score';
  score: {
    scoreId: string;
    timestamp: Date;
    /** The scored run's trace and `agent_run` span. */
    traceId: string;
    spanId: string;
    scorerId: string;
    scorerName: string;
    scoreSource: 'live';
    score: number;
    reason?: string;
    /** The trace of the scorer's own `scorer_run` span. */
    scoreTraceId?: string;
    targetEntityType: 'agent';
    metadata: Record<string, unknown>;
  };
}

/** Where a run's spans go: any object with `exportTracingEvent` (may return a promise). */
export interface TracingExporter {
  name?: string;
  exportTracingEvent(event: TracingEvent): void | Promise<void>;
  /** Gets the scores of traced runs (errors are logged once and never fail anything). */
  onScoreEvent?(event: ScoreEvent): void | Promise<void>;
  flush?(): Promise<void>;
  shutdown?(): Promise<void>;
}

/** `observability` of `new Agent` / `new Mastra` (or an `Observability`). */
export interface ObservabilityConfig {
  serviceName?: string;
  exporters: TracingExporter[];
  sampling?: { type: 'always' | 'never' } | { type: 'ratio'; probability: number };
}

export interface AgentConfig {
  /** Traces the agent's runs into these exporters (SPEC §16); the agent's own wins over its Mastra's. */
  observability?: ObservabilityConfig | { configs: Record<string, ObservabilityConfig> };
}

export interface MastraConfig {
  /** The exporters of its agents that have no `observability` of their own. */
  observability?: ObservabilityConfig | { configs: Record<string, ObservabilityConfig> };
}

export interface FullOutput {
  /** The run's trace id (32 hex) when it is traced. */
  traceId?: string;
  /** The run's `agent_run` span id (16 hex) when it is traced. */
  spanId?: string;
}

export interface ToolExecutionContext {
  /** `{ currentSpan }` on the call's `tool_call` span when the run is traced, else `{}`. */
  tracingContext: { currentSpan?: SpanHandle };
}
"#;

/// One exporter and whether its failure was told already.
struct Exporter {
    object: JsValue,
    name: String,
    warned: Rc<Cell<bool>>,
    /// Whether its `onScoreEvent`'s failure was told already.
    score_warned: Rc<Cell<bool>>,
}

/// The user's exporters of one `observability` config.
pub(crate) struct JsExporters {
    list: Vec<Exporter>,
}

/// An agent's own `observability` and its container's.
pub(crate) type ObservabilityPair = (Option<Rc<Observability>>, Option<Rc<Observability>>);

/// `observability` on `new Agent` / `new Mastra`, read.
pub(crate) struct Observability {
    pub exporters: Rc<JsExporters>,
    pub sampling: Sampling,
}

/// The span as an exporter sees it: `startTime` / `endTime` are Dates.
pub(crate) fn exported_span(span: &Span) -> JsValue {
    let js = from_json(&span.to_json());
    let _ = Reflect::set(&js, &"startTime".into(), &Date::new(&span.start_ms.into()));
    if let Some(e) = span.end_ms {
        let _ = Reflect::set(&js, &"endTime".into(), &Date::new(&e.into()));
    }
    js
}

/// One exporter's `method`'s failure (a throw or a rejected promise), told once per exporter
/// and method; it never fails the run.
fn exporter_failed(warned: &Cell<bool>, name: &str, method: &str, error: &JsValue) {
    if !warned.replace(true) {
        super::report::callback_failed(&format!("exporter '{name}' {method}"), error);
    }
}

impl JsExporters {
    /// Calls `method(event)` on every exporter that has it.
    fn call_each(&self, method: &'static str, event: &JsValue, warned: fn(&Exporter) -> &Rc<Cell<bool>>) {
        for e in &self.list {
            let Ok(f) = Reflect::get(&e.object, &method.into()).and_then(|f| f.dyn_into::<Function>()) else { continue };
            match f.call1(&e.object, event) {
                Err(err) => exporter_failed(warned(e), &e.name, method, &err),
                Ok(ret) if ret.has_type::<Promise>() => {
                    let (flag, name) = (warned(e).clone(), e.name.clone());
                    let on_err = Closure::once_into_js(move |err: JsValue| exporter_failed(&flag, &name, method, &err));
                    if let Ok(catch) = Reflect::get(&ret, &"catch".into()).and_then(|c| c.dyn_into::<Function>()) {
                        let _ = catch.call1(&ret, &on_err);
                    }
                }
                Ok(_) => {}
            }
        }
    }
}

impl SpanExporter for JsExporters {
    fn export(&self, kind: EventKind, span: &Span) {
        let event = Object::new();
        let _ = Reflect::set(&event, &"type".into(), &kind.as_str().into());
        let _ = Reflect::set(&event, &"exportedSpan".into(), &exported_span(span));
        self.call_each("exportTracingEvent", &event, |e| &e.warned);
    }

    /// `onScoreEvent(event)` (SPEC §14.2); `score.timestamp` is a Date.
    fn score(&self, event: &Value) {
        let js = from_json(event);
        if let Ok(score) = Reflect::get(&js, &"score".into()) {
            if let Some(ms) = event.pointer("/score/timestamp").and_then(Value::as_f64) {
                let _ = Reflect::set(&score, &"timestamp".into(), &Date::new(&ms.into()));
            }
        }
        self.call_each("onScoreEvent", &js, |e| &e.score_warned);
    }
}

/// `observability` as `{ serviceName, exporters, sampling }`, or the reference's
/// `new Observability({ configs: { default: {...} } })` (the `default` config, else the first).
/// `None` when absent or without exporters (nothing is traced).
pub(crate) fn parse_observability(v: &JsValue, field: &str) -> Result<Option<Rc<Observability>>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if !v.is_object() {
        return Err(type_error(field, &format!("expected {{ serviceName?, exporters, sampling? }} or an Observability, got {}", js_kind(v))));
    }
    let configs = read(v, "configs", field)?;
    let (config, path) = if configs.is_object() {
        let d = read(&configs, "default", &format!("{field}.configs"))?;
        if d.is_object() {
            (d, format!("{field}.configs.default"))
        } else {
            let keys = Object::keys(configs.unchecked_ref::<Object>());
            let Some(k) = keys.get(0).as_string() else { return Ok(None) };
            (read(&configs, &k, &format!("{field}.configs"))?, format!("{field}.configs.{k}"))
        }
    } else {
        (v.clone(), field.to_string())
    };
    let service = read(&config, "serviceName", &path)?;
    let service_name = match service.as_string() {
        Some(s) if !s.is_empty() => s,
        _ if service.is_undefined() || service.is_null() => "wasm-agent".into(),
        _ => return Err(type_error(&format!("{path}.serviceName"), &format!("expected a non-empty string, got {}", js_kind(&service)))),
    };
    let list = read(&config, "exporters", &path)?;
    let mut exporters = Vec::new();
    if !list.is_undefined() && !list.is_null() {
        if !Array::is_array(&list) {
            return Err(type_error(&format!("{path}.exporters"), &format!("expected an array of exporters, got {}", js_kind(&list))));
        }
        for (i, e) in Array::from(&list).iter().enumerate() {
            let at = format!("{path}.exporters[{i}]");
            if !read(&e, "exportTracingEvent", &at)?.is_function() {
                return Err(type_error(&at, "expected an exporter: an object with exportTracingEvent(event)"));
            }
            let name = read(&e, "name", &at)?.as_string().unwrap_or_else(|| format!("exporter {i}"));
            // An OtlpExporter takes the config's service name unless it was given one.
            if let Ok(f) = Reflect::get(&e, &"__attach".into()).and_then(|f| f.dyn_into::<Function>()) {
                let _ = f.call1(&e, &service_name.clone().into());
            }
            exporters.push(Exporter { object: e, name, warned: Rc::default(), score_warned: Rc::default() });
        }
    }
    if exporters.is_empty() {
        return Ok(None);
    }
    let sampling_js = read(&config, "sampling", &path)?;
    let sampling_json = to_json(&sampling_js, &format!("{path}.sampling")).map_err(|e| error_to_js(&e))?;
    let sampling = Sampling::parse(&sampling_json, &format!("{path}.sampling")).map_err(|m| type_error(&format!("{path}.sampling"), &m))?;
    Ok(Some(Rc::new(Observability { exporters: Rc::new(JsExporters { list: exporters }), sampling })))
}

/// `tracingOptions`, `tracingContext` and `telemetry` of one call, checked.
#[derive(Clone, Default)]
pub(crate) struct TraceOptions {
    pub trace_id: Option<String>,
    pub parent_span_id: Option<String>,
    pub tags: Vec<String>,
    pub metadata: Map<String, Value>,
    pub request_context_keys: Vec<String>,
    pub root_span_name: Option<String>,
    pub hide_input: bool,
    pub hide_output: bool,
    /// `tracingContext.currentSpan`: a span of a live run here, or a foreign `(traceId, id)`.
    pub parent: Option<Parent>,
    pub telemetry: Option<Telemetry>,
}

#[derive(Clone)]
pub(crate) enum Parent {
    Ours(Rc<Tracer>, String),
    Foreign(String, String),
}

#[derive(Clone, Default)]
pub(crate) struct Telemetry {
    pub function_id: Option<String>,
    pub metadata: Map<String, Value>,
    pub record_inputs: bool,
    pub record_outputs: bool,
}

fn opt_bool(v: &Value, key: &str, field: &str) -> Result<Option<bool>, JsValue> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(type_error(&format!("{field}.{key}"), &format!("expected a boolean, got {}", crate::core::input::kind(other)))),
    }
}

fn opt_string(v: &Value, key: &str, field: &str) -> Result<Option<String>, JsValue> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(type_error(&format!("{field}.{key}"), &format!("expected a string, got {}", crate::core::input::kind(other)))),
    }
}

fn opt_object(v: &Value, key: &str, field: &str) -> Result<Map<String, Value>, JsValue> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(other) => Err(type_error(&format!("{field}.{key}"), &format!("expected an object, got {}", crate::core::input::kind(other)))),
    }
}

fn string_list(v: &Value, key: &str, field: &str) -> Result<Vec<String>, JsValue> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_owned).ok_or_else(|| type_error(&format!("{field}.{key}"), "expected an array of strings")))
            .collect(),
        Some(other) => Err(type_error(&format!("{field}.{key}"), &format!("expected an array of strings, got {}", crate::core::input::kind(other)))),
    }
}

/// Reads the call's tracing options (the call's, else `defaultOptions`' via `opt`).
pub(crate) fn parse_trace_options(opt: &dyn Fn(&str) -> Result<JsValue, JsValue>) -> Result<TraceOptions, JsValue> {
    let mut t = TraceOptions::default();
    const F: &str = "options.tracingOptions";
    let to = opt("tracingOptions")?;
    if !(to.is_undefined() || to.is_null()) {
        if !to.is_object() || Array::is_array(&to) {
            return Err(type_error(F, &format!("expected an object, got {}", js_kind(&to))));
        }
        let v = to_json(&to, F).map_err(|e| error_to_js(&e))?;
        let id = |key: &str, width: usize| -> Result<Option<String>, JsValue> {
            match opt_string(&v, key, F)? {
                None => Ok(None),
                Some(s) => padded_id(&s, width)
                    .map(Some)
                    .ok_or_else(|| type_error(&format!("{F}.{key}"), &format!("expected 1 to {width} hex characters (not all zero), got '{s}'"))),
            }
        };
        t.trace_id = id("traceId", 32)?;
        t.parent_span_id = id("parentSpanId", 16)?;
        t.tags = string_list(&v, "tags", F)?;
        t.metadata = opt_object(&v, "metadata", F)?;
        t.request_context_keys = string_list(&v, "requestContextKeys", F)?;
        t.root_span_name = opt_string(&v, "rootSpanName", F)?;
        t.hide_input = opt_bool(&v, "hideInput", F)?.unwrap_or(false);
        t.hide_output = opt_bool(&v, "hideOutput", F)?.unwrap_or(false);
    }
    let tc = opt("tracingContext")?;
    if !(tc.is_undefined() || tc.is_null()) {
        const C: &str = "options.tracingContext";
        if !tc.is_object() {
            return Err(type_error(C, &format!("expected {{ currentSpan }}, got {}", js_kind(&tc))));
        }
        let span = read(&tc, "currentSpan", C)?;
        if let Some((tracer, id)) = super::span_handle::lookup(&span) {
            t.parent = Some(Parent::Ours(tracer, id));
        } else if span.is_object() {
            let s = |k: &str| read(&span, k, &format!("{C}.currentSpan")).map(|v| v.as_string());
            match (s("traceId")?.and_then(|x| padded_id(&x, 32)), s("id")?.and_then(|x| padded_id(&x, 16))) {
                (Some(trace), Some(id)) => t.parent = Some(Parent::Foreign(trace, id)),
                _ => return Err(type_error(&format!("{C}.currentSpan"), "expected a span with hex traceId and id")),
            }
        }
    }
    let tel = opt("telemetry")?;
    if !(tel.is_undefined() || tel.is_null() || tel.as_bool() == Some(false)) {
        const T: &str = "options.telemetry";
        if !tel.is_object() {
            return Err(type_error(T, &format!("expected {{ isEnabled, recordInputs, recordOutputs, functionId, metadata }}, got {}", js_kind(&tel))));
        }
        if !read(&tel, "tracer", T)?.is_undefined() {
            warn_once(&TRACER_WARNED, "wasm-agent: telemetry.tracer (an OpenTelemetry Tracer) is not used; spans go to the observability exporters (e.g. new OtlpExporter({ url })).");
        }
        let v = to_json(&tel, T).map_err(|e| error_to_js(&e))?;
        if opt_bool(&v, "isEnabled", T)?.unwrap_or(false) {
            t.telemetry = Some(Telemetry {
                function_id: opt_string(&v, "functionId", T)?,
                metadata: opt_object(&v, "metadata", T)?,
                record_inputs: opt_bool(&v, "recordInputs", T)?.unwrap_or(true),
                record_outputs: opt_bool(&v, "recordOutputs", T)?.unwrap_or(true),
            });
        }
    }
    Ok(t)
}

thread_local! {
    static TRACER_WARNED: Cell<bool> = const { Cell::new(false) };
    static NO_EXPORTER_WARNED: Cell<bool> = const { Cell::new(false) };
}

fn warn_once(flag: &'static std::thread::LocalKey<Cell<bool>>, line: &str) {
    if !flag.with(|f| f.replace(true)) {
        super::report::warn(line);
    }
}

/// A request context value at `path`: a `Map` / `RequestContext` (its `get`, the whole path
/// first, then the first segment and the rest in the value), or a plain object.
fn context_value(ctx: &JsValue, path: &str) -> Option<Value> {
    if !ctx.is_object() {
        return None;
    }
    let get = Reflect::get(ctx, &"get".into()).ok().and_then(|f| f.dyn_into::<Function>().ok());
    let whole = match &get {
        Some(f) => f.call1(ctx, &path.into()).ok(),
        None => None,
    };
    if let Some(v) = whole.filter(|v| !v.is_undefined()) {
        return to_json(&v, "requestContext").ok();
    }
    let (first, rest) = path.split_once('.').map_or((path, None), |(a, b)| (a, Some(b)));
    let top = match &get {
        Some(f) => f.call1(ctx, &first.into()).ok()?,
        None => Reflect::get(ctx, &first.into()).ok()?,
    };
    if top.is_undefined() {
        return None;
    }
    let v = to_json(&top, "requestContext").ok()?;
    match rest {
        None => Some(v),
        Some(r) => at_path(&v, r).cloned(),
    }
}

/// What a turn needs to be traced.
pub(crate) struct TurnTrace<'a> {
    pub observability: Option<&'a Rc<Observability>>,
    pub options: &'a TraceOptions,
    pub run_id: &'a str,
    pub agent_id: &'a str,
    pub agent_name: &'a str,
    pub instructions: Option<String>,
    pub model_id: &'a str,
    pub provider: &'a str,
    pub request_context: &'a JsValue,
    pub input: Value,
    pub secrets: Vec<String>,
}

fn random_id(n: usize) -> String {
    crate::core::tracing::new_id(n, &mut |b| crate::platform::JsEnv.random_bytes(b))
}

/// The tracer of a turn, when it is traced: an exporter is configured (the agent's, the
/// container's, or the parent span's run) and sampling keeps it.
pub(crate) fn tracer_for(t: TurnTrace<'_>) -> Option<Rc<Tracer>> {
    let o = t.options;
    let (exporter, sampling): (Rc<dyn SpanExporter>, Sampling) = match (&o.parent, t.observability) {
        (_, Some(obs)) => (obs.exporters.clone(), obs.sampling),
        (Some(Parent::Ours(parent, _)), None) => (parent.exporter(), Sampling::Always),
        _ => {
            if o.telemetry.is_some() {
                warn_once(&NO_EXPORTER_WARNED, "wasm-agent: telemetry needs an observability exporter to go anywhere: new Agent({ observability: { exporters: [new OtlpExporter({ url })] } }).");
            }
            return None;
        }
    };
    let mut r = [0u8; 8];
    crate::platform::JsEnv.random_bytes(&mut r);
    if !sampling.keeps((u64::from_le_bytes(r) >> 11) as f64 / (1u64 << 53) as f64) {
        return None;
    }
    let (trace_id, parent, external) = match &o.parent {
        Some(Parent::Ours(p, id)) => (p.trace_id().to_string(), Some(id.clone()), None),
        Some(Parent::Foreign(trace, id)) => (trace.clone(), None, Some(id.clone())),
        None => (o.trace_id.clone().unwrap_or_else(|| random_id(16)), None, o.parent_span_id.clone()),
    };
    let mut metadata = Map::new();
    metadata.insert("runId".into(), t.run_id.into());
    metadata.extend(o.metadata.clone());
    let mut context = Map::new();
    for key in &o.request_context_keys {
        if let Some(v) = context_value(t.request_context, key) {
            set_path(&mut metadata, key, v.clone());
            set_path(&mut context, key, v);
        }
    }
    let mut root_metadata = Map::new();
    let (mut hide_input, mut hide_output) = (o.hide_input, o.hide_output);
    if let Some(tel) = &o.telemetry {
        if let Some(f) = &tel.function_id {
            root_metadata.insert("functionId".into(), f.clone().into());
        }
        root_metadata.insert("telemetry".into(), Value::Object(tel.metadata.clone()));
        hide_input |= !tel.record_inputs;
        hide_output |= !tel.record_outputs;
    }
    Some(Tracer::new(TraceRun {
        exporter,
        trace_id,
        root_id: random_id(8),
        parent_span_id: parent,
        external_parent_span_id: external,
        root_name: o.root_span_name.clone(),
        agent_id: t.agent_id.into(),
        agent_name: t.agent_name.into(),
        instructions: t.instructions,
        model_id: t.model_id.into(),
        provider: t.provider.into(),
        tags: o.tags.clone(),
        metadata,
        root_metadata,
        request_context: (!o.request_context_keys.is_empty()).then_some(Value::Object(context)),
        hide_input,
        hide_output,
        input: t.input,
        secrets: t.secrets,
    }))
}

/// `tracingContext` for a tool's `execute`: `{ currentSpan }` on its `tool_call` span.
pub(crate) fn tool_context(tracer: Option<&Rc<Tracer>>) -> Option<super::tools::TracingContextFn> {
    let t = tracer?.clone();
    Some(Rc::new(move |call_id: &str| {
        let id = t.span_of_tool(call_id);
        let kind = if id == t.root_id() { "agent_run" } else { "tool_call" };
        super::span_handle::SpanHandle::context(&t, id, kind, kind)
    }))
}

/// `tracingContext` for processors: `{ currentSpan }` on the run's `agent_run` span, else `{}`.
pub(crate) fn root_context(tracer: Option<&Rc<Tracer>>) -> JsValue {
    match tracer {
        Some(t) => super::span_handle::SpanHandle::context(t, t.root_id().to_string(), "agent_run", "agent_run"),
        None => Object::new().into(),
    }
}
