//! Background tasks across the tabs of one database (SPEC §21.2), over Web Locks.
//!
//! A tab runs a task holding the lock `wasm-agent-task:<id>` (bindings/background.rs). Another
//! tab that hears of the task (its memory's watchers, or storage at start) queues for that lock:
//! the browser grants it when the running tab closes or the task ends, and then this tab runs
//! the recovery of SPEC §8 at once (tasks left running marked failed, placeholders updated).
//! The end of a task is answered (an `untilIdle` continuation) by the one tab that takes the
//! lock `wasm-agent-answer:<id>`, which it keeps until it closes; the others only show it.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::convert::to_json;
use super::memory::MemoryInner;
use crate::core::background::{Manager, TaskFilter, TaskRecord, TaskStatus};
use crate::core::env::LocalFuture;
use crate::core::memory::Store;

const ANSWER_PREFIX: &str = "wasm-agent-answer:";

thread_local! {
    /// The tasks whose lock this tab already queues for.
    static WAITING: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// `navigator.locks.request(name, options, callback)`'s promise, or `None` without Web Locks.
fn request_lock(name: &str, options: &JsValue, callback: &JsValue) -> Option<Promise> {
    let locks = super::background::web_locks()?;
    let request = Reflect::get(&locks, &"request".into()).ok()?.dyn_into::<Function>().ok()?;
    let args = Array::of3(&name.into(), options, callback);
    request.apply(&locks, &args).ok()?.dyn_into::<Promise>().ok()
}

/// Claims the answer to a task's end for this tab (`TaskRuntime::claim`): `false` when another
/// tab holds it. Where there are no Web Locks this tab is the only one: `true`.
pub fn claim(task_id: &str) -> LocalFuture<'static, bool> {
    let name = format!("{ANSWER_PREFIX}{task_id}");
    Box::pin(async move {
        let options = Object::new();
        let _ = Reflect::set(&options, &"ifAvailable".into(), &JsValue::TRUE);
        let (tx, rx) = futures_channel::oneshot::channel::<bool>();
        // Granted: kept until the tab closes (a promise that never settles), so no later tab
        // answers the same end again. Not granted: the callback gets null.
        let callback = Closure::once_into_js(move |lock: JsValue| -> JsValue {
            let granted = !lock.is_null();
            let _ = tx.send(granted);
            match granted {
                true => Promise::new(&mut |_, _| {}).into(),
                false => JsValue::UNDEFINED,
            }
        });
        if request_lock(&name, &options, &callback).is_none() {
            return true;
        }
        rx.await.unwrap_or(true)
    })
}

/// Follows this agent's tasks that other tabs run: from the memory's watchers, and those that
/// storage shows going now (after the start-up recovery, which leaves them to their live tab).
pub fn follow_other_tabs(m: &Rc<Manager>, mem: &Rc<MemoryInner>, agent_id: &str) {
    let (weak, store, agent) = (Rc::downgrade(m), mem.store.clone(), agent_id.to_string());
    let hook = {
        let (weak, store, agent) = (weak.clone(), store.clone(), agent.clone());
        Rc::new(move |task: &JsValue| {
            if weak.strong_count() == 0 {
                return false;
            }
            let parsed = to_json(task, "task").ok().and_then(|v| TaskRecord::from_json(&v, "another tab").ok());
            if let Some(task) = parsed.filter(|t| t.agent_id == agent) {
                heard_of(&weak, &store, task);
            }
            true
        })
    };
    mem.hub.on_remote_task(hook);
    let m = m.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let _ = m.recover(store.clone(), &agent).await;
        let filter = TaskFilter { agent_id: Some(agent), thread_id: None, statuses: vec![TaskStatus::Pending, TaskStatus::Running] };
        for t in store.list_tasks(&filter).await.unwrap_or_default() {
            heard_of(&weak, &store, t);
        }
    });
}

/// A task record another tab wrote (or storage holds): going, it is waited for; ended, its end
/// goes to this tab's `untilIdle` streams, answered here if this tab claims it.
fn heard_of(m: &Weak<Manager>, store: &Rc<dyn Store>, task: TaskRecord) {
    let Some(manager) = m.upgrade() else { return };
    if !task.status.is_terminal() {
        manager.note_foreign(task.clone(), false);
        wait_for_release(m.clone(), store.clone(), task);
        return;
    }
    if !manager.has_listener(&task) {
        return manager.note_foreign(task, false);
    }
    wasm_bindgen_futures::spawn_local(async move {
        let here = manager.claim(&task.id).await;
        manager.note_foreign(task, here);
    });
}

/// Queues for the lock of the tab running `task`; once granted (that tab closed, or the task
/// ended) runs the recovery at once and tells this tab's streams what it marked failed.
fn wait_for_release(m: Weak<Manager>, store: Rc<dyn Store>, task: TaskRecord) {
    let queued = WAITING.with(|w| {
        let mut w = w.borrow_mut();
        let new = !w.contains(&task.id);
        if new {
            w.push(task.id.clone());
        }
        new
    });
    if !queued {
        return;
    }
    // Granted and released at once: the callback returns nothing to hold.
    let callback = Closure::once_into_js(|_lock: JsValue| JsValue::UNDEFINED);
    let name = format!("{}{}", super::background::LOCK_PREFIX, task.id);
    let Some(p) = request_lock(&name, &Object::new().into(), &callback) else {
        WAITING.with(|w| w.borrow_mut().retain(|id| *id != task.id));
        return;
    };
    wasm_bindgen_futures::spawn_local(async move {
        let _ = JsFuture::from(p).await;
        WAITING.with(|w| w.borrow_mut().retain(|id| *id != task.id));
        let Some(manager) = m.upgrade() else { return };
        let recovered = manager.recover_tasks(store, &task.agent_id).await.unwrap_or_default();
        for t in recovered {
            let here = manager.has_listener(&t) && manager.claim(&t.id).await;
            manager.note_foreign(t, here);
        }
    });
}
