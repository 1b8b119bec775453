//! Semantic recall's vectors (SPEC §21.3): the records stores keep, the query they answer, the
//! cosine search the Rust stores run, the `semanticRecall` option and the text that is embedded.
//!
//! Vectors are stored normalised (length 1), so a search is one dot product per record. The dot
//! product runs over chunks of 8 with 8 separate f32 accumulators, the shape LLVM turns into SIMD
//! where the target has it (wasm `simd128`, x86 SSE/AVX).

use serde_json::{json, Value};

use super::StoredMessage;
use crate::core::error::AgentError;

/// One message's vector.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorRecord {
    /// The message id.
    pub id: String,
    pub thread_id: String,
    pub resource_id: String,
    pub vector: Vec<f32>,
}

/// `queryVectors({ vector, topK, resourceId?, threadId?, threshold? })`.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorQuery {
    pub vector: Vec<f32>,
    pub top_k: usize,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    /// Only records at least this similar (cosine).
    pub threshold: Option<f32>,
}

/// `deleteVectors({ threadId } | { ids })`.
#[derive(Clone, Debug, PartialEq)]
pub enum VectorTarget {
    Thread(String),
    Ids(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct VectorHit {
    pub id: String,
    pub score: f32,
}

/// `semanticRecall` (the reference's names and defaults: `topK: 4`, `messageRange: 1`, scope
/// `'resource'`).
#[derive(Clone, Debug, PartialEq)]
pub struct RecallConfig {
    pub top_k: usize,
    /// Neighbours before and after each hit.
    pub before: usize,
    pub after: usize,
    /// `true`: every thread of the resource; `false`: this thread only.
    pub resource_scope: bool,
    pub threshold: Option<f32>,
}

impl Default for RecallConfig {
    fn default() -> Self {
        RecallConfig { top_k: 4, before: 1, after: 1, resource_scope: true, threshold: None }
    }
}

impl VectorRecord {
    pub fn to_json(&self) -> Value {
        json!({ "id": self.id, "threadId": self.thread_id, "resourceId": self.resource_id, "vector": self.vector })
    }

    /// A record as a storage object gave it; `what` names the caller for errors.
    pub fn from_json(v: &Value, what: &str) -> Result<VectorRecord, AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = s("id").ok_or_else(|| AgentError::storage(format!("{what} returned a vector record without a string id")))?;
        let vector = floats(v.get("vector").unwrap_or(&Value::Null)).ok_or_else(|| AgentError::storage(format!("{what} returned vector record '{id}' without a numeric vector")))?;
        Ok(VectorRecord { thread_id: s("threadId").unwrap_or_default(), resource_id: s("resourceId").unwrap_or_default(), vector, id })
    }
}

impl VectorQuery {
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "vector": self.vector, "topK": self.top_k });
        if let Some(t) = &self.thread_id {
            v["threadId"] = t.as_str().into();
        }
        if let Some(r) = &self.resource_id {
            v["resourceId"] = r.as_str().into();
        }
        if let Some(t) = self.threshold {
            v["threshold"] = json!(t);
        }
        v
    }

    fn admits(&self, r: &VectorRecord) -> bool {
        self.thread_id.as_ref().is_none_or(|t| *t == r.thread_id) && self.resource_id.as_ref().is_none_or(|x| *x == r.resource_id)
    }
}

impl VectorTarget {
    pub fn to_json(&self) -> Value {
        match self {
            VectorTarget::Thread(t) => json!({ "threadId": t }),
            VectorTarget::Ids(ids) => json!({ "ids": ids }),
        }
    }

    pub fn matches(&self, r: &VectorRecord) -> bool {
        match self {
            VectorTarget::Thread(t) => r.thread_id == *t,
            VectorTarget::Ids(ids) => ids.contains(&r.id),
        }
    }
}

/// An array of numbers as f32s; `None` when it is not one.
pub fn floats(v: &Value) -> Option<Vec<f32>> {
    v.as_array()?.iter().map(|x| x.as_f64().map(|f| f as f32)).collect()
}

/// `v` scaled to length 1 (a zero vector stays zero).
pub fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = dot(&v, &v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        let inv = 1.0 / norm;
        v.iter_mut().for_each(|x| *x *= inv);
    }
    v
}

/// The dot product over the common length, in chunks of 8 with one accumulator per lane.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    let mut acc = [0f32; 8];
    for (x, y) in ca.zip(cb) {
        for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The best `k` (score, id) pairs offered, best first; ties by id. Scores under the threshold
/// (and NaN) are dropped. Shared by every store that searches in Rust.
pub struct TopK {
    k: usize,
    threshold: Option<f32>,
    best: Vec<(f32, String)>,
}

impl TopK {
    pub fn new(k: usize, threshold: Option<f32>) -> TopK {
        TopK { k, threshold, best: Vec::with_capacity(k.min(1024) + 1) }
    }

    /// Whether a record with this score would be kept (checked before its id is copied).
    pub fn wants(&self, score: f32) -> bool {
        !(self.k == 0 || score.is_nan() || self.threshold.is_some_and(|t| score < t) || self.best.len() == self.k && self.best.last().is_some_and(|(s, _)| score <= *s))
    }

    pub fn offer(&mut self, score: f32, id: &str) {
        if !self.wants(score) {
            return;
        }
        let at = self.best.partition_point(|(s, x)| *s > score || (*s == score && x.as_str() < id));
        self.best.insert(at, (score, id.to_string()));
        self.best.truncate(self.k);
    }

    pub fn into_hits(self) -> Vec<VectorHit> {
        self.best.into_iter().map(|(score, id)| VectorHit { id, score }).collect()
    }
}

/// The `top_k` records most similar to the query (normalised records, so cosine is the dot
/// product), best first; ties by id. The query vector is normalised here.
pub fn search<'a>(records: impl IntoIterator<Item = &'a VectorRecord>, q: &VectorQuery) -> Vec<VectorHit> {
    let query = normalized(q.vector.clone());
    let mut top = TopK::new(q.top_k, q.threshold);
    for r in records {
        if q.admits(r) && r.vector.len() == query.len() {
            top.offer(dot(&query, &r.vector), &r.id);
        }
    }
    top.into_hits()
}

/// The text of a message that is embedded: its text parts, for user and assistant messages.
pub fn text_to_embed(m: &StoredMessage) -> Option<String> {
    if m.role != "user" && m.role != "assistant" {
        return None;
    }
    let texts: Vec<&str> = m.parts.iter().filter(|p| p["type"] == "text").filter_map(|p| p["text"].as_str()).filter(|t| !t.trim().is_empty()).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// Reads `semanticRecall` (`true`, `false`, or `{ topK, messageRange, scope, threshold }`).
pub fn parse_recall(v: &Value, field: &str) -> Result<Option<RecallConfig>, AgentError> {
    use crate::core::input::{join, kind};
    let o = match v {
        Value::Null | Value::Bool(false) => return Ok(None),
        Value::Bool(true) => return Ok(Some(RecallConfig::default())),
        Value::Object(o) => o,
        other => return Err(AgentError::invalid(field, format!("expected true, false or {{ topK, messageRange, scope, threshold }}, got {}", kind(other)))),
    };
    let mut c = RecallConfig::default();
    let count = |v: &Value, path: String| v.as_u64().map(|n| n as usize).ok_or_else(|| AgentError::invalid(path, format!("expected a non-negative integer, got {}", kind(v))));
    if let Some(v) = o.get("topK").filter(|v| !v.is_null()) {
        c.top_k = count(v, join(field, "topK"))?;
    }
    match o.get("messageRange") {
        None | Some(Value::Null) => {}
        Some(n @ Value::Number(_)) => {
            let n = count(n, join(field, "messageRange"))?;
            (c.before, c.after) = (n, n);
        }
        Some(Value::Object(r)) => {
            let path = join(field, "messageRange");
            let side = |k: &str| r.get(k).filter(|v| !v.is_null()).map(|v| count(v, join(&path, k))).transpose();
            c.before = side("before")?.unwrap_or(0);
            c.after = side("after")?.unwrap_or(0);
        }
        Some(other) => return Err(AgentError::invalid(join(field, "messageRange"), format!("expected a number or {{ before, after }}, got {}", kind(other)))),
    }
    match o.get("scope") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "resource" => c.resource_scope = true,
        Some(Value::String(s)) if s == "thread" => c.resource_scope = false,
        Some(other) => return Err(AgentError::invalid(join(field, "scope"), format!("expected 'resource' or 'thread', got {}", other))),
    }
    match o.get("threshold") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_f64().is_some_and(|t| (-1.0..=1.0).contains(&t)) => c.threshold = n.as_f64().map(|t| t as f32),
        Some(other) => return Err(AgentError::invalid(join(field, "threshold"), format!("expected a number from -1 to 1 (cosine similarity), got {other}"))),
    }
    Ok(Some(c))
}

#[cfg(test)]
#[path = "vectors_tests.rs"]
mod tests;
