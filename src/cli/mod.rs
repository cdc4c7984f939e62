//! The command line (clap): `run`, `resume`, `validate`, `plan`,
//! `explain`, `sessions ...`, `audit ...`, `webhooks failed|retry`,
//! `links create`, `doctor`,
//! `list-tools`, `list-supported`, `version`, and strands-cli's spellings
//! of them (`run --resume ID`, `-r`, `list-sessions`, `--verbose`, ...).
//!
//! Handlers parse flags into engine calls and map the result once to an
//! exit code (SPEC.md) and to either human text or, with `--json`, exactly
//! one JSON object on stdout (human text then goes to stderr). Everything
//! for stdout goes through [`outln!`]: a reader that stops early
//! (`strands audit export | head`) ends the command quietly with exit 0.

use clap::{Args, Parser, Subcommand};
use serde_json::json;
use std::io::IsTerminal;
use std::path::PathBuf;

use crate::engine::Engine;
use crate::error::{exit, Error, Result};
use crate::spec;
use crate::store::{self, Store};

/// `println!` for commands: a closed stdout is an error the command
/// returns (and [`main`] ends quietly on), not a panic.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
            .map_err(|e| $crate::error::Error::io($crate::cli::STDOUT, e))
    }};
}

mod answer;
mod ask;
mod asking;
mod audit;
mod backtest;
mod claude_code;
mod config_cmd;
mod doctor;
mod human;
mod info;
mod links;
mod mcp;
pub mod notifications;
mod people;
mod policy;
mod remote;
mod render;
mod report;
mod resume;
mod run;
mod sessions;
mod store_cmd;
mod teams;
mod tokens;
mod trust;
mod webhooks;

use audit::audit;
pub use links::LinksCommand;
pub use notifications::NotificationsCommand;
pub use people::PeopleCommand;
pub use policy::PolicyCommand;
pub use render::exit_code;
use run::{run, validate};
use sessions::{notify, sessions, sweep};
pub use store_cmd::StoreCommand;
pub use teams::TeamsCommand;
pub use webhooks::WebhooksCommand;

#[derive(Parser, Debug)]
#[command(
    name = "strands",
    version,
    about = "Run agent workflows that pause at durable human-in-the-loop gates"
)]
pub struct Cli {
    /// Session store: a directory (sled) or a postgres:// URL (PostgreSQL,
    /// shared by several servers); or STRANDS_STORE. Default:
    /// ~/.local/share/strands/store
    #[arg(long, global = true)]
    pub store: Option<PathBuf>,
    /// Who you are, for the audit of answers (default: the OS user).
    #[arg(long = "as", global = true, value_name = "NAME")]
    pub identity: Option<String>,
    /// Log what strands does to stderr (info level).
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
    /// Log in detail to stderr (debug level: templates, providers, tools).
    #[arg(long, global = true)]
    pub debug: bool,
    /// Debug logs plus every model request and response, redacted, on stderr.
    #[arg(long, global = true)]
    pub trace: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// The message of an error writing to stdout (a closed pipe ends quietly).
pub(crate) const STDOUT: &str = "cannot write to stdout";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a workflow spec; exits 19 when it pauses at a human gate.
    Run(RunArgs),
    /// Answer the open gate of a paused session and continue it.
    Resume(ResumeArgs),
    /// Approve or reject the open gates of several paused sessions at once, each answered and audited on its own.
    Answer(answer::AnswerArgs),
    /// Ask approvers for a yes, no workflow needed; waits, then exits 0 approved, 1 rejected, 4 timed out.
    Ask(ask::AskArgs),
    /// Check a spec without running it (exit 3 with file:line:column on errors).
    Validate {
        spec: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// What a spec would run: runtime, agents, pattern, gates, artifacts.
    Plan {
        spec: PathBuf,
        /// `md` (text) or `json`.
        #[arg(long, default_value = "md", value_parser = ["md", "json"])]
        format: String,
        /// Same as --format json.
        #[arg(long)]
        json: bool,
    },
    /// What in a spec this build cannot run, and what to do about it.
    Explain {
        spec: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// List, show, delete and clean up sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// strands-cli's name for `sessions list`.
    #[command(name = "list-sessions")]
    ListSessions(ListArgs),
    /// The effective settings: every variable, its value (secrets masked) and where it came from.
    Config(config_cmd::ConfigArgs),
    /// Check the set-up: the store, provider credentials, servers.
    Doctor {
        #[arg(long)]
        json: bool,
    },
    /// The built-in tools agents may call.
    #[command(name = "list-tools")]
    ListTools {
        #[arg(long)]
        json: bool,
    },
    /// What this build runs: patterns, providers, gates, tools.
    #[command(name = "list-supported")]
    ListSupported {
        #[arg(long)]
        json: bool,
    },
    /// The version of strands.
    Version {
        #[arg(long)]
        json: bool,
    },
    /// Run the approval service: the HTTP API, and Slack when SLACK_* is set.
    Serve(ServeArgs),
    /// Make, list and revoke API tokens (offline, or through the server).
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Approvers' grants (trust within limits): list and revoke them
    /// (offline, or through the server).
    #[command(subcommand)]
    Trust(TrustCommand),
    /// The people directory: one person, their identity on every channel, their groups (offline, or through the server).
    #[command(subcommand)]
    People(PeopleCommand),
    /// Check and export the tamper-evident audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Time to decision and outcomes per workflow, gate, approver, rule or door, from the audit (offline, or through the server).
    Report(report::ReportArgs),
    /// Webhook deliveries strands gave up on, and sending them again (offline, or through the server).
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// One-tap links to a paused run's gate, for a person to answer from a phone or a mail.
    #[command(subcommand)]
    Links(LinksCommand),
    /// Notifications (mail) strands gave up on (offline, or through the server).
    #[command(subcommand)]
    Notifications(NotificationsCommand),
    /// The Teams room: the conversations it knows (offline, or through the server), its app package.
    #[command(subcommand)]
    Teams(TeamsCommand),
    /// Check, back up and move the store (sled → PostgreSQL).
    #[command(subcommand)]
    Store(StoreCommand),
    /// Approval rules: which applies and who may answer (a dry run); a candidate service file replayed on the recorded requests.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// The MCP server over stdio, for agent hosts that start a command (a bridge to `strands serve`'s /mcp).
    Mcp,
    /// Claude Code's tool calls decided by people: `setup` prints (or writes) its hook and MCP configuration.
    #[command(subcommand, name = "claude-code")]
    ClaudeCode(claude_code::ClaudeCodeCommand),
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check the hash chain and every passkey signature of a stepped-up
    /// approval; names the first broken entry (exit 22).
    Verify {
        /// Check an export (`strands audit export` JSON lines) instead of
        /// the store: offline, by anyone, with the public keys the entries
        /// carry.
        #[arg(long, value_name = "FILE")]
        file: Option<std::path::PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print audit entries as JSON lines or CSV.
    Export {
        /// Only entries at or after this time (RFC 3339, or YYYY-MM-DD).
        #[arg(long)]
        since: Option<String>,
        /// Only entries of this session.
        #[arg(long)]
        session: Option<String>,
        #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "csv"])]
        format: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum TokensCommand {
    /// Make a token; its secret is printed once, on stdout.
    Create {
        /// The identity its requests carry (approver lists, the audit).
        name: String,
        #[arg(long, value_parser = ["approver", "operator", "admin"])]
        role: String,
        /// Expire after N days (default: never).
        #[arg(long, value_name = "N")]
        expires_days: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// Every token made (never a secret).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke the token named NAME.
    Revoke { name: String },
}

#[derive(Subcommand, Debug)]
pub enum TrustCommand {
    /// The live grants (with --all, expired and revoked ones too).
    List {
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Revoke grant ID: later calls ask again.
    Revoke { id: String },
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (default STRANDS_BIND or 127.0.0.1:3000).
    #[arg(long)]
    pub bind: Option<std::net::SocketAddr>,
    /// Directory of specs `/strands run NAME` may start (STRANDS_WORKFLOWS).
    #[arg(long)]
    pub workflows: Option<PathBuf>,
    /// Channel for approval messages (STRANDS_APPROVAL_CHANNEL).
    #[arg(long)]
    pub approval_channel: Option<String>,
    /// Directory of Block Kit template overrides (STRANDS_TEMPLATES).
    #[arg(long)]
    pub templates: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The workflow spec (YAML). Not needed with --resume.
    pub spec: Option<PathBuf>,
    /// Input variables, KEY=VALUE (repeatable).
    #[arg(long = "var", value_parser = spec::parse_var)]
    pub vars: Vec<(String, String)>,
    /// Answer gates in this terminal instead of exiting 19.
    #[arg(long, conflicts_with = "auto_approve")]
    pub interactive: bool,
    /// Approve every gate (for testing; says so on stderr).
    #[arg(long)]
    pub auto_approve: bool,
    /// Directory for outputs.artifacts.
    #[arg(long, default_value = "./artifacts")]
    pub out: PathBuf,
    /// Replace artifact files that are already there (else exit 12 naming the file).
    #[arg(long)]
    pub force: bool,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// strands-cli form: continue this session (a paused one takes
    /// --hitl-response, or asks in a terminal), instead of a SPEC.
    #[arg(long, short = 'r', value_name = "ID", conflicts_with_all = ["spec", "auto_resume", "no_save_session"])]
    pub resume: Option<String>,
    /// strands-cli form: the answer to the open gate (same as `resume --response`).
    #[arg(long, value_name = "TEXT", requires = "resume")]
    pub hitl_response: Option<String>,
    /// Continue the latest paused or interrupted session of this same spec
    /// (same SHA-256) instead of starting a new one, if there is one.
    #[arg(long, conflicts_with = "no_save_session")]
    pub auto_resume: bool,
    /// Do not keep the session once the run finishes (refused for specs
    /// with gates: a pause needs its session).
    #[arg(long)]
    pub no_save_session: bool,
    /// strands-cli's default, accepted: sessions are kept.
    #[arg(long, hide = true, conflicts_with = "no_save_session")]
    pub save_session: bool,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("decision").args(["approve", "reject", "modify", "response", "edit_args", "trust"])))]
pub struct ResumeArgs {
    /// Session id (or a unique prefix of at least 4 characters).
    pub id: String,
    /// Approve the open gate.
    #[arg(long)]
    pub approve: bool,
    /// Reject: the run ends `rejected` (exit 21).
    #[arg(long)]
    pub reject: bool,
    /// Why it was rejected (with --reject).
    #[arg(long, requires = "reject")]
    pub reason: Option<String>,
    /// Re-run the previous agent step with --feedback, then ask again.
    #[arg(long, requires = "feedback")]
    pub modify: bool,
    /// Feedback for --modify, visible to templates as `human_feedback`.
    #[arg(long, requires = "modify")]
    pub feedback: Option<String>,
    /// Free-text answer for a `hitl` gate (`approved` approves).
    #[arg(long)]
    pub response: Option<String>,
    /// Tool calls: approve with these arguments (JSON object; same tool).
    #[arg(long, value_name = "JSON")]
    pub edit_args: Option<String>,
    /// Tool calls: approve, and trust this tool for the rest of the run.
    /// A manual gate with `allow_trust`: approve, and trust the tool.
    #[arg(long)]
    pub trust: bool,
    /// With --trust on a tool call: allow the same calls for `run` (the
    /// rest of this run) or a duration (`1h`, `30m`, `2d`) — a grant,
    /// listed by `strands trust list`, revoked by `strands trust revoke`.
    #[arg(long = "for", value_name = "run|DURATION", requires = "trust")]
    pub trust_for: Option<String>,
    /// With --trust: only calls whose argument matches, `NAME=VALUE`
    /// (exact) or `NAME^=PREFIX` (text starting with); repeatable, all
    /// must hold. Without --for: for 1h.
    #[arg(
        long = "match",
        value_name = "NAME=VALUE|NAME^=PREFIX",
        requires = "trust"
    )]
    pub trust_match: Vec<String>,
    /// With --approve, a gate with a form: a field's value, NAME=VALUE
    /// (repeatable; typed by the form: `--value replicas=3 --value notify=true`).
    #[arg(long = "value", value_name = "NAME=VALUE", value_parser = spec::parse_var, requires = "approve")]
    pub values: Vec<(String, String)>,
    /// Tool calls: which waiting call this answers (see `sessions show`).
    #[arg(long = "call", value_name = "CALL_ID")]
    pub call: Option<String>,
    /// Which open gate this answers, when several are open (parallel
    /// branches): its handle `id#n` or its id (see `sessions show`).
    #[arg(long = "gate", value_name = "GATE")]
    pub gate: Option<String>,
    /// strands-cli's `run --resume ID --hitl-response`: answers the first
    /// open gate, as strands-cli (one gate at a time) would.
    #[arg(skip)]
    pub first_open: bool,
    /// Variable overrides that come with the answer.
    #[arg(long = "var", value_parser = spec::parse_var)]
    pub vars: Vec<(String, String)>,
    /// Answer this and later gates in this terminal.
    #[arg(long, conflicts_with = "auto_approve")]
    pub interactive: bool,
    /// Approve every later gate.
    #[arg(long)]
    pub auto_approve: bool,
    /// Replace artifact files that are already there when the run completes.
    #[arg(long)]
    pub force: bool,
    #[arg(long)]
    pub json: bool,
}

impl ResumeArgs {
    /// Continue session `id` with no decision from flags (strands-cli's
    /// `run --resume ID`, `--auto-resume`).
    pub(crate) fn of(id: &str) -> ResumeArgs {
        ResumeArgs {
            id: id.to_string(),
            approve: false,
            reject: false,
            reason: None,
            modify: false,
            feedback: None,
            response: None,
            edit_args: None,
            trust: false,
            trust_for: None,
            trust_match: Vec::new(),
            values: Vec::new(),
            call: None,
            gate: None,
            first_open: true,
            vars: Vec::new(),
            interactive: false,
            auto_approve: false,
            force: false,
            json: false,
        }
    }
}

/// `sessions list` (and strands-cli's `list-sessions`).
#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long, value_parser = ["running", "paused", "completed", "failed", "rejected", "cancelled"])]
    pub status: Option<String>,
    /// Only runs of this workflow (its `name`), read from the store's
    /// index by workflow.
    #[arg(long)]
    pub workflow: Option<String>,
    /// At most this many, newest first (a page; `--cursor` goes on). Without
    /// it: every session.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Where the previous page ended (its `next_cursor`).
    #[arg(long, requires = "limit")]
    pub cursor: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum SessionsCommand {
    /// Sessions, newest first.
    List(ListArgs),
    /// One session in full: gate, preview, history, usage.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a session (asks first in a terminal; --force does not ask).
    Delete {
        id: String,
        /// Delete without asking (needed when stdin is not a terminal).
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Cancel a run. A running one (here, in another `strands` process on
    /// the same store, or in `strands serve`) stops at its next checkpoint:
    /// a model call in flight is abandoned, a tool call running finishes,
    /// nothing after runs; it ends `cancelled`. A paused one has its open
    /// gate rejected (it ends `rejected`). A finished run is refused.
    Cancel {
        id: String,
        /// Why; recorded in the audit log and the run's events.
        #[arg(long)]
        reason: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Post a paused session's approval message to Slack again (the bot must
    /// not be running on this store; in Slack use `/strands notify ID`).
    Notify { id: String },
    /// Apply every gate timeout that has passed (for cron when the bot is not
    /// running): record each fallback and continue the run to its next stop.
    /// `fallback_action: escalate` needs the bot; here it rejects.
    Sweep {
        #[arg(long)]
        json: bool,
    },
    /// Delete finished sessions older than N days (paused ones are kept).
    Cleanup {
        #[arg(long)]
        max_age_days: u32,
        /// strands-cli's "do not ask": cleanup never asks (it keeps paused
        /// and running sessions).
        #[arg(long, short = 'f')]
        force: bool,
        #[arg(long)]
        json: bool,
    },
}

/// Parses the process arguments, runs, returns the exit code.
pub fn main() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    exit::OK
                }
                _ => exit::USAGE,
            };
        }
    };
    let json = wants_json(&cli.command);
    // The one read of the environment (and `strands.toml`) for settings.
    let env = match crate::config::env::Env::from_process() {
        Ok(env) => env,
        Err(e) => return fail(&e, json),
    };
    crate::http::install_crypto();
    // Dropped last: the spans of this command reach the collector before
    // the process exits.
    let _traces = init_tracing(log_level(&cli), &env);
    // The bot serves many requests at once; the CLI runs one session.
    let runtime = if matches!(cli.command, Command::Serve(_)) {
        // A drive parses specs (deeply nested YAML) inside deep async
        // frames: 8 MiB stacks instead of tokio's 2 MiB, as the CLI's
        // main thread has.
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_stack_size(8 << 20)
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => return fail(&Error::io("cannot start the async runtime", e), json),
    };
    match runtime.block_on(dispatch(cli, env)) {
        Ok(code) => code,
        Err(e) => fail(&e, json),
    }
}

fn fail(e: &Error, json: bool) -> u8 {
    // The reader went away (`| head`): what it wanted, it has.
    if let Error::Io { context, source } = e {
        if context == STDOUT && source.kind() == std::io::ErrorKind::BrokenPipe {
            return exit::OK;
        }
    }
    let code = e.exit_code();
    if json {
        let mut obj = json!({ "status": "error", "exit_code": code, "error": { "code": code, "message": e.to_string() } });
        if let Error::Spec(diags) = e {
            obj["errors"] = json!(diags);
        }
        println!("{obj}");
    }
    eprintln!("error: {e}");
    if code == exit::UNSUPPORTED {
        eprintln!("{}", info::UNSUPPORTED_HINT);
    }
    code
}

fn wants_json(c: &Command) -> bool {
    match c {
        Command::Run(a) => a.json,
        Command::Resume(a) => a.json,
        Command::Answer(a) => a.json,
        Command::Ask(a) => a.json,
        Command::Validate { json, .. }
        | Command::Explain { json, .. }
        | Command::Doctor { json }
        | Command::ListTools { json }
        | Command::ListSupported { json }
        | Command::Version { json } => *json,
        Command::Plan { format, json, .. } => *json || format == "json",
        Command::Config(a) => a.json,
        Command::Sessions(SessionsCommand::List(a)) | Command::ListSessions(a) => a.json,
        Command::Sessions(SessionsCommand::Show { json, .. })
        | Command::Sessions(SessionsCommand::Cleanup { json, .. })
        | Command::Sessions(SessionsCommand::Sweep { json })
        | Command::Sessions(SessionsCommand::Cancel { json, .. }) => *json,
        Command::Sessions(SessionsCommand::Delete { .. })
        | Command::Sessions(SessionsCommand::Notify { .. })
        | Command::Serve(_) => false,
        Command::Audit(AuditCommand::Verify { json, .. }) => *json,
        Command::Tokens(TokensCommand::Create { json, .. })
        | Command::Tokens(TokensCommand::List { json }) => *json,
        Command::Tokens(TokensCommand::Revoke { .. }) => false,
        Command::Trust(TrustCommand::List { json, .. }) => *json,
        Command::Trust(TrustCommand::Revoke { .. }) => false,
        Command::Audit(AuditCommand::Export { .. }) => false,
        Command::Report(a) => a.json,
        Command::Webhooks(cmd) => cmd.json(),
        Command::Links(cmd) => cmd.json(),
        Command::Notifications(cmd) => cmd.json(),
        Command::Teams(cmd) => cmd.json(),
        Command::People(cmd) => cmd.json(),
        Command::Store(cmd) => cmd.json(),
        Command::Policy(cmd) => cmd.json(),
        Command::Mcp | Command::ClaudeCode(_) => false,
    }
}

/// The log filter `--verbose`, `--debug` and `--trace` ask for (`None`:
/// `STRANDS_LOG`, else warnings only). strands' own modules log at the
/// level asked; libraries stay at warnings.
fn log_level(cli: &Cli) -> Option<&'static str> {
    if cli.trace {
        Some("warn,strands=debug,strands::model=trace")
    } else if cli.debug {
        Some("warn,strands=debug")
    } else if cli.verbose {
        Some("warn,strands=info")
    } else {
        None
    }
}

/// Logs to stderr at `level`, and traces over OTLP when the `OTEL_*`
/// variables ask for them (`crate::traces`; each output has its own
/// filter). The returned exporter sends what is left when dropped.
fn init_tracing(level: Option<&str>, env: &crate::config::env::Env) -> crate::traces::Exporter {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = match level {
        Some(l) => tracing_subscriber::EnvFilter::new(l),
        None => env
            .get("STRANDS_LOG")
            .and_then(|v| tracing_subscriber::EnvFilter::try_new(v).ok())
            .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn")),
    };
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = if env.get("STRANDS_LOG_FORMAT").is_some_and(|v| v == "json") {
        fmt.json().with_filter(filter).boxed()
    } else {
        fmt.with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed()
    };
    // OpenTelemetry's own variables (the SDK reads the rest of them).
    let otel = |k: &str| std::env::var(k).ok().filter(|_| k.starts_with("OTEL_"));
    let (layer, exporter) = crate::traces::layer(crate::traces::wanted(otel));
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(layer)
        .try_init();
    exporter
}

fn identity(cli_as: &Option<String>) -> String {
    cli_as
        .clone()
        .or_else(|| whoami::fallible::username().ok())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "unknown".into())
}

struct Ctx {
    store_path: PathBuf,
    explicit_store: bool,
    who: String,
    /// Read once from the environment, passed to everything below.
    settings: std::sync::Arc<crate::config::Settings>,
    /// The variables the settings were read from, with their sources
    /// (`strands config`, and what only the CLI reads).
    env: crate::config::env::Env,
    /// The server this invocation goes through, if any.
    remote: Option<remote::Remote>,
    /// The process's clock, made once here and handed to everything below.
    clock: crate::clock::SharedClock,
}

impl Ctx {
    async fn open(&self) -> Result<Store> {
        Ok(Store::connect_with(&self.store_path, &self.settings.store)
            .await?
            .with_clock(std::sync::Arc::clone(&self.clock)))
    }
    /// Now, by the process's clock.
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
    /// Whether the store is a PostgreSQL database (shared, no lock).
    fn store_is_url(&self) -> bool {
        self.store_path
            .to_str()
            .is_some_and(store::postgres::is_url)
    }
    /// The store for messages: a path, or a database URL without its
    /// credentials.
    fn store_shown(&self) -> String {
        match self.store_path.to_str() {
            Some(url) if store::postgres::is_url(url) => store::postgres::shown(url),
            _ => self.store_path.display().to_string(),
        }
    }
    /// An engine on `store` with this process's settings.
    fn engine<'s>(&self, store: &'s Store) -> Engine<'s> {
        Engine::new(store)
            .with_settings(std::sync::Arc::clone(&self.settings))
            .with_lease(store::lease::owner("cli"), self.settings.lease)
            .with_clock(std::sync::Arc::clone(&self.clock))
    }
    /// A hub on `store`, with this process's settings and clock: the way
    /// in the CLI's answers take, as every door's do.
    fn hub_on(&self, store: Store) -> crate::hub::Hub {
        crate::hub::Hub::new(store, std::sync::Arc::clone(&self.settings), None)
            .with_clock(std::sync::Arc::clone(&self.clock))
    }

    /// Where this invocation's answers go: the server it talks to, or a
    /// hub on this store (opened here, with this process's settings and
    /// clock).
    async fn answering(&self) -> Result<resume::Answering<'_>> {
        let to = match &self.remote {
            Some(remote) => resume::To::Server(remote),
            None => resume::To::Here(self.hub_on(self.open().await?)),
        };
        Ok(resume::Answering {
            to,
            who: self.who.clone(),
            words: self.words(),
        })
    }

    /// What the words this invocation prints need of it: the command that
    /// resumes here (naming the store when it is not the default), now,
    /// and the server it goes through.
    fn words(&self) -> render::Words {
        let prog = program();
        let resume = if self.explicit_store {
            format!("{prog} --store {} resume", shell_quote(&self.store_shown()))
        } else {
            format!("{prog} resume")
        };
        render::Words {
            resume,
            clock: std::sync::Arc::clone(&self.clock),
            server: self.remote.as_ref().map(|r| r.base().to_string()),
        }
    }
}

/// How this binary was invoked (`./target/release/strands` when run from a
/// checkout), so printed commands work when pasted as they are.
fn program() -> String {
    match std::env::args().next() {
        Some(p) if p.contains(std::path::MAIN_SEPARATOR) => shell_quote(&p),
        _ => "strands".to_string(),
    }
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-~:".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Whether a command may go through a server (`STRANDS_SERVER`, or the
/// one holding the store).
fn through_server(c: &Command) -> bool {
    matches!(
        c,
        Command::Run(_)
            | Command::Resume(_)
            | Command::Answer(_)
            | Command::Ask(_)
            | Command::ListSessions(_)
            | Command::Sessions(SessionsCommand::List { .. })
            | Command::Sessions(SessionsCommand::Show { .. })
            | Command::Sessions(SessionsCommand::Cancel { .. })
            | Command::Audit(AuditCommand::Export { .. })
            | Command::Report(_)
            | Command::Tokens(_)
            | Command::Trust(_)
            | Command::People(_)
            | Command::Notifications(_)
            | Command::Mcp
    ) || matches!(c, Command::Teams(t) if t.remote())
        || matches!(c, Command::Policy(p) if p.remote())
        || matches!(c, Command::Webhooks(_) | Command::Links(_))
}

async fn dispatch(cli: Cli, mut env: crate::config::env::Env) -> Result<u8> {
    // `--store`, else STRANDS_STORE (the environment's or the file's).
    let store = match &cli.store {
        Some(s) => {
            env.set_flag("STRANDS_STORE", "--store", s.display().to_string());
            Some(s.clone())
        }
        None => env
            .get("STRANDS_STORE")
            .filter(|s| !s.trim().is_empty())
            .map(PathBuf::from),
    };
    let store_path = store.clone().unwrap_or_else(store::default_path);
    // Before the settings are built: it shows them even when they would
    // stop every other command.
    let cli = match cli.command {
        Command::Config(args) => return config_cmd::config(&env, &store_path, args),
        command => Cli { command, ..cli },
    };
    let mut ctx = Ctx {
        explicit_store: store.is_some(),
        // Absolute, so printed resume commands work from any directory
        // (a database URL stays as it is).
        store_path: match store_path.to_str() {
            Some(url) if store::postgres::is_url(url) => store_path,
            _ => std::path::absolute(&store_path).unwrap_or(store_path),
        },
        who: identity(&cli.identity),
        // STRANDS_DEFAULT_TIMEOUT_MINUTES is the bot's (README); runs started
        // from the command line keep their specs' timeouts.
        settings: std::sync::Arc::new(crate::config::Settings {
            default_timeout: None,
            ..crate::config::Settings::load(env.lookup())?
        }),
        env,
        remote: None,
        clock: crate::clock::system(),
    };
    if through_server(&cli.command) {
        ctx.remote = match remote::Remote::from_settings(&ctx.env, cli.identity.as_deref())? {
            Some(r) => Some(r),
            // A shared database needs no server in between.
            None if ctx.store_is_url() => None,
            None => remote::Remote::discover(&ctx.store_path, &ctx.who).await,
        };
    }
    match cli.command {
        Command::Validate { spec, json } => validate(&ctx, &spec, json),
        Command::Plan { spec, format, json } => info::plan(&ctx, &spec, json || format == "json"),
        Command::Explain { spec, json } => info::explain(&ctx, &spec, json),
        Command::ListSupported { json } => info::list_supported(json),
        Command::ListTools { json } => info::list_tools(json),
        Command::Version { json } => info::version(json),
        Command::Doctor { json } => doctor::doctor(&ctx, json).await,
        Command::Config(args) => config_cmd::config(&ctx.env, &ctx.store_path, args),
        Command::ListSessions(args) => sessions(&ctx, SessionsCommand::List(args)).await,
        Command::Run(args) => run(&ctx, args).await,
        Command::Resume(args) => resume::resume(&ctx.answering().await?, args).await,
        Command::Answer(args) => answer::answer(&ctx.answering().await?, args).await,
        Command::Ask(args) => ask::ask(&ctx, args).await,
        Command::Sessions(SessionsCommand::Notify { id }) => notify(&ctx, &id).await,
        Command::Sessions(SessionsCommand::Sweep { json }) => sweep(&ctx, json).await,
        Command::Sessions(cmd) => sessions(&ctx, cmd).await,
        Command::Audit(cmd) => audit(&ctx, cmd).await,
        Command::Report(args) => report::report(&ctx, args).await,
        Command::Tokens(cmd) => tokens::tokens(&ctx, cmd).await,
        Command::Trust(cmd) => trust::trust(&ctx, cmd).await,
        Command::Webhooks(cmd) => webhooks::webhooks(&ctx, cmd).await,
        Command::Links(cmd) => links::links(&ctx, cmd).await,
        Command::Notifications(cmd) => notifications::notifications(&ctx, cmd).await,
        Command::Teams(cmd) => teams::teams(&ctx, cmd).await,
        Command::People(cmd) => people::people(&ctx, cmd).await,
        Command::Store(cmd) => store_cmd::store(&ctx, cmd).await,
        Command::Policy(cmd) => policy::policy(&ctx, cmd).await,
        Command::Mcp => mcp::mcp(&ctx).await,
        Command::ClaudeCode(cmd) => claude_code::claude_code(&ctx, cmd),
        Command::Serve(args) => {
            let config = crate::serve::Config::from_lookup(
                ctx.env.lookup(),
                ctx.store_path.clone(),
                crate::serve::config::Overrides {
                    bind: args.bind,
                    workflows: args.workflows,
                    approval_channel: args.approval_channel,
                    templates: args.templates,
                },
            )?;
            crate::serve::run(config, std::sync::Arc::clone(&ctx.clock)).await?;
            Ok(exit::OK)
        }
    }
}
