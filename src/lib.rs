//! wasm-agent: an AI agent runtime for browsers, Node and Workers-like runtimes.
//!
//! Module map (arrows point inward: `core` knows nothing of the others):
//! - `core`: messages, chunks, the step loop, retries. Pure Rust, tested with `cargo test`.
//! - `providers`: request builders and stream decoders per model API. Pure Rust.
//! - `platform`: fetch, timers, clock, ids from the JavaScript global object (wasm32 only).
//! - `bindings`: the JavaScript classes and option parsing (wasm32 only).

// A build that leaves features out (`Cargo.toml`, `core::features`) leaves their helpers unused.
#![cfg_attr(
    not(all(feature = "structured", feature = "processors", feature = "websocket", feature = "ai-sdk-model")),
    allow(dead_code, unused_imports, unused_variables, unused_mut, unreachable_code)
)]

pub mod core;
pub mod providers;
#[cfg(test)]
mod testing;

#[cfg(target_arch = "wasm32")]
pub mod platform;
#[cfg(target_arch = "wasm32")]
pub mod bindings;

/// Runs once when the module is instantiated: a panic then says what and where on the console
/// before the instance traps (the release build aborts on panic).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen(start, skip_typescript)]
pub fn start() {
    bindings::report::install_panic_hook();
}
