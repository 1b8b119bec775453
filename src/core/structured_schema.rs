//! Structured output's schemas (SPEC §12.1–12.2): the root shapes a model API accepts (an object;
//! arrays and string enums are wrapped in one and unwrapped again), the strict-compatible form
//! OpenAI's strict mode wants and the `null`s it makes the model write for optional fields, and
//! the words that ask for JSON when the schema cannot go natively.

use serde_json::{json, Map, Value};

/// What the caller's schema has at its root, and so how the model's value is unwrapped.
#[derive(Clone, Debug, PartialEq)]
pub enum RootShape {
    Object,
    /// Sent as `{ elements: <array> }`.
    Array,
    /// A string `enum`, sent as `{ result: { type: 'string', enum } }`.
    Enum(Vec<String>),
}

/// The schema to send for `schema`, and its root shape.
pub fn wrap(schema: &Value) -> (Value, RootShape) {
    let ty = schema.get("type").and_then(Value::as_str);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let strings: Option<Vec<String>> = values.iter().map(|v| v.as_str().map(str::to_owned)).collect();
        if let (Some(strings), None | Some("string")) = (strings, ty) {
            let wrapped = json!({
                "type": "object",
                "properties": { "result": { "type": "string", "enum": strings } },
                "required": ["result"],
                "additionalProperties": false,
            });
            return (wrapped, RootShape::Enum(strings));
        }
    }
    if ty == Some("array") {
        let mut array = schema.clone();
        // Keywords of the root schema document belong at the new root.
        let mut root = Map::new();
        root.insert("type".into(), "object".into());
        if let Some(obj) = array.as_object_mut() {
            for key in ["$schema", "$defs", "definitions"] {
                if let Some(v) = obj.remove(key) {
                    root.insert(key.into(), v);
                }
            }
        }
        root.insert("properties".into(), json!({ "elements": array }));
        root.insert("required".into(), json!(["elements"]));
        root.insert("additionalProperties".into(), false.into());
        // `$ref`s into the moved definitions still point at `#/$defs/…`: they moved with them.
        return (Value::Object(root), RootShape::Array);
    }
    (schema.clone(), RootShape::Object)
}

/// The caller's value out of the model's: `elements` or `result` of the wrapper. A model that
/// answered with the bare value (told in words, it may) is taken as is.
pub fn unwrap(value: Value, root: &RootShape) -> Value {
    let key = match root {
        RootShape::Object => return value,
        RootShape::Array if value.is_array() => return value,
        RootShape::Enum(_) if value.is_string() => return value,
        RootShape::Array => "elements",
        RootShape::Enum(_) => "result",
    };
    match value {
        Value::Object(mut o) if o.contains_key(key) => o.remove(key).unwrap_or(Value::Null),
        other => other,
    }
}

/// A partial value, unwrapped for the caller. An enum shows the one value the prefix so far
/// matches, else the prefix itself.
pub fn unwrap_partial(value: &Value, root: &RootShape) -> Option<Value> {
    match root {
        RootShape::Object => Some(value.clone()),
        RootShape::Array => value.get("elements").cloned().or_else(|| value.is_array().then(|| value.clone())),
        RootShape::Enum(values) => {
            let prefix = value.get("result").or(Some(value).filter(|v| v.is_string()))?.as_str()?;
            let mut matching = values.iter().filter(|v| v.starts_with(prefix));
            match (matching.next(), matching.next()) {
                (Some(only), None) => Some(Value::String(only.clone())),
                _ => Some(Value::String(prefix.to_owned())),
            }
        }
    }
}

/// Keywords OpenAI's strict mode refuses; the validator still checks them afterwards.
const NOT_STRICT: &[&str] = &[
    "$schema",
    "default",
    "examples",
    "minLength",
    "maxLength",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "not",
];

/// `schema` made strict-compatible: every object lists all its properties as required (an
/// optional one becomes `anyOf: [T, { type: 'null' }]`), allows no others, and keywords strict
/// mode refuses are dropped (`oneOf` becomes `anyOf`).
pub fn strict_compatible(schema: &Value) -> Value {
    strict_at(schema, 0)
}

/// Whether `schema` is strict-compatible as it is.
pub fn is_strict_compatible(schema: &Value) -> bool {
    strict_compatible(schema) == *schema
}

const MAX_DEPTH: u32 = 64;

fn strict_at(schema: &Value, depth: u32) -> Value {
    let Some(obj) = schema.as_object() else { return schema.clone() };
    if depth > MAX_DEPTH {
        return schema.clone();
    }
    let mut out = Map::new();
    for (k, v) in obj {
        if NOT_STRICT.contains(&k.as_str()) {
            continue;
        }
        let k = if k == "oneOf" { "anyOf" } else { k.as_str() };
        let v = match k {
            "items" | "additionalItems" => strict_at(v, depth + 1),
            "anyOf" | "allOf" | "prefixItems" => match v {
                Value::Array(items) => Value::Array(items.iter().map(|s| strict_at(s, depth + 1)).collect()),
                other => other.clone(),
            },
            "$defs" | "definitions" => match v {
                Value::Object(defs) => {
                    Value::Object(defs.iter().map(|(n, s)| (n.clone(), strict_at(s, depth + 1))).collect())
                }
                other => other.clone(),
            },
            _ => v.clone(),
        };
        out.insert(k.into(), v);
    }
    let is_object = obj.get("type").and_then(Value::as_str) == Some("object") || obj.contains_key("properties");
    if is_object {
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut props = Map::new();
        if let Some(Value::Object(given)) = obj.get("properties") {
            for (name, sub) in given {
                let sub = strict_at(sub, depth + 1);
                let sub = if required.contains(&name.as_str()) || allows_null(&sub) {
                    sub
                } else {
                    json!({ "anyOf": [sub, { "type": "null" }] })
                };
                props.insert(name.clone(), sub);
            }
        }
        out.insert("required".into(), props.keys().map(|k| Value::String(k.clone())).collect());
        out.insert("properties".into(), Value::Object(props));
        out.insert("additionalProperties".into(), false.into());
    }
    Value::Object(out)
}

/// Whether a value of `schema` may be `null`.
fn allows_null(schema: &Value) -> bool {
    let ty = schema.get("type");
    ty.and_then(Value::as_str) == Some("null")
        || ty.and_then(Value::as_array).is_some_and(|t| t.iter().any(|t| t == "null"))
        || schema.get("nullable") == Some(&Value::Bool(true))
        || schema.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
        || ["anyOf", "oneOf"]
            .iter()
            .any(|k| schema.get(*k).and_then(Value::as_array).is_some_and(|alts| alts.iter().any(allows_null)))
}

/// Whether `schema` has an optional property that does not allow `null`: the only ones
/// [`strict_compatible`] makes nullable, so without one [`remove_nulls`] has nothing to remove.
pub fn has_optional_fields(schema: &Value) -> bool {
    optional_at(schema, 0)
}

fn optional_at(schema: &Value, depth: u32) -> bool {
    let Some(obj) = schema.as_object() else { return false };
    if depth > MAX_DEPTH {
        return false;
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get("properties") {
        if props
            .iter()
            .any(|(name, sub)| (!required.contains(&name.as_str()) && !allows_null(sub)) || optional_at(sub, depth + 1))
        {
            return true;
        }
    }
    obj.iter().any(|(k, v)| match k.as_str() {
        "items" | "additionalItems" => optional_at(v, depth + 1),
        "anyOf" | "allOf" | "oneOf" | "prefixItems" => {
            v.as_array().is_some_and(|a| a.iter().any(|s| optional_at(s, depth + 1)))
        }
        "$defs" | "definitions" => v.as_object().is_some_and(|d| d.values().any(|s| optional_at(s, depth + 1))),
        _ => false,
    })
}

/// Removes the `null`s strict mode made the model write for properties the caller's `schema`
/// left optional (and does not allow `null` for), so the value validates as the caller meant.
pub fn remove_nulls(value: &mut Value, schema: &Value) {
    remove_nulls_at(value, schema, schema, 0)
}

fn remove_nulls_at(value: &mut Value, schema: &Value, root: &Value, depth: u32) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    match value {
        Value::Object(fields) => {
            let Some(Value::Object(props)) = schema.get("properties") else { return };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            fields.retain(|k, v| {
                !(v.is_null()
                    && !required.contains(&k.as_str())
                    && props.get(k).is_some_and(|s| !allows_null(resolve(s, root))))
            });
            for (k, v) in fields.iter_mut() {
                if let Some(sub) = props.get(k) {
                    remove_nulls_at(v, sub, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|s| s.is_object()) {
                for v in items {
                    remove_nulls_at(v, sub, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// `schema`, or what its local `$ref` (`#/$defs/…`, `#/definitions/…`) points at.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut at = schema;
    for _ in 0..8 {
        let Some(path) = at.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) else { return at };
        match root.pointer(path) {
            Some(next) => at = next,
            None => return at,
        }
    }
    at
}

/// The words that ask for JSON matching `schema` (prompt injection, and providers without a
/// native JSON-schema mode): non-blank `instructions` stand in place of the schema.
pub fn injection_text(schema: &Value, instructions: Option<&str>) -> String {
    let what = match instructions.map(str::trim).filter(|i| !i.is_empty()) {
        Some(i) => i.to_owned(),
        None => schema.to_string(),
    };
    format!(
        "Your response must be a single JSON value that matches this JSON Schema:\n{what}\n\
         Respond with the JSON only: no other text before or after it, and no markdown code fences."
    )
}

#[cfg(test)]
#[path = "structured_schema_tests.rs"]
mod tests;
