//! Memory while a run waits (SPEC §19.5): the assistant message is stored with its waiting calls
//! before they are announced; a decision turns them into results; a new run leaves them out.

use super::*;
use crate::core::memory::{MemoryConfig, MemoryRun, MessageQuery, StoredMessage};

fn mem(store: &Rc<InMemoryStore>, filter_incomplete: bool) -> MemoryRun {
    let config = MemoryConfig { filter_incomplete_tool_calls: filter_incomplete, ..Default::default() };
    MemoryRun { store: store.clone(), thread_id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, config, save_per_step: false, indexer: None }
}

fn stored(store: &InMemoryStore) -> Vec<StoredMessage> {
    block_on(store.list_messages(&MessageQuery { thread_id: "t1".into(), last: None, before: None })).unwrap()
}

/// The tool-invocation parts of a stored message: (id, state).
fn invocations(m: &StoredMessage) -> Vec<(String, String)> {
    m.parts
        .iter()
        .filter_map(|p| p.get("toolInvocation"))
        .map(|i| (i["toolCallId"].as_str().unwrap().to_string(), i["state"].as_str().unwrap().to_string()))
        .collect()
}

fn pair(id: &str, state: &str) -> (String, String) {
    (id.to_string(), state.to_string())
}

/// Notes, as each waiting chunk goes out, what the thread holds.
struct MessagesAtChunk {
    chunks: Collect,
    store: Rc<InMemoryStore>,
    seen: RefCell<Option<Vec<StoredMessage>>>,
}

impl Sink for MessagesAtChunk {
    fn emit(&self, chunk: Chunk) {
        if matches!(chunk, Chunk::ToolCallSuspended { .. } | Chunk::ToolCallApproval { .. }) && self.seen.borrow().is_none() {
            *self.seen.borrow_mut() = Some(stored(&self.store));
        }
        self.chunks.emit(chunk);
    }
    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()> {
        self.chunks.step_finished(step)
    }
}

fn at_chunk(store: &Rc<InMemoryStore>) -> MessagesAtChunk {
    MessagesAtChunk { chunks: Collect::default(), store: store.clone(), seen: RefCell::new(None) }
}

/// A run on thread t1 with tools `pay` (suspends) and `weather`; `first` are the model's replies.
fn suspending_run(store: &Rc<InMemoryStore>, close: bool, replies: Vec<Reply>, approve_weather: bool) -> (RunOutcome, MessagesAtChunk) {
    let mut weather = tool("weather");
    if approve_weather {
        weather.approval = Approval::Always;
    }
    let mut cfg = with_tools(vec![tool("pay"), weather]);
    cfg.runs = runs_cfg(store, close);
    cfg.memory = Some(mem(store, true));
    let s = script(replies);
    let (host, approvals, sink) = (SuspendHost::default(), Approvals::default(), at_chunk(store));
    let abort = s.abort.clone();
    let out = block_on(run(cfg, &s, &sink, &host, &approvals, &abort));
    (out, sink)
}

#[test]
fn the_user_and_assistant_messages_are_stored_with_the_waiting_call_before_it_is_announced() {
    let store = Rc::new(InMemoryStore::new());
    let (out, sink) = suspending_run(&store, true, vec![two_calls()], false);
    assert_eq!(out.finish_reason(), FinishReason::Suspended);
    let seen = sink.seen.borrow().clone().expect("a suspension chunk went out");
    assert_eq!(seen.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(), ["user", "assistant"], "both stored before the chunk");
    let a = &seen[1];
    assert_eq!(invocations(a), [pair("w", "result"), pair("p", "suspended")]);
    let entry = &a.metadata.as_ref().unwrap()["suspendedTools"]["p"];
    assert_eq!(entry["runId"], "run1");
    assert_eq!(entry["type"], "suspension");
    assert_eq!(entry["toolName"], "pay");
    assert_eq!(entry["args"], json!({ "city": "A" }));
    assert_eq!(entry["suspendPayload"], json!({ "ask": "pin" }));
    assert_eq!(entry["resumeSchema"], r#"{"type":"object"}"#);
    assert!(a.metadata.as_ref().unwrap().get("pendingToolApprovals").is_none());
    assert_eq!(stored(&store), seen, "the run's end did not save over it");
}

#[test]
fn a_resume_from_the_snapshot_turns_the_waiting_part_into_its_result_and_keeps_the_earlier_steps() {
    let store = Rc::new(InMemoryStore::new());
    // Step 1 calls weather; step 2 calls pay, which suspends.
    let replies = vec![calls_reply(&[("w", "weather", r#"{"city":"B"}"#)]), calls_reply(&[("p", "pay", r#"{"city":"A"}"#)])];
    let (out, _) = suspending_run(&store, true, replies, false);
    assert_eq!(out.finish_reason(), FinishReason::Suspended);
    let before = stored(&store);
    assert_eq!(invocations(&before[1]), [pair("w", "result"), pair("p", "suspended")]);
    let rec = stored_run(&store).unwrap();

    let mut cfg = with_tools(vec![tool("pay"), tool("weather")]);
    cfg.runs = runs_cfg(&store, false);
    cfg.memory = Some(mem(&store, true));
    cfg.resume = Some(restore(&rec, ("p".into(), Decision::Resume(json!({ "pin": "42" })))).unwrap());
    let s2 = script(vec![text_reply("paid")]);
    let (host2, sink2) = (SuspendHost::default(), Collect::default());
    let abort2 = s2.abort.clone();
    let out2 = block_on(run(cfg, &s2, &sink2, &host2, &Approvals::default(), &abort2));
    assert!(out2.error.is_none(), "{:?}", out2.error);
    let after = stored(&store);
    assert_eq!(after.len(), 2, "the same message, not a second one");
    let a = &after[1];
    assert_eq!(a.id, before[1].id);
    assert_eq!(a.created_at, before[1].created_at, "it keeps its place in the thread");
    assert_eq!(invocations(a), [pair("w", "result"), pair("p", "result")], "{:?}", a.parts);
    assert_eq!(a.parts.iter().filter(|p| p["type"] == "step-start").count(), 3);
    assert_eq!(a.parts.last().unwrap()["text"], "paid");
    assert!(a.metadata.is_none(), "the waiting entry is gone: {:?}", a.metadata);
}

#[test]
fn an_approval_waits_in_pending_tool_approvals_and_a_new_run_leaves_it_out_of_its_prompt() {
    let store = Rc::new(InMemoryStore::new());
    let (out, _) = suspending_run(&store, true, vec![calls_reply(&[("a", "weather", r#"{"city":"A"}"#)])], true);
    assert_eq!(out.finish_reason(), FinishReason::Suspended);
    let a = stored(&store)[1].clone();
    assert_eq!(invocations(&a), [pair("a", "approval-requested")]);
    let entry = &a.metadata.as_ref().unwrap()["pendingToolApprovals"]["a"];
    assert_eq!((entry["type"].clone(), entry["runId"].clone()), (json!("approval"), json!("run1")));
    assert_eq!(entry["resumeSchema"], crate::core::chunk::APPROVAL_RESUME_SCHEMA);

    // A new run on the thread, even one that keeps incomplete calls, does not send the waiting one.
    for filter in [true, false] {
        let mut cfg = with_tools(vec![tool("weather")]);
        cfg.run_id = "run2".into();
        cfg.memory = Some(mem(&store, filter));
        let s = script(vec![text_reply("hello")]);
        let sink = Collect::default();
        let abort = s.abort.clone();
        let out = block_on(run(cfg, &s, &sink, &SuspendHost::default(), &Approvals::default(), &abort));
        assert!(out.error.is_none(), "{:?}", out.error);
        let body = s.requests.borrow()[0].body.clone();
        assert!(!body.contains("\"a\""), "the waiting call stays out of the prompt: {body}");
    }
    assert_eq!(stored_run(&store).unwrap().status, RunStatus::Suspended, "the suspended run stays resumable");
    assert_eq!(invocations(&stored(&store)[1]), [pair("a", "approval-requested")]);
}

/// A `pay` call waiting live (closeOnSuspend false), with `act` done once it waits.
fn live_wait_with_memory(act: impl Fn(&AbortFlag, &Approvals)) -> (RunOutcome, Rc<InMemoryStore>) {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = with_tools(vec![tool("pay")]);
    cfg.runs = runs_cfg(&store, false);
    cfg.memory = Some(mem(&store, true));
    let s = script(vec![calls_reply(&[("p", "pay", r#"{"city":"A"}"#)]), text_reply("done")]);
    let (host, approvals, sink) = (SuspendHost::default(), Approvals::default(), Collect::default());
    let abort = s.abort.clone();
    let mut acted = false;
    let out = block_on_ticking(run(cfg, &s, &sink, &host, &approvals, &abort), |_| {
        if !acted && approvals.is_waiting("p") {
            acted = true;
            act(&abort, &approvals);
        }
    });
    (out, store)
}

#[test]
fn a_live_decision_replaces_the_waiting_message_with_the_result() {
    let (out, store) = live_wait_with_memory(|_, approvals| {
        assert!(approvals.decide("p", Decision::Resume(json!({ "pin": "1" }))));
    });
    assert!(out.error.is_none(), "{:?}", out.error);
    let msgs = stored(&store);
    assert_eq!(msgs.len(), 2);
    assert_eq!(invocations(&msgs[1]), [pair("p", "result")]);
    assert!(msgs[1].metadata.is_none());
}

#[test]
fn an_abort_while_waiting_stores_the_call_denied_and_a_detached_reader_leaves_it_waiting() {
    let (out, store) = live_wait_with_memory(|abort, _| {
        abort.abort(Some("stop".into()));
    });
    assert_eq!(out.finish_reason(), FinishReason::Abort);
    let msgs = stored(&store);
    assert_eq!(invocations(&msgs[1]), [pair("p", "output-denied")]);
    assert!(msgs[1].metadata.is_none());

    let (out, store) = live_wait_with_memory(|abort, _| {
        abort.detach(Some("the stream was cancelled".into()));
    });
    assert_eq!(out.finish_reason(), FinishReason::Abort);
    let msgs = stored(&store);
    assert_eq!(invocations(&msgs[1]), [pair("p", "suspended")]);
    assert!(msgs[1].metadata.as_ref().unwrap()["suspendedTools"].get("p").is_some());
}

/// Run 2 on the thread with `autoResumeSuspendedTools`, after run 1 suspended `pay` (call "p").
fn auto_resume_run(store: &Rc<InMemoryStore>, args: &str) -> (RunOutcome, Collect, Rc<Script>, SuspendHost) {
    let mut cfg = with_tools(vec![tool("pay"), tool("weather")]);
    cfg.run_id = "run2".into();
    cfg.runs = runs_cfg(store, true);
    cfg.runs.as_mut().unwrap().auto_resume = true;
    cfg.memory = Some(mem(store, true));
    let s = script(vec![calls_reply(&[("q", "pay", args)]), text_reply("done")]);
    let (host, sink) = (SuspendHost::default(), Collect::default());
    let abort = s.abort.clone();
    let out = block_on(run(cfg, &s, &sink, &host, &Approvals::default(), &abort));
    (out, sink, s, host)
}

#[test]
fn auto_resume_lists_the_suspended_call_and_a_call_naming_it_resumes_it_and_closes_the_earlier_run() {
    let store = Rc::new(InMemoryStore::new());
    suspending_run(&store, true, vec![two_calls()], false);
    let (out, sink, s, host) = auto_resume_run(&store, r#"{"city":"A","resumeData":{"pin":"77"},"suspendedToolCallId":"p"}"#);
    assert!(out.error.is_none(), "{:?}", out.error);
    let body: Value = serde_json::from_str(&s.requests.borrow()[0].body).unwrap();
    let system = body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("suspendedToolCallId") && system.contains("\"toolCallId\":\"p\""), "{system}");
    let pay = body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "pay").unwrap().clone();
    assert_eq!(pay["function"]["parameters"]["properties"]["suspendedToolCallId"]["type"], "string", "{pay}");
    let executed = host.executed.borrow();
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].1, Some(crate::core::tools::Resumed { resume_data: json!({ "pin": "77" }), suspend_payload: json!({ "ask": "pin" }) }));
    let result = payload_of(&sink, "tool-result");
    assert_eq!((result["args"].clone(), result["result"].clone()), (json!({ "city": "A" }), json!({ "paid": { "pin": "77" } })));
    let old = stored_run(&store).unwrap();
    assert_eq!(old.status, RunStatus::Completed);
    assert!(old.snapshot.is_none());
    assert_eq!(old.waiting[0].call.tool_call_id, "p");
    let msgs = stored(&store);
    assert_eq!(invocations(&msgs[1]), [pair("w", "result"), pair("p", "result")], "the earlier wait is closed in the thread");
    assert!(msgs[1].metadata.is_none());
    assert_eq!(invocations(&msgs[3]), [pair("q", "result")]);
}

#[test]
fn auto_resume_refuses_a_call_naming_nothing_waiting_and_leaves_the_wait() {
    let store = Rc::new(InMemoryStore::new());
    suspending_run(&store, true, vec![two_calls()], false);
    let (out, sink, _, host) = auto_resume_run(&store, r#"{"city":"A","resumeData":{"pin":"77"},"suspendedToolCallId":"zz"}"#);
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(payload_of(&sink, "tool-error")["error"]["message"].as_str().unwrap_or_default().contains("no suspended call zz"), "{:?}", payload_of(&sink, "tool-error"));
    assert!(host.executed.borrow().is_empty());
    assert_eq!(stored_run(&store).unwrap().status, RunStatus::Suspended);
}

#[cfg(feature = "scorers")]
#[test]
fn a_resumed_run_stores_the_reports_of_its_failed_completion_checks() {
    use super::super::completion_loop::{with_check, Judge};
    let store = Rc::new(InMemoryStore::new());
    let (out, _) = suspending_run(&store, true, vec![calls_reply(&[("p", "pay", r#"{"city":"A"}"#)])], false);
    assert_eq!(out.finish_reason(), FinishReason::Suspended);
    let rec = stored_run(&store).unwrap();

    let judge = Rc::new(Judge::default());
    let mut cfg = with_check(with_tools(vec![tool("pay"), tool("weather")]), &judge, false);
    cfg.runs = runs_cfg(&store, false);
    cfg.memory = Some(mem(&store, true));
    cfg.resume = Some(restore(&rec, ("p".into(), Decision::Resume(json!({ "pin": "42" })))).unwrap());
    let s2 = script(vec![text_reply("paid, meh"), text_reply("paid, all good")]);
    let (host2, sink2) = (SuspendHost::default(), Collect::default());
    let abort2 = s2.abort.clone();
    let out2 = block_on(run(cfg, &s2, &sink2, &host2, &Approvals::default(), &abort2));
    assert!(out2.error.is_none(), "{:?}", out2.error);
    assert_eq!(judge.seen.borrow().len(), 2, "the check ran after each final step");
    let after = stored(&store);
    let notes: Vec<&StoredMessage> = after.iter().filter(|m| m.metadata.as_ref().is_some_and(|md| md.get("completionResult").is_some())).collect();
    assert_eq!(notes.len(), 1, "the failed check's report is stored: {after:?}");
    assert_eq!(notes[0].role, "assistant");
    assert_eq!(notes[0].metadata.as_ref().unwrap()["completionResult"], json!({ "passed": false, "suppressFeedback": false }));
    let text: String = notes[0].parts.iter().filter_map(|p| p["text"].as_str()).collect();
    assert!(text.contains("Completion Check Results") && text.contains("say good"), "{text}");
    assert_eq!(after.last().unwrap().id, notes[0].id, "after the reply");
}
