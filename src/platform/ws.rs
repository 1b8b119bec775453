//! Responses calls on a WebSocket (`transport: 'websocket' | 'auto'`): opening, pooling and
//! closing sockets, and each call's events as a response body framed as SSE, so the Responses
//! decoder reads them as it reads an HTTP stream.
//!
//! A socket carries one response at a time. A run reuses the idle socket it or an earlier run
//! left open for the same URL and headers; when that socket is busy, a call that continues a
//! response (`previous_response_id`) is refused, any other call opens another socket. Sockets
//! close when their run ends, unless it asked to keep them (`closeOnFinish: false`); then
//! `output.transport.close()` closes them.
//!
//! How a socket opens depends on the runtime. In workerd, `fetch` with `Upgrade: websocket`
//! carries the request's headers (the API key). A page's `WebSocket` (and Node's, from 22) cannot
//! send headers: there a call that has any (a key, the model's own headers) is refused as
//! unavailable, so `'auto'` goes over HTTP; a URL that needs none (a proxy that adds the key)
//! works. Node 20 has no WebSocket at all.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::core::env::{Body, HttpResponse, LocalFuture};
use crate::core::error::AgentError;
use crate::core::transport::{ends_response, SocketError, SocketRequest};

thread_local! {
    static POOL: RefCell<Vec<Rc<Socket>>> = const { RefCell::new(Vec::new()) };
}

struct Socket {
    /// URL and headers: calls with the same key may share the socket.
    key: String,
    url: String,
    ws: JsValue,
    /// The runs that used it: whether each asked to keep it open, and whether it is still going.
    runs: RefCell<Vec<Use>>,
    /// A response is streaming on it.
    busy: Cell<bool>,
    inbox: RefCell<Inbox>,
}

struct Use {
    run_id: String,
    keep: bool,
    running: bool,
}

#[derive(Default)]
struct Inbox {
    messages: VecDeque<String>,
    /// Set once the socket closed or failed: why.
    closed: Option<String>,
    opened: bool,
    waker: Option<Waker>,
}

impl Socket {
    fn wake(&self) {
        if let Some(w) = self.inbox.borrow_mut().waker.take() {
            w.wake();
        }
    }

    fn is_open(&self) -> bool {
        self.inbox.borrow().closed.is_none()
    }

    fn close(&self) {
        if let Some(close) = Reflect::get(&self.ws, &"close".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) {
            let _ = close.call0(&self.ws);
        }
        let mut inbox = self.inbox.borrow_mut();
        inbox.closed.get_or_insert_with(|| "closed by the client".into());
        drop(inbox);
        self.wake();
        POOL.with(|p| p.borrow_mut().retain(|s| !std::ptr::eq(s.as_ref(), self)));
    }
}

pub fn socket(req: SocketRequest) -> LocalFuture<'static, Result<HttpResponse, SocketError>> {
    Box::pin(async move {
        let key = pool_key(&req);
        let pooled = POOL.with(|p| p.borrow().iter().filter(|s| s.key == key && s.is_open()).cloned().collect::<Vec<_>>());
        let idle = pooled.iter().find(|s| !s.busy.get()).cloned();
        let socket = match idle {
            Some(s) => s,
            None if req.follow_up && !pooled.is_empty() => {
                return Err(SocketError::Failed(AgentError::api(
                    "A response is still streaming on this WebSocket: a follow-up that carries previous_response_id \
                     must wait until it finishes (await the earlier stream first)",
                    false,
                )))
            }
            None => {
                let s = open(&req, key).await?;
                POOL.with(|p| p.borrow_mut().push(s.clone()));
                s
            }
        };
        {
            let mut runs = socket.runs.borrow_mut();
            if !runs.iter().any(|u| u.run_id == req.run_id) {
                runs.push(Use { run_id: req.run_id.clone(), keep: !req.close_on_finish, running: true });
            }
        }
        let send = Reflect::get(&socket.ws, &"send".into()).ok().and_then(|f| f.dyn_into::<Function>().ok());
        let sent = send.map(|f| f.call1(&socket.ws, &JsValue::from_str(&req.message)));
        if !matches!(sent, Some(Ok(_))) {
            socket.close();
            return Err(SocketError::Failed(AgentError::api(format!("Could not send on the WebSocket to {}", req.url), true)));
        }
        socket.busy.set(true);
        Ok(HttpResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: Box::new(SocketBody { socket, done: false }),
        })
    })
}

/// Calls may share a socket when they go to the same URL with the same headers (the same key).
fn pool_key(req: &SocketRequest) -> String {
    let mut key = req.url.clone();
    for (k, v) in &req.headers {
        key.push('\n');
        key.push_str(k);
        key.push(':');
        key.push_str(v);
    }
    key
}

/// A run ended: its sockets close, unless it asked to keep them or another run is still using
/// them. A kept socket remembers the run, for `output.transport.close()`.
pub fn release(run_id: &str) {
    let sockets = POOL.with(|p| p.borrow().clone());
    for s in sockets {
        let mut runs = s.runs.borrow_mut();
        let Some(at) = runs.iter().position(|u| u.run_id == run_id) else { continue };
        let keep = runs[at].keep;
        if keep {
            runs[at].running = false;
        } else {
            runs.remove(at);
        }
        let in_use = runs.iter().any(|u| u.running);
        drop(runs);
        if !keep && !in_use {
            s.close();
        }
    }
}

/// `output.transport.close()`: closes every socket the run used.
pub fn close_run(run_id: &str) {
    let sockets = POOL.with(|p| p.borrow().clone());
    for s in sockets.iter().filter(|s| s.runs.borrow().iter().any(|u| u.run_id == run_id)) {
        s.close();
    }
}

/// Opens a socket and waits until it is open.
async fn open(req: &SocketRequest, key: String) -> Result<Rc<Socket>, SocketError> {
    let global = js_sys::global();
    let unavailable = |message: String| SocketError::Unavailable(AgentError::api(message, false));
    let has = |name: &str| Reflect::get(&global, &name.into()).is_ok_and(|v| !v.is_undefined());
    let ws = if has("WebSocketPair") {
        upgrade_with_fetch(req).await?
    } else if has("WebSocket") {
        if !req.headers.is_empty() {
            let names: Vec<&str> = req.headers.iter().map(|(k, _)| k.as_str()).collect();
            return Err(unavailable(format!(
                "This runtime's WebSocket cannot send headers ({}): point providerOptions.<provider>.websocket.url \
                 at a server that adds them (and the API key), or use transport 'fetch'",
                names.join(", ")
            )));
        }
        let ctor = Reflect::get(&global, &"WebSocket".into()).map_err(|_| unavailable("No WebSocket".into()))?;
        let ctor: Function = ctor.dyn_into().map_err(|_| unavailable("WebSocket is not a constructor here".into()))?;
        let args = js_sys::Array::of1(&JsValue::from_str(&req.url));
        Reflect::construct(&ctor, &args).map_err(|e| unavailable(format!("Could not open a WebSocket to {}: {}", req.url, js_message(&e))))?
    } else {
        return Err(unavailable(
            "This runtime has no WebSocket (Node 20 has none; browsers, workerd and Node 22+ do): \
             use transport 'auto' to stream over HTTP here"
                .into(),
        ));
    };
    let socket = Rc::new(Socket {
        key,
        url: req.url.clone(),
        ws,
        runs: RefCell::new(Vec::new()),
        busy: Cell::new(false),
        inbox: RefCell::new(Inbox::default()),
    });
    listen(&socket);
    // A socket from a fetch upgrade is open already; a constructed one opens or fails.
    if Reflect::get(&socket.ws, &"readyState".into()).ok().and_then(|v| v.as_f64()) == Some(1.0) {
        socket.inbox.borrow_mut().opened = true;
    }
    within(Opened(socket.clone()), HANDSHAKE_MS).await.unwrap_or_else(|| Err(no_answer())).map_err(|why| {
        socket.close();
        // The handshake failed: no socket to be had (on 'auto', HTTP goes instead).
        SocketError::Unavailable(AgentError::api(format!("Could not open a WebSocket to {}: {why}", req.url), true))
    })?;
    Ok(socket)
}

/// workerd: `fetch(url, { headers: { Upgrade: 'websocket', … } })`, then `accept()`.
async fn upgrade_with_fetch(req: &SocketRequest) -> Result<JsValue, SocketError> {
    let global = js_sys::global();
    let failed = |message: String, retryable| SocketError::Failed(AgentError::api(message, retryable));
    let fetch: Function = Reflect::get(&global, &"fetch".into())
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(|| SocketError::Unavailable(AgentError::api("This runtime has no fetch() to open a WebSocket with", false)))?;
    let http_url = match req.url.split_once("://") {
        Some((s, rest)) if s.eq_ignore_ascii_case("wss") => format!("https://{rest}"),
        Some((s, rest)) if s.eq_ignore_ascii_case("ws") => format!("http://{rest}"),
        _ => req.url.clone(),
    };
    let headers = Object::new();
    for (k, v) in &req.headers {
        let _ = Reflect::set(&headers, &k.into(), &v.into());
    }
    let _ = Reflect::set(&headers, &"upgrade".into(), &"websocket".into());
    let init = Object::new();
    let _ = Reflect::set(&init, &"headers".into(), &headers);
    let promise: Promise = fetch
        .call2(&global, &JsValue::from_str(&http_url), &init)
        .map_err(|e| failed(format!("Could not open a WebSocket to {}: {}", req.url, js_message(&e)), true))?
        .unchecked_into();
    let opening = |why: String| SocketError::Unavailable(AgentError::api(format!("Could not open a WebSocket to {}: {why}", req.url), true));
    let resp = within(JsFuture::from(promise), HANDSHAKE_MS)
        .await
        .ok_or_else(|| opening(no_answer()))?
        .map_err(|e| opening(js_message(&e)))?;
    let ws = Reflect::get(&resp, &"webSocket".into()).unwrap_or(JsValue::NULL);
    if ws.is_null() || ws.is_undefined() {
        let status = Reflect::get(&resp, &"status".into()).ok().and_then(|s| s.as_f64()).unwrap_or(0.0) as u16;
        let body = match Reflect::get(&resp, &"text".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) {
            Some(text) => match text.call0(&resp) {
                Ok(p) => JsFuture::from(Promise::from(p)).await.ok().and_then(|t| t.as_string()).unwrap_or_default(),
                Err(_) => String::new(),
            },
            None => String::new(),
        };
        let detail = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.pointer("/error/message").and_then(|m| m.as_str()).map(str::to_owned))
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        // No socket here (on 'auto', HTTP goes instead); the status says why.
        return Err(SocketError::Unavailable(AgentError::ApiCall {
            message: format!("The model API refused the WebSocket at {} with status {status}{detail}", req.url),
            status: Some(status),
            body: Some(body),
            retryable: status == 429 || status >= 500,
            retry_after_ms: None,
        }));
    }
    if let Some(accept) = Reflect::get(&ws, &"accept".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) {
        accept.call0(&ws).map_err(|e| failed(format!("Could not accept the WebSocket: {}", js_message(&e)), true))?;
    }
    Ok(ws)
}

/// Routes the socket's events into its inbox. The listeners hold the socket weakly, so a closed
/// socket is freed with its JavaScript object.
fn listen(socket: &Rc<Socket>) {
    let add = Reflect::get(&socket.ws, &"addEventListener".into()).ok().and_then(|f| f.dyn_into::<Function>().ok());
    let Some(add) = add else { return };
    let on = |name: &str, f: Box<dyn FnMut(JsValue)>| {
        let f = Closure::wrap(f).into_js_value();
        let _ = add.call2(&socket.ws, &name.into(), &f);
    };
    let weak = Rc::downgrade(socket);
    on("open", Box::new(with(&weak, |s, _| s.inbox.borrow_mut().opened = true)));
    on(
        "message",
        Box::new(with(&weak, |s, event| {
            let data = Reflect::get(&event, &"data".into()).unwrap_or(JsValue::UNDEFINED);
            // The API sends text frames; anything else is not an event of it.
            let text = data.as_string().unwrap_or_else(|| "{\"type\":\"error\",\"message\":\"a binary WebSocket message\"}".into());
            s.inbox.borrow_mut().messages.push_back(text);
        })),
    );
    on(
        "close",
        Box::new(with(&weak, |s, event| {
            let code = Reflect::get(&event, &"code".into()).ok().and_then(|c| c.as_f64()).unwrap_or(0.0) as u32;
            let reason = Reflect::get(&event, &"reason".into()).ok().and_then(|r| r.as_string()).unwrap_or_default();
            let why = if reason.is_empty() { format!("closed with code {code}") } else { format!("closed with code {code}: {reason}") };
            s.inbox.borrow_mut().closed.get_or_insert(why);
            POOL.with(|p| p.borrow_mut().retain(|x| !Rc::ptr_eq(x, s)));
        })),
    );
    on("error", Box::new(with(&weak, |s, _| {
        s.inbox.borrow_mut().closed.get_or_insert_with(|| "the connection failed".into());
        POOL.with(|p| p.borrow_mut().retain(|x| !Rc::ptr_eq(x, s)));
    })));
}

/// A listener that runs `f` on the socket while it lives, then wakes its reader.
fn with(weak: &Weak<Socket>, f: impl Fn(&Rc<Socket>, JsValue) + 'static) -> impl FnMut(JsValue) + 'static {
    let weak = weak.clone();
    move |event| {
        if let Some(s) = weak.upgrade() {
            f(&s, event);
            s.wake();
        }
    }
}

/// How long a socket may take to open before the call gives up on it (on `'auto'`, HTTP goes
/// instead): a server that accepts the connection and never answers must not hang the run.
const HANDSHAKE_MS: u32 = 10_000;

/// `fut`'s output, or `None` when it takes longer than `ms`.
async fn within<F: Future + Unpin>(mut fut: F, ms: u32) -> Option<F::Output> {
    let mut timeout = gloo_timers::future::TimeoutFuture::new(ms);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = Pin::new(&mut fut).poll(cx) {
            return Poll::Ready(Some(out));
        }
        Pin::new(&mut timeout).poll(cx).map(|()| None)
    })
    .await
}

fn no_answer() -> String {
    format!("no answer to the handshake within {} s", HANDSHAKE_MS / 1000)
}

/// Resolves once the socket is open; fails with why it closed first.
struct Opened(Rc<Socket>);

impl Future for Opened {
    type Output = Result<(), String>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut inbox = self.0.inbox.borrow_mut();
        if let Some(why) = &inbox.closed {
            return Poll::Ready(Err(why.clone()));
        }
        if inbox.opened {
            return Poll::Ready(Ok(()));
        }
        inbox.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// One response's events, each as `data: <event>\n\n`, ending after its last event.
struct SocketBody {
    socket: Rc<Socket>,
    done: bool,
}

impl Body for SocketBody {
    fn read(&mut self) -> LocalFuture<'_, Result<Option<Vec<u8>>, AgentError>> {
        Box::pin(async move {
            if self.done {
                return Ok(None);
            }
            let next = Next(&self.socket).await;
            match next {
                Ok(message) => {
                    if ends_response(&message) {
                        self.done = true;
                        self.socket.busy.set(false);
                    }
                    let mut frame = String::with_capacity(message.len() + 8);
                    // One SSE event; a line break inside the text would start another field.
                    for line in message.split('\n') {
                        frame.push_str("data: ");
                        frame.push_str(line.strip_suffix('\r').unwrap_or(line));
                        frame.push('\n');
                    }
                    frame.push('\n');
                    Ok(Some(frame.into_bytes()))
                }
                Err(why) => {
                    self.done = true;
                    Err(AgentError::api(
                        format!("The WebSocket to the model API at {} {why} before the response finished", self.socket.url),
                        true,
                    ))
                }
            }
        })
    }
}

impl Drop for SocketBody {
    /// A response left unread (the run was stopped) would keep streaming into the socket: the
    /// socket is closed, so the next call starts clean.
    fn drop(&mut self) {
        if !self.done {
            self.socket.close();
        }
    }
}

struct Next<'a>(&'a Rc<Socket>);

impl Future for Next<'_> {
    type Output = Result<String, String>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut inbox = self.0.inbox.borrow_mut();
        if let Some(message) = inbox.messages.pop_front() {
            return Poll::Ready(Ok(message));
        }
        if let Some(why) = &inbox.closed {
            return Poll::Ready(Err(why.clone()));
        }
        inbox.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

fn js_message(e: &JsValue) -> String {
    Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string()).or_else(|| e.as_string()).unwrap_or_else(|| "failed".into())
}
