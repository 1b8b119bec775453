//! The runtime's services behind the core's `Env` trait, taken from the JavaScript global object
//! (never `window`), so the same code runs in pages, workers, Node and workerd. wasm32 only.

mod fetch;
pub mod idb;
#[cfg(feature = "websocket")]
mod ws;

#[cfg(feature = "websocket")]
pub use ws::close_run as close_run_sockets;

/// Without the WebSocket transport no run has sockets to close.
#[cfg(not(feature = "websocket"))]
pub fn close_run_sockets(_run_id: &str) {}

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::env::{Env, HttpResponse, LocalFuture};
use crate::core::error::AgentError;
use crate::core::transport::{SocketError, SocketRequest};
use crate::core::wire::HttpRequest;

/// `Env` over `fetch`, `setTimeout` (through gloo), `Date.now()` and `Math.random()`.
#[derive(Clone, Copy, Default)]
pub struct JsEnv;

impl Env for JsEnv {
    fn fetch(&self, req: HttpRequest) -> LocalFuture<'static, Result<HttpResponse, AgentError>> {
        Box::pin(fetch::fetch(req))
    }

    fn socket(&self, req: SocketRequest) -> LocalFuture<'static, Result<HttpResponse, SocketError>> {
        #[cfg(feature = "websocket")]
        return ws::socket(req);
        // Never asked: the transport option is refused in this build (`core::transport::parse`).
        #[cfg(not(feature = "websocket"))]
        Box::pin(async move {
            drop(req);
            Err(SocketError::Unavailable(crate::core::features::not_built("transport", "the WebSocket transport", "websocket")))
        })
    }

    fn release_sockets(&self, run_id: &str) {
        #[cfg(feature = "websocket")]
        ws::release(run_id);
        #[cfg(not(feature = "websocket"))]
        let _ = run_id;
    }

    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()> {
        let ms = ms.min(u32::MAX as u64) as u32;
        Box::pin(gloo_timers::future::TimeoutFuture::new(ms))
    }

    fn now_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn new_id(&self) -> String {
        random_uuid()
    }

    fn random_bytes(&self, buf: &mut [u8]) {
        fill_random(buf);
    }
}

/// A version-4 UUID. `crypto.randomUUID` exists only in secure contexts, so the bytes come from
/// `crypto.getRandomValues` when present and `Math.random` otherwise.
pub fn random_uuid() -> String {
    let mut b = [0u8; 16];
    // One `getRandomValues` call per 256 ids: in Node each call costs more than the id. The
    // refill runs with no borrow held (it is a JavaScript call).
    let refill = UUID_POOL.with(|pool| pool.borrow().1 + 16 > POOL_BYTES);
    if refill {
        let mut fresh = vec![0u8; POOL_BYTES];
        fill_random(&mut fresh);
        UUID_POOL.with(|pool| *pool.borrow_mut() = (fresh, 0));
    }
    UUID_POOL.with(|pool| {
        let (bytes, used) = &mut *pool.borrow_mut();
        b.copy_from_slice(&bytes[*used..*used + 16]);
        bytes[*used..*used + 16].fill(0);
        *used += 16;
    });
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(char::from_digit((byte >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((byte & 15) as u32, 16).unwrap_or('0'));
    }
    s
}

const POOL_BYTES: usize = 4096;

thread_local! {
    /// Random bytes for `random_uuid`, and how many of them are used.
    static UUID_POOL: std::cell::RefCell<(Vec<u8>, usize)> =
        const { std::cell::RefCell::new((Vec::new(), POOL_BYTES)) };
}

fn fill_random(out: &mut [u8]) {
    let crypto = Reflect::get(&js_sys::global(), &"crypto".into()).unwrap_or(JsValue::UNDEFINED);
    if let Ok(get) = Reflect::get(&crypto, &"getRandomValues".into()) {
        if let Some(get) = get.dyn_ref::<Function>() {
            let arr = js_sys::Uint8Array::new_with_length(out.len() as u32);
            if get.call1(&crypto, &arr).is_ok() {
                arr.copy_to(out);
                return;
            }
        }
    }
    for b in out.iter_mut() {
        *b = (js_sys::Math::random() * 256.0) as u8;
    }
}

thread_local! {
    static IN_WORKERD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The workerd entry (`index.workerd.js`) says where the package runs: a Worker's keys are
/// bindings on its `env`, never environment variables.
#[wasm_bindgen::prelude::wasm_bindgen(js_name = __inWorkerd, skip_typescript)]
pub fn mark_workerd() {
    IN_WORKERD.with(|w| w.set(true));
}

/// Whether the package was loaded through its workerd entry.
pub fn in_workerd() -> bool {
    IN_WORKERD.with(|w| w.get())
}

/// `process.env[name]` where the runtime has one (Node; workerd with nodejs_compat). A browser
/// has no environment and answers `None`.
pub fn env_var(name: &str) -> Option<String> {
    let process = Reflect::get(&js_sys::global(), &"process".into()).ok()?;
    if !process.is_object() {
        return None;
    }
    let env = Reflect::get(&process, &"env".into()).ok()?;
    if !env.is_object() {
        return None;
    }
    Reflect::get(&env, &name.into()).ok()?.as_string().filter(|s| !s.is_empty())
}
