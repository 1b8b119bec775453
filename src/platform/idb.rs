//! `IdbStore`: conversation memory in IndexedDB, the default storage wherever `indexedDB`
//! exists (pages and workers). It behaves exactly like `core::memory::InMemoryStore`; the tests in
//! `tests/wasm_idb.rs` run one behaviour suite against both.
//!
//! Records are the stores' JSON (`Thread::to_json`, …) as plain JavaScript objects, so other
//! code (devtools, an older or newer version) can read them. Every logical operation is one
//! transaction, and every write replaces whole records by id — never a read-modify-write of a
//! list — so two tabs writing one thread lose nothing. Loading the last N messages walks the
//! `byThreadTime` index backwards and reads N records, however long the thread is.
//!
//! This module must never await anything but a transaction's end while the transaction is
//! open (see `tx.rs`), and never hold a `RefCell` borrow across an await.

mod conn;
mod run_chunks;
mod tx;
mod vector_blocks;
mod vectors;
#[cfg(feature = "workflows")]
mod workflows;
#[cfg(feature = "scorers")]
mod scores;

#[cfg(feature = "bench-idb")]
mod bench;

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Array, JSON};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{IdbCursorDirection, IdbCursorWithValue, IdbKeyRange, IdbRequest, IdbTransactionMode};

use self::conn::{Connection, BY_RESOURCE, BY_THREAD_TIME, DEFAULT_OPEN_TIMEOUT_MS, MESSAGES, RESOURCES, RUNS, TASKS, THREADS, VECTORS};
use crate::core::runs::{apply_patch, RunFilter, RunRecord, RunStatus, RunStore};
use crate::core::background::{TaskFilter, TaskRecord, TaskStatus};
use self::tx::{error_name, storage_error, Tx};
use crate::core::env::LocalFuture;
use crate::core::error::{AgentError, StorageKind};
use crate::core::memory::vectors::{VectorHit, VectorQuery, VectorRecord, VectorTarget};
use crate::core::memory::{MessageQuery, Resource, Store, StoredMessage, Thread};

pub use self::conn::SCHEMA_VERSION;

/// What errors name the source of a bad record as.
const SOURCE: &str = "IndexedDB";

/// Conversation memory in the IndexedDB database `name` (one database per store; the caller
/// picks the name, `"wasm-agent"` by default). The connection opens on first use.
pub struct IdbStore {
    conn: Connection,
    /// Records read: cursor steps, `getAll` results, found `get`s (how the tests see that
    /// loading the last N messages reads N records).
    records_read: Rc<Cell<u64>>,
}

impl IdbStore {
    pub fn new(name: &str) -> IdbStore {
        IdbStore::with_open_timeout(name, DEFAULT_OPEN_TIMEOUT_MS)
    }

    /// Like `new`, failing an open that takes longer than `ms` (default 5 s) — the open waits
    /// while another tab's connection blocks an upgrade.
    pub fn with_open_timeout(name: &str, ms: u32) -> IdbStore {
        IdbStore { conn: Connection::new(name, ms), records_read: Rc::default() }
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.conn.name
    }

    /// Deletes the database `name` and everything in it. Connections of `IdbStore`s close on
    /// their own (and reopen an empty database on next use); another page's connection that does
    /// not close makes this fail after 5 s.
    pub async fn delete_database(name: &str) -> Result<(), AgentError> {
        conn::delete_database(name, DEFAULT_OPEN_TIMEOUT_MS).await
    }

    /// Records read from the database so far.
    #[doc(hidden)]
    pub fn records_read(&self) -> u64 {
        self.records_read.get()
    }

    /// Closes the connection without telling the store, as a browser may; the next operation
    /// meets InvalidStateError and must reopen. For tests.
    #[doc(hidden)]
    pub fn close_connection_unseen(&self) {
        self.conn.close_unseen();
    }

    /// Runs one transaction over `stores`: `issue` makes every request synchronously (chained
    /// ones through `Tx::on_success`), then the transaction's end is awaited and `issue`'s value
    /// (a request, or an array a callback filled) returned for reading results. A connection
    /// found closed is reopened once. Not generic, so there is one copy of it in the module.
    async fn transact(
        &self,
        what: &str,
        stores: &[&str],
        mode: IdbTransactionMode,
        issue: &mut dyn FnMut(&mut Tx) -> Result<JsValue, JsValue>,
    ) -> Result<JsValue, AgentError> {
        let names: Array = stores.iter().map(|s| JsValue::from_str(s)).collect();
        let mut reopened = false;
        loop {
            let db = self.conn.db().await?;
            let tx = match db.transaction_with_str_sequence_and_mode(&names, mode) {
                Ok(tx) => tx,
                Err(e) if !reopened && error_name(&e) == "InvalidStateError" => {
                    self.conn.forget();
                    reopened = true;
                    continue;
                }
                Err(e) => return Err(self.error(what, &e)),
            };
            let mut tx = Tx::new(tx);
            let out = match issue(&mut tx) {
                Ok(out) => out,
                Err(e) => {
                    tx.abort();
                    return Err(self.error(what, &e));
                }
            };
            tx.done().await.map_err(|e| self.error(what, &e))?;
            return Ok(out);
        }
    }

    fn error(&self, what: &str, e: &JsValue) -> AgentError {
        storage_error(&self.conn.name, what, e)
    }

    /// The record of `store` with key `key`, as JSON.
    async fn get(&self, store: &str, key: &JsValue, what: &str) -> Result<Option<Value>, AgentError> {
        let req = self
            .transact(what, &[store], Readonly, &mut |tx| tx.store(store)?.get(key).map(JsValue::from))
            .await?;
        let value = req.unchecked_into::<IdbRequest>().result().map_err(|e| self.error(what, &e))?;
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        self.records_read.set(self.records_read.get() + 1);
        from_js(&value, what).map(Some)
    }

    /// Creates or replaces one record of `store`.
    async fn put(&self, store: &str, record: &Value, what: &str) -> Result<(), AgentError> {
        let record = to_js(record).map_err(|e| self.error(what, &e))?;
        self.transact(what, &[store], Readwrite, &mut |tx| tx.store(store)?.put(&record).map(JsValue::from))
            .await
            .map(drop)
    }

    /// Every record of `store` whose `index` key matches `key` (a key or a key range), in index order.
    async fn get_all(&self, store: &str, index: &str, key: &JsValue, what: &str) -> Result<Vec<Value>, AgentError> {
        let req = self
            .transact(what, &[store], Readonly, &mut |tx| {
                tx.store(store)?.index(index)?.get_all_with_key(key).map(JsValue::from)
            })
            .await?;
        let records = self.read_array(req.unchecked_into::<IdbRequest>().result(), what)?;
        self.records_read.set(self.records_read.get() + records.len() as u64);
        Ok(records)
    }

    /// Every record of `store` (for the stores whose records are few: tasks, runs, workflow
    /// runs, scores), filtered by the caller.
    async fn all(&self, store: &str, what: &str) -> Result<Vec<Value>, AgentError> {
        let req = self.transact(what, &[store], Readonly, &mut |tx| tx.store(store)?.get_all().map(JsValue::from)).await?;
        let records = self.read_array(req.unchecked_into::<IdbRequest>().result(), what)?;
        self.records_read.set(self.records_read.get() + records.len() as u64);
        Ok(records)
    }

    fn read_array(&self, value: Result<JsValue, JsValue>, what: &str) -> Result<Vec<Value>, AgentError> {
        let value = value.map_err(|e| self.error(what, &e))?;
        match from_js(&value, what)? {
            Value::Array(records) => Ok(records),
            _ => Err(bad_record(what, "expected an array of records")),
        }
    }
}

fn bad_record(what: &str, e: impl std::fmt::Display) -> AgentError {
    let message = format!("IndexedDB returned a record that is not JSON while {what}: {e}");
    AgentError::storage_kind(StorageKind::Data, message)
}

/// Our JSON as a plain JavaScript object.
fn to_js(v: &Value) -> Result<JsValue, JsValue> {
    JSON::parse(&v.to_string())
}

/// A record back as JSON.
fn from_js(v: &JsValue, what: &str) -> Result<Value, AgentError> {
    let text = JSON::stringify(v).map_err(|e| bad_record(what, error_name(&e)))?;
    serde_json::from_str(&String::from(text)).map_err(|e| bad_record(what, e))
}

/// The `byThreadTime` keys of thread `id`, created strictly before `before` when given. The
/// shorter `[id]` sorts before every `[id, createdAt, msgId]` and `[id, []]` after them (arrays
/// sort after strings), so no createdAt value falls outside; `[id, before]` sorts before every
/// `[id, before, msgId]`, so messages created at `before` fall outside (open or not; open says so).
fn thread_range(id: &str, before: Option<&str>) -> Result<IdbKeyRange, JsValue> {
    let lower = Array::of1(&id.into());
    let (upper, upper_open) = match before {
        Some(b) => (Array::of2(&id.into(), &b.into()), true),
        None => (Array::of2(&id.into(), &Array::new()), false),
    };
    IdbKeyRange::bound_with_lower_open_and_upper_open(&lower, &upper, false, upper_open)
}

use IdbTransactionMode::{Readonly, Readwrite};

impl Store for IdbStore {
    fn get_thread_by_id<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Thread>, AgentError>> {
        Box::pin(async move {
            let record = self.get(THREADS, &id.into(), &format!("reading thread '{id}'")).await?;
            record.map(|v| Thread::from_json(&v, SOURCE)).transpose()
        })
    }

    fn save_thread<'a>(&'a self, thread: &'a Thread) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.put(THREADS, &thread.to_json(), &format!("saving thread '{}'", thread.id)).await })
    }

    fn delete_thread<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let what = format!("deleting thread '{id}'");
            // The thread, its messages and their vectors in one transaction.
            self.transact(&what, &[THREADS, MESSAGES, VECTORS], Readwrite, &mut |tx| {
                tx.store(THREADS)?.delete(&id.into())?;
                vectors::delete_thread_vectors(tx, id)?;
                let messages = tx.store(MESSAGES)?;
                let range = thread_range(id, None)?;
                let keys = messages.index(BY_THREAD_TIME)?.get_all_keys_with_key(&range)?;
                tx.on_success(keys, move |req| {
                    for key in req.result()?.unchecked_into::<Array>().iter() {
                        messages.delete(&key)?;
                    }
                    Ok(())
                });
                Ok(JsValue::UNDEFINED)
            })
            .await
            .map(drop)
        })
    }

    fn list_threads<'a>(&'a self, resource_id: &'a str) -> LocalFuture<'a, Result<Vec<Thread>, AgentError>> {
        Box::pin(async move {
            let what = format!("listing the threads of resource '{resource_id}'");
            let records = self.get_all(THREADS, BY_RESOURCE, &resource_id.into(), &what).await?;
            // The index yields ties in id order, as the in-memory store lists them.
            let mut threads = records.iter().map(|v| Thread::from_json(v, SOURCE)).collect::<Result<Vec<_>, _>>()?;
            crate::core::memory::newest_first(&mut threads);
            Ok(threads)
        })
    }

    fn list_messages<'a>(&'a self, q: &'a MessageQuery) -> LocalFuture<'a, Result<Vec<StoredMessage>, AgentError>> {
        Box::pin(async move {
            let what = format!("listing the messages of thread '{}'", q.thread_id);
            let range = thread_range(&q.thread_id, q.before.as_deref()).map_err(|e| self.error(&what, &e))?;
            let records = match q.last {
                Some(0) => return Ok(Vec::new()),
                None => self.get_all(MESSAGES, BY_THREAD_TIME, &range, &what).await?,
                Some(n) => {
                    // Newest first from the end of the thread's range, stopping after n.
                    let found = self
                        .transact(&what, &[MESSAGES], Readonly, &mut |tx| {
                            let cursor = tx
                                .store(MESSAGES)?
                                .index(BY_THREAD_TIME)?
                                .open_cursor_with_range_and_direction(&range, IdbCursorDirection::Prev)?;
                            let found = Array::new();
                            let (out, steps) = (found.clone(), self.records_read.clone());
                            tx.on_success(cursor, move |req| {
                                let cursor = req.result()?;
                                if cursor.is_null() {
                                    return Ok(());
                                }
                                steps.set(steps.get() + 1);
                                let cursor: IdbCursorWithValue = cursor.unchecked_into();
                                if (out.push(&cursor.value()?) as usize) < n {
                                    cursor.continue_()?;
                                }
                                Ok(())
                            });
                            Ok(found.into())
                        })
                        .await?;
                    let mut records = self.read_array(Ok(found), &what)?;
                    records.reverse();
                    records
                }
            };
            records.iter().map(|v| StoredMessage::from_json(v, SOURCE)).collect()
        })
    }

    fn save_messages<'a>(&'a self, messages: &'a [StoredMessage]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let what = match messages {
                [] => return Ok(()),
                [m] => format!("saving message '{}' of thread '{}'", m.id, m.thread_id),
                [m, ..] => format!("saving {} messages of thread '{}'", messages.len(), m.thread_id),
            };
            // One JSON.parse for the batch; a record keyed by id replaces the older one, in
            // whichever thread it was.
            let records: Array = to_js(&Value::Array(messages.iter().map(StoredMessage::to_json).collect()))
                .map_err(|e| self.error(&what, &e))?
                .unchecked_into();
            self.transact(&what, &[MESSAGES], Readwrite, &mut |tx| {
                let store = tx.store(MESSAGES)?;
                for record in records.iter() {
                    store.put(&record)?;
                }
                Ok(JsValue::UNDEFINED)
            })
            .await
            .map(drop)
        })
    }

    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            if ids.is_empty() {
                return Ok(());
            }
            let what = format!("deleting {} messages", ids.len());
            self.transact(&what, &[MESSAGES, VECTORS], Readwrite, &mut |tx| {
                let (store, vectors) = (tx.store(MESSAGES)?, tx.store(VECTORS)?);
                for id in ids {
                    store.delete(&id.into())?;
                    vectors.delete(&id.into())?;
                }
                Ok(JsValue::UNDEFINED)
            })
            .await
            .map(drop)
        })
    }

    fn get_resource<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Resource>, AgentError>> {
        Box::pin(async move {
            let record = self.get(RESOURCES, &id.into(), &format!("reading resource '{id}'")).await?;
            record.map(|v| Resource::from_json(&v, SOURCE)).transpose()
        })
    }

    fn save_resource<'a>(&'a self, resource: &'a Resource) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            self.put(RESOURCES, &resource.to_json(), &format!("saving resource '{}'", resource.id)).await
        })
    }

    fn save_task<'a>(&'a self, task: &'a TaskRecord, _previous: Option<TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.put(TASKS, &task.to_json(), &format!("saving background task '{}'", task.id)).await })
    }

    fn list_tasks<'a>(&'a self, filter: &'a TaskFilter) -> LocalFuture<'a, Result<Vec<TaskRecord>, AgentError>> {
        Box::pin(async move {
            let records = self.all(TASKS, "listing background tasks").await?;
            let tasks: Result<Vec<TaskRecord>, AgentError> = records.iter().map(|r| TaskRecord::from_json(r, "IndexedDB")).collect();
            Ok(tasks?.into_iter().filter(|t| filter.matches(t)).collect())
        })
    }

    fn runs(&self) -> Option<&dyn RunStore> {
        Some(self)
    }

    #[cfg(feature = "workflows")]
    fn workflows(&self) -> Option<&dyn crate::core::workflow::store::WorkflowStore> {
        Some(self)
    }

    #[cfg(feature = "recall")]
    fn save_vectors<'a>(&'a self, records: &'a [VectorRecord]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(self.save_vector_records(records))
    }

    #[cfg(feature = "recall")]
    fn query_vectors<'a>(&'a self, query: &'a VectorQuery) -> LocalFuture<'a, Result<Vec<VectorHit>, AgentError>> {
        Box::pin(self.query_vector_records(query))
    }

    #[cfg(feature = "recall")]
    fn delete_vectors<'a>(&'a self, target: &'a VectorTarget) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(self.delete_vector_records(target))
    }
}

/// Run records in the `runs` object store (SPEC §19.4).
impl RunStore for IdbStore {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move { self.put(RUNS, &run.to_json(), &format!("saving run '{}'", run.run_id)).await })
    }

    fn get_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        Box::pin(async move {
            let record = self.get(RUNS, &run_id.into(), &format!("reading run '{run_id}'")).await?;
            record.map(|v| RunRecord::from_json(&v, SOURCE)).transpose()
        })
    }

    /// The read, the status check and the write are one readwrite transaction: two tabs
    /// claiming one run are serialized by IndexedDB, and exactly one sees the expected status.
    fn update_run<'a>(&'a self, run_id: &'a str, patch: &'a Value, expected: Option<RunStatus>) -> LocalFuture<'a, Result<Option<RunRecord>, AgentError>> {
        Box::pin(async move {
            let what = format!("updating run '{run_id}'");
            let patch_js = to_js(patch).map_err(|e| self.error(&what, &e))?;
            let found = self
                .transact(&what, &[RUNS], Readwrite, &mut |tx| {
                    let store = tx.store(RUNS)?;
                    let req = store.get(&run_id.into())?;
                    let out = Array::new();
                    let (into, patch) = (out.clone(), patch_js.clone());
                    tx.on_success(req, move |req| {
                        let record = req.result()?;
                        if record.is_undefined() || record.is_null() {
                            return Ok(());
                        }
                        let status = js_sys::Reflect::get(&record, &"status".into())?.as_string();
                        if expected.is_some_and(|e| status.as_deref() != Some(e.as_str())) {
                            return Ok(());
                        }
                        let keys = js_sys::Object::keys(patch.unchecked_ref::<js_sys::Object>());
                        for k in keys.iter() {
                            if k.as_string().as_deref() != Some("runId") {
                                js_sys::Reflect::set(&record, &k, &js_sys::Reflect::get(&patch, &k)?)?;
                            }
                        }
                        store.put(&record)?;
                        into.push(&record);
                        Ok(())
                    });
                    Ok(out.into())
                })
                .await?;
            let mut records = self.read_array(Ok(found), &what)?;
            match records.pop() {
                None => Ok(None),
                Some(mut v) => {
                    // The same patch as written, so the record returned is the record stored.
                    apply_patch(&mut v, patch);
                    RunRecord::from_json(&v, SOURCE).map(Some)
                }
            }
        })
    }

    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> LocalFuture<'a, Result<Vec<RunRecord>, AgentError>> {
        Box::pin(async move {
            let records = self.all(RUNS, "listing runs").await?;
            let runs: Result<Vec<RunRecord>, AgentError> = records.iter().map(|r| RunRecord::from_json(r, SOURCE)).collect();
            Ok(runs?.into_iter().filter(|r| filter.matches(r)).collect())
        })
    }

    fn delete_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let what = format!("deleting run '{run_id}'");
            self.transact(&what, &[RUNS], Readwrite, &mut |tx| tx.store(RUNS)?.delete(&run_id.into()).map(JsValue::from)).await.map(drop)
        })
    }

    fn append_run_chunks<'a>(&'a self, run_id: &'a str, chunks: &'a [Value]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(self.append_chunks(run_id, chunks))
    }

    fn list_run_chunks<'a>(&'a self, run_id: &'a str, after: u64, limit: Option<usize>) -> LocalFuture<'a, Result<Vec<Value>, AgentError>> {
        Box::pin(self.list_chunks(run_id, after, limit))
    }

    fn delete_run_chunks<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(self.delete_chunks(run_id))
    }
}
