//! Scorers' rows in the `scores` object store (schema version 5, SPEC §14.2): `saveScore` and
//! `listScores` of `IndexedDBStore`, with the rows and filters of `InMemoryStore`'s
//! (`core::scoring`), so a page's scores outlive a reload.

use serde_json::Value;

use super::conn::SCORES;
use super::IdbStore;
use crate::core::error::AgentError;
use crate::core::scoring::{oldest_first, score_matches, stamp_score};

impl IdbStore {
    /// Stores `row` with an `id` (from `new_id` when it has none) and times, replacing a stored
    /// row of that id; the row as stored.
    pub async fn save_score(&self, row: Value, new_id: &mut dyn FnMut() -> String, now: &str) -> Result<Value, AgentError> {
        let row = stamp_score(row, new_id, now);
        let what = format!("saving score '{}'", row["id"].as_str().unwrap_or_default());
        self.put(SCORES, &row, &what).await?;
        Ok(row)
    }

    /// The rows matching every field `filter` gives (`runId`, `scorerId`, `entityId`,
    /// `entityType`, `source`), oldest first (rows of one millisecond in id order).
    pub async fn list_scores(&self, filter: &Value) -> Result<Vec<Value>, AgentError> {
        let rows = self.all(SCORES, "listing scores").await?;
        let mut rows: Vec<Value> = rows.into_iter().filter(|r| score_matches(filter, r)).collect();
        oldest_first(&mut rows);
        Ok(rows)
    }
}
