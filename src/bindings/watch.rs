//! `memory.watch` (SPEC §21.2) on the JavaScript side: listeners as watchers of the core's
//! fan-out, live chunks of runs on a watched thread, and a `BroadcastChannel` named after the
//! IndexedDB database that carries every event to the other tabs and workers of the origin.
//!
//! Listeners are called from a microtask of their own, never from inside the write or the chunk
//! that caused the event, so no Rust borrow is held and a listener that throws or watches again
//! changes nothing for the run. Events go out to other tabs in one message per microtask.
//!
//! Live chunks go out only while another tab watches their thread or resource: each hub says
//! what it watches (`{ control: 'watching', tab, scopes }`) whenever that changes and when a new
//! hub on the database asks (`{ control: 'hello', tab }`), so a run streaming in a tab no other
//! tab follows posts nothing per chunk. Storage events always go out (other tabs' agents follow
//! the tasks in them).

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{from_json, js_kind, read, type_error};
use crate::core::memory::watch::{EventKey, MemoryEvent, RemoteScopes, WatchScope, Watchers};

/// The channel prefix: `wasm-agent:<database name>`.
const CHANNEL_PREFIX: &str = "wasm-agent:";

/// Returns `false` once it has nothing more to do (its agent is gone): then it is dropped.
type TaskHook = Rc<dyn Fn(&JsValue) -> bool>;

/// The watchers of one `Memory`, and its channel to the other tabs.
pub struct Hub {
    watchers: Watchers<JsValue>,
    channel: Option<Channel>,
    /// Called with each task record another tab reports (`task-updated` over the channel).
    task_hooks: RefCell<Vec<TaskHook>>,
    /// `[threadId, resourceId, event]` envelopes not yet posted.
    outgoing: RefCell<Vec<JsValue>>,
    due: Cell<bool>,
    /// This hub's name on the channel, and what the other hubs there watch.
    tab: String,
    remote: RemoteScopes,
    me: Weak<Hub>,
}

struct Channel {
    port: JsValue,
    _on_message: Closure<dyn Fn(JsValue)>,
}

impl Drop for Channel {
    fn drop(&mut self) {
        let _ = Reflect::set(&self.port, &"onmessage".into(), &JsValue::NULL);
        call_method(&self.port, "close", &Array::new());
    }
}

impl Drop for Hub {
    /// A memory that goes away stops wanting other tabs' chunks.
    fn drop(&mut self) {
        if !self.watchers.scopes().is_empty() {
            self.control("watching", Some(&[]));
        }
    }
}

fn call_method(obj: &JsValue, name: &str, args: &Array) -> Option<JsValue> {
    let f = Reflect::get(obj, &name.into()).ok()?.dyn_into::<Function>().ok()?;
    f.apply(obj, args).ok()
}

fn opt_str(v: Option<&str>) -> JsValue {
    v.map(JsValue::from_str).unwrap_or(JsValue::NULL)
}

impl Hub {
    /// A hub; with `database` (an IndexedDB store's name) and where the runtime has
    /// `BroadcastChannel`, events cross to the other tabs and workers on that database.
    pub fn new(database: Option<String>) -> Rc<Hub> {
        let hub = Rc::new_cyclic(|me: &Weak<Hub>| Hub {
            watchers: Watchers::default(),
            channel: database.and_then(|name| open_channel(&format!("{CHANNEL_PREFIX}{name}"), me.clone())),
            task_hooks: RefCell::new(Vec::new()),
            outgoing: RefCell::new(Vec::new()),
            due: Cell::new(false),
            tab: js_sys::Number::from(js_sys::Math::random()).to_string_with_radix(36).map(String::from).unwrap_or_default(),
            remote: RemoteScopes::default(),
            me: me.clone(),
        });
        hub.control("hello", None);
        hub
    }

    /// Posts a control message: `hello` (tell me what you watch), or `watching` with `scopes`.
    fn control(&self, kind: &str, scopes: Option<&[WatchScope]>) {
        let Some(ch) = &self.channel else { return };
        let msg = Object::new();
        let _ = Reflect::set(&msg, &"control".into(), &kind.into());
        let _ = Reflect::set(&msg, &"tab".into(), &self.tab.as_str().into());
        if let Some(scopes) = scopes {
            let list: Array = scopes.iter().map(scope_to_js).collect();
            let _ = Reflect::set(&msg, &"scopes".into(), &list);
        }
        call_method(&ch.port, "postMessage", &Array::of1(&msg));
    }

    /// Tells the other hubs what this one watches now.
    fn announce(&self) {
        self.control("watching", Some(&self.watchers.scopes()));
    }

    /// A storage write that succeeded.
    pub fn report(&self, event: MemoryEvent) {
        let key = event.key();
        let local = self.watchers.watching(&key);
        let remote = self.channel.is_some();
        if local || remote {
            self.queue(key, from_json(&event.to_json()), local, remote);
        }
    }

    /// Whether a chunk of a run on this thread is worth making an event of.
    pub fn wants_chunks(&self, key: &EventKey) -> bool {
        self.watchers.watching(key) || self.remote.wants(key)
    }

    /// A chunk of a run on a memory thread, as the run's stream got it.
    pub fn chunk(&self, key: &EventKey, chunk: &JsValue) {
        let local = self.watchers.watching(key);
        let remote = self.remote.wants(key);
        if !local && !remote {
            return;
        }
        let event = Object::new();
        let _ = Reflect::set(&event, &"type".into(), &"chunk".into());
        let _ = Reflect::set(&event, &"threadId".into(), &opt_str(key.thread_id.as_deref()));
        let _ = Reflect::set(&event, &"runId".into(), &Reflect::get(chunk, &"runId".into()).unwrap_or(JsValue::UNDEFINED));
        let _ = Reflect::set(&event, &"chunk".into(), chunk);
        self.queue(key.clone(), event.into(), local, remote);
    }

    fn queue(&self, key: EventKey, payload: JsValue, local: bool, remote: bool) {
        if remote {
            let envelope = Array::of3(&opt_str(key.thread_id.as_deref()), &opt_str(key.resource_id.as_deref()), &payload);
            self.outgoing.borrow_mut().push(envelope.into());
        }
        if local {
            self.watchers.push(key, payload);
        }
        self.schedule();
    }

    fn schedule(&self) {
        if self.due.replace(true) {
            return;
        }
        let me = self.me.clone();
        wasm_bindgen_futures::spawn_local(async move {
            if let Some(hub) = me.upgrade() {
                hub.flush();
            }
        });
    }

    fn flush(&self) {
        self.due.set(false);
        let out = std::mem::take(&mut *self.outgoing.borrow_mut());
        if let (Some(ch), false) = (&self.channel, out.is_empty()) {
            post(&ch.port, out);
        }
        self.watchers.drain();
    }

    /// Events another tab posted: delivered here, never posted again.
    fn received(&self, data: &JsValue) {
        if !Array::is_array(data) {
            self.control_received(data);
            return;
        }
        let mut tasks = Vec::new();
        for envelope in Array::from(data).iter() {
            let get = |i: u32| Reflect::get_u32(&envelope, i).unwrap_or(JsValue::UNDEFINED);
            let key = EventKey { thread_id: get(0).as_string(), resource_id: get(1).as_string() };
            let event = get(2);
            if Reflect::get(&event, &"type".into()).ok().and_then(|t| t.as_string()).as_deref() == Some("task-updated") {
                tasks.push(Reflect::get(&event, &"task".into()).unwrap_or(JsValue::UNDEFINED));
            }
            if self.watchers.watching(&key) {
                self.watchers.push(key, event);
            }
        }
        self.schedule();
        if !tasks.is_empty() {
            // Cloned out of the borrow: a hook may start work that adds hooks.
            let hooks = self.task_hooks.borrow().clone();
            let mut gone = Vec::new();
            for h in &hooks {
                if !tasks.iter().all(|t| h(t)) {
                    gone.push(h.clone());
                }
            }
            self.task_hooks.borrow_mut().retain(|h| !gone.iter().any(|g| Rc::ptr_eq(g, h)));
        }
    }

    /// A control message from another hub (see the module docs); anything else is ignored.
    fn control_received(&self, data: &JsValue) {
        let get = |k: &str| Reflect::get(data, &k.into()).unwrap_or(JsValue::UNDEFINED);
        let (Some(kind), Some(tab)) = (get("control").as_string(), get("tab").as_string()) else { return };
        match kind.as_str() {
            "hello" if !self.watchers.scopes().is_empty() => self.announce(),
            "watching" => {
                let list = get("scopes");
                let scopes = if Array::is_array(&list) { Array::from(&list).iter().filter_map(|s| scope_from_js(&s)).collect() } else { Vec::new() };
                self.remote.set(&tab, scopes);
            }
            _ => {}
        }
    }

    /// Calls `hook` with every task record another tab reports (the agents on this memory
    /// follow the tasks other tabs run, bindings/tabs.rs).
    /// Only where another tab can report anything (a channel is open).
    pub fn on_remote_task(&self, hook: TaskHook) {
        if self.channel.is_some() {
            self.task_hooks.borrow_mut().push(hook);
        }
    }

    /// `memory.watch(scope, listener)`: the listener's `unwatch()`.
    pub fn watch(&self, scope: &JsValue, listener: &JsValue) -> Result<JsValue, JsValue> {
        let scope = parse_scope(scope)?;
        let Some(f) = listener.dyn_ref::<Function>().cloned() else {
            return Err(type_error("memory.watch(scope, listener).listener", &format!("expected a function, got {}", js_kind(listener))));
        };
        let failed = Cell::new(false);
        let id = self.watchers.watch(
            scope,
            Rc::new(move |event: &JsValue| {
                // A throwing listener is said once and changes nothing else.
                if let Err(e) = f.call1(&JsValue::UNDEFINED, event) {
                    if !failed.replace(true) {
                        super::report::callback_failed("a memory.watch listener", &e);
                    }
                }
            }),
        );
        self.announce();
        let me = self.me.clone();
        // The unwatch function is the user's to keep; it holds only a weak reference and an id.
        let unwatch = Closure::<dyn Fn()>::new(move || {
            if let Some(hub) = me.upgrade() {
                hub.watchers.unwatch(id);
                hub.announce();
            }
        });
        Ok(unwatch.into_js_value())
    }
}

/// Where a run's chunks go besides its stream: the hub of its memory, for its thread.
pub struct ChunkTap {
    pub hub: Rc<Hub>,
    pub key: EventKey,
}

impl ChunkTap {
    pub fn wants(&self) -> bool {
        self.hub.wants_chunks(&self.key)
    }

    pub fn chunk(&self, chunk: &JsValue) {
        self.hub.chunk(&self.key, chunk);
    }
}

fn parse_scope(scope: &JsValue) -> Result<WatchScope, JsValue> {
    const F: &str = "memory.watch(scope, listener).scope";
    if !scope.is_object() {
        return Err(type_error(F, &format!("expected {{ threadId }} or {{ resourceId }}, got {}", js_kind(scope))));
    }
    let one = |key: &str| -> Result<Option<String>, JsValue> {
        let v = read(scope, key, F)?;
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        match v.as_string() {
            Some(s) if !s.is_empty() => Ok(Some(s)),
            _ => Err(type_error(&format!("{F}.{key}"), &format!("expected a non-empty string, got {}", js_kind(&v)))),
        }
    };
    match (one("threadId")?, one("resourceId")?) {
        (Some(t), None) => Ok(WatchScope::Thread(t)),
        (None, Some(r)) => Ok(WatchScope::Resource(r)),
        (Some(_), Some(_)) => Err(type_error(F, "give threadId or resourceId, not both")),
        (None, None) => Err(type_error(F, "expected { threadId } or { resourceId }, got neither")),
    }
}

/// A scope on the channel: `['t', threadId]` or `['r', resourceId]`.
fn scope_to_js(s: &WatchScope) -> JsValue {
    let (tag, id) = match s {
        WatchScope::Thread(id) => ("t", id),
        WatchScope::Resource(id) => ("r", id),
    };
    Array::of2(&tag.into(), &id.as_str().into()).into()
}

fn scope_from_js(v: &JsValue) -> Option<WatchScope> {
    let id = Reflect::get_u32(v, 1).ok()?.as_string()?;
    match Reflect::get_u32(v, 0).ok()?.as_string()?.as_str() {
        "t" => Some(WatchScope::Thread(id)),
        "r" => Some(WatchScope::Resource(id)),
        _ => None,
    }
}

fn open_channel(name: &str, hub: Weak<Hub>) -> Option<Channel> {
    let ctor = Reflect::get(&js_sys::global(), &"BroadcastChannel".into()).ok()?.dyn_into::<Function>().ok()?;
    let port = Reflect::construct(&ctor, &Array::of1(&name.into())).ok()?;
    let on_message = Closure::<dyn Fn(JsValue)>::new(move |e: JsValue| {
        if let Some(hub) = hub.upgrade() {
            hub.received(&Reflect::get(&e, &"data".into()).unwrap_or(JsValue::UNDEFINED));
        }
    });
    Reflect::set(&port, &"onmessage".into(), on_message.as_ref()).ok()?;
    Some(Channel { port, _on_message: on_message })
}

/// Posts the batch; a batch that cannot be cloned (a chunk holding a function) goes one event
/// at a time, and what still cannot be cloned stays in this tab.
fn post(port: &JsValue, batch: Vec<JsValue>) {
    let all: Array = batch.iter().collect();
    if call_method(port, "postMessage", &Array::of1(&all)).is_none() {
        for e in batch {
            call_method(port, "postMessage", &Array::of1(&Array::of1(&e)));
        }
    }
}
