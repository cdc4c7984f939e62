//! Tools an agent may call: the built-ins (`http_request`, `file_read`,
//! `file_write`, `list_files`, `delete_files`, `shell`, and strands-cli's
//! native tools such as `calculator`, `grep` or `web_fetch`), strands-cli's
//! `tools.http_executors`, and the tools of `tools.mcp` servers. Each tool has a JSON schema (checked before any
//! call runs, edited arguments included), metadata for the approval request
//! (what the call would do, whether it can be undone, a risk level), and a
//! `run` that never panics: failures are results the model reads.
//!
//! Whether a call waits for a human is decided by the approval policy in
//! `engine::tools`, not here.

pub mod builtin;
pub mod egress;
pub mod http_executor;
pub mod mcp;
pub mod schema;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::model::conversation::{digest, Risk, ToolResult};
use crate::provider::ToolSpec;

/// What tools may touch while they run.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    /// File tools are confined to this directory.
    pub workspace: PathBuf,
    /// Built by [`egress::client`]: resolves through the egress policy.
    pub http: reqwest::Client,
    /// Which destinations HTTP tools may reach.
    pub egress: std::sync::Arc<egress::Egress>,
    /// Largest response body / file content returned to the model.
    pub max_bytes: usize,
    /// Per-call time limit.
    pub timeout: Duration,
    /// `shell` runs only when the spec enables it.
    pub shell_enabled: bool,
    /// Where the web search tools send their requests, and their keys.
    pub search: builtin::SearchSettings,
    /// What `current_time` reads: the engine's clock.
    pub clock: crate::clock::SharedClock,
}

/// Who let a call run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The approval policy (or a trust), without asking anyone.
    Policy,
    /// A human approved this very call.
    Human,
}

/// Facts about a tool that the approval request shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMeta {
    pub reversible: bool,
    pub risk: Risk,
}

/// A callable tool.
#[derive(Debug, Clone)]
pub enum Tool {
    Builtin(builtin::Builtin),
    Http(http_executor::HttpExecutor),
    /// One tool of a connected MCP server.
    Mcp(mcp::McpTool),
}

impl Tool {
    pub fn name(&self) -> String {
        match self {
            Tool::Builtin(b) => b.name().to_string(),
            Tool::Http(h) => h.id.clone(),
            Tool::Mcp(m) => m.name.clone(),
        }
    }

    /// Name, description and JSON schema offered to the model.
    pub fn spec(&self) -> ToolSpec {
        match self {
            Tool::Builtin(b) => b.spec(),
            Tool::Http(h) => h.spec(),
            Tool::Mcp(m) => m.spec(),
        }
    }

    /// Whether this call changes state (writes, deletes, non-GET requests,
    /// any shell command, any MCP tool call — the engine cannot tell). State-changing built-in calls need approval
    /// unless the spec says otherwise.
    pub fn changes_state(&self, args: &Value) -> bool {
        match self {
            Tool::Builtin(b) => b.changes_state(args),
            Tool::Http(h) => h.changes_state(args),
            Tool::Mcp(m) => m.changes_state(args),
        }
    }

    /// Default reversibility and risk; the spec may override both.
    pub fn meta(&self, args: &Value) -> ToolMeta {
        match self {
            Tool::Builtin(b) => b.meta(args),
            Tool::Http(h) => h.meta(args),
            Tool::Mcp(m) => m.meta(args),
        }
    }

    /// One line saying what the call would do, for the approval request.
    pub fn describe(&self, args: &Value) -> String {
        match self {
            Tool::Builtin(b) => b.describe(args),
            Tool::Http(h) => h.describe(args),
            Tool::Mcp(m) => m.describe(args),
        }
    }

    /// Checks arguments against the tool's schema.
    pub fn validate(&self, args: &Value) -> Result<(), String> {
        schema::validate(&self.spec().parameters, args)
    }

    /// Runs the call. Never panics; errors come back as error results.
    /// `grant` says who let it run: a request that ran without a human
    /// follows redirects only to hosts the spec names.
    pub async fn run(&self, args: &Value, env: &ToolEnv, grant: Grant) -> ToolResult {
        if let Err(e) = self.validate(args) {
            return ToolResult::error(format!("invalid arguments: {e}"));
        }
        match self {
            Tool::Builtin(b) => b.run(args, env, grant).await,
            Tool::Http(h) => h.run(args, env).await,
            Tool::Mcp(m) => m.run(args, env).await,
        }
    }

    /// [`Tool::run`] for a caller that can ask a person: an MCP server's
    /// question comes back as [`mcp::Called::Asks`] (other tools never
    /// ask); `prior` holds the call's earlier questions and replies.
    pub async fn run_asking(
        &self,
        args: &Value,
        env: &ToolEnv,
        grant: Grant,
        prior: Option<crate::model::elicitation::Elicitation>,
    ) -> mcp::Called {
        match self {
            Tool::Mcp(m) => {
                if let Err(e) = self.validate(args) {
                    return mcp::Called::Done(ToolResult::error(format!("invalid arguments: {e}")));
                }
                m.run_asking(args, env, prior).await
            }
            other => mcp::Called::Done(other.run(args, env, grant).await),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digests_bind_name_and_arguments() {
        let a = digest(
            "delete_files",
            &json!({"paths": ["a", "b"], "recursive": false}),
        );
        let same = digest(
            "delete_files",
            &json!({"recursive": false, "paths": ["a", "b"]}),
        );
        assert_eq!(a, same, "key order does not matter");
        assert_ne!(
            a,
            digest(
                "file_write",
                &json!({"paths": ["a", "b"], "recursive": false})
            )
        );
        assert_ne!(
            a,
            digest(
                "delete_files",
                &json!({"paths": ["a", "c"], "recursive": false})
            )
        );
    }
}
