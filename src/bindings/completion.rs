//! `isTaskComplete` (SPEC §15) on the JavaScript side: the option read and checked (a TypeError
//! naming the field), and the host through which the core's completion check runs the user's
//! scorers and awaits `onComplete`. The check itself — deadline, order, verdict, feedback — is
//! `core::completion`'s.

use std::rc::Rc;

use js_sys::{Array, Function, Map, Object, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{from_json, js_kind, read, type_error};
use super::report::callback_failed;
use super::tools::{call_async, thrown_message};
use crate::core::completion::{CompletionCheck, CompletionScorers, ScorerInfo, Strategy};
use crate::core::env::LocalFuture;

#[wasm_bindgen(typescript_custom_section)]
const TS_COMPLETION: &'static str = r#"
/** One scorer's part of a completion check. */
export interface CompletionScorerResult {
  scorerId: string;
  scorerName: string;
  score: number;
  passed: boolean;
  reason?: string;
  duration: number;
  errored?: boolean;
}
/** What `onComplete` gets after each completion check. */
export interface CompletionRunResult {
  complete: boolean;
  completionReason?: string;
  scorers: CompletionScorerResult[];
  totalDuration: number;
  timedOut: boolean;
}
/** `isTaskComplete`: scorers that judge a step that would end the run; a failed check runs another step. */
export interface IsTaskCompleteConfig {
  scorers: ScorerLike[];
  /** `all` (default): every scorer scored 1; `any`: one did. */
  strategy?: 'all' | 'any';
  /** Run the scorers at once (default) or in order, stopping once the verdict is known. */
  parallel?: boolean;
  /** One deadline in ms for the whole check (default 600000). */
  timeout?: number;
  onComplete?: (result: CompletionRunResult) => void | Promise<void>;
  /** The report of a failed check is sent to the model but never stored in memory. */
  suppressFeedback?: boolean;
}
export interface StreamOptions {
  /** After a step that would end the run, these scorers judge its text (SPEC §15). */
  isTaskComplete?: IsTaskCompleteConfig;
}
"#;

/// `isTaskComplete`, read and checked; the scorers are the user's objects.
pub(crate) struct CompletionSetup {
    scorers: Vec<JsValue>,
    infos: Vec<ScorerInfo>,
    strategy: Strategy,
    parallel: bool,
    timeout_ms: u64,
    suppress_feedback: bool,
    on_complete: Option<Function>,
}

fn boolean(v: &JsValue, field: &str, default: bool) -> Result<bool, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(default);
    }
    v.as_bool().ok_or_else(|| type_error(field, &format!("expected a boolean, got {}", js_kind(v))))
}

/// `isTaskComplete` as given; `None` when absent.
pub(crate) fn parse(v: &JsValue, field: &str) -> Result<Option<Rc<CompletionSetup>>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if !v.is_object() || Array::is_array(v) {
        let got = js_kind(v);
        return Err(type_error(field, &format!("expected {{ scorers, strategy?, parallel?, timeout?, onComplete?, suppressFeedback? }}, got {got}")));
    }
    let at = |k: &str| format!("{field}.{k}");
    let list = read(v, "scorers", field)?;
    if !Array::is_array(&list) {
        let got = js_kind(&list);
        return Err(type_error(&at("scorers"), &format!("expected an array of scorers (createScorer(...)), got {got}")));
    }
    let mut scorers = Vec::new();
    let mut infos = Vec::new();
    for (i, s) in Array::from(&list).iter().enumerate() {
        let path = format!("{field}.scorers[{i}]");
        if !(s.is_object() && read(&s, "run", &path)?.is_function()) {
            let got = js_kind(&s);
            return Err(type_error(&path, &format!("expected a scorer with run() (createScorer(...)), got {got}")));
        }
        let Some(id) = read(&s, "id", &path)?.as_string().filter(|id| !id.is_empty()) else {
            return Err(type_error(&format!("{path}.id"), "expected a non-empty string"));
        };
        let name = read(&s, "name", &path)?.as_string().unwrap_or_else(|| id.clone());
        infos.push(ScorerInfo { id, name });
        scorers.push(s);
    }
    let strategy = match read(v, "strategy", field)? {
        s if s.is_undefined() || s.is_null() => Strategy::All,
        s => match s.as_string().as_deref() {
            Some("all") => Strategy::All,
            Some("any") => Strategy::Any,
            _ => return Err(type_error(&at("strategy"), &format!("expected 'all' or 'any', got {}", js_kind(&s)))),
        },
    };
    let timeout = read(v, "timeout", field)?;
    let timeout_ms = if timeout.is_undefined() || timeout.is_null() {
        600_000
    } else {
        match timeout.as_f64() {
            Some(ms) if ms.is_finite() && ms >= 0.0 => ms.ceil() as u64,
            _ => return Err(type_error(&at("timeout"), &format!("expected a number of milliseconds, got {}", js_kind(&timeout)))),
        }
    };
    let on_complete = match read(v, "onComplete", field)? {
        f if f.is_undefined() || f.is_null() => None,
        f => Some(f.dyn_into::<Function>().map_err(|f| type_error(&at("onComplete"), &format!("expected a function, got {}", js_kind(&f))))?),
    };
    Ok(Some(Rc::new(CompletionSetup {
        scorers,
        infos,
        strategy,
        parallel: boolean(&read(v, "parallel", field)?, &at("parallel"), true)?,
        timeout_ms,
        suppress_feedback: boolean(&read(v, "suppressFeedback", field)?, &at("suppressFeedback"), false)?,
        on_complete,
    })))
}

/// Who the run is, for the scorers' context.
pub(crate) struct RunOf<'a> {
    pub run_id: &'a str,
    pub agent_id: &'a str,
    pub agent_name: &'a str,
    pub request_context: &'a JsValue,
}

impl CompletionSetup {
    /// The core's check for one run.
    pub(crate) fn check(&self, run: RunOf<'_>) -> CompletionCheck {
        let host = JsCompletion {
            scorers: self.scorers.clone(),
            on_complete: self.on_complete.clone(),
            run_id: run.run_id.to_string(),
            agent_id: run.agent_id.to_string(),
            agent_name: run.agent_name.to_string(),
            request_context: run.request_context.clone(),
        };
        CompletionCheck {
            scorers: self.infos.clone(),
            strategy: self.strategy,
            parallel: self.parallel,
            timeout_ms: self.timeout_ms,
            suppress_feedback: self.suppress_feedback,
            host: Rc::new(host),
        }
    }
}

struct JsCompletion {
    scorers: Vec<JsValue>,
    on_complete: Option<Function>,
    run_id: String,
    agent_id: String,
    agent_name: String,
    request_context: JsValue,
}

fn set(o: &Object, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &k.into(), v);
}

impl JsCompletion {
    /// `customContext`: the request context's entries as an object.
    fn custom_context(&self) -> JsValue {
        let rc = &self.request_context;
        if let Some(map) = rc.dyn_ref::<Map>() {
            return Object::from_entries(map).map(JsValue::from).unwrap_or(JsValue::UNDEFINED);
        }
        if rc.is_object() { rc.clone() } else { JsValue::UNDEFINED }
    }

    async fn run_scorer(&self, index: usize, ctx: &Value) -> Result<(f64, Option<String>), String> {
        let scorer = self.scorers.get(index).ok_or("no such scorer")?;
        let context = from_json(ctx);
        let c = Object::unchecked_from_js_ref(&context);
        set(c, "agentId", &self.agent_id.as_str().into());
        set(c, "agentName", &self.agent_name.as_str().into());
        set(c, "customContext", &self.custom_context());
        let arg = Object::new();
        set(&arg, "runId", &self.run_id.as_str().into());
        set(&arg, "input", &context);
        set(&arg, "output", &ctx["currentText"].as_str().unwrap_or_default().into());
        set(&arg, "requestContext", &self.request_context);
        let run = Reflect::get(scorer, &"run".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()).ok_or("the scorer has no run()")?;
        let out = call_async(&run, scorer, &[&arg]).await.map_err(|e| thrown_message(&e))?;
        let score = Reflect::get(&out, &"score".into()).ok().and_then(|s| s.as_f64()).filter(|s| s.is_finite());
        let Some(score) = score else { return Err("the scorer gave no finite score".into()) };
        let reason = Reflect::get(&out, &"reason".into()).ok().and_then(|r| r.as_string());
        Ok((score, reason))
    }
}

impl CompletionScorers for JsCompletion {
    fn score<'a>(&'a self, index: usize, ctx: &'a Value) -> LocalFuture<'a, Result<(f64, Option<String>), String>> {
        Box::pin(self.run_scorer(index, ctx))
    }

    fn completed<'a>(&'a self, result: &'a Value) -> LocalFuture<'a, ()> {
        Box::pin(async move {
            let Some(f) = &self.on_complete else { return };
            if let Err(e) = call_async(f, &JsValue::UNDEFINED, &[&from_json(result)]).await {
                callback_failed("isTaskComplete.onComplete", &e);
            }
        })
    }
}
