//! `processor_run` spans (SPEC §16.2): one per processor method call, under the run's root for
//! `processInput` / `processOutputResult` and under the step for the step phases. A
//! `processOutputStream` runs per chunk, so each processor has one span per step covering its
//! stream: what it was shown and what it let through (`{ chunks, text }`).

use serde_json::{json, Map, Value};

use super::{Events, Tracer};
use crate::core::chunk::Chunk;
use crate::core::env::Env;
use crate::core::run::processor_trace::End as ProcessorEnd;
use crate::core::run::processors::{Halt, Phase};
use crate::core::tracing::ErrorInfo;

/// `input processor: <id>` / `output processor: <id>`.
pub fn processor_span_name(phase: Phase, id: &str) -> String {
    format!("{} processor: {id}", if phase.is_input() { "input" } else { "output" })
}

/// `processorPhase`.
fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Input => "input",
        Phase::InputStep => "inputStep",
        Phase::OutputStream => "outputStream",
        Phase::OutputStep => "outputStep",
        Phase::OutputResult => "outputResult",
    }
}

/// What a span keeps of stream chunks: how many, and the text of their text deltas.
fn add_chunks(v: &mut Option<Value>, chunks: &[Chunk]) {
    let o = v.get_or_insert_with(|| json!({ "chunks": 0, "text": "" }));
    let n = o["chunks"].as_u64().unwrap_or(0) + chunks.len() as u64;
    o["chunks"] = n.into();
    let mut text = o["text"].as_str().unwrap_or_default().to_string();
    for c in chunks {
        if let Chunk::TextDelta { text: t, .. } = c {
            text.push_str(t);
        }
    }
    o["text"] = text.into();
}

impl Tracer {
    fn processor_span(&self, phase: Phase, id: &str, parent: String, env: &dyn Env, out: &mut Events) -> String {
        let mut s = self.span(env, "processor_run", processor_span_name(phase, id), Some(parent));
        s.entity = Some(("processor".into(), id.into(), id.into()));
        s.attributes.insert("processorPhase".into(), phase_name(phase).into());
        self.open(s, out)
    }

    /// The step a step phase's span goes under: the open one, else (`processInputStep` runs
    /// before its step's request) the next step, opened now.
    fn step_for(&self, env: &dyn Env, out: &mut Events) -> String {
        if let Some(s) = self.state.borrow().step.clone() {
            return s;
        }
        let id = self.open_step(env, out);
        self.state.borrow_mut().early_step = true;
        id
    }

    /// Opens the span of one call of `phase` (not `processOutputStream`) with what the
    /// processor is given; its id.
    pub fn processor_start(&self, phase: Phase, id: &str, input: &Value, env: &dyn Env) -> String {
        let mut out = Vec::new();
        let parent = match phase {
            Phase::Input | Phase::OutputResult => self.run.root_id.clone(),
            _ => self.step_for(env, &mut out),
        };
        let span = self.processor_span(phase, id, parent, env, &mut out);
        self.edit(&span, |s| s.input = Some(input.clone()));
        self.send(out);
        span
    }

    /// Ends a processor's span: its output, the tripwire it set off (`tripwireAbort`), or the
    /// error it threw.
    pub fn processor_end(&self, span: &str, end: ProcessorEnd<'_>, env: &dyn Env) {
        self.edit(span, |s| match end {
            ProcessorEnd::Returned(v) => {
                if v.is_some() {
                    s.output = v;
                }
            }
            ProcessorEnd::Halted(Halt::Abort { reason, retry, metadata }) => {
                let mut t = Map::new();
                t.insert("reason".into(), reason.clone().into());
                t.insert("retry".into(), (*retry).into());
                if let Some(m) = metadata {
                    t.insert("metadata".into(), m.clone());
                }
                s.attributes.insert("tripwireAbort".into(), Value::Object(t));
            }
            ProcessorEnd::Halted(Halt::Threw(message)) => {
                s.error_info = Some(ErrorInfo { name: "ProcessorError".into(), message: message.clone(), code: None });
            }
            ProcessorEnd::Aborted => {
                s.error_info = Some(ErrorInfo { name: "AbortError".into(), message: "The run was aborted".into(), code: None });
            }
        });
        let mut out = Vec::new();
        self.close(span, env.now_ms(), None, &mut out);
        self.send(out);
    }

    /// The `processOutputStream` span of processor `id` for `chunk` (opened with the step's
    /// first chunk, ended with the step), with `chunk` added to what it was shown.
    pub fn stream_span(&self, id: &str, chunk: &Chunk, env: &dyn Env) -> String {
        let mut out = Vec::new();
        let found = {
            let mut st = self.state.borrow_mut();
            let open: Vec<String> = st.open.iter().map(|s| s.id.clone()).collect();
            st.streams.retain(|(_, s)| open.contains(s));
            st.streams.iter().find(|(p, _)| p == id).map(|(_, s)| s.clone())
        };
        let span = found.unwrap_or_else(|| {
            // `step-start` itself goes through the processors before the tracer sees it.
            let parent = if matches!(chunk, Chunk::StepStart { .. }) { self.step_for(env, &mut out) } else { self.current_step() };
            let span = self.processor_span(Phase::OutputStream, id, parent, env, &mut out);
            self.state.borrow_mut().streams.push((id.into(), span.clone()));
            span
        });
        self.edit(&span, |s| add_chunks(&mut s.input, std::slice::from_ref(chunk)));
        self.send(out);
        span
    }

    /// What a `processOutputStream` call let through; a halt ends its span.
    pub fn streamed(&self, span: &str, result: Result<&[Chunk], ProcessorEnd<'_>>, env: &dyn Env) {
        match result {
            Ok(chunks) => {
                self.edit(span, |s| add_chunks(&mut s.output, chunks));
            }
            Err(end) => self.processor_end(span, end, env),
        }
    }
}
