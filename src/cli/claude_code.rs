//! `strands claude-code setup`: the Claude Code configuration that sends
//! its tool calls to strands, for a given server and token — an HTTP hook
//! (`.claude/settings.local.json`: `PreToolUse`, or `PermissionRequest`
//! with `--event permission-request`) and the MCP server with its
//! permission prompt tool (`.claude/strands-mcp.json`, for `--mcp-config`).
//! Both wait as long as a host call's gate (`agent_hosts.timeout_minutes`,
//! and a minute for its timer) and block on failure: a hook that times
//! out or cannot reach strands never lets a call through.
//!
//! Printed by default; `--write DIR` writes both files under `DIR/.claude/`
//! (mode 0600: they hold the token) and keeps any other keys of an
//! existing settings file.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::Ctx;
use crate::error::{Error, Result};

#[derive(Subcommand, Debug)]
pub enum ClaudeCodeCommand {
    /// Print (or write) Claude Code's hook and MCP configuration for this server.
    Setup(SetupArgs),
}

#[derive(Args, Debug)]
pub struct SetupArgs {
    /// The server's URL (default: STRANDS_SERVER, else STRANDS_PUBLIC_URL).
    #[arg(long)]
    pub server: Option<String>,
    /// An operator token for Claude Code (default: STRANDS_TOKEN).
    #[arg(long)]
    pub token: Option<String>,
    /// Which hook: `pre-tool-use` (strands judges every call) or
    /// `permission-request` (only calls Claude Code would ask about).
    #[arg(long, default_value = "pre-tool-use", value_parser = ["pre-tool-use", "permission-request"])]
    pub event: String,
    /// Write `.claude/settings.local.json` and `.claude/strands-mcp.json` under this directory.
    #[arg(long)]
    pub write: Option<PathBuf>,
}

/// The settings file's hook and the MCP config, for `server` and `token`.
pub fn configs(server: &str, token: &str, event: &str, wait_secs: u64) -> (Value, Value) {
    let server = server.trim_end_matches('/');
    let auth = format!("Bearer {token}");
    let event = match event {
        "permission-request" => "PermissionRequest",
        _ => "PreToolUse",
    };
    let settings = json!({
        "hooks": {
            event: [{
                "matcher": "*",
                "hooks": [{
                    "type": "http",
                    "url": format!("{server}/api/v1/hooks/claude-code"),
                    "headers": {"Authorization": auth},
                    "timeout": wait_secs,
                    "onFailure": "block"
                }]
            }]
        }
    });
    let mcp = json!({
        "mcpServers": {
            "strands": {
                "type": "http",
                "url": format!("{server}{}", crate::mcp::PATH),
                "headers": {"Authorization": auth},
                "timeout": wait_secs.saturating_mul(1000)
            }
        }
    });
    (settings, mcp)
}

pub fn claude_code(ctx: &Ctx, cmd: ClaudeCodeCommand) -> Result<u8> {
    let ClaudeCodeCommand::Setup(a) = cmd;
    let get = |k: &str| ctx.env.get(k).filter(|v| !v.trim().is_empty());
    let server = a
        .server
        .clone()
        .or_else(|| get("STRANDS_SERVER"))
        .or_else(|| get("STRANDS_PUBLIC_URL"))
        .ok_or_else(|| {
            Error::Usage(
                "name the server: --server URL (or set STRANDS_SERVER / STRANDS_PUBLIC_URL)".into(),
            )
        })?;
    let parsed = url::Url::parse(server.trim())
        .map_err(|e| Error::Usage(format!("--server `{server}` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::Usage(format!(
            "--server `{server}` must be an http or https URL"
        )));
    }
    let token = a
        .token
        .clone()
        .or_else(|| get("STRANDS_TOKEN"))
        .ok_or_else(|| {
            Error::Usage(
                "name the token Claude Code uses: --token TOKEN (an operator token: `strands tokens create NAME --role operator`), or set STRANDS_TOKEN".into(),
            )
        })?;
    let minutes = ctx.settings.service.agent_hosts.timeout_minutes;
    let wait_secs = minutes.saturating_add(1).saturating_mul(60);
    let (settings, mcp) = configs(server.trim(), token.trim(), &a.event, wait_secs);
    match &a.write {
        None => {
            println!("# .claude/settings.local.json (the hook; keep it out of version control: it holds the token)");
            println!("{}", pretty(&settings));
            println!();
            println!("# .claude/strands-mcp.json (the MCP server and its permission prompt tool)");
            println!("{}", pretty(&mcp));
            println!();
            println!("# then, for example:");
            println!("#   claude -p \"…\" --mcp-config .claude/strands-mcp.json --permission-prompt-tool mcp__strands__approve_tool_call");
        }
        Some(dir) => {
            let claude = dir.join(".claude");
            std::fs::create_dir_all(&claude)
                .map_err(|e| Error::Usage(format!("cannot make {}: {e}", claude.display())))?;
            let settings_path = claude.join("settings.local.json");
            let merged = merge(&settings_path, settings)?;
            write_private(&settings_path, &pretty(&merged))?;
            let mcp_path = claude.join("strands-mcp.json");
            write_private(&mcp_path, &pretty(&mcp))?;
            println!("wrote {}", settings_path.display());
            println!("wrote {}", mcp_path.display());
            println!(
                "Claude Code in {} now asks strands before its tool calls (hook timeout {wait_secs} s, blocking on failure).",
                dir.display()
            );
        }
    }
    Ok(super::exit::OK)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// An existing settings file with our hook set (its other keys kept).
fn merge(path: &Path, ours: Value) -> Result<Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(ours);
    };
    let mut theirs: Value = serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!(
            "{} is not JSON ({e}); fix or remove it first",
            path.display()
        ))
    })?;
    let Some(obj) = theirs.as_object_mut() else {
        return Ok(ours);
    };
    let hooks = obj.entry("hooks").or_insert_with(|| json!({}));
    if let (Some(h), Some(new)) = (hooks.as_object_mut(), ours["hooks"].as_object()) {
        for (event, entries) in new {
            h.insert(event.clone(), entries.clone());
        }
    }
    Ok(theirs)
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    o.mode(0o600);
    let mut f = o
        .open(path)
        .map_err(|e| Error::Usage(format!("cannot write {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.write_all(b"\n"))
        .map_err(|e| Error::Usage(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::configs;

    #[test]
    fn the_hook_blocks_on_failure_and_waits_as_long_as_the_gate() {
        let (settings, mcp) = configs("http://127.0.0.1:3000/", "stk_x", "pre-tool-use", 660);
        let hook = &settings["hooks"]["PreToolUse"][0]["hooks"][0];
        assert_eq!(hook["type"], "http");
        assert_eq!(
            hook["url"],
            "http://127.0.0.1:3000/api/v1/hooks/claude-code"
        );
        assert_eq!(hook["onFailure"], "block");
        assert_eq!(hook["timeout"], 660);
        assert_eq!(hook["headers"]["Authorization"], "Bearer stk_x");
        let server = &mcp["mcpServers"]["strands"];
        assert_eq!(server["url"], "http://127.0.0.1:3000/mcp");
        assert_eq!(server["timeout"], 660_000);
        let (settings, _) = configs("http://h", "t", "permission-request", 60);
        assert!(settings["hooks"]["PermissionRequest"].is_array());
    }
}
