//! The decisions of `untilIdle` (SPEC §9), as a state machine with no clock and no I/O: the
//! wrapper feeds it what happened (a turn ended, a task started or ended, a chunk went out, time
//! passed, the caller aborted) and does what it answers (run a continuation turn with a batch of
//! finished tasks, arm the idle timer, close the outer stream). Native tests drive it with a
//! fake clock; the wrapper that streams turns and listens to tasks is built on top of it.

/// How a background task ended.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskOutcome {
    Completed,
    Failed { message: String },
    Cancelled,
    TimedOut,
}

/// A finished task, as the continuation directive names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    pub task_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub outcome: TaskOutcome,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The streaming turn ended; `failed` when it ended with an error.
    TurnEnded { failed: bool },
    TaskStarted { task_id: String },
    TaskEnded(Finished),
    /// A chunk went into the outer stream (restarts the idle timer between turns).
    Chunk,
    /// Time passed (the idle timer's deadline may have come).
    Tick,
    /// The caller aborted or cancelled the outer stream.
    Abort,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Run one continuation turn for these tasks, with `directive` added to its context.
    Continue { batch: Vec<Finished>, directive: String },
    /// Close the outer stream after `deadline_ms` unless something happens first.
    ArmIdleTimer { deadline_ms: f64 },
    Close(CloseReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Nothing runs, nothing is queued, no turn streams.
    Idle,
    /// `maxIdleMs` passed between turns while tasks still ran.
    IdleTimeout,
    /// A continuation turn failed (its `error` chunk is already out).
    TurnFailed,
    Aborted,
}

pub const DEFAULT_MAX_IDLE_MS: u64 = 5 * 60 * 1000;

/// The wrapper's state for one outer stream.
#[derive(Debug)]
pub struct IdleLoop {
    max_idle_ms: u64,
    turn_streaming: bool,
    running: Vec<String>,
    queued: Vec<Finished>,
    /// Tasks whose end was already taken, so an end delivered twice is processed once.
    ended: Vec<String>,
    deadline_ms: Option<f64>,
    closed: bool,
}

impl IdleLoop {
    /// A loop whose first turn is streaming.
    pub fn new(max_idle_ms: u64) -> Self {
        IdleLoop { max_idle_ms, turn_streaming: true, running: Vec::new(), queued: Vec::new(), ended: Vec::new(), deadline_ms: None, closed: false }
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The tasks still running.
    pub fn running(&self) -> &[String] {
        &self.running
    }

    /// Takes in what happened at `now_ms`; answers what to do, in order.
    pub fn on(&mut self, event: Event, now_ms: f64) -> Vec<Action> {
        if self.closed {
            return Vec::new();
        }
        match event {
            Event::Abort => return self.close(CloseReason::Aborted),
            Event::TaskStarted { task_id } => {
                if !self.running.contains(&task_id) && !self.ended.contains(&task_id) {
                    self.running.push(task_id);
                }
            }
            Event::TaskEnded(finished) => {
                if self.ended.contains(&finished.task_id) {
                    return Vec::new();
                }
                self.ended.push(finished.task_id.clone());
                self.running.retain(|t| *t != finished.task_id);
                self.queued.push(finished);
            }
            Event::TurnEnded { failed } => {
                self.turn_streaming = false;
                if failed {
                    return self.close(CloseReason::TurnFailed);
                }
            }
            Event::Chunk => {}
            Event::Tick => {
                if let Some(deadline) = self.deadline_ms {
                    if !self.turn_streaming && now_ms >= deadline {
                        return self.close(CloseReason::IdleTimeout);
                    }
                }
                return Vec::new();
            }
        }
        self.decide(now_ms)
    }

    fn decide(&mut self, now_ms: f64) -> Vec<Action> {
        if self.turn_streaming {
            // The timer never runs during a turn: a slow model is not idle.
            self.deadline_ms = None;
            return Vec::new();
        }
        if !self.running.is_empty() {
            // Waiting on tasks: every event restarts the idle timer.
            let deadline_ms = now_ms + self.max_idle_ms as f64;
            self.deadline_ms = Some(deadline_ms);
            return vec![Action::ArmIdleTimer { deadline_ms }];
        }
        if self.queued.is_empty() {
            return self.close(CloseReason::Idle);
        }
        let batch = std::mem::take(&mut self.queued);
        self.turn_streaming = true;
        self.deadline_ms = None;
        let directive = continuation_directive(&batch);
        vec![Action::Continue { batch, directive }]
    }

    fn close(&mut self, reason: CloseReason) -> Vec<Action> {
        self.closed = true;
        self.deadline_ms = None;
        vec![Action::Close(reason)]
    }
}

/// The system message of a continuation turn: which tasks ended and how, that their results are
/// in the conversation now, and what not to do about them. Sent to the model, never stored.
pub fn continuation_directive(batch: &[Finished]) -> String {
    let mut lines = vec!["Background tasks you started earlier have finished. Their results are now in the conversation \
        as the results of those tool calls: use them to answer, and do not call those tools again to fetch them."
        .to_string()];
    let name = |f: &Finished| format!("{} (tool call {})", f.tool_name, f.tool_call_id);
    let completed: Vec<String> = batch.iter().filter(|f| f.outcome == TaskOutcome::Completed).map(name).collect();
    if !completed.is_empty() {
        lines.push(format!("Completed: {}.", completed.join(", ")));
    }
    for f in batch {
        match &f.outcome {
            TaskOutcome::Completed => {}
            TaskOutcome::Failed { message } => {
                lines.push(format!("Failed: {}: {message}. Do not retry it unless the user asks.", name(f)))
            }
            TaskOutcome::TimedOut => lines.push(format!("Failed: {} timed out. Do not retry it unless the user asks.", name(f))),
            TaskOutcome::Cancelled => lines.push(format!("Cancelled: {}. It has no result.", name(f))),
        }
    }
    lines.join("\n")
}

#[cfg(test)]
#[path = "until_idle_tests.rs"]
mod tests;
