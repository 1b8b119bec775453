//! What the core's native tests are given in place of the bindings: the real providers'
//! protocols behind the core's own `ModelApi`, the way the bindings inject them. The core itself
//! never names a provider.

use crate::core::wire::{Api, Endpoint};

pub use crate::providers::http_model;

/// An `openai` endpoint of `api` on a closed local port, with the key `sk-secret`.
pub fn endpoint(api: Api) -> Endpoint {
    Endpoint { provider: "openai".into(), api, base_url: "http://127.0.0.1:1/v1".into(), api_key: Some("sk-secret".into()), headers: vec![] }
}
