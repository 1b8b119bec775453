//! Tests of the incremental JSON parser: a corpus of replies as models send them, each split at
//! every byte and every char boundary (and fed a byte or a char at a time, and at random cuts),
//! giving the value `serde_json` reads from the clean JSON and a monotone sequence of partials;
//! the partial-value rules one by one; unicode escapes cut anywhere; errors; a work count for a
//! 1 MB reply fed a byte at a time.

use serde_json::{json, Value};

use super::*;

/// Replies as models send them, each with the clean JSON it carries.
const CORPUS: &[(&str, &str)] = &[
    (
        "Sure! Here is the JSON you asked for:\n\n```json\n{\n  \"title\": \"Weekly summary\",\n  \"bullets\": [\"Shipped v1.2\", \"Fixed 3 bugs\"],\n  \"score\": 9.5,\n  \"done\": true,\n  \"owner\": null\n}\n```\nLet me know if you need anything else.",
        r#"{"title":"Weekly summary","bullets":["Shipped v1.2","Fixed 3 bugs"],"score":9.5,"done":true,"owner":null}"#,
    ),
    (
        r#"<|channel|>final<|constrain|>json<|message|>{"answer":"42","confidence":0.87,"sources":[{"id":1,"url":"https://example.com/a?b=c&d=e"},{"id":2,"url":"https://example.com/\u00e9t\u00e9"}]}<|end|>"#,
        r#"{"answer":"42","confidence":0.87,"sources":[{"id":1,"url":"https://example.com/a?b=c&d=e"},{"id":2,"url":"https://example.com/été"}]}"#,
    ),
    (
        r#"{"elements":[{"name":"Ada","age":36,"tags":["math","poet"]},{"name":"Linus","age":-54.25e+1,"tags":[]},{"name":"Grace","age":1.0E2,"tags":["navy"]}]}"#,
        r#"{"elements":[{"name":"Ada","age":36,"tags":["math","poet"]},{"name":"Linus","age":-54.25e+1,"tags":[]},{"name":"Grace","age":1.0E2,"tags":["navy"]}]}"#,
    ),
    (
        r#"{"greeting":"Gr\u00fc\u00dfe \ud83d\ude00 and raw 😀 émoji","cjk":"\u4f60\u597d 你好","escapes":"tab\tquote\" backslash\\ slash\/ \b\f\n\r","flag":"🇫🇷"}"#,
        r#"{"greeting":"Grüße 😀 and raw 😀 émoji","cjk":"你好 你好","escapes":"tab\tquote\" backslash\\ slash/ \b\f\n\r","flag":"🇫🇷"}"#,
    ),
    (
        "```\n{\"poem\": \"Roses are red,\nViolets are blue,\n\tindented\", \"lines\": 3}\n```",
        r#"{"poem":"Roses are red,\nViolets are blue,\n\tindented","lines":3}"#,
    ),
    (r#"[[1,2,[3,[4,{"a":[5,{"b":{}}]}]]],{},[],"",[{"c":[[]]}]]"#, r#"[[1,2,[3,[4,{"a":[5,{"b":{}}]}]]],{},[],"",[{"c":[[]]}]]"#),
    (
        r#"{"ints":[0,-0,12345678901234567890,-9223372036854775808,7],"floats":[3.14159,-2.5e-3,6.02E23,1e10,0.0],"last":-1}"#,
        r#"{"ints":[0,-0,12345678901234567890,-9223372036854775808,7],"floats":[3.14159,-2.5e-3,6.02E23,1e10,0.0],"last":-1}"#,
    ),
    (
        "Here it is.\r\n\r\n{\r\n\t\"a\" : [ 1 , { \"b\" : \"c\" } , [ ] ] ,\r\n\t\"d\" :{ }\r\n}\r\n",
        r#"{"a":[1,{"b":"c"},[]],"d":{}}"#,
    ),
    (
        "I'll format it {as requested} [see below]:\n{\"ok\":true,\"list\":[null,false,true],\"note\":\"[x]\"}",
        r#"{"ok":true,"list":[null,false,true],"note":"[x]"}"#,
    ),
    (
        r#"{"steps":[{"tool":{"name":"search","args":{"q":"rust \"wasm\"","limit":5}},"result":[{"title":"A"}]}],"meta":{"count":1,"zero":{}}}"#,
        r#"{"steps":[{"tool":{"name":"search","args":{"q":"rust \"wasm\"","limit":5}},"result":[{"title":"A"}]}],"meta":{"count":1,"zero":{}}}"#,
    ),
    ("{}", "{}"),
    ("Nothing to list:\n[]", "[]"),
    (r#"["a","b\u0063",{"d":"e"},{"f":1}]"#, r#"["a","bc",{"d":"e"},{"f":1}]"#),
    ("[true,false,null]", "[true,false,null]"),
    ("Answer:\n[null, 1]\n", "[null,1]"),
    ("<|message|>[false]", "[false]"),
    ("See [the note] and {name} below:\n{\"a\":[{\"b\":null}]}", r#"{"a":[{"b":null}]}"#),
];

/// What one reply fed in pieces gave: each partial returned, the elements taken after each piece,
/// and `finish`.
struct Run {
    partials: Vec<Value>,
    elements: Vec<Value>,
    result: Result<Value, JsonStreamError>,
}

fn run(pieces: &[&[u8]]) -> Run {
    let mut parser = JsonStream::new();
    let mut partials = Vec::new();
    let mut elements = Vec::new();
    for piece in pieces {
        partials.extend(parser.push_bytes(piece));
        elements.extend(parser.take_completed_elements(Some("elements")));
    }
    let result = parser.finish();
    elements.extend(parser.take_completed_elements(Some("elements")));
    Run { partials, elements, result }
}

fn run_str(pieces: &[&str]) -> Run {
    run(&pieces.iter().map(|p| p.as_bytes()).collect::<Vec<_>>())
}

/// Whether `b` can follow `a` in the sequence of partials: strings only grow, keys stay, arrays
/// never shrink and their elements stay (the last may be an object still growing), numbers and
/// literals never change, nothing changes type.
fn grows(a: &Value, b: &Value, path: &str) -> Result<(), String> {
    match (a, b) {
        (Value::String(x), Value::String(y)) if y.starts_with(x.as_str()) => Ok(()),
        (Value::Object(x), Value::Object(y)) => x.iter().try_for_each(|(k, v)| match y.get(k) {
            Some(w) => grows(v, w, &format!("{path}.{k}")),
            None => Err(format!("{path}: key {k:?} removed")),
        }),
        (Value::Array(x), Value::Array(y)) if y.len() >= x.len() => {
            x.iter().zip(y).enumerate().try_for_each(|(i, (v, w))| match v {
                Value::Object(_) if i + 1 == x.len() => grows(v, w, &format!("{path}[{i}]")),
                _ if v == w => Ok(()),
                _ => Err(format!("{path}[{i}]: complete element {v} became {w}")),
            })
        }
        _ if a == b => Ok(()),
        _ => Err(format!("{path}: {a} became {b}")),
    }
}

/// Checks a sequence of partials: each grows into the next and differs from it.
fn monotone(partials: &[Value]) -> Result<(), String> {
    partials.windows(2).enumerate().try_for_each(|(i, pair)| {
        if pair[0] == pair[1] {
            return Err(format!("partial {i} returned twice: {}", pair[0]));
        }
        grows(&pair[0], &pair[1], "root").map_err(|e| format!("partial {i} -> {}: {e}", i + 1))
    })
}

/// The elements `take_completed_elements(Some("elements"))` should hand out for a final value.
fn expected_elements(value: &Value) -> Vec<Value> {
    match value {
        Value::Array(a) => a.clone(),
        Value::Object(m) => m.get("elements").and_then(Value::as_array).cloned().unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn check(run: Run, expected: &Value, how: &str) {
    assert_eq!(run.result.as_ref().ok(), Some(expected), "{how}: final value ({:?})", run.result);
    if let Err(e) = monotone(&run.partials) {
        panic!("{how}: {e}\npartials: {:#?}", run.partials);
    }
    assert_eq!(run.partials.last(), Some(expected), "{how}: last partial");
    assert_eq!(run.elements, expected_elements(expected), "{how}: completed elements");
}

/// A deterministic pseudo-random number generator (xorshift), for the random splits.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn corpus_split_at_every_byte_and_char_boundary() {
    for (reply, clean) in CORPUS {
        let expected: Value = serde_json::from_str(clean).expect("clean JSON of the corpus");
        let bytes = reply.as_bytes();
        check(run(&[bytes]), &expected, &format!("whole {reply:?}"));
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            check(run(&[a, b]), &expected, &format!("{reply:?} cut at byte {cut}"));
        }
        for (cut, _) in reply.char_indices() {
            let (a, b) = reply.split_at(cut);
            check(run_str(&[a, b]), &expected, &format!("{reply:?} cut at char {cut}"));
        }
    }
}

#[test]
fn corpus_fed_a_byte_a_char_and_random_pieces_at_a_time() {
    let mut seed = 0x9E37_79B9_7F4A_7C15;
    for (reply, clean) in CORPUS {
        let expected: Value = serde_json::from_str(clean).expect("clean JSON of the corpus");
        let bytes: Vec<&[u8]> = reply.as_bytes().chunks(1).collect();
        check(run(&bytes), &expected, &format!("{reply:?} byte by byte"));
        let mut chars = [0; 4];
        let chars: Vec<String> = reply.chars().map(|c| c.encode_utf8(&mut chars).to_string()).collect();
        check(
            run_str(&chars.iter().map(String::as_str).collect::<Vec<_>>()),
            &expected,
            &format!("{reply:?} char by char"),
        );
        for case in 0..20 {
            let mut cuts: Vec<usize> =
                (0..1 + next(&mut seed) % 6).map(|_| (next(&mut seed) as usize) % (reply.len() + 1)).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([reply.len()]) {
                pieces.push(&reply.as_bytes()[from..cut]);
                from = cut;
            }
            check(run(&pieces), &expected, &format!("{reply:?} random case {case}: {pieces:?}"));
        }
    }
}

#[test]
fn monotone_check_rejects_what_is_not_a_prefix() {
    let ok = [
        json!({}),
        json!({"a": ""}),
        json!({"a": "ab", "l": []}),
        json!({"a": "abc", "l": [1, {"x": "y"}]}),
        json!({"a": "abc", "l": [1, {"x": "yz", "w": true}, 2]}),
    ];
    assert_eq!(monotone(&ok), Ok(()));
    let bad = [
        (vec![json!({"a": "ab"}), json!({"a": "b"})], "root.a: \"ab\" became \"b\""),
        (vec![json!({"a": "ab"}), json!({"b": "ab"})], "key \"a\" removed"),
        (vec![json!([1, 2]), json!([1])], "root: [1,2] became [1]"),
        (vec![json!([1, 2]), json!([1, 3])], "root[1]: complete element 2 became 3"),
        (vec![json!({"n": 12}), json!({"n": 123.5})], "root.n: 12 became 123.5"),
        (vec![json!({"a": []}), json!({"a": {}})], "root.a: [] became {}"),
        (vec![json!([{"a": 1}, 2]), json!([{"a": 1, "b": 2}, 2])], "complete element {\"a\":1}"),
        (vec![json!({"a": 1}), json!({"a": 1})], "returned twice"),
    ];
    for (seq, why) in bad {
        let err = monotone(&seq).expect_err(&format!("{seq:?} is not monotone"));
        assert!(err.contains(why), "{err:?} should say {why:?}");
    }
}

/// The partials a sequence of deltas produces, one entry per delta (`None`: nothing changed).
fn partials(deltas: &[&str]) -> Vec<Option<Value>> {
    let mut parser = JsonStream::new();
    deltas.iter().map(|d| parser.push(d)).collect()
}

#[test]
fn numbers_and_literals_show_once_their_token_ends() {
    assert_eq!(
        partials(&["{\"a\": 12", "3.5, \"b\": tr", "ue, \"c\": nu", "ll, \"d\": -1e", "5}"]),
        [
            Some(json!({})),
            Some(json!({"a": 123.5})),
            Some(json!({"a": 123.5, "b": true})),
            Some(json!({"a": 123.5, "b": true, "c": null})),
            Some(json!({"a": 123.5, "b": true, "c": null, "d": -1e5}))
        ]
    );
    // A number the text ends in is not shown: it could still go on.
    assert_eq!(partials(&["[1, 2", "0"]), [Some(json!([1])), None]);
}

#[test]
fn strings_grow_and_arrays_show_complete_elements_and_a_started_object() {
    assert_eq!(
        partials(&[
            "{\"list\": [\"ab",
            "c\", {\"x\"",
            ": \"y",
            "z\", \"n\": 4",
            "}, [\"p",
            "\"]]",
            ", \"s\": \"",
            "t\"}"
        ]),
        [
            Some(json!({"list": []})),
            Some(json!({"list": ["abc"]})),
            Some(json!({"list": ["abc", {"x": "y"}]})),
            Some(json!({"list": ["abc", {"x": "yz"}]})),
            Some(json!({"list": ["abc", {"x": "yz", "n": 4}]})),
            Some(json!({"list": ["abc", {"x": "yz", "n": 4}, ["p"]]})),
            Some(json!({"list": ["abc", {"x": "yz", "n": 4}, ["p"]], "s": ""})),
            Some(json!({"list": ["abc", {"x": "yz", "n": 4}, ["p"]], "s": "t"})),
        ]
    );
    // A member whose value has not started, and an object in an array without a member shown, wait.
    assert_eq!(
        partials(&["{\"a\"", ":", " {", "\"b\": [{", "\"c\":", "{"]),
        [
            Some(json!({})),
            None,
            Some(json!({"a": {}})),
            Some(json!({"a": {"b": []}})),
            None,
            Some(json!({"a": {"b": [{"c": {}}]}}))
        ]
    );
}

#[test]
fn unicode_escapes_cut_anywhere_and_lone_surrogates() {
    let mut parser = JsonStream::new();
    for delta in ["{\"e\":\"a\\u", "d8", "3d", "\\", "u", "de", "0", "0b\"}"] {
        let partial = parser.push(delta);
        assert!(
            !partial.is_some_and(|p| p.to_string().contains('\u{FFFD}')),
            "no replacement char while the pair is cut"
        );
    }
    assert_eq!(parser.finish(), Ok(json!({"e": "a😀b"})));
    let mut parser = JsonStream::new();
    parser.push(r#"{"a":"x\ud800y","b":"\udc00","c":"\ud800","d":"\ud800\ud800\ude00","e":"\ud800\n","f":"\u00"#);
    parser.push(r#"41"}"#);
    assert_eq!(
        parser.finish(),
        Ok(
            json!({"a": "x\u{FFFD}y", "b": "\u{FFFD}", "c": "\u{FFFD}", "d": "\u{FFFD}\u{10200}", "e": "\u{FFFD}\n", "f": "A"})
        )
    );
}

#[test]
fn bytes_cut_inside_a_character_and_invalid_utf8() {
    let emoji = "😀".as_bytes();
    let mut parser = JsonStream::new();
    parser.push_bytes(b"{\"a\":\"x");
    assert_eq!(parser.push_bytes(&emoji[..1]), None, "half a character shows nothing");
    assert_eq!(parser.push_bytes(&emoji[1..3]), None);
    assert_eq!(parser.push_bytes(&emoji[3..]), Some(json!({"a": "x😀"})));
    parser.push_bytes(b"\xff|\xf0\x9f\"}");
    assert_eq!(parser.finish(), Ok(json!({"a": "x😀\u{FFFD}|\u{FFFD}"})));
}

fn error(text: &str) -> String {
    let mut parser = JsonStream::new();
    parser.push(text);
    let err = parser.finish().expect_err("expected an error");
    assert_eq!(err.to_string(), err.message);
    err.message
}

#[test]
fn errors_say_what_is_wrong_or_missing_and_where() {
    assert_eq!(error(""), "empty text: expected a JSON object or array");
    assert_eq!(error("I'm sorry, I can't help with that."), "no JSON object or array in the text (34 bytes)");
    assert_eq!(
        error("{\"a\": \"hel"),
        "incomplete JSON at byte 10: missing `\"` (string from byte 6), `}` (object from byte 0)"
    );
    assert_eq!(
        error("ok: {\"a\": 1, \"b\": [true"),
        "incomplete JSON at byte 23: missing `]` (array from byte 18), `}` (object from byte 4)"
    );
    assert_eq!(
        error("{\"a\": [1, 2"),
        "incomplete JSON at byte 11: missing `]` (array from byte 6), `}` (object from byte 0)"
    );
    assert_eq!(error("{\"a\":"), "incomplete JSON at byte 5: missing a value, `}` (object from byte 0)");
    assert_eq!(error("{\"a\""), "incomplete JSON at byte 4: missing `:`, `}` (object from byte 0)");
    assert_eq!(
        error("{\"a\": fal"),
        "incomplete JSON at byte 9: missing `se` to end `false`, `}` (object from byte 0)"
    );
    assert_eq!(error("```json\n{"), "incomplete JSON at byte 9: missing `}` (object from byte 8)");
    assert_eq!(error("{\"a\" 1}"), "expected `:` at byte 5");
    assert_eq!(error("{\"a\": 1 \"b\": 2}"), "expected `,` or `}` at byte 8");
    assert_eq!(error("[1, 2,]"), "expected a value at byte 6");
    assert_eq!(error("{\"a\": 01}"), "invalid number at byte 6");
    assert_eq!(error("{\"a\": \"\\x\"}"), "invalid escape at byte 8");
    assert_eq!(error("{\"a\": \"\\u12g4\"}"), "invalid \\u escape at byte 11");
    assert_eq!(error("{\"a\": trux}"), "invalid literal at byte 9");
}

#[test]
fn nothing_after_an_error_or_after_the_value_counts() {
    let mut parser = JsonStream::new();
    assert_eq!(parser.push("{\"a\": 1 x"), Some(json!({"a": 1})));
    assert_eq!(parser.push(", \"b\": 2}"), None);
    assert_eq!(parser.finish().map_err(|e| e.message), Err("expected `,` or `}` at byte 8".into()));
    let mut parser = JsonStream::new();
    parser.push("{\"a\": [1]}\n```\nMore prose {\"b\": 2} [3]");
    assert_eq!(parser.finish(), Ok(json!({"a": [1]})));
}

#[test]
fn completed_elements_are_handed_out_once_in_order() {
    let mut parser = JsonStream::new();
    let mut take = |delta: &str| {
        parser.push(delta);
        parser.take_completed_elements(Some("elements"))
    };
    assert_eq!(take("{\"elements\": [{\"a\": \"x"), Vec::<Value>::new());
    assert_eq!(take("y\"}, {\"a\""), [json!({"a": "xy"})]);
    assert_eq!(take(": 2}, 3"), [json!({"a": 2})]);
    assert_eq!(take(", [4]"), [json!(3), json!([4])]);
    assert_eq!(take("], \"other\": [5]}"), Vec::<Value>::new());
    let mut parser = JsonStream::new();
    parser.push("{\"other\": [1, 2]}");
    assert_eq!(parser.take_completed_elements(Some("elements")), Vec::<Value>::new());
    assert_eq!(parser.take_completed_elements(None), Vec::<Value>::new());
    let mut parser = JsonStream::new();
    parser.push("[\"a\", \"b");
    assert_eq!(parser.take_completed_elements(None), [json!("a")]);
    parser.push("\"]");
    assert_eq!(parser.take_completed_elements(Some("elements")), [json!("b")]);
}

#[test]
fn nesting_as_deep_as_serde_json_allows() {
    for depth in [127, 128] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let mut parser = JsonStream::new();
        parser.push(&text);
        let ours = parser.finish().map_err(|e| e.message);
        let theirs = serde_json::from_str::<Value>(&text);
        assert_eq!(ours.is_ok(), theirs.is_ok(), "depth {depth}: {ours:?}");
        if depth == 128 {
            assert_eq!(ours, Err("nested too deeply at byte 127".into()));
        }
    }
}

#[test]
fn work_is_linear_in_the_length_for_a_1mb_reply_fed_a_byte_at_a_time() {
    let element = r#"{"id":12345,"text":"a line with \"escapes\" \u00e9 \ud83d\ude00 and a raw
newline","tags":["a","b",{"deep":[1.5e3,true,null]}],"n":-1.25}"#;
    let mut text = String::from("```json\n{\"title\": \"");
    text.push_str(&"long partial string member ".repeat(8_000));
    text.push_str("\", \"elements\": [");
    while text.len() < 1_000_000 {
        text.push_str(element);
        text.push(',');
    }
    text.push_str(element);
    text.push_str("]}\n```");
    let mut parser = JsonStream::new();
    let mut elements = 0;
    for byte in text.as_bytes().chunks(1) {
        parser.feed_bytes(byte);
        elements += parser.take_completed_elements(Some("elements")).len();
    }
    let value = parser.finish().expect("the reply is JSON");
    assert_eq!(value["elements"].as_array().map(Vec::len), Some(elements));
    assert!(elements > 5_000, "{elements} elements");
    let (work, len) = (parser.work + parser.tree.work, text.len() as u64);
    assert!(work >= len, "the counter counts: {work} for {len} bytes");
    assert!(work <= 8 * len, "work {work} for {len} bytes is more than 8 per byte");
}

// proptest is a native-only dev-dependency (see Cargo.toml).
#[cfg(not(target_arch = "wasm32"))]
#[path = "json_stream_props.rs"]
mod properties;
