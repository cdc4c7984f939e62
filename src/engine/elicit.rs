//! A person answers an MCP server's question (elicitation) during a tool
//! call: the question becomes a gate, the run pauses, and the answer goes
//! back to the server when the call is made again.
//!
//! The call's questions and replies live in its [`CallState::Asking`], in
//! the session: the gate is an ordinary one (a manual gate showing the
//! server's message, its requested values as a form — typed inputs in
//! every room — or a URL-mode question's link, which strands never
//! follows), answered through the one intake like every other gate. A
//! filled form (or an approval, for a URL or a question with no values)
//! accepts, a rejection declines, a timeout cancels. Once every question
//! has its reply the call is made again with them
//! (`crate::tools::mcp`'s rounds); a process that stops while the gate
//! waits asks on the same gate after the restart, and an answer already
//! given is used, never asked for again.
//!
//! A call made again that asks more is asked on a new gate (the next
//! instance of the same gate id, which the call's id names). A question
//! strands cannot show as a form ends the call with an error result.

use super::Engine;
use crate::channel::{HumanChannel, Progress};
use crate::error::{Error, Result};
use crate::model::elicitation::{Ask, Elicitation, Reply};
use crate::model::{
    Answer, CallState, Decision, GateEvent, GateEventKind, GateKind, OpenGate, PendingAnswer,
    Session, Status,
};
use crate::spec::Spec;
use crate::tools::ToolResult;

/// The gate id of call `call_id`'s questions: `elicit_` and the call's id
/// (characters outside `[A-Za-z0-9_-]` become `_`).
pub fn gate_id(call_id: &str) -> String {
    let clean: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    format!("elicit_{clean}")
}

/// The call (its index in the latest turn) whose question gate `handle`
/// asks, and that question's round.
pub fn asking_at(session: &Session, handle: &str) -> Option<(usize, usize)> {
    let turn = session.agent_turn.as_ref()?;
    turn.calls
        .iter()
        .enumerate()
        .find_map(|(i, pc)| match &pc.state {
            CallState::Asking { elicitation } => elicitation.at_gate(handle).map(|r| (i, r)),
            _ => None,
        })
}

/// Whether `answer` fits the question gate `gate` asks: `None` when
/// `gate` asks no server's question. A form is filled in (the intake has
/// typed its values), a URL or a question without values approved, and
/// either may be rejected (declined).
pub fn check_reply(session: &Session, gate: &OpenGate, answer: &Answer) -> Option<Result<()>> {
    asking_at(session, &gate.handle())?;
    let fits = match (&answer.decision, &gate.form) {
        (Decision::Fill { .. }, Some(_)) | (Decision::Approve, None) => true,
        (Decision::Reject { .. }, _) => true,
        _ => answer.via == "timeout",
    };
    Some(if fits {
        Ok(())
    } else if gate.form.is_some() {
        Err(Error::Usage(format!(
            "gate `{}` asks for values an MCP server needs: fill them in (approve with the values), or reject to decline; nothing else answers it",
            gate.id
        )))
    } else {
        Err(Error::Usage(format!(
            "gate `{}` asks a question of an MCP server: approve to accept, or reject to decline; nothing else answers it",
            gate.id
        )))
    })
}

fn set_state(session: &mut Session, i: usize, state: CallState) {
    if let Some(pc) = session.agent_turn.as_mut().and_then(|t| t.calls.get_mut(i)) {
        pc.state = state;
    }
}

impl Engine<'_> {
    /// Call `i` of the latest turn asked a question without a reply: it
    /// waits at the question's gate (opened now, unless it is open
    /// already), and the run pauses. A question no form can show ends the
    /// call with an error result instead.
    pub(super) async fn ask_person(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        i: usize,
        mut e: Elicitation,
    ) -> Result<()> {
        let Some(pc) = session
            .agent_turn
            .as_ref()
            .and_then(|t| t.calls.get(i))
            .cloned()
        else {
            return Err(Error::Internal("an asking call vanished".into()));
        };
        let position = session
            .agent_turn
            .as_ref()
            .map(|t| t.position.clone())
            .ok_or_else(|| Error::Internal("an asking call lost its step".into()))?;
        let Some(r) = e.unanswered() else {
            return Err(Error::Internal("an asking call has no question".into()));
        };
        if let Some(open) = e.rounds[r]
            .gate
            .as_ref()
            .filter(|h| session.gates.contains_key(*h))
        {
            tracing::debug!(gate = %open, "the question's gate is open already");
            set_state(session, i, CallState::Asking { elicitation: e });
            session.status = Status::Paused;
            return self.save(session).await;
        }
        let server = crate::tools::mcp::server_of(&pc.call.name).unwrap_or("?");
        let question = e.rounds[r].question.clone();
        let form = match question.form() {
            Ok(f) => f,
            Err(why) => {
                let result = ToolResult::error(format!(
                    "MCP server `{server}` asked for values strands cannot show as a form ({why}); the call was abandoned"
                ));
                set_state(session, i, CallState::Done { result });
                return self.save(session).await;
            }
        };
        let message = spec.redactor.redact(question.message.trim());
        let (prompt, how) = match &question.ask {
            Ask::Url { url, .. } => (
                format!("MCP server `{server}` asks you to open {url} : {message}"),
                format!(
                    "Open this link yourself (strands does not follow it): {url}\nApprove once done (accept), or reject (decline)."
                ),
            ),
            Ask::Form { .. } if form.is_some() => (
                format!("MCP server `{server}` asks: {message}"),
                "Fill in the values it asks for (accept), or reject (decline).".to_string(),
            ),
            Ask::Form { .. } => (
                format!("MCP server `{server}` asks: {message}"),
                "Approve (accept), or reject (decline).".to_string(),
            ),
        };
        let args = serde_json::to_string_pretty(&pc.call.arguments).unwrap_or_default();
        let context = spec.redactor.redact(&format!(
            "{how}\n\nAsked while running `{}` (call {}) with:\n{args}",
            pc.call.name, pc.call.id
        ));
        let id = gate_id(&pc.call.id);
        let mut opened = self.call_gate(
            spec,
            session,
            (&id, GateKind::ManualGate),
            position,
            (prompt, context),
        );
        opened.form = form;
        self.question_rule(spec, session, &pc.call, &mut opened);
        e.rounds[r].gate = Some(opened.handle());
        set_state(session, i, CallState::Asking { elicitation: e });
        self.add_gate(session, opened, None);
        session.status = Status::Paused;
        self.save(session).await
    }

    /// `security.approvers` rules on a question's gate, judged on the call
    /// that asks (`tool`), as on its tool-call gate: a rule decides the
    /// approvers and its timeout; one person answers (no quorum), and a
    /// rejection needs no reason.
    fn question_rule(
        &self,
        spec: &Spec,
        session: &Session,
        call: &crate::model::ToolCall,
        opened: &mut OpenGate,
    ) {
        let rules = &spec.approval.rules;
        if rules.is_empty() {
            return;
        }
        let ctx = super::context::for_rules(spec, session, Some(&opened.position), Some(call));
        let base = opened.approvals_required;
        if let Some(choice) = crate::gate::policy::choose(rules, self.templates, &ctx, base) {
            let rule = crate::gate::policy::ApprovalRule {
                quorum: None,
                require_reason: None,
                ..choice.rule.clone()
            };
            crate::gate::policy::apply(
                opened,
                &crate::gate::policy::Choice {
                    rule: &rule,
                    ..choice
                },
            );
        }
    }

    /// Carries out an answer to a server's question: its reply is kept
    /// with the call, the gate closes, and the run goes on (the call is
    /// made again) — or asks the call's next question. `false` when the
    /// answer's gate asks no server's question.
    pub(super) async fn carry_reply<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        pending: &PendingAnswer,
        channel: &mut C,
    ) -> Result<bool> {
        let Some((i, r)) = asking_at(session, &pending.gate) else {
            return Ok(false);
        };
        let answer = &pending.answer;
        let reply = Reply::of(answer).ok_or_else(|| {
            Error::Internal(format!(
                "an answer that does not reply ({}) reached question gate {}",
                answer.decision.verb(),
                pending.gate
            ))
        })?;
        let gate = session.gates.get(&pending.gate).cloned().ok_or_else(|| {
            Error::Internal(format!("question gate {} is not open", pending.gate))
        })?;
        let Some(CallState::Asking { elicitation }) = session
            .agent_turn
            .as_ref()
            .and_then(|t| t.calls.get(i))
            .map(|pc| pc.state.clone())
        else {
            return Err(Error::Internal("an asking call vanished".into()));
        };
        let mut e = elicitation;
        e.rounds[r].reply = Some(reply);
        for (k, v) in &answer.vars {
            session.variables.insert(k.clone(), v.clone());
        }
        let waited_ms = gate.waited_ms(answer.at);
        session.history.push(GateEvent {
            gate: gate.id.clone(),
            instance: gate.instance,
            asked_at: Some(gate.opened_at),
            what: GateEventKind::Answered {
                answer: answer.clone(),
                waited_ms,
            },
        });
        session.pending = None;
        session.gates.remove(&pending.gate);
        if e.unanswered().is_some() {
            self.ask_person(spec, session, i, e).await?;
        } else {
            set_state(session, i, CallState::Asking { elicitation: e });
            session.status = Status::Running;
            self.save_with(session, crate::store::Durability::WithNext)
                .await?;
        }
        channel
            .progress(
                session,
                &Progress::GateAnswered {
                    gate: gate.id.clone(),
                    answer: answer.clone(),
                },
            )
            .await;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{answer, World, CHAIN};
    use crate::model::elicitation::{Question, Round};
    use serde_json::json;

    /// A paused session whose call `c1` waits at question gate
    /// `elicit_c1#1`, asking a form (`form: true`) or a URL.
    async fn asking(form: bool) -> Session {
        let w = World::new();
        let mut s = w.paused(&CHAIN.replace("$GATE", "")).await;
        let ask = if form {
            Ask::Form {
                schema: json!({"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}),
            }
        } else {
            Ask::Url {
                url: "https://x.example/".into(),
                id: String::new(),
            }
        };
        let question = Question {
            message: "Why?".into(),
            ask,
        };
        let mut gate = OpenGate::for_tests("elicit_c1");
        gate.form = question.form().expect("a form");
        let elicitation = Elicitation {
            rounds: vec![Round {
                key: None,
                question,
                gate: Some(gate.handle()),
                reply: None,
                sent: false,
            }],
            request_state: None,
        };
        s.agent_turn = Some(crate::model::AgentTurn {
            position: crate::model::Position::Step(0),
            agent: "a".into(),
            system: String::new(),
            messages: Vec::new(),
            turns: 1,
            calls: vec![crate::model::PendingCall {
                call: crate::model::ToolCall {
                    id: "c1".into(),
                    name: "srv__ask".into(),
                    arguments: json!({}),
                },
                digest: String::new(),
                request: None,
                state: CallState::Asking { elicitation },
                grant: None,
            }],
        });
        s.gates.insert(gate.handle(), gate);
        s
    }

    #[tokio::test]
    async fn a_question_takes_values_or_a_rejection_and_nothing_else() {
        let s = asking(true).await;
        let gate = s
            .gates
            .get("elicit_c1#1")
            .expect("the question's gate")
            .clone();
        let fill = Decision::Fill {
            values: json!({"reason": "audit"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let check = |d: Decision| check_reply(&s, &gate, &answer(d, "alice"));
        assert!(matches!(check(fill), Some(Ok(()))));
        assert!(matches!(
            check(Decision::Reject { reason: None }),
            Some(Ok(()))
        ));
        for refused in [
            Decision::Approve,
            Decision::Modify {
                feedback: "again".into(),
            },
            Decision::Defer,
        ] {
            match check(refused.clone()) {
                Some(Err(Error::Usage(m))) => assert!(m.contains("fill them in"), "{m}"),
                other => panic!("{refused:?} should be refused: {other:?}"),
            }
        }
        // Another gate asks no server's question.
        let review = s.first_gate().filter(|g| g.id == "review").cloned();
        if let Some(review) = review {
            assert!(check_reply(&s, &review, &answer(Decision::Approve, "alice")).is_none());
        }
    }

    #[tokio::test]
    async fn a_url_question_is_approved_or_rejected() {
        let s = asking(false).await;
        let gate = s
            .gates
            .get("elicit_c1#1")
            .expect("the question's gate")
            .clone();
        assert_eq!(gate.form, None);
        let check = |d: Decision| check_reply(&s, &gate, &answer(d, "alice"));
        assert!(matches!(check(Decision::Approve), Some(Ok(()))));
        assert!(matches!(
            check(Decision::Reject { reason: None }),
            Some(Ok(()))
        ));
        assert!(matches!(
            check(Decision::Respond {
                text: "done".into()
            }),
            Some(Err(_))
        ));
        assert_eq!(asking_at(&s, "elicit_c1#1"), Some((0, 0)));
        assert_eq!(asking_at(&s, "review#1"), None);
    }

    #[test]
    fn gate_ids_name_the_call() {
        assert_eq!(gate_id("call_1"), "elicit_call_1");
        assert_eq!(gate_id("toolu_01:x/y"), "elicit_toolu_01_x_y");
    }
}
