//! JSON Schema validation of tool arguments.
//!
//! A model's tool-call arguments are checked against the tool's schema before the tool runs, so
//! invalid arguments never reach user code and the model is told which path failed and why, in
//! words it can act on. Hand-written because it ships in the wasm: the subset of draft-07,
//! 2019-09 and 2020-12 (plus OpenAPI's `nullable`) that tool schemas from zod, pydantic and
//! hand-written definitions use.
//!
//! Not checked, by design: `pattern` and `patternProperties` (no regex engine in the bundle; when
//! `patternProperties` is present `additionalProperties` is not enforced either, as we cannot tell
//! which properties the patterns cover), and keywords not handled below — unknown keywords pass.
//! `$ref` resolves only within the same root (`#`, `#/$defs/…`, `#/definitions/…`); others are
//! refused by [`check_schema`]. It must never panic or recurse without bound on any schema or
//! value: depth and work are capped, and reaching a cap is a failure, never a silent pass.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// One failed check: `path` in JSON-pointer-ish dotted form the model can act on, e.g.
/// `$.items[2].city` (root `$`), and a short `message` such as "expected a string, got a number".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

const MAX_ERRORS: usize = 20;
/// Nested checks (sub-schemas, `$ref` hops); bounds recursion through `{"$ref": "#"}` loops. A
/// zod-style recursive tree spends 3 per level (property, items, `$ref`), so this allows ~85
/// levels, deeper than serde_json's parser allows values to nest (128 levels).
const MAX_DEPTH: u32 = 256;
/// Sub-schema checks and item comparisons per call; bounds nested `anyOf` blow-ups.
const MAX_STEPS: u32 = 50_000;

/// Validates `value` against `schema` and returns every failure found (at most 20); empty when
/// valid. Never panics, whatever the schema; run [`check_schema`] first to refuse bad schemas.
pub fn validate(schema: &Value, value: &Value) -> Vec<SchemaError> {
    let mut run = Run { root: schema, errors: Vec::new(), steps: 0, gave_up: None };
    run.check(schema, value, "$", 0);
    if let Some(why) = run.gave_up {
        run.errors.truncate(MAX_ERRORS - 1);
        run.errors.push(SchemaError { path: "$".into(), message: why.into() });
    }
    run.errors
}

/// The message for the model: "Invalid arguments for tool 'weather': $.city: expected a string,
/// got a number; $: missing required property 'unit'. Fix the arguments and call the tool again."
pub fn describe(tool_name: &str, errors: &[SchemaError]) -> String {
    let mut out = format!("Invalid arguments for tool '{tool_name}'");
    for (i, e) in errors.iter().enumerate() {
        out.push_str(if i == 0 { ": " } else { "; " });
        out.push_str(&e.path);
        out.push_str(": ");
        out.push_str(&e.message);
    }
    out.push_str(". Fix the arguments and call the tool again.");
    out
}

/// Checks that a tool's schema is usable — a schema is an object or a boolean and the keywords
/// this module reads have the right types — so a bad tool definition is refused when the tool is
/// made. The error names the keyword by JSON pointer: `#/properties/city/minLength: must be a
/// non-negative integer`. Unknown keywords are fine.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    check_shape(schema, schema, "#", 0)
}

struct Run<'a> {
    root: &'a Value,
    errors: Vec<SchemaError>,
    steps: u32,
    gave_up: Option<&'static str>,
}

impl<'a> Run<'a> {
    fn fail(&mut self, path: &str, message: String) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(SchemaError { path: path.into(), message });
        }
    }

    /// Counts one unit of work; false once the budget is spent (and remembers why).
    fn spend(&mut self) -> bool {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            self.gave_up = Some("is too complex to validate");
        }
        self.gave_up.is_none()
    }

    fn check(&mut self, schema: &'a Value, value: &Value, path: &str, depth: u32) {
        if depth > MAX_DEPTH {
            self.gave_up = Some("nests too deeply to validate");
        }
        if !self.spend() || self.errors.len() >= MAX_ERRORS {
            return;
        }
        let s = match schema {
            Value::Object(s) => s,
            Value::Bool(false) => return self.fail(path, "is not allowed".into()),
            _ => return,
        };
        if value.is_null() && s.get("nullable") == Some(&Value::Bool(true)) {
            return;
        }
        if let Some(target) = s.get("$ref").and_then(Value::as_str).and_then(|r| resolve(self.root, r)) {
            self.check(target, value, path, depth + 1);
        }
        if let Some(t) = s.get("type") {
            if !type_matches(t, value) {
                // The other keywords mostly concern the expected type; one clear error is better.
                return self.fail(path, format!("expected {}, got {}", expected(t), kind(value)));
            }
        }
        if let Some(Value::Array(allowed)) = s.get("enum") {
            if !allowed.iter().any(|a| same(a, value)) {
                let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                self.fail(path, format!("must be one of {}", list.join(", ")));
            }
        }
        if let Some(c) = s.get("const") {
            if !same(c, value) {
                self.fail(path, format!("must be {c}"));
            }
        }
        match value {
            Value::String(v) => self.string(s, v, path),
            Value::Number(n) => self.number(s, n, path),
            Value::Array(items) => self.array(s, items, path, depth),
            Value::Object(props) => self.object(s, props, path, depth),
            _ => {}
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            for shape in all {
                self.check(shape, value, path, depth + 1);
            }
        }
        if let Some(Value::Array(shapes)) = s.get("anyOf") {
            self.alternatives(shapes, value, path, depth, "anyOf");
        }
        if let Some(Value::Array(shapes)) = s.get("oneOf") {
            self.alternatives(shapes, value, path, depth, "oneOf");
        }
        if let Some(not) = s.get("not") {
            if self.trial(not, value, path, depth).is_empty() && self.gave_up.is_none() {
                self.fail(path, "matches a shape that is not allowed (not)".into());
            }
        }
    }

    /// Checks against one shape with its errors kept apart from the real ones.
    fn trial(&mut self, schema: &'a Value, value: &Value, path: &str, depth: u32) -> Vec<SchemaError> {
        let outer = std::mem::take(&mut self.errors);
        self.check(schema, value, path, depth + 1);
        std::mem::replace(&mut self.errors, outer)
    }

    fn alternatives(&mut self, shapes: &'a [Value], value: &Value, path: &str, depth: u32, keyword: &str) {
        let (mut matched, mut fitting, mut closest) = (0usize, 0, Vec::new());
        for shape in shapes {
            let errors = self.trial(shape, value, path, depth);
            if errors.is_empty() {
                matched += 1;
                if keyword == "anyOf" {
                    return;
                }
            } else if self.fits(shape, value) {
                fitting += 1;
                closest = errors;
            }
        }
        if self.gave_up.is_some() {
            return;
        }
        match matched {
            1 => {}
            // One shape has the value's type (zod's `.nullable()` is `anyOf: [T, {type: null}]`):
            // its errors say far more than "matches none".
            0 if fitting == 1 => closest.into_iter().for_each(|e| self.fail(&e.path, e.message)),
            0 => self.fail(path, format!("matches none of the allowed shapes ({keyword})")),
            n => self.fail(path, format!("matches {n} of the oneOf shapes, expected exactly one")),
        }
    }

    /// Whether a shape declares a `type` (after following `$ref`s) that the value has.
    fn fits(&self, mut shape: &'a Value, value: &Value) -> bool {
        for _ in 0..8 {
            match shape.get("$ref").and_then(Value::as_str).and_then(|r| resolve(self.root, r)) {
                Some(target) => shape = target,
                None => break,
            }
        }
        shape.get("type").is_some_and(|t| type_matches(t, value))
    }

    fn string(&mut self, s: &Map<String, Value>, v: &str, path: &str) {
        let len = v.chars().count() as f64;
        self.count(s, "minLength", len, path, "character", "characters");
        self.count(s, "maxLength", len, path, "character", "characters");
        if let Some(Value::String(format)) = s.get("format") {
            if let Some(what) = bad_format(format, v) {
                self.fail(path, format!("is not a valid {what}"));
            }
        }
    }

    /// `minLength`, `maxItems` and the like: "must have at least 3 characters".
    fn count(&mut self, s: &Map<String, Value>, key: &str, actual: f64, path: &str, one: &str, many: &str) {
        let Some(Value::Number(n)) = s.get(key) else { return };
        let (limit, min) = (n.as_f64().unwrap_or(0.0), key.starts_with("min"));
        if if min { actual < limit } else { actual > limit } {
            let word = if min { "least" } else { "most" };
            self.fail(path, format!("must have at {word} {n} {}", if limit == 1.0 { one } else { many }));
        }
    }

    fn number(&mut self, s: &Map<String, Value>, n: &Number, path: &str) {
        for (key, exclusive_key, min) in [("minimum", "exclusiveMinimum", true), ("maximum", "exclusiveMaximum", false)]
        {
            // Draft-04 spelling: `"exclusiveMinimum": true` makes `minimum` exclusive.
            if let Some(Value::Number(limit)) = s.get(key) {
                self.bound(n, limit, min, s.get(exclusive_key) == Some(&Value::Bool(true)), path);
            }
            if let Some(Value::Number(limit)) = s.get(exclusive_key) {
                self.bound(n, limit, min, true, path);
            }
        }
        if let Some(Value::Number(m)) = s.get("multipleOf") {
            if !multiple_of(n, m) {
                self.fail(path, format!("must be a multiple of {m}"));
            }
        }
    }

    fn bound(&mut self, n: &Number, limit: &Number, min: bool, exclusive: bool, path: &str) {
        let order = compare(n, limit);
        let (bad, sign) = match (min, exclusive) {
            (true, false) => (order == Some(Ordering::Less), "≥"),
            (true, true) => (order != Some(Ordering::Greater), ">"),
            (false, false) => (order == Some(Ordering::Greater), "≤"),
            (false, true) => (order != Some(Ordering::Less), "<"),
        };
        if bad {
            self.fail(path, format!("must be {sign} {limit}"));
        }
    }

    fn array(&mut self, s: &'a Map<String, Value>, items: &[Value], path: &str, depth: u32) {
        let len = items.len() as f64;
        self.count(s, "minItems", len, path, "item", "items");
        self.count(s, "maxItems", len, path, "item", "items");
        if s.get("uniqueItems") == Some(&Value::Bool(true)) {
            'pairs: for (i, a) in items.iter().enumerate() {
                for (j, b) in items[..i].iter().enumerate() {
                    if !self.spend() {
                        return;
                    }
                    if same(a, b) {
                        self.fail(path, format!("must not contain duplicates (items {j} and {i} are equal)"));
                        break 'pairs;
                    }
                }
            }
        }
        // 2020-12 `prefixItems` + `items`, or draft-07 tuple `items: [...]` + `additionalItems`.
        let (prefix, rest): (&[Value], _) = match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix, rest),
            (_, Some(Value::Array(prefix))) => (prefix, s.get("additionalItems")),
            (_, rest) => (&[], rest),
        };
        for (i, item) in items.iter().enumerate() {
            let Some(shape) = prefix.get(i).or(rest) else { break };
            self.check(shape, item, &format!("{path}[{i}]"), depth + 1);
        }
    }

    fn object(&mut self, s: &'a Map<String, Value>, props: &Map<String, Value>, path: &str, depth: u32) {
        let len = props.len() as f64;
        self.count(s, "minProperties", len, path, "property", "properties");
        self.count(s, "maxProperties", len, path, "property", "properties");
        if let Some(Value::Array(required)) = s.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !props.contains_key(name) {
                    self.fail(path, format!("missing required property '{name}'"));
                }
            }
        }
        let declared = s.get("properties").and_then(Value::as_object);
        let extra = if s.contains_key("patternProperties") { None } else { s.get("additionalProperties") };
        for (key, v) in props {
            match (declared.and_then(|d| d.get(key)), extra) {
                (None, None) => {}
                (None, Some(Value::Bool(false))) => self.fail(path, format!("unexpected property '{key}'")),
                (Some(shape), _) | (None, Some(shape)) => self.check(shape, v, &child_path(path, key), depth + 1),
            }
        }
    }
}

/// `$.city`, or `$["first name"]` for keys that are not identifiers.
fn child_path(path: &str, key: &str) -> String {
    let mut chars = key.chars();
    let plain = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::from(key))
    }
}

/// Resolves `#` and `#/json/pointer` within the root schema.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    match reference.strip_prefix('#')? {
        "" => Some(root),
        pointer => root.pointer(pointer),
    }
}

fn type_matches(t: &Value, v: &Value) -> bool {
    match t {
        Value::String(name) => is_type(name, v),
        Value::Array(names) => names.iter().any(|n| n.as_str().is_some_and(|n| is_type(n, v))),
        _ => true,
    }
}

fn is_type(name: &str, v: &Value) -> bool {
    match (name, v) {
        ("integer", Value::Number(n)) => !n.is_f64() || n.as_f64().is_some_and(|f| f.trunc() == f),
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        _ => false,
    }
}

/// "a string", "a string or null", "a string, a number or null".
fn expected(t: &Value) -> String {
    let names: Vec<&str> = match t {
        Value::String(name) => vec![name],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let words: Vec<&str> = names.into_iter().map(|n| with_article(n).unwrap_or(n)).collect();
    match words.split_last() {
        Some((last, [])) => (*last).into(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "another type".into(),
    }
}

fn with_article(type_name: &str) -> Option<&'static str> {
    Some(match type_name {
        "string" => "a string",
        "number" => "a number",
        "integer" => "an integer",
        "boolean" => "a boolean",
        "object" => "an object",
        "array" => "an array",
        "null" => "null",
        _ => return None,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Exact for integers, by value across integers and floats (1 == 1.0).
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// JSON equality for `enum`, `const` and `uniqueItems`, where 1 == 1.0.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

fn multiple_of(n: &Number, m: &Number) -> bool {
    if let (Some(a), Some(b)) = (n.as_i64(), m.as_i64()) {
        return b == 0 || a.checked_rem(b).is_none_or(|r| r == 0);
    }
    let (a, b) = (n.as_f64().unwrap_or(0.0), m.as_f64().unwrap_or(0.0));
    if b <= 0.0 {
        return true; // not a usable schema; check_schema refuses it
    }
    // 0.3 / 0.1 is 2.9999999999999996: allow for the rounding of decimal fractions.
    let q = a / b;
    let fraction = q - q.trunc();
    fraction.abs() < 1e-9 || fraction.abs() > 1.0 - 1e-9
}

// ---------------------------------------------------------------------------------------------
// Formats, checked by hand
// ---------------------------------------------------------------------------------------------

/// What the string fails to be under `format`, or None when it passes (unknown formats pass).
fn bad_format(format: &str, s: &str) -> Option<&'static str> {
    let (ok, what) = match format {
        "email" => (email(s), "email address"),
        "uri" | "url" => (uri(s), "URI (scheme:…)"),
        "uuid" => (uuid(s), "UUID"),
        "date" => (date(s.as_bytes()), "date (YYYY-MM-DD)"),
        "time" => (time(s.as_bytes(), false), "time (HH:MM:SS)"),
        "date-time" => (date_time(s.as_bytes()), "date-time (RFC 3339, e.g. 2024-01-31T09:30:00Z)"),
        "ipv4" => (ipv4(s), "IPv4 address"),
        "ipv6" => (ipv6(s), "IPv6 address"),
        "hostname" => (hostname(s), "hostname"),
        _ => return None,
    };
    if ok {
        None
    } else {
        Some(what)
    }
}

/// The value of 1 to 9 ASCII digits.
fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 9 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// `local@domain.tld`: an unquoted local part and a hostname with at least one dot.
fn email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local.bytes().all(|c| c > b' ' && c != 0x7f && !b"@()<>[]\\,;:\"".contains(&c))
        && domain.contains('.')
        && hostname(domain)
}

/// `scheme:rest` with no spaces or characters a URI must escape; non-ASCII is let through.
fn uri(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else { return false };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.bytes().all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
        && s.bytes().all(|c| c > b' ' && c != 0x7f && !b"\"<>\\^`{|}".contains(&c))
}

fn uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == b'-' } else { c.is_ascii_hexdigit() })
}

fn date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..])) else { return false };
    let days = match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `HH:MM[:SS[.fraction]]` and an optional `Z` or `±HH:MM` offset. `strict` (inside a date-time)
/// requires the seconds and the offset, as RFC 3339 does; a bare `time` is often wall-clock time.
fn time(b: &[u8], strict: bool) -> bool {
    fn clock(b: &[u8]) -> bool {
        b.len() == 5
            && b[2] == b':'
            && matches!((digits(&b[..2]), digits(&b[3..])), (Some(h), Some(m)) if h < 24 && m < 60)
    }
    if b.len() < 5 || !clock(&b[..5]) {
        return false;
    }
    let mut rest = &b[5..];
    if rest.len() >= 3 && rest[0] == b':' {
        if !matches!(digits(&rest[1..3]), Some(s) if s <= 60) {
            return false;
        }
        rest = &rest[3..];
        if rest.first() == Some(&b'.') {
            let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return false;
            }
            rest = &rest[1 + n..];
        }
    } else if strict {
        return false;
    }
    match rest {
        [] => !strict,
        [b'Z' | b'z'] => true,
        [b'+' | b'-', offset @ ..] => clock(offset),
        _ => false,
    }
}

fn date_time(b: &[u8]) -> bool {
    b.len() > 11 && date(&b[..10]) && matches!(b[10], b'T' | b't' | b' ') && time(&b[11..], true)
}

fn ipv4(s: &str) -> bool {
    let mut parts = 0;
    s.split('.').all(|p| {
        parts += 1;
        p.len() <= 3 && (p == "0" || !p.starts_with('0')) && digits(p.as_bytes()).is_some_and(|n| n <= 255)
    }) && parts == 4
}

/// Eight groups of 1–4 hex digits, at most one `::` standing for one or more zero groups, and
/// optionally a dotted IPv4 address as the last two groups.
fn ipv6(s: &str) -> bool {
    fn groups(run: &str, v4_tail: bool) -> Option<usize> {
        if run.is_empty() {
            return Some(0);
        }
        let (mut n, last) = (0, run.split(':').count() - 1);
        for (i, g) in run.split(':').enumerate() {
            if v4_tail && i == last && g.contains('.') {
                n += if ipv4(g) { 2 } else { return None };
            } else if (1..=4).contains(&g.len()) && g.bytes().all(|c| c.is_ascii_hexdigit()) {
                n += 1;
            } else {
                return None;
            }
        }
        Some(n)
    }
    match s.split_once("::") {
        Some((head, tail)) => {
            !tail.contains("::")
                && matches!((groups(head, false), groups(tail, true)), (Some(h), Some(t)) if h + t <= 7)
        }
        None => groups(s, true) == Some(8),
    }
}

/// RFC 1123: dot-separated labels of 1–63 letters, digits and inner hyphens, 253 bytes at most.
fn hostname(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            (1..=63).contains(&l.len())
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
        })
}

// ---------------------------------------------------------------------------------------------
// check_schema
// ---------------------------------------------------------------------------------------------

fn check_shape(root: &Value, schema: &Value, path: &str, depth: u32) -> Result<(), String> {
    let s = match schema {
        Value::Object(s) => s,
        Value::Bool(_) => return Ok(()),
        other => return Err(format!("{path}: a schema must be an object or a boolean, got {}", kind(other))),
    };
    if depth > MAX_DEPTH {
        return Err(format!("{path}: the schema nests too deeply"));
    }
    let sub = |schema: &Value, path: &str| check_shape(root, schema, path, depth + 1);
    for (key, v) in s {
        let at = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
        let want = match key.as_str() {
            "type" => match v {
                Value::String(t) => with_article(t).is_none(),
                Value::Array(ts) => ts.is_empty() || !ts.iter().all(|t| t.as_str().and_then(with_article).is_some()),
                _ => true,
            }
            .then_some("a type name (string, number, integer, boolean, object, array, null) or an array of them"),
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => match v {
                Value::Object(m) => {
                    for (name, schema) in m {
                        sub(schema, &format!("{at}/{}", name.replace('~', "~0").replace('/', "~1")))?;
                    }
                    None
                }
                _ => Some("an object of schemas"),
            },
            "additionalProperties" | "additionalItems" | "unevaluatedProperties" | "unevaluatedItems"
            | "propertyNames" | "contains" | "not" | "if" | "then" | "else" => {
                sub(v, &at)?;
                None
            }
            "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => match v {
                Value::Array(list) if !list.is_empty() || key == "items" => {
                    for (i, schema) in list.iter().enumerate() {
                        sub(schema, &format!("{at}/{i}"))?;
                    }
                    None
                }
                _ if key == "items" => {
                    sub(v, &at)?;
                    None
                }
                _ => Some("a non-empty array of schemas"),
            },
            "required" => (!v.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
                .then_some("an array of property names"),
            "enum" => (!v.is_array()).then_some("an array"),
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" => {
                (!v.as_f64().is_some_and(|n| n >= 0.0 && n.trunc() == n)).then_some("a non-negative integer")
            }
            "minimum" | "maximum" => (!v.is_number()).then_some("a number"),
            "exclusiveMinimum" | "exclusiveMaximum" => (!v.is_number() && !v.is_boolean()).then_some("a number or a boolean"),
            "multipleOf" => (!v.as_f64().is_some_and(|m| m > 0.0)).then_some("a number greater than 0"),
            "uniqueItems" | "nullable" => (!v.is_boolean()).then_some("true or false"),
            "format" | "pattern" => (!v.is_string()).then_some("a string"),
            "$ref" => match v.as_str() {
                Some(r) if resolve(root, r).is_some() => None,
                Some(_) => {
                    return Err(format!(
                        "{at}: cannot resolve {v}; only references within this schema (like \"#/$defs/Name\") are supported"
                    ))
                }
                None => Some("a string"),
            },
            _ => None,
        };
        if let Some(want) = want {
            return Err(format!("{at}: must be {want}"));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
