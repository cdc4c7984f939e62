//! The OpenAI-compatible Chat Completions client, for `openai`, `ollama` and
//! `azure_openai`.
//!
//! All three speak the same wire protocol, so one client serves them; they
//! differ only in the URL and in how the key is sent. OpenAI's base is
//! `runtime.host`, else `OPENAI_BASE_URL`, else the public API, and requests
//! go to `{base}/chat/completions`. Ollama's is `runtime.host`, else
//! `http://localhost:11434`, with its OpenAI-compatible `/v1` appended. The
//! bearer key comes from `OPENAI_API_KEY` and is sent only when set, since
//! local servers need none. Azure's URL names the deployment and the API
//! version, and its key travels in `api-key`: [`super::azure`] resolves those
//! and builds this client with [`OpenAiClient::from_parts`].

use reqwest::header::HeaderValue;
use serde::Serialize;
use serde_json::Value;

use super::retry;
use super::{ChatRequest, ChatResponse, Message, ProviderConfig, ProviderKind, ToolCall, Usage};
use crate::error::{Error, Result};
use crate::retry::RetryPolicy;

const DEFAULT_OPENAI_BASE: &str = "https://api.openai.com/v1";
const DEFAULT_OLLAMA_HOST: &str = "http://localhost:11434";

/// A Chat Completions client. `Debug` never prints the key.
#[derive(Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    route: Route,
    auth: Auth,
    retry: RetryPolicy,
    /// `"openai"`, `"ollama"` or `"azure_openai"`, for logs and errors.
    label: &'static str,
}

/// Where the request for a model goes.
#[derive(Debug, Clone)]
pub(super) enum Route {
    /// `{base}/chat/completions`; the base has no trailing slash.
    Base(String),
    /// Azure: `{endpoint}/openai/deployments/{model}/chat/completions?api-version=…`,
    /// the model id being the deployment name.
    AzureDeployment {
        endpoint: reqwest::Url,
        api_version: String,
    },
}

/// How the key is sent. The values are marked sensitive, so reqwest and
/// `http` never print them either.
#[derive(Clone)]
pub(super) enum Auth {
    None,
    /// `Authorization: Bearer …` (the value includes `Bearer `).
    Bearer(HeaderValue),
    /// The key alone in a header of its own (Azure's `api-key`).
    Header(&'static str, HeaderValue),
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let auth = match &self.auth {
            Auth::None => "none",
            Auth::Bearer(_) | Auth::Header(..) => "<redacted>",
        };
        f.debug_struct("OpenAiClient")
            .field("provider", &self.label)
            .field("route", &self.route)
            .field("api_key", &auth)
            .field("retry", &self.retry)
            .finish()
    }
}

/// One Chat Completions message. `content` is always sent (null for an
/// assistant turn that only calls tools).
#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> WireMessage<'a> {
    fn text(role: &'static str, content: &'a str) -> Self {
        WireMessage {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// The arguments as a JSON-encoded string, as the protocol wants.
    arguments: String,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

impl OpenAiClient {
    /// Builds the client from the spec's settings and its credentials
    /// (`OPENAI_BASE_URL`, `OPENAI_API_KEY`; empty values count as unset).
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        Self::with_env(config, |name| config.credentials.get(name))
    }

    /// [`OpenAiClient::new`] with the environment given as a lookup function.
    fn with_env(config: &ProviderConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let host = config.host.as_deref().filter(|h| !h.trim().is_empty());
        let (label, base_url) = match config.kind {
            ProviderKind::Ollama => {
                let (origin, host) = match host {
                    Some(h) => ("runtime.host", h.to_string()),
                    None => ("the default", DEFAULT_OLLAMA_HOST.to_string()),
                };
                let host = retry::normalize_base_url("ollama", origin, &host)?;
                let base = if host.ends_with("/v1") {
                    host
                } else {
                    format!("{host}/v1")
                };
                ("ollama", base)
            }
            _ => {
                let (origin, base) = match (host, env("OPENAI_BASE_URL")) {
                    (Some(h), _) => ("runtime.host", h.to_string()),
                    (None, Some(b)) => ("OPENAI_BASE_URL", b),
                    (None, None) => ("the default", DEFAULT_OPENAI_BASE.to_string()),
                };
                (
                    "openai",
                    retry::normalize_base_url("openai", origin, &base)?,
                )
            }
        };
        let auth = match env("OPENAI_API_KEY") {
            Some(key) => Auth::Bearer(key_header(
                "OPENAI_API_KEY",
                &format!("Bearer {}", key.trim()),
            )?),
            None => Auth::None,
        };
        Self::from_parts(label, Route::Base(base_url), auth, config)
    }

    /// A client for `label` sending to `route` with `auth`, with the
    /// timeout and retry policy of `config`.
    pub(super) fn from_parts(
        label: &'static str,
        route: Route,
        auth: Auth,
        config: &ProviderConfig,
    ) -> Result<Self> {
        Ok(OpenAiClient {
            http: retry::http_client(label, config.timeout)?,
            route,
            auth,
            retry: config.retry,
            label,
        })
    }

    /// Whether a tool-only assistant turn is sent with `content: null`: yes
    /// for OpenAI and Azure, no for Ollama, which refuses null content.
    fn null_content(&self) -> bool {
        self.label != "ollama"
    }

    /// The URL a request for `model` is posted to.
    pub(super) fn url(&self, model: &str) -> String {
        match &self.route {
            Route::Base(base) => format!("{base}/chat/completions"),
            Route::AzureDeployment {
                endpoint,
                api_version,
            } => {
                let mut url = endpoint.clone();
                if let Ok(mut path) = url.path_segments_mut() {
                    path.pop_if_empty().extend([
                        "openai",
                        "deployments",
                        model,
                        "chat",
                        "completions",
                    ]);
                }
                url.query_pairs_mut()
                    .append_pair("api-version", api_version);
                url.to_string()
            }
        }
    }

    /// The base URL of a [`Route::Base`] client ("" for Azure).
    #[cfg(test)]
    fn base_url(&self) -> &str {
        match &self.route {
            Route::Base(base) => base,
            Route::AzureDeployment { .. } => "",
        }
    }

    /// One chat completion, retried per the policy.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let url = self.url(&request.model);
        let shown_url = reqwest::Url::parse(&url)
            .map(|u| retry::redact_url(&u))
            .unwrap_or_else(|_| url.clone());
        let body = wire_request(request, self.null_content());
        tracing::debug!(
            provider = self.label,
            agent = %request.agent,
            model = %request.model,
            url = %shown_url,
            "calling model"
        );
        let response = retry::send_with_retry(&self.retry, self.label, || {
            let builder = self.http.post(&url).json(&body);
            match &self.auth {
                Auth::None => builder,
                Auth::Bearer(value) => {
                    builder.header(reqwest::header::AUTHORIZATION, value.clone())
                }
                Auth::Header(name, value) => builder.header(*name, value.clone()),
            }
        })
        .await?;
        let (json, raw) = retry::read_json(self.label, &shown_url, response).await?;
        parse_response(self.label, &shown_url, &json, &raw)
    }
}

/// `value` as a sensitive header value; `Error::Usage` naming `variable`
/// when it cannot be sent in a header.
pub(super) fn key_header(variable: &str, value: &str) -> Result<HeaderValue> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        Error::Usage(format!(
            "{variable} contains characters that cannot be sent in an HTTP header"
        ))
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// The request body. `null_content`: whether an assistant turn that only
/// calls tools gets `content: null` (OpenAI's own shape) rather than `""`
/// (Ollama answers 400 "invalid message content type: `<nil>`" to null).
fn wire_request(request: &ChatRequest, null_content: bool) -> WireRequest<'_> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.trim().is_empty() {
        messages.push(WireMessage::text("system", &request.system));
    }
    for m in &request.messages {
        messages.push(match m {
            Message::User { content } => WireMessage::text("user", content),
            Message::Assistant {
                content,
                tool_calls,
            } => WireMessage {
                role: "assistant",
                content: if null_content && content.is_empty() && !tool_calls.is_empty() {
                    None
                } else {
                    Some(content)
                },
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireToolCall {
                        id: &call.id,
                        kind: "function",
                        function: WireFunctionCall {
                            name: &call.name,
                            arguments: call.arguments.to_string(),
                        },
                    })
                    .collect(),
                tool_call_id: None,
            },
            Message::Tool {
                call_id, content, ..
            } => WireMessage {
                role: "tool",
                content: Some(content),
                tool_calls: Vec::new(),
                tool_call_id: Some(call_id),
            },
        });
    }
    WireRequest {
        model: &request.model,
        messages,
        tools: request
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: request.max_tokens,
    }
}

/// `choices[0].message.content`, its `tool_calls` and the token counts.
/// Content that is null is empty text; content given as an array of parts
/// has its text parts joined (some compatible servers answer that way).
fn parse_response(label: &str, url: &str, json: &Value, raw: &str) -> Result<ChatResponse> {
    let Some(message) = json
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|c| c.get("message"))
    else {
        return Err(Error::Runtime(format!(
            "{label}: the response from {url} has no choices[0].message: {}",
            retry::excerpt(raw)
        )));
    };
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(_) => {
            return Err(Error::Runtime(format!(
                "{label}: the response from {url} has an unexpected choices[0].message.content: {}",
                retry::excerpt(raw)
            )))
        }
    };
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls.iter().enumerate().map(parse_tool_call).collect(),
        Some(_) => {
            return Err(Error::Runtime(format!(
                "{label}: the response from {url} has an unexpected \
                 choices[0].message.tool_calls: {}",
                retry::excerpt(raw)
            )))
        }
    };
    let count = |field: &str| {
        json.get("usage")
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: count("prompt_tokens"),
            output_tokens: count("completion_tokens"),
            calls: 1,
        },
    })
}

/// One entry of `tool_calls`. A missing or empty id becomes `call_<index>`;
/// a missing name is empty (the caller refuses it as an unknown tool).
fn parse_tool_call((index, call): (usize, &Value)) -> ToolCall {
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.trim().is_empty())
        .map_or_else(|| format!("call_{index}"), str::to_string);
    let function = call.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let arguments = parse_arguments(function.and_then(|f| f.get("arguments")));
    ToolCall {
        id,
        name,
        arguments,
    }
}

/// The protocol sends arguments as a JSON-encoded string: parsed here. A
/// missing, null or blank string is `{}`; a string that is not JSON is kept
/// as `Value::String(raw)` so the caller can refuse it. Some compatible
/// servers send an object directly; it is taken as-is.
fn parse_arguments(arguments: Option<&Value>) -> Value {
    match arguments {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(raw)) if raw.trim().is_empty() => Value::Object(Default::default()),
        Some(Value::String(raw)) => {
            serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
        }
        Some(other) => other.clone(),
    }
}

#[cfg(test)]
mod tests;
