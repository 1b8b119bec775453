//! Every recorded stream cut at random byte boundaries (proptest) decodes to the same events as
//! the unsplit stream, for each decoder: SSE framing, Chat Completions, Responses, Anthropic and
//! Gemini. The per-provider tests try every single cut; these try many cuts at once (1 to 40 per
//! case), half of them where a cut is most likely to hurt: inside a multi-byte UTF-8 character
//! and between the CR and LF of a line ending (every body is fed with LF and with CR LF endings).
//! Where a decoder fails (the Responses recordings with a line cut short, or with no end), the
//! events before the error and the error itself must not depend on the cuts either.
//!
//! Cases come from a fixed seed, so every run tries the same cuts and a failure can be replayed;
//! `PROPTEST_RNG_SEED=<n>` tries others and `PROPTEST_CASES=<n>` sets the cases per decoder.

use std::fmt::Debug;

use super::fixtures::{
    chat_stream, data_stream, decode_until_error, fixture_lines, response_bodies, typed_stream, ANTHROPIC, CHAT, GOOGLE,
    PARALLEL_WRAPPER,
};
use super::sse;
use crate::providers::anthropic::AnthropicDecoder;
use crate::providers::google::GoogleDecoder;
use crate::providers::openai_chat::ChatDecoder;
use crate::providers::openai_responses::ResponsesDecoder;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

/// Cases per decoder, spread evenly over its bodies and rounded up (at least two each): 128 to
/// 156 a decoder, 680 in all, about half a second in a debug build though Chat bodies reach 300 KB.
const CASES: u32 = 128;

/// The seed when `PROPTEST_RNG_SEED` is not set.
const SEED: u64 = 0x5EED_C075;

/// One body as the API sends it.
struct Body {
    name: String,
    bytes: Vec<u8>,
    /// The cuts that split a UTF-8 character or a CR LF pair.
    tricky: Vec<usize>,
}

impl Body {
    /// The body with LF line endings, and again with CR LF.
    fn both_endings(name: &str, lf: Vec<u8>) -> [Body; 2] {
        let mut crlf = Vec::with_capacity(lf.len() * 11 / 10);
        for &b in &lf {
            if b == b'\n' {
                crlf.push(b'\r');
            }
            crlf.push(b);
        }
        [Body::new(name.to_string(), lf), Body::new(format!("{name} (CR LF)"), crlf)]
    }

    fn new(name: String, bytes: Vec<u8>) -> Body {
        let continues_char = |i: usize| bytes[i] & 0xC0 == 0x80;
        let tricky = (1..bytes.len()).filter(|&i| continues_char(i) || bytes[i - 1..=i] == *b"\r\n").collect();
        Body { name, bytes, tricky }
    }

    /// The positions the drawn cuts fall at (a tricky one where `tricky` is drawn and the body
    /// has any), in order, and the pieces between them; two equal cuts make an empty push.
    fn cut(&self, cuts: &[(bool, Index)]) -> (Vec<usize>, Vec<&[u8]>) {
        let mut at: Vec<usize> =
            cuts.iter()
                .map(|(tricky, i)| {
                    if *tricky && !self.tricky.is_empty() {
                        *i.get(&self.tricky)
                    } else {
                        i.index(self.bytes.len() + 1)
                    }
                })
                .collect();
        at.sort_unstable();
        let bounds: Vec<usize> = [0].into_iter().chain(at.iter().copied()).chain([self.bytes.len()]).collect();
        let pieces = bounds.windows(2).map(|w| &self.bytes[w[0]..w[1]]).collect();
        (at, pieces)
    }
}

/// Each fixture's body, built from its payloads by `stream`, with both line endings.
fn bodies(names: &[&str], stream: fn(&[String]) -> Vec<u8>) -> Vec<Body> {
    names.iter().flat_map(|name| Body::both_endings(name, stream(&fixture_lines(name)))).collect()
}

/// The Responses bodies: every response as the other tests read it (the parallel wrapper's has
/// no end, so `end` fails), and the parallel wrapper as recorded, whose first line is cut short
/// JSON (so `push` fails).
fn responses_bodies() -> Vec<Body> {
    let recorded = typed_stream(&fixture_lines(PARALLEL_WRAPPER));
    let named = response_bodies().into_iter().chain([(format!("{PARALLEL_WRAPPER} as recorded"), recorded)]);
    named.flat_map(|(name, bytes)| Body::both_endings(&name, bytes)).collect()
}

/// The runner's settings for one of `bodies` bodies, the `body`th: its share of the decoder's
/// cases, and its own seed.
fn config(bodies: usize, body: usize) -> Config {
    let defaults = Config::default();
    let cases = if std::env::var_os("PROPTEST_CASES").is_some() { defaults.cases } else { CASES };
    let cases = cases.div_ceil(bodies as u32).max(2);
    let base = match defaults.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => SEED,
    };
    Config {
        cases,
        rng_seed: RngSeed::Fixed(base.wrapping_add(body as u64)),
        // Nothing is written next to the sources: the seed replays a failure.
        failure_persistence: None,
        // Each shrinking step decodes the body again; a few hundred find a short list of cuts.
        max_shrink_iters: 512,
        ..defaults
    }
}

/// Feeds each body to `decode` whole, then cut at random: the events and how the stream ended
/// must be the same. `decode` returns the events and the verdict on the end.
fn check_random_cuts<E, V>(bodies: &[Body], decode: impl Fn(&[&[u8]]) -> (Vec<E>, V))
where
    E: PartialEq + Debug,
    V: PartialEq + Debug,
{
    let cuts = vec((any::<bool>(), any::<Index>()), 1..=40);
    for (i, body) in bodies.iter().enumerate() {
        let (events, end) = decode(&[&body.bytes]);
        let mut runner = TestRunner::new(config(bodies.len(), i));
        let result = runner.run(&cuts, |cuts| {
            let (at, pieces) = body.cut(&cuts);
            let (got, got_end) = decode(&pieces);
            let differ = (0..got.len().max(events.len())).find(|&n| got.get(n) != events.get(n));
            if let Some(n) = differ {
                let (got, whole) = (got.get(n), events.get(n));
                return Err(TestCaseError::fail(format!("cut at {at:?}: event #{n} is {got:?}, unsplit {whole:?}")));
            }
            if got_end != end {
                return Err(TestCaseError::fail(format!("cut at {at:?}: the end is {got_end:?}, unsplit {end:?}")));
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{}: {e}", body.name);
        }
    }
}

#[test]
fn sse_framing_of_every_recording_cut_at_random() {
    let mut all = bodies(CHAT, chat_stream);
    all.extend(bodies(ANTHROPIC, typed_stream));
    all.extend(bodies(GOOGLE, data_stream));
    all.extend(responses_bodies());
    check_random_cuts(&all, sse::decode);
}

#[test]
fn chat_recordings_cut_at_random() {
    check_random_cuts(&bodies(CHAT, chat_stream), |p| decode_until_error(ChatDecoder::new(true), p));
}

#[test]
fn responses_recordings_and_their_errors_cut_at_random() {
    let bodies = responses_bodies();
    let decode = |p: &[&[u8]]| decode_until_error(ResponsesDecoder::new(true), p);
    // The errors whose sameness is checked: a line that is not JSON, and a stream with no end.
    let errors: Vec<String> =
        bodies.iter().filter_map(|b| decode(&[&b.bytes]).1.err()).map(|e| e.to_string()).collect();
    assert!(errors.iter().any(|e| e.contains("not valid JSON")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("connection closed")), "{errors:?}");
    check_random_cuts(&bodies, decode);
}

#[test]
fn anthropic_recordings_cut_at_random() {
    check_random_cuts(&bodies(ANTHROPIC, typed_stream), |p| decode_until_error(AnthropicDecoder::new(true), p));
}

#[test]
fn google_recordings_cut_at_random() {
    check_random_cuts(&bodies(GOOGLE, data_stream), |p| decode_until_error(GoogleDecoder::new(true), p));
}
