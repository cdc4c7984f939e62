//! The Anthropic Messages API client, for the `anthropic` provider.
//!
//! Anthropic does not speak Chat Completions: the system prompt is a
//! top-level field rather than a message, `max_tokens` is mandatory, the key
//! goes in `x-api-key` with an `anthropic-version` header, and the answer is
//! a list of content blocks. This module maps [`ChatRequest`] onto
//! `POST {base}/v1/messages` and back. The base URL is `runtime.host`, else
//! `ANTHROPIC_BASE_URL`, else the public API; `ANTHROPIC_API_KEY` is required.

use reqwest::header::HeaderValue;
use serde::Serialize;
use serde_json::Value;

use super::retry::{self, RetryPolicy};
use super::{ChatRequest, ChatResponse, ProviderConfig, Role, Usage};
use crate::error::{Error, Result};

const DEFAULT_BASE: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";
/// Sent when the spec sets no `max_tokens` (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A Messages API client. `Debug` never prints the key.
#[derive(Clone)]
pub struct AnthropicClient {
    http: reqwest::Client,
    /// No trailing slash; `/v1/messages` is appended.
    base_url: String,
    /// Marked sensitive, so reqwest and `http` never print it either.
    api_key: HeaderValue,
    retry: RetryPolicy,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("retry", &self.retry)
            .finish()
    }
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

impl AnthropicClient {
    /// Builds the client from the spec's settings and the environment
    /// (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`; empty values count as
    /// unset). A missing key is `Error::Usage`.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// [`AnthropicClient::new`] with the environment given as a lookup
    /// function.
    fn with_env(config: &ProviderConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let host = config.host.as_deref().filter(|h| !h.trim().is_empty());
        let (origin, base) = match (host, env("ANTHROPIC_BASE_URL")) {
            (Some(h), _) => ("runtime.host", h.to_string()),
            (None, Some(b)) => ("ANTHROPIC_BASE_URL", b),
            (None, None) => ("the default", DEFAULT_BASE.to_string()),
        };
        let base_url = retry::normalize_base_url("anthropic", origin, &base)?;
        let Some(key) = env("ANTHROPIC_API_KEY") else {
            return Err(Error::Usage(
                "ANTHROPIC_API_KEY is not set: export it to use provider `anthropic`, \
                 or use provider `echo` for an offline rehearsal"
                    .to_string(),
            ));
        };
        let mut api_key = HeaderValue::from_str(key.trim()).map_err(|_| {
            Error::Usage(
                "ANTHROPIC_API_KEY contains characters that cannot be sent in an HTTP header"
                    .to_string(),
            )
        })?;
        api_key.set_sensitive(true);
        Ok(AnthropicClient {
            http: retry::http_client("anthropic", config.timeout)?,
            base_url,
            api_key,
            retry: config.retry,
        })
    }

    /// One message exchange, retried per the policy.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let url = format!("{}/v1/messages", self.base_url);
        let shown_url = reqwest::Url::parse(&url)
            .map(|u| retry::redact_url(&u))
            .unwrap_or_else(|_| url.clone());
        let body = wire_request(request);
        tracing::debug!(
            provider = "anthropic",
            agent = %request.agent,
            model = %request.model,
            url = %shown_url,
            "calling model"
        );
        let response = retry::send_with_retry(&self.retry, "anthropic", || {
            self.http
                .post(&url)
                .header("x-api-key", self.api_key.clone())
                .header("anthropic-version", API_VERSION)
                .json(&body)
        })
        .await?;
        let (json, raw) = retry::read_json("anthropic", &shown_url, response).await?;
        parse_response(&shown_url, &json, &raw)
    }
}

fn wire_request(request: &ChatRequest) -> WireRequest<'_> {
    let system = Some(request.system.as_str()).filter(|s| !s.trim().is_empty());
    WireRequest {
        model: &request.model,
        max_tokens: request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        system,
        messages: request
            .messages
            .iter()
            .map(|m| WireMessage {
                role: match m.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                },
                content: &m.content,
            })
            .collect(),
        temperature: request.temperature,
        top_p: request.top_p,
    }
}

/// The text blocks of `content`, joined, and the token counts. Prompt-cache
/// reads and writes are input tokens too, so they are added to
/// `input_tokens` when present.
fn parse_response(url: &str, json: &Value, raw: &str) -> Result<ChatResponse> {
    let Some(blocks) = json.get("content").and_then(Value::as_array) else {
        return Err(Error::Runtime(format!(
            "anthropic: the response from {url} has no content: {}",
            retry::excerpt(raw)
        )));
    };
    let text: String = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let count = |field: &str| {
        json.get("usage")
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        text,
        usage: Usage {
            input_tokens: count("input_tokens")
                + count("cache_creation_input_tokens")
                + count("cache_read_input_tokens"),
            output_tokens: count("output_tokens"),
            calls: 1,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::retry::fake_server::{start, Reply};
    use crate::provider::{Message, Provider, ProviderKind};
    use std::time::Duration;

    const OK_BODY: &str = r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"text","text":", world"}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":4}}"#;

    fn config(host: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind: ProviderKind::Anthropic,
            host: host.map(str::to_string),
            timeout: Duration::from_secs(5),
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
            },
        }
    }

    fn key_env(k: &str) -> Option<String> {
        (k == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_string())
    }

    fn request() -> ChatRequest {
        ChatRequest {
            agent: "critic".into(),
            model: "claude-test".into(),
            system: "Be brief.".into(),
            messages: vec![
                Message {
                    role: Role::User,
                    content: "Review this".into(),
                },
                Message {
                    role: Role::Assistant,
                    content: "Fine".into(),
                },
                Message {
                    role: Role::User,
                    content: "More".into(),
                },
            ],
            temperature: None,
            top_p: Some(0.5),
            max_tokens: None,
        }
    }

    #[test]
    fn missing_key_is_a_usage_error() {
        let err = AnthropicClient::with_env(&config(None), |_| None).expect_err("no key");
        assert!(matches!(err, Error::Usage(_)), "{err:?}");
        assert!(err.to_string().contains("ANTHROPIC_API_KEY is not set"));
        let empty = AnthropicClient::with_env(&config(None), |_| Some("  ".into()));
        assert!(matches!(empty, Err(Error::Usage(_))));
    }

    #[test]
    fn base_url_resolution() {
        let base = |host: Option<&str>, env: &dyn Fn(&str) -> Option<String>| {
            AnthropicClient::with_env(&config(host), env)
                .expect("client")
                .base_url
        };
        assert_eq!(base(None, &key_env), "https://api.anthropic.com");
        let env = |k: &str| match k {
            "ANTHROPIC_BASE_URL" => Some("http://gateway:9000/".to_string()),
            other => key_env(other),
        };
        assert_eq!(base(None, &env), "http://gateway:9000");
        assert_eq!(base(Some("http://h:1//"), &env), "http://h:1");
    }

    #[test]
    fn debug_hides_the_key() {
        let client = AnthropicClient::with_env(&config(None), key_env).expect("client");
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-ant-test"), "{shown}");
    }

    #[test]
    fn wire_body_fields() {
        let body = serde_json::to_value(wire_request(&request())).expect("json");
        assert_eq!(
            body,
            serde_json::json!({
                "model": "claude-test",
                "max_tokens": 4096,
                "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": "Review this"},
                    {"role": "assistant", "content": "Fine"},
                    {"role": "user", "content": "More"},
                ],
                "top_p": 0.5,
            })
        );
        let mut bare = request();
        bare.system = String::new();
        bare.max_tokens = Some(100);
        bare.temperature = Some(1.0);
        let body = serde_json::to_value(wire_request(&bare)).expect("json");
        assert!(body.get("system").is_none());
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["temperature"], 1.0);
    }

    #[test]
    fn response_parsing() {
        let json: Value = serde_json::from_str(OK_BODY).expect("json");
        let r = parse_response("u", &json, OK_BODY).expect("ok");
        assert_eq!(r.text, "Hello, world");
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 20,
                output_tokens: 4,
                calls: 1
            }
        );
        let raw = r#"{"content":[],"usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":0}}"#;
        let json: Value = serde_json::from_str(raw).expect("json");
        let r = parse_response("u", &json, raw).expect("ok");
        assert_eq!(r.text, "");
        assert_eq!(r.usage.input_tokens, 105);
        let raw = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let json: Value = serde_json::from_str(raw).expect("json");
        let msg = parse_response("u", &json, raw)
            .expect_err("no content")
            .to_string();
        assert!(msg.contains("Overloaded"), "{msg}");
    }

    #[tokio::test]
    async fn retries_429_then_parses_the_answer() {
        let server = start(|i| {
            if i == 0 {
                Reply::new(429, r#"{"type":"error"}"#).header("Retry-After", "0")
            } else {
                Reply::new(200, OK_BODY)
            }
        })
        .await;
        let client =
            AnthropicClient::with_env(&config(Some(&server.url)), key_env).expect("client");
        let response = client.complete(&request()).await.expect("completion");
        assert_eq!(server.hits(), 2);
        assert_eq!(response.text, "Hello, world");
        assert_eq!(response.usage.input_tokens, 20);
        assert_eq!(response.usage.output_tokens, 4);
        assert_eq!(response.usage.calls, 1);
        assert!(server.seen().iter().all(|s| s.path == "/v1/messages"));
    }

    #[tokio::test]
    async fn gives_up_after_max_retries_plus_one() {
        let server = start(|_| Reply::new(500, r#"{"type":"error","error":"kaput"}"#)).await;
        let client =
            AnthropicClient::with_env(&config(Some(&server.url)), key_env).expect("client");
        let err = client.complete(&request()).await.expect_err("must fail");
        assert_eq!(server.hits(), 3);
        let msg = err.to_string();
        assert!(matches!(err, Error::Runtime(_)));
        assert!(msg.contains("HTTP 500"), "{msg}");
        assert!(msg.contains("after 3 attempts"), "{msg}");
        assert!(msg.contains("kaput"), "{msg}");
        assert!(
            msg.contains(&format!("{}/v1/messages", server.url)),
            "{msg}"
        );
        assert!(!msg.contains("sk-ant-test"), "{msg}");
    }

    #[tokio::test]
    async fn sends_body_and_headers() {
        let server = start(|_| Reply::new(200, OK_BODY)).await;
        let provider = Provider::Anthropic(
            AnthropicClient::with_env(&config(Some(&server.url)), key_env).expect("client"),
        );
        provider.complete(&request()).await.expect("completion");
        let seen = server.seen();
        assert_eq!(seen.len(), 1);
        let req = &seen[0];
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/v1/messages");
        assert_eq!(req.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(req.header("authorization"), None);
        let body = req.json();
        assert_eq!(body["model"], "claude-test");
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["messages"][0]["content"], "Review this");
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
        assert!(body.get("temperature").is_none());
        assert_eq!(body["top_p"], 0.5);
    }

    #[test]
    fn complete_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let client = AnthropicClient::with_env(&config(None), key_env).expect("client");
        let req = request();
        let fut = client.complete(&req);
        assert_send(&fut);
    }
}
