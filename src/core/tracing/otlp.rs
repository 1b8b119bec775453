//! Spans as OTLP/HTTP JSON (`ExportTraceServiceRequest`, SPEC §16.5), with the OTel GenAI
//! attribute names @mastra/otel-exporter writes, and the AI SDK's `ai.*` ones when the run has
//! `telemetry` on (§17).

use serde_json::{Map, Value};

use super::Span;

const SDK: &str = "wasm-agent";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `{ <key>: <v> }`: one JSON object of one member (what `json!` would expand at every use).
fn one(key: &str, v: Value) -> Value {
    let mut m = Map::new();
    m.insert(key.into(), v);
    Value::Object(m)
}

/// An OTLP `AnyValue`: `intValue` as a decimal string, string arrays as `arrayValue`, objects
/// as JSON text.
pub fn any_value(v: &Value) -> Value {
    match v {
        Value::String(s) => one("stringValue", s.clone().into()),
        Value::Bool(b) => one("boolValue", (*b).into()),
        Value::Number(n) if n.is_i64() || n.is_u64() => one("intValue", n.to_string().into()),
        Value::Number(n) => one("doubleValue", n.as_f64().unwrap_or(0.0).into()),
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            one("arrayValue", one("values", Value::Array(a.iter().map(any_value).collect())))
        }
        other => one("stringValue", other.to_string().into()),
    }
}

/// An OTLP `KeyValue`.
fn key_value(key: &str, value: Value) -> Value {
    let mut m = Map::new();
    m.insert("key".into(), key.into());
    m.insert("value".into(), value);
    Value::Object(m)
}

struct Attrs(Vec<Value>);

impl Attrs {
    /// `key` = `v` unless it is absent or null.
    fn put(&mut self, key: &str, v: Option<&Value>) {
        if let Some(v) = v.filter(|v| !v.is_null()) {
            self.0.push(key_value(key, any_value(v)));
        }
    }
    /// `key` = the string `v`.
    fn text(&mut self, key: &str, v: &str) {
        self.0.push(key_value(key, one("stringValue", v.into())));
    }
    /// `key` = `v` as JSON text, when there is a `v`.
    fn json(&mut self, key: &str, v: Option<&Value>) {
        if let Some(v) = v {
            self.text(key, &v.to_string());
        }
    }
    /// `key` = the attribute `from` of `a`, for each pair.
    fn copy(&mut self, a: &Map<String, Value>, pairs: &[(&str, &str)]) {
        for (from, key) in pairs {
            self.put(key, a.get(*from));
        }
    }
}

/// Milliseconds as decimal nanoseconds, to the microsecond (`u64` microseconds: no `u128`
/// formatting in the build).
fn nanos(ms: f64) -> String {
    match (ms * 1000.0).round().max(0.0) as u64 {
        0 => "0".into(),
        micros => format!("{micros}000"),
    }
}

/// The AI SDK telemetry of a trace (§17): its root's `functionId` and `telemetry` metadata.
struct Telemetry<'a> {
    function_id: Option<&'a Value>,
    metadata: Option<&'a Map<String, Value>>,
}

/// `<operation> <identifier>` and the operation.
fn op_name(span: &Span, agent_name: &str) -> (String, Option<&'static str>) {
    let entity = span.entity.as_ref().map(|e| e.2.as_str()).unwrap_or_default();
    match span.kind.as_str() {
        "agent_run" => (format!("invoke_agent {entity}"), Some("invoke_agent")),
        "model_generation" => {
            let model = span.attributes.get("model").and_then(Value::as_str).unwrap_or_default();
            (format!("chat {model}"), Some("chat"))
        }
        "model_step" => (format!("agent_step {agent_name}"), Some("agent_step")),
        "tool_call" => (format!("execute_tool {entity}"), Some("execute_tool")),
        _ => (span.name.clone(), None),
    }
}

fn span_json(span: &Span, agent_name: &str, tel: Option<&Telemetry<'_>>) -> Value {
    let (name, op) = op_name(span, agent_name);
    let a = &span.attributes;
    let kind = span.kind.as_str();
    let mut at = Attrs(Vec::new());
    if let Some(op) = op {
        at.text("gen_ai.operation.name", op);
    }
    at.text("mastra.span.type", kind);
    let usage = a.get("usage");
    let usage_of = |k: &str| usage.and_then(|u| u.get(k));
    let detail = |k: &str, d: &str| usage.and_then(|u| u.get(k)).and_then(|x| x.get(d));
    let finish = a.get("finishReason");
    let input = span.input.as_ref();
    let output = span.output.as_ref();
    match kind {
        "agent_run" => {
            if let Some((_, id, n)) = &span.entity {
                at.text("gen_ai.agent.id", id);
                at.text("gen_ai.agent.name", n);
            }
            at.copy(a, &[("conversationId", "gen_ai.conversation.id")]);
            at.json("gen_ai.system_instructions", a.get("instructions"));
            at.json("gen_ai.input.messages", input);
            at.json("gen_ai.output.messages", output);
            if let Some(t) = &span.tags {
                at.text("mastra.tags", &Value::from(t.clone()).to_string());
            }
        }
        "model_generation" | "model_step" => {
            if kind == "model_generation" {
                at.copy(a, &[("model", "gen_ai.request.model"), ("provider", "gen_ai.provider.name")]);
                if let Some(p) = a.get("parameters").and_then(Value::as_object) {
                    at.copy(
                        p,
                        &[
                            ("temperature", "gen_ai.request.temperature"),
                            ("maxOutputTokens", "gen_ai.request.max_tokens"),
                            ("topP", "gen_ai.request.top_p"),
                            ("topK", "gen_ai.request.top_k"),
                            ("presencePenalty", "gen_ai.request.presence_penalty"),
                            ("frequencyPenalty", "gen_ai.request.frequency_penalty"),
                            ("seed", "gen_ai.request.seed"),
                            ("stopSequences", "gen_ai.request.stop_sequences"),
                        ],
                    );
                }
                at.copy(a, &[("responseId", "gen_ai.response.id"), ("responseModel", "gen_ai.response.model")]);
            }
            at.put("gen_ai.usage.input_tokens", usage_of("inputTokens"));
            at.put("gen_ai.usage.output_tokens", usage_of("outputTokens"));
            at.put("gen_ai.usage.reasoning_tokens", detail("outputDetails", "reasoning"));
            at.put("gen_ai.usage.cache_read.input_tokens", detail("inputDetails", "cacheRead"));
            if let Some(f) = finish {
                at.put("gen_ai.response.finish_reasons", Some(&Value::Array(vec![f.clone()])));
            }
            at.json("gen_ai.input.messages", input);
            at.json("gen_ai.output.messages", output);
        }
        "tool_call" => {
            if let Some(e) = &span.entity {
                at.text("gen_ai.tool.name", &e.2);
            }
            at.copy(a, &[("toolCallId", "gen_ai.tool.call.id"), ("toolDescription", "gen_ai.tool.description")]);
            at.json("gen_ai.tool.call.arguments", input);
            at.json("gen_ai.tool.call.result", output);
        }
        _ => {}
    }
    for (k, v) in &span.metadata {
        let key = format!("mastra.metadata.{k}");
        if v.is_object() || v.is_array() {
            at.text(&key, &v.to_string());
        } else {
            at.put(&key, Some(v));
        }
    }
    if let Some(t) = tel {
        at.put("ai.telemetry.functionId", t.function_id);
        at.put("resource.name", t.function_id);
        for (k, v) in t.metadata.into_iter().flatten() {
            at.put(&format!("ai.telemetry.metadata.{k}"), Some(v));
        }
        let operation = match kind {
            "agent_run" => Some("ai.streamText"),
            "model_generation" | "model_step" => Some("ai.streamText.doStream"),
            "tool_call" => Some("ai.toolCall"),
            _ => None,
        };
        if let Some(op) = operation {
            at.text("ai.operationId", op);
        }
        if kind == "model_generation" {
            at.copy(a, &[("model", "ai.model.id"), ("provider", "ai.model.provider")]);
        }
        if kind.starts_with("model_") {
            at.put("ai.usage.promptTokens", usage_of("inputTokens"));
            at.put("ai.usage.completionTokens", usage_of("outputTokens"));
            at.put("ai.response.finishReason", finish);
            at.json("ai.prompt.messages", input);
        }
        if kind == "tool_call" {
            at.json("ai.toolCall.args", input);
            at.json("ai.toolCall.result", output);
        } else if let Some(o) = output {
            at.put("ai.response.text", o.get("text"));
            at.json("ai.response.toolCalls", o.get("toolCalls"));
        }
    }
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.into(), v);
    };
    put("traceId", span.trace_id.clone().into());
    put("spanId", span.id.clone().into());
    if let Some(p) = span.parent_span_id.as_ref().or(span.external_parent_span_id.as_ref()) {
        put("parentSpanId", p.clone().into());
    }
    put("name", name.into());
    put("kind", (if kind == "model_generation" { 3 } else { 1 }).into());
    put("startTimeUnixNano", nanos(span.start_ms).into());
    let end = span.end_ms.unwrap_or(span.start_ms);
    put("endTimeUnixNano", nanos(end).into());
    put("attributes", Value::Array(at.0));
    let mut status = Map::new();
    match &span.error_info {
        None => {
            status.insert("code".into(), 1.into());
            put("status", Value::Object(status));
        }
        Some(e) => {
            status.insert("code".into(), 2.into());
            status.insert("message".into(), e.message.clone().into());
            put("status", Value::Object(status));
            let mut ex = Attrs(Vec::new());
            ex.text("exception.type", &e.name);
            ex.text("exception.message", &e.message);
            let mut ev = Map::new();
            ev.insert("timeUnixNano".into(), nanos(end).into());
            ev.insert("name".into(), "exception".into());
            ev.insert("attributes".into(), Value::Array(ex.0));
            put("events", Value::Array(vec![Value::Object(ev)]));
        }
    }
    Value::Object(m)
}

/// One `ExportTraceServiceRequest` body for `spans` (any traces; ended spans).
pub fn body(spans: &[Span], service_name: &str) -> Value {
    let roots: Vec<&Span> = spans.iter().filter(|s| s.kind == "agent_run").collect();
    let mut out = Vec::with_capacity(spans.len());
    for s in spans {
        let root = roots.iter().find(|r| r.trace_id == s.trace_id);
        let agent = root.and_then(|r| r.entity.as_ref()).map(|e| e.2.as_str()).unwrap_or_default();
        let tel = root.filter(|r| r.metadata.contains_key("telemetry")).map(|r| Telemetry {
            function_id: r.metadata.get("functionId"),
            metadata: r.metadata.get("telemetry").and_then(Value::as_object),
        });
        out.push(span_json(s, agent, tel.as_ref()));
    }
    let mut resource = Attrs(Vec::new());
    resource.text("service.name", service_name);
    resource.text("telemetry.sdk.name", SDK);
    resource.text("telemetry.sdk.version", VERSION);
    resource.text("telemetry.sdk.language", "webjs");
    let mut scope = Map::new();
    scope.insert("name".into(), SDK.into());
    scope.insert("version".into(), VERSION.into());
    let mut scope_spans = Map::new();
    scope_spans.insert("scope".into(), Value::Object(scope));
    scope_spans.insert("spans".into(), Value::Array(out));
    let mut rs = Map::new();
    rs.insert("resource".into(), one("attributes", Value::Array(resource.0)));
    rs.insert("scopeSpans".into(), Value::Array(vec![Value::Object(scope_spans)]));
    one("resourceSpans", Value::Array(vec![Value::Object(rs)]))
}
