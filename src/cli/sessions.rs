//! `strands sessions ...`: list, show, delete, cleanup, sweep, notify,
//! cancel.

use chrono::Utc;
use serde_json::{json, Value};
use std::io::IsTerminal;

use super::asking::cli_channel;
use super::{human, render, Ctx, ListArgs, SessionsCommand};
use crate::error::{exit, Error, Result};
use crate::hub::view::SessionView;
use crate::hub::Hub;
use crate::model::{Decision, Status};
use crate::spec;

/// `sessions sweep`: every paused session whose gate timed out gets its
/// fallback (recorded exactly once, as a resume would) and runs on to its
/// next stop with nobody to ask.
pub(super) async fn sweep(ctx: &Ctx, json: bool) -> Result<u8> {
    use crate::engine::timers::{Quiet, Timers};
    let store = ctx.open().await?;
    let notifier = Quiet::default();
    let timers = Timers {
        store: &store,
        notifier: &notifier,
        clock: std::sync::Arc::clone(&ctx.clock),
        specs: std::sync::Arc::new(crate::engine::specs::SpecCache::new(
            ctx.settings.limits.clone(),
        )),
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
        let mut channel = cli_channel(false, false, &ctx.who, &ctx.clock);
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
        outln!(
            "{}",
            json!({ "swept": swept, "count": swept.len(), "errors": errors })
        )?;
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
            outln!(
                "{}: gate `{}` timed out → {}{reason}; the run is now {}",
                str_of("session"),
                str_of("gate"),
                str_of("decision"),
                str_of("status"),
            )?;
            if let Some(note) = v["note"].as_str() {
                outln!("  note: {note}")?;
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
    let Some(config) =
        crate::slack::config::Config::from_lookup(ctx.env.lookup(), Default::default())?
    else {
        return Err(Error::Usage(
            "SLACK_BOT_TOKEN is not set: `sessions notify` posts to Slack".into(),
        ));
    };
    let store = ctx.open().await?;
    let id = store.resolve(id).await?;
    let hub = crate::hub::Hub::new(store, std::sync::Arc::clone(&ctx.settings), None)
        .with_clock(std::sync::Arc::clone(&ctx.clock));
    let app = crate::slack::app::App::new(config, hub)?;
    crate::slack::post::notify(&app, &id).await?;
    eprintln!("posted the approval message for session {id}");
    Ok(exit::OK)
}

/// `sessions list` output, from the store or a server: columns as wide
/// as their widest value, times local.
fn print_list(
    list: &[crate::model::Summary],
    next_cursor: Option<&str>,
    json: bool,
    location: &str,
) -> Result<()> {
    if json {
        let mut v = json!({ "sessions": list, "count": list.len() });
        if let Some(c) = next_cursor {
            v["next_cursor"] = json!(c);
        }
        outln!("{v}")?;
        return Ok(());
    }
    if let Some(c) = next_cursor {
        eprintln!("more: --cursor {c}");
    }
    if list.is_empty() {
        eprintln!("no sessions in {location}");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|s| {
            vec![
                s.id.clone(),
                s.status.to_string(),
                human::local_stamp(s.updated_at),
                s.workflow.clone(),
                s.gate.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    for line in human::table(&["ID", "STATUS", "UPDATED", "WORKFLOW", "GATE"], &rows) {
        outln!("{line}")?;
    }
    Ok(())
}

/// `sessions delete` without --force: asks at a terminal; without one,
/// nobody can say yes, so it refuses (strands-cli asks the same way).
fn confirm_delete(s: &crate::model::Session) -> Result<bool> {
    use std::io::{BufRead, Write};
    if !std::io::stdin().is_terminal() {
        return Err(Error::Usage(format!(
            "`sessions delete` asks before deleting, and stdin is not a terminal: add --force (-f) to delete session {} without asking",
            s.id
        )));
    }
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "Delete session {} ({}, {}, updated {})? Its history goes too; the audit log keeps its entries. [y/N] ",
        s.id,
        s.workflow,
        s.status,
        human::local_stamp(s.updated_at)
    );
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::io("cannot read the answer", e))?;
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

pub(super) async fn sessions(ctx: &Ctx, cmd: SessionsCommand) -> Result<u8> {
    if let Some(remote) = &ctx.remote {
        match &cmd {
            SessionsCommand::List(ListArgs {
                status,
                workflow,
                json,
                limit: Some(limit),
                cursor,
            }) => {
                let page = super::remote::list_page(
                    remote,
                    status.as_deref(),
                    workflow.as_deref(),
                    *limit,
                    cursor.as_deref(),
                )
                .await?;
                print_list(
                    &page.sessions,
                    page.next_cursor.as_deref(),
                    *json,
                    "the server",
                )?;
                return Ok(exit::OK);
            }
            SessionsCommand::List(ListArgs {
                status,
                workflow,
                json,
                ..
            }) => {
                let list =
                    super::remote::list(remote, status.as_deref(), workflow.as_deref()).await?;
                print_list(&list, None, *json, "the server")?;
                return Ok(exit::OK);
            }
            SessionsCommand::Cancel { id, reason, json } => {
                let v = super::remote::cancel(remote, id, reason.as_deref()).await?;
                return print_cancel(&v, *json);
            }
            SessionsCommand::Show { id, json } => {
                let view = remote.session(id).await?;
                if *json {
                    outln!("{}", render::view_json(&ctx.words(), &view))?;
                } else {
                    print_show(ctx, &view)?;
                }
                return Ok(exit::OK);
            }
            _ => {}
        }
    }
    let store = ctx.open().await?;
    match cmd {
        SessionsCommand::List(ListArgs {
            status,
            workflow,
            json,
            limit,
            cursor,
        }) => {
            let status = status.as_deref().and_then(Status::parse);
            let Some(limit) = limit else {
                let list = match workflow.as_deref() {
                    // Every run of one workflow: its index, page by page.
                    Some(w) => {
                        const PAGE: usize = 1024;
                        let mut out = Vec::new();
                        let mut after = None;
                        loop {
                            let page = store.workflow_page(w, status, after, PAGE).await?;
                            after = page.last().map(|s| (s.created_at, s.id.clone()));
                            let full = page.len() == PAGE;
                            out.extend(page);
                            if !full {
                                break out;
                            }
                        }
                    }
                    None => store.list(status).await?,
                };
                print_list(&list, None, json, &store.location())?;
                return Ok(exit::OK);
            };
            if limit == 0 {
                return Err(Error::Usage("--limit must be at least 1".into()));
            }
            let after = match cursor.as_deref() {
                Some(c) => Some(crate::model::parse_cursor(c).ok_or_else(|| {
                    Error::Usage(format!(
                        "--cursor `{c}` is not a `next_cursor` this command printed"
                    ))
                })?),
                None => None,
            };
            // One row more than asked says whether there is a next page.
            let mut page = store
                .page(status, workflow.as_deref(), after, limit + 1)
                .await?;
            let more = page.len() > limit;
            page.truncate(limit);
            let next = more
                .then(|| page.last().map(crate::model::Summary::cursor))
                .flatten();
            print_list(&page, next.as_deref(), json, &store.location())?;
            Ok(exit::OK)
        }
        SessionsCommand::Show { id, json } => {
            let s = store.get(&id).await?;
            let notes = store.notifications(&s.id).await?;
            let note = notes.last();
            let view = SessionView::of(&s, true, note);
            if json {
                outln!("{}", render::view_json(&ctx.words(), &view))?;
            } else {
                print_show(ctx, &view)?;
            }
            Ok(exit::OK)
        }
        SessionsCommand::Notify { .. } | SessionsCommand::Sweep { .. } => Err(Error::Internal(
            "notify and sweep are handled before".into(),
        )),
        SessionsCommand::Cancel { id, reason, json } => {
            let v = cancel(ctx, &ctx.hub_on(store), &id, reason).await?;
            print_cancel(&v, json)
        }
        SessionsCommand::Delete { id, force } => {
            let s = store.get(&id).await?;
            if !force && !confirm_delete(&s)? {
                eprintln!("cancelled: session {} kept", s.id);
                return Ok(exit::OK);
            }
            store.delete(&s.id).await?;
            eprintln!("deleted session {}", s.id);
            Ok(exit::OK)
        }
        SessionsCommand::Cleanup {
            max_age_days, json, ..
        } => {
            let cutoff = ctx.now() - chrono::Duration::days(i64::from(max_age_days));
            let removed = store.cleanup(cutoff).await?;
            if json {
                outln!("{}", json!({ "deleted": removed, "count": removed.len() }))?;
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

/// `sessions cancel` on the store: a running run is asked to stop (and,
/// on a store only this process opens, ended now: nobody else drives it);
/// a paused one has its first open gate rejected and is carried on to its
/// end. The result is what the API answers.
async fn cancel(ctx: &Ctx, hub: &Hub, id: &str, reason: Option<String>) -> Result<Value> {
    use crate::hub::door::{CancelOutcome, Door, DoorAnswer};
    let reason = reason.filter(|r| !r.trim().is_empty());
    let outcome = hub
        .request_cancel(id, &ctx.who, Door::Cli, reason.clone())
        .await?;
    let mut channel = crate::channel::Detached;
    let (what, session) = match outcome {
        CancelOutcome::Requested(s) if !hub.store.is_shared() => (
            "cancelled",
            hub.continue_here(&s.id, &mut channel, false).await?,
        ),
        CancelOutcome::Requested(s) => ("requested", s),
        CancelOutcome::AlreadyRequested(s) => ("already_requested", s),
        CancelOutcome::AlreadyCancelled(s) => ("already_cancelled", s),
        CancelOutcome::Paused(s) => {
            let gate = s.first_gate().map(|g| g.handle());
            let reject = Decision::Reject {
                reason: Some(match &reason {
                    Some(r) => format!("cancelled by {}: {r}", ctx.who),
                    None => format!("cancelled by {}", ctx.who),
                }),
            };
            let answer = DoorAnswer::new(&s.id, &ctx.who, Door::Cli, reject).at(gate.as_deref());
            if let Err(refusal) = hub.record(answer).await? {
                return Err(Error::Session(format!("session {}: {refusal}", s.id)));
            }
            (
                "rejected",
                hub.continue_here(&s.id, &mut channel, false).await?,
            )
        }
    };
    Ok(json!({
        "session": session.id,
        "workflow": session.workflow,
        "outcome": what,
        "status": session.status,
        "cancel": session.cancel,
    }))
}

/// Says what a cancel did (stdout with --json, stderr otherwise).
fn print_cancel(v: &Value, json: bool) -> Result<u8> {
    if json {
        outln!("{v}")?;
        return Ok(exit::OK);
    }
    let id = v["session"].as_str().unwrap_or_default();
    let by = v["cancel"]["by"].as_str().unwrap_or_default();
    match v["outcome"].as_str().unwrap_or_default() {
        "cancelled" | "already_cancelled" => eprintln!("session {id} cancelled"),
        "requested" => eprintln!(
            "cancel recorded: session {id} stops at its next checkpoint (`strands sessions show {id}` says when)"
        ),
        "already_requested" => eprintln!(
            "session {id}: a cancel is already recorded (by {by}); it stops at its next checkpoint"
        ),
        _ => eprintln!(
            "session {id} {}: its open gate was rejected",
            v["status"].as_str().unwrap_or_default()
        ),
    }
    Ok(exit::OK)
}

pub(super) fn print_show(ctx: &Ctx, v: &SessionView) -> Result<()> {
    let id = &v.session_id;
    outln!("Session:   {id}")?;
    outln!("Workflow:  {} ({} pattern)", v.workflow, v.pattern)?;
    outln!("Status:    {}", v.status)?;
    let hash = v.spec_hash.as_deref().unwrap_or_default();
    outln!(
        "Spec:      {} (sha256 {})",
        v.spec_path.as_deref().unwrap_or_default(),
        &hash[..hash.len().min(12)]
    )?;
    outln!(
        "Started:   {} by {}",
        human::local_stamp(v.created_at),
        v.started_by
    )?;
    outln!("Updated:   {}", human::local_stamp(v.updated_at))?;
    outln!("Steps:     {} finished", v.steps_finished)?;
    let u = v.usage_total();
    outln!(
        "Tokens:    {} in, {} out, {} calls",
        u.input_tokens,
        u.output_tokens,
        u.calls
    )?;
    if let Some(f) = &v.error {
        outln!("Failure:   {} (exit {})", f.message, f.code)?;
    }
    if let Some(c) = &v.cancel {
        let what = if v.status == Status::Cancelled {
            "by"
        } else {
            "requested by"
        };
        outln!(
            "Cancelled: {what} {} via {} at {}{}",
            c.by,
            c.via,
            human::local_stamp(c.at),
            c.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        )?;
    }
    if let Some(n) = &v.notification {
        let (room, what, key) = match crate::model::Place::parse(&n.channel) {
            crate::model::Place::Slack(_) => ("Slack:", "approval message", "ts"),
            crate::model::Place::Email(_) => ("Email:", "approval mail", "Message-ID"),
            crate::model::Place::Teams(_) => ("Teams:", "approval card", "activity"),
        };
        match (&n.ts, &n.error) {
            (_, Some(err)) => outln!(
                "{room:<10} {what} NOT posted for {} ({err}); `strands sessions notify {id}` posts it again",
                n.gate
            )?,
            (Some(ts), None) => outln!("{room:<10} {what} for {} in {} ({key} {ts})", n.gate, n.channel)?,
            (None, None) => {}
        }
    }
    let now = ctx.now();
    let mut open = v.open_gates.iter();
    if let Some(g) = open.next() {
        outln!("\nOpen gate: {} ({}, {})", g.handle, g.position, g.kind)?;
        outln!("Prompt:    {}", g.prompt)?;
        if let Some(t) = g.timeout_at {
            outln!(
                "Timeout:   {}",
                human::timeout_sentence(t, g.timeout_effect.as_deref(), now)
            )?;
        }
        if let Some(words) = business_words(g, now) {
            outln!("Business:  {words}")?;
        }
        if let Some(context) = g.context.as_deref().filter(|c| !c.is_empty()) {
            outln!("Context:\n{context}")?;
        }
        for c in g.calls.iter().filter(|c| c.waiting()) {
            outln!(
                "Answer:    {} --call {} (--approve | --reject --reason R | --edit-args JSON{})",
                ctx.words().resume_cmd(id, ""),
                c.id,
                if c.trustable() { " | --trust" } else { "" }
            )?;
        }
        if let Some(form) = &g.form {
            outln!("Fill in:   {}", form.summary())?;
        }
        let approve = super::render::approve_args(g);
        if v.open_gates.len() == 1 {
            outln!("\nResume:    {}", ctx.words().resume_cmd(id, &approve))?;
        } else {
            outln!(
                "\nResume:    {}",
                ctx.words()
                    .resume_cmd(id, &format!("--gate {} {approve}", g.handle))
            )?;
        }
        if g.allow_trust {
            outln!("           {}", ctx.words().resume_cmd(id, "--trust"))?;
        }
    }
    for g in open {
        outln!("\nAlso open: {} ({}, {})", g.handle, g.position, g.kind)?;
        outln!("Prompt:    {}", g.prompt)?;
        if let Some(t) = g.timeout_at {
            outln!(
                "Timeout:   {}",
                human::timeout_sentence(t, g.timeout_effect.as_deref(), now)
            )?;
        }
        if let Some(words) = business_words(g, now) {
            outln!("Business:  {words}")?;
        }
        if let Some(context) = g.context.as_deref().filter(|c| !c.is_empty()) {
            outln!("Context:\n{context}")?;
        }
        outln!(
            "Resume:    {}",
            ctx.words().resume_cmd(
                id,
                &format!("--gate {} {}", g.handle, super::render::approve_args(g))
            )
        )?;
    }
    if !v.gates.is_empty() {
        outln!("\nHistory:")?;
        for e in &v.gates {
            match (&e.decision, e.condition.as_deref()) {
                (Some(decision), _) => {
                    let detail = match decision {
                        Decision::Reject { reason: Some(r) } => format!(": {r}"),
                        Decision::Modify { feedback } => format!(": {feedback}"),
                        Decision::Respond { text } => format!(": {text}"),
                        Decision::Fill { values } => {
                            format!(": {}", crate::model::form::shown(values))
                        }
                        _ => String::new(),
                    };
                    outln!(
                        "  {} {}#{} {} by {}{} via {} after {:.1}s{detail}",
                        e.at.map(human::local_stamp).unwrap_or_default(),
                        e.gate,
                        e.instance.unwrap_or_default(),
                        decision.verb(),
                        e.by.as_deref().unwrap_or_default(),
                        e.on_behalf_of
                            .as_deref()
                            .map(|p| format!(" for {p}"))
                            .unwrap_or_default(),
                        e.via.as_deref().unwrap_or_default(),
                        e.waited_ms.unwrap_or_default() as f64 / 1000.0
                    )?;
                }
                (None, condition) => outln!(
                    "  {} skipped (condition `{}` was false)",
                    e.gate,
                    condition.unwrap_or_default()
                )?,
            }
        }
    }
    if let Some(o) = &v.output {
        outln!("\nOutput:\n{o}")?;
    }
    Ok(())
}

/// A gate's business-hours deadline in its calendar's words, for
/// `sessions show` ("Monday 09:30 CET, in 2 business hours (calendar
/// `eu-office`)").
fn business_words(g: &crate::hub::view::GateView, now: chrono::DateTime<Utc>) -> Option<String> {
    crate::hub::durations::business_deadline(g.hours.as_ref(), g.timeout_at, now)
}
