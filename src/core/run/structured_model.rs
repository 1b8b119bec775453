//! The separate structuring pass of structured output (SPEC §12.6): the main model answers in
//! prose (tools and all); afterwards one call to the structuring model turns the run's reasoning,
//! tool calls and final text into the object. Its partial objects go into the main stream; its
//! text does not.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::structured::{Partials, StructuredOutput};
use super::Sink;
use crate::core::chunk::Chunk;
use crate::core::error::{AgentError, Stop};
use crate::core::model::{FinishReason, ModelEvent, ModelMessage, ModelRequest, Usage, UserPart};
use crate::core::model_api::{CallCx, ModelApi};
use crate::core::step::StepResult;
use crate::core::transport::Transport;

/// `structuredOutput.model`, ready to call.
pub struct StructuringModel {
    pub model: Rc<dyn ModelApi>,
    pub model_id: String,
    /// `structuredOutput.providerOptions` of that model's provider.
    pub provider_options: Option<Map<String, Value>>,
    /// `useAgent`: the call also gets the memory thread's history (read-only).
    pub use_agent: bool,
}

/// What the main model's first system message gains.
pub(super) fn structuring_note(schema: &Value) -> String {
    format!(
        "Another model will extract the fields of this JSON Schema from your answer afterwards, so you may answer \
         in prose; make sure your answer holds what the fields need:\n{schema}"
    )
}

/// The structuring call's system prompt: `instructions`, else a data-structuring role.
fn system_prompt(so: &StructuredOutput) -> String {
    match so.options.instructions.as_deref().map(str::trim).filter(|i| !i.is_empty()) {
        Some(i) => i.to_owned(),
        None => format!(
            "You are a data structuring assistant. From an agent's work below (its reasoning, tool calls with their \
             results, and final answer), extract the data this JSON Schema describes:\n{}\nRespond with the JSON only: \
             no other text, and no markdown code fences.",
            so.format.schema
        ),
    }
}

/// The main run in labelled sections, for the structuring model.
fn transcript(steps: &[StepResult]) -> String {
    let reasoning: String = steps.iter().map(|s| s.reasoning.as_str()).collect();
    let mut out = String::new();
    if !reasoning.trim().is_empty() {
        out.push_str("## Reasoning\n");
        out.push_str(reasoning.trim());
        out.push_str("\n\n");
    }
    let results: Vec<String> = steps
        .iter()
        .flat_map(|s| &s.tool_results)
        .map(|r| {
            let (result, is_error) = r.model_result().unwrap_or((Value::Null, false));
            let label = if is_error { "error" } else { "result" };
            format!("- {}({}) → {label}: {result}", r.call.tool_name, r.call.args)
        })
        .collect();
    if !results.is_empty() {
        out.push_str("## Tool calls\n");
        out.push_str(&results.join("\n"));
        out.push_str("\n\n");
    }
    out.push_str("## Final answer\n");
    out.push_str(steps.last().map_or("", |s| s.text.as_str()));
    out
}

impl StructuringModel {
    /// The structuring call: its text and finish reason, and its usage. Its partial objects are
    /// emitted as `object` chunks as they change.
    pub(super) async fn structure(
        &self,
        so: &StructuredOutput,
        steps: &[StepResult],
        history: &[ModelMessage],
        sink: &dyn Sink,
        cx: &CallCx<'_>,
    ) -> (Result<(String, FinishReason), AgentError>, Usage) {
        let request = ModelRequest {
            model_id: self.model_id.clone(),
            messages: std::iter::once(ModelMessage::System(system_prompt(so)))
                .chain(history.iter().filter(|m| self.use_agent && !matches!(m, ModelMessage::System(_))).cloned())
                .chain(std::iter::once(ModelMessage::User(vec![UserPart::Text(transcript(steps))])))
                .collect(),
            response_format: Some(so.format.clone()),
            provider_options: self.provider_options.clone(),
            ..Default::default()
        };
        // Its own call over HTTP: the main run's socket belongs to the main model.
        let transport = RefCell::new(Transport::Fetch);
        let cx = CallCx { transport: &transport, include_raw: false, ..*cx };
        let mut usage = Usage::default();
        let answer = self.call(so, &request, sink, &cx, &mut usage).await;
        (answer, usage)
    }

    async fn call(
        &self,
        so: &StructuredOutput,
        request: &ModelRequest,
        sink: &dyn Sink,
        cx: &CallCx<'_>,
        usage: &mut Usage,
    ) -> Result<(String, FinishReason), AgentError> {
        let stop = |s: Stop| match s {
            Stop::Failed(e) => e,
            Stop::Aborted => AgentError::Abort { reason: cx.abort.reason() },
        };
        let call = self.model.prepare(request)?;
        let mut source = self.model.open(&call, cx).await.map_err(stop)?;
        let (mut text, mut reason, mut events) = (String::new(), FinishReason::Other, Vec::new());
        let mut partials = Partials::default();
        loop {
            let more = cx
                .abort
                .race(source.next(&mut events))
                .await
                .ok_or(AgentError::Abort { reason: cx.abort.reason() })??;
            for ev in events.drain(..) {
                match ev {
                    ModelEvent::TextDelta(t) => {
                        if let Some(object) = partials.feed(so, &t) {
                            sink.emit(Chunk::Object { object });
                        }
                        text.push_str(&t);
                    }
                    ModelEvent::Restart => {
                        text.clear();
                        partials = Partials::default();
                    }
                    ModelEvent::Finish { reason: r, usage: u } => {
                        reason = r;
                        if let Some(u) = u {
                            *usage = u;
                        }
                    }
                    ModelEvent::Usage(u) => *usage = u,
                    ModelEvent::Error { message, body } => {
                        return Err(AgentError::ApiCall {
                            message,
                            status: None,
                            body,
                            retryable: false,
                            retry_after_ms: None,
                        })
                    }
                    _ => {}
                }
            }
            if !more {
                return Ok((text, reason));
            }
        }
    }
}
