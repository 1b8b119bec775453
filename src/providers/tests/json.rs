//! Tests of the JSON pull reader (`json`), and of the Chat decoder's use of it for events of the
//! wrong shape. The reader is checked against serde_json: on hand-written documents, on every
//! recorded provider event, and on thousands of random mutations of them.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::fixtures::FIXTURE_DIR;
use super::sse::Rng;
use crate::core::model::{FinishReason, ModelEvent, Usage};
use crate::providers::StreamDecoder;
use crate::providers::json::{validate, Error, Reader, Result};
use crate::providers::openai_chat::ChatDecoder;

/// Builds a `Value` from the reader alone, trying each kind in turn: a kind that is not next is a
/// shape error, which consumes nothing. Numbers go through `raw` (the reader does not convert
/// floats).
fn walk(r: &mut Reader<'_>) -> Result<Value> {
    fn next_kind<T>(got: Result<T>) -> Result<Option<T>> {
        match got {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.syntax => Err(e),
            Err(_) => Ok(None),
        }
    }
    if r.is_null() {
        r.skip()?;
        return Ok(Value::Null);
    }
    if let Some(b) = next_kind(r.bool())? {
        return Ok(b.into());
    }
    if let Some(s) = next_kind(r.string())? {
        return Ok(s.into_owned().into());
    }
    let mut map = Map::new();
    let object = r.object(&mut |r, key| {
        map.insert(key.to_string(), walk(r)?);
        Ok(())
    });
    if next_kind(object)?.is_some() {
        return Ok(Value::Object(map));
    }
    let mut items = Vec::new();
    let array = r.array(&mut |r, _| {
        items.push(walk(r)?);
        Ok(())
    });
    if next_kind(array)?.is_some() {
        return Ok(Value::Array(items));
    }
    let raw = r.raw()?;
    // Out-of-range numbers (`1e400`) are valid JSON that serde_json refuses; stand in for them.
    Ok(serde_json::from_str(raw).unwrap_or(Value::String(format!("number {raw}"))))
}

fn read(text: &str) -> Result<Value> {
    let mut r = Reader::new(text);
    let value = walk(&mut r)?;
    r.end()?;
    Ok(value)
}

/// What serde_json makes of a text.
#[derive(Debug)]
enum Verdict {
    Valid(Value),
    /// Valid JSON with a number beyond f64 (`1e400`), if the strings in it are: serde_json stops
    /// at such a number, so its value parser cannot tell; reading on with `IgnoredAny` (which
    /// converts no numbers) tells the rest, except that it lets unpaired surrogates pass.
    BigNumber,
    Invalid,
}

fn serde_verdict(text: &str) -> Verdict {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Verdict::Valid(v),
        Err(e) if e.to_string().starts_with("number out of range") => {
            match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => Verdict::BigNumber,
                Err(_) => Verdict::Invalid,
            }
        }
        Err(_) => Verdict::Invalid,
    }
}

/// The reader accepts `text` exactly when serde_json does, and reads the same value from it.
fn agrees_with_serde(text: &str) {
    let ours = read(text);
    assert_eq!(validate(text).is_ok(), ours.is_ok(), "validate and a full read disagree on {text:?}");
    match (ours, serde_verdict(text)) {
        (Ok(ours), Verdict::Valid(theirs)) => assert_eq!(ours, theirs, "{text:?}"),
        (Ok(_), Verdict::BigNumber) => {}
        (Err(e), Verdict::BigNumber) if e.what.contains("surrogate") => {}
        (Err(e), Verdict::Invalid) => assert!(e.syntax, "a syntax error expected for {text:?}, got {e:?}"),
        (ours, theirs) => panic!("{text:?}: reader {ours:?}, serde_json {theirs:?}"),
    }
}

fn chars(n: usize, c: char) -> String {
    std::iter::repeat_n(c, n).collect()
}

/// Every provider event recorded in the shared fixtures (Chat, Responses, Anthropic, Gemini).
fn recorded_events() -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(FIXTURE_DIR).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let mut events = Vec::new();
    for path in names.iter().filter(|p| p.to_string_lossy().ends_with(".chunks.txt")) {
        let text = std::fs::read_to_string(path).unwrap();
        events.extend(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string));
    }
    assert!(events.len() > 500, "{}", events.len());
    events
}

const DOCUMENTS: &[&str] = &[
    r#"{"a":[1,-2,3.5,-0.25e-3,6E+2,7e9,0,-0,0.0],"b":{"c":null,"d":true,"e":false},"f":"","g":[],"h":{}}"#,
    r#"  [ {"k" : "v" } , [ [ ] , { } ] , "x\"y\\z\/\b\f\n\r\t" , 12 ]  "#,
    r#"{"emoji":"\ud83d\ude00 😀","bmp":"\u00e9\u4E2D\u0000","key\u0041":1,"é":"ü"}"#,
    r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"q\":1}"}}]},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":6.0}}"#,
    r#"18446744073709551615"#,
    r#""just a string""#,
    "null",
];

#[test]
fn every_kind_of_value_is_read() {
    let text = r#" {"s":"text","e":"a\nb","n":null,"t":true,"f":false,"u":42,"c":12.0,"x":{"deep":[1,[2,{"k":"v"}]]},"a":["x",1]} "#;
    let mut r = Reader::new(text);
    let mut seen = Vec::new();
    r.object(&mut |r, key| {
        match key {
            "s" => assert_eq!(r.string()?, "text"),
            "e" => assert_eq!(r.opt_string()?.as_deref(), Some("a\nb")),
            "n" => assert_eq!(r.opt_string()?, None),
            "t" => assert!(r.bool()?),
            "f" => assert!(!r.bool()?),
            "u" => assert_eq!(r.u64()?, 42),
            "c" => assert_eq!(r.opt_count()?, Some(12)),
            "x" => assert_eq!(r.raw()?, r#"{"deep":[1,[2,{"k":"v"}]]}"#),
            "a" => r.array(&mut |r, i| {
                match i {
                    0 => assert_eq!(r.string()?, "x"),
                    _ => assert_eq!(r.opt_u64()?, Some(1)),
                }
                Ok(())
            })?,
            _ => unreachable!(),
        }
        seen.push(key.to_string());
        Ok(())
    })
    .unwrap();
    r.end().unwrap();
    assert_eq!(seen, ["s", "e", "n", "t", "f", "u", "c", "x", "a"]);
    for text in DOCUMENTS {
        agrees_with_serde(text);
        validate(text).unwrap();
    }
}

#[test]
fn values_the_callback_leaves_are_skipped_and_checked() {
    let text = r#"{"skip":{"a":[1,{"b":[[],{}]},"s\u00e9"],"c":null},"want":"w","also":[true,false,null]}"#;
    let mut want = None;
    let mut r = Reader::new(text);
    r.object(&mut |r, key| {
        if key == "want" {
            want = r.opt_string()?;
        }
        Ok(())
    })
    .unwrap();
    r.end().unwrap();
    assert_eq!(want.as_deref(), Some("w"));
    // A left value is still checked: a bad literal deep inside is an error.
    let bad = r#"{"skip":{"a":[1,{"b":[[],{"x":nul}]}]},"want":"w"}"#;
    let err = Reader::new(bad).object(&mut |_, _| Ok(())).unwrap_err();
    assert!(err.syntax && err.at == bad.find("nul").unwrap(), "{err:?}");
    // `is_null` only looks; `null` left unread is skipped.
    let mut r = Reader::new(r#"[ null , 1 ]"#);
    let mut nulls = Vec::new();
    r.array(&mut |r, _| {
        nulls.push(r.is_null());
        Ok(())
    })
    .unwrap();
    assert_eq!(nulls, [true, false]);
}

#[test]
fn raw_is_the_exact_text_of_the_value() {
    let mut r = Reader::new("{\"error\" :  {\"message\": \"x\" ,\n \"n\": [1 ]}  , \"k\":\"\\u00e9\"}");
    let mut raws = Vec::new();
    r.object(&mut |r, _| {
        raws.push(r.raw()?);
        Ok(())
    })
    .unwrap();
    assert_eq!(raws, ["{\"message\": \"x\" ,\n \"n\": [1 ]}", "\"\\u00e9\""]);
}

#[test]
fn raw_unchecked_finds_the_end_of_any_object_or_array() {
    let deep = format!("{}{}", chars(10_000, '['), chars(10_000, ']'));
    let values = [
        r#"{"s":"\ud800","t":"\udc00\ud800"}"#.to_string(),
        r#"{"brackets in strings":"}]{[","quote":"a\"}b","backslash":"\\"}"#.to_string(),
        r#"[1, {"a": []}, "x"]"#.to_string(),
        deep,
    ];
    for value in &values {
        let text = format!(r#"{{"args": {value} ,"after":true}}"#);
        let (mut got, mut after) = ("", false);
        let mut r = Reader::new(&text);
        r.object(&mut |r, key| {
            match key {
                "args" => got = r.raw_unchecked()?,
                "after" => after = r.bool()?,
                _ => unreachable!(),
            }
            Ok(())
        })
        .unwrap();
        r.end().unwrap();
        assert_eq!((got, after), (value.as_str(), true), "{}", &value[..value.len().min(40)]);
    }
    // Anything else is read as `raw` reads it; what cannot be delimited is an error.
    let raw_of = |text: &str| Reader::new(text).raw_unchecked().map(str::to_owned);
    assert_eq!(raw_of(r#" "x" "#).unwrap(), r#""x""#);
    assert!(raw_of(r#""\ud800""#).unwrap_err().syntax);
    for bad in [r#"{"a":[}"#, r#"{"a":"}"#, "[[]", r#"{"a":"\"}"#] {
        let err = raw_of(bad).unwrap_err();
        assert!(err.syntax, "{bad}: {err}");
    }
}

#[test]
fn strings_borrow_unless_escaped() {
    let string = |text| Reader::new(text).string().unwrap();
    assert!(matches!(string(r#""plain é 😀""#), Cow::Borrowed("plain é 😀")));
    assert!(matches!(string(r#""""#), Cow::Borrowed("")));
    assert!(matches!(string(r#""a\"b""#), Cow::Owned(s) if s == "a\"b"));
    assert!(matches!(string(r#""\u00e9""#), Cow::Owned(s) if s == "é"));
    // Keys too.
    let mut keys = Vec::new();
    Reader::new(r#"{"plain":1,"esc\u0061ped":2}"#)
        .object(&mut |_, key| {
            keys.push(key.to_string());
            Ok(())
        })
        .unwrap();
    assert_eq!(keys, ["plain", "escaped"]);
}

#[test]
fn escapes() {
    let cases = [
        (r#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{c}\n\r\t"),
        (r#""\u0041\u00E9\u4e2d\uFFFF""#, "Aé中\u{ffff}"),
        (r#""\ud83d\ude00""#, "😀"),
        (r#""\uD834\uDD1E and \uDBFF\uDFFF""#, "𝄞 and \u{10ffff}"),
        (r#""x\u0000y""#, "x\0y"),
        (r#""before \n after""#, "before \n after"),
    ];
    for (text, want) in cases {
        assert_eq!(Reader::new(text).string().unwrap(), want, "{text}");
        agrees_with_serde(text);
    }
    let invalid = [
        r#""\x""#,
        r#""\u12""#,
        r#""\u12G4""#,
        r#""\U0041""#,
        r#""\ud83d""#,       // a lone high surrogate
        r#""\ud83d x""#,     // followed by something else
        r#""\ud83d\n""#,     // followed by another escape
        r#""\ud83d\u0041""#, // followed by a non-surrogate
        r#""\ud83d\ud83d""#, // followed by another high surrogate
        r#""\ude00""#,       // a lone low surrogate
        r#""\ude00\ud83d""#, // a reversed pair
        r#""\"#,
        r#""\u"#,
        "\"tab\there\"",
        "\"new\nline\"",
        "\"\u{1f}\"",
    ];
    for text in invalid {
        let err = Reader::new(text).string().unwrap_err();
        assert!(err.syntax, "{text}: {err:?}");
        assert!(validate(text).is_err(), "{text}");
        agrees_with_serde(text);
    }
}

#[test]
fn numbers() {
    let u64_of = |text| Reader::new(text).u64();
    assert_eq!(u64_of("0"), Ok(0));
    assert_eq!(u64_of(" 18446744073709551615"), Ok(u64::MAX));
    for not_whole in ["18446744073709551616", "-1", "-0", "1.0", "1e2", "0.5"] {
        let err = u64_of(not_whole).unwrap_err();
        assert_eq!((err.syntax, err.what, err.at), (false, "expected a whole number", 0), "{not_whole}");
    }
    assert!(!u64_of("\"1\"").unwrap_err().syntax);
    assert_eq!(Reader::new("null").opt_u64(), Ok(None));

    let count = |text| Reader::new(text).opt_count();
    let counts = [
        ("12", Some(12)),
        ("12.0", Some(12)),
        ("12.75", Some(12)),
        ("0.0", Some(0)),
        ("null", None),
        ("-3", None),
        ("1e3", None),
        ("1.5E-2", None),
        ("18446744073709551616", None),
    ];
    for (text, want) in counts {
        assert_eq!(count(text), Ok(want), "{text}");
    }
    assert!(!count("\"12\"").unwrap_err().syntax);
    assert!(!count("{}").unwrap_err().syntax);
    for bad in ["-", "01", "1.", ".5", "1e", "1e+", "+1", "--1", "0x10", "1.e3", "-a", "Infinity", "NaN"] {
        assert!(validate(bad).is_err(), "{bad}");
        let mut r = Reader::new(bad);
        assert!(r.opt_count().and_then(|_| r.end()).unwrap_err().syntax, "{bad}");
        agrees_with_serde(bad);
    }
    // Valid JSON that serde_json turns down, and the reader accepts.
    for big in ["1e400", "-1e400", &format!("1{}", chars(400, '0'))] {
        validate(big).unwrap();
        assert!(serde_json::from_str::<Value>(big).is_err());
    }
}

#[test]
fn malformed_documents_are_errors() {
    let deep_ok = format!("{}{}", chars(127, '['), chars(127, ']'));
    let too_deep = format!("{}{}", chars(128, '['), chars(128, ']'));
    let deep_objects = format!("{}1{}", r#"{"a":"#.repeat(128), chars(128, '}'));
    let malformed = [
        "",
        "   ",
        "{",
        "}",
        "[",
        "]",
        "{\"a\"",
        "{\"a\":",
        "{\"a\":1",
        "{\"a\":1,",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"a\":1 \"b\":2}",
        "{a:1}",
        "{1:1}",
        "{\"a\":1]",
        "[1,]",
        "[,1]",
        "[1 2]",
        "[1}",
        "[\"a\"",
        "\"unterminated",
        "\"",
        "tru",
        "true1",
        "nul",
        "nulll",
        "False",
        "None",
        "{} {}",
        "{}x",
        "1 2",
        "'single'",
        "[1,,2]",
        "{\"a\"::1}",
        "\u{a0}1",
        "\u{feff}{}",
        &too_deep,
        &deep_objects,
    ];
    for text in malformed {
        let err = validate(text).unwrap_err();
        assert!(err.syntax && err.at <= text.len(), "{text:?}: {err:?}");
        agrees_with_serde(text);
    }
    validate(&deep_ok).unwrap();
    agrees_with_serde(&deep_ok);
    agrees_with_serde(&too_deep);
    // Far deeper than any stack would take without the limit.
    let abyss = chars(1_000_000, '[');
    assert_eq!(validate(&abyss).unwrap_err().what, "nested too deeply");
}

#[test]
fn shape_errors_say_what_was_expected_and_where() {
    let mut r = Reader::new(r#"{"a": 5}"#);
    let err = r.object(&mut |r, _| r.string().map(drop)).unwrap_err();
    assert_eq!(err, Error { at: 6, what: "expected a string", syntax: false });
    assert_eq!(err.to_string(), "expected a string at byte 6");
    assert_eq!(Reader::new("[]").object(&mut |_, _| Ok(())).unwrap_err().what, "expected an object");
    assert_eq!(Reader::new("{}").array(&mut |_, _| Ok(())).unwrap_err().what, "expected an array");
    // Asking for a kind where no value starts at all is a syntax error.
    let err = Reader::new("  ]").string().unwrap_err();
    assert_eq!((err.syntax, err.at), (true, 2));
}

#[test]
fn recorded_provider_events_read_as_serde_json_reads_them() {
    let mut invalid = Vec::new();
    for event in recorded_events() {
        agrees_with_serde(&event);
        if let Err(e) = validate(&event) {
            invalid.push((e, event));
        }
    }
    // Two events of the Responses API recording lack their last `}` (so they are upstream).
    assert_eq!(invalid.len(), 2, "{invalid:?}");
    for (e, event) in invalid {
        assert_eq!((e.what, e.at), ("expected `,` or `}`", event.len()));
        assert!(event.starts_with(r#"{"type":"response."#));
    }
}

/// Replaces, inserts or deletes characters, or cuts, at random places of a valid document.
fn mutate(text: &str, rng: &mut Rng) -> String {
    const ALPHABET: &[&str] = &[
        "{", "}", "[", "]", "\"", ":", ",", "\\", "\\u", "\\ud83d", "\\ude00", "\\n", "\\x", " ", "\n", "\t", "0", "1",
        "9", "-", "+", ".", "e", "E", "t", "r", "u", "f", "n", "l", "null", "true", "a", "é", "😀", "\u{1}", "\u{a0}",
        "/", "\\\"",
    ];
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..rng.piece(3) {
        let at = rng.piece(chars.len() + 1) - 1;
        let piece: Vec<char> = ALPHABET[rng.piece(ALPHABET.len()) - 1].chars().collect();
        match rng.piece(6) {
            1 | 2 => {
                let end = (at + 1).min(chars.len());
                chars.splice(at..end, piece);
            }
            3 | 4 => {
                chars.splice(at..at, piece);
            }
            5 => {
                let end = (at + rng.piece(4)).min(chars.len());
                chars.drain(at..end);
            }
            _ => chars.truncate(at),
        }
    }
    chars.into_iter().collect()
}

/// The differential fuzz: mutated documents and events, each read by the reader and by
/// serde_json. Both must accept the same texts and read the same values, and nothing panics.
#[test]
fn random_mutations_are_judged_as_serde_json_judges_them() {
    let mut seeds: Vec<String> = DOCUMENTS.iter().map(|d| d.to_string()).collect();
    let events = recorded_events();
    // Short events mutate into more interesting texts than 10 KB ones, where most mutations are
    // inside one long string.
    seeds.extend(events.iter().filter(|e| e.len() < 600).step_by(7).cloned());
    let mut rng = Rng::new(20250101);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..20_000 {
        let seed = &seeds[rng.piece(seeds.len()) - 1];
        let text = mutate(seed, &mut rng);
        agrees_with_serde(&text);
        if validate(&text).is_ok() {
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    // Both verdicts must be well represented, or the fuzz is not testing much.
    assert!(accepted > 2_000 && rejected > 10_000, "{accepted} accepted, {rejected} rejected");
}

// ---------------------------------------------------------------------------------------------
// The Chat decoder on top of the reader

fn decode_event(data: &str) -> std::result::Result<Vec<ModelEvent>, String> {
    let mut decoder = ChatDecoder::new(false);
    let mut out = Vec::new();
    decoder.push(format!("data: {data}\n\ndata: [DONE]\n\n").as_bytes(), &mut out).map_err(|e| e.to_string())?;
    decoder.end(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

#[test]
fn events_of_the_wrong_shape_are_not_understood() {
    let not_understood = [
        r#"5"#,
        r#"null"#,
        r#""text""#,
        r#"[{"choices":[]}]"#,
        r#"{"choices":{}}"#,
        r#"{"choices":[{"delta":{"content":5}}]}"#,
        r#"{"choices":[{"delta":{"content":["a"]}}]}"#,
        r#"{"choices":[{"delta":"hi"}]}"#,
        r#"{"choices":[null]}"#,
        r#"{"choices":[{"finish_reason":1}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":{}}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1.0}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":4294967296}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{}}}]}}]}"#,
        r#"{"usage":{"prompt_tokens":"5"}}"#,
        r#"{"usage":{"prompt_tokens_details":{"cached_tokens":true}}}"#,
        r#"{"created":"today"}"#,
        r#"{"id":7}"#,
        r#"{"x_groq":[]}"#,
    ];
    for data in not_understood {
        let err = decode_event(data).unwrap_err();
        assert!(err.contains("does not understand (") && err.ends_with(data), "{data}: {err}");
    }
    let err = decode_event(r#"{"choices":[{"delta":{"content":5}}]}"#).unwrap_err();
    assert!(err.contains("(expected a string at byte 32)"), "{err}");
    // Malformed after a field of the wrong type: the event is not JSON, whatever came first.
    let malformed =
        [r#"{"choices":5,"#, r#"{"choices":[{"delta":{"content":5}}]} x"#, r#"7 8"#, r#""\x""#, "{\"error\":{}"];
    for data in malformed {
        let err = decode_event(data).unwrap_err();
        assert!(err.starts_with("The model's stream sent an event that is not valid JSON: "), "{data}: {err}");
    }
}

#[test]
fn fields_the_decoder_does_not_read_are_not_checked_for_shape() {
    // Choices after the first, and unknown fields, need only be JSON.
    let data = r#"{"object":5,"choices":[{"delta":{"content":"a","role":[]}},7,"x"],"usage":{"extra":{}}}"#;
    let events = decode_event(data).unwrap();
    assert_eq!(events[0], ModelEvent::TextDelta("a".into()));
    let usage = Usage::default();
    assert_eq!(events[1], ModelEvent::Finish { reason: FinishReason::Other, usage: Some(usage) });
}

#[test]
fn counts_written_as_floats_and_odd_numbers() {
    let data = json!({
        "created": 1.9,
        "choices": [],
        "usage": { "prompt_tokens": 12.0, "completion_tokens": -3, "total_tokens": 1e3,
            "prompt_tokens_details": null, "completion_tokens_details": { "reasoning_tokens": null } }
    });
    let events = decode_event(&data.to_string().replace("1000.0", "1e3")).unwrap();
    assert_eq!(events[0], ModelEvent::ResponseMetadata { id: None, model_id: None, created: Some(1) });
    let usage = Usage { input_tokens: Some(12), ..Usage::default() };
    assert_eq!(events[1], ModelEvent::Finish { reason: FinishReason::Other, usage: Some(usage) });
    // A `created` that is no time still makes metadata, as it did with serde; `null` does not.
    let events = decode_event(r#"{"created":-1,"choices":null,"usage":null,"error":null}"#).unwrap();
    assert_eq!(events[0], ModelEvent::ResponseMetadata { id: None, model_id: None, created: None });
    let events = decode_event(r#"{"created":null,"x_groq":null}"#).unwrap();
    assert_eq!(events, [ModelEvent::Finish { reason: FinishReason::Other, usage: None }]);
}

#[test]
fn error_events_keep_their_text() {
    let events = decode_event(r#"{"error":{"code":5, "message":null}}"#).unwrap();
    // Not a message string: the error object itself, as serde_json writes it.
    assert_eq!(
        events[0],
        ModelEvent::Error {
            message: r#"{"code":5,"message":null}"#.into(),
            body: Some(r#"{"error":{"code":5, "message":null}}"#.into())
        }
    );
    let events = decode_event(r#"{"error":{"message":"boom \u00e9"}}"#).unwrap();
    assert!(matches!(&events[0], ModelEvent::Error { message, .. } if message == "boom é"));
}

/// Mutated Chat events through the decoder: it never panics, and calls an event invalid JSON
/// exactly when serde_json does.
#[test]
fn random_mutations_of_chat_events_through_the_decoder() {
    let chat = ["openai--openai-text", "deepseek--", "groq--", "mistral--"];
    let mut seeds = Vec::new();
    for entry in std::fs::read_dir(FIXTURE_DIR).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if chat.iter().any(|p| name.starts_with(p)) {
            let text = std::fs::read_to_string(&path).unwrap();
            seeds.extend(text.lines().filter(|l| l.len() < 600).step_by(5).map(str::to_string));
        }
    }
    seeds.sort();
    assert!(seeds.len() > 100, "{}", seeds.len());
    let mut rng = Rng::new(7);
    for _ in 0..10_000 {
        let seed = &seeds[rng.piece(seeds.len()) - 1];
        // SSE would split a data line at a line break; keep one event.
        let text = mutate(seed, &mut rng).replace(['\n', '\r'], " ");
        let not_json = match decode_event(&text) {
            Err(e) => e.starts_with("The model's stream sent an event that is not valid JSON"),
            Ok(_) => false,
        };
        // The reader judges as serde_json does (checked here again); the decoder follows it.
        agrees_with_serde(&text);
        let skipped = text.trim().is_empty() || text.trim() == "[DONE]";
        assert_eq!(not_json, validate(&text).is_err() && !skipped, "{text:?}: {:?}", decode_event(&text));
    }
}
