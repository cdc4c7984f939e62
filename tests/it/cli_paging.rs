//! `sessions list --limit N [--cursor C]`: pages of the store's index,
//! newest first, with the cursor that goes on — offline on the store and
//! through a server — and a clear refusal of a cursor it never printed;
//! `--workflow W` (and `GET /api/v1/sessions?workflow=W`) page the runs of
//! one workflow the same way.

use crate::common::api::{call, make_token};
use crate::common::service::{ServeConfig, Service};
use crate::common::Sandbox;
use serde_json::Value;

fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/research-review.yaml").to_string()
}

fn ids(v: &Value) -> Vec<String> {
    v["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn pages_go_on_from_their_cursor_and_a_made_up_cursor_is_refused() {
    let sandbox = Sandbox::new();
    let mut made = Vec::new();
    for _ in 0..3 {
        let out = sandbox.strands(&["run", &example(), "--json"]);
        out.expect_code(19);
        made.push(out.json()["session_id"].as_str().expect("id").to_string());
    }
    made.reverse(); // newest first
    let all = sandbox.strands(&["sessions", "list", "--json"]).json();
    assert_eq!(ids(&all), made, "{all}");

    let first = sandbox.strands(&["sessions", "list", "--limit", "2", "--json"]);
    first.expect_code(0);
    let first = first.json();
    assert_eq!(ids(&first), made[..2], "{first}");
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next_cursor")
        .to_string();
    let rest = sandbox.strands(&[
        "sessions", "list", "--limit", "2", "--cursor", &cursor, "--json",
    ]);
    rest.expect_code(0);
    let rest = rest.json();
    assert_eq!(ids(&rest), made[2..], "{rest}");
    assert!(rest["next_cursor"].is_null(), "the last page: {rest}");

    let paused = sandbox
        .strands(&[
            "sessions", "list", "--status", "paused", "--limit", "1", "--json",
        ])
        .json();
    assert_eq!(ids(&paused), made[..1]);

    let bad = sandbox.strands(&["sessions", "list", "--limit", "2", "--cursor", "nonsense"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("--cursor"), "{}", bad.stderr);
}

/// The example under another workflow name, written into the sandbox.
fn other_example(sandbox: &Sandbox) -> String {
    let text = std::fs::read_to_string(example()).expect("the example");
    let text = text.replace("name: research-review", "name: other-review");
    assert!(text.contains("name: other-review"));
    let path = sandbox.path().join("other-review.yaml");
    std::fs::write(&path, text).expect("write the spec");
    path.display().to_string()
}

#[test]
fn pages_of_one_workflow_offline_through_the_cli_and_the_api() {
    let sandbox = Sandbox::new();
    let other = other_example(&sandbox);
    // Interleaved, so a page of one workflow skips the other's runs.
    let (mut research, mut others) = (Vec::new(), Vec::new());
    for i in 0..5 {
        let spec = if i % 2 == 0 { example() } else { other.clone() };
        let out = sandbox.strands(&["run", &spec, "--json"]);
        out.expect_code(19);
        let id = out.json()["session_id"].as_str().expect("id").to_string();
        if i % 2 == 0 {
            research.push(id);
        } else {
            others.push(id);
        }
    }
    research.reverse();
    others.reverse();

    // Offline: every run of a workflow, then pages across the cursor.
    let all = sandbox
        .strands(&[
            "sessions",
            "list",
            "--workflow",
            "research-review",
            "--json",
        ])
        .json();
    assert_eq!(ids(&all), research, "{all}");
    let first = sandbox.strands(&[
        "sessions",
        "list",
        "--workflow",
        "research-review",
        "--limit",
        "2",
        "--json",
    ]);
    first.expect_code(0);
    let first = first.json();
    assert_eq!(ids(&first), research[..2], "{first}");
    let cursor = first["next_cursor"].as_str().expect("more").to_string();
    let rest = sandbox
        .strands(&[
            "sessions",
            "list",
            "--workflow",
            "research-review",
            "--limit",
            "2",
            "--cursor",
            &cursor,
            "--json",
        ])
        .json();
    assert_eq!(ids(&rest), research[2..], "{rest}");
    assert!(rest["next_cursor"].is_null(), "{rest}");
    let paused_others = sandbox
        .strands(&[
            "sessions",
            "list",
            "--workflow",
            "other-review",
            "--status",
            "paused",
            "--limit",
            "5",
            "--json",
        ])
        .json();
    assert_eq!(ids(&paused_others), others, "{paused_others}");
    let none = sandbox
        .strands(&[
            "sessions",
            "list",
            "--workflow",
            "other-review",
            "--status",
            "completed",
            "--json",
        ])
        .json();
    assert!(ids(&none).is_empty(), "{none}");
    let table = sandbox.strands(&["sessions", "list", "--workflow", "other-review"]);
    table.expect_code(0);
    assert!(
        !table.stdout.contains("research-review"),
        "{}",
        table.stdout
    );

    // Through a server: the API's filter and the CLI as its client.
    let token = make_token(&sandbox, "ops", "operator");
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("workflows dir");
    let svc = Service::launch(ServeConfig::api(&sandbox, &dir));
    let page = call(
        &svc,
        "GET",
        "/api/v1/sessions?workflow=other-review&limit=1",
        Some(&token),
        None,
    );
    assert_eq!(page.status, 200, "{}", page.body);
    let page = page.json();
    assert_eq!(ids(&page), others[..1], "{page}");
    let cursor = page["next_cursor"].as_str().expect("more").to_string();
    let rest = call(
        &svc,
        "GET",
        &format!("/api/v1/sessions?workflow=other-review&limit=5&cursor={cursor}"),
        Some(&token),
        None,
    )
    .json();
    assert_eq!(ids(&rest), others[1..], "{rest}");
    let server = [
        ("STRANDS_SERVER", svc.url.as_str()),
        ("STRANDS_TOKEN", token.as_str()),
    ];
    let remote = sandbox.strands_as(
        "ops",
        &server,
        &[
            "sessions",
            "list",
            "--workflow",
            "research-review",
            "--limit",
            "2",
            "--json",
        ],
    );
    remote.expect_code(0);
    let remote = remote.json();
    assert_eq!(ids(&remote), research[..2], "{remote}");
    assert!(remote["next_cursor"].is_string(), "{remote}");
    let every = sandbox
        .strands_as(
            "ops",
            &server,
            &[
                "sessions",
                "list",
                "--workflow",
                "research-review",
                "--json",
            ],
        )
        .json();
    assert_eq!(ids(&every), research, "{every}");
}
