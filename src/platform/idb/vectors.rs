//! Semantic recall's vectors in the `vectors` object store (schema version 4): one record per
//! message, `{ id, threadId, resourceId, vector }` with the vector a `Float32Array` (normalised),
//! searched in Rust. A search reads the scope's records with one `getAll` of its index and copies
//! each vector into one reused buffer, so what it holds afterwards is the top-K ids only.

use js_sys::{Array, Float32Array, Int8Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{IdbRequest, IdbTransactionMode};

use std::collections::{HashMap, HashSet};

use super::conn::{VECTORS, VECTORS_BY_RESOURCE, VECTORS_BY_THREAD};
use super::vector_blocks::{self as blocks, Pending};
use super::tx::Tx;
use super::IdbStore;
use crate::core::error::AgentError;
use crate::core::memory::quantized::{approx_dot, Candidates};
use crate::core::memory::vectors::{dot, normalized, TopK, VectorHit, VectorQuery, VectorRecord, VectorTarget};

#[cfg(feature = "recall")]
fn record(r: &VectorRecord) -> Result<JsValue, JsValue> {
    let o = Object::new();
    Reflect::set(&o, &"id".into(), &r.id.as_str().into())?;
    Reflect::set(&o, &"threadId".into(), &r.thread_id.as_str().into())?;
    Reflect::set(&o, &"resourceId".into(), &r.resource_id.as_str().into())?;
    let v = normalized(r.vector.clone());
    Reflect::set(&o, &"vector".into(), &Float32Array::from(v.as_slice()))?;
    Ok(o.into())
}

/// More message records outside every block than this and a search reads all records instead.
const MAX_UNBLOCKED: usize = 256;

struct Keys {
    id: JsValue,
    vector: JsValue,
    resource: JsValue,
    thread: JsValue,
}

impl Keys {
    fn new() -> Keys {
        Keys { id: "id".into(), vector: "vector".into(), resource: "resourceId".into(), thread: "threadId".into() }
    }
}

/// Scores one message record exactly and offers it to `top` when it is in the query's scope.
fn score_record(rec: &JsValue, q: &VectorQuery, query: &[f32], buf: &mut [f32], k: &Keys, top: &mut TopK) {
    let Ok(v) = Reflect::get(rec, &k.vector).and_then(|v| v.dyn_into::<Float32Array>()) else { return };
    if v.length() as usize != buf.len() {
        return;
    }
    let field = |key: &JsValue| Reflect::get(rec, key).ok().and_then(|x| x.as_string());
    if q.thread_id.as_ref().is_some_and(|t| field(&k.thread).as_ref() != Some(t)) || q.resource_id.as_ref().is_some_and(|r| field(&k.resource).as_ref() != Some(r)) {
        return;
    }
    v.copy_to(buf);
    let score = dot(query, buf);
    if top.wants(score) {
        top.offer(score, &field(&k.id).unwrap_or_default());
    }
}

/// (approximate score, its bound, message id).
type Ranked = (f32, f32, String);

/// Every block entry of `found` with the query's dimensions: (approximate score, bound, id), and
/// how many entries each id has.
fn rank(found: &Array, query: &[f32]) -> (Vec<Ranked>, HashMap<String, u32>) {
    let (mut out, mut seen) = (Vec::new(), HashMap::new());
    let mut codes: Vec<i8> = Vec::new();
    let (mut scales, mut errs): (Vec<f32>, Vec<f32>) = (Vec::new(), Vec::new());
    let dims = query.len();
    for b in found.iter() {
        let get = |k: &str| Reflect::get(&b, &k.into()).unwrap_or(JsValue::UNDEFINED);
        if get("dims").as_f64() != Some(dims as f64) {
            continue;
        }
        let (Ok(ids), Ok(c), Ok(s), Ok(e)) = (get("ids").dyn_into::<Array>(), get("codes").dyn_into::<Int8Array>(), get("scales").dyn_into::<Float32Array>(), get("errs").dyn_into::<Float32Array>()) else { continue };
        let n = ids.length() as usize;
        if c.length() as usize != n * dims || s.length() as usize != n || e.length() as usize != n {
            continue;
        }
        codes.resize(n * dims, 0);
        c.copy_to(&mut codes);
        scales.resize(n, 0.0);
        s.copy_to(&mut scales);
        errs.resize(n, 0.0);
        e.copy_to(&mut errs);
        for (i, id) in ids.iter().enumerate() {
            let Some(id) = id.as_string() else { continue };
            let approx = approx_dot(query, &codes[i * dims..(i + 1) * dims], scales[i]);
            *seen.entry(id.clone()).or_insert(0) += 1;
            out.push((approx, errs[i], id));
        }
    }
    (out, seen)
}

/// Deletes the vectors of thread `id` inside `tx` (which includes the `vectors` store).
pub(super) fn delete_thread_vectors(tx: &mut Tx, id: &str) -> Result<(), JsValue> {
    blocks::delete_thread_blocks(tx, id)?;
    let store = tx.store(VECTORS)?;
    let keys = store.index(VECTORS_BY_THREAD)?.get_all_keys_with_key(&id.into())?;
    tx.on_success(keys, move |req| {
        for key in req.result()?.unchecked_into::<Array>().iter() {
            store.delete(&key)?;
        }
        Ok(())
    });
    Ok(())
}

#[cfg(feature = "recall")]
impl IdbStore {
    pub(super) async fn save_vector_records(&self, records: &[VectorRecord]) -> Result<(), AgentError> {
        if records.is_empty() {
            return Ok(());
        }
        let what = format!("saving {} vectors", records.len());
        let list: Vec<JsValue> = records.iter().map(record).collect::<Result<_, _>>().map_err(|e| self.error(&what, &e))?;
        // The block copies, one batch per thread (and dimension count), in the records' order.
        let mut groups: Vec<Pending> = Vec::new();
        for r in records {
            let v = normalized(r.vector.clone());
            let at = match groups.iter().position(|p| p.thread == r.thread_id && p.resource == r.resource_id && p.dims == v.len()) {
                Some(at) => at,
                None => {
                    groups.push(Pending::new(&r.resource_id, &r.thread_id, v.len()));
                    groups.len() - 1
                }
            };
            groups[at].push(&r.id, &v);
        }
        self.transact(&what, &[VECTORS], IdbTransactionMode::Readwrite, &mut |tx| {
            let store = tx.store(VECTORS)?;
            for r in &list {
                store.put(r)?;
            }
            // Cloned: `transact` runs this again on a reopened connection.
            for p in &groups {
                blocks::append(tx, p.clone())?;
            }
            Ok(JsValue::UNDEFINED)
        })
        .await
        .map(drop)
    }

    /// Ranks the scope's vectors from their blocks, then re-reads exactly only those whose
    /// bound can still reach the top K (`quantized::Candidates`). Message records no block
    /// holds (saved before blocks existed) are re-read too; when there are many of them the
    /// search reads every record instead.
    pub(super) async fn query_vector_records(&self, q: &VectorQuery) -> Result<Vec<VectorHit>, AgentError> {
        let what = "searching vectors";
        let (thread, resource) = (q.thread_id.as_deref(), q.resource_id.as_deref());
        let reqs = self
            .transact(what, &[VECTORS], IdbTransactionMode::Readonly, &mut |tx| {
                let store = tx.store(VECTORS)?;
                let keys = match (thread, resource) {
                    (Some(t), _) => store.index(VECTORS_BY_THREAD)?.get_all_keys_with_key(&t.into())?,
                    (None, Some(r)) => store.index(VECTORS_BY_RESOURCE)?.get_all_keys_with_key(&r.into())?,
                    (None, None) => store.get_all_keys()?,
                };
                let blocks: JsValue = blocks::blocks_request(&store, thread, resource)?.into();
                Ok(Array::of2(&blocks, &keys).into())
            })
            .await?;
        let reqs: Array = reqs.unchecked_into();
        let result = |i: u32| reqs.get(i).unchecked_into::<IdbRequest>().result().map_err(|e| self.error(what, &e));
        let found: Array = result(0)?.unchecked_into();
        let live: HashSet<String> = result(1)?.unchecked_into::<Array>().iter().filter_map(|k| k.as_string()).collect();
        drop(reqs);
        let query = normalized(q.vector.clone());
        let (ranked, in_blocks) = rank(&found, &query);
        self.records_read.set(self.records_read.get() + found.length() as u64);
        drop(found);
        let missing: Vec<&String> = live.iter().filter(|id| !in_blocks.contains_key(id.as_str())).collect();
        if missing.len() > MAX_UNBLOCKED {
            return self.scan_vector_records(q).await;
        }
        let mut cands = Candidates::new(q.top_k, q.threshold);
        for (approx, err, id) in ranked {
            if live.contains(&id) {
                let sure = in_blocks.get(id.as_str()) == Some(&1);
                cands.offer(approx, err, sure, || id);
            }
        }
        let mut ids = cands.into_ids();
        ids.extend(missing.into_iter().cloned());
        drop(live);
        self.rescore(q, &query, &ids).await
    }

    /// Reads the message records `ids` and keeps the top K of their exact scores in scope.
    async fn rescore(&self, q: &VectorQuery, query: &[f32], ids: &[String]) -> Result<Vec<VectorHit>, AgentError> {
        let mut top = TopK::new(q.top_k, q.threshold);
        if ids.is_empty() || q.top_k == 0 {
            return Ok(top.into_hits());
        }
        let what = "searching vectors";
        let reqs = self
            .transact(what, &[VECTORS], IdbTransactionMode::Readonly, &mut |tx| {
                let store = tx.store(VECTORS)?;
                let out = Array::new();
                for id in ids {
                    let req: JsValue = store.get(&id.as_str().into())?.into();
                    out.push(&req);
                }
                Ok(out.into())
            })
            .await?;
        let mut buf = vec![0f32; query.len()];
        let keys = Keys::new();
        for req in reqs.unchecked_into::<Array>().iter() {
            let rec = req.unchecked_into::<IdbRequest>().result().map_err(|e| self.error(what, &e))?;
            if !rec.is_object() {
                continue;
            }
            self.records_read.set(self.records_read.get() + 1);
            score_record(&rec, q, query, &mut buf, &keys, &mut top);
        }
        Ok(top.into_hits())
    }

    /// The search without blocks: every message record of the scope, scored exactly.
    async fn scan_vector_records(&self, q: &VectorQuery) -> Result<Vec<VectorHit>, AgentError> {
        let what = "searching vectors";
        let req = self
            .transact(what, &[VECTORS], IdbTransactionMode::Readonly, &mut |tx| {
                let store = tx.store(VECTORS)?;
                let req = match (&q.thread_id, &q.resource_id) {
                    (Some(t), _) => store.index(VECTORS_BY_THREAD)?.get_all_with_key(&t.as_str().into())?,
                    (None, Some(r)) => store.index(VECTORS_BY_RESOURCE)?.get_all_with_key(&r.as_str().into())?,
                    (None, None) => store.get_all()?,
                };
                Ok(req.into())
            })
            .await?;
        let found: Array = req.unchecked_into::<IdbRequest>().result().map_err(|e| self.error(what, &e))?.unchecked_into();
        let query = normalized(q.vector.clone());
        let mut buf = vec![0f32; query.len()];
        let mut top = TopK::new(q.top_k, q.threshold);
        let keys = Keys::new();
        for rec in found.iter() {
            score_record(&rec, q, &query, &mut buf, &keys, &mut top);
        }
        self.records_read.set(self.records_read.get() + found.length() as u64);
        Ok(top.into_hits())
    }

    pub(super) async fn delete_vector_records(&self, target: &VectorTarget) -> Result<(), AgentError> {
        let what = "deleting vectors";
        self.transact(what, &[VECTORS], IdbTransactionMode::Readwrite, &mut |tx| {
            match target {
                VectorTarget::Thread(id) => delete_thread_vectors(tx, id)?,
                VectorTarget::Ids(ids) => {
                    let store = tx.store(VECTORS)?;
                    for id in ids {
                        store.delete(&id.into())?;
                    }
                }
            }
            Ok(JsValue::UNDEFINED)
        })
        .await
        .map(drop)
    }
}
