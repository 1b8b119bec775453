//! Tracing (SPEC §16–17): the spans of a run, their ids and sampling, what leaves the run
//! (redacted, §16.6) and the OTLP/HTTP JSON they are posted as (§16.5). Pure: the bindings hand
//! the events to the user's exporters.

pub mod otlp;
pub mod redact;
pub mod tracer;

use serde_json::{Map, Value};

pub use tracer::{SpanOpts, TraceRun, Tracer, TracingSink};

/// An event an exporter gets (`type` of §16.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Started,
    Updated,
    Ended,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Started => "span_started",
            EventKind::Updated => "span_updated",
            EventKind::Ended => "span_ended",
        }
    }
}

/// Where the run's span events go: the bindings' exporters. Never called while the tracer holds
/// a borrow, so it may run user code.
pub trait SpanExporter {
    fn export(&self, kind: EventKind, span: &Span);
    /// A score of the run (`{ type: 'score', score }`, SPEC §14.2), for exporters that take them.
    fn score(&self, _event: &Value) {}
}

/// `errorInfo` of a span.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorInfo {
    pub name: String,
    pub message: String,
    pub code: Option<String>,
}

/// One span, as exported (`exportedSpan` of §16.1). Times in milliseconds since the epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Span {
    pub id: String,
    pub trace_id: String,
    pub parent_span_id: Option<String>,
    pub external_parent_span_id: Option<String>,
    pub name: String,
    pub kind: String,
    /// `entityType`, `entityId`, `entityName`.
    pub entity: Option<(String, String, String)>,
    pub start_ms: f64,
    pub end_ms: Option<f64>,
    pub attributes: Map<String, Value>,
    pub metadata: Map<String, Value>,
    pub tags: Option<Vec<String>>,
    pub input: Option<Value>,
    pub output: Option<Value>,
    pub error_info: Option<ErrorInfo>,
    pub request_context: Option<Value>,
    pub is_event: bool,
    pub is_root: bool,
}

impl Span {
    /// `exportedSpan` as JSON; `startTime` / `endTime` are milliseconds (the bindings make Dates).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.into(), v);
        };
        put("id", self.id.clone().into());
        put("traceId", self.trace_id.clone().into());
        if let Some(p) = &self.parent_span_id {
            put("parentSpanId", p.clone().into());
        }
        if let Some(p) = &self.external_parent_span_id {
            put("externalParentSpanId", p.clone().into());
        }
        put("name", self.name.clone().into());
        put("type", self.kind.clone().into());
        if let Some((t, id, name)) = &self.entity {
            put("entityType", t.clone().into());
            put("entityId", id.clone().into());
            put("entityName", name.clone().into());
        }
        put("startTime", self.start_ms.into());
        if let Some(e) = self.end_ms {
            put("endTime", e.into());
        }
        put("attributes", Value::Object(self.attributes.clone()));
        put("metadata", Value::Object(self.metadata.clone()));
        if let Some(t) = &self.tags {
            put("tags", t.clone().into());
        }
        if let Some(v) = &self.input {
            put("input", v.clone());
        }
        if let Some(v) = &self.output {
            put("output", v.clone());
        }
        if let Some(e) = &self.error_info {
            let mut info = Map::new();
            info.insert("name".into(), e.name.clone().into());
            info.insert("message".into(), e.message.clone().into());
            if let Some(c) = &e.code {
                info.insert("code".into(), c.clone().into());
            }
            put("errorInfo", Value::Object(info));
        }
        if let Some(rc) = &self.request_context {
            put("requestContext", rc.clone());
        }
        put("isEvent", self.is_event.into());
        put("isRootSpan", self.is_root.into());
        Value::Object(m)
    }

    /// A span from `exportedSpan` JSON (times as milliseconds), as an exporter got it.
    pub fn from_json(v: &Value) -> Span {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let obj = |k: &str| v.get(k).and_then(Value::as_object).cloned().unwrap_or_default();
        let entity = s("entityType").map(|t| (t, s("entityId").unwrap_or_default(), s("entityName").unwrap_or_default()));
        let error_info = v.get("errorInfo").filter(|e| e.is_object()).map(|e| ErrorInfo {
            name: e.get("name").and_then(Value::as_str).unwrap_or("Error").into(),
            message: e.get("message").and_then(Value::as_str).unwrap_or_default().into(),
            code: e.get("code").and_then(Value::as_str).map(str::to_owned),
        });
        Span {
            id: s("id").unwrap_or_default(),
            trace_id: s("traceId").unwrap_or_default(),
            parent_span_id: s("parentSpanId"),
            external_parent_span_id: s("externalParentSpanId"),
            name: s("name").unwrap_or_default(),
            kind: s("type").unwrap_or_else(|| "generic".into()),
            entity,
            start_ms: v.get("startTime").and_then(Value::as_f64).unwrap_or(0.0),
            end_ms: v.get("endTime").and_then(Value::as_f64),
            attributes: obj("attributes"),
            metadata: obj("metadata"),
            tags: v.get("tags").and_then(Value::as_array).map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect()),
            input: v.get("input").filter(|x| !x.is_null()).cloned(),
            output: v.get("output").filter(|x| !x.is_null()).cloned(),
            error_info,
            request_context: v.get("requestContext").cloned(),
            is_event: v.get("isEvent").and_then(Value::as_bool).unwrap_or(false),
            is_root: v.get("isRootSpan").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

/// `observability.sampling`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampling {
    Always,
    Never,
    Ratio(f64),
}

impl Sampling {
    /// Whether a run is traced, given a uniform random number in [0, 1).
    pub fn keeps(self, random: f64) -> bool {
        match self {
            Sampling::Always => true,
            Sampling::Never => false,
            Sampling::Ratio(p) => random < p,
        }
    }

    /// `{ type: 'always' | 'never' | 'ratio', probability }`; `None`: always.
    pub fn parse(v: &Value, field: &str) -> Result<Sampling, String> {
        if v.is_null() {
            return Ok(Sampling::Always);
        }
        let kind = v.get("type").and_then(Value::as_str);
        match kind {
            Some("always") => Ok(Sampling::Always),
            Some("never") => Ok(Sampling::Never),
            Some("ratio") => match v.get("probability").and_then(Value::as_f64) {
                Some(p) if (0.0..=1.0).contains(&p) => Ok(Sampling::Ratio(p)),
                _ => Err(format!("{field}.probability: expected a number from 0 to 1")),
            },
            _ => Err(format!("{field}.type: expected 'always', 'never' or 'ratio'")),
        }
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from_digit((b >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
    }
    s
}

/// A fresh id of `n` random bytes (never all zero, which OTLP reads as "no id").
pub fn new_id(n: usize, random: &mut dyn FnMut(&mut [u8])) -> String {
    let mut b = vec![0u8; n];
    random(&mut b);
    if b.iter().all(|x| *x == 0) {
        b[n - 1] = 1;
    }
    hex(&b)
}

/// A `traceId` (`width` 32) or `parentSpanId` (16) a caller gave: 1–`width` hex characters,
/// left-padded with `0`, lower-cased.
pub fn padded_id(v: &str, width: usize) -> Option<String> {
    if v.is_empty() || v.len() > width || !v.bytes().all(|b| b.is_ascii_hexdigit()) || v.bytes().all(|b| b == b'0') {
        return None;
    }
    Some(format!("{:0>width$}", v.to_ascii_lowercase()))
}

/// Reads the dot path `path` (`user.id`) of `v`.
pub fn at_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, k| cur.get(k))
}

/// Sets `value` at the dot path `path` in `m`, making the objects on the way.
pub fn set_path(m: &mut Map<String, Value>, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut cur = m;
    while let Some(k) = parts.next() {
        if parts.peek().is_none() {
            cur.insert(k.into(), value);
            return;
        }
        let next = cur.entry(k.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        let Value::Object(o) = next else { return };
        cur = o;
    }
}

#[cfg(test)]
pub(crate) mod tests;
