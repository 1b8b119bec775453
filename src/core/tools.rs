//! Tools as the loop knows them, and what happens to one tool call: checks, approval, hooks,
//! execution. The JavaScript side (or a native test) supplies the behaviour through `ToolHost`;
//! the rules — what the model is told, which chunks appear, in which order — live here.

use std::cell::RefCell;
use std::future::poll_fn;

use std::task::Poll;

use serde_json::{json, Value};

use std::rc::Rc;

use super::abort::AbortFlag;
use super::background::{placeholder, Dispatch, Dispatched, Manager, MemoryTarget, TaskLimits, TaskRunner, ToolBackground};
use super::chunk::Chunk;
use super::env::LocalFuture;
use super::model::ToolSpec;
use super::schema;
use super::runs::{WaitKind, WaitingCall};
use super::step::ToolCall;

/// How a tool's arguments are checked before it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Validation {
    /// Against `ToolDef::parameters` by the core's JSON Schema validator.
    JsonSchema,
    /// By the host (a Standard Schema such as zod, which validates itself).
    Host,
}

/// Whether a call waits for the user's decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Approval {
    Never,
    Always,
    /// The host decides per call (a `requireApproval` function).
    Host,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    /// The name the model calls it by (its key in `tools`).
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments, sent to the model.
    pub parameters: Value,
    pub validation: Validation,
    pub approval: Approval,
    /// A client tool has no `execute`: the run stops at its call for the page to answer.
    pub client: bool,
    /// The tool's own `background` settings.
    pub background: Option<ToolBackground>,
}

impl ToolDef {
    pub fn spec(&self) -> ToolSpec {
        ToolSpec { name: self.name.clone(), description: self.description.clone(), parameters: self.parameters.clone() }
    }
}

/// How one call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The result goes to the model; `is_error` when it reports a failure the model should see.
    Result { result: Value, is_error: bool },
    /// The tool failed (threw, bad arguments, unknown tool): a `tool-error`, and the model is
    /// told the message.
    Error(String),
    /// The user declined the call.
    Denied { reason: Option<String> },
    /// A client tool: no result in this run.
    Client,
}

/// A tool call with its outcome, as steps and the output report it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    pub call: ToolCall,
    pub outcome: Outcome,
}

impl ToolResult {
    /// What the model receives for this call (`None` for a client tool, which has no result).
    pub fn model_result(&self) -> Option<(Value, bool)> {
        match &self.outcome {
            Outcome::Result { result, is_error } => Some((result.clone(), *is_error)),
            Outcome::Error(message) => Some((Value::String(message.clone()), true)),
            Outcome::Denied { reason } => Some((
                Value::String(match reason {
                    Some(r) => format!("The user declined this tool call: {r}"),
                    None => "The user declined this tool call.".into(),
                }),
                true,
            )),
            Outcome::Client => None,
        }
    }

    /// `toolResults[i]`: `{ toolCallId, toolName, args, result, isError? }`.
    pub fn to_json(&self) -> Option<Value> {
        let (result, is_error) = self.model_result()?;
        let mut v = json!({
            "toolCallId": self.call.tool_call_id, "toolName": self.call.tool_name, "args": self.call.args, "result": result,
        });
        if is_error {
            v["isError"] = Value::Bool(true);
        }
        Some(v)
    }
}

/// The user's decision on a call that waits for approval.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    Approve,
    Decline { reason: Option<String> },
    /// Resume data for a suspended call (already checked against its `resumeSchema`).
    Resume(Value),
}

/// What a resumed `execute` gets besides its input (SPEC §19.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Resumed {
    pub resume_data: Value,
    pub suspend_payload: Value,
}

/// A `suspend(payload)` a tool made while it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Suspension {
    pub payload: Value,
    /// JSON Schema of the resume data (the tool's `resumeSchema`, or `suspend()`'s own).
    pub resume_schema: Option<Value>,
}

/// How one call settled in a step: ended, or waiting for a decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Settled {
    Done(ToolResult),
    Waits(WaitingCall),
}

/// Calls waiting for approval in one run, and decisions that arrived.
#[derive(Default)]
pub struct Approvals {
    waiting: RefCell<Vec<Waiting>>,
    /// Decisions for a call of this run that go to another run's call: a sub-agent's approval
    /// surfaced on its supervisor as the delegation call (SPEC §18.9).
    routes: RefCell<Vec<(String, Rc<Approvals>, String)>>,
}

/// A call id, its decision once made, and the step waiting for it.
type Waiting = (String, Option<Decision>, Option<std::task::Waker>);

impl Approvals {
    /// Records the decision for `tool_call_id`; `false` when no such call is waiting.
    pub fn decide(&self, tool_call_id: &str, decision: Decision) -> bool {
        let routed = {
            let mut routes = self.routes.borrow_mut();
            routes.iter().position(|(id, _, _)| id == tool_call_id).map(|at| routes.remove(at))
        };
        if let Some((_, inner, inner_id)) = routed {
            return inner.decide(&inner_id, decision);
        }
        let waker = {
            let mut w = self.waiting.borrow_mut();
            let Some(entry) = w.iter_mut().find(|(id, d, _)| id == tool_call_id && d.is_none()) else { return false };
            entry.1 = Some(decision);
            entry.2.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        true
    }

    pub fn is_waiting(&self, tool_call_id: &str) -> bool {
        self.waiting.borrow().iter().any(|(id, d, _)| id == tool_call_id && d.is_none())
            || self.routes.borrow().iter().any(|(id, inner, inner_id)| id == tool_call_id && inner.is_waiting(inner_id))
    }

    /// Sends the decision for `tool_call_id` to `inner_id` of `inner` (until it is made, or
    /// `unroute`).
    pub fn route(&self, tool_call_id: &str, inner: Rc<Approvals>, inner_id: &str) {
        self.routes.borrow_mut().push((tool_call_id.to_string(), inner, inner_id.to_string()));
    }

    /// Forgets the routes of `tool_call_id` (its delegation ended).
    pub fn unroute(&self, tool_call_id: &str) {
        self.routes.borrow_mut().retain(|(id, _, _)| id != tool_call_id);
    }

    /// Whether any call is waiting.
    pub fn any_waiting(&self) -> bool {
        self.waiting.borrow().iter().any(|(_, d, _)| d.is_none())
    }

    /// Registers a wait for `tool_call_id` at once, so a decision made before the returned wait
    /// is first polled (synchronously, from the `tool-call-approval` chunk's `onChunk`) is kept.
    /// Dropping the wait (an abort) unregisters it.
    pub(crate) fn register<'a>(&'a self, tool_call_id: &'a str) -> ApprovalWait<'a> {
        self.waiting.borrow_mut().push((tool_call_id.to_string(), None, None));
        ApprovalWait { approvals: self, tool_call_id, taken: std::cell::Cell::new(false) }
    }
}

/// A registered wait for one call's decision; see `Approvals::register`.
pub(crate) struct ApprovalWait<'a> {
    approvals: &'a Approvals,
    tool_call_id: &'a str,
    /// The decision was taken (and its entry removed).
    taken: std::cell::Cell<bool>,
}

impl ApprovalWait<'_> {
    pub(crate) async fn decision(self) -> Decision {
        poll_fn(|cx| {
            let mut w = self.approvals.waiting.borrow_mut();
            let Some(pos) = w.iter().position(|(id, _, _)| id == self.tool_call_id) else { return Poll::Pending };
            if let Some(d) = w[pos].1.clone() {
                w.remove(pos);
                self.taken.set(true);
                return Poll::Ready(d);
            }
            w[pos].2 = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

impl Drop for ApprovalWait<'_> {
    fn drop(&mut self) {
        // The run stopped waiting (an abort): forget the entry, so the call no longer counts as
        // waiting and a late decision is refused.
        if self.taken.get() {
            return;
        }
        let mut w = self.approvals.waiting.borrow_mut();
        if let Some(pos) = w.iter().position(|(id, _, _)| id == self.tool_call_id) {
            w.remove(pos);
        }
    }
}

/// What a running tool may do besides returning: emit `tool-output` and `data-*` chunks.
pub struct ToolCtx<'a> {
    pub call: &'a ToolCall,
    /// The conversation sent to the model for this step (AI SDK message JSON).
    pub messages: &'a Value,
    pub emit: &'a dyn Fn(Chunk),
    /// Set when a suspended call runs again with resume data.
    pub resume: Option<&'a Resumed>,
}

/// The behaviour behind the tools: implemented by the JavaScript bindings, and by native tests.
pub trait ToolHost {
    /// Runs the tool. `Err` is the message of what it threw.
    fn execute<'a>(&'a self, ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>>;
    /// Validates with the tool's own schema (`Validation::Host`): the parsed arguments, or the
    /// message that says what is wrong.
    fn validate<'a>(&'a self, _call: &'a ToolCall) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async { Err("this tool has no validator".into()) })
    }
    /// Whether this call needs approval (`Approval::Host`).
    fn needs_approval<'a>(&'a self, _call: &'a ToolCall) -> LocalFuture<'a, bool> {
        Box::pin(async { true })
    }
    /// `hooks.beforeToolCall`: `Ok(Some(output))` skips `execute` and uses that output; `Err`
    /// (the hook threw) fails the call, since a failed check must not let it through.
    fn before_tool_call<'a>(&'a self, _call: &'a ToolCall) -> LocalFuture<'a, Result<Option<Value>, String>> {
        Box::pin(async { Ok(None) })
    }
    /// `hooks.afterToolCall`.
    fn after_tool_call<'a>(&'a self, _result: &'a ToolResult) -> LocalFuture<'a, ()> {
        Box::pin(async {})
    }
    /// The `suspend(payload)` the last `execute` of this call made, taken once (SPEC §19.1).
    fn take_suspension(&self, _tool_call_id: &str) -> Option<Suspension> {
        None
    }
    /// The suspension of this call is stored: its `suspend()` promise may resolve.
    fn suspension_stored(&self, _tool_call_id: &str) {}
    /// Something that runs `tool` outside of this run, for a background task.
    fn task_runner(&self, _tool: &str) -> Option<Rc<dyn TaskRunner>> {
        None
    }
}

/// What a call needs to go to the background: the manager and who the task belongs to.
pub struct BackgroundCall<'a> {
    pub manager: &'a Rc<Manager>,
    pub limits: TaskLimits,
    pub agent_id: &'a str,
    pub run_id: &'a str,
    pub thread_id: Option<&'a str>,
    pub resource_id: Option<&'a str>,
    pub memory: Option<MemoryTarget>,
}

/// Runs one call to its outcome, emitting its chunks. `None` when the run was aborted meanwhile.
/// `decided` is the user's decision when the call waited before (approval or resume data); a
/// call that needs one and has none settles as `Settled::Waits` without a chunk: the step emits
/// the waiting chunks once its other calls are done (SPEC §19.2).
#[allow(clippy::too_many_arguments)]
pub async fn run_call(
    call: &ToolCall,
    tool: Option<&ToolDef>,
    require_approval: bool,
    host: &dyn ToolHost,
    abort: &AbortFlag,
    messages: &Value,
    emit: &dyn Fn(Chunk),
    background: Option<BackgroundCall<'_>>,
    decided: Option<(Decision, Option<Value>)>,
) -> Option<Settled> {
    let outcome = match abort.race(outcome_of(call, tool, require_approval, host, messages, emit, background, decided)).await? {
        Ok(outcome) => outcome,
        Err(waits) => return Some(Settled::Waits(waits)),
    };
    let result = ToolResult { call: call.clone(), outcome };
    match &result.outcome {
        Outcome::Result { result: r, is_error } => emit(Chunk::ToolResult { call: call.clone(), result: r.clone(), is_error: *is_error }),
        Outcome::Error(message) => emit(Chunk::ToolError { call: call.clone(), message: message.clone() }),
        Outcome::Denied { reason } => emit(Chunk::ToolOutputDenied { call: call.clone(), reason: reason.clone() }),
        Outcome::Client => {}
    }
    if !matches!(result.outcome, Outcome::Client) {
        abort.race(host.after_tool_call(&result)).await?;
    }
    Some(Settled::Done(result))
}

#[allow(clippy::too_many_arguments)]
async fn outcome_of(
    call: &ToolCall,
    tool: Option<&ToolDef>,
    require_approval: bool,
    host: &dyn ToolHost,
    messages: &Value,
    emit: &dyn Fn(Chunk),
    background: Option<BackgroundCall<'_>>,
    decided: Option<(Decision, Option<Value>)>,
) -> Result<Outcome, WaitingCall> {
    let Some(tool) = tool else {
        if decided.is_some() {
            return Ok(Outcome::Error(format!("tool {} is not available on this agent", call.tool_name)));
        }
        return Ok(Outcome::Error(format!("Tool '{}' does not exist here. Call one of the tools you were given.", call.tool_name)));
    };
    let mut call = call.clone();
    if let Value::String(raw) = &call.args {
        return Ok(Outcome::Error(format!(
            "The arguments for tool '{}' are not valid JSON ({raw}). Call the tool again with a JSON object.",
            tool.name
        )));
    }
    match tool.validation {
        Validation::JsonSchema => {
            let errors = schema::validate(&tool.parameters, &call.args);
            if !errors.is_empty() {
                return Ok(Outcome::Error(schema::describe(&tool.name, &errors)));
            }
        }
        Validation::Host => match host.validate(&call).await {
            Ok(args) => call.args = args,
            Err(message) => return Ok(Outcome::Error(message)),
        },
    }
    if tool.client {
        return Ok(Outcome::Client);
    }
    let resumed = match decided {
        Some((Decision::Decline { reason }, _)) => return Ok(Outcome::Denied { reason }),
        Some((Decision::Resume(data), payload)) => Some(Resumed { resume_data: data, suspend_payload: payload.unwrap_or(Value::Null) }),
        Some((Decision::Approve, _)) => None,
        None => {
            let ask = require_approval
                || match tool.approval {
                    Approval::Never => false,
                    Approval::Always => true,
                    Approval::Host => host.needs_approval(&call).await,
                };
            if ask {
                return Err(WaitingCall { call, kind: WaitKind::Approval, suspend_payload: None, resume_schema: None, resumed_by: None });
            }
            None
        }
    };
    match host.before_tool_call(&call).await {
        Ok(Some(output)) => return Ok(Outcome::Result { result: output, is_error: false }),
        Ok(None) => {}
        Err(message) => return Ok(Outcome::Error(message)),
    }
    if let (Some(bg), None) = (background, &resumed) {
        if let Some(runner) = host.task_runner(&tool.name) {
            let d = Dispatch {
                call: call.clone(),
                agent_id: bg.agent_id.to_string(),
                run_id: bg.run_id.to_string(),
                thread_id: bg.thread_id.map(str::to_owned),
                resource_id: bg.resource_id.map(str::to_owned),
                limits: bg.limits,
                runner,
                memory: bg.memory,
            };
            match bg.manager.dispatch(d) {
                Dispatched::Accepted { task_id } => {
                    emit(Manager::started_chunk(&task_id, &call));
                    return Ok(Outcome::Result { result: placeholder(&task_id, &tool.name), is_error: false });
                }
                Dispatched::Rejected { message } => return Ok(Outcome::Error(message)),
                Dispatched::RunInForeground => {}
            }
        }
    }
    let executed = host.execute(ToolCtx { call: &call, messages, emit, resume: resumed.as_ref() }).await;
    // Whatever `execute` returned or threw after `suspend()` is ignored.
    if let Some(s) = host.take_suspension(&call.tool_call_id) {
        return Err(WaitingCall { call, kind: WaitKind::Suspension, suspend_payload: Some(s.payload), resume_schema: s.resume_schema, resumed_by: None });
    }
    Ok(match executed {
        Ok(result) => Outcome::Result { result, is_error: false },
        Err(message) => Outcome::Error(message),
    })
}

/// Runs `futures` with at most `limit` in flight, starting them in order; results in order.
/// (Hand-written: futures-util's `buffered` does the same for 1.35 KB more gzip in the package.)
pub async fn run_limited<'a, T>(futures: Vec<LocalFuture<'a, T>>, limit: usize) -> Vec<T> {
    let limit = limit.max(1);
    let total = futures.len();
    let mut queue = futures.into_iter();
    let mut active: Vec<(usize, LocalFuture<'a, T>)> = Vec::new();
    let mut done: Vec<Option<T>> = (0..total).map(|_| None).collect();
    let mut next = 0;
    poll_fn(|cx| {
        loop {
            while active.len() < limit {
                match queue.next() {
                    Some(f) => {
                        active.push((next, f));
                        next += 1;
                    }
                    None => break,
                }
            }
            let mut progressed = false;
            let mut i = 0;
            while i < active.len() {
                if let Poll::Ready(v) = active[i].1.as_mut().poll(cx) {
                    let (idx, _) = active.remove(i);
                    done[idx] = Some(v);
                    progressed = true;
                } else {
                    i += 1;
                }
            }
            if active.is_empty() && next == total {
                return Poll::Ready(());
            }
            // A finished call frees a slot: start the next one now.
            if !progressed {
                return Poll::Pending;
            }
        }
    })
    .await;
    done.into_iter().flatten().collect()
}
