//! SIGKILL `strands run` / `strands resume` at random moments, over and
//! over, on one run (see `tests/common/crash.rs`): no session is lost, no
//! tool call runs twice, and every model request sent again is audited.
//! `STRANDS_CRASH_CYCLES` (default 40) and `STRANDS_CRASH_SEED` replay or
//! lengthen it; `cargo bench --bench crash_loop` runs thousands of cycles.

use crate::common::crash;

#[test]
fn random_kills_lose_no_session_and_run_no_tool_call_twice() {
    let cycles: usize = std::env::var("STRANDS_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let seed: u64 = std::env::var("STRANDS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        });
    let f = crash::run(seed, cycles, 150);
    eprintln!("crash loop (seed {seed}): {f:?}");
    assert!(f.kills > cycles / 4, "most processes were killed: {f:?}");
    assert_eq!(f.sessions_lost, 0, "seed {seed}: {f:?}");
    assert!(f.runs >= 1, "{f:?}");
    assert_eq!(f.runs_completed, f.runs, "seed {seed}: {f:?}");
    assert_eq!(f.tool_calls_doubled, 0, "seed {seed}: {f:?}");
    assert!(
        f.model_requests_repeated <= f.model_calls_resent,
        "every model request sent again is audited (seed {seed}): {f:?}"
    );
}
