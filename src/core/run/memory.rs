//! What memory adds to a run besides history: the working memory (its text in the system
//! prompt, and the built-in `updateWorkingMemory` tool that replaces it) and the title of a new
//! thread, generated after its first exchange.

use std::cell::RefCell;
use std::pin::pin;

use futures_util::future::select;

use serde_json::{json, Value};

use crate::core::abort::AbortFlag;
use crate::core::env::{Env, LocalFuture};
use crate::core::error::AgentError;
use crate::core::memory::{MemoryRun, Resource, Thread};
use crate::core::model::{ModelEvent, ModelMessage, ModelRequest, ModelSettings, UserPart};
use super::{Hooks, RunOutcome, Stop};
use crate::core::memory::Session;
use crate::core::step::ToolCall;
use crate::core::tools::{Approval, ToolCtx, ToolDef, ToolHost, ToolResult, Validation};
use crate::core::model_api::{CallCx, ModelApi};
use crate::core::transport::Transport;

pub const WORKING_MEMORY_TOOL: &str = "updateWorkingMemory";

const DEFAULT_TEMPLATE: &str = "# About the user\n- Name:\n- Preferences:\n- Goals:\n";

pub fn working_memory_tool() -> ToolDef {
    ToolDef {
        name: WORKING_MEMORY_TOOL.into(),
        description: Some("Replace your working memory with an updated version. Pass the whole text: it replaces the old one.".into()),
        parameters: json!({
            "type": "object",
            "properties": { "memory": { "type": "string", "description": "The complete updated working memory, in the template's format" } },
            "required": ["memory"],
        }),
        validation: Validation::JsonSchema,
        approval: Approval::Never,
        client: false,
        background: None,
    }
}

/// The current working memory text, or the template when there is none yet.
pub async fn working_memory_text(mem: &MemoryRun, thread: &Thread) -> Result<Option<String>, AgentError> {
    let Some(wm) = &mem.config.working_memory else { return Ok(None) };
    let stored = if wm.resource_scope {
        mem.store.get_resource(&mem.resource_id).await?.and_then(|r| r.working_memory)
    } else {
        thread.metadata.as_ref().and_then(|m| m.get("workingMemory")).and_then(Value::as_str).map(str::to_owned)
    };
    Ok(Some(stored.or_else(|| wm.template.clone()).unwrap_or_else(|| DEFAULT_TEMPLATE.into())))
}

/// The system message that shows the model its working memory.
pub fn working_memory_prompt(text: &str, can_update: bool) -> ModelMessage {
    let how = if can_update {
        format!("When you learn something worth keeping, call {WORKING_MEMORY_TOOL} with the whole updated text; it replaces this one. Do not mention these notes unless asked.")
    } else {
        "Do not mention these notes unless asked.".into()
    };
    ModelMessage::System(format!(
        "You keep working memory: notes about the user that last across conversations. {how}\n<working_memory>\n{text}\n</working_memory>"
    ))
}

/// The loop's tool host with the built-in working-memory tool in front of the user's tools.
pub struct MemoryTools<'a> {
    pub hooks: &'a dyn Hooks,
    pub mem: &'a MemoryRun,
    pub thread: Thread,
    /// Thread metadata after a thread-scoped update, for the session to adopt.
    pub updated_metadata: RefCell<Option<Value>>,
}

impl MemoryTools<'_> {
    async fn update(&self, text: String) -> Result<Value, String> {
        let scope_resource = self.mem.config.working_memory.as_ref().is_none_or(|w| w.resource_scope);
        let saved = if scope_resource {
            let mut r = self.mem.store.get_resource(&self.mem.resource_id).await.map_err(|e| e.to_string())?.unwrap_or(Resource {
                id: self.mem.resource_id.clone(),
                ..Default::default()
            });
            r.working_memory = Some(text);
            self.mem.store.save_resource(&r).await
        } else {
            // The thread as stored now, so a concurrent title or metadata change is kept; one
            // deleted meanwhile stays deleted.
            let stored = self.mem.store.get_thread_by_id(&self.thread.id).await.map_err(|e| e.to_string())?;
            let Some(mut t) = stored else { return Err("The conversation was deleted: there is nothing to keep notes on.".to_string()) };
            let mut meta = t.metadata.take().filter(Value::is_object).unwrap_or_else(|| json!({}));
            meta["workingMemory"] = Value::String(text);
            t.metadata = Some(meta.clone());
            *self.updated_metadata.borrow_mut() = Some(meta);
            self.mem.store.save_thread(&t).await
        };
        saved.map(|()| json!({ "success": true })).map_err(|e| e.to_string())
    }
}

impl ToolHost for MemoryTools<'_> {
    fn execute<'a>(&'a self, ctx: ToolCtx<'a>) -> LocalFuture<'a, Result<Value, String>> {
        if ctx.call.tool_name != WORKING_MEMORY_TOOL {
            return self.hooks.execute(ctx);
        }
        let text = ctx.call.args.get("memory").and_then(Value::as_str).unwrap_or_default().to_string();
        Box::pin(self.update(text))
    }
    fn validate<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Value, String>> {
        self.hooks.validate(call)
    }
    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, bool> {
        self.hooks.needs_approval(call)
    }
    fn before_tool_call<'a>(&'a self, call: &'a ToolCall) -> LocalFuture<'a, Result<Option<Value>, String>> {
        self.hooks.before_tool_call(call)
    }
    fn after_tool_call<'a>(&'a self, result: &'a ToolResult) -> LocalFuture<'a, ()> {
        self.hooks.after_tool_call(result)
    }
    fn take_suspension(&self, tool_call_id: &str) -> Option<crate::core::tools::Suspension> {
        self.hooks.take_suspension(tool_call_id)
    }
    fn suspension_stored(&self, tool_call_id: &str) {
        self.hooks.suspension_stored(tool_call_id)
    }
    fn task_runner(&self, tool: &str) -> Option<std::rc::Rc<dyn crate::core::background::TaskRunner>> {
        self.hooks.task_runner(tool)
    }
}

/// How to title a new thread: which model, told what.
#[derive(Clone)]
pub struct TitleJob {
    pub model: std::rc::Rc<dyn ModelApi>,
    /// The model's name, as its API knows it.
    pub model_id: String,
    pub instructions: String,
    pub max_retries: u32,
}

pub const DEFAULT_TITLE_INSTRUCTIONS: &str = "Write a short title (at most 8 words) for a conversation that starts with the user's message below. Answer with the title only: no quotes, no punctuation at the end.";

/// Asks the title model for a title of `first_message`; `None` when it gave nothing usable.
pub async fn generate_title(job: &TitleJob, first_message: &str, env: &dyn Env, abort: &AbortFlag) -> Result<Option<String>, AgentError> {
    let request = ModelRequest {
        model_id: job.model_id.clone(),
        messages: vec![ModelMessage::System(job.instructions.clone()), ModelMessage::User(vec![UserPart::Text(first_message.chars().take(2000).collect())])],
        settings: ModelSettings { max_output_tokens: Some(40), ..Default::default() },
        ..Default::default()
    };
    let call = job.model.prepare(&request)?;
    let stop = |s: Stop| match s {
        Stop::Failed(e) => e,
        Stop::Aborted => AgentError::Abort { reason: abort.reason() },
    };
    let transport = RefCell::new(Transport::Fetch);
    let cx = CallCx { env, abort, run_id: "", max_retries: job.max_retries, include_raw: false, transport: &transport };
    let mut source = job.model.open(&call, &cx).await.map_err(stop)?;
    let (mut text, mut events) = (String::new(), Vec::new());
    loop {
        let more = abort.race(source.next(&mut events)).await.ok_or(AgentError::Abort { reason: abort.reason() })??;
        for ev in events.drain(..) {
            match ev {
                ModelEvent::TextDelta(t) => text.push_str(&t),
                ModelEvent::Restart => text.clear(),
                ModelEvent::Error { message, body } => return Err(AgentError::ApiCall { message, status: None, body, retryable: false, retry_after_ms: None }),
                _ => {}
            }
        }
        if !more {
            break;
        }
    }
    Ok(clean_title(&text))
}

/// The first line, without quotes or a trailing period, at most 80 characters.
pub fn clean_title(raw: &str) -> Option<String> {
    let line = raw.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.trim_start_matches(['#', '*', ' ']).trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '*'));
    let line = line.strip_prefix("Title:").map(str::trim).unwrap_or(line).trim_end_matches('.');
    let title: String = line.chars().take(80).collect();
    (!title.trim().is_empty()).then(|| title.trim().to_string())
}

/// Opens the thread and loads its history. A failed read (the thread, its history) fails the run
/// before the model is called: no reply from a context the user did not intend. A thread that
/// could not be created leaves the run without memory.
pub(super) async fn open_memory(mem: &MemoryRun, env: &dyn Env, abort: &AbortFlag, outcome: &mut RunOutcome) -> Result<Option<Session>, Stop> {
    let opened = abort.race(mem.open(env.now_ms(), outcome.message_id.clone())).await.ok_or(Stop::Aborted)?;
    let mut session = opened.map_err(Stop::Failed)?;
    if let Err(e) = abort.race(mem.save_new_thread(&session)).await.ok_or(Stop::Aborted)? {
        outcome.write_failed(e);
        return Ok(None);
    }
    abort.race(mem.load_history(&mut session)).await.ok_or(Stop::Aborted)?.map_err(Stop::Failed)?;
    Ok(Some(session))
}

/// How long an abort lets a started write of the input finish before the run ends without it.
pub(super) const ABORT_SAVE_GRACE_MS: u64 = 2_000;

/// Saves the input and returns the history to put before it. A failed write lets the reply
/// stream and fails the run at its end (`RunOutcome::write_failed`).
pub(super) async fn remember_input(
    mem: &MemoryRun,
    session: &mut Session,
    input: &mut Vec<ModelMessage>,
    (ids, meta): (&[Option<String>], &[Option<Value>]),
    env: &dyn Env,
    abort: &AbortFlag,
    outcome: &mut RunOutcome,
) -> Result<Vec<ModelMessage>, Stop> {
    let now = env.now_ms();
    let mut new_id = || env.new_id();
    let saved = {
        let mut save = pin!(mem.save_input(session, input, ids, meta, now, &mut new_id));
        match abort.race(save.as_mut()).await {
            Some(saved) => saved,
            None => {
                // An abort while the user's message is being written must not roll that write
                // back (SPEC §7: an aborted run keeps the user message); a store that never
                // settles still cannot hold the abort for longer than the grace.
                let _ = select(save, env.sleep(ABORT_SAVE_GRACE_MS)).await;
                return Err(Stop::Aborted);
            }
        }
    };
    let folded = saved.unwrap_or_else(|e| {
        outcome.write_failed(e);
        Vec::new()
    });
    // Results that completed a call of the history now travel with that call.
    if !folded.is_empty() {
        for m in input.iter_mut() {
            if let ModelMessage::Tool(results) = m {
                results.retain(|r| !folded.contains(&r.tool_call_id));
            }
        }
        input.retain(|m| !matches!(m, ModelMessage::Tool(r) if r.is_empty()));
    }
    Ok(session.history_messages(mem.config.filter_incomplete_tool_calls))
}

/// Semantic recall for the run's latest user message: sets `session.recalled` and returns the
/// stored form of what was recalled for `rememberedMessages` (`None` when recall is off). A
/// failed recall (the embedder, the storage) is reported and leaves the run with its history.
#[cfg(feature = "recall")]
pub(super) async fn recall_for(mem: &MemoryRun, session: &mut Session, input: &[ModelMessage]) -> Option<Vec<Value>> {
    let (Some(cfg), Some(ix)) = (&mem.config.semantic_recall, &mem.indexer) else { return None };
    let query = input.iter().rev().find_map(|m| match m {
        ModelMessage::User(parts) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| if let UserPart::Text(t) = p { Some(t.as_str()) } else { None }).collect();
            Some(texts.join("\n")).filter(|t| !t.trim().is_empty())
        }
        _ => None,
    });
    let Some(query) = query else { return Some(Vec::new()) };
    let exclude: Vec<String> = session.history.iter().map(|m| m.id.clone()).collect();
    let found = crate::core::memory::recall::recall(&*mem.store, &*ix.embedder, cfg, &mem.thread_id, &mem.resource_id, query, &exclude).await;
    match found {
        Ok(msgs) => {
            session.recalled = msgs;
            Some(session.recalled.iter().map(crate::core::memory::StoredMessage::to_json).collect())
        }
        Err(e) => {
            ix.report(&e);
            Some(Vec::new())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn titles_are_cleaned() {
        assert_eq!(super::clean_title("\"Trip to Paris.\"\nmore").as_deref(), Some("Trip to Paris"));
        assert_eq!(super::clean_title("Title: Rust tips").as_deref(), Some("Rust tips"));
        assert_eq!(super::clean_title("  \n ").as_deref(), None);
        assert_eq!(super::clean_title(&"x".repeat(200)).map(|t| t.len()), Some(80));
    }
}
