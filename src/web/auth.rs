//! Signing in to the web inbox and proving each request.
//!
//! The login page takes an API token (a password field), or links to the
//! identity provider ([`super::oidc`]); a good one makes
//! a sign-in ([`crate::model::login`]) and sets its cookie: `HttpOnly`,
//! `SameSite=Lax`, `Secure` over HTTPS (or behind a proxy saying so),
//! expiring with the sign-in. Sign-out ends it in the store; revoking the
//! token ends every sign-in made with it. Every state-changing request is
//! checked against cross-site use twice: the browser's `Sec-Fetch-Site` /
//! `Origin` must say same-origin, and the form must carry the sign-in's
//! CSRF token.

use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::TimeDelta;
use serde::Deserialize;

use super::{html, Web, WebError};
use crate::hub::caller::Caller;
use crate::model::login::{self, Login, LoginScope, NewLogin};

/// The cookie a sign-in lives in.
pub const COOKIE: &str = "strands_login";

/// The signed-in person behind a request.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub login: Login,
    pub caller: Caller,
}

impl Viewer {
    /// Whether this sign-in may reach session `id` at all (a one-tap
    /// link's sign-in reaches one run).
    pub fn scoped_to(&self, id: &str) -> bool {
        match &self.login.scope {
            LoginScope::Token { .. } | LoginScope::Oidc { .. } => true,
            LoginScope::Gate { session, .. } => session == id,
        }
    }
    /// The one gate a link's sign-in may answer.
    pub fn only_gate(&self) -> Option<&str> {
        match &self.login.scope {
            LoginScope::Token { .. } | LoginScope::Oidc { .. } => None,
            LoginScope::Gate { gate, .. } => Some(gate),
        }
    }
}

fn cookie_value(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(|c| c.ok())
        .find(|c| c.name() == COOKIE)
        .map(|c| c.value().to_string())
}

/// Where the request was for, to come back after signing in.
fn here(parts: &Parts) -> String {
    parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into())
}

/// The sign-in a cookie stands for, if it is valid now.
pub async fn signed_in(web: &Web, headers: &HeaderMap) -> Result<Option<Viewer>, WebError> {
    let Some(value) = cookie_value(headers) else {
        return Ok(None);
    };
    let Some((id, secret)) = login::split(&value) else {
        return Ok(None);
    };
    let Some(login) = web.hub.store.login(id).await? else {
        return Ok(None);
    };
    if !login.admits(secret, web.hub.clock.now()) {
        return Ok(None);
    }
    match &login.scope {
        // A revoked or expired token ends the sign-ins made with it.
        LoginScope::Token { token_id } => match web.hub.store.token(token_id).await? {
            Some(t) if t.usable(web.hub.clock.now()) => {}
            _ => return Ok(None),
        },
        // So does turning off (or changing) the identity provider.
        LoginScope::Oidc { issuer, .. } => {
            if web.oidc.as_ref().map(|p| p.settings().issuer.as_str()) != Some(issuer.as_str()) {
                return Ok(None);
            }
        }
        LoginScope::Gate { .. } => {}
    }
    let caller = Caller {
        name: login.name.clone(),
        role: login.role,
        idp_groups: login.groups.clone(),
    };
    Ok(Some(Viewer { login, caller }))
}

impl FromRequestParts<Web> for Viewer {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, web: &Web) -> Result<Self, WebError> {
        match signed_in(web, &parts.headers).await? {
            Some(v) => Ok(v),
            None => Err(WebError::SignIn { next: here(parts) }),
        }
    }
}

/// Refuses a request a browser says came from another site: `Sec-Fetch-Site`
/// other than `same-origin`/`none`, or an `Origin` that is not this
/// server's (by its `Host`, or the public URL).
pub fn same_origin(web: &Web, headers: &HeaderMap) -> Result<(), WebError> {
    let refuse =
        || WebError::forbidden("this request came from another site; use the inbox's own buttons");
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or_default();
        if !matches!(site, "same-origin" | "none") {
            return Err(refuse());
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default().trim_end_matches('/');
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let by_host = ["http", "https"]
            .iter()
            .any(|scheme| origin == format!("{scheme}://{host}"));
        let public = url::Url::parse(&web.config.public_url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        if !(by_host || origin == public) {
            return Err(refuse());
        }
    }
    Ok(())
}

/// A form body's fields, in order (repeated names kept).
#[derive(Debug, Default)]
pub struct Form(pub Vec<(String, String)>);

impl Form {
    pub fn parse(body: &[u8]) -> Form {
        Form(url::form_urlencoded::parse(body).into_owned().collect())
    }
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Checks a state-changing request of `viewer`: same origin and the
/// sign-in's CSRF token in the form.
pub fn check_post(
    web: &Web,
    viewer: &Viewer,
    headers: &HeaderMap,
    form: &Form,
) -> Result<(), WebError> {
    same_origin(web, headers)?;
    match form.get("csrf") {
        Some(t) if viewer.login.csrf_matches(t) => Ok(()),
        _ => Err(WebError::forbidden(
            "the form's CSRF token is missing or not this sign-in's; reload the page and try again",
        )),
    }
}

/// A `Set-Cookie` value for `value` lasting until `login` expires.
pub fn set_cookie(value: &str, max_age: TimeDelta, secure: bool) -> HeaderValue {
    cookie_header(COOKIE, value, "/", max_age, secure)
}

/// A `Set-Cookie` value as every cookie of the inbox is set: `HttpOnly`,
/// `SameSite=Lax`, `Secure` when `secure`, under `path`, for `max_age`.
pub fn cookie_header(
    name: &'static str,
    value: &str,
    path: &'static str,
    max_age: TimeDelta,
    secure: bool,
) -> HeaderValue {
    let c = cookie::Cookie::build((name, value.to_string()))
        .path(path)
        .http_only(true)
        .same_site(cookie::SameSite::Lax)
        .secure(secure)
        .max_age(cookie::time::Duration::seconds(max_age.num_seconds()))
        .build();
    HeaderValue::from_str(&c.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn clear_cookie(secure: bool) -> HeaderValue {
    set_cookie("", TimeDelta::zero(), secure)
}

#[derive(Debug, Deserialize)]
pub struct Next {
    pub next: Option<String>,
}

/// Only paths on this server (never `//host` or a URL): no open redirect.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n.into(),
        _ => "/".into(),
    }
}

/// The login page.
pub async fn login_page(State(web): State<Web>, Query(q): Query<Next>) -> Response {
    let next = safe_next(q.next.as_deref());
    html(web.pages.login(&next, None, web.oidc_name().as_deref()))
}

/// Signs in with an API token.
pub async fn login(
    State(web): State<Web>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    same_origin(&web, &headers)?;
    let form = Form::parse(&body);
    let next = safe_next(form.get("next"));
    let presented = form.get("token").unwrap_or_default().trim();
    let Some(token) = crate::hub::tokens::authenticate(&web.hub.store, presented).await? else {
        let page = web.pages.login(
            &next,
            Some("That token is not valid (unknown, revoked or expired). Make one with `strands tokens create NAME`."),
            web.oidc_name().as_deref(),
        );
        return Ok((axum::http::StatusCode::UNAUTHORIZED, html(page)).into_response());
    };
    let now = web.hub.clock.now();
    let mut until = now + TimeDelta::hours(i64::from(web.config.login_hours.max(1)));
    if let Some(t) = token.expires_at {
        until = until.min(t);
    }
    let new = NewLogin::generate(
        &token.name,
        token.role,
        LoginScope::Token {
            token_id: token.id.clone(),
        },
        now,
        until,
    );
    web.hub.store.put_login(&new.login).await?;
    tracing::info!(who = %token.name, "signed in to the web inbox");
    let mut res = Redirect::to(&next).into_response();
    res.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(&new.cookie, until - now, web.secure(&headers)),
    );
    Ok(res)
}

/// Signs out: the sign-in ends in the store, the cookie is cleared.
pub async fn logout(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    check_post(&web, &viewer, &headers, &Form::parse(&body))?;
    web.hub.store.end_login(&viewer.login.id).await?;
    // Signed in through the identity provider: signed out there too, when
    // it says where.
    let to = match (&viewer.login.scope, &web.oidc) {
        (LoginScope::Oidc { .. }, Some(p)) => p
            .end_session(&web.config.public_url)
            .map(|u| u.to_string())
            .unwrap_or_else(|| "/login".into()),
        _ => "/login".into(),
    };
    let mut res = Redirect::to(&to).into_response();
    res.headers_mut()
        .insert(header::SET_COOKIE, clear_cookie(web.secure(&headers)));
    Ok(res)
}
