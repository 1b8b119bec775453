//! `__idb_bench` (feature `bench-idb`, never in the package): fills one thread and times loading
//! its last 10 messages and appending one, for `bench/idb/run.mjs`.

use js_sys::{Function, Reflect};
use serde_json::json;
use wasm_bindgen::prelude::*;

use super::IdbStore;
use crate::core::memory::{iso_time, MessageQuery, Store, StoredMessage, Thread};

const BATCH: u32 = 1_000;
const THREAD: &str = "bench-thread";
const T0: f64 = 1_767_225_600_000.0; // 2026-01-01

fn message(i: u32) -> StoredMessage {
    StoredMessage {
        id: format!("m{i:07}"),
        thread_id: THREAD.into(),
        resource_id: "bench-user".into(),
        role: if i.is_multiple_of(2) { "user" } else { "assistant" }.into(),
        created_at: iso_time(T0 + i as f64),
        parts: vec![
            json!({ "type": "text", "text": format!("Message {i}: a sentence or two of ordinary chat text, about as long as a short reply would be.") }),
        ],
        metadata: None,
    }
}

/// `performance.now()` from the global object (pages and workers).
fn now() -> f64 {
    let perf = Reflect::get(&js_sys::global(), &"performance".into()).unwrap_or(JsValue::UNDEFINED);
    Reflect::get(&perf, &"now".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .and_then(|f| f.call0(&perf).ok())
        .and_then(|v| v.as_f64())
        .unwrap_or_else(js_sys::Date::now)
}

fn js_err(e: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&e.to_string()).into()
}

/// Fills database `name` with a thread of `thread_size` messages (1,000 per transaction), then
/// times `listMessages({ last: 10 })` and a one-message append `reps` times each. Deletes the
/// database at the end. Resolves to `{ loadMs: [...], appendMs: [...], readsPerLoad }`.
#[wasm_bindgen]
pub async fn __idb_bench(name: String, thread_size: u32, reps: u32) -> Result<JsValue, JsValue> {
    let store = IdbStore::new(&name);
    let started = now();
    store
        .save_thread(&Thread {
            id: THREAD.into(),
            resource_id: "bench-user".into(),
            title: None,
            metadata: None,
            created_at: iso_time(T0),
            updated_at: iso_time(T0),
        })
        .await
        .map_err(js_err)?;
    let mut i = 0;
    while i < thread_size {
        let batch: Vec<StoredMessage> = (i..thread_size.min(i + BATCH)).map(message).collect();
        store.save_messages(&batch).await.map_err(js_err)?;
        i += batch.len() as u32;
    }
    let fill_ms = now() - started;
    let query = MessageQuery { thread_id: THREAD.into(), last: Some(10), before: None };
    let (mut load, mut append) = (Vec::new(), Vec::new());
    let reads_before = store.records_read();
    for r in 0..reps {
        let t = now();
        let got = store.list_messages(&query).await.map_err(js_err)?;
        load.push(now() - t);
        if got.len() != 10.min((thread_size + r) as usize) {
            return Err(js_err(format!("last 10 returned {} messages", got.len())));
        }
        let t = now();
        store.save_messages(&[message(thread_size + r)]).await.map_err(js_err)?;
        append.push(now() - t);
    }
    let reads_per_load = (store.records_read() - reads_before) as f64 / reps.max(1) as f64;
    drop(store);
    IdbStore::delete_database(&name).await.map_err(js_err)?;
    let out = json!({ "loadMs": load, "appendMs": append, "fillMs": fill_ms, "readsPerLoad": reads_per_load });
    js_sys::JSON::parse(&out.to_string())
}

/// Fills database `name` with `count` vectors of `dims` dimensions (deterministic pseudo-random,
/// 1,000 per transaction, spread over 10 threads of one resource), then times `queryVectors`
/// (resource scope, top 4) `reps` times. Resolves to `{ fillMs, queryMs: [...], heapBefore,
/// heapAfter }` (`performance.memory.usedJSHeapSize` before the first and after the last query,
/// where the browser has it). Deletes the database at the end.
#[wasm_bindgen]
pub async fn __recall_bench(name: String, count: u32, dims: u32, reps: u32) -> Result<JsValue, JsValue> {
    use crate::core::memory::vectors::{VectorQuery, VectorRecord};
    let store = IdbStore::new(&name);
    let mut seed = 0x9e37_79b9u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        (seed as f32 / u32::MAX as f32) - 0.5
    };
    let started = now();
    let mut i = 0;
    while i < count {
        let batch: Vec<VectorRecord> = (i..count.min(i + BATCH))
            .map(|n| VectorRecord { id: format!("m{n:07}"), thread_id: format!("t{}", n % 10), resource_id: "bench-user".into(), vector: (0..dims).map(|_| next()).collect() })
            .collect();
        store.save_vectors(&batch).await.map_err(js_err)?;
        i += batch.len() as u32;
    }
    let fill_ms = now() - started;
    let heap = || {
        let perf = Reflect::get(&js_sys::global(), &"performance".into()).unwrap_or(JsValue::UNDEFINED);
        Reflect::get(&perf, &"memory".into()).and_then(|m| Reflect::get(&m, &"usedJSHeapSize".into())).ok().and_then(|v| v.as_f64())
    };
    let heap_before = heap();
    let mut times = Vec::new();
    for _ in 0..reps {
        let q = VectorQuery { vector: (0..dims).map(|_| next()).collect(), top_k: 4, thread_id: None, resource_id: Some("bench-user".into()), threshold: None };
        let t = now();
        let hits = store.query_vectors(&q).await.map_err(js_err)?;
        times.push(now() - t);
        if hits.len() != 4.min(count as usize) {
            return Err(js_err(format!("the query returned {} hits", hits.len())));
        }
    }
    let heap_after = heap();
    drop(store);
    IdbStore::delete_database(&name).await.map_err(js_err)?;
    let out = json!({ "fillMs": fill_ms, "queryMs": times, "heapBefore": heap_before, "heapAfter": heap_after });
    js_sys::JSON::parse(&out.to_string())
}
