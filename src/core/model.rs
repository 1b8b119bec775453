//! The provider-neutral vocabulary between the step loop and the model APIs: the prompt that goes
//! out (`ModelRequest`) and the events that come back (`ModelEvent`).
//!
//! Providers translate these to and from their wire formats; the loop never sees a wire format.
//! Nothing here knows about JavaScript.

use serde_json::Value;

/// One message of the prompt, in the shape the model APIs share.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelMessage {
    System(String),
    User(Vec<UserPart>),
    Assistant(Vec<AssistantPart>),
    Tool(Vec<ToolResultPart>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum UserPart {
    Text(String),
    /// An image or other file: `data` is a URL (`https:`, `data:`) or bare base64.
    File { data: String, media_type: String, filename: Option<String> },
}

/// Provider data that has to go back with a part on the next call, keyed by provider as the
/// AI SDK's `providerMetadata` is: Anthropic thinking signatures
/// (`{ "anthropic": { "signature" } }`), OpenAI Responses item ids and encrypted reasoning
/// (`{ "openai": { "itemId", "reasoningEncryptedContent" } }`), Gemini thought signatures
/// (`{ "google": { "thoughtSignature" } }`). Stored with the part in memory.
pub type PartMeta = Option<Value>;

#[derive(Clone, Debug, PartialEq)]
pub enum AssistantPart {
    Text(String, PartMeta),
    Reasoning(String, PartMeta),
    ToolCall { tool_call_id: String, tool_name: String, args: Value, meta: PartMeta },
}

impl AssistantPart {
    /// The provider data that came with the part.
    pub fn meta(&self) -> &PartMeta {
        match self {
            AssistantPart::Text(_, meta) | AssistantPart::Reasoning(_, meta) | AssistantPart::ToolCall { meta, .. } => meta,
        }
    }
}

/// `part` (a JSON object) with the provider data under `key` when there is some: the AI SDK's
/// `providerOptions` in a prompt, `providerMetadata` in a stored message.
pub fn with_meta(mut part: Value, key: &str, meta: &PartMeta) -> Value {
    if let (Some(meta), Some(obj)) = (meta, part.as_object_mut()) {
        obj.insert(key.into(), meta.clone());
    }
    part
}

/// Which part of the step a `ModelEvent::PartMeta` belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaTarget {
    /// The text block streaming now (or the last one of the step).
    Text,
    /// The reasoning block streaming now; when none is open (a block that carries no readable
    /// text, such as encrypted or redacted reasoning), a new empty one.
    Reasoning,
    /// The tool call with this `index` (as in `ToolCallDelta`).
    ToolCall(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolResultPart {
    pub tool_call_id: String,
    pub tool_name: String,
    pub result: Value,
    pub is_error: bool,
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Tool(String),
}

/// Sampling and transport settings of one model call (`options.modelSettings`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelSettings {
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u64>,
    pub top_p: Option<f64>,
    pub top_k: Option<f64>,
    pub presence_penalty: Option<f64>,
    pub frequency_penalty: Option<f64>,
    pub stop_sequences: Vec<String>,
    pub seed: Option<i64>,
    pub max_retries: Option<u32>,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
}

impl ModelSettings {
    /// The sampling settings that are set, under the AI SDK's camelCase names (`modelSettings` as
    /// JavaScript writes them): what an AI SDK model object and a processor are handed.
    pub fn sampling_json(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        };
        put("maxOutputTokens", self.max_output_tokens.map(Value::from));
        put("temperature", self.temperature.map(Value::from));
        put("topP", self.top_p.map(Value::from));
        put("topK", self.top_k.map(Value::from));
        put("presencePenalty", self.presence_penalty.map(Value::from));
        put("frequencyPenalty", self.frequency_penalty.map(Value::from));
        put("seed", self.seed.map(Value::from));
        put("stopSequences", (!self.stop_sequences.is_empty()).then(|| self.stop_sequences.clone().into()));
        m
    }
}

/// Everything a provider needs to build one streaming request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelRequest {
    pub model_id: String,
    pub messages: Vec<ModelMessage>,
    pub settings: ModelSettings,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: Option<ToolChoice>,
    /// `providerOptions` of this provider, passed through to the request body.
    pub provider_options: Option<serde_json::Map<String, Value>>,
    /// Structured output (SPEC §12.2): the reply must be JSON matching a schema.
    pub response_format: Option<ResponseFormat>,
}

/// "Answer in JSON matching `schema`", as a provider-neutral request field. A provider with a
/// native JSON-schema mode sends it there; one without appends `inline_text` to the latest user
/// message instead (`ResponseFormat::inline_into`).
#[derive(Clone, Debug, PartialEq)]
pub struct ResponseFormat {
    /// `response`: the name the schema goes by.
    pub name: String,
    pub schema: Value,
    /// `structuredOutput.instructions`, as the format's description.
    pub description: Option<String>,
    /// Whether the schema is strict-compatible, so the provider may enforce it exactly.
    pub strict: bool,
    /// What to tell the model in words when the schema cannot go natively.
    pub inline_text: String,
}

impl ResponseFormat {
    /// The messages with `inline_text` as a last text part of the latest user message (this
    /// request only; a prompt without a user message gets one).
    pub fn inline_into(&self, messages: &[ModelMessage]) -> Vec<ModelMessage> {
        let mut out = messages.to_vec();
        match out.iter_mut().rev().find_map(|m| match m {
            ModelMessage::User(parts) => Some(parts),
            _ => None,
        }) {
            Some(parts) => parts.push(UserPart::Text(self.inline_text.clone())),
            None => out.push(ModelMessage::User(vec![UserPart::Text(self.inline_text.clone())])),
        }
        out
    }
}

/// A non-fatal note about the request, e.g. a setting the provider does not support.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    /// `unsupported-setting` or `other`.
    pub kind: &'static str,
    pub setting: Option<String>,
    pub message: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Error,
    Abort,
    /// A processor stopped the run (`abort()`, SPEC §13.3).
    Tripwire,
    /// The run waits for a decision (SPEC §19.2, `closeOnSuspend`).
    Suspended,
    Other,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool-calls",
            FinishReason::ContentFilter => "content-filter",
            FinishReason::Error => "error",
            FinishReason::Abort => "abort",
            FinishReason::Tripwire => "tripwire",
            FinishReason::Suspended => "suspended",
            FinishReason::Other => "other",
        }
    }
}

/// Token counts. `total_tokens` is the provider's own total when it reports one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
}

impl Usage {
    /// Sum of two usages; a field is present when either side has it.
    pub fn add(&self, other: &Usage) -> Usage {
        fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            }
        }
        Usage {
            input_tokens: sum(self.input_tokens, other.input_tokens),
            output_tokens: sum(self.output_tokens, other.output_tokens),
            total_tokens: sum(self.total_tokens, other.total_tokens),
            reasoning_tokens: sum(self.reasoning_tokens, other.reasoning_tokens),
            cached_input_tokens: sum(self.cached_input_tokens, other.cached_input_tokens),
        }
    }
}

/// One decoded event of a model's response stream.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    /// Response id, model id and creation time (seconds since the epoch), once per response.
    ResponseMetadata { id: Option<String>, model_id: Option<String>, created: Option<u64> },
    TextDelta(String),
    ReasoningDelta(String),
    /// A piece of a streamed tool call. `index` tells calls apart; `id` and `name` arrive with the
    /// first piece of a call, `args_delta` is a fragment of the JSON arguments text.
    ToolCallDelta { index: u32, id: Option<String>, name: Option<String>, args_delta: String },
    /// Provider data for a part (see `PartMeta`); merged into what the part already has.
    PartMeta { target: MetaTarget, meta: Value },
    Finish { reason: FinishReason, usage: Option<Usage> },
    /// Usage reported after the finish reason (OpenAI's trailing usage chunk).
    Usage(Usage),
    /// The provider dropped the message it was streaming and starts a new one (Anthropic's second
    /// `message_start`): only what follows counts for the step.
    Restart,
    /// The provider reported an error inside the stream.
    Error { message: String, body: Option<String> },
    /// The provider's raw event text (only when raw chunks were asked for).
    Raw(String),
}
