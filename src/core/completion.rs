//! `isTaskComplete` (SPEC §15): after a step that would end the run, the completion scorers judge
//! its text; a failing check feeds a report back into the loop for another step, bounded by
//! `maxSteps`. This module owns the check — running the scorers in parallel or in order under one
//! deadline, the `all`/`any` verdict, the `is-task-complete` payload, the `onComplete` argument and
//! the feedback text; the scorers themselves come through `CompletionScorers` (the bindings call
//! the user's JavaScript scorers there).

use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use futures_util::future::{select, Either};
use serde_json::{json, Map, Value};

use super::env::{Env, LocalFuture};
use super::step::StepResult;

/// The reason of a scorer still running at the deadline.
pub const TIMED_OUT: &str = "Scorer did not finish before the completion timeout";

/// How the scorers' results make the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Every scorer passed.
    All,
    /// At least one scorer passed.
    Any,
}

/// A scorer's id and name, as the results name it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScorerInfo {
    pub id: String,
    pub name: String,
}

/// Runs the completion scorers; the host's side (the user's scorers, `onComplete`).
pub trait CompletionScorers {
    /// Scorer `index` on `ctx` (the §15 context as JSON): its score and reason, or the message of
    /// what it threw.
    fn score<'a>(&'a self, index: usize, ctx: &'a Value) -> LocalFuture<'a, Result<(f64, Option<String>), String>>;
    /// `onComplete(result)`, awaited after each check.
    fn completed<'a>(&'a self, result: &'a Value) -> LocalFuture<'a, ()>;
}

/// `isTaskComplete`, validated.
#[derive(Clone)]
pub struct CompletionCheck {
    pub scorers: Vec<ScorerInfo>,
    pub strategy: Strategy,
    pub parallel: bool,
    pub timeout_ms: u64,
    pub suppress_feedback: bool,
    pub host: Rc<dyn CompletionScorers>,
}

/// One scorer's part of a check.
#[derive(Clone, Debug, PartialEq)]
pub struct ScorerResult {
    pub id: String,
    pub name: String,
    pub score: f64,
    pub passed: bool,
    pub reason: Option<String>,
    pub duration_ms: f64,
    pub errored: bool,
}

impl ScorerResult {
    fn to_json(&self) -> Value {
        let mut v = json!({
            "scorerId": self.id,
            "scorerName": self.name,
            "score": self.score,
            "passed": self.passed,
            "duration": self.duration_ms,
        });
        if let Some(r) = &self.reason {
            v["reason"] = r.as_str().into();
        }
        if self.errored {
            v["errored"] = true.into();
        }
        v
    }
}

/// What one check found.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckResult {
    pub passed: bool,
    /// The scorers that ran, in their given order.
    pub results: Vec<ScorerResult>,
    pub duration_ms: f64,
    pub timed_out: bool,
}

/// Whether `results` pass under `strategy` (a scorer passes iff its score is exactly 1).
pub fn verdict(strategy: Strategy, results: &[ScorerResult]) -> bool {
    match strategy {
        Strategy::All => results.iter().all(|r| r.passed),
        Strategy::Any => results.iter().any(|r| r.passed),
    }
}

fn outcome(info: &ScorerInfo, got: Result<(f64, Option<String>), String>, duration_ms: f64) -> ScorerResult {
    let (score, reason, errored) = match got {
        Ok((score, reason)) => (score, reason, false),
        Err(message) => (0.0, Some(message), true),
    };
    ScorerResult { id: info.id.clone(), name: info.name.clone(), score, passed: !errored && score == 1.0, reason, duration_ms, errored }
}

fn timed_out(info: &ScorerInfo, duration_ms: f64) -> ScorerResult {
    ScorerResult { id: info.id.clone(), name: info.name.clone(), score: 0.0, passed: false, reason: Some(TIMED_OUT.into()), duration_ms, errored: true }
}

/// Runs the check's scorers on `ctx` under its one deadline: all at once (`parallel`), or in order,
/// stopping once the verdict is known.
pub async fn run_check(check: &CompletionCheck, ctx: &Value, env: &dyn Env) -> CheckResult {
    let start = env.now_ms();
    let since = |t: f64| (env.now_ms() - t).max(0.0);
    let mut deadline = env.sleep(check.timeout_ms);
    let mut results = Vec::new();
    let mut timed = false;
    if check.parallel {
        let mut running: Vec<Option<LocalFuture<'_, _>>> = (0..check.scorers.len()).map(|i| Some(check.host.score(i, ctx))).collect();
        let mut done: Vec<Option<ScorerResult>> = vec![None; check.scorers.len()];
        timed = poll_fn(|cx| {
            for (i, slot) in running.iter_mut().enumerate() {
                if let Some(f) = slot {
                    if let Poll::Ready(got) = f.as_mut().poll(cx) {
                        done[i] = Some(outcome(&check.scorers[i], got, since(start)));
                        *slot = None;
                    }
                }
            }
            if running.iter().all(Option::is_none) {
                return Poll::Ready(false);
            }
            deadline.as_mut().poll(cx).map(|()| true)
        })
        .await;
        let at = since(start);
        results = done.into_iter().zip(&check.scorers).map(|(d, info)| d.unwrap_or_else(|| timed_out(info, at))).collect();
    } else {
        for (i, info) in check.scorers.iter().enumerate() {
            let t = env.now_ms();
            match select(check.host.score(i, ctx), deadline.as_mut()).await {
                Either::Left((got, _)) => results.push(outcome(info, got, since(t))),
                Either::Right(_) => {
                    results.push(timed_out(info, since(t)));
                    timed = true;
                    break;
                }
            }
            let last = results.last().is_some_and(|r| r.passed);
            if (check.strategy == Strategy::All && !last) || (check.strategy == Strategy::Any && last) {
                break;
            }
        }
    }
    CheckResult { passed: verdict(check.strategy, &results), results, duration_ms: since(start), timed_out: timed }
}

impl CheckResult {
    /// The first passing scorer's reason, else the first result's.
    pub fn reason(&self) -> Option<&str> {
        let first_passed = self.results.iter().find(|r| r.passed);
        first_passed.or(self.results.first()).and_then(|r| r.reason.as_deref())
    }

    fn results_json(&self) -> Value {
        Value::Array(self.results.iter().map(ScorerResult::to_json).collect())
    }

    /// The `is-task-complete` payload of the check at `iteration` (1-based).
    pub fn chunk_payload(&self, iteration: usize, max_reached: bool, suppress_feedback: bool) -> Value {
        let mut v = json!({
            "iteration": iteration,
            "passed": self.passed,
            "results": self.results_json(),
            "duration": self.duration_ms,
            "timedOut": self.timed_out,
            "maxIterationReached": max_reached,
            "suppressFeedback": suppress_feedback,
        });
        if let Some(r) = self.reason() {
            v["reason"] = r.into();
        }
        v
    }

    /// The argument of `onComplete`.
    pub fn on_complete_json(&self) -> Value {
        let mut v = json!({
            "complete": self.passed,
            "scorers": self.results_json(),
            "totalDuration": self.duration_ms,
            "timedOut": self.timed_out,
        });
        if let Some(r) = self.reason() {
            v["completionReason"] = r.into();
        }
        v
    }

    /// The report a failed check adds to the conversation (as an assistant message) for the model's
    /// next step.
    pub fn feedback(&self) -> String {
        let mut lines = vec![
            "#### Completion Check Results".to_string(),
            String::new(),
            format!("Overall: {}", if self.passed { "COMPLETE" } else { "NOT COMPLETE" }),
            format!("Duration: {}ms", self.duration_ms.round() as u64),
        ];
        if self.timed_out {
            lines.push("The check timed out before every scorer finished.".into());
        }
        lines.push(String::new());
        for r in &self.results {
            lines.push(format!("###### {} ({})", r.name, r.id));
            lines.push(format!("Score: {} ({})", number(r.score), if r.passed { "passed" } else { "failed" }));
            if let Some(reason) = &r.reason {
                lines.push(format!("Reason: {reason}"));
            }
            lines.push(String::new());
        }
        lines.push("The task is not complete yet. Continue working on it, using the feedback above.".into());
        lines.join("\n")
    }
}

/// A score as text: `1`, `0.25` (through serde_json's formatter: `f64`'s own `Display` would add
/// its float printing to the package).
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return (n as i64).to_string();
    }
    Value::from(n).to_string()
}

/// What the loop knows of the run for the §15 context; the host adds `agentId`, `agentName` and
/// `customContext`.
pub struct ContextOf<'a> {
    pub run_id: &'a str,
    pub iteration: usize,
    pub max_steps: usize,
    pub original_task: &'a str,
    pub steps: &'a [StepResult],
    /// The conversation as sent to the model (model messages as JSON).
    pub messages: Value,
    pub thread_id: Option<&'a str>,
    pub resource_id: Option<&'a str>,
}

/// The check's context: `currentText` is the last step's text; `toolCalls` and `toolResults` are
/// those of the run so far (the step that is judged has none of its own).
pub fn context(c: ContextOf<'_>) -> Value {
    let text = c.steps.last().map(|s| s.text.as_str()).unwrap_or_default();
    let calls: Vec<Value> = c.steps.iter().flat_map(|s| &s.tool_calls).map(|t| json!({ "name": t.tool_name, "args": t.args })).collect();
    let results: Vec<Value> = c
        .steps
        .iter()
        .flat_map(|s| &s.tool_results)
        .filter_map(|r| r.model_result().map(|(result, _)| json!({ "name": r.call.tool_name, "result": result })))
        .collect();
    let mut v = Map::new();
    v.insert("iteration".into(), c.iteration.into());
    v.insert("maxIterations".into(), c.max_steps.into());
    v.insert("originalTask".into(), c.original_task.into());
    v.insert("currentText".into(), text.into());
    v.insert("primitiveResult".into(), text.into());
    v.insert("toolCalls".into(), calls.into());
    v.insert("toolResults".into(), results.into());
    v.insert("messages".into(), c.messages);
    v.insert("runId".into(), c.run_id.into());
    if let Some(t) = c.thread_id {
        v.insert("threadId".into(), t.into());
    }
    if let Some(r) = c.resource_id {
        v.insert("resourceId".into(), r.into());
    }
    Value::Object(v)
}

#[cfg(test)]
#[path = "completion_tests.rs"]
mod tests;
