//! How a run ended (`RunOutcome`): its steps, the step cut short, usage, error or abort, and the
//! aggregates `getFullOutput()` and the output's promises resolve with.

use crate::core::error::AgentError;
use crate::core::model::{FinishReason, ModelMessage, Usage};
use crate::core::step::StepResult;

/// How a run ended.
#[derive(Debug, Default)]
pub struct RunOutcome {
    pub message_id: String,
    /// `rememberedMessages`: what semantic recall added (stored form); `None` when it is off.
    pub remembered: Option<Vec<serde_json::Value>>,
    pub steps: Vec<StepResult>,
    /// The step that was streaming when the run failed or was aborted, as far as it got.
    pub partial: Option<StepResult>,
    pub total_usage: Usage,
    pub error: Option<AgentError>,
    /// `Some(reason)` when the run was aborted.
    pub aborted: Option<Option<String>>,
    /// How structured output ended, when the run asked for it and reached its final step.
    pub structured: Option<super::structured::StructuredResult>,
    /// A processor's `abort()` ended the run (SPEC §13.3).
    pub tripwire: Option<super::processors::Tripwire>,
    /// The last of `steps` is the one the tripwire stopped: shown, but not stored.
    pub tripwire_step: bool,
    /// What `processOutputResult` gave to store in place of the run's response messages.
    pub stored_instead: Option<Vec<ModelMessage>>,
    /// `delegationHookErrors` (SPEC §18.5), when the run had sub-agents.
    pub delegation_hook_errors: Option<Vec<serde_json::Value>>,
    /// What a scorer gets of the run (SPEC §14.2), when `RunConfig::scoring` asked for it and the
    /// run ended well (neither failed, aborted nor tripped).
    pub scoring: Option<serde_json::Value>,
    /// The run ended waiting for a decision (`closeOnSuspend`, SPEC §19.2).
    pub suspended: bool,
    /// The step the run suspended in, with the calls that had settled.
    pub suspended_step: Option<StepResult>,
    /// A run record was written for this run (removed when it ends).
    pub recorded: bool,
    /// The stored assistant message is the one written when the run began to wait (SPEC §19.5),
    /// or its end with the waits denied: the run's end must not save over it.
    pub stored_waiting: bool,
    /// The payload of the run's first `tool-call-suspended` chunk (`output.suspendPayload`).
    pub suspend_payload: Option<serde_json::Value>,
    /// The reports of failed completion checks (SPEC §15) that memory stores after the reply
    /// (none under `suppressFeedback`).
    pub completion_feedback: Vec<String>,
}

impl RunOutcome {
    /// A storage write failed (SPEC §7): the reply still streams, and the run ends failed with
    /// the first such error (SPEC §11: its `error` chunk is the last chunk, `text` rejects,
    /// `onError` runs). An aborted run stays aborted.
    pub fn write_failed(&mut self, e: AgentError) {
        if self.aborted.is_none() {
            self.error.get_or_insert(e);
        }
    }

    pub fn finish_reason(&self) -> FinishReason {
        if self.aborted.is_some() {
            FinishReason::Abort
        } else if self.error.is_some() {
            FinishReason::Error
        } else if self.tripwire.is_some() {
            FinishReason::Tripwire
        } else if self.suspended {
            FinishReason::Suspended
        } else {
            self.steps.last().map(|s| s.finish_reason).unwrap_or(FinishReason::Other)
        }
    }

    /// Text of all complete steps.
    pub fn text(&self) -> String {
        self.steps.iter().map(|s| s.text.as_str()).collect()
    }

    pub fn reasoning_text(&self) -> String {
        self.steps.iter().map(|s| s.reasoning.as_str()).collect()
    }

    /// The messages the run added (per step: the assistant message, then the tool results).
    pub fn response_messages(&self) -> Vec<ModelMessage> {
        self.steps.iter().flat_map(|s| s.response_messages()).collect()
    }
}

impl RunOutcome {
    /// Everything `getFullOutput()` resolves with, and what the aggregate promises read from.
    /// On abort, `text` also holds what the interrupted step had streamed: the user saw it.
    pub fn output_json(&self, run_id: &str) -> serde_json::Value {
        use crate::core::chunk::{usage_json, warnings_json};
        use crate::core::step::{messages_json, ToolCall};
        use serde_json::{json, Value};
        let mut text = self.text();
        let mut reasoning = self.reasoning_text();
        if self.aborted.is_some() {
            if let Some(p) = &self.partial {
                text.push_str(&p.text);
                reasoning.push_str(&p.reasoning);
            }
        }
        let last = self.steps.last();
        let usage = last.map(|s| s.usage).unwrap_or_default();
        let warnings: Vec<_> = self.steps.iter().flat_map(|s| s.warnings.iter().cloned()).collect();
        let messages = messages_json(&self.response_messages());
        let mut out = json!({
            "runId": run_id,
            "text": text,
            "finishReason": self.finish_reason().as_str(),
            "usage": usage_json(&usage),
            "totalUsage": usage_json(&self.total_usage),
            "steps": self.steps.iter().map(StepResult::to_json).collect::<Vec<_>>(),
            "toolCalls": self.steps.iter().flat_map(|s| s.tool_calls.iter().map(ToolCall::to_json)).collect::<Vec<_>>(),
            "toolResults": self.steps.iter().flat_map(|s| s.tool_results.iter().filter_map(crate::core::tools::ToolResult::to_json)).collect::<Vec<_>>(),
            "warnings": warnings_json(&warnings),
            "response": {
                "id": last.and_then(|s| s.response.id.clone()),
                "modelId": last.and_then(|s| s.response.model_id.clone()),
                "timestamp": last.map(|s| s.response.timestamp_ms),
                "messages": messages.clone(),
            },
            "messages": messages,
        });
        if !reasoning.is_empty() {
            out["reasoningText"] = Value::String(reasoning);
        }
        if let Some(r) = &self.remembered {
            out["rememberedMessages"] = Value::Array(r.clone());
        }
        if let Some(errors) = &self.delegation_hook_errors {
            out["delegationHookErrors"] = Value::Array(errors.clone());
        }
        if let Some(e) = &self.error {
            out["error"] = crate::core::chunk::error_json(e);
        }
        if let Some(s) = &self.structured {
            if let Some(o) = &s.object {
                out["object"] = o.clone();
            }
            out["usedFallbackValue"] = s.used_fallback.into();
        }
        if let Some(t) = &self.tripwire {
            out["tripwire"] = t.to_json();
        }
        if let Some(p) = &self.suspend_payload {
            out["suspendPayload"] = p.clone();
        }
        out
    }
}

