//! `isTaskComplete` through a run (SPEC §15): a failed check feeds its report back for another
//! step, bounded by maxSteps; the chunk sits before the step's `step-finish`; memory keeps the
//! report unless `suppressFeedback`.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use super::tools::{calls_reply, simple, text_reply, tool, with_tools, TestHost};
use super::*;
use crate::core::completion::{CompletionCheck, CompletionScorers, ScorerInfo, Strategy};
use crate::core::memory::{InMemoryStore, MemoryConfig, MemoryRun, MessageQuery, Store};

/// Scores the texts it is shown: 1 when the text contains `good`, else 0.
#[derive(Default)]
pub(super) struct Judge {
    pub(super) seen: RefCell<Vec<Value>>,
    completed: RefCell<Vec<Value>>,
}

impl CompletionScorers for Judge {
    fn score<'a>(&'a self, _index: usize, ctx: &'a Value) -> LocalFuture<'a, Result<(f64, Option<String>), String>> {
        self.seen.borrow_mut().push(ctx.clone());
        let text = ctx["currentText"].as_str().unwrap_or_default();
        let score = if text.contains("good") { 1.0 } else { 0.0 };
        let reason = if score == 1.0 { "fine" } else { "say good" };
        Box::pin(std::future::ready(Ok((score, Some(reason.to_string())))))
    }
    fn completed<'a>(&'a self, result: &'a Value) -> LocalFuture<'a, ()> {
        self.completed.borrow_mut().push(result.clone());
        Box::pin(async {})
    }
}

pub(super) fn with_check(mut cfg: RunConfig, judge: &Rc<Judge>, suppress: bool) -> RunConfig {
    cfg.completion = Some(CompletionCheck {
        scorers: vec![ScorerInfo { id: "good-word".into(), name: "Good word".into() }],
        strategy: Strategy::All,
        parallel: true,
        timeout_ms: 60_000,
        suppress_feedback: suppress,
        host: judge.clone(),
    });
    cfg
}

fn payloads(r: &super::tools::Run) -> Vec<Value> {
    r.sink.chunks.borrow().iter().filter(|c| c.type_name() == "is-task-complete").map(Chunk::payload).collect()
}

#[test]
fn a_failed_check_sends_its_report_and_the_next_step_passes() {
    let judge = Rc::new(Judge::default());
    let cfg = with_check(config(0, false), &judge, false);
    let r = simple(vec![text_reply("meh"), text_reply("all good")], cfg, &TestHost::default());
    assert_eq!(
        r.sink.types(),
        [
            "start", "step-start", "text-start", "text-delta", "text-end", "is-task-complete", "step-finish", "step-start", "text-start",
            "text-delta", "text-end", "is-task-complete", "step-finish", "finish"
        ]
    );
    let p = payloads(&r);
    assert_eq!((p[0]["iteration"].as_u64(), p[0]["passed"].as_bool()), (Some(1), Some(false)));
    assert_eq!((p[1]["iteration"].as_u64(), p[1]["passed"].as_bool()), (Some(2), Some(true)));
    assert_eq!(p[0]["reason"], "say good");
    assert_eq!(p[0]["maxIterationReached"], false);
    let finishes: Vec<Value> = r.sink.chunks.borrow().iter().filter(|c| c.type_name() == "step-finish").map(Chunk::payload).collect();
    assert_eq!(finishes[0]["stepResult"]["isContinued"], true);
    assert_eq!(finishes[1]["stepResult"]["isContinued"], false);
    // The second request carries the report as an assistant message after the first reply.
    let body = r.body(1);
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "assistant");
    let report = last["content"].as_str().unwrap();
    assert!(report.starts_with("#### Completion Check Results") && report.contains("###### Good word (good-word)"), "{report}");
    assert!(report.contains("Reason: say good"));
    assert_eq!(msgs[msgs.len() - 2]["content"], "meh");
    // Not streamed, not part of the text.
    assert_eq!(r.out.text(), "mehall good");
    // The scorers saw the step's text and the task; onComplete got each verdict.
    let seen = judge.seen.borrow();
    assert_eq!((seen[0]["currentText"].as_str(), seen[1]["currentText"].as_str()), (Some("meh"), Some("all good")));
    assert_eq!(seen[0]["originalTask"], "hi");
    assert_eq!(seen[0]["maxIterations"], 5);
    let completed = judge.completed.borrow();
    assert_eq!(completed.len(), 2);
    assert_eq!((completed[0]["complete"].as_bool(), completed[1]["complete"].as_bool()), (Some(false), Some(true)));
}

#[test]
fn the_check_is_bounded_by_max_steps_and_the_run_ends_with_the_last_text() {
    let judge = Rc::new(Judge::default());
    let mut cfg = with_check(config(0, false), &judge, false);
    cfg.max_steps = 2;
    let r = simple(vec![text_reply("no"), text_reply("still no"), text_reply("never sent")], cfg, &TestHost::default());
    assert_eq!(r.requests(), 2);
    let p = payloads(&r);
    assert_eq!(p.len(), 2);
    assert_eq!((p[0]["maxIterationReached"].as_bool(), p[1]["maxIterationReached"].as_bool()), (Some(false), Some(true)));
    assert_eq!(p[1]["passed"], false);
    assert!(r.out.error.is_none());
    assert_eq!(r.out.steps.last().unwrap().text, "still no");
    assert_eq!(r.sink.types().last(), Some(&"finish"));
}

#[test]
fn a_step_that_calls_tools_is_not_judged() {
    let judge = Rc::new(Judge::default());
    let cfg = with_check(with_tools(vec![tool("weather")]), &judge, false);
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("good: sunny")], cfg, &TestHost::default());
    let p = payloads(&r);
    assert_eq!(p.len(), 1, "only the step that would end the run");
    assert_eq!(p[0]["iteration"], 2);
    let seen = judge.seen.borrow();
    assert_eq!(seen[0]["toolCalls"][0]["name"], "weather", "the run's calls so far");
}

fn memory_cfg(store: &Rc<InMemoryStore>) -> RunConfig {
    let mut cfg = config(0, false);
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
    cfg
}

fn stored(store: &InMemoryStore) -> Vec<crate::core::memory::StoredMessage> {
    super::block_on(store.list_messages(&MessageQuery { thread_id: "t1".into(), last: None, before: None })).unwrap()
}

#[test]
fn memory_keeps_the_report_with_its_completion_result_unless_suppressed() {
    let store = Rc::new(InMemoryStore::new());
    let judge = Rc::new(Judge::default());
    let r = simple(vec![text_reply("meh"), text_reply("good")], with_check(memory_cfg(&store), &judge, false), &TestHost::default());
    assert!(r.out.error.is_none(), "{:?}", r.out.error);
    let msgs = stored(&store);
    let roles: Vec<&str> = msgs.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "assistant"]);
    let note = &msgs[2];
    assert!(note.parts[0]["text"].as_str().unwrap().starts_with("#### Completion Check Results"));
    assert_eq!(note.metadata, Some(serde_json::json!({ "completionResult": { "passed": false, "suppressFeedback": false } })));
    assert!(!msgs[1].parts.iter().any(|p| p["text"].as_str().is_some_and(|t| t.contains("Completion Check"))));

    let store = Rc::new(InMemoryStore::new());
    let judge = Rc::new(Judge::default());
    let r = simple(vec![text_reply("meh"), text_reply("good")], with_check(memory_cfg(&store), &judge, true), &TestHost::default());
    assert_eq!(r.requests(), 2, "the report is still sent");
    assert_eq!(payloads(&r)[0]["suppressFeedback"], true);
    let roles: Vec<String> = stored(&store).iter().map(|m| m.role.clone()).collect();
    assert_eq!(roles, ["user", "assistant"], "and never stored");
}
