//! Which Slack messages asked for a gate, read from the store's records:
//! the approval message, its direct copies to approvers (`notify: dm`) and
//! its escalated copies. Asking ([`super::post`]), showing an answer
//! ([`super::update`]) and the timers ([`super::timers`]) all look here, so
//! none of them needs another for it. Cards another room posted (Teams) are
//! that room's: nothing here returns them.

use std::collections::HashSet;

use super::app::App;
use crate::model::Notification;

/// Whether the Slack message asking for gate `handle` was posted (a card
/// another room posted does not count).
pub fn posted(notes: &[Notification], handle: &str) -> bool {
    notes.iter().any(|n| {
        n.gate == handle
            && n.ts.is_some()
            && crate::model::Place::parse(&n.channel).slack().is_some()
    })
}

/// The Slack message that asked for gate `handle` of session `id`, if any
/// (a Teams card for the same gate is the Teams room's).
pub async fn note_for(app: &App, id: &str, handle: &str) -> Option<crate::model::Notification> {
    app.hub
        .store
        .notifications(id)
        .await
        .ok()?
        .into_iter()
        .find(|n| n.gate == handle && crate::model::Place::parse(&n.channel).slack().is_some())
}

/// Every message that asks for gate `handle` of session `id`, `first`
/// first: the approval message, its direct copies to approvers
/// (`notify: dm`) and its escalated copies, each once.
pub(super) async fn asking_messages(
    app: &App,
    id: &str,
    handle: &str,
    first: Option<(&str, &str)>,
) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = first
        .map(|(c, ts)| (c.to_string(), ts.to_string()))
        .into_iter()
        .collect();
    if let Some(n) = note_for(app, id, handle).await {
        all.extend(n.ts.clone().map(|ts| (n.channel.clone(), ts)));
        all.extend(n.copies);
    }
    if let Ok(Some(esc)) = app.hub.store.escalation(id, handle).await {
        all.extend(esc.messages);
    }
    let mut seen = HashSet::new();
    // Another room's copies (Teams cards) are that room's to update.
    all.retain(|m| crate::model::Place::parse(&m.0).slack().is_some() && seen.insert(m.clone()));
    all
}

#[cfg(test)]
mod place_tests {
    use super::posted;
    use crate::model::Notification;

    fn note(channel: &str, ts: Option<&str>) -> Notification {
        Notification {
            gate: "review#1".into(),
            channel: channel.into(),
            ts: ts.map(str::to_string),
            thread_ts: None,
            at: crate::clock::test_epoch(),
            error: None,
            copies: Vec::new(),
        }
    }

    #[test]
    fn a_card_another_room_posted_is_not_slacks_message() {
        assert!(!posted(
            &[note("teams:19:a@thread.tacv2", Some("1:card"))],
            "review#1"
        ));
        assert!(posted(&[note("C0123456789", Some("1700.1"))], "review#1"));
        assert!(!posted(&[note("C0123456789", None)], "review#1"));
    }
}
