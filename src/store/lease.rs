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
//!
//! A process killed while driving (`kill -9`, a crash) leaves its lease to
//! lapse. When the holder ran on this machine and is gone — its pid is not
//! a live process — the lease is taken at once instead: a `strands resume`
//! right after a killed `strands run` goes on without waiting out the
//! lease. A holder elsewhere, or one that may be alive, is waited out.

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

/// Whether lease holder `holder` (an [`owner`] name) ran on this machine
/// and its process is gone (no such pid, or a zombie). `false` whenever
/// that cannot be told.
fn gone_from_here(holder: &str) -> bool {
    let mut parts = holder.rsplitn(3, '-');
    let (Some(_rand), Some(pid), Some(role_host)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some((_, host)) = role_host.split_once('-') else {
        return false;
    };
    let here = whoami::fallible::hostname().unwrap_or_else(|_| "host".into());
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if host != here || pid == std::process::id() || !cfg!(target_os = "linux") {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        // `pid (comm) S …`: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| matches!(state, 'Z' | 'X')),
    }
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
        let taken = match store.lease_holder(id).await? {
            // Lapsed or handed back since.
            None => store.take_lease(id, owner, ttl).await?,
            Some(holder) if gone_from_here(&holder) => {
                tracing::info!(session = %id, "the process that held the lease ({holder}) is gone; taking it");
                // Only that holder's row: a process that took it since keeps it.
                store.release_lease(id, &holder).await?;
                store.take_lease(id, owner, ttl).await?
            }
            Some(_) => false,
        };
        if !taken {
            return Ok(None);
        }
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

#[cfg(test)]
mod tests {
    use super::{gone_from_here, owner};

    #[test]
    fn a_holder_is_gone_only_when_it_ran_here_and_its_process_is_not_alive() {
        // This process: alive.
        assert!(!gone_from_here(&owner("cli")));
        let here = whoami::fallible::hostname().unwrap_or_else(|_| "host".into());
        // A child that exited and was reaped: gone.
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        child.wait().expect("wait");
        if cfg!(target_os = "linux") {
            assert!(gone_from_here(&format!("cli-{here}-{pid}-abcdef12")));
        }
        // Another machine, or a name that is not an owner's: never.
        assert!(!gone_from_here(&format!("cli-elsewhere-{pid}-abcdef12")));
        assert!(!gone_from_here("nonsense"));
        assert!(!gone_from_here(&format!("cli-{here}-notapid-abcdef12")));
    }
}
