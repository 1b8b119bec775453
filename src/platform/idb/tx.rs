//! One IndexedDB transaction as one future, and the errors IndexedDB reports turned into
//! `StorageError`s that say what happened.
//!
//! The rule this module exists for: a transaction stays active only while its own events are
//! being dispatched, so nothing here awaits anything between creating a transaction and its
//! end. Requests are issued synchronously; a request whose result decides the next request (a
//! cursor step, the keys to delete) is handled by a callback that runs inside the `success`
//! event; the caller awaits only `complete`/`error`/`abort`, then reads the results.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbObjectStore, IdbRequest, IdbTransaction};

use crate::core::error::{AgentError, StorageKind};

/// An open transaction, its completion future (listening from before the first request) and the
/// callbacks it owns. Dropping it detaches the callbacks, so nothing calls into freed closures.
///
/// A transaction is committed only by awaiting `done` to its end. Dropped before that (an error on
/// the Rust side, or the run's abort dropping the operation mid-write), it is aborted, so
/// IndexedDB rolls it back instead of committing half a logical write on its own.
pub(super) struct Tx {
    tx: IdbTransaction,
    done: JsFuture,
    handlers: Vec<Handler>,
    /// The first error a callback hit; it aborted the transaction and is the better report.
    failure: Rc<RefCell<Option<JsValue>>>,
    /// The transaction ended (committed or failed): nothing left to roll back.
    ended: bool,
}

impl Drop for Tx {
    fn drop(&mut self) {
        if !self.ended {
            // Throws InvalidStateError when it already finished; nothing to undo then.
            let _ = self.tx.abort();
        }
    }
}

struct Handler {
    req: IdbRequest,
    _callback: Closure<dyn FnMut()>,
}

impl Drop for Handler {
    fn drop(&mut self) {
        self.req.set_onsuccess(None);
    }
}

impl Tx {
    pub(super) fn new(tx: IdbTransaction) -> Tx {
        // resolve/reject are plain JS functions, so listening needs no Rust closure at all. An
        // unhandled request error bubbles to the transaction (`error`) and then aborts it.
        let promise = Promise::new(&mut |resolve: Function, reject: Function| {
            tx.set_oncomplete(Some(&resolve));
            tx.set_onerror(Some(&reject));
            tx.set_onabort(Some(&reject));
        });
        Tx { tx, done: JsFuture::from(promise), handlers: Vec::new(), failure: Rc::default(), ended: false }
    }

    pub(super) fn store(&self, name: &str) -> Result<IdbObjectStore, JsValue> {
        self.tx.object_store(name)
    }

    /// Runs `f` inside every `success` event of `req` (a cursor fires one per step), where the
    /// transaction is active and `f` may issue further requests. An error from `f` aborts the
    /// transaction and becomes the operation's error.
    pub(super) fn on_success(
        &mut self,
        req: IdbRequest,
        mut f: impl FnMut(&IdbRequest) -> Result<(), JsValue> + 'static,
    ) {
        let (tx, failure, target) = (self.tx.clone(), self.failure.clone(), req.clone());
        let callback = Closure::<dyn FnMut()>::new(move || {
            if let Err(e) = f(&target) {
                failure.borrow_mut().get_or_insert(e);
                let _ = tx.abort();
            }
        });
        req.set_onsuccess(Some(callback.as_ref().unchecked_ref()));
        self.handlers.push(Handler { req, _callback: callback });
    }

    /// Aborts after a request could not even be issued.
    pub(super) fn abort(&self) {
        let _ = self.tx.abort();
    }

    /// Resolves when the transaction has committed; its error otherwise.
    pub(super) async fn done(mut self) -> Result<(), JsValue> {
        let result = (&mut self.done).await;
        self.ended = true;
        self.handlers.clear();
        if let Some(e) = self.failure.borrow_mut().take() {
            return Err(e);
        }
        let tx = &self.tx;
        result.map(drop).map_err(|event| {
            // `error` comes from a request (event.target is the request), `abort` from the
            // transaction; both carry the DOMException as `.error`. An explicit abort has none.
            let target = Reflect::get(&event, &"target".into()).unwrap_or(JsValue::UNDEFINED);
            let error = Reflect::get(&target, &"error".into()).ok().filter(|e| e.is_object());
            error
                .or_else(|| Reflect::get(tx, &"error".into()).ok().filter(|e| e.is_object()))
                .unwrap_or_else(|| dom_error("AbortError", "the transaction was aborted"))
        })
    }
}

/// `{ name, message }`, shaped like the DOMException IndexedDB would have given.
pub(super) fn dom_error(name: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name(name);
    e.into()
}

/// The DOMException's name (`QuotaExceededError`, …), or "" for something else.
pub(super) fn error_name(err: &JsValue) -> String {
    Reflect::get(err, &"name".into()).ok().and_then(|n| n.as_string()).unwrap_or_default()
}

pub(super) fn error_message(err: &JsValue) -> String {
    match Reflect::get(err, &"message".into()).ok().and_then(|m| m.as_string()) {
        Some(m) if !m.is_empty() => m,
        _ => err.as_string().unwrap_or_default(),
    }
}

/// A `StorageError` for `err`, raised while `what` (e.g. "saving messages") on database `db`.
pub(super) fn storage_error(db: &str, what: &str, err: &JsValue) -> AgentError {
    let name = error_name(err);
    let detail = match error_message(err) {
        m if m.is_empty() => name.clone(),
        m if name.is_empty() => m,
        m => format!("{name}: {m}"),
    };
    let message = match name.as_str() {
        "QuotaExceededError" => format!("IndexedDB is out of quota (storage full) while {what} in '{db}'; free space or delete old threads ({detail})"),
        "VersionError" => format!(
            "IndexedDB database '{db}' has a newer schema than this wasm-agent knows (version {}); a newer version in another tab upgraded it, so reload this page ({detail})",
            super::conn::SCHEMA_VERSION
        ),
        "AbortError" => format!("IndexedDB aborted the transaction while {what} in '{db}'; nothing of it was written ({detail})"),
        "InvalidStateError" => format!("the IndexedDB connection to '{db}' was closed while {what}, and reopening it did not help ({detail})"),
        "DataCloneError" => format!("IndexedDB cannot store a value while {what} in '{db}': it is not structured-cloneable ({detail})"),
        "" => format!("IndexedDB failed while {what} in '{db}': {detail}"),
        _ => format!("IndexedDB failed while {what} in '{db}' ({detail})"),
    };
    AgentError::storage_kind(StorageKind::from_dom_name(&name), message)
}

/// Awaits both; the first to finish wins and the other is dropped. `Err` means `b` won.
pub(super) async fn race<A: Future, B: Future>(a: A, b: B) -> Result<A::Output, B::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Err(v));
        }
        Poll::Pending
    })
    .await
}
