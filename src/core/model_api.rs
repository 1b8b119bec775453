//! The model a run talks to, behind one trait the core owns (`ModelApi`): build a step's call,
//! then open it and read its events. The loop knows nothing else of a model.
//!
//! Two kinds implement it: `HttpModel` here, a provider's `Protocol` sent through `Env` (with
//! retries, and on a WebSocket where the run asked for one), and a host model object (the
//! bindings' AI SDK model), which streams its own events.

use std::cell::RefCell;

use super::abort::AbortFlag;
use super::env::{Body, Env, LocalFuture};
use super::error::AgentError;
use super::model::{ModelEvent, ModelRequest, Warning};
use super::retry::{redact, redact_text, secrets, send_with_retries};
use super::error::Stop;
use super::transport::{socket_request, Transport};
use super::wire::{Endpoint, HttpRequest, Protocol, StreamDecoder};

/// One step's model call, built and not yet sent.
pub struct Call {
    /// The request body as sent: what `step-start` shows and the step keeps.
    pub body: String,
    /// What of the request the model cannot honour.
    pub warnings: Vec<Warning>,
    /// The request itself, for a model reached over HTTP.
    http: Option<HttpRequest>,
}

impl Call {
    /// A call that a host model object sends itself; `body` is its call options.
    pub fn new(body: String, warnings: Vec<Warning>) -> Self {
        Call { body, warnings, http: None }
    }
}

/// What sending a call needs of its run.
pub struct CallCx<'a> {
    pub env: &'a dyn Env,
    pub abort: &'a AbortFlag,
    pub run_id: &'a str,
    pub max_retries: u32,
    pub include_raw: bool,
    /// How the run's calls travel. Once no socket could be had (`'auto'`), it is `Fetch` for the
    /// rest of the run, so a silent handshake costs its timeout once.
    pub transport: &'a RefCell<Transport>,
}

/// The model of a run.
pub trait ModelApi {
    /// Builds one step's call from its prompt and settings.
    fn prepare(&self, req: &ModelRequest) -> Result<Call, AgentError>;
    /// Sends the call: resolves when the response started, to its events.
    fn open<'a>(&'a self, call: &'a Call, cx: &'a CallCx<'a>) -> LocalFuture<'a, Result<Box<dyn EventSource + 'a>, Stop>>;
}

/// The events of one model response, as they arrive.
pub trait EventSource {
    /// Appends the next events to `out`; resolves to whether more may follow. Events appended
    /// before a failure are kept: the failure comes on the next call.
    fn next<'a>(&'a mut self, out: &'a mut Vec<ModelEvent>) -> LocalFuture<'a, Result<bool, AgentError>>;
}

/// A model reached over HTTP: a provider's protocol at an endpoint.
pub struct HttpModel {
    pub endpoint: Endpoint,
    pub protocol: &'static dyn Protocol,
}

impl ModelApi for HttpModel {
    fn prepare(&self, req: &ModelRequest) -> Result<Call, AgentError> {
        let (http, warnings) = self.protocol.build_request(&self.endpoint, req)?;
        Ok(Call { body: http.body.clone(), warnings, http: Some(http) })
    }

    fn open<'a>(&'a self, call: &'a Call, cx: &'a CallCx<'a>) -> LocalFuture<'a, Result<Box<dyn EventSource + 'a>, Stop>> {
        Box::pin(async move {
            let http = call.http.as_ref().ok_or_else(|| Stop::Failed(AgentError::api("this call was not built for HTTP", false)))?;
            let transport = cx.transport.borrow().clone();
            let mut socket = match &transport {
                Transport::Socket(options) => Some((socket_request(cx.run_id, http, options).map_err(Stop::Failed)?, options.fallback)),
                Transport::Fetch => None,
            };
            let tried = socket.is_some();
            let sent = send_with_retries(&self.endpoint, cx.max_retries, cx.env, cx.abort, http, &mut socket).await;
            if tried && socket.is_none() {
                *cx.transport.borrow_mut() = Transport::Fetch;
            }
            let secrets = secrets(http, &self.endpoint);
            let response = sent.map_err(|stop| match stop {
                Stop::Failed(e) => Stop::Failed(redact(e, &secrets)),
                aborted => aborted,
            })?;
            let decoder = self.protocol.decoder(cx.include_raw);
            Ok(Box::new(HttpEvents { secrets, body: response.body, decoder, failed: None }) as Box<dyn EventSource + 'a>)
        })
    }
}

/// A response body read through the protocol's decoder.
struct HttpEvents {
    /// The request's secrets, kept out of every error (a server may echo them).
    secrets: Vec<String>,
    body: Box<dyn Body>,
    decoder: Box<dyn StreamDecoder>,
    /// A failure that came with events: reported on the next call, after they were applied.
    failed: Option<AgentError>,
}

impl EventSource for HttpEvents {
    fn next<'a>(&'a mut self, out: &'a mut Vec<ModelEvent>) -> LocalFuture<'a, Result<bool, AgentError>> {
        Box::pin(async move {
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
            let key = &self.secrets;
            let bytes = self.body.read().await.map_err(|e| redact(e, key))?;
            let from = out.len();
            let decoded = match &bytes {
                Some(b) => self.decoder.push(b, out),
                None => self.decoder.end(out),
            };
            // An error the provider reports in the stream may echo what it was sent.
            for ev in &mut out[from..] {
                if let ModelEvent::Error { message, body } = ev {
                    *message = redact_text(std::mem::take(message), key);
                    *body = body.take().map(|b| redact_text(b, key));
                }
            }
            match decoded {
                Ok(()) => Ok(bytes.is_some()),
                Err(e) if out.is_empty() => Err(redact(e, key)),
                Err(e) => {
                    self.failed = Some(redact(e, key));
                    Ok(true)
                }
            }
        })
    }
}
