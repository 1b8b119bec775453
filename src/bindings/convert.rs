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
    let msg = Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default();
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
    to_json_at(v, path, 0, false)
}

/// Like `to_json`, but a function anywhere in the value is an error instead of being left out:
/// for tool results, where a silently missing field would mislead the model.
pub fn to_json_strict(v: &JsValue, path: &str) -> Result<Value, AgentError> {
    to_json_at(v, path, 0, true)
}

fn to_json_at(v: &JsValue, path: &str, depth: u32, strict: bool) -> Result<Value, AgentError> {
    if depth > MAX_DEPTH {
        // The path of a cycle repeats itself: show where it starts, not all 64 levels.
        let shown: String = path.chars().take(60).collect();
        return Err(AgentError::invalid(format!("{shown}…"), "is nested too deeply (is there a cycle?)"));
    }
    if strict && v.is_function() {
        return Err(AgentError::invalid(path, "is a function, which cannot be serialised"));
    }
    if v.is_undefined() || v.is_null() || v.is_function() {
        return Ok(Value::Null);
    }
    if let Some(b) = v.as_bool() {
        return Ok(Value::Bool(b));
    }
    if let Some(n) = v.as_f64() {
        let shown = if n.is_nan() { "NaN" } else if n > 0.0 { "Infinity" } else { "-Infinity" };
        return number(n).ok_or_else(|| AgentError::invalid(path, format!("expected a finite number, got {shown}")));
    }
    if let Some(s) = v.as_string() {
        return Ok(Value::String(s));
    }
    if v.is_bigint() || v.is_symbol() {
        return Err(AgentError::invalid(path, format!("got {}, which cannot be used here (use a number or a string)", js_kind(v))));
    }
    if let Some(bytes) = v.dyn_ref::<Uint8Array>() {
        return Ok(Value::String(crate::core::base64::encode(&bytes.to_vec())));
    }
    if let Some(buf) = v.dyn_ref::<ArrayBuffer>() {
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
            out.push(to_json_at(&item, &item_path, depth + 1, strict)?);
        }
        return Ok(Value::Array(out));
    }
    let obj: &Object = v.unchecked_ref();
    let mut out = Map::new();
    for key in object_keys(obj).map_err(|e| threw(path, &e))?.iter() {
        let Some(k) = key.as_string() else { continue };
        let item = Reflect::get(obj, &key).map_err(|e| threw(&join(path, k.as_str()), &e))?;
        if item.is_undefined() || (item.is_function() && !strict) {
            continue;
        }
        let child = join(path, &k);
        out.insert(k, to_json_at(&item, &child, depth + 1, strict)?);
    }
    Ok(Value::Object(out))
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

/// Copies the listed keys of a JavaScript object (skipping absent ones) into a JSON object.
/// Only data options are walked, so objects with cycles elsewhere in the options (schemas,
/// class instances) never reach the walker.
pub fn pick_json(obj: &JsValue, keys: &[&str], path: &str) -> Result<Value, AgentError> {
    let mut out = Map::new();
    if !obj.is_object() {
        return Ok(Value::Object(out));
    }
    for k in keys {
        let field = join(path, *k);
        let v = Reflect::get(obj, &JsValue::from_str(k)).map_err(|e| threw(&field, &e))?;
        if v.is_function() {
            return Err(AgentError::invalid(field, "expected a value, got a function"));
        }
        if !v.is_undefined() {
            out.insert((*k).to_string(), to_json(&v, &field)?);
        }
    }
    Ok(Value::Object(out))
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
    if let AgentError::ApiCall { retryable, .. } = e {
        let _ = Reflect::set(&err, &"isRetryable".into(), &JsValue::from_bool(*retryable));
    }
    err.into()
}

/// A `TypeError` for a field given directly by the bindings.
pub fn type_error(field: &str, message: &str) -> JsValue {
    error_to_js(&AgentError::invalid(field, message))
}
