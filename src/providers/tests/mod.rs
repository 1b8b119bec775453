//! The tests that run every provider at once (recorded streams, splits at every byte, tool
//! arguments), the SSE framing and the JSON reader, and the fixtures and helpers the providers'
//! own tests share.

pub(crate) mod fixtures;
mod json;
mod recordings;
// proptest is a native-only dev-dependency (see Cargo.toml).
#[cfg(not(target_arch = "wasm32"))]
mod splits;
pub(crate) mod sse;
mod tool_args;
