//! The command line (clap): `run`, `resume`, `validate`, `sessions ...`,
//! `audit ...`, `webhooks failed`.
//!
//! Handlers parse flags into engine calls and map the result once to an
//! exit code (SPEC.md) and to either human text or, with `--json`, exactly
//! one JSON object on stdout (human text then goes to stderr).

use chrono::Utc;
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Map, Value};
use std::io::IsTerminal;
use std::path::PathBuf;

use crate::channel::{terminal::Terminal, AutoApprove, Detached, HumanChannel, WithProgress};
use crate::engine::{Engine, Start};
use crate::error::{exit, Error, Result};
use crate::model::{Answer, Decision};
use crate::model::{Session, Status};
use crate::spec;
use crate::store::{self, Store};

mod audit;
mod remote;
mod render;
mod run;
mod sessions;
mod tokens;
mod webhooks;

use audit::audit;
pub use render::exit_code;
use render::report;
use run::{resume, run, validate};
use sessions::{notify, sessions, sweep};
pub use webhooks::WebhooksCommand;

#[derive(Parser, Debug)]
#[command(
    name = "strands",
    version,
    about = "Run agent workflows that pause at durable human-in-the-loop gates"
)]
pub struct Cli {
    /// Session store directory (sled). Default: ~/.local/share/strands/store
    #[arg(long, global = true, env = "STRANDS_STORE")]
    pub store: Option<PathBuf>,
    /// Who you are, for the audit of answers (default: the OS user).
    #[arg(long = "as", global = true, value_name = "NAME")]
    pub identity: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a workflow spec; exits 19 when it pauses at a human gate.
    Run(RunArgs),
    /// Answer the open gate of a paused session and continue it.
    Resume(ResumeArgs),
    /// Check a spec without running it (exit 3 with file:line:column on errors).
    Validate {
        spec: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// List, show, delete and clean up sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Run the approval service: the HTTP API, and Slack when SLACK_* is set.
    Serve(ServeArgs),
    /// Make, list and revoke API tokens (offline, or through the server).
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Check and export the tamper-evident audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Webhook deliveries strands gave up on.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check the hash chain; names the first broken entry (exit 22).
    Verify {
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
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// strands-cli form: resume this session (with --hitl-response).
    #[arg(long, value_name = "ID", requires = "hitl_response")]
    pub resume: Option<String>,
    /// strands-cli form: the answer to the open gate (same as `resume --response`).
    #[arg(long, value_name = "TEXT", requires = "resume")]
    pub hitl_response: Option<String>,
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
    #[arg(long)]
    pub trust: bool,
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
    /// Answer later gates in this terminal.
    #[arg(long, conflicts_with = "auto_approve")]
    pub interactive: bool,
    /// Approve every later gate.
    #[arg(long)]
    pub auto_approve: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum SessionsCommand {
    /// Sessions, newest first.
    List {
        #[arg(long, value_parser = ["running", "paused", "completed", "failed", "rejected"])]
        status: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One session in full: gate, preview, history, usage.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a session.
    Delete { id: String },
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
    init_tracing();
    crate::provider::install_crypto();
    let json = wants_json(&cli.command);
    // The bot serves many requests at once; the CLI runs one session.
    let runtime = if matches!(cli.command, Command::Serve(_)) {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
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
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(e) => fail(&e, json),
    }
}

fn fail(e: &Error, json: bool) -> u8 {
    let code = e.exit_code();
    if json {
        let mut obj = json!({ "status": "error", "exit_code": code, "error": { "code": code, "message": e.to_string() } });
        if let Error::Spec(diags) = e {
            obj["errors"] = json!(diags);
        }
        println!("{obj}");
    }
    eprintln!("error: {e}");
    code
}

fn wants_json(c: &Command) -> bool {
    match c {
        Command::Run(a) => a.json,
        Command::Resume(a) => a.json,
        Command::Validate { json, .. } => *json,
        Command::Sessions(SessionsCommand::List { json, .. })
        | Command::Sessions(SessionsCommand::Show { json, .. })
        | Command::Sessions(SessionsCommand::Cleanup { json, .. })
        | Command::Sessions(SessionsCommand::Sweep { json }) => *json,
        Command::Sessions(SessionsCommand::Delete { .. })
        | Command::Sessions(SessionsCommand::Notify { .. })
        | Command::Serve(_) => false,
        Command::Audit(AuditCommand::Verify { json }) => *json,
        Command::Tokens(TokensCommand::Create { json, .. })
        | Command::Tokens(TokensCommand::List { json }) => *json,
        Command::Tokens(TokensCommand::Revoke { .. }) => false,
        Command::Audit(AuditCommand::Export { .. }) => false,
        Command::Webhooks(cmd) => cmd.json(),
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STRANDS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if std::env::var("STRANDS_LOG_FORMAT").is_ok_and(|v| v == "json") {
        builder.json().try_init()
    } else {
        builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init()
    };
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
    /// The server this invocation goes through, if any.
    remote: Option<remote::Remote>,
}

impl Ctx {
    fn open(&self) -> Result<Store> {
        Store::open(&self.store_path)
    }
    /// An engine on `store` with this process's settings.
    fn engine<'s>(&self, store: &'s Store) -> Engine<'s> {
        Engine::new(store).with_settings(std::sync::Arc::clone(&self.settings))
    }
    /// The exact command to resume, naming the store when it is not the default.
    fn resume_cmd(&self, id: &str, flags: &str) -> String {
        let prog = program();
        if self.explicit_store {
            format!(
                "{prog} --store {} resume {id} {flags}",
                shell_quote(&self.store_path.display().to_string())
            )
        } else {
            format!("{prog} resume {id} {flags}")
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
            | Command::Sessions(SessionsCommand::List { .. })
            | Command::Sessions(SessionsCommand::Show { .. })
            | Command::Audit(AuditCommand::Export { .. })
            | Command::Tokens(_)
    )
}

async fn dispatch(cli: Cli) -> Result<u8> {
    let store_path = cli.store.clone().unwrap_or_else(store::default_path);
    let mut ctx = Ctx {
        explicit_store: cli.store.is_some(),
        // Absolute, so printed resume commands work from any directory.
        store_path: std::path::absolute(&store_path).unwrap_or(store_path),
        who: identity(&cli.identity),
        // STRANDS_DEFAULT_TIMEOUT_MINUTES is the bot's (README); runs started
        // from the command line keep their specs' timeouts.
        settings: std::sync::Arc::new(crate::config::Settings {
            default_timeout: None,
            ..crate::config::Settings::from_env()
        }),
        remote: None,
    };
    if through_server(&cli.command) {
        ctx.remote = match remote::Remote::from_env(cli.identity.as_deref())? {
            Some(r) => Some(r),
            None => remote::Remote::discover(&ctx.store_path, &ctx.who).await,
        };
    }
    match cli.command {
        Command::Validate { spec, json } => validate(&ctx, &spec, json),
        Command::Run(args) => run(&ctx, args).await,
        Command::Resume(args) => resume(&ctx, args).await,
        Command::Sessions(SessionsCommand::Notify { id }) => notify(&ctx, &id).await,
        Command::Sessions(SessionsCommand::Sweep { json }) => sweep(&ctx, json).await,
        Command::Sessions(cmd) => sessions(&ctx, cmd).await,
        Command::Audit(cmd) => audit(&ctx, cmd).await,
        Command::Tokens(cmd) => tokens::tokens(&ctx, cmd).await,
        Command::Webhooks(cmd) => webhooks::webhooks(&ctx, cmd).await,
        Command::Serve(args) => {
            let config = crate::serve::Config::from_env(
                ctx.store_path.clone(),
                crate::serve::config::Overrides {
                    bind: args.bind,
                    workflows: args.workflows,
                    approval_channel: args.approval_channel,
                    templates: args.templates,
                },
            )?;
            crate::serve::run(config).await?;
            Ok(exit::OK)
        }
    }
}
