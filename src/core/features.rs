//! What a build leaves out. Each subsystem is a cargo feature (`Cargo.toml`); a build without one
//! still reads its option and refuses it with one TypeError, the same for every feature, naming
//! the field, what is missing and where to get it. `wasm-agent/lite` is such a build.

use super::error::AgentError;

/// The refusal of `field` (e.g. `options.structuredOutput`): `what` (e.g. "structured output")
/// needs the cargo feature `feature`, which this build left out.
pub fn not_built(field: impl Into<String>, what: &str, feature: &str) -> AgentError {
    AgentError::invalid(
        field,
        format!("this build of wasm-agent leaves out {what} (wasm-agent/lite, or a build without the cargo feature `{feature}`); import 'wasm-agent' for it"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_left_out_feature_is_a_type_error_naming_the_field_the_feature_and_the_full_entry() {
        let e = not_built("options.structuredOutput", "structured output", "structured");
        assert_eq!(e.name(), "TypeError");
        assert_eq!(
            e.to_string(),
            "options.structuredOutput: this build of wasm-agent leaves out structured output (wasm-agent/lite, or a build without the cargo feature `structured`); import 'wasm-agent' for it"
        );
    }
}
