//! A webhook delivery: one event owed to one endpoint, as the store keeps
//! it until the endpoint has it (or until strands gives up).
//!
//! Deliveries are the store's outbox for webhooks: the store queues one per
//! endpoint for each event webhooks carry ([`super::EventKind::is_webhook`]),
//! the deliverer (`crate::webhook`) takes the due ones, posts them and
//! settles each with a [`Settle`]. Keeping them in the store is what makes a
//! webhook survive a crash or a restart: a delivery is deleted only once an
//! endpoint answered 2xx.
//!
//! This module is data only: what a delivery is and what may happen to it.
//! The HTTP, the signing and the retry policy live in `crate::webhook`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::event::Event;

/// One event owed to one endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    /// The endpoint's URL, exactly as configured (it may carry credentials:
    /// show [`Delivery::endpoint_shown`] instead).
    pub endpoint: String,
    /// The Standard Webhooks message id (`webhook-id`): see [`message_id`].
    /// The same on every attempt, so a receiver can drop duplicates.
    pub msg_id: String,
    /// The event, as it was written.
    pub event: Event,
    /// Attempts started, the one in flight included.
    pub attempts: u32,
    /// When the store queued it.
    pub queued_at: DateTime<Utc>,
    /// When the first attempt started (give-up time counts from here).
    #[serde(default)]
    pub first_attempt_at: Option<DateTime<Utc>>,
    /// When the latest attempt started.
    #[serde(default)]
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// When it is due next: the next retry, or the end of the lease of an
    /// attempt in flight (after which a crashed attempt is tried again).
    pub next_at: DateTime<Utc>,
    /// Why the latest attempt failed (never a secret: a status, a
    /// transport error without its URL).
    #[serde(default)]
    pub last_error: Option<String>,
}

impl Delivery {
    /// A new delivery of `event` to `endpoint`, due at `now`.
    pub fn new(endpoint: &str, store_id: &str, event: Event, now: DateTime<Utc>) -> Delivery {
        Delivery {
            endpoint: endpoint.to_string(),
            msg_id: message_id(store_id, event.seq),
            event,
            attempts: 0,
            queued_at: now,
            first_attempt_at: None,
            last_attempt_at: None,
            next_at: now,
            last_error: None,
        }
    }

    /// This delivery given up on, queued again by an operator (`strands
    /// webhooks retry`): due `now`, with its message id (receivers drop
    /// what they already have) and a fresh count of attempts, so the
    /// give-up time counts from its next attempt. The last error stays
    /// until an attempt replaces it.
    pub fn requeued(&self, now: DateTime<Utc>) -> Delivery {
        Delivery {
            attempts: 0,
            first_attempt_at: None,
            last_attempt_at: None,
            next_at: now,
            ..self.clone()
        }
    }

    /// A delivery given up on as `strands webhooks failed --json` and
    /// `GET /api/v1/webhooks/failed` list it (the endpoint without
    /// credentials).
    pub fn listed(&self) -> serde_json::Value {
        serde_json::json!({
            "endpoint": self.endpoint_shown(),
            "type": self.event.what.name(),
            "session": self.event.session,
            "workflow": self.event.workflow,
            "seq": self.seq(),
            "msg_id": self.msg_id,
            "attempts": self.attempts,
            "last_error": self.last_error,
            "queued_at": self.queued_at,
            "first_attempt_at": self.first_attempt_at,
            "last_attempt_at": self.last_attempt_at,
        })
    }

    /// The event's number in the store's sequence.
    pub fn seq(&self) -> u64 {
        self.event.seq
    }

    /// The endpoint without what may be a credential (user info, query,
    /// fragment): for logs and listings.
    pub fn endpoint_shown(&self) -> String {
        shown_url(&self.endpoint)
    }
}

/// The message id of event `seq` of the store whose id is `store_id`:
/// `msg_<store id>_<seq>`. The store id is random, made once per store, so
/// ids never repeat across stores (two installations posting to one
/// receiver) and are the same on every retry and after restarts.
pub fn message_id(store_id: &str, seq: u64) -> String {
    format!("msg_{store_id}_{seq}")
}

/// `url` without user info, query and fragment (an unparsable URL is
/// shown as `<invalid URL>`: it might be a credential).
pub fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "<invalid URL>".to_string(),
    }
}

/// What became of an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Settle {
    /// The endpoint answered 2xx: the delivery is done and deleted.
    Delivered,
    /// A transient failure: try again at `at`.
    Retry { at: DateTime<Utc>, error: String },
    /// Retrying cannot help, or the give-up time passed: the delivery
    /// moves to the failed ones (`strands webhooks failed`).
    GaveUp { error: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventKind;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            at: crate::clock::test_epoch(),
            session: "s1".into(),
            workflow: "wf".into(),
            trace_id: None,
            what: EventKind::RunFailed {
                message: "boom".into(),
            },
        }
    }

    #[test]
    fn message_ids_name_the_store_and_the_event() {
        let now = crate::clock::test_epoch();
        let a = Delivery::new("http://127.0.0.1:1/hook", "st1", event(7), now);
        let b = Delivery::new("http://127.0.0.1:2/other", "st1", event(7), now);
        assert_eq!(a.msg_id, "msg_st1_7");
        assert_eq!(
            a.msg_id, b.msg_id,
            "one event, one id, whatever the endpoint"
        );
        assert_ne!(a.msg_id, message_id("st2", 7), "another store, another id");
        assert_ne!(a.msg_id, message_id("st1", 8));
        assert_eq!(a.seq(), 7);
        assert_eq!((a.attempts, a.next_at), (0, now));
    }

    #[test]
    fn shown_urls_lose_their_credentials() {
        assert_eq!(
            shown_url("https://user:pw@hooks.example/in?token=SECRET#x"),
            "https://hooks.example/in"
        );
        assert_eq!(shown_url("not a url"), "<invalid URL>");
    }

    #[test]
    fn a_delivery_round_trips_as_json() {
        let d = Delivery::new(
            "http://127.0.0.1:1/",
            "st",
            event(1),
            crate::clock::test_epoch(),
        );
        let bytes = serde_json::to_vec(&d).expect("encode");
        let back: Delivery = serde_json::from_slice(&bytes).expect("decode");
        assert_eq!(back, d);
    }
}
