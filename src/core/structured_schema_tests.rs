use serde_json::json;

use super::*;

#[test]
fn object_schemas_go_as_they_are() {
    let s = json!({ "type": "object", "properties": { "a": { "type": "string" } } });
    assert_eq!(wrap(&s), (s.clone(), RootShape::Object));
    assert_eq!(unwrap(json!({ "a": "x" }), &RootShape::Object), json!({ "a": "x" }));
}

#[test]
fn arrays_are_wrapped_in_elements_and_unwrapped() {
    let s = json!({ "$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": { "$ref": "#/$defs/p" }, "$defs": { "p": { "type": "string" } } });
    let (sent, root) = wrap(&s);
    assert_eq!(root, RootShape::Array);
    assert_eq!(
        sent,
        json!({
            "type": "object",
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$defs": { "p": { "type": "string" } },
            "properties": { "elements": { "type": "array", "items": { "$ref": "#/$defs/p" } } },
            "required": ["elements"],
            "additionalProperties": false,
        })
    );
    assert_eq!(unwrap(json!({ "elements": [1, 2] }), &root), json!([1, 2]));
    assert_eq!(unwrap(json!([3]), &root), json!([3]), "a bare array is taken as is");
    assert_eq!(unwrap_partial(&json!({ "elements": [1] }), &root), Some(json!([1])));
    assert_eq!(unwrap_partial(&json!({}), &root), None);
}

#[test]
fn string_enums_are_wrapped_in_result_and_partials_match_one_value() {
    let s = json!({ "type": "string", "enum": ["positive", "negative", "neutral", "negligible"] });
    let (sent, root) = wrap(&s);
    assert_eq!(
        sent["properties"]["result"],
        json!({ "type": "string", "enum": ["positive", "negative", "neutral", "negligible"] })
    );
    assert_eq!(sent["required"], json!(["result"]));
    assert_eq!(unwrap(json!({ "result": "neutral" }), &root), json!("neutral"));
    assert_eq!(unwrap(json!("neutral"), &root), json!("neutral"));
    let partial = |p: &str| unwrap_partial(&json!({ "result": p }), &root).unwrap();
    assert_eq!(partial("p"), json!("positive"));
    assert_eq!(partial("ne"), json!("ne"), "three values start with ne");
    assert_eq!(partial("neu"), json!("neutral"));
    assert_eq!(partial("x"), json!("x"));
    // A numeric enum is no string enum: sent as it is.
    let n = json!({ "enum": [1, 2] });
    assert_eq!(wrap(&n).1, RootShape::Object);
}

#[test]
fn strict_form_requires_everything_and_makes_optional_fields_nullable() {
    let s = json!({
        "$schema": "x",
        "type": "object",
        "properties": {
            "name": { "type": "string", "minLength": 1 },
            "age": { "type": "integer", "default": 3 },
            "tags": { "type": "array", "items": { "type": "object", "properties": { "t": { "type": "string" } }, "required": ["t"] }, "uniqueItems": true },
            "either": { "oneOf": [{ "type": "string" }, { "type": "number" }] },
            "maybe": { "type": ["string", "null"] }
        },
        "required": ["name", "tags"]
    });
    let strict = strict_compatible(&s);
    assert_eq!(
        strict,
        json!({
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "age": { "anyOf": [{ "type": "integer" }, { "type": "null" }] },
                "tags": { "type": "array", "items": { "type": "object", "properties": { "t": { "type": "string" } }, "required": ["t"], "additionalProperties": false } },
                "either": { "anyOf": [{ "anyOf": [{ "type": "string" }, { "type": "number" }] }, { "type": "null" }] },
                "maybe": { "type": ["string", "null"] }
            },
            "required": ["name", "age", "tags", "either", "maybe"],
            "additionalProperties": false
        })
    );
    assert!(is_strict_compatible(&strict));
    assert!(!is_strict_compatible(&s));
}

#[test]
fn nulls_of_optional_fields_are_removed_before_validation() {
    let s = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "age": { "type": "integer" },
            "note": { "type": ["string", "null"] },
            "kids": { "type": "array", "items": { "$ref": "#/definitions/kid" } }
        },
        "required": ["name"],
        "definitions": { "kid": { "type": "object", "properties": { "nick": { "type": "string" } } } }
    });
    let mut v = json!({ "name": "Ada", "age": null, "note": null, "kids": [{ "nick": null }, { "nick": "b" }] });
    remove_nulls(&mut v, &s);
    assert_eq!(v, json!({ "name": "Ada", "note": null, "kids": [{}, { "nick": "b" }] }));
    assert!(crate::core::schema::validate(&s, &v).is_empty());
    // A required field's null stays, so validation reports it.
    let mut v = json!({ "name": null });
    remove_nulls(&mut v, &s);
    assert_eq!(v, json!({ "name": null }));
}

#[test]
fn injection_text_carries_the_schema_or_the_instructions() {
    let s = json!({ "type": "object" });
    let t = injection_text(&s, None);
    assert!(t.contains(r#"{"type":"object"}"#) && t.contains("JSON only"), "{t}");
    let t = injection_text(&s, Some("Give a title and bullets."));
    assert!(t.contains("Give a title and bullets.") && !t.contains(r#"{"type""#), "{t}");
    assert_eq!(injection_text(&s, Some("  ")), injection_text(&s, None));
}

#[test]
fn optional_fields_are_found_at_any_depth_and_nullable_ones_do_not_count() {
    let all_required = json!({
        "type": "object",
        "properties": { "items": { "type": "array", "items": { "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] } } },
        "required": ["items"]
    });
    assert!(!has_optional_fields(&all_required));
    // Its strict form differs (additionalProperties), but nothing in it comes back as a `null` to remove.
    assert_ne!(strict_compatible(&all_required), all_required);
    let nullable =
        json!({ "type": "object", "properties": { "a": { "anyOf": [{ "type": "string" }, { "type": "null" }] } } });
    assert!(!has_optional_fields(&nullable));
    let deep = json!({ "type": "object", "properties": { "a": { "type": "array", "items": { "type": "object", "properties": { "b": { "type": "string" } } } } }, "required": ["a"] });
    assert!(has_optional_fields(&deep));
    let in_defs = json!({ "type": "object", "properties": {}, "$defs": { "p": { "type": "object", "properties": { "x": { "type": "number" } } } } });
    assert!(has_optional_fields(&in_defs));
    let in_any_of = json!({ "anyOf": [{ "type": "object", "properties": { "x": { "type": "number" } } }] });
    assert!(has_optional_fields(&in_any_of));
}
