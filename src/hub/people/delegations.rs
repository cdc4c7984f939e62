//! Delegations, managed: set, list and remove who stands in for whom, the
//! same for `strands people delegate|delegations|undelegate`, for
//! `/api/v1/people/{name}/delegations` and for the web inbox's form. Each
//! change is one change of the store's directory with its `access` audit
//! entry; a refused one (an unknown person, a cycle, an overlap, a
//! caller who may not) changes nothing.
//!
//! The rules themselves (windows, chains, cycles) are
//! [`crate::model::person::delegation`]; who may set one is [`may_set`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::hub::tokens::access;
use crate::model::person::delegation::{parse_day, window, Delegation};
use crate::model::person::{Directory, PersonError};
use crate::store::Store;

/// A delegation as asked for: days as the commands take them (UTC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegateRequest {
    /// The delegate: a person's name (or any of their identities).
    pub to: String,
    /// The first day, `YYYY-MM-DD` (from 00:00 UTC).
    pub from: String,
    /// The last day, `YYYY-MM-DD` (until 24:00 UTC).
    pub until: String,
    #[serde(default)]
    pub reason: Option<String>,
}

/// One delegation as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DelegationView {
    /// Who is away.
    pub person: String,
    /// Who stands in for them.
    pub to: String,
    /// The first and last day covered (UTC).
    pub from: String,
    pub until: String,
    pub starts: DateTime<Utc>,
    pub ends: DateTime<Utc>,
    /// In force now.
    pub active: bool,
    pub set_by: String,
    pub set_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl DelegationView {
    fn of(person: &str, d: &Delegation, now: DateTime<Utc>) -> DelegationView {
        DelegationView {
            person: person.to_string(),
            to: d.to.clone(),
            from: d.from_day().to_string(),
            until: d.until_day().to_string(),
            starts: d.starts,
            ends: d.ends,
            active: d.active(now),
            set_by: d.set_by.clone(),
            set_at: d.set_at,
            reason: d.reason.clone(),
        }
    }
}

/// Whether `who` (a channel identity) may set or remove `person`'s
/// delegations: their own, or anyone's for an admin. The error says why.
pub fn may_set(people: &Directory, who: &str, admin: bool, person: &str) -> Result<()> {
    if admin || people.person_of(who).is_some_and(|p| p.name == person) {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "only {person} (or an admin) may change {person}'s delegations; you are {}",
            people.canonical(who)
        )))
    }
}

/// The name of the person `who` names (a name or any identity).
fn name_of(people: &Directory, who: &str) -> std::result::Result<String, PersonError> {
    people
        .person_of(who.trim())
        .map(|p| p.name.clone())
        .ok_or_else(|| PersonError::Unknown(who.trim().to_string()))
}

/// Sets `person`'s delegation as `req` asks, by `by` through `via`, at
/// `now`; `admin`: `by` may set anyone's. What was stored comes back.
pub async fn delegate(
    store: &Store,
    person: &str,
    req: &DelegateRequest,
    (by, admin, via): (&str, bool, &str),
    now: DateTime<Utc>,
) -> Result<DelegationView> {
    let from = parse_day(&req.from).map_err(|e| Error::Usage(format!("--from: {e}")))?;
    let until = parse_day(&req.until).map_err(|e| Error::Usage(format!("--until: {e}")))?;
    let (starts, ends) = window(from, until).map_err(Error::Usage)?;
    let people = store.directory().await?;
    let person = name_of(&people, person)?;
    let to = name_of(&people, &req.to)?;
    may_set(&people, by, admin, &person)?;
    let delegation = Delegation {
        to: to.clone(),
        starts,
        ends,
        set_by: by.to_string(),
        set_at: now,
        reason: req.reason.clone(),
    };
    let detail = format!("delegated {person} to {delegation}");
    let (owned, d) = (person.clone(), delegation.clone());
    let after = store
        .update_people(
            &move |stored| {
                let dir = Directory::new(stored)?;
                Ok(dir.delegate(&owned, d.clone(), now)?.into_people())
            },
            &access(by, via, detail, now),
        )
        .await?;
    let stored = after
        .iter()
        .find(|p| p.name == person)
        .and_then(|p| {
            p.delegations
                .iter()
                .find(|d| d.to == to && d.starts == starts && d.ends == ends)
        })
        .ok_or_else(|| Error::Internal(format!("{person}'s delegation vanished")))?;
    Ok(DelegationView::of(&person, stored, now))
}

/// Removes `person`'s delegations (to `to` only, when given); how many.
pub async fn undelegate(
    store: &Store,
    person: &str,
    to: Option<&str>,
    (by, admin, via): (&str, bool, &str),
) -> Result<usize> {
    let people = store.directory().await?;
    let person = name_of(&people, person)?;
    let to = to.map(|t| name_of(&people, t)).transpose()?;
    may_set(&people, by, admin, &person)?;
    let detail = match &to {
        Some(t) => format!("removed {person}'s delegation to {t}"),
        None => format!("removed {person}'s delegations"),
    };
    let gone = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (owned, count) = (person.clone(), std::sync::Arc::clone(&gone));
    store
        .update_people(
            &move |stored| {
                let (dir, n) = Directory::new(stored)?.undelegate(&owned, to.as_deref())?;
                count.store(n, std::sync::atomic::Ordering::SeqCst);
                Ok(dir.into_people())
            },
            &access(by, via, detail, store.now()),
        )
        .await?;
    Ok(gone.load(std::sync::atomic::Ordering::SeqCst))
}

/// Every delegation not over at `now` (from or to `person`, when given),
/// by person, then start.
pub fn list(
    people: &Directory,
    person: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<DelegationView>> {
    let name = person.map(|p| name_of(people, p)).transpose()?;
    let mut out = Vec::new();
    for p in people.people() {
        for d in p.delegations.iter().filter(|d| d.ends > now) {
            if name.as_ref().is_none_or(|n| *n == p.name || *n == d.to) {
                out.push(DelegationView::of(&p.name, d, now));
            }
        }
    }
    Ok(out)
}

/// How the chat commands are used (Slack's `/strands …`, Teams' messages).
pub const COMMAND_HELP: &str =
    "`delegate @PERSON [from YYYY-MM-DD] until YYYY-MM-DD [reason TEXT]` \
someone answers for you while you are away (days in UTC; from today when not given) · \
`undelegate [@PERSON]` remove it · `delegations` yours";

/// A person as a chat names them: `<@U04BOB>`, `<@U04BOB|bob>`, `@bob`,
/// `bob` or an address.
fn chat_person(word: &str) -> &str {
    let w = word.trim();
    let w = w
        .strip_prefix("<@")
        .and_then(|r| r.strip_suffix('>'))
        .map(|r| r.split('|').next().unwrap_or(r))
        .unwrap_or(w);
    w.strip_prefix('@').unwrap_or(w)
}

/// Self-service from a chat: `words` after `delegate`, `undelegate` or
/// `delegations` (`verb`), said by channel identity `who` (a Slack user id,
/// `teams:<aad>`), through `via`. Always about `who`'s own person; the
/// reply is the text to show them. Refusals change nothing.
pub async fn command(
    hub: &crate::hub::Hub,
    who: &str,
    via: &str,
    verb: &str,
    words: &[&str],
) -> String {
    let now = hub.clock.now();
    let people = match hub.fresh_people().await {
        Ok(p) => p,
        Err(e) => return format!("Could not read the people directory: {e}"),
    };
    let Some(me) = people.person_of(who).map(|p| p.name.clone()) else {
        return "You are not in the people directory, so nobody can answer for you; ask an admin (`strands people add`).".into();
    };
    let done = match (verb, words) {
        ("delegations", []) => list(&people, Some(&me), now).map(|l| {
            if l.is_empty() {
                "You have no delegations.".to_string()
            } else {
                l.iter()
                    .map(|d| {
                        let (a, b) = if d.person == me {
                            (d.to.as_str(), "answers for you")
                        } else {
                            (d.person.as_str(), "is answered for by you")
                        };
                        format!(
                            "• {a} {b} from {} until {} (UTC){}",
                            d.from,
                            d.until,
                            if d.active { ", now" } else { "" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }),
        ("undelegate", rest) if rest.len() <= 1 => {
            let to = rest.first().map(|w| chat_person(w));
            let to = to.map(|t| people.canonical(t).to_string());
            undelegate(&hub.store, &me, to.as_deref(), (who, false, via))
                .await
                .map(|n| format!("Removed {n} delegation{}.", if n == 1 { "" } else { "s" }))
        }
        ("delegate", [to, rest @ ..]) => match parse_window(rest, now) {
            Ok((from, until, reason)) => {
                let req = DelegateRequest {
                    to: people.canonical(chat_person(to)).to_string(),
                    from,
                    until,
                    reason,
                };
                delegate(&hub.store, &me, &req, (who, false, via), now)
                    .await
                    .map(|v| {
                        format!(
                            "{} answers for you from {} until {} (UTC, both days included).",
                            v.to, v.from, v.until
                        )
                    })
            }
            Err(e) => Err(Error::Usage(e)),
        },
        _ => Err(Error::Usage(format!("Usage: {COMMAND_HELP}"))),
    };
    match done {
        Ok(text) => {
            if let Err(e) = hub.fresh_people().await {
                tracing::warn!("could not read the people directory: {e}");
            }
            text
        }
        Err(e) => format!("Not done: {e}"),
    }
}

/// `[to] [from DAY] until DAY [reason TEXT…]`: the days and the reason.
fn parse_window(
    words: &[&str],
    now: DateTime<Utc>,
) -> std::result::Result<(String, String, Option<String>), String> {
    let mut from = now.date_naive().to_string();
    let mut until = None;
    let mut rest = words;
    let mut reason = None;
    while let Some((w, tail)) = rest.split_first() {
        match (w.to_ascii_lowercase().as_str(), tail) {
            ("from", [day, more @ ..]) => {
                from = day.to_string();
                rest = more;
            }
            ("until", [day, more @ ..]) => {
                until = Some(day.to_string());
                rest = more;
            }
            ("reason", more) if !more.is_empty() => {
                reason = Some(more.join(" "));
                rest = &[];
            }
            _ => return Err(format!("I don't understand `{w}`. Usage: {COMMAND_HELP}")),
        }
    }
    let until = until.ok_or_else(|| format!("Say until when. Usage: {COMMAND_HELP}"))?;
    Ok((from, until, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chats_name_people_and_windows_their_own_ways() {
        for said in ["<@U04BOB>", "<@U04BOB|bob>", "@U04BOB", "U04BOB"] {
            assert_eq!(chat_person(said), "U04BOB", "{said}");
        }
        let now = DateTime::parse_from_rfc3339("2026-12-19T15:00:00Z")
            .expect("a time")
            .to_utc();
        assert_eq!(
            parse_window(&["until", "2027-01-03"], now),
            Ok(("2026-12-19".into(), "2027-01-03".into(), None))
        );
        assert_eq!(
            parse_window(
                &[
                    "from",
                    "2026-12-20",
                    "until",
                    "2027-01-03",
                    "reason",
                    "winter",
                    "break"
                ],
                now
            ),
            Ok((
                "2026-12-20".into(),
                "2027-01-03".into(),
                Some("winter break".into())
            ))
        );
        assert!(parse_window(&["from", "2026-12-20"], now)
            .expect_err("no end")
            .contains("until when"));
        assert!(parse_window(&["til", "2027-01-03"], now)
            .expect_err("a typo")
            .contains("`til`"));
    }
}
