//! A background task as it is stored (`TaskRecord`, `TaskStatus`, `TaskFilter`) and as its
//! listeners hear it (`TaskEvent`, whose `chunk()` is its form in a stream).

use serde_json::{json, Value};

use crate::core::chunk::Chunk;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
    TimedOut,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::TimedOut => "timed_out",
        }
    }

    pub fn is_terminal(self) -> bool {
        !matches!(self, TaskStatus::Pending | TaskStatus::Running)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    pub id: String,
    pub tool_name: String,
    pub tool_call_id: String,
    pub args: Value,
    pub agent_id: String,
    pub run_id: String,
    pub thread_id: Option<String>,
    pub resource_id: Option<String>,
    pub status: TaskStatus,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub attempts: u32,
}

impl TaskRecord {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id, "toolName": self.tool_name, "toolCallId": self.tool_call_id, "args": self.args,
            "agentId": self.agent_id, "runId": self.run_id, "threadId": self.thread_id, "resourceId": self.resource_id,
            "status": self.status.as_str(), "result": self.result, "error": self.error, "createdAt": self.created_at,
            "startedAt": self.started_at, "completedAt": self.completed_at, "attempts": self.attempts,
        })
    }
}

impl TaskRecord {
    /// Reads a task as a storage object returned it.
    pub fn from_json(v: &Value, what: &str) -> Result<TaskRecord, crate::core::error::AgentError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let bad = |m: &str| crate::core::error::AgentError::storage(format!("{what} returned a task {m}"));
        let status = s("status").ok_or_else(|| bad("without a status"))?;
        let status = [TaskStatus::Pending, TaskStatus::Running, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled, TaskStatus::TimedOut]
            .into_iter()
            .find(|t| t.as_str() == status)
            .ok_or_else(|| bad(&format!("with an unknown status '{status}'")))?;
        Ok(TaskRecord {
            id: s("id").ok_or_else(|| bad("without a string id"))?,
            tool_name: s("toolName").unwrap_or_default(),
            tool_call_id: s("toolCallId").unwrap_or_default(),
            args: v.get("args").cloned().unwrap_or(Value::Null),
            agent_id: s("agentId").unwrap_or_default(),
            run_id: s("runId").unwrap_or_default(),
            thread_id: s("threadId"),
            resource_id: s("resourceId"),
            status,
            result: v.get("result").filter(|r| !r.is_null()).cloned(),
            error: s("error"),
            created_at: s("createdAt").unwrap_or_default(),
            started_at: s("startedAt"),
            completed_at: s("completedAt"),
            attempts: v.get("attempts").and_then(Value::as_u64).unwrap_or(0) as u32,
        })
    }
}

/// Which stored tasks to list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFilter {
    pub agent_id: Option<String>,
    pub thread_id: Option<String>,
    /// Any of these (all when empty).
    pub statuses: Vec<TaskStatus>,
}

impl TaskFilter {
    pub fn matches(&self, t: &TaskRecord) -> bool {
        self.agent_id.as_ref().is_none_or(|a| *a == t.agent_id)
            && self.thread_id.as_ref().is_none_or(|th| t.thread_id.as_ref() == Some(th))
            && (self.statuses.is_empty() || self.statuses.contains(&t.status))
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({});
        if let Some(a) = &self.agent_id {
            v["agentId"] = a.as_str().into();
        }
        if let Some(t) = &self.thread_id {
            v["threadId"] = t.as_str().into();
        }
        if !self.statuses.is_empty() {
            v["status"] = self.statuses.iter().map(|s| Value::from(s.as_str())).collect();
        }
        v
    }
}

/// What happened to a task, as its listeners hear it. `chunk()` is its form in a stream.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskEvent {
    pub task_id: String,
    pub tool_name: String,
    pub tool_call_id: String,
    pub kind: TaskEventKind,
    /// The task ended and another tab answers it (SPEC §21.2): an `untilIdle` stream here shows
    /// its chunk and stops waiting for it, without a continuation of its own.
    pub answered_elsewhere: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TaskEventKind {
    /// The task left the queue and runs.
    Running { run_id: String, agent_id: String, started_at: String, args: Value },
    /// The tool wrote output while running (`writer.write`).
    Output { run_id: String, output: Value },
    /// The task ended: `status` is terminal; `result` when it completed, `error` otherwise.
    Ended { status: TaskStatus, completed_at: String, result: Option<Value>, error: Option<String> },
}

impl TaskEvent {
    pub(super) fn of(task: &TaskRecord, kind: TaskEventKind) -> TaskEvent {
        TaskEvent { task_id: task.id.clone(), tool_name: task.tool_name.clone(), tool_call_id: task.tool_call_id.clone(), kind, answered_elsewhere: false }
    }

    /// The `background-task-*` chunk of the event.
    pub fn chunk(&self) -> Chunk {
        let mut p = json!({ "taskId": self.task_id, "toolName": self.tool_name, "toolCallId": self.tool_call_id });
        let kind = match &self.kind {
            TaskEventKind::Running { run_id, agent_id, started_at, args } => {
                p["runId"] = json!(run_id);
                p["agentId"] = json!(agent_id);
                p["startedAt"] = json!(started_at);
                p["args"] = args.clone();
                "background-task-running"
            }
            TaskEventKind::Output { run_id, output } => {
                p["payload"] = json!({ "type": "tool-output", "runId": run_id, "from": "USER",
                    "payload": { "toolCallId": self.tool_call_id, "toolName": self.tool_name, "output": output } });
                "background-task-output"
            }
            TaskEventKind::Ended { status, completed_at, result, error } => {
                p["completedAt"] = json!(completed_at);
                match status {
                    TaskStatus::Completed => {
                        p["result"] = result.clone().unwrap_or(Value::Null);
                        "background-task-completed"
                    }
                    TaskStatus::Cancelled => "background-task-cancelled",
                    _ => {
                        p["error"] = json!({ "message": error.clone().unwrap_or_default() });
                        "background-task-failed"
                    }
                }
            }
        };
        chunk(kind, p)
    }
}

pub(super) fn chunk(kind: &'static str, payload: Value) -> Chunk {
    Chunk::Background { kind, payload }
}
