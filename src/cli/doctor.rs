//! `strands doctor`: is this machine ready to run workflows? Checks the
//! session store (usable, or held by a running `strands serve`), the
//! provider credentials in the environment (set or not — never their
//! values), an Ollama server on its default address, `STRANDS_SERVER` when
//! set, and the Slack settings. Only the store is required (exit 10 when it
//! is not usable, as strands-cli's doctor exits 10); the rest is reported.
//! A store that does not open is told the way back: its last backup
//! (`backups.log`), or that none was made.

use super::*;

/// One line of the report.
#[derive(Debug, serde::Serialize)]
struct Check {
    name: &'static str,
    /// `ok`, `warn` (optional, not ready) or `fail` (required, broken).
    status: &'static str,
    detail: String,
}

fn check(name: &'static str, status: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        status,
        detail: detail.into(),
    }
}

/// Whether `url` answers an HTTP GET within two seconds.
async fn answers(url: &str) -> std::result::Result<u16, String> {
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(2))
        .build()
        .map_err(|e| e.to_string())?;
    client
        .get(url)
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map_err(crate::error::transport)
}

async fn store_check(ctx: &Ctx) -> Check {
    let path = ctx.store_shown();
    if !ctx.store_is_url() && !ctx.store_path.exists() {
        return check(
            "store",
            "ok",
            format!("{path} does not exist yet; the first run creates it"),
        );
    }
    if let Some(left) = crate::serve::discovery::find(&ctx.store_path) {
        if answers(&format!("{}/healthz", left.url))
            .await
            .is_ok_and(|s| s < 400)
        {
            return check(
                "store",
                "ok",
                format!(
                    "{path} is held by `strands serve` at {}; commands go through it",
                    left.url
                ),
            );
        }
    }
    let backed_up = match crate::store::sled::backup::last(&ctx.store_path) {
        Some((at, dest)) => format!("; last backup {} ({at})", dest.display()),
        None if ctx.store_is_url() => String::new(),
        None => "; no backup yet (`strands store backup DEST`)".into(),
    };
    match ctx.open().await {
        Ok(store) => match store.count().await {
            Ok(n) => check("store", "ok", format!("{path}: {n} session(s){backed_up}")),
            Err(e) => check("store", "fail", format!("{path}: {e}")),
        },
        // Held, not broken: the message says what to do.
        Err(e) if ctx.store_is_url() || e.to_string().contains("in use by another") => {
            check("store", "fail", e.to_string())
        }
        // The way back (its error names the last backup, or that none
        // was made).
        Err(e) => check(
            "store",
            "fail",
            format!(
                "{e}. Unfinished snapshots (snap.*.generating) a killed process leaves are removed automatically since this release; if the store still does not open, keep the directory as it is and report it. Once it opens again, `strands store verify` checks it"
            ),
        ),
    }
}

pub(super) async fn doctor(ctx: &Ctx, json: bool) -> Result<u8> {
    let mut checks = vec![check(
        "strands",
        "ok",
        format!("strands {}", env!("CARGO_PKG_VERSION")),
    )];
    checks.push(store_check(ctx).await);
    for (name, key, what) in [
        ("openai", "OPENAI_API_KEY", "provider: openai"),
        ("anthropic", "ANTHROPIC_API_KEY", "provider: anthropic"),
    ] {
        checks.push(if ctx.env.is_set(key) {
            check(name, "ok", format!("{key} is set ({what})"))
        } else {
            check(
                name,
                "warn",
                format!("{key} is not set: specs with `{what}` cannot call the model (a server without keys may not need it)"),
            )
        });
    }
    let ollama = ctx
        .env
        .get("OLLAMA_HOST")
        .filter(|h| !h.trim().is_empty())
        .map(|h| {
            if h.starts_with("http") {
                h
            } else {
                format!("http://{h}")
            }
        })
        .unwrap_or_else(|| "http://localhost:11434".into());
    checks.push(
        match answers(&format!("{}/api/tags", ollama.trim_end_matches('/'))).await {
            Ok(s) if s < 400 => check("ollama", "ok", format!("Ollama answers at {ollama}")),
            Ok(s) => check(
                "ollama",
                "warn",
                format!("{ollama} answered HTTP {s}; only needed for `provider: ollama`"),
            ),
            Err(e) => check(
                "ollama",
                "warn",
                format!("no Ollama at {ollama} ({e}); only needed for `provider: ollama`"),
            ),
        },
    );
    if let Some(server) = ctx.env.get("STRANDS_SERVER") {
        let server = server.trim().trim_end_matches('/').to_string();
        if !server.is_empty() {
            let token = if ctx.env.is_set("STRANDS_TOKEN") {
                "STRANDS_TOKEN is set"
            } else {
                "STRANDS_TOKEN is NOT set"
            };
            checks.push(match answers(&format!("{server}/healthz")).await {
                Ok(s) if s < 400 => {
                    let status = if ctx.env.is_set("STRANDS_TOKEN") {
                        "ok"
                    } else {
                        "fail"
                    };
                    check(
                        "server",
                        status,
                        format!("STRANDS_SERVER {server} answers; {token}"),
                    )
                }
                Ok(s) => check(
                    "server",
                    "fail",
                    format!("STRANDS_SERVER {server} answered HTTP {s}"),
                ),
                Err(e) => check(
                    "server",
                    "fail",
                    format!("STRANDS_SERVER {server} does not answer: {e}"),
                ),
            });
        }
    }
    checks.push(slack_check(
        ctx.env.is_set("SLACK_BOT_TOKEN"),
        ctx.env.is_set("SLACK_APP_TOKEN"),
        ctx.env.is_set("SLACK_SIGNING_SECRET"),
    ));
    let failed = checks.iter().filter(|c| c.status == "fail").count();
    let code = if failed == 0 { exit::OK } else { exit::RUNTIME };
    if json {
        outln!(
            "{}",
            json!({ "ok": failed == 0, "exit_code": code, "checks": checks })
        )?;
        return Ok(code);
    }
    for c in &checks {
        let mark = match c.status {
            "ok" => "✓",
            "warn" => "!",
            _ => "✗",
        };
        outln!("{mark} {:<10} {}", c.name, c.detail)?;
    }
    if failed == 0 {
        outln!("\nstrands is ready to run workflows.")?;
    } else {
        outln!("\n{failed} check(s) failed; fix them before running workflows.")?;
    }
    Ok(code)
}

/// Whether `strands serve` can reach Slack: the bot token, and an app token
/// (Socket Mode) or a signing secret (request URLs) or both.
fn slack_check(bot: bool, app: bool, secret: bool) -> Check {
    let (status, detail) = match (bot, app, secret) {
        (false, false, false) => (
            "ok",
            "not configured (only `strands serve` with Slack needs it)",
        ),
        (true, true, true) => (
            "ok",
            "SLACK_BOT_TOKEN is set: Socket Mode (SLACK_APP_TOKEN) and request URLs (SLACK_SIGNING_SECRET)",
        ),
        (true, true, false) => ("ok", "SLACK_BOT_TOKEN and SLACK_APP_TOKEN are set: Socket Mode"),
        (true, false, true) => (
            "ok",
            "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET are set: request URLs",
        ),
        (true, false, false) => (
            "warn",
            "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode) nor SLACK_SIGNING_SECRET (request URLs) is",
        ),
        (false, _, _) => (
            "warn",
            "SLACK_APP_TOKEN or SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN is not",
        ),
    };
    check("slack", status, detail)
}
