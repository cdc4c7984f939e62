//! `strands serve`: the Slack approval bot.
//!
//! Slack is one more [`crate::channel::HumanChannel`]: when a gate trips,
//! the bot posts a Block Kit approval message and the session waits in the
//! store; a signed button click (or modal submission) records the decision
//! exactly once and a background task resumes the run.

pub mod api;
pub mod blocks;
pub mod config;
pub mod metrics;
