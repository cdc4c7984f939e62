//! Validation of `agents.<id>`: the prompt template, the provider (one this
//! build lacks is a warning, refused only when a run needs it), inference
//! settings, the agent's `tools` list with each tool's approval policy, and
//! `allowed_tools` (which must name the agent's own tools, MCP tools as
//! `{server}__{tool}`).
//!
//! What a tool name may resolve to (built-ins, http executors, MCP servers)
//! is decided by the top-level `tools` section, checked first in `tools.rs`;
//! this module only looks names up in it.

use serde_json::Value;
use std::collections::BTreeMap;

use super::raw::{self, S};
use super::tools::{builtin, builtin_for_callable, merge_policy, python_refusal, PolicyFields};
use super::{at, Validator};
use crate::provider::ProviderKind;
use crate::spec::{AgentSpec, AgentTool, ToolsConfig};

impl Validator {
    /// Every agent, in id order, with its tools resolved against `tools`.
    pub(super) fn agents(
        &mut self,
        defs: &BTreeMap<String, raw::Agent>,
        tools: &ToolsConfig,
    ) -> BTreeMap<String, AgentSpec> {
        let mut agents = BTreeMap::new();
        for (id, a) in defs {
            let merged;
            let a = match &a.atomic {
                Some(atomic) => match self.atomic_agent(id, a, atomic) {
                    Some(m) => {
                        merged = m;
                        &merged
                    }
                    None => continue,
                },
                None => a,
            };
            let Some(prompt) = &a.prompt else {
                self.error(
                    self.agent_line(id),
                    format!("agent `{id}` has no `prompt`"),
                    Some("give it a `prompt`, or `$ref: FILE` to an atomic agent".into()),
                );
                continue;
            };
            self.template_as(prompt, &format!("the prompt of agent `{id}`"), false);
            if let Some(p) = &a.provider {
                if let Err(e) = ProviderKind::parse(&p.value) {
                    self.warnings
                        .push(format!("{}:{}: {e}", self.file, at(p).0));
                }
            }
            let inf = a.inference.as_ref();
            let temperature = a.temperature.or(inf.and_then(|i| i.temperature));
            let top_p = a.top_p.or(inf.and_then(|i| i.top_p));
            let max_tokens = a.max_tokens.or(inf.and_then(|i| i.max_tokens));
            agents.insert(
                id.clone(),
                AgentSpec {
                    id: id.clone(),
                    prompt: prompt.value.clone(),
                    provider: a.provider.as_ref().map(|p| p.value.trim().to_string()),
                    model_id: a.model_id.clone(),
                    temperature,
                    top_p,
                    max_tokens,
                    tools: self.agent_tools(id, a, tools),
                    allowed_tools: a
                        .allowed_tools
                        .as_ref()
                        .map(|l| l.iter().map(|t| t.value.trim().to_string()).collect()),
                    enable_trust: a.enable_trust.unwrap_or(false),
                    max_turns: a.max_turns.unwrap_or(10).max(1),
                },
            );
            if let (Some(allowed), Some(agent)) = (&a.allowed_tools, agents.get(id)) {
                for entry in allowed {
                    let name = entry.value.trim().trim_start_matches('!');
                    let mcp_server = |n: &str| {
                        agent.tools.iter().any(|t| t.name == n)
                            && tools.mcp.iter().any(|m| m.id == n)
                    };
                    if mcp_server(name) {
                        self.error(
                            at(entry),
                            format!("allowed_tools of agent `{id}` names MCP server `{name}`, not one of its tools"),
                            Some(format!("name each tool of the server as `{name}__TOOL` (or allow all tools with `*`)")),
                        );
                        continue;
                    }
                    if let Some((server, tool)) = name.split_once("__") {
                        if mcp_server(server) {
                            if tool.is_empty()
                                || !tool
                                    .chars()
                                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                            {
                                self.error(
                                    at(entry),
                                    format!("allowed_tools of agent `{id}` names `{name}`, which no tool of MCP server `{server}` can be called"),
                                    Some("MCP tool names use letters, digits, `_` and `-`; other characters of the server's tool names become `_`".into()),
                                );
                            }
                            continue;
                        }
                    }
                    if name != "*" && !agent.tools.iter().any(|t| t.name == name) {
                        let have: Vec<&str> = agent.tools.iter().map(|t| t.name.as_str()).collect();
                        self.error(
                            at(entry),
                            format!("allowed_tools of agent `{id}` names `{name}`, which is not one of its tools"),
                            Some(format!("the agent's tools: {}", have.join(", "))),
                        );
                    }
                }
            }
        }
        agents
    }

    /// An agent's `tools` list: names or `{name, require_approval, ...}`.
    fn agent_tools(&mut self, agent: &str, a: &raw::Agent, cfg: &ToolsConfig) -> Vec<AgentTool> {
        self.tool_list(
            agent,
            a.tools.as_deref().unwrap_or_default(),
            a.tools.is_none(),
            cfg,
        )
    }

    /// A list of tool entries (an agent's `tools`, a step's
    /// `tool_overrides`) resolved against the `tools` section; `agent`
    /// names the owner in messages.
    pub(super) fn tool_list(
        &mut self,
        agent: &str,
        entries: &[S<Value>],
        implied_python: bool,
        cfg: &ToolsConfig,
    ) -> Vec<AgentTool> {
        let mut out: Vec<AgentTool> = Vec::new();
        for entry in entries {
            let loc = at(entry);
            if entry.value.as_str().map(str::trim) == Some("http_executors") {
                self.all_http_executors(agent, loc, cfg, &mut out);
                continue;
            }
            let (name, fields) = match &entry.value {
                Value::String(s) => (s.trim().to_string(), PolicyFields::default()),
                Value::Object(_) => {
                    match serde_json::from_value::<raw::ToolEntry>(entry.value.clone()) {
                        Ok(e) => match (e.name, e.python) {
                            (Some(n), None) => (
                                n.trim().to_string(),
                                PolicyFields {
                                    require_approval: e.require_approval,
                                    approval_prompt: e.approval_prompt,
                                    approval_condition: e.approval_condition,
                                    destructive: e.destructive,
                                    reversible: e.reversible,
                                    risk: e.risk,
                                },
                            ),
                            (None, Some(p)) => (
                                p.callable.trim().to_string(),
                                PolicyFields {
                                    require_approval: p.require_approval.or(e.require_approval),
                                    approval_prompt: p.approval_prompt.or(e.approval_prompt),
                                    approval_condition: p
                                        .approval_condition
                                        .or(e.approval_condition),
                                    destructive: p.destructive.or(e.destructive),
                                    reversible: p.reversible.or(e.reversible),
                                    risk: p.risk.or(e.risk),
                                },
                            ),
                            _ => {
                                self.error(loc, format!("a tool of agent `{agent}` needs exactly one of `name` or `python`"), None);
                                continue;
                            }
                        },
                        Err(e) => {
                            self.error(loc, format!("tool entry of agent `{agent}`: {e}"), Some("a tool entry is a name or {name, require_approval, approval_prompt, approval_condition, destructive, reversible, risk}".into()));
                            continue;
                        }
                    }
                }
                other => {
                    self.error(
                        loc,
                        format!("tool entry of agent `{agent}` is {other}, not a name or a map"),
                        None,
                    );
                    continue;
                }
            };
            let resolved = match builtin_for_callable(&name) {
                Some(b) => b.to_string(),
                None if name.contains('.') || name == "python_exec" => {
                    let (message, hint) = python_refusal(&name);
                    self.error(loc, format!("agent `{agent}`: {message}"), Some(hint));
                    continue;
                }
                None => name,
            };
            if resolved == "tavily_search" && !super::tools::shadowed(cfg, &resolved) {
                self.tavily_at.get_or_insert(loc);
            }
            let known = builtin(&resolved).is_some()
                || cfg.http_executors.iter().any(|h| h.id == resolved)
                || cfg.mcp.iter().any(|m| m.id == resolved);
            if !known {
                let mut names: Vec<String> = crate::model::BUILTIN_TOOLS
                    .iter()
                    .map(|b| b.to_string())
                    .collect();
                names.extend(cfg.http_executors.iter().map(|h| h.id.clone()));
                names.extend(cfg.mcp.iter().map(|m| m.id.clone()));
                self.error(
                    loc,
                    format!("agent `{agent}` uses unknown tool `{resolved}`"),
                    Some(format!("tools: {}", names.join(", "))),
                );
                continue;
            }
            if resolved == "shell" && !cfg.shell {
                self.error(loc, format!("agent `{agent}` uses `shell`, which is off"), Some("enable it with top-level `tools: {shell: true}` (shell calls always need approval)".into()));
                continue;
            }
            let mut policy = self.policy(
                loc,
                &format!("tool `{resolved}` of agent `{agent}`"),
                fields,
            );
            if let Some(h) = cfg.http_executors.iter().find(|h| h.id == resolved) {
                policy = merge_policy(policy, &h.policy);
            }
            if let Some(m) = cfg.mcp.iter().find(|m| m.id == resolved) {
                policy = merge_policy(policy, &m.policy);
            }
            if out.iter().any(|t| t.name == resolved) {
                self.error(
                    loc,
                    format!("agent `{agent}` lists tool `{resolved}` twice"),
                    None,
                );
                continue;
            }
            out.push(AgentTool {
                name: resolved,
                policy,
            });
        }
        // As in strands-cli: an agent without a `tools` list gets the
        // native tools of `tools.python`, and every agent gets
        // `context_policy.retrieval.jit_tools`; their policy is the default.
        let implied = if implied_python {
            cfg.python_tools.as_slice()
        } else {
            &[]
        };
        for name in implied.iter().chain(&cfg.jit_tools) {
            if !out.iter().any(|t| &t.name == name) {
                out.push(AgentTool {
                    name: name.clone(),
                    policy: Default::default(),
                });
            }
        }
        out
    }
}

impl Validator {
    /// strands-cli's category name `http_executors` in a tool list: every
    /// executor of the `tools` section (none defined is a warning: the
    /// agent gets no HTTP tool, as in strands-cli).
    fn all_http_executors(
        &mut self,
        agent: &str,
        loc: (u32, u32),
        cfg: &ToolsConfig,
        out: &mut Vec<AgentTool>,
    ) {
        if cfg.http_executors.is_empty() {
            self.warnings.push(format!(
                "{}:{}: {agent} lists `http_executors`, but the spec defines none under tools.http_executors: it gets no HTTP tool",
                self.file, loc.0
            ));
        }
        for h in &cfg.http_executors {
            if out.iter().any(|t| t.name == h.id) {
                continue;
            }
            let base = self.policy(
                loc,
                &format!("tool `{}` of agent `{agent}`", h.id),
                PolicyFields::default(),
            );
            out.push(AgentTool {
                name: h.id.clone(),
                policy: merge_policy(base, &h.policy),
            });
        }
    }
}
