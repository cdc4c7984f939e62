//! The service file: what an installation decides once for every spec —
//! business-hours calendars (`calendars:`) and named approval policies
//! (`policies:`, for approval requests that name one). Read at start-up
//! from `STRANDS_SERVICE_FILE` (YAML); `STRANDS_CALENDARS` may hold the
//! calendars instead (a path to a YAML file, or the YAML itself) and then
//! replaces the file's. A file that does not parse stops the process with
//! an error naming the file, line and column: a policy that silently failed
//! to load would let gates through with fewer approvers than meant.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};
use crate::model::calendar::{Calendar, CalendarSpec};

/// The installation's calendars and policies (empty without a file).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceFile {
    /// Business-hours calendars by name (`crate::model::calendar` shows
    /// their shape); one that is wrong stops start-up, naming it and the key.
    #[serde(default, deserialize_with = "calendars")]
    pub calendars: BTreeMap<String, Calendar>,
    /// Named approval policies (rule lists) by name; checked at start-up.
    #[serde(default)]
    pub policies: BTreeMap<String, Policy>,
    /// Which tool calls of agent hosts (Claude Code's hook and permission
    /// prompt tool) ask a person, and who (`crate::hub::hosts`).
    #[serde(default)]
    pub agent_hosts: AgentHosts,
}

/// `agent_hosts:` of the service file: a host's tool call passes when one
/// of `pass` holds for it (conditions on `tool.name`, `tool.args` and
/// `details`: `host`, `session`, `cwd`), else it asks through the named
/// approval `policy`, waiting at most `timeout_minutes` (then it is denied).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentHosts {
    /// The policy of `policies:` that decides who answers a call.
    #[serde(default = "default_host_policy")]
    pub policy: String,
    /// Conditions under which a call passes without asking.
    #[serde(default = "default_pass")]
    pub pass: Vec<String>,
    /// Minutes a call waits for a person before it is denied.
    #[serde(default = "default_host_timeout")]
    pub timeout_minutes: u64,
    /// Whether an approver may edit the call's input before allowing it.
    #[serde(default = "yes")]
    pub editable: bool,
}

/// The policy an agent host's calls use when the file names none.
pub const DEFAULT_HOST_POLICY: &str = "agent-hosts";

fn default_host_policy() -> String {
    DEFAULT_HOST_POLICY.into()
}

/// Claude Code's tools that only read: they pass unless the file says otherwise.
fn default_pass() -> Vec<String> {
    vec![
        "{{ tool.name in ['Read', 'Glob', 'Grep', 'LS', 'NotebookRead', 'TodoWrite', 'WebSearch'] }}"
            .into(),
    ]
}

fn default_host_timeout() -> u64 {
    10
}

fn yes() -> bool {
    true
}

impl Default for AgentHosts {
    fn default() -> Self {
        AgentHosts {
            policy: default_host_policy(),
            pass: default_pass(),
            timeout_minutes: default_host_timeout(),
            editable: true,
        }
    }
}

impl AgentHosts {
    /// What is wrong with the section, if anything: a condition that does
    /// not parse, a timeout out of bounds, a policy that is named but absent.
    pub fn check(
        &self,
        policies: &BTreeMap<String, Policy>,
        max_secs: u64,
    ) -> std::result::Result<(), String> {
        let t = crate::template::Templates::shared();
        for (i, c) in self.pass.iter().enumerate() {
            t.check_condition(c)
                .map_err(|e| format!("agent_hosts: pass {}: {}", i + 1, e.message))?;
        }
        if self.timeout_minutes == 0 || self.timeout_minutes.saturating_mul(60) > max_secs {
            return Err(format!(
                "agent_hosts: timeout_minutes is 1 to {} minutes, not {}",
                max_secs / 60,
                self.timeout_minutes
            ));
        }
        if self.policy != DEFAULT_HOST_POLICY && !policies.contains_key(&self.policy) {
            return Err(format!(
                "agent_hosts: policy `{}` is not among `policies:`",
                self.policy
            ));
        }
        Ok(())
    }
}

/// A named approval policy: a list of approval rules
/// (`crate::spec::rules`) that an approval request takes by name
/// (`policy: payments`). Kept as written — a request's one-gate spec
/// carries the rules and the spec validator reads them like any gate's —
/// and read once at start-up ([`Policy::check`]) so a bad rule stops the
/// process instead of letting a request through with fewer approvers.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Policy {
    pub rules: Vec<serde_json::Value>,
}

impl Policy {
    /// The rules, read: the error names every problem by rule number.
    /// `max_secs` bounds their timeouts (`Limits::max_timeout_secs`).
    pub fn check(
        &self,
        max_secs: u64,
    ) -> std::result::Result<Vec<crate::spec::rules::ApprovalRule>, String> {
        crate::spec::rules::list(&self.rules, crate::template::Templates::shared(), max_secs)
    }
}

/// Only the calendars (what `STRANDS_CALENDARS` holds).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CalendarsOnly {
    #[serde(deserialize_with = "calendars")]
    calendars: BTreeMap<String, Calendar>,
}

/// The calendars, each checked: the error names the calendar and its key.
fn calendars<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, Calendar>, D::Error> {
    BTreeMap::<String, CalendarSpec>::deserialize(d)?
        .into_iter()
        .map(|(name, spec)| match Calendar::try_from(spec) {
            Ok(c) => Ok((name, c)),
            Err(why) => Err(serde::de::Error::custom(format!(
                "calendar `{name}`: {why}"
            ))),
        })
        .collect()
}

impl ServiceFile {
    /// The calendars' names, for the spec validator (`Limits::calendars`).
    pub fn calendar_names(&self) -> std::sync::Arc<[String]> {
        self.calendars.keys().cloned().collect()
    }
}

impl ServiceFile {
    /// The service file named by `STRANDS_SERVICE_FILE` and the calendars
    /// of `STRANDS_CALENDARS` (through `get`: the environment, or a map in
    /// tests); empty when neither is set.
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<ServiceFile> {
        let set = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let mut file = match set("STRANDS_SERVICE_FILE") {
            Some(path) => {
                let text = read(Path::new(path.trim()), "STRANDS_SERVICE_FILE")?;
                parse::<ServiceFile>(&text, path.trim())?
            }
            None => ServiceFile::default(),
        };
        if let Some(v) = set("STRANDS_CALENDARS") {
            let (text, origin) = if v.contains('\n') || v.trim_start().starts_with('{') {
                (v.clone(), "STRANDS_CALENDARS".to_string())
            } else {
                (
                    read(Path::new(v.trim()), "STRANDS_CALENDARS")?,
                    v.trim().to_string(),
                )
            };
            file.calendars = parse::<CalendarsOnly>(&text, &origin)?.calendars;
        }
        let max =
            crate::spec::Limits::with_max_timeout_days(get("STRANDS_MAX_TIMEOUT_DAYS").as_deref())
                .max_timeout_secs;
        for (name, policy) in &file.policies {
            if let Err(why) = policy.check(max) {
                let origin = set("STRANDS_SERVICE_FILE").unwrap_or_default();
                return Err(Error::Usage(format!(
                    "{}: policy `{name}`: {why}",
                    origin.trim()
                )));
            }
        }
        if let Err(why) = file.agent_hosts.check(&file.policies, max) {
            let origin = set("STRANDS_SERVICE_FILE").unwrap_or_default();
            return Err(Error::Usage(format!("{}: {why}", origin.trim())));
        }
        Ok(file)
    }
}

fn read(path: &Path, var: &str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::Usage(format!(
            "{var} names {}, which cannot be read: {e}",
            path.display()
        ))
    })
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    serde_saphyr::from_str(text).map_err(|e| Error::Usage(format!("{origin}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::ServiceFile;
    use std::collections::HashMap;

    fn load(env: &[(&str, String)]) -> crate::error::Result<ServiceFile> {
        let env: HashMap<&str, String> = env.iter().cloned().collect();
        ServiceFile::from_lookup(&|k| env.get(k).cloned())
    }

    #[test]
    fn the_file_and_the_calendars_variable_are_read_once() {
        let dir = std::env::temp_dir().join(format!("strands-service-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("service.yaml");
        std::fs::write(
            &path,
            "calendars:\n  eu: {zone: Europe/Paris, hours: {mon-fri: \"09:00-17:00\"}}\npolicies:\n  payments:\n    - when: \"{{ details.amount > 10000 }}\"\n      approvers: [cfo, group:finance]\n      quorum: 2\n    - approvers: [group:finance]\n",
        )
        .expect("write");
        let f = load(&[("STRANDS_SERVICE_FILE", path.display().to_string())]).expect("loads");
        assert!(f.calendars.contains_key("eu") && f.policies.contains_key("payments"));
        let f = load(&[
            ("STRANDS_SERVICE_FILE", path.display().to_string()),
            (
                "STRANDS_CALENDARS",
                "{calendars: {us: {zone: America/New_York, hours: {mon-fri: \"09:00-17:00\"}}}}"
                    .into(),
            ),
        ])
        .expect("loads");
        assert!(f.calendars.contains_key("us") && !f.calendars.contains_key("eu"));
        assert!(
            f.policies.contains_key("payments"),
            "the file's policies stay"
        );
        assert!(load(&[]).expect("empty").calendars.is_empty());
        let f = load(&[("STRANDS_SERVICE_FILE", path.display().to_string())]).expect("loads");
        let rules = f.policies["payments"].check(u64::MAX).expect("rules");
        assert_eq!(rules[0].quorum, Some(2));
    }

    #[test]
    fn a_bad_policy_stops_start_up_naming_it() {
        let dir = std::env::temp_dir().join(format!("strands-service-pol-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("service.yaml");
        std::fs::write(
            &path,
            "policies:\n  payments:\n    - when: \"{{ details.amount > }}\"\n      approvers: [cfo]\n",
        )
        .expect("write");
        let e = load(&[("STRANDS_SERVICE_FILE", path.display().to_string())])
            .expect_err("bad rule")
            .to_string();
        assert!(
            e.contains("policy `payments`") && e.contains("rule 1"),
            "{e}"
        );
        assert!(e.contains("service.yaml"), "{e}");
    }

    #[test]
    fn a_calendar_is_typed_and_a_bad_one_stops_start_up_naming_it() {
        let yaml = "calendars:\n  eu-office:\n    zone: Europe/Paris\n    hours:\n      mon-fri: \"09:00-12:30, 13:30-17:30\"\n    holidays: [2026-12-25]\n";
        let f = load(&[("STRANDS_CALENDARS", yaml.into())]).expect("loads");
        let eu = &f.calendars["eu-office"];
        assert_eq!(eu.zone(), chrono_tz::Europe::Paris);
        assert_eq!(&*f.calendar_names(), ["eu-office".to_string()]);
        let e = load(&[(
            "STRANDS_CALENDARS",
            yaml.replace("Europe/Paris", "Europe/Pariss"),
        )])
        .expect_err("bad zone")
        .to_string();
        assert!(
            e.contains("STRANDS_CALENDARS")
                && e.contains("calendar `eu-office`")
                && e.contains("zone: `Europe/Pariss`"),
            "{e}"
        );
        let e = load(&[("STRANDS_CALENDARS", yaml.replace("2026-12-25", "christmas"))])
            .expect_err("bad holiday")
            .to_string();
        assert!(
            e.contains("calendar `eu-office`: holidays: `christmas`"),
            "{e}"
        );
        let e = load(&[(
            "STRANDS_CALENDARS",
            yaml.replace("    holidays", "    timezone: UTC\n    holidays"),
        )])
        .expect_err("unknown key")
        .to_string();
        assert!(e.contains("timezone"), "{e}");
    }

    #[test]
    fn a_bad_file_is_an_error_naming_where() {
        let dir = std::env::temp_dir().join(format!("strands-service-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("service.yaml");
        std::fs::write(&path, "calendars: {}\npolicy: {}\n").expect("write");
        let e = load(&[("STRANDS_SERVICE_FILE", path.display().to_string())])
            .expect_err("unknown key")
            .to_string();
        assert!(e.contains("service.yaml") && e.contains("policy"), "{e}");
        let e = load(&[("STRANDS_SERVICE_FILE", "/nonexistent/s.yaml".into())])
            .expect_err("missing")
            .to_string();
        assert!(
            e.contains("STRANDS_SERVICE_FILE") && e.contains("/nonexistent/s.yaml"),
            "{e}"
        );
    }
}
