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

use super::retry;
use super::{ChatRequest, ChatResponse, Message, ProviderConfig, Usage};
use crate::error::{Error, Result};
use crate::retry::RetryPolicy;

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
    content: WireContent<'a>,
}

/// A message's content: plain text for a user turn, content blocks for an
/// assistant turn or a turn of tool results.
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(&'a str),
    Blocks(Vec<WireBlock<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

impl AnthropicClient {
    /// Builds the client from the spec's settings and its credentials
    /// (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`; empty values count as
    /// unset). A missing key is `Error::Usage`.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        Self::with_env(config, |name| config.credentials.get(name))
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
        messages: wire_messages(&request.messages),
        tools: request
            .tools
            .iter()
            .map(|t| WireTool {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
            })
            .collect(),
        temperature: request.temperature,
        top_p: request.top_p,
    }
}

/// Maps the conversation onto Messages API turns. An assistant turn is its
/// text (when non-empty) followed by one `tool_use` block per call; a run of
/// consecutive tool results becomes ONE user turn of `tool_result` blocks,
/// since the API wants every result of an assistant turn's calls in the
/// single user turn right after it.
fn wire_messages(messages: &[Message]) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::with_capacity(messages.len());
    // Whether the last turn pushed is a user turn made of tool results.
    let mut in_results = false;
    for m in messages {
        match m {
            Message::User { content } => {
                in_results = false;
                out.push(WireMessage {
                    role: "user",
                    content: WireContent::Text(content),
                });
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                in_results = false;
                let mut blocks = Vec::with_capacity(tool_calls.len() + 1);
                if !content.is_empty() {
                    blocks.push(WireBlock::Text { text: content });
                }
                blocks.extend(tool_calls.iter().map(|call| WireBlock::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: &call.arguments,
                }));
                out.push(WireMessage {
                    role: "assistant",
                    content: WireContent::Blocks(blocks),
                });
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let block = WireBlock::ToolResult {
                    tool_use_id: call_id,
                    content,
                    is_error: *is_error,
                };
                match out.last_mut() {
                    Some(WireMessage {
                        content: WireContent::Blocks(blocks),
                        ..
                    }) if in_results => blocks.push(block),
                    _ => {
                        in_results = true;
                        out.push(WireMessage {
                            role: "user",
                            content: WireContent::Blocks(vec![block]),
                        });
                    }
                }
            }
        }
    }
    out
}

/// The text blocks of `content`, joined, its `tool_use` blocks as tool
/// calls, and the token counts. Prompt-cache reads and writes are input
/// tokens too, so they are added to `input_tokens` when present.
fn parse_response(url: &str, json: &Value, raw: &str) -> Result<ChatResponse> {
    let Some(blocks) = json.get("content").and_then(Value::as_array) else {
        return Err(Error::Runtime(format!(
            "anthropic: the response from {url} has no content: {}",
            retry::excerpt(raw)
        )));
    };
    let is = |b: &Value, kind: &str| b.get("type").and_then(Value::as_str) == Some(kind);
    let text: String = blocks
        .iter()
        .filter(|b| is(b, "text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let tool_calls = blocks
        .iter()
        .filter(|b| is(b, "tool_use"))
        .enumerate()
        .map(|(index, b)| super::read_tool_call(b, "input", || format!("call_{index}")))
        .collect();
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
    use crate::provider::{Provider, ProviderKind, ToolCall, ToolSpec};
    use serde_json::json;
    use std::time::Duration;

    const OK_BODY: &str = r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"text","text":", world"}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":4}}"#;

    fn config(host: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind: ProviderKind::Anthropic,
            host: host.map(str::to_string),
            region: None,
            timeout: Duration::from_secs(5),
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
                max_server_delay: Duration::from_millis(5),
            },
            credentials: Default::default(),
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
                Message::user("Review this"),
                Message::Assistant {
                    content: "Fine".into(),
                    tool_calls: vec![],
                },
                Message::user("More"),
            ],
            temperature: None,
            top_p: Some(0.5),
            max_tokens: None,
            tools: vec![],
        }
    }

    fn tool_result(call_id: &str, content: &str, is_error: bool) -> Message {
        Message::Tool {
            call_id: call_id.into(),
            name: "weather".into(),
            content: content.into(),
            is_error,
        }
    }

    /// Tools on offer, an assistant turn calling two tools, both results,
    /// a tool-only assistant turn, its result, then a user follow-up.
    fn tool_request() -> ChatRequest {
        ChatRequest {
            agent: "critic".into(),
            model: "claude-test".into(),
            system: "Use tools.".into(),
            messages: vec![
                Message::user("Weather in Paris and Oslo?"),
                Message::Assistant {
                    content: "Let me check.".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "toolu_a".into(),
                            name: "weather".into(),
                            arguments: json!({"city": "Paris"}),
                        },
                        ToolCall {
                            id: "toolu_b".into(),
                            name: "weather".into(),
                            arguments: json!({"city": "Oslo"}),
                        },
                    ],
                },
                tool_result("toolu_a", "sunny", false),
                tool_result("toolu_b", "no such city", true),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "toolu_c".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Bergen"}),
                    }],
                },
                tool_result("toolu_c", "rain", false),
                Message::user("Thanks"),
            ],
            temperature: None,
            top_p: None,
            max_tokens: Some(512),
            tools: vec![ToolSpec {
                name: "weather".into(),
                description: "Current weather for a city.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                }),
            }],
        }
    }

    const TOOL_USE_BODY: &str = r#"{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Checking both."},{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"search","input":{"q":"rust","limit":3}}],"stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":30}}"#;

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
                    {"role": "assistant", "content": [{"type": "text", "text": "Fine"}]},
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
    fn plain_request_has_no_tools_key() {
        let body = serde_json::to_value(wire_request(&request())).expect("json");
        assert!(body.get("tools").is_none(), "{body}");
    }

    #[test]
    fn tool_conversation_wire_shape() {
        let body = serde_json::to_value(wire_request(&tool_request())).expect("json");
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 512,
                "system": "Use tools.",
                "messages": [
                    {"role": "user", "content": "Weather in Paris and Oslo?"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Let me check."},
                            {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Paris"}},
                            {"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {"city": "Oslo"}},
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "sunny", "is_error": false},
                            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "no such city", "is_error": true},
                        ],
                    },
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "toolu_c", "name": "weather", "input": {"city": "Bergen"}},
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "toolu_c", "content": "rain", "is_error": false},
                        ],
                    },
                    {"role": "user", "content": "Thanks"},
                ],
                "tools": [{
                    "name": "weather",
                    "description": "Current weather for a city.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }],
            })
        );
    }

    #[test]
    fn consecutive_tool_results_group_into_one_user_turn() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "weather".into(),
            arguments: json!({}),
        };
        let messages = vec![
            Message::user("go"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call("1"), call("2"), call("3")],
            },
            tool_result("1", "a", false),
            tool_result("2", "b", false),
            tool_result("3", "c", true),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call("4")],
            },
            tool_result("4", "d", false),
        ];
        let turns = serde_json::to_value(wire_messages(&messages)).expect("json");
        let turns = turns.as_array().expect("array");
        let roles: Vec<&str> = turns.iter().filter_map(|t| t["role"].as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
        let ids = |turn: &Value| -> Vec<String> {
            turn["content"]
                .as_array()
                .expect("blocks")
                .iter()
                .map(|b| {
                    assert_eq!(b["type"], "tool_result");
                    b["tool_use_id"].as_str().expect("id").to_string()
                })
                .collect()
        };
        assert_eq!(ids(&turns[2]), ["1", "2", "3"]);
        assert_eq!(turns[2]["content"][2]["is_error"], true);
        assert_eq!(ids(&turns[4]), ["4"]);
        // A run of results is split by any other message.
        let split = vec![
            tool_result("1", "a", false),
            Message::user("interject"),
            tool_result("2", "b", false),
        ];
        let turns = serde_json::to_value(wire_messages(&split)).expect("json");
        assert_eq!(turns.as_array().map(Vec::len), Some(3));
        assert_eq!(turns[1]["content"], "interject");
    }

    #[test]
    fn parses_two_tool_calls() {
        let json: Value = serde_json::from_str(TOOL_USE_BODY).expect("json");
        let r = parse_response("u", &json, TOOL_USE_BODY).expect("ok");
        assert_eq!(r.text, "Checking both.");
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall {
                    id: "toolu_1".into(),
                    name: "weather".into(),
                    arguments: json!({"city": "Paris"}),
                },
                ToolCall {
                    id: "toolu_2".into(),
                    name: "search".into(),
                    arguments: json!({"q": "rust", "limit": 3}),
                },
            ]
        );
        assert_eq!(r.usage.input_tokens, 50);
        assert_eq!(r.usage.output_tokens, 30);
        // A tool_use block without an id or input still yields a call.
        let raw = r#"{"content":[{"type":"tool_use","name":"a"},{"type":"tool_use","id":"","name":"b","input":null}]}"#;
        let json: Value = serde_json::from_str(raw).expect("json");
        let r = parse_response("u", &json, raw).expect("ok");
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.tool_calls[1].id, "call_1");
        assert_eq!(r.tool_calls[0].arguments, json!({}));
        assert_eq!(r.tool_calls[1].arguments, json!({}));
    }

    #[tokio::test]
    async fn tool_round_trip_over_http() {
        let server = start(|_| Reply::new(200, TOOL_USE_BODY)).await;
        let client =
            AnthropicClient::with_env(&config(Some(&server.url)), key_env).expect("client");
        let response = client.complete(&tool_request()).await.expect("completion");
        assert_eq!(response.text, "Checking both.");
        assert_eq!(response.tool_calls.len(), 2);
        assert_eq!(response.tool_calls[1].arguments["q"], "rust");
        let body = server.seen()[0].json();
        assert_eq!(
            body,
            serde_json::to_value(wire_request(&tool_request())).expect("json")
        );
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }

    #[test]
    fn response_parsing() {
        let json: Value = serde_json::from_str(OK_BODY).expect("json");
        let r = parse_response("u", &json, OK_BODY).expect("ok");
        assert_eq!(r.text, "Hello, world");
        assert_eq!(
            r.tool_calls,
            vec![ToolCall {
                id: "t".into(),
                name: "x".into(),
                arguments: json!({}),
            }]
        );
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
        assert!(r.tool_calls.is_empty());
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
