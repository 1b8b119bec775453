//! How the host shapes a run's loop: `prepareStep`, `stopWhen`, `onIterationComplete`,
//! `onTitleGenerated`, besides the tools (`ToolHost`). Every hook has a default that changes
//! nothing, so a host implements only what it offers.

use std::rc::Rc;

use serde_json::{Map, Value};

use super::env::LocalFuture;
use super::error::AgentError;
use super::model::{ModelSettings, ToolChoice};
use super::model_api::ModelApi;
use super::run::structured::StructuredOutput;
use super::step::StepResult;
use super::tools::{ToolCtx, ToolDef, ToolHost};

/// What `prepareStep` (or `processInputStep`) may change for one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepOverrides {
    pub settings: Option<ModelSettings>,
    pub active_tools: Option<Vec<String>>,
    pub tool_choice: Option<ToolChoice>,
    /// Replaces the system messages at the head of the prompt.
    pub system: Option<Vec<String>>,
    /// Another model for this step's call.
    pub model: Option<StepModel>,
    /// Tools that replace the run's for this step: the ones offered, and the ones its calls run.
    pub tools: Option<StepTools>,
    /// This step's request's `providerOptions` (its provider's, merged over the call's).
    pub provider_options: Option<Map<String, Value>>,
    /// Structured output asked of this step's request in place of the run's.
    pub structured: Option<Shared<StructuredOutput>>,
}

/// A value the host made, compared by identity (it cannot be compared otherwise).
pub struct Shared<T: ?Sized>(pub Rc<T>);

impl<T: ?Sized> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T: ?Sized> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl<T: ?Sized> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared(..)")
    }
}

/// A step's own model: the API, its model name (the request's `model`) and its provider (whose
/// `providerOptions` the request gets).
#[derive(Clone, Debug, PartialEq)]
pub struct StepModel {
    pub api: Shared<dyn ModelApi>,
    pub name: String,
    pub provider: String,
}

/// A step's own tools and the host that runs them (the run's hooks still see each call).
#[derive(Clone, Debug, PartialEq)]
pub struct StepTools {
    pub defs: Vec<ToolDef>,
    pub host: Shared<dyn ToolHost>,
}

/// What `onIterationComplete` decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IterationDecision {
    pub stop: bool,
    /// Added to the conversation as a user message, and the loop goes on for it.
    pub feedback: Option<String>,
}

/// A built-in stop condition (`stepCountIs`, `hasToolCall`); others are asked of the host.
#[derive(Clone, Debug, PartialEq)]
pub enum StopCondition {
    StepCount(usize),
    HasToolCall(String),
    /// The host's predicate number `n` (`Hooks::stop_when`).
    Custom(usize),
}

/// The loop's callbacks into its host, besides the tools.
pub trait Hooks: ToolHost {
    /// `prepareStep`, before each step (numbered from 0).
    fn prepare_step<'a>(&'a self, _step: usize, _steps: &'a [StepResult]) -> LocalFuture<'a, Result<Option<StepOverrides>, AgentError>> {
        Box::pin(async { Ok(None) })
    }
    /// The custom stop condition `n` of `stopWhen`, over the steps so far.
    fn stop_when<'a>(&'a self, _n: usize, _steps: &'a [StepResult]) -> LocalFuture<'a, bool> {
        Box::pin(async { false })
    }
    /// `onTitleGenerated`, after a new thread got its title.
    fn title_generated<'a>(&'a self, _thread_id: &'a str, _title: &'a str) -> LocalFuture<'a, ()> {
        Box::pin(async {})
    }
    /// `onIterationComplete`, after each step; `is_final` when the loop would stop on its own.
    fn iteration_complete<'a>(&'a self, _steps: &'a [StepResult], _is_final: bool) -> LocalFuture<'a, IterationDecision> {
        Box::pin(async { IterationDecision::default() })
    }
}

/// A host without tools or hooks.
pub struct NoHooks;

impl ToolHost for NoHooks {
    fn execute<'a>(&'a self, _ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async { Err("no tools here".into()) })
    }
}

impl Hooks for NoHooks {}

