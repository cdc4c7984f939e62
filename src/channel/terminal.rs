//! `--interactive`: ask the human at the terminal and wait for the answer.
//!
//! Reads lines from any `BufRead` (stdin in the CLI, a buffer in tests) and
//! writes prompts to any `Write` (stderr). End of input defers: the session
//! stays paused and can be resumed later, so closing the terminal loses
//! nothing; [`Terminal::input_ended`] tells the caller it happened (the CLI
//! says so when stdin was not a terminal: nobody could have answered).

use std::io::{BufRead, Write};

use super::{HumanChannel, Reply};
use crate::error::Result;
use crate::model::Session;
use crate::model::{Answer, Decision};
use crate::spec::GateKind;

pub struct Terminal<R, W> {
    input: R,
    output: W,
    who: String,
    /// Answers are stamped by it.
    clock: crate::clock::SharedClock,
    /// The input ended (or failed) while a question waited.
    ended: bool,
}

impl<R: BufRead, W: Write> Terminal<R, W> {
    pub fn new(input: R, output: W, who: String, clock: crate::clock::SharedClock) -> Self {
        Terminal {
            input,
            output,
            who,
            clock,
            ended: false,
        }
    }

    /// Whether the input ended before an answer came (not a chosen defer).
    pub fn input_ended(&self) -> bool {
        self.ended
    }

    fn line(&mut self, prompt: &str) -> Option<String> {
        let _ = write!(self.output, "{prompt}");
        let _ = self.output.flush();
        let mut buf = String::new();
        match self.input.read_line(&mut buf) {
            Ok(0) | Err(_) => {
                self.ended = true;
                None
            }
            Ok(_) => Some(buf.trim_end_matches(['\n', '\r']).to_string()),
        }
    }

    fn answer(&self, decision: Decision) -> Reply {
        Reply::Now(Answer {
            decision,
            by: self.who.clone(),
            at: self.clock.now(),
            via: "terminal".into(),
            vars: Default::default(),
            call: None,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        })
    }

    /// One waiting tool call: approve, reject, edit its arguments, trust.
    fn tool_call(&mut self, session: &Session) -> Reply {
        let Some(pc) = session
            .agent_turn
            .as_ref()
            .and_then(|t| t.waiting().next().cloned())
        else {
            return Reply::Later;
        };
        let _ = writeln!(
            self.output,
            "\n⏸  Tool call `{}` ({}) wants approval",
            pc.call.name, pc.call.id
        );
        if let Some(r) = &pc.request {
            let _ = writeln!(self.output, "   {}", r.prompt);
            let _ = writeln!(self.output, "   what: {}", r.description);
            let _ = writeln!(
                self.output,
                "   risk: {}, {}",
                r.risk.as_str(),
                if r.reversible {
                    "reversible"
                } else {
                    "cannot be undone"
                }
            );
        }
        let args = serde_json::to_string_pretty(&pc.call.arguments).unwrap_or_default();
        let _ = writeln!(self.output, "   arguments:\n{args}");
        let trustable = pc.request.as_ref().is_some_and(|r| r.trustable);
        loop {
            let _ = writeln!(
                self.output,
                "\n   [a] Approve  [r] Reject  [e] Edit arguments{}  [d] Defer",
                if trustable {
                    "  [t] Trust this tool for the run"
                } else {
                    ""
                }
            );
            let Some(choice) = self.line("   Your choice: ") else {
                return Reply::Later;
            };
            let decision = match choice.trim().to_ascii_lowercase().as_str() {
                "a" | "approve" => Decision::Approve,
                "t" | "trust" if trustable => Decision::Trust { limit: None },
                "r" | "reject" => {
                    let Some(reason) = self.line("   Reason (optional): ") else {
                        return Reply::Later;
                    };
                    Decision::Reject {
                        reason: Some(reason.trim().to_string()).filter(|r| !r.is_empty()),
                    }
                }
                "e" | "edit" => {
                    let Some(raw) = self.line("   New arguments (one line of JSON): ") else {
                        return Reply::Later;
                    };
                    match serde_json::from_str(&raw) {
                        Ok(arguments) => Decision::Edit { arguments },
                        Err(e) => {
                            let _ = writeln!(self.output, "   Not JSON: {e}");
                            continue;
                        }
                    }
                }
                "d" | "defer" => return Reply::Later,
                other => {
                    let _ = writeln!(self.output, "   `{other}` is not an option.");
                    continue;
                }
            };
            let Reply::Now(mut answer) = self.answer(decision) else {
                return Reply::Later;
            };
            answer.call = Some(pc.call.id.clone());
            return Reply::Now(answer);
        }
    }

    /// The blocking conversation; `None` means defer.
    fn converse(&mut self, session: &Session) -> Reply {
        let Some(gate) = session.first_gate().cloned() else {
            return Reply::Later;
        };
        if gate.kind == GateKind::ToolCall {
            return self.tool_call(session);
        }
        self.gate(&gate)
    }

    /// A manual or `hitl` gate: its prompt, preview and options, until an
    /// answer or a defer.
    fn gate(&mut self, gate: &crate::model::OpenGate) -> Reply {
        let (preview, cut) = gate.preview();
        let _ = writeln!(self.output, "\n⏸  Gate `{}` ({})", gate.id, gate.position);
        let _ = writeln!(self.output, "   {}", gate.prompt);
        if let Some(r) = &gate.rule {
            let _ = writeln!(self.output, "   {}", r.shown());
        }
        if gate.show_preview && !gate.context.is_empty() {
            let _ = writeln!(self.output, "\n   [Preview]\n{preview}");
            if cut > 0 {
                let _ = writeln!(
                    self.output,
                    "   ({} characters shown, {} total: [v] shows all)",
                    gate.preview_length,
                    gate.preview_length + cut
                );
            }
        }
        let hitl = gate.kind == GateKind::Hitl;
        if let Some(form) = &gate.form {
            let _ = writeln!(self.output, "   Approving fills in: {}", form.summary());
        }
        loop {
            let _ = writeln!(self.output, "\n   Options:");
            if gate.form.is_some() {
                let _ = writeln!(
                    self.output,
                    "     [a] Approve - fill in the values, continue"
                );
            } else {
                let _ = writeln!(self.output, "     [a] Approve - continue");
            }
            if gate.allow_trust {
                let _ = writeln!(
                    self.output,
                    "     [t] Trust - approve, and stop asking for this tool"
                );
            }
            let _ = writeln!(self.output, "     [r] Reject - end the run");
            let _ = writeln!(
                self.output,
                "     [m] Modify - feedback, re-run the previous step"
            );
            if hitl {
                let _ = writeln!(self.output, "     [t] Type a response");
            }
            let _ = writeln!(self.output, "     [v] View full output");
            let _ = writeln!(
                self.output,
                "     [d] Defer - keep the session paused and exit"
            );
            let Some(choice) = self.line("   Your choice: ") else {
                return Reply::Later;
            };
            match choice.trim().to_ascii_lowercase().as_str() {
                "a" | "approve" => match &gate.form {
                    None => return self.answer(Decision::Approve),
                    Some(form) => {
                        // Text as typed (empty: no value); the intake types it.
                        let mut values = serde_json::Map::new();
                        for f in form.fields() {
                            let default = f
                                .kind
                                .default_value()
                                .map(|d| {
                                    format!(
                                        " [{}]",
                                        d.as_str().map_or(d.to_string(), str::to_string)
                                    )
                                })
                                .unwrap_or_default();
                            let Some(v) = self.line(&format!("   {}{default}: ", f.summary()))
                            else {
                                return Reply::Later;
                            };
                            if !v.trim().is_empty() {
                                values.insert(f.name.clone(), serde_json::Value::String(v));
                            }
                        }
                        return self.answer(Decision::Fill { values });
                    }
                },
                "t" | "trust" if gate.allow_trust => {
                    return self.answer(Decision::Trust { limit: None })
                }
                "r" | "reject" => {
                    let Some(reason) = self.line("   Reason (optional): ") else {
                        return Reply::Later;
                    };
                    let reason = Some(reason.trim().to_string()).filter(|r| !r.is_empty());
                    return self.answer(Decision::Reject { reason });
                }
                "m" | "modify" => {
                    let Some(feedback) = self.line("   Feedback for the re-run: ") else {
                        return Reply::Later;
                    };
                    if feedback.trim().is_empty() {
                        let _ = writeln!(self.output, "   Feedback cannot be empty.");
                        continue;
                    }
                    return self.answer(Decision::Modify { feedback });
                }
                "t" if hitl => {
                    let Some(text) = self.line("   Response: ") else {
                        return Reply::Later;
                    };
                    return self.answer(Decision::Respond { text });
                }
                "v" | "view" => {
                    let _ = writeln!(self.output, "\n{}\n", gate.context);
                }
                "d" | "defer" => return Reply::Later,
                other => {
                    let _ = writeln!(self.output, "   `{other}` is not an option.");
                }
            }
        }
    }
}

impl<R: BufRead + Send, W: Write + Send> HumanChannel for Terminal<R, W> {
    async fn ask(&mut self, session: &Session) -> Result<Reply> {
        // A terminal conversation blocks by nature; the CLI runs one session
        // on its own runtime, so nothing else waits on this thread.
        Ok(self.converse(session))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OpenGate;

    /// A manual gate with `form` (JSON Schema text) and `allow_trust`.
    fn gate(form: Option<&str>, allow_trust: bool) -> OpenGate {
        let mut g = OpenGate::for_tests("review");
        g.form = form.map(|f| serde_json::from_str(f).expect("a form"));
        g.allow_trust = allow_trust;
        g
    }

    fn answer(g: &OpenGate, typed: &str) -> (Reply, String) {
        let mut out = Vec::new();
        let clock: crate::clock::SharedClock =
            std::sync::Arc::new(crate::clock::FixedClock::at(crate::clock::test_epoch()));
        let mut t = Terminal::new(typed.as_bytes(), &mut out, "ana".into(), clock);
        let reply = t.gate(g);
        (reply, String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn approving_a_form_asks_each_field_and_trust_is_offered_where_allowed() {
        let g = gate(
            Some(
                r#"{"properties": {"zone": {"type": "string", "enum": ["eu", "us"]}, "replicas": {"type": "integer", "default": 2}}, "required": ["zone"]}"#,
            ),
            false,
        );
        let (reply, shown) = answer(&g, "a\neu\n\n");
        assert!(
            shown.contains("Approving fills in: zone (choice, required), replicas (integer)"),
            "{shown}"
        );
        assert!(shown.contains("replicas (integer) [2]: "), "{shown}");
        match reply {
            Reply::Now(a) => assert_eq!(
                a.decision,
                Decision::Fill {
                    values: serde_json::from_str(r#"{"zone": "eu"}"#).expect("values")
                }
            ),
            Reply::Later => panic!("no answer: {shown}"),
        }
        let (_, shown) = answer(&gate(None, false), "d\n");
        assert!(!shown.contains("[t] Trust"), "{shown}");
        let (reply, shown) = answer(&gate(None, true), "t\n");
        assert!(shown.contains("[t] Trust"), "{shown}");
        assert!(matches!(reply, Reply::Now(a) if a.decision == Decision::Trust { limit: None }));
    }
}
