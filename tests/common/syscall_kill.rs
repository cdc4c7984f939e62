//! A deterministic kill point: SIGKILL a process right after it creates a
//! file whose name ends in a given suffix, before it writes a byte to it.
//!
//! Timed kills reach the instant between sled creating
//! `snap.<LSN>.generating` and writing it only by luck (microseconds apart;
//! the crash loop hits it now and then). This follows the process with
//! ptrace — every thread, every system call — and sends SIGKILL at the
//! first system call the creating thread makes after the `openat` that
//! created the file returned: the file exists and is empty, exactly what a
//! kill at the worst instant leaves. Linux on x86_64 only (syscall numbers
//! and registers); elsewhere [`kill_after_creating`] says it cannot.
//!
//! Waits only on the traced process's own process group, so children of
//! other tests running in the same harness are never reaped here.

use std::process::Command;

/// What happened to the traced process.
#[derive(Debug, PartialEq, Eq)]
pub enum Traced {
    /// Killed right after creating the file (its path).
    KilledAfterCreating(String),
    /// Exited without creating such a file.
    Exited,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub fn kill_after_creating(mut cmd: Command, suffix: &str) -> std::io::Result<Traced> {
    use std::collections::{HashMap, HashSet};
    use std::io::Error;
    use std::os::unix::fs::FileExt;
    use std::os::unix::process::CommandExt;

    cmd.process_group(0);
    // SAFETY: between fork and exec only async-signal-safe calls are
    // allowed; ptrace(PTRACE_TRACEME) is one system call.
    unsafe {
        cmd.pre_exec(|| {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == -1 {
                return Err(Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let wait = |status: &mut i32| -> libc::pid_t {
        // SAFETY: waits on this process group's tracees only; status is a
        // valid pointer.
        unsafe { libc::waitpid(-pid, status, libc::__WALL) }
    };
    let resume = |tid: libc::pid_t, sig: i32| {
        // SAFETY: tid is a stopped tracee of this thread.
        unsafe { libc::ptrace(libc::PTRACE_SYSCALL, tid, 0, sig as libc::c_long) };
    };
    // Reaps every thread of the process once it is dying: a traced
    // thread's exit is reported to this tracer, and the process itself
    // cannot be reaped before them.
    let drain = |child: &mut std::process::Child| {
        let mut status = 0;
        // SAFETY: as in `wait`.
        while unsafe { libc::waitpid(-pid, &mut status, libc::__WALL) } > 0 {}
        let _ = child.wait();
    };
    let mut status = 0;
    // The stop at exec.
    if wait(&mut status) != pid {
        let _ = child.kill();
        drain(&mut child);
        return Err(Error::other("the traced process did not stop at exec"));
    }
    // SAFETY: pid is stopped and traced by this thread.
    unsafe {
        libc::ptrace(
            libc::PTRACE_SETOPTIONS,
            pid,
            0,
            (libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_TRACECLONE | libc::PTRACE_O_EXITKILL)
                as libc::c_long,
        )
    };
    resume(pid, 0);
    let mut in_call: HashMap<libc::pid_t, bool> = HashMap::new();
    let mut known: HashSet<libc::pid_t> = HashSet::from([pid]);
    let mut created: HashMap<libc::pid_t, String> = HashMap::new();
    let mut kill_next: HashMap<libc::pid_t, String> = HashMap::new();
    loop {
        let tid = wait(&mut status);
        if tid == -1 {
            drain(&mut child);
            return Ok(Traced::Exited);
        }
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            if tid == pid {
                drain(&mut child);
                return Ok(Traced::Exited);
            }
            continue;
        }
        if !libc::WIFSTOPPED(status) {
            continue;
        }
        let sig = libc::WSTOPSIG(status);
        let mut inject = 0;
        if sig == libc::SIGTRAP | 0x80 {
            let entering = !in_call.get(&tid).copied().unwrap_or(false);
            in_call.insert(tid, entering);
            if entering {
                if let Some(path) = kill_next.remove(&tid) {
                    // SAFETY: signals the traced process (all threads).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    drain(&mut child);
                    return Ok(Traced::KilledAfterCreating(path));
                }
                // SAFETY: tid is in a syscall-entry stop; regs is written whole.
                let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
                let got = unsafe {
                    libc::ptrace(
                        libc::PTRACE_GETREGS,
                        tid,
                        0,
                        &mut regs as *mut libc::user_regs_struct,
                    )
                };
                if got == 0 && regs.orig_rax == libc::SYS_openat as u64 {
                    let mut buf = vec![0u8; 512];
                    let read = std::fs::File::open(format!("/proc/{tid}/mem"))
                        .and_then(|m| m.read_at(&mut buf, regs.rsi));
                    if let Ok(n) = read {
                        buf.truncate(n);
                        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
                        let path = String::from_utf8_lossy(&buf[..end]).into_owned();
                        if path.ends_with(suffix) {
                            created.insert(tid, path);
                        }
                    }
                }
            } else if let Some(path) = created.remove(&tid) {
                kill_next.insert(tid, path);
            }
        } else if sig == libc::SIGTRAP && (status >> 16) != 0 {
            // A ptrace event (a new thread): nothing to pass on.
        } else if sig == libc::SIGSTOP && known.insert(tid) {
            // A new thread's first stop.
        } else {
            known.insert(tid);
            inject = sig;
        }
        resume(tid, inject);
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub fn kill_after_creating(_cmd: Command, _suffix: &str) -> std::io::Result<Traced> {
    Err(std::io::Error::other(
        "the ptrace kill point needs Linux on x86_64",
    ))
}
