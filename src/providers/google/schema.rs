//! JSON Schemas as Gemini's `Schema` accepts them (for tool parameters).

use serde_json::{Map, Value};

use super::object;

/// The fields of Gemini's `Schema` (a subset of OpenAPI 3.0). The API rejects a request with any
/// other key (`$schema`, `additionalProperties`, `$defs`, `exclusiveMinimum`, …), so the rest are
/// dropped: the model sees a looser schema, which is better than a refused request.
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "default",
    "example",
    "properties",
    "required",
    "propertyOrdering",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
];

/// A JSON Schema in the form Gemini accepts. Besides dropping unknown keys: a local `$ref`
/// (`#/$defs/…`, `#/definitions/…`) is replaced by the schema it points to, its sibling keys
/// winning, except inside its own expansion (a recursive type), where it is dropped; a string
/// `const` becomes a one-value `enum`; a type list with `"null"` becomes `nullable`, and one with
/// several types an `anyOf`; an empty `properties` or `required` is left out.
pub(super) fn clean_schema(schema: &Value, root: &Value, expanding: &mut Vec<String>) -> Value {
    let Value::Object(schema) = schema else {
        // `true` ("anything") has no Gemini spelling but the empty schema.
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference.strip_prefix('#').and_then(|pointer| root.pointer(pointer));
        if let Some(target) = target.filter(|_| !expanding.iter().any(|r| r == reference)) {
            expanding.push(reference.to_string());
            if let Value::Object(inlined) = clean_schema(target, root, expanding) {
                out = inlined;
            }
            expanding.pop();
        }
    }
    for (key, value) in schema {
        let value = match (key.as_str(), value) {
            ("properties", Value::Object(properties)) if !properties.is_empty() => Value::Object(
                properties.iter().map(|(name, s)| (name.clone(), clean_schema(s, root, expanding))).collect(),
            ),
            ("items", items) => clean_schema(items, root, expanding),
            ("anyOf", Value::Array(list)) => list.iter().map(|s| clean_schema(s, root, expanding)).collect(),
            ("type", Value::Array(types)) => {
                let named: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
                if named.len() < types.len() {
                    out.insert("nullable".into(), true.into());
                }
                match named[..] {
                    [] => continue,
                    [one] => one.clone(),
                    _ => {
                        out.insert(
                            "anyOf".into(),
                            named.iter().map(|t| object(vec![("type", (*t).clone())])).collect(),
                        );
                        continue;
                    }
                }
            }
            ("const", Value::String(_)) => {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
                continue;
            }
            ("properties" | "anyOf", _) => continue,
            ("required", Value::Array(names)) if names.is_empty() => continue,
            (key, value) if SCHEMA_KEYS.contains(&key) => value.clone(),
            _ => continue,
        };
        out.insert(key.clone(), value);
    }
    fit_gemini(&mut out);
    Value::Object(out)
}

/// What Gemini's `Schema` refuses even with only its own keys: string formats other than
/// `enum` and `date-time`, `enum` on non-strings or holding `null`, arrays without `items`, and
/// objects without properties (those properties are left out: the model cannot be told their
/// shape, and the package's own validation still checks what it sends).
fn fit_gemini(out: &mut Map<String, Value>) {
    let ty = out.get("type").and_then(Value::as_str).map(str::to_owned);
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        let before = values.len();
        values.retain(|v| !v.is_null());
        if values.len() < before {
            out.insert("nullable".into(), true.into());
        }
    }
    let enum_of_strings = out.get("enum").and_then(Value::as_array).is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string));
    match ty.as_deref() {
        None if enum_of_strings => {
            out.insert("type".into(), "string".into());
        }
        Some("string") if enum_of_strings => {}
        _ => {
            out.remove("enum");
        }
    }
    let ty = out.get("type").and_then(Value::as_str).map(str::to_owned);
    if ty.as_deref() != Some("string") || out.get("format").and_then(Value::as_str).is_some_and(|f| f != "enum" && f != "date-time") {
        out.remove("format");
    }
    if ty.as_deref() == Some("array") && !out.contains_key("items") {
        out.insert("items".into(), object(vec![("type", "string".into())]));
    }
    // Properties that are objects without properties of their own cannot be described.
    let empty_object = |v: &Value| v.get("type").and_then(Value::as_str) == Some("object") && v.get("properties").is_none();
    if let Some(Value::Object(props)) = out.get_mut("properties") {
        let dropped: Vec<String> = props.iter().filter(|(_, v)| empty_object(v)).map(|(k, _)| k.clone()).collect();
        for k in &dropped {
            props.remove(k);
        }
        if let Some(Value::Array(required)) = out.get_mut("required") {
            required.retain(|r| r.as_str().is_none_or(|r| !dropped.iter().any(|d| d == r)));
        }
    }
    if matches!(out.get("properties"), Some(Value::Object(p)) if p.is_empty()) {
        out.remove("properties");
        out.remove("required");
    }
}
