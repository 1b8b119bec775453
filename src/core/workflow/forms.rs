//! The forms that are not a plain step: `foreach` (one start and result, items at a limited
//! concurrency, progress per item), `map` and the sleeps.

use std::cell::Cell;
use std::rc::Rc;

use futures_util::stream::{self, StreamExt};
use serde_json::{json, Map, Value};

use super::context::Scope;
use super::exec::{attempt, call_fn, end_step, get_path, step_event_text, BodyOut, Extra, Outcome};
use super::graph::{MapSource, Mapping, StepDef, When};
use super::host::Failure;

/// `foreach`: one start and one result for the step, the items run `concurrency` at a time, a
/// `workflow-step-progress` per item as it ends, the outputs in input order.
pub(super) async fn exec_foreach(scope: &Rc<Scope>, step: &Rc<StepDef>, input: Value, concurrency: usize) -> Outcome {
    let run = &scope.run;
    if run.abort.is_aborted() {
        return Outcome::Canceled;
    }
    let name = scope.name(&step.id);
    let call_id = run.call_id();
    let started = run.now();
    run.emit_text("workflow-step-start", &step_event_text(&name, &call_id, &input, started, "running").done());
    run.path.borrow_mut().push(name.clone());
    let result = match &input {
        Value::Array(items) => foreach_items(scope, step, &name, items.clone(), concurrency).await,
        other => Err(Some(Failure::new(
            "Error",
            format!("foreach: the step '{}' needs an array as input, got {}", step.id, kind(other)),
        ))),
    };
    let out = match result {
        Ok(v) => Ok(v),
        Err(Some(f)) => Err(f),
        Err(None) => return Outcome::Canceled,
    };
    end_step(scope, &step.id, (&name, &call_id), input, started, out)
}

async fn foreach_items(
    scope: &Rc<Scope>,
    step: &StepDef,
    name: &str,
    items: Vec<Value>,
    concurrency: usize,
) -> Result<Value, Option<Failure>> {
    let total = items.len();
    let done = Cell::new(0usize);
    let done = &done;
    let extra = Extra::default();
    let extra = &extra;
    let mut results = stream::iter(items.into_iter().enumerate().map(|(i, item)| async move {
        let out = attempt(scope, step, name, item, extra).await;
        done.set(done.get() + 1);
        let (status, output) = match &out {
            BodyOut::Ok(v) => ("success", Some(v.clone())),
            BodyOut::Suspended(..) => ("suspended", None),
            BodyOut::Canceled => ("canceled", None),
            _ => ("failed", None),
        };
        let mut p = json!({ "stepName": name, "id": name, "completedCount": done.get(), "totalCount": total, "currentIndex": i, "iterationStatus": status });
        if let Some(o) = output {
            p["iterationOutput"] = o;
        }
        scope.run.emit("workflow-step-progress", p);
        out
    }))
    .buffered(concurrency.max(1));
    let mut outs = Vec::with_capacity(total);
    while let Some(out) = results.next().await {
        match out {
            BodyOut::Ok(v) | BodyOut::Bailed(v) => outs.push(v),
            BodyOut::Err(f) => return Err(Some(f)),
            BodyOut::Suspended(..) => {
                return Err(Some(Failure::new(
                    "Error",
                    format!("foreach: the step '{}' suspended; suspending inside foreach is not supported", step.id),
                )))
            }
            BodyOut::Canceled => return Err(None),
        }
    }
    Ok(Value::Array(outs))
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `.map(fn | mapping)`: a step of its own (start and result) whose output is what it computes.
pub(super) async fn exec_map(scope: &Rc<Scope>, id: &str, mapping: &Mapping, input: Value) -> Outcome {
    let run = &scope.run;
    let name = scope.name(id);
    let call_id = run.call_id();
    let started = run.now();
    run.emit_text("workflow-step-start", &step_event_text(&name, &call_id, &input, started, "running").done());
    run.path.borrow_mut().push(name.clone());
    let out = match mapping {
        Mapping::Fn(h) => call_fn(scope, *h, id, input.clone(), None).await,
        Mapping::Fields(fields) => {
            let mut m = Map::new();
            let mut err = None;
            for (key, src) in fields {
                let v = match src {
                    MapSource::Value(v) => Ok(v.clone()),
                    MapSource::InitData { path } => Ok(get_path(&scope.init, path)),
                    MapSource::RequestContext { path } => Ok(get_path(&run.request_context.borrow(), path)),
                    MapSource::Fn(h) => call_fn(scope, *h, id, input.clone(), None).await,
                    MapSource::Step { step, path } => {
                        match scope.steps.borrow().get(step).filter(|r| r["status"] == "success") {
                            Some(r) => Ok(get_path(&r["output"], path)),
                            None => {
                                Err(Failure::new("Error", format!("map: {key}: the step '{step}' has no result yet")))
                            }
                        }
                    }
                };
                match v {
                    Ok(v) => {
                        m.insert(key.clone(), v);
                    }
                    Err(f) => {
                        err = Some(f);
                        break;
                    }
                }
            }
            err.map_or(Ok(Value::Object(m)), Err)
        }
    };
    end_step(scope, id, (&name, &call_id), input, started, out)
}

/// `.sleep` / `.sleepUntil`: `workflow-step-waiting`, the wait (cut short by cancel), then the
/// result with the input passed on.
pub(super) async fn exec_sleep(scope: &Rc<Scope>, id: &str, when: When, until: bool, input: Value) -> Outcome {
    let run = &scope.run;
    let name = scope.name(id);
    let started = run.now();
    run.emit(
        "workflow-step-waiting",
        json!({ "stepName": name, "id": name, "payload": input, "startedAt": started, "status": "waiting" }),
    );
    run.path.borrow_mut().push(name.clone());
    let t = match when {
        When::Fixed(t) => t,
        When::Host(h) => match call_fn(scope, h, id, input.clone(), None).await {
            Ok(v) => v.as_f64().unwrap_or(0.0),
            Err(f) => return Outcome::Failed(f),
        },
    };
    let ms = if until { t - run.now() } else { t };
    if ms > 0.0 && run.abort.race(run.env.sleep(ms as u64)).await.is_none() {
        return Outcome::Canceled;
    }
    let call_id = run.env.new_id();
    end_step(scope, id, (&name, &call_id), input.clone(), started, Ok(input))
}
