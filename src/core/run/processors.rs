//! Processors (SPEC §13): objects of the host that see a run at five points and may change it or
//! stop it. The core owns the `Processor` trait and the order of the calls; the bindings wrap
//! JavaScript processor objects behind it, and built-in processors implement it in Rust.
//!
//! A processor method ends in one of three ways: it returns (its value, `None` for
//! `undefined`), it stops the run with `abort()` (a tripwire, `Halt::Abort`), or it throws
//! (`Halt::Threw`, a `ProcessorError`). Every call is raced against the run's abort flag, so a
//! method that never settles cannot hold a run the caller aborted. Nothing here holds a borrow
//! across a call.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

use serde_json::{json, Map, Value};

use super::processor_trace::{End, ProcessorTrace};
use super::Sink;
use crate::core::abort::AbortFlag;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::error::{AgentError, Stop};
use crate::core::hooks::StepOverrides;
use crate::core::step::StepBuilder;

/// The five methods of a processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Input,
    InputStep,
    OutputStream,
    OutputStep,
    OutputResult,
}

impl Phase {
    /// The method's name on a processor object.
    pub fn method(self) -> &'static str {
        match self {
            Phase::Input => "processInput",
            Phase::InputStep => "processInputStep",
            Phase::OutputStream => "processOutputStream",
            Phase::OutputStep => "processOutputStep",
            Phase::OutputResult => "processOutputResult",
        }
    }

    pub const ALL: [Phase; 5] =
        [Phase::Input, Phase::InputStep, Phase::OutputStream, Phase::OutputStep, Phase::OutputResult];

    pub fn is_input(self) -> bool {
        matches!(self, Phase::Input | Phase::InputStep)
    }
}

/// What a `tripwire` chunk carries, and the output's `tripwire`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tripwire {
    pub reason: String,
    /// The processor asked for a retry and the budget allowed it.
    pub retry: bool,
    pub metadata: Option<Value>,
    pub processor_id: String,
}

impl Tripwire {
    /// `{ reason, retry?, metadata?, processorId }`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "reason": self.reason });
        if self.retry {
            v["retry"] = Value::Bool(true);
        }
        if let Some(m) = &self.metadata {
            v["metadata"] = m.clone();
        }
        v["processorId"] = Value::String(self.processor_id.clone());
        v
    }
}

/// How a processor method ended other than by returning.
#[derive(Clone, Debug, PartialEq)]
pub enum Halt {
    /// `abort(reason, { retry, metadata })`.
    Abort { reason: String, retry: bool, metadata: Option<Value> },
    /// It threw (or returned something unusable): the message.
    Threw(String),
}

/// What a method other than `processOutputStream` returned, and the `data-*` chunks its
/// `writer.custom` wrote during the call, in order.
#[derive(Debug, Default)]
pub struct Reply {
    pub value: Option<Value>,
    pub custom: Vec<Chunk>,
    /// What a `processInputStep` returned that JSON cannot carry (`model`, `tools`,
    /// `structuredOutput`), made by the host; `value` names them for the next processor.
    pub step: StepOverrides,
}

/// What every call is told besides its phase's own arguments.
#[derive(Clone, Copy)]
pub struct ProcessorCx<'a> {
    pub run_id: &'a str,
    pub retry_count: u32,
    /// The call's `processor_run` span, when the run is traced (its `tracingContext`).
    pub span: Option<&'a str>,
}

/// One processor. `call` takes the phase's own arguments as a JSON object (SPEC §13.2's table);
/// `stream` is `processOutputStream`, typed, because it runs on every chunk.
pub trait Processor {
    fn id(&self) -> &str;
    /// Whether it has the method of `phase`.
    fn has(&self, phase: Phase) -> bool;
    /// `processDataParts`: `processOutputStream` also sees `data-*` chunks.
    fn sees_data(&self) -> bool {
        false
    }
    fn call<'a>(&'a self, phase: Phase, args: Value, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Reply, Halt>>;
    /// The chunks to emit in place of `chunk`: none drops it; `writer.custom` chunks come first.
    fn stream<'a>(&'a self, chunk: Chunk, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Vec<Chunk>, Halt>>;
}

/// The processors of one run.
#[derive(Clone, Default)]
pub struct Processors {
    pub input: Vec<Rc<dyn Processor>>,
    pub output: Vec<Rc<dyn Processor>>,
    /// `maxProcessorRetries` (default 0).
    pub max_retries: u32,
    /// The run model's provider, and the call's `providerOptions` by provider: what a
    /// `processInputStep`'s `model` or `providerOptions` are merged under.
    pub provider: String,
    pub provider_options: Option<Map<String, Value>>,
}

/// Why a processed part of the run ended early: a tripwire, or the usual abort or failure.
pub enum Ended {
    Tripwire(Tripwire),
    Stop(Stop),
}

impl From<Stop> for Ended {
    fn from(s: Stop) -> Self {
        Ended::Stop(s)
    }
}

/// A processor's failure as the run reports it: `ProcessorError`, `<id>: <message>`.
pub fn processor_error(id: &str, message: &str) -> Ended {
    Ended::Stop(Stop::Failed(AgentError::Processor { message: format!("{id}: {message}") }))
}

/// The processors at work in one run: their calls in list order, raced against the abort flag,
/// and the retry budget.
pub struct Pipeline<'a> {
    procs: &'a Processors,
    run_id: &'a str,
    abort: &'a AbortFlag,
    retries: Cell<u32>,
    /// Whether any output processor has `processOutputStream` (else chunks go straight out).
    streams: bool,
    trace: ProcessorTrace<'a>,
}

impl<'a> Pipeline<'a> {
    pub fn new(procs: &'a Processors, run_id: &'a str, abort: &'a AbortFlag) -> Self {
        // Without the cargo feature the lists are always empty (`core::features`): saying so
        // here lets the build leave out everything below.
        let streams = cfg!(feature = "processors") && procs.output.iter().any(|p| p.has(Phase::OutputStream));
        Pipeline { procs, run_id, abort, retries: Cell::new(0), streams, trace: ProcessorTrace::default() }
    }

    /// Gives the processors' calls spans (SPEC §16.2).
    pub fn traced(mut self, trace: ProcessorTrace<'a>) -> Self {
        self.trace = trace;
        self
    }

    /// The processors of the run.
    pub fn procs(&self) -> &Processors {
        self.procs
    }

    pub fn has(&self, phase: Phase) -> bool {
        let list = if phase.is_input() { &self.procs.input } else { &self.procs.output };
        cfg!(feature = "processors") && list.iter().any(|p| p.has(phase))
    }

    fn cx<'s>(&'s self, span: Option<&'s str>) -> ProcessorCx<'s> {
        ProcessorCx { run_id: self.run_id, retry_count: self.retries.get(), span }
    }

    /// Whether `t` earns a retry (`retry: true` within `maxProcessorRetries`); counts it if so.
    pub fn take_retry(&self, t: &Tripwire) -> bool {
        let ok = t.retry && self.retries.get() < self.procs.max_retries;
        if ok {
            self.retries.set(self.retries.get() + 1);
        }
        ok
    }

    fn halted(p: &dyn Processor, h: Halt) -> Ended {
        match h {
            Halt::Abort { reason, retry, metadata } => {
                Ended::Tripwire(Tripwire { reason, retry, metadata, processor_id: p.id().to_string() })
            }
            Halt::Threw(message) => processor_error(p.id(), &message),
        }
    }

    /// Emits `chunk` as the output processors from index `from` on leave it; what they change
    /// in text or reasoning is changed in `step` too, so the step's text is what was streamed.
    pub async fn emit(
        &self,
        chunk: Chunk,
        from: usize,
        sink: &dyn Sink,
        step: Option<&mut StepBuilder>,
    ) -> Result<(), Ended> {
        // Without the cargo feature there are no processors (`core::features`). A statement, not
        // `if !cfg!(…)`: code after an `if` stays in an async fn's state machine, after a
        // `return` it is never built.
        #[cfg(not(feature = "processors"))]
        return {
            sink.emit(chunk);
            Ok(())
        };
        if !self.streams() || !passes(&chunk) {
            sink.emit(chunk);
            return Ok(());
        }
        let original = matches!(chunk, Chunk::TextDelta { .. } | Chunk::ReasoningDelta { .. }).then(|| chunk.clone());
        let mut cur = vec![chunk];
        let mut stopped = None;
        'procs: for p in self.procs.output.iter().skip(from).filter(|p| p.has(Phase::OutputStream)) {
            let mut next = Vec::with_capacity(cur.len());
            for c in cur {
                if matches!(c, Chunk::Data { .. }) && !p.sees_data() {
                    next.push(c);
                    continue;
                }
                let span = self.trace.stream(p.id(), &c);
                let span = span.as_deref();
                match self.abort.race(p.stream(c, self.cx(span))).await {
                    None => {
                        self.trace.streamed(span, Err(End::Aborted));
                        stopped = Some(Stop::Aborted.into());
                    }
                    Some(Ok(out)) => {
                        self.trace.streamed(span, Ok(&out));
                        next.extend(out);
                    }
                    Some(Err(h)) => {
                        self.trace.streamed(span, Err(End::Halted(&h)));
                        stopped = Some(Self::halted(&**p, h));
                    }
                }
                if stopped.is_some() {
                    cur = Vec::new();
                    break 'procs;
                }
            }
            cur = next;
        }
        // A chunk that stopped the run was not seen: the step keeps only what was.
        if let Some(step) = step {
            amend(step, original.as_ref(), &cur);
        }
        if let Some(e) = stopped {
            return Err(e);
        }
        for c in cur {
            sink.emit(c);
        }
        Ok(())
    }

    /// Whether chunks go through `processOutputStream` (else straight to the sink).
    pub fn streams(&self) -> bool {
        cfg!(feature = "processors") && self.streams
    }

    /// Awaits a step's `tools` while the chunks they write (`queue`, filled by their sync
    /// writers) go through the output processors as they come, in order.
    pub async fn with_tool_chunks<T>(
        &self,
        tools: impl Future<Output = T>,
        queue: &ToolChunks,
        sink: &dyn Sink,
    ) -> Result<T, Ended> {
        #[cfg(not(feature = "processors"))]
        return Ok(tools.await);
        let mut tools = pin!(tools);
        loop {
            self.drain(queue, sink).await?;
            let finished = std::future::poll_fn(|cx| {
                if let Poll::Ready(v) = tools.as_mut().poll(cx) {
                    return Poll::Ready(Some(v));
                }
                if !queue.items.borrow().is_empty() {
                    return Poll::Ready(None);
                }
                *queue.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            })
            .await;
            if let Some(v) = finished {
                self.drain(queue, sink).await?;
                return Ok(v);
            }
        }
    }

    /// Emits what the tools wrote so far; the queue is not borrowed while a processor runs.
    async fn drain(&self, queue: &ToolChunks, sink: &dyn Sink) -> Result<(), Ended> {
        loop {
            let next = queue.items.borrow_mut().pop_front();
            let Some(c) = next else { return Ok(()) };
            self.emit(c, 0, sink, None).await?;
        }
    }

    /// Runs `phase` of its list in order over `args` (a JSON object); `apply` merges each reply's
    /// value into the args the next one gets, or says why the value is unusable. `writer.custom`
    /// chunks go out through the later output processors.
    async fn chain(
        &self,
        phase: Phase,
        args: &mut Value,
        sink: &dyn Sink,
        apply: &dyn Fn(&mut Value, Value) -> Result<(), String>,
        swaps: &mut StepOverrides,
    ) -> Result<(), Ended> {
        #[cfg(not(feature = "processors"))]
        return Ok(());
        let list = if phase.is_input() { &self.procs.input } else { &self.procs.output };
        for (i, p) in list.iter().enumerate().filter(|(_, p)| p.has(phase)) {
            let span = self.trace.start(phase, p.id(), args);
            let span = span.as_deref();
            let reply = match self.abort.race(p.call(phase, args.clone(), self.cx(span))).await {
                None => {
                    self.trace.end(span, End::Aborted);
                    return Err(Stop::Aborted.into());
                }
                Some(Ok(r)) => r,
                Some(Err(h)) => {
                    self.trace.end(span, End::Halted(&h));
                    return Err(Self::halted(&**p, h));
                }
            };
            for c in reply.custom {
                self.emit(c, if phase.is_input() { 0 } else { i + 1 }, sink, None).await?;
            }
            let shown = span.and_then(|_| reply.value.clone());
            if let Some(v) = reply.value {
                // A message that names a key goes right after the method: `processInputStep.model: …`.
                let sep = if phase == Phase::InputStep { "" } else { " " };
                if let Err(m) = apply(args, v) {
                    let message = format!("{}{sep}{m}", phase.method());
                    self.trace.end(span, End::Halted(&Halt::Threw(message.clone())));
                    return Err(processor_error(p.id(), &message));
                }
            }
            self.trace.end(span, End::Returned(shown));
            let s = reply.step;
            swaps.model = s.model.or(swaps.model.take());
            swaps.tools = s.tools.or(swaps.tools.take());
            swaps.structured = s.structured.or(swaps.structured.take());
        }
        Ok(())
    }

    /// `processInput` over `{ messages, systemMessages }`: the final pair.
    pub async fn input(
        &self,
        messages: Vec<Value>,
        system: Vec<String>,
        sink: &dyn Sink,
    ) -> Result<(Vec<Value>, Vec<String>), Ended> {
        let mut args = json!({ "messages": messages, "systemMessages": system_json(&system) });
        self.chain(Phase::Input, &mut args, sink, &|args, v| match v {
            Value::Array(_) => {
                check_messages(&v)?;
                args["messages"] = v;
                Ok(())
            }
            Value::Object(mut o) => {
                if let Some(m) = o.remove("messages").filter(|m| !m.is_null()) {
                    check_messages(&m)?;
                    args["messages"] = m;
                }
                if let Some(s) = o.remove("systemMessages").filter(|s| !s.is_null()) {
                    system_texts(&s)?;
                    args["systemMessages"] = s;
                }
                Ok(())
            }
            other => Err(format!(
                "returned {}: expected a messages array, {{ messages, systemMessages }} or undefined",
                crate::core::input::kind(&other)
            )),
        }, &mut StepOverrides::default())
        .await?;
        let messages = match args["messages"].take() {
            Value::Array(a) => a,
            _ => Vec::new(),
        };
        let system = system_texts(&args["systemMessages"]).unwrap_or(system);
        Ok((messages, system))
    }

    /// `processInputStep` over the step's arguments: the arguments as the last one left them,
    /// and the host-made `model`, `tools` and `structuredOutput` the last one that gave each left.
    pub async fn input_step(&self, mut args: Value, sink: &dyn Sink) -> Result<(Value, StepOverrides), Ended> {
        let mut swaps = StepOverrides::default();
        self.chain(Phase::InputStep, &mut args, sink, &|args, v| match v {
            Value::Object(o) => {
                for (k, val) in o {
                    if k == "providerOptions" && !val.is_null() {
                        super::steps_io::check_provider_options(&val)?;
                    }
                    if STEP_KEYS.contains(&k.as_str()) && !val.is_null() {
                        args[k.as_str()] = val;
                    }
                }
                Ok(())
            }
            other => Err(format!(" returned {}: expected {{ messages?, systemMessages?, model?, tools?, toolChoice?, activeTools?, modelSettings?, providerOptions?, structuredOutput? }} or undefined", crate::core::input::kind(&other))),
        }, &mut swaps)
        .await?;
        Ok((args, swaps))
    }

    /// `processOutputStep`: its value is ignored (it acts through `abort`).
    pub async fn output_step(&self, mut args: Value, sink: &dyn Sink) -> Result<(), Ended> {
        self.chain(Phase::OutputStep, &mut args, sink, &|_, _| Ok(()), &mut StepOverrides::default()).await
    }

    /// `processOutputResult`: the messages to store instead, when one returned some.
    pub async fn output_result(&self, mut args: Value, sink: &dyn Sink) -> Result<Option<Vec<Value>>, Ended> {
        let before = args["messages"].clone();
        self.chain(Phase::OutputResult, &mut args, sink, &|args, v| {
            check_array(&v, "messages")?;
            args["messages"] = v;
            Ok(())
        }, &mut StepOverrides::default())
        .await?;
        Ok(match args["messages"].take() {
            Value::Array(a) if Value::Array(a.clone()) != before => Some(a),
            _ => None,
        })
    }
}

/// Chunks the tools of a step write while they run (`tool-result`, `tool-output`, `data-*`, …),
/// held for the output processors: a tool's writer is sync, a processor is not.
#[derive(Default)]
pub struct ToolChunks {
    items: RefCell<VecDeque<Chunk>>,
    waker: RefCell<Option<Waker>>,
}

impl ToolChunks {
    pub fn push(&self, c: Chunk) {
        self.items.borrow_mut().push_back(c);
        let waker = self.waker.borrow_mut().take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The keys of `processInputStep`'s arguments a processor may replace for its step.
pub const STEP_KEYS: &[&str] = &[
    "messages",
    "systemMessages",
    "model",
    "tools",
    "toolChoice",
    "activeTools",
    "modelSettings",
    "providerOptions",
    "structuredOutput",
];

/// Chunks of a model step that output processors see (not the run's own, nor background ones).
fn passes(c: &Chunk) -> bool {
    !matches!(
        c,
        Chunk::Start { .. }
            | Chunk::Finish { .. }
            | Chunk::Error(_)
            | Chunk::Abort { .. }
            | Chunk::Tripwire(_)
            | Chunk::Background { .. }
    )
}

/// Messages a processor returned: an array the input parser reads (stored or model shape).
fn check_messages(v: &Value) -> Result<(), String> {
    check_array(v, "messages")?;
    crate::core::input::parse_messages(v, "messages")
        .map(|_| ())
        .map_err(|e| format!("returned a message that is not valid: {e}"))
}

fn check_array(v: &Value, what: &str) -> Result<(), String> {
    match v {
        Value::Array(_) => Ok(()),
        other => Err(format!("returned {what} as {}: expected an array", crate::core::input::kind(other))),
    }
}

/// `[{ role: 'system', content }]`.
pub fn system_json(system: &[String]) -> Value {
    Value::Array(system.iter().map(|s| json!({ "role": "system", "content": s })).collect())
}

/// The texts of `systemMessages`: strings or `{ role: 'system', content }`.
pub fn system_texts(v: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = v else {
        return Err(format!("returned systemMessages as {}: expected an array", crate::core::input::kind(v)));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, m)| match m {
            Value::String(s) => Ok(s.clone()),
            _ => crate::core::input::parse_instructions(m, &format!("systemMessages.{i}"))
                .map(|t| t.join("\n"))
                .map_err(|e| format!("returned {e}")),
        })
        .collect()
}

/// Changes `step`'s aggregates so they hold what the processors emitted in place of `original`
/// (a text or reasoning delta, just applied) — or, for another chunk, the deltas they released
/// with it (a batch flushed before a `text-end`).
fn amend(step: &mut StepBuilder, original: Option<&Chunk>, out: &[Chunk]) {
    if let ([only], Some(o)) = (out, original) {
        if only == o {
            return;
        }
    }
    if let Some(Chunk::TextDelta { id, text } | Chunk::ReasoningDelta { id, text }) = original {
        if let Some((part, all)) = step.block_text(id) {
            for s in [part, all] {
                if s.ends_with(text.as_str()) {
                    s.truncate(s.len() - text.len());
                }
            }
        }
    }
    for c in out {
        if let Chunk::TextDelta { id, text } | Chunk::ReasoningDelta { id, text } = c {
            if let Some((part, all)) = step.block_text(id) {
                part.push_str(text);
                all.push_str(text);
            }
        }
    }
}

/// The feedback message a retried step gets (after the other system messages).
pub fn retry_message(reason: &str) -> String {
    format!("Your previous response was not accepted: {reason}. Please try again and address this.")
}

/// Arguments of `processOutputResult`: the run's response messages and its result so far.
pub fn result_args(messages: Value, text: String, usage: Value, finish_reason: &str, steps: Value) -> Value {
    let mut result = Map::new();
    result.insert("text".into(), text.into());
    result.insert("usage".into(), usage);
    result.insert("finishReason".into(), finish_reason.into());
    result.insert("steps".into(), steps);
    json!({ "messages": messages, "result": Value::Object(result) })
}
