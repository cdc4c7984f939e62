//! Slack messages as templates: the approval message, its decided form, the
//! feedback modal and progress replies are Block Kit JSON rendered by
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

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use chrono::SecondsFormat;
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use slack_morphism::prelude::{SlackBlock, SlackView};

use crate::error::{Error, Result};
use crate::gate::{Answer, Decision, OpenGate};
use crate::spec::GateKind;

/// The environment variable naming a directory of template overrides.
pub const TEMPLATES_ENV: &str = "STRANDS_TEMPLATES";

/// The approval message (blocks).
pub const APPROVAL: &str = "approval.json.j2";
/// The approval message after a decision (blocks).
pub const DECIDED: &str = "decided.json.j2";
/// The modify / respond / reject modal (a view).
pub const MODAL: &str = "modal.json.j2";
/// A progress reply in the run's thread (blocks).
pub const PROGRESS: &str = "progress.json.j2";

/// Every template name; an override directory may replace any of them.
pub const TEMPLATE_NAMES: [&str; 4] = [APPROVAL, DECIDED, MODAL, PROGRESS];

const BUILTINS: [(&str, &str); 4] = [
    (APPROVAL, include_str!("../../templates/approval.json.j2")),
    (DECIDED, include_str!("../../templates/decided.json.j2")),
    (MODAL, include_str!("../../templates/modal.json.j2")),
    (PROGRESS, include_str!("../../templates/progress.json.j2")),
];

/// Section text limit.
pub const SECTION_TEXT_MAX: usize = 3000;
/// What a code-block section leaves for its content: the section limit less
/// the fences (```` ```\n ```` and ```` \n``` ````) and some slack. Pass it to
/// [`cut_for_section`] for previews and outputs; the built-in templates cut
/// the same text with `mrkdwn(2990)`, so a pre-cut text is never cut twice.
pub const CODE_BLOCK_MAX: usize = 2990;

/// Instructions one render may spend: the built-ins need a few thousand.
const FUEL: u64 = 200_000;

/// The sandboxed templates: built-ins plus overrides, no file access after
/// [`Templates::load`] (no loader: only the four known names exist, so an
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

    /// [`Templates::load`] with the directory named by `STRANDS_TEMPLATES`
    /// (unset or empty: built-ins only).
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(TEMPLATES_ENV) {
            Some(dir) if !dir.is_empty() => Self::load(Some(Path::new(&dir))),
            _ => Self::load(None),
        }
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
        let origin = self.origin(MODAL);
        let view = self.render_json(MODAL, v)?;
        check_modal(&view).map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        slack_view_shape(&view)
            .map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        Ok(view)
    }

    /// A progress reply's blocks.
    pub fn progress(&self, v: &ProgressView) -> Result<Vec<Value>> {
        self.message(PROGRESS, v)
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
        Ok(())
    }
}

/// What the approval message shows. Strings are uncut except `preview`,
/// which [`ApprovalView::from_gate`] cuts (templates cut the rest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalView {
    pub workflow: String,
    pub gate_id: String,
    /// `id#instance`: every button's `value`.
    pub handle: String,
    /// `hitl` | `manual_gate`.
    pub kind: String,
    /// `steps[2]`, `tasks.review`.
    pub position: String,
    pub prompt: String,
    /// The preview, already cut to fit a section ([`cut_for_section`]).
    pub preview: Option<String>,
    /// How many characters of the context the preview leaves out.
    pub preview_cut: usize,
    /// A Slack user id (`U…`, shown as a mention) or any name.
    pub started_by: String,
    pub session_id: String,
    /// RFC 3339.
    pub timeout_at: Option<String>,
    pub timeout_unix: Option<i64>,
}

impl ApprovalView {
    /// The view of an open gate. The preview (when the gate shows one) is
    /// the context cut to the spec's `preview_length`, then cut again by
    /// [`cut_for_section`] to fit a code-block section; `preview_cut` counts
    /// both cuts.
    pub fn from_gate(gate: &OpenGate, workflow: &str, session_id: &str, started_by: &str) -> Self {
        let (preview, preview_cut) = if gate.show_preview && !gate.context.trim().is_empty() {
            let (text, cut_spec) = gate.preview();
            let (text, cut_section) = cut_for_section(&text, CODE_BLOCK_MAX);
            (Some(text), cut_spec + cut_section)
        } else {
            (None, 0)
        };
        ApprovalView {
            workflow: workflow.to_string(),
            gate_id: gate.id.clone(),
            handle: gate.handle(),
            kind: kind_name(gate.kind).to_string(),
            position: gate.position.to_string(),
            prompt: gate.prompt.clone(),
            preview,
            preview_cut,
            started_by: started_by.to_string(),
            session_id: session_id.to_string(),
            timeout_at: gate
                .timeout_at
                .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
            timeout_unix: gate.timeout_at.map(|t| t.timestamp()),
        }
    }
}

/// The approval message after a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecidedView {
    pub approval: ApprovalView,
    /// `approve` | `reject` | `modify` | `respond` (`defer` renders generically).
    pub decision: String,
    /// A Slack user id, a name, or `timeout` (rendered as "Timed out → …").
    pub by: String,
    pub at: String,
    /// Reject reason, modify feedback or response text.
    pub detail: Option<String>,
}

impl DecidedView {
    /// The view of `answer` given to the gate shown by `approval`.
    pub fn from_answer(approval: ApprovalView, answer: &Answer) -> Self {
        let (decision, detail) = match &answer.decision {
            Decision::Approve => ("approve", None),
            Decision::Reject { reason } => ("reject", reason.clone()),
            Decision::Modify { feedback } => ("modify", Some(feedback.clone())),
            Decision::Respond { text } => ("respond", Some(text.clone())),
            Decision::Defer => ("defer", None),
        };
        DecidedView {
            approval,
            decision: decision.to_string(),
            by: answer.by.clone(),
            at: answer.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            detail,
        }
    }
}

/// The modal asking for modify feedback, a hitl response, or a reject reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModalView {
    /// `modify` | `respond` | `reject`; the callback_id is `strands_{kind}`.
    pub kind: String,
    /// Cut to 24 characters by the template; empty → a default per kind.
    pub title: String,
    pub prompt: String,
    /// Opaque, returned on submission; at most 3000 characters (not cut).
    pub private_metadata: String,
    /// Whether a reject reason is required (modify/respond always are).
    pub required: bool,
}

/// A progress reply in the run's thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressView {
    /// `step_done` | `paused` | `completed` | `failed` | `rejected`.
    pub event: String,
    pub workflow: String,
    pub session_id: String,
    pub text: String,
    /// Output, pre-cut with [`cut_for_section`]`(…, CODE_BLOCK_MAX)`; say
    /// in `text` when it was cut.
    pub output: Option<String>,
}

/// The template name of a gate kind.
pub fn kind_name(kind: GateKind) -> &'static str {
    match kind {
        GateKind::Hitl => "hitl",
        GateKind::ManualGate => "manual_gate",
    }
}

/// Escapes text for Slack mrkdwn: `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`,
/// so user text cannot form links, mentions or `<!channel>`.
pub fn escape_mrkdwn(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Characters `c` takes once escaped for mrkdwn.
fn escaped_len(c: char) -> usize {
    match c {
        '&' => 5,
        '<' | '>' => 4,
        _ => 1,
    }
}

/// Cuts text for a section so the rendered section stays within 3000 chars,
/// returning (text, cut_chars). `max` is what the text may take *once
/// escaped* for mrkdwn (`&` counts 5, `<` and `>` 4, others 1 per char),
/// e.g. [`CODE_BLOCK_MAX`]; the cut is on a char boundary and adds nothing;
/// `cut_chars` counts the chars of `text` left out.
pub fn cut_for_section(text: &str, max: usize) -> (String, usize) {
    let mut used = 0;
    let mut kept = 0;
    for (i, c) in text.char_indices() {
        let len = escaped_len(c);
        if used + len > max {
            let rest = text[i..].chars().count();
            return (text[..i].to_string(), rest);
        }
        used += len;
        kept += 1;
    }
    debug_assert_eq!(kept, text.chars().count());
    (text.to_string(), 0)
}

// ---------------------------------------------------------------------------
// The sandbox and its filters.

fn sandbox() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // A value printed without `tojson` still comes out as a JSON literal.
    env.set_auto_escape_callback(|_| AutoEscape::Json);
    env.set_fuel(Some(FUEL));
    env.add_filter("mrkdwn", mrkdwn_filter);
    env.add_filter("truncate_chars", truncate_chars_filter);
    env.add_filter("mention", mention_filter);
    env
}

/// `text|mrkdwn` escapes; `text|mrkdwn(max)` also cuts so the escaped text
/// (with the closing `…`) is at most `max` chars.
fn mrkdwn_filter(value: &str, max: Option<usize>) -> std::result::Result<String, minijinja::Error> {
    let Some(max) = max else {
        return Ok(escape_mrkdwn(value));
    };
    if max == 0 {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            "mrkdwn(max) needs max >= 1",
        ));
    }
    let total: usize = value.chars().map(escaped_len).sum();
    if total <= max {
        return Ok(escape_mrkdwn(value));
    }
    let (kept, _) = cut_for_section(value, max - 1);
    let mut out = escape_mrkdwn(&kept);
    out.push('…');
    Ok(out)
}

/// `text|truncate_chars(max)`: at most `max` chars, ending with `…` when cut.
fn truncate_chars_filter(value: &str, max: usize) -> std::result::Result<String, minijinja::Error> {
    if max == 0 {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            "truncate_chars(max) needs max >= 1",
        ));
    }
    Ok(truncate_chars(value, max))
}

fn truncate_chars(value: &str, max: usize) -> String {
    if value.chars().count() <= max {
        return value.to_string();
    }
    let mut out: String = value.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `who|mention`: `<@U…>` for a Slack user id, escaped text (at most 100
/// chars) for anything else, `someone` for nothing.
fn mention_filter(value: &str) -> String {
    let who = value.trim();
    if is_slack_user_id(who) {
        format!("<@{who}>")
    } else if who.is_empty() {
        "someone".to_string()
    } else {
        let (kept, cut) = cut_for_section(who, 99);
        let mut out = escape_mrkdwn(&kept);
        if cut > 0 {
            out.push('…');
        }
        out
    }
}

/// `U…` / `W…` followed by upper-case letters and digits, with a digit.
fn is_slack_user_id(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('U' | 'W'))
        && (8..=32).contains(&s.len())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && s.chars().skip(1).any(|c| c.is_ascii_digit())
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

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------
// slack-morphism: the shape check.

/// Each block must deserialize as a block type slack-morphism models; its
/// `Unknown` catch-all (which also swallows known types with a bad body) is
/// refused.
fn slack_blocks_shape(blocks: &[Value], prefix: &str) -> std::result::Result<(), String> {
    for (i, raw) in blocks.iter().enumerate() {
        let ty = raw.get("type").and_then(Value::as_str).unwrap_or("?");
        let block = SlackBlock::deserialize(raw).map_err(|e| {
            format!("{prefix}block {i} ({ty}) is not a Slack block (slack-morphism: {e})")
        })?;
        if matches!(
            block,
            SlackBlock::Unknown(_) | SlackBlock::ShareShortcut(_) | SlackBlock::Event(_)
        ) {
            return Err(format!(
                "{prefix}block {i} ({ty}) is not a Block Kit block slack-morphism can read \
                 (unknown type, or a field of the wrong shape)"
            ));
        }
    }
    Ok(())
}

fn slack_view_shape(view: &Value) -> std::result::Result<(), String> {
    let parsed = SlackView::deserialize(view)
        .map_err(|e| format!("view is not a Slack modal (slack-morphism: {e})"))?;
    match parsed {
        SlackView::Modal(_) => {}
        SlackView::Home(_) => return Err("view is a home tab, not a modal".to_string()),
    }
    let blocks = view
        .get("blocks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    slack_blocks_shape(blocks, "view ")
}

// ---------------------------------------------------------------------------
// Block Kit limits.

/// One Block Kit rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    MessageBlocks,
    ModalBlocks,
    BlockId,
    UniqueBlockId,
    SectionText,
    SectionFields,
    SectionFieldText,
    HeaderText,
    ActionsElements,
    ButtonText,
    ButtonValue,
    ButtonUrl,
    ActionId,
    UniqueActionId,
    ConfirmTitle,
    ConfirmText,
    ConfirmButton,
    ContextElements,
    /// Any other text object.
    Text,
    /// Slack rejects empty text.
    NonEmptyText,
    ModalTitle,
    ModalButton,
    PrivateMetadata,
    CallbackId,
    InputLabel,
    InputHint,
    Placeholder,
    InitialValue,
    ImageAltText,
    ImageUrl,
    /// Not a limit but a structural rule (a field missing or of the wrong type).
    Shape,
}

impl Limit {
    /// The maximum length or count, when the rule is one.
    pub fn max(self) -> Option<usize> {
        use Limit::*;
        Some(match self {
            MessageBlocks => 50,
            ModalBlocks => 100,
            BlockId | ActionId | CallbackId => 255,
            SectionText | Text | PrivateMetadata | InitialValue | ButtonUrl | ImageUrl => 3000,
            SectionFields | ContextElements => 10,
            SectionFieldText | ButtonValue | InputLabel | InputHint | ImageAltText => 2000,
            HeaderText => 150,
            ActionsElements => 25,
            ButtonText => 75,
            ConfirmTitle => 100,
            ConfirmText => 300,
            ConfirmButton => 30,
            ModalTitle | ModalButton => 24,
            Placeholder => 150,
            UniqueBlockId | UniqueActionId | NonEmptyText | Shape => return None,
        })
    }

    /// The rule in words: `header text ≤ 150 chars`.
    pub fn describe(self) -> String {
        use Limit::*;
        let what = match self {
            MessageBlocks => "blocks per message",
            ModalBlocks => "blocks per modal",
            BlockId => "block_id",
            UniqueBlockId => return "block_id unique in the message".into(),
            SectionText => "section text",
            SectionFields => "section fields",
            SectionFieldText => "section field text",
            HeaderText => "header text",
            ActionsElements => "actions elements",
            ButtonText => "button text",
            ButtonValue => "button value",
            ButtonUrl => "button url",
            ActionId => "action_id",
            UniqueActionId => return "action_id unique in its block".into(),
            ConfirmTitle => "confirm title",
            ConfirmText => "confirm text",
            ConfirmButton => "confirm/deny text",
            ContextElements => "context elements",
            Text => "text",
            NonEmptyText => return "text must not be empty".into(),
            ModalTitle => "modal title",
            ModalButton => "modal submit/close text",
            PrivateMetadata => "private_metadata",
            CallbackId => "callback_id",
            InputLabel => "input label",
            InputHint => "input hint",
            Placeholder => "placeholder",
            InitialValue => "initial_value",
            ImageAltText => "image alt_text",
            ImageUrl => "image url",
            Shape => return "Block Kit structure".into(),
        };
        let unit = match self {
            MessageBlocks | ModalBlocks | SectionFields | ActionsElements | ContextElements => "",
            _ => " chars",
        };
        format!("{what} ≤ {}{unit}", self.max().unwrap_or_default())
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A broken Block Kit rule: where (`block 3 (actions) elements[1].text`),
/// which rule, and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {detail} (limit: {limit})")]
pub struct LimitError {
    pub at: String,
    pub limit: Limit,
    pub detail: String,
}

fn fail<T>(
    at: &str,
    limit: Limit,
    detail: impl Into<String>,
) -> std::result::Result<T, LimitError> {
    Err(LimitError {
        at: at.to_string(),
        limit,
        detail: detail.into(),
    })
}

type Check = std::result::Result<(), LimitError>;

/// Checks Block Kit limits; the error says which block and which limit.
pub fn check_message(blocks: &[Value]) -> Result<(), LimitError> {
    if blocks.is_empty() {
        return fail("message", Limit::Shape, "no blocks");
    }
    check_blocks(blocks, Limit::MessageBlocks, "message", "")
}

/// Checks a modal view object against Block Kit limits.
pub fn check_modal(view: &Value) -> Result<(), LimitError> {
    let Some(obj) = view.as_object() else {
        return fail("view", Limit::Shape, "not a JSON object");
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("modal") => {}
        other => {
            return fail(
                "view.type",
                Limit::Shape,
                format!("is {}, not \"modal\"", other.unwrap_or("missing")),
            )
        }
    }
    text_object("view.title", obj.get("title"), true, Limit::ModalTitle)?;
    let has_submit = obj.contains_key("submit");
    if has_submit {
        text_object("view.submit", obj.get("submit"), true, Limit::ModalButton)?;
    }
    if obj.contains_key("close") {
        text_object("view.close", obj.get("close"), true, Limit::ModalButton)?;
    }
    optional_str(
        obj,
        "private_metadata",
        "view.private_metadata",
        Limit::PrivateMetadata,
    )?;
    optional_str(obj, "callback_id", "view.callback_id", Limit::CallbackId)?;
    let Some(blocks) = obj.get("blocks").and_then(Value::as_array) else {
        return fail("view.blocks", Limit::Shape, "missing or not an array");
    };
    check_blocks(blocks, Limit::ModalBlocks, "modal", "view ")?;
    let has_input = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("input"));
    if has_input && !has_submit {
        return fail(
            "view.submit",
            Limit::Shape,
            "a modal with input blocks needs a submit button",
        );
    }
    Ok(())
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn check_len(at: &str, s: &str, limit: Limit) -> Check {
    if let Some(max) = limit.max() {
        let n = chars(s);
        if n > max {
            return fail(at, limit, format!("{n} chars"));
        }
    }
    Ok(())
}

fn check_count(at: &str, n: usize, limit: Limit) -> Check {
    if let Some(max) = limit.max() {
        if n > max {
            return fail(at, limit, format!("{n} of them"));
        }
    }
    Ok(())
}

/// A string field that may be absent.
fn optional_str(obj: &Map<String, Value>, key: &str, at: &str, limit: Limit) -> Check {
    match obj.get(key) {
        None => Ok(()),
        Some(Value::String(s)) => check_len(at, s, limit),
        Some(other) => fail(
            at,
            Limit::Shape,
            format!("is a {}, not a string", json_kind(other)),
        ),
    }
}

/// A required text object: `{"type": "plain_text"|"mrkdwn", "text": "…"}`.
fn text_object(at: &str, v: Option<&Value>, plain_only: bool, limit: Limit) -> Check {
    let Some(obj) = v.and_then(Value::as_object) else {
        return fail(at, Limit::Shape, "missing text object");
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("plain_text") => {}
        Some("mrkdwn") if !plain_only => {}
        other => {
            let allowed = if plain_only {
                "plain_text"
            } else {
                "plain_text or mrkdwn"
            };
            return fail(
                &format!("{at}.type"),
                Limit::Shape,
                format!("is {}, not {allowed}", other.unwrap_or("missing")),
            );
        }
    }
    let Some(text) = obj.get("text").and_then(Value::as_str) else {
        return fail(
            &format!("{at}.text"),
            Limit::Shape,
            "missing or not a string",
        );
    };
    if text.trim().is_empty() {
        return fail(at, Limit::NonEmptyText, "empty text");
    }
    check_len(at, text, limit)
}

fn check_blocks(blocks: &[Value], count_limit: Limit, what: &str, prefix: &str) -> Check {
    check_count(what, blocks.len(), count_limit)?;
    let mut ids = HashSet::new();
    for (i, block) in blocks.iter().enumerate() {
        let Some(obj) = block.as_object() else {
            return fail(
                &format!("{prefix}block {i}"),
                Limit::Shape,
                "not a JSON object",
            );
        };
        let Some(ty) = obj.get("type").and_then(Value::as_str) else {
            return fail(&format!("{prefix}block {i}"), Limit::Shape, "no \"type\"");
        };
        let at = format!("{prefix}block {i} ({ty})");
        match obj.get("block_id") {
            None => {}
            Some(Value::String(id)) => {
                check_len(&format!("{at}.block_id"), id, Limit::BlockId)?;
                if id.is_empty() {
                    return fail(&format!("{at}.block_id"), Limit::Shape, "empty block_id");
                }
                if !ids.insert(id.as_str()) {
                    return fail(
                        &format!("{at}.block_id"),
                        Limit::UniqueBlockId,
                        format!("\"{id}\" is used twice"),
                    );
                }
            }
            Some(_) => {
                return fail(&format!("{at}.block_id"), Limit::Shape, "not a string");
            }
        }
        check_block(&at, ty, obj)?;
    }
    Ok(())
}

fn elements<'a>(
    at: &str,
    obj: &'a Map<String, Value>,
) -> std::result::Result<&'a [Value], LimitError> {
    match obj.get("elements").and_then(Value::as_array) {
        Some(els) if !els.is_empty() => Ok(els),
        Some(_) => fail(&format!("{at}.elements"), Limit::Shape, "empty"),
        None => fail(
            &format!("{at}.elements"),
            Limit::Shape,
            "missing or not an array",
        ),
    }
}

fn check_block(at: &str, ty: &str, obj: &Map<String, Value>) -> Check {
    match ty {
        "header" => text_object(
            &format!("{at}.text"),
            obj.get("text"),
            true,
            Limit::HeaderText,
        ),
        "section" => {
            let has_text = obj.contains_key("text");
            if has_text {
                text_object(
                    &format!("{at}.text"),
                    obj.get("text"),
                    false,
                    Limit::SectionText,
                )?;
            }
            match obj.get("fields") {
                None if !has_text => {
                    return fail(at, Limit::Shape, "a section needs text or fields");
                }
                None => {}
                Some(Value::Array(fields)) => {
                    check_count(&format!("{at}.fields"), fields.len(), Limit::SectionFields)?;
                    for (j, f) in fields.iter().enumerate() {
                        text_object(
                            &format!("{at}.fields[{j}]"),
                            Some(f),
                            false,
                            Limit::SectionFieldText,
                        )?;
                    }
                }
                Some(_) => return fail(&format!("{at}.fields"), Limit::Shape, "not an array"),
            }
            if let Some(acc) = obj.get("accessory") {
                check_element(&format!("{at}.accessory"), acc)?;
            }
            Ok(())
        }
        "actions" => {
            let els = elements(at, obj)?;
            check_count(&format!("{at}.elements"), els.len(), Limit::ActionsElements)?;
            let mut action_ids = HashSet::new();
            for (j, el) in els.iter().enumerate() {
                let el_at = format!("{at}.elements[{j}]");
                check_element(&el_at, el)?;
                if let Some(id) = el.get("action_id").and_then(Value::as_str) {
                    if !action_ids.insert(id) {
                        return fail(
                            &format!("{el_at}.action_id"),
                            Limit::UniqueActionId,
                            format!("\"{id}\" is used twice"),
                        );
                    }
                }
            }
            Ok(())
        }
        "context" => {
            let els = elements(at, obj)?;
            check_count(&format!("{at}.elements"), els.len(), Limit::ContextElements)?;
            for (j, el) in els.iter().enumerate() {
                let el_at = format!("{at}.elements[{j}]");
                if el.get("type").and_then(Value::as_str) == Some("image") {
                    check_image(&el_at, el)?;
                } else {
                    text_object(&el_at, Some(el), false, Limit::Text)?;
                }
            }
            Ok(())
        }
        "input" => {
            text_object(
                &format!("{at}.label"),
                obj.get("label"),
                true,
                Limit::InputLabel,
            )?;
            if obj.contains_key("hint") {
                text_object(
                    &format!("{at}.hint"),
                    obj.get("hint"),
                    true,
                    Limit::InputHint,
                )?;
            }
            match obj.get("element") {
                Some(el) => check_element(&format!("{at}.element"), el),
                None => fail(&format!("{at}.element"), Limit::Shape, "missing"),
            }
        }
        "image" => check_image(at, &Value::Object(obj.clone())),
        // Other types (divider, rich_text, …): the block_id rules above, and
        // slack-morphism decides whether they are Slack-shaped.
        _ => Ok(()),
    }
}

fn check_image(at: &str, el: &Value) -> Check {
    let Some(obj) = el.as_object() else {
        return fail(at, Limit::Shape, "not a JSON object");
    };
    match obj.get("alt_text").and_then(Value::as_str) {
        Some(alt) if !alt.trim().is_empty() => {
            check_len(&format!("{at}.alt_text"), alt, Limit::ImageAltText)?
        }
        _ => return fail(&format!("{at}.alt_text"), Limit::Shape, "missing or empty"),
    }
    optional_str(
        obj,
        "image_url",
        &format!("{at}.image_url"),
        Limit::ImageUrl,
    )
}

/// An interactive element: buttons in full, the common fields of others.
fn check_element(at: &str, el: &Value) -> Check {
    let Some(obj) = el.as_object() else {
        return fail(at, Limit::Shape, "not a JSON object");
    };
    let Some(ty) = obj.get("type").and_then(Value::as_str) else {
        return fail(at, Limit::Shape, "no \"type\"");
    };
    let at = format!("{at} ({ty})");
    optional_str(
        obj,
        "action_id",
        &format!("{at}.action_id"),
        Limit::ActionId,
    )?;
    if let Some(Value::String(id)) = obj.get("action_id") {
        if id.is_empty() {
            return fail(&format!("{at}.action_id"), Limit::Shape, "empty action_id");
        }
    }
    if obj.contains_key("placeholder") {
        text_object(
            &format!("{at}.placeholder"),
            obj.get("placeholder"),
            true,
            Limit::Placeholder,
        )?;
    }
    if let Some(confirm) = obj.get("confirm") {
        check_confirm(&format!("{at}.confirm"), confirm)?;
    }
    match ty {
        "button" => {
            text_object(
                &format!("{at}.text"),
                obj.get("text"),
                true,
                Limit::ButtonText,
            )?;
            optional_str(obj, "value", &format!("{at}.value"), Limit::ButtonValue)?;
            optional_str(obj, "url", &format!("{at}.url"), Limit::ButtonUrl)?;
            match obj.get("style") {
                None => Ok(()),
                Some(Value::String(s)) if s == "primary" || s == "danger" => Ok(()),
                Some(other) => fail(
                    &format!("{at}.style"),
                    Limit::Shape,
                    format!("is {other}, not \"primary\" or \"danger\""),
                ),
            }
        }
        "plain_text_input" => optional_str(
            obj,
            "initial_value",
            &format!("{at}.initial_value"),
            Limit::InitialValue,
        ),
        _ => Ok(()),
    }
}

fn check_confirm(at: &str, v: &Value) -> Check {
    let Some(obj) = v.as_object() else {
        return fail(at, Limit::Shape, "not a JSON object");
    };
    text_object(
        &format!("{at}.title"),
        obj.get("title"),
        true,
        Limit::ConfirmTitle,
    )?;
    text_object(
        &format!("{at}.text"),
        obj.get("text"),
        false,
        Limit::ConfirmText,
    )?;
    text_object(
        &format!("{at}.confirm"),
        obj.get("confirm"),
        true,
        Limit::ConfirmButton,
    )?;
    text_object(
        &format!("{at}.deny"),
        obj.get("deny"),
        true,
        Limit::ConfirmButton,
    )
}

// ---------------------------------------------------------------------------
// Sample views: the startup check of overrides, and the tests' normal case.

struct Samples {
    approvals: Vec<ApprovalView>,
    decided: Vec<DecidedView>,
    modals: Vec<ModalView>,
    progress: Vec<ProgressView>,
}

fn sample_approval(kind: GateKind) -> ApprovalView {
    ApprovalView {
        workflow: "deploy-service".into(),
        gate_id: "review".into(),
        handle: "review#1".into(),
        kind: kind_name(kind).into(),
        position: "steps[1]".into(),
        prompt: "*Approve the production deploy?*".into(),
        preview: Some("diff --git a/deploy.yaml b/deploy.yaml\n+replicas: 3".into()),
        preview_cut: 120,
        started_by: "U04APPROVER".into(),
        session_id: "3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f".into(),
        timeout_at: Some("2025-11-21T10:00:00Z".into()),
        timeout_unix: Some(1_763_719_200),
    }
}

fn samples() -> Samples {
    let manual = sample_approval(GateKind::ManualGate);
    let mut hitl = sample_approval(GateKind::Hitl);
    hitl.preview = None;
    hitl.preview_cut = 0;
    hitl.timeout_at = None;
    hitl.timeout_unix = None;
    hitl.started_by = "alice".into();
    let mut decided = Vec::new();
    for (decision, by, detail) in [
        ("approve", "U04APPROVER", None),
        ("reject", "U04APPROVER", Some("not on a Friday")),
        ("reject", "alice", None),
        (
            "modify",
            "U04APPROVER",
            Some("roll out behind a canary first"),
        ),
        ("respond", "U04APPROVER", Some("approved")),
        ("defer", "alice", None),
        ("approve", "timeout", None),
        (
            "reject",
            "timeout",
            Some("timed out (fallback_action: cancel)"),
        ),
        ("respond", "timeout", Some("yes")),
    ] {
        decided.push(DecidedView {
            approval: manual.clone(),
            decision: decision.into(),
            by: by.into(),
            at: "2025-11-21T09:30:00Z".into(),
            detail: detail.map(str::to_string),
        });
    }
    let modals = [
        ("modify", false),
        ("respond", false),
        ("reject", false),
        ("reject", true),
    ]
    .into_iter()
    .map(|(kind, required)| ModalView {
        kind: kind.into(),
        title: "Review".into(),
        prompt: "*Approve the production deploy?*".into(),
        private_metadata: "{\"session\":\"3f2c9a4e\",\"gate\":\"review#1\"}".into(),
        required,
    })
    .collect();
    let progress = ["step_done", "paused", "completed", "failed", "rejected"]
        .into_iter()
        .map(|event| ProgressView {
            event: event.into(),
            workflow: "deploy-service".into(),
            session_id: "3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f".into(),
            text: format!("Step 2 of 3: {event}"),
            output: (event == "completed").then(|| "All done.\nreplicas: 3".to_string()),
        })
        .collect();
    Samples {
        approvals: vec![manual, hitl],
        decided,
        modals,
        progress,
    }
}

#[cfg(test)]
mod tests {
    // TESTS
}
