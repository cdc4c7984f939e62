//! Two lanes into the store, so a person is answered first.
//!
//! A click, an API answer, a Teams invoke or a slash command is a request
//! someone waits on (Slack gives 3 s); the resumes, timers, notifications
//! and deliveries it starts are not. Both write to one store, and a
//! backend bounds how much runs at once (sled: one call per core;
//! PostgreSQL: the pool). In one queue a click's few reads and one
//! durable write waited behind every queued resume's checkpoint
//! (`benches/slack_clicks.rs`: p99 252 ms at 200 clicks/s).
//!
//! So each store call runs in a lane: [`Lane::Ack`] for the work of a
//! request handler (the serve router runs every request in it,
//! [`acknowledging`]), [`Lane::Background`] for everything else — tasks
//! spawned from a handler do not inherit its lane (a task-local), so a
//! resume handed to the background is background work. A backend gives
//! the acknowledgement lane capacity of its own that background work
//! cannot take: such a call waits only for other acknowledgements.

use std::future::Future;

tokio::task_local! {
    static LANE: Lane;
}

/// Which queue a store call waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// A request someone waits on: its answer is acknowledged as soon as
    /// what it recorded is durable.
    Ack,
    /// Work nobody waits on right now (resumes, timers, deliveries).
    Background,
}

impl Lane {
    /// The lane of the task this is called from.
    pub fn current() -> Lane {
        LANE.try_with(|l| *l).unwrap_or(Lane::Background)
    }
}

/// Runs `f` (a request's handling) in the acknowledgement lane.
pub async fn acknowledging<F: Future>(f: F) -> F::Output {
    LANE.scope(Lane::Ack, f).await
}

#[cfg(test)]
mod tests {
    use super::{acknowledging, Lane};

    #[tokio::test]
    async fn a_request_is_in_the_ack_lane_and_what_it_spawns_is_not() {
        assert_eq!(Lane::current(), Lane::Background);
        let (inside, spawned) = acknowledging(async {
            let spawned = tokio::spawn(async { Lane::current() }).await;
            (Lane::current(), spawned)
        })
        .await;
        assert_eq!(inside, Lane::Ack);
        assert_eq!(spawned.ok(), Some(Lane::Background));
        assert_eq!(Lane::current(), Lane::Background);
    }
}
