//! Sub-agents (SPEC §18): each agent of a supervisor's `agents` is a tool `agent-<key>`; calling
//! it runs that agent's own loop (this module's `run`, recursively) with the supervisor's
//! conversation as context, forwards every chunk of it live as `tool-output`, and answers the
//! supervisor's model with the sub-agent's text.
//!
//! The host (the bindings, or a native test) knows the agents: it resolves them at the start of a
//! run and builds a sub-agent's run on request (`Delegator`). The rules — what the sub-agent
//! sees, where its messages are stored, the depth cap, the result, what the model reads, the
//! hooks' effects — live here.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::{run, Hooks, RunConfig, RunOutcome, Sink};
use crate::core::abort::AbortFlag;
use crate::core::chunk::{usage_json, Chunk};
use crate::core::env::{Env, LocalFuture};
use crate::core::error::AgentError;
use crate::core::memory::{MemoryConfig, MemoryRun};
use crate::core::model::{AssistantPart, FinishReason, ModelMessage, ToolResultPart, UserPart};
use crate::core::step::{messages_json, StepResult, ToolCall};
use crate::core::tools::{Approval, Approvals, ToolCtx, ToolDef, ToolHost, ToolResult, Validation};

/// How deep delegations may nest: the ninth sub-agent in a chain is refused.
pub const MAX_DEPTH: u32 = 8;
/// The tool name of a sub-agent is this prefix and its key.
pub const TOOL_PREFIX: &str = "agent-";

/// The input of every delegation tool (§18.2).
const INPUT_SCHEMA: &str = r#"{"type":"object","properties":{"prompt":{"type":"string","description":"The task for this agent, in full: it does not see your instructions."},"instructions":{"type":["string","null"],"description":"Extra instructions for this task (optional)."},"maxSteps":{"type":["integer","null"],"minimum":1,"description":"The most steps the agent may take (optional)."}},"required":["prompt"]}"#;

/// One entry of `agents`, as the model is offered it.
#[derive(Clone, Debug, PartialEq)]
pub struct SubAgent {
    pub key: String,
    /// The sub-agent's `id` (`primitiveId`, and the name in a failure message).
    pub id: String,
    pub description: Option<String>,
    /// The sub-agent has a tool with `background.enabled`: its delegations go to the background.
    pub background: bool,
}

impl SubAgent {
    pub fn tool_name(&self) -> String {
        format!("{TOOL_PREFIX}{}", self.key)
    }

    /// The tool the model sees (§18.2).
    pub fn tool_def(&self) -> ToolDef {
        ToolDef {
            name: self.tool_name(),
            description: Some(self.description.clone().filter(|d| !d.is_empty()).unwrap_or_else(|| format!("Agent: {}", self.key))),
            // Parsed from text: the `json!` tree of this schema costs 2 KB of wasm.
            parameters: serde_json::from_str(INPUT_SCHEMA).unwrap_or_default(),
            validation: Validation::JsonSchema,
            approval: Approval::Never,
            client: false,
            background: None,
        }
    }
}

/// A key of `agents` is valid as part of a tool name: `/^[A-Za-z0-9_-]{1,58}$/`.
pub fn valid_key(key: &str) -> bool {
    (1..=58).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The sub-agent's instructions: its own, with the call's appended after a blank line.
pub fn with_instructions(own: &[String], extra: Option<&str>) -> Vec<String> {
    let Some(extra) = extra.filter(|e| !e.is_empty()) else { return own.to_vec() };
    let mut out = own.to_vec();
    match out.last_mut() {
        Some(last) => {
            last.push_str("\n\n");
            last.push_str(extra);
        }
        None => out.push(extra.to_string()),
    }
    out
}

/// The sub-run's step limit: the call's value capped at the sub-agent's `defaultOptions.maxSteps`;
/// a hook's `modifiedMaxSteps` as given. `None`: the sub-agent's own default.
pub fn max_steps(asked: Option<u32>, from_hook: bool, agent_default: Option<u32>) -> Option<u32> {
    match (asked, agent_default) {
        (Some(a), Some(d)) if !from_hook => Some(a.min(d)),
        (a, _) => a,
    }
}

/// What the sub-agent is told of the supervisor's conversation by default: user and assistant
/// messages with their text, file and reasoning parts. System messages (instructions,
/// directives, working memory), tool calls and tool results are never forwarded.
pub fn default_context(messages: &[ModelMessage]) -> Vec<ModelMessage> {
    messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::User(parts) => Some(ModelMessage::User(parts.clone())).filter(|_| !parts.is_empty()),
            ModelMessage::Assistant(parts) => {
                let kept: Vec<AssistantPart> = parts.iter().filter(|p| !matches!(p, AssistantPart::ToolCall { .. })).cloned().collect();
                (!kept.is_empty()).then_some(ModelMessage::Assistant(kept))
            }
            ModelMessage::System(_) | ModelMessage::Tool(_) => None,
        })
        .collect()
}

/// The arguments of a delegation call (already checked against the tool's schema).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DelegationArgs {
    pub prompt: String,
    pub instructions: Option<String>,
    pub max_steps: Option<u32>,
}

impl DelegationArgs {
    pub fn of(args: &Value) -> Self {
        DelegationArgs {
            prompt: args.get("prompt").and_then(Value::as_str).unwrap_or_default().to_string(),
            instructions: args.get("instructions").and_then(Value::as_str).map(str::to_owned),
            max_steps: args.get("maxSteps").and_then(Value::as_u64).map(|n| n.clamp(1, u32::MAX as u64) as u32),
        }
    }
}

/// What the host is asked to build: one sub-agent run.
#[derive(Clone, Debug, PartialEq)]
pub struct SubRunSpec {
    pub key: String,
    pub tool_call_id: String,
    pub prompt: String,
    /// Appended to the sub-agent's instructions (`with_instructions`).
    pub instructions: Option<String>,
    pub max_steps: Option<u32>,
    /// `max_steps` came from `onDelegationStart`'s `modifiedMaxSteps` (not capped).
    pub max_steps_from_hook: bool,
    /// The conversation forwarded as the run's `context`.
    pub context: Vec<ModelMessage>,
    /// The thread and resource the sub-agent's messages go to, when the supervisor has a thread.
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
}

/// A sub-agent run, built by the host: its config (model, tools, prompt from the spec), its tool
/// host, approvals and abort flag.
pub struct SubRun {
    pub cfg: RunConfig,
    pub hooks: Box<dyn Hooks>,
    pub approvals: Rc<Approvals>,
    pub abort: AbortFlag,
    /// The sub-agent's own memory (its store and options), when it has one.
    pub own_memory: Option<(Rc<dyn crate::core::memory::Store>, MemoryConfig)>,
    /// Called when the run ended (the host forgets its approvals).
    pub done: Box<dyn FnOnce()>,
}

/// The agents behind a supervisor run: implemented by the bindings, and by native tests.
pub trait Delegator {
    /// The supervisor's `agents`, resolved at the start of its run (a function of the request
    /// context may be asynchronous). `Err`: the run fails with it.
    fn agents(&self) -> LocalFuture<'_, Result<Vec<SubAgent>, AgentError>>;
    /// Builds the run of the sub-agent `spec.key`. `Err`: the message of what went wrong.
    fn sub_run(&self, spec: &SubRunSpec) -> Result<SubRun, String>;
    /// `delegation.onDelegationStart`.
    fn on_start<'a>(&'a self, _ctx: &'a StartCtx) -> LocalFuture<'a, Result<Option<StartDecision>, HookError>> {
        Box::pin(async { Ok(None) })
    }
    /// `delegation.messageFilter`: `Ok(None)` when there is none.
    fn message_filter<'a>(&'a self, _ctx: &'a StartCtx) -> LocalFuture<'a, Result<Option<Vec<ModelMessage>>, HookError>> {
        Box::pin(async { Ok(None) })
    }
    /// `delegation.onDelegationComplete`.
    fn on_complete<'a>(&'a self, _ctx: &'a CompleteCtx) -> LocalFuture<'a, Result<Option<CompleteDecision>, HookError>> {
        Box::pin(async { Ok(None) })
    }
    /// A hook failed: `error` is its `delegationHookErrors` entry; `warn` under the 'warn' strategy.
    fn hook_failed(&self, _error: &Value, _warn: bool) {}
}

/// What a delegation hook threw.
#[derive(Clone, Debug, PartialEq)]
pub struct HookError {
    pub name: String,
    pub message: String,
}

/// What the start hooks are told (`messageFilter` gets the same, with the modified prompt).
#[derive(Clone, Debug, PartialEq)]
pub struct StartCtx {
    pub primitive_id: String,
    pub prompt: String,
    pub instructions: Option<String>,
    pub max_steps: Option<u32>,
    /// The supervisor's step, from 1.
    pub iteration: usize,
    pub run_id: String,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    pub parent_agent_id: String,
    pub parent_agent_name: String,
    pub tool_call_id: String,
    /// The supervisor's conversation (model messages as JSON, without system messages).
    pub messages: Value,
}

/// What `onDelegationStart` returned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StartDecision {
    pub proceed: Option<bool>,
    pub rejection_reason: Option<String>,
    pub modified_prompt: Option<String>,
    pub modified_instructions: Option<String>,
    pub modified_max_steps: Option<u32>,
}

/// What `onDelegationComplete` is told.
#[derive(Clone, Debug, PartialEq)]
pub struct CompleteCtx {
    pub primitive_id: String,
    pub prompt: String,
    pub result: Value,
    pub duration_ms: f64,
    pub success: bool,
    pub error: Option<String>,
    pub iteration: usize,
    pub run_id: String,
    pub tool_call_id: String,
    pub parent_agent_id: String,
    pub parent_agent_name: String,
    /// The sub-agent's prompt and reply (model messages as JSON).
    pub messages: Value,
}

/// What `onDelegationComplete` returned (`bail` when it called `bail()`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompleteDecision {
    pub feedback: Option<String>,
    pub result_text: Option<String>,
    pub bail: bool,
}

/// `hookErrorStrategy`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum HookErrorStrategy {
    #[default]
    Warn,
    Throw,
}

pub const DEFAULT_REJECTION: &str = "Delegation rejected by onDelegationStart hook";

/// The delegation part of a run: its host, where the run sits in a chain, and what it decided.
pub struct Delegation {
    pub host: Rc<dyn Delegator>,
    /// 0 for a run started by the caller; a sub-agent's run is one deeper than its supervisor's.
    pub depth: u32,
    /// `includeSubAgentToolResultsInModelContext`: the model reads the whole result as JSON.
    pub include_tool_results: bool,
    pub hook_error_strategy: HookErrorStrategy,
    /// The supervisor's id and name (`parentAgentId`, `parentAgentName`).
    pub parent_id: String,
    pub parent_name: String,
    /// What a background delegation runs on (it outlives the run's borrowed `Env`); without it,
    /// delegations stay in the foreground.
    pub env: Option<Rc<dyn Env>>,
    /// Whether this run may hand delegations to the background (not a delegated run).
    pub allow_background: bool,
    agents: RefCell<Vec<SubAgent>>,
    /// What the model reads for a delegation call instead of its tool result, by call id.
    views: RefCell<Vec<(String, Value, bool)>>,
    /// `delegationHookErrors` so far.
    hook_errors: RefCell<Vec<Value>>,
    /// `onDelegationComplete` feedback to store: (text, tool call id, sub-agent id).
    feedback: RefCell<Vec<(String, String, String)>>,
    /// `bail()` was called: no further supervisor step.
    bailed: Cell<bool>,
}

impl Delegation {
    pub fn new(host: Rc<dyn Delegator>) -> Self {
        Delegation {
            host,
            depth: 0,
            include_tool_results: false,
            hook_error_strategy: HookErrorStrategy::Warn,
            parent_id: String::new(),
            parent_name: String::new(),
            env: None,
            allow_background: true,
            agents: RefCell::new(Vec::new()),
            views: RefCell::new(Vec::new()),
            hook_errors: RefCell::new(Vec::new()),
            feedback: RefCell::new(Vec::new()),
            bailed: Cell::new(false),
        }
    }

    /// The background limits of a call of `tool`: `None` when `tool` is not a delegation tool
    /// (the usual rule applies), `Some(None)` when it runs in the foreground. A delegation goes to
    /// the background when `backgroundTasks.tools` names its key (or `agent-<key>`), or is
    /// `'all'`, or the sub-agent has a background tool.
    pub(super) fn background_limits(&self, config: &crate::core::background::BackgroundConfig, tool: &str) -> Option<Option<crate::core::background::TaskLimits>> {
        let agent = self.agent_for(tool)?;
        if !self.allow_background || self.env.is_none() {
            return Some(None);
        }
        let own = agent.background.then_some(crate::core::background::ToolBackground { enabled: Some(true), timeout_ms: None, max_retries: None });
        Some(config.limits_for(&agent.key, own.as_ref()).or_else(|| config.limits_for(tool, own.as_ref())))
    }

    /// A fresh delegation state for one background task (its hooks' effects on the run that
    /// dispatched it are over by then).
    fn for_task(&self) -> Delegation {
        let mut d = Delegation::new(self.host.clone());
        d.depth = self.depth;
        d.include_tool_results = self.include_tool_results;
        d.hook_error_strategy = self.hook_error_strategy;
        d.parent_id = self.parent_id.clone();
        d.parent_name = self.parent_name.clone();
        *d.agents.borrow_mut() = self.agents.borrow().clone();
        d
    }

    pub(super) fn bailed(&self) -> bool {
        self.bailed.get()
    }

    pub(super) fn take_hook_errors(&self) -> Vec<Value> {
        self.hook_errors.take()
    }

    /// Stores the feedback of `onDelegationComplete` in the supervisor's thread, after this
    /// run's messages, as assistant text marked `delegationFeedback`.
    pub(super) async fn save_feedback(&self, mem: &MemoryRun, session: &mut crate::core::memory::Session, env: &dyn Env) -> Result<(), AgentError> {
        let feedback = self.feedback.take();
        if feedback.is_empty() || !mem.writes() {
            return Ok(());
        }
        let messages: Vec<crate::core::memory::StoredMessage> = feedback
            .into_iter()
            .map(|(text, tool_call_id, primitive_id)| crate::core::memory::StoredMessage {
                id: env.new_id(),
                thread_id: session.thread.id.clone(),
                resource_id: mem.resource_id.clone(),
                role: "assistant".into(),
                created_at: session.next_time(env.now_ms()),
                parts: vec![json!({ "type": "text", "text": text })],
                metadata: Some(json!({ "delegationFeedback": { "toolCallId": tool_call_id, "primitiveId": primitive_id } })),
            })
            .collect();
        mem.store.save_messages(&messages).await
    }

    /// Records a hook's failure; `Err` (the call's failure message) under the 'throw' strategy.
    fn hook_failed(&self, hook: &str, e: HookError, agent: &SubAgent, tool_call_id: &str, run_id: &str) -> Result<(), String> {
        let entry = json!({ "hook": hook, "primitiveId": agent.id, "toolCallId": tool_call_id, "runId": run_id, "name": e.name, "message": e.message });
        self.hook_errors.borrow_mut().push(entry.clone());
        let throw = self.hook_error_strategy == HookErrorStrategy::Throw;
        self.host.hook_failed(&entry, !throw);
        if throw {
            return Err(failed(&agent.id, &format!("{hook} threw: {}", e.message)));
        }
        Ok(())
    }

    /// Resolves the agents and returns their tools.
    pub(super) async fn resolve(&self) -> Result<Vec<ToolDef>, AgentError> {
        let agents = self.host.agents().await?;
        let tools = agents.iter().map(SubAgent::tool_def).collect();
        *self.agents.borrow_mut() = agents;
        Ok(tools)
    }

    fn agent_for(&self, tool_name: &str) -> Option<SubAgent> {
        let key = tool_name.strip_prefix(TOOL_PREFIX)?;
        self.agents.borrow().iter().find(|a| a.key == key).cloned()
    }

    /// Puts what the model reads for delegation calls into a step's response messages.
    pub(super) fn model_view(&self, messages: &mut [ModelMessage]) {
        let views = self.views.borrow();
        if views.is_empty() {
            return;
        }
        for m in messages.iter_mut() {
            let ModelMessage::Tool(parts) = m else { continue };
            for part in parts.iter_mut() {
                if let Some((_, v, is_error)) = views.iter().find(|(id, _, _)| *id == part.tool_call_id) {
                    *part = ToolResultPart { result: v.clone(), is_error: *is_error, ..part.clone() };
                }
            }
        }
    }
}

/// The run's tool host with the delegation tools in front of the others.
pub(super) struct DelegatingHost<'a> {
    pub inner: &'a dyn ToolHost,
    pub d: &'a Delegation,
    pub env: &'a dyn Env,
    pub abort: &'a AbortFlag,
    /// The conversation of this step, as sent to the model.
    pub messages: &'a [ModelMessage],
    pub memory: Option<&'a MemoryRun>,
    pub run_id: &'a str,
    /// The supervisor's step, from 1.
    pub iteration: usize,
    /// The supervisor's approvals: a sub-agent's approval is decided through them.
    pub approvals: Option<&'a Approvals>,
}

impl ToolHost for DelegatingHost<'_> {
    fn execute<'a>(&'a self, ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>> {
        match self.d.agent_for(&ctx.call.tool_name) {
            Some(agent) => Box::pin(self.delegate(agent, ctx)),
            None => self.inner.execute(ctx),
        }
    }
    fn validate<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Value, String>> {
        self.inner.validate(call)
    }
    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, bool> {
        self.inner.needs_approval(call)
    }
    fn before_tool_call<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Option<Value>, String>> {
        self.inner.before_tool_call(call)
    }
    fn after_tool_call<'a>(&'a self, result: &'a ToolResult) -> LocalFuture<'a, ()> {
        self.inner.after_tool_call(result)
    }
    fn take_suspension(&self, tool_call_id: &str) -> Option<crate::core::tools::Suspension> {
        self.inner.take_suspension(tool_call_id)
    }
    fn suspension_stored(&self, tool_call_id: &str) {
        self.inner.suspension_stored(tool_call_id)
    }
    fn task_runner(&self, tool: &str) -> Option<Rc<dyn crate::core::background::TaskRunner>> {
        let Some(agent) = self.d.agent_for(tool) else { return self.inner.task_runner(tool) };
        let env = self.d.env.clone()?;
        Some(Rc::new(TaskDelegation(Rc::new(TaskJob {
            d: self.d.for_task(),
            env,
            agent,
            messages: self.messages.to_vec(),
            memory: self.memory.cloned(),
            run_id: self.run_id.to_string(),
            iteration: self.iteration,
        }))))
    }
}

/// What a background delegation owns: everything the foreground one borrows from its run.
struct TaskJob {
    d: Delegation,
    env: Rc<dyn Env>,
    agent: SubAgent,
    messages: Vec<ModelMessage>,
    memory: Option<MemoryRun>,
    run_id: String,
    iteration: usize,
}

/// A delegation as a background task (§18.8): the same delegation, its chunks as the task's
/// output (each the 18.4 `tool-output` payload), cancelled or timed out through the task's flag.
struct TaskDelegation(Rc<TaskJob>);

impl crate::core::background::TaskRunner for TaskDelegation {
    fn execute(&self, task: crate::core::background::TaskRecord, abort: AbortFlag, emit: Rc<dyn Fn(Value)>) -> LocalFuture<'static, Result<Value, String>> {
        let job = self.0.clone();
        Box::pin(async move {
            let call = ToolCall { tool_call_id: task.tool_call_id.clone(), tool_name: task.tool_name.clone(), args: task.args.clone() };
            let host = DelegatingHost {
                inner: &crate::core::hooks::NoHooks,
                d: &job.d,
                env: &*job.env,
                abort: &abort,
                messages: &job.messages,
                memory: job.memory.as_ref(),
                run_id: &job.run_id,
                iteration: job.iteration,
                approvals: None,
            };
            let forward = |c: Chunk| match c {
                Chunk::ToolOutput { output, .. } => emit(output),
                other => emit(chunk_json(&other, &job.run_id)),
            };
            let messages = Value::Null;
            host.delegate(job.agent.clone(), ToolCtx { call: &call, messages: &messages, emit: &forward, resume: None }).await
        })
    }
}

/// The message of a failed delegation, as the model and the stream see it.
pub fn failed(agent_id: &str, message: &str) -> String {
    format!("Sub-agent {agent_id} failed: {message}")
}

impl DelegatingHost<'_> {
    async fn delegate(&self, agent: SubAgent, ctx: ToolCtx<'_>) -> Result<Value, String> {
        let d = self.d;
        let depth = d.depth + 1;
        if depth > MAX_DEPTH {
            return Err(format!("delegation depth {MAX_DEPTH} exceeded"));
        }
        let call = ctx.call;
        let id = call.tool_call_id.as_str();
        let args = DelegationArgs::of(&call.args);
        let ids = self.memory.map(|m| (format!("{}-{}", m.thread_id, id), format!("{}-{}", m.resource_id, agent.key)));
        let conversation: Vec<ModelMessage> = self.messages.iter().filter(|m| !matches!(m, ModelMessage::System(_))).cloned().collect();
        let mut start = StartCtx {
            primitive_id: agent.id.clone(),
            prompt: args.prompt,
            instructions: args.instructions,
            max_steps: args.max_steps,
            iteration: self.iteration,
            run_id: self.run_id.to_string(),
            thread_id: self.memory.map(|m| m.thread_id.clone()),
            resource_id: self.memory.map(|m| m.resource_id.clone()),
            parent_agent_id: d.parent_id.clone(),
            parent_agent_name: d.parent_name.clone(),
            tool_call_id: id.to_string(),
            messages: messages_json(&conversation),
        };
        let mut from_hook = false;
        match d.host.on_start(&start).await {
            Ok(None) => {}
            Ok(Some(decision)) => {
                if decision.proceed == Some(false) {
                    let reason = decision.rejection_reason.filter(|r| !r.is_empty()).unwrap_or_else(|| DEFAULT_REJECTION.into());
                    let text = format!("[Delegation Rejected] {reason}");
                    let delta = Chunk::TextDelta { id: self.env.new_id(), text: text.clone() };
                    (ctx.emit)(Chunk::ToolOutput { tool_call_id: id.to_string(), tool_name: call.tool_name.clone(), output: chunk_json(&delta, self.run_id) });
                    d.views.borrow_mut().push((id.to_string(), Value::String(text.clone()), false));
                    return Ok(json!({ "text": text }));
                }
                if let Some(p) = decision.modified_prompt {
                    start.prompt = p;
                }
                if let Some(i) = decision.modified_instructions {
                    start.instructions = Some(i);
                }
                if let Some(n) = decision.modified_max_steps {
                    start.max_steps = Some(n.max(1));
                    from_hook = true;
                }
            }
            Err(e) => d.hook_failed("onDelegationStart", e, &agent, id, self.run_id)?,
        }
        let context = match d.host.message_filter(&start).await {
            Ok(Some(chosen)) => default_context(&chosen),
            Ok(None) => default_context(self.messages),
            Err(e) => {
                d.hook_failed("messageFilter", e, &agent, id, self.run_id)?;
                default_context(self.messages)
            }
        };
        let spec = SubRunSpec {
            key: agent.key.clone(),
            tool_call_id: id.to_string(),
            prompt: start.prompt.clone(),
            instructions: start.instructions.clone(),
            max_steps: start.max_steps,
            max_steps_from_hook: from_hook,
            context,
            thread_id: ids.as_ref().map(|i| i.0.clone()),
            resource_id: ids.as_ref().map(|i| i.1.clone()),
        };
        let began = self.env.now_ms();
        let (outcome, thread) = match self.run_sub(&spec, ids.as_ref(), depth, ctx.emit, call).await {
            Ok(done) => done,
            Err(message) => (RunOutcome { error: Some(AgentError::Validation { message }), ..Default::default() }, None),
        };
        let failure = failure(&outcome);
        let mut result = result_json(&outcome, thread.as_ref());
        if failure.is_some() {
            result["text"] = Value::String(String::new());
        }
        let complete = CompleteCtx {
            primitive_id: agent.id.clone(),
            prompt: spec.prompt.clone(),
            result: result.clone(),
            duration_ms: (self.env.now_ms() - began).max(0.0),
            success: failure.is_none(),
            error: failure.clone(),
            iteration: self.iteration,
            run_id: self.run_id.to_string(),
            tool_call_id: id.to_string(),
            parent_agent_id: d.parent_id.clone(),
            parent_agent_name: d.parent_name.clone(),
            messages: messages_json(&[prompt_message(&spec.prompt), ModelMessage::Assistant(vec![AssistantPart::Text(outcome.text(), None)])]),
        };
        let mut result_text = None;
        match d.host.on_complete(&complete).await {
            Ok(None) => {}
            Ok(Some(decision)) => {
                if let Some(f) = decision.feedback.filter(|f| !f.is_empty()) {
                    d.feedback.borrow_mut().push((f, id.to_string(), agent.id.clone()));
                }
                if decision.bail {
                    d.bailed.set(true);
                }
                result_text = decision.result_text;
            }
            Err(e) => d.hook_failed("onDelegationComplete", e, &agent, id, self.run_id)?,
        }
        if let Some(message) = failure {
            if let Some(t) = result_text {
                d.views.borrow_mut().push((id.to_string(), Value::String(t), true));
            }
            return Err(failed(&agent.id, &message));
        }
        match result_text {
            Some(t) => d.views.borrow_mut().push((id.to_string(), Value::String(t), false)),
            None if !d.include_tool_results => d.views.borrow_mut().push((id.to_string(), result["text"].clone(), false)),
            None => {}
        }
        Ok(result)
    }

    /// Builds and runs the sub-agent's run, forwarding its chunks; its outcome and thread.
    async fn run_sub(
        &self,
        spec: &SubRunSpec,
        ids: Option<&(String, String)>,
        depth: u32,
        emit: &dyn Fn(Chunk),
        call: &ToolCall,
    ) -> Result<(RunOutcome, Option<(String, String)>), String> {
        let mut sub = self.d.host.sub_run(spec)?;
        let own = sub.own_memory.take();
        let has_own = own.is_some();
        sub.cfg.memory = match (ids, self.memory) {
            (Some((thread_id, resource_id)), Some(sup)) => {
                let (store, config) = own.unwrap_or_else(|| {
                    // Stored beside the supervisor's thread, never loaded back.
                    (sup.store.clone(), MemoryConfig { last_messages: 0, working_memory: None, ..MemoryConfig::default() })
                });
                Some(MemoryRun { store, thread_id: thread_id.clone(), resource_id: resource_id.clone(), title: None, metadata: None, config, save_per_step: false })
            }
            _ => None,
        };
        if !has_own || sub.cfg.memory.is_none() {
            sub.cfg.title = None;
        }
        if let Some(d) = &mut sub.cfg.delegation {
            d.depth = depth;
            d.allow_background = false;
        }
        self.abort.link(&sub.abort);
        let forward = Forward {
            emit,
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            run_id: sub.cfg.run_id.clone(),
            agent_id: sub.cfg.runs.as_ref().map_or_else(|| spec.key.clone(), |r| r.agent_id.clone()),
            abort: sub.abort.clone(),
            ended: Cell::new(false),
            approvals: self.approvals.map(|outer| (outer, sub.approvals.clone())),
        };
        let thread = sub.cfg.memory.as_ref().map(|m| (m.thread_id.clone(), m.resource_id.clone()));
        let outcome = run(sub.cfg, self.env, &forward, &*sub.hooks, &sub.approvals, &sub.abort).await;
        forward.ended.set(true);
        (sub.done)();
        Ok((outcome, thread))
    }
}

/// Why a finished sub-run counts as failed: an error, an abort, or a finish reason 'error'.
fn failure(outcome: &RunOutcome) -> Option<String> {
    if let Some(e) = &outcome.error {
        return Some(e.to_string());
    }
    if let Some(reason) = &outcome.aborted {
        return Some(reason.clone().unwrap_or_else(|| "the run was aborted".into()));
    }
    (outcome.finish_reason() == FinishReason::Error).then(|| "the model finished with an error".into())
}

/// The delegation's tool result (§18.2).
pub fn result_json(outcome: &RunOutcome, thread: Option<&(String, String)>) -> Value {
    let tool_results: Vec<Value> = outcome.steps.iter().flat_map(|s: &StepResult| s.tool_results.iter()).filter_map(sub_tool_result).collect();
    let mut v = Map::new();
    v.insert("text".into(), outcome.text().into());
    v.insert("finishReason".into(), outcome.finish_reason().as_str().into());
    v.insert("usage".into(), usage_json(&outcome.total_usage));
    if let Some((thread_id, resource_id)) = thread {
        v.insert("subAgentThreadId".into(), thread_id.as_str().into());
        v.insert("subAgentResourceId".into(), resource_id.as_str().into());
    }
    v.insert("subAgentToolResults".into(), Value::Array(tool_results));
    Value::Object(v)
}

/// `{ toolName, toolCallId, args, result, isError? }` of one of the sub-agent's calls.
fn sub_tool_result(r: &ToolResult) -> Option<Value> {
    let (result, is_error) = r.model_result()?;
    let mut v = json!({ "toolName": r.call.tool_name, "toolCallId": r.call.tool_call_id, "args": r.call.args, "result": result });
    if is_error {
        v["isError"] = Value::Bool(true);
    }
    Some(v)
}

/// A chunk as JavaScript receives it: `{ type, runId, from, payload }` (structured output's
/// fields at the top level; a custom `data-*` chunk as written).
pub fn chunk_json(chunk: &Chunk, run_id: &str) -> Value {
    if let Chunk::Data { kind, data, id, transient } = chunk {
        let mut v = json!({ "type": kind, "data": data });
        if let Some(id) = id {
            v["id"] = Value::String(id.clone());
        }
        if *transient {
            v["transient"] = Value::Bool(true);
        }
        return v;
    }
    let mut v = Map::new();
    v.insert("type".into(), chunk.type_name().into());
    v.insert("runId".into(), run_id.into());
    v.insert("from".into(), chunk.from().into());
    match (chunk.top_level(), chunk) {
        (Some(fields), _) => v.extend(fields),
        (None, Chunk::Raw(text)) => {
            v.insert("payload".into(), serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())));
        }
        (None, _) => {
            v.insert("payload".into(), chunk.payload());
        }
    }
    Value::Object(v)
}

/// The sub-run's sink: each chunk goes to the supervisor's stream as `tool-output` of the
/// delegation call; `data-*` chunks go unwrapped. Dropped before the run ended (the supervisor
/// was aborted): the sub-run's `abort` chunk is forwarded then.
struct Forward<'a> {
    emit: &'a dyn Fn(Chunk),
    tool_call_id: String,
    tool_name: String,
    run_id: String,
    /// The sub-agent's id (for `subAgent` of a surfaced approval).
    agent_id: String,
    abort: AbortFlag,
    ended: Cell<bool>,
    /// The supervisor's approvals and the sub-run's, when approvals surface on the supervisor.
    approvals: Option<(&'a Approvals, Rc<Approvals>)>,
}

impl Forward<'_> {
    fn wrap(&self, chunk: &Chunk) -> Chunk {
        Chunk::ToolOutput { tool_call_id: self.tool_call_id.clone(), tool_name: self.tool_name.clone(), output: chunk_json(chunk, &self.run_id) }
    }
}

impl Sink for Forward<'_> {
    fn emit(&self, chunk: Chunk) {
        match chunk {
            Chunk::Data { .. } => (self.emit)(chunk),
            Chunk::ToolCallApproval { call, sub_agent } if self.approvals.is_some() => {
                (self.emit)(self.wrap(&Chunk::ToolCallApproval { call: call.clone(), sub_agent }));
                // The supervisor asks for it as the delegation call, with the inner call's tool
                // and arguments; its decision goes to the inner call (routed before the chunk
                // goes out: `onChunk` may decide at once).
                if let Some((outer, inner)) = &self.approvals {
                    outer.route(&self.tool_call_id, inner.clone(), &call.tool_call_id);
                }
                let sub_agent = json!({ "agentId": self.agent_id, "toolName": self.tool_name, "runId": self.run_id, "toolCallId": call.tool_call_id });
                let surfaced = ToolCall { tool_call_id: self.tool_call_id.clone(), tool_name: call.tool_name, args: call.args };
                (self.emit)(Chunk::ToolCallApproval { call: surfaced, sub_agent: Some(Box::new(sub_agent)) });
            }
            other => (self.emit)(self.wrap(&other)),
        }
    }
    fn step_finished<'a>(&'a self, _step: &'a StepResult) -> LocalFuture<'a, ()> {
        Box::pin(async {})
    }
}

impl Drop for Forward<'_> {
    fn drop(&mut self) {
        if let Some((outer, _)) = &self.approvals {
            outer.unroute(&self.tool_call_id);
        }
        if !self.ended.get() {
            (self.emit)(self.wrap(&Chunk::Abort { reason: self.abort.reason() }));
        }
    }
}

/// `versions` (SPEC §18.7): `{ agents?: Record<agentId, { versionId: string } | { status: 'draft' |
/// 'published' }>, defaultStatus?: 'draft' | 'published' }`. No version store here, so it is only
/// checked (the code-defined agents run, with a warning).
pub fn check_versions(v: &Value, field: &str) -> Result<(), AgentError> {
    let status = |v: Option<&Value>, at: String| match v {
        None => Ok(()),
        Some(Value::String(s)) if s == "draft" || s == "published" => Ok(()),
        Some(other) => Err(AgentError::invalid(at, format!("expected 'draft' or 'published', got {}", crate::core::input::kind(other)))),
    };
    let Some(o) = v.as_object() else { return Err(AgentError::invalid(field, format!("expected {{ agents?, defaultStatus? }}, got {}", crate::core::input::kind(v)))) };
    status(o.get("defaultStatus"), format!("{field}.defaultStatus"))?;
    match o.get("agents") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(agents)) => {
            for (id, sel) in agents {
                let at = format!("{field}.agents.{id}");
                match sel {
                    Value::Object(s) if s.get("versionId").is_some_and(Value::is_string) => {}
                    Value::Object(s) if s.contains_key("status") => status(s.get("status"), format!("{at}.status"))?,
                    other => return Err(AgentError::invalid(at, format!("expected {{ versionId: string }} or {{ status: 'draft' | 'published' }}, got {}", crate::core::input::kind(other)))),
                }
            }
            Ok(())
        }
        Some(other) => Err(AgentError::invalid(format!("{field}.agents"), format!("expected an object of agent ids, got {}", crate::core::input::kind(other)))),
    }
}

/// A user message with `text`, for hosts that build a sub-run's input.
pub fn prompt_message(text: &str) -> ModelMessage {
    ModelMessage::User(vec![UserPart::Text(text.to_string())])
}
