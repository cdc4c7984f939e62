//! `strands ask "Deploy v1.2 to prod?" --approvers alice,group:sre`: an
//! approval request from any script ([`crate::hub::approvals`]). It blocks
//! until the request is decided, prints who decided and why, and exits 0
//! approved, 1 rejected, 4 timed out (the fallback rejected) — its own
//! codes, so a shell `if strands ask …; then` reads naturally.
//!
//! Through a server (`STRANDS_SERVER` + `STRANDS_TOKEN`, or the one holding
//! the store) it waits with `GET /api/v1/approvals/{id}?wait=60`, again and
//! again; a broken connection resumes waiting on the same request. On a
//! local store it creates the request and looks at the store every second,
//! holding it only to read, so `strands resume ID --approve` from another
//! process answers it. Offline, nothing else fires its timeout: the waiting
//! `ask` applies it when it passes (as `strands resume ID` would).

use std::time::Duration;

use clap::Args;
use reqwest::Method;

use serde_json::Value;

use super::{remote, Ctx};
use crate::channel::Detached;
use crate::error::{exit, Error, Result};
use crate::hub::approvals::{self, Action, ApprovalRequest, ApprovalView, OnTimeout};
use crate::spec;

/// Exit codes of `strands ask` (README, Exit codes).
pub mod codes {
    pub const APPROVED: u8 = 0;
    pub const REJECTED: u8 = 1;
    pub const TIMED_OUT: u8 = 4;
}

#[derive(Args, Debug)]
pub struct AskArgs {
    /// What is asked, one line.
    pub title: String,
    /// More context (markdown), shown under the title.
    #[arg(long, default_value = "")]
    pub body: String,
    /// Who may answer: names, Slack ids, group:NAME (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', required_unless_present = "policy")]
    pub approvers: Vec<String>,
    /// Approvals needed (default 1).
    #[arg(long)]
    pub quorum: Option<u32>,
    /// A named approval policy of the service file: its rules, judged on
    /// the --detail values, decide who answers (instead of --approvers and --quorum).
    #[arg(long, conflicts_with_all = ["approvers", "quorum"])]
    pub policy: Option<String>,
    /// How long to wait for an answer: 30m, 2h, 1d (minutes when bare).
    #[arg(long, value_parser = parse_minutes)]
    pub timeout: Option<u64>,
    /// What the timeout decides.
    #[arg(long, default_value = "reject", value_parser = ["reject", "approve"])]
    pub on_timeout: String,
    /// A rejection must say why.
    #[arg(long)]
    pub require_reason: bool,
    /// A fact shown as a field, KEY=VALUE (repeatable).
    #[arg(long = "detail", value_parser = spec::parse_var)]
    pub details: Vec<(String, String)>,
    /// Remind the approvers this often (30m, 2h; minutes when bare).
    #[arg(long, value_parser = parse_minutes_f)]
    pub remind_every: Option<f64>,
    /// Escalate when nobody answered after this long (30m, 2h).
    #[arg(long, value_parser = parse_minutes_f, requires = "escalate_to")]
    pub escalate_after: Option<f64>,
    /// Who gets an escalated request: Slack ids, a channel, teams:<id> (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub escalate_to: Vec<String>,
    /// Where else to ask: slack:#channel, teams:<conversation id>, dm, email (repeatable).
    #[arg(long, value_delimiter = ',')]
    pub notify: Vec<String>,
    /// An idempotency key: the same key asks once (and a rerun waits on it).
    #[arg(long)]
    pub key: Option<String>,
    /// A label, KEY=VALUE (repeatable).
    #[arg(long = "label", value_parser = spec::parse_var)]
    pub labels: Vec<(String, String)>,
    /// The action approved, a tool name (shown, and bound by its digest).
    #[arg(long)]
    pub action: Option<String>,
    /// The action's arguments, JSON.
    #[arg(long, requires = "action", value_parser = parse_json)]
    pub action_args: Option<Value>,
    /// With --action: an approver may answer "approve, and stop asking for
    /// this tool" (trust); the outcome says so.
    #[arg(long, requires = "action")]
    pub trust: bool,
    /// Values approving fills in: a flat JSON Schema object
    /// ('{"properties": {"replicas": {"type": "integer"}}, "required": ["replicas"]}').
    #[arg(long, value_parser = parse_form)]
    pub form: Option<String>,
    /// Print the request's id and exit 0 without waiting.
    #[arg(long)]
    pub no_wait: bool,
    /// One JSON object on stdout (the request and its decision).
    #[arg(long)]
    pub json: bool,
}

/// `30m`, `2h`, `1d`, `90` (minutes) → minutes.
pub fn parse_minutes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "m"),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (30m, 2h, 1d)"))?;
    let per = match unit.trim() {
        "m" | "min" => 1,
        "h" => 60,
        "d" => 1440,
        _ => return Err(format!("`{s}`: use m, h or d (30m, 2h, 1d)")),
    };
    Ok(n.saturating_mul(per))
}

fn parse_json(s: &str) -> std::result::Result<Value, String> {
    serde_json::from_str(s).map_err(|e| format!("not JSON: {e}"))
}

/// The text of `--form`, once it is JSON (the request reads it as a form).
fn parse_form(s: &str) -> std::result::Result<String, String> {
    serde_json::from_str::<approvals::FormSchema>(s)
        .map(|_| s.to_string())
        .map_err(|e| format!("not JSON: {e}"))
}

fn parse_minutes_f(s: &str) -> std::result::Result<f64, String> {
    parse_minutes(s).map(|m| m as f64)
}

impl AskArgs {
    fn request(&self) -> ApprovalRequest {
        ApprovalRequest {
            title: self.title.clone(),
            body: self.body.clone(),
            details: self.details.iter().cloned().collect(),
            approvers: self
                .approvers
                .iter()
                .map(|a| crate::model::Approver::parse(a))
                .collect(),
            policy: self.policy.clone(),
            quorum: self.quorum,
            require_reason: self.require_reason,
            timeout_minutes: self.timeout,
            on_timeout: if self.on_timeout == "approve" {
                OnTimeout::Approve
            } else {
                OnTimeout::Reject
            },
            reminder_minutes: self.remind_every,
            escalation_minutes: self.escalate_after,
            escalate_to: self.escalate_to.clone(),
            notify: self.notify.clone(),
            key: self.key.clone(),
            labels: self.labels.iter().cloned().collect(),
            action: self.action.as_ref().map(|tool| Action {
                tool: tool.clone(),
                arguments: self.action_args.clone().unwrap_or(Value::Null),
            }),
            form: self
                .form
                .as_deref()
                .and_then(|f| serde_json::from_str(f).ok()),
            trust: self.trust,
            editable: false,
            step_up: None,
        }
    }
}

/// `strands ask`.
pub(super) async fn ask(ctx: &Ctx, args: AskArgs) -> Result<u8> {
    let req = args.request();
    let view = match &ctx.remote {
        Some(remote) => ask_remote(remote, &req, args.no_wait).await?,
        None => ask_local(ctx, &req, args.no_wait).await?,
    };
    if args.no_wait {
        if args.json {
            println!("{}", serde_json::to_string(&view).unwrap_or_default());
        } else {
            println!("{}", view.id);
        }
        return Ok(exit::OK);
    }
    report(&view, args.json)
}

/// Prints the outcome; the exit code.
fn report(view: &ApprovalView, json: bool) -> Result<u8> {
    let by = view.decided_by.as_deref().unwrap_or("?");
    let via = view.via.as_deref().unwrap_or("?");
    let reason = view
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let (code, line) = match (view.status.as_str(), view.decision.as_deref()) {
        ("timed_out", Some("approved")) => (
            codes::APPROVED,
            "timed out: approved by the fallback".to_string(),
        ),
        ("timed_out", _) => (
            codes::TIMED_OUT,
            "timed out: rejected by the fallback".to_string(),
        ),
        ("approved", _) => {
            let how = if view.trusted {
                "approved and trusted"
            } else {
                "approved"
            };
            let values = view
                .values
                .as_ref()
                .map(|v| format!(": {}", crate::model::form::shown(v)))
                .unwrap_or_default();
            (
                codes::APPROVED,
                format!("{how} by {by} (via {via}){values}"),
            )
        }
        ("rejected", _) => (
            codes::REJECTED,
            format!("rejected by {by} (via {via}){reason}"),
        ),
        (other, _) => {
            return Err(Error::Runtime(format!(
                "approval request {} is {other}",
                view.id
            )))
        }
    };
    if json {
        println!("{}", serde_json::to_string(view).unwrap_or_default());
    } else {
        println!("{line}");
    }
    Ok(code)
}

async fn ask_remote(
    remote: &remote::Remote,
    req: &ApprovalRequest,
    no_wait: bool,
) -> Result<ApprovalView> {
    let body = serde_json::to_value(req).map_err(|e| Error::Internal(e.to_string()))?;
    let made = remote::call(remote, Method::POST, "/approvals", Some(&body)).await?;
    let mut view: ApprovalView = read(made)?;
    if !view.created {
        eprintln!("request {} (this key's): waiting on it", view.id);
    } else if !no_wait {
        let who = match &req.policy {
            Some(p) => format!("the approvers policy `{p}` names"),
            None => crate::model::identity::listed(&req.approvers),
        };
        eprintln!("asked: request {} — waiting for {who}", view.id);
    }
    if no_wait {
        return Ok(view);
    }
    let path = format!("/approvals/{}?wait={}", view.id, approvals::MAX_WAIT_SECS);
    while !view.finished() {
        match remote::call(remote, Method::GET, &path, None).await {
            Ok(v) => view = read(v)?,
            // The connection broke: wait on the same request again.
            Err(Error::Runtime(e)) => {
                eprintln!("{e}; waiting on {} again", view.id);
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(view)
}

fn read(v: Value) -> Result<ApprovalView> {
    serde_json::from_value(v).map_err(|e| {
        Error::Runtime(format!(
            "the server sent a request this CLI cannot read: {e}"
        ))
    })
}

async fn ask_local(ctx: &Ctx, req: &ApprovalRequest, no_wait: bool) -> Result<ApprovalView> {
    let id = approvals::id_of(req, &ctx.who).map_err(|e| Error::Usage(e.to_string()))?;
    {
        let store = ctx.open().await?;
        let existing = match req.key {
            Some(_) => store.load(&id).await?,
            None => None,
        };
        if existing.is_none() {
            let directory = store.directory().await?;
            let policies = &ctx.settings.service.policies;
            let mut engine = ctx.engine(&store);
            let p = approvals::prepare(
                req,
                &ctx.who,
                &ctx.settings.limits,
                engine.specs(),
                &directory,
                policies,
            )
            .map_err(|e| Error::Usage(e.to_string()))?;
            // One trace from the request's creation on (`crate::traces`).
            use tracing::Instrument as _;
            let span = crate::traces::run_span(&p.spec.name, p.spec.pattern.name(), None);
            span.record("session.id", id.as_str());
            let session = engine
                .create_as(&p.spec, p.start, id.clone())
                .instrument(span.clone())
                .await?;
            engine
                .drive(&p.spec, session, &mut Detached)
                .instrument(span)
                .await?;
            if !no_wait {
                let asked = store.get(&id).await?;
                let gate = asked.open_gates().next();
                let who = gate
                    .map(|g| crate::model::identity::listed(&g.approvers))
                    .unwrap_or_else(|| crate::model::identity::listed(&req.approvers));
                let rule = gate
                    .and_then(|g| g.rule.as_ref())
                    .map(|r| format!(" ({})", r.summary))
                    .unwrap_or_default();
                eprintln!(
                    "asked: request {id} — waiting for {who}{rule}; answer with {}",
                    ctx.words().resume_cmd(&id, "--approve")
                );
            }
        } else if !no_wait {
            eprintln!("request {id} (this key's): waiting on it");
        }
    }
    loop {
        // Another process (the `resume` answering it) may hold the store.
        let view = match ctx.open().await {
            Ok(store) => {
                let session = store.get(&id).await?;
                let due = session.status == crate::model::Status::Paused
                    && session.open_gates().any(|g| g.timed_out(ctx.now()));
                if due && !no_wait {
                    // Nothing else fires a timeout on a local store: apply
                    // it here, as `strands resume ID` would (recorded once:
                    // a second waiter finds it applied).
                    ctx.engine(&store).resume(&id, &mut Detached).await?;
                    continue;
                }
                ApprovalView::of(&session)
            }
            Err(Error::Store(_) | Error::Io { .. }) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        if no_wait || view.finished() {
            return Ok(view);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_people_write_them() {
        assert_eq!(parse_minutes("30m"), Ok(30));
        assert_eq!(parse_minutes("2h"), Ok(120));
        assert_eq!(parse_minutes("1d"), Ok(1440));
        assert_eq!(parse_minutes("45"), Ok(45));
        assert!(parse_minutes("soon").is_err());
        assert!(parse_minutes("5s").is_err());
    }
}
