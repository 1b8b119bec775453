//! Chunk logs in the `runChunks` object store (SPEC §19.8): one record per chunk,
//! `{ runId, seq, chunk }` keyed by `[runId, seq]`, so a batch is one transaction and a replay
//! one key-range read in `seq` order.

use js_sys::{Array, Reflect};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::IdbKeyRange;
use web_sys::IdbRequest;
use web_sys::IdbTransactionMode::{Readonly, Readwrite};

use super::conn::RUN_CHUNKS;
use super::{to_js, IdbStore};
use crate::core::chunk_log::seq_of;
use crate::core::error::AgentError;

/// The keys of run `run_id` from `seq` `from` on.
fn from_seq(run_id: &str, from: f64) -> Result<IdbKeyRange, JsValue> {
    let lower = Array::of2(&run_id.into(), &from.into());
    let upper = Array::of2(&run_id.into(), &f64::INFINITY.into());
    IdbKeyRange::bound(&lower, &upper)
}

impl IdbStore {
    pub(super) async fn append_chunks(&self, run_id: &str, chunks: &[Value]) -> Result<(), AgentError> {
        let what = format!("appending to the chunk log of run '{run_id}'");
        let records: Vec<JsValue> = chunks
            .iter()
            .map(|c| {
                let record = js_sys::Object::new();
                Reflect::set(&record, &"runId".into(), &run_id.into())?;
                Reflect::set(&record, &"seq".into(), &(seq_of(c) as f64).into())?;
                Reflect::set(&record, &"chunk".into(), &to_js(c)?)?;
                Ok(record.into())
            })
            .collect::<Result<_, JsValue>>()
            .map_err(|e| self.error(&what, &e))?;
        self.transact(&what, &[RUN_CHUNKS], Readwrite, &mut |tx| {
            let store = tx.store(RUN_CHUNKS)?;
            for r in &records {
                store.put(r)?;
            }
            Ok(JsValue::UNDEFINED)
        })
        .await
        .map(drop)
    }

    pub(super) async fn list_chunks(&self, run_id: &str, after: u64, limit: Option<usize>) -> Result<Vec<Value>, AgentError> {
        let what = format!("reading the chunk log of run '{run_id}'");
        let range = from_seq(run_id, after as f64 + 1.0).map_err(|e| self.error(&what, &e))?;
        let req = self
            .transact(&what, &[RUN_CHUNKS], Readonly, &mut |tx| {
                let store = tx.store(RUN_CHUNKS)?;
                match limit {
                    Some(n) => store.get_all_with_key_and_limit(&range, n.min(u32::MAX as usize) as u32),
                    None => store.get_all_with_key(&range),
                }
                .map(JsValue::from)
            })
            .await?;
        let records = self.read_array(req.unchecked_into::<IdbRequest>().result(), &what)?;
        Ok(records.into_iter().filter_map(|mut r| r.get_mut("chunk").map(Value::take)).collect())
    }

    pub(super) async fn delete_chunks(&self, run_id: &str) -> Result<(), AgentError> {
        let what = format!("deleting the chunk log of run '{run_id}'");
        let range = from_seq(run_id, f64::NEG_INFINITY).map_err(|e| self.error(&what, &e))?;
        self.transact(&what, &[RUN_CHUNKS], Readwrite, &mut |tx| tx.store(RUN_CHUNKS)?.delete(&range).map(JsValue::from)).await.map(drop)
    }
}
