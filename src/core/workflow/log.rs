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
    events: Vec<Kept>,
    closed: bool,
    wakers: Vec<Waker>,
}

/// An event as a live value, or (once the log is closed) as its JSON text: a closed log lives
/// as long as the run's JavaScript object, which only a finalizer frees, and as values a
/// 100-step run's events were ~600 KB of wasm heap each (the heap grew with every run).
enum Kept {
    Value(Rc<Value>),
    Text(Box<str>),
}

impl Kept {
    fn get(&self) -> Rc<Value> {
        match self {
            Kept::Value(v) => v.clone(),
            Kept::Text(t) => Rc::new(serde_json::from_str(t).unwrap_or(Value::Null)),
        }
    }
}

impl EventLog {
    pub fn push(&self, event: Value) {
        let wakers = {
            let mut inner = self.0.borrow_mut();
            if inner.closed {
                return;
            }
            inner.events.push(Kept::Value(Rc::new(event)));
            std::mem::take(&mut inner.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// No event follows; readers end after the last one.
    pub fn close(&self) {
        let wakers = {
            let mut inner = self.0.borrow_mut();
            inner.closed = true;
            for e in &mut inner.events {
                if let Kept::Value(v) = e {
                    *e = Kept::Text(v.to_string().into_boxed_str());
                }
            }
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
        self.0.borrow().events.iter().map(|e| (*e.get()).clone()).collect()
    }

    /// A new reader from the first event.
    pub fn reader(&self) -> LogReader {
        LogReader { log: self.clone(), next: 0 }
    }
}

pub struct LogReader {
    log: EventLog,
    next: usize,
}

impl LogReader {
    /// The next event, waiting for it; `None` once the log is closed and read to its end.
    pub async fn next(&mut self) -> Option<Rc<Value>> {
        poll_fn(|cx| {
            let mut inner = self.log.0.borrow_mut();
            if let Some(e) = inner.events.get(self.next) {
                self.next += 1;
                return Poll::Ready(Some(e.get()));
            }
            if inner.closed {
                return Poll::Ready(None);
            }
            inner.wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// The next event if one is there now (no waiting).
    pub fn try_next(&mut self) -> Option<Rc<Value>> {
        let e = self.log.0.borrow().events.get(self.next).map(Kept::get);
        if e.is_some() {
            self.next += 1;
        }
        e
    }
}
