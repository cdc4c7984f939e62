//! Repeating an answer is idempotent: `strands resume ID --approve` killed
//! (`kill -9`) after its answer was recorded and while the run went on,
//! then run again by the same person, continues the run to its end (exit
//! 0) with the one answer recorded once; the same command after the run
//! finished says so and exits 0; a different answer, or the same one from
//! someone else, is refused naming who answered what, changing nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{history, session_id, Behaviour, FakeLlm, Sandbox};

use super::cli_cancel::GATED;

#[test]
fn the_same_answer_again_after_a_kill_continues_the_run_once() {
    // The writer's first call (request 2) hangs: the resume is killed
    // while it waits, its answer already recorded.
    let llm = FakeLlm::start_with(Behaviour {
        latency: Some(Arc::new(|n| {
            if n == 2 {
                Duration::from_secs(60)
            } else {
                Duration::ZERO
            }
        })),
        ..Behaviour::default()
    });
    let sb = Sandbox::new();
    let spec = sb.spec("gated.yaml", GATED, &llm);
    let spec = spec.display().to_string();
    let paused = sb.strands(&["run", &spec, "--json"]);
    paused.expect_code(19);
    let id = session_id(&paused.json());

    let mut resume = sb.spawn(&["resume", &id, "--approve"]);
    llm.wait_for_requests(2, Duration::from_secs(20));
    let _ = resume.kill();
    let _ = resume.wait();

    // Someone else's approval, or another decision, is refused and says
    // who decided what.
    let other = sb.strands_as("mallory", &[], &["resume", &id, "--approve"]);
    assert_ne!(other.code, 0, "{}", other.stderr);
    assert!(
        other.stderr.contains("approved by tester"),
        "names who answered: {}",
        other.stderr
    );
    let reject = sb.strands(&["resume", &id, "--reject"]);
    assert_ne!(reject.code, 0, "{}", reject.stderr);
    assert!(
        reject.stderr.contains("approved by tester"),
        "{}",
        reject.stderr
    );

    // The same answer again: the run goes on to its end.
    let started = Instant::now();
    let again = sb.strands(&["resume", &id, "--approve", "--json"]);
    again.expect_code(0);
    assert!(started.elapsed() < Duration::from_secs(50));
    let done = again.json();
    assert_eq!(done["status"], "completed", "{done:#}");
    let answered: Vec<_> = history(&done)
        .into_iter()
        .filter(|e| e["event"] == "answered")
        .collect();
    assert_eq!(answered.len(), 1, "one answer recorded: {answered:?}");
    assert_eq!(answered[0]["by"], "tester");

    // Once more after the end: nothing to do, and no error.
    let after = sb.strands(&["resume", &id, "--approve", "--json"]);
    after.expect_code(0);
    assert_eq!(after.json()["status"], "completed");
    // The writer ran once to completion (the killed call, then one more).
    assert_eq!(llm.calls_of("WRITER").len(), 2, "{:#?}", llm.requests());
    let audit = sb.strands(&["audit", "export", "--session", &id]);
    audit.expect_code(0);
    assert_eq!(
        audit.stdout.matches("\"kind\":\"answer\"").count(),
        1,
        "{}",
        audit.stdout
    );
}
