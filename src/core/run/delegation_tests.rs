//! Sub-agents natively (SPEC §18): the delegation tool, what the sub-agent is sent, its chunks in
//! the supervisor's stream, the result and what the model reads, failure, abort, depth, memory.
//! One script answers the supervisor's and the sub-agents' requests in the order they are sent.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Value};

use super::tools::{calls_reply, run_with, simple, text_reply, Run, TestHost};
use super::*;
use crate::core::memory::{InMemoryStore, MemoryConfig, MemoryRun, MessageQuery, Store};
use crate::core::run::delegation::{CompleteCtx, CompleteDecision, Delegation, Delegator, HookError, HookErrorStrategy, StartCtx, StartDecision, SubAgent, SubRun, SubRunSpec};
use crate::core::tools::Approvals;

/// Agents answered by the scripted model: `researcher` (and, with `nested`, sub-runs that may
/// delegate to it again).
type Hook<C, R> = Rc<dyn Fn(&C) -> Result<Option<R>, HookError>>;

#[derive(Clone, Default)]
struct TestDelegator {
    agents: Vec<SubAgent>,
    nested: bool,
    include_tool_results: bool,
    specs: Rc<RefCell<Vec<SubRunSpec>>>,
    sub_aborts: Rc<RefCell<Vec<AbortFlag>>>,
    on_start: Option<Hook<StartCtx, StartDecision>>,
    filter: Option<Hook<StartCtx, Vec<ModelMessage>>>,
    on_complete: Option<Hook<CompleteCtx, CompleteDecision>>,
    strategy: HookErrorStrategy,
    /// The sub-agent has a `weather` tool that waits for approval.
    approval_tool: bool,
    /// The hooks called, in order; the warnings.
    log: Rc<RefCell<Vec<String>>>,
}

fn researcher() -> SubAgent {
    SubAgent { key: "researcher".into(), id: "research-agent".into(), description: Some("Researches a topic".into()), background: false }
}

impl Delegator for TestDelegator {
    fn agents(&self) -> LocalFuture<'_, Result<Vec<SubAgent>, AgentError>> {
        let agents = self.agents.clone();
        Box::pin(async move { Ok(agents) })
    }
    fn sub_run(&self, spec: &SubRunSpec) -> Result<SubRun, String> {
        self.specs.borrow_mut().push(spec.clone());
        let mut cfg = config(0, false);
        cfg.run_id = format!("sub-{}", self.specs.borrow().len());
        let instructions = delegation::with_instructions(&["You research.".to_string()], spec.instructions.as_deref());
        let mut messages: Vec<ModelMessage> = instructions.into_iter().map(ModelMessage::System).collect();
        messages.extend(spec.context.iter().cloned());
        cfg.input_start = messages.len();
        messages.push(delegation::prompt_message(&spec.prompt));
        cfg.request.messages = messages;
        if let Some(n) = spec.max_steps {
            cfg.max_steps = n;
        }
        if self.nested {
            cfg.delegation = Some(delegation_of(self.clone()));
        }
        let abort = AbortFlag::new();
        self.sub_aborts.borrow_mut().push(abort.clone());
        if self.approval_tool {
            let mut weather = super::tools::tool("weather");
            weather.approval = crate::core::tools::Approval::Always;
            cfg.tools = vec![weather];
            return Ok(SubRun { cfg, hooks: Box::new(TestHost::default()), approvals: Rc::new(Approvals::default()), abort, own_memory: None, done: Box::new(|| {}) });
        }
        Ok(SubRun { cfg, hooks: Box::new(NoHooks), approvals: Rc::new(Approvals::default()), abort, own_memory: None, done: Box::new(|| {}) })
    }
    fn on_start<'a>(&'a self, ctx: &'a StartCtx) -> LocalFuture<'a, Result<Option<StartDecision>, HookError>> {
        self.log.borrow_mut().push("start".into());
        let r = self.on_start.as_ref().map_or(Ok(None), |f| f(ctx));
        Box::pin(async move { r })
    }
    fn message_filter<'a>(&'a self, ctx: &'a StartCtx) -> LocalFuture<'a, Result<Option<Vec<ModelMessage>>, HookError>> {
        self.log.borrow_mut().push(format!("filter:{}", ctx.prompt));
        let r = self.filter.as_ref().map_or(Ok(None), |f| f(ctx));
        Box::pin(async move { r })
    }
    fn on_complete<'a>(&'a self, ctx: &'a CompleteCtx) -> LocalFuture<'a, Result<Option<CompleteDecision>, HookError>> {
        self.log.borrow_mut().push(format!("complete:{}", ctx.success));
        let r = self.on_complete.as_ref().map_or(Ok(None), |f| f(ctx));
        Box::pin(async move { r })
    }
    fn hook_failed(&self, error: &Value, warn: bool) {
        self.log.borrow_mut().push(format!("failed:{}:{warn}", error["hook"].as_str().unwrap()));
    }
}

fn delegation_of(d: TestDelegator) -> Delegation {
    let (include, strategy) = (d.include_tool_results, d.strategy);
    let mut del = Delegation::new(Rc::new(d));
    del.include_tool_results = include;
    del.hook_error_strategy = strategy;
    del.parent_id = "boss".into();
    del
}

fn supervisor(d: &TestDelegator) -> RunConfig {
    let mut cfg = config(0, false);
    cfg.request.messages = vec![
        ModelMessage::System("You supervise. SECRET-INSTRUCTIONS".into()),
        ModelMessage::User(vec![UserPart::Text("Tell me about solana".into())]),
    ];
    cfg.input_start = 1;
    cfg.delegation = Some(delegation_of(d.clone()));
    cfg
}

fn agents() -> TestDelegator {
    TestDelegator { agents: vec![researcher()], ..Default::default() }
}

fn delegate(id: &str, prompt: &str) -> Reply {
    let args = json!({ "prompt": prompt }).to_string();
    calls_reply(&[(id, "agent-researcher", &args)])
}

fn tool_messages(r: &Run, i: usize) -> Vec<String> {
    r.body(i)["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap().to_string()).collect()
}

#[test]
fn each_agent_is_offered_as_a_tool_with_the_delegation_schema() {
    let mut d = agents();
    d.agents.push(SubAgent { key: "writer".into(), id: "writer".into(), description: None, background: false });
    let r = simple(vec![text_reply("Hi")], supervisor(&d), &TestHost::default());
    let tools = r.body(0)["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["function"]["name"], "agent-researcher");
    assert_eq!(tools[0]["function"]["description"], "Researches a topic");
    assert_eq!(tools[1]["function"]["description"], "Agent: writer", "no description: 'Agent: <key>'");
    let params = &tools[0]["function"]["parameters"];
    assert_eq!(params["required"], json!(["prompt"]));
    let mut keys: Vec<&String> = params["properties"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["instructions", "maxSteps", "prompt"]);
    assert!(d.specs.borrow().is_empty(), "no call, no sub-run");
}

#[test]
fn a_delegation_streams_the_sub_agent_inside_the_call_and_the_model_reads_its_text() {
    let d = agents();
    let r = simple(
        vec![delegate("call_1", "Research solana"), text_reply("Solana is fast."), text_reply("Here is what I found.")],
        supervisor(&d),
        &TestHost::default(),
    );
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    assert_eq!(r.out.text(), "Here is what I found.", "the supervisor's text is its own");
    let chunks = r.sink.chunks.borrow();
    let at = |t: &str| chunks.iter().position(|c| c.type_name() == t).unwrap();
    let (call, result) = (at("tool-call"), chunks.iter().position(|c| matches!(c, Chunk::ToolResult { .. })).unwrap());
    let inner: Vec<Value> = chunks[call + 1..result]
        .iter()
        .map(|c| match c {
            Chunk::ToolOutput { tool_call_id, tool_name, output } => {
                assert_eq!((tool_call_id.as_str(), tool_name.as_str()), ("call_1", "agent-researcher"));
                output.clone()
            }
            other => panic!("only the sub-agent's chunks between call and result, got {other:?}"),
        })
        .collect();
    let types: Vec<&str> = inner.iter().map(|o| o["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["start", "step-start", "text-start", "text-delta", "text-end", "step-finish", "finish"]);
    assert!(inner.iter().all(|o| o["runId"] == "sub-1" && o["from"] == "AGENT"), "each with the sub-run's id");
    assert_eq!(inner[3]["payload"]["text"], "Solana is fast.");
    let Chunk::ToolResult { result: value, is_error, .. } = &chunks[result] else { unreachable!() };
    assert!(!is_error);
    assert_eq!(value["text"], "Solana is fast.");
    assert_eq!(value["finishReason"], "stop");
    assert_eq!(value["subAgentToolResults"], json!([]));
    assert!(value.get("subAgentThreadId").is_none(), "no thread, no sub-agent thread");
    // The sub-agent was asked with its own instructions, the conversation and the prompt.
    let sub = r.body(1);
    let msgs = sub["messages"].as_array().unwrap();
    assert_eq!(msgs[0], json!({ "role": "system", "content": "You research." }));
    assert_eq!(msgs[1], json!({ "role": "user", "content": "Tell me about solana" }));
    assert_eq!(msgs[2], json!({ "role": "user", "content": "Research solana" }));
    assert_eq!(msgs.len(), 3);
    assert!(!sub.to_string().contains("SECRET-INSTRUCTIONS"), "the supervisor's instructions stay with it");
    assert_eq!(tool_messages(&r, 2), ["Solana is fast."], "the model reads the text only");
}

#[test]
fn the_call_instructions_are_appended_and_max_steps_is_passed() {
    let d = agents();
    let args = json!({ "prompt": "Go", "instructions": "Cite sources.", "maxSteps": 2 }).to_string();
    let r = simple(vec![calls_reply(&[("c", "agent-researcher", &args)]), text_reply("ok"), text_reply("done")], supervisor(&d), &TestHost::default());
    assert_eq!(r.body(1)["messages"][0]["content"], "You research.\n\nCite sources.");
    assert_eq!(d.specs.borrow()[0].max_steps, Some(2));
    assert_eq!(delegation::max_steps(Some(9), false, Some(3)), Some(3), "capped at the sub-agent's default");
    assert_eq!(delegation::max_steps(Some(9), true, Some(3)), Some(9), "a hook's value is not capped");
    assert_eq!(delegation::max_steps(None, false, Some(3)), None);
}

#[test]
fn tool_calls_results_and_system_messages_are_not_forwarded() {
    let d = agents();
    let host = TestHost::default();
    let mut cfg = supervisor(&d);
    cfg.tools.push(super::tools::tool("weather"));
    let r = simple(
        vec![
            calls_reply(&[("w1", "weather", r#"{"city":"Paris"}"#)]),
            delegate("call_2", "Dig deeper"),
            text_reply("deep"),
            text_reply("final"),
        ],
        cfg,
        &host,
    );
    assert!(r.out.error.is_none());
    let sub = r.body(2);
    let roles: Vec<&str> = sub["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "user"], "the weather call and its result stay out");
    assert!(!sub.to_string().contains("Paris"));
}

#[test]
fn with_include_tool_results_the_model_reads_the_whole_result() {
    let d = TestDelegator { include_tool_results: true, ..agents() };
    let r = simple(vec![delegate("c", "Go"), text_reply("found"), text_reply("done")], supervisor(&d), &TestHost::default());
    let read: Value = serde_json::from_str(&tool_messages(&r, 2)[0]).unwrap();
    assert_eq!(read["text"], "found");
    assert_eq!(read["finishReason"], "stop");
}

#[test]
fn a_failing_sub_agent_is_a_tool_error_that_names_it_and_the_supervisor_goes_on() {
    let d = agents();
    let failing = super::status(400, &[], r#"{"error":{"message":"model not found"}}"#);
    let r = simple(vec![delegate("c", "Go"), failing, text_reply("Sorry.")], supervisor(&d), &TestHost::default());
    assert!(r.out.error.is_none());
    assert_eq!(r.out.text(), "Sorry.");
    let chunks = r.sink.chunks.borrow();
    let message = chunks.iter().find_map(|c| match c {
        Chunk::ToolError { call, message } if call.tool_name == "agent-researcher" => Some(message.clone()),
        _ => None,
    });
    let message = message.expect("a tool-error for the delegation");
    assert!(message.starts_with("Sub-agent research-agent failed: "), "{message}");
    assert!(message.contains("model not found"), "{message}");
    let forwarded_error = chunks.iter().any(|c| matches!(c, Chunk::ToolOutput { output, .. } if output["type"] == "error"));
    assert!(forwarded_error, "the sub-agent's error chunk is forwarded");
    assert!(tool_messages(&r, 2)[0].contains("model not found"), "the model is told the cause");
}

#[test]
fn the_ninth_delegation_in_a_chain_fails_with_the_depth_error() {
    // Nine runs poll inside each other. A debug build's poll frames are many times a release
    // build's (the package test runs the same chain in wasm), so this test gets a larger stack.
    std::thread::Builder::new().stack_size(64 << 20).spawn(nine_deep).unwrap().join().unwrap();
}

fn nine_deep() {
    let d = TestDelegator { nested: true, ..agents() };
    let mut replies: Vec<Reply> = (0..9).map(|i| delegate(&format!("c{i}"), "again")).collect();
    replies.extend((0..9).map(|i| text_reply(&format!("level {i}"))));
    let r = simple(replies, supervisor(&d), &TestHost::default());
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    assert_eq!(d.specs.borrow().len(), 8, "eight nested runs, the ninth refused");
    assert_eq!(r.requests(), 18);
    assert_eq!(tool_messages(&r, 9), ["delegation depth 8 exceeded"], "the deepest agent's model is told");
    // The chain unwinds: each level reads the text of the one below.
    assert_eq!(tool_messages(&r, 10), ["level 0"]);
    assert_eq!(r.out.text(), "level 8");
}

#[test]
fn aborting_the_supervisor_aborts_the_sub_agent_and_forwards_its_abort() {
    let d = agents();
    let hang = Reply::Http {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        reads: vec![super::Read::Bytes(super::sse(&[&super::delta("content", "partial")])), super::Read::AbortAndHang],
    };
    let r = simple(vec![delegate("c", "Go"), hang], supervisor(&d), &TestHost::default());
    assert!(r.out.aborted.is_some());
    assert!(d.sub_aborts.borrow()[0].is_aborted(), "the sub-agent's flag is set: its request and tools stop");
    assert_eq!(d.sub_aborts.borrow()[0].reason().as_deref(), Some("user stopped"));
    let chunks = r.sink.chunks.borrow();
    let types = r.sink.types();
    assert_eq!(types.last(), Some(&"abort"));
    let inner: Vec<String> = chunks.iter().filter_map(|c| match c {
        Chunk::ToolOutput { output, .. } => Some(output["type"].as_str().unwrap().to_string()),
        _ => None,
    }).collect();
    assert_eq!(inner.last().map(String::as_str), Some("abort"), "{inner:?}");
    assert!(inner.contains(&"text-delta".to_string()));
    assert!(!types.contains(&"tool-result") && !types.contains(&"tool-error"));
}

#[test]
fn with_a_supervisor_thread_the_sub_agent_exchange_is_stored_beside_it() {
    let store = Rc::new(InMemoryStore::new());
    let d = agents();
    let mut cfg = supervisor(&d);
    cfg.memory = Some(MemoryRun {
        store: store.clone(),
        thread_id: "t1".into(),
        resource_id: "u1".into(),
        title: None,
        metadata: None,
        config: MemoryConfig::default(),
        save_per_step: false,
        indexer: None,
    });
    let r = run_with(vec![delegate("call_9", "Research solana"), text_reply("Solana is fast."), text_reply("Done.")], cfg, &TestHost::default(), &Approvals::default(), |_, _| {});
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    let result = r.out.steps[0].tool_results[0].model_result().unwrap().0;
    assert_eq!(result["subAgentThreadId"], "t1-call_9");
    assert_eq!(result["subAgentResourceId"], "u1-researcher");
    let sub = block_on(store.list_messages(&MessageQuery { thread_id: "t1-call_9".into(), last: None, before: None })).unwrap();
    let texts: Vec<(String, String)> = sub.iter().map(|m| (m.role.clone(), m.parts.iter().find_map(|p| p["text"].as_str()).unwrap_or_default().to_string())).collect();
    assert_eq!(texts, [("user".to_string(), "Research solana".to_string()), ("assistant".to_string(), "Solana is fast.".to_string())]);
    let thread = block_on(store.get_thread_by_id("t1-call_9")).unwrap().unwrap();
    assert_eq!(thread.resource_id, "u1-researcher");
    assert!(thread.title.is_none(), "never titled");
    // The sub-agent loaded nothing back: its request has only its prompt after the context.
    assert_eq!(r.body(1)["messages"].as_array().unwrap().len(), 3);
}

fn thrown(message: &str) -> HookError {
    HookError { name: "Error".into(), message: message.into() }
}

#[test]
fn a_rejection_answers_the_model_with_the_reason_and_runs_nothing() {
    let mut d = agents();
    d.on_start = Some(Rc::new(|ctx: &StartCtx| {
        assert_eq!((ctx.primitive_id.as_str(), ctx.prompt.as_str(), ctx.iteration, ctx.parent_agent_id.as_str()), ("research-agent", "Go", 1, "boss"));
        assert_eq!(ctx.messages[0]["role"], "user", "the conversation without system messages");
        Ok(Some(StartDecision { proceed: Some(false), rejection_reason: Some("not now".into()), ..Default::default() }))
    }));
    let r = simple(vec![delegate("c", "Go"), text_reply("ok")], supervisor(&d), &TestHost::default());
    assert!(d.specs.borrow().is_empty(), "the sub-agent did not run");
    assert_eq!(*d.log.borrow(), ["start"], "no filter, no onDelegationComplete after a rejection");
    let chunks = r.sink.chunks.borrow();
    let outputs: Vec<&Value> = chunks.iter().filter_map(|c| match c { Chunk::ToolOutput { output, .. } => Some(output), _ => None }).collect();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0]["type"], "text-delta");
    assert_eq!(outputs[0]["payload"]["text"], "[Delegation Rejected] not now");
    let result = chunks.iter().find_map(|c| match c { Chunk::ToolResult { result, .. } => Some(result.clone()), _ => None }).unwrap();
    assert_eq!(result, json!({ "text": "[Delegation Rejected] not now" }));
    assert_eq!(tool_messages(&r, 1), ["[Delegation Rejected] not now"]);
    let mut d = agents();
    d.on_start = Some(Rc::new(|_: &StartCtx| Ok(Some(StartDecision { proceed: Some(false), ..Default::default() }))));
    let r = simple(vec![delegate("c", "Go"), text_reply("ok")], supervisor(&d), &TestHost::default());
    assert_eq!(tool_messages(&r, 1), ["[Delegation Rejected] Delegation rejected by onDelegationStart hook"]);
}

#[test]
fn start_may_modify_the_prompt_instructions_and_steps_and_the_filter_chooses_the_context() {
    let mut d = agents();
    d.on_start = Some(Rc::new(|_: &StartCtx| {
        Ok(Some(StartDecision { modified_prompt: Some("Better prompt".into()), modified_instructions: Some("Be thorough.".into()), modified_max_steps: Some(7), ..Default::default() }))
    }));
    d.filter = Some(Rc::new(|_: &StartCtx| Ok(Some(Vec::new()))));
    let r = simple(vec![delegate("c", "Go"), text_reply("fine"), text_reply("done")], supervisor(&d), &TestHost::default());
    assert_eq!(*d.log.borrow(), ["start", "filter:Better prompt", "complete:true"]);
    let spec = d.specs.borrow()[0].clone();
    assert_eq!((spec.prompt.as_str(), spec.instructions.as_deref(), spec.max_steps, spec.max_steps_from_hook), ("Better prompt", Some("Be thorough."), Some(7), true));
    let msgs = r.body(1)["messages"].as_array().unwrap().clone();
    assert_eq!(msgs, [json!({ "role": "system", "content": "You research.\n\nBe thorough." }), json!({ "role": "user", "content": "Better prompt" })], "[] from the filter: the prompt alone");
}

#[test]
fn complete_may_replace_what_the_model_reads_store_feedback_and_bail() {
    let store = Rc::new(InMemoryStore::new());
    let mut d = agents();
    d.on_complete = Some(Rc::new(|ctx: &CompleteCtx| {
        assert_eq!(ctx.result["text"], "raw findings");
        assert_eq!(ctx.messages[1]["content"][0]["text"], "raw findings");
        Ok(Some(CompleteDecision { result_text: Some("summary".into()), feedback: Some("Ask for sources next time.".into()), bail: true }))
    }));
    let mut cfg = supervisor(&d);
    cfg.memory = Some(MemoryRun { store: store.clone(), thread_id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, config: MemoryConfig::default(), save_per_step: false, indexer: None });
    let r = simple(vec![delegate("c7", "Go"), text_reply("raw findings"), text_reply("never asked")], cfg, &TestHost::default());
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    assert_eq!(r.requests(), 2, "bail(): no further supervisor step");
    assert_eq!(r.out.finish_reason(), FinishReason::ToolCalls);
    let result = r.out.steps[0].tool_results[0].model_result().unwrap().0;
    assert_eq!(result["text"], "raw findings", "the stream's result is the sub-agent's");
    let stored = block_on(store.list_messages(&MessageQuery { thread_id: "t1".into(), last: None, before: None })).unwrap();
    let last = stored.last().unwrap();
    assert_eq!(last.role, "assistant");
    assert_eq!(last.parts, vec![json!({ "type": "text", "text": "Ask for sources next time." })]);
    assert_eq!(last.metadata, Some(json!({ "delegationFeedback": { "toolCallId": "c7", "primitiveId": "research-agent" } })));
    assert!(stored.len() >= 3 && stored[stored.len() - 2].role == "assistant", "after this run's messages");
}

#[test]
fn result_text_reaches_the_model_of_the_next_step() {
    let mut d = agents();
    d.on_complete = Some(Rc::new(|_: &CompleteCtx| Ok(Some(CompleteDecision { result_text: Some("summary".into()), ..Default::default() }))));
    let r = simple(vec![delegate("c", "Go"), text_reply("raw"), text_reply("done")], supervisor(&d), &TestHost::default());
    assert_eq!(tool_messages(&r, 2), ["summary"]);
    // On a failed delegation the model gets a failed result with that text.
    let r = simple(vec![delegate("c", "Go"), super::status(400, &[], r#"{"error":{"message":"bad"}}"#), text_reply("done")], supervisor(&d), &TestHost::default());
    assert_eq!(tool_messages(&r, 2), ["summary"]);
    assert!(r.sink.types().contains(&"tool-error"));
}

#[test]
fn a_failed_run_is_reported_to_complete_as_not_successful_with_empty_text() {
    let seen = Rc::new(RefCell::new(None));
    let mut d = agents();
    let s2 = seen.clone();
    d.on_complete = Some(Rc::new(move |ctx: &CompleteCtx| {
        *s2.borrow_mut() = Some((ctx.success, ctx.result["text"].clone(), ctx.error.clone()));
        Ok(None)
    }));
    simple(vec![delegate("c", "Go"), super::status(400, &[], r#"{"error":{"message":"bad model"}}"#), text_reply("done")], supervisor(&d), &TestHost::default());
    let (success, text, error) = seen.borrow().clone().unwrap();
    assert!(!success);
    assert_eq!(text, "");
    assert!(error.unwrap().contains("bad model"));
}

#[test]
fn hook_errors_warn_and_go_on_or_fail_the_call_and_are_listed() {
    let mut d = agents();
    d.on_start = Some(Rc::new(|_: &StartCtx| Err(thrown("start broke"))));
    d.on_complete = Some(Rc::new(|_: &CompleteCtx| Err(thrown("complete broke"))));
    let r = simple(vec![delegate("c", "Go"), text_reply("found"), text_reply("done")], supervisor(&d), &TestHost::default());
    assert_eq!(d.specs.borrow().len(), 1, "warn: the sub-agent ran unmodified");
    assert_eq!(tool_messages(&r, 2), ["found"]);
    assert!(d.log.borrow().contains(&"failed:onDelegationStart:true".to_string()));
    let errors = r.out.output_json("run1")["delegationHookErrors"].clone();
    assert_eq!(errors.as_array().unwrap().len(), 2);
    assert_eq!(errors[0], json!({ "hook": "onDelegationStart", "primitiveId": "research-agent", "toolCallId": "c", "runId": "run1", "name": "Error", "message": "start broke" }));
    assert_eq!(errors[1]["hook"], "onDelegationComplete");

    let mut d = agents();
    d.strategy = HookErrorStrategy::Throw;
    d.on_start = Some(Rc::new(|_: &StartCtx| Err(thrown("start broke"))));
    let r = simple(vec![delegate("c", "Go"), text_reply("done")], supervisor(&d), &TestHost::default());
    assert!(d.specs.borrow().is_empty(), "throw: the sub-agent never runs");
    assert_eq!(tool_messages(&r, 1), ["Sub-agent research-agent failed: onDelegationStart threw: start broke"]);
    assert_eq!(r.out.output_json("run1")["delegationHookErrors"].as_array().unwrap().len(), 1);
    // A run without agents has no such list.
    let plain = simple(vec![text_reply("hi")], config(0, false), &TestHost::default());
    assert!(plain.out.output_json("run1").get("delegationHookErrors").is_none());
}

#[test]
fn a_delegation_goes_to_the_background_by_key_or_all_or_a_background_tool_never_from_a_delegated_run() {
    let config = |v: Value| crate::core::background::parse_background_config(&v, "b").unwrap();
    let env: Rc<dyn Env> = Rc::new(Rc::new(Script::default()));
    let d = |agents: Vec<SubAgent>, allow: bool| {
        let mut del = delegation_of(TestDelegator { agents, ..Default::default() });
        del.env = Some(env.clone());
        del.allow_background = allow;
        block_on(del.resolve()).unwrap();
        del
    };
    let by_key = config(json!({ "enabled": true, "tools": { "researcher": true } }));
    let by_name = config(json!({ "enabled": true, "tools": { "agent-researcher": true } }));
    let all = config(json!({ "enabled": true, "tools": "all" }));
    let none = config(json!({ "enabled": true }));
    let plain = d(vec![researcher()], true);
    assert!(matches!(plain.background_limits(&by_key, "agent-researcher"), Some(Some(_))));
    assert!(matches!(plain.background_limits(&by_name, "agent-researcher"), Some(Some(_))));
    assert!(matches!(plain.background_limits(&all, "agent-researcher"), Some(Some(_))));
    assert_eq!(plain.background_limits(&none, "agent-researcher"), Some(None));
    assert_eq!(plain.background_limits(&by_key, "weather"), None, "not a delegation: the usual rule");
    let with_bg_tool = d(vec![SubAgent { background: true, ..researcher() }], true);
    assert!(matches!(with_bg_tool.background_limits(&none, "agent-researcher"), Some(Some(_))));
    let delegated = d(vec![researcher()], false);
    assert_eq!(delegated.background_limits(&all, "agent-researcher"), Some(None));
}

#[test]
fn an_approval_inside_the_sub_agent_is_asked_and_decided_on_the_supervisor() {
    let d = TestDelegator { approval_tool: true, ..agents() };
    let approvals = Approvals::default();
    let decided = Cell::new(false);
    let r = run_with(
        vec![delegate("c", "Go"), calls_reply(&[("inner_1", "weather", r#"{"city":"Oslo"}"#)]), text_reply("Oslo is cold."), text_reply("done")],
        supervisor(&d),
        &TestHost::default(),
        &approvals,
        |_, sink| {
            let asked = sink.chunks.borrow().iter().any(|c| matches!(c, Chunk::ToolCallApproval { call, .. } if call.tool_call_id == "c"));
            if asked && !decided.get() {
                assert!(approvals.is_waiting("c"), "the delegation call waits");
                decided.set(approvals.decide("c", crate::core::tools::Decision::Approve));
            }
        },
    );
    assert!(decided.get(), "the supervisor's approveToolCall reached the inner call");
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    let chunks = r.sink.chunks.borrow();
    let at = chunks.iter().position(|c| matches!(c, Chunk::ToolCallApproval { .. })).unwrap();
    let Chunk::ToolCallApproval { call, sub_agent } = &chunks[at] else { unreachable!() };
    assert_eq!((call.tool_name.as_str(), call.args.clone()), ("weather", json!({ "city": "Oslo" })), "the inner call's tool and arguments");
    let sub = sub_agent.as_deref().expect("subAgent names the inner call");
    assert_eq!((sub["toolName"].as_str(), sub["toolCallId"].as_str()), (Some("agent-researcher"), Some("inner_1")));
    assert!(sub["runId"].as_str().is_some_and(|id| !id.is_empty()) && sub["agentId"].is_string(), "{sub}");
    assert_eq!(chunks[at].payload()["subAgent"], *sub, "in the chunk's payload");
    assert!(matches!(&chunks[at - 1], Chunk::ToolOutput { output, .. } if output["type"] == "tool-call-approval" && output["payload"]["toolCallId"] == "inner_1"), "the inner chunk first");
    let result = r.out.steps[0].tool_results[0].model_result().unwrap().0;
    assert_eq!(result["text"], "Oslo is cold.");
    assert_eq!(result["subAgentToolResults"][0]["toolName"], "weather");
    assert!(!approvals.is_waiting("c"));
}
