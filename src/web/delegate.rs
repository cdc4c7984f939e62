//! "Away?" on the inbox: a signed-in person sets or removes their own
//! delegation (who answers for them, from which day until which). Two
//! form posts, CSRF-checked like every other form of the inbox, handed to
//! [`crate::hub::people::delegations`] — the same checks, audit entry and
//! refusals as `strands people delegate` and the API; then back to the
//! inbox, which lists the person's delegations ([`mine`]).
//!
//! | route | who | what |
//! |---|---|---|
//! | `POST /inbox/delegate` | a person of the directory | set their delegation (`to`, `from`, `until`, `reason`) |
//! | `POST /inbox/undelegate` | the same | remove theirs (`to`: only that one) |

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};

use super::auth::{check_post, Form, Viewer};
use super::{Web, WebError};
use crate::hub::people::delegations::{self, DelegateRequest, DelegationView};
use crate::model::token::Role;

/// The viewer's person name, or why they cannot delegate here.
fn person_of(web: &Web, viewer: &Viewer) -> Result<String, WebError> {
    web.hub
        .people()
        .person_of(&viewer.caller.name)
        .map(|p| p.name.clone())
        .ok_or_else(|| {
            WebError::bad_request(format!(
                "`{}` is not in the people directory, so nobody can answer for it; ask an admin to add you (`strands people add`)",
                viewer.caller.name
            ))
        })
}

/// The delegations from or to the viewer, for the inbox page (none when
/// the directory does not know them).
pub fn mine(web: &Web, viewer: &Viewer) -> (Option<String>, Vec<DelegationView>) {
    let people = web.hub.people();
    let Some(me) = people
        .person_of(&viewer.caller.name)
        .map(|p| p.name.clone())
    else {
        return (None, Vec::new());
    };
    let list = delegations::list(&people, Some(&me), web.hub.clock.now()).unwrap_or_default();
    (Some(me), list)
}

fn by(viewer: &Viewer) -> (&str, bool, &'static str) {
    (
        viewer.caller.name.as_str(),
        viewer.caller.role >= Role::Admin,
        "web",
    )
}

/// Sets the viewer's own delegation.
pub async fn set(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    let form = Form::parse(&body);
    check_post(&web, &viewer, &headers, &form)?;
    let me = person_of(&web, &viewer)?;
    let field = |name: &str| form.get(name).unwrap_or_default().trim().to_string();
    let req = DelegateRequest {
        to: field("to"),
        from: field("from"),
        until: field("until"),
        reason: Some(field("reason")).filter(|r| !r.is_empty()),
    };
    if req.to.is_empty() {
        return Err(WebError::bad_request("say who answers for you (`to`)"));
    }
    delegations::delegate(&web.hub.store, &me, &req, by(&viewer), web.hub.clock.now()).await?;
    web.hub.fresh_people().await?;
    Ok(Redirect::to("/").into_response())
}

/// Removes the viewer's own delegation(s).
pub async fn unset(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    let form = Form::parse(&body);
    check_post(&web, &viewer, &headers, &form)?;
    let me = person_of(&web, &viewer)?;
    let to = form.get("to").map(str::trim).filter(|t| !t.is_empty());
    delegations::undelegate(&web.hub.store, &me, to, by(&viewer)).await?;
    web.hub.fresh_people().await?;
    Ok(Redirect::to("/").into_response())
}
