//! Tests shared by the Node and Chromium runs: the fetch bridge, timers and ids of `platform`,
//! and `Agent` end to end through a scripted global `fetch` (the real network is exercised by
//! the package tests against the local model server).

use js_sys::{Function, Object, Promise, Reflect};
use wasm_agent::bindings::agent::Agent;
use wasm_agent::core::env::Env;
use wasm_agent::platform::{random_uuid, JsEnv};
use wasm_agent::providers::HttpRequest;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

fn js(args: &str, body: &str) -> Function {
    Function::new_with_args(args, body)
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &key.into()).unwrap()
}

/// Replaces the global fetch with a scripted one that answers with `events` as SSE `data:`
/// lines, one body chunk each, and records every call on `globalThis.__calls`.
fn script_fetch(status: u16, events: &[&str]) {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect::<Vec<_>>().join("\u{0}");
    let install = js(
        "status, body",
        r#"
        globalThis.__realFetch ??= globalThis.fetch;
        globalThis.__calls = [];
        globalThis.fetch = (url, init) => {
          const call = { url, init, signal: init.signal };
          globalThis.__calls.push(call);
          const parts = body.split('\u0000');
          const enc = new TextEncoder();
          let i = 0;
          const stream = new ReadableStream({
            pull(c) { if (i < parts.length) c.enqueue(enc.encode(parts[i++])); else c.close(); },
            cancel() { call.cancelled = true; },
          });
          return Promise.resolve(new Response(stream, { status, headers: { 'retry-after': '7', 'content-type': 'text/event-stream' } }));
        };"#,
    );
    install.call2(&JsValue::UNDEFINED, &JsValue::from(status), &JsValue::from_str(&body)).unwrap();
}

fn calls() -> js_sys::Array {
    Reflect::get(&js_sys::global(), &"__calls".into()).unwrap().unchecked_into()
}

fn restore_fetch() {
    js("", "if (globalThis.__realFetch) globalThis.fetch = globalThis.__realFetch;").call0(&JsValue::UNDEFINED).unwrap();
}

const D1: &str = r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hello"}}]}"#;
const D2: &str = r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":" wasm"}}]}"#;
const FIN: &str = r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

fn request() -> HttpRequest {
    HttpRequest {
        url: "http://127.0.0.1:9/v1/chat/completions".into(),
        headers: vec![("content-type".into(), "application/json".into()), ("x-test".into(), "1".into())],
        body: "{\"a\":1}".into(),
    }
}

#[wasm_bindgen_test]
fn uuids_are_version_4_and_unique() {
    let a = random_uuid();
    let b = random_uuid();
    assert_eq!(a.len(), 36);
    assert_eq!(&a[14..15], "4");
    assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    assert_ne!(a, b);
}

#[wasm_bindgen_test]
async fn sleep_waits_at_least_as_long_as_asked() {
    let env = JsEnv;
    let t0 = env.now_ms();
    env.sleep(30).await;
    assert!(env.now_ms() - t0 >= 25.0);
}

#[wasm_bindgen_test]
async fn fetch_sends_method_headers_body_and_streams_the_body() {
    script_fetch(200, &[D1, D2]);
    let mut resp = JsEnv.fetch(request()).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("retry-after"), Some("7"));
    let mut got = Vec::new();
    while let Some(b) = resp.body.read().await.unwrap() {
        got.extend(b);
    }
    let text = String::from_utf8(got).unwrap();
    assert!(text.starts_with("data: {\"id\":\"c1\"") && text.contains(" wasm"), "{text}");
    let call = calls().get(0);
    assert_eq!(get(&call, "url").as_string().unwrap(), "http://127.0.0.1:9/v1/chat/completions");
    let init = get(&call, "init");
    assert_eq!(get(&init, "method").as_string().unwrap(), "POST");
    assert_eq!(get(&get(&init, "headers"), "x-test").as_string().unwrap(), "1");
    assert_eq!(get(&init, "body").as_string().unwrap(), "{\"a\":1}");
    // A body read to its end does not abort the request.
    assert!(!get(&get(&call, "signal"), "aborted").is_truthy());
    restore_fetch();
}

#[wasm_bindgen_test]
async fn dropping_an_unfinished_body_aborts_the_request() {
    script_fetch(200, &[D1, D2, FIN]);
    let mut resp = JsEnv.fetch(request()).await.unwrap();
    let first = resp.body.read().await.unwrap();
    assert!(first.is_some());
    drop(resp);
    let call = calls().get(0);
    assert!(get(&get(&call, "signal"), "aborted").is_truthy());
    restore_fetch();
}

#[wasm_bindgen_test]
async fn a_rejected_fetch_is_a_retryable_api_error_naming_the_url() {
    js("", "globalThis.__realFetch ??= globalThis.fetch; globalThis.fetch = () => Promise.reject(new TypeError('fetch failed'));")
        .call0(&JsValue::UNDEFINED)
        .unwrap();
    let err = JsEnv.fetch(request()).await.err().unwrap();
    let msg = err.to_string();
    assert!(msg.contains("127.0.0.1:9") && msg.contains("fetch failed"), "{msg}");
    assert!(matches!(err, wasm_agent::core::error::AgentError::ApiCall { retryable: true, .. }));
    restore_fetch();
}

fn agent(model_id: &str) -> Result<Agent, JsValue> {
    let cfg = Object::new();
    Reflect::set(&cfg, &"id".into(), &"t".into()).unwrap();
    let model = Object::new();
    Reflect::set(&model, &"id".into(), &model_id.into()).unwrap();
    Reflect::set(&model, &"url".into(), &"http://127.0.0.1:9/v1".into()).unwrap();
    Reflect::set(&model, &"apiKey".into(), &"sk-test".into()).unwrap();
    // The scripted fetch answers in Chat Completions chunks (`openai/` defaults to Responses).
    Reflect::set(&model, &"api".into(), &"chat".into()).unwrap();
    Reflect::set(&cfg, &"model".into(), &model).unwrap();
    Agent::new(cfg.into())
}

async fn await_js(p: JsValue) -> Result<JsValue, JsValue> {
    JsFuture::from(p.unchecked_into::<Promise>()).await
}

#[wasm_bindgen_test]
async fn an_agent_streams_chunks_and_resolves_its_promises() {
    script_fetch(200, &[D1, D2, FIN, "[DONE]"]);
    let a = agent("openai/m").unwrap();
    let out = await_js(a.stream("hi".into(), None).into()).await.unwrap();
    let text = await_js(get(&out, "text")).await.unwrap();
    assert_eq!(text.as_string().unwrap(), "Hello wasm");
    // fullStream created after the run still replays every chunk, in order; the deltas of the
    // block nobody read yet come joined into one.
    let collect = js(
        "out",
        "return (async () => { const t = []; for await (const c of out.fullStream) t.push(c.type + (c.runId === out.runId ? '' : '!') + (c.type === 'text-delta' ? `=${c.payload.text}` : '')); return t.join(','); })()",
    );
    let types = await_js(collect.call1(&JsValue::UNDEFINED, &out).unwrap()).await.unwrap();
    assert_eq!(
        types.as_string().unwrap(),
        "start,step-start,text-start,text-delta=Hello wasm,text-end,step-finish,finish"
    );
    let again = Reflect::get(&out, &"fullStream".into());
    assert!(again.is_err(), "a second fullStream must be refused");
    let body = get(&get(&calls().get(0), "init"), "body").as_string().unwrap();
    assert!(body.contains("\"content\":\"hi\""), "{body}");
    restore_fetch();
}

#[wasm_bindgen_test]
async fn a_failed_run_rejects_text_with_a_named_error() {
    script_fetch(401, &[r#"{"error":{"message":"bad key"}}"#]);
    let a = agent("openai/m").unwrap();
    let out = await_js(a.stream("hi".into(), None).into()).await.unwrap();
    let err = await_js(get(&out, "text")).await.unwrap_err();
    assert_eq!(get(&err, "name").as_string().unwrap(), "APICallError");
    assert_eq!(get(&err, "status").as_f64(), Some(401.0));
    assert!(!get(&err, "message").as_string().unwrap().contains("sk-test"));
    restore_fetch();
}

#[wasm_bindgen_test]
async fn malformed_values_never_break_the_instance() {
    let bad_values = js(
        "",
        "const cyc = {}; cyc.self = cyc; return [undefined, null, 5, 'x', Symbol('s'), 10n, [], cyc, () => 1, new Uint8Array(3), { id: cyc }, { id: 't', model: cyc }, { id: 't', model: 10n }, { id: 't', model: { id: Symbol('m') } }, { id: 't', model: 'openai/m', instructions: cyc }, { id: 't', model: 'nope' }];",
    )
    .call0(&JsValue::UNDEFINED)
    .unwrap()
    .unchecked_into::<js_sys::Array>();
    for v in bad_values.iter() {
        let err = Agent::new(v).err().expect("bad config is refused");
        assert_eq!(get(&err, "name").as_string().unwrap(), "TypeError");
    }
    script_fetch(200, &[D1, FIN, "[DONE]"]);
    let a = agent("openai/m").unwrap();
    for v in bad_values.iter() {
        let _ = await_js(a.stream(v.clone(), None).into()).await;
        let rejected = await_js(a.stream("hi".into(), Some(v)).into()).await;
        if let Err(e) = rejected {
            assert_eq!(get(&e, "name").as_string().unwrap(), "TypeError");
        }
    }
    let out = await_js(a.stream("hi".into(), None).into()).await.unwrap();
    assert_eq!(await_js(get(&out, "text")).await.unwrap().as_string().unwrap(), "Hello");
    restore_fetch();
}
