//! The placeholder result a model gets for a call that went to the background, and the real
//! result put in its place in the stored conversation once the task ends.

use serde_json::{json, Value};

use std::rc::Rc;

use crate::core::memory::{MessageQuery, Store};

/// The conversation a task's result goes back into.
#[derive(Clone)]
pub struct MemoryTarget {
    pub store: Rc<dyn Store>,
    pub thread_id: String,
}

/// The text the model gets at once for a call that went to the background.
pub fn placeholder(task_id: &str, tool_name: &str) -> Value {
    json!({
        "status": "running",
        "backgroundTaskId": task_id,
        "message": format!("Background task {task_id} started for {tool_name}. It keeps running after this reply; you will be told when it ends. Do not call {tool_name} again for it."),
    })
}

/// Puts a task's real result where its placeholder is in the thread's stored messages.
pub async fn replace_placeholder(m: &MemoryTarget, tool_call_id: &str, result: Value, is_error: bool) -> Result<bool, crate::core::error::AgentError> {
    let q = MessageQuery { thread_id: m.thread_id.clone(), last: Some(100), before: None };
    let mut msgs = m.store.list_messages(&q).await?;
    for msg in msgs.iter_mut().rev() {
        let Some(part) = msg.parts.iter_mut().find(|p| p["toolInvocation"]["toolCallId"] == tool_call_id) else { continue };
        let inv = &mut part["toolInvocation"];
        inv["state"] = if is_error { "output-error".into() } else { "result".into() };
        inv["result"] = result;
        if is_error {
            inv["isError"] = Value::Bool(true);
        } else if let Some(o) = inv.as_object_mut() {
            o.remove("isError");
        }
        m.store.save_messages(std::slice::from_ref(msg)).await?;
        return Ok(true);
    }
    Ok(false)
}
