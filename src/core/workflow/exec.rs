//! Runs a workflow's nodes in order: each step with its events, records and retries; parallel
//! and branch steps at once (their events interleave as they happen); loops; `foreach` with a
//! concurrency limit and results in input order; `map`; sleeps. Cancel stops before the next step.

use std::rc::Rc;

use futures_util::future::join_all;
use serde_json::{json, Map, Value};

use super::context::{ResumePlan, Scope};
use super::forms::{exec_foreach, exec_map, exec_sleep};
use super::graph::{Body, Node, Schema, StepDef};
use super::host::{Failure, StepCall, StepCtx};
use super::text::Obj;
use crate::core::env::LocalFuture;
use crate::core::error::AgentError;
use crate::core::schema;

/// How a node, a step or a whole workflow level ended.
#[derive(Debug)]
pub enum Outcome {
    Success(Value),
    Failed(Failure),
    Suspended,
    /// `bail(result)`: the workflow ends successfully with `result`.
    Bailed(Value),
    Canceled,
}

/// How one call of a step's body ended.
pub(super) enum BodyOut {
    Ok(Value),
    Err(Failure),
    /// The payload, and the inner paths when the body is a nested workflow.
    Suspended(Value, Vec<Vec<String>>),
    Bailed(Value),
    Canceled,
}

/// What a loop or a resume adds to one step execution.
#[derive(Default, Clone)]
pub struct Extra {
    pub iteration: Option<u32>,
    /// `(resumeData, suspendPayload)` of the step that resumes.
    pub resume: Option<(Value, Value)>,
    /// The plan of a nested workflow step that resumes inside.
    pub nested: Option<Rc<ResumePlan>>,
}

/// On a resume: what an earlier run of this step says. `Err(outcome)`: the step does not run
/// again (it finished, or it stays suspended); `Ok(extra)`: it runs, maybe as the resumed step.
fn prior(scope: &Rc<Scope>, step: &StepDef, extra: Extra) -> Result<Extra, Outcome> {
    let Some(plan) = scope.plan() else { return Ok(extra) };
    // Once per step: a loop's later iterations run anew.
    if plan.used.borrow().contains(&step.id) {
        return Ok(extra);
    }
    plan.used.borrow_mut().push(step.id.clone());
    if plan.path.first() == Some(&step.id) {
        let mut extra = extra;
        if plan.path.len() == 1 {
            let payload =
                plan.steps.get(&step.id).and_then(|r| r.get("suspendPayload")).cloned().unwrap_or(Value::Null);
            extra.resume = Some((plan.data.clone(), payload));
        } else {
            let inner = plan.nested.get(&step.id).cloned().unwrap_or(Value::Null);
            extra.nested = Some(Rc::new(ResumePlan::from_context(&inner, plan.path[1..].to_vec(), plan.data.clone())));
        }
        return Ok(extra);
    }
    let Some(rec) = plan.steps.get(&step.id) else { return Ok(extra) };
    if let Some(n) = plan.nested.get(&step.id) {
        scope.nested.borrow_mut().insert(step.id.clone(), n.clone());
    }
    match rec.get("status").and_then(Value::as_str) {
        Some("success") => {
            scope.record(&step.id, rec.clone());
            Err(Outcome::Success(rec.get("output").cloned().unwrap_or(Value::Null)))
        }
        Some("suspended") => {
            scope.record(&step.id, rec.clone());
            scope.suspended.borrow_mut().push(vec![step.id.clone()]);
            Err(Outcome::Suspended)
        }
        _ => Ok(extra),
    }
}

/// On a resume, a finished `map` or sleep gives its recorded output.
fn prior_output(scope: &Scope, id: &str) -> Option<Value> {
    let plan = scope.plan()?;
    let rec = plan.steps.get(id).filter(|r| r["status"] == "success")?;
    scope.record(id, rec.clone());
    Some(rec.get("output").cloned().unwrap_or(Value::Null))
}

/// Checks `value` against a JSON Schema; the error names `field` and the failing path.
pub fn check_json(schema: &Value, value: &Value, field: &str) -> Result<(), AgentError> {
    let errors = schema::validate(schema, value);
    if errors.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = errors
        .iter()
        .map(|e| {
            let path = e.path.strip_prefix('$').unwrap_or(&e.path);
            format!("{field}{path}: {}", e.message)
        })
        .collect();
    Err(AgentError::Validation { message: parts.join("; ") })
}

/// Checks `value` against a schema of either kind.
pub async fn check(scope: &Scope, schema: &Schema, value: &Value, field: &str) -> Result<(), AgentError> {
    match schema {
        Schema::Json(s) => check_json(s, value, field),
        Schema::Host(h) => scope
            .run
            .host
            .validate(*h, value.clone())
            .await
            .map(|_| ())
            .map_err(|m| AgentError::Validation { message: m.replace("$", field) }),
    }
}

pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// `a.b.c` in `v`; `''` or `'.'` is all of it.
pub fn get_path(v: &Value, path: &str) -> Value {
    if path.is_empty() || path == "." {
        return v.clone();
    }
    path.split('.').try_fold(v, |v, k| v.get(k)).cloned().unwrap_or(Value::Null)
}

/// Runs the level's nodes from its input. Boxed: a nested workflow recurses through it.
pub fn exec_nodes(scope: Rc<Scope>) -> LocalFuture<'static, Outcome> {
    Box::pin(async move {
        let mut input = scope.init.clone();
        let count = scope.def.nodes.borrow().len();
        for i in 0..count {
            if scope.run.abort.is_aborted() {
                return Outcome::Canceled;
            }
            let node = scope.def.nodes.borrow()[i].clone();
            match exec_node(&scope, &node, input).await {
                Outcome::Success(v) => input = v,
                other => return other,
            }
            // After each top-level node but the last (the run's end writes its own snapshot).
            if scope.prefix.is_empty() && i + 1 < count && scope.run.per_step.get() {
                if let Err(e) = scope.run.save(super::snapshot::running(&scope)).await {
                    return Outcome::Failed(e.into());
                }
            }
        }
        Outcome::Success(input)
    })
}

async fn exec_node(scope: &Rc<Scope>, node: &Node, input: Value) -> Outcome {
    match node {
        Node::Step(s) => exec_step(scope, s, input, Extra::default()).await,
        Node::Parallel(steps) => {
            let runs = steps.iter().map(|s| exec_step(scope, s, input.clone(), Extra::default()));
            let outs = join_all(runs).await;
            combine(steps.iter().map(|s| s.id.clone()).zip(outs).collect())
        }
        Node::Branch(arms) => {
            let mut chosen = Vec::new();
            for (cond, step) in arms {
                match call_fn(scope, *cond, &step.id, input.clone(), None).await {
                    Ok(v) if truthy(&v) => chosen.push(step.clone()),
                    Ok(_) => {}
                    Err(f) => return Outcome::Failed(f),
                }
            }
            let outs = join_all(chosen.iter().map(|s| exec_step(scope, s, input.clone(), Extra::default()))).await;
            combine(chosen.iter().map(|s| s.id.clone()).zip(outs).collect())
        }
        Node::Loop { step, cond, until } => {
            let mut input = input;
            let mut n = 1;
            loop {
                let out = match exec_step(scope, step, input, Extra { iteration: Some(n), ..Extra::default() }).await {
                    Outcome::Success(v) => v,
                    other => return other,
                };
                let go = match call_fn(scope, *cond, &step.id, out.clone(), Some(n)).await {
                    Ok(v) => truthy(&v),
                    Err(f) => return Outcome::Failed(f),
                };
                if go == *until {
                    return Outcome::Success(out);
                }
                if scope.run.abort.is_aborted() {
                    return Outcome::Canceled;
                }
                input = out;
                n += 1;
            }
        }
        Node::Foreach { step, concurrency } => exec_foreach(scope, step, input, *concurrency).await,
        Node::Map { id, .. } | Node::Sleep { id, .. } | Node::SleepUntil { id, .. }
            if scope.plan().is_some() && prior_output(scope, id).is_some() =>
        {
            Outcome::Success(scope.steps.borrow()[id.as_str()].get("output").cloned().unwrap_or(Value::Null))
        }
        Node::Map { id, mapping } => exec_map(scope, id, mapping, input).await,
        Node::Sleep { id, ms } => exec_sleep(scope, id, *ms, false, input).await,
        Node::SleepUntil { id, at } => exec_sleep(scope, id, *at, true, input).await,
    }
}

/// Parallel or branch results: the first failure wins, then cancel, suspend, bail; else
/// `{ [stepId]: output }`.
fn combine(outs: Vec<(String, Outcome)>) -> Outcome {
    let mut map = Map::new();
    let (mut canceled, mut suspended, mut bailed) = (false, false, None);
    for (id, out) in outs {
        match out {
            Outcome::Success(v) => {
                map.insert(id, v);
            }
            Outcome::Failed(f) => return Outcome::Failed(f),
            Outcome::Canceled => canceled = true,
            Outcome::Suspended => suspended = true,
            Outcome::Bailed(v) => bailed = bailed.or(Some(v)),
        }
    }
    match (canceled, suspended, bailed) {
        (true, _, _) => Outcome::Canceled,
        (_, true, _) => Outcome::Suspended,
        (_, _, Some(v)) => Outcome::Bailed(v),
        _ => Outcome::Success(Value::Object(map)),
    }
}

fn new_ctx(scope: &Rc<Scope>, name: &str) -> Rc<StepCtx> {
    Rc::new(StepCtx {
        scope: scope.clone(),
        step_name: name.to_string(),
        suspended: Default::default(),
        bailed: Default::default(),
    })
}

/// Calls a condition / map / sleep function with the step context of `step_id`.
pub(super) async fn call_fn(
    scope: &Rc<Scope>,
    handle: u32,
    step_id: &str,
    input: Value,
    iteration: Option<u32>,
) -> Result<Value, Failure> {
    let name = scope.name(step_id);
    let call = StepCall {
        state: scope.run.state.borrow().clone(),
        ctx: new_ctx(scope, &name),
        step_name: name,
        input,
        resume_data: None,
        suspend_data: None,
        retry_count: 0,
        iteration_count: iteration,
    };
    scope.run.host.call(handle, call).await
}

/// The fields a step's start and result events begin with, as JSON text for more to follow.
pub(super) fn step_event_text(name: &str, call_id: &str, input: &Value, started: f64, status: &str) -> Obj {
    let mut o = Obj::new();
    o.val("stepName", name)
        .val("id", name)
        .val("stepCallId", call_id)
        .val("payload", input)
        .val("startedAt", &started)
        .val("status", status);
    o
}

/// One execution of a step: `workflow-step-start`, the attempts, then its result or suspension.
pub(super) async fn exec_step(scope: &Rc<Scope>, step: &Rc<StepDef>, input: Value, extra: Extra) -> Outcome {
    let run = &scope.run;
    let extra = match prior(scope, step, extra) {
        Ok(extra) => extra,
        Err(outcome) => return outcome,
    };
    if run.abort.is_aborted() {
        return Outcome::Canceled;
    }
    let name = scope.name(&step.id);
    let call_id = run.call_id();
    let started = run.now();
    let mut start = step_event_text(&name, &call_id, &input, started, "running");
    let mut rec = Map::new();
    rec.insert("status".into(), json!("running"));
    rec.insert("payload".into(), input.clone());
    rec.insert("startedAt".into(), json!(started));
    if let Some((data, _)) = &extra.resume {
        start.val("resumePayload", data).val("resumedAt", &started);
        rec.insert("resumePayload".into(), data.clone());
        rec.insert("resumedAt".into(), json!(started));
    }
    run.emit_text("workflow-step-start", &start.done());
    run.path.borrow_mut().push(name.clone());
    // The running record is what a snapshot taken meanwhile shows; the end completes it in place.
    scope.record(&step.id, Value::Object(rec));
    let out = match validate_input(scope, step, &input).await {
        Err(f) => BodyOut::Err(f),
        Ok(()) => match attempt(scope, step, &name, input.clone(), &extra).await {
            BodyOut::Ok(v) => match validate_output(scope, step, &v).await {
                Ok(()) => BodyOut::Ok(v),
                Err(f) => BodyOut::Err(f),
            },
            other => other,
        },
    };
    let ended = run.now();
    let status = match &out {
        BodyOut::Ok(_) => "success",
        BodyOut::Bailed(_) => "bailed",
        BodyOut::Err(_) => "failed",
        BodyOut::Suspended(..) => "suspended",
        BodyOut::Canceled => return Outcome::Canceled,
    };
    let mut ev = step_event_text(&name, &call_id, &input, started, status);
    if let Some((data, _)) = &extra.resume {
        ev.val("resumePayload", data);
    }
    if let Some(n) = extra.iteration {
        ev.val("metadata", &json!({ "iterationCount": n }));
    }
    // Taken out in place (the record keeps its position among the steps) and put back complete.
    let running = scope.steps.borrow_mut().get_mut(&step.id).map(Value::take);
    let mut fields = match running {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    fields.insert("status".into(), json!(status));
    let (kind, outcome) = match out {
        BodyOut::Ok(v) | BodyOut::Bailed(v) => {
            ev.val("endedAt", &ended).val("output", &v);
            fields.insert("endedAt".into(), json!(ended));
            fields.insert("output".into(), v.clone());
            let o = if status == "success" { Outcome::Success(v) } else { Outcome::Bailed(v) };
            ("workflow-step-result", o)
        }
        BodyOut::Err(f) => {
            let error = f.to_json();
            ev.val("endedAt", &ended).val("error", &error);
            fields.insert("endedAt".into(), json!(ended));
            fields.insert("error".into(), error);
            ("workflow-step-result", Outcome::Failed(f))
        }
        BodyOut::Suspended(payload, inner) => {
            ev.val("suspendPayload", &payload).val("suspendedAt", &ended);
            fields.insert("suspendPayload".into(), payload);
            fields.insert("suspendedAt".into(), json!(ended));
            let mut paths = scope.suspended.borrow_mut();
            if inner.is_empty() {
                paths.push(vec![step.id.clone()]);
            }
            for p in inner {
                paths.push(std::iter::once(step.id.clone()).chain(p).collect());
            }
            ("workflow-step-suspended", Outcome::Suspended)
        }
        BodyOut::Canceled => return Outcome::Canceled,
    };
    if let Some(m) = &step.metadata {
        fields.insert("metadata".into(), m.clone());
    }
    scope.record(&step.id, Value::Object(fields));
    run.emit_text(kind, &ev.done());
    outcome
}

/// The end of a `foreach`, `map` or sleep step: its record (`payload`, `startedAt`, `status`,
/// `endedAt`, then `output` or `error`) and its `workflow-step-result`.
pub(super) fn end_step(
    scope: &Scope,
    id: &str,
    (name, call_id): (&str, &str),
    input: Value,
    started: f64,
    out: Result<Value, Failure>,
) -> Outcome {
    let run = &scope.run;
    let ended = run.now();
    let status = if out.is_ok() { "success" } else { "failed" };
    let mut ev = step_event_text(name, call_id, &input, started, status);
    ev.val("endedAt", &ended);
    let mut rec = Map::new();
    rec.insert("payload".into(), input);
    rec.insert("startedAt".into(), json!(started));
    rec.insert("status".into(), json!(status));
    rec.insert("endedAt".into(), json!(ended));
    let outcome = match out {
        Ok(v) => {
            ev.val("output", &v);
            rec.insert("output".into(), v.clone());
            Outcome::Success(v)
        }
        Err(f) => {
            let error = f.to_json();
            ev.val("error", &error);
            rec.insert("error".into(), error);
            Outcome::Failed(f)
        }
    };
    scope.record(id, Value::Object(rec));
    run.emit_text("workflow-step-result", &ev.done());
    outcome
}

async fn validate_input(scope: &Scope, step: &StepDef, input: &Value) -> Result<(), Failure> {
    match (&step.input_schema, scope.def.validate_inputs) {
        (Some(s), true) => check(scope, s, input, "inputData").await.map_err(Failure::from),
        _ => Ok(()),
    }
}

/// `options.validateOutputs`: a step's output against its `outputSchema` (off by default, as the
/// reference); a mismatch fails the step, after its retries.
async fn validate_output(scope: &Scope, step: &StepDef, output: &Value) -> Result<(), Failure> {
    match (&step.output_schema, scope.def.validate_outputs) {
        (Some(s), true) => check(scope, s, output, "output").await.map_err(Failure::from),
        _ => Ok(()),
    }
}

/// The step's body, again after a throw up to its retries (else the workflow's), `delay` apart.
pub(super) async fn attempt(scope: &Rc<Scope>, step: &StepDef, name: &str, input: Value, extra: &Extra) -> BodyOut {
    let run = &scope.run;
    let retries = step.retries.unwrap_or(scope.def.retry.attempts);
    let mut n = 0;
    loop {
        let ctx = new_ctx(scope, name);
        let res = match &step.body {
            Body::Host(h) => {
                let call = StepCall {
                    step_name: name.to_string(),
                    input: input.clone(),
                    state: run.state.borrow().clone(),
                    resume_data: extra.resume.as_ref().map(|r| r.0.clone()),
                    suspend_data: extra.resume.as_ref().map(|r| r.1.clone()),
                    retry_count: n,
                    iteration_count: extra.iteration,
                    ctx: ctx.clone(),
                };
                run.host.execute(*h, call).await
            }
            Body::Workflow(def) => {
                let inner =
                    Scope::new(run.clone(), def.clone(), format!("{}{}.", scope.prefix, step.id), input.clone());
                *inner.resume.borrow_mut() = extra.nested.clone();
                let outcome = exec_nodes(inner.clone()).await;
                scope.nested.borrow_mut().insert(step.id.clone(), inner.context_json());
                match outcome {
                    Outcome::Success(v) | Outcome::Bailed(v) => Ok(v),
                    Outcome::Failed(f) => Err(f),
                    Outcome::Canceled => return BodyOut::Canceled,
                    Outcome::Suspended => {
                        let paths = inner.suspended.borrow().clone();
                        let payload = paths
                            .first()
                            .and_then(|p| {
                                inner.steps.borrow().get(&p[0]).and_then(|r| r.get("suspendPayload").cloned())
                            })
                            .unwrap_or(Value::Null);
                        return BodyOut::Suspended(payload, paths);
                    }
                }
            }
        };
        if let Some(p) = ctx.suspended.borrow_mut().take() {
            return BodyOut::Suspended(p, vec![]);
        }
        if let Some(b) = ctx.bailed.borrow_mut().take() {
            return BodyOut::Bailed(b);
        }
        match res {
            Ok(v) => return BodyOut::Ok(v),
            Err(f) if f.tripwire.is_some() || n >= retries || run.abort.is_aborted() => return BodyOut::Err(f),
            Err(_) => {
                n += 1;
                let delay = scope.def.retry.delay_ms;
                if delay > 0.0 && run.abort.race(run.env.sleep(delay as u64)).await.is_none() {
                    return BodyOut::Canceled;
                }
            }
        }
    }
}
