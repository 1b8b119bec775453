//! Model calls that may be retried: network errors, 408, 409, 429 and 5xx are tried again with
//! backoff from 1 s (factor 2) or after the server's `Retry-After` (seconds or an HTTP date,
//! capped at 30 s); error responses, and successful ones that are no event stream, become errors
//! that say what the server said and what to do; the request's secrets (API key, credential
//! headers) never appear in them.

use super::abort::AbortFlag;
use super::env::{Env, HttpResponse};
use super::error::AgentError;
use super::error::Stop;
use super::transport::{SocketError, SocketRequest};
use super::wire::{Endpoint, HttpRequest};

/// What stands in for a secret in error texts.
const REDACTED: &str = "[redacted]";

/// The secrets a request carries: the API key, and every value of a header whose name says it
/// holds one (`authorization`, `x-api-key`, `x-goog-api-key`, cookies, tokens, …), whether it
/// came from the provider, `model.headers` or `modelSettings.headers`. For a value with an auth
/// scheme (`Bearer x`, `Basic x`), the credential alone is one too.
pub(crate) fn secrets(http: &HttpRequest, endpoint: &Endpoint) -> Vec<String> {
    const SECRET_WORDS: [&[u8]; 6] = [b"key", b"token", b"secret", b"auth", b"cookie", b"password"];
    let names_a_secret = |name: &str| {
        SECRET_WORDS.iter().any(|w| name.as_bytes().windows(w.len()).any(|part| part.eq_ignore_ascii_case(w)))
    };
    let mut found: Vec<String> = Vec::new();
    // Short values would blank out ordinary words. A whole value goes before the credential in
    // it, so that it is replaced whole (sorting by length would cost 3 KB of wasm).
    let mut add = |secret: &str| {
        if secret.len() >= 4 {
            found.push(secret.to_string());
        }
    };
    add(endpoint.api_key.as_deref().unwrap_or_default());
    for (_, value) in http.headers.iter().filter(|(name, _)| names_a_secret(name)) {
        let value = value.trim();
        add(value);
        if let Some((scheme, credential)) = value.split_once(' ') {
            if scheme.bytes().all(|b| b.is_ascii_alphabetic()) {
                add(credential.trim());
            }
        }
    }
    found
}

/// Removes `secrets` from an error's message and body: a server may echo a header, and a
/// runtime's own error messages may quote one; secrets must never reach chunks, errors or logs.
pub(crate) fn redact(e: AgentError, secrets: &[String]) -> AgentError {
    match e {
        AgentError::ApiCall { message, status, body, retryable, retry_after_ms } => AgentError::ApiCall {
            message: redact_text(message, secrets),
            status,
            body: body.map(|b| redact_text(b, secrets)),
            retryable,
            retry_after_ms,
        },
        e => e,
    }
}

pub(crate) fn redact_text(mut text: String, secrets: &[String]) -> String {
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    // Errors quote the head of what came back: the quote may end inside a secret.
    for secret in secrets {
        let cut = (4..secret.len()).rev().find(|&n| secret.is_char_boundary(n) && text.ends_with(&secret[..n]));
        if let Some(n) = cut {
            text.truncate(text.len() - n);
            text.push_str(REDACTED);
        }
    }
    text
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
            Ok(resp) if (200..300).contains(&resp.status) && is_event_stream(&resp) => return Ok(resp),
            Ok(resp) if (200..300).contains(&resp.status) => {
                abort.race(not_an_event_stream(resp, &secrets(http, endpoint))).await.ok_or(Stop::Aborted)?
            }
            Ok(resp) => abort.race(status_error(resp, &endpoint.provider, env.now_ms())).await.ok_or(Stop::Aborted)?,
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

/// Reads an error response and says what went wrong and what to do about it. `now_ms` is the
/// time a `Retry-After` date is counted from.
async fn status_error(mut resp: HttpResponse, provider: &str, now_ms: f64) -> AgentError {
    let status = resp.status;
    let retry_after_ms = parse_retry_after(resp.header("retry-after-ms"), resp.header("retry-after"), now_ms);
    let body = read_body(&mut resp).await;
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

/// The body of a reply that is not the stream, up to `MAX_ERROR_BODY` bytes.
async fn read_body(resp: &mut HttpResponse) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match resp.body.read().await {
            Ok(Some(b)) => body.extend_from_slice(&b),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).into_owned()
}

/// Whether a successful reply is an event stream, as every model API streams: a reply that does
/// not say what it is counts as one.
fn is_event_stream(resp: &HttpResponse) -> bool {
    let media_type = |t: &str| t.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("text/event-stream");
    resp.header("content-type").is_none_or(media_type)
}

/// A successful reply of another content type (a whole JSON completion from a server that does
/// not stream, a proxy's HTML page) says what came back: its status, type and the head of its
/// body, without the request's secrets (taken out before the body is cut).
async fn not_an_event_stream(mut resp: HttpResponse, secrets: &[String]) -> AgentError {
    let status = resp.status;
    let content_type = resp.header("content-type").unwrap_or_default().to_string();
    let body = redact_text(read_body(&mut resp).await, secrets);
    let message = format!(
        "The model API answered {status} with content type '{content_type}' instead of an event stream (check the base \
         URL and that the server streams): {}",
        super::error::head(body.trim())
    );
    AgentError::ApiCall { message, status: Some(status), body: Some(body), retryable: false, retry_after_ms: None }
}

/// The human part of an error body: `error.message`, `message`, or a string `error`, of a JSON
/// body or of the first `data:` line of an event-stream body that has one (a gateway that had
/// begun to stream answers so: `data: {"error": {"message": …}}`).
fn error_detail(body: &str) -> Option<String> {
    json_error_detail(body).or_else(|| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|data| json_error_detail(data.trim()))
    })
}

fn json_error_detail(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let msg = v
        .pointer("/error/message")
        .or_else(|| v.get("message"))
        .or_else(|| v.get("error").filter(|e| e.is_string()))?;
    msg.as_str().map(str::to_owned)
}

/// `retry-after-ms` (milliseconds) wins over `retry-after`: seconds, or an HTTP date (IMF-fixdate,
/// or the obsolete RFC 850 and asctime forms), whose wait is the time from `now_ms` until then,
/// none for a date past.
pub fn parse_retry_after(ms: Option<&str>, secs: Option<&str>, now_ms: f64) -> Option<u64> {
    let until = |at_ms: i64| u64::try_from(at_ms.saturating_sub(now_ms as i64)).unwrap_or(0);
    ms.and_then(|s| parse_decimal_thousandths(s).map(|t| t / 1000))
        .or_else(|| secs.and_then(|s| parse_decimal_thousandths(s).or_else(|| http_date_ms(s).map(until))))
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// An HTTP date as milliseconds since the Unix epoch (RFC 9110 §5.6.7):
/// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT` or `Sun Nov  6 08:49:37 1994`.
/// A two-digit year before 70 is in this century. The weekday is not checked. Read byte by byte:
/// `str` patterns and `parse` cost more wasm.
fn http_date_ms(s: &str) -> Option<i64> {
    let mut words: [&[u8]; 8] = [&[]; 8];
    let mut count = 0;
    for word in s.as_bytes().split(|b| matches!(b, b' ' | b',' | b'-' | b':')).filter(|w| !w.is_empty()) {
        *words.get_mut(count)? = word;
        count += 1;
    }
    let (day, month, year, hms) = match (count, words[7]) {
        (8, b"GMT") => (words[1], words[2], words[3], &words[4..7]),
        // asctime: no zone, the year last
        (7, _) => (words[2], words[1], words[6], &words[3..6]),
        _ => return None,
    };
    let number = |digits: &[u8], max: i64| -> Option<i64> {
        if !(1..=4).contains(&digits.len()) {
            return None;
        }
        let value = digits.iter().try_fold(0i64, |v, d| d.is_ascii_digit().then(|| v * 10 + i64::from(d - b'0')));
        value.filter(|v| *v <= max)
    };
    let year = match (year.len(), number(year, 9999)?) {
        (2, y) if y < 70 => 2000 + y,
        (2, y) => 1900 + y,
        (4, y) => y,
        _ => return None,
    };
    let month = MONTHS.iter().position(|m| m.as_bytes() == month)? as i64 + 1;
    let day = number(day, 31).filter(|d| *d >= 1)?;
    let (h, m, sec) = (number(hms[0], 23)?, number(hms[1], 59)?, number(hms[2], 60)?);
    // Days since 1970-01-01 of the proleptic Gregorian calendar, with years starting in March
    // so that the leap day comes last.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(((days * 24 + h) * 60 + m) * 60_000 + sec * 1000)
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

