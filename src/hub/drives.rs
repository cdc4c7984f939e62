//! Where `strands serve` drives runs: a runtime of their own, whose threads
//! the operating system schedules after the service's (nice +10).
//!
//! A click is acknowledged once its answer is recorded; carrying the answer
//! out (the resume: model calls, checkpoints, messages) can wait. When the
//! machine is busy — a burst of clicks, each starting a resume, on two
//! cores — running both on the same threads makes every acknowledgement
//! wait behind the resumes' work. With the drives here, the service's
//! workers (HTTP, Slack, the API) take the CPU first and the resumes queue
//! for what is left; the store's blocking calls made by a drive run on
//! this runtime's threads too ([`crate::store::sled`]'s `off_worker`), at
//! the same lower priority. Nothing is lost by waiting: a recorded answer
//! is durable before the click is acknowledged.
//!
//! The runtime is started once per process, on first use, and lives as
//! long as the process (a runtime may not be dropped from async code).

use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime};

/// How much lower than the service's threads the drives' threads run.
const NICE: i32 = 10;

static DRIVES: OnceLock<Option<Runtime>> = OnceLock::new();

/// The drives' runtime; `None` when it cannot be started (drives then run
/// on the caller's runtime, as before).
pub fn handle() -> Option<Handle> {
    DRIVES
        .get_or_init(|| match build() {
            Ok(rt) => Some(rt),
            Err(e) => {
                tracing::warn!(
                    "runs are driven on the service's threads: cannot start their own runtime: {e}"
                );
                None
            }
        })
        .as_ref()
        .map(|rt| rt.handle().clone())
}

fn build() -> std::io::Result<Runtime> {
    // Relative to the thread starting the runtime (the service's nice),
    // the same for every thread of it, whichever thread spawns them.
    let nice = thread_nice().map(|n| (n + NICE).min(19));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .thread_name("strands-drive")
        .on_thread_start(move || {
            if let Some(n) = nice {
                set_thread_nice(n);
            }
        })
        .enable_all()
        .build()
}

/// The calling thread's nice value (Linux: per thread).
#[cfg(target_os = "linux")]
fn thread_nice() -> Option<i32> {
    // SAFETY: plain system calls on the calling thread's own id;
    // getpriority's -1 is a valid nice value, so errno tells failures.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        *libc::__errno_location() = 0;
        let n = libc::getpriority(libc::PRIO_PROCESS, tid);
        (*libc::__errno_location() == 0).then_some(n)
    }
}

#[cfg(not(target_os = "linux"))]
fn thread_nice() -> Option<i32> {
    None
}

/// Sets the calling thread's nice value (only ever raised: lower priority).
#[cfg(target_os = "linux")]
fn set_thread_nice(n: i32) {
    // SAFETY: a plain system call on the calling thread's own id.
    let done = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, n)
    };
    if done != 0 {
        tracing::debug!(
            "cannot lower a drive thread's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn set_thread_nice(_: i32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn drives_run_below_the_service() {
        let here = thread_nice().expect("nice");
        let handle = handle().expect("the drives' runtime starts");
        let (tx, rx) = std::sync::mpsc::channel();
        handle.spawn(async move {
            let worker = thread_nice().expect("nice");
            // And the store's blocking calls made from a drive.
            let blocking = tokio::task::block_in_place(thread_nice).expect("nice");
            let _ = tx.send((worker, blocking));
        });
        let (worker, blocking) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the drive ran");
        let want = (here + NICE).min(19);
        assert_eq!(worker, want, "a drive's worker thread");
        assert_eq!(blocking, want, "a drive's blocking call");
        assert_eq!(
            thread_nice().expect("nice"),
            here,
            "the caller's thread is left as it was"
        );
    }
}
