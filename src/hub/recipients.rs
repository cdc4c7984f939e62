//! Who is asked about a gate besides its channel: the one place that
//! turns a gate's approvers into people to write to — mail for the e-mail
//! room (`crate::email`), direct copies for Slack and Teams (`notify: dm`).
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
//! - **Delegation.** A person named directly (not through a group) whose
//!   delegation is in force at `now` is not written to: their stand-in is
//!   ([`Directory::stand_in`]), by the same rules (mail) or on the same
//!   channel (direct copies).

use chrono::{DateTime, Utc};

use crate::model::person::{Directory, Person};
use crate::model::{Approver, OpenGate};

/// Who gets a direct copy of `gate` at `now`: its approvers as named, but
/// a person with a delegate in force is replaced by their stand-in, named
/// on the same channel (a Slack id by the stand-in's Slack id,
/// `teams:<aad>` by their Teams id; a person named by name or address by
/// both). Each once, in order; each room takes the ids it can write to.
pub fn dm_approvers(gate: &OpenGate, people: &Directory, now: DateTime<Utc>) -> Vec<Approver> {
    dm_recipients(gate, people, now)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// [`dm_approvers`], each with the person they stand in for (`None`: an
/// approver in their own right), so a copy can say "you answer for alice".
pub fn dm_recipients(
    gate: &OpenGate,
    people: &Directory,
    now: DateTime<Utc>,
) -> Vec<(Approver, Option<String>)> {
    let mut out: Vec<(Approver, Option<String>)> = Vec::new();
    for a in &gate.approvers {
        let text = a.text();
        let away = people.person_of(&text);
        let stand_in = away
            .map(|p| people.stand_in(p, now))
            .filter(|s| !people.same(&s.name, &text));
        let ids: Vec<Approver> = match stand_in {
            None => vec![a.clone()],
            Some(s) => {
                let slack = s.slack.clone().map(Approver::SlackUser);
                let teams = s.teams.clone().map(Approver::TeamsUser);
                match a {
                    Approver::SlackUser(_) => slack.into_iter().collect(),
                    Approver::TeamsUser(_) => teams.into_iter().collect(),
                    _ => slack.into_iter().chain(teams).collect(),
                }
            }
        };
        let whom = stand_in.and(away).map(|p| p.name.clone());
        for id in ids {
            if !out.iter().any(|(o, _)| *o == id) {
                out.push((id, whom.clone()));
            }
        }
    }
    out
}

/// The addresses to mail about `gate`, each once (lower-cased), in the
/// order its approvers are named.
pub fn emails_for(gate: &OpenGate, people: &Directory, now: DateTime<Utc>) -> Vec<String> {
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
        let text = a.text();
        let own_address = match a {
            Approver::Email(e) => address(e),
            _ => None,
        };
        // Away: their stand-in is mailed instead, as they would have been.
        let stand_in = people
            .person_of(&text)
            .map(|p| people.stand_in(p, now))
            .filter(|s| !people.same(&s.name, &text));
        if let Some(s) = stand_in {
            if let Some(addr) = if own_address.is_some() {
                s.email.as_deref().and_then(address)
            } else {
                mailed(s)
            } {
                add(addr);
            }
        } else if let Some(addr) = own_address {
            add(addr);
        } else if let Approver::Group(group) = a {
            people
                .people()
                .iter()
                .filter(|p| p.in_group(group))
                .filter_map(mailed)
                .for_each(&mut add);
        } else if let Some(addr) = people.person_of(&text).and_then(mailed) {
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
        let now = crate::clock::test_epoch();
        // Alice has Slack: only mailed with `notify: email`; Bob has mail
        // alone; Carol is an address; a Slack group is not mailed.
        assert_eq!(
            emails_for(&gate, &people, now),
            ["bob@corp.example", "carol@corp.example"]
        );
        gate.notify_email = true;
        assert_eq!(
            emails_for(&gate, &people, now),
            [
                "alice@corp.example",
                "bob@corp.example",
                "carol@corp.example"
            ]
        );
        assert!(emails_for(&gate, &Directory::default(), now)
            .contains(&"carol@corp.example".to_string()));
    }

    #[test]
    fn while_a_person_is_away_their_delegate_is_written_to() {
        use crate::model::person::delegation::{parse_day, window, Delegation};
        let person = |name: &str, slack: &str, teams: &str, email: &str| Person {
            name: name.into(),
            slack: Some(slack.into()),
            teams: Some(teams.into()),
            email: Some(email.into()),
            ..Person::default()
        };
        let people = Directory::new(vec![
            person("alice", "U04ALICE", "aaaa-1", "alice@corp.example"),
            person("bob", "U04BOB", "bbbb-2", "bob@corp.example"),
        ])
        .expect("a directory");
        let day = |d: &str| parse_day(d).expect("a day");
        let (starts, ends) = window(day("2026-12-20"), day("2027-01-03")).expect("a window");
        let set_at = starts - chrono::TimeDelta::days(30);
        let delegation = Delegation {
            to: "bob".into(),
            starts,
            ends,
            set_by: "alice".into(),
            set_at,
            reason: None,
        };
        let people = people
            .delegate("alice", delegation, set_at)
            .expect("delegated");
        let mut gate = crate::model::OpenGate::for_tests("review");
        gate.approvers = vec!["U04ALICE".into(), "teams:aaaa-1".into(), "U0CAROL".into()];
        gate.notify_email = true;
        let before = starts - chrono::TimeDelta::seconds(1);
        assert_eq!(
            dm_approvers(&gate, &people, before),
            ["U04ALICE", "teams:aaaa-1", "U0CAROL"]
        );
        assert_eq!(emails_for(&gate, &people, before), ["alice@corp.example"]);
        assert_eq!(
            dm_approvers(&gate, &people, starts),
            ["U04BOB", "teams:bbbb-2", "U0CAROL"]
        );
        assert_eq!(emails_for(&gate, &people, starts), ["bob@corp.example"]);
        gate.approvers = vec!["alice".into()];
        assert_eq!(
            dm_approvers(&gate, &people, starts),
            ["U04BOB", "teams:bbbb-2"]
        );
        assert_eq!(dm_approvers(&gate, &people, ends), ["alice"]);
        assert_eq!(
            dm_recipients(&gate, &people, starts)[0],
            ("U04BOB".into(), Some("alice".to_string()))
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
