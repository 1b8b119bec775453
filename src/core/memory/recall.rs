//! Semantic recall in a run (SPEC §21.3): the embedder the core awaits, the indexing of saved
//! messages (queued, batched, run after the reply on the event loop) and the recall of similar
//! older messages at the start of a run.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::vectors::{text_to_embed, RecallConfig, VectorQuery, VectorRecord};
use super::{MessageQuery, Store, StoredMessage};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;

/// Turns texts into vectors (one per text, in order). Implemented over a provider's embeddings
/// endpoint, an AI SDK embedding model or a user function.
pub trait Embedder {
    fn embed(&self, texts: Vec<String>) -> LocalFuture<'static, Result<Vec<Vec<f32>>, AgentError>>;
    /// How many texts one call may take.
    fn max_batch(&self) -> usize {
        64
    }
}

/// Runs a future on the event loop, detached from the caller.
pub type Spawn = Rc<dyn Fn(LocalFuture<'static, ()>)>;

/// A `Memory`'s embedder and its indexing queue.
pub struct Indexer {
    pub embedder: Rc<dyn Embedder>,
    store: Rc<dyn Store>,
    spawn: Spawn,
    /// Saved messages waiting for their vectors (by id: a later save replaces an earlier one).
    pending: RefCell<Vec<StoredMessage>>,
    /// Messages whose embedding failed: queued again at the next save.
    failed: RefCell<Vec<StoredMessage>>,
    busy: Cell<bool>,
    /// Called with each indexing failure (the bindings `console.warn` it).
    report: Rc<dyn Fn(&AgentError)>,
}

impl Indexer {
    pub fn new(embedder: Rc<dyn Embedder>, store: Rc<dyn Store>, spawn: Spawn, report: Rc<dyn Fn(&AgentError)>) -> Rc<Indexer> {
        Rc::new(Indexer { embedder, store, spawn, pending: RefCell::default(), failed: RefCell::default(), busy: Cell::new(false), report })
    }

    /// Queues `saved` (and every earlier failure) and starts indexing on the event loop, unless
    /// it is already running (it then takes them too). Returns at once.
    pub fn saved(self: &Rc<Self>, saved: &[StoredMessage]) {
        {
            let mut pending = self.pending.borrow_mut();
            let retry = std::mem::take(&mut *self.failed.borrow_mut());
            for m in retry.into_iter().chain(saved.iter().cloned()) {
                pending.retain(|p| p.id != m.id);
                pending.push(m);
            }
            if pending.is_empty() || self.busy.get() {
                return;
            }
        }
        self.busy.set(true);
        let me = self.clone();
        (self.spawn)(Box::pin(async move { me.drain().await }));
    }

    /// Tells the `Memory`'s owner about a failure that does not fail the run.
    pub fn report(&self, e: &AgentError) {
        (self.report)(e)
    }

    /// Whether nothing is queued or being indexed.
    pub fn idle(&self) -> bool {
        !self.busy.get() && self.pending.borrow().is_empty()
    }

    async fn drain(self: Rc<Self>) {
        loop {
            let batch: Vec<StoredMessage> = {
                let mut pending = self.pending.borrow_mut();
                let n = pending.len().min(self.embedder.max_batch().max(1));
                pending.drain(..n).collect()
            };
            if batch.is_empty() {
                break;
            }
            if let Err(e) = self.index(&batch).await {
                (self.report)(&e);
                self.failed.borrow_mut().extend(batch);
            }
        }
        self.busy.set(false);
    }

    async fn index(&self, batch: &[StoredMessage]) -> Result<(), AgentError> {
        let (msgs, texts): (Vec<&StoredMessage>, Vec<String>) = batch.iter().filter_map(|m| text_to_embed(m).map(|t| (m, t))).unzip();
        if texts.is_empty() {
            return Ok(());
        }
        let vectors = embed_checked(&*self.embedder, texts).await?;
        let records: Vec<VectorRecord> = msgs
            .iter()
            .zip(vectors)
            .map(|(m, vector)| VectorRecord { id: m.id.clone(), thread_id: m.thread_id.clone(), resource_id: m.resource_id.clone(), vector })
            .collect();
        self.store.save_vectors(&records).await
    }
}

/// `embedder.embed(texts)`, held to one finite vector per text, all of one length.
pub async fn embed_checked(embedder: &dyn Embedder, texts: Vec<String>) -> Result<Vec<Vec<f32>>, AgentError> {
    let n = texts.len();
    let vectors = embedder.embed(texts).await?;
    if vectors.len() != n {
        return Err(AgentError::api(format!("The embedder returned {} vectors for {n} texts", vectors.len()), false));
    }
    let dims = vectors.first().map_or(0, Vec::len);
    if dims == 0 || vectors.iter().any(|v| v.len() != dims || v.iter().any(|x| !x.is_finite())) {
        return Err(AgentError::api("The embedder returned an empty vector, vectors of different lengths or a value that is not a finite number", false));
    }
    Ok(vectors)
}

/// The messages semantic recall adds for `query_text`: the `top_k` most similar stored messages
/// in scope that are not in `exclude` (the `lastMessages` window and the input), each with its
/// neighbours, in time order (by createdAt, then id), none twice.
pub async fn recall(
    store: &dyn Store,
    embedder: &dyn Embedder,
    cfg: &RecallConfig,
    thread_id: &str,
    resource_id: &str,
    query_text: String,
    exclude: &[String],
) -> Result<Vec<StoredMessage>, AgentError> {
    if cfg.top_k == 0 {
        return Ok(Vec::new());
    }
    let vector = embed_checked(embedder, vec![query_text]).await?.pop().unwrap_or_default();
    let q = VectorQuery {
        vector,
        // Enough to still have `top_k` once the excluded ones are dropped.
        top_k: cfg.top_k + exclude.len(),
        thread_id: (!cfg.resource_scope).then(|| thread_id.to_string()),
        resource_id: cfg.resource_scope.then(|| resource_id.to_string()),
        threshold: cfg.threshold,
    };
    let mut hits = store.query_vectors(&q).await?;
    hits.retain(|h| !exclude.contains(&h.id) && cfg.threshold.is_none_or(|t| h.score >= t));
    hits.truncate(cfg.top_k);
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    // Each hit's thread, read once; a hit whose message is gone (deleted after indexing) is
    // skipped.
    let mut threads: Vec<(String, Vec<StoredMessage>)> = Vec::new();
    if !cfg.resource_scope {
        threads.push((thread_id.to_string(), store.list_messages(&MessageQuery { thread_id: thread_id.into(), ..Default::default() }).await?));
    } else {
        for t in store.list_threads(resource_id).await? {
            let msgs = store.list_messages(&MessageQuery { thread_id: t.id.clone(), ..Default::default() }).await?;
            if msgs.iter().any(|m| hits.iter().any(|h| h.id == m.id)) {
                threads.push((t.id, msgs));
            }
        }
    }
    let mut out: Vec<StoredMessage> = Vec::new();
    for (_, msgs) in &threads {
        for (i, m) in msgs.iter().enumerate() {
            if !hits.iter().any(|h| h.id == m.id) {
                continue;
            }
            let from = i.saturating_sub(cfg.before);
            let to = (i + cfg.after + 1).min(msgs.len());
            for n in &msgs[from..to] {
                if !exclude.contains(&n.id) && !out.iter().any(|o| o.id == n.id) {
                    out.push(n.clone());
                }
            }
        }
    }
    super::sort_stable(&mut out, &|a, b| (a.created_at.as_str(), a.id.as_str()).cmp(&(b.created_at.as_str(), b.id.as_str())));
    Ok(out)
}

#[cfg(all(test, feature = "recall"))]
#[path = "recall_tests.rs"]
mod tests;
