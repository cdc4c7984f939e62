//! The crash loop at length: thousands of `strands` processes SIGKILLed at
//! random moments while they drive runs to completion (see
//! `tests/common/crash.rs` for the run and what is checked), then the
//! figures: cycles, kills, runs, sessions lost, tool calls doubled, tool
//! calls interrupted, model calls re-sent.
//!
//! `cargo bench --bench crash_loop`. Knobs: `BENCH_CRASH_CYCLES` (default
//! 5000), `BENCH_CRASH_SEED`, `BENCH_CRASH_KILL_MS` (a process lives at
//! most this long, default 120), `BENCH_STORE=postgres` (a real PostgreSQL
//! server started in a temporary directory instead of sled).

#[path = "../tests/common/mod.rs"]
mod common;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let cycles = knob("BENCH_CRASH_CYCLES", 5000) as usize;
    let kill_ms = knob("BENCH_CRASH_KILL_MS", 120);
    let seed = knob(
        "BENCH_CRASH_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(7),
    );
    println!("crash loop: {cycles} cycles, processes killed within {kill_ms} ms, seed {seed}");
    let mut sandbox = common::Sandbox::new();
    if std::env::var("BENCH_STORE").as_deref() == Ok("postgres") {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let Some(url) = rt.block_on(strands::store::postgres::testdb::database("crash_bench"))
        else {
            eprintln!("no PostgreSQL server could be started");
            std::process::exit(1);
        };
        println!("store: PostgreSQL (a real server in a temporary directory)");
        sandbox.store = std::path::PathBuf::from(url);
    } else {
        println!("store: sled (the embedded default)");
    }
    let f = common::crash::run_in(sandbox, seed, cycles, kill_ms);
    println!("| figure | value |\n|---|---|");
    println!("| cycles (processes started) | {} |", f.cycles);
    println!("| processes SIGKILLed | {} |", f.kills);
    println!(
        "| … at a random instant / within 5 ms of start (open, recovery) | {} / {} |",
        f.kills_random, f.kills_at_open
    );
    println!(
        "| … while sled wrote a snapshot / a model request in flight / a tool call in flight | {} / {} / {} |",
        f.kills_in_snapshot, f.kills_in_model_call, f.kills_in_tool_call
    );
    println!(
        "| … `strands serve` killed while starting / after start-up | {} / {} |",
        f.kills_serve_starting, f.kills_serve
    );
    println!("| stores left unopenable | {} |", f.stores_unopenable);
    println!(
        "| runs driven to completion | {} of {} |",
        f.runs_completed, f.runs
    );
    println!("| sessions lost | {} |", f.sessions_lost);
    println!("| tool calls run twice | {} |", f.tool_calls_doubled);
    println!(
        "| tool calls interrupted while running (not run again) | {} |",
        f.tool_calls_interrupted
    );
    println!(
        "| model requests re-sent after a crash (audited) | {} |",
        f.model_calls_resent
    );
    println!(
        "| model requests the model saw twice | {} |",
        f.model_requests_repeated
    );
    println!("| wall time | {:.1} s |", f.elapsed.as_secs_f64());
    let ok = f.sessions_lost == 0
        && f.stores_unopenable == 0
        && f.tool_calls_doubled == 0
        && f.runs_completed == f.runs
        && f.model_requests_repeated <= f.model_calls_resent;
    if !ok {
        eprintln!("FAILED: a guarantee did not hold (seed {seed})");
        std::process::exit(1);
    }
}
