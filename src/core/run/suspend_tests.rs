//! Suspension in the loop (SPEC §19.1–19.3), natively: a step whose calls wait stores its record
//! before the waiting chunks go out; live decisions continue it in place; `closeOnSuspend` ends
//! the run 'suspended' and a resume from the stored snapshot goes on where it stopped.

use std::cell::{Cell, RefCell};

use serde_json::{json, Value};

use super::tools::{calls_reply, text_reply, tool, with_tools};
use super::*;
use crate::core::memory::{InMemoryStore, Store};
use crate::core::run::suspend::{restore, RunsCfg};
use crate::core::runs::{RunStatus, WaitKind};
use crate::core::tools::{Approval, Approvals, Decision, Resumed, Suspension, ToolCtx, ToolHost};

/// `pay` suspends on its first execution and pays with the resume data on the next; other tools
/// answer at once.
#[derive(Default)]
struct SuspendHost {
    executed: RefCell<Vec<(String, Option<Resumed>)>>,
    pending: RefCell<Vec<(String, Suspension)>>,
    stored: RefCell<Vec<String>>,
}

impl ToolHost for SuspendHost {
    fn execute<'a>(&'a self, ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let id = ctx.call.tool_call_id.clone();
            self.executed.borrow_mut().push((id.clone(), ctx.resume.cloned()));
            if ctx.call.tool_name != "pay" {
                return Ok(json!({ "tool": ctx.call.tool_name }));
            }
            match ctx.resume {
                None => {
                    let s = Suspension { payload: json!({ "ask": "pin" }), resume_schema: Some(json!({ "type": "object" })) };
                    self.pending.borrow_mut().push((id, s));
                    // Ignored: the call suspended.
                    Ok(json!("returned after suspend"))
                }
                Some(r) => Ok(json!({ "paid": r.resume_data })),
            }
        })
    }
    fn take_suspension(&self, tool_call_id: &str) -> Option<Suspension> {
        let mut p = self.pending.borrow_mut();
        let at = p.iter().position(|(id, _)| id == tool_call_id)?;
        Some(p.remove(at).1)
    }
    fn suspension_stored(&self, tool_call_id: &str) {
        self.stored.borrow_mut().push(tool_call_id.to_string());
    }
}

impl Hooks for SuspendHost {}

/// Collects chunks and notes, as each waiting chunk goes out, whether the run's record was
/// already in storage.
struct Watch {
    chunks: Collect,
    store: Rc<InMemoryStore>,
    record_before_chunk: Cell<Option<bool>>,
}

impl Sink for Watch {
    fn emit(&self, chunk: Chunk) {
        if matches!(chunk, Chunk::ToolCallSuspended { .. } | Chunk::ToolCallApproval { .. }) {
            let found = block_on(self.store.runs().unwrap().get_run("run1")).unwrap();
            self.record_before_chunk.set(Some(found.is_some_and(|r| r.status == RunStatus::Suspended)));
        }
        self.chunks.emit(chunk);
    }
    fn step_finished<'a>(&'a self, step: &'a StepResult) -> LocalFuture<'a, ()> {
        self.chunks.step_finished(step)
    }
}

fn watch(store: &Rc<InMemoryStore>) -> Watch {
    Watch { chunks: Collect::default(), store: store.clone(), record_before_chunk: Cell::new(None) }
}

fn runs_cfg(store: &Rc<InMemoryStore>, close: bool) -> Option<RunsCfg> {
    let store: Rc<dyn Store> = store.clone();
    Some(RunsCfg { store: Some(store), agent_id: "shop".into(), close_on_suspend: close, restore: json!({}), auto_resume: false, auto_waits: Vec::new(), retain_ms: None })
}

fn script(replies: Vec<Reply>) -> Rc<Script> {
    Rc::new(Script { replies: RefCell::new(replies.into()), ..Default::default() })
}

fn payload_of(sink: &Collect, ty: &str) -> Value {
    sink.chunks.borrow().iter().find(|c| c.type_name() == ty).map(Chunk::payload).unwrap_or(Value::Null)
}

fn two_calls() -> Reply {
    calls_reply(&[("p", "pay", r#"{"city":"A"}"#), ("w", "weather", r#"{"city":"B"}"#)])
}

fn stored_run(store: &InMemoryStore) -> Option<crate::core::runs::RunRecord> {
    block_on(store.runs().unwrap().get_run("run1")).unwrap()
}

#[test]
fn a_suspended_call_waits_after_the_others_and_resumes_in_place() {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = with_tools(vec![tool("pay"), tool("weather")]);
    cfg.runs = runs_cfg(&store, false);
    let s = script(vec![two_calls(), text_reply("paid")]);
    let (host, approvals, sink) = (SuspendHost::default(), Approvals::default(), watch(&store));
    let abort = s.abort.clone();
    let mut decided = false;
    let out = block_on_ticking(run(cfg, &s, &sink, &host, &approvals, &abort), |_| {
        if !decided && approvals.is_waiting("p") {
            decided = true;
            assert_eq!(stored_run(&store).unwrap().waiting[0].kind, WaitKind::Suspension);
            assert!(approvals.decide("p", Decision::Resume(json!({ "pin": "1234" }))));
        }
    });
    assert!(out.error.is_none(), "{:?}", out.error);
    let types = sink.chunks.types();
    let at = |t: &str| types.iter().position(|x| *x == t).unwrap();
    assert!(at("tool-result") < at("tool-call-suspended"), "the other call's result comes first: {types:?}");
    assert_eq!(sink.record_before_chunk.get(), Some(true), "the record is stored before the chunk goes out");
    let p = payload_of(&sink.chunks, "tool-call-suspended");
    assert_eq!((p["toolCallId"].clone(), p["suspendPayload"].clone()), (json!("p"), json!({ "ask": "pin" })));
    assert_eq!(p["resumeSchema"], r#"{"type":"object"}"#);
    assert_eq!(host.stored.borrow().as_slice(), ["p"], "suspend() resolves once stored");
    let runs = host.executed.borrow();
    assert_eq!(runs.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["p", "w", "p"]);
    assert_eq!(runs[2].1, Some(Resumed { resume_data: json!({ "pin": "1234" }), suspend_payload: json!({ "ask": "pin" }) }));
    let body: Value = serde_json::from_str(&s.requests.borrow()[1].body).unwrap();
    let tool_msg = body["messages"].as_array().unwrap().iter().find(|m| m["tool_call_id"] == "p").unwrap().clone();
    assert!(tool_msg["content"].as_str().unwrap().contains("1234"), "{tool_msg}");
    assert!(!body.to_string().contains("returned after suspend"), "what execute returned after suspend() is ignored");
    assert_eq!(out.text(), "paid");
    assert_eq!(out.finish_reason(), FinishReason::Stop);
    assert!(stored_run(&store).is_none(), "a run that ended keeps no record");
}

#[test]
fn close_on_suspend_ends_the_run_and_a_resume_from_the_snapshot_goes_on() {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = with_tools(vec![tool("pay"), tool("weather")]);
    cfg.runs = runs_cfg(&store, true);
    let s = script(vec![two_calls()]);
    let (host, approvals, sink) = (SuspendHost::default(), Approvals::default(), watch(&store));
    let abort = s.abort.clone();
    let out = block_on(run(cfg, &s, &sink, &host, &approvals, &abort));
    assert_eq!(out.finish_reason(), FinishReason::Suspended);
    let types = sink.chunks.types();
    assert_eq!(&types[types.len() - 2..], ["tool-call-suspended", "finish"]);
    assert!(!types.contains(&"step-finish"), "the step is not over: {types:?}");
    assert_eq!(payload_of(&sink.chunks, "finish")["stepResult"]["reason"], "suspended");
    assert!(!approvals.any_waiting(), "nothing waits in this process");
    let rec = stored_run(&store).expect("the record stays");
    assert_eq!((rec.status, rec.agent_id.as_str(), rec.waiting.len()), (RunStatus::Suspended, "shop", 1));
    let snap = rec.snapshot.clone().unwrap();
    assert_eq!(snap["v"], 1);
    assert!(!snap.to_string().contains("Bearer"), "no key in a snapshot");

    // Another agent instance resumes it from storage.
    let mut cfg = with_tools(vec![tool("pay"), tool("weather")]);
    cfg.runs = runs_cfg(&store, false);
    cfg.resume = Some(restore(&rec, ("p".into(), Decision::Resume(json!({ "pin": "42" })))).unwrap());
    let s2 = script(vec![text_reply("paid now")]);
    let (host2, sink2) = (SuspendHost::default(), watch(&store));
    let abort2 = s2.abort.clone();
    let out2 = block_on(run(cfg, &s2, &sink2, &host2, &approvals, &abort2));
    assert!(out2.error.is_none(), "{:?}", out2.error);
    let types = sink2.chunks.types();
    assert_eq!(types[0], "tool-result", "no start chunk; the resolved call comes first: {types:?}");
    assert_eq!(payload_of(&sink2.chunks, "tool-result")["result"], json!({ "paid": { "pin": "42" } }));
    assert_eq!(types.iter().filter(|t| **t == "tool-result").count(), 1, "the settled call is not run again");
    assert_eq!(host2.executed.borrow().len(), 1);
    assert_eq!(payload_of(&sink2.chunks, "step-finish")["output"]["toolCalls"].as_array().unwrap().len(), 2);
    let body: Value = serde_json::from_str(&s2.requests.borrow()[0].body).unwrap();
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["content"], "hi", "the conversation so far: {body}");
    assert!(msgs.iter().any(|m| m["tool_call_id"] == "w") && msgs.iter().any(|m| m["tool_call_id"] == "p"));
    assert_eq!(out2.text(), "paid now");
    assert!(stored_run(&store).is_none());
}

#[test]
fn an_approval_declined_from_the_snapshot_never_runs_the_tool() {
    let store = Rc::new(InMemoryStore::new());
    let mut guarded = tool("weather");
    guarded.approval = Approval::Always;
    let mut cfg = with_tools(vec![guarded.clone()]);
    cfg.runs = runs_cfg(&store, true);
    let s = script(vec![calls_reply(&[("a", "weather", r#"{"city":"A"}"#)])]);
    let (host, approvals, sink) = (SuspendHost::default(), Approvals::default(), watch(&store));
    let abort = s.abort.clone();
    let out = block_on(run(cfg, &s, &sink, &host, &approvals, &abort));
    assert_eq!(out.finish_reason(), FinishReason::Suspended);
    assert_eq!(sink.record_before_chunk.get(), Some(true));
    let rec = stored_run(&store).unwrap();
    assert_eq!(rec.waiting[0].kind, WaitKind::Approval);
    let mut cfg = with_tools(vec![guarded]);
    cfg.runs = runs_cfg(&store, false);
    cfg.resume = Some(restore(&rec, ("a".into(), Decision::Decline { reason: Some("too far".into()) })).unwrap());
    let s2 = script(vec![text_reply("ok, not then")]);
    let sink2 = watch(&store);
    let abort2 = s2.abort.clone();
    let out2 = block_on(run(cfg, &s2, &sink2, &host, &approvals, &abort2));
    assert_eq!(sink2.chunks.types()[0], "tool-output-denied");
    assert_eq!(payload_of(&sink2.chunks, "tool-output-denied")["approval"], json!({ "id": "a", "approved": false, "reason": "too far" }));
    assert!(host.executed.borrow().is_empty(), "execute never runs");
    assert_eq!(out2.text(), "ok, not then");
}

/// One `pay` call that waits for approval, with `act` done to the run's flag once it waits.
fn cut_while_waiting(act: impl Fn(&AbortFlag)) -> (RunOutcome, Rc<InMemoryStore>, Approvals) {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = with_tools(vec![tool("pay")]);
    cfg.runs = runs_cfg(&store, false);
    let s = script(vec![calls_reply(&[("p", "pay", r#"{"city":"A"}"#)])]);
    let (host, approvals, sink) = (SuspendHost::default(), Approvals::default(), watch(&store));
    let abort = s.abort.clone();
    let out = block_on_ticking(run(cfg, &s, &sink, &host, &approvals, &abort), |_| {
        if approvals.is_waiting("p") {
            act(&abort);
        }
    });
    (out, store, approvals)
}

#[test]
fn an_abort_while_waiting_removes_the_record() {
    let (out, store, approvals) = cut_while_waiting(|abort| {
        abort.abort(Some("stop".into()));
    });
    assert_eq!(out.finish_reason(), FinishReason::Abort);
    assert!(stored_run(&store).is_none());
    assert!(!approvals.is_waiting("p"));
}

#[test]
fn a_reader_that_goes_away_while_the_run_waits_leaves_it_suspended_in_storage() {
    let (out, store, _) = cut_while_waiting(|abort| {
        abort.detach(Some("the stream was cancelled".into()));
    });
    assert_eq!(out.finish_reason(), FinishReason::Abort);
    let rec = stored_run(&store).expect("the run stays resumable");
    assert_eq!((rec.status, rec.waiting[0].call.tool_call_id.as_str()), (RunStatus::Suspended, "p"));
}

/// A storage whose run methods fail: the suspension cannot be stored.
struct BrokenRuns(InMemoryStore);

impl crate::core::runs::RunStore for BrokenRuns {
    fn save_run<'a>(&'a self, _run: &'a crate::core::runs::RunRecord) -> LocalFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Err(AgentError::storage("storage.saveRun failed: disk full")) })
    }
    fn get_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<Option<crate::core::runs::RunRecord>, AgentError>> {
        self.0.runs().unwrap().get_run(run_id)
    }
    fn update_run<'a>(&'a self, run_id: &'a str, patch: &'a Value, expected: Option<RunStatus>) -> LocalFuture<'a, Result<Option<crate::core::runs::RunRecord>, AgentError>> {
        self.0.runs().unwrap().update_run(run_id, patch, expected)
    }
    fn list_runs<'a>(&'a self, filter: &'a crate::core::runs::RunFilter) -> LocalFuture<'a, Result<Vec<crate::core::runs::RunRecord>, AgentError>> {
        self.0.runs().unwrap().list_runs(filter)
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.0.runs().unwrap().delete_run(run_id)
    }
    fn append_run_chunks<'a>(&'a self, run_id: &'a str, chunks: &'a [Value]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.0.runs().unwrap().append_run_chunks(run_id, chunks)
    }
    fn list_run_chunks<'a>(&'a self, run_id: &'a str, after: u64, limit: Option<usize>) -> LocalFuture<'a, Result<Vec<Value>, AgentError>> {
        self.0.runs().unwrap().list_run_chunks(run_id, after, limit)
    }
    fn delete_run_chunks<'a>(&'a self, run_id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.0.runs().unwrap().delete_run_chunks(run_id)
    }
}

macro_rules! delegate_store {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        impl Store for BrokenRuns {
            $(fn $name<'a>(&'a self, $($arg: &'a $ty),*) -> LocalFuture<'a, Result<$out, AgentError>> { self.0.$name($($arg),*) })*
            fn save_task<'a>(&'a self, task: &'a crate::core::background::TaskRecord, previous: Option<crate::core::background::TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>> {
                self.0.save_task(task, previous)
            }
            fn runs(&self) -> Option<&dyn crate::core::runs::RunStore> {
                Some(self)
            }
        }
    };
}

delegate_store! {
    get_thread_by_id(id: str) -> Option<crate::core::memory::Thread>;
    save_thread(thread: crate::core::memory::Thread) -> ();
    delete_thread(id: str) -> ();
    list_threads(resource_id: str) -> Vec<crate::core::memory::Thread>;
    list_messages(q: crate::core::memory::MessageQuery) -> Vec<crate::core::memory::StoredMessage>;
    save_messages(messages: [crate::core::memory::StoredMessage]) -> ();
    delete_messages(ids: [String]) -> ();
    get_resource(id: str) -> Option<crate::core::memory::Resource>;
    save_resource(resource: crate::core::memory::Resource) -> ();
    list_tasks(filter: crate::core::background::TaskFilter) -> Vec<crate::core::background::TaskRecord>;
}

#[test]
fn a_suspension_that_cannot_be_stored_ends_the_run_with_an_error_and_announces_nothing() {
    let store: Rc<dyn Store> = Rc::new(BrokenRuns(InMemoryStore::new()));
    let mut cfg = with_tools(vec![tool("pay")]);
    cfg.runs = Some(RunsCfg { store: Some(store), agent_id: "shop".into(), close_on_suspend: false, restore: json!({}), auto_resume: false, auto_waits: Vec::new(), retain_ms: None });
    let s = script(vec![calls_reply(&[("p", "pay", r#"{"city":"A"}"#)])]);
    let (host, approvals, sink) = (SuspendHost::default(), Approvals::default(), Collect::default());
    let abort = s.abort.clone();
    let out = block_on(run(cfg, &s, &sink, &host, &approvals, &abort));
    let types = sink.types();
    assert!(!types.contains(&"tool-call-suspended"), "nobody is told about a wait nobody could resume: {types:?}");
    assert_eq!(*types.last().unwrap(), "error");
    assert!(out.error.unwrap().to_string().contains("disk full"));
    assert!(host.stored.borrow().is_empty(), "suspend() never resolves as stored");
}

#[cfg(test)]
#[path = "suspend_memory_tests.rs"]
mod memory;
