//! Memory in a run, natively against the in-memory store: what is stored and when, what the
//! next turn sends, ownership, read-only, and interruptions at each point of a two-step run.

use std::rc::Rc;

use serde_json::{json, Value};

use super::tools::{calls_reply, simple, text_reply, tool, tool_call_event, Run, TestHost};
use super::*;
use crate::core::memory::{InMemoryStore, MemoryConfig, MemoryRun, MessageQuery, StoredMessage, Store, Thread};
use crate::core::tools::{Approval, Approvals};

fn mem(store: &Rc<InMemoryStore>, thread: &str, resource: &str) -> MemoryRun {
    MemoryRun {
        store: store.clone(),
        thread_id: thread.into(),
        resource_id: resource.into(),
        title: None,
        metadata: None,
        config: MemoryConfig::default(),
        save_per_step: false,
        indexer: None,
    }
}

fn cfg_with(memory: MemoryRun, text: &str) -> RunConfig {
    let mut cfg = config(0, false);
    cfg.request.messages = vec![ModelMessage::System("Be brief.".into()), ModelMessage::User(vec![UserPart::Text(text.into())])];
    cfg.input_start = 1;
    cfg.memory = Some(memory);
    cfg
}

fn stored(store: &InMemoryStore, thread: &str) -> Vec<StoredMessage> {
    block_on(store.list_messages(&MessageQuery { thread_id: thread.into(), last: None, before: None })).unwrap()
}

fn roles_and_text(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            let calls = m["tool_calls"].as_array().map(|c| format!(" +{} call(s)", c.len())).unwrap_or_default();
            format!("{}: {content}{calls}", m["role"].as_str().unwrap())
        })
        .collect()
}

fn go(replies: Vec<Reply>, cfg: RunConfig) -> Run {
    simple(replies, cfg, &TestHost::default())
}

#[test]
fn a_user_message_with_its_own_id_is_stored_under_it() {
    let store = Rc::new(InMemoryStore::new());
    let (input, ids) = crate::core::input::parse_messages_with_ids(
        &json!(["first", { "id": "ui-42", "role": "user", "parts": [{ "type": "text", "text": "hi" }] }]),
        "messages",
    )
    .unwrap();
    assert_eq!(ids, vec![None, Some("ui-42".to_string())]);
    let mut cfg = cfg_with(mem(&store, "t1", "u1"), "unused");
    cfg.request.messages.truncate(1);
    cfg.request.messages.extend(input);
    cfg.input_ids = ids;
    let out = go(vec![text_reply("Hello!")], cfg);
    assert!(out.out.error.is_none());
    let msgs = stored(&store, "t1");
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1].id, "ui-42");
    assert_eq!(msgs[1].parts, vec![json!({ "type": "text", "text": "hi" })]);
    assert!(msgs[0].id != "ui-42" && !msgs[0].id.is_empty(), "a message without an id gets a new one");
}

#[test]
fn a_thread_deleted_while_the_reply_streams_stays_deleted() {
    for first_turn in [true, false] {
        let store = Rc::new(InMemoryStore::new());
        if !first_turn {
            let earlier = cfg_with(mem(&store, "t1", "u1"), "earlier");
            assert!(go(vec![text_reply("Before.")], earlier).out.error.is_none());
            assert_eq!(stored(&store, "t1").len(), 2);
        }
        let script = Rc::new(Script { replies: RefCell::new(vec![text_reply("Hello!")].into()), ..Default::default() });
        let s2 = store.clone();
        // The page deletes the conversation while the model answers.
        *script.on_fetch.borrow_mut() = Some(Box::new(move |_| block_on(s2.delete_thread("t1")).unwrap()));
        let sink = Collect::default();
        let abort = script.abort.clone();
        let mut cfg = cfg_with(mem(&store, "t1", "u1"), "hi");
        cfg.title = None;
        let out = block_on(run(cfg, &script, &sink, &NoHooks, &Approvals::default(), &abort));
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(block_on(store.get_thread_by_id("t1")).unwrap().is_none(), "first turn {first_turn}: the thread is not brought back");
        assert!(stored(&store, "t1").is_empty(), "first turn {first_turn}: no message is saved into it");
        assert!(block_on(store.list_threads("u1")).unwrap().is_empty());
    }
}

#[test]
fn a_first_turn_creates_the_thread_and_stores_both_messages() {
    let store = Rc::new(InMemoryStore::new());
    let seen = Rc::new(RefCell::new(0usize));
    let script = Rc::new(Script { replies: RefCell::new(vec![text_reply("Hello!")].into()), ..Default::default() });
    let (s2, seen2) = (store.clone(), seen.clone());
    *script.on_fetch.borrow_mut() = Some(Box::new(move |_| *seen2.borrow_mut() = stored(&s2, "t1").len()));
    let sink = Collect::default();
    let abort = script.abort.clone();
    let out = block_on(run(cfg_with(mem(&store, "t1", "u1"), "hi"), &script, &sink, &NoHooks, &Approvals::default(), &abort));
    assert!(out.error.is_none());
    assert_eq!(*seen.borrow(), 1, "the user message is saved before the model is called");
    let thread = block_on(store.get_thread_by_id("t1")).unwrap().unwrap();
    assert_eq!(thread.resource_id, "u1");
    let msgs = stored(&store, "t1");
    assert_eq!(msgs.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(), ["user", "assistant"]);
    assert_eq!(msgs[0].parts, vec![json!({ "type": "text", "text": "hi" })]);
    assert_eq!(msgs[1].parts, vec![json!({ "type": "step-start" }), json!({ "type": "text", "text": "Hello!" })]);
    assert!(msgs[0].created_at < msgs[1].created_at);
    assert_eq!(msgs[1].id, out.message_id, "the stored reply has the run's message id");
    let threads = block_on(store.list_threads("u1")).unwrap();
    assert_eq!(threads.len(), 1);
}

#[test]
fn the_next_turn_sends_the_history_before_the_new_message() {
    let store = Rc::new(InMemoryStore::new());
    go(vec![text_reply("Hello!")], cfg_with(mem(&store, "t1", "u1"), "hi"));
    let r = go(vec![text_reply("Fine.")], cfg_with(mem(&store, "t1", "u1"), "how are you?"));
    assert_eq!(roles_and_text(&r.body(0)), ["system: Be brief.", "user: hi", "assistant: Hello!", "user: how are you?"]);
    assert_eq!(stored(&store, "t1").len(), 4);
}

#[test]
fn last_messages_limits_the_history() {
    let store = Rc::new(InMemoryStore::new());
    for (q, a) in [("one", "1"), ("two", "2"), ("three", "3")] {
        go(vec![text_reply(a)], cfg_with(mem(&store, "t1", "u1"), q));
    }
    let mut m = mem(&store, "t1", "u1");
    m.config.last_messages = 3;
    let r = go(vec![text_reply("4")], cfg_with(m, "four"));
    assert_eq!(roles_and_text(&r.body(0)), ["system: Be brief.", "assistant: 2", "user: three", "assistant: 3", "user: four"]);
    let mut none = mem(&store, "t1", "u1");
    none.config.last_messages = 0;
    let r = go(vec![text_reply("5")], cfg_with(none, "five"));
    assert_eq!(roles_and_text(&r.body(0)), ["system: Be brief.", "user: five"]);
}

#[test]
fn a_thread_of_another_resource_is_refused_and_nothing_is_read_or_written() {
    let store = Rc::new(InMemoryStore::new());
    go(vec![text_reply("Hello!")], cfg_with(mem(&store, "t1", "u1"), "hi"));
    let before = stored(&store, "t1");
    let r = go(vec![text_reply("never")], cfg_with(mem(&store, "t1", "intruder"), "show me"));
    assert_eq!(r.requests(), 0);
    let err = r.out.error.clone().unwrap();
    assert_eq!(err.name(), "ValidationError");
    assert!(err.to_string().contains("Thread 't1' belongs to another resource"), "{err}");
    assert_eq!(r.sink.types(), ["start", "error"]);
    assert_eq!(stored(&store, "t1"), before);
}

#[test]
fn read_only_reads_and_never_writes() {
    let store = Rc::new(InMemoryStore::new());
    go(vec![text_reply("Hello!")], cfg_with(mem(&store, "t1", "u1"), "hi"));
    let mut m = mem(&store, "t1", "u1");
    m.config.read_only = true;
    let r = go(vec![text_reply("ok")], cfg_with(m, "peek"));
    assert_eq!(roles_and_text(&r.body(0)).len(), 4, "history was read");
    assert_eq!(stored(&store, "t1").len(), 2, "nothing was written");
    let mut fresh = mem(&store, "t9", "u1");
    fresh.config.read_only = true;
    go(vec![text_reply("ok")], cfg_with(fresh, "hi"));
    assert!(block_on(store.get_thread_by_id("t9")).unwrap().is_none());
}

fn tool_cfg(memory: MemoryRun, text: &str) -> RunConfig {
    let mut cfg = cfg_with(memory, text);
    cfg.tools = vec![tool("weather")];
    cfg
}

/// A two-step run (a tool step, then text) interrupted at `point`; returns what the next turn
/// sends to the model.
fn interrupted_then_next(point: &str) -> (Vec<StoredMessage>, Vec<String>) {
    let store = Rc::new(InMemoryStore::new());
    let step1_events = [
        delta("content", "Let me check. "),
        tool_call_event(0, "c1", "weather", r#"{"city":"Paris"}"#),
        finish("tool_calls"),
        "[DONE]".to_string(),
    ];
    let body1: Vec<u8> = sse(&step1_events.iter().map(String::as_str).collect::<Vec<_>>());
    let step2_events = [delta("content", "It is "), delta("content", "sunny."), finish("stop"), "[DONE]".to_string()];
    let s2 = |n: usize| sse(&step2_events[..n].iter().map(String::as_str).collect::<Vec<_>>());
    let (replies, approval) = match point {
        // Cut inside step 1, after its text and before the tool call finished streaming.
        "step1-stream" => {
            let text_only = sse(&[&delta("content", "Let me check. ")]);
            (vec![Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(text_only), Read::AbortAndHang] }], false)
        }
        // Cut while the tool waits for approval.
        "tool" => (vec![Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(body1.clone())] }], true),
        // Cut inside step 2, after "It is ".
        "step2-stream" => (
            vec![
                Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(body1.clone())] },
                Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(s2(1)), Read::AbortAndHang] },
            ],
            false,
        ),
        // Step 2's request fails.
        "step2-error" => (
            vec![
                Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(body1.clone())] },
                Reply::Http { status: 400, headers: vec![], reads: vec![Read::Bytes(b"{}".to_vec())] },
            ],
            false,
        ),
        _ => unreachable!(),
    };
    let mut cfg = tool_cfg(mem(&store, "t1", "u1"), "weather in Paris?");
    if approval {
        cfg.tools[0].approval = Approval::Always;
    }
    let script = Rc::new(Script { replies: RefCell::new(replies.into()), ..Default::default() });
    let sink = Collect::default();
    let abort = script.abort.clone();
    let host = TestHost::default();
    let out = block_on_ticking(run(cfg, &script, &sink, &host, &Approvals::default(), &abort), |i| {
        if approval && i == 20 {
            abort.abort(None);
        }
    });
    assert!(out.aborted.is_some() || out.error.is_some(), "{point}: the run was cut");
    let kept = stored(&store, "t1");
    let next = go(vec![text_reply("ok")], tool_cfg(mem(&store, "t1", "u1"), "and tomorrow?"));
    (kept, roles_and_text(&next.body(0)))
}

#[test]
fn an_interrupted_run_keeps_what_was_seen_and_the_next_prompt_stays_valid() {
    let (kept, next) = interrupted_then_next("step1-stream");
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1].metadata, Some(json!({ "interrupted": true })));
    assert_eq!(next, ["system: Be brief.", "user: weather in Paris?", "assistant: Let me check. ", "user: and tomorrow?"]);

    // An abort while a call waits for approval stores it denied, reason 'aborted' (SPEC §19.2).
    let (kept, next) = interrupted_then_next("tool");
    let states: Vec<&Value> = kept[1].parts.iter().filter_map(|p| p.get("toolInvocation")).map(|i| &i["state"]).collect();
    assert_eq!(states, [&json!("output-denied")], "never a call without its result: {:?}", kept[1].parts);
    assert_eq!(
        next,
        ["system: Be brief.", "user: weather in Paris?", "assistant: Let me check.  +1 call(s)", "tool: The user declined this tool call: aborted", "user: and tomorrow?"]
    );

    let (kept, next) = interrupted_then_next("step2-stream");
    let inv = kept[1].parts.iter().find(|p| p["type"] == "tool-invocation").unwrap();
    assert_eq!(inv["toolInvocation"]["state"], "result");
    assert_eq!(kept[1].metadata, Some(json!({ "interrupted": true })));
    assert_eq!(next[2], "assistant: Let me check.  +1 call(s)");
    assert!(next[3].starts_with("tool: {"), "{next:?}");
    assert_eq!(next[4], "assistant: It is ");
    assert_eq!(next[5], "user: and tomorrow?");

    let (kept, next) = interrupted_then_next("step2-error");
    assert_eq!(kept.len(), 2, "the user message and the complete step survive a failure");
    assert_eq!(next.len(), 5, "{next:?}");
}

#[test]
fn save_per_step_stores_each_step_as_it_finishes() {
    let store = Rc::new(InMemoryStore::new());
    let mut m = mem(&store, "t1", "u1");
    m.save_per_step = true;
    let script = Rc::new(Script {
        replies: RefCell::new(vec![calls_reply(&[("c1", "weather", r#"{"city":"P"}"#)]), text_reply("done")].into()),
        ..Default::default()
    });
    let at_second = Rc::new(RefCell::new(Vec::new()));
    let (s2, a2) = (store.clone(), at_second.clone());
    *script.on_fetch.borrow_mut() = Some(Box::new(move |i| {
        if i == 1 {
            *a2.borrow_mut() = stored(&s2, "t1");
        }
    }));
    let sink = Collect::default();
    let abort = script.abort.clone();
    block_on(run(tool_cfg(m, "go"), &script, &sink, &TestHost::default(), &Approvals::default(), &abort));
    let mid = at_second.borrow();
    assert_eq!(mid.len(), 2, "step 1 was stored before step 2 began");
    assert!(mid[1].parts.iter().any(|p| p["toolInvocation"]["state"] == "result"));
    let end = stored(&store, "t1");
    assert_eq!(end.len(), 2, "the same message grew");
    assert_eq!(end[1].parts.iter().filter(|p| p["type"] == "step-start").count(), 2);
}

#[test]
fn incomplete_calls_and_unknown_parts_stay_in_the_store_but_not_in_the_prompt() {
    let store = Rc::new(InMemoryStore::new());
    let thread = Thread { id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, created_at: "2026-01-01T00:00:00.000Z".into(), updated_at: "2026-01-01T00:00:00.000Z".into() };
    block_on(store.save_thread(&thread)).unwrap();
    let old = vec![
        StoredMessage { id: "m1".into(), thread_id: "t1".into(), resource_id: "u1".into(), role: "user".into(), created_at: "2026-01-01T00:00:01.000Z".into(), parts: vec![json!({ "type": "text", "text": "q" }), json!({ "type": "x-future", "v": 1 })], metadata: None },
        StoredMessage {
            id: "m2".into(), thread_id: "t1".into(), resource_id: "u1".into(), role: "assistant".into(), created_at: "2026-01-01T00:00:02.000Z".into(),
            parts: vec![json!({ "type": "text", "text": "a" }), json!({ "type": "tool-invocation", "toolInvocation": { "state": "call", "toolCallId": "dangling", "toolName": "weather", "args": {} } })],
            metadata: None,
        },
    ];
    block_on(store.save_messages(&old)).unwrap();
    let r = go(vec![text_reply("ok")], cfg_with(mem(&store, "t1", "u1"), "next"));
    assert_eq!(roles_and_text(&r.body(0)), ["system: Be brief.", "user: q", "assistant: a", "user: next"]);
    let kept = stored(&store, "t1");
    assert_eq!(kept[0].parts[1], json!({ "type": "x-future", "v": 1 }), "unknown parts are kept");
    assert_eq!(kept[1].parts.len(), 2);
}

/// A store that misbehaves as an IndexedDB or a storage object can, over the in-memory store.
struct OddStore {
    inner: InMemoryStore,
    fault: Fault,
}

enum Fault {
    /// Every write fails, as a full or blocked IndexedDB does.
    WritesFail,
    /// This read (`getThreadById`, `listMessages`, `getResource`) fails.
    ReadFails(&'static str),
    /// `saveMessages` is still under way when the run is aborted: the abort lands on its first
    /// poll, the write completes on the next.
    AbortMidSave(AbortFlag),
}

impl OddStore {
    fn new(fault: Fault) -> Self {
        OddStore { inner: InMemoryStore::new(), fault }
    }

    fn read<'a, T: 'a>(&self, method: &str, ok: LocalFuture<'a, Result<T, AgentError>>) -> LocalFuture<'a, Result<T, AgentError>> {
        if !matches!(self.fault, Fault::ReadFails(m) if m == method) {
            return ok;
        }
        let message = format!("storage.{method} failed: the disk is gone");
        Box::pin(async move { Err(AgentError::storage(message)) })
    }
}

fn out_of_quota<'a>() -> LocalFuture<'a, Result<(), AgentError>> {
    Box::pin(async { Err(AgentError::storage("IndexedDB is out of quota")) })
}

impl Store for OddStore {
    fn get_thread_by_id<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<Thread>, AgentError>> {
        self.read("getThreadById", self.inner.get_thread_by_id(id))
    }
    fn save_thread<'a>(&'a self, t: &'a Thread) -> LocalFuture<'a, Result<(), AgentError>> {
        match self.fault {
            Fault::WritesFail => out_of_quota(),
            _ => self.inner.save_thread(t),
        }
    }
    fn delete_thread<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.delete_thread(id)
    }
    fn list_threads<'a>(&'a self, r: &'a str) -> LocalFuture<'a, Result<Vec<Thread>, AgentError>> {
        self.inner.list_threads(r)
    }
    fn list_messages<'a>(&'a self, q: &'a MessageQuery) -> LocalFuture<'a, Result<Vec<StoredMessage>, AgentError>> {
        self.read("listMessages", self.inner.list_messages(q))
    }
    fn save_messages<'a>(&'a self, m: &'a [StoredMessage]) -> LocalFuture<'a, Result<(), AgentError>> {
        match &self.fault {
            Fault::WritesFail => out_of_quota(),
            Fault::AbortMidSave(abort) => {
                let mut first = true;
                Box::pin(std::future::poll_fn(move |cx| {
                    if std::mem::take(&mut first) {
                        abort.abort(None);
                        cx.waker().wake_by_ref();
                        return std::task::Poll::Pending;
                    }
                    self.inner.save_messages(m).as_mut().poll(cx)
                }))
            }
            Fault::ReadFails(_) => self.inner.save_messages(m),
        }
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.delete_messages(ids)
    }
    fn get_resource<'a>(&'a self, id: &'a str) -> LocalFuture<'a, Result<Option<crate::core::memory::Resource>, AgentError>> {
        self.read("getResource", self.inner.get_resource(id))
    }
    fn save_resource<'a>(&'a self, r: &'a crate::core::memory::Resource) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_resource(r)
    }
    fn save_task<'a>(&'a self, t: &'a crate::core::background::TaskRecord, p: Option<crate::core::background::TaskStatus>) -> LocalFuture<'a, Result<(), AgentError>> {
        self.inner.save_task(t, p)
    }
    fn list_tasks<'a>(&'a self, f: &'a crate::core::background::TaskFilter) -> LocalFuture<'a, Result<Vec<crate::core::background::TaskRecord>, AgentError>> {
        self.inner.list_tasks(f)
    }
}

#[test]
fn a_failing_write_lets_the_reply_stream_then_fails_the_run_with_one_storage_error() {
    let store = Rc::new(OddStore::new(Fault::WritesFail));
    let memory = MemoryRun { store, thread_id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, config: MemoryConfig::default(), save_per_step: false, indexer: None };
    let r = go(vec![text_reply("Still here.")], cfg_with(memory, "hi"));
    assert_eq!(r.requests(), 1, "the model is called");
    assert_eq!(r.out.text(), "Still here.");
    let err = r.out.error.clone().expect("the run failed");
    assert_eq!(err.name(), "StorageError");
    assert_eq!(r.out.finish_reason(), FinishReason::Error);
    let types = r.sink.types();
    assert_eq!(types, ["start", "step-start", "text-start", "text-delta", "text-end", "step-finish", "error"], "the reply, then its one error");
    let error = r.sink.chunks.borrow().last().unwrap().payload();
    assert_eq!(error["error"]["name"], "StorageError");
    assert!(error["error"]["message"].as_str().unwrap().contains("out of quota"));
}

#[test]
fn a_failing_read_of_the_thread_or_its_history_fails_the_run_before_the_model_is_called() {
    for method in ["getThreadById", "listMessages", "getResource"] {
        let store = Rc::new(OddStore::new(Fault::ReadFails(method)));
        let mut memory = MemoryRun { store, thread_id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, config: MemoryConfig::default(), save_per_step: false, indexer: None };
        memory.config.working_memory = Some(crate::core::memory::WorkingMemory { template: None, resource_scope: true });
        let r = go(vec![text_reply("never")], cfg_with(memory, "hi"));
        assert_eq!(r.requests(), 0, "{method}: no model call without the history");
        assert_eq!(r.sink.types(), ["start", "error"], "{method}");
        let err = r.out.error.clone().expect("the run failed");
        assert_eq!(err.name(), "StorageError");
        assert!(err.to_string().contains(method), "{err}");
    }
}

fn with_working_memory(store: &Rc<InMemoryStore>, resource_scope: bool) -> MemoryRun {
    let mut m = mem(store, "t1", "u1");
    m.config.working_memory = Some(crate::core::memory::WorkingMemory { template: Some("- Name:".into()), resource_scope });
    m
}

#[test]
fn working_memory_is_shown_to_the_model_and_its_tool_replaces_it() {
    for resource_scope in [true, false] {
        let store = Rc::new(InMemoryStore::new());
        let r = go(
            vec![calls_reply(&[("w1", "updateWorkingMemory", r#"{"memory":"- Name: Ann"}"#)]), text_reply("Noted, Ann.")],
            cfg_with(with_working_memory(&store, resource_scope), "I am Ann"),
        );
        let first = r.body(0);
        assert!(first["messages"][1]["content"].as_str().unwrap().contains("<working_memory>\n- Name:\n</working_memory>"), "the template is shown at first");
        assert!(first["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "updateWorkingMemory"));
        assert!(r.sink.types().contains(&"tool-result"));
        let stored_wm = if resource_scope {
            block_on(store.get_resource("u1")).unwrap().unwrap().working_memory
        } else {
            let t = block_on(store.get_thread_by_id("t1")).unwrap().unwrap();
            t.metadata.unwrap()["workingMemory"].as_str().map(str::to_owned)
        };
        assert_eq!(stored_wm.as_deref(), Some("- Name: Ann"), "scope resource: {resource_scope}");
        let next = go(vec![text_reply("Hi Ann")], cfg_with(with_working_memory(&store, resource_scope), "who am I?"));
        assert!(next.body(0)["messages"][1]["content"].as_str().unwrap().contains("- Name: Ann"));
    }
}

#[test]
fn read_only_working_memory_is_shown_but_cannot_be_changed() {
    let store = Rc::new(InMemoryStore::new());
    let mut m = with_working_memory(&store, true);
    m.config.read_only = true;
    let r = go(vec![text_reply("ok")], cfg_with(m, "hi"));
    assert!(r.body(0)["messages"][1]["content"].as_str().unwrap().contains("<working_memory>"));
    assert!(r.body(0).get("tools").is_none());
}

fn title_job() -> crate::core::run::memory::TitleJob {
    crate::core::run::memory::TitleJob {
        model: config(0, false).model,
        model_id: "title-model".into(),
        instructions: "Title it.".into(),
        max_retries: 0,
    }
}

#[test]
fn a_new_thread_gets_a_title_after_its_first_exchange() {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = cfg_with(mem(&store, "t1", "u1"), "Plan a trip to Lisbon");
    cfg.title = Some(title_job());
    let r = go(vec![text_reply("Sure!"), text_reply("\"Lisbon trip plans.\"")], cfg);
    assert_eq!(r.requests(), 2);
    let title_req = r.body(1);
    assert_eq!(title_req["model"], "title-model");
    assert_eq!(title_req["messages"][0]["content"], "Title it.");
    assert_eq!(title_req["messages"][1]["content"], "Plan a trip to Lisbon");
    let thread = block_on(store.get_thread_by_id("t1")).unwrap().unwrap();
    assert_eq!(thread.title.as_deref(), Some("Lisbon trip plans"));
    let types = r.sink.types();
    assert_eq!(&types[types.len() - 2..], ["data", "finish"]);
    let chunk = r.sink.chunks.borrow()[types.len() - 2].clone();
    assert!(matches!(&chunk, Chunk::Data { kind, transient: true, .. } if kind == "data-thread-title"));
    assert_eq!(chunk.payload(), json!({ "threadId": "t1", "title": "Lisbon trip plans" }));
    // An existing thread is not titled again.
    let mut again = cfg_with(mem(&store, "t1", "u1"), "and Porto?");
    again.title = Some(title_job());
    let r = go(vec![text_reply("Yes")], again);
    assert_eq!(r.requests(), 1);
}

#[test]
fn a_failed_title_is_reported_and_the_reply_stands() {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = cfg_with(mem(&store, "t1", "u1"), "hi");
    cfg.title = Some(title_job());
    let r = go(vec![text_reply("Hello"), status(500, &[], "{}")], cfg);
    assert!(r.out.error.is_none());
    assert_eq!(r.out.text(), "Hello");
    let types = r.sink.types();
    assert_eq!(&types[types.len() - 2..], ["error", "finish"]);
    assert!(block_on(store.get_thread_by_id("t1")).unwrap().unwrap().title.is_none());
}

#[test]
fn a_failed_title_does_not_show_the_title_model_s_secret_headers() {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = cfg_with(mem(&store, "t1", "u1"), "hi");
    let mut job = title_job();
    let mut at = crate::testing::endpoint(Api::Chat);
    at.headers = vec![("x-auth-token".into(), "title-token-77".into())];
    job.model = crate::testing::http_model(at);
    cfg.title = Some(job);
    let body = r#"{"error":{"message":"token title-token-77 expired"}}"#;
    let r = go(vec![text_reply("Hello"), status(401, &[], body)], cfg);
    let chunks = r.sink.chunks.borrow();
    let Some(Chunk::Error(e)) = chunks.iter().rev().find(|c| matches!(c, Chunk::Error(_))) else { panic!("no error chunk") };
    assert_eq!(e.to_string().matches("[redacted]").count(), 1, "{e}");
    assert!(!format!("{e} {:?}", e.body()).contains("title-token-77"), "{e}");
}

#[test]
fn a_title_from_a_restarted_anthropic_message_is_the_completed_message_s() {
    let store = Rc::new(InMemoryStore::new());
    let mut cfg = cfg_with(mem(&store, "t1", "u1"), "Plan a trip to Lisbon");
    let mut job = title_job();
    job.model = crate::testing::http_model(crate::testing::endpoint(Api::Anthropic));
    cfg.title = Some(job);
    let text = |t: &str| (json!({ "type": "text", "text": "" }), vec![json!({ "type": "text_delta", "text": t })]);
    let reply = |t: &str| match anthropic_reply(&[text(t)], "end_turn") {
        Reply::Http { status, headers, reads } => (status, headers, reads),
        Reply::NetworkError => unreachable!(),
    };
    let (status, headers, completed) = reply("Lisbon trip plans");
    // The same start and first block, abandoned before they ended.
    let (_, _, mut abandoned) = reply("Abandoned title");
    let Some(Read::Bytes(bytes)) = abandoned.pop() else { unreachable!() };
    let cut = String::from_utf8(bytes).unwrap().split("event: content_block_stop").next().unwrap().to_string();
    let reads = [vec![Read::Bytes(cut.into_bytes())], completed].concat();
    go(vec![text_reply("Sure!"), Reply::Http { status, headers, reads }], cfg);
    let thread = block_on(store.get_thread_by_id("t1")).unwrap().unwrap();
    assert_eq!(thread.title.as_deref(), Some("Lisbon trip plans"));
}

/// An Anthropic Messages stream of `blocks` (each `(content_block_start block, deltas)`).
fn anthropic_reply(blocks: &[(Value, Vec<Value>)], stop: &str) -> Reply {
    let mut body = String::new();
    let mut event = |kind: &str, data: Value| body.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    event("message_start", json!({ "type": "message_start", "message": { "id": "msg_1", "model": "claude", "usage": { "input_tokens": 9 } } }));
    for (index, (block, deltas)) in blocks.iter().enumerate() {
        event("content_block_start", json!({ "type": "content_block_start", "index": index, "content_block": block }));
        for delta in deltas {
            event("content_block_delta", json!({ "type": "content_block_delta", "index": index, "delta": delta }));
        }
        event("content_block_stop", json!({ "type": "content_block_stop", "index": index }));
    }
    event("message_delta", json!({ "type": "message_delta", "delta": { "stop_reason": stop }, "usage": { "output_tokens": 5 } }));
    event("message_stop", json!({ "type": "message_stop" }));
    Reply::Http { status: 200, headers: vec![], reads: vec![Read::Bytes(body.into_bytes())] }
}

#[test]
fn signed_thinking_goes_back_in_the_tool_loop_is_stored_and_goes_back_on_the_next_turn() {
    let store = Rc::new(InMemoryStore::new());
    let anthropic = |mut cfg: RunConfig| {
        cfg.model = crate::testing::http_model(crate::testing::endpoint(crate::core::wire::Api::Anthropic));
        cfg
    };
    let thinking = json!({ "type": "thinking", "thinking": "" });
    let step1 = anthropic_reply(
        &[
            (thinking.clone(), vec![
                json!({ "type": "thinking_delta", "thinking": "Need the weather." }),
                json!({ "type": "signature_delta", "signature": "sig-1" }),
            ]),
            (json!({ "type": "tool_use", "id": "toolu_1", "name": "weather", "input": {} }), vec![
                json!({ "type": "input_json_delta", "partial_json": "{\"city\":\"Paris\"}" }),
            ]),
        ],
        "tool_use",
    );
    let step2 = anthropic_reply(&[(json!({ "type": "text", "text": "" }), vec![json!({ "type": "text_delta", "text": "21 °C." })])], "end_turn");
    let r = go(vec![step1, step2], anthropic(tool_cfg(mem(&store, "t1", "u1"), "Weather in Paris?")));
    let signed = json!({ "type": "thinking", "thinking": "Need the weather.", "signature": "sig-1" });
    let assistant = &r.body(1)["messages"][1];
    assert_eq!(assistant["content"][0], signed, "step 2 carries step 1's signed thinking: {assistant}");
    assert_eq!(assistant["content"][1]["type"], "tool_use");

    let reply = stored(&store, "t1").into_iter().find(|m| m.role == "assistant").unwrap();
    assert_eq!(
        reply.parts[1],
        json!({ "type": "reasoning", "text": "Need the weather.", "providerMetadata": { "anthropic": { "signature": "sig-1" } } })
    );

    let next = go(vec![anthropic_reply(&[(json!({ "type": "text", "text": "" }), vec![json!({ "type": "text_delta", "text": "Yes." })])], "end_turn")],
        anthropic(tool_cfg(mem(&store, "t1", "u1"), "Sure?")));
    let history = next.body(0)["messages"].clone();
    assert_eq!(history[1]["content"][0], signed, "the stored signature goes back: {history:#}");
}

#[test]
fn an_abort_while_the_user_message_is_written_keeps_the_message() {
    let script = Rc::new(Script { replies: RefCell::new(vec![text_reply("never")].into()), ..Default::default() });
    let store = Rc::new(OddStore::new(Fault::AbortMidSave(script.abort.clone())));
    let memory = MemoryRun { store: store.clone(), thread_id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, config: MemoryConfig::default(), save_per_step: false, indexer: None };
    let sink = Collect::default();
    let abort = script.abort.clone();
    let out = block_on(run(cfg_with(memory, "keep me"), &script, &sink, &NoHooks, &Approvals::default(), &abort));
    assert!(out.aborted.is_some(), "the run ends as aborted");
    assert_eq!(script.requests.borrow().len(), 0, "no model call after the abort");
    assert_eq!(*sink.types().last().unwrap(), "abort");
    let kept = stored(&store.inner, "t1");
    assert_eq!(kept.len(), 1, "the user message the abort interrupted is stored");
    assert_eq!(kept[0].parts, vec![json!({ "type": "text", "text": "keep me" })]);
    assert_eq!(script.sleeps.borrow().as_slice(), [2_000], "the write had its grace, once");
}

#[test]
fn a_tool_result_sent_for_a_stored_call_completes_that_call_and_leaves_the_other_parts_as_they_were() {
    let store = Rc::new(InMemoryStore::new());
    let thread = Thread { id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, created_at: "2026-01-01T00:00:00.000Z".into(), updated_at: "2026-01-01T00:00:00.000Z".into() };
    block_on(store.save_thread(&thread)).unwrap();
    let parts = vec![
        json!({ "type": "step-start" }),
        json!({ "type": "text", "text": "Asking the page." }),
        json!({ "type": "tool-invocation", "toolInvocation": { "state": "call", "toolCallId": "c1", "toolName": "pick", "args": {} } }),
    ];
    let old = vec![StoredMessage { id: "m1".into(), thread_id: "t1".into(), resource_id: "u1".into(), role: "assistant".into(), created_at: "2026-01-01T00:00:01.000Z".into(), parts, metadata: None }];
    block_on(store.save_messages(&old)).unwrap();
    let mut cfg = cfg_with(mem(&store, "t1", "u1"), "unused");
    cfg.request.messages[1] = ModelMessage::Tool(vec![crate::core::model::ToolResultPart { tool_call_id: "c1".into(), tool_name: "pick".into(), result: json!("blue"), is_error: false }]);
    let r = go(vec![text_reply("Blue it is.")], cfg);
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    let kept = stored(&store, "t1");
    assert_eq!(kept[0].parts[0], json!({ "type": "step-start" }), "no toolInvocation key added");
    assert_eq!(kept[0].parts[1], json!({ "type": "text", "text": "Asking the page." }));
    assert_eq!(kept[0].parts[2]["toolInvocation"]["state"], "result");
    assert_eq!(kept[0].parts[2]["toolInvocation"]["result"], "blue");
}

#[cfg(feature = "recall")]
#[path = "recall_tests.rs"]
mod recall;
