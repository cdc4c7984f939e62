//! Slack messages as templates: the approval message, its decided form, the
//! tool-call approval message (one row of buttons per call, re-rendered
//! after each decision), the feedback / reason / edit modal, the "View full
//! output" modal, the modal filling in a gate's form and progress replies
//! are Block Kit JSON rendered by
//! minijinja from `templates/*.json.j2`, so a team can restyle what the bot
//! posts without rebuilding it (`STRANDS_TEMPLATES=DIR`: a file in DIR
//! replaces the built-in of the same name).
//!
//! Templates are user code and gate text is model output, so nothing that
//! comes out of here is trusted to be well-formed. Every render goes through
//! three gates before it can reach Slack:
//!
//! 1. it must parse as JSON (templates `tojson` every value, and the
//!    environment JSON-escapes any value printed without it);
//! 2. [`check_message`] / [`check_modal`] enforce the Block Kit limits
//!    (SLACK.md): Slack rejects a whole message for one over-long field, and a
//!    rejected approval message is a gate nobody hears about;
//! 3. it must deserialize into slack-morphism's `SlackBlock` / `SlackView`
//!    as a block type it knows (its `Unknown` catch-all is refused).
//!
//! A failure is [`crate::Error::Runtime`] naming the template file.
//!
//! Where long text is cut:
//! - previews and outputs: in Rust, with [`cut_for_section`] (see
//!   [`ApprovalView::from_gate`]), because the message says how many
//!   characters were cut;
//! - everything else user-controlled (prompt, workflow name, gate id, reasons,
//!   names): in the templates, with the filters registered here, because
//!   only the template knows where a string lands (a 150-char header or a
//!   3000-char section) and escaping changes lengths. `mrkdwn(max)` escapes
//!   `&`, `<`, `>` and cuts the *escaped* text to `max` characters;
//!   `truncate_chars(max)` cuts plain text; `mention` renders a Slack user id
//!   as `<@U…>` and anything else as escaped text. Cuts end with `…`.
//! - Lengths are counted in Unicode scalar values (`chars`).
//! - The gate handle is never cut where it is used for routing (button
//!   `value`s); the actions `block_id` is `gate:{handle}` cut to 255, so a
//!   handle over 2000 characters is an error, not a broken button.
//! - Tool calls: a call's buttons carry `handle|call id` (never cut) in an
//!   actions block `call:{handle}:{index}`; its arguments are pretty JSON
//!   cut in Rust (at most [`TOOL_ARGS_MAX`] each, [`TOOL_ARGS_TOTAL`] over
//!   the message) and the message says how much was cut; a call id too long
//!   for a button's 2000 characters gets no buttons and a pointer to the
//!   CLI instead.
//!
//! This module holds [`Templates`]: loading the built-ins and overrides,
//! the self-check, and the render entry points. Its submodules follow the
//! three gates: `filters` (the sandbox and its filters, escaping with
//! `escape`), `views` (what a
//! template is given, built from a gate, an answer or a session), `limits`
//! (the Block Kit limit and shape checks, and the cut helpers), and
//! `samples` (the sample views of the self-check, and the tests' shared
//! fixtures). Callers use the re-exports here. Nothing in `blocks` talks to
//! Slack: callers post what it renders.

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::Environment;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

mod escape;
mod filters;
mod limits;
mod samples;
mod views;

pub use escape::escape_mrkdwn;
pub use limits::{
    check_home, check_message, check_modal, cut_for_section, Limit, LimitError, CODE_BLOCK_MAX,
    INITIAL_VALUE_MAX, SECTION_TEXT_MAX,
};
pub use views::{
    call_answer, kind_name, ApprovalView, CallOutcomeView, DecidedView, FormView, ModalView,
    OutputView, ProgressView, ToolApprovalView, ToolCallView, MAX_OUTPUT_CHUNKS, MAX_TOOL_CALLS,
    TOOL_ARGS_MAX, TOOL_ARGS_MIN, TOOL_ARGS_TOTAL,
};

use filters::sandbox;
use limits::{json_kind, slack_blocks_shape, slack_view_shape};
use samples::samples;

/// The environment variable naming a directory of template overrides.
pub const TEMPLATES_ENV: &str = "STRANDS_TEMPLATES";

/// The approval message (blocks).
pub const APPROVAL: &str = "approval.json.j2";
/// The approval message after a decision (blocks).
pub const DECIDED: &str = "decided.json.j2";
/// The modify / respond / reject (reason) / edit modal (a view).
pub const MODAL: &str = "modal.json.j2";
/// A progress reply in the run's thread (blocks).
pub const PROGRESS: &str = "progress.json.j2";
/// The message asking for decisions on an agent's tool calls (blocks), also
/// re-rendered after each per-call decision.
pub const TOOL_APPROVAL: &str = "tool_approval.json.j2";
/// The "View full output" modal (a view): the whole text a cut preview
/// leaves out.
pub const OUTPUT: &str = "output.json.j2";
/// The modal that fills in a gate's form (a view).
pub const FORM: &str = "form.json.j2";

/// Every template name; an override directory may replace any of them.
pub const TEMPLATE_NAMES: [&str; 7] = [
    APPROVAL,
    DECIDED,
    MODAL,
    PROGRESS,
    TOOL_APPROVAL,
    OUTPUT,
    FORM,
];

const BUILTINS: [(&str, &str); 7] = [
    (
        APPROVAL,
        include_str!("../../../templates/approval.json.j2"),
    ),
    (DECIDED, include_str!("../../../templates/decided.json.j2")),
    (MODAL, include_str!("../../../templates/modal.json.j2")),
    (
        PROGRESS,
        include_str!("../../../templates/progress.json.j2"),
    ),
    (
        TOOL_APPROVAL,
        include_str!("../../../templates/tool_approval.json.j2"),
    ),
    (OUTPUT, include_str!("../../../templates/output.json.j2")),
    (FORM, include_str!("../../../templates/form.json.j2")),
];

/// The sandboxed templates: built-ins plus overrides, no file access after
/// [`Templates::load`] (no loader: only the known names exist, so an
/// `{% include %}` can reach nothing else), strict undefined variables, a
/// fuel limit, JSON auto-escaping, and the `mrkdwn`, `truncate_chars` and
/// `mention` filters.
pub struct Templates {
    env: Environment<'static>,
    /// Where each template came from, for errors: its path, or `built-in NAME`.
    origins: BTreeMap<&'static str, String>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

impl Templates {
    /// Built-ins, with any same-named file in `dir` replacing its built-in.
    /// Errors (missing directory, unreadable file, template syntax) name the
    /// file. Every template is then rendered once with sample data, so a
    /// template that renders invalid JSON or breaks a limit fails here, at
    /// startup, rather than when a gate opens.
    pub fn load(dir: Option<&Path>) -> Result<Self> {
        let mut env = sandbox();
        // The web inbox's base URL (no trailing slash; empty: no link).
        env.add_global("web_base", minijinja::Value::from(""));
        let mut origins = BTreeMap::new();
        if let Some(dir) = dir {
            warn_unknown_files(dir)?;
        }
        for (name, builtin) in BUILTINS {
            let (origin, source) = match dir {
                Some(dir) => {
                    let path = dir.join(name);
                    match std::fs::read_to_string(&path) {
                        Ok(text) => (path.display().to_string(), text),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            (format!("built-in {name}"), builtin.to_string())
                        }
                        Err(e) => {
                            return Err(Error::io(
                                format!("reading Slack template {}", path.display()),
                                e,
                            ))
                        }
                    }
                }
                None => (format!("built-in {name}"), builtin.to_string()),
            };
            env.add_template_owned(name, source)
                .map_err(|e| template_error(&origin, &e))?;
            origins.insert(name, origin);
        }
        let templates = Templates { env, origins };
        templates.self_check()?;
        Ok(templates)
    }

    /// Messages link to the run's page in the web inbox under `base` (the
    /// service's public URL): an "Open in browser" button.
    pub fn with_web_base(mut self, base: &str) -> Self {
        self.env.add_global(
            "web_base",
            minijinja::Value::from(base.trim_end_matches('/').to_string()),
        );
        self
    }

    /// Where template `name` came from: a path, or `built-in NAME`.
    pub fn origin<'a>(&'a self, name: &'a str) -> &'a str {
        self.origins.get(name).map(String::as_str).unwrap_or(name)
    }

    /// The approval message's blocks.
    pub fn approval(&self, v: &ApprovalView) -> Result<Vec<Value>> {
        self.message(APPROVAL, v)
    }

    /// The approval message's blocks once decided (no buttons).
    pub fn decided(&self, v: &DecidedView) -> Result<Vec<Value>> {
        self.message(DECIDED, v)
    }

    /// The modal view object, for `views.open`.
    pub fn modal(&self, v: &ModalView) -> Result<Value> {
        self.view(MODAL, v)
    }

    /// The "View full output" modal, for `views.open`.
    pub fn output(&self, v: &OutputView) -> Result<Value> {
        self.view(OUTPUT, v)
    }

    /// The modal filling in a gate's form, for `views.open`.
    pub fn form(&self, v: &FormView) -> Result<Value> {
        self.view(FORM, v)
    }

    fn view<S: Serialize>(&self, name: &str, ctx: &S) -> Result<Value> {
        let origin = self.origin(name);
        let view = self.render_json(name, ctx)?;
        check_modal(&view).map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        slack_view_shape(&view)
            .map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        Ok(view)
    }

    /// A progress reply's blocks.
    pub fn progress(&self, v: &ProgressView) -> Result<Vec<Value>> {
        self.message(PROGRESS, v)
    }

    /// The tool-call approval message's blocks (posted, and re-rendered
    /// after each decision).
    pub fn tool_approval(&self, v: &ToolApprovalView) -> Result<Vec<Value>> {
        self.message(TOOL_APPROVAL, v)
    }

    fn message<S: Serialize>(&self, name: &str, ctx: &S) -> Result<Vec<Value>> {
        let origin = self.origin(name);
        let blocks = match self.render_json(name, ctx)? {
            Value::Array(blocks) => blocks,
            other => {
                return Err(Error::Runtime(format!(
                    "Slack template {origin}: rendered a JSON {}, not an array of blocks",
                    json_kind(&other)
                )))
            }
        };
        check_message(&blocks)
            .map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        slack_blocks_shape(&blocks, "")
            .map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        Ok(blocks)
    }

    fn render_json<S: Serialize>(&self, name: &str, ctx: &S) -> Result<Value> {
        let origin = self.origin(name);
        let text = self
            .env
            .get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(|e| template_error(origin, &e))?;
        serde_json::from_str(&text).map_err(|e| {
            Error::Runtime(format!(
                "Slack template {origin}: did not render valid JSON: {e}"
            ))
        })
    }

    /// Renders every template with sample views (every gate kind, decision,
    /// modal kind and progress event).
    fn self_check(&self) -> Result<()> {
        let s = samples();
        for v in &s.approvals {
            self.approval(v)?;
        }
        for v in &s.decided {
            self.decided(v)?;
        }
        for v in &s.modals {
            self.modal(v)?;
        }
        for v in &s.progress {
            self.progress(v)?;
        }
        for v in &s.tools {
            self.tool_approval(v)?;
        }
        for v in &s.outputs {
            self.output(v)?;
        }
        for v in &s.forms {
            self.form(v)?;
        }
        Ok(())
    }
}

fn template_error(origin: &str, e: &minijinja::Error) -> Error {
    let mut msg = format!("Slack template {origin}");
    if let Some(line) = e.line() {
        msg.push_str(&format!(":{line}"));
    }
    msg.push_str(": ");
    msg.push_str(&e.kind().to_string());
    if let Some(d) = e.detail() {
        msg.push_str(": ");
        msg.push_str(d);
    }
    Error::Runtime(msg)
}

fn warn_unknown_files(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::io(
            format!("reading Slack template directory {}", dir.display()),
            e,
        )
    })?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".j2") && !TEMPLATE_NAMES.contains(&name.as_ref()) {
            tracing::warn!(
                file = %entry.path().display(),
                known = ?TEMPLATE_NAMES,
                "ignoring a file in the Slack template directory that overrides no template"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
