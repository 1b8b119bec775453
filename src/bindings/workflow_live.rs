//! Which workflow runs are executing, so `run.restart()` (SPEC §20.2) re-runs only a run whose
//! page or isolate died. In this package instance a set of live runs says so; across the pages
//! and workers of an origin a Web Lock per executing run (`navigator.locks`, where the runtime
//! has it) does: the browser releases a dead page's locks, so a run left `running` whose lock
//! nobody holds is one nobody is running.

use std::cell::RefCell;

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

thread_local! {
    static LIVE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn lock_name(workflow: &str, run_id: &str) -> String {
    format!("wasm-agent:workflow-run:{workflow}:{run_id}")
}

/// `navigator.locks`, when the runtime has Web Locks.
fn locks() -> Option<JsValue> {
    let nav = Reflect::get(&js_sys::global(), &"navigator".into()).ok().filter(JsValue::is_object)?;
    Reflect::get(&nav, &"locks".into()).ok().filter(JsValue::is_object)
}

/// An execution of a run, live until dropped (when the execution settles).
pub(crate) struct Live {
    name: String,
    /// Resolves the promise the run's Web Lock is held on.
    release: Option<Function>,
}

/// Marks the run executing here, and takes its Web Lock where there are Web Locks.
pub(crate) fn hold(workflow: &str, run_id: &str) -> Live {
    let name = lock_name(workflow, run_id);
    LIVE.with(|l| l.borrow_mut().push(name.clone()));
    let release = locks().and_then(|locks| {
        let mut resolve = None;
        let held = Promise::new(&mut |res, _| resolve = Some(res));
        let request: Function = Reflect::get(&locks, &"request".into()).ok()?.dyn_into().ok()?;
        let callback = Closure::once_into_js(move |_lock: JsValue| held);
        // A refused request (an opaque origin) only means no lock; never an unhandled rejection.
        if let Ok(p) = request.call2(&locks, &name.as_str().into(), &callback) {
            if let Ok(catch) = Reflect::get(&p, &"catch".into()).and_then(|c| c.dyn_into::<Function>()) {
                let _ = catch.call1(&p, &Closure::once_into_js(|_: JsValue| {}));
            }
        }
        resolve
    });
    Live { name, release }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.with(|l| {
            let mut l = l.borrow_mut();
            if let Some(i) = l.iter().position(|n| *n == self.name) {
                l.swap_remove(i);
            }
        });
        if let Some(f) = self.release.take() {
            let _ = f.call0(&JsValue::UNDEFINED);
        }
    }
}

/// Takes the run for a restart when nobody runs it: not in this package instance, and (where
/// there are Web Locks) its lock is free, taken at once with `ifAvailable` so of two tabs
/// restarting it one gets it. `Err` says where it runs.
pub(crate) async fn try_hold(workflow: &str, run_id: &str) -> Result<Live, &'static str> {
    let name = lock_name(workflow, run_id);
    if LIVE.with(|l| l.borrow().contains(&name)) {
        return Err("in this page or process");
    }
    LIVE.with(|l| l.borrow_mut().push(name.clone()));
    let mut live = Live { name, release: None };
    let Some(locks) = locks() else { return Ok(live) };
    let Some(request) = Reflect::get(&locks, &"request".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) else {
        return Ok(live);
    };
    let (mut release, mut answer) = (None, None);
    let held = Promise::new(&mut |res, _| release = Some(res));
    let granted = Promise::new(&mut |res, _| answer = Some(res));
    let (Some(release), Some(answer)) = (release, answer) else { return Ok(live) };
    let tell = answer.clone();
    let callback = Closure::once_into_js(move |lock: JsValue| -> JsValue {
        let got = lock.is_object();
        let _ = tell.call1(&JsValue::UNDEFINED, &got.into());
        if got { held.into() } else { JsValue::UNDEFINED }
    });
    let options = js_sys::Object::new();
    let _ = Reflect::set(&options, &"ifAvailable".into(), &true.into());
    match request.call3(&locks, &live.name.as_str().into(), &options, &callback) {
        Ok(p) => {
            // A refused request (an opaque origin) means no lock to go by: go on without.
            if let Ok(catch) = Reflect::get(&p, &"catch".into()).and_then(|c| c.dyn_into::<Function>()) {
                let _ = catch.call1(&p, &Closure::once_into_js(move |_: JsValue| {
                    let _ = answer.call1(&JsValue::UNDEFINED, &JsValue::NULL);
                }));
            }
        }
        Err(_) => return Ok(live),
    }
    match JsFuture::from(granted).await.ok().and_then(|v| v.as_bool()) {
        Some(false) => Err("in another page or worker of this origin"),
        Some(true) => {
            live.release = Some(release);
            Ok(live)
        }
        None => Ok(live),
    }
}
