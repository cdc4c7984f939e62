//! Validation of the top-level `tools` section: `tools.network.allow`,
//! `tools.python` (strands-cli's native tools — `calculator`, `file_read`,
//! also written `strands_cli.tools.calculator` or `strands_tools.file_read`
//! — map to the built-ins of those names; any other Python callable,
//! `python_exec` first, is refused at its line), `http_executors`, `mcp`
//! servers (a command or a URL, never both) and the approval policy every
//! tool entry may carry.
//!
//! Nothing here starts a server or opens a connection: ids, URLs, commands,
//! header names and environment names are checked as text. Header and
//! environment values may be secrets and never appear in a message.

use serde_json::Value;
use serde_saphyr::Spanned;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::raw;
use super::{at, Validator};
use crate::spec::{
    HttpExecutorSpec, McpServerSpec, McpTransport, ToolPolicy, ToolsConfig, MCP_ID_MAX,
};

impl Validator {
    /// The top-level `tools` section: executors, MCP servers, workspace,
    /// shell switch; `tools.python` entries that name a built-in become
    /// [`ToolsConfig::python_tools`], other Python callables are refused.
    pub(super) fn tools_section(&mut self, t: Option<&raw::Tools>) -> ToolsConfig {
        let mut cfg = ToolsConfig {
            workspace: PathBuf::from(
                t.and_then(|t| t.workspace.clone())
                    .unwrap_or_else(|| "workspace".into()),
            ),
            shell: t.and_then(|t| t.shell).unwrap_or(false),
            timeout_secs: t.and_then(|t| t.timeout_seconds).unwrap_or(30).max(1),
            max_output_bytes: t
                .and_then(|t| t.max_output_bytes)
                .unwrap_or(65_536)
                .max(256),
            http_executors: Vec::new(),
            mcp: Vec::new(),
            network_allow: Vec::new(),
            python_tools: Vec::new(),
            jit_tools: Vec::new(),
            tavily_at: None,
        };
        let Some(t) = t else { return cfg };
        for entry in t.network.iter().flat_map(|n| n.allow.iter().flatten()) {
            match crate::spec::network::Rule::parse(&entry.value) {
                Ok(rule) => cfg.network_allow.push(rule),
                Err(why) => self.error(
                    at(entry),
                    format!("tools.network.allow: {why}"),
                    Some(
                        "for example `api.internal`, `*.corp.example`, `10.0.0.0/8` or `127.0.0.1`"
                            .into(),
                    ),
                ),
            }
        }
        let mut python_at = Vec::new();
        for p in t.python.iter().flatten() {
            let callable = python_callable(&p.value);
            python_at.push((builtin_for_callable(&callable), at(p)));
            match builtin_for_callable(&callable) {
                Some("shell") if !cfg.shell => self.error(
                    at(p),
                    format!("tools.python entry `{callable}` is the shell, which is off"),
                    Some("enable it with top-level `tools: {shell: true}` (shell calls always need approval)".into()),
                ),
                Some(b) => {
                    if b == "tavily_search" {
                        self.tavily_at.get_or_insert(at(p));
                    }
                    if !cfg.python_tools.iter().any(|t| t == b) {
                        cfg.python_tools.push(b.to_string());
                    }
                }
                None => {
                    let (message, hint) = python_refusal(&callable);
                    self.error(at(p), format!("tools.python entry {message}"), Some(hint));
                }
            }
        }
        let mut seen = BTreeSet::new();
        for h in t.http_executors.iter().flatten() {
            let id = h.value.id.value.trim().to_string();
            if reserved(&id) || !seen.insert(id.clone()) {
                self.error(
                    at(&h.value.id),
                    format!("http executor id `{id}` is used twice or names a reserved built-in tool ({})", crate::model::RESERVED_TOOLS.join(", ")),
                    None,
                );
            }
            let url = h.value.base_url.value.trim();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                self.error(
                    at(&h.value.base_url),
                    format!("base_url `{url}` is not an http(s) URL"),
                    None,
                );
            }
            let policy = self.policy(
                at(h),
                &format!("http executor `{id}`"),
                PolicyFields {
                    require_approval: h.value.require_approval,
                    approval_prompt: h.value.approval_prompt.clone(),
                    approval_condition: h.value.approval_condition.clone(),
                    destructive: h.value.destructive,
                    reversible: h.value.reversible,
                    risk: h.value.risk.clone(),
                },
            );
            cfg.http_executors.push(HttpExecutorSpec {
                id,
                base_url: url.trim_end_matches('/').to_string(),
                headers: h.value.headers.clone().unwrap_or_default(),
                timeout_secs: h
                    .value
                    .timeout
                    .or(h.value.timeout_ms.map(|ms| ms.div_ceil(1000).max(1))),
                description: h.value.description.clone(),
                policy,
            });
        }
        for m in t.mcp.iter().flatten() {
            if let Some(server) = self.mcp_server(m, &mut seen) {
                cfg.mcp.push(server);
            }
        }
        for (name, loc) in python_at {
            if let Some(name) = name.filter(|n| shadowed(&cfg, n)) {
                self.error(
                    loc,
                    format!("tools.python names the native tool `{name}`, and an http executor or MCP server of the spec has that id"),
                    Some(format!("rename the executor or server, or remove `{name}` here")),
                );
            }
        }
        cfg
    }

    /// One `tools.mcp` entry: a child process (`command`, `args`, `env`) or
    /// a Streamable HTTP URL (`url`, `headers`), never both. Header and
    /// environment values may be secrets and are never part of a message.
    fn mcp_server(
        &mut self,
        m: &Spanned<raw::McpServer>,
        seen: &mut BTreeSet<String>,
    ) -> Option<McpServerSpec> {
        let raw = &m.value;
        let id = raw.id.value.trim().to_string();
        let mut ok = true;
        if let Err(why) = check_mcp_id(&id) {
            self.error(
                at(&raw.id),
                format!("MCP server id `{id}` {why}"),
                Some(format!(
                    "an MCP server id has letters, digits, `-` and single `_` (at most {MCP_ID_MAX} characters): its tools are named `{{id}}__{{tool}}`"
                )),
            );
            ok = false;
        } else if reserved(&id) || !seen.insert(id.clone()) {
            self.error(
                at(&raw.id),
                format!("MCP server id `{id}` is used twice, or names a built-in tool or an http executor"),
                None,
            );
            ok = false;
        }
        let policy = self.policy(
            at(m),
            &format!("MCP server `{id}`"),
            PolicyFields {
                require_approval: raw.require_approval,
                approval_prompt: raw.approval_prompt.clone(),
                approval_condition: raw.approval_condition.clone(),
                destructive: raw.destructive,
                reversible: raw.reversible,
                risk: raw.risk.clone(),
            },
        );
        let transport = match (&raw.command, &raw.url) {
            (Some(command), None) => {
                if let Some(h) = &raw.headers {
                    self.error(
                        at(h),
                        format!("MCP server `{id}` runs a command; `headers` is for `url` servers"),
                        Some("pass settings to a command with `env`".into()),
                    );
                    ok = false;
                }
                self.mcp_command(&id, command, raw.args.as_ref(), raw.env.as_ref())
            }
            (None, Some(url)) => {
                if raw.args.is_some() || raw.env.is_some() {
                    self.error(
                        at(m),
                        format!("MCP server `{id}` has a `url`; `args` and `env` are for `command` servers"),
                        None,
                    );
                    ok = false;
                }
                self.mcp_url(&id, url, raw.headers.as_ref())
            }
            (Some(_), Some(url)) => {
                self.error(
                    at(url),
                    format!("MCP server `{id}` has both `command` and `url`"),
                    Some(
                        "an MCP server is a command (stdio) or a URL (Streamable HTTP), not both"
                            .into(),
                    ),
                );
                None
            }
            (None, None) => {
                self.error(
                    at(m),
                    format!("MCP server `{id}` has neither `command` nor `url`"),
                    Some("add `command: PROGRAM` (with `args`, `env`) or `url: https://...` (with `headers`)".into()),
                );
                None
            }
        };
        let transport = transport?;
        ok.then(|| McpServerSpec {
            id,
            transport,
            description: raw.description.clone(),
            policy,
        })
    }

    /// `command` (split into words when `args` is absent), `args`, `env`.
    fn mcp_command(
        &mut self,
        id: &str,
        command: &Spanned<String>,
        args: Option<&Vec<String>>,
        env: Option<&Spanned<BTreeMap<String, Value>>>,
    ) -> Option<McpTransport> {
        let text = command.value.trim();
        let (program, args) = match args {
            Some(args) => (text.to_string(), args.clone()),
            None => match shell_words::split(text) {
                Ok(mut words) if !words.is_empty() => {
                    let program = words.remove(0);
                    (program, words)
                }
                Ok(_) => (String::new(), Vec::new()),
                Err(e) => {
                    self.error(
                        at(command),
                        format!("the command of MCP server `{id}` cannot be split into words: {e}"),
                        Some("give the program in `command` and its arguments in `args`".into()),
                    );
                    return None;
                }
            },
        };
        if program.is_empty() {
            self.error(
                at(command),
                format!("the command of MCP server `{id}` is empty"),
                None,
            );
            return None;
        }
        let mut vars = BTreeMap::new();
        let mut ok = true;
        if let Some(env) = env {
            for (k, v) in &env.value {
                let value = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => {
                        self.error(
                            at(env),
                            format!(
                                "env `{k}` of MCP server `{id}` is not a string, number or boolean"
                            ),
                            None,
                        );
                        ok = false;
                        continue;
                    }
                };
                if k.is_empty() || k.contains('=') || k.contains('\0') || value.contains('\0') {
                    self.error(
                        at(env),
                        format!(
                            "env `{k}` of MCP server `{id}` is not a valid environment variable"
                        ),
                        Some(
                            "names are non-empty without `=`; neither names nor values contain NUL"
                                .into(),
                        ),
                    );
                    ok = false;
                    continue;
                }
                vars.insert(k.clone(), value);
            }
        }
        ok.then_some(McpTransport::Stdio {
            command: program,
            args,
            env: vars,
        })
    }

    /// `url` (http or https) and `headers` (names checked; values are
    /// secrets and never quoted).
    fn mcp_url(
        &mut self,
        id: &str,
        url: &Spanned<String>,
        headers: Option<&Spanned<BTreeMap<String, String>>>,
    ) -> Option<McpTransport> {
        let text = url.value.trim();
        let parsed = url::Url::parse(text).ok();
        if !parsed
            .as_ref()
            .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        {
            self.error(
                at(url),
                format!("the url of MCP server `{id}` is not an http(s) URL"),
                None,
            );
            return None;
        }
        let mut ok = true;
        let headers = headers
            .map(|h| (at(h), h.value.clone()))
            .unwrap_or_default();
        for (name, value) in &headers.1 {
            let bad_name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err();
            let reserved = MCP_RESERVED_HEADERS
                .iter()
                .any(|r| r.eq_ignore_ascii_case(name.trim()));
            let bad_value = reqwest::header::HeaderValue::from_str(value).is_err();
            let why = if bad_name {
                Some("is not a valid header name".to_string())
            } else if reserved {
                Some("is set by the MCP transport itself".to_string())
            } else if bad_value {
                Some(
                    "has a value that is not a valid header value (the value is not shown)"
                        .to_string(),
                )
            } else {
                None
            };
            if let Some(why) = why {
                self.error(
                    headers.0,
                    format!("header `{name}` of MCP server `{id}` {why}"),
                    None,
                );
                ok = false;
            }
        }
        ok.then(|| McpTransport::Http {
            url: text.to_string(),
            headers: headers.1,
        })
    }

    pub(super) fn policy(&mut self, loc: (u32, u32), what: &str, f: PolicyFields) -> ToolPolicy {
        for (key, t) in [
            ("approval_prompt", &f.approval_prompt),
            ("approval_condition", &f.approval_condition),
        ] {
            if let Some(t) = t {
                let res = if key == "approval_condition" {
                    self.templates.check_condition(t)
                } else {
                    self.templates.check(t)
                };
                if let Err(e) = res {
                    self.error(
                        loc,
                        format!("{key} of {what}: {}", e.message),
                        Some(
                            "templates see `args` (the call's arguments), `tool` and `agent`"
                                .into(),
                        ),
                    );
                }
            }
        }
        let risk = match f.risk.as_deref().map(|r| (r, crate::model::Risk::parse(r))) {
            None => None,
            Some((_, Some(r))) => Some(r),
            Some((r, None)) => {
                self.error(
                    loc,
                    format!("risk `{r}` of {what} is not low, medium, high or critical"),
                    None,
                );
                None
            }
        };
        ToolPolicy {
            require_approval: f.require_approval,
            approval_prompt: f.approval_prompt,
            approval_condition: f.approval_condition,
            destructive: f.destructive.unwrap_or(false),
            reversible: f.reversible,
            risk,
        }
    }
}

#[derive(Default)]
pub(super) struct PolicyFields {
    pub require_approval: Option<bool>,
    pub approval_prompt: Option<String>,
    pub approval_condition: Option<String>,
    pub destructive: Option<bool>,
    pub reversible: Option<bool>,
    pub risk: Option<String>,
}

/// The agent's entry wins; the executor's declaration fills the gaps.
pub(super) fn merge_policy(agent: ToolPolicy, base: &ToolPolicy) -> ToolPolicy {
    ToolPolicy {
        require_approval: agent.require_approval.or(base.require_approval),
        approval_prompt: agent
            .approval_prompt
            .or_else(|| base.approval_prompt.clone()),
        approval_condition: agent
            .approval_condition
            .or_else(|| base.approval_condition.clone()),
        destructive: agent.destructive || base.destructive,
        reversible: agent.reversible.or(base.reversible),
        risk: agent.risk.or(base.risk),
    }
}

/// The `callable` of a `tools.python` entry (a string or `{callable: ...}`).
fn python_callable(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_string(),
        Value::Object(o) => o
            .get("callable")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .trim()
            .to_string(),
        other => other.to_string(),
    }
}

/// The built-in a tool reference names: `calculator`, or strands-cli's
/// `strands_cli.tools.calculator`, or `strands_tools.file_read`.
pub(super) fn builtin_for_callable(callable: &str) -> Option<&'static str> {
    let name = callable
        .strip_prefix("strands_cli.tools.")
        .or_else(|| callable.strip_prefix("strands_tools."))
        .unwrap_or(callable);
    builtin(name)
}

/// Why a Python callable cannot be used (`` `X` is ... ``), with a hint.
pub(super) fn python_refusal(callable: &str) -> (String, String) {
    let short = callable.rsplit('.').next().unwrap_or(callable);
    if short == "python_exec" {
        return (
            format!("`{callable}` runs Python code the model writes; strands runs no model-written code"),
            "use `calculator` for arithmetic, or an http executor or MCP server for other work"
                .into(),
        );
    }
    (
        format!("`{callable}` is a Python callable; strands cannot run Python tools"),
        format!(
            "use a built-in tool ({}), an http executor or an MCP server",
            crate::model::BUILTIN_TOOLS.join(", ")
        ),
    )
}

/// Whether no executor or MCP server may be named `name`.
fn reserved(name: &str) -> bool {
    crate::model::RESERVED_TOOLS.contains(&name)
}

/// Whether the spec's own executor or MCP server replaces the native tool
/// `name`.
pub(super) fn shadowed(cfg: &ToolsConfig, name: &str) -> bool {
    cfg.http_executors.iter().any(|h| h.id == name) || cfg.mcp.iter().any(|m| m.id == name)
}

/// The built-in tool called `name`, if there is one.
pub(super) fn builtin(name: &str) -> Option<&'static str> {
    crate::model::BUILTIN_TOOLS
        .iter()
        .copied()
        .find(|b| *b == name)
}

/// Request headers the MCP transport sets itself.
const MCP_RESERVED_HEADERS: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Why an MCP server id cannot be used, if it cannot.
fn check_mcp_id(id: &str) -> std::result::Result<(), String> {
    if id.is_empty() {
        return Err("is empty".into());
    }
    if id.chars().count() > MCP_ID_MAX {
        return Err(format!("is longer than {MCP_ID_MAX} characters"));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err("has characters other than letters, digits, `-` and `_`".into());
    }
    if id.contains("__") || id.ends_with('_') {
        return Err("contains `__` or ends with `_`".into());
    }
    Ok(())
}
