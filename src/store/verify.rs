//! `strands store verify`: is a store sound, checked offline through the
//! [`Store`] seam, so every backend is checked the same way.
//!
//! Why this exists (issue 23: no store is ever lost silently): a record
//! that no longer decodes, an index or a counter that drifted from the
//! records, a broken audit chain — each would otherwise show only when a
//! run needs it. The checks, and what each one reads:
//!
//! - every session record decodes: on sled the raw `sessions` tree's keys
//!   (so an undecodable record is found, not skipped), elsewhere the ids
//!   listed, each loaded;
//! - every session has a summary that agrees on status and workflow, and
//!   every summary has its session: a full page-through of
//!   [`Store::list_page`] (the newest-first order index), which must also
//!   be in order and name each session once;
//! - the status counters ([`Store::status_counts`]) equal a recount;
//! - the index by workflow ([`Store::workflow_page`], paged through for
//!   each workflow) lists exactly that workflow's sessions;
//! - the index by approver ([`Store::awaiting`], asked once per person or
//!   group any open gate lists) names exactly the paused sessions whose
//!   open gates list them;
//! - the audit chain verifies (the verifier of `strands audit verify`).
//!
//! A backup (`strands store backup`) runs the same checks on its copy.

use std::collections::{BTreeMap, BTreeSet};

use super::Store;
use crate::error::Result;
use crate::model::{Status, Summary};

/// What the checks found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub store: String,
    /// No problem found.
    pub ok: bool,
    /// Session records found.
    pub sessions: usize,
    /// Of them, how many decode.
    pub decoded: usize,
    /// Summaries the order index lists.
    pub listed: usize,
    /// Sessions by status, recounted from the records.
    pub statuses: BTreeMap<String, u64>,
    pub audit_entries: u64,
    /// Each problem found, one line each; empty: the store is sound.
    pub problems: Vec<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.ok
    }

    /// One line, for people.
    pub fn line(&self) -> String {
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(s, n)| format!("{n} {s}"))
            .collect();
        format!(
            "{}: {} session(s) ({}), {} listed, audit chain {} entries",
            self.store,
            self.sessions,
            if statuses.is_empty() {
                "none".to_string()
            } else {
                statuses.join(", ")
            },
            self.listed,
            self.audit_entries
        )
    }
}

/// Runs every check on `store`. A problem with the data is in the report;
/// an error is the store failing to answer at all.
pub async fn verify(store: &Store) -> Result<Report> {
    let mut r = Report {
        store: store.location(),
        ..Report::default()
    };
    let ids: Vec<String> = match store {
        Store::Sled(s) => super::sled::off_worker(|| s.session_ids()).await?,
        Store::Postgres(_) => store.list(None).await?.into_iter().map(|s| s.id).collect(),
    };
    r.sessions = ids.len();

    // The order index, paged through as `sessions list` reads it.
    const PAGE: usize = 1000;
    let mut listed: BTreeMap<String, Summary> = BTreeMap::new();
    let mut after: Option<(chrono::DateTime<chrono::Utc>, String)> = None;
    let mut previous: Option<(chrono::DateTime<chrono::Utc>, String)> = None;
    loop {
        let page = store.list_page(None, after.clone(), PAGE).await?;
        let full = page.len() == PAGE;
        for s in page {
            let here = (s.created_at, s.id.clone());
            if let Some((at, id)) = &previous {
                // Newest first, ties by id.
                if !(s.created_at < *at || (s.created_at == *at && s.id > *id)) {
                    r.problems.push(format!(
                        "the order index lists session {} after {id}, out of order",
                        s.id
                    ));
                }
            }
            previous = Some(here);
            let id = s.id.clone();
            if listed.insert(id.clone(), s).is_some() {
                r.problems
                    .push(format!("the order index lists session {id} twice"));
            }
        }
        if !full {
            break;
        }
        after = previous.clone();
    }
    r.listed = listed.len();

    let mut counted: BTreeMap<Status, u64> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    // What the indexes by workflow and by approver must hold.
    let mut by_workflow: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut by_approver: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for id in &ids {
        seen.insert(id.clone());
        let session = match store.load(id).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                r.problems
                    .push(format!("session {id}: listed but its record is gone"));
                continue;
            }
            Err(e) => {
                r.problems
                    .push(format!("session {id}: its record does not decode: {e}"));
                continue;
            }
        };
        r.decoded += 1;
        *counted.entry(session.status).or_default() += 1;
        by_workflow
            .entry(session.workflow.clone())
            .or_default()
            .insert(id.clone());
        for (_, approver) in super::awaiting::entries(&session) {
            by_approver.entry(approver).or_default().insert(id.clone());
        }
        match listed.get(id) {
            None => r.problems.push(format!(
                "session {id} ({}) has no summary in the order index",
                session.status
            )),
            Some(sum) => {
                if sum.status != session.status {
                    r.problems.push(format!(
                        "session {id}: its summary says {} but the session is {}",
                        sum.status, session.status
                    ));
                }
                if sum.workflow != session.workflow {
                    r.problems.push(format!(
                        "session {id}: its summary names workflow `{}` but the session `{}`",
                        sum.workflow, session.workflow
                    ));
                }
            }
        }
    }
    for id in listed.keys().filter(|id| !seen.contains(*id)) {
        r.problems.push(format!(
            "the order index lists session {id}, which has no record"
        ));
    }

    // The secondary indexes, only when every record decoded (an
    // undecodable record's workflow and gates are unknown).
    if r.decoded == r.sessions {
        for (workflow, want) in &by_workflow {
            let have = workflow_index(store, workflow).await?;
            for id in want.difference(&have) {
                r.problems.push(format!(
                    "the index of workflow `{workflow}` misses session {id}"
                ));
            }
            for id in have.difference(want) {
                r.problems.push(format!(
                    "the index of workflow `{workflow}` lists session {id}, which is not of that workflow"
                ));
            }
        }
        for (approver, want) in &by_approver {
            let have: BTreeSet<String> = store
                .awaiting(std::slice::from_ref(approver))
                .await?
                .into_iter()
                .collect();
            for id in want.difference(&have) {
                r.problems.push(format!(
                    "the index by approver misses session {id} for `{approver}`"
                ));
            }
            for id in have.difference(want) {
                r.problems.push(format!(
                    "the index by approver lists session {id} for `{approver}`, whose open gates do not list them"
                ));
            }
        }
    }

    // The counters against the recount; an undecodable record's status is
    // unknown, so the totals only compare when every record decoded.
    let counters: BTreeMap<Status, u64> = store.status_counts().await?.into_iter().collect();
    for st in Status::ALL {
        let have = counters.get(&st).copied().unwrap_or(0);
        let want = counted.get(&st).copied().unwrap_or(0);
        r.statuses.insert(st.to_string(), want);
        if have != want && r.decoded == r.sessions {
            r.problems.push(format!(
                "the {st} counter says {have} but {want} session(s) are {st}"
            ));
        }
    }

    match crate::audit::verify(
        store.audit_entries().await?.into_iter(),
        store.audit_head().await?,
    ) {
        crate::audit::Verdict::Intact { entries } => r.audit_entries = entries,
        crate::audit::Verdict::Broken { seq, why } => r
            .problems
            .push(format!("the audit chain is broken at entry #{seq}: {why}")),
    }
    r.ok = r.problems.is_empty();
    Ok(r)
}

/// Every session id the index of `workflow` lists, paged through.
async fn workflow_index(store: &Store, workflow: &str) -> Result<BTreeSet<String>> {
    const PAGE: usize = 1000;
    let mut ids = BTreeSet::new();
    let mut after: Option<(chrono::DateTime<chrono::Utc>, String)> = None;
    loop {
        let page = store
            .workflow_page(workflow, None, after.clone(), PAGE)
            .await?;
        let full = page.len() == PAGE;
        after = page.last().map(|s| (s.created_at, s.id.clone()));
        ids.extend(page.into_iter().map(|s| s.id));
        if !full || after.is_none() {
            return Ok(ids);
        }
    }
}
