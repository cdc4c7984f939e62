//! What the built-in tools' unit tests share: a workspace with an outside
//! directory next to it, an egress policy that lets the tests reach their
//! local server, and a way to call a tool as the engine does.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::Builtin;
use crate::tools::{Grant, Tool, ToolEnv, ToolResult};

/// The egress policy of the HTTP tools' unit tests: their servers listen
/// on 127.0.0.1, which the default policy refuses.
pub(crate) fn loopback_allowed() -> std::sync::Arc<crate::tools::egress::Egress> {
    let rule = crate::tools::egress::Rule::parse("127.0.0.1").expect("a rule");
    std::sync::Arc::new(crate::tools::egress::Egress::new(
        vec![rule],
        &[],
        Vec::new(),
    ))
}

pub(super) struct Fixture {
    _tmp: tempfile::TempDir,
    pub(super) base: PathBuf,
    pub(super) env: ToolEnv,
}

impl Fixture {
    pub(super) fn ws(&self) -> PathBuf {
        self.env.workspace.clone()
    }
}

/// A workspace (`<tmp>/ws`, not created yet) and an `<tmp>/outside`
/// directory holding `secret.txt`.
pub(super) fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = fs::canonicalize(tmp.path()).expect("canonical tmp");
    fs::create_dir_all(base.join("outside")).expect("outside");
    fs::write(base.join("outside/secret.txt"), "top secret").expect("secret");
    let env = ToolEnv {
        workspace: base.join("ws"),
        http: crate::tools::egress::client(&loopback_allowed()).expect("client"),
        egress: loopback_allowed(),
        max_bytes: 1000,
        timeout: Duration::from_secs(5),
        shell_enabled: false,
        search: Default::default(),
        clock: std::sync::Arc::new(crate::clock::FixedClock::at(crate::clock::test_epoch())),
    };
    Fixture {
        _tmp: tmp,
        base,
        env,
    }
}

pub(super) async fn call(b: Builtin, args: Value, env: &ToolEnv) -> ToolResult {
    // Through `Tool::run`, so that the schema is checked as in real use.
    Tool::Builtin(b).run(&args, env, Grant::Human).await
}

pub(super) fn outside_untouched(f: &Fixture) {
    let mut names: Vec<String> = fs::read_dir(f.base.join("outside"))
        .expect("outside")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["secret.txt".to_string()]);
    assert_eq!(
        fs::read_to_string(f.base.join("outside/secret.txt")).expect("secret"),
        "top secret"
    );
}
