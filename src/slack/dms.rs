//! Approver DMs (`notify: dm` on a gate): besides the approval message in
//! the channel, each approver the gate names by Slack user id gets the
//! request as a direct message (`conversations.open`, then
//! `chat.postMessage`), with the same working buttons. The copies are
//! recorded with the channel's message ([`crate::model::Notification`]'s
//! `copies`) and indexed like it, so a click on any copy finds the gate,
//! and every copy is updated when anyone decides or the gate times out
//! ([`super::asked::asking_messages`], [`super::timers`]).
//!
//! User groups among the approvers get no DM (they are mentioned in the
//! channel's message); progress stays in the channel message's thread.
//! While an approver has delegated ([`crate::model::person::delegation`]),
//! their copy goes to their delegate ([`crate::hub::recipients`]).

use serde_json::json;

use super::app::App;
use super::blocks::{check_message, escape_mrkdwn, ApprovalView};
use crate::model::{OpenGate, Session};

/// Sends gate `gate`'s request to each of its approvers named by user id.
/// Returns `(channel, ts)` of every copy posted, and the direct-message
/// channels announced to [`App::begin_posting`] (the caller ends them once
/// the copies are recorded). A copy that cannot be sent is logged and
/// skipped: the channel's message still asks.
pub(super) async fn post(
    app: &App,
    session: &Session,
    gate: &OpenGate,
    channel: &str,
) -> (Vec<(String, String)>, Vec<String>) {
    // The hub's recipients: a person away is replaced by their delegate.
    let people = match app.hub.fresh_people().await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!("could not read the people directory: {e}");
            app.hub.people()
        }
    };
    let to = crate::hub::recipients::dm_recipients(gate, &people, app.hub.clock.now());
    let users: Vec<(&str, Option<&str>)> = to
        .iter()
        .filter_map(|(id, whom)| id.slack_user().map(|u| (u, whom.as_deref())))
        .collect();
    if users.is_empty() {
        tracing::warn!(session = %session.id, gate = %gate.handle(), "notify: dm, but no approver is named by Slack user id");
        return (Vec::new(), Vec::new());
    }
    let view = ApprovalView::of(gate, session);
    let approval = match app.templates.approval(&view) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(session = %session.id, "cannot render the approval message: {e}");
            return (Vec::new(), Vec::new());
        }
    };
    // A channel id links; a name is shown as text.
    let id = channel.len() > 1
        && channel
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let place = if id {
        format!("<#{channel}>")
    } else {
        format!("#{}", escape_mrkdwn(&crate::model::cut(channel, 200).0))
    };
    // A delegate is told whom they answer for.
    let blocks_for = |whom: Option<&str>| {
        let who = match whom {
            Some(p) => format!(
                "You answer for {} (a delegation) at",
                escape_mrkdwn(&crate::model::cut(p, 64).0)
            ),
            None => "You are an approver of".to_string(),
        };
        let head = format!(
            "📨 {who} gate `{}` of `{}`. The request is also in {place}; deciding here decides there.",
            escape_mrkdwn(&crate::model::cut(&gate.id, 200).0),
            escape_mrkdwn(&crate::model::cut(&session.workflow, 200).0),
        );
        let mut blocks =
            vec![json!({"type": "context", "elements": [{"type": "mrkdwn", "text": head}]})];
        blocks.extend(approval.iter().cloned());
        blocks
    };
    if let Err(e) = check_message(&blocks_for(Some(&"x".repeat(64)))) {
        tracing::error!(session = %session.id, "the direct request breaks Block Kit limits: {e:?}");
        return (Vec::new(), Vec::new());
    }
    let text = format!(
        "Approval needed (you are an approver): {} / {}",
        session.workflow, gate.id
    );
    let mut copies = Vec::new();
    let mut places = Vec::new();
    for (user, whom) in users {
        let blocks = blocks_for(whom);
        let dm = match app.api.open_dm(user).await {
            Ok(dm) => dm,
            Err(e) => {
                tracing::warn!(session = %session.id, user, "no direct message channel: {e}");
                continue;
            }
        };
        // A click can come before the copy is recorded: let it wait.
        app.begin_posting(&dm);
        places.push(dm.clone());
        match app.api.post_message_in(&dm, &text, blocks).await {
            Ok(copy) => copies.push(copy),
            Err(e) => {
                tracing::warn!(session = %session.id, user, "direct request not posted: {e}")
            }
        }
    }
    (copies, places)
}
