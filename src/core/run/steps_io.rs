//! What the loop tells processors and takes back from them (SPEC §13.2): the arguments of each
//! phase built from the run's typed state, and their results read back into it. Messages cross
//! as JSON: `processInput` sees stored messages (§7's shape, with ids, so a processor's rewrite of
//! the new ones is what memory stores), `processInputStep` the prompt's model messages.

use serde_json::{json, Map, Value};

use super::processors::Tripwire;
use super::processors::{
    processor_error, result_args as make_result_args, retry_message, system_json, Ended, Pipeline, STEP_KEYS,
};
use super::{RunConfig, RunOutcome, Sink, StepOverrides, Stop};
use crate::core::abort::AbortFlag;
use crate::core::chunk::usage_json;
use crate::core::chunk::Chunk;
use crate::core::env::Env;
use crate::core::error::AgentError;
use crate::core::input::{parse_messages, parse_model_settings, parse_tool_choice};
use crate::core::memory::{input_messages, iso_time, Session, StoredMessage};
use crate::core::model::FinishReason;
use crate::core::model::{ModelMessage, ModelRequest, ToolChoice};
use crate::core::env::LocalFuture;
use crate::core::step::{messages_json, StepResult, ToolCall};
use crate::core::tools::{Suspension, ToolCtx, ToolDef, ToolHost, ToolResult};

/// `processInput`: the history and the input as stored messages, the system messages apart.
/// What comes back replaces them: messages whose id is one of the history's stay history (for
/// this request only), every other one is new input (sent, and stored by the caller, with the
/// `content.metadata` a processor gave it: `meta`, by position in the new input).
#[allow(clippy::too_many_arguments)]
pub async fn process_input(
    pipe: &Pipeline<'_>,
    head: &mut Vec<ModelMessage>,
    input: &mut Vec<ModelMessage>,
    meta: &mut Vec<Option<Value>>,
    ids: &[Option<String>],
    session: Option<&mut Session>,
    env: &dyn Env,
    sink: &dyn Sink,
) -> Result<(), Ended> {
    // Never called without the cargo feature (no processors); this keeps the rest out.
    #[cfg(not(feature = "processors"))]
    return Ok(());
    let n_system = head.iter().take_while(|m| matches!(m, ModelMessage::System(_))).count();
    let system: Vec<String> = head[..n_system]
        .iter()
        .filter_map(|m| match m {
            ModelMessage::System(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let thread = session.as_ref().map(|s| s.thread.clone()).unwrap_or_else(|| crate::core::memory::Thread {
        id: String::new(),
        resource_id: String::new(),
        title: None,
        metadata: None,
        created_at: String::new(),
        updated_at: String::new(),
    });
    let history: &[StoredMessage] = session.as_ref().map(|s| s.history.as_slice()).unwrap_or(&[]);
    let known: Vec<&str> = history.iter().map(|m| m.id.as_str()).collect();
    let mut all: Vec<Value> = history.iter().map(StoredMessage::to_json).collect();
    let now = env.now_ms();
    for m in input_messages(input, ids, &thread, &mut || (env.new_id(), iso_time(now))) {
        let mut v = m.to_json();
        if thread.id.is_empty() {
            if let Some(o) = v.as_object_mut() {
                o.remove("threadId");
                o.remove("resourceId");
            }
        }
        all.push(v);
    }
    let (messages, new_system) = pipe.input(all, system, sink).await?;
    let mut new_history = Vec::new();
    let mut new_input = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let id = m.get("id").and_then(Value::as_str);
        if let Some(id) = id.filter(|id| known.contains(id)) {
            let stored = StoredMessage::from_json(m, "processInput").map_err(|e| bad_input(&e, id))?;
            new_history.push(stored);
        } else {
            let parsed = parse_messages(m, &format!("messages.{i}")).map_err(|e| bad_input(&e, ""))?;
            let metadata = m.pointer("/content/metadata").filter(|v| v.as_object().is_some_and(|o| !o.is_empty()));
            meta.resize(new_input.len(), None);
            meta.push(metadata.cloned());
            new_input.extend(parsed);
        }
    }
    if let Some(s) = session {
        s.history = new_history;
    }
    meta.resize(new_input.len(), None);
    *input = new_input;
    head.splice(..n_system, new_system.into_iter().map(ModelMessage::System));
    Ok(())
}

fn bad_input(e: &AgentError, _id: &str) -> Ended {
    processor_error("processInput", &format!("returned a message that is not valid: {e}"))
}


fn tool_choice_json(c: &Option<ToolChoice>) -> Value {
    match c {
        None | Some(ToolChoice::Auto) => "auto".into(),
        Some(ToolChoice::None) => "none".into(),
        Some(ToolChoice::Required) => "required".into(),
        Some(ToolChoice::Tool(name)) => json!({ "type": "tool", "toolName": name }),
    }
}

fn split_system(messages: &[ModelMessage]) -> (Vec<String>, &[ModelMessage]) {
    let n = messages.iter().take_while(|m| matches!(m, ModelMessage::System(_))).count();
    let system = messages[..n]
        .iter()
        .filter_map(|m| match m {
            ModelMessage::System(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    (system, &messages[n..])
}

fn steps_json(steps: &[StepResult]) -> Value {
    Value::Array(steps.iter().map(StepResult::to_json).collect())
}

/// `processInputStep`'s arguments for the step about to be sent.
pub fn input_step_args(
    step_number: usize,
    steps: &[StepResult],
    request: &ModelRequest,
    cfg: &RunConfig,
    procs: &super::processors::Processors,
) -> Value {
    let (system, rest) = split_system(&request.messages);
    let active: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    let tools: Vec<&str> = cfg.tools.iter().map(|t| t.name.as_str()).collect();
    let provider_options = procs.provider_options.clone().unwrap_or_default();
    let mut args = json!({
        "stepNumber": step_number,
        "steps": steps_json(steps),
        "messages": messages_json(rest),
        "systemMessages": system_json(&system),
        "model": request.model_id,
        "tools": tools,
        "toolChoice": tool_choice_json(&request.tool_choice),
        "activeTools": active,
        "modelSettings": request.settings.sampling_json(),
        "providerOptions": provider_options,
    });
    if let Some(so) = &cfg.structured {
        args["structuredOutput"] = json!({ "schema": so.schema });
    }
    args
}

/// What the processors changed of `before`, into the step's overrides (with `swaps`, what the
/// host made of their `model`, `tools` and `structuredOutput`); the step's messages when they
/// replaced them.
#[allow(clippy::result_large_err)] // the same `Ended` as the loop's async steps, once per step
pub fn step_changes(
    before: &Value,
    after: &Value,
    swaps: StepOverrides,
    overrides: &mut StepOverrides,
    procs: &super::processors::Processors,
) -> Result<Option<Vec<ModelMessage>>, Ended> {
    let bad = |e: AgentError| processor_error("processInputStep", &format!("returned {e}"));
    let mut messages = None;
    let mut provider_options = None;
    for key in STEP_KEYS {
        let (Some(new), old) = (after.get(*key), before.get(*key)) else { continue };
        if Some(new) == old {
            continue;
        }
        match *key {
            "messages" => messages = Some(parse_messages(new, "messages").map_err(bad)?),
            "systemMessages" => {
                let texts =
                    super::processors::system_texts(new).map_err(|m| processor_error("processInputStep", &m))?;
                overrides.system = Some(texts);
            }
            "toolChoice" => overrides.tool_choice = Some(parse_tool_choice(new, "toolChoice").map_err(bad)?),
            "activeTools" => {
                let names = new.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect());
                overrides.active_tools = Some(names.ok_or_else(|| {
                    processor_error("processInputStep", "returned activeTools that is not an array of tool names")
                })?);
            }
            // Checked as each processor returned it (`check_provider_options`).
            "providerOptions" => provider_options = new.as_object().cloned(),
            // Made by the host: `swaps` carries them.
            "model" | "tools" | "structuredOutput" => {}
            _ => {
                let mut settings = parse_model_settings(new, "modelSettings").map_err(bad)?;
                let base = overrides.settings.clone().unwrap_or_default();
                if settings.headers.is_empty() {
                    settings.headers = base.headers;
                }
                settings.max_retries = settings.max_retries.or(base.max_retries);
                overrides.settings = Some(settings);
            }
        }
    }
    if swaps.model.is_some() || provider_options.is_some() {
        let provider = swaps.model.as_ref().map_or(procs.provider.as_str(), |m| m.provider.as_str());
        overrides.provider_options = Some(step_provider_options(procs.provider_options.as_ref(), provider_options.as_ref(), provider));
    }
    overrides.model = swaps.model.or(overrides.model.take());
    overrides.tools = swaps.tools.or(overrides.tools.take());
    overrides.structured = swaps.structured.or(overrides.structured.take());
    Ok(messages)
}

/// Checks a returned `providerOptions`, an object of each provider's options; the message
/// starts with the key's path (`.providerOptions.openai: …`), after the method's name.
pub fn check_provider_options(v: &Value) -> Result<(), String> {
    let kind = crate::core::input::kind;
    let Value::Object(o) = v else {
        return Err(format!(".providerOptions: expected an object of options by provider, got {}", kind(v)));
    };
    match o.iter().find(|(_, val)| !val.is_object()) {
        Some((k, val)) => Err(format!(".providerOptions.{k}: expected an object of that provider's options, got {}", kind(val))),
        None => Ok(()),
    }
}

/// The options of `provider` a step's request gets: the call's, with the step's over them key by
/// key (as a call's go over `defaultOptions`'), without the transport's own keys.
pub fn step_provider_options(
    call: Option<&Map<String, Value>>,
    step: Option<&Map<String, Value>>,
    provider: &str,
) -> Map<String, Value> {
    let of = |m: Option<&Map<String, Value>>| m.and_then(|m| m.get(provider)).and_then(Value::as_object).cloned();
    let mut out = of(call).unwrap_or_default();
    out.extend(of(step).unwrap_or_default());
    for key in crate::core::transport::TRANSPORT_KEYS {
        out.remove(key);
    }
    out
}

/// `processOutputStep`'s arguments: the step that just streamed, before its tools run;
/// `messages` are the conversation with this step's response at the end.
pub fn output_step_args(step_number: usize, step: &StepResult, steps: &[StepResult], prompt: &[ModelMessage]) -> Value {
    let (system, rest) = split_system(prompt);
    let mut rest = rest.to_vec();
    rest.extend(step.response_messages());
    let rest = rest.as_slice();
    json!({
        "stepNumber": step_number,
        "finishReason": step.finish_reason.as_str(),
        "text": step.text,
        "toolCalls": step.tool_calls.iter().map(ToolCall::to_json).collect::<Vec<_>>(),
        "usage": usage_json(&step.usage),
        "steps": steps_json(steps),
        "messages": messages_json(rest),
        "systemMessages": system_json(&system),
    })
}

/// `processOutputResult`'s arguments.
pub fn result_args(outcome: &RunOutcome) -> Value {
    let reason = outcome.steps.last().map(|s| s.finish_reason.as_str()).unwrap_or("other");
    let messages = messages_json(&outcome.response_messages());
    make_result_args(messages, outcome.text(), usage_json(&outcome.total_usage), reason, steps_json(&outcome.steps))
}

/// The messages `processOutputResult` gave to store, as model messages.
pub fn parse_stored(messages: Option<Vec<Value>>) -> Result<Option<Vec<ModelMessage>>, AgentError> {
    let Some(m) = messages else { return Ok(None) };
    parse_messages(&Value::Array(m), "processOutputResult(…)").map(Some).map_err(|e| AgentError::Processor {
        message: format!("processOutputResult returned messages that are not valid: {e}"),
    })
}

/// The feedback of a retry: one system message after the others.
pub fn add_feedback(messages: &mut Vec<ModelMessage>, reason: &str) {
    let at = messages.iter().take_while(|m| matches!(m, ModelMessage::System(_))).count();
    messages.insert(at, ModelMessage::System(retry_message(reason)));
}

/// A processor's `abort()`: the `tripwire` chunk, and the run ends with it.
/// (A retry that is not granted is a plain tripwire: no `retry` in it.)
pub(super) fn trip(outcome: &mut RunOutcome, mut t: Tripwire, sink: &dyn Sink) {
    t.retry = false;
    sink.emit(Chunk::Tripwire(t.clone()));
    outcome.tripwire = Some(t);
}

/// How a processor stopped the loop outside a step: a tripwire ends the run (`Ok`), a failure
/// or an abort stops it.
pub(super) fn tripped(e: Ended, outcome: &mut RunOutcome, sink: &dyn Sink) -> Result<(), Stop> {
    match e {
        Ended::Tripwire(t) => {
            trip(outcome, t, sink);
            Ok(())
        }
        Ended::Stop(stop) => Err(stop),
    }
}

/// A tripwire inside a step: the `tripwire` chunk, then the step's closing `step-finish`. The
/// step is in `steps` (its text was seen) but is not stored.
pub(super) async fn stopped_step(
    outcome: &mut RunOutcome,
    mut step: StepResult,
    t: Tripwire,
    sink: &dyn Sink,
    abort: &AbortFlag,
) -> Result<(), Stop> {
    trip(outcome, t, sink);
    step.finish_reason = FinishReason::Tripwire;
    outcome.total_usage = outcome.total_usage.add(&step.usage);
    outcome.steps.push(step);
    outcome.tripwire_step = true;
    let last = outcome.steps.last().expect("a step was just pushed");
    sink.emit(Chunk::StepFinish {
        step: Box::new(last.clone()),
        is_continued: false,
        total_usage: outcome.total_usage,
    });
    abort.race(sink.step_finished(last)).await.ok_or(Stop::Aborted)
}

/// The tool a call of this step names, among the step's tools (a `processInputStep`'s, else
/// the run's) that are active.
pub(super) fn step_tool<'c>(cfg: &'c RunConfig, overrides: &'c StepOverrides, name: &str) -> Option<&'c ToolDef> {
    let tools = overrides.tools.as_ref().filter(|_| cfg!(feature = "processors")).map_or(&cfg.tools, |t| &t.defs);
    tools.iter().find(|t| t.name == name && super::is_active(cfg, overrides, &t.name))
}

/// The host of a step with its own tools: they run there, and the run's `hooks` still see
/// each call (`beforeToolCall`, `afterToolCall`).
pub(super) struct StepHost<'a> {
    pub tools: &'a dyn ToolHost,
    pub hooks: &'a dyn ToolHost,
}

impl ToolHost for StepHost<'_> {
    fn execute<'a>(&'a self, ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>> {
        self.tools.execute(ctx)
    }
    fn validate<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Value, String>> {
        self.tools.validate(call)
    }
    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, bool> {
        self.tools.needs_approval(call)
    }
    fn before_tool_call<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Option<Value>, String>> {
        self.hooks.before_tool_call(call)
    }
    fn after_tool_call<'a>(&'a self, result: &'a ToolResult) -> LocalFuture<'a, ()> {
        self.hooks.after_tool_call(result)
    }
    fn take_suspension(&self, tool_call_id: &str) -> Option<Suspension> {
        self.tools.take_suspension(tool_call_id)
    }
    fn suspension_stored(&self, tool_call_id: &str) {
        self.tools.suspension_stored(tool_call_id)
    }
}
