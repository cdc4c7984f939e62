//! The audit view, for admins: the chain's state (what `strands audit
//! verify` says), the entries filtered by session, person and dates, and
//! the same selection as JSON lines or CSV (`/audit/export?format=`).

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::auth::Viewer;
use super::{html, Web, WebError};
use crate::audit::AuditEntry;
use crate::model::token::Role;

/// At most this many entries are shown on the page (the download has all).
const SHOWN: usize = 500;

#[derive(Debug, Default, Deserialize, Serialize)]
pub struct AuditFilter {
    #[serde(default)]
    pub session: Option<String>,
    /// Entries by this person.
    #[serde(default)]
    pub who: Option<String>,
    /// From this date or time (RFC 3339 or YYYY-MM-DD).
    #[serde(default)]
    pub since: Option<String>,
    /// Before this date or time.
    #[serde(default)]
    pub until: Option<String>,
    /// `jsonl` or `csv` (downloads).
    #[serde(default)]
    pub format: Option<String>,
}

fn nonempty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

async fn selected(
    web: &Web,
    viewer: &Viewer,
    f: &AuditFilter,
) -> Result<Vec<AuditEntry>, WebError> {
    if viewer.caller.role < Role::Admin || viewer.only_gate().is_some() {
        return Err(WebError::forbidden(format!(
            "the audit trail is for admins; `{}` has role {}",
            viewer.caller.name, viewer.caller.role
        )));
    }
    let time = |v: &Option<String>, what: &str| -> Result<Option<DateTime<Utc>>, WebError> {
        nonempty(v)
            .map(|s| {
                crate::audit::parse_since(s)
                    .map_err(|e| WebError::bad_request(format!("{what}: {e}")))
            })
            .transpose()
    };
    let since = time(&f.since, "from")?;
    let until = time(&f.until, "until")?;
    let who = nonempty(&f.who);
    let entries = web
        .hub
        .store
        .audit_export(since, nonempty(&f.session))
        .await?;
    Ok(entries
        .into_iter()
        // A person's name finds their entries from every channel.
        .filter(|e| {
            who.is_none_or(|w| {
                e.event.who.as_deref() == Some(w) || e.event.person.as_deref() == Some(w)
            })
        })
        .filter(|e| until.is_none_or(|u| e.event.at.is_some_and(|at| at < u)))
        .collect())
}

/// The audit page.
pub async fn page(
    State(web): State<Web>,
    viewer: Viewer,
    Query(f): Query<AuditFilter>,
) -> Result<Response, WebError> {
    let entries = selected(&web, &viewer, &f).await?;
    let people = web.hub.store.directory().await?;
    let verdict = crate::audit::verify_with_keys(
        web.hub.store.audit_entries().await?.into_iter(),
        web.hub.store.audit_head().await?,
        &|person, credential| crate::hub::people::passkeys::registered(&people, person, credential),
    );
    let chain = match verdict {
        crate::audit::Verdict::Intact { entries } => serde_json::json!({
            "intact": true, "message": format!("intact: {entries} entries, every hash links to the one before"),
        }),
        crate::audit::Verdict::Broken { seq, why } => serde_json::json!({
            "intact": false, "message": format!("BROKEN at entry #{seq}: {why}"),
        }),
    };
    let total = entries.len();
    let shown: Vec<&AuditEntry> = entries.iter().rev().take(SHOWN).collect();
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            [
                ("session", &f.session),
                ("who", &f.who),
                ("since", &f.since),
                ("until", &f.until),
            ]
            .iter()
            .filter_map(|(k, v)| nonempty(v).map(|v| (*k, v))),
        )
        .finish();
    Ok(html(web.pages.render(
        "audit.html",
        serde_json::json!({
            "title": "Audit trail",
            "viewer": { "name": viewer.caller.name, "role": viewer.caller.role },
            "csrf": viewer.login.csrf,
            "chain": chain,
            "entries": shown,
            "total": total,
            "shown": shown.len(),
            "filter": f,
            "query": query,
        }),
    )))
}

/// The selection as a file: `format=jsonl` (default) or `csv`.
pub async fn export(
    State(web): State<Web>,
    viewer: Viewer,
    Query(f): Query<AuditFilter>,
) -> Result<Response, WebError> {
    let entries = selected(&web, &viewer, &f).await?;
    let (bytes, kind, ext) = match nonempty(&f.format).unwrap_or("jsonl") {
        "csv" => (
            crate::audit::export::csv(&entries),
            "text/csv; charset=utf-8",
            "csv",
        ),
        "jsonl" => (
            crate::audit::export::jsonl(&entries),
            "application/x-ndjson",
            "jsonl",
        ),
        other => {
            return Err(WebError::bad_request(format!(
                "format `{other}` is not jsonl or csv"
            )))
        }
    };
    let bytes = bytes.map_err(crate::Error::Internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, kind.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"strands-audit.{ext}\""),
            ),
        ],
        bytes,
    )
        .into_response())
}
