//! Where a room asks: a place names one room's conversation. A Slack place
//! is a bare channel id (`C…`, `D…`, `#name`); other rooms prefix theirs
//! (`teams:<conversation id>`), so each room can tell its own places from
//! another's — with Slack and Teams both on, a run started in Teams is
//! asked in Teams, not posted to a Slack channel called `teams:…`, and a
//! card posted in Teams does not count as Slack's message.

/// The prefix of a Teams conversation's place.
pub const TEAMS: &str = "teams:";

/// The prefix of the e-mail room's places (`email:` for a gate's mails,
/// `email:<address>` for the mail to one person).
pub const EMAIL: &str = "email:";

/// Whether `place` is a Slack channel (not another room's place).
pub fn is_slack(place: &str) -> bool {
    !place.starts_with(TEAMS) && !place.starts_with(EMAIL)
}

#[cfg(test)]
mod tests {
    use super::is_slack;

    #[test]
    fn teams_places_are_not_slack_channels() {
        assert!(is_slack("C0123456789"));
        assert!(is_slack("#approvals"));
        assert!(!is_slack("teams:19:general@thread.tacv2"));
        assert!(!is_slack("email:carol@corp.example"));
    }
}
