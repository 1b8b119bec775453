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
//! - A resumable state machine: each byte is examined a bounded number of times (a number's token
//!   once more when it ends), however the text is cut; nothing is re-parsed. The partial value is kept as a tree that grows in place (a partial string is
//!   appended to, a completed element is pushed), so the parser's work is O(total length) (times
//!   the nesting depth, at most 127, for reaching the open container). `push` clones the partial
//!   tree only when it changed, which costs O(size of the value so far) per change; `feed` +
//!   `partial` do the same without the clone.
//! - Before the value: everything up to the first `{` or `[` that starts JSON is skipped: prose,
//!   a ```` ```json ```` fence, `<|channel|>final<|message|>`-style channel tokens. A bracket counts
//!   as the start when the next non-space byte can follow it in JSON (`{"`, `{}`, `[{`, `[[`, `["`,
//!   `[1`, `[-`, `[]`; `[t`, `[f`, `[n` only at the start of a line or after a token), so
//!   "see [the note]" or "{name}" in prose is passed over. After the value, the rest (a closing
//!   fence, prose, more tokens) is ignored.
//! - Inside the value, strict JSON (RFC 8259, as `serde_json` reads it), but for raw control
//!   characters (newlines, tabs, …) inside strings, which are taken as they are, and lone `\u`
//!   surrogates, which become U+FFFD. Numbers are `serde_json` numbers, read from their token.
//! - What the partial value shows (each partial is a prefix of the next): strings as far as they
//!   have come; numbers, `true`, `false`, `null` once their token has ended; object members once
//!   their value has started (`""`, `{}`, `[]`) or, for numbers and literals, ended; array
//!   elements once complete, and the last one while in progress only if it is an object with a
//!   member shown. A duplicate key replaces the member's value (as in `serde_json`), the one case
//!   where a partial is not a prefix of the next.
//! - `finish` wants one complete value; what follows it is ignored, nothing before it counts but
//!   the skipped prefix. Empty text, text without JSON and a value cut short are errors that say
//!   what is missing (``incomplete JSON at byte 10: missing `"` (string from byte 6), `}` (object
//!   from byte 0)``); a syntax error says what was expected and where (``expected `:` at byte 5``).
//! - Never panics; after a syntax error the parser ignores further input and `finish` returns the
//!   error.
//!
//! This file is the lexer (one state machine over bytes); the partial tree and what it shows
//! when are in `json_stream_tree.rs`, the decoding of string text cut across deltas in
//! `json_stream_string.rs`.

use std::fmt;
use std::mem;

use serde_json::{Number, Value};

use super::json::{self, is_ws, MAX_DEPTH};
use partial_string::PartialString;
use tree::Tree;

#[path = "json_stream_string.rs"]
mod partial_string;
#[path = "json_stream_tree.rs"]
mod tree;

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
#[derive(Debug, Default)]
pub struct JsonStream {
    state: State,
    /// The partial value.
    tree: Tree,
    /// Where the string being read goes, and its text not yet placed there.
    target: Target,
    string: PartialString,
    /// The number token being read.
    number: String,
    /// Where the current string or number started, for messages.
    token_at: usize,
    /// Bytes fed so far.
    offset: usize,
    /// Elements of the watched root array already handed out.
    taken: usize,
    error: Option<JsonStreamError>,
    /// Bytes examined (the tree counts its own work): the linearity test reads it.
    work: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the root; `line_start`: at the start of the text or of a line, or after a
    /// channel token's `|>`.
    Prose {
        line_start: bool,
    },
    /// A `{` or `[` (at byte `at`) before the root, waiting for the next non-space byte to tell
    /// JSON from prose.
    Candidate {
        bracket: u8,
        at: usize,
        line_start: bool,
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
    /// In a string (`target` says whose).
    Str,
    /// In a number token (`number`).
    Number,
    Literal {
        word: &'static str,
        matched: usize,
    },
    /// The root is complete: the rest of the text is ignored.
    Done,
    /// A syntax error (`error`): the rest of the text is ignored.
    Failed,
}

impl Default for State {
    fn default() -> Self {
        State::Prose { line_start: true }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Target {
    /// An object's key: kept in `string` until it ends.
    #[default]
    Key,
    /// An array element: kept in `string`, shown once it ends.
    Element,
    /// An object member's value: shown as it grows, moved from `string` into the tree after each
    /// delta.
    Member,
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
                State::Str if !self.string.in_escape() => {
                    let (next, ended) = self.string.run(delta, i);
                    self.work += (next - i) as u64;
                    i = next;
                    if ended {
                        self.end_string();
                    }
                }
                _ => {
                    self.byte(b, at);
                    i += 1;
                }
            }
        }
        self.offset += delta.len();
        self.flush();
        mem::take(&mut self.tree.changed)
    }

    /// The partial value so far: `None` before the root's bracket.
    pub fn partial(&self) -> Option<&Value> {
        self.tree.partial()
    }

    /// Elements of a root array value under `key` (or of the root array when the root itself is an
    /// array) that completed since the last call, in order; each completed element is returned once.
    pub fn take_completed_elements(&mut self, key: Option<&str>) -> Vec<Value> {
        let (elements, taken) = self.tree.completed_elements(key, self.taken);
        self.taken = taken;
        elements
    }

    /// Ends the text: the complete value, or why it is not one.
    pub fn finish(&mut self) -> Result<Value, JsonStreamError> {
        self.flush();
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        if let Some(root) = self.tree.complete() {
            return Ok(root.clone());
        }
        let end = self.offset;
        let mut missing: Vec<String> = Vec::new();
        match self.state {
            State::Prose { .. } if end == 0 => {
                return Err(message("empty text: expected a JSON object or array".into()))
            }
            State::Prose { .. } => {
                return Err(message(format!("no JSON object or array in the text ({end} bytes)")));
            }
            State::Candidate { bracket, at, .. } => {
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
        for (object, at) in self.tree.open_containers() {
            let (close, kind) = if object { ('}', "object") } else { (']', "array") };
            missing.push(format!("`{close}` ({kind} from byte {at})"));
        }
        Err(message(format!("incomplete JSON at byte {end}: missing {}", missing.join(", "))))
    }

    // -----------------------------------------------------------------------------------------

    /// One byte outside a string's plain text.
    fn byte(&mut self, b: u8, at: usize) {
        self.work += 1;
        match self.state {
            State::Prose { line_start } => {
                self.state = match b {
                    b'{' | b'[' => State::Candidate { bracket: b, at, line_start },
                    b'\n' | b'>' => State::Prose { line_start: true },
                    b' ' | b'\t' | b'\r' => State::Prose { line_start },
                    _ => State::Prose { line_start: false },
                };
            }
            State::Candidate { bracket, at: open_at, line_start } => {
                // A literal after `[` only where prose cannot be: "[true]" yes, "see [the note]" no.
                let json = match bracket {
                    b'{' => matches!(b, b'"' | b'}'),
                    _ => {
                        matches!(b, b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b']')
                            || line_start && matches!(b, b't' | b'f' | b'n')
                    }
                };
                if is_ws(b) {
                } else if json {
                    self.open(bracket == b'{', open_at);
                    self.byte(b, at);
                } else {
                    self.state = State::Prose { line_start: false };
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
                let object = self.tree.in_object();
                match (b, object) {
                    (b',', true) => self.state = State::Key { first: false },
                    (b',', false) => self.state = State::Value { first: false },
                    (b'}', true) | (b']', false) => self.close(),
                    (_, true) => self.fail("expected `,` or `}`", at),
                    (_, false) => self.fail("expected `,` or `]`", at),
                }
            }
            State::Str => {
                if let Err(what) = self.string.escape(b) {
                    self.fail(what, at);
                }
            }
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
                self.tree.put(match word {
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
        let in_object = self.tree.in_object();
        match b {
            b'"' if in_object => {
                self.tree.put(Value::String(String::new()));
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
                self.tree.put(Value::Number(n));
                self.state = State::After;
            }
            Err(_) => self.fail("invalid number", self.token_at),
        }
    }

    fn start_string(&mut self, target: Target, at: usize) {
        self.target = target;
        self.string.clear();
        self.token_at = at;
        self.state = State::Str;
    }

    fn end_string(&mut self) {
        self.string.end();
        self.state = State::After;
        match self.target {
            Target::Key => {
                self.state = State::Colon;
                self.tree.set_key(mem::take(&mut self.string.text));
            }
            Target::Element => {
                let text = mem::take(&mut self.string.text);
                self.tree.put(Value::String(text));
            }
            Target::Member => self.flush(),
        }
    }

    /// Moves the text read of an object member's string into the tree.
    fn flush(&mut self) {
        if self.target != Target::Member || self.string.text.is_empty() {
            return;
        }
        self.tree.append(&self.string.text);
        self.string.text.clear();
    }

    /// Opens an object or array at byte `at`.
    fn open(&mut self, object: bool, at: usize) {
        if self.tree.depth() >= MAX_DEPTH as usize {
            return self.fail("nested too deeply", at);
        }
        self.tree.open(object, at);
        self.state = if object { State::Key { first: true } } else { State::Value { first: true } };
    }

    /// Closes the innermost object or array.
    fn close(&mut self) {
        self.state = if self.tree.close() { State::Done } else { State::After };
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

#[cfg(test)]
#[path = "json_stream_tests.rs"]
mod tests;
