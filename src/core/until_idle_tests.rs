//! The untilIdle decisions with a fake clock: SPEC §9 and the behaviours the issue lists.

use super::*;

const IDLE: u64 = 60_000;

fn done(id: &str, outcome: TaskOutcome) -> Finished {
    Finished { task_id: id.into(), tool_call_id: format!("call_{id}"), tool_name: "research".into(), outcome }
}

fn started(id: &str) -> Event {
    Event::TaskStarted { task_id: id.into() }
}

fn ended(id: &str) -> Event {
    Event::TaskEnded(done(id, TaskOutcome::Completed))
}

const TURN_OK: Event = Event::TurnEnded { failed: false };

fn continued(actions: &[Action]) -> Vec<String> {
    match actions {
        [Action::Continue { batch, .. }] => batch.iter().map(|f| f.task_id.clone()).collect(),
        other => panic!("expected one continuation, got {other:?}"),
    }
}

#[test]
fn closes_right_after_the_first_turn_when_no_task_was_dispatched() {
    let mut l = IdleLoop::new(IDLE);
    assert_eq!(l.on(Event::Chunk, 0.0), vec![]);
    assert_eq!(l.on(TURN_OK, 10.0), vec![Action::Close(CloseReason::Idle)]);
    assert!(l.is_closed());
    assert_eq!(l.on(started("t1"), 11.0), vec![], "a closed loop does nothing more");
}

#[test]
fn one_task_continues_once_after_it_completes_then_closes() {
    let mut l = IdleLoop::new(IDLE);
    l.on(started("t1"), 1.0);
    assert_eq!(l.on(TURN_OK, 100.0), vec![Action::ArmIdleTimer { deadline_ms: 100.0 + IDLE as f64 }]);
    let a = l.on(ended("t1"), 5_000.0);
    assert_eq!(continued(&a), ["t1"]);
    let Action::Continue { directive, .. } = &a[0] else { unreachable!() };
    assert!(directive.contains("Completed: research (tool call call_t1)"), "{directive}");
    assert_eq!(l.on(TURN_OK, 6_000.0), vec![Action::Close(CloseReason::Idle)]);
}

#[test]
fn two_tasks_give_one_continuation_after_both_settled() {
    let mut l = IdleLoop::new(IDLE);
    l.on(started("a"), 1.0);
    l.on(started("b"), 2.0);
    l.on(TURN_OK, 10.0);
    // The first ending re-arms the timer: the other still runs.
    assert_eq!(l.on(ended("a"), 1_000.0), vec![Action::ArmIdleTimer { deadline_ms: 1_000.0 + IDLE as f64 }]);
    assert_eq!(continued(&l.on(ended("b"), 30_000.0)), ["a", "b"]);
    assert_eq!(l.on(TURN_OK, 31_000.0), vec![Action::Close(CloseReason::Idle)]);
}

#[test]
fn a_task_ending_during_a_turn_waits_for_that_turn_and_turns_never_overlap() {
    let mut l = IdleLoop::new(IDLE);
    l.on(started("a"), 1.0);
    l.on(started("b"), 2.0);
    l.on(TURN_OK, 10.0);
    l.on(ended("a"), 20.0);
    assert_eq!(continued(&l.on(ended("b"), 30.0)), ["a", "b"]);
    // The continuation starts another task, and one ends while it streams.
    l.on(started("c"), 40.0);
    assert_eq!(l.on(ended("c"), 50.0), vec![], "no second turn while one streams");
    assert_eq!(continued(&l.on(TURN_OK, 60.0)), ["c"]);
    assert_eq!(l.on(TURN_OK, 70.0), vec![Action::Close(CloseReason::Idle)]);
}

#[test]
fn an_end_delivered_twice_is_processed_once() {
    let mut l = IdleLoop::new(IDLE);
    l.on(started("a"), 1.0);
    l.on(TURN_OK, 2.0);
    assert_eq!(continued(&l.on(ended("a"), 3.0)), ["a"]);
    assert_eq!(l.on(ended("a"), 4.0), vec![]);
    assert_eq!(l.on(TURN_OK, 5.0), vec![Action::Close(CloseReason::Idle)]);
}

#[test]
fn the_idle_timer_closes_between_turns_but_never_mid_turn() {
    let mut l = IdleLoop::new(IDLE);
    l.on(started("slow"), 0.0);
    // A slow first turn: no timer while it streams, however long.
    assert_eq!(l.on(Event::Tick, 10.0 * IDLE as f64), vec![]);
    l.on(TURN_OK, 10.0 * IDLE as f64);
    let armed_at = 10.0 * IDLE as f64;
    assert_eq!(l.on(Event::Tick, armed_at + IDLE as f64 - 1.0), vec![]);
    // Output from the task restarts the timer.
    assert_eq!(l.on(Event::Chunk, armed_at + 30_000.0), vec![Action::ArmIdleTimer { deadline_ms: armed_at + 30_000.0 + IDLE as f64 }]);
    assert_eq!(l.on(Event::Tick, armed_at + IDLE as f64 + 1.0), vec![], "restarted by the chunk");
    assert_eq!(l.on(Event::Tick, armed_at + 30_000.0 + IDLE as f64), vec![Action::Close(CloseReason::IdleTimeout)]);
    assert_eq!(l.running(), ["slow"], "the task is left running; its result still lands in memory");
}

#[test]
fn failed_cancelled_and_timed_out_tasks_are_named_with_how_they_ended() {
    let mut l = IdleLoop::new(IDLE);
    for id in ["ok", "bad", "gone", "late"] {
        l.on(started(id), 0.0);
    }
    l.on(TURN_OK, 1.0);
    l.on(ended("ok"), 2.0);
    l.on(Event::TaskEnded(done("bad", TaskOutcome::Failed { message: "the source was unreachable".into() })), 3.0);
    l.on(Event::TaskEnded(done("gone", TaskOutcome::Cancelled)), 4.0);
    let a = l.on(Event::TaskEnded(done("late", TaskOutcome::TimedOut)), 5.0);
    let Action::Continue { batch, directive } = &a[0] else { panic!("{a:?}") };
    assert_eq!(batch.len(), 4);
    assert!(directive.contains("Completed: research (tool call call_ok)."), "{directive}");
    assert!(directive.contains("Failed: research (tool call call_bad): the source was unreachable. Do not retry it unless the user asks."));
    assert!(directive.contains("Cancelled: research (tool call call_gone). It has no result."));
    assert!(directive.contains("Failed: research (tool call call_late) timed out."));
    assert!(directive.contains("do not call those tools again"));
}

#[test]
fn a_failed_continuation_closes_and_abort_closes_at_any_time() {
    let mut l = IdleLoop::new(IDLE);
    l.on(started("a"), 0.0);
    l.on(TURN_OK, 1.0);
    l.on(ended("a"), 2.0);
    assert_eq!(l.on(Event::TurnEnded { failed: true }, 3.0), vec![Action::Close(CloseReason::TurnFailed)]);

    let mut l = IdleLoop::new(IDLE);
    l.on(started("a"), 0.0);
    assert_eq!(l.on(Event::Abort, 1.0), vec![Action::Close(CloseReason::Aborted)], "mid-turn");
    let mut l = IdleLoop::new(IDLE);
    l.on(started("a"), 0.0);
    l.on(TURN_OK, 1.0);
    assert_eq!(l.on(Event::Abort, 2.0), vec![Action::Close(CloseReason::Aborted)], "between turns");
}

#[test]
fn a_task_answered_in_another_tab_is_no_longer_waited_for_and_not_answered_here() {
    let mut l = IdleLoop::new(IDLE);
    l.on(started("a"), 1.0);
    l.on(started("b"), 2.0);
    l.on(TURN_OK, 10.0);
    assert_eq!(l.on(Event::TaskAnsweredElsewhere { task_id: "a".into() }, 20.0), vec![Action::ArmIdleTimer { deadline_ms: 20.0 + IDLE as f64 }]);
    assert_eq!(l.running(), ["b"]);
    assert_eq!(continued(&l.on(ended("b"), 30.0)), ["b"], "only the task answered here");
    assert_eq!(l.on(ended("a"), 31.0), vec![], "an end answered elsewhere is not taken up later");
    assert_eq!(l.on(TURN_OK, 40.0), vec![Action::Close(CloseReason::Idle)]);
}
