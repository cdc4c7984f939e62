//! Who and where, typed: the approvers a gate names and the places a room
//! asks in, parsed once from the text specs, the API, the CLI and the
//! stores carry.
//!
//! Specs and requests name approvers as text — `alice`, `group:finance`,
//! `U04ALICE`, `S0SRE`, `teams:5f0c…`, `carol@corp.example` — and rooms
//! name places as text — `C0DEPLOYS`, `#deploys`, `teams:19:…@thread.tacv2`,
//! `email:`. This is the one place that reads those prefixes and shapes;
//! everything above matches on [`Approver`] and [`Place`]. Both keep their
//! text form on disk and on the wire (serde as the string), so sessions and
//! stores written before are read unchanged.
//!
//! How an approver or a place is *shown* is each door's business (Slack
//! mentions, Teams names, plain text in mails and the API); the plain text
//! form ([`std::fmt::Display`]) is the one every door may fall back on.

use serde::{Deserialize, Serialize};

/// Prefix of a group of the people directory in approver lists.
pub const GROUP_PREFIX: &str = "group:";
/// Prefix of a Teams identity (`teams:<Entra object id>`) and of a Teams
/// place (`teams:<conversation id>`).
pub const TEAMS_PREFIX: &str = "teams:";
/// Prefix of the e-mail room's places (`email:` for a gate's mails,
/// `email:<address>` for the mail to one person).
pub const EMAIL_PREFIX: &str = "email:";

/// Someone a gate names as who may answer it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Approver {
    /// A name: a person of the directory, a token's name, a Unix user.
    Name(String),
    /// A group of the people directory (`group:finance`).
    Group(String),
    /// A Slack user id (`U…`, `W…`).
    SlackUser(String),
    /// A Slack user group id (`S…`).
    SlackGroup(String),
    /// A Teams user, by Entra object id (`teams:<aad>`).
    TeamsUser(String),
    /// An e-mail address.
    Email(String),
}

impl Approver {
    /// Reads an approver as specs and requests write it (trimmed). Every
    /// text is some approver: what is no other kind is a name.
    pub fn parse(text: &str) -> Approver {
        let t = text.trim();
        if let Some(g) = t.strip_prefix(GROUP_PREFIX) {
            return Approver::Group(g.to_string());
        }
        if let Some(aad) = t.strip_prefix(TEAMS_PREFIX) {
            return Approver::TeamsUser(aad.to_string());
        }
        if is_slack_user(t) {
            return Approver::SlackUser(t.to_string());
        }
        if is_slack_group(t) {
            return Approver::SlackGroup(t.to_string());
        }
        if t.contains('@') {
            return Approver::Email(t.to_string());
        }
        Approver::Name(t.to_string())
    }

    /// Whether it may stand for more than one person (a quorum may count
    /// several of its members).
    pub fn is_many(&self) -> bool {
        matches!(self, Approver::Group(_) | Approver::SlackGroup(_))
    }

    /// The Slack user group's id, for a Slack user group.
    pub fn slack_group(&self) -> Option<&str> {
        match self {
            Approver::SlackGroup(g) => Some(g),
            _ => None,
        }
    }

    /// The directory group's name, for a directory group.
    pub fn group(&self) -> Option<&str> {
        match self {
            Approver::Group(g) => Some(g),
            _ => None,
        }
    }

    /// The Slack user id, for a Slack user.
    pub fn slack_user(&self) -> Option<&str> {
        match self {
            Approver::SlackUser(u) => Some(u),
            _ => None,
        }
    }

    /// The text form (`alice`, `group:finance`, `teams:5f0c…`, …): what a
    /// spec writes and the people directory looks up.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Approver::Name(s)
            | Approver::SlackUser(s)
            | Approver::SlackGroup(s)
            | Approver::Email(s) => std::borrow::Cow::Borrowed(s),
            other => std::borrow::Cow::Owned(other.to_string()),
        }
    }
}

impl std::fmt::Display for Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Approver::Group(g) => write!(f, "{GROUP_PREFIX}{g}"),
            Approver::TeamsUser(aad) => write!(f, "{TEAMS_PREFIX}{aad}"),
            Approver::Name(s)
            | Approver::SlackUser(s)
            | Approver::SlackGroup(s)
            | Approver::Email(s) => f.write_str(s),
        }
    }
}

impl From<String> for Approver {
    fn from(s: String) -> Self {
        Approver::parse(&s)
    }
}

impl From<&str> for Approver {
    fn from(s: &str) -> Self {
        Approver::parse(s)
    }
}

impl From<Approver> for String {
    fn from(a: Approver) -> Self {
        a.to_string()
    }
}

/// An approver equals the text it is written as.
impl PartialEq<str> for Approver {
    fn eq(&self, other: &str) -> bool {
        self.text() == other
    }
}

impl PartialEq<&str> for Approver {
    fn eq(&self, other: &&str) -> bool {
        self.text() == *other
    }
}

/// Where a room asks: one room's conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Place {
    /// A Slack channel or conversation (`C…`, `G…`, `D…`) or a channel
    /// name (`#deploys`, `deploys`).
    Slack(String),
    /// A Teams conversation (its id, without the `teams:` prefix).
    Teams(String),
    /// The e-mail room: a gate's mails (`None`) or the mail to one address.
    Email(Option<String>),
}

impl Place {
    /// Reads a place as rooms record it. Every text is some place: what is
    /// no other room's is Slack's.
    pub fn parse(text: &str) -> Place {
        let t = text.trim();
        if let Some(c) = t.strip_prefix(TEAMS_PREFIX) {
            return Place::Teams(c.to_string());
        }
        if let Some(a) = t.strip_prefix(EMAIL_PREFIX) {
            return Place::Email(Some(a.to_string()).filter(|a| !a.is_empty()));
        }
        Place::Slack(t.to_string())
    }

    /// The Slack channel, for a Slack place.
    pub fn slack(&self) -> Option<&str> {
        match self {
            Place::Slack(c) => Some(c),
            _ => None,
        }
    }

    /// The Teams conversation id, for a Teams place.
    pub fn teams(&self) -> Option<&str> {
        match self {
            Place::Teams(c) => Some(c),
            _ => None,
        }
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Slack(c) => f.write_str(c),
            Place::Teams(c) => write!(f, "{TEAMS_PREFIX}{c}"),
            Place::Email(None) => f.write_str(EMAIL_PREFIX),
            Place::Email(Some(a)) => write!(f, "{EMAIL_PREFIX}{a}"),
        }
    }
}

impl From<String> for Place {
    fn from(s: String) -> Self {
        Place::parse(&s)
    }
}

impl From<&str> for Place {
    fn from(s: &str) -> Self {
        Place::parse(s)
    }
}

impl From<Place> for String {
    fn from(p: Place) -> Self {
        p.to_string()
    }
}

/// The approvers' text forms, comma-separated: how a plain-text door
/// lists them.
pub fn listed(approvers: &[Approver]) -> String {
    approvers
        .iter()
        .map(|a| a.text())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `who` is a Slack user id (`U…` or `W…`): capitals and digits,
/// with a digit (`UBUNTUUSER` is a name).
fn is_slack_user(who: &str) -> bool {
    who.len() > 1
        && (who.starts_with('U') || who.starts_with('W'))
        && who
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && who.chars().any(|c| c.is_ascii_digit())
}

/// Whether `id` is a Slack user group id (`S…`, with a digit).
fn is_slack_group(id: &str) -> bool {
    id.len() > 2
        && id.starts_with('S')
        && id
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && id.chars().any(|c| c.is_ascii_digit())
}

/// How whoever answered is named in text the agent's model reads ("denied
/// by …"): a Slack user as `<@U…>` — Slack shows it as the person when the
/// model quotes it back into a channel — anyone else by the identity they
/// answered with.
pub fn quoted(who: &str) -> String {
    match Approver::parse(who) {
        Approver::SlackUser(u) => format!("<@{u}>"),
        _ => who.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_approver_reads_and_writes_back_as_written() {
        for (text, want) in [
            ("alice", Approver::Name("alice".into())),
            ("group:finance", Approver::Group("finance".into())),
            ("U04ALICE", Approver::SlackUser("U04ALICE".into())),
            ("W0ENTERPRISE", Approver::SlackUser("W0ENTERPRISE".into())),
            ("S0SRE1", Approver::SlackGroup("S0SRE1".into())),
            ("teams:5f0c-aad", Approver::TeamsUser("5f0c-aad".into())),
            (
                "carol@corp.example",
                Approver::Email("carol@corp.example".into()),
            ),
        ] {
            let got = Approver::parse(text);
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), text);
            let json = serde_json::to_string(&got).expect("json");
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<Approver>(&json).expect("back"), want);
        }
        // Not ids: a name in capitals without digits is no Slack group, a
        // lone letter no Slack user.
        assert_eq!(Approver::parse("SRE"), Approver::Name("SRE".into()));
        assert_eq!(Approver::parse("U"), Approver::Name("U".into()));
        assert_eq!(
            Approver::parse("UBUNTUUSER"),
            Approver::Name("UBUNTUUSER".into())
        );
        assert!(Approver::parse("group:x").is_many() && Approver::parse("S0X1").is_many());
        assert!(!Approver::parse("alice").is_many());
    }

    #[test]
    fn every_room_tells_its_places_from_another_rooms() {
        for (text, want) in [
            ("C0DEPLOYS", Place::Slack("C0DEPLOYS".into())),
            ("#deploys", Place::Slack("#deploys".into())),
            (
                "teams:19:general@thread.tacv2",
                Place::Teams("19:general@thread.tacv2".into()),
            ),
            ("email:", Place::Email(None)),
            (
                "email:carol@corp.example",
                Place::Email(Some("carol@corp.example".into())),
            ),
        ] {
            let got = Place::parse(text);
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), text);
        }
        assert!(Place::parse("C0X").slack().is_some());
        assert!(Place::parse("teams:19:x@thread.tacv2").slack().is_none());
        assert!(Place::parse("email:carol@corp.example").slack().is_none());
    }

    #[test]
    fn the_model_reads_slack_users_as_mentions_and_others_by_name() {
        assert_eq!(quoted("U04ALICE"), "<@U04ALICE>");
        assert_eq!(quoted("alice"), "alice");
        assert_eq!(quoted("teams:5f0c"), "teams:5f0c");
    }
}
