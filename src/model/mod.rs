//! The durable data of a run, and the rules that change it.
//!
//! A [`Session`] is everything needed to continue a run in another process,
//! days later: its pattern state, its open gates, the answers it took, its
//! conversation with tools. This module is the bottom layer: it imports none
//! of the engine, the spec, the store or the channels, so every one of them
//! can use it. What may change a session here is only what must hold for
//! every store and every channel — recording an answer exactly once
//! ([`Session::accept`]). Everything that does I/O lives above.

pub mod accept;
pub mod calendar;
pub mod conversation;
pub mod elicitation;
pub mod event;
pub mod form;
pub mod gate;
pub mod grant;
pub mod identity;
pub mod limits;
pub mod login;
pub mod mail;
pub mod pattern;
pub mod person;
pub mod record;
pub mod session;
pub mod step_up;
pub mod teams;
pub mod timer;
pub mod token;
pub mod webhook;
pub mod wire;

pub use accept::Refusal;
pub use conversation::*;
pub use event::{Event, EventKind};
pub use gate::*;
pub use identity::{Approver, Place};
pub use limits::{MAX_ANSWER_TEXT, MAX_EDITED_ARGS};
pub use record::{RecordKind, StepRecord};
pub use session::*;
