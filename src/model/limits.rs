//! The limits on what a human may send with an answer, whatever the
//! channel. A leaf of its own: answers ([`super::gate`]) are checked
//! against them, and a form's text fields ([`super::form`]) take their
//! default length from them, so neither needs the other for it.

/// The longest reason, feedback or response a human may give, in
/// characters (Slack's own limit for a text input): the text reaches the
/// model and the audit trail, whatever the channel.
pub const MAX_ANSWER_TEXT: usize = 3000;

/// The longest edited tool-call arguments, in bytes of JSON.
pub const MAX_EDITED_ARGS: usize = 65_536;
