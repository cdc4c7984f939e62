//! Display names of Teams people, for cards only: "Approved by Ann Lee
//! at …" rather than `teams:<Entra object ID>`. A name is taken from a
//! verified activity's `from.name`, keyed by its `from.aadObjectId` (the
//! identity answers record) — never from a card's data. It is display
//! only: who may answer, and what the store and the audit trail record,
//! is always `teams:<aad>`.
//!
//! Names seen are kept in memory only; after a restart, or for someone
//! who never wrote to the bot, a card shows the person's name in the
//! people directory when the answer carries one ([`shown_as`]), else
//! `teams:<aad>`. Names are not looked up in Microsoft Graph.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// The most names kept (a bound on what anyone sending activities can grow).
const MAX_NAMES: usize = 10_000;

/// The longest name kept, in characters.
const MAX_NAME_CHARS: usize = 120;

static NAMES: LazyLock<Mutex<HashMap<String, String>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// A verified activity came from `aad`, called `name`.
pub fn seen(aad: &str, name: &str) {
    let name: String = name.trim().chars().take(MAX_NAME_CHARS).collect();
    if aad.is_empty() || name.is_empty() {
        return;
    }
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if names.len() >= MAX_NAMES && !names.contains_key(aad) {
        return;
    }
    names.insert(aad.to_string(), name);
}

/// How `who` (an identity as answers record it) is shown on a card: a
/// Teams person's name when one was seen, else `who` as it is.
pub fn shown(who: &str) -> String {
    let crate::model::Approver::TeamsUser(aad) = crate::model::Approver::parse(who) else {
        return who.to_string();
    };
    NAMES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&aad)
        .cloned()
        .unwrap_or_else(|| who.to_string())
}

/// How an answer (or approval) by `who` is shown: the name Teams gave,
/// else the person the directory resolved it to (`person`), else `who`.
pub fn shown_as(who: &str, person: Option<&str>) -> String {
    let name = shown(who);
    match person {
        Some(p) if name == who && !p.is_empty() => p.to_string(),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teams_names_show_people_and_leave_the_rest() {
        assert_eq!(shown("teams:aad-names-1"), "teams:aad-names-1");
        seen("aad-names-1", "  Ann Lee ");
        assert_eq!(shown("teams:aad-names-1"), "Ann Lee");
        assert_eq!(shown("alice"), "alice");
        seen("aad-names-2", "");
        assert_eq!(shown("teams:aad-names-2"), "teams:aad-names-2");
    }

    #[test]
    fn the_directory_names_who_teams_has_not_named_yet() {
        assert_eq!(shown_as("teams:aad-names-3", Some("carol")), "carol");
        assert_eq!(shown_as("teams:aad-names-3", None), "teams:aad-names-3");
        seen("aad-names-3", "Carol Diaz");
        assert_eq!(shown_as("teams:aad-names-3", Some("carol")), "Carol Diaz");
        assert_eq!(shown_as("U04ALICE", Some("alice")), "alice");
    }
}
