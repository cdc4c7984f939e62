//! Who may answer a gate in Slack: the user groups a person belongs to
//! (resolved through `usergroups.users.list`, cached in [`App`]; an
//! unresolvable group admits nobody), and the intake's own approver rules
//! asked ahead — before a modal opens, a full output shows, or a gate is
//! listed on someone's home tab. The intake judges again when the answer
//! comes ([`super::decide`]); this only spares someone a form they may not
//! send.

use std::collections::BTreeSet;

use super::app::App;
use crate::model::Session;

/// The groups among `groups` that `user` belongs to (resolved like
/// [`groups_of`], cached; an unresolvable group admits nobody).
pub(crate) async fn member_groups(app: &App, groups: &[String], user: &str) -> Vec<String> {
    let mut out = Vec::new();
    let groups = groups.iter().map(|g| crate::model::Approver::parse(g));
    for group in groups.filter_map(|a| a.slack_group().map(str::to_string)) {
        match app.group_members(&group).await {
            Ok(m) if m.contains(user) => out.push(group.clone()),
            Ok(_) => {}
            Err(e) => tracing::warn!(group, "could not resolve a user group: {e}"),
        }
    }
    out
}

/// The user groups among gate `handle`'s approvers (or the bot's
/// default approvers) that `user` belongs to, resolved through
/// `usergroups.users.list` (cached). An unresolvable group admits
/// nobody (fail closed).
pub(crate) async fn groups_of(
    app: &App,
    session: &Session,
    handle: &str,
    user: &str,
) -> BTreeSet<String> {
    let Some(gate) = session.open_gate(handle) else {
        return BTreeSet::new();
    };
    let approvers = if gate.approvers.is_empty() {
        &app.hub.settings.default_approvers
    } else {
        &gate.approvers
    };
    let mut groups = BTreeSet::new();
    for group in approvers.iter().filter_map(|a| a.slack_group()) {
        match app.group_members(group).await {
            Ok(m) if m.contains(user) => {
                groups.insert(group.to_string());
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(group, "could not resolve a user group: {e}"),
        }
    }
    groups
}

/// Whether `user` may answer gate `handle` with a decision like
/// `decision`: the intake's own rules, asked before a modal opens.
pub(crate) async fn may_answer(
    app: &App,
    session: &Session,
    handle: &str,
    decision: crate::model::Decision,
    user: &str,
) -> std::result::Result<(), String> {
    let groups = groups_of(app, session, handle, user).await;
    app.hub
        .may_answer(session, handle, &decision, user, &groups)
        .await
        .map_err(|r| super::words::refusal(&r))
}
