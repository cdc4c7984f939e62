//! The Converse translation both ways, the endpoint settings, and the SDK
//! client against a local fake: SigV4-signed, retried per our policy.

use super::wire::{self, takes_tool_status, to_document, to_json};
use super::*;
use crate::provider::retry::fake_server::{start, Reply};
use crate::provider::{Message, Provider, ProviderKind, ToolCall, ToolSpec};
use aws_sdk_bedrockruntime::config::Credentials;
use aws_sdk_bedrockruntime::operation::converse::ConverseOutput;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, ConverseOutput as Output, Message as WireMessage, StopReason,
    TokenUsage, ToolResultStatus, ToolUseBlock,
};
use serde_json::{json, Value};

const MODEL: &str = "us.anthropic.claude-test-v1:0";

const OK_BODY: &str = r#"{"output":{"message":{"role":"assistant","content":[{"text":"Hello"},{"text":", world"}]}},"stopReason":"end_turn","usage":{"inputTokens":20,"outputTokens":4,"totalTokens":24,"cacheReadInputTokens":3},"metrics":{"latencyMs":5}}"#;

const TOOL_BODY: &str = r#"{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_1","name":"weather","input":{"city":"Paris","days":-2,"exact":1.5}}}]}},"stopReason":"tool_use","usage":{"inputTokens":7,"outputTokens":9,"totalTokens":16},"metrics":{"latencyMs":5}}"#;

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_server_delay: Duration::from_millis(5),
    }
}

fn config(host: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Bedrock,
        host: host.map(str::to_string),
        region: Some("us-east-1".into()),
        timeout: Duration::from_secs(5),
        retry: policy(),
        credentials: Default::default(),
    }
}

/// A client whose SDK is already set up: static test credentials, the
/// fake's URL, our HTTP client, no SDK retries.
fn client_for(url: &str) -> BedrockClient {
    let conf = aws_sdk_bedrockruntime::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "AKIDTESTKEY",
            "test-secret-access-key",
            None,
            None,
            "test",
        ))
        .endpoint_url(url)
        .http_client(https_client())
        .retry_config(RetryConfig::disabled())
        .timeout_config(timeouts(Duration::from_secs(5)))
        .build();
    BedrockClient {
        inner: Arc::new(Inner {
            region: Some("us-east-1".into()),
            endpoint: Some(("test", url.to_string())),
            timeout: Duration::from_secs(5),
            retry: policy(),
            ready: tokio::sync::OnceCell::new_with(Some(Ready {
                client: Client::from_conf(conf),
                endpoint: url.to_string(),
            })),
        }),
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        agent: "risk".into(),
        model: MODEL.into(),
        system: "Be brief.".into(),
        messages: vec![
            Message::user("Review this"),
            Message::Assistant {
                content: "Fine".into(),
                tool_calls: vec![],
            },
            Message::user("More"),
        ],
        temperature: Some(0.5),
        top_p: None,
        max_tokens: Some(300),
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

fn tool_request(model: &str) -> ChatRequest {
    ChatRequest {
        agent: "risk".into(),
        model: model.into(),
        system: "  ".into(),
        messages: vec![
            Message::user("Weather in Paris and Oslo?"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "t_a".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Paris"}),
                    },
                    ToolCall {
                        id: "t_b".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Oslo"}),
                    },
                ],
            },
            tool_result("t_a", "sunny", false),
            tool_result("t_b", "no such city", true),
        ],
        temperature: None,
        top_p: None,
        max_tokens: None,
        tools: vec![ToolSpec {
            name: "weather".into(),
            description: "Current weather for a city.".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }],
    }
}

#[test]
fn plain_request_input() {
    let input = wire::input(&request()).expect("input");
    assert_eq!(
        input.system,
        Some(vec![
            aws_sdk_bedrockruntime::types::SystemContentBlock::Text("Be brief.".into())
        ])
    );
    let roles: Vec<&ConversationRole> = input.messages.iter().map(|m| &m.role).collect();
    assert_eq!(
        roles,
        [
            &ConversationRole::User,
            &ConversationRole::Assistant,
            &ConversationRole::User
        ]
    );
    assert_eq!(
        input.messages[1].content,
        [ContentBlock::Text("Fine".into())]
    );
    let inference = input.inference.expect("inference config");
    assert_eq!(inference.max_tokens, Some(300));
    assert_eq!(inference.temperature, Some(0.5));
    assert_eq!(inference.top_p, None);
    assert!(input.tool_config.is_none());
    // No sampling settings: no inferenceConfig at all.
    let mut bare = request();
    bare.temperature = None;
    bare.max_tokens = None;
    assert!(wire::input(&bare).expect("input").inference.is_none());
}

#[test]
fn tool_conversation_input() {
    let input = wire::input(&tool_request(MODEL)).expect("input");
    assert!(input.system.is_none(), "a blank system prompt is left out");
    assert_eq!(input.messages.len(), 3, "{:#?}", input.messages);
    let calls = &input.messages[1].content;
    assert_eq!(calls.len(), 2, "no empty text block before the calls");
    let first = calls[0].as_tool_use().expect("toolUse");
    assert_eq!(first.tool_use_id, "t_a");
    assert_eq!(to_json(&first.input), json!({"city": "Paris"}));
    let results = &input.messages[2];
    assert_eq!(results.role, ConversationRole::User);
    assert_eq!(results.content.len(), 2, "both results in one user turn");
    let ok = results.content[0].as_tool_result().expect("toolResult");
    assert_eq!(ok.tool_use_id, "t_a");
    assert_eq!(ok.status, Some(ToolResultStatus::Success));
    let failed = results.content[1].as_tool_result().expect("toolResult");
    assert_eq!(failed.status, Some(ToolResultStatus::Error));
    assert_eq!(
        failed.content[0].as_text().map(String::as_str),
        Ok("no such city")
    );
    let tools = input.tool_config.expect("toolConfig").tools;
    let spec = tools[0].as_tool_spec().expect("toolSpec");
    assert_eq!(spec.name, "weather");
    assert_eq!(
        spec.description.as_deref(),
        Some("Current weather for a city.")
    );
    let schema = spec.input_schema.as_ref().and_then(|s| s.as_json().ok());
    assert_eq!(
        schema.map(to_json),
        Some(json!({"type": "object", "properties": {"city": {"type": "string"}}}))
    );
}

#[test]
fn models_without_tool_status_get_the_error_in_the_text() {
    assert!(takes_tool_status("anthropic.claude-3-sonnet-20240229-v1:0"));
    assert!(takes_tool_status("us.amazon.nova-pro-v1:0"));
    assert!(!takes_tool_status("meta.llama3-70b-instruct-v1:0"));
    let input = wire::input(&tool_request("meta.llama3-70b-instruct-v1:0")).expect("input");
    let failed = input.messages[2].content[1]
        .as_tool_result()
        .expect("toolResult");
    assert_eq!(failed.status, None);
    assert_eq!(
        failed.content[0].as_text().map(String::as_str),
        Ok("Error: no such city")
    );
}

#[test]
fn documents_round_trip() {
    let value = json!({
        "s": "x", "n": null, "b": true, "u": 18446744073709551615u64, "i": -3,
        "f": 2.5, "a": [1, {"deep": []}], "o": {}
    });
    assert_eq!(to_json(&to_document(&value)), value);
}

fn output(blocks: Vec<ContentBlock>, stop: StopReason) -> ConverseOutput {
    ConverseOutput::builder()
        .output(Output::Message(
            WireMessage::builder()
                .role(ConversationRole::Assistant)
                .set_content(Some(blocks))
                .build()
                .expect("message"),
        ))
        .stop_reason(stop)
        .usage(
            TokenUsage::builder()
                .input_tokens(10)
                .output_tokens(5)
                .total_tokens(15)
                .cache_write_input_tokens(2)
                .build()
                .expect("usage"),
        )
        .build()
        .expect("output")
}

#[test]
fn parses_text_tool_uses_and_usage() {
    let tool_use = ToolUseBlock::builder()
        .tool_use_id("tooluse_9")
        .name("weather")
        .input(to_document(&json!({"city": "Oslo"})))
        .build()
        .expect("toolUse");
    let out = output(
        vec![
            ContentBlock::Text("Let me check.".into()),
            ContentBlock::ToolUse(tool_use),
        ],
        StopReason::ToolUse,
    );
    let r = wire::response("u", &out).expect("response");
    assert_eq!(r.text, "Let me check.");
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            id: "tooluse_9".into(),
            name: "weather".into(),
            arguments: json!({"city": "Oslo"}),
        }]
    );
    assert_eq!(
        r.usage,
        crate::provider::Usage {
            input_tokens: 12,
            output_tokens: 5,
            calls: 1
        }
    );
    // A cut-off answer is still an answer.
    let r = wire::response(
        "u",
        &output(
            vec![ContentBlock::Text("abc".into())],
            StopReason::MaxTokens,
        ),
    )
    .expect("response");
    assert_eq!(r.text, "abc");
}

#[test]
fn a_guardrail_stop_with_nothing_said_is_an_error() {
    let err = wire::response(
        "http://b/model/m/converse",
        &output(vec![], StopReason::GuardrailIntervened),
    )
    .expect_err("stopped");
    assert!(matches!(err, Error::Runtime(_)));
    let msg = err.to_string();
    assert!(msg.contains("guardrail_intervened"), "{msg}");
    assert!(msg.contains("http://b/model/m/converse"), "{msg}");
}

#[test]
fn endpoint_settings() {
    let endpoint = |host: Option<&str>, vars: &[(&str, &str)]| {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        BedrockClient::with_env(&config(host), |k| {
            vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
        .map(|c| c.inner.endpoint.clone())
    };
    assert_eq!(endpoint(None, &[]).expect("ok"), None);
    let both = [
        ("AWS_ENDPOINT_URL", "http://all:1"),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://bedrock:2/"),
    ];
    assert_eq!(
        endpoint(None, &both).expect("ok"),
        Some((
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
            "http://bedrock:2".into()
        ))
    );
    assert_eq!(
        endpoint(None, &both[..1]).expect("ok"),
        Some(("AWS_ENDPOINT_URL", "http://all:1".into()))
    );
    assert_eq!(
        endpoint(Some("https://vpce.example"), &both).expect("ok"),
        Some(("runtime.host", "https://vpce.example".into()))
    );
    let ignored = [
        ("AWS_ENDPOINT_URL", "http://all:1"),
        ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"),
    ];
    assert_eq!(endpoint(None, &ignored).expect("ok"), None);
    let err = endpoint(None, &[("AWS_ENDPOINT_URL", "bedrock.local")]).expect_err("no scheme");
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
    assert!(err.to_string().contains("AWS_ENDPOINT_URL"), "{err}");
}

#[test]
fn converse_url_names_the_model() {
    assert_eq!(
        converse_url("https://bedrock-runtime.us-east-1.amazonaws.com", MODEL),
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-test-v1:0/converse"
    );
    assert_eq!(
        converse_url("http://127.0.0.1:9/base/", "a/b"),
        "http://127.0.0.1:9/base/model/a%2Fb/converse"
    );
}

#[tokio::test]
async fn signed_round_trip_with_a_retried_throttle() {
    let server = start(|i| match i {
        0 => Reply::new(429, r#"{"message":"Too many requests"}"#)
            .header("x-amzn-ErrorType", "ThrottlingException")
            .header("Retry-After", "0"),
        1 => Reply::new(503, r#"{"message":"busy"}"#)
            .header("x-amzn-ErrorType", "ServiceUnavailableException"),
        _ => Reply::new(200, TOOL_BODY),
    })
    .await;
    let provider = Provider::Bedrock(client_for(&server.url));
    let r = provider
        .complete(&tool_request(MODEL))
        .await
        .expect("answer");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, "tooluse_1");
    assert_eq!(
        r.tool_calls[0].arguments,
        json!({"city": "Paris", "days": -2, "exact": 1.5})
    );
    assert_eq!(r.usage.input_tokens, 7);
    assert_eq!(r.usage.output_tokens, 9);
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    let last = &seen[2];
    assert_eq!(last.method, "POST");
    assert_eq!(last.path, "/model/us.anthropic.claude-test-v1%3A0/converse");
    let auth = last.header("authorization").expect("signed");
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTESTKEY/"),
        "{auth}"
    );
    assert!(auth.contains("/us-east-1/bedrock/aws4_request"), "{auth}");
    assert!(!auth.contains("test-secret-access-key"), "{auth}");
    assert!(last.header("x-amz-date").is_some());
    let body: Value = last.json();
    assert_eq!(
        body["messages"][2]["content"][1]["toolResult"]["status"],
        "error"
    );
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"],
        "object"
    );
}

#[tokio::test]
async fn plain_answer_over_http() {
    let server = start(|_| Reply::new(200, OK_BODY)).await;
    let r = client_for(&server.url)
        .complete(&request())
        .await
        .expect("answer");
    assert_eq!(r.text, "Hello, world");
    assert_eq!(r.usage.input_tokens, 23);
    let body = server.seen()[0].json();
    assert_eq!(body["system"], json!([{"text": "Be brief."}]));
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 300, "temperature": 0.5})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [{"text": "Fine"}]})
    );
}

#[tokio::test]
async fn a_validation_error_is_not_retried_and_names_the_url() {
    let server = start(|_| {
        Reply::new(
            400,
            r#"{"message":"The provided model identifier is invalid."}"#,
        )
        .header("x-amzn-ErrorType", "ValidationException")
    })
    .await;
    let err = client_for(&server.url)
        .complete(&request())
        .await
        .expect_err("400");
    assert_eq!(server.hits(), 1);
    let msg = err.to_string();
    assert!(matches!(err, Error::Runtime(_)));
    assert!(
        msg.starts_with(&format!(
            "bedrock: POST {}/model/{MODEL}/converse returned HTTP 400 after 1 attempt: ValidationException: The provided model identifier is invalid.",
            server.url
        )),
        "{msg}"
    );
    assert!(!msg.contains("test-secret-access-key"), "{msg}");
}

#[tokio::test]
async fn persistent_5xx_gives_up_after_the_policy() {
    let server = start(|_| {
        Reply::new(500, r#"{"message":"boom"}"#)
            .header("x-amzn-ErrorType", "InternalServerException")
    })
    .await;
    let err = client_for(&server.url)
        .complete(&request())
        .await
        .expect_err("500");
    assert_eq!(server.hits(), 3);
    let msg = err.to_string();
    assert!(msg.contains("HTTP 500 after 3 attempts"), "{msg}");
    assert!(msg.contains("InternalServerException: boom"), "{msg}");
}

#[tokio::test]
async fn a_refused_connection_is_retried() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let err = client_for(&url)
        .complete(&request())
        .await
        .expect_err("nothing listens");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("bedrock: POST {url}/model/")),
        "{msg}"
    );
    assert!(msg.contains("after 3 attempts"), "{msg}");
}
