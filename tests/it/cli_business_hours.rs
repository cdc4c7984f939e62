//! Business hours with the real binary: a service file with calendars
//! (`STRANDS_SERVICE_FILE`), a gate with `timeout: 2h business`, and
//! `sessions show` wording its deadline in the calendar's words; a gate
//! opened while its calendar is closed with `when_closed: reject`; a gate
//! naming a calendar the service lacks, refused at its line.

use crate::common::{history, FakeLlm, Sandbox};

/// One agent, a manual gate (`GATE`), one more agent; the offline `echo`
/// provider answers.
const FLOW: &str = r#"
version: 0
name: NAME
runtime:
  provider: echo
agents:
  writer:
    prompt: You write.
pattern:
  type: chain
  config:
    steps:
      - agent: writer
        input: Write it.
      - type: manual_gate
        id: review
        prompt: Ship it?
GATE
      - agent: writer
        input: Ship it.
"#;

/// A service file: `always` is open every hour of every day; `never` is
/// closed on the days around today (holidays), so a gate opens closed
/// whatever the time of the test.
fn service_file(sandbox: &Sandbox) -> String {
    let today = chrono::Utc::now().date_naive();
    let days: Vec<String> = (-1..=2)
        .map(|d| (today + chrono::Duration::days(d)).to_string())
        .collect();
    let yaml = format!(
        "calendars:\n  always:\n    zone: UTC\n    hours: {{mon-sun: \"00:00-24:00\"}}\n  never:\n    zone: Europe/Paris\n    hours: {{mon-sun: \"09:00-17:00\"}}\n    holidays: [{}]\n",
        days.join(", ")
    );
    let path = sandbox.path().join("service.yaml");
    std::fs::write(&path, yaml).expect("write the service file");
    path.display().to_string()
}

fn spec(sandbox: &Sandbox, llm: &FakeLlm, name: &str, keys: &str) -> String {
    let yaml = FLOW.replace("NAME", name).replace("GATE", keys.trim_end());
    let path = sandbox.spec(&format!("{name}.yaml"), &yaml, llm);
    path.display().to_string()
}

#[test]
fn a_business_timeout_is_shown_in_the_calendars_words() {
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let service = service_file(&sandbox);
    let env = [("STRANDS_SERVICE_FILE", service.as_str())];
    let spec = spec(
        &sandbox,
        &llm,
        "business",
        "        timeout: 2h business\n        calendar: always\n",
    );
    let out = sandbox.strands_env(&env, &["run", &spec, "--json"]);
    out.expect_code(19);
    let id = crate::common::session_id(&out.json());
    let show = sandbox.strands_env(&env, &["sessions", "show", &id]);
    show.expect_code(0);
    let line = show
        .stdout
        .lines()
        .find(|l| l.starts_with("Business:"))
        .unwrap_or_else(|| panic!("no business line: {}", show.stdout));
    // Open every hour: the deadline is two hours on, in business hours.
    assert!(
        line.contains(" UTC, in ")
            && line.contains("business hour")
            && line.ends_with("(calendar `always`)"),
        "{line}"
    );
    let json = sandbox.strands_env(&env, &["sessions", "show", &id, "--json"]);
    let v = json.json();
    assert_eq!(v["open_gates"][0]["hours"]["calendar"], "always", "{v:#}");
}

#[test]
fn a_gate_opened_while_closed_with_when_closed_reject_is_rejected_at_once() {
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let service = service_file(&sandbox);
    let env = [("STRANDS_SERVICE_FILE", service.as_str())];
    let spec = spec(
        &sandbox,
        &llm,
        "closed",
        "        calendar: never\n        when_closed: reject\n",
    );
    let out = sandbox.strands_env(&env, &["run", &spec, "--json"]);
    out.expect_code(21);
    let id = crate::common::session_id(&out.json());
    let show = sandbox.strands_env(&env, &["sessions", "show", &id, "--json"]);
    let answered = history(&show.json())
        .into_iter()
        .find(|g| g["event"] == "answered")
        .expect("answered");
    assert_eq!(answered["by"], "timeout", "{answered:#}");
    assert!(
        answered
            .to_string()
            .contains("outside business hours of calendar `never`"),
        "{answered:#}"
    );
}

#[test]
fn a_calendar_the_service_lacks_is_refused_at_its_line() {
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let service = service_file(&sandbox);
    let env = [("STRANDS_SERVICE_FILE", service.as_str())];
    let spec = spec(
        &sandbox,
        &llm,
        "unknown",
        "        timeout: 8h business\n        calendar: eu-office\n",
    );
    let out = sandbox.strands_env(&env, &["run", &spec]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("unknown.yaml:19")
            && out.stderr.contains("no calendar `eu-office`")
            && out.stderr.contains("`always`, `never`"),
        "{}",
        out.stderr
    );
    // Without the service's calendars, `validate` can only warn.
    let out = sandbox.strands(&["validate", &spec]);
    out.expect_code(0);
    assert!(out.stderr.contains("not known here"), "{}", out.stderr);
    // A bad service file stops start-up, naming the calendar and key.
    std::fs::write(
        &service,
        "calendars:\n  eu-office:\n    zone: Europe/Pariss\n    hours: {mon-fri: \"09:00-17:00\"}\n",
    )
    .expect("write");
    let out = sandbox.strands_env(&env, &["validate", &spec]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("calendar `eu-office`: zone: `Europe/Pariss`"),
        "{}",
        out.stderr
    );
}
