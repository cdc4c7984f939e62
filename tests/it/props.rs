//! Property tests: what users and Slack send may be anything, and nothing
//! they send may panic the loader, the template engine or the bot's routes.
//!
//! - the spec loader, on arbitrary text and on mutations of every spec in
//!   `tests/specs` (a deleted span, a duplicated line, a YAML-significant
//!   character dropped in): it answers `Ok` or an error that names the file;
//! - template rendering and conditions, on arbitrary Jinja-like sources:
//!   `Ok` or an error, within the fuel limit;
//! - the Slack routes (the real axum router, in process, `oneshot`), on
//!   signed arbitrary bodies and on mutations of the shared example
//!   payloads: never a 5xx, never a panic.

use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use std::sync::OnceLock;

fn specs() -> &'static Vec<String> {
    static SPECS: OnceLock<Vec<String>> = OnceLock::new();
    SPECS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/specs");
        let mut out = Vec::new();
        for dir in ["valid", "compat", "invalid"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            paths.sort();
            for p in paths {
                if let Ok(text) = std::fs::read_to_string(&p) {
                    out.push(text);
                }
            }
        }
        assert!(out.len() > 20, "the spec corpus is there");
        out
    })
}

/// A spec from the corpus with one mutation.
fn mutated_spec() -> impl Strategy<Value = String> {
    let n = specs().len();
    (
        0..n,
        0usize..5,
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        prop::sample::select(vec![
            ":", "-", " ", "\n", "{", "}", "[", "]", "\"", "'", "#", "&", "*", "!", "|", ">", "{{",
            "}}", "{%", "\t", "%", "@", "`", "\u{0}", "é", "\u{202e}",
        ]),
    )
        .prop_map(|(i, op, a, b, token)| {
            let text = &specs()[i];
            let chars: Vec<char> = text.chars().collect();
            let (x, y) = {
                let x = a.index(chars.len().max(1));
                let y = b.index(chars.len().max(1));
                (x.min(y), x.max(y))
            };
            match op {
                // Delete a span.
                0 => chars[..x].iter().chain(&chars[y..]).collect(),
                // Insert a token.
                1 => {
                    chars[..x].iter().collect::<String>()
                        + token
                        + &chars[x..].iter().collect::<String>()
                }
                // Duplicate a line.
                2 => {
                    let lines: Vec<&str> = text.lines().collect();
                    let k = a.index(lines.len().max(1));
                    let mut out = lines.clone();
                    if let Some(l) = lines.get(k) {
                        out.insert(k, l);
                    }
                    out.join("\n")
                }
                // Swap two lines.
                3 => {
                    let mut lines: Vec<&str> = text.lines().collect();
                    if !lines.is_empty() {
                        let (p, q) = (a.index(lines.len()), b.index(lines.len()));
                        lines.swap(p, q);
                    }
                    lines.join("\n")
                }
                // Replace a character.
                _ => chars
                    .iter()
                    .enumerate()
                    .map(|(k, c)| {
                        if k == x {
                            token.to_string()
                        } else {
                            c.to_string()
                        }
                    })
                    .collect(),
            }
        })
}

fn assert_loads_or_explains(text: &str) {
    match strands::spec::parse(
        text,
        Path::new("fuzz.yaml"),
        &strands::spec::Limits::default(),
    ) {
        Ok(_) => {}
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains("fuzz.yaml"),
                "an error names the file: {msg}\n---\n{text}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_spec_loader_never_panics_on_arbitrary_text(text in ".{0,400}") {
        assert_loads_or_explains(&text);
    }

    #[test]
    fn the_spec_loader_never_panics_on_mutated_specs(text in mutated_spec()) {
        assert_loads_or_explains(&text);
    }
}

/// Jinja-ish sources: fragments of template syntax in any order.
fn template_source() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "{{",
        "}}",
        "{%",
        "%}",
        "{#",
        "#}",
        " x ",
        " steps[0].response ",
        "|upper",
        "|length",
        "|truncate(3)",
        "|join(',')",
        " for i in range(999999) ",
        " endfor ",
        " if ",
        " endif ",
        " else ",
        "(",
        ")",
        "[",
        "]",
        "'",
        "\"",
        " ~ ",
        " + ",
        " * ",
        "9999999",
        "-1",
        " and ",
        " not ",
        " in ",
        ".lower()",
        ".items()",
        " loop.index ",
        " set y = ",
        " macro m() ",
        " endmacro ",
        " m() ",
        " recursive ",
        "\n",
        "é",
        "\u{0}",
    ]);
    prop::collection::vec(prop_oneof![piece.prop_map(String::from), ".{0,8}"], 0..24)
        .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn templates_render_or_fail_cleanly(source in template_source()) {
        let t = strands::template::Templates::new();
        let ctx = minijinja::Value::from_serialize(json!({
            "x": "text",
            "steps": [{"response": "first"}],
            "n": 3,
        }));
        let _ = t.check(&source);
        let _ = t.check_condition(&source);
        let _ = t.render("a fuzzed template", &source, &ctx);
        let _ = t.truthy("a fuzzed condition", &source, &ctx);
    }
}

// ---------------------------------------------------------------------------
// The Slack routes, in process
// ---------------------------------------------------------------------------

const SECRET: &str = "props-signing-secret";

struct Bot {
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    _dir: tempfile::TempDir,
}

fn bot() -> &'static Bot {
    static BOT: OnceLock<Bot> = OnceLock::new();
    BOT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temp dir");
        let workflows = dir.path().join("workflows");
        std::fs::create_dir_all(&workflows).expect("workflows dir");
        std::fs::write(
            workflows.join("deploy.yaml"),
            "version: 0\nname: deploy\nruntime:\n  provider: echo\nagents:\n  a:\n    prompt: p\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n      - type: manual_gate\n        id: review\n        prompt: ok?\n",
        )
        .expect("a workflow");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let store_path = dir.path().join("store");
        let wf = workflows.clone();
        let router = rt.block_on(async move {
            let env = move |k: &str| -> Option<String> {
                match k {
                    "SLACK_BOT_TOKEN" => Some("xoxb-props".into()),
                    "SLACK_SIGNING_SECRET" => Some(SECRET.into()),
                    // Nothing listens there: Web API calls fail at once.
                    "SLACK_API_URL" => Some("http://127.0.0.1:9/api".into()),
                    _ => None,
                }
            };
            let config = strands::slack::config::Config::from_lookup(env, Default::default())
                .expect("a config")
                .expect("slack is configured");
            let store = strands::store::Store::open(&store_path).expect("a store");
            let hub = strands::hub::Hub::new(store, Default::default(), Some(wf));
            let app = strands::slack::app::App::new(config, hub).expect("an app");
            strands::slack::server::router(app)
        });
        Bot {
            rt,
            router,
            _dir: dir,
        }
    })
}

fn sign(ts: i64, body: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
    mac.update(format!("v0:{ts}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// POSTs `body` to `path`, signed, through the router; the status.
fn post(path: &str, content_type: &str, body: Vec<u8>) -> u16 {
    use tower::ServiceExt;
    let b = bot();
    let ts = chrono::Utc::now().timestamp();
    let request = axum::http::Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", content_type)
        .header("x-slack-request-timestamp", ts.to_string())
        .header("x-slack-signature", sign(ts, &body))
        .body(axum::body::Body::from(body))
        .expect("a request");
    let router = b.router.clone();
    b.rt.block_on(async move {
        match tokio::time::timeout(std::time::Duration::from_secs(10), router.oneshot(request))
            .await
        {
            Ok(Ok(r)) => r.status().as_u16(),
            Ok(Err(e)) => match e {},
            Err(_) => panic!("the route did not answer within 10 s"),
        }
    })
}

fn example(name: &str) -> Value {
    let text = match name {
        "block_actions.json" => crate::common::fake_slack::BLOCK_ACTIONS_JSON,
        _ => crate::common::fake_slack::VIEW_SUBMISSION_JSON,
    };
    serde_json::from_str(text).expect("an example payload")
}

/// A JSON value of any shape (small).
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces the value at one path of `v` (walked by indexes) with `new`.
fn replace_at(v: &mut Value, steps: &[prop::sample::Index], new: Value) {
    let Some((s, rest)) = steps.split_first() else {
        *v = new;
        return;
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            let key = m.keys().nth(s.index(m.len())).cloned().unwrap_or_default();
            if let Some(child) = m.get_mut(&key) {
                replace_at(child, rest, new);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let k = s.index(a.len());
            replace_at(&mut a[k], rest, new);
        }
        _ => *v = new,
    }
}

fn mutated_payload() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["block_actions.json", "view_submission.json"]),
        prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        any_json(),
    )
        .prop_map(|(name, steps, new)| {
            let mut v = example(name);
            replace_at(&mut v, &steps, new);
            v
        })
}

fn form(payload: &str) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", payload)
        .finish()
        .into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn signed_arbitrary_bodies_never_get_a_5xx(
        body in prop::collection::vec(any::<u8>(), 0..600),
        route in prop::sample::select(vec!["/slack/interactions", "/slack/commands", "/slack/events"]),
    ) {
        let status = post(route, "application/x-www-form-urlencoded", body);
        prop_assert!(status < 500, "{route}: {status}");
    }

    #[test]
    fn mutated_interaction_payloads_never_get_a_5xx(payload in mutated_payload()) {
        let status = post(
            "/slack/interactions",
            "application/x-www-form-urlencoded",
            form(&payload.to_string()),
        );
        prop_assert!(status < 500, "{status}: {payload}");
    }

    #[test]
    fn arbitrary_slash_command_text_never_gets_a_5xx(text in ".{0,200}", user in "[A-Z0-9]{0,12}") {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", "t")
            .append_pair("team_id", "T1")
            .append_pair("channel_id", "C0PROPS")
            .append_pair("user_id", &user)
            .append_pair("command", "/strands")
            .append_pair("text", &text)
            .append_pair("response_url", "http://127.0.0.1:9/response")
            .append_pair("trigger_id", "1.2.3")
            .finish();
        let status = post("/slack/commands", "application/x-www-form-urlencoded", body.into_bytes());
        prop_assert!(status < 500, "{status}: {text:?}");
    }

    #[test]
    fn arbitrary_events_never_get_a_5xx(event in any_json()) {
        let status = post("/slack/events", "application/json", event.to_string().into_bytes());
        prop_assert!(status < 500, "{status}: {event}");
    }
}
