//! One-tap links: a URL that signs its holder in to the web inbox for one
//! gate of one run, as one person — for approvers who reach it from an
//! e-mail or a phone. The token is `payload.signature`, both base64url:
//! the payload names the session, the gate handle, the person, the expiry
//! and a random nonce; the signature is HMAC-SHA256 under a key the store
//! makes once (every replica on the store checks the same). A link is
//! single-use: redeeming it records its nonce, and a second redemption is
//! refused. Opening a link never decides anything (link previewers and
//! mail scanners fetch links): the holder presses the button. A link may
//! carry an [`Intent`] (a mail's Approve and Reject links): its page's
//! button then answers that way, and nothing else, through the intake.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, TimeDelta, Utc};
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::Store;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The store key links are signed with.
const KEY: &str = "links";

/// What a link grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    #[serde(rename = "s")]
    pub session: String,
    #[serde(rename = "g")]
    pub gate: String,
    #[serde(rename = "p")]
    pub person: String,
    /// Expiry, seconds since the epoch.
    #[serde(rename = "e")]
    pub expires: i64,
    #[serde(rename = "n")]
    pub nonce: String,
    /// What the link's button does besides signing in (links without one
    /// open the run's page).
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
}

/// The one answer a link's page offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    Approve,
    /// With a reason box.
    Reject,
}

impl Intent {
    /// `approve`, `reject`, or `open` (no intent: the link opens the run's
    /// page): what `strands links create --decision` and the API take.
    pub fn parse(word: &str) -> std::result::Result<Option<Intent>, String> {
        match word {
            "approve" => Ok(Some(Intent::Approve)),
            "reject" => Ok(Some(Intent::Reject)),
            "open" => Ok(None),
            other => Err(format!(
                "`{other}` is not a link's decision: approve, reject or open"
            )),
        }
    }

    /// `approve`, `reject`: the decision's name in an answer request.
    pub fn decision(self) -> &'static str {
        match self {
            Intent::Approve => "approve",
            Intent::Reject => "reject",
        }
    }
}

impl Grant {
    pub fn expires_at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.expires, 0).unwrap_or_default()
    }
}

/// Why a link does not sign anyone in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkRefusal {
    #[error("this link is not one this server made (or it was cut short)")]
    Forged,
    #[error("this link expired at {0}; ask for a new one")]
    Expired(DateTime<Utc>),
    #[error("this link was used already; links sign in once")]
    Used,
}

fn mac(key: &[u8], payload: &[u8]) -> Result<HmacSha256> {
    let mut m = HmacSha256::new_from_slice(key)
        .map_err(|e| crate::Error::Internal(format!("link key: {e}")))?;
    m.update(payload);
    Ok(m)
}

/// A token for `grant`.
pub async fn sign(store: &Store, grant: &Grant) -> Result<String> {
    let key = store.key(KEY).await?;
    let payload = serde_json::to_vec(grant).map_err(|e| crate::Error::Internal(e.to_string()))?;
    let sig = mac(&key, &payload)?.finalize().into_bytes();
    Ok(format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        URL_SAFE_NO_PAD.encode(sig)
    ))
}

/// A grant for `person` at gate `gate` of `session`, valid for `ttl` from
/// `now`.
pub fn grant(session: &str, gate: &str, person: &str, ttl: TimeDelta, now: DateTime<Utc>) -> Grant {
    Grant {
        session: session.to_string(),
        gate: gate.to_string(),
        person: person.to_string(),
        expires: (now + ttl).timestamp(),
        nonce: uuid::Uuid::new_v4().simple().to_string(),
        intent: None,
    }
}

/// Makes a link token for `person` at gate `gate` of session `session`
/// (workflow `workflow`), valid for `ttl`, and audits who made it
/// (`access`, never the token).
pub async fn mint(
    store: &Store,
    at: (&str, &str, &str),
    person: &str,
    ttl: TimeDelta,
    by: (&str, &str),
) -> Result<(String, Grant)> {
    mint_for(store, at, person, ttl, None, by).await
}

/// [`mint`], for a link whose button answers `intent`.
pub async fn mint_for(
    store: &Store,
    (session, workflow, gate): (&str, &str, &str),
    person: &str,
    ttl: TimeDelta,
    intent: Option<Intent>,
    (by, via): (&str, &str),
) -> Result<(String, Grant)> {
    let now = store.now();
    let mut g = grant(session, gate, person, ttl, now);
    g.intent = intent;
    let token = sign(store, &g).await?;
    let mut ev = super::tokens::access(
        by,
        via,
        format!(
            "made a one-tap link for `{person}` (expires {})",
            g.expires_at().to_rfc3339()
        ),
        now,
    );
    ev.session = session.to_string();
    ev.workflow = workflow.to_string();
    ev.gate = Some(gate.to_string());
    store.append_audit(&[ev]).await?;
    Ok((token, g))
}

/// Why no link is made for a person (`strands links create`, `POST
/// /api/v1/sessions/{id}/links`): a link nobody could use is refused
/// when it is asked for, not when it is opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MintRefusal {
    #[error("session {session} is {status}, not paused: it waits for no answer")]
    NotPaused {
        session: String,
        status: crate::model::Status,
    },
    #[error("session {session} has no open gate `{gate}`")]
    NoSuchGate { session: String, gate: String },
    #[error("{person} may not {what} gate {gate} of session {session}: {why}")]
    MayNotAnswer {
        person: String,
        what: &'static str,
        gate: String,
        session: String,
        why: String,
    },
}

/// The handle of the open gate of `s` a link for `asker.who` would be
/// for — gate `gate` (a handle or an id), or the first open one — when
/// the session is paused there and that person may answer it as `intent`
/// says (either way when `None`), judged by the engine's own rules
/// ([`crate::engine::intake::authorize`]), never a copy of them.
pub fn linkable(
    s: &crate::model::Session,
    gate: Option<&str>,
    intent: Option<Intent>,
    asker: &crate::engine::intake::Asker<'_>,
    people: &crate::model::person::Directory,
) -> std::result::Result<String, MintRefusal> {
    use crate::model::Decision;
    if s.status != crate::model::Status::Paused {
        return Err(MintRefusal::NotPaused {
            session: s.id.clone(),
            status: s.status,
        });
    }
    let open = match gate {
        Some(g) => s.open_gate(g),
        None => s.first_gate(),
    }
    .ok_or_else(|| MintRefusal::NoSuchGate {
        session: s.id.clone(),
        gate: gate.unwrap_or("(any)").to_string(),
    })?;
    let judge = |d: &Decision| {
        crate::engine::intake::authorize(open, s, d, asker, people).map_err(|r| r.to_string())
    };
    let reject = Decision::Reject { reason: None };
    let (judged, what) = match intent {
        // A link's button carries no values: a gate with a form is
        // approved on the run's page (an `open` link).
        Some(Intent::Approve) => (
            judge(&Decision::Approve).and_then(|whom| {
                crate::gate::interpret(open, &Decision::Approve)
                    .map(|_| whom)
                    .map_err(|e| {
                        format!("{e}; an approve link cannot carry them: make an `open` link")
                    })
            }),
            "approve",
        ),
        Some(Intent::Reject) => (judge(&reject), "reject"),
        None => (
            judge(&reject).or_else(|_| judge(&Decision::Approve)),
            "answer",
        ),
    };
    match judged {
        Ok(_) => Ok(open.handle()),
        Err(why) => Err(MintRefusal::MayNotAnswer {
            person: asker.who.to_string(),
            what,
            gate: open.handle(),
            session: s.id.clone(),
            why,
        }),
    }
}

/// What `token` grants, when this store signed it and it has not expired
/// (the signature is checked in constant time). Nothing is consumed.
pub async fn check(store: &Store, token: &str) -> Result<std::result::Result<Grant, LinkRefusal>> {
    let Some((payload, sig)) = token.split_once('.') else {
        return Ok(Err(LinkRefusal::Forged));
    };
    let (Ok(payload), Ok(sig)) = (URL_SAFE_NO_PAD.decode(payload), URL_SAFE_NO_PAD.decode(sig))
    else {
        return Ok(Err(LinkRefusal::Forged));
    };
    let key = store.key(KEY).await?;
    if mac(&key, &payload)?.verify_slice(&sig).is_err() {
        return Ok(Err(LinkRefusal::Forged));
    }
    let Ok(grant) = serde_json::from_slice::<Grant>(&payload) else {
        return Ok(Err(LinkRefusal::Forged));
    };
    if store.now().timestamp() >= grant.expires {
        return Ok(Err(LinkRefusal::Expired(grant.expires_at())));
    }
    Ok(Ok(grant))
}

/// Redeems `token` once: its grant, or why not (a second redemption is
/// refused, on every process sharing the store).
pub async fn redeem(store: &Store, token: &str) -> Result<std::result::Result<Grant, LinkRefusal>> {
    let grant = match check(store, token).await? {
        Ok(g) => g,
        Err(r) => return Ok(Err(r)),
    };
    if !store
        .first_sighting(&format!("link:{}", grant.nonce))
        .await?
    {
        return Ok(Err(LinkRefusal::Used));
    }
    Ok(Ok(grant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_link_signs_in_once_and_only_as_made() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = std::sync::Arc::new(crate::clock::FixedClock::at(crate::clock::test_epoch()));
        let store = Store::open(dir.path())
            .expect("store")
            .with_clock(clock.clone());
        let now = crate::clock::test_epoch();
        let g = grant("s1", "review#1", "alice", TimeDelta::hours(1), now);
        let token = sign(&store, &g).await.expect("signed");
        assert_eq!(check(&store, &token).await.expect("io"), Ok(g.clone()));
        // Tampering with the payload (another person) breaks the signature.
        let (_, sig) = token.split_once('.').expect("two parts");
        let mut other = g.clone();
        other.person = "mallory".into();
        let forged = format!(
            "{}.{sig}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).expect("json"))
        );
        assert_eq!(
            check(&store, &forged).await.expect("io"),
            Err(LinkRefusal::Forged)
        );
        assert_eq!(
            check(&store, "nonsense").await.expect("io"),
            Err(LinkRefusal::Forged)
        );
        assert_eq!(redeem(&store, &token).await.expect("io"), Ok(g));
        assert_eq!(
            redeem(&store, &token).await.expect("io"),
            Err(LinkRefusal::Used)
        );
        // An hour later, a link made for an hour no longer opens.
        let token = sign(
            &store,
            &grant("s1", "review#1", "bob", TimeDelta::hours(1), now),
        )
        .await
        .expect("signed");
        clock.advance(TimeDelta::hours(1));
        assert!(matches!(
            redeem(&store, &token).await.expect("io"),
            Err(LinkRefusal::Expired(_))
        ));
    }
}
