//! How Slack names people, groups and refusals: a Slack user as a mention
//! (`<@U…>`, which Slack shows as the person), a Slack user group as
//! `<!subteam^S…>`, anyone else by the text they are known by. Who is
//! which kind is [`crate::model::identity`]'s to say; this is only Slack's
//! way of showing it (the other doors show the plain text).

use crate::model::{Approver, Refusal};

/// `who` (an identity as answers record it) in a Slack message.
pub fn who(id: &str) -> String {
    approver(&Approver::parse(id))
}

/// An approver in a Slack message.
pub fn approver(a: &Approver) -> String {
    match a {
        Approver::SlackUser(u) => format!("<@{u}>"),
        Approver::SlackGroup(g) => format!("<!subteam^{g}>"),
        other => other.to_string(),
    }
}

/// Approvers in a Slack message, separated by `sep`.
pub fn approvers(list: &[Approver], sep: &str) -> String {
    list.iter().map(approver).collect::<Vec<_>>().join(sep)
}

/// An escalation's target in a Slack message: people and groups as
/// mentions, a Slack channel as a link (`<#C…>`) or its `#name`, anything
/// of another room as written.
pub fn target(t: &crate::spec::EscalationTarget) -> String {
    use crate::model::Place;
    use crate::spec::EscalationTarget;
    match t {
        EscalationTarget::User(a) | EscalationTarget::Group(a) => approver(a),
        EscalationTarget::Channel(Place::Slack(c)) if crate::spec::looks_like_channel_id(c) => {
            format!("<#{c}>")
        }
        EscalationTarget::Channel(Place::Slack(c)) => format!("#{c}"),
        EscalationTarget::Channel(other) => other.to_string(),
    }
}

/// What a refused click or command is told: the hub's words
/// ([`crate::hub::answers::refusal_text`]), with people and groups as
/// mentions.
pub fn refusal(r: &Refusal) -> String {
    match r {
        Refusal::NotApprover(list) => format!(
            "you are not an approver for this gate (approvers: {})",
            approvers(list, ", ")
        ),
        Refusal::AlreadyAnswered(a) => format!(
            "already {} by {} at {}",
            a.decision.verb(),
            who(&a.by),
            a.at.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        other => crate::hub::answers::refusal_text(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_ids_are_mentions_and_everyone_else_plain_text() {
        assert_eq!(who("U04ALICE"), "<@U04ALICE>");
        assert_eq!(who("alice"), "alice");
        assert_eq!(approver(&Approver::parse("S0SRE1")), "<!subteam^S0SRE1>");
        assert_eq!(approver(&Approver::parse("group:sre")), "group:sre");
        let r = Refusal::NotApprover(vec![Approver::parse("U04A"), Approver::parse("S0B1")]);
        assert_eq!(
            refusal(&r),
            "you are not an approver for this gate (approvers: <@U04A>, <!subteam^S0B1>)"
        );
        assert!(r.to_string().ends_with("(approvers: U04A, S0B1)"));
    }
}
