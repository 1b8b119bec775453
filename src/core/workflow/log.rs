//! A run's events, kept for every reader: each reader replays what happened so far, then follows
//! live, and ends after the log is closed (after `workflow-finish`). Readers are independent; one
//! that goes away detaches only itself.

use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use serde_json::Value;

#[derive(Clone, Default)]
pub struct EventLog(Rc<RefCell<Inner>>);

#[derive(Default)]
struct Inner {
    /// Each event as its JSON text, written once when it is pushed: a reader in JavaScript
    /// parses it with one `JSON.parse`, and a run's log lives as long as its JavaScript object
    /// (which only a finalizer frees), where value trees of a 100-step run were ~600 KB of wasm
    /// heap each.
    events: Vec<Rc<str>>,
    closed: bool,
    wakers: Vec<Waker>,
}

impl EventLog {
    pub fn push(&self, event: Value) {
        self.push_text(event.to_string());
    }

    /// An event already written as JSON text (an object).
    pub fn push_text(&self, event: String) {
        let wakers = {
            let mut inner = self.0.borrow_mut();
            if inner.closed {
                return;
            }
            inner.events.push(event.into());
            std::mem::take(&mut inner.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// No event follows; readers end after the last one.
    pub fn close(&self) {
        let wakers = {
            let mut inner = self.0.borrow_mut();
            inner.closed = true;
            std::mem::take(&mut inner.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    pub fn is_closed(&self) -> bool {
        self.0.borrow().closed
    }

    pub fn len(&self) -> usize {
        self.0.borrow().events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every event so far (tests, and a late `watch`).
    pub fn snapshot(&self) -> Vec<Value> {
        self.0.borrow().events.iter().map(|e| parse(e)).collect()
    }

    /// A new reader from the first event.
    pub fn reader(&self) -> LogReader {
        LogReader { log: self.clone(), next: 0 }
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

pub struct LogReader {
    log: EventLog,
    next: usize,
}

impl LogReader {
    /// The next event, waiting for it; `None` once the log is closed and read to its end.
    pub async fn next(&mut self) -> Option<Value> {
        self.next_text().await.map(|t| parse(&t))
    }

    /// The next event's JSON text, waiting for it.
    pub async fn next_text(&mut self) -> Option<Rc<str>> {
        poll_fn(|cx| {
            let mut inner = self.log.0.borrow_mut();
            if let Some(e) = inner.events.get(self.next) {
                self.next += 1;
                return Poll::Ready(Some(e.clone()));
            }
            if inner.closed {
                return Poll::Ready(None);
            }
            inner.wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// The next event's text if one is there now (no waiting).
    pub fn try_next_text(&mut self) -> Option<Rc<str>> {
        let e = self.log.0.borrow().events.get(self.next).cloned();
        if e.is_some() {
            self.next += 1;
        }
        e
    }
}
