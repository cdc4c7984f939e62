//! `sessions list --limit N [--cursor C]`: pages of the store's index,
//! newest first, with the cursor that goes on — offline on the store and
//! through a server — and a clear refusal of a cursor it never printed.

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
