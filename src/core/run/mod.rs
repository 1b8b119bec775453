//! The step loop of one run: send the prompt, stream the response into chunks, retry what may be
//! retried, stop on abort. Runtime-free: everything it waits on comes through `Env`, so native
//! tests drive it with scripted responses and a fake clock.

use std::cell::RefCell;
use std::pin::pin;
use std::rc::Rc;

use futures_util::future::{select, Either};


pub mod memory;
mod outcome;
pub mod structured;
mod structured_model;
pub mod processors;
pub mod processor_trace;
#[cfg(feature = "processors")]
pub mod builtin_processors;
pub mod delegation;
pub mod auto_resume;
mod steps_io;
pub mod suspend;

pub use outcome::RunOutcome;
pub use super::error::Stop;

use super::abort::AbortFlag;
use super::chunk::Chunk;
use super::env::{Env, LocalFuture};
use super::memory::{MemoryRun, Session};
use super::scoring::ScoringCapture;
pub use super::hooks::{Hooks, IterationDecision, NoHooks, StepOverrides, StopCondition};
pub use super::retry::{parse_retry_after, retry_delay_ms};
use super::model_api::{CallCx, EventSource, ModelApi};
use super::transport::Transport;
use processors::{Ended, Phase, Pipeline, Processors};
use steps_io::{stopped_step, trip, tripped};
use super::model::FinishReason;
use memory::{generate_title, open_memory, remember_input, working_memory_prompt, working_memory_text, working_memory_tool, MemoryTools, TitleJob};
use super::model::{ModelMessage, ModelRequest, ToolChoice, UserPart, Warning};
use super::step::{messages_json, IdSource, StepBuilder, StepResult};
use super::background::{Manager, MemoryTarget};
use super::tools::{run_call, run_limited, Approvals, BackgroundCall, Outcome, Settled, ToolDef, ToolHost, ToolResult};

/// Everything one run needs, already validated.
pub struct RunConfig {
    pub run_id: String,
    /// The model the run talks to.
    pub model: Rc<dyn ModelApi>,
    /// The full prompt (system, context and input messages) and the model settings.
    pub request: ModelRequest,
    pub max_retries: u32,
    pub include_raw: bool,
    pub max_steps: u32,
    pub tools: Vec<ToolDef>,
    /// `activeTools`: the tools the model may call (all when `None`).
    pub active_tools: Option<Vec<String>>,
    pub tool_choice: Option<ToolChoice>,
    /// `requireToolApproval`: every call waits for a decision.
    pub require_tool_approval: bool,
    pub tool_call_concurrency: usize,
    pub stop_when: Vec<StopCondition>,
    /// Where the caller's input starts in `request.messages` (memory history goes before it).
    pub input_start: usize,
    /// The ids the input messages keep in memory, by position from `input_start` (a user UI
    /// message's own id); missing or `None`: a new id.
    pub input_ids: Vec<Option<String>>,
    pub memory: Option<MemoryRun>,
    /// Title a thread this run creates (`generateTitle`).
    pub title: Option<TitleJob>,
    /// Background tasks, when the agent has them enabled.
    pub background: Option<BackgroundRun>,
    /// How the model calls travel (Responses API: HTTP or WebSocket).
    pub transport: Transport,
    /// Options of the call this version does not honour (`core::unsupported`): told on the first
    /// `step-start`, so once in the run's `warnings` too.
    pub setting_warnings: Vec<Warning>,
    /// `structuredOutput` (SPEC §12).
    pub structured: Option<Rc<structured::StructuredOutput>>,
    /// `inputProcessors`, `outputProcessors`, `maxProcessorRetries` (SPEC §13).
    pub processors: Processors,
    /// `agents`: sub-agents offered as tools (SPEC §18).
    pub delegation: Option<delegation::Delegation>,
    /// Keep what a scorer gets of the run (`RunOutcome::scoring`): the run has scorers or
    /// `returnScorerData` (SPEC §14.2).
    pub scoring: bool,
    /// `isTaskComplete` (SPEC §15): the completion check after a step that would end the run.
    pub completion: Option<super::completion::CompletionCheck>,
    /// Run records and `closeOnSuspend` (SPEC §19); `None`: calls that wait are decided live only.
    pub runs: Option<suspend::RunsCfg>,
    /// Resume from a stored snapshot instead of starting (SPEC §19.3).
    pub resume: Option<suspend::Resume>,
    /// The run's spans (SPEC §16), when it is traced.
    pub tracing: Option<Rc<super::tracing::Tracer>>,
}

/// The manager a run hands background calls to, and the agent they belong to.
#[derive(Clone)]
pub struct BackgroundRun {
    pub manager: Rc<Manager>,
    pub agent_id: String,
}

/// Where the chunks of a run go.
pub trait Sink {
    /// Called once per chunk, in order.
    fn emit(&self, chunk: Chunk);
    /// Called after each complete step, after its `step-finish` chunk; the loop waits for it
    /// (this is `onStepFinish`).
    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()>;
    /// The `seq` of the last chunk emitted (SPEC §19.8), for a suspended run's record; 0 for a
    /// sink that does not number its chunks.
    fn seq(&self) -> u64 {
        0
    }
}

/// Runs the loop to its end. Every chunk, including the final `finish`, `error` or `abort`,
/// goes to `sink`; the outcome carries the aggregates. A traced run's spans follow its chunks
/// and end with it (SPEC §16.2).
pub async fn run(
    cfg: RunConfig,
    env: &dyn Env,
    sink: &dyn Sink,
    hooks: &dyn Hooks,
    approvals: &Approvals,
    abort: &AbortFlag,
) -> RunOutcome {
    // One await of the loop, traced or not (the sink is the only difference).
    #[cfg(feature = "tracing")]
    let tracer = cfg.tracing.clone();
    #[cfg(feature = "tracing")]
    let traced = tracer.as_deref().map(|t| {
        t.start_run(run_facts(&cfg), env);
        super::tracing::TracingSink { inner: sink, tracer: t, env }
    });
    #[cfg(feature = "tracing")]
    let sink: &dyn Sink = match &traced {
        Some(s) => s,
        None => sink,
    };
    let outcome = run_untraced(cfg, env, sink, hooks, approvals, abort).await;
    #[cfg(feature = "tracing")]
    if let Some(t) = &tracer {
        t.end_run(&outcome, env);
    }
    outcome
}

/// What the root and generation spans say about the run.
#[cfg(feature = "tracing")]
fn run_facts(cfg: &RunConfig) -> super::tracing::tracer::RunFacts<'_> {
    super::tracing::tracer::RunFacts {
        tools: cfg.tools.iter().map(|t| (t.name.as_str(), t.description.as_deref())).collect(),
        max_steps: cfg.max_steps,
        thread_id: cfg.memory.as_ref().map(|m| m.thread_id.as_str()),
        parameters: cfg.request.settings.sampling_json(),
        messages: messages_json(&cfg.request.messages),
    }
}

async fn run_untraced(
    mut cfg: RunConfig,
    env: &dyn Env,
    sink: &dyn Sink,
    hooks: &dyn Hooks,
    approvals: &Approvals,
    abort: &AbortFlag,
) -> RunOutcome {
    let object_sink = cfg.structured.clone().map(|so| structured::ObjectSink::new(sink, so));
    let sink: &dyn Sink = match &object_sink {
        Some(s) => s,
        None => sink,
    };
    let resume = cfg.resume.take();
    if let Some(r) = resume {
        return resume_run(cfg, r, env, sink, hooks, approvals, abort).await;
    }
    let message_id = env.new_id();
    let mut outcome = RunOutcome { message_id: message_id.clone(), ..Default::default() };
    sink.emit(Chunk::Start { message_id: message_id.clone() });
    let procs = std::mem::take(&mut cfg.processors);
    let pipe = Pipeline::new(&procs, &cfg.run_id, abort);
    #[cfg(all(feature = "tracing", feature = "processors"))]
    let pipe = pipe.traced(processor_trace::ProcessorTrace::new(cfg.tracing.clone(), env));
    // The system messages and context, then (after memory's history) the caller's input.
    let mut messages = cfg.request.messages.clone();
    let mut input = messages.split_off(cfg.input_start.min(messages.len()));
    let prefix_len = messages.len();
    let mut session = None;
    if let Some(mem) = &cfg.memory {
        match open_memory(mem, env, abort, &mut outcome).await {
            Ok(s) => session = s,
            Err(stop) => {
                stop.record(&mut outcome, abort);
                return finish(outcome, sink);
            }
        }
    }
    let mut stopped = None;
    let given = input.len();
    // The `content.metadata` processInput set on the input messages, by position.
    let mut input_meta = Vec::new();
    if pipe.has(Phase::Input) {
        // What processInput leaves is what the model is sent and memory stores; a tripwire or a
        // failure still stores the input as given.
        stopped = steps_io::process_input(&pipe, &mut messages, &mut input, &mut input_meta, &cfg.input_ids, session.as_mut(), env, sink).await.err();
    }
    #[cfg(feature = "recall")]
    if let (Some(mem), Some(s), None) = (&cfg.memory, session.as_mut(), &stopped) {
        match abort.race(memory::recall_for(mem, s, &input)).await {
            Some(recalled) => outcome.remembered = recalled,
            None => {
                Stop::Aborted.record(&mut outcome, abort);
                return finish(outcome, sink);
            }
        }
    }
    if let (Some(mem), Some(s)) = (&cfg.memory, session.as_mut()) {
        // The input's own ids (user UI messages) go by position: only while processInput kept the count.
        let ids = if input.len() == given { &cfg.input_ids[..] } else { &[] };
        match remember_input(mem, s, &mut input, (ids, &input_meta), env, abort, &mut outcome).await {
            Ok(history) => messages.extend(history),
            Err(stop) => {
                stop.record(&mut outcome, abort);
                return finish(outcome, sink);
            }
        }
    }
    let first_user = original_task(&input);
    #[cfg(not(feature = "scorers"))]
    let mut scoring: Option<ScoringCapture> = None;
    #[cfg(feature = "scorers")]
    let mut scoring = cfg.scoring.then(|| {
        let ids = if input.len() == given { &cfg.input_ids[..] } else { &[] };
        let mut capture = ScoringCapture::new(&messages[..prefix_len.min(messages.len())], &input, ids);
        if let Some(s) = &session {
            capture.remembered = s.remembered();
            capture.thread = Some(s.thread.clone());
        }
        capture
    });
    messages.extend(input);
    match stopped {
        Some(Ended::Tripwire(t)) => {
            trip(&mut outcome, t, sink);
            return finish(outcome, sink);
        }
        Some(Ended::Stop(stop)) => {
            stop.record(&mut outcome, abort);
            return finish(outcome, sink);
        }
        None => {}
    }
    if let (Some(mem), Some(s)) = (&cfg.memory, &session) {
        match working_memory_text(mem, &s.thread).await {
            Ok(Some(text)) => {
                let at = messages.iter().take_while(|m| matches!(m, ModelMessage::System(_))).count();
                messages.insert(at, working_memory_prompt(&text, !mem.config.read_only));
                if !mem.config.read_only {
                    cfg.tools.push(working_memory_tool());
                }
            }
            Ok(None) => {}
            // Like the history: no reply from a context the user did not intend.
            Err(e) => {
                outcome.error = Some(e);
                return finish(outcome, sink);
            }
        }
    }
    if let (Some(rc), Some(mem), true) = (cfg.runs.as_mut(), &cfg.memory, session.is_some()) {
        if let (true, Some(store)) = (rc.auto_resume, rc.store.clone()) {
            match abort.race(auto_resume::suspended_on_thread(&*store, &rc.agent_id, &mem.thread_id)).await {
                Some(Ok(waits)) if !waits.is_empty() => {
                    let at = messages.iter().take_while(|m| matches!(m, ModelMessage::System(_))).count();
                    messages.insert(at, auto_resume::system_note(&waits));
                    auto_resume::add_inputs(&mut cfg.tools, &waits);
                    rc.auto_waits = waits;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    outcome.error = Some(e);
                    return finish(outcome, sink);
                }
                None => {
                    Stop::Aborted.record(&mut outcome, abort);
                    return finish(outcome, sink);
                }
            }
        }
    }
    #[cfg(feature = "subagents")]
    if let Some(d) = &cfg.delegation {
        match abort.race(d.resolve()).await {
            Some(Ok(tools)) => cfg.tools.extend(tools),
            Some(Err(e)) => {
                outcome.error = Some(e);
                return finish(outcome, sink);
            }
            None => {
                Stop::Aborted.record(&mut outcome, abort);
                return finish(outcome, sink);
            }
        }
    }
    if let Err(stop) = run_steps(&cfg, env, sink, hooks, approvals, abort, &pipe, &mut outcome, messages, &mut session, None).await {
        stop.record(&mut outcome, abort);
    }
    end_record(&cfg, &mut outcome).await;
    if cfg.transport != Transport::Fetch {
        env.release_sockets(&cfg.run_id);
    }
    let done_well = outcome.error.is_none() && outcome.aborted.is_none() && outcome.tripwire.is_none();
    if let (Some(mem), Some(s), Some(job), Some(first), true) = (&cfg.memory, session.as_mut(), &cfg.title, first_user, done_well) {
        if s.created && !mem.config.read_only {
            match generate_title(job, &first, env, abort).await {
                // A thread deleted meanwhile is not brought back by its title.
                Ok(Some(_)) if !matches!(mem.still_there(s).await, Ok(true)) => {}
                Ok(Some(title)) => {
                    s.thread.title = Some(title.clone());
                    match mem.store.save_thread(&s.thread).await {
                        Ok(()) => {
                            let data = serde_json::json!({ "threadId": s.thread.id, "title": title });
                            sink.emit(Chunk::Data { kind: "data-thread-title".into(), data, id: None, transient: true });
                            hooks.title_generated(&s.thread.id, &title).await;
                        }
                        Err(e) => outcome.write_failed(e),
                    }
                }
                Ok(None) => {}
                // The reply is done; a failed title is reported, not fatal.
                Err(e) => sink.emit(Chunk::Error(e)),
            }
        }
    }
    if let (Some(mem), Some(s), false) = (&cfg.memory, session.as_mut(), outcome.stored_waiting) {
        // Also after an abort or a failure: complete steps and what the user saw are kept.
        let partial = if outcome.aborted.is_some() || outcome.error.is_some() { outcome.partial.as_ref() } else { None };
        // The step a tripwire stopped is not stored; processOutputResult may replace the rest.
        let kept = outcome.steps.len() - usize::from(outcome.tripwire_step);
        let steps = with_finished_tasks(&outcome.steps[..kept], cfg.background.as_ref());
        let saved = match outcome.stored_instead.take() {
            Some(instead) => mem.save_input(s, &instead, &[], &[], env.now_ms(), &mut || env.new_id()).await.map(|_| ()),
            None => mem.save_assistant(s, &steps, partial, env.now_ms()).await,
        };
        if let Err(e) = saved {
            outcome.write_failed(e);
        }
        #[cfg(feature = "scorers")]
        save_completion_notes(mem, s, &mut outcome, env).await;
    }
    #[cfg(feature = "subagents")]
    if let Some(d) = &cfg.delegation {
        if let (Some(mem), Some(s)) = (&cfg.memory, session.as_mut()) {
            if let Err(e) = d.save_feedback(mem, s, env).await {
                outcome.write_failed(e);
            }
        }
        outcome.delegation_hook_errors = Some(d.take_hook_errors());
    }
    let done_well = outcome.error.is_none() && outcome.aborted.is_none() && outcome.tripwire.is_none();
    if let (Some(capture), true) = (scoring.take(), done_well) {
        let data = capture.to_json(&outcome.message_id, &outcome.steps, env.now_ms(), &mut || env.new_id());
        outcome.scoring = Some(data);
    }
    let outcome = finish(outcome, sink);
    index_saved(&cfg, session.as_mut());
    outcome
}

/// Hands what the run saved to the indexer, after `finish` was emitted: the embedding runs on
/// the event loop and never delays the reply.
fn index_saved(cfg: &RunConfig, session: Option<&mut Session>) {
    let (Some(mem), Some(s)) = (&cfg.memory, session) else { return };
    if let Some(ix) = &mem.indexer {
        ix.saved(&std::mem::take(&mut s.saved));
    }
}

/// A resumed run: no `start` chunk and no input (it was stored when the run began); the step it
/// stopped in goes on with the decision, then the loop as usual.
async fn resume_run(cfg: RunConfig, mut r: suspend::Resume, env: &dyn Env, sink: &dyn Sink, hooks: &dyn Hooks, approvals: &Approvals, abort: &AbortFlag) -> RunOutcome {
    let mut cfg = cfg;
    let procs = std::mem::take(&mut cfg.processors);
    let pipe = Pipeline::new(&procs, &cfg.run_id, abort);
    #[cfg(all(feature = "tracing", feature = "processors"))]
    let pipe = pipe.traced(processor_trace::ProcessorTrace::new(cfg.tracing.clone(), env));
    // The record it resumes from is this run's: it ends with the run.
    let mut outcome = RunOutcome { message_id: r.message_id.clone(), total_usage: r.total_usage, recorded: true, ..Default::default() };
    let mut session = None;
    if let Some(mem) = &cfg.memory {
        match open_memory(mem, env, abort, &mut outcome).await {
            Ok(s) => session = s,
            Err(stop) => {
                stop.record(&mut outcome, abort);
                end_record(&cfg, &mut outcome).await;
                return finish(outcome, sink);
            }
        }
    }
    if let Some(s) = session.as_mut() {
        s.resume_message(std::mem::take(&mut r.stored_parts), r.stored_at.take());
    }
    let messages = r.messages.clone();
    if let Err(stop) = run_steps(&cfg, env, sink, hooks, approvals, abort, &pipe, &mut outcome, messages, &mut session, Some(r)).await {
        stop.record(&mut outcome, abort);
    }
    end_record(&cfg, &mut outcome).await;
    if let (Some(mem), Some(s), false) = (&cfg.memory, session.as_mut(), outcome.stored_waiting) {
        let partial = if outcome.aborted.is_some() || outcome.error.is_some() { outcome.partial.as_ref() } else { None };
        let steps = with_finished_tasks(&outcome.steps, cfg.background.as_ref());
        if let Err(e) = mem.save_assistant(s, &steps, partial, env.now_ms()).await {
            outcome.write_failed(e);
        }
        #[cfg(feature = "scorers")]
        save_completion_notes(mem, s, &mut outcome, env).await;
    }
    let outcome = finish(outcome, sink);
    index_saved(&cfg, session.as_mut());
    outcome
}

/// Stores the reports of the run's failed completion checks (SPEC §15), after its reply.
#[cfg(feature = "scorers")]
async fn save_completion_notes(mem: &MemoryRun, s: &mut Session, outcome: &mut RunOutcome, env: &dyn Env) {
    if outcome.completion_feedback.is_empty() {
        return;
    }
    let notes = std::mem::take(&mut outcome.completion_feedback);
    let meta = serde_json::json!({ "completionResult": { "passed": false, "suppressFeedback": false } });
    if let Err(e) = mem.save_notes(s, &notes, &meta, env.now_ms(), &mut || env.new_id()).await {
        outcome.write_failed(e);
    }
}

/// A run that wrote a record and ended (not suspended) removes it: with no chunk log, a finished
/// run keeps nothing (SPEC §19.4).
async fn end_record(cfg: &RunConfig, outcome: &mut RunOutcome) {
    // A reconnectable run's record stays with its log; the bindings write how it ended.
    if !outcome.recorded || outcome.suspended || cfg.runs.as_ref().is_some_and(|r| r.retain_ms.is_some()) {
        return;
    }
    let Some(store) = cfg.runs.as_ref().and_then(|r| r.store.as_ref()) else { return };
    if let Some(runs) = store.runs() {
        if let Err(e) = runs.delete_run(&cfg.run_id).await {
            outcome.write_failed(e);
        }
    }
}

/// A delegation's own background limits (SPEC §18.8), when the call is one that goes to the
/// background.
fn delegation_limits(cfg: &RunConfig, bg: &super::background::BackgroundConfig, tool: &str) -> Option<Option<super::background::TaskLimits>> {
    #[cfg(feature = "subagents")]
    return cfg.delegation.as_ref().and_then(|d| d.background_limits(bg, tool));
    #[cfg(not(feature = "subagents"))]
    {
        let _ = (cfg, bg, tool);
        None
    }
}

/// The steps with the real results of background tasks that already ended in place of their
/// placeholders, so a save after a quick task does not bring a placeholder back.
fn with_finished_tasks(steps: &[StepResult], bg: Option<&BackgroundRun>) -> Vec<StepResult> {
    let mut steps = steps.to_vec();
    let Some(bg) = bg else { return steps };
    for r in steps.iter_mut().flat_map(|s| s.tool_results.iter_mut()) {
        if let Some((result, is_error)) = bg.manager.result_of(&r.call.tool_call_id) {
            r.outcome = if is_error { Outcome::Error(result.as_str().unwrap_or_default().to_string()) } else { Outcome::Result { result, is_error: false } };
        }
    }
    steps
}

/// Emits the run's last chunk: `error`, `abort` or `finish`.
fn finish(outcome: RunOutcome, sink: &dyn Sink) -> RunOutcome {
    if let Some(e) = &outcome.error {
        sink.emit(Chunk::Error(e.clone()));
    } else if let Some(reason) = &outcome.aborted {
        sink.emit(Chunk::Abort { reason: reason.clone() });
    } else {
        let last = outcome.steps.last();
        sink.emit(Chunk::Finish {
            reason: outcome.finish_reason(),
            usage: last.map(|s| s.usage).unwrap_or_default(),
            total_usage: outcome.total_usage,
            model_id: last.and_then(|s| s.response.model_id.clone()),
        });
    }
    outcome
}

/// A data part as memory stores it: `{ type, data, id? }` (a UI message's data part).
fn stored_data_part(kind: &str, data: &serde_json::Value, id: Option<&str>) -> serde_json::Value {
    let mut part = serde_json::Map::new();
    part.insert("type".into(), kind.into());
    part.insert("data".into(), data.clone());
    if let Some(id) = id {
        part.insert("id".into(), id.into());
    }
    serde_json::Value::Object(part)
}

/// A value `writer.write()` wrote that is itself a non-transient `data-*` part, as stored.
fn written_data_part(v: &serde_json::Value) -> Option<serde_json::Value> {
    let kind = v.get("type")?.as_str().filter(|t| t.starts_with("data-"))?;
    if v.get("transient").and_then(serde_json::Value::as_bool) == Some(true) {
        return None;
    }
    Some(stored_data_part(kind, v.get("data").unwrap_or(&serde_json::Value::Null), v.get("id").and_then(serde_json::Value::as_str)))
}

impl Stop {
    fn record(self, outcome: &mut RunOutcome, abort: &AbortFlag) {
        match self {
            // An abort ends the run as aborted, even after a failed write.
            Stop::Aborted => {
                outcome.aborted = Some(abort.reason());
                outcome.error = None;
            }
            // What stopped the reply is the better report than an earlier failed write.
            Stop::Failed(e) => outcome.error = Some(e),
        }
    }
}

/// The steps of the run. Returns how the run stopped early, if it did; a step cut short is
/// left in `outcome.partial`. A tripwire ends it with `Ok` and `outcome.tripwire` set.
#[allow(clippy::too_many_arguments)]
async fn run_steps(
    cfg: &RunConfig,
    env: &dyn Env,
    sink: &dyn Sink,
    hooks: &dyn Hooks,
    approvals: &Approvals,
    abort: &AbortFlag,
    pipe: &Pipeline<'_>,
    outcome: &mut RunOutcome,
    mut messages: Vec<ModelMessage>,
    session: &mut Option<Session>,
    mut resumed: Option<suspend::Resume>,
) -> Result<(), Stop> {
    let message_id = outcome.message_id.clone();
    // A resumed run's blocks must not reuse the ids of the blocks streamed before it suspended.
    let mut ids = IdSource::new(match &resumed {
        Some(r) => format!("{message_id}-r{}", r.step_count + 1),
        None => message_id.clone(),
    });
    let max_steps = cfg.max_steps.max(1) as usize;
    // Steps before a resume count towards maxSteps.
    let prior_steps = resumed.as_ref().map_or(0, |r| r.step_count);
    let created_at = resumed.as_ref().map_or_else(|| env.now_ms(), |r| r.created_at);
    let transport = RefCell::new(cfg.transport.clone());
    let cx = CallCx { env, abort, run_id: &cfg.run_id, max_retries: cfg.max_retries, include_raw: cfg.include_raw, transport: &transport };
    loop {
        let step_number = prior_steps + outcome.steps.len();
        let (overrides, request, mut result, mut resume_of) = if let Some(r) = resumed.take() {
            let overrides = StepOverrides::default();
            let request = step_request(cfg, &messages, &overrides);
            (overrides, request, r.step, Some((r.settled, r.waiting, r.decision)))
        } else {
        let mut overrides = match abort.race(hooks.prepare_step(step_number, &outcome.steps)).await {
            Some(Ok(o)) => o.unwrap_or_default(),
            Some(Err(e)) => return Err(Stop::Failed(e)),
            None => return Err(Stop::Aborted),
        };
        let mut step_messages = None;
        if pipe.has(Phase::InputStep) {
            let request = step_request(cfg, &messages, &overrides);
            let args = steps_io::input_step_args(step_number, &outcome.steps, &request, cfg, pipe.procs());
            let changed = match pipe.input_step(args.clone(), sink).await {
                Ok((done, swaps)) => steps_io::step_changes(&args, &done, swaps, &mut overrides, pipe.procs()),
                Err(e) => Err(e),
            };
            match changed {
                Ok(m) => step_messages = m,
                Err(e) => return tripped(e, outcome, sink),
            }
        }
        let request = step_request(cfg, step_messages.as_deref().unwrap_or(&messages), &overrides);
        let step_model = overrides.model.as_ref().filter(|_| cfg!(feature = "processors"));
        let model = step_model.map_or(&*cfg.model, |m| &*m.api.0);
        let mut call = model.prepare(&request).map_err(Stop::Failed)?;
        if step_number == 0 {
            call.warnings.splice(0..0, cfg.setting_warnings.iter().cloned());
        }
        let warnings = std::mem::take(&mut call.warnings);
        let mut step = StepBuilder::new(ids, message_id.clone(), call.body.clone(), warnings.clone(), env.now_ms());
        let start = Chunk::StepStart { message_id: message_id.clone(), request_body: call.body.clone(), warnings };
        if let Err(e) = pipe.emit(start, 0, sink, None).await {
            return tripped(e, outcome, sink);
        }
        // Another model of one step goes over HTTP (the run's socket is its own model's).
        let fetch = RefCell::new(Transport::Fetch);
        let own_cx = CallCx { transport: &fetch, ..cx };
        let step_cx = if step_model.is_some() { &own_cx } else { &cx };
        let mut streamed = stream_step(model, &call, step_cx, sink, &mut step, pipe).await;
        if !matches!(streamed, Err(Ended::Tripwire(_))) {
            let mut out = Vec::new();
            step.close(&mut out, streamed.is_ok());
            for c in out {
                match &streamed {
                    Ok(()) => {
                        if let Err(e) = pipe.emit(c, 0, sink, Some(&mut step)).await {
                            streamed = Err(e);
                        }
                    }
                    // A failed step's blocks close as they did without processors.
                    Err(Ended::Stop(_)) => sink.emit(c),
                    Err(Ended::Tripwire(_)) => {}
                }
            }
        }
        let (next_ids, mut result) = step.into_parts();
        ids = next_ids;
        match streamed {
            Ok(()) => {}
            Err(Ended::Stop(stop)) => {
                outcome.partial = Some(result);
                return Err(stop);
            }
            Err(Ended::Tripwire(t)) => return stopped_step(outcome, result, t, sink, abort).await,
        }
        if pipe.has(Phase::OutputStep) {
            let args = steps_io::output_step_args(step_number, &result, &outcome.steps, &request.messages);
            match pipe.output_step(args, sink).await {
                Ok(()) => {}
                Err(Ended::Stop(stop)) => {
                    outcome.partial = Some(result);
                    return Err(stop);
                }
                Err(Ended::Tripwire(t)) if pipe.take_retry(&t) => {
                    // The rejected step closes, out of `steps`, and runs again with the feedback.
                    let reason = t.reason.clone();
                    sink.emit(Chunk::Tripwire(t));
                    outcome.total_usage = outcome.total_usage.add(&result.usage);
                    result.finish_reason = FinishReason::Tripwire;
                    sink.emit(Chunk::StepFinish { step: Box::new(result), is_continued: true, total_usage: outcome.total_usage });
                    steps_io::add_feedback(&mut messages, &reason);
                    continue;
                }
                Err(Ended::Tripwire(t)) => return stopped_step(outcome, result, t, sink, abort).await,
            }
        }
        (overrides, request, result, None)
        };
        if !result.tool_calls.is_empty() {
            let data = RefCell::new(Vec::new());
            // With output processors, what the tools write waits for them (`with_tool_chunks`).
            let held = processors::ToolChunks::default();
            let emit = |c: Chunk| {
                match &c {
                    Chunk::Data { kind, data: d, id, transient: false } => data.borrow_mut().push(stored_data_part(kind, d, id.as_deref())),
                    // `writer.write({ type: 'data-…', data })` is a data part on the live UI
                    // stream (core::ai_sdk), so memory keeps it too.
                    Chunk::ToolOutput { output, .. } => {
                        if let Some(part) = written_data_part(output) {
                            data.borrow_mut().push(part);
                        }
                    }
                    _ => {}
                }
                if pipe.streams() {
                    held.push(c);
                } else {
                    sink.emit(c);
                }
            };
            let prompt_json = messages_json(&request.messages);
            let memory_tools = match (&cfg.memory, session.as_ref()) {
                (Some(mem), Some(s)) if mem.config.working_memory.is_some() => {
                    Some(MemoryTools { hooks, mem, thread: s.thread.clone(), updated_metadata: RefCell::new(None) })
                }
                _ => None,
            };
            let step_host = overrides.tools.as_ref().filter(|_| cfg!(feature = "processors")).map(|t| steps_io::StepHost { tools: &*t.host.0, hooks });
            let host: &dyn ToolHost = match (&step_host, &memory_tools) {
                (Some(s), _) => s,
                (None, Some(m)) => m,
                (None, None) => hooks,
            };
            #[cfg(feature = "subagents")]
            let delegating = cfg.delegation.as_ref().map(|d| delegation::DelegatingHost {
                inner: host,
                d,
                env,
                abort,
                messages: &request.messages,
                memory: cfg.memory.as_ref().filter(|_| session.is_some()),
                run_id: &cfg.run_id,
                iteration: step_number + 1,
                approvals: Some(approvals),
            });
            #[cfg(feature = "subagents")]
            let host: &dyn ToolHost = match &delegating {
                Some(d) => d,
                None => host,
            };
            let (prior, waited, decision) = match resume_of.take() {
                Some((p, w, d)) => (p, w, Some(d)),
                None => (Vec::new(), Vec::new(), None),
            };
            let agent_id = cfg.runs.as_ref().map(|r| r.agent_id.as_str()).unwrap_or_default();
            let resolved: RefCell<Vec<(auto_resume::AutoWait, String)>> = RefCell::new(Vec::new());
            let calls: Vec<LocalFuture<'_, Option<Settled>>> = result
                .tool_calls
                .iter()
                .map(|call| {
                    let tool = steps_io::step_tool(cfg, &overrides, &call.tool_name);
                    if let Some(rc) = cfg.runs.as_ref().filter(|r| !r.auto_waits.is_empty() && auto_resume::has_extra(call)) {
                        let (prompt, emit, resolved) = (&prompt_json, &emit, &resolved);
                        let (c, of, decided) = match auto_resume::classify(call, &rc.auto_waits) {
                            auto_resume::AutoCall::Refused(message) => {
                                emit(Chunk::ToolError { call: call.clone(), message: message.clone() });
                                let done = ToolResult { call: call.clone(), outcome: Outcome::Error(message) };
                                return Box::pin(std::future::ready(Some(Settled::Done(done)))) as LocalFuture<'_, Option<Settled>>;
                            }
                            auto_resume::AutoCall::Plain(c) => (c, None, None),
                            auto_resume::AutoCall::Resume { call: c, of, decided } => (c, Some(*of), Some(decided)),
                        };
                        return Box::pin(async move {
                            let store = rc.store.as_deref().filter(|_| of.is_some());
                            if let (Some(store), Some(of)) = (store, &of) {
                                if let Err(message) = auto_resume::claim(store, of, env.now_ms()).await {
                                    emit(Chunk::ToolError { call: c.clone(), message: message.clone() });
                                    return Some(Settled::Done(ToolResult { call: c, outcome: Outcome::Error(message) }));
                                }
                            }
                            // Boxed: the poll of `run_call` is then the one the other calls use, not a second copy.
                            let settled = (Box::pin(run_call(&c, tool, cfg.require_tool_approval, host, abort, prompt, emit, None, decided)) as LocalFuture<'_, Option<Settled>>).await;
                            if let (Some(store), Some(of)) = (store, of) {
                                let _ = auto_resume::end(store, &of, settled.is_some().then_some(c.tool_call_id.as_str()), env.now_ms()).await;
                                if settled.is_some() {
                                    resolved.borrow_mut().push((of, c.tool_call_id.clone()));
                                }
                            }
                            settled
                        });
                    }
                    let id = &call.tool_call_id;
                    if let Some(r) = prior.iter().find(|r| r.call.tool_call_id == *id) {
                        return Box::pin(std::future::ready(Some(Settled::Done(r.clone())))) as LocalFuture<'_, Option<Settled>>;
                    }
                    let wait = waited.iter().find(|w| w.call.tool_call_id == *id);
                    let decided = match (wait, &decision) {
                        (Some(w), Some((d_id, d))) if d_id == id => Some((d.clone(), w.suspend_payload.clone())),
                        _ => None,
                    };
                    match (wait, &decided, tool) {
                        (Some(w), None, _) => return Box::pin(std::future::ready(Some(Settled::Waits(w.clone())))),
                        (Some(_), Some(_), None) => {
                            let message = format!("tool {} is not available on agent {agent_id}", call.tool_name);
                            emit(Chunk::ToolError { call: call.clone(), message: message.clone() });
                            let done = ToolResult { call: call.clone(), outcome: Outcome::Error(message) };
                            return Box::pin(std::future::ready(Some(Settled::Done(done))));
                        }
                        _ => {}
                    }
                    let background = match (tool, &cfg.background) {
                        (Some(t), Some(bg)) => match delegation_limits(cfg, &bg.manager.config, &t.name) {
                            Some(limits) => limits,
                            None => bg.manager.config.limits_for(&t.name, t.background.as_ref()),
                        }
                        .map(|limits| BackgroundCall {
                            manager: &bg.manager,
                            limits,
                            agent_id: &bg.agent_id,
                            run_id: &cfg.run_id,
                            thread_id: cfg.memory.as_ref().map(|m| m.thread_id.as_str()),
                            resource_id: cfg.memory.as_ref().map(|m| m.resource_id.as_str()),
                            memory: cfg.memory.as_ref().map(|m| MemoryTarget { store: m.store.clone(), thread_id: m.thread_id.clone() }),
                        }),
                        _ => None,
                    };
                    let fut = run_call(call, tool, cfg.require_tool_approval, host, abort, &prompt_json, &emit, background, decided);
                    Box::pin(fut) as LocalFuture<'_, Option<Settled>>
                })
                .collect();
            let done = match pipe.with_tool_chunks(run_limited(calls, cfg.tool_call_concurrency), &held, sink).await {
                Ok(done) => done,
                Err(Ended::Stop(stop)) => {
                    outcome.partial = Some(result);
                    return Err(stop);
                }
                // The step's other tools are dropped unfinished: nothing runs after a tripwire.
                Err(Ended::Tripwire(t)) => return stopped_step(outcome, result, t, sink, abort).await,
            };
            if done.len() < result.tool_calls.len() || abort.is_aborted() {
                outcome.partial = Some(result);
                return Err(Stop::Aborted);
            }
            // Resumed earlier waits leave the thread's stored message too (SPEC §19.7).
            if let (Some(mem), Some(s)) = (&cfg.memory, session.as_mut()) {
                for (of, by) in resolved.take() {
                    if let Some(m) = auto_resume::resolve_stored(&mut s.history, &of, &by) {
                        if let Err(e) = mem.store.save_messages(std::slice::from_ref(&m)).await {
                            outcome.write_failed(e);
                        }
                    }
                }
            }
            let mut settled: Vec<Settled> = done.into_iter().flatten().collect();
            loop {
                let waits: Vec<crate::core::runs::WaitingCall> =
                    settled.iter().filter_map(|s| if let Settled::Waits(w) = s { Some(w.clone()) } else { None }).collect();
                if waits.is_empty() {
                    break;
                }
                let finished: Vec<ToolResult> = settled.iter().filter_map(|s| if let Settled::Done(r) = s { Some(r.clone()) } else { None }).collect();
                // The record (with its snapshot) is stored before anyone is told the run waits.
                let store = cfg.runs.as_ref().and_then(|rc| rc.store.as_ref().map(|s| (rc, s)));
                if let Some((rc, store)) = store {
                    if let Some(runs) = store.runs() {
                        let mut snap = suspend::snapshot(rc, &messages, &result, &finished, step_number, &outcome.total_usage, created_at);
                        if let Some(s) = session.as_mut() {
                            suspend::snapshot_memory(&mut snap, s, &with_finished_tasks(&outcome.steps, cfg.background.as_ref()), env.now_ms());
                        }
                        let thread = cfg.memory.as_ref().map(|m| (m.thread_id.as_str(), m.resource_id.as_str()));
                        let mut rec = suspend::record(&cfg.run_id, rc, thread, &waits, snap, created_at, env.now_ms());
                        // A resume numbers on after the chunks that announce the waits (and the
                        // `finish` that ends a closed stream).
                        rec.last_seq = sink.seq() + waits.len() as u64 + u64::from(rc.close_on_suspend);
                        let saved = abort.race(runs.save_run(&rec)).await.ok_or(Stop::Aborted)?;
                        if let Err(e) = saved {
                            outcome.partial = Some(result);
                            return Err(Stop::Failed(e));
                        }
                        outcome.recorded = true;
                    }
                }
                // Then the thread's messages: the assistant message so far, with the calls that wait.
                if let (Some(mem), Some(s)) = (&cfg.memory, session.as_mut()) {
                    let steps = suspend::steps_with(&outcome.steps, &result, &finished, &data.borrow(), cfg.background.as_ref());
                    match abort.race(mem.save_waiting(s, &steps, &waits, &cfg.run_id, env.now_ms())).await.ok_or(Stop::Aborted)? {
                        Ok(()) => outcome.stored_waiting = true,
                        Err(e) => outcome.write_failed(e),
                    }
                }
                let close = cfg.runs.as_ref().is_some_and(|r| r.close_on_suspend);
                // Registered before the chunks go out: `onChunk` may decide synchronously.
                let registered: Vec<_> = if close { Vec::new() } else { waits.iter().map(|w| approvals.register(&w.call.tool_call_id)).collect() };
                for w in &waits {
                    sink.emit(suspend::waiting_chunk(w));
                    if w.kind == crate::core::runs::WaitKind::Suspension {
                        host.suspension_stored(&w.call.tool_call_id);
                        outcome.suspend_payload.get_or_insert_with(|| w.suspend_payload.clone().unwrap_or_default());
                    }
                }
                if close {
                    result.tool_results = finished;
                    outcome.suspended = true;
                    outcome.suspended_step = Some(result);
                    return Ok(());
                }
                let again: Vec<LocalFuture<'_, Option<Settled>>> = waits
                    .iter()
                    .zip(registered)
                    .map(|(w, reg)| {
                        let tool = steps_io::step_tool(cfg, &overrides, &w.call.tool_name);
                        let (prompt, emit) = (&prompt_json, &emit);
                        Box::pin(async move {
                            let d = abort.race(reg.decision()).await?;
                            run_call(&w.call, tool, cfg.require_tool_approval, host, abort, prompt, emit, None, Some((d, w.suspend_payload.clone()))).await
                        }) as LocalFuture<'_, Option<Settled>>
                    })
                    .collect();
                let n = again.len();
                let redone = match pipe.with_tool_chunks(run_limited(again, n), &held, sink).await {
                    Ok(done) => done,
                    Err(Ended::Stop(stop)) => {
                        outcome.partial = Some(result);
                        return Err(stop);
                    }
                    Err(Ended::Tripwire(t)) => return stopped_step(outcome, result, t, sink, abort).await,
                };
                if redone.len() < n || abort.is_aborted() {
                    // A reader that cancelled while the run waited leaves it suspended in
                    // storage, to be decided later; an abort ends it (its record goes).
                    if abort.is_detached() && redone.iter().all(Option::is_none) {
                        outcome.recorded = false;
                    } else if let (true, Some(mem), Some(s)) = (outcome.stored_waiting, &cfg.memory, session.as_mut()) {
                        // An abort ends the waits: the stored calls become denied, reason 'aborted'.
                        let mut done: Vec<ToolResult> = finished.clone();
                        done.extend(redone.iter().flatten().filter_map(|s| if let Settled::Done(r) = s { Some(r.clone()) } else { None }));
                        for w in &waits {
                            if !done.iter().any(|r| r.call.tool_call_id == w.call.tool_call_id) {
                                done.push(ToolResult { call: w.call.clone(), outcome: Outcome::Denied { reason: Some("aborted".into()) } });
                            }
                        }
                        let steps = suspend::steps_with(&outcome.steps, &result, &done, &data.borrow(), cfg.background.as_ref());
                        let save = pin!(mem.save_assistant(s, &steps, None, env.now_ms()));
                        if let Either::Left((Err(e), _)) = select(save, env.sleep(memory::ABORT_SAVE_GRACE_MS)).await {
                            outcome.write_failed(e);
                        }
                    }
                    outcome.partial = Some(result);
                    return Err(Stop::Aborted);
                }
                outcome.stored_waiting = false;
                for s in redone.into_iter().flatten() {
                    let id = match &s {
                        Settled::Done(r) => r.call.tool_call_id.clone(),
                        Settled::Waits(w) => w.call.tool_call_id.clone(),
                    };
                    if let Some(slot) = settled.iter_mut().find(|x| matches!(x, Settled::Waits(w) if w.call.tool_call_id == id)) {
                        *slot = s;
                    }
                }
            }
            result.tool_results = settled.into_iter().filter_map(|s| if let Settled::Done(r) = s { Some(r) } else { None }).collect();
            result.data_parts = data.into_inner();
            if let (Some(m), Some(s)) = (memory_tools, session.as_mut()) {
                if let Some(meta) = m.updated_metadata.into_inner() {
                    s.thread.metadata = Some(meta);
                }
            }
        }
        outcome.total_usage = outcome.total_usage.add(&result.usage);
        let answered = !result.tool_results.is_empty()
            && result.tool_results.iter().all(|r| !matches!(r.outcome, Outcome::Client));
        let before_step = messages.len();
        let mut response = result.response_messages();
        #[cfg(feature = "subagents")]
        if let Some(d) = &cfg.delegation {
            d.model_view(&mut response);
        }
        messages.extend(response);
        outcome.steps.push(result);
        // `bail()` in onDelegationComplete: this step's calls settled, no further step.
        #[cfg(feature = "subagents")]
        let bailed = cfg.delegation.as_ref().is_some_and(|d| d.bailed());
        #[cfg(not(feature = "subagents"))]
        let bailed = false;
        let mut go_on = answered && prior_steps + outcome.steps.len() < max_steps && !bailed;
        if go_on {
            go_on = !stop_condition_met(&cfg.stop_when, hooks, &outcome.steps, abort).await;
        }
        #[cfg(feature = "scorers")]
        if let (false, false, Some(check)) = (go_on, bailed, &cfg.completion) {
            go_on = completion_step(cfg, check, env, sink, abort, outcome, &mut messages, session.as_ref(), prior_steps, max_steps).await?;
        }
        let decision = abort.race(hooks.iteration_complete(&outcome.steps, !go_on)).await.ok_or(Stop::Aborted)?;
        if decision.stop || bailed {
            go_on = false;
        } else if let Some(feedback) = decision.feedback {
            if outcome.steps.len() < max_steps {
                messages.push(ModelMessage::User(vec![UserPart::Text(feedback)]));
                go_on = true;
            }
        }
        if let (false, Some(so)) = (go_on, &cfg.structured) {
            let history = match (&so.model, &cfg.memory, session.as_ref()) {
                (Some(m), Some(mem), Some(s)) if m.use_agent => s.history_messages(mem.config.filter_incomplete_tool_calls),
                _ => Vec::new(),
            };
            let settled = abort.race(so.settle(&outcome.steps, &history, sink, &cx)).await.ok_or(Stop::Aborted)?;
            outcome.total_usage = outcome.total_usage.add(&settled.usage);
            outcome.structured = Some(settled);
        }
        let last = outcome.steps.last().expect("a step was just pushed");
        let finish_chunk = Chunk::StepFinish { step: Box::new(last.clone()), is_continued: go_on, total_usage: outcome.total_usage };
        if let Err(e) = pipe.emit(finish_chunk, 0, sink, None).await {
            outcome.tripwire_step = matches!(e, Ended::Tripwire(_));
            return tripped(e, outcome, sink);
        }
        // `onStepFinish` may never settle: an abort must still end the run.
        abort.race(sink.step_finished(last)).await.ok_or(Stop::Aborted)?;
        if let (Some(mem), Some(s)) = (&cfg.memory, session.as_mut()) {
            if mem.save_per_step && go_on {
                if let Err(e) = mem.save_assistant(s, &outcome.steps, None, env.now_ms()).await {
                    outcome.write_failed(e);
                }
            }
        }
        if go_on {
            continue;
        }
        if !pipe.has(Phase::OutputResult) {
            return Ok(());
        }
        match pipe.output_result(steps_io::result_args(outcome), sink).await {
            Ok(instead) => {
                outcome.stored_instead = steps_io::parse_stored(instead).map_err(Stop::Failed)?;
                return Ok(());
            }
            Err(Ended::Tripwire(t)) if pipe.take_retry(&t) => {
                // The final step was not accepted: it leaves `steps` and runs again.
                let reason = t.reason.clone();
                sink.emit(Chunk::Tripwire(t));
                outcome.steps.pop();
                messages.truncate(before_step);
                steps_io::add_feedback(&mut messages, &reason);
            }
            Err(e) => {
                outcome.tripwire_step = matches!(e, Ended::Tripwire(_));
                return tripped(e, outcome, sink);
            }
        }
    }
}

/// The completion check after a step that would end the run (SPEC §15), when that step made no
/// tool calls and the check has scorers: its `is-task-complete` chunk, `onComplete`, and on a
/// failure with steps left the feedback for another step. Whether the loop goes on.
#[cfg(feature = "scorers")]
#[allow(clippy::too_many_arguments)]
async fn completion_step(
    cfg: &RunConfig,
    check: &super::completion::CompletionCheck,
    env: &dyn Env,
    sink: &dyn Sink,
    abort: &AbortFlag,
    outcome: &mut RunOutcome,
    messages: &mut Vec<ModelMessage>,
    session: Option<&Session>,
    prior_steps: usize,
    max_steps: usize,
) -> Result<bool, Stop> {
    use super::completion::{context, run_check, ContextOf};
    let judged = outcome.steps.last().is_some_and(|s| s.tool_calls.is_empty());
    if !judged || check.scorers.is_empty() {
        return Ok(false);
    }
    let iteration = prior_steps + outcome.steps.len();
    let given = &cfg.request.messages;
    let original = original_task(&given[cfg.input_start.min(given.len())..]).unwrap_or_else(|| "Unknown task".into());
    let ctx = context(ContextOf {
        run_id: &cfg.run_id,
        iteration,
        max_steps,
        original_task: &original,
        steps: &outcome.steps,
        messages: messages_json(messages),
        thread_id: session.map(|s| s.thread.id.as_str()),
        resource_id: session.map(|s| s.thread.resource_id.as_str()),
    });
    let result = abort.race(run_check(check, &ctx, env)).await.ok_or(Stop::Aborted)?;
    abort.race(check.host.completed(&result.on_complete_json())).await.ok_or(Stop::Aborted)?;
    let max_reached = iteration >= max_steps;
    let payload = result.chunk_payload(iteration, max_reached, check.suppress_feedback);
    sink.emit(Chunk::IsTaskComplete { payload: Box::new(payload) });
    if result.passed || max_reached {
        return Ok(false);
    }
    let feedback = result.feedback();
    messages.push(ModelMessage::Assistant(vec![super::model::AssistantPart::Text(feedback.clone(), None)]));
    if !check.suppress_feedback {
        outcome.completion_feedback.push(feedback);
    }
    Ok(true)
}

/// The first user text of the caller's input (the task a completion check judges against).
fn original_task(input: &[ModelMessage]) -> Option<String> {
    input.iter().find_map(|m| match m {
        ModelMessage::User(parts) => parts.iter().find_map(|p| match p {
            UserPart::Text(t) if !t.is_empty() => Some(t.clone()),
            _ => None,
        }),
        _ => None,
    })
}

pub(super) fn is_active(cfg: &RunConfig, overrides: &StepOverrides, name: &str) -> bool {
    match overrides.active_tools.as_ref().or(cfg.active_tools.as_ref()) {
        Some(active) => active.iter().any(|a| a == name),
        None => true,
    }
}

/// The request of one step: the conversation so far, the tools active for it, and what
/// `prepareStep` changed.
fn step_request(cfg: &RunConfig, messages: &[ModelMessage], overrides: &StepOverrides) -> ModelRequest {
    let mut request = cfg.request.clone();
    request.messages = match &overrides.system {
        Some(system) => system
            .iter()
            .map(|s| ModelMessage::System(s.clone()))
            .chain(messages.iter().skip_while(|m| matches!(m, ModelMessage::System(_))).cloned())
            .collect(),
        None => messages.to_vec(),
    };
    if let Some(settings) = &overrides.settings {
        request.settings = settings.clone();
    }
    // Only processInputStep sets a step's own model, tools, providerOptions and structured output.
    let own = cfg!(feature = "processors");
    if let Some(m) = overrides.model.as_ref().filter(|_| own) {
        request.model_id = m.name.clone();
    }
    if let Some(po) = overrides.provider_options.as_ref().filter(|_| own) {
        request.provider_options = Some(po.clone());
    }
    let tools = overrides.tools.as_ref().filter(|_| own).map_or(&cfg.tools, |t| &t.defs);
    request.tools = tools.iter().filter(|t| is_active(cfg, overrides, &t.name)).map(ToolDef::spec).collect();
    request.tool_choice = overrides.tool_choice.clone().or_else(|| cfg.tool_choice.clone());
    let structured = overrides.structured.as_ref().filter(|_| own).map(|s| &s.0);
    if let Some(so) = structured.or(cfg.structured.as_ref()) {
        so.apply(&mut request);
    }
    request
}

async fn stop_condition_met(conditions: &[StopCondition], hooks: &dyn Hooks, steps: &[StepResult], abort: &AbortFlag) -> bool {
    for c in conditions {
        let met = match c {
            StopCondition::StepCount(n) => steps.len() >= *n,
            StopCondition::HasToolCall(name) => steps.last().is_some_and(|s| s.tool_calls.iter().any(|t| &t.tool_name == name)),
            StopCondition::Custom(n) => abort.race(hooks.stop_when(*n, steps)).await.unwrap_or(true),
        };
        if met {
            return true;
        }
    }
    false
}

/// Sends one step's call and streams its response into `step`, emitting chunks as they form
/// (through the output processors, event by event, so what they change is what `step` keeps).
async fn stream_step(
    model: &dyn ModelApi,
    call: &super::model_api::Call,
    cx: &CallCx<'_>,
    sink: &dyn Sink,
    step: &mut StepBuilder,
    pipe: &Pipeline<'_>,
) -> Result<(), Ended> {
    let abort = cx.abort;
    let mut source: Box<dyn EventSource + '_> = abort.race(model.open(call, cx)).await.ok_or(Stop::Aborted)??;
    let mut events = Vec::new();
    let mut chunks = Vec::new();
    loop {
        let more = abort.race(source.next(&mut events)).await.ok_or(Stop::Aborted)?;
        // Events that came before a failure still reach the user.
        for ev in std::mem::take(&mut events) {
            let applied = step.apply(ev, &mut chunks);
            for c in chunks.drain(..) {
                pipe.emit(c, 0, sink, Some(&mut *step)).await?;
            }
            applied.map_err(Stop::Failed)?;
        }
        if !more.map_err(Stop::Failed)? {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests;
