//! Values across the boundary: JavaScript input to JSON trees for the core's parsers, JSON
//! results back to JavaScript, and core errors to real `Error` objects with a `name`.

use js_sys::{Array, ArrayBuffer, Object, Reflect, Uint8Array, JSON};
use serde_json::{Map, Number, Value};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

// Catching forms of the two calls that can throw on hostile input (a Proxy whose traps throw,
// a revoked Proxy): an exception must become a TypeError, not unwind through Rust frames.
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    pub(crate) fn is_array(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    pub(crate) fn object_keys(v: &JsValue) -> Result<Array, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = assign)]
    fn object_assign(target: &Object, source: &JsValue) -> Result<Object, JsValue>;
}

/// What a JavaScript value is, in the words of the core's error messages.
pub fn js_kind(v: &JsValue) -> &'static str {
    if v.is_undefined() {
        "undefined"
    } else if v.is_null() {
        "null"
    } else if v.is_function() {
        "a function"
    } else if v.is_bigint() {
        "a BigInt"
    } else if v.is_symbol() {
        "a Symbol"
    } else if v.as_bool().is_some() {
        "a boolean"
    } else if v.as_f64().is_some() {
        "a number"
    } else if v.is_string() {
        "a string"
    } else if is_array(v).unwrap_or(false) {
        "an array"
    } else {
        "an object"
    }
}

fn threw(path: &str, e: &JsValue) -> AgentError {
    let msg = Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string());
    let msg = msg.or_else(|| e.as_string()).unwrap_or_default();
    AgentError::invalid(path, format!("could not be read (reading it threw: {msg})"))
}

use crate::core::error::AgentError;
use crate::core::input::join;

/// Deeper than this is refused: real options are shallow, and it stops cycles.
const MAX_DEPTH: u32 = 64;

/// Converts a JavaScript value to JSON for the core's validators. Functions and `undefined` in
/// objects are left out (callbacks are read separately); bytes become base64; a Date becomes
/// its ISO string. BigInt, Symbol, non-finite numbers and cycles are a `TypeError` at `path`.
pub fn to_json(v: &JsValue, path: &str) -> Result<Value, AgentError> {
    to_json_at(v, path, 0, &mut Walk { mode: Mode::Lenient, bad: None })
}

/// Like `to_json`, but a function anywhere in the value is an error instead of being left out:
/// for tool results, where a silently missing field would mislead the model.
pub fn to_json_strict(v: &JsValue, path: &str) -> Result<Value, AgentError> {
    to_json_at(v, path, 0, &mut Walk { mode: Mode::Strict, bad: None })
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Functions in objects are left out.
    Lenient,
    /// A function is an error.
    Strict,
    /// What JSON cannot hold stays as a `not_json` stand-in, and the first one is remembered.
    Data,
}

struct Walk {
    mode: Mode,
    /// The first value JSON cannot hold (`Mode::Data`): its path and what it was.
    bad: Option<(String, &'static str)>,
}

/// JSON data from JavaScript for a core parser. A function, Symbol, BigInt or non-finite number
/// stands in the tree as `core::input::not_json`, so the parser's message names what was given
/// (`config.id: expected a string, got NaN`); a tree that still holds one after the parser
/// accepted it is refused at its path, so nothing is silently dropped or sent on.
pub struct Data {
    pub tree: Value,
    bad: Option<(String, &'static str)>,
}

impl Data {
    /// The whole value.
    pub fn of(v: &JsValue, path: &str) -> Result<Data, AgentError> {
        let mut walk = Walk { mode: Mode::Data, bad: None };
        let tree = to_json_at(v, path, 0, &mut walk)?;
        Ok(Data { tree, bad: walk.bad })
    }

    /// The listed keys of an object (absent ones skipped; `{}` when `obj` is not an object).
    /// Only data options are walked, so objects with cycles elsewhere in the options (schemas,
    /// class instances) never reach the walker. A getter that throws is a TypeError naming it.
    pub fn pick(obj: &JsValue, keys: &[&str], path: &str) -> Result<Data, AgentError> {
        let mut out = Data { tree: Value::Object(Map::new()), bad: None };
        for k in keys {
            let v = read_at(obj, k, path)?;
            if !v.is_undefined() {
                out.insert(k, Data::of(&v, &join(path, *k))?);
            }
        }
        Ok(out)
    }

    /// Sets `key` of this object tree to `other`.
    pub fn insert(&mut self, key: &str, other: Data) {
        if let Value::Object(m) = &mut self.tree {
            m.insert(key.to_owned(), other.tree);
        }
        self.bad = self.bad.take().or(other.bad);
    }

    /// Parses the tree; what JSON cannot hold is an error even when the parser let it through.
    /// A parser that took a stand-in for an object and failed inside it is answered with the
    /// stand-in's own error, whose path is the one the user wrote.
    pub fn parse<T>(&self, parse: impl FnOnce(&Value) -> Result<T, AgentError>) -> Result<T, AgentError> {
        let parsed = parse(&self.tree);
        self.settle(parsed.as_ref().err())?;
        parsed
    }

    /// Whether the stand-in's error replaces the parser's outcome (kept apart from the generic
    /// `parse`, so each parser does not get its own copy).
    #[inline(never)]
    fn settle(&self, failed: Option<&AgentError>) -> Result<(), AgentError> {
        let Some((bad, _)) = &self.bad else { return Ok(()) };
        match failed {
            None => self.check(),
            Some(AgentError::InvalidArgument { field, .. })
                if field.strip_prefix(bad.as_str()).is_some_and(|rest| rest.starts_with(['.', '['])) =>
            {
                self.check()
            }
            Some(_) => Ok(()),
        }
    }

    /// The tree, when it holds only JSON data.
    pub fn strict(self) -> Result<Value, AgentError> {
        self.check()?;
        Ok(self.tree)
    }

    fn check(&self) -> Result<(), AgentError> {
        match &self.bad {
            None => Ok(()),
            Some((path, what)) if what.ends_with("Infinity") || *what == "NaN" => {
                Err(AgentError::invalid(path, format!("expected a finite number, got {what}")))
            }
            Some((path, what)) => {
                let expected = "expected data (a string, number, boolean, array or object)";
                Err(AgentError::invalid(path, format!("{expected}, got {what}")))
            }
        }
    }
}

/// A copy of an options object's own properties; a getter that throws is a `TypeError` at `path`.
pub fn copy_object(obj: &JsValue, path: &str) -> Result<Object, JsValue> {
    object_assign(&Object::new(), obj).map_err(|e| error_to_js(&threw(path, &e)))
}

/// `obj[key]` for an options object: `undefined` when `obj` is not an object. A getter or a
/// Proxy trap that throws is a `TypeError` naming `path.key` with the thrown message.
pub fn read(obj: &JsValue, key: &str, path: &str) -> Result<JsValue, JsValue> {
    read_at(obj, key, path).map_err(|e| error_to_js(&e))
}

/// A record of things by key that become tools (`config.agents` → `agent-<key>`, `config.workflows`
/// → `workflow-<key>`): `v` must be an object (not an array; else `expected`); each key must pass
/// `core::run::delegation::valid_key` (else "is not a valid <what> key: <rule>"); each value is
/// read (a throwing getter names its field) and given to `each(key, field, value)`. (Not generic:
/// one copy of the loop in the wasm.)
pub fn keyed_record(
    v: &JsValue,
    path: &str,
    expected: &str,
    (what, rule): (&str, &str),
    each: &mut dyn FnMut(String, &str, JsValue) -> Result<(), AgentError>,
) -> Result<(), AgentError> {
    if !v.is_object() || is_array(v).unwrap_or(true) {
        return Err(AgentError::invalid(path, format!("{expected}, got {}", js_kind(v))));
    }
    let keys = object_keys(v).map_err(|_| AgentError::invalid(path, "could not be read"))?;
    for k in keys.iter() {
        let key = k.as_string().unwrap_or_default();
        let field = format!("{path}.{key}");
        if !crate::core::run::delegation::valid_key(&key) {
            return Err(AgentError::invalid(field, format!("is not a valid {what} key: {rule}")));
        }
        let value = read_at(v, &key, path)?;
        each(key, &field, value)?;
    }
    Ok(())
}

fn read_at(obj: &JsValue, key: &str, path: &str) -> Result<JsValue, AgentError> {
    if !obj.is_object() && !obj.is_function() {
        return Ok(JsValue::UNDEFINED);
    }
    Reflect::get(obj, &JsValue::from_str(key)).map_err(|e| threw(&join(path, key), &e))
}

fn to_json_at(v: &JsValue, path: &str, depth: u32, walk: &mut Walk) -> Result<Value, AgentError> {
    if depth > MAX_DEPTH {
        // The path of a cycle repeats itself: show where it starts, not all 64 levels.
        let shown: String = path.chars().take(60).collect();
        return Err(AgentError::invalid(format!("{shown}…"), "is nested too deeply (is there a cycle?)"));
    }
    if walk.mode == Mode::Strict && v.is_function() {
        return Err(AgentError::invalid(path, "is a function, which cannot be serialised"));
    }
    let not_json = match v.as_f64() {
        Some(n) if n.is_nan() => Some("NaN"),
        Some(n) if n.is_infinite() => Some(if n > 0.0 { "Infinity" } else { "-Infinity" }),
        Some(_) => None,
        None if v.is_function() => Some("a function"),
        None if v.is_bigint() => Some("a BigInt"),
        None if v.is_symbol() => Some("a Symbol"),
        None => None,
    };
    if let (Some(what), Mode::Data) = (not_json, walk.mode) {
        walk.bad.get_or_insert_with(|| (path.to_owned(), what));
        return Ok(crate::core::input::not_json(what));
    }
    if v.is_undefined() || v.is_null() || v.is_function() {
        return Ok(Value::Null);
    }
    if let Some(b) = v.as_bool() {
        return Ok(Value::Bool(b));
    }
    if let Some(n) = v.as_f64() {
        let got = not_json.unwrap_or("NaN");
        return number(n).ok_or_else(|| AgentError::invalid(path, format!("expected a finite number, got {got}")));
    }
    if let Some(s) = v.as_string() {
        return Ok(Value::String(s));
    }
    if v.is_bigint() || v.is_symbol() {
        return Err(AgentError::invalid(path, format!("got {}, which cannot be used here (use a number or a string)", js_kind(v))));
    }
    if let Some(bytes) = v.dyn_ref::<Uint8Array>() {
        if bytes.byte_length() == 0 && is_detached(&bytes.buffer()) {
            return Err(detached(path));
        }
        return Ok(Value::String(crate::core::base64::encode(&bytes.to_vec())));
    }
    if let Some(buf) = v.dyn_ref::<ArrayBuffer>() {
        if buf.byte_length() == 0 && is_detached(buf) {
            return Err(detached(path));
        }
        return Ok(Value::String(crate::core::base64::encode(&Uint8Array::new(buf).to_vec())));
    }
    if let Some(date) = v.dyn_ref::<js_sys::Date>() {
        return Ok(Value::String(date.to_iso_string().into()));
    }
    if is_array(v).map_err(|e| threw(path, &e))? {
        let len = Reflect::get(v, &"length".into()).map_err(|e| threw(path, &e))?.as_f64().unwrap_or(0.0) as u32;
        let mut out = Vec::with_capacity(len.min(4096) as usize);
        for i in 0..len {
            let item_path = format!("{path}[{i}]");
            let item = Reflect::get_u32(v, i).map_err(|e| threw(&item_path, &e))?;
            out.push(to_json_at(&item, &item_path, depth + 1, walk)?);
        }
        return Ok(Value::Array(out));
    }
    let obj: &Object = v.unchecked_ref();
    let mut out = Map::new();
    for key in object_keys(obj).map_err(|e| threw(path, &e))?.iter() {
        let Some(k) = key.as_string() else { continue };
        let item = Reflect::get(obj, &key).map_err(|e| threw(&join(path, k.as_str()), &e))?;
        if item.is_undefined() || (item.is_function() && walk.mode == Mode::Lenient) {
            continue;
        }
        let child = join(path, &k);
        out.insert(k, to_json_at(&item, &child, depth + 1, walk)?);
    }
    Ok(Value::Object(out))
}

/// A number as JavaScript prints it in a message: `-1`, `1.5`, `NaN`, `Infinity`.
pub fn number_text(n: f64) -> String {
    match number(n) {
        Some(v) => v.to_string(),
        None if n.is_nan() => "NaN".into(),
        None => (if n > 0.0 { "Infinity" } else { "-Infinity" }).into(),
    }
}

/// A detached buffer (transferred, or its memory released) reads as empty and cannot be viewed;
/// only an empty-looking one is checked, so the common case costs nothing.
fn is_detached(buf: &ArrayBuffer) -> bool {
    let ctor = Uint8Array::new_with_length(0).constructor();
    Reflect::construct(&ctor, &Array::of1(buf)).is_err()
}

fn detached(path: &str) -> AgentError {
    AgentError::invalid(path, "expected bytes, got a detached ArrayBuffer (it was transferred or its memory released)")
}

fn number(n: f64) -> Option<Value> {
    if !n.is_finite() {
        return None;
    }
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        return Some(Value::Number(Number::from(n as i64)));
    }
    Number::from_f64(n).map(Value::Number)
}

/// JSON to a JavaScript value (maps as plain objects).
pub fn from_json(v: &Value) -> JsValue {
    match v {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::String(s) => JsValue::from_str(s),
        Value::Number(n) => JsValue::from_f64(n.as_f64().unwrap_or(0.0)),
        // One JSON.parse is cheaper than a boundary call per property.
        _ => JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL),
    }
}

/// A core error as a JavaScript error: `TypeError` for bad input, otherwise an `Error` whose
/// `name` says the kind, with `status` and `body` when the model API answered and `code`
/// (`'quota'`, `'version'`, …) on a `StorageError`.
pub fn error_to_js(e: &AgentError) -> JsValue {
    let message = e.to_string();
    let err: js_sys::Error = match e {
        AgentError::InvalidArgument { .. } => js_sys::TypeError::new(&message).unchecked_into(),
        _ => {
            let err = js_sys::Error::new(&message);
            err.set_name(e.name());
            err
        }
    };
    if let Some(s) = e.status() {
        let _ = Reflect::set(&err, &"status".into(), &JsValue::from(s));
    }
    if let Some(b) = e.body() {
        let _ = Reflect::set(&err, &"body".into(), &JsValue::from_str(b));
    }
    if let Some(code) = e.storage_code() {
        let _ = Reflect::set(&err, &"code".into(), &JsValue::from_str(code));
    }
    if let AgentError::StructuredOutput { code, value, .. } = e {
        let details = js_sys::Object::new();
        let _ = Reflect::set(&details, &"value".into(), &JsValue::from_str(value));
        let _ = Reflect::set(&err, &"code".into(), &JsValue::from_str(code));
        let _ = Reflect::set(&err, &"id".into(), &JsValue::from_str(code));
        let _ = Reflect::set(&err, &"details".into(), &details);
    }
    if let AgentError::Resume { code, .. } = e {
        let _ = Reflect::set(&err, &"code".into(), &JsValue::from_str(code));
    }
    if let AgentError::ApiCall { retryable, .. } = e {
        let _ = Reflect::set(&err, &"isRetryable".into(), &JsValue::from_bool(*retryable));
    }
    err.into()
}

/// A `TypeError` for a field given directly by the bindings.
pub fn type_error(field: &str, message: &str) -> JsValue {
    error_to_js(&AgentError::invalid(field, message))
}

thread_local! {
    /// JavaScript strings of property names, by the address and length of their `&'static str`.
    static KEYS: std::cell::RefCell<Vec<((usize, usize), JsValue)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `k` as a JavaScript string, made once: code that sets the same dozen properties on every
/// call (a workflow step's `ctx`) otherwise copies and decodes each name every time.
pub fn key(k: &'static str) -> JsValue {
    let at = (k.as_ptr() as usize, k.len());
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        if let Some((_, v)) = keys.iter().find(|(a, _)| *a == at) {
            return v.clone();
        }
        let v = JsValue::from_str(k);
        keys.push((at, v.clone()));
        v
    })
}
