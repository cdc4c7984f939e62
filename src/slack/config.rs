//! Slack's configuration, read once from the environment (flags may
//! override) into a plain struct: off when no Slack variable is set,
//! refused when half set. Secrets are [`SecretString`]s, so they
//! never reach a log line or a `{:?}`, and reading one takes an explicit
//! `expose_secret()`.

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
    /// Where approval messages go when neither the gate nor the command names a channel.
    pub approval_channel: Option<String>,
    /// User overrides for `templates/` (Block Kit message templates).
    pub templates: Option<PathBuf>,
}

/// Flag values that override the environment.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub approval_channel: Option<String>,
    pub templates: Option<PathBuf>,
}

pub const DEFAULT_API_URL: &str = "https://slack.com/api";

/// The variables that together turn Slack on.
const REQUIRED: [&str; 2] = ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"];

impl Config {
    /// Reads the environment through `get` (tests pass a map): `None` when
    /// Slack is not configured at all; an error naming what is missing when
    /// it is half configured.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        o: Overrides,
    ) -> Result<Option<Config>> {
        let set = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            .filter(|n| set(n).is_none())
            .collect();
        if missing.len() == REQUIRED.len() {
            return Ok(None);
        }
        if !missing.is_empty() {
            return Err(Error::Usage(format!(
                "{} is not set: Slack needs both {} (see manifests/slack-app.yaml and the README); unset both to serve the API alone",
                missing.join(" and "),
                REQUIRED.join(" and ")
            )));
        }
        let need = |name: &str| set(name).map(SecretString::from).unwrap_or_default();
        let api_url = set("SLACK_API_URL")
            .unwrap_or_else(|| DEFAULT_API_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        Ok(Some(Config {
            bot_token: need("SLACK_BOT_TOKEN"),
            signing_secret: need("SLACK_SIGNING_SECRET"),
            api_url,
            approval_channel: o
                .approval_channel
                .or_else(|| get("STRANDS_APPROVAL_CHANNEL"))
                .filter(|c| !c.trim().is_empty()),
            templates: o
                .templates
                .or_else(|| get("STRANDS_TEMPLATES").map(PathBuf::from)),
        }))
    }

    pub fn from_env(o: Overrides) -> Result<Option<Config>> {
        Self::from_lookup(|k| std::env::var(k).ok(), o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> Result<Option<Config>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned(), Overrides::default())
    }

    #[test]
    fn slack_is_off_on_or_refused_when_half_set_and_secrets_never_print() {
        assert!(cfg(&[]).expect("no slack").is_none());
        assert!(cfg(&[("SLACK_BOT_TOKEN", " ")])
            .expect("blank is unset")
            .is_none());
        let e = cfg(&[("SLACK_BOT_TOKEN", "xoxb-1")]).unwrap_err();
        assert!(
            e.to_string().starts_with("SLACK_SIGNING_SECRET is not set"),
            "{e}"
        );
        let e = cfg(&[("SLACK_SIGNING_SECRET", "s")]).unwrap_err();
        assert!(
            e.to_string().starts_with("SLACK_BOT_TOKEN is not set"),
            "{e}"
        );
        let c = cfg(&[
            ("SLACK_BOT_TOKEN", "xoxb-very-secret"),
            ("SLACK_SIGNING_SECRET", "sign-secret"),
        ])
        .unwrap()
        .expect("slack on");
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("xoxb-very-secret") && !shown.contains("sign-secret"),
            "{shown}"
        );
        assert!(shown.contains("REDACTED"), "{shown}");
        assert_eq!(c.bot_token.expose_secret(), "xoxb-very-secret");
        assert_eq!(c.signing_secret.expose_secret(), "sign-secret");
        assert_eq!(c.api_url, DEFAULT_API_URL);
    }

    #[test]
    fn api_url_loses_its_trailing_slash() {
        let c = cfg(&[
            ("SLACK_BOT_TOKEN", "t"),
            ("SLACK_SIGNING_SECRET", "s"),
            ("SLACK_API_URL", "http://127.0.0.1:9/api/"),
        ])
        .unwrap()
        .expect("slack on");
        assert_eq!(c.api_url, "http://127.0.0.1:9/api");
    }
}
