//! A scorer's run in a trace of its own (SPEC §14.2, §16.2): a `scorer_run` root span whose
//! `scorer_step` children the scorer's steps make through a span handle, and the score event
//! every exporter's `onScoreEvent` gets. Both go to the scored run's exporters, redacted with
//! its secrets.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::{Scope, State, TraceRun, Tracer};
use crate::core::env::Env;
use crate::core::tracing::{new_id, redact};

impl Tracer {
    /// Starts scorer `scorer_id`'s run over `input` (`{ input, output }` of the scored run) in a
    /// new trace: the tracer whose root is its `scorer_run` span. Its spans carry the scored
    /// run's metadata and `targetTraceId` / `targetSpanId`.
    pub fn scorer_run(&self, scorer_id: &str, scorer_name: &str, input: Value, env: &dyn Env) -> Rc<Tracer> {
        let r = &self.run;
        let mut metadata = r.metadata.clone();
        metadata.insert("targetTraceId".into(), r.trace_id.clone().into());
        metadata.insert("targetSpanId".into(), r.root_id.clone().into());
        let run = TraceRun {
            exporter: r.exporter.clone(),
            trace_id: new_id(16, &mut |b| env.random_bytes(b)),
            root_id: new_id(8, &mut |b| env.random_bytes(b)),
            parent_span_id: None,
            external_parent_span_id: None,
            root_name: None,
            agent_id: scorer_id.into(),
            agent_name: scorer_name.into(),
            instructions: None,
            model_id: String::new(),
            provider: String::new(),
            tags: Vec::new(),
            metadata,
            root_metadata: Map::new(),
            request_context: None,
            hide_input: r.hide_input,
            hide_output: r.hide_output,
            input: Value::Null,
            secrets: r.secrets.clone(),
        };
        let mut attributes = Map::new();
        attributes.insert("scorerId".into(), scorer_id.into());
        attributes.insert("scorerName".into(), scorer_name.into());
        let entity = ("scorer".to_string(), scorer_id.to_string(), scorer_name.to_string());
        let t = Rc::new(Tracer { run, state: RefCell::new(State::default()), scope: Some(Scope { entity, attributes }) });
        let mut root = t.span(env, "scorer_run", format!("scorer run: '{scorer_id}'"), None);
        root.id = t.run.root_id.clone();
        root.is_root = true;
        root.input = Some(input);
        let mut out = Vec::new();
        t.open(root, &mut out);
        t.send(out);
        t
    }

    /// Gives every exporter's `onScoreEvent` `{ type: 'score', score }`, `score` being the
    /// scorer's fields with the run's `traceId`, `spanId` and `metadata`, redacted.
    pub fn score_event(&self, mut score: Map<String, Value>) {
        score.insert("traceId".into(), self.run.trace_id.clone().into());
        score.insert("spanId".into(), self.run.root_id.clone().into());
        score.insert("metadata".into(), Value::Object(self.run.metadata.clone()));
        let mut event = Map::new();
        event.insert("type".into(), "score".into());
        event.insert("score".into(), Value::Object(score));
        let mut event = Value::Object(event);
        redact::redact(&mut event, &self.run.secrets);
        self.run.exporter.score(&event);
    }
}
