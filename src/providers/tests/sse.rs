//! Tests of the SSE decoder: every stream must decode the same whatever way it is cut.

use crate::providers::sse::{SseDecoder, SseEvent};

/// A tiny deterministic pseudo-random generator (xorshift64*), so "random" splits are the same
/// on every run and a failure can be replayed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in `1..=max`.
    pub(crate) fn piece(&mut self, max: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let n = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (n % max as u64) as usize + 1
    }
}

/// Cuts `bytes` into random pieces of 1..=max bytes.
pub(crate) fn random_pieces<'a>(bytes: &'a [u8], rng: &mut Rng, max: usize) -> Vec<&'a [u8]> {
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let end = (at + rng.piece(max)).min(bytes.len());
        pieces.push(&bytes[at..end]);
        at = end;
    }
    pieces
}

/// The events of a body and whether it ended cut short.
pub(crate) fn decode(pieces: &[&[u8]]) -> (Vec<SseEvent>, bool) {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut out);
    }
    decoder.finish(&mut out);
    (out, decoder.has_partial())
}

fn events(text: &str) -> Vec<SseEvent> {
    decode(&[text.as_bytes()]).0
}

fn ev(data: &str) -> SseEvent {
    SseEvent { event: None, data: data.to_string(), id: None }
}

/// Decodes `bytes` whole, then split in two at every position, in 1-byte pieces and in random
/// pieces; every way must give the same events and the same verdict on a cut. Returns the events.
fn split_invariant(bytes: &[u8]) -> Vec<SseEvent> {
    let whole = decode(&[bytes]);
    for at in 0..=bytes.len() {
        let (a, b) = bytes.split_at(at);
        assert_eq!(decode(&[a, b]), whole, "split at byte {at} of {:?}", String::from_utf8_lossy(bytes));
    }
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(decode(&singles), whole, "1-byte pieces");
    // Empty pushes in between must change nothing either.
    let with_empty: Vec<&[u8]> = singles.iter().flat_map(|p| [*p, &b""[..]]).collect();
    assert_eq!(decode(&with_empty), whole, "1-byte pieces with empty pushes");
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let pieces = random_pieces(bytes, &mut rng, 1 + seed as usize * 3);
        assert_eq!(decode(&pieces), whole, "random pieces, seed {seed}");
    }
    whole.0
}

#[test]
fn one_event_per_blank_line() {
    assert_eq!(events("data: hello\n\ndata: world\n\n"), vec![ev("hello"), ev("world")]);
}

#[test]
fn data_lines_are_joined_with_newlines() {
    assert_eq!(events("data: a\ndata: b\ndata:\ndata: c\n\n"), vec![ev("a\nb\n\nc")]);
}

#[test]
fn only_one_leading_space_is_removed() {
    assert_eq!(events("data:  two\n\ndata:none\n\ndata: trailing \n\n"), vec![ev(" two"), ev("none"), ev("trailing ")]);
}

#[test]
fn field_without_colon_has_an_empty_value() {
    // `data` alone appends an empty line, so the event is dispatched with empty data.
    assert_eq!(events("data\n\ndata\ndata\n\n"), vec![ev(""), ev("\n")]);
}

#[test]
fn colon_in_the_value_is_kept() {
    assert_eq!(events("data: {\"a\":\"b:c\"}\n\n"), vec![ev("{\"a\":\"b:c\"}")]);
}

#[test]
fn events_without_data_are_not_dispatched_and_reset_the_type() {
    assert_eq!(events("event: ping\n\ndata: x\n\n"), vec![ev("x")]);
    assert_eq!(events("\n\n\n"), vec![]);
    assert_eq!(events("id: 1\n\n"), vec![]);
}

#[test]
fn event_type_and_id() {
    let got = events("event: message_start\nid: 7\ndata: {}\n\ndata: next\n\nid\ndata: cleared\n\n");
    assert_eq!(
        got,
        vec![
            SseEvent { event: Some("message_start".into()), data: "{}".into(), id: Some("7".into()) },
            // The last event id carries over to later events, as in the standard.
            SseEvent { event: None, data: "next".into(), id: Some("7".into()) },
            SseEvent { event: None, data: "cleared".into(), id: None },
        ]
    );
}

#[test]
fn ids_containing_nul_are_ignored() {
    let got = events("id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n");
    assert_eq!(got[1].id.as_deref(), Some("1"));
}

#[test]
fn comments_retry_and_unknown_fields_are_ignored() {
    let text = ": keep-alive\n\n:\ndata: x\n: inside\nretry: 3000\nretry: soon\nfoo: bar\nDATA: upper\n\n";
    assert_eq!(events(text), vec![ev("x")]);
}

#[test]
fn cr_lf_and_crlf_endings_all_work() {
    let lf = "event: e\ndata: a\ndata: b\n\ndata: c\n\n";
    let expected = events(lf);
    assert_eq!(expected.len(), 2);
    assert_eq!(split_invariant(lf.replace('\n', "\r").as_bytes()), expected);
    assert_eq!(split_invariant(lf.replace('\n', "\r\n").as_bytes()), expected);
    assert_eq!(split_invariant(b"event: e\rdata: a\r\ndata: b\n\r\ndata: c\n\r"), expected);
}

#[test]
fn cr_at_the_end_of_a_push_does_not_make_an_extra_blank_line() {
    // Were the LF after a push-ending CR read as a second line ending, the blank line would
    // dispatch `a` alone.
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    decoder.push(b"data: a\r", &mut out);
    decoder.push(b"", &mut out);
    decoder.push(b"\ndata: b\r", &mut out);
    assert!(out.is_empty());
    decoder.push(b"\n\r", &mut out);
    // The event is out as soon as the CR arrives, not when the next push shows whether an LF follows.
    assert_eq!(out, vec![ev("a\nb")]);
    decoder.push(b"\n", &mut out);
    assert_eq!(out.len(), 1);
    assert!(!decoder.has_partial());
}

#[test]
fn crlf_split_everywhere() {
    assert_eq!(split_invariant(b"data: a\r\ndata: b\r\n\r\n"), vec![ev("a\nb")]);
}

#[test]
fn byte_order_mark_is_stripped_once() {
    assert_eq!(split_invariant("\u{FEFF}data: x\n\n".as_bytes()), vec![ev("x")]);
    // A second mark makes the field name `\u{FEFF}data`, which is unknown.
    assert_eq!(split_invariant("\u{FEFF}\u{FEFF}data: x\n\ndata: y\n\n".as_bytes()), vec![ev("y")]);
    // Only the very start of the stream may hold it.
    assert_eq!(events("data: x\n\n\u{FEFF}data: y\n\n"), vec![ev("x")]);
}

#[test]
fn multi_byte_characters_split_anywhere() {
    assert_eq!(split_invariant("data: héllo 🌍\n\n".as_bytes()), vec![ev("héllo 🌍")]);
    assert_eq!(split_invariant("event: ünï\ndata: 日本語\ndata: 🌍🌍\n\n".as_bytes())[0].data, "日本語\n🌍🌍");
}

#[test]
fn invalid_utf8_is_replaced() {
    assert_eq!(split_invariant(b"data: a\xFFb\xE2\x82\n\n"), vec![ev("a\u{FFFD}b\u{FFFD}")]);
}

#[test]
fn partial_events_are_not_dispatched_but_reported() {
    for cut in ["data: x", "data: x\n", "event: e\n", "data: x\r", ": ping"] {
        let (out, partial) = decode(&[format!("data: done\n\n{cut}").as_bytes()]);
        assert_eq!(out, vec![ev("done")], "{cut:?}");
        assert!(partial, "{cut:?} should count as a cut");
    }
    for whole in ["data: x\n\n", "data: x\r\r", "data: x\n\n: ping\n", "", "\n"] {
        assert!(!decode(&[whole.as_bytes()]).1, "{whole:?} is complete");
    }
}

#[test]
fn has_partial_before_and_after_finish() {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    decoder.push(b"data: {\"cho", &mut out);
    assert!(decoder.has_partial());
    decoder.finish(&mut out);
    assert!(out.is_empty());
    assert!(decoder.has_partial());
}

/// Streams shaped like the recorded ones, with the quirks servers actually send.
const RECORDED: &[&str] = &[
    // OpenAI Chat Completions
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n\
     data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo – ünïcödé 🌍\"}}]}\n\n\
     data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
     data: [DONE]\n\n",
    // Anthropic Messages, with event names, a ping and CRLF endings
    "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\r\n\r\n\
     event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n\
     event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}\r\n\r\n\
     event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n",
    // A proxy that adds comments, ids and retry, and splits data over lines
    ": OPENROUTER PROCESSING\n\nretry: 1000\nid: 1\ndata: {\"a\":\ndata: 1}\n\n: keep-alive\n\nid: 2\ndata: {\"b\":2}\n\n",
];

#[test]
fn recorded_style_streams_split_anywhere() {
    let counts = [4, 4, 2];
    for (text, count) in RECORDED.iter().zip(counts) {
        let got = split_invariant(text.as_bytes());
        assert_eq!(got.len(), count, "{text}");
    }
    let anthropic = split_invariant(RECORDED[1].as_bytes());
    assert_eq!(anthropic[2].event.as_deref(), Some("content_block_delta"));
    assert_eq!(anthropic[2].data, "{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}");
    let proxy = split_invariant(RECORDED[2].as_bytes());
    assert_eq!(proxy[0], SseEvent { event: None, data: "{\"a\":\n1}".into(), id: Some("1".into()) });
    assert_eq!(proxy[1].id.as_deref(), Some("2"));
}

#[test]
fn recorded_fixture_lines_split_anywhere() {
    // The events of a real recorded stream that carry non-ASCII text (dashes, a curly quote).
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/provider-streams/openai--openai-text.chunks.txt");
    let fixture = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = fixture.lines().filter(|l| l.contains('—') || l.contains('’')).collect();
    assert_eq!(lines.len(), 3);
    let stream: String = lines.iter().map(|l| format!("data: {l}\n\n")).collect();
    let got = split_invariant(stream.as_bytes());
    let data: Vec<&str> = got.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data, lines);
}
