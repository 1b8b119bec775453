//! The heart of the agent, free of JavaScript types so it runs and is tested natively.

pub mod error;
pub mod input;
pub mod model;
