//! The web inbox's grants page: approvers' grants (trust within limits,
//! `model::grant`) with a Revoke button each — what `strands trust list`
//! and `strands trust revoke` do, for anyone signed in (a revocation only
//! ever makes calls ask again; it is audited with who did it) — not for
//! a one-tap link's sign-in, which answers its gate only.
//!
//! | route | what |
//! |---|---|
//! | `GET /grants` | the live grants (`?all=1`: expired and revoked too) |
//! | `POST /grants/revoke` | revokes one (form: `csrf`, `id`) |

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::{check_post, Form, Viewer};
use super::{html, Web, WebError};
use crate::hub::grants;

#[derive(Debug, Default, Deserialize)]
pub struct GrantsQuery {
    #[serde(default)]
    all: Option<String>,
}

pub async fn page(
    State(web): State<Web>,
    viewer: Viewer,
    Query(q): Query<GrantsQuery>,
) -> Result<Response, WebError> {
    if viewer.only_gate().is_some() {
        return Err(WebError::forbidden(
            "a one-tap sign-in answers its gate only",
        ));
    }
    let now = web.hub.clock.now();
    let all = q.all.is_some_and(|a| !a.is_empty() && a != "0");
    let list: Vec<Value> = grants::list(&web.hub.store, all, now)
        .await?
        .iter()
        .rev()
        .map(|g| grants::listed(g, now))
        .collect();
    let page = web.pages.render(
        "grants.html",
        json!({
            "title": "Grants",
            "viewer": { "name": viewer.caller.name, "role": viewer.caller.role },
            "scoped": false,
            "grants": list,
            "all": all,
            "csrf": viewer.login.csrf,
        }),
    );
    Ok(html(page))
}

pub async fn revoke(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    let form = Form::parse(&body);
    check_post(&web, &viewer, &headers, &form)?;
    if viewer.only_gate().is_some() {
        return Err(WebError::forbidden(
            "a one-tap sign-in answers its gate only",
        ));
    }
    let id = form.get("id").unwrap_or_default();
    grants::revoke(&web.hub.store, id, &viewer.caller.name, "web").await?;
    Ok(Redirect::to("/grants").into_response())
}
