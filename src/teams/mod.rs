//! The Microsoft Teams room, a door off the hub beside Slack, the web
//! inbox and the API: what it takes to trust an activity the Bot
//! Framework posts to us, to post one back, and the way in.
//!
//! - [`settings`]: the `TEAMS_*` settings, read once.
//! - [`auth`]: the inbound check of an activity's `Authorization: Bearer`
//!   JWT (keys from the Bot Framework's OpenID metadata, cached).
//! - [`connector`]: the outbound side: a client-credentials token, cached
//!   and shared, and the Connector REST calls (send, reply, update, create
//!   a 1:1 conversation), retried on rate limits, to allowed hosts only.
//! - [`pace`]: the calls to one conversation spaced within Teams' limits
//!   (7 a second, 8 in 2 s, 60 in 30 s, 1,800 an hour).
//! - [`package`]: the app package (manifest and icons) to upload to Teams.
//! - [`door`]: `POST /api/messages`: activities verified, refusals
//!   audited, each conversation's reference kept in the store.
//! - [`commands`]: `run`, `list`, `status`, `cancel`, `help` from a
//!   message, through the hub.
//! - [`card`]: the approval card (Adaptive Card 1.5), asking and decided,
//!   and the tool-call card ([`card::tools`]).
//! - [`room`]: the room's state ([`room::TeamsRoom`]) and where its cards
//!   are, which the parts below take.
//! - [`hall`]: the room off the hall: one card per open gate, in the
//!   conversation a run was started from or `TEAMS_APPROVALS_CONVERSATION`,
//!   recorded so a restart never posts twice; the decision shown on every
//!   card.
//! - [`dms`]: 1:1 cards (`notify: dm`, escalations to a person).
//! - [`timers`]: reminders in a card's thread, escalated copies, timeouts
//!   shown on the cards.
//! - [`names`]: who decided, by the name Teams gave (display only).
//! - [`actions`]: a card's action (invoke or submit) as an answer, through
//!   the hub.
//! - [`inbox`]: `inbox` in a 1:1 chat: what waits for the person across
//!   runs, approved or rejected several at once through the hub's batch.

pub mod actions;
pub mod auth;
pub mod card;
pub mod commands;
pub mod connector;
pub mod dms;
pub mod door;
pub mod hall;
pub mod inbox;
pub mod names;
pub mod pace;
pub mod package;
pub mod room;
pub mod settings;
pub mod timers;

use std::time::Duration;

pub use settings::TeamsSettings;

/// Where the protocol layer reads the time: the service's clock, a fixed
/// (or hand-advanced) one in tests (a closure is a clock).
pub type Clock = crate::clock::SharedClock;

/// How long one request to Microsoft (metadata, keys, token, connector)
/// may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// The HTTP client the Teams calls share: rustls on ring, a timeout, and
/// no redirects (a redirect could lead off the allowed service hosts).
pub(crate) fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    crate::http::builder()
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("strands/", env!("CARGO_PKG_VERSION")))
        .build()
}
