//! `memory.watch` (SPEC §21.2): what a memory reports to its watchers, and the fan-out that
//! delivers it in order.
//!
//! The events are typed here ([`MemoryEvent`]); the bindings turn each into one payload (a
//! JavaScript object) and hand it to [`Watchers`], which calls every listener whose scope
//! (a thread, or a resource) the event concerns. Live chunks and events from other tabs arrive
//! as payloads already made, with the thread and resource they belong to.
//!
//! Must never: call a listener while a borrow of its own state is held (a listener may watch,
//! unwatch or publish again), or reorder events: one queue, drained front to back.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use serde_json::{json, Value};

use super::{StoredMessage, Thread};
use crate::core::background::TaskRecord;

/// What one watcher follows.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchScope {
    Thread(String),
    Resource(String),
}

/// Which thread and resource an event concerns (either may be unknown).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventKey {
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
}

impl EventKey {
    pub fn new(thread_id: Option<&str>, resource_id: Option<&str>) -> EventKey {
        EventKey { thread_id: thread_id.map(str::to_owned), resource_id: resource_id.map(str::to_owned) }
    }
}

impl WatchScope {
    pub fn matches(&self, key: &EventKey) -> bool {
        match self {
            WatchScope::Thread(id) => key.thread_id.as_deref() == Some(id),
            WatchScope::Resource(id) => key.resource_id.as_deref() == Some(id),
        }
    }
}

/// What storage writes report (live chunks are payloads of their own, see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub enum MemoryEvent {
    MessagesSaved { thread_id: String, resource_id: Option<String>, messages: Vec<StoredMessage> },
    ThreadUpdated(Thread),
    ThreadDeleted { thread_id: String, resource_id: Option<String> },
    TaskUpdated(Box<TaskRecord>),
}

impl MemoryEvent {
    pub fn key(&self) -> EventKey {
        match self {
            MemoryEvent::MessagesSaved { thread_id, resource_id, .. } | MemoryEvent::ThreadDeleted { thread_id, resource_id } => {
                EventKey::new(Some(thread_id), resource_id.as_deref())
            }
            MemoryEvent::ThreadUpdated(t) => EventKey::new(Some(&t.id), Some(&t.resource_id)),
            MemoryEvent::TaskUpdated(t) => EventKey::new(t.thread_id.as_deref(), t.resource_id.as_deref()),
        }
    }

    /// The event as a watcher gets it.
    pub fn to_json(&self) -> Value {
        match self {
            MemoryEvent::MessagesSaved { thread_id, messages, .. } => json!({
                "type": "messages-saved", "threadId": thread_id,
                "messages": messages.iter().map(StoredMessage::to_json).collect::<Vec<_>>(),
            }),
            MemoryEvent::ThreadUpdated(t) => json!({ "type": "thread-updated", "thread": t.to_json() }),
            MemoryEvent::ThreadDeleted { thread_id, .. } => json!({ "type": "thread-deleted", "threadId": thread_id }),
            MemoryEvent::TaskUpdated(t) => json!({ "type": "task-updated", "task": t.to_json() }),
        }
    }

    /// Saved messages, one event per thread (a save may span threads).
    pub fn messages_saved(messages: &[StoredMessage]) -> Vec<MemoryEvent> {
        let mut out: Vec<MemoryEvent> = Vec::new();
        for m in messages {
            match out.iter_mut().find(|e| matches!(e, MemoryEvent::MessagesSaved { thread_id, .. } if *thread_id == m.thread_id)) {
                Some(MemoryEvent::MessagesSaved { messages, .. }) => messages.push(m.clone()),
                _ => out.push(MemoryEvent::MessagesSaved {
                    thread_id: m.thread_id.clone(),
                    resource_id: Some(m.resource_id.clone()),
                    messages: vec![m.clone()],
                }),
            }
        }
        out
    }
}

type Listener<P> = Rc<dyn Fn(&P)>;

/// The watchers of one memory and the queue of what is still to be delivered to them.
pub struct Watchers<P> {
    list: RefCell<Vec<(u32, WatchScope, Listener<P>)>>,
    next_id: Cell<u32>,
    queue: RefCell<VecDeque<(EventKey, P)>>,
    draining: Cell<bool>,
}

impl<P> Default for Watchers<P> {
    fn default() -> Self {
        Watchers { list: RefCell::new(Vec::new()), next_id: Cell::new(1), queue: RefCell::new(VecDeque::new()), draining: Cell::new(false) }
    }
}

impl<P> Watchers<P> {
    /// Adds a watcher; the id is for [`Watchers::unwatch`].
    pub fn watch(&self, scope: WatchScope, listener: Listener<P>) -> u32 {
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        self.list.borrow_mut().push((id, scope, listener));
        id
    }

    /// Removes a watcher; events still queued are not delivered to it. A second call does nothing.
    pub fn unwatch(&self, id: u32) {
        self.list.borrow_mut().retain(|(i, _, _)| *i != id);
    }

    /// Whether any watcher follows this thread or resource (so a payload is worth making).
    pub fn watching(&self, key: &EventKey) -> bool {
        self.list.borrow().iter().any(|(_, s, _)| s.matches(key))
    }

    /// Queues an event; returns `true` when no drain is under way or due (the caller then
    /// arranges one: [`Watchers::drain`] now, or on a later tick).
    pub fn push(&self, key: EventKey, payload: P) -> bool {
        let mut q = self.queue.borrow_mut();
        q.push_back((key, payload));
        q.len() == 1 && !self.draining.get()
    }

    /// Delivers everything queued, in order, including events listeners publish meanwhile.
    /// A nested call (from inside a listener) returns at once: the outer one delivers those.
    pub fn drain(&self) {
        if self.draining.replace(true) {
            return;
        }
        loop {
            let Some((key, payload)) = self.queue.borrow_mut().pop_front() else { break };
            // Cloned out of the borrow: a listener may watch or unwatch.
            let listeners: Vec<(u32, Listener<P>)> =
                self.list.borrow().iter().filter(|(_, s, _)| s.matches(&key)).map(|(i, _, l)| (*i, l.clone())).collect();
            for (id, l) in listeners {
                // Unwatched by an earlier listener of this same event: skipped.
                if self.list.borrow().iter().any(|(i, _, _)| *i == id) {
                    l(&payload);
                }
            }
        }
        self.draining.set(false);
    }

    /// Queues and delivers at once.
    pub fn publish(&self, key: EventKey, payload: P) {
        self.push(key, payload);
        self.drain();
    }

    /// The scopes watched here, each once, in the order first watched (what this tab tells the
    /// others it follows).
    pub fn scopes(&self) -> Vec<WatchScope> {
        let mut out: Vec<WatchScope> = Vec::new();
        for (_, s, _) in self.list.borrow().iter() {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }
}

/// What the other tabs and workers on one database watch, as each last said: a live chunk is
/// posted to them only when one of them follows its thread or resource (a run streaming with
/// no other tab listening posts nothing).
#[derive(Default)]
pub struct RemoteScopes {
    tabs: RefCell<Vec<(String, Vec<WatchScope>)>>,
}

impl RemoteScopes {
    /// `tab` now watches exactly `scopes` (none: it stopped watching, or closed).
    pub fn set(&self, tab: &str, scopes: Vec<WatchScope>) {
        let mut tabs = self.tabs.borrow_mut();
        tabs.retain(|(t, _)| t != tab);
        if !scopes.is_empty() {
            tabs.push((tab.to_owned(), scopes));
        }
    }

    /// Whether another tab follows this thread or resource.
    pub fn wants(&self, key: &EventKey) -> bool {
        self.tabs.borrow().iter().any(|(_, scopes)| scopes.iter().any(|s| s.matches(key)))
    }
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
