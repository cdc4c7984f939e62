//! `POST /api/v1/hooks/claude-code`: Claude Code's HTTP hook. Claude Code
//! posts its `PreToolUse` or `PermissionRequest` input here (a hook of
//! `"type": "http"` with this server's bearer token) and reads the answer
//! in its hook format. The call is judged and asked by the hub
//! ([`crate::hub::hosts`]); this handler only reads, waits and words it.
//! The response comes once a person decided (or the call passed, or the
//! request gave up): a hook's `timeout` should be the gate's, with
//! `onFailure: "block"` so a timeout never lets a call through.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ErrorBody};
use crate::hub::hosts::{self, HostCall};
use crate::hub::Hub;
use crate::model::token::Role;

/// What Claude Code posts to a hook (other keys are ignored).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ClaudeCodeHook {
    /// `PreToolUse` or `PermissionRequest`.
    pub hook_event_name: String,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub prompt_id: Option<String>,
    pub tool_name: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub tool_input: Value,
    /// `PreToolUse` only.
    pub tool_use_id: Option<String>,
}

/// Claude Code's tool call, decided by the people its policy names.
#[utoipa::path(post, path = "/hooks/claude-code", tag = "approvals",
    request_body = ClaudeCodeHook,
    security(("bearer" = [])),
    responses(
        (status = 200, body = Object, description = "the hook's answer: `hookSpecificOutput` with allow or deny"),
        (status = 403, body = ErrorBody, description = "needs an operator token"),
        (status = 422, body = ErrorBody, description = "not a PreToolUse or PermissionRequest hook"),
    ))]
pub async fn claude_code(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(hook): ApiJson<ClaudeCodeHook>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Operator)?;
    let event = hook.hook_event_name.as_str();
    if !matches!(event, "PreToolUse" | "PermissionRequest") {
        return Err(ApiError::unprocessable(
            "bad_field",
            format!(
                "hook_event_name `{event}`: this hook answers PreToolUse and PermissionRequest"
            ),
        ));
    }
    let call = HostCall {
        host: hosts::CLAUDE_CODE.into(),
        session: hook.session_id.clone(),
        prompt: hook.prompt_id.clone(),
        cwd: hook.cwd.clone(),
        tool: hook.tool_name.clone(),
        input: hook.tool_input.clone(),
        call_id: hook.tool_use_id.clone(),
    };
    let judged = hub.judge_host_call(&call, &caller.name).await?;
    let every = hub.host_wait();
    let verdict = hub.host_verdict(&judged, every, |_, _| async {}).await?;
    Ok(Json(hosts::claude_hook_output(event, &verdict)))
}
