//! The incremental JSON parser behind structured output (SPEC §12.3): fed a model's reply one text
//! delta at a time, it keeps the partial value the reply has reached so far, hands out the elements
//! of a root array as they complete, and at the end says whether the text was one JSON value.
//!
//! ```ignore
//! let mut parser = JsonStream::new();
//! for delta in deltas {
//!     if let Some(partial) = parser.push(delta) {
//!         emit_object_chunk(partial); // before the text-delta that changed it
//!     }
//!     for element in parser.take_completed_elements(Some("elements")) {
//!         emit_element(element);
//!     }
//! }
//! let object = parser.finish()?; // Err says what is missing or wrong, and at which byte
//! ```
//!
//! Contract:
//! - A resumable state machine: each byte is examined once, whatever the deltas are; nothing is
//!   re-parsed. The partial value is kept as a tree that grows in place (a partial string is
//!   appended to, a completed element is pushed), so the parser's work is O(total length) (times
//!   the nesting depth, at most 127, for reaching the open container). `push` clones the partial
//!   tree only when it changed, which costs O(size of the value so far) per change; `feed` +
//!   `partial` do the same without the clone.
//! - Before the value: everything up to the first `{` or `[` that starts JSON is skipped: prose,
//!   a ```` ```json ```` fence, `<|channel|>final<|message|>`-style channel tokens. A bracket counts
//!   as the start when the next non-space byte can follow it in JSON (`{"`, `{}`, `[{`, `[[`, `["`,
//!   `[1`, `[-`, `[]`), so "see [note]" or "{name}" in prose is passed over. After the value, the
//!   rest (a closing fence, prose, more tokens) is ignored.
//! - Inside the value, strict JSON (RFC 8259, as `serde_json` reads it), but for raw control
//!   characters (newlines, tabs, …) inside strings, which are taken as they are, and lone `\u`
//!   surrogates, which become U+FFFD. Numbers are `serde_json` numbers, read from their token.
//! - What the partial value shows (each partial is a prefix of the next): strings as far as they
//!   have come; numbers, `true`, `false`, `null` once their token has ended; object members once
//!   their value has started (`""`, `{}`, `[]`) or, for numbers and literals, ended; array
//!   elements once complete, and the last one while in progress only if it is an object with a
//!   member shown. A duplicate key replaces the member's value (as in `serde_json`), the one case
//!   where a partial is not a prefix of the next.
//! - Never panics; after a syntax error the parser ignores further input and `finish` returns the
//!   error.

use std::fmt;
use std::mem;

use serde_json::{Map, Number, Value};

use super::json::{self, is_ws, plain, MAX_DEPTH};

/// Why the text is not one JSON value: what was wrong or missing, and at which byte of the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonStreamError {
    pub message: String,
}

impl fmt::Display for JsonStreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JsonStreamError {}

/// The incremental parser of one reply (one step's text). See the module docs.
#[derive(Default)]
pub struct JsonStream {
    state: State,
    /// The open objects and arrays, the root first.
    frames: Vec<Frame>,
    /// The root once it is complete.
    root: Option<Value>,
    /// Where the string being read goes, and its text not yet placed there.
    target: Target,
    buf: String,
    /// The first bytes of a UTF-8 character split across `push_bytes` calls.
    utf8: Vec<u8>,
    esc: Esc,
    /// A `\u` high surrogate waiting for its low half.
    high: Option<u32>,
    /// The number token being read.
    number: String,
    /// Where the current string or number started, for messages.
    token_at: usize,
    /// Bytes fed so far.
    offset: usize,
    /// The partial value changed since the last `feed`.
    changed: bool,
    /// Elements of the watched root array already handed out.
    taken: usize,
    error: Option<JsonStreamError>,
    /// Units of work done (bytes examined, containers walked): the linearity test reads it.
    work: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Before the root. `candidate`: a `{` or `[` just seen (and its offset), waiting for the next
    /// non-space byte to tell JSON from prose.
    #[default]
    Prose,
    Candidate {
        bracket: u8,
        at: usize,
    },
    /// A value is expected; `first`: just after `[`, so `]` may close.
    Value {
        first: bool,
    },
    /// A key is expected; `first`: just after `{`, so `}` may close.
    Key {
        first: bool,
    },
    Colon,
    /// After a member: `,` or the closing bracket.
    After,
    Str,
    Number,
    Literal {
        word: &'static str,
        matched: usize,
    },
    Done,
    Failed,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Target {
    /// An object's key: kept in `buf` until it ends.
    #[default]
    Key,
    /// An array element: kept in `buf`, shown once it ends.
    Element,
    /// An object member's value: shown as it grows, `buf` moved into the tree after each delta.
    Member,
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

struct Frame {
    object: bool,
    /// Offset of the bracket, for messages.
    at: usize,
    /// The key of the member being read (objects).
    key: String,
    /// That key was already in the object, so its member is not the last entry.
    dup: bool,
    /// The container while it is not part of its parent yet (an array element not shown yet);
    /// `None` once it is (then it is the parent's current member or last element).
    own: Option<Value>,
}

impl JsonStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one text delta. Returns the new partial value when it differs from the last one
    /// returned (None when the delta changed nothing visible). Costs a clone of the partial value
    /// when it changed.
    pub fn push(&mut self, delta: &str) -> Option<Value> {
        self.push_bytes(delta.as_bytes())
    }

    /// `push` for a byte stream: a UTF-8 character may be split across calls (an invalid sequence
    /// in a string becomes U+FFFD).
    pub fn push_bytes(&mut self, delta: &[u8]) -> Option<Value> {
        if self.feed_bytes(delta) {
            self.partial().cloned()
        } else {
            None
        }
    }

    /// Feeds one delta without cloning anything: whether the partial value changed.
    pub fn feed(&mut self, delta: &str) -> bool {
        self.feed_bytes(delta.as_bytes())
    }

    /// `feed` for a byte stream (see `push_bytes`).
    pub fn feed_bytes(&mut self, delta: &[u8]) -> bool {
        let mut i = 0;
        while let Some(&b) = delta.get(i) {
            let at = self.offset + i;
            match self.state {
                State::Done | State::Failed => break,
                State::Str if self.esc == Esc::None => i = self.string_run(delta, i),
                _ => {
                    self.byte(b, at);
                    i += 1;
                }
            }
        }
        self.offset += delta.len();
        self.flush();
        mem::take(&mut self.changed)
    }

    /// The partial value so far: `None` before the root's bracket.
    pub fn partial(&self) -> Option<&Value> {
        match self.frames.first() {
            Some(root) => root.own.as_ref(),
            None => self.root.as_ref(),
        }
    }

    /// Elements of a root array value under `key` (or of the root array when the root itself is an
    /// array) that completed since the last call, in order; each completed element is returned once.
    pub fn take_completed_elements(&mut self, key: Option<&str>) -> Vec<Value> {
        let root_array = matches!(self.partial(), Some(Value::Array(_)));
        // The frame of the array, when it is still open (the root, or the root object's member).
        let depth = if root_array { 0 } else { 1 };
        let open = match self.frames.get(depth) {
            Some(frame) if depth == 0 => !frame.object,
            Some(frame) => !frame.object && self.frames.first().is_some_and(|root| Some(root.key.as_str()) == key),
            None => false,
        };
        let array = match (self.partial(), key) {
            (Some(Value::Array(a)), _) => a,
            (Some(Value::Object(m)), Some(key)) => match m.get(key) {
                Some(Value::Array(a)) => a,
                _ => return Vec::new(),
            },
            _ => return Vec::new(),
        };
        // An open array's last element is still in progress when its frame is attached.
        let in_progress = open && self.frames.get(depth + 1).is_some_and(|f| f.own.is_none());
        let complete = array.len().saturating_sub(in_progress as usize);
        let new = array.get(self.taken..complete).map(<[Value]>::to_vec).unwrap_or_default();
        self.taken = self.taken.max(complete);
        new
    }

    /// Ends the text: the complete value, or why it is not one.
    pub fn finish(&mut self) -> Result<Value, JsonStreamError> {
        self.flush();
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        if let Some(root) = &self.root {
            return Ok(root.clone());
        }
        let end = self.offset;
        let mut missing: Vec<String> = Vec::new();
        match self.state {
            State::Prose if end == 0 => return Err(message("empty text: expected a JSON object or array".into())),
            State::Prose => {
                return Err(message(format!("no JSON object or array in the text ({end} bytes)")));
            }
            State::Candidate { bracket, at } => {
                let close = if bracket == b'{' { "`}` (object from byte " } else { "`]` (array from byte " };
                missing.push(format!("{close}{at})"));
            }
            State::Value { .. } => missing.push("a value".into()),
            State::Key { .. } => missing.push("a key".into()),
            State::Colon => missing.push("`:`".into()),
            State::Str => missing.push(format!("`\"` (string from byte {})", self.token_at)),
            State::Literal { word, matched } => {
                missing.push(format!("`{}` to end `{word}`", word.get(matched..).unwrap_or_default()))
            }
            State::Number | State::After | State::Done | State::Failed => {}
        }
        for frame in self.frames.iter().rev() {
            let (close, kind) = if frame.object { ('}', "object") } else { (']', "array") };
            missing.push(format!("`{close}` ({kind} from byte {})", frame.at));
        }
        Err(message(format!("incomplete JSON at byte {end}: missing {}", missing.join(", "))))
    }

    // -----------------------------------------------------------------------------------------

    /// One byte outside a string's plain text.
    fn byte(&mut self, b: u8, at: usize) {
        self.work += 1;
        match self.state {
            State::Prose => {
                if matches!(b, b'{' | b'[') {
                    self.state = State::Candidate { bracket: b, at };
                }
            }
            State::Candidate { bracket, at: open_at } => {
                let json = match bracket {
                    b'{' => matches!(b, b'"' | b'}'),
                    _ => matches!(b, b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b']'),
                };
                if is_ws(b) {
                } else if json {
                    self.open(bracket == b'{', open_at);
                    self.byte(b, at);
                } else {
                    self.state = State::Prose;
                    self.byte(b, at);
                }
            }
            _ if is_ws(b) && !matches!(self.state, State::Str | State::Number | State::Literal { .. }) => {}
            State::Value { first } => self.value(b, first, at),
            State::Key { first } => match b {
                b'"' => self.start_string(Target::Key, at),
                b'}' if first => self.close(),
                _ => self.fail("expected a key", at),
            },
            State::Colon if b == b':' => self.state = State::Value { first: false },
            State::Colon => self.fail("expected `:`", at),
            State::After => {
                let object = self.frames.last().is_some_and(|f| f.object);
                match (b, object) {
                    (b',', true) => self.state = State::Key { first: false },
                    (b',', false) => self.state = State::Value { first: false },
                    (b'}', true) | (b']', false) => self.close(),
                    (_, true) => self.fail("expected `,` or `}`", at),
                    (_, false) => self.fail("expected `,` or `]`", at),
                }
            }
            State::Str => self.escape(b, at),
            State::Number if matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') => self.number.push(b as char),
            State::Number => {
                self.end_number();
                self.byte(b, at);
            }
            State::Literal { word, matched } => {
                if word.as_bytes().get(matched) != Some(&b) {
                    return self.fail("invalid literal", at);
                }
                if matched + 1 < word.len() {
                    self.state = State::Literal { word, matched: matched + 1 };
                    return;
                }
                self.put(match word {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => Value::Null,
                });
                self.state = State::After;
            }
            State::Done | State::Failed => {}
        }
    }

    /// The first byte of a value.
    fn value(&mut self, b: u8, first: bool, at: usize) {
        let in_object = self.frames.last().is_some_and(|f| f.object);
        match b {
            b'"' if in_object => {
                self.put(Value::String(String::new()));
                self.start_string(Target::Member, at);
            }
            b'"' => self.start_string(Target::Element, at),
            b'{' | b'[' => self.open(b == b'{', at),
            b']' if first && !in_object => self.close(),
            b'-' | b'0'..=b'9' => {
                self.number.clear();
                self.number.push(b as char);
                self.token_at = at;
                self.state = State::Number;
            }
            b't' => self.state = State::Literal { word: "true", matched: 1 },
            b'f' => self.state = State::Literal { word: "false", matched: 1 },
            b'n' => self.state = State::Literal { word: "null", matched: 1 },
            _ => self.fail("expected a value", at),
        }
    }

    fn end_number(&mut self) {
        self.work += self.number.len() as u64;
        match self.number.parse::<Number>() {
            Ok(n) => {
                self.put(Value::Number(n));
                self.state = State::After;
            }
            Err(_) => self.fail("invalid number", self.token_at),
        }
    }

    fn start_string(&mut self, target: Target, at: usize) {
        self.target = target;
        self.buf.clear();
        self.token_at = at;
        self.state = State::Str;
    }

    /// Plain string text from `i` on, up to the next quote, backslash or the end of the delta.
    /// Raw control characters are taken as text. Returns where to go on.
    fn string_run(&mut self, bytes: &[u8], i: usize) -> usize {
        let mut end = plain(bytes, i);
        while bytes.get(end).is_some_and(|b| *b < 0x20) {
            end = plain(bytes, end + 1);
        }
        let run = bytes.get(i..end).unwrap_or_default();
        if !run.is_empty() {
            self.lone_high();
            self.work += run.len() as u64;
            push_utf8(&mut self.buf, &mut self.utf8, run);
        }
        match bytes.get(end) {
            Some(b'"') => {
                self.end_string();
                end + 1
            }
            Some(_) => {
                self.work += 1;
                self.esc = Esc::Slash;
                end + 1
            }
            None => end,
        }
    }

    /// One byte of an escape (after the backslash).
    fn escape(&mut self, b: u8, at: usize) {
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
                        return;
                    }
                    _ => return self.fail("invalid escape", at),
                };
                self.esc = Esc::None;
                self.char(c);
            }
            Esc::Hex { digits, code } => {
                let Some(digit) = (b as char).to_digit(16) else {
                    return self.fail("invalid \\u escape", at);
                };
                let code = code * 16 + digit;
                if digits < 3 {
                    self.esc = Esc::Hex { digits: digits + 1, code };
                    return;
                }
                self.esc = Esc::None;
                match code {
                    0xD800..=0xDBFF => {
                        self.lone_high();
                        self.high = Some(code);
                    }
                    0xDC00..=0xDFFF => match self.high.take() {
                        Some(high) => {
                            let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00));
                            self.buf.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
                        }
                        None => self.buf.push(char::REPLACEMENT_CHARACTER),
                    },
                    _ => self.char(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)),
                }
            }
            Esc::None => {}
        }
    }

    fn char(&mut self, c: char) {
        self.lone_high();
        self.buf.push(c);
    }

    /// A high surrogate not followed by its low half is text too: U+FFFD.
    fn lone_high(&mut self) {
        if self.high.take().is_some() {
            self.buf.push(char::REPLACEMENT_CHARACTER);
        }
    }

    fn end_string(&mut self) {
        self.lone_high();
        if !self.utf8.is_empty() {
            self.utf8.clear();
            self.buf.push(char::REPLACEMENT_CHARACTER);
        }
        self.state = State::After;
        match self.target {
            Target::Key => {
                self.state = State::Colon;
                let key = mem::take(&mut self.buf);
                if let Some(frame) = self.frames.last_mut() {
                    frame.key = key;
                }
            }
            Target::Element => {
                let text = mem::take(&mut self.buf);
                self.put(Value::String(text));
            }
            Target::Member => self.flush(),
        }
    }

    /// Moves the text read of an object member's string into the tree.
    fn flush(&mut self) {
        if self.target != Target::Member || self.buf.is_empty() {
            return;
        }
        self.work += self.buf.len() as u64;
        if let Some((Value::String(s), visible)) = walk(&mut self.frames, true, &mut self.work) {
            s.push_str(&self.buf);
            self.changed |= visible;
        }
        self.buf.clear();
    }

    /// Opens an object or array at `at`.
    fn open(&mut self, object: bool, at: usize) {
        if self.frames.len() >= MAX_DEPTH as usize {
            return self.fail("nested too deeply", at);
        }
        let empty = if object { Value::Object(Map::new()) } else { Value::Array(Vec::new()) };
        let own = match self.frames.last().map(|f| f.object) {
            // The root is shown at once, and so is an object member's value.
            None => {
                self.changed = true;
                Some(empty)
            }
            Some(true) => {
                self.put(empty);
                None
            }
            // An array element is shown once complete (or, for an object, once it has a member).
            Some(false) => Some(empty),
        };
        self.frames.push(Frame { object, at, key: String::new(), dup: false, own });
        self.state = if object { State::Key { first: true } } else { State::Value { first: true } };
    }

    /// Closes the innermost object or array.
    fn close(&mut self) {
        let Some(frame) = self.frames.pop() else { return };
        self.state = State::After;
        match frame.own {
            Some(value) if self.frames.is_empty() => {
                self.root = Some(value);
                self.state = State::Done;
            }
            Some(value) => self.put(value),
            None => {}
        }
    }

    /// Puts a value in the innermost container: the member under its key, or the next element.
    fn put(&mut self, value: Value) {
        let key = match self.frames.last() {
            Some(frame) if frame.object => {
                self.work += frame.key.len() as u64;
                frame.key.clone()
            }
            Some(_) => String::new(),
            None => return,
        };
        let Some((container, visible)) = walk(&mut self.frames, false, &mut self.work) else { return };
        let mut dup = false;
        match container {
            Value::Object(map) => {
                dup = map.contains_key(&key);
                map.insert(key, value);
            }
            Value::Array(array) => array.push(value),
            _ => return,
        }
        self.changed |= visible;
        let n = self.frames.len();
        let Some(frame) = self.frames.last_mut() else { return };
        frame.dup = dup;
        // An object in an array is shown from its first member on: it joins the array now.
        if frame.object && n > 1 {
            if let Some(object) = frame.own.take() {
                if let Some((Value::Array(array), visible)) = walk(&mut self.frames[..n - 1], false, &mut self.work) {
                    array.push(object);
                    self.changed |= visible;
                }
            }
        }
    }

    fn fail(&mut self, what: &'static str, at: usize) {
        self.state = State::Failed;
        let error = json::Error { at, what, syntax: true };
        self.error = Some(message(error.to_string()));
    }
}

fn message(message: String) -> JsonStreamError {
    JsonStreamError { message }
}

/// The innermost container (with `member`, its current member or last element), and whether it
/// is part of the visible value: walked down from the innermost container that is not part of
/// its parent yet (the root, or an array element not shown yet).
fn walk<'a>(frames: &'a mut [Frame], member: bool, work: &mut u64) -> Option<(&'a mut Value, bool)> {
    let from = frames.iter().rposition(|f| f.own.is_some())?;
    let (below, above) = frames.split_at_mut(from + 1);
    let Frame { own, key, dup, .. } = below.last_mut()?;
    let mut node = own.as_mut()?;
    let (mut key, mut dup): (&str, bool) = (key, *dup);
    for frame in above.iter() {
        *work += 1;
        node = child(node, key, dup)?;
        (key, dup) = (&frame.key, frame.dup);
    }
    if member {
        node = child(node, key, dup)?;
    }
    Some((node, from == 0))
}

/// A container's current member (the last one, unless its key was a duplicate) or last element.
fn child<'a>(node: &'a mut Value, key: &str, dup: bool) -> Option<&'a mut Value> {
    match node {
        Value::Array(array) => array.last_mut(),
        // With serde_json's `preserve_order` the last entry is the one inserted last.
        Value::Object(map) => {
            if dup {
                map.get_mut(key)
            } else {
                map.values_mut().next_back()
            }
        }
        _ => None,
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

#[cfg(test)]
#[path = "json_stream_tests.rs"]
mod tests;
