//! One-tap links in the browser: `GET /l/{token}` shows what the link is
//! for and a button — it decides nothing and consumes nothing, so link
//! previewers and scanners are harmless — and `POST /l/{token}` (the
//! press) redeems it once ([`crate::hub::links`]) and signs the holder in
//! for that gate only, then shows the run's page.
//!
//! A link with an intent (a mail's Approve or Reject link,
//! [`links::Intent`]) shows the gate — workflow, prompt, who started it —
//! and one button: Approve, or Reject with a reason box. The press
//! (same-origin; the unguessable token in its URL is what a forger lacks)
//! signs in as above and answers that way through the hub's intake, as the
//! link's person, `via: email`; a gate decided meanwhile is told who
//! decided it. A reason the gate requires is checked before the link is
//! used up.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::auth::{same_origin, set_cookie, Form};
use super::{html, Web, WebError};
use crate::hub::answers::{refusal_text, AnswerRequest};
use crate::hub::door::{Accepted, Door, DoorAnswer};
use crate::hub::links::{self, Intent, LinkRefusal};
use crate::hub::problem::Problem;
use crate::model::login::{LoginScope, NewLogin};
use crate::model::token::Role;

fn refused(r: &LinkRefusal) -> WebError {
    WebError::forbidden(format!("{r}. Sign in with a token instead."))
}

/// What the link is for, and the button that uses it.
pub async fn landing(
    State(web): State<Web>,
    Path(token): Path<String>,
) -> Result<Response, WebError> {
    let grant = links::check(&web.hub.store, &token)
        .await?
        .map_err(|r| refused(&r))?;
    let session = web.hub.store.load(&grant.session).await?;
    let workflow = session
        .as_ref()
        .map(|s| s.workflow.clone())
        .unwrap_or_default();
    let gate = session.as_ref().and_then(|s| s.open_gate(&grant.gate));
    let page = web.pages.render(
        "link.html",
        serde_json::json!({
            "title": match grant.intent {
                Some(Intent::Approve) => "Approve",
                Some(Intent::Reject) => "Reject",
                None => "Open the approval",
            },
            "token": token,
            "grant": grant,
            "intent": grant.intent.map(Intent::decision),
            "workflow": workflow,
            "started_by": session.as_ref().map(|s| s.started_by.clone()),
            "open": gate.is_some(),
            "prompt": gate.map(|g| g.prompt.clone()),
            "require_reason": gate.is_some_and(|g| g.require_reason),
            "expires_at": grant.expires_at(),
        }),
    );
    let mut res = html(page);
    // A link's page is never cached or indexed.
    res.headers_mut().insert(
        "x-robots-tag",
        axum::http::HeaderValue::from_static("noindex"),
    );
    Ok(res)
}

/// Uses the link: a sign-in for its gate only, until the link expires
/// (at most a day).
pub async fn redeem(
    State(web): State<Web>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    same_origin(&web, &headers)?;
    let form = Form::parse(&body);
    // An answering link's form is checked before the link is used up.
    let checked = links::check(&web.hub.store, &token)
        .await?
        .map_err(|r| refused(&r))?;
    let answer = match checked.intent {
        None => None,
        Some(intent) => Some(answer_of(&web, &checked, intent, &form).await?),
    };
    let grant = links::redeem(&web.hub.store, &token)
        .await?
        .map_err(|r| refused(&r))?;
    let now = web.hub.clock.now();
    let until = grant.expires_at().min(now + chrono::TimeDelta::hours(24));
    let new = NewLogin::generate(
        &grant.person,
        Role::Approver,
        LoginScope::Gate {
            session: grant.session.clone(),
            gate: grant.gate.clone(),
        },
        now,
        until,
    );
    web.hub.store.put_login(&new.login).await?;
    tracing::info!(who = %grant.person, session = %grant.session, "signed in by a one-tap link");
    let mut res = match answer {
        None => Redirect::to(&format!("/sessions/{}", grant.session)).into_response(),
        Some(req) => decide(&web, &grant, req).await?,
    };
    res.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(&new.cookie, until - now, web.secure(&headers)),
    );
    if res.status().is_redirection() {
        *res.status_mut() = StatusCode::SEE_OTHER;
    }
    Ok(res)
}

/// The answer an answering link's form asks for: its intent's only (a
/// reason with a reject; required when the gate says so).
async fn answer_of(
    web: &Web,
    grant: &links::Grant,
    intent: Intent,
    form: &Form,
) -> Result<AnswerRequest, WebError> {
    if form.get("decision") != Some(intent.decision()) {
        return Err(WebError::bad_request(format!(
            "this link can only {}; open it again and use its button",
            intent.decision()
        )));
    }
    let reason = form
        .get("reason")
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    if intent == Intent::Reject && reason.is_none() {
        let needs = web
            .hub
            .store
            .load(&grant.session)
            .await?
            .and_then(|s| s.open_gate(&grant.gate).map(|g| g.require_reason))
            .unwrap_or(false);
        if needs {
            return Err(WebError::bad_request(
                "this gate needs a reason to reject: go back, write one and press Reject again",
            ));
        }
    }
    Ok(AnswerRequest {
        decision: intent.decision().to_string(),
        gate: None,
        call: None,
        reason,
        feedback: None,
        response: None,
        args: None,
        vars: Default::default(),
        values: None,
        ..AnswerRequest::default()
    })
}

/// Answers the link's gate as its person: to the run's page, or a page
/// saying who decided it already.
async fn decide(web: &Web, grant: &links::Grant, req: AnswerRequest) -> Result<Response, WebError> {
    let answer = DoorAnswer::new(&grant.session, &grant.person, Door::Email, req.decision()?)
        .at(Some(&grant.gate));
    match web.hub.take(answer).await? {
        Ok(
            Accepted::Counted(_)
            | Accepted::Queued(_)
            | Accepted::Recorded(_)
            | Accepted::Repeated(_),
        ) => {
            tracing::info!(who = %grant.person, session = %grant.session, gate = %grant.gate, "answered by a one-tap link");
            Ok(Redirect::to(&format!("/sessions/{}", grant.session)).into_response())
        }
        Err(refusal) => {
            let status = Problem::from(refusal.clone()).status;
            let body = super::render::error_page(status, &refusal_text(&refusal));
            Ok((status, html(body)).into_response())
        }
    }
}
