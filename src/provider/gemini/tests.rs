//! The Gemini wire translation both ways, and the client over a local fake.

use super::*;
use crate::provider::retry::fake_server::{start, Reply};
use crate::provider::{Provider, ProviderKind, ToolCall, ToolSpec};
use serde_json::json;
use std::time::Duration;

const OK_BODY: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"},{"text":"secret plan","thought":true},{"text":", world"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":4,"thoughtsTokenCount":6,"totalTokenCount":30}}"#;

fn config(host: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Gemini,
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
    (k == "GEMINI_API_KEY").then(|| "g-test-key".to_string())
}

fn request() -> ChatRequest {
    ChatRequest {
        agent: "analyst".into(),
        model: "gemini-test".into(),
        system: "Be brief.".into(),
        messages: vec![
            Message::user("Review this"),
            Message::Assistant {
                content: "Fine".into(),
                tool_calls: vec![],
            },
            Message::user("More"),
        ],
        temperature: Some(0.7),
        top_p: Some(0.9),
        max_tokens: Some(2048),
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

fn tool_request() -> ChatRequest {
    ChatRequest {
        agent: "analyst".into(),
        model: "models/gemini-test".into(),
        system: String::new(),
        messages: vec![
            Message::user("Weather in Paris and Oslo?"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "call_0_0".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Paris"}),
                    },
                    ToolCall {
                        id: "call_0_1".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Oslo"}),
                    },
                ],
            },
            tool_result("call_0_0", "sunny", false),
            tool_result("call_0_1", "no such city", true),
        ],
        temperature: None,
        top_p: None,
        max_tokens: None,
        tools: vec![ToolSpec {
            name: "weather".into(),
            description: "Current weather for a city.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": false,
            }),
        }],
    }
}

#[test]
fn plain_request_wire_shape() {
    let body = serde_json::to_value(wire_request(&request())).expect("json");
    assert_eq!(
        body,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Review this"}]},
                {"role": "model", "parts": [{"text": "Fine"}]},
                {"role": "user", "parts": [{"text": "More"}]},
            ],
            "generationConfig": {"temperature": 0.7, "topP": 0.9, "maxOutputTokens": 2048},
        })
    );
}

#[test]
fn tool_conversation_wire_shape() {
    let body = serde_json::to_value(wire_request(&tool_request())).expect("json");
    assert_eq!(
        body,
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]},
                {"role": "model", "parts": [
                    {
                        "functionCall": {"id": "call_0_0", "name": "weather", "args": {"city": "Paris"}},
                        "thoughtSignature": SKIP_SIGNATURE,
                    },
                    {
                        "functionCall": {"id": "call_0_1", "name": "weather", "args": {"city": "Oslo"}},
                        "thoughtSignature": SKIP_SIGNATURE,
                    },
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": "call_0_0", "name": "weather", "response": {"output": "sunny"}}},
                    {"functionResponse": {"id": "call_0_1", "name": "weather", "response": {"error": "no such city"}}},
                ]},
            ],
            "tools": [{"functionDeclarations": [{
                "name": "weather",
                "description": "Current weather for a city.",
                "parametersJsonSchema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": false,
                },
            }]}],
        })
    );
}

#[test]
fn a_user_turn_ends_a_run_of_results() {
    let mut req = tool_request();
    req.messages.push(Message::user("And Bergen?"));
    req.messages.push(Message::Assistant {
        content: "Checking.".into(),
        tool_calls: vec![ToolCall {
            id: "x".into(),
            name: "weather".into(),
            arguments: json!({}),
        }],
    });
    req.messages.push(tool_result("x", "rain", false));
    let body = serde_json::to_value(wire_request(&req)).expect("json");
    let roles: Vec<&str> = body["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .map(|c| c["role"].as_str().expect("role"))
        .collect();
    assert_eq!(roles, ["user", "model", "user", "user", "model", "user"]);
    assert_eq!(
        body["contents"][4]["parts"][0],
        json!({"text": "Checking."})
    );
    assert_eq!(body["contents"][4]["parts"][1]["functionCall"]["id"], "x");
    assert_eq!(
        body["contents"][5]["parts"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn parses_text_without_thoughts_and_usage() {
    let json: Value = serde_json::from_str(OK_BODY).expect("json");
    let r = parse_response("u", &json, OK_BODY, 0).expect("ok");
    assert_eq!(r.text, "Hello, world");
    assert!(r.tool_calls.is_empty());
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 10,
            calls: 1
        }
    );
}

#[test]
fn parses_function_calls_with_and_without_ids() {
    let raw = r#"{"candidates":[{"content":{"role":"model","parts":[
        {"text":"Let me look. "},
        {"functionCall":{"name":"weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"},
        {"functionCall":{"id":"g-7","name":"search"}}
    ]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5}}"#;
    let json: Value = serde_json::from_str(raw).expect("json");
    let r = parse_response("u", &json, raw, 3).expect("ok");
    assert_eq!(r.text, "Let me look. ");
    assert_eq!(
        r.tool_calls,
        vec![
            ToolCall {
                id: "call_3_0".into(),
                name: "weather".into(),
                arguments: json!({"city": "Paris"}),
            },
            ToolCall {
                id: "g-7".into(),
                name: "search".into(),
                arguments: json!({}),
            },
        ]
    );
    assert_eq!(r.usage.input_tokens, 5);
    assert_eq!(r.usage.output_tokens, 0);
}

#[test]
fn blocked_and_empty_answers_are_errors_naming_the_reason() {
    let parse = |raw: &str| {
        let json: Value = serde_json::from_str(raw).expect("json");
        parse_response("http://g/x", &json, raw, 0)
    };
    let err = parse(r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#).expect_err("blocked");
    assert!(matches!(err, Error::Runtime(_)));
    assert!(err.to_string().contains("SAFETY"), "{err}");
    assert!(err.to_string().contains("http://g/x"), "{err}");
    let err = parse(r#"{"candidates":[{"finishReason":"RECITATION"}]}"#).expect_err("no content");
    assert!(err.to_string().contains("RECITATION"), "{err}");
    let err = parse(r#"{"error":{"message":"bad model"}}"#).expect_err("no candidates");
    assert!(err.to_string().contains("bad model"), "{err}");
    // A cut-off answer is still an answer.
    let r = parse(
        r#"{"candidates":[{"content":{"parts":[{"text":"abc"}]},"finishReason":"MAX_TOKENS"}]}"#,
    )
    .expect("ok");
    assert_eq!(r.text, "abc");
}

#[test]
fn settings_resolution() {
    let c = GeminiClient::with_env(&config(None), key_env).expect("client");
    assert_eq!(
        c.url("gemini-2.5-flash").expect("url").as_str(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(
        c.url("models/gemini-2.5-flash").expect("url").as_str(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
    let env = |k: &str| match k {
        "GEMINI_BASE_URL" => Some("http://proxy:1/v1alpha/".to_string()),
        "GOOGLE_API_KEY" => Some("google-key".to_string()),
        "GEMINI_API_KEY" => Some("gemini-key".to_string()),
        _ => None,
    };
    let c = GeminiClient::with_env(&config(None), env).expect("client");
    assert_eq!(c.base_url, "http://proxy:1/v1alpha");
    // GOOGLE_API_KEY first, as strands-cli reads them.
    assert_eq!(c.api_key.to_str().ok(), Some("google-key"));
    assert!(c.api_key.is_sensitive());
    let c = GeminiClient::with_env(&config(Some("http://h:2/gw")), env).expect("client");
    assert_eq!(c.base_url, "http://h:2/gw/v1beta");
    let shown = format!("{c:?}");
    assert!(!shown.contains("google-key"), "{shown}");
}

#[test]
fn missing_key_names_both_variables() {
    let err = GeminiClient::with_env(&config(None), |_| None).expect_err("no key");
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("GOOGLE_API_KEY"), "{msg}");
    assert!(msg.contains("GEMINI_API_KEY"), "{msg}");
}

#[tokio::test]
async fn round_trip_over_http_with_a_retried_429() {
    let server = start(|i| {
        if i == 0 {
            Reply::new(429, r#"{"error":{"status":"RESOURCE_EXHAUSTED"}}"#)
                .header("Retry-After", "0")
        } else {
            Reply::new(200, OK_BODY)
        }
    })
    .await;
    let provider = Provider::Gemini(
        GeminiClient::with_env(&config(Some(&server.url)), key_env).expect("client"),
    );
    let r = provider.complete(&request()).await.expect("answer");
    assert_eq!(r.text, "Hello, world");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    for s in &seen {
        assert_eq!(s.method, "POST");
        assert_eq!(s.path, "/v1beta/models/gemini-test:generateContent");
        assert_eq!(s.header("x-goog-api-key"), Some("g-test-key"));
        assert_eq!(
            s.json(),
            serde_json::to_value(wire_request(&request())).expect("json")
        );
    }
}

#[tokio::test]
async fn errors_name_provider_and_url_never_the_key() {
    let server = start(|_| Reply::new(400, r#"{"error":{"message":"API key not valid"}}"#)).await;
    let client = GeminiClient::with_env(&config(Some(&server.url)), key_env).expect("client");
    let err = client.complete(&tool_request()).await.expect_err("400");
    let msg = err.to_string();
    assert!(msg.starts_with("gemini:"), "{msg}");
    assert!(
        msg.contains(&format!(
            "{}/v1beta/models/gemini-test:generateContent",
            server.url
        )),
        "{msg}"
    );
    assert!(msg.contains("API key not valid"), "{msg}");
    assert!(!msg.contains("g-test-key"), "{msg}");
    assert_eq!(server.hits(), 1);
}
