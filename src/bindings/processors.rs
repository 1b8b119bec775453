//! Processor objects of JavaScript (SPEC §13) behind the core's `Processor` trait, and the lists
//! `inputProcessors` / `outputProcessors` read and checked once (at `new Agent` or at the call).
//!
//! Each run gets fresh wrappers: one `state` object per processor per run, one `abort` function
//! and one `writer` made once and reused for every call. A JavaScript method is called with no
//! borrow held; what its `writer.custom` wrote is taken after it returned.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;

use super::chunk_js::ChunkWriter;
use super::convert::{from_json, js_kind, read, to_json, type_error};
use super::tools::{call_async, custom_chunk, thrown_message};
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::run::processors::{Halt, Phase, Processor, ProcessorCx, Reply};

// The processor types (SPEC §13); merged into `AgentConfig`, `StreamOptions`, `FullOutput`.
#[wasm_bindgen(typescript_custom_section)]
const TS_PROCESSORS: &'static str = r#"
/** What a `tripwire` chunk carries, and `output.tripwire`. */
export interface TripwirePayload { reason: string; retry?: boolean; metadata?: unknown; processorId: string }

/** Given to every processor method. `abort()` throws: it stops the run with a tripwire. */
export interface ProcessorArgs {
  abort(reason?: string, options?: { retry?: boolean; metadata?: unknown }): never;
  /** One object per processor per run, shared by its methods and steps. */
  state: Record<string, unknown>;
  retryCount: number;
  runId: string;
  requestContext?: unknown;
  abortSignal: AbortSignal;
  tracingContext: Record<string, unknown>;
}
/** Output phases also get a writer: `custom({ type: 'data-…', data })` adds a chunk (seen by later processors only). */
export interface ProcessorOutputArgs extends ProcessorArgs {
  writer: { custom(chunk: { type: `data-${string}`; data: unknown; id?: string; transient?: boolean }): Promise<void> };
}
type MaybePromise<T> = T | Promise<T>;
export type SystemMessage = { role: 'system'; content: string };

/** An input or output processor: an `id` and at least one method of its list. */
export interface Processor {
  id: string;
  name?: string;
  description?: string;
  /** `processOutputStream` also sees `data-*` chunks. */
  processDataParts?: boolean;
  /** Once, after memory is loaded: the recalled and new messages (stored shape). */
  processInput?(args: ProcessorArgs & { messages: StorageMessage[]; systemMessages: SystemMessage[] }):
    MaybePromise<StorageMessage[] | { messages?: StorageMessage[]; systemMessages?: SystemMessage[] } | undefined | void>;
  /** Before every model call; what it returns applies to that call only. */
  processInputStep?(args: ProcessorArgs & {
    stepNumber: number; steps: StepResult[]; messages: ModelMessage[]; systemMessages: SystemMessage[]; model: string;
    tools: string[]; toolChoice: ToolChoice; activeTools: string[]; modelSettings: ModelSettings;
    providerOptions: Record<string, Record<string, unknown>>; structuredOutput?: { schema: Record<string, unknown> };
  }): MaybePromise<{
    messages?: ModelMessage[]; systemMessages?: SystemMessage[];
    /** Another model for this step (as `new Agent({ model })` takes it); the next step has the run's again. */
    model?: ModelConfig;
    /** Replaces the run's tools for this step: the model is offered these, and its calls to them run. */
    tools?: Record<string, Tool> | string[];
    toolChoice?: ToolChoice; activeTools?: string[]; modelSettings?: ModelSettings;
    /** Merged over the call's `providerOptions` for this request. */
    providerOptions?: Record<string, Record<string, unknown>>;
    /** The response format of this request (§12), in place of the run's. */
    structuredOutput?: Omit<NonNullable<StreamOptions['structuredOutput']>, 'model' | 'useAgent'> | { schema: Record<string, unknown> };
  } | undefined | void>;
  /** Each chunk of each step: the chunk to emit (its text may change), or null/undefined to drop it. */
  processOutputStream?(args: ProcessorOutputArgs & { part: ChunkType; streamParts: ChunkType[] }): MaybePromise<ChunkType | null | undefined | void>;
  /** After each model step, before its tools run; acts through `abort` (`{ retry: true }` runs the step again). */
  processOutputStep?(args: ProcessorOutputArgs & {
    stepNumber: number; finishReason: FinishReason; text: string; toolCalls: ToolCallPayload[]; usage: Usage;
    steps: StepResult[]; messages: ModelMessage[]; systemMessages: SystemMessage[];
  }): MaybePromise<unknown>;
  /** Once, after the final step, before memory is written: messages to store instead. */
  processOutputResult?(args: ProcessorOutputArgs & {
    messages: ModelMessage[]; result: { text: string; usage: Usage; finishReason: FinishReason; steps: StepResult[] };
  }): MaybePromise<ModelMessage[] | undefined | void>;
}

export interface AgentConfig {
  inputProcessors?: Processor[];
  outputProcessors?: Processor[];
  /** How often a processor's `abort(reason, { retry: true })` may run a step again (default 0). */
  maxProcessorRetries?: number;
}
export interface StreamOptions {
  /** Replaces the agent's input processors for this call. */
  inputProcessors?: Processor[];
  /** Replaces the agent's output processors for this call. */
  outputProcessors?: Processor[];
  maxProcessorRetries?: number;
}
export interface FullOutput {
  /** Set when a processor stopped the run. */
  tripwire?: TripwirePayload;
}
"#;

/// Makes a fresh built-in processor for one run (its per-run state starts empty).
pub(crate) type MakeProcessor = Rc<dyn Fn() -> Rc<dyn Processor>>;

/// One entry of a processor list, as read from the user's array.
#[derive(Clone)]
pub(crate) enum ProcessorDef {
    Js {
        object: JsValue,
        id: String,
        methods: Vec<(Phase, Function)>,
        data_parts: bool,
    },
    /// A processor class of this package, implemented in Rust.
    Builtin {
        make: MakeProcessor,
    },
}

/// The processor lists of an agent or a call.
#[derive(Clone, Default)]
pub(crate) struct ProcessorLists {
    pub input: Option<Vec<ProcessorDef>>,
    pub output: Option<Vec<ProcessorDef>>,
    pub max_retries: Option<u32>,
}

type WeakMake = Weak<dyn Fn() -> Rc<dyn Processor>>;

thread_local! {
    static BUILTINS: RefCell<Vec<(u32, WeakMake)>> = const { RefCell::new(Vec::new()) };
    static NEXT_BUILTIN: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

/// Registers a built-in processor class instance; its `__processorId()` returns the number.
pub(crate) fn register_builtin(make: &MakeProcessor) -> u32 {
    let id = NEXT_BUILTIN.with(|n| n.replace(n.get() + 1));
    BUILTINS.with(|b| {
        let mut b = b.borrow_mut();
        b.retain(|(_, w)| w.strong_count() > 0);
        b.push((id, Rc::downgrade(make)));
    });
    id
}

fn lookup_builtin(obj: &JsValue) -> Option<MakeProcessor> {
    let f = Reflect::get(obj, &"__processorId".into()).ok()?.dyn_into::<Function>().ok()?;
    let id = f.call0(obj).ok()?.as_f64()? as u32;
    BUILTINS.with(|b| b.borrow().iter().find(|(i, _)| *i == id).and_then(|(_, w)| w.upgrade()))
}

/// Reads `inputProcessors` / `outputProcessors` (`path` names it): an array of processors, each
/// with an `id` and at least one method of its list; ids unique within the list.
pub(crate) fn parse_list(v: &JsValue, path: &str, input: bool) -> Result<Option<Vec<ProcessorDef>>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if !cfg!(feature = "processors") {
        return Err(super::convert::error_to_js(&crate::core::features::not_built(path, "processors", "processors")));
    }
    if !Array::is_array(v) {
        return Err(type_error(
            path,
            &format!(
                "expected an array of processors ({{ id, {}… }}), got {}",
                if input { "processInput" } else { "processOutputStream" },
                js_kind(v)
            ),
        ));
    }
    let mut out = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for (i, item) in Array::from(v).iter().enumerate() {
        let at = format!("{path}.{i}");
        if !item.is_object() {
            return Err(type_error(&at, &format!("expected a processor object with an id, got {}", js_kind(&item))));
        }
        let id_v = read(&item, "id", &at)?;
        let Some(id) = id_v.as_string().filter(|s| !s.is_empty()) else {
            return Err(type_error(
                &format!("{at}.id"),
                &format!("is required: a non-empty string that names the processor, got {}", js_kind(&id_v)),
            ));
        };
        if ids.contains(&id) {
            return Err(type_error(
                &format!("{at}.id"),
                &format!("'{id}' is used by another processor of {path}: ids must be unique in a list"),
            ));
        }
        ids.push(id.clone());
        if let Some(make) = lookup_builtin(&item) {
            let p = make();
            if !Phase::ALL.iter().any(|ph| ph.is_input() == input && p.has(*ph)) {
                return Err(type_error(
                    &at,
                    &format!("('{id}') has no {} phase", if input { "input" } else { "output" }),
                ));
            }
            out.push(ProcessorDef::Builtin { make });
            continue;
        }
        let mut methods = Vec::new();
        for phase in Phase::ALL.into_iter().filter(|p| p.is_input() == input) {
            let m = read(&item, phase.method(), &at)?;
            if m.is_undefined() || m.is_null() {
                continue;
            }
            let f = m.dyn_into::<Function>().map_err(|m| {
                type_error(
                    &format!("{at}.{}", phase.method()),
                    &format!("('{id}') expected a function, got {}", js_kind(&m)),
                )
            })?;
            methods.push((phase, f));
        }
        if methods.is_empty() {
            let needs = if input {
                "processInput or processInputStep"
            } else {
                "processOutputStream, processOutputStep or processOutputResult"
            };
            return Err(type_error(
                &at,
                &format!("('{id}') is not an {} processor: it needs {needs}", if input { "input" } else { "output" }),
            ));
        }
        let data_parts = read(&item, "processDataParts", &at)?.is_truthy();
        out.push(ProcessorDef::Js { object: item, id, methods, data_parts });
    }
    Ok(Some(out))
}

/// `maxProcessorRetries`: a whole number from 0 to 100.
pub(crate) fn parse_max_retries(v: &JsValue, path: &str) -> Result<Option<u32>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && (0.0..=100.0).contains(&n) => Ok(Some(n as u32)),
        _ => Err(type_error(path, &format!("expected a whole number from 0 to 100, got {}", js_kind(v)))),
    }
}

/// What every processor of a run is given besides its phase's arguments.
#[derive(Clone)]
pub(crate) struct ProcessorEnv {
    pub run_id: String,
    pub request_context: JsValue,
    pub abort_signal: JsValue,
    /// `{ currentSpan }` on the run's root span when traced, else `{}`.
    pub tracing_context: JsValue,
    /// The run's tracer: each call's `currentSpan` is its `processor_run` span.
    #[cfg(all(feature = "tracing", feature = "processors"))]
    pub tracer: Option<Rc<crate::core::tracing::Tracer>>,
    /// What a `processInputStep`'s own model and tools need.
    pub step: super::input_step::StepEnv,
}

/// The processors of one run, fresh.
pub(crate) fn instantiate(defs: &[ProcessorDef], env: &ProcessorEnv) -> Vec<Rc<dyn Processor>> {
    if !cfg!(feature = "processors") {
        return Vec::new();
    }
    defs.iter()
        .map(|d| match d {
            ProcessorDef::Builtin { make } => make(),
            ProcessorDef::Js { object, id, methods, data_parts } => {
                Rc::new(JsProcessor::new(object, id, methods, *data_parts, env)) as Rc<dyn Processor>
            }
        })
        .collect()
}

/// The marker `abort()` leaves on what it throws.
const TRIPWIRE_MARK: &str = "__wasmAgentTripwire";

struct JsProcessor {
    object: JsValue,
    id: String,
    methods: Vec<(Phase, Function)>,
    data_parts: bool,
    /// The common arguments, set on each call's args object.
    /// The common arguments that stay the same all run (`abort`, `state`, `runId`, …), copied
    /// onto each call's args in one step; the output phases' also have `writer`.
    common_input: Object,
    common_output: Object,
    custom: Rc<RefCell<Vec<Result<Chunk, String>>>>,
    chunks: ChunkWriter,
    /// `streamParts`: the parts this processor was shown in the run, in order.
    parts: Array,
    #[cfg(all(feature = "tracing", feature = "processors"))]
    tracer: Option<Rc<crate::core::tracing::Tracer>>,
    /// The last call's `tracingContext` and its span (a stream's chunks share one span).
    #[cfg(all(feature = "tracing", feature = "processors"))]
    context: RefCell<Option<(String, JsValue)>>,
    step: super::input_step::StepEnv,
}

impl JsProcessor {
    fn new(object: &JsValue, id: &str, methods: &[(Phase, Function)], data_parts: bool, env: &ProcessorEnv) -> Self {
        let custom: Rc<RefCell<Vec<Result<Chunk, String>>>> = Rc::default();
        let queue = custom.clone();
        let write = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |chunk: JsValue| {
            let c = custom_chunk(&chunk).map_err(|e| thrown_message(&e));
            let failed = c.as_ref().err().cloned();
            queue.borrow_mut().push(c);
            match failed {
                None => Promise::resolve(&JsValue::UNDEFINED),
                Some(m) => Promise::reject(&js_sys::Error::new(&m)),
            }
        });
        let writer = Object::new();
        let _ = Reflect::set(&writer, &"custom".into(), &write.into_js_value());
        let default_reason = format!("Tripwire triggered by {id}");
        let abort = Closure::<dyn Fn(JsValue, JsValue) -> Result<(), JsValue>>::new(
            move |reason: JsValue, options: JsValue| {
                let text = reason.as_string().unwrap_or_else(|| default_reason.clone());
                let e = js_sys::Error::new(&text);
                e.set_name("TripWire");
                let mark = Object::new();
                let _ = Reflect::set(&mark, &"reason".into(), &text.into());
                let _ = Reflect::set(&mark, &"options".into(), &options);
                let _ = Reflect::set(&e, &TRIPWIRE_MARK.into(), &mark);
                Err(e.into())
            },
        );
        let common_input = Object::new();
        let set = |k: &str, v: &JsValue| {
            let _ = Reflect::set(&common_input, &k.into(), v);
        };
        set("abort", &abort.into_js_value());
        set("state", &Object::new());
        set("runId", &JsValue::from_str(&env.run_id));
        set("requestContext", &env.request_context);
        set("abortSignal", &env.abort_signal);
        set("tracingContext", &env.tracing_context);
        let common_output = Object::assign(&Object::new(), &common_input);
        let _ = Reflect::set(&common_output, &"writer".into(), &writer);
        JsProcessor {
            object: object.clone(),
            id: id.to_string(),
            methods: methods.to_vec(),
            data_parts,
            common_input,
            common_output,
            custom,
            chunks: ChunkWriter::new(&env.run_id),
            parts: Array::new(),
            #[cfg(all(feature = "tracing", feature = "processors"))]
            tracer: env.tracer.clone(),
            #[cfg(all(feature = "tracing", feature = "processors"))]
            context: RefCell::new(None),
            step: env.step.clone(),
        }
    }

    fn method(&self, phase: Phase) -> Option<&Function> {
        self.methods.iter().find(|(p, _)| *p == phase).map(|(_, f)| f)
    }

    /// Sets the common arguments on `args` (SPEC §13.1).
    fn common(&self, args: &JsValue, cx: ProcessorCx<'_>, phase: Phase) {
        let args: &Object = args.unchecked_ref();
        Object::assign(args, if phase.is_input() { &self.common_input } else { &self.common_output });
        let _ = Reflect::set(args, &"retryCount".into(), &JsValue::from(cx.retry_count));
        #[cfg(all(feature = "tracing", feature = "processors"))]
        if let (Some(t), Some(span)) = (&self.tracer, cx.span) {
            let cached = self.context.borrow().as_ref().filter(|(s, _)| s == span).map(|(_, c)| c.clone());
            let context = cached.unwrap_or_else(|| {
                let name = crate::core::tracing::tracer::processor_span_name(phase, &self.id);
                let c = super::span_handle::SpanHandle::context(t, span.to_string(), &name, "processor_run");
                *self.context.borrow_mut() = Some((span.to_string(), c.clone()));
                c
            });
            let _ = Reflect::set(args, &"tracingContext".into(), &context);
        }
    }

    /// Calls `phase` with `args`: its value, or how it stopped.
    async fn invoke(&self, phase: Phase, args: JsValue, cx: ProcessorCx<'_>) -> Result<(JsValue, Vec<Chunk>), Halt> {
        let Some(f) = self.method(phase) else { return Ok((JsValue::UNDEFINED, Vec::new())) };
        self.common(&args, cx, phase);
        let ret = call_async(f, &self.object, &[&args]).await;
        let custom = std::mem::take(&mut *self.custom.borrow_mut());
        let ret = ret.map_err(halt_of)?;
        let custom = custom.into_iter().collect::<Result<Vec<_>, _>>().map_err(Halt::Threw)?;
        Ok((ret, custom))
    }
}

/// What a thrown value means: `abort()`'s mark, or a failure.
fn halt_of(e: JsValue) -> Halt {
    let mark = Reflect::get(&e, &TRIPWIRE_MARK.into()).unwrap_or(JsValue::UNDEFINED);
    if !mark.is_object() {
        return Halt::Threw(thrown_message(&e));
    }
    let reason = Reflect::get(&mark, &"reason".into()).ok().and_then(|r| r.as_string()).unwrap_or_default();
    let options = Reflect::get(&mark, &"options".into()).unwrap_or(JsValue::UNDEFINED);
    let retry = options.is_object() && Reflect::get(&options, &"retry".into()).map(|r| r.is_truthy()).unwrap_or(false);
    let metadata = if options.is_object() {
        Reflect::get(&options, &"metadata".into()).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    };
    let metadata = if metadata.is_undefined() {
        None
    } else {
        Some(to_json(&metadata, "abort(reason, { metadata })").unwrap_or(Value::Null))
    };
    Halt::Abort { reason, retry, metadata }
}

impl Processor for JsProcessor {
    fn id(&self) -> &str {
        &self.id
    }
    fn has(&self, phase: Phase) -> bool {
        self.method(phase).is_some()
    }
    fn sees_data(&self) -> bool {
        self.data_parts
    }

    fn call<'a>(&'a self, phase: Phase, args: Value, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Reply, Halt>> {
        Box::pin(async move {
            let (mut ret, custom) = self.invoke(phase, from_json(&args), cx).await?;
            let mut step = Default::default();
            if phase == Phase::InputStep && ret.is_object() && !Array::is_array(&ret) {
                (ret, step) = super::input_step::read_step_return(&ret, &args, &self.step).map_err(Halt::Threw)?;
            }
            let value = if ret.is_undefined() || ret.is_null() {
                None
            } else {
                Some(to_json(&ret, phase.method()).map_err(|e| {
                    Halt::Threw(format!("{} returned a value that is not plain data: {e}", phase.method()))
                })?)
            };
            Ok(Reply { value, custom, step })
        })
    }

    fn stream<'a>(&'a self, chunk: Chunk, cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Vec<Chunk>, Halt>> {
        Box::pin(async move {
            let part = self.chunks.to_js(&chunk, None);
            self.parts.push(&part);
            let args = Object::new();
            let _ = Reflect::set(&args, &"part".into(), &part);
            let _ = Reflect::set(&args, &"streamParts".into(), &self.parts);
            let (ret, mut out) = self.invoke(Phase::OutputStream, args.into(), cx).await?;
            if !(ret.is_undefined() || ret.is_null()) {
                out.push(chunk_from_js(&ret, chunk).map_err(Halt::Threw)?);
            }
            Ok(out)
        })
    }
}

/// The chunk a `processOutputStream` returned, in place of `original`. The text of a text or
/// reasoning delta may change, and a `data-*` chunk may take any chunk's place; other changes to
/// a chunk of the same type are not taken (its typed fields are the loop's).
fn chunk_from_js(v: &JsValue, original: Chunk) -> Result<Chunk, String> {
    let kind = Reflect::get(v, &"type".into()).ok().and_then(|t| t.as_string()).unwrap_or_default();
    let payload = Reflect::get(v, &"payload".into()).unwrap_or(JsValue::UNDEFINED);
    let text = || Reflect::get(&payload, &"text".into()).ok().and_then(|t| t.as_string());
    let id_of = || Reflect::get(&payload, &"id".into()).ok().and_then(|t| t.as_string());
    if kind.starts_with("data-") {
        return custom_chunk(v).map_err(|e| thrown_message(&e));
    }
    match (original, kind.as_str()) {
        (Chunk::TextDelta { id, text: old }, "text-delta") => Ok(Chunk::TextDelta { id: id_of().unwrap_or(id), text: text().unwrap_or(old) }),
        (Chunk::ReasoningDelta { id, text: old }, "reasoning-delta") => Ok(Chunk::ReasoningDelta { id: id_of().unwrap_or(id), text: text().unwrap_or(old) }),
        (o, k) if o.type_name() == k => Ok(o),
        (_, "text-delta") => match (id_of(), text()) {
            (Some(id), Some(text)) => Ok(Chunk::TextDelta { id, text }),
            _ => Err("returned a text-delta chunk without payload { id, text }".into()),
        },
        (o, k) => Err(format!(
            "processOutputStream returned a '{k}' chunk in place of '{}': return the part (its text may change), a data-* chunk, or null to drop it",
            o.type_name()
        )),
    }
}
