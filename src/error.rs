//! One error type for the whole program, mapped once to the exit codes that
//! strands-cli users script against (SPEC.md) and, later, to HTTP statuses.
//!
//! Outcomes that are not failures (paused at a gate, rejected by a human) are
//! not errors: they are session statuses, mapped to exit codes in `cli`.
//!
//! It also holds [`chain`] and [`transport`], which turn a library's error
//! and its causes into the one line our messages quote, so that every HTTP
//! client renders a failure the same way and none leaks a URL.

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
    /// Ours: an operator cancelled the running run (`sessions cancel`).
    pub const CANCELLED: u8 = 23;
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
    /// An artifact file is already there and the run may not overwrite it
    /// (strands-cli's `--force`). `session`: the run that kept its work,
    /// and `resume` the command that finishes it (`strands resume ID --force`).
    #[error("{}", artifact_exists(.path, .session.as_deref(), .resume.as_deref()))]
    ArtifactExists {
        path: PathBuf,
        session: Option<String>,
        resume: Option<String>,
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
    /// The caller may not do this (someone changing another person's
    /// delegations); nothing changed. HTTP 403; exit 2 like a usage error.
    #[error("{0}")]
    Forbidden(String),
    /// A bug: something that should not happen.
    #[error("internal error: {0}")]
    Internal(String),

    /// A request that only a run still going can take (a cancel) came
    /// for one that stopped for good; nothing changed.
    #[error("session {id} is {status}; only a running or paused run can be cancelled")]
    Finished {
        id: String,
        /// The status it ended with (`completed`, `failed`, `rejected`).
        status: String,
    },

    /// The drive stopped at a checkpoint: an operator cancelled the run
    /// (the engine ends it `cancelled`; callers see the session).
    #[error("session {0} was cancelled")]
    Cancelled(String),
}

fn artifact_exists(path: &std::path::Path, session: Option<&str>, resume: Option<&str>) -> String {
    let mut text = format!(
        "artifact file {} already exists; it is not overwritten without --force",
        path.display()
    );
    match session {
        Some(id) => {
            let resume = resume
                .map(str::to_string)
                .unwrap_or_else(|| format!("strands resume {id} --force"));
            text.push_str(&format!(
                " (session {id} kept its work and is not finished: `{resume}` writes the artifacts)"
            ))
        }
        None => text.push_str(
            " (nothing was run: add --force, choose another --out, or move the file away)",
        ),
    }
    text
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
            Error::Usage(_) | Error::Forbidden(_) => exit::USAGE,
            Error::Spec(_) => exit::SCHEMA,
            Error::Runtime(_) => exit::RUNTIME,
            Error::Io { .. } | Error::ArtifactExists { .. } | Error::Store(_) => exit::IO,
            Error::Session(_) | Error::Finished { .. } => exit::SESSION,
            Error::Cancelled(_) => exit::CANCELLED,
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

/// `err` and each of its causes on one line, joined by `": "`. A cause whose
/// text its parent already quotes is skipped, so wrappers that repeat their
/// source (many do) do not read twice.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A reqwest failure as [`chain`] renders it, without the URL reqwest would
/// embed: a URL may carry credentials in its query string. Callers that want
/// to name the endpoint print a redacted URL themselves.
pub fn transport(err: reqwest::Error) -> String {
    chain(&err.without_url())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with an optional cause, to build chains of any shape.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static))
        }
    }

    #[test]
    fn chain_joins_causes_and_skips_repeats() {
        let err = Layer(
            "request failed",
            Some(Box::new(Layer(
                "connect error: connection refused",
                Some(Box::new(Layer("connection refused", None))),
            ))),
        );
        assert_eq!(
            chain(&err),
            "request failed: connect error: connection refused"
        );
        assert_eq!(chain(&Layer("alone", None)), "alone");
    }

    #[tokio::test]
    async fn transport_errors_never_show_the_url() {
        // Bind then drop a listener to get a port nothing listens on.
        let port = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            l.local_addr().expect("addr").port()
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let err = reqwest::Client::new()
            .get(format!("http://127.0.0.1:{port}/x?api_key=SECRET"))
            .send()
            .await
            .expect_err("nothing listens there");
        let text = transport(err);
        assert!(!text.contains("SECRET"), "{text}");
        assert!(!text.contains("127.0.0.1"), "{text}");
        assert!(text.contains("error sending request"), "{text}");
        // The root cause is there too, not only reqwest's summary.
        assert!(text.contains("Connection refused"), "{text}");
    }
}
