//! Options of the reference's `agent.stream()` that this version does not honour yet. Each one a
//! caller sets (in the call or in the agent's `defaultOptions`) becomes an `unsupported-setting`
//! warning in the output's `warnings` and the first `step-start`, and one `console.warn` per
//! process, so nothing a Mastra user writes is dropped without a word (SPEC §3).
//!
//! Pure: the bindings say which names the caller set; this module knows the names, what happens
//! instead, and builds the warnings. Keys the reference does not have are not listed here: they
//! stay silently ignored, as there. An option this version honours must never be listed.

use super::model::Warning;

/// Each option by its dotted name in `stream()` options, and what happens instead (one sentence).
/// A nested name (`memory.options.semanticRecall`) is one whose parent is honoured.
pub const UNSUPPORTED: &[(&str, &str)] = &[
    #[cfg(not(feature = "scorers"))]
    (
        "isTaskComplete",
        "This build leaves out scorers (wasm-agent/lite), so no completion check runs: the run ends as it would without it.",
    ),
    (
        "versions",
        "There is no version store here (the reference needs its editor package): the agents defined in code run.",
    ),
    // Honoured with the `tracing` feature (SPEC §16–17); wasm-agent/lite has none.
    #[cfg(not(feature = "tracing"))]
    ("tracingOptions", "This build has no tracing (wasm-agent/lite): no trace is created and `traceId` stays undefined."),
    #[cfg(not(feature = "tracing"))]
    ("tracingContext", "This build has no tracing (wasm-agent/lite): no span is created under the given span."),
    #[cfg(not(feature = "tracing"))]
    ("telemetry", "This build has no tracing (wasm-agent/lite): the run records no spans or telemetry attributes."),
    #[cfg(not(feature = "recall"))]
    (
        "memory.options.semanticRecall",
        "This build leaves out semantic recall (wasm-agent/lite): only the thread's last messages (lastMessages) are loaded.",
    ),
];

/// The warnings of one call: one per listed option for which `given(name)` says the caller set
/// it, in the order of `UNSUPPORTED`. (The bindings count `undefined`, `null`, `false` and an
/// empty array as not set: they ask for nothing this version does not already do.)
pub fn setting_warnings(given: &mut dyn FnMut(&'static str) -> bool) -> Vec<Warning> {
    UNSUPPORTED
        .iter()
        .filter(|(name, _)| given(name))
        .map(|(name, details)| Warning {
            kind: "unsupported-setting",
            setting: Some((*name).into()),
            message: Some((*details).into()),
        })
        .collect()
}

/// The `console.warn` lines owed for `warnings`: one per setting name the first time it is seen
/// (`seen` lives as long as the process), none after.
pub fn console_lines(warnings: &[Warning], seen: &mut Vec<String>) -> Vec<String> {
    let mut lines = Vec::new();
    for w in warnings {
        let (Some(name), Some(details)) = (&w.setting, &w.message) else { continue };
        if seen.contains(name) {
            continue;
        }
        seen.push(name.clone());
        lines.push(format!("wasm-agent: the stream option '{name}' is not supported in this version. {details}"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `agent.stream()` honours today (read in `bindings/agent.rs` and `core/options.rs`):
    /// none of it may ever warn.
    const HONOURED: &[&str] = &[
        "maxSteps",
        "closeOnSuspend",
        "structuredOutput",
        "structuredOutput.schema",
        "structuredOutput.errorStrategy",
        "structuredOutput.fallbackValue",
        "structuredOutput.instructions",
        "structuredOutput.jsonPromptInjection",
        "structuredOutput.providerOptions",
        "structuredOutput.model",
        "structuredOutput.useAgent",
        "output",
        "stopWhen",
        "prepareStep",
        "onIterationComplete",
        "activeTools",
        "toolChoice",
        "toolsets",
        "clientTools",
        "toolCallConcurrency",
        "requireToolApproval",
        "hooks",
        "instructions",
        "system",
        "context",
        "modelSettings",
        "providerOptions",
        "includeRawChunks",
        "memory",
        "memory.thread",
        "memory.resource",
        "memory.options",
        "memory.options.lastMessages",
        "memory.options.readOnly",
        "memory.options.workingMemory",
        "memory.options.filterIncompleteToolCalls",
        "memory.options.generateTitle",
        "memory.onTitleGenerated",
        "savePerStep",
        "onChunk",
        "onStepFinish",
        "onFinish",
        "onError",
        "onAbort",
        "abortSignal",
        "runId",
        "requestContext",
        "untilIdle",
        "inputProcessors",
        "outputProcessors",
        "maxProcessorRetries",
        "delegation",
        "delegation.onDelegationStart",
        "delegation.onDelegationComplete",
        "delegation.messageFilter",
        "delegation.hookErrorStrategy",
        "delegation.includeSubAgentToolResultsInModelContext",
        "scorers",
        "returnScorerData",
        #[cfg(feature = "tracing")]
        "tracingOptions",
        #[cfg(feature = "tracing")]
        "tracingContext",
        #[cfg(feature = "tracing")]
        "telemetry",
        #[cfg(feature = "scorers")]
        "isTaskComplete",
    ];

    #[test]
    fn every_listed_option_warns_once_with_its_name_and_what_happens_instead() {
        let all = setting_warnings(&mut |_| true);
        assert_eq!(all.len(), UNSUPPORTED.len());
        for (w, (name, details)) in all.iter().zip(UNSUPPORTED) {
            assert_eq!(w.kind, "unsupported-setting");
            assert_eq!(w.setting.as_deref(), Some(*name));
            assert_eq!(w.message.as_deref(), Some(*details));
            // One sentence that says what happens instead.
            assert!(details.ends_with('.') && details.matches(". ").count() == 0, "{name}: {details}");
        }
        let names: Vec<&str> = UNSUPPORTED.iter().map(|(n, _)| *n).collect();
        let expected: &[&str] = &[
            "versions",
            #[cfg(not(feature = "tracing"))]
            "tracingOptions",
            #[cfg(not(feature = "tracing"))]
            "tracingContext",
            #[cfg(not(feature = "tracing"))]
            "telemetry",
            #[cfg(not(feature = "recall"))]
            "memory.options.semanticRecall",
        ];
        for name in expected {
            assert!(names.contains(name), "{name} is missing");
        }
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a name is listed twice");
    }

    #[test]
    fn an_honoured_option_is_never_listed() {
        for (name, _) in UNSUPPORTED {
            assert!(!HONOURED.contains(name), "{name} is honoured and must not warn");
        }
    }

    #[test]
    fn only_the_options_given_warn_in_table_order() {
        let given = ["memory.options.semanticRecall", "versions", "reconnectable", "maxSteps", "noSuchOption"];
        // `reconnectable` is honoured (SPEC §19.8): given, it does not warn.
        let ws = setting_warnings(&mut |n| given.contains(&n));
        let names: Vec<_> = ws.iter().map(|w| w.setting.clone().unwrap()).collect();
        #[cfg(not(feature = "recall"))]
        assert_eq!(names, ["versions", "memory.options.semanticRecall"]);
        #[cfg(feature = "recall")]
        assert_eq!(names, ["versions"]);
        assert!(setting_warnings(&mut |_| false).is_empty());
    }

    #[test]
    fn console_lines_come_once_per_setting_name() {
        let mut seen = Vec::new();
        let first = setting_warnings(&mut |n| n == "versions");
        let lines = console_lines(&first, &mut seen);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("wasm-agent: the stream option 'versions' is not supported"), "{}", lines[0]);
        assert!(lines[0].contains("editor package"), "{}", lines[0]);
        assert!(console_lines(&first, &mut seen).is_empty(), "the same names again: nothing");
        // `reconnectable` is honoured (SPEC §19.8): no line for it.
        let next = setting_warnings(&mut |n| n == "versions" || n == "reconnectable");
        assert!(console_lines(&next, &mut seen).is_empty());
    }
}
