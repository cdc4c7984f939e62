//! One error type for the whole program, mapped once to the exit codes that
//! strands-cli users script against (SPEC.md) and, later, to HTTP statuses.
//!
//! Outcomes that are not failures (paused at a gate, rejected by a human) are
//! not errors: they are session statuses, mapped to exit codes in `cli`.

use std::path::PathBuf;

/// Exit codes, exactly as strands-cli documents them, plus [`exit::REJECTED`].
pub mod exit {
    pub const OK: u8 = 0;
    pub const USAGE: u8 = 2;
    pub const SCHEMA: u8 = 3;
    pub const RUNTIME: u8 = 10;
    pub const IO: u8 = 12;
    pub const SESSION: u8 = 17;
    pub const UNSUPPORTED: u8 = 18;
    pub const PAUSED: u8 = 19;
    pub const BUDGET: u8 = 20;
    /// Ours: a human rejected the run at a gate.
    pub const REJECTED: u8 = 21;
    /// Ours: `strands audit verify` found the chain broken.
    pub const AUDIT_BROKEN: u8 = 22;
    pub const UNKNOWN: u8 = 70;
}

/// A problem in a spec file, located at `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
    pub hint: Option<String>,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// Every way a command can fail.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad command-line use: a malformed `--var`, a decision that does not fit the gate.
    #[error("{0}")]
    Usage(String),
    /// The spec is invalid; each diagnostic names file:line:column.
    #[error("{}", render_diagnostics(.0))]
    Spec(Vec<Diagnostic>),
    /// The run failed while executing (provider errors, template errors at run time).
    #[error("{0}")]
    Runtime(String),
    /// Reading or writing a file or the store failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The store could not be used (in use by another process, corrupt record).
    #[error("{0}")]
    Store(String),
    /// The session does not exist or is not in a state that allows the request.
    #[error("{0}")]
    Session(String),
    /// A feature, pattern or provider this build does not ship.
    #[error("{0}")]
    Unsupported(String),
    /// `runtime.budgets` exceeded.
    #[error("budget exceeded: {0}")]
    Budget(String),
    /// A bug: something that should not happen.
    #[error("internal error: {0}")]
    Internal(String),
}

fn render_diagnostics(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for (i, d) in diags.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&d.to_string());
    }
    out
}

impl Error {
    /// The process exit code for this error (SPEC.md).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::Spec(_) => exit::SCHEMA,
            Error::Runtime(_) => exit::RUNTIME,
            Error::Io { .. } | Error::Store(_) => exit::IO,
            Error::Session(_) => exit::SESSION,
            Error::Unsupported(_) => exit::UNSUPPORTED,
            Error::Budget(_) => exit::BUDGET,
            Error::Internal(_) => exit::UNKNOWN,
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A single located spec problem.
    pub fn spec_at(
        file: &std::path::Path,
        line: u32,
        column: u32,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Self {
        Error::Spec(vec![Diagnostic {
            file: file.display().to_string(),
            line,
            column,
            message: message.into(),
            hint,
        }])
    }
}

impl From<sled::Error> for Error {
    fn from(e: sled::Error) -> Self {
        Error::Store(format!("session store: {e}"))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where the store lives, for messages that must name it.
pub fn describe_path(p: &std::path::Path) -> String {
    PathBuf::from(p).display().to_string()
}
