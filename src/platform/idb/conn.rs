//! The connection: opened lazily once per store, with the versioned schema, a timeout so a
//! blocked open never hangs, and `versionchange` handling so this tab never blocks another
//! tab's upgrade (it closes, and the next operation reopens).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{IdbDatabase, IdbFactory, IdbObjectStoreParameters, IdbOpenDbRequest, IdbVersionChangeEvent};

use super::tx::{dom_error, error_message, error_name, race, storage_error};
use crate::core::error::{AgentError, StorageKind};

/// The schema version this code writes and reads. Bump it together with a new arm in `upgrade`.
pub const SCHEMA_VERSION: u32 = 5;

pub(super) const THREADS: &str = "threads";
pub(super) const MESSAGES: &str = "messages";
pub(super) const RESOURCES: &str = "resources";
/// Background tasks (version 2).
pub(super) const TASKS: &str = "tasks";
/// Run records (version 3, SPEC §19.4), and the chunk log of reconnectable runs.
pub(super) const RUNS: &str = "runs";
pub(super) const RUN_CHUNKS: &str = "runChunks";
/// Semantic recall's vectors (version 4, SPEC §21.3), by `threadId` and by `resourceId`.
pub(super) const VECTORS: &str = "vectors";
pub(super) const VECTORS_BY_THREAD: &str = "byThread";
pub(super) const VECTORS_BY_RESOURCE: &str = "byResource";
/// Workflow snapshots (version 5, SPEC §20.5), by `[workflowName, runId]`.
pub(super) const WORKFLOW_RUNS: &str = "workflowRuns";
/// Scorers' rows (version 5, SPEC §14.2), by `id`.
pub(super) const SCORES: &str = "scores";
/// `threads` by `resourceId`.
pub(super) const BY_RESOURCE: &str = "byResource";
/// `messages` by `[threadId, createdAt, id]`: a thread's messages in time order.
pub(super) const BY_THREAD_TIME: &str = "byThreadTime";

pub(super) const DEFAULT_OPEN_TIMEOUT_MS: u32 = 5_000;

/// Takes the schema from `old_version` to `SCHEMA_VERSION`, one version at a time, inside the
/// `versionchange` transaction. Each version has its arm; a later one that changes existing stores
/// reaches them via `request.transaction().object_store(…)`. The arms before it stay as they are.
fn upgrade(db: &IdbDatabase, old_version: u32) -> Result<(), JsValue> {
    for version in old_version + 1..=SCHEMA_VERSION {
        match version {
            1 => {
                let by_id = IdbObjectStoreParameters::new();
                by_id.set_key_path(&"id".into());
                let threads = db.create_object_store_with_optional_parameters(THREADS, &by_id)?;
                threads.create_index_with_str(BY_RESOURCE, "resourceId")?;
                let messages = db.create_object_store_with_optional_parameters(MESSAGES, &by_id)?;
                let key: Array = ["threadId", "createdAt", "id"].iter().map(|k| JsValue::from_str(k)).collect();
                messages.create_index_with_str_sequence(BY_THREAD_TIME, &key)?;
                db.create_object_store_with_optional_parameters(RESOURCES, &by_id)?;
            }
            2 => {
                let by_id = IdbObjectStoreParameters::new();
                by_id.set_key_path(&"id".into());
                db.create_object_store_with_optional_parameters(TASKS, &by_id)?;
            }
            3 => {
                let by_run = IdbObjectStoreParameters::new();
                by_run.set_key_path(&"runId".into());
                let runs = db.create_object_store_with_optional_parameters(RUNS, &by_run)?;
                runs.create_index_with_str("threadId", "threadId")?;
                let key: Array = ["agentId", "status"].iter().map(|k| JsValue::from_str(k)).collect();
                runs.create_index_with_str_sequence("agentStatus", &key)?;
                let by_seq = IdbObjectStoreParameters::new();
                let key: Array = ["runId", "seq"].iter().map(|k| JsValue::from_str(k)).collect();
                by_seq.set_key_path(&key);
                db.create_object_store_with_optional_parameters(RUN_CHUNKS, &by_seq)?;
            }
            4 => {
                let by_id = IdbObjectStoreParameters::new();
                by_id.set_key_path(&"id".into());
                let vectors = db.create_object_store_with_optional_parameters(VECTORS, &by_id)?;
                vectors.create_index_with_str(VECTORS_BY_THREAD, "threadId")?;
                vectors.create_index_with_str(VECTORS_BY_RESOURCE, "resourceId")?;
            }
            5 => {
                let by_run = IdbObjectStoreParameters::new();
                let key: Array = ["workflowName", "runId"].iter().map(|k| JsValue::from_str(k)).collect();
                by_run.set_key_path(&key);
                db.create_object_store_with_optional_parameters(WORKFLOW_RUNS, &by_run)?;
                let by_id = IdbObjectStoreParameters::new();
                by_id.set_key_path(&"id".into());
                db.create_object_store_with_optional_parameters(SCORES, &by_id)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// `indexedDB` from the global object (pages, workers), or why there is none.
pub(super) fn factory() -> Result<IdbFactory, AgentError> {
    let unavailable = |why: String| {
        AgentError::storage(format!(
            "IndexedDB is not available in this runtime ({why}); use InMemoryStore or pass a storage object"
        ))
    };
    match Reflect::get(&js_sys::global(), &"indexedDB".into()) {
        Ok(f) if f.is_object() => Ok(f.unchecked_into()),
        Ok(_) => Err(unavailable("there is no global indexedDB".into())),
        // Opaque origins and some sandboxed frames throw a SecurityError on access.
        Err(e) => Err(unavailable(format!("reading indexedDB threw {}", error_name(&e)))),
    }
}

/// The cached connection of one store.
pub(super) struct Connection {
    pub(super) name: String,
    open_timeout_ms: u32,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    open: Option<Open>,
    /// The open in flight, shared by every operation that starts before it settles.
    opening: Option<Promise>,
}

struct Open {
    db: IdbDatabase,
    /// Set when the connection closed under us (another tab's upgrade or deletion, or the
    /// browser clearing storage); the next operation reopens.
    closed: Rc<Cell<bool>>,
    _on_versionchange: Closure<dyn FnMut()>,
    _on_close: Closure<dyn FnMut()>,
}

impl Open {
    fn new(db: IdbDatabase) -> Open {
        let closed = Rc::new(Cell::new(false));
        let (db2, flag) = (db.clone(), closed.clone());
        let on_versionchange = Closure::<dyn FnMut()>::new(move || {
            // Another tab wants to upgrade or delete the database: step aside.
            db2.close();
            flag.set(true);
        });
        let flag = closed.clone();
        let on_close = Closure::<dyn FnMut()>::new(move || flag.set(true));
        db.set_onversionchange(Some(on_versionchange.as_ref().unchecked_ref()));
        db.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        Open { db, closed, _on_versionchange: on_versionchange, _on_close: on_close }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.db.set_onversionchange(None);
        self.db.set_onclose(None);
    }
}

impl Connection {
    pub(super) fn new(name: &str, open_timeout_ms: u32) -> Connection {
        Connection { name: name.to_owned(), open_timeout_ms, state: RefCell::default() }
    }

    /// The open database, opening it on first use and after it was closed under us.
    pub(super) async fn db(&self) -> Result<IdbDatabase, AgentError> {
        let promise = {
            let mut st = self.state.borrow_mut();
            match &st.open {
                Some(open) if !open.closed.get() => return Ok(open.db.clone()),
                _ => st.open = None,
            }
            let (name, timeout) = (self.name.clone(), self.open_timeout_ms);
            st.opening
                .get_or_insert_with(|| {
                    future_to_promise(async move {
                        // The error crosses the shared promise as `{ name: code, message }`.
                        let opened = open(&name, timeout).await;
                        opened.map(JsValue::from).map_err(|e| dom_error(e.storage_code().unwrap_or_default(), &e.to_string()))
                    })
                })
                .clone()
        };
        let result = JsFuture::from(promise.clone()).await;
        let mut st = self.state.borrow_mut();
        if st.opening.as_ref().is_some_and(|p| JsValue::from(p) == JsValue::from(&promise)) {
            st.opening = None;
            if let Ok(db) = &result {
                st.open = Some(Open::new(db.clone().unchecked_into()));
            }
        }
        result
            .map(JsCast::unchecked_into)
            .map_err(|e| AgentError::storage_kind(StorageKind::from_code(&error_name(&e)), error_message(&e)))
    }

    /// Forgets a connection the browser closed (a transaction on it threw InvalidStateError).
    pub(super) fn forget(&self) {
        self.state.borrow_mut().open = None;
    }

    /// Closes the connection but keeps it cached, as if the browser had closed it unseen.
    pub(super) fn close_unseen(&self) {
        if let Some(open) = &self.state.borrow().open {
            open.db.close();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        if let Some(open) = st.open.take() {
            open.db.close();
        }
        if let Some(opening) = st.opening.take() {
            // Close what the open in flight brings, so it does not block other tabs.
            wasm_bindgen_futures::spawn_local(async move {
                if let Ok(db) = JsFuture::from(opening).await {
                    db.unchecked_into::<IdbDatabase>().close();
                }
            });
        }
    }
}

/// Opens `name` at `SCHEMA_VERSION`, creating or upgrading the schema. Fails instead of waiting
/// when another connection blocks the upgrade, and after `timeout_ms` in any case.
async fn open(name: &str, timeout_ms: u32) -> Result<IdbDatabase, AgentError> {
    let err = |what: &str, e: &JsValue| storage_error(name, what, e);
    let req = factory()?.open_with_u32(name, SCHEMA_VERSION).map_err(|e| err("opening the database", &e))?;
    let mut pending = PendingOpen::new(req);
    let settled =
        race(JsFuture::from(pending.promise.clone()), gloo_timers::future::TimeoutFuture::new(timeout_ms)).await;
    match settled {
        Ok(Ok(_)) => {
            pending.settled = true;
            Ok(pending.req.result().map_err(|e| err("opening the database", &e))?.unchecked_into())
        }
        Ok(Err(event)) if Reflect::get(&event, &"type".into()).ok().and_then(|t| t.as_string()).as_deref() == Some("blocked") => Err(AgentError::storage_kind(
            StorageKind::Blocked,
            format!(
                "opening IndexedDB '{name}' is blocked: another tab holds an older connection that does not close; close or reload the other tabs of this app"
            ),
        )),
        Ok(Err(_)) => {
            pending.settled = true;
            Err(err("opening the database", &request_error(&pending.req)))
        }
        Err(()) => Err(AgentError::storage_kind(
            StorageKind::Blocked,
            format!("opening IndexedDB '{name}' timed out after {timeout_ms} ms (blocked by another tab?)"),
        )),
    }
}

/// An open request and the schema callback it needs until it settles.
struct PendingOpen {
    req: IdbOpenDbRequest,
    promise: Promise,
    upgrade: Option<Closure<dyn FnMut(IdbVersionChangeEvent)>>,
    settled: bool,
}

impl PendingOpen {
    fn new(req: IdbOpenDbRequest) -> PendingOpen {
        let target = req.clone();
        let upgrade = Closure::<dyn FnMut(IdbVersionChangeEvent)>::new(move |event: IdbVersionChangeEvent| {
            let old = event.old_version() as u32;
            let done = target.result().and_then(|db| upgrade(&db.unchecked_into(), old));
            if done.is_err() {
                // Aborting the upgrade fails the open with AbortError instead of leaving a
                // database at version 1 without its stores.
                if let Some(tx) = target.transaction() {
                    let _ = tx.abort();
                }
            }
        });
        req.set_onupgradeneeded(Some(upgrade.as_ref().unchecked_ref()));
        let promise = Promise::new(&mut |resolve: Function, reject: Function| {
            req.set_onsuccess(Some(&resolve));
            req.set_onerror(Some(&reject));
            req.set_onblocked(Some(&reject));
        });
        PendingOpen { req, promise, upgrade: Some(upgrade), settled: false }
    }
}

impl Drop for PendingOpen {
    fn drop(&mut self) {
        let Some(upgrade) = self.upgrade.take() else { return };
        if self.settled {
            self.req.set_onupgradeneeded(None);
            return;
        }
        // Given up on (blocked, timed out): the request may still upgrade and succeed later,
        // when the other tab lets go. The schema callback must outlive it, and the connection it
        // yields must be closed so it blocks no one. Bounded: one small pair per abandoned open.
        upgrade.forget();
        let close = Closure::<dyn FnMut(JsValue)>::new(|event: JsValue| {
            let db = Reflect::get(&event, &"target".into()).and_then(|t| Reflect::get(&t, &"result".into()));
            if let Ok(db) = db {
                if db.is_object() {
                    db.unchecked_into::<IdbDatabase>().close();
                }
            }
        });
        let _ = self.req.add_event_listener_with_callback("success", close.as_ref().unchecked_ref());
        close.forget();
    }
}

/// Deletes database `name`. Waits while other connections close (ours do on `versionchange`),
/// up to the open timeout.
pub(super) async fn delete_database(name: &str, timeout_ms: u32) -> Result<(), AgentError> {
    let req = factory()?.delete_database(name).map_err(|e| storage_error(name, "deleting the database", &e))?;
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        req.set_onsuccess(Some(&resolve));
        req.set_onerror(Some(&reject));
    });
    match race(JsFuture::from(promise), gloo_timers::future::TimeoutFuture::new(timeout_ms)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(_)) => Err(storage_error(name, "deleting the database", &request_error(&req))),
        Err(()) => Err(AgentError::storage_kind(
            StorageKind::Blocked,
            format!("deleting IndexedDB '{name}' timed out after {timeout_ms} ms (another tab keeps it open?)"),
        )),
    }
}

/// A settled request's DOMException (read as a property: no `DomException` feature needed).
fn request_error(req: &JsValue) -> JsValue {
    Reflect::get(req, &"error".into()).unwrap_or(JsValue::UNDEFINED)
}
