//! Model calls that may be retried: network errors, 408, 409, 429 and 5xx are tried again with
//! backoff from 1 s (factor 2) or after the server's `Retry-After` (capped at 30 s); error
//! responses become errors that say what the server said and what to do; API keys never appear
//! in them.

use super::abort::AbortFlag;
use super::env::{Env, HttpResponse};
use super::error::AgentError;
use super::run::Stop;
use super::transport::{SocketError, SocketRequest};
use super::wire::{Endpoint, HttpRequest};

/// Removes the API key from an error's text: a runtime's own error messages may quote a header
/// value, and the key must never reach chunks, errors or logs.
pub(crate) fn redact(e: AgentError, key: Option<&str>) -> AgentError {
    let Some(key) = key.filter(|k| k.len() >= 4) else { return e };
    match e {
        AgentError::ApiCall { message, status, body, retryable, retry_after_ms } => AgentError::ApiCall {
            message: message.replace(key, "[redacted]"),
            status,
            body: body.map(|b| b.replace(key, "[redacted]")),
            retryable,
            retry_after_ms,
        },
        e => e,
    }
}

/// Sends the request, retrying network errors, 408, 409, 429 and 5xx up to `max_retries` times
/// with backoff from 1 s (factor 2), or after the server's `Retry-After` (capped at 30 s).
///
/// With `socket`, the call goes on a WebSocket; when none can be had, it goes over HTTP if the
/// transport allows (`'auto'`), and `socket` becomes `None` (so are the retries); else it fails
/// saying why.
pub(crate) async fn send_with_retries(
    endpoint: &Endpoint,
    max_retries: u32,
    env: &dyn Env,
    abort: &AbortFlag,
    http: &HttpRequest,
    socket: &mut Option<(SocketRequest, bool)>,
) -> Result<HttpResponse, Stop> {
    let mut attempt = 0u32;
    loop {
        let sent = match socket.as_ref() {
            None => abort.race(env.fetch(http.clone())).await.ok_or(Stop::Aborted)?,
            Some((req, fallback)) => match abort.race(env.socket(req.clone())).await.ok_or(Stop::Aborted)? {
                Ok(resp) => Ok(resp),
                Err(SocketError::Unavailable(_)) if *fallback => {
                    *socket = None;
                    abort.race(env.fetch(http.clone())).await.ok_or(Stop::Aborted)?
                }
                Err(SocketError::Unavailable(e) | SocketError::Failed(e)) => Err(e),
            },
        };
        let err = match sent {
            Ok(resp) if (200..300).contains(&resp.status) => return Ok(resp),
            Ok(resp) => abort.race(status_error(resp, &endpoint.provider)).await.ok_or(Stop::Aborted)?,
            Err(e) => e,
        };
        let retryable = matches!(err, AgentError::ApiCall { retryable: true, .. });
        if !retryable || attempt >= max_retries {
            return Err(Stop::Failed(with_attempts(err, attempt)));
        }
        abort.race(env.sleep(retry_delay_ms(attempt, &err))).await.ok_or(Stop::Aborted)?;
        attempt += 1;
    }
}

/// The wait before retry number `attempt + 1`.
pub fn retry_delay_ms(attempt: u32, err: &AgentError) -> u64 {
    const CAP_MS: u64 = 30_000;
    if let AgentError::ApiCall { retry_after_ms: Some(ms), .. } = err {
        return (*ms).min(CAP_MS);
    }
    1000u64.saturating_mul(1u64 << attempt.min(20))
}

fn with_attempts(err: AgentError, retries: u32) -> AgentError {
    match err {
        AgentError::ApiCall { message, status, body, retryable, retry_after_ms } if retries > 0 => AgentError::ApiCall {
            message: format!("{message} (failed after {} attempts)", retries + 1),
            status,
            body,
            retryable,
            retry_after_ms,
        },
        e => e,
    }
}

const MAX_ERROR_BODY: usize = 64 * 1024;

/// Reads an error response and says what went wrong and what to do about it.
async fn status_error(mut resp: HttpResponse, provider: &str) -> AgentError {
    let status = resp.status;
    let retry_after_ms = parse_retry_after(resp.header("retry-after-ms"), resp.header("retry-after"));
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match resp.body.read().await {
            Ok(Some(b)) => body.extend_from_slice(&b),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    let body = String::from_utf8_lossy(&body).into_owned();
    let detail = error_detail(&body);
    let hint = match status {
        401 | 403 => format!("check the API key for '{provider}' (apiKey in the model config, or the provider's key variable)"),
        404 => "check the model name and the base URL".to_string(),
        429 => "the provider is rate limiting: wait, or raise maxRetries".to_string(),
        500..=599 => "the provider failed; try again later, or raise maxRetries".to_string(),
        _ => "check the request options".to_string(),
    };
    let message = match detail {
        Some(d) => format!("The model API answered {status}: {d} ({hint})"),
        None => format!("The model API answered {status} ({hint})"),
    };
    let retryable = matches!(status, 408 | 409 | 429) || status >= 500;
    AgentError::ApiCall { message, status: Some(status), body: Some(body), retryable, retry_after_ms }
}

/// The human part of an error body: `error.message`, `message`, or a string `error`.
fn error_detail(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let msg = v
        .pointer("/error/message")
        .or_else(|| v.get("message"))
        .or_else(|| v.get("error").filter(|e| e.is_string()))?;
    msg.as_str().map(str::to_owned)
}

/// `retry-after-ms` (milliseconds) wins over `retry-after` (seconds). HTTP-date values are not
/// understood and fall back to exponential backoff.
pub fn parse_retry_after(ms: Option<&str>, secs: Option<&str>) -> Option<u64> {
    ms.and_then(|s| parse_decimal_thousandths(s).map(|t| t / 1000)).or_else(|| secs.and_then(parse_decimal_thousandths))
}

/// A non-negative decimal such as `2` or `1.5`, times 1000 (without float parsing, whose code
/// is large in wasm).
fn parse_decimal_thousandths(s: &str) -> Option<u64> {
    let s = s.trim();
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut milli = 0;
    for (i, b) in frac.bytes().take(3).enumerate() {
        milli += u64::from(b - b'0') * [100, 10, 1][i];
    }
    whole.checked_mul(1000)?.checked_add(milli)
}

