//! The warnings of options this version does not honour (`core::unsupported`), through a run:
//! on the first `step-start` only, before the provider's own, and once in the run's `warnings`.

use serde_json::{json, Value};

use super::tools::{calls_reply, simple, text_reply, tool, with_tools, TestHost};
use crate::core::unsupported::setting_warnings;

#[test]
fn setting_warnings_go_on_the_first_step_start_only_and_once_into_the_run_warnings() {
    let mut cfg = with_tools(vec![tool("weather")]);
    cfg.setting_warnings = setting_warnings(&mut |name| name == "versions");
    // The provider's own warning (Chat Completions has no topK) comes after them.
    cfg.request.settings.top_k = Some(3.0);
    let host = TestHost::default();
    let r = simple(vec![calls_reply(&[("c1", "weather", r#"{"city":"Paris"}"#)]), text_reply("Sunny.")], cfg, &host);
    let chunks = r.sink.chunks.borrow();
    let starts: Vec<Value> = chunks.iter().filter(|c| c.type_name() == "step-start").map(|c| c.payload()).collect();
    assert_eq!(starts.len(), 2);
    let names = |ws: &Value| -> Vec<String> {
        ws.as_array().unwrap().iter().map(|w| format!("{}:{}", w["type"].as_str().unwrap(), w["setting"].as_str().unwrap())).collect()
    };
    assert_eq!(
        names(&starts[0]["warnings"]),
        ["unsupported-setting:versions", "unsupported-setting:topK"]
    );
    assert!(starts[0]["warnings"][0]["details"].as_str().unwrap().contains("editor package"));
    assert_eq!(names(&starts[1]["warnings"]), ["unsupported-setting:topK"], "the second step repeats only the provider's");
    let out = r.out.output_json("run1");
    assert_eq!(
        names(&out["warnings"]),
        [
            "unsupported-setting:versions",
            "unsupported-setting:topK",
            "unsupported-setting:topK"
        ]
    );
    assert_eq!(out["steps"][1]["warnings"], json!([starts[1]["warnings"][0]]));
}
