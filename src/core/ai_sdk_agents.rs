//! Sub-agent cards of the AI SDK stream (SPEC §18.4): a `tool-output` that wraps a sub-agent's
//! chunk updates that sub-run's card, sent as a `data-tool-agent` part (`id` = the sub-run's
//! `runId`, so the reader replaces the card in place) at most every 100 ms and always when the
//! sub-run ends.

use serde_json::{json, Value};

/// The least time between two sends of one card.
pub const CARD_INTERVAL_MS: f64 = 100.0;

#[derive(Debug)]
struct Card {
    run_id: String,
    agent_id: String,
    status: &'static str,
    text: String,
    reasoning: String,
    tool_calls: Vec<Value>,
    tool_results: Vec<Value>,
    /// When it was last sent (`None`: never).
    sent_at: Option<f64>,
}

/// The cards of one converted stream.
#[derive(Debug, Default)]
pub struct Cards {
    cards: Vec<Card>,
}

impl Cards {
    /// The part for `inner` (a sub-agent chunk forwarded in the delegation `tool_name`), when one
    /// is due at `now_ms`. `None` also when `inner` is not an agent chunk.
    pub fn update(&mut self, tool_name: &str, inner: &Value, now_ms: f64) -> Option<Value> {
        if inner.get("from").and_then(Value::as_str) != Some("AGENT") {
            return None;
        }
        let run_id = inner.get("runId").and_then(Value::as_str)?;
        let kind = inner.get("type").and_then(Value::as_str)?;
        let at = match self.cards.iter().position(|c| c.run_id == run_id) {
            Some(at) => at,
            None => {
                let agent_id = tool_name.strip_prefix("agent-").unwrap_or(tool_name).to_string();
                self.cards.push(Card {
                    run_id: run_id.to_string(),
                    agent_id,
                    status: "running",
                    text: String::new(),
                    reasoning: String::new(),
                    tool_calls: Vec::new(),
                    tool_results: Vec::new(),
                    sent_at: None,
                });
                self.cards.len() - 1
            }
        };
        let card = &mut self.cards[at];
        let p = inner.get("payload").unwrap_or(&Value::Null);
        let text = || p.get("text").and_then(Value::as_str).unwrap_or_default();
        let ended = match kind {
            "text-delta" => {
                card.text.push_str(text());
                false
            }
            "reasoning-delta" => {
                card.reasoning.push_str(text());
                false
            }
            "tool-call" => {
                card.tool_calls.push(p.clone());
                false
            }
            "tool-result" | "tool-error" => {
                card.tool_results.push(p.clone());
                false
            }
            "finish" => {
                card.status = "finished";
                true
            }
            "error" | "abort" => {
                card.status = "error";
                true
            }
            _ => false,
        };
        let due = ended || card.sent_at.is_none_or(|t| now_ms - t >= CARD_INTERVAL_MS);
        if !due {
            return None;
        }
        card.sent_at = Some(now_ms);
        let part = json!({
            "type": "data-tool-agent",
            "id": card.run_id,
            "data": {
                "id": card.agent_id,
                "status": card.status,
                "text": card.text,
                "reasoning": card.reasoning,
                "toolCalls": card.tool_calls,
                "toolResults": card.tool_results,
            },
        });
        if ended {
            self.cards.remove(at);
        }
        Some(part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &str, payload: Value) -> Value {
        json!({ "type": kind, "runId": "sub-1", "from": "AGENT", "payload": payload })
    }

    #[test]
    fn a_card_is_sent_at_most_every_100_ms_and_always_at_the_end() {
        let mut cards = Cards::default();
        let first = cards.update("agent-researcher", &chunk("start", json!({})), 0.0).unwrap();
        assert_eq!(first["type"], "data-tool-agent");
        assert_eq!(first["id"], "sub-1");
        assert_eq!(first["data"]["id"], "researcher");
        assert_eq!(first["data"]["status"], "running");
        assert!(cards.update("agent-researcher", &chunk("text-delta", json!({ "id": "t", "text": "Sol" })), 50.0).is_none());
        let mid = cards.update("agent-researcher", &chunk("text-delta", json!({ "id": "t", "text": "ana" })), 120.0).unwrap();
        assert_eq!(mid["data"]["text"], "Solana");
        assert!(cards.update("agent-researcher", &chunk("tool-call", json!({ "toolCallId": "c" })), 130.0).is_none());
        let last = cards.update("agent-researcher", &chunk("finish", json!({})), 140.0).unwrap();
        assert_eq!(last["data"]["status"], "finished");
        assert_eq!(last["data"]["toolCalls"], json!([{ "toolCallId": "c" }]));
        // A value a tool wrote is no agent chunk.
        assert!(cards.update("weather", &json!({ "progress": 50 }), 500.0).is_none());
        let err = cards.update("agent-x", &json!({ "type": "error", "runId": "sub-2", "from": "AGENT", "payload": {} }), 600.0).unwrap();
        assert_eq!(err["data"]["status"], "error");
    }
}
