//! Streaming HTTP through the runtime's global `fetch`, with an `AbortController` per request
//! that is aborted when the response body is dropped unfinished.

use js_sys::{Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader, Response};

use crate::core::env::{Body, HttpResponse, LocalFuture};
use crate::core::error::AgentError;
use crate::core::wire::HttpRequest;

pub async fn fetch(req: HttpRequest) -> Result<HttpResponse, AgentError> {
    let global = js_sys::global();
    let fetch_fn = Reflect::get(&global, &"fetch".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| AgentError::api("This runtime has no global fetch(); wasm-agent needs one to call models", false))?;
    let controller = AbortController::new().map_err(|e| network_error(&req.url, &e))?;
    let init = Object::new();
    let headers = Object::new();
    for (k, v) in &req.headers {
        set(&headers, k, &JsValue::from_str(v));
    }
    set(&init, "method", &"POST".into());
    set(&init, "headers", &headers);
    set(&init, "body", &JsValue::from_str(&req.body));
    set(&init, "signal", &controller.signal());
    let guard = AbortOnDrop(Some(controller));
    let promise: Promise = fetch_fn
        .call2(&global, &JsValue::from_str(&req.url), &init)
        .map_err(|e| network_error(&req.url, &e))?
        .unchecked_into();
    let resp: Response = JsFuture::from(promise).await.map_err(|e| network_error(&req.url, &e))?.unchecked_into();
    let mut headers_out = Vec::new();
    for name in ["retry-after", "retry-after-ms", "content-type"] {
        if let Ok(Some(v)) = resp.headers().get(name) {
            headers_out.push((name.to_string(), v));
        }
    }
    let reader = resp.body().map(|b| b.get_reader().unchecked_into::<ReadableStreamDefaultReader>());
    Ok(HttpResponse { status: resp.status(), headers: headers_out, body: Box::new(FetchBody { reader, guard, url: req.url }) })
}

fn set(obj: &Object, key: &str, v: &JsValue) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = Reflect::set(obj, &key.into(), v);
}

/// A failed `fetch`: the message names the URL (never the key, which travels in headers).
fn network_error(url: &str, e: &JsValue) -> AgentError {
    AgentError::api(format!("Could not reach the model API at {url}: {}", js_failure(e)), true)
}

/// What a runtime's network failure says: its message, and its cause's (Node's `fetch` puts
/// the socket's error there: "terminated (other side closed)").
fn js_failure(e: &JsValue) -> String {
    let detail = Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string()).or_else(|| e.as_string()).unwrap_or_default();
    let cause = Reflect::get(e, &"cause".into())
        .ok()
        .and_then(|c| Reflect::get(&c, &"message".into()).ok())
        .and_then(|m| m.as_string())
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    format!("{detail}{cause}")
}

struct AbortOnDrop(Option<AbortController>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.abort();
        }
    }
}

struct FetchBody {
    reader: Option<ReadableStreamDefaultReader>,
    guard: AbortOnDrop,
    url: String,
}

impl Body for FetchBody {
    fn read(&mut self) -> LocalFuture<'_, Result<Option<Vec<u8>>, AgentError>> {
        Box::pin(async move {
            let Some(reader) = &self.reader else { return Ok(None) };
            // The model was reached and had begun to answer: say so, not "could not reach".
            let result = JsFuture::from(reader.read()).await.map_err(|e| {
                AgentError::api(format!("The connection to the model API at {} broke mid-reply, after it had begun to answer: {}", self.url, js_failure(&e)), true)
            })?;
            let done = Reflect::get(&result, &"done".into()).map(|d| d.is_truthy()).unwrap_or(true);
            if done {
                // Finished normally: nothing left to abort.
                self.guard.0 = None;
                self.reader = None;
                return Ok(None);
            }
            let value = Reflect::get(&result, &"value".into()).unwrap_or(JsValue::UNDEFINED);
            let bytes = value.dyn_into::<Uint8Array>().map(|a| a.to_vec()).unwrap_or_default();
            Ok(Some(bytes))
        })
    }
}
