//! Structured output in the loop (SPEC §12): the schema on every step's request, the partial
//! object while the text streams, and the final step's text validated into `object-result`, or
//! handled by the error strategy.
//!
//! The schema arrives as JSON Schema; a Standard Schema (zod) validates itself through
//! [`ObjectValidator`], which the bindings implement: the core never sees JavaScript.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::Sink;
use crate::core::chunk::Chunk;
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::input::{join, kind, opt_str};
use crate::core::json_stream::JsonStream;
use crate::core::model::{FinishReason, ModelMessage, ModelRequest, ResponseFormat};
use crate::core::step::StepResult;
use crate::core::structured_schema::{injection_text, is_strict_compatible, remove_nulls, strict_compatible, unwrap, unwrap_partial, wrap, RootShape};

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
                return Err(AgentError::invalid(join(field, "fallbackValue"), "is required with errorStrategy 'fallback': the value to deliver when the output fails"))
            }
            Some(f) => ErrorStrategy::Fallback(f.clone()),
        },
        Some(other) => {
            return Err(AgentError::invalid(join(field, "errorStrategy"), format!("expected 'strict', 'warn' or 'fallback', got '{other}'")))
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
            return Err(AgentError::invalid(join(field, "jsonPromptInjection"), format!("expected a boolean, 'system', 'inline' or 'auto', got {got}")));
        }
    };
    let provider_options = match v.get("providerOptions") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            if let Some((k, bad)) = m.iter().find(|(_, v)| !v.is_object()) {
                let at = join(&join(field, "providerOptions"), k.as_str());
                return Err(AgentError::invalid(at, format!("expected an object of that provider's options, got {}", kind(bad))));
            }
            Some(m.clone())
        }
        Some(o) => return Err(AgentError::invalid(join(field, "providerOptions"), format!("expected an object, got {}", kind(o)))),
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
}

impl StructuredOutput {
    /// `strict_target`: the model is OpenAI's (`openai/`), whose strict mode gets a
    /// strict-compatible schema; others get the schema as it is, strict only when it already is.
    pub fn new(schema: Value, strict_target: bool, options: StructuredOptions, validator: Option<Rc<dyn ObjectValidator>>) -> Self {
        let (wrapped, root) = wrap(&schema);
        let (sent, strict, strict_form) = if strict_target {
            let strict = strict_compatible(&wrapped);
            let changed = strict != wrapped;
            (strict, true, changed)
        } else {
            let strict = is_strict_compatible(&wrapped);
            (wrapped, strict, false)
        };
        let inline_text = injection_text(&sent, options.instructions.as_deref());
        let description = options.instructions.clone().filter(|i| !i.trim().is_empty());
        let format = ResponseFormat { name: "response".into(), schema: sent, description, strict, inline_text };
        StructuredOutput { schema, root, format, strict_form, options, validator }
    }

    /// Asks one step's request for JSON, the way `jsonPromptInjection` says.
    pub fn apply(&self, request: &mut ModelRequest) {
        match self.options.injection {
            Injection::Native => request.response_format = Some(self.format.clone()),
            Injection::Inline => request.messages = self.format.inline_into(&request.messages),
            Injection::System => match request.messages.iter_mut().find_map(|m| match m {
                ModelMessage::System(s) => Some(s),
                _ => None,
            }) {
                Some(s) => {
                    s.push_str("\n\n");
                    s.push_str(&self.format.inline_text);
                }
                None => request.messages.insert(0, ModelMessage::System(self.format.inline_text.clone())),
            },
        }
    }

    /// The final step's value, checked: parsed, unwrapped, validated.
    async fn check(&self, step: &StepResult) -> Result<Value, AgentError> {
        let text = step.text.as_str();
        let fail = |code, message: String| Err(structured_error(code, message, text));
        if !step.tool_calls.is_empty() {
            return fail(PARSE_FAILED, "Structured output could not be parsed: the run ended on a tool step, with no final answer".into());
        }
        if matches!(step.finish_reason, FinishReason::Length | FinishReason::ContentFilter) {
            let why = if step.finish_reason == FinishReason::Length { "the output token limit" } else { "the content filter" };
            return fail(TRUNCATED, format!("Structured output was cut short by {why} (finish reason '{}')", step.finish_reason.as_str()));
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
                .map(|e| format!("{}: {}", if e.path == "$" { "root" } else { e.path.trim_start_matches("$.") }, e.message))
                .collect(),
        };
        if issues.is_empty() {
            return Ok(value);
        }
        let lines: String = issues.iter().map(|i| format!("\n- {i}")).collect();
        fail(VALIDATION_FAILED, format!("Structured output validation failed:{lines}"))
    }

    /// After the final step's `text-end`, before its `step-finish`: `object-result`, or what the
    /// error strategy says instead.
    pub async fn settle(&self, step: &StepResult, sink: &dyn Sink) -> StructuredResult {
        let mut out = StructuredResult::default();
        match self.check(step).await {
            Ok(object) => {
                sink.emit(Chunk::ObjectResult { object: object.clone(), metadata: None });
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

/// The sink of a structured run: each step's text deltas go through a fresh parser, and an
/// `object` chunk with the new partial value goes out just before the delta that changed it.
pub struct ObjectSink<'a> {
    inner: &'a dyn Sink,
    so: Rc<StructuredOutput>,
    state: RefCell<(JsonStream, Option<Value>)>,
}

impl<'a> ObjectSink<'a> {
    pub fn new(inner: &'a dyn Sink, so: Rc<StructuredOutput>) -> Self {
        ObjectSink { inner, so, state: RefCell::new((JsonStream::new(), None)) }
    }

    /// The caller's view of the partial value, when it changed.
    fn partial(&self, delta: &str) -> Option<Value> {
        let mut st = self.state.borrow_mut();
        let (parser, last) = &mut *st;
        if !parser.feed(delta) {
            return None;
        }
        let mut shown = unwrap_partial(parser.partial()?, &self.so.root)?;
        if self.so.strict_form {
            remove_nulls(&mut shown, &self.so.schema);
        }
        if last.as_ref() == Some(&shown) {
            return None;
        }
        *last = Some(shown.clone());
        Some(shown)
    }
}

impl Sink for ObjectSink<'_> {
    fn emit(&self, chunk: Chunk) {
        match &chunk {
            Chunk::StepStart { .. } => *self.state.borrow_mut() = (JsonStream::new(), None),
            Chunk::TextDelta { text, .. } => {
                // Emitted once the borrow is released: the sink runs the user's onChunk.
                if let Some(object) = self.partial(text) {
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
}
