//! Google Gemini (`POST {base}/models/{model}:streamGenerateContent?alt=sse`): the request builder
//! and the stream decoder.
//!
//! Pure translation between `core::model` and the wire format; it never does I/O and never sees
//! JavaScript. As in the Chat decoder, each event is read with the `json` pull reader into a small
//! struct that borrows from the event text, and only the strings handed out are allocated.

mod decode;
mod request;
mod schema;
#[cfg(test)]
mod tests_request;
#[cfg(test)]
mod tests_stream;

pub use decode::GoogleDecoder;
pub use request::build_request;

use serde_json::Value;

/// `{ key: value, … }`. One out-of-line function builds every object of the body: `json!` expands
/// inline at each use, which cost 1.2 KB more wasm (after wasm-opt) in this module.
fn object(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(key, value)| (key.to_string(), value)).collect())
}
