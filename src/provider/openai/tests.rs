//! The Chat Completions wire translation both ways, the settings of
//! `openai` and `ollama`, and the client against a local fake.

use super::*;
use crate::provider::retry::fake_server::{start, Reply};
use crate::provider::{Provider, ToolSpec};
use serde_json::json;
use std::time::Duration;

const OK_BODY: &str = r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;

fn config(kind: ProviderKind, host: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        kind,
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

fn no_env(_: &str) -> Option<String> {
    None
}

fn request() -> ChatRequest {
    ChatRequest {
        agent: "writer".into(),
        model: "gpt-test".into(),
        system: "You are terse.".into(),
        messages: vec![
            Message::user("Say hi"),
            Message::Assistant {
                content: "hi".into(),
                tool_calls: vec![],
            },
            Message::user("Again"),
        ],
        temperature: Some(0.2),
        top_p: None,
        max_tokens: Some(64),
        tools: vec![],
    }
}

/// A conversation with tools on offer, an assistant turn calling two of
/// them (one with text, one without) and their results.
fn tool_request() -> ChatRequest {
    ChatRequest {
        agent: "writer".into(),
        model: "gpt-test".into(),
        system: "Use tools.".into(),
        messages: vec![
            Message::user("Weather in Paris and Oslo?"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "call_a".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Paris"}),
                    },
                    ToolCall {
                        id: "call_b".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Oslo", "units": ["C"]}),
                    },
                ],
            },
            Message::Tool {
                call_id: "call_a".into(),
                name: "weather".into(),
                content: "sunny".into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "call_b".into(),
                name: "weather".into(),
                content: "no such city".into(),
                is_error: true,
            },
            Message::Assistant {
                content: "Checking the map.".into(),
                tool_calls: vec![ToolCall {
                    id: "call_c".into(),
                    name: "map".into(),
                    arguments: json!({}),
                }],
            },
            Message::Tool {
                call_id: "call_c".into(),
                name: "map".into(),
                content: "ok".into(),
                is_error: false,
            },
        ],
        temperature: None,
        top_p: None,
        max_tokens: None,
        tools: vec![
            ToolSpec {
                name: "weather".into(),
                description: "Current weather for a city.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                }),
            },
            ToolSpec {
                name: "map".into(),
                description: "A map.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        ],
    }
}

const TOOL_CALLS_BODY: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"search","arguments":"{\"q\":\"rust\",\"limit\":3}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":20}}"#;

#[test]
fn base_url_resolution() {
    let base = |kind, host: Option<&str>, env: &dyn Fn(&str) -> Option<String>| {
        OpenAiClient::with_env(&config(kind, host), env)
            .expect("client")
            .base_url()
            .to_string()
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
    let client = OpenAiClient::with_env(&config(ProviderKind::OpenAi, None), env).expect("client");
    let shown = format!("{client:?}");
    assert!(!shown.contains("sk-very-secret"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[test]
fn wire_body_fields() {
    let body = serde_json::to_value(wire_request(&request(), true)).expect("json");
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
    let body = serde_json::to_value(wire_request(&bare, true)).expect("json");
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
    assert_eq!(body["top_p"], 0.9);
    assert!(body.get("temperature").is_none());
    assert!(body.get("max_tokens").is_none());
}

#[test]
fn plain_request_has_no_tools_key() {
    let body = serde_json::to_value(wire_request(&request(), true)).expect("json");
    assert!(body.get("tools").is_none(), "{body}");
    for m in body["messages"].as_array().expect("messages") {
        assert!(m.get("tool_calls").is_none(), "{m}");
        assert!(m.get("tool_call_id").is_none(), "{m}");
    }
}

#[test]
fn tool_conversation_wire_shape() {
    let body = serde_json::to_value(wire_request(&tool_request(), true)).expect("json");
    assert_eq!(
        body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Use tools."},
                {"role": "user", "content": "Weather in Paris and Oslo?"},
                {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {
                                "name": "weather",
                                "arguments": "{\"city\":\"Oslo\",\"units\":[\"C\"]}",
                            },
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
                {"role": "tool", "tool_call_id": "call_b", "content": "no such city"},
                {
                    "role": "assistant",
                    "content": "Checking the map.",
                    "tool_calls": [{
                        "id": "call_c",
                        "type": "function",
                        "function": {"name": "map", "arguments": "{}"},
                    }],
                },
                {"role": "tool", "tool_call_id": "call_c", "content": "ok"},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "weather",
                        "description": "Current weather for a city.",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                    },
                },
                {
                    "type": "function",
                    "function": {
                        "name": "map",
                        "description": "A map.",
                        "parameters": {"type": "object", "properties": {}},
                    },
                },
            ],
        })
    );
    // The arguments strings are JSON that round-trips to the values.
    let args = body["messages"][2]["tool_calls"][1]["function"]["arguments"]
        .as_str()
        .expect("string");
    assert_eq!(
        serde_json::from_str::<Value>(args).expect("json"),
        json!({"city": "Oslo", "units": ["C"]})
    );
}

#[test]
fn ollama_gets_empty_string_not_null_content() {
    let body = serde_json::to_value(wire_request(&tool_request(), false)).expect("json");
    assert_eq!(body["messages"][2]["content"], "");
    assert_eq!(body["messages"][5]["content"], "Checking the map.");
    // An assistant turn without tool calls keeps "" under both dialects.
    let mut req = request();
    req.messages[1] = Message::Assistant {
        content: String::new(),
        tool_calls: vec![],
    };
    let body = serde_json::to_value(wire_request(&req, true)).expect("json");
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": ""})
    );
}

#[test]
fn parses_two_tool_calls() {
    let json: Value = serde_json::from_str(TOOL_CALLS_BODY).expect("json");
    let r = parse_response("openai", "u", &json, TOOL_CALLS_BODY).expect("ok");
    assert_eq!(r.text, "");
    assert_eq!(
        r.tool_calls,
        vec![
            ToolCall {
                id: "call_1".into(),
                name: "weather".into(),
                arguments: json!({"city": "Paris"}),
            },
            ToolCall {
                id: "call_2".into(),
                name: "search".into(),
                arguments: json!({"q": "rust", "limit": 3}),
            },
        ]
    );
    assert_eq!(r.usage.input_tokens, 40);
    assert_eq!(r.usage.output_tokens, 20);
}

#[test]
fn tool_call_argument_and_id_edge_cases() {
    let raw = r#"{"choices":[{"message":{"content":"let me look","tool_calls":[
        {"id":"c0","type":"function","function":{"name":"a","arguments":"{\"city\": \"Par"}},
        {"type":"function","function":{"name":"b","arguments":""}},
        {"id":"","function":{"name":"c"}},
        {"id":"c3","function":{"name":"d","arguments":{"already":"object"}}},
        {"id":"c4","function":{"name":"e","arguments":"  "}},
        {"id":"c5","function":{"name":"f","arguments":null}}
    ]}}]}"#;
    let json: Value = serde_json::from_str(raw).expect("json");
    let r = parse_response("ollama", "u", &json, raw).expect("ok");
    assert_eq!(r.text, "let me look");
    let calls = &r.tool_calls;
    assert_eq!(calls.len(), 6);
    // Unparseable arguments are kept verbatim as a JSON string.
    assert_eq!(calls[0].arguments, Value::String(r#"{"city": "Par"#.into()));
    assert_eq!(calls[0].id, "c0");
    // A missing or empty id gets a stable positional one.
    assert_eq!(calls[1].id, "call_1");
    assert_eq!(calls[2].id, "call_2");
    assert_eq!(calls[2].name, "c");
    // Missing, empty, blank or null arguments are an empty object.
    for i in [1, 2, 4, 5] {
        assert_eq!(calls[i].arguments, json!({}), "call {i}");
    }
    assert_eq!(calls[3].arguments, json!({"already": "object"}));
    // Same input, same ids.
    let again = parse_response("ollama", "u", &json, raw).expect("ok");
    assert_eq!(again.tool_calls, r.tool_calls);
    // No tool_calls (or null) is no calls; a non-array is an error.
    let plain: Value = serde_json::from_str(OK_BODY).expect("json");
    let r = parse_response("openai", "u", &plain, OK_BODY).expect("ok");
    assert!(r.tool_calls.is_empty());
    let raw = r#"{"choices":[{"message":{"content":"x","tool_calls":null}}]}"#;
    let json: Value = serde_json::from_str(raw).expect("json");
    assert!(parse_response("openai", "u", &json, raw)
        .expect("ok")
        .tool_calls
        .is_empty());
    let raw = r#"{"choices":[{"message":{"content":"x","tool_calls":"nope"}}]}"#;
    let json: Value = serde_json::from_str(raw).expect("json");
    let err = parse_response("openai", "u", &json, raw).expect_err("bad tool_calls");
    assert!(err.to_string().contains("tool_calls"), "{err}");
}

#[tokio::test]
async fn tool_round_trip_over_http() {
    let server = start(|_| Reply::new(200, TOOL_CALLS_BODY)).await;
    let provider = Provider::OpenAi(
        OpenAiClient::with_env(&config(ProviderKind::OpenAi, Some(&server.url)), no_env)
            .expect("client"),
    );
    let response = provider
        .complete(&tool_request())
        .await
        .expect("completion");
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[1].arguments["limit"], 3);
    let body = server.seen()[0].json();
    assert_eq!(
        body,
        serde_json::to_value(wire_request(&tool_request(), true)).expect("json")
    );
    assert_eq!(body["tools"][0]["function"]["name"], "weather");
    assert!(body["messages"][2]["content"].is_null());
}

#[tokio::test]
async fn ollama_tool_round_trip_over_http() {
    let server = start(|_| Reply::new(200, TOOL_CALLS_BODY)).await;
    let provider = Provider::OpenAi(
        OpenAiClient::with_env(&config(ProviderKind::Ollama, Some(&server.url)), no_env)
            .expect("client"),
    );
    let response = provider
        .complete(&tool_request())
        .await
        .expect("completion");
    assert_eq!(response.tool_calls[0].name, "weather");
    let body = server.seen()[0].json();
    assert_eq!(body["messages"][2]["content"], "");
    assert_eq!(body["messages"][3]["tool_call_id"], "call_a");
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
