//! The one error type of the core. Each variant maps to one JavaScript error `name` (SPEC §11);
//! the bindings turn it into a real `Error` with that name, `message`, and `status`/`body` when set.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum AgentError {
    /// Bad configuration or options: JavaScript `TypeError`. `field` is the path the user wrote,
    /// e.g. `options.modelSettings.temperature`.
    InvalidArgument { field: String, message: String },
    /// The model API failed: HTTP status, network failure, or a broken stream.
    ApiCall {
        message: String,
        status: Option<u16>,
        body: Option<String>,
        /// Whether trying again may help (network errors, 408, 409, 429, 5xx).
        retryable: bool,
        /// Seconds (or milliseconds, see `retry_after_ms`) the server asked us to wait.
        retry_after_ms: Option<u64>,
    },
    /// The run was aborted by the caller.
    Abort { reason: Option<String> },
    Tool { message: String },
    /// Memory storage failed; `kind` is what JavaScript reads as `error.code`.
    Storage { message: String, kind: StorageKind },
    Validation { message: String },
    /// Structured output failed (SPEC §12.4): `code` says how, `value` is the model's raw text.
    StructuredOutput { code: &'static str, message: String, value: String },
    /// A processor threw (SPEC §13.5); the message is `<processor id>: <what it threw>`.
    Processor { message: String },
    /// A decision or resume that cannot apply (SPEC §19.3): `code` is 'not-found', 'not-waiting'
    /// or 'in-progress'.
    Resume { code: &'static str, message: String },
}

/// What kind of storage failure a `StorageError` is (`error.code` in JavaScript), so callers can
/// react without reading the message: free space on `quota`, reload on `version`, close other
/// tabs on `blocked`. IndexedDB's DOMException names map onto these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageKind {
    /// Out of quota: the storage is full (`QuotaExceededError`).
    Quota,
    /// The database has a newer schema than this code knows (`VersionError`).
    Version,
    /// Another connection blocks the upgrade (an `open` that is blocked or times out).
    Blocked,
    /// The connection closed or the transaction was finished (`InvalidStateError`).
    InvalidState,
    /// An object store or index is missing (`NotFoundError`).
    NotFound,
    /// A value could not be stored or a key was bad (`DataError`, `DataCloneError`).
    Data,
    /// The transaction was aborted and nothing of it was written (`AbortError`).
    Aborted,
    /// Anything else, including a user's storage object that threw.
    #[default]
    Unknown,
}

impl StorageKind {
    /// The kind for an IndexedDB DOMException `name`.
    pub fn from_dom_name(name: &str) -> Self {
        match name {
            "QuotaExceededError" => StorageKind::Quota,
            "VersionError" => StorageKind::Version,
            "InvalidStateError" | "TransactionInactiveError" => StorageKind::InvalidState,
            "NotFoundError" => StorageKind::NotFound,
            "DataError" | "DataCloneError" => StorageKind::Data,
            "AbortError" => StorageKind::Aborted,
            _ => StorageKind::Unknown,
        }
    }

    /// `error.code` in JavaScript.
    pub fn code(self) -> &'static str {
        match self {
            StorageKind::Quota => "quota",
            StorageKind::Version => "version",
            StorageKind::Blocked => "blocked",
            StorageKind::InvalidState => "invalid-state",
            StorageKind::NotFound => "not-found",
            StorageKind::Data => "data",
            StorageKind::Aborted => "aborted",
            StorageKind::Unknown => "unknown",
        }
    }

    /// The kind whose `code()` is `code` (`Unknown` for anything else).
    pub fn from_code(code: &str) -> Self {
        [
            StorageKind::Quota,
            StorageKind::Version,
            StorageKind::Blocked,
            StorageKind::InvalidState,
            StorageKind::NotFound,
            StorageKind::Data,
            StorageKind::Aborted,
        ]
        .into_iter()
        .find(|k| k.code() == code)
        .unwrap_or_default()
    }
}

impl AgentError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        AgentError::InvalidArgument { field: field.into(), message: message.into() }
    }

    /// A storage failure of no particular kind (e.g. a user's storage object that threw).
    pub fn storage(message: impl Into<String>) -> Self {
        AgentError::Storage { message: message.into(), kind: StorageKind::Unknown }
    }

    /// A storage failure of `kind`.
    pub fn storage_kind(kind: StorageKind, message: impl Into<String>) -> Self {
        AgentError::Storage { message: message.into(), kind }
    }

    /// An API error that is not tied to an HTTP status (network failure, bad stream data).
    pub fn api(message: impl Into<String>, retryable: bool) -> Self {
        AgentError::ApiCall { message: message.into(), status: None, body: None, retryable, retry_after_ms: None }
    }

    /// The JavaScript `name` of this error.
    pub fn name(&self) -> &'static str {
        match self {
            AgentError::InvalidArgument { .. } => "TypeError",
            AgentError::ApiCall { .. } => "APICallError",
            AgentError::Abort { .. } => "AbortError",
            AgentError::Tool { .. } => "ToolError",
            AgentError::Storage { .. } => "StorageError",
            AgentError::Validation { .. } => "ValidationError",
            AgentError::StructuredOutput { .. } => "StructuredOutputError",
            AgentError::Processor { .. } => "ProcessorError",
            AgentError::Resume { .. } => "ResumeError",
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            AgentError::ApiCall { status, .. } => *status,
            _ => None,
        }
    }

    /// `error.code` of a `StorageError`.
    pub fn storage_code(&self) -> Option<&'static str> {
        match self {
            AgentError::Storage { kind, .. } => Some(kind.code()),
            _ => None,
        }
    }

    pub fn body(&self) -> Option<&str> {
        match self {
            AgentError::ApiCall { body, .. } => body.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::InvalidArgument { field, message } => write!(f, "{field}: {message}"),
            AgentError::ApiCall { message, .. } => f.write_str(message),
            AgentError::Abort { reason: Some(r) } => write!(f, "The run was aborted: {r}"),
            AgentError::Abort { reason: None } => f.write_str("The run was aborted"),
            AgentError::Tool { message }
            | AgentError::Storage { message, .. }
            | AgentError::Validation { message }
            | AgentError::StructuredOutput { message, .. }
            | AgentError::Processor { message }
            | AgentError::Resume { message, .. } => f.write_str(message),
        }
    }
}

/// Why a step, a model call or a wait stopped early: the run was aborted, or something failed.
pub enum Stop {
    Aborted,
    Failed(AgentError),
}

impl std::error::Error for AgentError {}

/// The first 200 characters of a text, for error messages that quote what came back.
pub fn head(text: &str) -> &str {
    match text.char_indices().nth(200) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// What a panic says on the console: the message and where it happened. The wasm build aborts
/// on panic (a trap reading only `unreachable`), so this line is all a user gets to report.
pub fn panic_report(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str)).unwrap_or("(no message)");
    match info.location() {
        Some(at) => format!("wasm-agent panicked at {}:{}:{}: {message}", at.file(), at.line(), at.column()),
        None => format!("wasm-agent panicked: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::sync::{Arc, Mutex};

    use super::{panic_report, StorageKind};

    #[test]
    fn dom_exception_names_map_to_distinct_storage_codes() {
        let cases = [
            ("QuotaExceededError", "quota"),
            ("VersionError", "version"),
            ("InvalidStateError", "invalid-state"),
            ("NotFoundError", "not-found"),
            ("DataError", "data"),
            ("DataCloneError", "data"),
            ("AbortError", "aborted"),
            ("UnknownError", "unknown"),
            ("", "unknown"),
        ];
        for (name, code) in cases {
            let kind = StorageKind::from_dom_name(name);
            assert_eq!(kind.code(), code, "{name}");
            assert_eq!(StorageKind::from_code(code), kind, "{code} reads back");
        }
        assert_eq!(StorageKind::from_code("blocked"), StorageKind::Blocked);
    }

    thread_local! {
        /// Set while this thread's panics are recorded instead of printed.
        static RECORD: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    #[test]
    fn a_panic_report_names_the_message_and_the_file_and_line() {
        // The hook is process-wide: panics of other threads (other tests) go to the previous hook.
        let previous = Arc::new(Mutex::new(Some(std::panic::take_hook())));
        let prev = previous.clone();
        std::panic::set_hook(Box::new(move |info| {
            let mine = RECORD.with(|r| r.borrow().is_some());
            if mine {
                RECORD.with(|r| *r.borrow_mut() = Some(panic_report(info)));
            } else if let Some(p) = prev.lock().unwrap().as_ref() {
                p(info);
            }
        }));
        RECORD.with(|r| *r.borrow_mut() = Some(String::new()));
        let line = line!() + 1;
        let caught = std::panic::catch_unwind(|| panic!("index {} out of range", 7));
        let report = RECORD.with(|r| r.borrow_mut().take()).unwrap();
        let p = previous.lock().unwrap().take().unwrap();
        std::panic::set_hook(p);
        assert!(caught.is_err());
        assert_eq!(report, format!("wasm-agent panicked at src/core/error.rs:{line}:50: index 7 out of range"));
    }
}
