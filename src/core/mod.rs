//! The heart of the agent, free of JavaScript types so it runs and is tested natively.

pub mod abort;
pub mod background;
pub mod ai_sdk;
pub mod backlog;
pub mod base64;
pub mod chunk;
pub mod env;
pub mod error;
pub mod hooks;
pub mod input;
pub mod json;
pub mod json_stream;
pub mod memory;
pub mod model;
pub mod model_api;
pub mod options;
pub mod retry;
pub mod run;
pub mod schema;
pub mod step;
pub mod tools;
pub mod transport;
pub mod unsupported;
pub mod until_idle;
pub mod wire;
