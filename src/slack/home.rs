//! The App Home inbox: on `app_home_opened`, the bot publishes the user's
//! home tab (`views.publish`) — the gates and tool calls this user may
//! answer (the intake's approver rules, groups resolved), each with
//! workflow, prompt, who started it, how long it has waited, its timeout in
//! the reader's own time zone (`<!date^…>`), quorum progress, working
//! Approve / Reject / Modify buttons and a link to its web page; and the
//! runs the user started. At most 100 blocks (Slack's limit): what does not
//! fit is counted ("…and 7 more"). The tab is published again when that
//! user's list may have changed: a watcher follows the store's events and
//! re-publishes the tabs of people who opened theirs recently.
//!
//! Buttons here are not on a message, so their value names the run and
//! gate (`session|handle[|call]`); the intake still decides who may answer
//! (a forged value only lets someone try, and be refused).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::access::{may_answer, member_groups};
use super::app::App;
use super::decide::take;
use super::reply::Reply;
use super::words::{self, refusal, split_value};
use crate::hub::door::Accepted;
use crate::model::{Answer, Decision, GateKind, Session, Status};

pub const APPROVE: &str = "strands_home_approve";
pub const REJECT: &str = "strands_home_reject";
pub const MODIFY: &str = "strands_home_modify";
/// Every routine gate the tab shows at once (`crate::hub::batch`).
pub const APPROVE_ALL: &str = "strands_home_approve_all";
pub const REJECT_ALL: &str = "strands_home_reject_all";
/// Modal submissions opened from the home tab.
pub const REJECT_MODAL: &str = "strands_home_reject_modal";
pub const REJECT_ALL_MODAL: &str = "strands_home_reject_all_modal";
/// Slack's limit on a button's value.
const MAX_VALUE: usize = 2000;
pub const MODIFY_MODAL: &str = "strands_home_modify_modal";

/// Slack's limit on a home tab's blocks.
const MAX_BLOCKS: usize = 100;
/// Recent runs looked at for "runs you started".
const RECENT: usize = 200;

/// What a home-tab modal carries in `private_metadata`.
#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    session: String,
    gate: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<String>,
}

fn value(session: &str, gate: &str, call: Option<&str>) -> String {
    match call {
        Some(c) => format!("{session}|{gate}|{c}"),
        None => format!("{session}|{gate}"),
    }
}

/// `session|handle[|call]`: a session id has no `|`; the call id is what
/// follows the last `|` after `#digits`.
fn parse_value(v: &str) -> Option<(String, String, Option<String>)> {
    let (session, rest) = v.split_once('|')?;
    let (gate, call) = split_value(rest);
    Some((
        session.to_string(),
        gate.to_string(),
        call.map(str::to_string),
    ))
}

fn mrkdwn(text: impl Into<String>) -> Value {
    json!({ "type": "mrkdwn", "text": text.into() })
}

/// Text for mrkdwn: Slack's three control characters escaped.
fn esc(text: &str) -> String {
    super::blocks::escape_mrkdwn(text)
}

fn cut(text: &str, max: usize) -> String {
    let (s, more) = crate::model::cut(text, max);
    if more > 0 {
        format!("{s}…")
    } else {
        s
    }
}

fn button(text: &str, action: &str, value: String, style: Option<&str>) -> Value {
    let mut b = json!({
        "type": "button",
        "text": { "type": "plain_text", "text": text },
        "action_id": action,
        "value": value,
    });
    if let Some(s) = style {
        b["style"] = json!(s);
    }
    b
}

/// Who a name is in Slack text: a mention for user ids.
fn who(name: &str) -> String {
    if name.starts_with('U') || name.starts_with('W') {
        format!("<@{name}>")
    } else {
        esc(name)
    }
}

/// The blocks of one open gate (and its waiting calls).
fn gate_blocks(
    app: &App,
    s: &Session,
    g: &crate::model::OpenGate,
    now: chrono::DateTime<Utc>,
) -> Vec<Value> {
    let handle = g.handle();
    let mut text = format!(
        "*{}* · `{}`\n{}",
        esc(&s.workflow),
        esc(&g.id),
        esc(&cut(&g.prompt, 600))
    );
    if g.show_preview {
        let (preview, _) = g.preview();
        if !preview.trim().is_empty() {
            text.push_str(&format!(
                "\n>{}",
                esc(&cut(&preview, 400)).replace('\n', "\n>")
            ));
        }
    }
    let mut facts = vec![
        format!("started by {}", who(&s.started_by)),
        format!(
            "waiting {}",
            crate::hub::durations::duration((now - g.opened_at).num_seconds().max(0))
        ),
    ];
    let business = crate::hub::durations::business_deadline(g.hours.as_ref(), g.timeout_at, now);
    if let (Some(_), Some(words)) = (g.timeout_at, &business) {
        facts.push(format!(
            "times out {}",
            crate::slack::blocks::escape_mrkdwn(words)
        ));
    } else if let Some(t) = g.timeout_at {
        facts.push(format!(
            "times out <!date^{}^{{date_short_pretty}} at {{time}}|{}>",
            t.timestamp(),
            t.format("%Y-%m-%d %H:%M UTC")
        ));
    }
    if let Some(r) = &g.rule {
        facts.push(crate::slack::blocks::escape_mrkdwn(&r.shown()));
    }
    if g.approvals_required > 1 {
        facts.push(format!(
            "{} of {} approvals",
            g.approvals.len(),
            g.approvals_required
        ));
    }
    let mut blocks = vec![
        json!({ "type": "section", "text": mrkdwn(text) }),
        json!({ "type": "context", "elements": [mrkdwn(facts.join(" · "))] }),
    ];
    let link = json!({
        "type": "button",
        "text": { "type": "plain_text", "text": "Open in browser" },
        "action_id": "strands_home_open",
        "url": crate::hub::pages::session(&app.hub.public_url, &s.id),
    });
    if g.kind == GateKind::ToolCall {
        for c in s
            .agent_turn
            .iter()
            .flat_map(|t| t.calls.iter())
            .filter(|c| c.state == crate::model::CallState::Waiting)
        {
            let args = cut(&c.call.arguments.to_string(), 300);
            blocks.push(json!({ "type": "section", "text": mrkdwn(format!("`{}` {}", esc(&c.call.name), esc(&args))) }));
            blocks.push(json!({ "type": "actions", "elements": [
                button("Approve", APPROVE, value(&s.id, &handle, Some(&c.call.id)), Some("primary")),
                button("Reject…", REJECT, value(&s.id, &handle, Some(&c.call.id)), Some("danger")),
            ]}));
        }
        blocks.push(json!({ "type": "actions", "elements": [link] }));
    } else {
        let mut row = vec![
            button(
                "Approve",
                APPROVE,
                value(&s.id, &handle, None),
                Some("primary"),
            ),
            button(
                "Reject…",
                REJECT,
                value(&s.id, &handle, None),
                Some("danger"),
            ),
        ];
        if g.kind == GateKind::ManualGate {
            row.push(button("Modify…", MODIFY, value(&s.id, &handle, None), None));
        }
        row.push(link);
        blocks.push(json!({ "type": "actions", "elements": row }));
    }
    blocks.push(json!({ "type": "divider" }));
    blocks
}

/// What every tab is built from, read once per round of publishing: the
/// group ids open gates list, the most recent runs, and the paused runs
/// some tab of this round looked at (each loaded once per round).
pub struct Snapshot {
    groups: Vec<String>,
    recent: Vec<Session>,
    paused: Mutex<HashMap<String, Option<Arc<Session>>>>,
}

impl Snapshot {
    pub async fn read(app: &App) -> crate::Result<Snapshot> {
        let groups = app.hub.store.awaiting_groups().await?;
        let mut recent = Vec::new();
        // A page of the store's index, newest first, not a scan.
        for s in app.hub.store.list_page(None, None, RECENT).await? {
            if let Some(full) = app.hub.store.load(&s.id).await? {
                recent.push(full);
            }
        }
        Ok(Snapshot {
            groups,
            recent,
            paused: Mutex::new(HashMap::new()),
        })
    }

    /// Paused run `id`, loaded the first time a tab of this round asks.
    async fn session(&self, app: &App, id: &str) -> crate::Result<Option<Arc<Session>>> {
        if let Some(s) = self
            .paused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
        {
            return Ok(s.clone());
        }
        let s = app.hub.store.load(id).await?.map(Arc::new);
        self.paused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), s.clone());
        Ok(s)
    }
}

/// The user's home tab.
pub async fn view(
    app: &App,
    user: &str,
    flash: Option<&str>,
    snap: &Snapshot,
) -> crate::Result<Value> {
    let now = app.hub.clock.now();
    let mut blocks = vec![
        json!({ "type": "header", "text": { "type": "plain_text", "text": "Waiting for you" } }),
    ];
    if let Some(f) = flash {
        // Written by the bot (mentions included), never by a user alone.
        blocks.push(json!({ "type": "context", "elements": [mrkdwn(cut(f, 2000))] }));
    }
    // Only the runs whose open gates list this user, a group of theirs or
    // nobody (the store's index by approver); the intake still judges each.
    let groups = member_groups(app, &snap.groups, user).await;
    let mut waiting: Vec<(Arc<Session>, String)> = Vec::new();
    for id in crate::hub::inbox::candidates(&app.hub, user, &groups, None).await? {
        let Some(s) = snap.session(app, &id).await? else {
            continue;
        };
        if s.status != Status::Paused {
            continue;
        }
        for g in s.open_gates() {
            let h = g.handle();
            if may_answer(app, &s, &h, Decision::Reject { reason: None }, user)
                .await
                .is_ok()
            {
                waiting.push((Arc::clone(&s), h));
            }
        }
    }
    waiting.sort_by(|a, b| {
        let at = |x: &(Arc<Session>, String)| x.0.open_gate(&x.1).map(|g| g.opened_at);
        // Ties: the newer run first, as the paused runs are listed.
        at(b)
            .cmp(&at(a))
            .then_with(|| b.0.created_at.cmp(&a.0.created_at))
            .then_with(|| a.0.id.cmp(&b.0.id))
    });
    // The runs this user started (newest first), for the tail.
    let mine: Vec<&Session> = snap
        .recent
        .iter()
        .filter(|s| s.started_by == user)
        .take(10)
        .collect();
    // Room for the tail: header + section + "more" context.
    let tail = if mine.is_empty() { 1 } else { 3 };
    // Room for the "all at once" buttons too.
    let mut shown = 0;
    let mut batch: Vec<String> = Vec::new();
    let at = blocks.len();
    for (s, h) in &waiting {
        let Some(g) = s.open_gate(h) else { continue };
        let more = gate_blocks(app, s, g, now);
        if blocks.len() + more.len() + tail + 2 > MAX_BLOCKS {
            break;
        }
        blocks.extend(more);
        shown += 1;
        // Gates one answer decides (not tool calls: each call is its own).
        let routine = g.kind != GateKind::ToolCall
            && crate::hub::batch::left_out(s, g, &Decision::Approve).is_none();
        let v = value(&s.id, h, None);
        if routine && batch.iter().map(|b| b.len() + 1).sum::<usize>() + v.len() <= MAX_VALUE {
            batch.push(v);
        }
    }
    if batch.len() > 1 {
        blocks.insert(at, all_at_once(&batch));
    }
    if waiting.is_empty() {
        blocks.push(json!({ "type": "section", "text": mrkdwn("Nothing waits for you.") }));
    } else if shown < waiting.len() {
        blocks.push(json!({ "type": "context", "elements": [mrkdwn(format!(
            "…and {} more waiting; the web inbox lists them all: {}",
            waiting.len() - shown,
            crate::hub::pages::inbox(&app.hub.public_url)
        ))] }));
    }
    if !mine.is_empty() {
        blocks.push(json!({ "type": "header", "text": { "type": "plain_text", "text": "Runs you started" } }));
        let lines: Vec<String> = mine
            .iter()
            .map(|s| {
                format!(
                    "• <{}|{}> `{}` — {}",
                    crate::hub::pages::session(&app.hub.public_url, &s.id),
                    esc(&s.workflow),
                    &s.id[..s.id.len().min(8)],
                    s.status
                )
            })
            .collect();
        blocks.push(json!({ "type": "section", "text": mrkdwn(lines.join("\n")) }));
    }
    Ok(json!({ "type": "home", "blocks": blocks }))
}

/// Publishes `user`'s home tab (and keeps it up to date for a day).
pub async fn publish(app: &App, user: &str, flash: Option<&str>) {
    app.home.seen(user);
    match Snapshot::read(app).await {
        Ok(snap) => publish_from(app, user, flash, &snap).await,
        Err(e) => tracing::error!("reading the runs for a home tab failed: {e}"),
    }
}

async fn publish_from(app: &App, user: &str, flash: Option<&str>, snap: &Snapshot) {
    let view = match view(app, user, flash, snap).await {
        Ok(v) => v,
        Err(e) => {
            tracing::error!("building the home tab failed: {e}");
            return;
        }
    };
    if let Err(e) = super::blocks::check_home(&view) {
        tracing::error!("the home tab breaks Block Kit limits: {e}");
        return;
    }
    if let Err(e) = app.api.views_publish(user, view).await {
        tracing::warn!("views.publish failed: {e}");
    }
}

/// An `app_home_opened` event (the home tab, not the messages tab).
pub fn opened(app: &App, event: &Value) {
    let inner = event.get("event").unwrap_or(event);
    if inner
        .get("tab")
        .and_then(Value::as_str)
        .is_some_and(|t| t != "home")
    {
        return;
    }
    let Some(user) = inner
        .get("user")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    let app2 = app.clone();
    app.tasks()
        .spawn(async move { publish(&app2, &user, None).await });
}

/// Re-publishes the tabs of recent viewers whenever a gate opens, is
/// answered or times out, or a run ends — anywhere (Slack, web, API, CLI).
/// A burst of events makes one round: the runs are read once, then each
/// viewer's tab is built from them.
pub fn watch(app: &App) {
    use futures_util::{FutureExt, StreamExt};
    let app = app.clone();
    tokio::spawn(async move {
        let after = app.hub.store.last_event().await.unwrap_or(0);
        let events = crate::hub::follow::follow_all(app.hub.clone(), after);
        futures_util::pin_mut!(events);
        while let Some(e) = events.next().await {
            if !crate::hub::follow::changes_waiting(&e) {
                continue;
            }
            // Let the burst settle, and take in what else arrived meanwhile.
            tokio::time::sleep(Duration::from_millis(200)).await;
            while let Some(Some(_)) = events.next().now_or_never() {}
            let viewers = app.home.all();
            if viewers.is_empty() {
                continue;
            }
            let snap = match Snapshot::read(&app).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("reading the runs for home tabs failed: {e}");
                    continue;
                }
            };
            for user in viewers {
                publish_from(&app, &user, None, &snap).await;
            }
        }
    });
}

fn answer(decision: Decision, user: &str, call: Option<String>, at: DateTime<Utc>) -> Answer {
    Answer {
        decision,
        by: user.to_string(),
        at,
        via: "slack".into(),
        vars: Default::default(),
        call,
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    }
}

async fn decide(
    app: &App,
    user: &str,
    session: &str,
    gate: &str,
    a: Answer,
) -> Result<String, String> {
    let s = match app.hub.store.load(session).await {
        Ok(Some(s)) => s,
        Ok(None) => return Err("that run no longer exists".into()),
        Err(e) => return Err(e.to_string()),
    };
    let verb = a.decision.verb();
    match take(app, &s, gate, &a).await {
        Ok(Ok(Accepted::Counted(_))) => Ok(format!(
            "Your answer to {} · {} is counted; more are needed.",
            s.workflow, gate
        )),
        Ok(Ok(_)) => Ok(format!(
            "✓ {} {} · {} ({verb}).",
            who(user),
            s.workflow,
            gate
        )),
        Ok(Err(r)) => Err(refusal(&r)),
        Err(e) => Err(e.to_string()),
    }
}

/// "Approve all N" (after a confirmation) and "Reject all N…" (a modal
/// with one reason) for the routine gates the tab shows: each answered
/// and audited on its own ([`crate::hub::batch`]).
fn all_at_once(batch: &[String]) -> Value {
    let n = batch.len();
    let v = batch.join(",");
    let mut approve = button(
        &format!("Approve all {n}"),
        APPROVE_ALL,
        v.clone(),
        Some("primary"),
    );
    approve["confirm"] = json!({
        "title": { "type": "plain_text", "text": "Approve them all?" },
        "text": mrkdwn(format!("Each of the {n} gates gets your approval, recorded and audited on its own.")),
        "confirm": { "type": "plain_text", "text": format!("Approve {n}") },
        "deny": { "type": "plain_text", "text": "Cancel" },
    });
    json!({
        "type": "actions",
        "block_id": "strands_home_all",
        "elements": [approve, button(&format!("Reject all {n}…"), REJECT_ALL, v, Some("danger"))],
    })
}

/// The gates an "all at once" button names (`session|handle,…`).
fn batch_items(v: &str) -> Vec<crate::hub::batch::Item> {
    v.split(',')
        .filter_map(parse_value)
        .map(|(session, gate, _)| crate::hub::batch::Item {
            session,
            gate: Some(gate),
        })
        .collect()
}

/// Decides every gate of `items` as `user`, then re-publishes the tab
/// with what became of them.
async fn decide_all(
    app: &App,
    user: &str,
    items: &[crate::hub::batch::Item],
    decision: Decision,
) -> String {
    // The Slack user groups count as for one click: those of the gates'
    // approvers the user is in.
    let mut groups = std::collections::BTreeSet::new();
    for item in items {
        if let (Ok(Some(s)), Some(g)) = (app.hub.store.load(&item.session).await, &item.gate) {
            groups.extend(super::access::groups_of(app, &s, g, user).await);
        }
    }
    let how = crate::hub::door::DoorAnswer::new("", user, crate::hub::door::Door::Slack, decision)
        .member_of(groups);
    match crate::hub::batch::decide(&app.hub, &how, items, true).await {
        Ok(outcomes) => {
            let done = outcomes.iter().filter(|o| o.recorded()).count();
            let mut lines = vec![format!(
                "✓ {} answered {done} of {}.",
                who(user),
                outcomes.len()
            )];
            lines.extend(outcomes.iter().filter(|o| !o.recorded()).map(|o| {
                format!(
                    "• `{}` {}: {}",
                    &o.session[..o.session.len().min(8)],
                    o.gate.as_deref().unwrap_or(""),
                    esc(&o.message)
                )
            }));
            lines.join("\n")
        }
        Err(e) => e.to_string(),
    }
}

fn modal(callback: &str, meta: &Meta, title: &str, label: &str, required: bool) -> Value {
    json!({
        "type": "modal",
        "callback_id": callback,
        "private_metadata": serde_json::to_string(meta).unwrap_or_default(),
        "title": { "type": "plain_text", "text": title },
        "submit": { "type": "plain_text", "text": "Send" },
        "close": { "type": "plain_text", "text": "Cancel" },
        "blocks": [{
            "type": "input",
            "block_id": "text",
            "optional": !required,
            "label": { "type": "plain_text", "text": label },
            "element": { "type": "plain_text_input", "action_id": "text", "multiline": true, "max_length": 3000 },
        }],
    })
}

/// A home-tab button: Approve decides at once; Reject and Modify open a
/// modal (after the same authorization a decision gets).
pub async fn action(app: &App, user: &str, action_id: &str, value: &str, trigger: &str) -> Reply {
    if action_id == APPROVE_ALL {
        let (app2, user2, items) = (app.clone(), user.to_string(), batch_items(value));
        app.tasks().spawn(async move {
            let flash = decide_all(&app2, &user2, &items, Decision::Approve).await;
            publish(&app2, &user2, Some(&flash)).await;
        });
        return Reply::Ack;
    }
    if action_id == REJECT_ALL {
        let view = json!({
            "type": "modal",
            "callback_id": REJECT_ALL_MODAL,
            "private_metadata": cut(value, 3000),
            "title": { "type": "plain_text", "text": "Reject them all" },
            "submit": { "type": "plain_text", "text": "Reject all" },
            "close": { "type": "plain_text", "text": "Cancel" },
            "blocks": [{
                "type": "input",
                "block_id": "text",
                "optional": true,
                "label": { "type": "plain_text", "text": format!("One reason for all {} (a gate that requires one refuses without)", batch_items(value).len()) },
                "element": { "type": "plain_text_input", "action_id": "text", "multiline": true, "max_length": 3000 },
            }],
        });
        if let Err(e) = app.api.views_open(trigger, view).await {
            tracing::warn!("could not open the home modal: {e}");
        }
        return Reply::Ack;
    }
    let Some((session, gate, call)) = parse_value(value) else {
        return Reply::Ack;
    };
    let (app2, user2) = (app.clone(), user.to_string());
    if action_id == APPROVE {
        app.tasks().spawn(async move {
            let flash = match words::decision("approve", None, None, None) {
                Ok(approve) => {
                    let a = answer(approve, &user2, call, app2.hub.clock.now());
                    match decide(&app2, &user2, &session, &gate, a).await {
                        Ok(m) | Err(m) => m,
                    }
                }
                Err(why) => why,
            };
            publish(&app2, &user2, Some(&flash)).await;
        });
        return Reply::Ack;
    }
    let decision = if action_id == MODIFY {
        Decision::Modify {
            feedback: String::new(),
        }
    } else {
        Decision::Reject { reason: None }
    };
    let s = match app.hub.store.load(&session).await {
        Ok(Some(s)) => s,
        _ => return Reply::Ack,
    };
    if let Err(why) = may_answer(app, &s, &gate, decision, user).await {
        app.tasks()
            .spawn(async move { publish(&app2, &user2, Some(&why)).await });
        return Reply::Ack;
    }
    let required = action_id == MODIFY
        || (call.is_none() && s.open_gate(&gate).is_some_and(|g| g.require_reason));
    let meta = Meta {
        session,
        gate,
        call,
    };
    let view = if action_id == MODIFY {
        modal(
            MODIFY_MODAL,
            &meta,
            "Ask for changes",
            "Feedback for the step",
            true,
        )
    } else {
        modal(
            REJECT_MODAL,
            &meta,
            "Reject",
            if required {
                "Reason (required)"
            } else {
                "Reason (optional)"
            },
            required,
        )
    };
    if let Err(e) = app.api.views_open(trigger, view).await {
        tracing::warn!("could not open the home modal: {e}");
    }
    Reply::Ack
}

/// A home-tab modal's submission: decided like a click; a refusal keeps
/// the modal open with the reason.
pub async fn submission(
    app: &App,
    user: &str,
    callback: &str,
    metadata: &str,
    text: Option<String>,
) -> Reply {
    let text = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    if callback == REJECT_ALL_MODAL {
        let (app2, user2, items) = (app.clone(), user.to_string(), batch_items(metadata));
        app.tasks().spawn(async move {
            let flash = decide_all(&app2, &user2, &items, Decision::Reject { reason: text }).await;
            publish(&app2, &user2, Some(&flash)).await;
        });
        return Reply::Ack;
    }
    let Ok(meta) = serde_json::from_str::<Meta>(metadata) else {
        return Reply::Ack;
    };
    let decision = match (callback == MODIFY_MODAL, text) {
        (true, None) => return errors("feedback is needed"),
        (true, feedback) => words::decision("modify", feedback, None, None),
        (false, reason) => words::decision("reject", reason, None, None),
    };
    let decision = match decision {
        Ok(d) => d,
        Err(why) => return errors(&why),
    };
    let a = answer(decision, user, meta.call.clone(), app.hub.clock.now());
    match decide(app, user, &meta.session, &meta.gate, a).await {
        Ok(m) => {
            let (app2, user2) = (app.clone(), user.to_string());
            app.tasks()
                .spawn(async move { publish(&app2, &user2, Some(&m)).await });
            Reply::Ack
        }
        Err(why) => errors(&why),
    }
}

fn errors(why: &str) -> Reply {
    Reply::Body(json!({ "response_action": "errors", "errors": { "text": cut(why, 1000) } }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_the_run_the_gate_and_the_call() {
        assert_eq!(
            parse_value("s-1|review#1"),
            Some(("s-1".into(), "review#1".into(), None))
        );
        assert_eq!(
            parse_value(&value("s-1", "tools#2", Some("call_9"))),
            Some(("s-1".into(), "tools#2".into(), Some("call_9".into())))
        );
        assert_eq!(parse_value("nothing"), None);
        assert_eq!(esc("<@U1> & <!here>"), "&lt;@U1&gt; &amp; &lt;!here&gt;");
    }
}
