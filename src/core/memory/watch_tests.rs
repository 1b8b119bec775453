use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde_json::json;

use super::*;
use crate::core::memory::watched::WatchedStore;
use crate::core::memory::{InMemoryStore, Store};

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("did not finish");
}

fn key(thread: &str, resource: &str) -> EventKey {
    EventKey::new(Some(thread), Some(resource))
}

type Log = Rc<RefCell<Vec<String>>>;

fn logger(log: &Log, name: &'static str) -> Rc<dyn Fn(&String)> {
    let log = log.clone();
    Rc::new(move |p: &String| log.borrow_mut().push(format!("{name}:{p}")))
}

#[test]
fn each_watcher_gets_the_events_of_its_thread_or_resource_in_order() {
    let w: Watchers<String> = Watchers::default();
    let log: Log = Rc::default();
    w.watch(WatchScope::Thread("t1".into()), logger(&log, "thread"));
    w.watch(WatchScope::Resource("u1".into()), logger(&log, "resource"));
    w.publish(key("t1", "u1"), "a".into());
    w.publish(key("t2", "u1"), "b".into());
    w.publish(key("t3", "u2"), "c".into());
    w.publish(EventKey::new(Some("t1"), None), "d".into());
    assert_eq!(*log.borrow(), ["thread:a", "resource:a", "resource:b", "thread:d"]);
    assert!(w.watching(&key("t9", "u1")));
    assert!(!w.watching(&key("t9", "u9")));
}

#[test]
fn an_event_published_by_a_listener_comes_after_the_one_being_delivered() {
    let w: Rc<Watchers<String>> = Rc::default();
    let log: Log = Rc::default();
    let (w2, log2) = (w.clone(), log.clone());
    w.watch(
        WatchScope::Thread("t1".into()),
        Rc::new(move |p: &String| {
            log2.borrow_mut().push(format!("first:{p}"));
            if p == "a" {
                w2.publish(key("t1", "u1"), "b".into());
            }
        }),
    );
    w.watch(WatchScope::Thread("t1".into()), logger(&log, "second"));
    w.publish(key("t1", "u1"), "a".into());
    assert_eq!(*log.borrow(), ["first:a", "second:a", "first:b", "second:b"]);
}

#[test]
fn an_unwatched_listener_hears_nothing_more_even_of_the_event_being_delivered() {
    let w: Rc<Watchers<String>> = Rc::default();
    let log: Log = Rc::default();
    let second = Rc::new(std::cell::Cell::new(0));
    let (w2, s2) = (w.clone(), second.clone());
    w.watch(WatchScope::Thread("t1".into()), Rc::new(move |_: &String| w2.unwatch(s2.get())));
    second.set(w.watch(WatchScope::Thread("t1".into()), logger(&log, "second")));
    w.publish(key("t1", "u1"), "a".into());
    assert!(log.borrow().is_empty());
    // Queued but not drained: the caller drains (the bindings on a later tick).
    assert!(w.push(key("t1", "u1"), "b".into()));
    assert!(!w.push(key("t1", "u1"), "c".into()), "a drain is already due");
    let third = w.watch(WatchScope::Thread("t1".into()), logger(&log, "third"));
    w.drain();
    w.unwatch(third);
    w.unwatch(third);
    w.publish(key("t1", "u1"), "d".into());
    assert_eq!(*log.borrow(), ["third:b", "third:c"]);
}

fn thread(id: &str) -> Thread {
    Thread { id: id.into(), resource_id: "u1".into(), title: None, metadata: None, created_at: "2026-01-01T00:00:00.000Z".into(), updated_at: "2026-01-01T00:00:00.000Z".into() }
}

fn message(id: &str, thread: &str) -> StoredMessage {
    StoredMessage {
        id: id.into(),
        thread_id: thread.into(),
        resource_id: "u1".into(),
        role: "user".into(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        parts: vec![json!({ "type": "text", "text": id })],
        metadata: None,
    }
}

#[test]
fn a_watched_store_reports_each_write_after_it_succeeded() {
    let events: Rc<RefCell<Vec<(EventKey, serde_json::Value)>>> = Rc::default();
    let e2 = events.clone();
    let store = WatchedStore::new(Rc::new(InMemoryStore::new()), Rc::new(move |e: MemoryEvent| e2.borrow_mut().push((e.key(), e.to_json()))));
    block_on(store.save_thread(&thread("t1"))).unwrap();
    block_on(store.save_messages(&[message("m1", "t1"), message("m2", "t1")])).unwrap();
    assert_eq!(block_on(store.list_threads("u1")).unwrap().len(), 1, "reads pass through");
    block_on(store.delete_thread("t1")).unwrap();
    let got = events.borrow();
    let types: Vec<&str> = got.iter().map(|(_, v)| v["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["thread-updated", "messages-saved", "thread-deleted"]);
    assert_eq!(got[0].1["thread"]["id"], "t1");
    assert_eq!(got[1].1["threadId"], "t1");
    let texts: Vec<&str> = got[1].1["messages"].as_array().unwrap().iter().map(|m| m["content"]["parts"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["m1", "m2"]);
    assert_eq!(got[2].1, json!({ "type": "thread-deleted", "threadId": "t1" }));
    assert_eq!(got[2].0, key("t1", "u1"), "a deleted thread's resource watchers hear of it");
}

#[test]
fn a_save_spanning_threads_is_one_event_per_thread() {
    let events = MemoryEvent::messages_saved(&[message("a", "t1"), message("b", "t2"), message("c", "t1")]);
    let keys: Vec<EventKey> = events.iter().map(MemoryEvent::key).collect();
    assert_eq!(keys, [key("t1", "u1"), key("t2", "u1")]);
    assert_eq!(events[0].to_json()["messages"].as_array().unwrap().len(), 2);
}

#[test]
fn the_scopes_watched_here_are_listed_once_each_and_drop_out_when_unwatched() {
    let w: Watchers<String> = Watchers::default();
    let a = w.watch(WatchScope::Thread("t1".into()), Rc::new(|_: &String| {}));
    let b = w.watch(WatchScope::Thread("t1".into()), Rc::new(|_: &String| {}));
    w.watch(WatchScope::Resource("u1".into()), Rc::new(|_: &String| {}));
    assert_eq!(w.scopes(), [WatchScope::Thread("t1".into()), WatchScope::Resource("u1".into())]);
    w.unwatch(a);
    assert_eq!(w.scopes().len(), 2, "t1 is still watched by the second listener");
    w.unwatch(b);
    assert_eq!(w.scopes(), [WatchScope::Resource("u1".into())]);
}

#[test]
fn a_chunk_is_wanted_by_other_tabs_only_while_one_of_them_watches_its_thread_or_resource() {
    let remote = RemoteScopes::default();
    assert!(!remote.wants(&key("t1", "u1")), "no other tab has said anything");
    remote.set("tab-b", vec![WatchScope::Thread("t1".into())]);
    assert!(remote.wants(&key("t1", "u1")));
    assert!(!remote.wants(&key("t2", "u1")));
    remote.set("tab-c", vec![WatchScope::Resource("u1".into())]);
    assert!(remote.wants(&key("t2", "u1")), "tab c follows the resource");
    remote.set("tab-c", vec![]);
    assert!(!remote.wants(&key("t2", "u1")), "tab c stopped watching");
    remote.set("tab-b", vec![WatchScope::Thread("t3".into())]);
    assert!(!remote.wants(&key("t1", "u1")), "what a tab says replaces what it said before");
}
