//! Turns the raw document into a [`Spec`], collecting every problem with its
//! file:line:column and a hint, so one `strands validate` shows them all.

use serde::de::IgnoredAny;
use serde_json::{Map, Value};
use serde_saphyr::Spanned;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::raw::{self, Document};
use super::*;
use crate::error::{Diagnostic, Error, Result};
use crate::provider::ProviderKind;
use crate::template::Templates;

mod evaluator;
mod graph;
mod orchestrator;
mod parallel;
mod routing;

pub fn parse(text: &str, path: &Path) -> Result<Spec> {
    let file = path.display().to_string();
    let head: Document<IgnoredAny> = from_yaml(text, &file)?;
    let kind = head.pattern.kind.value.trim().to_string();
    if !KNOWN_PATTERNS.contains(&kind.as_str()) {
        let (line, column) = at(&head.pattern.kind);
        return Err(Error::Spec(vec![Diagnostic {
            file,
            line,
            column,
            message: format!("unknown pattern type `{kind}`"),
            hint: Some(format!(
                "pattern.type is one of: {}",
                KNOWN_PATTERNS.join(", ")
            )),
        }]));
    }
    let mut v = Validator {
        file: file.clone(),
        text: text.to_string(),
        diags: Vec::new(),
        warnings: Vec::new(),
        templates: Templates::new(),
    };
    let spec = match kind.as_str() {
        "chain" => {
            let doc: Document<raw::ChainConfig> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let steps = v.chain(&doc.pattern.config, &common.agents);
            common.finish(PatternSpec::Chain { steps }, text, path, &mut v)
        }
        "workflow" => {
            let doc: Document<raw::WorkflowConfig> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.workflow(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "parallel" => {
            let doc: Document<parallel::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.parallel(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "routing" => {
            let doc: Document<routing::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.routing(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "evaluator_optimizer" => {
            let doc: Document<evaluator::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.evaluator(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "orchestrator_workers" => {
            let doc: Document<orchestrator::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let mut pattern = v.orchestrator(&doc.pattern.config, &common.agents);
            plan_approval(&mut pattern, &common.hitl);
            common.finish(pattern, text, path, &mut v)
        }
        _ => {
            let doc: Document<graph::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.graph(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
    };
    if v.diags.is_empty() {
        let mut spec = spec;
        spec.warnings = v.warnings;
        Ok(spec)
    } else {
        Err(Error::Spec(v.diags))
    }
}

/// seed 001's `plan_approval` trigger (or the `paranoid` preset) asks a
/// human to approve an orchestrator's plan: it becomes the
/// `decomposition_review` when the spec has none of its own.
fn plan_approval(pattern: &mut PatternSpec, hitl: &HitlSpec) {
    let PatternSpec::OrchestratorWorkers(o) = pattern else {
        return;
    };
    let Some(t) = hitl
        .triggers
        .iter()
        .find(|t| t.trigger == Trigger::PlanApproval)
    else {
        return;
    };
    if o.decomposition_review.is_some() {
        return;
    }
    o.decomposition_review = Some(GateSpec {
        id: t.id.clone(),
        kind: GateKind::ManualGate,
        prompt: t.prompt.clone(),
        context_display: None,
        default: None,
        timeout_secs: None,
        fallback: Fallback::Cancel,
        condition: None,
        show_preview: true,
        preview_length: DEFAULT_PREVIEW_LENGTH,
        require_reason: false,
        channel: None,
        approvers: None,
        approvals_required: None,
        rejections_required: None,
        allow_self_approval: None,
        timers: GateTimers::default(),
    });
}

/// Deserializes, turning serde-saphyr's error into one located diagnostic.
fn from_yaml<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<T> {
    serde_saphyr::from_str::<T>(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line() as u32, l.column() as u32))
            .unwrap_or((1, 1));
        let mut message = e.without_snippet().to_string();
        if let Some(i) = message.rfind(" at line ") {
            message.truncate(i);
        }
        let message = message.trim_start_matches("error: ").to_string();
        let hint = if message.contains("unknown field") {
            Some("remove the key or check its spelling against the strands-cli v0 format".into())
        } else if message.contains("missing field") {
            Some("add the required key".into())
        } else {
            None
        };
        Error::Spec(vec![Diagnostic {
            file: file.to_string(),
            line,
            column,
            message,
            hint,
        }])
    })
}

fn at<T>(s: &Spanned<T>) -> (u32, u32) {
    (s.referenced.line() as u32, s.referenced.column() as u32)
}

struct Validator {
    file: String,
    /// The spec text, to place errors on lines inside multi-line values.
    text: String,
    diags: Vec<Diagnostic>,
    warnings: Vec<String>,
    templates: Templates,
}

/// Everything but the pattern, validated.
struct Common {
    name: String,
    runtime: RuntimeSpec,
    agents: BTreeMap<String, AgentSpec>,
    inputs: Vec<InputDecl>,
    input_values: Map<String, Value>,
    artifacts: Vec<ArtifactSpec>,
    tools: ToolsConfig,
    redactor: crate::audit::redact::Redactor,
    approval: ApprovalDefaults,
    hitl: HitlSpec,
}

impl Common {
    fn finish(self, pattern: PatternSpec, text: &str, path: &Path, _v: &mut Validator) -> Spec {
        Spec {
            path: path.to_path_buf(),
            text: text.to_string(),
            hash: sha256_hex(text),
            name: self.name,
            runtime: self.runtime,
            agents: self.agents,
            inputs: self.inputs,
            input_values: self.input_values,
            pattern,
            artifacts: self.artifacts,
            tools: self.tools,
            redactor: self.redactor,
            approval: self.approval,
            hitl: self.hitl,
            warnings: Vec::new(),
        }
    }
}

/// What a step or task turned out to be.
// Specs are built once and hold a handful of steps: boxing the gate buys nothing.
#[allow(clippy::large_enum_variant)]
enum Body {
    Agent(AgentStep),
    Gate(GateSpec),
}

impl Validator {
    fn error(
        &mut self,
        (line, column): (u32, u32),
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.diags.push(Diagnostic {
            file: self.file.clone(),
            line,
            column,
            message: message.into(),
            hint,
        });
    }

    /// Checks a template's syntax, locating errors inside multi-line values.
    fn template(&mut self, s: &Spanned<String>, what: &str) {
        if let Err(e) = self.templates.check(&s.value) {
            let loc = self.template_line(s, e.line);
            self.error(
                loc,
                format!("template syntax error in {what}: {}", e.message),
                Some(
                    "templates use Jinja syntax: {{ variable }}, {% if ... %}...{% endif %}".into(),
                ),
            );
        }
    }

    /// Where line `n` (1-based) of a template value is in the file. Escapes
    /// (`\n`), folding and blank lines mean template lines need not be file
    /// lines, so the template's lines are found in the value's source text;
    /// anything not found falls back to the start of the value.
    fn template_line(&self, s: &Spanned<String>, n: u32) -> (u32, u32) {
        let start = at(s);
        if n <= 1 {
            return start;
        }
        let span = s.referenced.span();
        let (Some(off), Some(len)) = (span.byte_offset(), span.byte_len()) else {
            return start;
        };
        let (off, len) = (off as usize, len as usize);
        let Some(src) = self.text.get(off..off + len) else {
            return start;
        };
        // Find lines 1..=n in order, so a repeated line maps to the right one.
        let mut from = 0;
        let mut found = None;
        for wanted in s.value.lines().take(n as usize) {
            let wanted = wanted.trim();
            found = None;
            if wanted.is_empty() {
                continue;
            }
            if let Some(i) = src.get(from..).and_then(|rest| rest.find(wanted)) {
                found = Some(from + i);
                from += i + wanted.len();
            }
        }
        let Some(pos) = found else {
            return start;
        };
        let before = &self.text[..off + pos];
        let line = before.matches('\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() as u32 + 1;
        (line, column)
    }

    fn common<C>(&mut self, doc: &Document<C>) -> Common {
        let version_ok = match &doc.version.value {
            Value::Number(n) => n.as_u64() == Some(0),
            Value::String(s) => s.trim() == "0",
            _ => false,
        };
        if !version_ok {
            self.error(
                at(&doc.version),
                format!("unsupported version {}", doc.version.value),
                Some("this is the strands-cli v0 format: `version: 0`".into()),
            );
        }
        if doc.name.value.trim().is_empty() {
            self.error(
                at(&doc.name),
                "`name` is empty",
                Some("give the workflow a name".into()),
            );
        }

        let rt = &doc.runtime;
        if let Err(e) = ProviderKind::parse(&rt.provider.value) {
            self.warnings.push(format!("{}: {e}", self.file));
        }
        let max_parallel = rt.max_parallel.unwrap_or(4).max(1);
        let mut budget_max_tokens = None;
        if let Some(b) = &rt.budgets {
            for (k, val) in &b.value {
                match (k.as_str(), val) {
                    ("max_tokens", Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
                        budget_max_tokens = n.as_u64();
                    }
                    ("max_tokens", other) => self.error(
                        at(b),
                        format!(
                            "runtime.budgets.max_tokens must be a positive integer, not {other}"
                        ),
                        None,
                    ),
                    (other, _) => self.warnings.push(format!(
                        "{}: runtime.budgets.{other} is not enforced by this build",
                        self.file
                    )),
                }
            }
        }
        let runtime = RuntimeSpec {
            provider: rt.provider.value.trim().to_string(),
            model_id: rt.model_id.clone(),
            host: rt.host.clone(),
            temperature: rt.temperature,
            top_p: rt.top_p,
            max_tokens: rt.max_tokens,
            max_parallel,
            budget_max_tokens,
        };

        if doc.agents.value.is_empty() {
            self.error(
                at(&doc.agents),
                "`agents` is empty",
                Some("define at least one agent with a `prompt`".into()),
            );
        }
        let tools = self.tools_section(doc.tools.as_ref());
        let mut agents = BTreeMap::new();
        for (id, a) in &doc.agents.value {
            self.template(&a.prompt, &format!("the prompt of agent `{id}`"));
            if let Some(p) = &a.provider {
                if let Err(e) = ProviderKind::parse(&p.value) {
                    self.warnings
                        .push(format!("{}:{}: {e}", self.file, at(p).0));
                }
            }
            let inf = a.inference.as_ref();
            agents.insert(
                id.clone(),
                AgentSpec {
                    id: id.clone(),
                    prompt: a.prompt.value.clone(),
                    provider: a.provider.as_ref().map(|p| p.value.trim().to_string()),
                    model_id: a.model_id.clone(),
                    temperature: inf.and_then(|i| i.temperature),
                    top_p: inf.and_then(|i| i.top_p),
                    max_tokens: inf.and_then(|i| i.max_tokens),
                    tools: self.agent_tools(id, a, &tools),
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

        let (inputs, input_values) = self.inputs(doc.inputs.as_ref());
        let mut artifacts = Vec::new();
        if let Some(arts) = doc.outputs.as_ref().and_then(|o| o.artifacts.as_ref()) {
            for (i, a) in arts.iter().enumerate() {
                self.template(&a.path, &format!("outputs.artifacts[{i}].path"));
                self.template(&a.from, &format!("outputs.artifacts[{i}].from"));
                if let Err(why) = check_relative(&a.path.value) {
                    self.error(
                        at(&a.path),
                        format!("artifact path `{}` {why}", a.path.value),
                        Some("artifact paths are relative to --out and stay inside it".into()),
                    );
                }
                artifacts.push(ArtifactSpec {
                    path: a.path.value.clone(),
                    from: a.from.value.clone(),
                });
            }
        }
        let redactor = self.redactor(doc.security.as_ref());
        let approval = approval_defaults(doc.security.as_ref().map(|s| &s.value));
        let hitl = self.hitl(doc.hitl.as_ref());
        Common {
            hitl,
            approval,
            redactor,
            tools,
            name: doc.name.value.trim().to_string(),
            runtime,
            agents,
            inputs,
            input_values,
            artifacts,
        }
    }

    /// The top-level `tools` section: executors, MCP servers, workspace,
    /// shell switch; Python callables are refused here (with a mapping to
    /// the built-in for `strands_tools.*` callables that have one).
    fn tools_section(&mut self, t: Option<&raw::Tools>) -> ToolsConfig {
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
        };
        let Some(t) = t else { return cfg };
        for entry in t.network.iter().flat_map(|n| n.allow.iter().flatten()) {
            match crate::tools::egress::Rule::parse(&entry.value) {
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
        for p in t.python.iter().flatten() {
            let callable = python_callable(&p.value);
            if builtin_for_callable(&callable).is_none() {
                self.error(
                    at(p),
                    format!("tools.python entry `{callable}` is a Python callable; strands cannot run Python tools"),
                    Some(format!(
                        "use a built-in tool ({}) or an http executor",
                        crate::tools::builtin::Builtin::ALL.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
                    )),
                );
            }
        }
        let mut seen = BTreeSet::new();
        for h in t.http_executors.iter().flatten() {
            let id = h.value.id.value.trim().to_string();
            if crate::tools::builtin::Builtin::from_name(&id).is_some() || !seen.insert(id.clone())
            {
                self.error(
                    at(&h.value.id),
                    format!("http executor id `{id}` is used twice or names a built-in tool"),
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
                timeout_secs: h.value.timeout,
                description: h.value.description.clone(),
                policy,
            });
        }
        for m in t.mcp.iter().flatten() {
            if let Some(server) = self.mcp_server(m, &mut seen) {
                cfg.mcp.push(server);
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
        } else if crate::tools::builtin::Builtin::from_name(&id).is_some()
            || !seen.insert(id.clone())
        {
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

    /// An agent's `tools` list: names or `{name, require_approval, ...}`.
    fn agent_tools(&mut self, agent: &str, a: &raw::Agent, cfg: &ToolsConfig) -> Vec<AgentTool> {
        let mut out: Vec<AgentTool> = Vec::new();
        for entry in a.tools.iter().flatten() {
            let loc = at(entry);
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
            let resolved = if name.contains('.') {
                match builtin_for_callable(&name) {
                    Some(b) => b.name().to_string(),
                    None => {
                        self.error(
                            loc,
                            format!("agent `{agent}` uses Python callable `{name}`; strands cannot run Python tools"),
                            Some("use a built-in tool or an http executor".into()),
                        );
                        continue;
                    }
                }
            } else {
                name
            };
            let known = crate::tools::builtin::Builtin::from_name(&resolved).is_some()
                || cfg.http_executors.iter().any(|h| h.id == resolved)
                || cfg.mcp.iter().any(|m| m.id == resolved);
            if !known {
                let mut names: Vec<String> = crate::tools::builtin::Builtin::ALL
                    .iter()
                    .map(|b| b.name().to_string())
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
        out
    }

    fn policy(&mut self, loc: (u32, u32), what: &str, f: PolicyFields) -> ToolPolicy {
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
        let risk = match f.risk.as_deref().map(|r| (r, crate::tools::Risk::parse(r))) {
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

    /// `security.redact`: a list of regular expressions.
    fn redactor(&mut self, security: Option<&Spanned<Value>>) -> crate::audit::redact::Redactor {
        let Some(sec) = security else {
            return Default::default();
        };
        let patterns: Vec<String> = match sec.value.get("redact") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(other) => {
                self.error(
                    at(sec),
                    format!("security.redact must be a list of regular expressions, not {other}"),
                    None,
                );
                return Default::default();
            }
        };
        match crate::audit::redact::Redactor::new(&patterns) {
            Ok(r) => r,
            Err(e) => {
                self.error(
                    at(sec),
                    e,
                    Some("security.redact takes regular expressions (Rust regex syntax)".into()),
                );
                Default::default()
            }
        }
    }

    /// `hitl:`: a preset (seed 001 §3.3) and run-triggered gates (§2.1.1).
    fn hitl(&mut self, h: Option<&raw::Hitl>) -> HitlSpec {
        let mut out = HitlSpec::default();
        let Some(h) = h else { return out };
        if let Some(p) = &h.preset {
            let name = p.value.trim().to_string();
            match name.as_str() {
                "minimal" => {}
                "standard" => {
                    out.ask_tools = ["web_search", "send_email", "api_call", "http_request"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                }
                "strict" | "paranoid" => {
                    out.ask_all_tools = true;
                    out.triggers.push(TriggerSpec {
                        id: "final_response".into(),
                        trigger: Trigger::FinalResponse,
                        prompt: "Approve the final answer?".into(),
                        agents: None,
                    });
                    if name == "paranoid" {
                        out.triggers.push(TriggerSpec {
                            id: "plan_approval".into(),
                            trigger: Trigger::PlanApproval,
                            prompt: "Approve the plan?".into(),
                            agents: None,
                        });
                    }
                }
                other => {
                    self.error(
                        at(p),
                        format!("unknown hitl preset `{other}`"),
                        Some("presets: minimal, standard, strict, paranoid".into()),
                    );
                }
            }
            out.preset = Some(name);
        }
        for g in h.gates.iter().flatten() {
            let v = &g.value;
            let kind = v.kind.value.trim();
            let id = v.id.clone().unwrap_or_else(|| kind.to_string());
            let prompt_default = match kind {
                "final_response" => "Approve the final answer?",
                "budget_based" => "The run passed its token budget. Continue?",
                "threshold_based" => "The agent is not confident. Continue?",
                "plan_approval" => "Approve the plan?",
                _ => "Continue?",
            };
            let prompt = match &v.prompt {
                Some(p) => {
                    self.template(p, &format!("the prompt of hitl gate `{id}`"));
                    p.value.clone()
                }
                None => prompt_default.to_string(),
            };
            let trigger = match kind {
                "final_response" => Trigger::FinalResponse,
                "plan_approval" => Trigger::PlanApproval,
                "budget_based" => match v.cost_threshold {
                    Some(t) if t > 0.0 => Trigger::Budget { tokens: t as u64 },
                    _ => {
                        self.error(at(g), format!("hitl gate `{id}`: budget_based needs a positive `cost_threshold` (tokens)"), None);
                        continue;
                    }
                },
                "threshold_based" => {
                    match v.confidence_threshold {
                        Some(t) => Trigger::Confidence {
                            threshold: t,
                            field: v.field.clone().unwrap_or_else(|| "confidence".into()),
                        },
                        None => {
                            self.error(at(g), format!("hitl gate `{id}`: threshold_based needs `confidence_threshold`"), None);
                            continue;
                        }
                    }
                }
                "custom" => match &v.condition {
                    Some(c) => {
                        if let Err(e) = self.templates.check_condition(&c.value) {
                            self.error(
                                at(c),
                                format!("condition of hitl gate `{id}`: {}", e.message),
                                None,
                            );
                        }
                        Trigger::Custom {
                            condition: c.value.clone(),
                        }
                    }
                    None => {
                        self.error(
                            at(g),
                            format!("hitl gate `{id}`: custom needs a `condition`"),
                            None,
                        );
                        continue;
                    }
                },
                other => {
                    self.error(
                        at(&v.kind),
                        format!("unknown hitl gate type `{other}`"),
                        Some("types: final_response, budget_based, threshold_based, custom, plan_approval (tool gates: see tools policy)".into()),
                    );
                    continue;
                }
            };
            out.triggers.retain(|t| t.id != id);
            out.triggers.push(TriggerSpec {
                id,
                trigger,
                prompt,
                agents: v.agents.clone(),
            });
        }
        out
    }

    fn inputs(&mut self, inputs: Option<&raw::Inputs>) -> (Vec<InputDecl>, Map<String, Value>) {
        let mut decls = Vec::new();
        let Some(inputs) = inputs else {
            return (decls, Map::new());
        };
        for (section, required) in [(&inputs.required, true), (&inputs.optional, false)] {
            let Some(section) = section else { continue };
            for (name, spanned) in &section.value {
                let v = &spanned.value;
                let (ty, default, allowed) = match v {
                    Value::String(t) => (parse_type(t), None, None),
                    Value::Object(o) => {
                        let ty = o.get("type").and_then(Value::as_str).map(parse_type);
                        let unknown: Vec<&String> = o
                            .keys()
                            .filter(|k| {
                                !["type", "description", "default", "enum"].contains(&k.as_str())
                            })
                            .collect();
                        if !unknown.is_empty() {
                            self.error(
                                at(spanned),
                                format!("input `{name}` has unknown keys: {unknown:?}"),
                                Some(
                                    "an input is a type name or {type, description, default, enum}"
                                        .into(),
                                ),
                            );
                        }
                        let allowed = o.get("enum").and_then(Value::as_array).cloned();
                        (
                            ty.unwrap_or(Some(InputType::String)),
                            o.get("default").cloned(),
                            allowed,
                        )
                    }
                    _ => (None, None, None),
                };
                match ty {
                    Some(ty) => decls.push(InputDecl {
                        name: name.clone(),
                        ty,
                        required,
                        default,
                        allowed,
                    }),
                    None => self.error(
                        at(spanned),
                        format!("input `{name}` has an invalid type: {v}"),
                        Some("types: string, number, integer, boolean, array, object".into()),
                    ),
                }
            }
        }
        (decls, inputs.values.clone().unwrap_or_default())
    }

    fn chain(
        &mut self,
        cfg: &raw::ChainConfig,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> Vec<ChainStep> {
        if cfg.steps.value.is_empty() {
            self.error(
                at(&cfg.steps),
                "chain has no steps",
                Some("add at least one step".into()),
            );
        }
        let mut seen_ids = BTreeSet::new();
        let mut out = Vec::new();
        for (i, st) in cfg.steps.value.iter().enumerate() {
            let label = format!("steps[{i}]");
            match self.step(st, &label, false, agents, &format!("step{i}")) {
                Some(Body::Agent(a)) => out.push(ChainStep::Agent(a)),
                Some(Body::Gate(g)) => {
                    if !seen_ids.insert(g.id.clone()) {
                        self.error(
                            at(st),
                            format!("gate id `{}` is used twice", g.id),
                            Some("gate ids must be unique".into()),
                        );
                    }
                    out.push(ChainStep::Gate(g))
                }
                None => {}
            }
        }
        out
    }

    fn workflow(
        &mut self,
        cfg: &raw::WorkflowConfig,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        if cfg.tasks.value.is_empty() {
            self.error(
                at(&cfg.tasks),
                "workflow has no tasks",
                Some("add at least one task".into()),
            );
        }
        let mut tasks = Vec::new();
        let mut locs = Vec::new();
        let mut ids = BTreeSet::new();
        for (i, st) in cfg.tasks.value.iter().enumerate() {
            let label = format!("tasks[{i}]");
            let Some(id) = st.value.id.as_ref().map(|s| s.value.trim().to_string()) else {
                self.error(
                    at(st),
                    format!("{label} has no `id`"),
                    Some("every workflow task needs a unique `id`".into()),
                );
                continue;
            };
            if !ids.insert(id.clone()) {
                self.error(
                    at(st),
                    format!("task id `{id}` is used twice"),
                    Some("task ids must be unique".into()),
                );
                continue;
            }
            let Some(body) = self.step(st, &format!("task `{id}`"), true, agents, &id) else {
                continue;
            };
            let deps: Vec<String> = st
                .value
                .deps
                .iter()
                .flatten()
                .map(|d| d.value.trim().to_string())
                .collect();
            tasks.push(Task {
                id,
                deps,
                body: match body {
                    Body::Agent(a) => TaskBody::Agent(a),
                    Body::Gate(g) => TaskBody::Gate(g),
                },
            });
            locs.push(st);
        }
        // deps must name tasks
        for (t, st) in tasks.iter().zip(&locs) {
            for d in st.value.deps.iter().flatten() {
                let name = d.value.trim();
                if name == t.id {
                    self.error(at(d), format!("task `{}` depends on itself", t.id), None);
                } else if !ids.contains(name) {
                    let known: Vec<&str> = ids.iter().map(String::as_str).collect();
                    self.error(
                        at(d),
                        format!("task `{}` depends on unknown task `{name}`", t.id),
                        Some(format!("tasks: {}", known.join(", "))),
                    );
                }
            }
        }
        let layers = match layers(&tasks) {
            Ok(l) => l,
            Err(cycle) => {
                let first = cycle.first().copied().unwrap_or(0);
                let names: Vec<&str> = cycle.iter().map(|&i| tasks[i].id.as_str()).collect();
                if let Some(st) = locs.get(first) {
                    self.error(
                        at(st),
                        format!("tasks {} form a dependency cycle", names.join(", ")),
                        Some(
                            "a workflow is a DAG: remove one of the `deps` that closes the loop"
                                .into(),
                        ),
                    );
                }
                Vec::new()
            }
        };
        PatternSpec::Workflow { tasks, layers }
    }

    /// Classifies and checks one chain step or workflow task.
    fn step(
        &mut self,
        st: &Spanned<raw::Step>,
        label: &str,
        in_workflow: bool,
        agents: &BTreeMap<String, AgentSpec>,
        default_id: &str,
    ) -> Option<Body> {
        let s = &st.value;
        let loc = at(st);
        if !in_workflow && (s.deps.is_some() || s.description.is_some()) {
            self.error(
                loc,
                format!(
                    "{label}: `deps` and `description` belong to workflow tasks, not chain steps"
                ),
                None,
            );
        }
        let kind = s.kind.as_ref().map(|k| k.value.trim().to_string());
        match kind.as_deref() {
            None => {
                let present = gate_keys(s);
                if !present.is_empty() {
                    self.error(
                        loc,
                        format!("{label}: {} only make sense on a gate", present.join(", ")),
                        Some(
                            "add `type: hitl` or `type: manual_gate`, or remove those keys".into(),
                        ),
                    );
                }
                let Some(agent) = &s.agent else {
                    self.error(loc, format!("{label} has neither `agent` nor `type`"), Some("name an agent, or make it a gate with `type: hitl` / `type: manual_gate`".into()));
                    return None;
                };
                let name = agent.value.trim().to_string();
                if !agents.contains_key(&name) {
                    let known: Vec<&str> = agents.keys().map(String::as_str).collect();
                    self.error(
                        at(agent),
                        format!("{label} uses undefined agent `{name}`"),
                        Some(format!("defined agents: {}", known.join(", "))),
                    );
                }
                if let Some(input) = &s.input {
                    self.template(input, &format!("the input of {label}"));
                }
                Some(Body::Agent(AgentStep {
                    agent: name,
                    input: s.input.as_ref().map(|i| i.value.clone()),
                    vars: s.vars.clone().unwrap_or_default(),
                }))
            }
            Some(k @ ("hitl" | "manual_gate")) => {
                let hitl = k == "hitl";
                let mut wrong = Vec::new();
                if s.agent.is_some() {
                    wrong.push("agent");
                }
                if s.input.is_some() {
                    wrong.push("input");
                }
                if s.vars.is_some() {
                    wrong.push("vars");
                }
                if hitl {
                    if s.timeout_minutes.is_some() {
                        wrong.push("timeout_minutes (hitl uses timeout_seconds)");
                    }
                } else {
                    if s.timeout_seconds.is_some() {
                        wrong.push("timeout_seconds (manual_gate uses timeout_minutes)");
                    }
                    let default_fallback = s
                        .fallback_action
                        .as_ref()
                        .is_some_and(|f| f.value.trim() == "default");
                    if s.default.is_some() && !default_fallback {
                        wrong.push("default (manual_gate uses fallback_action; `default` only with fallback_action: default)");
                    }
                }
                if !wrong.is_empty() {
                    self.error(
                        loc,
                        format!("{label}: a `{k}` gate does not take {}", wrong.join(", ")),
                        None,
                    );
                }
                let Some(prompt) = &s.prompt else {
                    self.error(
                        loc,
                        format!("{label}: a `{k}` gate needs a `prompt`"),
                        Some("prompt: \"What should the human decide?\"".into()),
                    );
                    return None;
                };
                self.template(prompt, &format!("the prompt of {label}"));
                if let Some(c) = &s.context_display {
                    self.template(c, &format!("the context_display of {label}"));
                }
                if let Some(c) = &s.condition {
                    if let Err(e) = self.templates.check_condition(&c.value) {
                        self.error(at(c), format!("condition of {label}: {}", e.message), Some("a condition is an expression like `{{ steps[0].response|length < 1000 }}`".into()));
                    }
                }
                let (fallback, timeout_secs, timers) = self.gate_timing(s, label, loc, hitl);
                Some(Body::Gate(GateSpec {
                    id: s
                        .id
                        .as_ref()
                        .map(|i| i.value.trim().to_string())
                        .unwrap_or_else(|| default_id.to_string()),
                    kind: if hitl {
                        GateKind::Hitl
                    } else {
                        GateKind::ManualGate
                    },
                    prompt: prompt.value.clone(),
                    context_display: s.context_display.as_ref().map(|c| c.value.clone()),
                    default: s.default.as_ref().map(|d| d.value.clone()),
                    timeout_secs,
                    fallback,
                    condition: s.condition.as_ref().map(|c| c.value.clone()),
                    show_preview: s.show_preview.unwrap_or(true),
                    preview_length: s.preview_length.unwrap_or(DEFAULT_PREVIEW_LENGTH).max(1),
                    require_reason: s.require_reason.unwrap_or(false),
                    channel: s
                        .channel
                        .as_ref()
                        .map(|c| c.value.trim().trim_start_matches('#').to_string()),
                    approvers: s.approvers.clone(),
                    approvals_required: s.approvals_required.filter(|n| *n >= 1),
                    rejections_required: s.rejections_required.filter(|n| *n >= 1),
                    allow_self_approval: s.allow_self_approval,
                    timers,
                }))
            }
            Some(other) => {
                let kloc = s.kind.as_ref().map(at).unwrap_or(loc);
                let hint = if KNOWN_PATTERNS.contains(&other) {
                    "`type` on a step names a gate; patterns go in `pattern.type`".to_string()
                } else {
                    "step types: `hitl` (strands-cli) or `manual_gate`; agent steps have no `type`"
                        .to_string()
                };
                self.error(
                    kloc,
                    format!("{label}: unknown step type `{other}`"),
                    Some(hint),
                );
                None
            }
        }
    }
}

fn gate_keys(s: &raw::Step) -> Vec<&'static str> {
    let mut v = Vec::new();
    if s.prompt.is_some() {
        v.push("prompt");
    }
    if s.context_display.is_some() {
        v.push("context_display");
    }
    if s.default.is_some() {
        v.push("default");
    }
    if s.timeout_seconds.is_some() {
        v.push("timeout_seconds");
    }
    if s.condition.is_some() {
        v.push("condition");
    }
    if s.timeout_minutes.is_some() {
        v.push("timeout_minutes");
    }
    if s.fallback_action.is_some() {
        v.push("fallback_action");
    }
    if s.show_preview.is_some() {
        v.push("show_preview");
    }
    if s.preview_length.is_some() {
        v.push("preview_length");
    }
    if s.require_reason.is_some() {
        v.push("require_reason");
    }
    if s.channel.is_some() {
        v.push("channel");
    }
    if s.approvers.is_some() {
        v.push("approvers");
    }
    if s.approvals_required.is_some() {
        v.push("approvals_required");
    }
    if s.rejections_required.is_some() {
        v.push("rejections_required");
    }
    if s.allow_self_approval.is_some() {
        v.push("allow_self_approval");
    }
    if s.reminder_interval.is_some() {
        v.push("reminder_interval");
    }
    if s.max_reminders.is_some() {
        v.push("max_reminders");
    }
    if s.escalation_timeout.is_some() {
        v.push("escalation_timeout");
    }
    if s.escalation_target.is_some() {
        v.push("escalation_target");
    }
    v
}

impl Validator {
    /// A gate's timeout, `fallback_action`, reminders and escalation:
    /// timeouts at most [`max_timeout_secs`], a `default` where the fallback
    /// needs one, an `escalation_target` where escalation needs one.
    fn gate_timing(
        &mut self,
        s: &raw::Step,
        label: &str,
        loc: (u32, u32),
        hitl: bool,
    ) -> (Fallback, Option<u64>, GateTimers) {
        let fallback_loc = s.fallback_action.as_ref().map(at).unwrap_or(loc);
        let fallback = match s.fallback_action.as_ref().map(|f| f.value.trim()) {
            // strands-cli: a hitl gate answers its `default` (or rejects without one).
            None if hitl => Fallback::Default,
            None | Some("cancel" | "reject") => Fallback::Cancel,
            Some("continue" | "approve") => Fallback::Continue,
            Some("skip") => Fallback::Skip,
            Some("abort") => Fallback::Abort,
            Some("default") => Fallback::Default,
            Some("escalate") => Fallback::Escalate,
            Some(other) => {
                self.error(
                    fallback_loc,
                    format!("{label}: unknown fallback_action `{other}`"),
                    Some("fallback_action is `approve`, `reject`, `skip`, `abort`, `default` or `escalate` (`continue` or `cancel` also work)".into()),
                );
                Fallback::Cancel
            }
        };
        if s.fallback_action.is_some() && fallback == Fallback::Default {
            match &s.default {
                None => self.error(
                    fallback_loc,
                    format!("{label}: fallback_action `default` needs a `default` answer"),
                    Some(if hitl {
                        "default: \"approved\"".into()
                    } else {
                        "default: approve (or reject)".into()
                    }),
                ),
                Some(d) if !hitl => {
                    let word = d.value.trim().to_ascii_lowercase();
                    if !matches!(
                        word.as_str(),
                        "approve" | "approved" | "reject" | "rejected"
                    ) {
                        self.error(
                            at(d),
                            format!("{label}: a manual_gate's `default` is `approve` or `reject`, not `{}`", d.value.trim()),
                            None,
                        );
                    }
                }
                Some(_) => {}
            }
        }
        let (raw, unit, per) = if hitl {
            (s.timeout_seconds.as_ref(), "timeout_seconds", 1)
        } else {
            (s.timeout_minutes.as_ref(), "timeout_minutes", 60)
        };
        let timeout_secs = raw
            .map(|t| (t.value.saturating_mul(per), at(t)))
            .filter(|(t, _)| *t > 0);
        let max = max_timeout_secs();
        if let Some((t, tloc)) = timeout_secs {
            if t > max {
                self.error(
                    tloc,
                    format!(
                        "{label}: {unit} is {} days, longer than the limit of {} days",
                        fmt_days(t),
                        fmt_days(max)
                    ),
                    Some(
                        "gates wait at most 7 days; set STRANDS_MAX_TIMEOUT_DAYS to allow longer"
                            .into(),
                    ),
                );
            }
        }
        let timeout_secs = timeout_secs.map(|(t, _)| t);
        let minutes = |me: &mut Validator, v: &Option<Spanned<f64>>, key: &str| {
            let v = v.as_ref()?;
            let ok = v.value.is_finite() && v.value > 0.0 && v.value * 60.0 <= max as f64;
            if !ok {
                me.error(
                    at(v),
                    format!(
                        "{label}: {key} is minutes, more than 0 and at most {} days",
                        fmt_days(max)
                    ),
                    None,
                );
                return None;
            }
            let d = std::time::Duration::from_secs_f64(v.value * 60.0);
            Some(d.max(std::time::Duration::from_secs(1)))
        };
        let reminder_interval = minutes(self, &s.reminder_interval, "reminder_interval");
        let escalation_timeout = minutes(self, &s.escalation_timeout, "escalation_timeout");
        if let (Some(m), None) = (&s.max_reminders, &s.reminder_interval) {
            self.error(
                at(m),
                format!("{label}: max_reminders needs a reminder_interval"),
                Some("reminder_interval: 60   # minutes".into()),
            );
        }
        let max_reminders = s
            .max_reminders
            .as_ref()
            .map(|m| m.value)
            .unwrap_or(DEFAULT_MAX_REMINDERS);
        let mut escalation_target = Vec::new();
        if let Some(t) = &s.escalation_target {
            let entries: Vec<Option<&str>> = match &t.value {
                Value::String(one) => vec![Some(one.as_str())],
                Value::Array(list) => list.iter().map(Value::as_str).collect(),
                _ => vec![None],
            };
            for e in entries {
                match e.map(EscalationTarget::parse) {
                    Some(Ok(target)) => escalation_target.push(target),
                    Some(Err(why)) => self.error(at(t), format!("{label}: escalation_target: {why}"), None),
                    None => self.error(
                        at(t),
                        format!("{label}: escalation_target is a Slack id or channel, or a list of them"),
                        Some("escalation_target: [U0123ABCD, \"#ops-oncall\"]".into()),
                    ),
                }
            }
            if escalation_target.is_empty() && matches!(&t.value, Value::Array(l) if l.is_empty()) {
                self.error(at(t), format!("{label}: escalation_target is empty"), None);
            }
            let channels = escalation_target
                .iter()
                .filter(|t| matches!(t, EscalationTarget::Channel(_)))
                .count();
            if channels > 1 {
                self.error(
                    at(t),
                    format!("{label}: escalation_target names {channels} channels; name one"),
                    None,
                );
            }
        }
        let wants_target = escalation_timeout.is_some() || fallback == Fallback::Escalate;
        match (&s.escalation_target, wants_target) {
            (None, true) => {
                let (what, wloc) = match &s.escalation_timeout {
                    Some(e) => ("escalation_timeout", at(e)),
                    None => ("fallback_action `escalate`", fallback_loc),
                };
                self.error(
                    wloc,
                    format!("{label}: {what} needs an escalation_target"),
                    Some("escalation_target: [U0123ABCD]   # users (U…), groups (S…) or a channel (C… / #name)".into()),
                );
            }
            (Some(t), false) => self.error(
                at(t),
                format!("{label}: escalation_target needs an escalation_timeout or fallback_action: escalate"),
                Some("escalation_timeout: 30   # minutes".into()),
            ),
            _ => {}
        }
        if let (Some(e), Some(t)) = (escalation_timeout, timeout_secs) {
            if e.as_secs_f64() >= t as f64 && fallback != Fallback::Escalate {
                self.warnings.push(format!(
                    "{label}: escalation_timeout is not shorter than the gate's timeout, so the fallback applies first and the request is never escalated"
                ));
            }
        }
        (
            fallback,
            timeout_secs,
            GateTimers {
                reminder_interval,
                max_reminders: if reminder_interval.is_some() {
                    max_reminders
                } else {
                    0
                },
                escalation_timeout,
                escalation_target,
            },
        )
    }
}

/// Seconds as days, for messages (`0.5`, `7`).
fn fmt_days(secs: u64) -> String {
    let days = secs as f64 / 86_400.0;
    if days.fract() == 0.0 {
        format!("{days:.0}")
    } else {
        format!("{days:.2}")
    }
}

fn parse_type(t: &str) -> Option<InputType> {
    Some(match t.trim() {
        "string" | "str" => InputType::String,
        "number" | "float" => InputType::Number,
        "integer" | "int" => InputType::Integer,
        "boolean" | "bool" => InputType::Boolean,
        "array" | "list" => InputType::Array,
        "object" | "dict" => InputType::Object,
        _ => return None,
    })
}

/// Refuses absolute paths and `..` components in artifact path templates.
pub(crate) fn check_relative(p: &str) -> std::result::Result<(), &'static str> {
    let t = p.trim();
    if t.starts_with('/') || t.starts_with('\\') || t.get(1..2) == Some(":") {
        return Err("is absolute");
    }
    if t.split(['/', '\\']).any(|c| c.trim() == "..") {
        return Err("contains `..`");
    }
    Ok(())
}

/// Kahn's algorithm in levels: each layer's tasks only depend on earlier
/// layers. Returns the indexes left over (a cycle) on failure.
fn layers(tasks: &[Task]) -> std::result::Result<Vec<Vec<usize>>, Vec<usize>> {
    let index: BTreeMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut indegree: Vec<usize> = tasks
        .iter()
        .map(|t| {
            t.deps
                .iter()
                .filter(|d| index.contains_key(d.as_str()) && *d != &t.id)
                .count()
        })
        .collect();
    let mut done = vec![false; tasks.len()];
    let mut out = Vec::new();
    loop {
        let layer: Vec<usize> = (0..tasks.len())
            .filter(|&i| !done[i] && indegree[i] == 0)
            .collect();
        if layer.is_empty() {
            break;
        }
        for &i in &layer {
            done[i] = true;
        }
        for (j, t) in tasks.iter().enumerate() {
            if done[j] {
                continue;
            }
            for d in &t.deps {
                if let Some(&i) = index.get(d.as_str()) {
                    if layer.contains(&i) {
                        indegree[j] -= 1;
                    }
                }
            }
        }
        out.push(layer);
    }
    let mut left: Vec<usize> = (0..tasks.len()).filter(|&i| !done[i]).collect();
    if left.is_empty() {
        return Ok(out);
    }
    // Unscheduled tasks are on a cycle or downstream of one; peel off those
    // that nothing left depends on until only the cycle remains.
    loop {
        let needed = |i: usize| {
            left.iter().any(|&j| {
                tasks[j]
                    .deps
                    .iter()
                    .any(|d| index.get(d.as_str()) == Some(&i))
            })
        };
        let keep: Vec<usize> = left.iter().copied().filter(|&i| needed(i)).collect();
        if keep.len() == left.len() || keep.is_empty() {
            return Err(left);
        }
        left = keep;
    }
}

#[derive(Default)]
struct PolicyFields {
    require_approval: Option<bool>,
    approval_prompt: Option<String>,
    approval_condition: Option<String>,
    destructive: Option<bool>,
    reversible: Option<bool>,
    risk: Option<String>,
}

/// The agent's entry wins; the executor's declaration fills the gaps.
fn merge_policy(agent: ToolPolicy, base: &ToolPolicy) -> ToolPolicy {
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

/// `strands_tools.file_read` and friends map to the built-in of that name.
fn builtin_for_callable(callable: &str) -> Option<crate::tools::builtin::Builtin> {
    let name = callable.strip_prefix("strands_tools.")?;
    crate::tools::builtin::Builtin::from_name(name)
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

/// `security.approvers` / `approvals_required` / `allow_self_approval`.
fn approval_defaults(security: Option<&Value>) -> ApprovalDefaults {
    let Some(sec) = security else {
        return ApprovalDefaults::default();
    };
    ApprovalDefaults {
        approvers: sec
            .get("approvers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        approvals_required: sec
            .get("approvals_required")
            .and_then(Value::as_u64)
            .map(|n| n.max(1) as u32),
        allow_self_approval: sec.get("allow_self_approval").and_then(Value::as_bool),
    }
}

/// Gate timeouts, fallbacks, reminders and escalation (`gate_timing`).
#[cfg(test)]
mod timing_tests {
    use super::*;

    /// A chain: agent `a`, then one gate whose lines are `gate` (line 14 on).
    fn spec(gate: &str) -> String {
        format!(
            "version: 0\nname: t\nruntime:\n  provider: echo\nagents:\n  a:\n    prompt: hi\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n{gate}"
        )
    }

    fn gate_of(text: &str) -> GateSpec {
        match parse(text, Path::new("f.yaml")) {
            Ok(s) => match s.pattern {
                PatternSpec::Chain { steps } => match steps.into_iter().nth(1) {
                    Some(ChainStep::Gate(g)) => g,
                    _ => panic!("no gate"),
                },
                _ => panic!("not a chain"),
            },
            Err(e) => panic!("{e}\n{text}"),
        }
    }

    fn errors(text: &str) -> Vec<Diagnostic> {
        match parse(text, Path::new("f.yaml")) {
            Err(Error::Spec(d)) => d,
            other => panic!("expected diagnostics, got {other:?}"),
        }
    }

    #[test]
    fn every_fallback_word_and_the_old_ones() {
        for (word, want) in [
            ("approve", Fallback::Continue),
            ("continue", Fallback::Continue),
            ("reject", Fallback::Cancel),
            ("cancel", Fallback::Cancel),
            ("skip", Fallback::Skip),
            ("abort", Fallback::Abort),
        ] {
            let g = gate_of(&spec(&format!(
                "      - type: hitl\n        prompt: ok?\n        fallback_action: {word}\n"
            )));
            assert_eq!(g.fallback, want, "{word}");
        }
        // strands-cli: a hitl gate without one answers its default.
        let g = gate_of(&spec("      - type: hitl\n        prompt: ok?\n"));
        assert_eq!(g.fallback, Fallback::Default);
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        fallback_action: default\n        default: approve\n",
        ));
        assert_eq!(g.fallback, Fallback::Default);
        assert_eq!(g.default.as_deref(), Some("approve"));
    }

    #[test]
    fn defaults_and_escalation_targets_are_checked_where_written() {
        let d = errors(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        fallback_action: default\n        default: maybe\n",
        ));
        assert_eq!((d[0].line, d[0].column), (16, 18), "{d:#?}");
        assert!(d[0].message.contains("`approve` or `reject`"), "{d:#?}");
        let d = errors(&spec(
            "      - type: hitl\n        prompt: ok?\n        fallback_action: escalate\n",
        ));
        assert_eq!((d[0].line, d[0].column), (15, 26), "{d:#?}");
        assert!(
            d[0].message.contains("needs an escalation_target"),
            "{d:#?}"
        );
        let d = errors(&spec(
            "      - type: hitl\n        prompt: ok?\n        escalation_timeout: 5\n        escalation_target: [U0BOSS1, bob]\n",
        ));
        assert_eq!((d[0].line, d[0].column), (16, 28), "{d:#?}");
        assert!(d[0].message.contains("`bob`"), "{d:#?}");
    }

    #[test]
    fn reminders_and_escalation_become_durations() {
        let g = gate_of(&spec(concat!(
            "      - type: manual_gate\n",
            "        prompt: ok?\n",
            "        timeout_minutes: 60\n",
            "        reminder_interval: 0.5\n",
            "        max_reminders: 2\n",
            "        escalation_timeout: 30\n",
            "        escalation_target: [U0BOSS1, S0LEADS1, \"#ops\"]\n",
        )));
        assert_eq!(g.timeout_secs, Some(3600));
        let t = &g.timers;
        assert_eq!(
            t.reminder_interval,
            Some(std::time::Duration::from_secs(30))
        );
        assert_eq!(t.max_reminders, 2);
        assert_eq!(
            t.escalation_timeout,
            Some(std::time::Duration::from_secs(1800))
        );
        assert_eq!(
            t.escalation_target,
            vec![
                EscalationTarget::User("U0BOSS1".into()),
                EscalationTarget::Group("S0LEADS1".into()),
                EscalationTarget::Channel("ops".into()),
            ]
        );
        let g = gate_of(&spec(
            "      - type: hitl\n        prompt: ok?\n        reminder_interval: 10\n",
        ));
        assert_eq!(g.timers.max_reminders, DEFAULT_MAX_REMINDERS);
    }
}
