//! Passkeys on the web inbox: registering them, and the step-up that
//! approves a `step_up: passkey` gate.
//!
//! Both are WebAuthn ceremonies of two requests (webauthn-rs): the server
//! issues options, the browser's authenticator answers, the server checks
//! the answer against the state it kept. That state lives in the sign-in
//! ([`crate::model::login::Login::ceremony`]), so any replica finishes
//! what another started, and it is taken when finished: an assertion is
//! accepted once. The signature counter is kept after each use and must
//! grow (checked inside the directory's one change).
//!
//! A step-up's challenge is not webauthn-rs's random one: it is
//! [`crate::model::step_up::challenge`] of the session, gate, decision,
//! action digest and a nonce, so the signature is over exactly this
//! approval. The answer then goes through the hub's one intake with the
//! [`Proof`], which checks it again ([`crate::gate::step_up`]).
//!
//! | route | what |
//! |---|---|
//! | `GET /passkeys` | the person's passkeys, and a button to add one |
//! | `POST /passkeys/register`, `POST /passkeys/register/finish` | a registration |
//! | `POST /passkeys/remove` | removes one of one's own passkeys |
//! | `POST /sessions/{id}/step-up`, `POST /sessions/{id}/step-up/finish` | approve a gate with a passkey |

// A refusal here is the JSON response itself, built once where it is
// decided; handlers return it as is.
#![allow(clippy::result_large_err)]

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use webauthn_rs::prelude::{
    PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential, RegisterPublicKeyCredential,
    Webauthn, WebauthnBuilder,
};

use super::auth::{check_post, same_origin, Form, Viewer};
use super::{html, Web, WebError};
use crate::hub::answers::refusal_text;
use crate::hub::door::{Accepted, Door, DoorAnswer};
use crate::model::person::passkey::PasskeyRecord;
use crate::model::person::Person;
use crate::model::step_up::{self, Proof, StepUp};
use crate::model::Decision;

/// The relying party for this server's public URL: its host is the RP id
/// (WebAuthn wants a domain: `localhost` will do, an IP address will not),
/// the URL its origin. The error says why passkeys are off.
pub fn relying_party(public_url: &str) -> Result<Webauthn, String> {
    let url = url::Url::parse(public_url)
        .map_err(|e| format!("STRANDS_PUBLIC_URL `{public_url}` is not a URL: {e}"))?;
    let host = url
        .host_str()
        .ok_or_else(|| format!("STRANDS_PUBLIC_URL `{public_url}` names no host"))?;
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return Err(format!(
            "passkeys need a domain name in STRANDS_PUBLIC_URL, not the address {host} (use http://localhost:PORT on one machine)"
        ));
    }
    WebauthnBuilder::new(host, &url)
        .and_then(|b| b.rp_name("strands").build())
        .map_err(|e| format!("passkeys are off: {e:?}"))
}

/// A ceremony a sign-in started, kept in it until finished.
#[derive(Serialize, Deserialize)]
#[serde(tag = "ceremony", rename_all = "snake_case")]
enum Ceremony {
    Register {
        label: String,
        state: PasskeyRegistration,
    },
    StepUp {
        session: String,
        gate: String,
        call: Option<String>,
        decision: String,
        digest: String,
        nonce: String,
        state: PasskeyAuthentication,
    },
}

/// A refused JSON request: its status and what the page shows.
fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({"ok": false, "message": message.into()})),
    )
        .into_response()
}

fn rp(web: &Web) -> Result<&Webauthn, Response> {
    web.webauthn
        .as_ref()
        .map_err(|why| refuse(StatusCode::SERVICE_UNAVAILABLE, why.clone()))
}

/// Same origin, and the sign-in's CSRF token in the body's `csrf`.
fn check_json(web: &Web, viewer: &Viewer, headers: &HeaderMap, csrf: &str) -> Result<(), Response> {
    same_origin(web, headers).map_err(|_| {
        refuse(
            StatusCode::FORBIDDEN,
            "this request came from another site; use the inbox's own buttons",
        )
    })?;
    if viewer.login.csrf_matches(csrf) {
        Ok(())
    } else {
        Err(refuse(
            StatusCode::FORBIDDEN,
            "the CSRF token is missing or not this sign-in's; reload the page and try again",
        ))
    }
}

/// The directory's person signed in; passkeys belong to people.
async fn person(web: &Web, viewer: &Viewer) -> Result<Person, Response> {
    let people = web
        .hub
        .store
        .directory()
        .await
        .map_err(|e| refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    people.person_of(&viewer.caller.name).cloned().ok_or_else(|| {
        refuse(
            StatusCode::FORBIDDEN,
            format!(
                "`{}` is not in the people directory; passkeys belong to people (an admin adds you: strands people add NAME)",
                viewer.caller.name
            ),
        )
    })
}

async fn keep(web: &Web, viewer: &Viewer, ceremony: Option<&Ceremony>) -> Result<(), Response> {
    let mut login = viewer.login.clone();
    login.ceremony = ceremony.and_then(|c| serde_json::to_value(c).ok());
    web.hub
        .store
        .put_login(&login)
        .await
        .map_err(|e| refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))
}

/// Takes the ceremony this sign-in started (as the request's sign-in was
/// just read): it is gone from the store before its answer is checked, so
/// no answer is checked twice.
async fn take(web: &Web, viewer: &Viewer) -> Result<Ceremony, Response> {
    let Some(value) = viewer.login.ceremony.clone() else {
        return Err(refuse(
            StatusCode::CONFLICT,
            "no passkey request is waiting for this sign-in (used already, or never started); start again",
        ));
    };
    keep(web, viewer, None).await?;
    serde_json::from_value(value).map_err(|_| {
        refuse(
            StatusCode::CONFLICT,
            "the passkey request kept for this sign-in is unreadable; start again",
        )
    })
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The passkeys page.
pub async fn page(State(web): State<Web>, viewer: Viewer) -> Result<Response, WebError> {
    let people = web.hub.store.directory().await?;
    let me = people.person_of(&viewer.caller.name);
    let keys: Vec<Value> = me
        .map(|p| {
            p.passkeys
                .iter()
                .filter(|k| k.current())
                .map(|k| json!({"id": k.id, "label": k.label, "added_at": k.added_at}))
                .collect()
        })
        .unwrap_or_default();
    let page = web.pages.render(
        "passkeys.html",
        json!({
            "title": "Passkeys",
            "viewer": { "name": viewer.caller.name, "role": viewer.caller.role },
            "scoped": viewer.only_gate().is_some(),
            "who": viewer.caller.name,
            "person": me.map(|p| p.name.clone()),
            "keys": keys,
            "csrf": viewer.login.csrf,
            "unavailable": web.webauthn.as_ref().err(),
        }),
    );
    Ok(html(page))
}

#[derive(Deserialize)]
pub struct RegisterStart {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    label: String,
}

/// Starts a registration: the options for `navigator.credentials.create`.
pub async fn register(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    Json(body): Json<RegisterStart>,
) -> Response {
    match register_start(&web, &viewer, &headers, body).await {
        Ok(r) | Err(r) => r,
    }
}

async fn register_start(
    web: &Web,
    viewer: &Viewer,
    headers: &HeaderMap,
    body: RegisterStart,
) -> Result<Response, Response> {
    check_json(web, viewer, headers, &body.csrf)?;
    if viewer.only_gate().is_some() {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "a one-tap link's sign-in registers no passkey; sign in to the inbox first",
        ));
    }
    let rp = rp(web)?;
    let me = person(web, viewer).await?;
    let label = body.label.trim();
    let label = if label.is_empty() { "passkey" } else { label };
    if label.chars().count() > 60 {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "a passkey's name is 60 characters at most",
        ));
    }
    let exclude: Vec<_> = me
        .passkeys
        .iter()
        .filter(|k| k.current())
        .filter_map(PasskeyRecord::passkey)
        .map(|p| p.cred_id().clone())
        .collect();
    // A stable user handle per person, not their name.
    let digest = <sha2::Sha256 as sha2::Digest>::digest(me.name.as_bytes());
    let mut handle = [0u8; 16];
    handle.copy_from_slice(&digest[..16]);
    let (options, state) = rp
        .start_passkey_registration(
            uuid::Uuid::from_bytes(handle),
            &me.name,
            &me.name,
            Some(exclude),
        )
        .map_err(|e| refuse(StatusCode::UNPROCESSABLE_ENTITY, format!("{e:?}")))?;
    keep(
        web,
        viewer,
        Some(&Ceremony::Register {
            label: label.to_string(),
            state,
        }),
    )
    .await?;
    Ok(Json(options).into_response())
}

#[derive(Deserialize)]
pub struct RegisterFinish {
    #[serde(default)]
    csrf: String,
    credential: RegisterPublicKeyCredential,
}

/// Finishes a registration: the new passkey joins the person's.
pub async fn register_finish(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    Json(body): Json<RegisterFinish>,
) -> Response {
    let run = async {
        check_json(&web, &viewer, &headers, &body.csrf)?;
        let rp = rp(&web)?;
        let me = person(&web, &viewer).await?;
        let Ceremony::Register { label, state } = take(&web, &viewer).await? else {
            return Err(refuse(
                StatusCode::CONFLICT,
                "the waiting passkey request is not a registration; start again",
            ));
        };
        let key = rp
            .finish_passkey_registration(&body.credential, &state)
            .map_err(|e| {
                refuse(
                    StatusCode::FORBIDDEN,
                    format!("the passkey was not registered: {e:?}"),
                )
            })?;
        let id = b64(key.cred_id().as_ref());
        let record = PasskeyRecord {
            id: id.clone(),
            label,
            added_at: web.hub.clock.now(),
            removed_at: None,
            credential: serde_json::to_value(&key)
                .map_err(|e| refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
        };
        crate::hub::people::passkeys::add(&web.hub.store, &me.name, record, "web")
            .await
            .map_err(|e| refuse(StatusCode::CONFLICT, e.to_string()))?;
        tracing::info!(person = %me.name, passkey = %id, "registered a passkey");
        Ok(
            Json(json!({"ok": true, "id": id, "message": "Your passkey is registered."}))
                .into_response(),
        )
    };
    match run.await {
        Ok(r) | Err(r) => r,
    }
}

/// Removes one of the signed-in person's own passkeys.
pub async fn remove(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    let form = Form::parse(&body);
    check_post(&web, &viewer, &headers, &form)?;
    let people = web.hub.store.directory().await?;
    let Some(me) = people.person_of(&viewer.caller.name) else {
        return Err(WebError::forbidden("you are not in the people directory"));
    };
    let id = form.get("id").unwrap_or_default();
    crate::hub::people::passkeys::remove(&web.hub.store, &me.name, id, &viewer.caller.name, "web")
        .await?;
    Ok(Redirect::to("/passkeys").into_response())
}

#[derive(Deserialize)]
pub struct StepUpStart {
    #[serde(default)]
    csrf: String,
    gate: String,
    #[serde(default)]
    call: Option<String>,
    /// `approve` (the decisions a step-up gate asks a passkey for that
    /// the page offers).
    #[serde(default = "approve")]
    decision: String,
}

fn approve() -> String {
    "approve".into()
}

/// Starts a step-up: the options for `navigator.credentials.get`, whose
/// challenge binds this approval.
pub async fn step_up(
    State(web): State<Web>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<StepUpStart>,
) -> Response {
    let run = async {
        check_json(&web, &viewer, &headers, &body.csrf)?;
        let rp = rp(&web)?;
        if body.decision != "approve" {
            return Err(refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                "a passkey confirms an approval (decision `approve`)",
            ));
        }
        if let Some(only) = viewer.only_gate() {
            if only != body.gate {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    "this sign-in (a one-tap link) answers its own gate only",
                ));
            }
        }
        let session = web.hub.store.get(&id).await.map_err(|e| {
            let p = crate::hub::problem::Problem::from(e);
            refuse(p.status, p.message)
        })?;
        if !viewer.scoped_to(&session.id)
            || !crate::hub::inbox::may_read(
                &web.hub,
                &viewer.caller.name,
                &viewer.caller.idp_groups,
                viewer.caller.role,
                &session,
            )
        {
            return Err(refuse(StatusCode::FORBIDDEN, "you may not read this run"));
        }
        let Some(gate) = session.open_gate(&body.gate) else {
            return Err(refuse(StatusCode::CONFLICT, "that gate is no longer open"));
        };
        if gate.step_up != Some(StepUp::Passkey) {
            return Err(refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                "this gate asks for no passkey; approve it with its button",
            ));
        }
        let decision = Decision::Approve;
        // Who may answer, as the page shows it, before asking for the
        // passkey (the intake judges the answer itself again).
        if !crate::hub::inbox::may_answer(
            &web.hub,
            &viewer.caller.name,
            &viewer.caller.idp_groups,
            &session,
            gate,
        ) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "you may not answer this gate (see its approvers on the page)",
            ));
        }
        let me = person(&web, &viewer).await?;
        let keys: Vec<_> = me
            .passkeys
            .iter()
            .filter(|k| k.current())
            .filter_map(PasskeyRecord::passkey)
            .collect();
        if keys.is_empty() {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "you have no passkey yet: add one on the Passkeys page (/passkeys), then come back",
            ));
        }
        let digest = crate::gate::step_up::digest(&session, gate, body.call.as_deref(), &decision);
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let verb = decision.verb().to_string();
        let handle = gate.handle();
        let challenge = step_up::challenge(&session.id, &handle, &verb, &digest, &nonce);
        let (mut options, state) = rp
            .start_passkey_authentication(&keys)
            .map_err(|e| refuse(StatusCode::UNPROCESSABLE_ENTITY, format!("{e:?}")))?;
        // The challenge is this approval's, in what the browser signs and
        // in what the server checks.
        options.public_key.challenge = challenge.clone().into();
        let state = bind(state, &challenge).ok_or_else(|| {
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "could not bind the challenge",
            )
        })?;
        keep(
            &web,
            &viewer,
            Some(&Ceremony::StepUp {
                session: session.id.clone(),
                gate: handle,
                call: body.call.clone(),
                decision: verb,
                digest,
                nonce,
                state,
            }),
        )
        .await?;
        Ok(Json(options).into_response())
    };
    match run.await {
        Ok(r) | Err(r) => r,
    }
}

/// The authentication state with `challenge` in place of its random one.
fn bind(state: PasskeyAuthentication, challenge: &[u8]) -> Option<PasskeyAuthentication> {
    let mut v = serde_json::to_value(&state).ok()?;
    let slot = v.get_mut("ast")?.get_mut("challenge")?;
    *slot = Value::String(b64(challenge));
    serde_json::from_value(v).ok()
}

#[derive(Deserialize)]
pub struct StepUpFinish {
    #[serde(default)]
    csrf: String,
    credential: PublicKeyCredential,
}

/// Finishes a step-up: the assertion checked, the counter kept, and the
/// approval handed to the hub's intake with its proof.
pub async fn step_up_finish(
    State(web): State<Web>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<StepUpFinish>,
) -> Response {
    let run = async {
        check_json(&web, &viewer, &headers, &body.csrf)?;
        let rp = rp(&web)?;
        let Ceremony::StepUp {
            session,
            gate,
            call,
            decision,
            digest,
            nonce,
            state,
        } = take(&web, &viewer).await?
        else {
            return Err(refuse(
                StatusCode::CONFLICT,
                "the waiting passkey request is not an approval; start again",
            ));
        };
        if session != id {
            return Err(refuse(
                StatusCode::CONFLICT,
                "the waiting passkey request is for another run; start again",
            ));
        }
        let me = person(&web, &viewer).await?;
        let result = rp
            .finish_passkey_authentication(&body.credential, &state)
            .map_err(|e| {
                refuse(
                    StatusCode::FORBIDDEN,
                    format!(
                        "the passkey did not confirm this approval: {e:?}; nothing was recorded"
                    ),
                )
            })?;
        if !result.user_verified() {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "the authenticator did not verify you (user verification is required); nothing was recorded",
            ));
        }
        let cred = b64(result.cred_id().as_ref());
        let Some(record) = me.passkey(&cred).filter(|k| k.current()).cloned() else {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "that passkey is not one of yours (removed?); nothing was recorded",
            ));
        };
        let mut key = record.passkey().ok_or_else(|| {
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "a stored passkey is unreadable",
            )
        })?;
        key.update_credential(&result);
        let after = serde_json::to_value(&key)
            .map_err(|e| refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        crate::hub::people::passkeys::used(&web.hub.store, &me.name, &cred, after, "web")
            .await
            .map_err(|e| refuse(StatusCode::FORBIDDEN, format!("{e}; nothing was recorded")))?;
        let response = &body.credential.response;
        let proof = Proof {
            person: me.name.clone(),
            credential: cred,
            public_key: record.public_key().unwrap_or(Value::Null),
            decision,
            digest,
            nonce,
            authenticator_data: b64(response.authenticator_data.as_ref()),
            client_data: b64(response.client_data_json.as_ref()),
            signature: b64(response.signature.as_ref()),
        };
        let answer = DoorAnswer::new(&session, &viewer.caller.name, Door::Web, Decision::Approve)
            .at(Some(&gate))
            .call(call.as_deref())
            .idp_groups(viewer.caller.idp_groups.iter().cloned())
            .proven(proof);
        let taken = web.hub.take(answer).await.map_err(|e| {
            let p = crate::hub::problem::Problem::from(e);
            refuse(p.status, p.message)
        })?;
        let message = match taken {
            Ok(Accepted::Counted(_)) => {
                "Confirmed with your passkey; the gate waits for more approvals.".to_string()
            }
            Ok(Accepted::Queued(_) | Accepted::Recorded(_) | Accepted::Repeated(_)) => {
                "Approved, confirmed with your passkey.".to_string()
            }
            Err(refusal) => {
                let p = crate::hub::problem::Problem::from(refusal.clone());
                return Err(refuse(p.status, refusal_text(&refusal)));
            }
        };
        Ok(Json(json!({"ok": true, "message": message})).into_response())
    };
    match run.await {
        Ok(r) | Err(r) => r,
    }
}
