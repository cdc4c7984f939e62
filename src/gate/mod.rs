//! Human gates: what a human can answer, and what each answer means.
//!
//! Who may answer is judged on people, not channel identities: with a
//! people directory ([`crate::model::person`]), `approvers: [alice,
//! group:finance]` matches alice from Slack, Teams, the web, the API or the
//! CLI, and self-approval compares the person who started the run with the
//! person answering. A caller the directory does not know is judged by
//! their channel identity, as before.
//!
//! Every channel (terminal, CLI flags, Slack, HTTP) produces the same
//! [`Answer`] carrying a [`Decision`]; [`interpret`] turns it into the one
//! thing the engine needs to know — continue with a response, re-run the
//! previous step with feedback, end the run rejected, or stay paused. Timeouts
//! become answers too ([`timeout_answer`]), recorded as given by `timeout`.
//!
//! A manual gate may ask for a form ([`form`]): approving it is filling it
//! in (`Decision::Fill`), whose values become the gate's response; and it
//! may allow trust (`allow_trust`): `Decision::Trust` approves it, for a
//! requester that stops asking about that tool.

pub mod backtest;
pub mod form;
pub mod policy;
pub mod step_up;

use chrono::{DateTime, Utc};
use serde_json::Map;

pub mod ages;
pub mod calendar;
#[cfg(test)]
pub mod testkit;

use crate::error::{Error, Result};
use crate::model::person::Directory;
use crate::model::{Answer, Approver, Decision, Fallback, GateKind, OpenGate, Position, Refusal};
use crate::spec::GateSpec;

/// Who is answering, and what the channel knows about them.
pub struct Identity<'a> {
    pub who: &'a str,
    /// The run's starter.
    pub started_by: &'a str,
    /// The Slack bot (self-approval is off by default there).
    pub in_bot: bool,
    /// Bot-wide admins: they may answer any gate.
    pub admins: &'a [String],
    /// Whether `who` belongs to a group id (`S…`) listed as approver.
    pub member_of: &'a dyn Fn(&str) -> bool,
    /// The groups the identity provider says `who` is in (the ID token's
    /// groups claim of a web sign-in); they count for `group:NAME`
    /// approvers as the directory's groups do. Empty elsewhere.
    pub idp_groups: &'a [String],
    /// Who each channel identity is (empty: judged by identity alone).
    pub people: &'a Directory,
    /// When the answer is given: which delegations are in force.
    pub now: DateTime<Utc>,
}

/// Whether `id` may give `decision` at `gate`: self-approval first (admins
/// too — nobody approves their own run where that is off), then the
/// approver list (admins and group members count), then delegation: a
/// delegate in force ([`crate::model::person::delegation`]) of a person the
/// gate lists by name or identity may answer for them. `Ok(Some(alice))`:
/// allowed as alice's delegate. A delegate never approves a run they
/// started (even where self-approval is allowed), nor, where it is off,
/// one the person they stand in for started. A `group:NAME` approver
/// lists the directory's members of NAME and whoever the identity
/// provider says is in it ([`Identity::idp_groups`]); the latter is told
/// back ([`Allowed::idp_group`]) so the record says so. The error is the
/// refusal the person is told (each door shows it its own way).
#[allow(clippy::result_large_err)] // see `Session::accept`
pub fn authorize(
    gate: &OpenGate,
    decision: &Decision,
    id: &Identity<'_>,
) -> std::result::Result<Allowed, Refusal> {
    let approves = matches!(
        decision,
        Decision::Approve | Decision::Edit { .. } | Decision::Trust { .. } | Decision::Fill { .. }
    ) || matches!(decision, Decision::Respond { text } if text.trim().eq_ignore_ascii_case("approved"));
    let self_ok = gate
        .allow_self_approval
        .unwrap_or(!(id.in_bot && gate.kind != GateKind::Hitl));
    let people = id.people;
    if approves && !self_ok && people.same(id.who, id.started_by) {
        return Err(Refusal::NotAllowed(
            "you started this run, so you cannot approve it (allow_self_approval is off)".into(),
        ));
    }
    if gate.approvers.is_empty() || id.admins.iter().any(|a| people.same(a, id.who)) {
        return Ok(Allowed::default());
    }
    let person = people.person_of(id.who);
    let listed = gate.approvers.iter().any(|a| match a {
        Approver::Group(g) => person.is_some_and(|p| p.in_group(g)),
        Approver::SlackGroup(g) => (id.member_of)(g),
        other => people.same(&other.text(), id.who),
    });
    if listed {
        return Ok(Allowed::default());
    }
    let from_idp = gate.approvers.iter().find_map(|a| match a {
        Approver::Group(g) if id.idp_groups.iter().any(|x| x == g) => Some(g.clone()),
        _ => None,
    });
    if from_idp.is_some() {
        return Ok(Allowed {
            on_behalf_of: None,
            idp_group: from_idp,
        });
    }
    // A delegate of a person the gate names (by name or any identity;
    // groups are not delegated: their other members answer).
    let names = |p: &crate::model::person::Person| {
        gate.approvers
            .iter()
            .any(|a| a.group().is_none() && people.same(&a.text(), &p.name))
    };
    // For a quorum, someone not counted yet first (bob stands in for alice
    // and erin, alice already approved: bob answers for erin).
    let counted = |p: &crate::model::person::Person| {
        gate.approvals.iter().any(|a| {
            a.person.as_deref() == Some(p.name.as_str())
                || a.on_behalf_of.as_deref() == Some(p.name.as_str())
        })
    };
    let chain = person.and_then(|p| {
        people
            .acting_for(&p.name, |o| names(o) && !counted(o), id.now)
            .or_else(|| people.acting_for(&p.name, names, id.now))
    });
    if let Some(chain) = chain {
        let whom = chain[0].clone();
        if approves && people.same(id.who, id.started_by) {
            return Err(Refusal::NotAllowed(format!(
                "you started this run, so you cannot approve it, not even as {whom}'s delegate"
            )));
        }
        if let Some(starter) = chain[..chain.len() - 1]
            .iter()
            .find(|n| approves && !self_ok && people.same(n, id.started_by))
        {
            return Err(Refusal::NotAllowed(format!(
                "{starter} started this run, so you cannot approve it for them (allow_self_approval is off)"
            )));
        }
        return Ok(Allowed {
            on_behalf_of: Some(whom),
            idp_group: None,
        });
    }
    Err(Refusal::NotApprover(gate.approvers.clone()))
}

/// Why an answer was allowed, when it matters to the record: as whose
/// delegate, or through which group the identity provider (not the
/// directory) put the person in. Both `None`: an approver in their own
/// right (by name, identity, a directory group, admin, or a gate naming
/// nobody).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowed {
    /// Allowed as this person's delegate.
    pub on_behalf_of: Option<String>,
    /// Listed only through this group of the identity provider's groups
    /// claim.
    pub idp_group: Option<String>,
}

/// What the engine does after an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The gate passes; `response` is what templates read as the gate's response.
    Continue { response: String },
    /// Re-run the previous agent step with this feedback, then ask again.
    Rerun { feedback: String },
    /// End the run rejected.
    Cancel { reason: Option<String> },
    /// The gate passes with no response (a timeout's `skip`).
    Skip,
    /// End the run failed (a timeout's `abort`).
    Abort { reason: Option<String> },
    /// Keep waiting.
    StayPaused,
}

/// Interprets an answer for gate `gate`. Answers that do not fit it (free
/// text on a manual gate that is neither approve nor reject, a plain
/// approve of a gate with a form, values for a gate without one, trust
/// where it is not allowed) are usage errors saying what would fit;
/// nothing changes.
pub fn interpret(gate: &OpenGate, decision: &Decision) -> Result<Outcome> {
    let kind = gate.kind;
    let approved = || match &gate.form {
        Some(f) => Err(Error::Usage(form::asks(&gate.id, f))),
        None => Ok(Outcome::Continue {
            response: "approved".into(),
        }),
    };
    Ok(match decision {
        Decision::Approve => approved()?,
        Decision::Fill { values } => match (&gate.form, kind) {
            (Some(f), GateKind::ManualGate) => {
                let filled = form::fill(f, values).map_err(|errors| {
                    Error::Usage(crate::model::Refusal::BadValues(errors).to_string())
                })?;
                Outcome::Continue {
                    response: serde_json::Value::Object(filled).to_string(),
                }
            }
            _ => {
                return Err(Error::Usage(format!(
                    "gate `{}` asks for no values: answer without them (--approve, no --value)",
                    gate.id
                )))
            }
        },
        Decision::Reject { reason } => Outcome::Cancel {
            reason: reason.clone(),
        },
        Decision::Modify { feedback } => {
            if feedback.trim().is_empty() {
                return Err(Error::Usage("modify needs feedback (--feedback TEXT)".into()));
            }
            Outcome::Rerun {
                feedback: feedback.clone(),
            }
        }
        Decision::Defer => Outcome::StayPaused,
        Decision::Skip => Outcome::Skip,
        Decision::Abort { reason } => Outcome::Abort {
            reason: reason.clone(),
        },
        Decision::Trust { limit: Some(_) } if kind == GateKind::ManualGate => {
            return Err(Error::Usage(format!(
                "gate `{}`: trust within limits (--for, --match) answers tool calls; a manual gate takes a plain trust",
                gate.id
            )))
        }
        Decision::Trust { limit: None } if kind == GateKind::ManualGate && gate.allow_trust => {
            Outcome::Continue {
                response: "trusted".into(),
            }
        }
        Decision::Trust { .. } if kind == GateKind::ManualGate => {
            return Err(Error::Usage(format!(
                "gate `{}` does not allow trust (allow_trust: true on the gate, or \"trust\": true on an approval request with an action)",
                gate.id
            )))
        }
        Decision::Edit { arguments } if kind == GateKind::ManualGate && gate.allow_edit => {
            if !arguments.is_object() {
                return Err(Error::Usage(format!(
                    "edited arguments are a JSON object (the action's arguments), not {arguments}"
                )));
            }
            approved()?
        }
        Decision::Edit { .. } | Decision::Trust { .. } => {
            return Err(Error::Usage(
                "--edit-args and --trust answer tool calls (or a gate with allow_edit / allow_trust); this gate is not one".into(),
            ))
        }
        Decision::Respond { text } => match kind {
            GateKind::ToolCall => {
                return Err(Error::Usage(
                    "a tool call takes --approve, --reject, --edit-args JSON or --trust".into(),
                ))
            }
            GateKind::Hitl => Outcome::Continue {
                response: text.clone(),
            },
            GateKind::ManualGate => match text.trim().to_ascii_lowercase().as_str() {
                "approved" | "approve" | "yes" | "y" => approved()?,
                "rejected" | "reject" | "no" | "n" => Outcome::Cancel { reason: None },
                _ => {
                    return Err(Error::Usage(format!(
                        "a manual_gate takes approve or reject, not `{text}` (use --approve, --reject [--reason R], --modify --feedback F)"
                    )))
                }
            },
        },
    })
}

/// The answer a timed-out gate gets from its `fallback_action` (a `hitl`
/// gate without one answers its `default`). Every path without a usable
/// answer rejects (fail closed): `default` with no default, and `escalate`
/// — the bot escalates before it gets here ([`crate::slack::timers`]); what
/// is left is an escalation nobody answered, or no bot to escalate. A gate
/// opened outside its calendar's hours with `when_closed: reject` is due
/// at once, and its answer is that rejection.
pub fn timeout_answer(gate: &OpenGate, now: DateTime<Utc>) -> Answer {
    let closed = gate
        .hours
        .as_ref()
        .filter(|h| h.opened_closed && h.when_closed == crate::model::WhenClosed::Reject);
    let by_fallback = |what: &str| {
        Some(format!(
            "{what} by fallback (fallback_action: {})",
            gate.fallback.name()
        ))
    };
    let decision = match (gate.kind, gate.fallback) {
        (GateKind::ToolCall, _) => Decision::Reject {
            reason: Some("timed out".into()),
        },
        (_, Fallback::Continue) => Decision::Approve,
        (_, Fallback::Cancel) => Decision::Reject {
            reason: by_fallback("rejected"),
        },
        (_, Fallback::Skip) => Decision::Skip,
        (_, Fallback::Abort) => Decision::Abort {
            reason: by_fallback("aborted"),
        },
        (GateKind::Hitl, Fallback::Default) => match &gate.default {
            Some(d) => Decision::Respond { text: d.clone() },
            None => Decision::Reject {
                reason: Some("timed out with no default answer".into()),
            },
        },
        (GateKind::ManualGate, Fallback::Default) => {
            match gate
                .default
                .as_deref()
                .map(|d| d.trim().to_ascii_lowercase())
                .as_deref()
            {
                Some("approve" | "approved") => Decision::Approve,
                Some("reject" | "rejected") => Decision::Reject {
                    reason: Some(
                        "rejected by fallback (fallback_action: default, default: reject)".into(),
                    ),
                },
                _ => Decision::Reject {
                    reason: Some("timed out with no default answer".into()),
                },
            }
        }
        (_, Fallback::Escalate) => Decision::Reject {
            reason: by_fallback("rejected"),
        },
    };
    // A form's approval is its defaults filled in (the validator lets a
    // timeout approve only a form whose required fields all have one);
    // one it could not fill in is rejected (fail closed).
    let decision = match (decision, &gate.form) {
        (Decision::Approve, Some(f)) if !f.needs_a_human().is_empty() => Decision::Reject {
            reason: Some(format!(
                "timed out: the form's {} cannot be filled in without a human",
                f.needs_a_human()
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        },
        (Decision::Approve, Some(f)) => Decision::Fill {
            values: f.defaults(),
        },
        (d, _) => d,
    };
    // `when_closed: reject`: opened outside hours, rejected at once.
    let decision = match closed {
        Some(h) => Decision::Reject {
            reason: Some(format!(
                "outside business hours of calendar `{}` (when_closed: reject)",
                h.calendar
            )),
        },
        None => decision,
    };
    Answer {
        decision,
        by: "timeout".into(),
        at: now,
        via: "timeout".into(),
        vars: Map::new(),
        call: None,
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    }
}

/// Opens a gate from its spec, with the rendered prompt and context.
pub fn open(
    spec: &GateSpec,
    position: Position,
    instance: u64,
    prompt: String,
    context: String,
    now: DateTime<Utc>,
) -> OpenGate {
    OpenGate {
        reminded_at: None,
        id: spec.id.clone(),
        instance,
        // Set when the engine adds it to the session.
        order: 0,
        kind: spec.kind,
        position,
        prompt,
        context,
        show_preview: spec.show_preview,
        preview_length: spec.preview_length,
        default: spec.default.clone(),
        fallback: spec.fallback,
        require_reason: spec.require_reason,
        channel: spec.channel.clone(),
        approvers: spec.approvers.clone().unwrap_or_default(),
        approvals_required: spec.approvals_required.unwrap_or(1).max(1),
        rejections_required: spec.rejections_required.unwrap_or(1).max(1),
        rejections: Vec::new(),
        allow_self_approval: spec.allow_self_approval,
        approvals: Vec::new(),
        notify_dm: spec.notify_dm,
        notify_email: spec.notify_email,
        trigger: None,
        rule: None,
        hours: None,
        form: spec.form.clone(),
        allow_trust: spec.allow_trust,
        allow_edit: spec.allow_edit,
        step_up: spec.step_up,
        opened_at: now,
        timeout_at: spec
            .timeout_secs
            .and_then(|s| chrono::Duration::try_seconds(s as i64))
            .map(|d| now + d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An open gate of `kind`, as unit tests start from.
    fn gate(kind: GateKind) -> OpenGate {
        let mut g = OpenGate::for_tests("g");
        g.kind = kind;
        g
    }

    fn form_gate() -> OpenGate {
        let mut g = gate(GateKind::ManualGate);
        g.form = Some(
            crate::model::form::Form::from_value(&json!({"properties": {
                "amount": {"type": "integer"},
                "note": {"type": "string", "default": "none"},
            }, "required": ["amount"]}))
            .expect("form"),
        );
        g
    }

    fn values(v: serde_json::Value) -> Map<String, serde_json::Value> {
        serde_json::from_value(v).expect("a map")
    }

    #[test]
    fn a_form_is_approved_by_filling_it_in() {
        let g = form_gate();
        let why = interpret(&g, &Decision::Approve).unwrap_err().to_string();
        assert!(why.contains("amount (integer, required)"), "{why}");
        let approved = Decision::Respond {
            text: "approved".into(),
        };
        assert!(interpret(&g, &approved).is_err());
        let fill = Decision::Fill {
            values: values(json!({"amount": "5"})),
        };
        assert_eq!(
            interpret(&g, &fill).unwrap(),
            Outcome::Continue {
                response: r#"{"amount":5,"note":"none"}"#.into()
            }
        );
        let bad = Decision::Fill {
            values: values(json!({"amount": "five"})),
        };
        let why = interpret(&g, &bad).unwrap_err().to_string();
        assert!(why.contains("`amount` must be a whole number"), "{why}");
        // Values for a gate without a form are refused; reject still works.
        let plain = gate(GateKind::ManualGate);
        assert!(interpret(&plain, &fill).is_err());
        assert!(interpret(&gate(GateKind::Hitl), &fill).is_err());
        assert_eq!(
            interpret(&g, &Decision::Reject { reason: None }).unwrap(),
            Outcome::Cancel { reason: None }
        );
    }

    #[test]
    fn trust_approves_only_a_manual_gate_that_allows_it() {
        let mut g = gate(GateKind::ManualGate);
        assert!(interpret(&g, &Decision::Trust { limit: None }).is_err());
        g.allow_trust = true;
        assert_eq!(
            interpret(&g, &Decision::Trust { limit: None }).unwrap(),
            Outcome::Continue {
                response: "trusted".into()
            }
        );
        let mut hitl = gate(GateKind::Hitl);
        hitl.allow_trust = true;
        assert!(interpret(&hitl, &Decision::Trust { limit: None }).is_err());
    }

    #[test]
    fn edits_approve_only_a_manual_gate_that_allows_them_and_only_as_an_object() {
        let edit = Decision::Edit {
            arguments: serde_json::json!({"command": "ls"}),
        };
        let mut g = gate(GateKind::ManualGate);
        assert!(interpret(&g, &edit).is_err(), "no allow_edit");
        g.allow_edit = true;
        assert_eq!(
            interpret(&g, &edit).unwrap(),
            Outcome::Continue {
                response: "approved".into()
            }
        );
        let not_an_object = Decision::Edit {
            arguments: serde_json::json!("rm -rf /"),
        };
        assert!(interpret(&g, &not_an_object)
            .unwrap_err()
            .to_string()
            .contains("JSON object"));
        let mut hitl = gate(GateKind::Hitl);
        hitl.allow_edit = true;
        assert!(interpret(&hitl, &edit).is_err());
    }

    #[test]
    fn fills_and_trust_count_as_approvals_for_self_approval() {
        let mut g = form_gate();
        g.allow_self_approval = Some(false);
        let people = Directory::default();
        let id = Identity {
            who: "ana",
            started_by: "ana",
            in_bot: true,
            admins: &[],
            member_of: &|_| false,
            idp_groups: &[],
            people: &people,
            now: crate::clock::test_epoch(),
        };
        let fill = Decision::Fill {
            values: values(json!({"amount": 1})),
        };
        assert!(authorize(&g, &fill, &id).is_err());
        assert!(authorize(&g, &Decision::Trust { limit: None }, &id).is_err());
        assert!(authorize(&g, &Decision::Reject { reason: None }, &id).is_ok());
    }

    #[test]
    fn the_identity_providers_groups_list_a_person_and_say_so() {
        let mut g = gate(GateKind::ManualGate);
        g.approvers = vec![Approver::Group("finance".into())];
        let people = Directory::new(vec![crate::model::person::Person {
            groups: vec!["finance".into()],
            ..crate::model::person::Person::named("carol")
        }])
        .expect("directory");
        let finance = &["finance".to_string()][..];
        let eng = &["eng".to_string()][..];
        fn id<'a>(who: &'a str, idp: &'a [String], people: &'a Directory) -> Identity<'a> {
            Identity {
                who,
                started_by: "ci",
                in_bot: true,
                admins: &[],
                member_of: &|_| false,
                idp_groups: idp,
                people,
                now: crate::clock::test_epoch(),
            }
        }
        let id = |who, idp| id(who, idp, &people);
        // The directory's member: in their own right, nothing to record.
        assert_eq!(
            authorize(&g, &Decision::Approve, &id("carol", &[])),
            Ok(Allowed::default())
        );
        // Only the provider's claim: allowed, and told so.
        assert_eq!(
            authorize(&g, &Decision::Approve, &id("alice@corp.example", finance))
                .expect("allowed")
                .idp_group
                .as_deref(),
            Some("finance")
        );
        assert!(authorize(&g, &Decision::Approve, &id("bob@corp.example", eng)).is_err());
        assert!(authorize(&g, &Decision::Approve, &id("bob@corp.example", &[])).is_err());
    }

    #[test]
    fn a_timeout_that_approves_a_form_fills_in_its_defaults() {
        let mut g = form_gate();
        g.fallback = Fallback::Continue;
        let now = crate::clock::test_epoch();
        // `amount` is required without a default: rejected, fail closed.
        assert!(matches!(
            timeout_answer(&g, now).decision,
            Decision::Reject { reason: Some(r) } if r.contains("amount")
        ));
        g.form = Some(
            crate::model::form::Form::from_value(&json!({"properties": {
                "amount": {"type": "integer", "default": 1},
                "note": {"type": "string", "default": "none"},
            }, "required": ["amount"]}))
            .expect("form"),
        );
        assert_eq!(
            timeout_answer(&g, now).decision,
            Decision::Fill {
                values: values(json!({"amount": 1, "note": "none"}))
            }
        );
    }

    #[test]
    fn hitl_free_text_is_the_response_and_manual_gates_refuse_it() {
        let r = interpret(
            &gate(GateKind::Hitl),
            &Decision::Respond {
                text: "ship it".into(),
            },
        )
        .unwrap();
        assert_eq!(
            r,
            Outcome::Continue {
                response: "ship it".into()
            }
        );
        assert!(interpret(
            &gate(GateKind::ManualGate),
            &Decision::Respond {
                text: "ship it".into()
            }
        )
        .is_err());
        let r = interpret(
            &gate(GateKind::ManualGate),
            &Decision::Respond {
                text: "approved".into(),
            },
        )
        .unwrap();
        assert_eq!(
            r,
            Outcome::Continue {
                response: "approved".into()
            }
        );
    }

    #[test]
    fn modify_without_feedback_is_refused() {
        assert!(interpret(
            &gate(GateKind::ManualGate),
            &Decision::Modify {
                feedback: " ".into()
            }
        )
        .is_err());
    }

    #[test]
    fn preview_cuts_on_char_boundaries() {
        assert_eq!(crate::model::cut("héllo wörld", 4), ("héll".to_string(), 7));
        assert_eq!(crate::model::cut("abc", 10), ("abc".to_string(), 0));
    }

    #[test]
    fn timeouts_fail_closed_without_a_default() {
        let spec = GateSpec {
            id: "g".into(),
            kind: GateKind::Hitl,
            prompt: "p".into(),
            context_display: None,
            default: None,
            timeout_secs: Some(1),
            fallback: Fallback::Cancel,
            condition: None,
            show_preview: true,
            preview_length: 10,
            require_reason: false,
            channel: None,
            approvers: None,
            rules: Vec::new(),
            approvals_required: None,
            rejections_required: None,
            allow_self_approval: None,
            notify_dm: false,
            notify_email: false,
            timers: Default::default(),
            hours: None,
            form: None,
            allow_trust: false,
            allow_edit: false,
            step_up: None,
        };
        let now = crate::clock::test_epoch();
        let g = open(&spec, Position::Step(1), 1, "p".into(), "c".into(), now);
        assert!(!g.timed_out(now));
        assert!(g.timed_out(now + chrono::Duration::seconds(2)));
        assert!(matches!(
            timeout_answer(&g, now).decision,
            Decision::Reject { .. }
        ));
    }
}
