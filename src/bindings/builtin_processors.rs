//! The exported classes of the built-in processors that run in Rust (`core::run::builtin_processors`):
//! their options read into the core's, and one fresh processor per run. Put in a processor list,
//! the loop calls them natively: no JavaScript call per chunk.

use std::rc::Rc;

use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, to_json, type_error};
use super::processors::{register_builtin, MakeProcessor};
use crate::core::input::kind;
use crate::core::run::builtin_processors::{BatchOptions, BatchParts, TokenLimitOptions, TokenLimiter};
use crate::core::run::processors::Processor;

fn options_json(v: Option<JsValue>, path: &str) -> Result<Value, JsValue> {
    let v = v.unwrap_or(JsValue::UNDEFINED);
    to_json(&v, path).map_err(|e| error_to_js(&e))
}

fn whole(v: &Value, path: &str, min: u32) -> Result<Option<f64>, JsValue> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f >= f64::from(min) && f.fract() == 0.0 => Ok(Some(f)),
            _ => Err(type_error(path, &format!("expected a whole number of at least {min}, got {n}"))),
        },
        other => Err(type_error(path, &format!("expected a number, got {}", kind(other)))),
    }
}

/// Joins consecutive text deltas into one chunk per `batchSize` (default 5); flushes before any
/// other chunk (`emitOnNonText`, default true) and at the end of each step, so nothing is lost or
/// reordered.
///
/// ```ts
/// new Agent({ id, model, outputProcessors: [new BatchPartsProcessor({ batchSize: 10 })] })
/// ```
#[wasm_bindgen]
pub struct BatchPartsProcessor {
    make: MakeProcessor,
    reg: u32,
}

#[wasm_bindgen]
impl BatchPartsProcessor {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ batchSize?: number; maxBatchSize?: number; maxWaitTime?: number; emitOnNonText?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> Result<BatchPartsProcessor, JsValue> {
        const P: &str = "new BatchPartsProcessor(options)";
        let o = options_json(options, P)?;
        if !(o.is_null() || o.is_object()) {
            return Err(type_error(P, &format!("expected an object or undefined, got {}", kind(&o))));
        }
        let field = |k: &str| o.get(k).cloned().unwrap_or(Value::Null);
        let mut opts = BatchOptions::default();
        // `maxBatchSize` is what the seed's example writes; `batchSize` wins when both are set.
        let size = whole(&field("batchSize"), &format!("{P}.batchSize"), 1)?.or(whole(
            &field("maxBatchSize"),
            &format!("{P}.maxBatchSize"),
            1,
        )?);
        if let Some(n) = size {
            opts.batch_size = n.min(1e6) as usize;
        }
        match field("maxWaitTime") {
            Value::Null => {}
            Value::Number(n) if n.as_f64().is_some_and(|f| f >= 0.0) => opts.max_wait_ms = n.as_f64(),
            other => {
                return Err(type_error(
                    &format!("{P}.maxWaitTime"),
                    &format!("expected a non-negative number of milliseconds, got {}", kind(&other)),
                ))
            }
        }
        match field("emitOnNonText") {
            Value::Null => {}
            Value::Bool(b) => opts.emit_on_non_text = b,
            other => {
                return Err(type_error(
                    &format!("{P}.emitOnNonText"),
                    &format!("expected a boolean, got {}", kind(&other)),
                ))
            }
        }
        let make: MakeProcessor =
            Rc::new(move || Rc::new(BatchParts::new(opts.clone(), Rc::new(js_sys::Date::now))) as Rc<dyn Processor>);
        let reg = register_builtin(&make);
        Ok(BatchPartsProcessor { make, reg })
    }

    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        "batch-parts".into()
    }

    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        "Batch Parts".into()
    }

    #[doc(hidden)]
    #[wasm_bindgen(js_name = __processorId, skip_typescript)]
    pub fn processor_id(&self) -> u32 {
        let _ = &self.make;
        self.reg
    }
}

/// Keeps a run within a token budget (≈ 4 characters a token, files flat): trims the oldest
/// input messages to fit, and cuts the reply (`strategy: 'truncate'`, default) or stops it with a
/// tripwire (`'abort'`) once its text passes the limit (`countMode: 'cumulative'`, default, or
/// `'part'`, each delta alone).
///
/// ```ts
/// new Agent({ id, model, outputProcessors: [new TokenLimiterProcessor({ limit: 500, strategy: 'abort' })] })
/// ```
#[wasm_bindgen]
pub struct TokenLimiterProcessor {
    make: MakeProcessor,
    reg: u32,
}

#[wasm_bindgen]
impl TokenLimiterProcessor {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(
            unchecked_param_type = "number | { limit: number; strategy?: 'truncate' | 'abort'; countMode?: 'cumulative' | 'part' }"
        )]
        options: JsValue,
    ) -> Result<TokenLimiterProcessor, JsValue> {
        const P: &str = "new TokenLimiterProcessor(options)";
        let o = options_json(Some(options), P)?;
        let (limit, o) = match &o {
            Value::Number(_) => (whole(&o, P, 1)?, Value::Null),
            Value::Object(m) => (whole(m.get("limit").unwrap_or(&Value::Null), &format!("{P}.limit"), 1)?, o.clone()),
            other => {
                return Err(type_error(
                    P,
                    &format!(
                        "expected a token limit (a number) or {{ limit, strategy?, countMode? }}, got {}",
                        kind(other)
                    ),
                ))
            }
        };
        let Some(limit) = limit else {
            return Err(type_error(&format!("{P}.limit"), "is required: the number of tokens allowed"));
        };
        let choice = |k: &str, values: [&str; 2]| -> Result<bool, JsValue> {
            match o.get(k) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::String(s)) if s == values[0] => Ok(false),
                Some(Value::String(s)) if s == values[1] => Ok(true),
                Some(other) => Err(type_error(
                    &format!("{P}.{k}"),
                    &format!("expected '{}' or '{}', got {other}", values[0], values[1]),
                )),
            }
        };
        let opts = TokenLimitOptions {
            limit: limit as u64,
            abort: choice("strategy", ["truncate", "abort"])?,
            per_part: choice("countMode", ["cumulative", "part"])?,
        };
        let make: MakeProcessor = Rc::new(move || Rc::new(TokenLimiter::new(opts.clone())) as Rc<dyn Processor>);
        let reg = register_builtin(&make);
        Ok(TokenLimiterProcessor { make, reg })
    }

    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        "token-limiter".into()
    }

    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        "Token Limiter".into()
    }

    #[doc(hidden)]
    #[wasm_bindgen(js_name = __processorId, skip_typescript)]
    pub fn processor_id(&self) -> u32 {
        let _ = &self.make;
        self.reg
    }
}
