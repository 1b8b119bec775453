//! An AI SDK model object as `model` (`{ specificationVersion, provider, modelId, doStream }`):
//! the call options its `doStream` takes, built from a `ModelRequest`, and its stream parts
//! turned into `ModelEvent`s. Pure JSON in and out; the bindings call the object.

mod decode;
mod request;
#[cfg(test)]
mod tests;

pub use decode::{warnings_of, PartDecoder};
pub use request::call_options;
