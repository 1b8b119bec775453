//! Scorers on an agent run (SPEC §14.2). The scorers themselves are JavaScript
//! (pkg-template/scorers.js, which registers its runner here through `__setScoreRunner`); this
//! side checks the `scorers` records where they are given (a TypeError naming the field), picks
//! the record that applies to a call, and once a run ended well — after memory was written and
//! the stream closed — hands the runner what a scorer gets (`run`), whose promise is `out.scores`.

use std::cell::RefCell;

use js_sys::{Array, Function, Object, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{from_json, js_kind, object_keys, read, type_error};
use super::output::Shared;

#[wasm_bindgen(typescript_custom_section)]
const TS_SCORERS: &'static str = r#"
/** A scorer as the agent options take it: `createScorer(...)` with its steps chained. */
export interface ScorerLike {
  readonly id: string;
  readonly name?: string;
  readonly description?: string;
  run(input: any): Promise<{ score: number; reason?: string; [key: string]: any }>;
}
/** Which runs a scorer scores: every run (`none`, the default), or those whose id hashes below `rate`. */
export type ScoringSampling = { type: 'none' } | { type: 'ratio'; rate: number };
/** One entry of `scorers`: a scorer, or the id of one registered with `new Mastra({ scorers })`. */
export interface ScorerEntry {
  scorer: ScorerLike | string;
  sampling?: ScoringSampling;
}
/** One score of `out.scores`. */
export interface ScoreResult {
  scorerId: string;
  scorerName: string;
  score: number;
  reason?: string;
  runId: string;
  traceId?: string;
  spanId?: string;
  source: 'LIVE';
}
/** A score as a store keeps it (`saveScore`): the scorer's row with its `id` and times. */
export interface ScoreRow {
  id: string;
  scorerId: string;
  entityId: string;
  entityType: string;
  runId: string;
  score: number;
  reason?: string;
  source: string;
  createdAt: string;
  updatedAt: string;
  [key: string]: unknown;
}
/** What `listScores` filters on (every one given must match). */
export interface ScoreFilter {
  runId?: string;
  scorerId?: string;
  entityId?: string;
  entityType?: string;
  source?: string;
}
/** What a scorer gets of a run (`returnScorerData: true` puts it in the full output). */
export interface ScoringData {
  input: {
    inputMessages: StorageMessage[];
    rememberedMessages: StorageMessage[];
    systemMessages: { role: 'system'; content: string }[];
    taggedSystemMessages: Record<string, unknown>;
  };
  output: StorageMessage[];
}
export interface StreamOptions {
  /** Scorers run after the run ended well (after memory is written); replaces the agent's for this call. */
  scorers?: Record<string, ScorerEntry>;
  /** `getFullOutput()` carries `scoringData`: what a scorer gets of the run. */
  returnScorerData?: boolean;
}
export interface AgentConfig {
  /** Scorers for every run of the agent (a call's `scorers` replaces them). */
  scorers?: Record<string, ScorerEntry>;
}
export interface MastraConfig {
  /** Scorers that agents' `scorers` entries may name by id (or by key). */
  scorers?: Record<string, ScorerLike>;
  /** Its `saveScore(row)`, when it has one, stores every score of the agents' runs. */
  storage?: { saveScore?(row: Record<string, unknown>): Promise<unknown> | unknown; [method: string]: any };
}
export interface FullOutput {
  /** With `returnScorerData: true`: what a scorer gets of the run. */
  scoringData?: ScoringData;
}
"#;

thread_local! {
    /// `runAgentScorers` of pkg-template/scorers.js.
    static RUNNER: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers the function that runs an agent's scorers (pkg-template/api.js does, once).
#[doc(hidden)]
#[wasm_bindgen(js_name = __setScoreRunner, skip_typescript)]
pub fn set_score_runner(runner: JsValue) {
    if let Ok(f) = runner.dyn_into::<Function>() {
        RUNNER.with(|r| *r.borrow_mut() = Some(f));
    }
}

/// A `scorers` record as given (`name → { scorer, sampling? }`), checked; `None` when absent.
pub(crate) fn check_scorers(v: &JsValue, field: &str) -> Result<Option<JsValue>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    #[cfg(not(feature = "scorers"))]
    return Err(super::convert::error_to_js(&crate::core::features::not_built(field, "scorers", "scorers")));
    if !v.is_object() || Array::is_array(v) {
        let got = js_kind(v);
        return Err(type_error(field, &format!("expected a record of {{ scorer, sampling? }} by name, got {got}")));
    }
    let keys = object_keys(v).map_err(|_| type_error(field, "could not be read"))?;
    for k in keys.iter() {
        let name = k.as_string().unwrap_or_default();
        let at = format!("{field}.{name}");
        let entry = read(v, &name, field)?;
        if !entry.is_object() {
            let got = js_kind(&entry);
            return Err(type_error(&at, &format!("expected {{ scorer, sampling? }}, got {got}")));
        }
        let scorer = read(&entry, "scorer", &at)?;
        let ok = match scorer.as_string() {
            Some(id) => !id.is_empty(),
            None => scorer.is_object() && read(&scorer, "run", &format!("{at}.scorer"))?.is_function(),
        };
        if !ok {
            let got = js_kind(&scorer);
            return Err(type_error(&format!("{at}.scorer"), &format!("expected a scorer (createScorer(...)) or the id of one registered with new Mastra({{ scorers }}), got {got}")));
        }
        check_sampling(&read(&entry, "sampling", &at)?, &format!("{at}.sampling"))?;
    }
    Ok(Some(v.clone()))
}

/// `sampling`: `{ type: 'none' }` or `{ type: 'ratio', rate }` with `rate` in 0–1. Another type
/// is let through: that scorer is skipped at run time with a warning (SPEC §14.2).
fn check_sampling(v: &JsValue, field: &str) -> Result<(), JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(());
    }
    if !v.is_object() {
        let got = js_kind(v);
        return Err(type_error(field, &format!("expected {{ type: 'none' }} or {{ type: 'ratio', rate }}, got {got}")));
    }
    let kind = read(v, "type", field)?;
    if kind.as_string().as_deref() == Some("ratio") {
        let rate = read(v, "rate", field)?;
        if !rate.as_f64().is_some_and(|r| (0.0..=1.0).contains(&r)) {
            let got = js_kind(&rate);
            return Err(type_error(&format!("{field}.rate"), &format!("expected a number from 0 to 1, got {got}")));
        }
    } else if !kind.is_string() {
        let got = js_kind(&kind);
        return Err(type_error(&format!("{field}.type"), &format!("expected 'none' or 'ratio', got {got}")));
    }
    Ok(())
}

/// `new Mastra({ scorers })`: a record of scorers by name, checked.
pub(crate) fn check_registered(v: &JsValue, field: &str) -> Result<JsValue, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(JsValue::UNDEFINED);
    }
    if !v.is_object() || Array::is_array(v) {
        let got = js_kind(v);
        return Err(type_error(field, &format!("expected a record of scorers by name, got {got}")));
    }
    let keys = object_keys(v).map_err(|_| type_error(field, "could not be read"))?;
    for k in keys.iter() {
        let name = k.as_string().unwrap_or_default();
        let s = read(v, &name, field)?;
        if !(s.is_object() && read(&s, "run", &format!("{field}.{name}"))?.is_function()) {
            let got = js_kind(&s);
            return Err(type_error(&format!("{field}.{name}"), &format!("expected a scorer (createScorer(...)), got {got}")));
        }
    }
    Ok(v.clone())
}

/// What scoring a run needs besides the run's own data.
pub struct ScoreJob {
    /// The record that applies (the call's, else the agent's); `None`: scoring data only.
    pub scorers: Option<JsValue>,
    /// The scorers registered with the agent's `Mastra`, by name.
    pub registered: JsValue,
    /// The storage objects whose `saveScore` gets the rows (the memory's, the Mastra's).
    pub storages: Vec<JsValue>,
    pub agent_id: String,
    pub agent_name: String,
    pub request_context: JsValue,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    pub structured_output: bool,
    /// `returnScorerData`: the full output carries `scoringData`.
    pub return_data: bool,
    /// The run's tracer: scores carry its ids, scorers trace into their own traces and every
    /// exporter's `onScoreEvent` gets the scores.
    #[cfg(feature = "tracing")]
    pub tracer: Option<std::rc::Rc<crate::core::tracing::Tracer>>,
}

impl ScoreJob {
    /// Starts the scorers of a run that ended well with scoring `data` (`{ input, output }`);
    /// `out.scores` settles with what they give. Without a job, data or runner: `[]`.
    pub fn start(job: Option<&ScoreJob>, data: Option<&Value>, run_id: &str, shared: &Shared) {
        let runner = RUNNER.with(|r| r.borrow().clone());
        let scores = match (job, data, runner) {
            (Some(job), Some(data), Some(runner)) if job.scorers.is_some() => runner.call1(&JsValue::UNDEFINED, &job.args(data, run_id)).ok(),
            _ => None,
        };
        shared.settle_scores(scores.unwrap_or_else(|| Array::new().into()));
    }

    /// `{ run, scorers, registered, storages }` for the runner.
    fn args(&self, data: &Value, run_id: &str) -> JsValue {
        let set = |o: &Object, k: &str, v: &JsValue| {
            let _ = Reflect::set(o, &k.into(), v);
        };
        let run = Object::new();
        set(&run, "runId", &run_id.into());
        set(&run, "input", &from_json(data.get("input").unwrap_or(&Value::Null)));
        set(&run, "output", &from_json(data.get("output").unwrap_or(&Value::Null)));
        set(&run, "requestContext", &self.request_context);
        let entity = Object::new();
        set(&entity, "id", &self.agent_id.as_str().into());
        set(&entity, "name", &self.agent_name.as_str().into());
        set(&run, "entity", &entity);
        set(&run, "entityType", &"AGENT".into());
        set(&run, "source", &"LIVE".into());
        if let Some(t) = &self.thread_id {
            set(&run, "threadId", &t.as_str().into());
        }
        if let Some(r) = &self.resource_id {
            set(&run, "resourceId", &r.as_str().into());
        }
        set(&run, "structuredOutput", &self.structured_output.into());
        let args = Object::new();
        set(&args, "run", &run);
        set(&args, "scorers", self.scorers.as_ref().unwrap_or(&JsValue::UNDEFINED));
        set(&args, "registered", &self.registered);
        let storages = Array::new();
        for s in &self.storages {
            storages.push(s);
        }
        set(&args, "storages", &storages);
        #[cfg(all(feature = "tracing", feature = "scorers"))]
        if let Some(t) = &self.tracer {
            set(&args, "traceId", &t.trace_id().into());
            set(&args, "spanId", &t.root_id().into());
            set(&args, "tracing", &score_tracing(t));
        }
        args.into()
    }
}

/// `{ start(scorerId, scorerName, input), score(fields) }` for the runner: `start` opens a
/// scorer's `scorer_run` span in a trace of its own and returns its handle (the steps are its
/// child spans); `score` hands a score to the exporters' `onScoreEvent`.
#[cfg(all(feature = "tracing", feature = "scorers"))]
fn score_tracing(t: &std::rc::Rc<crate::core::tracing::Tracer>) -> JsValue {
    use super::span_handle::SpanHandle;
    use crate::platform::JsEnv;
    let o = Object::new();
    let run = t.clone();
    let start = Closure::<dyn Fn(String, String, JsValue) -> JsValue>::new(move |id: String, name: String, input: JsValue| {
        let input = super::convert::to_json(&input, "scorer input").unwrap_or(Value::Null);
        let scorer = run.scorer_run(&id, &name, input, &JsEnv);
        SpanHandle::new(&scorer, scorer.root_id().to_string(), format!("scorer run: '{id}'"), "scorer_run".into()).into()
    });
    let run = t.clone();
    let score = Closure::<dyn Fn(JsValue)>::new(move |fields: JsValue| {
        if let Ok(Value::Object(m)) = super::convert::to_json(&fields, "score") {
            run.score_event(m);
        }
    });
    let _ = Reflect::set(&o, &"start".into(), &start.into_js_value());
    let _ = Reflect::set(&o, &"score".into(), &score.into_js_value());
    o.into()
}
