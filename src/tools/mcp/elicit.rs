//! A server's questions during a tool call (MCP elicitation), as far as
//! the wire goes: strands declares form and URL elicitation, and a call
//! that asks stops there and comes back as [`Called::Asks`] — nothing here
//! waits for a person. The engine records the question, opens a gate,
//! pauses the run, and makes the call again once it is answered, with the
//! replies ([`crate::model::elicitation`]).
//!
//! Both ways a server asks are handled:
//! - protocol 2026-07-28: the `tools/call` result is `input_required`, with
//!   its questions and a `requestState`; the call is made again with
//!   `inputResponses` and that state (one round at a time,
//!   `call_tool_once`);
//! - older protocols: the server sends `elicitation/create` during the
//!   call. A question with a recorded reply is answered from it; a new one
//!   is recorded and the call is abandoned (the server is told it was
//!   cancelled), to be made again from the start once answered — so a
//!   tool's work before its question may run again; on 2026-07-28 it does
//!   not.
//!
//! Sampling and roots are not offered: a server that asks for them gets
//! no answer from strands, and the call ends with an error result.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ErrorData, Implementation, InitializeRequestParams, InputRequest,
    ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient};
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::{result_text, stderr_note, Connection};
use crate::model::elicitation::{Ask, Elicitation, Question, Round, MAX_ROUNDS};
use crate::tools::builtin::{effective_timeout, human_duration, short_n};
use crate::tools::ToolResult;

/// What became of a call that may ask a person something.
#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    /// It finished: what the model reads.
    Done(ToolResult),
    /// Its server asked a question that has no reply yet: every question
    /// so far, the new ones without a reply.
    Asks(Elicitation),
}

/// The questions and replies of the call under way (older protocols):
/// what the handler answers from, and where it puts a new question.
#[derive(Default)]
struct Slot {
    replies: Elicitation,
    asked: Option<Result<Question, String>>,
}

/// strands as an MCP client: its name, version and capabilities, and the
/// answer to an `elicitation/create` request.
pub struct Handler {
    info: ClientConfig,
    slot: Arc<Mutex<Slot>>,
    asked: Arc<Notify>,
}

/// What a [`Connection`] keeps to talk to its [`Handler`].
#[derive(Clone, Default)]
pub struct Questions {
    slot: Arc<Mutex<Slot>>,
    asked: Arc<Notify>,
}

impl Handler {
    pub fn new() -> (Handler, Questions) {
        let questions = Questions::default();
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}}}))
                .unwrap_or_default();
        let info = InitializeRequestParams::new(
            capabilities,
            Implementation::new("strands", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        (
            Handler {
                info,
                slot: questions.slot.clone(),
                asked: questions.asked.clone(),
            },
            questions,
        )
    }
}

/// The protocol versions strands prefers (2026-07-28: questions come back
/// as results), falling back to `initialize` for older servers.
pub fn lifecycle() -> rmcp::service::ClientLifecycleMode {
    rmcp::service::ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// A question as the server sent it (`elicitation/create` params, or an
/// input request's), or why it cannot be shown.
fn question(params: &Value) -> Result<Question, String> {
    let message = params["message"].as_str().unwrap_or_default().to_string();
    match params["mode"].as_str().unwrap_or("form") {
        "form" => Ok(Question {
            message,
            ask: Ask::Form {
                schema: params
                    .get("requestedSchema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            },
        }),
        "url" => match params["url"].as_str() {
            Some(url) if !url.trim().is_empty() => Ok(Question {
                message,
                ask: Ask::Url {
                    url: url.to_string(),
                    id: params["elicitationId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                },
            }),
            _ => Err("a URL question without a URL".into()),
        },
        other => Err(format!("a question of an unknown mode `{other}`")),
    }
}

/// Whether a retry's failure is the server refusing the `requestState` it
/// was given ("invalid params", as the Python SDK answers a state it
/// cannot open or that expired).
fn stale_state(err: &rmcp::ServiceError) -> bool {
    matches!(err, rmcp::ServiceError::McpError(e) if e.code == rmcp::model::ErrorCode::INVALID_PARAMS)
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request)
            .map_err(|e| e.to_string())
            .and_then(|p| question(&p));
        let known = match (&asked, self.slot.lock()) {
            (Ok(q), Ok(slot)) => slot.replies.reply_to(q).cloned(),
            _ => None,
        };
        if let Some(reply) = known {
            return serde_json::from_value(reply.wire())
                .map_err(|e| ErrorData::internal_error(e.to_string(), None));
        }
        if let Ok(mut slot) = self.slot.lock() {
            slot.asked = Some(asked);
        }
        self.asked.notify_one();
        // The call is abandoned: it will be made again once a person
        // answered; this request is never answered.
        std::future::pending().await
    }
}

impl Connection {
    /// Calls `remote` with `args` (a JSON object), each round within
    /// `timeout`, `prior` holding the questions and replies of earlier
    /// attempts. Never fails: errors are error results naming the server.
    pub async fn call_asking(
        &self,
        remote: &str,
        args: &Value,
        timeout: Duration,
        max_bytes: usize,
        prior: Option<Elicitation>,
    ) -> Called {
        let server = &self.server;
        let fail = |why: String| Called::Done(ToolResult::error(why));
        let arguments = match args {
            Value::Object(m) => Some(m.clone()),
            Value::Null => None,
            other => {
                return fail(format!(
                    "invalid arguments: expected a JSON object, got {}",
                    short_n(&other.to_string(), 80)
                ))
            }
        };
        let mut e = prior.unwrap_or_default();
        let mut params = CallToolRequestParams::new(remote.to_string());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        if let Ok(mut slot) = self.questions.slot.lock() {
            slot.replies = e.clone();
            slot.asked = None;
        }
        let limit = effective_timeout(timeout);
        let mut state_only = 0;
        // Made again after a pause: the replies, with the server's state.
        let mut afresh = e.request_state.is_none();
        if !afresh {
            params.input_responses = Some(e.take_responses());
            params.request_state = e.request_state.clone();
        }
        loop {
            let round = tokio::time::timeout(limit, self.client.call_tool_once(params.clone()));
            tokio::pin!(round);
            let answered = loop {
                tokio::select! {
                    r = &mut round => break r,
                    () = self.questions.asked.notified() => {
                        let asked = self.questions.slot.lock().ok().and_then(|mut s| s.asked.take());
                        return match asked {
                            // A wake-up left over from an earlier call.
                            None => continue,
                            Some(Ok(q)) if e.rounds.len() < MAX_ROUNDS => {
                                e.rounds.push(Round { key: None, question: q, gate: None, reply: None, sent: false });
                                Called::Asks(e)
                            }
                            Some(Ok(_)) => fail(format!("MCP server `{server}` asked more than {MAX_ROUNDS} questions in one call; strands stopped answering")),
                            Some(Err(why)) => fail(format!("MCP server `{server}` asked {why}; the call was abandoned")),
                        };
                    }
                }
            };
            // The state is not this server's any more (a new process, its
            // keys gone; expired): "invalid params". The call starts over,
            // and its questions get their recorded replies. Any other
            // failure is the call's.
            if let (Ok(Err(err)), false) = (&answered, afresh) {
                if stale_state(err) {
                    tracing::debug!(server = %server, error = %crate::error::chain(err), "MCP server refused the saved request state; calling afresh");
                    afresh = true;
                    e.request_state = None;
                    params.input_responses = None;
                    params.request_state = None;
                    continue;
                }
            }
            let response = match answered {
                Ok(Ok(r)) => r,
                Ok(Err(err)) => {
                    return fail(format!(
                        "MCP server `{server}` failed the call: {}{}",
                        crate::error::chain(&err),
                        stderr_note(self.stderr.as_ref())
                    ))
                }
                Err(_) => return fail(format!(
                    "MCP server `{server}` did not answer within {} (the call may or may not have taken effect)",
                    human_duration(limit)
                )),
            };
            let asked = match response {
                CallToolResponse::Complete(result) => {
                    return match serde_json::to_value(&result) {
                        Ok(v) => Called::Done(result_text(&v, max_bytes)),
                        Err(err) => fail(format!(
                            "MCP server `{server}` returned a result that cannot be read: {err}"
                        )),
                    }
                }
                CallToolResponse::InputRequired(asked) => asked,
                _ => {
                    return fail(format!(
                        "MCP server `{server}` answered with a task, which strands does not follow"
                    ))
                }
            };
            e.request_state = asked.request_state;
            afresh = true;
            let mut new = 0;
            for (key, request) in asked.input_requests.unwrap_or_default() {
                let InputRequest::Elicitation(request) = request else {
                    return fail(format!(
                        "MCP server `{server}` asked for sampling or roots (`{key}`), which strands does not offer"
                    ));
                };
                let q = serde_json::to_value(&request.params)
                    .map_err(|err| err.to_string())
                    .and_then(|p| question(&p));
                let question = match q {
                    Ok(q) => q,
                    Err(why) => {
                        return fail(format!(
                            "MCP server `{server}` asked {why}; the call was abandoned"
                        ))
                    }
                };
                // Asked again (the call started over): its recorded reply
                // goes back under the server's key for it now.
                if let Some(i) = e.answered(&question) {
                    e.rounds[i].key = Some(key);
                    e.rounds[i].sent = false;
                    continue;
                }
                e.rounds.push(Round {
                    key: Some(key),
                    question,
                    gate: None,
                    reply: None,
                    sent: false,
                });
                new += 1;
            }
            if e.rounds.len() > MAX_ROUNDS {
                return fail(format!("MCP server `{server}` asked more than {MAX_ROUNDS} questions in one call; strands stopped answering"));
            }
            if new > 0 {
                return Called::Asks(e);
            }
            let responses = e.take_responses();
            let only_state = responses.is_empty();
            params.input_responses = Some(responses);
            params.request_state = e.request_state.clone();
            if !only_state {
                continue;
            }
            // State only (the server is busy): try again, a few times.
            state_only += 1;
            if state_only > MAX_ROUNDS {
                return fail(format!(
                    "MCP server `{server}` kept asking to be called again without a question; strands stopped after {MAX_ROUNDS} tries"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_read_from_the_wire() {
        let form = question(&json!({
            "mode": "form", "message": "Why?",
            "requestedSchema": {"type": "object", "properties": {"r": {"type": "string"}}}
        }))
        .expect("a form question");
        assert_eq!(form.message, "Why?");
        assert!(matches!(form.ask, Ask::Form { .. }));
        // No mode: a form (the shape before modes existed), no schema: none.
        let bare = question(&json!({"message": "Ok?"})).expect("a form question");
        assert_eq!(bare.form(), Ok(None));
        let url = question(&json!({
            "mode": "url", "message": "Go", "url": "https://x.example/", "elicitationId": "e1"
        }))
        .expect("a URL question");
        assert_eq!(
            url.ask,
            Ask::Url {
                url: "https://x.example/".into(),
                id: "e1".into()
            }
        );
        assert!(question(&json!({"mode": "url", "message": "Go"})).is_err());
        assert!(question(&json!({"mode": "telepathy", "message": "?"})).is_err());
    }

    #[test]
    fn only_invalid_params_means_a_stale_state() {
        let invalid = rmcp::ServiceError::McpError(ErrorData::invalid_params(
            "Invalid or expired requestState",
            None,
        ));
        assert!(stale_state(&invalid));
        let other = rmcp::ServiceError::McpError(ErrorData::internal_error("boom", None));
        assert!(!stale_state(&other));
        assert!(!stale_state(&rmcp::ServiceError::TransportClosed));
    }
}
