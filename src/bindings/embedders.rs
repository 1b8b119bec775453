//! `new Memory({ embedder })` (SPEC §21.3): a `'provider/model'` string or `{ id, url?, apiKey?,
//! headers?, dimensions? }` (an embeddings endpoint), an AI SDK `EmbeddingModel`
//! (`doEmbed({ values })`), or a function `(texts) => Promise<number[][]>`.

use std::rc::Rc;

use js_sys::{Array, Float32Array, Function, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, js_kind, read, to_json, type_error};
use super::tools::{call_async, thrown_message};
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::memory::recall::{Embedder, Indexer};
use crate::core::memory::Store;
use crate::providers::embeddings::HttpEmbedder;
use crate::providers::registry;

const FIELD: &str = "new Memory(config).embedder";

/// The embedder of `v`, or a TypeError naming the field.
pub fn embedder_from(v: &JsValue) -> Result<Rc<dyn Embedder>, JsValue> {
    if let Some(f) = v.dyn_ref::<Function>() {
        return Ok(Rc::new(FnEmbedder { f: f.clone() }));
    }
    if v.is_object() && read(v, "doEmbed", FIELD)?.is_function() {
        return Ok(Rc::new(SdkEmbedder { model: v.clone() }));
    }
    if v.is_string() || v.is_object() {
        let tree = to_json(v, FIELD).map_err(|e| error_to_js(&e))?;
        let dimensions = match tree.get("dimensions") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|d| d > 0 && d <= 100_000) => n.as_u64().map(|d| d as u32),
            Some(other) => return Err(type_error(&format!("{FIELD}.dimensions"), &format!("expected a positive integer, got {other}"))),
        };
        let mc = crate::core::options::parse_model_config(&tree, FIELD).map_err(|e| error_to_js(&e))?;
        let (endpoint, model) =
            registry::resolve_in(&mc.id, mc.url, mc.api_key, mc.headers, &crate::platform::env_var, FIELD, crate::platform::in_workerd()).map_err(|e| error_to_js(&e))?;
        if endpoint.provider == "anthropic" {
            return Err(type_error(FIELD, "Anthropic has no embeddings endpoint; use an OpenAI-compatible, Google or Mistral embedding model, an AI SDK EmbeddingModel or a function"));
        }
        return Ok(Rc::new(HttpEmbedder { endpoint, model, dimensions, env: Rc::new(crate::platform::JsEnv) }));
    }
    Err(type_error(
        FIELD,
        &format!("expected 'provider/model' (e.g. 'openai/text-embedding-3-small'), {{ id, dimensions? }}, an AI SDK EmbeddingModel or a function (texts) => Promise<number[][]>, got {}", js_kind(v)),
    ))
}

/// The indexer of a `Memory` with this embedder: runs on the event loop, warns on failures.
pub fn indexer(embedder: Rc<dyn Embedder>, store: Rc<dyn Store>) -> Rc<Indexer> {
    let spawn = Rc::new(|f: LocalFuture<'static, ()>| wasm_bindgen_futures::spawn_local(f));
    let report = Rc::new(|e: &AgentError| super::report::warn(&format!("wasm-agent: semantic recall: {e}")));
    Indexer::new(embedder, store, spawn, report)
}

/// Reads a list of vectors (arrays of numbers or Float32Arrays); `what` names it for errors.
fn vectors_of(v: &JsValue, what: &str) -> Result<Vec<Vec<f32>>, AgentError> {
    if !Array::is_array(v) {
        return Err(AgentError::api(format!("{what} is {}, not an array of vectors", js_kind(v)), false));
    }
    Array::from(v)
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if item.is_instance_of::<Float32Array>() || Array::is_array(&item) {
                Ok(Float32Array::new(&item).to_vec())
            } else {
                Err(AgentError::api(format!("{what}[{i}] is {}, not an array of numbers", js_kind(&item)), false))
            }
        })
        .collect()
}

fn texts_array(texts: &[String]) -> Array {
    texts.iter().map(|t| JsValue::from_str(t)).collect()
}

struct FnEmbedder {
    f: Function,
}

impl Embedder for FnEmbedder {
    fn embed(&self, texts: Vec<String>) -> LocalFuture<'static, Result<Vec<Vec<f32>>, AgentError>> {
        let f = self.f.clone();
        Box::pin(async move {
            let got = call_async(&f, &JsValue::UNDEFINED, &[&texts_array(&texts)]).await.map_err(|e| AgentError::api(format!("The embedder function threw: {}", thrown_message(&e)), false))?;
            vectors_of(&got, "What the embedder function returned")
        })
    }
}

struct SdkEmbedder {
    model: JsValue,
}

impl Embedder for SdkEmbedder {
    fn embed(&self, texts: Vec<String>) -> LocalFuture<'static, Result<Vec<Vec<f32>>, AgentError>> {
        let model = self.model.clone();
        Box::pin(async move {
            let f: Function = Reflect::get(&model, &"doEmbed".into()).ok().and_then(|f| f.dyn_into().ok()).ok_or_else(|| AgentError::api("embedder.doEmbed is not a function", false))?;
            let arg = js_sys::Object::new();
            let _ = Reflect::set(&arg, &"values".into(), &texts_array(&texts));
            let got = call_async(&f, &model, &[&arg]).await.map_err(|e| AgentError::api(format!("embedder.doEmbed threw: {}", thrown_message(&e)), false))?;
            let embeddings = Reflect::get(&got, &"embeddings".into()).unwrap_or(JsValue::UNDEFINED);
            vectors_of(&embeddings, "embedder.doEmbed(…).embeddings")
        })
    }

    fn max_batch(&self) -> usize {
        let n = Reflect::get(&self.model, &"maxEmbeddingsPerCall".into()).ok().and_then(|n| n.as_f64()).unwrap_or(64.0);
        if n >= 1.0 { n.min(2048.0) as usize } else { 64 }
    }
}
