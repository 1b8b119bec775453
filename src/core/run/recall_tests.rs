//! Semantic recall in a run: what the model is sent, `rememberedMessages`, and indexing after
//! the `finish` chunk.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::json;

use super::*;
use crate::core::memory::recall::{Embedder, Indexer};
use crate::core::memory::vectors::{RecallConfig, VectorQuery};
use crate::core::memory::{InMemoryStore, MemoryConfig, MemoryRun, Store, StoredMessage, Thread};

/// One dimension per known word: "validator", "bread", anything else.
struct Topics;
impl Embedder for Topics {
    fn embed(&self, texts: Vec<String>) -> LocalFuture<'static, Result<Vec<Vec<f32>>, AgentError>> {
        let v = texts.iter().map(|t| {
            let t = t.to_lowercase();
            vec![f32::from(u8::from(t.contains("validator"))), f32::from(u8::from(t.contains("bread"))), 0.1]
        });
        Box::pin(std::future::ready(Ok(v.collect())))
    }
}

fn msg(id: &str, role: &str, at: u32, text: &str) -> StoredMessage {
    StoredMessage {
        id: id.into(),
        thread_id: "t1".into(),
        resource_id: "u1".into(),
        role: role.into(),
        created_at: format!("2026-01-01T00:00:{at:02}.000Z"),
        parts: vec![json!({ "type": "text", "text": text })],
        metadata: None,
    }
}

#[test]
fn recalled_messages_go_before_the_recent_ones_and_the_run_is_indexed_after_finish() {
    let store = Rc::new(InMemoryStore::new());
    let at = "2026-01-01T00:00:00.000Z".to_string();
    block_on(store.save_thread(&Thread { id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, created_at: at.clone(), updated_at: at })).unwrap();
    let old = [
        msg("m1", "user", 1, "Tell me about solana validators"),
        msg("m2", "assistant", 2, "Validators stake and vote."),
        msg("m3", "user", 3, "And sourdough bread?"),
        msg("m4", "assistant", 4, "Bake it hot."),
        msg("m5", "user", 5, "Thanks"),
        msg("m6", "assistant", 6, "Welcome"),
    ];
    block_on(store.save_messages(&old)).unwrap();
    let queued: Rc<RefCell<Vec<LocalFuture<'static, ()>>>> = Rc::default();
    let q = queued.clone();
    let ix = Indexer::new(Rc::new(Topics), store.clone(), Rc::new(move |f| q.borrow_mut().push(f)), Rc::new(|e| panic!("{e}")));
    ix.saved(&old);
    for f in queued.borrow_mut().drain(..) {
        block_on(f);
    }
    let config = MemoryConfig { last_messages: 2, semantic_recall: Some(RecallConfig { top_k: 1, before: 0, after: 1, ..Default::default() }), ..Default::default() };
    let memory = MemoryRun { store: store.clone(), thread_id: "t1".into(), resource_id: "u1".into(), title: None, metadata: None, config, save_per_step: false, indexer: Some(ix.clone()) };
    let out = go(vec![text_reply("They run nodes.")], cfg_with(memory, "What do validator nodes do?"));
    assert!(out.out.error.is_none(), "{:?}", out.out.error);
    // The closest message (m1) and the one after it, then the lastMessages window, then the input.
    assert_eq!(
        roles_and_text(&out.body(0)),
        [
            "system: Be brief.",
            "user: Tell me about solana validators",
            "assistant: Validators stake and vote.",
            "user: Thanks",
            "assistant: Welcome",
            "user: What do validator nodes do?",
        ]
    );
    let remembered: Vec<&str> = out.out.remembered.as_ref().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(remembered, ["m1", "m2"]);
    assert_eq!(out.out.output_json("r")["rememberedMessages"].as_array().unwrap().len(), 2);
    // The run's two new messages wait for the event loop: the reply did not embed them.
    assert_eq!(queued.borrow().len(), 1);
    let count = |s: &InMemoryStore| {
        let q = VectorQuery { vector: vec![1.0, 1.0, 1.0], top_k: 100, thread_id: None, resource_id: None, threshold: None };
        block_on(s.query_vectors(&q)).unwrap().len()
    };
    assert_eq!(count(&store), 6);
    for f in queued.borrow_mut().drain(..) {
        block_on(f);
    }
    assert_eq!(count(&store), 8);
    assert!(ix.idle());
}

#[test]
fn without_semantic_recall_there_is_no_remembered_messages_field() {
    let store = Rc::new(InMemoryStore::new());
    let out = go(vec![text_reply("Hi")], cfg_with(mem(&store, "t1", "u1"), "Hello"));
    assert!(out.out.remembered.is_none());
    assert!(out.out.output_json("r").get("rememberedMessages").is_none());
}
