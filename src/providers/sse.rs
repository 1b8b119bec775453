//! Incremental Server-Sent Events decoding, as the WHATWG HTML standard's "parsing an event
//! stream" describes it: response bytes in, dispatched events out.
//!
//! The decoder yields the same events however the body is cut into pushes: it works on bytes and
//! decodes a line (lossily) only once the line is complete, so a multi-byte character or a CR LF
//! pair split across two pushes is no different from an unsplit one. It never looks inside `data`
//! (that is the provider decoder's job) and never does I/O.
//!
//! This is the hot path of every model reply, so it keeps one reusable line buffer, copies a line
//! only when it straddles two pushes, and allocates roughly one `String` (the data) per event.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `None` when absent or empty (the standard's default type `message`).
    pub event: Option<String>,
    /// The `data:` lines of the event joined with `\n`.
    pub data: String,
    /// The stream's last event id when the event was dispatched (the standard's `lastEventId`,
    /// which carries over from earlier events); `None` while it is unset or empty.
    pub id: Option<String>,
}

/// Incremental SSE parser. Feed it with [`push`](Self::push) in any split, then call
/// [`finish`](Self::finish) once the body ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseDecoder {
    /// Bytes of a line whose end has not arrived yet. Reused for the life of the decoder.
    line: Vec<u8>,
    /// The standard's data buffer: every data line followed by `\n`.
    data: String,
    /// The event type buffer; `None` stands for the empty string.
    event: Option<String>,
    /// The last event id buffer; `None` stands for the empty string.
    last_id: Option<String>,
    /// A field line arrived since the last blank line, so an event is being assembled.
    in_event: bool,
    /// The previous push ended with CR: an LF opening the next push ends that same line.
    after_cr: bool,
    /// The first line has been seen; the byte order mark may only precede that one.
    past_first_line: bool,
    /// `finish` found an unfinished event or line.
    cut: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the stream and appends every event they complete, in order.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = bytes;
        if self.after_cr {
            if let Some((&first, tail)) = rest.split_first() {
                self.after_cr = false;
                if first == b'\n' {
                    rest = tail;
                }
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let head = &rest[..pos];
            let mut tail = &rest[pos + 1..];
            if rest[pos] == b'\r' {
                match tail.first() {
                    Some(b'\n') => tail = &tail[1..],
                    Some(_) => {}
                    // The LF that may follow is in the next push; the line ends here either way,
                    // so events are not held back waiting for it.
                    None => self.after_cr = true,
                }
            }
            if self.line.is_empty() {
                self.take_line(head, out);
            } else {
                self.line.extend_from_slice(head);
                let line = std::mem::take(&mut self.line);
                self.take_line(&line, out);
                self.line = line;
                self.line.clear();
            }
            rest = tail;
        }
        self.line.extend_from_slice(rest);
    }

    /// Ends the stream. Following the standard, an event that no blank line closed is discarded,
    /// so nothing is ever appended; [`has_partial`](Self::has_partial) still reports it afterwards.
    pub fn finish(&mut self, _out: &mut Vec<SseEvent>) {
        self.cut = self.has_partial();
        self.line.clear();
        self.data.clear();
        self.event = None;
        self.in_event = false;
        self.after_cr = false;
    }

    /// Whether the bytes so far end inside a line or inside an event that no blank line has
    /// closed yet (before or after `finish`): a body that ends like this was cut short.
    pub fn has_partial(&self) -> bool {
        self.cut || self.in_event || !self.line.is_empty()
    }

    /// Interprets one complete line (without its line ending).
    fn take_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        let mut line = line;
        if !self.past_first_line {
            self.past_first_line = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        let Some(&first) = line.first() else {
            self.dispatch(out);
            return;
        };
        if first == b':' {
            return; // a comment, typically a keep-alive
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        self.in_event = true;
        match name {
            b"data" => {
                push_lossy(&mut self.data, value);
                self.data.push('\n');
            }
            b"event" => self.event = non_empty(value),
            // An id containing NUL is ignored, as the standard says.
            b"id" if !value.contains(&0) => self.last_id = non_empty(value),
            // `retry` sets the reconnection delay, which is the caller's business; every other
            // field name is ignored by the standard.
            _ => {}
        }
    }

    /// A blank line: hands the assembled event out, unless it has no data.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        self.in_event = false;
        let event = self.event.take();
        if self.data.is_empty() {
            return;
        }
        // Drop the `\n` after the last data line.
        self.data.pop();
        // The next event is likely about as long as this one: give the buffer that room now so it
        // does not regrow line by line, and hand this one out without copying it.
        let room = self.data.len() + 1;
        let data = std::mem::replace(&mut self.data, String::with_capacity(room));
        out.push(SseEvent { event, data, id: self.last_id.clone() });
    }
}

fn push_lossy(buf: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => buf.push_str(text),
        Err(_) => buf.push_str(&String::from_utf8_lossy(bytes)),
    }
}

fn non_empty(bytes: &[u8]) -> Option<String> {
    (!bytes.is_empty()).then(|| String::from_utf8_lossy(bytes).into_owned())
}
