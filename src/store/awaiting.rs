//! The index by approver of open gates: which paused runs may hold a gate a
//! given person, group or "anyone" may answer — so "what waits for me"
//! (`hub::inbox`, Slack's App Home) loads those runs, not every paused one.
//!
//! This module says what a session contributes to the index ([`entries`]);
//! each backend stores the entries in the same transaction as the session
//! (sled: `store::sled::awaiting`, PostgreSQL: `store::postgres::awaiting`).
//! One entry per literal approver of each open gate (user ids, group ids
//! like `S…`, names), and one under [`ANYONE`] for a gate whose spec names
//! nobody (anyone, or the server's default approvers, may answer it). The
//! index only narrows the search: who may answer is still decided by the
//! engine's own rules (`engine::intake::authorize`) on the loaded run, so
//! an extra candidate costs a read and never shows a gate to the wrong
//! person. What it does not do: resolve groups (the caller passes the
//! groups a person belongs to) or know admins (they may answer any gate;
//! callers page the paused runs for them).

use crate::model::{Session, Status};

/// The key of gates listing no approver.
pub const ANYONE: &str = "*";

/// `(gate handle, approver key)` of every open gate of `session`, sorted
/// and without duplicates; none unless it is paused. An approver that
/// cannot be a key (empty, or holding a NUL byte) is filed under
/// [`ANYONE`]: it stays a candidate for everyone, never lost.
pub fn entries(session: &Session) -> Vec<(String, String)> {
    if session.status != Status::Paused {
        return Vec::new();
    }
    let mut out = Vec::new();
    for g in session.gates.values() {
        let handle = g.handle();
        if g.approvers.is_empty() {
            out.push((handle.clone(), ANYONE.to_string()));
        }
        for a in &g.approvers {
            let text = a.text();
            let key = if text.is_empty() || text.contains('\0') {
                ANYONE
            } else {
                &text
            };
            out.push((handle.clone(), key.to_string()));
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sled::tests::paused_session;

    #[test]
    fn one_entry_per_literal_approver_and_anyone_for_gates_listing_nobody() {
        let mut s = paused_session("s");
        assert_eq!(entries(&s), [("review#1".to_string(), "*".to_string())]);
        if let Some(g) = s.gates.values_mut().next() {
            g.approvers = vec!["U1".into(), "S0GROUP1".into(), "U1".into(), "".into()];
        }
        let keys: Vec<String> = entries(&s).into_iter().map(|(_, a)| a).collect();
        assert_eq!(keys, ["*", "S0GROUP1", "U1"]);
        s.status = Status::Running;
        assert!(entries(&s).is_empty());
    }
}
