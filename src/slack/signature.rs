//! Slack's request signature, checked over the raw bytes of the body.
//!
//! `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}` keyed with the signing
//! secret, compared in constant time (`hmac`'s `verify_slice`), and a
//! timestamp within five minutes of now. slack-morphism's verifier takes
//! the body as `&str`, so it cannot tell a signed body that is not UTF-8
//! (a bad request: 400) from a forged one (401); this check runs on the
//! bytes first, and the body is read as text only after it passed.

use hmac::{KeyInit, Mac};

/// The headers Slack signs with.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";
/// How far a request's timestamp may be from now (replays).
pub const MAX_AGE_SECS: i64 = 5 * 60;

/// Why a request was refused (never names the secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The signature does not match the body.
    BadSignature,
    /// The timestamp is not a number or is outside the window.
    Stale,
    /// No signing secret is configured (refused rather than accepted).
    NoSecret,
}

impl Refused {
    /// The metrics label.
    pub fn kind(self) -> &'static str {
        match self {
            Refused::BadSignature => "bad_signature",
            Refused::Stale => "stale_timestamp",
            Refused::NoSecret => "signature_error",
        }
    }
}

/// Checks `signature` (`v0=<hex>`) over `body` at `timestamp`, against the
/// clock `now` (Unix seconds). The signature is checked first: a forged
/// request learns nothing about the clock.
pub fn verify(
    secret: &[u8],
    signature: &str,
    timestamp: &str,
    body: &[u8],
    now: i64,
) -> Result<(), Refused> {
    if secret.is_empty() {
        return Err(Refused::NoSecret);
    }
    let given = signature
        .strip_prefix("v0=")
        .and_then(|h| hex::decode(h).ok())
        .ok_or(Refused::BadSignature)?;
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).map_err(|_| Refused::NoSecret)?;
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac.verify_slice(&given)
        .map_err(|_| Refused::BadSignature)?;
    let ts: i64 = timestamp.trim().parse().map_err(|_| Refused::Stale)?;
    if (now - ts).abs() > MAX_AGE_SECS {
        return Err(Refused::Stale);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TS: &str = "1531420618";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn sign(secret: &str, ts: &str, body: &[u8]) -> String {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("key");
        mac.update(format!("v0:{ts}:").as_bytes());
        mac.update(body);
        format!("v0={}", hex::encode(mac.finalize().into_bytes()))
    }

    /// Slack's published test vector, at the time it was made, and later.
    #[test]
    fn slacks_published_test_vector() {
        let then = 1531420618;
        let s = SECRET.as_bytes();
        assert_eq!(verify(s, SIGNATURE, TS, BODY.as_bytes(), then), Ok(()));
        assert_eq!(
            verify(s, SIGNATURE, TS, BODY.as_bytes(), then + 301),
            Err(Refused::Stale)
        );
        let tampered = BODY.replace("roadrunner", "coyote");
        assert_eq!(
            verify(s, SIGNATURE, TS, tampered.as_bytes(), then),
            Err(Refused::BadSignature)
        );
        assert_eq!(
            verify(b"another-secret", SIGNATURE, TS, BODY.as_bytes(), then),
            Err(Refused::BadSignature)
        );
        assert_eq!(sign(SECRET, TS, BODY.as_bytes()), SIGNATURE);
    }

    #[test]
    fn malformed_signatures_and_timestamps_are_refused() {
        let s = SECRET.as_bytes();
        let now = 1_700_000_000;
        let ts = now.to_string();
        let good = sign(SECRET, &ts, b"x");
        assert_eq!(verify(s, &good, &ts, b"x", now), Ok(()));
        for bad in [
            "",
            "v0=",
            "v0=zz",
            "v1=00",
            &good[..good.len() - 2],
            &good.to_uppercase(),
        ] {
            assert_eq!(
                verify(s, bad, &ts, b"x", now),
                Err(Refused::BadSignature),
                "{bad:?}"
            );
        }
        let odd = sign(SECRET, "soon", b"x");
        assert_eq!(verify(s, &odd, "soon", b"x", now), Err(Refused::Stale));
        assert_eq!(verify(b"", &good, &ts, b"x", now), Err(Refused::NoSecret));
    }

    /// A body that is not UTF-8 verifies on its bytes (the caller then
    /// answers 400, not 401).
    #[test]
    fn bytes_that_are_not_utf8_verify() {
        let body = [0x66, 0x6f, 0xff, 0xfe, 0x00];
        let now = 1_700_000_000;
        let ts = now.to_string();
        let sig = sign(SECRET, &ts, &body);
        assert_eq!(verify(SECRET.as_bytes(), &sig, &ts, &body, now), Ok(()));
    }
}
