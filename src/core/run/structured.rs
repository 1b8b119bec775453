//! Structured output in the loop (SPEC §12): the schema on every step's request, the partial
//! object while the text streams, and the final step's text validated into `object-result`, or
//! handled by the error strategy.
//!
//! The schema arrives as JSON Schema; a Standard Schema (zod) validates itself through
//! [`ObjectValidator`], which the bindings implement: the core never sees JavaScript.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::structured_model::structuring_note;
pub use super::structured_model::StructuringModel;
use super::Sink;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::input::{join, kind, opt_str};
use crate::core::json_stream::JsonStream;
use crate::core::model::{FinishReason, ModelMessage, ModelRequest, ResponseFormat, Usage};
use crate::core::model_api::CallCx;
use crate::core::step::StepResult;
use crate::core::structured_schema::{
    has_optional_fields, injection_text, is_strict_compatible, remove_nulls, strict_compatible, unwrap, unwrap_partial,
    wrap, RootShape,
};

/// `errorStrategy`.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorStrategy {
    Strict,
    Warn,
    Fallback(Value),
}

/// `jsonPromptInjection`: how the schema reaches the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injection {
    /// The provider's JSON-schema mode, in words where it has none (`false`, `'auto'`).
    Native,
    /// Appended to the first system message (`true`, `'system'`).
    System,
    /// Appended to the latest user message of each request (`'inline'`).
    Inline,
}

/// Validates a value with the caller's own schema (a Standard Schema's `~standard.validate`):
/// the value to deliver (transforms and defaults applied), or one `<path|root>: <problem>` per issue.
pub trait ObjectValidator {
    fn validate<'a>(&'a self, value: &'a Value) -> LocalFuture<'a, Result<Value, Vec<String>>>;
}

/// The data options of `structuredOutput`, besides the schema (which the bindings convert).
#[derive(Clone, Debug, PartialEq)]
pub struct StructuredOptions {
    pub strategy: ErrorStrategy,
    pub instructions: Option<String>,
    pub injection: Injection,
    /// Merged over the call's `providerOptions` on every step.
    pub provider_options: Option<Map<String, Value>>,
}

/// Reads `errorStrategy`, `fallbackValue`, `instructions`, `jsonPromptInjection` and
/// `providerOptions` of `v` (the `structuredOutput` object, at `field`).
pub fn parse_options(v: &Value, field: &str) -> Result<StructuredOptions, AgentError> {
    let strategy = match opt_str(v, "errorStrategy", field)? {
        None | Some("strict") => ErrorStrategy::Strict,
        Some("warn") => ErrorStrategy::Warn,
        Some("fallback") => match v.get("fallbackValue") {
            None => {
                return Err(AgentError::invalid(
                    join(field, "fallbackValue"),
                    "is required with errorStrategy 'fallback': the value to deliver when the output fails",
                ))
            }
            Some(f) => ErrorStrategy::Fallback(f.clone()),
        },
        Some(other) => {
            return Err(AgentError::invalid(
                join(field, "errorStrategy"),
                format!("expected 'strict', 'warn' or 'fallback', got '{other}'"),
            ))
        }
    };
    let instructions = opt_str(v, "instructions", field)?.map(str::to_owned);
    let injection = match v.get("jsonPromptInjection") {
        None | Some(Value::Null | Value::Bool(false)) => Injection::Native,
        Some(Value::String(s)) if s == "auto" => Injection::Native,
        Some(Value::Bool(true)) => Injection::System,
        Some(Value::String(s)) if s == "system" => Injection::System,
        Some(Value::String(s)) if s == "inline" => Injection::Inline,
        Some(other) => {
            let got = match other {
                Value::String(s) => format!("'{s}'"),
                o => kind(o).to_string(),
            };
            return Err(AgentError::invalid(
                join(field, "jsonPromptInjection"),
                format!("expected a boolean, 'system', 'inline' or 'auto', got {got}"),
            ));
        }
    };
    let provider_options = match v.get("providerOptions") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            if let Some((k, bad)) = m.iter().find(|(_, v)| !v.is_object()) {
                let at = join(&join(field, "providerOptions"), k.as_str());
                return Err(AgentError::invalid(
                    at,
                    format!("expected an object of that provider's options, got {}", kind(bad)),
                ));
            }
            Some(m.clone())
        }
        Some(o) => {
            return Err(AgentError::invalid(
                join(field, "providerOptions"),
                format!("expected an object, got {}", kind(o)),
            ))
        }
    };
    Ok(StructuredOptions { strategy, instructions, injection, provider_options })
}

/// Structured output of one run, ready to use.
pub struct StructuredOutput {
    /// The caller's JSON Schema (validation, when it validates in Rust).
    pub schema: Value,
    pub root: RootShape,
    /// What the model is sent.
    pub format: ResponseFormat,
    /// The schema was made strict-compatible: optional fields come back as `null`.
    strict_form: bool,
    pub options: StructuredOptions,
    /// A Standard Schema's own validation; `None` validates with the JSON Schema.
    pub validator: Option<Rc<dyn ObjectValidator>>,
    /// `structuredOutput.model`: a separate structuring pass (SPEC §12.6).
    pub model: Option<StructuringModel>,
}

impl StructuredOutput {
    /// `strict_target`: the model is OpenAI's (`openai/`), whose strict mode gets a
    /// strict-compatible schema; others get the schema as it is, strict only when it already is.
    pub fn new(
        schema: Value,
        strict_target: bool,
        options: StructuredOptions,
        validator: Option<Rc<dyn ObjectValidator>>,
    ) -> Self {
        let (wrapped, root) = wrap(&schema);
        let (format, strict_form) = format_for(&wrapped, strict_target, options.instructions.as_deref());
        StructuredOutput { schema, root, format, strict_form, options, validator, model: None }
    }

    /// With a separate structuring model: the main model answers freely, and `model`
    /// (`strict_target` as in `new`) turns the run into the object. `instructions` become that
    /// call's system prompt.
    pub fn with_model(mut self, model: StructuringModel, strict_target: bool) -> Self {
        let (wrapped, _) = wrap(&self.schema);
        let (format, strict_form) = format_for(&wrapped, strict_target, None);
        self.format = format;
        self.strict_form = strict_form;
        self.model = Some(model);
        self
    }

    /// Asks one step's request for JSON, the way `jsonPromptInjection` says; with a
    /// structuring model, tells the main model another one will extract the fields.
    pub fn apply(&self, request: &mut ModelRequest) {
        // Without the cargo feature none is ever built (`core::features`); this keeps the rest out.
        if !cfg!(feature = "structured") {
            return;
        }
        if self.model.is_some() {
            return append_system(&mut request.messages, &structuring_note(&self.format.schema));
        }
        match self.options.injection {
            Injection::Native => request.response_format = Some(self.format.clone()),
            Injection::Inline => request.messages = self.format.inline_into(&request.messages),
            Injection::System => append_system(&mut request.messages, &self.format.inline_text),
        }
    }

    /// The final text's value, checked: parsed, unwrapped, validated. `on_tool_step`: the run
    /// ended on a step with tool calls, so there is no final answer.
    async fn check(&self, text: &str, reason: FinishReason, on_tool_step: bool) -> Result<Value, AgentError> {
        let fail = |code, message: String| Err(structured_error(code, message, text));
        if on_tool_step {
            return fail(
                PARSE_FAILED,
                "Structured output could not be parsed: the run ended on a tool step, with no final answer".into(),
            );
        }
        if matches!(reason, FinishReason::Length | FinishReason::ContentFilter) {
            let why = if reason == FinishReason::Length { "the output token limit" } else { "the content filter" };
            return fail(
                TRUNCATED,
                format!("Structured output was cut short by {why} (finish reason '{}')", reason.as_str()),
            );
        }
        let mut value = match parse_final(text) {
            Ok(v) => unwrap(v, &self.root),
            Err(why) => return fail(PARSE_FAILED, format!("Structured output could not be parsed: {why}")),
        };
        if self.strict_form {
            remove_nulls(&mut value, &self.schema);
        }
        let issues = match &self.validator {
            Some(v) => match v.validate(&value).await {
                Ok(delivered) => return Ok(delivered),
                Err(issues) => issues,
            },
            None => crate::core::schema::validate(&self.schema, &value)
                .into_iter()
                .map(|e| {
                    format!("{}: {}", if e.path == "$" { "root" } else { e.path.trim_start_matches("$.") }, e.message)
                })
                .collect(),
        };
        if issues.is_empty() {
            return Ok(value);
        }
        let lines: String = issues.iter().map(|i| format!("\n- {i}")).collect();
        fail(VALIDATION_FAILED, format!("Structured output validation failed:{lines}"))
    }

    /// After the final step's `text-end`, before its `step-finish`: `object-result`, or what the
    /// error strategy says instead. With a structuring model, its call happens here (its usage
    /// is in the result).
    /// `history`: the memory thread's loaded history, for a structuring model with `useAgent`.
    pub async fn settle(
        &self,
        steps: &[StepResult],
        history: &[ModelMessage],
        sink: &dyn Sink,
        cx: &CallCx<'_>,
    ) -> StructuredResult {
        let mut out = StructuredResult::default();
        // Without the cargo feature none is ever built (`core::features`). A statement, not
        // `if !cfg!(…)`: code after an `if` stays in an async fn's state machine.
        #[cfg(not(feature = "structured"))]
        return out;
        let last = steps.last();
        let (checked, from) = match &self.model {
            None => {
                let (text, reason) = last.map_or(("", FinishReason::Other), |s| (s.text.as_str(), s.finish_reason));
                (self.check(text, reason, last.is_some_and(|s| !s.tool_calls.is_empty())).await, None)
            }
            Some(m) => {
                let (answer, usage) = m.structure(self, steps, history, sink, cx).await;
                out.usage = usage;
                let checked = match answer {
                    Ok((text, reason)) => self.check(&text, reason, false).await,
                    Err(e) => Err(e),
                };
                (checked, Some(json!({ "from": "structured-output" })))
            }
        };
        match checked {
            Ok(object) => {
                sink.emit(Chunk::ObjectResult { object: object.clone(), metadata: from });
                out.object = Some(object);
            }
            Err(e) => match &self.options.strategy {
                ErrorStrategy::Strict => {
                    sink.emit(Chunk::Error(e.clone()));
                    out.error = Some(e);
                }
                ErrorStrategy::Warn => out.warning = Some(e.to_string()),
                ErrorStrategy::Fallback(v) => {
                    sink.emit(Chunk::ObjectResult { object: v.clone(), metadata: Some(json!({ "fallback": true })) });
                    out.object = Some(v.clone());
                    out.used_fallback = true;
                }
            },
        }
        out
    }
}

/// How structured output ended for a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StructuredResult {
    pub object: Option<Value>,
    /// `errorStrategy: 'strict'`: what `object` and `getFullOutput()` reject with.
    pub error: Option<AgentError>,
    /// `errorStrategy: 'warn'`: the line for the logger.
    pub warning: Option<String>,
    pub used_fallback: bool,
    /// The structuring model's usage (added to the run's `totalUsage`).
    pub usage: Usage,
}

/// The schema for a model: strict-compatible for a strict target (and whether that changed it,
/// so the `null`s of optional fields are removed again), else as it is.
fn format_for(wrapped: &Value, strict_target: bool, instructions: Option<&str>) -> (ResponseFormat, bool) {
    let (sent, strict, strict_form) = if strict_target {
        // Only optional fields come back as `null`s to remove (each partial is then compared
        // with the last one too): a schema whose strict form changed nothing else skips both.
        let strict = strict_compatible(wrapped);
        let changed = strict != *wrapped && has_optional_fields(wrapped);
        (strict, true, changed)
    } else {
        (wrapped.clone(), is_strict_compatible(wrapped), false)
    };
    let inline_text = injection_text(&sent, instructions);
    let description = instructions.filter(|i| !i.trim().is_empty()).map(str::to_owned);
    (ResponseFormat { name: "response".into(), schema: sent, description, strict, inline_text }, strict_form)
}

/// Appends `text` to the first system message (one is made when there is none).
fn append_system(messages: &mut Vec<ModelMessage>, text: &str) {
    match messages.iter_mut().find_map(|m| match m {
        ModelMessage::System(s) => Some(s),
        _ => None,
    }) {
        Some(s) => {
            s.push_str("\n\n");
            s.push_str(text);
        }
        None => messages.insert(0, ModelMessage::System(text.to_owned())),
    }
}

pub const PARSE_FAILED: &str = "STRUCTURED_OUTPUT_PARSE_FAILED";
pub const VALIDATION_FAILED: &str = "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED";
pub const TRUNCATED: &str = "STRUCTURED_OUTPUT_TRUNCATED";

fn structured_error(code: &'static str, message: String, text: &str) -> AgentError {
    AgentError::StructuredOutput { code, message, value: text.to_owned() }
}

/// The JSON value of the final text: read by the incremental parser (which skips fences,
/// channel tokens and prose before the value); a bare JSON value it does not take as a root
/// (a string, for an enum the model answered unwrapped) is read as it is.
fn parse_final(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Err("the model's reply was empty".into());
    }
    let mut parser = JsonStream::new();
    parser.feed(text);
    parser.finish().or_else(|e| serde_json::from_str(text.trim()).map_err(|_| format!("the reply is not JSON ({e})")))
}

/// The partial values of one reply, as the caller sees them: fed each delta, the new one when
/// it changed.
#[derive(Default)]
pub(super) struct Partials {
    parser: JsonStream,
    last: Option<Rc<Value>>,
}

impl Partials {
    pub(super) fn feed(&mut self, so: &StructuredOutput, delta: &str) -> Option<Rc<Value>> {
        if !self.parser.feed(delta) {
            return None;
        }
        let mut shown = unwrap_partial(self.parser.partial()?, &so.root)?;
        if so.strict_form {
            remove_nulls(&mut shown, &so.schema);
        }
        // A changed object or array is a changed view, unless removing `null`s hid the change;
        // an enum's view changes less often than its prefix.
        let may_repeat = so.strict_form || matches!(so.root, RootShape::Enum(_));
        if may_repeat && self.last.as_deref() == Some(&shown) {
            return None;
        }
        let shown = Rc::new(shown);
        self.last = Some(shown.clone());
        Some(shown)
    }
}

/// The sink of a structured run: each step's text deltas go through a fresh parser, and an
/// `object` chunk with the new partial value goes out just before the delta that changed it.
pub struct ObjectSink<'a> {
    inner: &'a dyn Sink,
    so: Rc<StructuredOutput>,
    state: RefCell<Partials>,
}

impl<'a> ObjectSink<'a> {
    pub fn new(inner: &'a dyn Sink, so: Rc<StructuredOutput>) -> Self {
        ObjectSink { inner, so, state: RefCell::default() }
    }
}

impl Sink for ObjectSink<'_> {
    fn emit(&self, chunk: Chunk) {
        match &chunk {
            _ if !cfg!(feature = "structured") => {}
            Chunk::StepStart { .. } => *self.state.borrow_mut() = Partials::default(),
            // The main model answers freely when another one structures its answer.
            Chunk::TextDelta { text, .. } if self.so.model.is_none() => {
                // Emitted once the borrow is released: the sink runs the user's onChunk.
                let partial = self.state.borrow_mut().feed(&self.so, text);
                if let Some(object) = partial {
                    self.inner.emit(Chunk::Object { object });
                }
            }
            _ => {}
        }
        self.inner.emit(chunk)
    }

    fn step_finished<'b>(&'b self, step: &'b StepResult) -> LocalFuture<'b, ()> {
        self.inner.step_finished(step)
    }
    fn seq(&self) -> u64 {
        self.inner.seq()
    }
}
