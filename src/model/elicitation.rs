//! What an MCP server asked a person while one of its tools ran
//! (elicitation), and what they answered.
//!
//! It is kept with the call ([`super::CallState::Asking`]), in the session,
//! so a question survives a restart and is asked once: each question is a
//! [`Round`] with the handle of the gate that asks it and, once given, the
//! [`Reply`]. When every round is answered the call is made again with the
//! replies — as `inputResponses` with the server's `requestState` on
//! protocol 2026-07-28, or, on older protocols, by answering the server's
//! `elicitation/create` requests from the recorded replies, matched by the
//! question asked ([`Question::digest`]).
//!
//! Pure data and the rules that only read it: the MCP wire is
//! `crate::tools::mcp`'s, the gate is the engine's.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

use super::form::Form;
use super::gate::{Answer, Decision};

/// The most questions one call may ask before strands stops answering.
pub const MAX_ROUNDS: usize = 10;

/// What the server asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Ask {
    /// Values to fill in: a flat JSON Schema (`requestedSchema`).
    Form { schema: Value },
    /// A page the person visits themselves (strands never follows it);
    /// the answer is accept or decline.
    Url {
        url: String,
        /// The server's `elicitationId` (empty when it sent none).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        id: String,
    },
}

/// One question of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub message: String,
    #[serde(flatten)]
    pub ask: Ask,
}

impl Question {
    /// Identifies the question as asked (message, mode, schema or URL): a
    /// call made again that asks the same question gets the recorded reply.
    pub fn digest(&self) -> String {
        let text = serde_json::to_value(self).unwrap_or_default();
        super::conversation::digest("elicitation", &text)
    }

    /// The form a person fills in: `None` for a URL, or for a schema
    /// without properties (an approval is the whole answer). A schema a
    /// form cannot show (nested objects, arrays, …) is an error saying why.
    pub fn form(&self) -> Result<Option<Form>, String> {
        let Ask::Form { schema } = &self.ask else {
            return Ok(None);
        };
        let props = schema.get("properties");
        if props.is_none_or(|p| p.as_object().is_some_and(Map::is_empty)) {
            return Ok(None);
        }
        // A form is `type`, `properties` and `required`; the rest of the
        // schema (its `title`, `$schema`, `description`) is not shown.
        let mut kept = Map::new();
        for key in ["type", "properties", "required"] {
            if let Some(v) = schema.get(key) {
                kept.insert(key.to_string(), v.clone());
            }
        }
        serde_json::from_value::<Form>(Value::Object(kept))
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

/// What goes back to the server: the MCP `ElicitResult` actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Reply {
    /// The person answered: the form's typed values (none for a URL).
    Accept {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Map<String, Value>>,
    },
    /// The person said no.
    Decline,
    /// Nobody answered (a timeout, a question strands cannot show).
    Cancel,
}

impl Reply {
    /// The reply a gate's answer gives: filled values or an approval
    /// accept, a rejection declines, a timeout's answer cancels. `None`
    /// for answers that do not reply (modify, defer, respond, …).
    pub fn of(answer: &Answer) -> Option<Reply> {
        if answer.via == "timeout" {
            return Some(Reply::Cancel);
        }
        Some(match &answer.decision {
            Decision::Fill { values } => Reply::Accept {
                content: Some(values.clone()),
            },
            Decision::Approve => Reply::Accept { content: None },
            Decision::Reject { .. } => Reply::Decline,
            Decision::Skip | Decision::Abort { .. } => Reply::Cancel,
            _ => return None,
        })
    }

    /// The `ElicitResult` as JSON.
    pub fn wire(&self) -> Value {
        match self {
            Reply::Accept { content } => match content {
                Some(c) => json!({"action": "accept", "content": c}),
                None => json!({"action": "accept"}),
            },
            Reply::Decline => json!({"action": "decline"}),
            Reply::Cancel => json!({"action": "cancel"}),
        }
    }

    /// `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            Reply::Accept { .. } => "accept",
            Reply::Decline => "decline",
            Reply::Cancel => "cancel",
        }
    }
}

/// One question and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Round {
    /// The server's key for it in an `input_required` result (protocol
    /// 2026-07-28); `None` for an `elicitation/create` request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub question: Question,
    /// The handle of the gate asking it, once opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    /// Its reply went back with a retry (protocol 2026-07-28): the
    /// server's `requestState` carries it from then on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sent: bool,
}

/// Every question a call's server asked, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Elicitation {
    pub rounds: Vec<Round>,
    /// The server's latest `requestState`, echoed with the replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl Elicitation {
    /// The first question without a reply: the one a gate asks now.
    pub fn unanswered(&self) -> Option<usize> {
        self.rounds.iter().position(|r| r.reply.is_none())
    }

    /// The round whose gate is `handle`.
    pub fn at_gate(&self, handle: &str) -> Option<usize> {
        self.rounds
            .iter()
            .position(|r| r.gate.as_deref() == Some(handle))
    }

    /// The recorded reply to a question asked again (a call made again
    /// from the start asks its questions again).
    pub fn reply_to(&self, question: &Question) -> Option<&Reply> {
        self.answered(question)
            .map(|i| &self.rounds[i])?
            .reply
            .as_ref()
    }

    /// The round that answered this question already, if one did.
    pub fn answered(&self, question: &Question) -> Option<usize> {
        let digest = question.digest();
        self.rounds
            .iter()
            .position(|r| r.reply.is_some() && r.question.digest() == digest)
    }

    /// Replies not yet sent, by the server's keys (protocol 2026-07-28),
    /// as JSON `ElicitResult`s; marks them sent.
    pub fn take_responses(&mut self) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        for r in self.rounds.iter_mut().filter(|r| !r.sent) {
            if let (Some(key), Some(reply)) = (&r.key, &r.reply) {
                out.insert(key.clone(), reply.wire());
                r.sent = true;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form_question() -> Question {
        Question {
            message: "Why?".into(),
            ask: Ask::Form {
                schema: json!({
                    "title": "Report", "type": "object",
                    "properties": {
                        "reason": {"type": "string", "title": "Reason", "description": "Why"},
                        "count": {"type": "integer", "default": 1}
                    },
                    "required": ["reason"]
                }),
            },
        }
    }

    fn answer(decision: Decision, via: &str) -> Answer {
        Answer {
            decision,
            by: "alice".into(),
            at: crate::clock::test_epoch(),
            via: via.into(),
            vars: Map::new(),
            call: None,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        }
    }

    #[test]
    fn a_servers_schema_becomes_a_form_and_a_url_none() {
        let form = form_question().form().expect("a form").expect("fields");
        let names: Vec<&str> = form.fields().iter().map(|f| f.name.as_str()).collect();
        // The MCP client reads the schema into sorted maps: the server's
        // order is not kept.
        assert_eq!(names, ["count", "reason"]);
        let url = Question {
            message: "Connect".into(),
            ask: Ask::Url {
                url: "https://x.example/".into(),
                id: String::new(),
            },
        };
        assert_eq!(url.form(), Ok(None));
        let nested = Question {
            message: "?".into(),
            ask: Ask::Form {
                schema: json!({"type": "object", "properties": {"a": {"type": "object"}}}),
            },
        };
        assert!(nested.form().is_err());
    }

    #[test]
    fn answers_become_replies() {
        let values: Map<String, Value> = json!({"reason": "audit", "count": 2})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let fill = Decision::Fill {
            values: values.clone(),
        };
        assert_eq!(
            Reply::of(&answer(fill, "api")),
            Some(Reply::Accept {
                content: Some(values)
            })
        );
        let no = Decision::Reject { reason: None };
        assert_eq!(Reply::of(&answer(no.clone(), "cli")), Some(Reply::Decline));
        assert_eq!(Reply::of(&answer(no, "timeout")), Some(Reply::Cancel));
        assert_eq!(Reply::of(&answer(Decision::Defer, "cli")), None);
        assert_eq!(Reply::Decline.wire(), json!({"action": "decline"}));
    }

    #[test]
    fn replies_are_found_by_question_and_sent_once() {
        let q = form_question();
        let mut e = Elicitation {
            rounds: vec![Round {
                key: Some("ask".into()),
                question: q.clone(),
                gate: Some("elicit_c1#1".into()),
                reply: Some(Reply::Decline),
                sent: false,
            }],
            request_state: Some("s".into()),
        };
        assert_eq!(e.at_gate("elicit_c1#1"), Some(0));
        assert_eq!(e.unanswered(), None);
        assert_eq!(
            e.take_responses(),
            BTreeMap::from([("ask".to_string(), json!({"action": "decline"}))])
        );
        assert!(e.take_responses().is_empty(), "sent once");
        e.rounds[0].key = None;
        assert_eq!(e.reply_to(&q), Some(&Reply::Decline));
    }
}
