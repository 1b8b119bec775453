//! Field paths, JavaScript-style type names, "expected …, got …" errors, and the small getters
//! every option parser uses. Re-exported from `core::input`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::core::error::AgentError;

// ---------------------------------------------------------------------------------------------
// Paths, type names and error messages
// ---------------------------------------------------------------------------------------------

/// One step of a field path: an object key (`a.b`) or an array index (`a[3]`).
pub trait PathKey {
    fn push_onto(&self, path: &mut String);
}

impl PathKey for usize {
    fn push_onto(&self, path: &mut String) {
        let _ = write!(path, "[{self}]");
    }
}

impl PathKey for &str {
    /// Keys that are not JavaScript identifiers (header names such as `x-api-key`) are written
    /// the way a user would have to write them: `headers["x-api-key"]`.
    fn push_onto(&self, path: &mut String) {
        if is_identifier(self) {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(self);
        } else {
            path.push('[');
            path.push_str(&serde_json::to_string(self).unwrap_or_default());
            path.push(']');
        }
    }
}

impl PathKey for &String {
    fn push_onto(&self, path: &mut String) {
        self.as_str().push_onto(path)
    }
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `join("a", "b")` is `"a.b"`, `join("a", 3)` is `"a[3]"`.
pub fn join(path: &str, key: impl PathKey) -> String {
    let mut out = path.to_owned();
    key.push_onto(&mut out);
    out
}

/// The JSON type of a value as a JavaScript user would name it: "a string", "an array", "null"…
/// A [`not_json`] stand-in is named for the JavaScript value it replaced ("a function", "NaN").
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(m) => match m.get(NOT_JSON_KEY).and_then(Value::as_str) {
            Some(name) if m.len() == 1 => NOT_JSON.iter().find(|k| **k == name).copied().unwrap_or("an object"),
            _ => "an object",
        },
    }
}

/// The key of a [`not_json`] stand-in: no JavaScript options object has it.
const NOT_JSON_KEY: &str = "\u{0}not-json";
/// What a JavaScript value JSON cannot hold may be, as [`kind`] names it.
pub const NOT_JSON: &[&str] = &["a function", "a Symbol", "a BigInt", "NaN", "Infinity", "-Infinity"];

/// A stand-in for a JavaScript value JSON cannot hold (one of [`NOT_JSON`]): the bindings leave
/// it in the tree so a parser's "expected a string, got a function" names what the user gave.
/// A tree that still holds one after parsing is refused by the bindings (nothing sends it on).
pub fn not_json(what: &'static str) -> Value {
    let mut m = Map::new();
    m.insert(NOT_JSON_KEY.to_owned(), Value::String(what.to_owned()));
    Value::Object(m)
}

/// A value for the "got …" half of a message about a wrong *value* (not type): strings are
/// quoted (and shortened), numbers printed, anything else named by its type.
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Number(n) => n.to_string(),
        other => kind(other).to_owned(),
    }
}

pub(super) fn quote(s: &str) -> String {
    const MAX_CHARS: usize = 40;
    match s.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", serde_json::to_string(&s[..cut]).unwrap_or_default()),
        None => serde_json::to_string(s).unwrap_or_default(),
    }
}

/// `"a", "b" or "c"`.
pub(super) fn one_of(options: &[&str]) -> String {
    let quoted: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// "expected <what>, got <type>", with an absent value reported as `undefined`.
pub(super) fn type_error(path: &str, what: &str, found: Option<&Value>) -> AgentError {
    AgentError::invalid(path, format!("expected {what}, got {}", found.map_or("undefined", kind)))
}

/// "expected <what>, got <value>", for values of the right type but the wrong content.
pub(super) fn value_error(path: &str, what: &str, found: Option<&Value>) -> AgentError {
    let got = found.map_or_else(|| "undefined".to_owned(), describe);
    AgentError::invalid(path, format!("expected {what}, got {got}"))
}

/// The error for a part whose `type` is not allowed where it stands.
pub(super) fn unknown_part(part_path: &str, found: &str, allowed: &[&str], place: &str) -> AgentError {
    AgentError::invalid(
        join(part_path, "type"),
        format!("expected {} in {place}, got {}", one_of(allowed), quote(found)),
    )
}

// ---------------------------------------------------------------------------------------------
// Getters shared by every option parser
// ---------------------------------------------------------------------------------------------

/// `obj[key]`, with `null` treated like absent (JavaScript users pass `null` to mean "not set").
pub(super) fn present<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// An optional string; `null` or absent is `None`. Errors name `path.key`.
pub fn opt_str<'a>(obj: &'a Value, key: &str, path: &str) -> Result<Option<&'a str>, AgentError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(type_error(&join(path, key), "a string", Some(other))),
    }
}

/// A required string: absent and `null` are errors.
pub fn req_str<'a>(obj: &'a Value, key: &str, path: &str) -> Result<&'a str, AgentError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        found => Err(type_error(&join(path, key), "a string", found)),
    }
}

/// An optional number.
pub fn opt_f64(obj: &Value, key: &str, path: &str) -> Result<Option<f64>, AgentError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(type_error(&join(path, key), "a number", Some(other))),
    }
}

/// A whole number held either as an integer or as a float without a fraction (JavaScript has
/// only doubles, so `3` may arrive as `3.0`).
fn as_integer(n: &serde_json::Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    // 2^63: every float below it in magnitude fits an i64 exactly.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < LIMIT).map(|f| f as i64 as i128)
}

/// An optional integer within `min..=max`; `what` names the range in the error.
pub(super) fn opt_integer(
    obj: &Value,
    key: &str,
    path: &str,
    min: i128,
    max: i128,
    what: &str,
) -> Result<Option<i128>, AgentError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Number(n)) => match as_integer(n) {
            Some(i) if (min..=max).contains(&i) => Ok(Some(i)),
            _ => Err(value_error(&join(path, key), what, Some(&Value::Number(n.clone())))),
        },
        Some(other) => Err(type_error(&join(path, key), what, Some(other))),
    }
}

/// An optional non-negative integer.
pub fn opt_u64(obj: &Value, key: &str, path: &str) -> Result<Option<u64>, AgentError> {
    let v = opt_integer(obj, key, path, 0, u64::MAX.into(), "a non-negative integer")?;
    Ok(v.map(|i| i as u64))
}

/// An optional integer (negative allowed).
pub fn opt_i64(obj: &Value, key: &str, path: &str) -> Result<Option<i64>, AgentError> {
    let v = opt_integer(obj, key, path, i64::MIN.into(), i64::MAX.into(), "an integer")?;
    Ok(v.map(|i| i as i64))
}

/// An optional boolean.
pub fn opt_bool(obj: &Value, key: &str, path: &str) -> Result<Option<bool>, AgentError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(type_error(&join(path, key), "a boolean", Some(other))),
    }
}

/// An optional plain object.
pub fn opt_object<'a>(obj: &'a Value, key: &str, path: &str) -> Result<Option<&'a Map<String, Value>>, AgentError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(type_error(&join(path, key), "an object", Some(other))),
    }
}

/// An optional array.
pub fn opt_array<'a>(obj: &'a Value, key: &str, path: &str) -> Result<Option<&'a [Value]>, AgentError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(other) => Err(type_error(&join(path, key), "an array", Some(other))),
    }
}

/// Refuses a header that `fetch` would refuse at send time (and whose error text would repeat
/// the value, which may be a key): names must be HTTP tokens, values single-line Latin-1.
/// The message never quotes the value.
pub fn check_header(name: &str, value: &str, path: &str) -> Result<(), AgentError> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(AgentError::invalid(path, "is not a valid HTTP header name"));
    }
    check_header_value(value, path)
}

/// See `check_header`; used for API keys too, so the message never shows the value.
pub fn check_header_value(value: &str, path: &str) -> Result<(), AgentError> {
    if value.chars().any(|c| matches!(c, '\r' | '\n' | '\0') || c as u32 > 0xff) {
        return Err(AgentError::invalid(
            path,
            "contains a line break, NUL or non-Latin-1 character, which cannot be sent in an HTTP header",
        ));
    }
    Ok(())
}
