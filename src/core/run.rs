//! The step loop of one run: send the prompt, stream the response into chunks, retry what may be
//! retried, stop on abort. Runtime-free: everything it waits on comes through `Env`, so native
//! tests drive it with scripted responses and a fake clock.

use super::abort::AbortFlag;
use super::chunk::Chunk;
use super::env::{Env, HttpResponse, LocalFuture};
use super::error::AgentError;
use super::model::{FinishReason, ModelMessage, ModelRequest, Usage};
use super::step::{IdSource, StepBuilder, StepResult};
use crate::providers::{self, Endpoint, HttpRequest};

/// Everything one run needs, already validated.
pub struct RunConfig {
    pub run_id: String,
    pub endpoint: Endpoint,
    /// The full prompt (system, context and input messages) and the model settings.
    pub request: ModelRequest,
    pub max_retries: u32,
    pub include_raw: bool,
    pub max_steps: u32,
}

/// Where the chunks of a run go.
pub trait Sink {
    /// Called once per chunk, in order.
    fn emit(&self, chunk: Chunk);
    /// Called after each complete step, after its `step-finish` chunk; the loop waits for it
    /// (this is `onStepFinish`).
    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()>;
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct RunOutcome {
    pub message_id: String,
    pub steps: Vec<StepResult>,
    /// The step that was streaming when the run failed or was aborted, as far as it got.
    pub partial: Option<StepResult>,
    pub total_usage: Usage,
    pub error: Option<AgentError>,
    /// `Some(reason)` when the run was aborted.
    pub aborted: Option<Option<String>>,
}

impl RunOutcome {
    pub fn finish_reason(&self) -> FinishReason {
        if self.aborted.is_some() {
            FinishReason::Abort
        } else if self.error.is_some() {
            FinishReason::Error
        } else {
            self.steps.last().map(|s| s.finish_reason).unwrap_or(FinishReason::Other)
        }
    }

    /// Text of all complete steps.
    pub fn text(&self) -> String {
        self.steps.iter().map(|s| s.text.as_str()).collect()
    }

    pub fn reasoning_text(&self) -> String {
        self.steps.iter().map(|s| s.reasoning.as_str()).collect()
    }

    /// The messages the run added (one assistant message per step).
    pub fn response_messages(&self) -> Vec<ModelMessage> {
        self.steps.iter().flat_map(|s| s.response_messages()).collect()
    }
}

/// Why a step stopped early.
enum Stop {
    Aborted,
    Failed(AgentError),
}

/// Runs the loop to its end. Every chunk, including the final `finish`, `error` or `abort`,
/// goes to `sink`; the outcome carries the aggregates.
// `ids` carries over to the next step once steps can continue (tools).
#[allow(unused_assignments, clippy::never_loop)]
pub async fn run(cfg: RunConfig, env: &dyn Env, sink: &dyn Sink, abort: &AbortFlag) -> RunOutcome {
    let message_id = env.new_id();
    let mut outcome = RunOutcome { message_id: message_id.clone(), ..Default::default() };
    sink.emit(Chunk::Start { message_id: message_id.clone() });
    let mut ids = IdSource::new(message_id.clone());
    let request = cfg.request.clone();
    for _ in 0..cfg.max_steps.max(1) {
        let (http, warnings) = match providers::build_request(&cfg.endpoint, &request) {
            Ok(r) => r,
            Err(e) => {
                fail(&mut outcome, sink, e);
                return outcome;
            }
        };
        sink.emit(Chunk::StepStart { message_id: message_id.clone(), request_body: http.body.clone(), warnings: warnings.clone() });
        let mut step = StepBuilder::new(ids, message_id.clone(), http.body.clone(), warnings, env.now_ms());
        let streamed = stream_step(&cfg, env, sink, abort, &http, &mut step).await;
        let mut out = Vec::new();
        step.close(&mut out, streamed.is_ok());
        for c in out {
            sink.emit(c);
        }
        let (next_ids, result) = step.into_parts();
        ids = next_ids;
        match streamed {
            Ok(()) => {}
            Err(Stop::Aborted) => {
                outcome.partial = Some(result);
                let reason = abort.reason();
                sink.emit(Chunk::Abort { reason: reason.clone() });
                outcome.aborted = Some(reason);
                return outcome;
            }
            Err(Stop::Failed(e)) => {
                outcome.partial = Some(result);
                fail(&mut outcome, sink, redact(e, cfg.endpoint.api_key.as_deref()));
                return outcome;
            }
        }
        outcome.total_usage = outcome.total_usage.add(&result.usage);
        sink.emit(Chunk::StepFinish { step: Box::new(result.clone()), is_continued: false, total_usage: outcome.total_usage });
        sink.step_finished(&result).await;
        outcome.steps.push(result);
        // Tool execution, and with it a reason to run another step, comes with the tools module.
        break;
    }
    let last = outcome.steps.last();
    sink.emit(Chunk::Finish {
        reason: outcome.finish_reason(),
        usage: last.map(|s| s.usage).unwrap_or_default(),
        total_usage: outcome.total_usage,
        model_id: last.and_then(|s| s.response.model_id.clone()),
    });
    outcome
}

/// Removes the API key from an error's text: a runtime's own error messages may quote a header
/// value, and the key must never reach chunks, errors or logs.
fn redact(e: AgentError, key: Option<&str>) -> AgentError {
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

fn fail(outcome: &mut RunOutcome, sink: &dyn Sink, e: AgentError) {
    sink.emit(Chunk::Error(e.clone()));
    outcome.error = Some(e);
}

/// Sends one step's request and streams its response into `step`, emitting chunks as they form.
async fn stream_step(
    cfg: &RunConfig,
    env: &dyn Env,
    sink: &dyn Sink,
    abort: &AbortFlag,
    http: &HttpRequest,
    step: &mut StepBuilder,
) -> Result<(), Stop> {
    let mut response = send_with_retries(cfg, env, abort, http).await?;
    let mut decoder = providers::decoder(&cfg.endpoint, cfg.include_raw);
    let mut events = Vec::new();
    let mut chunks = Vec::new();
    loop {
        let read = abort.race(response.body.read()).await.ok_or(Stop::Aborted)?;
        let bytes = read.map_err(Stop::Failed)?;
        let decoded = match &bytes {
            Some(b) => decoder.push(b, &mut events),
            None => decoder.end(&mut events),
        };
        // Events decoded before a decoding error still reach the user.
        let mut applied = Ok(());
        for ev in events.drain(..) {
            if let Err(e) = step.apply(ev, &mut chunks) {
                applied = Err(e);
                break;
            }
        }
        for c in chunks.drain(..) {
            sink.emit(c);
        }
        applied.map_err(Stop::Failed)?;
        decoded.map_err(Stop::Failed)?;
        if bytes.is_none() {
            return Ok(());
        }
    }
}

/// Sends the request, retrying network errors, 408, 409, 429 and 5xx up to `max_retries` times
/// with backoff from 1 s (factor 2), or after the server's `Retry-After` (capped at 30 s).
async fn send_with_retries(cfg: &RunConfig, env: &dyn Env, abort: &AbortFlag, http: &HttpRequest) -> Result<HttpResponse, Stop> {
    let mut attempt = 0u32;
    loop {
        let sent = abort.race(env.fetch(http.clone())).await.ok_or(Stop::Aborted)?;
        let err = match sent {
            Ok(resp) if (200..300).contains(&resp.status) => return Ok(resp),
            Ok(resp) => abort.race(status_error(resp, &cfg.endpoint.provider)).await.ok_or(Stop::Aborted)?,
            Err(e) => e,
        };
        let retryable = matches!(err, AgentError::ApiCall { retryable: true, .. });
        if !retryable || attempt >= cfg.max_retries {
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
    if let Some(v) = ms.and_then(|s| s.trim().parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0) {
        return Some(v as u64);
    }
    secs.and_then(|s| s.trim().parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0).map(|v| (v * 1000.0) as u64)
}

impl RunOutcome {
    /// Everything `getFullOutput()` resolves with, and what the aggregate promises read from.
    /// On abort, `text` also holds what the interrupted step had streamed: the user saw it.
    pub fn output_json(&self, run_id: &str) -> serde_json::Value {
        use super::chunk::{usage_json, warnings_json};
        use super::step::{messages_json, ToolCall};
        use serde_json::{json, Value};
        let mut text = self.text();
        let mut reasoning = self.reasoning_text();
        if self.aborted.is_some() {
            if let Some(p) = &self.partial {
                text.push_str(&p.text);
                reasoning.push_str(&p.reasoning);
            }
        }
        let last = self.steps.last();
        let usage = last.map(|s| s.usage).unwrap_or_default();
        let warnings: Vec<_> = self.steps.iter().flat_map(|s| s.warnings.iter().cloned()).collect();
        let messages = messages_json(&self.response_messages());
        let mut out = json!({
            "runId": run_id,
            "text": text,
            "finishReason": self.finish_reason().as_str(),
            "usage": usage_json(&usage),
            "totalUsage": usage_json(&self.total_usage),
            "steps": self.steps.iter().map(StepResult::to_json).collect::<Vec<_>>(),
            "toolCalls": self.steps.iter().flat_map(|s| s.tool_calls.iter().map(ToolCall::to_json)).collect::<Vec<_>>(),
            "toolResults": [],
            "warnings": warnings_json(&warnings),
            "response": {
                "id": last.and_then(|s| s.response.id.clone()),
                "modelId": last.and_then(|s| s.response.model_id.clone()),
                "timestamp": last.map(|s| s.response.timestamp_ms),
                "messages": messages.clone(),
            },
            "messages": messages,
        });
        if !reasoning.is_empty() {
            out["reasoningText"] = Value::String(reasoning);
        }
        if let Some(e) = &self.error {
            out["error"] = super::chunk::error_json(e);
        }
        out
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
