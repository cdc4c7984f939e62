//! `strands validate`, `run` and `resume`: specs in, answers in through
//! the engine's intake, the run driven to its next stop.

use super::*;
use crate::engine::Asker;
use crate::model::Refusal;

pub(super) fn validate(ctx: &Ctx, path: &std::path::Path, json: bool) -> Result<u8> {
    let spec = spec::load(path, &ctx.settings.limits)?;
    let warnings = warnings(&spec, &ctx.settings);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if json {
        println!(
            "{}",
            json!({ "valid": true, "name": spec.name, "pattern": spec.pattern.name(), "warnings": warnings })
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
) -> WithProgress<CliChannel> {
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

pub(super) async fn run(ctx: &Ctx, args: RunArgs) -> Result<u8> {
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
    if let Some(remote) = &ctx.remote {
        return super::remote::run(ctx, remote, &args).await;
    }
    let Some(path) = &args.spec else {
        return Err(Error::Usage(
            "strands run needs a SPEC (or --resume ID --hitl-response TEXT)".into(),
        ));
    };
    let spec = spec::load(path, &ctx.settings.limits)?;
    for w in warnings(&spec, &ctx.settings) {
        eprintln!("warning: {w}");
    }
    Engine::preflight(&spec)?;
    let variables = spec.resolve_variables(&args.vars)?;
    let store = ctx.open()?;
    let mut engine = ctx.engine(&store);
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
    Ok(report(ctx, &session, args.json, None))
}

pub(super) fn answer_now(
    who: &str,
    decision: Decision,
    vars: &[(String, String)],
) -> Result<Answer> {
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

pub(super) async fn resume(ctx: &Ctx, args: ResumeArgs) -> Result<u8> {
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

pub(super) async fn continue_session(
    ctx: &Ctx,
    args: &ResumeArgs,
    answer: Option<Answer>,
) -> Result<u8> {
    if let Some(remote) = &ctx.remote {
        return super::remote::resume(ctx, remote, args, answer).await;
    }
    let store = ctx.open()?;
    let mut engine = ctx.engine(&store);
    let id = store.resolve(&args.id).await?;
    if answer.is_none() && !args.interactive && !args.auto_approve {
        // Without a decision, resume only continues an interrupted run or
        // applies a timeout that has passed.
        let s = store.get(&id).await?;
        if let (Status::Paused, Some(g)) = (s.status, s.first_gate()) {
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
    let mut channel = cli_channel(args.interactive, args.auto_approve, &ctx.who);
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
    let session = engine.resume(&id, &mut channel).await?;
    let notes = store.notifications(&session.id).await?;
    Ok(report(ctx, &session, args.json, notes.last()))
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
        Refusal::NotOpen(Status::Running) => Error::Session(format!(
            "session {id} is running (interrupted or answered already); `strands resume {id}` without a decision continues it"
        )),
        Refusal::NotOpen(status) if status.is_terminal() => Error::Session(format!(
            "session {id} is {status}; there is nothing to resume"
        )),
        other => Error::Session(format!("session {id}: {other}")),
    }
}
