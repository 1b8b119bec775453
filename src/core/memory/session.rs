//! Memory in a run (`memory: { thread, resource }`): find or create the thread, load the recent
//! history, save the new input before the model is called, and save the run's assistant message
//! after each step or at the end — including what an interrupted step had shown.

use std::rc::Rc;

use serde_json::Value;

use super::{assistant_message, assistant_parts, waiting_message, iso_time, stored_to_model, MessageQuery, Store, StoredMessage, Thread};
use crate::core::error::AgentError;
use crate::core::model::{ModelMessage, ToolResultPart};
use crate::core::runs::WaitingCall;
use crate::core::step::StepResult;

/// `MemoryConfig` (the `Memory`'s options under the call's `memory.options`).
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryConfig {
    /// How many earlier messages go into the prompt (`lastMessages`, default 10; 0 for none).
    pub last_messages: usize,
    pub read_only: bool,
    pub filter_incomplete_tool_calls: bool,
    pub working_memory: Option<WorkingMemory>,
    /// `semanticRecall` (SPEC §21.3); `None`: off.
    pub semantic_recall: Option<super::vectors::RecallConfig>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { last_messages: 10, read_only: false, filter_incomplete_tool_calls: true, working_memory: None, semantic_recall: None }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct WorkingMemory {
    pub template: Option<String>,
    /// `true`: kept on the resource (shared by its threads); `false`: on the thread.
    pub resource_scope: bool,
}

/// What a run knows of its memory.
#[derive(Clone)]
pub struct MemoryRun {
    pub store: Rc<dyn Store>,
    pub thread_id: String,
    pub resource_id: String,
    /// Title and metadata for a thread created by this run.
    pub title: Option<String>,
    pub metadata: Option<Value>,
    pub config: MemoryConfig,
    /// Save after each step (`savePerStep`) rather than at the end.
    pub save_per_step: bool,
    /// The `Memory`'s embedder and indexing queue, when it has an `embedder`.
    pub indexer: Option<Rc<super::recall::Indexer>>,
}

/// The memory state of a run in progress.
pub struct Session {
    pub thread: Thread,
    /// The thread did not exist before this run.
    pub created: bool,
    /// Ids and times of messages this run writes, handed out in order.
    last_time: f64,
    pub assistant_id: String,
    assistant_at: Option<String>,
    /// The stored messages loaded as history, oldest first.
    pub history: Vec<StoredMessage>,
    /// The thread was deleted while the run went on: nothing more is saved into it.
    deleted: bool,
    /// The stored parts of the steps before a resume (SPEC §19.5): the resumed run's message
    /// keeps them in front of its own steps.
    pub prior_parts: Vec<Value>,
    /// Older messages semantic recall found, oldest first; they go before `history`.
    pub recalled: Vec<StoredMessage>,
    /// What this run saved, for the indexer (with an embedder only).
    pub saved: Vec<StoredMessage>,
}

impl MemoryRun {
    pub fn writes(&self) -> bool {
        !self.config.read_only
    }

    /// Opens the thread for the run (reads only; a new thread is saved by `save_new_thread`). A
    /// thread of another resource is refused before anything is read or written.
    pub async fn open(&self, now_ms: f64, assistant_id: String) -> Result<Session, AgentError> {
        let existing = self.store.get_thread_by_id(&self.thread_id).await?;
        let (thread, created) = match existing {
            Some(t) if t.resource_id != self.resource_id => {
                return Err(AgentError::Validation {
                    message: format!(
                        "Thread '{}' belongs to another resource than '{}'; pass that thread's own resource, or a new thread id",
                        self.thread_id, self.resource_id
                    ),
                })
            }
            Some(t) => (t, false),
            None => {
                let at = iso_time(now_ms);
                let t = Thread {
                    id: self.thread_id.clone(),
                    resource_id: self.resource_id.clone(),
                    title: self.title.clone(),
                    metadata: self.metadata.clone(),
                    created_at: at.clone(),
                    updated_at: at,
                };
                (t, true)
            }
        };
        Ok(Session { thread, created, last_time: 0.0, assistant_id, assistant_at: None, history: Vec::new(), deleted: false, prior_parts: Vec::new(), recalled: Vec::new(), saved: Vec::new() })
    }

    /// Loads the last `lastMessages` messages into the session (see `Session::history`). The
    /// newest stored message is read even when none is wanted, so new messages are written
    /// after it and the thread's order holds even with a skewed or coarse clock.
    pub async fn load_history(&self, session: &mut Session) -> Result<(), AgentError> {
        let last = self.config.last_messages.max(1);
        let q = MessageQuery { thread_id: self.thread_id.clone(), last: Some(last), before: None };
        let mut stored = self.store.list_messages(&q).await?;
        if let Some(newest) = stored.last() {
            session.last_time = session.last_time.max(parse_iso(&newest.created_at));
        }
        if self.config.last_messages == 0 {
            stored.clear();
        }
        session.history = stored;
        Ok(())
    }

    /// Saves the thread `open` found missing (a write, apart from `open`'s read: a run survives
    /// a failed write but not a failed read).
    pub async fn save_new_thread(&self, session: &Session) -> Result<(), AgentError> {
        if session.created && self.writes() {
            self.store.save_thread(&session.thread).await?;
        }
        Ok(())
    }

    /// Saves the caller's new messages (before the model is called). A tool result that
    /// answers a call of the loaded history (a client tool's call from the previous turn)
    /// completes that call in place; returns the ids of those calls, whose results the prompt
    /// then takes from the history. `ids[i]` is the id `input[i]` keeps, when it has one.
    /// `meta`: each input message's `content.metadata` (by position, as `ids`), when a processor set one.
    #[allow(clippy::too_many_arguments)]
    pub async fn save_input(&self, session: &mut Session, input: &[ModelMessage], ids: &[Option<String>], meta: &[Option<Value>], now_ms: f64, new_id: &mut dyn FnMut() -> String) -> Result<Vec<String>, AgentError> {
        let thread = session.thread.clone();
        let mut folded = Vec::new();
        let mut changed: Vec<usize> = Vec::new();
        let mut rest: Vec<ModelMessage> = Vec::new();
        let mut rest_ids: Vec<Option<String>> = Vec::new();
        let mut rest_meta: Vec<Option<Value>> = Vec::new();
        for (i, m) in input.iter().enumerate() {
            let ModelMessage::Tool(results) = m else {
                rest.push(m.clone());
                rest_ids.push(ids.get(i).cloned().flatten());
                rest_meta.push(meta.get(i).cloned().flatten());
                continue;
            };
            let mut unanswered = Vec::new();
            for r in results {
                match answer_stored_call(&mut session.history, r) {
                    Some(i) => {
                        folded.push(r.tool_call_id.clone());
                        if !changed.contains(&i) {
                            changed.push(i);
                        }
                    }
                    None => unanswered.push(r.clone()),
                }
            }
            if !unanswered.is_empty() {
                rest.push(ModelMessage::Tool(unanswered));
                rest_ids.push(None);
                rest_meta.push(None);
            }
        }
        if !self.writes() {
            return Ok(folded);
        }
        let mut next = || (new_id(), session.next_time(now_ms));
        let mut msgs = super::input_messages_with(&rest, &rest_ids, &rest_meta, &thread, &mut next);
        msgs.extend(changed.iter().filter_map(|&i| session.history.get(i).cloned()));
        if msgs.is_empty() {
            return Ok(folded);
        }
        self.store.save_messages(&msgs).await?;
        self.note_saved(session, &msgs);
        self.touch(session, now_ms).await?;
        Ok(folded)
    }

    /// Whether the thread is still stored. One deleted while the run went on (the page or a
    /// client deleted the conversation while the reply streamed or was being saved) stays
    /// deleted: the run saves nothing more into it, since a save would bring it back. Asked
    /// before each later write, so a deletion from anywhere (another `Memory`, the storage
    /// itself) is seen.
    pub async fn still_there(&self, session: &mut Session) -> Result<bool, AgentError> {
        if !session.deleted {
            session.deleted = self.store.get_thread_by_id(&self.thread_id).await?.is_none();
        }
        Ok(!session.deleted)
    }

    /// Saves the run's assistant message as it stands (replacing the earlier save of this run),
    /// unless the thread was deleted meanwhile.
    pub async fn save_assistant(&self, session: &mut Session, steps: &[StepResult], partial: Option<&StepResult>, now_ms: f64) -> Result<(), AgentError> {
        if !self.writes() || !self.still_there(session).await? {
            return Ok(());
        }
        let at = session.assistant_time(now_ms);
        let Some(mut msg) = assistant_message(session.assistant_id.clone(), &session.thread, at, steps, partial) else { return Ok(()) };
        msg.parts.splice(0..0, session.prior_parts.iter().cloned());
        self.store.save_messages(std::slice::from_ref(&msg)).await?;
        self.note_saved(session, std::slice::from_ref(&msg));
        self.touch(session, now_ms).await
    }

    /// Saves the assistant message of a run that now waits (SPEC §19.5): its steps so far with
    /// the waiting calls as `approval-requested` / `suspended` parts. A decision later replaces
    /// it (the same message id) with the calls' results.
    pub async fn save_waiting(&self, session: &mut Session, steps: &[StepResult], waits: &[WaitingCall], run_id: &str, now_ms: f64) -> Result<(), AgentError> {
        if !self.writes() || !self.still_there(session).await? {
            return Ok(());
        }
        let at = session.assistant_time(now_ms);
        let mut parts = session.prior_parts.clone();
        parts.extend(assistant_parts(steps, None).0);
        let msg = waiting_message(session.assistant_id.clone(), &session.thread, at, parts, waits, run_id);
        self.store.save_messages(std::slice::from_ref(&msg)).await?;
        self.note_saved(session, std::slice::from_ref(&msg));
        self.touch(session, now_ms).await
    }

    /// Saves notes of the run after its reply: assistant text messages with `metadata` (the
    /// reports of failed completion checks, SPEC §15), unless the thread was deleted meanwhile.
    pub async fn save_notes(&self, session: &mut Session, texts: &[String], metadata: &Value, now_ms: f64, new_id: &mut dyn FnMut() -> String) -> Result<(), AgentError> {
        if texts.is_empty() || !self.writes() || !self.still_there(session).await? {
            return Ok(());
        }
        session.assistant_time(now_ms);
        let thread = &session.thread;
        let (thread_id, resource_id) = (thread.id.clone(), thread.resource_id.clone());
        let mut msgs = Vec::new();
        for text in texts {
            msgs.push(StoredMessage {
                id: new_id(),
                thread_id: thread_id.clone(),
                resource_id: resource_id.clone(),
                role: "assistant".into(),
                created_at: session.next_time(now_ms),
                parts: vec![serde_json::json!({ "type": "text", "text": text })],
                metadata: Some(metadata.clone()),
            });
        }
        self.store.save_messages(&msgs).await?;
        self.note_saved(session, &msgs);
        self.touch(session, now_ms).await
    }

    /// Keeps what was saved for the indexer (the latest save of each message).
    fn note_saved(&self, session: &mut Session, msgs: &[StoredMessage]) {
        // Indexed whenever the `Memory` has an embedder, so a later call with recall finds them.
        if self.indexer.is_none() {
            return;
        }
        for m in msgs {
            session.saved.retain(|s| s.id != m.id);
            session.saved.push(m.clone());
        }
    }

    async fn touch(&self, session: &mut Session, now_ms: f64) -> Result<(), AgentError> {
        session.thread.updated_at = iso_time(now_ms.max(session.last_time));
        self.store.save_thread(&session.thread).await
    }
}

/// Completes the `call` invocation `r` answers in `history`; the index of the message changed.
fn answer_stored_call(history: &mut [StoredMessage], r: &ToolResultPart) -> Option<usize> {
    for (i, m) in history.iter_mut().enumerate().rev().filter(|(_, m)| m.role == "assistant") {
        for p in m.parts.iter_mut() {
            // `get_mut`, not `p["toolInvocation"]`: indexing would add a null one to every other
            // part, and this message is saved back.
            let Some(inv) = p.get_mut("toolInvocation") else { continue };
            if inv["toolCallId"] == r.tool_call_id.as_str() && inv["state"] == "call" {
                inv["state"] = "result".into();
                inv["result"] = r.result.clone();
                if r.is_error {
                    inv["isError"] = Value::Bool(true);
                }
                return Some(i);
            }
        }
    }
    None
}

impl Session {
    /// The recalled messages and the loaded history as prompt messages.
    pub fn history_messages(&self, filter_incomplete: bool) -> Vec<ModelMessage> {
        if self.recalled.is_empty() {
            return stored_to_model(&self.history, filter_incomplete);
        }
        stored_to_model(&self.remembered(), filter_incomplete)
    }

    /// What memory put before the input: the recalled messages, then the history.
    pub fn remembered(&self) -> Vec<StoredMessage> {
        self.recalled.iter().chain(&self.history).cloned().collect()
    }

    /// A creation time after every message this run has seen or written.
    pub fn next_time(&mut self, now_ms: f64) -> String {
        self.last_time = if now_ms > self.last_time { now_ms } else { self.last_time + 1.0 };
        iso_time(self.last_time)
    }

    /// A resumed run's message (SPEC §19.5): the stored parts of the steps before the one it
    /// resumes, and the time the message was first stored at.
    pub fn resume_message(&mut self, prior_parts: Vec<Value>, stored_at: Option<String>) {
        self.prior_parts = prior_parts;
        if stored_at.is_some() {
            self.assistant_at = stored_at;
        }
    }

    /// The assistant message keeps the time it got at its first save.
    pub fn assistant_time(&mut self, now_ms: f64) -> String {
        if self.assistant_at.is_none() {
            self.assistant_at = Some(self.next_time(now_ms));
        }
        self.assistant_at.clone().unwrap_or_default()
    }
}

/// Milliseconds of an ISO time written by `iso_time` (0 when it is not one).
fn parse_iso(s: &str) -> f64 {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter().try_fold(0i64, |acc, c| c.is_ascii_digit().then(|| acc * 10 + (c - b'0') as i64))
    };
    let parsed = (|| {
        let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
        let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
        let ms = num(20, 3).unwrap_or(0);
        let (y, mo) = if mo <= 2 { (y - 1, mo + 12) } else { (y, mo) };
        let days = 365 * y + y / 4 - y / 100 + y / 400 + (153 * (mo - 3) + 2) / 5 + d - 719_469;
        Some((((days * 24 + h) * 60 + mi) * 60 + sec) as f64 * 1000.0 + ms as f64)
    })();
    parsed.unwrap_or(0.0)
}

/// Reads memory options (`new Memory({ options })`, then a call's `memory.options` over them).
/// Unknown keys are ignored, as the reference ignores options it does not know.
pub fn parse_memory_options(v: &Value, base: &MemoryConfig, field: &str) -> Result<MemoryConfig, AgentError> {
    use crate::core::input::{join, kind, opt_bool, opt_str};
    let mut c = base.clone();
    if v.is_null() {
        return Ok(c);
    }
    if !v.is_object() {
        return Err(AgentError::invalid(field, format!("expected an object of memory options, got {}", kind(v))));
    }
    match v.get("lastMessages") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(false)) => c.last_messages = 0,
        Some(Value::Number(n)) if n.as_u64().is_some() => c.last_messages = n.as_u64().unwrap_or(0) as usize,
        Some(other) => {
            return Err(AgentError::invalid(join(field, "lastMessages"), format!("expected a non-negative integer or false, got {}", kind(other))))
        }
    }
    if let Some(b) = opt_bool(v, "readOnly", field)? {
        c.read_only = b;
    }
    if let Some(b) = opt_bool(v, "filterIncompleteToolCalls", field)? {
        c.filter_incomplete_tool_calls = b;
    }
    match v.get("workingMemory") {
        None | Some(Value::Null) => {}
        Some(w @ Value::Object(_)) => {
            let path = join(field, "workingMemory");
            let enabled = opt_bool(w, "enabled", &path)?.unwrap_or(false);
            let template = opt_str(w, "template", &path)?.map(str::to_owned);
            let resource_scope = match opt_str(w, "scope", &path)? {
                None | Some("resource") => true,
                Some("thread") => false,
                Some(other) => return Err(AgentError::invalid(join(&path, "scope"), format!("expected 'resource' or 'thread', got '{other}'"))),
            };
            c.working_memory = enabled.then_some(WorkingMemory { template, resource_scope });
        }
        Some(other) => return Err(AgentError::invalid(join(field, "workingMemory"), format!("expected an object like {{ enabled: true }}, got {}", kind(other)))),
    }
    #[cfg(feature = "recall")]
    if let Some(r) = v.get("semanticRecall") {
        c.semantic_recall = super::vectors::parse_recall(r, &join(field, "semanticRecall"))?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parse_iso_reads_what_iso_time_writes() {
        for ms in [0.0, 1.0, 951_782_400_000.0, 1_796_052_000_123.0, 4_102_444_799_999.0] {
            assert_eq!(super::parse_iso(&super::iso_time(ms)), ms);
        }
        assert_eq!(super::parse_iso("garbage"), 0.0);
    }
}
