//! The MCP door: agent hosts that speak the Model Context Protocol —
//! Claude Code, VS Code, Codex, Cursor, any SDK client — ask people through
//! strands as tools. `strands serve` answers MCP's Streamable HTTP at
//! `/mcp` (this module, on `rmcp`'s server side); `strands mcp` carries
//! the same tools over stdio for hosts that start a command
//! (`crate::cli::mcp`, a bridge to this server).
//!
//! Who asks is the bearer token, checked exactly as the API checks it (the
//! same tokens, roles and `X-Strands-As`), before the protocol sees the
//! request: a request without a valid token is answered 401 and reaches
//! no tool. The tools ([`server`]) are a door like the API's routes: they
//! parse, authorize and hand off to the hub (`crate::hub::approvals`,
//! `crate::hub::hosts`).

pub mod server;
mod tasks;
mod tools;

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::hub::caller::Caller;
use crate::hub::Hub;

/// Where the MCP server answers.
pub const PATH: &str = "/mcp";

/// How long a session of the older protocol lives without a message.
const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The MCP server's routes on `hub`. `public_url`: how hosts reach this
/// server, whose host name is accepted besides loopback (MCP's DNS
/// rebinding guard).
pub fn router(hub: Hub, public_url: &str, progress_every: std::time::Duration) -> Router {
    let public = public_url.trim_end_matches('/').to_string();
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if let Some(h) = url::Url::parse(public_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
    {
        hosts.push(h.trim_start_matches('[').trim_end_matches(']').to_string());
    }
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_max_request_body_bytes(hub.max_body_bytes)
        .with_sse_keep_alive(Some(std::time::Duration::from_secs(15)));
    // A legacy session closes after this long without a message either
    // way; a tool waiting for people sends progress (when the client gave a
    // token), else nothing: an hour leaves room for a long decision.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let handler_hub = hub.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(server::Server::new(
                handler_hub.clone(),
                progress_every,
                public.clone(),
            ))
        },
        Arc::new(sessions),
        config,
    );
    Router::new()
        .nest_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(hub, authenticate))
}

/// Lets a request through to the MCP server only with a valid token; the
/// caller it names goes with the request (read by [`server::caller`]).
async fn authenticate(State(hub): State<Hub>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    match Caller::from_request_parts(&mut parts, &hub).await {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(refused) => {
            let mut r = refused.into_response();
            r.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            r
        }
    }
}
