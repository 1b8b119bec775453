//! `objectStream` and `elementStream` of an output (SPEC §12.3): each partial object, and each
//! completed element of an array, as `ReadableStream`s. Like `textStream`, what came before a
//! stream was created is replayed into it; cancelling one only stops its values.
//!
//! Every partial object is a whole value, so keeping each one for a stream that may never be
//! created costs the square of the reply's length. Before `objectStream` is created at most
//! [`REPLAY_LIMIT`] partials are kept: when there are more, every other older one goes, so a late
//! reader still sees partials from the whole reply, in order, ending with the newest. Elements
//! are each a value of their own and are all kept.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Object, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use web_sys::{ReadableStream, ReadableStreamDefaultController};

use super::convert::from_json;
use crate::core::chunk::Chunk;

/// How many partial objects wait for an `objectStream` that was not created yet.
const REPLAY_LIMIT: usize = 64;

/// Halves `pending`, keeping the newest and every other one before it.
fn thin(pending: &mut Vec<Rc<Value>>) {
    let n = pending.len();
    let mut i = 0;
    pending.retain(|_| {
        i += 1;
        (n - i).is_multiple_of(2)
    });
}

#[derive(Default)]
struct ValueSlot {
    created: bool,
    closed: bool,
    ctrl: Option<ReadableStreamDefaultController>,
    /// What came before the stream was created (partials are shared with their chunks).
    pending: Vec<Rc<Value>>,
}

#[derive(Default)]
struct State {
    objects: ValueSlot,
    elements: ValueSlot,
    /// Elements of the partial array already sent (all but the last are complete).
    elements_sent: usize,
}

#[derive(Default)]
pub struct ObjectStreams {
    st: RefCell<State>,
}

impl ObjectStreams {
    /// Takes what an `object` or `object-result` chunk says. Enqueues outside the borrow: a
    /// piped stream runs user code inside `enqueue`.
    pub fn take(&self, chunk: &Chunk) {
        let mut out: Vec<(bool, Rc<Value>)> = Vec::new();
        {
            let mut st = self.st.borrow_mut();
            let (object, last) = match chunk {
                Chunk::Object { object } => {
                    out.push((false, object.clone()));
                    (&**object, false)
                }
                Chunk::ObjectResult { object, .. } => (object, true),
                _ => return,
            };
            if let Value::Array(items) = object {
                // A partial array's last element may still grow; the final value's are all done.
                let done = if last { items.len() } else { items.len().saturating_sub(1) };
                let from = st.elements_sent.min(done);
                out.extend(items[from..done].iter().map(|v| (true, Rc::new(v.clone()))));
                st.elements_sent = st.elements_sent.max(done);
            }
        }
        for (element, v) in out {
            self.push(element, v);
        }
    }

    fn push(&self, element: bool, v: Rc<Value>) {
        let ctrl = {
            let mut st = self.st.borrow_mut();
            let slot = if element { &mut st.elements } else { &mut st.objects };
            match &slot.ctrl {
                Some(c) => c.clone(),
                None => {
                    if !slot.created && !slot.closed {
                        slot.pending.push(v);
                        if !element && slot.pending.len() > REPLAY_LIMIT {
                            thin(&mut slot.pending);
                        }
                    }
                    return;
                }
            }
        };
        let _ = ctrl.enqueue_with_chunk(&from_json(&v));
    }

    pub fn close(&self) {
        let ctrls: Vec<_> = {
            let mut st = self.st.borrow_mut();
            let st = &mut *st;
            [&mut st.objects, &mut st.elements]
                .into_iter()
                .filter(|s| !s.closed)
                .filter_map(|s| {
                    s.closed = true;
                    s.ctrl.take()
                })
                .collect()
        };
        for c in ctrls {
            let _ = c.close();
        }
    }

    pub fn created(&self, element: bool) -> bool {
        let st = self.st.borrow();
        if element {
            st.elements.created
        } else {
            st.objects.created
        }
    }

    /// The stream, replaying what came before.
    pub fn stream(self: &Rc<Self>, element: bool) -> ReadableStream {
        let weak: Weak<Self> = Rc::downgrade(self);
        let start = Closure::once_into_js(move |ctrl: JsValue| {
            let Some(me) = weak.upgrade() else { return };
            let ctrl: ReadableStreamDefaultController = ctrl.unchecked_into();
            let (pending, closed) = {
                let mut st = me.st.borrow_mut();
                let slot = if element { &mut st.elements } else { &mut st.objects };
                if !slot.closed {
                    slot.ctrl = Some(ctrl.clone());
                }
                (std::mem::take(&mut slot.pending), slot.closed)
            };
            for v in pending {
                let _ = ctrl.enqueue_with_chunk(&from_json(&v));
            }
            if closed {
                let _ = ctrl.close();
            }
        });
        let weak = Rc::downgrade(self);
        let cancel = Closure::<dyn FnMut(JsValue)>::new(move |_reason: JsValue| {
            if let Some(me) = weak.upgrade() {
                let mut st = me.st.borrow_mut();
                let slot = if element { &mut st.elements } else { &mut st.objects };
                slot.ctrl = None;
                slot.closed = true;
            }
        })
        .into_js_value();
        let source = Object::new();
        let _ = Reflect::set(&source, &"start".into(), &start);
        let _ = Reflect::set(&source, &"cancel".into(), &cancel);
        {
            let mut st = self.st.borrow_mut();
            let slot = if element { &mut st.elements } else { &mut st.objects };
            slot.created = true;
        }
        match ReadableStream::new_with_underlying_source(&source) {
            Ok(s) => s,
            Err(_) => ReadableStream::new().unwrap_throw(),
        }
    }
}
