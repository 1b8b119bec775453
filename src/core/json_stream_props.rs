//! Property tests (proptest is a native-only dev-dependency): any JSON value, serialized compact
//! or pretty and wrapped as models wrap it, cut anywhere, reads back as `serde_json` reads the
//! text, through monotone partials; any bytes at all never panic, and whatever `serde_json`
//! accepts as an object or array, the stream parser reads to the same value.

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

use super::*;

fn config(seed: u64) -> Config {
    // A fixed seed (unless PROPTEST_RNG_SEED says otherwise) replays a failure; nothing is
    // written next to the sources.
    let defaults = Config::default();
    let seed = match defaults.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => seed,
    };
    Config { cases: 256, rng_seed: RngSeed::Fixed(seed), failure_persistence: None, ..defaults }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(any::<String>(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn cut<'a>(bytes: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
    at.sort_unstable();
    let bounds: Vec<usize> = [0].into_iter().chain(at).chain([bytes.len()]).collect();
    bounds.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
}

#[test]
fn any_value_cut_anywhere_reads_back_through_monotone_partials() {
    let root = prop_oneof![
        vec(json_value(), 0..6).prop_map(Value::Array),
        btree_map(any::<String>(), json_value(), 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
    ];
    let wrap = prop::sample::select(vec![
        ("", ""),
        ("```json\n", "\n```"),
        ("Here you go:\n", "\nDone."),
        ("<|channel|>final<|message|>", "<|end|>"),
    ]);
    let case = (root, any::<bool>(), wrap, vec(any::<Index>(), 0..8));
    TestRunner::new(config(0x150A_57EA))
        .run(&case, |(root, pretty, (before, after), cuts)| {
            let json = if pretty { serde_json::to_string_pretty(&root) } else { serde_json::to_string(&root) };
            let json = json.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let expected: Value = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let text = format!("{before}{json}{after}");
            let got = run(&cut(text.as_bytes(), &cuts));
            prop_assert_eq!(got.result.as_ref().ok(), Some(&expected), "{:?}", got.result);
            monotone(&got.partials).map_err(TestCaseError::fail)?;
            prop_assert_eq!(got.partials.last(), Some(&expected));
            prop_assert_eq!(got.elements, expected_elements(&expected));
            Ok(())
        })
        .unwrap();
}

#[test]
fn any_bytes_never_panic_and_what_serde_json_reads_reads_the_same() {
    let alphabet: Vec<u8> = b"{}[]\":,\\/u0123456789abcdefnrtsl-+.eE \n\t\x01\xc3\xa9\xff<|>`x".to_vec();
    let bytes = prop_oneof![vec(any::<u8>(), 0..64), vec(prop::sample::select(alphabet), 0..64)];
    TestRunner::new(config(0xB17E5))
        .run(&(bytes, vec(any::<Index>(), 0..6)), |(bytes, cuts)| {
            let got = run(&cut(&bytes, &cuts));
            let text = std::str::from_utf8(&bytes).unwrap_or_default();
            let bracket = matches!(text.bytes().find(|b| !is_ws(*b)), Some(b'{' | b'['));
            if let (true, Ok(value)) = (bracket, serde_json::from_str::<Value>(text)) {
                prop_assert_eq!(got.result, Ok(value), "{:?}", text);
            }
            Ok(())
        })
        .unwrap();
}
