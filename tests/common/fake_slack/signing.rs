//! How Slack signs what it sends, so that tests can send the bot requests it
//! must accept and ones it must refuse: [`sign`] computes Slack's `v0=`
//! signature, [`signed`] builds the headers for a body signed as a
//! [`Signing`] says (correctly, stale, from the future, with another secret,
//! unsigned, or with the body changed on the way).
//!
//! Kept apart from the HTTP client and the payloads: the signature check
//! against Slack's published test vector needs nothing else.

use super::SIGNING_SECRET;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::time::{SystemTime, UNIX_EPOCH};

/// `v0=<hex hmac_sha256(secret, "v0:{ts}:{body}")>`
pub fn sign(secret: &str, ts: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key size");
    mac.update(format!("v0:{ts}:").as_bytes());
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("time after 1970")
        .as_secs() as i64
}

/// How a request to the bot is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signing {
    /// Correctly, now.
    Valid,
    /// Correctly, but with a timestamp 6 minutes old.
    Stale,
    /// Correctly, but with a timestamp 6 minutes ahead.
    Future,
    /// With another secret.
    WrongSecret,
    /// No signature headers at all.
    Missing,
    /// Correctly, then the body is changed on the way.
    BodyAltered,
}

/// The headers and the body actually sent for `body` signed as `signing`.
pub fn signed(signing: Signing, body: &[u8]) -> (Vec<(String, String)>, Vec<u8>) {
    let now = unix_now();
    let (ts, secret) = match signing {
        Signing::Valid | Signing::BodyAltered => (now, SIGNING_SECRET),
        Signing::Stale => (now - 360, SIGNING_SECRET),
        Signing::Future => (now + 360, SIGNING_SECRET),
        Signing::WrongSecret => (now, "not-the-signing-secret"),
        Signing::Missing => return (Vec::new(), body.to_vec()),
    };
    let headers = vec![
        ("X-Slack-Request-Timestamp".to_string(), ts.to_string()),
        ("X-Slack-Signature".to_string(), sign(secret, ts, body)),
    ];
    let mut sent = body.to_vec();
    if signing == Signing::BodyAltered {
        sent.extend_from_slice(b"&tampered=1");
    }
    (headers, sent)
}
