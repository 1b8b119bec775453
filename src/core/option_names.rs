//! Option keys that look like a misspelling of a known one (`maxStep` for `maxSteps`). Unknown
//! keys are ignored, as in the reference; a key within a small edit distance of a known name is
//! most likely a typo whose option silently does nothing, so the bindings warn about it once.
//!
//! Pure: the bindings pass the keys the caller wrote and the names they read.

/// The known name `key` most likely meant: the nearest within the allowed distance (one edit
/// for names of up to five letters, else two; ASCII case differences are free), `None` when
/// `key` is known itself or nothing is that near. Compared as ASCII bytes: option names are
/// ASCII, and Unicode case tables would cost the package ~10 KB.
pub fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    if known.contains(&key) {
        return None;
    }
    let allowed = if key.len() <= 5 { 1 } else { 2 };
    let lower = key.to_ascii_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for name in known {
        let d = distance(lower.as_bytes(), name.to_ascii_lowercase().as_bytes());
        if d <= allowed && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, name));
        }
    }
    best.map(|(_, name)| name)
}

/// The warning for one key of `place` (`"agent.stream() options"`), when it has a near name.
pub fn unknown_option_line(key: &str, near: &str, place: &str) -> String {
    format!("wasm-agent: unknown option '{key}' — did you mean '{near}'? ({place}; '{key}' is ignored)")
}

/// The warning for a `stream()` option given to `new Agent(config)`, where it does nothing.
pub fn stream_option_on_agent_line(key: &str) -> String {
    format!("wasm-agent: unknown option '{key}' in new Agent(config) — it is an agent.stream() option: put it in defaultOptions ('{key}' is ignored)")
}

/// The edit distance of `a` and `b`: insertions, deletions, substitutions and swaps of two
/// neighbouring characters each count one (optimal string alignment).
fn distance(a: &[u8], b: &[u8]) -> usize {
    // Three rows: two back (for swaps), the previous one, the current one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["maxSteps", "maxRetries", "onFinish", "onError", "runId", "memory", "system", "stopWhen"];

    #[test]
    fn a_near_miss_names_the_option_it_meant() {
        assert_eq!(nearest("maxStep", KNOWN), Some("maxSteps"));
        assert_eq!(nearest("maxstep", KNOWN), Some("maxSteps"));
        assert_eq!(nearest("MAXSTEPS", KNOWN), Some("maxSteps"));
        assert_eq!(nearest("onFinsih", KNOWN), Some("onFinish"), "two letters swapped are one edit");
        assert_eq!(nearest("onFnish", KNOWN), Some("onFinish"));
        assert_eq!(nearest("maxRetires", KNOWN), Some("maxRetries"));
        assert_eq!(nearest("runID", KNOWN), Some("runId"));
        assert_eq!(nearest("memroy", KNOWN), Some("memory"));
    }

    #[test]
    fn known_and_far_keys_get_no_suggestion() {
        assert_eq!(nearest("maxSteps", KNOWN), None);
        assert_eq!(nearest("threadId", KNOWN), None);
        assert_eq!(nearest("temperature", KNOWN), None);
        // Short names allow one edit only.
        assert_eq!(nearest("runXY", KNOWN), None);
        assert_eq!(nearest("x", KNOWN), None);
    }

    #[test]
    fn distance_counts_edits_and_swaps() {
        assert_eq!(distance(b"", b"abc"), 3);
        assert_eq!(distance(b"abc", b"abc"), 0);
        assert_eq!(distance(b"abc", b"acb"), 1);
        assert_eq!(distance(b"kitten", b"sitting"), 3);
        assert_eq!(distance(b"maxstep", b"maxsteps"), 1);
    }

    #[test]
    fn a_stream_option_on_the_agent_says_where_it_goes() {
        assert_eq!(
            stream_option_on_agent_line("maxSteps"),
            "wasm-agent: unknown option 'maxSteps' in new Agent(config) — it is an agent.stream() option: put it in defaultOptions ('maxSteps' is ignored)"
        );
    }

    #[test]
    fn the_line_says_what_was_written_and_what_it_likely_meant() {
        assert_eq!(
            unknown_option_line("maxStep", "maxSteps", "agent.stream() options"),
            "wasm-agent: unknown option 'maxStep' — did you mean 'maxSteps'? (agent.stream() options; 'maxStep' is ignored)"
        );
    }
}
