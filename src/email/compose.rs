//! The words of a mail: what is asked (workflow, gate, prompt, the gate's
//! redacted preview, who started the run, the deadline in words), the
//! one-tap links, a reminder of it, and its outcome — each as a plain-text
//! and an HTML part (every interpolated value HTML-escaped, no remote
//! images, no scripts), with the headers that thread them: one Message-ID
//! per gate asking; reminders and the outcome reply to it (`In-Reply-To`,
//! `References`).
//!
//! Pure functions of the session and the links: nothing here sends or
//! reads the store.

use chrono::{DateTime, Utc};

use crate::hub::durations::duration;
use crate::model::{Answer, Decision, GateEventKind, GateKind, OpenGate, Session};

/// A mail's text, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Composed {
    pub subject: String,
    pub text: String,
    pub html: String,
    /// `<…@domain>`.
    pub message_id: String,
    /// The gate's asking mail, for reminders and the outcome.
    pub in_reply_to: Option<String>,
}

/// The links a mail carries (full URLs).
#[derive(Debug, Clone, Default)]
pub struct Links {
    pub approve: Option<String>,
    pub reject: Option<String>,
    pub open: String,
}

/// `<handle.session@domain>`: the Message-ID of the mail asking for gate
/// `handle`; `part` (`reminder-2`, `outcome`) for the mails replying to it.
pub fn message_id(session: &str, handle: &str, part: Option<&str>, domain: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    let part = part.map(|p| format!(".{}", clean(p))).unwrap_or_default();
    format!(
        "<{}.{}{part}@{}>",
        clean(handle),
        clean(session),
        clean(domain)
    )
}

/// `&`, `<`, `>`, `"` and `'` as entities.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The deadline in the reader's words: when, how long from `now`, and
/// what happens then.
pub fn deadline(gate: &OpenGate, now: DateTime<Utc>) -> String {
    let business =
        crate::hub::durations::business_deadline(gate.hours.as_ref(), gate.timeout_at, now);
    match (gate.timeout_at, business) {
        (Some(at), Some(words)) if at > now => {
            return format!(
                "Please answer by {words}; then the gate's fallback applies: {}.",
                gate.fallback.name()
            )
        }
        (None, Some(words)) => {
            return format!("There is no deadline: the run waits for an answer ({words}).")
        }
        _ => {}
    }
    match gate.timeout_at {
        None => "There is no deadline: the run waits for an answer.".into(),
        Some(at) if at <= now => format!(
            "The deadline passed at {}; the gate's fallback ({}) applies.",
            at.format("%a %-d %b %Y, %H:%M UTC"),
            gate.fallback.name()
        ),
        Some(at) => format!(
            "Please answer by {} (in {}); then the gate's fallback applies: {}.",
            at.format("%a %-d %b %Y, %H:%M UTC"),
            duration((at - now).num_seconds()),
            gate.fallback.name()
        ),
    }
}

struct Body {
    /// Paragraphs of text, escaped for HTML as they are written.
    lines: Vec<(String, Style)>,
    buttons: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Para,
    Quote,
    Small,
}

impl Body {
    fn text(&self) -> String {
        let mut out = String::new();
        for (l, style) in &self.lines {
            match style {
                Style::Quote => {
                    for q in l.lines() {
                        out.push_str("> ");
                        out.push_str(q);
                        out.push('\n');
                    }
                }
                _ => out.push_str(l),
            }
            out.push_str("\n\n");
        }
        for (label, url) in &self.buttons {
            out.push_str(&format!("{label}: {url}\n"));
        }
        out
    }

    fn html(&self, title: &str) -> String {
        let mut out = format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head>\n<body style=\"font-family: sans-serif; max-width: 40em;\">\n",
            escape(title)
        );
        for (l, style) in &self.lines {
            let l = escape(l).replace('\n', "<br>\n");
            out.push_str(&match style {
                Style::Para => format!("<p>{l}</p>\n"),
                Style::Quote => format!(
                    "<blockquote style=\"border-left: 3px solid #999; margin: 0; padding-left: 1em; white-space: pre-wrap;\">{l}</blockquote>\n"
                ),
                Style::Small => format!("<p style=\"color: #555; font-size: small;\">{l}</p>\n"),
            });
        }
        if !self.buttons.is_empty() {
            out.push_str("<p>");
            for (label, url) in &self.buttons {
                out.push_str(&format!(
                    "<a href=\"{}\" style=\"display: inline-block; padding: 0.5em 1em; margin-right: 0.5em; border: 1px solid #333; border-radius: 4px; text-decoration: none;\">{}</a>",
                    escape(url),
                    escape(label)
                ));
            }
            out.push_str("</p>\n");
        }
        out.push_str("</body></html>\n");
        out
    }
}

fn subject_of(session: &Session, gate_id: &str) -> String {
    // No line breaks in a header, whatever a workflow is called.
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "[strands] Approval needed: {} / {}",
        one_line(&session.workflow),
        one_line(gate_id)
    )
}

/// The mail asking `gate` of `session` (reminder `reminder` = `(n, of)`).
pub fn ask(
    session: &Session,
    gate: &OpenGate,
    links: &Links,
    reminder: Option<(u32, u32)>,
    domain: &str,
    now: DateTime<Utc>,
) -> Composed {
    let handle = gate.handle();
    let asking = message_id(&session.id, &handle, None, domain);
    let mut lines = Vec::new();
    if let Some((n, of)) = reminder {
        lines.push((
            format!(
                "{}: nobody has answered yet.",
                crate::hub::durations::reminder(n, of)
            ),
            Style::Para,
        ));
    }
    lines.push((
        format!(
            "The run {} of workflow {} waits for you at gate {} (started by {}).",
            session.id, session.workflow, gate.id, session.started_by
        ),
        Style::Para,
    ));
    lines.push((gate.prompt.clone(), Style::Quote));
    if gate.show_preview && !gate.context.trim().is_empty() {
        let (preview, cut) = gate.preview();
        lines.push((preview, Style::Quote));
        if cut > 0 {
            lines.push((
                format!("({cut} more characters in the browser.)"),
                Style::Small,
            ));
        }
    }
    if gate.kind == GateKind::ToolCall {
        lines.push((
            "The agent's tool calls wait: open the run in the browser to answer each.".into(),
            Style::Para,
        ));
    }
    if let Some(form) = &gate.form {
        // A link cannot carry values: approving is filling them in on the page.
        lines.push((
            format!(
                "Approving it means filling in {}: open the run in the browser to do so.",
                form.summary()
            ),
            Style::Para,
        ));
    }
    if let Some(r) = &gate.rule {
        lines.push((r.shown(), Style::Para));
    }
    if gate.approvals_required > 1 {
        lines.push((
            format!(
                "It needs {} approvals ({} so far).",
                gate.approvals_required,
                gate.approvals.len()
            ),
            Style::Para,
        ));
    }
    lines.push((deadline(gate, now), Style::Para));
    lines.push((
        "Each link works once. Opening a link decides nothing: its page has the button.".into(),
        Style::Small,
    ));
    let mut buttons = Vec::new();
    if gate.step_up.is_some() {
        // A link is not a passkey: approving is confirmed on the page.
        lines.push((
            "Approving it takes your passkey: confirm with your passkey on the run's page.".into(),
            Style::Para,
        ));
        buttons.push(("Confirm with your passkey".to_string(), links.open.clone()));
    } else if let Some(u) = &links.approve {
        buttons.push(("Approve".to_string(), u.clone()));
    }
    if gate.form.is_some() {
        buttons.push(("Fill in and approve".to_string(), links.open.clone()));
    }
    if let Some(u) = &links.reject {
        buttons.push(("Reject".to_string(), u.clone()));
    }
    buttons.push(("Open in browser".to_string(), links.open.clone()));
    let body = Body { lines, buttons };
    let base = subject_of(session, &gate.id);
    match reminder {
        None => Composed {
            html: body.html(&base),
            text: body.text(),
            subject: base,
            message_id: asking,
            in_reply_to: None,
        },
        Some((n, _)) => {
            let subject = format!("Re: {base}");
            Composed {
                html: body.html(&subject),
                text: body.text(),
                subject,
                message_id: message_id(
                    &session.id,
                    &handle,
                    Some(&format!("reminder-{n}")),
                    domain,
                ),
                in_reply_to: Some(asking),
            }
        }
    }
}

/// The answer that decided gate `handle` of `session`, if it was decided.
pub fn decided<'a>(session: &'a Session, handle: &str) -> Option<&'a Answer> {
    session.history.iter().rev().find_map(|e| match &e.what {
        GateEventKind::Answered { answer, .. }
            if format!("{}#{}", e.gate, e.instance) == handle =>
        {
            Some(answer)
        }
        _ => None,
    })
}

/// The mail saying how gate `handle` of `session` was decided.
pub fn outcome(
    session: &Session,
    handle: &str,
    answer: &Answer,
    open: &str,
    domain: &str,
) -> Composed {
    let gate_id = handle.rsplit_once('#').map_or(handle, |(id, _)| id);
    let how = match (&answer.decision, answer.via.as_str()) {
        (d, "timeout") => format!(
            "Timed out at {}: {} by fallback.",
            answer.at.format("%Y-%m-%d %H:%M UTC"),
            d.verb()
        ),
        (d, via) => format!(
            "{} by {} at {} (via {via}).",
            capitalized(d.verb()),
            answer.by,
            answer.at.format("%Y-%m-%d %H:%M UTC")
        ),
    };
    let mut lines = vec![(
        format!(
            "Gate {gate_id} of the run {} (workflow {}) is decided.",
            session.id, session.workflow
        ),
        Style::Para,
    )];
    lines.push((how.clone(), Style::Para));
    if let Decision::Reject { reason: Some(r) } | Decision::Abort { reason: Some(r) } =
        &answer.decision
    {
        lines.push((format!("Reason: {r}"), Style::Quote));
    }
    if let Decision::Fill { values } = &answer.decision {
        lines.push((
            format!("Values: {}", crate::model::form::shown(values)),
            Style::Quote,
        ));
    }
    lines.push(("Nothing more is needed from you.".into(), Style::Small));
    let body = Body {
        lines,
        buttons: vec![("Open in browser".into(), open.to_string())],
    };
    let subject = format!("Re: {}", subject_of(session, gate_id));
    Composed {
        html: body.html(&subject),
        text: body.text(),
        subject,
        message_id: message_id(&session.id, handle, Some("outcome"), domain),
        in_reply_to: Some(message_id(&session.id, handle, None, domain)),
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_interpolated_value() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        let body = Body {
            lines: vec![("<img src=http://evil.example/x>".into(), Style::Quote)],
            buttons: vec![("Open".into(), "https://x.example/l/a\"b".into())],
        };
        let html = body.html("<t>");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;img src=http://evil.example/x&gt;"));
        assert!(html.contains("href=\"https://x.example/l/a&quot;b\""));
        assert!(html.contains("<title>&lt;t&gt;</title>"));
    }

    #[test]
    fn a_business_deadline_is_in_the_calendars_words() {
        let (hours, fri, mon) = crate::gate::calendar::office_for_tests();
        let mut g = OpenGate::for_tests("review");
        g.hours = Some(hours);
        g.timeout_at = Some(mon);
        assert_eq!(
            deadline(&g, fri),
            "Please answer by Monday 09:30 CET, in 2 business hours 30 min (calendar `eu-office`); then the gate's fallback applies: reject."
        );
        g.timeout_at = None;
        assert!(deadline(&g, mon + chrono::TimeDelta::days(5))
            .contains("calendar `eu-office` is closed now; opens Monday 09:00 CET"));
    }

    #[test]
    fn a_form_gates_mail_sends_the_approver_to_the_page_and_its_outcome_shows_the_values() {
        let mut s = crate::gate::testkit::paused_session("s1");
        let now = crate::clock::test_epoch();
        let handle = s.open_gates().next().expect("a gate").handle();
        let gate = s.gates.get_mut(&handle).expect("open");
        gate.form = Some(
            serde_json::from_str(
                r#"{"properties": {"replicas": {"type": "integer"}}, "required": ["replicas"]}"#,
            )
            .expect("form"),
        );
        let gate = gate.clone();
        // What the mailer makes for a form gate: no one-tap Approve.
        let links = Links {
            approve: None,
            reject: Some("https://x.example/l/r".into()),
            open: "https://x.example/l/o".into(),
        };
        let c = ask(&s, &gate, &links, None, "corp.example", now);
        assert!(!c.text.contains("Approve:"), "{}", c.text);
        assert!(
            c.text
                .contains("Approving it means filling in replicas (integer, required)")
                && c.text
                    .contains("Fill in and approve: https://x.example/l/o"),
            "{}",
            c.text
        );
        let answer = Answer {
            decision: Decision::Fill {
                values: serde_json::from_str(r#"{"replicas": 3}"#).expect("values"),
            },
            by: "alice".into(),
            at: now,
            via: "web".into(),
            vars: Default::default(),
            call: None,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        };
        let o = outcome(&s, &handle, &answer, "https://x.example/o", "corp.example");
        assert!(o.text.contains("Values: replicas: 3"), "{}", o.text);
    }

    #[test]
    fn an_ask_says_what_and_until_when_and_reminders_reply_to_it() {
        let mut s = crate::gate::testkit::paused_session("s1");
        let now = crate::clock::test_epoch();
        let handle = s.open_gates().next().expect("a gate").handle();
        let gate = s.gates.get_mut(&handle).expect("open");
        gate.context = "0123456789abcdef".into();
        gate.timeout_at = Some(now + chrono::TimeDelta::minutes(90));
        gate.rule = Some(crate::model::RuleNote {
            index: 2,
            summary:
                "needs 1 of support (strictest rule applied: rule 1: `details.amount` is undefined)"
                    .into(),
            failed: Some("rule 1: `details.amount` is undefined".into()),
        });
        let gate = gate.clone();
        let links = Links {
            approve: Some("https://x.example/l/a".into()),
            reject: Some("https://x.example/l/r".into()),
            open: "https://x.example/l/o".into(),
        };
        let c = ask(&s, &gate, &links, None, "corp.example", now);
        assert_eq!(c.subject, "[strands] Approval needed: wf / review");
        assert_eq!(
            c.message_id,
            message_id("s1", &handle, None, "corp.example")
        );
        assert!(c.in_reply_to.is_none());
        assert!(
            c.text.contains("(6 more characters in the browser.)"),
            "{}",
            c.text
        );
        assert!(
            c.text.contains("(in 1 h 29 min)") || c.text.contains("(in 1 h 30 min)"),
            "{}",
            c.text
        );
        assert!(
            c.text.contains("Policy: needs 1 of support (strictest rule applied: rule 1: `details.amount` is undefined)"),
            "{}",
            c.text
        );
        assert!(
            c.text.contains("Approve: https://x.example/l/a"),
            "{}",
            c.text
        );
        let r = ask(&s, &gate, &links, Some((0, 0)), "corp.example", now);
        assert!(
            r.text.starts_with("Last reminder before the timeout"),
            "{}",
            r.text
        );
        assert_eq!(r.in_reply_to.as_deref(), Some(c.message_id.as_str()));
        s.workflow = "two\nlines".into();
        assert_eq!(
            ask(&s, &gate, &links, None, "d.example", now).subject,
            "[strands] Approval needed: two lines / review",
            "no header injection"
        );
    }

    #[test]
    fn message_ids_thread_a_gate() {
        assert_eq!(
            message_id("6fe1-bb", "review#1", None, "corp.example"),
            "<review-1.6fe1-bb@corp.example>"
        );
        assert_eq!(
            message_id("s", "g#2", Some("reminder-1"), "x.example"),
            "<g-2.s.reminder-1@x.example>"
        );
    }
}
