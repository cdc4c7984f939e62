//! The bot's configuration, read once from the environment (flags may
//! override) into a plain struct. Secrets are [`SecretString`]s, so they
//! never reach a log line or a `{:?}`, and reading one takes an explicit
//! `expose_secret()`.

use std::net::SocketAddr;
use std::path::PathBuf;

use secrecy::SecretString;

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Config {
    /// `SLACK_BOT_TOKEN` (`xoxb-…`), sent on every Web API call.
    pub bot_token: SecretString,
    /// `SLACK_SIGNING_SECRET`, the HMAC key for Slack's request signatures.
    pub signing_secret: SecretString,
    /// Slack Web API base, no trailing slash (`https://slack.com/api`).
    pub api_url: String,
    pub bind: SocketAddr,
    pub store: PathBuf,
    /// Specs that `/strands run NAME` may start (NAME = file stem).
    pub workflows: Option<PathBuf>,
    /// Where approval messages go when neither the gate nor the command names a channel.
    pub approval_channel: Option<String>,
    /// User overrides for `templates/` (Block Kit message templates).
    pub templates: Option<PathBuf>,
    /// Largest request body accepted on Slack routes.
    pub max_body_bytes: usize,
    /// What the engine, the tools and the timers are configured with
    /// (admins, default approvers and timeout, limits, retries).
    pub settings: std::sync::Arc<crate::config::Settings>,
}

/// Flag values that override the environment.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub bind: Option<SocketAddr>,
    pub workflows: Option<PathBuf>,
    pub approval_channel: Option<String>,
    pub templates: Option<PathBuf>,
}

pub const DEFAULT_API_URL: &str = "https://slack.com/api";
pub const DEFAULT_BIND: &str = "127.0.0.1:3000";

impl Config {
    /// Reads the environment through `get` (tests pass a map). Missing
    /// required settings are an error naming the variable.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        store: PathBuf,
        o: Overrides,
    ) -> Result<Config> {
        let need = |name: &str| {
            get(name)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| Error::Usage(format!("{name} is not set: `strands serve` needs it (see manifests/slack-app.yaml and the README)")))
        };
        let bot_token = SecretString::from(need("SLACK_BOT_TOKEN")?);
        let signing_secret = SecretString::from(need("SLACK_SIGNING_SECRET")?);
        let api_url = get("SLACK_API_URL")
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_API_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        let bind = match o.bind {
            Some(b) => b,
            None => {
                let raw = get("STRANDS_BIND").unwrap_or_else(|| DEFAULT_BIND.to_string());
                raw.parse().map_err(|_| {
                    Error::Usage(format!(
                        "STRANDS_BIND `{raw}` is not an address like 127.0.0.1:3000"
                    ))
                })?
            }
        };
        let max_body_bytes = match get("STRANDS_MAX_BODY_BYTES") {
            Some(v) => v.parse().map_err(|_| {
                Error::Usage(format!("STRANDS_MAX_BODY_BYTES `{v}` is not a number"))
            })?,
            None => 256 * 1024,
        };
        Ok(Config {
            bot_token,
            signing_secret,
            api_url,
            bind,
            store,
            workflows: o
                .workflows
                .or_else(|| get("STRANDS_WORKFLOWS").map(PathBuf::from)),
            approval_channel: o
                .approval_channel
                .or_else(|| get("STRANDS_APPROVAL_CHANNEL"))
                .filter(|c| !c.trim().is_empty()),
            templates: o
                .templates
                .or_else(|| get("STRANDS_TEMPLATES").map(PathBuf::from)),
            max_body_bytes,
            settings: std::sync::Arc::new(crate::config::Settings::from_lookup(&get)),
        })
    }

    pub fn from_env(store: PathBuf, o: Overrides) -> Result<Config> {
        Self::from_lookup(|k| std::env::var(k).ok(), store, o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;
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

    #[test]
    fn missing_settings_are_named_and_secrets_never_printed() {
        let e = cfg(&[("SLACK_BOT_TOKEN", "xoxb-1")]).unwrap_err();
        assert!(e.to_string().contains("SLACK_SIGNING_SECRET"), "{e}");
        let e = cfg(&[("SLACK_SIGNING_SECRET", "s")]).unwrap_err();
        assert!(e.to_string().contains("SLACK_BOT_TOKEN"), "{e}");
        let c = cfg(&[
            ("SLACK_BOT_TOKEN", "xoxb-very-secret"),
            ("SLACK_SIGNING_SECRET", "sign-secret"),
        ])
        .unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("xoxb-very-secret") && !shown.contains("sign-secret"),
            "{shown}"
        );
        assert!(shown.contains("REDACTED"), "{shown}");
        assert_eq!(c.bot_token.expose_secret(), "xoxb-very-secret");
        assert_eq!(c.signing_secret.expose_secret(), "sign-secret");
        assert_eq!(c.api_url, DEFAULT_API_URL);
        assert_eq!(c.bind.to_string(), DEFAULT_BIND);
    }

    #[test]
    fn api_url_loses_its_trailing_slash() {
        let c = cfg(&[
            ("SLACK_BOT_TOKEN", "t"),
            ("SLACK_SIGNING_SECRET", "s"),
            ("SLACK_API_URL", "http://127.0.0.1:9/api/"),
        ])
        .unwrap();
        assert_eq!(c.api_url, "http://127.0.0.1:9/api");
        assert!(cfg(&[
            ("SLACK_BOT_TOKEN", "t"),
            ("SLACK_SIGNING_SECRET", "s"),
            ("STRANDS_BIND", "nope")
        ])
        .is_err());
    }
}
