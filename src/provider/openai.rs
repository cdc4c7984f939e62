//! The OpenAI-compatible Chat Completions client, for `openai` and `ollama`.
//!
//! Both providers speak the same wire protocol (`POST {base}/chat/completions`),
//! so one client serves them; they differ only in where the base URL comes
//! from and in whether a key is sent. OpenAI's base is `runtime.host`, else
//! `OPENAI_BASE_URL`, else the public API. Ollama's is `runtime.host`, else
//! `http://localhost:11434`, with its OpenAI-compatible `/v1` appended. The
//! bearer key comes from `OPENAI_API_KEY` and is sent only when set, since
//! local servers need none.

use serde::Serialize;
use serde_json::Value;

use super::retry::{self, RetryPolicy};
use super::{ChatRequest, ChatResponse, ProviderConfig, ProviderKind, Role, Usage};
use crate::error::{Error, Result};

const DEFAULT_OPENAI_BASE: &str = "https://api.openai.com/v1";
const DEFAULT_OLLAMA_HOST: &str = "http://localhost:11434";

/// A Chat Completions client. `Debug` never prints the key.
#[derive(Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    /// No trailing slash; `/chat/completions` is appended.
    base_url: String,
    api_key: Option<String>,
    retry: RetryPolicy,
    /// `"openai"` or `"ollama"`, for logs and errors.
    label: &'static str,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("provider", &self.label)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
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
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

impl OpenAiClient {
    /// Builds the client from the spec's settings and the environment
    /// (`OPENAI_BASE_URL`, `OPENAI_API_KEY`; empty values count as unset).
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        Self::with_env(config, |name| std::env::var(name).ok())
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
        let api_key = env("OPENAI_API_KEY").map(|k| k.trim().to_string());
        if let Some(key) = &api_key {
            if reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).is_err() {
                return Err(Error::Usage(
                    "OPENAI_API_KEY contains characters that cannot be sent in an HTTP header"
                        .to_string(),
                ));
            }
        }
        Ok(OpenAiClient {
            http: retry::http_client(label, config.timeout)?,
            base_url,
            api_key,
            retry: config.retry,
            label,
        })
    }

    /// One chat completion, retried per the policy.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let url = format!("{}/chat/completions", self.base_url);
        let shown_url = reqwest::Url::parse(&url)
            .map(|u| retry::redact_url(&u))
            .unwrap_or_else(|_| url.clone());
        let body = wire_request(request);
        tracing::debug!(
            provider = self.label,
            agent = %request.agent,
            model = %request.model,
            url = %shown_url,
            "calling model"
        );
        let response = retry::send_with_retry(&self.retry, self.label, || {
            let builder = self.http.post(&url).json(&body);
            match &self.api_key {
                Some(key) => builder.bearer_auth(key),
                None => builder,
            }
        })
        .await?;
        let (json, raw) = retry::read_json(self.label, &shown_url, response).await?;
        parse_response(self.label, &shown_url, &json, &raw)
    }
}

fn wire_request(request: &ChatRequest) -> WireRequest<'_> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.trim().is_empty() {
        messages.push(WireMessage {
            role: "system",
            content: &request.system,
        });
    }
    for m in &request.messages {
        messages.push(WireMessage {
            role: match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            },
            content: &m.content,
        });
    }
    WireRequest {
        model: &request.model,
        messages,
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: request.max_tokens,
    }
}

/// `choices[0].message.content` and the token counts. Content that is null
/// is empty text; content given as an array of parts has its text parts
/// joined (some compatible servers answer that way).
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
    let count = |field: &str| {
        json.get("usage")
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        text,
        usage: Usage {
            input_tokens: count("prompt_tokens"),
            output_tokens: count("completion_tokens"),
            calls: 1,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::retry::fake_server::{start, Reply};
    use crate::provider::{Message, Provider};
    use std::time::Duration;

    const OK_BODY: &str = r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;

    fn config(kind: ProviderKind, host: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            host: host.map(str::to_string),
            timeout: Duration::from_secs(5),
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
            },
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn request() -> ChatRequest {
        ChatRequest {
            agent: "writer".into(),
            model: "gpt-test".into(),
            system: "You are terse.".into(),
            messages: vec![
                Message {
                    role: Role::User,
                    content: "Say hi".into(),
                },
                Message {
                    role: Role::Assistant,
                    content: "hi".into(),
                },
                Message {
                    role: Role::User,
                    content: "Again".into(),
                },
            ],
            temperature: Some(0.2),
            top_p: None,
            max_tokens: Some(64),
        }
    }

    #[test]
    fn base_url_resolution() {
        let base = |kind, host: Option<&str>, env: &dyn Fn(&str) -> Option<String>| {
            OpenAiClient::with_env(&config(kind, host), env)
                .expect("client")
                .base_url
        };
        assert_eq!(
            base(ProviderKind::OpenAi, None, &no_env),
            "https://api.openai.com/v1"
        );
        let env = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://proxy:8080/v1/".to_string());
        assert_eq!(
            base(ProviderKind::OpenAi, None, &env),
            "http://proxy:8080/v1"
        );
        // runtime.host wins over the environment and is taken as-is.
        assert_eq!(
            base(ProviderKind::OpenAi, Some("http://h:1/"), &env),
            "http://h:1"
        );
        assert_eq!(
            base(ProviderKind::OpenAi, Some("http://h:1/v1"), &no_env),
            "http://h:1/v1"
        );
        assert_eq!(
            base(ProviderKind::Ollama, None, &no_env),
            "http://localhost:11434/v1"
        );
        // OPENAI_BASE_URL is for OpenAI, not Ollama.
        assert_eq!(
            base(ProviderKind::Ollama, None, &env),
            "http://localhost:11434/v1"
        );
        assert_eq!(
            base(ProviderKind::Ollama, Some("http://gpu:11434//"), &no_env),
            "http://gpu:11434/v1"
        );
        assert_eq!(
            base(ProviderKind::Ollama, Some("http://gpu:11434/v1/"), &no_env),
            "http://gpu:11434/v1"
        );
    }

    #[test]
    fn bad_host_is_a_usage_error() {
        let err = OpenAiClient::with_env(
            &config(ProviderKind::Ollama, Some("localhost:11434")),
            no_env,
        )
        .expect_err("no scheme");
        assert!(matches!(err, Error::Usage(_)), "{err:?}");
    }

    #[test]
    fn debug_hides_the_key() {
        let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-very-secret".to_string());
        let client =
            OpenAiClient::with_env(&config(ProviderKind::OpenAi, None), env).expect("client");
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn wire_body_fields() {
        let body = serde_json::to_value(wire_request(&request())).expect("json");
        assert_eq!(
            body,
            serde_json::json!({
                "model": "gpt-test",
                "messages": [
                    {"role": "system", "content": "You are terse."},
                    {"role": "user", "content": "Say hi"},
                    {"role": "assistant", "content": "hi"},
                    {"role": "user", "content": "Again"},
                ],
                "temperature": 0.2,
                "max_tokens": 64,
            })
        );
        let mut bare = request();
        bare.system = String::new();
        bare.temperature = None;
        bare.max_tokens = None;
        bare.top_p = Some(0.9);
        let body = serde_json::to_value(wire_request(&bare)).expect("json");
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
        assert_eq!(body["top_p"], 0.9);
        assert!(body.get("temperature").is_none());
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn response_parsing_edge_cases() {
        let parse = |raw: &str| {
            let json: Value = serde_json::from_str(raw).expect("json");
            parse_response("openai", "u", &json, raw)
        };
        let r = parse(r#"{"choices":[{"message":{"content":null}}]}"#).expect("ok");
        assert_eq!(r.text, "");
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 0,
                output_tokens: 0,
                calls: 1
            }
        );
        let r = parse(r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#)
            .expect("ok");
        assert_eq!(r.text, "ab");
        let err = parse(r#"{"error":{"message":"model not found"}}"#).expect_err("no choices");
        let msg = err.to_string();
        assert!(matches!(err, Error::Runtime(_)));
        assert!(msg.contains("model not found"), "{msg}");
        assert!(parse(r#"{"choices":[]}"#).is_err());
    }

    #[tokio::test]
    async fn retries_429_then_parses_the_answer() {
        let server = start(|i| {
            if i == 0 {
                Reply::new(429, r#"{"error":"rate limited"}"#).header("Retry-After", "0")
            } else {
                Reply::new(200, OK_BODY)
            }
        })
        .await;
        let client = OpenAiClient::with_env(
            &config(ProviderKind::OpenAi, Some(&format!("{}/v1", server.url))),
            no_env,
        )
        .expect("client");
        let response = client.complete(&request()).await.expect("completion");
        assert_eq!(server.hits(), 2);
        assert_eq!(response.text, "hello there");
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 3,
                calls: 1
            }
        );
        assert!(server
            .seen()
            .iter()
            .all(|s| s.path == "/v1/chat/completions"));
    }

    #[tokio::test]
    async fn gives_up_after_max_retries_plus_one() {
        let server = start(|_| Reply::new(500, r#"{"error":"boom"}"#)).await;
        let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-secret-key".to_string());
        let client = OpenAiClient::with_env(&config(ProviderKind::OpenAi, Some(&server.url)), env)
            .expect("client");
        let err = client.complete(&request()).await.expect_err("must fail");
        assert_eq!(server.hits(), 3);
        let msg = err.to_string();
        assert!(matches!(err, Error::Runtime(_)));
        assert!(msg.contains("HTTP 500"), "{msg}");
        assert!(msg.contains("after 3 attempts"), "{msg}");
        assert!(msg.contains("boom"), "{msg}");
        assert!(
            msg.contains(&format!("{}/chat/completions", server.url)),
            "{msg}"
        );
        assert!(!msg.contains("sk-secret-key"), "{msg}");
    }

    #[tokio::test]
    async fn sends_body_and_auth_header() {
        let server = start(|_| Reply::new(200, OK_BODY)).await;
        let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-test-123".to_string());
        let client = OpenAiClient::with_env(&config(ProviderKind::OpenAi, Some(&server.url)), env)
            .expect("client");
        client.complete(&request()).await.expect("completion");
        let seen = server.seen();
        assert_eq!(seen.len(), 1);
        let req = &seen[0];
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/chat/completions");
        assert_eq!(req.header("authorization"), Some("Bearer sk-test-123"));
        assert!(req
            .header("content-type")
            .is_some_and(|v| v.starts_with("application/json")));
        let body = req.json();
        assert_eq!(body["model"], "gpt-test");
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][0]["content"], "You are terse.");
        assert_eq!(body["messages"][3]["content"], "Again");
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["max_tokens"], 64);
        assert!(body.get("top_p").is_none());
    }

    #[tokio::test]
    async fn ollama_sends_no_auth_and_uses_v1() {
        let server = start(|_| Reply::new(200, OK_BODY)).await;
        let mut req = request();
        req.system = String::new();
        let provider = Provider::OpenAi(
            OpenAiClient::with_env(&config(ProviderKind::Ollama, Some(&server.url)), no_env)
                .expect("client"),
        );
        let response = provider.complete(&req).await.expect("completion");
        assert_eq!(response.text, "hello there");
        let seen = server.seen();
        assert_eq!(seen[0].path, "/v1/chat/completions");
        assert_eq!(seen[0].header("authorization"), None);
        let body = seen[0].json();
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn complete_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let client =
            OpenAiClient::with_env(&config(ProviderKind::OpenAi, None), no_env).expect("client");
        let req = request();
        let provider = Provider::OpenAi(client);
        let fut = provider.complete(&req);
        assert_send(&fut);
    }
}
