//! What a scorer gets of a finished run (SPEC §14.2): the run's input — the caller's new messages,
//! the messages memory remembered, the system messages — and its response messages, all in the
//! stored-message shape of §7. The same data is `scoringData` under `returnScorerData`.
//!
//! Pure: the loop records what it sent (`ScoringCapture`) when the run asks for scoring data, and
//! builds the JSON once the run ended well. Running the scorers is the bindings' (JavaScript)
//! business; nothing here calls a scorer.

use serde_json::{json, Value};

use super::memory::{assistant_message, input_messages, iso_time, StoredMessage, Thread};
use super::model::ModelMessage;
use super::step::StepResult;

/// What the loop sent, kept for the scoring data.
#[derive(Default)]
pub struct ScoringCapture {
    /// The system messages: instructions, `system`, and those of `context` and of the input.
    pub system: Vec<String>,
    /// The stored messages memory loaded as history.
    pub remembered: Vec<StoredMessage>,
    /// The caller's messages after the input processors, with the ids they keep.
    pub input: Vec<ModelMessage>,
    pub input_ids: Vec<Option<String>>,
    /// The memory thread, when the run used one.
    pub thread: Option<Thread>,
}

impl ScoringCapture {
    /// Records the prefix of the prompt (system messages and context) and the caller's input.
    pub fn new(prefix: &[ModelMessage], input: &[ModelMessage], input_ids: &[Option<String>]) -> Self {
        let system = prefix.iter().chain(input).filter_map(|m| match m {
            ModelMessage::System(text) => Some(text.clone()),
            _ => None,
        });
        ScoringCapture { system: system.collect(), input: input.to_vec(), input_ids: input_ids.to_vec(), ..Default::default() }
    }

    /// `{ input: { inputMessages, rememberedMessages, systemMessages, taggedSystemMessages }, output }`
    /// of a run whose response is `steps` (its assistant message has `message_id`). `next` gives
    /// the input messages that have no id of their own an id, in order; `now_ms` dates them.
    pub fn to_json(&self, message_id: &str, steps: &[StepResult], now_ms: f64, next_id: &mut dyn FnMut() -> String) -> Value {
        let thread = self.thread.clone().unwrap_or_else(|| Thread {
            id: String::new(),
            resource_id: String::new(),
            title: None,
            metadata: None,
            created_at: String::new(),
            updated_at: String::new(),
        });
        let at = iso_time(now_ms);
        let mut next = || (next_id(), at.clone());
        let shown = |m: &StoredMessage| self.shown(m.to_json());
        let inputs: Vec<Value> = input_messages(&self.input, &self.input_ids, &thread, &mut next).iter().map(shown).collect();
        let remembered: Vec<Value> = self.remembered.iter().map(shown).collect();
        let output: Vec<Value> = assistant_message(message_id.to_string(), &thread, at.clone(), steps, None).iter().map(shown).collect();
        let system: Vec<Value> = self.system.iter().map(|s| json!({ "role": "system", "content": s })).collect();
        json!({
            "input": {
                "inputMessages": inputs,
                "rememberedMessages": remembered,
                "systemMessages": system,
                "taggedSystemMessages": {},
            },
            "output": output,
        })
    }

    /// A stored message as shown: without thread and resource ids when the run had no thread.
    fn shown(&self, mut v: Value) -> Value {
        if self.thread.is_none() {
            if let Some(o) = v.as_object_mut() {
                o.remove("threadId");
                o.remove("resourceId");
            }
        }
        v
    }
}

/// The scores a built-in store keeps (`saveScore` / `listScores` of `InMemoryStore`): rows as the
/// scorers gave them, with an `id` and `createdAt` added when absent, listed oldest first.
#[derive(Default)]
pub struct ScoreRows(std::cell::RefCell<Vec<Value>>);

/// The fields `listScores` filters on.
const FILTERS: &[&str] = &["runId", "scorerId", "entityId", "entityType", "source"];

impl ScoreRows {
    /// Stores `row` (an object) and gives it back as stored. A row with the id of a stored one
    /// replaces it.
    pub fn save(&self, row: Value, new_id: &mut dyn FnMut() -> String, now: &str) -> Value {
        let row = stamp_score(row, new_id, now);
        let mut rows = self.0.borrow_mut();
        match rows.iter_mut().find(|r| r["id"] == row["id"]) {
            Some(old) => *old = row.clone(),
            None => rows.push(row.clone()),
        }
        row
    }

    /// The rows matching every filter `filter` gives (`runId`, `scorerId`, `entityId`,
    /// `entityType`, `source`), oldest first.
    pub fn list(&self, filter: &Value) -> Vec<Value> {
        let mut rows: Vec<Value> = self.0.borrow().iter().filter(|r| score_matches(filter, r)).cloned().collect();
        oldest_first(&mut rows);
        rows
    }
}

/// Sorts rows by `createdAt` (ISO times sort as text); the sort is stable, so rows of one
/// millisecond keep the order they came in.
pub fn oldest_first(rows: &mut [Value]) {
    rows.sort_by(|a, b| a["createdAt"].as_str().unwrap_or_default().cmp(b["createdAt"].as_str().unwrap_or_default()));
}

/// `row` (an object; anything else becomes `{}`) as a store keeps it: an `id` and `createdAt`
/// added when absent, `updatedAt` set to `now`.
pub fn stamp_score(row: Value, new_id: &mut dyn FnMut() -> String, now: &str) -> Value {
    let mut row = match row {
        Value::Object(o) => o,
        _ => serde_json::Map::new(),
    };
    if !row.get("id").is_some_and(Value::is_string) {
        row.insert("id".into(), new_id().into());
    }
    if !row.get("createdAt").is_some_and(Value::is_string) {
        row.insert("createdAt".into(), now.into());
    }
    row.insert("updatedAt".into(), now.into());
    Value::Object(row)
}

/// Whether `row` has every field `filter` gives among `runId`, `scorerId`, `entityId`,
/// `entityType` and `source` (null ones ignored).
pub fn score_matches(filter: &Value, row: &Value) -> bool {
    FILTERS.iter().all(|k| match filter.get(*k) {
        None | Some(Value::Null) => true,
        Some(v) => row.get(*k) == Some(v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{AssistantPart, FinishReason, Usage, UserPart};
    use crate::core::step::ResponseInfo;

    fn step(text: &str) -> StepResult {
        StepResult {
            message_id: "m".into(),
            text: text.into(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
            finish_reason: FinishReason::Stop,
            usage: Usage::default(),
            warnings: Vec::new(),
            request_body: String::new(),
            response: ResponseInfo::default(),
            parts: vec![AssistantPart::Text(text.into(), None)],
            tool_results: Vec::new(),
            data_parts: Vec::new(),
        }
    }

    #[test]
    fn score_rows_get_an_id_and_a_time_and_list_by_every_filter_given() {
        let rows = ScoreRows::default();
        let mut n = 0;
        let mut id = || {
            n += 1;
            format!("s{n}")
        };
        let a = rows.save(json!({ "scorerId": "x", "runId": "r1", "score": 1 }), &mut id, "2026-01-01T00:00:00.000Z");
        assert_eq!((a["id"].as_str(), a["createdAt"].as_str()), (Some("s1"), Some("2026-01-01T00:00:00.000Z")));
        rows.save(json!({ "scorerId": "y", "runId": "r1", "score": 0.5, "id": "own" }), &mut id, "2026-01-01T00:00:01.000Z");
        rows.save(json!({ "scorerId": "x", "runId": "r2", "score": 0 }), &mut id, "2026-01-01T00:00:02.000Z");
        let ids = |f: Value| rows.list(&f).iter().map(|r| r["id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(ids(json!({})), ["s1", "own", "s2"]);
        assert_eq!(ids(json!({ "runId": "r1" })), ["s1", "own"]);
        assert_eq!(ids(json!({ "runId": "r1", "scorerId": "x" })), ["s1"]);
        assert_eq!(ids(json!({ "scorerId": null })), ["s1", "own", "s2"], "null filters nothing");
        // The same id again replaces the row; stamped anew, it lists by its new createdAt.
        rows.save(json!({ "scorerId": "y", "runId": "r1", "score": 1, "id": "own" }), &mut id, "2026-01-01T00:00:03.000Z");
        assert_eq!(ids(json!({})), ["s1", "s2", "own"]);
        // Oldest first by createdAt, whatever order the rows came in.
        rows.save(json!({ "scorerId": "z", "runId": "r3", "createdAt": "2025-12-31T00:00:00.000Z" }), &mut id, "2026-01-01T00:00:04.000Z");
        assert_eq!(ids(json!({})), ["s3", "s1", "s2", "own"]);
        assert_eq!(rows.list(&json!({ "scorerId": "y" }))[0]["score"], 1);
    }

    #[test]
    fn without_memory_the_messages_have_no_thread_and_the_system_messages_are_listed() {
        let prefix = [ModelMessage::System("Be brief.".into())];
        let input = [ModelMessage::System("Answer in French.".into()), ModelMessage::User(vec![UserPart::Text("Hi".into())])];
        let cap = ScoringCapture::new(&prefix, &input, &[None, Some("u-1".into())]);
        let mut n = 0;
        let v = cap.to_json("msg-1", &[step("Bonjour")], 0.0, &mut || {
            n += 1;
            format!("id-{n}")
        });
        assert_eq!(v["input"]["systemMessages"], json!([{ "role": "system", "content": "Be brief." }, { "role": "system", "content": "Answer in French." }]));
        assert_eq!(v["input"]["taggedSystemMessages"], json!({}));
        assert_eq!(v["input"]["rememberedMessages"], json!([]));
        let inputs = v["input"]["inputMessages"].as_array().unwrap();
        assert_eq!(inputs.len(), 1);
        assert_eq!(inputs[0]["id"], "u-1", "a message keeps its own id");
        assert_eq!(inputs[0]["role"], "user");
        assert_eq!(inputs[0]["content"], json!({ "format": 2, "parts": [{ "type": "text", "text": "Hi" }] }));
        assert!(inputs[0].get("threadId").is_none() && inputs[0].get("resourceId").is_none());
        let out = v["output"].as_array().unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["id"], "msg-1");
        assert_eq!(out[0]["role"], "assistant");
        assert_eq!(out[0]["content"]["parts"], json!([{ "type": "step-start" }, { "type": "text", "text": "Bonjour" }]));
    }

    #[test]
    fn with_memory_the_thread_is_named_and_remembered_messages_come_as_stored() {
        let thread = Thread {
            id: "t1".into(),
            resource_id: "u1".into(),
            title: None,
            metadata: None,
            created_at: String::new(),
            updated_at: String::new(),
        };
        let old = StoredMessage {
            id: "m0".into(),
            thread_id: "t1".into(),
            resource_id: "u1".into(),
            role: "user".into(),
            created_at: "2025-01-01T00:00:00.000Z".into(),
            parts: vec![json!({ "type": "text", "text": "earlier" })],
            metadata: None,
        };
        let mut cap = ScoringCapture::new(&[], &[ModelMessage::User(vec![UserPart::Text("now".into())])], &[]);
        cap.remembered = vec![old.clone()];
        cap.thread = Some(thread);
        let v = cap.to_json("a1", &[step("ok")], 1_000.0, &mut || "new".into());
        assert_eq!(v["input"]["rememberedMessages"], json!([old.to_json()]));
        let input = &v["input"]["inputMessages"][0];
        assert_eq!((input["id"].as_str(), input["threadId"].as_str(), input["resourceId"].as_str()), (Some("new"), Some("t1"), Some("u1")));
        assert_eq!(input["createdAt"], "1970-01-01T00:00:01.000Z");
        assert_eq!(v["output"][0]["threadId"], "t1");
    }
}
