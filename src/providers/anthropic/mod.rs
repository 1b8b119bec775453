//! Anthropic Messages (`POST {base}/messages`, streamed): the request builder and the stream
//! decoder.
//!
//! Pure translation between `core::model` and the wire format; it never does I/O and never sees
//! JavaScript. As in `openai_chat`, the decoder reads each event with the `json` pull reader into
//! a small struct that borrows from the event text, and allocates only the strings it hands out.

mod decode;
mod request;
#[cfg(test)]
mod tests_request;
#[cfg(test)]
mod tests_stream;

pub use decode::AnthropicDecoder;
pub use request::build_request;
