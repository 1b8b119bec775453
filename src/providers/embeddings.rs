//! Embeddings endpoints for semantic recall (SPEC §21.3): OpenAI's `/embeddings` (and every
//! OpenAI-compatible provider's, Mistral's included) and Google's `batchEmbedContents`. Request
//! building and response decoding are pure; `HttpEmbedder` sends them over the runtime's fetch.

use std::rc::Rc;

use serde_json::{json, Value};

use super::{key_header, Api, Endpoint, HttpRequest};
use crate::core::env::{Env, LocalFuture};
use crate::core::error::AgentError;
use crate::core::memory::recall::Embedder;
use crate::core::memory::vectors::floats;

/// The embeddings request for `texts` with model `model` (and `dimensions` where the API takes it).
pub fn embed_request(endpoint: &Endpoint, model: &str, dimensions: Option<u32>, texts: &[String]) -> HttpRequest {
    let base = endpoint.base_url.trim_end_matches('/');
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    let (url, body) = if endpoint.api == Api::Google {
        if let Some(key) = &endpoint.api_key {
            headers.push(("x-goog-api-key".into(), key.clone()));
        }
        let name = if model.contains('/') { model.to_string() } else { format!("models/{model}") };
        let requests: Vec<Value> = texts
            .iter()
            .map(|t| {
                let mut r = json!({ "model": name, "content": { "parts": [{ "text": t }] } });
                if let Some(d) = dimensions {
                    r["outputDimensionality"] = d.into();
                }
                r
            })
            .collect();
        (format!("{base}/{name}:batchEmbedContents"), json!({ "requests": requests }))
    } else {
        headers.extend(key_header(endpoint));
        let mut body = json!({ "model": model, "input": texts, "encoding_format": "float" });
        if let Some(d) = dimensions {
            // Mistral names it `output_dimension`; OpenAI and most compatible APIs `dimensions`.
            let key = if endpoint.provider == "mistral" { "output_dimension" } else { "dimensions" };
            body[key] = d.into();
        }
        (format!("{base}/embeddings"), body)
    };
    for (name, value) in &endpoint.headers {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    HttpRequest { url, headers, body: body.to_string() }
}

/// The vectors of an embeddings response, in the order of the texts.
pub fn decode_embeddings(api: Api, body: &str) -> Result<Vec<Vec<f32>>, AgentError> {
    let bad = |what: &str| AgentError::api(format!("The embeddings response {what}"), false);
    let v: Value = serde_json::from_str(body).map_err(|_| bad("is not JSON"))?;
    if api == Api::Google {
        let list = v["embeddings"].as_array().ok_or_else(|| bad("has no `embeddings` array"))?;
        return list.iter().map(|e| floats(&e["values"]).ok_or_else(|| bad("has an embedding without numeric `values`"))).collect();
    }
    let list = v["data"].as_array().ok_or_else(|| bad("has no `data` array"))?;
    let mut items: Vec<(u64, Vec<f32>)> = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let vector = floats(&d["embedding"]).ok_or_else(|| bad("has an item without a numeric `embedding`"))?;
        items.push((d["index"].as_u64().unwrap_or(i as u64), vector));
    }
    items.sort_by_key(|(i, _)| *i);
    Ok(items.into_iter().map(|(_, v)| v).collect())
}

/// An embedder over a provider's endpoint.
pub struct HttpEmbedder {
    pub endpoint: Endpoint,
    pub model: String,
    pub dimensions: Option<u32>,
    pub env: Rc<dyn Env>,
}

impl Embedder for HttpEmbedder {
    fn embed(&self, texts: Vec<String>) -> LocalFuture<'static, Result<Vec<Vec<f32>>, AgentError>> {
        let req = embed_request(&self.endpoint, &self.model, self.dimensions, &texts);
        let (api, fetch) = (self.endpoint.api, self.env.fetch(req));
        Box::pin(async move {
            let mut resp = fetch.await?;
            let mut bytes = Vec::new();
            while let Some(chunk) = resp.body.read().await? {
                bytes.extend_from_slice(&chunk);
            }
            let text = String::from_utf8_lossy(&bytes);
            if resp.status >= 400 {
                let shown: String = text.chars().take(500).collect();
                return Err(AgentError::ApiCall {
                    message: format!("The embeddings endpoint answered {}: {shown}", resp.status),
                    status: Some(resp.status),
                    body: Some(text.into_owned()),
                    retryable: resp.status == 429 || resp.status >= 500,
                    retry_after_ms: None,
                });
            }
            decode_embeddings(api, &text)
        })
    }

    fn max_batch(&self) -> usize {
        // Google's batchEmbedContents takes at most 100 requests; OpenAI 2,048 inputs.
        if self.endpoint.api == Api::Google { 100 } else { 256 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(provider: &str, api: Api) -> Endpoint {
        Endpoint { provider: provider.into(), api, base_url: "http://127.0.0.1:1/v1/".into(), api_key: Some("k".into()), headers: vec![("x-extra".into(), "1".into())] }
    }

    #[test]
    fn openai_and_compatible_requests_post_the_inputs_to_embeddings() {
        let texts = vec!["a".to_string(), "b".to_string()];
        let r = embed_request(&endpoint("openai", Api::Responses), "text-embedding-3-small", Some(256), &texts);
        assert_eq!(r.url, "http://127.0.0.1:1/v1/embeddings");
        assert!(r.headers.contains(&("authorization".into(), "Bearer k".into())));
        assert!(r.headers.contains(&("x-extra".into(), "1".into())));
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body, json!({ "model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float", "dimensions": 256 }));
        let r = embed_request(&endpoint("mistral", Api::Chat), "mistral-embed", Some(8), &texts);
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["output_dimension"], 8);
        assert!(body.get("dimensions").is_none());
    }

    #[test]
    fn google_requests_batch_embed_contents_with_the_key_header() {
        let r = embed_request(&endpoint("google", Api::Google), "text-embedding-004", None, &["hi".to_string()]);
        assert_eq!(r.url, "http://127.0.0.1:1/v1/models/text-embedding-004:batchEmbedContents");
        assert!(r.headers.contains(&("x-goog-api-key".into(), "k".into())));
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body, json!({ "requests": [{ "model": "models/text-embedding-004", "content": { "parts": [{ "text": "hi" }] } }] }));
    }

    #[test]
    fn responses_decode_in_input_order_and_bad_ones_say_what_is_wrong() {
        let body = r#"{"data":[{"index":1,"embedding":[0.5]},{"index":0,"embedding":[1,2]}]}"#;
        assert_eq!(decode_embeddings(Api::Chat, body).unwrap(), vec![vec![1.0, 2.0], vec![0.5]]);
        assert_eq!(decode_embeddings(Api::Google, r#"{"embeddings":[{"values":[3]}]}"#).unwrap(), vec![vec![3.0]]);
        assert!(decode_embeddings(Api::Chat, "{}").unwrap_err().to_string().contains("no `data` array"));
        assert!(decode_embeddings(Api::Google, "nope").unwrap_err().to_string().contains("not JSON"));
    }
}
