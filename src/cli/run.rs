//! `strands validate`, `run` and `resume`: specs in, answers in through
//! the engine's intake, the run driven to its next stop.

use serde_json::{json, Map, Value};
use std::io::IsTerminal;

use super::{report, Ctx, ResumeArgs, RunArgs};
use crate::channel::terminal::Terminal;
use crate::channel::{AutoApprove, Detached, HumanChannel, WithProgress};
use crate::engine::Asker;
use crate::engine::{Engine, Start};
use crate::error::{exit, Error, Result};
use crate::model::Refusal;
use crate::model::{Answer, Decision, Session, Status};
use crate::spec;
use crate::store::Store;

pub(super) fn validate(ctx: &Ctx, path: &std::path::Path, json: bool) -> Result<u8> {
    let spec = spec::load(path, &ctx.settings.checking_limits())?;
    let warnings = warnings(&spec, &ctx.settings);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if json {
        outln!(
            "{}",
            json!({ "valid": true, "name": spec.name, "pattern": spec.pattern.name(), "warnings": warnings })
        )?;
    } else {
        outln!(
            "✓ {} is valid ({} pattern, workflow `{}`)",
            path.display(),
            spec.pattern.name(),
            spec.name
        )?;
    }
    Ok(exit::OK)
}

/// The spec's warnings, and what this process's environment lacks for it
/// (the validator never reads the environment).
fn warnings(spec: &crate::spec::Spec, settings: &crate::config::Settings) -> Vec<String> {
    let mut out = spec.warnings.clone();
    if let (Some(at), None) = (&spec.tools.tavily_at, &settings.search.tavily_key) {
        out.push(format!(
            "{at}: tavily_search needs TAVILY_API_KEY, which is not set: its calls will fail with an error the model reads"
        ));
    }
    out
}

/// The channel that answers gates for one CLI invocation.
pub(super) enum CliChannel {
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

pub(crate) fn cli_channel(
    interactive: bool,
    auto_approve: bool,
    who: &str,
    clock: &crate::clock::SharedClock,
) -> WithProgress<CliChannel> {
    let inner = if auto_approve {
        CliChannel::Auto(AutoApprove {
            by: who.to_string(),
            clock: std::sync::Arc::clone(clock),
        })
    } else if interactive {
        let stdin = std::io::BufReader::new(std::io::stdin());
        CliChannel::Terminal(Terminal::new(
            stdin,
            std::io::stderr(),
            who.to_string(),
            std::sync::Arc::clone(clock),
        ))
    } else {
        CliChannel::Detached(Detached)
    };
    WithProgress { inner }
}

/// `--interactive` whose input ended with the session still paused, when
/// stdin is not a terminal: nobody could be asked, which is an error, not
/// a deferral (a person at a terminal defers with `d` or Ctrl-D).
fn nobody_to_ask(ctx: &Ctx, channel: &WithProgress<CliChannel>, s: &Session) -> Option<Error> {
    let CliChannel::Terminal(t) = &channel.inner else {
        return None;
    };
    if !t.input_ended() || s.status != Status::Paused || std::io::stdin().is_terminal() {
        return None;
    }
    let gate = s.first_gate().map(|g| g.id.clone()).unwrap_or_default();
    Some(Error::Usage(format!(
        "--interactive cannot ask: stdin is not a terminal and it ended before gate `{gate}` was answered. Session {} stays paused; answer it with `{}` (or --reject --reason R, --modify --feedback F, --response TEXT), or run it in a terminal",
        s.id,
        ctx.resume_cmd(&s.id, "--approve")
    )))
}

/// An artifact refusal names the exact command that finishes the run.
fn with_resume(ctx: &Ctx, e: Error) -> Error {
    match e {
        Error::ArtifactExists {
            path,
            session: Some(id),
            ..
        } => Error::ArtifactExists {
            resume: Some(ctx.resume_cmd(&id, "--force")),
            path,
            session: Some(id),
        },
        other => other,
    }
}

/// Whether a run of `spec` can pause at a gate of its own (a pause needs
/// the session kept). Tool approvals are decided call by call and are not
/// counted: a run that pauses for one keeps its session.
fn has_gates(spec: &crate::spec::Spec) -> bool {
    !spec.gates().is_empty() || !spec.hitl.triggers.is_empty()
}

/// The newest paused or interrupted (`running`) session started from
/// this very spec text (same SHA-256): what `--auto-resume` continues.
async fn latest_resumable(store: &Store, spec: &crate::spec::Spec) -> Result<Option<Session>> {
    let mut best: Option<Session> = None;
    for status in [Status::Paused, Status::Running] {
        for summary in store.list(Some(status)).await? {
            if summary.workflow != spec.name {
                continue;
            }
            let s = store.get(&summary.id).await?;
            if s.spec_hash != spec.hash {
                continue;
            }
            if best.as_ref().is_none_or(|b| s.updated_at > b.updated_at) {
                best = Some(s);
            }
            // Listed newest first: the first match of a status is its newest.
            break;
        }
    }
    Ok(best)
}

pub(super) async fn run(ctx: &Ctx, args: RunArgs) -> Result<u8> {
    if let Some(id) = &args.resume {
        // strands-cli's `run --resume ID [--hitl-response TEXT]`.
        let answer = match &args.hitl_response {
            Some(text) => Some(answer_now(
                ctx,
                Decision::Respond { text: text.clone() },
                &args.vars,
            )?),
            None if !args.vars.is_empty() => {
                return Err(Error::Usage(
                    "--var with --resume comes with an answer (--hitl-response TEXT); a resumed run keeps the variables it started with".into(),
                ))
            }
            None => None,
        };
        let resume = ResumeArgs {
            interactive: args.interactive,
            auto_approve: args.auto_approve,
            force: args.force,
            json: args.json,
            ..ResumeArgs::of(id)
        };
        return continue_session(ctx, &resume, answer).await;
    }
    if let Some(remote) = &ctx.remote {
        return super::remote::run(ctx, remote, &args).await;
    }
    let Some(path) = &args.spec else {
        return Err(Error::Usage(
            "strands run needs a SPEC (or --resume ID to continue a session)".into(),
        ));
    };
    let spec = spec::load(path, &ctx.settings.limits)?;
    for w in warnings(&spec, &ctx.settings) {
        eprintln!("warning: {w}");
    }
    tracing::info!(
        spec = %path.display(),
        workflow = %spec.name,
        pattern = spec.pattern.name(),
        provider = %spec.runtime.provider,
        model = spec.runtime.model_id.as_deref().unwrap_or("default"),
        "spec loaded"
    );
    let issues = super::info::issues(&spec);
    if !issues.is_empty() {
        return Err(super::info::unsupported(path, &issues));
    }
    Engine::preflight(&spec, &ctx.settings)?;
    if args.no_save_session && has_gates(&spec) {
        return Err(Error::Usage(format!(
            "--no-save-session: workflow `{}` has human gates, and a run that pauses at one needs its session to be resumed (`strands resume ID`). Drop --no-save-session (sessions can be deleted later: `strands sessions delete ID --force`, `strands sessions cleanup`)",
            spec.name
        )));
    }
    if args.auto_resume {
        let found = {
            let store = ctx.open().await?;
            latest_resumable(&store, &spec).await?
        };
        match found {
            Some(s) => {
                eprintln!(
                    "auto-resume: continuing session {} ({}, updated {}) of this same spec",
                    s.id,
                    s.status,
                    super::human::local_stamp(s.updated_at)
                );
                if !args.vars.is_empty() {
                    eprintln!("note: --var values are not applied: the session keeps the variables it started with");
                }
                let resume = ResumeArgs {
                    interactive: args.interactive,
                    auto_approve: args.auto_approve,
                    force: args.force,
                    json: args.json,
                    ..ResumeArgs::of(&s.id)
                };
                return continue_session(ctx, &resume, None).await;
            }
            None => tracing::info!(
                "auto-resume: no paused or interrupted session of this spec; starting a new one"
            ),
        }
    }
    let vars = ask_missing_inputs(&spec, &args.vars)?;
    let variables = spec.resolve_variables(&vars)?;
    let store = ctx.open().await?;
    let mut engine = ctx.engine(&store);
    // Stored absolute, so a resume from another directory writes to the same place.
    let out_dir = std::path::absolute(&args.out)
        .map_err(|e| Error::io(format!("cannot resolve --out {}", args.out.display()), e))?;
    let start = Start {
        variables,
        started_by: ctx.who.clone(),
        out_dir,
        origin: None,
        overwrite_artifacts: args.force,
    };
    let mut channel = cli_channel(args.interactive, args.auto_approve, &ctx.who, &ctx.clock);
    let session = engine
        .start(&spec, start, &mut channel)
        .await
        .map_err(|e| with_resume(ctx, e))?;
    if let Some(e) = nobody_to_ask(ctx, &channel, &session) {
        return Err(e);
    }
    let code = report(ctx, &session, args.json, None)?;
    if args.no_save_session {
        if session.status.is_terminal() {
            store.delete(&session.id).await?;
            eprintln!("session {} not kept (--no-save-session)", session.id);
        } else {
            eprintln!(
                "note: session {} is kept although --no-save-session: it is {} and needs it to go on",
                session.id, session.status
            );
        }
    }
    Ok(code)
}

pub(super) fn answer_now(
    ctx: &Ctx,
    decision: Decision,
    vars: &[(String, String)],
) -> Result<Answer> {
    let mut map = Map::new();
    for (k, v) in vars {
        map.insert(k.clone(), Value::String(v.clone()));
    }
    Ok(Answer {
        decision,
        by: ctx.who.clone(),
        at: ctx.now(),
        via: "cli".into(),
        vars: map,
        call: None,
        person: None,
        on_behalf_of: None,
    })
}

pub(super) async fn resume(ctx: &Ctx, args: ResumeArgs) -> Result<u8> {
    let decision = if args.approve && !args.values.is_empty() {
        // Text, as typed: the gate's form types and checks it.
        Some(Decision::Fill {
            values: args
                .values
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        })
    } else if args.approve {
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
                let mut a = answer_now(ctx, d, &args.vars)?;
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

pub(super) async fn continue_session(
    ctx: &Ctx,
    args: &ResumeArgs,
    answer: Option<Answer>,
) -> Result<u8> {
    if let Some(remote) = &ctx.remote {
        return super::remote::resume(ctx, remote, args, answer).await;
    }
    let store = ctx.open().await?;
    let mut engine = ctx.engine(&store).with_overwrite(args.force);
    let id = store.resolve(&args.id).await?;
    let mut interactive = args.interactive;
    if answer.is_none() && !args.interactive && !args.auto_approve {
        // Without a decision, resume continues an interrupted run, applies
        // a timeout that has passed, or — paused — asks in a terminal.
        let s = store.get(&id).await?;
        if let (Status::Paused, Some(g)) = (s.status, s.first_gate()) {
            if !s.open_gates().any(|g| g.timed_out(ctx.now())) {
                if std::io::stdin().is_terminal() {
                    eprintln!(
                        "session {id} is paused at gate `{}`; answer it here ([d] defers)",
                        g.id
                    );
                    interactive = true;
                } else {
                    return Err(Error::Usage(needs_answer(ctx, &s)));
                }
            }
        }
    }
    tracing::info!(session = %id, "resuming");
    // --var values are typed by the spec's input declarations.
    let answer = match answer {
        Some(mut a) if !a.vars.is_empty() => {
            let session = store.get(&id).await?;
            let spec = engine.spec(&session)?;
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
    let mut channel = cli_channel(interactive, args.auto_approve, &ctx.who, &ctx.clock);
    if let Some(answer) = answer {
        // strands-cli's `run --resume ID --hitl-response` answers the first
        // open gate; otherwise `--gate`, or the only open gate.
        let first = match (&args.gate, args.first_open) {
            (None, true) => store.get(&id).await?.first_gate().map(|g| g.handle()),
            _ => None,
        };
        let pick = args.gate.as_deref().or(first.as_deref());
        let asker = Asker {
            who: &ctx.who,
            admins: &ctx.settings.admins,
            default_approvers: &[],
            shared: false,
            member_of: &|_| false,
            now: engine.now(),
        };
        match engine.submit(&id, pick, answer, &asker).await? {
            Ok(_) => {}
            Err(refusal @ Refusal::TimedOut { .. }) => {
                // The fallback wins; driving applies it.
                eprintln!("{refusal}");
            }
            Err(refusal) => {
                let status = store.load(&id).await?.map(|s| s.status);
                return Err(refusal_error(&id, refusal, status));
            }
        }
    }
    let session = engine
        .resume(&id, &mut channel)
        .await
        .map_err(|e| with_resume(ctx, e))?;
    if let Some(e) = nobody_to_ask(ctx, &channel, &session) {
        return Err(e);
    }
    let notes = store.notifications(&session.id).await?;
    report(ctx, &session, args.json, notes.last())
}

/// What a paused session needs when nobody can be asked here: its open
/// gates and the commands that answer them.
fn needs_answer(ctx: &Ctx, s: &Session) -> String {
    let open: Vec<&crate::model::OpenGate> = s.open_gates().collect();
    let id = &s.id;
    if let [g] = open.as_slice() {
        return format!(
            "session {id} is paused at gate `{}` and nobody can be asked here (stdin is not a terminal): answer with `{}`, --reject [--reason R], --modify --feedback F or --response TEXT (strands-cli: `strands run --resume {id} --hitl-response TEXT`)",
            g.id,
            ctx.resume_cmd(id, "--approve")
        );
    }
    let handles: Vec<String> = open.iter().map(|g| format!("`{}`", g.handle())).collect();
    format!(
        "session {id} is paused at {} gates ({}) and nobody can be asked here (stdin is not a terminal): answer each with --gate, e.g. `{}` (or --reject [--reason R], --modify --feedback F, --response TEXT)",
        open.len(),
        handles.join(", "),
        ctx.resume_cmd(
            id,
            &format!("--gate {} --approve", open.first().map(|g| g.handle()).unwrap_or_default())
        )
    )
}

/// A refused answer as the CLI reports it (message and exit code).
fn refusal_error(id: &str, refusal: Refusal, status: Option<Status>) -> Error {
    match refusal {
        Refusal::AlreadyAnswered(a) if status.is_some_and(|s| s.is_terminal()) => {
            Error::Session(format!(
                "session {id} is {}: {}",
                status.map(|s| s.to_string()).unwrap_or_default(),
                Refusal::AlreadyAnswered(a)
            ))
        }
        Refusal::BadAnswer(why) => Error::Usage(why),
        bad @ Refusal::BadValues(_) => Error::Usage(bad.to_string()),
        Refusal::NotOpen(Status::Running) => Error::Session(format!(
            "session {id} is running (interrupted or answered already); `strands resume {id}` without a decision continues it"
        )),
        Refusal::NotOpen(status) if status.is_terminal() => Error::Session(format!(
            "session {id} is {status}; there is nothing to resume"
        )),
        other => Error::Session(format!("session {id}: {other}")),
    }
}

/// `--var` values plus, when stdin is a terminal, the missing inputs asked
/// for one by one (as strands-cli does); otherwise `resolve_variables`
/// names them, before any model call.
fn ask_missing_inputs(
    spec: &spec::Spec,
    vars: &[(String, String)],
) -> Result<Vec<(String, String)>> {
    let mut out = vars.to_vec();
    let missing = spec.missing_inputs(vars);
    if missing.is_empty() || !std::io::stdin().is_terminal() {
        return Ok(out);
    }
    for name in missing {
        let why = spec
            .needs
            .iter()
            .find(|n| n.name == name)
            .map(|n| format!(" (read by {})", n.what))
            .unwrap_or_default();
        eprint!("{name}{why}: ");
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| Error::io("cannot read an input from the terminal", e))?;
        out.push((name, line.trim_end_matches(['\r', '\n']).to_string()));
    }
    Ok(out)
}
