//! `structuredOutput` of a call (the call's, else `defaultOptions`'), and the deprecated
//! `output`: the schema converted as a tool's `inputSchema` is, the other fields checked by the
//! core, and a Standard Schema's own `validate` behind the core's `ObjectValidator`.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Array, Function, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, from_json, js_kind, read, to_json, type_error, Data};
use super::tools::{call_async, input_schema, issue_list, thrown_message};
use crate::core::env::LocalFuture;
use crate::core::run::structured::{
    parse_options, ObjectValidator, StructuredOptions, StructuredOutput, StructuringModel,
};

/// The data keys of `structuredOutput` besides `schema`.
const KEYS: &[&str] = &["errorStrategy", "fallbackValue", "instructions", "jsonPromptInjection", "providerOptions"];

thread_local! {
    static TOLD_OUTPUT: Cell<bool> = const { Cell::new(false) };
}

/// Reads the call's structured output; `strict_target`: the model is OpenAI's (`openai/`).
pub(crate) fn parse(
    options: &JsValue,
    defaults: &JsValue,
    strict_target: bool,
) -> Result<Option<StructuredOutput>, JsValue> {
    let (so, field) = own_or_default(options, defaults, "structuredOutput")?;
    let (output, output_field) = own_or_default(options, defaults, "output")?;
    let given = |v: &JsValue| !(v.is_undefined() || v.is_null());
    if !cfg!(feature = "structured") {
        let field = if given(&so) { field } else if given(&output) { output_field } else { return Ok(None) };
        return Err(error_to_js(&crate::core::features::not_built(field, "structured output", "structured")));
    }
    if given(&output) {
        let line = if given(&so) {
            "wasm-agent: both `structuredOutput` and the deprecated `output` were given; `output` was ignored (structuredOutput wins)."
        } else {
            "wasm-agent: `output` is deprecated: use `structuredOutput: { schema }` (it was honoured as that)."
        };
        warn_once(line);
    }
    if !given(&so) {
        if !given(&output) {
            return Ok(None);
        }
        let (schema, standard) = input_schema(&output, &output_field, "draft-07")?;
        let opts = parse_options(&Value::Object(Default::default()), &output_field).map_err(|e| error_to_js(&e))?;
        return Ok(Some(build(schema, standard, strict_target, opts)));
    }
    parse_value(&so, &field, strict_target).map(Some)
}

/// A given `structuredOutput` object at `field`; `strict_target` as in [`parse`].
pub(crate) fn parse_value(so: &JsValue, field: &str, strict_target: bool) -> Result<StructuredOutput, JsValue> {
    let given = |v: &JsValue| !(v.is_undefined() || v.is_null());
    if !so.is_object() || so.is_function() || Array::is_array(so) {
        let got = js_kind(so);
        return Err(type_error(
            field,
            &format!(
                "expected {{ schema, errorStrategy?, fallbackValue?, instructions?, jsonPromptInjection? }}, got {got}"
            ),
        ));
    }
    let schema_field = format!("{field}.schema");
    let schema_js = read(so, "schema", field)?;
    if !given(&schema_js) {
        return Err(type_error(
            &schema_field,
            "is required: a JSON Schema object or a Standard Schema (such as a zod schema)",
        ));
    }
    let (schema, standard) = input_schema(&schema_js, &schema_field, "draft-07")?;
    let model = read(so, "model", field)?;
    let model_field = format!("{field}.model");
    let model = if given(&model) {
        if !(model.is_string() || model.is_object()) || model.is_function() {
            let got = js_kind(&model);
            return Err(type_error(
                &model_field,
                &format!("expected 'provider/model' or {{ id, url, apiKey }}, got {got}"),
            ));
        }
        let config = Data::of(&model, &model_field).and_then(Data::strict).map_err(|e| error_to_js(&e))?;
        Some(super::options::resolve_model(&config, &model_field)?)
    } else {
        None
    };
    let use_agent = read(so, "useAgent", field)?;
    if given(&use_agent) && use_agent.as_bool().is_none() {
        return Err(type_error(
            &format!("{field}.useAgent"),
            &format!("expected a boolean, got {}", js_kind(&use_agent)),
        ));
    }
    let data = Data::pick(so, KEYS, field).map_err(|e| error_to_js(&e))?;
    let opts = data.parse(|t| parse_options(t, field)).map_err(|e| error_to_js(&e))?;
    let built = build(schema, standard, strict_target, opts);
    Ok(match model {
        None => built,
        Some((model, model_id, provider)) => {
            let provider_options = built
                .options
                .provider_options
                .as_ref()
                .and_then(|p| p.get(&provider))
                .and_then(Value::as_object)
                .cloned();
            let use_agent = use_agent.as_bool() == Some(true);
            built.with_model(StructuringModel { model, model_id, provider_options, use_agent }, provider == "openai")
        }
    })
}

fn build(schema: Value, standard: Option<JsValue>, strict_target: bool, opts: StructuredOptions) -> StructuredOutput {
    let validator = standard.map(|s| Rc::new(JsValidator { standard: s }) as Rc<dyn ObjectValidator>);
    StructuredOutput::new(schema, strict_target, opts, validator)
}

/// The call's option `key` and its path, else `defaultOptions`'.
fn own_or_default(options: &JsValue, defaults: &JsValue, key: &str) -> Result<(JsValue, String), JsValue> {
    let v = read(options, key, "options")?;
    if !v.is_undefined() {
        return Ok((v, format!("options.{key}")));
    }
    Ok((read(defaults, key, "config.defaultOptions")?, format!("config.defaultOptions.{key}")))
}

fn warn_once(line: &str) {
    if TOLD_OUTPUT.with(|t| t.replace(true)) {
        return;
    }
    super::report::warn(line);
}

/// `schema['~standard'].validate(value)`, awaited; the delivered value is its `value`.
struct JsValidator {
    standard: JsValue,
}

impl ObjectValidator for JsValidator {
    fn validate<'a>(&'a self, value: &'a Value) -> LocalFuture<'a, Result<Value, Vec<String>>> {
        Box::pin(async move {
            let get = |v: &JsValue, k: &str| Reflect::get(v, &k.into()).unwrap_or(JsValue::UNDEFINED);
            let validate = get(&self.standard, "validate")
                .dyn_into::<Function>()
                .map_err(|_| vec!["root: the schema has no ~standard.validate()".to_string()])?;
            let result = call_async(&validate, &self.standard, &[&from_json(value)])
                .await
                .map_err(|e| vec![format!("root: the schema's validate() threw: {}", thrown_message(&e))])?;
            let issues = get(&result, "issues");
            if !issues.is_object() {
                return to_json(&get(&result, "value"), "structuredOutput.schema")
                    .map_err(|e| vec![format!("root: {e}")]);
            }
            let lines = issue_list(&issues.unchecked_into())
                .into_iter()
                .map(|(path, message)| {
                    let at = if path == "$" { "root".to_string() } else { path.trim_start_matches("$.").to_string() };
                    format!("{at}: {message}")
                })
                .collect();
            Err(lines)
        })
    }
}
