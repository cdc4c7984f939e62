//! Driving a session under its lease, on a store several processes share.
//!
//! On PostgreSQL any process may drive a running session: a `strands serve`
//! replica resuming it after a click, another replica taking over a run
//! whose replica died (`Hub::start_takeover`, which drives running
//! sessions nobody holds a live lease on), a `strands run` or `resume` in
//! a terminal. So whoever drives holds the session's lease, renews it every
//! third of its length while it works, and hands it back when it stops; a
//! run is never driven by two processes at once, and no step runs twice.
//! On sled (one process per store) the lease is always granted.

use std::future::Future;
use std::time::Duration;

use super::Store;
use crate::error::Result;

/// A name for this process among those driving sessions on a shared store:
/// `role-host-pid-random`.
pub fn owner(role: &str) -> String {
    format!(
        "{role}-{}-{}-{}",
        whoami::fallible::hostname().unwrap_or_else(|_| "host".into()),
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// Runs `work` holding the lease on session `id` for `owner`, renewed
/// every third of `ttl` until `work` ends, then handed back. `None` (and
/// `work` never runs) when another process holds it.
pub async fn driving<F: Future>(
    store: &Store,
    id: &str,
    owner: &str,
    ttl: Duration,
    work: F,
) -> Result<Option<F::Output>> {
    if !store.take_lease(id, owner, ttl).await? {
        return Ok(None);
    }
    let renew = async {
        if store.is_shared() {
            loop {
                tokio::time::sleep(ttl / 3).await;
                match store.take_lease(id, owner, ttl).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(session = %id, "lost the lease on the session to another process");
                        break;
                    }
                    Err(e) => tracing::warn!(session = %id, "cannot renew the lease: {e}"),
                }
            }
        }
        std::future::pending::<std::convert::Infallible>().await
    };
    let out = tokio::select! {
        out = work => out,
        never = renew => match never {},
    };
    if let Err(e) = store.release_lease(id, owner).await {
        tracing::warn!(session = %id, "cannot hand the lease back: {e}");
    }
    Ok(Some(out))
}
