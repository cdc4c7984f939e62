//! `strands config` through the real binary: every setting with its
//! effective value and where it came from — the environment, a
//! `strands.toml`, a flag, the default — secrets masked; and what the
//! settings would refuse, exit 2, before `strands serve` is ever started.

use crate::common::Sandbox;
use serde_json::Value;

/// The line `strands config` prints for `name`.
fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no line for {name}:\n{stdout}"))
}

/// `name`'s entry of `strands config --json`.
fn entry<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["settings"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("no entry for {name}: {json}"))
}

#[test]
fn config_shows_values_and_sources_and_never_a_secret() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.path().join("strands.toml"),
        "STRANDS_LEASE_SECS = 12\nSTRANDS_BIND = \"127.0.0.1:4999\"\n",
    )
    .expect("write strands.toml");
    let env = [
        ("SLACK_BOT_TOKEN", "xoxb-1111-very-secret-token"),
        ("SLACK_APP_TOKEN", "xapp-1-also-secret"),
        ("STRANDS_SMTP_URL", "smtp://mailer:hunter2@mail.example:587"),
        ("STRANDS_EMAIL_FROM", "Strands <approvals@corp.example>"),
        ("STRANDS_BIND", "127.0.0.1:4000"),
    ];
    let out = sb.strands_env(&env, &["config"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for secret in ["very-secret-token", "also-secret", "hunter2"] {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "{secret} shown:\n{}",
            out.stdout
        );
    }
    assert!(
        line(&out.stdout, "SLACK_BOT_TOKEN").contains("xoxb-…(set)  (env)"),
        "{}",
        out.stdout
    );
    let smtp = line(&out.stdout, "STRANDS_SMTP_URL");
    assert!(
        smtp.contains("mail.example") && smtp.contains("(env)"),
        "{smtp}"
    );
    // The environment wins over the file; the file over the default.
    assert!(line(&out.stdout, "STRANDS_BIND").contains("127.0.0.1:4000  (env)"));
    assert!(line(&out.stdout, "STRANDS_LEASE_SECS").contains("12  (strands.toml)"));
    assert!(line(&out.stdout, "STRANDS_PG_POOL_SIZE").contains("16  (default)"));
    assert!(line(&out.stdout, "STRANDS_STORE").contains("(flag --store)"));
    // A default that depends on another setting, as it comes out.
    assert!(
        line(&out.stdout, "STRANDS_PUBLIC_URL").contains("http://127.0.0.1:4000  (default)"),
        "{}",
        out.stdout
    );

    let json = sb.strands_env(&env, &["config", "--json"]).json();
    let bot = entry(&json, "SLACK_BOT_TOKEN");
    assert_eq!(bot["value"], "xoxb-…(set)");
    assert_eq!(bot["source"], "env");
    assert_eq!(bot["secret"], true);
    assert_eq!(entry(&json, "STRANDS_LEASE_SECS")["source"], "strands.toml");
    assert_eq!(entry(&json, "STRANDS_WORKFLOWS")["value"], Value::Null);
    assert_eq!(entry(&json, "STRANDS_PG_POOL_SIZE")["effective"], "16");
    assert_eq!(entry(&json, "STRANDS_BIND")["effective"], "127.0.0.1:4000");
    assert!(!json.to_string().contains("very-secret"), "{json}");
    assert_eq!(json["problems"], serde_json::json!([]));
}

#[test]
fn config_names_what_serve_would_refuse() {
    let sb = Sandbox::new();
    let out = sb.strands_env(
        &[("SLACK_SIGNING_SECRET", "sign-secret")],
        &["config", "--section", "slack"],
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("strands serve would refuse to start: SLACK_BOT_TOKEN is not set"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("sign-secret"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("STRANDS_BIND"),
        "only the slack section"
    );
    let bad = sb.strands(&["config", "--section", "nope"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("no such section"), "{}", bad.stderr);
    // A typo in the file is refused, naming it.
    std::fs::write(sb.path().join("strands.toml"), "STRANDS_BINDD = \"x\"\n").expect("write");
    let typo = sb.strands(&["config"]);
    assert_eq!(typo.code, 2);
    assert!(typo.stderr.contains("STRANDS_BINDD"), "{}", typo.stderr);
}
