//! `options.validateOutputs` and tripwires: a step whose output does not match its schema fails
//! (only when asked), and an agent step stopped by a processor ends the run `tripwire`.

use super::*;

fn schema_n() -> Option<Schema> {
    Some(Schema::Json(json!({ "type": "object", "properties": { "n": { "type": "number" } }, "required": ["n"] })))
}

#[test]
fn outputs_are_checked_against_the_output_schema_only_with_validate_outputs() {
    let t = T::new();
    let build = |validate: bool| {
        let mut s = StepDef::new("wrong", Body::Host(t.host.sync(|_| Ok(json!({ "n": "twelve" })))));
        s.output_schema = schema_n();
        let mut w = WorkflowDef::new("v");
        w.validate_outputs = validate;
        w.push(Node::Step(Rc::new(s))).unwrap();
        w.push(Node::Step(t.step("after", |_| Ok(json!("ran"))))).unwrap();
        w.commit();
        Rc::new(w)
    };
    let (r, _) = t.go(&build(false), json!(null));
    assert_eq!(r.status, Status::Success, "not checked by default, as the reference");
    let (r, ev) = t.go(&build(true), json!(null));
    assert_eq!(r.status, Status::Failed);
    let e = r.error.expect("an error");
    assert_eq!(e.name, "ValidationError");
    assert_eq!(e.message, "output.n: expected a number, got a string");
    assert_eq!(
        types(&ev),
        ["workflow-start wrong", "workflow-step-start wrong", "workflow-step-result wrong", "workflow-finish"],
        "the step after the bad one never starts"
    );
    assert_eq!(ev[2]["payload"]["status"], "failed");
}

#[test]
fn a_host_schema_checks_outputs_too_and_a_matching_output_passes() {
    let t = T::new();
    let mut s = StepDef::new("s", Body::Host(t.host.sync(|c| Ok(c.input.clone()))));
    s.output_schema = Some(Schema::Host(0));
    let mut w = WorkflowDef::new("h");
    w.validate_outputs = true;
    w.push(Node::Step(Rc::new(s))).unwrap();
    w.commit();
    let w = Rc::new(w);
    assert_eq!(t.go(&w, json!("fine")).0.status, Status::Success);
    let (r, _) = t.go(&w, json!(7));
    assert_eq!(r.error.unwrap().message, "output.value: expected a string");
}

#[test]
fn a_tripwire_is_not_retried_and_ends_the_run_tripwire_with_the_processors_payload() {
    let t = T::new();
    let calls = Rc::new(Cell::new(0));
    let c2 = calls.clone();
    let payload = json!({ "reason": "blocked words", "retry": false, "metadata": { "w": 1 }, "processorId": "guard" });
    let p2 = payload.clone();
    let agent = t.host.sync(move |_| {
        c2.set(c2.get() + 1);
        Err(Failure::tripwire(p2.clone()))
    });
    let mut s = StepDef::new("agent", Body::Host(agent));
    s.retries = Some(3);
    let w = wf("t", vec![Node::Step(Rc::new(s)), Node::Step(t.step("never", |_| Ok(json!(1))))]);
    let (r, ev) = t.go(&w, json!(null));
    assert_eq!(calls.get(), 1, "a processor's abort is deliberate: no retry");
    assert_eq!(r.status, Status::Tripwire);
    let j = r.to_json(false);
    assert_eq!(j["status"], "tripwire");
    assert_eq!(j["tripwire"], payload);
    assert!(j.get("error").is_none(), "a tripwire is not an error");
    assert_eq!(j["steps"]["agent"]["error"], json!({ "name": "TripWire", "message": "blocked words" }));
    let fin = &ev.last().unwrap()["payload"];
    assert_eq!(fin["workflowStatus"], "tripwire");
    assert_eq!(fin["metadata"], json!({ "tripwire": payload }));
    assert!(!types(&ev).iter().any(|e| e.ends_with("never")));
}

#[test]
fn a_tripwire_inside_a_nested_workflow_ends_the_outer_run_tripwire() {
    let t = T::new();
    let inner = wf(
        "inner",
        vec![Node::Step(t.step("a", |_| Err(Failure::tripwire(json!({ "reason": "no", "processorId": "p" })))))],
    );
    let w = wf("outer", vec![Node::Step(Rc::new(StepDef::new("sub", Body::Workflow(inner))))]);
    let (r, _) = t.go(&w, json!(null));
    assert_eq!(r.status, Status::Tripwire);
    assert_eq!(r.tripwire.unwrap()["processorId"], "p");
}
