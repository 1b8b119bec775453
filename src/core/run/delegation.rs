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

use serde_json::{json, Value};

use super::{Hooks, RunConfig};
use crate::core::abort::AbortFlag;
use crate::core::chunk::{usage_json, Chunk};
use crate::core::env::{Env, LocalFuture};
use crate::core::error::AgentError;
use crate::core::memory::{MemoryConfig, MemoryRun};
use crate::core::model::{AssistantPart, FinishReason, ModelMessage, ToolResultPart, UserPart};
use crate::core::step::{messages_json, StepResult, ToolCall};
use crate::core::tools::{Approval, Approvals, ToolCtx, ToolDef, ToolHost, ToolResult, Validation};

mod host;
pub(crate) use host::DelegatingHost;
pub use host::{chunk_json, failed, result_json};

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
