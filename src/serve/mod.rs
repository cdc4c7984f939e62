//! `strands serve`: the approval service. One long-running process that
//! every channel talks to — the HTTP API (`/api/v1`, for code), Slack,
//! Teams and e-mail when they are configured — over one store, one timer loop and one
//! place runs are driven ([`crate::hub::Hub`]).
//!
//! This module only composes: it reads the configuration ([`config`]),
//! opens the store and the rooms, mounts their routes beside the API's,
//! fires the timers that came due while nobody was serving, carries out
//! what a crash left half done, listens, leaves its address for the CLI
//! ([`discovery`]) and, on SIGINT/SIGTERM, finishes in-flight requests and
//! background drives (sessions are durable either way).

pub mod config;
pub mod discovery;

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::channel::hall::Room;
use crate::error::{Error, Result};
use crate::hub::Hub;
use crate::store::Store;

pub use config::Config;

/// Runs the service until SIGINT/SIGTERM, taking "now" from `clock`.
pub async fn run(config: Config, clock: crate::clock::SharedClock) -> Result<()> {
    let store = Store::connect_with(&config.store, &config.settings.store).await?;
    let shared = store.is_shared();
    let hub = Hub::new(
        store,
        Arc::clone(&config.settings),
        config.workflows.clone(),
    )
    .with_clock(clock)
    .with_max_body_bytes(config.max_body_bytes)
    .with_public_url(&config.public_url);
    let mut rooms: Vec<Arc<dyn Room>> = Vec::new();
    let mut router = Router::new();
    let mut socket_mode = None;
    if let Some(slack) = config.slack.clone() {
        let app = crate::slack::app::App::new(slack, hub.clone())?;
        // Request URLs need the signing secret; Socket Mode, the app token.
        if app.config.signing_secret.is_some() {
            router = router.merge(crate::slack::server::router(app.clone()));
        }
        // Home tabs people opened are kept up to date.
        crate::slack::home::watch(&app);
        if app.config.app_token.is_some() {
            socket_mode = Some(app.clone());
        }
        rooms.push(Arc::new(crate::slack::room::SlackRoom { app }));
    }
    if let Some(teams) = &config.teams {
        let door = crate::teams::door::Door::new(hub.clone(), teams, Arc::clone(&hub.clock))?;
        rooms.push(Arc::new(door.room()));
        router = router.merge(crate::teams::door::router(door));
        // Said before `listening`: whoever waits for that line sees it.
        if teams.local_playground {
            tracing::warn!("the Teams room is UNAUTHENTICATED (TEAMS_LOCAL_PLAYGROUND=1), for local testing with the Agents Playground only");
            eprintln!(
                "strands serve: WARNING: the Teams room is unauthenticated for local testing (TEAMS_LOCAL_PLAYGROUND=1): activities at POST {} are taken from this machine only, without a token",
                crate::teams::door::MESSAGES_PATH
            );
        } else {
            tracing::info!(app_id = %teams.app_id, "the Teams room is on");
            eprintln!(
                "strands serve: the Teams room is on (app {}): activities at POST {}",
                teams.app_id,
                crate::teams::door::MESSAGES_PATH
            );
        }
    }
    let mut mail_sender = None;
    if let Some(email) = config.email.clone() {
        let server = email.server_shown();
        let (room, sender) = crate::email::open(&hub, email)
            .map_err(|e| Error::Usage(format!("the e-mail room: {e}")))?;
        rooms.push(Arc::new(room));
        mail_sender = Some(sender);
        eprintln!("strands serve: the e-mail room is on (mail through {server})");
    }
    let room_names: Vec<&str> = rooms.iter().map(|r| r.name()).collect();
    let room_names = room_names.join(", ");
    hub.open_rooms(rooms);
    // Timeouts, reminders and escalations that came due while nobody was
    // serving fire first, before any answer is taken; then the timer loop.
    hub.start_timers().await?;
    hub.recover().await?;
    let stop = tokio_util::sync::CancellationToken::new();
    // The queue room: its link connects and consumes in the background;
    // its exchange is one more endpoint of the outbox.
    let amqp = config.amqp.clone().map(|c| {
        eprintln!(
            "strands serve: the queue room is on ({}, exchange {}, queue {})",
            c.shown(),
            c.exchange,
            c.queue
        );
        crate::amqp::open(&hub, c, stop.clone())
    });
    // The identity provider's discovery: a bad issuer stops the service
    // here, naming STRANDS_OIDC_ISSUER.
    let oidc = match config.web.oidc.clone() {
        Some(settings) => {
            let p = crate::web::oidc::Provider::discover(settings, &config.public_url)
                .await
                .map_err(|e| Error::Usage(e.to_string()))?;
            eprintln!(
                "strands serve: web inbox sign-in through the identity provider {} (redirect URI {}/auth/oidc/callback)",
                p.settings().issuer,
                config.public_url
            );
            Some(p)
        }
        None => None,
    };
    let web = crate::web::Web::new(hub.clone(), config.web.clone(), oidc)?;
    // One budget per token for the API and the MCP server together.
    let limit = crate::api::RateLimit::new(&config.api);
    router = router
        .merge(crate::api::router(hub.clone(), &limit))
        .merge(crate::api::limited(
            crate::mcp::router(hub.clone(), &config.public_url, config.mcp_progress),
            &limit,
        ))
        .merge(crate::web::router(web))
        .merge(service_routes(hub.clone(), amqp.clone()))
        // A request's store calls go ahead of background work.
        .layer(axum::middleware::from_fn(
            |req: axum::extract::Request, next: axum::middleware::Next| {
                crate::store::lane::acknowledging(next.run(req))
            },
        ));
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {}", config.bind), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("cannot read the listening address", e))?;
    if config.webhooks.is_some() || amqp.is_some() {
        let webhooks = config
            .webhooks
            .clone()
            .unwrap_or_else(|| crate::webhook::Config::without_endpoints(&config.public_url));
        let stats = Arc::new(crate::webhook::Stats::default());
        hub.metrics.watch_webhooks(Arc::clone(&stats));
        let mut deliverer = crate::webhook::Deliverer::new(webhooks, stats)?;
        if let Some(link) = &amqp {
            deliverer = deliverer.with_exchange(Arc::new(crate::amqp::Publisher {
                link: Arc::clone(link),
            }));
        }
        let (hub, stop) = (hub.clone(), stop.clone());
        hub.clone().tasks().spawn(async move {
            deliverer.run(&hub.store, stop.cancelled()).await;
        });
    }
    if let Some(sender) = mail_sender {
        let stop = stop.clone();
        hub.tasks().spawn(async move {
            sender.run(stop.cancelled()).await;
        });
    }
    if let Some(app) = &socket_mode {
        crate::slack::socket::start(app, stop.clone());
    }
    // A shared database needs no discovery file: the CLI works on it
    // directly, and replicas must not replace each other's local token.
    let left = if shared {
        Err(Error::Usage("a shared store".into()))
    } else {
        discovery::leave(&hub, &config.store, addr).await
    };
    if let (Err(e), false) = (&left, shared) {
        tracing::warn!("the CLI will not find this server by itself: {e}");
    }
    tracing::info!(%addr, rooms = %room_names, "strands serve listening");
    for (name, calendar) in &config.settings.service.calendars {
        tracing::info!(calendar = %name, "business hours: {calendar}");
    }
    eprintln!(
        "strands serve listening on http://{addr} (web inbox at http://{addr}/, API at /api/v1{})",
        if room_names.is_empty() {
            String::new()
        } else {
            format!("; rooms: {room_names}")
        },
    );
    if socket_mode.is_some() {
        eprintln!("strands serve: Slack over Socket Mode (no public URL needed); connecting");
    }
    let stopping = hub.stopping.clone();
    // Peers' addresses reach the handlers (the Teams local mode takes
    // activities from loopback only).
    let served = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown_signal().await;
        // Event streams end now; in-flight requests finish.
        stopping.cancel();
    })
    .await
    .map_err(|e| Error::io("the HTTP server stopped", e));
    if left.is_ok() {
        discovery::withdraw(&hub, &config.store).await;
    }
    stop.cancel();
    hub.tasks().close();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), hub.tasks().wait()).await;
    // Runs still being driven go back to the other replicas at once.
    hub.hand_back().await;
    served
}

/// `/healthz` and `/metrics`: the service's, whichever rooms are open.
fn service_routes(hub: Hub, amqp: Option<Arc<crate::amqp::Link>>) -> Router {
    let metrics = Router::new()
        .route("/metrics", get(metrics_route))
        .with_state(hub.clone());
    Router::new()
        .route("/healthz", get(healthz))
        .with_state((hub, amqp))
        .merge(metrics)
}

/// `ok`, or 503 naming the database when it does not answer; with the
/// queue room, a second line saying where its link to the broker is (a
/// broker away is not the service down: events wait in the outbox).
async fn healthz(State((hub, amqp)): State<(Hub, Option<Arc<crate::amqp::Link>>)>) -> Response {
    let link = amqp
        .map(|l| format!("\n{}", l.describe()))
        .unwrap_or_default();
    match hub.store.ping().await {
        Ok(()) if hub.store.is_shared() => {
            format!("ok (database {} answers){link}", hub.store.location()).into_response()
        }
        Ok(()) => format!("ok{link}").into_response(),
        Err(e) => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            format!("database unreachable: {e}{link}"),
        )
            .into_response(),
    }
}

async fn metrics_route(State(hub): State<Hub>) -> Response {
    let mut counts = Vec::new();
    if let Ok(failed) = hub.store.webhook_failed(100_000).await {
        hub.metrics.set_webhooks_failed(failed.len() as i64);
    }
    if let Ok(failed) = hub.store.mail_failed(100_000).await {
        hub.metrics.set_mail_failed(failed.len() as i64);
    }
    hub.metrics
        .set_store_syncs(hub.store.syncs().await.ok().flatten());
    // Counters the store keeps in the same transactions as the sessions:
    // five reads, whatever the store holds.
    let mut running = 0;
    let mut paused = 0;
    if let Ok(by_status) = hub.store.status_counts().await {
        for (status, n) in by_status {
            match status {
                crate::model::Status::Running => running = i64::try_from(n).unwrap_or(i64::MAX),
                crate::model::Status::Paused => paused = n,
                _ => {}
            }
            counts.push((status.as_str(), i64::try_from(n).unwrap_or(i64::MAX)));
        }
    }
    // The open gates' ages, while few enough runs are paused to read.
    if let Ok(Some(ages)) = crate::hub::insights::for_metrics(&hub, paused).await {
        hub.metrics.set_open_gates(&ages);
    }
    let driving = i64::try_from(hub.drives.driving()).unwrap_or(i64::MAX);
    // One process per store: every running session it does not drive
    // waits for a slot (in its queues or still in the store's backlog).
    let queued = if hub.store.is_shared() {
        i64::try_from(hub.drives.queued()).unwrap_or(i64::MAX)
    } else {
        (running - driving).max(0)
    };
    hub.metrics.set_drives(
        driving,
        queued,
        i64::try_from(hub.drives.size()).unwrap_or(i64::MAX),
    );
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        hub.metrics.render(&counts),
    )
        .into_response()
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
