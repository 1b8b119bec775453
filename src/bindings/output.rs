//! `AgentStreamOutput`: the object `stream()` resolves to. Chunks are pushed into it as the run
//! produces them; `fullStream` and `textStream` are created on first access and replay what came
//! before, and the aggregate promises are created on first access and settle when the run ends
//! (so a failed run the caller never asked about leaves no unhandled rejection behind).
//!
//! What a stream owes and has not handed over — everything before it was created, and what came
//! while its reader was `LAG_LIMIT` chunks behind — waits here as Rust values, consecutive deltas
//! of one block joined (`core::backlog`), and goes out when the reader pulls. So neither an
//! unread branch (`textStream` read alone, `fullStream` never touched, or both taken and one
//! left) nor a slow reader costs an object per delta: at most the text it owes, once. A reader
//! that keeps up gets every delta as it came. (Backpressure would stall the branch that is read
//! behind the one that is not, and nothing can be dropped: a branch may be read later.)

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use web_sys::{ReadableStream, ReadableStreamDefaultController};

use super::chunk_js::ChunkWriter;
use super::object_streams::ObjectStreams;
use crate::core::abort::AbortFlag;
use crate::core::backlog::FullBacklog;
use crate::core::chunk::Chunk;

/// Chunks a created stream may have in its queue before the rest waits in the backlog, joined.
/// A reader that keeps up is never this far behind (one network read brings a few thousand
/// deltas at most).
const LAG_LIMIT: f64 = 16_384.0;
/// The queue's length is looked at every this many chunks (a boundary call).
const LAG_CHECK_EVERY: u32 = 256;

/// Where one output stream stands.
#[derive(Default)]
struct Slot {
    created: bool,
    cancelled: bool,
    closed: bool,
    ctrl: Option<ReadableStreamDefaultController>,
    /// The reader is `LAG_LIMIT` chunks behind: chunks wait in the backlog until it pulls.
    lagging: bool,
    /// Chunks enqueued since the queue's length was last looked at.
    since_check: u32,
}

impl Slot {
    /// Whether the next chunk can go into the stream's queue (else it waits in the backlog).
    fn open(&mut self, backlog_empty: bool) -> Option<ReadableStreamDefaultController> {
        let ctrl = self.ctrl.as_ref()?;
        if !self.lagging {
            self.since_check += 1;
            if self.since_check >= LAG_CHECK_EVERY {
                self.since_check = 0;
                self.lagging = ctrl.desired_size().is_some_and(|d| d <= -LAG_LIMIT);
            }
        }
        (!self.lagging && backlog_empty).then(|| ctrl.clone())
    }

    /// Whether chunks for this stream are wanted later (it may still be created).
    fn waiting(&self) -> bool {
        !self.created && !self.closed
    }

    /// Marks the stream closed; returns its controller, to be closed once the borrow is released.
    fn close(&mut self) -> Option<ReadableStreamDefaultController> {
        if self.closed {
            return None;
        }
        self.closed = true;
        self.ctrl.take()
    }
}

#[derive(Default)]
struct State {
    full: Slot,
    text: Slot,
    /// Chunks `fullStream` owes (before it was created, or while its reader lags), as Rust
    /// values: a caller who only reads `textStream` never pays for chunk objects.
    full_pending: FullBacklog,
    /// Text `textStream` owes; handed over as one piece.
    text_pending: String,
    /// `Ok(full output)` or `Err(error)` once the run ended.
    result: Option<Result<JsValue, JsValue>>,
    /// Promises handed out, by property, with their settle functions while pending.
    promises: Vec<(&'static str, Promise)>,
    pending: Vec<(&'static str, Function, Function)>,
    /// `consumeStream()` promises, resolved when the streams close.
    drained: Vec<Function>,
    /// Structured output failed with `errorStrategy: 'strict'`: `object` and `getFullOutput()`
    /// reject with this, the other promises resolve.
    object_error: Option<JsValue>,
}

pub struct Shared {
    st: RefCell<State>,
    abort: AbortFlag,
    run_id: String,
    /// One writer per turn (`untilIdle` continuation turns have their own run ids).
    writers: RefCell<Vec<ChunkWriter>>,
    /// The run ids of the turns, when the model calls go on WebSockets (whose sockets
    /// `output.transport.close()` closes).
    socket_runs: RefCell<Option<Vec<String>>>,
    /// `objectStream` and `elementStream`.
    objects: Rc<ObjectStreams>,
    /// `scores`: the promise handed out and its resolve function while pending, or the value.
    scores: RefCell<(Option<Promise>, Option<Function>, Option<JsValue>)>,
    /// The trace id and root span id of a traced run.
    trace: RefCell<Option<(String, String)>>,
    /// A reconnectable run's output, or a reconnect's (SPEC §19.8): cancelling its streams
    /// only detaches the reader; the run goes on.
    keep_run: std::cell::Cell<bool>,
}

impl Shared {
    pub fn new(run_id: String, abort: AbortFlag) -> Rc<Self> {
        let writer = ChunkWriter::new(&run_id);
        Rc::new(Shared {
            st: RefCell::new(State::default()),
            abort,
            run_id,
            writers: RefCell::new(vec![writer]),
            socket_runs: RefCell::new(None),
            objects: Rc::default(),
            scores: RefCell::new((None, None, None)),
            trace: RefCell::new(None),
            keep_run: std::cell::Cell::new(false),
        })
    }

    /// Cancelling the streams will not stop the run (SPEC §19.8).
    pub fn keep_run_on_cancel(&self) {
        self.keep_run.set(true);
    }

    /// The chunk's object as JSON, for the chunk log.
    pub fn chunk_value(&self, chunk: &Chunk, seq: u64) -> serde_json::Value {
        let writers = self.writers.borrow();
        writers.last().map(|w| w.to_value(chunk, seq)).unwrap_or_default()
    }

    pub fn set_trace(&self, trace: Option<(String, String)>) {
        *self.trace.borrow_mut() = trace;
    }

    pub fn trace(&self) -> Option<(String, String)> {
        self.trace.borrow().clone()
    }

    /// `out.scores` settles with `scores` (an array, or a promise of one). Later calls change nothing.
    pub fn settle_scores(&self, scores: JsValue) {
        let resolve = {
            let mut slot = self.scores.borrow_mut();
            if slot.2.is_some() {
                return;
            }
            slot.2 = Some(scores.clone());
            slot.1.take()
        };
        if let Some(resolve) = resolve {
            let _ = resolve.call1(&JsValue::UNDEFINED, &scores);
        }
    }

    fn scores_promise(&self) -> Promise {
        if let Some(p) = &self.scores.borrow().0 {
            return p.clone();
        }
        let settled = self.scores.borrow().2.clone();
        let promise = match settled {
            Some(v) => Promise::resolve(&v),
            None => Promise::new(&mut |resolve, _| self.scores.borrow_mut().1 = Some(resolve)),
        };
        self.scores.borrow_mut().0 = Some(promise.clone());
        promise
    }

    /// The run's model calls go on WebSockets: `output.transport` is there.
    pub fn use_sockets(&self) {
        self.socket_runs.borrow_mut().get_or_insert_with(Vec::new).push(self.run_id.clone());
    }

    /// Chunks from now on carry `run_id` (a continuation turn's).
    pub fn begin_turn(&self, run_id: &str) {
        self.writers.borrow_mut().push(ChunkWriter::new(run_id));
        if let Some(runs) = self.socket_runs.borrow_mut().as_mut() {
            runs.push(run_id.to_owned());
        }
    }

    fn turn(&self) -> usize {
        self.writers.borrow().len() - 1
    }

    fn to_js(&self, turn: usize, seq: u64, chunk: &Chunk) -> JsValue {
        let writers = self.writers.borrow();
        writers.get(turn).or(writers.last()).map(|w| w.to_js(chunk, Some(seq))).unwrap_or(JsValue::NULL)
    }

    /// The chunk as JavaScript sees it; `seq` is its number in the stream (SPEC §19.8).
    pub fn chunk_js(&self, chunk: &Chunk, seq: u64) -> JsValue {
        self.to_js(self.turn(), seq, chunk)
    }

    /// The flag whose setting aborts this output's run (and, with `untilIdle`, closes it).
    pub fn abort_flag(&self) -> &AbortFlag {
        &self.abort
    }

    /// Delivers a chunk to the streams; `js` is its object when one was already made.
    ///
    /// Enqueueing happens after the borrow is released: a stream piped into a `WritableStream`
    /// or through a `TransformStream` runs the user's `write()`/`transform()` inside `enqueue`,
    /// and that code may read this output (`out.text`, `out.usage`, …).
    pub fn deliver(&self, chunk: Chunk, seq: u64, js: Option<JsValue>) {
        if matches!(chunk, Chunk::Object { .. } | Chunk::ObjectResult { .. }) {
            self.objects.take(&chunk);
        }
        let turn = self.turn();
        let (text, full) = {
            let mut st = self.st.borrow_mut();
            let st = &mut *st;
            let mut text = None;
            let logged_text = match &chunk {
                Chunk::Logged(v) if v.get("type").and_then(serde_json::Value::as_str) == Some("text-delta") => v.pointer("/payload/text").and_then(serde_json::Value::as_str),
                _ => None,
            };
            if let Some(t) = logged_text.or(match &chunk {
                Chunk::TextDelta { text, .. } => Some(text.as_str()),
                _ => None,
            }) {
                if let Some(c) = st.text.open(st.text_pending.is_empty()) {
                    text = Some((c, JsValue::from_str(t)));
                } else if st.text.waiting() || st.text.ctrl.is_some() {
                    st.text_pending.push_str(t);
                }
            }
            let full = match st.full.open(st.full_pending.is_empty()) {
                Some(c) => Some((c, chunk)),
                None => {
                    if st.full.waiting() || st.full.ctrl.is_some() {
                        st.full_pending.push(turn, seq, chunk);
                    }
                    None
                }
            };
            (text, full)
        };
        if let Some((c, t)) = text {
            let _ = c.enqueue_with_chunk(&t);
        }
        if let Some((c, chunk)) = full {
            let _ = c.enqueue_with_chunk(&js.unwrap_or_else(|| self.to_js(turn, seq, &chunk)));
        }
    }

    /// Ends the run: settles every promise handed out and closes the streams.
    pub fn finish(&self, result: Result<JsValue, JsValue>) {
        self.settle_all(result);
        self.close_streams();
    }

    /// Settles the aggregate promises (with `untilIdle`, from the first turn while the stream
    /// goes on). Later calls change nothing.
    pub fn settle_all(&self, result: Result<JsValue, JsValue>) {
        let pending = {
            let mut st = self.st.borrow_mut();
            if st.result.is_some() {
                return;
            }
            st.result = Some(result.clone());
            (std::mem::take(&mut st.pending), st.object_error.clone())
        };
        let (pending, object_error) = pending;
        for (field, resolve, reject) in pending {
            settle(&for_field(&result, object_error.as_ref(), field), field, &resolve, &reject);
        }
    }

    /// Structured output failed (`errorStrategy: 'strict'`): `object` and `getFullOutput()`
    /// will reject with `error`. Called before the promises settle.
    pub fn fail_object(&self, error: JsValue) {
        self.st.borrow_mut().object_error = Some(error);
    }

    pub fn close_streams(&self) {
        self.objects.close();
        let (full, text, drained) = {
            let mut st = self.st.borrow_mut();
            // A stream not created yet keeps what it owes for its creation.
            let full = st.full.close();
            let full = full.map(|c| (c, st.full_pending.take()));
            let text = st.text.close();
            let text = text.map(|c| (c, std::mem::take(&mut st.text_pending)));
            (full, text, std::mem::take(&mut st.drained))
        };
        // What a lagging reader is owed goes into its queue before the end; enqueued and closed
        // outside the borrow, like `deliver` enqueues.
        if let Some((c, owed)) = full {
            for (turn, seq, chunk) in owed {
                let _ = c.enqueue_with_chunk(&self.to_js(turn, seq, &chunk));
            }
            let _ = c.close();
        }
        if let Some((c, owed)) = text {
            if !owed.is_empty() {
                let _ = c.enqueue_with_chunk(&JsValue::from_str(&owed));
            }
            let _ = c.close();
        }
        for resolve in drained {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    }

    /// Hands a stream what it owes (on start and on every pull: its reader wants more).
    fn hand_over(&self, text: bool, ctrl: &ReadableStreamDefaultController) {
        let (owed_text, owed_full) = {
            let mut st = self.st.borrow_mut();
            let slot = if text { &mut st.text } else { &mut st.full };
            slot.lagging = false;
            slot.since_check = 0;
            if text {
                (std::mem::take(&mut st.text_pending), Vec::new())
            } else {
                (String::new(), st.full_pending.take())
            }
        };
        // Outside the borrow: enqueueing may run the reader's code (see `deliver`).
        if !owed_text.is_empty() {
            let _ = ctrl.enqueue_with_chunk(&JsValue::from_str(&owed_text));
        }
        for (turn, seq, chunk) in owed_full {
            let _ = ctrl.enqueue_with_chunk(&self.to_js(turn, seq, &chunk));
        }
    }

    fn stream(self: &Rc<Self>, text: bool) -> ReadableStream {
        let weak = Rc::downgrade(self);
        let start = Closure::once_into_js(move |ctrl: JsValue| {
            let Some(me) = weak.upgrade() else { return };
            let ctrl: ReadableStreamDefaultController = ctrl.unchecked_into();
            me.hand_over(text, &ctrl);
            let mut st = me.st.borrow_mut();
            let slot = if text { &mut st.text } else { &mut st.full };
            if slot.closed {
                let _ = ctrl.close();
            } else {
                slot.ctrl = Some(ctrl);
            }
        });
        let weak = Rc::downgrade(self);
        let pull = Closure::<dyn FnMut(JsValue)>::new(move |ctrl: JsValue| {
            if let Some(me) = weak.upgrade() {
                me.hand_over(text, ctrl.unchecked_ref());
            }
        })
        .into_js_value();
        let weak = Rc::downgrade(self);
        let cancel = Closure::<dyn FnMut(JsValue)>::new(move |_reason: JsValue| cancel_slot(&weak, text)).into_js_value();
        let source = Object::new();
        let _ = Reflect::set(&source, &"start".into(), &start);
        let _ = Reflect::set(&source, &"pull".into(), &pull);
        let _ = Reflect::set(&source, &"cancel".into(), &cancel);
        {
            let mut st = self.st.borrow_mut();
            let slot = if text { &mut st.text } else { &mut st.full };
            slot.created = true;
        }
        match ReadableStream::new_with_underlying_source(&source) {
            Ok(s) => s,
            // Constructing a ReadableStream from a valid source object does not throw.
            Err(_) => ReadableStream::new().unwrap_throw(),
        }
    }

    fn promise(self: &Rc<Self>, field: &'static str) -> Promise {
        if let Some((_, p)) = self.st.borrow().promises.iter().find(|(f, _)| *f == field) {
            return p.clone();
        }
        if field == "consume" {
            // Draining ends when the stream closes, which with untilIdle is after the last turn.
            let me = self.clone();
            let promise = Promise::new(&mut |resolve, _reject| {
                let mut st = me.st.borrow_mut();
                if st.full.closed {
                    drop(st);
                    let _ = resolve.call0(&JsValue::UNDEFINED);
                } else {
                    st.drained.push(resolve);
                }
            });
            self.st.borrow_mut().promises.push((field, promise.clone()));
            return promise;
        }
        let done = self.st.borrow().result.clone().map(|r| for_field(&r, self.st.borrow().object_error.as_ref(), field));
        let promise = match done {
            Some(result) => Promise::new(&mut |resolve, reject| settle(&result, field, &resolve, &reject)),
            None => {
                let me = self.clone();
                Promise::new(&mut |resolve, reject| me.st.borrow_mut().pending.push((field, resolve, reject)))
            }
        };
        self.st.borrow_mut().promises.push((field, promise.clone()));
        promise
    }
}

/// Cancelling a stream drops its chunks; once every stream that was handed out is cancelled,
/// nobody is listening and the run is aborted (which closes the model request).
fn cancel_slot(weak: &Weak<Shared>, text: bool) {
    let Some(me) = weak.upgrade() else { return };
    let all_cancelled = {
        let mut st = me.st.borrow_mut();
        let slot = if text { &mut st.text } else { &mut st.full };
        slot.cancelled = true;
        slot.ctrl = None;
        (!st.full.created || st.full.cancelled) && (!st.text.created || st.text.cancelled)
    };
    if all_cancelled && !me.keep_run.get() {
        me.abort.detach(Some("the stream was cancelled".into()));
    }
}

/// The result a promise of `field` settles with: a strict structured-output failure rejects
/// `object` and the full output only.
fn for_field(result: &Result<JsValue, JsValue>, object_error: Option<&JsValue>, field: &str) -> Result<JsValue, JsValue> {
    match (object_error, field) {
        (Some(e), "" | "object") if result.is_ok() => Err(e.clone()),
        _ => result.clone(),
    }
}

/// `field` of the full output (the whole output for `""`), or the error.
fn settle(result: &Result<JsValue, JsValue>, field: &str, resolve: &Function, reject: &Function) {
    let _ = match result {
        Ok(full) if field.is_empty() => resolve.call1(&JsValue::UNDEFINED, full),
        Ok(full) => resolve.call1(&JsValue::UNDEFINED, &Reflect::get(full, &field.into()).unwrap_or(JsValue::UNDEFINED)),
        Err(e) => reject.call1(&JsValue::UNDEFINED, e),
    };
}

/// The result of `agent.stream()`.
#[wasm_bindgen]
pub struct AgentStreamOutput {
    shared: Rc<Shared>,
}

impl AgentStreamOutput {
    pub fn new(shared: Rc<Shared>) -> Self {
        AgentStreamOutput { shared }
    }

    /// Nobody will read the streams (`generate()`): chunks are no longer kept for them.
    pub fn unread(&self) {
        let mut st = self.shared.st.borrow_mut();
        st.full.closed = true;
        st.text.closed = true;
        drop(st.full_pending.take());
        st.text_pending.clear();
    }
}

#[wasm_bindgen]
impl AgentStreamOutput {
    /// Every chunk of the run, in order. Created on first access; readable once.
    #[wasm_bindgen(getter = fullStream, unchecked_return_type = "ReadableStream<ChunkType> & AsyncIterable<ChunkType>")]
    pub fn full_stream(&self) -> Result<ReadableStream, JsValue> {
        self.take_stream(false)
    }

    /// The text deltas only.
    #[wasm_bindgen(getter = textStream, unchecked_return_type = "ReadableStream<string> & AsyncIterable<string>")]
    pub fn text_stream(&self) -> Result<ReadableStream, JsValue> {
        self.take_stream(true)
    }

    fn take_stream(&self, text: bool) -> Result<ReadableStream, JsValue> {
        let created = {
            let st = self.shared.st.borrow();
            if text { st.text.created } else { st.full.created }
        };
        if created {
            let name = if text { "textStream" } else { "fullStream" };
            return Err(js_sys::Error::new(&format!("{name} can be read once: keep the stream you got from the first access")).into());
        }
        Ok(self.shared.stream(text))
    }

    /// The run's id (`options.runId`, else generated); every chunk of the first turn carries it.
    #[wasm_bindgen(getter = runId)]
    pub fn run_id(&self) -> String {
        self.shared.run_id.clone()
    }

    /// The run's WebSocket transport (`providerOptions.<provider>.transport` 'websocket' or
    /// 'auto'), `undefined` over HTTP. `close()` closes the sockets the run used; with
    /// `websocket.closeOnFinish: false` they stay open for later calls until then.
    #[wasm_bindgen(getter, unchecked_return_type = "{ type: 'websocket'; close(): void } | undefined")]
    pub fn transport(&self) -> JsValue {
        let Some(runs) = self.shared.socket_runs.borrow().clone() else { return JsValue::UNDEFINED };
        let close = Closure::<dyn Fn()>::new(move || {
            for run in &runs {
                crate::platform::close_run_sockets(run);
            }
        })
        .into_js_value();
        let out = Object::new();
        let _ = Reflect::set(&out, &"type".into(), &"websocket".into());
        let _ = Reflect::set(&out, &"close".into(), &close);
        out.into()
    }

    /// The run's trace id (32 hex) when it is traced (an `observability` exporter), else `undefined`.
    #[wasm_bindgen(getter = traceId, unchecked_return_type = "string | undefined")]
    pub fn trace_id(&self) -> JsValue {
        self.shared.trace().map_or(JsValue::UNDEFINED, |(t, _)| t.into())
    }

    /// The id of the run's `agent_run` span (16 hex) when it is traced, else `undefined`.
    #[wasm_bindgen(getter = spanId, unchecked_return_type = "string | undefined")]
    pub fn span_id(&self) -> JsValue {
        self.shared.trace().map_or(JsValue::UNDEFINED, |(_, s)| s.into())
    }

    /// The reply's text, all steps joined. Like every promise here, rejects with the run's error
    /// when it failed.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<string>")]
    pub fn text(&self) -> Promise {
        self.shared.promise("text")
    }

    /// The model's reasoning text, when it streamed any; else `undefined`.
    #[wasm_bindgen(getter = reasoningText, unchecked_return_type = "Promise<string | undefined>")]
    pub fn reasoning_text(&self) -> Promise {
        self.shared.promise("reasoningText")
    }

    /// Why the run ended: the last step's reason, or `'abort'` when it was aborted.
    #[wasm_bindgen(getter = finishReason, unchecked_return_type = "Promise<FinishReason>")]
    pub fn finish_reason(&self) -> Promise {
        self.shared.promise("finishReason")
    }

    /// Token usage of the last step (`totalUsage` adds up every step).
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<Usage>")]
    pub fn usage(&self) -> Promise {
        self.shared.promise("usage")
    }

    /// Token usage of all steps together.
    #[wasm_bindgen(getter = totalUsage, unchecked_return_type = "Promise<Usage>")]
    pub fn total_usage(&self) -> Promise {
        self.shared.promise("totalUsage")
    }

    /// Every tool call the model made, in order, over all steps.
    #[wasm_bindgen(getter = toolCalls, unchecked_return_type = "Promise<ToolCallPayload[]>")]
    pub fn tool_calls(&self) -> Promise {
        self.shared.promise("toolCalls")
    }

    /// The results of those calls, in call order (a failed call has `isError: true`).
    #[wasm_bindgen(getter = toolResults, unchecked_return_type = "Promise<ToolResultPayload[]>")]
    pub fn tool_results(&self) -> Promise {
        self.shared.promise("toolResults")
    }

    /// One entry per completed step: its text, tool calls and results, usage and warnings.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<StepResult[]>")]
    pub fn steps(&self) -> Promise {
        self.shared.promise("steps")
    }

    /// The last response's id, model id and time, and the messages the run added.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<ResponseInfo>")]
    pub fn response(&self) -> Promise {
        self.shared.promise("response")
    }

    /// The payload of the run's first `tool-call-suspended` chunk, else `undefined`.
    #[wasm_bindgen(getter = suspendPayload, unchecked_return_type = "Promise<unknown>")]
    pub fn suspend_payload(&self) -> Promise {
        self.shared.promise("suspendPayload")
    }

    /// Settings the provider or this version did not apply (`unsupported-setting`), over all steps.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<Warning[]>")]
    pub fn warnings(&self) -> Promise {
        self.shared.promise("warnings")
    }

    /// The structured output's validated value (`structuredOutput`); `undefined` without it.
    /// Rejects with a `StructuredOutputError` when it failed under `errorStrategy: 'strict'`.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<any>")]
    pub fn object(&self) -> Promise {
        self.shared.promise("object")
    }

    /// Each partial object while the reply streams, then closes. Readable once.
    #[wasm_bindgen(getter = objectStream, unchecked_return_type = "ReadableStream<any> & AsyncIterable<any>")]
    pub fn object_stream(&self) -> Result<ReadableStream, JsValue> {
        self.take_object_stream(false)
    }

    /// For an array schema: each completed element once. Readable once.
    #[wasm_bindgen(getter = elementStream, unchecked_return_type = "ReadableStream<any> & AsyncIterable<any>")]
    pub fn element_stream(&self) -> Result<ReadableStream, JsValue> {
        self.take_object_stream(true)
    }

    fn take_object_stream(&self, element: bool) -> Result<ReadableStream, JsValue> {
        if self.shared.objects.created(element) {
            let name = if element { "elementStream" } else { "objectStream" };
            return Err(js_sys::Error::new(&format!("{name} can be read once: keep the stream you got from the first access")).into());
        }
        Ok(self.shared.objects.stream(element))
    }

    /// Whether `object` is `structuredOutput.fallbackValue` (final once the stream has ended).
    #[wasm_bindgen(getter = usedFallbackValue)]
    pub fn used_fallback_value(&self) -> bool {
        let st = self.shared.st.borrow();
        let full = match &st.result {
            Some(Ok(full)) => full.clone(),
            _ => return false,
        };
        drop(st);
        Reflect::get(&full, &"usedFallbackValue".into()).map(|v| v.is_truthy()).unwrap_or(false)
    }

    /// The tripwire that stopped the run (`{ reason, retry?, metadata?, processorId }`), once the
    /// stream ended; `undefined` before, and when no processor called `abort()`.
    #[wasm_bindgen(getter, unchecked_return_type = "TripwirePayload | undefined")]
    pub fn tripwire(&self) -> JsValue {
        match &self.shared.st.borrow().result {
            Some(Ok(full)) => Reflect::get(full, &"tripwire".into()).unwrap_or(JsValue::UNDEFINED),
            _ => JsValue::UNDEFINED,
        }
    }

    /// The scores of the run's sampled scorers (`scorers`), once each settled: `[]` without
    /// scorers and for a run that failed, was aborted or tripped. Never rejects (a failed scorer
    /// is logged and left out). In Workers, pass it to `ctx.waitUntil`.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<ScoreResult[]>")]
    pub fn scores(&self) -> Promise {
        self.shared.scores_promise()
    }

    /// Everything at once; rejects with the run's error when it failed.
    #[wasm_bindgen(js_name = getFullOutput, unchecked_return_type = "Promise<FullOutput>")]
    pub fn get_full_output(&self) -> Promise {
        self.shared.promise("")
    }

    /// Runs the stream to its end without reading it; resolves when the run is over (also
    /// after a failure, which `onError` and the other promises report).
    #[wasm_bindgen(js_name = consumeStream, unchecked_return_type = "Promise<void>")]
    pub fn consume_stream(&self) -> Promise {
        self.shared.promise("consume")
    }
}
