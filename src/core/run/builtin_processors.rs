//! The built-in processors that need no model (SPEC §13.6), in Rust because they sit on the
//! per-chunk path: `BatchPartsProcessor` and `TokenLimiterProcessor`. Each instance lives for one
//! run (its batch and its count are that run's); the bindings make one per run from the options.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use super::processors::{Halt, Phase, Processor, ProcessorCx, Reply};
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;

/// `BatchPartsProcessor` options.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOptions {
    /// Text deltas per batch (`batchSize`, alias `maxBatchSize`; default 5).
    pub batch_size: usize,
    /// Flush a batch once its first delta waited this long (checked as parts arrive).
    pub max_wait_ms: Option<f64>,
    /// Flush before any other chunk (default); when false, other chunks wait in the batch behind
    /// the text, in order, until it is full or the step ends.
    pub emit_on_non_text: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions { batch_size: 5, max_wait_ms: None, emit_on_non_text: true }
    }
}

/// Joins consecutive `text-delta`s of one block into one; never drops or reorders a chunk.
pub struct BatchParts {
    opts: BatchOptions,
    clock: Rc<dyn Fn() -> f64>,
    /// The held chunks, in order; the count of text deltas among them; when the first came.
    held: RefCell<(Vec<Chunk>, usize, f64)>,
}

impl BatchParts {
    pub fn new(opts: BatchOptions, clock: Rc<dyn Fn() -> f64>) -> Self {
        BatchParts { opts, clock, held: RefCell::new((Vec::new(), 0, 0.0)) }
    }

    /// Everything held, consecutive deltas of one block joined.
    fn flush(&self, out: &mut Vec<Chunk>) {
        let (held, count, _) = &mut *self.held.borrow_mut();
        *count = 0;
        for c in held.drain(..) {
            match (out.last_mut(), c) {
                (Some(Chunk::TextDelta { id: last, text: joined }), Chunk::TextDelta { id, text }) if *last == id => {
                    joined.push_str(&text)
                }
                (_, c) => out.push(c),
            }
        }
    }

    fn batch(&self, chunk: Chunk) -> Vec<Chunk> {
        let mut out = Vec::new();
        let now = (self.clock)();
        let is_text = matches!(chunk, Chunk::TextDelta { .. });
        let ends_step = matches!(chunk, Chunk::StepFinish { .. });
        // A delta of another block, or a chunk that must not wait, releases what is held first.
        let other_block = match (&chunk, self.held.borrow().0.last()) {
            (Chunk::TextDelta { id, .. }, Some(Chunk::TextDelta { id: last, .. })) => id != last,
            _ => false,
        };
        if other_block || (!is_text && (self.opts.emit_on_non_text || ends_step)) {
            self.flush(&mut out);
            if !is_text {
                out.push(chunk);
                return out;
            }
        }
        let full = {
            let (held, count, since) = &mut *self.held.borrow_mut();
            if held.is_empty() {
                *since = now;
            }
            held.push(chunk);
            if is_text {
                *count += 1;
            }
            let waited = self.opts.max_wait_ms.is_some_and(|w| now - *since >= w);
            *count >= self.opts.batch_size.max(1) || waited
        };
        if full {
            self.flush(&mut out);
        }
        out
    }
}

impl Processor for BatchParts {
    fn id(&self) -> &str {
        "batch-parts"
    }
    fn has(&self, phase: Phase) -> bool {
        phase == Phase::OutputStream
    }
    fn call<'a>(&'a self, _phase: Phase, _args: Value, _cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Reply, Halt>> {
        Box::pin(async { Ok(Reply::default()) })
    }
    fn stream<'a>(&'a self, chunk: Chunk, _cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Vec<Chunk>, Halt>> {
        let out = self.batch(chunk);
        Box::pin(async move { Ok(out) })
    }
}

/// `TokenLimiterProcessor` options.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenLimitOptions {
    pub limit: u64,
    /// `'abort'` stops the run when the limit is passed; `'truncate'` (default) cuts the text.
    pub abort: bool,
    /// `'part'` checks each delta alone; `'cumulative'` (default) the run's text so far.
    pub per_part: bool,
}

/// Estimated tokens of a text: about four characters each.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Tokens of a file or image part, whatever its size.
const FILE_TOKENS: u64 = 85;

/// Estimated tokens of a stored or model message (its text parts, plus a flat count per file).
fn message_tokens(m: &Value) -> u64 {
    let content = m.get("content");
    let parts = match content {
        Some(Value::String(s)) => return estimate_tokens(s) + 4,
        Some(Value::Object(c)) => c.get("parts"),
        Some(Value::Array(_)) => content,
        _ => None,
    };
    let mut n = 4;
    for p in parts.and_then(Value::as_array).into_iter().flatten() {
        match p.get("type").and_then(Value::as_str) {
            Some("text") | Some("reasoning") => {
                n += estimate_tokens(p.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("file") | Some("image") => n += FILE_TOKENS,
            _ => n += estimate_tokens(&p.to_string()),
        }
    }
    n
}

/// Keeps a run within a token budget: trims the oldest messages of the input to fit, and cuts
/// (or aborts) the reply once its text passes the limit.
pub struct TokenLimiter {
    opts: TokenLimitOptions,
    used: std::cell::Cell<u64>,
}

impl TokenLimiter {
    pub fn new(opts: TokenLimitOptions) -> Self {
        TokenLimiter { opts, used: std::cell::Cell::new(0) }
    }

    /// The newest messages that fit the limit (the newest one always stays).
    fn trim(&self, messages: &[Value]) -> Vec<Value> {
        let mut total = 0;
        let mut keep = 0;
        for m in messages.iter().rev() {
            total += message_tokens(m);
            if keep > 0 && total > self.opts.limit {
                break;
            }
            keep += 1;
        }
        messages[messages.len() - keep..].to_vec()
    }

    fn limit(&self, chunk: Chunk) -> Result<Vec<Chunk>, Halt> {
        let Chunk::TextDelta { id, text } = chunk else { return Ok(vec![chunk]) };
        let tokens = estimate_tokens(&text);
        let before = if self.opts.per_part { 0 } else { self.used.get() };
        if !self.opts.per_part {
            self.used.set(before + tokens);
        }
        if before + tokens <= self.opts.limit {
            return Ok(vec![Chunk::TextDelta { id, text }]);
        }
        if self.opts.abort {
            return Err(Halt::Abort {
                reason: format!("Token limit of {} exceeded", self.opts.limit),
                retry: false,
                metadata: None,
            });
        }
        let room = self.opts.limit.saturating_sub(before) as usize * 4;
        let cut: String = text.chars().take(room).collect();
        Ok(if cut.is_empty() { Vec::new() } else { vec![Chunk::TextDelta { id, text: cut }] })
    }
}

impl Processor for TokenLimiter {
    fn id(&self) -> &str {
        "token-limiter"
    }
    fn has(&self, phase: Phase) -> bool {
        matches!(phase, Phase::Input | Phase::OutputStream)
    }
    fn call<'a>(&'a self, phase: Phase, args: Value, _cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Reply, Halt>> {
        let value = match (phase, args.get("messages")) {
            (Phase::Input, Some(Value::Array(messages))) => Some(Value::Array(self.trim(messages))),
            _ => None,
        };
        Box::pin(async move { Ok(Reply { value, custom: Vec::new(), step: Default::default() }) })
    }
    fn stream<'a>(&'a self, chunk: Chunk, _cx: ProcessorCx<'a>) -> LocalFuture<'a, Result<Vec<Chunk>, Halt>> {
        let out = self.limit(chunk);
        Box::pin(async move { out })
    }
}
