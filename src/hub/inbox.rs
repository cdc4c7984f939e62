//! What waits for a person: the open gates and tool calls they may answer,
//! newest first. One query for every place that lists them (the web inbox,
//! Slack's App Home), judged by the engine's own approver rules
//! ([`crate::engine::intake::authorize`]) — never a second copy of who may
//! answer. The runs judged are only the candidates the store's index by
//! approver names ([`crate::store::awaiting`]): those whose open gates list
//! the person, one of their groups, someone they stand in for (a
//! delegation in force) or nobody; admins, who may answer anything, get
//! every paused run.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::view::GateView;
use super::Hub;
use crate::error::Result;
use crate::model::token::Role;
use crate::model::{Decision, GateEventKind, GateKind, Session, Status};

/// One open gate someone may answer.
#[derive(Debug, Clone, Serialize)]
pub struct Waiting {
    pub session: String,
    pub workflow: String,
    pub started_by: String,
    pub started_at: DateTime<Utc>,
    pub gate: GateView,
    /// Seconds since the gate opened.
    pub waited_secs: i64,
    /// Seconds until its timeout answers (negative: overdue).
    pub timeout_in_secs: Option<i64>,
    /// The deadline of a gate keeping business hours, in its calendar's
    /// words ([`crate::hub::durations::business_deadline`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub business: Option<String>,
    /// Approve alone answers it (a manual gate needing one approval more
    /// or a `hitl` gate approving by its default): it may be bulk approved.
    pub routine: bool,
    /// Whom the person would answer for, as a delegate (the gate lists
    /// alice, who is away); absent when they are an approver themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_whom: Option<String>,
}

/// Whether `who` (in the identity provider's groups `idp_groups`, for a
/// web sign-in through it; empty otherwise) may answer gate `g` of `s`
/// (any decision the gate takes).
pub fn may_answer(
    hub: &Hub,
    who: &str,
    idp_groups: &[String],
    s: &Session,
    g: &crate::model::OpenGate,
) -> bool {
    answers_as(hub, who, idp_groups, s, g).is_some()
}

/// `Some` when `who` may answer gate `g` of `s`: with whom they would
/// answer for as a delegate (`Some(Some(alice))`), or in their own right.
fn answers_as(
    hub: &Hub,
    who: &str,
    idp_groups: &[String],
    s: &Session,
    g: &crate::model::OpenGate,
) -> Option<Option<String>> {
    let nobody = |_: &str| false;
    let mut asker = hub.asker(who, &nobody);
    asker.idp_groups = idp_groups;
    let people = hub.people();
    let may = |d: &Decision| {
        crate::engine::intake::authorize(g, s, d, &asker, &people)
            .ok()
            .map(|a| a.on_behalf_of)
    };
    may(&Decision::Reject { reason: None }).or_else(|| may(&Decision::Approve))
}

/// Who may read a session: operators and admins any; an approver the
/// sessions it started, answered, or may answer now.
pub fn may_read(hub: &Hub, who: &str, idp_groups: &[String], role: Role, s: &Session) -> bool {
    let people = hub.people();
    if role >= Role::Operator || people.same(&s.started_by, who) {
        return true;
    }
    let answered = s.history.iter().any(
        |e| matches!(&e.what, GateEventKind::Answered { answer, .. } if people.same(&answer.by, who)),
    );
    answered
        || s.open_gates()
            .any(|g| may_answer(hub, who, idp_groups, s, g))
}

/// The open gates of `s` that `who` may answer.
pub fn waiting_in(
    hub: &Hub,
    who: &str,
    idp_groups: &[String],
    s: &Session,
    now: DateTime<Utc>,
) -> Vec<Waiting> {
    if s.status != Status::Paused {
        return Vec::new();
    }
    s.open_gates()
        .filter_map(|g| answers_as(hub, who, idp_groups, s, g).map(|whom| (g, whom)))
        .map(|(g, for_whom)| {
            let view = GateView::of(s, g, false);
            Waiting {
                session: s.id.clone(),
                workflow: s.workflow.clone(),
                started_by: s.started_by.clone(),
                started_at: s.created_at,
                waited_secs: (now - g.opened_at).num_seconds().max(0),
                timeout_in_secs: g.timeout_at.map(|t| (t - now).num_seconds()),
                business: crate::hub::durations::business_deadline(
                    g.hours.as_ref(),
                    g.timeout_at,
                    now,
                ),
                // A gate with a form is filled in on its page, not approved
                // in bulk; so is an MCP server's question (a link to visit),
                // and a gate approved with a passkey (one approval, one
                // signature).
                routine: g.kind == GateKind::ManualGate
                    && g.form.is_none()
                    && g.step_up.is_none()
                    && crate::engine::elicit::asking_at(s, &g.handle()).is_none(),
                gate: view,
                for_whom,
            }
        })
        .collect()
}

/// Every open gate `who` may answer, newest first; only runs of
/// `workflow` when given. The web knows no Slack groups; a sign-in through
/// the identity provider brings its groups (`idp_groups`), whose gates
/// are candidates too (see [`candidates`]).
pub async fn waiting_for(
    hub: &Hub,
    who: &str,
    idp_groups: &[String],
    workflow: Option<&str>,
) -> Result<Vec<Waiting>> {
    let now = hub.clock.now();
    let mut out = Vec::new();
    hub.fresh_people().await?;
    let groups: Vec<String> = idp_groups
        .iter()
        .map(|g| crate::model::Approver::Group(g.clone()).to_string())
        .collect();
    for id in candidates(hub, who, &groups, workflow).await? {
        let Some(s) = hub.store.load(&id).await? else {
            continue;
        };
        if workflow.is_some_and(|w| w != s.workflow) {
            continue;
        }
        out.extend(waiting_in(hub, who, idp_groups, &s, now));
    }
    sort_newest_first(&mut out);
    Ok(out)
}

/// Newest gate first; ties by session (a session's gates keep their order).
pub fn sort_newest_first(waiting: &mut [Waiting]) {
    waiting.sort_by(|a, b| {
        b.gate
            .opened_at
            .cmp(&a.gate.opened_at)
            .then(a.session.cmp(&b.session))
    });
}

/// The paused runs that may hold a gate `who` (a member of `groups`) may
/// answer: those whose open gates list `who`, one of `groups` or nobody,
/// read from the store's index by approver — or, for an admin (who may
/// answer any gate), every paused run (of `workflow`), a page at a time.
/// Only a narrowing: each run is still judged by [`may_answer`].
pub async fn candidates(
    hub: &Hub,
    who: &str,
    groups: &[String],
    workflow: Option<&str>,
) -> Result<Vec<String>> {
    let people = hub.people();
    if hub.settings.admins.iter().any(|a| people.same(a, who)) {
        const PAGE: usize = 512;
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = hub
                .store
                .page(Some(Status::Paused), workflow, after, PAGE)
                .await?;
            after = page.last().map(|s| (s.created_at, s.id.clone()));
            let full = page.len() == PAGE;
            out.extend(page.into_iter().map(|s| s.id));
            if !full {
                return Ok(out);
            }
        }
    }
    let mut keys = vec![who.to_string(), crate::store::awaiting::ANYONE.to_string()];
    keys.extend(groups.iter().cloned());
    // A person known to the directory: gates listing them by name, by any
    // of their identities, or one of their groups.
    if let Some(p) = people.person_of(who) {
        keys.extend(p.keys().into_iter().map(|(k, _)| k));
        keys.extend(
            p.groups
                .iter()
                .map(|g| crate::model::Approver::Group(g.clone()).to_string()),
        );
        // A delegate: the gates naming whoever they stand in for now.
        let now = hub.clock.now();
        for away in people
            .people()
            .iter()
            .filter(|o| people.delegates_of(&o.name, now).contains(&p.name.as_str()))
        {
            keys.extend(away.keys().into_iter().map(|(k, _)| k));
        }
    }
    hub.store.awaiting(&keys).await
}

/// What [`waiting_for`] answered before the index: every paused run read
/// in full and judged. The index must give the same.
#[cfg(test)]
pub(crate) async fn waiting_for_by_scan(
    hub: &Hub,
    who: &str,
    workflow: Option<&str>,
) -> Result<Vec<Waiting>> {
    let now = hub.clock.now();
    let mut out = Vec::new();
    for s in hub.store.sessions_with_status(Status::Paused).await? {
        if workflow.is_some_and(|w| w != s.workflow) {
            continue;
        }
        out.extend(waiting_in(hub, who, &[], &s, now));
    }
    sort_newest_first(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::Settings;
    use crate::store::sled::tests::{approve, paused_session};
    use crate::store::Store;

    /// A run of `workflow` started by `by`, paused at one gate per entry of
    /// `gates` (each listing those approvers).
    fn run(id: &str, workflow: &str, by: &str, gates: &[&[&str]]) -> Session {
        let mut s = paused_session(id);
        s.workflow = workflow.into();
        s.started_by = by.into();
        let first = s.first_gate().cloned().expect("a gate");
        s.gates.clear();
        for (i, approvers) in gates.iter().enumerate() {
            let mut g = first.clone();
            g.id = format!("gate{i}");
            g.order = i as u64 + 1;
            g.opened_at = first.opened_at + chrono::TimeDelta::seconds(i as i64);
            g.approvers = approvers
                .iter()
                .map(|a| crate::model::Approver::parse(a))
                .collect();
            s.gates.insert(g.handle(), g);
        }
        s
    }

    /// What a person is shown, without the seconds that move with the clock.
    fn shown(w: &[Waiting]) -> Vec<serde_json::Value> {
        w.iter()
            .map(|x| {
                let mut v = serde_json::to_value(x).expect("json");
                if let Some(o) = v.as_object_mut() {
                    o.remove("waited_secs");
                    o.remove("timeout_in_secs");
                }
                v
            })
            .collect()
    }

    /// For several people and both workflow filters, the index gives what
    /// reading every paused run gave; with groups, every run a member may
    /// answer is a candidate.
    async fn the_index_gives_what_a_full_read_gave(store: Store, defaults: &[&str]) {
        let settings = Settings {
            admins: vec!["root".into()],
            default_approvers: defaults
                .iter()
                .map(|a| crate::model::Approver::parse(a))
                .collect(),
            ..Settings::default()
        };
        let hub = Hub::new(store, Arc::new(settings), None);
        let mut quiet_self = run("s4", "wf-a", "U2", &[&["U2"]]);
        for g in quiet_self.gates.values_mut() {
            g.allow_self_approval = Some(false);
        }
        let mut done = run("s6", "wf-a", "alice", &[&["U1"]]);
        done.status = Status::Completed;
        let mut running = run("s8", "wf-b", "alice", &[&["U1"]]);
        running.status = Status::Running;
        for mut s in [
            run("s1", "wf-a", "alice", &[&["U1"]]),
            run("s2", "wf-a", "alice", &[&["S0TEAM1"]]),
            run("s3", "wf-b", "alice", &[&[]]),
            quiet_self,
            run("s5", "wf-b", "alice", &[&["U1", "U3"], &["U4"]]),
            done,
            run("s7", "wf-a", "U1", &[&[]]),
            running,
        ] {
            hub.store.create(&mut s).await.expect("create");
        }
        let people = ["U1", "U2", "U3", "U4", "U5", "root", "alice", "nobody"];
        let check = |round: &'static str| {
            let hub = hub.clone();
            async move {
                for who in people {
                    for wf in [None, Some("wf-a"), Some("wf-b")] {
                        let got = waiting_for(&hub, who, &[], wf).await.expect("index");
                        let want = waiting_for_by_scan(&hub, who, wf).await.expect("scan");
                        assert_eq!(shown(&got), shown(&want), "{round}: {who} {wf:?}");
                    }
                }
            }
        };
        check("created").await;
        let some = waiting_for(&hub, "U1", &[], None).await.expect("index");
        assert!(some.len() >= 2, "U1 has gates waiting: {some:?}");
        let root = waiting_for(&hub, "root", &[], None).await.expect("index");
        assert_eq!(root.len(), 7, "an admin sees every open gate");

        // A member of a group: every run they may answer is a candidate.
        let groups = vec!["S0TEAM1".to_string()];
        let member_of = |g: &str| groups.iter().any(|x| x == g);
        let asker = hub.asker("U5", &member_of);
        let mut want: Vec<String> = hub
            .store
            .sessions_with_status(Status::Paused)
            .await
            .expect("paused")
            .into_iter()
            .filter(|s| {
                s.open_gates().any(|g| {
                    crate::engine::intake::authorize(
                        g,
                        s,
                        &crate::model::Decision::Reject { reason: None },
                        &asker,
                        &Default::default(),
                    )
                    .is_ok()
                })
            })
            .map(|s| s.id)
            .collect();
        want.sort();
        let mut got = candidates(&hub, "U5", &groups, None)
            .await
            .expect("candidates");
        got.sort();
        assert!(want.iter().all(|id| got.contains(id)), "{want:?} ⊆ {got:?}");
        assert!(want.contains(&"s2".to_string()), "{want:?}");

        // Answers and endings change what waits, the same both ways.
        hub.store
            .record_answer("s1", None, &approve("U1"))
            .await
            .expect("io")
            .expect("recorded");
        let mut s5 = hub.store.load("s5").await.expect("load").expect("s5");
        s5.gates.retain(|h, _| h != "gate0#1");
        hub.store.checkpoint(&mut s5).await.expect("checkpoint");
        hub.store.delete("s3").await.expect("delete");
        check("changed").await;
    }

    /// The inbox words a business deadline in its calendar's terms.
    #[tokio::test]
    async fn a_gate_keeping_business_hours_says_its_deadline_in_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let hub = Hub::new(store, Arc::new(Settings::default()), None);
        let mut s = run("s1", "wf-a", "alice", &[&["U1"]]);
        let (hours, fri, mon) = crate::gate::calendar::office_for_tests();
        for g in s.gates.values_mut() {
            g.hours = Some(hours.clone());
            g.timeout_at = Some(mon);
        }
        let w = waiting_in(&hub, "U1", &[], &s, fri);
        assert_eq!(
            w[0].business.as_deref(),
            Some("Monday 09:30 CET, in 2 business hours 30 min (calendar `eu-office`)")
        );
    }

    /// A person the directory knows sees, from any channel, the gates
    /// that name them by name, by another of their identities, or by one
    /// of their groups — from the index as from a full read.
    #[tokio::test]
    async fn a_person_sees_what_waits_for_them_from_every_channel() {
        use crate::model::person::{Directory, Person};
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let hub = Hub::new(store, Arc::new(Settings::default()), None);
        let mut alice = Person::named("alice");
        alice.slack = Some("U04ALICE".into());
        alice.tokens = vec!["alice-web".into()];
        alice.groups = vec!["finance".into()];
        hub.store
            .update_people(
                &move |_| Ok(Directory::new(vec![alice.clone()])?.into_people()),
                &crate::audit::AuditEvent::new(
                    crate::audit::AuditKind::Access,
                    "",
                    "",
                    crate::clock::test_epoch(),
                ),
            )
            .await
            .expect("the directory");
        for mut s in [
            run("s1", "wf", "bob", &[&["alice"]]),
            run("s2", "wf", "bob", &[&["group:finance"]]),
            run("s3", "wf", "bob", &[&["U04ALICE"]]),
            run("s4", "wf", "bob", &[&["bob"]]),
            run("s5", "wf", "bob", &[&["group:ops"]]),
        ] {
            hub.store.create(&mut s).await.expect("create");
        }
        for who in ["alice-web", "U04ALICE", "alice"] {
            let mut got: Vec<String> = waiting_for(&hub, who, &[], None)
                .await
                .expect("index")
                .into_iter()
                .map(|w| w.session)
                .collect();
            got.sort();
            assert_eq!(got, ["s1", "s2", "s3"], "{who}");
            let scan = waiting_for_by_scan(&hub, who, None).await.expect("scan");
            assert_eq!(scan.len(), 3, "{who}");
        }
        // Someone the directory does not know: as before.
        assert!(waiting_for(&hub, "U0STRANGER", &[], None)
            .await
            .expect("index")
            .is_empty());
    }

    #[tokio::test]
    async fn on_sled() {
        for defaults in [&[][..], &["U3", "S0TEAM1"][..]] {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(dir.path()).expect("open");
            the_index_gives_what_a_full_read_gave(store, defaults).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_postgres() {
        for (i, defaults) in [&[][..], &["U3", "S0TEAM1"][..]].into_iter().enumerate() {
            let name = format!("inbox{i}");
            let Some(url) = crate::store::postgres::testdb::database(&name).await else {
                return;
            };
            let store = Store::connect(std::path::Path::new(&url))
                .await
                .expect("connect");
            the_index_gives_what_a_full_read_gave(store, defaults).await;
        }
    }
}
