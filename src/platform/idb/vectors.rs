//! Semantic recall's vectors in the `vectors` object store (schema version 4): one record per
//! message, `{ id, threadId, resourceId, vector }` with the vector a `Float32Array` (normalised),
//! searched in Rust. A search reads the scope's records with one `getAll` of its index and copies
//! each vector into one reused buffer, so what it holds afterwards is the top-K ids only.

use js_sys::{Array, Float32Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{IdbRequest, IdbTransactionMode};

use super::conn::{VECTORS, VECTORS_BY_RESOURCE, VECTORS_BY_THREAD};
use super::tx::Tx;
use super::IdbStore;
use crate::core::error::AgentError;
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

/// Deletes the vectors of thread `id` inside `tx` (which includes the `vectors` store).
pub(super) fn delete_thread_vectors(tx: &mut Tx, id: &str) -> Result<(), JsValue> {
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
        self.transact(&what, &[VECTORS], IdbTransactionMode::Readwrite, &mut |tx| {
            let store = tx.store(VECTORS)?;
            for r in &list {
                store.put(r)?;
            }
            Ok(JsValue::UNDEFINED)
        })
        .await
        .map(drop)
    }

    pub(super) async fn query_vector_records(&self, q: &VectorQuery) -> Result<Vec<VectorHit>, AgentError> {
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
        let (id_key, vector_key, resource_key) = (JsValue::from_str("id"), JsValue::from_str("vector"), JsValue::from_str("resourceId"));
        for rec in found.iter() {
            let Ok(v) = Reflect::get(&rec, &vector_key).and_then(|v| v.dyn_into::<Float32Array>()) else { continue };
            if v.length() as usize != buf.len() {
                continue;
            }
            // A thread query within a resource: the thread's records of that resource only.
            if q.thread_id.is_some() {
                if let Some(r) = &q.resource_id {
                    if Reflect::get(&rec, &resource_key).ok().and_then(|x| x.as_string()).as_deref() != Some(r.as_str()) {
                        continue;
                    }
                }
            }
            v.copy_to(&mut buf);
            let score = dot(&query, &buf);
            if top.wants(score) {
                let id = Reflect::get(&rec, &id_key).ok().and_then(|x| x.as_string()).unwrap_or_default();
                top.offer(score, &id);
            }
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
