//! The CLI as a client of `strands serve`: with `STRANDS_SERVER` and
//! `STRANDS_TOKEN`, or by itself when a running server holds the store
//! (it finds `serve.json` there, `crate::serve::discovery`), `run NAME`,
//! `resume`, `sessions list|show`, `audit export`, `tokens`, `people` and
//! `teams conversations` go through the HTTP API. The output, the `--json` shapes and the exit codes are
//! the offline ones: sessions are rendered from the same view, refusals
//! map to the same exit codes, and `run`/`resume` wait — following the
//! run's events, not polling — until the run stops, as they do offline.

use futures_util::StreamExt;
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::render::{report_view, Words};
use serde_json::{Map, Value};

use super::{Ctx, ResumeArgs, RunArgs};
use crate::api::admin::TokenCreated;
use crate::api::runs::RunStarted;
use crate::api::sessions::{AnswerOutcome, SessionPage};
use crate::error::{Error, Result};
use crate::hub::answers::AnswerRequest;
use crate::hub::view::SessionView;
use crate::model::Status;

/// How long one look at the run waits for its next event.
const LOOK: std::time::Duration = std::time::Duration::from_secs(2);

/// A server the CLI talks to.
pub(super) struct Remote {
    base: String,
    token: SecretString,
    /// Who the local token acts for (`X-Strands-As`).
    act_as: Option<String>,
    http: reqwest::Client,
    /// Where the server came from, for messages.
    origin: &'static str,
}

impl Remote {
    /// The server's root URL (no trailing slash).
    pub(super) fn base(&self) -> &str {
        &self.base
    }

    /// The token it sends (for a client of the server's other protocols).
    pub(super) fn token(&self) -> &str {
        self.token.expose_secret()
    }

    /// Its HTTP client.
    pub(super) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// `STRANDS_SERVER` + `STRANDS_TOKEN`, when set; `as_who` is `--as`,
    /// which a server does not take from a token of its own.
    pub(super) fn from_settings(
        env: &crate::config::env::Env,
        as_who: Option<&str>,
    ) -> Result<Option<Remote>> {
        let Some(server) = env.get("STRANDS_SERVER").filter(|s| !s.trim().is_empty()) else {
            return Ok(None);
        };
        let token = env
            .get("STRANDS_TOKEN")
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                Error::Usage(
                    "STRANDS_SERVER is set but STRANDS_TOKEN is not: the server needs a token (`strands tokens create`)".into(),
                )
            })?;
        let url = url::Url::parse(server.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                Error::Usage(format!("STRANDS_SERVER `{server}` is not an http(s) URL"))
            })?;
        if as_who.is_some() {
            eprintln!(
                "note: --as is not sent to STRANDS_SERVER: the token's name is who you are there"
            );
        }
        Ok(Some(Remote {
            base: url.as_str().trim_end_matches('/').to_string(),
            token: SecretString::from(token.trim().to_string()),
            act_as: None,
            http: client()?,
            origin: "STRANDS_SERVER",
        }))
    }

    /// The server holding `store`, if one left its address there and
    /// answers; it acts for `who`.
    pub(super) async fn discover(store: &std::path::Path, who: &str) -> Option<Remote> {
        let left = crate::serve::discovery::find(store)?;
        let remote = Remote {
            base: left.url.trim_end_matches('/').to_string(),
            token: SecretString::from(left.token),
            act_as: Some(who.to_string()),
            http: client().ok()?,
            origin: "the server holding the store",
        };
        let alive = remote
            .http
            .get(format!("{}/healthz", remote.base))
            .timeout(std::time::Duration::from_secs(2))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        alive.then_some(remote)
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .request(method, format!("{}/api/v1{path}", self.base))
            .bearer_auth(self.token.expose_secret());
        if let Some(who) = &self.act_as {
            r = r.header(crate::api::auth::ACT_AS, who);
        }
        r
    }

    /// Sends `r`; a refusal becomes the error the offline CLI would give
    /// (`id`: the session it is about).
    async fn send(
        &self,
        r: reqwest::RequestBuilder,
        id: Option<&str>,
    ) -> Result<reqwest::Response> {
        let resp = r.send().await.map_err(|e| {
            Error::Runtime(format!(
                "cannot reach {} at {}: {}",
                self.origin,
                self.base,
                crate::error::transport(e)
            ))
        })?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        Err(self.refusal(status, &body, id))
    }

    async fn json<T: DeserializeOwned>(
        &self,
        r: reqwest::RequestBuilder,
        id: Option<&str>,
    ) -> Result<T> {
        let resp = self.send(r, id).await?;
        resp.json::<T>().await.map_err(|e| {
            Error::Runtime(format!(
                "{} sent an answer this CLI cannot read: {e}",
                self.origin
            ))
        })
    }

    /// A refused request as the offline CLI words and exits it.
    fn refusal(&self, status: StatusCode, body: &str, id: Option<&str>) -> Error {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let field = |k: &str| {
            parsed
                .as_ref()
                .and_then(|v| v["error"][k].as_str())
                .map(str::to_string)
        };
        let code = field("code").unwrap_or_default();
        let message = field("message").unwrap_or_else(|| format!("HTTP {status}"));
        let about = |m: String| match id {
            Some(id) if !m.contains(id) => format!("session {id}: {m}"),
            _ => m,
        };
        match code.as_str() {
            "unauthorized" => Error::Usage(format!("{} refused the token: {message}", self.origin)),
            "not_found" | "not_open" | "stale" | "already_answered" | "timed_out" | "forbidden"
            | "running" => Error::Session(about(message)),
            "bad_answer" | "bad_request" | "bad_field" | "bad_inputs" | "unknown_workflow"
            | "bad_token" | "name_taken" | "invalid_spec" | "cannot_run" | "invalid_request"
            | "bad_link" | "not_approver" => Error::Usage(message),
            "backup_failed" => Error::Store(format!("{}: {message}", self.origin)),
            _ => Error::Runtime(format!("{} answered {status}: {message}", self.origin)),
        }
    }

    pub(super) async fn session(&self, id: &str) -> Result<SessionView> {
        self.json(
            self.request(Method::GET, &format!("/sessions/{id}")),
            Some(id),
        )
        .await
    }

    /// Follows session `id`'s events after `after`, printing progress as
    /// the offline CLI does, until the run stops moving (paused with
    /// nothing recorded, or finished); the session then.
    async fn wait_stopped(&self, id: &str, after: u64) -> Result<SessionView> {
        let resp = self
            .send(
                self.request(Method::GET, &format!("/sessions/{id}/events?after={after}"))
                    .header(reqwest::header::ACCEPT, "text/event-stream"),
                Some(id),
            )
            .await?;
        let mut events = sse_stream::SseStream::from_bytes_stream(resp.bytes_stream());
        loop {
            let next = tokio::time::timeout(LOOK, events.next()).await;
            match next {
                Ok(Some(Ok(sse))) => {
                    let Some(data) = sse.data else { continue };
                    let Ok(event) = serde_json::from_str::<crate::model::Event>(&data) else {
                        continue;
                    };
                    if let Some(line) = progress_line(&event) {
                        eprintln!("{line}");
                    }
                    if !matches!(event.what, crate::model::EventKind::GateOpened { .. })
                        && !event.what.is_final()
                    {
                        continue;
                    }
                }
                Ok(Some(Err(e))) => {
                    return Err(Error::Runtime(format!(
                        "the event stream from {} broke: {e}",
                        self.origin
                    )))
                }
                // The run's stream ended with the run, or nothing came for a while.
                Ok(None) | Err(_) => {}
            }
            let view = self.session(id).await?;
            if view.status != Status::Running {
                return Ok(view);
            }
        }
    }
}

fn client() -> Result<reqwest::Client> {
    crate::http::install_crypto();
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(5))
        .build()
        .map_err(|e| Error::Runtime(format!("cannot set up the HTTP client: {e}")))
}

/// What the offline CLI prints on stderr as a run moves, for an event.
fn progress_line(e: &crate::model::Event) -> Option<String> {
    use crate::model::EventKind as K;
    Some(match &e.what {
        K::StepDone {
            position,
            agent,
            tokens,
            millis,
        } => format!(
            "✓ {position} completed: {agent} ({tokens} tokens, {:.1}s)",
            *millis as f64 / 1000.0
        ),
        K::GateAnswered {
            gate,
            decision,
            by,
            via,
            ..
        } => format!(
            "✓ gate `{}` {decision} by {by} ({via})",
            gate.split('#').next().unwrap_or(gate)
        ),
        K::RunCompleted { .. } => format!("✓ workflow `{}` completed", e.workflow),
        K::RunRejected { reason } => format!(
            "✗ workflow `{}` rejected{}",
            e.workflow,
            reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
        K::RunFailed { message } => format!("✗ workflow `{}` failed: {message}", e.workflow),
        K::RunCancelled { by, reason } => format!(
            "✗ workflow `{}` cancelled by {by}{}",
            e.workflow,
            reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
        K::GateOpened { .. } | K::GateTimedOut { .. } => return None,
    })
}

/// `run NAME` through the server: the name of a spec in its
/// `STRANDS_WORKFLOWS` (a path given here names its file).
pub(super) async fn run(ctx: &Ctx, remote: &Remote, args: &RunArgs) -> Result<u8> {
    if args.interactive || args.auto_approve {
        return Err(Error::Usage(format!(
            "--interactive and --auto-approve answer gates in this process; through {} answer with `strands resume`",
            remote.origin
        )));
    }
    if args.auto_resume || args.no_save_session {
        return Err(Error::Usage(format!(
            "--auto-resume and --no-save-session need the store; through {} the server keeps its sessions (`strands sessions list`, then `strands resume ID`)",
            remote.origin
        )));
    }
    if args.force {
        eprintln!(
            "note: --force is not sent through {}: its runs write their artifacts in the server's own directory, replacing earlier ones",
            remote.origin
        );
    }
    let Some(spec) = &args.spec else {
        return Err(Error::Usage(
            "strands run needs a workflow NAME (or --resume ID --hitl-response TEXT)".into(),
        ));
    };
    let name = spec
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let vars: Map<String, Value> = args
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let started: RunStarted = remote
        .json(
            remote
                .request(Method::POST, "/runs")
                .json(&json!({ "workflow": name, "vars": vars })),
            None,
        )
        .await?;
    let view = remote.wait_stopped(&started.session_id, 0).await?;
    report_view(&ctx.words(), &view.brief(), args.json)
}

/// `resume` through the server: the answer, then the run followed to its
/// next stop.
pub(super) async fn resume(
    remote: &Remote,
    words: &Words,
    args: &ResumeArgs,
    request: Option<AnswerRequest>,
) -> Result<u8> {
    if args.interactive || args.auto_approve {
        return Err(Error::Usage(format!(
            "--interactive and --auto-approve answer gates in this process; through {} give the decision as a flag",
            remote.origin
        )));
    }
    if args.force {
        eprintln!(
            "note: --force is not sent through {}: the server writes artifacts as the run was started",
            remote.origin
        );
    }
    let Some(mut request) = request else {
        let view = remote.session(&args.id).await?;
        let id = view.session_id.clone();
        // Without a decision: the server continues interrupted runs and
        // applies timeouts by itself; report where it stands.
        if let (Status::Paused, Some(g)) = (view.status, &view.gate) {
            let passed = view
                .open_gates
                .iter()
                .any(|g| g.timeout_at.is_some_and(|t| t <= words.clock.now()));
            if !passed {
                return Err(Error::Usage(format!(
                    "session {id} is paused at gate `{}` and {} cannot ask here: answer with `{}`, --reject [--reason R], --modify --feedback F or --response TEXT (strands-cli: `strands run --resume {id} --hitl-response TEXT`)",
                    g.id,
                    remote.origin,
                    words.resume_cmd(&id, "--approve")
                )));
            }
        }
        let view = remote.wait_stopped(&id, 0).await?;
        return report_view(words, &view.brief(), args.json);
    };
    // strands-cli's `run --resume ID --hitl-response` answers the first
    // open gate; otherwise `--gate`, or the server picks the only one.
    if let (None, true) = (&request.gate, args.first_open) {
        request.gate = remote.session(&args.id).await?.gate.map(|g| g.handle);
    }
    let id = args.id.clone();
    let outcome: std::result::Result<AnswerOutcome, Error> = remote
        .json(
            remote
                .request(Method::POST, &format!("/sessions/{id}/answers"))
                .json(&request),
            Some(&id),
        )
        .await;
    let limited =
        request.decision == "trust" && (request.span.is_some() || !request.matches.is_empty());
    let (id, after) = match outcome {
        Ok(o) => (o.session.session_id, o.before),
        // The fallback wins; the server applies it.
        Err(Error::Session(m)) if m.contains("timed out") => {
            eprintln!("{m}");
            (id, 0)
        }
        Err(e) => return Err(e),
    };
    if limited {
        // The grant the answer made, as a rule people read.
        let v = call(remote, Method::GET, "/grants", None).await?;
        let made = v["grants"]
            .as_array()
            .and_then(|l| l.iter().rfind(|g| g["origin"]["session"] == id.as_str()))
            .cloned();
        if let Some(g) = made {
            eprintln!(
                "granted {}: {}",
                g["id"].as_str().unwrap_or_default(),
                g["rule"].as_str().unwrap_or_default()
            );
        }
    }
    let view = remote.wait_stopped(&id, after).await?;
    report_view(words, &view.brief(), args.json)
}

/// Every session (following the pages), newest first.
pub(super) async fn list(
    remote: &Remote,
    status: Option<&str>,
    workflow: Option<&str>,
) -> Result<Vec<crate::model::Summary>> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q: Vec<(&str, String)> = vec![("limit", "500".into())];
        if let Some(s) = status {
            q.push(("status", s.to_string()));
        }
        if let Some(w) = workflow {
            q.push(("workflow", w.to_string()));
        }
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let page: SessionPage = remote
            .json(remote.request(Method::GET, "/sessions").query(&q), None)
            .await?;
        out.extend(page.sessions);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

/// One page of sessions (`sessions list --limit N [--cursor C]`).
pub(super) async fn list_page(
    remote: &Remote,
    status: Option<&str>,
    workflow: Option<&str>,
    limit: usize,
    cursor: Option<&str>,
) -> Result<SessionPage> {
    let mut q: Vec<(&str, String)> = vec![("limit", limit.to_string())];
    if let Some(s) = status {
        q.push(("status", s.to_string()));
    }
    if let Some(w) = workflow {
        q.push(("workflow", w.to_string()));
    }
    if let Some(c) = cursor {
        q.push(("cursor", c.to_string()));
    }
    remote
        .json(remote.request(Method::GET, "/sessions").query(&q), None)
        .await
}

/// The audit entries `audit export` prints.
pub(super) async fn audit_entries(
    remote: &Remote,
    since: Option<&str>,
    session: Option<&str>,
) -> Result<Vec<crate::audit::AuditEntry>> {
    let mut q: Vec<(&str, &str)> = Vec::new();
    if let Some(s) = since {
        q.push(("since", s));
    }
    if let Some(s) = session {
        q.push(("session", s));
    }
    let text = remote
        .send(remote.request(Method::GET, "/audit").query(&q), None)
        .await?
        .text()
        .await
        .map_err(|e| Error::Runtime(format!("the audit export broke off: {e}")))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| {
                Error::Runtime(format!("an audit line from the server is unreadable: {e}"))
            })
        })
        .collect()
}

/// The server's insights (`strands report`): the caller's own for an
/// approver's token.
pub(super) async fn insights(
    remote: &Remote,
    since: &str,
    by: &str,
) -> Result<crate::hub::insights::Insights> {
    remote
        .json(
            remote
                .request(Method::GET, "/insights")
                .query(&[("since", since), ("by", by)]),
            None,
        )
        .await
}

/// One decision for several gates (`strands answer`): what became of each.
pub(super) async fn answer_many(
    remote: &Remote,
    decision: &crate::model::Decision,
    reason: Option<&str>,
    gates: &[crate::hub::batch::Item],
) -> Result<Vec<crate::hub::batch::Outcome>> {
    let word = match decision {
        crate::model::Decision::Reject { .. } => "reject",
        _ => "approve",
    };
    let body = serde_json::json!({ "decision": word, "reason": reason, "gates": gates });
    let v: crate::api::batch::BatchOutcome = remote
        .json(remote.request(Method::POST, "/answers").json(&body), None)
        .await?;
    Ok(v.outcomes)
}

pub(super) async fn create_token(
    remote: &Remote,
    name: &str,
    role: &str,
    expires_days: Option<u32>,
) -> Result<TokenCreated> {
    remote
        .json(
            remote
                .request(Method::POST, "/tokens")
                .json(&json!({ "name": name, "role": role, "expires_days": expires_days })),
            None,
        )
        .await
}

/// `strands store backup DEST` made by the server holding the store.
pub(super) async fn store_backup(remote: &Remote, dest: &std::path::Path) -> Result<Value> {
    remote
        .json(
            remote
                .request(Method::POST, "/store/backup")
                .json(&json!({ "dest": dest.display().to_string() })),
            None,
        )
        .await
}

pub(super) async fn list_tokens(remote: &Remote) -> Result<Vec<Value>> {
    let v: Value = remote
        .json(remote.request(Method::GET, "/tokens"), None)
        .await?;
    Ok(v["tokens"].as_array().cloned().unwrap_or_default())
}

pub(super) async fn failed_notifications(remote: &Remote, limit: usize) -> Result<Vec<Value>> {
    let v: Value = remote
        .json(
            remote.request(Method::GET, &format!("/notifications/failed?limit={limit}")),
            None,
        )
        .await?;
    Ok(v["failed"].as_array().cloned().unwrap_or_default())
}

pub(super) async fn failed_webhooks(remote: &Remote, limit: usize) -> Result<Vec<Value>> {
    let v: Value = remote
        .json(
            remote.request(Method::GET, &format!("/webhooks/failed?limit={limit}")),
            None,
        )
        .await?;
    Ok(v["failed"].as_array().cloned().unwrap_or_default())
}

/// `POST /webhooks/{id}/retry`, or `/webhooks/retry?failed=all` without
/// an id: how many deliveries were queued again.
pub(super) async fn retry_webhooks(remote: &Remote, id: Option<&str>) -> Result<usize> {
    let path = match id {
        // Message ids are `msg_<store id>_<seq>`: nothing to escape.
        Some(id)
            if !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            return Err(Error::Usage(format!(
                "`{id}` is not a webhook message id (`strands webhooks failed` lists them)"
            )))
        }
        Some(id) => format!("/webhooks/{id}/retry"),
        None => "/webhooks/retry?failed=all".to_string(),
    };
    let v: crate::api::admin::Requeued = remote
        .json(remote.request(Method::POST, &path), None)
        .await?;
    Ok(v.requeued)
}

pub(super) async fn teams_conversations(remote: &Remote) -> Result<Vec<Value>> {
    let v: Value = remote
        .json(remote.request(Method::GET, "/teams/conversations"), None)
        .await?;
    Ok(v["conversations"].as_array().cloned().unwrap_or_default())
}

/// `sessions cancel` through the server: what it did, in the shape the
/// offline CLI prints.
pub(super) async fn cancel(remote: &Remote, id: &str, reason: Option<&str>) -> Result<Value> {
    let o: AnswerOutcome = remote
        .json(
            remote
                .request(Method::POST, &format!("/sessions/{id}/cancel"))
                .json(&json!({ "reason": reason })),
            Some(id),
        )
        .await?;
    let outcome = match o.status.as_str() {
        "cancel_requested" => "requested",
        "cancel_already_requested" => "already_requested",
        "already_cancelled" => "already_cancelled",
        // The paused run's gate was rejected; the server carries it on.
        _ => "rejected",
    };
    let s = &o.session;
    Ok(json!({
        "session": s.session_id,
        "workflow": s.workflow,
        "outcome": outcome,
        "status": s.status,
        "cancel": s.cancel,
    }))
}

pub(super) async fn revoke_token(remote: &Remote, name: &str) -> Result<()> {
    remote
        .send(
            remote.request(Method::DELETE, &format!("/tokens/{name}")),
            None,
        )
        .await
        .map(|_| ())
}

/// `method path` with an optional JSON body, for the admin commands whose
/// answer is printed as it comes (`strands people …`); `Value::Null` for
/// an empty answer.
pub(super) async fn call(
    remote: &Remote,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Value> {
    let mut r = remote.request(method, path);
    if let Some(b) = body {
        r = r.json(b);
    }
    let resp = remote.send(r, None).await?;
    if resp.status() == StatusCode::NO_CONTENT {
        return Ok(Value::Null);
    }
    resp.json::<Value>().await.map_err(|e| {
        Error::Runtime(format!(
            "{} sent an answer this CLI cannot read: {e}",
            remote.origin
        ))
    })
}
