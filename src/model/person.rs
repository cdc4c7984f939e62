//! The people directory: one person, many channel identities.
//!
//! The same human reaches strands as a Slack user id (`U04ALICE`), a Teams
//! AAD object id (`teams:<aad>`), an API token's name, an email address, a
//! Unix user and the identity provider's name for them (the web inbox's
//! OpenID Connect sign-in: the configured claim's value, or the subject). A [`Person`] ties those together under one name, with the
//! groups they belong to; a [`Directory`] is every person, checked so that
//! each identity belongs to at most one of them, and answers "who is this
//! channel identity?" ([`Directory::person_of`]).
//!
//! What this does not do: decide who may answer a gate (that is
//! `gate::authorize`, which asks the directory), or know any channel.
//! A caller the directory does not know keeps their channel identity.
//! Who stands in for whom while someone is away is [`delegation`].

pub mod delegation;
pub mod passkey;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::token::valid_name;

/// One human and the identities they use on each channel.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Person {
    /// The directory name, as specs list it (`approvers: [alice]`).
    pub name: String,
    /// Slack user id (`U…` or `W…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<String>,
    /// Teams: the AAD (Entra) object id, without `teams:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teams: Option<String>,
    /// Email address (compared without case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Names of API tokens this person uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
    /// Unix user (the CLI's identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix: Option<String>,
    /// The identity provider's name for this person (OpenID Connect
    /// sign-in to the web inbox): the value of `STRANDS_OIDC_NAME_CLAIM`
    /// in their ID token (an email, a username, an object id, the subject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<String>,
    /// The RabbitMQ user their messages to the queue room carry as
    /// `user_id` (the broker checks it is the connection's user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amqp: Option<String>,
    /// Groups, as specs name them (`approvers: [group:finance]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Who stands in for this person, and when ([`delegation`]); set
    /// with `strands people delegate`, never by `add`, `edit` or `import`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegations: Vec<delegation::Delegation>,
    /// The passkeys they registered on the web inbox ([`passkey`]); set
    /// there and removed with `strands people passkeys`, never by `add`,
    /// `edit` or `import`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passkeys: Vec<passkey::PasskeyRecord>,
}

/// Why a person or a directory was refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersonError {
    /// A field of a person is malformed.
    #[error("person `{person}`: {why}")]
    Invalid { person: String, why: String },
    /// One identity claimed by two people (or twice by one).
    #[error("`{key}` is {first} and {second}; an identity belongs to one person")]
    Clash {
        key: String,
        first: String,
        second: String,
    },
    /// No such person.
    #[error("no person named `{0}` in the directory")]
    Unknown(String),
    /// `add` of a name already there.
    #[error("`{0}` is already in the directory (change them with `strands people edit {0}`)")]
    Exists(String),
    /// `undelegate` of a delegation that is not there.
    #[error("{0}")]
    NoDelegation(String),
}

impl From<PersonError> for crate::error::Error {
    fn from(e: PersonError) -> Self {
        match e {
            PersonError::Unknown(_) | PersonError::NoDelegation(_) => {
                crate::error::Error::Session(e.to_string())
            }
            _ => crate::error::Error::Usage(e.to_string()),
        }
    }
}

pub use super::identity::{GROUP_PREFIX, TEAMS_PREFIX};

/// How a RabbitMQ user is written as a channel identity (`amqp:carol`):
/// the queue room's answers are by it, and [`Directory::person_of`] finds
/// the person whose `amqp` it is.
pub const AMQP_PREFIX: &str = "amqp:";
use super::Approver;

fn is_aad(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// An email address: `local@domain.tld`, no spaces, one `@`.
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let ok = |c: char| c.is_ascii_alphanumeric() || "._+-'".contains(c);
    !local.is_empty()
        && s.len() <= 254
        && local.chars().all(ok)
        && !local.starts_with('.')
        && !local.ends_with('.')
        && domain.contains('.')
        && domain.split('.').all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

fn is_unix_user(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The form a lookup key takes: emails and Teams ids compare without case.
fn key(identity: &str) -> String {
    match Approver::parse(identity) {
        Approver::Email(_) | Approver::TeamsUser(_) => identity.to_ascii_lowercase(),
        _ => identity.to_string(),
    }
}

impl Person {
    /// Passkey `id` (base64url credential id), current or removed.
    pub fn passkey(&self, id: &str) -> Option<&passkey::PasskeyRecord> {
        self.passkeys.iter().find(|k| k.id == id)
    }

    /// A person named `name` with no identity yet.
    pub fn named(name: &str) -> Person {
        Person {
            name: name.to_string(),
            ..Person::default()
        }
    }

    /// Normalizes (trims; `teams:` dropped from a Teams id; emails and
    /// AAD ids lower-cased; lists sorted, duplicates dropped) and checks
    /// every field.
    pub fn normalized(mut self) -> Result<Person, PersonError> {
        let trim = |o: &mut Option<String>| {
            if let Some(v) = o {
                *v = v.trim().to_string();
            }
            if o.as_deref() == Some("") {
                *o = None;
            }
        };
        self.name = self.name.trim().to_string();
        trim(&mut self.slack);
        trim(&mut self.teams);
        trim(&mut self.email);
        trim(&mut self.unix);
        trim(&mut self.oidc);
        trim(&mut self.amqp);
        if let Some(t) = &mut self.teams {
            *t = match Approver::parse(t) {
                Approver::TeamsUser(aad) => aad,
                _ => t.clone(),
            }
            .to_ascii_lowercase();
        }
        if let Some(e) = &mut self.email {
            *e = e.to_ascii_lowercase();
        }
        for list in [&mut self.tokens, &mut self.groups] {
            for v in list.iter_mut() {
                *v = v.trim().to_string();
            }
            list.retain(|v| !v.is_empty());
            list.sort();
            list.dedup();
        }
        let bad = |why: String| PersonError::Invalid {
            person: self.name.clone(),
            why,
        };
        if !valid_name(&self.name) || self.name.contains(':') || self.name.contains('@') {
            return Err(bad(format!(
                "`{}` is not a name (letters, digits, `-`, `_`, `.`; at most 64)",
                self.name
            )));
        }
        if let Some(s) = self
            .slack
            .as_deref()
            .filter(|s| Approver::parse(s).slack_user().is_none())
        {
            return Err(bad(format!(
                "Slack id `{s}` is not a Slack user id (U… or W…)"
            )));
        }
        if let Some(t) = self.teams.as_deref().filter(|t| !is_aad(t)) {
            return Err(bad(format!(
                "Teams id `{t}` is not an AAD object id (hex digits and dashes)"
            )));
        }
        if let Some(e) = self.email.as_deref().filter(|e| !is_email(e)) {
            return Err(bad(format!("`{e}` is not an email address")));
        }
        if let Some(o) = self
            .oidc
            .as_deref()
            .filter(|o| o.len() > 256 || o.chars().any(|c| c.is_control() || c.is_whitespace()))
        {
            return Err(bad(format!(
                "`{o}` is not an identity provider name (no spaces, at most 256)"
            )));
        }
        if let Some(a) = self
            .amqp
            .as_deref()
            .filter(|a| a.len() > 255 || a.chars().any(|c| c.is_control() || c.is_whitespace()))
        {
            return Err(bad(format!(
                "`{a}` is not a RabbitMQ user name (no spaces, at most 255 bytes)"
            )));
        }
        if let Some(u) = self.unix.as_deref().filter(|u| !is_unix_user(u)) {
            return Err(bad(format!("`{u}` is not a Unix user name")));
        }
        if let Some(t) = self.tokens.iter().find(|t| !valid_name(t)) {
            return Err(bad(format!("`{t}` is not a token name")));
        }
        if let Some(g) = self
            .groups
            .iter()
            .find(|g| !valid_name(g) || g.contains(':') || g.contains('@'))
        {
            return Err(bad(format!("`{g}` is not a group name")));
        }
        Ok(self)
    }

    /// Every key this person is found by, with what it is to them: their
    /// name, then each channel identity in the form the channel uses.
    pub fn keys(&self) -> Vec<(String, &'static str)> {
        let mut out = vec![(self.name.clone(), "name")];
        out.extend(self.slack.iter().map(|s| (s.clone(), "Slack id")));
        out.extend(
            self.teams
                .iter()
                .map(|t| (Approver::TeamsUser(t.clone()).to_string(), "Teams id")),
        );
        out.extend(self.email.iter().map(|e| (e.clone(), "email")));
        out.extend(self.tokens.iter().map(|t| (t.clone(), "token name")));
        out.extend(self.unix.iter().map(|u| (u.clone(), "Unix user")));
        out.extend(
            self.oidc
                .iter()
                .map(|o| (o.clone(), "identity provider name")),
        );
        out.extend(
            self.amqp
                .iter()
                .map(|a| (format!("{AMQP_PREFIX}{a}"), "AMQP user")),
        );
        out.into_iter().map(|(k, w)| (key(&k), w)).collect()
    }

    /// Whether the person is in group `name`.
    pub fn in_group(&self, name: &str) -> bool {
        self.groups.iter().any(|g| g == name)
    }
}

/// Every person, each identity belonging to one of them.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    people: Vec<Person>,
    /// key (name or identity, see [`Person::keys`]) → index in `people`.
    index: HashMap<String, usize>,
}

impl Directory {
    /// Checks and indexes `people` (normalized, sorted by name): a clash
    /// is an error naming both people.
    pub fn new(people: Vec<Person>) -> Result<Directory, PersonError> {
        let mut people = people
            .into_iter()
            .map(Person::normalized)
            .collect::<Result<Vec<_>, _>>()?;
        people.sort_by(|a, b| a.name.cmp(&b.name));
        Directory::check_delegations(&people)?;
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut what: HashMap<String, &'static str> = HashMap::new();
        for (i, p) in people.iter().enumerate() {
            for (k, w) in p.keys() {
                match index.get(&k) {
                    Some(&j) if j != i => {
                        return Err(PersonError::Clash {
                            key: k.clone(),
                            first: format!("{}'s {}", people[j].name, what[&k]),
                            second: format!("{}'s {w}", p.name),
                        })
                    }
                    Some(_) => {}
                    None => {
                        index.insert(k.clone(), i);
                        what.insert(k, w);
                    }
                }
            }
        }
        Ok(Directory { people, index })
    }

    /// Every person, by name.
    pub fn people(&self) -> &[Person] {
        &self.people
    }

    pub fn is_empty(&self) -> bool {
        self.people.is_empty()
    }

    /// The person `name` (by name only).
    pub fn get(&self, name: &str) -> Option<&Person> {
        self.people.iter().find(|p| p.name == name)
    }

    /// The person a channel identity (or a name) belongs to.
    pub fn person_of(&self, who: &str) -> Option<&Person> {
        self.index.get(&key(who)).map(|&i| &self.people[i])
    }

    /// The person's name for `who`, or `who` itself when nobody is known
    /// by it: what self-approval and quorum compare.
    pub fn canonical<'a>(&'a self, who: &'a str) -> &'a str {
        self.person_of(who).map(|p| p.name.as_str()).unwrap_or(who)
    }

    /// Whether `a` and `b` are the same human: the same identity, or two
    /// identities of one person.
    pub fn same(&self, a: &str, b: &str) -> bool {
        a == b || self.canonical(a) == self.canonical(b)
    }

    /// A directory with `person` added (`replace`: or changed in place);
    /// checked whole.
    pub fn with(&self, person: Person, replace: bool) -> Result<Directory, PersonError> {
        let person = person.normalized()?;
        let mut all = self.people.clone();
        match all.iter_mut().find(|p| p.name == person.name) {
            Some(_) if !replace => return Err(PersonError::Exists(person.name)),
            Some(p) => *p = person,
            None => all.push(person),
        }
        Directory::new(all)
    }

    /// A directory without `name`.
    pub fn without(&self, name: &str) -> Result<Directory, PersonError> {
        if self.get(name).is_none() {
            return Err(PersonError::Unknown(name.to_string()));
        }
        // Delegations to the person removed go with them.
        Directory::new(
            self.people
                .iter()
                .filter(|p| p.name != name)
                .cloned()
                .map(|mut p| {
                    p.delegations.retain(|d| d.to != name);
                    p
                })
                .collect(),
        )
    }

    pub fn into_people(self) -> Vec<Person> {
        self.people
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Person {
        Person {
            name: "alice".into(),
            slack: Some("U04ALICE".into()),
            teams: Some("teams:0000AAAA-0000".into()),
            email: Some("Alice@Corp.example".into()),
            tokens: vec!["alice-ci".into()],
            unix: Some("asmith".into()),
            oidc: Some("00u1alice".into()),
            amqp: Some("alice-mq".into()),
            groups: vec!["finance".into()],
            delegations: Vec::new(),
            passkeys: Vec::new(),
        }
    }

    #[test]
    fn every_identity_finds_the_person() {
        let d = Directory::new(vec![alice(), Person::named("bob")]).expect("valid");
        for who in [
            "alice",
            "U04ALICE",
            "teams:0000aaaa-0000",
            "alice@corp.example",
            "ALICE@corp.example",
            "alice-ci",
            "asmith",
            "00u1alice",
            "amqp:alice-mq",
        ] {
            assert_eq!(d.canonical(who), "alice", "{who}");
        }
        // A RabbitMQ user is found as `amqp:<user>` only: a bare name is
        // not taken for it.
        assert_eq!(d.canonical("alice-mq"), "alice-mq");
        assert_eq!(d.canonical("U0STRANGER"), "U0STRANGER");
        assert!(d.same("U04ALICE", "alice@corp.example"));
        assert!(!d.same("U04ALICE", "bob"));
        assert!(d.same("U0X", "U0X") && !d.same("U0X", "U0Y"));
    }

    #[test]
    fn bad_fields_and_clashes_are_refused_naming_both() {
        let bad = |p: Person| Directory::new(vec![p]).unwrap_err().to_string();
        let mut p = alice();
        p.email = Some("alice at corp".into());
        assert!(bad(p).contains("is not an email address"));
        let mut p = alice();
        p.slack = Some("alice".into());
        assert!(bad(p).contains("not a Slack user id"));
        let mut p = alice();
        p.name = "a b".into();
        assert!(bad(p).contains("not a name"));
        let mut bob = Person::named("bob");
        bob.slack = Some("U04ALICE".into());
        let e = Directory::new(vec![alice(), bob]).unwrap_err().to_string();
        assert!(
            e.contains("U04ALICE")
                && e.contains("alice's Slack id")
                && e.contains("bob's Slack id"),
            "{e}"
        );
        let e = Directory::new(vec![alice(), Person::named("alice")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("alice's name"), "{e}");
        // A person's own name may be their Unix user too.
        let mut carol = Person::named("carol");
        carol.unix = Some("carol".into());
        assert!(Directory::new(vec![carol]).is_ok());
    }

    #[test]
    fn add_refuses_a_name_there_and_edit_replaces_it() {
        let d = Directory::new(vec![alice()]).expect("valid");
        assert!(matches!(
            d.with(Person::named("alice"), false),
            Err(PersonError::Exists(_))
        ));
        let d = d.with(Person::named("alice"), true).expect("edit");
        assert_eq!(d.canonical("U04ALICE"), "U04ALICE");
        assert!(matches!(d.without("zed"), Err(PersonError::Unknown(_))));
        assert!(d.without("alice").expect("removed").is_empty());
    }
}
