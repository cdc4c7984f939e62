//! `strands sessions ...`: list, show, delete, cleanup, sweep, notify.

use super::*;
use crate::model::Notification;
use render::session_json;
use run::cli_channel;

/// `sessions sweep`: every paused session whose gate timed out gets its
/// fallback (recorded exactly once, as a resume would) and runs on to its
/// next stop with nobody to ask.
pub(super) async fn sweep(ctx: &Ctx, json: bool) -> Result<u8> {
    use crate::engine::timers::{Quiet, Timers, TokioClock};
    let store = ctx.open()?;
    let notifier = Quiet::default();
    let timers = Timers {
        store: &store,
        notifier: &notifier,
        clock: std::sync::Arc::new(TokioClock::default()),
        specs: std::sync::Arc::new(crate::engine::specs::SpecCache::new(ctx.settings.limits)),
        wake: Default::default(),
    };
    timers.fire_due().await?;
    let fired = std::mem::take(&mut *notifier.fired.lock().unwrap_or_else(|p| p.into_inner()));
    let mut swept = Vec::new();
    let mut errors = Vec::new();
    let mut code = exit::OK;
    for (id, f) in fired {
        let handle = f.gate.handle();
        let mut engine = ctx.engine(&store);
        let mut channel = cli_channel(false, false, &ctx.who);
        match engine.resume(&id, &mut channel).await {
            Ok(after) => {
                let answer = &f.answer;
                let reason = match &answer.decision {
                    Decision::Reject { reason } | Decision::Abort { reason } => reason.clone(),
                    Decision::Respond { text } => Some(format!("answered `{text}`")),
                    _ => None,
                };
                let note = (f.gate.fallback == spec::Fallback::Escalate).then(|| {
                    "escalation needs the bot (`strands serve`); without it `escalate` rejects"
                        .to_string()
                });
                swept.push(json!({
                    "session": after.id,
                    "workflow": after.workflow,
                    "gate": handle,
                    "timeout_at": f.gate.timeout_at,
                    "fallback": f.gate.fallback.name(),
                    "decision": answer.decision.verb(),
                    "by": answer.by,
                    "reason": reason,
                    "status": after.status,
                    "note": note,
                }));
            }
            Err(e) => {
                if code == exit::OK {
                    code = e.exit_code();
                }
                errors.push(json!({ "session": id, "gate": handle, "error": e.to_string() }));
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
            eprintln!("no gate timeout is due in {}", store.location());
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

pub(super) async fn notify(ctx: &Ctx, id: &str) -> Result<u8> {
    let config =
        crate::slack::config::Config::from_env(ctx.store_path.clone(), Default::default())?;
    let store = ctx.open()?;
    let id = store.resolve(id).await?;
    let app = crate::slack::app::App::new(config, store)?;
    app.notify(&id).await?;
    eprintln!("posted the approval message for session {id}");
    Ok(exit::OK)
}

pub(super) async fn sessions(ctx: &Ctx, cmd: SessionsCommand) -> Result<u8> {
    let store = ctx.open()?;
    match cmd {
        SessionsCommand::List { status, json } => {
            let status = status.as_deref().and_then(Status::parse);
            let list = store.list(status).await?;
            if json {
                println!("{}", json!({ "sessions": list, "count": list.len() }));
            } else if list.is_empty() {
                eprintln!("no sessions in {}", store.location());
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
            let s = store.get(&id).await?;
            let notes = store.notifications(&s.id).await?;
            let note = notes.last();
            if json {
                println!("{}", session_json(ctx, &s, true, note));
            } else {
                print_show(ctx, &s, note);
            }
            Ok(exit::OK)
        }
        SessionsCommand::Notify { .. } | SessionsCommand::Sweep { .. } => Err(Error::Internal(
            "notify and sweep are handled before".into(),
        )),
        SessionsCommand::Delete { id } => {
            let id = store.resolve(&id).await?;
            store.delete(&id).await?;
            eprintln!("deleted session {id}");
            Ok(exit::OK)
        }
        SessionsCommand::Cleanup { max_age_days, json } => {
            let cutoff = Utc::now() - chrono::Duration::days(i64::from(max_age_days));
            let removed = store.cleanup(cutoff).await?;
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

pub(super) fn print_show(ctx: &Ctx, s: &Session, note: Option<&Notification>) {
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
    if let Some(n) = note {
        match (&n.ts, &n.error) {
            (_, Some(err)) => println!(
                "Slack:     approval message NOT posted for {} ({err}); `strands sessions notify {}` posts it again",
                n.gate, s.id
            ),
            (Some(ts), None) => println!("Slack:     approval message for {} in {} (ts {ts})", n.gate, n.channel),
            (None, None) => {}
        }
    }
    let mut open = s.open_gates();
    if let Some(g) = open.next() {
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
        if s.gates.len() == 1 {
            println!("\nResume:    {}", ctx.resume_cmd(&s.id, "--approve"));
        } else {
            println!(
                "\nResume:    {}",
                ctx.resume_cmd(&s.id, &format!("--gate {} --approve", g.handle()))
            );
        }
    }
    for g in open {
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
