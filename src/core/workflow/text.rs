//! JSON text written straight from borrowed parts: the engine's per-step events and a run's
//! result and snapshot. Building them as `Value` trees first cost a copy of every input and
//! output, a map with hashed keys per object, and dropping it all again, for text that was then
//! serialized anyway (about a third of a trivial step's engine time).

use serde_json::{Map, Number, Value};

/// What `Obj` writes: the same text serde_json writes for it, by hand (serde_json's writer goes
/// through `io::Write` a few bytes at a time, which at opt-level "z" was most of the cost).
pub trait Json {
    fn write(&self, out: &mut Vec<u8>);
}

impl Json for str {
    fn write(&self, out: &mut Vec<u8>) {
        write_str(out, self);
    }
}

impl Json for String {
    fn write(&self, out: &mut Vec<u8>) {
        write_str(out, self);
    }
}

impl Json for u32 {
    fn write(&self, out: &mut Vec<u8>) {
        write_u64(out, u64::from(*self));
    }
}

impl Json for f64 {
    fn write(&self, out: &mut Vec<u8>) {
        // A whole number below 2^53 (a time in ms) is its digits and ".0", as serde_json (ryu)
        // writes it; anything else goes to serde_json.
        if self.fract() == 0.0 && *self > 0.0 && *self < 9_007_199_254_740_992.0 {
            write_u64(out, *self as u64);
            out.extend_from_slice(b".0");
        } else {
            let _ = serde_json::to_writer(&mut *out, self);
        }
    }
}

impl Json for Value {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Number(n) => write_number(out, n),
            Value::String(s) => write_str(out, s),
            Value::Array(a) => a.as_slice().write(out),
            Value::Object(m) => m.write(out),
        }
    }
}

impl Json for Map<String, Value> {
    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(out, k);
            out.push(b':');
            v.write(out);
        }
        out.push(b'}');
    }
}

impl<T: Json> Json for [T] {
    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            v.write(out);
        }
        out.push(b']');
    }
}

impl<T: Json> Json for Vec<T> {
    fn write(&self, out: &mut Vec<u8>) {
        self.as_slice().write(out);
    }
}

impl<T: Json> Json for Option<T> {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Some(v) => v.write(out),
            None => out.extend_from_slice(b"null"),
        }
    }
}

fn write_number(out: &mut Vec<u8>, n: &Number) {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => write_u64(out, u),
        (None, Some(i)) => {
            out.push(b'-');
            write_u64(out, i.unsigned_abs());
        }
        _ => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
    }
}

fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// A JSON string literal, escaped as serde_json escapes (`\b` `\f` `\n` `\r` `\t`, other
/// control characters as `\u00XX`, nothing else).
fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// One JSON object being written; keys are the engine's own ASCII names (never escaped).
pub struct Obj(Vec<u8>);

impl Default for Obj {
    fn default() -> Self {
        Self::new()
    }
}

impl Obj {
    pub fn new() -> Self {
        let mut b = Vec::with_capacity(192);
        b.push(b'{');
        Obj(b)
    }

    fn key(&mut self, k: &str) {
        if self.0.len() > 1 {
            self.0.push(b',');
        }
        self.0.push(b'"');
        self.0.extend_from_slice(k.as_bytes());
        self.0.extend_from_slice(b"\":");
    }

    /// `"k": v`.
    pub fn val<T: Json + ?Sized>(&mut self, k: &str, v: &T) -> &mut Self {
        self.key(k);
        v.write(&mut self.0);
        self
    }

    /// `"k": v` for a key from outside (escaped).
    pub fn field<T: Json + ?Sized>(&mut self, k: &str, v: &T) -> &mut Self {
        if self.0.len() > 1 {
            self.0.push(b',');
        }
        write_str(&mut self.0, k);
        self.0.push(b':');
        v.write(&mut self.0);
        self
    }

    /// `"k": <text>`, where `text` is already JSON.
    pub fn raw(&mut self, k: &str, text: &str) -> &mut Self {
        self.key(k);
        self.0.extend_from_slice(text.as_bytes());
        self
    }

    pub fn done(&mut self) -> String {
        self.0.push(b'}');
        // Only UTF-8 went in: whole `&str`s, split at ASCII bytes, and ASCII.
        String::from_utf8(std::mem::take(&mut self.0)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    #[test]
    fn values_numbers_and_strings_are_the_text_serde_json_writes() {
        let values = [
            json!(null),
            json!([true, false, 0, 7, -12, u64::MAX, i64::MIN, 1.5, -0.25, 1e300]),
            json!({ "k": "\u{8}\u{c}\n\r\t\u{1}\u{1f}\"\\/ é 🌍 \u{2028}", "": {}, "a": [] }),
        ];
        for v in values {
            let mut out = Vec::new();
            super::Json::write(&v, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
        for f in [0.0, -0.0, 1.0, 1764761234567.0, 9_007_199_254_740_991.0, 9_007_199_254_740_992.0, 1e21, 0.1, -3.0, f64::NAN] {
            let mut out = Vec::new();
            super::Json::write(&f, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&f).unwrap(), "{f}");
        }
    }

    #[test]
    fn writes_what_serde_json_writes_for_the_same_object() {
        let v = json!({ "a": [1, { "b": "x\"y\n" }], "é": null });
        let text = super::Obj::new()
            .val("name", "step \"one\"")
            .val("at", &1764761234567.25f64)
            .val("n", &3u32)
            .val("value", &v)
            .raw("raw", r#"{"k":true}"#)
            .done();
        let back: Value = serde_json::from_str(&text).unwrap();
        let want = json!({ "name": "step \"one\"", "at": 1764761234567.25, "n": 3, "value": v, "raw": { "k": true } });
        assert_eq!(back, want);
        assert_eq!(text, want.to_string(), "the same text, key order included");
        assert_eq!(super::Obj::new().done(), "{}");
    }
}
