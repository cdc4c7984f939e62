//! The command line (clap): `run`, `resume`, `validate`, `sessions ...`.
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
use crate::gate::{Answer, Decision};
use crate::session::{GateEventKind, Session, Status};
use crate::spec;
use crate::store::{self, Store};

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
    /// Run the Slack approval bot (configuration from SLACK_* / STRANDS_* variables).
    Serve(ServeArgs),
    /// Check and export the tamper-evident audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
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
        Command::Audit(AuditCommand::Export { .. }) => false,
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
}

impl Ctx {
    fn open(&self) -> Result<Store> {
        Store::open(&self.store_path)
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

async fn dispatch(cli: Cli) -> Result<u8> {
    let store_path = cli.store.clone().unwrap_or_else(store::default_path);
    let ctx = Ctx {
        explicit_store: cli.store.is_some(),
        // Absolute, so printed resume commands work from any directory.
        store_path: std::path::absolute(&store_path).unwrap_or(store_path),
        who: identity(&cli.identity),
    };
    match cli.command {
        Command::Validate { spec, json } => validate(&spec, json),
        Command::Run(args) => run(&ctx, args).await,
        Command::Resume(args) => resume(&ctx, args).await,
        Command::Sessions(SessionsCommand::Notify { id }) => notify(&ctx, &id).await,
        Command::Sessions(SessionsCommand::Sweep { json }) => sweep(&ctx, json).await,
        Command::Sessions(cmd) => sessions(&ctx, cmd),
        Command::Audit(cmd) => audit(&ctx, cmd),
        Command::Serve(args) => {
            let config = crate::slack::config::Config::from_env(
                ctx.store_path.clone(),
                crate::slack::config::Overrides {
                    bind: args.bind,
                    workflows: args.workflows,
                    approval_channel: args.approval_channel,
                    templates: args.templates,
                },
            )?;
            crate::slack::serve(config).await?;
            Ok(exit::OK)
        }
    }
}

/// `sessions sweep`: every paused session whose gate timed out gets its
/// fallback (recorded exactly once, as a resume would) and runs on to its
/// next stop with nobody to ask.
async fn sweep(ctx: &Ctx, json: bool) -> Result<u8> {
    let store = ctx.open()?;
    let now = Utc::now();
    let mut swept = Vec::new();
    let mut errors = Vec::new();
    let mut code = exit::OK;
    for s in store.sessions_with_status(Status::Paused)? {
        // The focused gate's timeout, else a parked one's (the engine
        // applies the parked gate's fallback the same way).
        let due = s
            .gate
            .iter()
            .chain(s.parked.iter())
            .find(|g| g.timed_out(now))
            .cloned();
        let Some(g) = due else { continue };
        if s.pending_answer.is_some() {
            continue;
        }
        let handle = g.handle();
        let mut engine = Engine::new(&store);
        let mut channel = cli_channel(false, false, &ctx.who);
        match engine.resume(&s.id, None, &mut channel).await {
            Ok(after) => {
                let answer = after.history.iter().rev().find_map(|e| match &e.what {
                    GateEventKind::Answered { answer, .. }
                        if format!("{}#{}", e.gate, e.instance) == handle =>
                    {
                        Some(answer.clone())
                    }
                    _ => None,
                });
                let reason = answer.as_ref().and_then(|a| match &a.decision {
                    Decision::Reject { reason } | Decision::Abort { reason } => reason.clone(),
                    Decision::Respond { text } => Some(format!("answered `{text}`")),
                    _ => None,
                });
                let note = (g.fallback == spec::Fallback::Escalate).then(|| {
                    "escalation needs the bot (`strands serve`); without it `escalate` rejects"
                        .to_string()
                });
                swept.push(json!({
                    "session": after.id,
                    "workflow": after.workflow,
                    "gate": handle,
                    "timeout_at": g.timeout_at,
                    "fallback": g.fallback.name(),
                    "decision": answer.as_ref().map(|a| a.decision.verb()),
                    "by": answer.as_ref().map(|a| a.by.clone()),
                    "reason": reason,
                    "status": after.status,
                    "note": note,
                }));
            }
            Err(e) => {
                if code == exit::OK {
                    code = e.exit_code();
                }
                errors.push(json!({ "session": s.id, "gate": handle, "error": e.to_string() }));
            }
        }
    }
    if json {
        println!(
            "{}",
            json!({ "swept": swept, "count": swept.len(), "errors": errors })
        );
    } else {
        if swept.is_empty() && errors.is_empty() {
            eprintln!("no gate timeout is due in {}", store.path().display());
        }
        for v in &swept {
            let str_of = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            let reason = match str_of("reason") {
                r if r.is_empty() => String::new(),
                r => format!(" ({r})"),
            };
            println!(
                "{}: gate `{}` timed out → {}{reason}; the run is now {}",
                str_of("session"),
                str_of("gate"),
                str_of("decision"),
                str_of("status"),
            );
            if let Some(note) = v["note"].as_str() {
                println!("  note: {note}");
            }
        }
        for e in &errors {
            eprintln!(
                "error: {}: {}",
                e["session"].as_str().unwrap_or_default(),
                e["error"].as_str().unwrap_or_default()
            );
        }
    }
    Ok(code)
}

async fn notify(ctx: &Ctx, id: &str) -> Result<u8> {
    let config =
        crate::slack::config::Config::from_env(ctx.store_path.clone(), Default::default())?;
    let store = ctx.open()?;
    let id = store.resolve(id)?;
    let app = crate::slack::app::App::new(config, store)?;
    app.notify(&id).await?;
    eprintln!("posted the approval message for session {id}");
    Ok(exit::OK)
}

fn validate(path: &std::path::Path, json: bool) -> Result<u8> {
    let spec = spec::load(path, &spec::Limits::from_env())?;
    for w in &spec.warnings {
        eprintln!("warning: {w}");
    }
    if json {
        println!(
            "{}",
            json!({ "valid": true, "name": spec.name, "pattern": spec.pattern.name(), "warnings": spec.warnings })
        );
    } else {
        println!(
            "✓ {} is valid ({} pattern, workflow `{}`)",
            path.display(),
            spec.pattern.name(),
            spec.name
        );
    }
    Ok(exit::OK)
}

/// The channel that answers gates for one CLI invocation.
enum CliChannel {
    Detached(Detached),
    Auto(AutoApprove),
    Terminal(Terminal<std::io::BufReader<std::io::Stdin>, std::io::Stderr>),
}

impl HumanChannel for CliChannel {
    async fn ask(&mut self, session: &Session) -> Result<crate::channel::Reply> {
        match self {
            CliChannel::Detached(c) => c.ask(session).await,
            CliChannel::Auto(c) => c.ask(session).await,
            CliChannel::Terminal(c) => c.ask(session).await,
        }
    }
}

fn cli_channel(interactive: bool, auto_approve: bool, who: &str) -> WithProgress<CliChannel> {
    let inner = if auto_approve {
        CliChannel::Auto(AutoApprove {
            by: who.to_string(),
        })
    } else if interactive {
        let stdin = std::io::BufReader::new(std::io::stdin());
        CliChannel::Terminal(Terminal::new(stdin, std::io::stderr(), who.to_string()))
    } else {
        CliChannel::Detached(Detached)
    };
    WithProgress { inner }
}

async fn run(ctx: &Ctx, args: RunArgs) -> Result<u8> {
    if let (Some(id), Some(text)) = (&args.resume, &args.hitl_response) {
        let answer = answer_now(
            &ctx.who,
            Decision::Respond { text: text.clone() },
            &args.vars,
        )?;
        let resume = ResumeArgs {
            id: id.clone(),
            approve: false,
            reject: false,
            reason: None,
            modify: false,
            feedback: None,
            response: None,
            edit_args: None,
            trust: false,
            call: None,
            gate: None,
            first_open: true,
            vars: Vec::new(),
            interactive: args.interactive,
            auto_approve: args.auto_approve,
            json: args.json,
        };
        return continue_session(ctx, &resume, Some(answer)).await;
    }
    let Some(path) = &args.spec else {
        return Err(Error::Usage(
            "strands run needs a SPEC (or --resume ID --hitl-response TEXT)".into(),
        ));
    };
    let spec = spec::load(path, &spec::Limits::from_env())?;
    for w in &spec.warnings {
        eprintln!("warning: {w}");
    }
    Engine::preflight(&spec)?;
    let variables = spec.resolve_variables(&args.vars)?;
    let store = ctx.open()?;
    let mut engine = Engine::new(&store);
    // Stored absolute, so a resume from another directory writes to the same place.
    let out_dir = std::path::absolute(&args.out)
        .map_err(|e| Error::io(format!("cannot resolve --out {}", args.out.display()), e))?;
    let start = Start {
        variables,
        started_by: ctx.who.clone(),
        out_dir,
        origin: None,
    };
    let mut channel = cli_channel(args.interactive, args.auto_approve, &ctx.who);
    let session = engine.start(&spec, start, &mut channel).await?;
    Ok(report(ctx, &session, args.json))
}

fn answer_now(who: &str, decision: Decision, vars: &[(String, String)]) -> Result<Answer> {
    let mut map = Map::new();
    for (k, v) in vars {
        map.insert(k.clone(), Value::String(v.clone()));
    }
    Ok(Answer {
        decision,
        by: who.to_string(),
        at: Utc::now(),
        via: "cli".into(),
        vars: map,
        call: None,
    })
}

async fn resume(ctx: &Ctx, args: ResumeArgs) -> Result<u8> {
    let decision = if args.approve {
        Some(Decision::Approve)
    } else if args.reject {
        Some(Decision::Reject {
            reason: args.reason.clone(),
        })
    } else if args.modify {
        Some(Decision::Modify {
            feedback: args.feedback.clone().unwrap_or_default(),
        })
    } else if args.trust {
        Some(Decision::Trust)
    } else if let Some(raw) = &args.edit_args {
        let arguments: serde_json::Value = serde_json::from_str(raw)
            .map_err(|e| Error::Usage(format!("--edit-args is not valid JSON: {e}")))?;
        Some(Decision::Edit { arguments })
    } else {
        args.response.clone().map(|text| Decision::Respond { text })
    };
    let answer =
        match decision {
            Some(d) => {
                let mut a = answer_now(&ctx.who, d, &args.vars)?;
                a.call = args.call.clone();
                Some(a)
            }
            None if !args.vars.is_empty() => return Err(Error::Usage(
                "--var on resume comes with a decision (--approve, --reject, --modify, --response)"
                    .into(),
            )),
            None => None,
        };
    continue_session(ctx, &args, answer).await
}

async fn continue_session(ctx: &Ctx, args: &ResumeArgs, answer: Option<Answer>) -> Result<u8> {
    let store = ctx.open()?;
    let mut engine = Engine::new(&store);
    let id = store.resolve(&args.id)?;
    if answer.is_none() && !args.interactive && !args.auto_approve {
        // Without a decision, resume only continues an interrupted run or
        // applies a timeout that has passed.
        let s = store.get(&id)?;
        if let (Status::Paused, Some(g)) = (s.status, &s.gate) {
            if !s.open_gates().any(|g| g.timed_out(Utc::now())) {
                return Err(Error::Usage(format!(
                    "session {id} is paused at gate `{}`: answer with --approve, --reject [--reason R], --modify --feedback F or --response TEXT (or --interactive)",
                    g.id
                )));
            }
        }
    }
    // --var values are typed by the spec's input declarations.
    let answer = match answer {
        Some(mut a) if !a.vars.is_empty() => {
            let session = store.get(&id)?;
            let spec = Engine::spec_of(&session)?;
            let raw: Vec<(String, String)> = a
                .vars
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            a.vars = spec.type_overrides(&raw)?;
            Some(a)
        }
        other => other,
    };
    let mut channel = cli_channel(args.interactive, args.auto_approve, &ctx.who);
    let first = match (&args.gate, args.first_open) {
        (None, true) => store.get(&id)?.gate.map(|g| g.handle()),
        _ => None,
    };
    let pick = args.gate.as_deref().or(first.as_deref());
    let session = engine.resume_gate(&id, pick, answer, &mut channel).await?;
    Ok(report(ctx, &session, args.json))
}

/// The exit code a session's status maps to.
pub fn exit_code(session: &Session) -> u8 {
    match session.status {
        Status::Completed => exit::OK,
        Status::Paused => exit::PAUSED,
        Status::Rejected => exit::REJECTED,
        Status::Failed => session
            .failure
            .as_ref()
            .map(|f| f.code)
            .unwrap_or(exit::RUNTIME),
        Status::Running => exit::RUNTIME,
    }
}

/// Prints the outcome of run/resume and returns its exit code.
fn report(ctx: &Ctx, s: &Session, json: bool) -> u8 {
    let code = exit_code(s);
    if json {
        println!("{}", session_json(ctx, s, false));
        if s.status == Status::Paused {
            eprintln!("{}", paused_text(ctx, s));
        }
        return code;
    }
    match s.status {
        Status::Paused => println!("{}", paused_text(ctx, s)),
        Status::Completed => {
            println!("{}", s.output.as_deref().unwrap_or_default());
            for a in &s.artifacts {
                eprintln!("  wrote {a}");
            }
            eprintln!("session {} completed", s.id);
        }
        Status::Rejected => eprintln!("session {} rejected", s.id),
        Status::Failed => eprintln!(
            "session {} failed: {}",
            s.id,
            s.failure
                .as_ref()
                .map(|f| f.message.as_str())
                .unwrap_or("unknown error")
        ),
        Status::Running => eprintln!(
            "session {} stopped while running; `strands resume {}` continues it",
            s.id, s.id
        ),
    }
    code
}

fn paused_text(ctx: &Ctx, s: &Session) -> String {
    let Some(g) = &s.gate else {
        return format!("session {} is paused", s.id);
    };
    if s.parked.is_empty() {
        return gate_text(ctx, s, g, None);
    }
    // Several gates are open at once: each is answered on its own.
    let all: Vec<String> = s
        .open_gates()
        .map(|g| gate_text(ctx, s, g, Some(&g.handle())))
        .collect();
    format!(
        "{} gates are open in session {}; answer each with --gate:\n\n{}",
        all.len(),
        s.id,
        all.join("\n\n")
    )
}

/// How one open gate is shown, with the commands that answer it (`pick`:
/// the `--gate` to name when several are open).
fn gate_text(ctx: &Ctx, s: &Session, g: &crate::gate::OpenGate, pick: Option<&str>) -> String {
    let resume = |rest: &str| match pick {
        Some(h) => ctx.resume_cmd(&s.id, &format!("--gate {h} {rest}")),
        None => ctx.resume_cmd(&s.id, rest),
    };
    let mut out = String::new();
    out.push_str(&format!(
        "⏸  Gate `{}` ({}) in workflow `{}`\n",
        g.id, g.position, s.workflow
    ));
    out.push_str(&format!("   {}\n", g.prompt));
    if g.show_preview && !g.context.is_empty() {
        let (preview, cut) = g.preview();
        out.push_str("\n   [Preview]\n");
        for line in preview.lines() {
            out.push_str(&format!("   {line}\n"));
        }
        if cut > 0 {
            out.push_str(&format!(
                "   … {} more characters not shown ({} of {}); `strands sessions show {}` shows all\n",
                cut,
                g.preview_length,
                g.preview_length + cut,
                s.id
            ));
        }
    }
    if let Some(t) = g.timeout_at {
        out.push_str(&format!(
            "\n   Timeout: {} (then: {})\n",
            t.to_rfc3339(),
            timeout_effect(g)
        ));
    }
    if !g.approvers.is_empty() {
        out.push_str(&format!("\n   Approvers: {}\n", g.approvers.join(", ")));
    }
    if g.approvals_required > 1 {
        let who: Vec<&str> = g.approvals.iter().map(|a| a.by.as_str()).collect();
        out.push_str(&format!(
            "   {} of {} approvals{}\n",
            g.approvals.len(),
            g.approvals_required,
            if who.is_empty() {
                String::new()
            } else {
                format!(": {}", who.join(", "))
            }
        ));
    }
    out.push_str(&format!("\n   Session: {}\n", s.id));
    if g.kind == spec::GateKind::ToolCall {
        for c in s.agent_turn.iter().flat_map(|t| t.waiting()) {
            let trust = if c.request.as_ref().is_some_and(|r| r.trustable) {
                " | --trust"
            } else {
                ""
            };
            out.push_str(&format!(
                "   Answer:  {}\n",
                ctx.resume_cmd(&s.id, &format!("--call {} --approve | --reject --reason \"...\" | --edit-args '{{...}}'{trust}", c.call.id))
            ));
        }
        return out.trim_end().to_string();
    }
    out.push_str(&format!("   Resume:  {}\n", resume("--approve")));
    out.push_str(&format!(
        "            {}\n",
        resume("--reject --reason \"...\"")
    ));
    if g.kind == spec::GateKind::Hitl {
        out.push_str(&format!("            {}\n", resume("--response \"...\"")));
    }
    out.push_str(&format!(
        "            {}",
        resume("--modify --feedback \"...\"")
    ));
    out
}

fn timeout_effect(g: &crate::gate::OpenGate) -> String {
    match crate::gate::timeout_answer(g, Utc::now()).decision {
        Decision::Approve => "approve".into(),
        Decision::Respond { text } => format!("answer `{text}`"),
        Decision::Reject { .. } => "reject".into(),
        other => other.verb().into(),
    }
}

/// The calls of a tool-call gate: what each would do and where it stands.
fn tool_calls_json(s: &Session) -> Value {
    let Some(turn) = &s.agent_turn else {
        return Value::Array(Vec::new());
    };
    Value::Array(
        turn.calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.call.id,
                    "tool": c.call.name,
                    "arguments": c.call.arguments,
                    "digest": c.digest,
                    "state": c.state,
                    "request": c.request,
                })
            })
            .collect(),
    )
}

/// The one JSON object scripts read.
fn session_json(ctx: &Ctx, s: &Session, full: bool) -> Value {
    let gate = s.gate.as_ref().map(|g| gate_json(s, g, full));
    let open_gates: Vec<Value> = s.open_gates().map(|g| gate_json(s, g, full)).collect();
    session_json_with(ctx, s, full, gate, open_gates)
}

fn gate_json(s: &Session, g: &crate::gate::OpenGate, full: bool) -> Value {
    {
        let (preview, cut) = g.preview();
        json!({
            "id": g.id,
            "name": g.id,
            "handle": g.handle(),
            "instance": g.instance,
            "kind": g.kind,
            "position": g.position.to_string(),
            "prompt": g.prompt,
            "preview": if g.show_preview { Value::String(preview) } else { Value::Null },
            "preview_cut_chars": cut,
            "context": if full { Value::String(g.context.clone()) } else { Value::Null },
            "default": g.default,
            "opened_at": g.opened_at,
            "timeout_at": g.timeout_at,
            "calls": tool_calls_json(s),
            "approvers": g.approvers,
            "approvals_required": g.approvals_required,
            "approvals": g.approvals,
        })
    }
}

fn session_json_with(
    ctx: &Ctx,
    s: &Session,
    full: bool,
    gate: Option<Value>,
    open_gates: Vec<Value>,
) -> Value {
    let gates: Vec<Value> = s
        .history
        .iter()
        .map(|e| match &e.what {
            GateEventKind::Answered { answer, waited_ms } => json!({
                "gate": e.gate, "instance": e.instance, "event": "answered",
                "decision": answer.decision, "by": answer.by, "at": answer.at, "via": answer.via,
                "asked_at": e.asked_at, "waited_ms": waited_ms, "call": answer.call,
            }),
            GateEventKind::Skipped { condition } => json!({
                "gate": e.gate, "event": "skipped", "condition": condition,
            }),
        })
        .collect();
    let total = s.total_usage();
    let mut obj = json!({
        "session_id": s.id,
        "workflow": s.workflow,
        "pattern": s.pattern,
        "status": s.status,
        "exit_code": exit_code(s),
        "created_at": s.created_at,
        "updated_at": s.updated_at,
        "started_by": s.started_by,
        "gate": gate,
        "open_gates": open_gates,
        "output": s.output,
        "artifacts": s.artifacts,
        "gates": gates,
        "gates_asked": s.gates_opened,
        "human_wait_ms": s.human_wait_ms(),
        "usage": { "total": total, "by_agent": s.usage },
        "error": s.failure,
        "notification": s.notification,
    });
    if s.status == Status::Paused {
        obj["resume"] = json!({
            "approve": ctx.resume_cmd(&s.id, "--approve"),
            "reject": ctx.resume_cmd(&s.id, "--reject --reason REASON"),
            "modify": ctx.resume_cmd(&s.id, "--modify --feedback FEEDBACK"),
            "respond": ctx.resume_cmd(&s.id, "--response TEXT"),
        });
    }
    if full {
        obj["variables"] = Value::Object(s.variables.clone());
        obj["state"] = serde_json::to_value(&s.state).unwrap_or(Value::Null);
        obj["spec_path"] = json!(s.spec_path);
        obj["spec_hash"] = json!(s.spec_hash);
        obj["human_feedback"] = json!(s.human_feedback);
        obj["pending_answer"] = json!(s.pending_answer);
    }
    obj
}

fn sessions(ctx: &Ctx, cmd: SessionsCommand) -> Result<u8> {
    let store = ctx.open()?;
    match cmd {
        SessionsCommand::List { status, json } => {
            let status = status.as_deref().and_then(Status::parse);
            let list = store.list(status)?;
            if json {
                println!("{}", json!({ "sessions": list, "count": list.len() }));
            } else if list.is_empty() {
                eprintln!("no sessions in {}", store.path().display());
            } else {
                println!(
                    "{:<36}  {:<9}  {:<20}  {:<24}  GATE",
                    "ID", "STATUS", "UPDATED", "WORKFLOW"
                );
                for s in &list {
                    println!(
                        "{:<36}  {:<9}  {:<20}  {:<24}  {}",
                        s.id,
                        s.status,
                        s.updated_at.format("%Y-%m-%d %H:%M:%S"),
                        s.workflow,
                        s.gate.as_deref().unwrap_or("-")
                    );
                }
            }
            Ok(exit::OK)
        }
        SessionsCommand::Show { id, json } => {
            let s = store.get(&id)?;
            if json {
                println!("{}", session_json(ctx, &s, true));
            } else {
                print_show(ctx, &s);
            }
            Ok(exit::OK)
        }
        SessionsCommand::Notify { .. } | SessionsCommand::Sweep { .. } => Err(Error::Internal(
            "notify and sweep are handled before".into(),
        )),
        SessionsCommand::Delete { id } => {
            let id = store.resolve(&id)?;
            store.delete(&id)?;
            eprintln!("deleted session {id}");
            Ok(exit::OK)
        }
        SessionsCommand::Cleanup { max_age_days, json } => {
            let cutoff = Utc::now() - chrono::Duration::days(i64::from(max_age_days));
            let removed = store.cleanup(cutoff)?;
            if json {
                println!("{}", json!({ "deleted": removed, "count": removed.len() }));
            } else {
                eprintln!(
                    "deleted {} finished session(s) older than {max_age_days} day(s)",
                    removed.len()
                );
            }
            Ok(exit::OK)
        }
    }
}

fn print_show(ctx: &Ctx, s: &Session) {
    println!("Session:   {}", s.id);
    println!("Workflow:  {} ({} pattern)", s.workflow, s.pattern);
    println!("Status:    {}", s.status);
    println!(
        "Spec:      {} (sha256 {})",
        s.spec_path,
        &s.spec_hash[..s.spec_hash.len().min(12)]
    );
    println!(
        "Started:   {} by {}",
        s.created_at.to_rfc3339(),
        s.started_by
    );
    println!("Updated:   {}", s.updated_at.to_rfc3339());
    println!(
        "Steps:     {} finished",
        crate::engine::finished_steps(&s.state)
    );
    let u = s.total_usage();
    println!(
        "Tokens:    {} in, {} out, {} calls",
        u.input_tokens, u.output_tokens, u.calls
    );
    if let Some(f) = &s.failure {
        println!("Failure:   {} (exit {})", f.message, f.code);
    }
    if let Some(n) = &s.notification {
        match (&n.ts, &n.error) {
            (_, Some(err)) => println!(
                "Slack:     approval message NOT posted for {} ({err}); `strands sessions notify {}` posts it again",
                n.gate, s.id
            ),
            (Some(ts), None) => println!("Slack:     approval message for {} in {} (ts {ts})", n.gate, n.channel),
            (None, None) => {}
        }
    }
    if let Some(g) = &s.gate {
        println!("\nOpen gate: {} ({}, {:?})", g.id, g.position, g.kind);
        println!("Prompt:    {}", g.prompt);
        if let Some(t) = g.timeout_at {
            let state = if g.timed_out(Utc::now()) {
                "passed; the fallback applies on the next resume"
            } else {
                "pending"
            };
            println!("Timeout:   {} ({state})", t.to_rfc3339());
        }
        if !g.context.is_empty() {
            println!("Context:\n{}", g.context);
        }
        if let Some(turn) = &s.agent_turn {
            for c in turn.waiting() {
                println!(
                    "Answer:    {} --call {} (--approve | --reject --reason R | --edit-args JSON{})",
                    ctx.resume_cmd(&s.id, ""),
                    c.call.id,
                    if c.request.as_ref().is_some_and(|r| r.trustable) { " | --trust" } else { "" }
                );
            }
        }
        if s.parked.is_empty() {
            println!("\nResume:    {}", ctx.resume_cmd(&s.id, "--approve"));
        } else {
            println!(
                "\nResume:    {}",
                ctx.resume_cmd(&s.id, &format!("--gate {} --approve", g.handle()))
            );
        }
    }
    for g in &s.parked {
        println!("\nAlso open: {} ({}, {:?})", g.id, g.position, g.kind);
        println!("Prompt:    {}", g.prompt);
        if !g.context.is_empty() {
            println!("Context:\n{}", g.context);
        }
        println!(
            "Resume:    {}",
            ctx.resume_cmd(&s.id, &format!("--gate {} --approve", g.handle()))
        );
    }
    if !s.history.is_empty() {
        println!("\nHistory:");
        for e in &s.history {
            match &e.what {
                GateEventKind::Answered { answer, waited_ms } => {
                    let detail = match &answer.decision {
                        Decision::Reject { reason: Some(r) } => format!(": {r}"),
                        Decision::Modify { feedback } => format!(": {feedback}"),
                        Decision::Respond { text } => format!(": {text}"),
                        _ => String::new(),
                    };
                    println!(
                        "  {} {}#{} {} by {} via {} after {:.1}s{detail}",
                        answer.at.format("%Y-%m-%d %H:%M:%S"),
                        e.gate,
                        e.instance,
                        answer.decision.verb(),
                        answer.by,
                        answer.via,
                        *waited_ms as f64 / 1000.0
                    );
                }
                GateEventKind::Skipped { condition } => {
                    println!("  {} skipped (condition `{condition}` was false)", e.gate)
                }
            }
        }
    }
    if let Some(o) = &s.output {
        println!("\nOutput:\n{o}");
    }
}

fn audit(ctx: &Ctx, cmd: AuditCommand) -> Result<u8> {
    use crate::audit::{AuditEntry, Verdict};
    let store = ctx.open()?;
    match cmd {
        AuditCommand::Verify { json } => {
            let verdict = crate::audit::verify(store.audit_entries(), store.audit_head()?);
            let (code, text, obj) = match &verdict {
                Verdict::Intact { entries } => (
                    exit::OK,
                    format!("audit chain intact: {entries} entries"),
                    json!({ "intact": true, "entries": entries }),
                ),
                Verdict::Broken { seq, why } => (
                    exit::AUDIT_BROKEN,
                    format!("audit chain broken at entry #{seq}: {why}"),
                    json!({ "intact": false, "broken_at": seq, "why": why }),
                ),
            };
            if json {
                println!("{obj}");
            }
            if code == exit::OK {
                eprintln!("{text}");
            } else {
                eprintln!("error: {text}");
            }
            Ok(code)
        }
        AuditCommand::Export {
            since,
            session,
            format,
        } => {
            let since = match since.as_deref() {
                None => None,
                Some(s) => Some(parse_since(s)?),
            };
            let mut out = std::io::stdout().lock();
            let mut csv = (format == "csv").then(|| csv::Writer::from_writer(Vec::new()));
            if let Some(w) = csv.as_mut() {
                w.write_record([
                    "seq",
                    "at",
                    "session",
                    "workflow",
                    "kind",
                    "gate",
                    "call",
                    "who",
                    "via",
                    "decision",
                    "response_ms",
                    "shown_digest",
                    "preview",
                    "detail",
                    "prev",
                    "hash",
                ])
                .map_err(|e| Error::Internal(format!("csv: {e}")))?;
            }
            for (seq, bytes) in store.audit_entries() {
                let entry: AuditEntry = serde_json::from_slice(&bytes).map_err(|e| {
                    Error::Store(format!(
                        "audit entry #{seq} is unreadable ({e}); run `strands audit verify`"
                    ))
                })?;
                let e = &entry.event;
                if since.is_some_and(|t| e.at.is_none_or(|at| at < t)) {
                    continue;
                }
                if session
                    .as_deref()
                    .is_some_and(|s| !e.session.starts_with(s))
                {
                    continue;
                }
                match csv.as_mut() {
                    Some(w) => {
                        let kind = e
                            .kind
                            .map(|k| {
                                serde_json::to_value(k)
                                    .ok()
                                    .and_then(|v| v.as_str().map(str::to_string))
                                    .unwrap_or_default()
                            })
                            .unwrap_or_default();
                        w.write_record([
                            entry.seq.to_string(),
                            e.at.map(|t| t.to_rfc3339()).unwrap_or_default(),
                            e.session.clone(),
                            e.workflow.clone(),
                            kind,
                            e.gate.clone().unwrap_or_default(),
                            e.call.clone().unwrap_or_default(),
                            e.who.clone().unwrap_or_default(),
                            e.via.clone().unwrap_or_default(),
                            e.decision
                                .as_ref()
                                .map(|d| d.to_string())
                                .unwrap_or_default(),
                            e.response_ms.map(|m| m.to_string()).unwrap_or_default(),
                            e.shown_digest.clone().unwrap_or_default(),
                            e.preview.clone().unwrap_or_default(),
                            e.detail.clone().unwrap_or_default(),
                            entry.prev.clone(),
                            entry.hash.clone(),
                        ])
                        .map_err(|e| Error::Internal(format!("csv: {e}")))?;
                    }
                    None => {
                        use std::io::Write;
                        let line = serde_json::to_string(&entry)
                            .map_err(|e| Error::Internal(e.to_string()))?;
                        writeln!(out, "{line}")
                            .map_err(|e| Error::io("cannot write to stdout", e))?;
                    }
                }
            }
            if let Some(w) = csv {
                use std::io::Write;
                let bytes = w
                    .into_inner()
                    .map_err(|e| Error::Internal(format!("csv: {e}")))?;
                out.write_all(&bytes)
                    .map_err(|e| Error::io("cannot write to stdout", e))?;
            }
            Ok(exit::OK)
        }
    }
}

/// `--since`: RFC 3339, or a date meaning its midnight UTC.
fn parse_since(s: &str) -> Result<chrono::DateTime<Utc>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--since `{s}` is not RFC 3339 (2026-11-21T09:00:00Z) or a date (2026-11-21)"
            ))
        })
}
