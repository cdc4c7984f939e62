//! Slack's configuration, built once from the settings' variables (flags
//! may override) into a plain struct: off when no Slack variable is set,
//! refused when half set. Slack reaches the bot one of two ways, or both:
//! over Socket Mode (`SLACK_APP_TOKEN`, an `xapp-` token: the bot dials
//! out, no public URL, no signing secret) or at request URLs
//! (`SLACK_SIGNING_SECRET` verifies what Slack posts). Secrets are
//! [`SecretString`]s, so they never reach a log line or a `{:?}`, and
//! reading one takes an explicit `expose_secret()`.

use std::path::PathBuf;

use secrecy::{ExposeSecret, SecretString};

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Config {
    /// `SLACK_BOT_TOKEN` (`xoxb-…`), sent on every Web API call.
    pub bot_token: SecretString,
    /// `SLACK_SIGNING_SECRET`, the HMAC key for Slack's request signatures:
    /// the `/slack/*` routes are mounted when it is set.
    pub signing_secret: Option<SecretString>,
    /// `SLACK_APP_TOKEN` (`xapp-…`, scope `connections:write`): Socket Mode.
    pub app_token: Option<SecretString>,
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

/// Any of these turns Slack on.
const SLACK_VARS: [&str; 3] = ["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"];

/// How an app-level token starts (Slack: *Basic Information → App-Level Tokens*).
const APP_TOKEN_PREFIX: &str = "xapp-";

impl Config {
    /// Reads the environment through `get` (tests pass a map): `None` when
    /// Slack is not configured at all; an error naming what is missing when
    /// it is half configured.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        o: Overrides,
    ) -> Result<Option<Config>> {
        let set = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        if SLACK_VARS.iter().all(|n| set(n).is_none()) {
            return Ok(None);
        }
        let secret = |name: &str| set(name).map(|v| SecretString::from(v.trim().to_string()));
        let (bot_token, app_token, signing_secret) = (
            secret("SLACK_BOT_TOKEN"),
            secret("SLACK_APP_TOKEN"),
            secret("SLACK_SIGNING_SECRET"),
        );
        let Some(bot_token) = bot_token else {
            let given: Vec<&str> = SLACK_VARS[1..]
                .iter()
                .copied()
                .filter(|n| set(n).is_some())
                .collect();
            return Err(Error::Usage(format!(
                "SLACK_BOT_TOKEN is not set: Slack needs the bot token (`xoxb-…`, under OAuth & Permissions) besides {} (see docs/src/slack.md); unset {} to serve the API alone",
                given.join(" and "),
                given.join(" and ")
            )));
        };
        if app_token.is_none() && signing_secret.is_none() {
            return Err(Error::Usage(
                "SLACK_BOT_TOKEN is set, but neither SLACK_APP_TOKEN nor SLACK_SIGNING_SECRET is: set one of them — \
                 SLACK_APP_TOKEN (`xapp-…`) for Socket Mode, no public URL needed (manifests/slack-app-socket.yaml), \
                 or SLACK_SIGNING_SECRET for request URLs (manifests/slack-app.yaml); see docs/src/slack.md. \
                 Unset SLACK_BOT_TOKEN to serve the API alone"
                    .into(),
            ));
        }
        if let Some(t) = &app_token {
            if !t.expose_secret().starts_with(APP_TOKEN_PREFIX) {
                // Say what it looks like, never what it is.
                return Err(Error::Usage(format!(
                    "SLACK_APP_TOKEN is not an app-level token: it must start with `{APP_TOKEN_PREFIX}` \
                     (Basic Information → App-Level Tokens, scope connections:write){}",
                    if t.expose_secret().starts_with("xoxb-") {
                        "; this looks like the bot token, which goes in SLACK_BOT_TOKEN"
                    } else {
                        ""
                    }
                )));
            }
        }
        let api_url = set("SLACK_API_URL")
            .unwrap_or_else(|| DEFAULT_API_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        Ok(Some(Config {
            bot_token,
            signing_secret,
            app_token,
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
        let e = cfg(&[("SLACK_BOT_TOKEN", "xoxb-1")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("neither SLACK_APP_TOKEN nor SLACK_SIGNING_SECRET")
                && e.contains("set one of them")
                && e.contains("see docs/src/slack.md"),
            "{e}"
        );
        let e = cfg(&[("SLACK_SIGNING_SECRET", "s")]).unwrap_err();
        assert!(
            e.to_string().starts_with("SLACK_BOT_TOKEN is not set"),
            "{e}"
        );
        let e = cfg(&[("SLACK_APP_TOKEN", "xapp-1")]).unwrap_err();
        assert!(
            e.to_string().starts_with("SLACK_BOT_TOKEN is not set")
                && e.to_string().contains("unset SLACK_APP_TOKEN")
                && e.to_string().contains("(see docs/src/slack.md)"),
            "{e}"
        );
        let c = cfg(&[
            ("SLACK_BOT_TOKEN", "xoxb-very-secret"),
            ("SLACK_SIGNING_SECRET", "sign-secret"),
            ("SLACK_APP_TOKEN", "xapp-app-secret"),
        ])
        .unwrap()
        .expect("slack on");
        let shown = format!("{c:?}");
        for secret in ["xoxb-very-secret", "sign-secret", "xapp-app-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("REDACTED"), "{shown}");
        assert_eq!(c.bot_token.expose_secret(), "xoxb-very-secret");
        assert_eq!(
            c.signing_secret.as_ref().map(|s| s.expose_secret()),
            Some("sign-secret")
        );
        assert_eq!(
            c.app_token.as_ref().map(|s| s.expose_secret()),
            Some("xapp-app-secret")
        );
        assert_eq!(c.api_url, DEFAULT_API_URL);
    }

    #[test]
    fn an_app_token_alone_is_enough_and_must_be_an_app_token() {
        let c = cfg(&[
            ("SLACK_BOT_TOKEN", "xoxb-1"),
            ("SLACK_APP_TOKEN", "xapp-1-A"),
        ])
        .unwrap()
        .expect("socket mode on");
        assert!(c.signing_secret.is_none() && c.app_token.is_some());
        let e = cfg(&[
            ("SLACK_BOT_TOKEN", "xoxb-1"),
            ("SLACK_APP_TOKEN", "xoxb-pasted-twice"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("must start with `xapp-`") && e.contains("SLACK_BOT_TOKEN"),
            "{e}"
        );
        assert!(!e.contains("pasted-twice"), "{e}");
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
