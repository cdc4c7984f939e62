//! The egress policy through the real binary: a model that asks
//! `http_request` for internal addresses (loopback by IP, by name, IPv6,
//! IPv4-mapped, through a redirect) is refused before anything is sent —
//! the local target counts what reached it — and the refusal is the tool's
//! result and an audit entry. An allow-listed host works; a host the spec
//! does not name asks a human, showing the full URL.

use crate::common::target::Target;
use crate::common::{assistant_turns, session_id, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::{json, Value};

const SPEC: &str = r#"
version: 0
name: egress
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  workspace: ./ws
$NETWORK
agents:
  reader:
    prompt: You read web pages.
    tools: [http_request]
pattern:
  type: chain
  config:
    steps:
      - agent: reader
        input: Summarise the page.
"#;

const FINAL: &str = "FINAL: summary";

/// A model whose first turn is one `http_request` GET of `url`, then
/// [`FINAL`].
fn model(url: &str) -> FakeLlm {
    let call = tool_call("get", "http_request", json!({"method": "GET", "url": url}));
    FakeLlm::start_with(Behaviour::scripted(move |_, body| {
        if assistant_turns(body) == 0 {
            Say::Calls(vec![call.clone()])
        } else {
            Say::Text(FINAL.into())
        }
    }))
}

struct Case {
    sandbox: Sandbox,
    fake: FakeLlm,
    spec: String,
}

impl Case {
    /// `network` is the YAML under `tools:` (`  network: ...`) or empty.
    fn new(url: &str, network: &str) -> Case {
        let sandbox = Sandbox::new();
        let fake = model(url);
        let spec = sandbox
            .spec("egress.yaml", &SPEC.replace("$NETWORK", network), &fake)
            .display()
            .to_string();
        Case {
            sandbox,
            fake,
            spec,
        }
    }

    fn run(&self, env: &[(&str, &str)], code: i32) -> Value {
        let out = self
            .sandbox
            .strands_as("tester", env, &["run", &self.spec, "--json"]);
        out.expect_code(code);
        out.json()
    }

    fn approve(&self, id: &str, env: &[(&str, &str)]) -> Value {
        let out = self
            .sandbox
            .strands_as("tester", env, &["resume", id, "--approve", "--json"]);
        out.expect_code(0);
        out.json()
    }

    /// What the model was told the call returned.
    fn result(&self) -> String {
        self.fake.last().tool_result("get")
    }

    fn audit_kinds(&self) -> Vec<(String, String)> {
        let out = self
            .sandbox
            .strands(&["audit", "export", "--format", "jsonl"]);
        out.expect_code(0);
        out.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|e| {
                let ev = if e.get("event").is_some() {
                    e["event"].clone()
                } else {
                    e
                };
                (
                    ev["kind"].as_str().unwrap_or_default().to_string(),
                    ev["detail"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }
}

/// The run pauses at the tool gate (the host is not named), the human
/// approves, and the egress policy refuses what the human approved.
fn approved_then_blocked(url: &str, network: &str, env: &[(&str, &str)]) -> (Case, String) {
    let case = Case::new(url, network);
    let v = case.run(env, 19);
    assert_eq!(v["gate"]["kind"], "tool_call", "{v:#}");
    let done = case.approve(&session_id(&v), env);
    assert_eq!(done["status"], "completed", "{done:#}");
    let said = case.result();
    (case, said)
}

#[test]
fn a_loopback_ip_is_refused_and_never_reached() {
    let target = Target::start();
    let url = format!("{}/secret", target.url);
    let (case, said) = approved_then_blocked(&url, "", &[]);
    assert!(
        said.contains("blocked: 127.0.0.1 is a loopback address; allow it in tools.network.allow"),
        "{said}"
    );
    assert_eq!(target.hits().len(), 0, "nothing reached the target");
    let audit = case.audit_kinds();
    assert!(
        audit
            .iter()
            .any(|(k, d)| k == "egress_blocked" && d.contains("127.0.0.1 is a loopback address")),
        "{audit:#?}"
    );
    case.sandbox.strands(&["audit", "verify"]).expect_code(0);
}

#[test]
fn a_name_that_resolves_to_loopback_is_refused_at_connect_time() {
    let target = Target::start();
    let url = target.url.replace("127.0.0.1", "localhost") + "/secret";
    let (_case, said) = approved_then_blocked(&url, "", &[]);
    assert!(
        said.contains("blocked: localhost resolves to") && said.contains("a loopback address"),
        "{said}"
    );
    assert_eq!(target.hits().len(), 0);
}

#[test]
fn ipv6_loopback_and_an_ipv4_mapped_address_are_refused() {
    let v4 = Target::start();
    let port = v4.url.rsplit(':').next().expect("a port").to_string();
    let mapped = format!("http://[::ffff:127.0.0.1]:{port}/secret");
    let (_case, said) = approved_then_blocked(&mapped, "", &[]);
    assert!(
        said.contains("blocked: 127.0.0.1 is a loopback address"),
        "{said}"
    );
    assert_eq!(v4.hits().len(), 0);

    // A real listener on ::1 when the machine has IPv6 loopback; the
    // refusal must come before any connection either way.
    let v6 = Target::start_on("[::1]:0", None);
    let url = match &v6 {
        Some(t) => format!("{}/secret", t.url),
        None => "http://[::1]:9/secret".to_string(),
    };
    let (_case, said) = approved_then_blocked(&url, "", &[]);
    assert!(
        said.contains("blocked: ::1 is a loopback address"),
        "{said}"
    );
    if let Some(t) = v6 {
        assert_eq!(t.hits().len(), 0);
    }
}

#[test]
fn a_redirect_from_a_reachable_host_to_an_internal_one_is_refused() {
    // `localhost` is reachable (the installation allows it) but not named by
    // the spec: the call asks, the human approves, the first hop runs, and
    // the redirect to 127.0.0.1 is refused by the egress policy.
    let target = Target::start();
    let inside = format!("{}/secret", target.url);
    let url = format!(
        "{}/redirect?to={}",
        target.url.replace("127.0.0.1", "localhost"),
        url_encode(&inside)
    );
    let env = [("STRANDS_NETWORK_ALLOW", "localhost")];
    let (_case, said) = approved_then_blocked(&url, "", &env);
    assert!(
        said.contains("blocked: 127.0.0.1 is a loopback address"),
        "{said}"
    );
    assert_eq!(target.count("GET", "/redirect"), 1, "{:?}", target.hits());
    assert_eq!(target.count("GET", "/secret"), 0, "{:?}", target.hits());
}

#[test]
fn a_request_nobody_approved_follows_redirects_only_to_named_hosts() {
    // The spec names `localhost`: the GET runs without asking; its redirect
    // to a host the spec does not name is not followed.
    let target = Target::start();
    let inside = format!("{}/secret", target.url);
    let url = format!(
        "{}/redirect?to={}",
        target.url.replace("127.0.0.1", "localhost"),
        url_encode(&inside)
    );
    let case = Case::new(&url, "  network:\n    allow: [localhost]");
    let v = case.run(&[], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let said = case.result();
    assert!(
        said.contains("not followed: the spec does not name that host"),
        "{said}"
    );
    assert_eq!(target.count("GET", "/redirect"), 1);
    assert_eq!(target.count("GET", "/secret"), 0);
}

#[test]
fn an_allow_listed_internal_host_works_without_asking() {
    let target = Target::start();
    let case = Case::new(
        &format!("{}/status", target.url),
        "  network:\n    allow: [\"127.0.0.0/8\"]",
    );
    let v = case.run(&[], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(
        v["gates_asked"], 0,
        "a read of a named host asks nobody: {v:#}"
    );
    assert_eq!(target.count("GET", "/status"), 1);
    assert!(case.result().contains("target got GET /status"));
}

#[test]
fn a_host_the_spec_does_not_name_asks_a_human_showing_the_full_url() {
    // Under the default (minimal) preset a GET would run; a destination the
    // model chose asks instead, with the whole URL, and cannot be trusted.
    let url = "https://example.invalid/a/very/long/path?q=secret-looking&page=2";
    let case = Case::new(url, "");
    let v = case.run(&[], 19);
    let call = &v["gate"]["calls"][0];
    assert_eq!(call["state"]["state"], "waiting", "{v:#}");
    let prompt = call["request"]["prompt"].as_str().unwrap_or_default();
    assert!(
        prompt.contains("a host the workflow does not name") && prompt.contains(url),
        "{prompt}"
    );
    assert_eq!(call["request"]["trustable"], false, "{call:#}");
    assert_eq!(case.fake.count(), 1, "nothing more happened");
}

#[test]
fn an_executor_base_url_is_allowed_by_naming_it() {
    let target = Target::start();
    let sandbox = Sandbox::new();
    let call = tool_call(
        "get",
        "status_api",
        json!({"method": "GET", "path": "/status"}),
    );
    let fake = FakeLlm::start_with(Behaviour::scripted(move |_, body| {
        if assistant_turns(body) == 0 {
            Say::Calls(vec![call.clone()])
        } else {
            Say::Text(FINAL.into())
        }
    }));
    let yaml = SPEC
        .replace(
            "$NETWORK",
            &format!(
                "  http_executors:\n    - id: status_api\n      base_url: {}\n",
                target.url
            ),
        )
        .replace("tools: [http_request]", "tools: [status_api]");
    let spec = sandbox.spec("exec.yaml", &yaml, &fake);
    let out = sandbox.strands(&["run", &spec.display().to_string(), "--json"]);
    out.expect_code(0);
    assert_eq!(target.count("GET", "/status"), 1, "{:?}", target.hits());
}

#[test]
fn a_bad_allow_entry_is_a_spec_error_at_its_line() {
    let sandbox = Sandbox::new();
    let fake = FakeLlm::start();
    let yaml = SPEC.replace(
        "$NETWORK",
        "  network:\n    allow:\n      - https://intranet:8080/x",
    );
    let spec = sandbox.spec("bad.yaml", &yaml, &fake);
    let out = sandbox.strands(&["validate", &spec.display().to_string()]);
    out.expect_code(3);
    let line = yaml
        .lines()
        .position(|l| l.contains("https://intranet"))
        .expect("the line")
        + 1;
    assert!(
        out.stderr.contains(&format!("bad.yaml:{line}:"))
            && out.stderr.contains("tools.network.allow")
            && out.stderr.contains("not a host"),
        "{}",
        out.stderr
    );
}

fn url_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
