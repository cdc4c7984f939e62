//! Durable sessions in PostgreSQL, shared by several `strands serve`
//! replicas and the CLI at once (no process lock, unlike sled).
//!
//! Every guarantee of [`crate::store::Backend`] holds across processes
//! because each operation is one database transaction: a checkpoint is an
//! `UPDATE … WHERE rev = $expected`; an answer is recorded after
//! `SELECT … FOR UPDATE` on its session; the audit chain and the event
//! sequence are appended under a row lock on their head (`heads`), so two
//! replicas never fork the chain nor leave a gap in the events; timers and
//! webhook deliveries are claimed with `FOR UPDATE SKIP LOCKED`; a running
//! session is driven by the replica holding its lease ([`leases`]).
//!
//! The tables are named in [`schema`] only, created by its embedded,
//! versioned migrations at start-up. What this module does not do: keep a
//! cache (every read goes to the database). Other replicas learn of new
//! events by `LISTEN`/`NOTIFY`, with a slow poll as the safety net
//! ([`listen`]).
//!
//! Settings (read once, at start-up, and handed to connect): `STRANDS_PG_POOL_SIZE` (default 16),
//! `STRANDS_PG_STATEMENT_TIMEOUT_MS` (default 30000), `STRANDS_PG_CONNECT_TIMEOUT_SECS`
//! (default 10), `STRANDS_PG_EVENTS_POLL_SECS` (default 5: how often the
//! listener also reads the event head, in case a notification was missed),
//! `STRANDS_PG_CA_FILE` (a PEM file of CA certificates to
//! trust besides the system's); TLS itself is asked for in the URL
//! (`?sslmode=require`).

mod awaiting;
mod backend;
mod chain;
mod counts;
mod decided;
mod grants;
mod import;
mod leases;
mod listen;
mod mail;
mod messages;
mod outputs;
mod people;
mod prepared;
pub mod schema;
mod sessions;
mod teams;
mod timer_rows;
mod timers;
mod tokens;
mod webhooks;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};

use crate::error::{Error, Result};

/// Whether `location` names a PostgreSQL database rather than a sled path.
pub fn is_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// How to reach the database: a section of the settings
/// (`config::PgSettings`), read once at start-up.
pub use crate::config::PgSettings;

/// The PostgreSQL backend.
pub struct PgStore {
    pool: Pool,
    /// `postgres://host:port/db`, without credentials.
    location: String,
    /// Where "now" comes from (`updated_at`, events, leases, timers due).
    clock: crate::clock::SharedClock,
    /// The number of the last event committed that this process knows
    /// of: its own writes, and other processes' heard by [`listen`]
    /// (subscribers wait on it).
    event_tx: std::sync::Arc<tokio::sync::watch::Sender<u64>>,
    /// Background work's share of the pool ([`background_share`]).
    background: std::sync::Arc<tokio::sync::Semaphore>,
    /// Whether the listening task was started.
    listening: std::sync::atomic::AtomicBool,
    /// What the listener connects with (the pool's own settings).
    connect_config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    events_poll: std::time::Duration,
    /// Texts written apart since connect (`outputs`).
    outputs_written: std::sync::atomic::AtomicU64,
}

/// A pooled connection, holding its lane's share of the pool while used.
pub(crate) struct Conn {
    client: deadpool_postgres::Client,
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl std::ops::Deref for Conn {
    type Target = deadpool_postgres::Client;
    fn deref(&self) -> &Self::Target {
        &self.client
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.client
    }
}

/// How much of a pool of `size` background work may hold: a quarter is
/// kept for requests someone waits on.
fn background_share(size: usize) -> usize {
    (size - size / 4).max(1)
}

/// `url` without user or password, for messages (the URL itself when it
/// does not parse).
pub fn shown(url: &str) -> String {
    match url.parse::<tokio_postgres::Config>() {
        Ok(config) => redact(url, &config),
        Err(_) => url.split('@').next_back().unwrap_or(url).to_string(),
    }
}

/// The URL without user or password, for messages.
fn redact(url: &str, config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("");
    let scheme = url.split("://").next().unwrap_or("postgres");
    format!("{scheme}://{host}:{port}/{db}")
}

impl PgStore {
    /// Takes "now" from `clock` from here on (the process's).
    pub fn set_clock(&mut self, clock: crate::clock::SharedClock) {
        self.clock = clock;
    }

    /// Now, by the store's clock.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// Connects to `url`, checks the server answers, and brings the schema
    /// to the version this build knows (refusing a newer one). Errors name
    /// the host and port, never the password.
    pub async fn connect(url: &str, settings: &PgSettings) -> Result<PgStore> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            Error::Store(format!(
                "the store URL is not a valid PostgreSQL URL ({e}); expected postgres://USER:PASSWORD@HOST:PORT/DATABASE"
            ))
        })?;
        let location = redact(url, &config);
        config.connect_timeout(settings.connect_timeout);
        if config.get_application_name().is_none() {
            config.application_name("strands");
        }
        let ms = settings.statement_timeout.as_millis();
        let options = match config.get_options() {
            Some(o) => format!("{o} -c statement_timeout={ms}"),
            None => format!("-c statement_timeout={ms}"),
        };
        config.options(&options);
        let mgr_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let tls = tls_connector(settings)?;
        let manager = Manager::from_config(config.clone(), tls.clone(), mgr_config);
        let pool = Pool::builder(manager)
            .max_size(settings.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(settings.connect_timeout + settings.statement_timeout))
            .create_timeout(Some(settings.connect_timeout))
            .build()
            .map_err(|e| Error::Store(format!("cannot set up the pool for {location}: {e}")))?;
        let store = PgStore {
            pool,
            location,
            clock: crate::clock::system(),
            event_tx: std::sync::Arc::new(tokio::sync::watch::channel(0).0),
            background: std::sync::Arc::new(tokio::sync::Semaphore::new(background_share(
                settings.pool_size,
            ))),
            listening: Default::default(),
            connect_config: config,
            tls,
            events_poll: settings.events_poll,
            outputs_written: Default::default(),
        };
        let mut client = store.client().await?;
        schema::migrate(&mut client, &store.location).await?;
        drop(client);
        awaiting::build(&store).await?;
        Ok(store)
    }

    pub fn location(&self) -> String {
        self.location.clone()
    }

    /// How many texts this process has written apart since it connected.
    pub fn outputs_written(&self) -> u64 {
        self.outputs_written
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A connection from the pool; an unreachable database is a clear error.
    /// Background work takes it within its share of the pool, leaving the
    /// rest to requests someone waits on ([`crate::store::lane`]).
    pub(crate) async fn client(&self) -> Result<Conn> {
        let permit = match crate::store::lane::Lane::current() {
            crate::store::lane::Lane::Ack => None,
            // Never closed.
            crate::store::lane::Lane::Background => {
                self.background.clone().acquire_owned().await.ok()
            }
        };
        let client = self.pooled().await?;
        Ok(Conn {
            client,
            _permit: permit,
        })
    }

    async fn pooled(&self) -> Result<deadpool_postgres::Client> {
        self.pool.get().await.map_err(|e| {
            let why = match &e {
                deadpool_postgres::PoolError::Backend(b) => db_message(b),
                deadpool_postgres::PoolError::Timeout(_) => "timed out".to_string(),
                other => other.to_string(),
            };
            Error::Store(format!(
                "cannot reach the PostgreSQL store at {}: {why}",
                self.location
            ))
        })
    }

    /// Whether the database answers (for `/healthz`).
    pub async fn ping(&self) -> Result<()> {
        let client = self.client().await?;
        client
            .simple_query("SELECT 1")
            .await
            .map_err(|e| self.err("health check", e))?;
        Ok(())
    }

    /// A database error as a store error naming the store.
    pub(crate) fn err(&self, what: &str, e: tokio_postgres::Error) -> Error {
        Error::Store(format!("{what} in {}: {}", self.location, db_message(&e)))
    }

    /// Tells subscribers about events a committed write added.
    pub(crate) fn announce(&self, last: Option<u64>) {
        if let Some(seq) = last {
            listen::raise(&self.event_tx, seq);
        }
    }
}

/// A driver error with the server's own message when it sent one.
fn db_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut text = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(s) = src {
                text.push_str(&format!(": {s}"));
                src = s.source();
            }
            text
        }
    }
}

/// TLS for `sslmode=prefer|require`: rustls with the system's roots plus
/// `STRANDS_PG_CA_FILE`.
fn tls_connector(settings: &PgSettings) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = &settings.ca_file {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(path).map_err(|e| {
            Error::Store(format!(
                "STRANDS_PG_CA_FILE {}: cannot read it: {e}",
                path.display()
            ))
        })?;
        for cert in certs {
            let cert = cert
                .map_err(|e| Error::Store(format!("STRANDS_PG_CA_FILE {}: {e}", path.display())))?;
            roots
                .add(cert)
                .map_err(|e| Error::Store(format!("STRANDS_PG_CA_FILE {}: {e}", path.display())))?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Internal(format!("TLS for PostgreSQL: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Milliseconds since the epoch (times before it sort first), the order
/// timers and deliveries are due in.
fn millis(at: chrono::DateTime<chrono::Utc>) -> i64 {
    at.timestamp_millis().max(0)
}

fn encode<T: serde::Serialize>(what: &str, v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| Error::Internal(format!("encode {what}: {e}")))
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::Store(format!("unreadable {what}: {e}")))
}

#[doc(hidden)]
pub mod testdb;
#[cfg(test)]
mod tests;
