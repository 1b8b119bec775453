//! Resuming suspended runs (SPEC §20.2) from the package instance's store, and the workflow's
//! run queries (`getWorkflowRunById`, `listWorkflowRuns`, `deleteWorkflowRunById`, §20.5).

use std::rc::Rc;

use js_sys::{Array, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::convert::{error_to_js, from_json, js_kind, to_json, type_error};
use super::workflow::Workflow;
use super::workflow_run::{after_run, store_snapshots, Ended, Exec, Run, RunInner, WorkflowRunOutput};
use crate::core::error::AgentError;
use crate::core::workflow::snapshot::{self, RunFilter, StoredRun};

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn error(message: &str) -> JsValue {
    js_sys::Error::new(message).into()
}

/// The suspended step `step` names (a step, an id, `'inner.ask'` or `['inner', 'ask']`), or the
/// only suspended one.
fn choose(step: &JsValue, paths: &[Vec<String>]) -> Result<Vec<String>, JsValue> {
    let list = || paths.iter().map(|p| p.join(".")).collect::<Vec<_>>().join(", ");
    if step.is_undefined() || step.is_null() {
        return match paths {
            [only] => Ok(only.clone()),
            [] => Err(error("No step of this run is suspended")),
            _ => Err(error(&format!("Several steps are suspended ({}): pass resume({{ step }})", list()))),
        };
    }
    let id_of = |v: &JsValue| v.as_string().or_else(|| get(v, "id").as_string());
    let wanted: Vec<String> = if Array::is_array(step) {
        Array::from(step).iter().map(|v| id_of(&v).unwrap_or_default()).collect()
    } else {
        let id = id_of(step).ok_or_else(|| {
            type_error("resume(options).step", &format!("expected a step, a step id or a path, got {}", js_kind(step)))
        })?;
        id.split('.').map(str::to_string).collect()
    };
    paths.iter().find(|p| **p == wanted || (wanted.len() == 1 && p.last() == wanted.last())).cloned().ok_or_else(|| {
        type_error(
            "resume(options).step",
            &format!("'{}' is not a suspended step (suspended: {})", wanted.join("."), list()),
        )
    })
}

/// Checks and claims a resume, then runs it as `exec`, made the run's current execution.
async fn resume_exec(run: Rc<RunInner>, options: JsValue, exec: Rc<Exec>) -> Result<(), JsValue> {
    if !(options.is_undefined() || options.is_object()) {
        return Err(type_error(
            "resume(options)",
            &format!("expected {{ resumeData, step? }}, got {}", js_kind(&options)),
        ));
    }
    let def = run.wf.def.clone();
    let (name, id) = (def.id.clone(), run.run_id.clone());
    let store = run.wf.store();
    let runs = store.workflows().ok_or_else(|| error(&format!("No snapshot found for run '{id}' of workflow '{name}'")))?;
    let stored = runs
        .load_run(&name, &id)
        .await
        .map_err(|e| error_to_js(&e))?
        .ok_or_else(|| error(&format!("No snapshot found for run '{id}' of workflow '{name}'")))?;
    let lost = || {
        let message = format!(
            "Run '{id}' of workflow '{name}' is already running (another resume of it won); this resume did not run"
        );
        error_to_js(&AgentError::Resume { code: "in-progress", message })
    };
    if stored.status() == "running" {
        return Err(lost());
    }
    if stored.status() != "suspended" {
        return Err(error(&format!("Run '{id}' of workflow '{name}' is not suspended (status: {})", stored.status())));
    }
    let path = choose(&get(&options, "step"), &snapshot::suspended_paths(&stored.snapshot))?;
    let data = get(&options, "resumeData");
    let data = if data.is_undefined() {
        Value::Null
    } else {
        to_json(&data, "resume(options).resumeData").map_err(|e| error_to_js(&e))?
    };
    snapshot::check_resume(run.exec().core.clone(), def.clone(), &path, &data).await.map_err(|e| error_to_js(&e))?;
    // The claim: of two resumes of this run (two tabs, a double click) only one gets here.
    let now = js_sys::Date::now();
    let claimed = runs.update_status(&name, &id, "running", Some("suspended"), now).await.map_err(|e| error_to_js(&e))?;
    if claimed.is_none() {
        return Err(lost());
    }
    let include_state = get(&get(&options, "outputOptions"), "includeState").is_truthy();
    run.install(&exec)?;
    let (e, wf) = (exec.clone(), run.wf.clone());
    let store = store.clone();
    store_snapshots(&store, &def.id, &exec.core);
    let live = super::workflow_live::hold(&def.id, &id);
    wasm_bindgen_futures::spawn_local(async move {
        let _live = live;
        let core = e.core.clone();
        let result = snapshot::resume(core.clone(), def.clone(), &stored.snapshot, path, data).await;
        let value = Ok(Ended::of(&result, include_state));
        e.settle(value.clone());
        after_run(&wf, &value);
    });
    Ok(())
}

/// Starts a resume of `run` as a new execution: returned at once, it runs once the claim is
/// made; a refused resume settles it with why and closes its log (no event).
fn start_resume(run: &Rc<RunInner>, options: JsValue) -> Rc<Exec> {
    let exec = run.fresh_exec();
    let (run, e) = (run.clone(), exec.clone());
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(why) = resume_exec(run, options, e.clone()).await {
            e.settle(Err(why));
            e.core.log.close();
        }
    });
    exec
}

/// Re-runs a run left `running` by a page or process that died, from its last finished step.
async fn restart_exec(run: Rc<RunInner>) -> Result<Rc<Exec>, JsValue> {
    let def = run.wf.def.clone();
    let (name, id) = (def.id.clone(), run.run_id.clone());
    let store = run.wf.store();
    // The run first, then its snapshot: one read after taking it, so a restart elsewhere that
    // finished in between is seen as finished, not run twice.
    let live = super::workflow_live::try_hold(&name, &id).await.map_err(|place| {
        error_to_js(&AgentError::Resume {
            code: "in-progress",
            message: format!("Run '{id}' of workflow '{name}' is running {place}; restart() only re-runs a run whose page or process died"),
        })
    })?;
    let none = || error(&format!("No snapshot found for run '{id}' of workflow '{name}'"));
    let runs = store.workflows().ok_or_else(none)?;
    let stored = runs.load_run(&name, &id).await.map_err(|e| error_to_js(&e))?.ok_or_else(none)?;
    if stored.status() != "running" {
        return Err(error(&format!(
            "Run '{id}' of workflow '{name}' is not running (status: {}); restart() re-runs a run left running by a page or process that died",
            stored.status()
        )));
    }
    let exec = run.next_exec()?;
    let (e, wf) = (exec.clone(), run.wf.clone());
    store_snapshots(&store, &name, &exec.core);
    wasm_bindgen_futures::spawn_local(async move {
        let _live = live;
        let core = e.core.clone();
        let result = snapshot::restart(core.clone(), def.clone(), &stored.snapshot).await;
        let value = Ok(Ended::of(&result, false));
        e.settle(value.clone());
        after_run(&wf, &value);
    });
    Ok(exec)
}

#[wasm_bindgen]
impl Run {
    /// Re-runs a run left `running` by a page, worker or process that died (SPEC §20.2), from
    /// its last finished step: finished steps keep their outputs, the rest run again. Rejects
    /// when the run is not `running`, has no snapshot, or is running here or (Web Locks) in
    /// another page or worker of the origin.
    #[wasm_bindgen(unchecked_return_type = "Promise<WorkflowResult>")]
    pub fn restart(&self) -> Promise {
        let run = self.inner.clone();
        future_to_promise(async move {
            let exec = restart_exec(run).await?;
            JsFuture::from(exec.result_promise()).await
        })
    }

    /// Resumes the suspended run: the step (`step`, else the only suspended one) runs again with
    /// `resumeData`. Rejects when the run is not suspended, has no snapshot, the data fails the
    /// step's `resumeSchema` (the run stays suspended), or another resume of it won.
    #[wasm_bindgen(unchecked_return_type = "Promise<WorkflowResult>")]
    pub fn resume(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "WorkflowResumeOptions")] options: Option<JsValue>,
    ) -> Promise {
        start_resume(&self.inner, options.unwrap_or(JsValue::UNDEFINED)).result_promise()
    }

    /// `resume`, as the `WorkflowRunOutput` of the resumed execution, returned at once (as
    /// `stream()`). A refused resume (the cases `resume` rejects for) makes `result` reject and
    /// `fullStream` error with that error, before any event.
    #[wasm_bindgen(js_name = resumeStream)]
    pub fn resume_stream(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "WorkflowResumeOptions")] options: Option<JsValue>,
    ) -> WorkflowRunOutput {
        let exec = start_resume(&self.inner, options.unwrap_or(JsValue::UNDEFINED));
        WorkflowRunOutput::new(&self.inner, exec)
    }
}

/// A stored run for JavaScript, its times as `Date`s.
fn run_to_js(r: &StoredRun, full: bool) -> JsValue {
    let v = if full {
        r.to_json()
    } else {
        serde_json::json!({ "workflowName": r.workflow_name, "runId": r.run_id, "resourceId": r.resource_id, "snapshot": r.snapshot })
    };
    let out = from_json(&v);
    let _ = Reflect::set(&out, &"createdAt".into(), &js_sys::Date::new(&JsValue::from(r.created_at)));
    let _ = Reflect::set(&out, &"updatedAt".into(), &js_sys::Date::new(&JsValue::from(r.updated_at)));
    out
}

fn run_id_arg(v: &JsValue, path: &str) -> Result<String, JsValue> {
    v.as_string()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| type_error(path, &format!("expected a non-empty string, got {}", js_kind(v))))
}

fn date_arg(v: &JsValue, path: &str) -> Result<Option<f64>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if let Some(d) = v.dyn_ref::<js_sys::Date>() {
        return Ok(Some(d.get_time()));
    }
    v.as_f64().map(Some).ok_or_else(|| type_error(path, &format!("expected a Date, got {}", js_kind(v))))
}

#[wasm_bindgen]
impl Workflow {
    /// The stored run `runId` of this workflow, or `null`.
    #[wasm_bindgen(js_name = getWorkflowRunById, unchecked_return_type = "Promise<WorkflowRunRecord | null>")]
    pub fn get_workflow_run_by_id(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] run_id: JsValue,
    ) -> Result<Promise, JsValue> {
        let id = run_id_arg(&run_id, "getWorkflowRunById(runId)")?;
        let wf = self.inner.clone();
        Ok(future_to_promise(async move {
            let store = wf.store();
            let Some(runs) = store.workflows() else { return Ok(JsValue::NULL) };
            let found = runs.load_run(&wf.def.id, &id).await.map_err(|e| error_to_js(&e))?;
            Ok(found.map(|r| run_to_js(&r, true)).unwrap_or(JsValue::NULL))
        }))
    }

    /// This workflow's stored runs, newest first: `{ runs, total }`.
    #[wasm_bindgen(js_name = listWorkflowRuns, unchecked_return_type = "Promise<{ runs: WorkflowRunListEntry[]; total: number }>")]
    pub fn list_workflow_runs(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "WorkflowRunQuery")] query: Option<JsValue>,
    ) -> Result<Promise, JsValue> {
        let q = query.unwrap_or(JsValue::UNDEFINED);
        let text = |k: &str| get(&q, k).as_string();
        let count = |k: &str| -> Result<Option<usize>, JsValue> {
            let v = get(&q, k);
            if v.is_undefined() || v.is_null() {
                return Ok(None);
            }
            match v.as_f64() {
                Some(n) if n >= 0.0 && n.fract() == 0.0 => Ok(Some(n as usize)),
                _ => Err(type_error(
                    &format!("listWorkflowRuns(options).{k}"),
                    &format!("expected a non-negative integer, got {}", js_kind(&v)),
                )),
            }
        };
        let filter = RunFilter {
            workflow_name: Some(self.inner.def.id.clone()),
            status: text("status"),
            resource_id: text("resourceId"),
            from_date: date_arg(&get(&q, "fromDate"), "listWorkflowRuns(options).fromDate")?,
            to_date: date_arg(&get(&q, "toDate"), "listWorkflowRuns(options).toDate")?,
            per_page: count("perPage")?,
            page: count("page")?.unwrap_or(0),
        };
        let wf = self.inner.clone();
        Ok(future_to_promise(async move {
            let store = wf.store();
            let (runs, total) = match store.workflows() {
                Some(s) => s.list_runs(&filter).await.map_err(|e| error_to_js(&e))?,
                None => (Vec::new(), 0),
            };
            let out = js_sys::Object::new();
            let list: Array = runs.iter().map(|r| run_to_js(r, false)).collect();
            let _ = Reflect::set(&out, &"runs".into(), &list);
            let _ = Reflect::set(&out, &"total".into(), &JsValue::from(total as u32));
            Ok(JsValue::from(out))
        }))
    }

    /// Forgets the stored run `runId`.
    #[wasm_bindgen(js_name = deleteWorkflowRunById, unchecked_return_type = "Promise<void>")]
    pub fn delete_workflow_run_by_id(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] run_id: JsValue,
    ) -> Result<Promise, JsValue> {
        let id = run_id_arg(&run_id, "deleteWorkflowRunById(runId)")?;
        let wf = self.inner.clone();
        Ok(future_to_promise(async move {
            let store = wf.store();
            if let Some(runs) = store.workflows() {
                runs.delete_run(&wf.def.id, &id).await.map_err(|e| error_to_js(&e))?;
            }
            Ok(JsValue::UNDEFINED)
        }))
    }
}
