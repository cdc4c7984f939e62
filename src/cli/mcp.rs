//! `strands mcp`: the MCP server over stdio, for hosts that start a
//! command (`{"command": "strands", "args": ["mcp"]}`). It is a bridge, not
//! a second server: every `tools/list` and `tools/call` goes to the running
//! server's `/mcp` (`STRANDS_SERVER` + `STRANDS_TOKEN`, or the server that
//! holds the local store), whose tools decide; progress notifications come
//! back to the host with the host's own progress token, and the host's
//! cancellation cancels the call there (the request stays open).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientRequest,
    Implementation, InitializeRequestParams, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ResultType, ServerCapabilities, ServerConfig,
    ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient, RoleServer,
    RunningService, ServiceError,
};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt};

use super::Ctx;
use crate::error::{Error, Result};

/// Where the host's progress notifications go, by the server's token.
#[derive(Clone, Default)]
struct Progress {
    host: Arc<OnceLock<Peer<RoleServer>>>,
    /// The server's progress token → the host's.
    tokens: Arc<Mutex<HashMap<ProgressToken, ProgressToken>>>,
}

/// The client side, toward the server: passes progress on to the host.
#[derive(Clone)]
struct Upstream {
    progress: Progress,
}

impl ClientHandler for Upstream {
    fn get_info(&self) -> InitializeRequestParams {
        InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("strands-mcp-bridge", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        let token = self
            .progress
            .tokens
            .lock()
            .ok()
            .and_then(|t| t.get(&params.progress_token).cloned());
        if let (Some(token), Some(host)) = (token, self.progress.host.get()) {
            params.progress_token = token;
            if let Err(e) = host.notify_progress(params).await {
                tracing::debug!("mcp bridge: progress not passed on: {e}");
            }
        }
    }
}

/// The server side, toward the host.
struct Bridge {
    upstream: RunningService<RoleClient, Upstream>,
    progress: Progress,
}

fn upstream_error(e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(format!("the strands server: {other}"), None),
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("strands", env!("CARGO_PKG_VERSION")));
        if let Some(remote) = self.upstream.peer().peer_info() {
            info.instructions = remote.instructions.clone();
        }
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        let mut listed = self
            .upstream
            .peer()
            .list_tools(request)
            .await
            .map_err(upstream_error)?;
        // The server spoke to us on its protocol; the host may speak a
        // newer one, which marks results (rmcp clears it for older peers).
        listed.result_type = Some(ResultType::COMPLETE);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let _ = self.progress.host.set(ctx.peer.clone());
        let mut params = request;
        // The server's request carries only what the host's tool call says.
        let host_token = ctx.meta.get_progress_token();
        let mut meta = params.meta.take().unwrap_or_default();
        meta.0.remove("progressToken");
        let mut options = PeerRequestOptions::no_options();
        options.meta = Some(meta);
        let call = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .upstream
            .peer()
            .send_cancellable_request(call, options)
            .await
            .map_err(upstream_error)?;
        let server_token = handle.progress_token.clone();
        if let (Some(host), Ok(mut t)) = (host_token, self.progress.tokens.lock()) {
            t.insert(server_token.clone(), host);
        }
        let outcome = tokio::select! {
            r = handle.await_response() => r,
            _ = ctx.ct.cancelled() => Err(ServiceError::Cancelled {
                reason: Some("cancelled by the host".into()),
            }),
        };
        if let Ok(mut t) = self.progress.tokens.lock() {
            t.remove(&server_token);
        }
        match outcome.map_err(upstream_error)? {
            ServerResult::CallToolResult(mut r) => {
                r.result_type = Some(ResultType::COMPLETE);
                Ok(CallToolResponse::Complete(r))
            }
            ServerResult::InputRequiredResult(r) => Ok(CallToolResponse::InputRequired(r)),
            ServerResult::CreateTaskResult(r) => Ok(CallToolResponse::Task(r)),
            _ => Err(ErrorData::internal_error(
                "the strands server answered a tool call with something else",
                None,
            )),
        }
    }
}

/// Runs the bridge on stdin/stdout until the host closes it.
pub async fn mcp(ctx: &Ctx) -> Result<u8> {
    let Some(remote) = ctx.remote.as_ref() else {
        return Err(Error::Usage(
            "strands mcp talks to a running server: set STRANDS_SERVER and STRANDS_TOKEN (an operator token), or run `strands serve` on this store".into(),
        ));
    };
    let url = format!("{}{}", remote.base(), crate::mcp::PATH);
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
        remote.http().clone(),
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.clone(),
        )
        .auth_header(remote.token().to_string()),
    );
    let progress = Progress::default();
    let upstream = Upstream {
        progress: progress.clone(),
    }
    .serve(transport)
    .await
    .map_err(|e| Error::Usage(format!("cannot reach the MCP server at {url}: {e}")))?;
    let bridge = Bridge { upstream, progress };
    let running = bridge
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::Internal(format!("mcp: the host's stdio: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::Internal(format!("mcp: {e}")))?;
    Ok(super::exit::OK)
}
