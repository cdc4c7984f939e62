//! Who gets mail about a gate: the one place that turns a gate's
//! approvers into addresses, for the e-mail room (`crate::email`).
//!
//! - An approver named by an e-mail address (`approvers:
//!   [carol@corp.example]`) has no other channel: mailed whether or not the
//!   gate says `notify: email`.
//! - A person of the directory ([`crate::model::person`]) named as an
//!   approver by name or by any identity (`alice`, `U04ALICE`,
//!   `teams:<aad>`), or through `group:NAME`, who has an address: mailed
//!   when the gate says `notify: email`, or when mail is the only way to
//!   reach them (no Slack id, no Teams id).
//! - Anyone else (a Slack group, an unknown chat id) is not mailed.

use crate::model::person::{Directory, Person};
use crate::model::OpenGate;

/// The addresses to mail about `gate`, each once (lower-cased), in the
/// order its approvers are named.
pub fn emails_for(gate: &OpenGate, people: &Directory) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |addr: String| {
        if !out.contains(&addr) {
            out.push(addr);
        }
    };
    let mailed = |p: &Person| {
        let only_mail = p.slack.is_none() && p.teams.is_none();
        p.email
            .as_deref()
            .filter(|_| gate.notify_email || only_mail)
            .and_then(address)
    };
    for a in &gate.approvers {
        if let Some(addr) = address(a) {
            add(addr);
        } else if let Some(group) = a.strip_prefix("group:") {
            people
                .people()
                .iter()
                .filter(|p| p.in_group(group))
                .filter_map(mailed)
                .for_each(&mut add);
        } else if let Some(addr) = people.person_of(a).and_then(mailed) {
            add(addr);
        }
    }
    out
}

pub use crate::model::mail::address;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_people_are_mailed_when_the_gate_says_so_or_mail_is_all_they_have() {
        let person = |name: &str, slack: Option<&str>, email: &str, group: &str| Person {
            name: name.into(),
            slack: slack.map(str::to_string),
            email: Some(email.into()),
            groups: vec![group.into()],
            ..Person::default()
        };
        let people = Directory::new(vec![
            person("alice", Some("U04ALICE"), "alice@corp.example", "finance"),
            person("bob", None, "bob@corp.example", "finance"),
            person("cy", Some("U04CY"), "cy@corp.example", "ops"),
        ])
        .expect("a directory");
        let mut gate = crate::model::OpenGate::for_tests("review");
        gate.approvers = vec![
            "U04ALICE".into(),
            "group:finance".into(),
            "carol@corp.example".into(),
            "S0LEADS".into(),
        ];
        gate.notify_email = false;
        // Alice has Slack: only mailed with `notify: email`; Bob has mail
        // alone; Carol is an address; a Slack group is not mailed.
        assert_eq!(
            emails_for(&gate, &people),
            ["bob@corp.example", "carol@corp.example"]
        );
        gate.notify_email = true;
        assert_eq!(
            emails_for(&gate, &people),
            [
                "alice@corp.example",
                "bob@corp.example",
                "carol@corp.example"
            ]
        );
        assert!(
            emails_for(&gate, &Directory::default()).contains(&"carol@corp.example".to_string())
        );
    }

    #[test]
    fn only_addresses_are_mailed() {
        assert_eq!(
            address("Carol@Corp.Example").as_deref(),
            Some("carol@corp.example")
        );
        assert_eq!(
            address("mailto:a.b+x@x-y.example").as_deref(),
            Some("a.b+x@x-y.example")
        );
        for not in [
            "U0ALICE1",
            "teams:aad-1",
            "alice",
            "@ops",
            "a@localhost",
            "a b@x.example",
            "a@x.example>",
            "\"a\"@x.example",
            "a@x..example",
            "a@x.example\r\nBcc: e@vil.example",
        ] {
            assert_eq!(address(not), None, "{not}");
        }
    }
}
