//! `strands policy backtest --service-file NEW.yaml [--since 30d] [--json]`:
//! the approval requests the audit recorded in a period, judged again by the
//! named policies of a candidate service file ([`crate::gate::backtest`]) —
//! per candidate rule, how many requests it would take, from which recorded
//! rules, who would be asked instead, and which would need more or fewer
//! approvals.
//!
//! History is the audit's `request` entries of the period (read as
//! `strands report` reads them) joined with their gates' answers and
//! timeouts: the recorded rule, whom it asked and how many approvals it
//! needed are the entry's own. What the rules saw (`details`, the action as
//! `tool`) is rebuilt from each request's session variables as the engine
//! builds it. Requests a named policy decided are replayed; the rest are
//! counted with why (no rules, a spec's own rules, a deleted session).
//! Offline it reads the store; through a server (`STRANDS_SERVER`, or the
//! one holding the store) the audit and the sessions come from its API.
//! Nothing is written either way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Map, Value};

use super::Ctx;
use crate::audit::{AuditEntry, AuditKind};
use crate::error::{exit, Error, Result};
use crate::gate::backtest::{self, Asked, Outcome, Recorded};
use crate::gate::policy::{self, ApprovalRule};
use crate::hub::approvals;
use crate::store::Store;
use crate::template::Templates;

#[derive(Args, Debug)]
pub struct BacktestArgs {
    /// The candidate service file: its `policies:` judge the recorded
    /// requests again (read as STRANDS_SERVICE_FILE is; nothing else of it
    /// is used).
    #[arg(long, value_name = "FILE")]
    pub service_file: PathBuf,
    /// The period: requests at or after this — a span back from now
    /// (`30d`, `12h`, `90m`), an RFC 3339 time or a date.
    #[arg(long, default_value = "30d")]
    pub since: String,
    #[arg(long)]
    pub json: bool,
}

/// Why a recorded request is not replayed.
const NO_RULES: &str = "no approval rules decided it (its approvers were a fixed list)";
const SPEC_RULES: &str =
    "a spec's own rules decided it (spec gates and tool calls: `strands policy explain SPEC`)";
const DELETED: &str = "its session was deleted";
const UNREADABLE: &str =
    "its session cannot be read through the server (deleted, or not this token's to read)";
const NO_NAME: &str = "recorded without its policy's name, and not one policy of the service file in force (STRANDS_SERVICE_FILE) has its rule";

pub(super) async fn backtest(ctx: &Ctx, a: &BacktestArgs) -> Result<u8> {
    let candidates = candidate(ctx, &a.service_file)?;
    let from = super::report::since(&a.since, ctx.now())?;
    let stamp = super::report::stamp(from);
    // Through the server this invocation goes through, else the store.
    let (recorded, skipped) = match &ctx.remote {
        Some(remote) => {
            let entries = super::report::audit_since(ctx, None, from).await?;
            history(ctx, &Sessions::Server(remote), &entries).await?
        }
        None => {
            let store = ctx.open().await?;
            let entries = super::report::audit_since(ctx, Some(&store), from).await?;
            history(ctx, &Sessions::Store(&store), &entries).await?
        }
    };
    let b = backtest::backtest(&candidates, &recorded, skipped, Templates::shared());
    let file = a.service_file.display().to_string();
    if a.json {
        let mut v = serde_json::to_value(&b).map_err(|e| Error::Internal(e.to_string()))?;
        v["service_file"] = Value::String(file);
        v["since"] = Value::String(stamp);
        outln!("{v}")?;
    } else {
        outln!("backtest of {file} against the requests since {stamp}")?;
        outln!("{}", backtest::table(&b).trim_end())?;
    }
    Ok(exit::OK)
}

/// The candidate file's policies, read by the service file's own loader
/// (a file that does not parse is an error naming its line and column).
fn candidate(ctx: &Ctx, path: &Path) -> Result<BTreeMap<String, Vec<ApprovalRule>>> {
    std::fs::metadata(path).map_err(|e| {
        Error::Usage(format!(
            "--service-file {} cannot be read: {e}",
            path.display()
        ))
    })?;
    let shown = path.display().to_string();
    let max_days = ctx.env.get("STRANDS_MAX_TIMEOUT_DAYS");
    let file = crate::config::service::ServiceFile::from_lookup(&|k| match k {
        "STRANDS_SERVICE_FILE" => Some(shown.clone()),
        "STRANDS_MAX_TIMEOUT_DAYS" => max_days.clone(),
        _ => None,
    })?;
    let max = ctx.settings.limits.max_timeout_secs;
    file.policies
        .iter()
        .map(|(name, p)| {
            p.check(max)
                .map(|rules| (name.clone(), rules))
                .map_err(|why| Error::Usage(format!("{shown}: policy `{name}`: {why}")))
        })
        .collect()
}

/// A recorded request: its audit entry and its gate's decision so far.
struct Request<'a> {
    entry: &'a AuditEntry,
    approvals: u32,
    rejected: bool,
    timed_out: bool,
}

/// Where the requests' sessions are read: the store, or the server this
/// invocation goes through (`GET /api/v1/sessions/{id}`).
enum Sessions<'a> {
    Store(&'a Store),
    Server(&'a super::remote::Remote),
}

impl Sessions<'_> {
    /// Session `id`'s variables (what its rules saw), or why there are none.
    async fn variables(&self, id: &str) -> Result<std::result::Result<Map<String, Value>, String>> {
        match self {
            Sessions::Store(store) => Ok(store
                .load(id)
                .await?
                .map(|s| s.variables)
                .ok_or_else(|| DELETED.to_string())),
            Sessions::Server(remote) => match remote.session(id).await {
                Ok(view) => Ok(Ok(view.variables.unwrap_or_default())),
                Err(Error::Session(_)) => Ok(Err(UNREADABLE.to_string())),
                Err(e) => Err(e),
            },
        }
    }
}

/// The period's requests, each rebuilt for replay, or with why it cannot
/// be.
async fn history(
    ctx: &Ctx,
    sessions: &Sessions<'_>,
    entries: &[AuditEntry],
) -> Result<(Vec<Recorded>, Vec<(String, String)>)> {
    let mut asked: Vec<Request<'_>> = Vec::new();
    let mut at: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for entry in entries {
        let e = &entry.event;
        let Some(gate) = e.gate.as_deref() else {
            continue;
        };
        let key = (e.session.as_str(), gate);
        if e.kind == Some(AuditKind::Request) {
            // A gate asks once; a request entry repeated is the same asking.
            if let std::collections::btree_map::Entry::Vacant(v) = at.entry(key) {
                v.insert(asked.len());
                asked.push(Request {
                    entry,
                    approvals: 0,
                    rejected: false,
                    timed_out: false,
                });
            }
            continue;
        }
        let Some(r) = at.get(&key).and_then(|&i| asked.get_mut(i)) else {
            continue;
        };
        match e.kind {
            Some(AuditKind::Answer) => {
                let action = e
                    .decision
                    .as_ref()
                    .and_then(|d| d.get("action").unwrap_or(d).as_str());
                match action {
                    Some("approve" | "edit" | "trust" | "fill") => r.approvals += 1,
                    Some("reject" | "abort") => r.rejected = true,
                    _ => {}
                }
            }
            Some(AuditKind::Timeout) => r.timed_out = true,
            _ => {}
        }
    }
    let max = ctx.settings.limits.max_timeout_secs;
    let in_force: Vec<(String, Vec<ApprovalRule>)> = ctx
        .settings
        .service
        .policies
        .iter()
        .filter_map(|(n, p)| p.check(max).ok().map(|r| (n.clone(), r)))
        .collect();
    let mut read: BTreeMap<String, std::result::Result<Map<String, Value>, String>> =
        BTreeMap::new();
    let mut recorded = Vec::new();
    let mut skipped = Vec::new();
    for r in &asked {
        let e = &r.entry.event;
        let Some(rule) = e.rule.as_deref() else {
            skipped.push((e.session.clone(), NO_RULES.to_string()));
            continue;
        };
        let handle = e.gate.as_deref().unwrap_or_default();
        let id = handle.split_once('#').map_or(handle, |(id, _)| id);
        if e.workflow != approvals::WORKFLOW || id != approvals::GATE {
            skipped.push((e.session.clone(), SPEC_RULES.to_string()));
            continue;
        }
        if !read.contains_key(&e.session) {
            let v = sessions.variables(&e.session).await?;
            read.insert(e.session.clone(), v);
        }
        let variables = match read.get(&e.session) {
            Some(Ok(v)) => v,
            Some(Err(why)) => {
                skipped.push((e.session.clone(), why.clone()));
                continue;
            }
            None => continue,
        };
        match replayable(r, rule, variables, &in_force) {
            Ok(rec) => recorded.push(rec),
            Err(why) => skipped.push((e.session.clone(), why)),
        }
    }
    Ok((recorded, skipped))
}

/// `r`, an approval request whose rule `rule` (the audit's "rule N:
/// needs …") was chosen on `variables`, ready to be judged again; or why
/// it cannot be.
fn replayable(
    r: &Request<'_>,
    rule: &str,
    variables: &Map<String, Value>,
    in_force: &[(String, Vec<ApprovalRule>)],
) -> std::result::Result<Recorded, String> {
    let e = &r.entry.event;
    let unread = || format!("its recorded rule does not read (`{rule}`)");
    let (index, summary, failed) = parse_rule(rule).ok_or_else(unread)?;
    let (needs, approvers) = backtest::read_summary(&summary).ok_or_else(unread)?;
    // A request that names a policy names no quorum: its rules' base is 1.
    let base = 1;
    let name = match variables.get(approvals::POLICY_VAR) {
        Some(Value::String(n)) => n.clone(),
        _ => {
            let same = |rules: &[ApprovalRule]| {
                index
                    .checked_sub(1)
                    .and_then(|i| rules.get(i))
                    .is_some_and(|rule| {
                        let choice = policy::Choice {
                            index: index - 1,
                            rule,
                            failed: None,
                            base,
                        };
                        choice.summary() == summary
                    })
            };
            let mut names = in_force.iter().filter(|(_, rules)| same(rules));
            match (names.next(), names.next()) {
                (Some((n, _)), None) => n.clone(),
                _ => return Err(NO_NAME.to_string()),
            }
        }
    };
    let outcome = if r.timed_out {
        Outcome::TimedOut
    } else if r.rejected {
        Outcome::Rejected
    } else if r.approvals >= needs {
        Outcome::Approved
    } else {
        Outcome::Open
    };
    // What the request's gate saw: its variables, nothing run yet.
    let mut root = variables.clone();
    for k in ["hitl_response", "human_feedback", "last_response"] {
        root.insert(k.into(), Value::Null);
    }
    crate::engine::context::add_rule_vars(&mut root, variables, None);
    Ok(Recorded {
        session: e.session.clone(),
        gate: e.gate.clone().unwrap_or_default(),
        at: e.at,
        policy: name,
        context: minijinja::Value::from_serialize(root),
        base,
        asked: Asked {
            rule: index,
            summary,
            approvers,
            approvals_needed: needs,
            failed,
        },
        outcome,
        approvals: r.approvals,
    })
}

/// The audit's rule text, `rule N: SUMMARY[ [fail closed: WHY]]`: its
/// number, summary and failure.
fn parse_rule(text: &str) -> Option<(usize, String, Option<String>)> {
    let rest = text.strip_prefix("rule ")?;
    let (n, summary) = rest.split_once(": ")?;
    let index = n.trim().parse().ok()?;
    match summary.split_once(" [fail closed: ") {
        Some((s, why)) => Some((
            index,
            s.to_string(),
            Some(why.strip_suffix(']').unwrap_or(why).to_string()),
        )),
        None => Some((index, summary.to_string(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditEvent;
    use serde_json::json;

    fn rule(when: Option<&str>, approvers: &[&str], quorum: Option<u32>) -> ApprovalRule {
        ApprovalRule {
            when: when.map(str::to_string),
            approvers: approvers
                .iter()
                .map(|a| crate::model::Approver::parse(a))
                .collect(),
            quorum,
            ..Default::default()
        }
    }

    #[test]
    fn a_request_is_rebuilt_and_an_older_one_matched_to_the_policy_in_force() {
        let mut event = AuditEvent::new(
            AuditKind::Request,
            "s1",
            approvals::WORKFLOW,
            crate::clock::test_epoch(),
        );
        event.gate = Some("approval#1".into());
        event.rule = Some("rule 2: needs 1 of clerk (default rule)".into());
        let entry = AuditEntry {
            seq: 1,
            prev: String::new(),
            hash: String::new(),
            event,
        };
        let r = Request {
            entry: &entry,
            approvals: 1,
            rejected: false,
            timed_out: false,
        };
        let payments = vec![
            rule(Some("{{ details.amount > 10000 }}"), &["cfo"], Some(1)),
            rule(None, &["clerk"], None),
        ];
        let mut in_force = vec![
            ("payments".to_string(), payments.clone()),
            ("refunds".to_string(), vec![rule(None, &["bob"], None)]),
        ];
        let mut variables = Map::new();
        variables.insert("details".into(), json!({"amount": "20"}));
        // No `policy` variable (recorded before requests kept it): the one
        // policy in force whose rule 2 reads the same.
        let rec = replayable(
            &r,
            "rule 2: needs 1 of clerk (default rule)",
            &variables,
            &in_force,
        )
        .expect("replayable");
        assert_eq!(rec.policy, "payments");
        assert_eq!(
            rec.asked.approvers,
            vec![crate::model::Approver::parse("clerk")]
        );
        assert_eq!((rec.asked.rule, rec.asked.approvals_needed), (2, 1));
        assert_eq!(rec.outcome, Outcome::Approved);
        // The context is the engine's: `details.amount` is a number.
        let t = Templates::new();
        let c = policy::choose(&payments, &t, &rec.context, 1).expect("a rule");
        assert_eq!(c.index, 1);
        variables.insert("details".into(), json!({"amount": "20000"}));
        let rec = replayable(
            &r,
            "rule 2: needs 1 of clerk (default rule)",
            &variables,
            &in_force,
        )
        .expect("replayable");
        assert_eq!(
            policy::choose(&payments, &t, &rec.context, 1).map(|c| c.index),
            Some(0)
        );

        // Two policies that read the same: no name can be told.
        in_force[1].1 = payments.clone();
        let why = replayable(
            &r,
            "rule 2: needs 1 of clerk (default rule)",
            &variables,
            &in_force,
        )
        .expect_err("ambiguous");
        assert_eq!(why, NO_NAME);
        // The name kept with the request decides.
        variables.insert(approvals::POLICY_VAR.into(), json!("refunds"));
        let rec = replayable(
            &r,
            "rule 2: needs 1 of clerk (default rule)",
            &variables,
            &in_force,
        )
        .expect("replayable");
        assert_eq!(rec.policy, "refunds");
    }

    #[test]
    fn the_audits_rule_text_reads_back() {
        assert_eq!(
            parse_rule("rule 1: needs 2 of cfo, controller because amount > 10000"),
            Some((
                1,
                "needs 2 of cfo, controller because amount > 10000".into(),
                None
            ))
        );
        assert_eq!(
            parse_rule("rule 2: needs 3 of x (strictest rule applied: …) [fail closed: the condition of rule 1 failed: undefined]"),
            Some((
                2,
                "needs 3 of x (strictest rule applied: …)".into(),
                Some("the condition of rule 1 failed: undefined".into())
            ))
        );
        assert_eq!(parse_rule("needs 1 of x"), None);
    }
}
