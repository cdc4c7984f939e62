//! The personal inbox card: an Adaptive Card 1.5 listing the gates a
//! person may answer now, across runs — the list the web inbox and
//! Slack's App Home show ([`crate::hub::inbox::waiting_for`]) — with a
//! toggle per gate and two `Action.Execute` buttons that decide every
//! selected gate at once: `bulk_approve`, and `bulk_reject` with the one
//! reason typed in the card's `reason` box (optional, as in the web inbox
//! and Slack: a gate that requires a reason refuses without one).
//!
//! Each row shows the workflow, the gate, its prompt, the gate's redacted
//! preview when it shows one (as the approval card does, shorter), who
//! started the run, how long it has waited, its timeout and quorum
//! progress. A toggle's id is `pick:<session>:<gate handle>`; a toggle that
//! is on sends `"true"` (its default `valueOn`). A tool-call gate has no
//! toggle: its calls are each decided on their own card or page. At most
//! [`MAX_ROWS`] rows (fewer if
//! the card would pass [`super::MAX_CARD_BYTES`]); the rest are counted,
//! with a link to the web inbox.
//!
//! After a bulk action the card comes back with what became of each
//! selected gate (recorded, left out or refused, in the batch's words,
//! [`crate::hub::batch`]) above what still waits. This module only draws:
//! who may answer, and what an answer does, is the hub's.

use serde_json::{json, Value};

use super::{card, text, MAX_CARD_BYTES};
use crate::hub::batch::{Fate, Outcome};
use crate::hub::inbox::Waiting;
use crate::hub::{durations, pages};
use crate::spec::GateKind;

/// Rows one card lists; the rest are counted.
pub const MAX_ROWS: usize = 25;
/// The verbs of the card's two buttons.
pub const APPROVE: &str = "bulk_approve";
pub const REJECT: &str = "bulk_reject";
/// What a toggle's id starts with; `<session>:<gate handle>` follows.
pub const PICK: &str = "pick:";
/// The id of the reason box.
pub const REASON: &str = "reason";
/// The most of a prompt, and of a preview, a row shows.
const PROMPT_CHARS: usize = 300;
const PREVIEW_CHARS: usize = 300;

/// The id of the toggle selecting gate `handle` of `session`.
pub fn pick_id(session: &str, handle: &str) -> String {
    format!("{PICK}{session}:{handle}")
}

/// The gates an action's data selects — each toggle that is on — as
/// `(session, gate handle)`, in the order the data lists them. A session
/// id has no `:`; the handle is the rest.
pub fn picked(data: &Value) -> Vec<(String, String)> {
    let Some(map) = data.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter(|(_, v)| v.as_str() == Some("true") || v.as_bool() == Some(true))
        .filter_map(|(k, _)| {
            let (session, handle) = k.strip_prefix(PICK)?.split_once(':')?;
            (!session.is_empty() && !handle.is_empty())
                .then(|| (session.to_string(), handle.to_string()))
        })
        .collect()
}

/// One selected gate and what became of it, with its run's workflow when
/// it was known.
#[derive(Debug, Clone)]
pub struct Done {
    pub outcome: Outcome,
    pub workflow: Option<String>,
}

/// What the card is drawn from.
pub struct Inbox<'a> {
    /// What waits for the person, newest first.
    pub waiting: &'a [Waiting],
    /// What the last bulk action did (empty: none).
    pub done: &'a [Done],
    /// A word first (nothing selected, …).
    pub notice: Option<&'a str>,
    pub public_url: &'a str,
}

/// The inbox card, under [`MAX_CARD_BYTES`]: previews are left out first,
/// then rows, until it fits.
pub fn card_for(inbox: &Inbox<'_>) -> Value {
    let mut rows = inbox.waiting.len().min(MAX_ROWS);
    let mut previews = true;
    loop {
        let c = draw(inbox, rows, previews);
        let size = serde_json::to_string(&c).map_or(0, |t| t.len());
        if size <= MAX_CARD_BYTES || rows == 0 {
            return c;
        }
        if previews {
            previews = false;
        } else {
            rows /= 2;
        }
    }
}

fn draw(inbox: &Inbox<'_>, rows: usize, previews: bool) -> Value {
    let mut body = vec![json!({
        "type": "TextBlock",
        "text": "Waiting for you",
        "weight": "Bolder",
        "size": "Medium",
        "wrap": true,
    })];
    if let Some(n) = inbox.notice {
        body.push(json!({ "type": "TextBlock", "text": n, "wrap": true, "color": "Warning" }));
    }
    if !inbox.done.is_empty() {
        body.extend(results(inbox.done));
    }
    let mut toggles = 0;
    for w in inbox.waiting.iter().take(rows) {
        let (row, toggle) = row(w, previews, inbox.public_url);
        toggles += usize::from(toggle);
        body.push(row);
    }
    if inbox.waiting.is_empty() {
        body.push(text("Nothing waits for you."));
    } else if rows < inbox.waiting.len() {
        body.push(json!({
            "type": "TextBlock",
            "text": format!(
                "…and {} more in the [web inbox]({})",
                inbox.waiting.len() - rows,
                pages::inbox(inbox.public_url)
            ),
            "isSubtle": true,
            "wrap": true,
            "separator": true,
        }));
    }
    let mut actions = Vec::new();
    if toggles > 0 {
        body.push(json!({
            "type": "Input.Text",
            "id": REASON,
            "label": "Reason, when rejecting (one for all; a gate that requires one refuses without)",
            "isMultiline": true,
            "maxLength": 2000,
            "separator": true,
        }));
        actions.push(json!({ "type": "Action.Execute", "title": "Approve selected", "verb": APPROVE, "data": {} }));
        actions.push(json!({ "type": "Action.Execute", "title": "Reject selected", "verb": REJECT, "data": {} }));
    }
    actions.push(json!({
        "type": "Action.OpenUrl",
        "title": "Open the web inbox",
        "url": pages::inbox(inbox.public_url),
    }));
    card(body, actions)
}

/// What became of the selected gates: a count, then a line each.
fn results(done: &[Done]) -> Vec<Value> {
    let count = |f: Fate| done.iter().filter(|d| d.outcome.result == f).count();
    let mut out = vec![json!({
        "type": "TextBlock",
        "text": format!(
            "Of {} selected: {} recorded, {} left out, {} refused",
            done.len(),
            count(Fate::Recorded),
            count(Fate::LeftOut),
            count(Fate::Refused)
        ),
        "weight": "Bolder",
        "wrap": true,
        "separator": true,
    })];
    for d in done {
        let o = &d.outcome;
        let (word, color) = match o.result {
            Fate::Recorded => ("Recorded", "Good"),
            Fate::LeftOut => ("Left out", "Warning"),
            Fate::Refused => ("Refused", "Attention"),
        };
        let short: String = o.session.chars().take(8).collect();
        let label = match &d.workflow {
            Some(wf) => format!("{wf} · {} (`{short}`)", o.gate.as_deref().unwrap_or("?")),
            None => format!("`{short}` {}", o.gate.as_deref().unwrap_or("")),
        };
        let message = o.message.strip_prefix("left out: ").unwrap_or(&o.message);
        out.push(json!({
            "type": "TextBlock",
            "text": format!("{word}: {label}: {message}"),
            "color": color,
            "wrap": true,
            "spacing": "Small",
        }));
    }
    out
}

/// One waiting gate's row, and whether it has a toggle.
fn row(w: &Waiting, previews: bool, public_url: &str) -> (Value, bool) {
    let g = &w.gate;
    let (prompt, more) = crate::model::cut(&g.prompt, PROMPT_CHARS);
    let mut items = vec![
        json!({
            "type": "TextBlock",
            "text": format!(
                "**{}** · {} · run `{}`",
                w.workflow,
                g.id,
                w.session.chars().take(8).collect::<String>()
            ),
            "wrap": true,
        }),
        text(if more > 0 {
            format!("{prompt}…")
        } else {
            prompt
        }),
    ];
    if let Some(preview) = g
        .preview
        .as_deref()
        .filter(|p| previews && !p.trim().is_empty())
    {
        let (shown, more) = crate::model::cut(preview, PREVIEW_CHARS);
        items.push(json!({
            "type": "TextBlock",
            "text": if more > 0 || g.preview_cut_chars > 0 { format!("{shown}…") } else { shown },
            "wrap": true,
            "fontType": "Monospace",
            "isSubtle": true,
        }));
    }
    let mut facts = vec![
        format!("waiting {}", durations::duration(w.waited_secs)),
        format!("started by {}", super::super::names::shown(&w.started_by)),
    ];
    match (&w.business, w.timeout_in_secs) {
        (Some(words), Some(_)) => facts.push(format!("times out {words}")),
        (_, Some(t)) if t >= 0 => facts.push(format!("times out in {}", durations::duration(t))),
        (_, Some(t)) => facts.push(format!("overdue by {}", durations::duration(t))),
        _ => {}
    }
    if g.approvals_required > 1 {
        facts.push(format!(
            "{} of {} approvals",
            g.approvals.len(),
            g.approvals_required
        ));
    }
    if g.step_up.is_some() {
        facts.push("approving takes a passkey".into());
    }
    if g.form.is_some() {
        facts.push("approving fills in a form".into());
    }
    if let Some(whom) = &w.for_whom {
        facts.push(format!("you answer for {whom}"));
    }
    items.push(json!({
        "type": "TextBlock",
        "text": facts.join(" · "),
        "isSubtle": true,
        "size": "Small",
        "wrap": true,
    }));
    let toggle = g.kind != GateKind::ToolCall;
    if toggle {
        items.push(json!({
            "type": "Input.Toggle",
            "id": pick_id(&w.session, &g.handle),
            "title": "Select",
            "value": "false",
        }));
    } else {
        items.push(text(format!(
            "Tool calls: decide each on the run's card or [page]({})",
            pages::session(public_url, &w.session)
        )));
    }
    (
        json!({ "type": "Container", "separator": true, "items": items }),
        toggle,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::view::GateView;

    fn waiting(session: &str, kind: GateKind, required: u32) -> Waiting {
        let s = crate::gate::testkit::paused_session(session);
        let mut g = s.first_gate().cloned().expect("a gate");
        g.kind = kind;
        g.approvals_required = required;
        g.context = "the plan".into();
        g.show_preview = true;
        Waiting {
            session: s.id.clone(),
            workflow: "deploy".into(),
            started_by: "teams:aad-bob".into(),
            started_at: s.created_at,
            gate: GateView::of(&s, &g, false),
            waited_secs: 300,
            timeout_in_secs: Some(3600),
            business: None,
            routine: true,
            for_whom: None,
        }
    }

    fn toggles(v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        match v {
            Value::Object(m) => {
                if m.get("type") == Some(&json!("Input.Toggle")) {
                    out.push(m["id"].as_str().unwrap_or_default().to_string());
                }
                m.values().for_each(|x| out.extend(toggles(x)));
            }
            Value::Array(a) => a.iter().for_each(|x| out.extend(toggles(x))),
            _ => {}
        }
        out
    }

    #[test]
    fn a_row_per_gate_a_toggle_each_and_the_two_bulk_verbs() {
        let rows = [
            waiting("s1", GateKind::ManualGate, 1),
            waiting("s2", GateKind::ManualGate, 2),
            waiting("s3", GateKind::ToolCall, 1),
        ];
        let c = card_for(&Inbox {
            waiting: &rows,
            done: &[],
            notice: None,
            public_url: "http://x",
        });
        assert_eq!(c["version"], "1.5");
        assert_eq!(super::super::tests::verbs(&c), [APPROVE, REJECT]);
        let handle = &rows[0].gate.handle;
        assert_eq!(
            toggles(&c),
            [pick_id("s1", handle), pick_id("s2", handle)],
            "no toggle for a tool-call gate: {c:#}"
        );
        let text = c.to_string();
        for want in [
            "deploy",
            "the plan",
            "waiting 5 min",
            "0 of 2 approvals",
            "Tool calls",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        let empty = card_for(&Inbox {
            waiting: &[],
            done: &[],
            notice: None,
            public_url: "http://x",
        });
        assert!(super::super::tests::verbs(&empty).is_empty());
        assert!(empty.to_string().contains("Nothing waits for you."));
    }

    #[test]
    fn at_most_max_rows_the_rest_counted_and_under_the_size_limit() {
        let mut rows = Vec::new();
        for i in 0..40 {
            let mut w = waiting(&format!("s{i}"), GateKind::ManualGate, 1);
            w.gate.prompt = "p".repeat(5_000);
            w.gate.preview = Some("x".repeat(5_000));
            rows.push(w);
        }
        let c = card_for(&Inbox {
            waiting: &rows,
            done: &[],
            notice: None,
            public_url: "http://x",
        });
        let size = c.to_string().len();
        assert!(size <= MAX_CARD_BYTES, "{size}");
        let shown = toggles(&c).len();
        assert!(shown <= MAX_ROWS, "{shown}");
        assert!(
            c.to_string().contains(&format!(
                "…and {} more in the [web inbox](http://x)",
                40 - shown
            )),
            "{c}"
        );
    }

    #[test]
    fn picks_are_read_from_toggles_that_are_on() {
        let data = json!({
            "pick:s1:review#1": "true",
            "pick:s2:review#1": "false",
            "pick:s3:a:b#2": "true",
            "pick::x": "true",
            "pick:s4": "true",
            "reason": "true",
        });
        assert_eq!(
            picked(&data),
            [
                ("s1".to_string(), "review#1".to_string()),
                ("s3".to_string(), "a:b#2".to_string())
            ]
        );
        assert!(picked(&json!("nothing")).is_empty());
    }

    #[test]
    fn outcomes_are_shown_each_in_its_words() {
        let done = [
            Done {
                outcome: Outcome {
                    session: "abcdef0123".into(),
                    gate: Some("review#1".into()),
                    result: Fate::LeftOut,
                    message: "left out: `review` needs 2 more approvals".into(),
                },
                workflow: Some("deploy".into()),
            },
            Done {
                outcome: Outcome {
                    session: "s9".into(),
                    gate: Some("review#1".into()),
                    result: Fate::Refused,
                    message: "not an approver".into(),
                },
                workflow: None,
            },
        ];
        let c = card_for(&Inbox {
            waiting: &[],
            done: &done,
            notice: None,
            public_url: "http://x",
        });
        let text = c.to_string();
        for want in [
            "Of 2 selected: 0 recorded, 1 left out, 1 refused",
            "Left out: deploy · review#1 (`abcdef01`): `review` needs 2 more approvals",
            "Refused: `s9` review#1: not an approver",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
    }
}
