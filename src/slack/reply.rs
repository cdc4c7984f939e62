//! What Slack is answered, whichever way a request came (a request URL or
//! Socket Mode) and whichever part handled it (a command, a click, a modal,
//! the home tab). A leaf: the parts that answer and the transports that
//! turn the answer into an HTTP response or an envelope's acknowledgement
//! ([`super::dispatch`]) share it without using each other.

use serde_json::Value;

/// What Slack is answered, transport-neutral.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Understood; nothing to say (HTTP 200 with no body, a bare ack).
    Ack,
    /// Understood, with an answer for Slack: a slash command's ephemeral
    /// message, a modal's `response_action`, a `url_verification` echo.
    Body(Value),
    /// An event seen before (a retry): acknowledged, not carried out again.
    Duplicate,
    /// Not something Slack sends (HTTP 400). Over a socket it is
    /// acknowledged all the same: a redelivery would read no better.
    Unreadable(String),
    /// Could not be taken now (HTTP 500, so Slack tries again). Over a
    /// socket it is left unacknowledged, for the same reason.
    Failed,
}
