//! The personal inbox, Teams' App Home: `inbox` (or `pending`; any case)
//! written to the bot in a 1:1 chat answers with a card of the gates the
//! writer may answer now, across runs ([`card::inbox`]), listed by the one
//! query the web inbox and Slack's App Home use
//! ([`crate::hub::inbox::waiting_for`]) for `teams:<from.aadObjectId>` —
//! the people directory ties that to a person, as for every answer. In a
//! channel or a group chat the list would show to everyone: the bot says
//! to ask in a 1:1 chat instead.
//!
//! The card's `bulk_approve` and `bulk_reject` (`Action.Execute`; an
//! `Action.Submit` carrying the same verb is taken too, as for every card,
//! and updates the card in place) decide the selected gates through
//! the one batch rule ([`crate::hub::batch::decide`]): one answer per gate
//! through the hub's intake, `via: teams`, as the verified sender (never
//! the card's data); a gate that needs more than one answer (a quorum, a
//! passkey, a form, an MCP server's question) is left out saying why, and
//! what the intake refuses (not an approver, already decided) is said and
//! audited there. The answer is the card again: what became of each
//! selected gate, then what still waits. Nothing selected: the card says
//! so, and nothing changes.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::card::{self, inbox};
use super::commands::person;
use crate::error::Result;
use crate::hub::batch::{self, Item};
use crate::hub::door::{Door, DoorAnswer};
use crate::hub::Hub;
use crate::model::Decision;

/// What a personal chat's `inbox` is answered with elsewhere.
pub const PERSONAL_ONLY: &str =
    "Your inbox is personal: write `inbox` to me in a 1:1 chat and I will list what waits for you there.";

/// What the card says when a button was pressed with nothing selected.
pub const NOTHING_SELECTED: &str =
    "Nothing selected: tick the gates to decide, then press the button again. Nothing changed.";

/// Whether a command's text asks for the inbox: `inbox` or `pending`, in
/// any case.
pub fn asked(text: &str) -> bool {
    let t = text.trim();
    t.eq_ignore_ascii_case("inbox") || t.eq_ignore_ascii_case("pending")
}

/// Whether `verb` is one of the inbox card's buttons.
pub fn is_bulk(verb: &str) -> bool {
    verb == inbox::APPROVE || verb == inbox::REJECT
}

/// The activity answering `inbox` from `who` (`teams:<aad>`): the card in
/// a personal chat, else a word to ask there.
pub async fn reply(hub: &Hub, who: &str, personal: bool) -> Value {
    if !personal {
        return message(PERSONAL_ONLY);
    }
    match card_of(hub, who, &[], None).await {
        Ok(c) => card::activity(c),
        Err(e) => message(&format!("Could not read what waits for you: {e}")),
    }
}

fn message(text: &str) -> Value {
    json!({ "type": "message", "textFormat": "markdown", "text": text })
}

/// The inbox card of `who` as things stand, with what a bulk action did
/// (`done`) and a notice.
async fn card_of(
    hub: &Hub,
    who: &str,
    done: &[inbox::Done],
    notice: Option<&str>,
) -> Result<Value> {
    let waiting = crate::hub::inbox::waiting_for(hub, who, &[], None).await?;
    Ok(inbox::card_for(&inbox::Inbox {
        waiting: &waiting,
        done,
        notice,
        public_url: &hub.public_url,
    }))
}

/// A bulk button of the inbox card (`verb`, with the card's inputs in
/// `data`), from the verified `activity`: the card to answer with, or why
/// not (nothing was decided then).
pub async fn bulk(
    hub: &Hub,
    activity: &Value,
    verb: &str,
    data: &Value,
) -> std::result::Result<Value, String> {
    let who = activity
        .pointer("/from/aadObjectId")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
        .map(person)
        .ok_or("the action does not say who you are in Teams")?;
    let decision = match verb {
        inbox::APPROVE => Decision::Approve,
        inbox::REJECT => Decision::Reject {
            reason: data
                .get(inbox::REASON)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_string),
        },
        other => return Err(format!("`{other}` is not an answer this card offers")),
    };
    let failed = |e: crate::error::Error| format!("could not take the answers: {e}");
    let mut picks = inbox::picked(data);
    if picks.is_empty() {
        return card_of(hub, &who, &[], Some(NOTHING_SELECTED))
            .await
            .map_err(failed);
    }
    // The card offers at most this many; more is not a click.
    let notice = (picks.len() > inbox::MAX_ROWS).then(|| {
        format!(
            "Only the first {} selected were decided; nothing was done with the other {}.",
            inbox::MAX_ROWS,
            picks.len() - inbox::MAX_ROWS
        )
    });
    picks.truncate(inbox::MAX_ROWS);
    // The workflows of what was offered, to name the outcomes by.
    let workflows: HashMap<String, String> = crate::hub::inbox::waiting_for(hub, &who, &[], None)
        .await
        .map_err(failed)?
        .into_iter()
        .map(|w| (w.session, w.workflow))
        .collect();
    let items: Vec<Item> = picks
        .into_iter()
        .map(|(session, gate)| Item {
            session,
            gate: Some(gate),
        })
        .collect();
    // Teams has no user groups of its own: membership is never claimed.
    let how = DoorAnswer::new("", &who, Door::Teams, decision);
    let done: Vec<inbox::Done> = batch::decide(hub, &how, &items, true)
        .await
        .map_err(failed)?
        .into_iter()
        .map(|outcome| inbox::Done {
            workflow: workflows.get(&outcome.session).cloned(),
            outcome,
        })
        .collect();
    card_of(hub, &who, &done, notice.as_deref())
        .await
        .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbox_and_pending_in_any_case_ask_for_it() {
        for yes in ["inbox", "Inbox", " PENDING ", "pending"] {
            assert!(asked(yes), "{yes}");
        }
        for no in ["inbox please", "list", "", "in box"] {
            assert!(!asked(no), "{no}");
        }
        assert!(is_bulk("bulk_approve") && is_bulk("bulk_reject"));
        assert!(!is_bulk("approve_all"));
    }
}
