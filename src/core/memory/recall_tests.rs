use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

use serde_json::json;

use super::*;
use crate::core::memory::vectors::VectorTarget;
use crate::core::memory::{InMemoryStore, Thread};

fn block_on<F: Future>(f: F) -> F::Output {
    futures_util::FutureExt::now_or_never(Box::pin(f)).expect("the in-memory store settles at once")
}

/// Hashed counts of lower-cased words (a trailing `s` dropped), so shared words mean similarity.
pub(crate) struct Words {
    pub calls: Cell<usize>,
    pub batch: usize,
    pub fail: Cell<bool>,
}

pub(crate) fn words_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 1024];
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2) {
        let w = w.to_lowercase();
        let w = w.strip_suffix('s').unwrap_or(&w);
        let h = w.bytes().fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
        v[(h % 1024) as usize] += 1.0;
    }
    v
}

impl Embedder for Words {
    fn embed(&self, texts: Vec<String>) -> LocalFuture<'static, Result<Vec<Vec<f32>>, AgentError>> {
        self.calls.set(self.calls.get() + 1);
        let out = if self.fail.get() { Err(AgentError::api("embeddings are down", true)) } else { Ok(texts.iter().map(|t| words_vector(t)).collect()) };
        Box::pin(std::future::ready(out))
    }
    fn max_batch(&self) -> usize {
        self.batch
    }
}

fn words(batch: usize) -> Rc<Words> {
    Rc::new(Words { calls: Cell::new(0), batch, fail: Cell::new(false) })
}

fn msg(id: &str, thread: &str, role: &str, at: u32, text: &str) -> StoredMessage {
    StoredMessage {
        id: id.into(),
        thread_id: thread.into(),
        resource_id: "u1".into(),
        role: role.into(),
        created_at: format!("2026-01-01T00:00:{at:02}.000Z"),
        parts: vec![json!({ "type": "text", "text": text })],
        metadata: None,
    }
}

/// An indexer whose spawned work waits in `queue` until `run_all`.
struct Harness {
    store: Rc<InMemoryStore>,
    embedder: Rc<Words>,
    ix: Rc<Indexer>,
    queue: Rc<RefCell<Vec<LocalFuture<'static, ()>>>>,
    reports: Rc<RefCell<Vec<String>>>,
}

impl Harness {
    fn new(batch: usize) -> Harness {
        let store = Rc::new(InMemoryStore::new());
        let embedder = words(batch);
        let queue: Rc<RefCell<Vec<LocalFuture<'static, ()>>>> = Rc::default();
        let q = queue.clone();
        let reports: Rc<RefCell<Vec<String>>> = Rc::default();
        let r = reports.clone();
        let ix = Indexer::new(embedder.clone(), store.clone(), Rc::new(move |f| q.borrow_mut().push(f)), Rc::new(move |e| r.borrow_mut().push(e.to_string())));
        Harness { store, embedder, ix, queue, reports }
    }
    fn run_all(&self) {
        loop {
            let next = self.queue.borrow_mut().pop();
            let Some(f) = next else { break };
            block_on(f);
        }
    }
    fn vector_ids(&self) -> Vec<String> {
        let q = VectorQuery { vector: vec![1.0; 1024], top_k: 100, thread_id: None, resource_id: None, threshold: None };
        let mut ids: Vec<String> = block_on(self.store.query_vectors(&q)).unwrap().into_iter().map(|h| h.id).collect();
        ids.sort();
        ids
    }
}

#[test]
fn saved_messages_are_indexed_later_in_batches_and_only_their_text() {
    let h = Harness::new(2);
    let msgs: Vec<StoredMessage> = (0..5).map(|i| msg(&format!("m{i}"), "t1", "user", i, &format!("message number {i}"))).collect();
    let mut system = msg("s1", "t1", "system", 9, "Be brief.");
    system.parts = vec![json!({ "type": "text", "text": "Be brief." })];
    h.ix.saved(&msgs);
    h.ix.saved(std::slice::from_ref(&system));
    assert_eq!(h.embedder.calls.get(), 0, "nothing is embedded on the caller's path");
    assert!(!h.ix.idle());
    assert_eq!(h.queue.borrow().len(), 1, "one drain at a time");
    h.run_all();
    assert_eq!(h.embedder.calls.get(), 3, "six messages in batches of two; the system one is skipped without a call");
    assert_eq!(h.vector_ids(), ["m0", "m1", "m2", "m3", "m4"]);
    assert!(h.ix.idle());
}

#[test]
fn a_failed_embedding_is_reported_and_retried_at_the_next_save() {
    let h = Harness::new(8);
    h.embedder.fail.set(true);
    h.ix.saved(&[msg("m1", "t1", "user", 1, "solana validators")]);
    h.run_all();
    assert_eq!(h.reports.borrow().len(), 1);
    assert!(h.reports.borrow()[0].contains("embeddings are down"));
    assert!(h.vector_ids().is_empty());
    h.embedder.fail.set(false);
    h.ix.saved(&[msg("m2", "t1", "assistant", 2, "validators stake tokens")]);
    h.run_all();
    assert_eq!(h.vector_ids(), ["m1", "m2"]);
}

#[test]
fn an_embedder_that_breaks_its_contract_is_an_error() {
    struct Bad(Vec<Vec<f32>>);
    impl Embedder for Bad {
        fn embed(&self, _: Vec<String>) -> LocalFuture<'static, Result<Vec<Vec<f32>>, AgentError>> {
            Box::pin(std::future::ready(Ok(self.0.clone())))
        }
    }
    let two = || vec!["a".to_string(), "b".to_string()];
    assert!(block_on(embed_checked(&Bad(vec![vec![1.0]]), two())).unwrap_err().to_string().contains("1 vectors for 2 texts"));
    assert!(block_on(embed_checked(&Bad(vec![vec![1.0], vec![1.0, 2.0]]), two())).is_err());
    assert!(block_on(embed_checked(&Bad(vec![vec![1.0], vec![f32::NAN]]), two())).is_err());
    assert_eq!(block_on(embed_checked(&Bad(vec![vec![1.0], vec![2.0]]), two())).unwrap().len(), 2);
}

fn conversation() -> Harness {
    let h = Harness::new(16);
    let t1 = [
        msg("a1", "t1", "user", 1, "How do I bake sourdough bread?"),
        msg("a2", "t1", "assistant", 2, "Feed the starter, fold the dough, bake hot."),
        msg("a3", "t1", "user", 3, "Tell me about solana validators"),
        msg("a4", "t1", "assistant", 4, "Validators vote on blocks and stake SOL."),
        msg("a5", "t1", "user", 5, "Thanks!"),
        msg("a6", "t1", "assistant", 6, "You are welcome."),
        msg("a7", "t1", "user", 7, "What is the weather like?"),
        msg("a8", "t1", "assistant", 8, "I cannot see the weather."),
    ];
    let t2 = [msg("b1", "t2", "user", 10, "Which validator client is fastest?"), msg("b2", "t2", "assistant", 11, "It depends on hardware.")];
    for (id, at) in [("t1", 1), ("t2", 10)] {
        let t = Thread { id: id.into(), resource_id: "u1".into(), title: None, metadata: None, created_at: format!("2026-01-01T00:00:{at:02}.000Z"), updated_at: format!("2026-01-01T00:00:{at:02}.000Z") };
        block_on(h.store.save_thread(&t)).unwrap();
    }
    block_on(h.store.save_messages(&t1)).unwrap();
    block_on(h.store.save_messages(&t2)).unwrap();
    h.ix.saved(&t1);
    h.ix.saved(&t2);
    h.run_all();
    h
}

fn ids(msgs: &[StoredMessage]) -> Vec<&str> {
    msgs.iter().map(|m| m.id.as_str()).collect()
}

#[test]
fn recall_finds_similar_messages_with_neighbours_in_time_order_outside_the_window() {
    let h = conversation();
    let cfg = RecallConfig { top_k: 2, before: 1, after: 1, resource_scope: true, threshold: Some(0.2) };
    let window = ["a7".to_string(), "a8".to_string()];
    let got = block_on(recall(&*h.store, &*h.embedder, &cfg, "t1", "u1", "Explain validator nodes".into(), &window)).unwrap();
    // a3 and b1 share "validator" (a4 too, less closely); each comes with one neighbour on each
    // side, so the bread reply a2 comes only as a3's neighbour.
    assert_eq!(ids(&got), ["a2", "a3", "a4", "b1", "b2"]);
    let thread_only = RecallConfig { resource_scope: false, before: 0, after: 0, ..cfg.clone() };
    let got = block_on(recall(&*h.store, &*h.embedder, &thread_only, "t1", "u1", "Explain validator nodes".into(), &window)).unwrap();
    assert_eq!(ids(&got), ["a3", "a4"]);
    // Neighbours inside the lastMessages window are not repeated.
    let got = block_on(recall(&*h.store, &*h.embedder, &thread_only, "t1", "u1", "Explain validator nodes".into(), &["a4".to_string()])).unwrap();
    assert_eq!(ids(&got), ["a3"]);
    let strict = RecallConfig { threshold: Some(0.99), ..thread_only };
    assert!(block_on(recall(&*h.store, &*h.embedder, &strict, "t1", "u1", "Explain validator nodes".into(), &[])).unwrap().is_empty());
}

#[test]
fn deleting_a_thread_or_its_messages_deletes_their_vectors() {
    let h = conversation();
    block_on(h.store.delete_thread("t2")).unwrap();
    assert!(!h.vector_ids().iter().any(|id| id.starts_with('b')));
    block_on(h.store.delete_messages(&["a1".to_string()])).unwrap();
    assert!(!h.vector_ids().contains(&"a1".to_string()));
    block_on(h.store.delete_vectors(&VectorTarget::Ids(vec!["a2".into()]))).unwrap();
    assert_eq!(h.vector_ids(), ["a3", "a4", "a5", "a6", "a7", "a8"]);
}
