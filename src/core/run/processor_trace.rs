//! The processors' spans (SPEC §16.2) as the pipeline opens and ends them. Without the
//! `tracing` and `processors` features this is empty and every call is a no-op the build leaves out.

#[cfg(all(feature = "tracing", feature = "processors"))]
use std::rc::Rc;

use serde_json::Value;

use super::processors::{Halt, Phase};
use crate::core::chunk::Chunk;
use crate::core::env::Env;

/// How a processor call ended, for its span.
pub enum End<'a> {
    /// It returned (its value; `None` for `undefined`).
    Returned(Option<Value>),
    Halted(&'a Halt),
    /// The run was aborted while it ran.
    Aborted,
}

/// The run's tracer, when the run is traced.
#[derive(Default)]
pub struct ProcessorTrace<'a> {
    #[cfg(all(feature = "tracing", feature = "processors"))]
    inner: Option<(Rc<crate::core::tracing::Tracer>, &'a dyn Env)>,
    #[cfg(not(all(feature = "tracing", feature = "processors")))]
    inner: std::marker::PhantomData<&'a dyn Env>,
}

impl<'a> ProcessorTrace<'a> {
    #[cfg(all(feature = "tracing", feature = "processors"))]
    pub fn new(tracer: Option<Rc<crate::core::tracing::Tracer>>, env: &'a dyn Env) -> Self {
        ProcessorTrace { inner: tracer.map(|t| (t, env)) }
    }

    /// Opens the span of a call of `phase` given `args`; its id (`None`: not traced).
    pub fn start(&self, _phase: Phase, _id: &str, _args: &Value) -> Option<String> {
        #[cfg(all(feature = "tracing", feature = "processors"))]
        if let Some((t, env)) = &self.inner {
            return Some(t.processor_start(_phase, _id, _args, *env));
        }
        None
    }

    pub fn end(&self, span: Option<&str>, _end: End<'_>) {
        #[cfg(all(feature = "tracing", feature = "processors"))]
        if let (Some((t, env)), Some(span)) = (&self.inner, span) {
            t.processor_end(span, _end, *env);
        }
        let _ = span;
    }

    /// The `processOutputStream` span of processor `id`, shown `chunk`.
    pub fn stream(&self, _id: &str, _chunk: &Chunk) -> Option<String> {
        #[cfg(all(feature = "tracing", feature = "processors"))]
        if let Some((t, env)) = &self.inner {
            return Some(t.stream_span(_id, _chunk, *env));
        }
        None
    }

    /// What a `processOutputStream` call let through, or how it stopped.
    pub fn streamed(&self, span: Option<&str>, _result: Result<&[Chunk], End<'_>>) {
        #[cfg(all(feature = "tracing", feature = "processors"))]
        if let (Some((t, env)), Some(span)) = (&self.inner, span) {
            t.streamed(span, _result, *env);
        }
        let _ = span;
    }
}
