//! Answer requests: an answer to an open gate as a door receives it —
//! the decision's name and its fields, text as people typed them — before
//! it is an [`Answer`](crate::model::Answer). The API takes it as JSON,
//! the web inbox builds it from a form, the CLI sends it; all read the
//! decision the same way ([`AnswerRequest::decision`]) and are refused
//! with the same words.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::problem::Problem;
use crate::model::{Decision, Refusal};

/// An answer to an open gate.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// `approve` (with `values` on a gate with a form), `reject`, `modify`
    /// (needs `feedback`), `respond` (needs `response`), `edit` (tool
    /// calls; needs `args`) or `trust` (tool calls, and manual gates that
    /// allow it).
    pub decision: String,
    /// The gate: its handle `id#n` or its id; needed when several are open.
    #[serde(default)]
    pub gate: Option<String>,
    /// Tool-call gates: which waiting call.
    #[serde(default)]
    pub call: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub feedback: Option<String>,
    #[serde(default)]
    pub response: Option<String>,
    /// `edit`: the call's new arguments (a JSON object; same tool).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub args: Option<Value>,
    /// Variable overrides that come with the answer.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub vars: Map<String, Value>,
    /// `approve` of a gate with a form: its fields' values, by name (text
    /// is read as the field's type: `"42"` for a number, `"true"` for a
    /// boolean). Only with `approve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub values: Option<Map<String, Value>>,
    /// `trust` of a tool call, within limits: `run` (the rest of this
    /// run) or a duration (`1h`, `30m`, `2d`; at most 30 days) for which
    /// the same calls of this workflow run without asking. With `match`
    /// alone: 1 h. Without either, trust is for the rest of the run.
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub span: Option<String>,
    /// `trust` within limits: only calls whose top-level arguments match,
    /// each `NAME=VALUE` (exact; JSON when it reads as JSON) or
    /// `NAME^=PREFIX` (text starting with); all must hold.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<String>,
}

impl AnswerRequest {
    /// A request for `decision` and nothing else yet: how a door that
    /// reads its own buttons and fields puts them in these words.
    pub fn of(decision: &str) -> AnswerRequest {
        AnswerRequest {
            decision: decision.to_string(),
            ..AnswerRequest::default()
        }
    }

    /// The decision it asks for; 422 naming what is missing.
    pub fn decision(&self) -> Result<Decision, Problem> {
        let need = |what: &Option<String>, field: &str| {
            what.clone()
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| {
                    Problem::unprocessable(
                        "bad_answer",
                        format!("`{}` needs a non-empty `{field}`", self.decision),
                    )
                })
        };
        if let (Some(_), d) = (&self.values, self.decision.as_str()) {
            if d != "approve" {
                return Err(Problem::unprocessable(
                    "bad_answer",
                    format!("`values` fill in a gate's form and go with `approve`, not `{d}`"),
                )
                .with(serde_json::json!({ "field": "values" })));
            }
        }
        if (self.span.is_some() || !self.matches.is_empty()) && self.decision != "trust" {
            return Err(Problem::unprocessable(
                "bad_answer",
                format!(
                    "`for` and `match` limit a `trust` answer, not `{}`",
                    self.decision
                ),
            ));
        }
        Ok(match self.decision.as_str() {
            "approve" => match &self.values {
                Some(values) => Decision::Fill {
                    values: values.clone(),
                },
                None => Decision::Approve,
            },
            "reject" => Decision::Reject {
                reason: self.reason.clone().filter(|r| !r.trim().is_empty()),
            },
            "modify" => Decision::Modify {
                feedback: need(&self.feedback, "feedback")?,
            },
            "respond" => Decision::Respond {
                text: need(&self.response, "response")?,
            },
            "edit" => match &self.args {
                Some(Value::Object(_)) => Decision::Edit {
                    arguments: self.args.clone().unwrap_or(Value::Null),
                },
                _ => {
                    return Err(Problem::unprocessable(
                        "bad_answer",
                        "`edit` needs `args`, the call's new arguments as a JSON object",
                    ))
                }
            },
            "trust" => Decision::Trust {
                limit: if self.span.is_none() && self.matches.is_empty() {
                    None
                } else {
                    Some(
                        crate::model::grant::Limit::parse(self.span.as_deref(), &self.matches)
                            .map_err(|e| {
                                Problem::unprocessable("bad_answer", e)
                                    .with(serde_json::json!({ "field": if self.matches.is_empty() { "for" } else { "match" } }))
                            })?,
                    )
                },
            },
            other => {
                return Err(Problem::unprocessable(
                    "bad_answer",
                    format!(
                        "decision `{other}` is not one of approve, reject, modify, respond, edit, trust"
                    ),
                ))
            }
        })
    }
}

/// What a refused answer is told, in plain text (a card action or a
/// command in Teams, the web inbox; Slack shows the same with mentions,
/// `slack::words::refusal`): who already decided and when, or why the
/// intake said no.
pub fn refusal_text(r: &Refusal) -> String {
    match r {
        Refusal::AlreadyAnswered(a) => format!(
            "already {} by {} at {}",
            a.decision.verb(),
            a.by,
            a.at.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        Refusal::NotOpen(s) => format!("this run is {s}; there is nothing to decide"),
        other => other.to_string(),
    }
}
