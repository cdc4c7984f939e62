//! The Teams protocol layer (`strands::teams`) against the fake Bot
//! Framework over real sockets: inbound tokens signed with the test-only
//! fixture keys are verified or refused for the right reason, and outbound
//! calls fetch, reuse and refresh their token, retry what Teams asks to be
//! retried, and never reach a host off the list.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use chrono::{DateTime, TimeDelta, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{json, Value};
use strands::teams::auth::{Refused, Verifier};
use strands::teams::connector::{Connector, ConnectorError, OneOnOne};
use strands::teams::{Clock, TeamsSettings};

use crate::common::fake_teams::{self, FakeTeams, Fault, APP_ID};

const BF: &str = "https://api.botframework.com";
const TENANT: &str = "tid-ours";

/// The tests' "now".
fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-02T10:00:00Z")
        .expect("a time")
        .with_timezone(&Utc)
}

/// A clock the test moves by hand.
fn clock() -> (Clock, Arc<Mutex<DateTime<Utc>>>) {
    let at = Arc::new(Mutex::new(now()));
    let read = at.clone();
    (Arc::new(move || *read.lock().expect("lock")), at)
}

fn advance(at: &Mutex<DateTime<Utc>>, by: TimeDelta) {
    *at.lock().expect("lock") += by;
}

fn settings(fake: &FakeTeams, extra: &[(&str, &str)]) -> TeamsSettings {
    let env = fake.env(extra);
    TeamsSettings::from_lookup(|k| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone()))
        .expect("settings parse")
        .expect("the room is on")
}

/// A PKCS#1 PEM fixture as the DER `jsonwebtoken` signs with.
fn private_key(name: &str) -> EncodingKey {
    let pem = fake_teams::fixture(name);
    let b64: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("PEM body is base64");
    EncodingKey::from_rsa_der(&der)
}

/// Claims a Bot Framework token for the fake's service URL carries, valid
/// around [`now`].
fn claims(fake: &FakeTeams) -> Value {
    let t = now().timestamp();
    json!({
        "iss": BF,
        "aud": APP_ID,
        "serviceurl": fake.service_url(),
        "nbf": t - 60,
        "iat": t - 60,
        "exp": t + 3600,
    })
}

/// `claims` signed RS256 by the fixture key `key_file`, header `kid`.
fn sign_with(claims: &Value, kid: &str, key_file: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, &private_key(key_file)).expect("signs")
}

fn sign(claims: &Value) -> String {
    sign_with(claims, "k1", "signing.key.pem")
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// An activity from the fake's service URL.
fn activity(fake: &FakeTeams, tenant: &str) -> Value {
    json!({
        "type": "message",
        "channelId": "msteams",
        "serviceUrl": fake.service_url(),
        "conversation": {"id": "19:abc@thread.tacv2"},
        "channelData": {"tenant": {"id": tenant}},
        "text": "hi",
    })
}

fn verifier(fake: &FakeTeams, extra: &[(&str, &str)]) -> (Verifier, Arc<Mutex<DateTime<Utc>>>) {
    let (clock, at) = clock();
    let v = Verifier::new(&settings(fake, extra), clock).expect("a verifier");
    (v, at)
}

#[tokio::test]
async fn teams_a_valid_token_verifies() {
    let fake = FakeTeams::start();
    let (v, _) = verifier(&fake, &[]);
    let token = sign(&claims(&fake));
    let ok = v
        .verify(Some(&bearer(&token)), &activity(&fake, TENANT))
        .await
        .expect("verifies");
    assert_eq!(ok.issuer, BF);
    assert_eq!(ok.key_id, "k1");
    assert_eq!(ok.service_url.as_deref(), Some(fake.service_url().as_str()));
    // The keys are cached: a second activity fetches nothing.
    v.verify(Some(&bearer(&token)), &activity(&fake, TENANT))
        .await
        .expect("verifies again");
    assert_eq!(fake.jwks_fetches(), 1);
    assert_eq!(fake.metadata_fetches(), 1);
}

#[tokio::test]
async fn teams_keys_are_refreshed_after_a_day() {
    let fake = FakeTeams::start();
    let (v, at) = verifier(&fake, &[]);
    let token = sign(&claims(&fake));
    let act = activity(&fake, TENANT);
    v.verify(Some(&bearer(&token)), &act).await.expect("ok");
    advance(&at, TimeDelta::hours(23));
    let mut fresh = claims(&fake);
    fresh["exp"] = json!(now().timestamp() + 25 * 3600);
    let token = sign(&fresh);
    v.verify(Some(&bearer(&token)), &act).await.expect("ok");
    assert_eq!(fake.jwks_fetches(), 1, "still fresh after 23 h");
    advance(&at, TimeDelta::hours(1));
    v.verify(Some(&bearer(&token)), &act).await.expect("ok");
    assert_eq!(fake.jwks_fetches(), 2, "refetched after 24 h");
}

/// Verifies `token` for the fake's activity; the refusal.
async fn refused(v: &Verifier, fake: &FakeTeams, token: Option<&str>) -> Refused {
    let header = token.map(bearer);
    v.verify(header.as_deref(), &activity(fake, TENANT))
        .await
        .expect_err("refused")
}

#[tokio::test]
async fn teams_forged_headers_are_refused_before_any_key_lookup() {
    let fake = FakeTeams::start();
    let (v, _) = verifier(&fake, &[]);

    let r = refused(&v, &fake, None).await;
    assert_eq!(r, Refused::NoToken);
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = v
        .verify(Some("Basic abc"), &activity(&fake, TENANT))
        .await
        .expect_err("refused");
    assert_eq!(r, Refused::NoToken);

    // alg none: a header, the claims, an empty signature.
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT", "kid": "k1"})),
        b64(&claims(&fake))
    );
    assert_eq!(
        refused(&v, &fake, Some(&none)).await,
        Refused::Algorithm("none".into())
    );

    // HS256 keyed with the public key's bytes (the key-confusion attack).
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let public_pem = fake_teams::fixture("signing.pub.pem");
    let hs = jsonwebtoken::encode(
        &header,
        &claims(&fake),
        &EncodingKey::from_secret(public_pem.as_bytes()),
    )
    .expect("signs");
    let r = refused(&v, &fake, Some(&hs)).await;
    assert_eq!(r, Refused::Algorithm("HS256".into()));
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    assert!(matches!(
        refused(&v, &fake, Some("not-a-jwt")).await,
        Refused::Malformed(_)
    ));
    assert_eq!(fake.jwks_fetches(), 0, "no key was looked up");
}

#[tokio::test]
async fn teams_a_token_signed_by_another_key_is_refused() {
    let fake = FakeTeams::start();
    let (v, _) = verifier(&fake, &[]);
    let forged = sign_with(&claims(&fake), "k1", "wrong.key.pem");
    let r = refused(&v, &fake, Some(&forged)).await;
    assert_eq!(r, Refused::BadSignature);
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn teams_an_unknown_kid_refetches_the_keys_at_most_hourly() {
    let fake = FakeTeams::start();
    let (v, at) = verifier(&fake, &[]);
    let act = activity(&fake, TENANT);
    v.verify(Some(&bearer(&sign(&claims(&fake)))), &act)
        .await
        .expect("ok");
    assert_eq!(fake.jwks_fetches(), 1);

    let k2 = sign_with(&claims(&fake), "k2", "signing.key.pem");
    assert_eq!(
        refused(&v, &fake, Some(&k2)).await,
        Refused::UnknownKey("k2".into())
    );
    assert_eq!(fake.jwks_fetches(), 2, "exactly one refetch");

    // The key is published now (rotation), but within the hour nothing is
    // fetched: another unknown kid is refused from the cache.
    let mut rotated = fake_teams::fixture_keys()[0].clone();
    rotated["kid"] = json!("k2");
    fake.add_key(rotated);
    let k3 = sign_with(&claims(&fake), "k3", "signing.key.pem");
    assert_eq!(
        refused(&v, &fake, Some(&k3)).await,
        Refused::UnknownKey("k3".into())
    );
    assert_eq!(
        refused(&v, &fake, Some(&k2)).await,
        Refused::UnknownKey("k2".into())
    );
    assert_eq!(fake.jwks_fetches(), 2, "nothing fetched within the hour");

    advance(&at, TimeDelta::minutes(61));
    v.verify(Some(&bearer(&k2)), &act)
        .await
        .expect("the rotated key verifies after the hour");
    assert_eq!(fake.jwks_fetches(), 3);

    // A removed key stays trusted until the keys are fetched again.
    fake.remove_key("k1");
    v.verify(Some(&bearer(&sign(&claims(&fake)))), &act)
        .await
        .expect("cached");
}

#[tokio::test]
async fn teams_wrong_audience_or_issuer_is_refused() {
    let fake = FakeTeams::start();
    let (v, _) = verifier(&fake, &[]);
    let mut c = claims(&fake);
    c["aud"] = json!("someone-else");
    assert_eq!(
        refused(&v, &fake, Some(&sign(&c))).await,
        Refused::WrongAudience
    );
    let mut c = claims(&fake);
    c["iss"] = json!("https://evil.example");
    assert_eq!(
        refused(&v, &fake, Some(&sign(&c))).await,
        Refused::WrongIssuer
    );
    let mut c = claims(&fake);
    c["iss"] = json!([BF]);
    assert!(
        matches!(
            refused(&v, &fake, Some(&sign(&c))).await,
            Refused::Malformed(_) | Refused::WrongIssuer
        ),
        "an issuer list is not an issuer"
    );
}

#[tokio::test]
async fn teams_times_are_checked_with_five_minutes_leeway() {
    let fake = FakeTeams::start();
    let (v, _) = verifier(&fake, &[]);
    let t = now().timestamp();
    let act = activity(&fake, TENANT);

    let mut c = claims(&fake);
    c["exp"] = json!(t - 301);
    let r = refused(&v, &fake, Some(&sign(&c))).await;
    assert_eq!(r, Refused::Expired);
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    c["exp"] = json!(t - 200);
    v.verify(Some(&bearer(&sign(&c))), &act)
        .await
        .expect("expired within the leeway");

    let mut c = claims(&fake);
    c["nbf"] = json!(t + 301);
    assert_eq!(
        refused(&v, &fake, Some(&sign(&c))).await,
        Refused::NotYetValid
    );
    c["nbf"] = json!(t + 200);
    v.verify(Some(&bearer(&sign(&c))), &act)
        .await
        .expect("not yet valid within the leeway");

    // A time of the wrong type is not skipped.
    let mut c = claims(&fake);
    c["nbf"] = json!("later");
    assert!(matches!(
        refused(&v, &fake, Some(&sign(&c))).await,
        Refused::Malformed(_)
    ));
    let mut c = claims(&fake);
    c.as_object_mut().expect("object").remove("exp");
    assert!(matches!(
        refused(&v, &fake, Some(&sign(&c))).await,
        Refused::Malformed(_)
    ));
}

#[tokio::test]
async fn teams_the_serviceurl_claim_must_match_the_activity() {
    let fake = FakeTeams::start();
    let (v, _) = verifier(&fake, &[]);
    let mut c = claims(&fake);
    c["serviceurl"] = json!("https://smba.trafficmanager.net/emea/");
    let r = refused(&v, &fake, Some(&sign(&c))).await;
    assert_eq!(r, Refused::ServiceUrlMismatch);
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    // Case and a trailing slash do not matter.
    let mut c = claims(&fake);
    c["serviceurl"] = json!(format!("HTTP://127.0.0.1:{}", fake.port()));
    v.verify(Some(&bearer(&sign(&c))), &activity(&fake, TENANT))
        .await
        .expect("the same URL");

    // A Bot Framework token must carry the claim.
    let mut c = claims(&fake);
    c.as_object_mut().expect("object").remove("serviceurl");
    assert_eq!(
        refused(&v, &fake, Some(&sign(&c))).await,
        Refused::NoServiceUrlClaim
    );
}

#[tokio::test]
async fn teams_a_key_not_endorsed_for_msteams_is_refused() {
    let fake = FakeTeams::start();
    let mut webchat = fake_teams::fixture_keys()[0].clone();
    webchat["kid"] = json!("k-webchat");
    webchat["endorsements"] = json!(["webchat"]);
    fake.add_key(webchat);
    let mut bare = fake_teams::fixture_keys()[0].clone();
    bare["kid"] = json!("k-bare");
    bare.as_object_mut().expect("object").remove("endorsements");
    fake.add_key(bare);
    let (v, _) = verifier(&fake, &[]);

    let token = sign_with(&claims(&fake), "k-webchat", "signing.key.pem");
    let r = refused(&v, &fake, Some(&token)).await;
    assert_eq!(r, Refused::NotEndorsed("msteams".into()));
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    let token = sign_with(&claims(&fake), "k-bare", "signing.key.pem");
    v.verify(Some(&bearer(&token)), &activity(&fake, TENANT))
        .await
        .expect("a key without endorsements is not restricted");
}

#[tokio::test]
async fn teams_an_activity_from_another_tenant_is_refused() {
    let fake = FakeTeams::start();
    let (v, _) = verifier(&fake, &[("TEAMS_TENANT_ID", TENANT)]);
    let token = sign(&claims(&fake));
    v.verify(Some(&bearer(&token)), &activity(&fake, TENANT))
        .await
        .expect("our tenant");
    let r = v
        .verify(Some(&bearer(&token)), &activity(&fake, "tid-other"))
        .await
        .expect_err("another tenant");
    assert_eq!(r, Refused::WrongTenant);
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let mut no_tenant = activity(&fake, TENANT);
    no_tenant["channelData"] = json!({});
    assert_eq!(
        v.verify(Some(&bearer(&token)), &no_tenant)
            .await
            .expect_err("no tenant"),
        Refused::WrongTenant
    );
}

#[tokio::test]
async fn teams_the_tenant_issuer_is_accepted_only_when_opted_in() {
    let fake = FakeTeams::start();
    let entra = |iss: &str| {
        let mut c = claims(&fake);
        c["iss"] = json!(iss);
        c.as_object_mut().expect("object").remove("serviceurl");
        sign(&c)
    };
    let sts = entra(&format!("https://sts.windows.net/{TENANT}/"));
    let v2 = entra(&format!("https://login.microsoftonline.com/{TENANT}/v2.0"));
    let other = entra("https://sts.windows.net/tid-other/");

    let (v, _) = verifier(&fake, &[("TEAMS_TENANT_ID", TENANT)]);
    assert_eq!(
        refused(&v, &fake, Some(&sts)).await,
        Refused::WrongIssuer,
        "not opted in"
    );

    let (v, _) = verifier(
        &fake,
        &[
            ("TEAMS_TENANT_ID", TENANT),
            ("TEAMS_ACCEPT_TENANT_ISSUER", "1"),
        ],
    );
    for token in [&sts, &v2] {
        let ok = v
            .verify(Some(&bearer(token)), &activity(&fake, TENANT))
            .await
            .expect("the tenant issuer, opted in");
        assert_eq!(ok.service_url, None);
    }
    assert_eq!(refused(&v, &fake, Some(&other)).await, Refused::WrongIssuer);
}

// ---------------------------------------------------------------------------
// Outbound
// ---------------------------------------------------------------------------

fn connector(fake: &FakeTeams, extra: &[(&str, &str)]) -> (Connector, Arc<Mutex<DateTime<Utc>>>) {
    let (clock, at) = clock();
    let c = Connector::new(&settings(fake, extra), clock).expect("a connector");
    (c, at)
}

const CONV: &str = "19:abc@thread.tacv2";

fn message(text: &str) -> Value {
    json!({"type": "message", "text": text})
}

#[tokio::test]
async fn teams_one_token_serves_five_sends() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[]);
    let url = fake.service_url();
    let send = |n: u32| {
        let c = &c;
        let url = url.clone();
        async move { c.send(&url, CONV, &message(&format!("m{n}"))).await }
    };
    // Concurrent callers share one token fetch.
    let (a, b, d) = tokio::join!(send(1), send(2), send(3));
    for r in [a, b, d] {
        assert!(r.expect("sent").starts_with("act-"));
    }
    send(4).await.expect("sent");
    send(5).await.expect("sent");
    assert_eq!(fake.token_calls(), 1);
    let hits = fake.hits();
    assert_eq!(hits.len(), 5);
    for hit in &hits {
        assert_eq!(hit.method, "POST");
        assert_eq!(hit.path, "/v3/conversations/19:abc@thread.tacv2/activities");
        assert_eq!(hit.bearer.as_deref(), Some("fake-1"));
        assert_eq!(hit.status, 200);
    }
    let mut texts: Vec<_> = hits
        .iter()
        .map(|h| h.body["text"].as_str().unwrap_or_default().to_string())
        .collect();
    texts.sort();
    assert_eq!(texts, ["m1", "m2", "m3", "m4", "m5"]);
}

#[tokio::test]
async fn teams_the_token_is_refreshed_five_minutes_before_it_expires() {
    let fake = FakeTeams::start();
    let (c, at) = connector(&fake, &[]);
    let url = fake.service_url();
    c.send(&url, CONV, &message("1")).await.expect("sent");
    advance(&at, TimeDelta::seconds(3600 - 300 - 1));
    c.send(&url, CONV, &message("2")).await.expect("sent");
    assert_eq!(fake.token_calls(), 1, "still more than 5 min left");
    advance(&at, TimeDelta::seconds(1));
    c.send(&url, CONV, &message("3")).await.expect("sent");
    assert_eq!(fake.token_calls(), 2, "refreshed at 5 min before expiry");
    let bearers: Vec<_> = fake.hits().into_iter().filter_map(|h| h.bearer).collect();
    assert_eq!(bearers, ["fake-1", "fake-1", "fake-2"]);
}

#[tokio::test]
async fn teams_a_429_waits_its_retry_after_then_succeeds() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[]);
    fake.fail_next(&[Fault::TooMany(Some(1))]);
    let id = c
        .send(&fake.service_url(), CONV, &message("hi"))
        .await
        .expect("sent after one retry");
    assert!(id.starts_with("act-"));
    let hits = fake.hits();
    assert_eq!(
        hits.iter().map(|h| h.status).collect::<Vec<_>>(),
        [429, 200]
    );
    let waited = hits[1].at - hits[0].at;
    assert!(
        waited >= Duration::from_secs(1),
        "Retry-After: 1 honoured, waited {waited:?}"
    );

    // Without Retry-After: the backoff (10 ms base in the tests).
    fake.fail_next(&[Fault::TooMany(None)]);
    c.send(&fake.service_url(), CONV, &message("hi"))
        .await
        .expect("sent after one retry");
    let statuses: Vec<_> = fake.hits().iter().map(|h| h.status).collect();
    assert_eq!(statuses, [429, 200, 429, 200]);
    assert_eq!(fake.token_calls(), 1);
}

#[tokio::test]
async fn teams_gateway_faults_are_retried_up_to_the_limit() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[("TEAMS_MAX_ATTEMPTS", "4")]);
    let url = fake.service_url();
    fake.fail_next(&[Fault::Status(502), Fault::Status(504), Fault::Status(412)]);
    c.send(&url, CONV, &message("hi"))
        .await
        .expect("the fourth attempt succeeds");
    let statuses: Vec<_> = fake.hits().iter().map(|h| h.status).collect();
    assert_eq!(statuses, [502, 504, 412, 200]);

    fake.fail_next(&[Fault::Status(502); 4]);
    let err = c
        .send(&url, CONV, &message("hi"))
        .await
        .expect_err("the attempts are spent");
    assert!(
        matches!(
            err,
            ConnectorError::Status {
                status: 502,
                attempts: 4,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(fake.hits().len(), 8);

    // Other statuses are not retried.
    fake.fail_next(&[Fault::Status(403), Fault::Status(502)]);
    let err = c.send(&url, CONV, &message("hi")).await.expect_err("403");
    assert!(
        matches!(
            err,
            ConnectorError::Status {
                status: 403,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn teams_a_service_url_off_the_list_is_never_called() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[]);
    for url in [
        "https://evil.example/".to_string(),
        "http://smba.trafficmanager.net/amer/".to_string(),
        "ftp://127.0.0.1/".to_string(),
    ] {
        let err = c
            .send(&url, CONV, &message("hi"))
            .await
            .expect_err("refused");
        assert!(
            matches!(err, ConnectorError::ServiceUrlRefused { .. }),
            "{err}"
        );
    }
    // Loopback over plain HTTP only when the tests turn it on.
    let (strict, _) = connector(&fake, &[("TEAMS_ALLOW_HTTP_LOOPBACK", "0")]);
    let err = strict
        .send(&fake.service_url(), CONV, &message("hi"))
        .await
        .expect_err("refused");
    assert!(matches!(err, ConnectorError::ServiceUrlRefused { .. }));
    assert_eq!(fake.token_calls(), 0, "not even a token was fetched");
    assert!(fake.hits().is_empty());
}

#[tokio::test]
async fn teams_reply_update_and_a_new_conversation() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[]);
    let url = fake.service_url();
    let id = c
        .reply(&url, CONV, "1700000000000", &message("in the thread"))
        .await
        .expect("replied");
    assert!(id.starts_with("act-"));
    c.update(&url, CONV, &id, &message("edited"))
        .await
        .expect("updated");
    let conv = c
        .create_conversation(
            &url,
            OneOnOne {
                bot_id: &format!("28:{APP_ID}"),
                user_id: "29:user-1",
                tenant_id: TENANT,
            },
        )
        .await
        .expect("created");
    assert!(conv.starts_with("a:conv-"));

    let hits = fake.hits();
    assert_eq!(hits.len(), 3);
    assert_eq!(
        (hits[0].method.as_str(), hits[0].path.as_str()),
        (
            "POST",
            "/v3/conversations/19:abc@thread.tacv2/activities/1700000000000"
        )
    );
    assert_eq!(hits[0].body["text"], "in the thread");
    assert_eq!(
        (hits[1].method.as_str(), hits[1].path.clone()),
        (
            "PUT",
            format!("/v3/conversations/19:abc@thread.tacv2/activities/{id}")
        )
    );
    assert_eq!(hits[1].body["text"], "edited");
    assert_eq!(
        (hits[2].method.as_str(), hits[2].path.as_str()),
        ("POST", "/v3/conversations")
    );
    assert_eq!(
        hits[2].body,
        json!({
            "isGroup": false,
            "bot": {"id": format!("28:{APP_ID}")},
            "members": [{"id": "29:user-1"}],
            "tenantId": TENANT,
            "channelData": {"tenant": {"id": TENANT}},
        })
    );
    assert!(hits.iter().all(|h| h.bearer.as_deref() == Some("fake-1")));
}

#[tokio::test]
async fn teams_a_wrong_client_secret_gets_no_token() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[("TEAMS_APP_PASSWORD", "not-the-secret")]);
    let err = c
        .send(&fake.service_url(), CONV, &message("hi"))
        .await
        .expect_err("no token");
    assert!(
        matches!(err, ConnectorError::Status { status: 401, .. }),
        "{err}"
    );
    assert!(!err.to_string().contains("not-the-secret"), "{err}");
    assert!(err.to_string().contains("check TEAMS_APP_ID"), "{err}");
    assert!(fake.hits().is_empty(), "nothing sent without a token");
}

// ---------------------------------------------------------------------------
// Robustness: pacing, a refused token, answers not worth retrying, keys
// ---------------------------------------------------------------------------

/// The most of `times` in any window of `span` (half-open).
fn busiest(times: &[std::time::Instant], span: Duration) -> usize {
    times
        .iter()
        .map(|start| {
            times
                .iter()
                .filter(|t| **t >= *start && t.duration_since(*start) < span)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn teams_sends_to_one_conversation_are_paced_and_another_is_not_slowed() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[]);
    let c = Arc::new(c);
    let url = fake.service_url();
    // The token first, so that the race below is only the pacing.
    c.tokens().token().await.expect("a token");
    const OTHER: &str = "a:other-1on1";
    let started = std::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..20 {
        let (c, url) = (c.clone(), url.clone());
        tasks.spawn(async move { c.send(&url, CONV, &message(&format!("busy {n}"))).await });
    }
    for n in 0..3 {
        let (c, url) = (c.clone(), url.clone());
        tasks.spawn(async move { c.send(&url, OTHER, &message(&format!("other {n}"))).await });
    }
    while let Some(sent) = tasks.join_next().await {
        sent.expect("joined").expect("sent");
    }
    let hits = fake.hits();
    let at_path = |conv: &str| -> Vec<std::time::Instant> {
        let path = format!("/v3/conversations/{conv}/activities");
        hits.iter()
            .filter(|h| h.path == path)
            .map(|h| h.at)
            .collect()
    };
    let mut busy = at_path(CONV);
    busy.sort();
    let other = at_path(OTHER);
    assert_eq!((busy.len(), other.len()), (20, 3));
    assert!(hits.iter().all(|h| h.status == 200), "no 429 needed");
    assert!(busiest(&busy, Duration::from_secs(1)) <= 7, "7 a second");
    assert!(busiest(&busy, Duration::from_secs(2)) <= 8, "8 in 2 s");
    let busy_took = busy.iter().max().expect("hits").duration_since(started);
    assert!(busy_took >= Duration::from_secs(3), "paced: {busy_took:?}");
    // The other conversation's calls all went before the busy one's 8th,
    // which waited for the first second to pass.
    let other_last = *other.iter().max().expect("hits");
    assert!(
        other_last < busy[7],
        "the other conversation was not slowed: {:?} vs {:?}",
        other_last.duration_since(started),
        busy[7].duration_since(started)
    );
}

#[tokio::test]
async fn teams_a_401_fetches_a_fresh_token_once() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[]);
    let url = fake.service_url();
    c.send(&url, CONV, &message("1")).await.expect("sent");

    // The Connector stops taking the token: one 401, one new token, sent.
    fake.revoke_tokens();
    c.send(&url, CONV, &message("2"))
        .await
        .expect("sent with a fresh token");
    assert_eq!(fake.token_calls(), 2);
    let seen: Vec<_> = fake
        .hits()
        .into_iter()
        .map(|h| (h.status, h.bearer.unwrap_or_default()))
        .collect();
    assert_eq!(
        seen,
        [
            (200, "fake-1".to_string()),
            (401, "fake-1".to_string()),
            (200, "fake-2".to_string())
        ]
    );

    // The fresh token refused too: reported, not looped.
    fake.revoke_tokens();
    fake.fail_next(&[Fault::Status(401)]);
    let err = c
        .update(&url, CONV, "act-1", &message("3"))
        .await
        .expect_err("refused twice");
    assert!(
        matches!(err, ConnectorError::Status { status: 401, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("token was refused"), "{err}");
    assert_eq!(fake.token_calls(), 3, "one fresh token, no more");
    assert_eq!(fake.hits().len(), 5);
}

#[tokio::test]
async fn teams_413_and_404_are_reported_not_retried() {
    let fake = FakeTeams::start();
    let (c, _) = connector(&fake, &[]);
    let url = fake.service_url();
    fake.fail_next(&[Fault::Status(413)]);
    let err = c
        .send(&url, CONV, &message("huge"))
        .await
        .expect_err("too large");
    assert!(
        matches!(
            err,
            ConnectorError::Status {
                status: 413,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("too large for Teams"), "{err}");

    fake.fail_next(&[Fault::Status(404)]);
    let err = c
        .update(&url, CONV, "act-gone", &message("edited"))
        .await
        .expect_err("not found");
    assert!(
        matches!(
            err,
            ConnectorError::Status {
                status: 404,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("no such conversation"), "{err}");
    assert_eq!(fake.hits().len(), 2, "neither was retried");
    assert_eq!(fake.token_calls(), 1);
}

#[tokio::test]
async fn teams_a_failed_key_refresh_cools_down_on_the_cached_keys() {
    let fake = FakeTeams::start();
    let (v, at) = verifier(&fake, &[]);
    let mut long = claims(&fake);
    long["exp"] = json!(now().timestamp() + 48 * 3600);
    let token = bearer(&sign(&long));
    let act = activity(&fake, TENANT);
    v.verify(Some(&token), &act).await.expect("ok");
    assert_eq!(fake.metadata_fetches(), 1);

    // A day on, the metadata is down: one try, then the cached keys.
    fake.set_metadata_down(true);
    advance(&at, TimeDelta::hours(24));
    for _ in 0..5 {
        v.verify(Some(&token), &act)
            .await
            .expect("the cached keys still verify");
        advance(&at, TimeDelta::seconds(10));
    }
    assert_eq!(fake.metadata_fetches(), 2, "one try in the cool-down");
    // An unknown kid does not fetch in the cool-down either.
    let k9 = sign_with(&long, "k9", "signing.key.pem");
    assert_eq!(
        refused(&v, &fake, Some(&k9)).await,
        Refused::UnknownKey("k9".into())
    );
    assert_eq!(fake.metadata_fetches(), 2);

    // After the cool-down: one more try (still down), then up again.
    advance(&at, TimeDelta::seconds(11));
    v.verify(Some(&token), &act).await.expect("cached");
    v.verify(Some(&token), &act).await.expect("cached");
    assert_eq!(fake.metadata_fetches(), 3);
    fake.set_metadata_down(false);
    advance(&at, TimeDelta::minutes(1));
    v.verify(Some(&token), &act).await.expect("refreshed");
    assert_eq!(fake.metadata_fetches(), 4);
    assert_eq!(fake.jwks_fetches(), 2);
    v.verify(Some(&token), &act).await.expect("fresh again");
    assert_eq!(fake.metadata_fetches(), 4, "fresh for another day");
}

#[tokio::test]
async fn teams_no_keys_at_all_is_tried_again_after_a_short_pause() {
    let fake = FakeTeams::start();
    fake.set_metadata_down(true);
    let (v, at) = verifier(&fake, &[]);
    let token = sign(&claims(&fake));
    for _ in 0..3 {
        let r = refused(&v, &fake, Some(&token)).await;
        assert!(matches!(r, Refused::KeysUnavailable(_)), "{r:?}");
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(fake.metadata_fetches(), 1);
    fake.set_metadata_down(false);
    advance(&at, TimeDelta::seconds(10));
    v.verify(Some(&bearer(&token)), &activity(&fake, TENANT))
        .await
        .expect("keys fetched after the pause");
    assert_eq!(fake.metadata_fetches(), 2);
}
