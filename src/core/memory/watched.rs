//! A store that reports its writes (SPEC §21.2): every write that succeeded becomes a
//! [`MemoryEvent`] handed to `report`, after the write, in the order the writes finished.
//! Reads pass through untouched. What `report` does with an event (watchers, other tabs) is
//! the caller's.

use std::rc::Rc;

use super::vectors::{VectorHit, VectorQuery, VectorRecord, VectorTarget};
use super::watch::MemoryEvent;
use super::{MessageQuery, Resource, Store, StoredMessage, Thread};
use crate::core::background::{TaskFilter, TaskRecord, TaskStatus};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;

pub struct WatchedStore {
    inner: Rc<dyn Store>,
    report: Rc<dyn Fn(MemoryEvent)>,
}

impl WatchedStore {
    pub fn new(inner: Rc<dyn Store>, report: Rc<dyn Fn(MemoryEvent)>) -> WatchedStore {
        WatchedStore { inner, report }
    }
}

impl Store for WatchedStore {
    fn get_thread_by_id<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Thread>, AgentError>> {
        self.inner.get_thread_by_id(id)
    }
    fn save_thread<'a>(&'a self, thread: &'a Thread) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            self.inner.save_thread(thread).await?;
            (self.report)(MemoryEvent::ThreadUpdated(thread.clone()));
            Ok(())
        })
    }
    fn delete_thread<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            // Read first so that the resource's watchers hear of it too.
            let resource_id = self.inner.get_thread_by_id(id).await.ok().flatten().map(|t| t.resource_id);
            self.inner.delete_thread(id).await?;
            (self.report)(MemoryEvent::ThreadDeleted { thread_id: id.to_owned(), resource_id });
            Ok(())
        })
    }
    fn list_threads<'a>(&'a self, resource_id: &'a str) -> LocalFuture<'a, Result<Vec<Thread>, AgentError>> {
        self.inner.list_threads(resource_id)
    }
    fn list_messages<'a>(&'a self, query: &'a MessageQuery) -> LocalFuture<'a, Result<Vec<StoredMessage>, AgentError>> {
        self.inner.list_messages(query)
    }
    fn save_messages<'a>(&'a self, messages: &'a [StoredMessage]) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            self.inner.save_messages(messages).await?;
            for e in MemoryEvent::messages_saved(messages) {
                (self.report)(e);
            }
            Ok(())
        })
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.delete_messages(ids)
    }
    fn get_resource<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Resource>, AgentError>> {
        self.inner.get_resource(id)
    }
    fn save_resource<'a>(&'a self, resource: &'a Resource) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_resource(resource)
    }
    fn save_task<'a>(&'a self, task: &'a TaskRecord, previous: Option<TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            self.inner.save_task(task, previous).await?;
            (self.report)(MemoryEvent::TaskUpdated(Box::new(task.clone())));
            Ok(())
        })
    }
    fn list_tasks<'a>(&'a self, filter: &'a TaskFilter) -> LocalFuture<'a, Result<Vec<TaskRecord>, AgentError>> {
        self.inner.list_tasks(filter)
    }
    fn save_vectors<'a>(&'a self, records: &'a [VectorRecord]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_vectors(records)
    }
    fn query_vectors<'a>(&'a self, query: &'a VectorQuery) -> LocalFuture<'a, Result<Vec<VectorHit>, AgentError>> {
        self.inner.query_vectors(query)
    }
    fn delete_vectors<'a>(&'a self, target: &'a VectorTarget) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.delete_vectors(target)
    }
    fn runs(&self) -> Option<&dyn crate::core::runs::RunStore> {
        self.inner.runs()
    }
    #[cfg(feature = "workflows")]
    fn workflows(&self) -> Option<&dyn crate::core::workflow::store::WorkflowStore> {
        self.inner.workflows()
    }
}
