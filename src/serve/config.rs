//! The service's configuration, built once at start-up from the settings'
//! variables (`config::env::Env`; flags may override): where it listens, the store, the workflows it may start, the
//! API's limits, and the rooms' own settings (Slack's and Teams', when set).
//!
//! | variable | setting |
//! |---|---|
//! | `STRANDS_BIND` | address to listen on (`127.0.0.1:3000`) |
//! | `STRANDS_WORKFLOWS` | directory of specs runs may be started from, by name |
//! | `STRANDS_PUBLIC_URL` | how others reach this server (links in webhooks, Slack, the CLI) |
//! | `STRANDS_WEB_TEMPLATES` | directory of web inbox templates replacing the built-in ones |
//! | `STRANDS_WEB_LOGIN_HOURS` | how long a web inbox sign-in lasts (12) |
//! | `STRANDS_OIDC_ISSUER`, `STRANDS_OIDC_CLIENT_ID`, ... | sign-in through the identity provider (`crate::web::oidc`) |
//! | `STRANDS_MAX_BODY_BYTES` | largest request body (256 KiB) |
//! | `STRANDS_API_RATE_PER_SEC`, `STRANDS_API_BURST` | per-token rate limit (20/s, burst 40) |
//! | `STRANDS_MCP_PROGRESS_SECONDS` | how often a waiting MCP tool reports progress (10) |
//! | `SLACK_BOT_TOKEN`, `SLACK_SIGNING_SECRET`, ... | Slack (`crate::slack::config`) |
//! | `TEAMS_APP_ID`, `TEAMS_APP_PASSWORD`, ... | Teams (`crate::teams::settings`) |
//! | `STRANDS_WEBHOOK_URL`, `STRANDS_WEBHOOK_SECRET`, ... | webhooks (`crate::webhook::config`) |
//! | `STRANDS_SMTP_URL`, `STRANDS_EMAIL_FROM`, ... | the e-mail room (`crate::email::config`) |
//! | `STRANDS_AMQP_URL`, `STRANDS_AMQP_QUEUE`, ... | the queue room (`crate::amqp`) |

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub store: PathBuf,
    /// Specs runs may start (NAME = file stem).
    pub workflows: Option<PathBuf>,
    pub max_body_bytes: usize,
    /// The base URL others use to reach this server, no trailing slash.
    pub public_url: String,
    pub api: crate::api::Limits,
    /// How often a waiting MCP tool reports progress (`crate::mcp`).
    pub mcp_progress: std::time::Duration,
    /// Slack, when configured.
    pub slack: Option<crate::slack::config::Config>,
    /// The Teams room, when `TEAMS_APP_ID` and `TEAMS_APP_PASSWORD` are set.
    pub teams: Option<crate::teams::TeamsSettings>,
    /// The web inbox.
    pub web: crate::web::Config,
    /// Outbound webhooks, when `STRANDS_WEBHOOK_URL` is set.
    pub webhooks: Option<crate::webhook::Config>,
    /// The e-mail room, when `STRANDS_SMTP_URL` and `STRANDS_EMAIL_FROM` are set.
    pub email: Option<crate::email::Settings>,
    /// The queue room, when `STRANDS_AMQP_URL` is set.
    pub amqp: Option<crate::amqp::Config>,
    /// What the engine, the tools and the timers are configured with.
    pub settings: Arc<crate::config::Settings>,
}

/// Flag values that override the environment.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub bind: Option<SocketAddr>,
    pub workflows: Option<PathBuf>,
    pub approval_channel: Option<String>,
    pub templates: Option<PathBuf>,
}

pub use crate::hub::DEFAULT_BIND;

impl Config {
    /// Reads the environment through `get` (tests pass a map). A bad value
    /// is an error naming the variable.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        store: PathBuf,
        o: Overrides,
    ) -> Result<Config> {
        let set = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let bind = match o.bind {
            Some(b) => b,
            None => {
                let raw = set("STRANDS_BIND").unwrap_or_else(|| DEFAULT_BIND.to_string());
                raw.trim().parse().map_err(|_| {
                    Error::Usage(format!(
                        "STRANDS_BIND `{raw}` is not an address like 127.0.0.1:3000"
                    ))
                })?
            }
        };
        let number = |name: &str, default: u64| -> Result<u64> {
            match set(name) {
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        Error::Usage(format!("{name} `{v}` is not a positive whole number"))
                    }),
                None => Ok(default),
            }
        };
        let max_body_bytes = number(
            "STRANDS_MAX_BODY_BYTES",
            crate::hub::DEFAULT_MAX_BODY_BYTES as u64,
        )? as usize;
        let api = crate::api::Limits {
            per_second: number("STRANDS_API_RATE_PER_SEC", 20)?,
            burst: u32::try_from(number("STRANDS_API_BURST", 40)?).unwrap_or(u32::MAX),
        };
        let public_url = match set("STRANDS_PUBLIC_URL") {
            Some(u) => {
                let parsed = url::Url::parse(u.trim()).map_err(|e| {
                    Error::Usage(format!("STRANDS_PUBLIC_URL `{u}` is not a URL: {e}"))
                })?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(Error::Usage(format!(
                        "STRANDS_PUBLIC_URL `{u}` must be an http or https URL"
                    )));
                }
                u.trim().trim_end_matches('/').to_string()
            }
            None => format!("http://{bind}"),
        };
        let slack = crate::slack::config::Config::from_lookup(
            &get,
            crate::slack::config::Overrides {
                approval_channel: o.approval_channel,
                templates: o.templates,
            },
        )?;
        let teams = crate::teams::TeamsSettings::from_lookup(&get)
            .map_err(|e| Error::Usage(e.to_string()))?;
        if teams.as_ref().is_some_and(|t| t.local_playground) && !bind.ip().is_loopback() {
            return Err(Error::Usage(format!(
                "TEAMS_LOCAL_PLAYGROUND=1 takes unauthenticated activities, so strands serve must listen on a loopback address, not {bind}: set STRANDS_BIND=127.0.0.1:PORT (or unset the mode)"
            )));
        }
        let webhooks = crate::webhook::Config::from_lookup(&get, &public_url)?;
        let email =
            crate::email::Settings::from_lookup(&get).map_err(|e| Error::Usage(e.to_string()))?;
        let amqp = crate::amqp::Config::from_lookup(&get, &public_url)?;
        let web = crate::web::Config {
            public_url: public_url.clone(),
            templates: set("STRANDS_WEB_TEMPLATES").map(PathBuf::from),
            login_hours: u32::try_from(number("STRANDS_WEB_LOGIN_HOURS", 12)?).unwrap_or(u32::MAX),
            oidc: crate::web::oidc::Settings::from_lookup(&get)?,
        };
        Ok(Config {
            web,
            webhooks,
            email,
            amqp,
            bind,
            store,
            workflows: o
                .workflows
                .or_else(|| set("STRANDS_WORKFLOWS").map(PathBuf::from)),
            max_body_bytes,
            public_url,
            api,
            mcp_progress: std::time::Duration::from_secs(number(
                "STRANDS_MCP_PROGRESS_SECONDS",
                10,
            )?),
            slack,
            teams,
            settings: Arc::new(crate::config::Settings::load(&get)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> Result<Config> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(
            |k| map.get(k).cloned(),
            PathBuf::from("/tmp/s"),
            Overrides::default(),
        )
    }

    /// Every variable of `config::vars` is read by the sections built
    /// here (the service's and every command's), or by the CLI alone; and
    /// nothing is read that the table does not describe.
    #[test]
    fn the_settings_tree_reads_exactly_the_table_of_variables() {
        use std::cell::RefCell;
        use std::collections::BTreeSet;
        // Every room on, so that each reads all of its variables.
        let on: HashMap<&str, &str> = [
            ("SLACK_BOT_TOKEN", "xoxb-1"),
            ("SLACK_APP_TOKEN", "xapp-1"),
            ("SLACK_SIGNING_SECRET", "s"),
            ("TEAMS_APP_ID", "app"),
            ("TEAMS_APP_PASSWORD", "p"),
            ("STRANDS_WEBHOOK_URL", "https://hooks.example/x"),
            (
                "STRANDS_WEBHOOK_SECRET",
                "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
            ),
            ("STRANDS_SMTP_URL", "smtp://u:p@mail.example:587"),
            ("STRANDS_EMAIL_FROM", "Strands <approvals@corp.example>"),
            ("STRANDS_AMQP_URL", "amqps://u:p@mq.example/prod"),
            ("STRANDS_OIDC_ISSUER", "https://idp.example"),
            ("STRANDS_OIDC_CLIENT_ID", "strands"),
            ("STRANDS_OIDC_CLIENT_SECRET", "s"),
        ]
        .into_iter()
        .collect();
        let asked = RefCell::new(BTreeSet::new());
        let get = |k: &str| {
            asked.borrow_mut().insert(k.to_string());
            on.get(k).map(|v| v.to_string())
        };
        Config::from_lookup(get, PathBuf::from("/tmp/s"), Overrides::default())
            .expect("every room on");
        let asked = asked.into_inner();
        let unknown: Vec<&String> = asked
            .iter()
            .filter(|k| crate::config::vars::find(k).is_none())
            .collect();
        assert!(
            unknown.is_empty(),
            "read but not in config::vars::VARS: {unknown:?}"
        );
        // What the CLI reads itself (cli/mod.rs, remote.rs, doctor.rs), and
        // the settings file's name (config::env).
        const CLI: &[&str] = &[
            "STRANDS_CONFIG",
            "STRANDS_STORE",
            "STRANDS_SERVER",
            "STRANDS_TOKEN",
            "STRANDS_LOG",
            "STRANDS_LOG_FORMAT",
            "OLLAMA_HOST",
        ];
        let unread: Vec<&str> = crate::config::vars::VARS
            .iter()
            .map(|v| v.name)
            .filter(|n| !asked.contains(*n) && !CLI.contains(n))
            .collect();
        assert!(
            unread.is_empty(),
            "in config::vars::VARS but read by nothing: {unread:?}"
        );
    }

    #[test]
    fn serves_without_slack_and_names_what_is_wrong() {
        let c = cfg(&[]).expect("defaults");
        assert!(c.slack.is_none());
        assert_eq!(c.bind.to_string(), DEFAULT_BIND);
        assert_eq!(c.public_url, "http://127.0.0.1:3000");
        let e = cfg(&[("SLACK_SIGNING_SECRET", "s")]).unwrap_err();
        assert!(e.to_string().contains("SLACK_BOT_TOKEN"), "{e}");
        for (var, val) in [
            ("STRANDS_BIND", "nope"),
            ("STRANDS_MAX_BODY_BYTES", "-1"),
            ("STRANDS_API_RATE_PER_SEC", "0"),
            ("STRANDS_PUBLIC_URL", "ftp://x"),
        ] {
            let e = cfg(&[(var, val)]).unwrap_err();
            assert!(e.to_string().contains(var), "{var}: {e}");
        }
        assert!(c.teams.is_none());
        let e = cfg(&[("TEAMS_APP_ID", "app")]).unwrap_err();
        assert!(e.to_string().contains("TEAMS_APP_PASSWORD"), "{e}");
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        assert!(c.email.is_none());
        let e = cfg(&[("STRANDS_SMTP_URL", "smtp://u:hunter2@mail.example")]).unwrap_err();
        assert!(e.to_string().contains("STRANDS_EMAIL_FROM"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let c = cfg(&[("STRANDS_PUBLIC_URL", "https://approvals.example.com/")]).expect("ok");
        assert_eq!(c.public_url, "https://approvals.example.com");
    }
}
