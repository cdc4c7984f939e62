//! The agent SDKs people run, as the tests find them: the Python venv and
//! the TypeScript example's `node_modules` that `clients/setup.sh` makes
//! (pinned strands-agents, langgraph, mcp, @strands-agents/sdk, and this
//! repository's own `strands-hitl` packages, installed from what they
//! build). A test needing one skips, saying so, when it is missing —
//! unless `STRANDS_REQUIRE_AGENT_SDKS` is set (CI sets it), where a
//! missing SDK fails the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where `clients/setup.sh` puts the venv and the built packages.
pub fn out_dir() -> PathBuf {
    std::env::var_os("STRANDS_AGENT_SDKS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/agent-sdks"))
}

fn missing(what: &str) -> bool {
    assert!(
        std::env::var_os("STRANDS_REQUIRE_AGENT_SDKS").is_none(),
        "{what} is missing and STRANDS_REQUIRE_AGENT_SDKS is set (run clients/setup.sh)"
    );
    eprintln!("skipped: {what} is missing (run clients/setup.sh; STRANDS_REQUIRE_AGENT_SDKS=1 requires it)");
    false
}

/// The venv's python with strands-agents, langgraph, mcp and strands-hitl,
/// or `None` (the test skips) when `clients/setup.sh` has not run.
pub fn python() -> Option<PathBuf> {
    let py = out_dir().join("venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import strands, langgraph, mcp, strands_hitl"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok || !missing("the agent SDKs' Python venv (target/agent-sdks/venv)") {
        return ok.then_some(py);
    }
    None
}

/// The TypeScript examples' directory, with `@strands-agents/sdk` and
/// `strands-hitl` installed, or `None` (the test skips).
pub fn typescript() -> Option<PathBuf> {
    let dir = root().join("examples/agents/typescript");
    let ok = dir.join("node_modules/@strands-agents/sdk").is_dir()
        && dir
            .join("node_modules/strands-hitl/dist/index.js")
            .is_file()
        && Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if ok || !missing("the TypeScript agent SDK (examples/agents/typescript/node_modules)") {
        return ok.then_some(dir);
    }
    None
}

/// An example under `examples/agents/`.
pub fn example(path: &str) -> PathBuf {
    root().join("examples/agents").join(path)
}

/// A program run with `env` added to a clean-ish environment (no model
/// or strands settings of the machine leak in), in `cwd`.
pub fn command(program: &Path, args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(program);
    c.args(args).current_dir(cwd);
    for k in [
        "STRANDS_SERVER",
        "STRANDS_TOKEN",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "AWS_REGION",
        "AWS_PROFILE",
    ] {
        c.env_remove(k);
    }
    c.env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // The SDKs' telemetry stays off the network.
        .env("OTEL_SDK_DISABLED", "true")
        .env("STRANDS_OTEL_ENABLE_CONSOLE_EXPORT", "false");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Runs it to its end.
pub fn run(mut c: Command) -> Ran {
    let out = c.output().expect("start the agent");
    Ran::of(out)
}

/// Starts it; its output is read when it ends (see [`Ran::wait`]).
pub fn spawn(mut c: Command) -> Child {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the agent")
}

/// What an agent process did.
#[derive(Debug, Clone)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn of(out: Output) -> Ran {
        Ran {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Waits for `child` to end.
    pub fn wait(child: Child) -> Ran {
        Ran::of(child.wait_with_output().expect("the agent's output"))
    }

    /// Both streams, for a failure message.
    pub fn both(&self) -> String {
        format!(
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "{}", self.both());
        self
    }
}
