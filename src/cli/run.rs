//! `strands validate`, `run` and `resume`: specs in, answers in through
//! the engine's intake, the run driven to its next stop.

use serde_json::json;
use std::io::IsTerminal;

use super::asking::{cli_channel, nobody_to_ask, with_resume};
use super::render::report;
use super::{Ctx, ResumeArgs, RunArgs};
use crate::engine::{Engine, Start};
use crate::error::{exit, Error, Result};
use crate::model::{Session, Status};
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
        if args.hitl_response.is_none() && !args.vars.is_empty() {
            return Err(Error::Usage(
                "--var with --resume comes with an answer (--hitl-response TEXT); a resumed run keeps the variables it started with".into(),
            ));
        }
        let resume = ResumeArgs {
            response: args.hitl_response.clone(),
            vars: args.vars.clone(),
            interactive: args.interactive,
            auto_approve: args.auto_approve,
            force: args.force,
            json: args.json,
            ..ResumeArgs::of(id)
        };
        return super::resume::resume(&ctx.answering().await?, resume).await;
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
                return super::resume::resume(&ctx.answering().await?, resume).await;
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
        .map_err(|e| with_resume(&ctx.words(), e))?;
    if let Some(e) = nobody_to_ask(&ctx.words(), &channel, &session) {
        return Err(e);
    }
    let code = report(&ctx.words(), &session, args.json, None)?;
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
