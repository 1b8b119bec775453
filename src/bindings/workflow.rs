//! `createStep`, `createWorkflow` and the workflow builder (SPEC §20.1). Each builder call reads
//! its arguments now (a bad one is a `TypeError` naming it) and adds a node to the core's graph;
//! the user's functions go to the host table (`workflow_host`).

use std::rc::Rc;

use js_sys::{Array, Function, Reflect};
use serde_json::json;
use wasm_bindgen::prelude::*;

use super::convert::{error_to_js, js_kind, to_json, type_error};
use super::registry::Registry;
use super::workflow_host::{register, HostFn};
use crate::core::schema;
use crate::core::workflow::graph::{Body, MapSource, Mapping, Node, RetryConfig, Schema, StepDef, When, WorkflowDef};

thread_local! {
    static STEPS: Registry<StepDef> = const { Registry::new() };
    static WORKFLOWS: Registry<WfInner> = const { Registry::new() };
}

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn absent(v: &JsValue) -> bool {
    v.is_undefined() || v.is_null()
}

/// A schema field: JSON Schema (checked now), or a Standard Schema the host validates.
pub(crate) fn schema_of(v: &JsValue, path: &str) -> Result<Option<Schema>, JsValue> {
    if absent(v) {
        return Ok(None);
    }
    let standard = get(v, "~standard");
    if standard.is_object() {
        return Ok(Some(Schema::Host(register(HostFn::Standard(standard)))));
    }
    if !v.is_object() || v.is_function() {
        return Err(type_error(
            path,
            &format!("expected a JSON Schema object or a Standard Schema (such as a zod schema), got {}", js_kind(v)),
        ));
    }
    let s = to_json(v, path).map_err(|e| error_to_js(&e))?;
    schema::check_schema(&s).map_err(|m| type_error(path, &m))?;
    Ok(Some(Schema::Json(s)))
}

fn id_of(v: &JsValue, path: &str) -> Result<String, JsValue> {
    let id = get(v, "id");
    id.as_string()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| type_error(&format!("{path}.id"), &format!("expected a non-empty string, got {}", js_kind(&id))))
}

fn count(v: &JsValue, path: &str) -> Result<Option<u32>, JsValue> {
    if absent(v) {
        return Ok(None);
    }
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 1e6 => Ok(Some(n as u32)),
        _ => Err(type_error(path, &format!("expected a non-negative integer, got {}", js_kind(v)))),
    }
}

fn flag(v: &JsValue, path: &str) -> Result<Option<bool>, JsValue> {
    if absent(v) {
        return Ok(None);
    }
    v.as_bool().map(Some).ok_or_else(|| type_error(path, &format!("expected a boolean, got {}", js_kind(v))))
}

/// A step made by `createStep`.
#[wasm_bindgen]
pub struct Step {
    def: Rc<StepDef>,
    ref_id: u32,
    source: JsValue,
}

#[wasm_bindgen]
impl Step {
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.def.id.clone()
    }
    #[wasm_bindgen(getter)]
    pub fn description(&self) -> Option<String> {
        self.def.description.clone()
    }
    #[wasm_bindgen(getter = inputSchema)]
    pub fn input_schema(&self) -> JsValue {
        get(&self.source, "inputSchema")
    }
    #[wasm_bindgen(getter = outputSchema)]
    pub fn output_schema(&self) -> JsValue {
        get(&self.source, "outputSchema")
    }
    #[wasm_bindgen(js_name = __stepRef, skip_typescript)]
    pub fn step_ref(&self) -> u32 {
        self.ref_id
    }
}

fn make_step(def: StepDef, source: JsValue) -> Step {
    let def = Rc::new(def);
    let ref_id = STEPS.with(|r| r.add(&def));
    Step { def, ref_id, source }
}

/// `createStep(definition)`, `createStep(agent, options?)`, `createStep(tool)` or
/// `createStep(workflow)`.
#[wasm_bindgen(js_name = createStep, unchecked_return_type = "Step")]
pub fn create_step(
    #[wasm_bindgen(unchecked_param_type = "StepDefinition | Agent | Tool | Workflow")] def: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "AgentStepOptions")] options: Option<JsValue>,
) -> Result<Step, JsValue> {
    let path = "createStep(step)";
    if let Some(agent) = super::agent::lookup_agent(&def) {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let structured = !absent(&get(&options, "structuredOutput"));
        let mut s =
            StepDef::new(agent.id(), Body::Host(register(HostFn::Agent { agent: def.clone(), options, structured })));
        s.input_schema = Some(Schema::Json(
            json!({ "type": "object", "properties": { "prompt": { "type": "string" } }, "required": ["prompt"] }),
        ));
        return Ok(make_step(s, JsValue::UNDEFINED));
    }
    if let Some(wf) = lookup_workflow(&def) {
        return Ok(make_step(nested(&wf), JsValue::UNDEFINED));
    }
    if !def.is_object() || def.is_function() {
        return Err(type_error(path, &format!("expected a step definition {{ id, inputSchema, outputSchema, execute }}, an agent, a tool or a workflow, got {}", js_kind(&def))));
    }
    let id = id_of(&def, path)?;
    let execute = get(&def, "execute")
        .dyn_into::<Function>()
        .map_err(|e| type_error(&format!("{path}.execute"), &format!("expected a function, got {}", js_kind(&e))))?;
    let body = if super::tools::is_made_tool(&def) {
        HostFn::Tool { tool: def.clone(), execute }
    } else {
        HostFn::Execute(execute)
    };
    let mut s = StepDef::new(id, Body::Host(register(body)));
    s.description = get(&def, "description").as_string();
    s.input_schema = schema_of(&get(&def, "inputSchema"), &format!("{path}.inputSchema"))?;
    s.output_schema = schema_of(&get(&def, "outputSchema"), &format!("{path}.outputSchema"))?;
    s.state_schema = schema_of(&get(&def, "stateSchema"), &format!("{path}.stateSchema"))?;
    s.resume_schema = schema_of(&get(&def, "resumeSchema"), &format!("{path}.resumeSchema"))?;
    schema_of(&get(&def, "suspendSchema"), &format!("{path}.suspendSchema"))?;
    s.retries = count(&get(&def, "retries"), &format!("{path}.retries"))?;
    let metadata = get(&def, "metadata");
    if !absent(&metadata) {
        s.metadata = Some(to_json(&metadata, &format!("{path}.metadata")).map_err(|e| error_to_js(&e))?);
    }
    Ok(make_step(s, def))
}

/// A committed workflow as a step of another.
fn nested(wf: &Rc<WfInner>) -> StepDef {
    let mut s = StepDef::new(wf.def.id.clone(), Body::Workflow(wf.def.clone()));
    s.input_schema = wf.def.input_schema.clone();
    s.output_schema = wf.def.output_schema.clone();
    s
}

pub(crate) struct WfInner {
    pub def: Rc<WorkflowDef>,
    pub on_finish: Option<Function>,
    pub on_error: Option<Function>,
    pub config: JsValue,
    ref_id: std::cell::Cell<u32>,
    /// `new Mastra({ storage })`'s store, once a Mastra registers this workflow (SPEC §20.5).
    pub storage: std::cell::RefCell<Option<Rc<dyn crate::core::memory::Store>>>,
}

impl WfInner {
    /// The store this workflow's runs use (the package instance's without a storage keeping
    /// workflow snapshots).
    pub(crate) fn store(&self) -> Rc<dyn crate::core::memory::Store> {
        let given = self.storage.borrow().clone();
        super::workflow_storage::store_for(given.as_ref())
    }
}

pub(crate) fn lookup_workflow(v: &JsValue) -> Option<Rc<WfInner>> {
    WORKFLOWS.with(|r| r.lookup(v, "__workflowRef"))
}

/// A step argument of a builder call: a step, or a workflow (run as a step).
fn step_arg(v: &JsValue, path: &str) -> Result<Rc<StepDef>, JsValue> {
    if let Some(s) = STEPS.with(|r| r.lookup(v, "__stepRef")) {
        return Ok(s);
    }
    if let Some(wf) = lookup_workflow(v) {
        if !wf.def.committed.get() {
            return Err(type_error(
                path,
                &format!("the workflow '{}' is not committed; call .commit() on it first", wf.def.id),
            ));
        }
        return Ok(Rc::new(nested(&wf)));
    }
    // `await wf` (or returning it from an async function) calls its builder `.then` with the
    // promise's resolve function: say so, the plain message would puzzle.
    let hint = if path == "then(step)" && v.is_function() {
        " (a workflow's builder has .then, so awaiting a workflow, or returning one from an async function, calls .then(resolve, reject): keep workflows out of await, e.g. return { workflow })"
    } else {
        ""
    };
    Err(type_error(path, &format!("expected a step made by createStep(…) or a committed workflow, got {}{hint}", js_kind(v))))
}

fn function(v: &JsValue, path: &str) -> Result<Function, JsValue> {
    v.clone().dyn_into::<Function>().map_err(|_| type_error(path, &format!("expected a function, got {}", js_kind(v))))
}

fn steps_array(v: &JsValue, path: &str) -> Result<Array, JsValue> {
    if !Array::is_array(v) {
        return Err(type_error(path, &format!("expected an array, got {}", js_kind(v))));
    }
    let a: Array = v.clone().unchecked_into();
    if a.length() == 0 {
        return Err(type_error(path, "expected at least one entry"));
    }
    Ok(a)
}

/// `createWorkflow({ id, description?, inputSchema, outputSchema, stateSchema?, retryConfig?, options? })`.
#[wasm_bindgen(js_name = createWorkflow, unchecked_return_type = "Workflow")]
pub fn create_workflow(
    #[wasm_bindgen(unchecked_param_type = "WorkflowConfig")] config: JsValue,
) -> Result<Workflow, JsValue> {
    let path = "createWorkflow(config)";
    if !config.is_object() {
        return Err(type_error(
            path,
            &format!("expected {{ id, inputSchema, outputSchema }}, got {}", js_kind(&config)),
        ));
    }
    let mut def = WorkflowDef::new(id_of(&config, path)?);
    def.description = get(&config, "description").as_string();
    def.input_schema = schema_of(&get(&config, "inputSchema"), &format!("{path}.inputSchema"))?;
    def.output_schema = schema_of(&get(&config, "outputSchema"), &format!("{path}.outputSchema"))?;
    def.state_schema = schema_of(&get(&config, "stateSchema"), &format!("{path}.stateSchema"))?;
    let retry = get(&config, "retryConfig");
    if !absent(&retry) {
        let attempts = count(&get(&retry, "attempts"), &format!("{path}.retryConfig.attempts"))?.unwrap_or(0);
        let delay = count(&get(&retry, "delay"), &format!("{path}.retryConfig.delay"))?.unwrap_or(0);
        def.retry = RetryConfig { attempts, delay_ms: delay as f64 };
    }
    let options = get(&config, "options");
    let (mut on_finish, mut on_error) = (None, None);
    if !absent(&options) {
        if let Some(b) = flag(&get(&options, "validateInputs"), &format!("{path}.options.validateInputs"))? {
            def.validate_inputs = b;
        }
        if let Some(b) = flag(&get(&options, "validateOutputs"), &format!("{path}.options.validateOutputs"))? {
            def.validate_outputs = b;
        }
        let f = get(&options, "onFinish");
        if !absent(&f) {
            on_finish = Some(function(&f, &format!("{path}.options.onFinish"))?);
        }
        let f = get(&options, "onError");
        if !absent(&f) {
            on_error = Some(function(&f, &format!("{path}.options.onError"))?);
        }
    }
    let inner = Rc::new(WfInner {
        def: Rc::new(def),
        on_finish,
        on_error,
        config,
        ref_id: Default::default(),
        storage: Default::default(),
    });
    inner.ref_id.set(WORKFLOWS.with(|r| r.add(&inner)));
    Ok(Workflow { inner })
}

#[wasm_bindgen]
pub struct Workflow {
    pub(crate) inner: Rc<WfInner>,
}

impl Workflow {
    fn push(&self, node: Node) -> Result<Workflow, JsValue> {
        self.inner.def.push(node).map_err(|e| error_to_js(&e))?;
        Ok(Workflow { inner: self.inner.clone() })
    }
}

fn when(v: &JsValue, path: &str, date: bool) -> Result<When, JsValue> {
    if v.is_function() {
        return Ok(When::Host(register(HostFn::Plain(v.clone().unchecked_into()))));
    }
    if let Some(d) = v.dyn_ref::<js_sys::Date>() {
        if date {
            return Ok(When::Fixed(d.get_time()));
        }
    }
    match v.as_f64() {
        Some(n) if n.is_finite() && n >= 0.0 => Ok(When::Fixed(n)),
        _ => Err(type_error(
            path,
            &format!(
                "expected {}, got {}",
                if date { "a Date, a time in ms or a function" } else { "a duration in ms or a function" },
                js_kind(v)
            ),
        )),
    }
}

fn map_source(v: &JsValue, path: &str) -> Result<MapSource, JsValue> {
    let has = |k: &str| Reflect::has(v, &JsValue::from_str(k)).unwrap_or(false);
    let path_of = |p: &str| -> Result<String, JsValue> {
        let p = get(v, p);
        if absent(&p) {
            return Ok(".".into());
        }
        p.as_string()
            .ok_or_else(|| type_error(&format!("{path}.path"), &format!("expected a string, got {}", js_kind(&p))))
    };
    if !v.is_object() {
        return Err(type_error(path, &format!("expected {{ step, path }}, {{ value, schema }}, {{ initData, path }}, {{ requestContextPath }} or {{ fn }}, got {}", js_kind(v))));
    }
    if has("fn") {
        return Ok(MapSource::Fn(register(HostFn::Plain(function(&get(v, "fn"), &format!("{path}.fn"))?))));
    }
    if has("value") {
        return Ok(MapSource::Value(to_json(&get(v, "value"), &format!("{path}.value")).map_err(|e| error_to_js(&e))?));
    }
    if has("initData") {
        return Ok(MapSource::InitData { path: path_of("path")? });
    }
    if has("requestContextPath") {
        return Ok(MapSource::RequestContext { path: path_of("requestContextPath")? });
    }
    if has("step") {
        let s = get(v, "step");
        let s = if Array::is_array(&s) { Array::from(&s).get(0) } else { s };
        let step = s.as_string().or_else(|| get(&s, "id").as_string()).ok_or_else(|| {
            type_error(&format!("{path}.step"), &format!("expected a step or a step id, got {}", js_kind(&s)))
        })?;
        return Ok(MapSource::Step { step, path: path_of("path")? });
    }
    Err(type_error(path, "expected one of step, value, initData, requestContextPath or fn"))
}

#[wasm_bindgen]
impl Workflow {
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.inner.def.id.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn description(&self) -> Option<String> {
        self.inner.def.description.clone()
    }

    #[wasm_bindgen(getter = inputSchema)]
    pub fn input_schema(&self) -> JsValue {
        get(&self.inner.config, "inputSchema")
    }

    #[wasm_bindgen(getter = outputSchema)]
    pub fn output_schema(&self) -> JsValue {
        get(&self.inner.config, "outputSchema")
    }

    #[wasm_bindgen(js_name = __workflowRef, skip_typescript)]
    pub fn workflow_ref(&self) -> u32 {
        self.inner.ref_id.get()
    }

    /// `.then(step)`: the step runs on the previous output.
    pub fn then(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Step | Workflow")] step: JsValue,
    ) -> Result<Workflow, JsValue> {
        self.push(Node::Step(step_arg(&step, "then(step)")?))
    }

    /// `.parallel([steps])`: all at once; the next input is `{ [stepId]: output }`.
    pub fn parallel(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(Step | Workflow)[]")] steps: JsValue,
    ) -> Result<Workflow, JsValue> {
        let a = steps_array(&steps, "parallel(steps)")?;
        let steps = a
            .iter()
            .enumerate()
            .map(|(i, s)| step_arg(&s, &format!("parallel(steps)[{i}]")))
            .collect::<Result<_, _>>()?;
        self.push(Node::Parallel(steps))
    }

    /// `.branch([[condition, step], …])`: every step whose condition holds runs.
    pub fn branch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "[StepCondition, Step | Workflow][]")] arms: JsValue,
    ) -> Result<Workflow, JsValue> {
        let a = steps_array(&arms, "branch(branches)")?;
        let mut out = Vec::new();
        for (i, arm) in a.iter().enumerate() {
            let p = format!("branch(branches)[{i}]");
            if !Array::is_array(&arm) {
                return Err(type_error(&p, &format!("expected [condition, step], got {}", js_kind(&arm))));
            }
            let arm = Array::from(&arm);
            let cond = function(&arm.get(0), &format!("{p}[0]"))?;
            out.push((register(HostFn::Plain(cond)), step_arg(&arm.get(1), &format!("{p}[1]"))?));
        }
        self.push(Node::Branch(out))
    }

    /// `.dowhile(step, condition)`: the step again while the condition holds.
    pub fn dowhile(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Step | Workflow")] step: JsValue,
        #[wasm_bindgen(unchecked_param_type = "StepCondition")] condition: JsValue,
    ) -> Result<Workflow, JsValue> {
        let step = step_arg(&step, "dowhile(step)")?;
        let cond = register(HostFn::Plain(function(&condition, "dowhile(step, condition)")?));
        self.push(Node::Loop { step, cond, until: false })
    }

    /// `.dountil(step, condition)`: the step again until the condition holds.
    pub fn dountil(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Step | Workflow")] step: JsValue,
        #[wasm_bindgen(unchecked_param_type = "StepCondition")] condition: JsValue,
    ) -> Result<Workflow, JsValue> {
        let step = step_arg(&step, "dountil(step)")?;
        let cond = register(HostFn::Plain(function(&condition, "dountil(step, condition)")?));
        self.push(Node::Loop { step, cond, until: true })
    }

    /// `.foreach(step, { concurrency: 1 })`: the step on every item of the array input.
    pub fn foreach(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Step | Workflow")] step: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ concurrency?: number }")] options: Option<JsValue>,
    ) -> Result<Workflow, JsValue> {
        let step = step_arg(&step, "foreach(step)")?;
        let c = options.map(|o| get(&o, "concurrency")).unwrap_or(JsValue::UNDEFINED);
        let concurrency = match count(&c, "foreach(step, options).concurrency")? {
            Some(0) => {
                return Err(type_error("foreach(step, options).concurrency", "expected a positive integer, got 0"))
            }
            Some(n) => n as usize,
            None => 1,
        };
        self.push(Node::Foreach { step, concurrency })
    }

    /// `.map(fn | mapping)`: a step computing the next input.
    pub fn map(
        &self,
        #[wasm_bindgen(unchecked_param_type = "StepCondition | Record<string, MapSource>")] mapping: JsValue,
    ) -> Result<Workflow, JsValue> {
        let m = if mapping.is_function() {
            Mapping::Fn(register(HostFn::Plain(mapping.unchecked_into())))
        } else if mapping.is_object() && !Array::is_array(&mapping) {
            let keys = super::convert::object_keys(&mapping)?;
            let mut fields = Vec::new();
            for k in keys.iter() {
                let k = k.as_string().unwrap_or_default();
                fields.push((k.clone(), map_source(&get(&mapping, &k), &format!("map(mapping).{k}"))?));
            }
            Mapping::Fields(fields)
        } else {
            return Err(type_error(
                "map(mapping)",
                &format!("expected a function or an object of mappings, got {}", js_kind(&mapping)),
            ));
        };
        let id = self.inner.def.next_map_id();
        self.push(Node::Map { id, mapping: m })
    }

    /// `.sleep(ms | fn)`: waits, passing the input on.
    pub fn sleep(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | StepCondition")] ms: JsValue,
    ) -> Result<Workflow, JsValue> {
        let ms = when(&ms, "sleep(ms)", false)?;
        self.push(Node::Sleep { id: format!("sleep_{}", crate::platform::random_uuid()), ms })
    }

    /// `.sleepUntil(date | fn)`: waits until then, passing the input on.
    #[wasm_bindgen(js_name = sleepUntil)]
    pub fn sleep_until(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Date | number | StepCondition")] date: JsValue,
    ) -> Result<Workflow, JsValue> {
        let at = when(&date, "sleepUntil(date)", true)?;
        self.push(Node::SleepUntil { id: format!("sleep_{}", crate::platform::random_uuid()), at })
    }

    /// Ends the building; the workflow can make runs.
    pub fn commit(&self) -> Workflow {
        self.inner.def.commit();
        Workflow { inner: self.inner.clone() }
    }
}
