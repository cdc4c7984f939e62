//! `strands policy backtest --service-file NEW.yaml [--since 30d] [--json]`:
//! the approval requests the audit recorded in a period, judged again by the
//! named policies of a candidate service file ([`crate::gate::backtest`]) —
//! per candidate rule, how many requests it would take, from which recorded
//! rules, who would be asked instead, and which would need more or fewer
//! approvals.
//!
//! History is the audit's `request` entries of the period (read as
//! `strands report` reads them) joined with their gates' answers and
//! timeouts; what the rules saw (`details`, the action as `tool`) comes from
//! each request's session in the store, rebuilt as the engine builds it.
//! Requests a named policy decided are replayed; the rest are counted with
//! why (no rules, a spec's own rules, a deleted session). It reads the
//! store and changes nothing: no session, no audit entry is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use super::Ctx;
use crate::audit::{AuditEntry, AuditKind};
use crate::error::{exit, Error, Result};
use crate::gate::backtest::{self, Asked, Outcome, Recorded};
use crate::gate::policy::{self, ApprovalRule};
use crate::hub::approvals;
use crate::model::Session;
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
const NO_NAME: &str = "recorded without its policy's name, and its rules are none of the service file's in force (STRANDS_SERVICE_FILE)";

pub(super) async fn backtest(ctx: &Ctx, a: &BacktestArgs) -> Result<u8> {
    let candidates = candidate(ctx, &a.service_file)?;
    let from = super::report::since(&a.since, ctx.now())?;
    let stamp = super::report::stamp(from);
    let store = ctx.open().await?;
    let entries = super::report::audit_since(ctx, Some(&store), from).await?;
    let (recorded, skipped) = history(ctx, &store, &entries).await?;
    let b = backtest::backtest(&candidates, &recorded, skipped, &Templates::new());
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

/// The period's requests, each rebuilt from its session for replay, or
/// with why it cannot be.
async fn history(
    ctx: &Ctx,
    store: &Store,
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
        match e.kind {
            Some(AuditKind::Request) if !at.contains_key(&key) => {
                at.insert(key, asked.len());
                asked.push(Request {
                    entry,
                    approvals: 0,
                    rejected: false,
                    timed_out: false,
                });
            }
            Some(AuditKind::Answer) => {
                if let Some(r) = at.get(&key).and_then(|&i| asked.get_mut(i)) {
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
            }
            Some(AuditKind::Timeout) => {
                if let Some(r) = at.get(&key).and_then(|&i| asked.get_mut(i)) {
                    r.timed_out = true;
                }
            }
            _ => {}
        }
    }
    let in_force = &ctx.settings.service.policies;
    let max = ctx.settings.limits.max_timeout_secs;
    let known: Vec<(String, Vec<ApprovalRule>)> = in_force
        .iter()
        .filter_map(|(n, p)| p.check(max).ok().map(|r| (n.clone(), r)))
        .collect();
    let mut sessions: BTreeMap<String, Option<Session>> = BTreeMap::new();
    let mut recorded = Vec::new();
    let mut skipped = Vec::new();
    for r in &asked {
        let e = &r.entry.event;
        let Some(rule) = e.rule.as_deref() else {
            skipped.push((e.session.clone(), NO_RULES.to_string()));
            continue;
        };
        if !sessions.contains_key(&e.session) {
            let s = store.load(&e.session).await?;
            sessions.insert(e.session.clone(), s);
        }
        let Some(Some(session)) = sessions.get(&e.session) else {
            skipped.push((e.session.clone(), DELETED.to_string()));
            continue;
        };
        match replayable(ctx, session, r, rule, &known) {
            Ok(rec) => recorded.push(rec),
            Err(why) => skipped.push((e.session.clone(), why)),
        }
    }
    Ok((recorded, skipped))
}

/// `r` rebuilt from `session` as the engine saw it when it chose the rule
/// `rule` (the audit's "rule N: needs …"), or why it cannot be.
fn replayable(
    ctx: &Ctx,
    session: &Session,
    r: &Request<'_>,
    rule: &str,
    known: &[(String, Vec<ApprovalRule>)],
) -> std::result::Result<Recorded, String> {
    let e = &r.entry.event;
    if session.workflow != approvals::WORKFLOW || session.spec_path != approvals::SPEC_PATH {
        return Err(SPEC_RULES.to_string());
    }
    let spec = crate::spec::parse(
        &session.spec_snapshot,
        Path::new(&session.spec_path),
        &ctx.settings.limits,
    )
    .map_err(|err| format!("its recorded request no longer reads ({err})"))?;
    let handle = e.gate.as_deref().unwrap_or_default();
    let id = handle.split_once('#').map_or(handle, |(id, _)| id);
    let Some(gate) = spec.gates().into_iter().find(|g| g.id == id) else {
        return Err(SPEC_RULES.to_string());
    };
    let rules = policy::rules_of(&spec, gate);
    let name = match session.variables.get(approvals::POLICY_VAR) {
        Some(Value::String(n)) => n.clone(),
        _ => known
            .iter()
            .find(|(_, r)| r.as_slice() == rules)
            .map(|(n, _)| n.clone())
            .ok_or_else(|| NO_NAME.to_string())?,
    };
    let (index, summary, failed) =
        parse_rule(rule).ok_or_else(|| format!("its recorded rule does not read (`{rule}`)"))?;
    let Some(chosen) = index.checked_sub(1).and_then(|i| rules.get(i)) else {
        return Err(format!("its recorded rule {index} is not in its rules"));
    };
    let base = gate
        .approvals_required
        .or(spec.approval.approvals_required)
        .unwrap_or(1)
        .max(1);
    let needs = chosen.needs(base);
    let outcome = if r.timed_out {
        Outcome::TimedOut
    } else if r.rejected {
        Outcome::Rejected
    } else if r.approvals >= needs {
        Outcome::Approved
    } else {
        Outcome::Open
    };
    Ok(Recorded {
        session: session.id.clone(),
        gate: handle.to_string(),
        at: e.at,
        policy: name,
        context: crate::engine::context::for_rules(&spec, session, None, None),
        base,
        asked: Asked {
            rule: index,
            summary,
            approvers: chosen.approvers.clone(),
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
    use super::parse_rule;

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
