//! The settings tree, built once when the process starts and handed down.
//!
//! Every variable strands reads is described in one table, [`vars::VARS`]
//! (name, type, default, meaning, secret or not, section); [`env::Env`]
//! reads those variables once — from the command line's flags, the
//! environment, and an optional `strands.toml` — remembering where each
//! value came from; each section is built from that lookup:
//!
//! - [`Settings`] (every command): the engine's (approvers, timeouts,
//!   retries, limits, the service file), the tools' (network allow-list,
//!   search endpoints), the providers' keys, the store's
//!   ([`sections::StoreSettings`]), the lease and the re-post pace;
//! - `serve::Config` (the approval service): where it listens, the web
//!   inbox, the API's limits, and the rooms' own sections (Slack, Teams,
//!   webhooks, e-mail), built on these.
//!
//! Nothing below `cli` and `serve` reads the environment: the spec
//! validator gets its limits, the engine its timeouts and admins, the
//! tools their allow-list, the store its pool, the hub its lease (a test,
//! `nothing_below_cli_reads_the_environment`, names any file that does).
//! `strands config` prints the tree's variables with their effective
//! values and sources, secrets masked; the README's settings tables are
//! [`vars::markdown`]'s.

use std::time::Duration;

pub mod env;
pub mod sections;
pub mod service;
pub mod vars;

pub use sections::{Pace, PgSettings, StoreSettings};

use crate::retry::RetryPolicy;
use crate::spec::network::Rule;
use crate::spec::Limits;
use secrecy::SecretString;

/// What every part of a run may be configured with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Identities that may answer any gate.
    pub admins: Vec<String>,
    /// Who may answer gates whose spec names nobody (the bot; empty: anyone).
    pub default_approvers: Vec<crate::model::Approver>,
    /// The time limit of one model call.
    pub llm_timeout: Duration,
    /// How model and Slack calls are retried.
    pub retry: RetryPolicy,
    /// What specs may ask for (timeouts).
    pub limits: Limits,
    /// Hosts and networks HTTP tools may reach although internal.
    pub network_allow: Vec<Rule>,
    /// The timeout of gates whose spec sets none (the bot's).
    pub default_timeout: Option<chrono::TimeDelta>,
    /// The last reminder before a timeout, for gates whose spec sets no
    /// `remind_before`.
    pub remind_before: Option<chrono::TimeDelta>,
    /// The web search tools' endpoints and keys.
    pub search: SearchSettings,
    /// The installation's calendars and named policies ([`service`]).
    pub service: service::ServiceFile,
    /// Model providers' keys and endpoints (strands-cli's variables).
    pub providers: crate::provider::Credentials,
    /// Where sessions are kept: sled's cache, PostgreSQL's pool.
    pub store: StoreSettings,
    /// How long a lease on driving a run lasts unrenewed (shared stores).
    pub lease: Duration,
    /// How many runs `serve` drives at once (`STRANDS_DRIVES`).
    pub drives: usize,
    /// How fast start-up asks again where a room never asked.
    pub repost: Pace,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            admins: Vec::new(),
            default_approvers: Vec::new(),
            llm_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            limits: Limits::default(),
            network_allow: Vec::new(),
            default_timeout: None,
            remind_before: None,
            search: Default::default(),
            service: Default::default(),
            providers: Default::default(),
            store: StoreSettings::default(),
            lease: Duration::from_secs(30),
            drives: 16,
            repost: Pace::default(),
        }
    }
}

impl Settings {
    /// The settings from `get` ([`env::Env::get`], or a map in tests). A
    /// value that does not parse keeps its default, with a warning; the
    /// sections whose bad values are errors (the service file, the store)
    /// are [`Settings::load`]'s.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Settings {
        let limits = Limits::with_max_timeout_days(get("STRANDS_MAX_TIMEOUT_DAYS").as_deref());
        let llm_timeout = get("STRANDS_LLM_TIMEOUT_SECS")
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_secs)
            .unwrap_or(Duration::from_secs(120));
        let network_allow = list(get("STRANDS_NETWORK_ALLOW"))
            .into_iter()
            .filter_map(|e| match Rule::parse(&e) {
                Ok(r) => Some(r),
                Err(why) => {
                    tracing::warn!("STRANDS_NETWORK_ALLOW: ignoring {why}");
                    None
                }
            })
            .collect();
        Settings {
            admins: list(get("STRANDS_ADMINS")),
            default_approvers: list(get("STRANDS_APPROVERS"))
                .iter()
                .map(|a| crate::model::Approver::parse(a))
                .collect(),
            llm_timeout,
            retry: RetryPolicy::from_lookup(&get),
            default_timeout: default_timeout(get("STRANDS_DEFAULT_TIMEOUT_MINUTES"), &limits),
            remind_before: default_timeout(get("STRANDS_REMIND_BEFORE_MINUTES"), &limits),
            limits,
            network_allow,
            search: SearchSettings::from_lookup(&get),
            service: Default::default(),
            providers: crate::provider::Credentials::from_lookup(
                vars::VARS
                    .iter()
                    .filter(|v| v.section == vars::Section::Providers)
                    .map(|v| v.name),
                &get,
            ),
            store: StoreSettings::default(),
            lease: sections::lease_from_lookup(&get),
            drives: sections::drives_from_lookup(&get),
            repost: Pace::from_lookup(&get),
        }
    }

    /// The limits for checking a spec without running it (`validate`,
    /// `plan`, `explain`): where this process has no calendars, a gate's
    /// calendar cannot be checked, so it is only a warning
    /// ([`Limits::calendars`]); `run` and `serve` check it.
    pub fn checking_limits(&self) -> Limits {
        let mut limits = self.limits.clone();
        if self.service.calendars.is_empty() {
            limits.calendars = None;
        }
        limits
    }

    /// [`Settings::from_lookup`] with the service file ([`service`]) and
    /// the store's settings, whose errors stop start-up.
    pub fn load(get: impl Fn(&str) -> Option<String>) -> crate::error::Result<Settings> {
        let service = service::ServiceFile::from_lookup(&get)?;
        let store = StoreSettings::from_lookup(&get)?;
        let mut settings = Settings::from_lookup(get);
        settings.store = store;
        settings.limits.calendars = Some(service.calendar_names());
        settings.service = service;
        Ok(settings)
    }
}

/// Where the search tools send their requests, and Tavily's key: read once
/// from the environment.
#[derive(Debug, Clone)]
pub struct SearchSettings {
    /// `STRANDS_DUCKDUCKGO_URL`, default `https://html.duckduckgo.com`.
    pub duckduckgo_url: String,
    /// `STRANDS_TAVILY_URL`, default `https://api.tavily.com`.
    pub tavily_url: String,
    /// `TAVILY_API_KEY`; never logged or shown.
    pub tavily_key: Option<SecretString>,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            duckduckgo_url: "https://html.duckduckgo.com".into(),
            tavily_url: "https://api.tavily.com".into(),
            tavily_key: None,
        }
    }
}

impl SearchSettings {
    /// The settings from `get` (the environment, or a map in tests).
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> SearchSettings {
        let d = SearchSettings::default();
        let url = |k: &str, default: String| {
            get(k)
                .map(|v| v.trim().trim_end_matches('/').to_string())
                .filter(|v| !v.is_empty())
                .unwrap_or(default)
        };
        SearchSettings {
            duckduckgo_url: url("STRANDS_DUCKDUCKGO_URL", d.duckduckgo_url),
            tavily_url: url("STRANDS_TAVILY_URL", d.tavily_url),
            tavily_key: get("TAVILY_API_KEY")
                .map(|k| k.trim().to_string())
                .filter(|k| !k.is_empty())
                .map(SecretString::from),
        }
    }
}

/// A comma-separated list.
pub fn list(v: Option<String>) -> Vec<String> {
    v.unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `STRANDS_DEFAULT_TIMEOUT_MINUTES` (fractions allowed; at most the
/// longest timeout allowed).
fn default_timeout(raw: Option<String>, limits: &Limits) -> Option<chrono::TimeDelta> {
    let minutes: f64 = raw?.trim().parse().ok()?;
    if !minutes.is_finite() || minutes <= 0.0 {
        return None;
    }
    let ms = (minutes * 60.0).min(limits.max_timeout_secs as f64) * 1000.0;
    chrono::TimeDelta::try_milliseconds(ms as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn settings_come_from_the_lookup_once() {
        let env: HashMap<&str, &str> = [
            ("STRANDS_ADMINS", " ops , root,"),
            ("STRANDS_LLM_TIMEOUT_SECS", "7"),
            ("STRANDS_MAX_TIMEOUT_DAYS", "2"),
            (
                "STRANDS_NETWORK_ALLOW",
                "10.0.0.0/8, http://nope, wiki.corp",
            ),
            ("STRANDS_DEFAULT_TIMEOUT_MINUTES", "99999"),
        ]
        .into_iter()
        .collect();
        let s = Settings::from_lookup(|k| env.get(k).map(|v| v.to_string()));
        assert_eq!(s.admins, vec!["ops", "root"]);
        assert_eq!(s.llm_timeout, Duration::from_secs(7));
        assert_eq!(s.limits.max_timeout_secs, 2 * 86_400);
        assert_eq!(s.network_allow.len(), 2, "the bad entry is skipped");
        assert_eq!(
            s.default_timeout.map(|d| d.num_seconds()),
            Some(2 * 86_400),
            "capped at the longest timeout allowed"
        );
        let none = Settings::from_lookup(|_| None);
        assert!(none.admins.is_empty() && none.network_allow.is_empty());
        assert_eq!(none.limits, Limits::default());
        assert_eq!(none.default_timeout, None);
    }

    #[test]
    fn the_validator_knows_the_services_calendars_when_it_has_any() {
        let yaml = "calendars:\n  eu: {zone: Europe/Paris, hours: {mon-fri: \"09:00-17:00\"}}\n";
        let s = Settings::load(|k| (k == "STRANDS_CALENDARS").then(|| yaml.to_string()))
            .expect("loads");
        let names = s.limits.calendars.clone().expect("known");
        assert_eq!(&*names, ["eu".to_string()]);
        assert_eq!(s.checking_limits().calendars, Some(names));
        // None: `run` refuses a gate's calendar; `validate` only warns.
        let none = Settings::load(|_| None).expect("loads");
        assert_eq!(none.limits.calendars.as_deref(), Some(&[][..]));
        assert_eq!(none.checking_limits().calendars, None);
    }

    #[test]
    fn search_settings_come_from_the_environment() {
        use secrecy::ExposeSecret;
        let s = SearchSettings::from_lookup(&|k: &str| match k {
            "STRANDS_TAVILY_URL" => Some("http://127.0.0.1:9/".into()),
            "TAVILY_API_KEY" => Some(" tvly-secret ".into()),
            _ => None,
        });
        assert_eq!(s.tavily_url, "http://127.0.0.1:9");
        assert_eq!(s.duckduckgo_url, "https://html.duckduckgo.com");
        assert_eq!(
            s.tavily_key.as_ref().map(|k| k.expose_secret()),
            Some("tvly-secret")
        );
        assert!(
            !format!("{s:?}").contains("tvly-secret"),
            "the key is never printed"
        );
    }
}
