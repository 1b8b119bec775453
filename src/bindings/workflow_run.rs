//! Runs of a workflow (SPEC §20.2) and their `WorkflowRunOutput` (§20.3): the engine runs as a
//! local task; every reader of `fullStream` gets the run's events from the first, then live.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use js_sys::{Function, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::{ReadableStream, ReadableStreamDefaultController};

use super::convert::{error_to_js, from_json, js_kind, to_json, type_error};
use super::workflow::{WfInner, Workflow};
use super::workflow_host::JsHost;
use crate::core::error::AgentError;
use crate::core::workflow::context::RunCore;
use crate::core::workflow::log::LogReader;

/// The run's end, once: its result as JSON, or why it could not start.
#[derive(Default)]
struct Settled {
    value: RefCell<Option<Result<Value, AgentError>>>,
    wakers: RefCell<Vec<Waker>>,
}

impl Settled {
    fn set(&self, v: Result<Value, AgentError>) {
        *self.value.borrow_mut() = Some(v);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        wakers.into_iter().for_each(Waker::wake);
    }

    async fn wait(&self) -> Result<Value, AgentError> {
        poll_fn(|cx| match &*self.value.borrow() {
            Some(v) => Poll::Ready(v.clone()),
            None => {
                self.wakers.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

pub(crate) struct RunInner {
    wf: Rc<WfInner>,
    core: Rc<RunCore>,
    host: Rc<JsHost>,
    settled: Rc<Settled>,
    started: Cell<bool>,
}

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

/// The result for JavaScript: `error` is an `Error` with the step's `name` and `message`.
fn result_to_js(v: &Value) -> JsValue {
    let out = from_json(v);
    if let Some(e) = v.get("error") {
        let err = js_sys::Error::new(e["message"].as_str().unwrap_or_default());
        err.set_name(e["name"].as_str().unwrap_or("Error"));
        let _ = Reflect::set(&out, &"error".into(), &err);
    }
    out
}

#[wasm_bindgen]
impl Workflow {
    /// A run of this workflow; throws (an `Error`) before `.commit()` or without steps.
    #[wasm_bindgen(js_name = createRun, unchecked_return_type = "Promise<Run>")]
    pub fn create_run(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ runId?: string; resourceId?: string }")] options: Option<
            JsValue,
        >,
    ) -> Result<Promise, JsValue> {
        self.inner.def.check_runnable().map_err(|m| JsValue::from(js_sys::Error::new(&m)))?;
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let text = |k: &str| -> Result<Option<String>, JsValue> {
            let v = get(&options, k);
            if v.is_undefined() || v.is_null() {
                return Ok(None);
            }
            v.as_string().filter(|s| !s.is_empty()).map(Some).ok_or_else(|| {
                type_error(
                    &format!("createRun(options).{k}"),
                    &format!("expected a non-empty string, got {}", js_kind(&v)),
                )
            })
        };
        let run_id = text("runId")?.unwrap_or_else(crate::platform::random_uuid);
        let resource_id = text("resourceId")?;
        let host = Rc::new(JsHost::default());
        let core = RunCore::new(run_id, resource_id, Rc::new(crate::platform::JsEnv), host.clone());
        let inner =
            Rc::new(RunInner { wf: self.inner.clone(), core, host, settled: Rc::default(), started: Cell::new(false) });
        Ok(Promise::resolve(&JsValue::from(Run { inner })))
    }
}

#[wasm_bindgen]
pub struct Run {
    inner: Rc<RunInner>,
}

impl RunInner {
    /// Starts the engine once with `options` (`inputData`, `initialState`, `requestContext`,
    /// `outputOptions.includeState`); bad options are a `TypeError`.
    fn begin(self: &Rc<Self>, options: &JsValue) -> Result<(), JsValue> {
        if self.started.get() {
            return Err(js_sys::Error::new(
                "This run already started: read it with run.observeStream() or make another with workflow.createRun()",
            )
            .into());
        }
        if !(options.is_undefined() || options.is_null() || options.is_object()) {
            return Err(type_error(
                "options",
                &format!("expected {{ inputData, initialState?, requestContext? }}, got {}", js_kind(options)),
            ));
        }
        let input = to_json(&get(options, "inputData"), "options.inputData").map_err(|e| error_to_js(&e))?;
        let state = get(options, "initialState");
        let state = if state.is_undefined() {
            None
        } else {
            Some(to_json(&state, "options.initialState").map_err(|e| error_to_js(&e))?)
        };
        let include_state = get(&get(options, "outputOptions"), "includeState").is_truthy();
        let rc = get(options, "requestContext");
        if !rc.is_undefined() {
            let plain = if rc.has_type::<js_sys::Map>() {
                Object::from_entries(&rc).unwrap_or_default().into()
            } else {
                rc.clone()
            };
            *self.core.request_context.borrow_mut() =
                to_json(&plain, "options.requestContext").map_err(|e| error_to_js(&e))?;
        }
        let controller = web_sys::AbortController::new()?;
        *self.host.signal.borrow_mut() = controller.signal().into();
        *self.host.request_context.borrow_mut() = rc;
        self.core.abort.on_abort(Box::new(move || controller.abort()));
        self.started.set(true);
        let (core, def, settled, wf) = (self.core.clone(), self.wf.def.clone(), self.settled.clone(), self.wf.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let r = crate::core::workflow::start(core, def, input, state).await;
            let value = r.map(|res| res.to_json(include_state));
            settled.set(value.clone());
            // The user's callbacks, after the run's state is released.
            if let Ok(v) = &value {
                let js = result_to_js(v);
                if let Some(f) = &wf.on_finish {
                    let _ = f.call1(&JsValue::UNDEFINED, &js);
                }
                if v["status"] == "failed" {
                    if let Some(f) = &wf.on_error {
                        let arg = Object::new();
                        let _ = Reflect::set(&arg, &"error".into(), &get(&js, "error"));
                        let _ = Reflect::set(&arg, &"result".into(), &js);
                        let _ = f.call1(&JsValue::UNDEFINED, &arg);
                    }
                }
            }
        });
        Ok(())
    }

    fn result_promise(self: &Rc<Self>) -> Promise {
        let settled = self.settled.clone();
        future_to_promise(async move { settled.wait().await.map(|v| result_to_js(&v)).map_err(|e| error_to_js(&e)) })
    }
}

#[wasm_bindgen]
impl Run {
    #[wasm_bindgen(getter = runId)]
    pub fn run_id(&self) -> String {
        self.inner.core.run_id.clone()
    }

    #[wasm_bindgen(getter = workflowId)]
    pub fn workflow_id(&self) -> String {
        self.inner.wf.def.id.clone()
    }

    #[wasm_bindgen(getter = resourceId)]
    pub fn resource_id(&self) -> Option<String> {
        self.inner.core.resource_id.clone()
    }

    /// Runs the workflow; resolves to its `WorkflowResult` (a failed step resolves `failed`).
    #[wasm_bindgen(unchecked_return_type = "Promise<WorkflowResult>")]
    pub fn start(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "WorkflowRunOptions")] options: Option<JsValue>,
    ) -> Promise {
        match self.inner.begin(&options.unwrap_or(JsValue::UNDEFINED)) {
            Ok(()) => self.inner.result_promise(),
            Err(e) => Promise::reject(&e),
        }
    }

    /// Runs the workflow and returns its output at once; a second call returns the same run's.
    #[wasm_bindgen(unchecked_return_type = "WorkflowRunOutput")]
    pub fn stream(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "WorkflowRunOptions")] options: Option<JsValue>,
    ) -> Result<WorkflowRunOutput, JsValue> {
        if !self.inner.started.get() {
            self.inner.begin(&options.unwrap_or(JsValue::UNDEFINED))?;
        }
        Ok(WorkflowRunOutput { run: self.inner.clone() })
    }

    /// A new reader of this run's output: what happened so far, then live.
    #[wasm_bindgen(js_name = observeStream, unchecked_return_type = "WorkflowRunOutput")]
    pub fn observe_stream(&self) -> WorkflowRunOutput {
        WorkflowRunOutput { run: self.inner.clone() }
    }

    /// Stops the run: no later step starts; a running step may still finish.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn cancel(&self) -> Promise {
        self.inner.core.abort.abort(Some("the run was canceled".into()));
        Promise::resolve(&JsValue::UNDEFINED)
    }

    /// Calls `callback` with every event of the run (those so far first); returns `unwatch`.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn watch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: WorkflowStreamEvent) => void")] callback: JsValue,
    ) -> Result<Function, JsValue> {
        let cb: Function = callback
            .dyn_into()
            .map_err(|v| type_error("watch(callback)", &format!("expected a function, got {}", js_kind(&v))))?;
        let on = Rc::new(Cell::new(true));
        let mut reader = self.inner.core.log.reader();
        let flag = on.clone();
        wasm_bindgen_futures::spawn_local(async move {
            while let Some(e) = reader.next().await {
                if !flag.get() {
                    break;
                }
                // A throwing callback must not stop the run or the other readers.
                let _ = cb.call1(&JsValue::UNDEFINED, &from_json(&e));
            }
        });
        let unwatch = Closure::<dyn Fn()>::new(move || on.set(false));
        Ok(unwatch.into_js_value().unchecked_into())
    }
}

/// What `run.stream()` returns.
#[wasm_bindgen]
pub struct WorkflowRunOutput {
    run: Rc<RunInner>,
}

#[wasm_bindgen]
impl WorkflowRunOutput {
    #[wasm_bindgen(getter = runId)]
    pub fn run_id(&self) -> String {
        self.run.core.run_id.clone()
    }

    #[wasm_bindgen(getter = workflowId)]
    pub fn workflow_id(&self) -> String {
        self.run.wf.def.id.clone()
    }

    /// `running` until the run ends, then its status.
    #[wasm_bindgen(getter, unchecked_return_type = "WorkflowRunStatus")]
    pub fn status(&self) -> String {
        match &*self.run.settled.value.borrow() {
            None => "running".into(),
            Some(Ok(v)) => v["status"].as_str().unwrap_or("failed").into(),
            Some(Err(_)) => "failed".into(),
        }
    }

    /// Every event so far, then live, ending after `workflow-finish`. Each access is a new reader.
    #[wasm_bindgen(getter = fullStream, unchecked_return_type = "ReadableStream<WorkflowStreamEvent>")]
    pub fn full_stream(&self) -> Result<ReadableStream, JsValue> {
        event_stream(self.run.core.log.reader())
    }

    #[wasm_bindgen(getter, unchecked_return_type = "Promise<WorkflowResult>")]
    pub fn result(&self) -> Promise {
        self.run.result_promise()
    }

    /// Token usage summed over the agent steps.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<Usage>")]
    pub fn usage(&self) -> Promise {
        let run = self.run.clone();
        future_to_promise(async move {
            let _ = run.settled.wait().await;
            Ok(from_json(&run.core.usage()))
        })
    }

    /// Resolves when the run has ended.
    #[wasm_bindgen(js_name = consumeStream, unchecked_return_type = "Promise<void>")]
    pub fn consume_stream(&self) -> Promise {
        let run = self.run.clone();
        future_to_promise(async move {
            let _ = run.settled.wait().await;
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// A `ReadableStream` over one log reader; cancelling it drops only this reader.
fn event_stream(reader: LogReader) -> Result<ReadableStream, JsValue> {
    let slot = Rc::new(RefCell::new(Some(reader)));
    let pull_slot = slot.clone();
    // The stream owns these closures; they hold only the slot, emptied at the end or on cancel.
    let pull = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |ctrl: JsValue| {
        let slot = pull_slot.clone();
        future_to_promise(async move {
            let ctrl: ReadableStreamDefaultController = ctrl.unchecked_into();
            let Some(mut reader) = slot.borrow_mut().take() else { return Ok(JsValue::UNDEFINED) };
            match reader.next().await {
                Some(e) => {
                    ctrl.enqueue_with_chunk(&from_json(&e))?;
                    *slot.borrow_mut() = Some(reader);
                }
                None => ctrl.close()?,
            }
            Ok(JsValue::UNDEFINED)
        })
    })
    .into_js_value();
    let cancel = Closure::<dyn FnMut(JsValue)>::new(move |_reason: JsValue| {
        slot.borrow_mut().take();
    })
    .into_js_value();
    let source = Object::new();
    Reflect::set(&source, &"pull".into(), &pull)?;
    Reflect::set(&source, &"cancel".into(), &cancel)?;
    ReadableStream::new_with_underlying_source(&source)
}
