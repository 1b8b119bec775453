//! Block records in the `vectors` store: int8 copies of many vectors of one thread in one
//! record, so a search reads a quarter of the bytes in a few hundred structured clones instead
//! of one per message. The per-message records stay the exact copy; blocks only rank.
//!
//! A block is `{ id: ["q", resourceId, threadId, seq], threadId: ["q", threadId],
//! resourceId: ["q", resourceId, threadId], dims, ids: [..], codes: Int8Array, scales:
//! Float32Array, errs: Float32Array }`. Its keys are arrays, so they sort apart from the string
//! keys of message records in the primary key and in both indexes: reading one kind never
//! reads the other.

use js_sys::{Array, Float32Array, Int8Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{IdbCursorDirection, IdbCursorWithValue, IdbKeyRange, IdbObjectStore};

use super::conn::{VECTORS, VECTORS_BY_RESOURCE, VECTORS_BY_THREAD};
use super::tx::Tx;
use crate::core::memory::quantized::quantize;

const TAG: &str = "q";
/// About 256 KiB of codes per block.
const BLOCK_BYTES: usize = 256 * 1024;

fn key(parts: &[&JsValue]) -> JsValue {
    let a = Array::new();
    a.push(&TAG.into());
    for p in parts {
        a.push(p);
    }
    a.into()
}

/// All blocks under `prefix` (`["q", …prefix]` and longer arrays).
fn under(prefix: &[&JsValue]) -> Result<IdbKeyRange, JsValue> {
    let upper: Array = key(prefix).unchecked_into();
    upper.push(&Array::new());
    IdbKeyRange::bound(&key(prefix), &upper)
}

/// The blocks of one scope: a thread (within a resource when given), a resource, or all.
pub(super) fn blocks_request(store: &IdbObjectStore, thread: Option<&str>, resource: Option<&str>) -> Result<web_sys::IdbRequest, JsValue> {
    match (thread, resource) {
        (Some(t), Some(r)) => store.index(VECTORS_BY_RESOURCE)?.get_all_with_key(&key(&[&r.into(), &t.into()])),
        (Some(t), None) => store.index(VECTORS_BY_THREAD)?.get_all_with_key(&key(&[&t.into()])),
        (None, Some(r)) => {
            let range: JsValue = under(&[&r.into()])?.into();
            store.index(VECTORS_BY_RESOURCE)?.get_all_with_key(&range)
        }
        (None, None) => {
            let range: JsValue = under(&[])?.into();
            store.get_all_with_key(&range)
        }
    }
}

/// Deletes the blocks of thread `id` inside `tx`.
pub(super) fn delete_thread_blocks(tx: &mut Tx, id: &str) -> Result<(), JsValue> {
    let store = tx.store(VECTORS)?;
    let keys = store.index(VECTORS_BY_THREAD)?.get_all_keys_with_key(&key(&[&id.into()]))?;
    tx.on_success(keys, move |req| {
        for key in req.result()?.unchecked_into::<Array>().iter() {
            store.delete(&key)?;
        }
        Ok(())
    });
    Ok(())
}

/// Vectors of one thread waiting to be appended: ids, codes, scales, errs, all one length.
#[derive(Clone)]
pub(super) struct Pending {
    pub resource: String,
    pub thread: String,
    pub dims: usize,
    pub ids: Vec<String>,
    pub codes: Vec<i8>,
    pub scales: Vec<f32>,
    pub errs: Vec<f32>,
}

impl Pending {
    pub fn new(resource: &str, thread: &str, dims: usize) -> Pending {
        Pending { resource: resource.into(), thread: thread.into(), dims, ids: Vec::new(), codes: Vec::new(), scales: Vec::new(), errs: Vec::new() }
    }

    /// Adds the (normalised) vector `v` of message `id`.
    pub fn push(&mut self, id: &str, v: &[f32]) {
        let (scale, err) = quantize(v, &mut self.codes);
        self.ids.push(id.into());
        self.scales.push(scale);
        self.errs.push(err);
    }
}

fn block(p: &Pending, seq: f64, from: usize, to: usize) -> Result<JsValue, JsValue> {
    let (r, t): (JsValue, JsValue) = (p.resource.as_str().into(), p.thread.as_str().into());
    let o = Object::new();
    Reflect::set(&o, &"id".into(), &key(&[&r, &t, &seq.into()]))?;
    Reflect::set(&o, &"threadId".into(), &key(&[&t]))?;
    Reflect::set(&o, &"resourceId".into(), &key(&[&r, &t]))?;
    Reflect::set(&o, &"dims".into(), &(p.dims as f64).into())?;
    let ids: Array = p.ids[from..to].iter().map(|s| JsValue::from_str(s)).collect();
    Reflect::set(&o, &"ids".into(), &ids)?;
    Reflect::set(&o, &"codes".into(), &Int8Array::from(&p.codes[from * p.dims..to * p.dims]))?;
    Reflect::set(&o, &"scales".into(), &Float32Array::from(&p.scales[from..to]))?;
    Reflect::set(&o, &"errs".into(), &Float32Array::from(&p.errs[from..to]))?;
    Ok(o.into())
}

/// Appends `p` inside `tx`: into the thread's last block while it has room (same dimensions),
/// then into new blocks numbered after it.
pub(super) fn append(tx: &mut Tx, mut p: Pending) -> Result<(), JsValue> {
    let store = tx.store(VECTORS)?;
    let range = under(&[&p.resource.as_str().into(), &p.thread.as_str().into()])?;
    let req = store.open_cursor_with_range_and_direction(&range, IdbCursorDirection::Prev)?;
    let cap = (BLOCK_BYTES / p.dims.max(1)).max(1);
    tx.on_success(req, move |req| {
        let mut seq = 0f64;
        let mut from = 0;
        if let Ok(cur) = req.result()?.dyn_into::<IdbCursorWithValue>() {
            let last = cur.value()?;
            let key: Array = cur.primary_key()?.unchecked_into();
            seq = key.get(3).as_f64().unwrap_or(0.0);
            let dims = Reflect::get(&last, &"dims".into())?.as_f64().unwrap_or(0.0) as usize;
            let ids: Array = Reflect::get(&last, &"ids".into())?.unchecked_into();
            let have = ids.length() as usize;
            if dims == p.dims && have < cap {
                // Rewrite the last block with the first `room` new vectors after its own.
                let room = (cap - have).min(p.ids.len());
                let old_codes: Int8Array = Reflect::get(&last, &"codes".into())?.unchecked_into();
                let old_scales: Float32Array = Reflect::get(&last, &"scales".into())?.unchecked_into();
                let old_errs: Float32Array = Reflect::get(&last, &"errs".into())?.unchecked_into();
                let mut merged = Pending::new(&p.resource, &p.thread, p.dims);
                merged.ids = ids.iter().filter_map(|x| x.as_string()).collect();
                if merged.ids.len() != have {
                    return Err(super::tx::dom_error("DataError", "a vector block has a non-string id"));
                }
                merged.codes = old_codes.to_vec();
                merged.scales = old_scales.to_vec();
                merged.errs = old_errs.to_vec();
                merged.ids.extend_from_slice(&p.ids[..room]);
                merged.codes.extend_from_slice(&p.codes[..room * p.dims]);
                merged.scales.extend_from_slice(&p.scales[..room]);
                merged.errs.extend_from_slice(&p.errs[..room]);
                store.put(&block(&merged, seq, 0, merged.ids.len())?)?;
                from = room;
            }
            seq += 1.0;
        }
        while from < p.ids.len() {
            let to = (from + cap).min(p.ids.len());
            store.put(&block(&p, seq, from, to)?)?;
            seq += 1.0;
            from = to;
        }
        p.codes = Vec::new();
        Ok(())
    });
    Ok(())
}
