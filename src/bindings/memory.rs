//! `Memory`, `InMemoryStore`, and user storage objects as stores.
//!
//! A store class made here is found again from its JavaScript object through a registry of
//! weak references keyed by the id the object reports, so `new Memory({ storage })` can use the
//! Rust store behind it without taking the JavaScript object apart.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::registry::Registry;
use super::convert::{error_to_js, from_json, js_kind, read, to_json, type_error, Data};
use super::tools::{call_async, thrown_message};
use crate::core::background::{TaskFilter, TaskRecord, TaskStatus};
use crate::core::runs::{RunFilter, RunRecord, RunStatus, RunStore};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::memory::vectors::{VectorHit, VectorQuery, VectorRecord, VectorTarget};
use crate::core::memory::{
    parse_memory_options, stored_to_ui, InMemoryStore as CoreInMemoryStore, MemoryConfig, MessageQuery, Resource, StoredMessage, Store, Thread,
};

thread_local! {
    static STORES: Registry<dyn Store> = const { Registry::new() };
    static MEMORIES: Registry<MemoryInner> = const { Registry::new() };
}

/// Registers a store made here; returns the id its JavaScript object reports.
pub fn register_store(store: &Rc<dyn Store>) -> u32 {
    STORES.with(|s| s.add(store))
}

fn lookup_store(obj: &JsValue) -> Option<Rc<dyn Store>> {
    STORES.with(|s| s.lookup(obj, "__storeId"))
}

/// Keeps conversations in memory: the default where there is no IndexedDB.
#[wasm_bindgen(js_name = InMemoryStore)]
pub struct JsInMemoryStore {
    _store: Rc<dyn Store>,
    id: u32,
    /// The scores the agents' scorers save here (SPEC §14.2).
    #[cfg(feature = "scorers")]
    scores: crate::core::scoring::ScoreRows,
}

#[wasm_bindgen(js_class = InMemoryStore)]
impl JsInMemoryStore {
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsInMemoryStore {
        let store: Rc<dyn Store> = Rc::new(CoreInMemoryStore::new());
        let id = register_store(&store);
        JsInMemoryStore {
            _store: store,
            id,
            #[cfg(feature = "scorers")]
            scores: Default::default(),
        }
    }

    #[doc(hidden)]
    #[wasm_bindgen(js_name = __storeId, skip_typescript)]
    pub fn store_id(&self) -> u32 {
        self.id
    }
}

#[cfg(feature = "scorers")]
#[wasm_bindgen(js_class = InMemoryStore)]
impl JsInMemoryStore {
    /// Stores a scorer's row (an agent's scorers call it after a run, SPEC §14.2); `id` and
    /// `createdAt` are added when absent.
    #[wasm_bindgen(js_name = saveScore, unchecked_return_type = "Promise<{ score: ScoreRow }>")]
    pub fn save_score(&self, #[wasm_bindgen(unchecked_param_type = "Record<string, unknown>")] row: JsValue) -> Promise {
        let saved = score_row(&row).map(|row| self.scores.save(row, &mut new_score_id, &score_time()));
        match saved {
            Ok(score) => Promise::resolve(&from_json(&serde_json::json!({ "score": score }))),
            Err(e) => Promise::reject(&error_to_js(&e)),
        }
    }

    /// The stored scores matching every filter given, oldest first.
    #[wasm_bindgen(js_name = listScores, unchecked_return_type = "Promise<ScoreRow[]>")]
    pub fn list_scores(&self, #[wasm_bindgen(unchecked_param_type = "ScoreFilter")] filter: Option<JsValue>) -> Promise {
        match score_filter(filter.as_ref()) {
            Ok(f) => Promise::resolve(&from_json(&Value::Array(self.scores.list(&f)))),
            Err(e) => Promise::reject(&error_to_js(&e)),
        }
    }
}

/// `saveScore`'s argument as JSON: an object, or an error naming it.
#[cfg(feature = "scorers")]
fn score_row(row: &JsValue) -> Result<Value, AgentError> {
    match row.is_object() {
        true => to_json(row, "saveScore(row)"),
        false => Err(AgentError::invalid("saveScore(row)", format!("expected an object, got {}", js_kind(row)))),
    }
}

#[cfg(feature = "scorers")]
fn score_filter(filter: Option<&JsValue>) -> Result<Value, AgentError> {
    Ok(filter.map(|f| to_json(f, "listScores(filter)")).transpose()?.unwrap_or(Value::Null))
}

#[cfg(feature = "scorers")]
fn new_score_id() -> String {
    crate::core::env::Env::new_id(&crate::platform::JsEnv)
}

#[cfg(feature = "scorers")]
fn score_time() -> String {
    crate::core::memory::iso_time(js_sys::Date::now())
}

impl Default for JsInMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

/// Keeps conversations in the browser's IndexedDB (database `name`, default "wasm-agent"):
/// they survive a reload with no server.
#[wasm_bindgen(js_name = IndexedDBStore)]
pub struct JsIndexedDbStore {
    #[cfg_attr(not(feature = "scorers"), allow(dead_code))]
    idb: Rc<crate::platform::idb::IdbStore>,
    id: u32,
    name: String,
}

#[wasm_bindgen(js_class = IndexedDBStore)]
impl JsIndexedDbStore {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_optional_param_type = "{ name?: string }")] options: Option<JsValue>) -> Result<JsIndexedDbStore, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let name = read(&options, "name", "new IndexedDBStore(options)")?;
        let name = match name.as_string() {
            Some(n) if !n.is_empty() => n,
            None if name.is_undefined() || name.is_null() => DEFAULT_DB.to_string(),
            _ => return Err(type_error("new IndexedDBStore(options).name", &format!("expected a non-empty string, got {}", js_kind(&name)))),
        };
        let idb = Rc::new(crate::platform::idb::IdbStore::new(&name));
        let id = register_store(&(idb.clone() as Rc<dyn Store>));
        Ok(JsIndexedDbStore { idb, id, name })
    }

    #[doc(hidden)]
    #[wasm_bindgen(js_name = __storeId, skip_typescript)]
    pub fn store_id(&self) -> u32 {
        self.id
    }

    /// The database's name: `memory.watch` events cross tabs on a channel named after it.
    #[doc(hidden)]
    #[wasm_bindgen(js_name = __dbName, skip_typescript)]
    pub fn db_name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(feature = "scorers")]
#[wasm_bindgen(js_class = IndexedDBStore)]
impl JsIndexedDbStore {
    /// Stores a scorer's row in the database (an agent's scorers call it after a run, SPEC
    /// §14.2); `id` and `createdAt` are added when absent. A row with a stored id replaces it.
    #[wasm_bindgen(js_name = saveScore, unchecked_return_type = "Promise<{ score: ScoreRow }>")]
    pub fn save_score(&self, #[wasm_bindgen(unchecked_param_type = "Record<string, unknown>")] row: JsValue) -> Promise {
        let (row, idb) = (score_row(&row), self.idb.clone());
        future_to_promise(async move {
            let score = idb.save_score(row.map_err(|e| error_to_js(&e))?, &mut new_score_id, &score_time()).await;
            Ok(from_json(&serde_json::json!({ "score": score.map_err(|e| error_to_js(&e))? })))
        })
    }

    /// The stored scores matching every filter given, oldest first.
    #[wasm_bindgen(js_name = listScores, unchecked_return_type = "Promise<ScoreRow[]>")]
    pub fn list_scores(&self, #[wasm_bindgen(unchecked_param_type = "ScoreFilter")] filter: Option<JsValue>) -> Promise {
        let (filter, idb) = (score_filter(filter.as_ref()), self.idb.clone());
        future_to_promise(async move {
            let rows = idb.list_scores(&filter.map_err(|e| error_to_js(&e))?).await.map_err(|e| error_to_js(&e))?;
            Ok(from_json(&Value::Array(rows)))
        })
    }
}

const DEFAULT_DB: &str = "wasm-agent";

/// The storage methods a user object must have, with the argument each takes.
const STORE_METHODS: &[&str] = &[
    "getThreadById",
    "saveThread",
    "deleteThread",
    "listThreads",
    "listMessages",
    "saveMessages",
    "deleteMessages",
    "getResource",
    "saveResource",
];

/// A JavaScript object with the storage methods (a Worker's KV, D1 or Durable Object adapter).
/// Every method takes one object argument and may return a promise.
pub struct JsStore {
    obj: JsValue,
}

impl JsStore {
    pub fn new(obj: JsValue, field: &str) -> Result<JsStore, JsValue> {
        let missing: Vec<&str> = STORE_METHODS
            .iter()
            .copied()
            .filter(|m| !Reflect::get(&obj, &JsValue::from_str(m)).map(|f| f.is_function()).unwrap_or(false))
            .collect();
        if !missing.is_empty() {
            return Err(type_error(
                field,
                &format!("is missing the storage method{} {}; a storage object needs {}", if missing.len() > 1 { "s" } else { "" }, missing.join(", "), STORE_METHODS.join(", ")),
            ));
        }
        Ok(JsStore { obj })
    }

    pub(super) fn has(&self, method: &str) -> bool {
        Reflect::get(&self.obj, &JsValue::from_str(method)).map(|f| f.is_function()).unwrap_or(false)
    }

    pub(super) async fn call(&self, method: &str, arg: Value) -> Result<JsValue, AgentError> {
        self.call_with(method, &from_json(&arg)).await
    }

    /// `call` with the argument already a JavaScript value.
    pub(super) async fn call_with(&self, method: &str, arg: &JsValue) -> Result<JsValue, AgentError> {
        let f: Function = Reflect::get(&self.obj, &JsValue::from_str(method))
            .ok()
            .and_then(|f| f.dyn_into().ok())
            .ok_or_else(|| AgentError::storage(format!("storage.{method} is not a function")))?;
        call_async(&f, &self.obj, &[arg])
            .await
            .map_err(|e| {
                // A storage object over IndexedDB or localStorage throws their DOMExceptions:
                // `QuotaExceededError` is `code: 'quota'` here too.
                let name = Reflect::get(&e, &"name".into()).ok().and_then(|n| n.as_string()).unwrap_or_default();
                let message = format!("storage.{method} failed: {}", thrown_message(&e));
                AgentError::storage_kind(crate::core::error::StorageKind::from_dom_name(&name), message)
            })
    }

    pub(super) async fn call_json(&self, method: &str, arg: Value) -> Result<Value, AgentError> {
        let v = self.call(method, arg).await?;
        to_json(&v, &format!("storage.{method}() result")).map_err(|e| AgentError::storage(e.to_string()))
    }

    fn list_of<T>(v: Value, method: &str, read: impl Fn(&Value, &str) -> Result<T, AgentError>) -> Result<Vec<T>, AgentError> {
        let what = format!("storage.{method}");
        match v {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items.iter().map(|i| read(i, &what)).collect(),
            // `{ messages: [...] }` or `{ threads: [...] }`, as some adapters answer.
            Value::Object(o) => match o.values().find(|x| x.is_array()) {
                Some(Value::Array(items)) => items.iter().map(|i| read(i, &what)).collect(),
                _ => Err(AgentError::storage(format!("{what} returned an object without an array"))),
            },
            _ => Err(AgentError::storage(format!("{what} returned something that is not an array"))),
        }
    }
}

impl Store for JsStore {
    fn get_thread_by_id<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Thread>, AgentError>> {
        Box::pin(async move {
            match self.call_json("getThreadById", serde_json::json!({ "threadId": id })).await? {
                Value::Null => Ok(None),
                v => Thread::from_json(&v, "storage.getThreadById").map(Some),
            }
        })
    }
    fn save_thread<'a>(&'a self, thread: &'a Thread) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.call("saveThread", serde_json::json!({ "thread": thread.to_json() })).await.map(drop) })
    }
    fn delete_thread<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            self.call("deleteThread", serde_json::json!({ "threadId": id })).await?;
            self.delete_vectors(&VectorTarget::Thread(id.to_string())).await
        })
    }
    fn list_threads<'a>(&'a self, resource_id: &'a str) -> LocalFuture<'a, Result<Vec<Thread>, AgentError>> {
        Box::pin(async move {
            let v = self.call_json("listThreads", serde_json::json!({ "resourceId": resource_id })).await?;
            Self::list_of(v, "listThreads", Thread::from_json)
        })
    }
    fn list_messages<'a>(&'a self, q: &'a MessageQuery) -> LocalFuture<'a, Result<Vec<StoredMessage>, AgentError>> {
        Box::pin(async move {
            let mut arg = serde_json::json!({ "threadId": q.thread_id });
            if let Some(n) = q.last {
                arg["last"] = n.into();
            }
            if let Some(b) = &q.before {
                arg["before"] = b.as_str().into();
            }
            let v = self.call_json("listMessages", arg).await?;
            let mut msgs = Self::list_of(v, "listMessages", StoredMessage::from_json)?;
            // Hold adapters to the contract: time order, and no more than asked for.
            crate::core::memory::sort_stable(&mut msgs, &|a, b| (a.created_at.as_str(), a.id.as_str()).cmp(&(b.created_at.as_str(), b.id.as_str())));
            if let Some(n) = q.last {
                let extra = msgs.len().saturating_sub(n);
                msgs.drain(..extra);
            }
            Ok(msgs)
        })
    }
    fn save_messages<'a>(&'a self, messages: &'a [StoredMessage]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let list: Vec<Value> = messages.iter().map(StoredMessage::to_json).collect();
            self.call("saveMessages", serde_json::json!({ "messages": list })).await.map(drop)
        })
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            self.call("deleteMessages", serde_json::json!({ "messageIds": ids })).await?;
            self.delete_vectors(&VectorTarget::Ids(ids.to_vec())).await
        })
    }
    fn get_resource<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Resource>, AgentError>> {
        Box::pin(async move {
            match self.call_json("getResource", serde_json::json!({ "resourceId": id })).await? {
                Value::Null => Ok(None),
                v => Resource::from_json(&v, "storage.getResource").map(Some),
            }
        })
    }
    fn save_resource<'a>(&'a self, resource: &'a Resource) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.call("saveResource", serde_json::json!({ "resource": resource.to_json() })).await.map(drop) })
    }

    /// `createTask({ task })`, then `updateTask({ id, patch, expectedStatus })`. Both are
    /// optional: a storage object without them does not keep background tasks.
    fn save_task<'a>(&'a self, task: &'a TaskRecord, previous: Option<TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let (method, arg) = match previous {
                None => ("createTask", serde_json::json!({ "task": task.to_json() })),
                Some(p) => {
                    let mut patch = task.to_json();
                    if let Some(o) = patch.as_object_mut() {
                        o.remove("id");
                    }
                    ("updateTask", serde_json::json!({ "id": task.id, "patch": patch, "expectedStatus": p.as_str() }))
                }
            };
            if !self.has(method) {
                return Ok(());
            }
            self.call(method, arg).await.map(drop)
        })
    }

    #[cfg(feature = "recall")]
    /// `saveVectors({ records })` (optional, with `queryVectors`).
    fn save_vectors<'a>(&'a self, records: &'a [VectorRecord]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            if !self.has("saveVectors") {
                return Err(AgentError::storage("the storage object has no saveVectors/queryVectors, so semantic recall cannot index messages"));
            }
            let list: Vec<Value> = records.iter().map(VectorRecord::to_json).collect();
            self.call("saveVectors", serde_json::json!({ "records": list })).await.map(drop)
        })
    }

    #[cfg(feature = "recall")]
    /// `queryVectors({ vector, topK, resourceId?, threadId?, threshold? })` → `{ id, score }[]`.
    fn query_vectors<'a>(&'a self, q: &'a VectorQuery) -> LocalFuture<'a, Result<Vec<VectorHit>, AgentError>> {
        Box::pin(async move {
            if !self.has("queryVectors") {
                return Err(AgentError::storage("the storage object has no queryVectors, so semantic recall finds nothing"));
            }
            let v = self.call_json("queryVectors", q.to_json()).await?;
            let mut hits = Self::list_of(v, "queryVectors", |h, what| {
                let id = h.get("id").and_then(Value::as_str).ok_or_else(|| AgentError::storage(format!("{what} returned a hit without a string id")))?;
                let score = h.get("score").and_then(Value::as_f64).ok_or_else(|| AgentError::storage(format!("{what} returned hit '{id}' without a numeric score")))?;
                Ok(VectorHit { id: id.to_string(), score: score as f32 })
            })?;
            // Hold adapters to the contract: best first, no more than asked for.
            crate::core::memory::sort_stable(&mut hits, &|a, b| b.score.total_cmp(&a.score));
            hits.truncate(q.top_k);
            Ok(hits)
        })
    }

    #[cfg(feature = "recall")]
    /// `deleteVectors({ threadId } | { ids })`; nothing without the method.
    fn delete_vectors<'a>(&'a self, target: &'a VectorTarget) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            if !self.has("deleteVectors") {
                return Ok(());
            }
            self.call("deleteVectors", target.to_json()).await.map(drop)
        })
    }

    /// The run methods when the object has them all; else one `console.warn` per process says
    /// runs live only in this page or isolate.
    fn runs(&self) -> Option<&dyn RunStore> {
        if RUN_METHODS.iter().all(|m| self.has(m)) {
            return Some(self);
        }
        if !WARNED_NO_RUNS.with(|w| w.replace(true)) {
            super::report::warn(&format!(
                "wasm-agent: the storage object has no {}: suspended runs are kept only in this page or process, so a decision after a reload or in another process finds nothing",
                RUN_METHODS.join("/")
            ));
        }
        None
    }

    #[cfg(feature = "workflows")]
    fn workflows(&self) -> Option<&dyn crate::core::workflow::store::WorkflowStore> {
        super::workflow_storage::js_workflows(self)
    }

    /// `listTasks({ agentId?, threadId?, status? })`; none without the method.
    fn list_tasks<'a>(&'a self, filter: &'a TaskFilter) -> LocalFuture<'a, Result<Vec<TaskRecord>, AgentError>> {
        Box::pin(async move {
            if !self.has("listTasks") {
                return Ok(Vec::new());
            }
            let v = self.call_json("listTasks", filter.to_json()).await?;
            let tasks = Self::list_of(v, "listTasks", TaskRecord::from_json)?;
            // Hold adapters to the filter.
            Ok(tasks.into_iter().filter(|t| filter.matches(t)).collect())
        })
    }
}

/// The run methods of a user storage object (SPEC §19.4), all optional.
const RUN_METHODS: &[&str] = &["saveRun", "getRun", "updateRun", "listRuns", "deleteRun"];

thread_local! {
    static WARNED_NO_RUNS: Cell<bool> = const { Cell::new(false) };
}

impl JsStore {
    fn run_of(v: Value, method: &str) -> Result<Option<RunRecord>, AgentError> {
        match v {
            Value::Null => Ok(None),
            v => RunRecord::from_json(&v, &format!("storage.{method}")).map(Some),
        }
    }
}

impl RunStore for JsStore {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.call("saveRun", serde_json::json!({ "run": run.to_json() })).await.map(drop) })
    }
    fn get_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        Box::pin(async move { Self::run_of(self.call_json("getRun", serde_json::json!({ "runId": run_id })).await?, "getRun") })
    }
    fn update_run<'a>(&'a self, run_id: &'a str, patch: &'a Value, expected: Option<RunStatus>) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        Box::pin(async move {
            let mut arg = serde_json::json!({ "runId": run_id, "patch": patch });
            if let Some(e) = expected {
                arg["expectedStatus"] = e.as_str().into();
            }
            Self::run_of(self.call_json("updateRun", arg).await?, "updateRun")
        })
    }
    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<Vec<RunRecord>, AgentError>> {
        Box::pin(async move {
            let v = self.call_json("listRuns", filter.to_json()).await?;
            let runs = Self::list_of(v, "listRuns", RunRecord::from_json)?;
            Ok(runs.into_iter().filter(|r| filter.matches(r)).collect())
        })
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.call("deleteRun", serde_json::json!({ "runId": run_id })).await.map(drop) })
    }
    /// `appendRunChunks({ runId, chunks })` (SPEC §19.4): one call per batch.
    fn append_run_chunks<'a>(&'a self, run_id: &'a str, chunks: &'a [Value]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            self.needs_chunk_methods()?;
            self.call("appendRunChunks", serde_json::json!({ "runId": run_id, "chunks": chunks })).await.map(drop)
        })
    }
    /// `listRunChunks({ runId, after, limit? })`, held to its contract (ascending, after `after`).
    fn list_run_chunks<'a>(&'a self, run_id: &'a str, after: u64, limit: Option<usize>) -> LocalFuture<'a, Result<Vec<Value>, AgentError>> {
        Box::pin(async move {
            self.needs_chunk_methods()?;
            let mut arg = serde_json::json!({ "runId": run_id, "after": after });
            if let Some(n) = limit {
                arg["limit"] = n.into();
            }
            match self.call_json("listRunChunks", arg).await? {
                Value::Array(chunks) => Ok(crate::core::runs::chunks_in_order(chunks, after, limit)),
                Value::Null => Ok(Vec::new()),
                _ => Err(AgentError::storage("storage.listRunChunks returned something that is not an array of chunks")),
            }
        })
    }
    fn delete_run_chunks<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            if !self.keeps_chunks() {
                return Ok(());
            }
            self.call("deleteRunChunks", serde_json::json!({ "runId": run_id })).await.map(drop)
        })
    }
}

/// The chunk-log methods of a user storage object (SPEC §19.4), needed by `reconnectable` runs.
pub(super) const CHUNK_METHODS: &[&str] = &["appendRunChunks", "listRunChunks", "deleteRunChunks"];

impl JsStore {
    pub(super) fn keeps_chunks(&self) -> bool {
        CHUNK_METHODS.iter().all(|m| self.has(m))
    }

    fn needs_chunk_methods(&self) -> Result<(), AgentError> {
        if self.keeps_chunks() {
            return Ok(());
        }
        Err(AgentError::storage(format!("the storage object has no {}, so it keeps no chunk log for reconnectable runs", CHUNK_METHODS.join("/"))))
    }
}

/// A store from `storage`: one of ours, a user object, or the default for this runtime.
pub(super) fn store_from(storage: &JsValue, field: &str) -> Result<Rc<dyn Store>, JsValue> {
    if storage.is_undefined() || storage.is_null() {
        return Ok(default_store());
    }
    if !storage.is_object() {
        return Err(type_error(field, &format!("expected a store (new InMemoryStore(), new IndexedDBStore()) or an object with the storage methods, got {}", js_kind(storage))));
    }
    if let Some(store) = lookup_store(storage) {
        return Ok(store);
    }
    Ok(Rc::new(JsStore::new(storage.clone(), field)?))
}

/// IndexedDB where the runtime has it, else memory.
pub(super) fn default_store() -> Rc<dyn Store> {
    let has_idb = Reflect::get(&js_sys::global(), &"indexedDB".into()).map(|v| v.is_object()).unwrap_or(false);
    if has_idb {
        Rc::new(crate::platform::idb::IdbStore::new(DEFAULT_DB))
    } else {
        Rc::new(CoreInMemoryStore::new())
    }
}

pub struct MemoryInner {
    pub store: Rc<dyn Store>,
    pub options: MemoryConfig,
    /// The options as given, for settings read elsewhere (`generateTitle`).
    pub options_json: Value,
    /// `storage` as given, for its optional `saveScore` (SPEC §14.2).
    pub storage: JsValue,
    /// The `embedder`'s indexing queue (semantic recall, SPEC §21.3).
    pub indexer: Option<Rc<crate::core::memory::recall::Indexer>>,
    /// `memory.watch` (SPEC §21.2): `store` reports its writes here.
    #[cfg(feature = "watch")]
    pub hub: Rc<super::watch::Hub>,
}

/// The IndexedDB database behind `storage` (given, or the default where there is IndexedDB).
#[cfg(feature = "watch")]
fn database_of(storage: &JsValue) -> Option<String> {
    if storage.is_undefined() || storage.is_null() {
        let has_idb = Reflect::get(&js_sys::global(), &"indexedDB".into()).map(|v| v.is_object()).unwrap_or(false);
        return has_idb.then(|| DEFAULT_DB.to_string());
    }
    let f = Reflect::get(storage, &"__dbName".into()).ok()?.dyn_into::<Function>().ok()?;
    lookup_store(storage)?;
    f.call0(storage).ok()?.as_string()
}

/// The `Memory` behind a JavaScript `Memory` object (for `new Agent({ memory })`).
pub fn lookup_memory(obj: &JsValue) -> Option<Rc<MemoryInner>> {
    MEMORIES.with(|m| m.lookup(obj, "__memoryId"))
}

/// Conversation memory: threads and messages in a store.
#[wasm_bindgen]
pub struct Memory {
    inner: Rc<MemoryInner>,
    id: u32,
}

fn arg_str(arg: &JsValue, key: &str, method: &str) -> Result<String, JsValue> {
    if let Some(s) = arg.as_string() {
        return Ok(s);
    }
    let path = format!("memory.{method}(…)");
    let v = if arg.is_object() { read(arg, key, &path)? } else { arg.clone() };
    let got = js_kind(&v);
    v.as_string().ok_or_else(|| type_error(&format!("{path}.{key}"), &format!("expected a string, got {got}")))
}

/// One `future_to_promise` for every method: boxing the future keeps a single copy of the
/// promise glue in the wasm instead of one per method.
fn promise(fut: impl std::future::Future<Output = Result<JsValue, AgentError>> + 'static) -> Promise {
    let fut: LocalFuture<'static, Result<JsValue, AgentError>> = Box::pin(fut);
    run_promise(fut)
}

#[inline(never)]
fn run_promise(fut: LocalFuture<'static, Result<JsValue, AgentError>>) -> Promise {
    future_to_promise(async move { fut.await.map_err(|e| error_to_js(&e)) })
}

#[wasm_bindgen]
impl Memory {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_optional_param_type = "MemoryInit")] config: Option<JsValue>) -> Result<Memory, JsValue> {
        let config = config.unwrap_or(JsValue::UNDEFINED);
        if !(config.is_undefined() || config.is_null() || config.is_object()) {
            return Err(type_error("new Memory(config)", "expected an object like { storage, options } or nothing"));
        }
        let get = |k: &str| read(&config, k, "new Memory(config)");
        let storage = get("storage")?;
        let store = store_from(&storage, "new Memory(config).storage")?;
        const O: &str = "new Memory(config).options";
        let options_json = Data::of(&get("options")?, O).map_err(|e| error_to_js(&e))?;
        let options =
            options_json.parse(|t| parse_memory_options(t, &MemoryConfig::default(), O)).map_err(|e| error_to_js(&e))?;
        let options_json = options_json.tree;
        let indexer = indexer_of(&get("embedder")?, &store, &options)?;
        #[cfg(feature = "watch")]
        let (store, hub) = {
            let hub = super::watch::Hub::new(database_of(&storage));
            let to = Rc::downgrade(&hub);
            let report = Rc::new(move |e| {
                if let Some(hub) = to.upgrade() {
                    hub.report(e);
                }
            });
            (Rc::new(crate::core::memory::watched::WatchedStore::new(store, report)) as Rc<dyn Store>, hub)
        };
        let inner = Rc::new(MemoryInner {
            store,
            options,
            options_json,
            storage,
            #[cfg(feature = "watch")]
            hub,
            indexer,
        });
        let id = MEMORIES.with(|m| m.add(&inner));
        Ok(Memory { inner, id })
    }

    #[doc(hidden)]
    #[wasm_bindgen(js_name = __memoryId, skip_typescript)]
    pub fn memory_id(&self) -> u32 {
        self.id
    }

    /// `getThreadById({ threadId })` (or the id itself): the thread, or `null`.
    #[wasm_bindgen(js_name = getThreadById, unchecked_return_type = "Promise<StorageThread | null>")]
    pub fn get_thread_by_id(&self, #[wasm_bindgen(unchecked_param_type = "string | { threadId: string }")] arg: JsValue) -> Result<Promise, JsValue> {
        let id = arg_str(&arg, "threadId", "getThreadById")?;
        let store = self.inner.store.clone();
        Ok(promise(async move { Ok(store.get_thread_by_id(&id).await?.map(|t| from_json(&t.to_json())).unwrap_or(JsValue::NULL)) }))
    }

    /// `listThreads({ resourceId })`: the resource's threads, most recently updated first.
    #[wasm_bindgen(js_name = listThreads, unchecked_return_type = "Promise<StorageThread[]>")]
    pub fn list_threads(&self, #[wasm_bindgen(unchecked_param_type = "{ resourceId: string }")] arg: JsValue) -> Result<Promise, JsValue> {
        let id = arg_str(&arg, "resourceId", "listThreads")?;
        let store = self.inner.store.clone();
        Ok(promise(async move {
            let threads = store.list_threads(&id).await?;
            Ok(from_json(&Value::Array(threads.iter().map(Thread::to_json).collect())))
        }))
    }

    /// `listMessages({ threadId, last?, before?, format? })`: stored messages in time order, or
    /// with `format: 'ui'` the same as UI messages ready to render.
    #[wasm_bindgen(js_name = listMessages, unchecked_return_type = "Promise<StorageMessage[] | UIMessage[]>")]
    pub fn list_messages(&self, #[wasm_bindgen(unchecked_param_type = "ListMessagesArgs")] arg: JsValue) -> Result<Promise, JsValue> {
        let thread_id = arg_str(&arg, "threadId", "listMessages")?;
        let path = "memory.listMessages(…)";
        let opts = match arg.is_object() {
            true => Data::pick(&arg, &["last", "before", "format"], path).and_then(Data::strict),
            false => Ok(Value::Null),
        };
        let opts = opts.map_err(|e| error_to_js(&e))?;
        let last = crate::core::input::opt_u64(&opts, "last", path).map_err(|e| error_to_js(&e))?.map(|n| n as usize);
        let before = crate::core::input::opt_str(&opts, "before", path).map_err(|e| error_to_js(&e))?.map(str::to_owned);
        let ui = match crate::core::input::opt_str(&opts, "format", path).map_err(|e| error_to_js(&e))? {
            None | Some("v2") => false,
            Some("ui") => true,
            Some(other) => return Err(type_error("memory.listMessages(…).format", &format!("expected 'ui' or 'v2', got '{other}'"))),
        };
        let store = self.inner.store.clone();
        Ok(promise(async move {
            let msgs = store.list_messages(&MessageQuery { thread_id, last, before }).await?;
            let out: Vec<Value> = msgs.iter().map(|m| if ui { stored_to_ui(m) } else { m.to_json() }).collect();
            Ok(from_json(&Value::Array(out)))
        }))
    }

    /// `updateThread({ id, title?, metadata? })`: the updated thread.
    #[wasm_bindgen(js_name = updateThread, unchecked_return_type = "Promise<StorageThread>")]
    pub fn update_thread(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ id: string; title?: string; metadata?: Record<string, unknown> }")] arg: JsValue,
    ) -> Result<Promise, JsValue> {
        let id = arg_str(&arg, "id", "updateThread")?;
        const F: &str = "memory.updateThread(…)";
        let patch = Data::pick(&arg, &["title", "metadata"], F).and_then(Data::strict).map_err(|e| error_to_js(&e))?;
        let title = crate::core::input::opt_str(&patch, "title", F).map_err(|e| error_to_js(&e))?.map(str::to_owned);
        let metadata = crate::core::input::opt_object(&patch, "metadata", F).map_err(|e| error_to_js(&e))?;
        let metadata = metadata.map(|m| Value::Object(m.clone()));
        let store = self.inner.store.clone();
        Ok(promise(async move {
            let mut t = store.get_thread_by_id(&id).await?.ok_or_else(|| AgentError::storage(format!("There is no thread '{id}' to update")))?;
            if title.is_some() {
                t.title = title;
            }
            if metadata.is_some() {
                t.metadata = metadata;
            }
            t.updated_at = crate::core::memory::iso_time(js_sys::Date::now());
            store.save_thread(&t).await?;
            Ok(from_json(&t.to_json()))
        }))
    }

    /// `deleteMessages(messageIds)`: removes those messages (ids as strings or `{ id }` objects,
    /// one or an array) from whatever thread holds them; ids stored nowhere are ignored.
    #[wasm_bindgen(js_name = deleteMessages, unchecked_return_type = "Promise<void>")]
    pub fn delete_messages(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | { id: string } | Array<string | { id: string }>")] ids: JsValue,
    ) -> Result<Promise, JsValue> {
        const F: &str = "memory.deleteMessages(messageIds)";
        let one = |v: &JsValue, path: &str| -> Result<String, JsValue> {
            let v = if v.is_object() && !js_sys::Array::is_array(v) { read(v, "id", path)? } else { v.clone() };
            let got = js_kind(&v);
            v.as_string().filter(|s| !s.is_empty()).ok_or_else(|| type_error(path, &format!("expected a message id (a non-empty string or {{ id }}), got {got}")))
        };
        let list = match js_sys::Array::is_array(&ids) {
            true => js_sys::Array::from(&ids).iter().enumerate().map(|(i, v)| one(&v, &format!("{F}[{i}]"))).collect::<Result<Vec<_>, _>>()?,
            false => vec![one(&ids, F)?],
        };
        let store = self.inner.store.clone();
        Ok(promise(async move {
            if !list.is_empty() {
                store.delete_messages(&list).await?;
            }
            Ok(JsValue::UNDEFINED)
        }))
    }

    /// `watch({ threadId } | { resourceId }, listener)`: calls `listener` with every event of
    /// that thread or resource (messages saved, thread updated or deleted, task updated, and
    /// the live chunks of its runs), from this instance and from other tabs on the same
    /// IndexedDB database, in order. Returns `unwatch()`.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn watch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ threadId: string } | { resourceId: string }")] scope: JsValue,
        #[wasm_bindgen(unchecked_param_type = "(event: MemoryEvent) => void")] listener: JsValue,
    ) -> Result<JsValue, JsValue> {
        #[cfg(not(feature = "watch"))]
        {
            let _ = (scope, listener);
            Err(error_to_js(&crate::core::features::not_built("memory.watch", "memory.watch", "watch")))
        }
        #[cfg(feature = "watch")]
        self.inner.hub.watch(&scope, &listener)
    }

    /// `deleteThread(threadId)`: the thread and its messages.
    #[wasm_bindgen(js_name = deleteThread, unchecked_return_type = "Promise<void>")]
    pub fn delete_thread(&self, #[wasm_bindgen(unchecked_param_type = "string | { threadId: string }")] arg: JsValue) -> Result<Promise, JsValue> {
        let id = arg_str(&arg, "threadId", "deleteThread")?;
        let store = self.inner.store.clone();
        Ok(promise(async move {
            store.delete_thread(&id).await?;
            Ok(JsValue::UNDEFINED)
        }))
    }
}

/// The indexer for `embedder`; semantic recall without one is a TypeError.
#[cfg(feature = "recall")]
fn indexer_of(embedder: &JsValue, store: &Rc<dyn Store>, options: &MemoryConfig) -> Result<Option<Rc<crate::core::memory::recall::Indexer>>, JsValue> {
    if embedder.is_undefined() || embedder.is_null() {
        if options.semantic_recall.is_some() {
            return Err(type_error("new Memory(config).embedder", "is required with options.semanticRecall: pass 'openai/text-embedding-3-small', an AI SDK EmbeddingModel or a function (texts) => Promise<number[][]>"));
        }
        return Ok(None);
    }
    let e = super::embedders::embedder_from(embedder)?;
    Ok(Some(super::embedders::indexer(e, store.clone())))
}

/// A build without semantic recall ignores the embedder (`semanticRecall` warns instead).
#[cfg(not(feature = "recall"))]
fn indexer_of(_: &JsValue, _: &Rc<dyn Store>, _: &MemoryConfig) -> Result<Option<Rc<crate::core::memory::recall::Indexer>>, JsValue> {
    Ok(None)
}

impl Memory {
    pub fn inner(&self) -> &Rc<MemoryInner> {
        &self.inner
    }
}
