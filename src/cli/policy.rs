//! `strands policy explain SPEC --var amount=20000 --at "2026-12-24 22:00"`:
//! a dry run of a spec's approval rules ([`crate::gate::policy`]) — for
//! each gate that has rules (or the one named with `--gate`), and for tool
//! calls when `security.approvers` is a list of rules, which rule would
//! apply and why, who may answer, and when the deadline would fall.
//!
//! Nothing runs and nothing is stored: conditions see the inputs (`--var`,
//! with the spec's defaults) as top-level names and as `details`, and the
//! call given with `--tool`/`--args` as `tool`. A condition reading what
//! only a run has (`steps[0].response`) fails here, and the explanation
//! says the strictest rule applies — as a run would if it failed there.
//!
//! `strands policy backtest` (`super::backtest`) judges the recorded
//! requests again by a candidate service file's policies.

use chrono::{DateTime, NaiveDateTime, Utc};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

use super::Ctx;
use crate::error::{exit, Error, Result};
use crate::gate::calendar::Calendar;
use crate::gate::policy::{self, ApprovalRule, Choice};
use crate::spec;
use crate::template::Templates;

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Which approval rule applies to each gate, who may answer, and when the deadline falls.
    Explain(ExplainArgs),
    /// The recorded requests judged again by a candidate service file's policies: per rule, what would change (reads only).
    Backtest(super::backtest::BacktestArgs),
}

impl PolicyCommand {
    pub fn json(&self) -> bool {
        match self {
            PolicyCommand::Explain(a) => a.json,
            PolicyCommand::Backtest(a) => a.json,
        }
    }

    /// Whether it may go through a server: a backtest reads the audit and
    /// the sessions there as it reads them in the store.
    pub fn remote(&self) -> bool {
        matches!(self, PolicyCommand::Backtest(_))
    }
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[arg(required_unless_present = "policy")]
    pub spec: Option<PathBuf>,
    /// A named policy of the service file (STRANDS_SERVICE_FILE) instead of
    /// a spec: what `strands ask --policy NAME --detail k=v` would ask.
    #[arg(long, conflicts_with_all = ["spec", "gate", "tool"])]
    pub policy: Option<String>,
    /// Only this gate (its id).
    #[arg(long)]
    pub gate: Option<String>,
    /// An input, KEY=VALUE (repeatable): conditions read it as `KEY` and
    /// `details.KEY` (`--detail` is the same, as `strands ask` spells it).
    #[arg(long = "var", alias = "detail", value_parser = spec::parse_var)]
    pub vars: Vec<(String, String)>,
    /// A tool call to judge (its name): `tool.name` in conditions.
    #[arg(long)]
    pub tool: Option<String>,
    /// The tool call's arguments, JSON: `tool.args` in conditions.
    #[arg(long, requires = "tool", value_parser = parse_json)]
    pub args: Option<Value>,
    /// When the gate opens: "YYYY-MM-DD HH:MM" (read as UTC), or with an
    /// offset ("2026-12-24 22:00 +01:00", RFC 3339). Default: now.
    #[arg(long, value_parser = parse_at)]
    pub at: Option<DateTime<Utc>>,
    #[arg(long)]
    pub json: bool,
}

fn parse_json(s: &str) -> std::result::Result<Value, String> {
    serde_json::from_str(s).map_err(|e| format!("not JSON: {e}"))
}

/// `2026-12-24 22:00` (UTC), `2026-12-24 22:00 +01:00`, or RFC 3339.
pub fn parse_at(s: &str) -> std::result::Result<DateTime<Utc>, String> {
    let t = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Ok(d.with_timezone(&Utc));
    }
    for f in [
        "%Y-%m-%d %H:%M %:z",
        "%Y-%m-%d %H:%M%:z",
        "%Y-%m-%d %H:%M:%S %:z",
    ] {
        if let Ok(d) = DateTime::parse_from_str(t, f) {
            return Ok(d.with_timezone(&Utc));
        }
    }
    for f in ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return Ok(d.and_utc());
        }
    }
    Err(format!(
        "`{s}` is not a time: write \"YYYY-MM-DD HH:MM\" (UTC) or add an offset (\"2026-12-24 22:00 +01:00\")"
    ))
}

pub(super) async fn policy(ctx: &Ctx, cmd: PolicyCommand) -> Result<u8> {
    match cmd {
        PolicyCommand::Explain(a) => explain(ctx, &a),
        PolicyCommand::Backtest(a) => super::backtest::backtest(ctx, &a).await,
    }
}

/// One place whose approvers rules decide, explained.
struct Explained {
    place: String,
    rules: usize,
    index: usize,
    summary: String,
    failed: Option<String>,
    approvers: Vec<crate::model::Approver>,
    quorum: u32,
    require_reason: bool,
    deadline: Option<String>,
    deadline_at: Option<DateTime<Utc>>,
    /// `trust: never`: no trust answer or grant lets a call through.
    trust_never: bool,
}

fn explain(ctx: &Ctx, a: &ExplainArgs) -> Result<u8> {
    let calendars = &ctx.settings.service.calendars;
    let at = a.at.unwrap_or_else(|| ctx.now());
    if let Some(name) = &a.policy {
        return explain_policy(ctx, a, name, at);
    }
    let Some(path) = &a.spec else {
        return Err(Error::Usage("name a SPEC or a --policy".into()));
    };
    let spec = spec::load(path, &ctx.settings.limits)?;
    let mut vars = Map::new();
    for d in &spec.inputs {
        if let Some(v) = &d.default {
            vars.insert(d.name.clone(), v.clone());
        }
    }
    vars.extend(spec.input_values.clone());
    vars.extend(spec.type_overrides(&a.vars)?);
    let templates = Templates::shared();
    let mut out = Vec::new();
    for g in spec.gates() {
        if a.gate.as_deref().is_some_and(|id| id != g.id) {
            continue;
        }
        let rules = policy::rules_of(&spec, g);
        if rules.is_empty() {
            continue;
        }
        let base = g
            .approvals_required
            .or(spec.approval.approvals_required)
            .unwrap_or(1)
            .max(1);
        let ctx = context(&vars, None);
        let Some(choice) = policy::choose(rules, templates, &ctx, base) else {
            continue;
        };
        let timeout = choice.rule.timeout.or_else(|| {
            g.timeout_secs.map(|secs| spec::timeout::Timeout {
                secs,
                business: g.hours.as_ref().is_some_and(|h| h.business_timeout),
            })
        });
        let named = g.hours.as_ref().and_then(|h| h.calendar.as_deref());
        out.push(explained(
            format!("gate `{}`", g.id),
            rules,
            &choice,
            choice.rule.require_reason.unwrap_or(g.require_reason),
            at,
            timeout,
            calendar(calendars, named),
        ));
    }
    let tool_rules = &spec.approval.rules;
    if a.gate.is_none() && !tool_rules.is_empty() {
        let args = a.args.clone().unwrap_or_else(|| json!({}));
        let tool = a.tool.as_deref().map(|n| (n, &args));
        let ctx = context(&vars, tool);
        if let Some(choice) = policy::choose(tool_rules, templates, &ctx, 1) {
            // One approver decides each call, without a timeout or a
            // required reason (as `Engine::tool_rule`).
            let rule = ApprovalRule {
                quorum: None,
                timeout: None,
                require_reason: None,
                ..choice.rule.clone()
            };
            let choice = Choice {
                rule: &rule,
                base: 1,
                ..choice
            };
            let place = match &a.tool {
                Some(t) => format!("tool call `{t}` (security.approvers)"),
                None => "tool calls (security.approvers; --tool NAME to judge one)".into(),
            };
            out.push(explained(
                place,
                tool_rules,
                &choice,
                false,
                at,
                None,
                calendar(calendars, None),
            ));
        }
    }
    if out.is_empty() {
        let what = match &a.gate {
            Some(id) if !spec.gates().iter().any(|g| &g.id == id) => {
                return Err(Error::Usage(format!(
                    "no gate `{id}` in {} (gates: {})",
                    path.display(),
                    spec.gates()
                        .iter()
                        .map(|g| g.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
            Some(id) => format!("gate `{id}` has no approval rules"),
            None => "no gate in this spec has approval rules".into(),
        };
        if a.json {
            outln!(
                "{}",
                json!({"name": spec.name, "at": at, "explained": [], "note": what})
            )?;
        } else {
            outln!("{what}: its approvers are a fixed list (see `strands plan`).")?;
        }
        return Ok(exit::OK);
    }
    print(&spec.name, at, &out, a.json)
}

/// `--policy NAME`: the service file's policy, judged on `--var`/`--detail`
/// as an approval request's `details`.
fn explain_policy(ctx: &Ctx, a: &ExplainArgs, name: &str, at: DateTime<Utc>) -> Result<u8> {
    let calendars = &ctx.settings.service.calendars;
    let policies = &ctx.settings.service.policies;
    let Some(p) = policies.get(name) else {
        let known: Vec<&str> = policies.keys().map(String::as_str).collect();
        return Err(Error::Usage(format!(
            "no policy `{name}` in the service file (STRANDS_SERVICE_FILE){}",
            if known.is_empty() {
                String::new()
            } else {
                format!("; policies: {}", known.join(", "))
            }
        )));
    };
    let rules = p
        .check(ctx.settings.limits.max_timeout_secs)
        .map_err(|why| Error::Usage(format!("policy `{name}`: {why}")))?;
    let vars: Map<String, Value> = a
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let mut root = Map::new();
    policy::add_rule_vars(&mut root, &vars, None);
    let ctx = minijinja::Value::from_serialize(root);
    let mut out = Vec::new();
    if let Some(choice) = policy::choose(&rules, Templates::shared(), &ctx, 1) {
        out.push(explained(
            format!("policy `{name}`"),
            &rules,
            &choice,
            choice.rule.require_reason.unwrap_or(false),
            at,
            choice.rule.timeout,
            calendar(calendars, None),
        ));
    }
    print(&format!("policy `{name}`"), at, &out, a.json)
}

/// Prints what was explained (one JSON object with `--json`).
fn print(title: &str, at: DateTime<Utc>, out: &[Explained], json: bool) -> Result<u8> {
    if json {
        let items: Vec<Value> = out
            .iter()
            .map(|e| {
                json!({
                    "place": e.place,
                    "rule": e.index,
                    "rules": e.rules,
                    "summary": e.summary,
                    "failed": e.failed,
                    "approvers": e.approvers,
                    "quorum": e.quorum,
                    "require_reason": e.require_reason,
                    "deadline": e.deadline_at,
                    "deadline_text": e.deadline,
                    "trust": if e.trust_never { "never" } else { "allowed" },
                })
            })
            .collect();
        outln!("{}", json!({"name": title, "at": at, "explained": items}))?;
        return Ok(exit::OK);
    }
    outln!("{title} — opened at {} UTC", at.format("%Y-%m-%d %H:%M"))?;
    for e in out {
        outln!("\n{}: rule {} of {} applies", e.place, e.index, e.rules)?;
        outln!("  {}", e.summary)?;
        if let Some(f) = &e.failed {
            outln!("  fail closed: {f}")?;
        }
        let who = if e.approvers.is_empty() {
            "anyone who can reach it".to_string()
        } else {
            crate::model::identity::listed(&e.approvers)
        };
        outln!(
            "  who may answer: {who} ({} approval{} needed{})",
            e.quorum,
            if e.quorum == 1 { "" } else { "s" },
            if e.require_reason {
                "; a rejection must say why"
            } else {
                ""
            }
        )?;
        outln!(
            "  deadline: {}",
            e.deadline.as_deref().unwrap_or("none (it waits)")
        )?;
        if e.trust_never {
            outln!("  trust: never (no trust answer or grant lets a call through; each is asked)")?;
        }
    }
    Ok(exit::OK)
}

/// The service calendar a gate keeps (`named`, else the default one), or
/// why there is none.
fn calendar<'a>(
    calendars: &'a std::collections::BTreeMap<String, Calendar>,
    named: Option<&str>,
) -> std::result::Result<(String, &'a Calendar), String> {
    let names: Vec<String> = calendars.keys().cloned().collect();
    let name = crate::gate::calendar::pick(&names, named)?;
    calendars
        .get(&name)
        .map(|c| (name.clone(), c))
        .ok_or_else(|| format!("calendar `{name}` is not defined"))
}

fn explained(
    place: String,
    rules: &[ApprovalRule],
    choice: &Choice<'_>,
    require_reason: bool,
    at: DateTime<Utc>,
    timeout: Option<spec::timeout::Timeout>,
    calendar: std::result::Result<(String, &Calendar), String>,
) -> Explained {
    let cal = calendar.as_ref().ok().map(|(_, c)| *c);
    let deadline_at = timeout.map(|t| crate::gate::calendar::deadline(at, &t, cal));
    let deadline = timeout.zip(deadline_at).map(|(t, d)| {
        let when = d.format("%Y-%m-%d %H:%M UTC");
        match (&calendar, t.business) {
            (Ok((name, c)), true) => format!(
                "{} — {when} ({t} on calendar `{name}`)",
                c.deadline_words(at, d)
            ),
            (Err(why), true) => format!(
                "{when} ({t}, but {why}: every hour counted here; `strands run` refuses it)"
            ),
            (_, false) => format!("{when} ({t} after opening)"),
        }
    });
    Explained {
        place,
        rules: rules.len(),
        index: choice.index + 1,
        summary: choice.summary(),
        failed: choice.failed.as_ref().map(policy::Failed::detail),
        approvers: choice.rule.approvers.clone(),
        quorum: choice.needs(),
        require_reason,
        deadline,
        deadline_at,
        trust_never: choice.rule.trust_never,
    }
}

/// What conditions see in a dry run: the inputs, `details`, `tool`.
fn context(vars: &Map<String, Value>, tool: Option<(&str, &Value)>) -> minijinja::Value {
    let mut root = vars.clone();
    for k in ["hitl_response", "human_feedback", "last_response"] {
        root.insert(k.into(), Value::Null);
    }
    policy::add_rule_vars(&mut root, vars, tool);
    minijinja::Value::from_serialize(root)
}

#[cfg(test)]
mod tests {
    use super::parse_at;

    #[test]
    fn times_read_as_utc_unless_an_offset_is_given() {
        assert_eq!(
            parse_at("2026-12-24 22:00").unwrap().to_rfc3339(),
            "2026-12-24T22:00:00+00:00"
        );
        assert_eq!(
            parse_at("2026-12-24 22:00 +01:00").unwrap().to_rfc3339(),
            "2026-12-24T21:00:00+00:00"
        );
        assert_eq!(
            parse_at("2026-12-24T22:00:00-05:00").unwrap().to_rfc3339(),
            "2026-12-25T03:00:00+00:00"
        );
        assert!(parse_at("Christmas eve")
            .unwrap_err()
            .contains("YYYY-MM-DD HH:MM"));
    }
}
