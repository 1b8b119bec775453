//! Deciding and resuming (SPEC §19.3–19.4): `approveToolCall`, `declineToolCall`,
//! `resumeStream` and `listSuspendedRuns`, and the storage object's run methods.
//!
//! A decision on a run that is live here (its stream open) goes to that run's waiting call and
//! gets a second view of its chunks; otherwise the run is read from storage, claimed with a
//! compare-and-set, and resumed from its snapshot on a new output.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Object, Promise, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::agent::{Agent, Inner};
use super::convert::{copy_object, error_to_js, from_json, js_kind, read, to_json, to_json_strict, type_error};
use super::memory::MemoryInner;
use super::options::CallSetup;
use super::output::{AgentStreamOutput, Shared};
use super::run::spawn_run;
use super::suspend::{listed, problems};
use crate::core::abort::AbortFlag;
use crate::core::error::AgentError;
use crate::core::input::{parse_model_settings, parse_tool_choice};
use crate::core::memory::{InMemoryStore, Store};
use crate::core::model::ToolChoice;
use crate::core::options::CallOptions;
use crate::core::run::suspend::{restore, RunsCfg};
use crate::core::runs::{claim, load_suspended, pick_call, release, resume_error, RunFilter, RunRecord, RunStatus, WaitKind, WaitingCall};
use crate::core::tools::{Approvals, Decision};

thread_local! {
    static WARNED_RESUME_UNTIL_IDLE: Cell<bool> = const { Cell::new(false) };
}

/// The outputs of decisions on a live run.
pub type Views = Rc<RefCell<Vec<Rc<Shared>>>>;

/// A run whose stream is open here.
pub struct LiveRun {
    pub approvals: Rc<Approvals>,
    pub views: Views,
    abort: AbortFlag,
    /// This process claimed the stored record (`suspended` → `resuming`) for a decision.
    claimed: Cell<bool>,
}

impl LiveRun {
    pub fn new(approvals: Rc<Approvals>, abort: AbortFlag) -> Self {
        LiveRun { approvals, views: Rc::default(), abort, claimed: Cell::new(false) }
    }
}

/// The agent's run records go where its memory keeps threads when that storage has the run
/// methods. Without memory they go to the default storage (IndexedDB where it exists, so a run
/// survives a reload; else memory private to the agent); with a storage object that lacks the
/// methods, to memory private to the agent: a run can still be decided after its stream closed
/// in this page or process.
pub fn runs_store(memory: Option<&Rc<MemoryInner>>) -> Option<Rc<dyn Store>> {
    match memory {
        Some(m) if m.store.runs().is_some() => Some(m.store.clone()),
        Some(_) => Some(Rc::new(InMemoryStore::new())),
        None => Some(super::memory::default_store()),
    }
}

fn tool_choice_json(c: &ToolChoice) -> Value {
    match c {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Tool(name) => json!({ "type": "tool", "toolName": name }),
    }
}

/// The run-record settings of one turn, with what a resume restores (never a function or a key).
pub(super) fn runs_cfg(inner: &Inner, call: &CallSetup, opts: &CallOptions) -> RunsCfg {
    let restore = json!({
        "maxSteps": call.max_steps,
        "toolChoice": opts.tool_choice.as_ref().map(tool_choice_json),
        "activeTools": opts.active_tools,
        "requireToolApproval": opts.require_tool_approval,
        "modelSettings": Value::Object(opts.model_settings.sampling_json()),
    });
    RunsCfg { store: inner.runs_store.borrow().clone(), agent_id: inner.config.id.clone(), close_on_suspend: call.close_on_suspend, restore, auto_resume: call.auto_resume, auto_waits: Vec::new(), retain_ms: call.reconnect }
}

/// What the caller asked for.
enum Ask {
    Approve,
    Decline(Option<String>),
    Resume(Value),
}

impl Ask {
    fn want(&self) -> Option<WaitKind> {
        match self {
            Ask::Approve | Ask::Decline(_) => Some(WaitKind::Approval),
            Ask::Resume(_) => None,
        }
    }
}

/// Reads `runId` (required) and `toolCallId` (optional) of `args`.
fn ids(args: &JsValue, path: &str) -> Result<(String, Option<String>), JsValue> {
    if !args.is_object() {
        return Err(type_error(path, &format!("expected an object like {{ runId, toolCallId }}, got {}", js_kind(args))));
    }
    let run = read(args, "runId", path)?;
    let run_id = run.as_string().ok_or_else(|| type_error(&format!("{path}.runId"), &format!("expected a string, got {}", js_kind(&run))))?;
    let call = read(args, "toolCallId", path)?;
    let call_id = match call.as_string() {
        Some(s) => Some(s),
        None if call.is_undefined() || call.is_null() => None,
        None => return Err(type_error(&format!("{path}.toolCallId"), &format!("expected a string, got {}", js_kind(&call)))),
    };
    Ok((run_id, call_id))
}

#[wasm_bindgen]
impl Agent {
    /// Approves a call waiting for approval: it runs, and the run goes on. Resolves to the
    /// output of the run from the decision on; rejects with a `ResumeError` when nothing waits.
    #[wasm_bindgen(js_name = approveToolCall, unchecked_return_type = "Promise<AgentStreamOutput>")]
    pub fn approve_tool_call(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ runId: string; toolCallId?: string } & StreamOptions")] args: JsValue,
    ) -> Result<Promise, JsValue> {
        let (run_id, call_id) = ids(&args, "approveToolCall(args)")?;
        Ok(self.decide(args, run_id, call_id, Ask::Approve))
    }

    /// Declines a call waiting for approval: `tool-output-denied`, the model is told (with the
    /// reason) and `execute` never runs. Resolves like `approveToolCall`.
    #[wasm_bindgen(js_name = declineToolCall, unchecked_return_type = "Promise<AgentStreamOutput>")]
    pub fn decline_tool_call(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ runId: string; toolCallId?: string; reason?: string } & StreamOptions")] args: JsValue,
    ) -> Result<Promise, JsValue> {
        let (run_id, call_id) = ids(&args, "declineToolCall(args)")?;
        let reason = read(&args, "reason", "declineToolCall(args)")?;
        if !(reason.is_undefined() || reason.is_null() || reason.is_string()) {
            let got = js_kind(&reason);
            return Err(type_error("declineToolCall(args).reason", &format!("expected a string, got {got}")));
        }
        Ok(self.decide(args, run_id, call_id, Ask::Decline(reason.as_string())))
    }

    /// Resumes a suspended call with `resumeData` (checked against the tool's `resumeSchema`:
    /// `ValidationError`, and the call stays suspended), or decides an approval with
    /// `{ approved, reason? }`.
    #[wasm_bindgen(js_name = resumeStream, unchecked_return_type = "Promise<AgentStreamOutput>")]
    pub fn resume_stream(
        &self,
        #[wasm_bindgen(js_name = resumeData, unchecked_param_type = "unknown")] resume_data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ runId: string; toolCallId?: string } & StreamOptions")] options: JsValue,
    ) -> Result<Promise, JsValue> {
        let (run_id, call_id) = ids(&options, "resumeStream(resumeData, options)")?;
        let data = if resume_data.is_undefined() { Value::Null } else { to_json_strict(&resume_data, "resumeData").map_err(|e| error_to_js(&e))? };
        Ok(self.decide(options, run_id, call_id, Ask::Resume(data)))
    }

    /// The same as `resumeStream(resumeData, { ...options, untilIdle: { maxIdleMs } })`.
    /// @deprecated Use `agent.resumeStream(resumeData, { runId, untilIdle: true })` instead.
    #[wasm_bindgen(js_name = resumeStreamUntilIdle, unchecked_return_type = "Promise<AgentStreamOutput>")]
    pub fn resume_stream_until_idle(
        &self,
        #[wasm_bindgen(js_name = resumeData, unchecked_param_type = "unknown")] resume_data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ runId: string; toolCallId?: string; maxIdleMs?: number } & StreamOptions")] options: JsValue,
    ) -> Result<Promise, JsValue> {
        if !WARNED_RESUME_UNTIL_IDLE.with(|w| w.replace(true)) {
            super::report::warn("wasm-agent: agent.resumeStreamUntilIdle() is deprecated; use agent.resumeStream(resumeData, { runId, untilIdle: true }) instead");
        }
        const P: &str = "resumeStreamUntilIdle(resumeData, options)";
        ids(&options, P)?;
        let copy = copy_object(&options, "options")?;
        let max = read(&options, "maxIdleMs", P)?;
        let idle: JsValue = if max.is_undefined() {
            JsValue::TRUE
        } else {
            let o = Object::new();
            let _ = Reflect::set(&o, &"maxIdleMs".into(), &max);
            o.into()
        };
        let _ = Reflect::set(&copy, &"untilIdle".into(), &idle);
        let _ = Reflect::delete_property(&copy, &"maxIdleMs".into());
        self.resume_stream(resume_data, copy.into())
    }

    /// This agent's runs waiting for a decision in its storage: `{ runs, total }`.
    #[wasm_bindgen(js_name = listSuspendedRuns, unchecked_return_type = "Promise<{ runs: SuspendedRun[]; total: number }>")]
    pub fn list_suspended_runs(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ threadId?: string; resourceId?: string }")] filter: Option<JsValue>,
    ) -> Result<Promise, JsValue> {
        const F: &str = "listSuspendedRuns(filter)";
        let f = to_json(&filter.unwrap_or(JsValue::UNDEFINED), F).map_err(|e| error_to_js(&e))?;
        let s = |k: &str| crate::core::input::opt_str(&f, k, F).map(|v| v.map(str::to_owned)).map_err(|e| error_to_js(&e));
        let filter = RunFilter {
            agent_id: Some(self.inner.config.id.clone()),
            thread_id: s("threadId")?,
            resource_id: s("resourceId")?,
            statuses: vec![RunStatus::Suspended],
        };
        let store = self.inner.runs_store.borrow().clone();
        Ok(future_to_promise(async move {
            let runs = match store.as_ref().and_then(|s| s.runs()) {
                Some(r) => r.list_runs(&filter).await.map_err(|e| error_to_js(&e))?,
                None => Vec::new(),
            };
            let list: Vec<Value> = runs.iter().map(suspended_json).collect();
            Ok(from_json(&json!({ "total": list.len(), "runs": list })))
        }))
    }
}

fn suspended_json(r: &RunRecord) -> Value {
    let calls: Vec<Value> = r
        .waiting
        .iter()
        .map(|w| {
            let mut c = w.call.to_json();
            c["requiresApproval"] = (w.kind == WaitKind::Approval).into();
            if let Some(p) = &w.suspend_payload {
                c["suspendPayload"] = p.clone();
            }
            if let Some(s) = &w.resume_schema {
                c["resumeSchema"] = s.to_string().into();
            }
            c
        })
        .collect();
    json!({
        "runId": r.run_id, "status": "suspended", "threadId": r.thread_id, "resourceId": r.resource_id,
        "suspendedAt": crate::core::memory::iso_time(r.updated_at), "toolCalls": calls,
    })
}

impl Agent {
    fn decide(&self, options: JsValue, run_id: String, call_id: Option<String>, ask: Ask) -> Promise {
        let agent = Agent { inner: self.inner.clone() };
        future_to_promise(async move { agent.decide_async(options, run_id, call_id, ask).await.map(JsValue::from) })
    }

    /// The decision for `w`: resume data checked against its schema first.
    fn decision(&self, ask: Ask, w: Option<&WaitingCall>, tool_name: Option<&str>) -> Result<Decision, AgentError> {
        match ask {
            Ask::Approve => Ok(Decision::Approve),
            Ask::Decline(reason) => Ok(Decision::Decline { reason }),
            Ask::Resume(data) if w.is_some_and(|w| w.kind == WaitKind::Approval) => match data.get("approved").and_then(Value::as_bool) {
                Some(true) => Ok(Decision::Approve),
                Some(false) => Ok(Decision::Decline { reason: data.get("reason").and_then(Value::as_str).map(str::to_owned) }),
                None => Err(AgentError::Validation {
                    message: "resumeData for a call waiting for approval must be { approved: boolean, reason?: string }".into(),
                }),
            },
            Ask::Resume(data) => {
                let name = w.map(|w| w.call.tool_name.as_str()).or(tool_name).unwrap_or_default();
                let tool = self.inner.tools.iter().rev().find(|t| t.def.name == name);
                let mut found = match w.and_then(|w| w.resume_schema.as_ref()) {
                    Some(schema) => crate::core::schema::validate(schema, &data).into_iter().map(|e| (e.path, e.message)).collect(),
                    None => Vec::new(),
                };
                if let Some(standard) = tool.and_then(|t| t.resume_schema.as_ref()).filter(|s| s.1.is_some()) {
                    if found.is_empty() {
                        found = problems(standard, &data);
                    }
                }
                if !found.is_empty() {
                    return Err(AgentError::Validation { message: format!("resumeData does not match the resumeSchema of tool '{name}': {}", listed(&found)) });
                }
                Ok(Decision::Resume(data))
            }
        }
    }

    async fn decide_async(&self, options: JsValue, run_id: String, call_id: Option<String>, ask: Ask) -> Result<AgentStreamOutput, JsValue> {
        let err = |e: AgentError| error_to_js(&e);
        let inner = &self.inner;
        let store = inner.runs_store.borrow().clone();
        let runs = store.as_ref().and_then(|s| s.runs());
        let now = js_sys::Date::now();
        let live = inner.runs.borrow().iter().find(|(r, _)| *r == run_id).map(|(_, l)| l.clone());
        if let Some(live) = live {
            let rec = match runs {
                Some(r) => r.get_run(&run_id).await.map_err(err)?,
                None => None,
            };
            let (id, waiting) = match (&rec, &call_id) {
                (Some(rec), _) => {
                    let w = pick_call(&rec.waiting, &run_id, call_id.as_deref(), ask.want()).map_err(err)?;
                    (w.call.tool_call_id.clone(), Some(w.clone()))
                }
                (None, Some(id)) => (id.clone(), None),
                (None, None) => return Err(err(resume_error("not-waiting", format!("no call is waiting in run '{run_id}'")))),
            };
            if !live.approvals.is_waiting(&id) {
                return Err(err(resume_error("not-waiting", format!("tool call '{id}' is not waiting in run '{run_id}'"))));
            }
            let decision = self.decision(ask, waiting.as_ref(), None).map_err(err)?;
            if let (Some(r), Some(rec)) = (runs, &rec) {
                if rec.status == RunStatus::Suspended {
                    claim(r, &run_id, now).await.map_err(err)?;
                    live.claimed.set(true);
                } else if !(rec.status == RunStatus::Resuming && live.claimed.get()) {
                    return Err(err(resume_error("in-progress", format!("run '{run_id}' is already being resumed (another decision on it is under way)"))));
                }
            }
            let view = Shared::new(run_id.clone(), live.abort.clone());
            live.views.borrow_mut().push(view.clone());
            if !live.approvals.decide(&id, decision) {
                live.views.borrow_mut().retain(|v| !Rc::ptr_eq(v, &view));
                return Err(err(resume_error("not-waiting", format!("tool call '{id}' is not waiting in run '{run_id}'"))));
            }
            return Ok(AgentStreamOutput::new(view));
        }
        let agent_id = inner.config.id.clone();
        let Some(runs) = runs else {
            return Err(err(resume_error("not-found", format!("could not find a suspended run for runId '{run_id}': agent '{agent_id}' keeps no run records"))));
        };
        let rec = load_suspended(runs, &run_id, &agent_id, now).await.map_err(err)?;
        let w = pick_call(&rec.waiting, &run_id, call_id.as_deref(), ask.want()).map_err(err)?.clone();
        let decision = self.decision(ask, Some(&w), None).map_err(err)?;
        claim(runs, &run_id, now).await.map_err(err)?;
        match self.resume_turn(&options, &rec, (w.call.tool_call_id.clone(), decision)) {
            Ok(out) => Ok(out),
            Err(e) => {
                let _ = release(runs, &run_id, js_sys::Date::now()).await;
                Err(e)
            }
        }
    }

    /// Starts the resumed run on a new output.
    fn resume_turn(&self, options: &JsValue, rec: &RunRecord, decision: (String, Decision)) -> Result<AgentStreamOutput, JsValue> {
        let opts: Object = copy_object(options, "options")?;
        for k in ["runId", "toolCallId", "reason"] {
            let _ = Reflect::delete_property(&opts, &k.into());
        }
        let _ = Reflect::set(&opts, &"runId".into(), &rec.run_id.as_str().into());
        let no_memory = Reflect::get(&opts, &"memory".into()).map(|m| m.is_undefined() || m.is_null()).unwrap_or(true);
        if let (true, Some(_), Some(thread), Some(resource)) = (no_memory, &self.inner.memory, &rec.thread_id, &rec.resource_id) {
            let _ = Reflect::set(&opts, &"memory".into(), &from_json(&json!({ "thread": thread, "resource": resource })));
        }
        let call = self.parse_call(&opts.into())?;
        let mut turn = self.turn(Vec::new(), &call, None)?;
        let restored = restore(rec, decision).map_err(|e| error_to_js(&e))?;
        let saved = rec.snapshot.as_ref().and_then(|s| s.get("options")).cloned().unwrap_or(Value::Null);
        apply_saved(&mut turn.cfg, &saved);
        turn.cfg.resume = Some(restored);
        let idle = self.idle_setup(&call, &turn);
        let shared = Shared::new(turn.run_id.clone(), turn.abort.clone());
        shared.set_trace(turn.trace.clone());
        spawn_run(turn, shared.clone(), call, idle);
        Ok(AgentStreamOutput::new(shared))
    }
}

/// The call settings a snapshot restores over the resuming call's.
fn apply_saved(cfg: &mut crate::core::run::RunConfig, saved: &Value) {
    if let Some(n) = saved.get("maxSteps").and_then(Value::as_u64) {
        cfg.max_steps = n.min(u32::MAX as u64) as u32;
    }
    if let Some(c) = saved.get("toolChoice").filter(|c| !c.is_null()).and_then(|c| parse_tool_choice(c, "snapshot.toolChoice").ok()) {
        cfg.tool_choice = Some(c);
    }
    if let Some(Value::Array(active)) = saved.get("activeTools") {
        cfg.active_tools = Some(active.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect());
    }
    if let Some(b) = saved.get("requireToolApproval").and_then(Value::as_bool) {
        cfg.require_tool_approval = b;
    }
    if let Some(m) = saved.get("modelSettings").filter(|m| m.as_object().is_some_and(|o| !o.is_empty())) {
        if let Ok(s) = parse_model_settings(m, "snapshot.modelSettings") {
            let headers = std::mem::take(&mut cfg.request.settings.headers);
            cfg.request.settings = s;
            cfg.request.settings.headers = headers;
        }
    }
}
