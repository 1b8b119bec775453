//! What an output stream owes its reader and has not handed over yet (the bindings' `fullStream`:
//! everything before the stream was created, and what came while its reader lagged far behind).
//! Kept as Rust values, with consecutive deltas of one block joined, so an unread branch costs
//! the text it owes, once, and not a value per delta (issue 18).

use super::chunk::Chunk;

/// The chunks `fullStream` owes, by turn (which writer makes their objects), with their `seq`
/// (SPEC §19.8). A joined delta carries the `seq` of its last part: a reader that reconnects
/// `after` it misses nothing.
#[derive(Default)]
pub struct FullBacklog(Vec<(usize, u64, Chunk)>);

impl FullBacklog {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds a chunk; a delta that continues the last one's block is appended to it.
    pub fn push(&mut self, turn: usize, seq: u64, chunk: Chunk) {
        if let Some((last_turn, last_seq, last)) = self.0.last_mut() {
            if *last_turn == turn {
                match join(last, chunk) {
                    Some(chunk) => self.0.push((turn, seq, chunk)),
                    None => *last_seq = seq,
                }
                return;
            }
        }
        self.0.push((turn, seq, chunk));
    }

    pub fn take(&mut self) -> Vec<(usize, u64, Chunk)> {
        std::mem::take(&mut self.0)
    }
}

/// Appends `next` to `last` when both are deltas of the same text, reasoning or tool-call
/// block; else hands `next` back.
fn join(last: &mut Chunk, next: Chunk) -> Option<Chunk> {
    match (last, next) {
        (Chunk::TextDelta { id, text }, Chunk::TextDelta { id: next_id, text: more })
        | (Chunk::ReasoningDelta { id, text }, Chunk::ReasoningDelta { id: next_id, text: more })
            if *id == next_id =>
        {
            text.push_str(&more);
            None
        }
        (
            Chunk::ToolCallDelta { tool_call_id, args_text_delta, .. },
            Chunk::ToolCallDelta { tool_call_id: next_id, args_text_delta: more, .. },
        ) if *tool_call_id == next_id => {
            args_text_delta.push_str(&more);
            None
        }
        (_, next) => Some(next),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(id: &str, t: &str) -> Chunk {
        Chunk::TextDelta { id: id.into(), text: t.into() }
    }

    #[test]
    fn deltas_of_one_block_are_joined_and_nothing_else_is() {
        let mut b = FullBacklog::default();
        let mut seq = 0;
        let mut push = |b: &mut FullBacklog, turn: usize, c: Chunk| {
            seq += 1;
            b.push(turn, seq, c);
        };
        push(&mut b, 0, Chunk::TextStart { id: "m-1".into() });
        for t in ["Hel", "lo", " there"] {
            push(&mut b, 0, text("m-1", t));
        }
        push(&mut b, 0, Chunk::TextEnd { id: "m-1".into() });
        push(&mut b, 0, Chunk::ReasoningDelta { id: "m-2".into(), text: "a".into() });
        push(&mut b, 0, Chunk::ReasoningDelta { id: "m-2".into(), text: "b".into() });
        push(&mut b, 0, text("m-3", "x"));
        push(&mut b, 0, text("m-4", "y"));
        // Another turn's chunk carries another run id: never joined across turns.
        push(&mut b, 1, text("m-4", "z"));
        let got = b.take();
        // A joined delta carries the seq of its last part.
        let want = vec![
            (0, 1, Chunk::TextStart { id: "m-1".into() }),
            (0, 4, text("m-1", "Hello there")),
            (0, 5, Chunk::TextEnd { id: "m-1".into() }),
            (0, 7, Chunk::ReasoningDelta { id: "m-2".into(), text: "ab".into() }),
            (0, 8, text("m-3", "x")),
            (0, 9, text("m-4", "y")),
            (1, 10, text("m-4", "z")),
        ];
        assert_eq!(got, want);
        assert!(b.is_empty());
    }

    #[test]
    fn tool_call_argument_deltas_of_one_call_are_joined() {
        let delta = |id: &str, a: &str| Chunk::ToolCallDelta {
            tool_call_id: id.into(),
            tool_name: "f".into(),
            args_text_delta: a.into(),
        };
        let mut b = FullBacklog::default();
        for (seq, (id, a)) in [("c1", "{\"q\""), ("c1", ":1}"), ("c2", "{}")].into_iter().enumerate() {
            b.push(0, seq as u64 + 1, delta(id, a));
        }
        assert_eq!(b.take(), vec![(0, 2, delta("c1", "{\"q\":1}")), (0, 3, delta("c2", "{}"))]);
    }
}
