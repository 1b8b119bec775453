//! OpenAI Chat Completions (`POST {base}/chat/completions`, streamed) and the providers that speak
//! it: the request builder and the stream decoder.
//!
//! Pure translation between `core::model` and the wire format; it never does I/O and never sees
//! JavaScript. The decoder is on the hot path of every reply, so it reads each chunk with the
//! `json` pull reader into a small struct that borrows from the event text, and allocates only
//! the strings it hands out.

mod decode;
mod request;
#[cfg(test)]
mod tests_request;
#[cfg(test)]
mod tests_stream;

pub use decode::ChatDecoder;
pub use request::build_request;
