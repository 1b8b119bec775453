//! `InMemoryStore`: the storage of runtimes without IndexedDB, and the reference the other
//! backends are tested against. Messages are kept per thread in time order, so loading the last
//! N messages reads N records.

use std::cell::RefCell;
// HashMap, not BTreeMap: the package already has hashbrown (bindings::share), and the B-tree's
// code for three maps cost 6.5 KB gzip of wasm (measured on wasm-agent/lite).
use std::collections::HashMap;

use super::vectors::{search, VectorHit, VectorQuery, VectorRecord, VectorTarget};
use super::{MessageQuery, Resource, StoredMessage, Store, Thread};
use crate::core::background::{TaskFilter, TaskRecord, TaskStatus};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;

#[derive(Default)]
pub struct InMemoryStore {
    threads: RefCell<HashMap<String, Thread>>,
    /// Thread id → messages sorted by (createdAt, id).
    messages: RefCell<HashMap<String, Vec<StoredMessage>>>,
    resources: RefCell<HashMap<String, Resource>>,
    tasks: RefCell<Vec<TaskRecord>>,
    runs: crate::core::runs::MemoryRuns,
    #[cfg(feature = "workflows")]
    workflows: crate::core::workflow::snapshot::RunStore,
    /// Semantic recall's vectors, normalised.
    vectors: RefCell<Vec<VectorRecord>>,
}

impl InMemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn upsert(list: &mut Vec<StoredMessage>, m: StoredMessage) {
        if let Some(pos) = list.iter().position(|x| x.id == m.id) {
            list.remove(pos);
        }
        let at = list.partition_point(|x| (x.created_at.as_str(), x.id.as_str()) <= (m.created_at.as_str(), m.id.as_str()));
        list.insert(at, m);
    }
}

fn ready<'a, T: 'a>(v: T) -> LocalFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

impl Store for InMemoryStore {
    fn get_thread_by_id<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Thread>, AgentError>> {
        ready(Ok(self.threads.borrow().get(id).cloned()))
    }

    fn save_thread<'a>(&'a self, thread: &'a Thread) -> LocalFuture<'a, Result<(), AgentError>> {
        self.threads.borrow_mut().insert(thread.id.clone(), thread.clone());
        ready(Ok(()))
    }

    fn delete_thread<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.threads.borrow_mut().remove(id);
        self.messages.borrow_mut().remove(id);
        self.vectors.borrow_mut().retain(|r| r.thread_id != id);
        ready(Ok(()))
    }

    fn list_threads<'a>(&'a self, resource_id: &'a str) -> LocalFuture<'a, Result<Vec<Thread>, AgentError>> {
        let mut out: Vec<Thread> = self.threads.borrow().values().filter(|t| t.resource_id == resource_id).cloned().collect();
        // Threads updated at the same time by id, as a B-tree listed them.
        super::newest_first(&mut out);
        ready(Ok(out))
    }

    fn list_messages<'a>(&'a self, q: &'a MessageQuery) -> LocalFuture<'a, Result<Vec<StoredMessage>, AgentError>> {
        let all = self.messages.borrow();
        let list = all.get(&q.thread_id).map(Vec::as_slice).unwrap_or(&[]);
        let end = match &q.before {
            Some(b) => list.partition_point(|m| m.created_at < *b),
            None => list.len(),
        };
        let start = q.last.map_or(0, |n| end.saturating_sub(n));
        ready(Ok(list[start..end].to_vec()))
    }

    fn save_messages<'a>(&'a self, messages: &'a [StoredMessage]) -> LocalFuture<'a, Result<(), AgentError>> {
        let mut all = self.messages.borrow_mut();
        for m in messages {
            // A message moved to another thread leaves its old one.
            for (tid, list) in all.iter_mut() {
                if *tid != m.thread_id {
                    list.retain(|x| x.id != m.id);
                }
            }
            Self::upsert(all.entry(m.thread_id.clone()).or_default(), m.clone());
        }
        ready(Ok(()))
    }

    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> LocalFuture<'a, Result<(), AgentError>> {
        for list in self.messages.borrow_mut().values_mut() {
            list.retain(|m| !ids.contains(&m.id));
        }
        self.vectors.borrow_mut().retain(|r| !ids.contains(&r.id));
        ready(Ok(()))
    }

    fn get_resource<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Resource>, AgentError>> {
        ready(Ok(self.resources.borrow().get(id).cloned()))
    }

    fn save_resource<'a>(&'a self, resource: &'a Resource) -> LocalFuture<'a, Result<(), AgentError>> {
        self.resources.borrow_mut().insert(resource.id.clone(), resource.clone());
        ready(Ok(()))
    }

    fn save_task<'a>(&'a self, task: &'a TaskRecord, _previous: Option<TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>> {
        let mut tasks = self.tasks.borrow_mut();
        match tasks.iter_mut().find(|t| t.id == task.id) {
            Some(t) => *t = task.clone(),
            None => tasks.push(task.clone()),
        }
        ready(Ok(()))
    }

    fn list_tasks<'a>(&'a self, filter: &'a TaskFilter) -> LocalFuture<'a, Result<Vec<TaskRecord>, AgentError>> {
        ready(Ok(self.tasks.borrow().iter().filter(|t| filter.matches(t)).cloned().collect()))
    }

    fn runs(&self) -> Option<&dyn crate::core::runs::RunStore> {
        Some(&self.runs)
    }

    #[cfg(feature = "workflows")]
    fn workflows(&self) -> Option<&dyn crate::core::workflow::store::WorkflowStore> {
        Some(&self.workflows)
    }

    #[cfg(feature = "recall")]
    fn save_vectors<'a>(&'a self, records: &'a [VectorRecord]) -> LocalFuture<'a, Result<(), AgentError>> {
        let mut all = self.vectors.borrow_mut();
        for r in records {
            let r = VectorRecord { vector: super::vectors::normalized(r.vector.clone()), ..r.clone() };
            match all.iter_mut().find(|x| x.id == r.id) {
                Some(x) => *x = r,
                None => all.push(r),
            }
        }
        ready(Ok(()))
    }

    #[cfg(feature = "recall")]
    fn query_vectors<'a>(&'a self, query: &'a VectorQuery) -> LocalFuture<'a, Result<Vec<VectorHit>, AgentError>> {
        ready(Ok(search(self.vectors.borrow().iter(), query)))
    }

    #[cfg(feature = "recall")]
    fn delete_vectors<'a>(&'a self, target: &'a VectorTarget) -> LocalFuture<'a, Result<(), AgentError>> {
        self.vectors.borrow_mut().retain(|r| !target.matches(r));
        ready(Ok(()))
    }
}
