//! Tests of tool-argument validation: every keyword passing and failing with the exact path and
//! message the model reads, formats, `describe`, `check_schema`, and a no-panic property test.

use serde_json::{json, Value};

use super::*;

/// The failures as the model reads them: "path: message; path: message", "" when valid.
fn check(schema: Value, value: Value) -> String {
    let errors = validate(&schema, &value);
    errors.iter().map(|e| format!("{}: {}", e.path, e.message)).collect::<Vec<_>>().join("; ")
}

fn ok(schema: Value, value: Value) {
    assert_eq!(check(schema.clone(), value.clone()), "", "{value} should match {schema}");
}

fn bad_schema(schema: Value) -> String {
    check_schema(&schema).expect_err("expected the schema to be refused")
}

// ---------------------------------------------------------------------------------------------
// type
// ---------------------------------------------------------------------------------------------

#[test]
fn each_type_accepts_its_values_and_names_what_it_got() {
    ok(json!({"type": "string"}), json!("x"));
    ok(json!({"type": "number"}), json!(1.5));
    ok(json!({"type": "number"}), json!(-3));
    ok(json!({"type": "integer"}), json!(3));
    ok(json!({"type": "integer"}), json!(u64::MAX));
    ok(json!({"type": "boolean"}), json!(false));
    ok(json!({"type": "object"}), json!({}));
    ok(json!({"type": "array"}), json!([]));
    ok(json!({"type": "null"}), json!(null));

    assert_eq!(check(json!({"type": "string"}), json!(5)), "$: expected a string, got a number");
    assert_eq!(check(json!({"type": "number"}), json!("5")), "$: expected a number, got a string");
    assert_eq!(check(json!({"type": "integer"}), json!(true)), "$: expected an integer, got a boolean");
    assert_eq!(check(json!({"type": "boolean"}), json!(null)), "$: expected a boolean, got null");
    assert_eq!(check(json!({"type": "object"}), json!([])), "$: expected an object, got an array");
    assert_eq!(check(json!({"type": "array"}), json!({})), "$: expected an array, got an object");
    assert_eq!(check(json!({"type": "null"}), json!(0)), "$: expected null, got a number");
}

#[test]
fn integer_accepts_integral_floats_only() {
    ok(json!({"type": "integer"}), json!(3.0));
    ok(json!({"type": "integer"}), json!(-0.0));
    assert_eq!(check(json!({"type": "integer"}), json!(3.5)), "$: expected an integer, got a number");
    assert_eq!(check(json!({"type": "integer"}), json!(1e-300)), "$: expected an integer, got a number");
}

#[test]
fn type_lists_accept_any_and_read_as_a_list() {
    ok(json!({"type": ["string", "null"]}), json!(null));
    ok(json!({"type": ["string", "null"]}), json!("x"));
    assert_eq!(check(json!({"type": ["string", "null"]}), json!(1)), "$: expected a string or null, got a number");
    assert_eq!(
        check(json!({"type": ["string", "integer", "null"]}), json!(1.5)),
        "$: expected a string, an integer or null, got a number"
    );
}

#[test]
fn a_type_mismatch_is_the_only_error_for_that_value() {
    let schema = json!({"type": "string", "minLength": 3, "enum": ["abc"], "const": "abc"});
    assert_eq!(check(schema, json!(12)), "$: expected a string, got a number");
}

#[test]
fn keywords_for_other_types_are_ignored() {
    let others = [json!(12), json!("x"), json!([1, 1]), json!({}), json!(null), json!(true)];
    let schemas = [
        (json!({"minLength": 3, "format": "email"}), "string"),
        (json!({"minimum": 5, "multipleOf": 2}), "number"),
        (json!({"minItems": 3, "uniqueItems": true, "items": false}), "array"),
        (json!({"required": ["a"], "minProperties": 2}), "object"),
    ];
    for (schema, kind) in schemas {
        for v in others.iter().filter(|v| !is_type(kind, v)) {
            ok(schema.clone(), v.clone());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Objects
// ---------------------------------------------------------------------------------------------

#[test]
fn properties_check_present_keys_with_dotted_paths() {
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}});
    ok(schema.clone(), json!({}));
    ok(schema.clone(), json!({"a": {"b": "x"}, "other": 1}));
    assert_eq!(check(schema, json!({"a": {"b": 1}})), "$.a.b: expected a string, got a number");
}

#[test]
fn keys_that_are_not_identifiers_are_quoted_in_paths() {
    let schema = json!({"properties": {"first name": {"type": "string"}, "x-id": {"type": "string"}, "$ok_1": {"type": "string"}}});
    assert_eq!(
        check(schema, json!({"first name": 1, "x-id": 2, "$ok_1": 3})),
        "$[\"first name\"]: expected a string, got a number; $[\"x-id\"]: expected a string, got a number; \
         $.$ok_1: expected a string, got a number"
    );
}

#[test]
fn required_names_each_missing_property_at_the_objects_path() {
    let schema = json!({"properties": {"o": {"required": ["unit", "city"]}}, "required": ["o"]});
    assert_eq!(check(schema.clone(), json!({})), "$: missing required property 'o'");
    assert_eq!(
        check(schema.clone(), json!({"o": {}})),
        "$.o: missing required property 'unit'; $.o: missing required property 'city'"
    );
    ok(schema, json!({"o": {"unit": null, "city": null}}));
}

#[test]
fn additional_properties_false_names_the_unexpected_property() {
    let schema = json!({"properties": {"a": {}}, "additionalProperties": false});
    ok(schema.clone(), json!({"a": 1}));
    assert_eq!(check(schema, json!({"a": 1, "foo": 2})), "$: unexpected property 'foo'");
}

#[test]
fn additional_properties_schema_checks_the_other_values() {
    let schema = json!({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}});
    ok(schema.clone(), json!({"a": "x", "b": 1, "c": 2.5}));
    assert_eq!(check(schema, json!({"a": "x", "b": "y"})), "$.b: expected a number, got a string");
}

#[test]
fn pattern_properties_are_not_checked_and_turn_off_additional_properties() {
    let schema = json!({
        "properties": {"a": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "number"}},
        "additionalProperties": false
    });
    ok(schema.clone(), json!({"a": "x", "x-b": "not a number", "zzz": 1}));
    assert_eq!(check(schema, json!({"a": 1})), "$.a: expected a string, got a number");
}

#[test]
fn min_and_max_properties() {
    let schema = json!({"minProperties": 1, "maxProperties": 2});
    ok(schema.clone(), json!({"a": 1}));
    assert_eq!(check(schema.clone(), json!({})), "$: must have at least 1 property");
    assert_eq!(check(schema, json!({"a": 1, "b": 2, "c": 3})), "$: must have at most 2 properties");
}

// ---------------------------------------------------------------------------------------------
// Arrays
// ---------------------------------------------------------------------------------------------

#[test]
fn items_paths_carry_the_index() {
    let schema = json!({"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]
    }}}});
    ok(schema.clone(), json!({"items": [{"city": "a"}, {"city": "b"}]}));
    assert_eq!(
        check(schema, json!({"items": [{"city": "a"}, {}, {"city": 7}]})),
        "$.items[1]: missing required property 'city'; $.items[2].city: expected a string, got a number"
    );
}

#[test]
fn nested_arrays() {
    let schema = json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}});
    assert_eq!(check(schema, json!([[1, 2], [3, "x"]])), "$[1][1]: expected an integer, got a string");
}

#[test]
fn draft_07_tuple_items_and_additional_items() {
    let schema = json!({"items": [{"type": "string"}, {"type": "number"}], "additionalItems": false});
    ok(schema.clone(), json!(["a", 1]));
    ok(schema.clone(), json!(["a"]));
    assert_eq!(
        check(schema.clone(), json!([1, "a"])),
        "$[0]: expected a string, got a number; $[1]: expected a number, got a string"
    );
    assert_eq!(check(schema, json!(["a", 1, true])), "$[2]: is not allowed");
    // Without additionalItems, extra items are free.
    ok(json!({"items": [{"type": "string"}]}), json!(["a", 1, null]));
}

#[test]
fn prefix_items_with_items_for_the_rest() {
    let schema = json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}});
    ok(schema.clone(), json!(["a", 1, 2]));
    assert_eq!(check(schema, json!(["a", 1, 2.5])), "$[2]: expected an integer, got a number");
    let closed = json!({"prefixItems": [{"type": "string"}], "items": false});
    assert_eq!(check(closed, json!(["a", "b"])), "$[1]: is not allowed");
    ok(json!({"prefixItems": [{"type": "string"}]}), json!(["a", 1]));
}

#[test]
fn min_and_max_items() {
    let schema = json!({"minItems": 2, "maxItems": 3});
    ok(schema.clone(), json!([1, 2]));
    assert_eq!(check(schema.clone(), json!([1])), "$: must have at least 2 items");
    assert_eq!(check(schema, json!([1, 2, 3, 4])), "$: must have at most 3 items");
    assert_eq!(check(json!({"maxItems": 1}), json!([1, 2])), "$: must have at most 1 item");
}

#[test]
fn unique_items_uses_json_equality() {
    let schema = json!({"uniqueItems": true});
    ok(schema.clone(), json!([1, "1", [1], {"a": 1}, {"a": 2}, true, null]));
    assert_eq!(check(schema.clone(), json!([1, 2, 1.0])), "$: must not contain duplicates (items 0 and 2 are equal)");
    assert_eq!(
        check(schema.clone(), json!([{"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2.0}]}])),
        "$: must not contain duplicates (items 0 and 1 are equal)"
    );
    ok(json!({"uniqueItems": false}), json!([1, 1]));
    ok(schema, json!([{"a": 1}, {"a": 1, "b": 2}]));
}

// ---------------------------------------------------------------------------------------------
// Strings and numbers
// ---------------------------------------------------------------------------------------------

#[test]
fn string_lengths_count_unicode_scalar_values() {
    let schema = json!({"minLength": 2, "maxLength": 3});
    ok(schema.clone(), json!("👍👍")); // 8 bytes, 4 UTF-16 units, 2 characters
    ok(schema.clone(), json!("héé"));
    assert_eq!(check(schema.clone(), json!("é")), "$: must have at least 2 characters");
    assert_eq!(check(schema, json!("abcd")), "$: must have at most 3 characters");
    assert_eq!(check(json!({"minLength": 1}), json!("")), "$: must have at least 1 character");
    assert_eq!(check(json!({"minLength": 3}), json!("ab")), "$: must have at least 3 characters");
}

#[test]
fn minimum_and_maximum_are_inclusive() {
    let schema = json!({"minimum": 0, "maximum": 14});
    ok(schema.clone(), json!(0));
    ok(schema.clone(), json!(14.0));
    assert_eq!(check(schema.clone(), json!(-1)), "$: must be ≥ 0");
    assert_eq!(check(schema.clone(), json!(-0.5)), "$: must be ≥ 0");
    assert_eq!(check(schema, json!(15)), "$: must be ≤ 14");
    assert_eq!(check(json!({"minimum": 0.5}), json!(0.25)), "$: must be ≥ 0.5");
    assert_eq!(check(json!({"maximum": -2.5}), json!(-2)), "$: must be ≤ -2.5");
}

#[test]
fn exclusive_bounds_number_form() {
    let schema = json!({"exclusiveMinimum": 0, "exclusiveMaximum": 10});
    ok(schema.clone(), json!(0.001));
    ok(schema.clone(), json!(9));
    assert_eq!(check(schema.clone(), json!(0)), "$: must be > 0");
    assert_eq!(check(schema, json!(10.0)), "$: must be < 10");
}

#[test]
fn exclusive_bounds_draft_04_boolean_form() {
    let schema = json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": true});
    ok(schema.clone(), json!(5));
    assert_eq!(check(schema.clone(), json!(0)), "$: must be > 0");
    assert_eq!(check(schema, json!(10)), "$: must be < 10");
    let inclusive = json!({"minimum": 0, "exclusiveMinimum": false});
    ok(inclusive.clone(), json!(0));
    assert_eq!(check(inclusive, json!(-1)), "$: must be ≥ 0");
}

#[test]
fn bounds_compare_large_integers_exactly() {
    ok(json!({"maximum": 9007199254740993u64}), json!(9007199254740993u64));
    assert_eq!(
        check(json!({"maximum": 9007199254740992i64}), json!(9007199254740993i64)),
        "$: must be ≤ 9007199254740992"
    );
}

#[test]
fn multiple_of_integers_and_decimals() {
    ok(json!({"multipleOf": 5}), json!(10));
    ok(json!({"multipleOf": 5}), json!(-15));
    ok(json!({"multipleOf": 5}), json!(10.0));
    assert_eq!(check(json!({"multipleOf": 5}), json!(7)), "$: must be a multiple of 5");
    ok(json!({"multipleOf": 0.1}), json!(0.3));
    ok(json!({"multipleOf": 0.01}), json!(19.99));
    assert_eq!(check(json!({"multipleOf": 0.1}), json!(0.35)), "$: must be a multiple of 0.1");
    assert_eq!(check(json!({"multipleOf": 2}), json!(2.5)), "$: must be a multiple of 2");
    ok(json!({"multipleOf": -1}), json!(i64::MIN)); // not a valid schema, but no overflow
}

#[test]
fn enum_lists_the_allowed_values_and_compares_numbers_by_value() {
    let schema = json!({"enum": ["c", "f"]});
    ok(schema.clone(), json!("c"));
    assert_eq!(check(schema, json!("k")), "$: must be one of \"c\", \"f\"");
    ok(json!({"enum": [1, 2]}), json!(1.0));
    ok(json!({"enum": [null, {"a": [1]}]}), json!({"a": [1.0]}));
    assert_eq!(check(json!({"enum": [1, "a", null]}), json!(2)), "$: must be one of 1, \"a\", null");
}

#[test]
fn const_compares_by_json_value() {
    ok(json!({"const": "tool"}), json!("tool"));
    ok(json!({"const": {"a": 1}}), json!({"a": 1.0}));
    assert_eq!(check(json!({"const": "tool"}), json!("tools")), "$: must be \"tool\"");
    assert_eq!(check(json!({"const": 3}), json!(3.5)), "$: must be 3");
    assert_eq!(check(json!({"const": {"a": 1}}), json!({"a": 1, "b": 2})), "$: must be {\"a\":1}");
}

// ---------------------------------------------------------------------------------------------
// Combinators, nullable, boolean schemas, $ref
// ---------------------------------------------------------------------------------------------

#[test]
fn any_of_passes_on_one_match_and_says_none_matched() {
    let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]});
    ok(schema.clone(), json!("x"));
    ok(schema.clone(), json!(3));
    assert_eq!(check(schema.clone(), json!(true)), "$: matches none of the allowed shapes (anyOf)");
    // Only the integer shape has the value's type, so its error is the helpful one.
    assert_eq!(check(schema, json!(-1)), "$: must be ≥ 0");
}

#[test]
fn nullable_any_of_reports_the_non_null_shapes_error() {
    // zod 4: z.string().min(1).nullable()
    let schema = json!({"properties": {"name": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}}});
    ok(schema.clone(), json!({"name": null}));
    ok(schema.clone(), json!({"name": "x"}));
    assert_eq!(check(schema.clone(), json!({"name": ""})), "$.name: must have at least 1 character");
    assert_eq!(check(schema, json!({"name": 1})), "$.name: matches none of the allowed shapes (anyOf)");
}

#[test]
fn one_of_needs_exactly_one_match() {
    let schema = json!({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 10}]});
    ok(schema.clone(), json!(3));
    ok(schema.clone(), json!(10.5));
    assert_eq!(check(schema.clone(), json!(12)), "$: matches 2 of the oneOf shapes, expected exactly one");
    assert_eq!(check(schema, json!("x")), "$: matches none of the allowed shapes (oneOf)");
}

#[test]
fn one_of_discriminated_union() {
    let schema = json!({"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "number"}}, "required": ["kind", "n"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "s": {"type": "string"}}, "required": ["kind", "s"]}
    ]});
    ok(schema.clone(), json!({"kind": "a", "n": 1}));
    ok(schema.clone(), json!({"kind": "b", "s": "x"}));
    assert_eq!(check(schema, json!({"kind": "c"})), "$: matches none of the allowed shapes (oneOf)");
}

#[test]
fn all_of_reports_every_failing_shape() {
    let schema =
        json!({"allOf": [{"required": ["a"]}, {"required": ["b"]}, {"properties": {"c": {"type": "string"}}}]});
    ok(schema.clone(), json!({"a": 1, "b": 2}));
    assert_eq!(
        check(schema, json!({"c": 1})),
        "$: missing required property 'a'; $: missing required property 'b'; $.c: expected a string, got a number"
    );
}

#[test]
fn not_rejects_what_matches() {
    let schema = json!({"not": {"type": "string"}});
    ok(schema.clone(), json!(1));
    assert_eq!(check(schema, json!("x")), "$: matches a shape that is not allowed (not)");
    ok(json!({"not": {"not": {"type": "string"}}}), json!("x"));
}

#[test]
fn nullable_accepts_null_whatever_else_is_said() {
    let schema = json!({"type": "string", "nullable": true, "enum": ["a"], "minLength": 3});
    ok(schema.clone(), json!(null));
    assert_eq!(check(schema, json!(1)), "$: expected a string, got a number");
    assert_eq!(check(json!({"type": "string"}), json!(null)), "$: expected a string, got null");
    assert_eq!(check(json!({"type": "string", "nullable": false}), json!(null)), "$: expected a string, got null");
}

#[test]
fn boolean_schemas() {
    ok(json!(true), json!({"anything": [1, 2]}));
    assert_eq!(check(json!(false), json!(1)), "$: is not allowed");
    let schema = json!({"properties": {"secret": false}});
    ok(schema.clone(), json!({"other": 1}));
    assert_eq!(check(schema, json!({"secret": 1})), "$.secret: is not allowed");
    ok(json!({}), json!(null));
}

#[test]
fn refs_to_defs_and_definitions() {
    let schema = json!({
        "$defs": {"city": {"type": "string", "minLength": 1}},
        "definitions": {"unit": {"enum": ["c", "f"]}},
        "properties": {"city": {"$ref": "#/$defs/city"}, "unit": {"$ref": "#/definitions/unit"}}
    });
    ok(schema.clone(), json!({"city": "Oslo", "unit": "c"}));
    assert_eq!(
        check(schema, json!({"city": "", "unit": "k"})),
        "$.city: must have at least 1 character; $.unit: must be one of \"c\", \"f\""
    );
}

#[test]
fn ref_pointer_escapes_resolve() {
    let schema = json!({"$defs": {"a/b": {"type": "string"}, "m~n": {"type": "number"}},
        "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/m~0n"}}});
    ok(schema.clone(), json!({"x": "s", "y": 1}));
    assert_eq!(
        check(schema, json!({"x": 1, "y": "s"})),
        "$.x: expected a string, got a number; $.y: expected a number, got a string"
    );
}

/// As zod 4's `z.toJSONSchema` writes a recursive `z.object({ name, children: z.array(Node) })`.
fn tree_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            "required": ["name", "children"],
            "additionalProperties": false
        }}
    })
}

#[test]
fn recursive_refs_follow_the_value() {
    let leaf = |n: &str| json!({"name": n, "children": []});
    ok(tree_schema(), json!({"name": "root", "children": [leaf("a"), {"name": "b", "children": [leaf("c")]}]}));
    assert_eq!(
        check(tree_schema(), json!({"name": "root", "children": [leaf("a"), {"name": "b", "children": [leaf("c"), {"name": 5, "children": [], "x": 1}]}]})),
        "$.children[1].children[1].name: expected a string, got a number; $.children[1].children[1]: unexpected property 'x'"
    );
}

#[test]
fn deep_recursive_values_within_the_limit_validate() {
    let mut v = json!({"name": "leaf", "children": []});
    for _ in 0..60 {
        v = json!({"name": "n", "children": [v]});
    }
    ok(tree_schema(), v);
}

#[test]
fn values_nested_past_the_limit_fail_instead_of_overflowing() {
    let mut v = json!([]);
    for _ in 0..1000 {
        v = json!([v]);
    }
    assert_eq!(check(json!({"items": {"$ref": "#"}}), v), "$: nests too deeply to validate");
}

#[test]
fn ref_loops_give_up_instead_of_recursing_forever() {
    let schema = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    assert_eq!(check(schema, json!(1)), "$: nests too deeply to validate");
    assert_eq!(check(json!({"allOf": [{"$ref": "#"}]}), json!(null)), "$: nests too deeply to validate");
}

#[test]
fn exponential_schemas_give_up_on_the_step_budget() {
    // Both shapes match at every level, so oneOf walks 2^30 paths through a 30-deep array.
    let schema = json!({"oneOf": [{"items": {"$ref": "#"}}, {"items": {"$ref": "#"}}]});
    let mut v = json!([]);
    for _ in 0..30 {
        v = json!([v]);
    }
    assert_eq!(check(schema, v), "$: is too complex to validate");
}

#[test]
fn unresolvable_refs_are_skipped_by_validate() {
    ok(json!({"$ref": "https://example.com/s.json", "type": "string"}), json!("x"));
    ok(json!({"$ref": "#/$defs/missing"}), json!(1));
}

#[test]
fn unique_items_on_huge_arrays_stays_within_the_budget() {
    let items: Vec<Value> = (0..2000).map(|i| json!(i)).collect();
    assert_eq!(check(json!({"uniqueItems": true}), Value::Array(items)), "$: is too complex to validate");
}

#[test]
fn errors_are_capped_at_twenty() {
    let props: serde_json::Map<String, Value> = (0..30).map(|i| (format!("p{i:02}"), json!(i))).collect();
    let errors = validate(&json!({"additionalProperties": {"type": "string"}}), &Value::Object(props));
    assert_eq!(errors.len(), 20);
    assert_eq!(errors[0], SchemaError { path: "$.p00".into(), message: "expected a string, got a number".into() });
    assert_eq!(errors[19].path, "$.p19");
}

// ---------------------------------------------------------------------------------------------
// A schema as zod 4 writes it
// ---------------------------------------------------------------------------------------------

/// `z.toJSONSchema(z.object({ city: z.string().min(1), unit: z.enum(['c','f']).optional(),
/// days: z.number().int().min(1).max(14) }))`
fn weather() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14}
        },
        "required": ["city", "days"],
        "additionalProperties": false
    })
}

#[test]
fn zod_object_schema_accepts_good_arguments() {
    assert_eq!(check_schema(&weather()), Ok(()));
    ok(weather(), json!({"city": "Oslo", "days": 3}));
    ok(weather(), json!({"city": "Oslo", "unit": "f", "days": 14}));
    ok(weather(), json!({"city": "Oslo", "days": 1.0}));
}

#[test]
fn zod_object_schema_explains_bad_arguments() {
    assert_eq!(check(weather(), json!({})), "$: missing required property 'city'; $: missing required property 'days'");
    assert_eq!(
        check(weather(), json!({"city": "", "days": 0})),
        "$.city: must have at least 1 character; $.days: must be ≥ 1"
    );
    assert_eq!(check(weather(), json!({"city": "Oslo", "days": 15})), "$.days: must be ≤ 14");
    assert_eq!(check(weather(), json!({"city": "Oslo", "days": 2.5})), "$.days: expected an integer, got a number");
    assert_eq!(
        check(weather(), json!({"city": 1, "days": "3"})),
        "$.city: expected a string, got a number; $.days: expected an integer, got a string"
    );
    assert_eq!(
        check(weather(), json!({"city": "Oslo", "days": 3, "unit": "kelvin", "country": "NO"})),
        "$.unit: must be one of \"c\", \"f\"; $: unexpected property 'country'"
    );
    assert_eq!(check(weather(), json!("Oslo")), "$: expected an object, got a string");
}

// ---------------------------------------------------------------------------------------------
// Formats
// ---------------------------------------------------------------------------------------------

fn format_errors(format: &str, good: &[&str], bad: &[&str]) {
    let schema = json!({"type": "string", "format": format});
    for s in good {
        assert_eq!(check(schema.clone(), json!(s)), "", "{format}: {s:?} should pass");
    }
    for s in bad {
        assert!(check(schema.clone(), json!(s)).starts_with("$: is not a valid "), "{format}: {s:?} should fail");
    }
}

#[test]
fn email_format() {
    assert_eq!(check(json!({"format": "email"}), json!("ana.example.com")), "$: is not a valid email address");
    format_errors(
        "email",
        &["ana@example.com", "a.b+tag@mail.example.co.uk", "x_y-z@sub-domain.io", "ünï@example.com"],
        &[
            "",
            "ana",
            "@example.com",
            "ana@",
            "ana@localhost",
            "a na@example.com",
            "ana@exa mple.com",
            ".ana@example.com",
            "ana.@example.com",
            "a..b@example.com",
            "ana@@example.com",
            "ana@example..com",
            "ana@-example.com",
            "a@b@c.com",
        ],
    );
}

#[test]
fn uri_format() {
    assert_eq!(check(json!({"format": "uri"}), json!("example.com/x")), "$: is not a valid URI (scheme:…)");
    let good = [
        "https://example.com/a?b=c#d",
        "mailto:ana@example.com",
        "urn:isbn:0451450523",
        "data:text/plain,hi",
        "x+y.z-1:rest",
    ];
    let bad =
        ["", "example.com", "://x", "1http://x", "http://exa mple.com", "http://x/<y>", "ht_tp://x", "http://x\n"];
    format_errors("uri", &good, &bad);
    format_errors("url", &good, &bad);
}

#[test]
fn uuid_format() {
    format_errors(
        "uuid",
        &[
            "123e4567-e89b-12d3-a456-426614174000",
            "00000000-0000-0000-0000-000000000000",
            "ABCDEF01-2345-6789-ABCD-EF0123456789",
        ],
        &[
            "",
            "123e4567e89b12d3a456426614174000",
            "123e4567-e89b-12d3-a456-42661417400",
            "123e4567-e89b-12d3-a456-4266141740000",
            "g23e4567-e89b-12d3-a456-426614174000",
            "123e4567-e89b-12d3-a456_426614174000",
        ],
    );
}

#[test]
fn date_format() {
    assert_eq!(check(json!({"format": "date"}), json!("2024-02-30")), "$: is not a valid date (YYYY-MM-DD)");
    format_errors(
        "date",
        &["2024-01-31", "2024-02-29", "2000-02-29", "1999-12-31", "2023-04-30"],
        &[
            "",
            "2024-1-31",
            "2024-13-01",
            "2024-00-10",
            "2024-01-00",
            "2024-01-32",
            "2023-02-29",
            "1900-02-29",
            "2023-04-31",
            "2024/01/31",
            "20240131",
            "2024-01-31T00:00:00Z",
            "２０２４-01-31",
        ],
    );
}

#[test]
fn time_format() {
    assert_eq!(check(json!({"format": "time"}), json!("25:00")), "$: is not a valid time (HH:MM:SS)");
    format_errors(
        "time",
        &["09:30:00", "23:59:60", "09:30:00.123", "09:30:00Z", "09:30:00+05:30", "09:30:00.5-08:00", "09:30", "09:30z"],
        &[
            "",
            "9:30",
            "24:00:00",
            "09:60:00",
            "09:30:61",
            "09:30:00.",
            "09:30:00+5:30",
            "09:30:00+24:00",
            "09:30:",
            "09:30:00 ",
            "0930",
        ],
    );
}

#[test]
fn date_time_format() {
    assert_eq!(
        check(json!({"format": "date-time"}), json!("2024-01-31")),
        "$: is not a valid date-time (RFC 3339, e.g. 2024-01-31T09:30:00Z)"
    );
    format_errors(
        "date-time",
        &[
            "2024-01-31T09:30:00Z",
            "2024-01-31t09:30:00z",
            "2024-01-31 09:30:00+01:00",
            "2024-02-29T23:59:59.999999-07:00",
        ],
        &[
            "",
            "2024-01-31T09:30:00",
            "2024-01-31T09:30Z",
            "2024-01-32T09:30:00Z",
            "2024-01-31X09:30:00Z",
            "2024-01-31T",
            "2024-01-31T25:00:00Z",
        ],
    );
}

#[test]
fn ip_formats() {
    assert_eq!(check(json!({"format": "ipv4"}), json!("256.0.0.1")), "$: is not a valid IPv4 address");
    format_errors(
        "ipv4",
        &["0.0.0.0", "127.0.0.1", "255.255.255.255", "10.20.30.40"],
        &["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.-4", "1..3.4", "a.b.c.d", "1.2.3.4 ", "1000.1.1.1"],
    );
    assert_eq!(check(json!({"format": "ipv6"}), json!("1:2")), "$: is not a valid IPv6 address");
    format_errors(
        "ipv6",
        &[
            "::",
            "::1",
            "1::",
            "2001:db8::8a2e:370:7334",
            "2001:0db8:0000:0000:0000:ff00:0042:8329",
            "fe80::1:2:3:4:5:6",
            "::ffff:192.0.2.1",
            "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5:6:7::",
        ],
        &[
            "",
            ":",
            ":::",
            "1:2:3:4:5:6:7",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            "12345::",
            "g::1",
            ":1:2:3:4:5:6:7",
            "1:2:3:4:5:6:7:8::",
            "1.2.3.4::",
            "::1.2.3",
            "1:2:3:4:5:6:7:1.2.3.4",
            "fe80::1%eth0",
        ],
    );
}

#[test]
fn hostname_format() {
    format_errors(
        "hostname",
        &["localhost", "example.com", "a-b.c-d.example", "xn--bcher-kva.example", "a1"],
        &[
            "",
            ".",
            "-a.com",
            "a-.com",
            "a..b",
            "exa_mple.com",
            "ex ample.com",
            "é.com",
            &"a".repeat(64),
            &["a"; 128].join("."),
        ],
    );
    ok(json!({"format": "hostname"}), json!(["a".repeat(63), "b".into()].join(".")));
}

#[test]
fn unknown_formats_and_non_strings_pass() {
    ok(json!({"format": "color"}), json!("not a colour"));
    ok(json!({"format": "email"}), json!(12));
    ok(json!({"format": "date", "pattern": "^never$"}), json!("2024-01-01"));
}

// ---------------------------------------------------------------------------------------------
// describe
// ---------------------------------------------------------------------------------------------

#[test]
fn describe_lists_every_failure_for_the_model() {
    let schema = json!({"properties": {"city": {"type": "string"}}, "required": ["unit"]});
    let errors = validate(&schema, &json!({"city": 5}));
    assert_eq!(
        describe("weather", &errors),
        "Invalid arguments for tool 'weather': $: missing required property 'unit'; $.city: expected a string, \
         got a number. Fix the arguments and call the tool again."
    );
    let one = [SchemaError { path: "$.days".into(), message: "must be ≤ 14".into() }];
    assert_eq!(
        describe("forecast", &one),
        "Invalid arguments for tool 'forecast': $.days: must be ≤ 14. Fix the arguments and call the tool again."
    );
    assert_eq!(describe("x", &[]), "Invalid arguments for tool 'x'. Fix the arguments and call the tool again.");
}

// ---------------------------------------------------------------------------------------------
// check_schema
// ---------------------------------------------------------------------------------------------

#[test]
fn check_schema_accepts_usable_schemas() {
    for schema in [
        json!(true),
        json!(false),
        json!({}),
        weather(),
        tree_schema(),
        json!({"type": ["string", "null"], "x-vendor": {"whatever": 1}, "description": 5}),
        json!({"items": [{"type": "string"}], "additionalItems": false, "minimum": 0, "exclusiveMinimum": true}),
        json!({"prefixItems": [true], "items": false, "uniqueItems": true, "maxItems": 3.0}),
        json!({"anyOf": [{"$ref": "#"}], "definitions": {"a": {}}, "not": {"$ref": "#/definitions/a"}}),
        json!({"type": "string", "nullable": true, "format": "x", "pattern": "^a", "multipleOf": 0.5}),
        json!({"patternProperties": {"^x": {"type": "number"}}, "propertyNames": {"maxLength": 3}, "enum": []}),
    ] {
        assert_eq!(check_schema(&schema), Ok(()), "{schema}");
    }
}

#[test]
fn check_schema_names_the_bad_keyword() {
    assert_eq!(bad_schema(json!(5)), "#: a schema must be an object or a boolean, got a number");
    assert_eq!(
        bad_schema(json!({"type": 5})),
        "#/type: must be a type name (string, number, integer, boolean, object, array, null) or an array of them"
    );
    assert!(bad_schema(json!({"type": "int"})).starts_with("#/type: must be a type name"));
    assert!(bad_schema(json!({"type": ["string", 1]})).starts_with("#/type: must be a type name"));
    assert!(bad_schema(json!({"type": []})).starts_with("#/type: must be a type name"));
    assert_eq!(bad_schema(json!({"required": "x"})), "#/required: must be an array of property names");
    assert_eq!(bad_schema(json!({"required": ["a", 1]})), "#/required: must be an array of property names");
    assert_eq!(bad_schema(json!({"properties": []})), "#/properties: must be an object of schemas");
    assert_eq!(
        bad_schema(json!({"properties": {"city": {"minLength": -1}}})),
        "#/properties/city/minLength: must be a non-negative integer"
    );
    assert_eq!(
        bad_schema(json!({"properties": {"a/b": {"properties": {"c": 7}}}})),
        "#/properties/a~1b/properties/c: a schema must be an object or a boolean, got a number"
    );
    assert_eq!(bad_schema(json!({"maxItems": 1.5})), "#/maxItems: must be a non-negative integer");
    assert_eq!(bad_schema(json!({"anyOf": []})), "#/anyOf: must be a non-empty array of schemas");
    assert_eq!(bad_schema(json!({"oneOf": {}})), "#/oneOf: must be a non-empty array of schemas");
    assert_eq!(
        bad_schema(json!({"allOf": [{}, {"items": [{}, "x"]}]})),
        "#/allOf/1/items/1: a schema must be an object or a boolean, got a string"
    );
    assert_eq!(bad_schema(json!({"items": 3})), "#/items: a schema must be an object or a boolean, got a number");
    assert_eq!(
        bad_schema(json!({"additionalProperties": "no"})),
        "#/additionalProperties: a schema must be an object or a boolean, got a string"
    );
    assert_eq!(
        bad_schema(json!({"$defs": {"x": null}})),
        "#/$defs/x: a schema must be an object or a boolean, got null"
    );
    assert_eq!(bad_schema(json!({"enum": "a"})), "#/enum: must be an array");
    assert_eq!(bad_schema(json!({"minimum": "0"})), "#/minimum: must be a number");
    assert_eq!(bad_schema(json!({"exclusiveMaximum": null})), "#/exclusiveMaximum: must be a number or a boolean");
    assert_eq!(bad_schema(json!({"multipleOf": 0})), "#/multipleOf: must be a number greater than 0");
    assert_eq!(bad_schema(json!({"uniqueItems": "yes"})), "#/uniqueItems: must be true or false");
    assert_eq!(bad_schema(json!({"nullable": 1})), "#/nullable: must be true or false");
    assert_eq!(bad_schema(json!({"format": 1})), "#/format: must be a string");
    assert_eq!(bad_schema(json!({"$ref": 1})), "#/$ref: must be a string");
    assert_eq!(
        bad_schema(json!({"properties": {"a": {"$ref": "#/$defs/missing"}}})),
        "#/properties/a/$ref: cannot resolve \"#/$defs/missing\"; only references within this schema \
         (like \"#/$defs/Name\") are supported"
    );
    assert!(bad_schema(json!({"$ref": "https://example.com/s.json"})).starts_with("#/$ref: cannot resolve"));
}

#[test]
fn check_schema_refuses_absurd_nesting() {
    let mut schema = json!({});
    for _ in 0..300 {
        schema = json!({"not": schema});
    }
    assert_eq!(bad_schema(schema).split(": ").last(), Some("the schema nests too deeply"));
}

// ---------------------------------------------------------------------------------------------
// Property: never panics, and the combinators agree with their definitions
// ---------------------------------------------------------------------------------------------

/// A small deterministic generator (xorshift) so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const KEYS: [&str; 5] = ["a", "b", "c", "first name", "é"];

fn random_value(rng: &mut Rng, depth: u32) -> Value {
    let scalars = [
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(3.0),
        json!(2.5),
        json!(-0.0),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e300),
        json!(-1e-300),
        json!(""),
        json!("a"),
        json!("c"),
        json!("👍é"),
        json!("2024-02-29"),
        json!("ana@example.com"),
        json!("::1"),
        json!("09:30:00Z"),
    ];
    match if depth == 0 { 0 } else { rng.below(4) } {
        0 | 1 => rng.pick(&scalars).clone(),
        2 => Value::Array((0..rng.below(4)).map(|_| random_value(rng, depth - 1)).collect()),
        _ => Value::Object(
            (0..rng.below(4)).map(|_| (rng.pick(&KEYS).to_string(), random_value(rng, depth - 1))).collect(),
        ),
    }
}

fn random_schema(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(10) {
        0 => return json!(rng.below(2) == 0),
        1 if depth == 0 => return json!({}),
        1 => return json!(5), // not a schema at all
        _ => {}
    }
    let mut s = serde_json::Map::new();
    for _ in 0..=rng.below(4) {
        let sub = |rng: &mut Rng| if depth == 0 { json!({}) } else { random_schema(rng, depth - 1) };
        let (key, value) = match rng.below(24) {
            0 => (
                "type",
                rng.pick(&[
                    json!("string"),
                    json!("integer"),
                    json!("number"),
                    json!(["object", "null"]),
                    json!("array"),
                    json!(5),
                    json!("int"),
                ])
                .clone(),
            ),
            1 => (
                "properties",
                Value::Object(KEYS.iter().take(rng.below(4)).map(|k| (k.to_string(), sub(rng))).collect()),
            ),
            2 => ("required", rng.pick(&[json!(["a"]), json!(["a", "b", 3]), json!("a")]).clone()),
            3 => ("additionalProperties", sub(rng)),
            4 => ("patternProperties", json!({"^a": {}})),
            5 => ("enum", rng.pick(&[json!([1, "a", null]), json!([]), json!(3), json!([[1], {"a": 1.0}])]).clone()),
            6 => ("const", random_value(rng, 1)),
            7 => ("items", if rng.below(2) == 0 { sub(rng) } else { json!([sub(rng), sub(rng)]) }),
            8 => ("prefixItems", json!([sub(rng)])),
            9 => ("additionalItems", sub(rng)),
            10 => (
                *rng.pick(&["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]),
                rng.pick(&[json!(0), json!(1), json!(2), json!(-1), json!(1.5), json!("x"), json!(u64::MAX)]).clone(),
            ),
            11 => ("uniqueItems", rng.pick(&[json!(true), json!(false), json!(1)]).clone()),
            12 => (
                *rng.pick(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
                rng.pick(&[
                    json!(0),
                    json!(1.5),
                    json!(true),
                    json!(false),
                    json!(-1e308),
                    json!("0"),
                    json!(i64::MIN),
                ])
                .clone(),
            ),
            13 => (
                "multipleOf",
                rng.pick(&[json!(2), json!(0.1), json!(0), json!(-3), json!(1e-320), json!(i64::MIN), json!(-1)])
                    .clone(),
            ),
            14 => ("anyOf", json!([sub(rng), sub(rng)])),
            15 => ("oneOf", json!([sub(rng), sub(rng)])),
            16 => ("allOf", if rng.below(3) == 0 { json!({}) } else { json!([sub(rng)]) }),
            17 => ("not", sub(rng)),
            18 => ("nullable", json!(rng.below(2) == 0)),
            19 => (
                "$ref",
                rng.pick(&[
                    json!("#"),
                    json!("#/$defs/x"),
                    json!("#/nope"),
                    json!("http://x"),
                    json!("#/properties/a"),
                    json!(1),
                ])
                .clone(),
            ),
            20 => ("$defs", json!({"x": sub(rng)})),
            21 => (
                "format",
                rng.pick(&[
                    json!("email"),
                    json!("uri"),
                    json!("uuid"),
                    json!("date"),
                    json!("time"),
                    json!("date-time"),
                    json!("ipv4"),
                    json!("ipv6"),
                    json!("hostname"),
                    json!("nope"),
                    json!(3),
                ])
                .clone(),
            ),
            22 => ("pattern", json!("(a+)+$")),
            _ => ("properties", json!([])),
        };
        s.insert(key.into(), value);
    }
    Value::Object(s)
}

fn gave_up(errors: &[SchemaError]) -> bool {
    errors.iter().any(|e| e.message.ends_with("to validate"))
}

#[test]
fn validate_never_panics_on_random_schemas_and_values() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut valid, mut invalid) = (0, 0);
    for _ in 0..20_000 {
        let schema = random_schema(&mut rng, 3);
        let value = random_value(&mut rng, 3);
        let _ = check_schema(&schema);
        let errors = validate(&schema, &value);
        assert!(errors.len() <= 20);
        assert!(
            errors.iter().all(|e| e.path.starts_with('$') && !e.message.is_empty()),
            "{schema} {value}: {errors:?}"
        );
        let _ = describe("t", &errors);
        if errors.is_empty() {
            valid += 1
        } else {
            invalid += 1
        }

        // The combinators mean what they say, whatever the schema. (Wrapping moves the root, so
        // schemas with `$ref`s are left out.)
        if gave_up(&errors) || schema.to_string().contains("$ref") {
            continue;
        }
        let not_not = validate(&json!({"not": {"not": schema}}), &value);
        let all_of = validate(&json!({"allOf": [schema]}), &value);
        let any_of = validate(&json!({"anyOf": [schema, false]}), &value);
        if !gave_up(&not_not) {
            assert_eq!(not_not.is_empty(), errors.is_empty(), "not not {schema} on {value}");
        }
        if !gave_up(&all_of) {
            assert_eq!(all_of.is_empty(), errors.is_empty(), "allOf [{schema}] on {value}");
        }
        if !gave_up(&any_of) {
            assert_eq!(any_of.is_empty(), errors.is_empty(), "anyOf [{schema}, false] on {value}");
        }
        assert!(validate(&json!({"anyOf": [schema, true]}), &value).is_empty());
    }
    // The generator exercises both outcomes, or the test proves little.
    assert!(valid > 2_000 && invalid > 2_000, "valid {valid}, invalid {invalid}");
}

#[test]
fn format_checks_never_panic_on_awkward_strings() {
    let mut rng = Rng(42);
    let pieces =
        ["1", "9", "0", ":", ".", "-", "T", "Z", "+", "@", "é", "👍", "a", "f", "::", " ", "/", "[", "2024-02-29", "%"];
    for _ in 0..20_000 {
        let s: String = (0..rng.below(12)).map(|_| *rng.pick(&pieces)).collect();
        for f in ["email", "uri", "uuid", "date", "time", "date-time", "ipv4", "ipv6", "hostname"] {
            let _ = validate(&json!({"format": f}), &json!(s));
        }
    }
}
