//! Spans as OTLP/HTTP JSON (`ExportTraceServiceRequest`, SPEC §16.5), with the OTel GenAI
//! attribute names @mastra/otel-exporter writes, and the AI SDK's `ai.*` ones when the run has
//! `telemetry` on (§17).

use serde_json::{json, Map, Value};

use super::Span;

const SDK: &str = "wasm-agent";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// An OTLP `AnyValue`: `intValue` as a decimal string, string arrays as `arrayValue`, objects
/// as JSON text.
pub fn any_value(v: &Value) -> Value {
    match v {
        Value::String(s) => json!({ "stringValue": s }),
        Value::Bool(b) => json!({ "boolValue": b }),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({ "intValue": n.to_string() }),
        Value::Number(n) => json!({ "doubleValue": n.as_f64().unwrap_or(0.0) }),
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            json!({ "arrayValue": { "values": a.iter().map(any_value).collect::<Vec<_>>() } })
        }
        other => json!({ "stringValue": other.to_string() }),
    }
}

struct Attrs(Vec<Value>);

impl Attrs {
    fn put(&mut self, key: &str, v: Option<Value>) {
        if let Some(v) = v.filter(|v| !v.is_null()) {
            self.0.push(json!({ "key": key, "value": any_value(&v) }));
        }
    }
    fn json(&mut self, key: &str, v: Option<&Value>) {
        self.put(key, v.map(|v| Value::String(v.to_string())));
    }
}

fn nanos(ms: f64) -> String {
    let micros = (ms * 1000.0).round().max(0.0) as u128;
    (micros * 1000).to_string()
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
    let mut at = Attrs(Vec::new());
    at.put("gen_ai.operation.name", op.map(Value::from));
    at.put("mastra.span.type", Some(span.kind.clone().into()));
    let usage = a.get("usage");
    let usage_of = |k: &str| usage.and_then(|u| u.get(k)).cloned();
    let detail = |k: &str, d: &str| usage.and_then(|u| u.get(k)).and_then(|x| x.get(d)).cloned();
    let finish = a.get("finishReason").cloned();
    match span.kind.as_str() {
        "agent_run" => {
            if let Some((_, id, n)) = &span.entity {
                at.put("gen_ai.agent.id", Some(id.clone().into()));
                at.put("gen_ai.agent.name", Some(n.clone().into()));
            }
            at.put("gen_ai.conversation.id", a.get("conversationId").cloned());
            at.json("gen_ai.system_instructions", a.get("instructions"));
            at.json("gen_ai.input.messages", span.input.as_ref());
            at.json("gen_ai.output.messages", span.output.as_ref());
            if let Some(t) = &span.tags {
                at.put("mastra.tags", Some(Value::String(Value::from(t.clone()).to_string())));
            }
        }
        "model_generation" | "model_step" => {
            if span.kind == "model_generation" {
                at.put("gen_ai.request.model", a.get("model").cloned());
                at.put("gen_ai.provider.name", a.get("provider").cloned());
                let p = a.get("parameters");
                for (from, to) in [
                    ("temperature", "temperature"),
                    ("maxOutputTokens", "max_tokens"),
                    ("topP", "top_p"),
                    ("topK", "top_k"),
                    ("presencePenalty", "presence_penalty"),
                    ("frequencyPenalty", "frequency_penalty"),
                    ("seed", "seed"),
                    ("stopSequences", "stop_sequences"),
                ] {
                    at.put(&format!("gen_ai.request.{to}"), p.and_then(|p| p.get(from)).cloned());
                }
                at.put("gen_ai.response.id", a.get("responseId").cloned());
                at.put("gen_ai.response.model", a.get("responseModel").cloned());
            }
            at.put("gen_ai.usage.input_tokens", usage_of("inputTokens"));
            at.put("gen_ai.usage.output_tokens", usage_of("outputTokens"));
            at.put("gen_ai.usage.reasoning_tokens", detail("outputDetails", "reasoning"));
            at.put("gen_ai.usage.cache_read.input_tokens", detail("inputDetails", "cacheRead"));
            at.put("gen_ai.response.finish_reasons", finish.clone().map(|f| Value::Array(vec![f])));
            at.json("gen_ai.input.messages", span.input.as_ref());
            at.json("gen_ai.output.messages", span.output.as_ref());
        }
        "tool_call" => {
            at.put("gen_ai.tool.name", span.entity.as_ref().map(|e| e.2.clone().into()));
            at.put("gen_ai.tool.call.id", a.get("toolCallId").cloned());
            at.put("gen_ai.tool.description", a.get("toolDescription").cloned());
            at.json("gen_ai.tool.call.arguments", span.input.as_ref());
            at.json("gen_ai.tool.call.result", span.output.as_ref());
        }
        _ => {}
    }
    for (k, v) in &span.metadata {
        let v = if v.is_object() || v.is_array() { Value::String(v.to_string()) } else { v.clone() };
        at.put(&format!("mastra.metadata.{k}"), Some(v));
    }
    if let Some(t) = tel {
        let fid = t.function_id.cloned();
        at.put("ai.telemetry.functionId", fid.clone());
        at.put("resource.name", fid);
        for (k, v) in t.metadata.into_iter().flatten() {
            at.put(&format!("ai.telemetry.metadata.{k}"), Some(v.clone()));
        }
        let operation = match span.kind.as_str() {
            "agent_run" => Some("ai.streamText"),
            "model_generation" | "model_step" => Some("ai.streamText.doStream"),
            "tool_call" => Some("ai.toolCall"),
            _ => None,
        };
        at.put("ai.operationId", operation.map(Value::from));
        if span.kind == "model_generation" {
            at.put("ai.model.id", a.get("model").cloned());
            at.put("ai.model.provider", a.get("provider").cloned());
        }
        if span.kind.starts_with("model_") {
            at.put("ai.usage.promptTokens", usage_of("inputTokens"));
            at.put("ai.usage.completionTokens", usage_of("outputTokens"));
            at.put("ai.response.finishReason", finish);
            at.json("ai.prompt.messages", span.input.as_ref());
        }
        if span.kind == "tool_call" {
            at.json("ai.toolCall.args", span.input.as_ref());
            at.json("ai.toolCall.result", span.output.as_ref());
        } else if let Some(o) = &span.output {
            at.put("ai.response.text", o.get("text").cloned());
            at.json("ai.response.toolCalls", o.get("toolCalls"));
        }
    }
    let mut m = Map::new();
    m.insert("traceId".into(), span.trace_id.clone().into());
    m.insert("spanId".into(), span.id.clone().into());
    if let Some(p) = span.parent_span_id.as_ref().or(span.external_parent_span_id.as_ref()) {
        m.insert("parentSpanId".into(), p.clone().into());
    }
    m.insert("name".into(), name.into());
    m.insert("kind".into(), (if span.kind == "model_generation" { 3 } else { 1 }).into());
    m.insert("startTimeUnixNano".into(), nanos(span.start_ms).into());
    let end = span.end_ms.unwrap_or(span.start_ms);
    m.insert("endTimeUnixNano".into(), nanos(end).into());
    m.insert("attributes".into(), Value::Array(at.0));
    match &span.error_info {
        None => {
            m.insert("status".into(), json!({ "code": 1 }));
        }
        Some(e) => {
            m.insert("status".into(), json!({ "code": 2, "message": e.message }));
            let ev = json!({
                "timeUnixNano": nanos(end),
                "name": "exception",
                "attributes": [
                    { "key": "exception.type", "value": { "stringValue": e.name } },
                    { "key": "exception.message", "value": { "stringValue": e.message } },
                ],
            });
            m.insert("events".into(), Value::Array(vec![ev]));
        }
    }
    Value::Object(m)
}

/// One `ExportTraceServiceRequest` body for `spans` (any traces; ended spans).
pub fn body(spans: &[Span], service_name: &str) -> Value {
    let roots: Vec<&Span> = spans.iter().filter(|s| s.kind == "agent_run").collect();
    let out: Vec<Value> = spans
        .iter()
        .map(|s| {
            let root = roots.iter().find(|r| r.trace_id == s.trace_id);
            let agent = root.and_then(|r| r.entity.as_ref()).map(|e| e.2.as_str()).unwrap_or_default();
            let tel = root.filter(|r| r.metadata.contains_key("telemetry")).map(|r| Telemetry {
                function_id: r.metadata.get("functionId"),
                metadata: r.metadata.get("telemetry").and_then(Value::as_object),
            });
            span_json(s, agent, tel.as_ref())
        })
        .collect();
    let attr = |k: &str, v: &str| json!({ "key": k, "value": { "stringValue": v } });
    json!({
        "resourceSpans": [{
            "resource": { "attributes": [
                attr("service.name", service_name),
                attr("telemetry.sdk.name", SDK),
                attr("telemetry.sdk.version", VERSION),
                attr("telemetry.sdk.language", "webjs"),
            ] },
            "scopeSpans": [{ "scope": { "name": SDK, "version": VERSION }, "spans": out }],
        }],
    })
}
