//! The Teams room's settings, read once from the environment (or a map in
//! tests) into one plain struct that the verifier and the connector are
//! built from.
//!
//! | variable | setting |
//! |---|---|
//! | `TEAMS_APP_ID`, `TEAMS_APP_PASSWORD` | the bot's Entra app; both set turns the room on |
//! | `TEAMS_TENANT_ID` | the bot's tenant: token URL, tenant issuers, allowed `channelData.tenant.id` |
//! | `TEAMS_OPENID_METADATA_URL` | where inbound signing keys are found |
//! | `TEAMS_TOKEN_URL` | the client-credentials token endpoint |
//! | `TEAMS_ACCEPT_TENANT_ISSUER=1` | also accept Entra tokens issued by the bot's tenant |
//! | `TEAMS_SERVICE_URL_HOSTS` | hosts a `serviceUrl` may name (comma-separated) |
//! | `TEAMS_ALLOW_HTTP_LOOPBACK=1` | also plain-HTTP loopback service URLs (tests only) |
//! | `TEAMS_MAX_ATTEMPTS` | connector attempts per call, retries included (4) |
//! | `TEAMS_RETRY_BASE_MS` | the first retry's backoff before jitter (500) |
//! | `TEAMS_LOCAL_PLAYGROUND=1` | the room, unauthenticated, for Microsoft's Agents Playground on this machine |
//!
//! The local Playground mode (issue 31) turns the room on *without* an app:
//! Microsoft 365 Agents Playground, started without a client id, sends
//! activities with no token and wants none on its connector. So it is
//! refused with `TEAMS_APP_ID`/`TEAMS_APP_PASSWORD` set (a real bot must
//! never run unauthenticated), `strands serve` refuses it on a non-loopback
//! bind, and the door accepts only loopback peers naming a loopback
//! `http://` service URL ([`crate::teams::door`]).
//!
//! What this does not do: read the process environment itself (the caller
//! hands in a lookup), or check that the URLs answer.

use std::time::Duration;

use secrecy::SecretString;

/// Where inbound keys are published by default.
pub const DEFAULT_OPENID_METADATA_URL: &str =
    "https://login.botframework.com/v1/.well-known/openidconfiguration";
/// The service host Teams names by default.
pub const DEFAULT_SERVICE_URL_HOST: &str = "smba.trafficmanager.net";
/// The token tenant of a multi-tenant bot.
pub const MULTI_TENANT: &str = "botframework.com";
/// Connector attempts per call by default, the first one included.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 4;
/// The first retry's backoff by default.
pub const DEFAULT_RETRY_BASE: Duration = Duration::from_millis(500);

/// What the Teams room is configured with. `Debug` never shows the
/// password (`SecretString` prints as redacted).
#[derive(Debug, Clone)]
pub struct TeamsSettings {
    /// The bot's Entra app ID: the `aud` of inbound tokens, the
    /// `client_id` of outbound ones.
    pub app_id: String,
    /// The app's client secret.
    pub app_password: SecretString,
    /// The bot's tenant, if single-tenant.
    pub tenant_id: Option<String>,
    pub openid_metadata_url: String,
    pub token_url: String,
    /// Accept tokens issued by the bot's own tenant (needs `tenant_id`).
    pub accept_tenant_issuer: bool,
    /// Hosts (lowercase) an HTTPS `serviceUrl` may name.
    pub service_url_hosts: Vec<String>,
    /// Also allow `http://` on 127.0.0.1, localhost and [::1] (tests).
    pub allow_http_loopback: bool,
    /// Connector attempts per call, the first included (at least 1).
    pub max_attempts: u32,
    /// The first retry's backoff, doubled after each retry, plus jitter.
    pub retry_base: Duration,
    /// `TEAMS_LOCAL_PLAYGROUND=1`: no app, no tokens either way; loopback
    /// only (see the module doc).
    pub local_playground: bool,
    /// `TEAMS_APPROVALS_CONVERSATION`: the conversation (a `conversation.id`
    /// the bot has seen) where runs started elsewhere — the CLI, the API,
    /// Slack, the browser — get their approval cards.
    pub approvals_conversation: Option<String>,
}

/// The app id the room goes by in the local Playground mode (no Entra app).
pub const LOCAL_PLAYGROUND_APP: &str = "local-playground";

/// A setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// Half of the app's credentials.
    #[error("the Teams room needs both {set} and {missing}; {missing} is not set")]
    Missing {
        set: &'static str,
        missing: &'static str,
    },
    /// A value that does not parse.
    #[error("{name}={value:?}: {why}")]
    Invalid {
        name: &'static str,
        value: String,
        why: &'static str,
    },
}

impl TeamsSettings {
    /// `TEAMS_APP_ID` alone, for what needs the app's ID but not the
    /// room's credentials (`strands teams package`). Blank counts as unset.
    pub fn app_id_from_lookup(get: impl Fn(&str) -> Option<String>) -> Option<String> {
        get("TEAMS_APP_ID")
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// The settings from `get` (the environment, or a map in tests):
    /// `Ok(None)` when the room is off (neither app ID nor password set),
    /// an error when only one of them is set or a value does not parse.
    /// Blank values count as unset.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TeamsSettings>, SettingsError> {
        let get = |k: &str| {
            get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let local_playground = flag(get("TEAMS_LOCAL_PLAYGROUND"));
        let (app_id, app_password) = match (get("TEAMS_APP_ID"), get("TEAMS_APP_PASSWORD")) {
            (Some(_), _) | (_, Some(_)) if local_playground => {
                return Err(SettingsError::Invalid {
                    name: "TEAMS_LOCAL_PLAYGROUND",
                    value: "1".into(),
                    why: "the local Playground mode is unauthenticated, so it cannot run with TEAMS_APP_ID or TEAMS_APP_PASSWORD set: unset them, or the mode",
                })
            }
            (None, None) if local_playground => (
                LOCAL_PLAYGROUND_APP.to_string(),
                SecretString::from(String::new()),
            ),
            (None, None) => return Ok(None),
            (Some(_), None) => {
                return Err(SettingsError::Missing {
                    set: "TEAMS_APP_ID",
                    missing: "TEAMS_APP_PASSWORD",
                })
            }
            (None, Some(_)) => {
                return Err(SettingsError::Missing {
                    set: "TEAMS_APP_PASSWORD",
                    missing: "TEAMS_APP_ID",
                })
            }
            (Some(id), Some(password)) => (id, SecretString::from(password)),
        };
        let tenant_id = get("TEAMS_TENANT_ID");
        let token_url = get("TEAMS_TOKEN_URL").unwrap_or_else(|| {
            format!(
                "https://login.microsoftonline.com/{}/oauth2/v2.0/token",
                tenant_id.as_deref().unwrap_or(MULTI_TENANT)
            )
        });
        let openid_metadata_url = get("TEAMS_OPENID_METADATA_URL")
            .unwrap_or_else(|| DEFAULT_OPENID_METADATA_URL.to_string());
        for (name, value) in [
            ("TEAMS_TOKEN_URL", &token_url),
            ("TEAMS_OPENID_METADATA_URL", &openid_metadata_url),
        ] {
            if url::Url::parse(value).is_err() {
                return Err(SettingsError::Invalid {
                    name,
                    value: value.clone(),
                    why: "not a URL",
                });
            }
        }
        let accept_tenant_issuer = flag(get("TEAMS_ACCEPT_TENANT_ISSUER"));
        if accept_tenant_issuer && tenant_id.is_none() {
            return Err(SettingsError::Invalid {
                name: "TEAMS_ACCEPT_TENANT_ISSUER",
                value: "1".into(),
                why: "the tenant issuer needs TEAMS_TENANT_ID",
            });
        }
        let service_url_hosts = match get("TEAMS_SERVICE_URL_HOSTS") {
            Some(list) => list
                .split(',')
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
            None => vec![DEFAULT_SERVICE_URL_HOST.to_string()],
        };
        let max_attempts = match get("TEAMS_MAX_ATTEMPTS") {
            None => DEFAULT_MAX_ATTEMPTS,
            Some(raw) => match raw.parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(SettingsError::Invalid {
                        name: "TEAMS_MAX_ATTEMPTS",
                        value: raw,
                        why: "not a whole number of at least 1",
                    })
                }
            },
        };
        let retry_base = match get("TEAMS_RETRY_BASE_MS") {
            None => DEFAULT_RETRY_BASE,
            Some(raw) => match raw.parse::<u64>() {
                Ok(ms) => Duration::from_millis(ms),
                Err(_) => {
                    return Err(SettingsError::Invalid {
                        name: "TEAMS_RETRY_BASE_MS",
                        value: raw,
                        why: "not a whole number of milliseconds",
                    })
                }
            },
        };
        Ok(Some(TeamsSettings {
            app_id,
            app_password,
            tenant_id,
            openid_metadata_url,
            token_url,
            accept_tenant_issuer,
            service_url_hosts,
            allow_http_loopback: local_playground || flag(get("TEAMS_ALLOW_HTTP_LOOPBACK")),
            max_attempts,
            retry_base,
            local_playground,
            approvals_conversation: get("TEAMS_APPROVALS_CONVERSATION").map(|c| {
                match crate::model::Place::parse(&c) {
                    crate::model::Place::Teams(conversation) => conversation,
                    _ => c,
                }
            }),
        }))
    }
}

/// `1` (or `true`, `yes`) turns a switch on; anything else leaves it off.
fn flag(v: Option<String>) -> bool {
    matches!(
        v.as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("1" | "true" | "yes")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> Result<Option<TeamsSettings>, SettingsError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TeamsSettings::from_lookup(|k| env.get(k).cloned())
    }

    #[test]
    fn the_local_playground_mode_needs_no_app_and_refuses_one() {
        let s = parse(&[("TEAMS_LOCAL_PLAYGROUND", "1")])
            .expect("parses")
            .expect("the room is on");
        assert!(s.local_playground);
        assert!(s.allow_http_loopback);
        assert_eq!(s.app_id, LOCAL_PLAYGROUND_APP);
        for creds in [
            vec![("TEAMS_LOCAL_PLAYGROUND", "1"), ("TEAMS_APP_ID", "a")],
            vec![("TEAMS_LOCAL_PLAYGROUND", "1"), ("TEAMS_APP_PASSWORD", "p")],
            vec![
                ("TEAMS_LOCAL_PLAYGROUND", "1"),
                ("TEAMS_APP_ID", "a"),
                ("TEAMS_APP_PASSWORD", "p"),
            ],
        ] {
            let e = parse(&creds).expect_err("refused").to_string();
            assert!(e.contains("TEAMS_LOCAL_PLAYGROUND"), "{e}");
            assert!(e.contains("unauthenticated"), "{e}");
        }
        let real = parse(&[("TEAMS_APP_ID", "a"), ("TEAMS_APP_PASSWORD", "p")])
            .expect("parses")
            .expect("on");
        assert!(!real.local_playground);
    }

    #[test]
    fn teams_is_off_without_credentials() {
        assert!(parse(&[]).expect("parses").is_none());
        assert!(parse(&[("TEAMS_APP_ID", " "), ("TEAMS_APP_PASSWORD", "")])
            .expect("blank is unset")
            .is_none());
    }

    #[test]
    fn teams_half_credentials_name_what_is_missing() {
        let err = parse(&[("TEAMS_APP_ID", "app")]).expect_err("half");
        assert_eq!(
            err,
            SettingsError::Missing {
                set: "TEAMS_APP_ID",
                missing: "TEAMS_APP_PASSWORD"
            }
        );
        assert!(err.to_string().contains("TEAMS_APP_PASSWORD is not set"));
        let err = parse(&[("TEAMS_APP_PASSWORD", "pw")]).expect_err("half");
        assert!(err.to_string().contains("TEAMS_APP_ID is not set"), "{err}");
    }

    #[test]
    fn teams_defaults_are_production() {
        let s = parse(&[("TEAMS_APP_ID", "app"), ("TEAMS_APP_PASSWORD", "pw")])
            .expect("parses")
            .expect("on");
        assert_eq!(s.app_id, "app");
        assert_eq!(s.app_password.expose_secret(), "pw");
        assert_eq!(s.tenant_id, None);
        assert_eq!(s.openid_metadata_url, DEFAULT_OPENID_METADATA_URL);
        assert_eq!(
            s.token_url,
            "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token"
        );
        assert!(!s.accept_tenant_issuer);
        assert_eq!(s.service_url_hosts, ["smba.trafficmanager.net"]);
        assert!(!s.allow_http_loopback);
        assert_eq!(s.max_attempts, DEFAULT_MAX_ATTEMPTS);
        assert_eq!(s.retry_base, DEFAULT_RETRY_BASE);
    }

    #[test]
    fn teams_everything_can_be_set() {
        let s = parse(&[
            ("TEAMS_APP_ID", "app"),
            ("TEAMS_APP_PASSWORD", "pw"),
            ("TEAMS_TENANT_ID", "tid-1"),
            ("TEAMS_OPENID_METADATA_URL", "http://127.0.0.1:9/meta"),
            ("TEAMS_ACCEPT_TENANT_ISSUER", "1"),
            ("TEAMS_SERVICE_URL_HOSTS", "A.example, b.example,,"),
            ("TEAMS_ALLOW_HTTP_LOOPBACK", "1"),
            ("TEAMS_MAX_ATTEMPTS", "2"),
            ("TEAMS_RETRY_BASE_MS", "10"),
            ("TEAMS_APPROVALS_CONVERSATION", " 19:ops@thread.tacv2 "),
        ])
        .expect("parses")
        .expect("on");
        assert_eq!(s.tenant_id.as_deref(), Some("tid-1"));
        assert_eq!(
            s.token_url, "https://login.microsoftonline.com/tid-1/oauth2/v2.0/token",
            "the tenant goes into the default token URL"
        );
        assert_eq!(s.openid_metadata_url, "http://127.0.0.1:9/meta");
        assert!(s.accept_tenant_issuer);
        assert_eq!(s.service_url_hosts, ["a.example", "b.example"]);
        assert!(s.allow_http_loopback);
        assert_eq!(s.max_attempts, 2);
        assert_eq!(s.retry_base, Duration::from_millis(10));
        assert_eq!(
            s.approvals_conversation.as_deref(),
            Some("19:ops@thread.tacv2")
        );

        let s = parse(&[
            ("TEAMS_APP_ID", "app"),
            ("TEAMS_APP_PASSWORD", "pw"),
            ("TEAMS_TOKEN_URL", "http://127.0.0.1:9/t/oauth2/v2.0/token"),
        ])
        .expect("parses")
        .expect("on");
        assert_eq!(s.token_url, "http://127.0.0.1:9/t/oauth2/v2.0/token");
    }

    #[test]
    fn teams_bad_values_are_errors() {
        let base = [("TEAMS_APP_ID", "app"), ("TEAMS_APP_PASSWORD", "pw")];
        let with = |extra: (&'static str, &'static str)| {
            let mut pairs = base.to_vec();
            pairs.push(extra);
            parse(&pairs).expect_err("invalid")
        };
        for (pair, name) in [
            (("TEAMS_MAX_ATTEMPTS", "0"), "TEAMS_MAX_ATTEMPTS"),
            (("TEAMS_MAX_ATTEMPTS", "many"), "TEAMS_MAX_ATTEMPTS"),
            (("TEAMS_RETRY_BASE_MS", "-1"), "TEAMS_RETRY_BASE_MS"),
            (("TEAMS_TOKEN_URL", "not a url"), "TEAMS_TOKEN_URL"),
            (
                ("TEAMS_ACCEPT_TENANT_ISSUER", "1"),
                "TEAMS_ACCEPT_TENANT_ISSUER",
            ),
        ] {
            let err = with(pair);
            assert!(err.to_string().starts_with(name), "{err}");
        }
    }

    #[test]
    fn teams_password_is_never_debug_printed() {
        let s = parse(&[
            ("TEAMS_APP_ID", "app"),
            ("TEAMS_APP_PASSWORD", "hunter2-secret"),
        ])
        .expect("parses")
        .expect("on");
        let shown = format!("{s:?}");
        assert!(!shown.contains("hunter2-secret"), "{shown}");
        assert!(shown.contains("app"));
    }
}
