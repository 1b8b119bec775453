//! Every recorded stream of the four APIs (`/work/shared/fixtures/provider-streams`, see its
//! README), as its API sends it, through its decoder cut every way: split in two at every position,
//! in 1-byte and random pieces, and with CR LF line ends. However the bytes arrive, the events and
//! how the body ends are the same, raw events included. (What the events say is checked per API,
//! in each API's `tests_stream`: `openai_chat`, `openai_responses`, `anthropic` and `google`.)

use super::fixtures::{chat_stream, data_stream, fixture_lines, response_bodies, typed_stream, ANTHROPIC, CHAT, GOOGLE};
use super::sse::{random_pieces, Rng};
use crate::core::error::AgentError;
use crate::core::model::ModelEvent;
use crate::providers::StreamDecoder;
use crate::providers::anthropic::AnthropicDecoder;
use crate::providers::google::GoogleDecoder;
use crate::providers::openai_chat::ChatDecoder;
use crate::providers::openai_responses::ResponsesDecoder;
use crate::providers::sse::SseDecoder;

/// A decoder of any of the four APIs: one table holds them all, and a decoder can still be copied
/// and compared (the split check takes snapshots).
#[derive(Clone, PartialEq)]
enum AnyDecoder {
    Chat(ChatDecoder),
    Responses(ResponsesDecoder),
    Anthropic(AnthropicDecoder),
    Google(GoogleDecoder),
}

impl StreamDecoder for AnyDecoder {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        match self {
            AnyDecoder::Chat(d) => d.push(bytes, out),
            AnyDecoder::Responses(d) => d.push(bytes, out),
            AnyDecoder::Anthropic(d) => d.push(bytes, out),
            AnyDecoder::Google(d) => d.push(bytes, out),
        }
    }
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), AgentError> {
        match self {
            AnyDecoder::Chat(d) => d.end(out),
            AnyDecoder::Responses(d) => d.end(out),
            AnyDecoder::Anthropic(d) => d.end(out),
            AnyDecoder::Google(d) => d.end(out),
        }
    }
}

/// Every recorded body with a fresh decoder for it (raw events on). The Responses recordings give
/// one body per response; the parallel wrapper's has no end, so its `end` fails, the same way
/// however it is cut.
fn recordings() -> Vec<(String, Vec<u8>, AnyDecoder)> {
    let mut all = Vec::new();
    let mut add = |names: &[&str], stream: fn(&[String]) -> Vec<u8>, decoder: AnyDecoder| {
        for name in names {
            all.push((name.to_string(), stream(&fixture_lines(name)), decoder.clone()));
        }
    };
    add(CHAT, chat_stream, AnyDecoder::Chat(ChatDecoder::new(true)));
    add(ANTHROPIC, typed_stream, AnyDecoder::Anthropic(AnthropicDecoder::new(true)));
    add(GOOGLE, data_stream, AnyDecoder::Google(GoogleDecoder::new(true)));
    for (name, body) in response_bodies() {
        all.push((name, body, AnyDecoder::Responses(ResponsesDecoder::new(true))));
    }
    all
}

/// The events of `pieces` fed in order (every push must succeed), and how the body ended.
fn decode_all(mut decoder: AnyDecoder, pieces: &[&[u8]]) -> (Vec<ModelEvent>, Result<(), String>) {
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut out).unwrap();
    }
    let end = decoder.end(&mut out).map_err(|e| e.to_string());
    (out, end)
}

/// Checks a split in two at every position of `body`, which must be a whole number of SSE events.
/// A full decode per position would be quadratic in the body size (minutes for the 300 KB
/// recordings), so each position is checked from a snapshot of the decoder at the start of the
/// event it falls in: the two pieces must produce that event's events and leave the decoder exactly
/// as the unsplit event does, so nothing later in the stream can tell the difference. Returns the
/// decoder after the last event and all the events.
fn check_every_split<D, E>(name: &str, body: &[u8], fresh: D, push: impl Fn(&mut D, &[u8], &mut Vec<E>)) -> (D, Vec<E>)
where
    D: Clone + PartialEq,
    E: PartialEq + std::fmt::Debug,
{
    let mut bounds = vec![0];
    bounds.extend(body.windows(2).enumerate().filter(|(_, w)| w == b"\n\n").map(|(i, _)| i + 2));
    assert_eq!(bounds.last(), Some(&body.len()), "{name}: the body is whole events");
    let mut reference = fresh;
    let mut all = Vec::new();
    for pair in bounds.windows(2) {
        let (start, end) = (pair[0], pair[1]);
        let before = reference.clone();
        let mut expected = Vec::new();
        push(&mut reference, &body[start..end], &mut expected);
        for at in start + 1..end {
            let mut decoder = before.clone();
            let mut got = Vec::new();
            push(&mut decoder, &body[start..at], &mut got);
            push(&mut decoder, &body[at..end], &mut got);
            assert_eq!(got, expected, "{name}: split at byte {at}");
            assert!(decoder == reference, "{name}: decoder state differs after a split at byte {at}");
        }
        all.extend(expected);
    }
    (reference, all)
}

/// Split in two at every position, each body gives the same events. Bodies up to 4.5 KB are decoded
/// whole for every position. The longer ones (up to 300 KB) are checked event by event (see
/// `check_every_split`) at the SSE layer: every decoder sees the body only as the whole events of
/// its SSE framing (`push_sse`), so the same SSE events and framing state mean the same model
/// events. The Responses bodies and those up to 20 KB are also checked so through their decoder,
/// and the events of all the body with its end must be those of the unsplit body; the random
/// pieces below check every body end to end.
#[test]
fn every_recording_split_in_two_at_every_position() {
    for (name, body, fresh) in recordings() {
        let whole = decode_all(fresh.clone(), &[&body]);
        if body.len() <= 4_500 {
            for at in 0..=body.len() {
                let (a, b) = body.split_at(at);
                assert_eq!(decode_all(fresh.clone(), &[a, b]), whole, "{name}: split at byte {at}");
            }
            continue;
        }
        check_every_split(&name, &body, SseDecoder::new(), |d, bytes, out| d.push(bytes, out));
        if body.len() <= 20_000 || matches!(fresh, AnyDecoder::Responses(_)) {
            let push = |d: &mut AnyDecoder, bytes: &[u8], out: &mut Vec<ModelEvent>| d.push(bytes, out).unwrap();
            let (mut last, mut all) = check_every_split(&name, &body, fresh, push);
            let end = last.end(&mut all).map_err(|e| e.to_string());
            assert_eq!((all, end), whole, "{name}");
        }
    }
}

#[test]
fn every_recording_in_one_byte_random_pieces_and_with_cr_lf() {
    const PIECE_SIZES: [usize; 8] = [3, 7, 17, 64, 200, 300, 1500, 5000];
    for (name, body, fresh) in recordings() {
        let whole = decode_all(fresh.clone(), &[&body]);
        let singles: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode_all(fresh.clone(), &singles), whole, "{name}: 1-byte pieces");
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let pieces = random_pieces(&body, &mut rng, PIECE_SIZES[seed as usize % PIECE_SIZES.len()]);
            assert_eq!(decode_all(fresh.clone(), &pieces), whole, "{name}: random pieces, seed {seed}");
        }
        // Servers may end lines with CR LF.
        let crlf = String::from_utf8(body.clone()).unwrap().replace('\n', "\r\n");
        assert_eq!(decode_all(fresh, &[crlf.as_bytes()]), whole, "{name}: CR LF");
    }
}
