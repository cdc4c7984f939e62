//! Browser sign-ins to the web inbox: who a cookie stands for.
//!
//! A person signs in with an API token, a one-tap link or the company's
//! identity provider (OpenID Connect) and gets a cookie `<id>.<secret>`;
//! the store keeps only the SHA-256 of the secret, compared in constant
//! time. A sign-in is bound to what it came from: the API token (revoking
//! the token ends its sign-ins), a link's single gate (it opens that run's
//! page and answers that gate, nothing else), or the provider's
//! `(issuer, subject)` with the groups its ID token named. Each has its own
//! CSRF token, sent back with every form.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::token::Role;

/// What a sign-in may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum LoginScope {
    /// Signed in with an API token: what that token may do.
    Token { token_id: String },
    /// Signed in by a one-tap link: one gate of one run.
    Gate { session: String, gate: String },
    /// Signed in through the identity provider `issuer` as its `subject`:
    /// what the role the provider's groups map to may do.
    Oidc { issuer: String, subject: String },
}

/// A stored sign-in: everything but its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Login {
    pub id: String,
    /// SHA-256 of the cookie's secret, hex.
    pub hash: String,
    /// The CSRF token forms of this sign-in carry.
    pub csrf: String,
    /// The identity answers are recorded under.
    pub name: String,
    pub role: Role,
    pub scope: LoginScope,
    /// The identity provider's groups for this person (an OpenID Connect
    /// sign-in's groups claim); they count for `group:NAME` approvers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// A passkey ceremony this sign-in started and has not finished (its
    /// state, as `crate::web::passkeys` keeps it): one at a time, taken
    /// when finished, so an assertion is never accepted twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceremony: Option<serde_json::Value>,
}

/// A sign-in just made: the record to store and the cookie to set once.
pub struct NewLogin {
    pub login: Login,
    pub cookie: String,
}

impl std::fmt::Debug for NewLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewLogin")
            .field("login", &self.login.id)
            .field("cookie", &"[redacted]")
            .finish()
    }
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn random() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

impl NewLogin {
    pub fn generate(
        name: &str,
        role: Role,
        scope: LoginScope,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> NewLogin {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let secret = random();
        NewLogin {
            cookie: format!("{id}.{secret}"),
            login: Login {
                id,
                hash: hash(&secret),
                csrf: random(),
                name: name.to_string(),
                role,
                scope,
                groups: Vec::new(),
                created_at: now,
                expires_at,
                ceremony: None,
            },
        }
    }
}

/// The id and secret of a presented cookie value; `None` when it is not
/// shaped like one.
pub fn split(presented: &str) -> Option<(&str, &str)> {
    let (id, secret) = presented.trim().split_once('.')?;
    let ok = |s: &str| !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_hexdigit());
    (ok(id) && ok(secret)).then_some((id, secret))
}

impl Login {
    /// Whether `secret` is this sign-in's and it has not expired.
    pub fn admits(&self, secret: &str, now: DateTime<Utc>) -> bool {
        let same: bool = hash(secret).as_bytes().ct_eq(self.hash.as_bytes()).into();
        same && now < self.expires_at
    }

    /// Whether a form's CSRF token is this sign-in's (constant time).
    pub fn csrf_matches(&self, presented: &str) -> bool {
        presented.as_bytes().ct_eq(self.csrf.as_bytes()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;

    #[test]
    fn a_cookie_proves_its_login_until_it_expires() {
        let now = crate::clock::test_epoch();
        let new = NewLogin::generate(
            "alice",
            Role::Approver,
            LoginScope::Token {
                token_id: "abc".into(),
            },
            now,
            now + TimeDelta::hours(1),
        );
        let (id, secret) = split(&new.cookie).expect("shaped like a cookie");
        assert_eq!(id, new.login.id);
        assert!(new.login.admits(secret, now));
        assert!(!new.login.admits(secret, now + TimeDelta::hours(2)));
        assert!(!new.login.admits(&secret.replace('a', "b"), now) || !secret.contains('a'));
        assert_ne!(new.login.hash, secret, "only the hash is kept");
        assert!(!format!("{new:?}").contains(secret));
        assert!(new.login.csrf_matches(&new.login.csrf.clone()));
        assert!(!new.login.csrf_matches("nope"));
        for bad in ["", ".", "abc", "a.b.c", "xyz.123", "ab.<script>"] {
            assert!(split(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn an_identity_provider_sign_in_keeps_its_groups_and_older_records_read_without_them() {
        let now = crate::clock::test_epoch();
        let mut new = NewLogin::generate(
            "alice",
            Role::Approver,
            LoginScope::Oidc {
                issuer: "https://idp.example".into(),
                subject: "00u1".into(),
            },
            now,
            now + TimeDelta::hours(1),
        );
        new.login.groups = vec!["finance".into()];
        let json = serde_json::to_value(&new.login).expect("json");
        assert_eq!(json["scope"]["by"], "oidc", "{json}");
        assert_eq!(json["groups"][0], "finance", "{json}");
        let back: Login = serde_json::from_value(json).expect("back");
        assert_eq!(back, new.login);
        let mut old = serde_json::to_value(
            NewLogin::generate(
                "bob",
                Role::Approver,
                LoginScope::Token {
                    token_id: "t".into(),
                },
                now,
                now,
            )
            .login,
        )
        .expect("json");
        assert!(old.get("groups").is_none(), "{old}");
        old.as_object_mut().expect("object").remove("groups");
        let read: Login = serde_json::from_value(old).expect("an older record");
        assert!(read.groups.is_empty());
    }
}
