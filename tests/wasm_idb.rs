//! `IdbStore` in headless Chromium (`wasm-pack test --headless --chrome -- --test wasm_idb`):
//! one behaviour suite run against both `InMemoryStore` (the reference) and `IdbStore`, a
//! randomized comparison of the two, last-N reading N records, two stores on one database, and
//! the ways opening can fail (newer version, another tab blocking, no IndexedDB at all).
//! Every test uses its own database and deletes it.
#![cfg(target_arch = "wasm32")]

use std::cell::Cell;
use std::future::poll_fn;
use std::task::Poll;

use js_sys::{Function, Promise};
use serde_json::json;
use wasm_agent::core::env::LocalFuture;
use wasm_agent::core::error::AgentError;
use wasm_agent::core::memory::{iso_time, InMemoryStore, MessageQuery, Resource, Store, StoredMessage, Thread};
use wasm_agent::core::memory::vectors::{VectorHit, VectorQuery, VectorRecord, VectorTarget};
use wasm_agent::platform::idb::{IdbStore, SCHEMA_VERSION};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

// ---- fixtures ----

const T0: f64 = 1_767_225_600_000.0;

fn at(ms: u32) -> String {
    iso_time(T0 + ms as f64)
}

fn thread(id: &str, resource: &str, updated: u32) -> Thread {
    Thread {
        id: id.into(),
        resource_id: resource.into(),
        title: Some(format!("Title of {id}")),
        metadata: None,
        created_at: at(0),
        updated_at: at(updated),
    }
}

fn msg(id: &str, thread: &str, created: u32, text: &str) -> StoredMessage {
    StoredMessage {
        id: id.into(),
        thread_id: thread.into(),
        resource_id: "user-1".into(),
        role: "user".into(),
        created_at: at(created),
        parts: vec![json!({ "type": "text", "text": text })],
        metadata: None,
    }
}

fn query(thread: &str, last: Option<usize>, before: Option<u32>) -> MessageQuery {
    MessageQuery { thread_id: thread.into(), last, before: before.map(at) }
}

fn ids(list: &[StoredMessage]) -> Vec<&str> {
    list.iter().map(|m| m.id.as_str()).collect()
}

fn unique_name(tag: &str) -> String {
    format!("wa-test-{tag}-{}", (js_sys::Math::random() * 1e12) as u64)
}

async fn list(store: &dyn Store, q: MessageQuery) -> Vec<StoredMessage> {
    store.list_messages(&q).await.expect("listMessages")
}

/// Polls every future to completion, interleaved (their transactions overlap).
async fn join_all<T>(mut futures: Vec<LocalFuture<'_, T>>) -> Vec<T> {
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futures.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *slot = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|v| v.expect("every future finished")).collect()
}

/// Calls `async (args…) => body` with `args` and awaits it (raw IndexedDB from JavaScript: what
/// another tab, or an older or newer version of the app, would do).
async fn js(params: &str, body: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f = Function::new_with_args(params, &format!("return (async () => {{ {body} }})();"));
    let this = JsValue::NULL;
    let p = match args {
        [] => f.call0(&this),
        [a] => f.call1(&this, a),
        [a, b] => f.call2(&this, a, b),
        _ => panic!("at most two arguments"),
    }?;
    JsFuture::from(p.unchecked_into::<Promise>()).await
}

const OPEN_RAW: &str = "
    const r = indexedDB.open(name, version);
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('raw open timed out')), 3000);
      r.onsuccess = () => { clearTimeout(timer); resolve(r.result); };
      r.onerror = () => { clearTimeout(timer); reject(r.error); };
      r.onblocked = () => { clearTimeout(timer); reject(new Error('raw open blocked')); };
    });";

/// The `StorageKind` code (`error.code` in JavaScript) of a storage error.
fn storage_code(e: &AgentError) -> &'static str {
    e.storage_code().unwrap_or_else(|| panic!("expected a StorageError, got {e:?}"))
}

fn storage_message(e: AgentError) -> String {
    match e {
        AgentError::Storage { message, .. } => message,
        other => panic!("expected a StorageError, got {other:?}"),
    }
}

// ---- the behaviour suite, run against both stores ----

macro_rules! behaviour {
    ($($test:ident => $suite:ident),* $(,)?) => {$(
        #[wasm_bindgen_test]
        async fn $test() {
            $suite(&InMemoryStore::new()).await;
            let name = unique_name(stringify!($test));
            $suite(&IdbStore::new(&name)).await;
            IdbStore::delete_database(&name).await.expect("delete the test database");
        }
    )*};
}

behaviour! {
    threads_are_created_read_replaced_and_deleted => suite_threads,
    list_threads_is_newest_updated_first_within_a_resource => suite_list_threads,
    messages_are_upserted_and_kept_in_created_at_then_id_order => suite_message_order,
    last_and_before_select_the_latest_messages_strictly_before => suite_last_before,
    delete_thread_removes_its_messages_only => suite_delete_thread,
    a_message_saved_with_another_thread_moves_and_deletes_by_id => suite_move_and_delete,
    resources_are_upserted => suite_resources,
    unknown_parts_and_metadata_survive_a_round_trip => suite_round_trip,
    run_records_are_saved_claimed_once_listed_and_deleted => suite_runs,
    vectors_are_searched_by_cosine_in_scope_and_deleted_with_their_thread => suite_vectors,
    workflow_snapshots_are_kept_claimed_once_listed_newest_first_and_deleted => suite_workflow_runs,
}

/// Workflow snapshots (SPEC §20.5): a re-saved run keeps when it was created and its resource,
/// the status compare-and-set lets one claimer through, listing filters and pages newest first.
async fn suite_workflow_runs(s: &dyn Store) {
    use wasm_agent::core::workflow::snapshot::{RunFilter, StoredRun};
    let w = s.workflows().expect("this store keeps workflow snapshots");
    let run = |name: &str, id: &str, resource: Option<&str>, status: &str, at: f64| StoredRun {
        workflow_name: name.into(),
        run_id: id.into(),
        resource_id: resource.map(str::to_owned),
        snapshot: json!({ "status": status, "runId": id, "context": { "step": { "status": status, "payload": { "n": 1 } } } }),
        created_at: at,
        updated_at: at,
    };
    assert!(w.load_run("wf", "r1").await.unwrap().is_none());
    w.persist_snapshot(&run("wf", "r1", Some("u1"), "running", 10.0)).await.unwrap();
    w.persist_snapshot(&run("wf", "r2", None, "suspended", 20.0)).await.unwrap();
    w.persist_snapshot(&run("other", "r1", Some("u2"), "success", 30.0)).await.unwrap();
    // Saved again later with no resource: createdAt and the resource stay.
    w.persist_snapshot(&run("wf", "r1", None, "suspended", 40.0)).await.unwrap();
    let r1 = w.load_run("wf", "r1").await.unwrap().expect("r1 is stored");
    assert_eq!((r1.status(), r1.resource_id.as_deref(), r1.created_at, r1.updated_at), ("suspended", Some("u1"), 10.0, 40.0));
    assert_eq!(r1.snapshot["context"]["step"]["payload"], json!({ "n": 1 }));
    assert_eq!(w.load_run("other", "r1").await.unwrap().map(|r| r.status().to_owned()).as_deref(), Some("success"), "one run id in two workflows is two runs");
    // Compare-and-set: the first claim of the suspended run wins, the second finds it running.
    let claimed = w.update_status("wf", "r1", "running", Some("suspended"), 50.0).await.unwrap();
    assert_eq!(claimed.as_ref().map(|v| v["status"].clone()), Some(json!("running")));
    assert_eq!(claimed.unwrap()["context"]["step"]["payload"], json!({ "n": 1 }), "the whole snapshot comes back");
    assert!(w.update_status("wf", "r1", "running", Some("suspended"), 51.0).await.unwrap().is_none());
    assert!(w.update_status("wf", "missing", "running", None, 52.0).await.unwrap().is_none());
    assert_eq!(w.load_run("wf", "r1").await.unwrap().unwrap().updated_at, 50.0);
    let names = |(runs, total): (Vec<StoredRun>, usize)| (runs.into_iter().map(|r| format!("{}/{}", r.workflow_name, r.run_id)).collect::<Vec<_>>(), total);
    let all = RunFilter::default();
    assert_eq!(names(w.list_runs(&all).await.unwrap()), (vec!["other/r1".into(), "wf/r2".into(), "wf/r1".into()], 3));
    let wf = RunFilter { workflow_name: Some("wf".into()), ..RunFilter::default() };
    assert_eq!(names(w.list_runs(&wf).await.unwrap()), (vec!["wf/r2".into(), "wf/r1".into()], 2));
    let suspended = RunFilter { status: Some("suspended".into()), ..RunFilter::default() };
    assert_eq!(names(w.list_runs(&suspended).await.unwrap()), (vec!["wf/r2".into()], 1));
    let mine = RunFilter { resource_id: Some("u1".into()), ..RunFilter::default() };
    assert_eq!(names(w.list_runs(&mine).await.unwrap()), (vec!["wf/r1".into()], 1));
    let dated = RunFilter { from_date: Some(15.0), to_date: Some(25.0), ..RunFilter::default() };
    assert_eq!(names(w.list_runs(&dated).await.unwrap()), (vec!["wf/r2".into()], 1));
    let page = RunFilter { per_page: Some(2), page: 1, ..RunFilter::default() };
    assert_eq!(names(w.list_runs(&page).await.unwrap()), (vec!["wf/r1".into()], 3));
    w.delete_run("wf", "r1").await.unwrap();
    w.delete_run("wf", "never-was").await.unwrap();
    assert!(w.load_run("wf", "r1").await.unwrap().is_none());
    assert!(w.load_run("other", "r1").await.unwrap().is_some(), "only that workflow's run is deleted");
}

/// Scorers' rows (SPEC §14.2) in IndexedDB: stamped as `InMemoryStore` stamps them, replaced by
/// id, filtered, oldest first, and still there for another store on the database.
#[wasm_bindgen_test]
async fn scores_are_stamped_replaced_by_id_filtered_and_kept_for_the_next_page() {
    use wasm_agent::core::scoring::ScoreRows;
    let name = unique_name("scores");
    let idb = IdbStore::new(&name);
    let memory = ScoreRows::default();
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("id-{n}")
    };
    let rows = [
        (json!({ "scorerId": "tone", "runId": "r1", "score": 0.5, "entityType": "AGENT" }), at(1)),
        (json!({ "scorerId": "len", "runId": "r1", "score": 1 }), at(2)),
        (json!({ "scorerId": "tone", "runId": "r2", "score": 0.9, "createdAt": at(0) }), at(3)),
    ];
    for (row, now) in rows.iter() {
        let a = idb.save_score(row.clone(), &mut next, now).await.unwrap();
        let b = memory.save(row.clone(), &mut || a["id"].as_str().unwrap().to_owned(), now);
        assert_eq!(a, b, "the row as stored is the in-memory store's");
    }
    // A row with a stored id replaces that row.
    let again = idb.save_score(json!({ "id": "id-2", "scorerId": "len", "runId": "r1", "score": 2 }), &mut next, &at(4)).await.unwrap();
    memory.save(again.clone(), &mut || -> String { unreachable!("the row has an id") }, &at(4));
    for filter in [json!(null), json!({ "runId": "r1" }), json!({ "scorerId": "tone" }), json!({ "scorerId": "tone", "runId": "r2" }), json!({ "entityType": "AGENT" }), json!({ "runId": "none" })] {
        assert_eq!(idb.list_scores(&filter).await.unwrap(), memory.list(&filter), "filter {filter}");
    }
    let listed = idb.list_scores(&json!(null)).await.unwrap();
    assert_eq!(listed.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(), ["id-3", "id-1", "id-2"], "oldest createdAt first");
    assert_eq!(listed[2]["score"], 2);
    assert_eq!(listed[2]["createdAt"], json!(at(4)), "a replacing row is the whole row, stamped anew");
    drop(idb);
    let reopened = IdbStore::new(&name);
    assert_eq!(reopened.list_scores(&json!({ "runId": "r1" })).await.unwrap().len(), 2, "the rows outlive the store object");
    drop(reopened);
    IdbStore::delete_database(&name).await.unwrap();
}

/// Semantic recall's vectors (SPEC §21.3): upsert, top-K by cosine within a thread or resource,
/// threshold, and deletion with messages, threads, or by id.
async fn suite_vectors(s: &dyn Store) {
    let rec = |id: &str, thread: &str, resource: &str, v: [f32; 3]| VectorRecord { id: id.into(), thread_id: thread.into(), resource_id: resource.into(), vector: v.to_vec() };
    let q = |v: [f32; 3], k: usize, thread: Option<&str>, resource: Option<&str>, threshold: Option<f32>| VectorQuery {
        vector: v.to_vec(),
        top_k: k,
        thread_id: thread.map(str::to_owned),
        resource_id: resource.map(str::to_owned),
        threshold,
    };
    let hits = |h: Vec<VectorHit>| h.into_iter().map(|h| h.id).collect::<Vec<_>>();
    s.save_thread(&thread("t1", "u1", 1)).await.unwrap();
    s.save_messages(&[msg("a", "t1", 1, "x"), msg("b", "t1", 2, "y")]).await.unwrap();
    s.save_vectors(&[rec("a", "t1", "u1", [3.0, 0.0, 0.0]), rec("b", "t1", "u1", [1.0, 1.0, 0.0]), rec("c", "t2", "u1", [0.0, 2.0, 0.0]), rec("d", "t3", "u2", [1.0, 0.0, 0.0])])
        .await
        .unwrap();
    // Replacing a record by id.
    s.save_vectors(&[rec("c", "t2", "u1", [0.0, 0.0, 5.0])]).await.unwrap();
    let all = s.query_vectors(&q([1.0, 0.0, 0.0], 10, None, None, None)).await.unwrap();
    assert_eq!(hits(all.clone()), ["a", "d", "b", "c"]);
    assert!((all[0].score - 1.0).abs() < 1e-5 && (all[2].score - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5, "{all:?}");
    assert_eq!(hits(s.query_vectors(&q([1.0, 0.0, 0.0], 2, None, Some("u1"), None)).await.unwrap()), ["a", "b"]);
    assert_eq!(hits(s.query_vectors(&q([0.0, 0.0, 1.0], 5, Some("t2"), None, None)).await.unwrap()), ["c"]);
    assert_eq!(hits(s.query_vectors(&q([1.0, 0.0, 0.0], 5, None, Some("u1"), Some(0.9))).await.unwrap()), ["a"]);
    s.delete_messages(&["b".to_string()]).await.unwrap();
    s.delete_thread("t1").await.unwrap();
    assert_eq!(hits(s.query_vectors(&q([1.0, 0.0, 0.0], 10, None, None, None)).await.unwrap()), ["d", "c"]);
    s.delete_vectors(&VectorTarget::Ids(vec!["d".into()])).await.unwrap();
    s.delete_vectors(&VectorTarget::Thread("t2".into())).await.unwrap();
    assert!(s.query_vectors(&q([1.0, 0.0, 0.0], 10, None, None, None)).await.unwrap().is_empty());
}

#[wasm_bindgen_test]
async fn a_version_4_database_upgrades_to_5_keeping_its_records_and_gains_workflow_runs_and_scores() {
    use wasm_agent::core::workflow::snapshot::StoredRun;
    let name = unique_name("upgrade-4-5");
    // The version 4 schema as the previous release made it, with a thread and a vector.
    js(
        "name",
        "
        const db = await new Promise((res, rej) => {
          const r = indexedDB.open(name, 4);
          r.onupgradeneeded = () => {
            const d = r.result;
            d.createObjectStore('threads', { keyPath: 'id' }).createIndex('byResource', 'resourceId');
            d.createObjectStore('messages', { keyPath: 'id' }).createIndex('byThreadTime', ['threadId', 'createdAt', 'id']);
            d.createObjectStore('resources', { keyPath: 'id' });
            d.createObjectStore('tasks', { keyPath: 'id' });
            const runs = d.createObjectStore('runs', { keyPath: 'runId' });
            runs.createIndex('threadId', 'threadId');
            runs.createIndex('agentStatus', ['agentId', 'status']);
            d.createObjectStore('runChunks', { keyPath: ['runId', 'seq'] });
            const vectors = d.createObjectStore('vectors', { keyPath: 'id' });
            vectors.createIndex('byThread', 'threadId');
            vectors.createIndex('byResource', 'resourceId');
            const tx = r.transaction;
            tx.objectStore('threads').put({ id: 'old', resourceId: 'u', createdAt: 'a', updatedAt: 'b' });
            tx.objectStore('vectors').put({ id: 'm1', threadId: 'old', resourceId: 'u', vector: new Float32Array([0, 1]) });
          };
          r.onsuccess = () => res(r.result);
          r.onerror = () => rej(r.error);
        });
        db.close();",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    let store = IdbStore::new(&name);
    assert_eq!(store.get_thread_by_id("old").await.unwrap().map(|t| t.id).as_deref(), Some("old"), "kept across the upgrade");
    let q = VectorQuery { vector: vec![0.0, 1.0], top_k: 1, thread_id: None, resource_id: Some("u".into()), threshold: None };
    assert_eq!(store.query_vectors(&q).await.unwrap().len(), 1, "vectors kept");
    let run = StoredRun { workflow_name: "wf".into(), run_id: "r".into(), resource_id: None, snapshot: json!({ "status": "suspended" }), created_at: 1.0, updated_at: 1.0 };
    store.workflows().unwrap().persist_snapshot(&run).await.expect("version 5 keeps workflow runs");
    assert_eq!(store.workflows().unwrap().load_run("wf", "r").await.unwrap().map(|r| r.status().to_owned()).as_deref(), Some("suspended"));
    store.save_score(json!({ "scorerId": "s" }), &mut || "s1".into(), &at(0)).await.expect("version 5 keeps scores");
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_version_3_database_upgrades_to_4_keeping_its_records_and_gains_vectors() {
    let name = unique_name("upgrade-3-4");
    // The version 3 schema as the previous release made it, with a thread, a message and a run.
    js(
        "name",
        "
        const db = await new Promise((res, rej) => {
          const r = indexedDB.open(name, 3);
          r.onupgradeneeded = () => {
            const d = r.result;
            d.createObjectStore('threads', { keyPath: 'id' }).createIndex('byResource', 'resourceId');
            d.createObjectStore('messages', { keyPath: 'id' }).createIndex('byThreadTime', ['threadId', 'createdAt', 'id']);
            d.createObjectStore('resources', { keyPath: 'id' });
            d.createObjectStore('tasks', { keyPath: 'id' });
            const runs = d.createObjectStore('runs', { keyPath: 'runId' });
            runs.createIndex('threadId', 'threadId');
            runs.createIndex('agentStatus', ['agentId', 'status']);
            d.createObjectStore('runChunks', { keyPath: ['runId', 'seq'] });
            const tx = r.transaction;
            tx.objectStore('threads').put({ id: 'old', resourceId: 'u', createdAt: 'a', updatedAt: 'b' });
            tx.objectStore('messages').put({ id: 'm1', threadId: 'old', resourceId: 'u', role: 'user', createdAt: '2026-01-01T00:00:00.000Z', type: 'v2', content: { format: 2, parts: [{ type: 'text', text: 'kept' }] } });
            tx.objectStore('runs').put({ runId: 'r1', agentId: 'a', threadId: null, resourceId: null, status: 'suspended', createdAt: 1, updatedAt: 1, waiting: [], snapshot: null, lastSeq: 0 });
          };
          r.onsuccess = () => res(r.result);
          r.onerror = () => rej(r.error);
        });
        db.close();",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    let store = IdbStore::new(&name);
    assert_eq!(store.get_thread_by_id("old").await.unwrap().map(|t| t.id).as_deref(), Some("old"), "kept across the upgrade");
    let msgs = list(&store, query("old", None, None)).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].parts, vec![json!({ "type": "text", "text": "kept" })]);
    assert!(store.runs().unwrap().get_run("r1").await.unwrap().is_some(), "run records kept");
    let r = VectorRecord { id: "m1".into(), thread_id: "old".into(), resource_id: "u".into(), vector: vec![0.0, 2.0] };
    store.save_vectors(&[r]).await.expect("version 4 keeps vectors");
    let q = VectorQuery { vector: vec![0.0, 1.0], top_k: 1, thread_id: None, resource_id: Some("u".into()), threshold: None };
    assert_eq!(store.query_vectors(&q).await.unwrap().into_iter().map(|h| h.id).collect::<Vec<_>>(), ["m1"]);
    // Stored as a Float32Array, normalised.
    let seen = js(
        "name",
        "
        const db = await new Promise((res, rej) => { const r = indexedDB.open(name); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
        const req = db.transaction('vectors').objectStore('vectors').get('m1');
        const v = await new Promise((res) => { req.onsuccess = () => res(req.result); });
        db.close();
        return JSON.stringify({ float32: v.vector instanceof Float32Array, vector: [...v.vector], threadId: v.threadId, resourceId: v.resourceId });",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    let seen: serde_json::Value = serde_json::from_str(&seen.as_string().unwrap()).unwrap();
    assert_eq!(seen, json!({ "float32": true, "vector": [0, 1], "threadId": "old", "resourceId": "u" }));
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

/// Run records (SPEC §19.4): create, compare-and-set, list by filter, delete.
async fn suite_runs(s: &dyn Store) {
    use wasm_agent::core::runs::{RunFilter, RunRecord, RunStatus};
    let runs = s.runs().expect("this store keeps run records");
    let rec = |id: &str, agent: &str, status: RunStatus| RunRecord {
        run_id: id.into(),
        agent_id: agent.into(),
        thread_id: Some("t1".into()),
        resource_id: Some("u1".into()),
        status,
        created_at: T0,
        updated_at: T0,
        heartbeat_at: None,
        waiting: vec![],
        snapshot: Some(json!({ "v": 1, "messages": [] })),
        last_seq: 0,
        retain_until: None,
        retain_ms: None,
    };
    runs.save_run(&rec("r1", "a", RunStatus::Suspended)).await.unwrap();
    runs.save_run(&rec("r2", "b", RunStatus::Suspended)).await.unwrap();
    assert_eq!(runs.get_run("r1").await.unwrap().unwrap(), rec("r1", "a", RunStatus::Suspended));
    assert!(runs.get_run("nope").await.unwrap().is_none());
    let claim = json!({ "status": "resuming", "heartbeatAt": T0 + 1.0 });
    assert!(runs.update_run("r1", &claim, Some(RunStatus::Resuming)).await.unwrap().is_none());
    // Two claims started together: exactly one sees `suspended`.
    let (one, two) = (runs.update_run("r1", &claim, Some(RunStatus::Suspended)), runs.update_run("r1", &claim, Some(RunStatus::Suspended)));
    let results = join_all(vec![one, two]).await;
    let won: Vec<_> = results.into_iter().filter_map(Result::unwrap).collect();
    assert_eq!(won.len(), 1);
    assert_eq!((won[0].status, won[0].heartbeat_at), (RunStatus::Resuming, Some(T0 + 1.0)));
    assert_eq!(runs.get_run("r1").await.unwrap().unwrap().status, RunStatus::Resuming);
    let ids = |f: RunFilter| async move { runs.list_runs(&f).await.unwrap().into_iter().map(|r| r.run_id).collect::<Vec<_>>() };
    assert_eq!(ids(RunFilter { statuses: vec![RunStatus::Suspended], ..Default::default() }).await, ["r2"]);
    assert_eq!(ids(RunFilter { agent_id: Some("a".into()), ..Default::default() }).await, ["r1"]);
    runs.delete_run("r1").await.unwrap();
    assert!(runs.get_run("r1").await.unwrap().is_none());
    assert_eq!(ids(RunFilter::default()).await, ["r2"]);
}

async fn suite_threads(s: &dyn Store) {
    assert_eq!(s.get_thread_by_id("t1").await.unwrap(), None);
    let mut t = thread("t1", "user-1", 5);
    t.metadata = Some(json!({ "pinned": true, "tags": ["a", "b"] }));
    s.save_thread(&t).await.unwrap();
    assert_eq!(s.get_thread_by_id("t1").await.unwrap(), Some(t.clone()));
    let mut t2 = t.clone();
    t2.title = None;
    t2.metadata = None;
    t2.updated_at = at(9);
    s.save_thread(&t2).await.unwrap();
    assert_eq!(s.get_thread_by_id("t1").await.unwrap(), Some(t2), "saveThread replaces the whole record");
    s.delete_thread("t1").await.unwrap();
    assert_eq!(s.get_thread_by_id("t1").await.unwrap(), None);
    s.delete_thread("never-existed").await.expect("deleting a missing thread is not an error");
}

async fn suite_list_threads(s: &dyn Store) {
    for (id, resource, updated) in
        [("a", "r1", 3), ("b", "r1", 7), ("c", "r2", 9), ("d", "r1", 1), ("f", "r1", 7), ("e", "r1", 7)]
    {
        s.save_thread(&thread(id, resource, updated)).await.unwrap();
    }
    let got: Vec<String> = s.list_threads("r1").await.unwrap().into_iter().map(|t| t.id).collect();
    assert_eq!(got, ["b", "e", "f", "a", "d"], "newest updatedAt first, ties in id order");
    assert_eq!(s.list_threads("nobody").await.unwrap(), vec![]);
    s.save_thread(&thread("d", "r1", 20)).await.unwrap();
    assert_eq!(s.list_threads("r1").await.unwrap()[0].id, "d", "an update moves a thread to the front");
}

async fn suite_message_order(s: &dyn Store) {
    let batch = [
        msg("m3", "t", 30, "three"),
        msg("m1", "t", 10, "one"),
        msg("m2b", "t", 20, "two b"),
        msg("m2a", "t", 20, "two a"),
        msg("x", "other", 15, "elsewhere"),
    ];
    s.save_messages(&batch).await.unwrap();
    assert_eq!(ids(&list(s, query("t", None, None)).await), ["m1", "m2a", "m2b", "m3"]);
    // Upsert: same id, new text and a new time, moves and replaces.
    s.save_messages(&[msg("m1", "t", 40, "one, edited")]).await.unwrap();
    let all = list(s, query("t", None, None)).await;
    assert_eq!(ids(&all), ["m2a", "m2b", "m3", "m1"]);
    assert_eq!(all[3], msg("m1", "t", 40, "one, edited"));
    s.save_messages(&[]).await.unwrap();
    assert_eq!(list(s, query("nothing-here", None, None)).await, vec![]);
    assert_eq!(ids(&list(s, query("other", None, None)).await), ["x"]);
}

async fn suite_last_before(s: &dyn Store) {
    let batch: Vec<StoredMessage> =
        (1..=9).map(|i| msg(&format!("m{i}"), "t", i * 10, "hi")).chain([msg("m5b", "t", 50, "tie")]).collect();
    s.save_messages(&batch).await.unwrap();
    s.save_messages(&[msg("n1", "t-other", 95, "other thread")]).await.unwrap();
    assert_eq!(ids(&list(s, query("t", Some(3), None)).await), ["m7", "m8", "m9"]);
    assert_eq!(ids(&list(s, query("t", Some(1), None)).await), ["m9"]);
    assert_eq!(ids(&list(s, query("t", Some(0), None)).await), Vec::<&str>::new());
    assert_eq!(list(s, query("t", Some(50), None)).await.len(), 10);
    assert_eq!(ids(&list(s, query("t", None, Some(50))).await), ["m1", "m2", "m3", "m4"], "before is strict");
    assert_eq!(ids(&list(s, query("t", None, Some(51))).await), ["m1", "m2", "m3", "m4", "m5", "m5b"]);
    assert_eq!(ids(&list(s, query("t", Some(2), Some(51))).await), ["m5", "m5b"]);
    assert_eq!(ids(&list(s, query("t", Some(2), Some(50))).await), ["m3", "m4"]);
    assert_eq!(ids(&list(s, query("t", Some(5), Some(10))).await), Vec::<&str>::new());
    assert_eq!(ids(&list(s, query("t", None, Some(1_000))).await).len(), 10);
}

async fn suite_delete_thread(s: &dyn Store) {
    s.save_thread(&thread("t1", "u", 1)).await.unwrap();
    s.save_thread(&thread("t2", "u", 2)).await.unwrap();
    let batch: Vec<StoredMessage> =
        (0..30).map(|i| msg(&format!("a{i:02}"), if i % 3 == 0 { "t2" } else { "t1" }, i, "x")).collect();
    s.save_messages(&batch).await.unwrap();
    s.delete_thread("t1").await.unwrap();
    assert_eq!(s.get_thread_by_id("t1").await.unwrap(), None);
    assert_eq!(list(s, query("t1", None, None)).await, vec![]);
    assert_eq!(list(s, query("t2", None, None)).await.len(), 10, "the other thread keeps its messages");
    assert_eq!(s.list_threads("u").await.unwrap().len(), 1);
}

async fn suite_move_and_delete(s: &dyn Store) {
    s.save_messages(&[msg("m1", "t1", 1, "a"), msg("m2", "t1", 2, "b"), msg("m3", "t1", 3, "c")]).await.unwrap();
    s.save_messages(&[msg("m2", "t2", 2, "b moved")]).await.unwrap();
    assert_eq!(ids(&list(s, query("t1", None, None)).await), ["m1", "m3"]);
    assert_eq!(ids(&list(s, query("t2", None, None)).await), ["m2"]);
    s.delete_messages(&["m1".into(), "m2".into(), "nope".into()]).await.unwrap();
    assert_eq!(ids(&list(s, query("t1", None, None)).await), ["m3"]);
    assert_eq!(list(s, query("t2", None, None)).await, vec![]);
    s.delete_messages(&[]).await.unwrap();
}

async fn suite_resources(s: &dyn Store) {
    assert_eq!(s.get_resource("u").await.unwrap(), None);
    let r = Resource {
        id: "u".into(),
        working_memory: Some("# Name\nAda".into()),
        metadata: Some(json!({ "plan": "pro" })),
    };
    s.save_resource(&r).await.unwrap();
    assert_eq!(s.get_resource("u").await.unwrap(), Some(r));
    let r2 = Resource { id: "u".into(), working_memory: None, metadata: None };
    s.save_resource(&r2).await.unwrap();
    assert_eq!(s.get_resource("u").await.unwrap(), Some(r2));
}

async fn suite_round_trip(s: &dyn Store) {
    let mut m = msg("m1", "t", 1, "héllo \u{1F600} \"quoted\" \\ \n newline");
    m.role = "assistant".into();
    m.parts.push(json!({ "type": "tool-invocation", "toolInvocation": { "state": "result", "toolCallId": "c1", "toolName": "add", "args": { "a": 1, "b": -2.5 }, "result": [null, true, "x"] } }));
    m.parts.push(json!({ "type": "data-future-kind", "data": { "nested": { "deep": [1, 2, { "k": "v" }] } } }));
    m.metadata = Some(json!({ "interrupted": true }));
    s.save_messages(&[m.clone()]).await.unwrap();
    assert_eq!(list(s, query("t", None, None)).await, vec![m]);
}

// ---- IdbStore against InMemoryStore on a random sequence of operations ----

struct Lcg(Cell<u64>);

impl Lcg {
    fn below(&self, n: u64) -> u64 {
        let x = self.0.get().wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0.set(x);
        (x >> 33) % n
    }
}

#[wasm_bindgen_test]
async fn idb_store_matches_the_in_memory_store_on_random_operations() {
    let name = unique_name("random");
    let (mem, idb) = (InMemoryStore::new(), IdbStore::new(&name));
    let stores: [&dyn Store; 2] = [&mem, &idb];
    let rng = Lcg(Cell::new(42));
    let (mut queries, mut nonempty) = (0, 0);
    for step in 0..400 {
        let t = format!("t{}", rng.below(3));
        match rng.below(8) {
            0..=2 => {
                let batch: Vec<StoredMessage> = (0..1 + rng.below(3))
                    .map(|_| {
                        msg(
                            &format!("m{}", rng.below(40)),
                            &format!("t{}", rng.below(3)),
                            rng.below(12) as u32,
                            &format!("v{step}"),
                        )
                    })
                    .collect();
                for s in stores {
                    s.save_messages(&batch).await.unwrap();
                }
            }
            3 => {
                let gone: Vec<String> = (0..1 + rng.below(2)).map(|_| format!("m{}", rng.below(45))).collect();
                for s in stores {
                    s.delete_messages(&gone).await.unwrap();
                }
            }
            4 => {
                let th = thread(&t, &format!("r{}", rng.below(2)), rng.below(6) as u32);
                for s in stores {
                    s.save_thread(&th).await.unwrap();
                }
            }
            5 if rng.below(4) == 0 => {
                for s in stores {
                    s.delete_thread(&t).await.unwrap();
                }
            }
            _ => {
                let last = match rng.below(4) {
                    0 => None,
                    _ => Some(rng.below(7) as usize),
                };
                let before = if rng.below(2) == 0 { None } else { Some(rng.below(13) as u32) };
                let q = query(&t, last, before);
                let a = mem.list_messages(&q).await.unwrap();
                assert_eq!(a, idb.list_messages(&q).await.unwrap(), "step {step}: listMessages {q:?}");
                let r = format!("r{}", rng.below(2));
                assert_eq!(
                    mem.list_threads(&r).await.unwrap(),
                    idb.list_threads(&r).await.unwrap(),
                    "step {step}: listThreads {r}"
                );
                assert_eq!(
                    mem.get_thread_by_id(&t).await.unwrap(),
                    idb.get_thread_by_id(&t).await.unwrap(),
                    "step {step}: getThreadById {t}"
                );
                queries += 1;
                nonempty += usize::from(!a.is_empty());
            }
        }
    }
    assert!(
        queries > 50 && nonempty > 20,
        "the sequence exercised the stores ({queries} queries, {nonempty} non-empty)"
    );
    drop(idb);
    IdbStore::delete_database(&name).await.unwrap();
}

// ---- IndexedDB specifics ----

#[wasm_bindgen_test]
async fn loading_the_last_n_of_a_2000_message_thread_reads_n_records() {
    let name = unique_name("last-n");
    let store = IdbStore::new(&name);
    for start in [0, 1000] {
        let batch: Vec<StoredMessage> =
            (start..start + 1000).map(|i| msg(&format!("m{i:05}"), "long", i, "some text")).collect();
        store.save_messages(&batch).await.unwrap();
    }
    store.save_messages(&[msg("other", "short", 5, "x")]).await.unwrap();

    let before = store.records_read();
    let got = store.list_messages(&query("long", Some(10), None)).await.unwrap();
    assert_eq!(store.records_read() - before, 10, "ten cursor steps for the last ten");
    assert_eq!(ids(&got), (1990..2000).map(|i| format!("m{i:05}")).collect::<Vec<_>>());

    let before = store.records_read();
    let got = store.list_messages(&query("long", Some(3), Some(500))).await.unwrap();
    assert_eq!(store.records_read() - before, 3);
    assert_eq!(ids(&got), ["m00497", "m00498", "m00499"]);

    let before = store.records_read();
    assert_eq!(store.list_messages(&query("long", None, None)).await.unwrap().len(), 2000);
    assert_eq!(store.records_read() - before, 2000, "without last every message is read");
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn two_stores_on_one_database_interleaving_writes_lose_nothing() {
    let name = unique_name("two-tabs");
    let (a, b) = (IdbStore::new(&name), IdbStore::new(&name));
    a.save_thread(&thread("shared", "u", 1)).await.unwrap();
    // Alternating, one message per write.
    for i in 0..100u32 {
        let (store, tag) = if i % 2 == 0 { (&a, "a") } else { (&b, "b") };
        store.save_messages(&[msg(&format!("{tag}{i:03}"), "shared", i, tag)]).await.unwrap();
    }
    // Overlapping: twenty batches in flight at once, from both.
    let batches: Vec<Vec<StoredMessage>> = (0..20u32)
        .map(|k| (0..5u32).map(|j| msg(&format!("c{k:02}-{j}"), "shared", 100 + k * 5 + j, "c")).collect())
        .collect();
    let writes: Vec<LocalFuture<'_, Result<(), AgentError>>> = batches
        .iter()
        .enumerate()
        .map(|(k, batch)| if k % 2 == 0 { a.save_messages(batch) } else { b.save_messages(batch) })
        .collect();
    for r in join_all(writes).await {
        r.unwrap();
    }
    b.save_thread(&thread("shared", "u", 2)).await.unwrap();

    for reader in [&a, &b] {
        let all = reader.list_messages(&query("shared", None, None)).await.unwrap();
        assert_eq!(all.len(), 200, "every message of both writers");
        let times: Vec<&str> = all.iter().map(|m| m.created_at.as_str()).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "in time order");
        assert_eq!(reader.get_thread_by_id("shared").await.unwrap().unwrap().updated_at, at(2));
    }
    drop((a, b));
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn operations_started_together_share_one_open() {
    let name = unique_name("first-use");
    let store = IdbStore::new(&name);
    let threads: Vec<Thread> = (0..8).map(|i| thread(&format!("t{i}"), "u", i)).collect();
    let writes: Vec<LocalFuture<'_, Result<(), AgentError>>> = threads.iter().map(|t| store.save_thread(t)).collect();
    for r in join_all(writes).await {
        r.unwrap();
    }
    assert_eq!(store.list_threads("u").await.unwrap().len(), 8);
    // One connection: an upgrade from "another tab" is not blocked by stray ones.
    let conn =
        js("name, version", OPEN_RAW, &[name.as_str().into(), (SCHEMA_VERSION + 1).into()]).await.expect("the upgrade is not blocked");
    js("db", "db.close();", &[conn]).await.unwrap();
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn the_schema_is_version_5_and_records_are_plain_objects() {
    let name = unique_name("schema");
    let store = IdbStore::new(&name);
    store.save_thread(&thread("t1", "u", 3)).await.unwrap();
    store.save_messages(&[msg("m1", "t1", 1, "hello")]).await.unwrap();
    drop(store);
    let seen = js(
        "name",
        "
        const db = await new Promise((res, rej) => { const r = indexedDB.open(name); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
        const tx = db.transaction(['threads', 'messages', 'resources', 'tasks', 'runs', 'runChunks', 'vectors', 'workflowRuns', 'scores']);
        const get = (req) => new Promise((res) => { req.onsuccess = () => res(req.result); });
        const messages = tx.objectStore('messages');
        const out = {
          version: db.version,
          stores: [...db.objectStoreNames],
          threadKey: tx.objectStore('threads').keyPath,
          byResource: tx.objectStore('threads').index('byResource').keyPath,
          byThreadTime: messages.index('byThreadTime').keyPath,
          resourceKey: tx.objectStore('resources').keyPath,
          taskKey: tx.objectStore('tasks').keyPath,
          runKey: tx.objectStore('runs').keyPath,
          runIndexes: [...tx.objectStore('runs').indexNames].map((n) => [n, tx.objectStore('runs').index(n).keyPath]),
          chunkKey: tx.objectStore('runChunks').keyPath,
          vectorKey: tx.objectStore('vectors').keyPath,
          vectorIndexes: [...tx.objectStore('vectors').indexNames].map((n) => [n, tx.objectStore('vectors').index(n).keyPath]),
          workflowRunKey: tx.objectStore('workflowRuns').keyPath,
          scoreKey: tx.objectStore('scores').keyPath,
          message: await get(messages.get('m1')),
        };
        db.close();
        return JSON.stringify(out);",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    let seen: serde_json::Value = serde_json::from_str(&seen.as_string().unwrap()).unwrap();
    assert_eq!(seen["version"], 5);
    assert_eq!(seen["stores"], json!(["messages", "resources", "runChunks", "runs", "scores", "tasks", "threads", "vectors", "workflowRuns"]));
    assert_eq!(seen["workflowRunKey"], json!(["workflowName", "runId"]));
    assert_eq!(seen["scoreKey"], "id");
    assert_eq!(seen["vectorKey"], "id");
    assert_eq!(seen["vectorIndexes"], json!([["byResource", "resourceId"], ["byThread", "threadId"]]));
    assert_eq!(seen["runKey"], "runId");
    assert_eq!(seen["runIndexes"], json!([["agentStatus", ["agentId", "status"]], ["threadId", "threadId"]]));
    assert_eq!(seen["chunkKey"], json!(["runId", "seq"]));
    assert_eq!(seen["taskKey"], "id");
    assert_eq!(seen["threadKey"], "id");
    assert_eq!(seen["resourceKey"], "id");
    assert_eq!(seen["byResource"], "resourceId");
    assert_eq!(seen["byThreadTime"], json!(["threadId", "createdAt", "id"]));
    assert_eq!(seen["message"]["content"]["parts"][0]["text"], "hello");
    assert_eq!(seen["message"]["content"]["format"], 2);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_version_2_database_upgrades_to_3_keeping_its_records_and_gains_runs() {
    use wasm_agent::core::runs::{RunRecord, RunStatus};
    let name = unique_name("upgrade-2-3");
    // The version 2 schema as the previous release made it, with one thread in it.
    js(
        "name",
        "
        const db = await new Promise((res, rej) => {
          const r = indexedDB.open(name, 2);
          r.onupgradeneeded = () => {
            const d = r.result;
            d.createObjectStore('threads', { keyPath: 'id' }).createIndex('byResource', 'resourceId');
            d.createObjectStore('messages', { keyPath: 'id' }).createIndex('byThreadTime', ['threadId', 'createdAt', 'id']);
            d.createObjectStore('resources', { keyPath: 'id' });
            d.createObjectStore('tasks', { keyPath: 'id' });
            d.createObjectStore('threads2_unused', { keyPath: 'id' });
            r.transaction.objectStore('threads').put({ id: 'old', resourceId: 'u', createdAt: 'a', updatedAt: 'b' });
          };
          r.onsuccess = () => res(r.result);
          r.onerror = () => rej(r.error);
        });
        db.close();",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    let store = IdbStore::new(&name);
    assert_eq!(store.get_thread_by_id("old").await.unwrap().map(|t| t.id).as_deref(), Some("old"), "kept across the upgrade");
    let runs = store.runs().expect("version 3 keeps runs");
    let rec = RunRecord {
        run_id: "r1".into(),
        agent_id: "a".into(),
        thread_id: None,
        resource_id: None,
        status: RunStatus::Suspended,
        created_at: T0,
        updated_at: T0,
        heartbeat_at: None,
        waiting: vec![],
        snapshot: None,
        last_seq: 0,
        retain_until: None,
        retain_ms: None,
    };
    runs.save_run(&rec).await.unwrap();
    assert_eq!(runs.get_run("r1").await.unwrap(), Some(rec));
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_database_upgraded_by_a_newer_version_is_a_storage_error() {
    let name = unique_name("newer");
    let db = js("name, version", OPEN_RAW, &[name.as_str().into(), (SCHEMA_VERSION + 1).into()]).await.unwrap();
    js("db", "db.close();", &[db]).await.unwrap();
    let err = IdbStore::new(&name).list_threads("u").await.expect_err("a version newer than this code");
    assert_eq!(storage_code(&err), "version", "VersionError is told apart");
    let message = storage_message(err);
    assert!(
        message.contains("newer schema") && message.contains("VersionError") && message.contains(&name),
        "{message}"
    );
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn an_open_store_steps_aside_for_another_tabs_upgrade() {
    let name = unique_name("versionchange");
    let store = IdbStore::new(&name);
    store.save_thread(&thread("t1", "u", 1)).await.unwrap();
    // Another tab upgrades to a newer version: not blocked, because the store closes on versionchange.
    let db = js("name, version", OPEN_RAW, &[name.as_str().into(), (SCHEMA_VERSION + 1).into()])
        .await
        .expect("the upgrade must not be blocked");
    js("db", "db.close();", &[db]).await.unwrap();
    // The store reopens on next use and finds a version it does not know.
    let message = storage_message(store.get_thread_by_id("t1").await.expect_err("a newer version"));
    assert!(message.contains("VersionError"), "{message}");
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_store_reopens_after_its_database_was_deleted() {
    let name = unique_name("deleted");
    let store = IdbStore::new(&name);
    store.save_thread(&thread("t1", "u", 1)).await.unwrap();
    IdbStore::delete_database(&name).await.expect("deletion is not blocked by the open store");
    assert_eq!(store.get_thread_by_id("t1").await.unwrap(), None, "a fresh, empty database");
    store.save_thread(&thread("t2", "u", 1)).await.unwrap();
    assert_eq!(store.list_threads("u").await.unwrap().len(), 1);
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_connection_closed_unseen_is_reopened_once() {
    let name = unique_name("invalid-state");
    let store = IdbStore::new(&name);
    store.save_thread(&thread("t1", "u", 1)).await.unwrap();
    store.close_connection_unseen();
    assert_eq!(store.get_thread_by_id("t1").await.unwrap().map(|t| t.id).as_deref(), Some("t1"));
    store.close_connection_unseen();
    store.save_messages(&[msg("m1", "t1", 1, "x")]).await.expect("a write retries on a reopened connection");
    assert_eq!(list(&store, query("t1", None, None)).await.len(), 1);
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn an_open_blocked_by_another_tab_fails_after_the_timeout_instead_of_hanging() {
    let name = unique_name("blocked");
    // Tab A holds version 1 and ignores versionchange; tab B's upgrade to 2 waits on it; our
    // open queues behind B's and gets no event at all.
    let held = js(
        "name",
        "
        const a = await new Promise((res, rej) => { const r = indexedDB.open(name, 1); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
        const b = indexedDB.open(name, 2);
        await new Promise((res) => { b.onblocked = res; });
        return { a, b };",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    let store = IdbStore::with_open_timeout(&name, 300);
    let started = js_sys::Date::now();
    let err = store.list_threads("u").await.expect_err("blocked");
    let waited = js_sys::Date::now() - started;
    assert_eq!(storage_code(&err), "blocked");
    let message = storage_message(err);
    assert!(message.contains("timed out") && message.contains(&name), "{message}");
    assert!((280.0..3000.0).contains(&waited), "failed after {waited} ms");
    drop(store);
    // Let B through, then clean up.
    js(
        "held",
        "
        held.a.close();
        const db = await new Promise((res, rej) => { held.b.onsuccess = () => res(held.b.result); held.b.onerror = () => rej(held.b.error); });
        db.close();",
        &[held],
    )
    .await
    .unwrap();
    IdbStore::delete_database(&name).await.unwrap();
}

/// Polls `f` once: how far it gets before it must wait.
async fn poll_once<T>(f: &mut LocalFuture<'_, T>) -> Poll<T> {
    poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx))).await
}

/// Lets IndexedDB deliver the events of transactions already issued.
async fn settle() {
    js("", "await new Promise((r) => setTimeout(r, 50));", &[]).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_write_dropped_before_it_committed_is_rolled_back() {
    let name = unique_name("dropped");
    let store = IdbStore::new(&name);
    store.save_thread(&thread("t1", "u", 1)).await.unwrap();
    store.save_messages(&[msg("m0", "t1", 0, "kept")]).await.unwrap();
    // The connection is open, so one poll issues every request of the transaction; then the
    // operation is dropped (as a run's abort drops it) before the transaction's end.
    let batch = [msg("m1", "t1", 1, "a"), msg("m2", "t1", 2, "b"), msg("m3", "t1", 3, "c")];
    let mut write = store.save_messages(&batch);
    assert!(poll_once(&mut write).await.is_pending(), "the write waits for its transaction");
    drop(write);
    let mut delete = store.delete_thread("t1");
    assert!(poll_once(&mut delete).await.is_pending());
    drop(delete);
    settle().await;
    assert_eq!(ids(&list(&store, query("t1", None, None)).await), ["m0"], "none of the dropped batch, and the delete undone");
    assert!(store.get_thread_by_id("t1").await.unwrap().is_some());
    // The same write awaited to its end commits.
    store.save_messages(&batch).await.unwrap();
    assert_eq!(list(&store, query("t1", None, None)).await.len(), 4);
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn without_indexeddb_every_call_is_a_storage_error() {
    js("", "globalThis.__idbDescriptor = Object.getOwnPropertyDescriptor(globalThis, 'indexedDB'); Object.defineProperty(globalThis, 'indexedDB', { value: undefined, configurable: true, writable: true });", &[])
        .await
        .unwrap();
    let store = IdbStore::new(&unique_name("none"));
    let first = store.get_thread_by_id("t").await;
    let second = store.save_messages(&[msg("m", "t", 1, "x")]).await;
    js("", "Object.defineProperty(globalThis, 'indexedDB', globalThis.__idbDescriptor); delete globalThis.__idbDescriptor;", &[]).await.unwrap();
    for err in [first.expect_err("no IndexedDB"), second.expect_err("no IndexedDB")] {
        let message = storage_message(err);
        assert!(
            message.starts_with("IndexedDB is not available in this runtime")
                && message.contains("use InMemoryStore or pass a storage object"),
            "{message}"
        );
    }
}

/// The search ranks from block records and re-reads only candidates: over 300 vectors saved in
/// batches (appended to blocks) it gives exactly the brute-force top K in every scope; a message
/// record written without a block (before blocks existed) is still found; deleting a thread
/// deletes its blocks.
#[wasm_bindgen_test]
async fn vector_search_through_blocks_is_exact_and_finds_records_without_blocks() {
    use wasm_agent::core::memory::vectors::{normalized, search};
    let name = unique_name("vector-blocks");
    let store = IdbStore::new(&name);
    let mut seed = 0x1234_5678u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        (seed as f32 / u32::MAX as f32) - 0.5
    };
    let all: Vec<VectorRecord> = (0..300)
        .map(|i| VectorRecord { id: format!("v{i:03}"), thread_id: format!("t{}", i % 3), resource_id: "u".into(), vector: normalized((0..16).map(|_| next()).collect()) })
        .collect();
    for batch in all.chunks(70) {
        store.save_vectors(batch).await.unwrap();
    }
    for _ in 0..5 {
        let vector: Vec<f32> = (0..16).map(|_| next()).collect();
        for (thread, resource) in [(None, Some("u")), (Some("t1"), None), (Some("t2"), Some("u")), (None, None)] {
            let q = VectorQuery { vector: vector.clone(), top_k: 5, thread_id: thread.map(Into::into), resource_id: resource.map(Into::into), threshold: None };
            let want: Vec<(String, f32)> = search(&all, &q).into_iter().map(|h| (h.id, h.score)).collect();
            let got: Vec<(String, f32)> = store.query_vectors(&q).await.unwrap().into_iter().map(|h| (h.id, h.score)).collect();
            // The same ids in the same order; scores equal up to the store normalising again.
            assert_eq!(got.iter().map(|h| &h.0).collect::<Vec<_>>(), want.iter().map(|h| &h.0).collect::<Vec<_>>(), "scope {thread:?} {resource:?}");
            assert!(got.iter().zip(&want).all(|(g, w)| (g.1 - w.1).abs() < 1e-5), "scores {got:?} {want:?}");
        }
    }
    // A record of the per-message shape only, as an earlier version stored it.
    js(
        "name",
        "
        const db = await new Promise((res, rej) => { const r = indexedDB.open(name); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
        const tx = db.transaction('vectors', 'readwrite');
        tx.objectStore('vectors').put({ id: 'old', threadId: 't0', resourceId: 'u', vector: new Float32Array(16).fill(0.25) });
        await new Promise((res) => { tx.oncomplete = res; });
        db.close();",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    let q = VectorQuery { vector: vec![1.0; 16], top_k: 1, thread_id: Some("t0".into()), resource_id: None, threshold: None };
    assert_eq!(store.query_vectors(&q).await.unwrap().into_iter().map(|h| h.id).collect::<Vec<_>>(), ["old"]);
    store.delete_vectors(&VectorTarget::Thread("t0".into())).await.unwrap();
    let left = js(
        "name",
        "
        const db = await new Promise((res, rej) => { const r = indexedDB.open(name); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
        const req = db.transaction('vectors').objectStore('vectors').getAll();
        const all = await new Promise((res) => { req.onsuccess = () => res(req.result); });
        db.close();
        return JSON.stringify(all.filter((r) => Array.isArray(r.id)).map((r) => [r.id[2], r.ids.length]));",
        &[name.as_str().into()],
    )
    .await
    .unwrap();
    assert_eq!(left.as_string().unwrap(), r#"[["t1",100],["t2",100]]"#, "t0's block deleted, the others hold their 100 each");
    drop(store);
    IdbStore::delete_database(&name).await.unwrap();
}
