//! The timers' rows: their keys, how they are written and removed, and
//! the arming mark that arms one gate asking's timers once. Apart from
//! [`super::timers`] (which claims and fires them) because writing a
//! session arms its gate's timers in the same transaction
//! ([`super::sessions`]), while firing a timer records an answer there.

use super::prepared::Prepared;
use deadpool_postgres::Transaction;

use super::{encode, millis};
use crate::error::{Error, Result};
use crate::store::{Timer, TimerKind};

pub(super) fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

fn kind_num(kind: TimerKind) -> i16 {
    match kind {
        TimerKind::Timeout => 1,
        TimerKind::Reminder => 2,
        TimerKind::Escalation => 3,
    }
}

/// The primary key of a timer's row.
pub(super) fn key(t: &Timer) -> (i64, &str, &str, i16, i32) {
    (
        millis(t.due),
        t.session.as_str(),
        t.gate.as_str(),
        kind_num(t.kind),
        t.n as i32,
    )
}

pub(super) async fn insert_in(tx: &Transaction<'_>, timers: &[Timer]) -> Result<()> {
    for t in timers {
        let (due, session, gate, kind, n) = key(t);
        tx.execute_c(
            "INSERT INTO timers (due_ms, session, gate, kind, n, body) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (due_ms, session, gate, kind, n) DO UPDATE SET body = EXCLUDED.body, claimed_until = NULL",
            &[&due, &session, &gate, &kind, &n, &encode("timer", t)?],
        )
        .await
        .map_err(|e| sql("timers", e))?;
    }
    Ok(())
}

pub(super) async fn remove_in(tx: &Transaction<'_>, t: &Timer) -> Result<()> {
    let (due, session, gate, kind, n) = key(t);
    tx.execute_c(
        "DELETE FROM timers WHERE due_ms = $1 AND session = $2 AND gate = $3 AND kind = $4 AND n = $5",
        &[&due, &session, &gate, &kind, &n],
    )
    .await
    .map_err(|e| sql("timers", e))?;
    Ok(())
}

/// Arms one gate asking's timers inside `tx`, once; whether it armed them.
pub(super) async fn arm_in(
    tx: &Transaction<'_>,
    session: &str,
    gate: &str,
    timers: &[Timer],
) -> Result<bool> {
    let n = tx
        .execute_c(
            "INSERT INTO timer_marks (session, gate) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&session, &gate],
        )
        .await
        .map_err(|e| sql("timer marks", e))?;
    if n == 0 {
        return Ok(false);
    }
    insert_in(tx, timers).await?;
    Ok(true)
}
