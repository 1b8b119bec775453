//! Chunks to JavaScript objects. Each chunk is written as JSON text and parsed once by
//! `JSON.parse`: one crossing of the boundary per chunk instead of one per property, and the
//! text deltas (the hot path) are written without building a JSON tree first.

use std::cell::RefCell;
use std::fmt::Write;

use js_sys::JSON;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::share::from_json_shared;
use crate::core::chunk::{push_json_str, Chunk};

/// The most the reused buffer keeps between chunks.
const KEEP_BUFFER_BYTES: usize = 64 * 1024;

/// Writes chunks for one run; reuses its buffer between chunks.
pub struct ChunkWriter {
    /// `,"runId":"…","from":"AGENT","payload":` — the same for every chunk of the run (the
    /// second one with `from: 'USER'`, for tool output).
    envelope: String,
    envelope_user: String,
    run_id: String,
    buf: RefCell<String>,
}

impl ChunkWriter {
    pub fn new(run_id: &str) -> Self {
        let mut envelope = String::from(",\"runId\":");
        push_json_str(&mut envelope, run_id);
        let envelope_user = format!("{envelope},\"from\":\"USER\",\"payload\":");
        envelope.push_str(",\"from\":\"AGENT\",\"payload\":");
        ChunkWriter { envelope, envelope_user, run_id: run_id.to_owned(), buf: RefCell::new(String::with_capacity(256)) }
    }

    /// The chunks that are built as JSON values (not written as text): data chunks and
    /// `step-finish`.
    fn as_value(&self, chunk: &Chunk, seq: Option<u64>) -> Option<Value> {
        let mut v = match chunk {
            Chunk::Data { kind, .. } => serde_json::json!({ "type": kind }),
            Chunk::StepFinish { .. } => serde_json::json!({ "type": chunk.type_name() }),
            _ => return None,
        };
        if let Some(n) = seq {
            v["seq"] = n.into();
        }
        match chunk {
            // Custom data chunks travel as the tool wrote them: `{ type: 'data-…', seq, data, id?, transient? }`.
            Chunk::Data { data, id, transient, .. } => {
                v["data"] = data.clone();
                if let Some(id) = id {
                    v["id"] = Value::String(id.clone());
                }
                if *transient {
                    v["transient"] = Value::Bool(true);
                }
            }
            _ => {
                v["runId"] = self.run_id.as_str().into();
                v["from"] = chunk.from().into();
                v["payload"] = chunk.payload();
            }
        }
        Some(v)
    }

    /// The chunk's object; `seq` is its number in the stream (SPEC §19.8), `None` where it has
    /// none yet (a processor's `part`).
    pub fn to_js(&self, chunk: &Chunk, seq: Option<u64>) -> JsValue {
        if let Chunk::Logged(v) = chunk {
            return JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL);
        }
        if let Some(v) = self.as_value(chunk, seq) {
            // A step holds its text: the long strings go across once (`share`).
            return if matches!(chunk, Chunk::StepFinish { .. }) { from_json_shared(v) } else { JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL) };
        }
        self.with_text(chunk, seq, |text| JSON::parse(text).unwrap_or(JsValue::NULL))
    }

    /// The chunk's object as JSON, for a chunk log (SPEC §19.8).
    pub fn to_value(&self, chunk: &Chunk, seq: u64) -> Value {
        if let Chunk::Logged(v) = chunk {
            return Value::clone(v);
        }
        if let Some(v) = self.as_value(chunk, Some(seq)) {
            return v;
        }
        self.with_text(chunk, Some(seq), |text| serde_json::from_str(text).unwrap_or(Value::Null))
    }

    /// Writes the chunk's JSON text into the reused buffer and hands it to `f`.
    fn with_text<R>(&self, chunk: &Chunk, seq: Option<u64>, f: impl FnOnce(&str) -> R) -> R {
        let mut buf = self.buf.borrow_mut();
        buf.clear();
        buf.push_str("{\"type\":\"");
        buf.push_str(chunk.type_name());
        buf.push('"');
        if let Some(n) = seq {
            let _ = write!(buf, ",\"seq\":{n}");
        }
        buf.push_str(if chunk.from() == "USER" { &self.envelope_user } else { &self.envelope });
        if matches!(chunk, Chunk::Object { .. } | Chunk::ObjectResult { .. }) {
            // `{ type, runId, from, object, metadata? }`: the envelope without `payload`.
            let envelope = &self.envelope;
            let at = buf.len() - envelope.len();
            buf.truncate(at);
            buf.push_str(&envelope[..envelope.len() - "\"payload\":".len()]);
            match chunk {
                // The hot path of structured output: the partial written once, without a copy.
                Chunk::Object { object } => {
                    buf.push_str("\"object\":");
                    buf.push_str(&object.to_string());
                    buf.push('}');
                }
                other => buf.push_str(&Value::Object(other.top_level().unwrap_or_default()).to_string()[1..]),
            }
            return f(&buf);
        }
        match chunk {
            Chunk::TextDelta { id, text } | Chunk::ReasoningDelta { id, text } => {
                buf.push_str("{\"id\":");
                push_json_str(&mut buf, id);
                buf.push_str(",\"text\":");
                push_json_str(&mut buf, text);
                buf.push('}');
            }
            // The decoder only reports events it parsed as JSON.
            Chunk::Raw(raw) => buf.push_str(raw),
            // Written into the buffer, not through a string of its own: a step's payload holds
            // its text.
            other => {
                let _ = write!(buf, "{}", other.payload());
            }
        }
        buf.push('}');
        // The text is valid JSON by construction.
        let out = f(&buf);
        // A long step's payload must not stay allocated for the rest of the run.
        if buf.capacity() > KEEP_BUFFER_BYTES {
            *buf = String::with_capacity(256);
        }
        out
    }
}
