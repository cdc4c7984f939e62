//! Durable sessions in an embedded sled (0.34) database.
//!
//! One process at a time may open a store (sled locks it); a second gets a
//! clear error naming the path. Every write is a transaction over the
//! session and its summary, guarded by a compare-and-swap on the session's
//! `rev`, and flushed to disk before it returns — so a crash loses at most
//! the step in flight and two writers can never both win. Tree names live in
//! [`trees`], the only place that knows the layout.

use chrono::{DateTime, Utc};
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;
use std::path::{Path, PathBuf};

use super::{Escalation, Fired, MessageTarget, Timer, TimerKind};
use crate::error::{Error, Result};
use crate::model::Answer;
use crate::model::{Refusal, Session, Status, Summary};

/// The sled trees and what their keys are.
pub mod trees {
    use chrono::{DateTime, Utc};

    /// `meta` keys marking an index as built: a store made before an index
    /// builds it once, at open (rebuilding the `session_order` tree drops
    /// the others it holds, which are then built again).
    pub mod built {
        /// The order of every session and of each status, and the counters.
        pub const SESSION_ORDER: &[u8] = b"index/session_order";
        /// The per-workflow orders.
        pub const WORKFLOW_ORDERS: &[u8] = b"index/session_order/workflow";
        /// The approver index (`awaiting`).
        pub const AWAITING: &[u8] = b"index/awaiting";
    }

    /// The key of `id` created at `created` in an order whose keys start
    /// with `prefix`, newest first: `prefix ++ (u64::MAX − created nanos)
    /// ++ id`.
    pub fn newest_first_key(prefix: &[u8], created: DateTime<Utc>, id: &str) -> Vec<u8> {
        let nanos = created.timestamp_nanos_opt().unwrap_or(0).max(0) as u64;
        let mut k = Vec::with_capacity(prefix.len() + 8 + id.len());
        k.extend_from_slice(prefix);
        k.extend_from_slice(&(u64::MAX - nanos).to_be_bytes());
        k.extend_from_slice(id.as_bytes());
        k
    }

    /// session id → `Session` as JSON.
    pub const SESSIONS: &str = "sessions";
    /// session id → `Summary` as JSON (what `sessions list` reads).
    pub const SUMMARIES: &str = "summaries";
    /// `{channel}/{ts}` of an approval message → `MessageTarget` as JSON.
    pub const SLACK_MESSAGES: &str = "slack_messages";
    /// Slack event ids already handled (retries are acknowledged once).
    pub const SLACK_EVENTS: &str = "slack_events";
    /// seq (u64 big-endian) → `model::Event` as JSON: what happened, in order.
    pub const EVENTS: &str = "events";
    /// session id ++ 0 ++ seq → nothing: a session's events in order.
    pub const SESSION_EVENTS: &str = "session_events";
    /// seq (u64 big-endian) → `audit::AuditEntry` as JSON; append-only.
    pub const AUDIT: &str = "audit";
    /// `head` → `audit::Head`: the last entry, so a removed tail shows.
    pub const AUDIT_HEAD: &str = "audit_head";
    /// seq (u64 big-endian) → the decision's time (nanoseconds since the
    /// epoch, i64 big-endian) ++ `audit::decided::Decided` as JSON; and
    /// `~built` → the last audit entry looked at (`decided.rs`).
    pub const DECIDED: &str = "decided";
    /// due (ms since the epoch, u64 big-endian) ++ session id ++ 0 ++ gate
    /// handle ++ 0 ++ kind ++ reminder number (u32 big-endian) → `Timer` as
    /// JSON: the earliest due timer is the first key.
    pub const TIMERS: &str = "timers";
    /// session id ++ 0 ++ gate handle → the handle: that gate asking's timers
    /// were armed (once per asking). Older stores: session id → handle.
    pub const TIMER_GATES: &str = "timer_gates";
    /// session id ++ 0 ++ gate handle → `Escalation` as JSON.
    pub const ESCALATIONS: &str = "escalations";
    /// session id ++ 0 ++ gate handle → `Notification` as JSON: the latest
    /// message that asked for that gate in a chat channel.
    pub const NOTIFICATIONS: &str = "notifications";
    /// `format` → the store's format (u32 big-endian); `store_id` → a
    /// random id made once (in webhook message ids).
    pub const META: &str = "meta";
    /// session id ++ 0 ++ gate handle → `Answer` as JSON: a click on one of
    /// several open gates while the run was busy with another branch,
    /// waiting for the engine to record it (`store::queued`).
    pub const QUEUED_ANSWERS: &str = "queued_answers";
    /// token id → `model::token::TokenRecord` as JSON (hash, never the secret).
    pub const TOKENS: &str = "tokens";
    /// token name → token id, for tokens not revoked (names are unique
    /// among them).
    pub const TOKEN_NAMES: &str = "token_names";
    /// grant id → `model::grant::Grant` as JSON (revoked and expired
    /// ones too: the list is the record).
    pub const GRANTS: &str = "grants";
    /// webhook endpoint URL → the last event seq (u64 big-endian) it was
    /// queued deliveries up to.
    pub const WEBHOOK_CURSORS: &str = "webhook_cursors";
    /// endpoint ++ 0 ++ seq (u64 big-endian) → `model::webhook::Delivery`
    /// as JSON: deliveries not yet settled.
    pub const WEBHOOK_PENDING: &str = "webhook_pending";
    /// next_at (ms since the epoch, u64 big-endian) ++ endpoint ++ 0 ++ seq
    /// → nothing: the pending deliveries, earliest due first.
    pub const WEBHOOK_DUE: &str = "webhook_due";
    /// given up at (ms since the epoch, u64 big-endian) ++ endpoint ++ 0 ++
    /// seq → `model::webhook::Delivery` as JSON: deliveries strands gave
    /// up on (`strands webhooks failed`).
    pub const WEBHOOK_FAILED: &str = "webhook_failed";
    /// mail id → `model::mail::Mail` as JSON while it is pending; an empty
    /// value once sent, `!` once given up (an id is queued once, ever).
    pub const MAIL: &str = "mail";
    /// next_at (ms since the epoch, u64 big-endian) ++ mail id → nothing:
    /// the pending mails, earliest due first.
    pub const MAIL_DUE: &str = "mail_due";
    /// given up at (ms, u64 big-endian) ++ mail id → `model::mail::Mail` as
    /// JSON (`strands notifications failed`).
    pub const MAIL_FAILED: &str = "mail_failed";
    /// login id → `model::login::Login` as JSON: web inbox sign-ins (the
    /// cookie secret's hash, never the secret).
    pub const WEB_LOGINS: &str = "web_logins";
    /// `[status or 0] ++ (u64::MAX − created nanos) ++ id` → nothing: sessions
    /// newest first, all and by status; the same under `W ++ [status or 0]
    /// ++ workflow ++ 0`: by workflow; `#` ++ status → u64 count
    /// (`store::sled::listing`). `A ++ approver ++ 0 ++ …` and `R ++ id`:
    /// open gates by approver (`store::sled::awaiting`).
    pub const SESSION_ORDER: &str = "session_order";
    /// SHA-256 of a spec's text (hex, as `Session.spec_hash`) → the text:
    /// each distinct spec stored once; sessions keep only its hash
    /// (`store::sled::specs`).
    pub const SPECS: &str = "specs";
    /// session id → JSON list of its open gate handles never posted to a
    /// room (`store::sled::unposted`): what start-up asks again.
    pub const UNPOSTED: &str = "unposted";
    /// session id ++ 0 ++ SHA-256 (hex) of a text → the text: a session's
    /// large texts, apart from its record (`store::sled::outputs`).
    pub const OUTPUTS: &str = "outputs";
    /// Teams conversation id → `model::teams::TeamsConversation` as JSON:
    /// where the Teams room can post (`store::sled::teams`).
    pub const TEAMS_CONVERSATIONS: &str = "teams_conversations";
    /// `directory` → the people directory, a JSON list of
    /// `model::person::Person` (`store::sled::people`).
    pub const PEOPLE: &str = "people";
}

const HEAD_KEY: &[u8] = b"head";

/// Hands memory freed after opening back to the system. sled's recovery
/// reads the log written since the last open into buffers it frees; the
/// allocator would keep those pages, and a long-lived `strands serve`
/// would hold them for nothing (tens of MB on a large store).
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it
    // takes no pointers and is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The layout this build writes (see `SledStore::migrate`). 3: large texts
/// of sessions may be kept apart (`outputs`), which a release that does not
/// know it would read as their references — so it refuses the store.
pub const STORE_FORMAT: u32 = 3;

fn message_key(channel: &str, ts: &str) -> Vec<u8> {
    format!("{channel}/{ts}").into_bytes()
}

pub struct SledStore {
    db: sled::Db,
    sessions: sled::Tree,
    summaries: sled::Tree,
    messages: sled::Tree,
    slack_events: sled::Tree,
    events: sled::Tree,
    session_events: sled::Tree,
    audit: sled::Tree,
    audit_head: sled::Tree,
    path: PathBuf,
    /// Where "now" comes from (`updated_at`, events, first sightings).
    clock: crate::clock::SharedClock,
    /// sled's log file, opened again to `fdatasync` it (see [`SledStore::sync`]).
    log: std::sync::Arc<std::fs::File>,
    /// The last event of writes not synced yet (0: none), announced with
    /// the next sync.
    held_events: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Group commit: tickets taken by callers of `sync`, and the highest
    /// ticket a finished sync covered.
    sync_tickets: std::sync::Arc<std::sync::atomic::AtomicU64>,
    synced: std::sync::Arc<std::sync::Mutex<u64>>,
    /// Syncs made by this process (`strands_store_syncs_total`).
    syncs: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The number of the last event this process wrote (subscribers wait on it).
    event_tx: tokio::sync::watch::Sender<u64>,
    /// The number of the last event when the store was opened: with
    /// `event_tx`'s, the events known to be on stable storage.
    events_at_open: u64,
    /// Texts written apart since open (`outputs`).
    outputs_written: std::sync::atomic::AtomicU64,
}

impl SledStore {
    /// Takes "now" from `clock` from here on (the process's).
    pub fn set_clock(&mut self, clock: crate::clock::SharedClock) {
        self.clock = clock;
    }

    /// Now, by the store's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Opens the store in directory `path` with the default settings.
    pub fn open(path: &Path) -> Result<SledStore> {
        SledStore::open_with(path, &crate::config::StoreSettings::default())
    }

    /// Opens the store in directory `path`; sled's cache is `settings`'
    /// (`STRANDS_STORE_CACHE_MB`).
    pub fn open_with(path: &Path, settings: &crate::config::StoreSettings) -> Result<SledStore> {
        std::fs::create_dir_all(path).map_err(|e| {
            Error::io(
                format!("cannot create the session store at {}", path.display()),
                e,
            )
        })?;
        // What a process killed at the wrong instant leaves, which sled
        // 0.34.7 would read as corruption (see `repair`).
        let cleared = repair::clear_after_crash(path).map_err(|e| {
            Error::io(
                format!("cannot prepare the session store at {}", path.display()),
                e,
            )
        })?;
        for snap in &cleared.snapshots {
            tracing::warn!(file = %snap.display(), "removed a snapshot a killed process left unfinished");
        }
        if cleared.conf {
            tracing::warn!("removed sled's torn conf file; sled writes it again");
        }
        let config = sled::Config::new()
            .path(path)
            .flush_every_ms(None)
            // sled's own page cache (default 1 GiB) is what grows with the
            // store; the OS page cache still holds what is read often.
            .cache_capacity(settings.cache_bytes());
        let grace = std::time::Instant::now() + REOPEN_GRACE;
        let db = loop {
            match config.open() {
                Err(e)
                    if lock_busy(&e)
                        && closed_here_lately(path)
                        && std::time::Instant::now() < grace =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => break other.map_err(|e| open_error(path, e))?,
            }
        };
        let sessions = db.open_tree(trees::SESSIONS)?;
        let summaries = db.open_tree(trees::SUMMARIES)?;
        let messages = db.open_tree(trees::SLACK_MESSAGES)?;
        let slack_events = db.open_tree(trees::SLACK_EVENTS)?;
        let events = db.open_tree(trees::EVENTS)?;
        let session_events = db.open_tree(trees::SESSION_EVENTS)?;
        let audit = db.open_tree(trees::AUDIT)?;
        let audit_head = db.open_tree(trees::AUDIT_HEAD)?;
        let log = std::fs::File::open(path.join("db")).map_err(|e| {
            Error::io(
                format!("cannot open the session store's log in {}", path.display()),
                e,
            )
        })?;
        let mut store = SledStore {
            log: std::sync::Arc::new(log),
            held_events: Default::default(),
            syncs: Default::default(),
            sync_tickets: Default::default(),
            synced: Default::default(),
            audit,
            audit_head,
            db,
            sessions,
            summaries,
            messages,
            slack_events,
            events,
            session_events,
            path: path.to_path_buf(),
            clock: crate::clock::system(),
            event_tx: tokio::sync::watch::channel(0).0,
            events_at_open: 0,
            outputs_written: Default::default(),
        };
        // Bringing an older (or new) store up to date: rebuilt from what
        // the store holds if lost, so one sync at the end is enough.
        store.events_at_open = store.last_event()?;
        let mut built = store.migrate()?;
        built |= store.build_order()?;
        built |= store.build_unposted()?;
        built |= store.build_awaiting()?;
        if built {
            store.sync()?;
        }
        release_freed_memory();
        Ok(store)
    }

    /// Brings a store written by an earlier release to [`STORE_FORMAT`],
    /// once: format 1 kept the Slack messages inside each session; they
    /// move to the `notifications` tree and each session is rewritten in
    /// the current session format (format 2 needs nothing). A store
    /// written by a newer release is refused (its data could be misread).
    /// Whether it wrote anything.
    fn migrate(&self) -> Result<bool> {
        let meta = self.tree(trees::META)?;
        let format = match meta.get(b"format")? {
            Some(v) => u32::from_be_bytes(
                v.as_ref()
                    .try_into()
                    .map_err(|_| Error::Store("unreadable store format".into()))?,
            ),
            None => 1,
        };
        if format > STORE_FORMAT {
            return Err(Error::Store(format!(
                "the session store at {} has format {format}, written by a newer strands (this one knows {STORE_FORMAT}); upgrade strands",
                self.path.display()
            )));
        }
        if format == STORE_FORMAT {
            return Ok(false);
        }
        // A copy first, before anything is rewritten: an upgrade that goes
        // wrong must not take the only copy of the sessions with it. No
        // copy, no upgrade (nothing was changed).
        if !self.sessions.is_empty() {
            let dest = self.backup_before_upgrade(STORE_FORMAT).map_err(|e| {
                Error::Store(format!(
                    "the session store at {} has format {format} and this strands upgrades it to {STORE_FORMAT}, but could not back it up first, so nothing was changed: {e}",
                    self.path.display()
                ))
            })?;
            tracing::warn!(
                backup = %dest.display(),
                "upgrading the session store from format {format} to {STORE_FORMAT}; a copy of it as it was is at {}",
                dest.display()
            );
        }
        // 2 → 3 changes nothing stored (format 2 sessions read as they are).
        let mut moved = 0usize;
        let legacy = (format < 2).then(|| self.sessions.iter());
        for kv in legacy.into_iter().flatten() {
            let (key, bytes) = kv?;
            let id = String::from_utf8_lossy(&key).into_owned();
            for n in crate::model::wire::legacy_notifications(&bytes) {
                self.record_notification(&id, &n)?;
                moved += 1;
            }
            let session = crate::model::wire::decode(&bytes)
                .map_err(|e| Error::Store(format!("session {id} is unreadable: {e}")))?;
            // Timers are armed when a gate opens now; a gate that format 1
            // left unarmed (paused by the CLI, no bot ran) gets its timeout.
            if session.status == Status::Paused {
                let marks = self.tree(trees::TIMER_GATES)?;
                let timers = self.tree(trees::TIMERS)?;
                for g in session.open_gates() {
                    let mark = gate_key(&id, &g.handle());
                    let old_mark = marks.get(id.as_bytes())?;
                    if marks.get(&mark)?.is_some()
                        || old_mark.as_deref() == Some(g.handle().as_bytes())
                    {
                        continue;
                    }
                    if let (Some(due), false) =
                        (g.timeout_at, g.kind == crate::model::GateKind::ToolCall)
                    {
                        let t = Timer {
                            session: id.clone(),
                            gate: g.handle(),
                            kind: TimerKind::Timeout,
                            due,
                            n: 0,
                            fired: None,
                        };
                        timers.insert(timer_key(&t), encode("timer", &t)?)?;
                    }
                    marks.insert(mark, g.handle().as_bytes())?;
                }
            }
            self.sessions.insert(key, encode("session", &session)?)?;
        }
        meta.insert(b"format", &STORE_FORMAT.to_be_bytes())?;
        if moved > 0 {
            tracing::info!(messages = moved, "store migrated to format {STORE_FORMAT}");
        }
        Ok(true)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes a session, failing if someone else wrote it since it was read
    /// (its `rev` moved). Bumps `rev` and `updated_at`, then flushes.
    pub fn checkpoint(&self, session: &mut Session) -> Result<()> {
        self.checkpoint_with(session, crate::store::Durability::Now)
    }

    /// [`SledStore::checkpoint`], synced now or with the next durable write.
    pub fn checkpoint_with(
        &self,
        session: &mut Session,
        durability: crate::store::Durability,
    ) -> Result<()> {
        let expected = session.rev;
        let mut next = session.clone();
        next.rev = expected + 1;
        next.updated_at = self.clock.now();
        self.write_with(
            &mut next,
            Some(expected),
            durability == crate::store::Durability::Now,
        )?;
        next.audit.clear();
        next.arm.clear();
        next.events.clear();
        *session = next;
        Ok(())
    }

    /// Full sessions with a status (start-up recovery reads `running` ones).
    pub fn sessions_with_status(&self, status: Status) -> Result<Vec<Session>> {
        let mut out = Vec::new();
        for s in self.list(Some(status))? {
            if let Some(full) = self.load(&s.id)? {
                out.push(full);
            }
        }
        Ok(out)
    }

    /// Stores a new session (rev 0 → 1).
    pub fn create(&self, session: &mut Session) -> Result<()> {
        session.rev = 1;
        self.write(session, None)?;
        session.audit.clear();
        session.arm.clear();
        session.events.clear();
        Ok(())
    }

    /// Stores many new sessions, each in its own transaction, with one
    /// flush at the end instead of one per session (bulk loads: benches
    /// building large stores). A crash before the end may keep any prefix.
    pub fn create_many(&self, sessions: impl IntoIterator<Item = Session>) -> Result<usize> {
        let mut n = 0;
        for mut s in sessions {
            s.rev = 1;
            self.write_with(&mut s, None, false)?;
            n += 1;
        }
        self.sync()?;
        Ok(n)
    }

    /// Writes `session` (compare-and-swap on `expected_rev`; `None`: it
    /// must not exist yet) with its summary, its audit outbox and the
    /// timers of gates it just opened, in one transaction, then flushes.
    fn write(&self, session: &mut Session, expected_rev: Option<u64>) -> Result<()> {
        self.write_with(session, expected_rev, true)
    }

    fn write_with(
        &self,
        session: &mut Session,
        expected_rev: Option<u64>,
        flush: bool,
    ) -> Result<()> {
        let stored = self.encode_session(session)?;
        self.put_outputs(&session.id, &stored.outputs)?;
        let bytes = stored.body;
        let session: &Session = session;
        let summary = serde_json::to_vec(&session.summary())
            .map_err(|e| Error::Internal(format!("encode summary: {e}")))?;
        let key = session.id.as_bytes();
        let events = &session.audit;
        let mut arm = Vec::new();
        for (gate, timers) in &session.arm {
            let mut rows = Vec::new();
            for t in timers {
                rows.push((timer_key(t), encode("timer", t)?));
            }
            arm.push((gate_key(&session.id, gate), gate.as_bytes().to_vec(), rows));
        }
        let marks = self.tree(trees::TIMER_GATES)?;
        let timers = self.tree(trees::TIMERS)?;
        let order = self.order()?;
        let unposted = self.tree(trees::UNPOSTED)?;
        let notes = self.tree(trees::NOTIFICATIONS)?;
        let summary_row = session.summary();
        let res = (
            &self.sessions,
            &self.summaries,
            &self.audit,
            &self.audit_head,
            &marks,
            &timers,
            &self.events,
            &self.session_events,
            &order,
            &unposted,
            &notes,
        )
            .transaction(|(s, m, log, head, mk, tm, ev, by, ix, up, nt)| {
                let current = s.get(key)?;
                match (expected_rev, &current) {
                    (None, Some(_)) => {
                        return Err(ConflictableTransactionError::Abort(format!(
                            "session {} already exists",
                            session.id
                        )))
                    }
                    (Some(rev), Some(cur)) => {
                        let cur_rev = rev_of(cur);
                        if cur_rev != Some(rev) {
                            return Err(ConflictableTransactionError::Abort(format!(
                            "session {} was changed by another writer (rev {:?}, expected {rev})",
                            session.id, cur_rev
                        )));
                        }
                    }
                    (Some(_), None) => {
                        return Err(ConflictableTransactionError::Abort(format!(
                            "session {} was deleted while running",
                            session.id
                        )))
                    }
                    (None, None) => {}
                }
                s.insert(key, bytes.as_slice())?;
                listing::put_summary(m, ix, key, &summary_row, summary.as_slice())?;
                awaiting::track(ix, session)?;
                unposted::track(up, nt, session)?;
                append_in(log, head, events).map_err(ConflictableTransactionError::Abort)?;
                // Once per gate asking: a mark says its timers were armed.
                for (mark, gate, rows) in &arm {
                    if mk.get(mark.as_slice())?.is_some() {
                        continue;
                    }
                    for (k, v) in rows {
                        tm.insert(k.as_slice(), v.as_slice())?;
                    }
                    mk.insert(mark.as_slice(), gate.as_slice())?;
                }
                append_events(ev, by, head, session, &session.events, self.clock.now())
                    .map_err(ConflictableTransactionError::Abort)
            });
        let last = match res {
            Ok(last) => last,
            Err(TransactionError::Abort(msg)) => return Err(Error::Session(msg)),
            Err(TransactionError::Storage(e)) => return Err(e.into()),
        };
        if flush {
            self.sync()?;
            self.announce(last);
        } else {
            self.hold(last);
        }
        Ok(())
    }

    pub fn load(&self, id: &str) -> Result<Option<Session>> {
        match self.sessions.get(id.as_bytes())? {
            None => Ok(None),
            Some(bytes) => self.decode_stored(id, &bytes).map(Some),
        }
    }

    /// Finds a session by id or unique id prefix (at least 4 characters).
    pub fn resolve(&self, id_or_prefix: &str) -> Result<String> {
        let want = id_or_prefix.trim();
        if self.sessions.contains_key(want.as_bytes())? {
            return Ok(want.to_string());
        }
        if want.len() >= 4 {
            let mut found = Vec::new();
            for kv in self.summaries.scan_prefix(want.as_bytes()).keys().take(2) {
                found.push(String::from_utf8_lossy(&kv?).to_string());
            }
            match found.len() {
                1 => return Ok(found.remove(0)),
                2 => {
                    return Err(Error::Session(format!(
                        "session id prefix `{want}` is ambiguous; give more characters"
                    )))
                }
                _ => {}
            }
        }
        Err(Error::Session(format!(
            "no session `{want}` in {} (see `strands sessions list`)",
            self.path.display()
        )))
    }

    /// Loads by id or prefix; unknown ids are exit 17.
    pub fn get(&self, id_or_prefix: &str) -> Result<Session> {
        let id = self.resolve(id_or_prefix)?;
        self.load(&id)?
            .ok_or_else(|| Error::Session(format!("no session `{id}`")))
    }

    /// Summaries, newest first, optionally only one status.
    /// Summaries, newest first, of `status` (or all): read from the order
    /// index a page at a time, so asking for a status reads only its runs
    /// (start-up asks for the running ones among a million paused).
    pub fn list(&self, status: Option<Status>) -> Result<Vec<Summary>> {
        const PAGE: usize = 4096;
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = self.list_page(status, after, PAGE)?;
            let full = page.len() == PAGE;
            after = page.last().map(|s| (s.created_at, s.id.clone()));
            out.extend(page);
            if !full {
                return Ok(out);
            }
        }
    }

    pub fn delete(&self, id: &str) -> Result<()> {
        let key = id.as_bytes();
        let order = self.order()?;
        let texts = self.output_keys(id)?;
        let out = self.outputs()?;
        let unposted = self.tree(trees::UNPOSTED)?;
        let res: std::result::Result<(), TransactionError<String>> =
            (&self.sessions, &self.summaries, &order, &out, &unposted).transaction(
                |(s, m, ix, o, up)| {
                    s.remove(key)?;
                    listing::remove_summary(m, ix, key)?;
                    for k in &texts {
                        o.remove(k)?;
                    }
                    up.remove(key)?;
                    awaiting::forget(ix, id)?;
                    Ok(())
                },
            );
        res.map_err(|e| Error::Store(format!("delete {id}: {e:?}")))?;
        // A text a write racing this delete stored meanwhile goes too.
        if !self.sessions.contains_key(key)? {
            for k in self.output_keys(id)? {
                out.remove(k)?;
            }
        }
        self.sync()?;
        Ok(())
    }

    /// Deletes finished sessions (completed, failed, rejected) last updated
    /// before `cutoff`; paused and running sessions are never removed here.
    pub fn cleanup(&self, cutoff: DateTime<Utc>) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for s in self.list(None)? {
            if s.status.is_terminal() && s.updated_at < cutoff {
                self.delete(&s.id)?;
                removed.push(s.id);
            }
        }
        Ok(removed)
    }

    /// Records an answer for the open gate, exactly once (`Session::accept`
    /// inside a compare-and-swap): the session must be paused, `gate` (an
    /// `id#instance` handle, if given) must be the open gate, and no answer may
    /// be pending. The caller carries the answer out.
    #[allow(clippy::result_large_err)] // see `gate::accept`
    pub fn record_answer(
        &self,
        id: &str,
        gate: Option<&str>,
        answer: &Answer,
    ) -> Result<std::result::Result<Session, Refusal>> {
        let key = id.as_bytes();
        let order = self.order()?;
        let out = self.outputs()?;
        let res = (
            &self.sessions,
            &self.summaries,
            &self.audit,
            &self.audit_head,
            &self.events,
            &self.session_events,
            &order,
            &out,
        )
            .transaction(|(s, m, log, head, ev, by, ix, o)| {
                let Some(cur) = s.get(key)? else {
                    return Err(ConflictableTransactionError::Abort(Ok(Refusal::NotFound)));
                };
                let mut session = outputs::decode_in(o, id, &cur)?
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e)))?;
                if let Err(refusal) = session.accept(gate, answer) {
                    return Err(ConflictableTransactionError::Abort(Ok(refusal)));
                }
                session.rev += 1;
                session.updated_at = self.clock.now();
                let stored = crate::store::outputs::split(&session)
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e.to_string())))?;
                let wrote = outputs::put_in(o, id, &stored.outputs)?;
                let bytes = stored.body;
                let row = session.summary();
                let summary = match serde_json::to_vec(&row) {
                    Ok(b) => b,
                    Err(e) => return Err(ConflictableTransactionError::Abort(Err(e.to_string()))),
                };
                s.insert(key, bytes)?;
                listing::put_summary(m, ix, key, &row, &summary)?;
                awaiting::track(ix, &session)?;
                append_in(log, head, &session.audit)
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e)))?;
                let last = append_events(ev, by, head, &session, &session.events, self.clock.now())
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e)))?;
                session.audit.clear();
                session.events.clear();
                Ok((session, last, wrote))
            });
        match res {
            Ok((mut session, last, wrote)) => {
                self.sync()?;
                self.announce(last);
                self.wrote_outputs(wrote);
                self.hydrate(&mut session)?;
                Ok(Ok(session))
            }
            Err(TransactionError::Abort(Ok(refusal))) => Ok(Err(refusal)),
            Err(TransactionError::Abort(Err(msg))) => {
                Err(Error::Store(format!("session {id}: {msg}")))
            }
            Err(TransactionError::Storage(e)) => Err(e.into()),
        }
    }

    /// Sessions in the store: the per-status counters summed (sled's own
    /// `len` walks the whole tree).
    pub fn count(&self) -> usize {
        self.status_counts()
            .map(|c| c.iter().map(|(_, n)| *n as usize).sum())
            .unwrap_or_else(|_| self.summaries.len())
    }
}

/// session id ++ 0 ++ gate handle: per-gate keys (timer marks,
/// escalations, queued answers).
fn gate_key(session: &str, gate: &str) -> Vec<u8> {
    let mut k = session.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(gate.as_bytes());
    k
}

/// Aborts a sled transaction, saying why.
fn abort<T>(why: String) -> std::result::Result<T, ConflictableTransactionError<String>> {
    Err(ConflictableTransactionError::Abort(why))
}

/// A failed transaction of `what` (`mail`, `webhooks`) as the store's error.
fn txn_error(what: &str, e: TransactionError<String>) -> Error {
    match e {
        TransactionError::Abort(msg) => Error::Store(format!("{what}: {msg}")),
        TransactionError::Storage(e) => e.into(),
    }
}

fn encode<T: serde::Serialize>(what: &str, v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| Error::Internal(format!("encode {what}: {e}")))
}

/// Timers, escalations and extra message index entries (the Slack bot's
/// `slack::timers`; `sessions sweep` does without them).
impl SledStore {
    fn tree(&self, name: &str) -> Result<sled::Tree> {
        Ok(self.db.open_tree(name)?)
    }

    /// Changes the open gate `gate` of paused session `id` (a moved
    /// deadline, more approvers), compare-and-swap on the session's revision.
    /// `None` when that gate is no longer open and waiting (nothing changed).
    pub fn update_open_gate(
        &self,
        id: &str,
        gate: &str,
        change: &(dyn Fn(&mut crate::model::OpenGate) + Send + Sync),
    ) -> Result<Option<Session>> {
        for _ in 0..8 {
            let Some(mut session) = self.load(id)? else {
                return Ok(None);
            };
            let open = session.status == Status::Paused && session.pending.is_none();
            let Some(g) = session.open_gate_mut(gate).filter(|_| open) else {
                return Ok(None);
            };
            let before = g.clone();
            change(g);
            if *g == before {
                return Ok(Some(session));
            }
            let expected = session.rev;
            session.rev = expected + 1;
            session.updated_at = self.clock.now();
            match self.write(&mut session, Some(expected)) {
                Ok(()) => return Ok(Some(session)),
                // Another writer got there first: look again.
                Err(Error::Session(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::Store(format!(
            "session {id} kept changing while its gate was being updated"
        )))
    }
}

fn rev_of(bytes: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Rev {
        rev: u64,
    }
    serde_json::from_slice::<Rev>(bytes).ok().map(|r| r.rev)
}

/// Whether sled refused to open because another handle holds its lock.
fn lock_busy(e: &sled::Error) -> bool {
    let text = e.to_string();
    matches!(e, sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock)
        || text.contains("lock")
        || text.contains("WouldBlock")
        || text.contains("temporarily unavailable")
}

/// Stores this process closed, and when. sled lets go of its lock on
/// `db` from a background thread a moment after the last handle drops, so
/// a store this process has just closed may still read as locked for a
/// few milliseconds (longer on a loaded machine); reopening it here waits
/// that out instead of reporting "in use by another process". A store
/// another process holds is reported at once, as before.
fn recently_closed(
) -> &'static std::sync::Mutex<std::collections::HashMap<PathBuf, std::time::Instant>> {
    static CLOSED: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<PathBuf, std::time::Instant>>,
    > = std::sync::OnceLock::new();
    CLOSED.get_or_init(Default::default)
}

/// How long after this process closed a store a busy lock is retried.
const REOPEN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether this process closed the store at `path` within [`REOPEN_GRACE`].
fn closed_here_lately(path: &Path) -> bool {
    recently_closed()
        .lock()
        .ok()
        .and_then(|m| m.get(path).copied())
        .is_some_and(|at| at.elapsed() < REOPEN_GRACE)
}

impl Drop for SledStore {
    fn drop(&mut self) {
        if let Ok(mut m) = recently_closed().lock() {
            m.retain(|_, at| at.elapsed() < REOPEN_GRACE);
            m.insert(self.path.clone(), std::time::Instant::now());
        }
    }
}

fn open_error(path: &Path, e: sled::Error) -> Error {
    let text = e.to_string();
    if lock_busy(&e) {
        Error::Store(format!(
            "the session store at {} is in use by another strands process (one process may open it at a time); wait for it to finish, or pass --store / STRANDS_STORE to use another store",
            path.display()
        ))
    } else {
        Error::Store(format!(
            "cannot open the session store at {}: {text}; {}",
            path.display(),
            backup::way_back(path)
        ))
    }
}

mod audit;
mod awaiting;
mod backend;
pub mod backup;
mod commit;
mod decided;
mod events;
mod export;
mod grants;
mod listing;
mod logins;
mod mail;
mod messages;
mod outputs;
mod people;
mod queued;
pub mod repair;
mod specs;
mod teams;
mod timers;
mod tokens;
mod unposted;
mod webhooks;

use audit::append_in;
pub(crate) use backend::{off_worker, quiesced};
use events::append_events;
pub use timers::timer_key;
#[cfg(test)]
pub(crate) mod tests;
