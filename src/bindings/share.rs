//! JSON trees that hold a long reply's text several times (a step, `getFullOutput()`: `text`,
//! `steps[i].text`, the messages) go to JavaScript with each long string made once and shared by
//! every place that holds it. The JSON text that `JSON.parse` reads then holds no long string at
//! all, so a long reply costs neither a second serialised copy of every place in the wasm memory
//! nor a JavaScript string per place (issue 18).

use std::collections::HashMap;

use js_sys::Reflect;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::convert::from_json;

/// Strings at least this long are made once and shared.
const SHARED_MIN_BYTES: usize = 1024;

#[derive(Clone)]
enum Key {
    Field(String),
    Index(u32),
}

impl Key {
    fn js(&self) -> JsValue {
        match self {
            Key::Field(k) => JsValue::from_str(k),
            Key::Index(i) => JsValue::from_f64(f64::from(*i)),
        }
    }
}

#[derive(Default)]
struct Taken {
    /// Distinct long strings, by their first place.
    distinct: HashMap<String, usize>,
    /// Where each long string was: the keys from the root, and which distinct string.
    places: Vec<(Vec<Key>, usize)>,
}

impl Taken {
    /// Takes the long strings out of `v` (leaving `null` in their place).
    fn take(&mut self, v: &mut Value, path: &mut Vec<Key>) {
        match v {
            Value::String(s) if s.len() >= SHARED_MIN_BYTES => {
                let next = self.distinct.len();
                let which = *self.distinct.entry(std::mem::take(s)).or_insert(next);
                self.places.push((path.clone(), which));
                *v = Value::Null;
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    path.push(Key::Index(i as u32));
                    self.take(item, path);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    path.push(Key::Field(k.clone()));
                    self.take(item, path);
                    path.pop();
                }
            }
            _ => {}
        }
    }
}

/// `v` as a JavaScript value, like `from_json`, each long string made once.
pub fn from_json_shared(mut v: Value) -> JsValue {
    if let Value::String(s) = &v {
        return JsValue::from_str(s);
    }
    let mut taken = Taken::default();
    taken.take(&mut v, &mut Vec::new());
    let out = from_json(&v);
    drop(v);
    if taken.places.is_empty() {
        return out;
    }
    let mut strings = vec![JsValue::UNDEFINED; taken.distinct.len()];
    for (s, i) in taken.distinct.drain() {
        strings[i] = JsValue::from_str(&s);
    }
    for (path, which) in &taken.places {
        let Some((last, parents)) = path.split_last() else { continue };
        let mut at = out.clone();
        for k in parents {
            // The path was read from the tree this object was parsed from.
            at = Reflect::get(&at, &k.js()).unwrap_or(JsValue::UNDEFINED);
        }
        let _ = Reflect::set(&at, &last.js(), &strings[*which]);
    }
    out
}
