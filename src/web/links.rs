//! One-tap links in the browser: `GET /l/{token}` shows what the link is
//! for and a button — it decides nothing and consumes nothing, so link
//! previewers and scanners are harmless — and `POST /l/{token}` (the
//! press) redeems it once ([`crate::hub::links`]) and signs the holder in
//! for that gate only, then shows the run's page.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::Utc;

use super::auth::{same_origin, set_cookie};
use super::{html, Web, WebError};
use crate::hub::links::{self, LinkRefusal};
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
    let workflow = web
        .hub
        .store
        .load(&grant.session)
        .await?
        .map(|s| s.workflow)
        .unwrap_or_default();
    let page = web.pages.render(
        "link.html",
        serde_json::json!({
            "title": "Open the approval",
            "token": token,
            "grant": grant,
            "workflow": workflow,
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
) -> Result<Response, WebError> {
    same_origin(&web, &headers)?;
    let grant = links::redeem(&web.hub.store, &token)
        .await?
        .map_err(|r| refused(&r))?;
    let now = Utc::now();
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
    let mut res = Redirect::to(&format!("/sessions/{}", grant.session)).into_response();
    res.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(&new.cookie, until - now, web.secure(&headers)),
    );
    *res.status_mut() = StatusCode::SEE_OTHER;
    Ok(res)
}
