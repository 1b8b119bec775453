//! What may leave a run in a span (SPEC §16.6): values under sensitive keys become
//! `[REDACTED]` (also inside strings that hold JSON, and key headers), and the run's own
//! secrets (its API key, key header values) are cut out of every string.

use serde_json::{Map, Value};

pub const REDACTED: &str = "[REDACTED]";

/// Key names (lower-cased, separators removed) whose values never leave the run.
const SENSITIVE: &[&str] = &[
    "password", "token", "secret", "key", "apikey", "auth", "authorization", "bearer", "bearertoken", "jwt", "credential",
    "clientsecret", "privatekey", "refresh", "ssn", // and the key headers (`x-api-key`, `x-goog-api-key`):
    "xapikey", "xgoogapikey",
];
/// The headers that carry a provider key.
const KEY_HEADERS: &[&str] = &["authorization", "x-api-key", "api-key", "x-goog-api-key"];

/// `api-key`, `Api Key`, `api_key` → `apikey`. Every list entry is ASCII, so only ASCII letters and
/// digits are kept (and the Kelvin sign, the one other character that lower-cases to ASCII): a
/// key is redacted whenever Unicode lower-casing would redact it, without linking the Unicode
/// tables; one with other letters is judged by its ASCII ones.
fn normalised(key: &str) -> String {
    key.chars()
        .filter_map(|c| match c {
            '\u{212A}' => Some('k'),
            c if c.is_ascii_alphanumeric() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

pub fn is_sensitive(key: &str) -> bool {
    SENSITIVE.contains(&normalised(key).as_str())
}

pub fn is_key_header(name: &str) -> bool {
    KEY_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// Redacts `v` in place; `secrets` are strings cut out wherever they appear.
pub fn redact(v: &mut Value, secrets: &[String]) {
    match v {
        Value::Object(m) => redact_map(m, secrets),
        Value::Array(a) => a.iter_mut().for_each(|x| redact(x, secrets)),
        Value::String(s) => {
            if let Some(new) = redact_str(s, secrets) {
                *s = new;
            }
        }
        _ => {}
    }
}

pub fn redact_map(m: &mut Map<String, Value>, secrets: &[String]) {
    for (k, v) in m.iter_mut() {
        if is_sensitive(k) {
            *v = Value::String(REDACTED.into());
        } else {
            redact(v, secrets);
        }
    }
}

/// The redacted string, when it changes: JSON text is parsed and redacted as JSON; the secrets
/// and `key=` URL queries are replaced.
fn redact_str(s: &str, secrets: &[String]) -> Option<String> {
    let t = s.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(mut parsed) = serde_json::from_str::<Value>(s) {
            let before = parsed.clone();
            redact(&mut parsed, secrets);
            if parsed != before {
                return Some(parsed.to_string());
            }
        }
    }
    let mut out: Option<String> = None;
    for secret in secrets.iter().filter(|x| x.len() >= 4) {
        let cur = out.as_deref().unwrap_or(s);
        if cur.contains(secret.as_str()) {
            out = Some(cur.replace(secret.as_str(), REDACTED));
        }
    }
    let cur = out.as_deref().unwrap_or(s);
    if let Some(q) = key_query(cur) {
        out = Some(q);
    }
    out
}

/// `…?key=abc&x=1` → `…?key=[REDACTED]&x=1` (a Google key in a URL).
fn key_query(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    let mut changed = false;
    while let Some(i) = rest.find("key=") {
        let before = &rest[..i];
        let at_query = before.ends_with('?') || before.ends_with('&');
        out.push_str(before);
        out.push_str("key=");
        rest = &rest[i + 4..];
        if at_query {
            let end = rest.find(|c: char| c == '&' || c == '#' || c.is_whitespace() || c == '"' || c == '\'').unwrap_or(rest.len());
            if &rest[..end] != REDACTED && end > 0 {
                out.push_str(REDACTED);
                rest = &rest[end..];
                changed = true;
            }
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}
