//! The inbox (`/`): what waits for the signed-in person — the open gates
//! and tool calls they may answer, newest first ([`crate::hub::inbox`]) —
//! and the recent runs they may read; filters by workflow and status; a
//! list that refreshes itself when anything happens (SSE pings, then a
//! fetch of `/inbox/list`); bulk approve of routine gates, each answer
//! taken and audited one by one by the hub's intake.

use std::convert::Infallible;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use super::auth::{check_post, Form, Viewer};
use super::{html, Web, WebError};
use crate::hub::door::{Door, DoorAnswer};
use crate::model::token::Role;
use crate::model::{Decision, Status, Summary};

/// At most this many recent runs are listed.
const RUNS: usize = 50;
/// Rows of the index read per page, and at most in all, to fill the list.
const PAGE: usize = 256;
const SCAN: usize = 5_000;

#[derive(Debug, Default, Deserialize, Serialize)]
pub struct Filter {
    /// Only runs of this workflow.
    #[serde(default)]
    pub workflow: Option<String>,
    /// Recent runs with this status (`paused`, `completed`, ...).
    #[serde(default)]
    pub status: Option<String>,
}

impl Filter {
    fn workflow(&self) -> Option<&str> {
        self.workflow.as_deref().filter(|w| !w.is_empty())
    }
    fn status(&self) -> Result<Option<Status>, WebError> {
        match self.status.as_deref() {
            None | Some("") => Ok(None),
            Some(s) => Status::parse(s).map(Some).ok_or_else(|| {
                WebError::bad_request(format!(
                    "status `{s}` is not one of running, paused, completed, failed, rejected, cancelled"
                ))
            }),
        }
    }
}

/// `?after=N`: the event number a page was rendered at.
#[derive(Debug, Default, Deserialize)]
pub struct After {
    pub after: Option<u64>,
}

/// What a bulk approve did to one gate.
#[derive(Debug, Serialize)]
pub struct Outcome {
    pub session: String,
    pub gate: String,
    pub ok: bool,
    pub message: String,
}

async fn context(
    web: &Web,
    viewer: &Viewer,
    filter: &Filter,
    results: Vec<Outcome>,
) -> Result<serde_json::Value, WebError> {
    let hub = &web.hub;
    // Read first: whatever happens after this number, the page hears of.
    let after = hub.store.last_event().await?;
    let waiting = crate::hub::inbox::waiting_for(
        hub,
        &viewer.caller.name,
        &viewer.caller.idp_groups,
        filter.workflow(),
    )
    .await?;
    let status = filter.status()?;
    // Recent runs from pages of the store's index (never a scan), at most
    // `SCAN` rows read to fill the list.
    let mut runs: Vec<Summary> = Vec::new();
    let mut cursor = None;
    let mut read = 0;
    'pages: while runs.len() < RUNS && read < SCAN {
        let page = hub.store.list_page(status, cursor.clone(), PAGE).await?;
        let last = page.len() < PAGE;
        for s in page {
            read += 1;
            cursor = Some((s.created_at, s.id.clone()));
            if filter.workflow().is_some_and(|w| w != s.workflow) {
                continue;
            }
            if viewer.caller.role < Role::Operator {
                match hub.store.load(&s.id).await? {
                    Some(full)
                        if crate::hub::inbox::may_read(
                            hub,
                            &viewer.caller.name,
                            &viewer.caller.idp_groups,
                            viewer.caller.role,
                            &full,
                        ) => {}
                    _ => continue,
                }
            }
            runs.push(s);
            if runs.len() >= RUNS {
                break 'pages;
            }
        }
        if last {
            break;
        }
    }
    // The workflows to filter by: those runs may start, and those seen here.
    let mut workflows: std::collections::BTreeSet<String> = hub
        .workflows
        .as_deref()
        .map(crate::hub::workflows::list)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    workflows.extend(runs.iter().map(|r| r.workflow.clone()));
    workflows.extend(waiting.iter().map(|w| w.workflow.clone()));
    let (me, delegations) = super::delegate::mine(web, viewer);
    Ok(serde_json::json!({
        "title": "Inbox",
        "me": me,
        "delegations": delegations,
        "viewer": { "name": viewer.caller.name, "role": viewer.caller.role },
        "csrf": viewer.login.csrf,
        "waiting": waiting,
        "runs": runs,
        "workflows": workflows,
        "filter": filter,
        "statuses": ["paused", "running", "completed", "failed", "rejected", "cancelled"],
        "results": results,
        "after": after,
        "live_query": url::form_urlencoded::Serializer::new(String::new())
            .append_pair("workflow", filter.workflow().unwrap_or_default())
            .append_pair("status", filter.status.as_deref().unwrap_or_default())
            .finish(),
        "now": web.hub.clock.now(),
    }))
}

/// A link's sign-in reaches one run: its page instead of the inbox.
fn scoped(viewer: &Viewer) -> Option<Response> {
    match &viewer.login.scope {
        crate::model::login::LoginScope::Gate { session, .. } => {
            Some(Redirect::to(&format!("/sessions/{session}")).into_response())
        }
        crate::model::login::LoginScope::Token { .. }
        | crate::model::login::LoginScope::Oidc { .. } => None,
    }
}

/// `template` (the page, or its list alone) for `viewer`.
async fn show(
    web: &Web,
    viewer: &Viewer,
    filter: &Filter,
    template: &str,
) -> Result<Response, WebError> {
    if let Some(r) = scoped(viewer) {
        return Ok(r);
    }
    let ctx = context(web, viewer, filter, Vec::new()).await?;
    Ok(html(web.pages.render(template, ctx)))
}

/// The inbox page.
pub async fn page(
    State(web): State<Web>,
    viewer: Viewer,
    Query(filter): Query<Filter>,
) -> Result<Response, WebError> {
    show(&web, &viewer, &filter, "inbox.html").await
}

/// The inbox's list alone, for the page's live refresh.
pub async fn list(
    State(web): State<Web>,
    viewer: Viewer,
    Query(filter): Query<Filter>,
) -> Result<Response, WebError> {
    show(&web, &viewer, &filter, "inbox_list.html").await
}

/// "Something changed" pings: a gate opened or was answered (here, in
/// Slack, by the CLI or the API), or a run ended. They carry only the
/// event's number; the page then fetches what this person may see.
pub async fn events(
    State(web): State<Web>,
    viewer: Viewer,
    Query(q): Query<After>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, WebError> {
    drop(viewer);
    // From the event the page was rendered at (nothing between rendering
    // and connecting is missed), else from now.
    let after = match q.after {
        Some(n) => n,
        None => web.hub.store.last_event().await?,
    };
    let pings = crate::hub::follow::follow_all(web.hub.clone(), after)
        .filter(|e| std::future::ready(crate::hub::follow::changes_waiting(e)))
        .map(|e| {
            Ok(SseEvent::default()
                .event("change")
                .id(e.seq.to_string())
                .data(e.seq.to_string()))
        });
    Ok(Sse::new(pings).keep_alive(KeepAlive::default()))
}

/// Approves each selected gate (`pick` = `SESSION GATE`), one answer at a
/// time through the intake: each is checked and audited on its own, and
/// one refused does not stop the others.
pub async fn bulk_approve(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    bulk(web, viewer, headers, body, Bulk::Approve).await
}

/// Rejects each selected gate with the one `reason` given for all, as
/// [`bulk_approve`] approves: one answer per gate through the intake, each
/// judged and audited on its own.
pub async fn bulk_reject(
    State(web): State<Web>,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    bulk(web, viewer, headers, body, Bulk::Reject).await
}

/// What a bulk post decides for every gate it picks.
#[derive(Clone, Copy)]
enum Bulk {
    Approve,
    Reject,
}

async fn bulk(
    web: Web,
    viewer: Viewer,
    headers: HeaderMap,
    body: axum::body::Bytes,
    what: Bulk,
) -> Result<Response, WebError> {
    let form = Form::parse(&body);
    check_post(&web, &viewer, &headers, &form)?;
    if let Some(r) = scoped(&viewer) {
        return Ok(r);
    }
    let (decision, verb) = match what {
        Bulk::Approve => (Decision::Approve, "approve"),
        Bulk::Reject => (
            Decision::Reject {
                reason: form
                    .get("reason")
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(String::from),
            },
            "reject",
        ),
    };
    // Each pick is "SESSION HANDLE", as the page offered it.
    let mut results = Vec::new();
    let mut items = Vec::new();
    for pick in form.all("pick") {
        match pick.split_once(' ') {
            Some((session, gate)) => items.push(crate::hub::batch::Item {
                session: session.to_string(),
                gate: Some(gate.to_string()),
            }),
            None => results.push(Outcome {
                session: String::new(),
                gate: pick.to_string(),
                ok: false,
                message: "not a gate this page offered".into(),
            }),
        }
    }
    let how = DoorAnswer::new("", &viewer.caller.name, Door::Web, decision)
        .idp_groups(viewer.caller.idp_groups.iter().cloned());
    let decided = crate::hub::batch::decide(&web.hub, &how, &items, true).await?;
    results.extend(decided.into_iter().map(|o| Outcome {
        ok: o.recorded(),
        gate: o.gate.unwrap_or_default(),
        session: o.session,
        message: o.message,
    }));
    if results.is_empty() {
        return Err(WebError::bad_request(format!(
            "no gate was selected; tick the gates to {verb}"
        )));
    }
    let ctx = context(&web, &viewer, &Filter::default(), results).await?;
    Ok(html(web.pages.render("inbox.html", ctx)))
}
