//! The text of one JSON string as its bytes arrive, for `JsonStream`: plain runs, escapes and
//! `\u` surrogate pairs cut anywhere across deltas, and UTF-8 characters cut across byte deltas.
//! Only complete characters reach `text`, so a partial string never shows half of one.

use crate::core::json::plain;

/// One string being read.
#[derive(Debug, Default)]
pub(super) struct PartialString {
    /// The decoded text not yet taken by the parser.
    pub(super) text: String,
    /// The first bytes of a UTF-8 character cut at the end of a byte delta.
    utf8: Vec<u8>,
    esc: Esc,
    /// A `\u` high surrogate waiting for its low half.
    high: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Esc {
    #[default]
    None,
    /// After a backslash.
    Slash,
    /// In `\uXXXX`, `digits` read so far.
    Hex { digits: u8, code: u32 },
}

impl PartialString {
    /// Starts a new string.
    pub(super) fn clear(&mut self) {
        self.text.clear();
        self.utf8.clear();
        self.esc = Esc::None;
        self.high = None;
    }

    /// Whether the next byte belongs to an escape (and goes to `escape`).
    pub(super) fn in_escape(&self) -> bool {
        self.esc != Esc::None
    }

    /// Reads plain text from `bytes[i..]` up to the closing quote, a backslash (which starts an
    /// escape) or the end. Raw control characters are taken as text. Returns the index after what
    /// was read, and whether that was the closing quote.
    pub(super) fn run(&mut self, bytes: &[u8], i: usize) -> (usize, bool) {
        let mut end = plain(bytes, i);
        while bytes.get(end).is_some_and(|b| *b < 0x20) {
            end = plain(bytes, end + 1);
        }
        let run = bytes.get(i..end).unwrap_or_default();
        if !run.is_empty() {
            self.lone_high();
            push_utf8(&mut self.text, &mut self.utf8, run);
        }
        match bytes.get(end) {
            Some(b'"') => (end + 1, true),
            Some(_) => {
                self.esc = Esc::Slash;
                (end + 1, false)
            }
            None => (end, false),
        }
    }

    /// One byte of an escape; the error says what is wrong with it.
    pub(super) fn escape(&mut self, b: u8) -> Result<(), &'static str> {
        match self.esc {
            Esc::Slash => {
                let c = match b {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        self.esc = Esc::Hex { digits: 0, code: 0 };
                        return Ok(());
                    }
                    _ => return Err("invalid escape"),
                };
                self.esc = Esc::None;
                self.char(c);
            }
            Esc::Hex { digits, code } => {
                let digit = (b as char).to_digit(16).ok_or("invalid \\u escape")?;
                let code = code * 16 + digit;
                if digits < 3 {
                    self.esc = Esc::Hex { digits: digits + 1, code };
                    return Ok(());
                }
                self.esc = Esc::None;
                match code {
                    0xD800..=0xDBFF => {
                        self.lone_high();
                        self.high = Some(code);
                    }
                    0xDC00..=0xDFFF => {
                        let pair = self
                            .high
                            .take()
                            .and_then(|high| char::from_u32(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)));
                        self.text.push(pair.unwrap_or(char::REPLACEMENT_CHARACTER));
                    }
                    _ => self.char(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)),
                }
            }
            Esc::None => {}
        }
        Ok(())
    }

    /// The closing quote: a surrogate or UTF-8 character left unfinished is U+FFFD.
    pub(super) fn end(&mut self) {
        self.lone_high();
        if !self.utf8.is_empty() {
            self.utf8.clear();
            self.text.push(char::REPLACEMENT_CHARACTER);
        }
    }

    fn char(&mut self, c: char) {
        self.lone_high();
        self.text.push(c);
    }

    /// A high surrogate not followed by its low half is text too: U+FFFD.
    fn lone_high(&mut self) {
        if self.high.take().is_some() {
            self.text.push(char::REPLACEMENT_CHARACTER);
        }
    }
}

/// Appends UTF-8 `bytes` to `text`; the start of a character cut at the end waits in `pending`.
/// Invalid sequences become U+FFFD.
fn push_utf8(text: &mut String, pending: &mut Vec<u8>, mut bytes: &[u8]) {
    while !pending.is_empty() {
        let Some((&b, rest)) = bytes.split_first() else { return };
        pending.push(b);
        match std::str::from_utf8(pending) {
            Ok(c) => {
                text.push_str(c);
                pending.clear();
                bytes = rest;
            }
            Err(e) if e.error_len().is_none() => bytes = rest,
            Err(_) => {
                // `b` does not continue the character: the start alone is invalid, `b` is read anew.
                pending.clear();
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
    }
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => return text.push_str(s),
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    Some(bad) => {
                        text.push(char::REPLACEMENT_CHARACTER);
                        bytes = rest.get(bad..).unwrap_or_default();
                    }
                    None => return pending.extend_from_slice(rest),
                }
            }
        }
    }
}
