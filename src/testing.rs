//! What the core's native tests are given in place of the bindings: the real providers'
//! protocols behind the core's own `ModelApi`, the way the bindings inject them. The core itself
//! never names a provider.

use std::rc::Rc;

use crate::core::model_api::{HttpModel, ModelApi};
use crate::core::wire::{Api, Endpoint};

/// The model at `endpoint`, spoken with its API's protocol.
pub fn http_model(endpoint: Endpoint) -> Rc<dyn ModelApi> {
    Rc::new(HttpModel { protocol: crate::providers::protocol(endpoint.api), endpoint })
}

/// An `openai` endpoint of `api` on a closed local port, with the key `sk-secret`.
pub fn endpoint(api: Api) -> Endpoint {
    Endpoint { provider: "openai".into(), api, base_url: "http://127.0.0.1:1/v1".into(), api_key: Some("sk-secret".into()), headers: vec![] }
}
