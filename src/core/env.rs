//! The runtime services the core awaits, as traits the core owns. The platform module implements
//! them over `fetch`, `setTimeout` and `Date.now()`; native tests implement them with scripted
//! responses and a fake clock.

use std::future::Future;
use std::pin::Pin;

use super::error::AgentError;
use super::transport::{SocketError, SocketRequest};
use super::wire::HttpRequest;

pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// The body of a streaming HTTP response. Dropping it before the end must cancel the request,
/// so that an abandoned run closes its connection.
pub trait Body {
    /// The next bytes, `Ok(None)` at the end.
    fn read(&mut self) -> LocalFuture<'_, Result<Option<Vec<u8>>, AgentError>>;
}

pub struct HttpResponse {
    pub status: u16,
    /// Lower-cased header names.
    pub headers: Vec<(String, String)>,
    pub body: Box<dyn Body>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// What the step loop needs from the runtime.
pub trait Env {
    /// Sends the request; resolves when the response headers arrived. A network failure is an
    /// `AgentError::ApiCall` with `retryable: true`.
    fn fetch(&self, req: HttpRequest) -> LocalFuture<'static, Result<HttpResponse, AgentError>>;
    /// Resolves after `ms` milliseconds.
    fn sleep(&self, ms: u64) -> LocalFuture<'static, ()>;
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> f64;
    /// A fresh unique id.
    fn new_id(&self) -> String;
    /// Fills `buf` with random bytes (trace and span ids). By default they are mixed from
    /// `new_id`, which is enough for scripted environments.
    fn random_bytes(&self, buf: &mut [u8]) {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.new_id().bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        for chunk in buf.chunks_mut(8) {
            h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = h;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
    /// Sends a Responses call on a WebSocket; the events come back as the body, framed as SSE
    /// (`data: <event>`), ending after the response's last event. A runtime without one says so.
    fn socket(&self, req: SocketRequest) -> LocalFuture<'static, Result<HttpResponse, SocketError>> {
        let _ = req;
        Box::pin(async { Err(SocketError::Unavailable(AgentError::api("This runtime has no WebSocket", false))) })
    }
    /// The run ended: its sockets close unless it asked to keep them (`closeOnFinish: false`).
    fn release_sockets(&self, run_id: &str) {
        let _ = run_id;
    }
}
