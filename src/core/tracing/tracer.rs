//! The span tree of one run (SPEC §16.2), built from what the run already says: its chunks (steps,
//! tool calls and results) and its outcome. `agent_run` → `model_generation` → `model_step` →
//! `tool_call`; spans made from a `tracingContext` handle nest where they were made. A span ends
//! after its children; a failed or aborted run ends every open span with `errorInfo`.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::{new_id, redact, ErrorInfo, EventKind, Span, SpanExporter};
use crate::core::chunk::Chunk;
use crate::core::env::{Env, LocalFuture};
use crate::core::model::Usage;
use crate::core::run::{RunOutcome, Sink};
use crate::core::step::StepResult;

/// What the bindings decided for a traced run: where the events go, the ids, and the options.
pub struct TraceRun {
    pub exporter: Rc<dyn SpanExporter>,
    pub trace_id: String,
    /// The `agent_run` span's id (known before the run starts: `out.spanId`).
    pub root_id: String,
    /// A Mastra parent (`tracingContext.currentSpan`), or an external one (OTLP only).
    pub parent_span_id: Option<String>,
    pub external_parent_span_id: Option<String>,
    pub root_name: Option<String>,
    pub agent_id: String,
    pub agent_name: String,
    pub instructions: Option<String>,
    pub model_id: String,
    pub provider: String,
    pub tags: Vec<String>,
    /// Merged into every span's metadata (`runId`, `tracingOptions.metadata`, request context keys).
    pub metadata: Map<String, Value>,
    /// The root's metadata besides (telemetry's `functionId`, `telemetry`).
    pub root_metadata: Map<String, Value>,
    /// `requestContext` of the root: only the listed keys.
    pub request_context: Option<Value>,
    pub hide_input: bool,
    pub hide_output: bool,
    /// The messages as given.
    pub input: Value,
    /// Strings that never leave the run (its API key, key header values).
    pub secrets: Vec<String>,
}

/// What a span handle creates or changes (`createChildSpan`, `update`, `end`).
#[derive(Default)]
pub struct SpanOpts {
    pub kind: Option<String>,
    pub name: Option<String>,
    pub input: Option<Value>,
    pub output: Option<Value>,
    pub attributes: Option<Map<String, Value>>,
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Default)]
struct State {
    open: Vec<Span>,
    generation: Option<String>,
    /// The generation span, sent with the first step.
    pending: Option<Span>,
    step: Option<String>,
    /// Open tool spans by tool call id.
    tools: Vec<(String, String)>,
    steps_started: u32,
    tripwire: Option<Value>,
    last_step: Option<(String, Option<String>, Option<String>)>,
    /// Tool descriptions by name.
    descriptions: Vec<(String, String)>,
    ended: bool,
    /// The step span was opened before its `step-start` (by a `processInputStep` span).
    early_step: bool,
    /// Open `processOutputStream` spans: processor id, span id.
    streams: Vec<(String, String)>,
}

type Events = Vec<(EventKind, Span)>;

/// One run's tracer. Shared (`Rc`) between the run, its tool host and the span handles.
pub struct Tracer {
    run: TraceRun,
    state: RefCell<State>,
    scope: Option<Scope>,
}

/// What every span of a trace that is not an agent run's carries (a scorer's: its entity and
/// `scorerId` / `scorerName`).
#[derive(Clone)]
struct Scope {
    entity: (String, String, String),
    attributes: Map<String, Value>,
}

#[cfg(feature = "processors")]
mod processor_spans;
#[cfg(feature = "scorers")]
mod scorer_spans;
#[cfg(feature = "processors")]
pub use processor_spans::processor_span_name;

/// The facts of the run the root and generation spans carry.
pub struct RunFacts<'a> {
    pub tools: Vec<(&'a str, Option<&'a str>)>,
    pub max_steps: u32,
    pub thread_id: Option<&'a str>,
    pub parameters: Map<String, Value>,
    pub messages: Value,
}

pub fn usage_json(u: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("inputTokens".into(), u.input_tokens.unwrap_or(0).into());
    m.insert("outputTokens".into(), u.output_tokens.unwrap_or(0).into());
    if let Some(c) = u.cached_input_tokens {
        m.insert("inputDetails".into(), json!({ "cacheRead": c }));
    }
    if let Some(r) = u.reasoning_tokens {
        m.insert("outputDetails".into(), json!({ "reasoning": r }));
    }
    Value::Object(m)
}

fn attrs(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    pairs.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_string(), v)).collect()
}

impl Tracer {
    pub fn new(run: TraceRun) -> Rc<Tracer> {
        Rc::new(Tracer { run, state: RefCell::new(State::default()), scope: None })
    }

    pub fn trace_id(&self) -> &str {
        &self.run.trace_id
    }

    pub fn root_id(&self) -> &str {
        &self.run.root_id
    }

    /// Where the run's events go (a run nested under one of this run's spans shares it).
    pub fn exporter(&self) -> Rc<dyn SpanExporter> {
        self.run.exporter.clone()
    }

    fn span(&self, env: &dyn Env, kind: &str, name: String, parent: Option<String>) -> Span {
        let (entity, attributes) = self.scope.clone().map_or((None, Map::new()), |s| (Some(s.entity), s.attributes));
        Span {
            entity,
            attributes,
            id: new_id(8, &mut |b| env.random_bytes(b)),
            trace_id: self.run.trace_id.clone(),
            parent_span_id: parent,
            name,
            kind: kind.into(),
            start_ms: env.now_ms(),
            metadata: self.run.metadata.clone(),
            ..Default::default()
        }
    }

    /// What an exporter gets of `span`: hidden parts dropped, secrets redacted.
    fn prepared(&self, span: &Span) -> Span {
        let mut s = span.clone();
        let secrets = &self.run.secrets;
        if self.run.hide_input {
            s.input = None;
        }
        if self.run.hide_output {
            s.output = None;
        }
        for v in [&mut s.input, &mut s.output, &mut s.request_context].into_iter().flatten() {
            redact::redact(v, secrets);
        }
        redact::redact_map(&mut s.attributes, secrets);
        redact::redact_map(&mut s.metadata, secrets);
        if let Some(e) = &mut s.error_info {
            let mut m = Value::String(std::mem::take(&mut e.message));
            redact::redact(&mut m, secrets);
            e.message = m.as_str().unwrap_or_default().to_string();
        }
        s
    }

    /// Hands the events over, after the state's borrow is released.
    fn send(&self, events: Events) {
        for (kind, span) in events {
            self.run.exporter.export(kind, &self.prepared(&span));
        }
    }

    fn open(&self, span: Span, out: &mut Events) -> String {
        let id = span.id.clone();
        out.push((EventKind::Started, span.clone()));
        self.state.borrow_mut().open.push(span);
        id
    }

    /// Ends `id` after its open children; `error` goes on every span it ends.
    fn close(&self, id: &str, now: f64, error: Option<&ErrorInfo>, out: &mut Events) {
        let kids: Vec<String> = self.state.borrow().open.iter().filter(|s| s.parent_span_id.as_deref() == Some(id)).map(|s| s.id.clone()).collect();
        for k in kids {
            self.close(&k, now, error, out);
        }
        let mut st = self.state.borrow_mut();
        if let Some(pos) = st.open.iter().position(|s| s.id == id) {
            let mut s = st.open.remove(pos);
            s.end_ms = Some(now);
            if s.error_info.is_none() {
                s.error_info = error.cloned();
            }
            out.push((EventKind::Ended, s));
        }
    }

    fn edit(&self, id: &str, f: impl FnOnce(&mut Span)) -> bool {
        let mut st = self.state.borrow_mut();
        match st.open.iter_mut().find(|s| s.id == id) {
            Some(s) => {
                f(s);
                true
            }
            None => false,
        }
    }

    /// Starts the `agent_run` span.
    pub fn start_run(&self, facts: RunFacts<'_>, env: &dyn Env) {
        let r = &self.run;
        let name = r.root_name.clone().unwrap_or_else(|| format!("agent run: '{}'", r.agent_id));
        let mut root = self.span(env, "agent_run", name, r.parent_span_id.clone());
        root.id = r.root_id.clone();
        root.external_parent_span_id = r.external_parent_span_id.clone();
        root.is_root = r.parent_span_id.is_none();
        root.entity = Some(("agent".into(), r.agent_id.clone(), r.agent_name.clone()));
        let tools: Vec<Value> = facts.tools.iter().map(|(n, _)| Value::String((*n).into())).collect();
        root.attributes = attrs(vec![
            ("instructions", r.instructions.clone().map_or(Value::Null, Value::String)),
            ("availableTools", Value::Array(tools.clone())),
            ("maxSteps", facts.max_steps.into()),
            ("conversationId", facts.thread_id.map_or(Value::Null, |t| t.into())),
        ]);
        root.metadata.extend(r.root_metadata.clone());
        root.tags = (!r.tags.is_empty()).then(|| r.tags.clone());
        root.input = Some(r.input.clone());
        root.request_context = r.request_context.clone();
        let mut gen = self.span(env, "model_generation", format!("llm: '{}'", r.model_id), Some(r.root_id.clone()));
        gen.input = Some(json!({ "messages": facts.messages }));
        gen.attributes = attrs(vec![
            ("model", r.model_id.clone().into()),
            ("provider", r.provider.clone().into()),
            ("streaming", true.into()),
            ("parameters", Value::Object(facts.parameters)),
            ("tools", Value::Array(tools)),
        ]);
        let mut out = Vec::new();
        self.open(root, &mut out);
        // The generation starts with the first step (a run that fails before has none).
        let mut st = self.state.borrow_mut();
        st.descriptions = facts.tools.iter().filter_map(|(n, d)| Some((n.to_string(), (*d)?.to_string()))).collect();
        st.generation = Some(gen.id.clone());
        st.pending = Some(gen);
        drop(st);
        self.send(out);
    }

    /// Follows one chunk of the run.
    pub fn observe(&self, chunk: &Chunk, env: &dyn Env) {
        let mut out = Vec::new();
        match chunk {
            Chunk::StepStart { request_body, .. } => {
                let input = serde_json::from_str(request_body).unwrap_or_else(|_| Value::String(request_body.clone()));
                let early = std::mem::take(&mut self.state.borrow_mut().early_step);
                let id = if early { self.state.borrow().step.clone() } else { None };
                let id = id.unwrap_or_else(|| self.open_step(env, &mut out));
                self.edit(&id, |s| s.input = Some(input));
            }
            Chunk::ToolCall(call) => {
                let parent = self.state.borrow().step.clone().or_else(|| Some(self.run.root_id.clone()));
                let mut s = self.span(env, "tool_call", format!("tool: '{}'", call.tool_name), parent);
                s.entity = Some(("tool".into(), call.tool_name.clone(), call.tool_name.clone()));
                s.input = Some(call.args.clone());
                let description = self.state.borrow().descriptions.iter().find(|(n, _)| *n == call.tool_name).map(|(_, d)| d.clone());
                s.attributes = attrs(vec![
                    ("toolType", "tool".into()),
                    ("toolDescription", description.map_or(Value::Null, Value::String)),
                    ("toolCallId", call.tool_call_id.clone().into()),
                ]);
                let id = self.open(s, &mut out);
                self.state.borrow_mut().tools.push((call.tool_call_id.clone(), id));
            }
            Chunk::ToolResult { call, result, is_error } => self.end_tool(&call.tool_call_id, Some(result.clone()), !is_error, None, env, &mut out),
            Chunk::ToolError { call, message } => {
                let e = ErrorInfo { name: "ToolError".into(), message: message.clone(), code: None };
                self.end_tool(&call.tool_call_id, None, false, Some(e), env, &mut out)
            }
            Chunk::ToolOutputDenied { call, .. } => self.end_tool(&call.tool_call_id, None, false, None, env, &mut out),
            Chunk::StepFinish { step, is_continued, .. } => self.end_step(step, *is_continued, env, &mut out),
            Chunk::Tripwire(t) => {
                self.state.borrow_mut().tripwire = Some(json!({ "reason": t.reason, "processorId": t.processor_id, "retry": t.retry }));
            }
            _ => {}
        }
        self.send(out);
    }

    /// Opens the next `model_step` span (and before the first, the generation span); its id.
    fn open_step(&self, env: &dyn Env, out: &mut Events) -> String {
        // The pending generation span goes out with its first step.
        let pending = self.state.borrow_mut().pending.take();
        if let Some(mut g) = pending {
            g.start_ms = env.now_ms();
            self.open(g, out);
        }
        let (n, parent) = {
            let st = self.state.borrow();
            (st.steps_started, st.generation.clone())
        };
        let mut step = self.span(env, "model_step", format!("step: {n}"), parent);
        step.attributes = attrs(vec![("stepIndex", n.into())]);
        let id = self.open(step, out);
        let mut st = self.state.borrow_mut();
        st.step = Some(id.clone());
        st.steps_started += 1;
        id
    }

    fn end_tool(&self, call_id: &str, output: Option<Value>, success: bool, error: Option<ErrorInfo>, env: &dyn Env, out: &mut Events) {
        let id = {
            let mut st = self.state.borrow_mut();
            let Some(pos) = st.tools.iter().position(|(c, _)| c == call_id) else { return };
            st.tools.remove(pos).1
        };
        self.edit(&id, |s| {
            s.output = output;
            s.attributes.insert("success".into(), success.into());
            s.error_info = error;
        });
        self.close(&id, env.now_ms(), None, out);
    }

    fn end_step(&self, step: &StepResult, is_continued: bool, env: &dyn Env, out: &mut Events) {
        let Some(id) = self.state.borrow_mut().step.take() else { return };
        let finish = step.finish_reason.as_str();
        self.edit(&id, |s| {
            let calls: Vec<Value> = step.tool_calls.iter().map(|c| c.to_json()).collect();
            s.output = Some(json!({ "text": step.text, "toolCalls": calls }));
            s.attributes.insert("usage".into(), usage_json(&step.usage));
            s.attributes.insert("finishReason".into(), finish.into());
            s.attributes.insert("isContinued".into(), is_continued.into());
        });
        self.state.borrow_mut().last_step = Some((finish.into(), step.response.model_id.clone(), step.response.id.clone()));
        self.close(&id, env.now_ms(), None, out);
    }

    /// Ends the run's open spans: with `errorInfo` for a failed or aborted run.
    pub fn end_run(&self, outcome: &RunOutcome, env: &dyn Env) {
        if std::mem::replace(&mut self.state.borrow_mut().ended, true) {
            return;
        }
        let error = if let Some(e) = &outcome.error {
            Some(ErrorInfo { name: e.name().into(), message: e.to_string(), code: e.storage_code().map(str::to_owned) })
        } else {
            outcome.aborted.as_ref().map(|reason| ErrorInfo {
                name: "AbortError".into(),
                message: reason.clone().unwrap_or_else(|| "The run was aborted".into()),
                code: None,
            })
        };
        let now = env.now_ms();
        let (gen, last, tripwire) = {
            let mut st = self.state.borrow_mut();
            // A generation that never started (no step) is not exported.
            st.pending = None;
            (st.generation.clone(), st.last_step.clone(), st.tripwire.take())
        };
        let text = outcome.text();
        let mut out = Vec::new();
        if let Some(g) = gen {
            let reasoning = outcome.reasoning_text();
            let calls: Vec<Value> = outcome.steps.iter().flat_map(|s| s.tool_calls.iter().map(|c| c.to_json())).collect();
            self.edit(&g, |s| {
                let mut o = Map::new();
                o.insert("text".into(), text.clone().into());
                if !reasoning.is_empty() {
                    o.insert("reasoning".into(), reasoning.into());
                }
                if !calls.is_empty() {
                    o.insert("toolCalls".into(), Value::Array(calls));
                }
                s.output = Some(Value::Object(o));
                s.attributes.insert("usage".into(), usage_json(&outcome.total_usage));
                s.attributes.insert("finishReason".into(), outcome.finish_reason().as_str().into());
                if let Some((_, model, id)) = &last {
                    if let Some(m) = model {
                        s.attributes.insert("responseModel".into(), m.clone().into());
                    }
                    if let Some(id) = id {
                        s.attributes.insert("responseId".into(), id.clone().into());
                    }
                }
            });
        }
        let object = outcome.structured.as_ref().and_then(|s| s.object.clone());
        self.edit(&self.run.root_id, |s| {
            let mut o = Map::new();
            o.insert("text".into(), text.into());
            if let Some(obj) = object {
                o.insert("object".into(), obj);
            }
            s.output = Some(Value::Object(o));
            if let Some(t) = tripwire {
                s.attributes.insert("tripwireAbort".into(), t);
            }
        });
        self.close(&self.run.root_id.clone(), now, error.as_ref(), &mut out);
        // Spans of handles whose parent is gone end too.
        let rest: Vec<String> = self.state.borrow().open.iter().map(|s| s.id.clone()).collect();
        for id in rest {
            self.close(&id, now, error.as_ref(), &mut out);
        }
        self.send(out);
    }

    /// The span a tool call runs in (its `tool_call`), else the run's root.
    pub fn span_of_tool(&self, call_id: &str) -> String {
        let st = self.state.borrow();
        st.tools.iter().find(|(c, _)| c == call_id).map(|(_, s)| s.clone()).unwrap_or_else(|| self.run.root_id.clone())
    }

    /// The open step, else the root (where a processor's spans go).
    pub fn current_step(&self) -> String {
        self.state.borrow().step.clone().unwrap_or_else(|| self.run.root_id.clone())
    }

    /// Whether `id` is an open span of this run.
    pub fn is_open(&self, id: &str) -> bool {
        self.state.borrow().open.iter().any(|s| s.id == id)
    }

    /// `createChildSpan` / `createEventSpan` under `parent`; returns the new span's id (an event
    /// span is exported ended, once).
    pub fn child(&self, parent: &str, opts: SpanOpts, event: bool, env: &dyn Env) -> Option<String> {
        if !self.is_open(parent) {
            return None;
        }
        let kind = opts.kind.unwrap_or_else(|| "generic".into());
        let mut s = self.span(env, &kind, opts.name.unwrap_or_else(|| kind.clone()), Some(parent.into()));
        s.input = opts.input;
        s.output = opts.output;
        s.attributes.extend(opts.attributes.unwrap_or_default());
        s.metadata.extend(opts.metadata.unwrap_or_default());
        let id = s.id.clone();
        if event {
            s.is_event = true;
            s.end_ms = Some(s.start_ms);
            self.send(vec![(EventKind::Ended, s)]);
        } else {
            let mut out = Vec::new();
            self.open(s, &mut out);
            self.send(out);
        }
        Some(id)
    }

    /// `update` (and with `end`, `end` / `error`) of a handle's span.
    pub fn change(&self, id: &str, opts: SpanOpts, end: bool, error: Option<ErrorInfo>, env: &dyn Env) {
        let found = self.edit(id, |s| {
            if let Some(v) = opts.input {
                s.input = Some(v);
            }
            if let Some(v) = opts.output {
                s.output = Some(v);
            }
            s.attributes.extend(opts.attributes.unwrap_or_default());
            s.metadata.extend(opts.metadata.unwrap_or_default());
            if error.is_some() {
                s.error_info = error;
            }
        });
        if !found {
            return;
        }
        let mut out = Vec::new();
        if end {
            self.close(id, env.now_ms(), None, &mut out);
        } else if let Some(s) = self.state.borrow().open.iter().find(|s| s.id == id) {
            out.push((EventKind::Updated, s.clone()));
        }
        self.send(out);
    }
}

/// A sink that tells the tracer each chunk before passing it on.
pub struct TracingSink<'a> {
    pub inner: &'a dyn Sink,
    pub tracer: &'a Tracer,
    pub env: &'a dyn Env,
}

impl Sink for TracingSink<'_> {
    fn emit(&self, chunk: Chunk) {
        self.tracer.observe(&chunk, self.env);
        self.inner.emit(chunk);
    }

    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()> {
        self.inner.step_finished(step)
    }
    fn seq(&self) -> u64 {
        self.inner.seq()
    }
}
