//! The tool-call card: an Adaptive Card 1.5 asking about the calls of an
//! agent's latest turn (a `tool_call` gate), and the same card as calls
//! are decided — each decided call says how and by whom, without buttons.
//!
//! It shows the workflow, the step, the agent, who started the run, and
//! for each call (at most [`MAX_CALLS`], waiting ones first) the tool, the
//! call id, the approval prompt, risk and what the call would do, and its
//! arguments as people may see them ([`calls::shown_arguments`], cut to
//! fit). A waiting call has its own row of actions, each an
//! `Action.Execute` carrying `{session, gate, call}` and, for a form, the
//! id of the input to read (`input`):
//!
//! - `approve`;
//! - `reject`, in a form with an optional reason (`reason.N`);
//! - `edit`, in a form whose `Input.Text` (`args.N`, multi-line) starts
//!   with the arguments as JSON — offered only when redaction hid nothing
//!   in them and they fit ([`MAX_EDIT_CHARS`]); otherwise the card says to
//!   edit in the browser;
//! - `trust`, only where the request says the tool may be trusted
//!   (`enable_trust`, never `shell` or a `!`-negated tool: the engine
//!   decides it, the intake checks it again).
//!
//! "Open in browser" ends the card. The card stays under
//! [`super::MAX_CARD_BYTES`]: the arguments shown are cut (halved, down to
//! a few lines), then the edit forms are left out, then the arguments are
//! cut further, down to none.

use chrono::SecondsFormat;
use serde_json::{json, Value};

use super::{card, execute, open_in_browser, text};
use crate::audit::redact::Redactor;
use crate::hub::calls::{self, Outcome};
use crate::model::{PendingCall, Session};

/// Calls one card shows; the rest are counted in a note.
pub const MAX_CALLS: usize = 10;

/// What all calls' arguments may take together, and the least one call's
/// get (as in Slack's tool message).
const ARGS_TOTAL: usize = 12_000;
const ARGS_MIN: usize = 800;
const ARGS_MAX: usize = 2_800;
/// The least arguments shown before edit forms are left out to fit.
const ARGS_FLOOR: usize = 200;

/// The longest arguments an edit form starts with; longer ones are edited
/// in the browser.
pub const MAX_EDIT_CHARS: usize = 4_000;

/// What the card is drawn with besides the session.
struct Draw {
    /// Characters of each call's arguments shown.
    budget: usize,
    /// Whether edit forms are offered.
    edits: bool,
}

/// The card for the calls gate `handle` of `session` asks about, from the
/// session as it stands (asking, partly or wholly decided), with
/// `notice` (why an action was refused) first when given.
pub fn card_for(
    session: &Session,
    handle: &str,
    redactor: &Redactor,
    public_url: &str,
    notice: Option<&str>,
) -> Value {
    let (shown, _) = calls::shown(session, MAX_CALLS);
    let start = (ARGS_TOTAL / shown.len().max(1)).clamp(ARGS_MIN, ARGS_MAX);
    // Shorter arguments first (down to a few lines), then no edit forms,
    // then shorter arguments again, down to none.
    let mut plans = Vec::new();
    let mut budget = start;
    while budget >= ARGS_FLOOR {
        plans.push(Draw {
            budget,
            edits: true,
        });
        budget /= 2;
    }
    let mut budget = start;
    loop {
        plans.push(Draw {
            budget,
            edits: false,
        });
        if budget == 0 {
            break;
        }
        budget = if budget > 64 { budget / 2 } else { 0 };
    }
    let mut last = Value::Null;
    for draw in &plans {
        last = draw_card(session, handle, redactor, public_url, notice, draw);
        let size = serde_json::to_string(&last).map_or(0, |t| t.len());
        if size <= super::MAX_CARD_BYTES {
            break;
        }
    }
    last
}

fn draw_card(
    session: &Session,
    handle: &str,
    redactor: &Redactor,
    public_url: &str,
    notice: Option<&str>,
    draw: &Draw,
) -> Value {
    let Some(turn) = session.agent_turn.as_ref() else {
        return card(
            vec![text("This run has no tool calls waiting.")],
            vec![open_in_browser(public_url, &session.id)],
        );
    };
    let waiting = turn.waiting().count();
    let total = turn.calls.len();
    let mut body = vec![
        json!({
            "type": "TextBlock",
            "text": format!("Tool approval: {} / {}", session.workflow, turn.agent),
            "weight": "Bolder",
            "size": "Medium",
            "wrap": true,
        }),
        json!({
            "type": "FactSet",
            "facts": [
                {"title": "Workflow", "value": session.workflow},
                {"title": "Step", "value": turn.position.to_string()},
                {"title": "Agent", "value": turn.agent},
                {"title": "Started by", "value": session.started_by},
                {"title": "Run", "value": session.id},
            ],
        }),
    ];
    if let Some(why) = notice {
        body.push(json!({
            "type": "TextBlock",
            "text": format!("Not changed: {why}"),
            "color": "Attention",
            "weight": "Bolder",
            "wrap": true,
        }));
    }
    if let Some(r) = session.gates.get(handle).and_then(|g| g.rule.as_ref()) {
        body.push(text(r.shown()));
    }
    body.push(text(if waiting > 0 {
        format!("{waiting} of {total} calls wait for a decision")
    } else {
        format!("Every call decided ({total})")
    }));
    let (shown, left) = calls::shown(session, MAX_CALLS);
    let shown_waiting = shown
        .iter()
        .filter(|&&i| turn.calls[i].state == crate::model::CallState::Waiting)
        .count();
    for &i in &shown {
        body.push(call_block(
            session,
            handle,
            i,
            &turn.calls[i],
            redactor,
            draw,
        ));
    }
    if left > 0 {
        let hidden_waiting = waiting - shown_waiting;
        body.push(json!({
            "type": "TextBlock",
            "text": format!(
                "{left} more calls ({hidden_waiting} waiting) are not shown: open the run in the browser"
            ),
            "isSubtle": true,
            "wrap": true,
        }));
    }
    let mut actions = Vec::new();
    if waiting > 1 {
        // Every waiting call approved, one answer each (`hub::batch`'s rule).
        actions.push(execute(
            &format!("Approve all {waiting}"),
            "approve_all",
            &json!({ "session": session.id, "gate": handle }),
        ));
    }
    actions.push(open_in_browser(public_url, &session.id));
    card(body, actions)
}

/// One call: what it is, its arguments, and its actions or its outcome.
fn call_block(
    session: &Session,
    handle: &str,
    i: usize,
    pc: &PendingCall,
    redactor: &Redactor,
    draw: &Draw,
) -> Value {
    let n = i + 1;
    let mut items = vec![json!({
        "type": "TextBlock",
        "text": format!("{n}. {} (call {})", pc.call.name, pc.call.id),
        "weight": "Bolder",
        "wrap": true,
    })];
    if let Some(r) = &pc.request {
        items.push(text(redactor.redact(&r.prompt)));
        items.push(json!({
            "type": "TextBlock",
            "text": format!(
                "Risk: {}; {}. {}",
                r.risk.as_str(),
                if r.reversible { "reversible" } else { "not reversible" },
                redactor.redact(&r.description)
            ),
            "isSubtle": true,
            "wrap": true,
        }));
    }
    let (args, hid) = calls::shown_arguments(redactor, &pc.call.arguments);
    let shown: String = args.chars().take(draw.budget).collect();
    let cut = args.chars().count() - shown.chars().count();
    if !shown.is_empty() {
        items.push(json!({
            "type": "TextBlock",
            "text": shown,
            "fontType": "Monospace",
            "wrap": true,
        }));
    }
    if cut > 0 {
        items.push(json!({
            "type": "TextBlock",
            "text": format!("… {cut} more characters of arguments: open the run in the browser"),
            "isSubtle": true,
            "wrap": true,
        }));
    }
    match calls::outcome(session, handle, pc) {
        Some(o) => items.push(outcome_line(&o, &pc.call.name, redactor)),
        None => {
            let data = json!({"session": session.id, "gate": handle, "call": pc.call.id});
            let mut actions = vec![execute("Approve", "approve", &data)];
            actions.push(form(
                "Reject",
                "reject",
                &format!("reason.{n}"),
                "Reason (optional; the agent reads it)",
                None,
                &data,
            ));
            let pretty = serde_json::to_string_pretty(&pc.call.arguments).unwrap_or_default();
            let editable = draw.edits && !hid && pretty.chars().count() <= MAX_EDIT_CHARS;
            if editable {
                actions.push(form(
                    "Edit arguments",
                    "edit",
                    &format!("args.{n}"),
                    "Arguments (JSON; the tool stays the same)",
                    Some(&pretty),
                    &data,
                ));
            }
            if pc.request.as_ref().is_some_and(|r| r.trustable) {
                actions.push(execute(
                    &format!("Trust {} for this run", pc.call.name),
                    "trust",
                    &data,
                ));
                // Within limits: a grant for an hour (`model::grant`).
                let mut hour = data.clone();
                hour["for"] = json!("1h");
                actions.push(execute("Trust for 1 h", "trust", &hour));
            }
            if !editable {
                items.push(json!({
                    "type": "TextBlock",
                    "text": "To edit these arguments, open the run in the browser.",
                    "isSubtle": true,
                    "wrap": true,
                }));
            }
            items.push(json!({ "type": "ActionSet", "actions": actions }));
        }
    }
    json!({
        "type": "Container",
        "separator": true,
        "spacing": "Medium",
        "items": items,
    })
}

/// A form for one call: an input and its button. The button's data names
/// the input to read (`input`), since every call's inputs share the card.
fn form(
    title: &str,
    verb: &str,
    input: &str,
    label: &str,
    value: Option<&str>,
    data: &Value,
) -> Value {
    let mut field = json!({
        "type": "Input.Text",
        "id": input,
        "label": label,
        "isMultiline": true,
    });
    if let Some(v) = value {
        field["value"] = json!(v);
        field["isRequired"] = json!(true);
        field["errorMessage"] = json!("The arguments are required, as a JSON object");
    } else {
        field["maxLength"] = json!(2000);
    }
    let mut data = data.clone();
    data["input"] = json!(input);
    json!({
        "type": "Action.ShowCard",
        "title": title,
        "card": {
            "type": "AdaptiveCard",
            "body": [field],
            "actions": [execute(title, verb, &data)],
        },
    })
}

/// How a decided call is shown.
fn outcome_line(o: &Outcome, tool: &str, redactor: &Redactor) -> Value {
    let at = |t: &Option<chrono::DateTime<chrono::Utc>>| {
        t.map(|t| format!(" at {}", t.to_rfc3339_opts(SecondsFormat::Secs, true)))
            .unwrap_or_default()
    };
    let (line, good) = match o {
        Outcome::Approved { by, at: t } => (format!("Approved by {by}{}", at(t)), true),
        Outcome::Edited { by, at: t } => (
            format!("Approved with edited arguments by {by}{}", at(&Some(*t))),
            true,
        ),
        Outcome::Trusted { by, at: t, rule } => (
            match rule {
                Some(rule) => format!("Trusted by {by}{}: {rule}", at(&Some(*t))),
                None => format!(
                    "Trusted by {by}{}: {tool} runs without asking for the rest of the run",
                    at(&Some(*t))
                ),
            },
            true,
        ),
        Outcome::ByTrust { by } => (format!("Approved: {by} trusted {tool} for this run"), true),
        Outcome::Rejected { by, at: t, reason } => (
            match reason {
                Some(r) => format!("Rejected by {by}{}: {r}", at(t)),
                None => format!("Rejected by {by}{}", at(t)),
            },
            false,
        ),
        Outcome::Policy => ("Ran without asking (the spec allows it)".to_string(), true),
        Outcome::Running => ("Running".to_string(), true),
        Outcome::Done => ("Done".to_string(), true),
        Outcome::NotRun(why) => (format!("Not run: {}", redactor.redact(why)), false),
    };
    json!({
        "type": "TextBlock",
        "text": line,
        "weight": "Bolder",
        "color": if good { "Good" } else { "Attention" },
        "wrap": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApprovalRequest, CallState, Status};
    use crate::teams::card::tests::verbs;
    use crate::tools::Risk;
    use serde_json::Map;

    fn call(i: usize, args: Value, trustable: bool) -> PendingCall {
        PendingCall {
            call: crate::provider::ToolCall {
                id: format!("call_{i}"),
                name: "deploy_api".into(),
                arguments: args.clone(),
            },
            digest: crate::tools::digest("deploy_api", &args),
            request: Some(ApprovalRequest {
                prompt: format!("Approve call {i}?"),
                description: format!("POST /{i}"),
                reversible: false,
                risk: Risk::High,
                trustable,
            }),
            state: CallState::Waiting,
            grant: None,
        }
    }

    fn session(calls: Vec<PendingCall>) -> Session {
        let now = crate::clock::test_epoch();
        Session {
            id: "s1".into(),
            workflow: "ops".into(),
            spec_path: "ops.yaml".into(),
            spec_hash: String::new(),
            spec_snapshot: String::new(),
            pattern: "chain".into(),
            status: Status::Paused,
            created_at: now,
            updated_at: now,
            started_by: "teams:aad-1".into(),
            variables: Map::new(),
            state: crate::model::PatternState::Chain {
                next: 0,
                steps: vec![None],
            },
            format: crate::model::SESSION_FORMAT,
            gates: Default::default(),
            pending: None,
            human_feedback: None,
            hitl_response: None,
            history: Vec::new(),
            gates_opened: 1,
            usage: Default::default(),
            output: None,
            artifacts: Vec::new(),
            out_dir: ".".into(),
            overwrite_artifacts: false,
            work_dir: None,
            failure: None,
            origin: None,
            agent_turn: Some(crate::model::AgentTurn {
                position: crate::model::Position::Step(0),
                agent: "operator".into(),
                system: String::new(),
                messages: Vec::new(),
                turns: 1,
                calls,
            }),
            trusted_tools: Default::default(),
            denied_calls: Default::default(),
            audit: Vec::new(),
            arm: Vec::new(),
            events: Vec::new(),
            triggers_fired: Default::default(),
            final_approved: false,
            in_flight: Default::default(),
            cancel: None,
            trace: None,
            rev: 1,
        }
    }

    #[test]
    fn each_waiting_call_gets_its_actions_and_trust_only_where_allowed() {
        let s = session(vec![
            call(1, json!({"path": "/a"}), true),
            call(2, json!({"path": "/b", "api_key": "k-123"}), false),
        ]);
        let c = card_for(&s, "tools#1", &Redactor::default(), "http://x", None);
        assert_eq!(c["version"], "1.5");
        // The second call's key is hidden, so it is not offered for editing.
        // First the turn's "Approve all 2", then each call's own.
        assert_eq!(
            verbs(&c),
            [
                "approve_all",
                "approve",
                "reject",
                "edit",
                "trust",
                "trust",
                "approve",
                "reject"
            ]
        );
        let text = c.to_string();
        assert!(
            !text.contains("k-123") && text.contains("[REDACTED]"),
            "{text}"
        );
        assert!(text.contains("http://x/sessions/s1"));

        let mut decided = s.clone();
        for pc in &mut decided.agent_turn.as_mut().expect("turn").calls {
            pc.state = CallState::Rejected {
                by: "teams:aad-2".into(),
                reason: Some("not today".into()),
            };
        }
        let c = card_for(&decided, "tools#1", &Redactor::default(), "http://x", None);
        assert!(verbs(&c).is_empty(), "{c}");
        assert!(c.to_string().contains("Rejected by teams:aad-2: not today"));
    }

    #[test]
    fn many_huge_calls_stay_under_the_card_limit() {
        let calls = (1..=12)
            .map(|i| call(i, json!({"body": "x".repeat(3_900), "path": "/p"}), true))
            .collect();
        let c = card_for(
            &session(calls),
            "tools#1",
            &Redactor::default(),
            "http://x",
            None,
        );
        let size = serde_json::to_string(&c).expect("json").len();
        assert!(size <= super::super::MAX_CARD_BYTES, "{size}");
        let text = c.to_string();
        assert!(text.contains("2 more calls (2 waiting)"), "{text}");
        assert!(text.contains("more characters of arguments"), "{text}");
    }
}
