//! How sessions are shown: the human text of a pause and the one JSON
//! object `--json` prints (the shapes scripts read), and exit codes.

use super::*;
use crate::model::Notification;

/// The exit code a session's status maps to.
pub fn exit_code(session: &Session) -> u8 {
    match session.status {
        Status::Completed => exit::OK,
        Status::Paused => exit::PAUSED,
        Status::Rejected => exit::REJECTED,
        Status::Failed => session
            .failure
            .as_ref()
            .map(|f| f.code)
            .unwrap_or(exit::RUNTIME),
        Status::Running => exit::RUNTIME,
    }
}

/// Prints the outcome of run/resume and returns its exit code.
pub(super) fn report(ctx: &Ctx, s: &Session, json: bool, note: Option<&Notification>) -> u8 {
    let code = exit_code(s);
    if json {
        println!("{}", session_json(ctx, s, false, note));
        if s.status == Status::Paused {
            eprintln!("{}", paused_text(ctx, s));
        }
        return code;
    }
    match s.status {
        Status::Paused => println!("{}", paused_text(ctx, s)),
        Status::Completed => {
            println!("{}", s.output.as_deref().unwrap_or_default());
            for a in &s.artifacts {
                eprintln!("  wrote {a}");
            }
            eprintln!("session {} completed", s.id);
        }
        Status::Rejected => eprintln!("session {} rejected", s.id),
        Status::Failed => eprintln!(
            "session {} failed: {}",
            s.id,
            s.failure
                .as_ref()
                .map(|f| f.message.as_str())
                .unwrap_or("unknown error")
        ),
        Status::Running => eprintln!(
            "session {} stopped while running; `strands resume {}` continues it",
            s.id, s.id
        ),
    }
    code
}

pub(super) fn paused_text(ctx: &Ctx, s: &Session) -> String {
    let Some(g) = s.first_gate() else {
        return format!("session {} is paused", s.id);
    };
    if s.gates.len() == 1 {
        return gate_text(ctx, s, g, None);
    }
    // Several gates are open at once: each is answered on its own.
    let all: Vec<String> = s
        .open_gates()
        .map(|g| gate_text(ctx, s, g, Some(&g.handle())))
        .collect();
    format!(
        "{} gates are open in session {}; answer each with --gate:\n\n{}",
        all.len(),
        s.id,
        all.join("\n\n")
    )
}

/// How one open gate is shown, with the commands that answer it (`pick`:
/// the `--gate` to name when several are open).
pub(super) fn gate_text(
    ctx: &Ctx,
    s: &Session,
    g: &crate::model::OpenGate,
    pick: Option<&str>,
) -> String {
    let resume = |rest: &str| match pick {
        Some(h) => ctx.resume_cmd(&s.id, &format!("--gate {h} {rest}")),
        None => ctx.resume_cmd(&s.id, rest),
    };
    let mut out = String::new();
    out.push_str(&format!(
        "⏸  Gate `{}` ({}) in workflow `{}`\n",
        g.id, g.position, s.workflow
    ));
    out.push_str(&format!("   {}\n", g.prompt));
    if g.show_preview && !g.context.is_empty() {
        let (preview, cut) = g.preview();
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
                s.id
            ));
        }
    }
    if let Some(t) = g.timeout_at {
        out.push_str(&format!(
            "\n   Timeout: {} (then: {})\n",
            t.to_rfc3339(),
            timeout_effect(g)
        ));
    }
    if !g.approvers.is_empty() {
        out.push_str(&format!("\n   Approvers: {}\n", g.approvers.join(", ")));
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
    out.push_str(&format!("\n   Session: {}\n", s.id));
    if g.kind == spec::GateKind::ToolCall {
        for c in s.agent_turn.iter().flat_map(|t| t.waiting()) {
            let trust = if c.request.as_ref().is_some_and(|r| r.trustable) {
                " | --trust"
            } else {
                ""
            };
            out.push_str(&format!(
                "   Answer:  {}\n",
                ctx.resume_cmd(&s.id, &format!("--call {} --approve | --reject --reason \"...\" | --edit-args '{{...}}'{trust}", c.call.id))
            ));
        }
        return out.trim_end().to_string();
    }
    out.push_str(&format!("   Resume:  {}\n", resume("--approve")));
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

pub(super) fn timeout_effect(g: &crate::model::OpenGate) -> String {
    match crate::gate::timeout_answer(g, Utc::now()).decision {
        Decision::Approve => "approve".into(),
        Decision::Respond { text } => format!("answer `{text}`"),
        Decision::Reject { .. } => "reject".into(),
        other => other.verb().into(),
    }
}

/// The calls of a tool-call gate: what each would do and where it stands.
pub(super) fn tool_calls_json(s: &Session) -> Value {
    let Some(turn) = &s.agent_turn else {
        return Value::Array(Vec::new());
    };
    Value::Array(
        turn.calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.call.id,
                    "tool": c.call.name,
                    "arguments": c.call.arguments,
                    "digest": c.digest,
                    "state": c.state,
                    "request": c.request,
                })
            })
            .collect(),
    )
}

/// The one JSON object scripts read.
pub(super) fn session_json(
    ctx: &Ctx,
    s: &Session,
    full: bool,
    note: Option<&Notification>,
) -> Value {
    let gate = s.first_gate().map(|g| gate_json(s, g, full));
    let open_gates: Vec<Value> = s.open_gates().map(|g| gate_json(s, g, full)).collect();
    session_json_with(ctx, s, full, gate, open_gates, note)
}

pub(super) fn gate_json(s: &Session, g: &crate::model::OpenGate, full: bool) -> Value {
    {
        let (preview, cut) = g.preview();
        json!({
            "id": g.id,
            "name": g.id,
            "handle": g.handle(),
            "instance": g.instance,
            "kind": g.kind,
            "position": g.position.to_string(),
            "prompt": g.prompt,
            "preview": if g.show_preview { Value::String(preview) } else { Value::Null },
            "preview_cut_chars": cut,
            "context": if full { Value::String(g.context.clone()) } else { Value::Null },
            "default": g.default,
            "opened_at": g.opened_at,
            "timeout_at": g.timeout_at,
            "calls": tool_calls_json(s),
            "approvers": g.approvers,
            "approvals_required": g.approvals_required,
            "approvals": g.approvals,
        })
    }
}

pub(super) fn session_json_with(
    ctx: &Ctx,
    s: &Session,
    full: bool,
    gate: Option<Value>,
    open_gates: Vec<Value>,
    note: Option<&Notification>,
) -> Value {
    let gates: Vec<Value> = s
        .history
        .iter()
        .map(|e| match &e.what {
            GateEventKind::Answered { answer, waited_ms } => json!({
                "gate": e.gate, "instance": e.instance, "event": "answered",
                "decision": answer.decision, "by": answer.by, "at": answer.at, "via": answer.via,
                "asked_at": e.asked_at, "waited_ms": waited_ms, "call": answer.call,
            }),
            GateEventKind::Skipped { condition } => json!({
                "gate": e.gate, "event": "skipped", "condition": condition,
            }),
        })
        .collect();
    let total = s.total_usage();
    let mut obj = json!({
        "session_id": s.id,
        "workflow": s.workflow,
        "pattern": s.pattern,
        "status": s.status,
        "exit_code": exit_code(s),
        "created_at": s.created_at,
        "updated_at": s.updated_at,
        "started_by": s.started_by,
        "gate": gate,
        "open_gates": open_gates,
        "output": s.output,
        "artifacts": s.artifacts,
        "gates": gates,
        "gates_asked": s.gates_opened,
        "human_wait_ms": s.human_wait_ms(),
        "usage": { "total": total, "by_agent": s.usage },
        "error": s.failure,
        "notification": note,
    });
    if s.status == Status::Paused {
        obj["resume"] = json!({
            "approve": ctx.resume_cmd(&s.id, "--approve"),
            "reject": ctx.resume_cmd(&s.id, "--reject --reason REASON"),
            "modify": ctx.resume_cmd(&s.id, "--modify --feedback FEEDBACK"),
            "respond": ctx.resume_cmd(&s.id, "--response TEXT"),
        });
    }
    if full {
        obj["variables"] = Value::Object(s.variables.clone());
        obj["state"] = serde_json::to_value(&s.state).unwrap_or(Value::Null);
        obj["spec_path"] = json!(s.spec_path);
        obj["spec_hash"] = json!(s.spec_hash);
        obj["human_feedback"] = json!(s.human_feedback);
        obj["pending_answer"] = json!(s.pending.as_ref().map(|p| &p.answer));
    }
    obj
}
