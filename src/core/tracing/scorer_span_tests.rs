//! A scorer's spans in a trace of its own, and the score event the exporters get (SPEC §14.2).

use serde_json::json;

use super::*;

#[test]
fn a_scorer_run_is_a_trace_of_its_own_with_step_children_and_its_score_event_names_the_run() {
    let rec = Rc::new(Recorder::default());
    let env = Clock::default();
    let run = run_with(&rec, |_| {});
    run.start_run(facts(), &env);
    run.end_run(&RunOutcome::default(), &env);
    rec.0.borrow_mut().clear();

    let scorer = run.scorer_run("relevance", "Relevance", json!({ "input": "q", "output": "a" }), &env);
    assert_ne!(scorer.trace_id(), run.trace_id());
    assert_eq!(scorer.trace_id().len(), 32);
    let step = |name: &str, output: Value| {
        let opts = SpanOpts { kind: Some("scorer_step".into()), name: Some(format!("scorer step: '{name}'")), input: Some(json!({})), ..Default::default() };
        let id = scorer.child(scorer.root_id(), opts, false, &env).expect("the run is open");
        scorer.change(&id, SpanOpts { output: Some(output), ..Default::default() }, true, None, &env);
    };
    step("analyze", json!({ "token": "sk-very-secret" }));
    // A step left open ends with the run, before it.
    let open = SpanOpts { kind: Some("scorer_step".into()), name: Some("scorer step: 'generateScore'".into()), ..Default::default() };
    scorer.child(scorer.root_id(), open, false, &env).unwrap();
    scorer.change(scorer.root_id(), SpanOpts { output: Some(json!({ "score": 1, "reason": "on topic" })), ..Default::default() }, true, None, &env);

    let done = well_formed(&rec);
    let names: Vec<&str> = done.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["scorer step: 'analyze'", "scorer step: 'generateScore'", "scorer run: 'relevance'"]);
    let root = &done[2];
    assert!(root.is_root && root.parent_span_id.is_none());
    assert_eq!(root.kind, "scorer_run");
    assert_eq!(root.input, Some(json!({ "input": "q", "output": "a" })));
    assert_eq!(root.output, Some(json!({ "score": 1, "reason": "on topic" })));
    for s in &done {
        assert_eq!(s.trace_id, scorer.trace_id());
        assert_eq!(s.entity, Some(("scorer".into(), "relevance".into(), "Relevance".into())));
        assert_eq!(s.attributes.get("scorerId"), Some(&json!("relevance")));
        assert_eq!(s.attributes.get("scorerName"), Some(&json!("Relevance")));
        assert_eq!(s.metadata.get("runId"), Some(&json!("run1")));
        assert_eq!(s.metadata.get("targetTraceId"), Some(&json!(run.trace_id())));
        assert_eq!(s.metadata.get("targetSpanId"), Some(&json!(run.root_id())));
    }
    assert_eq!(done[0].kind, "scorer_step");
    assert_eq!(done[0].parent_span_id.as_deref(), Some(root.id.as_str()));
    assert_eq!(done[0].output, Some(json!({ "token": "[REDACTED]" })));

    let mut fields = Map::new();
    fields.insert("scorerId".into(), "relevance".into());
    fields.insert("score".into(), 1.into());
    fields.insert("reason".into(), "mentions sk-very-secret".into());
    fields.insert("scoreTraceId".into(), scorer.trace_id().into());
    run.score_event(fields);
    let events = rec.1.borrow();
    assert_eq!(events.len(), 1);
    let score = &events[0]["score"];
    assert_eq!(events[0]["type"], "score");
    assert_eq!(score["traceId"], run.trace_id());
    assert_eq!(score["spanId"], run.root_id());
    assert_eq!(score["scoreTraceId"], scorer.trace_id());
    assert_eq!(score["metadata"], json!({ "runId": "run1" }));
    assert!(!events[0].to_string().contains("sk-very-secret"), "{}", events[0]);
}
