//! The tests that run every provider at once (recorded streams, splits at every byte, tool
//! arguments), the SSE framing and the JSON reader, and the fixtures and helpers the providers'
//! own tests share.

// The tests across providers need every API built in (the default features).
#![cfg_attr(not(all(feature = "chat", feature = "responses", feature = "anthropic", feature = "google")), allow(dead_code, unused_imports))]

pub(crate) mod fixtures;
#[cfg(feature = "chat")]
mod json;
#[cfg(all(feature = "chat", feature = "responses", feature = "anthropic", feature = "google"))]
mod recordings;
// proptest is a native-only dev-dependency (see Cargo.toml).
#[cfg(all(not(target_arch = "wasm32"), feature = "chat", feature = "responses", feature = "anthropic", feature = "google"))]
mod splits;
pub(crate) mod sse;
#[cfg(all(feature = "chat", feature = "responses", feature = "anthropic", feature = "google"))]
mod structured;
#[cfg(all(feature = "chat", feature = "responses", feature = "anthropic", feature = "google"))]
mod tool_args;
