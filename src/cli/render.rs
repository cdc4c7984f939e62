//! How sessions are shown: the human text of a pause and the one JSON
//! object `--json` prints (the shapes scripts read), and exit codes. Both
//! are rendered from a [`SessionView`] — built here from a session in the
//! store, or read from a server (`STRANDS_SERVER`) — so the CLI prints the
//! same either way.

use serde_json::{json, Value};

use super::human;
use crate::error::Result;
use crate::hub::view::{GateView, SessionView};
use crate::model::Notification;
use crate::model::{Session, Status};
use crate::spec;

pub use crate::hub::view::exit_code;

/// What the words need of this invocation: the command that resumes a
/// session here (naming the store when it is not the default, or how the
/// binary was started), the process's clock (a deadline is worded as seen
/// now), and the server's web inbox when the CLI goes through one.
pub(super) struct Words {
    /// `strands [--store S] resume`.
    pub resume: String,
    pub clock: crate::clock::SharedClock,
    /// The server's base URL (`STRANDS_SERVER`), if any.
    pub server: Option<String>,
}

impl Words {
    /// The exact command that resumes session `id` with `flags`.
    pub fn resume_cmd(&self, id: &str, flags: &str) -> String {
        format!("{} {id} {flags}", self.resume)
    }
}

/// Prints the outcome of run/resume and returns its exit code.
pub(super) fn report(
    w: &Words,
    s: &Session,
    json: bool,
    note: Option<&Notification>,
) -> Result<u8> {
    report_view(w, &SessionView::of(s, false, note), json)
}

/// [`report`] of a view.
pub(super) fn report_view(w: &Words, v: &SessionView, json: bool) -> Result<u8> {
    let code = v.exit_code;
    if json {
        outln!("{}", view_json(w, v))?;
        if v.status == Status::Paused {
            eprintln!("{}", paused_text(w, v));
        }
        return Ok(code);
    }
    match v.status {
        Status::Paused => outln!("{}", paused_text(w, v))?,
        Status::Completed => {
            outln!("{}", v.output.as_deref().unwrap_or_default())?;
            for a in &v.artifacts {
                eprintln!("  wrote {a}");
            }
            eprintln!("session {} completed", v.session_id);
        }
        Status::Rejected => eprintln!("session {} rejected", v.session_id),
        Status::Cancelled => eprintln!("session {} cancelled", v.session_id),
        Status::Failed => eprintln!(
            "session {} failed: {}",
            v.session_id,
            v.error
                .as_ref()
                .map(|f| f.message.as_str())
                .unwrap_or("unknown error")
        ),
        Status::Running => eprintln!(
            "session {} stopped while running; `{}` continues it",
            v.session_id,
            w.resume_cmd(&v.session_id, "").trim_end()
        ),
    }
    Ok(code)
}

pub(super) fn paused_text(w: &Words, v: &SessionView) -> String {
    let Some(g) = &v.gate else {
        return format!("session {} is paused", v.session_id);
    };
    if v.open_gates.len() <= 1 {
        return gate_text(w, v, g, None);
    }
    // Several gates are open at once: each is answered on its own.
    let all: Vec<String> = v
        .open_gates
        .iter()
        .map(|g| gate_text(w, v, g, Some(&g.handle)))
        .collect();
    format!(
        "{} gates are open in session {}; answer each with --gate:\n\n{}",
        all.len(),
        v.session_id,
        all.join("\n\n")
    )
}

/// How one open gate is shown, with the commands that answer it (`pick`:
/// the `--gate` to name when several are open).
pub(super) fn gate_text(w: &Words, v: &SessionView, g: &GateView, pick: Option<&str>) -> String {
    let id = &v.session_id;
    let resume = |rest: &str| match pick {
        Some(h) => w.resume_cmd(id, &format!("--gate {h} {rest}")),
        None => w.resume_cmd(id, rest),
    };
    let mut out = String::new();
    out.push_str(&format!(
        "⏸  Gate `{}` ({}, {}) in workflow `{}`\n",
        g.id, g.position, g.kind, v.workflow
    ));
    out.push_str(&format!("   {}\n", g.prompt));
    if let Some(preview) = g.preview.as_deref().filter(|p| !p.is_empty()) {
        let cut = g.preview_cut_chars;
        out.push_str("\n   [Preview]\n");
        for line in preview.lines() {
            out.push_str(&format!("   {line}\n"));
        }
        if cut > 0 {
            out.push_str(&format!(
                "   … {} more characters not shown ({} of {}); `strands sessions show {}` shows all\n",
                cut,
                g.preview_length,
                g.preview_length + cut,
                id
            ));
        }
    }
    let now = w.clock.now();
    if let Some(t) = g.timeout_at {
        out.push_str(&format!(
            "\n   Timeout: {}\n",
            human::timeout_sentence(t, g.timeout_effect.as_deref(), now)
        ));
    }
    if let Some(words) =
        crate::hub::durations::business_deadline(g.hours.as_ref(), g.timeout_at, now)
    {
        out.push_str(&format!("   Business hours: {words}\n"));
    }
    if !g.approvers.is_empty() {
        out.push_str(&format!(
            "\n   Approvers: {}\n",
            crate::model::identity::listed(&g.approvers)
        ));
    }
    if let Some(r) = &g.rule {
        out.push_str(&format!("   {}\n", r.shown()));
    }
    if g.approvals_required > 1 {
        let who: Vec<&str> = g.approvals.iter().map(|a| a.by.as_str()).collect();
        out.push_str(&format!(
            "   {} of {} approvals{}\n",
            g.approvals.len(),
            g.approvals_required,
            if who.is_empty() {
                String::new()
            } else {
                format!(": {}", who.join(", "))
            }
        ));
    }
    out.push_str(&format!("\n   Session: {id}\n"));
    if let Some(server) = &w.server {
        // Through a server: its web inbox shows the run and answers it.
        out.push_str(&format!(
            "   Web:     {}\n",
            crate::hub::pages::session(server, id)
        ));
    }
    if g.kind == spec::GateKind::ToolCall {
        for c in g.calls.iter().filter(|c| c.waiting()) {
            let trust = if c.trustable() { " | --trust" } else { "" };
            out.push_str(&format!(
                "   Answer:  {}\n",
                w.resume_cmd(id, &format!("--call {} --approve | --reject --reason \"...\" | --edit-args '{{...}}'{trust}", c.id))
            ));
        }
        return out.trim_end().to_string();
    }
    if let Some(form) = &g.form {
        out.push_str(&format!("   Fill in: {}\n", form.summary()));
    }
    out.push_str(&format!("   Resume:  {}\n", resume(&approve_args(g))));
    if g.allow_trust {
        out.push_str(&format!("            {}\n", resume("--trust")));
    }
    out.push_str(&format!(
        "            {}\n",
        resume("--reject --reason \"...\"")
    ));
    if g.kind == spec::GateKind::Hitl {
        out.push_str(&format!("            {}\n", resume("--response \"...\"")));
    }
    out.push_str(&format!(
        "            {}",
        resume("--modify --feedback \"...\"")
    ));
    out
}

/// How `--approve` reads for gate `g`: with a `--value NAME=…` per field
/// of its form (required ones first).
pub(super) fn approve_args(g: &GateView) -> String {
    let Some(form) = &g.form else {
        return "--approve".into();
    };
    let mut fields: Vec<_> = form.fields().iter().collect();
    fields.sort_by_key(|f| !f.required);
    let mut out = String::from("--approve");
    for f in fields {
        out.push_str(&format!(" --value {}=…", f.name));
    }
    out
}

/// The view with the commands that answer it, as JSON.
pub(super) fn view_json(w: &Words, v: &SessionView) -> Value {
    let mut v = v.clone();
    if v.status == Status::Paused {
        let id = &v.session_id;
        let approve = v.gate.as_ref().map_or("--approve".into(), approve_args);
        v.resume = Some(json!({
            "approve": w.resume_cmd(id, &approve),
            "reject": w.resume_cmd(id, "--reject --reason REASON"),
            "modify": w.resume_cmd(id, "--modify --feedback FEEDBACK"),
            "respond": w.resume_cmd(id, "--response TEXT"),
        }));
    }
    serde_json::to_value(&v).unwrap_or(Value::Null)
}
