//! What the benches print with: knobs read from the environment, the
//! machine they ran on, nearest-rank percentiles and durations in the unit
//! that reads best, and the `[bench-id:N]` marker the bench workflow's
//! texts carry.

use std::time::Duration;

/// The integer knob `name`, or `default` when unset.
pub fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a non-negative integer")),
        Err(_) => default,
    }
}

/// The CPU's model name, as `/proc/cpuinfo` gives it.
/// Under `BENCH_STORE=postgres`: a fresh database `name` on a server
/// started from Debian's `postgresql` in a temporary directory.
pub fn bench_postgres(name: &str) -> Option<String> {
    std::env::var("BENCH_STORE")
        .is_ok_and(|v| v == "postgres")
        .then(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(strands::store::postgres::testdb::database(name))
                .expect("BENCH_STORE=postgres needs Debian's postgresql installed")
        })
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The `<n>` of the first `[bench-id:<n>]` in `text`.
pub fn marker(text: &str) -> Option<usize> {
    let tag = "[bench-id:";
    let at = text.find(tag)? + tag.len();
    let rest = &text[at..];
    let end = rest.find(']')?;
    rest[..end].parse().ok()
}

/// `d` in µs, ms or s.
pub fn fmt_d(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// Nearest-rank percentiles of some durations.
pub struct Stats {
    pub n: usize,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
}

/// The percentiles of `xs`, or `None` when there are none.
pub fn stats(mut xs: Vec<Duration>) -> Option<Stats> {
    if xs.is_empty() {
        return None;
    }
    xs.sort();
    let rank = |q: f64| {
        let r = (q * xs.len() as f64).ceil() as usize;
        xs[r.clamp(1, xs.len()) - 1]
    };
    Some(Stats {
        n: xs.len(),
        p50: rank(0.50),
        p90: rank(0.90),
        p99: rank(0.99),
        max: xs[xs.len() - 1],
    })
}

/// One request sent by [`fire`].
pub struct Shot {
    /// Which request (0..n).
    pub i: usize,
    pub sent: std::time::Instant,
    /// How far after its scheduled instant it was sent.
    pub late: Duration,
    pub took: Duration,
    pub status: Option<u16>,
    pub body: String,
    pub error: Option<String>,
}

/// Sends requests `0..n` with `send`, request i at `t0 + i / rate` (open
/// loop: from `clients` threads, so a slow answer never delays a later
/// send); the shots in index order.
pub fn fire(
    n: usize,
    rate: f64,
    clients: usize,
    send: impl Fn(usize) -> std::io::Result<super::service::HttpReply> + Sync,
) -> Vec<Shot> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;
    let period = Duration::from_secs_f64(1.0 / rate);
    let next = AtomicUsize::new(0);
    let shots = std::sync::Mutex::new(Vec::with_capacity(n));
    let t0 = Instant::now() + Duration::from_millis(100);
    std::thread::scope(|s| {
        for _ in 0..clients.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let due = t0 + period * i as u32;
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                let sent = Instant::now();
                let res = send(i);
                let took = sent.elapsed();
                let (status, body, error) = match res {
                    Ok(r) => (Some(r.status), r.body, None),
                    Err(e) => (None, String::new(), Some(e.to_string())),
                };
                shots.lock().expect("shots").push(Shot {
                    i,
                    sent,
                    late: sent.saturating_duration_since(due),
                    took,
                    status,
                    body,
                    error,
                });
            });
        }
    });
    let mut shots = shots.into_inner().expect("shots");
    shots.sort_by_key(|s| s.i);
    shots
}
