//! A run's abort flag: set from the caller's `AbortSignal` or a cancelled stream, awaited by the
//! loop next to every model read and retry wait.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

#[derive(Clone, Default)]
pub struct AbortFlag(Rc<RefCell<Inner>>);

#[derive(Default)]
struct Inner {
    aborted: bool,
    /// The reader went away (a cancelled stream), rather than the caller stopping the run.
    detached: bool,
    reason: Option<String>,
    wakers: Vec<Waker>,
    /// Run once when the flag is set (e.g. abort the tools' `AbortSignal`).
    on_abort: Vec<Box<dyn FnOnce()>>,
}

impl AbortFlag {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the flag (the first reason wins) and wakes every waiter. Returns whether this call
    /// was the one that aborted.
    pub fn abort(&self, reason: Option<String>) -> bool {
        let (wakers, callbacks) = {
            let mut inner = self.0.borrow_mut();
            if inner.aborted {
                return false;
            }
            inner.aborted = true;
            inner.reason = reason;
            (std::mem::take(&mut inner.wakers), std::mem::take(&mut inner.on_abort))
        };
        // Called outside the borrow: a callback may run code that looks at this flag.
        for f in callbacks {
            f();
        }
        for w in wakers {
            w.wake();
        }
        true
    }

    /// `abort` because every reader of the run's streams cancelled: a run waiting for a decision
    /// stays suspended in storage (SPEC §19.2).
    pub fn detach(&self, reason: Option<String>) -> bool {
        if self.is_aborted() {
            return false;
        }
        self.0.borrow_mut().detached = true;
        self.abort(reason)
    }

    /// Whether the run was stopped by its readers going away (`detach`).
    pub fn is_detached(&self) -> bool {
        self.0.borrow().detached
    }

    /// Runs `f` when the flag is set (at once if it already is).
    pub fn on_abort(&self, f: Box<dyn FnOnce()>) {
        if self.is_aborted() {
            f();
        } else {
            self.0.borrow_mut().on_abort.push(f);
        }
    }

    /// Sets `child` when this flag is set, with its reason (a sub-agent's run under its
    /// supervisor's). Holds `child` only until then; this flag itself is held weakly.
    pub fn link(&self, child: &AbortFlag) {
        let parent = Rc::downgrade(&self.0);
        let child = child.clone();
        self.on_abort(Box::new(move || {
            let reason = parent.upgrade().and_then(|p| p.borrow().reason.clone());
            child.abort(reason);
        }));
    }

    /// Whether both are the same flag.
    pub fn same(&self, other: &AbortFlag) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    pub fn is_aborted(&self) -> bool {
        self.0.borrow().aborted
    }

    pub fn reason(&self) -> Option<String> {
        self.0.borrow().reason.clone()
    }

    /// Runs `fut` until it finishes or the flag is set; `None` means aborted (and `fut` dropped).
    pub async fn race<T>(&self, fut: impl Future<Output = T>) -> Option<T> {
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            {
                let mut inner = self.0.borrow_mut();
                if inner.aborted {
                    return Poll::Ready(None);
                }
                if !inner.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    inner.wakers.push(cx.waker().clone());
                }
            }
            fut.as_mut().poll(cx).map(Some)
        })
        .await
    }
}
