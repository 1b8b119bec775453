//! The provider table: which `'provider/model'` prefixes exist, where each one's API lives, and
//! which environment variables hold its key and base URL.
//!
//! Resolving reads the environment only through the function it is given (Node's `process.env`,
//! a Worker's `env`, nothing in a browser); it never reads or writes anything else.

use super::{Api, Endpoint};
use crate::core::error::AgentError;

/// One known provider prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderInfo {
    /// The part before the slash in `'groq/llama-3.3-70b-versatile'`.
    pub prefix: &'static str,
    /// The default base URL, without a trailing slash. A `{VAR}` in it is the value of that
    /// environment variable (Azure's resource name).
    pub base_url: &'static str,
    /// The environment variable holding the API key; `None` when the provider needs no key.
    pub key_var: Option<&'static str>,
    /// The environment variable that overrides `base_url`.
    pub url_var: &'static str,
    pub api: Api,
    /// On the OpenAI APIs, the header that carries the key when it is not `Authorization: Bearer`.
    pub key_header: Option<&'static str>,
}

const fn chat(
    prefix: &'static str,
    base_url: &'static str,
    key_var: &'static str,
    url_var: &'static str,
) -> ProviderInfo {
    ProviderInfo { prefix, base_url, key_var: Some(key_var), url_var, api: Api::Chat, key_header: None }
}

/// The providers this version can reach.
pub const PROVIDERS: &[ProviderInfo] = &[
    // OpenAI's own API is the Responses API (as in the reference); `{ api: 'chat' }` picks Chat
    // Completions.
    ProviderInfo {
        prefix: "openai",
        base_url: "https://api.openai.com/v1",
        key_var: Some("OPENAI_API_KEY"),
        url_var: "OPENAI_BASE_URL",
        api: Api::Responses,
        key_header: None,
    },
    chat("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "GROQ_BASE_URL"),
    chat("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL"),
    chat("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL"),
    chat("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", "MISTRAL_BASE_URL"),
    chat("xai", "https://api.x.ai/v1", "XAI_API_KEY", "XAI_BASE_URL"),
    chat("togetherai", "https://api.together.xyz/v1", "TOGETHERAI_API_KEY", "TOGETHERAI_BASE_URL"),
    ProviderInfo {
        prefix: "anthropic",
        base_url: "https://api.anthropic.com/v1",
        key_var: Some("ANTHROPIC_API_KEY"),
        url_var: "ANTHROPIC_BASE_URL",
        api: Api::Anthropic,
        key_header: None,
    },
    ProviderInfo {
        prefix: "google",
        base_url: "https://generativelanguage.googleapis.com/v1beta",
        key_var: Some("GOOGLE_GENERATIVE_AI_API_KEY"),
        url_var: "GOOGLE_BASE_URL",
        api: Api::Google,
        key_header: None,
    },
    // Azure OpenAI's v1 API (or the whole URL from AZURE_BASE_URL or `url`); the model is the
    // deployment name.
    ProviderInfo {
        prefix: "azure",
        base_url: "https://{AZURE_RESOURCE_NAME}.openai.azure.com/openai/v1",
        key_var: Some("AZURE_API_KEY"),
        url_var: "AZURE_BASE_URL",
        api: Api::Responses,
        key_header: Some("api-key"),
    },
    ProviderInfo {
        prefix: "ollama",
        base_url: "http://127.0.0.1:11434/v1",
        key_var: None,
        url_var: "OLLAMA_BASE_URL",
        api: Api::Chat,
        key_header: None,
    },
];

/// `template` with each `{VAR}` replaced by that variable's value, or the first variable that has
/// none.
fn fill_in(template: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some((before, after)) = rest.split_once('{') {
        let (name, tail) = after.split_once('}').unwrap_or((after, ""));
        out.push_str(before);
        out.push_str(&var(name).ok_or_else(|| name.to_string())?);
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

/// The header that carries `provider`'s key on the OpenAI APIs, when not `Authorization: Bearer`.
pub fn key_header(provider: &str) -> Option<&'static str> {
    PROVIDERS.iter().find(|p| p.prefix == provider).and_then(|p| p.key_header)
}

/// Resolves a model id such as `'openai/gpt-4o-mini'` into where to send requests, and the model
/// name to send (everything after the first slash, so `'openrouter/meta-llama/llama-3'` keeps
/// its own slash).
///
/// The base URL is `url`, else the provider's `<PREFIX>_BASE_URL` from `env`, else the default;
/// trailing slashes are trimmed. The key is `api_key`, else the provider's `<PREFIX>_API_KEY`.
/// A missing key is an error unless the provider needs none or the base URL was overridden
/// (a proxy usually holds the key itself). Empty strings count as absent. Errors are
/// `InvalidArgument` on `field`.
///
/// In a Worker (`in_worker`), which has no environment variables, a missing key says to pass it
/// from the Worker's `env` as `apiKey`.
pub fn resolve_in(
    id: &str,
    url: Option<String>,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    env: &dyn Fn(&str) -> Option<String>,
    field: &str,
    in_worker: bool,
) -> Result<(Endpoint, String), AgentError> {
    let (prefix, model) = match id.split_once('/') {
        Some((prefix, model)) if !prefix.is_empty() && !model.is_empty() => (prefix, model),
        _ => {
            return Err(AgentError::invalid(
                field,
                format!("expected 'provider/model', e.g. 'openai/gpt-4o-mini', got '{id}'"),
            ))
        }
    };
    let Some(info) = PROVIDERS.iter().find(|p| p.prefix == prefix) else {
        let known: Vec<&str> = PROVIDERS.iter().map(|p| p.prefix).collect();
        let message = format!("unknown provider '{prefix}' in '{id}'; known providers: {}", known.join(", "));
        return Err(AgentError::invalid(field, message));
    };

    let present = |value: Option<String>| value.filter(|v| !v.is_empty());
    let url_override = present(url).or_else(|| present(env(info.url_var)));
    let api_key = present(api_key).or_else(|| info.key_var.and_then(|var| present(env(var))));
    if let (Some(var), None, None) = (info.key_var, &api_key, &url_override) {
        let message = if in_worker {
            format!("no API key for '{prefix}': a Worker has no environment variables; pass the binding as `apiKey` with the model: {{ id: '{id}', apiKey: env.{var} }}")
        } else {
            format!("no API key for '{prefix}': set the {var} environment variable or pass `apiKey` with the model")
        };
        return Err(AgentError::invalid(field, message));
    }
    let base_url = match url_override {
        Some(url) => url,
        None => fill_in(info.base_url, &|var| present(env(var))).map_err(|var| {
            AgentError::invalid(
                field,
                format!("no URL for '{prefix}': set {var} (or {}), or pass `url` with the model", info.url_var),
            )
        })?,
    };
    let base_url = base_url.trim_end_matches('/').to_string();
    // A page may use a same-origin path ('/proxy/v1'); anything else must be an absolute URL,
    // or fetch fails later with a message that looks like a network error.
    let absolute = ["http://", "https://"].iter().any(|s| base_url.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s)));
    if !(absolute && base_url.len() > 8 || base_url.starts_with('/')) || base_url.chars().any(char::is_whitespace) {
        return Err(AgentError::invalid(
            format!("{field}.url"),
            format!("expected an http(s) URL such as 'https://api.example.com/v1' or a path such as '/proxy/v1', got '{base_url}'"),
        ));
    }
    if let Some(key) = &api_key {
        crate::core::input::check_header_value(key, &format!("{field}.apiKey"))?;
    }
    let endpoint = Endpoint { provider: prefix.to_string(), api: info.api, base_url, api_key, headers };
    Ok((endpoint, model.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `resolve_in` outside a Worker.
    fn resolve(
        id: &str,
        url: Option<String>,
        api_key: Option<String>,
        headers: Vec<(String, String)>,
        env: &dyn Fn(&str) -> Option<String>,
        field: &str,
    ) -> Result<(Endpoint, String), AgentError> {
        resolve_in(id, url, api_key, headers, env, field, false)
    }

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn message(err: AgentError) -> String {
        match err {
            AgentError::InvalidArgument { field, message } => {
                assert_eq!(field, "model");
                message
            }
            other => panic!("expected a TypeError, got {other:?}"),
        }
    }

    #[test]
    fn table_is_consistent() {
        for p in PROVIDERS {
            assert_eq!(p.url_var, format!("{}_BASE_URL", p.prefix.to_uppercase()));
            if let Some(key) = p.key_var {
                // Google's key variable is the one its own SDKs read.
                let want = if p.prefix == "google" { "GOOGLE_GENERATIVE_AI_API_KEY".to_string() } else { format!("{}_API_KEY", p.prefix.to_uppercase()) };
                assert_eq!(key, want);
            }
            assert!(!p.base_url.ends_with('/'));
        }
        assert_eq!(PROVIDERS.len(), 11);
    }

    #[test]
    fn resolves_a_provider_from_the_environment() {
        let env = env_of(&[("OPENAI_API_KEY", "sk-env")]);
        let (endpoint, model) = resolve("openai/gpt-4o-mini", None, None, vec![], &env, "model").unwrap();
        assert_eq!(model, "gpt-4o-mini");
        assert_eq!(
            endpoint,
            Endpoint {
                provider: "openai".into(),
                api: Api::Responses,
                base_url: "https://api.openai.com/v1".into(),
                api_key: Some("sk-env".into()),
                headers: vec![],
            }
        );
    }

    #[test]
    fn every_provider_has_its_url_and_key_var() {
        let cases = [
            ("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
            ("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
            ("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
            ("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
            ("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
            ("togetherai", "https://api.together.xyz/v1", "TOGETHERAI_API_KEY"),
        ];
        for (prefix, url, var) in cases {
            let env = move |name: &str| (name == var).then(|| format!("key-of-{prefix}"));
            let (endpoint, model) = resolve_in(&format!("{prefix}/m"), None, None, vec![], &env, "model", false).unwrap();
            assert_eq!((endpoint.base_url.as_str(), model.as_str()), (url, "m"));
            assert_eq!(endpoint.api_key, Some(format!("key-of-{prefix}")));
            assert_eq!(endpoint.provider, prefix);
        }
    }

    #[test]
    fn model_name_keeps_later_slashes() {
        let env = env_of(&[("OPENROUTER_API_KEY", "k")]);
        let (_, model) = resolve("openrouter/meta-llama/llama-3.1-8b", None, None, vec![], &env, "model").unwrap();
        assert_eq!(model, "meta-llama/llama-3.1-8b");
    }

    #[test]
    fn arguments_win_over_the_environment() {
        let env = env_of(&[("GROQ_API_KEY", "env-key"), ("GROQ_BASE_URL", "https://env.example/v1")]);
        let headers = vec![("x-team".to_string(), "a".to_string())];
        let (endpoint, _) = resolve(
            "groq/llama",
            Some("https://proxy.example/v1//".into()),
            Some("arg-key".into()),
            headers.clone(),
            &env,
            "model",
        )
        .unwrap();
        assert_eq!(endpoint.base_url, "https://proxy.example/v1");
        assert_eq!(endpoint.api_key.as_deref(), Some("arg-key"));
        assert_eq!(endpoint.headers, headers);
    }

    #[test]
    fn base_url_from_the_environment_is_trimmed() {
        let env = env_of(&[("MISTRAL_BASE_URL", "http://localhost:8080/v1/"), ("MISTRAL_API_KEY", "k")]);
        let (endpoint, _) = resolve("mistral/small", None, None, vec![], &env, "model").unwrap();
        assert_eq!(endpoint.base_url, "http://localhost:8080/v1");
    }

    #[test]
    fn ollama_needs_no_key() {
        let (endpoint, model) = resolve("ollama/llama3.2", None, None, vec![], &no_env, "model").unwrap();
        assert_eq!(endpoint.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(endpoint.api_key, None);
        assert_eq!(model, "llama3.2");
        let env = env_of(&[("OLLAMA_BASE_URL", "http://gpu-box:11434/v1")]);
        assert_eq!(
            resolve("ollama/x", None, None, vec![], &env, "model").unwrap().0.base_url,
            "http://gpu-box:11434/v1"
        );
    }

    #[test]
    fn missing_key_says_where_to_put_one() {
        let msg = message(resolve("openai/gpt-4o", None, None, vec![], &no_env, "model").unwrap_err());
        assert!(msg.contains("OPENAI_API_KEY") && msg.contains("apiKey"), "{msg}");
        // An empty variable is no key either.
        let env = env_of(&[("XAI_API_KEY", "")]);
        let msg = message(resolve("xai/grok-3", None, Some(String::new()), vec![], &env, "model").unwrap_err());
        assert!(msg.contains("XAI_API_KEY"), "{msg}");
    }

    #[test]
    fn in_a_worker_a_missing_key_says_to_pass_the_env_binding() {
        let err = resolve_in("groq/llama-3.3-70b-versatile", None, None, vec![], &no_env, "config.model", true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config.model: no API key for 'groq': a Worker has no environment variables; pass the binding as `apiKey` with the model: { id: 'groq/llama-3.3-70b-versatile', apiKey: env.GROQ_API_KEY }"
        );
    }

    #[test]
    fn a_custom_url_makes_the_key_optional() {
        let (endpoint, _) =
            resolve("openai/gpt-4o", Some("https://my.proxy/v1".into()), None, vec![], &no_env, "model").unwrap();
        assert_eq!((endpoint.base_url.as_str(), endpoint.api_key), ("https://my.proxy/v1", None));
        let env = env_of(&[("DEEPSEEK_BASE_URL", "https://gateway.example/deepseek")]);
        assert!(resolve("deepseek/chat", None, None, vec![], &env, "model").is_ok());
    }

    #[test]
    fn malformed_ids_are_rejected() {
        for id in ["gpt-4o", "openai/", "/gpt-4o", "", "/"] {
            let msg = message(resolve(id, None, Some("k".into()), vec![], &no_env, "model").unwrap_err());
            assert_eq!(msg, format!("expected 'provider/model', e.g. 'openai/gpt-4o-mini', got '{id}'"));
        }
    }

    #[test]
    fn unknown_prefix_lists_the_known_ones() {
        let msg = message(resolve("cohere/command-r", None, Some("k".into()), vec![], &no_env, "model").unwrap_err());
        assert!(msg.contains("'cohere'"), "{msg}");
        for p in PROVIDERS {
            assert!(msg.contains(p.prefix), "{msg} lacks {}", p.prefix);
        }
    }

    #[test]
    fn azure_speaks_the_responses_api_at_its_resource() {
        let env = env_of(&[("AZURE_API_KEY", "az-key"), ("AZURE_RESOURCE_NAME", "my-res")]);
        let (endpoint, model) = resolve("azure/my-deployment", None, None, vec![], &env, "model").unwrap();
        assert_eq!(model, "my-deployment");
        assert_eq!(endpoint.api, Api::Responses);
        assert_eq!(endpoint.base_url, "https://my-res.openai.azure.com/openai/v1");
        assert_eq!(endpoint.api_key.as_deref(), Some("az-key"));
        let own = env_of(&[("AZURE_API_KEY", "az-key"), ("AZURE_BASE_URL", "https://gw.example/openai/v1/")]);
        assert_eq!(resolve("azure/d", None, None, vec![], &own, "model").unwrap().0.base_url, "https://gw.example/openai/v1");
        let msg = message(resolve("azure/d", None, Some("k".into()), vec![], &no_env, "model").unwrap_err());
        assert!(msg.contains("AZURE_RESOURCE_NAME") && msg.contains("url"), "{msg}");
    }

    #[test]
    fn field_is_the_one_given() {
        let err = resolve("nope", None, None, vec![], &no_env, "config.model.id").unwrap_err();
        assert!(matches!(err, AgentError::InvalidArgument { field, .. } if field == "config.model.id"));
    }
}
