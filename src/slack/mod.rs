//! Slack, a room of `strands serve` (mounted when `SLACK_BOT_TOKEN` is set,
//! with `SLACK_APP_TOKEN` for Socket Mode and/or `SLACK_SIGNING_SECRET` for
//! request URLs).
//!
//! Slack is one room off the service's hall ([`room::SlackRoom`]): when a
//! gate trips, the bot posts a Block Kit approval message and the session
//! waits in the store — no task waits with it. A signed button click (or
//! modal submission) goes through the service's intake, which records the
//! decision exactly once and drives the run in the background
//! ([`interactions`] reads the click, [`decide`] is where it becomes a
//! resume).
//!
//! Modules, from the bottom up (each uses only those before it):
//! - [`config`] (environment), [`signature`] (request signatures), [`api`]
//!   (Web API with retries), [`blocks`] (Block Kit templates and limits);
//! - [`app`]: the state every part takes; [`reply`] (what Slack is
//!   answered) and [`words`] (mentions, refusal texts, button values) that
//!   several parts share; [`access`] (who may answer, asked ahead);
//!   [`asked`] (which messages asked for a gate);
//! - posting: [`dms`] (approvers asked by direct message), [`timers`]
//!   (reminders, escalations, timeouts), [`progress`] (the run's thread),
//!   [`post`] (approval messages), [`update`] (messages showing an answer);
//! - deciding: [`decide`] (a click or a modal becomes an answer);
//! - receiving: [`forms`] (the reason, full output and form modals),
//!   [`home`] (App Home), [`interactions`] (clicks, modals), [`commands`]
//!   (`/strands ...`), [`dispatch`] (the one path both transports take),
//!   [`server`] (routes, signature check), [`socket`] (Socket Mode);
//! - [`room`]: the hall's side.

pub mod access;
pub mod api;
pub mod app;
pub mod asked;
pub mod blocks;
pub mod commands;
pub mod config;
pub mod decide;
pub mod dispatch;
pub mod dms;
pub mod forms;
pub mod home;
pub mod interactions;
pub mod post;
pub mod progress;
pub mod reply;
pub mod room;
pub mod server;
pub mod signature;
pub mod socket;
pub mod timers;
pub mod update;
pub mod words;
