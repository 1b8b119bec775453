use serde_json::json;

use super::*;

fn rec(id: &str, thread: &str, resource: &str, v: &[f32]) -> VectorRecord {
    VectorRecord { id: id.into(), thread_id: thread.into(), resource_id: resource.into(), vector: normalized(v.to_vec()) }
}

fn query(v: &[f32], top_k: usize) -> VectorQuery {
    VectorQuery { vector: v.to_vec(), top_k, thread_id: None, resource_id: None, threshold: None }
}

#[test]
fn the_chunked_dot_product_matches_the_plain_sum_at_every_length() {
    for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 1536] {
        let a: Vec<f32> = (0..n).map(|i| ((i * 7 % 13) as f32 - 6.0) / 5.0).collect();
        let b: Vec<f32> = (0..n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 3.0).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() <= 1e-3 * plain.abs().max(1.0), "n = {n}");
    }
}

#[test]
fn normalising_gives_length_one_and_leaves_a_zero_vector_alone() {
    let v = normalized(vec![3.0, 4.0]);
    assert_eq!(v, vec![0.6, 0.8]);
    assert_eq!(normalized(vec![0.0, 0.0]), vec![0.0, 0.0]);
}

#[test]
fn search_ranks_by_cosine_keeps_top_k_and_applies_threshold_and_scope() {
    let records = [
        rec("a", "t1", "u1", &[1.0, 0.0, 0.0]),
        rec("b", "t1", "u1", &[0.9, 0.1, 0.0]),
        rec("c", "t2", "u1", &[0.0, 1.0, 0.0]),
        rec("d", "t3", "u2", &[1.0, 0.0, 0.0]),
        // Another dimension (another embedder): never compared.
        rec("e", "t1", "u1", &[1.0, 0.0]),
    ];
    let hits = search(&records, &query(&[2.0, 0.0, 0.0], 3));
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    // a and d tie at 1.0: by id.
    assert_eq!(ids, ["a", "d", "b"]);
    assert!((hits[0].score - 1.0).abs() < 1e-6);
    let mut q = query(&[1.0, 0.0, 0.0], 10);
    q.resource_id = Some("u1".into());
    q.threshold = Some(0.5);
    let ids: Vec<String> = search(&records, &q).into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["a", "b"], "c is orthogonal, d is another resource's");
    q.thread_id = Some("t2".into());
    q.threshold = None;
    let ids: Vec<String> = search(&records, &q).into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["c"]);
    assert!(search(&records, &query(&[1.0, 0.0, 0.0], 0)).is_empty());
}

#[test]
fn only_user_and_assistant_text_is_embedded() {
    let msg = |role: &str, parts: serde_json::Value| StoredMessage {
        id: "m".into(),
        thread_id: "t".into(),
        resource_id: "u".into(),
        role: role.into(),
        created_at: String::new(),
        parts: parts.as_array().unwrap().clone(),
        metadata: None,
    };
    let parts = json!([{ "type": "text", "text": "Hello" }, { "type": "tool-invocation", "toolInvocation": {} }, { "type": "text", "text": "world" }]);
    assert_eq!(text_to_embed(&msg("user", parts.clone())).as_deref(), Some("Hello\nworld"));
    assert_eq!(text_to_embed(&msg("assistant", parts.clone())).as_deref(), Some("Hello\nworld"));
    assert_eq!(text_to_embed(&msg("system", parts)), None);
    assert_eq!(text_to_embed(&msg("assistant", json!([{ "type": "text", "text": "  " }]))), None);
}

#[test]
fn semantic_recall_options_take_the_references_forms_and_defaults() {
    let f = "options.semanticRecall";
    assert_eq!(parse_recall(&json!(false), f).unwrap(), None);
    assert_eq!(parse_recall(&json!(true), f).unwrap(), Some(RecallConfig::default()));
    let d = RecallConfig::default();
    assert_eq!((d.top_k, d.before, d.after, d.resource_scope, d.threshold), (4, 1, 1, true, None));
    let c = parse_recall(&json!({ "topK": 2, "messageRange": 3, "scope": "thread", "threshold": 0.7 }), f).unwrap().unwrap();
    assert_eq!((c.top_k, c.before, c.after, c.resource_scope), (2, 3, 3, false));
    assert!((c.threshold.unwrap() - 0.7).abs() < 1e-6);
    let c = parse_recall(&json!({ "messageRange": { "before": 2, "after": 0 } }), f).unwrap().unwrap();
    assert_eq!((c.before, c.after), (2, 0));
    for (bad, field) in [
        (json!({ "topK": -1 }), "options.semanticRecall.topK"),
        (json!({ "messageRange": "1" }), "options.semanticRecall.messageRange"),
        (json!({ "messageRange": { "before": 1.5 } }), "options.semanticRecall.messageRange.before"),
        (json!({ "scope": "global" }), "options.semanticRecall.scope"),
        (json!({ "threshold": 2 }), "options.semanticRecall.threshold"),
        (json!(4), "options.semanticRecall"),
    ] {
        let e = parse_recall(&bad, f).unwrap_err();
        assert_eq!(e.name(), "TypeError");
        assert!(e.to_string().starts_with(field), "{bad}: {e}");
    }
}

#[test]
fn records_and_queries_cross_to_storage_objects_as_json() {
    let r = VectorRecord { id: "m1".into(), thread_id: "t1".into(), resource_id: "u1".into(), vector: vec![0.5, 0.25] };
    let v = r.to_json();
    assert_eq!(v, json!({ "id": "m1", "threadId": "t1", "resourceId": "u1", "vector": [0.5, 0.25] }));
    assert_eq!(VectorRecord::from_json(&v, "storage.x").unwrap(), r);
    assert!(VectorRecord::from_json(&json!({ "id": "m1", "vector": ["x"] }), "storage.x").unwrap_err().to_string().contains("numeric vector"));
    let mut q = query(&[1.0], 3);
    q.thread_id = Some("t1".into());
    assert_eq!(q.to_json(), json!({ "vector": [1.0], "topK": 3, "threadId": "t1" }));
    assert_eq!(VectorTarget::Thread("t1".into()).to_json(), json!({ "threadId": "t1" }));
}
