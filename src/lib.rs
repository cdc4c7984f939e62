//! strands: run strands-cli v0 agent workflows that stop at human gates.
//!
//! The data path reads as the module list: [`spec`] (load and validate a
//! workflow) → [`engine`] (run it step by step) → [`gate`] (what a human may
//! answer) → [`store`] (durable sessions in sled) → [`channel`] (ask a human:
//! terminal, CLI, Slack — see [`slack`]) → back to [`engine`] to resume.
//! [`teams`] holds the Microsoft Teams protocol the Teams room will build on.
//! What happened leaves the process as signed webhooks ([`webhook`]).
//! Everything reads "now" from the one [`clock`] the process is given.

pub mod amqp;
pub mod api;
pub mod audit;
pub mod channel;
pub mod cli;
pub mod clock;
pub mod config;
pub mod email;
pub mod engine;
pub mod error;
pub mod gate;
pub mod http;
pub mod hub;
pub mod mcp;
pub mod model;
pub mod provider;
pub mod retry;
pub mod serve;
pub mod slack;
pub mod spec;
pub mod store;
pub mod teams;
pub mod template;
pub mod tools;
pub mod traces;
pub mod web;
pub mod webhook;

pub use error::{Error, Result};
