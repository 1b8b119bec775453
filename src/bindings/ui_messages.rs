//! `toAISdkV5Messages(messages)` and its name without the version, `toAISdkMessages` (§21.4):
//! any messages this package accepts as AI SDK v5 `UIMessage`s, for `useChat({ messages })`.

use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, from_json, Data};
use crate::core::memory::{iso_time, to_ui_messages};
use crate::platform::random_uuid;

fn convert(messages: &JsValue, name: &str) -> Result<JsValue, JsValue> {
    let field = format!("{name}(messages)");
    // New messages get times a millisecond apart, so they sort in the order given.
    let start = js_sys::Date::now();
    let mut n = 0.0;
    let mut next = || {
        n += 1.0;
        (random_uuid(), iso_time(start + n))
    };
    let list = Data::of(messages, &field).and_then(|d| d.parse(|v| to_ui_messages(v, &field, &mut next))).map_err(|e| error_to_js(&e))?;
    Ok(from_json(&serde_json::Value::Array(list)))
}

/// Messages — a string, model messages, UI messages or stored messages (`memory.listMessages()`),
/// mixed as `stream()` accepts them — as AI SDK v5 UI messages: text, reasoning, file, tool parts
/// with their states, data parts. Tool results complete the calls before them; stored and UI
/// messages keep their ids; the others get new ones.
///
/// ```js
/// const messages = toAISdkV5Messages([{ role: 'user', content: 'Hello' }])
/// ```
#[wasm_bindgen(js_name = toAISdkV5Messages, unchecked_return_type = "UIMessage[]")]
pub fn to_ai_sdk_v5_messages(#[wasm_bindgen(unchecked_param_type = "MessageInput | StorageMessage[]")] messages: JsValue) -> Result<JsValue, JsValue> {
    convert(&messages, "toAISdkV5Messages")
}

/// `toAISdkV5Messages` under the name without the version.
#[wasm_bindgen(js_name = toAISdkMessages, unchecked_return_type = "UIMessage[]")]
pub fn to_ai_sdk_messages(#[wasm_bindgen(unchecked_param_type = "MessageInput | StorageMessage[]")] messages: JsValue) -> Result<JsValue, JsValue> {
    convert(&messages, "toAISdkMessages")
}
