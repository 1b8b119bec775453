//! The processors' `processor_run` spans in a traced run (SPEC §16.2): where each goes, what it
//! holds, one stream span per processor and step, how a tripwire or a throw ends one, and the
//! span each call is given as its `tracingContext`.

use crate::core::tracing::tests::{run_with as traced_by, well_formed, Recorder};
use crate::core::tracing::Span;

use super::*;

fn traced(cfg: RunConfig, rec: &Rc<Recorder>) -> RunConfig {
    RunConfig { tracing: Some(traced_by(rec, |_| {})), ..cfg }
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no span '{name}'"))
}

#[test]
fn each_processor_call_has_a_span_under_the_run_or_its_step_and_a_stream_has_one_per_step() {
    let intake = Rc::new(Scripted::new("intake", &[Phase::Input]));
    let steps = Rc::new(Scripted::new("steps", &[Phase::InputStep, Phase::OutputStep]));
    let shout = Rc::new(Scripted::new("shout", &[Phase::OutputStream]).chunks(|c| match c {
        Chunk::TextDelta { id, text } => Ok(vec![Chunk::TextDelta { id, text: text.to_uppercase() }]),
        c => Ok(vec![c]),
    }));
    let last = Rc::new(Scripted::new("final", &[Phase::OutputResult]).calls(|_, _, _| Ok(Some(json!([])))));
    let rec = Rc::new(Recorder::default());
    let input: Vec<Rc<dyn Processor>> = vec![intake.clone(), steps.clone()];
    let output: Vec<Rc<dyn Processor>> = vec![steps.clone(), shout.clone(), last.clone()];
    let cfg = traced(with(config(0, false), input, output, 0), &rec);
    let (_, _, out) = run_script(vec![ok_stream(&[delta("content", "hel"), delta("content", "lo"), finish("stop")])], cfg);
    assert_eq!(out.text(), "HELLO");

    let done = well_formed(&rec);
    let kinds = |k: &str| done.iter().filter(|s| s.kind == k).count();
    assert_eq!(kinds("model_step"), 1, "processInputStep's span opens the step, the request does not open a second");
    assert_eq!(kinds("processor_run"), 5, "{:?}", done.iter().map(|s| &s.name).collect::<Vec<_>>());
    let root = named(&done, "agent run: 'helper'");
    let step = named(&done, "step: 0");
    assert!(step.input.as_ref().is_some_and(|i| i.get("messages").is_some()), "the step still has its request");
    let check = |name: &str, parent: &Span, phase: &str, id: &str| {
        let s = named(&done, name);
        assert_eq!(s.kind, "processor_run");
        assert_eq!(s.parent_span_id.as_deref(), Some(parent.id.as_str()), "{name}");
        assert_eq!(s.attributes.get("processorPhase"), Some(&json!(phase)), "{name}");
        assert_eq!(s.entity, Some(("processor".into(), id.into(), id.into())));
        assert!(s.error_info.is_none());
        s.clone()
    };
    let input = check("input processor: intake", root, "input", "intake");
    assert_eq!(input.input.as_ref().unwrap()["messages"][0]["role"], "user");
    assert!(input.output.is_none(), "it returned undefined");
    let in_step = check("input processor: steps", step, "inputStep", "steps");
    assert_eq!(in_step.input.as_ref().unwrap()["stepNumber"], 0);
    let out_step = done.iter().find(|s| s.name == "output processor: steps").unwrap();
    assert_eq!(out_step.attributes.get("processorPhase"), Some(&json!("outputStep")));
    assert_eq!(out_step.parent_span_id.as_deref(), Some(step.id.as_str()));
    let stream = check("output processor: shout", step, "outputStream", "shout");
    let seen = stream.input.as_ref().unwrap();
    let let_through = stream.output.as_ref().unwrap();
    assert_eq!((&seen["text"], &let_through["text"]), (&json!("hello"), &json!("HELLO")));
    assert_eq!(seen["chunks"], let_through["chunks"]);
    assert!(seen["chunks"].as_u64().unwrap() >= 5, "step-start, text-start, 2 deltas, text-end, step-finish: {seen}");
    let result = check("output processor: final", root, "outputResult", "final");
    assert_eq!(result.output, Some(json!([])));

    // Each call was given its own span (its `tracingContext.currentSpan`).
    assert_eq!(*intake.spans.borrow(), [Some(input.id.clone())]);
    assert_eq!(*steps.spans.borrow(), [Some(in_step.id.clone()), Some(out_step.id.clone())]);
    assert!(shout.spans.borrow().iter().all(|s| s.as_deref() == Some(stream.id.as_str())));
}

#[test]
fn a_tripwire_or_a_throw_ends_the_processors_span_with_its_reason() {
    let guard = Scripted::new("guard", &[Phase::OutputStep]).calls(|_, _, _| Err(abort_with("too long", false)));
    let rec = Rc::new(Recorder::default());
    let cfg = traced(with(config(0, false), vec![], vec![Rc::new(guard)], 0), &rec);
    run_script(vec![text_reply("a long answer")], cfg);
    let done = well_formed(&rec);
    let s = named(&done, "output processor: guard");
    assert_eq!(s.attributes.get("tripwireAbort"), Some(&json!({ "reason": "too long", "retry": false, "metadata": { "why": "test" } })));
    assert!(named(&done, "agent run: 'helper'").attributes.contains_key("tripwireAbort"));

    let broken = Scripted::new("broken", &[Phase::Input]).calls(|_, _, _| Err(Halt::Threw("no sk-very-secret here".into())));
    let rec = Rc::new(Recorder::default());
    let cfg = traced(with(config(0, false), vec![Rc::new(broken)], vec![], 0), &rec);
    let (_, _, out) = run_script(vec![], cfg);
    assert!(out.error.is_some());
    let done = well_formed(&rec);
    let e = named(&done, "input processor: broken").error_info.clone().expect("an error");
    assert_eq!((e.name.as_str(), e.message.as_str()), ("ProcessorError", "no [REDACTED] here"));
}
