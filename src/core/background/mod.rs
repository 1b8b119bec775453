//! Background tasks (SPEC §8): which tool calls run in the background, the manager that runs
//! them within its concurrency limits (queueing, refusing or falling back to the foreground when
//! full), their timeouts, retries and cancellation, and the lifecycle chunks it publishes to
//! listeners of an agent + thread + resource. Runtime-free: tasks are spawned and timed through
//! `TaskRuntime`, so native tests drive the manager with a fake clock.

mod config;
mod elsewhere;
mod manager;
mod placeholder;
mod task;

pub use config::{parse_background_config, parse_tool_background, Backpressure, BackgroundConfig, TaskLimits, ToolBackground};
pub use manager::{Dispatch, Dispatched, Manager, Scope, Subscription, TaskRunner, TaskRuntime};
pub use placeholder::{placeholder, replace_placeholder, MemoryTarget};
pub use task::{TaskEvent, TaskEventKind, TaskFilter, TaskRecord, TaskStatus};

#[cfg(test)]
mod tests;
