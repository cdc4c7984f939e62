//! `strands serve`: the Slack approval bot.
//!
//! Slack is one more [`crate::channel::HumanChannel`] ([`app::SlackChannel`]):
//! when a gate trips, the bot posts a Block Kit approval message and the
//! session waits in the store — no task waits with it. A signed button click
//! (or modal submission) records the decision exactly once and a background
//! task resumes the run ([`interactions`] is where a click becomes a resume).
//!
//! Modules: [`config`] (environment), [`server`] (routes, signature check),
//! [`commands`] (`/strands ...`), [`interactions`] (clicks, modals),
//! [`app`] (state, the Slack channel, background drives), [`api`] (Web API
//! with retries), [`blocks`] (Block Kit templates and limits), [`metrics`].

pub mod api;
pub mod app;
pub mod blocks;
pub mod commands;
pub mod config;
pub mod interactions;
pub mod metrics;
pub mod server;
pub mod signature;
pub mod timers;

use crate::error::{Error, Result};
use crate::model::Status;
use crate::store::Store;

/// Runs the bot until SIGINT/SIGTERM, then finishes in-flight requests and
/// background drives (sessions are durable either way).
pub async fn serve(config: config::Config) -> Result<()> {
    let store = Store::open(&config.store)?;
    let bind = config.bind;
    let app = app::App::new(config, store)?;
    // Timeouts, reminders and escalations that came due while the bot was
    // away fire first, before any click is taken; then the timer task runs.
    timers::start(&app).await?;
    recover(&app).await?;
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {bind}"), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("cannot read the listening address", e))?;
    tracing::info!(%addr, "strands serve listening");
    eprintln!("strands serve listening on http://{addr}");
    axum::serve(listener, server::router(app.clone()))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|e| Error::io("the HTTP server stopped", e))?;
    app.tasks().close();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), app.tasks().wait()).await;
    Ok(())
}

/// At start-up: carry out decisions recorded but not yet carried out (and
/// runs interrupted mid-step), and post approval messages that never made it.
async fn recover(app: &app::App) -> Result<()> {
    for s in app.store.sessions_with_status(Status::Running).await? {
        tracing::info!(session = %s.id, "resuming a session left running");
        app.drive(s.id);
    }
    for s in app.store.sessions_with_status(Status::Paused).await? {
        let notes = app.store.notifications(&s.id).await?;
        let posted = s.open_gates().all(|g| app::posted(&notes, &g.handle()));
        if !posted {
            tracing::info!(session = %s.id, "posting an approval message that was never posted");
            app.drive(s.id);
        }
    }
    Ok(())
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
