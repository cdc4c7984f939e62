//! The words and values several parts of the Slack room share: how a
//! person is mentioned, what a refused answer is told, and how a button's
//! value splits into its gate and tool call. Slack names a Slack user as a
//! mention (`<@U…>`, which Slack shows as the person), a user group as
//! `<!subteam^S…>`, anyone else by the text they are known by; who is
//! which kind is [`crate::model::identity`]'s to say. A leaf: it uses no other part
//! of the room, so the parts that say these things (clicks, modals,
//! commands, the home tab, timers, updated messages) need not use each
//! other for them.

use serde_json::{Map, Value};

use crate::hub::answers::AnswerRequest;
use crate::model::{Approver, Decision, Refusal};

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

/// The decision a Slack button or modal makes — `verb` (approve, reject,
/// modify, respond, edit, trust) with the text typed in its modal, the
/// edited arguments, or a form's values — read by the one parser every
/// door's answers go through ([`AnswerRequest::decision`]). `Err`: what the
/// person is told.
pub fn decision(
    verb: &str,
    text: Option<String>,
    args: Option<Value>,
    values: Option<Map<String, Value>>,
) -> Result<Decision, String> {
    let mut request = AnswerRequest::of(verb);
    match verb {
        "reject" => request.reason = text,
        "modify" => request.feedback = text,
        "respond" => request.response = text,
        _ => {}
    }
    request.args = args;
    request.values = values;
    request.decision().map_err(|p| p.message)
}

/// A trust answer within limits: approve, and allow the tool's calls for
/// `span` (`1h`, `run`), read by the same parser.
pub fn trust_for(span: &str) -> Result<Decision, String> {
    let mut request = AnswerRequest::of("trust");
    request.span = Some(span.into());
    request.decision().map_err(|p| p.message)
}

/// A button's value: a gate handle (`review#1`), or `handle|call id` on a
/// tool-approval message. A handle is `id#instance`, so the value splits at
/// the first `|` that follows `#digits`; gate ids with a `|` of their own
/// stay whole.
pub fn split_value(value: &str) -> (&str, Option<&str>) {
    for (i, _) in value.match_indices('|') {
        let head = &value[..i];
        let digits = head
            .rsplit_once('#')
            .map(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if digits == Some(true) {
            return (head, Some(&value[i + 1..]));
        }
    }
    (value, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_values_split_into_handle_and_call() {
        assert_eq!(split_value("review#1"), ("review#1", None));
        assert_eq!(split_value("tools#3|call_1"), ("tools#3", Some("call_1")));
        assert_eq!(split_value("tools#3|a|b"), ("tools#3", Some("a|b")));
        assert_eq!(split_value("tools#3|"), ("tools#3", Some("")));
        // A gate id with a `|` of its own stays whole.
        assert_eq!(split_value("a|b#2"), ("a|b#2", None));
        assert_eq!(split_value("a|b#2|c"), ("a|b#2", Some("c")));
        assert_eq!(split_value("x#|y"), ("x#|y", None));
        assert_eq!(split_value(""), ("", None));
    }

    #[test]
    fn buttons_and_modals_are_read_by_the_api_parser() {
        assert_eq!(decision("approve", None, None, None), Ok(Decision::Approve));
        assert_eq!(
            decision("trust", None, None, None),
            Ok(Decision::Trust { limit: None })
        );
        assert_eq!(
            decision("reject", Some(" ".into()), None, None),
            Ok(Decision::Reject { reason: None })
        );
        assert_eq!(
            decision("modify", Some("shorter".into()), None, None),
            Ok(Decision::Modify {
                feedback: "shorter".into()
            })
        );
        assert!(decision("modify", None, None, None)
            .is_err_and(|e| e.contains("`modify` needs a non-empty `feedback`")));
        assert!(decision("edit", None, Some(Value::from(3)), None)
            .is_err_and(|e| e.contains("JSON object")));
        let mut values = Map::new();
        values.insert("amount".into(), Value::from("12"));
        assert_eq!(
            decision("approve", None, None, Some(values.clone())),
            Ok(Decision::Fill { values })
        );
    }

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
