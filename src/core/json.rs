//! A small pull reader for the JSON events of model streams: a decoder walks one event and picks
//! out the fields it needs, the rest is checked and skipped.
//!
//! Why not `serde::Deserialize`: typed deserialization costs wasm bytes per struct and drags in
//! serde's error formatting (f64 `Display` among it); moving the Chat decoder from it to this
//! reader made the module 17 KB gzip smaller. This reader is one copy of code shared by every
//! decoder: callbacks are `&mut dyn FnMut`, so nothing monomorphizes per call site, and numbers
//! are read as integers by hand (floats are checked and skipped, never converted). It is also
//! faster than serde_json here: keys and plain strings are never copied, string content is
//! scanned eight bytes at a time, and whitespace costs one comparison where there is none.
//!
//! ```ignore
//! let mut r = Reader::new(text);
//! r.object(&mut |r, key| {
//!     match key {
//!         "id" => id = r.opt_string()?,
//!         "choices" => r.array(&mut |r, i| if i == 0 { choice(r) } else { Ok(()) })?,
//!         _ => {} // a value the callback does not read is skipped (and checked)
//!     }
//!     Ok(())
//! })?;
//! r.end()?;
//! ```
//!
//! Contract:
//! - Everything the reader passes over is checked against the JSON grammar (RFC 8259), skipped
//!   values included: literals, numbers (no leading zeros, no `1.`, no `.5`), strings (no raw
//!   control characters, valid escapes, `\u` surrogates paired), commas and colons, nesting at
//!   most 127 deep (serde_json's limit). `end()` checks that only whitespace is left. So a
//!   document walked to `end()` without error is valid JSON (but for the text `raw_unchecked`
//!   hands back, which its caller checks), and `validate` accepts exactly what
//!   `serde_json::from_str::<Value>` accepts, except numbers too large for an f64 (`1e400`), which
//!   serde_json rejects and JSON allows.
//! - Duplicate keys are not detected: the callback sees each one, in order.
//! - Strings borrow from the input unless they contain an escape; only then is one allocated.
//!   Keys are handed to the callback the same way.
//! - No panics and no unbounded recursion: every path returns a `Result`. After an error the
//!   reader's position is unspecified; drop it.
//! - An error is either `syntax` (the text is not JSON) or a shape error (valid so far, but not
//!   the kind of value asked for). A shape error says nothing about the text after it: to tell a
//!   malformed event from a well-formed one of an unexpected shape, `validate` the whole text.

use std::borrow::Cow;
use std::fmt;

/// Nesting deeper than this is an error, as in serde_json (which allows 127 levels).
pub(crate) const MAX_DEPTH: u32 = 127;

/// Why a read failed, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// Byte offset in the text.
    pub at: usize,
    /// What was wrong, e.g. "expected a string".
    pub what: &'static str,
    /// The text is not JSON (as opposed to JSON of an unexpected shape).
    pub syntax: bool,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Whether `text` is one JSON value, surrounded by whitespace at most.
pub fn validate(text: &str) -> Result<()> {
    let mut r = Reader::new(text);
    r.skip()?;
    r.end()
}

/// A cursor over one JSON text. Each value method reads one whole value at the cursor.
pub struct Reader<'a> {
    text: &'a str,
    pos: usize,
    depth: u32,
}

/// A number as far as a count needs it.
struct Number {
    /// The integral part; `None` if it does not fit a u64.
    int: Option<u64>,
    negative: bool,
    fraction: bool,
    exponent: bool,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Self {
        Reader { text, pos: 0, depth: 0 }
    }

    /// Reads an object, calling `f` with each key, the reader at its value. `f` reads the value
    /// or leaves it, in which case it is skipped.
    pub fn object(&mut self, f: &mut dyn FnMut(&mut Reader<'a>, &str) -> Result<()>) -> Result<()> {
        if self.open(b'{', b'}', "expected an object")? {
            loop {
                if self.byte() != Some(b'"') {
                    return Err(self.syntax("expected a key"));
                }
                let key = self.string_at(true)?;
                self.ws();
                if !self.eat_byte(b':') {
                    return Err(self.syntax("expected `:`"));
                }
                let at = self.pos_after_ws();
                f(self, &key)?;
                if !self.after_member(at, b'}', "expected `,` or `}`")? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Reads an array, calling `f` with each index, the reader at the element. `f` reads the
    /// element or leaves it, in which case it is skipped.
    pub fn array(&mut self, f: &mut dyn FnMut(&mut Reader<'a>, usize) -> Result<()>) -> Result<()> {
        if self.open(b'[', b']', "expected an array")? {
            let mut index = 0;
            loop {
                let at = self.pos;
                f(self, index)?;
                if !self.after_member(at, b']', "expected `,` or `]`")? {
                    break;
                }
                index += 1;
            }
        }
        Ok(())
    }

    /// A string, borrowed from the text unless it has escapes.
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        self.ws();
        match self.byte() {
            Some(b'"') => self.string_at(true),
            _ => Err(self.mismatch("expected a string")),
        }
    }

    /// A string, or `None` for `null`.
    pub fn opt_string(&mut self) -> Result<Option<Cow<'a, str>>> {
        if self.null()? {
            return Ok(None);
        }
        self.string().map(Some)
    }

    /// `true` or `false`.
    pub fn bool(&mut self) -> Result<bool> {
        self.ws();
        match self.byte() {
            Some(b't') => self.literal("true").map(|_| true),
            Some(b'f') => self.literal("false").map(|_| false),
            _ => Err(self.mismatch("expected true or false")),
        }
    }

    /// A whole number that fits a u64, written without fraction or exponent (`12`, not `12.0`).
    pub fn u64(&mut self) -> Result<u64> {
        let at = self.pos_after_ws();
        match self.number()? {
            Number { int: Some(n), negative: false, fraction: false, exponent: false } => Ok(n),
            _ => Err(Error { at, what: "expected a whole number", syntax: false }),
        }
    }

    /// A `u64`, or `None` for `null`.
    pub fn opt_u64(&mut self) -> Result<Option<u64>> {
        if self.null()? {
            return Ok(None);
        }
        self.u64().map(Some)
    }

    /// A count such as a number of tokens: `null` is `None`, and so is any number that is not a
    /// count (negative, with an exponent, beyond u64). A fraction is dropped, for the servers
    /// that write `12.0`. Anything but a number or `null` is an error.
    pub fn opt_count(&mut self) -> Result<Option<u64>> {
        if self.null()? {
            return Ok(None);
        }
        Ok(match self.number()? {
            Number { int, negative: false, exponent: false, .. } => int,
            _ => None,
        })
    }

    /// Whether the next value is `null`, without reading it.
    pub fn is_null(&self) -> bool {
        let rest = self.text.as_bytes().get(self.pos..).unwrap_or_default();
        rest.iter().find(|b| !is_ws(**b)) == Some(&b'n')
    }

    /// Whether the next value is an array, without reading it.
    pub fn is_array(&self) -> bool {
        let rest = self.text.as_bytes().get(self.pos..).unwrap_or_default();
        rest.iter().find(|b| !is_ws(**b)) == Some(&b'[')
    }

    /// Skips the next value, checking it.
    pub fn skip(&mut self) -> Result<()> {
        self.ws();
        match self.byte() {
            Some(b'{') => self.object(&mut |_, _| Ok(())),
            Some(b'[') => self.array(&mut |_, _| Ok(())),
            Some(b'"') => self.string_at(false).map(drop),
            Some(b't') => self.literal("true"),
            Some(b'f') => self.literal("false"),
            Some(b'n') => self.literal("null"),
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            _ => Err(self.syntax("expected a value")),
        }
    }

    /// The exact text of the next value (checked), e.g. to hand to `serde_json` or keep verbatim.
    pub fn raw(&mut self) -> Result<&'a str> {
        let start = self.pos_after_ws();
        self.skip()?;
        Ok(self.text.get(start..self.pos).unwrap_or_default())
    }

    /// The text of the next value, an object or array found by its brackets and quotes alone:
    /// nesting of any depth and any `\u` escapes pass, unchecked (other values are read as by
    /// `raw`). For a value handed on as text and checked where it is used, such as a tool call's
    /// arguments, whose flaws are that call's error and not the whole event's.
    pub fn raw_unchecked(&mut self) -> Result<&'a str> {
        let start = self.pos_after_ws();
        if !matches!(self.byte(), Some(b'{' | b'[')) {
            return self.raw();
        }
        let bytes = self.text.as_bytes();
        // The closing bracket each open one wants; kept on the heap, so depth costs no stack.
        let mut open = Vec::new();
        let mut i = start;
        while let Some(&b) = bytes.get(i) {
            match b {
                b'{' => open.push(b'}'),
                b'[' => open.push(b']'),
                b'}' | b']' => {
                    if open.pop() != Some(b) {
                        return Err(Error { at: i, what: "unbalanced brackets", syntax: true });
                    }
                    if open.is_empty() {
                        self.pos = i + 1;
                        return Ok(self.text.get(start..i + 1).unwrap_or_default());
                    }
                }
                b'"' => loop {
                    i = plain(bytes, i + 1);
                    match bytes.get(i) {
                        Some(b'"') | None => break,
                        Some(b'\\') => i += 1, // the escaped byte is skipped with the next step
                        Some(_) => {}            // a control character: left to the user of the text
                    }
                },
                _ => {}
            }
            i += 1;
        }
        Err(Error { at: start, what: "unterminated value", syntax: true })
    }

    /// Checks that only whitespace is left.
    pub fn end(&mut self) -> Result<()> {
        self.ws();
        match self.byte() {
            None => Ok(()),
            Some(_) => Err(self.syntax("unexpected text after the value")),
        }
    }

    /// A shape error just after the value last read, for checks the reader does not make itself.
    pub fn error(&self, what: &'static str) -> Error {
        Error { at: self.pos, what, syntax: false }
    }

    // -----------------------------------------------------------------------------------------

    #[inline(always)]
    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Skips whitespace. Inline for the common case of none: provider events are compact.
    #[inline(always)]
    fn ws(&mut self) {
        if self.byte().is_some_and(is_ws) {
            self.skip_ws();
        }
    }

    fn skip_ws(&mut self) {
        let rest = self.text.as_bytes().get(self.pos..).unwrap_or_default();
        self.pos += rest.iter().take_while(|b| is_ws(**b)).count();
    }

    fn pos_after_ws(&mut self) -> usize {
        self.ws();
        self.pos
    }

    fn syntax(&self, what: &'static str) -> Error {
        Error { at: self.pos, what, syntax: true }
    }

    /// The next value is not what was asked for: a shape error if a value starts here at all.
    fn mismatch(&self, what: &'static str) -> Error {
        let value = matches!(self.byte(), Some(b'{' | b'[' | b'"' | b't' | b'f' | b'n' | b'-' | b'0'..=b'9'));
        if value {
            Error { at: self.pos, what, syntax: false }
        } else {
            self.syntax("expected a value")
        }
    }

    /// Reads a `null` if one is next.
    fn null(&mut self) -> Result<bool> {
        if !self.is_null() {
            return Ok(false);
        }
        self.ws();
        self.literal("null").map(|_| true)
    }

    fn literal(&mut self, word: &str) -> Result<()> {
        let end = self.pos + word.len();
        if self.text.as_bytes().get(self.pos..end) != Some(word.as_bytes()) {
            return Err(self.syntax("invalid literal"));
        }
        self.pos = end;
        Ok(())
    }

    /// Steps into an object or array: `true` if a member follows (the cursor at it), `false`
    /// if it was empty (the cursor past it).
    fn open(&mut self, bracket: u8, close: u8, what: &'static str) -> Result<bool> {
        self.ws();
        if self.byte() != Some(bracket) {
            return Err(self.mismatch(what));
        }
        if self.depth >= MAX_DEPTH {
            return Err(self.syntax("nested too deeply"));
        }
        self.pos += 1;
        self.ws();
        if self.eat_byte(close) {
            return Ok(false);
        }
        self.depth += 1;
        Ok(true)
    }

    /// After a member whose value starts at `at`: skips the value if the callback left it, then
    /// `true` past a comma (the cursor at the next member), `false` past `close`.
    fn after_member(&mut self, at: usize, close: u8, what: &'static str) -> Result<bool> {
        if self.pos == at {
            self.skip()?;
        }
        self.ws();
        if self.eat_byte(b',') {
            self.ws();
            return Ok(true);
        }
        if self.eat_byte(close) {
            self.depth -= 1;
            return Ok(false);
        }
        Err(self.syntax(what))
    }

    /// Checks a number and reads what a count needs of it.
    fn number(&mut self) -> Result<Number> {
        self.ws();
        let negative = self.eat_byte(b'-');
        let mut int = Some(0u64);
        match self.byte() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while let Some(d @ b'0'..=b'9') = self.byte() {
                    int = int.and_then(|n| n.checked_mul(10)).and_then(|n| n.checked_add((d - b'0') as u64));
                    self.pos += 1;
                }
            }
            _ if negative => return Err(self.syntax("invalid number")),
            _ => return Err(self.mismatch("expected a number")),
        }
        let fraction = self.eat_byte(b'.');
        if fraction {
            self.digits()?;
        }
        let exponent = self.eat_byte(b'e') || self.eat_byte(b'E');
        if exponent {
            let _ = self.eat_byte(b'+') || self.eat_byte(b'-');
            self.digits()?;
        }
        Ok(Number { int, negative, fraction, exponent })
    }

    /// One or more digits.
    fn digits(&mut self) -> Result<()> {
        let start = self.pos;
        while self.byte().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.syntax("invalid number"));
        }
        Ok(())
    }

    /// Consumes `b` if it is the next byte (whitespace is not skipped).
    #[inline(always)]
    fn eat_byte(&mut self, b: u8) -> bool {
        let hit = self.byte() == Some(b);
        self.pos += hit as usize;
        hit
    }

    /// Reads the string whose opening quote is at the cursor. Without `keep`, escapes are checked
    /// but not decoded and the result is empty.
    fn string_at(&mut self, keep: bool) -> Result<Cow<'a, str>> {
        let text = self.text;
        let bytes = text.as_bytes();
        let mut i = self.pos + 1;
        // The decoded string once an escape was met, and where the text not yet copied starts.
        let mut owned: Option<String> = None;
        let mut run = i;
        loop {
            i = plain(bytes, i);
            match bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    let tail = text.get(run..i).unwrap_or_default();
                    return Ok(match owned {
                        Some(mut s) => {
                            s.push_str(tail);
                            Cow::Owned(s)
                        }
                        None if keep => Cow::Borrowed(tail),
                        None => Cow::Borrowed(""),
                    });
                }
                Some(b'\\') => {
                    let (c, next) = self.escape(i)?;
                    if keep {
                        let s = owned.get_or_insert_with(|| String::with_capacity(i - self.pos + 16));
                        s.push_str(text.get(run..i).unwrap_or_default());
                        s.push(c);
                    }
                    i = next;
                    run = i;
                }
                Some(_) => return Err(Error { at: i, what: "control character in a string", syntax: true }),
                None => return Err(Error { at: self.pos, what: "unterminated string", syntax: true }),
            }
        }
    }

    /// Decodes the escape at byte `i` (a backslash): the character and the byte after it.
    fn escape(&self, i: usize) -> Result<(char, usize)> {
        let bytes = self.text.as_bytes();
        let c = match bytes.get(i + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let high = self.hex4(i + 2)?;
                let (code, next) = match high {
                    0xD800..=0xDBFF => {
                        if bytes.get(i + 6..i + 8) != Some(&b"\\u"[..]) {
                            return Err(Error { at: i, what: "unpaired surrogate in a \\u escape", syntax: true });
                        }
                        let low = self.hex4(i + 8)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Error { at: i, what: "unpaired surrogate in a \\u escape", syntax: true });
                        }
                        (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), i + 12)
                    }
                    _ => (high, i + 6),
                };
                // Fails for a lone low surrogate, the one code point left that is not a char.
                return match char::from_u32(code) {
                    Some(c) => Ok((c, next)),
                    None => Err(Error { at: i, what: "unpaired surrogate in a \\u escape", syntax: true }),
                };
            }
            _ => return Err(Error { at: i, what: "invalid escape", syntax: true }),
        };
        Ok((c, i + 2))
    }

    /// The four hex digits at byte `i`.
    fn hex4(&self, i: usize) -> Result<u32> {
        let mut n = 0;
        for k in i..i + 4 {
            let digit = match self.text.as_bytes().get(k) {
                Some(&d @ b'0'..=b'9') => d - b'0',
                Some(&d @ b'a'..=b'f') => d - b'a' + 10,
                Some(&d @ b'A'..=b'F') => d - b'A' + 10,
                _ => return Err(Error { at: k, what: "invalid \\u escape", syntax: true }),
            };
            n = n * 16 + digit as u32;
        }
        Ok(n)
    }
}

/// The first byte from `i` on that is a quote, a backslash or a control character (or the end).
/// Eight bytes at a time while there is none: most strings have nothing else.
pub(crate) fn plain(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES * 0x80;
    while let Some(word) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*word);
        let quote = w ^ (ONES * b'"' as u64);
        let backslash = w ^ (ONES * b'\\' as u64);
        // A byte of `x` is zero (or below `n`) where `(x - n) & !x` has its high bit set.
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        if found & HIGH != 0 {
            break;
        }
        i += 8;
    }
    let rest = bytes.get(i..).unwrap_or_default();
    i + rest.iter().take_while(|b| !matches!(b, b'"' | b'\\' | 0..=0x1f)).count()
}

pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}
