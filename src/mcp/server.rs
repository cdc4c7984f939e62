//! The MCP tools, on the hub: `request_approval` (the request of `POST
//! /api/v1/approvals`, waiting for its decision with progress
//! notifications), `get_approval`, `list_my_requests`, and Claude Code's
//! permission prompt tool `approve_tool_call` (judged by
//! `crate::hub::hosts`, answered as the one JSON text block Claude Code
//! accepts). Like an API handler, each tool parses, authorizes (the
//! token's role) and hands off; bad arguments are an MCP "invalid params"
//! error naming the field, and nothing is created.
//!
//! A client's cancellation ends the wait, not the request: it stays open,
//! answerable, and the same `key` (or `get_approval`) finds it again.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ContentBlock as Content, CreateTaskResult, GetTaskParams, GetTaskResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::tools;
use crate::hub::approvals::{ApprovalRequest, ApprovalView, Created};
use crate::hub::caller::Caller;
use crate::hub::hosts::{self, HostCall};
use crate::hub::Hub;
use crate::model::token::Role;

/// The MCP server of one session (rmcp makes one per client session).
#[derive(Clone)]
pub struct Server {
    hub: Hub,
    /// How often a waiting tool reports progress.
    every: Duration,
    /// How people reach this server (a request's page, for tasks).
    public_url: String,
}

impl Server {
    pub fn new(hub: Hub, every: Duration, public_url: String) -> Server {
        Server {
            hub,
            every,
            public_url,
        }
    }

    fn page(&self, id: &str) -> String {
        format!("{}/sessions/{id}", self.public_url)
    }
}

/// The caller the transport's authentication let through.
pub fn caller(ctx: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("no authenticated caller", None))
}

fn refused(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_request(message.into(), Some(json!({"code": "forbidden"})))
}

fn internal(e: crate::error::Error) -> ErrorData {
    let problem = crate::hub::problem::Problem::from(e);
    ErrorData::internal_error(
        problem.message,
        Some(json!({"code": problem.code, "status": problem.status.as_u16()})),
    )
}

/// The tool's arguments as `T`, or "invalid params" naming the field.
fn parse<T: DeserializeOwned>(args: Option<Map<String, Value>>) -> Result<T, ErrorData> {
    let value = Value::Object(args.unwrap_or_default());
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner().to_string();
        let field = if field == "." {
            // Unknown and missing fields name themselves in the message.
            inner.split('`').nth(1).unwrap_or_default().to_string()
        } else {
            field
        };
        ErrorData::invalid_params(
            format!(
                "{}{inner}",
                if field.is_empty() {
                    String::new()
                } else {
                    format!("{field}: ")
                }
            ),
            Some(json!({"field": field})),
        )
    })
}

/// A result: the JSON as one text block, and as `structuredContent`.
fn structured(v: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![Content::text(v.to_string())]);
    r.structured_content = Some(v);
    r
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    id: String,
    #[serde(default)]
    wait_seconds: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    status: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct PromptToolArgs {
    tool_name: String,
    #[serde(default)]
    input: Value,
    tool_use_id: Option<String>,
}

impl Server {
    /// Reports progress while `view` waits, when the client asked for it.
    async fn progress(ctx: &RequestContext<RoleServer>, view: &ApprovalView, waited: Duration) {
        let Some(token) = ctx.meta.get_progress_token() else {
            return;
        };
        let mut p = ProgressNotificationParam::new(token, waited.as_secs_f64());
        p.message = Some(format!(
            "waiting for a decision on `{}` ({}; {} s)",
            view.title,
            view.id,
            waited.as_secs()
        ));
        if let Err(e) = ctx.peer.notify_progress(p).await {
            tracing::debug!("mcp: progress not sent: {e}");
        }
    }

    async fn request_approval(
        &self,
        args: Option<Map<String, Value>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&ctx)?;
        let req: ApprovalRequest = parse(args)?;
        caller
            .require(Role::Operator)
            .map_err(|p| refused(p.message))?;
        let (session, created) = match self
            .hub
            .request_approval(&req, &caller.name)
            .await
            .map_err(internal)?
        {
            Ok(Created::New(s)) => (s, true),
            Ok(Created::Existing(s)) => (s, false),
            Err(e) => {
                return Err(ErrorData::invalid_params(
                    e.to_string(),
                    Some(json!({"field": e.field})),
                ))
            }
        };
        // A client that takes tasks gets one now and polls `tasks/get`.
        if ctx
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
        {
            let mut view = ApprovalView::of(&session);
            view.created = created;
            let task = super::tasks::of(&view, &self.page(&view.id)).task;
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        let wait =
            self.hub
                .await_decision(&session.id, Duration::MAX, self.every, |view, waited| {
                    let ctx = &ctx;
                    async move { Self::progress(ctx, &view, waited).await }
                });
        let mut view = tokio::select! {
            v = wait => v.map_err(internal)?,
            _ = ctx.ct.cancelled() => {
                // The request stays; the host may come back for it.
                return Err(ErrorData::invalid_request(
                    format!("cancelled; request {} stays open", session.id),
                    Some(json!({"id": session.id})),
                ));
            }
        };
        view.created = created;
        Ok(structured(json!(view)).into())
    }

    async fn get_approval(
        &self,
        args: Option<Map<String, Value>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&ctx)?;
        let a: GetArgs = parse(args)?;
        match self
            .hub
            .approval_for(&caller.name, caller.role, &a.id, a.wait_seconds)
            .await
            .map_err(internal)?
        {
            Ok(view) => Ok(structured(json!(view))),
            Err(why) => Err(refused(why)),
        }
    }

    async fn list_my_requests(
        &self,
        args: Option<Map<String, Value>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&ctx)?;
        let a: ListArgs = parse(args)?;
        let limit = a.limit.unwrap_or(50);
        if !(1..=200).contains(&limit) {
            return Err(ErrorData::invalid_params(
                "limit: between 1 and 200",
                Some(json!({"field": "limit"})),
            ));
        }
        let all = self
            .hub
            .list_approvals(&caller.name, caller.role, None, &[], 500)
            .await
            .map_err(internal)?;
        let mine: Vec<ApprovalView> = all
            .into_iter()
            .filter(|v| v.requested_by == caller.name)
            .filter(|v| a.status.as_deref().is_none_or(|s| v.status == s))
            .take(limit)
            .collect();
        Ok(structured(json!({"count": mine.len(), "approvals": mine})))
    }

    /// Ok when the caller may read request `id`.
    async fn readable(&self, id: &str, ctx: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let caller = caller(ctx)?;
        self.hub
            .approval_for(&caller.name, caller.role, id, 0)
            .await
            .map_err(internal)?
            .map(|_| ())
            .map_err(refused)
    }

    /// Claude Code's permission prompt tool: exactly one text block, no
    /// `structuredContent` (Claude Code refuses a result carrying it).
    async fn approve_tool_call(
        &self,
        args: Option<Map<String, Value>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&ctx)?;
        let a: PromptToolArgs = parse(args)?;
        caller
            .require(Role::Operator)
            .map_err(|p| refused(p.message))?;
        let call_id = a.tool_use_id.or_else(|| {
            ctx.meta
                .0
                .get("claudecode/toolUseId")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        let call = HostCall {
            host: hosts::CLAUDE_CODE.into(),
            tool: a.tool_name,
            input: a.input,
            call_id,
            ..HostCall::default()
        };
        let judged = self
            .hub
            .judge_host_call(&call, &caller.name)
            .await
            .map_err(internal)?;
        let wait = self.hub.host_verdict(&judged, self.every, |view, waited| {
            let ctx = &ctx;
            async move { Self::progress(ctx, &view, waited).await }
        });
        let verdict = tokio::select! {
            v = wait => v.map_err(internal)?,
            _ = ctx.ct.cancelled() => hosts::Verdict::Deny {
                message: "the host stopped waiting; the call was not run".into(),
            },
        };
        Ok(CallToolResult::success(vec![Content::text(
            hosts::claude_prompt_tool_output(&verdict).to_string(),
        )]))
    }
}

impl ServerHandler for Server {
    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = caller(&ctx)?;
        match self
            .hub
            .approval_for(&caller.name, caller.role, &request.task_id, 0)
            .await
            .map_err(internal)?
        {
            Ok(view) => Ok(GetTaskResult::new(super::tasks::of(
                &view,
                &self.page(&view.id),
            ))),
            Err(why) => Err(refused(why)),
        }
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // People decide at the page; what the host answers changes nothing.
        self.readable(&request.task_id, &ctx).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The host stops waiting; the request stays open for people.
        self.readable(&request.task_id, &ctx).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("strands", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "strands asks people: request_approval waits for a human decision \
                 (Slack, Teams, e-mail, the web inbox) under the installation's policies; \
                 approve_tool_call is Claude Code's permission prompt tool.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::all()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments;
        let result = match request.name.as_ref() {
            tools::REQUEST_APPROVAL => return self.request_approval(args, ctx).await,
            tools::GET_APPROVAL => self.get_approval(args, ctx).await,
            tools::LIST_MY_REQUESTS => self.list_my_requests(args, ctx).await,
            tools::APPROVE_TOOL_CALL => self.approve_tool_call(args, ctx).await,
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`: tools/list names them"),
                Some(json!({"field": "name"})),
            )),
        }?;
        Ok(result.into())
    }
}
