//! API tokens: who a request to `strands serve` comes from, and what that
//! identity may do.
//!
//! A token reads `stk_<id>_<secret>`: the id finds its record, the secret
//! proves it. Only the SHA-256 of the secret is stored; a presented secret
//! is hashed and compared with the stored hash in constant time. The
//! token's name is the identity everywhere (approver lists, self-approval,
//! the audit trail). The secret is shown once, when created, and never
//! logged (`Debug` of a [`NewToken`] hides it).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a token may do; each role includes the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads the sessions it may answer, and answers them.
    Approver,
    /// Also starts and cancels runs.
    Operator,
    /// Also manages tokens and reads the audit trail.
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "approver" => Role::Approver,
            "operator" => Role::Operator,
            "admin" => Role::Admin,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Approver => "approver",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored token: everything but its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The public part of the token (lookup key).
    pub id: String,
    /// The identity its requests carry.
    pub name: String,
    pub role: Role,
    /// SHA-256 of the secret, hex.
    pub hash: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// May act for a person it names (`X-Strands-As`): only the local
    /// credential `strands serve` leaves for the CLI of the OS user that
    /// owns the store (who could open the store directly anyway).
    #[serde(default)]
    pub delegate: bool,
}

impl TokenRecord {
    /// Whether the token may be used at `now`.
    pub fn usable(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|t| now < t)
    }
}

/// A token just made: the record to store and the secret to show once.
pub struct NewToken {
    pub record: TokenRecord,
    /// `stk_<id>_<secret>`: shown once, never stored.
    pub token: String,
}

impl std::fmt::Debug for NewToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken")
            .field("record", &self.record)
            .field("token", &"[redacted]")
            .finish()
    }
}

const PREFIX: &str = "stk_";

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

impl NewToken {
    /// A fresh token named `name` (244 random bits from the OS).
    pub fn generate(
        name: &str,
        role: Role,
        now: DateTime<Utc>,
        expires_at: Option<DateTime<Utc>>,
    ) -> NewToken {
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        let secret = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        NewToken {
            token: format!("{PREFIX}{id}_{secret}"),
            record: TokenRecord {
                id,
                name: name.to_string(),
                role,
                hash: hash(&secret),
                created_at: now,
                expires_at,
                revoked_at: None,
                delegate: false,
            },
        }
    }
}

/// The id and secret of a presented token; `None` when it is not shaped
/// like one.
pub fn split(presented: &str) -> Option<(&str, &str)> {
    let rest = presented.trim().strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
    (ok(id) && ok(secret)).then_some((id, secret))
}

/// Whether `secret` is the one `record` was made with (constant time).
pub fn matches(record: &TokenRecord, secret: &str) -> bool {
    hash(secret).as_bytes().ct_eq(record.hash.as_bytes()).into()
}

/// Whether a token name can be an identity: letters, digits, `-`, `_`,
/// `.`, `@`, and `:` (a room's people: `teams:<AAD object id>`), at most 64
/// characters.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_proves_itself_and_nothing_else() {
        let now = crate::clock::test_epoch();
        let t = NewToken::generate("ci-bot", Role::Operator, now, None);
        assert!(t.token.starts_with("stk_"));
        let (id, secret) = split(&t.token).expect("shaped like a token");
        assert_eq!(id, t.record.id);
        assert!(matches(&t.record, secret));
        assert!(!matches(
            &t.record,
            &secret.replace('a', "b").replace('1', "2")
        ));
        assert_ne!(t.record.hash, secret, "only the hash is kept");
        assert!(!format!("{t:?}").contains(secret), "Debug hides the secret");
        let other = NewToken::generate("ci-bot", Role::Operator, now, None);
        assert_ne!(other.token, t.token);
        for bad in ["", "stk_", "stk_abc", "xyz_abc_def", "stk_a-b_c", "stk__c"] {
            assert!(split(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn roles_include_the_ones_below_and_tokens_expire_or_are_revoked() {
        assert!(Role::Admin > Role::Operator && Role::Operator > Role::Approver);
        assert_eq!(Role::parse(" Admin "), Some(Role::Admin));
        assert_eq!(Role::parse("root"), None);
        let now = crate::clock::test_epoch();
        let mut t = NewToken::generate(
            "x",
            Role::Approver,
            now,
            Some(now + chrono::TimeDelta::days(1)),
        )
        .record;
        assert!(t.usable(now));
        assert!(!t.usable(now + chrono::TimeDelta::days(2)));
        t.revoked_at = Some(now);
        assert!(!t.usable(now));
        assert!(valid_name("alice@corp.example") && !valid_name("a b") && !valid_name(""));
        assert!(valid_name("teams:00000000-0000-0000-0000-0000000000020"));
    }
}
