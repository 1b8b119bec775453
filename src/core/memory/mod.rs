//! Conversation memory (SPEC §7): threads, stored messages and resources, the storage interface
//! every backend implements (in memory here; IndexedDB and user-supplied JavaScript objects in
//! the bindings), and the conversions between stored messages, model messages and UI messages.
//!
//! Stored messages keep their parts as JSON so that parts this version does not know (written by
//! an older or newer version) survive a round trip untouched.

mod convert;
mod session;
mod store;
mod time;
mod ui_messages;
pub mod watch;
pub mod watched;
pub mod vectors;
pub mod quantized;
pub mod recall;

pub use convert::{assistant_message, assistant_parts, input_messages, input_messages_with, stored_to_model, stored_to_ui, waiting_message};
pub use session::{parse_memory_options, MemoryConfig, MemoryRun, Session, WorkingMemory};
pub use store::InMemoryStore;
pub use time::iso_time;
pub use ui_messages::to_ui_messages;

use serde_json::{json, Map, Value};

use super::background::{TaskFilter, TaskRecord, TaskStatus};
use super::env::LocalFuture;
use super::error::AgentError;

#[derive(Clone, Debug, PartialEq)]
pub struct Thread {
    pub id: String,
    pub resource_id: String,
    pub title: Option<String>,
    pub metadata: Option<Value>,
    /// ISO 8601 times.
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StoredMessage {
    pub id: String,
    pub thread_id: String,
    pub resource_id: String,
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// ISO 8601, strictly increasing within a thread as this package writes them.
    pub created_at: String,
    /// `content.parts`, as stored.
    pub parts: Vec<Value>,
    /// `content.metadata` (e.g. `{ interrupted: true }`).
    pub metadata: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resource {
    pub id: String,
    pub working_memory: Option<String>,
    pub metadata: Option<Value>,
}

/// `listMessages` arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageQuery {
    pub thread_id: String,
    /// Only the last `n` (in time order).
    pub last: Option<usize>,
    /// Only messages created strictly before this ISO time.
    pub before: Option<String>,
}

fn storage_error(message: impl Into<String>) -> AgentError {
    AgentError::storage(message)
}

/// The storage methods of SPEC §7. Every method is one logical operation (one transaction where
/// the backend has them). Messages come back in time order.
pub trait Store {
    fn get_thread_by_id<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Thread>, AgentError>>;
    /// Creates or replaces the thread.
    fn save_thread<'a>(&'a self, thread: &'a Thread) -> LocalFuture<'a, Result<(), AgentError>>;
    /// Deletes the thread and its messages.
    fn delete_thread<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>>;
    /// Newest first by `updatedAt`.
    fn list_threads<'a>(&'a self, resource_id: &'a str) -> LocalFuture<'a, Result<Vec<Thread>, AgentError>>;
    fn list_messages<'a>(&'a self, query: &'a MessageQuery) -> LocalFuture<'a, Result<Vec<StoredMessage>, AgentError>>;
    /// Creates or replaces each message (by id).
    fn save_messages<'a>(&'a self, messages: &'a [StoredMessage]) -> LocalFuture<'a, Result<(), AgentError>>;
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> LocalFuture<'a, Result<(), AgentError>>;
    fn get_resource<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Resource>, AgentError>>;
    fn save_resource<'a>(&'a self, resource: &'a Resource) -> LocalFuture<'a, Result<(), AgentError>>;
    /// Creates (`previous: None`) or updates a background task record.
    fn save_task<'a>(&'a self, task: &'a TaskRecord, previous: Option<TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>>;
    fn list_tasks<'a>(&'a self, filter: &'a TaskFilter) -> LocalFuture<'a, Result<Vec<TaskRecord>, AgentError>>;
    /// Creates or replaces each vector record (by message id). Vectors arrive normalised.
    fn save_vectors<'a>(&'a self, records: &'a [vectors::VectorRecord]) -> LocalFuture<'a, Result<(), AgentError>> {
        let _ = records;
        Box::pin(async { Err(storage_error("this storage keeps no vectors (it has no saveVectors/queryVectors), so semantic recall cannot index messages")) })
    }
    /// The most similar records in scope, best first (cosine).
    fn query_vectors<'a>(&'a self, query: &'a vectors::VectorQuery) -> LocalFuture<'a, Result<Vec<vectors::VectorHit>, AgentError>> {
        let _ = query;
        Box::pin(async { Err(storage_error("this storage keeps no vectors (it has no saveVectors/queryVectors), so semantic recall finds nothing")) })
    }
    /// Deletes a thread's vectors or the given ones; nothing where the storage keeps none.
    fn delete_vectors<'a>(&'a self, target: &'a vectors::VectorTarget) -> LocalFuture<'a, Result<(), AgentError>> {
        let _ = target;
        Box::pin(async { Ok(()) })
    }
    /// The run records (SPEC §19.4), when this storage keeps them.
    fn runs(&self) -> Option<&dyn crate::core::runs::RunStore> {
        None
    }
    /// The workflow snapshots (SPEC §20.5), when this storage keeps them.
    #[cfg(feature = "workflows")]
    fn workflows(&self) -> Option<&dyn crate::core::workflow::store::WorkflowStore> {
        None
    }
}

impl Thread {
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "id": self.id, "resourceId": self.resource_id, "createdAt": self.created_at, "updatedAt": self.updated_at,
        });
        if let Some(t) = &self.title {
            v["title"] = Value::String(t.clone());
        }
        if let Some(m) = &self.metadata {
            v["metadata"] = m.clone();
        }
        v
    }

    /// Reads a thread as a storage object returned it. `what` names the caller for errors.
    pub fn from_json(v: &Value, what: &str) -> Result<Thread, AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = s("id").ok_or_else(|| storage_error(format!("{what} returned a thread without a string id")))?;
        let resource_id = s("resourceId").ok_or_else(|| storage_error(format!("{what} returned thread '{id}' without a string resourceId")))?;
        Ok(Thread {
            resource_id,
            title: s("title"),
            metadata: v.get("metadata").filter(|m| !m.is_null()).cloned(),
            created_at: s("createdAt").unwrap_or_default(),
            updated_at: s("updatedAt").unwrap_or_default(),
            id,
        })
    }
}

impl StoredMessage {
    pub fn to_json(&self) -> Value {
        let mut content = Map::new();
        content.insert("format".into(), 2.into());
        content.insert("parts".into(), Value::Array(self.parts.clone()));
        if let Some(m) = &self.metadata {
            content.insert("metadata".into(), m.clone());
        }
        json!({
            "id": self.id, "threadId": self.thread_id, "resourceId": self.resource_id, "role": self.role,
            "createdAt": self.created_at, "type": "v2", "content": Value::Object(content),
        })
    }

    /// Reads a stored message; unknown fields and part types are kept as they are.
    pub fn from_json(v: &Value, what: &str) -> Result<StoredMessage, AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = s("id").ok_or_else(|| storage_error(format!("{what} returned a message without a string id")))?;
        let content = v.get("content");
        let parts = match content {
            Some(Value::Object(c)) => c.get("parts").and_then(Value::as_array).cloned().unwrap_or_default(),
            // Older stores kept plain text content.
            Some(Value::String(text)) => vec![json!({ "type": "text", "text": text })],
            _ => Vec::new(),
        };
        Ok(StoredMessage {
            thread_id: s("threadId").unwrap_or_default(),
            resource_id: s("resourceId").unwrap_or_default(),
            role: s("role").unwrap_or_else(|| "user".into()),
            created_at: s("createdAt").unwrap_or_default(),
            metadata: content.and_then(|c| c.get("metadata")).filter(|m| !m.is_null()).cloned(),
            parts,
            id,
        })
    }
}

impl Resource {
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "id": self.id });
        if let Some(w) = &self.working_memory {
            v["workingMemory"] = Value::String(w.clone());
        }
        if let Some(m) = &self.metadata {
            v["metadata"] = m.clone();
        }
        v
    }

    pub fn from_json(v: &Value, what: &str) -> Result<Resource, AgentError> {
        let id = v.get("id").and_then(Value::as_str).ok_or_else(|| storage_error(format!("{what} returned a resource without a string id")))?;
        Ok(Resource {
            id: id.to_owned(),
            working_memory: v.get("workingMemory").and_then(Value::as_str).map(str::to_owned),
            metadata: v.get("metadata").filter(|m| !m.is_null()).cloned(),
        })
    }
}

/// Sorts `items` stably by `cmp` through one sort of their indices, so every listing (threads
/// newest first, a storage object's messages in time order) shares one copy of the sort's code:
/// a `sort_by` per item type and comparator costs ~3.5 KB of wasm.
pub fn sort_stable<T>(items: &mut Vec<T>, cmp: &dyn Fn(&T, &T) -> std::cmp::Ordering) {
    let order = sorted_order(items.len(), &|a, b| cmp(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

fn sorted_order(n: usize, cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| cmp(*a, *b));
    order
}

/// Threads newest first (`updatedAt`); threads updated at the same time by id.
pub fn newest_first(threads: &mut Vec<Thread>) {
    sort_stable(threads, &|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
}

#[cfg(test)]
mod sort_tests {
    use super::*;

    #[test]
    fn the_shared_sort_is_stable_and_keeps_every_item() {
        let mut items = vec![(3, 'a'), (1, 'b'), (3, 'c'), (2, 'd'), (1, 'e')];
        sort_stable(&mut items, &|a, b| a.0.cmp(&b.0));
        assert_eq!(items, vec![(1, 'b'), (1, 'e'), (2, 'd'), (3, 'a'), (3, 'c')]);
        let mut empty: Vec<u8> = Vec::new();
        sort_stable(&mut empty, &|a, b| a.cmp(b));
        assert!(empty.is_empty());
    }
}
