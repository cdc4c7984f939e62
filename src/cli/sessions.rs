//! `strands sessions ...`: list, show, delete, cleanup, sweep, notify.

use super::*;
use crate::hub::view::SessionView;
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
    let Some(config) = crate::slack::config::Config::from_env(Default::default())? else {
        return Err(Error::Usage(
            "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET are not set: `sessions notify` posts to Slack".into(),
        ));
    };
    let store = ctx.open()?;
    let id = store.resolve(id).await?;
    let hub = crate::hub::Hub::new(store, std::sync::Arc::clone(&ctx.settings), None);
    let app = crate::slack::app::App::new(config, hub)?;
    app.notify(&id).await?;
    eprintln!("posted the approval message for session {id}");
    Ok(exit::OK)
}

/// `sessions list` output, from the store or a server.
fn print_list(list: &[crate::model::Summary], json: bool, location: &str) {
    if json {
        println!("{}", json!({ "sessions": list, "count": list.len() }));
    } else if list.is_empty() {
        eprintln!("no sessions in {location}");
    } else {
        println!(
            "{:<36}  {:<9}  {:<20}  {:<24}  GATE",
            "ID", "STATUS", "UPDATED", "WORKFLOW"
        );
        for s in list {
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
}

pub(super) async fn sessions(ctx: &Ctx, cmd: SessionsCommand) -> Result<u8> {
    if let Some(remote) = &ctx.remote {
        match &cmd {
            SessionsCommand::List { status, json } => {
                let list = super::remote::list(remote, status.as_deref()).await?;
                print_list(&list, *json, "the server");
                return Ok(exit::OK);
            }
            SessionsCommand::Show { id, json } => {
                let view = remote.session(id).await?;
                if *json {
                    println!("{}", render::view_json(ctx, &view));
                } else {
                    print_show(ctx, &view);
                }
                return Ok(exit::OK);
            }
            _ => {}
        }
    }
    let store = ctx.open()?;
    match cmd {
        SessionsCommand::List { status, json } => {
            let status = status.as_deref().and_then(Status::parse);
            let list = store.list(status).await?;
            print_list(&list, json, &store.location());
            Ok(exit::OK)
        }
        SessionsCommand::Show { id, json } => {
            let s = store.get(&id).await?;
            let notes = store.notifications(&s.id).await?;
            let note = notes.last();
            let view = SessionView::of(&s, true, note);
            if json {
                println!("{}", render::view_json(ctx, &view));
            } else {
                print_show(ctx, &view);
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

pub(super) fn print_show(ctx: &Ctx, v: &SessionView) {
    let id = &v.session_id;
    println!("Session:   {id}");
    println!("Workflow:  {} ({} pattern)", v.workflow, v.pattern);
    println!("Status:    {}", v.status);
    let hash = v.spec_hash.as_deref().unwrap_or_default();
    println!(
        "Spec:      {} (sha256 {})",
        v.spec_path.as_deref().unwrap_or_default(),
        &hash[..hash.len().min(12)]
    );
    println!(
        "Started:   {} by {}",
        v.created_at.to_rfc3339(),
        v.started_by
    );
    println!("Updated:   {}", v.updated_at.to_rfc3339());
    println!("Steps:     {} finished", v.steps_finished);
    let u = v.usage_total();
    println!(
        "Tokens:    {} in, {} out, {} calls",
        u.input_tokens, u.output_tokens, u.calls
    );
    if let Some(f) = &v.error {
        println!("Failure:   {} (exit {})", f.message, f.code);
    }
    if let Some(n) = &v.notification {
        match (&n.ts, &n.error) {
            (_, Some(err)) => println!(
                "Slack:     approval message NOT posted for {} ({err}); `strands sessions notify {id}` posts it again",
                n.gate
            ),
            (Some(ts), None) => println!("Slack:     approval message for {} in {} (ts {ts})", n.gate, n.channel),
            (None, None) => {}
        }
    }
    let mut open = v.open_gates.iter();
    if let Some(g) = open.next() {
        println!("\nOpen gate: {} ({}, {:?})", g.id, g.position, g.kind);
        println!("Prompt:    {}", g.prompt);
        if let Some(t) = g.timeout_at {
            let state = if Utc::now() >= t {
                "passed; the fallback applies on the next resume"
            } else {
                "pending"
            };
            println!("Timeout:   {} ({state})", t.to_rfc3339());
        }
        if let Some(context) = g.context.as_deref().filter(|c| !c.is_empty()) {
            println!("Context:\n{context}");
        }
        for c in g.calls.iter().filter(|c| c.waiting()) {
            println!(
                "Answer:    {} --call {} (--approve | --reject --reason R | --edit-args JSON{})",
                ctx.resume_cmd(id, ""),
                c.id,
                if c.trustable() { " | --trust" } else { "" }
            );
        }
        if v.open_gates.len() == 1 {
            println!("\nResume:    {}", ctx.resume_cmd(id, "--approve"));
        } else {
            println!(
                "\nResume:    {}",
                ctx.resume_cmd(id, &format!("--gate {} --approve", g.handle))
            );
        }
    }
    for g in open {
        println!("\nAlso open: {} ({}, {:?})", g.id, g.position, g.kind);
        println!("Prompt:    {}", g.prompt);
        if let Some(context) = g.context.as_deref().filter(|c| !c.is_empty()) {
            println!("Context:\n{context}");
        }
        println!(
            "Resume:    {}",
            ctx.resume_cmd(id, &format!("--gate {} --approve", g.handle))
        );
    }
    if !v.gates.is_empty() {
        println!("\nHistory:");
        for e in &v.gates {
            match (&e.decision, e.condition.as_deref()) {
                (Some(decision), _) => {
                    let detail = match decision {
                        Decision::Reject { reason: Some(r) } => format!(": {r}"),
                        Decision::Modify { feedback } => format!(": {feedback}"),
                        Decision::Respond { text } => format!(": {text}"),
                        _ => String::new(),
                    };
                    println!(
                        "  {} {}#{} {} by {} via {} after {:.1}s{detail}",
                        e.at.map(|a| a.format("%Y-%m-%d %H:%M:%S").to_string())
                            .unwrap_or_default(),
                        e.gate,
                        e.instance.unwrap_or_default(),
                        decision.verb(),
                        e.by.as_deref().unwrap_or_default(),
                        e.via.as_deref().unwrap_or_default(),
                        e.waited_ms.unwrap_or_default() as f64 / 1000.0
                    );
                }
                (None, condition) => {
                    println!(
                        "  {} skipped (condition `{}` was false)",
                        e.gate,
                        condition.unwrap_or_default()
                    )
                }
            }
        }
    }
    if let Some(o) = &v.output {
        println!("\nOutput:\n{o}");
    }
}
