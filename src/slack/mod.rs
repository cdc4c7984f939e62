//! Slack, a room of `strands serve` (mounted when `SLACK_BOT_TOKEN` is set,
//! with `SLACK_APP_TOKEN` for Socket Mode and/or `SLACK_SIGNING_SECRET` for
//! request URLs).
//!
//! Slack is one room off the service's hall ([`room::SlackRoom`]): when a
//! gate trips, the bot posts a Block Kit approval message and the session
//! waits in the store — no task waits with it. A signed button click (or
//! modal submission) goes through the service's intake, which records the
//! decision exactly once and drives the run in the background
//! ([`interactions`] is where a click becomes a resume).
//!
//! Modules: [`config`] (environment), [`server`] (routes, signature check),
//! [`socket`] (Socket Mode), [`dispatch`] (the one path both of them take),
//! [`commands`] (`/strands ...`), [`interactions`] (clicks, modals),
//! [`forms`] (the reason and "View full output" modals), [`app`] (state,
//! messages), [`dms`] (approvers asked by direct message), [`room`] (the
//! hall's side), [`timers`] (reminders, escalations, timeouts in Slack),
//! [`api`] (Web API with retries), [`blocks`] (Block Kit templates and
//! limits).

pub mod api;
pub mod app;
pub mod blocks;
pub mod commands;
pub mod config;
pub mod dispatch;
pub mod dms;
pub mod forms;
pub mod home;
pub mod interactions;
pub mod names;
pub mod room;
pub mod server;
pub mod signature;
pub mod socket;
pub mod timers;
