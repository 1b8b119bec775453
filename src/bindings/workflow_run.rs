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
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::workflow::context::{RunCore, Snapshot};
use crate::core::memory::Store;
use crate::core::workflow::result::WorkflowResult;
use crate::core::workflow::snapshot::{self, StoredRun};

/// How an execution ended: its status, and its `WorkflowResult` as JSON text (written once;
/// each reader of `result` parses it).
#[derive(Clone)]
pub(crate) struct Ended {
    status: &'static str,
    text: Rc<str>,
}

impl Ended {
    pub(crate) fn of(result: &WorkflowResult, include_state: bool) -> Self {
        let text = match (&result.text, include_state) {
            (Some(t), false) => t.clone(),
            _ => result.to_text(include_state).into(),
        };
        Ended { status: result.status.as_str(), text }
    }
}

/// The run's end, once: its result, or why it could not start.
#[derive(Default)]
struct Settled {
    /// `Err`: why the execution never ran (a start that failed, a resume refused).
    value: RefCell<Option<Result<Ended, JsValue>>>,
    wakers: RefCell<Vec<Waker>>,
}

impl Settled {
    fn set(&self, v: Result<Ended, JsValue>) {
        *self.value.borrow_mut() = Some(v);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        wakers.into_iter().for_each(Waker::wake);
    }

    async fn wait(&self) -> Result<Ended, JsValue> {
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

/// One execution of a run: its start, or a resume.
pub(crate) struct Exec {
    pub(crate) core: Rc<RunCore>,
    settled: Rc<Settled>,
}

impl Exec {
    pub(crate) fn settle(&self, v: Result<Ended, JsValue>) {
        self.settled.set(v);
    }

    pub(crate) fn result_promise(&self) -> Promise {
        let settled = self.settled.clone();
        future_to_promise(async move { settled.wait().await.map(|v| result_to_js(&v)) })
    }
}

pub(crate) struct RunInner {
    pub(crate) wf: Rc<WfInner>,
    pub(crate) host: Rc<JsHost>,
    pub(crate) run_id: String,
    pub(crate) resource_id: Option<String>,
    /// The latest execution (what `observeStream`, `watch` and `cancel` act on).
    current: RefCell<Rc<Exec>>,
    /// `watch` callers waiting for the next execution (a resume or restart of this run).
    next_wakers: RefCell<Vec<Waker>>,
    started: Cell<bool>,
}

/// Writes `snapshot` for the run of `core` to `store` (a store without workflow methods keeps
/// nothing, and says so once where it is set up).
pub(crate) async fn persist(store: &dyn Store, name: &str, core: &RunCore, snapshot: Snapshot) -> Result<(), AgentError> {
    let Some(runs) = store.workflows() else { return Ok(()) };
    let now = core.now();
    let mut run = StoredRun {
        workflow_name: name.into(),
        run_id: core.run_id.clone(),
        resource_id: core.resource_id.clone(),
        snapshot: Value::Null,
        created_at: now,
        updated_at: now,
    };
    match snapshot {
        Snapshot::Value(v) => {
            run.snapshot = v;
            runs.persist_snapshot(&run).await
        }
        Snapshot::Text { status, text } => runs.persist_text(run, status, text).await,
    }
}

/// Gives the engine its way to `store` (SPEC §20.5): the snapshots at the start and the end of
/// an execution, and a `running` one after each top-level node when the store outlives this
/// process (so `restart` finds the run's last finished step). A write that fails fails the run
/// with a `StorageError`. Holds the run weakly: it owns the hook.
pub(crate) fn store_snapshots(store: &Rc<dyn Store>, name: &str, core: &Rc<RunCore>) {
    let Some(runs) = store.workflows() else { return };
    core.per_step.set(runs.outlives_process());
    let (store, name, run) = (store.clone(), name.to_owned(), Rc::downgrade(core));
    *core.persist.borrow_mut() = Some(Rc::new(move |snapshot: Snapshot| -> LocalFuture<'static, Result<(), AgentError>> {
        let (store, name, run) = (store.clone(), name.clone(), run.clone());
        Box::pin(async move {
            match run.upgrade() {
                Some(core) => persist(&*store, &name, &core, snapshot).await,
                None => Ok(()),
            }
        })
    }));
}

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

/// The result for JavaScript: `error` is an `Error` with the step's `name` and `message`.
fn result_to_js(v: &Ended) -> JsValue {
    let out = js_sys::JSON::parse(&v.text).unwrap_or(JsValue::NULL);
    let e = get(&out, "error");
    if e.is_object() {
        let err = js_sys::Error::new(&get(&e, "message").as_string().unwrap_or_default());
        err.set_name(&get(&e, "name").as_string().unwrap_or_else(|| "Error".into()));
        let _ = Reflect::set(&out, &"error".into(), &err);
    }
    out
}

#[wasm_bindgen]
impl Workflow {
    /// A run of this workflow (with `runId` of a stored run: that run, e.g. to resume it); throws
    /// (an `Error`) before `.commit()` or without steps.
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
        let wf = self.inner.clone();
        Ok(future_to_promise(async move {
            let name = wf.def.id.clone();
            let store = wf.store();
            let runs = store.workflows().ok_or_else(|| error_to_js(&AgentError::storage("the workflow store keeps no snapshots")))?;
            let stored = runs.load_run(&name, &run_id).await.map_err(|e| error_to_js(&e))?;
            let resource_id = resource_id.or_else(|| stored.as_ref().and_then(|s| s.resource_id.clone()));
            let host = Rc::new(JsHost::default());
            let core = RunCore::new(run_id.clone(), resource_id.clone(), Rc::new(crate::platform::JsEnv), host.clone());
            if stored.is_none() {
                let pending = snapshot::initial(&core, "pending", &Value::Null);
                persist(&*store, &name, &core, Snapshot::Value(pending)).await.map_err(|e| error_to_js(&e))?;
            }
            let exec = Rc::new(Exec { core, settled: Rc::default() });
            let inner = Rc::new(RunInner {
                wf,
                host,
                run_id,
                resource_id,
                current: RefCell::new(exec),
                next_wakers: RefCell::default(),
                started: Cell::new(stored.is_some_and(|s| s.status() != "pending")),
            });
            Ok(JsValue::from(Run { inner }))
        }))
    }
}

#[wasm_bindgen]
pub struct Run {
    pub(crate) inner: Rc<RunInner>,
}

impl RunInner {
    /// Starts the engine once with `options` (`inputData`, `initialState`, `requestContext`,
    /// `outputOptions.includeState`); bad options are a `TypeError`.
    fn begin(self: &Rc<Self>, options: &JsValue) -> Result<(), JsValue> {
        if self.started.get() {
            let message =
                "This run already started: read it with run.observeStream() or make another with workflow.createRun()";
            return Err(js_sys::Error::new(message).into());
        }
        if !(options.is_undefined() || options.is_null() || options.is_object()) {
            let message = format!("expected {{ inputData, initialState?, requestContext? }}, got {}", js_kind(options));
            return Err(type_error("options", &message));
        }
        let input = to_json(&get(options, "inputData"), "options.inputData").map_err(|e| error_to_js(&e))?;
        let state = get(options, "initialState");
        let state = match state.is_undefined() {
            true => None,
            false => Some(to_json(&state, "options.initialState").map_err(|e| error_to_js(&e))?),
        };
        let include_state = get(&get(options, "outputOptions"), "includeState").is_truthy();
        let exec = self.exec();
        let rc = get(options, "requestContext");
        if !rc.is_undefined() {
            let plain = if rc.has_type::<js_sys::Map>() {
                Object::from_entries(&rc).unwrap_or_default().into()
            } else {
                rc.clone()
            };
            *exec.core.request_context.borrow_mut() =
                to_json(&plain, "options.requestContext").map_err(|e| error_to_js(&e))?;
        }
        *self.host.request_context.borrow_mut() = rc;
        self.arm(&exec.core)?;
        let (def, wf) = (self.wf.def.clone(), self.wf.clone());
        let store = wf.store();
        store_snapshots(&store, &def.id, &exec.core);
        wasm_bindgen_futures::spawn_local(async move {
            let core = exec.core.clone();
            let _live = super::workflow_live::hold(&def.id, &core.run_id);
            // The engine writes the run's snapshots; one that did not start is written here.
            let r = crate::core::workflow::start(core.clone(), def.clone(), input.clone(), state).await;
            if r.is_err() {
                let failed = snapshot::initial(&core, "failed", &input);
                if let Err(e) = persist(&*store, &def.id, &core, Snapshot::Value(failed)).await {
                    let message = format!("wasm-agent: the failed run '{}' of workflow '{}' was not stored: {e}", core.run_id, def.id);
                    super::report::warn(&message);
                }
            }
            let value = r.map(|res| Ended::of(&res, include_state)).map_err(|e| error_to_js(&e));
            exec.settle(value.clone());
            after_run(&wf, &value);
        });
        Ok(())
    }

    /// A fresh signal for an execution, aborted with its abort flag; the run counts as started.
    fn arm(&self, core: &RunCore) -> Result<(), JsValue> {
        let controller = web_sys::AbortController::new()?;
        *self.host.signal.borrow_mut() = controller.signal().into();
        core.abort.on_abort(Box::new(move || controller.abort()));
        self.started.set(true);
        Ok(())
    }

    pub(crate) fn exec(&self) -> Rc<Exec> {
        self.current.borrow().clone()
    }

    /// Makes the next execution (a resume) current: a fresh log, abort flag and signal.
    pub(crate) fn next_exec(&self) -> Result<Rc<Exec>, JsValue> {
        let exec = self.fresh_exec();
        self.install(&exec)?;
        Ok(exec)
    }

    /// An execution not yet current (a resume whose claim is still to be made).
    pub(crate) fn fresh_exec(&self) -> Rc<Exec> {
        let core = RunCore::new(
            self.run_id.clone(),
            self.resource_id.clone(),
            Rc::new(crate::platform::JsEnv),
            self.host.clone(),
        );
        Rc::new(Exec { core, settled: Rc::default() })
    }

    /// Makes `exec` current, with its own signal.
    pub(crate) fn install(&self, exec: &Rc<Exec>) -> Result<(), JsValue> {
        self.arm(&exec.core)?;
        let old = self.current.replace(exec.clone());
        // The placeholder of a run made from a stored one never runs: its readers end here.
        if old.core.log.is_empty() {
            old.core.log.close();
        }
        let wakers = std::mem::take(&mut *self.next_wakers.borrow_mut());
        wakers.into_iter().for_each(Waker::wake);
        Ok(())
    }

    /// The execution after `exec` once there is one; `None` when `exec` ended the run for good
    /// (not suspended) or the run is gone.
    async fn after(this: std::rc::Weak<Self>, exec: Rc<Exec>) -> Option<Rc<Exec>> {
        poll_fn(|cx| {
            let Some(run) = this.upgrade() else { return Poll::Ready(None) };
            let current = run.exec();
            if !Rc::ptr_eq(&current, &exec) {
                return Poll::Ready(Some(current));
            }
            let ended = match &*exec.settled.value.borrow() {
                Some(Ok(v)) => v.status != "suspended",
                Some(Err(_)) => true,
                None => false,
            };
            if ended {
                return Poll::Ready(None);
            }
            run.next_wakers.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// `options.onFinish(result)`, and `options.onError({ error, result })` for a failed run, called
/// after the run's state is released.
pub(crate) fn after_run(wf: &WfInner, value: &Result<Ended, JsValue>) {
    let Ok(v) = value else { return };
    if wf.on_finish.is_none() && (wf.on_error.is_none() || v.status != "failed") {
        return;
    }
    let js = result_to_js(v);
    if let Some(f) = &wf.on_finish {
        let _ = f.call1(&JsValue::UNDEFINED, &js);
    }
    if v.status == "failed" {
        if let Some(f) = &wf.on_error {
            let arg = Object::new();
            let _ = Reflect::set(&arg, &"error".into(), &get(&js, "error"));
            let _ = Reflect::set(&arg, &"result".into(), &js);
            let _ = f.call1(&JsValue::UNDEFINED, &arg);
        }
    }
}

#[wasm_bindgen]
impl Run {
    #[wasm_bindgen(getter = runId)]
    pub fn run_id(&self) -> String {
        self.inner.run_id.clone()
    }

    #[wasm_bindgen(getter = workflowId)]
    pub fn workflow_id(&self) -> String {
        self.inner.wf.def.id.clone()
    }

    #[wasm_bindgen(getter = resourceId)]
    pub fn resource_id(&self) -> Option<String> {
        self.inner.resource_id.clone()
    }

    /// Runs the workflow; resolves to its `WorkflowResult` (a failed step resolves `failed`).
    #[wasm_bindgen(unchecked_return_type = "Promise<WorkflowResult>")]
    pub fn start(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "WorkflowRunOptions")] options: Option<JsValue>,
    ) -> Promise {
        match self.inner.begin(&options.unwrap_or(JsValue::UNDEFINED)) {
            Ok(()) => self.inner.exec().result_promise(),
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
        Ok(WorkflowRunOutput::of(&self.inner))
    }

    /// A new reader of this run's output: what happened so far, then live.
    #[wasm_bindgen(js_name = observeStream, unchecked_return_type = "WorkflowRunOutput")]
    pub fn observe_stream(&self) -> WorkflowRunOutput {
        WorkflowRunOutput::of(&self.inner)
    }

    /// Stops the run: no later step starts; a running step may still finish.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn cancel(&self) -> Promise {
        self.inner.exec().core.abort.abort(Some("the run was canceled".into()));
        // A suspended run is canceled in storage too.
        let inner = self.inner.clone();
        future_to_promise(async move {
            let store = inner.wf.store();
            if let Some(runs) = store.workflows() {
                let now = js_sys::Date::now();
                let r = runs.update_status(&inner.wf.def.id, &inner.run_id, "canceled", Some("suspended"), now).await;
                r.map_err(|e| error_to_js(&e))?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Calls `callback` with every event of the run (those so far first), also of its resumes
    /// and restarts after a suspension; returns `unwatch`.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn watch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: WorkflowStreamEvent) => void")] callback: JsValue,
    ) -> Result<Function, JsValue> {
        let cb: Function = callback
            .dyn_into()
            .map_err(|v| type_error("watch(callback)", &format!("expected a function, got {}", js_kind(&v))))?;
        let on = Rc::new(Cell::new(true));
        let (run, mut exec) = (Rc::downgrade(&self.inner), self.inner.exec());
        let flag = on.clone();
        wasm_bindgen_futures::spawn_local(async move {
            loop {
                let mut reader = exec.core.log.reader();
                while let Some(e) = reader.next_text().await {
                    if !flag.get() {
                        return;
                    }
                    // A throwing callback must not stop the run or the other readers.
                    let _ = cb.call1(&JsValue::UNDEFINED, &event_to_js(&e));
                }
                // Suspended: a resume (or a restart) of this run goes on in a new execution.
                match RunInner::after(run.clone(), exec).await {
                    Some(next) if flag.get() => exec = next,
                    _ => return,
                }
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
    exec: Rc<Exec>,
}

impl WorkflowRunOutput {
    /// The output of the run's current execution.
    pub(crate) fn of(run: &Rc<RunInner>) -> Self {
        Self::new(run, run.exec())
    }

    pub(crate) fn new(run: &Rc<RunInner>, exec: Rc<Exec>) -> Self {
        WorkflowRunOutput { run: run.clone(), exec }
    }
}

#[wasm_bindgen]
impl WorkflowRunOutput {
    #[wasm_bindgen(getter = runId)]
    pub fn run_id(&self) -> String {
        self.run.run_id.clone()
    }

    #[wasm_bindgen(getter = workflowId)]
    pub fn workflow_id(&self) -> String {
        self.run.wf.def.id.clone()
    }

    /// `running` until the run ends, then its status.
    #[wasm_bindgen(getter, unchecked_return_type = "WorkflowRunStatus")]
    pub fn status(&self) -> String {
        match &*self.exec.settled.value.borrow() {
            None => "running".into(),
            Some(Ok(v)) => v.status.into(),
            Some(Err(_)) => "failed".into(),
        }
    }

    /// Every event so far, then live, ending after `workflow-finish`. Each access is a new reader.
    #[wasm_bindgen(getter = fullStream, unchecked_return_type = "ReadableStream<WorkflowStreamEvent>")]
    pub fn full_stream(&self) -> Result<ReadableStream, JsValue> {
        event_stream(&self.exec)
    }

    #[wasm_bindgen(getter, unchecked_return_type = "Promise<WorkflowResult>")]
    pub fn result(&self) -> Promise {
        self.exec.result_promise()
    }

    /// Token usage summed over the agent steps.
    #[wasm_bindgen(getter, unchecked_return_type = "Promise<Usage>")]
    pub fn usage(&self) -> Promise {
        let exec = self.exec.clone();
        future_to_promise(async move {
            let _ = exec.settled.wait().await;
            Ok(from_json(&exec.core.usage()))
        })
    }

    /// Resolves when the run has ended.
    #[wasm_bindgen(js_name = consumeStream, unchecked_return_type = "Promise<void>")]
    pub fn consume_stream(&self) -> Promise {
        let exec = self.exec.clone();
        future_to_promise(async move {
            let _ = exec.settled.wait().await;
            Ok(JsValue::UNDEFINED)
        })
    }
}

fn event_to_js(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap_or(JsValue::NULL)
}

/// A `ReadableStream` over a new reader of `exec`'s log; cancelling it drops only this reader.
/// An execution that never ran (a refused resume) errors the stream with why.
fn event_stream(exec: &Rc<Exec>) -> Result<ReadableStream, JsValue> {
    let slot = Rc::new(RefCell::new(Some((exec.core.log.reader(), exec.clone()))));
    let pull_slot = slot.clone();
    // The stream owns these closures; they hold only the slot, emptied at the end or on cancel.
    let pull = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |ctrl: JsValue| {
        let slot = pull_slot.clone();
        future_to_promise(async move {
            let ctrl: ReadableStreamDefaultController = ctrl.unchecked_into();
            let Some((mut reader, exec)) = slot.borrow_mut().take() else { return Ok(JsValue::UNDEFINED) };
            match reader.next_text().await {
                Some(e) => {
                    ctrl.enqueue_with_chunk(&event_to_js(&e))?;
                    // What is already there goes in the same pull (a pull is a promise and a
                    // task each); the queue holds it for the reader.
                    while let Some(e) = reader.try_next_text() {
                        ctrl.enqueue_with_chunk(&event_to_js(&e))?;
                    }
                    *slot.borrow_mut() = Some((reader, exec));
                }
                None => match &*exec.settled.value.borrow() {
                    Some(Err(why)) if exec.core.log.is_empty() => ctrl.error_with_e(why),
                    _ => ctrl.close()?,
                },
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
