//! Validation of `context_policy` (notes, just-in-time retrieval tools,
//! compaction) with strands-cli's defaults and bounds, and the warnings for
//! keys this build accepts for compatibility but does not act on
//! (`telemetry`, `skills`, `env`,
//! `runtime.failure_policy`, an agent's `input_schema` / `output_schema`,
//! `context_policy.retrieval.mcp_servers`): each names the key and its
//! line, so nothing is ignored silently.

use serde_saphyr::Spanned;

use super::raw::{self, Document};
use super::{at, Validator};
use crate::spec::context::{Compaction, ContextPolicy, Notes, NotesFormat};
use crate::spec::ToolsConfig;

/// strands-cli's defaults.
const WHEN_TOKENS_OVER: u64 = 60_000;
const MIN_TOKENS_OVER: i64 = 1000;
const SUMMARY_RATIO: f64 = 0.35;
const PRESERVE_RECENT: usize = 12;
const INCLUDE_LAST: usize = 12;

impl Validator {
    /// `context_policy`, resolved against the `tools` section (a
    /// just-in-time `shell` needs `tools.shell`; an executor or MCP server
    /// named after a retrieval tool would hide it).
    pub(super) fn context_policy(
        &mut self,
        c: Option<&Spanned<raw::ContextPolicy>>,
        tools: &ToolsConfig,
    ) -> ContextPolicy {
        let mut out = ContextPolicy::default();
        let Some(c) = c else { return out };
        if let Some(comp) = &c.value.compaction {
            out.compaction = self.compaction(&comp.value);
        }
        if let Some(n) = &c.value.notes {
            out.notes = self.notes(&n.value);
        }
        if let Some(r) = &c.value.retrieval {
            for t in r.value.jit_tools.iter().flatten() {
                let name = t.value.trim();
                match super::tools::builtin(name) {
                    Some(b) if super::tools::shadowed(tools, b) => self.error(
                        at(t),
                        format!("context_policy.retrieval.jit_tools names the native tool `{b}`, and an http executor or MCP server of the spec has that id"),
                        Some("rename the executor or server".into()),
                    ),
                    Some("shell") if !tools.shell => self.error(
                        at(t),
                        "context_policy.retrieval.jit_tools names `shell`, which is off",
                        Some(
                            "enable it with top-level `tools: {shell: true}`, or remove it".into(),
                        ),
                    ),
                    Some(b) => {
                        if b == "tavily_search" {
                            self.tavily_at.get_or_insert(at(t));
                        }
                        if !out.jit_tools.iter().any(|j| j == b) {
                            out.jit_tools.push(b.to_string());
                        }
                    }
                    None => self.error(
                        at(t),
                        format!(
                            "context_policy.retrieval.jit_tools: `{name}` is not a built-in tool"
                        ),
                        Some(
                            "strands-cli's retrieval tools are grep, head, tail and search".into(),
                        ),
                    ),
                }
            }
            if let Some(m) = &r.value.mcp_servers {
                self.ignored(
                    at(m),
                    "context_policy.retrieval.mcp_servers",
                    "a placeholder in strands-cli too; give agents MCP tools with `tools.mcp`",
                );
            }
        }
        out
    }

    fn compaction(&mut self, c: &raw::Compaction) -> Option<Compaction> {
        let when = match &c.when_tokens_over {
            None => WHEN_TOKENS_OVER,
            Some(w) if w.value >= MIN_TOKENS_OVER => w.value as u64,
            Some(w) => {
                self.error(
                    at(w),
                    format!(
                        "context_policy.compaction.when_tokens_over is {}, below {MIN_TOKENS_OVER}",
                        w.value
                    ),
                    Some("strands-cli's schema requires at least 1000 tokens".into()),
                );
                WHEN_TOKENS_OVER
            }
        };
        let ratio = match &c.summary_ratio {
            None => SUMMARY_RATIO,
            Some(r) if (0.0..=1.0).contains(&r.value) => r.value,
            Some(r) => {
                self.error(
                    at(r),
                    format!(
                        "context_policy.compaction.summary_ratio is {}, not between 0 and 1",
                        r.value
                    ),
                    Some("the share of older messages to summarise, e.g. 0.35".into()),
                );
                SUMMARY_RATIO
            }
        };
        let preserve = match &c.preserve_recent_messages {
            None => PRESERVE_RECENT,
            Some(p) if p.value >= 1 => p.value as usize,
            Some(p) => {
                self.error(
                    at(p),
                    "context_policy.compaction.preserve_recent_messages must be at least 1",
                    None,
                );
                PRESERVE_RECENT
            }
        };
        let model = c
            .summarization_model
            .as_ref()
            .map(|m| m.value.trim().to_string());
        if model.as_deref() == Some("") {
            if let Some(m) = &c.summarization_model {
                self.error(
                    at(m),
                    "context_policy.compaction.summarization_model is empty",
                    Some("name a model of the runtime's provider, or leave the key out".into()),
                );
            }
        }
        c.enabled.unwrap_or(true).then(|| Compaction {
            when_tokens_over: when,
            summary_ratio: ratio,
            preserve_recent_messages: preserve,
            summarization_model: model.filter(|m| !m.is_empty()),
        })
    }

    fn notes(&mut self, n: &raw::Notes) -> Option<Notes> {
        let file = match crate::spec::relative_inside(&n.file.value) {
            Some(p) => p,
            None => {
                self.error(
                    at(&n.file),
                    format!(
                        "context_policy.notes.file `{}` is absolute, empty or leaves the working directory",
                        n.file.value
                    ),
                    Some("notes are written relative to the directory the run starts in: use a relative path such as `artifacts/notes.md`".into()),
                );
                return None;
            }
        };
        let include_last = match &n.include_last {
            None => INCLUDE_LAST,
            Some(i) if i.value >= 1 => i.value as usize,
            Some(i) => {
                self.error(
                    at(i),
                    "context_policy.notes.include_last must be at least 1",
                    None,
                );
                INCLUDE_LAST
            }
        };
        let format = match n.format.as_ref().map(|f| (f, f.value.trim())) {
            None | Some((_, "markdown")) => NotesFormat::Markdown,
            Some((_, "json")) => NotesFormat::Json,
            Some((f, other)) => {
                self.error(
                    at(f),
                    format!("context_policy.notes.format `{other}` is not markdown or json"),
                    None,
                );
                NotesFormat::Markdown
            }
        };
        Some(Notes {
            file,
            include_last,
            format,
        })
    }

    /// A warning for a key that is accepted and has no effect here; `at`
    /// is where its value is (the key's line is found from there).
    pub(super) fn ignored(&mut self, at: (u32, u32), key: &str, why: &str) {
        let line = self.key_line(at.0, key.rsplit('.').next().unwrap_or(key));
        self.warnings.push(format!(
            "{}:{line}: `{key}` is accepted for strands-cli compatibility and ignored by this build ({why})",
            self.file
        ));
    }

    /// The line of `key:` whose value starts at `line`: that line, or the
    /// nearest one above it (a block value starts below its key).
    fn key_line(&self, line: u32, key: &str) -> u32 {
        let lines: Vec<&str> = self.text.lines().collect();
        let wanted = format!("{key}:");
        (1..=line)
            .rev()
            .find(|&n| {
                lines
                    .get(n as usize - 1)
                    .map(|l| l.trim_start().trim_start_matches("- "))
                    .is_some_and(|l| l.starts_with(&wanted))
            })
            .unwrap_or(line)
    }

    /// Warnings for every accepted-and-ignored key of the document.
    pub(super) fn ignored_keys<C>(&mut self, doc: &Document<C>) {
        for (key, value, why) in [
            (
                "telemetry",
                &doc.telemetry,
                "its settings are not read; traces go where OTEL_EXPORTER_OTLP_ENDPOINT says",
            ),
            (
                "skills",
                &doc.skills,
                "skills are not loaded or offered to agents",
            ),
            (
                "env",
                &doc.env,
                "the spec's environment is not applied; MCP servers take their own `env`",
            ),
        ] {
            if let Some(v) = value {
                self.ignored(at(v), key, why);
            }
        }
        if let Some(f) = &doc.runtime.failure_policy {
            self.ignored(
                at(f),
                "runtime.failure_policy",
                "model calls are retried by STRANDS_MAX_RETRIES and STRANDS_RETRY_BASE_MS",
            );
        }
        for (id, a) in &doc.agents.value {
            for (key, v) in [
                ("input_schema", &a.input_schema),
                ("output_schema", &a.output_schema),
            ] {
                if let Some(v) = v {
                    self.ignored(
                        at(v),
                        &format!("agents.{id}.{key}"),
                        "agent replies are not checked against a schema",
                    );
                }
            }
        }
    }
}
