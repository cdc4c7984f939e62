//! The `shell` tool.
//!
//! `shell` runs only when the spec enables it, as `sh -c` in the workspace,
//! in its own process group with a minimal environment (so that provider
//! keys and tokens in strands' own environment are not visible to it), and
//! the whole group is killed when the time limit is reached or the command
//! ends. It is not a sandbox: the command can reach anything the strands
//! process can; the gate in front of it (risk `critical`) is the defence.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::fs::workspace_root;
use super::str_arg;
use super::text::{cut_note, effective_timeout, human_duration, lossy_text};
use crate::tools::{ToolEnv, ToolResult};

/// The message `shell` returns when the spec has not enabled it.
pub const SHELL_DISABLED: &str = "shell is disabled: enable it with tools.shell: true";
/// The longest `timeout_seconds` a `shell` call may ask for.
pub const MAX_SHELL_TIMEOUT_SECS: u64 = 3600;

/// Environment variables a `shell` command inherits; nothing else is passed.
const SHELL_ENV: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];
/// How long output pipes may stay open after a shell command has ended.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Reads a pipe to its end, keeping the first `max` bytes and counting all.
async fn read_capped<R>(reader: Option<R>, max: usize) -> (Vec<u8>, u64)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut kept = Vec::new();
    let mut total = 0u64;
    let Some(mut reader) = reader else {
        return (kept, total);
    };
    let mut chunk = vec![0u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n as u64;
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..room.min(n)]);
            }
        }
    }
    (kept, total)
}

/// Kills every process in the group led by `pid` (the shell's).
#[cfg(unix)]
fn kill_group(pid: Option<u32>) {
    if let Some(pgid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
        if pgid > 1 {
            // SAFETY: kill(2) takes plain integers and touches no memory;
            // a negative pid names the process group the shell leads.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: Option<u32>) {}

/// The output of one stream for the result.
fn stream_section(name: &str, captured: Option<(Vec<u8>, u64)>) -> String {
    match captured {
        None => format!("--- {name} ---\n(unavailable: the stream stayed open)"),
        Some((_, 0)) => format!("--- {name} ---\n(empty)"),
        Some((kept, total)) => {
            let was_cut = total > kept.len() as u64;
            let mut s = format!("--- {name} ---\n{}", lossy_text(&kept, was_cut));
            if was_cut {
                s.push('\n');
                s.push_str(&cut_note(name, kept.len(), total, true));
            }
            s
        }
    }
}

pub(super) async fn shell(args: &Value, env: &ToolEnv) -> ToolResult {
    if !env.shell_enabled {
        return ToolResult::error(SHELL_DISABLED);
    }
    let Some(command) = str_arg(args, "command") else {
        return ToolResult::error("missing `command`");
    };
    let limit = match args.get("timeout_seconds").and_then(Value::as_u64) {
        Some(secs) => Duration::from_secs(secs.clamp(1, MAX_SHELL_TIMEOUT_SECS)),
        None => effective_timeout(env.timeout),
    };
    let workspace = env.workspace.clone();
    let root = match tokio::task::spawn_blocking(move || workspace_root(&workspace)).await {
        Ok(Ok(root)) => root,
        Ok(Err(e)) => return ToolResult::error(e),
        Err(e) => return ToolResult::error(format!("could not prepare the workspace: {e}")),
    };

    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .env_clear();
    for name in SHELL_ENV {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return ToolResult::error(format!("could not start `sh`: {e}")),
    };
    let pid = child.id();
    let max = env.max_bytes;
    let out_task = tokio::spawn(read_capped(child.stdout.take(), max));
    let err_task = tokio::spawn(read_capped(child.stderr.take(), max));

    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        Ok(Err(e)) => {
            kill_group(pid);
            let _ = child.kill().await;
            out_task.abort();
            err_task.abort();
            return ToolResult::error(format!("waiting for the command failed: {e}"));
        }
        Err(_) => None,
    };
    // On a timeout this stops the command; after a normal end it stops
    // background processes it left holding the output pipes.
    kill_group(pid);
    if status.is_none() {
        let _ = child.kill().await;
    }
    let stdout = tokio::time::timeout(PIPE_GRACE, out_task)
        .await
        .ok()
        .and_then(Result::ok);
    let stderr = tokio::time::timeout(PIPE_GRACE, err_task)
        .await
        .ok()
        .and_then(Result::ok);

    let (head, failed) = match status {
        None => (
            format!(
                "timed out after {}: the command was killed",
                human_duration(limit)
            ),
            true,
        ),
        Some(s) => match s.code() {
            Some(code) => (format!("exit code: {code}"), code != 0),
            None => {
                #[cfg(unix)]
                let how = {
                    use std::os::unix::process::ExitStatusExt;
                    s.signal()
                        .map(|sig| format!("terminated by signal {sig}"))
                        .unwrap_or_else(|| "terminated without an exit code".into())
                };
                #[cfg(not(unix))]
                let how = "terminated without an exit code".to_string();
                (how, true)
            }
        },
    };
    let out = format!(
        "{head}\n{}\n{}",
        stream_section("stdout", stdout),
        stream_section("stderr", stderr)
    );
    if failed {
        ToolResult::error(out)
    } else {
        ToolResult::ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fixture};
    use super::super::Builtin;
    use super::*;
    use serde_json::json;
    use std::time::Instant;

    // -- shell -----------------------------------------------------------

    #[tokio::test]
    async fn shell_is_disabled_by_default() {
        let f = fixture();
        let r = call(Builtin::Shell, json!({"command": "touch ran"}), &f.env).await;
        assert_eq!(r, ToolResult::error(SHELL_DISABLED));
        assert!(!f.ws().join("ran").exists());
    }

    #[tokio::test]
    async fn shell_runs_in_the_workspace() {
        let mut f = fixture();
        f.env.shell_enabled = true;
        let r = call(Builtin::Shell, json!({"command": "echo hi"}), &f.env).await;
        assert_eq!(
            r,
            ToolResult::ok("exit code: 0\n--- stdout ---\nhi\n\n--- stderr ---\n(empty)")
        );
        let r = call(
            Builtin::Shell,
            json!({"command": "pwd; touch made-here; echo oops >&2; exit 3"}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert!(r.content.starts_with("exit code: 3\n"), "{}", r.content);
        assert!(
            r.content.contains(&f.ws().display().to_string()),
            "{}",
            r.content
        );
        assert!(
            r.content.ends_with("--- stderr ---\noops\n"),
            "{}",
            r.content
        );
        assert!(f.ws().join("made-here").exists());
        // strands' own environment is not passed on.
        if std::env::var_os("CARGO_MANIFEST_DIR").is_some() {
            let r = call(
                Builtin::Shell,
                json!({"command": "echo \"${CARGO_MANIFEST_DIR:-unset}\""}),
                &f.env,
            )
            .await;
            assert!(r.content.contains("\nunset\n"), "{}", r.content);
        }
    }

    #[tokio::test]
    async fn shell_output_is_cut_and_time_limited() {
        let mut f = fixture();
        f.env.shell_enabled = true;
        let r = call(
            Builtin::Shell,
            json!({"command": "i=0; while [ $i -lt 500 ]; do printf 0123456789; i=$((i+1)); done"}),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        assert!(
            r.content
                .contains("\n[stdout cut: showing the first 1000 of 5000 bytes; 4000 bytes cut]"),
            "{}",
            r.content
        );

        let started = Instant::now();
        let r = call(
            Builtin::Shell,
            json!({"command": "echo started; sleep 30; echo never", "timeout_seconds": 1}),
            &f.env,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(r.is_error);
        assert!(
            r.content.starts_with(
                "timed out after 1s: the command was killed\n--- stdout ---\nstarted\n"
            ),
            "{}",
            r.content
        );
        assert!(!r.content.contains("never"));

        // The tool's default limit applies without timeout_seconds.
        f.env.timeout = Duration::from_millis(300);
        let started = Instant::now();
        let r = call(Builtin::Shell, json!({"command": "sleep 30"}), &f.env).await;
        assert!(started.elapsed() < Duration::from_secs(4));
        assert!(
            r.content.starts_with("timed out after 300ms"),
            "{}",
            r.content
        );

        // A background process holding the pipes does not hold the call.
        f.env.timeout = Duration::from_secs(5);
        let started = Instant::now();
        let r = call(
            Builtin::Shell,
            json!({"command": "sleep 30 & echo bg"}),
            &f.env,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        assert!(r.content.contains("stdout ---\nbg\n"), "{}", r.content);
    }
}
