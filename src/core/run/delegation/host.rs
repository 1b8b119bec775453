//! Running a delegation (SPEC §18.3–18.6, 18.8): the tool host that puts the `agent-<key>` tools
//! in front of the run's own, the sub-agent's run with its chunks forwarded live as
//! `tool-output`, its result, and the background task a delegation can become.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::*;
use crate::core::run::{run, RunOutcome, Sink};

/// The run's tool host with the delegation tools in front of the others.
pub(crate) struct DelegatingHost<'a> {
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
                Some(MemoryRun { store, thread_id: thread_id.clone(), resource_id: resource_id.clone(), title: None, metadata: None, config, save_per_step: false, indexer: None })
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
