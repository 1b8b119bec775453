//! A run's shared parts (ids, events, abort flag, state, usage) and one workflow level's view of
//! them (its steps' records, its input, the prefix its step ids carry in events).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::graph::WorkflowDef;
use super::host::WorkflowHost;
use super::log::EventLog;
use crate::core::abort::AbortFlag;
use crate::core::env::Env;
use crate::core::error::AgentError;

/// Writes a snapshot of the run to its store (SPEC §20.5); the engine awaits each write before
/// it goes on, so the writes of one run land in order, and a failed one fails the run.
pub type Persist = Rc<dyn Fn(Snapshot) -> crate::core::env::LocalFuture<'static, Result<(), AgentError>>>;

/// A snapshot on its way to the store: a value, or JSON text with its status (the run's end,
/// written from its result without copying every step's record into a value first).
pub enum Snapshot {
    Value(Value),
    Text { status: &'static str, text: String },
}

impl Snapshot {
    pub fn into_value(self) -> Value {
        match self {
            Snapshot::Value(v) => v,
            Snapshot::Text { text, .. } => serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }
}

pub const USAGE_FIELDS: [&str; 6] =
    ["inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens", "cacheCreationInputTokens"];

pub struct RunCore {
    pub run_id: String,
    pub resource_id: Option<String>,
    pub env: Rc<dyn Env>,
    pub host: Rc<dyn WorkflowHost>,
    pub log: EventLog,
    pub abort: AbortFlag,
    pub request_context: RefCell<Value>,
    pub state: RefCell<Value>,
    /// Where the run's snapshots go (when it starts, when it ends); none in tests that do not ask.
    pub persist: RefCell<Option<Persist>>,
    /// Also a `running` snapshot after each top-level node, for `restart` after a crash: only
    /// to a store that outlives the process.
    pub per_step: Cell<bool>,
    usage: RefCell<[f64; 6]>,
    /// The `stepCallId` announced in `workflow-start`, taken by the first step that starts.
    pub(super) first_call: RefCell<Option<String>>,
    pub(super) path: RefCell<Vec<String>>,
    pub(super) started: Cell<bool>,
}

impl RunCore {
    pub fn new(run_id: String, resource_id: Option<String>, env: Rc<dyn Env>, host: Rc<dyn WorkflowHost>) -> Rc<Self> {
        Rc::new(RunCore {
            run_id,
            resource_id,
            env,
            host,
            log: EventLog::default(),
            abort: AbortFlag::new(),
            request_context: RefCell::new(Value::Object(Map::new())),
            state: RefCell::new(Value::Object(Map::new())),
            persist: RefCell::new(None),
            per_step: Cell::new(false),
            usage: RefCell::new([0.0; 6]),
            first_call: RefCell::new(None),
            path: RefCell::new(Vec::new()),
            started: Cell::new(false),
        })
    }

    /// Writes `snapshot` through the run's `persist`, if it has one.
    pub async fn save(&self, snapshot: Snapshot) -> Result<(), AgentError> {
        let persist = self.persist.borrow().clone();
        match persist {
            Some(p) => p(snapshot).await,
            None => Ok(()),
        }
    }

    /// `{ type, runId, from: 'WORKFLOW', payload }`.
    pub fn emit(&self, kind: &str, payload: Value) {
        self.emit_text(kind, &payload.to_string());
    }

    /// `emit` with the payload already JSON text.
    pub fn emit_text(&self, kind: &str, payload: &str) {
        let event = super::text::Obj::new()
            .val("type", kind)
            .val("runId", &self.run_id)
            .val("from", "WORKFLOW")
            .raw("payload", payload)
            .done();
        self.log.push_text(event);
    }

    pub fn add_usage(&self, usage: &Value) {
        let mut sum = self.usage.borrow_mut();
        for (i, f) in USAGE_FIELDS.iter().enumerate() {
            sum[i] += usage.get(f).and_then(Value::as_f64).unwrap_or(0.0);
        }
    }

    pub fn usage(&self) -> Value {
        let sum = self.usage.borrow();
        Value::Object(USAGE_FIELDS.iter().enumerate().map(|(i, f)| (f.to_string(), json!(sum[i] as u64))).collect())
    }

    pub fn now(&self) -> f64 {
        self.env.now_ms()
    }

    /// A fresh `stepCallId`, or the one `workflow-start` announced for the first step.
    pub(super) fn call_id(&self) -> String {
        self.first_call.borrow_mut().take().unwrap_or_else(|| self.env.new_id())
    }
}

/// One workflow level of a run: the top one, or a nested workflow running as a step.
pub struct Scope {
    pub run: Rc<RunCore>,
    pub def: Rc<WorkflowDef>,
    /// `''` at the top, `'inner.'` inside the step `inner`.
    pub prefix: String,
    pub init: Value,
    /// `steps[id]` records in the order they started.
    pub steps: RefCell<Map<String, Value>>,
    /// Suspended step paths (`['inner', 'ask']`).
    pub suspended: RefCell<Vec<Vec<String>>>,
    /// The context (`{ steps, nested }`) of each nested workflow step, by step id.
    pub nested: RefCell<Map<String, Value>>,
    /// When this level resumes a suspended run: what ran before and which step resumes.
    pub resume: RefCell<Option<Rc<ResumePlan>>>,
}

/// A resume of one level: the records of its earlier run, and the path of the step to resume.
pub struct ResumePlan {
    pub steps: Map<String, Value>,
    pub nested: Map<String, Value>,
    /// `['ask']`, or `['inner', 'ask']` through a nested workflow.
    pub path: Vec<String>,
    pub data: Value,
    /// The steps already taken from the plan (a loop's step only on its first iteration).
    pub used: RefCell<Vec<String>>,
}

impl ResumePlan {
    /// The plan from a level's context `{ steps, nested }`.
    pub fn from_context(context: &Value, path: Vec<String>, data: Value) -> Self {
        let obj = |k: &str| context.get(k).and_then(Value::as_object).cloned().unwrap_or_default();
        ResumePlan { steps: obj("steps"), nested: obj("nested"), path, data, used: RefCell::default() }
    }
}

impl Scope {
    pub fn new(run: Rc<RunCore>, def: Rc<WorkflowDef>, prefix: String, init: Value) -> Rc<Self> {
        Rc::new(Scope {
            run,
            def,
            prefix,
            init,
            steps: RefCell::new(Map::new()),
            suspended: RefCell::new(Vec::new()),
            nested: RefCell::new(Map::new()),
            resume: RefCell::new(None),
        })
    }

    pub fn name(&self, id: &str) -> String {
        format!("{}{id}", self.prefix)
    }

    /// `{ steps, nested }`: what a resume of this level needs.
    pub fn context_json(&self) -> Value {
        json!({ "steps": *self.steps.borrow(), "nested": *self.nested.borrow() })
    }

    pub fn plan(&self) -> Option<Rc<ResumePlan>> {
        self.resume.borrow().clone()
    }

    pub fn record(&self, id: &str, rec: Value) {
        self.steps.borrow_mut().insert(id.to_string(), rec);
    }
}
