//! The PostgreSQL tables, and the embedded, versioned migrations that make
//! them: the only place that knows the layout.
//!
//! Each migration is one SQL text applied in one transaction, in order,
//! recorded in `strands_schema` (version, when). Start-up takes an
//! advisory lock first, so two replicas starting together apply each
//! migration once. A database whose newest version is above
//! [`VERSION`] was written by a newer strands: it is refused, never
//! misread. (A hand-written runner of thirty lines instead of a migration
//! crate: the crates that do this pull in file walkers and config parsers
//! for what is here a constant array.)
//!
//! Documents (sessions, summaries, timers, audit entries, events,
//! deliveries, tokens, sign-ins, Teams conversations) are stored as the same JSON bytes as in
//! sled (`bytea`), so a store moves between backends byte for byte; the
//! columns beside them are what queries filter and order on.

use crate::error::{Error, Result};

/// The schema this build writes.
pub const VERSION: i32 = 11;

/// Migrations, by version (index + 1).
const MIGRATIONS: &[&str] = &[
    // 1: the first layout.
    r#"
CREATE TABLE meta (key text PRIMARY KEY, value bytea NOT NULL);
-- session id → Session (JSON); summary → Summary (JSON).
CREATE TABLE sessions (
    id text PRIMARY KEY,
    rev bigint NOT NULL,
    status text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    body bytea NOT NULL,
    summary bytea NOT NULL
);
CREATE INDEX sessions_by_status ON sessions (status);
-- Which replica drives a running session, until when.
CREATE TABLE leases (
    session text PRIMARY KEY,
    owner text NOT NULL,
    until timestamptz NOT NULL
);
-- The approval message index: channel + ts → session and gate.
CREATE TABLE messages (
    channel text NOT NULL,
    ts text NOT NULL,
    session text NOT NULL,
    gate text NOT NULL,
    PRIMARY KEY (channel, ts)
);
-- The latest message that asked for each gate.
CREATE TABLE notifications (
    session text NOT NULL,
    gate text NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (session, gate)
);
-- Chat event ids already handled.
CREATE TABLE chat_events (event_id text PRIMARY KEY, seen_at timestamptz NOT NULL);
-- The heads of the audit chain and of the event sequence: appends lock
-- their row, so the chain never forks and the sequence has no gap.
CREATE TABLE heads (name text PRIMARY KEY, seq bigint NOT NULL, hash text NOT NULL);
INSERT INTO heads VALUES ('audit', 0, '0000000000000000000000000000000000000000000000000000000000000000');
INSERT INTO heads VALUES ('events', 0, '');
CREATE TABLE audit (seq bigint PRIMARY KEY, body bytea NOT NULL);
CREATE TABLE events (seq bigint PRIMARY KEY, session text NOT NULL, body bytea NOT NULL);
CREATE INDEX events_by_session ON events (session, seq);
-- Gate timers, earliest due first; claimed_until: a replica is firing it.
CREATE TABLE timers (
    due_ms bigint NOT NULL,
    session text NOT NULL,
    gate text NOT NULL,
    kind smallint NOT NULL,
    n integer NOT NULL,
    body bytea NOT NULL,
    claimed_until timestamptz,
    PRIMARY KEY (due_ms, session, gate, kind, n)
);
-- One mark per gate asking: its timers were armed.
CREATE TABLE timer_marks (session text NOT NULL, gate text NOT NULL, PRIMARY KEY (session, gate));
CREATE TABLE escalations (session text NOT NULL, gate text NOT NULL, body bytea NOT NULL, PRIMARY KEY (session, gate));
CREATE TABLE queued_answers (session text NOT NULL, gate text NOT NULL, body bytea NOT NULL, PRIMARY KEY (session, gate));
-- API tokens (hash only); a name is in use once among tokens not revoked.
CREATE TABLE tokens (
    id text PRIMARY KEY,
    name text NOT NULL,
    revoked boolean NOT NULL,
    body bytea NOT NULL
);
CREATE UNIQUE INDEX tokens_live_name ON tokens (name) WHERE NOT revoked;
CREATE TABLE webhook_cursors (endpoint text PRIMARY KEY, seq bigint NOT NULL);
CREATE TABLE webhook_pending (
    endpoint text NOT NULL,
    seq bigint NOT NULL,
    next_ms bigint NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (endpoint, seq)
);
CREATE INDEX webhook_pending_due ON webhook_pending (next_ms);
CREATE TABLE webhook_failed (
    failed_ms bigint NOT NULL,
    endpoint text NOT NULL,
    seq bigint NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (failed_ms, endpoint, seq)
);
CREATE TABLE web_logins (id text PRIMARY KEY, body bytea NOT NULL);
"#,
    // 2: sessions newest first, all and by status (`list_page` reads a page
    // of the index, never the table).
    r#"
CREATE INDEX sessions_newest ON sessions (created_at DESC, id);
CREATE INDEX sessions_status_newest ON sessions (status, created_at DESC, id);
"#,
    // 3: sessions newest first by workflow (and status); open gates by
    // approver (`awaiting`: written with the session; existing paused
    // sessions are indexed once after this step, at connect).
    r#"
ALTER TABLE sessions ADD COLUMN workflow text NOT NULL DEFAULT '';
UPDATE sessions SET workflow = coalesce(convert_from(summary, 'UTF8')::jsonb->>'workflow', '');
CREATE INDEX sessions_workflow_newest ON sessions (workflow, created_at DESC, id);
CREATE INDEX sessions_workflow_status_newest ON sessions (workflow, status, created_at DESC, id);
-- One row per approver key of each open gate of a paused session
-- ('*': the gate lists nobody); bytewise order, so group ids (`S…`) are a range.
CREATE TABLE gate_approvers (
    session text NOT NULL,
    gate text NOT NULL,
    approver text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (session, gate, approver)
);
CREATE INDEX gate_approvers_by_approver ON gate_approvers (approver, created_at DESC, session);
"#,
    // 4: large texts of sessions apart from their rows (`store::outputs`);
    // sessions per status kept as counters, changed in the transaction that
    // changes a status (`counts`); the paused sessions with a gate never
    // posted (`counts::track_in`). Writers wait while the counters and the
    // index are built, so both start exact.
    r#"
LOCK TABLE sessions, notifications IN SHARE ROW EXCLUSIVE MODE;
-- session + SHA-256 (hex) of a text → the text; dropped with the session.
CREATE TABLE session_outputs (
    session text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    hash text NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (session, hash)
);
-- status → how many sessions have it.
CREATE TABLE session_counts (status text PRIMARY KEY, n bigint NOT NULL);
INSERT INTO session_counts (status, n)
    SELECT st, (SELECT count(*) FROM sessions WHERE status = st)
    FROM unnest(ARRAY['running', 'paused', 'completed', 'failed', 'rejected']) AS st;
-- Whether the latest message for the gate was posted (has a ts).
ALTER TABLE notifications ADD COLUMN posted boolean NOT NULL DEFAULT false;
UPDATE notifications SET posted = (convert_from(body, 'UTF8')::json ->> 'ts') IS NOT NULL;
-- (paused session, open gate handle) never posted to a room.
CREATE TABLE unposted (session text NOT NULL, gate text NOT NULL, PRIMARY KEY (session, gate));
INSERT INTO unposted (session, gate)
    SELECT s.id, g.handle
    FROM sessions s,
         json_object_keys(coalesce(convert_from(s.body, 'UTF8')::json -> 'gates', '{}'::json)) AS g(handle)
    WHERE s.status = 'paused'
      AND NOT EXISTS (SELECT 1 FROM notifications n
                      WHERE n.session = s.id AND n.gate = g.handle AND n.posted);
"#,
    // 5: where the Teams room can post (`teams`): conversation id →
    // TeamsConversation (JSON); first_seen is the column's (kept on
    // upsert), not the body's.
    r#"
CREATE TABLE teams_conversations (
    id text PRIMARY KEY,
    first_seen timestamptz NOT NULL,
    body bytea NOT NULL
);
"#,
    // 6: the people directory (`people`): name → Person (JSON). Changed
    // whole, under a lock on the table, with its audit entry.
    r#"
CREATE TABLE people (
    name text PRIMARY KEY,
    body bytea NOT NULL
);
"#,
    // 7: the mail outbox (`email`): every mail ever queued, by id; state
    // `pending` (due at next_ms), `sent` or `failed` (at failed_ms).
    r#"
CREATE TABLE mail_outbox (
    id text PRIMARY KEY,
    state text NOT NULL,
    next_ms bigint NOT NULL,
    failed_ms bigint,
    body bytea NOT NULL
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_ms) WHERE state = 'pending';
CREATE INDEX mail_outbox_failed ON mail_outbox (failed_ms DESC) WHERE state = 'failed';
"#,
    // 8: what every write appends last, in one call on the server
    // (`chain::finish`): the audit entries chained after the audit head
    // (hash = sha256(seq as 8 bytes big-endian ‖ prev ‖ event JSON), as
    // `audit::entry_hash`), the events numbered after the event head and
    // announced, and the status counters moved (in status order). Each
    // body is built byte for byte as serde_json writes it in Rust: the
    // audit entry `{"seq":…,"prev":"…","hash":"…","event":…}`, the event
    // `{"seq":…,` followed by the rest of the body Rust sent with seq 0.
    // The heads and counters are locked here and released by the commit
    // sent right behind this call, so no round trip to a client falls
    // while they are held.
    r#"
CREATE OR REPLACE FUNCTION strands_append(
    p_audit bytea[], p_session text, p_events bytea[], p_channel text,
    p_old text, p_new text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    a_seq bigint;
    a_hash text;
    h text;
    ev bytea;
    e_last bigint;
    k int := coalesce(cardinality(p_events), 0);
    mv record;
BEGIN
    IF coalesce(cardinality(p_audit), 0) > 0 THEN
        SELECT seq, hash INTO a_seq, a_hash FROM heads WHERE name = 'audit' FOR UPDATE;
        FOREACH ev IN ARRAY p_audit LOOP
            a_seq := a_seq + 1;
            h := encode(sha256(int8send(a_seq) || convert_to(a_hash, 'UTF8') || ev), 'hex');
            INSERT INTO audit (seq, body) VALUES (a_seq,
                convert_to('{"seq":' || a_seq || ',"prev":"' || a_hash || '","hash":"' || h
                           || '","event":', 'UTF8') || ev || convert_to('}', 'UTF8'));
            a_hash := h;
        END LOOP;
        UPDATE heads SET seq = a_seq, hash = a_hash WHERE name = 'audit';
    END IF;
    IF k > 0 THEN
        UPDATE heads SET seq = seq + k WHERE name = 'events' RETURNING seq INTO e_last;
        INSERT INTO events (seq, session, body)
            SELECT e_last - k + t.i, p_session,
                   convert_to('{"seq":' || (e_last - k + t.i) || ',', 'UTF8') || substring(t.b FROM 10)
            FROM unnest(p_events) WITH ORDINALITY AS t(b, i);
        PERFORM pg_notify(p_channel, e_last::text);
    END IF;
    IF p_old IS DISTINCT FROM p_new THEN
        FOR mv IN
            SELECT st, d FROM (VALUES (p_old, -1), (p_new, 1)) AS m(st, d)
            WHERE st IS NOT NULL ORDER BY st COLLATE "C"
        LOOP
            INSERT INTO session_counts (status, n) VALUES (mv.st, mv.d)
                ON CONFLICT (status) DO UPDATE SET n = session_counts.n + EXCLUDED.n;
        END LOOP;
    END IF;
    RETURN e_last;
END
$fn$;
"#,
    // 9: running sessions oldest first (`unleased_running`: the backlog a
    // replica drives as it has room reads a page of it, never the table).
    r#"
CREATE INDEX IF NOT EXISTS sessions_running_oldest ON sessions (created_at, id) WHERE status = 'running';
"#,
    // 10: approvers' grants (trust within limits, `model::grant`): id →
    // Grant (JSON), revoked and expired ones kept.
    r#"
CREATE TABLE grants (
    id text PRIMARY KEY,
    body bytea NOT NULL
);
"#,
    // 11: the audit's decisions, projected for reports (`audit::decided`,
    // `decided.rs`): built from the chain by whoever reads them, up to the
    // entry `heads`' `decided` row names.
    r#"
CREATE TABLE decided (seq bigint PRIMARY KEY, at timestamptz NOT NULL, body bytea NOT NULL);
CREATE INDEX decided_by_time ON decided (at);
INSERT INTO heads VALUES ('decided', 0, '');
"#,
];

/// An arbitrary constant: the advisory lock migrations run under.
const MIGRATION_LOCK: i64 = 0x5354_5241_4e44_5331; // "STRANDS1"

/// Brings the database to [`VERSION`]; refuses a newer schema.
pub async fn migrate(client: &mut tokio_postgres::Client, location: &str) -> Result<()> {
    let fail = |what: &str, e: tokio_postgres::Error| {
        Error::Store(format!("{what} in {location}: {}", super::db_message(&e)))
    };
    let tx = client
        .transaction()
        .await
        .map_err(|e| fail("cannot start the schema check", e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| fail("cannot lock the schema", e))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS strands_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await
    .map_err(|e| fail("cannot create the schema table", e))?;
    let row = tx
        .query_one("SELECT coalesce(max(version), 0) FROM strands_schema", &[])
        .await
        .map_err(|e| fail("cannot read the schema version", e))?;
    let current: i32 = row.get(0);
    if current > VERSION {
        return Err(Error::Store(format!(
            "the PostgreSQL store at {location} has schema version {current}, written by a newer strands (this one knows {VERSION}); upgrade strands"
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = i as i32 + 1;
        tx.batch_execute(sql)
            .await
            .map_err(|e| fail(&format!("migration {version} failed"), e))?;
        tx.execute(
            "INSERT INTO strands_schema (version) VALUES ($1)",
            &[&version],
        )
        .await
        .map_err(|e| fail("cannot record the migration", e))?;
        tracing::info!(version, "PostgreSQL store migrated");
    }
    tx.commit()
        .await
        .map_err(|e| fail("cannot commit the migrations", e))?;
    Ok(())
}
