//! A workflow's step graph: steps, the control-flow nodes the builder adds, and the checks a
//! builder call and `createRun` make. Functions the user wrote (`execute`, conditions, `map`
//! functions, sleep functions, Standard Schemas) are host handles; the core never sees them.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use crate::core::error::AgentError;

/// A function or value the host holds for the engine (an index into its table).
pub type Handle = u32;

/// A schema: JSON Schema, checked by the core, or one only the host can check (a Standard
/// Schema without JSON Schema).
#[derive(Clone, Debug)]
pub enum Schema {
    Json(Value),
    Host(Handle),
}

/// What a step runs.
pub enum Body {
    /// The user's `execute` (or a tool's or an agent's), called through the host.
    Host(Handle),
    /// A committed workflow used as a step.
    Workflow(Rc<WorkflowDef>),
}

pub struct StepDef {
    pub id: String,
    pub description: Option<String>,
    pub input_schema: Option<Schema>,
    pub output_schema: Option<Schema>,
    pub state_schema: Option<Schema>,
    pub resume_schema: Option<Schema>,
    /// Re-runs after a throw; `None` takes the workflow's `retryConfig.attempts`.
    pub retries: Option<u32>,
    pub metadata: Option<Value>,
    pub body: Body,
}

impl StepDef {
    pub fn new(id: impl Into<String>, body: Body) -> Self {
        StepDef {
            id: id.into(),
            description: None,
            input_schema: None,
            output_schema: None,
            state_schema: None,
            resume_schema: None,
            retries: None,
            metadata: None,
            body,
        }
    }
}

/// A duration or a moment: fixed, or what a host function returns when the step runs.
#[derive(Clone, Copy, Debug)]
pub enum When {
    Fixed(f64),
    Host(Handle),
}

/// Where one field of a `.map({ … })` comes from.
#[derive(Clone, Debug)]
pub enum MapSource {
    /// `{ step, path }`: a finished step's output (`path` dotted, `.` or empty = all of it).
    Step { step: String, path: String },
    /// `{ value, schema }`.
    Value(Value),
    /// `{ initData, path }`: the run's input.
    InitData { path: String },
    /// `{ requestContextPath }`.
    RequestContext { path: String },
    /// `{ fn }`.
    Fn(Handle),
}

#[derive(Clone, Debug)]
pub enum Mapping {
    Fn(Handle),
    Fields(Vec<(String, MapSource)>),
}

#[derive(Clone)]
pub enum Node {
    Step(Rc<StepDef>),
    Parallel(Vec<Rc<StepDef>>),
    /// Every step whose condition holds runs, all at once.
    Branch(Vec<(Handle, Rc<StepDef>)>),
    /// `dowhile` (`until: false`) or `dountil` (`until: true`).
    Loop {
        step: Rc<StepDef>,
        cond: Handle,
        until: bool,
    },
    Foreach {
        step: Rc<StepDef>,
        concurrency: usize,
    },
    Map {
        id: String,
        mapping: Mapping,
    },
    Sleep {
        id: String,
        ms: When,
    },
    SleepUntil {
        id: String,
        at: When,
    },
}

impl Node {
    /// The step that runs first in this node (for `workflow-start`), if it is known before it runs.
    pub fn first_step_id(&self) -> Option<&str> {
        match self {
            Node::Step(s) | Node::Loop { step: s, .. } | Node::Foreach { step: s, .. } => Some(&s.id),
            Node::Parallel(v) => v.first().map(|s| s.id.as_str()),
            Node::Branch(v) => v.first().map(|(_, s)| s.id.as_str()),
            Node::Map { id, .. } | Node::Sleep { id, .. } | Node::SleepUntil { id, .. } => Some(id),
        }
    }

    /// The steps of this node (for finding a step by id).
    pub fn steps(&self) -> Vec<&Rc<StepDef>> {
        match self {
            Node::Step(s) | Node::Loop { step: s, .. } | Node::Foreach { step: s, .. } => vec![s],
            Node::Parallel(v) => v.iter().collect(),
            Node::Branch(v) => v.iter().map(|(_, s)| s).collect(),
            _ => vec![],
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct RetryConfig {
    pub attempts: u32,
    pub delay_ms: f64,
}

pub struct WorkflowDef {
    pub id: String,
    pub description: Option<String>,
    pub input_schema: Option<Schema>,
    pub output_schema: Option<Schema>,
    pub state_schema: Option<Schema>,
    pub retry: RetryConfig,
    /// `options.validateInputs` (default true).
    pub validate_inputs: bool,
    /// `options.validateOutputs` (default false): step outputs against their `outputSchema`.
    pub validate_outputs: bool,
    pub nodes: RefCell<Vec<Node>>,
    pub committed: std::cell::Cell<bool>,
    /// Counts `.map` steps for their ids.
    pub maps: std::cell::Cell<u32>,
}

impl WorkflowDef {
    pub fn new(id: impl Into<String>) -> Self {
        WorkflowDef {
            id: id.into(),
            description: None,
            input_schema: None,
            output_schema: None,
            state_schema: None,
            retry: RetryConfig::default(),
            validate_inputs: true,
            validate_outputs: false,
            nodes: RefCell::new(Vec::new()),
            committed: std::cell::Cell::new(false),
            maps: std::cell::Cell::new(0),
        }
    }

    /// Adds a node; a committed workflow is closed (`.then` after `.commit()` is a mistake).
    pub fn push(&self, node: Node) -> Result<(), AgentError> {
        if self.committed.get() {
            return Err(AgentError::invalid(
                "workflow",
                format!("workflow '{}' is committed; add steps before .commit()", self.id),
            ));
        }
        self.nodes.borrow_mut().push(node);
        Ok(())
    }

    /// The id of the next `.map` step: `mapping_<workflowId>_<n>`, counting from 1.
    pub fn next_map_id(&self) -> String {
        let n = self.maps.get() + 1;
        self.maps.set(n);
        format!("mapping_{}_{n}", self.id)
    }

    pub fn commit(&self) {
        self.committed.set(true);
    }

    /// `createRun` is allowed: committed, and at least one step. The message is a plain `Error`'s.
    pub fn check_runnable(&self) -> Result<(), String> {
        if !self.committed.get() {
            return Err(format!("Workflow '{}' is not committed: call .commit() before .createRun()", self.id));
        }
        if self.nodes.borrow().is_empty() {
            return Err(format!("Workflow '{}' has no steps: add one with .then(step) before .commit()", self.id));
        }
        Ok(())
    }

    /// The id of the first step to run.
    pub fn first_step_id(&self) -> Option<String> {
        self.nodes.borrow().first().and_then(|n| n.first_step_id().map(str::to_string))
    }
}
